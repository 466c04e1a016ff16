//! Live round trips with real peers: zarr-python 3.1.6 and tensorstore 0.1.86, run through
//! `tests/interop/peer.py` with the interpreter named by `ZARR_TEST_PYTHON` (a virtual
//! environment with `xtask/requirements-test.txt` installed; `cargo xtask ci` builds it and
//! sets the variable).
//!
//! 1. [`we_read_what_the_peers_wrote`]: the peers write the matrix (every core data type,
//!    every codec and chains of them, edge and missing chunks, special fill values, both
//!    chunk key encodings, 0-d and zero-length arrays, nested groups with attributes); we open
//!    every node and compare metadata and values bit for bit.
//! 2. [`the_peers_read_what_we_wrote`]: we write the same matrix with values of our own (plus
//!    a few arrays made with the builder's conveniences), and the peers compare every array
//!    with the manifest we give them.
//! 3. [`we_read_zarr_v2_written_by_zarr_python`] and
//!    [`zarr_python_reads_the_zarr_v2_we_write`]: the same for Zarr v2, where zarr-python
//!    also compares our `.zarray` with its own; and
//!    [`struct_arrays_interoperate_with_zarr_python`] for struct (record) arrays in v3 and v2.
//!
//! Without `ZARR_TEST_PYTHON` (a plain `cargo test`) the tests say so and pass without
//! running; with it set, failing to run Python is a test failure.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use num_complex::Complex;
use serde_json::{Map, Value, json};
use zarr_array::{Array, ArrayBuilder, Group, Region};
use zarr_codecs::ArrayBytes;
use zarr_core::{ChunkKeyEncoding, DataType, ExtensionObject, FillValue, GroupMetadata};
use zarr_store::FilesystemStore;
use zarr_vlen::{VlenBinary, VlenStrings};

/// The variable naming the Python interpreter that has the peers installed.
const PYTHON_VAR: &str = "ZARR_TEST_PYTHON";

/// The interpreter, or `None` (with a message) when the variable is unset.
fn python(test: &str) -> Option<PathBuf> {
    match std::env::var_os(PYTHON_VAR) {
        Some(python) => Some(PathBuf::from(python)),
        None => {
            eprintln!(
                "SKIPPED {test}: {PYTHON_VAR} is not set. `cargo xtask ci` sets it to a venv with \
                 zarr-python and tensorstore; to run this test by hand, point it at a Python with \
                 the pins of xtask/requirements-test.txt installed."
            );
            None
        }
    }
}

/// Where a test writes its stores: a fresh temporary directory, or, to look at them
/// afterwards, `$ZARR_TEST_INTEROP_DIR/<name>` (emptied first).
fn work_dir(name: &str) -> (Option<tempfile::TempDir>, PathBuf) {
    match std::env::var_os("ZARR_TEST_INTEROP_DIR") {
        Some(dir) => {
            let path = PathBuf::from(dir).join(name);
            if path.exists() {
                std::fs::remove_dir_all(&path).unwrap();
            }
            std::fs::create_dir_all(&path).unwrap();
            eprintln!("keeping the stores in {}", path.display());
            (None, path)
        }
        None => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().to_owned();
            (Some(dir), path)
        }
    }
}

fn peer_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/peer.py")
}

/// Run `peer.py args...`; its stdout, or a panic with everything it printed.
fn run_peer(python: &Path, args: &[&str]) -> String {
    let output = Command::new(python)
        .arg(peer_script())
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({PYTHON_VAR}): {e}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "peer.py {} failed ({}):\n{stdout}\n{stderr}",
        args.join(" "),
        output.status
    );
    stdout
}

fn node_path(entry: &Value) -> String {
    format!("/{}", entry["path"].as_str().unwrap())
}

fn data_type_of(entry: &Value) -> DataType {
    DataType::from_json(&entry["data_type"], "data_type").unwrap()
}

fn shape_of(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect()
}

/// The regions a case writes, as ranges.
fn writes_of(entry: &Value) -> Vec<Vec<Range<u64>>> {
    entry["writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|region| {
            region
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r[0].as_u64().unwrap()..r[1].as_u64().unwrap())
                .collect()
        })
        .collect()
}

fn dimension_names_of(entry: &Value) -> Option<Vec<Option<String>>> {
    entry["dimension_names"].as_array().map(|names| {
        names
            .iter()
            .map(|n| n.as_str().map(str::to_owned))
            .collect()
    })
}

/// A float's bits from its JSON form in manifests (see [`float_json`]).
fn float_bits_from_json(value: &Value, width: usize) -> Option<u64> {
    let from_f64 = |x: f64| match width {
        2 => u64::from(half::f16::from_f64(x).to_bits()),
        4 => u64::from((x as f32).to_bits()),
        _ => x.to_bits(),
    };
    match value {
        Value::Number(n) => n.as_f64().map(from_f64),
        Value::String(s) => match s.as_str() {
            "NaN" => Some([0x7e00, 0x7fc0_0000, 0x7ff8_0000_0000_0000][width / 4]),
            "Infinity" => Some(from_f64(f64::INFINITY)),
            "-Infinity" => Some(from_f64(f64::NEG_INFINITY)),
            hex => u64::from_str_radix(hex.strip_prefix("0x")?, 16).ok(),
        },
        _ => None,
    }
}

/// One element (native-endian bytes) from its JSON form in manifests.
fn element_from_json(dt: &DataType, value: &Value) -> Option<Vec<u8>> {
    let size = dt.fixed_size()?;
    match dt {
        DataType::Bool => value.as_bool().map(|b| vec![u8::from(b)]),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let bits = 8 * size as u32;
            let v = value.as_i64()?;
            (v == (v << (64 - bits)) >> (64 - bits))
                .then(|| native_uint(v as u64 & (u64::MAX >> (64 - bits)), size))
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            let v = value.as_u64()?;
            (v <= u64::MAX >> (64 - 8 * size)).then(|| native_uint(v, size))
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            float_bits_from_json(value, size).map(|bits| native_uint(bits, size))
        }
        DataType::Complex64 | DataType::Complex128 => {
            let [re, im] = value.as_array()?.as_slice() else {
                return None;
            };
            let mut out = native_uint(float_bits_from_json(re, size / 2)?, size / 2);
            out.extend(native_uint(float_bits_from_json(im, size / 2)?, size / 2));
            Some(out)
        }
        _ => None,
    }
}

/// Every element of `bytes` (native-endian) against the manifest's `values`, bit for bit;
/// the mismatches.
fn compare_values(dt: &DataType, bytes: &[u8], values: &[Value], what: &str) -> Vec<String> {
    let size = dt.fixed_size().unwrap();
    if bytes.len() != values.len() * size {
        return vec![format!(
            "{what}: {} bytes for {} elements of {size} bytes",
            bytes.len(),
            values.len()
        )];
    }
    let mut problems = Vec::new();
    for (i, (element, want)) in bytes.chunks(size).zip(values).enumerate() {
        let expected = element_from_json(dt, want)
            .unwrap_or_else(|| panic!("{what}: the manifest's value {want} is not a {dt}"));
        if element != expected {
            problems.push(format!(
                "{what}: element {i} is {} ({element:02x?}), expected {want}",
                element_json(dt, element)
            ));
            if problems.len() >= 8 {
                problems.push(format!("{what}: (further mismatches not listed)"));
                break;
            }
        }
    }
    problems
}

/// A string or bytes element from its JSON form in manifests: the string's UTF-8 bytes, or
/// the bytes from hex.
fn vlen_element_from_json(dt: &DataType, value: &Value) -> Option<Vec<u8>> {
    let text = value.as_str()?;
    match dt {
        DataType::String => Some(text.as_bytes().to_vec()),
        DataType::Bytes => {
            if !text.len().is_multiple_of(2) {
                return None;
            }
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
                .collect()
        }
        _ => None,
    }
}

/// A string or bytes element's JSON form in manifests (see [`vlen_element_from_json`]).
fn vlen_element_json(dt: &DataType, element: &[u8]) -> Value {
    match dt {
        DataType::String => json!(std::str::from_utf8(element).expect("a string is UTF-8")),
        _ => json!(
            element
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
    }
}

/// The elements of a variable-length read, one `Vec<u8>` each.
fn vlen_elements(bytes: ArrayBytes) -> Option<Vec<Vec<u8>>> {
    match bytes {
        ArrayBytes::Variable(vlen) => Some(VlenBinary::<i64>::try_from(&vlen).ok()?.to_vecs()),
        ArrayBytes::Fixed(_) => None,
    }
}

/// The values of a string or bytes array the peers wrote: the whole array through
/// `read_array_bytes` and through `read_strings` / `read_binary`, and the interior region.
async fn check_peer_vlen_values(
    array: &Array<FilesystemStore>,
    values: &[Value],
    what: &str,
) -> Vec<String> {
    let dt = array.data_type().clone();
    let expected: Vec<Vec<u8>> = values
        .iter()
        .map(|v| {
            vlen_element_from_json(&dt, v)
                .unwrap_or_else(|| panic!("{what}: the manifest's value {v} is not a {dt}"))
        })
        .collect();
    let whole = match array.read_array_bytes(array.full_region()).await {
        Ok(bytes) => match vlen_elements(bytes) {
            Some(elements) => elements,
            None => return vec![format!("{what}: read_array_bytes gave fixed-size data")],
        },
        Err(e) => return vec![format!("{what}: cannot read: {e}")],
    };
    let mut problems = Vec::new();
    if whole.len() != expected.len() {
        problems.push(format!(
            "{what}: {} elements, expected {}",
            whole.len(),
            expected.len()
        ));
        return problems;
    }
    for (i, (got, want)) in whole.iter().zip(&expected).enumerate() {
        if got != want {
            problems.push(format!(
                "{what}: element {i} is {}, expected {}",
                vlen_element_json(&DataType::Bytes, got),
                vlen_element_json(&DataType::Bytes, want)
            ));
            if problems.len() >= 8 {
                problems.push(format!("{what}: (further mismatches not listed)"));
                break;
            }
        }
    }
    let typed = match dt {
        DataType::String => array
            .read_strings::<i32>(array.full_region())
            .await
            .map(|s| s.iter().map(|e| e.as_bytes().to_vec()).collect::<Vec<_>>()),
        _ => array
            .read_binary::<i32>(array.full_region())
            .await
            .map(|b| b.to_vecs()),
    };
    match typed {
        Ok(typed) if typed == whole => {}
        Ok(_) => problems.push(format!(
            "{what}: the typed read differs from read_array_bytes"
        )),
        Err(e) => problems.push(format!("{what}: the typed read fails: {e}")),
    }
    if !array.shape().contains(&0) {
        let ranges: Vec<Range<u64>> = array
            .shape()
            .iter()
            .map(|&n| if n >= 3 { 1..n - 1 } else { 0..n })
            .collect();
        let cut: Vec<Vec<u8>> = c_order_indices(&ranges)
            .iter()
            .map(|index| whole[flat_offset(array.shape(), index)].clone())
            .collect();
        let region = Region::try_new(ranges.clone()).unwrap();
        match array.read_array_bytes(&region).await.map(vlen_elements) {
            Ok(Some(part)) if part == cut => {}
            Ok(_) => problems.push(format!(
                "{what}: the region {ranges:?} differs from the same part of the whole array"
            )),
            Err(e) => problems.push(format!("{what}: cannot read {ranges:?}: {e}")),
        }
    }
    problems
}

/// Read `region` with the typed API for the array's data type, as native-endian bytes.
async fn read_typed_bytes(array: &Array<FilesystemStore>, region: &Region) -> Vec<u8> {
    macro_rules! typed {
        ($t:ty, $bytes:expr) => {{
            let values: Vec<$t> = array.read(region).await.unwrap();
            values.iter().flat_map($bytes).collect()
        }};
    }
    match array.data_type() {
        DataType::Bool => typed!(bool, |v: &bool| [u8::from(*v)]),
        DataType::Int8 => typed!(i8, |v: &i8| v.to_ne_bytes()),
        DataType::Int16 => typed!(i16, |v: &i16| v.to_ne_bytes()),
        DataType::Int32 => typed!(i32, |v: &i32| v.to_ne_bytes()),
        DataType::Int64 => typed!(i64, |v: &i64| v.to_ne_bytes()),
        DataType::UInt8 => typed!(u8, |v: &u8| v.to_ne_bytes()),
        DataType::UInt16 => typed!(u16, |v: &u16| v.to_ne_bytes()),
        DataType::UInt32 => typed!(u32, |v: &u32| v.to_ne_bytes()),
        DataType::UInt64 => typed!(u64, |v: &u64| v.to_ne_bytes()),
        DataType::Float16 => typed!(half::f16, |v: &half::f16| v.to_bits().to_ne_bytes()),
        DataType::Float32 => typed!(f32, |v: &f32| v.to_bits().to_ne_bytes()),
        DataType::Float64 => typed!(f64, |v: &f64| v.to_bits().to_ne_bytes()),
        DataType::Complex64 => typed!(Complex<f32>, |v: &Complex<f32>| {
            let mut b = v.re.to_bits().to_ne_bytes().to_vec();
            b.extend(v.im.to_bits().to_ne_bytes());
            b
        }),
        DataType::Complex128 => typed!(Complex<f64>, |v: &Complex<f64>| {
            let mut b = v.re.to_bits().to_ne_bytes().to_vec();
            b.extend(v.im.to_bits().to_ne_bytes());
            b
        }),
        other => panic!("no typed read for {other}"),
    }
}

/// The region `[1, n-1)` of every dimension (`[0, n)` where `n < 3`), and the same elements
/// cut from the C-order bytes of the whole array.
fn interior(shape: &[u64], whole: &[u8], size: usize) -> (Region, Vec<u8>) {
    let ranges: Vec<Range<u64>> = shape
        .iter()
        .map(|&n| if n >= 3 { 1..n - 1 } else { 0..n })
        .collect();
    let region = Region::try_new(ranges.clone()).unwrap();
    let mut cut = Vec::new();
    for index in c_order_indices(&ranges) {
        let offset = flat_offset(shape, &index) * size;
        cut.extend_from_slice(&whole[offset..offset + size]);
    }
    (region, cut)
}

/// The element indices of a region in C order.
fn c_order_indices(ranges: &[Range<u64>]) -> Vec<Vec<u64>> {
    let mut out = vec![Vec::new()];
    for range in ranges {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                range.clone().map(move |i| {
                    let mut index = prefix.clone();
                    index.push(i);
                    index
                })
            })
            .collect();
    }
    out
}

