//! Helpers: run the binary, find fixtures, read and write `.npy` files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The fixture corpus.
pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../zarr-core/tests/fixtures")
}

/// A fixture store's directory.
pub(crate) fn fixture(store: &str) -> String {
    fixtures().join(store).display().to_string()
}

/// Every entry of the fixture manifest.
pub(crate) fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The manifest entry of a store's node.
pub(crate) fn entry(store: &str, path: &str) -> Value {
    manifest()
        .into_iter()
        .find(|e| e["store"] == store && e["path"] == path)
        .unwrap_or_else(|| panic!("no manifest entry for {store} {path}"))
}

/// Run `zarr` with `args` and the extra environment `env`.
pub(crate) fn zarr_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zarr"))
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .output()
        .expect("the zarr binary runs")
}

/// Run `zarr` with `args`.
pub(crate) fn zarr(args: &[&str]) -> Output {
    zarr_env(args, &[])
}

/// Standard output of a run that must succeed.
pub(crate) fn ok(args: &[&str]) -> String {
    let out = zarr(args);
    assert!(
        out.status.success(),
        "zarr {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Standard error of a run that must succeed (where notes go).
pub(crate) fn ok_stderr(args: &[&str]) -> String {
    let out = zarr(args);
    assert!(
        out.status.success(),
        "zarr {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

/// Standard error of a run that must fail with `code`; it must be one line.
pub(crate) fn fails(args: &[&str], code: i32) -> String {
    let out = zarr(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "zarr {args:?}: stdout {} stderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    if code == 1 {
        assert_eq!(err.lines().count(), 1, "not one line: {err}");
        assert!(err.starts_with("zarr: "), "{err}");
    }
    err
}

/// Copy a directory tree.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A parsed `.npy` file, checked against the format: magic, version 1.0, a header dict
/// padded to 64 bytes and ending in a newline, and exactly the data its shape and dtype need.
#[derive(Debug)]
pub(crate) struct Npy {
    pub(crate) descr: String,
    pub(crate) shape: Vec<u64>,
    pub(crate) data: Vec<u8>,
}

pub(crate) fn parse_npy(bytes: &[u8]) -> Npy {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "magic");
    assert_eq!(&bytes[6..8], [1, 0], "version 1.0");
    let len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    let data_start = 10 + len;
    assert_eq!(data_start % 64, 0, "the data starts on a 64-byte boundary");
    let dict = std::str::from_utf8(&bytes[10..data_start]).unwrap();
    assert!(dict.ends_with('\n'), "{dict:?}");
    assert!(dict.starts_with("{'descr': '"), "{dict:?}");
    let descr = dict["{'descr': '".len()..]
        .split('\'')
        .next()
        .unwrap()
        .to_owned();
    assert!(dict.contains("'fortran_order': False"), "{dict:?}");
    let shape_text = dict
        .split("'shape': (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let shape: Vec<u64> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let item: usize = match descr.as_bytes()[1] {
        // Datetimes and timedeltas: `<M8[unit]`.
        b'M' | b'm' => 8,
        b'U' => descr[2..].parse::<usize>().unwrap() * 4,
        _ => descr[2..].parse().unwrap(),
    };
    let data = bytes[data_start..].to_vec();
    assert_eq!(
        data.len(),
        shape.iter().product::<u64>() as usize * item,
        "data length for {descr} {shape:?}"
    );
    Npy { descr, shape, data }
}

/// An `.npy` file as numpy writes one (`descr` in any byte order, or a structured dtype's
/// list of fields), C order.
pub(crate) fn write_npy(path: &Path, descr: &str, shape: &[u64], data: &[u8]) {
    write_npy_ordered(path, descr, false, shape, data);
}

/// An `.npy` file as numpy writes one, in Fortran order (`data` first index fastest) when
/// `fortran_order`.
pub(crate) fn write_npy_ordered(
    path: &Path,
    descr: &str,
    fortran_order: bool,
    shape: &[u64],
    data: &[u8],
) {
    let order = if fortran_order { "True" } else { "False" };
    let shape = match shape {
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    // A structured dtype's list of fields is a Python literal of its own, not quoted.
    let descr = if descr.starts_with('[') {
        descr.to_owned()
    } else {
        format!("'{descr}'")
    };
    let mut dict = format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend(u16::try_from(dict.len()).unwrap().to_le_bytes());
    out.extend(dict.as_bytes());
    out.extend(data);
    std::fs::write(path, out).unwrap();
}

/// Whether a value printed by `zarr get --format json` equals a manifest value: numbers as
/// `f64` (both are the exact value), `"NaN"` and the infinities as strings, arrays element by
/// element.
pub(crate) fn same_value(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => {
            match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => {
                    a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits)
                        || a.as_f64() == b.as_f64()
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        _ => got == want,
    }
}

/// Flatten nested JSON arrays of `rank` levels into their elements.
pub(crate) fn flatten(value: &Value, rank: usize) -> Vec<Value> {
    if rank == 0 {
        return vec![value.clone()];
    }
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .flat_map(|v| flatten(v, rank - 1))
        .collect()
}
