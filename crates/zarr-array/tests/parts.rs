//! `split_region`, `read_parts` and `write_parts`: going through an array part by part, in
//! chunk-aligned parts of bounded size, with a bounded number of reads ahead or writes in
//! flight.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use proptest::prelude::*;
use zarr_array::{Array, ArrayBuilder, ArrayOptions, Error, Region, blocking};
use zarr_core::{ChunkGrid, DataType, DimensionChunks, NodePath};
use zarr_store::{ByteRange, MemoryStore, ReadableStore, StoreKey, WritableStore};

fn region(ranges: &[Range<u64>]) -> Region {
    Region::try_new(ranges.to_vec()).unwrap()
}

/// An array with `metadata`'s layout on a memory store, nothing written.
fn unwritten(builder: ArrayBuilder) -> Array<MemoryStore> {
    let metadata = builder.build_metadata().unwrap();
    Array::from_metadata(
        Arc::new(MemoryStore::new()),
        NodePath::root(),
        metadata,
        ArrayOptions::default(),
    )
    .unwrap()
}

fn count(part: &Region) -> u64 {
    part.num_elements().unwrap()
}

/// How a split may cut a sharded array: along inner chunks (`split_region`) or only between
/// shards (`split_region_whole_chunks`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    InnerChunks,
    Shards,
}

/// The unit holding `element` that a part may not cut: a chunk of the array's grid, or for
/// [`Unit::InnerChunks`] the inner chunk of a sharded array.
fn chunk_of<S: ?Sized>(array: &Array<S>, element: &[u64], unit: Unit) -> Vec<u64> {
    if let (Some(inner), Unit::InnerChunks) = (array.inner_chunk_shape(), unit) {
        return element.iter().zip(inner).map(|(x, n)| x / n).collect();
    }
    array
        .chunk_grid()
        .chunk_of(array.shape(), element)
        .unwrap()
        .0
}

/// Whether every element of `part` lies in one chunk (inner chunk of a sharded array).
fn in_one_chunk<S: ?Sized>(array: &Array<S>, part: &Region, unit: Unit) -> bool {
    let last: Vec<u64> = part.ranges().iter().map(|r| r.end - 1).collect();
    chunk_of(array, &part.starts(), unit) == chunk_of(array, &last, unit)
}

/// Whether `at` is an edge between two chunks along `dim` (or the array's end).
fn is_chunk_edge<S: ?Sized>(array: &Array<S>, dim: usize, at: u64, unit: Unit) -> bool {
    if at == 0 || at == array.shape()[dim] {
        return true;
    }
    let mut before = vec![0; array.ndim()];
    before[dim] = at - 1;
    let mut after = before.clone();
    after[dim] = at;
    chunk_of(array, &before, unit)[dim] != chunk_of(array, &after, unit)[dim]
}

/// What every split must be: the parts cover `whole` exactly once, in C order of their
/// first elements; each is within `max` elements or inside one chunk; each starts and ends
/// on chunk edges or on `whole`'s bounds (the chunks are never cut).
fn check_split<S: ?Sized>(
    array: &Array<S>,
    whole: &Region,
    parts: &[Region],
    max: u64,
    unit: Unit,
) {
    let total: u64 = parts.iter().map(count).sum();
    assert_eq!(total, count(whole), "{parts:?} do not add up to {whole}");
    let shape = whole.shape();
    let mut seen = vec![0u8; count(whole) as usize];
    for part in parts {
        let inside = part.ranges().iter().zip(whole.ranges());
        assert!(
            inside
                .clone()
                .all(|(p, w)| p.start >= w.start && p.end <= w.end),
            "{part} outside {whole}"
        );
        assert!(!part.is_empty(), "an empty part in {parts:?}");
        assert!(
            count(part) <= max.max(1) || in_one_chunk(array, part, unit),
            "{part} holds {} > {max} elements across chunks",
            count(part)
        );
        for (dim, (p, w)) in inside.enumerate() {
            for at in [p.start, p.end] {
                assert!(
                    at == w.start || at == w.end || is_chunk_edge(array, dim, at, unit),
                    "{part} cuts a chunk in dimension {dim}"
                );
            }
        }
        // Mark every element (C order within `whole`).
        let mut index = part.starts();
        'elements: loop {
            let flat = index
                .iter()
                .zip(whole.ranges())
                .zip(&shape)
                .fold(0u64, |acc, ((&i, w), &n)| acc * n + (i - w.start));
            seen[flat as usize] += 1;
            let mut d = index.len();
            loop {
                if d == 0 {
                    break 'elements;
                }
                d -= 1;
                index[d] += 1;
                if index[d] < part.ranges()[d].end {
                    break;
                }
                index[d] = part.ranges()[d].start;
            }
        }
    }
    assert!(seen.iter().all(|&n| n == 1), "parts overlap or leave gaps");
    // C order of the chunks (shards), then of the elements (of the inner chunks of a shard).
    let order: Vec<(Vec<u64>, Vec<u64>)> = parts
        .iter()
        .map(|part| {
            let chunk = array.chunk_grid().chunk_of(array.shape(), &part.starts());
            (chunk.unwrap().0, part.starts())
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "not in C order: {parts:?}"
    );
}

