//! `create` and `put`, checked through `get`.

use serde_json::{Value, json};

use crate::common::{fails, ok, ok_stderr, parse_npy, write_npy, zarr_env};

#[test]
fn create_put_get_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("data.zarr");
    let array = format!("{}/images/raw", store.display());
    ok(&[
        "create",
        &array,
        "--shape",
        "20,30",
        "--dtype",
        "int32",
        "--chunks",
        "5,10",
        "--shards",
        "10,30",
        "--codec",
        "zstd:5",
        "--codec",
        "crc32c",
        "--fill-value",
        "-1",
        "--dimension-names",
        "y,x",
        "--attr",
        "units=counts",
        "--attr",
        "scale=[1, 2]",
    ]);
    // A parent group was created, so the nested path resolves to the store root.
    let info: Value = serde_json::from_str(&ok(&["info", "--json", &array])).unwrap();
    assert_eq!(info["path"], "/images/raw");
    assert_eq!(info["shard_shape"], json!([10, 30]));
    assert_eq!(info["inner_chunk_shape"], json!([5, 10]));
    assert_eq!(info["metadata"]["fill_value"], -1);
    assert_eq!(info["metadata"]["dimension_names"], json!(["y", "x"]));
    assert_eq!(
        info["metadata"]["attributes"],
        json!({"units": "counts", "scale": [1, 2]})
    );
    assert_eq!(info["chunks"]["present"], 0);

    // Big-endian input, as numpy writes with dtype '>i4': rows 3..7, columns 4..10.
    let values: Vec<i32> = (0..4 * 6).map(|i| i * 1000 - 7).collect();
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let npy = dir.path().join("tile.npy");
    write_npy(&npy, ">i4", &[4, 6], &data);
    ok(&[
        "put",
        &array,
        "--input",
        npy.to_str().unwrap(),
        "--region",
        "3:7,4:10",
    ]);

    let got: Value =
        serde_json::from_str(&ok(&["get", &array, "-f", "json", "-r", "2:8,3:11"])).unwrap();
    let mut want = vec![vec![-1i64; 8]; 6];
    for r in 0..4 {
        for c in 0..6 {
            want[r + 1][c + 1] = i64::from(values[r * 6 + c]);
        }
    }
    assert_eq!(got, json!(want));

    // The whole array through npy: the fill value outside the tile.
    let out = dir.path().join("all.npy");
    ok(&["get", &array, "-f", "npy", "-o", out.to_str().unwrap()]);
    let all = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(
        (all.descr.as_str(), all.shape.as_slice()),
        ("<i4", &[20u64, 30][..])
    );
    let at = |r: usize, c: usize| {
        let i = (r * 30 + c) * 4;
        i32::from_le_bytes(all.data[i..i + 4].try_into().unwrap())
    };
    assert_eq!(at(0, 0), -1);
    assert_eq!(at(3, 4), values[0]);
    assert_eq!(at(6, 9), values[23]);

    // A whole-array put from our own export writes the same values back.
    ok(&["put", &array, "-i", out.to_str().unwrap()]);
    let again = dir.path().join("again.npy");
    ok(&["get", &array, "-f", "npy", "-o", again.to_str().unwrap()]);
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&out).unwrap());
}

#[test]
fn create_float_with_fill_words_and_single_index_put() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("f.zarr").display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "3,4",
        "--dtype",
        "float64",
        "--chunks",
        "2,2",
        "--fill-value",
        "NaN",
        "--codec",
        "none",
    ]);
    // A 1-d file into row 1 (the region's single index drops that dimension).
    let npy = dir.path().join("row.npy");
    let data: Vec<u8> = [0.5f64, -1.0, 2.25, 1e300]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write_npy(&npy, "<f8", &[4], &data);
    ok(&["put", &array, "-i", npy.to_str().unwrap(), "-r", "1"]);
    assert_eq!(
        ok(&["get", &array]),
        "NaN NaN NaN NaN\n0.5 -1.0 2.25 1e300\nNaN NaN NaN NaN\n"
    );
    // Creating again needs --overwrite.
    let err = fails(&["create", &array, "--shape", "3", "--dtype", "uint8"], 2);
    assert!(err.contains("already exists; use --overwrite"), "{err}");
    ok(&[
        "create",
        &array,
        "--shape",
        "3",
        "--dtype",
        "uint8",
        "--overwrite",
    ]);
    assert_eq!(ok(&["get", &array]), "0\n0\n0\n");
}

#[test]
fn put_checks_the_file_against_the_array() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("u.zarr").display().to_string();
    ok(&[
        "create", &array, "--shape", "4,4", "--dtype", "uint16", "--chunks", "2,2",
    ]);
    let npy = dir.path().join("x.npy");
    // Only numeric files are converted (see `put_converts_numbers_exactly`).
    write_npy(&npy, "<c8", &[4, 4], &[0; 128]);
    let err = fails(&["put", &array, "-i", npy.to_str().unwrap()], 2);
    assert!(err.contains("holds <c8, the array uint16 (<u2)"), "{err}");
    write_npy(&npy, "<u2", &[2, 2], &[0; 8]);
    let err = fails(&["put", &array, "-i", npy.to_str().unwrap()], 2);
    assert!(err.contains("has shape 2x2, the region 4x4"), "{err}");
    // Shorter data than the header says.
    write_npy(&npy, "<u2", &[4, 4], &[0; 8]);
    let err = fails(&["put", &array, "-i", npy.to_str().unwrap()], 1);
    assert!(err.contains("shorter than its header says"), "{err}");
    let err = fails(
        &[
            "create", &array, "--shape", "4", "--dtype", "uint16", "--shards", "4",
        ],
        2,
    );
    assert!(err.contains("--shards needs --chunks"), "{err}");
    let err = fails(
        &[
            "create", &array, "--shape", "4", "--dtype", "uint16", "--codec", "lzma",
        ],
        2,
    );
    assert!(err.contains("--codec \"lzma\""), "{err}");
}

