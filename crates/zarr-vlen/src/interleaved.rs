//! zarr-python's `vlen-utf8` and `vlen-bytes` codecs: a `u32` count, then a `u32` length
//! and the bytes of each element.

use arrow_buffer::Buffer;
use bytes::Bytes;
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, Error as CodecError, Result as CodecResult,
    VlenBytes,
};
use zarr_core::{DataType, ExtensionObject};

use crate::array::{VlenBinary, VlenStrings};
use crate::common::{check_data_type, check_keys, num_elements};
use crate::error::Error;
use crate::offset::VlenOffset;
use crate::utf8::{check_utf8, check_utf8_split, is_continuation};

/// Read a little-endian `u32` at `pos` (the caller checked that four bytes are there).
#[inline]
fn read_u32(bytes: &[u8], pos: usize) -> usize {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[pos..pos + 4]);
    u32::from_le_bytes(b) as usize
}

/// How many bytes past the values [`decode_interleaved`] may write while copying.
const SLACK: usize = 16;

/// Elements decoded from the interleaved layout.
struct Decoded<T> {
    offsets: Vec<T>,
    values: Vec<u8>,
    /// Whether a non-empty element starts with a UTF-8 continuation byte.
    split: bool,
}

/// Decode the interleaved layout into offsets of type `T` and a values buffer.
///
/// The element count must be `n`; nothing is allocated beyond what the input can hold (each
/// element takes at least its 4-byte length), whatever the header claims.
fn decode_interleaved<T: Copy>(
    codec: &str,
    bytes: &[u8],
    n: usize,
    offset_type: (&'static str, usize),
    from_usize: impl Fn(usize) -> T,
) -> CodecResult<Decoded<T>> {
    let (offset_type, max_offset) = offset_type;
    let truncated = |reason: String| CodecError::Truncated {
        codec: codec.to_owned(),
        reason,
    };
    if bytes.len() < 4 {
        return Err(truncated(format!(
            "{} bytes, too short for the 4-byte element count",
            bytes.len()
        )));
    }
    let count = read_u32(bytes, 0);
    if count != n {
        return Err(CodecError::Corrupt {
            codec: codec.to_owned(),
            reason: format!("the header counts {count} elements, the chunk has {n}"),
        });
    }
    // Each element needs at least its 4-byte length.
    let headers = n
        .checked_mul(4)
        .and_then(|h| h.checked_add(4))
        .filter(|&h| h <= bytes.len())
        .ok_or_else(|| {
            truncated(format!(
                "{} bytes cannot hold the lengths of {n} elements",
                bytes.len()
            ))
        })?;
    // On success, the values are exactly what the lengths do not take.
    let total = bytes.len() - headers;
    if total > max_offset {
        return Err(Error::OffsetOverflow {
            values_len: total as u64,
            offset_type,
        }
        .into_codec(codec));
    }
    let mut offsets: Vec<T> = Vec::with_capacity(n + 1);
    // `SLACK` spare bytes let short elements be copied with one fixed-size move (which the
    // next element overwrites) instead of a call to memcpy.
    let mut values: Vec<u8> = vec![0; total + SLACK];
    let mut written = 0;
    let mut split = false;
    offsets.push(from_usize(0));
    let mut pos = 4;
    for i in 0..n {
        if bytes.len() - pos < 4 {
            return Err(truncated(format!(
                "the data ends before the length of element {i}"
            )));
        }
        let len = read_u32(bytes, pos);
        pos += 4;
        if len > bytes.len() - pos {
            return Err(truncated(format!(
                "element {i} claims {len} bytes, only {} remain",
                bytes.len() - pos
            )));
        }
        if len > total - written {
            return Err(truncated(format!(
                "element {i} claims {len} bytes, leaving too few for the lengths of the {} \
                 elements after it",
                n - 1 - i
            )));
        }
        if len <= SLACK && bytes.len() - pos >= SLACK {
            values[written..written + SLACK].copy_from_slice(&bytes[pos..pos + SLACK]);
        } else {
            values[written..written + len].copy_from_slice(&bytes[pos..pos + len]);
        }
        // A non-empty element starting inside a character (see `check_utf8_split`).
        split |= (len > 0) & is_continuation(values[written]);
        pos += len;
        written += len;
        // At most `total`, which fits T.
        offsets.push(from_usize(written));
    }
    if pos != bytes.len() {
        return Err(CodecError::Corrupt {
            codec: codec.to_owned(),
            reason: format!(
                "{} bytes follow the last of the {n} elements",
                bytes.len() - pos
            ),
        });
    }
    // All bytes were consumed: the values are exactly `total` long.
    values.truncate(total);
    Ok(Decoded {
        offsets,
        values,
        split,
    })
}

/// Encode elements given as offsets (converted by `to_usize`) into `values`.
fn encode_interleaved<T: Copy>(
    codec: &str,
    offsets: &[T],
    values: &[u8],
    to_usize: impl Fn(T) -> usize,
) -> CodecResult<Bytes> {
    let n = offsets.len().saturating_sub(1);
    let too_large = |reason: String| CodecError::Compression {
        codec: codec.to_owned(),
        reason,
    };
    let count = u32::try_from(n)
        .map_err(|_| too_large(format!("{n} elements do not fit the u32 element count")))?;
    let size = n
        .checked_mul(4)
        .and_then(|h| h.checked_add(4 + values.len()))
        .ok_or_else(|| too_large(format!("{n} elements overflow the encoded size")))?;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&count.to_le_bytes());
    for (i, w) in offsets.windows(2).enumerate() {
        let (start, end) = (to_usize(w[0]), to_usize(w[1]));
        let len = u32::try_from(end - start).map_err(|_| {
            too_large(format!(
                "element {i} has {} bytes, more than a u32 length can hold",
                end - start
            ))
        })?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&values[start..end]);
    }
    Ok(out.into())
}

