//! `put` and `get --format npy` with `string` and `bytes` arrays (numpy `<U n` / `|S n`), and
//! `put` of Fortran-order files. The `.npy` files are built here byte by byte.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{copy_dir, fails, fixture, ok, parse_npy, write_npy, write_npy_ordered};

/// `strings` as the data of a `U{width}` file, little- or big-endian.
fn utf32(strings: &[&str], width: usize, big_endian: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for s in strings {
        let mut units: Vec<u32> = s.chars().map(u32::from).collect();
        assert!(units.len() <= width, "{s:?} is wider than {width}");
        units.resize(width, 0);
        for u in units {
            out.extend(if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            });
        }
    }
    out
}

/// `values` as the data of an `S{width}` file.
fn fixed_bytes(values: &[&[u8]], width: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        assert!(v.len() <= width);
        out.extend(*v);
        out.resize(out.len() + width - v.len(), 0);
    }
    out
}

fn json_of(array: &str, region: &str) -> Value {
    serde_json::from_str(&ok(&["get", array, "-f", "json", "-r", region])).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn put_strings_from_unicode_and_utf8_files() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("s.zarr").display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "3,4",
        "--dtype",
        "string",
        "--chunks",
        "2,3",
        "--fill-value",
        ".",
    ]);
    // Multi-byte UTF-8, an emoji (one UTF-32 unit, four UTF-8 bytes), empty strings, a NUL
    // inside a value (kept) and the NUL padding after each value (dropped), into a region.
    let npy = dir.path().join("tile.npy");
    let values = ["a", "é😀", "", "日本語", "x\0y", "zz"];
    write_npy(&npy, "<U3", &[2, 3], &utf32(&values, 3, false));
    ok(&["put", &array, "-i", path(&npy), "-r", "1:3,1:4"]);
    assert_eq!(
        json_of(&array, ":"),
        json!([
            [".", ".", ".", "."],
            [".", "a", "é😀", ""],
            [".", "日本語", "x\u{0}y", "zz"]
        ])
    );
    // Big-endian, wider than any value, into a row given by a single index (the file is 1-d).
    write_npy(&npy, ">U7", &[4], &utf32(&["ab", "", "🦀", "çà"], 7, true));
    ok(&["put", &array, "-i", path(&npy), "-r", "0"]);
    assert_eq!(json_of(&array, "0"), json!(["ab", "", "🦀", "çà"]));
    // |S n holding UTF-8 is taken for a string array.
    let utf8: [&[u8]; 2] = ["ü".as_bytes(), b"ok"];
    write_npy(&npy, "|S2", &[2], &fixed_bytes(&utf8, 2));
    ok(&["put", &array, "-i", path(&npy), "-r", "2,:2"]);
    assert_eq!(json_of(&array, "2"), json!(["ü", "ok", "x\u{0}y", "zz"]));
}

#[test]
fn put_bytes_from_fixed_width_files() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("b.zarr").display().to_string();
    ok(&[
        "create", &array, "--shape", "5", "--dtype", "bytes", "--chunks", "2",
    ]);
    let npy = dir.path().join("b.npy");
    let values: [&[u8]; 4] = [b"a\0b", b"", b"\xff\xfe", b"\0\0\0\0"];
    write_npy(&npy, "|S4", &[4], &fixed_bytes(&values, 4));
    ok(&["put", &array, "-i", path(&npy), "-r", "1:"]);
    // Trailing NULs are padding (numpy drops them too); the NUL inside is kept.
    assert_eq!(
        ok(&["get", &array]),
        "b\"\"\nb\"a\\x00b\"\nb\"\"\nb\"\\xff\\xfe\"\nb\"\"\n"
    );
}