fn flat_offset(shape: &[u64], index: &[u64]) -> usize {
    let flat = shape
        .iter()
        .zip(index)
        .fold(0u64, |acc, (&n, &i)| acc * n + i);
    usize::try_from(flat).unwrap()
}

/// Open one array the peers wrote and compare it with its manifest entry.
async fn check_peer_array(store: &Arc<FilesystemStore>, entry: &Value) -> Vec<String> {
    let what = format!(
        "{} ({})",
        node_path(entry),
        entry["writer"].as_str().unwrap()
    );
    let array = match Array::open(Arc::clone(store), &node_path(entry)).await {
        Ok(array) => array,
        Err(e) => return vec![format!("{what}: cannot open: {e}")],
    };
    let mut problems = Vec::new();
    let dt = data_type_of(entry);
    if *array.data_type() != dt {
        problems.push(format!(
            "{what}: data type {} is not {dt}",
            array.data_type()
        ));
        return problems;
    }
    if array.shape() != shape_of(&entry["shape"]) {
        problems.push(format!(
            "{what}: shape {:?} is not {}",
            array.shape(),
            entry["shape"]
        ));
        return problems;
    }
    let fill = FillValue::from_json(&entry["metadata"]["fill_value"], &dt).unwrap();
    if array.fill_value() != &fill {
        problems.push(format!(
            "{what}: fill value {:02x?} is not {:02x?} ({})",
            array.fill_value().as_bytes(),
            fill.as_bytes(),
            entry["metadata"]["fill_value"]
        ));
    }
    if Value::Object(array.attributes().clone()) != entry["attributes"] {
        problems.push(format!(
            "{what}: attributes {:?} are not {}",
            array.attributes(),
            entry["attributes"]
        ));
    }
    if array.metadata().dimension_names != dimension_names_of(entry) {
        problems.push(format!(
            "{what}: dimension names {:?} are not {}",
            array.metadata().dimension_names,
            entry["dimension_names"]
        ));
    }
    let values = entry["values"].as_array().unwrap();
    if dt.fixed_size().is_none() {
        problems.extend(check_peer_vlen_values(&array, values, &what).await);
        return problems;
    }
    let whole = match array.read_bytes(array.full_region()).await {
        Ok(bytes) => bytes,
        Err(e) => {
            problems.push(format!("{what}: cannot read: {e}"));
            return problems;
        }
    };
    problems.extend(compare_values(&dt, &whole, values, &what));
    if read_typed_bytes(&array, &array.full_region()).await != whole {
        problems.push(format!("{what}: the typed read differs from the byte read"));
    }
    let size = dt.fixed_size().unwrap();
    if !array.shape().contains(&0) {
        let (region, expected) = interior(array.shape(), &whole, size);
        match array.read_bytes(&region).await {
            Ok(part) if part == expected => {}
            Ok(_) => problems.push(format!(
                "{what}: the region {:?} differs from the same part of the whole array",
                region.ranges()
            )),
            Err(e) => problems.push(format!("{what}: cannot read {:?}: {e}", region.ranges())),
        }
    }
    problems
}

/// `Group::tree` from the root (from zarr-python's consolidated metadata: `peer.py write`
/// adds it, `write-v2` writes `.zmetadata`) and `Group::tree_listed` must each list exactly
/// the nodes of the manifest.
async fn tree_problems(store: &Arc<FilesystemStore>, manifest: &[Value]) -> Vec<String> {
    let root = Group::open(Arc::clone(store), "/").await.unwrap();
    let mut expected: Vec<String> = manifest
        .iter()
        .map(node_path)
        .filter(|p| p != "/")
        .collect();
    expected.sort();
    let mut problems = Vec::new();
    for (how, tree) in [
        ("tree", root.tree().await),
        ("tree_listed", root.tree_listed().await),
    ] {
        let mut tree: Vec<String> = tree
            .unwrap()
            .into_iter()
            .map(|(path, _)| path.as_str().to_owned())
            .collect();
        tree.sort();
        if tree != expected {
            problems.push(format!(
                "{how} lists {tree:?}, the writers wrote {expected:?}"
            ));
        }
    }
    problems
}

/// Every node the manifest lists, opened from zarr-python's consolidated metadata of the
/// root, must have the attributes (groups) or read the values (arrays) it has when opened
/// from its own metadata documents.
async fn consolidated_problems(store: &Arc<FilesystemStore>, manifest: &[Value]) -> Vec<String> {
    let root = match Group::open_consolidated(Arc::clone(store), "/").await {
        Ok(root) => root,
        Err(e) => {
            return vec![format!(
                "/: cannot open zarr-python's consolidated metadata: {e}"
            )];
        }
    };
    let mut problems = Vec::new();
    for entry in manifest.iter().filter(|e| e["path"] != "") {
        let path = node_path(entry);
        let name = path.trim_start_matches('/');
        if entry["node_type"] == "group" {
            match root.open_group(name).await {
                Ok(g) if Value::Object(g.attributes().clone()) == entry["attributes"] => {}
                Ok(g) => problems.push(format!(
                    "{path}: consolidated attributes {:?}",
                    g.attributes()
                )),
                Err(e) => problems.push(format!("{path}: from consolidated metadata: {e}")),
            }
            continue;
        }
        let recorded = match root.open_array(name).await {
            Ok(array) => array,
            Err(e) => {
                problems.push(format!("{path}: from consolidated metadata: {e}"));
                continue;
            }
        };
        let own = Array::open(Arc::clone(store), &path).await.unwrap();
        let (m, o) = (recorded.metadata(), own.metadata());
        if (&m.shape, &m.data_type, &m.chunk_grid, &m.attributes)
            != (&o.shape, &o.data_type, &o.chunk_grid, &o.attributes)
        {
            problems.push(format!("{path}: consolidated metadata {m:?} is not {o:?}"));
            continue;
        }
        // zarr-python 3.1.6's consolidate_metadata writes every NaN fill value as "NaN",
        // dropping the payload and sign its own zarr.json holds ("0x7fc00001"): its record
        // then describes another fill value, which missing chunks read as.
        let fill_json = |a: &zarr_core::ArrayMetadata| a.fill_value.to_json(&a.data_type).ok();
        if let (Some(Value::String(r)), Some(Value::String(own))) = (fill_json(m), fill_json(o))
            && r == "NaN"
            && own.starts_with("0x")
        {
            eprintln!("{path}: zarr-python's consolidated metadata has fill value NaN for {own}");
            continue;
        }
        let read = |a: &Array<FilesystemStore>| {
            let a = a.clone();
            async move { a.read_array_bytes(a.full_region()).await }
        };
        match (read(&recorded).await, read(&own).await) {
            (Ok(x), Ok(y)) if x == y => {}
            (Ok(_), Ok(_)) => problems.push(format!(
                "{path}: reads other values from consolidated metadata"
            )),
            // The arrays our reader refuses are checked (and reported) by check_peer_array.
            (Err(e), Ok(_)) => problems.push(format!("{path}: from consolidated metadata: {e}")),
            (_, Err(_)) => {}
        }
    }
    problems
}

/// (1) The peers write the matrix; we read every node exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn we_read_what_the_peers_wrote() {
    let Some(python) = python("we_read_what_the_peers_wrote") else {
        return;
    };
    let (_guard, dir) = work_dir("peers");
    let root = dir.join("store");
    eprint!("{}", run_peer(&python, &["write", root.to_str().unwrap()]));
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("manifest.json")).unwrap())
            .unwrap();
    let store = Arc::new(FilesystemStore::new(&root).unwrap());

    let mut problems = Vec::new();
    let mut arrays = 0;
    let mut groups = 0;
    for entry in &manifest {
        if entry["node_type"] == "group" {
            match Group::open(Arc::clone(&store), &node_path(entry)).await {
                Ok(group) if Value::Object(group.attributes().clone()) == entry["attributes"] => {}
                Ok(group) => problems.push(format!(
                    "{} (group): attributes {:?} are not {}",
                    node_path(entry),
                    group.attributes(),
                    entry["attributes"]
                )),
                Err(e) => problems.push(format!("{} (group): cannot open: {e}", node_path(entry))),
            }
            groups += 1;
        } else {
            problems.extend(check_peer_array(&store, entry).await);
            arrays += 1;
        }
    }

    // The hierarchy: the tree from the root lists exactly the nodes the peers wrote.
    problems.extend(tree_problems(&store, &manifest).await);
    problems.extend(consolidated_problems(&store, &manifest).await);

    assert!(
        problems.is_empty(),
        "{} problem(s) reading what the peers wrote:\n  - {}",
        problems.len(),
        problems.join("\n  - ")
    );
    assert!(
        arrays >= 100 && groups >= 8,
        "{arrays} arrays, {groups} groups"
    );
    eprintln!("read {arrays} arrays and {groups} groups written by the peers exactly");
}

/// Bytes from the manifest's hex.
fn from_hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// One array of `peer.py write-v2`: opened as v2, its data type, shape, attributes, fill
/// value and every value as zarr-python wrote them, and a region read consistent with them.
async fn check_v2_array(store: &Arc<FilesystemStore>, entry: &Value) -> Vec<String> {
    let what = format!(
        "{} (Zarr v2, {})",
        node_path(entry),
        entry["zarray"]["dtype"]
    );
    let array = match Array::open(Arc::clone(store), &node_path(entry)).await {
        Ok(array) => array,
        Err(e) => return vec![format!("{what}: cannot open: {e}")],
    };
    let mut problems = Vec::new();
    if array.zarr_format() != zarr_core::v2::ZarrFormat::V2 {
        problems.push(format!("{what}: not opened as v2"));
    }
    let dt = data_type_of(entry);
    if *array.data_type() != dt || array.shape() != shape_of(&entry["shape"]) {
        problems.push(format!(
            "{what}: {} {:?}, expected {dt} {}",
            array.data_type(),
            array.shape(),
            entry["shape"]
        ));
        return problems;
    }
    if Value::Object(array.attributes().clone()) != entry["attributes"] {
        problems.push(format!("{what}: attributes {:?}", array.attributes()));
    }
    let Some(hex) = entry["hex"].as_str() else {
        let values = entry["values"].as_array().unwrap();
        problems.extend(check_peer_vlen_values(&array, values, &what).await);
        return problems;
    };
    let fill = from_hex(entry["fill_hex"].as_str().unwrap());
    if array.fill_value().as_bytes() != fill {
        problems.push(format!(
            "{what}: fill value {:02x?}, expected {fill:02x?}",
            array.fill_value().as_bytes()
        ));
    }
    let expected = from_hex(hex);
    let whole = match array.read_bytes(array.full_region()).await {
        Ok(whole) => whole,
        Err(e) => return vec![format!("{what}: cannot read: {e}")],
    };
    if whole != expected {
        let size = dt.fixed_size().unwrap();
        let first = whole
            .chunks(size)
            .zip(expected.chunks(size))
            .position(|(a, b)| a != b);
        problems.push(format!(
            "{what}: values differ (first at element {first:?}; {} bytes read, {} expected)",
            whole.len(),
            expected.len()
        ));
        return problems;
    }
    if !array.shape().contains(&0) {
        let (region, part) = interior(array.shape(), &whole, dt.fixed_size().unwrap());
        match array.read_bytes(&region).await {
            Ok(got) if got == part => {}
            Ok(_) => problems.push(format!("{what}: the interior region differs")),
            Err(e) => problems.push(format!("{what}: cannot read the interior: {e}")),
        }
    }
    problems
}

/// (3) zarr-python writes Zarr v2 (`zarr_format=2`): every numpy type it stores, both byte
/// orders, order F, every blosc/zstd/gzip/zlib/bz2/lzma variant and numcodecs filter, both key
/// separators, missing and edge chunks, 0-d and zero-length arrays, strings and bytes, nested
/// groups; we read every node exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn we_read_zarr_v2_written_by_zarr_python() {
    let Some(python) = python("we_read_zarr_v2_written_by_zarr_python") else {
        return;
    };
    let (_guard, dir) = work_dir("v2");
    let root = dir.join("store");
    eprint!(
        "{}",
        run_peer(&python, &["write-v2", root.to_str().unwrap()])
    );
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("manifest.json")).unwrap())
            .unwrap();
    let store = Arc::new(FilesystemStore::new(&root).unwrap());
    let mut problems = Vec::new();
    let (mut arrays, mut groups) = (0, 0);
    for entry in &manifest {
        if entry["node_type"] == "group" {
            match Group::open(Arc::clone(&store), &node_path(entry)).await {
                Ok(g)
                    if g.zarr_format() == zarr_core::v2::ZarrFormat::V2
                        && Value::Object(g.attributes().clone()) == entry["attributes"] => {}
                Ok(g) => problems.push(format!(
                    "{} (v2 group): format {}, attributes {:?}",
                    node_path(entry),
                    g.zarr_format(),
                    g.attributes()
                )),
                Err(e) => problems.push(format!("{} (v2 group): {e}", node_path(entry))),
            }
            groups += 1;
        } else {
            problems.extend(check_v2_array(&store, entry).await);
            arrays += 1;
        }
    }
    problems.extend(tree_problems(&store, &manifest).await);
    problems.extend(consolidated_problems(&store, &manifest).await);
    assert!(
        problems.is_empty(),
        "{} problem(s) reading Zarr v2 written by zarr-python:\n  - {}",
        problems.len(),
        problems.join("\n  - ")
    );
    assert!(
        arrays >= 60 && groups >= 10,
        "{arrays} arrays, {groups} groups"
    );
    eprintln!("read {arrays} Zarr v2 arrays and {groups} groups written by zarr-python exactly");
}

