//! `copy`: re-chunk, re-shard, re-compress and convert, between local stores and S3.

use std::path::Path;

use serde_json::Value;

use crate::common::{fails, fixture, ok, ok_stderr, write_npy, zarr_env};

fn raw(target: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.raw");
    ok(&["get", target, "-f", "raw", "-o", file.to_str().unwrap()]);
    std::fs::read(file).unwrap()
}

fn info(target: &str) -> Value {
    serde_json::from_str(&ok(&["info", "--json", target])).unwrap()
}

fn codec_names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A 37x23 uint16 array in chunks of 10x10 (edge chunks on both sides), partly written.
fn source(dir: &Path) -> String {
    let array = dir.join("src.zarr").display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "37,23",
        "--dtype",
        "uint16",
        "--chunks",
        "10,10",
        "--fill-value",
        "7",
        "--dimension-names",
        "y,x",
        "--attr",
        "origin=test",
    ]);
    let values: Vec<u8> = (0..30u16 * 23)
        .flat_map(|i| (i.wrapping_mul(37) % 5000).to_le_bytes())
        .collect();
    let npy = dir.join("v.npy");
    write_npy(&npy, "<u2", &[30, 23], &values);
    ok(&["put", &array, "-i", npy.to_str().unwrap(), "-r", "0:30"]);
    array
}

#[test]
fn copy_round_trips_through_shards_and_compressors() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let original = raw(&src);
    let sharded = dir.path().join("sharded.zarr").display().to_string();
    ok(&[
        "copy", &src, &sharded, "--shards", "16,24", "--chunks", "8,8", "--codec", "zstd:5",
    ]);
    let meta = info(&sharded);
    assert_eq!(meta["shard_shape"], serde_json::json!([16, 24]));
    assert_eq!(meta["inner_chunk_shape"], serde_json::json!([8, 8]));
    assert_eq!(
        codec_names(&meta["metadata"]["codecs"]),
        ["sharding_indexed"]
    );
    assert_eq!(meta["metadata"]["fill_value"], 7);
    assert_eq!(
        meta["metadata"]["dimension_names"],
        serde_json::json!(["y", "x"])
    );
    assert_eq!(meta["metadata"]["attributes"]["origin"], "test");
    assert_eq!(raw(&sharded), original);

    // Another compressor, keeping the shards.
    let gzipped = dir.path().join("gzipped.zarr").display().to_string();
    ok(&[
        "copy", &sharded, &gzipped, "--codec", "gzip:9", "--codec", "crc32c",
    ]);
    let meta = info(&gzipped);
    assert_eq!(meta["shard_shape"], serde_json::json!([16, 24]));
    let inner = &meta["metadata"]["codecs"][0]["configuration"]["codecs"];
    assert_eq!(codec_names(inner), ["bytes", "gzip", "crc32c"]);
    assert_eq!(raw(&gzipped), original);

    // And back to plain chunks.
    let back = dir.path().join("back.zarr").display().to_string();
    ok(&[
        "copy", &gzipped, &back, "--shards", "none", "--chunks", "10,10", "--codec", "zstd:3",
    ]);
    let meta = info(&back);
    assert_eq!(
        meta["metadata"]["chunk_grid"],
        info(&src)["metadata"]["chunk_grid"]
    );
    assert_eq!(codec_names(&meta["metadata"]["codecs"]), ["bytes", "zstd"]);
    assert_eq!(raw(&back), original);
    // Fill-value chunks stay unstored.
    assert_eq!(meta["chunks"]["present"], info(&src)["chunks"]["present"]);
    ok(&["verify", &back]);
}

/// A `uint16` array of `shape` with the chunk grid `grid` and codecs `codecs` (JSON), every
/// element written (its C-order index, times 7), as a hand-written `zarr.json` filled by
/// `put`; returns the target.
fn rectilinear_source(
    dir: &Path,
    name: &str,
    shape: [u64; 2],
    grid: Value,
    codecs: Value,
) -> String {
    let array = dir.join(name);
    std::fs::create_dir_all(&array).unwrap();
    let metadata = serde_json::json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": "uint16",
        "chunk_grid": grid,
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 3,
        "codecs": codecs,
        "attributes": {"origin": "test"},
    });
    std::fs::write(array.join("zarr.json"), metadata.to_string()).unwrap();
    let n = shape[0] * shape[1];
    let values: Vec<u8> = (0..n as u16)
        .flat_map(|i| i.wrapping_mul(7).to_le_bytes())
        .collect();
    let npy = dir.join(format!("{name}.npy"));
    write_npy(&npy, "<u2", &shape, &values);
    let target = array.display().to_string();
    ok(&["put", &target, "-i", npy.to_str().unwrap()]);
    target
}

/// What a copy that must succeed says on standard error (its summary line).
fn copy_note(args: &[&str]) -> String {
    let out = zarr_env(args, &[]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "zarr {args:?}: {err}");
    err
}

