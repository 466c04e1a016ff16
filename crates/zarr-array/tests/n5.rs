//! N5 containers, written here byte by byte as the N5 specification lays them out, read
//! and written as Zarr through `zarr_store::N5Store` and the `n5_default` codec.
//! (tensorstore's N5 containers are read, and ours checked by tensorstore, in `interop.rs`.)

use std::sync::Arc;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};
use std::io::{Read, Write};
use zarr_array::{Array, ArrayBuilder, Group, Node};
use zarr_core::{ChunkKeyEncoding, ChunkKeySeparator, DataType};
use zarr_store::{
    ListableStore, MemoryStore, N5Store, ReadableStore, StoreKey, StorePrefix, WritableStore,
};

async fn put(store: &MemoryStore, key: &str, value: impl Into<Bytes>) {
    store
        .set(&StoreKey::try_new(key).unwrap(), value.into())
        .await
        .unwrap();
}

async fn get(store: &MemoryStore, key: &str) -> Option<Bytes> {
    store.get(&StoreKey::try_new(key).unwrap()).await.unwrap()
}

/// An N5 block of `extent` holding `value(i, j)` column-major, big-endian, gzip-compressed.
fn block(extent: [u32; 2], value: impl Fn(u32, u32) -> u16) -> Vec<u8> {
    let mut data = Vec::new();
    for j in 0..extent[1] {
        for i in 0..extent[0] {
            data.extend(value(i, j).to_be_bytes());
        }
    }
    let mut gz = GzEncoder::new(Vec::new(), Compression::new(4));
    gz.write_all(&data).unwrap();
    let mut out = vec![0, 0, 0, 2];
    for d in extent {
        out.extend(d.to_be_bytes());
    }
    out.extend(gz.finish().unwrap());
    out
}

/// A container: the root's attributes, a group `volumes` with no attributes file (N5 groups
/// need none), and the 5x7 `uint16` dataset `volumes/raw` in 2x3 blocks holding `10 * i + j`:
/// block (0, 0) whole, the edge blocks of row 2 truncated to the array (as the Java library
/// writes them), those of column 2 padded (as tensorstore writes them), block (1, 1) missing.
async fn container() -> MemoryStore {
    let store = MemoryStore::new();
    put(
        &store,
        "attributes.json",
        r#"{"n5": "4.0.0", "owner": "lab"}"#,
    )
    .await;
    let attributes = json!({
        "dimensions": [5, 7], "blockSize": [2, 3], "dataType": "uint16",
        "compression": {"type": "gzip", "level": -1, "useZlib": false},
        "resolution": [4.0, 4.0]
    });
    put(
        &store,
        "volumes/raw/attributes.json",
        attributes.to_string(),
    )
    .await;
    for bi in 0..3u32 {
        for bj in 0..3u32 {
            if (bi, bj) == (1, 1) {
                continue;
            }
            let rows = if bi == 2 { 1 } else { 2 };
            let extent = [rows, 3];
            let value = |i: u32, j: u32| {
                let (r, c) = (bi * 2 + i, bj * 3 + j);
                if c < 7 { (10 * r + c) as u16 } else { 0 }
            };
            put(
                &store,
                &format!("volumes/raw/{bi}/{bj}"),
                block(extent, value),
            )
            .await;
        }
    }
    store
}

#[tokio::test]
async fn n5_containers_read_as_zarr_hierarchies() {
    let store = Arc::new(N5Store::new(container().await));
    let root = Group::open(Arc::clone(&store), "/").await.unwrap();
    assert_eq!(root.attributes()["owner"], "lab");
    let tree: Vec<String> = root
        .tree()
        .await
        .unwrap()
        .iter()
        .map(|(path, _)| path.as_str().to_owned())
        .collect();
    assert_eq!(tree, ["/volumes", "/volumes/raw"]);

    let array = Array::open(Arc::clone(&store), "/volumes/raw")
        .await
        .unwrap();
    assert_eq!(array.shape(), [5, 7]);
    assert_eq!(array.data_type(), &DataType::UInt16);
    assert_eq!(array.metadata().attributes["resolution"], json!([4.0, 4.0]));
    let values: Vec<u16> = array.read(..).await.unwrap();
    let expected: Vec<u16> = (0..5u16)
        .flat_map(|i| {
            (0..7u16).map(move |j| {
                if (2..4).contains(&i) && (3..6).contains(&j) {
                    0
                } else {
                    10 * i + j
                }
            })
        })
        .collect();
    assert_eq!(values, expected);
    // A region across a truncated, a padded and the missing block.
    let region: Vec<u16> = array.read([3..5, 4..7]).await.unwrap();
    assert_eq!(region, [0, 0, 36, 44, 45, 46]);

    // Listings show each attributes file as the node's `zarr.json`.
    let listed = store
        .list_dir(&StorePrefix::new("volumes/raw/"))
        .await
        .unwrap();
    assert_eq!(listed.keys, [StoreKey::new("volumes/raw/zarr.json")]);
    // A stray `zarr.json` beside an attributes file is listed once, in every listing.
    put(store.inner(), "volumes/raw/zarr.json", "{}").await;
    let listed = store
        .list_dir(&StorePrefix::new("volumes/raw/"))
        .await
        .unwrap();
    assert_eq!(listed.keys, [StoreKey::new("volumes/raw/zarr.json")]);
    let below = store
        .list_prefix(&StorePrefix::new("volumes/"))
        .await
        .unwrap();
    let all = store.list().await.unwrap();
    for keys in [&below, &all] {
        let once = keys
            .iter()
            .filter(|k| k.as_str() == "volumes/raw/zarr.json")
            .count();
        assert_eq!(once, 1, "{keys:?}");
    }
    store
        .inner()
        .erase(&StoreKey::new("volumes/raw/zarr.json"))
        .await
        .unwrap();
    // A path holding nothing is no node, nor is a directory of a dataset's blocks.
    assert!(Node::open(Arc::clone(&store), "/nothing").await.is_err());
    assert!(
        Node::open(Arc::clone(&store), "/volumes/raw/0")
            .await
            .is_err()
    );
}