/// (4) We write Zarr v2: every array of `peer.py write-v2` again, created by our builder from
/// the v3 description we read (so every data type, byte order, order F, filter, compressor,
/// separator and fill value above goes through our `.zarray` writer) and written with the
/// values we read; every group too. zarr-python then opens ours as v2 and compares each
/// `.zarray` with its own (dtype, order, fill value, filters and compressor as numcodecs
/// codecs, separator), the attributes, and the values, exactly; for the lossy filters it
/// prints the values it decodes, which must equal ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zarr_python_reads_the_zarr_v2_we_write() {
    let Some(python) = python("zarr_python_reads_the_zarr_v2_we_write") else {
        return;
    };
    let (_guard, dir) = work_dir("v2-ours");
    let theirs_root = dir.join("theirs");
    run_peer(&python, &["write-v2", theirs_root.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(theirs_root.join("manifest.json")).unwrap())
            .unwrap();
    let theirs = Arc::new(FilesystemStore::new(&theirs_root).unwrap());
    let ours_root = dir.join("ours");
    std::fs::create_dir_all(&ours_root).unwrap();
    let ours = Arc::new(FilesystemStore::new(&ours_root).unwrap());
    let mut arrays = 0;
    for entry in &manifest {
        let path = node_path(entry);
        if entry["node_type"] == "group" {
            let attributes = entry["attributes"].as_object().unwrap().clone();
            Group::create_with_format(
                Arc::clone(&ours),
                &path,
                GroupMetadata::new().with_attributes(attributes),
                zarr_core::v2::ZarrFormat::V2,
            )
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
            continue;
        }
        let source = Array::open(Arc::clone(&theirs), &path).await.unwrap();
        let m = source.metadata();
        let chunk_shape = match &m.chunk_grid {
            zarr_core::ChunkGrid::Regular(grid) => grid.chunk_shape().to_vec(),
            other => panic!("{path}: {other:?}"),
        };
        let array = ArrayBuilder::new(m.shape.clone(), m.data_type.clone(), chunk_shape)
            .fill_value(m.fill_value.clone())
            .codecs(m.codecs.clone())
            .chunk_key_encoding(m.chunk_key_encoding.clone())
            .attributes(m.attributes.clone())
            .zarr_format(zarr_core::v2::ZarrFormat::V2)
            .create(Arc::clone(&ours), &path)
            .await
            .unwrap_or_else(|e| panic!("{path}: create as v2: {e}"));
        assert_eq!(array.metadata(), m, "{path}: the builder's v2 description");
        let values = source.read_array_bytes(source.full_region()).await.unwrap();
        array
            .write_array_bytes(array.full_region(), values)
            .await
            .unwrap_or_else(|e| panic!("{path}: write: {e}"));
        arrays += 1;
    }
    // `.zmetadata` for the copy, which compare-v2 checks against zarr-python's own.
    let mut ours_root_group = Group::open(Arc::clone(&ours), "/").await.unwrap();
    let recorded = ours_root_group.consolidate_metadata().await.unwrap();
    assert_eq!(
        recorded,
        manifest.iter().filter(|e| e["path"] != "").count()
    );
    let report: Value = serde_json::from_str(&run_peer(
        &python,
        &[
            "compare-v2",
            theirs_root.to_str().unwrap(),
            ours_root.to_str().unwrap(),
        ],
    ))
    .unwrap();
    let mut problems: Vec<String> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    // What zarr-python decodes from our lossy arrays is what we decode.
    let decoded = report["lossy_hex"].as_object().unwrap();
    for (path, hex) in decoded {
        let array = Array::open(Arc::clone(&ours), &format!("/{path}"))
            .await
            .unwrap();
        let ours = array.read_bytes(array.full_region()).await.unwrap();
        if Some(ours.as_slice()) != hex.as_str().map(from_hex).as_deref() {
            problems.push(format!(
                "{path}: zarr-python decodes other values than we do"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) with the Zarr v2 we wrote:\n  - {}",
        problems.len(),
        problems.join("\n  - ")
    );
    assert!(
        arrays >= 60 && decoded.len() >= 8,
        "{arrays} arrays, {} lossy",
        decoded.len()
    );
    eprintln!(
        "zarr-python read the {arrays} Zarr v2 arrays we wrote, their metadata and values equal to its own"
    );
}

// ---------------------------------------------------------------------------------------
// (2) We write; the peers read.
// ---------------------------------------------------------------------------------------

/// splitmix64: the values we write, reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn new(seed: &str) -> Self {
        // FNV-1a of the array path.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in seed.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Self(h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One float of `width` bytes as its bits: every fifth a random bit pattern (NaN payloads,
/// signalling NaNs, subnormals included), every fifth a special value, otherwise a number
/// with a short decimal form.
fn float_element(rng: &mut Rng, i: usize, width: usize) -> u64 {
    let specials: [u64; 8] = match width {
        2 => [
            0x7e00, 0x7e01, 0xfe00, 0x7c00, 0xfc00, 0x8000, 0x0001, 0x7bff,
        ],
        4 => [
            0x7fc0_0000,
            0x7fc0_0001,
            0xffc0_0000,
            0x7f80_0000,
            0xff80_0000,
            0x8000_0000,
            0x0000_0001,
            0x7f7f_ffff,
        ],
        _ => [
            0x7ff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
            0xfff8_0000_0000_0000,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            0x8000_0000_0000_0000,
            0x0000_0000_0000_0001,
            0x7fef_ffff_ffff_ffff,
        ],
    };
    let r = rng.next();
    match i % 5 {
        0 => r & (u64::MAX >> (64 - 8 * width)),
        1 => specials[(r % 8) as usize],
        _ => {
            let x = ((r >> 11) % 200_001) as f64 / 8.0 - 12_500.0;
            match width {
                2 => u64::from(half::f16::from_f64(x).to_bits()),
                4 => u64::from((x as f32).to_bits()),
                _ => x.to_bits(),
            }
        }
    }
}

/// How the values of a case look: `Random` (with special values), `Smooth` (runs of equal
/// values on a slow saw-tooth, so compressors really compress and c-blosc does not fall back
/// to storing chunks uncompressed), or `Integral` (whole numbers from -25 to 25, or 0 to 50
/// if `unsigned`, so that casts to any numeric type are exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pattern {
    Random,
    Smooth,
    Integral { unsigned: bool },
}

impl Pattern {
    fn of(case: &Value) -> Self {
        match case["values_pattern"].as_str() {
            Some("random") => Self::Random,
            Some("smooth") => Self::Smooth,
            Some("integral") => Self::Integral { unsigned: false },
            Some("integral_unsigned") => Self::Integral { unsigned: true },
            other => panic!("unknown values pattern {other:?}"),
        }
    }
}

/// A whole number of `dt` for position `i`.
fn integral_element(dt: &DataType, i: usize, unsigned: bool) -> Vec<u8> {
    let value = (i / 3 % 51) as i64 - if unsigned { 0 } else { 25 };
    let size = dt.fixed_size().unwrap();
    match dt {
        DataType::Float16 => half::f16::from_f64(value as f64).to_ne_bytes().to_vec(),
        DataType::Float32 => (value as f32).to_ne_bytes().to_vec(),
        DataType::Float64 => (value as f64).to_ne_bytes().to_vec(),
        _ => native_uint(value as u64, size),
    }
}

/// A compressible element of `dt` for position `i`.
fn smooth_element(dt: &DataType, i: usize) -> Vec<u8> {
    let step = (i / 5 % 53) as u64;
    let size = dt.fixed_size().unwrap();
    let float = |width: usize, x: f64| match width {
        2 => u64::from(half::f16::from_f64(x).to_bits()),
        4 => u64::from((x as f32).to_bits()),
        _ => x.to_bits(),
    };
    match dt {
        DataType::Bool => vec![u8::from(step.is_multiple_of(3))],
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            native_uint((step as i64 * 2 - 50) as u64, size)
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            native_uint(step * 3, size)
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            native_uint(float(size, step as f64 * 0.5 - 10.0), size)
        }
        DataType::Complex64 | DataType::Complex128 => {
            let mut out = native_uint(float(size / 2, step as f64 * 0.5), size / 2);
            out.extend(native_uint(float(size / 2, -(step as f64)), size / 2));
            out
        }
        other => panic!("no values for {other}"),
    }
}

/// One element of `dt` (native-endian bytes) for position `i`.
fn element(dt: &DataType, pattern: Pattern, rng: &mut Rng, i: usize) -> Vec<u8> {
    match pattern {
        Pattern::Smooth => return smooth_element(dt, i),
        Pattern::Integral { unsigned } => return integral_element(dt, i, unsigned),
        Pattern::Random => {}
    }
    let size = dt.fixed_size().unwrap();
    match dt {
        DataType::Bool => vec![u8::from(rng.next() & 1 == 1)],
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let bits = 8 * size as u32;
            let min = i64::MIN >> (64 - bits);
            let value = match i % 7 {
                0 => min,
                1 => !min,
                2 => 0,
                3 => -1,
                _ => (rng.next() as i64) >> (64 - bits),
            };
            native_uint(value as u64 & (u64::MAX >> (64 - bits)), size)
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            let max = u64::MAX >> (64 - 8 * size);
            let value = match i % 7 {
                0 => 0,
                1 => max,
                2 => 1,
                _ => rng.next() & max,
            };
            native_uint(value, size)
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            native_uint(float_element(rng, i, size), size)
        }
        DataType::Complex64 | DataType::Complex128 => {
            let half_size = size / 2;
            let mut out = native_uint(float_element(rng, i, half_size), half_size);
            out.extend(native_uint(float_element(rng, i + 2, half_size), half_size));
            out
        }
        other => panic!("no values for {other}"),
    }
}

/// The low `size` bytes of `value` as a native-endian unsigned integer of that size.
fn native_uint(value: u64, size: usize) -> Vec<u8> {
    match size {
        1 => vec![value as u8],
        2 => (value as u16).to_ne_bytes().to_vec(),
        4 => (value as u32).to_ne_bytes().to_vec(),
        8 => value.to_ne_bytes().to_vec(),
        _ => panic!("no integer of {size} bytes"),
    }
}

fn uint_of(bytes: &[u8]) -> u64 {
    match bytes.len() {
        1 => u64::from(bytes[0]),
        2 => u64::from(u16::from_ne_bytes(bytes.try_into().unwrap())),
        4 => u64::from(u32::from_ne_bytes(bytes.try_into().unwrap())),
        8 => u64::from_ne_bytes(bytes.try_into().unwrap()),
        n => panic!("no integer of {n} bytes"),
    }
}

