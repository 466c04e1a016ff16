//! Every `zarr.json` in the fixture corpus (written by zarr-python and tensorstore, see
//! `tests/fixtures/README.md`) parses, and writes back as equal JSON.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zarr_core::{DataType, NodeMetadata};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn metadata_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            metadata_files(&path, out);
        } else if path.file_name().is_some_and(|n| n == "zarr.json") {
            out.push(path);
        }
    }
}

#[test]
fn every_fixture_round_trips() {
    let mut files = Vec::new();
    metadata_files(&corpus(), &mut files);
    files.sort();
    assert!(
        files.len() > 120,
        "the corpus is present ({} documents)",
        files.len()
    );
    let mut checked = 0;
    for path in &files {
        let relative = path
            .strip_prefix(corpus())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path).unwrap();
        let parsed = NodeMetadata::from_json(&text);
        let node = parsed.unwrap_or_else(|e| panic!("{relative}: {e}"));
        let written: Value = serde_json::from_str(&node.to_json_pretty().unwrap()).unwrap();
        let original: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(written, original, "{relative} writes back differently");
        // And what we write, we read back to the same model.
        let again = NodeMetadata::from_json(&written.to_string()).unwrap();
        assert_eq!(again, node, "{relative}");
        checked += 1;
    }
    assert_eq!(checked, files.len());
}

/// The manifest's description of each array agrees with what its metadata says.
#[test]
fn manifest_agrees_with_metadata() {
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("manifest.json")).unwrap())
            .unwrap();
    let mut arrays = 0;
    for entry in &manifest {
        if entry["node_type"] != "array" {
            continue;
        }
        let mut dir = corpus().join(entry["store"].as_str().unwrap());
        let path = entry["path"].as_str().unwrap();
        if !path.is_empty() {
            dir = dir.join(path.trim_start_matches('/'));
        }
        let text = std::fs::read_to_string(dir.join("zarr.json")).unwrap();
        let Ok(NodeMetadata::Array(array)) = NodeMetadata::from_json(&text) else {
            continue; // the unsupported ones are checked above
        };
        let shape: Vec<u64> = serde_json::from_value(entry["shape"].clone()).unwrap();
        assert_eq!(array.shape, shape, "{}", dir.display());
        assert_eq!(
            DataType::from_json(&entry["data_type"], "data_type").unwrap(),
            array.data_type
        );
        arrays += 1;
    }
    assert!(arrays > 100, "{arrays} arrays checked");
}
