//! zarrs' `zarrs.vlen` codec: the offsets and the values of a chunk, each through a codec
//! chain of its own.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, BytesCodec, ChunkRepresentation, Codec, CodecChain,
    CodecRegistry, DEFAULT_SIZE_LIMIT, Error as CodecError, Result as CodecResult, VlenBytes,
};
use zarr_core::{DataType, ExtensionObject, FillValue};

use crate::common::{check_data_type, check_keys, corrupt, truncated, variable_input};
use crate::utf8::check_utf8;

/// The width of the offsets a [`ZarrsVlenCodec`] chunk stores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum VlenIndexType {
    /// `"uint32"`: up to 4 GiB of values per chunk.
    UInt32,
    /// `"uint64"` (the default, as in zarrs).
    #[default]
    UInt64,
}

impl VlenIndexType {
    /// `"uint32"` or `"uint64"`, as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UInt32 => "uint32",
            Self::UInt64 => "uint64",
        }
    }

    fn data_type(self) -> DataType {
        match self {
            Self::UInt32 => DataType::UInt32,
            Self::UInt64 => DataType::UInt64,
        }
    }

    fn fill_value(self) -> FillValue {
        match self {
            Self::UInt32 => FillValue::from(0u32),
            Self::UInt64 => FillValue::from(0u64),
        }
    }
}

/// Where a [`ZarrsVlenCodec`] chunk keeps its encoded offsets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum VlenIndexLocation {
    /// `"start"` (the default, and what a configuration without `index_location` means):
    /// the encoded index's length, the index, then the values.
    #[default]
    Start,
    /// `"end"`: the values, the index, then the index's length.
    End,
}

impl VlenIndexLocation {
    /// `"start"` or `"end"`, as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::End => "end",
        }
    }
}

/// The `zarrs.vlen` codec (array->bytes) of zarrs, for data types `string` and `bytes`: the
/// Arrow layout of a chunk (offsets, then all values back to back) with the offsets and the
/// values each encoded by a codec chain of its own.
///
/// A chunk of `n` elements is stored as
///
/// - the **index**: the `n + 1` offsets (`offsets[i]..offsets[i + 1]` is element `i`'s bytes
///   in the values) as a 1-d array of `uint32` or `uint64` (`index_data_type`), encoded by
///   `index_codecs`;
/// - the **data**: the values as a 1-d `uint8` array, encoded by `data_codecs` (nothing at
///   all when every element is empty);
/// - the byte length of the encoded index as a little-endian `u64`: first, before the index
///   and then the data, for `index_location` `"start"`; last, after the data and then the
///   index, for `"end"`.
///
/// Configuration (all written; `index_location` is `"start"` when absent, as zarrs' first
/// version wrote it):
///
/// ```json
/// {"name": "zarrs.vlen", "configuration": {
///   "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
///   "data_codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}],
///   "index_data_type": "uint32",
///   "index_location": "end"}}
/// ```
///
/// Decoding checks that the offsets never decrease, that the data decodes to as many bytes
/// as the last offset says (at most [`DEFAULT_SIZE_LIMIT`], so a corrupt index cannot make
/// the decoder allocate without bound), that no stray bytes follow, and UTF-8 for strings.
/// zarrs marks the codec experimental; zarr-python and tensorstore do not read it. Write
/// `vlen-utf8` / `vlen-bytes` for data they must read.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, ChunkRepresentation};
/// use zarr_core::{DataType, FillValue};
/// use zarr_vlen::{VlenStrings, ZarrsVlenCodec};
///
/// let codec = ZarrsVlenCodec::default();
/// let repr = ChunkRepresentation::try_new(vec![3], DataType::String, FillValue::from(""))?;
/// let strings = VlenStrings::<i64>::try_from(&["a", "", "héllo"][..])?;
/// let stored = codec.encode(ArrayBytes::try_from(strings.clone())?, &repr)?;
/// // The index's length (4 offsets of 8 bytes), the index, then the values.
/// assert_eq!(&stored[..8], &32u64.to_le_bytes());
/// assert_eq!(&stored[40..], "ahéllo".as_bytes());
/// let back = VlenStrings::<i64>::try_from(codec.decode(stored, &repr)?)?;
/// assert_eq!(back, strings);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ZarrsVlenCodec {
    /// The index chain, for the chunk size it was built with (rebuilt for others).
    index_chain: Arc<CodecChain>,
    /// The data chain, built for one byte (rebuilt for each chunk's length).
    data_chain: Arc<CodecChain>,
    index_type: VlenIndexType,
    location: VlenIndexLocation,
}

