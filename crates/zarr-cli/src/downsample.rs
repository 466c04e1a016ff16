//! Downsampling kernels for `zarr pyramid`: reduce every window of `factors` elements of a
//! C-order block to one element.
//!
//! A dimension of length `n` downsampled by `f` becomes `ceil(n / f)` long; the last window
//! along it holds the `n % f` elements that remain when `f` does not divide `n`, and is
//! reduced over those alone.

use std::fmt;

use half::{bf16, f16};

/// How a window of elements becomes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Method {
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

impl Method {
    /// The name written in the metadata and accepted on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Mode => "mode",
            Self::Min => "min",
            Self::Max => "max",
            Self::Stride => "stride",
        }
    }

    /// Whether the method compares or adds values, so needs a number data type.
    pub(crate) fn is_numeric(self) -> bool {
        matches!(self, Self::Mean | Self::Min | Self::Max)
    }

    /// Whether an output element sits at the centre of its window (rather than at its first
    /// element), which shifts each level by half a window.
    pub(crate) fn centred(self) -> bool {
        self != Self::Stride
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The shape of `shape` downsampled by `factors` (each at least 1).
pub(crate) fn reduced_shape(shape: &[u64], factors: &[u64]) -> Vec<u64> {
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
/// with [`Method::Stride`] or [`Method::Mode`], comparing elements bit for bit: any
/// fixed-size data type.
pub(crate) fn reduce_bytes(
    block: &[u8],
    width: usize,
    shape: &[usize],
    factors: &[usize],
    method: Method,
) -> Vec<u8> {
    debug_assert!(!method.is_numeric());
    debug_assert_eq!(block.len(), width * shape.iter().product::<usize>());
    let element = |i: usize| &block[i * width..(i + 1) * width];
    let mut out = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    for_each_window(shape, factors, |offsets| {
        let chosen = match method {
            Method::Mode => mode(offsets, &mut order, |a, b| element(a).cmp(element(b))),
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

/// An element type [`Method::Mean`], [`Method::Min`] and [`Method::Max`] work on.
pub(crate) trait Number: Copy + Send + Sync + zarr::array::Element {
    /// The mean of `values` (not empty).
    fn mean(values: impl Iterator<Item = Self>, count: usize) -> Self;
    /// Whether `self` orders before `other`; a NaN orders before everything, so that it
    /// wins both min and max.
    fn less(self, other: Self) -> bool;
    /// Whether `self` is a NaN.
    fn is_nan(self) -> bool {
        false
    }
    /// The value's bits, which [`Method::Mode`] compares.
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

/// Downsample a typed block (C order, `shape`) by `factors` with any [`Method`].
pub(crate) fn reduce<T: Number>(
    block: &[T],
    shape: &[usize],
    factors: &[usize],
    method: Method,
) -> Vec<T> {
    debug_assert_eq!(block.len(), shape.iter().product::<usize>());
    let mut out = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    let value = |i: usize| block[i];
    for_each_window(shape, factors, |offsets| {
        let reduced = match method {
            Method::Stride => value(offsets[0]),
            Method::Mode => value(mode(offsets, &mut order, |a, b| {
                block[a].bits().cmp(&block[b].bits())
            })),
            Method::Mean => T::mean(offsets.iter().map(|&i| value(i)), offsets.len()),
            Method::Min | Method::Max => {
                let mut best = value(offsets[0]);
                for &i in &offsets[1..] {
                    if best.is_nan() {
                        break;
                    }
                    let v = value(i);
                    let better = if method == Method::Min {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(reduced_shape(&[7, 0, 1], &[2, 2, 3]), [4, 0, 1]);
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
            reduce(&block, &shape, &f, Method::Mean),
            [4, 6, 8, 12, 14, 15]
        );
        assert_eq!(
            reduce(&block, &shape, &f, Method::Min),
            [1, 3, 5, 11, 13, 15]
        );
        assert_eq!(
            reduce(&block, &shape, &f, Method::Max),
            [7, 9, 10, 12, 14, 15]
        );
        assert_eq!(
            reduce(&block, &shape, &f, Method::Stride),
            [1, 3, 5, 11, 13, 15]
        );
        let labels: Vec<u32> = vec![7, 3, 3, 9, 9, 3, 7, 9, 9, 9, 2, 5, 5, 5, 5];
        // Windows: {7,3,3,7} tie 7 vs 3 -> 7 comes first; {3,9,9,9} -> 9; {9,9} -> 9;
        // {2,5} tie -> 2; {5,5} -> 5; {5} -> 5.
        assert_eq!(
            reduce(&labels, &shape, &f, Method::Mode),
            [7, 9, 9, 2, 5, 5]
        );
        let bytes: Vec<u8> = labels.iter().flat_map(|v| v.to_le_bytes()).collect();
        let as_bytes =
            |values: &[u32]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
        assert_eq!(
            reduce_bytes(&bytes, 4, &shape, &f, Method::Mode),
            as_bytes(&[7, 9, 9, 2, 5, 5])
        );
        assert_eq!(
            reduce_bytes(&bytes, 4, &shape, &f, Method::Stride),
            as_bytes(&[7, 3, 9, 2, 5, 5])
        );
    }

    #[test]
    fn nans_win_min_max_and_mean() {
        let block = [1.0f32, f32::NAN, -3.0, 4.0, 0.5, 0.25];
        let shape = [6];
        for method in [Method::Mean, Method::Min, Method::Max] {
            let out = reduce(&block, &shape, &[2], method);
            assert!(out[0].is_nan(), "{method}");
            assert!(!out[1].is_nan() && !out[2].is_nan(), "{method}");
        }
        assert_eq!(reduce(&block[2..], &[4], &[2], Method::Mean), [0.5, 0.375]);
        assert_eq!(reduce(&block[2..], &[4], &[2], Method::Min), [-3.0, 0.25]);
        assert_eq!(reduce(&block[2..], &[4], &[2], Method::Max), [4.0, 0.5]);
        // The NaN need not come first.
        let out = reduce(&[2.0f64, f64::NAN, 1.0], &[3], &[3], Method::Min);
        assert!(out[0].is_nan());
        let out = reduce(&[2.0f64, 1.0, f64::NAN], &[3], &[3], Method::Max);
        assert!(out[0].is_nan());
        let half = [f16::from_f32(1.0), f16::from_f32(2.0)];
        assert_eq!(
            reduce(&half, &[2], &[2], Method::Mean),
            [f16::from_f32(1.5)]
        );
    }

    #[test]
    fn three_dimensions_with_a_kept_axis() {
        // 2 x 3 x 4, factors 1 x 2 x 2: each plane on its own.
        let block: Vec<u32> = (0..24).collect();
        let out = reduce(&block, &[2, 3, 4], &[1, 2, 2], Method::Max);
        // Plane 0: rows 0-1 -> max of cols 0-1: 5, cols 2-3: 7; row 2: 9, 11.
        assert_eq!(out, [5, 7, 9, 11, 17, 19, 21, 23]);
        assert_eq!(reduced_shape(&[2, 3, 4], &[1, 2, 2]), [2, 2, 2]);
    }
}
