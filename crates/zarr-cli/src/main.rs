//! The `zarr` command-line tool: inspect, export, convert and verify Zarr v3 stores.
//!
//! Exit codes: 0 success; 1 failure (the one-line message says what and why), `verify`
//! found corrupt chunks, or a node below a group could not be read (`tree`, `info` and
//! `verify` show the others and mark it); 2 bad usage (unknown flag, malformed region or
//! shape, ...).

use std::io::IsTerminal as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

mod attrs;
mod bench;
mod cast;
mod consolidate;
mod copy;
mod create;
mod demo;
mod diff;
mod format;
mod get;
mod info;
mod layout;
mod npy;
mod progress;
mod put;
mod pyramid;
mod refs;
mod region;
mod resize;
mod rm;
mod stats;
mod target;
mod tree;
mod verify;
mod walk;

/// A usage error: the command line was understood by the parser but its values are not
/// acceptable (a malformed region, a shape of the wrong rank, ...). Exits with code 2.
#[derive(Debug)]
pub(crate) struct Usage(pub(crate) String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Return a [`Usage`] error from the current function.
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::Usage(format!($($arg)*))))
    };
}
pub(crate) use usage;

/// `println!` that returns the write error (a closed pipe ends the program quietly, see
/// [`report`]) instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)?;
    }};
}
pub(crate) use outln;

/// Inspect, export, convert and verify Zarr v3 stores (and read Zarr v2 ones).
///
/// TARGET is a local path (`data.zarr/images/raw`: the store root is found by walking up
/// while the parent directories are Zarr groups) or a URL (`s3://bucket/data.zarr`,
/// `gs://`, `az://`, `http(s)://`, `file://`, `memory://`) with the node given by `--path`.
/// A zip archive is a store too (`data.zip/images/raw`; `zarr copy data.zarr data.zip`), and
/// so, read-only, is a reference set (kerchunk's JSON for HDF5 or netCDF files:
/// `refs.json/temperature`; `zarr copy refs.json data.zarr`). Cloud credentials come from the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
#[derive(Parser)]
#[command(name = "zarr", version, about, long_about, after_help = EXIT_CODES)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

const EXIT_CODES: &str = "\
Exit codes: 0 success; 1 failure, `verify` found corrupt chunks, or a node below a group
could not be read (the others are shown); 2 bad usage.

Start with `zarr demo demo.zarr`, which builds a small dataset and shows it.";

/// Options every command takes.
#[derive(Args, Clone, Copy, Debug)]
pub(crate) struct Global {
    /// Print nothing but results and errors (no progress bars, notes or warnings; `demo`
    /// and `consolidate` print only errors).
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
    /// Log what the library does to stderr (-v info, -vv debug, -vvv trace; RUST_LOG also
    /// works).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    /// Threads for encoding and decoding (default: one per core).
    #[arg(long, global = true, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Write local files in place (open, truncate, write) instead of into a temporary file
    /// renamed over the old one: faster for many small chunks, but a read during the write,
    /// or a crash in the middle of it, sees the value cut short. For data nothing reads
    /// until the command is done, such as a new copy.
    #[arg(long, global = true)]
    pub(crate) in_place_writes: bool,
    /// Make each write to local files durable before going on: fsync the file, then its
    /// directory (slower; without it, a power failure may lose the newest writes, never
    /// tear them unless --in-place-writes).
    #[arg(long, global = true)]
    pub(crate) durable: bool,
}

