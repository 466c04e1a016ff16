//! Whole-array throughput against the machine's limits, in one run (issue #4's targets).
//!
//! A `uint16` array of side 512 (256 MiB) in 64^3 chunks on the filesystem (page cache),
//! filled with a smooth field plus noise that zstd level 1 compresses about 3x:
//!
//! - full read (async API into a fresh `Vec<u16>`, and into a reused buffer) against raw
//!   zstd decompression of the same stored chunks on all cores (rayon), each chunk into a
//!   reused per-thread buffer;
//! - full write against raw zstd compression of the same chunks on all cores;
//! - with the `bytes` codec only: full read against a memcpy of the whole array into a fresh
//!   buffer.
//!
//! Each pair is timed alternately (median of the rounds) and the ratio printed, so a busy
//! neighbour slows both sides alike. Run: `cargo bench -p zarr-benches --bench array`
//! (`ZARR_BENCH_SIDE=256` for a quicker run). Under `cargo test` the side is 64.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use zarr_array::{Array, ArrayBuilder, AxisSelection, Selection};
use zarr_benches::{chunks_of, field};
use zarr_core::DataType;
use zarr_store::FilesystemStore;

const CHUNK: u64 = 64;

fn side() -> u64 {
    if std::env::args().any(|a| a == "--bench") {
        std::env::var("ZARR_BENCH_SIDE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(512)
    } else {
        64
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Median time of `rounds` alternating runs of `a` and `b`.
fn paired(rounds: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for side in 0..2 {
            let start = Instant::now();
            if (side == 0) == (round % 2 == 0) {
                a();
                ta.push(start.elapsed());
            } else {
                b();
                tb.push(start.elapsed());
            }
        }
    }
    ta.sort();
    tb.sort();
    (ta[ta.len() / 2], tb[tb.len() / 2])
}

fn report(what: &str, bytes: usize, ours: Duration, limit_name: &str, limit: Duration) {
    report_sizes(what, (bytes, ours), limit_name, (bytes, limit));
}

/// [`report`] for two sides that move different amounts of data (`(bytes, time)` each);
/// the ratio is of throughputs.
fn report_sizes(
    what: &str,
    (ours_bytes, ours): (usize, Duration),
    limit_name: &str,
    (limit_bytes, limit): (usize, Duration),
) {
    let mib = |bytes: usize, d: Duration| bytes as f64 / d.as_secs_f64() / f64::from(1 << 20);
    let (ours, limit) = (mib(ours_bytes, ours), mib(limit_bytes, limit));
    eprintln!(
        "{what}: ours {ours:.0} MiB/s, {limit_name} {limit:.0} MiB/s, ours/limit {:.2}",
        ours / limit
    );
}

fn array(c: &mut Criterion) {
    let side = side();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
    let values = field(side);
    let bytes = values.len() * 2;
    let shape = vec![side; 3];
    let full = [0..side, 0..side, 0..side];

    let zstd_array: Array<FilesystemStore> = rt
        .block_on(
            ArrayBuilder::new(shape.clone(), DataType::UInt16, vec![CHUNK; 3])
                .zstd(1)
                .create(Arc::clone(&store), "/w1"),
        )
        .unwrap();
    let raw_array: Array<FilesystemStore> = rt
        .block_on(
            ArrayBuilder::new(shape.clone(), DataType::UInt16, vec![CHUNK; 3])
                .create(Arc::clone(&store), "/w3"),
        )
        .unwrap();
    rt.block_on(zstd_array.write(full.clone(), &values))
        .unwrap();
    rt.block_on(raw_array.write(full.clone(), &values)).unwrap();

    // The stored chunks, for the raw zstd limit.
    let decoded = chunks_of(&values, side, CHUNK);
    let encoded: Vec<Vec<u8>> = decoded
        .par_iter()
        .map(|c| zstd::bulk::compress(c, 1).unwrap())
        .collect();
    let ratio = bytes as f64 / encoded.iter().map(Vec::len).sum::<usize>() as f64;
    eprintln!(
        "array {side}^3 uint16 ({} MiB) in {}^3 chunks; zstd(1) ratio {ratio:.2}; {} threads",
        bytes >> 20,
        CHUNK,
        rayon::current_num_threads()
    );
    let chunk_bytes = decoded[0].len();
    let raw_decompress = || {
        encoded.par_iter().for_each_init(
            || {
                (
                    zstd::bulk::Decompressor::new().unwrap(),
                    vec![0u8; chunk_bytes],
                )
            },
            |(d, out), e| {
                d.decompress_to_buffer(black_box(&e[..]), &mut out[..])
                    .unwrap();
            },
        );
    };
    let raw_compress = || {
        decoded.par_iter().for_each_init(
            || zstd::bulk::Compressor::new(1).unwrap(),
            |c, d| drop(black_box(c.compress(black_box(d)).unwrap())),
        );
    };

    let every_other = Selection::new(vec![AxisSelection::step(.., 2); 3]);
    // 1,000 points spread over the array (a fixed linear congruential sequence).
    let points: Vec<[u64; 3]> = (0..1000u64)
        .map(|i| {
            let x = i
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            [x % side, (x >> 21) % side, (x >> 42) % side]
        })
        .collect();

    if std::env::args().any(|a| a == "--bench") {
        let rounds = 7;
        let mut reused = vec![0u16; values.len()];
        // Warm the page cache.
        drop(rt.block_on(zstd_array.read::<u16>(full.clone())).unwrap());
        let (ours, limit) = paired(
            rounds,
            || {
                drop(black_box(
                    rt.block_on(zstd_array.read::<u16>(full.clone())).unwrap(),
                ))
            },
            raw_decompress,
        );
        report(
            "W1 read (fresh Vec)",
            bytes,
            ours,
            "raw zstd decompress",
            limit,
        );
        let (ours, limit) = paired(
            rounds,
            || {
                rt.block_on(zstd_array.read_into(full.clone(), &mut reused))
                    .unwrap()
            },
            raw_decompress,
        );
        report(
            "W1 read (into buffer)",
            bytes,
            ours,
            "raw zstd decompress",
            limit,
        );
        let (ours, limit) = paired(
            rounds,
            || {
                rt.block_on(zstd_array.write(full.clone(), &values))
                    .unwrap()
            },
            raw_compress,
        );
        report("W1 write", bytes, ours, "raw zstd compress", limit);
        let (ours, limit) = paired(
            rounds,
            || {
                drop(black_box(
                    rt.block_on(raw_array.read::<u16>(full.clone())).unwrap(),
                ))
            },
            || {
                let mut fresh = vec![0u16; values.len()];
                fresh.copy_from_slice(black_box(&values));
                black_box(&fresh);
            },
        );
        report(
            "W3 read (fresh Vec)",
            bytes,
            ours,
            "memcpy into fresh",
            limit,
        );
        let (ours, _) = paired(
            rounds,
            || rt.block_on(raw_array.write(full.clone(), &values)).unwrap(),
            || {},
        );
        report("W3 write", bytes, ours, "nothing", ours);

        // Selections decode every chunk they touch: every other index per dimension touches
        // all of them, so it should cost about what the full read does.
        let (ours, limit) = paired(
            rounds,
            || {
                drop(black_box(
                    rt.block_on(zstd_array.read_selection::<u16>(&every_other))
                        .unwrap(),
                ))
            },
            || {
                drop(black_box(
                    rt.block_on(zstd_array.read::<u16>(full.clone())).unwrap(),
                ))
            },
        );
        report("W1 ::2 selection", bytes, ours, "W1 full read", limit);
        let (ours, limit) = paired(
            rounds,
            || {
                drop(black_box(
                    rt.block_on(zstd_array.read_points::<u16, _>(&points))
                        .unwrap(),
                ))
            },
            || {
                drop(black_box(
                    rt.block_on(zstd_array.read::<u16>(full.clone())).unwrap(),
                ))
            },
        );
        report("W1 1,000 random points", bytes, ours, "W1 full read", limit);

        // W2: the same values in shards of (side / 2)^3 holding 64^3 inner chunks. A
        // selection fetches the inner chunks of each shard it touches together.
        let shard = (side / 2).max(CHUNK);
        let sharded: Array<FilesystemStore> = rt
            .block_on(
                ArrayBuilder::new(shape.clone(), DataType::UInt16, vec![shard; 3])
                    .sharding(vec![CHUNK; 3])
                    .zstd(1)
                    .create(Arc::clone(&store), "/w2"),
            )
            .unwrap();
        rt.block_on(sharded.write(full.clone(), &values)).unwrap();
        let full_read = || {
            drop(black_box(
                rt.block_on(sharded.read::<u16>(full.clone())).unwrap(),
            ))
        };
        let (ours, limit) = paired(
            rounds,
            || {
                drop(black_box(
                    rt.block_on(sharded.read_selection::<u16>(&every_other))
                        .unwrap(),
                ))
            },
            full_read,
        );
        report("W2 ::2 selection", bytes, ours, "W2 full read", limit);
        let (ours, limit) = paired(
            rounds,
            || {
                drop(black_box(
                    rt.block_on(sharded.read_points::<u16, _>(&points)).unwrap(),
                ))
            },
            full_read,
        );
        report("W2 1,000 random points", bytes, ours, "W2 full read", limit);

        // W2 written one element off the shard grid: every shard is written in part (read,
        // merged, its touched inner chunks re-encoded), against the whole-shard write.
        let off_grid = [1..side, 1..side, 1..side];
        let off_values = values[..((side - 1).pow(3)) as usize].to_vec();
        let (ours, limit) = paired(
            rounds,
            || {
                rt.block_on(sharded.write(off_grid.clone(), &off_values))
                    .unwrap()
            },
            || rt.block_on(sharded.write(full.clone(), &values)).unwrap(),
        );
        report_sizes(
            "W2 write off the shard grid",
            (off_values.len() * 2, ours),
            "W2 whole-shard write",
            (bytes, limit),
        );

        // The same shards through the sharding storage transformer: a read fetches the
        // chunks of each shard together.
        let per_shard = (shard / CHUNK).max(1);
        let transformed: Array<FilesystemStore> = rt
            .block_on(
                ArrayBuilder::new(shape.clone(), DataType::UInt16, vec![CHUNK; 3])
                    .sharding_transformer(vec![per_shard; 3])
                    .zstd(1)
                    .create(Arc::clone(&store), "/w2t"),
            )
            .unwrap();
        rt.block_on(transformed.write(full.clone(), &values))
            .unwrap();
        let (ours, limit) = paired(
            rounds,
            || {
                drop(black_box(
                    rt.block_on(transformed.read::<u16>(full.clone())).unwrap(),
                ))
            },
            full_read,
        );
        report(
            "W2 full read through the transformer",
            bytes,
            ours,
            "W2 full read",
            limit,
        );
    }

    let mut group = c.benchmark_group(format!("array {side}^3 uint16, {CHUNK}^3 chunks"));
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("zstd(1)/read", |b| {
        b.iter(|| rt.block_on(zstd_array.read::<u16>(full.clone())).unwrap())
    });
    group.bench_function("zstd(1)/write", |b| {
        b.iter(|| {
            rt.block_on(zstd_array.write(full.clone(), &values))
                .unwrap()
        })
    });
    group.bench_function("raw zstd(1) decompress", |b| b.iter(raw_decompress));
    group.bench_function("raw zstd(1) compress", |b| b.iter(raw_compress));
    group.bench_function("zstd(1)/read_selection ::2", |b| {
        b.iter(|| {
            rt.block_on(zstd_array.read_selection::<u16>(&every_other))
                .unwrap()
        })
    });
    group.bench_function("zstd(1)/read_points 1000", |b| {
        b.iter(|| {
            rt.block_on(zstd_array.read_points::<u16, _>(&points))
                .unwrap()
        })
    });
    group.bench_function("bytes/read", |b| {
        b.iter(|| rt.block_on(raw_array.read::<u16>(full.clone())).unwrap())
    });
    group.finish();
}

/// Small tiles read again and again (a viewer panning over an image): plain reads fetch and
/// decode every chunk a tile touches each time; a warm `CachedArray` copies out of decoded
/// chunks. A 2048^2 `uint16` image (256^2 under `cargo test`) in 128^2 zstd(1) chunks in
/// memory; 256 tiles of 32^2 at pseudo-random places.
fn cached(c: &mut Criterion) {
    let side: u64 = if std::env::args().any(|a| a == "--bench") {
        2048
    } else {
        256
    };
    let rt = runtime();
    let store = Arc::new(zarr_store::MemoryStore::new());
    let array = rt
        .block_on(
            ArrayBuilder::new(vec![side, side], DataType::UInt16, vec![128, 128])
                .zstd(1)
                .create(store, "/image"),
        )
        .unwrap();
    let values: Vec<u16> = (0..side * side)
        .map(|i| ((i / side + i % side) / 4 + (i.wrapping_mul(2_654_435_761) >> 7) % 16) as u16)
        .collect();
    rt.block_on(array.write(.., &values)).unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let tiles: Vec<[std::ops::Range<u64>; 2]> = (0..256)
        .map(|_| {
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % (side - 32)
            };
            let (y, x) = (next(), next());
            [y..y + 32, x..x + 32]
        })
        .collect();
    let cached = zarr_array::CachedArray::new(array.clone(), 512 << 20);
    let read_all = |read: &dyn Fn(&[std::ops::Range<u64>; 2]) -> Vec<u16>| {
        for tile in &tiles {
            black_box(read(tile));
        }
    };
    // Warm the cache, and check both give the same values.
    for tile in &tiles {
        assert_eq!(
            rt.block_on(cached.read::<u16>(tile.clone())).unwrap(),
            rt.block_on(array.read::<u16>(tile.clone())).unwrap()
        );
    }
    let mut group = c.benchmark_group(format!("{side}^2 uint16, 128^2 zstd(1) chunks"));
    group.throughput(Throughput::Elements(tiles.len() as u64));
    group.sample_size(10);
    group.bench_function("256 tiles of 32^2/read", |b| {
        b.iter(|| read_all(&|t| rt.block_on(array.read::<u16>(t.clone())).unwrap()))
    });
    group.bench_function("256 tiles of 32^2/CachedArray read (warm)", |b| {
        b.iter(|| read_all(&|t| rt.block_on(cached.read::<u16>(t.clone())).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, array, cached);
criterion_main!(benches);