#[test]
fn parts_are_whole_rows_of_chunks_then_whole_chunks() {
    let array = unwritten(ArrayBuilder::new(
        vec![10, 1000],
        DataType::Float32,
        vec![5, 100],
    ));
    // Everything fits: one part.
    assert_eq!(
        array.split_region(.., 10_000).unwrap(),
        [region(&[0..10, 0..1000])]
    );
    // Two rows of chunks: one each.
    assert_eq!(
        array.split_region(.., 9_999).unwrap(),
        [region(&[0..5, 0..1000]), region(&[5..10, 0..1000])]
    );
    // Less than one chunk: one chunk each, in C order (0 counts as 1).
    for max in [0, 1, 499] {
        let parts = array.split_region(.., max).unwrap();
        assert_eq!(parts.len(), 20);
        assert_eq!(parts[1], region(&[0..5, 100..200]));
        assert_eq!(parts[10], region(&[5..10, 0..100]));
        check_split(&array, &array.full_region(), &parts, max, Unit::InnerChunks);
    }
    // A region off the chunk edges: clipped first and last chunks.
    let whole = region(&[3..9, 150..720]);
    let parts = array.split_region(&whole, 1_000).unwrap();
    assert_eq!(
        parts[..3],
        [
            region(&[3..5, 150..600]),
            region(&[3..5, 600..720]),
            region(&[5..9, 150..400]),
        ]
    );
    check_split(&array, &whole, &parts, 1_000, Unit::InnerChunks);
    // Empty regions have no parts; bad ones are errors.
    assert!(array.split_region([4..4, 0..10], 5).unwrap().is_empty());
    assert!(matches!(
        array.split_region([0..11, 0..10], 5),
        Err(Error::Core(_))
    ));
    // A region of another rank.
    assert!(array.split_region(region(&[0..1, 0..1, 0..1]), 5).is_err());
    // A 0-d array: its one element.
    let scalar = unwritten(ArrayBuilder::new(vec![], DataType::Int8, vec![]));
    assert_eq!(scalar.split_region(.., 0).unwrap(), [region(&[])]);
}

#[test]
fn shards_too_large_are_cut_along_their_inner_chunks() {
    let array = unwritten(
        ArrayBuilder::new(vec![64, 64], DataType::UInt16, vec![32, 32]).sharding(vec![8, 8]),
    );
    // A row of shards fits: whole shards.
    assert_eq!(array.split_region(.., 2_048).unwrap().len(), 2);
    // One shard fits, not two.
    let parts = array.split_region(.., 1_024).unwrap();
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[1], region(&[0..32, 32..64]));
    // A shard does not fit: rows of its inner chunks (8 x 32 = 256 elements).
    let parts = array.split_region(.., 300).unwrap();
    assert_eq!(parts.len(), 16);
    assert_eq!(
        parts[..2],
        [region(&[0..8, 0..32]), region(&[8..16, 0..32])]
    );
    assert_eq!(parts[4], region(&[0..8, 32..64]));
    // Not even a row of them: inner chunks one by one, never across a shard.
    let parts = array.split_region(.., 100).unwrap();
    assert_eq!(parts.len(), 64);
    assert!(
        parts
            .iter()
            .all(|p| count(p) == 64 && in_one_chunk(&array, p, Unit::InnerChunks))
    );
    check_split(&array, &array.full_region(), &parts, 100, Unit::InnerChunks);
    // Off the edges: inner chunks clipped to the region, together while they fit.
    let whole = region(&[5..40, 3..30]);
    let parts = array.split_region(&whole, 50).unwrap();
    assert_eq!(parts[0], region(&[5..8, 3..16]));
    check_split(&array, &whole, &parts, 50, Unit::InnerChunks);
}