#[test]
fn put_fortran_order_files() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("f.zarr").display().to_string();
    ok(&[
        "create",
        &array,
        "--shape",
        "3,4,5",
        "--dtype",
        "int32",
        "--chunks",
        "2,3,2",
        "--fill-value",
        "-1",
    ]);
    // A 2x3x4 big-endian array whose element [i, j, k] is 100i + 10j + k, in Fortran order
    // (i fastest), into [1:3, 1:4, 1:5].
    let mut data = Vec::new();
    for k in 0..4i32 {
        for j in 0..3 {
            for i in 0..2 {
                data.extend((100 * i + 10 * j + k).to_be_bytes());
            }
        }
    }
    let npy = dir.path().join("f.npy");
    write_npy_ordered(&npy, ">i4", true, &[2, 3, 4], &data);
    ok(&["put", &array, "-i", path(&npy), "-r", "1:3,1:4,1:5"]);
    let want: Vec<Vec<Vec<i32>>> = (0..2)
        .map(|i| {
            (0..3)
                .map(|j| (0..4).map(|k| 100 * i + 10 * j + k).collect())
                .collect()
        })
        .collect();
    assert_eq!(json_of(&array, "1:3,1:4,1:5"), json!(want));
    assert_eq!(json_of(&array, "0,0,:"), json!([-1, -1, -1, -1, -1]));
    assert_eq!(json_of(&array, "1:,0,0"), json!([-1, -1]));

    // Strings in Fortran order too: a 2x2 `<U2` file.
    let strings = dir.path().join("s.zarr").display().to_string();
    ok(&["create", &strings, "--shape", "2,2", "--dtype", "string"]);
    // Fortran order lists [0,0], [1,0], [0,1], [1,1].
    write_npy_ordered(
        &npy,
        "<U2",
        true,
        &[2, 2],
        &utf32(&["a", "c", "bb", "🦀"], 2, false),
    );
    ok(&["put", &strings, "-i", path(&npy)]);
    assert_eq!(json_of(&strings, ":"), json!([["a", "bb"], ["c", "🦀"]]));
}

#[test]
fn strings_and_bytes_round_trip_through_get_and_put() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.zarr").display().to_string();
    let dst = dir.path().join("dst.zarr").display().to_string();
    ok(&[
        "create", &src, "--shape", "3,3", "--dtype", "string", "--chunks", "2,2",
    ]);
    ok(&[
        "create", &dst, "--shape", "3,3", "--dtype", "string", "--chunks", "3,1",
    ]);
    let npy = dir.path().join("in.npy");
    let values = ["", "α", "🎉🎉🎉", "naïve", "", "日本", "x", "yz", ""];
    write_npy(&npy, "<U5", &[3, 3], &utf32(&values, 5, false));
    ok(&["put", &src, "-i", path(&npy)]);

    // The export is as wide as the longest value: 5 characters (of any UTF-8 length).
    let out = dir.path().join("out.npy");
    ok(&["get", &src, "-f", "npy", "-o", path(&out)]);
    let exported = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(
        (exported.descr.as_str(), exported.shape.as_slice()),
        ("<U5", &[3u64, 3][..])
    );
    assert_eq!(exported.data, utf32(&values, 5, false));
    ok(&["put", &dst, "-i", path(&out)]);
    assert_eq!(json_of(&dst, ":"), json_of(&src, ":"));

    // A region: its own width; a region of empty strings is numpy's <U1.
    ok(&["get", &src, "-f", "npy", "-r", "1:,0", "-o", path(&out)]);
    let column = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(
        (column.descr.as_str(), column.shape.as_slice()),
        ("<U5", &[2u64][..])
    );
    assert_eq!(column.data, utf32(&["naïve", "x"], 5, false));
    ok(&["get", &src, "-f", "npy", "-r", "0:2,0:1", "-o", path(&out)]);
    let narrow = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(narrow.descr, "<U5");
    ok(&["get", &src, "-f", "npy", "-r", "0,0", "-o", path(&out)]);
    let empty = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(
        (empty.descr.as_str(), empty.shape.as_slice()),
        ("<U1", &[][..])
    );
    assert_eq!(empty.data, [0; 4]);

    // Bytes: |S n, n the longest value.
    let bytes = dir.path().join("b.zarr").display().to_string();
    let back = dir.path().join("b2.zarr").display().to_string();
    for array in [&bytes, &back] {
        ok(&[
            "create", array, "--shape", "4", "--dtype", "bytes", "--chunks", "3",
        ]);
    }
    let values: [&[u8]; 4] = [b"\x00\x01", b"", b"abc", b"\xff"];
    write_npy(&npy, "|S3", &[4], &fixed_bytes(&values, 3));
    ok(&["put", &bytes, "-i", path(&npy)]);
    ok(&["get", &bytes, "-f", "npy", "-o", path(&out)]);
    let exported = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(exported.descr, "|S3");
    assert_eq!(exported.data, fixed_bytes(&values, 3));
    ok(&["put", &back, "-i", path(&out)]);
    assert_eq!(ok(&["get", &back]), ok(&["get", &bytes]));
}

