//! Rectangular regions of an array: one half-open range of element indices per dimension.

use std::fmt;
use std::ops::Range;

use crate::error::{Error, Result};

/// A rectangular region of an n-dimensional array: one half-open range `start..end` of element
/// indices per dimension.
///
/// A region is valid by construction (`start <= end` in every dimension). It knows nothing of
/// any particular array; [`Region::check_within`] tests it against an array shape.
///
/// A region with a zero-length dimension is empty. A 0-dimensional region (no ranges at all) is
/// **not** empty: like a 0-dimensional array it holds exactly one element.
///
/// ```
/// use zarr_core::Region;
///
/// let region = Region::try_new(vec![0..10, 5..6])?;
/// assert_eq!(region.rank(), 2);
/// assert_eq!(region.shape(), vec![10, 1]);
/// assert_eq!(region.num_elements()?, 10);
/// assert_eq!(region.to_string(), "[0..10, 5..6]");
/// region.check_within(&[10, 10])?;
/// assert!(region.check_within(&[10, 5]).is_err());
///
/// assert!(Region::try_new(vec![3..2]).is_err());
/// assert_eq!(Region::full(&[4, 0]).ranges(), &[0..4, 0..0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Region {
    ranges: Vec<Range<u64>>,
}

impl Region {
    /// A region from one range per dimension.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if a range has `start > end`, naming its dimension.
    pub fn try_new(ranges: Vec<Range<u64>>) -> Result<Self> {
        if let Some((dimension, range)) = ranges.iter().enumerate().find(|(_, r)| r.start > r.end) {
            return Err(Error::InvalidRegion {
                dimension,
                start: range.start,
                end: range.end,
            });
        }
        Ok(Self { ranges })
    }

    /// The whole of an array of the given shape: `0..shape[i]` in every dimension.
    pub fn full(shape: &[u64]) -> Self {
        Self {
            ranges: shape.iter().map(|&n| 0..n).collect(),
        }
    }

    /// A region from ranges the caller has already checked (`start <= end` everywhere).
    pub(crate) fn from_valid_ranges(ranges: Vec<Range<u64>>) -> Self {
        debug_assert!(ranges.iter().all(|r| r.start <= r.end));
        Self { ranges }
    }

    /// The ranges, one per dimension.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// The ranges, one per dimension, by value.
    pub fn into_ranges(self) -> Vec<Range<u64>> {
        self.ranges
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.ranges.len()
    }

    /// The first element of the region in every dimension (the `start`s).
    pub fn starts(&self) -> Vec<u64> {
        self.ranges.iter().map(|r| r.start).collect()
    }

    /// One past the last element of the region in every dimension (the `end`s).
    pub fn ends(&self) -> Vec<u64> {
        self.ranges.iter().map(|r| r.end).collect()
    }

    /// The length of the region in every dimension.
    pub fn shape(&self) -> Vec<u64> {
        self.ranges.iter().map(|r| r.end - r.start).collect()
    }

    /// The number of elements in the region: the product of its lengths (`1` for a
    /// 0-dimensional region, `0` for an empty one).
    ///
    /// # Errors
    /// [`Error::Overflow`] if the product does not fit in `u64`.
    pub fn num_elements(&self) -> Result<u64> {
        if self.is_empty() {
            return Ok(0);
        }
        self.ranges.iter().try_fold(1u64, |acc, r| {
            acc.checked_mul(r.end - r.start)
                .ok_or_else(|| Error::overflow(format!("the number of elements of region {self}")))
        })
    }

    /// Whether the region holds no element: some dimension has length zero. A 0-dimensional
    /// region is not empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.iter().any(|r| r.start == r.end)
    }

    /// Whether the region contains the element with the given indices (`false` when the ranks
    /// differ).
    pub fn contains(&self, element: &[u64]) -> bool {
        element.len() == self.ranges.len()
            && self.ranges.iter().zip(element).all(|(r, x)| r.contains(x))
    }

    /// Check that the region lies inside an array of the given shape.
    ///
    /// # Errors
    /// [`Error::RankMismatch`] if the region and the shape have different ranks;
    /// [`Error::RegionOutOfBounds`] if a range ends past the array's length in its dimension.
    pub fn check_within(&self, shape: &[u64]) -> Result<()> {
        if shape.len() != self.ranges.len() {
            return Err(Error::RankMismatch {
                what: "region".into(),
                expected: shape.len(),
                found: self.ranges.len(),
            });
        }
        if self.ranges.iter().zip(shape).any(|(r, &n)| r.end > n) {
            return Err(Error::RegionOutOfBounds {
                region: self.to_string(),
                shape: shape.to_vec(),
            });
        }
        Ok(())
    }
}

/// Prints the region as `[0..10, 5..6]` (`[]` for a 0-dimensional region).
impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}..{}", r.start, r.end)?;
        }
        f.write_str("]")
    }
}

