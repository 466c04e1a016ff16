//! The three codec traits and [`Codec`], the value a registry constructor returns.

use std::fmt::Debug;
use std::sync::Arc;

use bytes::Bytes;
use zarr_core::{ExtensionObject, Region};

use crate::array_bytes::ArrayBytes;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;
use crate::strided;

/// How many bytes a bytes->bytes decoder must produce, or may produce at most.
///
/// A decoder never allocates more than [`ExpectedSize::limit`] bytes, whatever the encoded data
/// claims: a frame that claims or produces more is an error
/// ([`Error::DecodedSizeLimit`]), never an unbounded allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExpectedSize {
    /// Exactly this many bytes (the decoded chunk has a fixed size).
    Exact(u64),
    /// At most this many bytes (the size depends on the data, e.g. after a compressor or for
    /// variable-length elements).
    AtMost(u64),
}

impl ExpectedSize {
    /// The most bytes the decoder may produce.
    pub fn limit(self) -> u64 {
        match self {
            Self::Exact(n) | Self::AtMost(n) => n,
        }
    }

    /// [`ExpectedSize::limit`] as a `usize`, saturating (no buffer of that size can be
    /// allocated anyway on a platform where it does not fit).
    pub fn limit_usize(self) -> usize {
        usize::try_from(self.limit()).unwrap_or(usize::MAX)
    }

    /// Check a size that encoded data *claims* (a frame header) before allocating for it.
    ///
    /// # Errors
    /// [`Error::DecodedSizeLimit`] if `claimed` exceeds the limit,
    /// [`Error::DecodedSizeMismatch`] if it is below an exact size.
    pub fn check_claim(self, codec: &str, claimed: u64) -> Result<()> {
        if claimed > self.limit() {
            return Err(Error::DecodedSizeLimit {
                codec: codec.to_owned(),
                claimed,
                limit: self.limit(),
            });
        }
        self.check(codec, claimed)
    }

    /// Check the size of decoded output.
    ///
    /// # Errors
    /// [`Error::DecodedSizeMismatch`] if `found` is not the exact size, or exceeds the limit.
    pub fn check(self, codec: &str, found: u64) -> Result<()> {
        let ok = match self {
            Self::Exact(n) => found == n,
            Self::AtMost(n) => found <= n,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::DecodedSizeMismatch {
                codec: codec.to_owned(),
                expected: self.to_string(),
                found,
            })
        }
    }

    /// Add `n` bytes to the size or limit (saturating), for codecs that add a fixed overhead.
    pub fn plus(self, n: u64) -> Self {
        match self {
            Self::Exact(m) => Self::Exact(m.saturating_add(n)),
            Self::AtMost(m) => Self::AtMost(m.saturating_add(n)),
        }
    }
}

impl std::fmt::Display for ExpectedSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exact(n) => write!(f, "{n}"),
            Self::AtMost(n) => write!(f, "at most {n}"),
        }
    }
}

/// A codec that transforms an array into another array (e.g. `transpose`).
///
/// Required: [`to_metadata`](Self::to_metadata),
/// [`encoded_representation`](Self::encoded_representation), [`encode`](Self::encode),
/// [`decode`](Self::decode). The rest have defaults.
pub trait ArrayToArrayCodec: Debug + Send + Sync {
    /// The codec's metadata, as written in `zarr.json` (`name` and `configuration`).
    fn to_metadata(&self) -> ExtensionObject;

    /// The representation this codec produces from `decoded`; also where the codec refuses a
    /// representation it cannot take (a transpose order of the wrong rank).
    ///
    /// # Errors
    /// [`Error::IncompatibleRepresentation`] if the codec cannot encode `decoded`.
    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation>;

    /// Encode a chunk of representation `decoded`.
    ///
    /// # Errors
    /// If the chunk does not match `decoded`, or the codec fails.
    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes>;

    /// Decode a chunk whose decoded representation is `decoded` (the representation
    /// [`encode`](Self::encode) took).
    ///
    /// # Errors
    /// If the chunk does not match the encoded representation, or the codec fails.
    fn decode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes>;

    /// Decode fixed-size data straight into `out`, which holds exactly the decoded chunk.
    /// The default decodes and copies.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); [`Error::OutputSize`] if `out` has the wrong length.
    fn decode_into(
        &self,
        array: ArrayBytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let name = self.to_metadata().name;
        let bytes = self.decode(array, decoded)?.into_fixed(&name)?;
        copy_exact(&bytes, out)
    }

    /// Whether the codec can decode part of a chunk without decoding all of it.
    fn can_partially_decode(&self) -> bool {
        false
    }

