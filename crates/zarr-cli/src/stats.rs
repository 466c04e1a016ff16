//! `zarr stats`: summary statistics of an array's values, read part by part.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use futures::StreamExt as _;
use serde_json::{Value as Json, json};
use zarr::array::{Array, Node, Region};
use zarr::metadata::{DataType, NodeMetadata};
use zarr::store::Store;

use crate::format::{Style, element};
use crate::layout::shape_text;
use crate::outln;
use crate::region::{Selection, parse_selection};
use crate::target::{Access, resolve};
use crate::{TargetArgs, error_line, usage, walk};

/// Arguments of `zarr stats`.
#[derive(Args, Debug)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The region, numpy-like, as `zarr get` takes it (`0:10,:,5`, `::2`, `[1,5],...`;
    /// default: the whole array).
    #[arg(short, long, allow_hyphen_values = true)]
    region: Option<String>,
    /// Print the statistics as one JSON object.
    #[arg(long)]
    json: bool,
    /// The most data read at a time (whole chunks, at least one); two parts are in memory
    /// at a time.
    #[arg(long, default_value = "64M", value_parser = crate::region::parse_size, value_name = "SIZE")]
    part_size: u64,
}

/// A value the statistics are taken over: ordered, convertible to `f64`.
trait Number: Copy + PartialOrd {
    /// The bytes one element takes in a chunk.
    const SIZE: usize = std::mem::size_of::<Self>();
    /// What a piece's values are summed in: exact integers for integer types (a piece of
    /// [`PIECE`] elements cannot overflow it), `f64` for floats.
    type Sum: Copy + Default + std::ops::Add<Output = Self::Sum>;
    fn to_f64(self) -> f64;
    /// The value as a term of a sum (0 for a NaN, which no mean takes in).
    fn term(self) -> Self::Sum;
    fn sum_to_f64(sum: Self::Sum) -> f64;
    /// The value's bits, for comparing with the fill value bit for bit.
    fn bits(self) -> u64;
    /// Whether the value is a NaN (which no ordering or mean takes in).
    fn is_nan(self) -> bool {
        false
    }
}

macro_rules! integer {
    ($($t:ty => $sum:ty),*) => {$(
        impl Number for $t {
            type Sum = $sum;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn term(self) -> $sum {
                <$sum>::from(self)
            }
            fn sum_to_f64(sum: $sum) -> f64 {
                sum as f64
            }
            fn bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}
integer!(
    i8 => i64, i16 => i64, i32 => i64, i64 => i128,
    u8 => i64, u16 => i64, u32 => i64, u64 => i128
);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Number for $t {
            type Sum = f64;
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn term(self) -> f64 {
                if self.is_nan() { 0.0 } else { f64::from(self) }
            }
            fn sum_to_f64(sum: f64) -> f64 {
                sum
            }
            fn bits(self) -> u64 {
                u64::from(self.to_bits())
            }
            fn is_nan(self) -> bool {
                self.is_nan()
            }
        }
    )*};
}
float!(f32, f64, half::f16, half::bf16);

/// A `numpy.datetime64` or `numpy.timedelta64` value: its stored count of the type's unit.
/// `i64::MIN` is NaT, which (like a NaN) equals nothing and is in no ordering or mean.
#[derive(Debug, Clone, Copy)]
struct Time(i64);

impl Time {
    const NAT: i64 = i64::MIN;
}

impl PartialEq for Time {
    fn eq(&self, other: &Self) -> bool {
        self.0 != Self::NAT && self.0 == other.0
    }
}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (self.0 != Self::NAT && other.0 != Self::NAT).then(|| self.0.cmp(&other.0))
    }
}

impl Number for Time {
    type Sum = i128;
    fn to_f64(self) -> f64 {
        self.0 as f64
    }
    fn term(self) -> i128 {
        if self.0 == Self::NAT {
            0
        } else {
            i128::from(self.0)
        }
    }
    fn sum_to_f64(sum: i128) -> f64 {
        sum as f64
    }
    fn bits(self) -> u64 {
        self.0 as u64
    }
    fn is_nan(self) -> bool {
        self.0 == Self::NAT
    }
}

