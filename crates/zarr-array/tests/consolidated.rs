//! Consolidated metadata: `Group::consolidate_metadata` writes it (Zarr v3 inline
//! `consolidated_metadata`, Zarr v2 `.zmetadata`), `Group::open_consolidated` answers from
//! it without store requests. (zarr-python reads what we consolidate, and we read what it
//! consolidates, in `interop.rs`.) `Group::remove` erases a node and everything below it,
//! taking the removed nodes out of the group's record first.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder, Error, Group, Node, blocking};
use zarr_core::DataType;
use zarr_core::v2::ZarrFormat;
use zarr_store::{
    ListableStore, MemoryStore, ReadableStore, ReadableStoreExt, RecordingStore, StoreKey,
    WritableStore,
};

type Store = RecordingStore<MemoryStore>;

async fn json_at(store: &impl ReadableStore, key: &str) -> Value {
    let bytes = store
        .get(&StoreKey::try_new(key).unwrap())
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no {key}"));
    serde_json::from_slice(&bytes).unwrap()
}

/// `/` (attributes `{"title": "root"}`), `/b` (float64, 3), `/g` (attributes `{"x": 1}`),
/// `/g/a` (int32, 4 in chunks of 2, holding 1..=4), `/g/h`; in `format`.
async fn hierarchy(format: ZarrFormat) -> (Arc<Store>, Group<Store>) {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let root = Group::create_with_format(
        Arc::clone(&store),
        "/",
        zarr_core::GroupMetadata::new()
            .with_attributes(json!({"title": "root"}).as_object().unwrap().clone()),
        format,
    )
    .await
    .unwrap();
    let mut g = root.create_group("g").await.unwrap();
    g.set_attributes(json!({"x": 1}).as_object().unwrap().clone())
        .await
        .unwrap();
    g.create_group("h").await.unwrap();
    let a = ArrayBuilder::new(vec![4], DataType::Int32, vec![2])
        .zarr_format(format)
        .attribute("units", "m")
        .create(Arc::clone(&store), "/g/a")
        .await
        .unwrap();
    a.write(0..4, &[1i32, 2, 3, 4]).await.unwrap();
    ArrayBuilder::new(vec![3], DataType::Float64, vec![3])
        .zarr_format(format)
        .create(Arc::clone(&store), "/b")
        .await
        .unwrap();
    (store, root)
}

/// The paths of a group's children, from `children` (one listing, or its record).
async fn child_paths(group: &Group<Store>) -> Vec<String> {
    group
        .children()
        .await
        .unwrap()
        .iter()
        .map(|n| n.path().as_str().to_owned())
        .collect()
}

fn paths(tree: &[(zarr_core::NodePath, zarr_core::NodeMetadata)]) -> Vec<&str> {
    tree.iter().map(|(p, _)| p.as_str()).collect()
}

#[tokio::test]
async fn v3_consolidation_writes_zarr_pythons_layout() {
    let (store, mut root) = hierarchy(ZarrFormat::V3).await;
    // Attributes written through another handle after `root` was opened are kept.
    let mut other = Group::open(Arc::clone(&store), "/").await.unwrap();
    other
        .update_attributes(json!({"late": true}).as_object().unwrap().clone())
        .await
        .unwrap();

    assert_eq!(root.consolidate_metadata().await.unwrap(), 4);
    let doc = json_at(&*store, "zarr.json").await;
    assert_eq!(doc["attributes"], json!({"title": "root", "late": true}));
    assert_eq!(root.attributes()["late"], true);
    let consolidated = &doc["consolidated_metadata"];
    assert_eq!(consolidated["kind"], "inline");
    assert_eq!(consolidated["must_understand"], false);
    let entries = consolidated["metadata"].as_object().unwrap();
    let mut keys: Vec<&str> = entries.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["b", "g", "g/a", "g/h"]);
    // Each entry is the node's own document; groups below carry an empty record of their
    // own, as zarr-python writes them.
    assert_eq!(entries["g/a"], json_at(&*store, "g/a/zarr.json").await);
    assert_eq!(entries["g"]["attributes"], json!({"x": 1}));
    assert_eq!(
        entries["g/h"]["consolidated_metadata"],
        json!({"kind": "inline", "must_understand": false, "metadata": {}})
    );
    // The groups below are not rewritten.
    assert!(
        json_at(&*store, "g/zarr.json")
            .await
            .get("consolidated_metadata")
            .is_none()
    );
    // `tree` of a plain-opened root now reads the record, and agrees with the listing.
    let reopened = Group::open(Arc::clone(&store), "/").await.unwrap();
    store.clear();
    let tree = reopened.tree().await.unwrap();
    assert_eq!(store.stats().calls(), 0);
    assert_eq!(paths(&tree), ["/b", "/g", "/g/a", "/g/h"]);
    let listed = reopened.tree_listed().await.unwrap();
    assert_eq!(paths(&listed), paths(&tree));
}

