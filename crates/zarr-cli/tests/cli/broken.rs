//! `tree`, `info` and `verify` on hierarchies with a broken node: the healthy nodes are
//! shown, the broken one is marked with its error, and the command exits with 1.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{copy_dir, fixtures, ok, zarr};

/// A copy of the nested-groups fixture (`/a/a_array`, `/a/b/c/c_array`, `/root_array`) with
/// one broken node: `/a/bad`, a directory whose zarr.json is not JSON.
fn with_malformed_child() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.zarr");
    copy_dir(&fixtures().join("zarr-python/nested_groups"), &copy);
    std::fs::create_dir(copy.join("a/bad")).unwrap();
    std::fs::write(copy.join("a/bad/zarr.json"), b"{\"zarr_format\": 3,").unwrap();
    (dir, copy)
}

/// Rename the codec `from` of the array at `array` (a directory) to `to`.
fn rename_codec(array: &Path, from: &str, to: &str) {
    let file = array.join("zarr.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let quoted = format!("\"{from}\"");
    assert!(text.contains(&quoted), "{text}");
    std::fs::write(&file, text.replace(&quoted, &format!("\"{to}\""))).unwrap();
}

/// Run `zarr args`, which must exit with 1 after printing; its stdout and its stderr.
fn shows_and_fails(args: &[&str]) -> (String, String) {
    let out = zarr(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stdout}{stderr}");
    (stdout, stderr)
}

#[test]
fn tree_shows_the_healthy_nodes_and_marks_a_malformed_one() {
    let (_dir, copy) = with_malformed_child();
    let (stdout, stderr) = shows_and_fails(&["tree", copy.to_str().unwrap()]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 8, "{stdout}");
    assert_eq!(
        lines[..5],
        [
            "/",
            "  a/",
            "    a_array  float64 2x2 (chunks 1x2)",
            "    b/",
            "      c/",
        ],
        "{stdout}"
    );
    assert!(lines[6].starts_with("    bad  (error: "), "{stdout}");
    assert!(
        lines[6].contains("bad/zarr.json") && lines[6].contains("JSON"),
        "{stdout}"
    );
    assert!(stdout.contains("c_array  bool 4 (chunks 2)"), "{stdout}");
    assert!(
        stdout.contains("root_array  int32 3 (chunks 2)"),
        "{stdout}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("zarr: "), "{stderr}");
    assert!(
        stderr.contains("1 node could not be read (/a/bad)"),
        "{stderr}"
    );
}

#[test]
fn tree_and_info_mark_an_array_with_an_unknown_codec() {
    let (_dir, copy) = with_malformed_child();
    std::fs::remove_dir_all(copy.join("a/bad")).unwrap();
    rename_codec(&copy.join("root_array"), "zstd", "no_such_codec");
    let store = copy.to_str().unwrap();
    let (stdout, stderr) = shows_and_fails(&["tree", store]);
    assert!(
        stdout.contains(
            "  root_array  (error: codec error in array /root_array: unknown codec `no_such_codec`"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("c_array  bool 4"), "{stdout}");
    assert!(stderr.contains("(/root_array)"), "{stderr}");

    let (stdout, stderr) = shows_and_fails(&["info", store]);
    assert!(stdout.contains("children     a/  group"), "{stdout}");
    assert!(
        stdout.contains(
            "             root_array  (error: codec error in array /root_array: unknown codec"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("1 node could not be read (/root_array)"),
        "{stderr}"
    );

    let (stdout, _) = shows_and_fails(&["info", "--json", store]);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let children = doc["children"].as_array().unwrap();
    assert_eq!(children[0]["node_type"], "group", "{stdout}");
    assert_eq!(children[1]["name"], "root_array", "{stdout}");
    assert!(
        children[1]["error"]
            .as_str()
            .unwrap()
            .contains("no_such_codec"),
        "{stdout}"
    );

    // The same array recorded in consolidated metadata is marked too.
    ok(&["-q", "consolidate", store]);
    let (stdout, _) = shows_and_fails(&["tree", store]);
    assert!(
        stdout.starts_with("/  (from consolidated metadata)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  root_array  (error: codec error in array /root_array: unknown codec `no_such_codec`"
        ),
        "{stdout}"
    );
}

#[test]
fn tree_lists_the_nodes_when_consolidated_metadata_is_malformed() {
    let (_dir, copy) = with_malformed_child();
    std::fs::remove_dir_all(copy.join("a/bad")).unwrap();
    let store = copy.to_str().unwrap();
    ok(&["-q", "consolidate", store]);
    let root = copy.join("zarr.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&root).unwrap()).unwrap();
    doc["consolidated_metadata"]["metadata"]["root_array"]["shape"] = "three".into();
    std::fs::write(&root, doc.to_string()).unwrap();
    let (stdout, stderr) = shows_and_fails(&["tree", store]);
    assert!(
        stdout.starts_with("/  (error in its consolidated metadata, listed instead: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("root_array  int32 3 (chunks 2)"),
        "{stdout}"
    );
    assert!(stderr.contains("1 node could not be read (/)"), "{stderr}");
}

#[test]
fn info_on_a_group_marks_a_malformed_child() {
    let (_dir, copy) = with_malformed_child();
    let group = copy.join("a");
    let (stdout, stderr) = shows_and_fails(&["info", group.to_str().unwrap()]);
    assert!(
        stdout.contains("children     a_array  array float64 2x2"),
        "{stdout}"
    );
    assert!(stdout.contains("             b/  group"), "{stdout}");
    assert!(stdout.contains("             bad  (error: "), "{stdout}");
    assert!(
        stderr.contains("1 node could not be read (/a/bad)"),
        "{stderr}"
    );
}

#[test]
fn verify_checks_the_healthy_arrays_beside_a_malformed_node() {
    let (_dir, copy) = with_malformed_child();
    let (stdout, stderr) = shows_and_fails(&["verify", copy.to_str().unwrap()]);
    assert!(stdout.contains("unopenable /a/bad: "), "{stdout}");
    assert!(stdout.contains("checked 3 arrays"), "{stdout}");
    assert!(stdout.contains("1 problem"), "{stdout}");
    assert!(stderr.contains("nodes that do not open"), "{stderr}");
}

#[test]
fn consolidate_records_an_array_with_an_unknown_codec_and_warns() {
    let (_dir, copy) = with_malformed_child();
    std::fs::remove_dir_all(copy.join("a/bad")).unwrap();
    rename_codec(&copy.join("root_array"), "zstd", "no_such_codec");
    let store = copy.to_str().unwrap();
    let out = zarr(&["consolidate", store]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.starts_with("recorded the metadata of "), "{stdout}");
    // One warning, naming the node and the reason.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "warning: /root_array: recorded, but this library cannot open it (other \
             implementations may): "
        ),
        "{stderr}"
    );
    assert!(stderr.contains("unknown codec `no_such_codec`"), "{stderr}");
    // Recorded all the same, as other implementations may know the codec.
    let doc: Value =
        serde_json::from_slice(&std::fs::read(copy.join("zarr.json")).unwrap()).unwrap();
    let recorded = &doc["consolidated_metadata"]["metadata"]["root_array"];
    assert_eq!(recorded["codecs"][1]["name"], "no_such_codec", "{doc}");
    // -q: notes and warnings are not printed.
    let out = zarr(&["-q", "consolidate", store]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "");
}
