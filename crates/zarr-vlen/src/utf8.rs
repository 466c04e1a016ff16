//! UTF-8 checks of a whole values buffer split by offsets.

use crate::error::{Error, Result};

/// Whether `b` continues a multi-byte UTF-8 sequence (so no element may start or end there).
#[inline]
pub(crate) fn is_continuation(b: u8) -> bool {
    (b as i8) < -0x40
}

/// Check that every element `values[offsets[i]..offsets[i + 1]]` is valid UTF-8, where the
/// offsets are already known to be valid (start 0, non-decreasing, end at `values.len()`).
///
/// The whole buffer is validated once; then no element boundary may fall inside a character
/// (on a continuation byte). Both together are equivalent to every element being valid.
pub(crate) fn check_utf8<T: Copy>(
    values: &[u8],
    offsets: &[T],
    to_usize: impl Fn(T) -> usize,
) -> Result<()> {
    check_buffer(values, offsets, &to_usize)?;
    if values.is_ascii() {
        return Ok(());
    }
    // Interior offsets only: the first is 0 and the last is the end.
    let inner = offsets
        .get(1..offsets.len().saturating_sub(1))
        .unwrap_or(&[]);
    let split = inner.iter().fold(false, |bad, &o| {
        bad | values.get(to_usize(o)).is_some_and(|&b| is_continuation(b))
    });
    report_split(values, offsets, to_usize, split)
}

/// [`check_utf8`] for a caller that has found out whether any non-empty element starts with
/// a continuation byte (`split`): with the whole buffer valid, that is the only way for an
/// element boundary to fall inside a character (an empty element's boundary is also the
/// start of the next non-empty one, or the end of the buffer).
pub(crate) fn check_utf8_split<T: Copy>(
    values: &[u8],
    offsets: &[T],
    to_usize: impl Fn(T) -> usize,
    split: bool,
) -> Result<()> {
    check_buffer(values, offsets, &to_usize)?;
    report_split(values, offsets, to_usize, split)
}

/// The error for the first element boundary inside a character, if `split` says there is
/// one.
fn report_split<T: Copy>(
    values: &[u8],
    offsets: &[T],
    to_usize: impl Fn(T) -> usize,
    split: bool,
) -> Result<()> {
    if split {
        let inner = offsets
            .get(1..offsets.len().saturating_sub(1))
            .unwrap_or(&[]);
        let i = inner
            .iter()
            .position(|&o| values.get(to_usize(o)).is_some_and(|&b| is_continuation(b)))
            .unwrap_or_default();
        // Element i ends (and element i + 1 starts) inside a character; report the first.
        return Err(Error::InvalidUtf8 {
            index: i,
            byte: inner.get(i).map_or(0, |&o| to_usize(o)),
        });
    }
    Ok(())
}

/// Check that the whole buffer is UTF-8, naming the element of the first invalid byte.
fn check_buffer<T: Copy>(
    values: &[u8],
    offsets: &[T],
    to_usize: &impl Fn(T) -> usize,
) -> Result<()> {
    if let Err(e) = std::str::from_utf8(values) {
        let byte = e.valid_up_to();
        return Err(Error::InvalidUtf8 {
            index: element_at(offsets, byte, to_usize),
            byte,
        });
    }
    Ok(())
}

/// The index of the element holding byte `byte` (the last element starting at or before it).
fn element_at<T: Copy>(offsets: &[T], byte: usize, to_usize: &impl Fn(T) -> usize) -> usize {
    offsets
        .partition_point(|&o| to_usize(o) <= byte)
        .saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(values: &[u8], offsets: &[usize]) -> Result<()> {
        check_utf8(values, offsets, |o| o)
    }

    #[test]
    fn whole_elements_are_checked() {
        assert!(check("aé€🦀".as_bytes(), &[0, 1, 3, 6, 10]).is_ok());
        assert!(check(b"", &[0, 0, 0]).is_ok());
        // "é" split between two elements: the buffer is valid, the elements are not.
        let e = check("aé".as_bytes(), &[0, 2, 3]).unwrap_err();
        assert!(matches!(e, Error::InvalidUtf8 { index: 0, byte: 2 }), "{e}");
        // An invalid byte inside element 2 (after an empty element 1).
        let e = check(b"ab\xffc", &[0, 2, 2, 4]).unwrap_err();
        assert!(matches!(e, Error::InvalidUtf8 { index: 2, byte: 2 }), "{e}");
        // A truncated sequence at the end.
        let e = check(b"ab\xe2\x82", &[0, 2, 4]).unwrap_err();
        assert!(matches!(e, Error::InvalidUtf8 { index: 1, .. }), "{e}");
    }
}
