//! Zero-copy conversions to and from arrow-array (feature `arrow`).
//!
//! | zarr-vlen | arrow-array |
//! |---|---|
//! | [`VlenStrings<i32>`] | [`StringArray`] |
//! | [`VlenStrings<i64>`] | [`LargeStringArray`] |
//! | [`VlenBinary<i32>`] | [`BinaryArray`] |
//! | [`VlenBinary<i64>`] | [`LargeBinaryArray`] |
//!
//! Into Arrow ([`From`]) always succeeds and shares both buffers: our invariants are a
//! superset of Arrow's, so nothing is checked again. From Arrow ([`TryFrom`]) shares the
//! values buffer; it fails only for arrays with nulls ([`Error::ArrowNulls`]: Zarr elements
//! are never null). A sliced Arrow array (offsets not starting at 0) gets rebased offsets and
//! a slice of the same values buffer.
//!
//! ```
//! use arrow_array::{Array, StringArray};
//! use zarr_vlen::VlenStrings;
//!
//! let strings = VlenStrings::<i32>::try_from(&["α", "", "βγ"][..])?;
//! let arrow = StringArray::from(strings.clone());
//! assert_eq!(arrow.value(2), "βγ");
//! assert_eq!(arrow.values().as_ptr(), strings.values().as_ptr()); // no copy
//!
//! let back = VlenStrings::<i32>::try_from(&arrow)?;
//! assert_eq!(back, strings);
//! assert_eq!(back.values().as_ptr(), arrow.values().as_ptr());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use arrow_array::{Array, GenericBinaryArray, GenericStringArray, OffsetSizeTrait};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};

#[cfg(doc)]
use arrow_array::{BinaryArray, LargeBinaryArray, LargeStringArray, StringArray};

use crate::array::{VlenBinary, VlenStrings};
use crate::error::{Error, Result};
use crate::offset::VlenOffset;

/// Offsets starting at 0 and the values they cover, from an Arrow array's parts (which
/// Arrow has validated: non-empty, non-decreasing, within the values).
fn rebase<O: VlenOffset>(offsets: &OffsetBuffer<O>, values: &Buffer) -> (ScalarBuffer<O>, Buffer) {
    let first = offsets[0].as_usize();
    let last = offsets[offsets.len() - 1].as_usize();
    let values = if first == 0 && last == values.len() {
        values.clone()
    } else {
        values.slice_with_length(first, last - first)
    };
    let scalars: ScalarBuffer<O> = offsets.inner().clone();
    let scalars = if first == 0 {
        scalars
    } else {
        // Arrow's offsets are non-decreasing and non-negative: no underflow.
        scalars
            .iter()
            .map(|&o| O::usize_as(o.as_usize() - first))
            .collect()
    };
    (scalars, values)
}

fn check_nulls(array: &dyn Array) -> Result<()> {
    match array.null_count() {
        0 => Ok(()),
        null_count => Err(Error::ArrowNulls { null_count }),
    }
}

impl<O: VlenOffset + OffsetSizeTrait> From<VlenBinary<O>> for GenericBinaryArray<O> {
    fn from(a: VlenBinary<O>) -> Self {
        let (offsets, values) = a.into_parts();
        // SAFETY: VlenBinary's offsets start at 0, never decrease and end at the values
        // length, which is all Arrow's binary arrays need.
        unsafe { GenericBinaryArray::new_unchecked(offsets, values, None) }
    }
}

impl<O: VlenOffset + OffsetSizeTrait> From<VlenStrings<O>> for GenericStringArray<O> {
    fn from(s: VlenStrings<O>) -> Self {
        let (offsets, values) = s.into_parts();
        // SAFETY: as for binary, and every element is valid UTF-8 (VlenStrings' invariant).
        unsafe { GenericStringArray::new_unchecked(offsets, values, None) }
    }
}

