//! Zarr v2 hierarchies, written here byte by byte as the v2 specification lays them out, read
//! through `Array`, `Group` and `Node`; every write to them is refused. (Arrays written by
//! zarr-python with `zarr_format=2` are read in `interop.rs`.)

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder, Error, Group, Node, blocking};
use zarr_core::DataType;
use zarr_core::v2::ZarrFormat;
use zarr_store::{MemoryStore, StoreKey, WritableStore};

async fn put(store: &MemoryStore, key: &str, value: impl Into<Bytes>) {
    store
        .set(&StoreKey::try_new(key).unwrap(), value.into())
        .await
        .unwrap();
}

async fn put_json(store: &MemoryStore, key: &str, value: Value) {
    put(store, key, serde_json::to_vec(&value).unwrap()).await;
}

fn zarray(shape: &[u64], chunks: &[u64], dtype: &str, order: &str, extra: Value) -> Value {
    let mut doc = json!({
        "zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
        "compressor": null, "fill_value": -1, "order": order, "filters": null
    });
    doc.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    doc
}

/// The chunk `(ci, cj)` of a `rows x cols` array of `i32` holding `10 * i + j`, in chunks of
/// `cr x cc`, laid out in `order` ("C" or "F") and `endian`; edge chunks padded with `pad`.
#[allow(clippy::too_many_arguments)]
fn chunk(
    (rows, cols): (u64, u64),
    (cr, cc): (u64, u64),
    (ci, cj): (u64, u64),
    order: &str,
    big_endian: bool,
    pad: i32,
) -> Vec<u8> {
    let value = |r: u64, c: u64| {
        let (i, j) = (ci * cr + r, cj * cc + c);
        if i < rows && j < cols {
            (10 * i + j) as i32
        } else {
            pad
        }
    };
    let mut out = Vec::new();
    let mut push = |v: i32| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        })
    };
    if order == "C" {
        for r in 0..cr {
            for c in 0..cc {
                push(value(r, c));
            }
        }
    } else {
        for c in 0..cc {
            for r in 0..cr {
                push(value(r, c));
            }
        }
    }
    out
}

fn expected(rows: u64, cols: u64, missing: &[(u64, u64)], (cr, cc): (u64, u64)) -> Vec<i32> {
    let mut out = Vec::new();
    for i in 0..rows {
        for j in 0..cols {
            let gone = missing.contains(&(i / cr, j / cc));
            out.push(if gone { -1 } else { (10 * i + j) as i32 });
        }
    }
    out
}

/// A 5x7 `int32` array in 2x3 chunks (edge chunks on both axes) at `path`, chunk (1, 1)
/// missing.
async fn write_v2_array(store: &MemoryStore, path: &str, order: &str, dtype: &str, sep: &str) {
    let extra = if sep == "/" {
        json!({"dimension_separator": "/"})
    } else {
        json!({})
    };
    put_json(
        store,
        &format!("{path}/.zarray"),
        zarray(&[5, 7], &[2, 3], dtype, order, extra),
    )
    .await;
    put_json(
        store,
        &format!("{path}/.zattrs"),
        json!({"units": "m", "scale": [1, 2]}),
    )
    .await;
    for ci in 0..3 {
        for cj in 0..3 {
            if (ci, cj) == (1, 1) {
                continue;
            }
            let bytes = chunk((5, 7), (2, 3), (ci, cj), order, dtype.starts_with('>'), 77);
            put(store, &format!("{path}/{ci}{sep}{cj}"), bytes).await;
        }
    }
}

#[tokio::test]
async fn v2_arrays_read_in_either_order_byte_order_and_key_separator() {
    let store = Arc::new(MemoryStore::new());
    let cases = [
        ("c_dot", "C", "<i4", "."),
        ("f_dot", "F", "<i4", "."),
        ("c_slash_big", "C", ">i4", "/"),
        ("f_slash_big", "F", ">i4", "/"),
    ];
    for (name, order, dtype, sep) in cases {
        write_v2_array(&store, name, order, dtype, sep).await;
        let array = Array::open(Arc::clone(&store), name).await.unwrap();
        assert_eq!(array.zarr_format(), ZarrFormat::V2);
        assert_eq!(array.shape(), [5, 7]);
        assert_eq!(*array.data_type(), DataType::Int32);
        assert_eq!(array.attributes()["units"], "m");
        let whole: Vec<i32> = array.read(array.full_region()).await.unwrap();
        assert_eq!(whole, expected(5, 7, &[(1, 1)], (2, 3)), "{name}");
        // A region across chunk edges, including the missing chunk (fill value -1).
        let part: Vec<i32> = array.read([1..4, 2..5]).await.unwrap();
        assert_eq!(
            part,
            [12, 13, 14, 22, -1, -1, 32, -1, -1],
            "{name}: region [1..4, 2..5]"
        );
        // The key of chunk (2, 1) is the v2 one.
        assert_eq!(
            array.chunk_key(&[2, 1]).unwrap().as_str(),
            format!("{name}/2{sep}1")
        );
    }
}

