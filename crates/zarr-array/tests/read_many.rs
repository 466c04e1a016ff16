//! `read_many`: several regions at once, in order, on every schedule, within the in-flight
//! limit, failing as a whole on the first bad read.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use zarr_array::{Array, ArrayBuilder, ArrayOptions, Error, blocking};
use zarr_core::DataType;
use zarr_store::{ByteRange, MemoryStore, ReadableStore, StoreKey, WritableStore};

const SIDE: u64 = 24;

fn values() -> Vec<u32> {
    (0..(SIDE * SIDE) as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect()
}

/// Regions of every kind: single chunks, blocks across chunks, a single element, rows.
fn regions() -> Vec<[std::ops::Range<u64>; 2]> {
    let mut out = Vec::new();
    for i in 0..SIDE / 4 {
        out.push([i * 4..i * 4 + 4, 0..4]);
        out.push([i..i + 9, i * 2..i * 2 + 5]);
        out.push([i * 3..i * 3 + 1, SIDE - 1..SIDE]);
    }
    out.push([0..SIDE, 0..SIDE]);
    out
}

fn expected(all: &[u32], region: &[std::ops::Range<u64>; 2]) -> Vec<u32> {
    region[0]
        .clone()
        .flat_map(|y| region[1].clone().map(move |x| all[(y * SIDE + x) as usize]))
        .collect()
}

/// An array of 4x4 chunks, in shards of 8x8 when `sharded`, holding [`values`].
async fn array(store: Arc<MemoryStore>, sharded: bool) -> Array<MemoryStore> {
    let builder = if sharded {
        ArrayBuilder::new(vec![SIDE, SIDE], DataType::UInt32, vec![8, 8])
            .zstd(1)
            .sharding(vec![4, 4])
    } else {
        ArrayBuilder::new(vec![SIDE, SIDE], DataType::UInt32, vec![4, 4]).zstd(1)
    };
    let array = builder.create(store, "/m").await.unwrap();
    array.write([0..SIDE, 0..SIDE], &values()).await.unwrap();
    array
}

fn check(reads: Vec<Vec<u32>>) {
    let all = values();
    let regions = regions();
    assert_eq!(reads.len(), regions.len());
    for (read, region) in reads.iter().zip(&regions) {
        assert_eq!(read, &expected(&all, region), "{region:?}");
    }
}

#[test]
fn every_schedule_returns_every_region_in_order() {
    for sharded in [false, true] {
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        check(multi.block_on(async {
            let array = array(Arc::new(MemoryStore::new()), sharded).await;
            array.read_many(regions()).await.unwrap()
        }));
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        check(current.block_on(async {
            let array = array(Arc::new(MemoryStore::new()), sharded).await;
            array.read_many(regions()).await.unwrap()
        }));
        let array = current.block_on(array(Arc::new(MemoryStore::new()), sharded));
        let array = blocking::Array::from(array);
        check(array.read_many(regions()).unwrap());
        let none: Vec<Vec<u32>> = array
            .read_many(Vec::<[std::ops::Range<u64>; 2]>::new())
            .unwrap();
        assert!(none.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_region_or_chunk_fails_the_whole_call() {
    let store = Arc::new(MemoryStore::new());
    let array = array(Arc::clone(&store), false).await;
    // Out of bounds: refused before anything is read.
    let err = array
        .read_many::<u32, _>([[0..4, 0..4], [0..4, 20..25]])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Core(_)), "{err:?}");
    let err = array.read_many::<u16, _>([[0..4, 0..4]]).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err:?}");
    // A corrupt chunk: its read's error, naming the chunk; the others are abandoned.
    let key = StoreKey::new("m/c/2/3");
    store
        .set(&key, Bytes::from_static(b"not zstd"))
        .await
        .unwrap();
    let err = array.read_many::<u32, _>(regions()).await.unwrap_err();
    assert!(err.to_string().contains("m/c/2/3"), "{err}");
    let fine: Vec<Vec<u32>> = array.read_many([[0..4, 0..4]]).await.unwrap();
    assert_eq!(fine[0], expected(&values(), &[0..4, 0..4]));
}

/// Counts the `get`s in flight (each takes a moment), and the most at once.
#[derive(Debug)]
struct Slow {
    inner: MemoryStore,
    now: AtomicUsize,
    most: AtomicUsize,
}

#[async_trait]
impl ReadableStore for Slow {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        self.inner.get(key).await
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
async fn reads_in_flight_stay_within_io_concurrency() {
    let inner = MemoryStore::new();
    array(Arc::new(inner.clone()), false).await;
    let slow = Arc::new(Slow {
        inner,
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    });
    let options = ArrayOptions::default().with_io_concurrency(3);
    let array = Array::open_with(Arc::clone(&slow), "/m", options)
        .await
        .unwrap();
    let chunks: Vec<_> = (0..SIDE / 4)
        .flat_map(|y| (0..SIDE / 4).map(move |x| [y * 4..y * 4 + 4, x * 4..x * 4 + 4]))
        .collect();
    let reads: Vec<Vec<u32>> = array.read_many(chunks.clone()).await.unwrap();
    for (read, region) in reads.iter().zip(&chunks) {
        assert_eq!(read, &expected(&values(), region));
    }
    let most = slow.most.load(Ordering::SeqCst);
    assert!((2..=3).contains(&most), "{most} reads in flight at most");
}