#[tokio::test]
async fn open_consolidated_answers_without_store_requests() {
    let (store, mut root) = hierarchy(ZarrFormat::V3).await;
    root.consolidate_metadata().await.unwrap();

    store.clear();
    let root = Group::open_consolidated(Arc::clone(&store), "/")
        .await
        .unwrap();
    assert!(root.is_consolidated());
    assert_eq!(store.stats().gets, 1, "{:?}", store.operations());

    store.clear();
    let children = root.children().await.unwrap();
    let names: Vec<&str> = children.iter().map(|n| n.path().as_str()).collect();
    assert_eq!(names, ["/b", "/g"]);
    let g = root.open_group("g").await.unwrap();
    assert!(g.is_consolidated());
    assert_eq!(g.attributes()["x"], 1);
    assert_eq!(child_paths(&g).await, ["/g/a", "/g/h"]);
    assert_eq!(paths(&g.tree().await.unwrap()), ["/g/a", "/g/h"]);
    let a = g.open_array("a").await.unwrap();
    let same = root.open_array("g/a").await.unwrap();
    assert_eq!(a.metadata(), same.metadata());
    assert_eq!(a.attributes()["units"], "m");
    assert_eq!(store.stats().calls(), 0, "{:?}", store.operations());
    // Data reads go to the store as usual: only the chunks.
    assert_eq!(a.read::<i32>(0..4).await.unwrap(), [1, 2, 3, 4]);
    assert_eq!(store.stats().gets, 2);

    // Asking for the wrong kind of node is a typed error, from the record too.
    assert!(matches!(
        root.open_array("g").await,
        Err(Error::WrongNodeType { .. })
    ));
    assert!(matches!(
        root.open_group("b").await,
        Err(Error::WrongNodeType { .. })
    ));
}

#[tokio::test]
async fn the_record_lists_new_nodes_once_consolidated_again() {
    let (store, mut root) = hierarchy(ZarrFormat::V3).await;
    root.consolidate_metadata().await.unwrap();
    ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
        .create(Arc::clone(&store), "/late")
        .await
        .unwrap();

    let snapshot = Group::open_consolidated(Arc::clone(&store), "/")
        .await
        .unwrap();
    // A node the record does not list is opened from the store.
    assert_eq!(snapshot.open_array("late").await.unwrap().shape(), &[2]);
    assert_eq!(snapshot.children().await.unwrap().len(), 2);
    // The store's current state, without the record.
    assert_eq!(root.children().await.unwrap().len(), 3);

    let mut snapshot = snapshot;
    assert_eq!(snapshot.consolidate_metadata().await.unwrap(), 5);
    assert_eq!(snapshot.children().await.unwrap().len(), 3);
    let again = Group::open_consolidated(store, "/").await.unwrap();
    assert_eq!(again.open_array("late").await.unwrap().shape(), &[2]);
}

