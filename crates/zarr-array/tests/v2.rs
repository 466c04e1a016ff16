//! Zarr v2 hierarchies, written here byte by byte as the v2 specification lays them out, read
//! and written through `Array`, `Group` and `Node`; v2 arrays and groups created by the
//! builder. (zarr-python's v2 arrays are read, and ours checked by zarr-python, in
//! `interop.rs`.)

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

async fn get(store: &MemoryStore, key: &str) -> Option<Bytes> {
    zarr_store::ReadableStore::get(store, &StoreKey::try_new(key).unwrap())
        .await
        .unwrap()
}

async fn get_json(store: &MemoryStore, key: &str) -> Value {
    serde_json::from_slice(&get(store, key).await.unwrap()).unwrap()
}

#[tokio::test]
async fn writes_to_v2_arrays_store_chunks_as_v2_lays_them_out() {
    let store = Arc::new(MemoryStore::new());
    // Chunk (1, 1), the missing one, is interior: written whole, its bytes are exactly what
    // the specification's layout gives, in either order and byte order.
    for (path, order, dtype, sep) in [("c", "C", "<i4", "."), ("f", "F", ">i4", "/")] {
        write_v2_array(&store, path, order, dtype, sep).await;
        let array = Array::open(Arc::clone(&store), &format!("/{path}"))
            .await
            .unwrap();
        let values: Vec<i32> = (2..4)
            .flat_map(|i| (3..6).map(move |j| 10 * i + j))
            .collect();
        array.write([2..4, 3..6], &values).await.unwrap();
        let stored = get(&store, &format!("{path}/1{sep}1")).await.unwrap();
        let want = chunk((5, 7), (2, 3), (1, 1), order, dtype.starts_with('>'), 77);
        assert_eq!(stored, want, "{path}");
        let whole: Vec<i32> = array.read(array.full_region()).await.unwrap();
        assert_eq!(whole, expected(5, 7, &[], (2, 3)), "{path}");
        // A partial write merges into the stored chunk.
        array.write([0..1, 0..1], &[-5i32]).await.unwrap();
        let back: Vec<i32> = array.read([0..2, 0..3]).await.unwrap();
        assert_eq!(back, [-5, 1, 2, 10, 11, 12], "{path}");
    }
}

#[tokio::test]
async fn attributes_and_resizes_of_v2_arrays_rewrite_only_their_documents() {
    let store = Arc::new(MemoryStore::new());
    write_v2_array(&store, "a", "C", "<i4", ".").await;
    // v2 readers ignore keys they do not know; a resize keeps them.
    let mut doc = get_json(&store, "a/.zarray").await;
    doc["x_written_by"] = json!("someone else");
    put_json(&store, "a/.zarray", doc.clone()).await;
    let mut array = Array::open(Arc::clone(&store), "/a").await.unwrap();
    let attributes = json!({"units": "K"}).as_object().unwrap().clone();
    array.set_attributes(attributes.clone()).await.unwrap();
    assert_eq!(get_json(&store, "a/.zattrs").await, json!({"units": "K"}));
    assert_eq!(get_json(&store, "a/.zarray").await, doc, "unchanged");
    assert!(get(&store, "a/zarr.json").await.is_none());

    array.resize(vec![2, 2]).await.unwrap();
    doc["shape"] = json!([2, 2]);
    assert_eq!(get_json(&store, "a/.zarray").await, doc);
    assert!(get(&store, "a/0.1").await.is_none(), "outside: erased");
    let again = Array::open(Arc::clone(&store), "/a").await.unwrap();
    assert_eq!(again.shape(), [2, 2]);
    assert_eq!(again.attributes(), &attributes);
    array.resize(vec![3, 4]).await.unwrap();
    let grown: Vec<i32> = array.read(array.full_region()).await.unwrap();
    assert_eq!(grown, [0, 1, -1, -1, 10, 11, -1, -1, -1, -1, -1, -1]);
}