/// A value of a float format of 8 bits or fewer (`float8_e4m3fn`, `float4_e2m1fn`, ...):
/// its value and its stored byte (what the fill value is compared with). Ordered by value.
#[derive(Debug, Clone, Copy)]
struct Mini {
    value: f64,
    code: u8,
}

impl PartialEq for Mini {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl PartialOrd for Mini {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.value.partial_cmp(&other.value)
    }
}

impl Number for Mini {
    const SIZE: usize = 1;
    type Sum = f64;
    fn to_f64(self) -> f64 {
        self.value
    }
    fn term(self) -> f64 {
        if self.value.is_nan() { 0.0 } else { self.value }
    }
    fn sum_to_f64(sum: f64) -> f64 {
        sum
    }
    fn bits(self) -> u64 {
        u64::from(self.code)
    }
    fn is_nan(self) -> bool {
        self.value.is_nan()
    }
}

/// How to read one element of a data type: its size, a decoder of its bytes, and what the
/// decoded values are divided by for the mean and standard deviation (the scale of a
/// fixed-point type, whose stored integers are folded; 1 otherwise).
struct Decoder<F> {
    size: usize,
    decode: F,
    scale: f64,
}

fn bytes<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&b[..N]);
    out
}

/// Elements per piece of a part that one thread folds.
const PIECE: usize = 1 << 16;

/// Interleaved sums per piece (see [`Partial::of`]).
const LANES: usize = 4;

/// The statistics of a run of consecutive elements of one part.
struct Partial<V> {
    elements: u64,
    nan: u64,
    fill: u64,
    /// Elements other than NaN, and their mean and sum of squared deviations from it.
    count: u64,
    mean: f64,
    m2: f64,
    /// The least and greatest values and their element numbers in the part (the first
    /// where several are equal).
    least: Option<(V, usize)>,
    greatest: Option<(V, usize)>,
}

impl<V: Number> Partial<V> {
    /// The statistics of `bytes`, whose first element is element `first` of its part.
    ///
    /// Two passes: counts, sum and extremes with no branch on the values (a NaN never wins
    /// a comparison, and sums as 0), in [`LANES`] interleaved sums so that no chain of
    /// additions waits on the one before; then the squared deviations from this run's own
    /// mean (accurate where one pass of sums of squares is not) and where the extremes
    /// first occur.
    fn of(bytes: &[u8], first: usize, decode: impl Fn(&[u8]) -> V, fill: u64) -> Self {
        let size = V::SIZE;
        let values = || bytes.chunks_exact(size).map(&decode);
        let elements = (bytes.len() / size) as u64;
        // The extremes start at the first value that is not a NaN (if none, they are unused).
        let Some(start) = values().find(|v| !v.is_nan()).or_else(|| values().next()) else {
            return Self::empty();
        };
        // Separate simple passes over the piece (in the cache by now), each of which the
        // compiler turns into vector instructions where the type allows.
        let fills = values().filter(|v| v.bits() == fill).count() as u64;
        let nan = values().filter(|v| v.is_nan()).count() as u64;
        let (lo, hi) = values().fold((start, start), |(lo, hi), v| {
            (if v < lo { v } else { lo }, if v > hi { v } else { hi })
        });
        let mut sums = [V::Sum::default(); LANES];
        let mut groups = bytes.chunks_exact(LANES * size);
        for group in &mut groups {
            for (lane, sum) in sums.iter_mut().enumerate() {
                *sum = *sum + decode(&group[lane * size..(lane + 1) * size]).term();
            }
        }
        for b in groups.remainder().chunks_exact(size) {
            sums[0] = sums[0] + decode(b).term();
        }
        let sum = V::sum_to_f64(sums.into_iter().fold(V::Sum::default(), |a, b| a + b));
        let count = elements - nan;
        if count == 0 {
            return Self {
                elements,
                nan,
                fill: fills,
                ..Self::empty()
            };
        }
        let mean = sum / count as f64;
        let mut m2s = [0.0f64; LANES];
        let deviation = |v: V| {
            if v.is_nan() {
                0.0
            } else {
                let d = v.to_f64() - mean;
                d * d
            }
        };
        let mut groups = bytes.chunks_exact(LANES * size);
        for group in &mut groups {
            for (lane, m2) in m2s.iter_mut().enumerate() {
                *m2 += deviation(decode(&group[lane * size..(lane + 1) * size]));
            }
        }
        for b in groups.remainder().chunks_exact(size) {
            m2s[0] += deviation(decode(b));
        }
        // The first element equal to each extreme (equal, not identical: 0.0 and -0.0 are
        // one value, the first of them is the one kept).
        let at = |x: V| first + values().position(|v| v == x).unwrap_or(0);
        Self {
            elements,
            nan,
            fill: fills,
            count,
            mean,
            m2: m2s.iter().sum(),
            least: Some((lo, at(lo))),
            greatest: Some((hi, at(hi))),
        }
    }

