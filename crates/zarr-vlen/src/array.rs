//! Variable-length elements in memory, Arrow layout: [`VlenBinary`] and [`VlenStrings`].

use std::fmt;

use arrow_buffer::{ArrowNativeType, Buffer, OffsetBuffer, ScalarBuffer};
use zarr_codecs::{ArrayBytes, VlenBytes};

use crate::error::{Error, Result};
use crate::offset::{VlenOffset, check_offsets, offset_for};
use crate::utf8::check_utf8;

/// Variable-length byte strings in Arrow layout (`Binary` for `i32` offsets, `LargeBinary`
/// for `i64`): `len() + 1` offsets and one values buffer; element `i` is
/// `values[offsets[i]..offsets[i + 1]]`. There is no validity bitmap: Zarr elements are never
/// null.
///
/// Invariants, checked by every constructor: the offsets start at 0, never decrease, and end
/// at the length of the values buffer.
///
/// Both buffers are reference counted ([`arrow_buffer::Buffer`]): clones, slices of a chunk
/// and conversions to and from [`bytes::Bytes`], [`VlenBytes`] and (feature `arrow`)
/// arrow-array's `BinaryArray` share the values without copying them.
///
/// ```
/// use zarr_vlen::VlenBinary;
///
/// let a = VlenBinary::<i32>::try_from(&[&b"\x00\x01"[..], b"", b"abc"][..])?;
/// assert_eq!(a.len(), 3);
/// assert_eq!(a.value(2), b"abc");
/// assert_eq!(a.offsets().as_ref(), &[0, 2, 2, 5]);
/// assert_eq!(a.iter().map(<[u8]>::len).sum::<usize>(), 5);
/// assert_eq!(a.to_vecs(), vec![vec![0, 1], vec![], b"abc".to_vec()]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct VlenBinary<O: VlenOffset> {
    offsets: OffsetBuffer<O>,
    values: Buffer,
}

impl<O: VlenOffset> VlenBinary<O> {
    /// Elements from offsets and a values buffer, after checking the invariants.
    ///
    /// # Errors
    /// [`Error::NoOffsets`], [`Error::FirstOffset`], [`Error::DecreasingOffset`] or
    /// [`Error::LastOffset`].
    pub fn try_new(offsets: impl Into<ScalarBuffer<O>>, values: impl Into<Buffer>) -> Result<Self> {
        let offsets = offsets.into();
        let values = values.into();
        check_offsets(&offsets, values.len())?;
        // SAFETY: just checked.
        Ok(unsafe { Self::new_unchecked(offsets, values) })
    }

    /// Elements from parts whose invariants the caller has checked.
    ///
    /// # Safety
    /// The offsets must start at 0, never decrease, and end at `values.len()`. Element access
    /// relies on this for bounds (and [`VlenStrings`] for UTF-8 boundaries).
    pub(crate) unsafe fn new_unchecked(offsets: ScalarBuffer<O>, values: Buffer) -> Self {
        debug_assert!(check_offsets(&offsets, values.len()).is_ok());
        // SAFETY: non-empty and non-decreasing from 0, as the caller guarantees.
        let offsets = unsafe { OffsetBuffer::new_unchecked(offsets) };
        Self { offsets, values }
    }