#[test]
fn copy_keeps_a_rectilinear_grid_unless_asked_to_rechunk() {
    let dir = tempfile::tempdir().unwrap();
    let grid = serde_json::json!({"name": "rectilinear", "configuration": {
        "kind": "inline", "chunk_shapes": [[5, 12, 20], 10]}});
    let codecs = serde_json::json!([
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": 1, "checksum": false}}
    ]);
    let src = rectilinear_source(dir.path(), "rect.zarr", [37, 23], grid.clone(), codecs);
    let original = raw(&src);

    // No chunking flags: the grid is the source's, the codecs may change.
    let kept = dir.path().join("kept.zarr").display().to_string();
    let note = copy_note(&["copy", &src, &kept, "--codec", "gzip:5"]);
    assert!(note.contains("(rectilinear chunks)"), "{note}");
    let meta = info(&kept);
    assert_eq!(meta["metadata"]["chunk_grid"], grid);
    assert_eq!(codec_names(&meta["metadata"]["codecs"]), ["bytes", "gzip"]);
    assert_eq!(meta["metadata"]["attributes"]["origin"], "test");
    assert_eq!(raw(&kept), original);
    // Stored under the source's chunk keys: 3 x 3 chunks.
    assert_eq!(meta["chunks"]["present"], 9, "{meta}");
    ok(&["verify", &kept]);
    // Run again, it resumes: the metadata it would write is what is there.
    ok(&["copy", &src, &kept, "--codec", "gzip:5", "--resume"]);
    assert_eq!(raw(&kept), original);

    // --chunks re-chunks to a regular grid, as before.
    let regular = dir.path().join("regular.zarr").display().to_string();
    ok(&["copy", &src, &regular, "--chunks", "10,10"]);
    let meta = info(&regular);
    assert_eq!(meta["metadata"]["chunk_grid"]["name"], "regular");
    assert_eq!(raw(&regular), original);

    // --chunks as JSON re-chunks to another rectilinear grid, --shards as JSON to a
    // rectilinear grid of shards (of one inner chunk shape).
    let other = dir.path().join("other.zarr").display().to_string();
    let note = copy_note(&["copy", &src, &other, "--chunks", "[[10,[9,3]],23]"]);
    assert!(note.contains("(rectilinear chunks)"), "{note}");
    let meta = info(&other);
    assert_eq!(
        meta["metadata"]["chunk_grid"]["configuration"]["chunk_shapes"],
        serde_json::json!([[10, [9, 3]], 23])
    );
    assert_eq!(meta["chunks"]["present"], 4, "{meta}");
    assert_eq!(raw(&other), original);
    let tiled = dir.path().join("tiled.zarr").display().to_string();
    let note = copy_note(&[
        "copy",
        &src,
        &tiled,
        "--chunks",
        "5,6",
        "--shards",
        "[[10,30],[12,12]]",
    ]);
    assert!(
        note.contains("(rectilinear shards of chunks 5x6)"),
        "{note}"
    );
    assert_eq!(raw(&tiled), original);
    ok(&["verify", &tiled]);
    let refused = |flags: &[&str], message: &str| {
        let dst = dir.path().join("refused.zarr");
        let dst_text = dst.display().to_string();
        let mut args = vec!["copy", &src, &dst_text];
        args.extend(flags);
        let err = fails(&args, 2);
        assert!(err.contains(message), "{flags:?}: {err}");
        assert!(!dst.exists());
    };
    refused(
        &["--chunks", "5,6", "--shards", "[[10,27],[12,12]]"],
        "--shards: a shard edge of 27 is not a multiple of the chunk shape 5x6",
    );
    refused(
        &["--chunks", "[[10,27],23]", "--shards", "20,23"],
        "give the rectilinear grid to --shards",
    );
    refused(
        &["--chunks", "[[10,20],23]"],
        "does not cover the array's shape 37x23",
    );

    // --shards without --chunks cannot keep the grid and has no chunk shape to use.
    let err = fails(
        &[
            "copy",
            &src,
            &dir.path().join("s.zarr").display().to_string(),
            "--shards",
            "20,20",
        ],
        2,
    );
    assert!(err.contains("give --chunks"), "{err}");
    // Zarr v2 has no rectilinear grids: refused before anything is written.
    let v2 = dir.path().join("v2.zarr");
    let v2_text = v2.display().to_string();
    let err = fails(&["copy", &src, &v2_text, "--zarr-format", "2"], 2);
    assert!(err.contains("rectilinear"), "{err}");
    assert!(!v2.exists());

    // A sharded source with a rectilinear grid of shards keeps its shards and inner chunks.
    let shard_grid = serde_json::json!({"name": "rectilinear", "configuration": {
        "kind": "inline", "chunk_shapes": [[8, 24], 12]}});
    let sharding = serde_json::json!([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 6],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"}}]);
    let sharded = rectilinear_source(
        dir.path(),
        "rect-sharded.zarr",
        [32, 24],
        shard_grid.clone(),
        sharding,
    );
    let original = raw(&sharded);
    let copy = dir.path().join("sharded-copy.zarr").display().to_string();
    let note = copy_note(&["copy", &sharded, &copy, "--codec", "zstd:3"]);
    assert!(
        note.contains("(rectilinear shards of chunks 4x6)"),
        "{note}"
    );
    let meta = info(&copy);
    assert_eq!(meta["metadata"]["chunk_grid"], shard_grid);
    let codec = &meta["metadata"]["codecs"][0];
    assert_eq!(codec["name"], "sharding_indexed");
    assert_eq!(
        codec["configuration"]["chunk_shape"],
        serde_json::json!([4, 6])
    );
    assert_eq!(
        codec_names(&codec["configuration"]["codecs"]),
        ["bytes", "zstd"]
    );
    assert_eq!(raw(&copy), original);
    // A rectilinear grid of chunks from a sharded source takes --shards none.
    let err = fails(
        &[
            "copy",
            &sharded,
            &dir.path().join("r.zarr").display().to_string(),
            "--chunks",
            "[[16,16],24]",
        ],
        2,
    );
    assert!(err.contains("give --shards none"), "{err}");
    let unsharded = dir.path().join("unsharded.zarr").display().to_string();
    ok(&[
        "copy",
        &sharded,
        &unsharded,
        "--chunks",
        "[[16,16],24]",
        "--shards",
        "none",
    ]);
    assert_eq!(raw(&unsharded), original);
    // Unsharding it takes --shards none; the inner chunks become the grid.
    let plain = dir.path().join("plain.zarr").display().to_string();
    ok(&["copy", &sharded, &plain, "--shards", "none"]);
    assert_eq!(
        info(&plain)["metadata"]["chunk_grid"]["configuration"]["chunk_shape"],
        serde_json::json!([4, 6])
    );
    assert_eq!(raw(&plain), original);
}

#[test]
fn copy_converts_the_data_type() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let floats = dir.path().join("f.zarr").display().to_string();
    ok(&["copy", &src, &floats, "--data-type", "float32"]);
    assert_eq!(info(&floats)["metadata"]["data_type"], "float32");
    assert_eq!(info(&floats)["metadata"]["fill_value"], 7.0);
    assert_eq!(ok(&["get", &floats, "-r", "0,0:3"]), "0.0\n37.0\n74.0\n");
    let back = dir.path().join("u.zarr").display().to_string();
    ok(&["copy", &floats, &back, "--dtype", "uint16"]);
    assert_eq!(raw(&back), raw(&src));
    // Values that do not fit are an error, not wrapped.
    let err = fails(
        &[
            "copy",
            &src,
            dir.path().join("i8.zarr").to_str().unwrap(),
            "--dtype",
            "int8",
        ],
        1,
    );
    assert!(err.contains("out of the range of int8"), "{err}");
}

/// Create a 6x5 int32 array at `target` in chunks of `chunks`, all ones but for 1000 at
/// [5, 2] (element 27), which does not convert to int8; the `.npy` file goes in `dir`.
fn int32_with_one_value_too_big_for_int8(dir: &Path, target: &str, chunks: &str) {
    ok(&[
        "create", target, "--shape", "6,5", "--dtype", "int32", "--chunks", chunks,
    ]);
    let mut values = [1i32; 30];
    values[27] = 1000;
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let npy = dir.join("v.npy");
    write_npy(&npy, "<i4", &[6, 5], &data);
    ok(&["put", target, "-i", npy.to_str().unwrap()]);
}

#[test]
fn copy_names_a_value_that_does_not_convert_by_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.zarr").display().to_string();
    int32_with_one_value_too_big_for_int8(dir.path(), &src, "4,5");
    // Element 27 of the array, the fourth of the second block (rows 4..6): [5, 2].
    let dst = dir.path().join("d.zarr").display().to_string();
    let err = fails(&["copy", &src, &dst, "--data-type", "int8"], 1);
    assert!(
        err.contains("element [5, 2]: 1000 is out of the range of int8"),
        "{err}"
    );
    assert!(!err.contains("of the block"), "{err}");
    // A fill value that does not fit is named as such.
    let big = dir.path().join("b.zarr").display().to_string();
    ok(&[
        "create",
        &big,
        "--shape",
        "2",
        "--dtype",
        "int32",
        "--fill-value",
        "300",
    ]);
    let dst = dir.path().join("d2.zarr").display().to_string();
    let err = fails(&["copy", &big, &dst, "--data-type", "int8"], 1);
    assert!(
        err.contains("converting to int8: the fill value: 300 is out of the range of int8"),
        "{err}"
    );
}