    /// The statistics of no elements.
    fn empty() -> Self {
        Self {
            elements: 0,
            nan: 0,
            fill: 0,
            count: 0,
            mean: 0.0,
            m2: 0.0,
            least: None,
            greatest: None,
        }
    }

    /// The statistics of this run followed by `next`, the next one (Chan, Golub and
    /// LeVeque's formula for the merged squared deviations).
    fn then(self, next: Self) -> Self {
        let count = self.count + next.count;
        let (mean, m2) = if count == 0 {
            (0.0, 0.0)
        } else {
            let delta = next.mean - self.mean;
            let (a, b) = (self.count as f64, next.count as f64);
            (
                self.mean + delta * b / count as f64,
                self.m2 + next.m2 + delta * delta * a * b / count as f64,
            )
        };
        // On equal values the earlier run's element stays (it comes first).
        let least = match (self.least, next.least) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        let greatest = match (self.greatest, next.greatest) {
            (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        Self {
            elements: self.elements + next.elements,
            nan: self.nan + next.nan,
            fill: self.fill + next.fill,
            count,
            mean,
            m2,
            least,
            greatest,
        }
    }
}

/// The statistics of `bytes` (elements of `size` bytes), folded in pieces of `piece`
/// elements on rayon's threads; `None` for no bytes.
fn fold<V: Number + Send, F: Fn(&[u8]) -> V + Sync>(
    bytes: &[u8],
    decode: &F,
    fill: &[u8],
    piece: usize,
) -> Option<Partial<V>> {
    use rayon::prelude::*;
    let fill = decode(fill).bits();
    bytes
        .par_chunks(piece * V::SIZE)
        .enumerate()
        .map(|(k, run)| Partial::of(run, k * piece, decode, fill))
        .reduce_with(Partial::then)
}

/// The statistics of the elements seen so far.
struct Stats<V> {
    /// Counts and moments of the parts so far (their `least` and `greatest` unused).
    seen: Partial<V>,
    /// The least and the greatest element: value, bytes, index in the array (the first
    /// in C order where several are equal).
    min: Option<(V, Vec<u8>, Vec<u64>)>,
    max: Option<(V, Vec<u8>, Vec<u64>)>,
}

impl<V: Number + Send + Sync> Stats<V> {
    fn new() -> Self {
        Self {
            seen: Partial::empty(),
            min: None,
            max: None,
        }
    }

    /// Take in the elements of one part (`bytes`, in C order), `index(i)` naming the array
    /// index of its element `i`. The part is folded in pieces on rayon's threads.
    fn add_part<F: Fn(&[u8]) -> V + Sync>(
        &mut self,
        bytes: &[u8],
        decoder: &Decoder<F>,
        fill: &[u8],
        index: impl Fn(u64) -> Vec<u64>,
    ) {
        let size = decoder.size;
        let Some(part) = fold(bytes, &decoder.decode, fill, PIECE) else {
            return;
        };
        let (least, greatest) = (part.least, part.greatest);
        let seen = std::mem::replace(&mut self.seen, Self::new().seen);
        self.seen = seen.then(Partial {
            least: None,
            greatest: None,
            ..part
        });
        // Between parts, equal values are settled by their indices (parts cut along a later
        // dimension are not in C order of their elements).
        let keep = |kept: &mut Option<(V, Vec<u8>, Vec<u64>)>,
                    found: Option<(V, usize)>,
                    better: fn(&V, &V) -> bool| {
            let Some((v, i)) = found else {
                return;
            };
            let at = index(i as u64);
            if kept
                .as_ref()
                .is_none_or(|(m, _, m_at)| better(&v, m) || (v == *m && at < *m_at))
            {
                *kept = Some((v, bytes[i * size..(i + 1) * size].to_vec(), at));
            }
        };
        keep(&mut self.min, least, |a, b| a < b);
        keep(&mut self.max, greatest, |a, b| a > b);
    }

    /// The population standard deviation (numpy's default, `ddof=0`).
    fn std(&self) -> Option<f64> {
        (self.seen.count > 0).then(|| (self.seen.m2 / self.seen.count as f64).sqrt())
    }
}

/// What `zarr stats` says of one array (or a region of it).
struct Summary {
    data_type: String,
    /// The selection's shape.
    shape: Vec<u64>,
    elements: u64,
    nan: u64,
    fill: u64,
    /// The fill value as text.
    fill_text: String,
    min: Option<Extreme>,
    max: Option<Extreme>,
    mean: Option<f64>,
    std: Option<f64>,
    /// What the data type's values that are no number are called (`NaN`, `NaT`), if it has
    /// any.
    missing: Option<&'static str>,
}

/// The least or the greatest element: as text, as JSON, and its index in the array.
struct Extreme {
    text: String,
    json: Json,
    index: Vec<u64>,
}

impl Summary {
    fn to_json(&self) -> Json {
        let extreme = |e: &Option<Extreme>| match e {
            Some(e) => json!({"value": e.json, "index": e.index}),
            None => Json::Null,
        };
        let number = |x: Option<f64>| match x {
            Some(x) if x.is_finite() => json!(x),
            Some(x) if x.is_nan() => json!("NaN"),
            Some(x) if x > 0.0 => json!("Infinity"),
            Some(_) => json!("-Infinity"),
            None => Json::Null,
        };
        let mut doc = json!({
            "data_type": self.data_type,
            "shape": self.shape,
            "elements": self.elements,
            "fill": self.fill,
            "min": extreme(&self.min),
            "max": extreme(&self.max),
            "mean": number(self.mean),
            "std": number(self.std),
        });
        // `nat` for the NaTs of times, `nan` otherwise (0 where the type has no NaN).
        let key = if self.missing == Some("NaT") {
            "nat"
        } else {
            "nan"
        };
        doc[key] = json!(self.nan);
        doc
    }

    /// The lines for one array.
    fn lines(&self) -> Vec<String> {
        let extreme = |e: &Option<Extreme>| match e {
            Some(e) => format!("{} at {:?}", e.text, e.index),
            None => "none".to_owned(),
        };
        let number = |x: Option<f64>| x.map_or_else(|| "none".to_owned(), |x| x.to_string());
        let mut lines = vec![
            format!(
                "elements  {} ({} {})",
                self.elements,
                self.data_type,
                shape_text(&self.shape)
            ),
            format!("min       {}", extreme(&self.min)),
            format!("max       {}", extreme(&self.max)),
            format!("mean      {}", number(self.mean)),
            format!("std       {}", number(self.std)),
        ];
        if let Some(missing) = self.missing {
            lines.push(format!("{missing:<10}{}", self.nan));
        }
        lines.push(format!(
            "fill      {} equal to the fill value {}",
            self.fill, self.fill_text
        ));
        lines
    }

    /// One line for an array among others.
    fn line(&self) -> String {
        let value = |e: &Option<Extreme>| e.as_ref().map_or("none", |e| e.text.as_str()).to_owned();
        let number = |x: Option<f64>| x.map_or_else(|| "none".to_owned(), |x| x.to_string());
        let nan = if let Some(missing) = self.missing {
            format!(", {missing} {}", self.nan)
        } else {
            String::new()
        };
        format!(
            "{} {}: min {}, max {}, mean {}, std {}{nan}, fill {}",
            self.data_type,
            shape_text(&self.shape),
            value(&self.min),
            value(&self.max),
            number(self.mean),
            number(self.std),
            self.fill
        )
    }
}

/// What became of one array below a group.
enum Outcome {
    Summary(Box<Summary>),
    /// A data type the statistics do not cover (its name, and the array's shape).
    Skipped(String, Vec<u64>),
    /// It could not be opened or read (why).
    Failed(String),
}

pub(crate) async fn run(args: StatsArgs) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
    let name = target.describe();
    let group = match target.node().await? {
        Node::Array(array) => {
            let metadata = array.metadata();
            let selection = parse_selection(args.region.as_deref(), &metadata.shape)?;
            let Some(summary) = summarise(&array, &selection, args.part_size, &name).await? else {
                usage!(
                    "{name} holds {}: zarr stats takes bool, integer, float and time arrays \
                     (int2 to uint64, fixed-point, float4 to float64, numpy.datetime64 and \
                     numpy.timedelta64)",
                    metadata.data_type.name()
                );
            };
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&summary.to_json())?);
            } else {
                for line in summary.lines() {
                    outln!("{line}");
                }
            }
            return Ok(());
        }
        Node::Group(group) => group,
    };
    if args.region.is_some() {
        usage!("{name} is a group: -r selects a region of an array");
    }
    // Every array below the group, one line (or JSON entry) each; arrays of other data
    // types are named as skipped, and ones that cannot be read as failed.
    let tree = walk::tree(&group)
        .await
        .with_context(|| format!("walking {name}"))?;
    let mut doc = serde_json::Map::new();
    let (mut arrays, mut failed) = (0usize, 0usize);
    for found in tree.nodes {
        let path = found.path.as_str().to_owned();
        let outcome = match found.node {
            Ok(NodeMetadata::Group(_)) => continue,
            Ok(NodeMetadata::Array(_)) => {
                arrays += 1;
                match Array::open(Arc::clone(&target.store), &path).await {
                    Ok(array) => {
                        let selection = Selection::whole(array.full_region());
                        let described = format!("{path} in {name}");
                        match summarise(&array, &selection, args.part_size, &described).await {
                            Ok(Some(summary)) => Outcome::Summary(Box::new(summary)),
                            Ok(None) => Outcome::Skipped(
                                array.data_type().name().to_string(),
                                array.shape().to_vec(),
                            ),
                            Err(err) => Outcome::Failed(error_line(&*err)),
                        }
                    }
                    Err(err) => Outcome::Failed(error_line(&err)),
                }
            }
            Err(err) => Outcome::Failed(err),
        };
        match outcome {
            Outcome::Summary(summary) if args.json => {
                doc.insert(path, summary.to_json());
            }
            Outcome::Summary(summary) => outln!("{path}  {}", summary.line()),
            Outcome::Skipped(data_type, shape) if args.json => {
                doc.insert(
                    path,
                    json!({ "data_type": data_type, "shape": shape, "skipped": true }),
                );
            }
            Outcome::Skipped(data_type, shape) => {
                let shape = shape_text(&shape);
                outln!("{path}  {data_type} {shape}: skipped (not bool, integer, float or time)");
            }
            Outcome::Failed(why) => {
                failed += 1;
                if args.json {
                    doc.insert(path, json!({ "error": why }));
                } else {
                    outln!("{path}  error: {why}");
                }
            }
        }
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&Json::Object(doc))?);
    }
    if failed > 0 {
        bail!("{failed} of {arrays} arrays below {name} could not be read");
    }
    Ok(())
}

