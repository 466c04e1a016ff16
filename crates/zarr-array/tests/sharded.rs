//! Sharded arrays through `Array`: values, request counts of reads and writes, empty shards,
//! and concurrent writers to one shard.

use std::sync::Arc;

use zarr_array::{Array, ArrayBuilder};
use zarr_core::DataType;
use zarr_store::{MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};

fn values(n: usize) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect()
}

/// Reads of part of a shard cost two requests; whole shards one; values match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_reads_cost_at_most_two_requests_per_shard() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![64, 64], DataType::UInt32, vec![32, 32])
        .sharding(vec![8, 8])
        .zstd(1)
        .crc32c()
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    let all = values(64 * 64);
    store.clear();
    array.write([0..64, 0..64], &all).await.unwrap();
    assert_eq!(
        store.stats().gets,
        0,
        "whole shards are written without reading"
    );

    store.clear();
    let part: Vec<u32> = array.read([3..12, 5..7]).await.unwrap();
    let expected: Vec<u32> = (3..12)
        .flat_map(|y| (5..7).map(move |x| y * 64 + x))
        .map(|i| all[i as usize])
        .collect();
    assert_eq!(part, expected);
    let stats = store.stats();
    assert!(
        stats.gets + stats.partial_reads + stats.sizes <= 2,
        "one shard, read in part: {stats:?}"
    );

    store.clear();
    let back: Vec<u32> = array.read(array.full_region()).await.unwrap();
    assert_eq!(back, all);
    let stats = store.stats();
    assert_eq!(
        stats.calls(),
        4,
        "four whole shards, one get each: {stats:?}"
    );

    // A region across four shards: at most two requests each.
    store.clear();
    let part: Vec<u32> = array.read([30..34, 30..34]).await.unwrap();
    assert_eq!(part[0], all[30 * 64 + 30]);
    assert!(store.stats().calls() <= 8, "{:?}", store.stats());
}

/// A partial write reads the shard once and writes it once; empty shards are not stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_writes_read_once_write_once_and_drop_empty_shards() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![20], DataType::UInt32, vec![8])
        .sharding(vec![2])
        .create(Arc::clone(&store), "/w")
        .await
        .unwrap();
    array.write(0..20, &values(20)).await.unwrap();
    store.clear();
    array.write(3..5, &[1u32, 2]).await.unwrap();
    let stats = store.stats();
    assert_eq!((stats.gets, stats.sets), (1, 1), "{stats:?}");
    let back: Vec<u32> = array.read(0..8).await.unwrap();
    let mut expected = values(8);
    expected[3] = 1;
    expected[4] = 2;
    assert_eq!(back, expected);

    // Writing the fill value over a whole shard erases it; over part of one, the emptied
    // inner chunks are marked empty.
    array.write(8..16, &[0u32; 8]).await.unwrap();
    assert!(!array.chunk_exists(&[1]).await.unwrap());
    array.write(0..8, &[0u32; 8]).await.unwrap();
    assert!(!array.chunk_exists(&[0]).await.unwrap());
    // The edge shard (elements 16..20 of a shard of 8) round-trips.
    let edge: Vec<u32> = array.read(16..20).await.unwrap();
    assert_eq!(edge, values(20)[16..20]);
}

/// Shrinking a sharded array rewrites each shard on the new edge once, re-encoding only the
/// inner chunks the edge cuts through: inner chunks wholly inside are kept byte for byte (a
/// corrupt one does not fail the resize), those wholly outside are dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shrinking_re_encodes_only_the_inner_chunks_the_new_edge_cuts() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let mut array = ArrayBuilder::new(vec![64, 64], DataType::UInt32, vec![32, 32])
        .sharding(vec![8, 8])
        .zstd(1)
        .crc32c()
        .create(Arc::clone(&store), "/r")
        .await
        .unwrap();
    let all = values(64 * 64);
    array.write([0..64, 0..64], &all).await.unwrap();
    // Damage inner chunk (0, 0) of shard (0, 0): written first, it starts at byte 0.
    let key = StoreKey::new("r/c/0/0");
    let mut shard = store.get(&key).await.unwrap().unwrap().to_vec();
    shard[12] ^= 0xff;
    store.set(&key, shard.clone().into()).await.unwrap();

    store.clear();
    array.resize(vec![20, 64]).await.unwrap();
    let stats = store.stats();
    assert_eq!(
        stats.gets, 4,
        "the array's zarr.json (another handle may have changed it), the two shards on the \
         edge, once each, and the root's zarr.json (which could hold a consolidated record \
         listing the array): {stats:?}"
    );
    assert_eq!(stats.sets, 3, "those two shards and zarr.json: {stats:?}");
    let kept = store.get(&key).await.unwrap().unwrap();
    assert_eq!(
        kept[..64],
        shard[..64],
        "the damaged inner chunk keeps its bytes"
    );
    for gone in ["r/c/1/0", "r/c/1/1"] {
        assert!(
            store.get(&StoreKey::new(gone)).await.unwrap().is_none(),
            "{gone}"
        );
    }

    // Grown again, the rows cut off read as the fill value; the damage is still reported.
    array.resize(vec![64, 64]).await.unwrap();
    let back: Vec<u32> = array.read([8..64, 0..64]).await.unwrap();
    let expected: Vec<u32> = (8..64u64)
        .flat_map(|y| (0..64u64).map(move |x| (y, x)))
        .map(|(y, x)| {
            if y < 20 {
                all[(y * 64 + x) as usize]
            } else {
                0
            }
        })
        .collect();
    assert_eq!(back, expected);
    let left: Vec<u32> = array.read([0..8, 8..64]).await.unwrap();
    assert_eq!(left[..56], all[8..64]);
    let err = array.read::<u32>([0..8, 0..8]).await.unwrap_err();
    assert!(err.to_string().contains("r/c/0/0"), "{err}");
}