    /// Copy elements into a new array.
    ///
    /// # Errors
    /// [`Error::OffsetOverflow`] if the elements hold more bytes than `O` can address.
    pub fn from_elements<T: AsRef<[u8]>>(elements: impl IntoIterator<Item = T>) -> Result<Self> {
        let elements = elements.into_iter();
        let mut offsets = Vec::with_capacity(elements.size_hint().0 + 1);
        let mut values = Vec::new();
        offsets.push(O::usize_as(0));
        for e in elements {
            values.extend_from_slice(e.as_ref());
            offsets.push(offset_for::<O>(values.len())?);
        }
        // SAFETY: offsets built from 0, growing with the values, ending at their length.
        Ok(unsafe { Self::new_unchecked(offsets.into(), Buffer::from_vec(values)) })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offsets (`len() + 1` of them).
    pub fn offsets(&self) -> &OffsetBuffer<O> {
        &self.offsets
    }

    /// The values buffer (all elements back to back).
    pub fn values(&self) -> &Buffer {
        &self.values
    }

    /// The offsets and the values buffer.
    pub fn into_parts(self) -> (OffsetBuffer<O>, Buffer) {
        (self.offsets, self.values)
    }

    /// The byte range of element `index` in the values buffer.
    fn range(&self, index: usize) -> std::ops::Range<usize> {
        self.offsets[index].as_usize()..self.offsets[index + 1].as_usize()
    }

    /// Element `index`.
    ///
    /// # Panics
    /// If `index >= len()`; see [`get`](Self::get) for a checked version.
    pub fn value(&self, index: usize) -> &[u8] {
        assert!(
            index < self.len(),
            "index {index} out of bounds for {} elements",
            self.len()
        );
        &self.values[self.range(index)]
    }

    /// Element `index`, or `None` past the end.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        (index < self.len()).then(|| &self.values[self.range(index)])
    }

    /// The elements in order.
    pub fn iter(&self) -> BinaryIter<'_, O> {
        BinaryIter {
            windows: self.offsets.windows(2),
            values: &self.values,
        }
    }

    /// Copies of the elements.
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }

    /// The same elements with another offset type (the values buffer is shared).
    ///
    /// # Errors
    /// [`Error::OffsetOverflow`] when narrowing to `i32` offsets and the values hold more than
    /// `i32::MAX` bytes.
    pub fn with_offset_type<P: VlenOffset>(&self) -> Result<VlenBinary<P>> {
        offset_for::<P>(self.values.len())?;
        // Every offset is at most the last, which fits.
        let offsets: Vec<P> = self
            .offsets
            .iter()
            .map(|o| P::usize_as(o.as_usize()))
            .collect();
        // SAFETY: the same offsets, converted without loss.
        Ok(unsafe { VlenBinary::new_unchecked(offsets.into(), self.values.clone()) })
    }

    /// Elements from the variable-length form used by `zarr-codecs`, sharing the values.
    ///
    /// # Errors
    /// [`Error::OffsetOverflow`] if the values do not fit `O` offsets.
    pub fn from_vlen_bytes(v: &VlenBytes) -> Result<Self> {
        offset_for::<O>(v.values().len())?;
        // VlenBytes holds valid offsets ending at the values length, which fits O.
        let offsets: Vec<O> = v
            .offsets()
            .iter()
            .map(|&o| O::usize_as(o as usize))
            .collect();
        let values = Buffer::from(v.values().clone());
        // SAFETY: VlenBytes has the same invariants, and every offset fits.
        Ok(unsafe { Self::new_unchecked(offsets.into(), values) })
    }

    /// The variable-length form used by `zarr-codecs` (offsets widened to `u64`, values
    /// shared).
    ///
    /// # Errors
    /// Never in practice: [`VlenBytes::try_new`] re-checks the (already valid) offsets.
    pub fn to_vlen_bytes(&self) -> Result<VlenBytes> {
        let offsets: Vec<u64> = self.offsets.iter().map(|o| o.as_usize() as u64).collect();
        let values = bytes::Bytes::from(self.values.clone());
        Ok(VlenBytes::try_new(offsets, values)?)
    }
}

impl<O: VlenOffset> fmt::Debug for VlenBinary<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VlenBinary<{}>", O::NAME)?;
        f.debug_list()
            .entries(self.iter().map(bytes::Bytes::copy_from_slice))
            .finish()
    }
}

impl<'a, O: VlenOffset> IntoIterator for &'a VlenBinary<O> {
    type Item = &'a [u8];
    type IntoIter = BinaryIter<'a, O>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The elements of a [`VlenBinary`] in order (see [`VlenBinary::iter`]).
#[derive(Debug, Clone)]
pub struct BinaryIter<'a, O: VlenOffset> {
    windows: std::slice::Windows<'a, O>,
    values: &'a [u8],
}