/// The recorded metadata of `path` in the record of the group at `group`, as a fresh
/// `open_consolidated` sees it: the array's shape and attributes, or the group's attributes.
async fn recorded(store: &Arc<Store>, group: &str, path: &str) -> (Option<Vec<u64>>, Value) {
    let group = Group::open_consolidated(Arc::clone(store), group)
        .await
        .unwrap();
    // Answered from the record: no store request.
    store.clear();
    let answer = if path.is_empty() {
        (None, Value::Object(group.attributes().clone()))
    } else {
        match group.open_array(path).await {
            Ok(a) => (
                Some(a.shape().to_vec()),
                Value::Object(a.attributes().clone()),
            ),
            Err(Error::WrongNodeType { .. }) => {
                let g = group.open_group(path).await.unwrap();
                (None, Value::Object(g.attributes().clone()))
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(store.stats().calls(), 0, "{:?}", store.operations());
    answer
}

/// Changing a node's metadata (attributes, resize, append) gives every consolidated record
/// above it that lists it the new metadata, in both formats, so that readers of the
/// records never see an old shape.
#[tokio::test]
async fn metadata_changes_refresh_the_records_that_list_the_node() {
    for format in [ZarrFormat::V3, ZarrFormat::V2] {
        let (store, mut root) = hierarchy(format).await;
        let mut g = Group::open(Arc::clone(&store), "/g").await.unwrap();
        // Two records list /g/a: the root's and /g's own.
        g.consolidate_metadata().await.unwrap();
        root.consolidate_metadata().await.unwrap();

        let mut a = Array::open(Arc::clone(&store), "/g/a").await.unwrap();
        a.resize(vec![6]).await.unwrap();
        a.append(0, &[5i32, 6]).await.unwrap();
        a.update_attributes(json!({"units": "km", "n": 2}).as_object().unwrap().clone())
            .await
            .unwrap();
        g.set_attributes(json!({"x": 2}).as_object().unwrap().clone())
            .await
            .unwrap();
        let mut top = Group::open(Arc::clone(&store), "/").await.unwrap();
        top.update_attributes(json!({"edited": true}).as_object().unwrap().clone())
            .await
            .unwrap();

        let array = (Some(vec![8]), json!({"units": "km", "n": 2}));
        assert_eq!(recorded(&store, "/", "g/a").await, array, "{format}");
        assert_eq!(recorded(&store, "/g", "a").await, array, "{format}");
        assert_eq!(
            recorded(&store, "/", "g").await,
            (None, json!({"x": 2})),
            "{format}"
        );
        // A v2 group's own `.zmetadata` records its `.zattrs` too.
        assert_eq!(
            recorded(&store, "/", "").await,
            (None, json!({"title": "root", "edited": true})),
            "{format}"
        );
        // The appended values read through the record's metadata.
        let fresh = Group::open_consolidated(Arc::clone(&store), "/")
            .await
            .unwrap();
        let a = fresh.open_array("g/a").await.unwrap();
        assert_eq!(
            a.read::<i32>(0..8).await.unwrap(),
            [1, 2, 3, 4, 0, 0, 5, 6],
            "{format}"
        );
        // What is recorded is what a new consolidation records.
        let before = match format {
            ZarrFormat::V3 => json_at(&*store, "zarr.json").await,
            _ => json_at(&*store, ".zmetadata").await,
        };
        root.consolidate_metadata().await.unwrap();
        let after = match format {
            ZarrFormat::V3 => json_at(&*store, "zarr.json").await,
            _ => json_at(&*store, ".zmetadata").await,
        };
        assert_eq!(before, after, "{format}");
    }
}

/// A record nested in a group entry is refreshed too; a change to a node no record lists
/// rewrites nothing but the node; a group above whose metadata does not parse is passed over.
#[tokio::test]
async fn refreshes_reach_nested_records_and_leave_the_rest_alone() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = json!({"zarr_format": 3, "node_type": "array", "shape": [2],
        "data_type": "uint8", "chunk_grid": {"name": "regular",
        "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"},
        "fill_value": 7, "codecs": [{"name": "bytes"}]});
    let group = json!({"zarr_format": 3, "node_type": "group"});
    let doc = json!({"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
        "kind": "inline", "must_understand": false, "metadata": {
            "g": {"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
                "kind": "inline", "must_understand": false,
                "metadata": {"a": array, "b": array}}}}}});
    for (key, value) in [
        ("zarr.json", &doc),
        ("g/zarr.json", &group),
        ("g/a/zarr.json", &array),
        ("other/zarr.json", &group),
        ("other/c/zarr.json", &array),
    ] {
        store
            .set(
                &StoreKey::new(key),
                Bytes::from(serde_json::to_vec(value).unwrap()),
            )
            .await
            .unwrap();
    }
    let mut a = Array::open(Arc::clone(&store), "/g/a").await.unwrap();
    a.resize(vec![5]).await.unwrap();
    let record = json_at(&*store, "zarr.json").await;
    let nested = &record["consolidated_metadata"]["metadata"]["g"]["consolidated_metadata"];
    assert_eq!(nested["metadata"]["a"]["shape"], json!([5]));
    assert_eq!(nested["metadata"]["b"]["shape"], json!([2]));
    let fresh = Group::open_consolidated(Arc::clone(&store), "/")
        .await
        .unwrap();
    assert_eq!(fresh.open_array("g/a").await.unwrap().shape(), &[5]);

    // Not listed anywhere: one read per group above, and only the node's zarr.json written.
    let mut c = Array::open(Arc::clone(&store), "/other/c").await.unwrap();
    store.clear();
    c.resize(vec![4]).await.unwrap();
    let stats = store.stats();
    assert_eq!(stats.sets, 1, "{:?}", store.operations());
    let unchanged = json_at(&*store, "zarr.json").await;
    assert_eq!(unchanged, record);

    // A group above whose zarr.json does not parse: the change still lands.
    store
        .set(
            &StoreKey::new("other/zarr.json"),
            Bytes::from_static(b"{oops"),
        )
        .await
        .unwrap();
    c.resize(vec![3]).await.unwrap();
    assert_eq!(
        json_at(&*store, "other/c/zarr.json").await["shape"],
        json!([3])
    );
}

