//! Sharded arrays through `Array`: values, request counts of reads and writes, empty shards,
//! and concurrent writers to one shard.

use std::sync::Arc;

use zarr_array::{Array, ArrayBuilder};
use zarr_core::DataType;
use zarr_store::{MemoryStore, RecordingStore, StoreKey, WritableStore};

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

/// Writers updating different inner chunks of one shard at the same time lose nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_to_one_shard_lose_nothing() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![64], DataType::UInt32, vec![64])
        .sharding(vec![4])
        .zstd(1)
        .create(Arc::clone(&store), "/c")
        .await
        .unwrap();
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
        assert_eq!(back[s..s + 4], [i + 1, i + 1, i + 1, 0], "inner chunk {i}");
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
/// through it: chunks live in shards of `chunks_per_shard` chunks; writes are refused.
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
    let err = opened.write([0..1, 0..1], &[1u32]).await.unwrap_err();
    assert!(
        matches!(err, zarr_array::Error::Unsupported { .. }),
        "{err}"
    );
}
