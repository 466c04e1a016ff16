//! `info`, `tree` and `get` on stores written by zarr-python and tensorstore.

use serde_json::Value;

use crate::common::{entry, fails, fixture, flatten, manifest, ok, parse_npy, same_value, zarr};

fn chunk_keys(entry: &Value) -> usize {
    entry["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k != &"zarr.json")
        .count()
}

#[test]
fn info_describes_a_sharded_array() {
    let out = ok(&["info", &fixture("zarr-python/shard_2d")]);
    for line in [
        "shape        6x8",
        "data type    uint16",
        "chunking     shards 4x4 of chunks 2x2",
        "grid         2x2 shards",
        "sharding     sharding_indexed, index at the end",
        "stored       3 of 4 shards",
        "fill value   0",
    ] {
        assert!(out.contains(line), "{line:?} not in\n{out}");
    }
}

#[test]
fn info_describes_a_group_and_its_children() {
    let out = ok(&["info", &fixture("zarr-python/nested_groups")]);
    assert!(out.contains("level: \"root\""), "{out}");
    assert!(out.contains("a/  group"), "{out}");
    assert!(
        out.contains("root_array  array int32 3 (chunks 2)"),
        "{out}"
    );
}

#[test]
fn info_finds_the_store_root_of_a_nested_node_or_takes_path() {
    let nested = format!("{}/a/b/c/c_array", fixture("zarr-python/nested_groups"));
    let out = ok(&["info", &nested]);
    assert!(out.contains("path         /a/b/c/c_array"), "{out}");
    assert!(out.contains("data type    bool"), "{out}");
    let out = ok(&[
        "info",
        &fixture("zarr-python/nested_groups"),
        "--path",
        "a/a_array",
    ]);
    assert!(out.contains("path         /a/a_array"), "{out}");
    assert!(out.contains("units: \"m\""), "{out}");
    // The node's zarr.json names the node too.
    let out = ok(&["info", &format!("{nested}/zarr.json")]);
    assert!(out.contains("path         /a/b/c/c_array"), "{out}");
}

#[test]
fn info_json_has_the_metadata_and_the_stored_chunks() {
    for store in [
        "tensorstore/uint16_zstd",
        "zarr-python/shard_2d",
        "zarr-python/dtype_float16",
        "tensorstore/sharded",
    ] {
        let out = ok(&["info", "--json", &fixture(store)]);
        let value: Value = serde_json::from_str(&out).unwrap();
        let original: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{}/zarr.json", fixture(store))).unwrap(),
        )
        .unwrap();
        assert_eq!(value["metadata"], original, "{store}");
        let manifest = entry(store, "");
        assert_eq!(value["chunks"]["present"], chunk_keys(&manifest), "{store}");
        let stored: u64 = manifest["keys"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k != &"zarr.json")
            .map(|k| {
                std::fs::metadata(format!("{}/{}", fixture(store), k.as_str().unwrap()))
                    .unwrap()
                    .len()
            })
            .sum();
        assert_eq!(value["stored_bytes"], stored, "{store}");
        assert!(value["compression_ratio"].as_f64().unwrap() > 0.0);
    }
    let out = ok(&["info", "--json", &fixture("zarr-python/shard_2d")]);
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["shard_shape"], serde_json::json!([4, 4]));
    assert_eq!(value["inner_chunk_shape"], serde_json::json!([2, 2]));
    assert_eq!(value["chunks"]["possible"], 4);
}

#[test]
fn tree_lists_the_hierarchy() {
    let out = ok(&["tree", &fixture("zarr-python/nested_groups")]);
    let expected = "\
/
  a/
    a_array  float64 2x2 (chunks 1x2)
    b/
      c/
        c_array  bool 4 (chunks 2)
  root_array  int32 3 (chunks 2)
";
    assert_eq!(out, expected);
    let out = ok(&["tree", &fixture("zarr-python/consolidated")]);
    assert!(
        out.starts_with("/  (from consolidated metadata)\n"),
        "{out}"
    );
    assert!(out.contains("    values  uint64 5 (chunks 5)"), "{out}");
    let out = ok(&["tree", &fixture("zarr-python/shard_2d")]);
    assert_eq!(out, "/  uint16 6x8 (shards 4x4 of chunks 2x2)\n");
}

