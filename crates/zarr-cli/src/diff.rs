//! `zarr diff`: compare two arrays, or two hierarchies, value for value.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Map, Value};
use zarr::array::{Array, ArrayBytes, Group, Node, Region};
use zarr::metadata::v2::ZarrFormat;
use zarr::metadata::{ArrayMetadata, DataType, NodePath};
use zarr::store::Store;

use crate::copy::xarray_dimensions;
use crate::format::{Style, element, variable_element};
use crate::layout::{Layout, chunking_text, codec_text, shape_text};
use crate::region::{element_index, element_text};
use crate::target::{Access, resolve};
use crate::walk::children;
use crate::{TargetArgs, outln};

/// Bytes read from each side per slab: two slabs are in memory at a time.
const SLAB_BYTES: u64 = 64 << 20;

/// The bytes per variable-length element assumed when cutting slabs.
const VARIABLE_GUESS: u64 = 16;

/// Arguments of `zarr diff`.
#[derive(Args, Debug)]
pub(crate) struct DiffArgs {
    /// The first array or group: a local path or a URL.
    a: String,
    /// The second.
    b: String,
    /// The first node's path inside A (A is then the store root).
    #[arg(long, value_name = "NODE")]
    a_path: Option<String>,
    /// The second node's path inside B (B is then the store root).
    #[arg(long, value_name = "NODE")]
    b_path: Option<String>,
    /// Show at most this many differing elements per array (their index and both values).
    #[arg(long, default_value_t = 5, value_name = "N")]
    show: usize,
    /// Compare metadata only: shapes, data types, fill values, attributes and dimension
    /// names, not values.
    #[arg(long)]
    metadata_only: bool,
    /// Also show where arrays are stored differently (chunking, codecs, chunk key encoding,
    /// Zarr format); that changes no value and is not counted as a difference.
    #[arg(long)]
    layout: bool,
}

/// What a comparison found.
#[derive(Default)]
struct Report {
    /// Differences: each makes the exit code 1.
    differences: usize,
    /// Arrays and groups compared, and elements compared.
    arrays: usize,
    groups: usize,
    elements: u64,
}

impl Report {
    fn differ(&mut self, label: &str, text: &str) -> Result<()> {
        self.differences += 1;
        outln!("{label}: {text}");
        Ok(())
    }
}

pub(crate) async fn run(args: DiffArgs) -> Result<()> {
    let a = resolve(
        &TargetArgs {
            target: args.a.clone(),
            path: args.a_path.clone(),
        },
        Access::Read,
    )?;
    let b = resolve(
        &TargetArgs {
            target: args.b.clone(),
            path: args.b_path.clone(),
        },
        Access::Read,
    )?;
    let mut report = Report::default();
    match (a.node().await?, b.node().await?) {
        (Node::Array(x), Node::Array(y)) => compare_arrays(&x, &y, "/", &args, &mut report).await?,
        (Node::Group(x), Node::Group(y)) => compare_groups(&x, &y, &args, &mut report).await?,
        (x, y) => report.differ("/", &format!("{} in A, {} in B", kind(&x), kind(&y)))?,
    }
    let compared = format!(
        "{} array{} and {} group{}{}",
        report.arrays,
        plural(report.arrays),
        report.groups,
        plural(report.groups),
        if args.metadata_only {
            ", metadata only".to_owned()
        } else {
            format!(", {} elements", report.elements)
        }
    );
    if report.differences > 0 {
        bail!(
            "{} and {} differ: {} difference{} ({compared})",
            a.describe(),
            b.describe(),
            report.differences,
            plural(report.differences)
        );
    }
    outln!(
        "{} and {} are the same ({compared})",
        a.describe(),
        b.describe()
    );
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn kind(node: &Node<dyn Store>) -> &'static str {
    match node {
        Node::Array(_) => "an array",
        Node::Group(_) => "a group",
    }
}