#[tokio::test]
async fn v2_hierarchies_list_and_open_and_the_root_may_be_an_array() {
    let store = Arc::new(MemoryStore::new());
    put_json(&store, ".zgroup", json!({"zarr_format": 2})).await;
    put_json(&store, ".zattrs", json!({"title": "v2 root"})).await;
    put_json(&store, "sub/.zgroup", json!({"zarr_format": 2})).await;
    write_v2_array(&store, "sub/data", "C", "<i4", ".").await;
    write_v2_array(&store, "top", "F", "<i4", "/").await;
    // A directory with no metadata is not a node.
    put(&store, "loose/file", Bytes::from_static(b"x")).await;

    let root = Group::open(Arc::clone(&store), "/").await.unwrap();
    assert_eq!(root.zarr_format(), ZarrFormat::V2);
    assert_eq!(root.attributes()["title"], "v2 root");
    let children: Vec<String> = root
        .children()
        .await
        .unwrap()
        .iter()
        .map(|c| c.path().as_str().to_owned())
        .collect();
    assert_eq!(children, ["/sub", "/top"]);
    let tree: Vec<String> = root
        .tree()
        .await
        .unwrap()
        .into_iter()
        .map(|(p, _)| p.as_str().to_owned())
        .collect();
    assert_eq!(tree, ["/sub", "/sub/data", "/top"]);
    // With `.zmetadata`, `tree` reads the hierarchy from it alone (here it lists a group
    // that is not stored, which shows where the answer came from); `tree_listed` lists.
    put_json(
        &store,
        ".zmetadata",
        json!({"zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2},
            "only_consolidated/.zgroup": {"zarr_format": 2},
            "only_consolidated/.zattrs": {"k": "v"}
        }}),
    )
    .await;
    let consolidated = root.tree().await.unwrap();
    assert_eq!(consolidated.len(), 1);
    assert_eq!(consolidated[0].0.as_str(), "/only_consolidated");
    assert_eq!(consolidated[0].1.attributes()["k"], "v");
    let listed: Vec<String> = root
        .tree_listed()
        .await
        .unwrap()
        .into_iter()
        .map(|(p, _)| p.as_str().to_owned())
        .collect();
    assert_eq!(listed, ["/sub", "/sub/data", "/top"]);
    put(
        &store,
        ".zmetadata",
        Bytes::from_static(b"{\"metadata\": {}}"),
    )
    .await;
    let e = root.tree().await.unwrap_err();
    assert!(matches!(e, Error::V2Metadata { .. }), "{e}");

    let sub = root.open_group("sub").await.unwrap();
    assert!(sub.attributes().is_empty(), "no .zattrs: no attributes");
    match Node::open(Arc::clone(&store), "/sub/data").await.unwrap() {
        Node::Array(a) => assert_eq!(a.zarr_format(), ZarrFormat::V2),
        Node::Group(_) => panic!("an array"),
    }
    let e = Array::open(Arc::clone(&store), "/sub").await.unwrap_err();
    assert!(matches!(e, Error::WrongNodeType { .. }), "{e}");

    // A root that is an array: an array at "/" with its chunks at the top level.
    let store = Arc::new(MemoryStore::new());
    put_json(
        &store,
        ".zarray",
        zarray(&[3], &[2], "<u2", "C", json!({"fill_value": 0})),
    )
    .await;
    put(&store, "0", vec![1, 0, 2, 0]).await;
    put(&store, "1", vec![3, 0, 9, 9]).await;
    let array = Array::open(Arc::clone(&store), "/").await.unwrap();
    assert_eq!(array.read::<u16>(0..3).await.unwrap(), [1, 2, 3]);
}

#[test]
fn the_blocking_api_reads_v2_as_well() {
    let store = Arc::new(MemoryStore::new());
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(write_v2_array(&store, "sub/data", "F", ">i4", "/"));
    let array = blocking::Array::open(Arc::clone(&store), "/sub/data").unwrap();
    assert_eq!(array.zarr_format(), ZarrFormat::V2);
    let whole: Vec<i32> = array.read(array.as_async().full_region()).unwrap();
    assert_eq!(whole, expected(5, 7, &[(1, 1)], (2, 3)));
}

#[tokio::test]
async fn zarr_json_wins_over_v2_metadata_at_the_same_path() {
    let store = Arc::new(MemoryStore::new());
    write_v2_array(&store, "both", "C", "<i4", ".").await;
    let v3 = ArrayBuilder::new(vec![4], DataType::UInt8, vec![2])
        .create(Arc::clone(&store), "/other")
        .await
        .unwrap();
    let text = serde_json::to_vec(&v3.metadata().to_value().unwrap()).unwrap();
    put(&store, "both/zarr.json", text).await;
    let array = Array::open(Arc::clone(&store), "/both").await.unwrap();
    assert_eq!(array.zarr_format(), ZarrFormat::V3);
    assert_eq!(*array.data_type(), DataType::UInt8);
}

