//! Offset types (32-bit and 64-bit) and the checks every offsets buffer goes through.

use arrow_buffer::ArrowNativeType;

use crate::error::{Error, Result};

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// The offset type of a variable-length array: `i32` (Arrow's `Utf8`/`Binary`, at most
/// `i32::MAX` value bytes) or `i64` (`LargeUtf8`/`LargeBinary`). Signed, as in Arrow.
///
/// Sealed: only `i32` and `i64` implement it.
pub trait VlenOffset:
    sealed::Sealed + ArrowNativeType + Ord + std::fmt::Debug + Send + Sync + 'static
{
    /// `"int32"` or `"int64"`.
    const NAME: &'static str;
    /// The size in bytes.
    const SIZE: usize;
    /// The largest offset as a `usize` (saturating on 32-bit platforms).
    #[doc(hidden)]
    const MAX_USIZE: usize;

    /// `v` as an offset, or `None` if it does not fit.
    fn try_from_usize(v: usize) -> Option<Self>;
    /// The offset as `i64` (lossless), for messages.
    fn as_i64(self) -> i64;
    /// Read a little-endian offset from exactly `SIZE` bytes.
    #[doc(hidden)]
    fn read_le(bytes: &[u8]) -> Self;
    /// Append the offset in little-endian order.
    #[doc(hidden)]
    fn write_le(self, out: &mut Vec<u8>);
}

impl VlenOffset for i32 {
    const NAME: &'static str = "int32";
    const SIZE: usize = 4;
    const MAX_USIZE: usize = i32::MAX as usize;

    fn try_from_usize(v: usize) -> Option<Self> {
        i32::try_from(v).ok()
    }
    fn as_i64(self) -> i64 {
        i64::from(self)
    }
    fn read_le(bytes: &[u8]) -> Self {
        let mut b = [0u8; 4];
        b.copy_from_slice(bytes);
        i32::from_le_bytes(b)
    }
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl VlenOffset for i64 {
    const NAME: &'static str = "int64";
    const SIZE: usize = 8;
    const MAX_USIZE: usize = if usize::BITS >= 64 {
        i64::MAX as usize
    } else {
        usize::MAX
    };

    fn try_from_usize(v: usize) -> Option<Self> {
        i64::try_from(v).ok()
    }
    fn as_i64(self) -> i64 {
        self
    }
    fn read_le(bytes: &[u8]) -> Self {
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        i64::from_le_bytes(b)
    }
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// The offset for `values_len` value bytes, or [`Error::OffsetOverflow`].
pub(crate) fn offset_for<O: VlenOffset>(values_len: usize) -> Result<O> {
    O::try_from_usize(values_len).ok_or(Error::OffsetOverflow {
        values_len: values_len as u64,
        offset_type: O::NAME,
    })
}

/// Check that `offsets` start at 0, never decrease and end at `values_len`.
pub(crate) fn check_offsets<O: VlenOffset>(offsets: &[O], values_len: usize) -> Result<()> {
    let Some(&first) = offsets.first() else {
        return Err(Error::NoOffsets);
    };
    if first != O::usize_as(0) {
        return Err(Error::FirstOffset {
            found: first.as_i64(),
        });
    }
    // Branch-free over the whole buffer (so it vectorises); find the culprit only on failure.
    let sorted = offsets.windows(2).fold(true, |ok, w| ok & (w[0] <= w[1]));
    if !sorted {
        let i = offsets
            .windows(2)
            .position(|w| w[1] < w[0])
            .unwrap_or_default();
        return Err(Error::DecreasingOffset {
            index: i + 1,
            offset: offsets[i + 1].as_i64(),
            previous: offsets[i].as_i64(),
        });
    }
    let last = offsets[offsets.len() - 1];
    if O::try_from_usize(values_len) != Some(last) {
        return Err(Error::LastOffset {
            last: last.as_i64(),
            values_len: values_len as u64,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_checked() {
        assert!(check_offsets::<i32>(&[0, 1, 1, 4], 4).is_ok());
        assert!(check_offsets::<i64>(&[0], 0).is_ok());
        assert!(matches!(
            check_offsets::<i32>(&[], 0),
            Err(Error::NoOffsets)
        ));
        assert!(matches!(
            check_offsets::<i32>(&[1, 4], 4),
            Err(Error::FirstOffset { found: 1 })
        ));
        assert!(matches!(
            check_offsets::<i32>(&[-1, 4], 4),
            Err(Error::FirstOffset { found: -1 })
        ));
        let e = check_offsets::<i64>(&[0, 3, 2, 4], 4).unwrap_err();
        assert!(matches!(
            e,
            Error::DecreasingOffset {
                index: 2,
                offset: 2,
                previous: 3
            }
        ));
        assert_eq!(e.to_string(), "offset 2 (2) is less than offset 1 (3)");
        assert!(matches!(
            check_offsets::<i32>(&[0, 3], 4),
            Err(Error::LastOffset {
                last: 3,
                values_len: 4
            })
        ));
        assert!(matches!(
            offset_for::<i32>(1 << 31),
            Err(Error::OffsetOverflow { .. })
        ));
        assert_eq!(offset_for::<i64>(1 << 31).unwrap(), 1 << 31);
    }
}