/// Replacing a node with `ArrayBuilder::overwrite` takes it (and what was below it) out of
/// the records, which must not describe the new array with the old one's metadata;
/// re-creating a group gives the records its new attributes.
#[tokio::test]
async fn replaced_nodes_leave_or_refresh_the_records() {
    for format in [ZarrFormat::V3, ZarrFormat::V2] {
        let (store, mut root) = hierarchy(format).await;
        root.consolidate_metadata().await.unwrap();
        ArrayBuilder::new(vec![7], DataType::UInt8, vec![7])
            .zarr_format(format)
            .overwrite(true)
            .create(Arc::clone(&store), "/g")
            .await
            .unwrap();
        let fresh = Group::open_consolidated(Arc::clone(&store), "/")
            .await
            .unwrap();
        assert_eq!(paths(&fresh.tree().await.unwrap()), ["/b"], "{format}");
        // Not in the record: opened from the store, as it is now.
        assert_eq!(fresh.open_array("g").await.unwrap().shape(), &[7]);

        let renewed = zarr_core::GroupMetadata::new()
            .with_attributes(json!({"title": "renewed"}).as_object().unwrap().clone());
        Group::create_with_format(Arc::clone(&store), "/b", renewed, format)
            .await
            .unwrap();
        let (shape, attributes) = recorded(&store, "/", "b").await;
        assert_eq!(
            (shape, attributes),
            (None, json!({"title": "renewed"})),
            "{format}"
        );
    }
}

#[tokio::test]
async fn a_subgroup_consolidates_its_own_hierarchy() {
    let (store, _) = hierarchy(ZarrFormat::V3).await;
    let mut g = Group::open(Arc::clone(&store), "/g").await.unwrap();
    assert_eq!(g.consolidate_metadata().await.unwrap(), 2);
    let doc = json_at(&*store, "g/zarr.json").await;
    let entries = doc["consolidated_metadata"]["metadata"]
        .as_object()
        .unwrap();
    let mut keys: Vec<&str> = entries.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["a", "h"]);
    let g = Group::open_consolidated(store, "/g").await.unwrap();
    assert_eq!(
        g.open_array("a")
            .await
            .unwrap()
            .read::<i32>(1..3)
            .await
            .unwrap(),
        [2, 3]
    );
}