/// A float's JSON form in manifests: a number, "Infinity", "-Infinity", "NaN" (the canonical
/// NaN only) or "0x..." (its bits, for any other NaN).
fn float_json(bytes: &[u8]) -> Value {
    let bits = uint_of(bytes);
    let (value, canonical_nan) = match bytes.len() {
        2 => (half::f16::from_bits(bits as u16).to_f64(), 0x7e00),
        4 => (f64::from(f32::from_bits(bits as u32)), 0x7fc0_0000),
        _ => (f64::from_bits(bits), 0x7ff8_0000_0000_0000),
    };
    if value.is_nan() {
        if bits == canonical_nan {
            json!("NaN")
        } else {
            json!(format!("0x{bits:0width$x}", width = 2 * bytes.len()))
        }
    } else if value.is_infinite() {
        json!(if value > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(value)
    }
}

/// One element's JSON form in manifests.
fn element_json(dt: &DataType, bytes: &[u8]) -> Value {
    match dt {
        DataType::Bool => json!(bytes[0] != 0),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let bits = 8 * bytes.len() as u32;
            json!(((uint_of(bytes) << (64 - bits)) as i64) >> (64 - bits))
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            json!(uint_of(bytes))
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => float_json(bytes),
        DataType::Complex64 | DataType::Complex128 => {
            let (re, im) = bytes.split_at(bytes.len() / 2);
            json!([float_json(re), float_json(im)])
        }
        other => panic!("no JSON form for {other}"),
    }
}

/// What an array we wrote holds, in C order.
enum Expected {
    /// Native-endian elements of a fixed-size data type, back to back.
    Fixed(Vec<u8>),
    /// The elements of a string or bytes array.
    Variable(Vec<Vec<u8>>),
}

/// Where an array ends up: its entry for `peer.py verify`.
struct Written {
    path: String,
    data_type: DataType,
    shape: Vec<u64>,
    fill_value: Value,
    expected: Expected,
    attributes: Map<String, Value>,
    dimension_names: Option<Vec<Option<String>>>,
    peer_bugs: Value,
}

impl Written {
    fn manifest_entry(&self) -> Value {
        let values: Vec<Value> = match &self.expected {
            Expected::Fixed(bytes) => bytes
                .chunks(self.data_type.fixed_size().unwrap())
                .map(|e| element_json(&self.data_type, e))
                .collect(),
            Expected::Variable(elements) => elements
                .iter()
                .map(|e| vlen_element_json(&self.data_type, e))
                .collect(),
        };
        json!({
            "node_type": "array",
            "path": self.path.trim_start_matches('/'),
            "data_type": self.data_type.to_json(),
            "shape": self.shape,
            "fill_value": self.fill_value,
            "values": values,
            "attributes": self.attributes,
            "dimension_names": self.dimension_names,
            "peers": ["zarr-python", "tensorstore"],
            "peer_bugs": self.peer_bugs,
        })
    }
}

/// Create `builder`'s array at `path`, write `writes` with values of our own, and return what
/// the peers should read.
async fn write_case(
    store: &Arc<FilesystemStore>,
    path: &str,
    builder: ArrayBuilder,
    writes: &[Vec<Range<u64>>],
    pattern: Pattern,
    peer_bugs: Value,
) -> Written {
    let array = builder
        .create(Arc::clone(store), path)
        .await
        .unwrap_or_else(|e| panic!("{path}: create: {e}"));
    let dt = array.data_type().clone();
    let Some(size) = dt.fixed_size() else {
        return write_vlen_case(&array, writes, peer_bugs).await;
    };
    let shape = array.shape().to_vec();
    let count: usize = shape.iter().map(|&n| usize::try_from(n).unwrap()).product();
    let mut expected = array.fill_value().as_bytes().repeat(count);
    let mut rng = Rng::new(path);
    for ranges in writes {
        let indices = c_order_indices(ranges);
        let mut values = Vec::with_capacity(indices.len() * size);
        for (i, index) in indices.iter().enumerate() {
            let e = element(&dt, pattern, &mut rng, i);
            let offset = flat_offset(&shape, index) * size;
            expected[offset..offset + size].copy_from_slice(&e);
            values.extend(e);
        }
        array
            .write_bytes(ranges.clone(), &values)
            .await
            .unwrap_or_else(|e| panic!("{path}: write {ranges:?}: {e}"));
    }
    // Our own reading must agree before we ask the peers.
    let back = array.read_bytes(array.full_region()).await.unwrap();
    assert!(back == expected, "{path}: reads back differently");
    Written {
        path: path.to_owned(),
        data_type: dt.clone(),
        shape,
        fill_value: array.fill_value().to_json(&dt).unwrap(),
        expected: Expected::Fixed(expected),
        attributes: array.attributes().clone(),
        dimension_names: array.metadata().dimension_names.clone(),
        peer_bugs,
    }
}

/// A string (`i % 4 == 0`: one with its index, so few chunks repeat) or a bytes value for
/// position `i`: empty ones, multi-byte UTF-8, emoji, NUL, long ones.
fn vlen_element(dt: &DataType, rng: &mut Rng, i: usize) -> Vec<u8> {
    const POOL: [&str; 10] = [
        "",
        "b",
        "rust 🦀",
        "ünïcødé",
        "中文字符",
        "\u{1f600}\u{1f3f3}\u{fe0f}\u{200d}\u{1f308}",
        "a\u{0}b",
        "line\nbreak",
        "\u{10ffff}",
        "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy",
    ];
    let r = rng.next();
    match dt {
        DataType::String if i.is_multiple_of(4) => {
            format!("{i} {}", POOL[(r % 10) as usize]).into_bytes()
        }
        DataType::String => POOL[(r % 10) as usize].as_bytes().to_vec(),
        _ => match r % 5 {
            0 => Vec::new(),
            1 => vec![0],
            2 => vec![0xff, 0xfe, 0],
            _ => (0..(r >> 8) % 200).map(|_| rng.next() as u8).collect(),
        },
    }
}

/// [`write_case`] for a string or bytes array: strings through `write_strings` (`i32`
/// offsets), bytes through `write_binary` (`i64` offsets).
async fn write_vlen_case(
    array: &Array<FilesystemStore>,
    writes: &[Vec<Range<u64>>],
    mut peer_bugs: Value,
) -> Written {
    let path = array.path().as_str().to_owned();
    let dt = array.data_type().clone();
    let shape = array.shape().to_vec();
    let count: usize = shape.iter().map(|&n| usize::try_from(n).unwrap()).product();
    let mut expected = vec![array.fill_value().as_bytes().to_vec(); count];
    let mut rng = Rng::new(&path);
    for ranges in writes {
        let indices = c_order_indices(ranges);
        let mut values = Vec::with_capacity(indices.len());
        for (i, index) in indices.iter().enumerate() {
            let e = vlen_element(&dt, &mut rng, i);
            expected[flat_offset(&shape, index)].clone_from(&e);
            values.push(e);
        }
        let written = match dt {
            DataType::String => {
                let strings: Vec<String> = values
                    .into_iter()
                    .map(|v| String::from_utf8(v).unwrap())
                    .collect();
                let strings = VlenStrings::<i32>::try_from(strings).unwrap();
                array.write_strings(ranges.clone(), &strings).await
            }
            _ => {
                let binary = VlenBinary::<i64>::try_from(values).unwrap();
                array.write_binary(ranges.clone(), &binary).await
            }
        };
        written.unwrap_or_else(|e| panic!("{path}: write {ranges:?}: {e}"));
    }
    let back = vlen_elements(array.read_array_bytes(array.full_region()).await.unwrap());
    assert!(
        back.as_ref() == Some(&expected),
        "{path}: reads back differently"
    );
    peer_bugs.as_object_mut().unwrap().insert(
        "tensorstore".into(),
        json!("tensorstore 0.1.86 has no string or bytes data type in zarr3"),
    );
    Written {
        path,
        data_type: dt.clone(),
        shape,
        fill_value: array.fill_value().to_json(&dt).unwrap(),
        expected: Expected::Variable(expected),
        attributes: array.attributes().clone(),
        dimension_names: array.metadata().dimension_names.clone(),
        peer_bugs,
    }
}

/// A matrix case as an `ArrayBuilder`: the peers' codecs, fill value, key encoding, names and
/// attributes (the builder's default codecs where the case leaves them to the writer).
fn builder_for(case: &Value) -> ArrayBuilder {
    let dt = data_type_of(case);
    let mut builder =
        ArrayBuilder::new(shape_of(&case["shape"]), dt, shape_of(&case["chunk_shape"]))
            .fill_value_json(case["fill_value"].clone())
            .unwrap()
            .chunk_key_encoding(
                ChunkKeyEncoding::from_json(&case["chunk_key_encoding"], "chunk_key_encoding")
                    .unwrap(),
            )
            .attributes(case["attributes"].as_object().unwrap().clone());
    if let Some(codecs) = case["codecs"].as_array() {
        builder = builder.codecs(
            codecs
                .iter()
                .map(|c| ExtensionObject::from_json(c, "codecs").unwrap())
                .collect(),
        );
    }
    if let Some(names) = dimension_names_of(case) {
        builder = builder.dimension_names_opt(names);
    }
    builder
}

/// (2) We write the matrix (and a few arrays made with the builder's conveniences); the
/// peers read every array and compare it with our manifest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peers_read_what_we_wrote() {
    let Some(python) = python("the_peers_read_what_we_wrote") else {
        return;
    };
    let matrix: Vec<Value> = serde_json::from_str(&run_peer(&python, &["matrix"])).unwrap();
    let (_guard, dir) = work_dir("ours");
    let root = dir.join("store");
    std::fs::create_dir_all(&root).unwrap();
    let store = Arc::new(FilesystemStore::new(&root).unwrap());

    let mut manifest = Vec::new();
    for case in &matrix {
        let path = node_path(case);
        if case["node_type"] == "group" {
            let attributes = case["attributes"].as_object().unwrap().clone();
            Group::create_with(
                Arc::clone(&store),
                &path,
                GroupMetadata::new().with_attributes(attributes),
            )
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
            manifest.push(json!({
                "node_type": "group",
                "path": case["path"],
                "attributes": case["attributes"],
            }));
        } else {
            let written = write_case(
                &store,
                &path,
                builder_for(case),
                &writes_of(case),
                Pattern::of(case),
                case["peer_bugs"].clone(),
            )
            .await;
            manifest.push(written.manifest_entry());
        }
    }

    // The builder's own codec conveniences, so the metadata it writes by itself is checked
    // too.
    let conveniences: Vec<(&str, ArrayBuilder)> = vec![
        (
            "/builder/defaults",
            ArrayBuilder::new(vec![20], DataType::Float64, vec![8]),
        ),
        (
            "/builder/zstd_crc32c",
            ArrayBuilder::new(vec![30, 4], DataType::Int32, vec![8, 3])
                .zstd(3)
                .crc32c(),
        ),
        (
            "/builder/transpose_big_endian_gzip",
            ArrayBuilder::new(vec![6, 5], DataType::UInt16, vec![4, 2])
                .transpose(vec![1, 0])
                .big_endian()
                .gzip(6),
        ),
        (
            "/builder/blosc_float32",
            ArrayBuilder::new(vec![100], DataType::Float32, vec![32]).blosc("lz4", 5),
        ),
        (
            "/builder/blosc_uint8",
            ArrayBuilder::new(vec![100], DataType::UInt8, vec![32]).blosc("zstd", 3),
        ),
        (
            "/builder/negative_zstd_level",
            ArrayBuilder::new(vec![50], DataType::Complex64, vec![16]).zstd(-3),
        ),
        (
            "/builder/names_and_attributes",
            ArrayBuilder::new(vec![3, 4], DataType::Int8, vec![2, 2])
                .dimension_names(["y", "x"])
                .attribute("units", "K")
                .attribute("valid", json!({"min": -1, "max": [1.5, null]})),
        ),
        (
            "/builder/sharded_zstd",
            ArrayBuilder::new(vec![10, 7], DataType::Int32, vec![4, 6])
                .fill_value_json(json!(-1))
                .unwrap()
                .zstd(1)
                .sharding(vec![2, 3]),
        ),
        (
            "/builder/sharded_crc32c_float64",
            ArrayBuilder::new(vec![9, 5], DataType::Float64, vec![6, 4])
                .crc32c()
                .sharding(vec![3, 2]),
        ),
        (
            "/builder/sharded_1d_gzip",
            ArrayBuilder::new(vec![100], DataType::UInt16, vec![32])
                .gzip(1)
                .sharding(vec![8]),
        ),
        (
            "/builder/strings",
            ArrayBuilder::new(vec![13], DataType::String, vec![3])
                .fill_value_json(json!("fïll ✓"))
                .unwrap(),
        ),
        (
            "/builder/strings_2d_zstd",
            ArrayBuilder::new(vec![5, 7], DataType::String, vec![2, 3]).zstd(3),
        ),
        (
            "/builder/strings_sharded",
            ArrayBuilder::new(vec![10, 7], DataType::String, vec![4, 6])
                .fill_value_json(json!("🦀"))
                .unwrap()
                .zstd(1)
                .sharding(vec![2, 3]),
        ),
        (
            "/builder/bytes",
            ArrayBuilder::new(vec![13], DataType::Bytes, vec![3])
                .fill_value_json(json!("AP96"))
                .unwrap(),
        ),
        (
            "/builder/bytes_sharded_gzip",
            ArrayBuilder::new(vec![10, 7], DataType::Bytes, vec![4, 6])
                .gzip(5)
                .sharding(vec![2, 3]),
        ),
    ];
    // Their group, `/builder`, is not created by the test: the builder writes the missing
    // ancestor group itself, and the peers must find it.
    manifest.push(json!({"node_type": "group", "path": "builder", "attributes": {}}));
    for (path, builder) in conveniences {
        let shape = builder.build_metadata().unwrap().shape;
        // Sharded and variable-length arrays leave shards, inner chunks and chunks out, and
        // end in edge chunks written in part; the others are written whole.
        let writes: Vec<Vec<Range<u64>>> = match shape.as_slice() {
            _ if path.starts_with("/builder/sharded_1d") => vec![vec![0..40], vec![97..100]],
            [13] => vec![vec![0..5], vec![11..12]],
            [5, 7] => vec![vec![0..3, 0..5], vec![4..5, 6..7]],
            [10, 7] => vec![vec![0..5, 0..4], vec![9..10, 6..7]],
            [9, 5] => vec![vec![0..7, 0..3]],
            _ => vec![shape.iter().map(|&n| 0..n).collect()],
        };
        let written = write_case(&store, path, builder, &writes, Pattern::Smooth, json!({})).await;
        manifest.push(written.manifest_entry());
    }

    // A subtree that is recorded, then removed: first `g` through its parent's handle (the
    // root's record must lose it too), then the rest from the root.
    for path in ["/removed/a", "/removed/g/b"] {
        ArrayBuilder::new(vec![4], DataType::UInt8, vec![2])
            .create(Arc::clone(&store), path)
            .await
            .unwrap()
            .write(0..4, &[1u8, 2, 3, 4])
            .await
            .unwrap();
    }

    // Consolidated metadata for the whole matrix: zarr-python opens the hierarchy from it
    // and compares each node with its own documents (and finds none of the removed ones).
    let mut root_group = Group::open(Arc::clone(&store), "/").await.unwrap();
    let recorded = root_group.consolidate_metadata().await.unwrap();
    assert_eq!(
        recorded,
        manifest.iter().filter(|e| e["path"] != "").count() + 4
    );
    let mut removed = Group::open(Arc::clone(&store), "/removed").await.unwrap();
    removed.remove("g").await.unwrap();
    root_group.remove("removed").await.unwrap();
    assert!(!root.join("removed").exists());

    let manifest_path = dir.join("manifest.json");
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&Value::Array(manifest)).unwrap(),
    )
    .unwrap();
    let report = run_peer(
        &python,
        &[
            "verify",
            root.to_str().unwrap(),
            manifest_path.to_str().unwrap(),
        ],
    );
    eprint!("{report}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Struct (numpy structured) arrays both ways: zarr-python 3.1 writes `structured` arrays
/// (flat and nested, with datetime, complex and bool fields, base64 fill values, a bare
/// `bytes` codec, missing chunks) and we read every record exactly; we write the same
/// records in the `structured` form and zarr-python reads them and their fill values back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_arrays_interoperate_with_zarr_python() {
    let Some(python) = python("struct_arrays_interoperate_with_zarr_python") else {
        return;
    };
    let (_guard, dir) = work_dir("struct");
    let theirs = dir.join("theirs");
    run_peer(&python, &["write-struct", theirs.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(theirs.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest.len(), 6);
    let their_store = Arc::new(FilesystemStore::new(&theirs).unwrap());
    let ours = dir.join("ours");
    let our_store = Arc::new(FilesystemStore::new(&ours).unwrap());
    let mut written = Vec::new();
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let array = Array::open(Arc::clone(&their_store), &format!("/{path}"))
            .await
            .unwrap();
        let DataType::Struct(st) = array.data_type() else {
            panic!("{path}: read as {}", array.data_type());
        };
        assert!(st.is_structured(), "{path}");
        let format = match entry["zarr_format"].as_u64().unwrap() {
            2 => zarr_core::v2::ZarrFormat::V2,
            _ => zarr_core::v2::ZarrFormat::V3,
        };
        assert_eq!(array.zarr_format(), format, "{path}");
        let records = array.read_bytes(array.full_region()).await.unwrap();
        // Little-endian machine: native bytes are numpy's `tobytes()` of little-endian
        // records.
        assert_eq!(hex(&records), entry["bytes"].as_str().unwrap(), "{path}");
        assert_eq!(
            hex(array.fill_value().as_bytes()),
            entry["fill"].as_str().unwrap(),
            "{path}: fill value"
        );

        // Ours, in the same form and format (v2: in the same byte order), with zstd.
        let shape = array.shape().to_vec();
        let endian = match format {
            zarr_core::v2::ZarrFormat::V2 => array
                .metadata()
                .codecs
                .iter()
                .find(|c| c.name == "bytes")
                .and_then(|c| c.configuration.as_ref()?.get("endian")?.as_str())
                .unwrap_or("little")
                .to_owned(),
            zarr_core::v2::ZarrFormat::V3 => "little".to_owned(),
        };
        let codecs = vec![
            ExtensionObject::from_json(
                &json!({"name": "bytes", "configuration": {"endian": endian}}),
                "codecs[0]",
            )
            .unwrap(),
            ExtensionObject::from_json(
                &json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}}),
                "codecs[1]",
            )
            .unwrap(),
        ];
        let copy = ArrayBuilder::new(
            shape.clone(),
            array.data_type().clone(),
            vec![2; shape.len()],
        )
        .codecs(codecs)
        .fill_value(array.fill_value().clone())
        .zarr_format(format)
        .create(Arc::clone(&our_store), &format!("/{path}"))
        .await
        .unwrap();
        copy.write_bytes(copy.full_region(), &records)
            .await
            .unwrap();
        written.push(json!({"path": path, "shape": shape}));
        let fill = hex(array.fill_value().as_bytes());
        written.last_mut().unwrap()["fill"] = json!(fill);
        written.last_mut().unwrap()["bytes"] = json!(hex(&records));
    }
    std::fs::write(
        ours.join("manifest.json"),
        serde_json::to_vec(&written).unwrap(),
    )
    .unwrap();
    let read: Value =
        serde_json::from_str(&run_peer(&python, &["read-struct", ours.to_str().unwrap()])).unwrap();
    for entry in &written {
        let path = entry["path"].as_str().unwrap();
        if let Some(why) = read[path]["skipped"].as_str() {
            // Only where zarr-python cannot open its own array either (its `.zarray` is
            // checked equal to ours below).
            assert_eq!(path, "v2_nested", "{why}");
            eprintln!("{path}: not read back: {why}");
            continue;
        }
        assert_eq!(
            read[path]["bytes"], entry["bytes"],
            "{path}: zarr-python read"
        );
        assert_eq!(read[path]["fill"], entry["fill"], "{path}: fill value");
    }
    // Our v2 `.zarray` names the dtype as zarr-python does (fields, nesting, byte order), and
    // the fill value where zarr-python wrote one.
    for entry in manifest.iter().filter(|e| e["zarr_format"] == 2) {
        let path = entry["path"].as_str().unwrap();
        let doc = |root: &Path| -> Value {
            serde_json::from_slice(&std::fs::read(root.join(path).join(".zarray")).unwrap())
                .unwrap()
        };
        let (mine, theirs) = (doc(&ours), doc(&theirs));
        assert_eq!(mine["dtype"], theirs["dtype"], "{path}: dtype");
        if !theirs["fill_value"].is_null() {
            assert_eq!(
                mine["fill_value"], theirs["fill_value"],
                "{path}: fill value"
            );
        }
    }
}

