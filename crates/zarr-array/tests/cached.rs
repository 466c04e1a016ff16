//! `CachedArray`: reads through a cache of decoded chunks give what uncached reads give,
//! cost no requests when the blocks are cached, see writes made through the wrapper, stay
//! within their capacity (least recently used evicted first) and decode a block once for
//! concurrent readers.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use zarr_array::{Array, ArrayBuilder, CachedArray, Error, blocking};
use zarr_core::{ChunkGrid, DataType, FillValue};
use zarr_store::{ByteRange, MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};

const SHAPE: [u64; 2] = [10, 7];

fn values() -> Vec<u16> {
    (0..70u16).map(|i| i.wrapping_mul(977)).collect()
}

/// The elements of `region` of the C-order `values` of shape `SHAPE`.
fn expected(values: &[u16], region: &[Range<u64>; 2]) -> Vec<u16> {
    region[0]
        .clone()
        .flat_map(|y| {
            region[1]
                .clone()
                .map(move |x| values[(y * SHAPE[1] + x) as usize])
        })
        .collect()
}

async fn array<S: WritableStore>(store: Arc<S>) -> Array<S> {
    let array = ArrayBuilder::new(SHAPE.to_vec(), DataType::UInt16, vec![4, 3])
        .fill_value(FillValue::from(7u16))
        .zstd(1)
        .create(store, "/a")
        .await
        .unwrap();
    array.write(.., &values()).await.unwrap();
    // One chunk not stored: it reads as the fill value.
    array.erase_chunk(&[2, 0]).await.unwrap();
    array
}

