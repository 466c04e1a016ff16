//! The `sharding_indexed` codec: configuration, whole-shard encoding and decoding, partial
//! decoding and partial writes.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use rayon::prelude::*;
use serde_json::Value;
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, ArrayViewMut, BytesCodec, ChunkRepresentation, Codec,
    CodecChain, CodecRegistry, Crc32cCodec, VlenBytes,
};
use zarr_core::{DataType, ExtensionObject, FillValue, Region};
use zarr_store::StoreKey;

use crate::error::{Error, Result, ShardName};
use crate::index::{ShardIndex, chunk_count, chunk_indices};
use crate::nd;

/// The codec's name in metadata.
pub const NAME: &str = "sharding_indexed";

/// Where the index sits in a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IndexLocation {
    /// Before the chunk data; offsets include the index's size.
    Start,
    /// After the chunk data (the default): read with one suffix request.
    #[default]
    End,
}

impl IndexLocation {
    /// `"start"` or `"end"`, as written in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::End => "end",
        }
    }
}

/// Register `sharding_indexed` in `registry`. The inner chain and the index chain of each
/// sharding codec are built from the registry the codec's constructor is given, so codecs
/// registered before or after this call (variable-length strings, a user's own) can be used
/// inside shards, and shards can nest.
///
/// ```
/// use zarr_codecs::CodecRegistry;
///
/// let mut registry = CodecRegistry::with_defaults();
/// zarr_sharding::register(&mut registry);
/// assert!(registry.contains("sharding_indexed"));
/// ```
pub fn register(registry: &mut CodecRegistry) {
    registry.register(NAME, |meta, repr, registry| {
        let codec = ShardingCodec::from_metadata(meta, repr, registry)?;
        Ok(Codec::ArrayToBytes(Arc::new(codec)))
    });
}

/// The `sharding_indexed` codec (ZEP0002, `sharding_indexed` v1.0).
///
/// A shard is an outer chunk of the array, split into inner chunks of
/// [`inner_chunk_shape`](Self::inner_chunk_shape) that are encoded one by one with the inner
/// codec chain ([`inner_chain`](Self::inner_chain)) and stored in one value, together with an
/// index of `(offset, nbytes)` per inner chunk ([`ShardIndex`]) encoded by `index_codecs` at
/// the [`IndexLocation`].
///
/// - As an [`ArrayToBytesCodec`] it encodes and decodes whole shards in memory (inner chunks
///   in parallel on the rayon pool), and decodes regions of a shard.
/// - [`encode_shard`](Self::encode_shard) answers `None` when every inner chunk holds only the
///   fill value: nothing needs to be stored (and an existing shard should be erased).
/// - [`merge_region`](Self::merge_region) writes a region into an existing shard, re-encoding
///   only the inner chunks it touches; [`retain_region`](Self::retain_region) resets all but a
///   region to the fill value the same way.
/// - [`fetch`](Self::fetch) + [`decode_fetched_into_view`](Self::decode_fetched_into_view)
///   read a region of a stored shard with at most two store requests, split into I/O (async)
///   and CPU work (synchronous, parallel).
///
/// **Write layout.** Inner chunks that hold data are written back to back in C order of the
/// inner chunk grid, starting right after the index (`start`) or at byte 0 (`end`); empty
/// inner chunks take no bytes and are marked `(2^64-1, 2^64-1)`. Readers accept any order and
/// gaps, as the specification requires; zarr-python writes Morton order and reads ours.
///
/// ```
/// use zarr_codecs::{ArrayBytes, BytesCodec, ChunkRepresentation, Codec};
/// use zarr_core::{DataType, FillValue};
/// use zarr_sharding::{IndexLocation, ShardingCodec};
/// use std::sync::Arc;
///
/// // A shard of 4 uint16 elements in inner chunks of 2 (SPEC-NOTES 3.3, example 1).
/// let shard = ChunkRepresentation::try_new(vec![4], DataType::UInt16, FillValue::new([0, 0]))?;
/// let codec = ShardingCodec::try_new(
///     shard,
///     vec![2],
///     vec![Codec::ArrayToBytes(Arc::new(BytesCodec::little()))],
///     ShardingCodec::default_index_codecs(),
///     IndexLocation::End,
/// )?;
/// let data: Vec<u8> = [1u16, 2, 0, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let stored = codec.encode_shard(ArrayBytes::fixed(data.clone()))?.expect("not all fill");
/// assert_eq!(stored.len(), 4 + 32 + 4); // one inner chunk, the index, its checksum
/// assert_eq!(codec.decode_shard(stored)?, ArrayBytes::fixed(data));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ShardingCodec {
    shard: ChunkRepresentation,
    chunk_shape: Vec<u64>,
    chunks_per_shard: Vec<u64>,
    num_chunks: usize,
    inner: CodecChain,
    index_chain: CodecChain,
    index_size: u64,
    location: IndexLocation,
}

/// The encoded inner chunks of one shard, in C order, not yet assembled into the shard's
/// bytes: what [`ShardingCodec::encode_chunks_from`] returns and [`ShardingCodec::assemble`]
/// takes. An inner chunk that holds only the fill value has no bytes (it will be marked
/// empty in the index).
#[derive(Debug, Clone)]
pub struct EncodedChunks {
    parts: Vec<Option<Bytes>>,
}

impl EncodedChunks {
    /// The number of inner chunks (the shard's, empty ones included).
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether there are no inner chunks at all.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The encoded bytes of the inner chunks together (the index not counted).
    pub fn encoded_len(&self) -> u64 {
        self.parts.iter().flatten().map(|b| b.len() as u64).sum()
    }

    /// Encoded inner chunks gathered one by one, for example with
    /// [`ShardingCodec::encode_inner_chunk`]: one entry per inner chunk of the shard, in C
    /// order, `None` for an inner chunk that holds only the fill value.
    /// [`ShardingCodec::assemble`] checks the count.
    pub fn from_parts(parts: Vec<Option<Bytes>>) -> Self {
        Self { parts }
    }

    /// The inner chunks of `parts`, one part after another (see
    /// [`ShardingCodec::encode_chunk_range_from`]).
    pub fn concat(parts: impl IntoIterator<Item = EncodedChunks>) -> Self {
        Self {
            parts: parts.into_iter().flat_map(|p| p.parts).collect(),
        }
    }
}

/// An inner chunk touched by a region of the shard.
#[derive(Debug, Clone)]
pub(crate) struct Touch {
    /// Position of the inner chunk in C order.
    pub(crate) linear: usize,
    /// Indices of the inner chunk in the inner chunk grid.
    pub(crate) indices: Vec<u64>,
    /// The touched part, in inner chunk coordinates.
    pub(crate) chunk_region: Region,
    /// Where the touched part starts relative to the region's start.
    pub(crate) out_start: Vec<u64>,
    /// Whether the region covers the whole inner chunk.
    pub(crate) whole: bool,
}

