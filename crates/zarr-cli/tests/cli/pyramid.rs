//! `zarr pyramid`: multiscale images (OME-Zarr 0.5 and 0.4) built from an array. The interop test
//! (`interop.rs`) checks every level's values against an independent reduction and has
//! OME-Zarr's validator read the metadata; these tests check the command itself.

use serde_json::Value;

use crate::common::{fails, ok};

fn document(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path.join("zarr.json")).unwrap()).unwrap()
}

/// The demo's 512x512 image, sharded 256x256 of 64x64 chunks, becomes four levels down to
/// one chunk, each level's chunks and shards no larger than the level, with the OME-Zarr
/// metadata that describes them.
#[test]
fn pyramid_writes_levels_down_to_one_chunk_with_ome_zarr_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo.zarr");
    let demo = demo.to_str().unwrap();
    ok(&["demo", demo, "-q"]);
    let raw = format!("{demo}/images/raw");
    let out = dir.path().join("p.zarr");
    let p = out.to_str().unwrap();
    ok(&[
        "pyramid",
        &raw,
        p,
        "--scale",
        "0.25",
        "--unit",
        "micrometer",
        "-q",
    ]);
    assert_eq!(
        ok(&["tree", p]),
        "/\n  0  uint16 512x512 (shards 256x256 of chunks 64x64)\n  \
         1  uint16 256x256 (shards 256x256 of chunks 64x64)\n  \
         2  uint16 128x128 (shards 128x128 of chunks 64x64)\n  \
         3  uint16 64x64 (shards 64x64 of chunks 64x64)\n"
    );
    // Level 0 is the image; level 1 the mean of each 2x2 window, rounded to the nearest.
    assert_eq!(ok(&["diff", &raw, &format!("{p}/0")]).lines().count(), 1);
    assert_eq!(
        ok(&["get", &format!("{p}/0"), "-r", "0:2,0:4"]),
        "1000 1 2 3\n1 2 3 4\n"
    );
    // (1000 + 1 + 1 + 2) / 4 = 251; (2 + 3 + 3 + 4) / 4 = 3.
    assert_eq!(ok(&["get", &format!("{p}/1"), "-r", "0,0:2"]), "251\n3\n");

    let group = document(&out);
    let ome = &group["attributes"]["ome"];
    assert_eq!(ome["version"], "0.5");
    let multiscale = &ome["multiscales"][0];
    assert_eq!(multiscale["name"], "raw");
    assert_eq!(multiscale["type"], "mean");
    assert_eq!(
        multiscale["axes"],
        serde_json::json!([
            {"name": "y", "type": "space", "unit": "micrometer"},
            {"name": "x", "type": "space", "unit": "micrometer"}
        ])
    );
    let datasets = multiscale["datasets"].as_array().unwrap();
    assert_eq!(datasets.len(), 4);
    assert_eq!(
        datasets[0],
        serde_json::json!({"path": "0", "coordinateTransformations": [
            {"type": "scale", "scale": [0.25, 0.25]}
        ]})
    );
    assert_eq!(
        datasets[3],
        serde_json::json!({"path": "3", "coordinateTransformations": [
            {"type": "scale", "scale": [2.0, 2.0]},
            {"type": "translation", "translation": [0.875, 0.875]}
        ]})
    );
    // Each level names its dimensions as the axes, and keeps the image's attributes.
    let level = document(&out.join("2"));
    assert_eq!(level["dimension_names"], serde_json::json!(["y", "x"]));
    assert_eq!(level["attributes"]["units"], "counts");

    // --overwrite replaces the pyramid; without it, an existing one is left alone.
    let err = fails(&["pyramid", &raw, p], 2);
    assert!(err.contains("already exists"), "{err}");
    ok(&[
        "pyramid",
        &raw,
        p,
        "--overwrite",
        "--levels",
        "2",
        "--method",
        "stride",
        "--chunks",
        "32,32",
        "--shards",
        "none",
        "-q",
    ]);
    assert_eq!(
        ok(&["tree", p]),
        "/\n  0  uint16 512x512 (chunks 32x32)\n  1  uint16 256x256 (chunks 32x32)\n"
    );
    assert!(!out.join("2").exists() && !out.join("3").exists());
    // Stride keeps each window's first element: level 1's [0, 1] is level 0's [0, 2].
    assert_eq!(ok(&["get", &format!("{p}/1"), "-r", "0,0:2"]), "1000\n2\n");
    let multiscale = &document(&out)["attributes"]["ome"]["multiscales"][0];
    assert_eq!(multiscale["type"], "stride");
    assert_eq!(
        multiscale["datasets"][1]["coordinateTransformations"],
        serde_json::json!([{"type": "scale", "scale": [2.0, 2.0]}]),
        "stride keeps each level's first element where level 0's is: no translation"
    );
}

