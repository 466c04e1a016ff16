//! `bench`, `demo`, global flags, errors and exit codes.

use crate::common::{fails, ok, write_npy, zarr};

#[test]
fn bench_writes_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&[
        "bench",
        "--size",
        "2",
        "--chunks",
        "64,256",
        "--shards",
        "128,512",
        "--codec",
        "blosc:lz4:5",
        "--dir",
        dir.path().to_str().unwrap(),
        "--threads",
        "2",
    ]);
    assert!(
        out.contains("array   float32 512x1024 (shards 128x512 of chunks 64x256)"),
        "{out}"
    );
    for line in [
        "write   2.0 MiB in ",
        "read    2.0 MiB in ",
        "MiB/s",
        "stored  ",
    ] {
        assert!(out.contains(line), "{line:?} not in {out}");
    }
    // The temporary store is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn demo_builds_a_dataset_that_the_other_commands_read() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo.zarr");
    let demo_text = demo.display().to_string();
    let out = ok(&["demo", &demo_text]);
    assert!(
        out.contains("    raw  uint16 512x512 (shards 256x256 of chunks 64x64)"),
        "{out}"
    );
    assert!(
        out.contains("    temperature  float32 1000 (chunks 100)"),
        "{out}"
    );
    assert!(out.contains("stored       4 of 4 shards"), "{out}");
    assert!(out.contains("zarr.open_group("), "{out}");
    assert!(out.contains("  labels  string 4 (chunks 2)"), "{out}");
    assert_eq!(
        ok(&["get", &format!("{demo_text}/labels")]),
        "\"background\"\n\"ring\"\n\"ramp\"\n\"gap\"\n"
    );
    let raw = format!("{demo_text}/images/raw");
    assert_eq!(ok(&["get", &raw, "-r", "0,0:4"]), "1000\n1\n2\n3\n");
    let series = ok(&[
        "get",
        &format!("{demo_text}/timeseries/temperature"),
        "-r",
        "699:701",
    ]);
    let lines: Vec<&str> = series.lines().collect();
    assert!(lines[0].parse::<f32>().unwrap().is_finite(), "{series}");
    assert_eq!(lines[1], "NaN", "{series}");
    let verify = ok(&["verify", &demo_text]);
    assert!(verify.contains("0 problems"), "{verify}");
    // Running it again replaces the earlier demo; another directory is left alone.
    ok(&["demo", &demo_text]);
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("keep.txt"), "x").unwrap();
    let err = fails(&["demo", other.to_str().unwrap()], 2);
    assert!(err.contains("is not an earlier demo"), "{err}");
    assert!(other.join("keep.txt").exists());
}