impl ShardingCodec {
    /// A sharding codec for shards of `shard` (the outer chunk's shape, data type and fill
    /// value) with inner chunks of `chunk_shape`, inner codecs `inner` and index codecs
    /// `index`.
    ///
    /// # Errors
    /// [`Error::ChunkShapeMismatch`] if `chunk_shape` has the wrong rank, a zero, or does not
    /// divide the shard shape; [`Error::InvalidConfiguration`] if the index codecs do not
    /// produce a fixed size; codec errors from building the chains.
    pub fn try_new(
        shard: ChunkRepresentation,
        chunk_shape: Vec<u64>,
        inner: Vec<Codec>,
        index: Vec<Codec>,
        location: IndexLocation,
    ) -> Result<Self> {
        let inner_repr = shard.with_shape(chunk_shape.clone())?;
        let inner = CodecChain::new(inner, inner_repr)?;
        let cps = chunks_per_shard(shard.shape(), &chunk_shape)?;
        let index_chain = CodecChain::new(index, index_representation(&cps)?)?;
        Self::assemble_codec(shard, chunk_shape, cps, inner, index_chain, location)
    }

    /// The codec from its metadata (`{"name": "sharding_indexed", "configuration": {...}}`)
    /// for shards of `shard_repr`, building the inner and index chains with `registry`.
    ///
    /// `index_codecs` defaults to `bytes` (little-endian) + `crc32c` and `index_location` to
    /// `end` when absent.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] naming the field for a malformed configuration;
    /// [`Error::ChunkShapeMismatch`] if `chunk_shape` does not divide the shard shape; codec
    /// errors (such as an unknown inner codec) from building the chains.
    pub fn from_metadata(
        meta: &ExtensionObject,
        shard_repr: &ChunkRepresentation,
        registry: &CodecRegistry,
    ) -> Result<Self> {
        let config = meta.configuration_or_empty();
        for key in config.keys() {
            if !["chunk_shape", "codecs", "index_codecs", "index_location"].contains(&key.as_str())
            {
                return Err(config_error(key, "unknown member"));
            }
        }
        let chunk_shape = match config.get("chunk_shape") {
            Some(Value::Array(values)) => values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_u64().ok_or_else(|| {
                        config_error(
                            &format!("chunk_shape[{i}]"),
                            format!("expected a non-negative integer, found {v}"),
                        )
                    })
                })
                .collect::<Result<Vec<u64>>>()?,
            Some(other) => {
                return Err(config_error(
                    "chunk_shape",
                    format!("expected an array, found {other}"),
                ));
            }
            None => return Err(config_error("chunk_shape", "required")),
        };
        let codecs = match config.get("codecs") {
            Some(v) => extension_list(v, "codecs")?,
            None => return Err(config_error("codecs", "required")),
        };
        let location = match config.get("index_location") {
            None => IndexLocation::End,
            Some(Value::String(s)) if s == "end" => IndexLocation::End,
            Some(Value::String(s)) if s == "start" => IndexLocation::Start,
            Some(other) => {
                return Err(config_error(
                    "index_location",
                    format!("expected \"start\" or \"end\", found {other}"),
                ));
            }
        };
        let cps = chunks_per_shard(shard_repr.shape(), &chunk_shape)?;
        let inner_repr = shard_repr.with_shape(chunk_shape.clone())?;
        let inner = CodecChain::from_metadata(&codecs, inner_repr, registry)?;
        let index_repr = index_representation(&cps)?;
        let index_chain = match config.get("index_codecs") {
            Some(v) => {
                let list = extension_list(v, "index_codecs")?;
                CodecChain::from_metadata(&list, index_repr, registry)?
            }
            None => CodecChain::new(Self::default_index_codecs(), index_repr)?,
        };
        if index_chain.skipped().next().is_some() {
            return Err(config_error(
                "index_codecs",
                "every index codec must be understood (the index must be written as read)",
            ));
        }
        Self::assemble_codec(
            shard_repr.clone(),
            chunk_shape,
            cps,
            inner,
            index_chain,
            location,
        )
    }

    fn assemble_codec(
        shard: ChunkRepresentation,
        chunk_shape: Vec<u64>,
        chunks_per_shard: Vec<u64>,
        inner: CodecChain,
        index_chain: CodecChain,
        location: IndexLocation,
    ) -> Result<Self> {
        let num_chunks = chunk_count(&chunks_per_shard)?;
        let index_size = index_chain.encoded_size().ok_or_else(|| {
            config_error(
                "index_codecs",
                "the index codecs must produce a fixed size (no compression)",
            )
        })?;
        Ok(Self {
            shard,
            chunk_shape,
            chunks_per_shard,
            num_chunks,
            inner,
            index_chain,
            index_size,
            location,
        })
    }

    /// The recommended index codecs: `bytes` little-endian, then `crc32c`.
    pub fn default_index_codecs() -> Vec<Codec> {
        vec![
            Codec::ArrayToBytes(Arc::new(BytesCodec::little())),
            Codec::BytesToBytes(Arc::new(Crc32cCodec)),
        ]
    }

    /// The same codec for shards of another representation with the same data type and fill
    /// value (another outer chunk shape, as rectilinear grids have).
    ///
    /// # Errors
    /// [`Error::ChunkShapeMismatch`] if the inner chunk shape does not divide the new shape;
    /// a codec error if the data type or fill value differ.
    pub fn with_shard_representation(&self, shard: ChunkRepresentation) -> Result<Self> {
        if shard.data_type() != self.shard.data_type()
            || shard.fill_value() != self.shard.fill_value()
        {
            return Err(zarr_codecs::Error::IncompatibleRepresentation {
                codec: NAME.into(),
                reason: format!(
                    "the codec was built for {} elements; a shard of {} elements needs a new codec",
                    self.shard.data_type(),
                    shard.data_type()
                ),
            }
            .into());
        }
        let cps = chunks_per_shard(shard.shape(), &self.chunk_shape)?;
        let mut index_shape = cps.clone();
        index_shape.push(2);
        let index_chain = self.index_chain.with_chunk_shape(index_shape)?;
        Self::assemble_codec(
            shard,
            self.chunk_shape.clone(),
            cps,
            self.inner.clone(),
            index_chain,
            self.location,
        )
    }

    /// This codec, or one rebuilt for `decoded` when a chain hands it another shard shape.
    fn for_repr(&self, decoded: &ChunkRepresentation) -> Result<Cow<'_, Self>> {
        if decoded == &self.shard {
            Ok(Cow::Borrowed(self))
        } else {
            self.with_shard_representation(decoded.clone())
                .map(Cow::Owned)
        }
    }

    /// The representation of a whole shard (the outer chunk).
    pub fn shard_representation(&self) -> &ChunkRepresentation {
        &self.shard
    }

    /// The shape of the inner chunks (`chunk_shape`).
    pub fn inner_chunk_shape(&self) -> &[u64] {
        &self.chunk_shape
    }

    /// The number of inner chunks along each dimension of a shard.
    pub fn chunks_per_shard(&self) -> &[u64] {
        &self.chunks_per_shard
    }

    /// The number of inner chunks in a shard.
    pub fn num_inner_chunks(&self) -> usize {
        self.num_chunks
    }

    /// Where the index sits.
    pub fn index_location(&self) -> IndexLocation {
        self.location
    }

    /// The inner codec chain (for inner chunks of [`inner_chunk_shape`](Self::inner_chunk_shape)).
    pub fn inner_chain(&self) -> &CodecChain {
        &self.inner
    }

    /// The index codec chain.
    pub fn index_chain(&self) -> &CodecChain {
        &self.index_chain
    }

    /// The size in bytes of the encoded index (`16 * n + 4` with the default index codecs).
    pub fn index_size(&self) -> u64 {
        self.index_size
    }

    /// Where the index lies in a shard of `shard_size` bytes.
    fn index_range(&self, shard_size: u64) -> Range<u64> {
        match self.location {
            IndexLocation::Start => 0..self.index_size,
            IndexLocation::End => shard_size - self.index_size..shard_size,
        }
    }

    // ----- the index -----------------------------------------------------------------------

    /// Decode an encoded index (exactly [`index_size`](Self::index_size) bytes) without
    /// checking its entries against a shard (see [`ShardIndex::validate`]).
    ///
    /// # Errors
    /// [`Error::IndexDecode`] naming `shard` if the index codecs fail (a checksum mismatch, a
    /// wrong size).
    pub fn decode_index(&self, encoded: Bytes, shard: Option<&StoreKey>) -> Result<ShardIndex> {
        let mut buf = vec![0u8; 16 * self.num_chunks];
        self.index_chain
            .decode_into(encoded, &mut buf)
            .map_err(|source| Error::IndexDecode {
                shard: ShardName::from(shard),
                source: Box::new(source),
            })?;
        let entries = buf
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0xff; 8])))
            .collect();
        ShardIndex::from_entries(&self.chunks_per_shard, entries)
    }

    /// Encode an index with the index codecs.
    ///
    /// # Errors
    /// If the index has another number of entries, or an index codec fails.
    pub fn encode_index(&self, index: &ShardIndex) -> Result<Bytes> {
        if index.chunks_per_shard() != self.chunks_per_shard.as_slice() {
            return Err(config_error(
                "index",
                format!(
                    "an index of {:?} inner chunks does not fit shards of {:?}",
                    index.chunks_per_shard(),
                    self.chunks_per_shard
                ),
            ));
        }
        Ok(self
            .index_chain
            .encode(ArrayBytes::fixed(index.to_ne_bytes()))?)
    }

    /// Read and fully validate the index of a whole shard held in memory.
    ///
    /// # Errors
    /// [`Error::ShardTooSmall`], [`Error::IndexDecode`], [`Error::EntryOutOfBounds`],
    /// [`Error::EntryOverlapsIndex`], each naming `key` when given.
    pub fn parse_shard(&self, shard: &Bytes, key: Option<&StoreKey>) -> Result<ShardIndex> {
        let size = shard.len() as u64;
        if size < self.index_size {
            return Err(Error::ShardTooSmall {
                shard: ShardName::from(key),
                size,
                index_size: self.index_size,
            });
        }
        let range = self.index_range(size);
        let index =
            self.decode_index(shard.slice(range.start as usize..range.end as usize), key)?;
        index.validate(key, Some(size), Some(range))?;
        Ok(index)
    }

    /// The encoded bytes of the inner chunk at `chunk` (indices in the inner chunk grid) of a
    /// shard held in memory, or `None` if it is empty. No copy: a slice of `shard`.
    ///
    /// # Errors
    /// As [`parse_shard`](Self::parse_shard); [`Error::InvalidRegion`] if `chunk` lies outside
    /// the shard.
    pub fn inner_chunk_bytes(&self, shard: &Bytes, chunk: &[u64]) -> Result<Option<Bytes>> {
        let index = self.parse_shard(shard, None)?;
        let linear = self.linear(chunk)?;
        Ok(index
            .chunk_range(linear)
            .map(|r| shard.slice(r.start as usize..r.end as usize)))
    }

    pub(crate) fn linear(&self, chunk: &[u64]) -> Result<usize> {
        crate::index::linear_index(&self.chunks_per_shard, chunk).ok_or_else(|| {
            Error::InvalidRegion {
                region: format!("{chunk:?}"),
                shard_shape: self.shard.shape().to_vec(),
                reason: format!(
                    "not an inner chunk of a shard of {:?} inner chunks",
                    self.chunks_per_shard
                ),
            }
        })
    }

    // ----- encoding ------------------------------------------------------------------------

    /// Encode a whole shard: inner chunks in parallel, all-fill inner chunks omitted and
    /// marked empty. `None` when every inner chunk is all fill: store nothing (erase the
    /// shard if it exists).
    ///
    /// # Errors
    /// A codec error if `array` does not match the shard representation;
    /// [`Error::InnerChunk`] if an inner chunk fails to encode.
    pub fn encode_shard(&self, array: ArrayBytes) -> Result<Option<Bytes>> {
        array.validate(&self.shard)?;
        let elem = self.shard.element_size();
        let shard_shape = self.shard.shape();
        let encode_one = |linear: usize| -> Result<Option<Bytes>> {
            let indices = chunk_indices(&self.chunks_per_shard, linear);
            let start: Vec<u64> = indices
                .iter()
                .zip(&self.chunk_shape)
                .map(|(i, c)| i * c)
                .collect();
            let chunk = nd::extract(&array, shard_shape, &start, &self.chunk_shape, elem);
            self.encode_inner(chunk, &indices)
        };
        self.encode_each(encode_one)
    }

    /// Encode a whole shard of a fixed-size data type whose elements lie in `src`, a C-order
    /// array of `src_shape`, from `origin` on: each inner chunk is cut straight out of `src`
    /// (in parallel), without first copying the shard into a buffer of its own. What
    /// [`encode_shard`](Self::encode_shard) returns for the same elements.
    ///
    /// # Errors
    /// [`Error::DataMismatch`] for a variable-length data type, a `src` of the wrong size, or
    /// a shard that does not fit in `src_shape` at `origin`; as `encode_shard` otherwise.
    pub fn encode_shard_from(
        &self,
        src: &[u8],
        src_shape: &[u64],
        origin: &[u64],
    ) -> Result<Option<Bytes>> {
        let chunks = self.encode_chunks_from(src, src_shape, origin)?;
        self.assemble_parts(&chunks.parts)
    }

    /// The first half of [`encode_shard_from`](Self::encode_shard_from): encode the inner
    /// chunks (in parallel) without assembling the shard. [`assemble`](Self::assemble) then
    /// makes the shard's bytes. A writer that encodes several shards uses the split to start
    /// encoding the next shard while this one is assembled and stored.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use zarr_codecs::{ArrayBytes, BytesCodec, ChunkRepresentation, Codec};
    /// # use zarr_core::{DataType, FillValue};
    /// # use zarr_sharding::{EncodedChunks, IndexLocation, ShardingCodec};
    /// // A 4 x 4 shard of uint8 in four inner chunks of 2 x 2.
    /// let shard = ChunkRepresentation::try_new(vec![4, 4], DataType::UInt8, FillValue::new([0]))?;
    /// let codec = ShardingCodec::try_new(
    ///     shard,
    ///     vec![2, 2],
    ///     vec![Codec::ArrayToBytes(Arc::new(BytesCodec::little()))],
    ///     ShardingCodec::default_index_codecs(),
    ///     IndexLocation::End,
    /// )?;
    /// let values: Vec<u8> = (1..=16).collect();
    /// let chunks = codec.encode_chunks_from(&values, &[4, 4], &[0, 0])?;
    /// assert_eq!(chunks.len(), 4);
    /// assert_eq!(chunks.encoded_len(), 16);
    /// let shard = codec.assemble(chunks)?.expect("not all fill");
    /// assert_eq!(Some(shard.clone()), codec.encode_shard(ArrayBytes::fixed(values.clone()))?);
    ///
    /// // The same inner chunks encoded as two jobs of two, then joined in order.
    /// let parts = [0..2, 2..4]
    ///     .into_iter()
    ///     .map(|chunks| codec.encode_chunk_range_from(&values, &[4, 4], &[0, 0], chunks))
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// assert_eq!(codec.assemble(EncodedChunks::concat(parts))?, Some(shard));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`encode_shard_from`](Self::encode_shard_from).
    pub fn encode_chunks_from(
        &self,
        src: &[u8],
        src_shape: &[u64],
        origin: &[u64],
    ) -> Result<EncodedChunks> {
        let encode_one = self.chunk_encoder_from(src, src_shape, origin)?;
        self.encode_parts(encode_one)
            .map(|parts| EncodedChunks { parts })
    }

    /// Encode the inner chunks at C-order positions `chunks` of the shard that
    /// [`encode_chunks_from`](Self::encode_chunks_from) would encode, one after another on
    /// the calling thread: for a caller that schedules a shard's inner chunks itself, in jobs
    /// of [`inner_chunks_per_job`](Self::inner_chunks_per_job). [`EncodedChunks::concat`]
    /// joins the parts, in order, for [`assemble`](Self::assemble).
    ///
    /// # Errors
    /// As [`encode_chunks_from`](Self::encode_chunks_from); [`Error::DataMismatch`] if
    /// `chunks` is not a range of the shard's inner chunks.
    pub fn encode_chunk_range_from(
        &self,
        src: &[u8],
        src_shape: &[u64],
        origin: &[u64],
        chunks: std::ops::Range<usize>,
    ) -> Result<EncodedChunks> {
        if chunks.start > chunks.end || chunks.end > self.num_chunks {
            return Err(Error::DataMismatch {
                region: format!("inner chunks {chunks:?}"),
                reason: format!("the shard has {} inner chunks", self.num_chunks),
            });
        }
        let encode_one = self.chunk_encoder_from(src, src_shape, origin)?;
        chunks
            .map(encode_one)
            .collect::<Result<_>>()
            .map(|parts| EncodedChunks { parts })
    }

    /// Checks `src` for a shard at `origin` and returns the encoder of one inner chunk of it
    /// (by C-order position).
    fn chunk_encoder_from<'a>(
        &'a self,
        src: &'a [u8],
        src_shape: &'a [u64],
        origin: &'a [u64],
    ) -> Result<impl Fn(usize) -> Result<Option<Bytes>> + Sync + Send + 'a> {
        let shard_shape = self.shard.shape();
        let mismatch = |reason: String| Error::DataMismatch {
            region: format!("{origin:?} + {shard_shape:?} in {src_shape:?}"),
            reason,
        };
        let Some(elem) = self.shard.element_size() else {
            return Err(mismatch(
                "a variable-length data type has no fixed layout".into(),
            ));
        };
        let fits = src_shape.len() == shard_shape.len()
            && origin.len() == shard_shape.len()
            && origin
                .iter()
                .zip(shard_shape)
                .zip(src_shape)
                .all(|((o, s), n)| o.checked_add(*s).is_some_and(|end| end <= *n));
        if !fits {
            return Err(mismatch("the shard does not lie inside the source".into()));
        }
        let expected = src_shape
            .iter()
            .try_fold(elem as u64, |n, &d| n.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok());
        if expected != Some(src.len()) {
            return Err(mismatch(format!(
                "{} bytes given for a source of {expected:?}",
                src.len()
            )));
        }
        let zeros = vec![0u64; shard_shape.len()];
        let chunk_bytes = self
            .chunk_shape
            .iter()
            .map(|&c| c as usize)
            .product::<usize>()
            * elem;
        Ok(move |linear: usize| -> Result<Option<Bytes>> {
            let indices = chunk_indices(&self.chunks_per_shard, linear);
            let start: Vec<u64> = indices
                .iter()
                .zip(&self.chunk_shape)
                .zip(origin)
                .map(|((i, c), o)| o + i * c)
                .collect();
            let mut chunk = zarr_codecs::zeroed_bytes(chunk_bytes)?;
            nd::copy_block(
                src,
                src_shape,
                &start,
                &mut chunk,
                &self.chunk_shape,
                &zeros,
                &self.chunk_shape,
                elem,
            );
            self.encode_inner(ArrayBytes::fixed(chunk), &indices)
        })
    }

    /// Assemble a shard from its encoded inner chunks (see
    /// [`encode_chunks_from`](Self::encode_chunks_from)): the chunks' bytes and the encoded
    /// index. `None` when every inner chunk is all fill (store nothing).
    ///
    /// # Errors
    /// [`Error::DataMismatch`] if `chunks` does not hold one entry per inner chunk of this
    /// codec's shards; an index codec error.
    pub fn assemble(&self, chunks: EncodedChunks) -> Result<Option<Bytes>> {
        if chunks.parts.len() != self.num_chunks {
            return Err(Error::DataMismatch {
                region: format!("{:?}", self.shard.shape()),
                reason: format!(
                    "{} encoded inner chunks given for a shard of {} inner chunks",
                    chunks.parts.len(),
                    self.num_chunks
                ),
            });
        }
        self.assemble_parts(&chunks.parts)
    }

    /// Encode every inner chunk with `encode_one(linear)` (in parallel when there are
    /// several) and assemble the shard.
    fn encode_each(
        &self,
        encode_one: impl Fn(usize) -> Result<Option<Bytes>> + Sync + Send,
    ) -> Result<Option<Bytes>> {
        let parts = self.encode_parts(encode_one)?;
        self.assemble_parts(&parts)
    }

    /// Encode every inner chunk with `encode_one(linear)`, in parallel when there are several.
    fn encode_parts(
        &self,
        encode_one: impl Fn(usize) -> Result<Option<Bytes>> + Sync + Send,
    ) -> Result<Vec<Option<Bytes>>> {
        if self.num_chunks == 1 {
            Ok(vec![encode_one(0)?])
        } else {
            (0..self.num_chunks)
                .into_par_iter()
                .with_max_len(self.inner_chunks_per_job())
                .map(encode_one)
                .collect()
        }
    }

    /// How many inner chunks one parallel job encodes when this codec encodes a shard: one
    /// for inner chunks of 64 KiB or more, more for smaller ones. Without a bound, rayon
    /// leaves long runs of inner chunks unsplit, and the last run of a shard then keeps one
    /// thread busy while the others have nothing left of that shard.
    pub fn inner_chunks_per_job(&self) -> usize {
        let elements = self.chunk_shape.iter().product::<u64>();
        let bytes = elements.saturating_mul(self.shard.element_size().unwrap_or(8) as u64);
        usize::try_from((64 << 10) / bytes.max(1))
            .unwrap_or(usize::MAX)
            .max(1)
    }

    /// The representation of one inner chunk: its shape, the data type and the fill value.
    pub fn inner_chunk_representation(&self) -> &ChunkRepresentation {
        self.inner.decoded_representation()
    }

    /// Encode one inner chunk, the inner chunk at `chunk` (indices in the inner chunk grid),
    /// with the inner codecs: `None` if it holds only the fill value (it is then marked
    /// empty, see [`EncodedChunks::from_parts`]). For a writer that gathers a shard's inner
    /// chunks itself, a few at a time.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_codecs::{ArrayBytes, BytesCodec, ChunkRepresentation, Codec};
    /// use zarr_core::{DataType, FillValue};
    /// use zarr_sharding::{EncodedChunks, IndexLocation, ShardingCodec};
    ///
    /// let shard = ChunkRepresentation::try_new(vec![4], DataType::UInt8, FillValue::new([0]))?;
    /// let codec = ShardingCodec::try_new(
    ///     shard,
    ///     vec![2],
    ///     vec![Codec::ArrayToBytes(Arc::new(BytesCodec::little()))],
    ///     ShardingCodec::default_index_codecs(),
    ///     IndexLocation::End,
    /// )?;
    /// let first = codec.encode_inner_chunk(ArrayBytes::fixed(vec![1u8, 2]), &[0])?;
    /// let second = codec.encode_inner_chunk(ArrayBytes::fixed(vec![0u8, 0]), &[1])?;
    /// assert_eq!(second, None); // all fill: stored as an empty entry
    /// let shard = codec.assemble(EncodedChunks::from_parts(vec![first.clone(), second]))?;
    /// let whole = codec.encode_shard(ArrayBytes::fixed(vec![1u8, 2, 0, 0]))?;
    /// assert_eq!(shard, whole);
    /// assert_eq!(codec.decode_inner_chunk(first.unwrap(), &[0])?, ArrayBytes::fixed(vec![1u8, 2]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if `chunk` is not an inner chunk of the shard;
    /// [`Error::InnerChunk`] if `values` does not match
    /// [`inner_chunk_representation`](Self::inner_chunk_representation) or an inner codec
    /// fails (an element a codec refuses is placed in the shard, see [`Error::Codec`]).
    pub fn encode_inner_chunk(&self, values: ArrayBytes, chunk: &[u64]) -> Result<Option<Bytes>> {
        self.linear(chunk)?;
        values
            .validate(self.inner.decoded_representation())
            .map_err(|source| self.inner_error(ShardName(None), chunk, source))?;
        self.encode_inner(values, chunk)
    }

    /// Decode one inner chunk's encoded bytes (as [`encode_inner_chunk`] made them, or as
    /// [`inner_chunk_bytes`](Self::inner_chunk_bytes) returns them), the inner chunk at
    /// `chunk` of the shard `shard` (named in errors when given).
    ///
    /// [`encode_inner_chunk`]: Self::encode_inner_chunk
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if `chunk` is not an inner chunk of the shard;
    /// [`Error::InnerChunk`] naming the shard and the inner chunk if decoding fails.
    pub fn decode_inner_chunk(&self, encoded: Bytes, chunk: &[u64]) -> Result<ArrayBytes> {
        self.decode_inner_chunk_of(None, encoded, chunk)
    }

    /// [`decode_inner_chunk`](Self::decode_inner_chunk) of an inner chunk of the shard stored
    /// at `shard` (named in errors).
    ///
    /// # Errors
    /// As [`decode_inner_chunk`](Self::decode_inner_chunk).
    pub fn decode_inner_chunk_of(
        &self,
        shard: Option<&StoreKey>,
        encoded: Bytes,
        chunk: &[u64],
    ) -> Result<ArrayBytes> {
        self.linear(chunk)?;
        self.inner
            .decode(encoded)
            .map_err(|source| self.inner_error(ShardName::from(shard), chunk, source))
    }

    /// Encode one inner chunk, or `None` if it holds only the fill value.
    fn encode_inner(&self, chunk: ArrayBytes, indices: &[u64]) -> Result<Option<Bytes>> {
        if chunk.is_fill(self.inner.decoded_representation()) {
            return Ok(None);
        }
        self.inner
            .encode(chunk)
            .map(Some)
            .map_err(|source| self.inner_error(ShardName(None), indices, source))
    }

    /// An inner chunk's codec error. An invalid element is moved to its position in the
    /// shard (C order), so that the chain above and the array name it by its indices; any
    /// other error is [`Error::InnerChunk`], naming the shard and the inner chunk.
    fn inner_error(&self, shard: ShardName, chunk: &[u64], source: zarr_codecs::Error) -> Error {
        if let zarr_codecs::Error::InvalidElement {
            codec,
            index,
            data_type,
            reason,
        } = &source
            && let Some(position) = self.position_in_shard(chunk, *index)
        {
            return Error::Codec(zarr_codecs::Error::InvalidElement {
                codec: codec.clone(),
                index: position,
                data_type: data_type.clone(),
                reason: reason.clone(),
            });
        }
        Error::InnerChunk {
            shard,
            chunk: chunk.to_vec(),
            source: Box::new(source),
        }
    }

    /// The C-order position in the shard of element `index` (C order) of inner chunk
    /// `chunk`, or `None` if it lies outside.
    fn position_in_shard(&self, chunk: &[u64], index: u64) -> Option<u64> {
        if chunk.len() != self.chunk_shape.len() {
            return None;
        }
        let within = zarr_core::unravel_index(index, &self.chunk_shape)?;
        let at = chunk
            .iter()
            .zip(&self.chunk_shape)
            .zip(&within)
            .map(|((&c, &n), &w)| c.checked_mul(n)?.checked_add(w))
            .collect::<Option<Vec<u64>>>()?;
        zarr_core::ravel_index(&at, self.shard.shape())
    }

    /// Lay out encoded inner chunks (C order, `None` = empty) and the index; `None` if all are
    /// empty.
    fn assemble_parts(&self, parts: &[Option<Bytes>]) -> Result<Option<Bytes>> {
        assemble_shard(
            parts,
            &self.chunks_per_shard,
            self.location,
            self.index_size,
            |index| self.encode_index(index),
        )
    }

    /// An encoded shard whose inner chunks are all empty (only the index): what the
    /// [`ArrayToBytesCodec::encode`] of an all-fill shard returns, since it must return bytes.
    ///
    /// # Errors
    /// If an index codec fails.
    pub fn empty_shard(&self) -> Result<Bytes> {
        self.encode_index(&ShardIndex::new_empty(&self.chunks_per_shard)?)
    }

    // ----- decoding ------------------------------------------------------------------------

    /// Decode a whole shard held in memory. Missing inner chunks read as the fill value.
    ///
    /// # Errors
    /// Index errors (see [`parse_shard`](Self::parse_shard)); [`Error::InnerChunk`] if an
    /// inner chunk fails to decode.
    pub fn decode_shard(&self, shard: Bytes) -> Result<ArrayBytes> {
        self.decode_shard_region(shard, &Region::full(self.shard.shape()))
    }

    /// Decode `region` (shard coordinates) of a shard held in memory, decoding only the inner
    /// chunks it touches.
    ///
    /// # Errors
    /// As [`decode_shard`](Self::decode_shard); [`Error::InvalidRegion`] if the region does
    /// not lie in the shard.
    pub fn decode_shard_region(&self, shard: Bytes, region: &Region) -> Result<ArrayBytes> {
        self.check_region(region)?;
        let index = self.parse_shard(&shard, None)?;
        let chunk = |linear: usize| {
            Ok(index
                .chunk_range(linear)
                .map(|r| shard.slice(r.start as usize..r.end as usize)))
        };
        self.decode_region_with(None, region, chunk)
    }

    /// Decode `region` of a shard held in memory straight into `view` (of the region's
    /// shape), inner chunks in parallel.
    ///
    /// # Errors
    /// As [`decode_shard_region`](Self::decode_shard_region).
    pub fn decode_shard_into_view(
        &self,
        shard: Bytes,
        region: &Region,
        view: &mut ArrayViewMut<'_>,
    ) -> Result<()> {
        self.check_region(region)?;
        let index = self.parse_shard(&shard, None)?;
        let chunk = |linear: usize| {
            Ok(index
                .chunk_range(linear)
                .map(|r| shard.slice(r.start as usize..r.end as usize)))
        };
        self.decode_into_view_with(None, region, view, chunk)
    }

    pub(crate) fn check_region(&self, region: &Region) -> Result<()> {
        region
            .check_within(self.shard.shape())
            .map_err(|e| Error::InvalidRegion {
                region: region.to_string(),
                shard_shape: self.shard.shape().to_vec(),
                reason: e.to_string(),
            })
    }

    /// The inner chunks `region` touches, in C order (ascending `linear`).
    pub(crate) fn touched(&self, region: &Region) -> Vec<Touch> {
        let rank = self.chunk_shape.len();
        if region.is_empty() {
            return Vec::new();
        }
        let ranges = region.ranges();
        let lo: Vec<u64> = (0..rank)
            .map(|d| ranges[d].start / self.chunk_shape[d])
            .collect();
        let hi: Vec<u64> = (0..rank)
            .map(|d| ranges[d].end.div_ceil(self.chunk_shape[d]))
            .collect();
        let mut out = Vec::new();
        let mut idx = lo.clone();
        loop {
            let mut chunk_ranges = Vec::with_capacity(rank);
            let mut out_start = Vec::with_capacity(rank);
            let mut whole = true;
            for d in 0..rank {
                let origin = idx[d] * self.chunk_shape[d];
                let start = ranges[d].start.max(origin);
                let end = ranges[d].end.min(origin + self.chunk_shape[d]);
                whole &= start == origin && end == origin + self.chunk_shape[d];
                chunk_ranges.push(start - origin..end - origin);
                out_start.push(start - ranges[d].start);
            }
            let linear =
                crate::index::linear_index(&self.chunks_per_shard, &idx).unwrap_or(usize::MAX);
            out.push(Touch {
                linear,
                indices: idx.clone(),
                chunk_region: Region::try_new(chunk_ranges)
                    .unwrap_or_else(|_| Region::full(&self.chunk_shape)),
                out_start,
                whole,
            });
            // Next index in C order.
            let mut d = rank;
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < hi[d] {
                    break;
                }
                idx[d] = lo[d];
            }
        }
    }

    /// Decode the inner chunks `region` touches into `view`, in parallel; `chunk(linear)`
    /// gives an inner chunk's encoded bytes (`None`: empty).
    pub(crate) fn decode_into_view_with(
        &self,
        key: Option<&StoreKey>,
        region: &Region,
        view: &mut ArrayViewMut<'_>,
        chunk: impl Fn(usize) -> Result<Option<Bytes>> + Sync,
    ) -> Result<()> {
        if view.shape() != region.shape() {
            return Err(Error::InvalidRegion {
                region: region.to_string(),
                shard_shape: self.shard.shape().to_vec(),
                reason: format!("the output view has shape {:?}", view.shape()),
            });
        }
        let touched = self.touched(region);
        let mut jobs = Vec::with_capacity(touched.len());
        for t in touched {
            let out = Region::try_new(
                t.out_start
                    .iter()
                    .zip(t.chunk_region.ranges())
                    .map(|(&s, r)| s..s + (r.end - r.start))
                    .collect(),
            )?;
            // SAFETY: inner chunks are disjoint, so the parts of the region they cover are
            // disjoint; `view` itself is not written while the subviews live.
            let sub = unsafe { view.subview(out)? };
            jobs.push((t, sub));
        }
        let fill = self.shard.fill_value().as_bytes();
        let run = |(t, mut sub): (Touch, ArrayViewMut<'_>)| -> Result<()> {
            let wrap = |source| self.inner_error(ShardName::from(key), &t.indices, source);
            match chunk(t.linear)? {
                None => sub.fill(fill).map_err(wrap),
                Some(bytes) => self
                    .inner
                    .decode_into_view(bytes, &t.chunk_region, &mut sub)
                    .map_err(wrap),
            }
        };
        if jobs.len() <= 1 {
            jobs.into_iter().try_for_each(run)
        } else {
            jobs.into_par_iter().try_for_each(run)
        }
    }

    /// Decode `region` into new array bytes (fixed or variable-length).
    pub(crate) fn decode_region_with(
        &self,
        key: Option<&StoreKey>,
        region: &Region,
        chunk: impl Fn(usize) -> Result<Option<Bytes>> + Sync,
    ) -> Result<ArrayBytes> {
        let shape = region.shape();
        if let Some(elem) = self.shard.element_size() {
            let n = self.shard.with_shape(shape.clone())?.fixed_size_usize()?;
            let mut out = zarr_codecs::zeroed_bytes(n)?;
            let mut view = ArrayViewMut::new(&mut out, &shape, elem)?;
            self.decode_into_view_with(key, region, &mut view, chunk)?;
            return Ok(ArrayBytes::fixed(out));
        }
        // Variable-length elements: decode the touched inner chunks in parallel, then gather.
        let touched = self.touched(region);
        let decoded: Vec<Option<VlenBytes>> = touched
            .par_iter()
            .map(|t| -> Result<Option<VlenBytes>> {
                let Some(bytes) = chunk(t.linear)? else {
                    return Ok(None);
                };
                let wrap = |source| self.inner_error(ShardName::from(key), &t.indices, source);
                match self.inner.decode(bytes).map_err(wrap)? {
                    ArrayBytes::Variable(v) => Ok(Some(v)),
                    ArrayBytes::Fixed(_) => Err(wrap(zarr_codecs::Error::UnexpectedArray {
                        codec: NAME.into(),
                        expected: "variable-length elements".into(),
                        found: "fixed-size elements".into(),
                    })),
                }
            })
            .collect::<Result<_>>()?;
        let n = self.shard.with_shape(shape.clone())?.num_elements_usize()?;
        let fill = self.shard.fill_value().as_bytes();
        let mut slots: Vec<&[u8]> = vec![fill; n];
        for (t, v) in touched.iter().zip(&decoded) {
            let Some(v) = v else { continue };
            let extent = t.chunk_region.shape();
            nd::for_each_run(
                &self.chunk_shape,
                &t.chunk_region.starts(),
                &shape,
                &t.out_start,
                &extent,
                1,
                |s, d, len| {
                    for k in 0..len {
                        slots[d + k] = v.get(s + k).unwrap_or_default();
                    }
                },
            );
        }
        Ok(ArrayBytes::Variable(VlenBytes::from_elements(slots)))
    }

    // ----- partial writes ------------------------------------------------------------------

    /// Write `data` (the elements of `region`, C order) into a shard: `existing` is the stored
    /// shard (`None` if there is none). Only the inner chunks the region touches are decoded
    /// and re-encoded (in parallel); the others keep their encoded bytes. `None` when every
    /// inner chunk ends up empty: store nothing (erase the shard).
    ///
    /// A region covering the whole shard never looks at `existing`: pass `None` and skip the
    /// read.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`], [`Error::DataMismatch`] for a region or data that do not fit;
    /// index and inner chunk errors from the existing shard.
    pub fn merge_region(
        &self,
        existing: Option<Bytes>,
        region: &Region,
        data: &ArrayBytes,
    ) -> Result<Option<Bytes>> {
        self.check_region(region)?;
        let region_shape = region.shape();
        let region_repr = self.shard.with_shape(region_shape.clone())?;
        data.validate(&region_repr)
            .map_err(|e| Error::DataMismatch {
                region: region.to_string(),
                reason: e.to_string(),
            })?;
        if region_shape == self.shard.shape() {
            return self.encode_shard(data.clone());
        }
        let old = match &existing {
            Some(bytes) => Some((self.parse_shard(bytes, None)?, bytes)),
            None => None,
        };
        let old_chunk = |linear: usize| -> Option<Bytes> {
            let (index, bytes) = old.as_ref()?;
            let r = index.chunk_range(linear)?;
            Some(bytes.slice(r.start as usize..r.end as usize))
        };
        let touched = self.touched(region);
        let elem = self.shard.element_size();
        let inner_repr = self.inner.decoded_representation();
        let part = |linear: usize| -> Result<Option<Bytes>> {
            let Ok(pos) = touched.binary_search_by_key(&linear, |t| t.linear) else {
                return Ok(old_chunk(linear));
            };
            let t = &touched[pos];
            let extent = t.chunk_region.shape();
            let new = if t.whole {
                nd::extract(data, &region_shape, &t.out_start, &extent, elem)
            } else {
                let base = match old_chunk(linear) {
                    Some(bytes) => self
                        .inner
                        .decode(bytes)
                        .map_err(|source| self.inner_error(ShardName(None), &t.indices, source))?,
                    None => ArrayBytes::fill(inner_repr)?,
                };
                nd::patch(
                    base,
                    &self.chunk_shape,
                    &t.chunk_region.starts(),
                    data,
                    &region_shape,
                    &t.out_start,
                    &extent,
                    elem,
                )
            };
            self.encode_inner(new, &t.indices)
        };
        let parts = self.encode_parts(part)?;
        self.assemble_parts(&parts)
    }

    /// Keep the elements of `keep` (a region of the shard) in the stored shard `existing` and
    /// reset every other element to the fill value, as shrinking an array does to a shard that
    /// straddles its new edge. Inner chunks wholly outside `keep` are dropped, those wholly
    /// inside keep their encoded bytes, and only those `keep` cuts through are decoded and
    /// re-encoded (in parallel). `None` when every inner chunk ends up empty.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] for a region outside the shard; index and inner chunk errors
    /// from `existing`.
    pub fn retain_region(&self, existing: &Bytes, keep: &Region) -> Result<Option<Bytes>> {
        self.check_region(keep)?;
        let index = self.parse_shard(existing, None)?;
        let touched = self.touched(keep);
        let elem = self.shard.element_size();
        let inner_repr = self.inner.decoded_representation();
        let part = |linear: usize| -> Result<Option<Bytes>> {
            let Ok(pos) = touched.binary_search_by_key(&linear, |t| t.linear) else {
                return Ok(None);
            };
            let Some(range) = index.chunk_range(linear) else {
                return Ok(None);
            };
            let bytes = existing.slice(range.start as usize..range.end as usize);
            let t = &touched[pos];
            if t.whole {
                return Ok(Some(bytes));
            }
            let old = self
                .inner
                .decode(bytes)
                .map_err(|source| self.inner_error(ShardName(None), &t.indices, source))?;
            let starts = t.chunk_region.starts();
            let kept = nd::patch(
                ArrayBytes::fill(inner_repr)?,
                &self.chunk_shape,
                &starts,
                &old,
                &self.chunk_shape,
                &starts,
                &t.chunk_region.shape(),
                elem,
            );
            self.encode_inner(kept, &t.indices)
        };
        let parts = self.encode_parts(part)?;
        self.assemble_parts(&parts)
    }

    /// The codec's metadata.
    pub fn metadata(&self) -> ExtensionObject {
        let mut config = serde_json::Map::new();
        config.insert("chunk_shape".into(), Value::from(self.chunk_shape.clone()));
        config.insert("codecs".into(), self.inner.to_json());
        config.insert("index_codecs".into(), self.index_chain.to_json());
        config.insert("index_location".into(), Value::from(self.location.as_str()));
        ExtensionObject::with_configuration(NAME, config)
    }
}

