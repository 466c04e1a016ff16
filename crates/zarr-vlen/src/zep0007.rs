//! The ZEP0007 chunk layout as an array->bytes codec: `zarr-rs.vlen_arrow`.

use std::ops::Range;

use arrow_buffer::{Buffer, ScalarBuffer};
use bytes::Bytes;
use serde_json::Value;
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, Error as CodecError, Result as CodecResult,
    VlenBytes,
};
use zarr_core::{DataType, ExtensionObject, Region};

use crate::array::{VlenBinary, VlenStrings};
use crate::common::{
    check_data_type, check_keys, corrupt, for_each_run, num_elements as element_count, truncated,
    usize_range, variable_input,
};
use crate::error::Error;
use crate::offset::{VlenOffset, check_offsets};
use crate::utf8::check_utf8;

/// The alignment of the values buffer in a chunk, in bytes (Arrow's recommended alignment).
pub const VALUES_ALIGNMENT: u64 = 64;

/// The width of the offsets in a [`VlenArrowCodec`] chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum OffsetType {
    /// Little-endian `int32` offsets (Arrow `Utf8`/`Binary`): up to `i32::MAX` value bytes
    /// per chunk. The default.
    #[default]
    Int32,
    /// Little-endian `int64` offsets (Arrow `LargeUtf8`/`LargeBinary`).
    Int64,
}

impl OffsetType {
    /// `"int32"` or `"int64"`, as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Int32 => "int32",
            Self::Int64 => "int64",
        }
    }

    /// The size of one offset in bytes.
    pub fn size(self) -> u64 {
        match self {
            Self::Int32 => 4,
            Self::Int64 => 8,
        }
    }
}

/// The ZEP0007 layout (this project's codec `zarr-rs.vlen_arrow`, array->bytes) for data
/// types `string` and `bytes`: Arrow's variable-size binary layout without a validity
/// bitmap.
///
/// A chunk of `n` elements (`n` = product of the chunk shape) is
///
/// 1. `n + 1` little-endian signed offsets (`int32`, or `int64` with
///    `{"offsets": "int64"}`): `offsets[0] = 0`, element `i` is
///    `data[offsets[i]..offsets[i + 1]]`, offsets count bytes (UTF-8 bytes for strings);
/// 2. zero bytes up to the next multiple of 64 (none if already there);
/// 3. the data: all elements back to back.
///
/// Metadata: `{"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}}`
/// (`offsets` is optional when reading, default `"int32"`; always written). zarr-python
/// cannot read it: write `vlen-utf8`/`vlen-bytes` for data others must read.
///
/// Decoding checks the offsets (start 0, never decrease, end at the data length), that the
/// padding is zero, and UTF-8 for strings, and hands out the data as a slice of the chunk's
/// own buffer: the values are never copied. [`decode_strings`](Self::decode_strings) and
/// [`decode_binary`](Self::decode_binary) do not copy the offsets either when they are
/// aligned in memory and of the requested width.
///
/// Any element can be found from the offsets alone, so a few elements of a large chunk can
/// be read with two small byte-range requests: see
/// [`offsets_byte_range`](Self::offsets_byte_range),
/// [`values_byte_range`](Self::values_byte_range) and [`decode_range`](Self::decode_range),
/// or [`decode_region`](Self::decode_region) for a chunk in memory. (The codec trait's
/// [`partial_decode_into`](ArrayToBytesCodec::partial_decode_into) writes fixed-size elements
/// into a byte buffer, which variable-length elements cannot fill, so
/// [`can_partially_decode`](ArrayToBytesCodec::can_partially_decode) stays `false`; these
/// methods are the partial decoding of this layout.)
///
/// ```
/// use zarr_vlen::{VlenArrowCodec, VlenStrings};
///
/// let codec = VlenArrowCodec::default();
/// let strings = VlenStrings::<i32>::try_from(&["a", "", "héllo", "zarr", "xyz"][..])?;
/// let chunk = codec.encode_strings(&strings)?;
/// assert_eq!(chunk.len(), 78); // 6 offsets, padding to 64, 14 data bytes
/// assert_eq!(&chunk[..8], &[0, 0, 0, 0, 1, 0, 0, 0]);
/// assert_eq!(&chunk[64..], "ahéllozarrxyz".as_bytes());
///
/// let decoded: VlenStrings<i32> = codec.decode_strings(&chunk, 5)?;
/// assert_eq!(decoded.value(2), "héllo");
/// // The values are the chunk's own bytes.
/// assert_eq!(decoded.values().as_ptr(), chunk[64..].as_ptr());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VlenArrowCodec {
    offsets: OffsetType,
}