/// Every node below `group`, by path relative to it (`a/b`), each opened from its own
/// metadata (not from a consolidated record, which may be stale), or with the error that
/// opening it gave.
async fn nodes_below(
    group: &Group<dyn Store>,
) -> Result<BTreeMap<String, Result<Node<dyn Store>, String>>> {
    let base = group.path().names().count();
    let relative = |path: &NodePath| path.names().skip(base).collect::<Vec<_>>().join("/");
    let mut out = BTreeMap::new();
    let mut pending = vec![group.clone()];
    while let Some(parent) = pending.pop() {
        for found in children(&parent).await? {
            if let Ok(Node::Group(child)) = &found.node {
                pending.push(child.clone());
            }
            out.insert(relative(&found.path), found.node);
        }
    }
    Ok(out)
}

async fn compare_groups(
    x: &Group<dyn Store>,
    y: &Group<dyn Store>,
    args: &DiffArgs,
    report: &mut Report,
) -> Result<()> {
    report.groups += 1;
    compare_attributes("/", x.attributes(), y.attributes(), report)?;
    let (mut xs, mut ys) = (nodes_below(x).await?, nodes_below(y).await?);
    let paths: Vec<String> = xs
        .keys()
        .chain(ys.keys())
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for path in paths {
        let label = format!("/{path}");
        match (xs.remove(&path), ys.remove(&path)) {
            (Some(_), None) => report.differ(&label, "only in A")?,
            (None, Some(_)) => report.differ(&label, "only in B")?,
            (Some(Err(e)), _) => report.differ(&label, &format!("cannot be read in A: {e}"))?,
            (_, Some(Err(e))) => report.differ(&label, &format!("cannot be read in B: {e}"))?,
            (Some(Ok(Node::Array(a))), Some(Ok(Node::Array(b)))) => {
                compare_arrays(&a, &b, &label, args, report).await?;
            }
            (Some(Ok(Node::Group(a))), Some(Ok(Node::Group(b)))) => {
                report.groups += 1;
                compare_attributes(&label, a.attributes(), b.attributes(), report)?;
            }
            (Some(Ok(a)), Some(Ok(b))) => {
                report.differ(&label, &format!("{} in A, {} in B", kind(&a), kind(&b)))?;
            }
            (None, None) => {}
        }
    }
    Ok(())
}

/// A JSON value in one line, for messages.
fn json_text(value: &Value) -> String {
    value.to_string()
}

fn compare_attributes(
    label: &str,
    x: &Map<String, Value>,
    y: &Map<String, Value>,
    report: &mut Report,
) -> Result<()> {
    if x == y {
        return Ok(());
    }
    let mut parts = Vec::new();
    for (key, value) in x {
        match y.get(key) {
            None => parts.push(format!("{key:?} only in A")),
            Some(other) if other != value => parts.push(format!(
                "{key:?} is {} in A, {} in B",
                json_text(value),
                json_text(other)
            )),
            Some(_) => {}
        }
    }
    for key in y.keys().filter(|key| !x.contains_key(*key)) {
        parts.push(format!("{key:?} only in B"));
    }
    report.differ(label, &format!("attributes differ: {}", parts.join("; ")))
}

fn fill_text(metadata: &ArrayMetadata) -> String {
    metadata
        .fill_value
        .to_json(&metadata.data_type)
        .map_or_else(|_| "?".to_owned(), |v| v.to_string())
}

/// How two arrays are stored differently: the Zarr format, the chunking, the codecs (of
/// the inner chunks when sharded) and the chunk key encoding, each where they differ.
fn layout_differences(x: &Array<dyn Store>, y: &Array<dyn Store>) -> Vec<String> {
    let codecs = |metadata: &ArrayMetadata| {
        let list = Layout::of(metadata).map_or_else(|_| metadata.codecs.clone(), |l| l.codecs);
        let names: Vec<String> = list.iter().map(codec_text).collect();
        format!("[{}]", names.join(", "))
    };
    let (mx, my) = (x.metadata(), y.metadata());
    let mut out = Vec::new();
    let mut part = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{what}{a} in A, {b} in B"));
        }
    };
    part(
        "Zarr ",
        format!("v{}", x.zarr_format()),
        format!("v{}", y.zarr_format()),
    );
    part("", chunking_text(mx), chunking_text(my));
    part("codecs ", codecs(mx), codecs(my));
    part(
        "chunk keys ",
        mx.chunk_key_encoding.to_json().to_string(),
        my.chunk_key_encoding.to_json().to_string(),
    );
    out
}

