//! Arrays of the zarr-extensions `ndarray` data type (elements that are arrays), written here
//! byte by byte as zarr-vlen-ndarray writes them: printed as nested lists, exported to `.npy`
//! when their shape is fixed, copied, compared and verified.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{fails, ok, zarr};

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(value).unwrap()).unwrap();
}

fn write_chunk(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn array_json(data_type: Value, shape: u64, chunk: u64, fill: &str, codecs: Value) -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": [shape], "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": codecs, "attributes": {}
    })
}

/// `vlen-bytes` framing of little-endian int16 elements.
fn framed(elements: &[&[i16]]) -> Vec<u8> {
    let mut out = (elements.len() as u32).to_le_bytes().to_vec();
    for e in elements {
        out.extend((e.len() as u32 * 2).to_le_bytes());
        for v in *e {
            out.extend(v.to_le_bytes());
        }
    }
    out
}

#[test]
fn ndarray_elements_are_printed_exported_copied_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cells.zarr");
    write_json(
        &root.join("zarr.json"),
        &json!({"zarr_format": 3, "node_type": "group", "attributes": {}}),
    );
    // (n, 2) int16 points; chunk 1 never written.
    write_json(
        &root.join("pts/zarr.json"),
        &array_json(
            json!({"name": "ndarray", "configuration": {"dtype": "int16", "shape": [null, 2]}}),
            3,
            2,
            "",
            json!([{"name": "vlen-ndarray", "configuration": {}}]),
        ),
    );
    write_chunk(&root.join("pts/c/0"), &framed(&[&[1, 2, 3, -4], &[]]));
    // Fixed (2, 2) uint8 blocks with a bare `bytes` codec, as zarr-vlen-ndarray writes them.
    write_json(
        &root.join("blk/zarr.json"),
        &array_json(
            json!({"name": "ndarray", "configuration": {"dtype": "uint8", "shape": [2, 2]}}),
            2,
            2,
            "AAAAAA==",
            json!([{"name": "bytes"}]),
        ),
    );
    write_chunk(&root.join("blk/c/0"), &[1, 2, 3, 4, 5, 6, 7, 8]);
    let pts = root.join("pts");
    let pts = pts.to_str().unwrap();
    let blk = root.join("blk");
    let blk = blk.to_str().unwrap();

    assert!(ok(&["info", pts]).contains("ndarray<int16, [null, 2]>"));
    assert_eq!(ok(&["get", pts]), "[[1, 2], [3, -4]]\n[]\n[]\n");
    assert_eq!(
        ok(&["get", pts, "--format", "json"]),
        "[[[1, 2], [3, -4]], [], []]\n"
    );
    assert_eq!(ok(&["get", blk, "--region", "1:2"]), "[[5, 6], [7, 8]]\n");

    // Fixed shapes export to .npy as trailing dimensions; varying ones cannot.
    let npy = dir.path().join("blk.npy");
    ok(&["get", blk, "-o", npy.to_str().unwrap()]);
    let bytes = std::fs::read(&npy).unwrap();
    let header = String::from_utf8_lossy(&bytes[10..bytes.len() - 8]).into_owned();
    assert!(
        header.contains("'descr': '|u1'") && header.contains("'shape': (2, 2, 2)"),
        "{header}"
    );
    assert_eq!(bytes[bytes.len() - 8..], [1, 2, 3, 4, 5, 6, 7, 8]);
    let err = fails(
        &["get", pts, "-o", dir.path().join("p.npy").to_str().unwrap()],
        2,
    );
    assert!(err.contains("elements of varying shape"), "{err}");

    // ... and come back with `put`, into a new array of the same type.
    let back = format!("{}/back", root.display());
    ok(&[
        "create",
        &back,
        "--shape",
        "2",
        "--chunks",
        "1",
        "--dtype",
        "ndarray<uint8, [2, 2]>",
        "-q",
    ]);
    ok(&["put", &back, "--input", npy.to_str().unwrap(), "-q"]);
    assert_eq!(ok(&["get", &back]), ok(&["get", blk]));
    let err = fails(&["put", pts, "--input", npy.to_str().unwrap()], 2);
    assert!(err.contains("elements of varying shape"), "{err}");
    let err = fails(
        &[
            "put",
            &back,
            "--input",
            npy.to_str().unwrap(),
            "--region",
            "0",
        ],
        2,
    );
    assert!(err.contains("the region"), "{err}");
    let other = format!("{}/other", root.display());
    ok(&[
        "create",
        &other,
        "--shape",
        "2",
        "--chunks",
        "1",
        "--dtype",
        "ndarray<uint8, [4]>",
        "-q",
    ]);
    let err = fails(&["put", &other, "--input", npy.to_str().unwrap()], 2);
    assert!(
        err.contains("does not end with the element shape 4"),
        "{err}"
    );
    std::fs::remove_dir_all(root.join("back")).unwrap();
    std::fs::remove_dir_all(root.join("other")).unwrap();

    // Copy (re-chunked and compressed), and compare.
    let copy = dir.path().join("copy.zarr");
    let copy_s = copy.to_str().unwrap();
    ok(&[
        "copy",
        root.to_str().unwrap(),
        copy_s,
        "--chunks",
        "1",
        "--codec",
        "zstd:3",
        "-q",
    ]);
    let meta: Value =
        serde_json::from_slice(&std::fs::read(copy.join("pts/zarr.json")).unwrap()).unwrap();
    assert_eq!(meta["codecs"][0]["name"], "vlen-ndarray");
    assert_eq!(meta["codecs"][1]["name"], "zstd");
    let same = ok(&["diff", root.to_str().unwrap(), copy_s]);
    assert!(same.contains("are the same"), "{same}");

    // A changed element is a difference, shown as its lists.
    write_chunk(&root.join("pts/c/0"), &framed(&[&[1, 2, 3, -4], &[9, 9]]));
    let out = zarr(&["diff", pts, &format!("{copy_s}/pts")]);
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("[1]") && report.contains("[[9, 9]]") && report.contains("[]"),
        "{report}"
    );

    // An element that is not whole (1, 2) items is corrupt.
    write_chunk(&root.join("pts/c/0"), &framed(&[&[1, 2, 3], &[]]));
    let out = zarr(&["verify", pts]);
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("c/0") && report.contains("not a whole number of 4-byte items"),
        "{report}"
    );
}