#[tokio::test]
async fn v2_consolidation_writes_zmetadata() {
    let (store, mut root) = hierarchy(ZarrFormat::V2).await;
    assert_eq!(root.consolidate_metadata().await.unwrap(), 4);
    let doc = json_at(&*store, ".zmetadata").await;
    assert_eq!(doc["zarr_consolidated_format"], 1);
    let entries = doc["metadata"].as_object().unwrap();
    let mut keys: Vec<&str> = entries.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            ".zattrs",
            ".zgroup",
            "b/.zarray",
            "b/.zattrs",
            "g/.zattrs",
            "g/.zgroup",
            "g/a/.zarray",
            "g/a/.zattrs",
            "g/h/.zattrs",
            "g/h/.zgroup",
        ]
    );
    // The documents as stored, byte for byte through JSON.
    assert_eq!(
        entries["g/a/.zarray"],
        json_at(&*store, "g/a/.zarray").await
    );
    assert_eq!(entries[".zattrs"], json!({"title": "root"}));
    // No zarr.json anywhere: the hierarchy stays Zarr v2.
    assert!(
        !store
            .inner()
            .exists(&StoreKey::new("zarr.json"))
            .await
            .unwrap()
    );

    store.clear();
    let root = Group::open_consolidated(Arc::clone(&store), "/")
        .await
        .unwrap();
    let opening = store.stats().gets;
    let a = root.open_array("g/a").await.unwrap();
    assert_eq!(a.zarr_format(), ZarrFormat::V2);
    let g = root.open_group("g").await.unwrap();
    assert_eq!(g.zarr_format(), ZarrFormat::V2);
    assert_eq!(paths(&root.tree().await.unwrap()).len(), 4);
    assert_eq!(store.stats().gets, opening, "{:?}", store.operations());
    assert_eq!(a.read::<i32>(0..4).await.unwrap(), [1, 2, 3, 4]);
    // A v2 array opened from the record is written as v2.
    a.write(0..1, &[9i32]).await.unwrap();
    assert!(store.inner().exists(&StoreKey::new("g/a/0")).await.unwrap());
}

#[tokio::test]
async fn mixed_formats_are_refused_and_nothing_is_written() {
    let (store, mut root) = hierarchy(ZarrFormat::V3).await;
    Group::create_with_format(
        Arc::clone(&store),
        "/old",
        zarr_core::GroupMetadata::new(),
        ZarrFormat::V2,
    )
    .await
    .unwrap();
    let before = json_at(&*store, "zarr.json").await;
    let e = root.consolidate_metadata().await.unwrap_err();
    assert!(matches!(e, Error::Consolidated { .. }), "{e}");
    assert!(e.to_string().contains("/old"), "{e}");
    assert_eq!(json_at(&*store, "zarr.json").await, before);
}

#[tokio::test]
async fn missing_or_malformed_records_are_typed_errors() {
    let (store, _) = hierarchy(ZarrFormat::V3).await;
    let e = Group::open_consolidated(Arc::clone(&store), "/")
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Consolidated { .. }), "{e}");
    let (v2_store, _) = hierarchy(ZarrFormat::V2).await;
    let e = Group::open_consolidated(v2_store, "/").await.unwrap_err();
    assert!(e.to_string().contains(".zmetadata"), "{e}");

    // An entry that is not node metadata is named.
    let bad = json!({"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
        "kind": "inline", "must_understand": false,
        "metadata": {"ok": {"zarr_format": 3, "node_type": "group"},
                     "broken": {"zarr_format": 3, "node_type": "array"}}}});
    store
        .set(
            &StoreKey::new("zarr.json"),
            Bytes::from(serde_json::to_vec(&bad).unwrap()),
        )
        .await
        .unwrap();
    let e = Group::open_consolidated(store, "/").await.unwrap_err();
    assert!(e.to_string().contains("broken"), "{e}");
}

