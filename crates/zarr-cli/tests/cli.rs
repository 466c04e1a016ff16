//! Runs the `zarr` binary on stores from the fixture corpus.

use std::process::{Command, Output};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../zarr-core/tests/fixtures");

fn zarr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zarr"))
        .args(args)
        .output()
        .expect("the zarr binary runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn info_describes_an_array() {
    let out = stdout(&zarr(&[
        "info",
        &format!("{FIXTURES}/zarr-python/shard_2d"),
    ]));
    assert!(out.contains("shape       [6, 8]"), "{out}");
    assert!(out.contains("data type   uint16"), "{out}");
    assert!(out.contains("grid        [2, 2] chunks"), "{out}");
    assert!(out.contains("sharding_indexed"), "{out}");
}

#[test]
fn info_describes_a_group_and_its_children() {
    let out = stdout(&zarr(&[
        "info",
        &format!("{FIXTURES}/zarr-python/nested_groups"),
    ]));
    assert!(out.contains("level: \"root\""), "{out}");
    assert!(out.contains("a/  group"), "{out}");
    assert!(out.contains("root_array  array [3] int32"), "{out}");
}

#[test]
fn info_json_is_the_metadata() {
    let out = stdout(&zarr(&[
        "info",
        "--json",
        &format!("{FIXTURES}/tensorstore/uint16_zstd"),
    ]));
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    let original: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{FIXTURES}/tensorstore/uint16_zstd/zarr.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(value["metadata"], original);
    assert!(value["grid_shape"].is_array());
}

#[test]
fn errors_are_one_line_with_the_cause_and_exit_1() {
    let out = zarr(&["info", "/definitely/not/here"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("zarr: reading /definitely/not/here/zarr.json: "),
        "{err}"
    );
    let out = zarr(&["info", &format!("{FIXTURES}/zarr-python/structured")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unknown data type `structured`"), "{err}");
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(zarr(&["frobnicate"]).status.code(), Some(2));
}