/// The values of the hierarchy `peer.py zip-write` builds: `/u16`, `/sharded` and
/// `/group/strings`.
fn zip_u16() -> Vec<u16> {
    (0..100u64 * 60)
        .map(|i| {
            if i % 60 < 50 {
                ((i * 7919) % 65536) as u16
            } else {
                7
            }
        })
        .collect()
}

fn zip_sharded() -> Vec<f64> {
    (0..64 * 64).map(|i| f64::from(i) / 2.0).collect()
}

fn zip_strings() -> Vec<String> {
    (0..10).map(|i| format!("s{i}é")).collect()
}

async fn check_zip_hierarchy<S>(store: Arc<S>, what: &str)
where
    S: zarr_store::Store,
{
    let root = Group::open(Arc::clone(&store), "/").await.unwrap();
    assert_eq!(
        Value::Object(root.attributes().clone()),
        json!({"title": "zip interop", "n": 3}),
        "{what}"
    );
    let u16s = Array::open(Arc::clone(&store), "/u16").await.unwrap();
    assert_eq!(
        u16s.read::<u16>(u16s.full_region()).await.unwrap(),
        zip_u16(),
        "{what}"
    );
    let sharded = Array::open(Arc::clone(&store), "/sharded").await.unwrap();
    assert_eq!(
        sharded.read::<f64>(sharded.full_region()).await.unwrap(),
        zip_sharded(),
        "{what}"
    );
    let strings = Array::open(Arc::clone(&store), "/group/strings")
        .await
        .unwrap();
    let read = strings
        .read_strings::<i32>(strings.full_region())
        .await
        .unwrap();
    assert_eq!(Vec::<String>::from(&read), zip_strings(), "{what}");
}

async fn write_zip_hierarchy(store: &Arc<zarr_store::ZipStore>) {
    let mut root = Group::create(Arc::clone(store), "/").await.unwrap();
    let attributes = json!({"title": "zip interop", "n": 3});
    root.set_attributes(attributes.as_object().unwrap().clone())
        .await
        .unwrap();
    let u16s = ArrayBuilder::new(vec![100, 60], DataType::UInt16, vec![32, 25])
        .fill_value(7u16.into())
        .zstd(3)
        .create(Arc::clone(store), "/u16")
        .await
        .unwrap();
    let written: Vec<u16> = zip_u16()
        .chunks(60)
        .flat_map(|row| row[..50].to_vec())
        .collect();
    // First other values, then the real ones: every chunk entry is replaced once, leaving
    // the old bytes behind in the archive.
    u16s.write([0..100, 0..50], &vec![1u16; 5000])
        .await
        .unwrap();
    u16s.write([0..100, 0..50], &written).await.unwrap();
    let sharded = ArrayBuilder::new(vec![64, 64], DataType::Float64, vec![32, 32])
        .sharding(vec![8, 8])
        .create(Arc::clone(store), "/sharded")
        .await
        .unwrap();
    sharded.write([0..64, 0..64], &zip_sharded()).await.unwrap();
    let strings = ArrayBuilder::new(vec![10], DataType::String, vec![4])
        .create(Arc::clone(store), "/group/strings")
        .await
        .unwrap();
    strings
        .write_strings(
            strings.full_region(),
            &VlenStrings::<i32>::from_strs(zip_strings()).unwrap(),
        )
        .await
        .unwrap();
}

/// Zip archives both ways: zarr-python's `ZipStore` (stored, and deflated) and a directory
/// store that Python's `zipfile` zipped below a folder (deflated, ZIP64 local headers,
/// directory entries) read by [`zarr_store::ZipStore`]; ours (plain, with ZIP64 records
/// everywhere, and appended to an archive zarr-python wrote) checked by `zipfile` (every
/// CRC-32) and read by zarr-python's `ZipStore`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zip_archives_interoperate_with_zarr_python() {
    use zarr_store::{PrefixStore, StorePrefix, ZipOptions, ZipStore};

    let Some(python) = python("zip_archives_interoperate_with_zarr_python") else {
        return;
    };
    let (_guard, dir) = work_dir("zip");
    run_peer(&python, &["zip-write", dir.to_str().unwrap()]);
    for name in ["zp-stored.zip", "zp-deflated.zip"] {
        let store = Arc::new(ZipStore::open(dir.join(name)).unwrap());
        check_zip_hierarchy(store, name).await;
    }
    let folder = ZipStore::open(dir.join("folder.zip")).unwrap();
    let folder = Arc::new(PrefixStore::new(folder, StorePrefix::new("data.zarr/")));
    check_zip_hierarchy(folder, "folder.zip").await;

    for (name, options) in [
        ("ours.zip", ZipOptions::new()),
        ("ours-zip64.zip", ZipOptions::new().with_force_zip64(true)),
    ] {
        let path = dir.join(name);
        let store = Arc::new(ZipStore::create_with(&path, options).unwrap());
        write_zip_hierarchy(&store).await;
        store.finish().unwrap();
        check_zip_hierarchy(store, name).await;
        let out = run_peer(&python, &["zip-read", path.to_str().unwrap()]);
        assert_eq!(out.trim(), format!("{name}: equal"));
    }

    let appended = dir.join("appended.zip");
    std::fs::copy(dir.join("zp-stored.zip"), &appended).unwrap();
    let store = Arc::new(ZipStore::append(&appended).unwrap());
    let added = ArrayBuilder::new(vec![5], DataType::Int32, vec![2])
        .create(Arc::clone(&store), "/added")
        .await
        .unwrap();
    added
        .write(added.full_region(), &[1i32, 2, 3, 4, 5])
        .await
        .unwrap();
    store.finish().unwrap();
    let out = run_peer(
        &python,
        &["zip-read", appended.to_str().unwrap(), "--added"],
    );
    assert_eq!(out.trim(), "appended.zip: equal");
    check_zip_hierarchy(store, "appended.zip").await;
}

/// Every file below `dir` (chunk files; metadata documents left out), by path relative to it.
fn chunk_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_str().unwrap();
            if matches!(name, "zarr.json" | ".zarray" | ".zattrs") {
                continue;
            }
            let relative = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
            files.insert(relative, std::fs::read(&path).unwrap());
        }
    }
    files
}

/// zfp both ways, byte for byte. zarr-python writes arrays with numcodecs' `ZFPY` (zfpy
/// 1.0.1 over libzfp 1.0.1; fixed accuracy, rate and precision, reversible with NaN and
/// infinities, 1-D to 4-D with edge and missing chunks, Zarr v3 and v2): we read exactly
/// the values zarr-python reads back, and writing the same values with the same metadata
/// stores the same chunk files. Our `zfp` codec (zarrs') stores for the same parameters
/// exactly libzfp's header-less stream of each chunk, and reads back zarr-python's values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zfp_chunks_are_libzfp_streams_both_ways() {
    let Some(python) = python("zfp_chunks_are_libzfp_streams_both_ways") else {
        return;
    };
    let (_guard, dir) = work_dir("zfp");
    let theirs = dir.join("theirs");
    run_peer(&python, &["zfp-write", theirs.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(theirs.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest.len(), 6);
    let their_store = Arc::new(FilesystemStore::new(&theirs).unwrap());
    let ours = dir.join("ours");
    let our_store = Arc::new(FilesystemStore::new(&ours).unwrap());
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let array = Array::open(Arc::clone(&their_store), &format!("/{path}"))
            .await
            .unwrap();
        let read_back = array.read_bytes(array.full_region()).await.unwrap();
        // A little-endian machine: native bytes are the manifest's little-endian ones.
        assert_eq!(
            hex(&read_back),
            entry["read_back"].as_str().unwrap(),
            "{path}: values"
        );

        // The written region: whole, or rows up to `written`.
        let shape = array.shape().to_vec();
        let mut ranges: Vec<Range<u64>> = shape.iter().map(|&n| 0..n).collect();
        if let Some(rows) = entry["written"].as_u64() {
            ranges[0] = 0..rows;
        }
        let region = Region::try_new(ranges.clone()).unwrap();
        let size = array.data_type().fixed_size().unwrap();
        let count: u64 = ranges.iter().map(|r| r.end - r.start).product();
        let input = from_hex(entry["input"].as_str().unwrap());
        let input = &input[..count as usize * size]; // rows first: a prefix in C order

        let format = array.zarr_format();
        let chunks = shape_of(&entry["chunks"]);
        let copy = ArrayBuilder::new(shape.clone(), array.data_type().clone(), chunks.clone())
            .codecs(array.metadata().codecs.clone())
            .fill_value(array.fill_value().clone())
            .zarr_format(format)
            .create(Arc::clone(&our_store), &format!("/{path}"))
            .await
            .unwrap();
        copy.write_bytes(region.clone(), input).await.unwrap();
        let (mine, theirs_files) = (
            chunk_files(&ours.join(path)),
            chunk_files(&theirs.join(path)),
        );
        assert_eq!(
            mine.keys().collect::<Vec<_>>(),
            theirs_files.keys().collect::<Vec<_>>(),
            "{path}: chunk files"
        );
        for (key, bytes) in &theirs_files {
            assert!(
                mine[key] == *bytes,
                "{path}/{key}: our chunk differs from zarr-python's"
            );
        }
        if format == zarr_core::v2::ZarrFormat::V2 {
            let zarray = |root: &Path| -> Value {
                serde_json::from_slice(&std::fs::read(root.join(path).join(".zarray")).unwrap())
                    .unwrap()
            };
            assert_eq!(
                zarray(&ours)["compressor"],
                zarray(&theirs)["compressor"],
                "{path}: .zarray compressor"
            );
        }

        // zarrs' `zfp` codec with the same parameters: libzfp's streams without a header.
        let config = entry["zfp_config"].clone();
        let zfp =
            ExtensionObject::from_json(&json!({"name": "zfp", "configuration": config}), "zfp")
                .unwrap();
        let zfp_path = format!("zfp/{path}");
        let z = ArrayBuilder::new(shape.clone(), array.data_type().clone(), chunks)
            .codecs(vec![zfp])
            .fill_value(array.fill_value().clone())
            .create(Arc::clone(&our_store), &format!("/{zfp_path}"))
            .await
            .unwrap();
        z.write_bytes(region, input).await.unwrap();
        let stored = chunk_files(&ours.join(&zfp_path));
        let expected = entry["zfp_chunks"].as_object().unwrap();
        assert_eq!(stored.len(), expected.len(), "{zfp_path}: chunk count");
        for (key, stream) in expected {
            assert_eq!(
                hex(&stored[key.as_str()]),
                stream.as_str().unwrap(),
                "{zfp_path}/{key}"
            );
        }
        let back = z.read_bytes(z.full_region()).await.unwrap();
        assert!(
            back == read_back,
            "{zfp_path}: values differ from zarr-python's"
        );
    }
}