    /// Where the element at C-order position `index` of this codec's encoded
    /// representation sits in its decoded representation `decoded` (also C order), or `None`
    /// when elements do not correspond one to one.
    ///
    /// A [`CodecChain`](crate::CodecChain) uses it to name an element that a later codec
    /// rejects ([`Error::InvalidElement`]) by its position in the chunk. The default, `None`,
    /// is the safe answer for any codec; an element-wise codec (a conversion, a scale) returns
    /// `Some(index)`, and one that moves elements (as `transpose`) says where they go.
    fn decoded_position(&self, index: u64, decoded: &ChunkRepresentation) -> Option<u64> {
        let _ = (index, decoded);
        None
    }

    /// For a codec that only relabels the chunk's shape, keeping its elements in the same C
    /// order and unchanged: the region of the encoded representation that holds `region` of
    /// the decoded chunk `decoded`, with the same elements in the same order. `None` (the
    /// default) when the codec changes or moves elements, or the region has no such image.
    ///
    /// A [`CodecChain`](crate::CodecChain) whose array->array codecs all answer decodes
    /// regions of chunks as the codecs after them do (see
    /// [`CodecChain::can_partially_decode`](crate::CodecChain::can_partially_decode)).
    fn encoded_region(&self, region: &Region, decoded: &ChunkRepresentation) -> Option<Region> {
        let _ = (region, decoded);
        None
    }
}

/// A codec that serialises an array into bytes (e.g. `bytes`, `sharding_indexed`, `vlen-utf8`).
///
/// Required: [`to_metadata`](Self::to_metadata), [`encoded_size`](Self::encoded_size),
/// [`encode`](Self::encode), [`decode`](Self::decode). The rest have defaults.
pub trait ArrayToBytesCodec: Debug + Send + Sync {
    /// The codec's metadata, as written in `zarr.json`.
    fn to_metadata(&self) -> ExtensionObject;

    /// Check that the codec can encode `decoded`, and say how many bytes the encoding takes:
    /// `Some(n)` when it is the same for every chunk (the `bytes` codec: element count times
    /// element size), `None` when it depends on the data.
    ///
    /// # Errors
    /// [`Error::IncompatibleRepresentation`] if the codec cannot encode `decoded` (the `bytes`
    /// codec on strings, or without `endian` on multi-byte elements).
    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>>;

    /// Encode a chunk.
    ///
    /// # Errors
    /// If the chunk does not match `decoded`, or the codec fails.
    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes>;

    /// Decode a chunk. The result must match `decoded` exactly (the chain checks).
    ///
    /// # Errors
    /// If the data is malformed or decodes to something other than `decoded`.
    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes>;

    /// Decode fixed-size data straight into `out`, which holds exactly the decoded chunk.
    /// The default decodes and copies; the `bytes` codec copies (and swaps) directly.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); [`Error::OutputSize`] if `out` has the wrong length.
    fn decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let name = self.to_metadata().name;
        let array = self.decode(bytes, decoded)?;
        array.validate_for(&name, decoded)?;
        copy_exact(&array.into_fixed(&name)?, out)
    }

    /// Whether the encoded form of `decoded` has exactly the decoded size and can be turned
    /// into the decoded form in place by [`decode_in_place`](Self::decode_in_place). When it
    /// can, a chain lets the bytes->bytes codec before it decompress straight into the
    /// caller's buffer.
    fn supports_in_place(&self, decoded: &ChunkRepresentation) -> bool {
        let _ = decoded;
        false
    }

    /// Turn encoded bytes into decoded elements in place (see
    /// [`supports_in_place`](Self::supports_in_place)).
    ///
    /// # Errors
    /// [`Error::Unsupported`] by default; otherwise as [`decode`](Self::decode).
    fn decode_in_place(&self, data: &mut [u8], decoded: &ChunkRepresentation) -> Result<()> {
        let _ = (data, decoded);
        Err(Error::unsupported(
            &self.to_metadata().name,
            "decoding in place",
        ))
    }

    /// When decoding `bytes` would give them back unchanged (the `bytes` codec in the
    /// machine's byte order, or on one-byte elements), check them as decoding would and return
    /// them, so a caller can copy elements straight out of the encoded chunk instead of
    /// decoding it into a buffer first. `None` (the default) when decoding changes them.
    ///
    /// # Errors
    /// As [`decode`](Self::decode), for encoded data decoding would reject.
    fn decode_unchanged<'a>(
        &self,
        bytes: &'a [u8],
        decoded: &ChunkRepresentation,
    ) -> Result<Option<&'a [u8]>> {
        let _ = (bytes, decoded);
        Ok(None)
    }

    /// Whether [`partial_decode_into`](Self::partial_decode_into) decodes a region without
    /// decoding the whole chunk.
    fn can_partially_decode(&self) -> bool {
        false
    }

    /// Decode the elements of `region` (chunk coordinates) into `out`, in C order of the
    /// region. The default decodes the whole chunk and copies the region out.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the region does not lie in the chunk, [`Error::OutputSize`]
    /// if `out` does not hold the region; otherwise as [`decode`](Self::decode).
    fn partial_decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        region: &Region,
        out: &mut [u8],
    ) -> Result<()> {
        let name = self.to_metadata().name;
        let array = self.decode(bytes, decoded)?;
        array.validate_for(&name, decoded)?;
        let whole = array.into_fixed(&name)?;
        strided::extract_region(&whole, decoded, region, out)
    }
}

