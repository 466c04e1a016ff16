//! `zarr bench`: write and read a synthetic array in a temporary local store; with
//! `--compare`, run the side-by-side comparison harness (`zarr-compare`) instead.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use zarr::array::{Array, ArrayBuilder};
use zarr::metadata::DataType;
use zarr::store::{FilesystemStore, Store};

use crate::create::parse_data_type;
use crate::info::{bytes_text, chunk_stats};
use crate::layout::{Layout, chosen_codecs, chunking_text, codec_text, shape_text};
use crate::outln;
use crate::progress::note;
use crate::region::parse_shape;
use crate::{Global, cast, usage};

/// Arguments of `zarr bench`.
#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// The array's size in MiB (it is held in memory once).
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    size: u64,
    /// The data type (bool, integers, float16/32/64).
    #[arg(long, visible_alias = "data-type", default_value = "float32")]
    dtype: String,
    /// The chunk shape (two dimensions; the inner chunks with --shards).
    #[arg(long, default_value = "256,256")]
    chunks: String,
    /// Store the chunks in shards of this shape.
    #[arg(long)]
    shards: Option<String>,
    /// Codecs, as for `zarr create` (default zstd:1).
    #[arg(long = "codec", value_name = "CODEC")]
    codecs: Vec<String>,
    /// The whole codec list as JSON, as for `zarr create`.
    #[arg(long = "codecs", value_name = "JSON", conflicts_with = "codecs")]
    codecs_json: Option<String>,
    /// Where to make the temporary store (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
    /// Run the comparison with zarrs, tensorstore, zarr-python and the machine's limits
    /// (the `zarr-compare` harness, beside this program or on PATH; `cargo xtask bench`
    /// builds and runs it from a clone of the repository).
    #[arg(long, conflicts_with_all = ["size", "dtype", "chunks", "shards", "codecs", "codecs_json", "dir"])]
    compare: bool,
    /// With --compare: the reduced run (a small array, few repetitions).
    #[arg(long, requires = "compare")]
    smoke: bool,
    /// With --compare: where the results go (default target/bench).
    #[arg(long, value_name = "DIR", requires = "compare")]
    out: Option<PathBuf>,
    /// With --compare: a Python with zarr and tensorstore installed, for those peers
    /// (without it they are skipped).
    #[arg(long, value_name = "PYTHON", requires = "compare")]
    python: Option<PathBuf>,
    /// With --compare: repetitions per measurement.
    #[arg(long, value_name = "N", requires = "compare")]
    reps: Option<usize>,
    /// With --compare: run only these workloads (comma-separated, such as W1,W2; W4 needs
    /// W2, W5 needs W1 and W2).
    #[arg(long, value_name = "LIST", requires = "compare")]
    only: Option<String>,
    /// With --compare: the number of strings of W6.
    #[arg(long, value_name = "N", requires = "compare")]
    strings: Option<u64>,
}

/// The comparison harness's program name.
const HARNESS: &str = "zarr-compare";

/// Find `zarr-compare`: beside this program first (where `cargo build` and `cargo install`
/// put both), then on PATH.
fn find_harness() -> Option<PathBuf> {
    let name = format!("{HARNESS}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(&name)));
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(&name))
                .collect()
        })
        .unwrap_or_default();
    beside.into_iter().chain(on_path).find(|p| p.is_file())
}

/// `zarr bench --compare`: run the harness with the options given, passing its output
/// through, and fail as it fails.
fn compare(args: &BenchArgs) -> Result<()> {
    let Some(harness) = find_harness() else {
        anyhow::bail!(
            "the comparison harness `{HARNESS}` is not installed (looked beside this program \
             and on PATH); run `cargo xtask bench` in a clone of the repository, which builds \
             and runs it"
        );
    };
    let mut command = std::process::Command::new(&harness);
    if args.smoke {
        command.arg("--smoke");
    }
    if let Some(out) = &args.out {
        command.arg("--out").arg(out);
    }
    if let Some(python) = &args.python {
        command.arg("--python").arg(python);
    }
    if let Some(reps) = args.reps {
        command.arg("--reps").arg(reps.to_string());
    }
    if let Some(only) = &args.only {
        command.arg("--only").arg(only);
    }
    if let Some(strings) = args.strings {
        command.arg("--strings").arg(strings.to_string());
    }
    let status = command
        .status()
        .with_context(|| format!("running {}", harness.display()))?;
    if !status.success() {
        anyhow::bail!(
            "the comparison harness {} failed ({status})",
            harness.display()
        );
    }
    Ok(())
}