/// The shared implementation of both codecs.
pub(crate) fn decode_chunk(
    codec: &str,
    utf8: bool,
    bytes: &[u8],
    decoded: &ChunkRepresentation,
) -> CodecResult<ArrayBytes> {
    let n = num_elements(codec, decoded.num_elements())?;
    let Decoded {
        offsets,
        values,
        split,
    } = decode_interleaved(codec, bytes, n, ("uint64", usize::MAX), |v| v as u64)?;
    if utf8 {
        check_utf8_split(&values, &offsets, |o| o as usize, split)
            .map_err(|e| e.into_codec(codec))?;
    }
    Ok(ArrayBytes::Variable(VlenBytes::try_new(
        offsets,
        values.into(),
    )?))
}

pub(crate) fn encode_chunk(
    codec: &str,
    utf8: bool,
    array: ArrayBytes,
    decoded: &ChunkRepresentation,
) -> CodecResult<Bytes> {
    let v = match array {
        ArrayBytes::Variable(v) => v,
        ArrayBytes::Fixed(b) => {
            return Err(CodecError::UnexpectedArray {
                codec: codec.to_owned(),
                expected: format!("variable-length {} elements", decoded.data_type()),
                found: format!("{} bytes of fixed-size elements", b.len()),
            });
        }
    };
    if v.len() as u64 != decoded.num_elements() {
        return Err(CodecError::UnexpectedArray {
            codec: codec.to_owned(),
            expected: format!("{} elements", decoded.num_elements()),
            found: format!("{} elements", v.len()),
        });
    }
    if utf8 {
        check_utf8(v.values(), v.offsets(), |o| o as usize).map_err(|e| e.into_codec(codec))?;
    }
    encode_interleaved(codec, v.offsets(), v.values(), |o| o as usize)
}

