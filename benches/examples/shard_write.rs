//! Whole-array writes of a sharded `uint16` array, for comparing write schedules across shard
//! sizes (see `docs/performance.md`, session 28).
//!
//! ```text
//! cargo run --release -p zarr-benches --example shard_write -- SIDE SHARD INNER [DIR]
//! ```
//!
//! writes the `SIDE`^3 field of `zarr_benches::field` in shards of `SHARD`^3 with inner
//! chunks of `INNER`^3 (bytes + zstd(1)) to a `FilesystemStore` in a temporary directory
//! under `DIR` (default `target/`; `/dev/shm` takes the filesystem out of the measurement),
//! once untimed and then 7 times, and prints the median throughput.

use std::sync::Arc;
use std::time::Instant;

use zarr_array::ArrayBuilder;
use zarr_core::DataType;
use zarr_store::FilesystemStore;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let parent = match args.len() {
        3 => concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_owned(),
        4 => args.pop().unwrap_or_default(),
        _ => return Err("usage: shard_write SIDE SHARD INNER [DIR]".into()),
    };
    let args = args
        .iter()
        .map(|a| a.parse::<u64>())
        .collect::<Result<Vec<_>, _>>()?;
    let [side, shard, inner] = args[..] else {
        return Err("usage: shard_write SIDE SHARD INNER [DIR]".into());
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let dir = tempfile::tempdir_in(parent)?;
    let store = Arc::new(FilesystemStore::new(dir.path())?);
    let values = zarr_benches::field(side);
    let array = rt.block_on(
        ArrayBuilder::new(vec![side; 3], DataType::UInt16, vec![shard; 3])
            .sharding(vec![inner; 3])
            .zstd(1)
            .create(store, "/a"),
    )?;
    let full = [0..side, 0..side, 0..side];
    rt.block_on(array.write(full.clone(), &values))?;
    let mut times = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        rt.block_on(array.write(full.clone(), &values))?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let mib = (values.len() * 2) as f64 / f64::from(1 << 20);
    println!(
        "{side}^3 in shards of {shard}^3, inner chunks of {inner}^3: {:.0} MiB/s (median of 7)",
        mib / times[3]
    );
    Ok(())
}