#[tokio::test]
async fn records_nested_in_group_entries_are_read() {
    // A layout other writers may use: the nodes below `g` recorded in `g`'s entry.
    let store = Arc::new(MemoryStore::new());
    let array = json!({"zarr_format": 3, "node_type": "array", "shape": [2],
        "data_type": "uint8", "chunk_grid": {"name": "regular",
        "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"},
        "fill_value": 7, "codecs": [{"name": "bytes"}]});
    let doc = json!({"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
        "kind": "inline", "must_understand": false, "metadata": {
            "g": {"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
                "kind": "inline", "must_understand": false, "metadata": {"a": array}}}}}});
    store
        .set(
            &StoreKey::new("zarr.json"),
            Bytes::from(serde_json::to_vec(&doc).unwrap()),
        )
        .await
        .unwrap();
    let root = Group::open_consolidated(store, "/").await.unwrap();
    assert_eq!(paths(&root.tree().await.unwrap()), ["/g", "/g/a"]);
    // Nothing is stored but the root's zarr.json: the array comes from the record, and
    // reads as its fill value.
    let a = root.open_array("g/a").await.unwrap();
    assert_eq!(a.read::<u8>(0..2).await.unwrap(), [7, 7]);
    let Node::Group(g) = &root.children().await.unwrap()[0] else {
        panic!("g is a group");
    };
    assert_eq!(g.children().await.unwrap().len(), 1);
}

#[test]
fn blocking_api() {
    let store = Arc::new(MemoryStore::new());
    let mut root = blocking::Group::create(Arc::clone(&store), "/").unwrap();
    root.create_group("g").unwrap();
    blocking::Array::create(
        &ArrayBuilder::new(vec![2], DataType::UInt16, vec![2]),
        Arc::clone(&store),
        "/g/a",
    )
    .unwrap()
    .write(0..2, &[5u16, 6])
    .unwrap();
    assert_eq!(root.consolidate_metadata().unwrap(), 2);
    let mut root = blocking::Group::open_consolidated(Arc::clone(&store), "/").unwrap();
    assert!(root.is_consolidated());
    let g = root.open_group("g").unwrap();
    assert_eq!(
        g.open_array("a").unwrap().read::<u16>(0..2).unwrap(),
        [5, 6]
    );
    root.remove("g/a").unwrap();
    assert!(matches!(
        root.open_array("g/a"),
        Err(Error::NodeNotFound { .. })
    ));
    assert!(matches!(
        blocking::Array::open(store, "/g/a"),
        Err(Error::NodeNotFound { .. })
    ));
}