#[tokio::test]
async fn writes_to_v2_nodes_are_refused_and_change_nothing() {
    let store = Arc::new(MemoryStore::new());
    put_json(&store, ".zgroup", json!({"zarr_format": 2})).await;
    write_v2_array(&store, "a", "C", "<i4", ".").await;
    let before = store.len();
    let mut array = Array::open(Arc::clone(&store), "/a").await.unwrap();
    let refused = |e: Error| {
        assert!(matches!(e, Error::V2ReadOnly { .. }), "{e}");
        assert!(e.to_string().contains("Zarr v2"), "{e}");
    };
    refused(array.write([0..1, 0..1], &[5i32]).await.unwrap_err());
    refused(
        array
            .write(array.full_region(), &[0i32; 35])
            .await
            .unwrap_err(),
    );
    refused(array.erase_chunk(&[0, 0]).await.unwrap_err());
    refused(
        array
            .set_attributes(serde_json::Map::new())
            .await
            .unwrap_err(),
    );
    refused(array.resize(vec![2, 2]).await.unwrap_err());
    refused(array.resize(vec![9, 9]).await.unwrap_err());
    let mut root = Group::open(Arc::clone(&store), "/").await.unwrap();
    refused(
        root.set_attributes(serde_json::Map::new())
            .await
            .unwrap_err(),
    );
    refused(root.create_group("new").await.unwrap_err());
    refused(
        ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
            .create(Arc::clone(&store), "/new/array")
            .await
            .unwrap_err(),
    );
    refused(
        Group::create_with(Arc::clone(&store), "/", zarr_core::GroupMetadata::new())
            .await
            .unwrap_err(),
    );
    assert_eq!(store.len(), before, "nothing was written");
    let whole: Vec<i32> = array.read(array.full_region()).await.unwrap();
    assert_eq!(whole, expected(5, 7, &[(1, 1)], (2, 3)));
}

#[tokio::test]
async fn bad_v2_metadata_and_chunks_are_typed_errors_naming_the_node() {
    let store = Arc::new(MemoryStore::new());
    let cases = [
        ("structured", json!({"dtype": [["a", "<i4"]]}), "structured"),
        (
            "bz2",
            json!({"compressor": {"id": "bz2", "level": 1}}),
            "bz2",
        ),
        (
            "categorize",
            json!({"filters": [{"id": "categorize", "dtype": "<U1", "labels": ["a"]}]}),
            "categorize",
        ),
        (
            "delta_after_shuffle",
            json!({"filters": [{"id": "shuffle", "elementsize": 4},
                               {"id": "delta", "dtype": "<i4"}]}),
            "filters[1]",
        ),
        ("order", json!({"order": "K"}), "order"),
        ("rank", json!({"chunks": [2]}), "chunks"),
        ("fill", json!({"fill_value": "zero"}), "fill"),
    ];
    for (name, extra, needle) in cases {
        put_json(
            &store,
            &format!("{name}/.zarray"),
            zarray(&[5, 7], &[2, 3], "<i4", "C", extra),
        )
        .await;
        let e = Array::open(Arc::clone(&store), name).await.unwrap_err();
        assert!(matches!(e, Error::V2Metadata { .. }), "{name}: {e}");
        let text = e.to_string();
        assert!(
            text.contains(name) && text.contains(needle),
            "{name}: {text}"
        );
    }
    // A numeric filter whose dtype is not the array's: refused when the chain is built.
    put_json(
        &store,
        "delta_i2/.zarray",
        zarray(
            &[5, 7],
            &[2, 3],
            "<i4",
            "C",
            json!({"filters": [{"id": "delta", "dtype": "<i2"}]}),
        ),
    )
    .await;
    let e = Array::open(Arc::clone(&store), "delta_i2")
        .await
        .unwrap_err();
    let text = format!("{e}: {:?}", std::error::Error::source(&e));
    assert!(text.contains("numcodecs.delta"), "{text}");
    put(&store, "notjson/.zarray", Bytes::from_static(b"{")).await;
    let e = Array::open(Arc::clone(&store), "notjson")
        .await
        .unwrap_err();
    assert!(matches!(e, Error::V2Metadata { .. }), "{e}");
    put(
        &store,
        "attrs/.zgroup",
        Bytes::from_static(b"{\"zarr_format\": 2}"),
    )
    .await;
    put(&store, "attrs/.zattrs", Bytes::from_static(b"[1]")).await;
    let e = Group::open(Arc::clone(&store), "attrs").await.unwrap_err();
    assert!(matches!(e, Error::V2Metadata { .. }), "{e}");

    // A truncated chunk: an error naming the chunk's key; the other chunks still read.
    write_v2_array(&store, "short", "C", "<i4", ".").await;
    put(&store, "short/0.0", vec![0u8; 5]).await;
    let array = Array::open(Arc::clone(&store), "short").await.unwrap();
    let e = array.read::<i32>(array.full_region()).await.unwrap_err();
    assert!(e.to_string().contains("short/0.0"), "{e}");
    assert_eq!(array.read::<i32>([4..5, 6..7]).await.unwrap(), [46]);
}