/// Lay out encoded chunks (C order, `None` = empty) back to back with an index encoded by
/// `encode_index` (which must produce `index_size` bytes); `None` if every chunk is empty.
pub(crate) fn assemble_shard(
    parts: &[Option<Bytes>],
    chunks_per_shard: &[u64],
    location: IndexLocation,
    index_size: u64,
    encode_index: impl FnOnce(&ShardIndex) -> Result<Bytes>,
) -> Result<Option<Bytes>> {
    if parts.iter().all(Option::is_none) {
        return Ok(None);
    }
    let mut index = ShardIndex::new_empty(chunks_per_shard)?;
    let mut offset = match location {
        IndexLocation::Start => index_size,
        IndexLocation::End => 0,
    };
    for (i, part) in parts.iter().enumerate() {
        if let Some(bytes) = part {
            let end = offset + bytes.len() as u64;
            index.set(i, Some(offset..end));
            offset = end;
        }
    }
    let encoded_index = encode_index(&index)?;
    if encoded_index.len() as u64 != index_size {
        return Err(zarr_codecs::Error::DecodedSizeMismatch {
            codec: NAME.into(),
            expected: format!("{index_size} index bytes"),
            found: encoded_index.len() as u64,
        }
        .into());
    }
    let total = usize::try_from(
        offset
            + if location == IndexLocation::End {
                index_size
            } else {
                0
            },
    )
    .map_err(|_| config_error("chunk_shape", "the shard does not fit in memory"))?;
    let mut out = Vec::with_capacity(total);
    if location == IndexLocation::Start {
        out.extend_from_slice(&encoded_index);
    }
    for bytes in parts.iter().flatten() {
        out.extend_from_slice(bytes);
    }
    if location == IndexLocation::End {
        out.extend_from_slice(&encoded_index);
    }
    Ok(Some(Bytes::from(out)))
}