#[test]
fn demo_rewrites_an_earlier_demo_but_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let place = |name: &str| dir.path().join(name).display().to_string();
    let (demo, mine) = (place("demo.zarr"), place("mine.zarr"));
    // An earlier demo, consolidated or not, is rewritten as the demo writes it.
    ok(&["-q", "demo", &demo]);
    ok(&["-q", "consolidate", &demo]);
    ok(&["-q", "demo", &demo]);
    assert!(!ok(&["tree", &demo]).contains("consolidated"));
    ok(&["-q", "demo", &demo]);

    // A copy of the demo carries its root attributes; then it gets the user's data: an
    // array, a file, and new values in one of the demo's arrays.
    ok(&["-q", "copy", &demo, &mine]);
    ok(&["-q", "demo", &mine]);
    let extra = format!("{mine}/extra");
    ok(&["-q", "create", &extra, "--shape", "3", "--dtype", "uint8"]);
    let notes = dir.path().join("mine.zarr/notes.txt");
    std::fs::write(&notes, "mine").unwrap();
    let err = fails(&["demo", &mine], 2);
    assert!(
        err.contains("mine.zarr is not an earlier demo")
            && err.contains("it holds extra/, notes.txt (not written by the demo); choose"),
        "{err}"
    );
    let npy = dir.path().join("values.npy");
    write_npy(&npy, "<f4", &[2], &[0; 8]);
    let temperature = format!("{mine}/timeseries/temperature");
    ok(&[
        "put",
        &temperature,
        "-i",
        npy.to_str().unwrap(),
        "-r",
        "0:2",
    ]);
    std::fs::remove_file(&notes).unwrap();
    let err = fails(&["demo", &mine], 2);
    assert!(
        err.contains(
            "it holds extra/ (not written by the demo) and timeseries/temperature/c/0 \
             (changed since the demo wrote it)"
        ),
        "{err}"
    );
    // All of it is still there.
    assert_eq!(ok(&["get", &temperature, "-r", "0:2"]), "0.0\n0.0\n");
    assert_eq!(ok(&["get", &extra]), "0\n0\n0\n");
    assert!(ok(&["tree", &mine]).contains("  labels  string 4 (chunks 2)"));
    // A file in place of the directory is refused too.
    std::fs::write(&notes, "mine").unwrap();
    let err = fails(&["demo", notes.to_str().unwrap()], 2);
    assert!(
        err.contains("notes.txt is a file, not a directory"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
}

#[test]
fn quiet_silences_demo_and_consolidate() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo.zarr");
    let demo_text = demo.display().to_string();
    let silent = |args: &[&str]| {
        let out = zarr(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(
            (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            ("".into(), "".into()),
            "{args:?}"
        );
    };
    silent(&["-q", "demo", &demo_text]);
    silent(&["demo", "--quiet", &demo_text]);
    // The dataset is there all the same.
    assert!(ok(&["tree", &demo_text]).contains("    raw  uint16 512x512"));
    silent(&["consolidate", "-q", &demo_text]);
    assert!(ok(&["tree", &demo_text]).starts_with("/  (from consolidated metadata)\n"));
    // Without --quiet both say what they did.
    assert!(ok(&["consolidate", &demo_text]).starts_with("recorded the metadata of 5 nodes"));
}

#[test]
fn errors_are_one_line_with_the_cause_and_exit_1() {
    let err = fails(&["info", "/definitely/not/here"], 1);
    assert_eq!(
        err,
        "zarr: /definitely/not/here: no such file or directory\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let err = fails(&["info", dir.path().to_str().unwrap()], 1);
    assert!(
        err.contains(
            "not a Zarr node (there is no zarr.json, nor a Zarr v2 .zarray or .zgroup, in it)"
        ),
        "{err}"
    );
    let unknown = tempfile::tempdir().unwrap();
    std::fs::write(
        unknown.path().join("zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int9",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]}"#,
    )
    .unwrap();
    let err = fails(&["info", unknown.path().to_str().unwrap()], 1);
    assert!(err.contains("unknown data type `int9`"), "{err}");
    let err = fails(
        &["get", &crate::common::fixture("zarr-python/nested_groups")],
        1,
    );
    assert!(err.contains("is a group, not an array"), "{err}");
    let err = fails(&["info", "ftp://host/x"], 1);
    assert!(err.contains("ftp://host/x"), "{err}");
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(zarr(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(zarr(&["get"]).status.code(), Some(2));
    let shard = crate::common::fixture("zarr-python/shard_2d");
    fails(&["get", &shard, "--threads", "0"], 2);
    fails(&["get", &shard, "--region", "1,2,3"], 2);
    fails(&["get", &shard, "--format", "xml"], 2);
}

#[test]
fn regions_take_an_ellipsis_and_typos_say_what_a_region_is() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("cube.zarr").display().to_string();
    ok(&[
        "create", &array, "--shape", "2,3,4", "--dtype", "int16", "--chunks", "1,2,2",
    ]);
    let npy = dir.path().join("v.npy");
    let data: Vec<u8> = (0..24i16).flat_map(|v| v.to_le_bytes()).collect();
    crate::common::write_npy(&npy, "<i2", &[2, 3, 4], &data);
    ok(&["put", &array, "-i", npy.to_str().unwrap()]);
    // `...` is `:` for the dimensions not given: the last column of every row.
    assert_eq!(
        ok(&["get", &array, "-r", "...,-1", "-f", "json"]),
        "[[3, 7, 11], [15, 19, 23]]\n"
    );
    assert_eq!(
        ok(&["get", &array, "-r", "1,...,1:3", "-f", "json"]),
        "[[13, 14], [17, 18], [21, 22]]\n"
    );
    assert_eq!(
        ok(&["get", &array, "-r", "...", "-f", "json"]),
        ok(&["get", &array, "-f", "json"])
    );
    // put takes it too.
    crate::common::write_npy(&npy, "<i2", &[2, 3], &[0; 12]);
    ok(&["put", &array, "-i", npy.to_str().unwrap(), "-r", "...,0"]);
    assert_eq!(ok(&["get", &array, "-r", "1,2"]), "0\n21\n22\n23\n");

    // A `;` for a `,` is reported as such, not as a step.
    let err = fails(&["get", &array, "-r", "0:1;0:2"], 2);
    assert!(
        err.contains(
            "region \"0:1;0:2\": \"0:1;0:2\" is not a selection (dimensions are separated by \
             commas); expected comma-separated selections, one per dimension, each `start:stop`"
        ),
        "{err}"
    );
    assert!(!err.contains("has a step"), "{err}");
    let err = fails(&["get", &array, "-r", "...,0,..."], 2);
    assert!(err.contains("at most one"), "{err}");
    let err = fails(&["get", &array, "-r", "0,...,0,0,0"], 2);
    assert!(
        err.contains("zarr: region \"0,...,0,0,0\" selects 4 dimensions"),
        "{err}"
    );
    let err = fails(&["get", &array, "-r", "0,0,0,0"], 2);
    assert!(
        err.contains("selects 4 dimensions but the array has 3"),
        "{err}"
    );
}

#[test]
fn help_has_examples_for_every_command() {
    for command in [
        "info", "tree", "get", "create", "put", "verify", "copy", "bench", "demo",
    ] {
        let out = ok(&[command, "--help"]);
        assert!(out.contains("Examples:"), "{command}: {out}");
        assert!(
            out.contains(&format!("zarr {command} ")),
            "{command}: {out}"
        );
    }
    let out = ok(&["--help"]);
    assert!(out.contains("Exit codes: 0 success; 1 failure"), "{out}");
}

/// A copy of the `zarr` binary alone in a fresh directory, so that no `zarr-compare` is
/// beside it, run with `PATH` set to `path` only.
#[cfg(unix)]
fn lone_zarr(args: &[&str], path: &std::path::Path) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("zarr");
    std::fs::copy(env!("CARGO_BIN_EXE_zarr"), &exe).unwrap();
    let mut command = std::process::Command::new(&exe);
    command.args(args).env("PATH", path).env_remove("RUST_LOG");
    output_once_not_busy(&mut command)
}

/// Run `command`, retrying while its program is "text file busy": a test thread that forks
/// while this one still has a freshly written executable open for writing makes the child
/// hold that descriptor until it execs, and running the file fails for that moment.
#[cfg(unix)]
fn output_once_not_busy(command: &mut std::process::Command) -> std::process::Output {
    let mut tries = 0;
    loop {
        match command.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other.unwrap(),
        }
    }
}

/// A stand-in `zarr-compare` in a fresh directory: it records its arguments in `args.txt`
/// beside itself and exits with `code`.
#[cfg(unix)]
fn stub_harness(code: i32) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("zarr-compare");
    let record = dir.path().join("args.txt");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\nexit {code}\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Run it once here, past any "text file busy" moment, so that `zarr` (which would report
    // the failure) never meets one: once it has run, no writer can hold it open. The run
    // records no arguments; the test's own run overwrites the record.
    output_once_not_busy(&mut std::process::Command::new(&script));
    dir
}

#[cfg(unix)]
#[test]
fn bench_compare_without_the_harness_says_how_to_get_it() {
    let empty = tempfile::tempdir().unwrap();
    let out = lone_zarr(&["bench", "--compare", "--smoke"], empty.path());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(
        err.starts_with("zarr: the comparison harness `zarr-compare` is not installed"),
        "{err}"
    );
    assert!(err.contains("cargo xtask bench"), "{err}");
}

#[cfg(unix)]
#[test]
fn bench_compare_runs_the_harness_on_path_with_the_options() {
    let harness = stub_harness(0);
    let out = lone_zarr(
        &[
            "bench",
            "--compare",
            "--smoke",
            "--out",
            "/tmp/results",
            "--reps",
            "3",
            "--only",
            "W1,W6",
            "--strings",
            "1000",
        ],
        harness.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = std::fs::read_to_string(harness.path().join("args.txt")).unwrap();
    assert_eq!(
        args.trim(),
        "--smoke --out /tmp/results --reps 3 --only W1,W6 --strings 1000"
    );

    // The harness's failure is zarr's.
    let failing = stub_harness(3);
    let out = lone_zarr(&["bench", "--compare"], failing.path());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("the comparison harness") && err.contains("failed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(failing.path().join("args.txt"))
            .unwrap()
            .trim(),
        ""
    );
}

#[test]
fn bench_compare_takes_no_array_options() {
    let err = fails(&["bench", "--compare", "--size", "4"], 2);
    assert!(err.contains("--size"), "{err}");
}
