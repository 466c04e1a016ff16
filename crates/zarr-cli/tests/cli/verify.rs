//! `verify` on damaged copies of fixture stores.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{copy_dir, fixtures, ok, zarr};

/// A copy of a fixture store in a temporary directory.
fn damaged_copy(store: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.zarr");
    copy_dir(&fixtures().join(store), &copy);
    (dir, copy)
}

fn flip_byte(file: &Path, at_from_end: usize) {
    let mut bytes = std::fs::read(file).unwrap();
    let i = bytes.len() - at_from_end;
    bytes[i] ^= 0x40;
    std::fs::write(file, bytes).unwrap();
}

fn verify(store: &Path) -> (Output, String) {
    let out = zarr(&["verify", store.to_str().unwrap()]);
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    (out, stdout)
}

/// `zarr put` of `uint8` values of `shape` into `region` of `array`, through a `.npy` file
/// in `dir`.
fn put_u8(dir: &Path, array: &str, shape: &[u64], values: &[u8], region: &str) {
    let npy = dir.join("v.npy");
    crate::common::write_npy(&npy, "|u1", shape, values);
    ok(&["put", array, "-i", npy.to_str().unwrap(), "-r", region]);
}

fn assert_fails_with(store: &Path, corrupt: &[&str]) -> String {
    let (out, stdout) = verify(store);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let reported: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("corrupt "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(reported, corrupt, "{stdout}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("corrupt or unreadable"), "{err}");
    stdout
}

#[test]
fn verify_passes_intact_stores() {
    for store in [
        "zarr-python/nested_groups",
        "zarr-python/shard_2d",
        "tensorstore/sharded",
    ] {
        let out = ok(&["verify", fixtures().join(store).to_str().unwrap()]);
        assert!(out.contains(" 0 problems"), "{store}: {out}");
    }
    let out = ok(&[
        "verify",
        fixtures().join("zarr-python/shard_2d").to_str().unwrap(),
    ]);
    assert_eq!(
        out,
        "checked 1 array: 3 chunks decode, 1 not stored (fill value), 0 problems\n"
    );
}

#[test]
fn verify_finds_a_flipped_byte_under_a_checksum() {
    let (_dir, copy) = damaged_copy("zarr-python/crc32c");
    flip_byte(&copy.join("c/1"), 6);
    let out = assert_fails_with(&copy, &["c/1"]);
    assert!(out.contains("crc32c") || out.contains("checksum"), "{out}");
    assert!(out.contains("2 chunks decode"), "{out}");
}

#[test]
fn verify_finds_a_flipped_byte_in_a_compressed_chunk() {
    let (_dir, copy) = damaged_copy("zarr-python/zstd_checksum");
    flip_byte(&copy.join("c/2"), 3);
    assert_fails_with(&copy, &["c/2"]);
}

#[test]
fn verify_finds_a_truncated_chunk() {
    let (_dir, copy) = damaged_copy("zarr-python/zstd_checksum");
    let chunk = copy.join("c/0");
    let bytes = std::fs::read(&chunk).unwrap();
    std::fs::write(&chunk, &bytes[..bytes.len() / 2]).unwrap();
    assert_fails_with(&copy, &["c/0"]);
}

#[test]
fn verify_finds_a_corrupt_shard_index() {
    let (_dir, copy) = damaged_copy("zarr-python/shard_2d");
    // The index is at the end: 4 (offset, nbytes) pairs of u64 and a crc32c of 4 bytes.
    flip_byte(&copy.join("c/0/1"), 4 + 8);
    let out = assert_fails_with(&copy, &["c/0/1"]);
    assert!(out.contains("index"), "{out}");
}

#[test]
fn verify_walks_every_array_of_a_group() {
    let (_dir, copy) = damaged_copy("zarr-python/nested_groups");
    let chunk = copy.join("a/a_array/c/1/0");
    std::fs::write(&chunk, b"not zstd").unwrap();
    let stdout = assert_fails_with(&copy, &["a/a_array/c/1/0"]);
    assert!(stdout.contains("checked 3 arrays"), "{stdout}");
}

#[test]
fn verify_lists_the_stored_chunks_instead_of_asking_for_every_one() {
    // 10^10 possible chunks, two stored: asking for each would never end.
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("sparse.zarr");
    let array_text = array.to_str().unwrap();
    ok(&[
        "create",
        array_text,
        "--shape",
        "1000000,1000000",
        "--dtype",
        "uint8",
        "--chunks",
        "10,10",
    ]);
    put_u8(dir.path(), array_text, &[1, 2], &[1, 2], "5,9:11");
    let out = ok(&["-q", "verify", array_text]);
    assert_eq!(
        out,
        "checked 1 array: 2 chunks decode, 9999999998 not stored (fill value), 0 problems\n"
    );
    // A damaged one among them is still found.
    let chunk = array.join("c/0/1");
    std::fs::write(&chunk, b"not zstd").unwrap();
    assert_fails_with(&array, &["c/0/1"]);
}

/// Through the sharding storage transformer the listing would read every shard's index, so
/// each chunk of the grid is asked for: missing ones count as fill value, a damaged one is
/// reported by its chunk key.
#[test]
fn verify_asks_every_chunk_through_the_storage_transformer() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("transformed.zarr");
    std::fs::create_dir(&array).unwrap();
    std::fs::write(
        array.join("zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}, {"name": "crc32c"}],
            "storage_transformers": [{"name": "sharding",
                "configuration": {"chunks_per_shard": [2, 2]}}]}"#,
    )
    .unwrap();
    let array_text = array.to_str().unwrap();
    put_u8(dir.path(), array_text, &[2, 8], &[7; 16], "0:2,:");
    // Rows 0-1 are chunks (0, 0..4), in shards c/0/0 and c/0/1.
    let shards: Vec<String> = std::fs::read_dir(array.join("c/0"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(shards.len(), 2, "{shards:?}");
    let out = ok(&["-q", "verify", array_text]);
    assert_eq!(
        out,
        "checked 1 array: 4 chunks decode, 12 not stored (fill value), 0 problems\n"
    );
    // The shard's first byte is chunk (0, 0)'s first (the index is at the end).
    let shard = array.join("c/0/0");
    let len = std::fs::metadata(&shard).unwrap().len() as usize;
    flip_byte(&shard, len);
    assert_fails_with(&array, &["c/0/0"]);
}

#[test]
fn verify_says_when_only_decoding_was_checked() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.zarr");
    let create = |name: &str, codecs: &[&str]| {
        let path = store.join(name).display().to_string();
        let mut args = vec!["-q", "create", &path, "--shape", "4", "--dtype", "uint8"];
        for codec in codecs {
            args.extend(["--codec", codec]);
        }
        ok(&args);
        let npy = dir.path().join("v.npy");
        crate::common::write_npy(&npy, "|u1", &[4], &[1, 2, 3, 4]);
        ok(&["-q", "put", &path, "-i", npy.to_str().unwrap()]);
        path
    };
    let plain = create("plain", &["zstd"]);
    let summed = create("summed", &["zstd", "crc32c"]);
    let gzip = create("gzip", &["gzip"]);
    // One array without a checksum: the note names it as it was given.
    let out = ok(&["verify", &plain]);
    assert_eq!(
        out,
        format!(
            "checked 1 array: 1 chunks decode, 0 not stored (fill value), 0 problems\n\
             note: {plain} has no checksum, so only decoding was checked; arrays with a crc32c \
             codec (or zstd with its checksum on, or gzip) also get their stored bytes \
             verified\n"
        )
    );
    // --quiet leaves the note out.
    assert!(!ok(&["-q", "verify", &plain]).contains("note"));
    // With a checksum (crc32c, or gzip's CRC-32) there is nothing to say.
    for path in [&summed, &gzip] {
        assert!(!ok(&["verify", path]).contains("note"), "{path}");
    }
    // A group counts the arrays without one.
    let out = ok(&["verify", store.to_str().unwrap()]);
    assert!(out.contains("checked 3 arrays"), "{out}");
    assert!(
        out.contains(
            "note: 1 of 3 arrays has no checksum (/plain), so for it only decoding was checked"
        ),
        "{out}"
    );
    // The inner chunks' codecs of a shard count, its index's checksum does not.
    let sharded = ok(&[
        "verify",
        &fixtures().join("tensorstore/sharded").display().to_string(),
    ]);
    assert!(sharded.contains("has no checksum"), "{sharded}");
    let inner = ok(&[
        "verify",
        &fixtures()
            .join("zarr-python/shard_2d")
            .display()
            .to_string(),
    ]);
    assert!(!inner.contains("note"), "{inner}");
}