/// Where the values of a checked chunk start.
struct Layout {
    values_start: usize,
}

impl VlenArrowCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "zarr-rs.vlen_arrow";

    /// A codec writing offsets of `offsets` width.
    pub fn new(offsets: OffsetType) -> Self {
        Self { offsets }
    }

    /// The offset width.
    pub fn offset_type(&self) -> OffsetType {
        self.offsets
    }

    /// Parse `{"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}}`.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for an `offsets` other than `"int32"` or
    /// `"int64"`, or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> CodecResult<Self> {
        check_keys(metadata, &["offsets"])?;
        let offsets = match metadata
            .configuration
            .as_ref()
            .and_then(|c| c.get("offsets"))
        {
            None => OffsetType::Int32,
            Some(Value::String(s)) if s == "int32" => OffsetType::Int32,
            Some(Value::String(s)) if s == "int64" => OffsetType::Int64,
            Some(other) => {
                return Err(CodecError::InvalidConfiguration {
                    codec: Self::NAME.into(),
                    reason: format!("`offsets` must be \"int32\" or \"int64\", found {other}"),
                });
            }
        };
        Ok(Self { offsets })
    }

    /// Where the values start in a chunk of `num_elements` elements: the size of `n + 1`
    /// offsets rounded up to a multiple of 64.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::IncompatibleRepresentation`] if that overflows `u64`.
    pub fn values_start(&self, num_elements: u64) -> CodecResult<u64> {
        num_elements
            .checked_add(1)
            .and_then(|n| n.checked_mul(self.offsets.size()))
            .and_then(|b| b.checked_next_multiple_of(VALUES_ALIGNMENT))
            .ok_or_else(|| CodecError::IncompatibleRepresentation {
                codec: Self::NAME.into(),
                reason: format!("the offsets of {num_elements} elements overflow u64"),
            })
    }

    /// Check the chunk's size and padding; the offsets are `chunk[..(n + 1) * size]`.
    fn layout(&self, chunk: &[u8], n: usize) -> CodecResult<Layout> {
        let start = self.values_start(n as u64)?;
        let values_start = usize::try_from(start)
            .ok()
            .filter(|&s| s <= chunk.len())
            .ok_or_else(|| {
                truncated(
                    Self::NAME,
                    format!(
                        "{} bytes, but the offsets of {n} elements and their padding take {start}",
                        chunk.len()
                    ),
                )
            })?;
        let offsets_end = (n + 1) * self.offsets.size() as usize;
        if let Some(i) = chunk[offsets_end..values_start]
            .iter()
            .position(|&b| b != 0)
        {
            return Err(corrupt(
                Self::NAME,
                format!(
                    "padding byte {} (before the values at {values_start}) is {:#04x}, not 0",
                    offsets_end + i,
                    chunk[offsets_end + i]
                ),
            ));
        }
        Ok(Layout { values_start })
    }

    /// Read the stored offsets in `raw` into a new vector, converting with `convert`, and
    /// check that they never decrease.
    fn read_offsets<const N: usize, W: VlenOffset, T>(
        raw: &[u8],
        from_le: impl Fn([u8; N]) -> W,
        convert: impl Fn(W) -> T,
    ) -> Result<Vec<T>, Error> {
        // Convert and check in two simple passes over fixed-size arrays, which the compiler
        // vectorises.
        let (words, _) = raw.as_chunks::<N>();
        let out: Vec<T> = words.iter().map(|&b| convert(from_le(b))).collect();
        let mut previous = W::usize_as(0);
        let sorted = words.iter().fold(true, |ok, &b| {
            let o = from_le(b);
            let ok = ok & (o >= previous);
            previous = o;
            ok
        });
        if !sorted {
            // Find the culprit (and report a negative first offset as such).
            let all: Vec<W> = words.iter().map(|&b| from_le(b)).collect();
            check_offsets(&all, usize::MAX)?;
        }
        Ok(out)
    }

    /// Decode the offsets of a whole chunk into `T`s and check them against the data length.
    fn decode_offsets<T>(
        &self,
        chunk: &[u8],
        n: usize,
        max: usize,
        offset_type: &'static str,
        convert32: impl Fn(i32) -> T,
        convert64: impl Fn(i64) -> T,
    ) -> CodecResult<(Vec<T>, Layout)> {
        let layout = self.layout(chunk, n)?;
        let values_len = chunk.len() - layout.values_start;
        if values_len > max {
            return Err(Error::OffsetOverflow {
                values_len: values_len as u64,
                offset_type,
            }
            .into_codec(Self::NAME));
        }
        let size = self.offsets.size() as usize;
        let raw = &chunk[..(n + 1) * size];
        let (first, last) = (&raw[..size], &raw[raw.len() - size..]);
        let result = match self.offsets {
            OffsetType::Int32 => check_ends(i32::read_le(first), i32::read_le(last), values_len)
                .and_then(|()| Self::read_offsets(raw, i32::from_le_bytes, convert32)),
            OffsetType::Int64 => check_ends(i64::read_le(first), i64::read_le(last), values_len)
                .and_then(|()| Self::read_offsets(raw, i64::from_le_bytes, convert64)),
        };
        result
            .map(|offsets| (offsets, layout))
            .map_err(|e| e.into_codec(Self::NAME))
    }

    /// Decode a whole chunk of `num_elements` elements into Arrow layout with `O` offsets.
    ///
    /// The values are a slice of `chunk` (no copy). The offsets are a slice of `chunk` too
    /// when `O` has the stored width, the host is little-endian and the chunk's buffer is
    /// aligned for `O` (buffers from the allocator are); otherwise they are converted into a
    /// new buffer.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::Truncated`] if the chunk is too short for its offsets;
    /// [`zarr_codecs::Error::Corrupt`] for invalid offsets or non-zero padding, or values
    /// that do not fit `O` offsets.
    pub fn decode_binary<O: VlenOffset>(
        &self,
        chunk: &Bytes,
        num_elements: u64,
    ) -> CodecResult<VlenBinary<O>> {
        let n = element_count(Self::NAME, num_elements)?;
        let same_width = O::SIZE as u64 == self.offsets.size();
        let aligned = chunk.as_ptr().align_offset(std::mem::align_of::<O>()) == 0;
        if same_width && aligned && cfg!(target_endian = "little") {
            let layout = self.layout(chunk, n)?;
            let values = Buffer::from(chunk.slice(layout.values_start..));
            let offsets_buffer = Buffer::from(chunk.slice(..(n + 1) * O::SIZE));
            // Aligned and of the right length: this cannot panic.
            let offsets = ScalarBuffer::<O>::new(offsets_buffer, 0, n + 1);
            check_offsets(&offsets, values.len()).map_err(|e| e.into_codec(Self::NAME))?;
            // SAFETY: just checked.
            return Ok(unsafe { VlenBinary::new_unchecked(offsets, values) });
        }
        let (offsets, layout) = self.decode_offsets(
            chunk,
            n,
            O::MAX_USIZE,
            O::NAME,
            |o| O::usize_as(o as usize),
            |o| O::usize_as(o as usize),
        )?;
        let values = Buffer::from(chunk.slice(layout.values_start..));
        // SAFETY: checked by decode_offsets: from 0, non-decreasing, ending at the values
        // length, which fits O (so the lossy conversions above were exact).
        Ok(unsafe { VlenBinary::new_unchecked(offsets.into(), values) })
    }

    /// Decode a whole chunk of strings into Arrow layout, as
    /// [`decode_binary`](Self::decode_binary), checking that every element is valid UTF-8.
    ///
    /// # Errors
    /// As [`decode_binary`](Self::decode_binary);
    /// [`zarr_codecs::Error::InvalidElement`] naming the first element that is not UTF-8.
    pub fn decode_strings<O: VlenOffset>(
        &self,
        chunk: &Bytes,
        num_elements: u64,
    ) -> CodecResult<VlenStrings<O>> {
        VlenStrings::try_from_binary(self.decode_binary(chunk, num_elements)?)
            .map_err(|e| e.into_codec(Self::NAME))
    }

    /// Encode offsets (as `usize` by `to_usize`) and values.
    fn encode_parts<T: Copy>(
        &self,
        offsets: &[T],
        values: &[u8],
        to_usize: impl Fn(T) -> usize,
    ) -> CodecResult<Bytes> {
        let n = offsets.len().saturating_sub(1);
        let too_large = |reason: String| CodecError::Compression {
            codec: Self::NAME.into(),
            reason,
        };
        let max = match self.offsets {
            OffsetType::Int32 => i32::MAX_USIZE,
            OffsetType::Int64 => i64::MAX_USIZE,
        };
        if values.len() > max {
            return Err(too_large(format!(
                "{} value bytes do not fit {} offsets (configure \"offsets\": \"int64\")",
                values.len(),
                self.offsets.as_str()
            )));
        }
        let start = self.values_start(n as u64)?;
        let size = usize::try_from(start)
            .ok()
            .and_then(|s| s.checked_add(values.len()))
            .ok_or_else(|| too_large(format!("{n} elements overflow the encoded size")))?;
        let mut out = Vec::with_capacity(size);
        match self.offsets {
            // Every offset is at most values.len(), which fits.
            OffsetType::Int32 => {
                for &o in offsets {
                    out.extend_from_slice(&(to_usize(o) as i32).to_le_bytes());
                }
            }
            OffsetType::Int64 => {
                for &o in offsets {
                    out.extend_from_slice(&(to_usize(o) as i64).to_le_bytes());
                }
            }
        }
        out.resize(size - values.len(), 0);
        out.extend_from_slice(values);
        Ok(out.into())
    }

    /// Encode elements (all of a chunk's elements, C order).
    ///
    /// # Errors
    /// [`zarr_codecs::Error::Compression`] if the values do not fit the configured offsets.
    pub fn encode_binary<O: VlenOffset>(&self, elements: &VlenBinary<O>) -> CodecResult<Bytes> {
        self.encode_parts(elements.offsets(), elements.values(), O::as_usize)
    }

    /// Encode strings (all of a chunk's elements, C order).
    ///
    /// # Errors
    /// As [`encode_binary`](Self::encode_binary).
    pub fn encode_strings<O: VlenOffset>(&self, strings: &VlenStrings<O>) -> CodecResult<Bytes> {
        self.encode_binary(strings.as_binary())
    }

    /// The bytes of an encoded chunk of `num_elements` elements that hold the offsets needed
    /// for `elements` (a range of flat C-order indices): offsets `elements.start` to
    /// `elements.end` inclusive.
    ///
    /// Reading a few elements of a large chunk in the store takes two requests: this range,
    /// then [`values_byte_range`](Self::values_byte_range) computed from what it returned;
    /// [`decode_range`](Self::decode_range) turns both into the elements.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidRegion`] if `elements` is not within the chunk.
    pub fn offsets_byte_range(
        &self,
        num_elements: u64,
        elements: Range<u64>,
    ) -> CodecResult<Range<u64>> {
        if elements.start > elements.end || elements.end > num_elements {
            return Err(CodecError::InvalidRegion {
                reason: format!(
                    "elements {}..{} are not within the chunk's {num_elements}",
                    elements.start, elements.end
                ),
            });
        }
        // Within the offsets of a chunk whose values_start does not overflow.
        self.values_start(num_elements)?;
        let size = self.offsets.size();
        Ok(elements.start * size..(elements.end + 1) * size)
    }

    /// Parse fetched offsets (the bytes of
    /// [`offsets_byte_range`](Self::offsets_byte_range)), checking that they never decrease.
    fn parse_range_offsets(&self, offsets: &[u8], count: u64) -> CodecResult<Vec<i64>> {
        let size = self.offsets.size();
        if offsets.len() as u64 != (count + 1) * size {
            return Err(truncated(
                Self::NAME,
                format!(
                    "{} offset bytes for {count} elements, expected {}",
                    offsets.len(),
                    (count + 1) * size
                ),
            ));
        }
        let parsed: Vec<i64> = match self.offsets {
            OffsetType::Int32 => offsets
                .chunks_exact(4)
                .map(|b| i64::from(i32::read_le(b)))
                .collect(),
            OffsetType::Int64 => offsets.chunks_exact(8).map(i64::read_le).collect(),
        };
        if parsed[0] < 0 {
            return Err(corrupt(
                Self::NAME,
                format!("offset {} is negative", parsed[0]),
            ));
        }
        if let Some(i) = parsed.windows(2).position(|w| w[1] < w[0]) {
            return Err(corrupt(
                Self::NAME,
                format!(
                    "offset {} ({}) is less than the one before it ({}) in the range read",
                    i + 1,
                    parsed[i + 1],
                    parsed[i]
                ),
            ));
        }
        Ok(parsed)
    }

    /// The bytes of the encoded chunk holding the values of the elements whose offsets
    /// `offsets` holds (as read from [`offsets_byte_range`](Self::offsets_byte_range)).
    ///
    /// # Errors
    /// [`zarr_codecs::Error::Truncated`] if `offsets` has the wrong length,
    /// [`zarr_codecs::Error::Corrupt`] if they are negative or decrease.
    pub fn values_byte_range(&self, num_elements: u64, offsets: &[u8]) -> CodecResult<Range<u64>> {
        let count = (offsets.len() as u64 / self.offsets.size()).saturating_sub(1);
        let parsed = self.parse_range_offsets(offsets, count)?;
        let start = self.values_start(num_elements)?;
        let (first, last) = (parsed[0] as u64, parsed[parsed.len() - 1] as u64);
        match (start.checked_add(first), start.checked_add(last)) {
            (Some(s), Some(e)) => Ok(s..e),
            _ => Err(corrupt(
                Self::NAME,
                format!("offsets {first}..{last} point past the largest possible chunk"),
            )),
        }
    }

    /// Decode the elements `elements` (flat C-order indices) of a chunk of `num_elements`
    /// elements of `data_type` from the bytes of
    /// [`offsets_byte_range`](Self::offsets_byte_range) and of
    /// [`values_byte_range`](Self::values_byte_range). The values are not copied.
    ///
    /// Only what was read is checked: the offsets in range never decrease, the values have the
    /// length they give, and (for strings) the elements are valid UTF-8. The rest of the
    /// chunk is not looked at.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidRegion`] for elements outside the chunk;
    /// [`zarr_codecs::Error::Truncated`] / [`zarr_codecs::Error::Corrupt`] for offsets or
    /// values of the wrong length or order; [`zarr_codecs::Error::InvalidElement`] for invalid
    /// UTF-8; [`zarr_codecs::Error::IncompatibleRepresentation`] for a data type other than
    /// `string` or `bytes`.
    pub fn decode_range(
        &self,
        data_type: &DataType,
        num_elements: u64,
        elements: Range<u64>,
        offsets: &[u8],
        values: Bytes,
    ) -> CodecResult<VlenBytes> {
        let utf8 = self.check_type(data_type)?;
        self.offsets_byte_range(num_elements, elements.clone())?;
        let parsed = self.parse_range_offsets(offsets, elements.end - elements.start)?;
        let base = parsed[0];
        let span = (parsed[parsed.len() - 1] - base) as u64;
        if values.len() as u64 != span {
            return Err(truncated(
                Self::NAME,
                format!(
                    "{} value bytes for elements {}..{}, whose offsets span {span}",
                    values.len(),
                    elements.start,
                    elements.end
                ),
            ));
        }
        let rebased: Vec<u64> = parsed.iter().map(|&o| (o - base) as u64).collect();
        if utf8 {
            check_utf8(&values, &rebased, |o| o as usize)
                .map_err(|e| shift_element(e, elements.start).into_codec(Self::NAME))?;
        }
        VlenBytes::try_new(rebased, values)
    }

    /// Decode only the elements of `region` (chunk coordinates) of a chunk in memory,
    /// returning them in the region's C order as [`ArrayBytes::Variable`].
    ///
    /// Only the offsets of the region's runs of consecutive elements and their values are
    /// read and checked. When the region is one run (a range of a 1-D chunk, or whole rows),
    /// the values are a slice of `chunk`; otherwise they are gathered into one new buffer.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidRegion`] if the region is not within the chunk; as
    /// [`decode_range`](Self::decode_range) for malformed data.
    pub fn decode_region(
        &self,
        chunk: &Bytes,
        decoded: &ChunkRepresentation,
        region: &Region,
    ) -> CodecResult<ArrayBytes> {
        let utf8 = self.check_type(decoded.data_type())?;
        let n = decoded.num_elements();
        let start = self.values_start(n)?;
        if (chunk.len() as u64) < start {
            return Err(truncated(
                Self::NAME,
                format!(
                    "{} bytes, but the offsets of {n} elements and their padding take {start}",
                    chunk.len()
                ),
            ));
        }
        // Checked above: fits usize.
        let values = chunk.slice(start as usize..);
        let mut runs: Vec<VlenBytes> = Vec::new();
        for_each_run(decoded.shape(), region, |first, count| {
            let range = self.offsets_byte_range(n, first..first + count)?;
            let raw = usize_range(range.start, range.end - range.start)
                .and_then(|r| chunk.get(r))
                .ok_or_else(|| truncated(Self::NAME, "offsets past the end of the chunk".into()))?;
            let vrange = self.values_byte_range(n, raw)?;
            let (vs, ve) = (vrange.start - start, vrange.end - start);
            let piece = usize_range(vs, ve - vs)
                .filter(|r| r.end <= values.len())
                .ok_or_else(|| {
                    corrupt(
                        Self::NAME,
                        format!(
                            "offsets of elements {first}..{} point to values {vs}..{ve}, past the \
                         {} value bytes",
                            first + count,
                            values.len()
                        ),
                    )
                })?;
            let data_type = if utf8 {
                DataType::String
            } else {
                DataType::Bytes
            };
            runs.push(self.decode_range(
                &data_type,
                n,
                first..first + count,
                raw,
                values.slice(piece),
            )?);
            Ok(())
        })?;
        let single = runs.len() == 1;
        match runs.pop() {
            Some(only) if single => Ok(ArrayBytes::Variable(only)),
            last => {
                let runs = runs.into_iter().chain(last);
                let mut offsets = vec![0u64];
                let mut buffer = Vec::new();
                for run in runs {
                    let base = buffer.len() as u64;
                    buffer.extend_from_slice(run.values());
                    offsets.extend(run.offsets()[1..].iter().map(|o| o + base));
                }
                Ok(ArrayBytes::Variable(VlenBytes::try_new(
                    offsets,
                    buffer.into(),
                )?))
            }
        }
    }

    /// Whether `data_type` is a string (`Ok(true)`) or bytes (`Ok(false)`).
    fn check_type(&self, data_type: &DataType) -> CodecResult<bool> {
        match data_type {
            DataType::String => Ok(true),
            DataType::Bytes => Ok(false),
            other => Err(CodecError::IncompatibleRepresentation {
                codec: Self::NAME.into(),
                reason: format!("it encodes data types `string` and `bytes` only, not {other}"),
            }),
        }
    }
}