impl<'a, O: VlenOffset> BinaryIter<'a, O> {
    fn element(&self, w: &[O]) -> &'a [u8] {
        &self.values[w[0].as_usize()..w[1].as_usize()]
    }
}

impl<'a, O: VlenOffset> Iterator for BinaryIter<'a, O> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let w = self.windows.next()?;
        Some(self.element(w))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.windows.size_hint()
    }
}

impl<O: VlenOffset> DoubleEndedIterator for BinaryIter<'_, O> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let w = self.windows.next_back()?;
        Some(self.element(w))
    }
}

impl<O: VlenOffset> ExactSizeIterator for BinaryIter<'_, O> {}

impl<O: VlenOffset> std::iter::FusedIterator for BinaryIter<'_, O> {}

impl<O: VlenOffset> TryFrom<&[&[u8]]> for VlenBinary<O> {
    type Error = Error;
    fn try_from(elements: &[&[u8]]) -> Result<Self> {
        Self::from_elements(elements)
    }
}

impl<O: VlenOffset> TryFrom<Vec<Vec<u8>>> for VlenBinary<O> {
    type Error = Error;
    fn try_from(elements: Vec<Vec<u8>>) -> Result<Self> {
        Self::from_elements(&elements)
    }
}

impl<O: VlenOffset> From<&VlenBinary<O>> for Vec<Vec<u8>> {
    fn from(a: &VlenBinary<O>) -> Self {
        a.to_vecs()
    }
}

impl<O: VlenOffset> TryFrom<&VlenBytes> for VlenBinary<O> {
    type Error = Error;
    fn try_from(v: &VlenBytes) -> Result<Self> {
        Self::from_vlen_bytes(v)
    }
}

impl<O: VlenOffset> TryFrom<VlenBytes> for VlenBinary<O> {
    type Error = Error;
    fn try_from(v: VlenBytes) -> Result<Self> {
        Self::from_vlen_bytes(&v)
    }
}

impl<O: VlenOffset> TryFrom<ArrayBytes> for VlenBinary<O> {
    type Error = Error;
    /// # Errors
    /// [`Error::NotVariableLength`] for fixed-size data; as [`VlenBinary::from_vlen_bytes`].
    fn try_from(a: ArrayBytes) -> Result<Self> {
        match a {
            ArrayBytes::Variable(v) => Self::from_vlen_bytes(&v),
            ArrayBytes::Fixed(b) => Err(Error::NotVariableLength { bytes: b.len() }),
        }
    }
}

impl<O: VlenOffset> TryFrom<&VlenBinary<O>> for VlenBytes {
    type Error = Error;
    fn try_from(a: &VlenBinary<O>) -> Result<Self> {
        a.to_vlen_bytes()
    }
}

impl<O: VlenOffset> TryFrom<VlenBinary<O>> for ArrayBytes {
    type Error = Error;
    fn try_from(a: VlenBinary<O>) -> Result<Self> {
        Ok(ArrayBytes::Variable(a.to_vlen_bytes()?))
    }
}

/// UTF-8 strings in Arrow layout (`Utf8` for `i32` offsets, `LargeUtf8` for `i64`): a
/// [`VlenBinary`] whose every element is valid UTF-8, checked by every constructor.
///
/// Offsets count UTF-8 bytes, not characters.
///
/// ```
/// use zarr_vlen::VlenStrings;
///
/// let s = VlenStrings::<i32>::try_from(&["a", "", "héllo", "zarr", "xyz"][..])?;
/// assert_eq!(s.value(2), "héllo");
/// assert_eq!(s.offsets().as_ref(), &[0, 1, 1, 7, 11, 14]); // bytes: "é" takes two
/// assert_eq!(s.to_strings(), ["a", "", "héllo", "zarr", "xyz"]);
///
/// // Parts are checked: the first element would end inside "é".
/// assert!(VlenStrings::<i32>::try_new(vec![0, 2, 3], "aé".as_bytes()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct VlenStrings<O: VlenOffset> {
    binary: VlenBinary<O>,
}

