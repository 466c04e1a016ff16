//! Fixed-point arrays (`Q7f8`, `N0f8`, `binary_fixed_point`): created by name, printed as the
//! numbers they stand for, exported and written as their stored integers.

use serde_json::{Value, json};

use crate::common::{fails, ok, parse_npy, write_npy};

#[test]
fn fixed_point_arrays_print_values_and_move_stored_integers() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("fp.zarr");
    let gray = format!("{}/gray", store.display());
    ok(&[
        "create",
        &gray,
        "--shape",
        "2,3",
        "--dtype",
        "N0f8",
        "--chunks",
        "1,3",
        "--fill-value",
        "1",
        "--codec",
        "zstd:3",
    ]);
    let meta: Value =
        serde_json::from_slice(&std::fs::read(store.join("gray/zarr.json")).unwrap()).unwrap();
    assert_eq!(meta["data_type"], "N0f8");
    assert_eq!(meta["fill_value"], 1);
    assert!(ok(&["info", &gray]).contains("N0f8"));

    // put takes the stored integers (uint8 for N0f8), exactly as numpy holds them.
    let npy = dir.path().join("row.npy");
    write_npy(&npy, "|u1", &[1, 3], &[0, 51, 128]);
    ok(&[
        "put",
        &gray,
        "--input",
        npy.to_str().unwrap(),
        "--region",
        "0:1,:",
        "-q",
    ]);
    // get prints the numbers they stand for; whole ones without a fraction.
    assert_eq!(ok(&["get", &gray]), "0 0.2 0.5019607843137255\n1 1 1\n");
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&["get", &gray, "--format", "json"])).unwrap(),
        json!([[0, 0.2, 0.5019607843137255], [1, 1, 1]])
    );
    // .npy export: the stored integers.
    let out = dir.path().join("out.npy");
    ok(&["get", &gray, "-o", out.to_str().unwrap()]);
    let exported = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(exported.descr, "|u1");
    assert_eq!(exported.shape, [2, 3]);
    assert_eq!(exported.data, [0, 51, 128, 255, 255, 255]);
    // Floats are not stored integers: refused, naming the dtype put wants.
    let floats = dir.path().join("f.npy");
    write_npy(&floats, "<f8", &[1, 3], &[0; 24]);
    let err = fails(
        &[
            "put",
            &gray,
            "--input",
            floats.to_str().unwrap(),
            "--region",
            "1:2,:",
        ],
        2,
    );
    assert!(err.contains("<f8") && err.contains("|u1"), "{err}");

    // A signed and a parameterized type, by their text forms; copy, diff and verify.
    let q = format!("{}/q", store.display());
    ok(&[
        "create",
        &q,
        "--shape",
        "3",
        "--dtype",
        "Q7f8",
        "--fill-value",
        "-1.5",
    ]);
    let b = format!("{}/b", store.display());
    ok(&[
        "create",
        &b,
        "--shape",
        "2",
        "--dtype",
        "binary_fixed_point<uint16, 8, 8>",
    ]);
    let ints = dir.path().join("q.npy");
    let raw: Vec<u8> = [-384i16, 1, 32767]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    write_npy(&ints, "<i2", &[3], &raw);
    ok(&["put", &q, "--input", ints.to_str().unwrap(), "-q"]);
    assert_eq!(ok(&["get", &q]), "-1.5\n0.00390625\n127.99609375\n");
    assert_eq!(ok(&["get", &b]), "0\n0\n");
    let bmeta: Value =
        serde_json::from_slice(&std::fs::read(store.join("b/zarr.json")).unwrap()).unwrap();
    assert_eq!(
        bmeta["data_type"]["configuration"]["base_data_type"],
        "uint16"
    );
    let copy = dir.path().join("copy.zarr");
    ok(&[
        "copy",
        store.to_str().unwrap(),
        copy.to_str().unwrap(),
        "-q",
    ]);
    ok(&["diff", store.to_str().unwrap(), copy.to_str().unwrap()]);
    ok(&["verify", copy.to_str().unwrap()]);
    let copied: Value =
        serde_json::from_slice(&std::fs::read(copy.join("q/zarr.json")).unwrap()).unwrap();
    assert_eq!(copied["data_type"], "Q7f8");
    assert_eq!(copied["fill_value"], -1.5);
    // Bad type names and fill values are usage errors naming them.
    let bad = format!("{}/bad", store.display());
    let err = fails(&["create", &bad, "--shape", "2", "--dtype", "Q3f3"], 2);
    assert!(err.contains("Q3f3"), "{err}");
    let err = fails(
        &[
            "create",
            &bad,
            "--shape",
            "2",
            "--dtype",
            "Q0f7",
            "--fill-value",
            "1",
        ],
        2,
    );
    assert!(err.contains("out of range"), "{err}");
    assert!(!store.join("bad").exists());
}