fn with_fill(mut values: Vec<u16>) -> Vec<u16> {
    for y in 8..10 {
        for x in 0..3 {
            values[y * 7 + x] = 7;
        }
    }
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_reads_match_uncached_ones_and_cost_no_requests_again() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = array(Arc::clone(&store)).await;
    let all = with_fill(values());
    let cached = CachedArray::new(array.clone(), 1 << 20);
    let regions = [
        [0..10, 0..7],
        [1..9, 2..6],
        [9..10, 6..7],
        [3..4, 0..7],
        [8..10, 0..3],
        [0..0, 0..7],
    ];
    for region in &regions {
        assert_eq!(
            cached.read::<u16>(region.clone()).await.unwrap(),
            expected(&all, region),
            "{region:?}"
        );
        assert_eq!(
            array.read::<u16>(region.clone()).await.unwrap(),
            expected(&all, region)
        );
    }
    // The first read decoded every block: 3 x 3 chunks, edge chunks clipped.
    let stats = cached.stats();
    assert_eq!((stats.misses, stats.entries), (9, 9), "{stats:?}");
    assert!(stats.bytes <= stats.capacity);
    store.clear();
    for region in &regions {
        let mut out = vec![0u16; expected(&all, region).len()];
        cached.read_into(region.clone(), &mut out).await.unwrap();
        assert_eq!(out, expected(&all, region));
        let bytes = cached.read_bytes(region.clone()).await.unwrap();
        assert_eq!(bytes.len(), out.len() * 2);
        match cached.read_array_bytes(region.clone()).await.unwrap() {
            zarr_array::ArrayBytes::Fixed(fixed) => assert_eq!(fixed, bytes),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(store.stats().calls(), 0, "every block came from the cache");
    assert_eq!(cached.stats().misses, 9);
    assert_eq!(cached.block_grid(), array.chunk_grid());

    // Typed errors, as for `Array`.
    let err = cached.read::<u32>(..).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err:?}");
    let err = cached.read::<u16>([0..11, 0..7]).await.unwrap_err();
    assert!(matches!(err, Error::Core(_)), "{err:?}");
    let mut short = vec![0u16; 3];
    let err = cached
        .read_into([0..2, 0..2], &mut short)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BufferSize { .. }), "{err:?}");
    let err = cached.read_text(..).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_the_wrapper_drop_the_blocks_they_touch() {
    let store = Arc::new(MemoryStore::new());
    let array = array(Arc::clone(&store)).await;
    let mut all = with_fill(values());
    let cached = CachedArray::new(array.clone(), 1 << 20);
    assert_eq!(cached.read::<u16>(..).await.unwrap(), all);

    cached
        .write([2..5, 1..2], &[1000u16, 1001, 1002])
        .await
        .unwrap();
    for (i, y) in (2..5).enumerate() {
        all[y * 7 + 1] = 1000 + i as u16;
    }
    // Chunks (0, 0) and (1, 0) were dropped; the other seven stay.
    assert_eq!(cached.stats().entries, 7);
    assert_eq!(cached.read::<u16>(..).await.unwrap(), all);

    // A write by another handle is not seen until the blocks are invalidated.
    array.write([9..10, 6..7], &[4242u16]).await.unwrap();
    assert_eq!(cached.read::<u16>([9..10, 6..7]).await.unwrap(), [all[69]]);
    cached.invalidate([9..10, 5..7]).unwrap();
    assert_eq!(cached.read::<u16>([9..10, 6..7]).await.unwrap(), [4242]);
    array.write([0..1, 0..1], &[1u16]).await.unwrap();
    cached.clear();
    assert_eq!(cached.stats().entries, 0);
    assert_eq!(cached.read::<u16>([0..1, 0..1]).await.unwrap(), [1]);
    assert!(cached.invalidate([0..11, 0..1]).is_err());

    // Clones share the cache.
    let clone = cached.clone();
    let before = cached.stats();
    clone.read::<u16>([0..1, 0..1]).await.unwrap();
    assert_eq!(cached.stats().hits, before.hits + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capacity_bounds_the_cache_least_recently_used_first() {
    let store = Arc::new(MemoryStore::new());
    let array = array(Arc::clone(&store)).await;
    // A full chunk is 4 x 3 u16s: 24 bytes of data, plus bookkeeping.
    let probe = CachedArray::new(array.clone(), 1 << 20);
    probe.read::<u16>([0..1, 0..1]).await.unwrap();
    let one = probe.stats().bytes;
    let cached = CachedArray::new(array.clone(), 2 * one);
    let a = [0..1, 0..1];
    let b = [0..1, 3..4];
    let c = [4..5, 0..1];
    for region in [&a, &b, &a, &c] {
        cached.read::<u16>(region.clone()).await.unwrap();
    }
    let stats = cached.stats();
    assert_eq!((stats.misses, stats.hits, stats.entries), (3, 1, 2));
    assert!(stats.bytes <= 2 * one);
    // `b` was the least recently used when `c` came in: `a` is still there, `b` is not.
    cached.read::<u16>(a.clone()).await.unwrap();
    assert_eq!(cached.stats().hits, 2);
    cached.read::<u16>(b.clone()).await.unwrap();
    assert_eq!(cached.stats().misses, 4);

    // A block bigger than the capacity is read but not kept.
    let tiny = CachedArray::new(array, 8);
    let all = with_fill(values());
    assert_eq!(tiny.read::<u16>(..).await.unwrap(), all);
    assert_eq!(tiny.read::<u16>(..).await.unwrap(), all);
    let stats = tiny.stats();
    assert_eq!((stats.misses, stats.entries, stats.bytes), (18, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_arrays_cache_inner_chunks() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![16, 16], DataType::UInt32, vec![8, 8])
        .sharding(vec![4, 4])
        .zstd(1)
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    let all: Vec<u32> = (0..256).map(|i| i * 3).collect();
    array.write(.., &all).await.unwrap();
    let cached = CachedArray::new(array, 1 << 20);
    assert_eq!(
        cached.block_grid(),
        &ChunkGrid::regular(vec![4, 4]).unwrap()
    );
    store.clear();
    assert_eq!(cached.read::<u32>([5..6, 9..11]).await.unwrap(), [267, 270]);
    let stats = cached.stats();
    assert_eq!((stats.misses, stats.entries), (1, 1), "one inner chunk");
    assert!(stats.bytes < 4 * 4 * 4 + 200, "{stats:?}");
    let requests = store.stats().calls();
    assert!(requests >= 1);
    assert_eq!(cached.read::<u32>([4..8, 8..12]).await.unwrap().len(), 16);
    assert_eq!(
        store.stats().calls(),
        requests,
        "the inner chunk was cached"
    );
    let region: Vec<u32> = cached.read([3..13, 2..15]).await.unwrap();
    let want: Vec<u32> = (3..13)
        .flat_map(|y| (2..15).map(move |x| (y * 16 + x) * 3))
        .collect();
    assert_eq!(region, want);
    assert_eq!(cached.stats().entries, 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_and_bytes_through_the_cache() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![5, 3], DataType::String, vec![2, 2])
        .create(Arc::clone(&store), "/t")
        .await
        .unwrap();
    let words: Vec<String> = (0..15)
        .map(|i| "é".repeat(i % 4) + &i.to_string())
        .collect();
    array.write_text(.., &words).await.unwrap();
    let cached = CachedArray::new(array, 1 << 20);
    assert_eq!(cached.read_text(..).await.unwrap(), words);
    assert_eq!(
        cached.read_text([3..5, 1..3]).await.unwrap(),
        [&*words[10], &words[11], &words[13], &words[14]]
    );
    assert_eq!(cached.stats().misses, 6);
    let strings = cached.read_strings::<i32>([4..5, 0..3]).await.unwrap();
    assert_eq!(strings.to_strings(), words[12..15]);
    cached.write_text([0..1, 0..1], &["new"]).await.unwrap();
    assert_eq!(
        cached.read_text([0..1, 0..2]).await.unwrap(),
        ["new", &words[1]]
    );
    assert!(matches!(
        cached.read::<u8>(..).await.unwrap_err(),
        Error::ElementType { .. }
    ));
    assert!(matches!(
        cached.read_binary::<i32>(..).await.unwrap_err(),
        Error::ElementType { .. }
    ));

    let binary = ArrayBuilder::new(vec![4], DataType::Bytes, vec![3])
        .create(Arc::clone(&store), "/b")
        .await
        .unwrap();
    let cached = CachedArray::new(binary, 1 << 20);
    let values =
        zarr_vlen::VlenBinary::<i32>::from_elements([&b"\x00"[..], b"", b"xyz", b"\xff\xfe"])
            .unwrap();
    cached.write_binary(.., &values).await.unwrap();
    let read = cached.read_binary::<i64>(1..4).await.unwrap();
    assert_eq!(
        read.iter().collect::<Vec<_>>(),
        [&b""[..], b"xyz", b"\xff\xfe"]
    );
}

/// A chunk that does not decode is the read's error (naming the chunk), is not kept, and
/// leaves the other blocks readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_chunks_are_errors_and_not_cached() {
    let store = Arc::new(MemoryStore::new());
    let array = array(Arc::clone(&store)).await;
    store
        .set(&StoreKey::new("a/c/1/1"), Bytes::from_static(b"not zstd"))
        .await
        .unwrap();
    let cached = CachedArray::new(array, 1 << 20);
    let err = cached.read::<u16>(..).await.unwrap_err();
    assert!(matches!(err, Error::Chunk { .. }), "{err:?}");
    assert!(err.to_string().contains("a/c/1/1"), "{err}");
    assert_eq!(
        cached.read::<u16>([0..4, 0..3]).await.unwrap(),
        expected(&values(), &[0..4, 0..3])
    );
    let again = cached.read::<u16>([4..5, 3..4]).await.unwrap_err();
    assert!(matches!(again, Error::Chunk { .. }), "{again:?}");
}

/// Counts `get`s; each takes a while (after reading the value), so that concurrent reads
/// overlap and writes can land while a read is in flight.
#[derive(Debug)]
struct Slow {
    inner: MemoryStore,
    gets: AtomicU64,
}

#[async_trait]
impl ReadableStore for Slow {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        let value = self.inner.get(key).await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        value
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        self.inner.get_partial_values(key_ranges).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reads_of_one_block_decode_it_once() {
    let inner = MemoryStore::new();
    array(Arc::new(inner.clone())).await;
    let slow = Arc::new(Slow {
        inner,
        gets: AtomicU64::new(0),
    });
    let array = Array::open(Arc::clone(&slow), "/a").await.unwrap();
    let gets = slow.gets.load(Ordering::SeqCst);
    let cached = CachedArray::new(array, 1 << 20);
    let reads = (0..8).map(|i| {
        let cached = cached.clone();
        tokio::spawn(async move { cached.read::<u16>([1..2, i % 3..i % 3 + 1]).await })
    });
    for (i, read) in futures::future::join_all(reads)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(read.unwrap().unwrap(), [values()[7 + i % 3]]);
    }
    assert_eq!(slow.gets.load(Ordering::SeqCst) - gets, 1, "one fetch");
    let stats = cached.stats();
    assert_eq!((stats.misses, stats.hits), (1, 7));
}

#[test]
fn the_blocking_api_reads_and_writes_through_the_cache() {
    let store = Arc::new(MemoryStore::new());
    let builder = ArrayBuilder::new(vec![6, 4], DataType::Float32, vec![3, 2]);
    let array = blocking::Array::create(&builder, Arc::clone(&store), "/f").unwrap();
    let cached = blocking::CachedArray::new(array, 1 << 20);
    let values: Vec<f32> = (0..24).map(|i| i as f32 / 2.0).collect();
    cached.write(.., &values).unwrap();
    assert_eq!(cached.read::<f32>(..).unwrap(), values);
    assert_eq!(cached.read::<f32>([5..6, 3..4]).unwrap(), [11.5]);
    assert_eq!(cached.stats().hits, 1);
    cached.write([5..6, 3..4], &[-1.0f32]).unwrap();
    assert_eq!(cached.read::<f32>([5..6, 2..4]).unwrap(), [11.0, -1.0]);
    let mut out = [0f32; 2];
    cached.read_into([0..1, 0..2], &mut out).unwrap();
    assert_eq!(out, [0.0, 0.5]);
    assert_eq!(
        cached.read_bytes([0..1, 1..2]).unwrap(),
        0.5f32.to_ne_bytes()
    );
    cached.invalidate(..).unwrap();
    cached.clear();
    assert_eq!(cached.stats().entries, 0);
    assert_eq!(cached.as_async().array().shape(), [6, 4]);
}

/// A block a read was decoding when the cache was invalidated is not kept: the next read
/// sees the new values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_in_flight_across_an_invalidation_do_not_keep_what_they_read() {
    let inner = MemoryStore::new();
    let writer = array(Arc::new(inner.clone())).await;
    let slow = Arc::new(Slow {
        inner,
        gets: AtomicU64::new(0),
    });
    let cached = CachedArray::new(Array::open(slow, "/a").await.unwrap(), 1 << 20);
    let reader = cached.clone();
    let read = tokio::spawn(async move { reader.read::<u16>([0..1, 0..1]).await });
    tokio::time::sleep(Duration::from_millis(10)).await;
    writer.write([0..1, 0..1], &[999u16]).await.unwrap();
    cached.invalidate([0..1, 0..1]).unwrap();
    assert_eq!(
        read.await.unwrap().unwrap(),
        [values()[0]],
        "read before the write"
    );
    assert_eq!(cached.stats().entries, 0);
    assert_eq!(cached.read::<u16>([0..1, 0..1]).await.unwrap(), [999]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_dimensional_and_empty_arrays() {
    let store = Arc::new(MemoryStore::new());
    let scalar = ArrayBuilder::new(vec![], DataType::Int64, vec![])
        .create(Arc::clone(&store), "/scalar")
        .await
        .unwrap();
    let cached = CachedArray::new(scalar, 1 << 10);
    assert_eq!(cached.read::<i64>(..).await.unwrap(), [0]);
    cached.write(.., &[-5i64]).await.unwrap();
    assert_eq!(cached.read::<i64>(..).await.unwrap(), [-5]);
    assert_eq!(cached.read::<i64>(..).await.unwrap(), [-5]);
    assert_eq!(cached.stats().hits, 1);

    let empty = ArrayBuilder::new(vec![0, 4], DataType::String, vec![2, 2])
        .create(Arc::clone(&store), "/empty")
        .await
        .unwrap();
    let cached = CachedArray::new(empty, 1 << 10);
    assert!(cached.read_text(..).await.unwrap().is_empty());
    let stats = cached.stats();
    assert_eq!(
        (
            stats.hits,
            stats.misses,
            stats.entries,
            stats.bytes,
            stats.capacity
        ),
        (0, 0, 0, 0, 1 << 10)
    );
}

/// Optional (nullable) values, struct fields and `ndarray` regions read through the cache
/// give what uncached reads give, and warm reads make no store calls; optional writes
/// through the wrapper drop the blocks they touch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_values_struct_fields_and_ndarrays_through_the_cache() {
    use zarr_core::{OptionalType, StructField, StructType};
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));

    // Nullable floats, one chunk never written (all missing).
    let nullable = DataType::Optional(OptionalType::new(DataType::Float32));
    let floats = ArrayBuilder::new(vec![10], nullable, vec![4])
        .create(Arc::clone(&store), "/f")
        .await
        .unwrap();
    let values: Vec<Option<f32>> = (0..8)
        .map(|i| (i % 3 != 1).then_some(i as f32 * 1.5))
        .collect();
    floats.write_optional(0..8, &values).await.unwrap();
    let cached = CachedArray::new(floats.clone(), 1 << 20);
    for region in [0..10, 3..9, 9..10, 5..5] {
        assert_eq!(
            cached.read_optional::<f32>(region.clone()).await.unwrap(),
            floats.read_optional::<f32>(region.clone()).await.unwrap(),
            "{region:?}"
        );
    }
    let err = cached.read_optional::<u32>(..).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err}");
    store.clear();
    assert_eq!(cached.read_optional::<f32>(0..8).await.unwrap(), values);
    assert_eq!(store.stats().calls(), 0, "warm optional reads");
    cached.write_optional(2..3, &[Some(-1.0f32)]).await.unwrap();
    assert_eq!(
        cached.read_optional::<f32>(1..4).await.unwrap(),
        [None, Some(-1.0), Some(4.5)]
    );

    // Nullable strings.
    let texts = ArrayBuilder::new(
        vec![5],
        DataType::Optional(OptionalType::new(DataType::String)),
        vec![2],
    )
    .create(Arc::clone(&store), "/s")
    .await
    .unwrap();
    let words = [Some("a"), None, Some(""), Some("héllo"), None];
    texts.write_optional_text(0..5, &words).await.unwrap();
    let cached = CachedArray::new(texts.clone(), 1 << 20);
    let expected: Vec<Option<String>> = words.iter().map(|w| w.map(String::from)).collect();
    assert_eq!(cached.read_optional_text(..).await.unwrap(), expected);
    store.clear();
    assert_eq!(
        cached.read_optional_text(1..4).await.unwrap(),
        &expected[1..4]
    );
    assert_eq!(
        cached
            .read_optional_binary(..)
            .await
            .unwrap_err()
            .to_string(),
        texts
            .read_optional_binary(..)
            .await
            .unwrap_err()
            .to_string()
    );
    assert_eq!(store.stats().calls(), 0, "warm optional string reads");
    cached
        .write_optional_text(4..5, &[Some("z")])
        .await
        .unwrap();
    assert_eq!(
        cached.read_optional_text(3..5).await.unwrap(),
        [Some("héllo".to_owned()), Some("z".to_owned())]
    );

    // Struct fields.
    let point = StructType::new(vec![
        StructField::new("id", DataType::UInt16),
        StructField::new("x", DataType::Float64),
    ])
    .unwrap();
    let points = ArrayBuilder::new(vec![3, 4], DataType::Struct(point), vec![2, 3])
        .create(Arc::clone(&store), "/p")
        .await
        .unwrap();
    let records: Vec<u8> = (0..12u16)
        .flat_map(|i| {
            let mut r = i.to_ne_bytes().to_vec();
            r.extend((f64::from(i) / 4.0).to_ne_bytes());
            r
        })
        .collect();
    points.write_bytes(.., &records).await.unwrap();
    let cached = CachedArray::new(points.clone(), 1 << 20);
    let region = [1..3, 1..4];
    let ids: Vec<u16> = cached.read_field(region.clone(), &["id"]).await.unwrap();
    assert_eq!(ids, [5, 6, 7, 9, 10, 11]);
    let uncached: Vec<f64> = points.read_field(region.clone(), &["x"]).await.unwrap();
    assert_eq!(uncached, [1.25, 1.5, 1.75, 2.25, 2.5, 2.75]);
    store.clear();
    let xs: Vec<f64> = cached.read_field(region.clone(), &["x"]).await.unwrap();
    assert_eq!(xs, uncached);
    assert_eq!(store.stats().calls(), 0, "warm struct field reads");
    let err = cached.read_field::<u32>(.., &["id"]).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err}");
    assert!(cached.read_field::<u16>(.., &["nope"]).await.is_err());

    // `ndarray` regions.
    let plain = array(Arc::clone(&store)).await;
    let cached = CachedArray::new(plain.clone(), 1 << 20);
    let region = [2..9, 1..6];
    let first = cached.read_ndarray::<u16>(region.clone()).await.unwrap();
    assert_eq!(
        first,
        plain.read_ndarray::<u16>(region.clone()).await.unwrap()
    );
    assert_eq!(first.shape(), &[7, 5]);
    store.clear();
    assert_eq!(cached.read_ndarray::<u16>(region).await.unwrap(), first);
    assert_eq!(store.stats().calls(), 0, "warm ndarray reads");

    // The blocking wrapper, on a thread outside the runtime.
    let floats_blocking = blocking::CachedArray::from(CachedArray::new(floats, 1 << 20));
    let texts_blocking = blocking::CachedArray::from(CachedArray::new(texts, 1 << 20));
    let points_blocking = blocking::CachedArray::from(CachedArray::new(points, 1 << 20));
    std::thread::spawn(move || {
        floats_blocking
            .write_optional(9..10, &[Some(2.5f32)])
            .unwrap();
        assert_eq!(
            floats_blocking.read_optional::<f32>(8..10).unwrap(),
            [None, Some(2.5)]
        );
        assert_eq!(
            texts_blocking.read_optional_text(3..5).unwrap(),
            [Some("héllo".to_owned()), Some("z".to_owned())]
        );
        assert_eq!(
            points_blocking
                .read_field::<u16>([0..1, 0..2], &["id"])
                .unwrap(),
            [0, 1]
        );
    })
    .join()
    .unwrap();
}