/// Every fixture array (numbers, strings, bytes, sharded or not) reads whole, as JSON, to
/// exactly the manifest's values, records of the structured type included.
#[test]
fn get_json_matches_every_fixture_written_by_peers() {
    let mut checked = 0;
    let mut unsupported = Vec::new();
    for entry in manifest() {
        if entry["node_type"] != "array" {
            continue;
        }
        let store = entry["store"].as_str().unwrap();
        let path = entry["path"].as_str().unwrap();
        let target = format!("{}/{path}", fixture(store));
        let out = zarr(&["get", "--format", "json", &target]);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(
                err.contains("unknown codec `vlen-"),
                "{store} {path}: {err}"
            );
            unsupported.push(format!("{store}/{path}"));
            continue;
        }
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rank = entry["shape"].as_array().unwrap().len();
        let got = flatten(&got, rank);
        let want = entry["values"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{store} {path}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                same_value(g, w),
                "{store} {path} element {i}: got {g}, want {w}"
            );
        }
        checked += 1;
    }
    assert!(unsupported.is_empty(), "{unsupported:?}");
    assert!(checked >= 128, "only {checked} arrays checked");
}

/// `start:stop:step` as in numpy, in every output format, streamed in slabs.
#[test]
fn get_takes_steps() {
    let store = fixture("zarr-python/shard_2d");
    let full: Vec<Vec<String>> = ok(&["get", &store])
        .lines()
        .map(|l| l.split(' ').map(str::to_owned).collect())
        .collect();
    let pick = |rows: &[usize], cols: &[usize]| -> String {
        rows.iter()
            .map(|&r| {
                let row: Vec<&str> = cols.iter().map(|&c| full[r][c].as_str()).collect();
                row.join(" ") + "\n"
            })
            .collect()
    };
    assert_eq!(
        ok(&["get", &store, "-r", "1::2,1::3"]),
        pick(&[1, 3, 5], &[1, 4, 7])
    );
    // Index lists (increasing; negative counts from the end), beside steps.
    assert_eq!(
        ok(&["get", &store, "-r", "[0,2,-1],[1,4,7]"]),
        pick(&[0, 2, 5], &[1, 4, 7])
    );
    assert_eq!(
        ok(&["get", &store, "-r", "[4],::3"]),
        pick(&[4], &[0, 3, 6])
    );
    let err = fails(&["get", &store, "-r", "[2,0],:"], 2);
    assert!(err.contains("must be increasing"), "{err}");
    // Clipped as numpy clips: rows 0 and 4 of 6, and a single column.
    assert_eq!(
        ok(&["get", &store, "-r", "0:100:4,2", "-f", "json"]),
        format!("[{}, {}]\n", full[0][2], full[4][2])
    );
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("s.npy");
    ok(&[
        "get",
        &store,
        "-r",
        "::5,6:1:1",
        "-o",
        npy.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&npy).unwrap();
    assert!(
        String::from_utf8_lossy(&bytes).contains("'shape': (2, 0)"),
        "{bytes:?}"
    );
    let raw = dir.path().join("s.bin");
    ok(&[
        "get",
        &store,
        "-r",
        "::5,::7",
        "-f",
        "raw",
        "-o",
        raw.to_str().unwrap(),
    ]);
    let want: Vec<u8> = [(0, 0), (0, 7), (5, 0), (5, 7)]
        .iter()
        .flat_map(|&(r, c)| full[r][c].parse::<u16>().unwrap().to_le_bytes())
        .collect();
    assert_eq!(std::fs::read(&raw).unwrap(), want);
}

#[test]
fn get_prints_a_region_as_text() {
    let store = fixture("zarr-python/shard_2d");
    // Rows 1 and 2, the last three columns.
    assert_eq!(
        ok(&["get", &store, "--region", "1:3,-3:"]),
        "113 114 115\n121 122 123\n"
    );
    // A single index drops its dimension: column 4 as one value per line.
    assert_eq!(
        ok(&["get", &store, "-r", ":,4"]),
        "104\n112\n120\n128\n0\n0\n"
    );
    let out = ok(&["get", &fixture("zarr-python/dtype_float16")]);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "0.5", "-2.0", "65500.0", "6e-8", "1.5", "1.5", "1.5", "1.5", "Infinity", "-0.0"
        ]
    );
    let out = ok(&["get", &fixture("zarr-python/dtype_complex64"), "-r", "0:3"]);
    assert_eq!(out, "0.5-0.5j\nNaN-Infinityj\n-0.0+3e38j\n");
    // Strings are quoted (JSON escapes), byte strings Rust-escaped.
    let out = ok(&["get", &fixture("zarr-python/string_1d"), "-r", "0:4"]);
    assert_eq!(out, "\"🦀\"\n\"\"\n\"日本語\"\n\"naïve\"\n");
    let out = ok(&["get", &fixture("zarr-python/bytes_vlen"), "-r", "0:3"]);
    assert_eq!(out, "b\"\\x00\\x01\"\nb\"\"\nb\"abc\"\n");
    // Raw output has no room for lengths (npy pads to the longest element: see npy_files).
    let err = fails(
        &[
            "get",
            &fixture("zarr-python/string_1d"),
            "-f",
            "raw",
            "-o",
            "/dev/null",
        ],
        2,
    );
    assert!(err.contains("use --format npy, json or text"), "{err}");
    // 3-d: rows, with a blank line between planes.
    let out = ok(&[
        "get",
        &fixture("zarr-python/dimension_names"),
        "-r",
        ":,0:2,0:2",
    ]);
    assert_eq!(out, "0 1\n4 5\n\n12 13\n16 17\n");
}