#[test]
fn splits_for_writing_keep_whole_shards() {
    let array = unwritten(
        ArrayBuilder::new(vec![64, 64], DataType::UInt16, vec![32, 32]).sharding(vec![8, 8]),
    );
    // Where shards fit, as `split_region`.
    for max in [4_096, 2_048, 1_024] {
        assert_eq!(
            array.split_region_whole_chunks(.., max).unwrap(),
            array.split_region(.., max).unwrap()
        );
    }
    // Where a shard does not, the shard whole all the same.
    let shards = [
        region(&[0..32, 0..32]),
        region(&[0..32, 32..64]),
        region(&[32..64, 0..32]),
        region(&[32..64, 32..64]),
    ];
    for max in [0, 100, 300, 1_023] {
        assert_eq!(array.split_region_whole_chunks(.., max).unwrap(), shards);
    }
    let whole = region(&[5..40, 3..30]);
    let parts = array.split_region_whole_chunks(&whole, 50).unwrap();
    assert_eq!(parts, [region(&[5..32, 3..30]), region(&[32..40, 3..30])]);
    check_split(&array, &whole, &parts, 50, Unit::Shards);
    // Without sharding, the same parts as `split_region`.
    let plain = unwritten(ArrayBuilder::new(
        vec![64, 64],
        DataType::UInt16,
        vec![8, 8],
    ));
    assert_eq!(
        plain.split_region_whole_chunks(.., 100).unwrap(),
        plain.split_region(.., 100).unwrap()
    );
    assert!(array.split_region_whole_chunks([0..65, 0..1], 10).is_err());
}

#[test]
fn rectilinear_grids_split_on_their_edges() {
    let grid = ChunkGrid::rectilinear(vec![
        DimensionChunks::from_edges([3, 7, 2, 8]),
        DimensionChunks::Regular(4),
    ])
    .unwrap();
    let array =
        unwritten(ArrayBuilder::new(vec![20, 10], DataType::UInt8, vec![1, 1]).chunk_grid(grid));
    let parts = array.split_region(.., 99).unwrap();
    // Rows of chunks of 3, 7 and 2 rows (30 + 70 > 99; 70 + 20 = 90), then 8.
    assert_eq!(
        parts,
        [
            region(&[0..3, 0..10]),
            region(&[3..12, 0..10]),
            region(&[12..20, 0..10]),
        ]
    );
    check_split(&array, &array.full_region(), &parts, 99, Unit::InnerChunks);
    // 100 takes two rows of chunks at a time.
    assert_eq!(
        array.split_region(.., 100).unwrap(),
        [region(&[0..10, 0..10]), region(&[10..20, 0..10])]
    );
}

prop_compose! {
    /// An array of rank 1 to 3 (regular or rectilinear chunks, sharded or not) and a region
    /// in it.
    fn layout()(
        dims in prop::collection::vec((1u64..30, 1u64..8, any::<bool>(), any::<u64>()), 1..=3),
        sharded in any::<bool>(),
    ) -> (ArrayBuilder, Region) {
        let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
        let chunks: Vec<u64> = dims.iter().map(|d| d.1).collect();
        let ranges: Vec<Range<u64>> = dims
            .iter()
            .map(|&(n, _, _, seed)| {
                let a = seed % (n + 1);
                let b = (seed >> 20) % (n + 1);
                a.min(b)..a.max(b)
            })
            .collect();
        let builder = if sharded {
            // Shards of 2 inner chunks per dimension.
            ArrayBuilder::new(shape, DataType::UInt8, chunks.iter().map(|c| c * 2).collect())
                .sharding(chunks)
        } else if dims.iter().any(|d| d.2) {
            let grid = ChunkGrid::rectilinear(
                dims.iter()
                    .map(|&(n, c, explicit, seed)| {
                        if !explicit {
                            return DimensionChunks::Regular(c);
                        }
                        // Edges of 1 to 2c - 1, covering the dimension.
                        let mut edges = Vec::new();
                        let (mut at, mut s) = (0, seed);
                        while at < n {
                            let e = 1 + s % (2 * c - 1).max(1);
                            edges.push(e);
                            at += e;
                            s = s.rotate_left(7) ^ 0x9e37_79b9;
                        }
                        DimensionChunks::from_edges(edges)
                    })
                    .collect(),
            )
            .unwrap();
            ArrayBuilder::new(shape, DataType::UInt8, chunks).chunk_grid(grid)
        } else {
            ArrayBuilder::new(shape, DataType::UInt8, chunks)
        };
        (builder, Region::try_new(ranges).unwrap())
    }
}

