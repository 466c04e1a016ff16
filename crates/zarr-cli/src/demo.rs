//! `zarr demo`: build a small, real dataset and show it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;
use zarr::array::{ArrayBuilder, ArrayBytes, Group, VlenBytes};
use zarr::metadata::{DataType, FillValue};
use zarr::store::{FilesystemStore, Store};

use crate::info::InfoArgs;
use crate::outln;
use crate::tree::TreeArgs;
use crate::{Global, TargetArgs};

/// Arguments of `zarr demo`.
#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// The directory to build the dataset in (replaced if it holds an earlier demo).
    #[arg(default_value = "demo.zarr")]
    dir: PathBuf,
}

/// The attribute that marks a directory as an earlier demo, safe to replace.
const MARK: &str = "zarr_cli_demo";

fn is_earlier_demo(dir: &Path) -> bool {
    std::fs::read(dir.join("zarr.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v["attributes"][MARK] == true)
}

pub(crate) async fn run(args: DemoArgs, global: Global) -> Result<()> {
    let dir = &args.dir;
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .next()
            .is_none();
        if is_earlier_demo(dir) {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("removing the earlier demo in {}", dir.display()))?;
        } else if !empty {
            bail!(
                "{} exists and is not an earlier demo; choose another directory",
                dir.display()
            );
        }
    }
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir)?);
    let mut root = Group::create(Arc::clone(&store), "/").await?;
    let mut attributes = serde_json::Map::new();
    attributes.insert("title".into(), json!("zarr-rs demo dataset"));
    attributes.insert(MARK.into(), json!(true));
    root.set_attributes(attributes).await?;

    // A sharded image: 512x512 uint16 in 4 shards of 256x256, each holding 16 chunks of 64x64,
    // compressed with zstd and checksummed.
    let image = ArrayBuilder::new(vec![512, 512], DataType::UInt16, vec![256, 256])
        .sharding(vec![64, 64])
        .zstd(3)
        .crc32c()
        .dimension_names(["y", "x"])
        .attribute("units", "counts")
        .create(Arc::clone(&store), "/images/raw")
        .await?;
    let pixels: Vec<u16> = (0..512u32 * 512)
        .map(|i| {
            let (y, x) = (i / 512, i % 512);
            let (dy, dx) = (y as i64 - 256, x as i64 - 256);
            let ring = u16::from((dy * dy + dx * dx) % 4096 < 2048);
            u16::try_from((x + y) % 1024).unwrap_or(0) + 1000 * ring
        })
        .collect();
    image.write([0..512, 0..512], &pixels).await?;

    // A time series with a gap: 1000 float32 samples in chunks of 100, the last 300 never
    // written (they read as the NaN fill value and take no space).
    let series = ArrayBuilder::new(vec![1000], DataType::Float32, vec![100])
        .fill_value(FillValue::from(f32::NAN))
        .gzip(5)
        .dimension_names(["time"])
        .attribute("units", "degC")
        .create(Arc::clone(&store), "/timeseries/temperature")
        .await?;
    let samples: Vec<f32> = (0..700)
        .map(|t| 15.0 + 8.0 * (t as f32 * std::f32::consts::TAU / 240.0).sin())
        .collect();
    series.write(0..700, &samples).await?;

    // Strings (variable-length UTF-8, stored as zarr-python's vlen-utf8).
    let labels = ArrayBuilder::new(vec![4], DataType::String, vec![2])
        .zstd(3)
        .create(Arc::clone(&store), "/labels")
        .await?;
    let names = ["background", "ring", "ramp", "gap"];
    let values = VlenBytes::from_elements(names.iter().map(|s| s.as_bytes()));
    labels
        .write_array_bytes(0..4, ArrayBytes::Variable(values))
        .await?;

    if global.quiet {
        return Ok(());
    }
    let shown = dir.display().to_string();
    outln!("Built a Zarr v3 dataset in {shown}:\n");
    crate::tree::run(TreeArgs::for_target(&shown)).await?;
    outln!();
    crate::info::run(InfoArgs::for_target(&format!("{shown}/images/raw"))).await?;
    outln!(
        "\nTry:\n  zarr get {shown}/images/raw --region 0:4,0:8\n  zarr get {shown}/timeseries/temperature --region 690:710\n  zarr verify {shown}\n"
    );
    outln!(
        "Open it from zarr-python 3 (pip install zarr):\n\n  import zarr\n  root = zarr.open_group({shown:?}, mode=\"r\")\n  print(root.tree())\n  raw = root[\"images/raw\"][:]    # numpy array, shape (512, 512), uint16"
    );
    Ok(())
}

impl TargetArgs {
    /// A target given as a plain path.
    pub(crate) fn plain(target: &str) -> Self {
        Self {
            target: target.to_owned(),
            path: None,
        }
    }
}