#[test]
fn get_exports_npy_that_matches_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    for (store, descr, element) in [
        ("zarr-python/shard_2d", "<u2", 2),
        ("zarr-python/dtype_float16", "<f2", 2),
        ("zarr-python/dtype_complex64", "<c8", 8),
        ("zarr-python/dtype_bool", "|b1", 1),
        ("zarr-python/dtype_datetime64_10ns", "<M8[10ns]", 8),
        ("zarr-python/fixed_utf32", "<U4", 16),
        ("tensorstore/sharded", "<i4", 4),
    ] {
        let file = dir.path().join("out.npy");
        ok(&[
            "get",
            &fixture(store),
            "--format",
            "npy",
            "-o",
            file.to_str().unwrap(),
        ]);
        let npy = parse_npy(&std::fs::read(&file).unwrap());
        let manifest = entry(store, "");
        assert_eq!(npy.descr, descr, "{store}");
        let shape: Vec<u64> = serde_json::from_value(manifest["shape"].clone()).unwrap();
        assert_eq!(npy.shape, shape, "{store}");
        // The bytes match the values, checked through --format raw for the same region.
        let raw = dir.path().join("out.raw");
        ok(&[
            "get",
            &fixture(store),
            "--format",
            "raw",
            "-o",
            raw.to_str().unwrap(),
        ]);
        assert_eq!(std::fs::read(&raw).unwrap(), npy.data, "{store}");
        assert_eq!(npy.data.len() % element, 0);
    }
    // Values of one, decoded here by hand.
    let file = dir.path().join("sharded.npy");
    ok(&[
        "get",
        &fixture("tensorstore/sharded"),
        "-r",
        "2:4,1:6",
        "-f",
        "npy",
        "-o",
        file.to_str().unwrap(),
    ]);
    let npy = parse_npy(&std::fs::read(&file).unwrap());
    assert_eq!(npy.shape, [2, 5]);
    let got: Vec<i32> = npy
        .data
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let values = entry("tensorstore/sharded", "")["values"].clone();
    let want: Vec<i32> = [2usize, 3]
        .iter()
        .flat_map(|r| (1..6).map(move |c| r * 7 + c))
        .map(|i| i32::try_from(values[i].as_i64().unwrap()).unwrap())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn get_refuses_what_npy_cannot_hold() {
    let err = fails(
        &[
            "get",
            &fixture("tensorstore/bfloat16"),
            "-f",
            "npy",
            "-o",
            "/dev/null",
        ],
        1,
    );
    assert!(err.contains("numpy has no dtype for bfloat16"), "{err}");
    let err = fails(&["get", &fixture("zarr-python/shard_2d"), "-r", "0:2,9"], 2);
    assert!(
        err.contains("index 9 is out of bounds for dimension 1 of size 8"),
        "{err}"
    );
    let err = fails(
        &["get", &fixture("zarr-python/shard_2d"), "-r", "0:2:-1"],
        2,
    );
    assert!(err.contains("steps must be positive"), "{err}");
}