/// Writers updating different inner chunks of one shard at the same time lose nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_to_one_shard_lose_nothing() {
    let builder = ArrayBuilder::new(vec![64], DataType::UInt32, vec![64])
        .sharding(vec![4])
        .zstd(1);
    concurrent_writers_lose_nothing(builder).await;
}

/// 16 writers, half of them through their own handle of the array, each write 3 of the 4
/// elements of a different 4-element chunk of a 64-element array; nothing is lost.
async fn concurrent_writers_lose_nothing(builder: ArrayBuilder) {
    let store = Arc::new(MemoryStore::new());
    let array = builder.create(Arc::clone(&store), "/c").await.unwrap();
    let tasks: Vec<_> = (0..16u32)
        .map(|i| {
            let array = array.clone();
            // A separately opened handle must be serialised too.
            let other = Arc::clone(&store);
            tokio::spawn(async move {
                let start = u64::from(i) * 4;
                if i % 2 == 0 {
                    array.write(start..start + 3, &[i + 1; 3]).await.unwrap();
                } else {
                    let again = Array::open(other, "/c").await.unwrap();
                    again.write(start..start + 3, &[i + 1; 3]).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let back: Vec<u32> = array.read(0..64).await.unwrap();
    for i in 0..16u32 {
        let s = (i * 4) as usize;
        assert_eq!(back[s..s + 4], [i + 1, i + 1, i + 1, 0], "chunk {i}");
    }
}

/// A corrupt shard index is an error naming the array and shard key; other shards read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_shard_index_is_an_error_naming_the_shard() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![16], DataType::UInt32, vec![8])
        .sharding(vec![4])
        .create(Arc::clone(&store), "/x")
        .await
        .unwrap();
    array.write(0..16, &values(16)).await.unwrap();
    let key = StoreKey::new("x/c/0");
    let good = zarr_store::ReadableStore::get(&*store, &key)
        .await
        .unwrap()
        .unwrap();
    let mut bad = good.to_vec();
    let n = bad.len();
    bad[n - 10] ^= 0x40; // inside the index: crc32c fails
    store.set(&key, bad.into()).await.unwrap();
    for region in [0..8, 1..3] {
        let err = array.read::<u32>(region).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/x") && text.contains("x/c/0"), "{text}");
    }
    let rest: Vec<u32> = array.read(8..16).await.unwrap();
    assert_eq!(rest, values(16)[8..16]);
}

/// An array whose metadata names the sharding storage transformer (the seed's design) reads
/// through it: chunks live in shards of `chunks_per_shard` chunks; writes go through it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_naming_the_storage_transformer_read_through_it() {
    use zarr_core::{ChunkKeyEncoding, ExtensionObject, NodeMetadata};
    use zarr_sharding::ShardingTransformer;
    use zarr_store::{ListableStore, ReadableStore, StorePrefix};

    // The same array, written plainly.
    let plain = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![10, 6], DataType::UInt32, vec![2, 3])
        .zstd(1)
        .create(Arc::clone(&plain), "/t")
        .await
        .unwrap();
    let all = values(60);
    array.write([0..10, 0..6], &all).await.unwrap();

    // Copy its chunks through a transformer of 2x2 chunks per shard, and its metadata with
    // the transformer named.
    let sharded = Arc::new(MemoryStore::new());
    let transformer = ShardingTransformer::new(
        Arc::clone(&sharded),
        StorePrefix::new("t/"),
        vec![2, 2],
        ChunkKeyEncoding::default(),
    )
    .unwrap();
    for key in plain.list_prefix(&StorePrefix::new("t/c/")).await.unwrap() {
        let value = plain.get(&key).await.unwrap().unwrap();
        transformer.set(&key, value).await.unwrap();
    }
    let meta = array.metadata().clone().with_storage_transformers(vec![
        ExtensionObject::with_configuration(
            "sharding",
            serde_json::json!({"chunks_per_shard": [2, 2]})
                .as_object()
                .unwrap()
                .clone(),
        ),
    ]);
    let text = NodeMetadata::Array(Box::new(meta))
        .to_json_pretty()
        .unwrap();
    sharded
        .set(&StoreKey::new("t/zarr.json"), text.into_bytes().into())
        .await
        .unwrap();
    // 5x2 chunks in shards of 2x2 chunks: 3x1 shard objects.
    let shards = sharded
        .list_prefix(&StorePrefix::new("t/c/"))
        .await
        .unwrap();
    assert_eq!(shards.len(), 3, "{shards:?}");

    let opened = Array::open(Arc::clone(&sharded), "/t").await.unwrap();
    assert!(opened.uses_storage_transformer());
    let back: Vec<u32> = opened.read(opened.full_region()).await.unwrap();
    assert_eq!(back, all);
    let part: Vec<u32> = opened.read([3..9, 2..5]).await.unwrap();
    let expected: Vec<u32> = (3..9)
        .flat_map(|y| (2..5).map(move |x| y * 6 + x))
        .map(|i| all[i as usize])
        .collect();
    assert_eq!(part, expected);
    opened.write([0..1, 0..1], &[1u32]).await.unwrap();
    let mut expected = all.clone();
    expected[0] = 1;
    let back: Vec<u32> = opened.read(opened.full_region()).await.unwrap();
    assert_eq!(back, expected);
    assert_eq!(
        sharded
            .list_prefix(&StorePrefix::new("t/c/"))
            .await
            .unwrap()
            .len(),
        3
    );
}

/// Through the transformer, a write stores each shard once (no read when the write covers
/// every chunk of it), a partial write reads only the shard it changes, reads of part of a
/// shard cost two requests, and all-fill writes erase chunks, then whole shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_the_storage_transformer() {
    use zarr_store::{ListableStore, StorePrefix};

    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    // 12x10 chunks of 4x4 in shards of 4x5 chunks: 3x2 shards.
    let array = ArrayBuilder::new(vec![48, 40], DataType::UInt32, vec![4, 4])
        .sharding_transformer(vec![4, 5])
        .zstd(1)
        .create(Arc::clone(&store), "/t")
        .await
        .unwrap();
    assert!(array.uses_storage_transformer());
    let all = values(48 * 40);
    store.clear();
    array.write([0..48, 0..40], &all).await.unwrap();
    let stats = store.stats();
    assert_eq!(
        (stats.gets, stats.partial_reads, stats.sets),
        (0, 0, 6),
        "one write per shard, no reads: {stats:?}"
    );
    let shards = store.list_prefix(&StorePrefix::new("t/c/")).await.unwrap();
    assert_eq!(shards.len(), 6, "{shards:?}");

    let reopened = Array::open(Arc::clone(&store), "/t").await.unwrap();
    assert!(reopened.uses_storage_transformer());
    store.clear();
    let part: Vec<u32> = reopened.read([5..7, 21..23]).await.unwrap();
    let at = |y: usize, x: usize| all[y * 40 + x];
    assert_eq!(part, [at(5, 21), at(5, 22), at(6, 21), at(6, 22)]);
    let stats = store.stats();
    assert!(stats.calls() <= 2, "index, then the chunk: {stats:?}");

    // A region across four shards (chunk rows 3-4 and columns 4-5, either side of both
    // shard boundaries), covering each chunk in part.
    store.clear();
    let patch: Vec<u32> = (0..6 * 3).map(|i| 7_000_000 + i).collect();
    reopened.write([14..20, 19..22], &patch).await.unwrap();
    let stats = store.stats();
    assert_eq!(stats.sets, 4, "each touched shard written once: {stats:?}");
    assert!(
        stats.gets + stats.partial_reads <= 3,
        "indexes, chunks, then the shards to rebuild, each in one request: {stats:?}"
    );
    let mut expected = all.clone();
    for (i, y) in (14..20).enumerate() {
        for (j, x) in (19..22).enumerate() {
            expected[y * 40 + x] = patch[i * 3 + j];
        }
    }
    let back: Vec<u32> = array.read(array.full_region()).await.unwrap();
    assert_eq!(back, expected);

    // The fill value over one chunk removes it from its shard; over a whole shard, the shard.
    array.write([0..4, 0..4], &[0u32; 16]).await.unwrap();
    assert!(!array.chunk_exists(&[0, 0]).await.unwrap());
    assert!(array.chunk_exists(&[0, 1]).await.unwrap());
    array
        .write([16..32, 0..20], &vec![0u32; 16 * 20])
        .await
        .unwrap();
    let shards = store.list_prefix(&StorePrefix::new("t/c/")).await.unwrap();
    assert_eq!(shards.len(), 5, "{shards:?}");
    assert!(
        !shards.iter().any(|k| k.as_str() == "t/c/1/0"),
        "{shards:?}"
    );

    // Single-chunk operations and resize go through the transformer too.
    array.erase_chunk(&[0, 1]).await.unwrap();
    assert!(!array.chunk_exists(&[0, 1]).await.unwrap());
    let mut array = array;
    array.resize(vec![10, 40]).await.unwrap();
    let shards = store.list_prefix(&StorePrefix::new("t/c/")).await.unwrap();
    assert_eq!(
        shards.len(),
        2,
        "only the first row of shards is left: {shards:?}"
    );
    array.resize(vec![48, 40]).await.unwrap();
    let back: Vec<u32> = array.read([8..16, 36..40]).await.unwrap();
    let expected: Vec<u32> = (8..16)
        .flat_map(|y| (36..40).map(move |x| (y, x)))
        .map(|(y, x)| if y < 10 { at(y, x) } else { 0 })
        .collect();
    assert_eq!(back, expected);
}

/// A region read through the transformer fetches the chunks of each shard together: two
/// requests per shard (every index, then every chunk range), not two per chunk, on either
/// runtime flavour and for strings too. A decode budget below one chunk reads each alone.
#[test]
fn region_reads_through_the_transformer_cost_two_requests_per_shard() {
    for flavour in ["current_thread", "multi_thread"] {
        let runtime = match flavour {
            "current_thread" => tokio::runtime::Builder::new_current_thread().build(),
            _ => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build(),
        }
        .unwrap();
        runtime.block_on(async {
            for budget in [None, Some(1)] {
                let mut options = zarr_array::ArrayOptions::default();
                if let Some(budget) = budget {
                    options = options.with_decode_budget(budget);
                }
                let store = Arc::new(RecordingStore::new(MemoryStore::new()));
                // 4x4 chunks of 4x4 in shards of 2x2 chunks: 2x2 shards.
                let array = ArrayBuilder::new(vec![16, 16], DataType::UInt32, vec![4, 4])
                    .sharding_transformer(vec![2, 2])
                    .zstd(1)
                    .options(options.clone())
                    .create(Arc::clone(&store), "/t")
                    .await
                    .unwrap();
                let all = values(16 * 16);
                array.write(.., &all).await.unwrap();
                let context = format!("{flavour}, budget {budget:?}");
                // Each chunk of one shard, in part: 4 chunks.
                store.clear();
                let part: Vec<u32> = array.read([1..7, 2..8]).await.unwrap();
                let expected: Vec<u32> = (1..7)
                    .flat_map(|y| (2..8).map(move |x| (y, x)))
                    .map(|(y, x)| all[y * 16 + x])
                    .collect();
                assert_eq!(part, expected, "{context}");
                let calls = store.stats().calls();
                assert_eq!(calls, if budget.is_none() { 2 } else { 8 }, "{context}");
                // The whole array: 16 chunks in 4 shards.
                store.clear();
                assert_eq!(array.read::<u32>(..).await.unwrap(), all, "{context}");
                let calls = store.stats().calls();
                assert_eq!(calls, if budget.is_none() { 8 } else { 32 }, "{context}");

                // Strings (zstd-compressed chunks, so read whole).
                let text = ArrayBuilder::new(vec![16, 16], DataType::String, vec![4, 4])
                    .sharding_transformer(vec![2, 2])
                    .zstd(1)
                    .options(options)
                    .create(Arc::clone(&store), "/s")
                    .await
                    .unwrap();
                let words: Vec<String> = (0..256).map(|i| format!("w{i}")).collect();
                text.write_text(.., &words).await.unwrap();
                // Chunk (0, 0) goes: all fill, erased from its shard.
                text.write_text([0..4, 0..4], &vec![String::new(); 16])
                    .await
                    .unwrap();
                store.clear();
                let read = text.read_text([0..8, 0..8]).await.unwrap();
                let expected: Vec<String> = (0..8usize)
                    .flat_map(|y| (0..8usize).map(move |x| (y, x)))
                    .map(|(y, x)| {
                        if y < 4 && x < 4 {
                            String::new()
                        } else {
                            words[y * 16 + x].clone()
                        }
                    })
                    .collect();
                assert_eq!(read, expected, "{context}");
                // Alone, the erased chunk costs only its index read.
                let calls = store.stats().calls();
                assert_eq!(calls, if budget.is_none() { 2 } else { 7 }, "{context}");
            }
        });
    }
}

/// The same data written through the transformer and through the `sharding_indexed` codec
/// with a plain little-endian index at the end gives byte-identical shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transformer_and_codec_write_identical_shards() {
    use zarr_core::ExtensionObject;
    use zarr_store::{ListableStore, ReadableStore, StorePrefix};

    let a = Arc::new(MemoryStore::new());
    let b = Arc::new(MemoryStore::new());
    let through_transformer = ArrayBuilder::new(vec![12, 9], DataType::UInt32, vec![2, 3])
        .sharding_transformer(vec![3, 3])
        .gzip(5)
        .create(Arc::clone(&a), "/x")
        .await
        .unwrap();
    let codec = ExtensionObject::from_json(
        &serde_json::json!({
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": [2, 3],
                "codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "gzip", "configuration": {"level": 5}}
                ],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_location": "end"
            }
        }),
        "codecs[0]",
    )
    .unwrap();
    let through_codec = ArrayBuilder::new(vec![12, 9], DataType::UInt32, vec![6, 9])
        .codecs(vec![codec])
        .create(Arc::clone(&b), "/x")
        .await
        .unwrap();
    // Some chunks left empty: the index marks them alike.
    let mut data = values(12 * 9);
    for v in &mut data[..18] {
        *v = 0;
    }
    through_transformer
        .write([0..12, 0..9], &data)
        .await
        .unwrap();
    through_codec.write([0..12, 0..9], &data).await.unwrap();
    through_transformer
        .write([7..8, 4..5], &[42u32])
        .await
        .unwrap();
    through_codec.write([7..8, 4..5], &[42u32]).await.unwrap();
    let keys_a = a.list_prefix(&StorePrefix::new("x/c/")).await.unwrap();
    let keys_b = b.list_prefix(&StorePrefix::new("x/c/")).await.unwrap();
    assert_eq!(keys_a, keys_b);
    assert_eq!(keys_a.len(), 2);
    for key in keys_a {
        assert_eq!(
            a.get(&key).await.unwrap(),
            b.get(&key).await.unwrap(),
            "{key}"
        );
    }
}