/// int2/int4/uint2/uint4 arrays take the int8/uint8 files `get` writes of them (or any
/// numeric file), each value checked against the narrower range; a value out of it fails the
/// whole put, naming the element, and nothing is written.
#[test]
fn put_writes_small_integer_arrays_from_byte_files() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("x.npy");
    let file = npy.to_str().unwrap();
    let out = dir.path().join("out.npy");
    for (dtype, descr, values, bad) in [
        ("int4", "|i1", vec![-8i8, -1, 0, 7], 8i8),
        ("int2", "|i1", vec![-2, -1, 0, 1], -3),
        ("uint4", "|u1", vec![0, 1, 14, 15], 16),
        ("uint2", "|u1", vec![0, 1, 2, 3], 4),
    ] {
        let array = dir
            .path()
            .join(format!("{dtype}.zarr"))
            .display()
            .to_string();
        ok(&[
            "create",
            &array,
            "--shape",
            "4",
            "--dtype",
            dtype,
            "--chunks",
            "2",
            "--codecs",
            r#"[{"name": "packbits"}]"#,
        ]);
        let bytes: Vec<u8> = values.iter().map(|&v| v as u8).collect();
        write_npy(&npy, descr, &[4], &bytes);
        ok(&["put", &array, "-i", file]);
        let want = format!(
            "[{}]\n",
            values
                .iter()
                .map(i8::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert_eq!(ok(&["get", &array, "-f", "json"]), want, "{dtype}");
        // What `get` exports, `put` takes back.
        ok(&["get", &array, "-f", "npy", "-o", out.to_str().unwrap()]);
        ok(&["put", &array, "-i", out.to_str().unwrap()]);
        assert_eq!(ok(&["get", &array, "-f", "json"]), want, "{dtype}");
        // Out of range: an error naming the element; the array is unchanged.
        let mut wrong = bytes.clone();
        wrong[3] = bad as u8;
        write_npy(&npy, descr, &[4], &wrong);
        let err = fails(&["put", &array, "-i", file], 1);
        let shown = if descr == "|u1" {
            (bad as u8).to_string()
        } else {
            bad.to_string()
        };
        assert!(
            err.contains(&format!(
                "element [3]: {shown} is out of the range of {dtype}"
            )),
            "{dtype}: {err}"
        );
        assert_eq!(ok(&["get", &array, "-f", "json"]), want, "{dtype}");
    }
    // Wider integer files convert too.
    let array = dir.path().join("int4.zarr").display().to_string();
    write_npy(&npy, "<i8", &[2], &i64_bytes(&[-5, 6]));
    ok(&["put", &array, "-i", file, "-r", "1:3"]);
    assert_eq!(ok(&["get", &array, "-f", "json"]), "[-8, -5, 6, 7]\n");
}

#[test]
fn put_converts_numbers_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("i.zarr").display().to_string();
    ok(&[
        "create", &array, "--shape", "3,4", "--dtype", "int32", "--chunks", "2,2",
    ]);
    let npy = dir.path().join("x.npy");
    let file = npy.to_str().unwrap();
    // numpy's default integers (int64) into an int32 array.
    let values: Vec<i64> = (-5..7).collect();
    write_npy(&npy, "<i8", &[3, 4], &i64_bytes(&values));
    ok(&["put", &array, "-i", file]);
    assert_eq!(
        ok(&["get", &array, "-f", "json"]),
        "[[-5, -4, -3, -2], [-1, 0, 1, 2], [3, 4, 5, 6]]\n"
    );
    // Whole floats in either byte order convert too; into a region, squeezed dimension
    // included.
    let floats: Vec<u8> = [10.0f64, -20.0, 30.0, 2e9]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    write_npy(&npy, ">f8", &[4], &floats);
    ok(&["put", &array, "-i", file, "-r", "1,:"]);
    assert_eq!(
        ok(&["get", &array, "-r", "1", "-f", "json"]),
        "[10, -20, 30, 2000000000]\n"
    );

    // A value out of range: the error names it and its index in the file, and nothing is
    // written (the whole file is checked first), even what comes before it.
    let before = ok(&["get", &array, "-f", "json"]);
    let mut values = vec![7i64; 12];
    values[6] = 1 << 40;
    write_npy(&npy, "<i8", &[3, 4], &i64_bytes(&values));
    let err = fails(&["put", &array, "-i", file], 1);
    assert!(err.contains("x.npy (int64) to the array's int32"), "{err}");
    assert!(
        err.contains("element [1, 2]: 1099511627776 is out of the range of int32"),
        "{err}"
    );
    assert_eq!(ok(&["get", &array, "-f", "json"]), before);
    // Into a region with a single-index dimension, the index is the file's.
    write_npy(&npy, "<i8", &[3], &i64_bytes(&[1, -1 << 33, 3]));
    let err = fails(&["put", &array, "-i", file, "-r", "0:3,2"], 1);
    assert!(err.contains("element [1]: -8589934592 is out"), "{err}");
    // Fractions never become integers, and negative values never unsigned ones.
    let halves: Vec<u8> = [1.0f64, 0.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    write_npy(&npy, "<f8", &[1, 2], &halves);
    let err = fails(&["put", &array, "-i", file, "-r", "2,0:2"], 1);
    assert!(
        err.contains("element [0, 1]: 0.5 is not a whole number, so it cannot become int32"),
        "{err}"
    );
    assert_eq!(ok(&["get", &array, "-f", "json"]), before);
    let unsigned = dir.path().join("u.zarr").display().to_string();
    ok(&["create", &unsigned, "--shape", "2", "--dtype", "uint8"]);
    write_npy(&npy, "<i8", &[2], &i64_bytes(&[255, -1]));
    let err = fails(&["put", &unsigned, "-i", file], 1);
    assert!(
        err.contains("element [1]: -1 is out of the range of uint8"),
        "{err}"
    );
    // Integers too large for a float's mantissa are not rounded.
    let float = dir.path().join("f.zarr").display().to_string();
    ok(&["create", &float, "--shape", "2", "--dtype", "float32"]);
    write_npy(&npy, "<i8", &[2], &i64_bytes(&[16_777_216, 16_777_217]));
    let err = fails(&["put", &float, "-i", file], 1);
    assert!(
        err.contains("element [1]: 16777217 cannot be stored exactly as float32"),
        "{err}"
    );
    write_npy(&npy, "|b1", &[2], &[1, 0]);
    ok(&["put", &float, "-i", file]);
    assert_eq!(ok(&["get", &float, "-f", "json"]), "[1.0, 0.0]\n");
}

fn i64_bytes(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn contradictory_codec_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("c.zarr");
    let array_text = array.to_str().unwrap();
    let create = |codecs: &[&str]| {
        let mut args = vec!["create", array_text, "--shape", "4", "--dtype", "uint8"];
        for codec in codecs {
            args.extend(["--codec", codec]);
        }
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |codecs: &[&str]| {
        let args = create(codecs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&args, 2)
    };
    let err = run(&["none", "zstd"]);
    assert!(
        err.contains(
            "`--codec none` means no compression and must be the only --codec (given: --codec \
             none --codec zstd)"
        ),
        "{err}"
    );
    assert!(run(&["crc32c", "none"]).contains("must be the only --codec"));
    let err = run(&["zstd:3", "gzip:5"]);
    assert!(
        err.contains("--codec zstd:3 and --codec gzip:5 are two compressors; choose one"),
        "{err}"
    );
    assert!(run(&["crc32c", "crc32c"]).contains("crc32c is given twice"));
    // Nothing was created.
    assert!(!array.exists());
    // `none` alone is no compression; copy checks its flags the same way.
    let args = create(&["none"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&args);
    let info: Value = serde_json::from_str(&ok(&["info", "--json", array_text])).unwrap();
    assert_eq!(info["metadata"]["codecs"].as_array().unwrap().len(), 1);
    let copy = dir.path().join("d.zarr");
    let err = fails(
        &[
            "copy",
            array_text,
            copy.to_str().unwrap(),
            "--codec",
            "zstd",
            "--codec",
            "none",
        ],
        2,
    );
    assert!(err.contains("must be the only --codec"), "{err}");
    assert!(!copy.join("zarr.json").exists());
}

#[test]
fn verbose_shows_the_library_tracing_and_quiet_hides_notes() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("v.zarr").display().to_string();
    let out = zarr_env(
        &["-vv", "create", &array, "--shape", "4", "--dtype", "uint8"],
        &[],
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("created array"), "{err}");
    let out = zarr_env(
        &[
            "--quiet",
            "create",
            &array,
            "--shape",
            "4",
            "--dtype",
            "uint8",
            "--overwrite",
        ],
        &[],
    );
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn create_writes_zarr_v2_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("v2.zarr");
    let array = format!("{}/g/t", store.display());
    ok(&[
        "create",
        &array,
        "--shape",
        "4,6",
        "--dtype",
        "float32",
        "--chunks",
        "2,3",
        "--codec",
        "zstd:2",
        "--fill-value",
        "NaN",
        "--attr",
        "units=K",
        "--dimension-names",
        "y,x",
        "--zarr-format",
        "2",
    ]);
    let zarray: Value =
        serde_json::from_slice(&std::fs::read(store.join("g/t/.zarray")).unwrap()).unwrap();
    assert_eq!(zarray["dtype"], "<f4");
    assert_eq!(zarray["fill_value"], "NaN");
    assert_eq!(
        zarray["compressor"],
        // As numcodecs writes it: tensorstore refuses a `checksum` member that is false.
        json!({"id": "zstd", "level": 2})
    );
    let zattrs: Value =
        serde_json::from_slice(&std::fs::read(store.join("g/t/.zattrs")).unwrap()).unwrap();
    // The dimension names where xarray keeps them, and read back as the names.
    assert_eq!(
        zattrs,
        json!({"units": "K", "_ARRAY_DIMENSIONS": ["y", "x"]})
    );
    assert!(store.join("g/.zgroup").exists() && !store.join("g/zarr.json").exists());
    let info = ok(&["info", &array]);
    assert!(info.contains("Zarr v2"), "{info}");
    let described: Value = serde_json::from_str(&ok(&["info", &array, "--json"])).unwrap();
    assert_eq!(described["metadata"]["dimension_names"], json!(["y", "x"]));
    let err = fails(
        &[
            "create",
            &format!("{}/s", store.display()),
            "--shape",
            "4",
            "--dtype",
            "uint8",
            "--chunks",
            "2",
            "--shards",
            "4",
            "--zarr-format",
            "2",
        ],
        2,
    );
    assert!(err.contains("--shards: Zarr v2 has no sharding"), "{err}");
    // Below a v2 group, a new array is v2 unless told otherwise; v3 there is refused (it
    // would be invisible to zarr-python).
    let sibling = format!("{}/g/u", store.display());
    ok(&["create", &sibling, "--shape", "3", "--dtype", "int8"]);
    assert!(store.join("g/u/.zarray").exists());
    let err = fails(
        &[
            "create",
            &format!("{}/g/w", store.display()),
            "--shape",
            "3",
            "--dtype",
            "int8",
            "--zarr-format",
            "3",
        ],
        2,
    );
    assert!(err.contains("the group /g above is Zarr v2"), "{err}");
}

#[test]
fn create_chooses_chunks_and_refuses_what_would_go_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("d.zarr");
    let big = format!("{}/big", store.display());
    // No --chunks: about 1 MiB chunks, not one chunk of 256 MB.
    let out = zarr_env(
        &["create", &big, "--shape", "8000,8000", "--dtype", "float32"],
        &[],
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("(chunks 500x500)"), "{err}");
    let small = format!("{}/small", store.display());
    let out = zarr_env(
        &["create", &small, "--shape", "10,20", "--dtype", "int8"],
        &[],
    );
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("(chunks 10x20)")
    );
    // An existing node: a usage error naming the flag.
    let err = fails(&["create", &small, "--shape", "3", "--dtype", "int8"], 2);
    assert!(err.contains("already exists; use --overwrite"), "{err}");
    ok(&[
        "create",
        &small,
        "--shape",
        "3",
        "--dtype",
        "int8",
        "--overwrite",
    ]);
    // A group with consolidated metadata: the new array is not in it until re-consolidated.
    ok(&["consolidate", store.to_str().unwrap()]);
    let out = zarr_env(
        &[
            "create",
            &format!("{}/late", store.display()),
            "--shape",
            "3",
            "--dtype",
            "int8",
        ],
        &[],
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("the group / has consolidated metadata"),
        "{err}"
    );
}

