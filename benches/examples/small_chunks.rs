//! Whole-array reads of an array of many small chunks, ours against zarrs on the same
//! `FilesystemStore` directory, for the per-chunk cost of the read engine (see
//! `docs/performance.md`, "Many small chunks").
//!
//! ```text
//! cargo run --release -p zarr-benches --example small_chunks -- CHUNKS CHUNK_ELEMENTS [DIR]
//! ```
//!
//! writes a 1-D `float32` array of `CHUNKS` chunks of `CHUNK_ELEMENTS` elements (`bytes`
//! only) under `DIR` (default `target/`; `/dev/shm` takes the filesystem out), then reads it
//! whole into a fresh `Vec<f32>`, alternately with ours (async, multi-threaded runtime) and
//! zarrs (its synchronous API), 7 rounds each after one untimed, then writes it whole over
//! the stored chunks the same way, then ours again alternately with a store writing in place
//! (`FilesystemOptions::atomic_writes` off), and prints the medians and the cost per chunk.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zarr_array::{Array, ArrayBuilder};
use zarr_core::DataType;
use zarr_store::{FilesystemOptions, FilesystemStore};
use zarrs::array::ArraySubset;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The median times of 7 rounds of `a` then `b`.
fn alternate(
    mut a: impl FnMut() -> Duration,
    mut b: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        ta.push(a());
        tb.push(b());
    }
    (median(ta), median(tb))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (chunks, chunk): (u64, u64) = match &args[..] {
        [a, b, ..] => (a.parse()?, b.parse()?),
        _ => return Err("usage: small_chunks CHUNKS CHUNK_ELEMENTS [DIR]".into()),
    };
    let parent = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_owned());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let dir = tempfile::tempdir_in(parent)?;
    let n = chunks * chunk;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let store = Arc::new(FilesystemStore::new(dir.path())?);
    let array = rt.block_on(async {
        let array = ArrayBuilder::new(vec![n], DataType::Float32, vec![chunk])
            .codecs(vec![zarr_core::ExtensionObject::from_json(
                &serde_json::json!({"name": "bytes", "configuration": {"endian": "little"}}),
                "codecs[0]",
            )?])
            .create(Arc::clone(&store), "/")
            .await?;
        array.write(.., &values).await?;
        Ok::<_, Box<dyn std::error::Error>>(array)
    })?;
    drop(array);
    let ours = rt.block_on(Array::open(store, "/"))?;
    let zstore = Arc::new(zarrs::filesystem::FilesystemStore::new(dir.path())?);
    let theirs = zarrs::array::Array::open(zstore, "/")?;
    let all = ArraySubset::new_with_shape(vec![n]);

    let read_ours = || {
        let start = Instant::now();
        let out = rt.block_on(ours.read::<f32>(..)).unwrap();
        let t = start.elapsed();
        assert_eq!(out.len() as u64, n);
        t
    };
    let read_theirs = || {
        let start = Instant::now();
        let out = theirs.retrieve_array_subset::<Vec<f32>>(&all).unwrap();
        let t = start.elapsed();
        assert_eq!(out.len() as u64, n);
        t
    };
    // The same writes through a store writing values in place (no temporary file and rename),
    // alternately with the atomic ones.
    let in_place_store = Arc::new(FilesystemStore::with_options(
        dir.path(),
        FilesystemOptions::default().with_atomic_writes(false),
    )?);
    let in_place = rt.block_on(Array::open(in_place_store, "/"))?;
    // `SMALL_CHUNKS_PROFILE=ours` (or `zarrs`): 50 reads of one side only, for a profiler;
    // `write-ours` (or `write-in-place`): 10 writes.
    match std::env::var("SMALL_CHUNKS_PROFILE").as_deref() {
        Ok("write-ours") => {
            for _ in 0..10 {
                rt.block_on(ours.write(.., &values))?;
            }
            return Ok(());
        }
        Ok("write-in-place") => {
            for _ in 0..10 {
                rt.block_on(in_place.write(.., &values))?;
            }
            return Ok(());
        }
        Ok("ours") => {
            (0..50).for_each(|_| {
                read_ours();
            });
            return Ok(());
        }
        Ok("zarrs") => {
            (0..50).for_each(|_| {
                read_theirs();
            });
            return Ok(());
        }
        _ => {}
    }
    read_ours();
    read_theirs();
    let (a, b) = alternate(read_ours, read_theirs);
    // Whole-array writes over the stored chunks, the same way.
    let write_ours = || {
        let start = Instant::now();
        rt.block_on(ours.write(.., &values)).unwrap();
        start.elapsed()
    };
    let write_theirs = || {
        let start = Instant::now();
        theirs.store_array_subset(&all, &values[..]).unwrap();
        start.elapsed()
    };
    let (wa, wb) = alternate(write_ours, write_theirs);
    let write_in_place = || {
        let start = Instant::now();
        rt.block_on(in_place.write(.., &values)).unwrap();
        start.elapsed()
    };
    let (wi, wa2) = alternate(write_in_place, write_ours);
    let per = |t: Duration| t.as_secs_f64() * 1e6 / chunks as f64;
    let line = |label: &str, (ours, other): (Duration, Duration), what: &str| {
        println!(
            "{label}: {:.1} ms ({:.2} us/chunk), {what} {:.1} ms ({:.2} us/chunk)",
            ours.as_secs_f64() * 1e3,
            per(ours),
            other.as_secs_f64() * 1e3,
            per(other)
        );
    };
    line(
        &format!("{chunks} chunks of {chunk} float32: ours"),
        (a, b),
        "zarrs",
    );
    line("  writes: ours", (wa, wb), "zarrs");
    line("  writes in place", (wi, wa2), "atomic alternately");
    Ok(())
}