/// Writers to different chunks of one shard through the transformer, from clones and from
/// separately opened handles of one store, lose nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_through_the_transformer_lose_nothing() {
    let builder =
        ArrayBuilder::new(vec![64], DataType::UInt32, vec![4]).sharding_transformer(vec![16]);
    concurrent_writers_lose_nothing(builder).await;
}

/// A transformer whose `chunks_per_shard` has the wrong rank is refused when the array is
/// built or opened.
#[tokio::test]
async fn transformer_of_the_wrong_rank_is_refused() {
    let err = ArrayBuilder::new(vec![8, 8], DataType::UInt8, vec![2, 2])
        .sharding_transformer(vec![2])
        .build_metadata()
        .unwrap_err();
    assert!(err.to_string().contains("chunks_per_shard"), "{err}");
    let err = ArrayBuilder::new(vec![8], DataType::UInt8, vec![2])
        .sharding_transformer(vec![0])
        .build_metadata()
        .unwrap_err();
    assert!(err.to_string().contains("at least 1"), "{err}");
}

/// Hands out a store's answers late: while `hold` is set, each `get_partial_values` reads its
/// answer at once, then waits (yielding first) for a permit of `gate` before returning it,
/// like a slow network. Counts the requests for shard indexes (suffix ranges).
#[derive(Debug)]
struct Late {
    inner: MemoryStore,
    hold: std::sync::atomic::AtomicBool,
    gate: tokio::sync::Semaphore,
    index_requests: std::sync::atomic::AtomicUsize,
}

