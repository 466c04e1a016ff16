//! The comparison harness's measuring processes, on a tiny array (and W6 on a thousand
//! strings): a copy written by one implementation reads back equal in another, and a
//! difference from the input fails the measurement (which fails the whole run, smoke mode in
//! CI included).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use zarr_benches::Strings;

const SIDE: u64 = 16;

fn measure(data: &Path, implementation: &str, workload: &str, op: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zarr-compare"))
        .args([
            "measure",
            "--impl",
            implementation,
            "--workload",
            workload,
            "--op",
            op,
        ])
        .arg("--data")
        .arg(data)
        .args(["--side", &SIDE.to_string(), "--reps", "1"])
        .args(extra)
        .output()
        .expect("zarr-compare runs")
}

fn record(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON record")
}

fn write_input(data: &Path, values: &[u16]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(data.join("input.u16"), bytes).unwrap();
}

#[test]
fn cross_reads_check_every_value() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let mut values = zarr_benches::field(SIDE);
    write_input(data, &values);

    for writer in ["ours", "zarrs"] {
        let r = record(&measure(data, writer, "W2", "write", &[]));
        assert_eq!(r["bytes"], SIDE * SIDE * SIDE * 2);
        assert_eq!(r["implementation"], writer);
    }
    let r = record(&measure(
        data,
        "zarrs",
        "W2",
        "cross_read",
        &["--writer", "ours"],
    ));
    assert_eq!(r["verified"], true);
    assert_eq!(r["writer"], "ours");
    let r = record(&measure(
        data,
        "ours",
        "W2",
        "cross_read",
        &["--writer", "zarrs"],
    ));
    assert_eq!(r["verified"], true);

    // One value differs from what was written: both readers must fail, naming it.
    values[1234] ^= 1;
    write_input(data, &values);
    for (reader, writer) in [("zarrs", "ours"), ("ours", "zarrs")] {
        let out = measure(data, reader, "W2", "cross_read", &["--writer", writer]);
        assert!(!out.status.success(), "{reader} reading {writer}'s copy");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("value 1234 is"), "{err}");
        assert!(err.contains("differ from the input"), "{err}");
    }
}

#[test]
fn whole_reads_record_memory_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    write_input(data, &zarr_benches::field(SIDE));
    record(&measure(data, "ours-blocking", "W1", "write", &[]));
    let r = record(&measure(data, "ours-blocking", "W1", "read_into", &[]));
    assert_eq!(r["api"], "blocking");
    assert!(r["peak_rss"].as_u64().unwrap() > 0);
    assert!((0.0..=1.0).contains(&r["other_cpu"].as_f64().unwrap()));
    assert!(r["mib_s"].as_f64().unwrap() > 0.0);
    let r = record(&measure(
        data,
        "limit",
        "W1",
        "zstd_decompress",
        &["--threads", "1"],
    ));
    assert_eq!(r["threads"], 1);
    assert_eq!(r["bytes"], SIDE * SIDE * SIDE * 2);
}

#[test]
fn string_reads_check_every_string() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let strings = Strings::generate(1000);
    let input = data.join("input-w6.strings");
    std::fs::write(&input, strings.to_file_bytes()).unwrap();

    for (writer, op) in [
        ("ours", "write"),
        ("ours", "write_arrow"),
        ("zarrs", "write"),
    ] {
        let r = record(&measure(data, writer, "W6", op, &[]));
        assert_eq!(r["bytes"], strings.values().len());
        assert_eq!(r["elements"], 1000);
        assert_eq!(r["chunk_elements"], 100);
    }
    for (reader, op) in [
        ("ours", "read"),
        ("ours", "read_arrow"),
        ("zarrs", "read"),
        ("zarrs", "read_bytes"),
    ] {
        let r = record(&measure(data, reader, "W6", op, &[]));
        assert_eq!(r["verified"], true, "{reader} {op}");
        assert!(r["elements_s"].as_f64().unwrap() > 0.0);
        assert!(r["peak_rss"].as_u64().unwrap() > 0);
    }
    for (reader, writer) in [("zarrs", "ours"), ("ours", "zarrs")] {
        let r = record(&measure(
            data,
            reader,
            "W6",
            "cross_read",
            &["--writer", writer],
        ));
        assert_eq!(r["verified"], true);
        assert_eq!(r["writer"], writer);
    }

    // One letter of string 321 differs from what was written: every reader must fail,
    // naming it.
    let mut values = strings.values().to_vec();
    let at = strings.offsets()[321];
    assert!(
        strings
            .bytes(321)
            .first()
            .is_some_and(u8::is_ascii_lowercase)
    );
    values[at] = if values[at] == b'a' { b'b' } else { b'a' };
    let changed = Strings::try_from_parts(strings.offsets().to_vec(), values).unwrap();
    std::fs::write(&input, changed.to_file_bytes()).unwrap();
    for (reader, op, writer) in [
        ("zarrs", "cross_read", "ours"),
        ("ours", "cross_read", "zarrs"),
        ("ours", "read_arrow", ""),
        ("zarrs", "read_bytes", ""),
    ] {
        let extra: &[&str] = if writer.is_empty() {
            &[]
        } else {
            &["--writer", writer]
        };
        let out = measure(data, reader, "W6", op, extra);
        assert!(!out.status.success(), "{reader} {op} {writer}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("string 321 is"), "{err}");
        assert!(err.contains("differ from the input"), "{err}");
    }
}