/// The `vlen-utf8` codec (array->bytes) of zarr-python and numcodecs, for data type
/// `string`: a little-endian `u32` element count, then for each element (C order) a `u32`
/// byte length and the UTF-8 bytes. No alignment, no terminators.
///
/// Decoding checks that the count equals the chunk's element count, that every length fits
/// in what remains, that nothing trails the last element, and that every element is valid
/// UTF-8. Nothing is allocated beyond what the encoded bytes can hold.
///
/// Metadata: `{"name": "vlen-utf8", "configuration": {}}` (written so, as zarr-python does;
/// read with or without the empty configuration).
///
/// ```
/// use zarr_vlen::{VlenStrings, VlenUtf8Codec};
///
/// let codec = VlenUtf8Codec::new();
/// let strings = VlenStrings::<i32>::try_from(&["a", "", "héllo"][..])?;
/// let encoded = codec.encode_strings(&strings)?;
/// assert_eq!(&encoded[..9], &[3, 0, 0, 0, 1, 0, 0, 0, b'a']);
/// let decoded: VlenStrings<i32> = codec.decode_strings(&encoded, 3)?;
/// assert_eq!(decoded, strings);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VlenUtf8Codec;

impl VlenUtf8Codec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "vlen-utf8";

    /// The codec (it has no configuration).
    pub fn new() -> Self {
        Self
    }

    /// Parse `{"name": "vlen-utf8"}` with an optional empty configuration.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for any configuration key.
    pub fn from_metadata(metadata: &ExtensionObject) -> CodecResult<Self> {
        check_keys(metadata, &[])?;
        Ok(Self)
    }

    /// Decode a chunk of `num_elements` strings straight into Arrow layout (one copy of the
    /// values out of the interleaved layout, which cannot be avoided).
    ///
    /// # Errors
    /// [`zarr_codecs::Error::Truncated`], [`zarr_codecs::Error::Corrupt`] for malformed data,
    /// [`zarr_codecs::Error::InvalidElement`] for invalid UTF-8.
    pub fn decode_strings<O: VlenOffset>(
        &self,
        bytes: &[u8],
        num_elements: u64,
    ) -> CodecResult<VlenStrings<O>> {
        let n = crate::common::num_elements(Self::NAME, num_elements)?;
        let Decoded {
            offsets,
            values,
            split,
        } = decode_interleaved(Self::NAME, bytes, n, (O::NAME, O::MAX_USIZE), O::usize_as)?;
        check_utf8_split(&values, &offsets, O::as_usize, split)
            .map_err(|e| e.into_codec(Self::NAME))?;
        // SAFETY: offsets from 0, growing with the values, ending at their length.
        let binary = unsafe { VlenBinary::new_unchecked(offsets.into(), Buffer::from_vec(values)) };
        // SAFETY: just checked.
        Ok(unsafe { VlenStrings::from_binary_unchecked(binary) })
    }

    /// Encode strings (all of a chunk's elements, C order).
    ///
    /// # Errors
    /// [`zarr_codecs::Error::Compression`] if there are more than `u32::MAX` elements or an
    /// element is longer than `u32::MAX` bytes.
    pub fn encode_strings<O: VlenOffset>(&self, strings: &VlenStrings<O>) -> CodecResult<Bytes> {
        encode_interleaved(Self::NAME, strings.offsets(), strings.values(), |o: O| {
            o.as_usize()
        })
    }
}