impl Late {
    fn new() -> Self {
        Self {
            inner: MemoryStore::new(),
            hold: false.into(),
            gate: tokio::sync::Semaphore::new(0),
            index_requests: 0.into(),
        }
    }

    fn release(&self) {
        self.gate
            .add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    }
}

#[async_trait::async_trait]
impl zarr_store::ReadableStore for Late {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<bytes::Bytes>> {
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, zarr_store::ByteRange)],
    ) -> zarr_store::Result<Vec<Option<bytes::Bytes>>> {
        use std::sync::atomic::Ordering;
        let suffixes = key_ranges
            .iter()
            .filter(|(_, r)| matches!(r.form(), zarr_store::ByteRangeForm::Suffix { .. }))
            .count();
        self.index_requests.fetch_add(suffixes, Ordering::SeqCst);
        let answer = self.inner.get_partial_values(key_ranges).await;
        if self.hold.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
            self.gate.acquire().await.unwrap().forget();
        }
        answer
    }
}

/// An array of one shard of 64 inner chunks on a [`Late`] store, and its values.
async fn late_shard() -> (Arc<Late>, Array<Late>, Vec<u32>) {
    let late = Arc::new(Late::new());
    let writer = ArrayBuilder::new(vec![64, 64], DataType::UInt32, vec![64, 64])
        .sharding(vec![8, 8])
        .zstd(1)
        .create(Arc::new(late.inner.clone()), "/l")
        .await
        .unwrap();
    let all = values(64 * 64);
    writer.write([0..64, 0..64], &all).await.unwrap();
    let array = Array::open(Arc::clone(&late), "/l").await.unwrap();
    (late, array, all)
}

