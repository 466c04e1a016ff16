//! The sharding storage transformer: store conformance, the seed's request pattern, chunk
//! keys reported as if unsharded, concurrent writers, and byte-identical shards with the
//! `sharding_indexed` codec.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::ArrayBytes;
use zarr_core::{ChunkKeyEncoding, ChunkKeySeparator, DataType, FillValue, NodeMetadata};
use zarr_sharding::{Error, ShardingCodec, ShardingTransformer, ShardingTransformerConfig};
use zarr_store::{
    ByteRange, ListableStore, MemoryStore, Operation, ReadableStore, RecordingStore, StoreKey,
    StorePrefix, WritableStore,
};

use crate::{registry, repr, sharding};

type Recorded = RecordingStore<MemoryStore>;

fn transformer(prefix: &str, cps: Vec<u64>) -> (Arc<Recorded>, ShardingTransformer<Recorded>) {
    let inner = Arc::new(RecordingStore::new(MemoryStore::new()));
    let t = ShardingTransformer::new(
        Arc::clone(&inner),
        StorePrefix::new(prefix),
        cps,
        ChunkKeyEncoding::default(),
    )
    .unwrap();
    (inner, t)
}

fn key(s: &str) -> StoreKey {
    StoreKey::new(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_conformance_suite_passes_through_the_transformer() {
    let options = zarr_store::testing::SuiteOptions::default().with_large_value_bytes(1 << 20);
    // The suite's listing tree holds chunk keys tree/a/c/0/0, c/0/1 and c/1/0: one shard.
    let store = ShardingTransformer::new(
        Arc::new(MemoryStore::new()),
        StorePrefix::new("tree/a/"),
        vec![2, 2],
        ChunkKeyEncoding::default(),
    )
    .unwrap();
    zarr_store::testing::run_conformance_with(Arc::new(store), &options).await;
    // Its readable checks use readable/c/0/0 and readable/c/0/1: chunks of one shard.
    let store = ShardingTransformer::new(
        Arc::new(MemoryStore::new()),
        StorePrefix::new("readable/"),
        vec![1, 2],
        ChunkKeyEncoding::default(),
    )
    .unwrap();
    zarr_store::testing::run_conformance_with(Arc::new(store), &options).await;
}

#[tokio::test]
async fn chunks_live_in_shards_and_list_as_chunks() {
    let (inner, store) = transformer("arr/", vec![2, 2]);
    for (k, v) in [
        ("arr/c/0/0", "a"),
        ("arr/c/1/1", "bb"),
        ("arr/c/2/3", "ccc"),
        ("arr/zarr.json", "{}"),
    ] {
        store.set(&key(k), Bytes::from(v)).await.unwrap();
    }
    // Two shards and the metadata underneath.
    assert_eq!(
        inner.inner().list().await.unwrap(),
        vec![key("arr/c/0/0"), key("arr/c/1/1"), key("arr/zarr.json")]
    );
    assert_eq!(
        store.list().await.unwrap(),
        vec![
            key("arr/c/0/0"),
            key("arr/c/1/1"),
            key("arr/c/2/3"),
            key("arr/zarr.json")
        ]
    );
    assert_eq!(
        store
            .list_prefix(&StorePrefix::new("arr/c/2/"))
            .await
            .unwrap(),
        vec![key("arr/c/2/3")]
    );
    assert_eq!(
        store
            .list_prefix(&StorePrefix::new("arr/c/1/"))
            .await
            .unwrap(),
        vec![key("arr/c/1/1")]
    );
    let dir = store.list_dir(&StorePrefix::new("arr/c/")).await.unwrap();
    assert_eq!(
        dir.prefixes,
        vec![
            StorePrefix::new("arr/c/0/"),
            StorePrefix::new("arr/c/1/"),
            StorePrefix::new("arr/c/2/")
        ]
    );
    assert_eq!(store.size(&key("arr/c/2/3")).await.unwrap(), Some(3));
    assert_eq!(store.size(&key("arr/c/3/3")).await.unwrap(), None);
    assert_eq!(store.get(&key("arr/c/1/0")).await.unwrap(), None);
    // Shard (1,1) holds chunk (2,3) at position (0,1): 3 bytes and a 64-byte index.
    let shard = inner.inner().get(&key("arr/c/1/1")).await.unwrap().unwrap();
    assert_eq!(shard.len(), 3 + 64);
    assert_eq!(&shard[..3], b"ccc");
    assert_eq!(
        &shard[3 + 16..3 + 32],
        &[0u8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]
    );
}

#[tokio::test]
async fn get_partial_values_is_two_calls_below() {
    let (inner, store) = transformer("arr/", vec![2, 2]);
    store
        .set_values(&[
            (key("arr/c/0/0"), Bytes::from_static(b"0123456789")),
            (key("arr/c/0/1"), Bytes::from_static(b"abcdef")),
            (key("arr/c/5/5"), Bytes::from_static(b"far away")),
            (key("arr/zarr.json"), Bytes::from_static(b"{\"x\": 1}")),
        ])
        .await
        .unwrap();
    inner.clear();
    let answers = store
        .get_partial_values(&[
            (key("arr/c/0/0"), ByteRange::new(2, 5)),
            (key("arr/c/5/5"), ByteRange::suffix(4)),
            (key("arr/zarr.json"), ByteRange::from_offset(1)),
            (key("arr/c/0/1"), ByteRange::FULL),
            (key("arr/c/9/9"), ByteRange::FULL),
            (key("arr/c/1/1"), ByteRange::FULL),
        ])
        .await
        .unwrap();
    assert_eq!(answers[0].as_deref(), Some(&b"234"[..]));
    assert_eq!(answers[1].as_deref(), Some(&b"away"[..]));
    assert_eq!(answers[2].as_deref(), Some(&b"\"x\": 1}"[..]));
    assert_eq!(answers[3].as_deref(), Some(&b"abcdef"[..]));
    assert_eq!(answers[4], None);
    assert_eq!(answers[5], None);
    let ops = inner.operations();
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert!(
        ops.iter()
            .all(|op| matches!(op, Operation::GetPartialValues { .. }))
    );
    // A range past a chunk's end is the store's error, naming the chunk key.
    let err = store
        .get_partial_values(&[(key("arr/c/0/1"), ByteRange::new(0, 7))])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, zarr_store::Error::RangeOutOfBounds { key: Some(k), size: 6, .. } if *k == key("arr/c/0/1")),
        "{err:?}"
    );
}