/// `--ome-version 0.4` writes the same levels as Zarr v2: the `multiscales` attribute of a
/// `.zgroup`, levels with `/` chunk keys and the axes in xarray's attribute; a sharded
/// layout is refused (v2 has no sharding).
#[test]
fn pyramid_writes_ome_zarr_0_4_as_zarr_v2() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo.zarr");
    let demo = demo.to_str().unwrap();
    ok(&["demo", demo, "-q"]);
    let raw = format!("{demo}/images/raw");
    let v5 = dir.path().join("p5.zarr");
    let v4 = dir.path().join("p4.zarr");
    let (p5, p4) = (v5.to_str().unwrap(), v4.to_str().unwrap());
    let flags = [
        "--chunks", "64,64", "--shards", "none", "--scale", "0.5", "-q",
    ];
    ok(&[&["pyramid", &raw, p5][..], &flags].concat());
    let err = fails(&["pyramid", &raw, p4, "--ome-version", "0.4"], 2);
    assert!(
        err.contains("no sharding") && err.contains("--shards none"),
        "{err}"
    );
    assert!(!v4.exists(), "nothing written");
    ok(&[&["pyramid", &raw, p4, "--ome-version", "0.4"][..], &flags].concat());

    let read = |path: std::path::PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    assert_eq!(
        read(v4.join(".zgroup")),
        serde_json::json!({"zarr_format": 2})
    );
    let attributes = read(v4.join(".zattrs"));
    assert!(attributes.get("ome").is_none(), "{attributes}");
    let multiscale = &attributes["multiscales"][0];
    assert_eq!(multiscale["version"], "0.4");
    // The same description as 0.5's, but for the version.
    let mut expected = document(&v5)["attributes"]["ome"]["multiscales"][0].clone();
    expected["version"] = "0.4".into();
    assert_eq!(multiscale, &expected);
    let levels = multiscale["datasets"].as_array().unwrap().len();
    assert_eq!(levels, 4);
    for level in 0..levels {
        let array = v4.join(level.to_string());
        let zarray = read(array.join(".zarray"));
        assert_eq!(zarray["dimension_separator"], "/", "level {level}");
        assert_eq!(
            read(array.join(".zattrs"))["_ARRAY_DIMENSIONS"],
            serde_json::json!(["y", "x"])
        );
        // The same values as the 0.5 pyramid's level.
        let (a, b) = (format!("{p4}/{level}"), format!("{p5}/{level}"));
        let same = ok(&["diff", &a, &b]);
        assert!(same.contains("are the same"), "level {level}: {same}");
    }
    assert!(v4.join("1/0/0").is_file(), "chunk keys with /");
}

/// What cannot be a pyramid is refused before anything is written, naming the reason; a
/// pyramid that fails half-way removes what it wrote.
#[test]
fn pyramid_refuses_what_ome_zarr_cannot_describe_and_cleans_up_after_failures() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo.zarr");
    let demo = demo.to_str().unwrap();
    ok(&["demo", demo, "-q"]);
    let raw = format!("{demo}/images/raw");
    let p = dir.path().join("p.zarr");
    let p = p.to_str().unwrap();
    for (args, why) in [
        (vec![demo.to_owned()], "is a group"),
        (vec![format!("{demo}/labels")], "fixed-size data type"),
        (
            vec![format!("{demo}/timeseries/temperature")],
            "2 to 5 dimensions",
        ),
        (
            vec![raw.clone(), "--axes".into(), "lat,lon".into()],
            "2 or 3 space axes",
        ),
        (
            vec![raw.clone(), "--axes".into(), "y,x,z".into()],
            "3 names for an array of 2",
        ),
        (
            vec![raw.clone(), "--factor".into(), "1".into()],
            "every factor is 1",
        ),
        (
            vec![raw.clone(), "--factor".into(), "2,2,2".into()],
            "3 values for 2 dimensions",
        ),
        (
            vec![raw.clone(), "--scale=1,-1".into()],
            "not a list of valid values",
        ),
        (
            vec![
                raw.clone(),
                "--factor".into(),
                "1000000000000000000".into(),
                "--levels".into(),
                "64".into(),
            ],
            "does not fit a JSON number",
        ),
        (
            vec![raw.clone(), "--unit".into(), "furlong".into()],
            "not a unit OME-Zarr names",
        ),
        (
            vec![raw.clone(), "--time-unit".into(), "second".into()],
            "no time axis",
        ),
        (
            vec![
                raw.clone(),
                "--chunks".into(),
                r#"[[100,412],[512]]"#.into(),
                "--shards".into(),
                "none".into(),
            ],
            "regular chunk grid",
        ),
    ] {
        let mut all = vec!["pyramid"];
        all.extend(args.iter().map(String::as_str));
        all.push(p);
        let err = fails(&all, 2);
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(!std::path::Path::new(p).exists(), "{args:?} wrote {p}");
    }

    // A chunk of the source that does not decode stops the pyramid at level 0: the error
    // names it, and the partial pyramid is removed.
    let copy = dir.path().join("copy.zarr");
    let copy = copy.to_str().unwrap();
    ok(&["copy", &raw, copy, "--shards", "none", "-q"]);
    std::fs::write(format!("{copy}/c/1/1"), b"garbage").unwrap();
    let err = fails(&["pyramid", copy, p], 1);
    assert!(
        err.contains("the pyramid failed, and the partial destination was removed")
            && err.contains("writing level 0")
            && err.contains("c/1/1"),
        "{err}"
    );
    assert!(!std::path::Path::new(p).exists());
}
