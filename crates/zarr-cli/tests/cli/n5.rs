//! N5 containers as targets: read as Zarr, written as N5 datasets (`create`, `copy`), and
//! copied back to Zarr's own layout.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{fails, ok};

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn n5_containers_are_read_written_and_copied_back_to_zarr() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo.zarr");
    let demo = demo.to_str().unwrap();
    ok(&["demo", demo, "-q"]);
    let raw = format!("{demo}/images/raw");

    // The demo image is sharded with a checksum: N5 blocks hold neither.
    let n5 = dir.path().join("out.n5");
    let image = n5.join("images/raw");
    let err = fails(&["copy", &raw, image.to_str().unwrap()], 2);
    assert!(err.contains("give --shards none"), "{err}");
    let err = fails(
        &["copy", &raw, image.to_str().unwrap(), "--shards", "none"],
        2,
    );
    assert!(err.contains("at most one compressor"), "{err}");
    assert!(!n5.exists(), "a refused copy leaves nothing");
    ok(&[
        "copy",
        &raw,
        image.to_str().unwrap(),
        "--shards",
        "none",
        "--codec",
        "gzip:4",
        "-q",
    ]);
    assert_eq!(
        read_json(&n5.join("attributes.json")),
        json!({"n5": "4.0.0"})
    );
    let attributes = read_json(&image.join("attributes.json"));
    assert_eq!(
        attributes,
        json!({"dimensions": [512, 512], "blockSize": [64, 64], "dataType": "uint16",
               "compression": {"type": "gzip", "level": 4, "useZlib": false},
               "units": "counts", "_ARRAY_DIMENSIONS": ["y", "x"]})
    );
    assert!(image.join("7/7").is_file(), "blocks are N5 paths");
    // Read back: the same values, the tree, a node given by its attributes file.
    let diff = ok(&["diff", &raw, image.to_str().unwrap()]);
    assert!(diff.contains("are the same"), "{diff}");
    let tree = ok(&["tree", n5.to_str().unwrap()]);
    assert!(
        tree.contains("raw  uint16 512x512 (chunks 64x64)"),
        "{tree}"
    );
    let info = ok(&["info", image.join("attributes.json").to_str().unwrap()]);
    assert!(info.contains("n5_default"), "{info}");

    // At a URL (`s3://bucket/data.n5`, here `file://`): the container, --path the node.
    let url = format!("file://{}", n5.display());
    let tree = ok(&["tree", &url]);
    assert!(
        tree.contains("raw  uint16 512x512 (chunks 64x64)"),
        "{tree}"
    );
    let url_copy = format!("file://{}", dir.path().join("url.n5").display());
    ok(&[
        "copy",
        &raw,
        &url_copy,
        "--dst-path",
        "/raw",
        "--shards",
        "none",
        "--codec",
        "zstd",
        "-q",
    ]);
    let written = read_json(&dir.path().join("url.n5/raw/attributes.json"));
    assert_eq!(written["compression"]["type"], "zstd");
    let diff = ok(&["diff", &raw, &url_copy, "--b-path", "/raw"]);
    assert!(diff.contains("are the same"), "{diff}");

    // `--codec lz4` is N5's own lz4 in a container (lz4-java's block stream, as the Java
    // library writes it), and numcodecs' LZ4 once copied back to Zarr.
    let lz4 = n5.join("lz4");
    ok(&[
        "copy",
        &raw,
        lz4.to_str().unwrap(),
        "--shards",
        "none",
        "--codec",
        "lz4",
        "-q",
    ]);
    let written = read_json(&lz4.join("attributes.json"));
    assert_eq!(
        written["compression"],
        json!({"type": "lz4", "blockSize": 65536})
    );
    let block = std::fs::read(lz4.join("3/5")).unwrap();
    assert_eq!(&block[12..20], b"LZ4Block");
    let diff = ok(&["diff", &raw, lz4.to_str().unwrap()]);
    assert!(diff.contains("are the same"), "{diff}");
    let info = ok(&["info", lz4.to_str().unwrap()]);
    assert!(info.contains("zarr-rs.n5_lz4"), "{info}");
    let lz4_back = dir.path().join("lz4.zarr");
    ok(&[
        "copy",
        lz4.to_str().unwrap(),
        lz4_back.to_str().unwrap(),
        "-q",
    ]);
    let metadata = read_json(&lz4_back.join("zarr.json"));
    assert_eq!(
        metadata["codecs"][1],
        json!({"name": "numcodecs.lz4", "configuration": {"acceleration": 1}})
    );
    let diff = ok(&["diff", &raw, lz4_back.to_str().unwrap()]);
    assert!(diff.contains("are the same"), "{diff}");
    std::fs::remove_dir_all(&lz4).unwrap();

    // A fill value other than 0 has no place in N5.
    let err = fails(
        &[
            "copy",
            &format!("{demo}/timeseries/temperature"),
            n5.join("t").to_str().unwrap(),
        ],
        1,
    );
    assert!(err.contains("N5 has no fill value"), "{err}");
    assert!(!n5.join("t").exists());

    // `create` lays a new array out as a dataset of the container.
    ok(&[
        "create",
        n5.join("made").to_str().unwrap(),
        "--shape",
        "10,20",
        "--dtype",
        "float32",
        "--chunks",
        "5,5",
        "-q",
    ]);
    let made = read_json(&n5.join("made/attributes.json"));
    assert_eq!(made["compression"], json!({"type": "zstd", "level": 3}));
    let err = fails(
        &[
            "create",
            n5.join("bad").to_str().unwrap(),
            "--shape",
            "4",
            "--dtype",
            "int8",
            "--fill-value",
            "1",
        ],
        1,
    );
    assert!(err.contains("N5 has no fill value"), "{err}");
    assert!(!n5.join("bad").exists());

    // Copied back to Zarr: little-endian `bytes`, default chunk keys, named dimensions.
    let back = dir.path().join("back.zarr");
    ok(&["copy", n5.to_str().unwrap(), back.to_str().unwrap(), "-q"]);
    let metadata = read_json(&back.join("images/raw/zarr.json"));
    assert_eq!(
        metadata["codecs"],
        json!([{"name": "bytes", "configuration": {"endian": "little"}},
               {"name": "gzip", "configuration": {"level": 4}}])
    );
    assert_eq!(metadata["chunk_key_encoding"]["name"], "default");
    assert_eq!(metadata["dimension_names"], json!(["y", "x"]));
    assert!(metadata["attributes"].get("_ARRAY_DIMENSIONS").is_none());
    let diff = ok(&["diff", &raw, back.join("images/raw").to_str().unwrap()]);
    assert!(diff.contains("are the same"), "{diff}");
}