#[tokio::test]
async fn writes_read_only_what_they_must() {
    let (inner, store) = transformer("arr/", vec![2, 2]);
    // Every chunk of shard (0,0) given: written without a read.
    let all: Vec<(StoreKey, Bytes)> = ["0/0", "0/1", "1/0", "1/1"]
        .iter()
        .map(|c| (key(&format!("arr/c/{c}")), Bytes::from(c.to_string())))
        .collect();
    store.set_values(&all).await.unwrap();
    assert_eq!(inner.stats().partial_reads + inner.stats().gets, 0);
    assert_eq!(inner.stats().sets, 1);
    // One chunk: one read of the shard, one write.
    inner.clear();
    store
        .set(&key("arr/c/1/1"), Bytes::from_static(b"new"))
        .await
        .unwrap();
    assert_eq!((inner.stats().partial_reads, inner.stats().sets), (1, 1));
    assert_eq!(
        store.get(&key("arr/c/1/1")).await.unwrap().as_deref(),
        Some(&b"new"[..])
    );
    assert_eq!(
        store.get(&key("arr/c/0/1")).await.unwrap().as_deref(),
        Some(&b"0/1"[..])
    );
    // Partial writes patch and extend chunk values.
    store
        .set_partial_values(&[
            (key("arr/c/0/0"), 1, Bytes::from_static(b"XY")),
            (key("arr/c/0/1"), 5, Bytes::from_static(b"!")),
            (key("arr/other"), 2, Bytes::from_static(b"zz")),
        ])
        .await
        .unwrap();
    assert_eq!(
        store.get(&key("arr/c/0/0")).await.unwrap().as_deref(),
        Some(&b"0XY"[..])
    );
    assert_eq!(
        store.get(&key("arr/c/0/1")).await.unwrap().as_deref(),
        Some(&b"0/1\0\0!"[..])
    );
    assert_eq!(
        store.get(&key("arr/other")).await.unwrap().as_deref(),
        Some(&b"\0\0zz"[..])
    );
    // Erasing some chunks rewrites the shard; erasing the rest erases it, without a read
    // when every chunk is named.
    store
        .erase_values(&[key("arr/c/0/0"), key("arr/c/1/0")])
        .await
        .unwrap();
    assert_eq!(
        store.list().await.unwrap(),
        vec![key("arr/c/0/1"), key("arr/c/1/1"), key("arr/other")]
    );
    inner.clear();
    store
        .erase_values(&[
            key("arr/c/0/0"),
            key("arr/c/0/1"),
            key("arr/c/1/0"),
            key("arr/c/1/1"),
        ])
        .await
        .unwrap();
    assert_eq!(inner.stats().partial_reads, 0);
    assert_eq!(inner.inner().list().await.unwrap(), vec![key("arr/other")]);
}