/// The indices of the element at C-order position `position` (the last dimension varies
/// fastest) of an array of `shape`; `None` if the array has no such element.
///
/// ```
/// use zarr_core::{ravel_index, unravel_index};
///
/// assert_eq!(unravel_index(7, &[2, 3, 4]), Some(vec![0, 1, 3]));
/// assert_eq!(ravel_index(&[0, 1, 3], &[2, 3, 4]), Some(7));
/// assert_eq!(unravel_index(24, &[2, 3, 4]), None);
/// assert_eq!(unravel_index(0, &[]), Some(vec![])); // a 0-d array has one element
/// ```
pub fn unravel_index(position: u64, shape: &[u64]) -> Option<Vec<u64>> {
    let mut indices = vec![0u64; shape.len()];
    let mut rest = position;
    for (index, &n) in indices.iter_mut().zip(shape).rev() {
        if n == 0 {
            return None;
        }
        *index = rest % n;
        rest /= n;
    }
    (rest == 0).then_some(indices)
}

/// The C-order position of the element at `indices` of an array of `shape`; `None` if the
/// ranks differ, an index lies outside its dimension or the position overflows `u64`.
pub fn ravel_index(indices: &[u64], shape: &[u64]) -> Option<u64> {
    if indices.len() != shape.len() {
        return None;
    }
    indices
        .iter()
        .zip(shape)
        .try_fold(0u64, |position, (&i, &n)| {
            if i >= n {
                return None;
            }
            position.checked_mul(n)?.checked_add(i)
        })
}

#[cfg(test)]
// Tests build regions from literal ranges, including one-range and reversed ones on purpose.
#[allow(clippy::single_range_in_vec_init, clippy::reversed_empty_ranges)]
mod tests {
    use super::*;

    #[test]
    fn try_new_refuses_reversed_ranges_naming_the_dimension() {
        let err = Region::try_new(vec![0..1, 5..4]).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidRegion {
                dimension: 1,
                start: 5,
                end: 4
            }
        ));
        assert!(err.to_string().contains("dimension 1"), "{err}");
        Region::try_new(vec![3..3]).unwrap();
    }

    #[test]
    fn unravel_and_ravel_are_inverse_and_refuse_what_is_outside() {
        for shape in [vec![], vec![5], vec![2, 3, 4], vec![1, 7, 1, 2]] {
            let n: u64 = shape.iter().product();
            for p in 0..n {
                let indices = unravel_index(p, &shape).unwrap();
                assert!(indices.iter().zip(&shape).all(|(i, s)| i < s));
                assert_eq!(ravel_index(&indices, &shape), Some(p), "{shape:?} {p}");
            }
            assert_eq!(unravel_index(n, &shape), None, "{shape:?}");
        }
        assert_eq!(unravel_index(0, &[3, 0]), None);
        assert_eq!(ravel_index(&[1, 3], &[2, 3]), None);
        assert_eq!(ravel_index(&[1], &[2, 3]), None);
        assert_eq!(ravel_index(&[u64::MAX - 1, 1], &[u64::MAX, 2]), None);
        assert_eq!(ravel_index(&[1, 1], &[u64::MAX, 2]), Some(3));
    }

    #[test]
    fn shape_elements_and_emptiness() {
        let r = Region::try_new(vec![2..5, 0..4]).unwrap();
        assert_eq!(r.rank(), 2);
        assert_eq!(r.shape(), vec![3, 4]);
        assert_eq!(r.starts(), vec![2, 0]);
        assert_eq!(r.ends(), vec![5, 4]);
        assert_eq!(r.num_elements().unwrap(), 12);
        assert!(!r.is_empty());

        let zero_d = Region::try_new(vec![]).unwrap();
        assert!(!zero_d.is_empty());
        assert_eq!(zero_d.num_elements().unwrap(), 1);
        assert_eq!(zero_d, Region::full(&[]));

        let empty = Region::try_new(vec![0..u64::MAX, 3..3, 0..u64::MAX]).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.num_elements().unwrap(), 0);
    }

    #[test]
    fn num_elements_overflow_is_an_error() {
        let r = Region::full(&[u64::MAX, 2]);
        assert!(matches!(r.num_elements(), Err(Error::Overflow { .. })));
        assert_eq!(
            Region::full(&[u64::MAX, 1]).num_elements().unwrap(),
            u64::MAX
        );
    }

    #[test]
    fn check_within() {
        let r = Region::try_new(vec![0..10, 5..6]).unwrap();
        r.check_within(&[10, 6]).unwrap();
        let err = r.check_within(&[10, 5]).unwrap_err();
        assert!(matches!(err, Error::RegionOutOfBounds { .. }));
        assert!(err.to_string().contains("[0..10, 5..6]"), "{err}");
        assert!(matches!(
            r.check_within(&[10]),
            Err(Error::RankMismatch {
                expected: 1,
                found: 2,
                ..
            })
        ));
        Region::full(&[]).check_within(&[]).unwrap();
        // An empty range at the very end of a dimension is inside the array.
        Region::try_new(vec![4..4])
            .unwrap()
            .check_within(&[4])
            .unwrap();
    }

    #[test]
    fn display_and_contains() {
        assert_eq!(Region::full(&[]).to_string(), "[]");
        assert_eq!(Region::full(&[3]).to_string(), "[0..3]");
        let r = Region::try_new(vec![1..3, 0..2]).unwrap();
        assert!(r.contains(&[2, 1]));
        assert!(!r.contains(&[3, 1]));
        assert!(!r.contains(&[2]));
        assert!(Region::full(&[]).contains(&[]));
        assert_eq!(r.into_ranges(), vec![1..3, 0..2]);
    }
}