#[test]
fn consolidate_records_the_hierarchy_for_tree_and_readers() {
    for (format, record) in [("3", "zarr.json"), ("2", ".zmetadata")] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("c.zarr");
        for (path, dtype) in [("images/raw", "uint16"), ("labels", "int8")] {
            ok(&[
                "create",
                &format!("{}/{path}", store.display()),
                "--shape",
                "4,4",
                "--dtype",
                dtype,
                "--chunks",
                "2,2",
                "--zarr-format",
                format,
            ]);
        }
        let before = ok(&["tree", store.to_str().unwrap()]);
        assert!(before.starts_with("/\n"), "{before}");
        let out = ok(&["consolidate", store.to_str().unwrap()]);
        assert_eq!(
            out,
            format!(
                "recorded the metadata of 3 nodes below / in {}\n",
                if format == "3" {
                    "its zarr.json"
                } else {
                    ".zmetadata"
                }
            )
        );
        let doc: Value =
            serde_json::from_slice(&std::fs::read(store.join(record)).unwrap()).unwrap();
        let entries = match format {
            "3" => &doc["consolidated_metadata"]["metadata"],
            _ => &doc["metadata"],
        };
        assert!(entries.as_object().unwrap().len() >= 3, "{doc}");
        let after = ok(&["tree", store.to_str().unwrap()]);
        assert_eq!(
            after,
            before.replacen("/\n", "/  (from consolidated metadata)\n", 1)
        );
        // A subgroup through --path, and an array refused.
        let out = ok(&["consolidate", store.to_str().unwrap(), "--path", "images"]);
        assert!(out.contains("1 node below /images"), "{out}");
        let err = fails(&["consolidate", &format!("{}/labels", store.display())], 1);
        assert!(err.contains("/labels is an array"), "{err}");
    }
}