#[test]
fn put_refuses_files_that_are_not_text() {
    let dir = tempfile::tempdir().unwrap();
    let strings = dir.path().join("s.zarr").display().to_string();
    let bytes = dir.path().join("b.zarr").display().to_string();
    ok(&[
        "create", &strings, "--shape", "3,2", "--dtype", "string", "--chunks", "1,2",
    ]);
    ok(&["create", &bytes, "--shape", "2", "--dtype", "bytes"]);
    let npy = dir.path().join("x.npy");
    let npy = path(&npy);
    let le = |units: &[u32]| -> Vec<u8> { units.iter().flat_map(|u| u.to_le_bytes()).collect() };

    // Code points that are not characters fail, naming the element in the file.
    write_npy(
        Path::new(npy),
        "<U2",
        &[3, 2],
        &le(&[0x61, 0, 0x62, 0, 0x63, 0, 0xD800, 0, 0, 0, 0, 0]),
    );
    let err = fails(&["put", &strings, "-i", npy], 1);
    assert!(
        err.contains("element [1, 1] is not text: U+D800 is a surrogate"),
        "{err}"
    );
    write_npy(Path::new(npy), "<U1", &[2], &le(&[0x110000, 0x61]));
    let err = fails(&["put", &strings, "-i", npy, "-r", "0"], 1);
    assert!(
        err.contains("element [0] is not text: 0x110000 is beyond U+10FFFF"),
        "{err}"
    );
    // |S n into a string array must be UTF-8.
    write_npy(Path::new(npy), "|S2", &[2], b"ok\xc3\x28");
    let err = fails(&["put", &strings, "-i", npy, "-r", "2"], 1);
    assert!(err.contains("element [1] is not UTF-8"), "{err}");
    // Object arrays are pickles.
    write_npy(Path::new(npy), "|O", &[2], b"\x80\x04N.");
    let err = fails(&["put", &strings, "-i", npy, "-r", "0"], 2);
    assert!(
        err.contains("holds Python objects") && err.contains("arr.astype(\"U\")"),
        "{err}"
    );
    // Text is not bytes, and numbers are neither.
    write_npy(Path::new(npy), "<U1", &[2], &le(&[0x61, 0x62]));
    let err = fails(&["put", &bytes, "-i", npy], 2);
    assert!(
        err.contains("holds text (<U1) and the array bytes"),
        "{err}"
    );
    write_npy(Path::new(npy), "<f4", &[2], &[0; 8]);
    let err = fails(&["put", &bytes, "-i", npy], 2);
    assert!(err.contains("holds <f4, the array bytes (|S n)"), "{err}");
    // Shorter data than the header says.
    write_npy(Path::new(npy), "<U2", &[3, 2], &le(&[0x61, 0]));
    let err = fails(&["put", &strings, "-i", npy], 1);
    assert!(err.contains("shorter than its header says"), "{err}");
    // Raw output still needs a fixed size.
    let err = fails(
        &["get", &strings, "-f", "raw", "-o", &format!("{npy}.raw")],
        2,
    );
    assert!(err.contains("use --format npy, json or text"), "{err}");
}