/// An array's dimension names and attributes, with a Zarr v2 array's (or an N5 dataset's)
/// names taken from xarray's `_ARRAY_DIMENSIONS` attribute when it names every dimension
/// (as `zarr copy` moves them between the formats).
fn named(array: &Array<dyn Store>) -> (Option<Vec<Option<String>>>, Map<String, Value>) {
    let metadata = array.metadata();
    let mut attributes = metadata.attributes.clone();
    let n5 = matches!(metadata.codecs.as_slice(), [codec] if codec.name == "n5_default");
    // (A v2 array's `dimension_names` are the attribute's already.)
    if (array.zarr_format() == ZarrFormat::V2 || (n5 && metadata.dimension_names.is_none()))
        && let Some(names) = xarray_dimensions(&attributes, metadata.shape.len())
    {
        attributes.remove("_ARRAY_DIMENSIONS");
        return (Some(names.into_iter().map(Some).collect()), attributes);
    }
    (metadata.dimension_names.clone(), attributes)
}

async fn compare_arrays(
    x: &Array<dyn Store>,
    y: &Array<dyn Store>,
    label: &str,
    args: &DiffArgs,
    report: &mut Report,
) -> Result<()> {
    report.arrays += 1;
    let (mx, my) = (x.metadata(), y.metadata());
    let mut comparable = true;
    if mx.shape != my.shape {
        report.differ(
            label,
            &format!(
                "shape {} in A, {} in B",
                shape_text(&mx.shape),
                shape_text(&my.shape)
            ),
        )?;
        comparable = false;
    }
    if mx.data_type != my.data_type {
        report.differ(
            label,
            &format!("data type {} in A, {} in B", mx.data_type, my.data_type),
        )?;
        // Numbers of two types are still compared, by value (a `zarr copy --data-type`).
        comparable &=
            number_reader(&mx.data_type).is_some() && number_reader(&my.data_type).is_some();
    } else if mx.fill_value != my.fill_value {
        report.differ(
            label,
            &format!("fill value {} in A, {} in B", fill_text(mx), fill_text(my)),
        )?;
    }
    let ((names_x, attributes_x), (names_y, attributes_y)) = (named(x), named(y));
    if names_x != names_y {
        let text = |names: &Option<Vec<Option<String>>>| match names {
            Some(names) => json_text(&serde_json::json!(names)),
            None => "none".to_owned(),
        };
        report.differ(
            label,
            &format!(
                "dimension names {} in A, {} in B",
                text(&names_x),
                text(&names_y)
            ),
        )?;
    }
    compare_attributes(label, &attributes_x, &attributes_y, report)?;
    if args.layout {
        // Not a difference in content: values read the same whatever the layout.
        let layout = layout_differences(x, y);
        if !layout.is_empty() {
            outln!("{label}: layout only: {}", layout.join("; "));
        }
    }
    if !comparable || args.metadata_only {
        return Ok(());
    }
    compare_values(x, y, label, args, report).await
}

/// `region` as `[0:64, 128:256]`.
fn region_text(region: &Region) -> String {
    let ranges: Vec<String> = region
        .ranges()
        .iter()
        .map(|r| format!("{}:{}", r.start, r.end))
        .collect();
    format!("[{}]", ranges.join(", "))
}

/// A number of an array of integers or floats, for comparing values across data types.
#[derive(Debug, Clone, Copy)]
enum Number {
    Integer(i128),
    Float(f64),
}