/// `rm` erases a node and everything below it, takes it out of the group's consolidated
/// record, and refuses a store's root and nodes that are not there.
#[test]
fn rm_removes_a_node_and_everything_below_it() {
    for (format, record) in [("3", "zarr.json"), ("2", ".zmetadata")] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("r.zarr");
        let root = store.to_str().unwrap();
        for path in ["images/raw", "images/mask", "labels"] {
            ok(&[
                "create",
                &format!("{root}/{path}"),
                "--shape",
                "4",
                "--dtype",
                "uint8",
                "--chunks",
                "2",
                "--fill-value",
                "7",
                "--zarr-format",
                format,
            ]);
        }
        ok(&["consolidate", root]);

        let out = ok(&["rm", &format!("{root}/images")]);
        assert_eq!(out, "removed /images and everything below it\n");
        assert!(!store.join("images").exists());
        assert!(store.join("labels").exists());
        let tree = ok(&["tree", root]);
        assert!(!tree.contains("images"), "{tree}");
        assert!(tree.contains("labels"), "{tree}");
        let text = std::fs::read_to_string(store.join(record)).unwrap();
        assert!(!text.contains("images"), "{text}");

        let err = fails(&["rm", &format!("{root}/images")], 1);
        assert!(err.contains("no such file or directory"), "{err}");
        let err = fails(&["rm", root, "--path", "images"], 1);
        assert!(err.contains("no Zarr node at \"/images\""), "{err}");
        let err = fails(&["rm", root, "--path", "labels/c"], 1);
        assert!(
            err.contains("\"/labels\" is an array, not a group"),
            "{err}"
        );
        let err = fails(&["rm", root], 2);
        assert!(err.contains("root of its store"), "{err}");
        assert!(store.join("labels").exists());
        // Through --path as well.
        ok(&["rm", root, "--path", "labels", "-q"]);
        assert!(!store.join("labels").exists());
    }
}