proptest! {
    #[test]
    fn every_split_covers_the_region_once_in_order(
        (builder, whole) in layout(),
        max in 0u64..400,
    ) {
        let array = unwritten(builder);
        let parts = array.split_region(&whole, max).unwrap();
        let whole_chunks = array.split_region_whole_chunks(&whole, max).unwrap();
        if whole.is_empty() {
            prop_assert!(parts.is_empty());
            prop_assert!(whole_chunks.is_empty());
        } else {
            check_split(&array, &whole, &parts, max, Unit::InnerChunks);
            check_split(&array, &whole, &whole_chunks, max, Unit::Shards);
        }
        if array.inner_chunk_shape().is_none() {
            prop_assert_eq!(&whole_chunks, &parts);
        }
        // Greedy: two slabs one after the other along the first dimension, alike in the
        // others, would not have fitted as one; unless they lie in different shards and one
        // of them is a piece of a shard cut along its inner chunks (then they may not be
        // one part, which would cross a shard it cuts).
        if let [first, second, ..] = parts.as_slice()
            && count(first) <= max.max(1)
            && first.rank() > 0
        {
            let (a, b) = (first.ranges(), second.ranges());
            let shard = |p: &Region| chunk_of(&array, &p.starts(), Unit::Shards);
            let cut = |p: &Region| {
                let whole_shard = array
                    .chunk_grid()
                    .chunk_region(array.shape(), &shard(p))
                    .unwrap();
                let clipped: Vec<Range<u64>> = whole_shard
                    .ranges()
                    .iter()
                    .zip(whole.ranges())
                    .map(|(s, w)| s.start.max(w.start)..s.end.min(w.end))
                    .collect();
                in_one_chunk(&array, p, Unit::Shards) && p.ranges() != clipped.as_slice()
            };
            let apart = shard(first) != shard(second) && (cut(first) || cut(second));
            if a[1..] == b[1..] && a[0].end == b[0].start && !apart {
                prop_assert!(count(first) + count(second) > max.max(1));
            }
        }
    }
}

fn values(n: u64) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect()
}

fn expected(all: &[u32], width: u64, part: &Region) -> Vec<u32> {
    let r = part.ranges();
    r[0].clone()
        .flat_map(|y| r[1].clone().map(move |x| all[(y * width + x) as usize]))
        .collect()
}