impl ArrayToBytesCodec for VlenUtf8Codec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(Self::NAME, serde_json::Map::new())
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> CodecResult<Option<u64>> {
        check_data_type(Self::NAME, decoded, &[DataType::String])?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> CodecResult<Bytes> {
        encode_chunk(Self::NAME, true, array, decoded)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> CodecResult<ArrayBytes> {
        decode_chunk(Self::NAME, true, &bytes, decoded)
    }
}

/// The `vlen-bytes` codec (array->bytes) of zarr-python and numcodecs, for data type
/// `bytes` (which zarr-python 3.1 writes as `variable_length_bytes`): the layout of
/// [`VlenUtf8Codec`] with raw bytes, so without the UTF-8 check.
///
/// ```
/// use zarr_vlen::{VlenBinary, VlenBytesCodec};
///
/// let codec = VlenBytesCodec::new();
/// let elements = VlenBinary::<i32>::try_from(&[&b"\x00\x01"[..], b"", b"abc"][..])?;
/// let encoded = codec.encode_binary(&elements)?;
/// assert_eq!(
///     &encoded[..],
///     b"\x03\0\0\0\x02\0\0\0\x00\x01\0\0\0\0\x03\0\0\0abc"
/// );
/// assert_eq!(codec.decode_binary::<i64>(&encoded, 3)?.to_vecs(), elements.to_vecs());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VlenBytesCodec;

impl VlenBytesCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "vlen-bytes";

    /// The codec (it has no configuration).
    pub fn new() -> Self {
        Self
    }

    /// Parse `{"name": "vlen-bytes"}` with an optional empty configuration.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for any configuration key.
    pub fn from_metadata(metadata: &ExtensionObject) -> CodecResult<Self> {
        check_keys(metadata, &[])?;
        Ok(Self)
    }

    /// Decode a chunk of `num_elements` elements straight into Arrow layout.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::Truncated`], [`zarr_codecs::Error::Corrupt`] for malformed data.
    pub fn decode_binary<O: VlenOffset>(
        &self,
        bytes: &[u8],
        num_elements: u64,
    ) -> CodecResult<VlenBinary<O>> {
        let n = crate::common::num_elements(Self::NAME, num_elements)?;
        let Decoded {
            offsets, values, ..
        } = decode_interleaved(Self::NAME, bytes, n, (O::NAME, O::MAX_USIZE), O::usize_as)?;
        // SAFETY: offsets from 0, growing with the values, ending at their length.
        Ok(unsafe { VlenBinary::new_unchecked(offsets.into(), Buffer::from_vec(values)) })
    }

    /// Encode elements (all of a chunk's elements, C order).
    ///
    /// # Errors
    /// [`zarr_codecs::Error::Compression`] if there are more than `u32::MAX` elements or an
    /// element is longer than `u32::MAX` bytes.
    pub fn encode_binary<O: VlenOffset>(&self, elements: &VlenBinary<O>) -> CodecResult<Bytes> {
        encode_interleaved(Self::NAME, elements.offsets(), elements.values(), |o: O| {
            o.as_usize()
        })
    }
}