impl<O: VlenOffset> VlenStrings<O> {
    /// Strings from offsets and a values buffer, after checking the offsets and UTF-8.
    ///
    /// # Errors
    /// As [`VlenBinary::try_new`]; [`Error::InvalidUtf8`] naming the first invalid element.
    pub fn try_new(offsets: impl Into<ScalarBuffer<O>>, values: impl Into<Buffer>) -> Result<Self> {
        Self::try_from_binary(VlenBinary::try_new(offsets, values)?)
    }

    /// Strings from binary elements, after checking that every element is valid UTF-8.
    ///
    /// # Errors
    /// [`Error::InvalidUtf8`] naming the first invalid element.
    pub fn try_from_binary(binary: VlenBinary<O>) -> Result<Self> {
        check_utf8(&binary.values, &binary.offsets, ArrowNativeType::as_usize)?;
        Ok(Self { binary })
    }

    /// Strings from binary elements known to be valid UTF-8.
    ///
    /// # Safety
    /// Every element must be valid UTF-8: [`value`](Self::value) does not check.
    pub(crate) unsafe fn from_binary_unchecked(binary: VlenBinary<O>) -> Self {
        debug_assert!(
            check_utf8(&binary.values, &binary.offsets, ArrowNativeType::as_usize).is_ok()
        );
        Self { binary }
    }

    /// Copy strings into a new array.
    ///
    /// # Errors
    /// [`Error::OffsetOverflow`] if the strings hold more bytes than `O` can address.
    pub fn from_strs<T: AsRef<str>>(strings: impl IntoIterator<Item = T>) -> Result<Self> {
        let binary = VlenBinary::from_elements(strings.into_iter().map(StrBytes))?;
        // SAFETY: built from `str`s, each valid UTF-8.
        Ok(unsafe { Self::from_binary_unchecked(binary) })
    }

    /// The number of strings.
    pub fn len(&self) -> usize {
        self.binary.len()
    }

    /// Whether there are no strings.
    pub fn is_empty(&self) -> bool {
        self.binary.is_empty()
    }

    /// The offsets (`len() + 1` of them, in bytes).
    pub fn offsets(&self) -> &OffsetBuffer<O> {
        self.binary.offsets()
    }

    /// The values buffer (all strings back to back, UTF-8).
    pub fn values(&self) -> &Buffer {
        self.binary.values()
    }

    /// The same data as binary elements.
    pub fn as_binary(&self) -> &VlenBinary<O> {
        &self.binary
    }

    /// The same data as binary elements.
    pub fn into_binary(self) -> VlenBinary<O> {
        self.binary
    }

    /// The offsets and the values buffer.
    pub fn into_parts(self) -> (OffsetBuffer<O>, Buffer) {
        self.binary.into_parts()
    }

    /// String `index`.
    ///
    /// # Panics
    /// If `index >= len()`; see [`get`](Self::get) for a checked version.
    pub fn value(&self, index: usize) -> &str {
        // SAFETY: every element is valid UTF-8 (the type's invariant).
        unsafe { std::str::from_utf8_unchecked(self.binary.value(index)) }
    }

    /// String `index`, or `None` past the end.
    pub fn get(&self, index: usize) -> Option<&str> {
        // SAFETY: every element is valid UTF-8 (the type's invariant).
        self.binary
            .get(index)
            .map(|b| unsafe { std::str::from_utf8_unchecked(b) })
    }