#[test]
fn copy_never_loses_data() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let before = raw(&src);
    let store = dir.path().join("src.zarr");
    let files = || {
        let mut n = 0;
        for entry in std::fs::read_dir(store.join("c")).unwrap() {
            n += std::fs::read_dir(entry.unwrap().path()).unwrap().count();
        }
        n
    };
    let stored = files();
    // Copying a node onto itself, or into itself, is refused before anything changes:
    // --overwrite erased the source before.
    for dst in [src.clone(), store.join("inner").display().to_string()] {
        let err = fails(&["copy", &src, &dst, "--overwrite"], 2);
        assert!(err.contains("overlap"), "{err}");
        assert!(err.contains("erase the source"), "{err}");
    }
    let err = fails(&["copy", &src, &src, "--resume"], 2);
    assert!(err.contains("overlap"), "{err}");
    assert_eq!(files(), stored);
    assert_eq!(raw(&src), before);

    // A copy that cannot be made leaves an existing destination as it was: planning errors
    // and values that do not convert are found before --overwrite erases it.
    let keep = dir.path().join("keep.zarr").display().to_string();
    ok(&["copy", &src, &keep]);
    let err = fails(&["copy", &src, &keep, "--overwrite", "--dtype", "int8"], 1);
    assert!(err.contains("nothing was erased"), "{err}");
    assert!(err.contains("out of the range of int8"), "{err}");
    assert_eq!(raw(&keep), before);
    let err = fails(&["copy", &src, &keep, "--overwrite", "--chunks", "5"], 2);
    assert!(err.contains("dimensions"), "{err}");
    assert_eq!(raw(&keep), before);

    // Conversions lose nothing silently: 4999 cannot be a float16 exactly.
    let err = fails(
        &[
            "copy",
            &src,
            dir.path().join("h.zarr").to_str().unwrap(),
            "--dtype",
            "float16",
        ],
        1,
    );
    assert!(err.contains("cannot be stored exactly as float16"), "{err}");
    let err = fails(
        &[
            "copy",
            &src,
            dir.path().join("b.zarr").to_str().unwrap(),
            "--dtype",
            "bool",
        ],
        1,
    );
    assert!(err.contains("neither 0 nor 1"), "{err}");
}

#[test]
fn copy_is_safe_to_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let dst = dir.path().join("dst.zarr");
    let dst_text = dst.display().to_string();
    // Blocks of one chunk row (5x23 uint16 = 230 bytes).
    let small = ["--chunks", "5,23", "--block-size", "200"];
    ok(&[&["copy", &src, &dst_text][..], &small].concat());
    // Again without a flag: refused.
    let err = fails(&["copy", &src, &dst_text, "--chunks", "5,23"], 2);
    assert!(err.contains("--resume"), "{err}");
    // An interrupted copy: a chunk never written (chunk writes are atomic, so a chunk is
    // there whole or not at all). --resume copies its block again and skips the rest.
    std::fs::remove_file(dst.join("c/2/0")).unwrap();
    let out = zarr_env(
        &[&["copy", &src, &dst_text, "--resume"][..], &small].concat(),
        &[],
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    // 8 blocks: block 2, and blocks 6 and 7 (rows 30..37, all fill value, so not stored),
    // are copied again.
    assert!(err.contains("skipped 5 blocks already copied"), "{err}");
    assert_eq!(raw(&dst_text), raw(&src));
    // Resuming with another layout is refused.
    let err = fails(
        &["copy", &src, &dst_text, "--chunks", "6,23", "--resume"],
        1,
    );
    assert!(err.contains("other metadata"), "{err}");
    // --overwrite starts again.
    ok(&["copy", &src, &dst_text, "--chunks", "6,23", "--overwrite"]);
    assert_eq!(raw(&dst_text), raw(&src));
}

#[test]
fn copy_blocks_are_whole_shards_when_a_row_of_them_is_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let dst = dir.path().join("sharded.zarr");
    let dst_text = dst.display().to_string();
    // Shards of 10x10 uint16 (200 bytes); a row of three of them does not fit in a block.
    let small = [
        "--chunks",
        "5,5",
        "--shards",
        "10,10",
        "--block-size",
        "200",
    ];
    ok(&[&["copy", &src, &dst_text][..], &small].concat());
    assert_eq!(raw(&dst_text), raw(&src));
    std::fs::remove_file(dst.join("c/1/2")).unwrap();
    let out = zarr_env(
        &[&["copy", &src, &dst_text, "--resume"][..], &small].concat(),
        &[],
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    // 12 blocks of one shard each: the removed shard, and the three of rows 30..37 (all
    // fill value, so not stored), are copied again.
    assert!(err.contains("skipped 8 blocks already copied"), "{err}");
    assert_eq!(raw(&dst_text), raw(&src));
}

#[test]
fn copy_a_peer_written_group() {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("groups.zarr").display().to_string();
    let src = fixture("zarr-python/nested_groups");
    ok(&["copy", &src, &dst, "--codec", "gzip:1"]);
    assert_eq!(ok(&["tree", &dst]), ok(&["tree", &src]));
    for node in ["root_array", "a/a_array", "a/b/c/c_array"] {
        assert_eq!(
            ok(&["get", "-f", "json", &format!("{dst}/{node}")]),
            ok(&["get", "-f", "json", &format!("{src}/{node}")]),
            "{node}"
        );
    }
    let out = ok(&["info", &format!("{dst}/a/b/c")]);
    assert!(out.contains("nested: {\"k\":[true,null]}"), "{out}");
}

#[test]
fn copy_round_trips_sharded_strings() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("zarr-python/shard_strings");
    let plain = dir.path().join("plain.zarr").display().to_string();
    ok(&[
        "copy", &src, &plain, "--shards", "none", "--chunks", "3", "--codec", "zstd:1",
    ]);
    let meta = info(&plain);
    assert_eq!(
        codec_names(&meta["metadata"]["codecs"]),
        ["vlen-utf8", "zstd"]
    );
    let back = dir.path().join("back.zarr").display().to_string();
    ok(&["copy", &plain, &back, "--shards", "6", "--chunks", "2"]);
    assert_eq!(info(&back)["shard_shape"], serde_json::json!([6]));
    let json = |t: &str| ok(&["get", "-f", "json", t]);
    assert_eq!(json(&plain), json(&src));
    assert_eq!(json(&back), json(&src));
    assert!(ok(&["verify", &back]).contains("0 problems"));
}