#[test]
fn get_takes_the_format_from_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a.zarr");
    let array_text = path(&array);
    ok(&[
        "create", array_text, "--shape", "3", "--dtype", "int16", "--chunks", "2",
    ]);
    let npy = dir.path().join("v.npy");
    crate::common::write_npy(&npy, "<i2", &[3], &[1, 0, 2, 0, 3, 0]);
    ok(&["put", array_text, "-i", path(&npy), "-r", "0:3"]);
    // -o x.npy writes a .npy file (it wrote text before), which puts back the same.
    let out = dir.path().join("out.npy");
    ok(&["get", array_text, "-o", path(&out)]);
    let bytes = std::fs::read(&out).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY"), "{bytes:?}");
    assert!(bytes.ends_with(&[1, 0, 2, 0, 3, 0]));
    let json = dir.path().join("out.json");
    ok(&["get", array_text, "-o", path(&json)]);
    assert_eq!(std::fs::read_to_string(&json).unwrap().trim(), "[1, 2, 3]");
    // A format the name contradicts is refused; other names keep the default, text.
    let err = crate::common::fails(&["get", array_text, "-f", "text", "-o", path(&out)], 2);
    assert!(err.contains("--format text writes no .npy file"), "{err}");
    let other = dir.path().join("values.out");
    ok(&["get", array_text, "-o", path(&other)]);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "1\n2\n3\n");
}

#[test]
fn put_refuses_a_text_width_no_file_holds() {
    let dir = tempfile::tempdir().unwrap();
    let strings = dir.path().join("s.zarr").display().to_string();
    ok(&["create", &strings, "--shape", "1", "--dtype", "string"]);
    let npy = dir.path().join("x.npy");
    // 2^62 code points of 4 bytes: the element's size overflowed.
    for descr in ["<U4611686018427387904", "|S18446744073709551615"] {
        write_npy(&npy, descr, &[1], b"abcd");
        let err = fails(&["put", &strings, "-i", npy.to_str().unwrap()], 1);
        assert!(
            err.contains("shorter than its header says"),
            "{descr}: {err}"
        );
        assert!(err.contains("nothing was written"), "{descr}: {err}");
    }
    assert_eq!(ok(&["get", &strings]), "\"\"\n");
}