/// The values of fixed-size `bytes` (native order) of `array`'s integer data type.
fn integers(array: &Array<FilesystemStore>, bytes: &[u8]) -> Vec<i64> {
    match array.data_type() {
        DataType::Int32 => bytes
            .chunks_exact(4)
            .map(|b| i64::from(i32::from_ne_bytes(b.try_into().unwrap())))
            .collect(),
        DataType::UInt16 => bytes
            .chunks_exact(2)
            .map(|b| i64::from(u16::from_ne_bytes(b.try_into().unwrap())))
            .collect(),
        other => panic!("no integers of {other}"),
    }
}

/// `integers` back to native bytes of `array`'s data type.
fn integer_bytes(array: &Array<FilesystemStore>, values: &Value) -> Vec<u8> {
    let values = values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap());
    match array.data_type() {
        DataType::Int32 => values
            .flat_map(|v| i32::try_from(v).unwrap().to_ne_bytes())
            .collect(),
        DataType::UInt16 => values
            .flat_map(|v| u16::try_from(v).unwrap().to_ne_bytes())
            .collect(),
        other => panic!("no integers of {other}"),
    }
}

/// Values of `array` as the JSON list the peer wrote: numbers of its integer data type, or
/// strings.
fn json_values(array: &Array<FilesystemStore>, values: &ArrayBytes) -> Value {
    match values {
        ArrayBytes::Fixed(bytes) => json!(integers(array, bytes)),
        ArrayBytes::Variable(vlen) => Value::Array(
            vlen.iter()
                .map(|e| Value::String(std::str::from_utf8(e).unwrap().to_owned()))
                .collect(),
        ),
    }
}

/// A JSON list of the peer's values as `ArrayBytes` of `array`'s data type.
fn array_bytes_of(array: &Array<FilesystemStore>, values: &Value) -> ArrayBytes {
    if *array.data_type() == DataType::String {
        let strings = values.as_array().unwrap().iter();
        ArrayBytes::Variable(zarr_codecs::VlenBytes::from_elements(
            strings.map(|s| s.as_str().unwrap().as_bytes()),
        ))
    } else {
        ArrayBytes::fixed(integer_bytes(array, values))
    }
}

fn selection_of(spec: &Value) -> zarr_array::Selection {
    use zarr_array::AxisSelection;
    let numbers = |v: &Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    zarr_array::Selection::new(spec.as_array().unwrap().iter().map(|axis| {
        if let Some(slice) = axis.get("slice") {
            let s = numbers(slice);
            AxisSelection::step(s[0]..s[1], s[2])
        } else if let Some(indices) = axis.get("indices") {
            AxisSelection::Indices(numbers(indices))
        } else {
            AxisSelection::mask(
                axis["mask"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_bool().unwrap()),
            )
        }
    }))
}

fn points_of(points: &Value) -> Vec<Vec<u64>> {
    points
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        })
        .collect()
}

/// Orthogonal, coordinate and block selections read what zarr-python reads (which the peer
/// checks against numpy's `np.ix_`) from arrays it wrote, plain and sharded; orthogonal and
/// coordinate writes leave what the same writes through zarr-python leave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selections_match_zarr_python() {
    let Some(python) = python("selections_match_zarr_python") else {
        return;
    };
    let (_guard, dir) = work_dir("selections");
    run_peer(&python, &["selection-write", dir.to_str().unwrap()]);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let store = Arc::new(FilesystemStore::new(&dir).unwrap());
    let open = |name: String| {
        let store = Arc::clone(&store);
        async move { Array::open(store, &format!("/{name}")).await.unwrap() }
    };
    let reads = manifest["reads"].as_array().unwrap();
    assert_eq!(reads.len(), 76);
    for read in reads {
        let array = open(read["array"].as_str().unwrap().to_owned()).await;
        let got = match read["kind"].as_str().unwrap() {
            "orthogonal" => array
                .read_selection_array_bytes(&selection_of(&read["selection"]))
                .await
                .unwrap(),
            "points" => array
                .read_points_array_bytes(points_of(&read["points"]))
                .await
                .unwrap(),
            "blocks" => {
                let blocks: Vec<Range<u64>> = points_of(&read["blocks"])
                    .iter()
                    .map(|b| b[0]..b[1])
                    .collect();
                let region = array.blocks_region(blocks).unwrap();
                array.read_array_bytes(&region).await.unwrap()
            }
            other => panic!("{other}"),
        };
        assert_eq!(json_values(&array, &got), read["values"], "{read}");
    }
    let mut checked = 0;
    for write in manifest["writes"].as_array().unwrap() {
        let name = write["array"].as_str().unwrap();
        let ours = open(format!("{name}_ours")).await;
        let values = || array_bytes_of(&ours, &write["values"]);
        match write["kind"].as_str().unwrap() {
            "orthogonal" => ours
                .write_selection_array_bytes(&selection_of(&write["selection"]), values())
                .await
                .unwrap(),
            "points" => ours
                .write_points_array_bytes(points_of(&write["points"]), values())
                .await
                .unwrap(),
            "done" => {
                let theirs = open(format!("{name}_theirs")).await;
                let theirs_all = theirs.read_array_bytes(..).await.unwrap();
                assert_eq!(
                    json_values(&theirs, &theirs_all),
                    write["values"],
                    "{name}: zarr-python's writes"
                );
                let ours_all = ours.read_array_bytes(..).await.unwrap();
                assert_eq!(
                    json_values(&ours, &ours_all),
                    write["values"],
                    "{name}: our writes"
                );
                checked += 1;
            }
            other => panic!("{other}"),
        }
    }
    assert_eq!(checked, 4);
}

/// numcodecs' `VLenArray` object codec (Zarr v2 ragged arrays, as zarr-python 2 wrote them;
/// zarr-python 3 cannot): we read exactly the items numcodecs encoded, including missing
/// chunks and 2-D chunks cut at the edge, and numcodecs decodes the chunks we write with the
/// same metadata to the same items. Uncompressed, our chunks are numcodecs' bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vlen_array_ragged_arrays_round_trip_with_numcodecs() {
    let Some(python) = python("vlen_array_ragged_arrays_round_trip_with_numcodecs") else {
        return;
    };
    let (_guard, dir) = work_dir("vlen_array");
    let theirs = dir.join("theirs");
    run_peer(&python, &["vlen-array", theirs.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(theirs.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest.len(), 3);
    let ours = dir.join("ours");
    std::fs::create_dir_all(&ours).unwrap();
    std::fs::copy(theirs.join("manifest.json"), ours.join("manifest.json")).unwrap();
    let their_store = Arc::new(FilesystemStore::new(&theirs).unwrap());
    let our_store = Arc::new(FilesystemStore::new(&ours).unwrap());
    // Expected elements: hex of the items' bytes; a missing chunk's are the empty fill value.
    let expected = |entry: &Value| -> Vec<String> {
        entry["elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap_or("").to_owned())
            .collect()
    };
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let array = Array::open(Arc::clone(&their_store), &format!("/{path}"))
            .await
            .unwrap();
        assert_eq!(array.data_type(), &DataType::Bytes, "{path}");
        assert_eq!(
            array.metadata().codecs[0].to_json(),
            json!({"name": "numcodecs.vlen-array",
                   "configuration": {"dtype": entry["dtype"].as_str().unwrap()}}),
            "{path}"
        );
        let read: VlenBinary<i64> = array.read_binary(array.full_region()).await.unwrap();
        let read: Vec<String> = read.iter().map(hex).collect();
        assert_eq!(read, expected(entry), "{path}: we read numcodecs' items");

        // The same values, written by us with the same metadata.
        let copy = ArrayBuilder::new(
            array.shape().to_vec(),
            DataType::Bytes,
            shape_of(&entry["chunks"]),
        )
        .codecs(array.metadata().codecs.clone())
        .fill_value(array.fill_value().clone())
        .chunk_key_encoding(array.chunk_key_encoding().clone())
        .zarr_format(zarr_core::v2::ZarrFormat::V2)
        .create(Arc::clone(&our_store), &format!("/{path}"))
        .await
        .unwrap();
        let elements: Vec<Vec<u8>> = expected(entry).iter().map(|h| from_hex(h)).collect();
        let values = VlenBinary::<i64>::try_from(
            elements
                .iter()
                .map(Vec::as_slice)
                .collect::<Vec<_>>()
                .as_slice(),
        )
        .unwrap();
        copy.write_binary(copy.full_region(), &values)
            .await
            .unwrap();
        let zarray = |root: &Path| -> Value {
            serde_json::from_slice(&std::fs::read(root.join(path).join(".zarray")).unwrap())
                .unwrap()
        };
        assert_eq!(
            zarray(&ours)["filters"],
            zarray(&theirs)["filters"],
            "{path}: .zarray filters"
        );
        if zarray(&theirs)["compressor"].is_null() {
            assert_eq!(
                chunk_files(&ours.join(path)),
                chunk_files(&theirs.join(path)),
                "{path}: uncompressed chunks are numcodecs' bytes"
            );
        }
    }
    let decoded: Value = serde_json::from_str(&run_peer(
        &python,
        &["vlen-array-read", ours.to_str().unwrap()],
    ))
    .unwrap();
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let theirs_of_ours: Vec<String> = decoded[path]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(
            theirs_of_ours,
            expected(entry),
            "{path}: numcodecs decodes our chunks"
        );
    }
}

/// The zarr-extensions `ndarray` data type with the `vlen-ndarray` codec against its reference
/// implementation (zarr-vlen-ndarray on zarr-python): we read what it writes (every scalar
/// kind, one to three element dimensions, zstd, gzip, sharded, regions never written) element
/// by element with each element's shape; it reads what we write with the same metadata; our
/// uncompressed chunks are its bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndarray_elements_round_trip_with_zarr_vlen_ndarray() {
    let Some(python) = python("ndarray_elements_round_trip_with_zarr_vlen_ndarray") else {
        return;
    };
    let (_guard, dir) = work_dir("ndarray");
    let theirs = dir.join("theirs");
    run_peer(&python, &["ndarray-write", theirs.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(theirs.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest.len(), 7);
    let ours = dir.join("ours");
    std::fs::create_dir_all(&ours).unwrap();
    std::fs::copy(theirs.join("manifest.json"), ours.join("manifest.json")).unwrap();
    let their_store = Arc::new(FilesystemStore::new(&theirs).unwrap());
    let our_store = Arc::new(FilesystemStore::new(&ours).unwrap());
    let elements_of = |value: &Value| -> Vec<(Vec<u64>, String)> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (shape_of(&e["shape"]), e["hex"].as_str().unwrap().to_owned()))
            .collect()
    };
    let mut empty_elements = 0;
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let expected = elements_of(&entry["elements"]);
        empty_elements += expected.iter().filter(|(_, h)| h.is_empty()).count();
        let array = Array::open(Arc::clone(&their_store), &format!("/{path}"))
            .await
            .unwrap();
        let DataType::NdArray(nd) = array.data_type().clone() else {
            panic!("{path}: {}", array.data_type());
        };
        assert_eq!(
            nd.dtype().name(),
            entry["dtype"].as_str().unwrap(),
            "{path}"
        );
        let pattern: Vec<Option<u64>> = entry["pattern"]
            .as_array()
            .unwrap()
            .iter()
            .map(Value::as_u64)
            .collect();
        assert_eq!(nd.shape(), pattern, "{path}");
        let ArrayBytes::Variable(read) = array.read_array_bytes(array.full_region()).await.unwrap()
        else {
            panic!("{path}: fixed-size elements");
        };
        let read: Vec<(Vec<u64>, String)> = read
            .iter()
            .map(|e| (nd.element_shape(e.len()).unwrap(), hex(e)))
            .collect();
        assert_eq!(
            read, expected,
            "{path}: we read zarr-vlen-ndarray's elements"
        );

        // The same elements, written by us with the same metadata.
        let copy = ArrayBuilder::new(
            array.shape().to_vec(),
            array.data_type().clone(),
            shape_of(&entry["chunks"]),
        )
        .codecs(array.metadata().codecs.clone())
        .fill_value(array.fill_value().clone())
        .create(Arc::clone(&our_store), &format!("/{path}"))
        .await
        .unwrap();
        if path == "float32_pairs" {
            // Typed, each element with its shape.
            let typed = array.read_elements::<f32>(..).await.unwrap();
            for (element, (shape, hex_bytes)) in typed.iter().zip(&expected) {
                assert_eq!(&element.shape, shape);
                let le: Vec<u8> = element
                    .values
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                assert_eq!(&hex(&le), hex_bytes);
            }
            copy.write_elements(.., &typed).await.unwrap();
        } else {
            let bytes: Vec<Vec<u8>> = expected.iter().map(|(_, h)| from_hex(h)).collect();
            let vlen = zarr_codecs::VlenBytes::from_elements(bytes.iter().map(Vec::as_slice));
            copy.write_array_bytes(.., ArrayBytes::Variable(vlen))
                .await
                .unwrap();
        }
        let zarr_json = |root: &Path| -> Value {
            serde_json::from_slice(&std::fs::read(root.join(path).join("zarr.json")).unwrap())
                .unwrap()
        };
        let (mine, theirs_json) = (zarr_json(&ours), zarr_json(&theirs));
        for field in ["data_type", "fill_value", "codecs"] {
            assert_eq!(mine[field], theirs_json[field], "{path}: {field}");
        }
        let uncompressed = theirs_json["codecs"].as_array().unwrap().len() == 1
            && theirs_json["codecs"][0]["name"] == "vlen-ndarray";
        if uncompressed {
            assert_eq!(
                chunk_files(&ours.join(path)),
                chunk_files(&theirs.join(path)),
                "{path}: uncompressed chunks are zarr-vlen-ndarray's bytes"
            );
        }
    }
    assert!(
        empty_elements > 10,
        "empty and unwritten elements are covered"
    );
    let decoded: Value = serde_json::from_str(&run_peer(
        &python,
        &["ndarray-read", ours.to_str().unwrap()],
    ))
    .unwrap();
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        assert_eq!(
            elements_of(&decoded[path]),
            elements_of(&entry["elements"]),
            "{path}: zarr-vlen-ndarray reads our chunks"
        );
    }
}