/// Steps select from variable-length arrays too, in every output format that holds them.
#[test]
fn get_takes_steps_on_strings() {
    let store = fixture("zarr-python/string_1d");
    assert_eq!(
        ok(&["get", &store, "-r", "::3", "-f", "json"]),
        "[\"🦀\", \"naïve\", \"\", \"tail\"]\n"
    );
    assert_eq!(
        ok(&["get", &store, "-r", "2:10:7"]),
        "\"日本語\"\n\"tail\"\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("s.npy");
    ok(&["get", &store, "-r", "::2", "-o", npy.to_str().unwrap()]);
    let bytes = std::fs::read(&npy).unwrap();
    let header = String::from_utf8_lossy(&bytes[..128]);
    // Elements 0, 2, 4, 6, 8, 10; the widest is "日本語" (three characters).
    assert!(header.contains("'descr': '<U3'"), "{header}");
    assert!(header.contains("'shape': (6,)"), "{header}");
    let utf32: Vec<u32> = bytes[128..]
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let text: String = utf32
        .chunks(3)
        .map(|e| {
            e.iter()
                .filter(|&&c| c != 0)
                .map(|&c| char::from_u32(c).unwrap())
                .collect::<String>()
                + "|"
        })
        .collect();
    assert_eq!(text, "🦀|日本語||||end|");
}

/// A small Zarr v2 hierarchy: `/.zgroup`, `/sub/.zgroup`, `/sub/a` (`<u2`, order F, 3x2 in
/// 2x2 chunks, one chunk missing).
fn v2_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("v2.zarr");
    std::fs::create_dir_all(root.join("sub/a")).unwrap();
    std::fs::write(root.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    std::fs::write(root.join("sub/.zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    std::fs::write(root.join("sub/.zattrs"), r#"{"origin": "v2"}"#).unwrap();
    std::fs::write(
        root.join("sub/a/.zarray"),
        r#"{"zarr_format": 2, "shape": [3, 2], "chunks": [2, 2], "dtype": "<u2",
            "compressor": null, "fill_value": 7, "order": "F", "filters": null}"#,
    )
    .unwrap();
    // Chunk (0, 0) in column-major order: [[1, 2], [3, 4]] is stored 1, 3, 2, 4.
    std::fs::write(root.join("sub/a/0.0"), [1u8, 0, 3, 0, 2, 0, 4, 0]).unwrap();
    dir
}

#[test]
fn info_tree_and_get_read_zarr_v2() {
    let dir = v2_store();
    let root = dir.path().join("v2.zarr");
    let array = root.join("sub/a");
    let out = ok(&["info", array.to_str().unwrap()]);
    for line in [
        "path         /sub/a",
        "format       Zarr v2",
        "data type    uint16",
        "chunk keys   v2 (first: 0.0)",
        "stored       1 of 2 chunks",
    ] {
        assert!(out.contains(line), "{line:?} not in\n{out}");
    }
    let out = ok(&["info", root.join("sub").to_str().unwrap()]);
    assert!(out.contains("origin: \"v2\""), "{out}");
    let out = ok(&["tree", root.to_str().unwrap()]);
    assert!(out.contains("a  uint16 3x2 (chunks 2x2)"), "{out}");
    let out = ok(&["get", array.to_str().unwrap()]);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["1", "2", "3", "4", "7", "7"]
    );
}

#[test]
fn copy_converts_zarr_v2_to_v3() {
    let dir = v2_store();
    let root = dir.path().join("v2.zarr");
    let dst = dir.path().join("v3.zarr");
    ok(&["copy", root.to_str().unwrap(), dst.to_str().unwrap()]);
    let metadata: Value =
        serde_json::from_slice(&std::fs::read(dst.join("sub/a/zarr.json")).unwrap()).unwrap();
    assert_eq!(metadata["zarr_format"], 3);
    assert!(!dst.join("sub/a/.zarray").exists());
    let out = ok(&["info", dst.join("sub/a").to_str().unwrap()]);
    assert!(!out.contains("Zarr v2"), "{out}");
    let out = ok(&["get", dst.join("sub/a").to_str().unwrap()]);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["1", "2", "3", "4", "7", "7"]
    );
    let out = ok(&["info", dst.join("sub").to_str().unwrap()]);
    assert!(out.contains("origin: \"v2\""), "{out}");
}

#[test]
fn a_failed_export_removes_its_file_but_nothing_that_is_not_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a.zarr");
    let array_text = array.display().to_string();
    ok(&[
        "create",
        &array_text,
        "--shape",
        "4",
        "--dtype",
        "uint8",
        "--chunks",
        "2",
    ]);
    let npy = dir.path().join("v.npy");
    crate::common::write_npy(&npy, "|u1", &[4], &[1, 2, 3, 4]);
    ok(&["put", &array_text, "-i", npy.to_str().unwrap()]);
    // The second chunk does not decode, so an export fails after it began.
    std::fs::write(array.join("c/1"), b"not zstd").unwrap();
    let file = dir.path().join("out.txt");
    fails(&["get", &array_text, "-o", file.to_str().unwrap()], 1);
    assert!(!file.exists());
    // A named pipe (as a device such as /dev/null) is written to, never removed.
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    fails(&["get", &array_text, "-o", fifo.to_str().unwrap()], 1);
    reader.join().unwrap();
    assert!(fifo.exists(), "the named pipe was removed");
}
