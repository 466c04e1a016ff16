//! `zarr stats`: summary statistics of an array's values, read part by part.

use anyhow::{Context, Result, bail};
use clap::Args;
use futures::StreamExt as _;
use serde_json::{Value as Json, json};
use zarr::array::{Array, Region};
use zarr::metadata::DataType;
use zarr::store::Store;

use crate::format::{Style, element};
use crate::layout::shape_text;
use crate::outln;
use crate::region::{Selection, parse_selection};
use crate::target::{Access, resolve};
use crate::{TargetArgs, usage};

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
    fn to_f64(self) -> f64;
    /// Whether the value is a NaN (which no ordering or mean takes in).
    fn is_nan(self) -> bool {
        false
    }
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Number for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
integer!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Number for $t {
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn is_nan(self) -> bool {
                self.is_nan()
            }
        }
    )*};
}
float!(f32, f64, half::f16, half::bf16);

/// How to read one element of a data type: its size and a decoder of its bytes.
struct Decoder<V> {
    size: usize,
    decode: fn(&[u8]) -> V,
}

fn bytes<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&b[..N]);
    out
}

/// The statistics of the elements seen so far.
struct Stats<V> {
    elements: u64,
    nan: u64,
    fill: u64,
    /// Elements other than NaN, and their mean and sum of squared deviations from it.
    count: u64,
    mean: f64,
    m2: f64,
    /// The least and the greatest element: value, bytes, index in the array (the first
    /// in C order where several are equal).
    min: Option<(V, Vec<u8>, Vec<u64>)>,
    max: Option<(V, Vec<u8>, Vec<u64>)>,
}

impl<V: Number> Stats<V> {
    fn new() -> Self {
        Self {
            elements: 0,
            nan: 0,
            fill: 0,
            count: 0,
            mean: 0.0,
            m2: 0.0,
            min: None,
            max: None,
        }
    }

    /// Take in the elements of one part (`bytes`, in C order), `index(i)` naming the array
    /// index of its element `i`.
    fn add_part(
        &mut self,
        bytes: &[u8],
        decoder: &Decoder<V>,
        fill: &[u8],
        index: impl Fn(u64) -> Vec<u64>,
    ) {
        let size = decoder.size;
        let mut nan = 0u64;
        let mut fills = 0u64;
        let mut sum = 0.0f64;
        let mut least: Option<(V, usize)> = None;
        let mut greatest: Option<(V, usize)> = None;
        for (i, b) in bytes.chunks_exact(size).enumerate() {
            if b == fill {
                fills += 1;
            }
            let v = (decoder.decode)(b);
            if v.is_nan() {
                nan += 1;
                continue;
            }
            sum += v.to_f64();
            if least.is_none_or(|(m, _)| v < m) {
                least = Some((v, i));
            }
            if greatest.is_none_or(|(m, _)| v > m) {
                greatest = Some((v, i));
            }
        }
        let elements = (bytes.len() / size) as u64;
        let count = elements - nan;
        self.elements += elements;
        self.nan += nan;
        self.fill += fills;
        if count == 0 {
            return;
        }
        // The part's mean and squared deviations (a second pass, for accuracy), merged
        // with the totals so far (Chan, Golub and LeVeque's parallel formula).
        let mean = sum / count as f64;
        let m2: f64 = bytes
            .chunks_exact(size)
            .map(|b| (decoder.decode)(b))
            .filter(|v| !v.is_nan())
            .map(|v| {
                let d = v.to_f64() - mean;
                d * d
            })
            .sum();
        let total = self.count + count;
        let delta = mean - self.mean;
        self.mean += delta * count as f64 / total as f64;
        self.m2 += m2 + delta * delta * self.count as f64 * count as f64 / total as f64;
        self.count = total;
        // Within a part, the first in C order comes first; between parts, equal values are
        // settled by their indices (parts cut along a later dimension are not in C order of
        // their elements).
        let entry = |i: usize| (bytes[i * size..(i + 1) * size].to_vec(), index(i as u64));
        if let Some((v, i)) = least {
            let (b, at) = entry(i);
            if self
                .min
                .as_ref()
                .is_none_or(|(m, _, m_at)| v < *m || (v == *m && at < *m_at))
            {
                self.min = Some((v, b, at));
            }
        }
        if let Some((v, i)) = greatest {
            let (b, at) = entry(i);
            if self
                .max
                .as_ref()
                .is_none_or(|(m, _, m_at)| v > *m || (v == *m && at < *m_at))
            {
                self.max = Some((v, b, at));
            }
        }
    }

    /// The population standard deviation (numpy's default, `ddof=0`).
    fn std(&self) -> Option<f64> {
        (self.count > 0).then(|| (self.m2 / self.count as f64).sqrt())
    }
}

