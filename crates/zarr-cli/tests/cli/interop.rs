//! `get --format npy` loaded by numpy and compared with zarr-python's reading of the same
//! region (strings and bytes included), files numpy wrote (`dtype="U"`, Fortran order) put
//! into arrays (also from a compressed `.npz`) and read back by zarr-python, and the demo dataset opened by zarr-python. Runs with the interpreter named by
//! `ZARR_TEST_PYTHON` (`cargo xtask ci` sets it to a venv with zarr-python 3.1.6 and numpy);
//! without it each test says so and passes without running, as the library's interop tests
//! do.

use std::process::Command;

use crate::common::{copy_dir, fails, fixture, ok};

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
import sys, warnings, zarr
path, zarr_format, consolidated = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "consolidated"
warnings.simplefilter("ignore")  # consolidated metadata "not part of the v3 specification"
if consolidated:
    root = zarr.open_consolidated(path, mode="r", zarr_format=zarr_format)
    assert root.metadata.consolidated_metadata is not None
    names = sorted(name for name, _ in root.members(max_depth=None))
    assert names == ["images", "images/raw", "labels", "timeseries",
                     "timeseries/temperature"], names
else:
    root = zarr.open_group(path, mode="r", zarr_format=zarr_format, use_consolidated=False)
assert root.metadata.zarr_format == zarr_format
raw = root["images/raw"][:]
assert raw.shape == (512, 512) and str(raw.dtype) == "uint16", raw
assert raw[0, 0] == 1000 and raw[0, 1] == 1
assert list(root["labels"][:]) == ["background", "ring", "ramp", "gap"]
t = root["timeseries/temperature"][:]
assert t.shape == (1000,) and t[699] == t[699] and t[700] != t[700]
print("ok")
"#;

/// numpy writes the files `put` reads: strings with `dtype="U"`, a Fortran-order array and
/// structured records with a big-endian field.
const WRITE: &str = r#"
import sys, numpy
d = sys.argv[1]
numpy.save(f"{d}/s.npy", numpy.array([["a", "h\u00e9llo", ""], ["\U0001F980\U0001F980", "\u65e5\u672c\u8a9e", "x\x00y"]], dtype="U"))
numpy.save(f"{d}/b.npy", numpy.array([b"\x00\x01", b"", b"abc"], dtype="S"))
f = numpy.asfortranarray(numpy.arange(2 * 3 * 4, dtype=">f8").reshape(2, 3, 4) * 1.5 - 7)
assert f.flags.f_contiguous and not f.flags.c_contiguous
numpy.save(f"{d}/f.npy", f)
r = numpy.array([(1.5, 7), (-2.25, 8), (1e6, 9)], dtype=[("x", ">f4"), ("y", "u1")])
numpy.save(f"{d}/r.npy", r)
# An aligned structured dtype: numpy writes its padding as unnamed `|V n` fields, here
# inside the nested struct too, beside a big-endian field.
aligned = numpy.dtype([("y", "u1"), ("x", ">f4"), ("p", [("k", "u1"), ("v", "<i8")])], align=True)
assert aligned.itemsize == 24, aligned.itemsize
numpy.save(f"{d}/ra.npy", numpy.array([(7, 1.5, (3, -1)), (8, -2.25, (4, 2**40))], dtype=aligned))
# An .npz archive, compressed (deflated entries), holding the Fortran-order array too.
numpy.savez_compressed(f"{d}/z.npz", records=r, fortran=f)
print("ok")
"#;

/// zarr-python reads what `put` wrote from a file numpy wrote: the same values.
const READ_BACK: &str = r#"
import sys, numpy, zarr
store, region, npy = sys.argv[1:4]
want = numpy.load(npy)
got = zarr.open_array(store, mode="r")[eval(f"numpy.s_[{region}]")]
assert got.shape == want.shape, (got.shape, want.shape)
assert got.tolist() == want.tolist(), (got, want)
print("ok")
"#;