    /// The strings in order.
    pub fn iter(&self) -> StringsIter<'_, O> {
        StringsIter {
            inner: self.binary.iter(),
        }
    }

    /// Copies of the strings.
    pub fn to_strings(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }

    /// The same strings with another offset type (the values buffer is shared).
    ///
    /// # Errors
    /// [`Error::OffsetOverflow`] when narrowing to `i32` offsets and the values hold more than
    /// `i32::MAX` bytes.
    pub fn with_offset_type<P: VlenOffset>(&self) -> Result<VlenStrings<P>> {
        let binary = self.binary.with_offset_type::<P>()?;
        // SAFETY: the same elements.
        Ok(unsafe { VlenStrings::from_binary_unchecked(binary) })
    }

    /// Strings from the variable-length form used by `zarr-codecs`, sharing the values.
    ///
    /// # Errors
    /// [`Error::OffsetOverflow`] if the values do not fit `O` offsets; [`Error::InvalidUtf8`].
    pub fn from_vlen_bytes(v: &VlenBytes) -> Result<Self> {
        Self::try_from_binary(VlenBinary::from_vlen_bytes(v)?)
    }

    /// The variable-length form used by `zarr-codecs` (offsets widened to `u64`, values
    /// shared).
    ///
    /// # Errors
    /// Never in practice: [`VlenBytes::try_new`] re-checks the (already valid) offsets.
    pub fn to_vlen_bytes(&self) -> Result<VlenBytes> {
        self.binary.to_vlen_bytes()
    }
}

/// A string seen as bytes, for [`VlenStrings::from_strs`].
struct StrBytes<T>(T);

impl<T: AsRef<str>> AsRef<[u8]> for StrBytes<T> {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref().as_bytes()
    }
}

impl<O: VlenOffset> fmt::Debug for VlenStrings<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VlenStrings<{}>", O::NAME)?;
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a, O: VlenOffset> IntoIterator for &'a VlenStrings<O> {
    type Item = &'a str;
    type IntoIter = StringsIter<'a, O>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The strings of a [`VlenStrings`] in order (see [`VlenStrings::iter`]).
#[derive(Debug, Clone)]
pub struct StringsIter<'a, O: VlenOffset> {
    /// Over the elements of a `VlenStrings`, so every item is valid UTF-8.
    inner: BinaryIter<'a, O>,
}

impl<'a, O: VlenOffset> Iterator for StringsIter<'a, O> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        // SAFETY: every element of a VlenStrings is valid UTF-8 (the type's invariant).
        self.inner
            .next()
            .map(|b| unsafe { std::str::from_utf8_unchecked(b) })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<O: VlenOffset> DoubleEndedIterator for StringsIter<'_, O> {
    fn next_back(&mut self) -> Option<Self::Item> {
        // SAFETY: as in `next`.
        self.inner
            .next_back()
            .map(|b| unsafe { std::str::from_utf8_unchecked(b) })
    }
}

impl<O: VlenOffset> ExactSizeIterator for StringsIter<'_, O> {}

impl<O: VlenOffset> std::iter::FusedIterator for StringsIter<'_, O> {}

impl<O: VlenOffset> TryFrom<&[&str]> for VlenStrings<O> {
    type Error = Error;
    fn try_from(strings: &[&str]) -> Result<Self> {
        Self::from_strs(strings)
    }
}

impl<O: VlenOffset> TryFrom<Vec<String>> for VlenStrings<O> {
    type Error = Error;
    fn try_from(strings: Vec<String>) -> Result<Self> {
        Self::from_strs(&strings)
    }
}

impl<O: VlenOffset> From<&VlenStrings<O>> for Vec<String> {
    fn from(s: &VlenStrings<O>) -> Self {
        s.to_strings()
    }
}

impl<O: VlenOffset> TryFrom<VlenBinary<O>> for VlenStrings<O> {
    type Error = Error;
    fn try_from(binary: VlenBinary<O>) -> Result<Self> {
        Self::try_from_binary(binary)
    }
}

impl<O: VlenOffset> From<VlenStrings<O>> for VlenBinary<O> {
    fn from(s: VlenStrings<O>) -> Self {
        s.binary
    }
}

impl<O: VlenOffset> TryFrom<&VlenBytes> for VlenStrings<O> {
    type Error = Error;
    fn try_from(v: &VlenBytes) -> Result<Self> {
        Self::from_vlen_bytes(v)
    }
}

impl<O: VlenOffset> TryFrom<VlenBytes> for VlenStrings<O> {
    type Error = Error;
    fn try_from(v: VlenBytes) -> Result<Self> {
        Self::from_vlen_bytes(&v)
    }
}