async fn written(store: Arc<MemoryStore>) -> Array<MemoryStore> {
    let array = ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![8, 10])
        .zstd(1)
        .create(store, "/p")
        .await
        .unwrap();
    array.write(.., &values(1200)).await.unwrap();
    array
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_yields_every_part_in_order() {
    let array = written(Arc::new(MemoryStore::new())).await;
    let all = values(1200);
    let parts = array.split_region([3..37, 5..30], 100).unwrap();
    for ahead in [0, 1, 3, 100] {
        let read: Vec<(Region, Vec<u32>)> = array
            .read_parts::<u32>(parts.clone(), ahead)
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(read.len(), parts.len());
        for ((got, values), part) in read.iter().zip(&parts) {
            assert_eq!(got, part);
            assert_eq!(values, &expected(&all, 30, part), "{part}");
        }
    }
    // Refused at once: another element type, a part outside the array.
    assert!(matches!(
        array.read_parts::<u16>(parts.clone(), 2).err(),
        Some(Error::ElementType { .. })
    ));
    assert!(
        array
            .read_parts::<u32>([region(&[0..41, 0..1])], 2)
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_chunk_fails_its_part_only() {
    let store = Arc::new(MemoryStore::new());
    let array = written(Arc::clone(&store)).await;
    store
        .set(&StoreKey::new("p/c/1/0"), Bytes::from_static(b"not zstd"))
        .await
        .unwrap();
    // One row of chunks per part: the second part holds the bad chunk.
    let parts = array.split_region(.., 240).unwrap();
    assert_eq!(parts.len(), 5);
    let read: Vec<_> = array
        .read_parts::<u32>(parts, 2)
        .unwrap()
        .collect::<Vec<_>>()
        .await;
    let failed: Vec<usize> = (0..5).filter(|&i| read[i].is_err()).collect();
    assert_eq!(failed, [1]);
    let error = read[1].as_ref().unwrap_err().to_string();
    assert!(error.contains("p/c/1/0"), "{error}");
}

#[test]
fn the_blocking_iterator_yields_every_part_in_order() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let array = blocking::Array::from(runtime.block_on(written(Arc::new(MemoryStore::new()))));
    let all = values(1200);
    let parts = array.split_region(.., 150).unwrap();
    for ahead in [0, 1, 4] {
        let iter = array.read_parts::<u32>(parts.clone(), ahead).unwrap();
        assert_eq!(iter.len(), parts.len());
        let read: Vec<(Region, Vec<u32>)> = iter.collect::<Result<_, _>>().unwrap();
        assert_eq!(read.len(), parts.len());
        for ((got, values), part) in read.iter().zip(&parts) {
            assert_eq!(got, part);
            assert_eq!(values, &expected(&all, 30, part), "{part}");
        }
    }
    // Stopping early is fine.
    let mut iter = array.read_parts::<u32>(parts.clone(), 3).unwrap();
    assert!(iter.next().unwrap().is_ok());
    assert_eq!(iter.len(), parts.len() - 1);
    drop(iter);
    assert!(matches!(
        array.read_parts::<i32>(parts.clone(), 2).err(),
        Some(Error::ElementType { .. })
    ));
    // Inside an async runtime: refused.
    let err = runtime.block_on(async { array.read_parts::<u32>(parts.clone(), 2).err() });
    assert!(matches!(err, Some(Error::BlockingInAsync)), "{err:?}");
}

/// Counts the chunk `get`s started.
#[derive(Debug)]
struct Counting {
    inner: MemoryStore,
    gets: AtomicUsize,
}

#[async_trait]
impl ReadableStore for Counting {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        if key.as_str().contains("/c/") {
            self.gets.fetch_add(1, Ordering::SeqCst);
        }
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

/// Wait up to 10 s for `gets` to reach `n`.
fn wait_for(gets: &AtomicUsize, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    while gets.load(Ordering::SeqCst) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    gets.load(Ordering::SeqCst)
}

#[test]
fn the_iterator_reads_ahead_while_the_caller_works_and_no_further() {
    let inner = MemoryStore::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(written(Arc::new(inner.clone())));
    let store = Arc::new(Counting {
        inner,
        gets: AtomicUsize::new(0),
    });
    let array = blocking::Array::open(Arc::clone(&store), "/p").unwrap();
    // One chunk per part: 15 parts.
    let parts = array.split_region(.., 80).unwrap();
    assert_eq!(parts.len(), 15);
    let mut iter = array.read_parts::<u32>(parts, 3).unwrap();
    iter.next().unwrap().unwrap();
    // While the caller holds the first part, the next three are read.
    assert_eq!(wait_for(&store.gets, 4), 4);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        store.gets.load(Ordering::SeqCst),
        4,
        "read further ahead than 3"
    );
    iter.next().unwrap().unwrap();
    assert_eq!(wait_for(&store.gets, 5), 5);
    assert_eq!(iter.count(), 13);
    assert_eq!(store.gets.load(Ordering::SeqCst), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_of_parts_is_written_whole() {
    let all = values(1200);
    for (ahead, sharded) in [(0, false), (1, true), (3, false), (100, true)] {
        let builder = ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![8, 10]).zstd(1);
        let builder = if sharded {
            builder.sharding(vec![4, 5])
        } else {
            builder
        };
        let array = builder
            .create(Arc::new(MemoryStore::new()), "/w")
            .await
            .unwrap();
        let parts = array
            .split_region_whole_chunks([3..37, 5..30], 100)
            .unwrap();
        assert!(parts.len() > 4, "{parts:?}");
        let stream = futures::stream::iter(parts).map(|part| {
            let values = expected(&all, 30, &part);
            (part, values)
        });
        array.write_parts::<u32, _, _>(stream, ahead).await.unwrap();
        let read = array.read::<u32>(..).await.unwrap();
        for (i, (&got, &want)) in read.iter().zip(&all).enumerate() {
            let (y, x) = (i as u64 / 30, i as u64 % 30);
            let inside = (3..37).contains(&y) && (5..30).contains(&x);
            assert_eq!(got, if inside { want } else { 0 }, "element [{y}, {x}]");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_part_stops_the_stream_of_writes() {
    let array = written(Arc::new(MemoryStore::new())).await;
    // Another element type: refused before any part is taken.
    let taken = AtomicUsize::new(0);
    let parts =
        futures::stream::iter(array.split_region_whole_chunks(.., 240).unwrap()).map(|part| {
            taken.fetch_add(1, Ordering::SeqCst);
            let n = count(&part) as usize;
            (part, vec![1u16; n])
        });
    let err = array.write_parts(parts, 2).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err}");
    assert_eq!(taken.load(Ordering::SeqCst), 0);
    // A part of the wrong length fails, and no part after it is taken.
    let parts = array.split_region_whole_chunks(.., 240).unwrap();
    assert_eq!(parts.len(), 5);
    let parts = futures::stream::iter(parts).enumerate().map(|(i, part)| {
        taken.fetch_add(1, Ordering::SeqCst);
        let n = count(&part) as usize - usize::from(i == 1);
        (part, vec![7u32; n])
    });
    let err = array.write_parts(parts, 1).await.unwrap_err();
    assert!(matches!(err, Error::BufferSize { .. }), "{err}");
    assert_eq!(taken.load(Ordering::SeqCst), 2);
    // The first part was written, the rest kept its values.
    let read = array.read::<u32>(..).await.unwrap();
    assert!(read[..240].iter().all(|&v| v == 7));
    assert_eq!(read[240..], values(1200)[240..]);
}

/// A store whose chunk `set`s each wait for a permit (the one at `hold` for one of `held`
/// instead), counting those started and finished, and failing the one at `refuse`.
#[derive(Debug)]
struct Gated {
    inner: MemoryStore,
    permits: tokio::sync::Semaphore,
    started: AtomicUsize,
    finished: AtomicUsize,
    refuse: &'static str,
    hold: &'static str,
    held: tokio::sync::Semaphore,
}

impl Gated {
    fn new(refuse: &'static str) -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryStore::new(),
            permits: tokio::sync::Semaphore::new(0),
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            refuse,
            hold: "",
            held: tokio::sync::Semaphore::new(0),
        })
    }

    /// Every chunk `set` goes through at once but the one at `hold`, which waits for `held`.
    fn holding(hold: &'static str) -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryStore::new(),
            permits: tokio::sync::Semaphore::new(1_000),
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            refuse: "",
            hold,
            held: tokio::sync::Semaphore::new(0),
        })
    }
}