/// `put --region` with steps writes a file of the selected shape into every `step`-th index,
/// and `get` with the same steps reads it back.
#[test]
fn put_and_get_take_the_same_steps() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("n.zarr").display().to_string();
    ok(&[
        "create", &array, "--shape", "6,8", "--dtype", "int16", "--chunks", "2,3", "--shards",
        "4,6",
    ]);
    let npy = dir.path().join("n.npy");
    let values: Vec<i16> = (1..=9).collect();
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_npy(&npy, "<i2", &[3, 3], &data);
    ok(&["put", &array, "-i", path(&npy), "-r", "::2,1::3"]);
    assert_eq!(
        json_of(&array, "::2,1::3"),
        json!([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    );
    assert_eq!(json_of(&array, "1,:"), json!([0, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(json_of(&array, "2,:"), json!([0, 4, 0, 0, 5, 0, 0, 6]));
    // The file must have the selected shape.
    let err = fails(&["put", &array, "-i", path(&npy), "-r", "::2,::4"], 2);
    assert!(err.contains("has shape 3x3, the region 3x2"), "{err}");
    // Index lists: rows 1, 3 and 5, columns 0, 5 and 7 (given as -1).
    ok(&["put", &array, "-i", path(&npy), "-r", "[1,3,5],[0,5,-1]"]);
    assert_eq!(
        json_of(&array, "[1,3,5],[0,5,7]"),
        json!([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    );
    assert_eq!(json_of(&array, "1,:"), json!([1, 0, 0, 0, 0, 2, 0, 3]));
    assert_eq!(json_of(&array, "2,:"), json!([0, 4, 0, 0, 5, 0, 0, 6]));

    let strings = dir.path().join("s.zarr").display().to_string();
    ok(&[
        "create", &strings, "--shape", "5", "--dtype", "string", "--chunks", "2",
    ]);
    write_npy(&npy, "<U2", &[2], &utf32(&["é", "🦀z"], 2, false));
    ok(&["put", &strings, "-i", path(&npy), "-r", "1::3"]);
    assert_eq!(json_of(&strings, ":"), json!(["", "é", "", "", "🦀z"]));
    assert_eq!(json_of(&strings, "1::3"), json!(["é", "🦀z"]));
    ok(&["put", &strings, "-i", path(&npy), "-r", "[0,2]"]);
    assert_eq!(json_of(&strings, ":"), json!(["é", "é", "🦀z", "", "🦀z"]));
    assert_eq!(json_of(&strings, "[0,4]"), json!(["é", "🦀z"]));
}

/// `put` of structured `.npy` files into a struct array (zarr-python's `structured` fixture:
/// fields `x` float32 and `y` uint8): fields in either byte order, what `get` exports read
/// back unchanged, and files whose fields differ refused by name.
#[test]
fn put_structured_files_into_struct_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("records.zarr");
    copy_dir(Path::new(&fixture("zarr-python/structured")), &array);
    let array = path(&array).to_owned();
    let raw = |target: &str| {
        let file = dir.path().join("out.raw");
        ok(&["get", target, "-f", "raw", "-o", path(&file)]);
        std::fs::read(file).unwrap()
    };
    // `x` big-endian, as a file from a big-endian machine (or `astype('>f4')`) holds it.
    let records = [(1.5f32, 7u8), (-2.25, 8), (1e6, 9)];
    let big: Vec<u8> = records
        .iter()
        .flat_map(|(x, y)| x.to_be_bytes().into_iter().chain([*y]))
        .collect();
    let file = dir.path().join("big.npy");
    write_npy(&file, "[('x', '>f4'), ('y', '|u1')]", &[3], &big);
    ok(&["put", &array, "-i", path(&file)]);
    let little: Vec<u8> = records
        .iter()
        .flat_map(|(x, y)| x.to_le_bytes().into_iter().chain([*y]))
        .collect();
    assert_eq!(raw(&array), little);
    assert_eq!(
        json_of(&array, "1"),
        json!({"x": -2.25, "y": 8}),
        "{}",
        json_of(&array, ":")
    );

    // What `get` exports, `put` reads back: into a second copy holding other values.
    let exported = dir.path().join("exported.npy");
    ok(&["get", &array, "-f", "npy", "-o", path(&exported)]);
    let other = dir.path().join("other.zarr");
    copy_dir(Path::new(&fixture("zarr-python/structured")), &other);
    let other = path(&other).to_owned();
    assert_ne!(raw(&other), little);
    ok(&["put", &other, "-i", path(&exported)]);
    assert_eq!(raw(&other), little);

    // Other fields, another field type, a plain dtype, a subarray: refused by name.
    for (descr, says) in [
        (
            "[('x', '<f4'), ('z', '|u1')]",
            "fields (x, z) where the array has (x, y)",
        ),
        ("[('x', '<f8'), ('y', '|u1')]", "field x is <f8"),
        ("[('x', '<f4')]", "fields (x) where the array has (x, y)"),
        ("<f4", "not a structured dtype"),
    ] {
        let file = dir.path().join("bad.npy");
        write_npy(&file, descr, &[3], &big);
        let err = fails(&["put", &other, "-i", path(&file)], 2);
        assert!(err.contains(says), "{descr}: {err}");
    }
    let file = dir.path().join("subarray.npy");
    write_npy(&file, "[('x', '<f4', (2,)), ('y', '|u1')]", &[3], &[0; 27]);
    let err = fails(&["put", &other, "-i", path(&file)], 1);
    assert!(err.contains("subarray"), "{err}");
    assert_eq!(raw(&other), little);
}

/// An `.npz` archive of `members` (name, `.npy` file), stored as `numpy.savez` stores them.
fn write_npz(path: &Path, members: &[(&str, &Path)]) {
    use zarr::store::{StoreKey, WritableStore as _, ZipStore};
    let store = ZipStore::create(path).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            for (name, file) in members {
                let data = bytes::Bytes::from(std::fs::read(file).unwrap());
                store
                    .set(&StoreKey::new(&format!("{name}.npy")), data)
                    .await
                    .unwrap();
            }
        });
    store.finish().unwrap();
}

#[test]
fn put_takes_an_array_of_an_npz_archive() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ints: Vec<u8> = (0..6i32).flat_map(|v| (v * 10 - 3).to_le_bytes()).collect();
    write_npy(&d.join("ints.npy"), "<i4", &[2, 3], &ints);
    let floats: Vec<u8> = [1.5f64, -2.0, 1e300]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    write_npy(&d.join("floats.npy"), ">f8", &[3], &floats);
    let two = d.join("two.npz");
    write_npz(
        &two,
        &[
            ("ints", &d.join("ints.npy")),
            ("floats", &d.join("floats.npy")),
        ],
    );
    let one = d.join("one.npz");
    write_npz(&one, &[("ints", &d.join("ints.npy"))]);
    let (two, one) = (two.to_str().unwrap(), one.to_str().unwrap());

    let int_array = d.join("i.zarr").display().to_string();
    ok(&["create", &int_array, "--shape", "2,3", "--dtype", "int32"]);
    let float_array = d.join("f.zarr").display().to_string();
    ok(&["create", &float_array, "--shape", "4", "--dtype", "float64"]);
    // A member by name (with or without `.npy`), or the only one without --member.
    ok(&[
        "put",
        &float_array,
        "-i",
        two,
        "--member",
        "floats",
        "-r",
        "1:4",
    ]);
    assert_eq!(ok(&["get", &float_array]), "0.0\n1.5\n-2.0\n1e300\n");
    ok(&["put", &int_array, "-i", two, "--member", "ints.npy"]);
    assert_eq!(ok(&["get", &int_array, "-r", "1,:"]), "27\n37\n47\n");
    let other = d.join("j.zarr").display().to_string();
    ok(&["create", &other, "--shape", "2,3", "--dtype", "int32"]);
    ok(&["put", &other, "-i", one]);
    let all = d.join("all.npy");
    ok(&["get", &other, "-f", "npy", "-o", all.to_str().unwrap()]);
    assert_eq!(parse_npy(&std::fs::read(&all).unwrap()).data, ints);

    // Which array, when there are several, is a usage error listing them; so is a name
    // that is not there, and --member with an `.npy` file.
    let err = fails(&["put", &int_array, "-i", two], 2);
    assert!(
        err.contains("an .npz archive of 2 arrays; name one with --member"),
        "{err}"
    );
    assert!(err.contains("ints") && err.contains("floats"), "{err}");
    let err = fails(&["put", &int_array, "-i", two, "--member", "other"], 2);
    assert!(
        err.contains("--member other: ") && err.contains("has no such array"),
        "{err}"
    );
    let npy = d.join("ints.npy");
    let err = fails(
        &[
            "put",
            &int_array,
            "-i",
            npy.to_str().unwrap(),
            "--member",
            "x",
        ],
        2,
    );
    assert!(err.contains("is not an .npz archive"), "{err}");
    // The member's name is in messages about its contents.
    let err = fails(&["put", &int_array, "-i", two, "--member", "floats"], 2);
    assert!(err.contains("two.npz[floats]"), "{err}");
    // An archive without arrays.
    let empty = d.join("empty.npz");
    write_npz(&empty, &[]);
    let err = fails(&["put", &int_array, "-i", empty.to_str().unwrap()], 2);
    assert!(
        err.contains("an .npz archive with no arrays in it"),
        "{err}"
    );

    // A member whose last byte is damaged: its CRC-32 no longer matches. The member is
    // streamed, and the damage, found only at its end, is found before anything is written.
    let big: Vec<u8> = (0..10_000i32).flat_map(|v| v.to_le_bytes()).collect();
    write_npy(&d.join("big.npy"), "<i4", &[100, 100], &big);
    let big_npz = d.join("big.npz");
    write_npz(&big_npz, &[("ints", &d.join("big.npy"))]);
    let other = d.join("big.zarr").display().to_string();
    ok(&[
        "create", &other, "--shape", "100,100", "--dtype", "int32", "--chunks", "10,10",
    ]);
    ok(&["put", &other, "-i", big_npz.to_str().unwrap()]);
    let mut damaged = std::fs::read(&big_npz).unwrap();
    let last = damaged
        .windows(4)
        .rposition(|w| w == b"PK\x01\x02")
        .unwrap()
        - 1;
    damaged[last] ^= 0x40;
    let damaged_path = d.join("damaged.npz");
    std::fs::write(&damaged_path, &damaged).unwrap();
    ok(&[
        "put",
        &other,
        "-i",
        d.join("ints.npy").to_str().unwrap(),
        "-r",
        "0:2,0:3",
    ]);
    let before = ok(&["get", &other]);
    let err = fails(&["put", &other, "-i", damaged_path.to_str().unwrap()], 1);
    assert!(
        err.contains("damaged.npz[ints]") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(err.contains("CRC"), "{err}");
    assert_eq!(ok(&["get", &other]), before);
}