/// Where a command finds its node: TARGET plus an optional `--path`.
#[derive(Args, Clone, Debug)]
pub(crate) struct TargetArgs {
    /// A local path or a URL (see `zarr --help`).
    pub(crate) target: String,
    /// The node's path inside the store; TARGET is then the store root.
    #[arg(long, value_name = "NODE")]
    pub(crate) path: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Describe an array or a group.
    ///
    /// For an array: shape, data type, chunk grid, shard and inner chunk shape, codecs, fill
    /// value, dimension names, attributes, chunks present out of possible, stored bytes and
    /// compression ratio. For a group: attributes and children; a child that cannot be read
    /// is shown with its error, and the exit code is then 1.
    #[command(after_help = "\
Examples:
  zarr info data.zarr/images/raw
  zarr info s3://bucket/data.zarr --path /images/raw --json")]
    Info(info::InfoArgs),
    /// Show or change the attributes of an array or a group.
    ///
    /// Without options, prints the attributes as JSON. --set, --delete and --clear change
    /// them: the node's metadata is rewritten (`zarr.json`, or `.zattrs` for Zarr v2), and
    /// so is every consolidated record above that lists the node, so that readers of the
    /// record see the new attributes too.
    #[command(after_help = "\
Examples:
  zarr attrs data.zarr/images/raw
  zarr attrs data.zarr/images/raw --set units=m --set scale=0.5 --set 'axes=[\"y\", \"x\"]'
  zarr attrs data.zarr --delete draft
  zarr attrs s3://bucket/data.zarr --path /images --clear --set title=Images")]
    Attrs(attrs::AttrsArgs),
    /// Show the hierarchy below a group, with each array's shape, data type and chunking.
    ///
    /// Uses the group's consolidated metadata when it has some, otherwise one listing per
    /// group. A node that cannot be read (malformed metadata, unknown codec) is shown with
    /// its error, and the exit code is then 1.
    #[command(after_help = "\
Examples:
  zarr tree data.zarr
  zarr tree gs://bucket/data.zarr")]
    Tree(tree::TreeArgs),
    /// Record the metadata of every node below a group in the group (consolidated
    /// metadata), so that readers open the whole hierarchy with one request.
    ///
    /// Zarr v3 groups get zarr-python's inline `consolidated_metadata` in their zarr.json,
    /// Zarr v2 groups a `.zmetadata` document. zarr-python (`zarr.open_consolidated`), this
    /// library (`Group::open_consolidated`) and `zarr tree` use it. Changes `zarr` makes to a
    /// node the record lists (`attrs`, `resize`, `put --append`, `rm`, `create
    /// --overwrite`) keep it true, but new nodes are not added: run the command again after
    /// creating nodes, or after other tools changed the hierarchy. An array whose codecs
    /// this library cannot build is recorded all the same (other implementations may know
    /// them), with a warning naming it.
    #[command(after_help = "\
Examples:
  zarr consolidate data.zarr
  zarr consolidate s3://bucket/data.zarr --path /images")]
    Consolidate(consolidate::ConsolidateArgs),
    /// Remove an array or a group, with everything below it.
    ///
    /// Erases every object under the node's prefix: its metadata, its chunks, the nodes
    /// below it, and any other file kept there. The group above it must be readable.
    /// Consolidated metadata in that group or any group further up loses the removed nodes
    /// first. The root of a store is refused: delete the store itself.
    #[command(after_help = "\
Examples:
  zarr rm data.zarr/scratch
  zarr rm s3://bucket/data.zarr --path /images/old")]
    Rm(rm::RmArgs),
    /// Print or export values of an array region.
    ///
    /// The region is numpy-like: one entry per dimension, separated by commas; `a:b`, `a:`,
    /// `:b`, `:` or a single index (negative counts from the end); missing trailing entries
    /// mean `:`, and one entry may be `...`, which means `:` for every dimension the others
    /// leave (`...,0` is the first element of the last dimension). `a:b:step` takes every
    /// `step`-th index from `a` (a positive step). Text output prints
    /// one value per line for a 1-D result and one row of the last dimension per line otherwise (a blank line between 2-D planes). Exports to npy
    /// and raw stream in chunk-aligned slabs, never holding the whole region. `string` and
    /// `bytes` export to npy as `<U n` / `|S n`, n the longest element: the region is read
    /// twice (once for n) unless it fits in one slab.
    #[command(after_help = "\
Examples:
  zarr get data.zarr/temperature --region 0:5
  zarr get data.zarr/images/raw --region 0:10,:,5
  zarr get data.zarr/images/raw --region ...,-1      # the last column
  zarr get data.zarr/images/raw --format npy -o raw.npy     # numpy.load('raw.npy')
  zarr get data.zarr/labels --format json
  zarr get data.zarr/labels --format npy -o labels.npy     # dtype <U n")]
    Get(get::GetArgs),
    /// Create an array, or a group (--group).
    #[command(after_help = "\
Examples:
  zarr create data.zarr/images/raw --shape 1000,1000 --dtype uint16 --chunks 100,100
  zarr create data.zarr/experiments/run1 --group --attr operator=ada
  zarr create data.zarr/big --shape 10000,10000 --dtype float32 --chunks 100,100 \\
      --shards 1000,1000 --codec zstd:5 --codec crc32c --fill-value NaN")]
    Create(create::CreateArgs),
    /// Write values from an .npy file into an array (a region, or the whole array).
    ///
    /// The file is read in chunk-aligned slabs of about 64 MiB, each written before the next
    /// is read; C and Fortran order. A numeric file of another data type than the array's is
    /// converted exactly (numpy's default int64 into an int32 array): the file is then read
    /// twice, and a value that does not fit is an error naming its index, found before
    /// anything is written. `string` arrays take numpy `<U n` (or `|S n` holding UTF-8),
    /// `bytes` arrays `|S n`; object arrays (`|O`) are pickled and refused.
    #[command(after_help = "\
Examples:
  zarr put data.zarr/images/raw --input raw.npy
  zarr put data.zarr/images/raw --input tile.npy --region 100:200,300:400
  zarr put data.zarr/images/raw --input every2nd.npy --region ::2,::2
  zarr put data.zarr/labels --input names.npy    # numpy.save('names.npy', arr.astype('U'))")]
    Put(put::PutArgs),
    /// Change the shape of an array.
    ///
    /// Growing writes only the metadata: the new region reads as the fill value. Shrinking
    /// erases the chunks that fall wholly outside the new shape and resets the part of edge
    /// chunks that does, so growing again later shows the fill value there, not old data.
    /// Consolidated records above that list the array get its new shape. To grow an array
    /// by writing values at its end, use `zarr put --append`.
    #[command(after_help = "\
Examples:
  zarr resize data.zarr/series --shape 5000,3
  zarr resize data.zarr/series --shape +1000,:     # 1000 more rows
  zarr resize data.zarr/images/raw --shape :,512   # keep the first, cut the second")]
    Resize(resize::ResizeArgs),
    /// Decode every stored chunk of an array (or of every array below a group) and report
    /// each one that is corrupt or undecodable, with the reason.
    ///
    /// Checksums (crc32c, zstd checksums) are checked as part of decoding; shards are decoded
    /// whole, index included. Exits with 1 if any chunk is corrupt. A note names the arrays
    /// without a checksum, for which only decoding was checked.
    #[command(after_help = "\
Examples:
  zarr verify data.zarr
  zarr verify s3://bucket/data.zarr --path /images/raw --jobs 64")]
    Verify(verify::VerifyArgs),
    /// Copy an array or a whole group to another store, re-chunking, re-sharding,
    /// re-compressing or converting the data type on the way.
    ///
    /// Copies in blocks of whole destination chunks (or shards), so memory stays bounded
    /// and no destination chunk is written twice.
    /// Layout not given on the command line is taken from the source. A copy that fails (a
    /// value that does not convert, a store error) removes what it wrote, unless it was run
    /// with `--resume`. After an interruption, run the same command again with `--resume`:
    /// blocks whose destination chunks are all stored are skipped, every other block is
    /// copied again (chunk writes replace whole objects, so a half-finished block is simply
    /// rewritten).
    #[command(after_help = "\
Examples:
  zarr copy data.zarr/images/raw rechunked.zarr --chunks 256,256
  zarr copy data.zarr sharded.zarr --shards 1024,1024 --chunks 128,128 --codec zstd:5
  zarr copy sharded.zarr plain.zarr --shards none --codec gzip:6
  zarr copy data.zarr s3://bucket/data.zarr --resume
  zarr copy data.zarr/counts small.zarr --data-type uint16")]
    Copy(copy::CopyArgs),
    /// Compare two arrays, or two hierarchies, value for value.
    ///
    /// Names every difference, one per line: nodes only on one side, an array and a group
    /// at the same path, shapes, data types, fill values, dimension names and attributes
    /// that differ, and for arrays of one shape and data type the elements that differ (bit
    /// for bit: -0.0 is not 0.0, NaNs compare by their bits), with the first few indices
    /// and both values. Layout (chunking, sharding, codecs, chunk key encoding, Zarr format)
    /// changes no value and is not a difference; --layout shows it. Values are read in
    /// chunk-aligned parts of at most 64 MiB from each side. Each node is read from its own
    /// metadata, not from consolidated metadata; a Zarr v2 array's `_ARRAY_DIMENSIONS`
    /// attribute (xarray's) counts as its dimension names. Exits with 1 when there is a
    /// difference.
    #[command(after_help = "\
Examples:
  zarr diff data.zarr copy.zarr
  zarr diff data.zarr/images/raw rechunked.zarr --layout
  zarr diff s3://bucket/data.zarr data.zarr --a-path /images --b-path /images --show 20")]
    Diff(diff::DiffArgs),
    /// Summarise an array's values: the least and the greatest (with where they are), the
    /// mean and standard deviation, NaNs, and elements equal to the fill value.
    ///
    /// Takes bool, integer and float arrays, or a region of one (`-r`, as `zarr get` takes
    /// it); for a group, one line per array below it (other data types listed as skipped;
    /// exit code 1 if one cannot be read). The array is read part by part (whole chunks, at most --part-size at a time), so
    /// it may be larger than memory. NaNs are counted, not taken into the minimum, maximum, mean
    /// or standard deviation; the standard deviation is the population one (numpy's
    /// default); the mean and standard deviation are computed in float64. Where the least
    /// or greatest value occurs several times, the first in C order is named. Elements
    /// equal to the fill value are compared bit for bit.
    #[command(after_help = "\
Examples:
  zarr stats data.zarr/timeseries/temperature
  zarr stats data.zarr
  zarr stats data.zarr/images/raw -r 0:512,0:512 --json
  zarr stats s3://bucket/data.zarr --path /images/raw -r ::4,::4")]
    Stats(stats::StatsArgs),
    /// Build a multiscale image from an array: an OME-Zarr 0.5 (or 0.4) group whose arrays
    /// `0`, `1`, ... are the array and smaller copies of it.
    ///
    /// Level 0 is a copy of the array (with the layout of --chunks, --shards and --codec, or
    /// the source's); each further level is the one before downsampled by --factor (2 along
    /// each space axis by default), each window of elements reduced by --method, until a
    /// chunk holds every downsampled dimension (or --levels). A dimension whose length the
    /// factor does not divide keeps a last, partial window. The levels keep level 0's
    /// codecs, with chunks (and shards) no larger than the level. The group's `ome`
    /// attribute (`multiscales` with --ome-version 0.4) describes the levels for OME-Zarr
    /// readers (napari, neuroglancer, vizarr,
    /// ome-zarr-py): the axes (t, c, z, y, x by name: see --axes), each level's scale
    /// (--scale times the factors so far) and, for every method but stride, the translation
    /// that puts each element at the centre of its window. Levels are written in blocks of
    /// whole chunks; a pyramid that fails removes what it wrote.
    #[command(after_help = "\
Examples:
  zarr pyramid data.zarr/images/raw pyramid.zarr
  zarr pyramid image.zarr labels.zarr --method mode --levels 4
  zarr pyramid stack.zarr/raw s3://bucket/stack.zarr --axes c,z,y,x --factor 1,1,2,2 \\
    --scale 1,2.0,0.325,0.325 --unit micrometer --shards 1,64,1024,1024 --chunks 1,64,128,128")]
    Pyramid(pyramid::PyramidArgs),
    /// Convert a reference set (kerchunk's) between its JSON and Parquet layouts.
    ///
    /// INPUT is a JSON file or a Parquet set's directory; OUTPUT is written as JSON when it
    /// ends in `.json`, else as a Parquet set (fsspec's `LazyReferenceMapper` layout, which
    /// kerchunk's `refs_to_dataframe` writes): the metadata in `.zmetadata`, each array's
    /// chunk references in record files of --record-size rows, read one at a time when
    /// needed. Parquet sets hold Zarr v2 hierarchies: every chunk key must belong to an
    /// array with a `.zarray`. Both read with fsspec and with this tool.
    #[command(after_help = "\
Examples:
  zarr refs refs.json refs.parq
  zarr refs refs.json refs.parq --record-size 10000
  zarr refs refs.parq refs.json --overwrite")]
    Refs(refs::RefsArgs),
    /// Write and read a synthetic array in a temporary local store and report throughput.
    ///
    /// With --compare, run the comparison harness instead (`zarr-compare`: this project side
    /// by side with zarrs, tensorstore, zarr-python and the machine's limits), if it is
    /// installed beside `zarr` or on PATH; `cargo xtask bench` builds and runs it from a
    /// clone of the repository.
    #[command(after_help = "\
Examples:
  zarr bench
  zarr bench --size 256 --chunks 512,512 --codec blosc:lz4:5
  zarr bench --shards 2048,2048 --chunks 256,256 --threads 4
  zarr bench --compare --smoke --python .venv/bin/python")]
    Bench(bench::BenchArgs),
    /// Build a small, real dataset in a directory (a sharded image, a time series with a gap
    /// and a string array), then show its tree and an array's info, and how to open it
    /// from zarr-python.
    #[command(after_help = "\
Examples:
  zarr demo demo.zarr
  zarr tree demo.zarr")]
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.global);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report(&err),
    }
}