impl<O: VlenOffset + OffsetSizeTrait> TryFrom<&GenericBinaryArray<O>> for VlenBinary<O> {
    type Error = Error;
    /// # Errors
    /// [`Error::ArrowNulls`] if the array has nulls.
    fn try_from(a: &GenericBinaryArray<O>) -> Result<Self> {
        check_nulls(a)?;
        let (offsets, values) = rebase(a.offsets(), a.values());
        // SAFETY: Arrow's array is valid; rebasing makes the offsets start at 0 and end at
        // the length of the sliced values.
        Ok(unsafe { VlenBinary::new_unchecked(offsets, values) })
    }
}

impl<O: VlenOffset + OffsetSizeTrait> TryFrom<GenericBinaryArray<O>> for VlenBinary<O> {
    type Error = Error;
    fn try_from(a: GenericBinaryArray<O>) -> Result<Self> {
        Self::try_from(&a)
    }
}

impl<O: VlenOffset + OffsetSizeTrait> TryFrom<&GenericStringArray<O>> for VlenStrings<O> {
    type Error = Error;
    /// # Errors
    /// [`Error::ArrowNulls`] if the array has nulls.
    fn try_from(a: &GenericStringArray<O>) -> Result<Self> {
        check_nulls(a)?;
        let (offsets, values) = rebase(a.offsets(), a.values());
        // SAFETY: as for binary; Arrow's string arrays hold valid UTF-8 split at character
        // boundaries.
        let binary = unsafe { VlenBinary::new_unchecked(offsets, values) };
        Ok(unsafe { VlenStrings::from_binary_unchecked(binary) })
    }
}

impl<O: VlenOffset + OffsetSizeTrait> TryFrom<GenericStringArray<O>> for VlenStrings<O> {
    type Error = Error;
    fn try_from(a: GenericStringArray<O>) -> Result<Self> {
        Self::try_from(&a)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{BinaryArray, LargeBinaryArray, LargeStringArray, StringArray};

    use super::*;

    #[test]
    fn round_trips_share_buffers() {
        let s = VlenStrings::<i64>::try_from(&["x", "🦀", ""][..]).unwrap();
        let a = LargeStringArray::from(s.clone());
        assert_eq!(a.values().as_ptr(), s.values().as_ptr());
        assert_eq!(a.value_offsets().as_ptr(), s.offsets().as_ptr());
        let back = VlenStrings::<i64>::try_from(a).unwrap();
        assert_eq!(back, s);

        let b = VlenBinary::<i32>::try_from(&[&b"\xff"[..], b"", b"ab"][..]).unwrap();
        let a = BinaryArray::from(b.clone());
        assert_eq!(a.values().as_ptr(), b.values().as_ptr());
        assert_eq!(a.value(0), b"\xff");
        assert_eq!(VlenBinary::<i32>::try_from(&a).unwrap(), b);

        let lb = LargeBinaryArray::from(b.with_offset_type::<i64>().unwrap());
        assert_eq!(lb.value(2), b"ab");
        assert_eq!(
            VlenBinary::<i64>::try_from(lb).unwrap().to_vecs(),
            b.to_vecs()
        );
    }

    #[test]
    fn sliced_arrays_are_rebased_without_copying() {
        let a = StringArray::from(vec!["ab", "c", "", "def", "g"]);
        let sliced = a.slice(1, 3);
        let s = VlenStrings::<i32>::try_from(&sliced).unwrap();
        assert_eq!(s.to_strings(), ["c", "", "def"]);
        assert_eq!(s.offsets().as_ref(), &[0, 1, 1, 4]);
        assert_eq!(s.values().as_ptr(), a.values()[2..].as_ptr());
        assert_eq!(s.values().len(), 4);
    }

    #[test]
    fn nulls_are_refused() {
        let a = StringArray::from(vec![Some("a"), None, Some("b")]);
        let e = VlenStrings::<i32>::try_from(&a).unwrap_err();
        assert!(matches!(e, Error::ArrowNulls { null_count: 1 }), "{e}");
        let b = BinaryArray::from(vec![None, Some(&b"x"[..])]);
        assert!(VlenBinary::<i32>::try_from(&b).is_err());
    }
}