#[tokio::test]
async fn xarray_dimension_names_are_the_dimension_names_of_v2_arrays() {
    let store = Arc::new(MemoryStore::new());
    // As xarray writes it: a v2 array with its names in `.zattrs`.
    put_json(
        &store,
        "t/.zarray",
        zarray(&[2, 3], &[1, 3], "<i4", "C", json!({})),
    )
    .await;
    put_json(
        &store,
        "t/.zattrs",
        json!({"_ARRAY_DIMENSIONS": ["time", "x"], "units": "K"}),
    )
    .await;
    let mut array = Array::open(Arc::clone(&store), "/t").await.unwrap();
    let named = |names: &[&str]| Some(names.iter().map(|n| Some((*n).to_owned())).collect());
    assert_eq!(
        array.dimension_names().map(<[_]>::to_vec),
        named(&["time", "x"])
    );
    assert_eq!(
        array.attributes()["_ARRAY_DIMENSIONS"],
        json!(["time", "x"])
    );
    // Attribute changes keep the two together, and the store says the same.
    let renamed = json!({"_ARRAY_DIMENSIONS": ["t", "y"]});
    array
        .update_attributes(renamed.as_object().unwrap().clone())
        .await
        .unwrap();
    assert_eq!(
        array.dimension_names().map(<[_]>::to_vec),
        named(&["t", "y"])
    );
    let reopened = Array::open(Arc::clone(&store), "/t").await.unwrap();
    assert_eq!(reopened.dimension_names(), array.dimension_names());
    array
        .set_attributes(json!({"units": "K"}).as_object().unwrap().clone())
        .await
        .unwrap();
    assert_eq!(array.dimension_names(), None);
    assert_eq!(get_json(&store, "t/.zattrs").await, json!({"units": "K"}));
    // Not a list of one string per dimension: an attribute like any other, no names.
    for attribute in [json!(["only one"]), json!(["a", 1]), json!("a,b")] {
        put_json(&store, "t/.zattrs", json!({"_ARRAY_DIMENSIONS": attribute})).await;
        let array = Array::open(Arc::clone(&store), "/t").await.unwrap();
        assert_eq!(array.dimension_names(), None, "{attribute}");
        assert_eq!(array.attributes()["_ARRAY_DIMENSIONS"], attribute);
    }

    // Created as v2 with names: written to the attribute, as xarray writes them.
    let created = ArrayBuilder::new(vec![4, 4], DataType::UInt16, vec![2, 2])
        .zarr_format(ZarrFormat::V2)
        .dimension_names(["y", "x"])
        .attributes(json!({"units": "m"}).as_object().unwrap().clone())
        .create(Arc::clone(&store), "/c")
        .await
        .unwrap();
    assert_eq!(
        get_json(&store, "c/.zattrs").await,
        json!({"units": "m", "_ARRAY_DIMENSIONS": ["y", "x"]})
    );
    assert!(
        get_json(&store, "c/.zarray")
            .await
            .get("dimension_names")
            .is_none()
    );
    let opened = Array::open(Arc::clone(&store), "/c").await.unwrap();
    assert_eq!(opened.dimension_names(), created.dimension_names());
    assert_eq!(opened.metadata(), created.metadata());
    // The names given and the attribute given agree: fine.
    ArrayBuilder::new(vec![4], DataType::UInt16, vec![2])
        .zarr_format(ZarrFormat::V2)
        .dimension_names(["z"])
        .attributes(
            json!({"_ARRAY_DIMENSIONS": ["z"]})
                .as_object()
                .unwrap()
                .clone(),
        )
        .create(Arc::clone(&store), "/d")
        .await
        .unwrap();
    assert_eq!(
        get_json(&store, "d/.zattrs").await,
        json!({"_ARRAY_DIMENSIONS": ["z"]})
    );
}

#[tokio::test]
async fn v2_groups_take_attributes_and_v2_children() {
    let store = Arc::new(MemoryStore::new());
    put_json(&store, ".zgroup", json!({"zarr_format": 2})).await;
    let mut root = Group::open(Arc::clone(&store), "/").await.unwrap();
    root.set_attributes(json!({"title": "t"}).as_object().unwrap().clone())
        .await
        .unwrap();
    assert_eq!(get_json(&store, ".zattrs").await, json!({"title": "t"}));
    let child = root.create_group("new/deeper").await.unwrap();
    assert_eq!(child.zarr_format(), ZarrFormat::V2);
    assert_eq!(
        get_json(&store, "new/.zgroup").await,
        json!({"zarr_format": 2})
    );
    assert_eq!(get_json(&store, "new/deeper/.zattrs").await, json!({}));
    assert!(get(&store, "new/zarr.json").await.is_none());
    let array = ArrayBuilder::new(vec![3], DataType::UInt8, vec![2])
        .zarr_format(ZarrFormat::V2)
        .create(Arc::clone(&store), "/new/deeper/x")
        .await
        .unwrap();
    array.write(0..3, &[1u8, 2, 3]).await.unwrap();
    assert_eq!(&get(&store, "new/deeper/x/1").await.unwrap()[..], [3, 0]);
    let names: Vec<String> = root
        .tree()
        .await
        .unwrap()
        .iter()
        .map(|(path, _)| path.as_str().to_owned())
        .collect();
    assert_eq!(names, ["/new", "/new/deeper", "/new/deeper/x"]);
    // A v3 group written over the v2 root replaces it: nothing of v2 is left to shadow.
    Group::create_with(Arc::clone(&store), "/", zarr_core::GroupMetadata::new())
        .await
        .unwrap();
    assert!(get(&store, ".zgroup").await.is_none() && get(&store, ".zattrs").await.is_none());
    let root = Group::open(Arc::clone(&store), "/").await.unwrap();
    assert_eq!(root.zarr_format(), ZarrFormat::V3);
    assert!(root.attributes().is_empty());
}