impl Default for ZarrsVlenCodec {
    /// zarrs' defaults: `bytes` (little-endian) for the index, `bytes` for the data, `uint64`
    /// offsets, index at the start.
    fn default() -> Self {
        Self::new(
            vec![Codec::ArrayToBytes(Arc::new(BytesCodec::little()))],
            vec![Codec::ArrayToBytes(Arc::new(BytesCodec::new(None)))],
            VlenIndexType::UInt64,
            VlenIndexLocation::Start,
        )
        .expect("bytes codecs take 1-d uint8 and uint64 arrays")
    }
}

impl ZarrsVlenCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "zarrs.vlen";

    /// The codec with these chains: `index_codecs` take the offsets as a 1-d array of
    /// `index_type`, `data_codecs` the values as a 1-d `uint8` array.
    ///
    /// # Errors
    /// As [`CodecChain::new`]: codecs out of order, not exactly one array->bytes codec, or a
    /// codec that cannot take its input.
    pub fn new(
        index_codecs: Vec<Codec>,
        data_codecs: Vec<Codec>,
        index_type: VlenIndexType,
        location: VlenIndexLocation,
    ) -> CodecResult<Self> {
        let index_chain = CodecChain::new(index_codecs, index_repr(index_type, 1)?)?;
        let data_chain = CodecChain::new(data_codecs, data_repr(1)?)?;
        Ok(Self {
            index_chain: Arc::new(index_chain),
            data_chain: Arc::new(data_chain),
            index_type,
            location,
        })
    }

    /// Parse the codec's metadata for chunks of `decoded`, building both chains with
    /// `registry`.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for a missing or malformed member, or an
    /// unknown one; errors from building the chains (an unknown codec, one that cannot take
    /// its input).
    pub fn from_metadata(
        metadata: &ExtensionObject,
        decoded: &ChunkRepresentation,
        registry: &CodecRegistry,
    ) -> CodecResult<Self> {
        check_keys(
            metadata,
            &[
                "index_codecs",
                "data_codecs",
                "index_data_type",
                "index_location",
            ],
        )?;
        let empty = Map::new();
        let config = metadata.configuration.as_ref().unwrap_or(&empty);
        let bad = |key: &str, reason: String| CodecError::InvalidConfiguration {
            codec: Self::NAME.into(),
            reason: format!("`{key}`: {reason}"),
        };
        let index_type = match config.get("index_data_type") {
            Some(Value::String(s)) if s == "uint32" => VlenIndexType::UInt32,
            Some(Value::String(s)) if s == "uint64" => VlenIndexType::UInt64,
            Some(other) => {
                return Err(bad(
                    "index_data_type",
                    format!("expected \"uint32\" or \"uint64\", found {other}"),
                ));
            }
            None => return Err(bad("index_data_type", "required".into())),
        };
        let location = match config.get("index_location") {
            None => VlenIndexLocation::Start,
            Some(Value::String(s)) if s == "start" => VlenIndexLocation::Start,
            Some(Value::String(s)) if s == "end" => VlenIndexLocation::End,
            Some(other) => {
                return Err(bad(
                    "index_location",
                    format!("expected \"start\" or \"end\", found {other}"),
                ));
            }
        };
        let list = |key: &str| -> CodecResult<Vec<ExtensionObject>> {
            match config.get(key) {
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        ExtensionObject::from_json(item, &format!("configuration.{key}[{i}]"))
                            .map_err(CodecError::from)
                    })
                    .collect(),
                Some(other) => Err(bad(
                    key,
                    format!("expected a list of codecs, found {other}"),
                )),
                None => Err(bad(key, "required".into())),
            }
        };
        let offsets = count_offsets(decoded.num_elements())?;
        let index_chain = CodecChain::from_metadata(
            &list("index_codecs")?,
            index_repr(index_type, offsets)?,
            registry,
        )?;
        let data_chain = CodecChain::from_metadata(&list("data_codecs")?, data_repr(1)?, registry)?;
        Ok(Self {
            index_chain: Arc::new(index_chain),
            data_chain: Arc::new(data_chain),
            index_type,
            location,
        })
    }

    /// The offsets' width.
    pub fn index_type(&self) -> VlenIndexType {
        self.index_type
    }

    /// Where the index is kept.
    pub fn index_location(&self) -> VlenIndexLocation {
        self.location
    }

    /// Split a stored chunk into its encoded index and encoded data.
    fn split(&self, bytes: &Bytes) -> CodecResult<(Bytes, Bytes)> {
        let total = bytes.len();
        if total < 8 {
            return Err(truncated(
                Self::NAME,
                format!("{total} bytes, fewer than the 8 of the index length"),
            ));
        }
        let (len_at, rest) = match self.location {
            VlenIndexLocation::Start => (0, 8..total),
            VlenIndexLocation::End => (total - 8, 0..total - 8),
        };
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[len_at..len_at + 8]);
        let index_len = u64::from_le_bytes(word);
        let available = (rest.end - rest.start) as u64;
        if index_len > available {
            return Err(truncated(
                Self::NAME,
                format!(
                    "the index length says {index_len} bytes, but only {available} follow the length"
                ),
            ));
        }
        let index_len = index_len as usize;
        Ok(match self.location {
            VlenIndexLocation::Start => (
                bytes.slice(rest.start..rest.start + index_len),
                bytes.slice(rest.start + index_len..rest.end),
            ),
            VlenIndexLocation::End => (
                bytes.slice(rest.end - index_len..rest.end),
                bytes.slice(rest.start..rest.end - index_len),
            ),
        })
    }

    /// The offsets, as `u64`, from the decoded index (native byte order).
    fn offsets_of(&self, index: &[u8]) -> Vec<u64> {
        match self.index_type {
            VlenIndexType::UInt32 => index
                .chunks_exact(4)
                .map(|w| u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
                .collect(),
            VlenIndexType::UInt64 => index
                .chunks_exact(8)
                .map(|w| u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
                .collect(),
        }
    }
}

/// `chain` (built for 1-d arrays) for arrays of `len` elements: itself when it was built for
/// that length, otherwise rebuilt.
fn for_length(chain: &Arc<CodecChain>, len: u64) -> CodecResult<Arc<CodecChain>> {
    if chain.decoded_representation().shape() == [len] {
        return Ok(Arc::clone(chain));
    }
    Ok(Arc::new(chain.with_chunk_shape(vec![len])?))
}

/// `n + 1`, the number of offsets of a chunk of `n` elements.
fn count_offsets(n: u64) -> CodecResult<u64> {
    n.checked_add(1)
        .ok_or_else(|| CodecError::IncompatibleRepresentation {
            codec: ZarrsVlenCodec::NAME.into(),
            reason: format!("a chunk of {n} elements has too many offsets to count"),
        })
}

fn index_repr(index_type: VlenIndexType, offsets: u64) -> CodecResult<ChunkRepresentation> {
    ChunkRepresentation::try_new(
        vec![offsets],
        index_type.data_type(),
        index_type.fill_value(),
    )
}

fn data_repr(len: u64) -> CodecResult<ChunkRepresentation> {
    ChunkRepresentation::try_new(vec![len], DataType::UInt8, FillValue::from(0u8))
}

impl ArrayToBytesCodec for ZarrsVlenCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut config = Map::new();
        config.insert("index_codecs".into(), self.index_chain.to_json());
        config.insert("data_codecs".into(), self.data_chain.to_json());
        config.insert("index_data_type".into(), self.index_type.as_str().into());
        config.insert("index_location".into(), self.location.as_str().into());
        ExtensionObject::with_configuration(Self::NAME, config)
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> CodecResult<Option<u64>> {
        check_data_type(Self::NAME, decoded, &[DataType::String, DataType::Bytes])?;
        for_length(&self.index_chain, count_offsets(decoded.num_elements())?)?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> CodecResult<Bytes> {
        check_data_type(Self::NAME, decoded, &[DataType::String, DataType::Bytes])?;
        let v = variable_input(Self::NAME, &array, decoded)?;
        let offsets = v.offsets();
        let index: Vec<u8> = match self.index_type {
            VlenIndexType::UInt32 => {
                let last = offsets.last().copied().unwrap_or(0);
                if u32::try_from(last).is_err() {
                    return Err(CodecError::Compression {
                        codec: Self::NAME.into(),
                        reason: format!(
                            "the chunk holds {last} bytes of values, more than `uint32` offsets \
                             can address (use \"index_data_type\": \"uint64\")"
                        ),
                    });
                }
                offsets
                    .iter()
                    .flat_map(|&o| (o as u32).to_ne_bytes())
                    .collect()
            }
            VlenIndexType::UInt64 => offsets.iter().flat_map(|&o| o.to_ne_bytes()).collect(),
        };
        let index = for_length(&self.index_chain, offsets.len() as u64)?
            .encode(ArrayBytes::fixed(index))?;
        let values = v.values().clone();
        let data = if values.is_empty() {
            Bytes::new()
        } else {
            for_length(&self.data_chain, values.len() as u64)?.encode(ArrayBytes::Fixed(values))?
        };
        let mut out = Vec::with_capacity(8 + index.len() + data.len());
        let index_len = (index.len() as u64).to_le_bytes();
        match self.location {
            VlenIndexLocation::Start => {
                out.extend_from_slice(&index_len);
                out.extend_from_slice(&index);
                out.extend_from_slice(&data);
            }
            VlenIndexLocation::End => {
                out.extend_from_slice(&data);
                out.extend_from_slice(&index);
                out.extend_from_slice(&index_len);
            }
        }
        Ok(out.into())
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> CodecResult<ArrayBytes> {
        check_data_type(Self::NAME, decoded, &[DataType::String, DataType::Bytes])?;
        let (index, data) = self.split(&bytes)?;
        let count = count_offsets(decoded.num_elements())?;
        let index_chain = for_length(&self.index_chain, count)?;
        if let Some(size) = index_chain.encoded_size()
            && size != index.len() as u64
        {
            return Err(corrupt(
                Self::NAME,
                format!(
                    "the index of {count} offsets takes {size} bytes, but the index length says {}",
                    index.len()
                ),
            ));
        }
        let index = index_chain.decode(index)?.into_fixed(Self::NAME)?;
        let mut offsets = self.offsets_of(&index);
        if offsets.len() as u64 != count {
            return Err(corrupt(
                Self::NAME,
                format!(
                    "the index decoded to {} offsets, not {count}",
                    offsets.len()
                ),
            ));
        }
        if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
            return Err(corrupt(
                Self::NAME,
                format!(
                    "offset {} ({}) is less than offset {i} ({})",
                    i + 1,
                    offsets[i + 1],
                    offsets[i]
                ),
            ));
        }
        let end = offsets[offsets.len() - 1];
        let values = if end == 0 {
            if !data.is_empty() {
                return Err(corrupt(
                    Self::NAME,
                    format!(
                        "every element is empty, but {} bytes of data follow the index",
                        data.len()
                    ),
                ));
            }
            Bytes::new()
        } else {
            if end > DEFAULT_SIZE_LIMIT {
                return Err(CodecError::DecodedSizeLimit {
                    codec: Self::NAME.into(),
                    claimed: end,
                    limit: DEFAULT_SIZE_LIMIT,
                });
            }
            let chain = for_length(&self.data_chain, end)?;
            if let Some(size) = chain.encoded_size()
                && size != data.len() as u64
            {
                return Err(corrupt(
                    Self::NAME,
                    format!(
                        "the index says the values take {end} bytes, stored as {size}, but {} bytes \
                     of data are there",
                        data.len()
                    ),
                ));
            }
            chain.decode(data)?.into_fixed(Self::NAME)?
        };
        // Element `i` is `values[offsets[i]..offsets[i + 1]]`; the Arrow layout in memory
        // starts at 0.
        let start = offsets[0];
        let values = values.slice(start as usize..);
        if start != 0 {
            offsets.iter_mut().for_each(|o| *o -= start);
        }
        if *decoded.data_type() == DataType::String {
            check_utf8(&values, &offsets, |o| o as usize).map_err(|e| e.into_codec(Self::NAME))?;
        }
        Ok(ArrayBytes::Variable(VlenBytes::try_new(offsets, values)?))
    }
}