#[tokio::test]
async fn erase_prefix_inside_the_array() {
    let (inner, store) = transformer("arr/", vec![2, 2]);
    let mut values = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            values.push((
                key(&format!("arr/c/{i}/{j}")),
                Bytes::from(format!("{i}{j}")),
            ));
        }
    }
    values.push((key("arr/c/1/odd"), Bytes::from_static(b"not a chunk")));
    store.set_values(&values).await.unwrap();
    store
        .erase_prefix(&StorePrefix::new("arr/c/1/"))
        .await
        .unwrap();
    let left = store.list().await.unwrap();
    assert_eq!(left.len(), 12);
    assert!(
        left.iter().all(|k| !k.as_str().starts_with("arr/c/1/")),
        "{left:?}"
    );
    assert_eq!(
        store.get(&key("arr/c/0/3")).await.unwrap().as_deref(),
        Some(&b"03"[..])
    );
    // Rows 2 and 3 fill their shards: erasing row 2 and 3 erases the shards.
    store
        .erase_prefix(&StorePrefix::new("arr/c/2/"))
        .await
        .unwrap();
    store
        .erase_prefix(&StorePrefix::new("arr/c/3/"))
        .await
        .unwrap();
    assert_eq!(
        inner.inner().list().await.unwrap(),
        vec![key("arr/c/0/0"), key("arr/c/0/1")]
    );
    // The array's own prefix erases everything.
    store.erase_prefix(&StorePrefix::new("arr/")).await.unwrap();
    assert!(inner.inner().list().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_to_one_shard_lose_nothing() {
    let (_inner, store) = transformer("arr/", vec![8, 8]);
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for i in 0..8u64 {
        for j in 0..8u64 {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                let k = key(&format!("arr/c/{i}/{j}"));
                store
                    .set(&k, Bytes::from(format!("{i},{j}")))
                    .await
                    .unwrap();
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 64);
    for i in 0..8 {
        for j in 0..8 {
            let v = store.get(&key(&format!("arr/c/{i}/{j}"))).await.unwrap();
            assert_eq!(v.as_deref(), Some(format!("{i},{j}").as_bytes()));
        }
    }
}

#[tokio::test]
async fn transformer_and_codec_write_identical_shards() {
    // An 8x8 uint16 array in 2x2 chunks (bytes little-endian), 2x2 chunks per shard, versus
    // the codec with 4x4 shards of 2x2 inner chunks and index_codecs = [bytes little], end.
    let values: Vec<u16> = (0..64u16)
        .map(|i| if (i / 8) % 4 == 1 || i % 7 == 0 { 0 } else { i })
        .collect();
    let codec = ShardingCodec::from_metadata(
        &sharding(json!({
            "chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "end"
        })),
        &repr(&[4, 4], DataType::UInt16, FillValue::new([0, 0])),
        &registry(),
    )
    .unwrap();
    let chunk_chain = codec.inner_chain();
    let block = |y0: usize, x0: usize, h: usize, w: usize| -> Vec<u8> {
        (y0..y0 + h)
            .flat_map(|y| (x0..x0 + w).map(move |x| (y, x)))
            .flat_map(|(y, x)| values[y * 8 + x].to_ne_bytes())
            .collect()
    };
    let (inner, store) = transformer("", vec![2, 2]);
    let mut chunks = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            let chunk = ArrayBytes::fixed(block(2 * i, 2 * j, 2, 2));
            if chunk.is_fill(chunk_chain.decoded_representation()) {
                continue; // an array writer stores no all-fill chunk
            }
            chunks.push((
                key(&format!("c/{i}/{j}")),
                chunk_chain.encode(chunk).unwrap(),
            ));
        }
    }
    store.set_values(&chunks).await.unwrap();
    let mut compared = 0;
    for i in 0..2 {
        for j in 0..2 {
            let shard_key = key(&format!("c/{i}/{j}"));
            let from_codec = codec
                .encode_shard(ArrayBytes::fixed(block(4 * i, 4 * j, 4, 4)))
                .unwrap();
            let from_transformer = inner.inner().get(&shard_key).await.unwrap();
            assert_eq!(from_transformer, from_codec, "shard {i},{j}");
            compared += usize::from(from_codec.is_some());
        }
    }
    assert_eq!(compared, 4);
}