impl ArrayToBytesCodec for ShardingCodec {
    fn to_metadata(&self) -> ExtensionObject {
        self.metadata()
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> zarr_codecs::Result<Option<u64>> {
        self.for_repr(decoded)?;
        // Empty inner chunks take no space and compressed ones vary: never fixed.
        Ok(None)
    }

    fn encode(
        &self,
        array: ArrayBytes,
        decoded: &ChunkRepresentation,
    ) -> zarr_codecs::Result<Bytes> {
        let codec = self.for_repr(decoded)?;
        match codec.encode_shard(array)? {
            Some(bytes) => Ok(bytes),
            None => Ok(codec.empty_shard()?),
        }
    }

    fn decode(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
    ) -> zarr_codecs::Result<ArrayBytes> {
        Ok(self.for_repr(decoded)?.decode_shard(bytes)?)
    }

    fn decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> zarr_codecs::Result<()> {
        let codec = self.for_repr(decoded)?;
        let elem = element_size_for_view(decoded)?;
        let mut view = ArrayViewMut::new(out, decoded.shape(), elem)?;
        Ok(codec.decode_shard_into_view(bytes, &Region::full(decoded.shape()), &mut view)?)
    }

    fn can_partially_decode(&self) -> bool {
        true
    }

    fn partial_decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        region: &Region,
        out: &mut [u8],
    ) -> zarr_codecs::Result<()> {
        let codec = self.for_repr(decoded)?;
        let elem = element_size_for_view(decoded)?;
        let mut view = ArrayViewMut::new(out, &region.shape(), elem)?;
        Ok(codec.decode_shard_into_view(bytes, region, &mut view)?)
    }
}