impl Number {
    /// Whether the two are the same number: exactly, an integer equal to a float only when
    /// the float is that whole number; `0.0` equals `-0.0`, and a NaN equals a NaN.
    fn same(self, other: Self) -> bool {
        match (self, other) {
            (Self::Integer(a), Self::Integer(b)) => a == b,
            (Self::Float(a), Self::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Self::Integer(i), Self::Float(f)) | (Self::Float(f), Self::Integer(i)) => {
                // Whole floats below 2^127 in magnitude convert to `i128` exactly.
                f.fract() == 0.0 && f.abs() < 2f64.powi(127) && f as i128 == i
            }
        }
    }
}

/// How to read one element of `data_type` as a [`Number`], for the integer and float types
/// (bool, fixed-point and complex numbers included: no); `None` for the others.
fn number_reader(data_type: &DataType) -> Option<fn(&[u8]) -> Number> {
    fn ne<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&b[..N]);
        out
    }
    use Number::{Float, Integer};
    Some(match data_type {
        DataType::Int2 => |b| Integer(i128::from(((b[0] << 6) as i8) >> 6)),
        DataType::Int4 => |b| Integer(i128::from(((b[0] << 4) as i8) >> 4)),
        DataType::UInt2 => |b| Integer(i128::from(b[0] & 0x3)),
        DataType::UInt4 => |b| Integer(i128::from(b[0] & 0xf)),
        DataType::Int8 => |b| Integer(i128::from(b[0] as i8)),
        DataType::Int16 => |b| Integer(i128::from(i16::from_ne_bytes(ne(b)))),
        DataType::Int32 => |b| Integer(i128::from(i32::from_ne_bytes(ne(b)))),
        DataType::Int64 => |b| Integer(i128::from(i64::from_ne_bytes(ne(b)))),
        DataType::UInt8 => |b| Integer(i128::from(b[0])),
        DataType::UInt16 => |b| Integer(i128::from(u16::from_ne_bytes(ne(b)))),
        DataType::UInt32 => |b| Integer(i128::from(u32::from_ne_bytes(ne(b)))),
        DataType::UInt64 => |b| Integer(i128::from(u64::from_ne_bytes(ne(b)))),
        DataType::Float16 => |b| Float(half::f16::from_ne_bytes(ne(b)).to_f64()),
        DataType::BFloat16 => |b| Float(half::bf16::from_ne_bytes(ne(b)).to_f64()),
        DataType::Float32 => |b| Float(f64::from(f32::from_ne_bytes(ne(b)))),
        DataType::Float64 => |b| Float(f64::from_ne_bytes(ne(b))),
        _ => return None,
    })
}

