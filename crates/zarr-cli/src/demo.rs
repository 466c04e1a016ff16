//! `zarr demo`: build a small, real dataset and show it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Args;
use serde_json::json;
use zarr::array::{ArrayBuilder, ArrayBytes, Group, VlenBytes};
use zarr::metadata::{DataType, FillValue};
use zarr::store::{
    FilesystemStore, ListableStore as _, MemoryStore, ReadableStore as _, Store, StoreKey,
    WritableStore as _,
};

use crate::info::InfoArgs;
use crate::outln;
use crate::tree::TreeArgs;
use crate::{Global, TargetArgs, usage};

/// Arguments of `zarr demo`.
#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// The directory to build the dataset in: new, empty, or an earlier demo (which is
    /// rewritten); a directory holding anything else is refused.
    #[arg(default_value = "demo.zarr")]
    dir: PathBuf,
}

/// The root attribute naming the dataset as the demo's. It decides nothing: copies carry it
/// too, so whether a directory may be rewritten is decided by its whole content.
const MARK: &str = "zarr_cli_demo";

/// Longest metadata document read to compare with the demo's (a consolidated one repeats
/// the others, which are small).
const MAX_DOCUMENT: u64 = 1 << 20;

/// What a directory holds beyond (part of) the demo dataset.
#[derive(Debug, Default)]
struct Strangers {
    /// Files and directories the demo does not write (directories end in `/`).
    foreign: Vec<String>,
    /// Files the demo writes, with other content.
    changed: Vec<String>,
}

impl Strangers {
    fn is_empty(&self) -> bool {
        self.foreign.is_empty() && self.changed.is_empty()
    }
}

/// Compare what `dir` holds with the demo's `files` (key and bytes), directory `prefix`
/// (`""` or ending in `/`) at a time. A metadata document counts as the demo's when it is the
/// same JSON but for consolidated metadata, which repeats what the other documents say.
fn survey(
    dir: &Path,
    prefix: &str,
    files: &BTreeMap<String, Bytes>,
    found: &mut Strangers,
) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let path = entry.path();
        let Ok(name) = entry.file_name().into_string() else {
            found
                .foreign
                .push(format!("{prefix}{}", entry.file_name().display()));
            continue;
        };
        let key = format!("{prefix}{name}");
        // Not followed: a link is not something the demo writes.
        let kind = entry
            .file_type()
            .with_context(|| format!("reading {}", path.display()))?;
        if kind.is_dir() {
            let below = format!("{key}/");
            if files.keys().any(|k| k.starts_with(&below)) {
                survey(&path, &below, files, found)?;
            } else {
                found.foreign.push(below);
            }
        } else if !kind.is_file() {
            found.foreign.push(key);
        } else if let Some(expected) = files.get(&key) {
            if !same_content(&path, &key, expected)? {
                found.changed.push(key);
            }
        } else {
            found.foreign.push(key);
        }
    }
    Ok(())
}

/// Whether the file at `path` (key `key`) holds `expected`.
fn same_content(path: &Path, key: &str, expected: &[u8]) -> Result<bool> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    let document = key == "zarr.json" || key.ends_with("/zarr.json");
    if len != expected.len() as u64 && !(document && len <= MAX_DOCUMENT) {
        return Ok(false);
    }
    let actual = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if actual == expected {
        return Ok(true);
    }
    if !document {
        return Ok(false);
    }
    let parse = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).ok();
    let (Some(mut actual), Some(expected)) = (parse(&actual), parse(expected)) else {
        return Ok(false);
    };
    if let Some(fields) = actual.as_object_mut() {
        fields.remove("consolidated_metadata");
    }
    Ok(actual == expected)
}

/// `a, b, c and 2 more`.
fn some_of(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// Refuse (a usage error) a directory that holds anything but part of the demo's `files`.
fn refuse_other_content(dir: &Path, files: &BTreeMap<String, Bytes>) -> Result<()> {
    let mut found = Strangers::default();
    survey(dir, "", files, &mut found)?;
    if found.is_empty() {
        return Ok(());
    }
    found.foreign.sort();
    found.changed.sort();
    let mut held = Vec::new();
    if !found.foreign.is_empty() {
        held.push(format!(
            "{} (not written by the demo)",
            some_of(&found.foreign)
        ));
    }
    if !found.changed.is_empty() {
        held.push(format!(
            "{} (changed since the demo wrote {})",
            some_of(&found.changed),
            if found.changed.len() == 1 {
                "it"
            } else {
                "them"
            }
        ));
    }
    usage!(
        "{} is not an earlier demo, and the demo replaces nothing else: it holds {}; \
         choose another directory, or move those away first",
        dir.display(),
        held.join(" and ")
    );
}

/// The demo dataset: each key and its bytes.
async fn demo_files() -> Result<BTreeMap<String, Bytes>> {
    let memory = MemoryStore::new();
    build(Arc::new(memory.clone())).await?;
    let mut files = BTreeMap::new();
    for key in memory.list().await? {
        if let Some(value) = memory.get(&key).await? {
            files.insert(key.into_string(), value);
        }
    }
    Ok(files)
}

pub(crate) async fn run(args: DemoArgs, global: Global) -> Result<()> {
    let dir = &args.dir;
    let files = demo_files().await.context("building the demo dataset")?;
    // Nothing is erased: a directory that holds only (part of) the demo is rewritten with
    // the same files, and any other is refused.
    match std::fs::metadata(dir) {
        Ok(found) if !found.is_dir() => usage!(
            "{} is a file, not a directory; choose another directory for the demo",
            dir.display()
        ),
        Ok(_) => refuse_other_content(dir, &files)?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).with_context(|| format!("reading {}", dir.display())),
    }
    let store = FilesystemStore::with_options(dir, crate::target::file_options())?;
    for (key, value) in files {
        store
            .set(&StoreKey::try_new(key.as_str())?, value)
            .await
            .with_context(|| format!("writing {key} in {}", dir.display()))?;
    }
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

/// Write the demo dataset into `store`.
async fn build(store: Arc<dyn Store>) -> Result<()> {
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