fn element_size_for_view(decoded: &ChunkRepresentation) -> zarr_codecs::Result<usize> {
    decoded
        .element_size()
        .ok_or_else(|| zarr_codecs::Error::Unsupported {
            codec: NAME.into(),
            operation: "decoding variable-length data into a buffer (use `decode`)".into(),
        })
}

/// Inner chunks per shard along each dimension, checking that `chunk_shape` divides `shard`.
pub(crate) fn chunks_per_shard(shard: &[u64], chunk_shape: &[u64]) -> Result<Vec<u64>> {
    let mismatch = |dimension| Error::ChunkShapeMismatch {
        chunk_shape: chunk_shape.to_vec(),
        shard_shape: shard.to_vec(),
        dimension,
    };
    if shard.len() != chunk_shape.len() {
        return Err(Error::InvalidConfiguration {
            field: "configuration.chunk_shape".into(),
            reason: format!(
                "inner chunk shape {chunk_shape:?} has {} dimensions, the shard shape \
                 {shard:?} {}",
                chunk_shape.len(),
                shard.len()
            ),
        });
    }
    shard
        .iter()
        .zip(chunk_shape)
        .enumerate()
        .map(|(d, (&s, &c))| {
            if c == 0 || s % c != 0 {
                Err(mismatch(d))
            } else {
                Ok(s / c)
            }
        })
        .collect()
}

/// The representation of an index: `u64` of shape `chunks_per_shard + [2]`.
fn index_representation(chunks_per_shard: &[u64]) -> Result<ChunkRepresentation> {
    let mut shape = chunks_per_shard.to_vec();
    shape.push(2);
    Ok(ChunkRepresentation::try_new(
        shape,
        DataType::UInt64,
        FillValue::new(u64::MAX.to_ne_bytes()),
    )?)
}

fn config_error(field: &str, reason: impl Into<String>) -> Error {
    Error::InvalidConfiguration {
        field: format!("configuration.{field}"),
        reason: reason.into(),
    }
}

fn extension_list(value: &Value, field: &str) -> Result<Vec<ExtensionObject>> {
    let Value::Array(items) = value else {
        return Err(config_error(
            field,
            format!("expected an array, found {value}"),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            ExtensionObject::from_json(v, &format!("configuration.{field}[{i}]"))
                .map_err(Error::from)
        })
        .collect()
}