impl ArrayToBytesCodec for VlenBytesCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(Self::NAME, serde_json::Map::new())
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> CodecResult<Option<u64>> {
        check_data_type(Self::NAME, decoded, &[DataType::Bytes])?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> CodecResult<Bytes> {
        encode_chunk(Self::NAME, false, array, decoded)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> CodecResult<ArrayBytes> {
        decode_chunk(Self::NAME, false, &bytes, decoded)
    }
}

/// numcodecs' `vlen-array` codec (array->bytes; `numcodecs.vlen-array` in Zarr v3, the object
/// codec `{"id": "vlen-array", "dtype": ...}` of a Zarr v2 `|O` array), for data type
/// `bytes`: ragged arrays, each element a 1-D NumPy array of the codec's `dtype`, stored in
/// the layout of [`VlenBytesCodec`] (a `u32` count, then each element's `u32` byte length and
/// bytes). zarr-python 2 wrote these (zarr-python 3 does not read them; zarrs 0.23 refuses
/// numcodecs' `dtype` key).
///
/// Elements are the raw bytes of their items in the `dtype`'s byte order: a `"<i4"` element
/// of three items is 12 bytes, little-endian. With a `dtype`, an element whose length is
/// not a whole number of items is `InvalidElement`, on encoding and on decoding.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, VlenBytes};
/// use zarr_core::{DataType, FillValue};
/// use zarr_vlen::VlenArrayCodec;
///
/// let codec = VlenArrayCodec::with_dtype("<i2")?;
/// assert_eq!(codec.item_size(), Some(2));
/// let repr = ChunkRepresentation::try_new(vec![2], DataType::Bytes, FillValue::new(vec![]))?;
/// // [1, 2] and []: int16 items, little-endian.
/// let chunk = ArrayBytes::Variable(VlenBytes::from_elements([&[1u8, 0, 2, 0][..], &[]]));
/// let stored = codec.encode(chunk.clone(), &repr)?;
/// assert_eq!(&stored[..], b"\x02\0\0\0\x04\0\0\0\x01\0\x02\0\0\0\0\0");
/// assert_eq!(codec.decode(stored, &repr)?, chunk);
/// let odd = ArrayBytes::Variable(VlenBytes::from_elements([&[1u8, 0, 2][..], &[]]));
/// assert!(codec.encode(odd, &repr).is_err()); // 3 bytes: not whole int16 items
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct VlenArrayCodec {
    /// numcodecs' `dtype` and its item size in bytes.
    dtype: Option<(String, usize)>,
}

impl VlenArrayCodec {
    /// The codec's name in Zarr v3 metadata (numcodecs' `numcodecs.<id>` form).
    pub const NAME: &'static str = "numcodecs.vlen-array";

    /// The codec without a `dtype`: elements of any length.
    pub fn new() -> Self {
        Self::default()
    }

    /// The codec for items of NumPy type `dtype`, a type string such as `"<i4"`, `">f8"`,
    /// `"|u1"`, `"|b1"` or `"<M8[ns]"` (booleans, integers, floats, complex numbers and
    /// NumPy date-times).
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for another type string.
    pub fn with_dtype(dtype: &str) -> CodecResult<Self> {
        let size = item_size(dtype).ok_or_else(|| CodecError::InvalidConfiguration {
            codec: Self::NAME.to_owned(),
            reason: format!(
                "`dtype` {dtype:?} is not a NumPy type string of booleans, numbers or \
                 date-times (such as \"<i4\" or \">f8\")"
            ),
        })?;
        Ok(Self {
            dtype: Some((dtype.to_owned(), size)),
        })
    }

    /// numcodecs' `dtype` of the items, if the configuration names one.
    pub fn dtype(&self) -> Option<&str> {
        self.dtype.as_ref().map(|(d, _)| d.as_str())
    }

    /// The size in bytes of one item of [`dtype`](Self::dtype).
    pub fn item_size(&self) -> Option<usize> {
        self.dtype.as_ref().map(|&(_, size)| size)
    }

    /// Parse `{"name": "numcodecs.vlen-array"}` with an empty configuration or
    /// `{"dtype": "<i4"}` (numcodecs' key).
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for another key or a `dtype` that is not
    /// a type string [`with_dtype`](Self::with_dtype) takes.
    pub fn from_metadata(metadata: &ExtensionObject) -> CodecResult<Self> {
        check_keys(metadata, &["dtype"])?;
        match metadata.configuration.as_ref().and_then(|c| c.get("dtype")) {
            None => Ok(Self::new()),
            Some(serde_json::Value::String(dtype)) => Self::with_dtype(dtype),
            Some(other) => Err(CodecError::InvalidConfiguration {
                codec: Self::NAME.to_owned(),
                reason: format!("`dtype` must be a NumPy type string, found {other}"),
            }),
        }
    }

    /// Check that every element is a whole number of items.
    fn check_items(&self, elements: &VlenBytes) -> CodecResult<()> {
        let Some((dtype, size)) = &self.dtype else {
            return Ok(());
        };
        match elements.iter().position(|e| e.len() % size != 0) {
            None => Ok(()),
            Some(index) => Err(CodecError::InvalidElement {
                codec: Self::NAME.to_owned(),
                index: index as u64,
                data_type: DataType::Bytes.to_string(),
                reason: format!(
                    "{} bytes are not a whole number of {dtype:?} items ({size} bytes each)",
                    elements.get(index).map_or(0, <[u8]>::len)
                ),
            }),
        }
    }
}

/// The item size of a NumPy type string of booleans, numbers or date-times (`"<i4"`,
/// `"|b1"`, `"<M8[ns]"`), `None` for another string.
fn item_size(dtype: &str) -> Option<usize> {
    let rest = dtype.strip_prefix(['<', '>', '|', '=']).unwrap_or(dtype);
    let mut chars = rest.chars();
    let kind = chars.next()?;
    let rest = chars.as_str();
    let (digits, unit) = match rest.find('[') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    let size: usize = digits.parse().ok().filter(|&n| n > 0)?;
    let valid = match kind {
        'b' => size == 1 && unit.is_none(),
        'i' | 'u' => matches!(size, 1 | 2 | 4 | 8) && unit.is_none(),
        'f' => matches!(size, 2 | 4 | 8 | 16) && unit.is_none(),
        'c' => matches!(size, 8 | 16 | 32) && unit.is_none(),
        'm' | 'M' => {
            size == 8
                && unit.is_none_or(|u| {
                    u.len() > 2
                        && u.ends_with(']')
                        && u[1..u.len() - 1].chars().all(|c| c.is_ascii_alphanumeric())
                })
        }
        _ => false,
    };
    valid.then_some(size)
}

impl ArrayToBytesCodec for VlenArrayCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut configuration = serde_json::Map::new();
        if let Some(dtype) = self.dtype() {
            configuration.insert("dtype".into(), dtype.into());
        }
        ExtensionObject::with_configuration(Self::NAME, configuration)
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> CodecResult<Option<u64>> {
        check_data_type(Self::NAME, decoded, &[DataType::Bytes])?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> CodecResult<Bytes> {
        if let ArrayBytes::Variable(elements) = &array {
            self.check_items(elements)?;
        }
        encode_chunk(Self::NAME, false, array, decoded)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> CodecResult<ArrayBytes> {
        let array = decode_chunk(Self::NAME, false, &bytes, decoded)?;
        if let ArrayBytes::Variable(elements) = &array {
            self.check_items(elements)?;
        }
        Ok(array)
    }
}

/// zarrs' `zarrs.vlen_v2` codec (array->bytes): the layout of [`VlenUtf8Codec`] and
/// [`VlenBytesCodec`] under one name for both variable-length data types, `string` (whose
/// values are checked as UTF-8) and `bytes`. zarrs writes and reads it; zarr-python does
/// not, so write `vlen-utf8` or `vlen-bytes` for data it must read (the chunks are the
/// same bytes).
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, VlenBytes};
/// use zarr_core::{DataType, FillValue};
/// use zarr_vlen::{VlenBytesCodec, ZarrsVlenV2Codec};
///
/// let repr = ChunkRepresentation::try_new(vec![2], DataType::Bytes, FillValue::new(vec![]))?;
/// let chunk = ArrayBytes::Variable(VlenBytes::from_elements([&b"\x00"[..], b"ab"]));
/// let stored = ZarrsVlenV2Codec.encode(chunk.clone(), &repr)?;
/// assert_eq!(stored, VlenBytesCodec.encode(chunk.clone(), &repr)?);
/// assert_eq!(ZarrsVlenV2Codec.decode(stored, &repr)?, chunk);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ZarrsVlenV2Codec;

impl ZarrsVlenV2Codec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "zarrs.vlen_v2";

    /// Parse `{"name": "zarrs.vlen_v2"}` with an optional empty configuration.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for any configuration key.
    pub fn from_metadata(metadata: &ExtensionObject) -> CodecResult<Self> {
        check_keys(metadata, &[])?;
        Ok(Self)
    }
}

impl ArrayToBytesCodec for ZarrsVlenV2Codec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(Self::NAME, serde_json::Map::new())
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> CodecResult<Option<u64>> {
        check_data_type(Self::NAME, decoded, &[DataType::String, DataType::Bytes])?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> CodecResult<Bytes> {
        let utf8 = *decoded.data_type() == DataType::String;
        encode_chunk(Self::NAME, utf8, array, decoded)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> CodecResult<ArrayBytes> {
        let utf8 = *decoded.data_type() == DataType::String;
        decode_chunk(Self::NAME, utf8, &bytes, decoded)
    }
}