#[tokio::test]
async fn arrays_with_unknown_codecs_are_listed_and_recorded() {
    let store = Arc::new(MemoryStore::new());
    let mut root = Group::create(Arc::clone(&store), "/").await.unwrap();
    let doc = json!({"zarr_format": 3, "node_type": "array", "shape": [2],
        "data_type": "uint8", "chunk_grid": {"name": "regular",
        "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"},
        "fill_value": 0, "codecs": [{"name": "bytes"}, {"name": "not_a_codec"}]});
    store
        .set(
            &StoreKey::new("odd/zarr.json"),
            Bytes::from(serde_json::to_vec(&doc).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(paths(&root.tree_listed().await.unwrap()), ["/odd"]);
    assert!(root.children().await.is_err());
    // Consolidation records the document as stored; opening the array still fails, naming
    // the codec.
    assert_eq!(root.consolidate_metadata().await.unwrap(), 1);
    let root = Group::open_consolidated(store, "/").await.unwrap();
    let e = root.open_array("odd").await.unwrap_err();
    assert!(
        zarr_array::ErrorChain(&e)
            .to_string()
            .contains("not_a_codec"),
        "{e}"
    );
}

async fn keys(store: &Store) -> Vec<String> {
    let mut keys: Vec<String> = store
        .inner()
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    keys.sort_unstable();
    keys
}

/// `Group::remove` erases the node's metadata, chunks and descendants, and nothing else (a
/// sibling whose name starts with the same letters stays); a missing or invalid name is a
/// typed error that erases nothing.
#[tokio::test]
async fn remove_erases_a_node_and_everything_below_it() {
    for format in [ZarrFormat::V3, ZarrFormat::V2] {
        let (store, mut root) = hierarchy(format).await;
        let gx = ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
            .zarr_format(format)
            .create(Arc::clone(&store), "/gx")
            .await
            .unwrap();
        gx.write(0..2, &[1u8, 2]).await.unwrap();
        let before = keys(&store).await;
        assert!(before.iter().any(|k| k.starts_with("g/a/")), "{before:?}");

        root.remove("g").await.unwrap();
        let after = keys(&store).await;
        let expected: Vec<String> = before
            .iter()
            .filter(|k| !k.starts_with("g/"))
            .cloned()
            .collect();
        assert_eq!(after, expected, "{format}");
        assert!(after.iter().any(|k| k.starts_with("gx/")), "{after:?}");
        assert_eq!(child_paths(&root).await, ["/b", "/gx"]);

        for bad in ["g", "g/a", "nothing"] {
            let err = root.remove(bad).await.unwrap_err();
            assert!(matches!(err, Error::NodeNotFound { .. }), "{bad}: {err:?}");
        }
        for bad in ["", "/b", "b/.."] {
            let err = root.remove(bad).await.unwrap_err();
            assert!(matches!(err, Error::Core(_)), "{bad:?}: {err:?}");
        }
        assert_eq!(keys(&store).await, after, "failed removals erase nothing");
    }
}

/// A removed node leaves the group's consolidated record (v3 inline, v2 `.zmetadata`) and
/// the record of a handle opened with `open_consolidated`; other entries stay.
#[tokio::test]
async fn remove_takes_the_removed_nodes_out_of_the_record() {
    for format in [ZarrFormat::V3, ZarrFormat::V2] {
        let (store, mut root) = hierarchy(format).await;
        root.create_group("gx").await.unwrap();
        root.consolidate_metadata().await.unwrap();
        let mut root = Group::open_consolidated(Arc::clone(&store), "/")
            .await
            .unwrap();
        root.remove("g").await.unwrap();

        let recorded: Vec<String> = match format {
            ZarrFormat::V3 => {
                json_at(&*store, "zarr.json").await["consolidated_metadata"]["metadata"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect()
            }
            ZarrFormat::V2 => json_at(&*store, ".zmetadata").await["metadata"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect(),
        };
        let mut recorded = recorded;
        recorded.sort_unstable();
        let expected: &[&str] = match format {
            ZarrFormat::V3 => &["b", "gx"],
            ZarrFormat::V2 => &[
                ".zattrs",
                ".zgroup",
                "b/.zarray",
                "b/.zattrs",
                "gx/.zattrs",
                "gx/.zgroup",
            ],
        };
        assert_eq!(recorded, expected, "{format}");

        // This handle's record, and a fresh one, no longer list them.
        assert!(matches!(
            root.open_array("g/a").await,
            Err(Error::NodeNotFound { .. })
        ));
        assert_eq!(paths(&root.tree().await.unwrap()), ["/b", "/gx"]);
        let fresh = Group::open_consolidated(Arc::clone(&store), "/")
            .await
            .unwrap();
        assert_eq!(paths(&fresh.tree().await.unwrap()), ["/b", "/gx"]);
        assert!(matches!(
            fresh.open_group("g").await,
            Err(Error::NodeNotFound { .. })
        ));
    }
}

/// Removing through a subgroup takes the nodes out of the records of every group above it
/// too, nested records included.
#[tokio::test]
async fn remove_takes_the_removed_nodes_out_of_records_further_up() {
    for format in [ZarrFormat::V3, ZarrFormat::V2] {
        let (store, mut root) = hierarchy(format).await;
        root.consolidate_metadata().await.unwrap();
        let mut g = Group::open(Arc::clone(&store), "/g").await.unwrap();
        g.remove("a").await.unwrap();
        let fresh = Group::open_consolidated(Arc::clone(&store), "/")
            .await
            .unwrap();
        assert_eq!(
            paths(&fresh.tree().await.unwrap()),
            ["/b", "/g", "/g/h"],
            "{format}"
        );
        assert!(matches!(
            fresh.open_array("g/a").await,
            Err(Error::NodeNotFound { .. })
        ));
    }

    // A record nested in a group's entry, as other writers may lay it out.
    let store = Arc::new(MemoryStore::new());
    let array = json!({"zarr_format": 3, "node_type": "array", "shape": [2],
        "data_type": "uint8", "chunk_grid": {"name": "regular",
        "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"},
        "fill_value": 7, "codecs": [{"name": "bytes"}]});
    let group = json!({"zarr_format": 3, "node_type": "group"});
    let doc = json!({"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
        "kind": "inline", "must_understand": false, "metadata": {
            "g": {"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
                "kind": "inline", "must_understand": false,
                "metadata": {"a": array, "b": array}}}}}});
    for (key, value) in [
        ("zarr.json", &doc),
        ("g/zarr.json", &group),
        ("g/a/zarr.json", &array),
    ] {
        store
            .set(
                &StoreKey::new(key),
                Bytes::from(serde_json::to_vec(value).unwrap()),
            )
            .await
            .unwrap();
    }
    let mut root = Group::open(Arc::clone(&store), "/").await.unwrap();
    root.remove("g/a").await.unwrap();
    let record = json_at(&*store, "zarr.json").await;
    let nested = &record["consolidated_metadata"]["metadata"]["g"]["consolidated_metadata"];
    let names: Vec<&String> = nested["metadata"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["b"]);
    assert!(root.metadata().consolidated_metadata.is_some());
    let fresh = Group::open_consolidated(store, "/").await.unwrap();
    assert_eq!(paths(&fresh.tree().await.unwrap()), ["/g", "/g/b"]);
}

/// Nodes below a consolidated group changing their metadata at the same time, in one
/// process, through handles of their own, while the group's own attributes change too:
/// the record ends up with every change, and the group with every attribute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_changes_below_a_record_all_reach_it() {
    for format in [ZarrFormat::V3, ZarrFormat::V2] {
        let store = Arc::new(RecordingStore::new(MemoryStore::new()));
        let mut root = Group::create_with_format(
            Arc::clone(&store),
            "/",
            zarr_core::GroupMetadata::new(),
            format,
        )
        .await
        .unwrap();
        for i in 0..8 {
            ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
                .zarr_format(format)
                .create(Arc::clone(&store), &format!("/a{i}"))
                .await
                .unwrap();
        }
        root.consolidate_metadata().await.unwrap();
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    let mut array = Array::open(Arc::clone(&store), &format!("/a{i}"))
                        .await
                        .unwrap();
                    array.set_attribute("i", &i).await.unwrap();
                    let mut group = Group::open(store, "/").await.unwrap();
                    group.set_attribute(&format!("g{i}"), &i).await.unwrap();
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let group = Group::open(Arc::clone(&store), "/").await.unwrap();
        assert_eq!(
            group.attributes().len(),
            8,
            "{format}: {:?}",
            group.attributes()
        );
        let consolidated = Group::open_consolidated(Arc::clone(&store), "/")
            .await
            .unwrap();
        assert_eq!(consolidated.attributes().len(), 8, "{format}");
        for i in 0..8 {
            let array = consolidated.open_array(&format!("a{i}")).await.unwrap();
            assert_eq!(
                array.attribute::<i32>("i").unwrap(),
                Some(i),
                "{format}: a{i}"
            );
        }
    }
}
