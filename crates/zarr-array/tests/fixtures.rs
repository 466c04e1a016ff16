//! Open every node of the fixture corpus (stores written by zarr-python 3.1.6 and
//! tensorstore 0.1.86, see `crates/zarr-core/tests/fixtures/README.md`) through `Array` and
//! `Group` on a `FilesystemStore`, read every array whole and in parts, and compare with the
//! manifest exactly.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use serde_json::Value;
use zarr_array::{Array, ArrayBytes, Group, Region};
use zarr_store::FilesystemStore;

#[path = "../../zarr-core/tests/fixtures/check.rs"]
mod check;
use check::check_element;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../zarr-core/tests/fixtures")
}

fn manifest() -> Vec<Value> {
    serde_json::from_str(&std::fs::read_to_string(corpus().join("manifest.json")).unwrap()).unwrap()
}

fn node_path(entry: &Value) -> String {
    format!("/{}", entry["path"].as_str().unwrap())
}

fn store_of(entry: &Value) -> Arc<FilesystemStore> {
    Arc::new(FilesystemStore::new(corpus().join(entry["store"].as_str().unwrap())).unwrap())
}

/// Whether an array's codecs (at any depth) name one of `names`.
fn uses_codec(metadata: &Value, names: &[&str]) -> bool {
    match metadata {
        Value::Object(map) => {
            map.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| names.contains(&n))
                || map.values().any(|v| uses_codec(v, names))
        }
        Value::Array(items) => items.iter().any(|v| uses_codec(v, names)),
        _ => false,
    }
}

/// The expected element of a variable-length array, as bytes.
fn expected_vlen(data_type: &str, value: &Value) -> Vec<u8> {
    let text = value.as_str().unwrap();
    if data_type == "string" {
        text.as_bytes().to_vec()
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap()
    }
}

fn check_values(array: &Array<FilesystemStore>, entry: &Value, values: &ArrayBytes, what: &str) {
    let expected = entry["values"].as_array().unwrap();
    match values {
        ArrayBytes::Fixed(bytes) => {
            let elem = array.data_type().fixed_size().unwrap();
            assert_eq!(bytes.len(), expected.len() * elem, "{what}: size");
            for (i, (element, want)) in bytes.chunks(elem).zip(expected).enumerate() {
                check_element(array.data_type(), element, want, &format!("{what}[{i}]"));
            }
        }
        ArrayBytes::Variable(vlen) => {
            assert_eq!(vlen.len(), expected.len(), "{what}: count");
            let dt = entry["data_type"].as_str().unwrap();
            for (i, (element, want)) in vlen.iter().zip(expected).enumerate() {
                assert_eq!(element, expected_vlen(dt, want), "{what}[{i}]");
            }
        }
    }
}

/// Every array reads whole exactly as the manifest says (the default registry has every
/// codec the corpus uses, sharding and strings included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_array_reads_exactly() {
    let mut read = 0;
    let mut skipped = Vec::new();
    for entry in manifest() {
        if entry["node_type"] != "array" {
            continue;
        }
        let name = format!("{}{}", entry["store"].as_str().unwrap(), node_path(&entry));
        let store_name = entry["store"].as_str().unwrap();
        let store = store_of(&entry);
        let metadata_path = corpus()
            .join(store_name)
            .join(entry["path"].as_str().unwrap())
            .join("zarr.json");
        let metadata: Value =
            serde_json::from_str(&std::fs::read_to_string(metadata_path).unwrap()).unwrap();
        let registry = zarr_array::default_registry();
        let missing: Vec<&str> = ["sharding_indexed", "vlen-utf8", "vlen-bytes"]
            .into_iter()
            .filter(|n| !registry.contains(n))
            .collect();
        if uses_codec(&metadata["codecs"], &missing) {
            skipped.push(name);
            continue;
        }
        let array = Array::open(store, &node_path(&entry))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let values = array
            .read_array_bytes(array.full_region())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        check_values(&array, &entry, &values, &name);
        read += 1;
    }
    assert!(skipped.is_empty(), "codecs not registered for {skipped:?}");
    assert!(read >= 129, "only {read} arrays read");
}

/// Regions that start and end inside chunks read the same values as the whole array.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_regions_match_the_whole_array() {
    let mut checked = 0;
    for entry in manifest() {
        if entry["node_type"] != "array" || entry["data_type"] == "string" {
            continue;
        }
        let store_name = entry["store"].as_str().unwrap();
        let Ok(array) = Array::open(store_of(&entry), &node_path(&entry)).await else {
            continue;
        };
        let Some(elem) = array.data_type().fixed_size() else {
            continue;
        };
        let shape = array.shape().to_vec();
        if shape.is_empty() || shape.contains(&0) {
            continue;
        }
        let whole = array.read_bytes(array.full_region()).await.unwrap();
        // The region [1, n-1) in every dimension (or [0, n) when n < 3).
        let ranges: Vec<std::ops::Range<u64>> = shape
            .iter()
            .map(|&n| if n >= 3 { 1..n - 1 } else { 0..n })
            .collect();
        let region = Region::try_new(ranges.clone()).unwrap();
        let part = array.read_bytes(&region).await.unwrap();
        // Cut the same region out of the whole array by hand.
        let mut expected = Vec::new();
        let count: u64 = region.num_elements().unwrap();
        let rshape = region.shape();
        for flat in 0..count {
            let mut rem = flat;
            let mut idx = vec![0u64; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rem % rshape[d] + ranges[d].start;
                rem /= rshape[d];
            }
            let mut off = 0u64;
            for d in 0..shape.len() {
                off = off * shape[d] + idx[d];
            }
            let off = off as usize * elem;
            expected.extend_from_slice(&whole[off..off + elem]);
        }
        assert_eq!(part, expected, "{store_name}");
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} arrays checked");
}

/// Groups open with their attributes; children and the tree come from listings, or from
/// consolidated metadata where the group has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_groups_open_with_attributes_and_children() {
    let mut groups = 0;
    for entry in manifest() {
        if entry["node_type"] != "group" {
            continue;
        }
        let group = Group::open(store_of(&entry), &node_path(&entry))
            .await
            .unwrap();
        assert_eq!(
            Value::Object(group.attributes().clone()),
            entry["attributes"],
            "{}",
            node_path(&entry)
        );
        groups += 1;
    }
    assert!(groups >= 6);

    let store = Arc::new(FilesystemStore::new(corpus().join("zarr-python/nested_groups")).unwrap());
    let root = Group::open(store, "/").await.unwrap();
    let tree: Vec<String> = root
        .tree()
        .await
        .unwrap()
        .into_iter()
        .map(|(path, _)| path.as_str().to_owned())
        .collect();
    assert!(tree.contains(&"/a/b/c".to_owned()), "{tree:?}");
    let children = root.children().await.unwrap();
    assert!(children.iter().any(|c| c.path().as_str() == "/a"));

    // Consolidated metadata: the tree comes without listing.
    let store = Arc::new(FilesystemStore::new(corpus().join("zarr-python/consolidated")).unwrap());
    let recording = Arc::new(zarr_store::RecordingStore::new(store));
    let root = Group::open(Arc::clone(&recording), "/").await.unwrap();
    let before = recording.stats();
    let tree = root.tree().await.unwrap();
    assert!(tree.iter().any(|(p, _)| p.as_str() == "/sub"), "{tree:?}");
    assert_eq!(recording.stats().lists, before.lists, "no listing");
}