/// The hex of bytes, as `le_hex` in peer.py writes it.
fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compare every array a manifest lists (`path`, and `hex` or `strings`) with what we read
/// from `store`.
async fn check_manifest_values<S>(store: &Arc<S>, manifest: &[Value], what: &str)
where
    S: zarr_store::ReadableStore + zarr_store::ListableStore + zarr_store::WritableStore,
{
    for entry in manifest {
        let path = format!("/{}", entry["path"].as_str().unwrap());
        let array = Array::open(Arc::clone(store), &path)
            .await
            .unwrap_or_else(|e| panic!("{what}: opening {path}: {e}"));
        assert_eq!(
            array.shape(),
            &shape_of(&entry["shape"])[..],
            "{what}: {path}"
        );
        if let Some(strings) = entry["strings"].as_array() {
            let read = array.read_text(array.full_region()).await.unwrap();
            let expected: Vec<&str> = strings.iter().map(|s| s.as_str().unwrap()).collect();
            assert_eq!(read, expected, "{what}: {path}");
        } else {
            let read = array
                .read_bytes(array.full_region())
                .await
                .unwrap_or_else(|e| panic!("{what}: reading {path}: {e}"));
            assert_eq!(
                hex_of(&read),
                entry["hex"].as_str().unwrap(),
                "{what}: {path}"
            );
        }
    }
}

/// The groups, attributes and tree of `peer.py kerchunk-hdf5`'s hierarchy, read through a
/// reference store.
async fn check_kerchunk_hierarchy<S>(store: &Arc<S>, what: &str)
where
    S: zarr_store::ReadableStore + zarr_store::ListableStore + zarr_store::WritableStore,
{
    let root = Group::open(Arc::clone(store), "/").await.unwrap();
    assert_eq!(root.attributes()["title"], "kerchunk interop", "{what}");
    assert_eq!(root.attributes()["version"], 3, "{what}");
    let tree: Vec<String> = root
        .tree()
        .await
        .unwrap()
        .into_iter()
        .map(|(path, _)| path.to_string())
        .collect();
    for node in [
        "/ints",
        "/ints/i8",
        "/empty/group",
        "/strings/utf8",
        "/scalar",
        "/sparse",
    ] {
        assert!(
            tree.iter().any(|p| p == node),
            "{what}: {node} not in {tree:?}"
        );
    }
    let i8 = Array::open(Arc::clone(store), "/ints/i8").await.unwrap();
    assert_eq!(i8.attributes()["units"], "counts", "{what}");
}