#[async_trait]
impl ReadableStore for Gated {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
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

#[async_trait]
impl WritableStore for Gated {
    async fn set(&self, key: &StoreKey, value: Bytes) -> zarr_store::Result<()> {
        if !key.as_str().contains("/c/") {
            return self.inner.set(key, value).await;
        }
        self.started.fetch_add(1, Ordering::SeqCst);
        if key.as_str() == self.hold {
            self.held.acquire().await.unwrap().forget();
        } else {
            self.permits.acquire().await.unwrap().forget();
        }
        let result = if key.as_str() == self.refuse {
            Err(zarr_store::Error::ReadOnly {
                store: "a gated test store".into(),
                operation: "set",
            })
        } else {
            self.inner.set(key, value).await
        };
        self.finished.fetch_add(1, Ordering::SeqCst);
        result
    }

    async fn erase(&self, key: &StoreKey) -> zarr_store::Result<()> {
        self.inner.erase(key).await
    }

    async fn erase_prefix(&self, prefix: &zarr_store::StorePrefix) -> zarr_store::Result<()> {
        self.inner.erase_prefix(prefix).await
    }
}

/// Adds permits enough for every write when dropped.
struct Release<'a>(&'a tokio::sync::Semaphore);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.add_permits(1_000);
    }
}

/// A blocking array of 40 x 30 `u32` in chunks of 8 x 10 on `store`, and its parts of one
/// chunk each with their values.
fn gated_array(store: &Arc<Gated>) -> (blocking::Array<Gated>, Vec<(Region, Vec<u32>)>) {
    let builder = ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![8, 10]);
    let array = blocking::Array::create(&builder, Arc::clone(store), "/g").unwrap();
    let all = values(1200);
    let parts = array.split_region_whole_chunks(.., 80).unwrap();
    assert_eq!(parts.len(), 15);
    let parts = parts
        .into_iter()
        .map(|part| {
            let values = expected(&all, 30, &part);
            (part, values)
        })
        .collect();
    (array, parts)
}