fn inner_chunk(all: &[u32], y: u64, x: u64) -> Vec<u32> {
    (y * 8..y * 8 + 8)
        .flat_map(|r| (x * 8..x * 8 + 8).map(move |c| all[(r * 64 + c) as usize]))
        .collect()
}

/// Concurrent reads of one shard share its index fetches: the reads that arrive while one is
/// in flight share one fresh fetch, so 64 reads cost two index requests, not 64.
#[test]
fn concurrent_reads_of_one_shard_share_index_fetches() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let (late, array, all) = late_shard().await;
        late.hold.store(true, std::sync::atomic::Ordering::SeqCst);
        let reads = futures::future::join_all((0..64u64).map(|i| {
            let (y, x) = (i / 8, i % 8);
            array.read::<u32>([y * 8..y * 8 + 8, x * 8..x * 8 + 8])
        }));
        let release = async {
            // Every read has asked for the index by the time this runs again.
            tokio::task::yield_now().await;
            late.release();
        };
        let (reads, ()) = tokio::join!(reads, release);
        for (i, read) in reads.into_iter().enumerate() {
            let (y, x) = (i as u64 / 8, i as u64 % 8);
            assert_eq!(read.unwrap(), inner_chunk(&all, y, x), "inner chunk {i}");
        }
        let requests = late
            .index_requests
            .load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(requests, 2, "index requests for 64 concurrent reads");
    });
}

/// A read never uses an index fetch that started before it: a read that begins after a write
/// completed sees the write, even while an older read of the shard waits for its index.
#[test]
fn a_read_after_a_write_never_gets_an_older_index_in_flight() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let (late, array, _) = late_shard().await;
        late.hold.store(true, std::sync::atomic::Ordering::SeqCst);
        // The first read's index is read now, and answered late.
        let older = array.read::<u32>([0..8, 0..8]);
        let later = async {
            tokio::task::yield_now().await;
            // Rewrite the shard (whole: no reads) through another handle, then read.
            // The first inner chunk becomes constant, so every later one moves in the shard.
            let rewritten: Vec<u32> = (0..64 * 64)
                .zip(values(64 * 64))
                .map(|(i, v)| {
                    if i / 64 < 8 && i % 64 < 8 {
                        7
                    } else {
                        v ^ 0x5a5a_5a5a
                    }
                })
                .collect();
            let writer = Array::open(Arc::new(late.inner.clone()), "/l")
                .await
                .unwrap();
            writer.write([0..64, 0..64], &rewritten).await.unwrap();
            let read = array.read::<u32>([8..16, 0..8]);
            let release = async {
                tokio::task::yield_now().await;
                late.release();
            };
            let (read, ()) = tokio::join!(read, release);
            (read.unwrap(), inner_chunk(&rewritten, 1, 0))
        };
        // The older read raced the write; only the later one has a defined answer.
        let (_older, (read, expected)) = tokio::join!(older, later);
        assert_eq!(read, expected);
    });
}

/// The index requests (suffix ranges) a [`RecordingStore`] saw, then forget them.
fn index_requests(store: &RecordingStore<MemoryStore>) -> usize {
    let n = store
        .operations()
        .iter()
        .map(|op| match op {
            zarr_store::Operation::GetPartialValues { requests, .. } => requests
                .iter()
                .filter(|(_, r)| matches!(r.form(), zarr_store::ByteRangeForm::Suffix { .. }))
                .count(),
            _ => 0,
        })
        .sum();
    store.clear();
    n
}

/// Two 64x64 shards of 8x8 inner chunks side by side (the second not stored until written),
/// read through a recording store with a shard index cache of `cache` bytes.
async fn cached_shards(
    cache: usize,
) -> (
    Arc<RecordingStore<MemoryStore>>,
    Array<RecordingStore<MemoryStore>>,
    Vec<u32>,
) {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let writer = ArrayBuilder::new(vec![64, 128], DataType::UInt32, vec![64, 64])
        .sharding(vec![8, 8])
        .zstd(1)
        .create(Arc::clone(&store), "/k")
        .await
        .unwrap();
    let all = values(64 * 64);
    writer.write([0..64, 0..64], &all).await.unwrap();
    let options = zarr_array::ArrayOptions::default().with_shard_index_cache(cache);
    let array = Array::open_with(Arc::clone(&store), "/k", options)
        .await
        .unwrap();
    store.clear();
    (store, array, all)
}

/// Inner chunk (y, x) of the first shard, read through `array`.
async fn read_inner<S: zarr_store::ReadableStore + 'static>(
    array: &Array<S>,
    y: u64,
    x: u64,
) -> Vec<u32> {
    array
        .read([y * 8..y * 8 + 8, x * 8..x * 8 + 8])
        .await
        .unwrap()
}