/// The statistics of `selection` of `array`, or `None` for a data type they do not cover.
async fn summarise(
    array: &Array<dyn Store>,
    selection: &Selection,
    part_size: u64,
    name: &str,
) -> Result<Option<Summary>> {
    // A fixed-point array is folded as its stored integers (ordered as their values, summed
    // exactly), whose mean and deviation are then scaled.
    let (data_type, scale) = match array.data_type() {
        DataType::FixedPoint(fp) => (fp.base_type(), fp.scale()),
        other => (other.clone(), 1.0),
    };
    macro_rules! typed {
        ($v:ty, $decode:expr) => {
            summarise_as::<$v, _>(
                array,
                selection,
                &Decoder {
                    size: <$v as Number>::SIZE,
                    decode: $decode,
                    scale,
                },
                part_size,
                name,
            )
            .await
        };
    }
    let summary = match &data_type {
        DataType::Bool => typed!(u8, |b: &[u8]| u8::from(b[0] != 0)),
        DataType::Int2 => typed!(i8, |b: &[u8]| ((b[0] << 6) as i8) >> 6),
        DataType::Int4 => typed!(i8, |b: &[u8]| ((b[0] << 4) as i8) >> 4),
        DataType::UInt2 => typed!(u8, |b: &[u8]| b[0] & 0x3),
        DataType::UInt4 => typed!(u8, |b: &[u8]| b[0] & 0xf),
        DataType::Int8 => typed!(i8, |b: &[u8]| i8::from_ne_bytes(bytes(b))),
        DataType::Int16 => typed!(i16, |b: &[u8]| i16::from_ne_bytes(bytes(b))),
        DataType::Int32 => typed!(i32, |b: &[u8]| i32::from_ne_bytes(bytes(b))),
        DataType::Int64 => typed!(i64, |b: &[u8]| i64::from_ne_bytes(bytes(b))),
        DataType::UInt8 => typed!(u8, |b: &[u8]| b[0]),
        DataType::UInt16 => typed!(u16, |b: &[u8]| u16::from_ne_bytes(bytes(b))),
        DataType::UInt32 => typed!(u32, |b: &[u8]| u32::from_ne_bytes(bytes(b))),
        DataType::UInt64 => typed!(u64, |b: &[u8]| u64::from_ne_bytes(bytes(b))),
        DataType::Float16 => typed!(half::f16, |b: &[u8]| half::f16::from_ne_bytes(bytes(b))),
        DataType::BFloat16 => typed!(half::bf16, |b: &[u8]| half::bf16::from_ne_bytes(bytes(b))),
        DataType::Float32 => typed!(f32, |b: &[u8]| f32::from_ne_bytes(bytes(b))),
        DataType::Float64 => typed!(f64, |b: &[u8]| f64::from_ne_bytes(bytes(b))),
        DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
            typed!(Time, |b: &[u8]| Time(i64::from_ne_bytes(bytes(b))))
        }
        DataType::MiniFloat(format) => {
            // Every value of the format, by its byte.
            let values: [f64; 256] = std::array::from_fn(|code| format.to_f64(code as u8));
            typed!(Mini, move |b: &[u8]| Mini {
                value: values[usize::from(b[0])],
                code: b[0],
            })
        }
        _ => return Ok(None),
    };
    summary.map(Some)
}

