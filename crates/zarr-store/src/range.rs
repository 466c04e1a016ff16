//! Byte ranges within a value.

use std::fmt;
use std::ops::{Range, RangeFrom, RangeFull};

use bytes::Bytes;

use crate::{Error, Result};

/// A range of bytes within one value: bounded `[start, end)`, from an offset to the end, or the
/// last `n` bytes (a suffix).
///
/// A suffix reads the end of a value without knowing its length, as a shard index stored at the
/// end of a shard needs. Offsets and lengths are `u64` everywhere; all arithmetic is checked.
///
/// A range is checked against a value's size when it is applied ([`ByteRange::resolve`]); a
/// range reaching beyond the end of the value is the typed error
/// [`Error::RangeOutOfBounds`], never a silently shorter answer.
///
/// ```
/// use zarr_store::ByteRange;
///
/// assert_eq!(ByteRange::try_new(2, 5)?.resolve(10)?, 2..5);
/// assert_eq!(ByteRange::from_offset(4).resolve(10)?, 4..10);
/// assert_eq!(ByteRange::suffix(3).resolve(10)?, 7..10);
/// assert!(ByteRange::try_new(8, 12)?.resolve(10).is_err());
/// assert!(ByteRange::try_new(5, 2).is_err());
/// # Ok::<(), zarr_store::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ByteRange(ByteRangeForm);

/// The three forms of a [`ByteRange`], as returned by [`ByteRange::form`].
///
/// For a `Bounded` form obtained from a `ByteRange`, `start <= end` always holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteRangeForm {
    /// Bytes `start..end` (end exclusive).
    Bounded {
        /// The first byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// Bytes from `start` to the end of the value.
    FromOffset {
        /// The first byte.
        start: u64,
    },
    /// The last `length` bytes of the value.
    Suffix {
        /// How many bytes.
        length: u64,
    },
}

impl ByteRange {
    /// The whole value.
    pub const FULL: Self = Self(ByteRangeForm::FromOffset { start: 0 });

    /// Bytes `start..end`.
    ///
    /// # Errors
    /// [`Error::InvalidByteRange`] if `end < start`.
    pub fn try_new(start: u64, end: u64) -> Result<Self> {
        if end < start {
            return Err(Error::InvalidByteRange {
                start,
                what: "end",
                value: end,
            });
        }
        Ok(Self(ByteRangeForm::Bounded { start, end }))
    }

    /// Bytes `start..end`.
    ///
    /// # Panics
    /// If `end < start`; use [`ByteRange::try_new`] for input.
    #[must_use]
    #[track_caller]
    pub fn new(start: u64, end: u64) -> Self {
        match Self::try_new(start, end) {
            Ok(range) => range,
            Err(err) => panic!("{err}"),
        }
    }

    /// `length` bytes starting at `start`.
    ///
    /// # Errors
    /// [`Error::InvalidByteRange`] if `start + length` overflows `u64`.
    pub fn with_length(start: u64, length: u64) -> Result<Self> {
        match start.checked_add(length) {
            Some(end) => Ok(Self(ByteRangeForm::Bounded { start, end })),
            None => Err(Error::InvalidByteRange {
                start,
                what: "length",
                value: length,
            }),
        }
    }

    /// Bytes from `start` to the end of the value.
    #[must_use]
    pub const fn from_offset(start: u64) -> Self {
        Self(ByteRangeForm::FromOffset { start })
    }

    /// The last `length` bytes of the value.
    #[must_use]
    pub const fn suffix(length: u64) -> Self {
        Self(ByteRangeForm::Suffix { length })
    }

    /// Which form the range has, with its numbers.
    #[must_use]
    pub const fn form(&self) -> ByteRangeForm {
        self.0
    }

    /// The number of bytes the range covers, when it does not depend on the value's size
    /// (bounded ranges and suffixes).
    #[must_use]
    pub const fn known_len(&self) -> Option<u64> {
        match self.0 {
            ByteRangeForm::Bounded { start, end } => Some(end - start),
            ByteRangeForm::Suffix { length } => Some(length),
            ByteRangeForm::FromOffset { .. } => None,
        }
    }

    /// Whether the range is the whole value.
    #[must_use]
    pub const fn is_full(&self) -> bool {
        matches!(self.0, ByteRangeForm::FromOffset { start: 0 })
    }

    /// The absolute bytes `start..end` this range covers in a value of `size` bytes.
    ///
    /// # Errors
    /// [`Error::RangeOutOfBounds`] (without a key) if the range reaches beyond `size`: a bounded
    /// end or an offset past the end, or a suffix longer than the value.
    pub fn resolve(&self, size: u64) -> Result<Range<u64>> {
        let out_of_bounds = || Error::RangeOutOfBounds {
            key: None,
            range: *self,
            size,
        };
        match self.0 {
            ByteRangeForm::Bounded { start, end } if end <= size => Ok(start..end),
            ByteRangeForm::FromOffset { start } if start <= size => Ok(start..size),
            ByteRangeForm::Suffix { length } if length <= size => Ok(size - length..size),
            _ => Err(out_of_bounds()),
        }
    }

    /// The part of `value` this range covers, as a zero-copy slice.
    ///
    /// # Errors
    /// [`Error::RangeOutOfBounds`] (without a key) if the range reaches beyond the value.
    pub fn slice(&self, value: &Bytes) -> Result<Bytes> {
        let size = value.len() as u64;
        let range = self.resolve(size)?;
        // Both ends are at most `value.len()`, so they fit in a usize.
        let start = usize::try_from(range.start).map_err(|_| self.too_large(range.start))?;
        let end = usize::try_from(range.end).map_err(|_| self.too_large(range.end))?;
        Ok(value.slice(start..end))
    }