fn run(cli: Cli) -> Result<()> {
    let threads = match cli.global.threads {
        Some(0) => usage!("--threads must be at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    // Ignore the error of a second initialisation (there is none in this program).
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    let global = cli.global;
    target::set_file_options(
        zarr::store::FilesystemOptions::default()
            .with_atomic_writes(!global.in_place_writes)
            .with_durable(global.durable),
    );
    runtime.block_on(async move {
        match cli.command {
            Command::Info(args) => info::run(args).await,
            Command::Attrs(args) => attrs::run(args, global).await,
            Command::Resize(args) => resize::run(args, global).await,
            Command::Tree(args) => tree::run(args).await,
            Command::Consolidate(args) => consolidate::run(args, global).await,
            Command::Rm(args) => rm::run(args, global).await,
            Command::Get(args) => get::run(args).await,
            Command::Create(args) => create::run_create(args, global).await,
            Command::Put(args) => put::run_put(args, global).await,
            Command::Verify(args) => verify::run(args, global).await,
            Command::Copy(args) => copy::run(args, global).await,
            Command::Diff(args) => diff::run(args).await,
            Command::Stats(args) => stats::run(args).await,
            Command::Pyramid(args) => pyramid::run(args, global).await,
            Command::Refs(args) => refs::run(args, global).await,
            Command::Bench(args) => bench::run(args, global).await,
            Command::Demo(args) => demo::run(args, global).await,
        }
    })
}

/// `--verbose` turns on tracing output on stderr; `RUST_LOG` overrides the level.
fn init_tracing(global: Global) {
    let level = match (global.quiet, global.verbose) {
        (_, 0) | (true, _) => return,
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Print the error as one line, `zarr: what: why: root cause`, and choose the exit code.
fn report(err: &anyhow::Error) -> ExitCode {
    // `zarr get ... | head` closes the pipe early; that is not a failure.
    if err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    eprintln!("zarr: {}", one_line(err));
    if err.downcast_ref::<Usage>().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

/// The error and its causes joined by `: `, skipping a cause whose text the previous message
/// already ends with (some errors print their source themselves), and flattening newlines.
pub(crate) fn one_line(err: &anyhow::Error) -> String {
    error_line(&**err)
}

/// As [`one_line`], for any error.
pub(crate) fn error_line(err: &(dyn std::error::Error + 'static)) -> String {
    zarr::metadata::ErrorChain(err)
        .to_string()
        .replace('\n', " ")
}