#[test]
fn copy_writes_zarr_v2_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let dst = dir.path().join("v2.zarr");
    let dst_text = dst.display().to_string();
    let small = ["--block-size", "500", "--codec", "zstd:3"];
    ok(&[&["copy", &src, &dst_text, "--zarr-format", "2"][..], &small].concat());
    let zarray: Value =
        serde_json::from_slice(&std::fs::read(dst.join(".zarray")).unwrap()).unwrap();
    assert_eq!(zarray["zarr_format"], 2);
    assert_eq!(zarray["dtype"], "<u2");
    assert_eq!(zarray["fill_value"], 7);
    assert_eq!(zarray["compressor"]["id"], "zstd");
    assert!(!dst.join("zarr.json").exists());
    // v2 chunk keys, and the dimension names where xarray keeps them.
    assert!(dst.join("0.0").exists() && dst.join("2.2").exists());
    let zattrs: Value =
        serde_json::from_slice(&std::fs::read(dst.join(".zattrs")).unwrap()).unwrap();
    assert_eq!(
        zattrs,
        serde_json::json!({"origin": "test", "_ARRAY_DIMENSIONS": ["y", "x"]})
    );
    assert_eq!(raw(&dst_text), raw(&src));
    let v2_info = info(&dst_text);
    assert_eq!(v2_info["format"], 2);
    // Read back, the attribute is the v2 array's dimension names.
    assert_eq!(
        v2_info["metadata"]["dimension_names"],
        serde_json::json!(["y", "x"])
    );
    assert_eq!(info(&src)["format"], 3);
    // Resuming a v2 copy compares its metadata with what the copy would write.
    std::fs::remove_file(dst.join("1.0")).unwrap();
    let out = zarr_env(
        &[
            &["copy", &src, &dst_text, "--zarr-format", "2", "--resume"][..],
            &small,
        ]
        .concat(),
        &[],
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success() && err.contains("skipped"), "{err}");
    assert_eq!(raw(&dst_text), raw(&src));

    // Back to v3: the attribute becomes `dimension_names` again, where xarray looks in v3.
    let back = dir.path().join("back.zarr").display().to_string();
    ok(&["copy", &dst_text, &back]);
    let meta = info(&back);
    assert_eq!(meta["format"], 3);
    assert_eq!(
        meta["metadata"]["dimension_names"],
        serde_json::json!(["y", "x"])
    );
    assert_eq!(
        meta["metadata"]["attributes"],
        serde_json::json!({"origin": "test"})
    );
    assert_eq!(raw(&back), raw(&src));
    // An attribute that does not name every dimension stays an attribute.
    let odd = dir.path().join("odd.zarr");
    let odd_text = odd.display().to_string();
    ok(&["copy", &dst_text, &odd_text, "--zarr-format", "2"]);
    std::fs::write(
        odd.join(".zattrs"),
        r#"{"_ARRAY_DIMENSIONS": ["y"], "origin": "test"}"#,
    )
    .unwrap();
    let odd_back = dir.path().join("odd-back.zarr").display().to_string();
    ok(&["copy", &odd_text, &odd_back]);
    let meta = info(&odd_back);
    assert!(meta["metadata"].get("dimension_names").is_none(), "{meta}");
    assert_eq!(
        meta["metadata"]["attributes"]["_ARRAY_DIMENSIONS"],
        serde_json::json!(["y"])
    );

    // A whole group, sharded arrays un-sharded on the way; strings included.
    let demo = dir.path().join("demo.zarr");
    ok(&["demo", demo.to_str().unwrap()]);
    let v2_demo = dir.path().join("demo-v2.zarr").display().to_string();
    let err = fails(
        &[
            "copy",
            demo.to_str().unwrap(),
            &v2_demo,
            "--zarr-format",
            "2",
        ],
        2,
    );
    assert!(err.contains("--shards none"), "{err}");
    ok(&[
        "copy",
        demo.to_str().unwrap(),
        &v2_demo,
        "--zarr-format",
        "2",
        "--shards",
        "none",
        "--overwrite",
    ]);
    assert!(Path::new(&v2_demo).join(".zgroup").exists());
    assert_eq!(
        ok(&["tree", &v2_demo]).replace("(chunks 64x64)", "(shards 256x256 of chunks 64x64)"),
        ok(&["tree", demo.to_str().unwrap()])
    );
    for node in ["labels", "timeseries/temperature"] {
        assert_eq!(
            ok(&["get", "-f", "json", &format!("{v2_demo}/{node}")]),
            ok(&["get", "-f", "json", &format!("{}/{node}", demo.display())]),
            "{node}"
        );
    }

    // Dimension names v2 cannot keep are refused by name.
    let partial = dir.path().join("partial.zarr");
    std::fs::create_dir(&partial).unwrap();
    std::fs::write(
        partial.join("zarr.json"),
        serde_json::json!({"zarr_format": 3, "node_type": "array", "shape": [2, 2],
            "data_type": "uint8", "chunk_grid": {"name": "regular",
            "configuration": {"chunk_shape": [2, 2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}], "dimension_names": ["y", null]})
        .to_string(),
    )
    .unwrap();
    let err = fails(
        &[
            "copy",
            partial.to_str().unwrap(),
            dir.path().join("p2.zarr").to_str().unwrap(),
            "--zarr-format",
            "2",
        ],
        1,
    );
    assert!(err.contains("_ARRAY_DIMENSIONS"), "{err}");
}

/// The S3 test server (moto) that `cargo xtask ci` starts: copy there and back.
#[test]
fn copy_to_s3_and_back() {
    let Ok(endpoint) = std::env::var("ZARR_TEST_S3_ENDPOINT") else {
        let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(
            !in_ci,
            "ZARR_TEST_S3_ENDPOINT is not set but CI is: run the tests through `cargo xtask ci`"
        );
        eprintln!("NOTICE: skipping copy_to_s3_and_back: ZARR_TEST_S3_ENDPOINT is not set");
        return;
    };
    let bucket = std::env::var("ZARR_TEST_S3_BUCKET").unwrap_or_else(|_| "zarr-test".into());
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let env = [
        ("AWS_ENDPOINT", endpoint),
        ("AWS_ALLOW_HTTP", "true".to_owned()),
        ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false".to_owned()),
        ("AWS_ACCESS_KEY_ID", var("AWS_ACCESS_KEY_ID", "testing")),
        (
            "AWS_SECRET_ACCESS_KEY",
            var("AWS_SECRET_ACCESS_KEY", "testing"),
        ),
        ("AWS_REGION", var("AWS_REGION", "us-east-1")),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = |args: &[&str]| {
        let out = zarr_env(args, &env);
        assert!(
            out.status.success(),
            "zarr {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let url = format!("s3://{bucket}/cli-{}-{nanos}/data.zarr", std::process::id());
    run(&[
        "copy",
        &src,
        &url,
        "--dst-path",
        "/arrays/v",
        "--shards",
        "20,23",
        "--chunks",
        "10,23",
    ]);
    let tree = run(&["tree", &url]);
    assert!(
        tree.contains("v  uint16 37x23 (shards 20x23 of chunks 10x23)"),
        "{tree}"
    );
    let out = run(&["verify", &url, "--path", "/arrays/v"]);
    assert!(out.contains("0 problems"), "{out}");
    // Strided selections over S3 fetch the inner chunks of each shard together (several
    // ranges of one object per request); they read what the local source holds.
    for region in ["::3,::2", "1::7,22", "::36,::22", "5:35:4,3:20:8"] {
        let remote = run(&[
            "get",
            &url,
            "--path",
            "/arrays/v",
            "-r",
            region,
            "-f",
            "json",
        ]);
        let local = run(&["get", &src, "-r", region, "-f", "json"]);
        assert_eq!(remote, local, "--region {region}");
    }
    let back = dir.path().join("back.zarr").display().to_string();
    run(&[
        "copy",
        &url,
        &back,
        "--src-path",
        "arrays/v",
        "--shards",
        "none",
    ]);
    assert_eq!(raw(&back), raw(&src));
}

#[test]
fn a_new_node_is_not_written_among_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    // A directory of other files: a node written there would be mixed with them, and
    // replacing it later with --overwrite erased them all.
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("README"), "keep me").unwrap();
    let docs_text = docs.display().to_string();
    for args in [
        vec!["create", &docs_text, "--shape", "3", "--dtype", "uint8"],
        vec![
            "create",
            &docs_text,
            "--shape",
            "3",
            "--dtype",
            "uint8",
            "--overwrite",
        ],
        vec!["copy", &src, &docs_text],
        vec!["copy", &src, &docs_text, "--overwrite"],
        vec!["copy", &src, &docs_text, "--resume"],
    ] {
        let err = fails(&args, 2);
        assert!(
            err.contains("holds no Zarr node (it has \"README\")"),
            "{args:?}: {err}"
        );
    }
    let names: Vec<_> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["README"]);
    assert_eq!(
        std::fs::read_to_string(docs.join("README")).unwrap(),
        "keep me"
    );
    // A new directory inside is fine.
    let inside = docs.join("copy.zarr").display().to_string();
    ok(&["copy", &src, &inside]);
    assert_eq!(raw(&inside), raw(&src));

    // A node whose metadata does not parse is a node: it exists, and --overwrite replaces it.
    let broken = dir.path().join("broken.zarr");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("zarr.json"), "{not json").unwrap();
    let broken_text = broken.display().to_string();
    let err = fails(&["copy", &src, &broken_text], 2);
    assert!(err.contains("already exists"), "{err}");
    ok(&["copy", &src, &broken_text, "--overwrite"]);
    assert_eq!(raw(&broken_text), raw(&src));
}