    fn too_large(&self, value: u64) -> Error {
        Error::TooLarge {
            what: "byte range end",
            value,
            key: None,
        }
    }
}

impl fmt::Debug for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ByteRangeForm::Bounded { start, end } => write!(f, "{start}..{end}"),
            ByteRangeForm::FromOffset { start } => write!(f, "{start}.."),
            ByteRangeForm::Suffix { length } => write!(f, "last {length} bytes"),
        }
    }
}

impl TryFrom<Range<u64>> for ByteRange {
    type Error = Error;

    fn try_from(range: Range<u64>) -> Result<Self> {
        Self::try_new(range.start, range.end)
    }
}

impl From<RangeFrom<u64>> for ByteRange {
    fn from(range: RangeFrom<u64>) -> Self {
        Self::from_offset(range.start)
    }
}

impl From<RangeFull> for ByteRange {
    fn from(_: RangeFull) -> Self {
        Self::FULL
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn forms_resolve() {
        assert_eq!(ByteRange::new(0, 0).resolve(0).unwrap(), 0..0);
        assert_eq!(ByteRange::new(3, 10).resolve(10).unwrap(), 3..10);
        assert_eq!(ByteRange::from_offset(10).resolve(10).unwrap(), 10..10);
        assert_eq!(ByteRange::suffix(0).resolve(10).unwrap(), 10..10);
        assert_eq!(ByteRange::suffix(10).resolve(10).unwrap(), 0..10);
        assert_eq!(ByteRange::FULL.resolve(7).unwrap(), 0..7);
        assert!(ByteRange::FULL.is_full());
        assert_eq!(ByteRange::from(..), ByteRange::FULL);
        assert_eq!(ByteRange::from(4..), ByteRange::from_offset(4));
        assert_eq!(ByteRange::try_from(1..2).unwrap(), ByteRange::new(1, 2));
    }

    #[test]
    fn beyond_the_value_is_a_typed_error() {
        for range in [
            ByteRange::new(5, 11),
            ByteRange::new(11, 11),
            ByteRange::from_offset(11),
            ByteRange::suffix(11),
        ] {
            match range.resolve(10) {
                Err(Error::RangeOutOfBounds {
                    key: None,
                    range: r,
                    size: 10,
                }) => assert_eq!(r, range),
                other => panic!("{range}: {other:?}"),
            }
        }
        let err = ByteRange::suffix(11)
            .resolve(10)
            .unwrap_err()
            .with_key(&crate::StoreKey::new("a/b"));
        assert_eq!(
            err.to_string(),
            "byte range last 11 bytes is beyond the end of the 10-byte value at a/b"
        );
    }

    #[test]
    fn construction_is_checked() {
        assert!(matches!(
            ByteRange::try_new(5, 4),
            Err(Error::InvalidByteRange {
                start: 5,
                what: "end",
                value: 4
            })
        ));
        assert!(matches!(
            ByteRange::with_length(u64::MAX, 1),
            Err(Error::InvalidByteRange { what: "length", .. })
        ));
        assert_eq!(
            ByteRange::with_length(u64::MAX - 1, 1).unwrap(),
            ByteRange::new(u64::MAX - 1, u64::MAX)
        );
        assert_eq!(ByteRange::new(2, 9).known_len(), Some(7));
        assert_eq!(ByteRange::suffix(4).known_len(), Some(4));
        assert_eq!(ByteRange::from_offset(4).known_len(), None);
    }

    #[test]
    fn slices_share_the_buffer() {
        let value = Bytes::from_static(b"0123456789");
        let part = ByteRange::new(2, 5).slice(&value).unwrap();
        assert_eq!(&part[..], b"234");
        assert_eq!(part.as_ptr(), value[2..].as_ptr());
        assert_eq!(&ByteRange::suffix(2).slice(&value).unwrap()[..], b"89");
    }

    fn any_range() -> impl Strategy<Value = ByteRange> {
        prop_oneof![
            (any::<u64>(), any::<u64>()).prop_map(|(a, b)| ByteRange::new(a.min(b), a.max(b))),
            any::<u64>().prop_map(ByteRange::from_offset),
            any::<u64>().prop_map(ByteRange::suffix),
            (0u64..64, 0u64..64).prop_map(|(a, b)| ByteRange::new(a.min(b), a.max(b))),
            (0u64..64).prop_map(ByteRange::from_offset),
            (0u64..64).prop_map(ByteRange::suffix),
        ]
    }

    proptest! {
        #[test]
        fn resolve_stays_inside_or_errs(range in any_range(), size in prop_oneof![any::<u64>(), 0u64..64]) {
            match range.resolve(size) {
                Ok(r) => {
                    prop_assert!(r.start <= r.end && r.end <= size);
                    if let Some(len) = range.known_len() {
                        prop_assert_eq!(r.end - r.start, len);
                    }
                }
                Err(Error::RangeOutOfBounds { size: s, .. }) => prop_assert_eq!(s, size),
                Err(other) => prop_assert!(false, "unexpected {other}"),
            }
        }

        #[test]
        fn slice_matches_resolve(range in any_range(), len in 0usize..64) {
            let value = Bytes::from((0..len).map(|i| i as u8).collect::<Vec<_>>());
            match (range.slice(&value), range.resolve(len as u64)) {
                (Ok(part), Ok(r)) => prop_assert_eq!(&part[..], &value[r.start as usize..r.end as usize]),
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "slice {a:?} vs resolve {b:?}"),
            }
        }

        #[test]
        fn with_length_is_checked(start in any::<u64>(), len in any::<u64>()) {
            match ByteRange::with_length(start, len) {
                Ok(range) => prop_assert_eq!(range.known_len(), Some(len)),
                Err(_) => prop_assert!(start.checked_add(len).is_none()),
            }
        }
    }
}