#[tokio::test]
async fn metadata_forms_and_bad_shards() {
    // The August 2022 form, as zarr-core reads it from zarr.json.
    let text = json!({
        "zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}},
        "fill_value": 0, "codecs": [{"name": "bytes"}],
        "storage_transformers": [{
            "extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
            "type": "indexed", "configuration": {"chunks_per_shard": [2, 4]}
        }]
    })
    .to_string();
    let NodeMetadata::Array(meta) = NodeMetadata::from_json(&text).unwrap() else {
        panic!()
    };
    let inner = Arc::new(MemoryStore::new());
    let store = ShardingTransformer::from_metadata(
        Arc::clone(&inner),
        StorePrefix::new("data/"),
        &meta.storage_transformers[0],
        meta.chunk_key_encoding.clone(),
    )
    .unwrap();
    assert_eq!(store.chunks_per_shard(), &[2, 4]);
    assert_eq!(
        meta.chunk_key_encoding,
        ChunkKeyEncoding::Default {
            separator: ChunkKeySeparator::Dot
        }
    );
    // The separator is kept: chunk c.3.5 is in shard c.1.1.
    assert_eq!(
        store.shard_of(&key("data/c.3.5")),
        Some((key("data/c.1.1"), 5))
    );
    store
        .set(&key("data/c.3.5"), Bytes::from_static(b"v"))
        .await
        .unwrap();
    assert!(inner.get(&key("data/c.1.1")).await.unwrap().is_some());
    assert_eq!(store.list().await.unwrap(), vec![key("data/c.3.5")]);
    // Bad configurations.
    for bad in [
        json!({"name": "sharding", "configuration": {"chunks_per_shard": [0, 1]}}),
        json!({"name": "sharding", "configuration": {}}),
        json!({"name": "other", "configuration": {"chunks_per_shard": [1]}}),
        json!({"extension": "https://example.com/x", "configuration": {"chunks_per_shard": [1]}}),
    ] {
        assert!(
            matches!(
                ShardingTransformerConfig::from_json(&bad),
                Err(Error::InvalidConfiguration { .. })
            ),
            "{bad}"
        );
    }
    // A shard whose index points outside it: the store error carries ours.
    inner
        .set(&key("data/c.0.0"), Bytes::from(vec![0xee; 8 * 16]))
        .await
        .unwrap();
    let err = store.get(&key("data/c.0.0")).await.unwrap_err();
    match &err {
        zarr_store::Error::Wrapper { source, .. } => assert!(
            matches!(
                source.downcast_ref::<Error>(),
                Some(Error::EntryOutOfBounds { .. })
            ),
            "{source:?}"
        ),
        e => panic!("{e:?}"),
    }
}
