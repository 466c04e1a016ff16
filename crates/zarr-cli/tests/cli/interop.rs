//! `get --format npy` loaded by numpy and compared with zarr-python's reading of the same
//! region, and the demo dataset opened by zarr-python. Runs with the interpreter named by
//! `ZARR_TEST_PYTHON` (`cargo xtask ci` sets it to a venv with zarr-python 3.1.6 and numpy);
//! without it the test says so and passes without running, as the library's interop tests do.

use std::process::Command;

use crate::common::{fixture, ok};

const CHECK: &str = r#"
import sys, numpy, zarr
store, path, region, npy = sys.argv[1:5]
expected = zarr.open_array(store, path=path, mode="r")[eval(f"numpy.s_[{region}]")]
got = numpy.load(npy)
assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
assert got.shape == expected.shape, (got.shape, expected.shape)
same = numpy.array_equal(got, expected, equal_nan=got.dtype.kind in "fcmM")
assert same, (got, expected)
print("ok")
"#;

const DEMO: &str = r#"
import sys, zarr
root = zarr.open_group(sys.argv[1], mode="r")
raw = root["images/raw"][:]
assert raw.shape == (512, 512) and str(raw.dtype) == "uint16", raw
assert raw[0, 0] == 1000 and raw[0, 1] == 1
assert list(root["labels"][:]) == ["background", "ring", "ramp", "gap"]
t = root["timeseries/temperature"][:]
assert t.shape == (1000,) and t[699] == t[699] and t[700] != t[700]
print("ok")
"#;

#[test]
fn numpy_loads_our_npy_and_zarr_python_reads_the_demo() {
    let Some(python) = std::env::var_os("ZARR_TEST_PYTHON") else {
        eprintln!("SKIPPED: ZARR_TEST_PYTHON is not set (`cargo xtask ci` sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("x.npy");
    for (store, path, region) in [
        ("zarr-python/shard_2d", "", "1:5,2:7"),
        ("zarr-python/shard_2d", "", ":,3"),
        ("zarr-python/dtype_float16", "", ":"),
        ("zarr-python/dtype_complex128", "", "2:9"),
        ("zarr-python/dtype_bool", "", ":"),
        ("zarr-python/fill_nan_float32", "", ":"),
        ("zarr-python/dtype_datetime64_10ns", "", ":"),
        ("zarr-python/fixed_utf32", "", ":"),
        ("zarr-python/dimension_names", "", "1,:,1:3"),
        ("zarr-python/nested_groups", "a/a_array", "-1"),
        ("tensorstore/sharded", "", "3:10,-4:"),
    ] {
        let target = format!("{}/{path}", fixture(store));
        ok(&[
            "get",
            &target,
            "-r",
            region,
            "-f",
            "npy",
            "-o",
            npy.to_str().unwrap(),
        ]);
        let out = Command::new(&python)
            .args([
                "-c",
                CHECK,
                &fixture(store),
                path,
                region,
                npy.to_str().unwrap(),
            ])
            .output()
            .expect("ZARR_TEST_PYTHON runs");
        assert!(
            out.status.success(),
            "{store} {path} [{region}]: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let demo = dir.path().join("demo.zarr");
    ok(&["demo", demo.to_str().unwrap()]);
    let out = Command::new(&python)
        .args(["-c", DEMO, demo.to_str().unwrap()])
        .output()
        .expect("ZARR_TEST_PYTHON runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
