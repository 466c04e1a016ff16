//! Downsampling: every window of `factors` elements of an array becomes one element of
//! another, by a [`Reduction`] (mean, mode, min, max, stride), as a multiscale image's
//! levels are made. See [`Array::downsample_from`].
//!
//! A dimension of length `n` downsampled by `f` becomes `ceil(n / f)` long; the last window
//! along it holds the `n % f` elements that remain when `f` does not divide `n`, and is
//! reduced over those alone.

use std::fmt;

use half::{bf16, f16};
use rayon::prelude::*;
use tracing::Instrument;
use zarr_core::{DataType, Region};
use zarr_store::{ReadableStore, WritableStore};

use crate::Array;
use crate::ShardWriter;
use crate::element::Element;
use crate::error::{Error, Result};

/// How [`Array::downsample_from`] makes one element of a window of elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reduction {
    /// The mean (integers: rounded to the nearest, halves away from zero; a NaN makes the
    /// mean NaN).
    Mean,
    /// The most frequent value, the first of them in C order on a tie (for labels; any
    /// fixed-size data type, values compared bit for bit).
    Mode,
    /// The smallest value (a NaN wins).
    Min,
    /// The largest value (a NaN wins).
    Max,
    /// The window's first element (nearest-neighbour; any fixed-size data type).
    Stride,
}

impl Reduction {
    /// The reduction's name: `mean`, `mode`, `min`, `max`, `stride`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Mode => "mode",
            Self::Min => "min",
            Self::Max => "max",
            Self::Stride => "stride",
        }
    }

    /// The reduction called `name` ([`Reduction::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Mean, Self::Mode, Self::Min, Self::Max, Self::Stride]
            .into_iter()
            .find(|r| r.name() == name)
    }

    /// Whether the reduction compares or adds values, so needs a number data type.
    pub fn is_numeric(self) -> bool {
        matches!(self, Self::Mean | Self::Min | Self::Max)
    }

    /// Whether the reduction takes elements of `data_type`: [`Reduction::Mode`] and
    /// [`Reduction::Stride`] any fixed-size type, the others `bool`, integers (`int2` to
    /// `uint64`) and `float16`, `bfloat16`, `float32`, `float64`.
    pub fn supports(self, data_type: &DataType) -> bool {
        if self.is_numeric() {
            is_number(data_type)
        } else {
            data_type.fixed_size().is_some()
        }
    }

    /// Whether an output element stands for the centre of its window (rather than for its
    /// first element), which shifts each level of a multiscale image by half a window: all
    /// but [`Reduction::Stride`].
    pub fn is_centred(self) -> bool {
        self != Self::Stride
    }
}

/// The type `mean`, `min` and `max` work in: a fixed-point type's stored integers (its
/// scale is linear, so the mean of the integers is the integer of the mean).
fn numeric(data_type: &DataType) -> DataType {
    match data_type {
        DataType::FixedPoint(fp) => fp.base_type(),
        other => other.clone(),
    }
}

/// Whether `mean`, `min` and `max` take elements of `data_type`.
fn is_number(data_type: &DataType) -> bool {
    matches!(
        numeric(data_type),
        DataType::Bool
            | DataType::Int2
            | DataType::Int4
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt2
            | DataType::UInt4
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float16
            | DataType::BFloat16
            | DataType::Float32
            | DataType::Float64
    )
}

impl fmt::Display for Reduction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The shape of an array of `shape` downsampled by `factors` (each at least 1): `ceil(n /
/// f)` along each dimension.
pub fn downsampled_shape(shape: &[u64], factors: &[u64]) -> Vec<u64> {
    shape
        .iter()
        .zip(factors)
        .map(|(&n, &f)| n.div_ceil(f))
        .collect()
}

