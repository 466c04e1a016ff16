//! Fuzz-style properties of hierarchies: a store holding any mix of valid, damaged and
//! contradictory metadata documents (v3 `zarr.json`, v2 `.zarray`/`.zgroup`/`.zattrs`,
//! `.zmetadata`, inline consolidated records) never makes opening, listing, walking or
//! consolidating a hierarchy panic: each call answers or returns an error.

use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;
use serde_json::{Value, json};
use zarr_array::blocking::{Array, Group};
use zarr_store::{MemoryStore, StoreKey, WritableStore};

/// Node paths the documents are placed under.
const PATHS: [&str; 6] = ["", "a", "a/b", "a/b/c", "d", "a/d"];

/// Documents: valid ones of each kind, and their damaged forms.
fn documents() -> Vec<(&'static str, Value)> {
    let array = json!({
        "zarr_format": 3, "node_type": "array", "shape": [4, 3], "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    });
    let group = json!({"zarr_format": 3, "node_type": "group", "attributes": {"k": 1}});
    let consolidated = json!({
        "zarr_format": 3, "node_type": "group", "attributes": {},
        "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {
            "b": {"zarr_format": 3, "node_type": "group", "attributes": {},
                  "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {}}},
            "b/c": array.clone(),
            "x/y": {"zarr_format": 3, "node_type": "array"},
        }},
    });
    let zarray = json!({
        "zarr_format": 2, "shape": [5], "chunks": [2], "dtype": "<u2", "compressor": null,
        "fill_value": 0, "order": "C", "filters": null,
    });
    let zmetadata = json!({"zarr_consolidated_format": 1, "metadata": {
        ".zgroup": {"zarr_format": 2},
        "b/.zarray": zarray.clone(),
        "b/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        "c/.zgroup": {"zarr_format": 3},
    }});
    vec![
        ("zarr.json", array),
        ("zarr.json", group),
        ("zarr.json", consolidated),
        ("zarr.json", json!({"zarr_format": 3, "node_type": "array"})),
        ("zarr.json", json!({"zarr_format": 2, "node_type": "group"})),
        (".zarray", zarray),
        (".zgroup", json!({"zarr_format": 2})),
        (".zgroup", json!({"zarr_format": 3})),
        (".zattrs", json!({"a": [1, 2]})),
        (".zattrs", json!([1, 2])),
        (".zmetadata", zmetadata),
        (
            ".zmetadata",
            json!({"zarr_consolidated_format": 1, "metadata": []}),
        ),
    ]
}

/// One document placed in the store: which document, where, and how it is damaged.
#[derive(Debug, Clone)]
struct Placed {
    document: usize,
    path: usize,
    /// 0: as is; 1: truncated; 2: a field replaced by `null`; 3: not JSON at all.
    damage: u8,
    cut: usize,
}

fn placed() -> impl Strategy<Value = Placed> {
    (0usize..64, 0..PATHS.len(), 0u8..6, 0usize..400).prop_map(|(document, path, damage, cut)| {
        Placed {
            document,
            path,
            damage: damage.saturating_sub(2),
            cut,
        }
    })
}

fn bytes_of(value: &Value, damage: u8, cut: usize) -> Vec<u8> {
    let text = value.to_string().into_bytes();
    match damage {
        1 => text[..cut % (text.len() + 1)].to_vec(),
        2 => {
            let mut value = value.clone();
            if let Some(map) = value.as_object_mut() {
                let keys: Vec<String> = map.keys().cloned().collect();
                if !keys.is_empty() {
                    map.insert(keys[cut % keys.len()].clone(), Value::Null);
                }
            }
            value.to_string().into_bytes()
        }
        3 => vec![0xff, b'{', 0x00],
        _ => text,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_mix_of_documents_never_panics(items in prop::collection::vec(placed(), 1..8)) {
        let docs = documents();
        let store = Arc::new(MemoryStore::new());
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            for item in &items {
                let (name, value) = &docs[item.document % docs.len()];
                let key = match PATHS[item.path] {
                    "" => (*name).to_owned(),
                    path => format!("{path}/{name}"),
                };
                store
                    .set(&StoreKey::new(&key), Bytes::from(bytes_of(value, item.damage, item.cut)))
                    .await
                    .unwrap();
            }
        });
        drop(rt);
        for path in PATHS {
            if let Ok(array) = Array::open(Arc::clone(&store), path) {
                let whole = zarr_core::Region::full(array.as_async().shape());
                let _ = array.read_bytes(whole);
            }
            if let Ok(group) = Group::open(Arc::clone(&store), path) {
                let _ = group.children();
                let _ = group.tree();
                let _ = group.tree_listed();
                let _ = group.open_group("b");
                let _ = group.as_async();
            }
            if let Ok(group) = Group::open_consolidated(Arc::clone(&store), path) {
                let _ = group.children();
                let _ = group.tree();
                let _ = group.open_group("b").map(|g| g.tree());
            }
        }
        // Consolidating what opens: an answer or an error, and what it writes opens again.
        if let Ok(mut root) = Group::open(Arc::clone(&store), "")
            && root.consolidate_metadata().is_ok()
        {
            let again = Group::open_consolidated(Arc::clone(&store), "");
            prop_assert!(again.is_ok(), "{:?}", again.err());
            let again = again.unwrap();
            prop_assert!(again.is_consolidated());
            let _ = again.tree();
        }
    }
}

/// A damaged `zarr.json` deep in a hierarchy is named in the error of every walk that meets
/// it: the node's path and the document's key.
#[test]
fn a_damaged_document_is_named() {
    let store = Arc::new(MemoryStore::new());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let group = json!({"zarr_format": 3, "node_type": "group"}).to_string();
        for key in ["zarr.json", "a/zarr.json"] {
            store
                .set(&StoreKey::new(key), Bytes::from(group.clone()))
                .await
                .unwrap();
        }
        let array = json!({"zarr_format": 3, "node_type": "array", "shape": [2]}).to_string();
        store
            .set(&StoreKey::new("a/b/zarr.json"), Bytes::from(array))
            .await
            .unwrap();
    });
    drop(rt);
    let root = Group::open(Arc::clone(&store), "").unwrap();
    for err in [
        root.tree().unwrap_err(),
        root.tree_listed().unwrap_err(),
        Array::open(Arc::clone(&store), "a/b").unwrap_err(),
        root.open_group("a").unwrap().children().unwrap_err(),
    ] {
        match &err {
            zarr_array::Error::Metadata { path, key, .. } => {
                assert_eq!((path.as_str(), key.as_str()), ("/a/b", "a/b/zarr.json"));
            }
            other => panic!("{other:?}"),
        }
        let text = zarr_array::ErrorChain(&err).to_string();
        assert!(
            text.contains("\"/a/b\"")
                && text.contains("a/b/zarr.json")
                && text.contains("data_type"),
            "{text}"
        );
    }
}