#[test]
fn the_part_writer_keeps_ahead_writes_in_flight_and_no_more() {
    let store = Gated::new("");
    let (array, parts) = gated_array(&store);
    let mut writer = array.part_writer::<u32>(2).unwrap();
    // Should an assertion fail, let the writes finish, for the writer's drop to return.
    let _release = Release(&store.permits);
    let mut parts = parts.into_iter();
    for (region, values) in parts.by_ref().take(2) {
        writer.write(region, values).unwrap();
    }
    assert_eq!(wait_for(&store.started, 2), 2);
    assert_eq!(writer.in_flight(), 2);
    // A third part waits for room: it returns once a write finishes.
    let returned = std::sync::atomic::AtomicBool::new(false);
    let third = parts.next().unwrap();
    std::thread::scope(|scope| {
        let writing = scope.spawn(|| {
            writer.write(third.0, third.1).unwrap();
            returned.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!returned.load(Ordering::SeqCst), "did not wait for room");
        assert_eq!(store.started.load(Ordering::SeqCst), 2);
        // One write finishing (whichever takes the permit) makes room.
        store.permits.add_permits(1);
        writing.join().unwrap();
    });
    assert!(returned.load(Ordering::SeqCst));
    assert_eq!(wait_for(&store.started, 3), 3);
    store.permits.add_permits(1_000);
    for (region, values) in parts {
        writer.write(region, values).unwrap();
    }
    writer.finish().unwrap();
    assert_eq!(store.finished.load(Ordering::SeqCst), 15);
    assert_eq!(array.read::<u32>(..).unwrap(), values(1200));
}

#[test]
fn the_part_writer_waits_for_any_write_not_the_oldest() {
    // The first part's chunk is held; the parts after it go through at once.
    let store = Gated::holding("g/c/0/0");
    let (array, parts) = gated_array(&store);
    let mut writer = array.part_writer::<u32>(2).unwrap();
    let returned = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        // Should an assertion fail, let the held write finish, for the thread to end.
        let _release = Release(&store.held);
        let writing = scope.spawn(|| {
            for (region, values) in parts {
                writer.write(region, values).unwrap();
                returned.fetch_add(1, Ordering::SeqCst);
            }
            writer
        });
        // Every part but the held one is written while it waits: 14 finished, with the
        // held one and the last part in flight.
        assert_eq!(
            wait_for(&store.finished, 14),
            14,
            "held up by the oldest write"
        );
        assert_eq!(wait_for(&returned, 15), 15);
        store.held.add_permits(1);
        writing.join().unwrap().finish().unwrap();
    });
    assert_eq!(store.finished.load(Ordering::SeqCst), 15);
    assert_eq!(array.read::<u32>(..).unwrap(), values(1200));
}

