//! Store benchmarks: `FilesystemStore` reads against `std::fs`, and many ranges of one value.
//!
//! Run with `cargo bench -p zarr-benches --bench store`; results are recorded in
//! `docs/performance.md`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use zarr_store::{
    BlockingStrategy, ByteRange, FilesystemOptions, FilesystemStore, MemoryStore,
    ObjectStoreAdapter, ReadableStore, StoreKey, WritableStore, ZipStore,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

fn pattern(len: usize) -> Bytes {
    Bytes::from((0..len).map(|i| (i * 31 % 251) as u8).collect::<Vec<_>>())
}

/// `FilesystemStore::get` of a 1 MiB value against `std::fs::read` of the same file.
fn get_1mib(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = FilesystemStore::new(dir.path()).expect("a store");
    // The default is `BlockInPlace`; this one hands each read to the blocking pool.
    let spawn_blocking = FilesystemStore::with_options(
        dir.path(),
        FilesystemOptions::default().with_blocking(BlockingStrategy::SpawnBlocking),
    )
    .expect("a store");
    let key = StoreKey::new("array/c/0/0");
    let value = pattern(1 << 20);
    rt.block_on(store.set(&key, value.clone())).expect("set");
    let path = dir.path().join(key.as_str());
    let zip_path = dir.path().join("data.zip");
    let zip = ZipStore::create(&zip_path).expect("an archive");
    rt.block_on(zip.set(&key, value.clone())).expect("set");
    zip.finish().expect("finish");
    let zip = ZipStore::open(&zip_path).expect("an archive");
    let almost_all = [(key.clone(), ByteRange::new(0, value.len() as u64 - 1))];

    let mut group = c.benchmark_group("get_1mib");
    group.throughput(Throughput::Bytes(value.len() as u64));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("std_fs_read", |b| {
        b.iter(|| black_box(std::fs::read(black_box(&path)).expect("read")));
    });
    // The same read issued from inside the runtime, as an async caller would: the baseline
    // that includes `block_on`'s own cost, which the store's numbers below also pay.
    group.bench_function("std_fs_read_in_block_on", |b| {
        b.iter(|| black_box(rt.block_on(async { std::fs::read(black_box(&path)).expect("read") })));
    });
    group.bench_function("filesystem_store_get", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(store.get(black_box(&key)))
                    .expect("get")
                    .expect("present"),
            )
        });
    });
    group.bench_function("filesystem_store_get_spawn_blocking", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(spawn_blocking.get(black_box(&key)))
                    .expect("get")
                    .expect("present"),
            )
        });
    });
    // A stored zip entry: one `pread`, then the CRC-32 check of the whole entry.
    group.bench_function("zip_store_get", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(zip.get(black_box(&key)))
                    .expect("get")
                    .expect("present"),
            )
        });
    });
    // All but its last byte: the same read without the CRC-32 check.
    group.bench_function("zip_store_range_unchecked", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(zip.get_partial_values(black_box(&almost_all)))
                    .expect("read"),
            )
        });
    });
    // The cost of the blocking-pool hand-off alone, for reading the numbers above.
    group.bench_function("spawn_blocking_round_trip", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(async { tokio::task::spawn_blocking(|| black_box(1)).await })
                    .expect("join"),
            )
        });
    });
    group.finish();
}

/// 1,000 ranges of 100 bytes in one 64 MiB value, in one `get_partial_values` call.
fn ranges_1000(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fs = FilesystemStore::new(dir.path()).expect("a store");
    let memory = MemoryStore::new();
    let object = ObjectStoreAdapter::new(Arc::new(object_store::memory::InMemory::new()));
    let key = StoreKey::new("shard");
    let value = pattern(64 << 20);
    rt.block_on(fs.set(&key, value.clone())).expect("set");
    rt.block_on(memory.set(&key, value.clone())).expect("set");
    rt.block_on(object.set(&key, value.clone())).expect("set");
    let path = dir.path().join(key.as_str());
    let spread: Vec<_> = (0..1000u64)
        .map(|i| (key.clone(), ByteRange::new(i * 65_536, i * 65_536 + 100)))
        .collect();
    let adjacent: Vec<_> = (0..1000u64)
        .map(|i| (key.clone(), ByteRange::new(i * 100, i * 100 + 100)))
        .collect();

    let mut group = c.benchmark_group("ranges_1000");
    group.throughput(Throughput::Elements(1000));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("filesystem_spread", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(fs.get_partial_values(black_box(&spread)))
                    .expect("read"),
            )
        });
    });
    group.bench_function("filesystem_adjacent", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(fs.get_partial_values(black_box(&adjacent)))
                    .expect("read"),
            )
        });
    });
    group.bench_function("std_fs_read_whole_then_slice", |b| {
        b.iter(|| {
            let whole = Bytes::from(std::fs::read(black_box(&path)).expect("read"));
            let parts: Vec<Bytes> = spread
                .iter()
                .map(|(_, range)| range.slice(&whole).expect("in bounds"))
                .collect();
            black_box(parts)
        });
    });
    group.bench_function("memory_spread", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(memory.get_partial_values(black_box(&spread)))
                    .expect("read"),
            )
        });
    });
    group.bench_function("object_store_in_memory_spread", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(object.get_partial_values(black_box(&spread)))
                    .expect("read"),
            )
        });
    });
    group.finish();
}

/// 1,000 whole values of 4 KiB in one `get_partial_values` call: files of a directory store
/// against entries of a zip archive (adjacent entries, read with one `pread`).
fn values_1000(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fs = FilesystemStore::new(dir.path().join("data.zarr")).expect("a store");
    let zip_path = dir.path().join("data.zip");
    let zip = ZipStore::create(&zip_path).expect("an archive");
    let keys: Vec<StoreKey> = (0..1000)
        .map(|i| StoreKey::new(&format!("a/c/{}/{}", i / 32, i % 32)))
        .collect();
    for key in &keys {
        rt.block_on(fs.set(key, pattern(4096))).expect("set");
        rt.block_on(zip.set(key, pattern(4096))).expect("set");
    }
    zip.finish().expect("finish");
    let zip = ZipStore::open(&zip_path).expect("an archive");
    let requests: Vec<_> = keys.iter().map(|k| (k.clone(), ByteRange::FULL)).collect();
    // The first read of each entry also reads its local header.
    rt.block_on(zip.get_partial_values(&requests))
        .expect("read");

    let mut group = c.benchmark_group("values_1000");
    group.throughput(Throughput::Elements(1000));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("filesystem", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(fs.get_partial_values(black_box(&requests)))
                    .expect("read"),
            )
        });
    });
    group.bench_function("zip", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(zip.get_partial_values(black_box(&requests)))
                    .expect("read"),
            )
        });
    });
    group.finish();
}

criterion_group!(benches, get_1mib, ranges_1000, values_1000);
criterion_main!(benches);