/// `--codecs JSON` takes any registered codec, as `zarr.json` lists them.
#[test]
fn create_takes_a_codec_list_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let raw_of = |target: &str| {
        let file = dir.path().join("out.raw");
        ok(&["get", target, "-f", "raw", "-o", file.to_str().unwrap()]);
        std::fs::read(file).unwrap()
    };
    let info =
        |target: &str| -> Value { serde_json::from_str(&ok(&["info", "--json", target])).unwrap() };

    // packbits (zarr-extensions): 20 booleans in one chunk of 3 bytes.
    let flags = dir.path().join("flags.zarr");
    let flags_text = flags.display().to_string();
    ok(&[
        "create",
        &flags_text,
        "--shape",
        "20",
        "--dtype",
        "bool",
        "--codecs",
        r#"[{"name": "packbits"}]"#,
    ]);
    let bits: Vec<u8> = (0..20u8).map(|i| u8::from(i % 3 == 0)).collect();
    let npy = dir.path().join("flags.npy");
    write_npy(&npy, "|b1", &[20], &bits);
    ok(&["put", &flags_text, "-i", npy.to_str().unwrap()]);
    assert_eq!(std::fs::read(flags.join("c/0")).unwrap().len(), 3);
    assert_eq!(raw_of(&flags_text), bits);
    assert_eq!(
        info(&flags_text)["metadata"]["codecs"],
        json!([{"name": "packbits"}])
    );

    // Floats stored as scaled bytes (zarr-extensions scale_offset + cast_value): 101.25
    // is (1.25 * 10) = 12.5, which rounds to the even 12, and reads back as 101.2.
    let scaled = dir.path().join("scaled.zarr").display().to_string();
    ok(&[
        "create",
        &scaled,
        "--shape",
        "4",
        "--dtype",
        "float64",
        "--fill-value",
        "100",
        "--codecs",
        r#"[{"name": "scale_offset", "configuration": {"offset": 100, "scale": 10}},
            {"name": "cast_value", "configuration": {"data_type": "uint8"}}, "bytes"]"#,
    ]);
    let npy = dir.path().join("scaled.npy");
    let floats: Vec<u8> = [101.25f64, 125.5, 100.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write_npy(&npy, "<f8", &[3], &floats);
    ok(&["put", &scaled, "-i", npy.to_str().unwrap(), "-r", "0:3"]);
    assert_eq!(ok(&["get", &scaled]), "101.2\n125.5\n100.0\n100.0\n");
    assert_eq!(
        std::fs::read(dir.path().join("scaled.zarr/c/0")).unwrap(),
        [12, 255, 0, 0]
    );
    // 130 is (30 * 10) = 300, beyond uint8: refused, naming the element.
    write_npy(&npy, "<f8", &[1], &130f64.to_le_bytes());
    let err = fails(
        &["put", &scaled, "-i", npy.to_str().unwrap(), "-r", "3:4"],
        1,
    );
    assert!(
        err.contains("element [3]") && err.contains("uint8"),
        "{err}"
    );

    // A numcodecs filter before the serializer, read from a file, in shards.
    let list = dir.path().join("codecs.json");
    std::fs::write(
        &list,
        r#"[{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}},
            {"name": "bytes", "configuration": {"endian": "big"}},
            "crc32c"]"#,
    )
    .unwrap();
    let series = dir.path().join("series.zarr").display().to_string();
    ok(&[
        "create",
        &series,
        "--shape",
        "16",
        "--dtype",
        "int32",
        "--chunks",
        "4",
        "--shards",
        "8",
        "--codecs",
        &format!("@{}", list.display()),
    ]);
    let values: Vec<u8> = (0..16i32)
        .flat_map(|i| (i * i - 40).to_le_bytes())
        .collect();
    let npy = dir.path().join("series.npy");
    write_npy(&npy, "<i4", &[16], &values);
    ok(&["put", &series, "-i", npy.to_str().unwrap()]);
    assert_eq!(raw_of(&series), values);
    let inner = &info(&series)["metadata"]["codecs"][0]["configuration"]["codecs"];
    let names: Vec<&str> = inner
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["numcodecs.delta", "bytes", "crc32c"]);

    // `copy --codecs` re-encodes with the list given.
    let copied = dir.path().join("copied.zarr").display().to_string();
    ok(&[
        "copy",
        &series,
        &copied,
        "--shards",
        "none",
        "--codecs",
        r#"[{"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "gzip", "configuration": {"level": 1}}]"#,
    ]);
    assert_eq!(raw_of(&copied), values);
    assert_eq!(
        info(&copied)["metadata"]["codecs"][1]["name"],
        json!("gzip")
    );

    // Bad lists are refused before anything is written, naming the problem.
    let bad = dir.path().join("bad.zarr").display().to_string();
    let create = |codecs: &str| {
        vec![
            "create".to_owned(),
            bad.clone(),
            "--shape".to_owned(),
            "4".to_owned(),
            "--dtype".to_owned(),
            "uint16".to_owned(),
            "--codecs".to_owned(),
            codecs.to_owned(),
        ]
    };
    let run = |codecs: &str, code: i32| {
        let args = create(codecs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&args, code)
    };
    assert!(run("[{", 2).contains("--codecs: not JSON"));
    assert!(run(r#"{"name": "bytes"}"#, 2).contains("a JSON list of codecs"));
    assert!(run("[]", 2).contains("the list is empty"));
    assert!(run("[42]", 2).contains("codec 0"));
    let err = run(r#"[{"name": "bytes"}, {"name": "no.such.codec"}]"#, 1);
    assert!(err.contains("no.such.codec"), "{err}");
    let err = run(r#"[{"name": "bytes"}]"#, 1);
    assert!(err.contains("`endian` is required"), "{err}");
    let err = run(r#"[{"name": "zstd", "configuration": {"level": 1}}]"#, 1);
    assert!(err.contains("comes before the array->bytes codec"), "{err}");
    assert!(!std::path::Path::new(&bad).join("zarr.json").exists());
    let mut both = create(r#"[{"name": "bytes"}]"#);
    both.extend(["--codec".to_owned(), "zstd".to_owned()]);
    let both: Vec<&str> = both.iter().map(String::as_str).collect();
    let err = fails(&both, 2);
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn create_takes_numpy_type_codes_and_leaves_nothing_behind_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.zarr");
    ok(&[
        "create",
        a.to_str().unwrap(),
        "--shape",
        "3",
        "--dtype",
        "<f4",
    ]);
    let info = ok(&["info", a.to_str().unwrap()]);
    assert!(info.contains("float32"), "{info}");
    let err = fails(
        &[
            "create",
            dir.path().join("b.zarr").to_str().unwrap(),
            "--shape",
            "3",
            "--dtype",
            "floaty",
        ],
        2,
    );
    assert!(
        err.contains("not a data type (unknown data type `floaty`"),
        "{err}"
    );
    let err = fails(
        &[
            "create",
            dir.path().join("c.zarr").to_str().unwrap(),
            "--shape",
            "3",
            "--dtype",
            "int32",
            "--fill-value",
            "abc",
        ],
        2,
    );
    assert!(err.contains("expected an integer"), "{err}");
    // Neither failure made a store directory.
    assert!(!dir.path().join("b.zarr").exists() && !dir.path().join("c.zarr").exists());
    // Reading a file:// URL that does not exist creates nothing either.
    let missing = dir.path().join("x/y.zarr");
    let url = format!("file://{}", missing.display());
    let err = fails(&["info", &url], 1);
    assert!(err.contains("no such directory"), "{err}");
    assert!(!dir.path().join("x").exists());
}

#[test]
fn put_writes_nothing_from_a_short_file() {
    // More than one slab (about 64 MiB each): the file ends in the second, so the first was
    // written before the end was found.
    const MIB: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("big.zarr").display().to_string();
    let len = (80 * MIB).to_string();
    let chunks = (4 * MIB).to_string();
    ok(&[
        "create", &array, "--shape", &len, "--dtype", "uint8", "--chunks", &chunks, "--codec",
        "none",
    ]);
    let npy = dir.path().join("x.npy");
    // An interrupted download: the header says 80 MiB, the file holds 70.
    write_npy(&npy, "|u1", &[80 * MIB], &vec![1u8; 70 * MIB as usize]);
    let err = fails(&["put", &array, "-i", npy.to_str().unwrap()], 1);
    assert!(err.contains("shorter than its header says"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(ok(&["get", &array, "-r", "0:2"]), "0\n0\n");
    assert!(!std::path::Path::new(&array).join("c/0").exists());
}

#[test]
fn a_create_that_fails_leaves_no_directory_to_trip_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("new.zarr");
    let array = store.join("images/raw").display().to_string();
    // The codec list is checked by the library, after the store's directory was made.
    let err = fails(
        &[
            "create",
            &array,
            "--shape",
            "4",
            "--dtype",
            "uint8",
            "--codecs",
            r#"["bytes", "no_such_codec"]"#,
        ],
        1,
    );
    assert!(err.contains("no_such_codec"), "{err}");
    assert!(!store.exists());
    // So the next attempt makes store new.zarr with node /images/raw, not a store at
    // new.zarr/images/raw below a plain directory.
    ok(&["create", &array, "--shape", "4", "--dtype", "uint8"]);
    let tree = ok(&["tree", store.to_str().unwrap()]);
    assert!(tree.contains("    raw  uint8 4"), "{tree}");
}

#[test]
fn put_appends_along_an_axis() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("series.zarr").display().to_string();
    ok(&[
        "create", &array, "--shape", "0,3", "--dtype", "int16", "--chunks", "2,3",
    ]);
    let npy = dir.path().join("rows.npy");
    let file = npy.to_str().unwrap();
    let rows =
        |values: &[i16]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
    // Three rows, then two more: the second append starts inside a partly filled chunk.
    write_npy(&npy, "<i2", &[3, 3], &rows(&[1, 2, 3, 4, 5, 6, 7, 8, 9]));
    ok(&["put", &array, "-i", file, "--append", "0"]);
    write_npy(&npy, "<i2", &[2, 3], &rows(&[10, 11, 12, 13, 14, 15]));
    ok(&["put", &array, "-i", file, "--append", "0"]);
    let info: Value = serde_json::from_str(&ok(&["info", "--json", &array])).unwrap();
    assert_eq!(info["metadata"]["shape"], json!([5, 3]));
    assert_eq!(
        ok(&["get", &array, "-f", "json"]),
        "[[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12], [13, 14, 15]]\n"
    );
    // Along the other axis: one more column.
    write_npy(&npy, "<i2", &[5, 1], &rows(&[-1, -2, -3, -4, -5]));
    ok(&["put", &array, "-i", file, "--append", "1"]);
    assert_eq!(
        ok(&["get", &array, "-r", ":,3", "-f", "json"]),
        "[-1, -2, -3, -4, -5]\n"
    );

    // Refused before anything is written: a file whose other dimensions differ, an axis the
    // array does not have, and --append with --region.
    write_npy(&npy, "<i2", &[2, 3], &rows(&[0; 6]));
    let err = fails(&["put", &array, "-i", file, "--append", "0"], 2);
    assert!(
        err.contains("has shape 2x3; appending along axis 0 of an array of shape 5x4 takes a file of shape nx4"),
        "{err}"
    );
    let err = fails(&["put", &array, "-i", file, "--append", "2"], 2);
    assert!(err.contains("the array has 2 dimensions"), "{err}");
    fails(
        &["put", &array, "-i", file, "--append", "0", "-r", "0:2,:"],
        2,
    );
    // A value that does not convert fails the append, and the shape stays as it was.
    let big: Vec<u8> = [1i64, 2, 3, 70_000]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write_npy(&npy, "<i8", &[1, 4], &big);
    fails(&["put", &array, "-i", file, "--append", "0"], 1);
    let info: Value = serde_json::from_str(&ok(&["info", "--json", &array])).unwrap();
    assert_eq!(info["metadata"]["shape"], json!([5, 4]));
}

#[test]
fn put_appends_to_arrays_whose_edge_chunks_end_at_the_array_end() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("bounded.zarr");
    let array = store.display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "1,3",
        "--dtype",
        "int16",
        "--chunks",
        "2,2",
        "--codecs",
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#,
    ]);
    // zarrs' bounded grid: the chunks of the last row and column are cut at the end.
    let meta_path = store.join("zarr.json");
    let mut meta: Value = serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    meta["chunk_grid"]["name"] = json!("zarrs.regular_bounded");
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let npy = dir.path().join("rows.npy");
    let file = npy.to_str().unwrap();
    let rows =
        |values: &[i16]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
    write_npy(&npy, "<i2", &[1, 3], &rows(&[1, 2, 3]));
    ok(&["put", &array, "-i", file, "-r", "0:1,:"]);
    // The chunk of row 0 holds one row; appending re-encodes it with two.
    write_npy(&npy, "<i2", &[2, 3], &rows(&[4, 5, 6, 7, 8, 9]));
    ok(&["put", &array, "-i", file, "--append", "0"]);
    assert_eq!(
        ok(&["get", &array, "-f", "json"]),
        "[[1, 2, 3], [4, 5, 6], [7, 8, 9]]\n"
    );
    write_npy(&npy, "<i2", &[3, 1], &rows(&[-1, -2, -3]));
    ok(&["put", &array, "-i", file, "--append", "1"]);
    assert_eq!(
        ok(&["get", &array, "-f", "json"]),
        "[[1, 2, 3, -1], [4, 5, 6, -2], [7, 8, 9, -3]]\n"
    );
    let info = ok(&["info", &array]);
    assert!(
        info.contains("cut at the array's end (zarrs.regular_bounded)"),
        "{info}"
    );
    // The corner chunk holds one row of two elements: four bytes with `bytes` alone.
    assert_eq!(std::fs::read(store.join("c/1/1")).unwrap().len(), 4);
    ok(&["verify", &array]);
}

#[test]
fn create_makes_rectilinear_grids_of_chunks_and_of_shards() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.zarr");
    let values: Vec<i16> = (0..30 * 8).map(|i| i * 3 - 100).collect();
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let npy = dir.path().join("all.npy");
    write_npy(&npy, "<i2", &[30, 8], &data);
    let cases = [
        // Edges 5, 10, 10, 8 (past the end is allowed) by 4.
        (
            "chunks",
            vec!["--chunks", "[[5,[10,2],8],4]"],
            "(rectilinear chunks)",
        ),
        (
            "shards",
            vec!["--chunks", "5,4", "--shards", "[[10,20],8]"],
            "(rectilinear shards of chunks 5x4)",
        ),
    ];
    for (name, flags, chunking) in cases {
        let array = format!("{}/{name}", store.display());
        let mut args = vec!["create", &array, "--shape", "30,8", "--dtype", "int16"];
        args.extend(&flags);
        let out = zarr_env(&args, &[]);
        let note = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success() && note.contains(chunking), "{note}");
        ok(&["put", &array, "-i", npy.to_str().unwrap()]);
        let back = dir.path().join(format!("{name}.npy"));
        ok(&["get", &array, "-f", "npy", "-o", back.to_str().unwrap()]);
        assert_eq!(
            parse_npy(&std::fs::read(&back).unwrap()).data,
            data,
            "{name}"
        );
        let info: Value = serde_json::from_str(&ok(&["info", "--json", &array])).unwrap();
        assert_eq!(
            info["metadata"]["chunk_grid"]["name"], "rectilinear",
            "{name}"
        );
    }
    let info: Value = serde_json::from_str(&ok(&[
        "info",
        "--json",
        &format!("{}/chunks", store.display()),
    ]))
    .unwrap();
    assert_eq!(
        info["metadata"]["chunk_grid"]["configuration"]["chunk_shapes"],
        json!([[5, [10, 2], 8], 4])
    );
    assert_eq!(info["chunks"]["present"], 8);

    // What cannot be made is a usage error naming the flag, and creates nothing.
    let bad = format!("{}/bad.zarr/a", dir.path().display());
    let refused = |flags: &[&str], message: &str| {
        let mut args = vec!["create", &bad, "--shape", "30,8", "--dtype", "int16"];
        args.extend(flags);
        let err = fails(&args, 2);
        assert!(err.contains(message), "{flags:?}: {err}");
    };
    refused(
        &["--chunks", "5,4", "--shards", "[[10,12,10],8]"],
        "--shards: a shard edge of 12 is not a multiple of the chunk shape 5x4 in dimension 0",
    );
    refused(
        &["--chunks", "[[5,20],4]"],
        "does not cover the array's shape 30x8",
    );
    refused(&["--chunks", "[[5,25]]"], "has 1 dimensions, the array 2");
    refused(&["--chunks", "[[0,30],4]"], "greater than zero");
    refused(
        &["--chunks", "[[5,25],4"],
        "not a JSON list of chunk lengths",
    );
    refused(
        &["--chunks", "[[5,25],4]", "--shards", "10,8"],
        "give the rectilinear grid to --shards",
    );
    refused(
        &["--chunks", "[[5,25],4]", "--zarr-format", "2"],
        "--chunks: Zarr v2 has no rectilinear chunk grids",
    );
    assert!(!dir.path().join("bad.zarr").exists());
}