/// With the cache, a shard's index (or its absence) is read once across reads and clones;
/// without it, once per read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shard_index_cache_reads_each_index_once() {
    let (store, array, all) = cached_shards(1 << 20).await;
    for i in 0..10 {
        let (y, x) = (i % 8, (i * 3) % 8);
        assert_eq!(read_inner(&array, y, x).await, inner_chunk(&all, y, x));
    }
    assert_eq!(index_requests(&store), 1);
    let clone = array.clone();
    assert_eq!(read_inner(&clone, 7, 7).await, inner_chunk(&all, 7, 7));
    assert_eq!(index_requests(&store), 0, "clones share the cache");
    // A missing shard: read as the fill value, and its absence kept.
    for _ in 0..3 {
        let fill: Vec<u32> = array.read([0..8, 64..72]).await.unwrap();
        assert_eq!(fill, vec![0; 64]);
    }
    assert_eq!(index_requests(&store), 1);

    let (store, uncached, _) = cached_shards(0).await;
    for i in 0..10 {
        read_inner(&uncached, i % 8, 0).await;
    }
    assert_eq!(index_requests(&store), 10);
}

/// Writes through the array (or a clone) empty the cache: later reads see them, even when
/// the shard's layout changed. Writes by another handle are not seen until the cache is
/// cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_the_array_empty_the_shard_index_cache() {
    let (store, array, all) = cached_shards(1 << 20).await;
    assert_eq!(read_inner(&array, 1, 0).await, inner_chunk(&all, 1, 0));
    // Rewrite the shard so that every inner chunk moves (the first becomes constant).
    let moved = |xor: u32| -> Vec<u32> {
        (0..64 * 64)
            .zip(values(64 * 64))
            .map(|(i, v)| if i / 64 < 8 && i % 64 < 8 { 7 } else { v ^ xor })
            .collect()
    };
    let rewritten = moved(0x5a5a_5a5a);
    array
        .clone()
        .write([0..64, 0..64], &rewritten)
        .await
        .unwrap();
    assert_eq!(
        read_inner(&array, 1, 0).await,
        inner_chunk(&rewritten, 1, 0)
    );
    // The missing shard, once kept as missing, is read after a write into it.
    let fill: Vec<u32> = array.read([0..8, 64..72]).await.unwrap();
    assert_eq!(fill, vec![0; 64]);
    array.write([0..8, 64..72], &[9u32; 64]).await.unwrap();
    let written: Vec<u32> = array.read([0..8, 64..72]).await.unwrap();
    assert_eq!(written, vec![9; 64]);
    // Erasing a chunk empties it too.
    array.erase_chunk(&[0, 1]).await.unwrap();
    let erased: Vec<u32> = array.read([0..8, 64..72]).await.unwrap();
    assert_eq!(erased, vec![0; 64]);

    // Another handle's write: the cached index is used as is (no index request) ...
    read_inner(&array, 1, 0).await;
    store.clear();
    let other = Array::open(Arc::clone(&store), "/k").await.unwrap();
    let again = moved(0x0f0f_0f0f);
    other.write([0..64, 0..64], &again).await.unwrap();
    store.clear();
    let _stale = array.read::<u32>([8..16, 0..8]).await;
    assert_eq!(index_requests(&store), 0);
    // ... until the cache is cleared.
    array.clear_shard_index_cache();
    assert_eq!(read_inner(&array, 1, 0).await, inner_chunk(&again, 1, 0));
    assert_eq!(index_requests(&store), 1);
}

/// The cache holds at most its limit: with room for one index, two shards read in turn are
/// each read again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shard_index_cache_stays_within_its_limit() {
    let (store, array, all) = cached_shards(64 * 16 + 200).await;
    array.write([0..8, 64..72], &[3u32; 64]).await.unwrap();
    store.clear();
    for _ in 0..2 {
        assert_eq!(read_inner(&array, 0, 0).await, inner_chunk(&all, 0, 0));
        let second: Vec<u32> = array.read([0..8, 64..72]).await.unwrap();
        assert_eq!(second, vec![3; 64]);
    }
    assert_eq!(index_requests(&store), 4);
    for _ in 0..3 {
        read_inner(&array, 2, 2).await;
    }
    assert_eq!(index_requests(&store), 1);
}

/// The stored shards of `array` (every key under its path but `zarr.json`), sorted by key.
async fn shard_bytes(store: &MemoryStore, prefix: &str) -> Vec<(String, bytes::Bytes)> {
    use zarr_store::ListableStore;
    let mut out = Vec::new();
    for key in store
        .list_prefix(&zarr_store::StorePrefix::new(prefix))
        .await
        .unwrap()
    {
        if !key.as_str().ends_with("zarr.json") {
            let value = store.get(&key).await.unwrap().unwrap();
            out.push((key.as_str().to_owned(), value));
        }
    }
    out.sort();
    out
}

fn writer_builder() -> ArrayBuilder {
    // 4 x 2 shards, the last row and column cut by the array's edge (inner chunks wholly
    // outside it at the bottom right).
    ArrayBuilder::new(vec![30, 20], DataType::UInt32, vec![8, 12])
        .sharding(vec![2, 4])
        .zstd(1)
        .crc32c()
}