/// Every file below `dir`, relative to it, sorted.
fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap();
                out.push(relative.display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_copy_that_fails_removes_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    // A group holding the array with 1000 at [5, 2], in chunk rows of 2: the last of three
    // blocks does not convert to int8, after the first ones were written.
    let store = dir.path().join("s.zarr");
    let src = store.join("v").display().to_string();
    int32_with_one_value_too_big_for_int8(dir.path(), &src, "2,5");
    let blocks = ["--block-size", "40"];
    let failed = |err: &str| {
        assert!(
            err.contains("element [5, 2]: 1000 is out of the range of int8"),
            "{err}"
        );
        assert!(err.contains("the partial destination was removed"), "{err}");
    };

    // A new store, with groups above the array: nothing is left, not even its directory.
    let new = dir.path().join("new.zarr");
    let dst = new.join("a/b").display().to_string();
    failed(&fails(
        &[&["copy", &src, &dst, "--dtype", "int8"][..], &blocks].concat(),
        1,
    ));
    assert!(!new.exists(), "{:?}", files_below(&new));
    // Nor does a copy refused before it writes (the store's directory was made to open it).
    fails(&["copy", &src, &dst, "--chunks", "2"], 2);
    assert!(!new.exists(), "{:?}", files_below(&new));
    ok(&[&["copy", &src, &dst, "--dtype", "int16"][..], &blocks].concat());
    assert_eq!(ok(&["get", &dst, "-r", "5,2"]), "1000\n");

    // A group copied into an existing store: the store is as it was, its other nodes kept.
    let other = dir.path().join("other.zarr");
    ok(&[
        "create",
        other.join("keep").to_str().unwrap(),
        "--shape",
        "2",
        "--dtype",
        "uint8",
    ]);
    let before = files_below(&other);
    let dst = other.join("x/copy").display().to_string();
    let src_group = store.display().to_string();
    failed(&fails(
        &[&["copy", &src_group, &dst, "--dtype", "int8"][..], &blocks].concat(),
        1,
    ));
    assert_eq!(files_below(&other), before);
    ok(&[&["copy", &src_group, &dst, "--dtype", "int16"][..], &blocks].concat());
    assert_eq!(ok(&["get", &format!("{dst}/v"), "-r", "5,2"]), "1000\n");

    // --overwrite over an existing copy, failing after the old one was erased (a source
    // chunk that does not decode): the error says both.
    let replaced = dir.path().join("replaced.zarr");
    let replaced_text = replaced.display().to_string();
    ok(&["copy", &src, &replaced_text]);
    std::fs::write(store.join("v/c/2/0"), b"not zstd").unwrap();
    let err = fails(
        &[&["copy", &src, &replaced_text, "--overwrite"][..], &blocks].concat(),
        1,
    );
    assert!(
        err.contains(
            "the partial destination was removed (the old destination was erased by \
             --overwrite before the copy)"
        ),
        "{err}"
    );
    assert!(err.contains("reading [4..6, 0..5] of /v"), "{err}");
    assert!(
        !replaced.join("zarr.json").exists(),
        "{:?}",
        files_below(&replaced)
    );

    // --resume keeps what was copied, for the next --resume, and says so.
    let resumed = dir.path().join("resumed.zarr");
    let resumed_text = resumed.display().to_string();
    let err = fails(
        &[&["copy", &src, &resumed_text, "--resume"][..], &blocks].concat(),
        1,
    );
    assert!(
        err.contains("what it copied is kept: run the same command with --resume"),
        "{err}"
    );
    assert!(
        resumed.join("c/0/0").exists(),
        "{:?}",
        files_below(&resumed)
    );
}

#[test]
fn zip_archives_are_targets_to_copy_into_read_and_update() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let original = raw(&src);
    let zip = dir.path().join("packed.zip");
    let zip_text = zip.display().to_string();
    // A new archive, the array below a folder of it.
    ok(&["copy", &src, &format!("{zip_text}/data/a")]);
    let bytes = std::fs::read(&zip).unwrap();
    assert!(bytes.starts_with(b"PK\x03\x04"), "a zip archive");
    assert_eq!(raw(&format!("{zip_text}/data/a")), original);
    let described = info(&format!("{zip_text}/data/a"));
    assert_eq!(described["metadata"]["shape"], serde_json::json!([37, 23]));
    let tree = ok(&["tree", &zip_text]);
    assert!(tree.contains("a  uint16 37x23"), "{tree}");
    // `--path` names the node instead.
    assert_eq!(
        raw_with_path(&zip_text, "/data/a"),
        original,
        "--path inside an archive"
    );

    // Updating the archive: overwrite a region, add a second array, remove it again.
    let npy = dir.path().join("ones.npy");
    write_npy(&npy, "<u2", &[2, 23], &[1u8, 0].repeat(46));
    ok(&[
        "put",
        &format!("{zip_text}/data/a"),
        "-i",
        npy.to_str().unwrap(),
        "-r",
        "0:2",
    ]);
    let updated = raw(&format!("{zip_text}/data/a"));
    assert_eq!(&updated[..92], &[1u8, 0].repeat(46)[..]);
    assert_eq!(&updated[92..], &original[92..]);
    ok(&["copy", &src, &format!("{zip_text}/data/b")]);
    assert_eq!(raw(&format!("{zip_text}/data/b")), original);
    ok(&["rm", &format!("{zip_text}/data/b")]);
    let tree = ok(&["tree", &zip_text]);
    assert!(!tree.contains(" b "), "{tree}");
    // Every update left a complete archive.
    let verified = ok(&["verify", &zip_text]);
    assert!(verified.contains("0 problems"), "{verified}");

    // A URL to the archive reads it with range requests (here through `file://`).
    let url = format!("file://{zip_text}");
    assert_eq!(raw_with_path(&url, "/data/a"), updated);
    let tree = ok(&["tree", &url]);
    assert!(tree.contains("a  uint16 37x23"), "{tree}");
    let err = fails(&["rm", &url, "--path", "/data/a"], 2);
    assert!(err.contains("can only be read"), "{err}");

    // Back out of the archive into a directory store, unchanged.
    let out = dir.path().join("out.zarr").display().to_string();
    ok(&["copy", &format!("{zip_text}/data/a"), &out]);
    assert_eq!(raw(&out), updated);

    // A file that is not an archive is an error naming it, and stays as it was.
    let fake = dir.path().join("fake.zip");
    std::fs::write(&fake, b"not a zip").unwrap();
    let err = fails(&["copy", &src, &format!("{}/x", fake.display())], 1);
    assert!(err.contains("fake.zip"), "{err}");
    assert_eq!(std::fs::read(&fake).unwrap(), b"not a zip");
    // A copy into a new archive that fails part way (values that do not fit the new data
    // type) leaves no archive behind.
    let new = dir.path().join("new.zip");
    let err = fails(
        &[
            "copy",
            &src,
            &new.display().to_string(),
            "--data-type",
            "int8",
        ],
        1,
    );
    assert!(err.contains("int8"), "{err}");
    assert!(!new.exists());
}