#[tokio::test]
async fn arrays_written_through_the_wrapper_are_n5_datasets() {
    let memory = MemoryStore::new();
    let store = Arc::new(N5Store::new(memory.clone()));
    Group::create(Arc::clone(&store), "/").await.unwrap();
    let array = ArrayBuilder::new(vec![3, 5], DataType::Int32, vec![2, 2])
        .gzip(3)
        .n5()
        .attribute("unit", "nm")
        .create(Arc::clone(&store), "/data")
        .await
        .unwrap();
    let values: Vec<i32> = (0..15).map(|v| v * 1000 - 7000).collect();
    array.write(.., &values).await.unwrap();

    let root: Value =
        serde_json::from_slice(&get(&memory, "attributes.json").await.unwrap()).unwrap();
    assert_eq!(root, json!({"n5": "4.0.0"}));
    let attributes: Value =
        serde_json::from_slice(&get(&memory, "data/attributes.json").await.unwrap()).unwrap();
    assert_eq!(
        attributes,
        json!({"dimensions": [3, 5], "blockSize": [2, 2], "dataType": "int32",
               "compression": {"type": "gzip", "level": 3, "useZlib": false}, "unit": "nm"})
    );
    // Block (1, 2): rows 2.., columns 4.., padded to the whole block; column-major.
    let stored = get(&memory, "data/1/2").await.unwrap();
    assert_eq!(&stored[..12], &[0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2]);
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(&stored[12..])
        .read_to_end(&mut data)
        .unwrap();
    let block: Vec<i32> = data
        .chunks_exact(4)
        .map(|b| i32::from_be_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(block, [values[14], 0, 0, 0]);
    // Read back through a fresh wrapper.
    let again = Array::open(Arc::new(N5Store::new(memory.clone())), "/data")
        .await
        .unwrap();
    assert_eq!(again.read::<i32>(..).await.unwrap(), values);
    assert_eq!(again.metadata().attributes["unit"], "nm");
    // Erasing the node's metadata erases its attributes file.
    store.erase(&StoreKey::new("data/zarr.json")).await.unwrap();
    assert!(get(&memory, "data/attributes.json").await.is_none());
}

#[tokio::test]
async fn metadata_n5_cannot_hold_is_refused_with_the_reason() {
    let store = Arc::new(N5Store::new(MemoryStore::new()));
    let refused = |builder: ArrayBuilder| {
        let store = Arc::clone(&store);
        async move { builder.create(store, "/a").await.unwrap_err().to_string() }
    };
    let base = || ArrayBuilder::new(vec![4], DataType::UInt8, vec![2]).n5();
    let err = refused(base().fill_value_json(json!(3)).unwrap()).await;
    assert!(err.contains("the fill value 3"), "{err}");
    let err = refused(base().dimension_names(["x"])).await;
    assert!(err.contains("dimension names"), "{err}");
    let err = refused(ArrayBuilder::new(vec![4], DataType::Bool, vec![2]).n5()).await;
    assert!(err.contains("the data type \"bool\""), "{err}");
    let err = refused(base().crc32c()).await;
    assert!(err.contains("has no N5 equivalent"), "{err}");
    let err = refused(base().attribute("dataType", "x")).await;
    assert!(err.contains("`dataType` is a dataset attribute"), "{err}");
    let plain = || ArrayBuilder::new(vec![4], DataType::UInt8, vec![2]);
    let err = refused(plain()).await;
    assert!(err.contains("the chunk key encoding"), "{err}");
    let slash = ChunkKeyEncoding::V2 {
        separator: ChunkKeySeparator::Slash,
    };
    let err = refused(plain().chunk_key_encoding(slash).zstd(1)).await;
    assert!(err.contains("one codec `n5_default`"), "{err}");
    let err = refused(base().sharding(vec![1])).await;
    assert!(err.contains("cannot have sharding"), "{err}");
    // Nothing but the root group (created before the array) was written.
    assert_eq!(
        store.inner().list().await.unwrap(),
        [StoreKey::new("attributes.json")]
    );
}

#[tokio::test]
async fn malformed_n5_attributes_are_errors_naming_the_file() {
    let cases = [
        (
            r#"{"dimensions": [4], "dataType": "uint8"}"#,
            "`blockSize` is missing",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2, 2], "dataType": "uint8"}"#,
            "`blockSize` has 2 dimensions",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [0], "dataType": "uint8"}"#,
            "extent of 0",
        ),
        (
            r#"{"dimensions": [-4], "blockSize": [2], "dataType": "uint8"}"#,
            "non-negative integers",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2], "dataType": "object"}"#,
            "\"object\"",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2], "dataType": "uint128"}"#,
            "unknown `dataType`",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2], "dataType": "uint8", "compression": {"type": "lz4", "blockSize": 32}}"#,
            "the lz4 compression's `blockSize` 32 is not in 64..=33554432",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2], "dataType": "uint8", "compression": {"type": "snappy"}}"#,
            "unknown compression type \"snappy\"",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2], "dataType": "uint8", "compression": {"type": "gzip", "level": 12}}"#,
            "`level` 12 is not in -1..=9",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2], "dataType": "uint8", "compression": {"type": "blosc", "shuffle": 4}}"#,
            "`shuffle` 4",
        ),
        (
            r#"{"dimensions": [4], "blockSize": [2], "dataType": "uint8", "compression": "gzip"}"#,
            "must be an object",
        ),
        ("[1, 2]", "not a JSON object"),
        ("{not json", "not JSON"),
    ];
    for (attributes, expected) in cases {
        let memory = MemoryStore::new();
        put(&memory, "a/attributes.json", attributes).await;
        let store = Arc::new(N5Store::new(memory));
        let err = Array::open(store, "/a").await.unwrap_err();
        let text = zarr_core::ErrorChain(&err).to_string();
        assert!(text.contains("a/attributes.json"), "{text}");
        assert!(text.contains(expected), "{attributes}: {text}");
    }
}