/// A `ShardWriter` fed rows of inner chunks stores each shard once, reads nothing, and
/// stores the bytes `Array::write` of the whole array stores; fed slabs that cut inner
/// chunks, it merges them across writes to the same values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_writer_stores_each_shard_once_with_the_bytes_of_a_whole_write() {
    let all = values(30 * 20);
    let whole = Arc::new(MemoryStore::new());
    let reference = writer_builder()
        .create(Arc::clone(&whole), "/a")
        .await
        .unwrap();
    reference.write(.., &all).await.unwrap();
    let expected = shard_bytes(&whole, "a/").await;
    assert_eq!(expected.len(), 8);

    for rows in [2u64, 3, 7, 30] {
        let store = Arc::new(RecordingStore::new(MemoryStore::new()));
        let array = writer_builder()
            .create(Arc::clone(&store), "/a")
            .await
            .unwrap();
        store.clear();
        let mut writer = array.shard_writer();
        assert!(writer.is_buffering());
        let mut start = 0;
        while start < 30 {
            let end = (start + rows).min(30);
            let slab = &all[(start * 20) as usize..(end * 20) as usize];
            writer.write([start..end, 0..20], slab).await.unwrap();
            start = end;
            // The two shards of a row of shards are held until the row is written.
            let open = if end % 8 == 0 || end == 30 { 0 } else { 2 };
            assert_eq!(writer.pending_shards(), open, "rows {rows}, end {end}");
        }
        assert_eq!(
            writer.pending_shards(),
            0,
            "every shard complete, rows {rows}"
        );
        writer.finish().await.unwrap();
        let stats = store.stats();
        assert_eq!(
            stats.sets, 8,
            "each shard stored once, rows {rows}: {stats:?}"
        );
        if rows % 2 == 0 {
            assert_eq!(
                stats.gets + stats.partial_reads,
                0,
                "slabs of whole inner chunks read nothing: {stats:?}"
            );
        }
        let got = shard_bytes(store.inner(), "a/").await;
        let differ: Vec<&str> = got
            .iter()
            .zip(&expected)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.0.as_str())
            .collect();
        assert!(
            got.len() == expected.len() && differ.is_empty(),
            "rows {rows}: {} shards, these differ: {differ:?}",
            got.len()
        );
        assert_eq!(array.read::<u32>(..).await.unwrap(), all, "rows {rows}");
    }
}

/// `finish` stores shards written in part with their other inner chunks as stored; a shard
/// that ends up all fill is erased; a writer dropped before `finish` stores nothing of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_writer_finish_keeps_the_stored_inner_chunks_of_partial_shards() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = writer_builder()
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let mut all = values(30 * 20);
    array.write(.., &all).await.unwrap();

    // Rows 3..5 and columns 2..15: inner chunks of four shards, two of them cut.
    let patch: Vec<u32> = (0..2 * 13).map(|i| 7_000_000 + i).collect();
    let mut writer = array.shard_writer();
    writer.write([3..5, 2..15], &patch).await.unwrap();
    assert_eq!(writer.pending_shards(), 2);
    assert!(writer.pending_bytes() > 0);
    // Nothing is stored before `finish`.
    assert_eq!(
        array.read::<u32>([3..4, 2..3]).await.unwrap(),
        [all[3 * 20 + 2]]
    );
    store.clear();
    writer.finish().await.unwrap();
    let stats = store.stats();
    assert_eq!(stats.sets, 2, "{stats:?}");
    assert_eq!(
        stats.partial_reads, 4,
        "an index and the chunks per shard: {stats:?}"
    );
    for (i, v) in patch.iter().enumerate() {
        let (y, x) = (3 + i / 13, 2 + i % 13);
        all[y * 20 + x] = *v;
    }
    assert_eq!(array.read::<u32>(..).await.unwrap(), all);

    // Zeros over the whole last row of shards: both are erased (the fill value is 0).
    let mut writer = array.shard_writer();
    writer
        .write([24..30, 0..20], &vec![0u32; 6 * 20])
        .await
        .unwrap();
    assert_eq!(writer.pending_shards(), 0);
    writer.finish().await.unwrap();
    for key in ["a/c/3/0", "a/c/3/1"] {
        assert!(
            store.get(&StoreKey::new(key)).await.unwrap().is_none(),
            "{key}"
        );
    }

    // Dropped before `finish`: the partly written shard keeps its stored bytes.
    let before = store.get(&StoreKey::new("a/c/0/0")).await.unwrap();
    let mut writer = array.shard_writer();
    writer.write([0..2, 0..4], &[1u32; 8]).await.unwrap();
    assert_eq!(writer.pending_shards(), 1);
    drop(writer);
    assert_eq!(store.get(&StoreKey::new("a/c/0/0")).await.unwrap(), before);
}

/// Strings through a `ShardWriter`, in slabs that cut inner chunks; bad arguments are
/// typed errors; an unsharded array is written straight through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_writer_writes_strings_checks_arguments_and_passes_unsharded_writes_through() {
    let store = Arc::new(MemoryStore::new());
    let text = ArrayBuilder::new(vec![9, 6], DataType::String, vec![4, 6])
        .sharding(vec![2, 3])
        .create(Arc::clone(&store), "/t")
        .await
        .unwrap();
    let words: Vec<String> = (0..54)
        .map(|i| match i % 4 {
            0 => String::new(),
            1 => format!("ß{i}"),
            _ => "x".repeat(i),
        })
        .collect();
    let mut writer = text.shard_writer();
    for (start, end) in [(0usize, 3usize), (3, 4), (4, 9)] {
        writer
            .write_text([start as u64..end as u64, 0..6], &words[start * 6..end * 6])
            .await
            .unwrap();
    }
    writer.finish().await.unwrap();
    assert_eq!(text.read_text(..).await.unwrap(), words);

    let array = writer_builder()
        .create(Arc::clone(&store), "/n")
        .await
        .unwrap();
    let mut writer = array.shard_writer();
    let err = writer.write([0..2, 0..4], &[1u32; 7]).await.unwrap_err();
    assert!(
        matches!(
            err,
            zarr_array::Error::BufferSize {
                expected: 8,
                found: 7
            }
        ),
        "{err:?}"
    );
    let err = writer.write([0..2, 0..4], &[1u16; 8]).await.unwrap_err();
    assert!(
        matches!(err, zarr_array::Error::ElementType { .. }),
        "{err:?}"
    );
    let err = writer.write([29..31, 0..4], &[1u32; 8]).await.unwrap_err();
    assert!(matches!(err, zarr_array::Error::Core(_)), "{err:?}");
    let err = writer.write_text([0..1, 0..1], &["a"]).await.unwrap_err();
    assert!(
        matches!(err, zarr_array::Error::ElementType { .. }),
        "{err:?}"
    );
    assert_eq!(writer.pending_shards(), 0);
    writer.finish().await.unwrap();

    let plain = ArrayBuilder::new(vec![4, 4], DataType::UInt32, vec![2, 2])
        .create(Arc::clone(&store), "/p")
        .await
        .unwrap();
    let mut writer = plain.shard_writer();
    assert!(!writer.is_buffering());
    writer.write([0..1, 0..3], &[1u32, 2, 3]).await.unwrap();
    assert_eq!(plain.read::<u32>([0..1, 0..4]).await.unwrap(), [1, 2, 3, 0]);
    writer.finish().await.unwrap();
}