#[test]
fn the_part_writer_reports_errors_and_waits_when_dropped() {
    // A failed write is reported by a later call, once.
    let store = Gated::new("g/c/1/0");
    store.permits.add_permits(1_000);
    let (array, parts) = gated_array(&store);
    let mut writer = array.part_writer::<u32>(1).unwrap();
    let mut results = Vec::new();
    for (region, vals) in parts.iter().cloned() {
        results.push(writer.write(region, vals).is_ok());
    }
    let finished = writer.finish();
    // Part 3 is chunk [1, 0]; with one write in flight, the next call after it reports it.
    let failed: Vec<usize> = (0..15).filter(|&i| !results[i]).collect();
    assert_eq!(failed, [4]);
    assert!(finished.is_ok());
    // Errors that the caller can see at once leave the part unwritten.
    let mut writer = array.part_writer::<u32>(3).unwrap();
    let (region, vals) = parts[0].clone();
    let err = writer
        .write(region.clone(), vals[1..].to_vec())
        .unwrap_err();
    assert!(matches!(err, Error::BufferSize { .. }), "{err}");
    let err = writer.write([0..41, 0..1], vec![0; 41]).unwrap_err();
    assert!(
        matches!(err, Error::Region { .. } | Error::Core(_)),
        "{err}"
    );
    assert_eq!(writer.in_flight(), 0);
    // The last error comes from `finish`.
    let (region, vals) = parts[3].clone();
    writer.write(region, vals).unwrap();
    assert!(
        writer
            .finish()
            .unwrap_err()
            .to_string()
            .contains("read-only")
    );
    assert!(matches!(
        array.part_writer::<i32>(1).err(),
        Some(Error::ElementType { .. })
    ));

    // Dropping the writer waits for the writes in flight.
    let store = Gated::new("");
    let (array, parts) = gated_array(&store);
    let mut writer = array.part_writer::<u32>(20).unwrap();
    for (region, vals) in parts {
        writer.write(region, vals).unwrap();
    }
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            store.permits.add_permits(1_000);
        });
        drop(writer);
        assert_eq!(store.finished.load(Ordering::SeqCst), 15);
    });
    assert_eq!(array.read::<u32>(..).unwrap(), values(1200));

    // Inside an async runtime: refused.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = runtime.block_on(async { array.part_writer::<u32>(2).err() });
    assert!(matches!(err, Some(Error::BlockingInAsync)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_store_each_chunk_of_the_destination_once() {
    use zarr_store::{Operation, RecordingStore};
    let source = written(Arc::new(MemoryStore::new())).await;
    let all = values(1200);
    let layouts = [
        // Other chunks; shards of inner chunks; a rectilinear grid, another fill value.
        ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![5, 7]).gzip(1),
        ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![20, 30]).sharding(vec![4, 6]),
        ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![1, 1])
            .chunk_grid(
                ChunkGrid::rectilinear(vec![
                    DimensionChunks::from_edges([3, 17, 20]),
                    DimensionChunks::Regular(11),
                ])
                .unwrap(),
            )
            .fill_value(7.into()),
    ];
    for (n, builder) in layouts.into_iter().enumerate() {
        let store = Arc::new(RecordingStore::new(MemoryStore::new()));
        let dest = builder.create(Arc::clone(&store), "/d").await.unwrap();
        store.clear();
        for max in [1, 150, 100_000] {
            source.copy_to(&dest, max).await.unwrap();
            // Each chunk stored once, nothing read back.
            let mut sets: Vec<String> = Vec::new();
            for op in store.operations() {
                match op {
                    Operation::Set { key, .. } => sets.push(key.as_str().to_owned()),
                    Operation::Get { .. } | Operation::GetPartialValues { .. } => {
                        panic!("layout {n}, max {max}: a read of the destination: {op:?}")
                    }
                    _ => {}
                }
            }
            let count = sets.len();
            sets.sort();
            sets.dedup();
            assert_eq!(
                sets.len(),
                count,
                "layout {n}, max {max}: a chunk stored twice"
            );
            assert_eq!(
                count as u64,
                dest.grid_shape().unwrap().iter().product::<u64>()
            );
            assert_eq!(
                dest.read::<u32>(..).await.unwrap(),
                all,
                "layout {n}, max {max}"
            );
            store.clear();
        }
    }
    // Into shards larger than a part: parts of inner chunk rows (a source chunk row of 10
    // read by several), each shard still stored once.
    let recorded = Arc::new(RecordingStore::new(MemoryStore::new()));
    let rows = ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![10, 30])
        .create(Arc::clone(&recorded), "/rows")
        .await
        .unwrap();
    rows.write(.., &all).await.unwrap();
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let dest = ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![20, 30])
        .sharding(vec![2, 30])
        .create(Arc::clone(&store), "/d")
        .await
        .unwrap();
    recorded.clear();
    store.clear();
    rows.copy_to(&dest, 60).await.unwrap();
    assert_eq!(recorded.stats().gets, 20, "a part per inner chunk row");
    let stats = store.stats();
    assert_eq!(
        (stats.sets, stats.gets + stats.partial_reads),
        (2, 0),
        "{stats:?}"
    );
    assert_eq!(dest.read::<u32>(..).await.unwrap(), all);
    // Strings too, in both APIs.
    let store = Arc::new(MemoryStore::new());
    let words: Vec<String> = (0..50)
        .map(|i| "w".repeat(i % 7) + &i.to_string())
        .collect();
    let text = ArrayBuilder::new(vec![50], DataType::String, vec![6])
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    text.write_text(.., &words).await.unwrap();
    let copy = ArrayBuilder::new(vec![50], DataType::String, vec![20])
        .zstd(1)
        .create(Arc::clone(&store), "/s2")
        .await
        .unwrap();
    text.copy_to(&copy, 10).await.unwrap();
    assert_eq!(copy.read_text(..).await.unwrap(), words);
    // Another shape or data type: refused before anything is read.
    let other = ArrayBuilder::new(vec![40, 31], DataType::UInt32, vec![8, 10])
        .create(Arc::clone(&store), "/o")
        .await
        .unwrap();
    let err = source.copy_to(&other, 100).await.unwrap_err();
    assert!(err.to_string().contains("shapes differ"), "{err}");
    let other = ArrayBuilder::new(vec![40, 30], DataType::Int32, vec![8, 10])
        .overwrite(true)
        .create(Arc::clone(&store), "/o")
        .await
        .unwrap();
    let err = source.copy_to(&other, 100).await.unwrap_err();
    assert!(err.to_string().contains("data types differ"), "{err}");
}

#[test]
fn the_blocking_copy_copies() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store = Arc::new(MemoryStore::new());
    let source = blocking::Array::from(runtime.block_on(written(Arc::clone(&store))));
    let builder =
        ArrayBuilder::like(source.as_async()).chunk_grid(ChunkGrid::regular(vec![3, 30]).unwrap());
    let dest = blocking::Array::create(&builder, store, "/copy").unwrap();
    source.copy_to(&dest, 500).unwrap();
    assert_eq!(dest.read::<u32>(..).unwrap(), values(1200));
}
