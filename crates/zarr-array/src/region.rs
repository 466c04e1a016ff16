//! [`IntoRegion`]: the ways to say which part of an array to read or write.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use zarr_core::Region;

use crate::error::{Error, Result};

/// Something that names a region of an array: a [`Region`]; per-dimension ranges as a
/// `Vec`, slice or array of ranges; or, for a one-dimensional array, one range of any kind
/// (`0..10`, `2..`, `..5`, `0..=3`). `..` is the whole array, of any rank.
///
/// Bounds may be `u64`, `usize`, `u32`, `i64` or `i32` (what an integer literal is when
/// nothing else decides); a negative bound is an error.
///
/// ```
/// use zarr_array::IntoRegion;
/// let region = [0..10u64, 5..6].into_region()?;
/// assert_eq!(region.shape(), vec![10, 1]);
/// let n: usize = 4;
/// assert_eq!((0..n).into_region()?.shape(), vec![4]);
/// // Open ranges end at the array's bounds.
/// assert_eq!((2..).into_region_of(&[10])?.shape(), vec![8]);
/// assert_eq!((..).into_region_of(&[3, 4])?.shape(), vec![3, 4]);
/// assert!((-1..3).into_region().is_err());
/// # Ok::<(), zarr_array::Error>(())
/// ```
pub trait IntoRegion {
    /// The region.
    ///
    /// # Errors
    /// [`zarr_core::Error::InvalidRegion`] for a range whose start is past its end;
    /// [`Error::Region`] for a negative bound, or an open range (it needs the array's
    /// shape: see [`IntoRegion::into_region_of`]).
    fn into_region(self) -> Result<Region>;

    /// The region within an array of `shape`: open ranges (`..`, `a..`, `..b`) end at the
    /// array's bounds. The array methods call this one.
    ///
    /// # Errors
    /// As [`IntoRegion::into_region`]; [`Error::Region`] for a one-dimensional open range
    /// and an array of another rank.
    fn into_region_of(self, shape: &[u64]) -> Result<Region>
    where
        Self: Sized,
    {
        let _ = shape;
        self.into_region()
    }
}

/// An integer type that can bound a range of a region.
pub trait RegionIndex: Copy {
    /// The bound as a `u64`.
    ///
    /// # Errors
    /// [`Error::Region`] if the bound is negative.
    fn to_u64(self) -> Result<u64>;
}

macro_rules! unsigned_index {
    ($($t:ty),*) => {$(
        impl RegionIndex for $t {
            fn to_u64(self) -> Result<u64> {
                Ok(self as u64)
            }
        }
    )*};
}
unsigned_index!(u64, usize, u32);

macro_rules! signed_index {
    ($($t:ty),*) => {$(
        impl RegionIndex for $t {
            fn to_u64(self) -> Result<u64> {
                u64::try_from(self).map_err(|_| Error::Region {
                    reason: format!("the bound {self} is negative"),
                })
            }
        }
    )*};
}
signed_index!(i64, i32);

fn range<T: RegionIndex>(r: &Range<T>) -> Result<Range<u64>> {
    Ok(r.start.to_u64()?..r.end.to_u64()?)
}

/// The one-dimensional region of `range`.
fn one(range: Range<u64>) -> Result<Region> {
    Ok(Region::try_new(std::iter::once(range).collect())?)
}

fn regions<T: RegionIndex>(ranges: &[Range<T>]) -> Result<Region> {
    Ok(Region::try_new(
        ranges.iter().map(range).collect::<Result<Vec<_>>>()?,
    )?)
}

impl IntoRegion for Region {
    fn into_region(self) -> Result<Region> {
        Ok(self)
    }
}

impl IntoRegion for &Region {
    fn into_region(self) -> Result<Region> {
        Ok(self.clone())
    }
}

impl<T: RegionIndex> IntoRegion for Vec<Range<T>> {
    fn into_region(self) -> Result<Region> {
        regions(&self)
    }
}

impl<T: RegionIndex> IntoRegion for &[Range<T>] {
    fn into_region(self) -> Result<Region> {
        regions(self)
    }
}

impl<T: RegionIndex, const N: usize> IntoRegion for [Range<T>; N] {
    fn into_region(self) -> Result<Region> {
        regions(&self)
    }
}

/// A range alone is a region of a one-dimensional array: `array.read(0..10)`.
impl<T: RegionIndex> IntoRegion for Range<T> {
    fn into_region(self) -> Result<Region> {
        one(range(&self)?)
    }
}

/// `a..=b` of a one-dimensional array.
impl<T: RegionIndex> IntoRegion for RangeInclusive<T> {
    fn into_region(self) -> Result<Region> {
        let (start, end) = (self.start().to_u64()?, self.end().to_u64()?);
        let end = end.checked_add(1).ok_or_else(|| Error::Region {
            reason: format!("{start}..={end} ends past u64::MAX"),
        })?;
        one(start..end)
    }
}

/// The end of a one-dimensional array's open range.
fn end_of(shape: &[u64], range: &str) -> Result<u64> {
    match shape {
        [n] => Ok(*n),
        _ => Err(Error::Region {
            reason: format!(
                "`{range}` names a range of a one-dimensional array, and this one has {} \
                 dimensions (give one range per dimension)",
                shape.len()
            ),
        }),
    }
}

fn needs_shape(range: &str) -> Error {
    Error::Region {
        reason: format!(
            "`{range}` is open: it needs the array's shape (`into_region_of`, which the \
             array methods call)"
        ),
    }
}

/// `a..` of a one-dimensional array: to its end.
impl<T: RegionIndex> IntoRegion for RangeFrom<T> {
    fn into_region(self) -> Result<Region> {
        Err(needs_shape("a.."))
    }

    fn into_region_of(self, shape: &[u64]) -> Result<Region> {
        one(self.start.to_u64()?..end_of(shape, "a..")?)
    }
}

/// `..b` of a one-dimensional array: from its start.
impl<T: RegionIndex> IntoRegion for RangeTo<T> {
    fn into_region(self) -> Result<Region> {
        one(0..self.end.to_u64()?)
    }
}

/// `..=b` of a one-dimensional array: from its start.
impl<T: RegionIndex> IntoRegion for RangeToInclusive<T> {
    fn into_region(self) -> Result<Region> {
        (0..=self.end.to_u64()?).into_region()
    }
}

/// `..`: the whole array, of any rank.
impl IntoRegion for RangeFull {
    fn into_region(self) -> Result<Region> {
        Err(needs_shape(".."))
    }

    fn into_region_of(self, shape: &[u64]) -> Result<Region> {
        Ok(Region::full(shape))
    }
}