/// Synthetic values: a smooth ramp with some repetition, compressible like measured data
/// tends to be, but not trivially.
fn synthetic(shape: &[u64], data_type: &DataType) -> Result<Vec<u8>> {
    let columns = shape[1];
    let values: Vec<u8> = (0..shape[0] * columns)
        .flat_map(|i| {
            let (r, c) = (i / columns, i % columns);
            // A smooth part plus a few bits of hash noise.
            let noise = (i.wrapping_mul(2_654_435_761) >> 11) % 13;
            let v = ((r * 7 + c * 3) % 101 + (r / 64) % 5 + noise) as f64;
            v.to_ne_bytes()
        })
        .collect();
    cast::convert(&values, &DataType::Float64, data_type, |i| {
        let i = i as u64;
        format!("element [{}, {}]", i / columns, i % columns)
    })
}

fn rate(bytes: u64, seconds: f64) -> String {
    let mib = bytes as f64 / f64::from(1 << 20);
    format!(
        "{mib:.1} MiB in {seconds:.3} s = {:.0} MiB/s",
        mib / seconds.max(1e-9)
    )
}

pub(crate) async fn run(args: BenchArgs, global: Global) -> Result<()> {
    if args.compare {
        // The harness runs for minutes and starts its own processes: off the async runtime.
        return tokio::task::spawn_blocking(move || compare(&args)).await?;
    }
    let data_type = parse_data_type(&args.dtype)?;
    if !cast::is_castable(&data_type) {
        usage!(
            "bench writes bool, integer and float16/32/64 arrays, not {}",
            data_type.name()
        );
    }
    let element = data_type.fixed_size().unwrap_or(1) as u64;
    let chunks = parse_shape(&args.chunks, "--chunks", 1)?;
    if chunks.len() != 2 {
        usage!("--chunks needs two dimensions for the bench's 2-d array");
    }
    let columns = 1024u64;
    let rows = ((args.size << 20) / (columns * element)).max(1);
    let shape = vec![rows, columns];
    let codecs = chosen_codecs(
        &args.codecs,
        args.codecs_json.as_deref(),
        Some("zstd:1"),
        &data_type,
    )?
    .unwrap_or_default();
    let layout = match &args.shards {
        Some(text) => {
            let shards = parse_shape(text, "--shards", 1)?;
            if shards.len() != 2 || shards[0] % chunks[0] != 0 || shards[1] % chunks[1] != 0 {
                usage!("--shards must be two dimensions, each a multiple of --chunks");
            }
            Layout {
                grid: Some(shards),
                inner: Some(chunks),
                codecs,
            }
        }
        None => Layout {
            grid: Some(chunks),
            inner: None,
            codecs,
        },
    };
    let (grid, codec_list) = layout.to_metadata_parts()?;
    let dir = match &args.dir {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .context("creating a temporary directory")?;
    let store: Arc<dyn Store> = Arc::new(FilesystemStore::new(dir.path().join("bench.zarr"))?);
    let array: Array<dyn Store> = ArrayBuilder::new(shape.clone(), data_type.clone(), grid)
        .codecs(codec_list)
        .create(Arc::clone(&store), "/bench")
        .await?;
    let values = synthetic(&shape, &data_type)?;
    let bytes = values.len() as u64;
    note(
        global,
        &format!("store   {}", dir.path().join("bench.zarr").display()),
    );
    outln!(
        "array   {} {} ({}), codecs {}",
        data_type.name(),
        shape_text(&shape),
        chunking_text(array.metadata()),
        layout
            .codecs
            .iter()
            .map(codec_text)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let region = array.full_region();
    let started = Instant::now();
    array.write_bytes(&region, &values).await?;
    outln!("write   {}", rate(bytes, started.elapsed().as_secs_f64()));
    let started = Instant::now();
    let read = array.read_bytes(&region).await?;
    outln!("read    {}", rate(bytes, started.elapsed().as_secs_f64()));
    if read != values {
        anyhow::bail!("the values read back differ from the values written");
    }
    let stats = chunk_stats(&array).await?;
    if let (Some(stored), Some(ratio)) = (stats.stored_bytes, stats.ratio()) {
        outln!("stored  {}, ratio {ratio:.2}", bytes_text(stored));
    }
    Ok(())
}