/// numpy loads `get --format npy` of a string or bytes region: zarr-python's values, and the
/// dtype numpy itself picks for them.
const TEXT_CHECK: &str = r#"
import sys, numpy, zarr
store, region, npy = sys.argv[1:4]
expected = zarr.open_array(store, mode="r")[eval(f"numpy.s_[{region}]")]
got = numpy.load(npy)
assert got.shape == expected.shape, (got.shape, expected.shape)
assert got.tolist() == expected.tolist(), (got, expected)
assert got.dtype == numpy.array(expected.tolist()).dtype, (got.dtype, expected.tolist())
assert got.dtype.kind in "US", got.dtype
print("ok")
"#;

fn run_python(python: &std::ffi::OsStr, script: &str, args: &[&str], what: &str) {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("ZARR_TEST_PYTHON runs");
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn numpy_files_go_through_put_and_get_as_zarr_python_sees_them() {
    let Some(python) = std::env::var_os("ZARR_TEST_PYTHON") else {
        eprintln!("SKIPPED: ZARR_TEST_PYTHON is not set (`cargo xtask ci` sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    run_python(&python, WRITE, &[d], "numpy writing the files");
    let fortran = std::fs::read(dir.path().join("f.npy")).unwrap();
    assert!(
        String::from_utf8_lossy(&fortran[..128]).contains("'fortran_order': True"),
        "numpy did not write Fortran order"
    );

    let strings = format!("{d}/s.zarr");
    ok(&[
        "create", &strings, "--shape", "3,4", "--dtype", "string", "--chunks", "2,3",
    ]);
    let bytes = format!("{d}/b.zarr");
    ok(&["create", &bytes, "--shape", "3", "--dtype", "bytes"]);
    let numbers = format!("{d}/f.zarr");
    ok(&[
        "create", &numbers, "--shape", "2,3,4", "--dtype", "float64", "--chunks", "1,2,3",
    ]);
    // A struct array as zarr-python writes one (fields `x` float32, `y` uint8).
    let records = format!("{d}/r.zarr");
    copy_dir(
        std::path::Path::new(&fixture("zarr-python/structured")),
        std::path::Path::new(&records),
    );
    // The aligned records go into the packed struct zarr-python makes of them.
    let aligned = format!("{d}/ra.zarr");
    ok(&[
        "create",
        &aligned,
        "--shape",
        "2",
        "--dtype",
        r#"{"name": "structured", "configuration": {"fields": [["y", "uint8"], ["x", "float32"],
            ["p", {"name": "structured", "configuration": {"fields": [["k", "uint8"], ["v", "int64"]]}}]]}}"#,
    ]);
    for (array, region, file) in [
        (&strings, "1:3,1:4", "s.npy"),
        (&bytes, ":", "b.npy"),
        (&numbers, ":", "f.npy"),
        (&records, ":", "r.npy"),
        (&aligned, ":", "ra.npy"),
    ] {
        let npy = format!("{d}/{file}");
        ok(&["put", array, "-i", &npy, "-r", region]);
        run_python(&python, READ_BACK, &[array, region, &npy], file);
    }
    // The same values from numpy's compressed `.npz`, into new arrays.
    let npz = format!("{d}/z.npz");
    let numbers_npz = format!("{d}/f-npz.zarr");
    ok(&[
        "create",
        &numbers_npz,
        "--shape",
        "2,3,4",
        "--dtype",
        "float64",
        "--chunks",
        "1,2,3",
    ]);
    let records_npz = format!("{d}/r-npz.zarr");
    copy_dir(
        std::path::Path::new(&fixture("zarr-python/structured")),
        std::path::Path::new(&records_npz),
    );
    for (array, member, npy) in [
        (&numbers_npz, "fortran", "f.npy"),
        (&records_npz, "records", "r.npy"),
    ] {
        ok(&["put", array, "-i", &npz, "--member", member]);
        run_python(
            &python,
            READ_BACK,
            &[array, ":", &format!("{d}/{npy}")],
            member,
        );
    }

    // Our string and bytes exports, from arrays zarr-python wrote and from the one above.
    let npy = format!("{d}/out.npy");
    for (store, region) in [
        (fixture("zarr-python/string_2d"), "1:,1:4"),
        (fixture("zarr-python/string_1d"), ":"),
        (fixture("zarr-python/shard_strings"), "3:9"),
        (fixture("zarr-python/bytes_vlen"), ":"),
        (strings.clone(), ":"),
        (strings.clone(), "0,:"),
    ] {
        ok(&["get", &store, "-r", region, "-f", "npy", "-o", &npy]);
        run_python(
            &python,
            TEXT_CHECK,
            &[&store, region, &npy],
            &format!("{store} [{region}]"),
        );
    }
}

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
        ("zarr-python/structured", "", ":"),
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
    // The demo as written; its Zarr v2 copy (`copy --zarr-format 2`); both consolidated.
    let demo = dir.path().join("demo.zarr");
    ok(&["demo", demo.to_str().unwrap()]);
    let v2 = dir.path().join("demo-v2.zarr");
    let (demo_text, v2_text) = (demo.to_str().unwrap(), v2.to_str().unwrap());
    ok(&[
        "copy",
        demo_text,
        v2_text,
        "--zarr-format",
        "2",
        "--shards",
        "none",
    ]);
    for (store, format, how) in [
        (demo_text, "3", "plain"),
        (v2_text, "2", "plain"),
        (demo_text, "3", "consolidated"),
        (v2_text, "2", "consolidated"),
    ] {
        if how == "consolidated" {
            ok(&["consolidate", store]);
        }
        let out = Command::new(&python)
            .args(["-c", DEMO, store, format, how])
            .output()
            .expect("ZARR_TEST_PYTHON runs");
        assert!(
            out.status.success(),
            "{store} ({how}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// zarr-python writes the arrays `zarr pyramid` reads.
const PYRAMID_SOURCES: &str = r#"
import sys, numpy, zarr
d = sys.argv[1]
rng = numpy.random.default_rng(7)
img = zarr.create_array(f"{d}/img.zarr", shape=(2, 100, 70), chunks=(1, 32, 32), dtype="uint16",
                        dimension_names=["c", "y", "x"])
img[:] = rng.integers(0, 65535, size=img.shape, endpoint=True, dtype="uint16")
labels = zarr.create_array(f"{d}/labels.zarr", shape=(37, 53), chunks=(16, 16), dtype="int32")
labels[:] = rng.choice(numpy.array([-5, 0, 3, 2**31 - 1], dtype="int32"), size=labels.shape)
f = zarr.create_array(f"{d}/f.zarr", shape=(41, 30), chunks=(16, 16), dtype="float32",
                      dimension_names=["y", "x"], fill_value=float("nan"))
values = rng.normal(size=f.shape).astype("float32")
values[3, 4] = numpy.nan
values[10, 11] = -numpy.inf
values[40, 29] = numpy.inf
f[:] = values
print("ok")
"#;

/// OME-Zarr's validator accepts the pyramid, and zarr-python reads every level as a
/// reference reduction of the level before (written here, element by element) computes it.
const PYRAMID_CHECK: &str = r#"
import json, sys, numpy, zarr
from ome_zarr_models import v04, v05
pyramid, source, method, factors, scale0 = sys.argv[1:6]
factors, scale0 = json.loads(factors), json.loads(scale0)
group = zarr.open_group(pyramid, mode="r")
# OME-Zarr 0.4 (Zarr v2): `multiscales` among the group's attributes; 0.5 under `ome`.
v2 = "multiscales" in group.attrs
if v2:
    assert group.metadata.zarr_format == 2
    ms = v04.Image.from_zarr(group).attributes.multiscales[0]
    assert ms.version == "0.4", ms.version
else:
    ms = v05.Image.from_zarr(group).attributes.ome.multiscales[0]
names = [axis.name for axis in ms.axes]

def reduce(a, f):
    shape = tuple(-(-n // k) for n, k in zip(a.shape, f))
    out = numpy.empty(shape, dtype=a.dtype)
    for idx in numpy.ndindex(shape):
        flat = a[tuple(slice(i * k, (i + 1) * k) for i, k in zip(idx, f))].ravel()
        if method == "mean" and a.dtype.kind in "iub":
            s, n = sum(int(v) for v in flat), flat.size
            q = (2 * abs(s) + n) // (2 * n)
            v = q if s >= 0 else -q
        elif method == "mean":
            v = flat.astype(numpy.float64).mean()
        elif method == "max":
            v = flat.max()
        elif method == "min":
            v = flat.min()
        elif method == "stride":
            v = flat[0]
        else:
            keys = [flat[i:i + 1].tobytes() for i in range(flat.size)]
            best = max(range(len(keys)), key=lambda i: (keys.count(keys[i]), -keys.index(keys[i])))
            v = flat[best]
        out[idx] = v
    return out

want = zarr.open_array(source, mode="r")[...]
for level, dataset in enumerate(ms.datasets):
    array = group[dataset.path]
    if v2:
        assert array.metadata.dimension_separator == "/", array.metadata
        assert array.attrs["_ARRAY_DIMENSIONS"] == names, (dict(array.attrs), names)
    else:
        assert list(array.metadata.dimension_names) == names, (array.metadata.dimension_names, names)
    if level > 0:
        want = reduce(want, factors)
    got = array[...]
    assert got.dtype == want.dtype and got.shape == want.shape, (level, got.dtype, got.shape, want.shape)
    assert numpy.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (level, got, want)
    transforms = dataset.coordinateTransformations
    window = [f ** level for f in factors]
    assert transforms[0].scale == [s * w for s, w in zip(scale0, window)], transforms
    shift = [(w - 1) / 2 * s for s, w in zip(scale0, window)]
    if method != "stride" and any(shift):
        assert transforms[1].translation == shift, transforms
    else:
        assert len(transforms) == 1, transforms
print(len(ms.datasets))
"#;

/// `zarr pyramid` reads arrays zarr-python wrote and writes OME-Zarr 0.5 (and 0.4) multiscale images
/// that OME-Zarr's validator (`ome-zarr-models`) accepts and zarr-python reads, each level
/// equal to an independent reduction of the level before: mean of integers and of floats
/// with NaN and infinities, mode of labels, max, stride, with partial windows at the edges,
/// sharded and compressed layouts.
#[test]
fn ome_zarr_validates_our_pyramids_and_zarr_python_reads_their_levels() {
    let Some(python) = std::env::var_os("ZARR_TEST_PYTHON") else {
        eprintln!("SKIPPED: ZARR_TEST_PYTHON is not set (`cargo xtask ci` sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    run_python(
        &python,
        PYRAMID_SOURCES,
        &[d],
        "zarr-python writing the sources",
    );
    for (source, args, method, factors, scale, levels) in [
        (
            "img",
            &["--scale", "1,0.5,0.5", "--unit", "micrometer"][..],
            "mean",
            "[1,2,2]",
            "[1,0.5,0.5]",
            3,
        ),
        (
            "img",
            &["--method", "stride", "--factor", "1,3,2", "--levels", "3"][..],
            "stride",
            "[1,3,2]",
            "[1,1,1]",
            3,
        ),
        (
            "labels",
            &[
                "--method", "mode", "--levels", "4", "--shards", "32,32", "--chunks", "16,16",
            ][..],
            "mode",
            "[2,2]",
            "[1,1]",
            4,
        ),
        (
            "f",
            &["--method", "max", "--factor", "3", "--codec", "gzip"][..],
            "max",
            "[3,3]",
            "[1,1]",
            2,
        ),
        ("f", &[][..], "mean", "[2,2]", "[1,1]", 3),
        (
            "img",
            &[
                "--ome-version",
                "0.4",
                "--scale",
                "1,0.5,0.5",
                "--unit",
                "micrometer",
            ][..],
            "mean",
            "[1,2,2]",
            "[1,0.5,0.5]",
            3,
        ),
        (
            "f",
            &["--method", "min", "--levels", "2"][..],
            "min",
            "[2,2]",
            "[1,1]",
            2,
        ),
    ] {
        let src = format!("{d}/{source}.zarr");
        let dst = format!("{d}/{source}-{method}-{}.zarr", args.len());
        let mut all = vec!["pyramid", &src, &dst, "-q"];
        all.extend_from_slice(args);
        ok(&all);
        let out = Command::new(&python)
            .args(["-c", PYRAMID_CHECK, &dst, &src, method, factors, scale])
            .output()
            .expect("ZARR_TEST_PYTHON runs");
        assert!(
            out.status.success(),
            "{dst}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            levels.to_string(),
            "{dst}: levels"
        );
    }
}

/// zarr-python writes a Zarr v2 hierarchy; the script indexes its files as kerchunk
/// references (metadata inline, each chunk file a whole-file or byte-range reference, one
/// chunk inline) and writes them as a Parquet reference set with kerchunk's
/// `refs_to_dataframe`, 3 references per record file.
const PARQUET_REFERENCES: &str = r#"
import json, os, sys
import numpy as np
import zarr
import kerchunk.df

d = sys.argv[1]
root = zarr.open_group(f"{d}/src.zarr", mode="w", zarr_format=2)
root.attrs["title"] = "parquet references"
a = root.create_array("g/a", shape=(7, 9), chunks=(3, 4), dtype="<i4", fill_value=-1,
                      compressors=None)
a[:] = np.arange(63, dtype="<i4").reshape(7, 9)
a[6, :] = -1  # its bottom chunks are all fill value: never written
b = root.create_array("b", shape=(10,), chunks=(4,), dtype="<f8", fill_value=0.5)
b[:] = np.linspace(0, 1, 10)

refs = {}
src = f"{d}/src.zarr"
for dirpath, _, files in os.walk(src):
    for name in files:
        path = os.path.join(dirpath, name)
        key = os.path.relpath(path, src)
        if name.startswith(".z"):
            refs[key] = open(path).read()
        elif key == "b/0":
            refs[key] = "base64:" + __import__("base64").b64encode(open(path, "rb").read()).decode()
        elif key.startswith("b/"):
            refs[key] = [path]
        else:
            refs[key] = [path, 0, os.path.getsize(path)]
kerchunk.df.refs_to_dataframe(refs, f"{d}/refs.parq", record_size=3)
"#;

/// A Parquet reference set (kerchunk's `refs_to_dataframe`) is a read-only target: the
/// hierarchy, values equal to the Zarr store it references, `copy` out of it; writes are
/// usage errors; a broken record file is an error naming it.
#[test]
fn parquet_reference_sets_are_read_only_targets() {
    let Some(python) = std::env::var_os("ZARR_TEST_PYTHON") else {
        eprintln!("SKIPPED: ZARR_TEST_PYTHON is not set (`cargo xtask ci` sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    run_python(
        &python,
        PARQUET_REFERENCES,
        &[d],
        "writing the reference set",
    );
    let refs = format!("{d}/refs.parq");
    let src = format!("{d}/src.zarr");

    let tree = ok(&["tree", &refs]);
    assert!(
        tree.contains("g") && tree.contains("a") && tree.contains("b"),
        "{tree}"
    );
    for array in ["g/a", "b"] {
        let ours = ok(&["get", &format!("{refs}/{array}")]);
        assert_eq!(ours, ok(&["get", &format!("{src}/{array}")]), "{array}");
        assert_eq!(ours, ok(&["get", &refs, "--path", array]), "{array}");
    }
    let info: serde_json::Value =
        serde_json::from_str(&ok(&["info", &format!("{refs}/g/a"), "--json"])).unwrap();
    assert_eq!(info["format"], 2);
    assert_eq!(info["metadata"]["shape"], serde_json::json!([7, 9]));
    let verified = ok(&["verify", &refs]);
    assert!(verified.contains("0 problems"), "{verified}");
    let out = format!("{d}/out.zarr");
    ok(&["copy", &refs, &out]);
    for array in ["g/a", "b"] {
        assert_eq!(
            ok(&["get", &format!("{out}/{array}")]),
            ok(&["get", &format!("{src}/{array}")]),
            "{array}"
        );
    }

    let err = fails(&["rm", &format!("{refs}/b")], 2);
    assert!(err.contains("can only be read"), "{err}");
    // A record file that is not Parquet: an error naming it.
    std::fs::write(format!("{refs}/b/refs.0.parq"), b"not parquet").unwrap();
    let err = fails(&["get", &format!("{refs}/b")], 1);
    assert!(
        err.contains("b/refs.0.parq") && err.contains("not a Parquet file"),
        "{err}"
    );
}