#[test]
fn the_blocking_api_creates_v2_groups_and_arrays() {
    let store = Arc::new(MemoryStore::new());
    let group = blocking::Group::create_with_format(
        Arc::clone(&store),
        "/g",
        zarr_core::GroupMetadata::new(),
        ZarrFormat::V2,
    )
    .unwrap();
    let child = group.create_group("h").unwrap();
    assert_eq!(child.zarr_format(), ZarrFormat::V2);
    let array = blocking::Array::create(
        &ArrayBuilder::new(vec![2, 2], DataType::Float64, vec![1, 2])
            .zarr_format(ZarrFormat::V2)
            .transpose(vec![1, 0])
            .gzip(1),
        Arc::clone(&store),
        "/g/h/a",
    )
    .unwrap();
    array.write([0..2, 0..2], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let zarray = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(get_json(&store, "g/h/a/.zarray"));
    assert_eq!(zarray["order"], "F");
    assert_eq!(zarray["dtype"], "<f8");
    assert_eq!(zarray["compressor"], json!({"id": "gzip", "level": 1}));
    assert_eq!(zarray["filters"], Value::Null);
    assert_eq!(zarray["fill_value"], 0.0);
    let back = blocking::Array::open(store, "/g/h/a").unwrap();
    assert_eq!(back.zarr_format(), ZarrFormat::V2);
    let values: Vec<f64> = back.read([1..2, 0..2]).unwrap();
    assert_eq!(values, [3.0, 4.0]);
}

#[tokio::test]
async fn arrays_zarr_v2_cannot_store_are_refused_before_anything_is_written() {
    let store = Arc::new(MemoryStore::new());
    let v2 = |builder: ArrayBuilder| builder.zarr_format(ZarrFormat::V2);
    let base = || ArrayBuilder::new(vec![4, 4], DataType::UInt16, vec![2, 2]);
    for (builder, what) in [
        (v2(base().sharding(vec![1, 1])), "sharding_indexed"),
        (
            v2(base().dimension_names_opt([Some("y"), None])),
            "dimension_names",
        ),
        (
            v2(base().dimension_names(["y", "x"]).attributes(
                json!({"_ARRAY_DIMENSIONS": ["a", "b"]})
                    .as_object()
                    .unwrap()
                    .clone(),
            )),
            r#"hold ["a","b"] instead"#,
        ),
        (
            v2(ArrayBuilder::new(vec![4], DataType::BFloat16, vec![2])),
            "bfloat16",
        ),
        (
            v2(base().sharding_transformer(vec![2, 2])),
            "storage_transformers",
        ),
        (
            v2(base().chunk_key_encoding(zarr_core::ChunkKeyEncoding::default())),
            "chunk_key_encoding",
        ),
    ] {
        let e = builder
            .create(Arc::clone(&store), "/x/y")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains(what) && e.contains("Zarr v2"), "{what}: {e}");
    }
    assert_eq!(store.len(), 0, "nothing was written");
}

#[tokio::test]
async fn bad_v2_metadata_and_chunks_are_typed_errors_naming_the_node() {
    let store = Arc::new(MemoryStore::new());
    let cases = [
        ("structured", json!({"dtype": [["a", "<i4"]]}), "structured"),
        ("base64", json!({"compressor": {"id": "base64"}}), "base64"),
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
        let text = zarr_array::ErrorChain(&e).to_string();
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