/// `create --chunk-key-encoding` names the chunk files; `info` shows the encoding; bad
/// encodings are usage errors that leave nothing behind.
#[test]
fn create_takes_a_chunk_key_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("keys.zarr");
    let npy = dir.path().join("in.npy");
    let data: Vec<u8> = (0..12u8).collect();
    write_npy(&npy, "|u1", &[3, 4], &data);
    for (name, encoding, file) in [
        ("plain", "v2", "1.1"),
        (
            "tiff",
            r#"{"name":"suffix","configuration":{"suffix":".tiff","base_encoding":"default"}}"#,
            "c/1/1.tiff",
        ),
        (
            "template",
            r#"{"name":"template","configuration":{"format":"r{0:03}/{1}.raw"}}"#,
            "r001/1.raw",
        ),
        (
            "fanout",
            r#"{"name":"fanout","configuration":{"max_children":3}}"#,
            "d0/1/d1/1/c",
        ),
    ] {
        let array = format!("{}/{name}", store.display());
        ok(&[
            "create",
            &array,
            "--shape",
            "3,4",
            "--dtype",
            "uint8",
            "--chunks",
            "2,2",
            "--chunk-key-encoding",
            encoding,
        ]);
        ok(&["put", &array, "-i", npy.to_str().unwrap()]);
        assert!(store.join(name).join(file).is_file(), "{name}: {file}");
        let info: Value = serde_json::from_str(&ok(&["info", "--json", &array])).unwrap();
        assert_eq!(info["chunks"]["present"], 4, "{name}");
        let got: Value = serde_json::from_str(&ok(&["get", &array, "-f", "json"])).unwrap();
        assert_eq!(
            got,
            json!([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]),
            "{name}"
        );
    }
    let bad = store.join("bad");
    let bad = bad.to_str().unwrap();
    for (encoding, needle) in [
        ("hilbert", "unknown chunk key encoding `hilbert`"),
        (
            r#"{"name":"template","configuration":{"format":"{0}"}}"#,
            "names 1 coordinate(s), not 2",
        ),
        (
            r#"{"name":"fanout","configuration":{"max_children":1}}"#,
            "max_children",
        ),
        ("{nope", "is not JSON"),
    ] {
        let err = fails(
            &[
                "create",
                bad,
                "--shape",
                "3,4",
                "--dtype",
                "uint8",
                "--chunk-key-encoding",
                encoding,
            ],
            2,
        );
        assert!(err.contains(needle), "{encoding}: {err}");
        assert!(!store.join("bad").exists());
    }
}