/// A codec that transforms bytes into bytes (compressors, checksums).
///
/// Required: [`to_metadata`](Self::to_metadata), [`encode`](Self::encode),
/// [`decode`](Self::decode). The rest have defaults.
pub trait BytesToBytesCodec: Debug + Send + Sync {
    /// The codec's metadata, as written in `zarr.json`.
    fn to_metadata(&self) -> ExtensionObject;

    /// Encode bytes.
    ///
    /// # Errors
    /// If the codec fails (e.g. the input is larger than the format can hold).
    fn encode(&self, decoded: Bytes) -> Result<Bytes>;

    /// Decode bytes; the output must fit `expected`, and the decoder must not allocate more
    /// than [`ExpectedSize::limit`] bytes whatever the input claims.
    ///
    /// # Errors
    /// [`Error::DecodedSizeLimit`] / [`Error::DecodedSizeMismatch`] for output of the wrong
    /// size; [`Error::Corrupt`], [`Error::Truncated`], [`Error::Decompression`],
    /// [`Error::ChecksumMismatch`] for bad input.
    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes>;

    /// The size of the encoding of `decoded` bytes: exact for codecs with a fixed overhead
    /// (`crc32c`: `n + 4`), a bound for compressors, `None` when unknown (the default).
    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        let _ = decoded;
        None
    }

    /// Decode straight into `out`, which must be filled exactly. The default decodes and
    /// copies; compressors decompress directly into `out`.
    ///
    /// # Errors
    /// As [`decode`](Self::decode) with `ExpectedSize::Exact(out.len())`.
    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let bytes = self.decode(encoded, ExpectedSize::Exact(out.len() as u64))?;
        copy_exact(&bytes, out)
    }

    /// Whether [`partial_decode_into`](Self::partial_decode_into) decodes a byte range without
    /// decoding everything.
    fn can_partially_decode(&self) -> bool {
        false
    }

    /// Decode the bytes `offset..offset + out.len()` of the decoded data into `out`. The
    /// default decodes everything and copies the range.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the range lies outside the decoded data; otherwise as
    /// [`decode`](Self::decode).
    fn partial_decode_into(
        &self,
        encoded: &Bytes,
        expected: ExpectedSize,
        offset: u64,
        out: &mut [u8],
    ) -> Result<()> {
        let all = self.decode(encoded.clone(), expected)?;
        let range = byte_range(offset, out.len(), all.len())?;
        out.copy_from_slice(&all[range]);
        Ok(())
    }
}

/// One codec of any kind: what a registry constructor returns and what a
/// [`CodecChain`](crate::CodecChain) is built from.
#[derive(Debug, Clone)]
pub enum Codec {
    /// An array->array codec.
    ArrayToArray(Arc<dyn ArrayToArrayCodec>),
    /// An array->bytes codec.
    ArrayToBytes(Arc<dyn ArrayToBytesCodec>),
    /// A bytes->bytes codec.
    BytesToBytes(Arc<dyn BytesToBytesCodec>),
}

impl Codec {
    /// The codec's metadata.
    pub fn to_metadata(&self) -> ExtensionObject {
        match self {
            Self::ArrayToArray(c) => c.to_metadata(),
            Self::ArrayToBytes(c) => c.to_metadata(),
            Self::BytesToBytes(c) => c.to_metadata(),
        }
    }

    /// `"array->array"`, `"array->bytes"` or `"bytes->bytes"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ArrayToArray(_) => "array->array",
            Self::ArrayToBytes(_) => "array->bytes",
            Self::BytesToBytes(_) => "bytes->bytes",
        }
    }
}

/// Copy `src` into `out`, which must have the same length.
pub(crate) fn copy_exact(src: &[u8], out: &mut [u8]) -> Result<()> {
    if src.len() != out.len() {
        return Err(Error::output_size(src.len(), out.len()));
    }
    out.copy_from_slice(src);
    Ok(())
}

/// `offset..offset + len` as a range within `total` bytes.
pub(crate) fn byte_range(offset: u64, len: usize, total: usize) -> Result<std::ops::Range<usize>> {
    let start = usize::try_from(offset).ok();
    match start.and_then(|s| s.checked_add(len).map(|e| (s, e))) {
        Some((s, e)) if e <= total => Ok(s..e),
        _ => Err(Error::InvalidRegion {
            reason: format!(
                "bytes {offset}..{} lie outside the {total} decoded bytes",
                offset.saturating_add(len as u64)
            ),
        }),
    }
}