/// Orthogonal selections, points and blocks through the cache give what the array gives,
/// on a plain array (with a missing chunk) and a sharded one (blocks are inner chunks), and
/// cost no requests once their blocks are cached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selections_points_and_blocks_through_the_cache() {
    use zarr_array::{AxisSelection, Selection};

    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let plain = array(Arc::clone(&store)).await;
    let sharded = ArrayBuilder::new(vec![13, 11], DataType::UInt16, vec![8, 8])
        .sharding(vec![4, 2])
        .zstd(1)
        .fill_value(FillValue::from(7u16))
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    let many: Vec<u16> = (0..143u16).map(|i| i.wrapping_mul(331)).collect();
    sharded.write(.., &many).await.unwrap();

    for array in [plain, sharded] {
        let shape = array.shape().to_vec();
        let cached = CachedArray::new(array.clone(), 1 << 20);
        let selections = [
            Selection::new([
                AxisSelection::indices([shape[0] - 1, 0, 5, 5, 2]),
                AxisSelection::step(1.., 2),
            ]),
            Selection::new([
                AxisSelection::step(.., 3),
                AxisSelection::indices([6, 0, 3]),
            ]),
            Selection::new([
                AxisSelection::mask((0..shape[0]).map(|y| y % 4 == 1)),
                AxisSelection::from(2..5),
            ]),
            Selection::new([AxisSelection::from(1..4), AxisSelection::from(0..2)]),
            Selection::new([AxisSelection::indices([]), AxisSelection::all()]),
            Selection::new([AxisSelection::from(3), AxisSelection::indices([4, 1])]),
        ];
        for (i, selection) in selections.iter().enumerate() {
            let want: Vec<u16> = array.read_selection(selection).await.unwrap();
            assert_eq!(
                cached.read_selection::<u16>(selection).await.unwrap(),
                want,
                "{i}"
            );
            assert_eq!(
                cached.read_selection_bytes(selection).await.unwrap(),
                array.read_selection_bytes(selection).await.unwrap(),
                "{i}"
            );
        }
        let points = [
            [0, 0],
            [shape[0] - 1, shape[1] - 1],
            [8, 1],
            [3, 4],
            [8, 1],
            [9, 2],
        ];
        let want: Vec<u16> = array.read_points(points).await.unwrap();
        assert_eq!(cached.read_points::<u16, _>(points).await.unwrap(), want);
        let want: Vec<u16> = array.read_blocks([1..2, 0..2]).await.unwrap();
        assert_eq!(cached.read_blocks::<u16>([1..2, 0..2]).await.unwrap(), want);

        // Everything is cached now: no more requests.
        cached.read_bytes(..).await.unwrap();
        store.clear();
        for selection in &selections {
            cached.read_selection::<u16>(selection).await.unwrap();
        }
        cached.read_points::<u16, _>(points).await.unwrap();
        assert_eq!(store.stats().calls(), 0, "{:?}", store.operations());

        // Typed errors, as the array's.
        assert!(matches!(
            cached.read_selection::<u32>(&selections[0]).await,
            Err(Error::ElementType { .. })
        ));
        assert!(cached.read_points::<u16, _>([[shape[0], 0]]).await.is_err());
        assert!(cached.read_points::<u16, _>([[0_u64]]).await.is_err());
        assert!(
            cached
                .read_selection::<u16>(&Selection::new([AxisSelection::all()]))
                .await
                .is_err()
        );
    }

    let selection = Selection::new([AxisSelection::indices([12, 0]), AxisSelection::from(9..11)]);
    let points = [[12_u64, 10], [0, 9]];
    // The blocking API, on a thread of its own (not inside the runtime).
    std::thread::spawn(move || {
        let blocking_array = blocking::CachedArray::new(
            blocking::Array::open(Arc::clone(&store), "/s").unwrap(),
            1 << 20,
        );
        assert_eq!(
            blocking_array.read_selection::<u16>(&selection).unwrap(),
            [many[12 * 11 + 9], many[12 * 11 + 10], many[9], many[10]]
        );
        assert_eq!(
            blocking_array.read_points::<u16, _>(points).unwrap(),
            [many[12 * 11 + 10], many[9]]
        );
    })
    .join()
    .unwrap();
}