#[test]
fn optional_arrays_take_and_give_records_of_value_and_presence() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("opt.zarr").display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "2,3",
        "--dtype",
        "zarrs.optional<int16>",
        "--chunks",
        "2,2",
    ]);
    // Unwritten: every value missing.
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&["get", &array, "-f", "json"])).unwrap(),
        json!([[null, null, null], [null, null, null]])
    );
    let values = [Some(1i16), None, Some(-3), None, Some(5), Some(6)];
    let data: Vec<u8> = values
        .iter()
        .flat_map(|v| {
            let mut record = v.unwrap_or(0).to_le_bytes().to_vec();
            record.push(u8::from(v.is_some()));
            record
        })
        .collect();
    let npy = dir.path().join("in.npy");
    write_npy(
        &npy,
        "[('value', '<i2'), ('present', '|b1')]",
        &[2, 3],
        &data,
    );
    ok(&["put", &array, "-i", npy.to_str().unwrap()]);
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&["get", &array, "-f", "json"])).unwrap(),
        json!([[1, null, -3], [null, 5, 6]])
    );
    assert!(ok(&["get", &array, "-r", "0,1"]).contains("null"));
    // Exported as the same records, and put back unchanged.
    let out = dir.path().join("out.npy");
    ok(&["get", &array, "-f", "npy", "-o", out.to_str().unwrap()]);
    let bytes = std::fs::read(&out).unwrap();
    assert!(
        String::from_utf8_lossy(&bytes[..128]).contains("[('value', '<i2'), ('present', '|b1')]")
    );
    assert_eq!(&bytes[bytes.len() - data.len()..], &data[..]);
    ok(&["put", &array, "-i", out.to_str().unwrap()]);
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&["get", &array, "-f", "json"])).unwrap(),
        json!([[1, null, -3], [null, 5, 6]])
    );
    // A plain int16 file does not match.
    let plain = dir.path().join("plain.npy");
    write_npy(&plain, "<i2", &[2, 3], &[0; 12]);
    let e = fails(&["put", &array, "-i", plain.to_str().unwrap()], 2);
    assert!(e.contains("present"), "{e}");
}

#[test]
fn optional_strings_print_as_null_and_refuse_npy() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("names.zarr").display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "3",
        "--dtype",
        "zarrs.optional<string>",
        "--chunks",
        "2",
    ]);
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&["get", &array, "-f", "json"])).unwrap(),
        json!([null, null, null])
    );
    let out = dir.path().join("out.npy");
    let e = fails(
        &["get", &array, "-f", "npy", "-o", out.to_str().unwrap()],
        2,
    );
    assert!(e.contains("numpy has no dtype"), "{e}");
    assert!(!out.exists(), "nothing written");
    let npy = dir.path().join("in.npy");
    write_npy(&npy, "|S2", &[3], b"abcdef");
    let e = fails(&["put", &array, "-i", npy.to_str().unwrap()], 2);
    assert!(e.contains("put does not write"), "{e}");
}

/// The attributes recorded for `node` in a consolidated record file (`zarr.json` or
/// `.zmetadata`), in either format.
fn recorded_attributes(record: &std::path::Path, node: &str, format: &str) -> Value {
    let doc: Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    match format {
        "3" => doc["consolidated_metadata"]["metadata"][node]["attributes"].clone(),
        _ => doc["metadata"][format!("{node}/.zattrs")].clone(),
    }
}

/// `attrs` prints a node's attributes, and sets, deletes and clears them on arrays and
/// groups of both formats, keeping a consolidated record above true.
#[test]
fn attrs_shows_and_changes_attributes() {
    for (format, record) in [("3", "zarr.json"), ("2", ".zmetadata")] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("a.zarr");
        let root = store.to_str().unwrap();
        let array = format!("{root}/images/raw");
        ok(&[
            "create",
            &array,
            "--shape",
            "4",
            "--dtype",
            "uint8",
            "--attr",
            "units=m",
            "--zarr-format",
            format,
        ]);
        ok(&["consolidate", root]);
        assert_eq!(
            serde_json::from_str::<Value>(&ok(&["attrs", &array])).unwrap(),
            json!({"units": "m"})
        );

        let out = ok(&[
            "attrs",
            &array,
            "--set",
            "scale=0.5",
            "--set",
            "axes=[\"x\"]",
            "--set",
            "units=km",
            "--set",
            "note=two words",
        ]);
        assert_eq!(out, "", "changes print nothing on stdout");
        let want = json!({"units": "km", "scale": 0.5, "axes": ["x"], "note": "two words"});
        assert_eq!(
            serde_json::from_str::<Value>(&ok(&["attrs", &array])).unwrap(),
            want
        );
        let info: Value = serde_json::from_str(&ok(&["info", "--json", &array])).unwrap();
        assert_eq!(info["metadata"]["attributes"], want, "{format}");
        assert_eq!(
            recorded_attributes(&store.join(record), "images/raw", format),
            want,
            "the root's record follows ({format})"
        );

        ok(&[
            "attrs", &array, "--delete", "note", "--delete", "axes", "-q",
        ]);
        assert_eq!(
            serde_json::from_str::<Value>(&ok(&["attrs", &array])).unwrap(),
            json!({"units": "km", "scale": 0.5})
        );
        // Deleting what is not there changes nothing.
        let err = fails(
            &["attrs", &array, "--delete", "scale", "--delete", "nope"],
            1,
        );
        assert!(
            err.contains("has no attribute \"nope\"") && err.contains("nothing was changed"),
            "{err}"
        );
        assert_eq!(
            serde_json::from_str::<Value>(&ok(&["attrs", &array])).unwrap(),
            json!({"units": "km", "scale": 0.5})
        );

        // Groups, through --path too; --clear then --set.
        ok(&["attrs", root, "--path", "images", "--set", "title=Images"]);
        ok(&["attrs", root, "--set", "draft=true"]);
        assert_eq!(
            serde_json::from_str::<Value>(&ok(&["attrs", &format!("{root}/images")])).unwrap(),
            json!({"title": "Images"})
        );
        assert_eq!(
            recorded_attributes(&store.join(record), "images", format),
            json!({"title": "Images"})
        );
        ok(&["attrs", root, "--clear", "--set", "title=Root"]);
        assert_eq!(
            serde_json::from_str::<Value>(&ok(&["attrs", root])).unwrap(),
            json!({"title": "Root"})
        );
        ok(&["attrs", &array, "--clear"]);
        assert_eq!(ok(&["attrs", &array]), "{}\n");
        let tree = ok(&["tree", root]);
        assert!(tree.contains("(from consolidated metadata)"), "{tree}");

        // Bad usage: not KEY=VALUE, the same key set and deleted, --clear with --delete.
        fails(&["attrs", &array, "--set", "novalue"], 2);
        fails(&["attrs", &array, "--set", "a=1", "--delete", "a"], 2);
        fails(&["attrs", &array, "--clear", "--delete", "a"], 2);
        let err = fails(&["attrs", &format!("{root}/missing")], 1);
        assert!(err.contains("missing"), "{err}");
    }
}