/// Go through the selection part by part, folding each into the statistics.
async fn summarise_as<V: Number + Send + Sync, F: Fn(&[u8]) -> V + Sync>(
    array: &Array<dyn Store>,
    selection: &Selection,
    decoder: &Decoder<F>,
    part_size: u64,
    name: &str,
) -> Result<Summary> {
    let metadata = array.metadata();
    let data_type = &metadata.data_type;
    let fill = metadata.fill_value.as_bytes();
    let parts = array.split_region(&selection.region, (part_size / decoder.size as u64).max(1))?;
    let mut reads = futures::stream::iter(parts)
        .map(|part| async move {
            let bytes = if selection.is_strided() {
                array
                    .read_selection_bytes(&selection.strided_in(&part))
                    .await
            } else {
                array.read_bytes(&part).await
            };
            bytes
                .map(|bytes| (part, bytes))
                .with_context(|| format!("reading {name}"))
        })
        // Read the next part while this one is counted.
        .buffered(2);
    let mut stats = Stats::<V>::new();
    while let Some(read) = reads.next().await {
        let (part, bytes): (Region, Vec<u8>) = read?;
        if bytes.len() % decoder.size != 0 {
            bail!(
                "reading {name}: {} bytes is not a whole number of elements",
                bytes.len()
            );
        }
        stats.add_part(&bytes, decoder, fill, |i| selection.element_in(&part, i));
    }
    let text = |b: &[u8], style| {
        let mut out = String::new();
        element(&mut out, data_type, b, style);
        out
    };
    let extreme = |e: Option<(V, Vec<u8>, Vec<u64>)>| {
        e.map(|(_, b, index)| Extreme {
            text: text(&b, Style::Text),
            json: serde_json::from_str(&text(&b, Style::Json)).unwrap_or(Json::Null),
            index,
        })
    };
    let std = stats.std();
    Ok(Summary {
        data_type: data_type.name().to_string(),
        shape: selection.out_shape(),
        elements: stats.seen.elements,
        nan: stats.seen.nan,
        fill: stats.seen.fill,
        fill_text: text(fill, Style::Text),
        mean: std.map(|_| stats.seen.mean / decoder.scale),
        std: std.map(|std| std / decoder.scale),
        min: extreme(stats.min.take()),
        max: extreme(stats.max.take()),
        missing: match data_type {
            DataType::Float16
            | DataType::BFloat16
            | DataType::Float32
            | DataType::Float64
            | DataType::MiniFloat(_) => Some("NaN"),
            DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => Some("NaT"),
            _ => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_summed_exactly() {
        // 2^53 + 1 is not a float64: summed in floats, the three 1s would be lost.
        let values: Vec<i64> = vec![1 << 53, 1, 1, 1, 1, 0, 0, 0];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let decode = |b: &[u8]| i64::from_ne_bytes(super::bytes(b));
        let got = fold(&bytes, &decode, &0i64.to_ne_bytes(), 1 << 16).unwrap();
        // (2^53 + 4) / 8 = 2^50 + 0.5, exactly.
        assert_eq!(got.mean, 1_125_899_906_842_624.5);
        assert_eq!(got.least, Some((0, 5)));
        assert_eq!(got.greatest, Some((1 << 53, 0)));
        assert_eq!(got.fill, 3);
    }

    /// The summary of a 1-D array of `data_type` in chunks of 3, fill value `fill` (JSON),
    /// holding the elements of `bytes` (native order), read in parts of `part_size` bytes.
    fn summary(data_type: DataType, fill: Json, bytes: &[u8], part_size: u64) -> Summary {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let size = data_type.fixed_size().unwrap();
            let n = (bytes.len() / size) as u64;
            let store: Arc<dyn Store> = Arc::new(zarr::store::MemoryStore::new());
            let array = zarr::array::ArrayBuilder::new(vec![n], data_type, vec![3])
                .fill_value_json(fill)
                .unwrap()
                .create(store, "/a")
                .await
                .unwrap();
            array
                .write_array_bytes(0..n, zarr::array::ArrayBytes::fixed(bytes.to_vec()))
                .await
                .unwrap();
            let selection = parse_selection(None, &[n]).unwrap();
            summarise(&array, &selection, part_size, "the array")
                .await
                .unwrap()
                .unwrap()
        })
    }

    #[test]
    fn times_leave_nat_out() {
        const NAT: i64 = i64::MIN;
        let values = [NAT, 40, -7, 12, NAT, -7, 40, 0, 5, NAT];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let kept: Vec<f64> = values
            .iter()
            .filter(|&&v| v != NAT)
            .map(|&v| v as f64)
            .collect();
        let mean = kept.iter().sum::<f64>() / 7.0;
        let std = (kept.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 7.0).sqrt();
        for data_type in ["numpy.datetime64", "numpy.timedelta64"] {
            let data_type = DataType::from_json(
                &json!({"name": data_type, "configuration": {"unit": "s", "scale_factor": 1}}),
                "data_type",
            )
            .unwrap();
            for part_size in [8, 24, 1 << 20] {
                let got = summary(data_type.clone(), json!("NaT"), &bytes, part_size);
                assert_eq!((got.elements, got.nan, got.fill), (10, 3, 3));
                let min = got.min.as_ref().unwrap();
                let max = got.max.as_ref().unwrap();
                assert_eq!((min.text.as_str(), min.index.as_slice()), ("-7", &[2][..]));
                assert_eq!((max.text.as_str(), max.index.as_slice()), ("40", &[1][..]));
                assert!((got.mean.unwrap() - mean).abs() < 1e-12);
                assert!((got.std.unwrap() - std).abs() < 1e-12);
                assert_eq!(got.missing, Some("NaT"));
                let doc = got.to_json();
                assert_eq!((&doc["nat"], doc.get("nan")), (&json!(3), None), "{doc}");
                assert!(got.lines().contains(&"NaT       3".to_owned()));
            }
        }
        // All NaT: counted, with no extremes and no mean.
        let data_type = DataType::DateTime64 {
            unit: zarr::metadata::TimeUnit::Second,
            scale_factor: 1,
        };
        let got = summary(data_type, json!(0), &NAT.to_ne_bytes().repeat(4), 1 << 20);
        assert_eq!((got.elements, got.nan, got.fill), (4, 4, 0));
        assert!(got.min.is_none() && got.max.is_none() && got.mean.is_none());
    }

    #[test]
    fn minifloats_fold_by_value_and_fill_by_byte() {
        // float8_e4m3fn: 0x38 = 1.0, 0xb8 = -1.0, 0x40 = 2.0, 0x7f = NaN, 0x00 = 0.0, 0x80 = -0.0.
        let codes = [0x38u8, 0x7f, 0xb8, 0x40, 0x80, 0x00, 0x40, 0x7f];
        let data_type = DataType::from_json(&json!("float8_e4m3fn"), "data_type").unwrap();
        for part_size in [1, 3, 1 << 20] {
            let got = summary(data_type.clone(), json!(0.0), &codes, part_size);
            assert_eq!((got.elements, got.nan), (8, 2));
            // -0.0 is not the fill value 0.0, bit for bit.
            assert_eq!(got.fill, 1);
            assert_eq!(got.min.as_ref().unwrap().index, [2]);
            assert_eq!(got.max.as_ref().unwrap().index, [3]);
            // 1 - 1 + 2 + 0 + 0 + 2 over 6.
            assert!((got.mean.unwrap() - 4.0 / 6.0).abs() < 1e-12);
            assert_eq!(got.missing, Some("NaN"));
        }
        // Both 0x7f and 0xff are NaN; the fill value NaN is stored as 0x7f, and only that
        // byte counts as the fill value.
        let got = summary(data_type, json!("NaN"), &[0x7f, 0xff, 0x38, 0x7f], 1 << 20);
        assert_eq!((got.nan, got.fill), (3, 2));
    }

    #[test]
    fn fixed_point_means_are_of_values_not_stored_integers() {
        // Q7f8: value = stored / 256.
        let stored: [i16; 5] = [256, -128, 512, 64, 256];
        let bytes: Vec<u8> = stored.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let data_type = DataType::from_json(&json!("Q7f8"), "data_type").unwrap();
        let got = summary(data_type, json!(1.0), &bytes, 4);
        let values: Vec<f64> = stored.iter().map(|&v| f64::from(v) / 256.0).collect();
        let mean = values.iter().sum::<f64>() / 5.0;
        let std = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 5.0).sqrt();
        assert!((got.mean.unwrap() - mean).abs() < 1e-12, "{:?}", got.mean);
        assert!((got.std.unwrap() - std).abs() < 1e-12, "{:?}", got.std);
        assert_eq!(got.min.as_ref().unwrap().text, "-0.5");
        assert_eq!(got.max.as_ref().unwrap().text, "2");
        assert_eq!((got.fill, got.missing), (2, None));
    }

    #[test]
    fn pieces_fold_as_one() {
        // Values with NaNs and many ties for the least and greatest.
        let values: Vec<f32> = (0..5_000u32)
            .map(|i| match i.wrapping_mul(2_654_435_761) % 97 {
                0 => f32::NAN,
                r => (r % 41) as f32 - 20.0,
            })
            .collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let decode = |b: &[u8]| f32::from_ne_bytes(super::bytes(b));
        let fill = 3.0f32.to_ne_bytes();
        let kept: Vec<f64> = values
            .iter()
            .filter(|v| !v.is_nan())
            .map(|&v| f64::from(v))
            .collect();
        let mean = kept.iter().sum::<f64>() / kept.len() as f64;
        let m2: f64 = kept.iter().map(|v| (v - mean) * (v - mean)).sum();
        let first = |want: f32| values.iter().position(|&v| v == want).unwrap();
        for piece in [1, 3, 64, 999, 5_000, 1 << 20] {
            let got = fold(&bytes, &decode, &fill, piece).unwrap();
            assert_eq!(got.elements, 5_000);
            assert_eq!(got.nan, values.iter().filter(|v| v.is_nan()).count() as u64);
            assert_eq!(
                got.fill,
                values.iter().filter(|&&v| v == 3.0).count() as u64
            );
            assert_eq!(got.count, kept.len() as u64);
            assert_eq!(got.least, Some((-20.0, first(-20.0))), "piece {piece}");
            assert_eq!(got.greatest, Some((20.0, first(20.0))), "piece {piece}");
            assert!((got.mean - mean).abs() < 1e-12, "piece {piece}");
            assert!((got.m2 - m2).abs() < 1e-9 * m2, "piece {piece}");
        }
        assert!(fold(&[], &decode, &fill, 8).is_none());
        // All NaN: counted, no extremes.
        let nans: Vec<u8> = [f32::NAN; 10]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let got = fold(&nans, &decode, &fill, 3).unwrap();
        assert_eq!((got.nan, got.count, got.least), (10, 0, None));
    }
}
