//! [`IntoRegion`]: the ways to say which part of an array to read or write.

use std::ops::Range;

use zarr_core::Region;

use crate::error::Result;

/// Something that names a region of an array: a [`Region`], or per-dimension ranges as a
/// `Vec`, slice or array of `Range<u64>`.
///
/// ```
/// use zarr_array::IntoRegion;
/// let region = [0..10u64, 5..6].into_region()?;
/// assert_eq!(region.shape(), vec![10, 1]);
/// # Ok::<(), zarr_array::Error>(())
/// ```
pub trait IntoRegion {
    /// The region.
    ///
    /// # Errors
    /// [`zarr_core::Error::InvalidRegion`] for a range whose start is past its end.
    fn into_region(self) -> Result<Region>;
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

impl IntoRegion for Vec<Range<u64>> {
    fn into_region(self) -> Result<Region> {
        Ok(Region::try_new(self)?)
    }
}

impl IntoRegion for &[Range<u64>] {
    fn into_region(self) -> Result<Region> {
        Ok(Region::try_new(self.to_vec())?)
    }
}

impl<const N: usize> IntoRegion for [Range<u64>; N] {
    fn into_region(self) -> Result<Region> {
        Ok(Region::try_new(self.to_vec())?)
    }
}

/// A range alone is a region of a one-dimensional array: `array.read(0..10)`.
impl IntoRegion for Range<u64> {
    fn into_region(self) -> Result<Region> {
        Ok(Region::try_new(vec![self])?)
    }
}