/// Compare the values of two arrays of one shape, in slabs aligned to A's chunks, element
/// by element: of one data type bit for bit (`-0.0` is not `0.0`, and NaNs compare by
/// their bits); of two numeric types by value ([`Number::same`]).
async fn compare_values(
    x: &Array<dyn Store>,
    y: &Array<dyn Store>,
    label: &str,
    args: &DiffArgs,
    report: &mut Report,
) -> Result<()> {
    let metadata = x.metadata();
    let data_type = &metadata.data_type;
    let data_type_b = &y.metadata().data_type;
    // Two data types: both numeric (see `compare`), read as numbers.
    let numbers = if data_type == data_type_b {
        None
    } else {
        number_reader(data_type).zip(number_reader(data_type_b))
    };
    let element_bytes = data_type
        .fixed_size()
        .max(data_type_b.fixed_size())
        .map_or(VARIABLE_GUESS, |n| n.max(1) as u64);
    let mut differing = 0u64;
    let mut shown = Vec::new();
    for slab in x.split_region(.., (SLAB_BYTES / element_bytes).max(1))? {
        let (a, b) = tokio::join!(x.read_array_bytes(&slab), y.read_array_bytes(&slab));
        let reading = |side: &str| format!("{label} in {side}: reading {}", region_text(&slab));
        let a = a.with_context(|| reading("A"))?;
        let b = b.with_context(|| reading("B"))?;
        let mut note = |i: usize, va: &[u8], vb: &[u8], variable: bool| {
            differing += 1;
            if shown.len() < args.show {
                let text = |v: &[u8], data_type: &DataType| {
                    let mut out = String::new();
                    if variable {
                        variable_element(&mut out, data_type, v, Style::Text);
                    } else {
                        element(&mut out, data_type, v, Style::Text);
                    }
                    out
                };
                shown.push(format!(
                    "{}: {} in A, {} in B",
                    element_text(&element_index(&slab, i as u64)),
                    text(va, data_type),
                    text(vb, data_type_b)
                ));
            }
        };
        match (&a, &b, numbers) {
            (ArrayBytes::Fixed(a), ArrayBytes::Fixed(b), Some((read_a, read_b))) => {
                let (size_a, size_b) = (
                    data_type.fixed_size().unwrap_or(1).max(1),
                    data_type_b.fixed_size().unwrap_or(1).max(1),
                );
                for (i, (va, vb)) in a
                    .chunks_exact(size_a)
                    .zip(b.chunks_exact(size_b))
                    .enumerate()
                {
                    if !read_a(va).same(read_b(vb)) {
                        note(i, va, vb, false);
                    }
                }
            }
            (ArrayBytes::Fixed(a), ArrayBytes::Fixed(b), None) => {
                if a != b {
                    let size = data_type.fixed_size().unwrap_or(1).max(1);
                    for (i, (va, vb)) in a.chunks_exact(size).zip(b.chunks_exact(size)).enumerate()
                    {
                        if va != vb {
                            note(i, va, vb, false);
                        }
                    }
                }
            }
            (ArrayBytes::Variable(a), ArrayBytes::Variable(b), None) => {
                for (i, (va, vb)) in a.iter().zip(b.iter()).enumerate() {
                    if va != vb {
                        note(i, va, vb, true);
                    }
                }
            }
            _ => bail!("{label}: the two arrays hold their elements differently"),
        }
        report.elements += slab.num_elements()?;
    }
    let by_value = if numbers.is_some() { " in value" } else { "" };
    if differing > 0 {
        report.differ(
            label,
            &format!(
                "{differing} of {} elements differ{by_value}{}",
                x.full_region().num_elements()?,
                if shown.len() as u64 == differing {
                    ":".to_owned()
                } else if shown.is_empty() {
                    String::new()
                } else {
                    format!(", the first {}:", shown.len())
                }
            ),
        )?;
        for line in shown {
            outln!("  {line}");
        }
    } else if numbers.is_some() {
        // Not a difference: what the data type line above leaves open.
        outln!(
            "{label}: all {} elements equal in value",
            x.full_region().num_elements()?
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Number::{Float, Integer};

    #[test]
    fn numbers_of_two_types_are_the_same_by_value_only() {
        assert!(Integer(3).same(Float(3.0)) && Float(3.0).same(Integer(3)));
        assert!(!Integer(3).same(Float(3.5)));
        assert!(Float(0.0).same(Float(-0.0)) && Integer(0).same(Float(-0.0)));
        assert!(Float(f64::NAN).same(Float(-f64::NAN)));
        assert!(!Float(f64::NAN).same(Integer(0)));
        // 2^60 + 1 is no float64: the nearest float is another number.
        let big = (1i128 << 60) + 1;
        assert!(!Integer(big).same(Float(big as f64)));
        assert!(Integer(1 << 60).same(Float(2f64.powi(60))));
        // Beyond i128 and infinities never equal an integer (no saturating conversion).
        assert!(!Integer(i128::MAX).same(Float(1e40)));
        assert!(!Integer(i128::MIN).same(Float(f64::NEG_INFINITY)));
        assert!(Integer(-5).same(Integer(-5)) && !Integer(-5).same(Integer(5)));
    }
}