/// Check the first and last offsets before reading the rest.
fn check_ends<W: VlenOffset>(first: W, last: W, values_len: usize) -> Result<(), Error> {
    if first != W::usize_as(0) {
        return Err(Error::FirstOffset {
            found: first.as_i64(),
        });
    }
    if W::try_from_usize(values_len) != Some(last) {
        return Err(Error::LastOffset {
            last: last.as_i64(),
            values_len: values_len as u64,
        });
    }
    Ok(())
}

/// Shift the element index of a UTF-8 error in a range to the chunk's numbering.
fn shift_element(e: Error, first: u64) -> Error {
    match e {
        Error::InvalidUtf8 { index, byte } => Error::InvalidUtf8 {
            index: index + first as usize,
            byte,
        },
        other => other,
    }
}

impl ArrayToBytesCodec for VlenArrowCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut config = serde_json::Map::new();
        config.insert("offsets".into(), self.offsets.as_str().into());
        ExtensionObject::with_configuration(Self::NAME, config)
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> CodecResult<Option<u64>> {
        check_data_type(Self::NAME, decoded, &[DataType::String, DataType::Bytes])?;
        self.values_start(decoded.num_elements())?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> CodecResult<Bytes> {
        self.check_type(decoded.data_type())?;
        let v = variable_input(Self::NAME, &array, decoded)?;
        self.encode_parts(v.offsets(), v.values(), |o| o as usize)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> CodecResult<ArrayBytes> {
        let utf8 = self.check_type(decoded.data_type())?;
        let n = element_count(Self::NAME, decoded.num_elements())?;
        let (offsets, layout) =
            self.decode_offsets(&bytes, n, usize::MAX, "uint64", |o| o as u64, |o| o as u64)?;
        let values = bytes.slice(layout.values_start..);
        if utf8 {
            check_utf8(&values, &offsets, |o| o as usize).map_err(|e| e.into_codec(Self::NAME))?;
        }
        Ok(ArrayBytes::Variable(VlenBytes::try_new(offsets, values)?))
    }
}