/// kerchunk's reference sets for an HDF5 file (h5py writes it: every numeric type in both
/// byte orders, float16, complex, bool, fixed-length bytes, UTF-8 strings, a scalar; gzip,
/// shuffle, edge chunks, chunks never written, a contiguous dataset, nested groups with
/// attributes) read as Zarr v2 through `ReferenceStore`: every value as h5py wrote it.
#[tokio::test(flavor = "multi_thread")]
async fn kerchunk_references_to_an_hdf5_file_read_as_zarr() {
    use zarr_store::{Reference, ReferenceStore, References, StoreKey};

    let Some(python) = python("kerchunk_references_to_an_hdf5_file_read_as_zarr") else {
        return;
    };
    let (_guard, dir) = work_dir("kerchunk_hdf5");
    run_peer(&python, &["kerchunk-hdf5", dir.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest.len() >= 17, "{}", manifest.len());
    let h5 = dir.join("data.h5");

    // Absolute URLs need no base directory; relative ones start from the one given.
    for (file, base) in [
        ("refs.json", PathBuf::from("/")),
        ("refs-relative.json", dir.clone()),
    ] {
        let json = std::fs::read(dir.join(file)).unwrap();
        let references = References::from_json(&json).unwrap();
        // The contiguous dataset is one range of the HDF5 file; the chunks never written
        // have no reference at all.
        let url = match file {
            "refs.json" => h5.to_str().unwrap(),
            _ => "data.h5",
        };
        match references.get(&StoreKey::new("ints/u8_contiguous/0")) {
            Some(Reference::Range {
                url: Some(u),
                length: 40_000,
                ..
            }) => assert_eq!(u, url),
            other => panic!("{file}: {other:?}"),
        }
        assert!(references.get(&StoreKey::new("sparse/0.0")).is_some());
        assert!(references.get(&StoreKey::new("sparse/0.1")).is_none());

        let store = Arc::new(ReferenceStore::new(references).with_local_files(&base));
        check_manifest_values(&store, &manifest, file).await;
        check_kerchunk_hierarchy(&store, file).await;
    }

    // Without permission to read local files, chunks fail with an error naming the file;
    // metadata (inline) still reads.
    let json = std::fs::read(dir.join("refs.json")).unwrap();
    let closed = Arc::new(ReferenceStore::new(References::from_json(&json).unwrap()));
    let array = Array::open(Arc::clone(&closed), "/ints/u8_contiguous")
        .await
        .unwrap();
    let error = array.read_bytes(array.full_region()).await.unwrap_err();
    let chain = zarr_core::ErrorChain(&error).to_string();
    assert!(
        chain.contains("data.h5") && chain.contains("not allowed"),
        "{chain}"
    );
}

/// The same kerchunk reference sets as Parquet reference sets (kerchunk's
/// `refs_to_dataframe` with fastparquet, fsspec's `LazyReferenceMapper` with pyarrow; 4 and 7
/// references per record file, so most arrays span several), read lazily through
/// `ParquetReferences`: every value as h5py wrote it, the hierarchy from the set's metadata.
#[tokio::test(flavor = "multi_thread")]
async fn kerchunk_parquet_references_read_as_zarr() {
    use zarr_store::{
        ListableStore as _, ParquetReferences, Reference, ReferenceStore, StoreKey, StorePrefix,
    };

    let Some(python) = python("kerchunk_parquet_references_read_as_zarr") else {
        return;
    };
    let (_guard, dir) = work_dir("kerchunk_parquet");
    run_peer(&python, &["kerchunk-hdf5", dir.to_str().unwrap()]);
    run_peer(&python, &["kerchunk-parquet", dir.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();

    // The absolute set through `ReferenceStore::open` (a directory); the relative one from
    // its store, its URLs starting from the directory they were written in.
    let absolute = ReferenceStore::open(dir.join("refs.parq")).unwrap();
    let files = Arc::new(FilesystemStore::open(dir.join("refs-relative.parq")).unwrap());
    let relative = ParquetReferences::open(files, &StorePrefix::root())
        .await
        .unwrap();
    assert_eq!(relative.record_size(), 7);
    assert!(relative.arrays().contains(&"ints/u8_contiguous"));
    let relative = ReferenceStore::from_parquet(relative).with_local_files(&dir);
    for (name, store) in [("refs.parq", absolute), ("refs-relative.parq", relative)] {
        let references = store.parquet_references().unwrap();
        let contiguous = references
            .get(&StoreKey::new("ints/u8_contiguous/0"))
            .await
            .unwrap();
        assert!(
            matches!(contiguous, Some(Reference::Range { length: 40_000, .. })),
            "{name}: {contiguous:?}"
        );
        // Chunks h5py never wrote have no reference; listing shows only those that do.
        let sparse: Vec<String> = store
            .list_prefix(&StorePrefix::new("sparse/"))
            .await
            .unwrap()
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect();
        assert_eq!(
            sparse,
            [
                "sparse/.zarray",
                "sparse/.zattrs",
                "sparse/0.0",
                "sparse/1.2"
            ],
            "{name}"
        );

        let store = Arc::new(store);
        check_manifest_values(&store, &manifest, name).await;
        check_kerchunk_hierarchy(&store, name).await;
    }
}

/// kerchunk's JSON sets for the HDF5 file, written by us as a Parquet reference set
/// (`ParquetReferences::write`, 5 references per record file): fsspec's
/// `ReferenceFileSystem` (fastparquet) and zarr-python read every dataset from it as h5py
/// wrote it, and so do we.
#[tokio::test(flavor = "multi_thread")]
async fn zarr_python_reads_the_parquet_reference_sets_we_write() {
    use zarr_store::{ParquetReferences, ReferenceStore, References, StorePrefix};

    let Some(python) = python("zarr_python_reads_the_parquet_reference_sets_we_write") else {
        return;
    };
    let (_guard, dir) = work_dir("parquet_refs_written");
    run_peer(&python, &["kerchunk-hdf5", dir.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let references = References::from_json(&std::fs::read(dir.join("refs.json")).unwrap()).unwrap();
    let ours = dir.join("ours.parq");
    let files = FilesystemStore::new(&ours).unwrap();
    ParquetReferences::write(&references, &files, &StorePrefix::root(), 5)
        .await
        .unwrap();

    let store = Arc::new(ReferenceStore::open(&ours).unwrap());
    check_manifest_values(&store, &manifest, "ours.parq").await;

    let mut args = vec!["references-read", ours.to_str().unwrap()];
    args.extend(manifest.iter().map(|entry| entry["path"].as_str().unwrap()));
    let theirs: Map<String, Value> = serde_json::from_str(&run_peer(&python, &args)).unwrap();
    assert_eq!(theirs["attributes"]["title"], "kerchunk interop");
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let expected = entry
            .get("hex")
            .cloned()
            .unwrap_or_else(|| entry["strings"].clone());
        assert_eq!(
            theirs.get(path),
            Some(&expected),
            "zarr-python reading {path}"
        );
    }
}

/// Version 1 reference sets with templates and generators (integer arithmetic with Python's
/// floor division and modulo, string concatenation, list and range dimensions): we resolve
/// every key as fsspec does with Jinja.
#[test]
fn reference_generators_resolve_as_fsspec_resolves_them() {
    use zarr_store::{Reference, References, StoreKey};

    let Some(python) = python("reference_generators_resolve_as_fsspec_resolves_them") else {
        return;
    };
    let (_guard, dir) = work_dir("reference_generators");
    let set = json!({
        "version": 1,
        "templates": {"u": "/data/run", "ext": ".nc"},
        "gen": [
            {
                "key": "temp/{{t}}.{{ y }}",
                "url": "{{u}}_{{ t // 4 }}{{ext}}",
                "offset": "{{ 1024 + (t % 4) * 4096 + y * 512 }}",
                "length": "{{ 512 - y }}",
                "dimensions": {"t": {"start": 0, "stop": 10}, "y": {"stop": 3}}
            },
            {
                "key": "band/{{name}}/{{k}}",
                "url": "{{u + '_' + name}}.tif",
                "offset": "100",
                "length": "{{(k + 1) * 10}}",
                "dimensions": {"name": ["red", "nir"], "k": {"start": 7, "stop": -5, "step": -4}}
            },
            {"key": "whole/{{ -k // 3 }}", "url": "{{u}}/{{k}}.bin", "dimensions": {"k": [5, -7, 11]}}
        ],
        "refs": {
            ".zgroup": "{\"zarr_format\": 2}",
            "temp/0.0": "replaced by the generator",
            "blob": "base64:AP8Q",
            "ranged": ["{{u}}{{ext}}", 3, 4]
        }
    });
    let input = dir.join("refs.json");
    std::fs::write(&input, set.to_string()).unwrap();
    let output = dir.join("resolved.json");
    run_peer(
        &python,
        &[
            "references-render",
            input.to_str().unwrap(),
            output.to_str().unwrap(),
        ],
    );
    let theirs: Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    let ours = References::from_json(set.to_string().as_bytes()).unwrap();
    assert_eq!(ours.len(), theirs.len(), "{theirs:?}");
    assert_eq!(ours.len(), 4 + 30 - 1 + 6 + 3);
    for (key, reference) in &theirs {
        let expected = match reference {
            Value::Object(inline) => {
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(inline["inline"].as_str().unwrap())
                    .unwrap();
                Reference::Inline(bytes.into())
            }
            Value::Array(parts) if parts.len() == 1 => Reference::Whole {
                url: parts[0].as_str().map(str::to_owned),
            },
            Value::Array(parts) => Reference::Range {
                url: parts[0].as_str().map(str::to_owned),
                offset: parts[1].as_u64().unwrap(),
                length: parts[2].as_u64().unwrap(),
            },
            other => panic!("{key}: {other}"),
        };
        assert_eq!(ours.get(&StoreKey::new(key)), Some(&expected), "{key}");
    }
}

/// A reference set we write (`References::to_json`) for a Zarr v3 hierarchy whose chunks
/// were packed into one file: zarr-python reads it through fsspec's ReferenceFileSystem,
/// and we read it through `ReferenceStore`, both giving the values we wrote.
#[tokio::test(flavor = "multi_thread")]
async fn zarr_python_reads_the_reference_sets_we_write() {
    use zarr_store::{
        ListableStore as _, ReadableStore as _, Reference, ReferenceStore, References,
    };

    let Some(python) = python("zarr_python_reads_the_reference_sets_we_write") else {
        return;
    };
    let (_guard, dir) = work_dir("reference_write");
    let source = Arc::new(FilesystemStore::new(dir.join("source.zarr")).unwrap());
    let attributes = json!({"made by": "zarr-rs"}).as_object().unwrap().clone();
    Group::create_with(
        Arc::clone(&source),
        "/",
        GroupMetadata::new().with_attributes(attributes),
    )
    .await
    .unwrap();
    let mut manifest = Vec::new();

    let a = ArrayBuilder::new(vec![37, 23], DataType::UInt16, vec![10, 8])
        .zstd(3)
        .fill_value(FillValue::from(7_u16))
        .create(Arc::clone(&source), "/plain/u16")
        .await
        .unwrap();
    let values: Vec<u16> = (0..37 * 23).map(|i| (i * 37 % 65_521) as u16).collect();
    a.write(a.full_region(), &values).await.unwrap();
    // One chunk back to the fill value: it is erased, and stays out of the references.
    a.write(vec![0..10, 0..8], &[7_u16; 80]).await.unwrap();
    let mut expected = values.clone();
    for r in 0..10 {
        for c in 0..8 {
            expected[r * 23 + c] = 7;
        }
    }
    manifest.push(json!({"path": "plain/u16", "shape": [37, 23],
        "hex": hex_of(&expected.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>())}));

    let s = ArrayBuilder::new(vec![64, 64], DataType::Float32, vec![32, 32])
        .sharding(vec![8, 16])
        .create(Arc::clone(&source), "/sharded")
        .await
        .unwrap();
    let floats: Vec<f32> = (0..64 * 64).map(|i| i as f32 * 0.25 - 100.0).collect();
    s.write(s.full_region(), &floats).await.unwrap();
    manifest.push(json!({"path": "sharded", "shape": [64, 64],
        "hex": hex_of(&floats.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>())}));

    let t = ArrayBuilder::new(vec![5], DataType::String, vec![2])
        .create(Arc::clone(&source), "/text")
        .await
        .unwrap();
    let strings = ["", "héllo", "日本", "a longer string", "z"];
    t.write_text(t.full_region(), &strings).await.unwrap();
    manifest.push(json!({"path": "text", "shape": [5], "strings": strings}));

    // Metadata inline; every chunk packed into one file, with a gap before each.
    let blob_path = dir.join("chunks.bin");
    let blob_url = blob_path.to_str().unwrap().to_owned();
    let mut blob = Vec::new();
    let mut references = References::new();
    for key in source.list().await.unwrap() {
        let value = source.get(&key).await.unwrap().unwrap();
        let reference = if key.name() == "zarr.json" {
            Reference::Inline(value)
        } else {
            blob.extend_from_slice(b"gap");
            let offset = blob.len() as u64;
            blob.extend_from_slice(&value);
            Reference::Range {
                url: Some(blob_url.clone()),
                offset,
                length: value.len() as u64,
            }
        };
        references.insert(key, reference).unwrap();
    }
    std::fs::write(&blob_path, &blob).unwrap();
    let refs_path = dir.join("refs.json");
    std::fs::write(&refs_path, references.to_json().to_string()).unwrap();

    // We read our set back.
    let store = Arc::new(ReferenceStore::open(&refs_path).unwrap());
    check_manifest_values(&store, &manifest, "ReferenceStore").await;

    // zarr-python reads it through fsspec.
    let mut args = vec!["references-read", refs_path.to_str().unwrap()];
    args.extend(manifest.iter().map(|entry| entry["path"].as_str().unwrap()));
    let theirs: Map<String, Value> = serde_json::from_str(&run_peer(&python, &args)).unwrap();
    assert_eq!(theirs["attributes"], json!({"made by": "zarr-rs"}));
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let expected = entry
            .get("hex")
            .cloned()
            .unwrap_or_else(|| entry["strings"].clone());
        assert_eq!(
            theirs.get(path),
            Some(&expected),
            "zarr-python reading {path}"
        );
    }
    assert_eq!(theirs.len(), manifest.len() + 1, "{theirs:?}");
}

/// Changes we make to nodes a consolidated record lists (a resize, an append, new
/// attributes of an array and of groups, a node replaced) reach the record: zarr-python,
/// opening the hierarchy from its consolidated metadata, sees each node as its own
/// documents describe it, in Zarr v3 and v2.
#[tokio::test(flavor = "multi_thread")]
async fn zarr_python_sees_our_metadata_changes_through_consolidated_records() {
    use zarr_core::v2::ZarrFormat;

    let Some(python) = python("zarr_python_sees_our_metadata_changes_through_consolidated_records")
    else {
        return;
    };
    let (_guard, dir) = work_dir("consolidated_changes");
    for format in [ZarrFormat::V3, ZarrFormat::V2] {
        let root = dir.join(format!(
            "v{}.zarr",
            if format == ZarrFormat::V3 { 3 } else { 2 }
        ));
        let store = Arc::new(FilesystemStore::new(&root).unwrap());
        Group::create_with_format(Arc::clone(&store), "/", GroupMetadata::new(), format)
            .await
            .unwrap();
        let series = ArrayBuilder::new(vec![5, 3], DataType::Int32, vec![4, 3])
            .zarr_format(format)
            .fill_value(FillValue::from(-1_i32))
            .zstd(3)
            .create(Arc::clone(&store), "/data/series")
            .await
            .unwrap();
        series
            .write(series.full_region(), &(0..15).collect::<Vec<i32>>())
            .await
            .unwrap();
        ArrayBuilder::new(vec![10], DataType::Float64, vec![4])
            .zarr_format(format)
            .create(Arc::clone(&store), "/data/grid")
            .await
            .unwrap();
        ArrayBuilder::new(vec![3], DataType::UInt8, vec![3])
            .zarr_format(format)
            .create(Arc::clone(&store), "/old")
            .await
            .unwrap();
        let mut data = Group::open(Arc::clone(&store), "/data").await.unwrap();
        data.consolidate_metadata().await.unwrap();
        let mut top = Group::open(Arc::clone(&store), "/").await.unwrap();
        top.consolidate_metadata().await.unwrap();

        let mut series = Array::open(Arc::clone(&store), "/data/series")
            .await
            .unwrap();
        series.append(0, &[15, 16, 17, 18, 19, 20]).await.unwrap();
        series
            .update_attributes(json!({"units": "K"}).as_object().unwrap().clone())
            .await
            .unwrap();
        let mut grid = Array::open(Arc::clone(&store), "/data/grid").await.unwrap();
        grid.resize(vec![6]).await.unwrap();
        data.set_attributes(json!({"kind": "measurements"}).as_object().unwrap().clone())
            .await
            .unwrap();
        top.update_attributes(json!({"title": "changed"}).as_object().unwrap().clone())
            .await
            .unwrap();
        // Replaced by a new array: it leaves the records, which then list nothing stale.
        ArrayBuilder::new(vec![4], DataType::UInt8, vec![4])
            .zarr_format(format)
            .overwrite(true)
            .create(Arc::clone(&store), "/old")
            .await
            .unwrap();

        let number = if format == ZarrFormat::V3 { "3" } else { "2" };
        for (group, paths) in [
            (root.clone(), vec!["data", "data/series", "data/grid"]),
            (root.join("data"), vec!["series", "grid"]),
        ] {
            let mut args = vec!["consolidated-check", group.to_str().unwrap(), number];
            args.extend(paths.iter().copied());
            let report: Value = serde_json::from_str(&run_peer(&python, &args)).unwrap();
            assert_eq!(
                report["problems"],
                json!([]),
                "{format} {}",
                group.display()
            );
            let nodes = &report["nodes"];
            let prefix = if group == root { "data/" } else { "" };
            assert_eq!(nodes[format!("{prefix}series")]["shape"], json!([7, 3]));
            assert_eq!(
                nodes[format!("{prefix}series")]["attributes"],
                json!({"units": "K"})
            );
            assert_eq!(nodes[format!("{prefix}grid")]["shape"], json!([6]));
            if group == root {
                assert_eq!(nodes[""]["attributes"], json!({"title": "changed"}));
                assert_eq!(nodes["data"]["attributes"], json!({"kind": "measurements"}));
            } else {
                assert_eq!(nodes[""]["attributes"], json!({"kind": "measurements"}));
            }
        }
    }
    eprintln!("zarr-python saw every change through the consolidated records, v3 and v2");
}

/// The values of an N5 dataset of `data_type` as JSON numbers (the manifest's form).
async fn n5_values<S>(array: &Array<S>, data_type: &str) -> Vec<Value>
where
    S: zarr_store::ReadableStore + ?Sized,
{
    macro_rules! read {
        ($t:ty) => {
            array
                .read::<$t>(..)
                .await
                .unwrap()
                .into_iter()
                .map(|v| json!(v))
                .collect()
        };
    }
    match data_type {
        "uint8" => read!(u8),
        "uint16" => read!(u16),
        "uint32" => read!(u32),
        "uint64" => read!(u64),
        "int8" => read!(i8),
        "int16" => read!(i16),
        "int32" => read!(i32),
        "int64" => read!(i64),
        "float32" => array
            .read::<f32>(..)
            .await
            .unwrap()
            .into_iter()
            .map(|v| json!(f64::from(v)))
            .collect(),
        "float64" => read!(f64),
        other => panic!("no N5 data type {other}"),
    }
}

/// `values` (JSON numbers) written to all of `array` as `data_type`.
async fn n5_write<S>(array: &Array<S>, data_type: &str, region: Vec<Range<u64>>, values: &[Value])
where
    S: zarr_store::WritableStore + ?Sized,
{
    macro_rules! write {
        ($t:ty, $get:ident) => {{
            let typed: Vec<$t> = values.iter().map(|v| v.$get().unwrap() as $t).collect();
            array.write(region, &typed).await.unwrap()
        }};
    }
    match data_type {
        "uint8" => write!(u8, as_u64),
        "uint16" => write!(u16, as_u64),
        "uint32" => write!(u32, as_u64),
        "uint64" => write!(u64, as_u64),
        "int8" => write!(i8, as_i64),
        "int16" => write!(i16, as_i64),
        "int32" => write!(i32, as_i64),
        "int64" => write!(i64, as_i64),
        "float32" => write!(f32, as_f64),
        "float64" => write!(f64, as_f64),
        other => panic!("no N5 data type {other}"),
    }
}

/// tensorstore's N5 containers read through `N5Store`, and ours read by tensorstore: every N5
/// data type and compression, edge blocks, blocks never written, nested and implicit groups.
#[tokio::test]
async fn n5_containers_interoperate_with_tensorstore() {
    use zarr_store::N5Store;

    let Some(python) = python("n5_containers_interoperate_with_tensorstore") else {
        return;
    };
    let (_guard, dir) = work_dir("n5");
    let theirs = dir.join("theirs");
    run_peer(&python, &["n5-write", theirs.to_str().unwrap()]);
    let manifest: Vec<Value> =
        serde_json::from_slice(&std::fs::read(theirs.join("manifest.json")).unwrap()).unwrap();
    let store = Arc::new(N5Store::new(FilesystemStore::new(&theirs).unwrap()));
    let root = Group::open(Arc::clone(&store), "/").await.unwrap();
    assert_eq!(root.attributes()["title"], "n5 interop");
    let tree: Vec<String> = root
        .tree()
        .await
        .unwrap()
        .into_iter()
        .map(|(path, _)| path.as_str().to_owned())
        .collect();
    for path in [
        "/groups",
        "/groups/inner",
        "/groups/inner/raw_i8",
        "/zstd_u64",
    ] {
        assert!(tree.contains(&path.to_owned()), "{path} not in {tree:?}");
    }
    let groups = Group::open(Arc::clone(&store), "/groups").await.unwrap();
    assert_eq!(groups.attributes()["scale"], json!([1.5, 2]));
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let data_type = entry["data_type"].as_str().unwrap();
        let array = Array::open(Arc::clone(&store), path).await.unwrap();
        assert_eq!(array.shape(), shape_of(&entry["shape"]), "{path}");
        let values = n5_values(&array, data_type).await;
        assert_eq!(&values, entry["values"].as_array().unwrap(), "{path}");
    }

    // Ours: the same datasets with their compressions, written through the wrapper (blocks
    // of the first rows only where tensorstore wrote so), for tensorstore to read.
    let ours = dir.join("ours");
    let store = Arc::new(N5Store::new(FilesystemStore::new(&ours).unwrap()));
    Group::create(Arc::clone(&store), "/").await.unwrap();
    for entry in &manifest {
        let path = entry["path"].as_str().unwrap();
        let data_type = entry["data_type"].as_str().unwrap();
        let theirs_array = Array::open(
            Arc::new(N5Store::new(FilesystemStore::new(&theirs).unwrap())),
            path,
        )
        .await
        .unwrap();
        // The same metadata, codecs included: each compression written by our codecs.
        let document = theirs_array.metadata().to_json_pretty().unwrap();
        let key = zarr_store::StoreKey::new(&format!("{path}/zarr.json"));
        zarr_store::WritableStore::set(&*store, &key, document.into())
            .await
            .unwrap();
        let array = Array::open(Arc::clone(&store), path).await.unwrap();
        let shape = shape_of(&entry["shape"]);
        let region: Vec<Range<u64>> = shape.iter().map(|&n| 0..n).collect();
        n5_write(
            &array,
            data_type,
            region,
            entry["values"].as_array().unwrap(),
        )
        .await;
    }
    std::fs::write(
        ours.join("manifest.json"),
        serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();
    let root: Value =
        serde_json::from_slice(&std::fs::read(ours.join("attributes.json")).unwrap()).unwrap();
    assert_eq!(root["n5"], "4.0.0");
    let out = run_peer(&python, &["n5-read", ours.to_str().unwrap()]);
    assert_eq!(out.lines().count(), manifest.len(), "{out}");
}