fn raw_with_path(store: &str, path: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.raw");
    ok(&[
        "get",
        store,
        "--path",
        path,
        "-f",
        "raw",
        "-o",
        file.to_str().unwrap(),
    ]);
    std::fs::read(file).unwrap()
}

/// A reference set (kerchunk's JSON) naming the chunk files of `src` by absolute path, its
/// metadata (`zarr.json`, or v2's `.zarray`, `.zgroup`, `.zattrs`) inline.
fn reference_set_for(src: &Path, refs: &Path) {
    let mut map = serde_json::Map::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let key = path.strip_prefix(src).unwrap().to_str().unwrap().to_owned();
            let name = path.file_name().unwrap().to_str().unwrap();
            let value = if name == "zarr.json" || name.starts_with(".z") {
                Value::String(std::fs::read_to_string(&path).unwrap())
            } else {
                let len = std::fs::metadata(&path).unwrap().len();
                serde_json::json!([path.to_str().unwrap(), 0, len])
            };
            map.insert(key, value);
        }
    }
    let set = serde_json::json!({"version": 1, "refs": map});
    std::fs::write(refs, set.to_string()).unwrap();
}

#[test]
fn reference_sets_are_read_only_targets() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let original = raw(&src);
    let refs = dir.path().join("refs.json");
    reference_set_for(Path::new(&src), &refs);
    let refs_text = refs.display().to_string();

    assert_eq!(raw(&refs_text), original);
    assert_eq!(raw_with_path(&refs_text, "/"), original);
    let described = info(&refs_text);
    assert_eq!(described["metadata"]["shape"], serde_json::json!([37, 23]));
    let verified = ok(&["verify", &refs_text]);
    assert!(verified.contains("0 problems"), "{verified}");
    // Copied out into a store of its own, the same values.
    let out = dir.path().join("out.zarr").display().to_string();
    ok(&["copy", &refs_text, &out]);
    assert_eq!(raw(&out), original);

    // Writing into a reference set is bad usage.
    let npy = dir.path().join("ones.npy");
    write_npy(&npy, "<u2", &[1, 23], &[1u8, 0].repeat(23));
    let err = fails(
        &["put", &refs_text, "-i", npy.to_str().unwrap(), "-r", "0:1"],
        2,
    );
    assert!(err.contains("can only be read"), "{err}");
    let err = fails(&["rm", &refs_text], 2);
    assert!(err.contains("can only be read"), "{err}");

    // A chunk file gone: the read fails naming the reference and the file.
    std::fs::remove_file(Path::new(&src).join("c/1/1")).unwrap();
    let err = fails(&["get", &refs_text, "-f", "raw", "-o", "/dev/null"], 1);
    assert!(err.contains("c/1/1") && err.contains("no file"), "{err}");
    // A malformed set is an error naming the file.
    std::fs::write(&refs, br#"{"version": 7}"#).unwrap();
    let err = fails(&["info", &refs_text], 1);
    assert!(
        err.contains("refs.json") && err.contains("version 7"),
        "{err}"
    );
}

/// `zarr refs` converts a reference set to Parquet and back: the same values through each,
/// the same references; what cannot be converted, or replaced, is refused.
#[test]
fn reference_sets_convert_between_json_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = source(d);
    let original = raw(&src);
    // fsspec's Parquet layout keeps an array's chunks in its directory: not at the root.
    let v2 = d.join("v2.zarr").display().to_string();
    ok(&["copy", &src, &format!("{v2}/t"), "--zarr-format", "2"]);
    let json = d.join("refs.json");
    reference_set_for(Path::new(&v2), &json);
    let json = json.display().to_string();
    let parquet = d.join("refs.parq").display().to_string();
    let array = |set: &str| format!("{set}/t");

    let said = ok(&["refs", &json, &parquet, "--record-size", "3"]);
    // .zgroup, .zattrs, t/.zattrs, t/.zarray and 9 chunks.
    assert!(said.contains("wrote 13 references"), "{said}");
    // 4x3 chunks, 3 per record file; the last row of chunks (rows 30-36) was never
    // written, so the record file of chunks 9-11 is not there.
    let mut files: Vec<String> = std::fs::read_dir(d.join("refs.parq/t"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["refs.0.parq", "refs.1.parq", "refs.2.parq"]);
    assert!(d.join("refs.parq/.zmetadata").is_file());
    assert_eq!(raw(&array(&parquet)), original);

    let back = d.join("back.json").display().to_string();
    ok(&["refs", &parquet, &back]);
    assert_eq!(raw(&array(&back)), original);
    let refs = |path: &str| -> serde_json::Map<String, Value> {
        let set: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let map = set["refs"].as_object().unwrap().clone();
        map.into_iter()
            .map(|(k, v)| match v {
                // Metadata documents compare as JSON.
                Value::String(text) if k.rsplit('/').next().unwrap().starts_with(".z") => {
                    (k, serde_json::from_str(&text).unwrap())
                }
                other => (k, other),
            })
            .collect()
    };
    let mut expected = refs(&json);
    let got = refs(&back);
    // The Parquet set serves `.zmetadata`, consolidated metadata of its documents.
    assert_eq!(got[".zmetadata"]["zarr_consolidated_format"], 1);
    expected.insert(".zmetadata".into(), got[".zmetadata"].clone());
    assert_eq!(got, expected);

    // Replacing: only with --overwrite, only a reference set.
    let err = fails(&["refs", &json, &parquet], 2);
    assert!(err.contains("--overwrite"), "{err}");
    ok(&[
        "refs",
        &json,
        &parquet,
        "--overwrite",
        "--record-size",
        "100",
    ]);
    assert_eq!(raw(&array(&parquet)), original);
    let err = fails(&["refs", &json, &v2, "--overwrite"], 2);
    assert!(err.contains("not a reference set"), "{err}");
    assert_eq!(raw(&array(&v2)), original, "left alone");
    let err = fails(&["refs", &json, &parquet, "--record-size", "0"], 2);
    assert!(err.contains("--record-size"), "{err}");

    // A Zarr v3 set has no `.zarray` to number its chunks by: refused, nothing left behind.
    let v3 = d.join("v3.zarr").display().to_string();
    ok(&["copy", &src, &format!("{v3}/t")]);
    let v3_json = d.join("v3.json");
    reference_set_for(Path::new(&v3), &v3_json);
    let v3_parquet = d.join("v3.parq");
    let err = fails(
        &[
            "refs",
            v3_json.to_str().unwrap(),
            v3_parquet.to_str().unwrap(),
        ],
        1,
    );
    assert!(
        err.contains("neither metadata nor a chunk of an array with a .zarray"),
        "{err}"
    );
    assert!(!v3_parquet.exists());
}