/// Call `visit` once per output element, in C order, with the offsets (into the C-order
/// block of `shape`) of the elements of its window, in C order.
fn for_each_window(shape: &[usize], factors: &[usize], mut visit: impl FnMut(&[usize])) {
    let rank = shape.len();
    let out: Vec<usize> = shape
        .iter()
        .zip(factors)
        .map(|(&n, &f)| n.div_ceil(f))
        .collect();
    if out.contains(&0) {
        return;
    }
    let mut strides = vec![1usize; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let mut inner = vec![0usize; rank];
    // The offsets of the elements of a window of `lengths` starting at `base`.
    let mut window = |base: usize, lengths: &[usize], offsets: &mut Vec<usize>| {
        offsets.clear();
        if rank == 0 {
            offsets.push(0);
            return;
        }
        // Walk the window's rows: every dimension but the last by odometer, the last as
        // one contiguous run.
        inner.fill(0);
        let last = rank - 1;
        loop {
            let row: usize = base
                + inner[..last]
                    .iter()
                    .zip(&strides)
                    .map(|(&w, &s)| w * s)
                    .sum::<usize>();
            offsets.extend(row..row + lengths[last]);
            let mut i = last;
            loop {
                if i == 0 {
                    return;
                }
                i -= 1;
                inner[i] += 1;
                if inner[i] < lengths[i] {
                    break;
                }
                inner[i] = 0;
            }
        }
    };
    // Most windows are whole: their offsets are these, shifted.
    let mut whole = Vec::new();
    if factors.iter().zip(shape).all(|(f, n)| f <= n) {
        window(0, factors, &mut whole);
    }
    let mut position = vec![0usize; rank];
    let mut lengths = vec![0usize; rank];
    let mut offsets = Vec::new();
    loop {
        let mut base = 0;
        let mut partial = false;
        for i in 0..rank {
            let start = position[i] * factors[i];
            base += start * strides[i];
            lengths[i] = factors[i].min(shape[i] - start);
            partial |= lengths[i] < factors[i];
        }
        if partial {
            window(base, &lengths, &mut offsets);
        } else {
            offsets.clear();
            offsets.extend(whole.iter().map(|&o| o + base));
        }
        visit(&offsets);
        // The next output element.
        let mut i = rank;
        loop {
            if i == 0 {
                return;
            }
            i -= 1;
            position[i] += 1;
            if position[i] < out[i] {
                break;
            }
            position[i] = 0;
        }
    }
}

/// Downsample a block of elements of `width` bytes each (C order, `shape`) by `factors`
/// with [`Reduction::Stride`] or [`Reduction::Mode`], comparing elements bit for bit: the
/// data types that are not numbers.
fn reduce_bytes(
    block: &[u8],
    width: usize,
    shape: &[usize],
    factors: &[usize],
    method: Reduction,
) -> Vec<u8> {
    debug_assert!(!method.is_numeric());
    debug_assert_eq!(block.len(), width * shape.iter().product::<usize>());
    let element = |i: usize| &block[i * width..(i + 1) * width];
    let mut out = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    for_each_window(shape, factors, |offsets| {
        let chosen = match method {
            Reduction::Mode => mode(offsets, &mut order, |a, b| element(a).cmp(element(b))),
            _ => offsets[0],
        };
        out.extend_from_slice(element(chosen));
    });
    out
}

/// The offset in `offsets` of the most frequent element (by `cmp`), the first in
/// `offsets` on a tie.
fn mode(
    offsets: &[usize],
    order: &mut Vec<usize>,
    cmp: impl Fn(usize, usize) -> std::cmp::Ordering,
) -> usize {
    // Sort positions by value, then by position, so each run of equal values starts at its
    // first occurrence.
    order.clear();
    order.extend(0..offsets.len());
    order.sort_unstable_by(|&a, &b| cmp(offsets[a], offsets[b]).then(a.cmp(&b)));
    let (mut best, mut best_count) = (order[0], 0);
    let mut run = 0;
    while run < order.len() {
        let mut end = run + 1;
        while end < order.len() && cmp(offsets[order[run]], offsets[order[end]]).is_eq() {
            end += 1;
        }
        let (first, count) = (order[run], end - run);
        if count > best_count || (count == best_count && first < best) {
            (best, best_count) = (first, count);
        }
        run = end;
    }
    offsets[best]
}

/// An element type [`Reduction::Mean`], [`Reduction::Min`] and [`Reduction::Max`] work on.
trait Number: Copy + Send + Sync + Element {
    /// The mean of `values` (not empty).
    fn mean(values: impl Iterator<Item = Self>, count: usize) -> Self;
    /// Whether `self` orders before `other`; a NaN orders before everything, so that it
    /// wins both min and max.
    fn less(self, other: Self) -> bool;
    /// Whether `self` is a NaN.
    fn is_nan(self) -> bool {
        false
    }
    /// The value's bits, which [`Reduction::Mode`] compares.
    fn bits(self) -> u64;
}

/// Integer mean: the sum in `i128` (exact for any window of fewer than 2^63 elements),
/// rounded to the nearest, halves away from zero.
fn integer_mean(sum: i128, count: usize) -> i128 {
    let count = count as i128;
    let (quotient, remainder) = (sum / count, sum % count);
    if 2 * remainder.abs() >= count {
        quotient + sum.signum()
    } else {
        quotient
    }
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Number for $t {
            fn mean(values: impl Iterator<Item = Self>, count: usize) -> Self {
                let sum: i128 = values.map(i128::from).sum();
                // The mean lies between the smallest and the largest value, so it fits.
                <$t>::try_from(integer_mean(sum, count)).expect("a mean lies within its values")
            }
            fn less(self, other: Self) -> bool {
                self < other
            }
            fn bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}
integer!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Number for bool {
    fn mean(values: impl Iterator<Item = Self>, count: usize) -> Self {
        integer_mean(values.map(i128::from).sum(), count) == 1
    }
    fn less(self, other: Self) -> bool {
        !self & other
    }
    fn bits(self) -> u64 {
        u64::from(self)
    }
}

macro_rules! float {
    ($($t:ty => $to:expr, $from:expr);*) => {$(
        impl Number for $t {
            fn mean(values: impl Iterator<Item = Self>, count: usize) -> Self {
                let sum: f64 = values.map($to).sum();
                $from(sum / count as f64)
            }
            fn less(self, other: Self) -> bool {
                self.is_nan() && !other.is_nan() || self < other
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn bits(self) -> u64 {
                u64::from(self.to_bits())
            }
        }
    )*};
}
float!(
    f32 => f64::from, |v: f64| v as f32;
    f64 => |v: f64| v, |v: f64| v;
    f16 => f64::from, f16::from_f64;
    bf16 => f64::from, bf16::from_f64
);

/// Downsample a typed block (C order, `shape`) by `factors` with any [`Reduction`].
fn reduce<T: Number>(block: &[T], shape: &[usize], factors: &[usize], method: Reduction) -> Vec<T> {
    debug_assert_eq!(block.len(), shape.iter().product::<usize>());
    let mut out = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    let value = |i: usize| block[i];
    for_each_window(shape, factors, |offsets| {
        let reduced = match method {
            Reduction::Stride => value(offsets[0]),
            Reduction::Mode => value(mode(offsets, &mut order, |a, b| {
                block[a].bits().cmp(&block[b].bits())
            })),
            Reduction::Mean => T::mean(offsets.iter().map(|&i| value(i)), offsets.len()),
            Reduction::Min | Reduction::Max => {
                let mut best = value(offsets[0]);
                for &i in &offsets[1..] {
                    if best.is_nan() {
                        break;
                    }
                    let v = value(i);
                    let better = if method == Reduction::Min {
                        v.less(best)
                    } else {
                        v.is_nan() || best.less(v)
                    };
                    if better {
                        best = v;
                    }
                }
                best
            }
        };
        out.push(reduced);
    });
    out
}

/// About how many bytes of the source [`Array::downsample_from`] reads for each block of the
/// output it writes.
const BLOCK_BYTES: u64 = 64 << 20;

impl<S: WritableStore + ?Sized> Array<S> {
    /// Write every element of this array as the [`Reduction`] of its window of `source`:
    /// element `i` of this array is made from the elements `i * factors .. (i + 1) *
    /// factors` of `source` (fewer at the far edges, where `factors` does not divide the
    /// source's shape). This array's shape must be
    /// [`downsampled_shape`]`(source.shape(), factors)` and its data type the source's: one
    /// level of a multiscale image made from the level before.
    ///
    /// The output is written in blocks of whole chunks of this array, so no chunk is read
    /// back or written twice; each block reads about 64 MiB of the source at most (at least
    /// its window of one chunk). A shard larger than that is written in blocks of its inner
    /// chunks through a [`ShardWriter`], which stores it once, when its last block is
    /// written. The windows of a block are reduced in parallel on rayon's pool.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{downsampled_shape, ArrayBuilder, Reduction};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let image = ArrayBuilder::new(vec![4, 5], DataType::UInt8, vec![2, 2])
    ///     .create(store.clone(), "/0")
    ///     .await?;
    /// image.write(.., &(0..20).collect::<Vec<u8>>()).await?;
    /// let shape = downsampled_shape(image.shape(), &[2, 2]);
    /// assert_eq!(shape, [2, 3]);
    /// let half = ArrayBuilder::new(shape, DataType::UInt8, vec![2, 2])
    ///     .create(store, "/1")
    ///     .await?;
    /// half.downsample_from(&image, &[2, 2], Reduction::Mean).await?;
    /// // (0 + 1 + 5 + 6) / 4 = 3; the last column's windows are 2x1: (4 + 9) / 2 rounds up.
    /// assert_eq!(half.read::<u8>(..).await?, [3, 5, 7, 13, 15, 17]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the data types differ or the reduction does not take the
    /// data type ([`Reduction::supports`]); [`zarr_core::Error::RankMismatch`] for factors
    /// of another rank; [`Error::Region`] for a factor of 0 or a shape that is not the
    /// downsampled one; read and write errors of either array. Blocks are written
    /// independently: after an error, some hold the new values.
    pub async fn downsample_from<R: ReadableStore + ?Sized>(
        &self,
        source: &Array<R>,
        factors: &[u64],
        reduction: Reduction,
    ) -> Result<()> {
        let unsupported = |reason: String| Error::Unsupported {
            array: self.path.as_str().to_owned(),
            reason,
        };
        if self.data_type() != source.data_type() {
            return Err(unsupported(format!(
                "cannot downsample {} ({}) into an array of {}",
                source.path(),
                source.data_type().name(),
                self.data_type().name()
            )));
        }
        if !reduction.supports(self.data_type()) {
            return Err(unsupported(format!(
                "the {reduction} reduction does not take {} elements",
                self.data_type().name()
            )));
        }
        if factors.len() != source.shape().len() {
            return Err(zarr_core::Error::RankMismatch {
                what: "the downsampling factors and the array".into(),
                expected: source.shape().len(),
                found: factors.len(),
            }
            .into());
        }
        if factors.contains(&0) {
            return Err(Error::Region {
                reason: format!("downsampling factors {factors:?}: each must be at least 1"),
            });
        }
        let expected = downsampled_shape(source.shape(), factors);
        if self.shape() != expected.as_slice() {
            return Err(Error::Region {
                reason: format!(
                    "{} downsampled by {factors:?} is {expected:?}, but {} is {:?}",
                    source.path(),
                    self.path(),
                    self.shape()
                ),
            });
        }
        let blocks = blocks(self, factors)?;
        let span = tracing::debug_span!("downsample", array = %self.path, source = %source.path(), %reduction, blocks = blocks.len());
        self.downsample_blocks(source, blocks, factors, reduction)
            .instrument(span)
            .await
    }

    /// Write each of `blocks` (regions of this array) from its windows of `source`.
    async fn downsample_blocks<R: ReadableStore + ?Sized>(
        &self,
        source: &Array<R>,
        blocks: Vec<Region>,
        factors: &[u64],
        reduction: Reduction,
    ) -> Result<()> {
        let mut writer = self.shard_writer();
        for out_region in blocks {
            let in_region = Region::try_new(
                out_region
                    .ranges()
                    .iter()
                    .zip(factors)
                    .zip(source.shape())
                    // `r.start * f` is below `n`; `r.end * f` may pass `u64::MAX` for a
                    // huge factor.
                    .map(|((r, &f), &n)| r.start * f..r.end.saturating_mul(f).min(n))
                    .collect(),
            )?;
            self.downsample_block(
                source,
                &in_region,
                &out_region,
                factors,
                reduction,
                &mut writer,
            )
            .await?;
        }
        writer.finish().await
    }

    /// Read `in_region` of `source`, reduce it and write it to `out_region`.
    async fn downsample_block<R: ReadableStore + ?Sized>(
        &self,
        source: &Array<R>,
        in_region: &Region,
        out_region: &Region,
        factors: &[u64],
        reduction: Reduction,
        writer: &mut ShardWriter<'_, S>,
    ) -> Result<()> {
        let shape: Vec<usize> = in_region.shape().iter().map(|&n| n as usize).collect();
        let factors: Vec<usize> = factors.iter().map(|&f| f as usize).collect();
        if factors.iter().all(|&f| f == 1) {
            let block = source.read_array_bytes(in_region).await?;
            return writer.write_array_bytes(out_region, block).await;
        }
        if !is_number(source.data_type()) {
            // Mode or stride (`supports` was checked): compare and copy whole elements.
            let width = source.data_type().fixed_size().unwrap_or(1);
            let block = source.read_bytes(in_region).await?;
            let out = compute(|| {
                split_rows(&shape, &factors, width, &block, |rows, shape| {
                    reduce_bytes(rows, width, shape, &factors, reduction)
                })
            });
            return writer.write_bytes(out_region, &out).await;
        }
        macro_rules! typed {
            ($($pat:pat => $t:ty),*) => {
                match numeric(source.data_type()) {
                    $($pat => {
                        let block: Vec<$t> = source.read(in_region).await?;
                        let out = compute(|| {
                            split_rows(&shape, &factors, 1, &block, |rows, shape| {
                                reduce(rows, shape, &factors, reduction)
                            })
                        });
                        writer.write(out_region, &out).await
                    })*
                    other => Err(Error::Unsupported {
                        array: self.path.as_str().to_owned(),
                        reason: format!(
                            "the {reduction} reduction does not take {} elements",
                            other.name()
                        ),
                    }),
                }
            };
        }
        typed!(
            DataType::Bool => bool,
            DataType::Int2 | DataType::Int4 | DataType::Int8 => i8,
            DataType::Int16 => i16,
            DataType::Int32 => i32,
            DataType::Int64 => i64,
            DataType::UInt2 | DataType::UInt4 | DataType::UInt8 => u8,
            DataType::UInt16 => u16,
            DataType::UInt32 => u32,
            DataType::UInt64 => u64,
            DataType::Float16 => f16,
            DataType::BFloat16 => bf16,
            DataType::Float32 => f32,
            DataType::Float64 => f64
        )
    }
}

/// Run CPU-bound `work`, letting a multi-threaded Tokio runtime move this thread's other
/// tasks elsewhere meanwhile.
fn compute<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// Reduce a block by windows of its first dimension in parallel: the windows of each output
/// row along dimension 0 lie in their own contiguous part of the block. `unit` is the
/// number of `T` per element.
fn split_rows<T: Send + Sync, O: Send>(
    shape: &[usize],
    factors: &[usize],
    unit: usize,
    block: &[T],
    reduce_part: impl Fn(&[T], &[usize]) -> Vec<O> + Sync,
) -> Vec<O> {
    let Some((&rows, rest)) = shape.split_first() else {
        return reduce_part(block, shape);
    };
    let f0 = factors[0];
    let row_len = rest.iter().product::<usize>() * unit;
    if rows == 0 || row_len == 0 {
        return reduce_part(block, shape);
    }
    let parts: Vec<Vec<O>> = block
        .par_chunks(row_len * f0)
        .map(|part| {
            let mut part_shape = shape.to_vec();
            part_shape[0] = part.len() / row_len;
            reduce_part(part, &part_shape)
        })
        .collect();
    parts.into_iter().flatten().collect()
}

/// The blocks `output` is written in, in order: parts of whole chunks of it, each reading
/// about [`BLOCK_BYTES`] of the source at most ([`Array::split_region`]). Shards too large
/// for one block are cut along their inner chunks when a [`ShardWriter`] keeps those (one
/// shard is finished before the next is begun, so the writer holds one at a time), and
/// written whole otherwise.
fn blocks<S: ?Sized>(output: &Array<S>, factors: &[u64]) -> Result<Vec<Region>> {
    let width = output.data_type().fixed_size().unwrap_or(1).max(1) as u64;
    let per_element = factors.iter().fold(width, |b, &f| b.saturating_mul(f));
    let max_elements = BLOCK_BYTES / per_element.max(1);
    if output.shards_buffered() {
        output.split_region(.., max_elements)
    } else {
        output.split_region_whole_chunks(.., max_elements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of an output sharded by the codec are whole shards where they fit and rows of
    /// inner chunks of one shard where they do not, one shard finished before the next;
    /// other outputs are written in whole chunks. The blocks cover the output once.
    #[test]
    fn blocks_are_whole_chunks_or_inner_chunks_of_one_shard_at_a_time() {
        use crate::{ArrayBuilder, ArrayOptions};
        use zarr_core::NodePath;
        let array = |builder: ArrayBuilder| {
            let store = std::sync::Arc::new(zarr_store::MemoryStore::new());
            let metadata = builder.build_metadata().unwrap();
            Array::from_metadata(store, NodePath::root(), metadata, ArrayOptions::default())
                .unwrap()
        };
        let r = |ranges: Vec<std::ops::Range<u64>>| Region::try_new(ranges).unwrap();
        // The blocks, and the first and last chunk each touches, checking that each covers
        // whole units of `unit` (clipped to the array) and that together they cover the
        // array.
        let blocks_of = |output: &Array<zarr_store::MemoryStore>, unit: &[u64]| {
            let blocks = blocks(output, &[2, 2]).unwrap();
            let mut covered = 0;
            let chunks: Vec<(Vec<u64>, Vec<u64>)> = blocks
                .iter()
                .map(|block| {
                    let ranges = block.ranges();
                    for ((range, &u), &n) in ranges.iter().zip(unit).zip(output.shape()) {
                        assert!(range.start % u == 0 && (range.end % u == 0 || range.end == n));
                    }
                    let first = output
                        .chunk_grid()
                        .chunk_of(output.shape(), &block.starts());
                    let ends: Vec<u64> = ranges.iter().map(|r| r.end - 1).collect();
                    let last = output.chunk_grid().chunk_of(output.shape(), &ends);
                    covered += block.num_elements().unwrap();
                    (first.unwrap().0, last.unwrap().0)
                })
                .collect();
            assert_eq!(covered, output.shape().iter().product::<u64>());
            (blocks, chunks)
        };
        // 4 x 16 shards of 4096 x 4096 float32 in inner chunks of 256 x 256: a row of inner
        // chunks of a shard reads 256 x 4096 x 4 bytes x 4 (2x2 windows) = 16 MiB of the
        // source, so a block is 4 rows of them, and a shard 4 blocks, one after another.
        let sharded = array(
            ArrayBuilder::new(vec![16384, 65536], DataType::Float32, vec![4096, 4096])
                .sharding(vec![256, 256]),
        );
        let (blocks, chunks) = blocks_of(&sharded, &[256, 256]);
        assert_eq!(blocks.len(), 4 * 16 * 4);
        assert_eq!(blocks[0], r(vec![0..1024, 0..4096]));
        assert_eq!(blocks[4], r(vec![0..1024, 4096..8192]));
        for (i, (first, last)) in chunks.iter().enumerate() {
            assert_eq!(first, last, "{:?}", blocks[i]);
            assert_eq!(first, &[i as u64 / 64, (i as u64 / 4) % 16]);
        }
        // Shards that fit: several whole ones per block (here two rows of 8 shards, each
        // reading 4 MiB of the source).
        let small = array(
            ArrayBuilder::new(vec![8192, 8192], DataType::UInt8, vec![1024, 1024])
                .sharding(vec![256, 256]),
        );
        let (blocks, _) = blocks_of(&small, &[1024, 1024]);
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[1], r(vec![2048..4096, 0..8192]));
        // Unsharded: whole chunks, however large.
        let plain = array(ArrayBuilder::new(
            vec![8192, 8192],
            DataType::UInt16,
            vec![4096, 8192],
        ));
        let (blocks, _) = blocks_of(&plain, &[4096, 8192]);
        assert_eq!(
            blocks,
            [r(vec![0..4096, 0..8192]), r(vec![4096..8192, 0..8192])]
        );
    }

    #[test]
    fn windows_cover_each_element_once_and_clip_at_the_edges() {
        let mut seen = Vec::new();
        for_each_window(&[3, 5], &[2, 2], |offsets| seen.push(offsets.to_vec()));
        assert_eq!(
            seen,
            [
                vec![0, 1, 5, 6],
                vec![2, 3, 7, 8],
                vec![4, 9],
                vec![10, 11],
                vec![12, 13],
                vec![14],
            ]
        );
        // A factor of one keeps the dimension; 0-d has one window of one element.
        let mut seen = Vec::new();
        for_each_window(&[2, 3], &[1, 3], |offsets| seen.push(offsets.to_vec()));
        assert_eq!(seen, [vec![0, 1, 2], vec![3, 4, 5]]);
        let mut seen = Vec::new();
        for_each_window(&[], &[], |offsets| seen.push(offsets.to_vec()));
        assert_eq!(seen, [vec![0]]);
        // An empty dimension has no windows.
        for_each_window(&[0, 4], &[2, 2], |_| panic!("no window"));
        assert_eq!(downsampled_shape(&[7, 0, 1], &[2, 2, 3]), [4, 0, 1]);
    }

    #[test]
    fn integer_means_round_to_the_nearest_halves_away_from_zero() {
        assert_eq!(u8::mean([1u8, 2].into_iter(), 2), 2);
        assert_eq!(u8::mean([1u8, 1, 2].into_iter(), 3), 1);
        assert_eq!(i8::mean([-1i8, -2].into_iter(), 2), -2);
        assert_eq!(i8::mean([-1i8, -1, -2].into_iter(), 3), -1);
        assert_eq!(u64::mean([u64::MAX, u64::MAX - 1].into_iter(), 2), u64::MAX);
        assert_eq!(i64::mean([i64::MIN, i64::MIN].into_iter(), 2), i64::MIN);
        assert!(bool::mean([true, false].into_iter(), 2));
        assert!(!bool::mean([true, false, false].into_iter(), 3));
    }

    #[test]
    fn each_method_reduces_a_2d_block() {
        // 3 x 5, factors 2 x 2: windows as in the test above.
        let block: Vec<i16> = vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
        let shape = [3, 5];
        let f = [2, 2];
        // (1+2+6+7)/4 = 4, (3+4+8+9)/4 = 6, (5+10)/2 = 7.5 -> 8, (11+12)/2 = 11.5 -> 12,
        // (13+14)/2 = 13.5 -> 14, 15.
        assert_eq!(
            reduce(&block, &shape, &f, Reduction::Mean),
            [4, 6, 8, 12, 14, 15]
        );
        assert_eq!(
            reduce(&block, &shape, &f, Reduction::Min),
            [1, 3, 5, 11, 13, 15]
        );
        assert_eq!(
            reduce(&block, &shape, &f, Reduction::Max),
            [7, 9, 10, 12, 14, 15]
        );
        assert_eq!(
            reduce(&block, &shape, &f, Reduction::Stride),
            [1, 3, 5, 11, 13, 15]
        );
        let labels: Vec<u32> = vec![7, 3, 3, 9, 9, 3, 7, 9, 9, 9, 2, 5, 5, 5, 5];
        // Windows: {7,3,3,7} tie 7 vs 3 -> 7 comes first; {3,9,9,9} -> 9; {9,9} -> 9;
        // {2,5} tie -> 2; {5,5} -> 5; {5} -> 5.
        assert_eq!(
            reduce(&labels, &shape, &f, Reduction::Mode),
            [7, 9, 9, 2, 5, 5]
        );
        let bytes: Vec<u8> = labels.iter().flat_map(|v| v.to_le_bytes()).collect();
        let as_bytes =
            |values: &[u32]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
        assert_eq!(
            reduce_bytes(&bytes, 4, &shape, &f, Reduction::Mode),
            as_bytes(&[7, 9, 9, 2, 5, 5])
        );
        assert_eq!(
            reduce_bytes(&bytes, 4, &shape, &f, Reduction::Stride),
            as_bytes(&[7, 3, 9, 2, 5, 5])
        );
    }

    #[test]
    fn nans_win_min_max_and_mean() {
        let block = [1.0f32, f32::NAN, -3.0, 4.0, 0.5, 0.25];
        let shape = [6];
        for method in [Reduction::Mean, Reduction::Min, Reduction::Max] {
            let out = reduce(&block, &shape, &[2], method);
            assert!(out[0].is_nan(), "{method}");
            assert!(!out[1].is_nan() && !out[2].is_nan(), "{method}");
        }
        assert_eq!(
            reduce(&block[2..], &[4], &[2], Reduction::Mean),
            [0.5, 0.375]
        );
        assert_eq!(
            reduce(&block[2..], &[4], &[2], Reduction::Min),
            [-3.0, 0.25]
        );
        assert_eq!(reduce(&block[2..], &[4], &[2], Reduction::Max), [4.0, 0.5]);
        // The NaN need not come first.
        let out = reduce(&[2.0f64, f64::NAN, 1.0], &[3], &[3], Reduction::Min);
        assert!(out[0].is_nan());
        let out = reduce(&[2.0f64, 1.0, f64::NAN], &[3], &[3], Reduction::Max);
        assert!(out[0].is_nan());
        let half = [f16::from_f32(1.0), f16::from_f32(2.0)];
        assert_eq!(
            reduce(&half, &[2], &[2], Reduction::Mean),
            [f16::from_f32(1.5)]
        );
    }

    #[test]
    fn three_dimensions_with_a_kept_axis() {
        // 2 x 3 x 4, factors 1 x 2 x 2: each plane on its own.
        let block: Vec<u32> = (0..24).collect();
        let out = reduce(&block, &[2, 3, 4], &[1, 2, 2], Reduction::Max);
        // Plane 0: rows 0-1 -> max of cols 0-1: 5, cols 2-3: 7; row 2: 9, 11.
        assert_eq!(out, [5, 7, 9, 11, 17, 19, 21, 23]);
        assert_eq!(downsampled_shape(&[2, 3, 4], &[1, 2, 2]), [2, 2, 2]);
    }
}