/// `resize` grows and shrinks arrays (`:` keeps a length, `+N` adds), erasing what falls
/// outside, and keeps a consolidated record above true.
#[test]
fn resize_grows_and_shrinks_arrays() {
    for (format, record) in [("3", "zarr.json"), ("2", ".zmetadata")] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("r.zarr");
        let root = store.to_str().unwrap();
        let array = format!("{root}/grid");
        ok(&[
            "create",
            &array,
            "--shape",
            "4,4",
            "--dtype",
            "int16",
            "--chunks",
            "2,2",
            "--fill-value",
            "-1",
            "--zarr-format",
            format,
        ]);
        let npy = dir.path().join("v.npy");
        let values: Vec<u8> = (0..16i16).flat_map(|v| v.to_le_bytes()).collect();
        write_npy(&npy, "<i2", &[4, 4], &values);
        ok(&["put", &array, "-i", npy.to_str().unwrap()]);
        ok(&["consolidate", root]);
        let recorded_shape = || {
            let doc: Value =
                serde_json::from_slice(&std::fs::read(store.join(record)).unwrap()).unwrap();
            match format {
                "3" => doc["consolidated_metadata"]["metadata"]["grid"]["shape"].clone(),
                _ => doc["metadata"]["grid/.zarray"]["shape"].clone(),
            }
        };

        let err = ok_stderr(&["resize", &array, "--shape", "+2,:"]);
        assert!(err.contains("from 4x4 to 6x4"), "{err}");
        assert_eq!(recorded_shape(), json!([6, 4]), "{format}");
        assert_eq!(
            ok(&["get", &array, "-r", "3:6,0", "-f", "json"]),
            "[12, -1, -1]\n"
        );
        // Shrinking erases what falls outside: growing again shows the fill value.
        let err = ok_stderr(&["resize", &array, "--shape", "3,1"]);
        assert!(
            err.contains("from 6x4 to 3x1") && err.contains("erased"),
            "{err}"
        );
        assert_eq!(recorded_shape(), json!([3, 1]), "{format}");
        assert_eq!(ok(&["get", &array, "-f", "json"]), "[[0], [4], [8]]\n");
        assert!(
            !store
                .join("grid")
                .join(chunk_key(format, "0", "1"))
                .exists()
        );
        ok(&["resize", &array, "--shape", "4,4", "-q"]);
        assert_eq!(
            ok(&["get", &array, "-f", "json"]),
            "[[0, -1, -1, -1], [4, -1, -1, -1], [8, -1, -1, -1], [-1, -1, -1, -1]]\n"
        );
        let err = ok_stderr(&["resize", &array, "--shape", "4,:"]);
        assert!(err.contains("nothing to do"), "{err}");

        // Bad usage: another rank, not a length; a group is not an array.
        let err = fails(&["resize", &array, "--shape", "4"], 2);
        assert!(err.contains("has 2 dimensions"), "{err}");
        fails(&["resize", &array, "--shape", "4,x"], 2);
        let err = fails(&["resize", root, "--shape", "4"], 1);
        assert!(err.contains("group"), "{err}");
    }
}

/// A chunk's file name below its array in `format`'s default chunk key encoding.
fn chunk_key(format: &str, i: &str, j: &str) -> std::path::PathBuf {
    match format {
        "3" => ["c", i, j].iter().collect(),
        _ => format!("{i}.{j}").into(),
    }
}

/// `create --group` makes groups (and the groups above them) in either format, leaves a
/// group already there alone, and refuses what would replace or contradict a node.
#[test]
fn create_makes_groups() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("g.zarr");
    let root = store.to_str().unwrap();
    let run1 = format!("{root}/experiments/run1");
    let err = ok_stderr(&["create", &run1, "--group", "--attr", "operator=ada"]);
    assert!(err.contains("a Zarr v3 group"), "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&["attrs", &run1])).unwrap(),
        json!({"operator": "ada"})
    );
    for dir in ["", "experiments", "experiments/run1"] {
        let doc: Value =
            serde_json::from_slice(&std::fs::read(store.join(dir).join("zarr.json")).unwrap())
                .unwrap();
        assert_eq!(doc["node_type"], "group", "{dir}");
    }
    assert_eq!(ok(&["tree", root]), "/\n  experiments/\n    run1/\n");
    // Again: nothing to do; with attributes or another format: refused, nothing changed.
    let err = ok_stderr(&["create", &run1, "--group"]);
    assert!(err.contains("nothing to do"), "{err}");
    let err = fails(&["create", &run1, "--group", "--attr", "x=1"], 2);
    assert!(err.contains("zarr attrs"), "{err}");
    let err = fails(
        &[
            "create",
            &format!("{root}/experiments/run2"),
            "--group",
            "--zarr-format",
            "2",
        ],
        2,
    );
    assert!(err.contains("Zarr v3: a Zarr v2 group below it"), "{err}");
    assert!(!store.join("experiments/run2").exists());
    // An array is not replaced by a group.
    ok(&[
        "create",
        &format!("{root}/data"),
        "--shape",
        "4",
        "--dtype",
        "uint8",
        "-q",
    ]);
    let err = fails(&["create", &format!("{root}/data"), "--group"], 2);
    assert!(err.contains("not a group"), "{err}");
    // Bad usage: array flags with --group, an array without its shape and type.
    fails(
        &["create", &format!("{root}/x"), "--group", "--shape", "4"],
        2,
    );
    fails(&["create", &format!("{root}/x"), "--dtype", "uint8"], 2);

    // Zarr v2, and an array created below takes the group's format.
    let v2 = dir.path().join("v2.zarr");
    let sub = format!("{}/sub", v2.display());
    ok(&[
        "create",
        &sub,
        "--group",
        "--zarr-format",
        "2",
        "--attr",
        "n=2",
        "-q",
    ]);
    assert!(v2.join(".zgroup").exists() && v2.join("sub/.zgroup").exists());
    assert_eq!(
        serde_json::from_slice::<Value>(&std::fs::read(v2.join("sub/.zattrs")).unwrap()).unwrap(),
        json!({"n": 2})
    );
    ok(&[
        "create",
        &format!("{sub}/a"),
        "--shape",
        "3",
        "--dtype",
        "int8",
        "-q",
    ]);
    assert!(v2.join("sub/a/.zarray").exists());
}