#[tokio::test]
async fn every_n5_compression_reads_with_its_zarr_codec() {
    // The legacy form (`compressionType`, N5 before 1.0) and each compression's parameters.
    let compressions = [
        json!({"compressionType": "raw"}),
        json!({"compressionType": "gzip"}),
        json!({"compression": {"type": "gzip", "level": 9, "useZlib": true}}),
        json!({"compression": {"type": "bzip2", "blockSize": 3}}),
        json!({"compression": {"type": "xz", "preset": 2}}),
        json!({"compression": {"type": "zstd", "level": 5}}),
        json!({"compressionType": "lz4"}),
        json!({"compression": {"type": "lz4", "blockSize": 64}}),
        json!({"compression": {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 2, "blocksize": 0}}),
    ];
    for compression in compressions {
        let memory = MemoryStore::new();
        let mut attributes =
            json!({"dimensions": [6, 4], "blockSize": [4, 4], "dataType": "float64"});
        attributes
            .as_object_mut()
            .unwrap()
            .extend(compression.as_object().unwrap().clone());
        put(&memory, "a/attributes.json", attributes.to_string()).await;
        let store = Arc::new(N5Store::new(memory.clone()));
        // Write through our codec, then check the block reads back and the metadata
        // translates back to the same compression.
        let array = Array::open(Arc::clone(&store), "/a").await.unwrap();
        let values: Vec<f64> = (0..24).map(|v| f64::from(v) / 4.0).collect();
        array.write(.., &values).await.unwrap();
        assert_eq!(
            array.read::<f64>(..).await.unwrap(),
            values,
            "{compression}"
        );
        let codec = &array.metadata().codecs[0];
        assert_eq!(codec.name, "n5_default");
        store
            .set(
                &StoreKey::new("b/zarr.json"),
                Bytes::from(array.metadata().to_json_pretty().unwrap()),
            )
            .await
            .unwrap();
        let back: Value =
            serde_json::from_slice(&get(&memory, "b/attributes.json").await.unwrap()).unwrap();
        let kind = compression.get("compression").map_or_else(
            || compression["compressionType"].clone(),
            |c| c["type"].clone(),
        );
        assert_eq!(back["compression"]["type"], kind, "{compression}");
        if kind == "lz4" {
            // The block size survives both ways, and the block is lz4-java's stream (a
            // 12-byte N5 header, then `LZ4Block`).
            let size = compression["compression"]["blockSize"]
                .as_i64()
                .unwrap_or(65536);
            assert_eq!(back["compression"]["blockSize"], size);
            let block = get(&memory, "a/0/0").await.unwrap();
            assert_eq!(&block[12..20], b"LZ4Block", "{compression}");
        }
    }
}