pub(crate) async fn run(args: StatsArgs) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
    let array = target.array().await?;
    let metadata = array.metadata();
    let selection = parse_selection(args.region.as_deref(), &metadata.shape)?;
    let name = target.describe();
    macro_rules! typed {
        ($v:ty, $decode:expr) => {
            report::<$v>(
                &array,
                &selection,
                &Decoder {
                    size: std::mem::size_of::<$v>(),
                    decode: $decode,
                },
                &args,
                &name,
            )
            .await
        };
    }
    match &metadata.data_type {
        DataType::Bool => {
            let decoder = Decoder {
                size: 1,
                decode: |b: &[u8]| u8::from(b[0] != 0),
            };
            report(&array, &selection, &decoder, &args, &name).await
        }
        DataType::Int2 => {
            let decoder = Decoder {
                size: 1,
                decode: |b: &[u8]| ((b[0] << 6) as i8) >> 6,
            };
            report(&array, &selection, &decoder, &args, &name).await
        }
        DataType::Int4 => {
            let decoder = Decoder {
                size: 1,
                decode: |b: &[u8]| ((b[0] << 4) as i8) >> 4,
            };
            report(&array, &selection, &decoder, &args, &name).await
        }
        DataType::UInt2 => {
            let decoder = Decoder {
                size: 1,
                decode: |b: &[u8]| b[0] & 0x3,
            };
            report(&array, &selection, &decoder, &args, &name).await
        }
        DataType::UInt4 => {
            let decoder = Decoder {
                size: 1,
                decode: |b: &[u8]| b[0] & 0xf,
            };
            report(&array, &selection, &decoder, &args, &name).await
        }
        DataType::Int8 => typed!(i8, |b| i8::from_ne_bytes(bytes(b))),
        DataType::Int16 => typed!(i16, |b| i16::from_ne_bytes(bytes(b))),
        DataType::Int32 => typed!(i32, |b| i32::from_ne_bytes(bytes(b))),
        DataType::Int64 => typed!(i64, |b| i64::from_ne_bytes(bytes(b))),
        DataType::UInt8 => typed!(u8, |b| b[0]),
        DataType::UInt16 => typed!(u16, |b| u16::from_ne_bytes(bytes(b))),
        DataType::UInt32 => typed!(u32, |b| u32::from_ne_bytes(bytes(b))),
        DataType::UInt64 => typed!(u64, |b| u64::from_ne_bytes(bytes(b))),
        DataType::Float16 => typed!(half::f16, |b| half::f16::from_ne_bytes(bytes(b))),
        DataType::BFloat16 => typed!(half::bf16, |b| half::bf16::from_ne_bytes(bytes(b))),
        DataType::Float32 => typed!(f32, |b| f32::from_ne_bytes(bytes(b))),
        DataType::Float64 => typed!(f64, |b| f64::from_ne_bytes(bytes(b))),
        other => usage!(
            "{name} holds {}: zarr stats takes bool, integer and float arrays \
             (int2 to uint64, float16, bfloat16, float32, float64)",
            other.name()
        ),
    }
}

/// Go through the selection part by part, then print the statistics.
async fn report<V: Number>(
    array: &Array<dyn Store>,
    selection: &Selection,
    decoder: &Decoder<V>,
    args: &StatsArgs,
    name: &str,
) -> Result<()> {
    let metadata = array.metadata();
    let data_type = &metadata.data_type;
    let fill = metadata.fill_value.as_bytes();
    let parts = array.split_region(
        &selection.region,
        (args.part_size / decoder.size as u64).max(1),
    )?;
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
    let value = |b: &[u8], style| {
        let mut out = String::new();
        element(&mut out, data_type, b, style);
        out
    };
    let floats = matches!(
        data_type,
        DataType::Float16 | DataType::BFloat16 | DataType::Float32 | DataType::Float64
    );
    if args.json {
        let extreme = |e: &Option<(V, Vec<u8>, Vec<u64>)>| match e {
            Some((_, b, index)) => json!({
                "value": serde_json::from_str::<Json>(&value(b, Style::Json))
                    .unwrap_or(Json::Null),
                "index": index,
            }),
            None => Json::Null,
        };
        let number = |x: Option<f64>| match x {
            Some(x) if x.is_finite() => json!(x),
            Some(x) if x.is_nan() => json!("NaN"),
            Some(x) if x > 0.0 => json!("Infinity"),
            Some(_) => json!("-Infinity"),
            None => Json::Null,
        };
        let doc = json!({
            "data_type": data_type.name(),
            "shape": selection.out_shape(),
            "elements": stats.elements,
            "nan": stats.nan,
            "fill": stats.fill,
            "min": extreme(&stats.min),
            "max": extreme(&stats.max),
            "mean": number((stats.count > 0).then_some(stats.mean)),
            "std": number(stats.std()),
        });
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    outln!(
        "elements  {} ({} {})",
        stats.elements,
        data_type.name(),
        shape_text(&selection.out_shape())
    );
    let extreme = |e: &Option<(V, Vec<u8>, Vec<u64>)>| match e {
        Some((_, b, index)) => format!("{} at {index:?}", value(b, Style::Text)),
        None => "none".to_owned(),
    };
    outln!("min       {}", extreme(&stats.min));
    outln!("max       {}", extreme(&stats.max));
    match stats.std() {
        Some(std) => {
            outln!("mean      {}", stats.mean);
            outln!("std       {std}");
        }
        None => {
            outln!("mean      none");
            outln!("std       none");
        }
    }
    if floats {
        outln!("NaN       {}", stats.nan);
    }
    outln!(
        "fill      {} equal to the fill value {}",
        stats.fill,
        value(fill, Style::Text)
    );
    Ok(())
}