/// Run `zarr diff` with `args`: its exit code and standard output.
fn diff(args: &[&str]) -> (i32, String) {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    let out = crate::common::zarr(&all);
    let code = out.status.code().unwrap();
    if code == 1 {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("zarr: ") && err.lines().count() == 1,
            "{err}"
        );
    }
    (code, String::from_utf8(out.stdout).unwrap())
}

/// `diff` compares two arrays or hierarchies: metadata, then every value bit for bit,
/// whatever their layout; it names each difference and exits with 1 when there is one.
#[test]
fn diff_compares_arrays_and_hierarchies() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.zarr");
    let a = a.to_str().unwrap();
    ok(&["demo", a, "-q"]);
    let b = dir.path().join("b.zarr").display().to_string();
    ok(&["copy", a, &b, "-q"]);
    // Another layout altogether: unsharded, gzip, Zarr v2 keys... the same values.
    let c = dir.path().join("c.zarr").display().to_string();
    ok(&["copy", a, &c, "--shards", "none", "--codec", "gzip:6", "-q"]);

    let (code, out) = diff(&[a, &b]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("are the same (3 arrays and 3 groups, 263148 elements)"),
        "{out}"
    );
    let (code, out) = diff(&[a, &c]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.lines().count(),
        1,
        "layout is not shown unless asked: {out}"
    );
    let (code, out) = diff(&[a, &c, "--layout"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "/images/raw: layout only: shards 256x256 of chunks 64x64 in A, chunks 64x64 in B; \
             codecs [bytes {\"endian\":\"little\"}, zstd {\"level\":3,\"checksum\":false}, \
             crc32c] in A, [bytes {\"endian\":\"little\"}, gzip {\"level\":6}] in B\n"
        ),
        "{out}"
    );
    // Zarr v2 against v3.
    let e = dir.path().join("e.zarr").display().to_string();
    ok(&[
        "copy",
        a,
        &e,
        "--zarr-format",
        "2",
        "--shards",
        "none",
        "-q",
    ]);
    let (code, out) = diff(&[&e, a, "--layout"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("/labels: layout only: Zarr v2 in A, v3 in B"),
        "{out}"
    );
    // One array against another, and through --a-path / --b-path.
    let (code, _) = diff(&[&format!("{a}/images/raw"), &format!("{c}/images/raw")]);
    assert_eq!(code, 0);
    let (code, _) = diff(&[a, &c, "--a-path", "labels", "--b-path", "/labels"]);
    assert_eq!(code, 0);

    // Changes in B: two values, an attribute, a string, a node removed, a shape.
    let npy = dir.path().join("v.npy");
    write_npy(
        &npy,
        "<f4",
        &[2],
        &[1.5f32, -0.0f32]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    let temperature = format!("{b}/timeseries/temperature");
    ok(&[
        "put",
        &temperature,
        "-i",
        npy.to_str().unwrap(),
        "-r",
        "10:12",
        "-q",
    ]);
    ok(&[
        "attrs",
        &temperature,
        "--set",
        "units=K",
        "--set",
        "source=test",
        "-q",
    ]);
    write_npy(&npy, "<U1", &[1], &u32::from('z').to_le_bytes());
    ok(&[
        "put",
        &format!("{b}/labels"),
        "-i",
        npy.to_str().unwrap(),
        "-r",
        "1:2",
        "-q",
    ]);
    ok(&["rm", &format!("{b}/images"), "-q"]);

    let before = std::fs::read_to_string(dir.path().join("a.zarr/zarr.json")).unwrap();
    let (code, out) = diff(&[a, &b]);
    assert_eq!(code, 1, "{out}");
    let a_values = ok(&["get", &format!("{a}/timeseries/temperature"), "-r", "10:12"]);
    let a_values: Vec<&str> = a_values.lines().collect();
    let want = [
        "/images: only in A".to_owned(),
        "/images/raw: only in A".to_owned(),
        "/labels: 1 of 4 elements differ:".to_owned(),
        format!("  element [1]: {} in A, \"z\" in B", ok(&["get", &format!("{a}/labels"), "-r", "1"]).trim()),
        "/timeseries/temperature: attributes differ: \"units\" is \"degC\" in A, \"K\" in B; \"source\" only in B".to_owned(),
        "/timeseries/temperature: 2 of 1000 elements differ:".to_owned(),
        format!("  element [10]: {} in A, 1.5 in B", a_values[0]),
        format!("  element [11]: {} in A, -0.0 in B", a_values[1]),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");
    // Reading changed nothing.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.zarr/zarr.json")).unwrap(),
        before
    );

    // --show limits the elements shown; --metadata-only reads no values.
    let (code, out) = diff(&[
        a,
        &b,
        "--show",
        "1",
        "--b-path",
        "/timeseries",
        "--a-path",
        "timeseries",
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("2 of 1000 elements differ, the first 1:\n  element [10]"),
        "{out}"
    );
    let (code, out) = diff(&[
        a,
        &b,
        "--metadata-only",
        "--a-path",
        "timeseries",
        "--b-path",
        "timeseries",
    ]);
    assert_eq!(code, 1);
    assert!(
        !out.contains("elements differ") && out.contains("attributes differ"),
        "{out}"
    );

    // Shapes, data types and kinds that differ stop the value comparison.
    ok(&["resize", &temperature, "--shape", "+5", "-q"]);
    let (code, out) = diff(&[&format!("{a}/timeseries/temperature"), &temperature]);
    assert_eq!(code, 1);
    assert!(
        out.contains("/: shape 1000 in A, 1005 in B") && !out.contains("elements differ"),
        "{out}"
    );
    let d = dir.path().join("d.zarr").display().to_string();
    ok(&[
        "copy",
        &format!("{a}/timeseries/temperature"),
        &d,
        "--data-type",
        "float64",
        "-q",
    ]);
    let (code, out) = diff(&[&format!("{a}/timeseries/temperature"), &d]);
    assert_eq!(code, 1);
    assert!(
        out.contains("/: data type float32 in A, float64 in B"),
        "{out}"
    );
    // Numbers of two types are compared by value: a float64 copy holds the same numbers.
    assert!(out.contains("/: all 1000 elements equal in value"), "{out}");
    let npy = dir.path().join("one.npy");
    crate::common::write_npy(&npy, "<f8", &[1], &1.5f64.to_le_bytes());
    ok(&["put", &d, "-i", npy.to_str().unwrap(), "-r", "10:11", "-q"]);
    let (code, out) = diff(&[&format!("{a}/timeseries/temperature"), &d]);
    assert_eq!(code, 1);
    assert!(
        out.contains("/: 1 of 1000 elements differ in value:")
            && out.contains("element [10]: ")
            && out.contains(", 1.5 in B"),
        "{out}"
    );
    // Integers of two types: the uint16 image as int32, the same numbers.
    let raw32 = dir.path().join("raw32.zarr").display().to_string();
    ok(&[
        "copy",
        &format!("{a}/images/raw"),
        &raw32,
        "--data-type",
        "int32",
        "-q",
    ]);
    let (code, out) = diff(&[&format!("{a}/images/raw"), &raw32]);
    assert_eq!(code, 1);
    assert!(
        out.contains("/: data type uint16 in A, int32 in B")
            && out.contains("/: all 262144 elements equal in value"),
        "{out}"
    );
    let (code, out) = diff(&[a, &format!("{a}/labels")]);
    assert_eq!(code, 1);
    assert_eq!(out, "/: a group in A, an array in B\n");
    // A target that is not there is an error, not a difference.
    let err = fails(
        &[
            "diff",
            a,
            &dir.path().join("nope.zarr").display().to_string(),
        ],
        1,
    );
    assert!(err.contains("nope.zarr"), "{err}");

    // A chunk that does not decode stops the diff with an error naming the side, the
    // elements being read and the chunk, with the codec's reason.
    let chunks = dir.path().join("c.zarr/timeseries/temperature/c");
    let chunk = std::fs::read_dir(&chunks)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&chunk, b"not gzip").unwrap();
    let err = fails(&["diff", a, &c], 1);
    assert!(
        err.contains("/timeseries/temperature in B: reading [0:1000]")
            && err.contains("c/")
            && err.contains("gzip")
            && err.lines().count() == 1,
        "{err}"
    );
}

/// The nodes a consolidated record lists: the keys of a v3 root's
/// `consolidated_metadata`, or the metadata documents in a v2 `.zmetadata`.
fn recorded(root: &Path, v2: bool) -> Vec<String> {
    let file = root.join(if v2 { ".zmetadata" } else { "zarr.json" });
    let document: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let record = if v2 {
        &document["metadata"]
    } else {
        &document["consolidated_metadata"]["metadata"]
    };
    record.as_object().unwrap().keys().cloned().collect()
}

/// `copy --overwrite` and `pyramid --overwrite` replace a node through the group above it,
/// so a consolidated record above forgets the old node rather than go on listing its old
/// metadata; a new node, which the record does not list, gets a note saying so.
#[test]
fn copies_and_pyramids_over_a_node_keep_consolidated_records_true() {
    let dir = tempfile::tempdir().unwrap();
    let v3 = dir.path().join("v3.zarr");
    let v2 = dir.path().join("v2.zarr");
    ok(&["demo", v3.to_str().unwrap(), "-q"]);
    ok(&[
        "copy",
        v3.to_str().unwrap(),
        v2.to_str().unwrap(),
        "--zarr-format",
        "2",
        "--shards",
        "none",
        "-q",
    ]);
    let image = dir.path().join("image.zarr");
    let image = image.to_str().unwrap();
    ok(&["copy", &format!("{}/images/raw", v3.display()), image, "-q"]);
    for (root, is_v2) in [(&v3, false), (&v2, true)] {
        let r = root.to_str().unwrap();
        ok(&["consolidate", r, "-q"]);
        let raw = if is_v2 {
            "images/raw/.zarray"
        } else {
            "images/raw"
        };
        assert!(recorded(root, is_v2).contains(&raw.to_owned()));
        let format = if is_v2 { "2" } else { "3" };
        // Over a node the record lists: the record forgets it.
        let err = ok_stderr(&[
            "copy",
            &format!("{r}/timeseries/temperature"),
            &format!("{r}/images/raw"),
            "--overwrite",
            "--zarr-format",
            format,
        ]);
        assert!(
            err.contains("has consolidated metadata, which does not list the new array"),
            "{err}"
        );
        let listed = recorded(root, is_v2);
        assert!(!listed.contains(&raw.to_owned()), "{listed:?}");
        assert!(
            listed
                .iter()
                .any(|k| k.starts_with("timeseries/temperature")),
            "{listed:?}"
        );
        // The new array is there, and `consolidate` lists it again.
        assert_eq!(
            ok(&[
                "diff",
                &format!("{r}/timeseries/temperature"),
                &format!("{r}/images/raw")
            ])
            .lines()
            .count(),
            1
        );
        ok(&["consolidate", r, "-q"]);
        assert!(recorded(root, is_v2).contains(&raw.to_owned()));
    }

    // A pyramid written into the v3 hierarchy, then written again over itself.
    let r = v3.to_str().unwrap();
    let pyramid = format!("{r}/pyramid");
    let err = ok_stderr(&["pyramid", image, &pyramid]);
    assert!(err.contains("does not list the new group"), "{err}");
    ok(&["consolidate", r, "-q"]);
    assert!(recorded(&v3, false).contains(&"pyramid/1".to_owned()));
    ok(&[
        "pyramid",
        image,
        &pyramid,
        "--overwrite",
        "--levels",
        "1",
        "--axes",
        "y,x",
        "-q",
    ]);
    let listed = recorded(&v3, false);
    assert!(
        !listed.iter().any(|k| k.starts_with("pyramid")),
        "the old pyramid is forgotten: {listed:?}"
    );
    assert!(listed.contains(&"timeseries/temperature".to_owned()));
}

#[test]
fn in_place_writes_keep_the_chunk_files_and_durable_writes_work() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let original = raw(&src);
    let chunk = dir.path().join("src.zarr/c/0/0");
    let inode = || std::fs::metadata(&chunk).unwrap().ino();
    let npy = dir.path().join("w.npy");
    let values: Vec<u8> = (0..100u16).flat_map(|i| (i + 1).to_le_bytes()).collect();
    write_npy(&npy, "<u2", &[10, 10], &values);
    let put = |flags: &[&str]| {
        let mut args = vec![
            "put",
            src.as_str(),
            "-i",
            npy.to_str().unwrap(),
            "-r",
            "0:10,0:10",
        ];
        args.extend(flags);
        ok(&args);
    };
    // By default a chunk is replaced by a new file; in place, the file stays.
    let before = inode();
    put(&[]);
    assert_ne!(
        inode(),
        before,
        "the default write renames a new file over the chunk"
    );
    let before = inode();
    put(&["--in-place-writes"]);
    assert_eq!(
        inode(),
        before,
        "--in-place-writes rewrites the chunk's own file"
    );
    put(&["--in-place-writes", "--durable"]);
    assert_eq!(inode(), before);
    // The values are right whichever way they were written.
    let mut want = original.clone();
    for y in 0..10 {
        for x in 0..10 {
            let at = (y * 23 + x) * 2;
            want[at..at + 2].copy_from_slice(&(y as u16 * 10 + x as u16 + 1).to_le_bytes());
        }
    }
    assert_eq!(raw(&src), want);
    // A copy into a new array, in place and durable.
    let dst = dir.path().join("dst.zarr").display().to_string();
    ok(&["copy", &src, &dst, "--in-place-writes", "--durable"]);
    assert_eq!(raw(&dst), want);
}