/// A [`MemoryStore`] whose reads and writes of chunks fail while told to (metadata
/// documents still go through), counting the chunk writes and reads made.
#[derive(Debug, Default)]
struct Flaky {
    inner: MemoryStore,
    fail_reads: std::sync::atomic::AtomicBool,
    fail_sets: std::sync::atomic::AtomicBool,
    sets: std::sync::atomic::AtomicUsize,
    reads: std::sync::atomic::AtomicUsize,
}

impl Flaky {
    fn refuse(
        &self,
        key: &StoreKey,
        fail: &std::sync::atomic::AtomicBool,
    ) -> zarr_store::Result<()> {
        if !key.as_str().ends_with("zarr.json") && fail.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(zarr_store::Error::Io {
                operation: "test",
                path: key.as_str().into(),
                source: std::io::Error::other("the test store refuses"),
            });
        }
        Ok(())
    }

    fn count(&self, key: &StoreKey, counter: &std::sync::atomic::AtomicUsize) {
        if !key.as_str().ends_with("zarr.json") {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

#[async_trait::async_trait]
impl ReadableStore for Flaky {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<bytes::Bytes>> {
        self.refuse(key, &self.fail_reads)?;
        self.count(key, &self.reads);
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.refuse(key, &self.fail_reads)?;
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, zarr_store::ByteRange)],
    ) -> zarr_store::Result<Vec<Option<bytes::Bytes>>> {
        for (key, _) in key_ranges {
            self.refuse(key, &self.fail_reads)?;
            self.count(key, &self.reads);
        }
        self.inner.get_partial_values(key_ranges).await
    }
}

#[async_trait::async_trait]
impl WritableStore for Flaky {
    async fn set(&self, key: &StoreKey, value: bytes::Bytes) -> zarr_store::Result<()> {
        self.refuse(key, &self.fail_sets)?;
        self.count(key, &self.sets);
        self.inner.set(key, value).await
    }

    async fn erase(&self, key: &StoreKey) -> zarr_store::Result<()> {
        self.refuse(key, &self.fail_sets)?;
        self.count(key, &self.sets);
        self.inner.erase(key).await
    }

    async fn erase_prefix(&self, prefix: &zarr_store::StorePrefix) -> zarr_store::Result<()> {
        self.inner.erase_prefix(prefix).await
    }
}

/// A write that completes a shard whose store then fails keeps the shard, its own inner
/// chunks included: retried, or left to `finish`, the shard is stored whole, with nothing
/// read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_writer_keeps_completed_shards_whose_store_failed() {
    use std::sync::atomic::Ordering;
    let store = Arc::new(Flaky::default());
    // Two shards of 8 x 8, inner chunks of 2 x 8: four slabs of two rows fill one.
    let array = ArrayBuilder::new(vec![16, 8], DataType::UInt32, vec![8, 8])
        .sharding(vec![2, 8])
        .zstd(1)
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let all = values(16 * 8);
    // Creating the array looks for metadata documents of other formats (`.zarray`...).
    let reads = store.reads.load(Ordering::SeqCst);
    let slab = |row: u64| &all[row as usize * 8..(row as usize + 2) * 8];
    let mut writer = array.shard_writer();
    for first in [0, 8] {
        for row in (first..first + 6).step_by(2) {
            writer.write([row..row + 2, 0..8], slab(row)).await.unwrap();
        }
        store.fail_sets.store(true, Ordering::SeqCst);
        let last = first + 6;
        let failed = writer.write([last..last + 2, 0..8], slab(last)).await;
        assert!(failed.is_err(), "rows {first}..: {failed:?}");
        store.fail_sets.store(false, Ordering::SeqCst);
        assert_eq!(writer.pending_shards(), 1, "rows {first}..");
        if first == 0 {
            // Retried: the shard is complete again and stored.
            writer
                .write([last..last + 2, 0..8], slab(last))
                .await
                .unwrap();
            assert_eq!(writer.pending_shards(), 0);
        }
    }
    // The second shard is stored by `finish`, from what the writer holds alone.
    writer.finish().await.unwrap();
    assert_eq!(store.sets.load(Ordering::SeqCst), 2);
    assert_eq!(store.reads.load(Ordering::SeqCst), reads);
    assert_eq!(array.read::<u32>(..).await.unwrap(), all);
}

/// A write that fails (here reading the stored part of an inner chunk it cuts) leaves the
/// writer as it was: `finish` then stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_writer_write_that_fails_leaves_nothing_to_store() {
    use std::sync::atomic::Ordering;
    let store = Arc::new(Flaky::default());
    let array = writer_builder()
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let all = values(30 * 20);
    array.write(.., &all).await.unwrap();
    let before = shard_bytes(&store.inner, "a/").await;
    let sets = store.sets.load(Ordering::SeqCst);
    let mut writer = array.shard_writer();
    store.fail_reads.store(true, Ordering::SeqCst);
    let failed = writer.write([3..5, 2..15], &[7u32; 2 * 13]).await;
    store.fail_reads.store(false, Ordering::SeqCst);
    assert!(failed.is_err(), "{failed:?}");
    assert_eq!((writer.pending_shards(), writer.pending_bytes()), (0, 0));
    writer.finish().await.unwrap();
    assert_eq!(store.sets.load(Ordering::SeqCst), sets);
    assert_eq!(shard_bytes(&store.inner, "a/").await, before);
}