impl<O: VlenOffset> TryFrom<ArrayBytes> for VlenStrings<O> {
    type Error = Error;
    /// # Errors
    /// [`Error::NotVariableLength`] for fixed-size data; as [`VlenStrings::from_vlen_bytes`].
    fn try_from(a: ArrayBytes) -> Result<Self> {
        Self::try_from_binary(VlenBinary::try_from(a)?)
    }
}

impl<O: VlenOffset> TryFrom<&VlenStrings<O>> for VlenBytes {
    type Error = Error;
    fn try_from(s: &VlenStrings<O>) -> Result<Self> {
        s.to_vlen_bytes()
    }
}

impl<O: VlenOffset> TryFrom<VlenStrings<O>> for ArrayBytes {
    type Error = Error;
    fn try_from(s: VlenStrings<O>) -> Result<Self> {
        Ok(ArrayBytes::Variable(s.to_vlen_bytes()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_check_invariants() {
        let v = || Buffer::from(&b"abcd"[..]);
        assert!(VlenBinary::<i32>::try_new(vec![0, 1, 4], v()).is_ok());
        assert!(matches!(
            VlenBinary::<i32>::try_new(Vec::<i32>::new(), v()),
            Err(Error::NoOffsets)
        ));
        assert!(matches!(
            VlenBinary::<i64>::try_new(vec![1, 4], v()),
            Err(Error::FirstOffset { found: 1 })
        ));
        assert!(matches!(
            VlenBinary::<i32>::try_new(vec![0, 3, 2, 4], v()),
            Err(Error::DecreasingOffset { index: 2, .. })
        ));
        assert!(matches!(
            VlenBinary::<i32>::try_new(vec![0, 5], v()),
            Err(Error::LastOffset {
                last: 5,
                values_len: 4
            })
        ));
        assert!(matches!(
            VlenStrings::<i32>::try_new(vec![0, 1, 2], &b"a\xff"[..]),
            Err(Error::InvalidUtf8 { index: 1, byte: 1 })
        ));
    }

    #[test]
    fn conversions_share_values() {
        let s =
            VlenStrings::<i32>::try_from(vec!["🦀".to_owned(), String::new(), "x".into()]).unwrap();
        let v = s.to_vlen_bytes().unwrap();
        assert_eq!(v.offsets(), &[0, 4, 4, 5]);
        assert_eq!(v.values().as_ptr(), s.values().as_ptr());
        let back = VlenStrings::<i64>::from_vlen_bytes(&v).unwrap();
        assert_eq!(back.values().as_ptr(), s.values().as_ptr());
        assert_eq!(back.to_strings(), s.to_strings());
        let large = s.with_offset_type::<i64>().unwrap();
        assert_eq!(large.offsets().as_ref(), &[0i64, 4, 4, 5]);
        assert_eq!(large, back);
        let array: ArrayBytes = s.clone().try_into().unwrap();
        assert_eq!(VlenStrings::<i32>::try_from(array).unwrap(), s);
        assert!(matches!(
            VlenStrings::<i32>::try_from(ArrayBytes::fixed(vec![1, 2])),
            Err(Error::NotVariableLength { bytes: 2 })
        ));
        assert_eq!(s.get(3), None);
        assert_eq!(s.iter().next_back(), Some("x"));
        assert_eq!(format!("{s:?}"), r#"VlenStrings<int32>["🦀", "", "x"]"#);
        let b = VlenBinary::<i32>::try_from(vec![vec![0xff], vec![]]).unwrap();
        assert!(VlenStrings::try_from(b.clone()).is_err());
        assert_eq!(Vec::<Vec<u8>>::from(&b), vec![vec![0xff], vec![]]);
        assert_eq!((&b).into_iter().count(), 2);
        let mut it = s.iter();
        assert_eq!(it.len(), 3);
        assert_eq!(it.next_back(), Some("x"));
        assert_eq!(it.collect::<Vec<_>>(), ["🦀", ""]);
        let mut n = 0;
        for element in &s {
            n += element.len();
        }
        assert_eq!(n, 5);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn value_past_the_end_panics() {
        let s = VlenStrings::<i32>::try_from(&["a"][..]).unwrap();
        let _ = s.value(1);
    }
}
