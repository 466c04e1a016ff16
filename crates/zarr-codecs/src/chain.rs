//! The codec chain: an array's `codecs`, validated and ready to encode and decode chunks.

use std::sync::Arc;

use bytes::Bytes;
use zarr_core::{ArrayMetadata, ExtensionObject, Region};

use crate::array_bytes::ArrayBytes;
use crate::codec::{ArrayToArrayCodec, ArrayToBytesCodec, BytesToBytesCodec, Codec, ExpectedSize};
use crate::error::{Error, Result};
use crate::registry::CodecRegistry;
use crate::representation::ChunkRepresentation;
use crate::strided;
use crate::view::ArrayViewMut;

/// The default [`CodecChain::size_limit`]: 4 GiB.
pub const DEFAULT_SIZE_LIMIT: u64 = 1 << 32;

/// An array's codecs, checked against its chunk representation, ready to encode and decode
/// chunks.
///
/// Building a chain checks everything that can be checked before the first chunk is read:
/// the codecs are in order (array->array codecs, exactly one array->bytes codec, bytes->bytes
/// codecs), every codec is known (or marked `"must_understand": false`, in which case it is
/// skipped), every configuration is valid, and every codec can take the representation it
/// will be given (a transpose order of the chunk's rank, an `endian` for multi-byte types).
///
/// Decoding bounds every allocation by the size of the decoded chunk: for fixed-size data
/// types each bytes->bytes decoder is told the exact size it must produce. For
/// variable-length data, and after a codec whose output size is unknown, the bound is the
/// chain's [`size_limit`](Self::size_limit).
///
/// A chain is cheap to clone (the codecs are shared) and is `Send + Sync`: decode chunks on
/// as many threads as you like.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ChunkRepresentation, CodecChain, CodecRegistry};
/// use zarr_core::{ArrayMetadata, DataType, ExtensionObject, FillValue};
///
/// let metadata = ArrayMetadata::from_json(r#"{
///   "zarr_format": 3, "node_type": "array", "shape": [100, 100], "data_type": "int32",
///   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10, 20]}},
///   "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
///   "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
///              {"name": "bytes", "configuration": {"endian": "big"}},
///              {"name": "zstd", "configuration": {"level": 3}},
///              {"name": "crc32c"}]
/// }"#)?;
/// let registry = CodecRegistry::with_defaults();
/// let chain = CodecChain::from_array_metadata(&metadata, vec![10, 20], &registry)?;
///
/// let values: Vec<u8> = (0..200i32).flat_map(i32::to_ne_bytes).collect();
/// let encoded = chain.encode(ArrayBytes::fixed(values.clone()))?;
/// assert_eq!(chain.decode(encoded.clone())?, ArrayBytes::fixed(values.clone()));
///
/// // Or straight into a buffer of your own.
/// let mut out = vec![0u8; 800];
/// chain.decode_into(encoded, &mut out)?;
/// assert_eq!(out, values);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct CodecChain {
    /// The codecs in metadata order, for rebuilding with another shape or limit.
    codecs: Vec<Codec>,
    /// Each array->array codec with the representation it encodes.
    array_to_array: Vec<(Arc<dyn ArrayToArrayCodec>, ChunkRepresentation)>,
    array_to_bytes: Arc<dyn ArrayToBytesCodec>,
    /// The representation the array->bytes codec encodes.
    bytes_repr: ChunkRepresentation,
    /// Whether every array->array codec only relabels the chunk's shape
    /// ([`ArrayToArrayCodec::encoded_region`]; true without any), so that the array->bytes
    /// codec's input is the chunk's own bytes in the same order.
    relabel_only: bool,
    /// Each bytes->bytes codec with the size of its decoded output.
    bytes_to_bytes: Vec<(Arc<dyn BytesToBytesCodec>, ExpectedSize)>,
    /// The size of the chain's output.
    encoded_size: ExpectedSize,
    decoded: ChunkRepresentation,
    /// Ignorable codecs that were not understood, with their position in the metadata.
    skipped: Vec<(usize, ExtensionObject)>,
    size_limit: u64,
}

impl CodecChain {
    /// A chain from codecs built in code.
    ///
    /// # Errors
    /// [`Error::InvalidChain`] if the codecs are out of order or there is not exactly one
    /// array->bytes codec; [`Error::IncompatibleRepresentation`] if a codec cannot take its
    /// input.
    pub fn new(codecs: Vec<Codec>, decoded: ChunkRepresentation) -> Result<Self> {
        Self::build(codecs, decoded, Vec::new(), DEFAULT_SIZE_LIMIT)
    }

    /// A chain from an array's `codecs` metadata, building each codec with `registry`.
    ///
    /// `decoded` is the representation of a chunk: the chunk shape of the grid, the array's
    /// data type and fill value.
    ///
    /// # Errors
    /// [`Error::UnknownCodec`] for a codec that is not registered and not marked
    /// `"must_understand": false`; whatever a constructor returns
    /// ([`Error::InvalidConfiguration`], ...); and as [`CodecChain::new`].
    pub fn from_metadata(
        metadata: &[ExtensionObject],
        decoded: ChunkRepresentation,
        registry: &CodecRegistry,
    ) -> Result<Self> {
        let mut codecs = Vec::with_capacity(metadata.len());
        let mut skipped = Vec::new();
        // The representation the next codec sees; it stops changing at the array->bytes codec.
        // Codecs see a fixed-point type as the integers it is stored as.
        let mut current = decoded.stored();
        let mut seen_array_to_bytes = false;
        for (index, meta) in metadata.iter().enumerate() {
            let Some(codec) = registry.build(meta, &current)? else {
                if meta.must_understand {
                    return Err(Error::UnknownCodec {
                        name: meta.name.clone(),
                        index,
                    });
                }
                skipped.push((index, meta.clone()));
                continue;
            };
            match &codec {
                Codec::ArrayToArray(c) if !seen_array_to_bytes => {
                    current = c.encoded_representation(&current)?;
                }
                Codec::ArrayToBytes(_) => seen_array_to_bytes = true,
                _ => {}
            }
            codecs.push(codec);
        }
        Self::build(codecs, decoded, skipped, DEFAULT_SIZE_LIMIT)
    }

    /// A chain for chunks of `chunk_shape` of an array: its `codecs`, data type and fill
    /// value.
    ///
    /// # Errors
    /// As [`CodecChain::from_metadata`]; [`Error::InvalidRepresentation`] if the shape's size
    /// overflows.
    pub fn from_array_metadata(
        array: &ArrayMetadata,
        chunk_shape: Vec<u64>,
        registry: &CodecRegistry,
    ) -> Result<Self> {
        let decoded = ChunkRepresentation::try_new(
            chunk_shape,
            array.data_type.clone(),
            array.fill_value.clone(),
        )?;
        Self::from_metadata(&array.codecs, decoded, registry)
    }

    /// The same codecs for chunks of another shape (rectilinear grids have several), checked
    /// again against the new shape.
    ///
    /// # Errors
    /// As [`CodecChain::new`].
    pub fn with_chunk_shape(&self, shape: Vec<u64>) -> Result<Self> {
        let decoded = self.decoded.with_shape(shape)?;
        Self::build(
            self.codecs.clone(),
            decoded,
            self.skipped.clone(),
            self.size_limit,
        )
    }

    /// The same chain with another limit on the decoded size of variable-size data (see
    /// [`size_limit`](Self::size_limit)).
    #[must_use]
    pub fn with_size_limit(self, limit: u64) -> Self {
        let (codecs, decoded, skipped) = (
            self.codecs.clone(),
            self.decoded.clone(),
            self.skipped.clone(),
        );
        // Rebuilding with the same codecs and representation cannot fail.
        Self::build(codecs, decoded, skipped, limit).unwrap_or(self)
    }

    fn build(
        codecs: Vec<Codec>,
        decoded: ChunkRepresentation,
        skipped: Vec<(usize, ExtensionObject)>,
        size_limit: u64,
    ) -> Result<Self> {
        let mut array_to_array = Vec::new();
        let mut array_to_bytes: Option<(Arc<dyn ArrayToBytesCodec>, Option<u64>)> = None;
        let mut bytes_codecs = Vec::new();
        let mut repr = decoded.stored();
        let name = |c: &Codec| c.to_metadata().name;
        for codec in &codecs {
            match codec {
                Codec::ArrayToArray(c) => {
                    if let Some((a2b, _)) = &array_to_bytes {
                        return Err(Error::InvalidChain {
                            reason: format!(
                                "array->array codec `{}` comes after the array->bytes codec `{}`",
                                name(codec),
                                a2b.to_metadata().name
                            ),
                        });
                    }
                    let next = c.encoded_representation(&repr)?;
                    array_to_array.push((Arc::clone(c), repr));
                    repr = next;
                }
                Codec::ArrayToBytes(c) => {
                    if let Some((a2b, _)) = &array_to_bytes {
                        return Err(Error::InvalidChain {
                            reason: format!(
                                "two array->bytes codecs, `{}` and `{}` (exactly one is allowed)",
                                a2b.to_metadata().name,
                                name(codec)
                            ),
                        });
                    }
                    let size = c.encoded_size(&repr)?;
                    array_to_bytes = Some((Arc::clone(c), size));
                }
                Codec::BytesToBytes(c) => {
                    if array_to_bytes.is_none() {
                        return Err(Error::InvalidChain {
                            reason: format!(
                                "bytes->bytes codec `{}` comes before the array->bytes codec",
                                name(codec)
                            ),
                        });
                    }
                    bytes_codecs.push(Arc::clone(c));
                }
            }
        }
        let Some((array_to_bytes, size)) = array_to_bytes else {
            return Err(Error::InvalidChain {
                reason: "there is no array->bytes codec (such as `bytes`); exactly one is \
                         required"
                    .into(),
            });
        };
        let mut size = size.map_or(ExpectedSize::AtMost(size_limit), ExpectedSize::Exact);
        let mut bytes_to_bytes = Vec::with_capacity(bytes_codecs.len());
        for c in bytes_codecs {
            bytes_to_bytes.push((Arc::clone(&c), size));
            size = c
                .encoded_size(size)
                .unwrap_or(ExpectedSize::AtMost(size_limit));
        }
        let relabel_only = array_to_array
            .iter()
            .all(|(c, r)| c.encoded_region(&Region::full(r.shape()), r).is_some());
        Ok(Self {
            codecs,
            array_to_array,
            array_to_bytes,
            bytes_repr: repr,
            relabel_only,
            bytes_to_bytes,
            encoded_size: size,
            decoded,
            skipped,
            size_limit,
        })
    }

    /// The representation of a decoded chunk.
    pub fn decoded_representation(&self) -> &ChunkRepresentation {
        &self.decoded
    }

    /// The most bytes a decoder may produce where the size is not fixed by the data type
    /// (variable-length data, or after a codec whose output size is unknown). Default
    /// [`DEFAULT_SIZE_LIMIT`].
    pub fn size_limit(&self) -> u64 {
        self.size_limit
    }

    /// The codecs in use, in metadata order (without skipped ones).
    pub fn codecs(&self) -> &[Codec] {
        &self.codecs
    }

    /// The codecs that were skipped because they are not registered and are marked
    /// `"must_understand": false`.
    pub fn skipped(&self) -> impl Iterator<Item = &ExtensionObject> + '_ {
        self.skipped.iter().map(|(_, meta)| meta)
    }

    /// The chain's metadata: every codec in object form, in order (skipped codecs are kept at
    /// their positions, as they were given).
    pub fn to_metadata(&self) -> Vec<ExtensionObject> {
        let mut out: Vec<ExtensionObject> = self.codecs.iter().map(Codec::to_metadata).collect();
        for (index, meta) in &self.skipped {
            out.insert((*index).min(out.len()), meta.clone());
        }
        out
    }

    /// [`to_metadata`](Self::to_metadata) as a JSON array, as `zarr.json` and codecs that
    /// hold chains of their own (`sharding_indexed`, `zarrs.optional`) write it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.to_metadata()
                .iter()
                .map(ExtensionObject::to_json)
                .collect(),
        )
    }

    /// The size of every encoded chunk, when it is the same for all (no compression: e.g.
    /// `bytes` + `crc32c` gives `n + 4`). Sharding uses this for its index.
    pub fn encoded_size(&self) -> Option<u64> {
        match self.encoded_size {
            ExpectedSize::Exact(n) => Some(n),
            ExpectedSize::AtMost(_) => None,
        }
    }

    /// Encode a chunk.
    ///
    /// # Errors
    /// [`Error::SkippedCodec`] if the chain skipped an ignorable codec;
    /// [`Error::UnexpectedArray`] if `array` does not match the decoded representation;
    /// whatever a codec returns.
    pub fn encode(&self, array: ArrayBytes) -> Result<Bytes> {
        if let Some((_, meta)) = self.skipped.first() {
            return Err(Error::SkippedCodec {
                name: meta.name.clone(),
            });
        }
        array.validate(&self.decoded)?;
        let mut array = array;
        for (depth, (codec, repr)) in self.array_to_array.iter().enumerate() {
            array = codec
                .encode(array, repr)
                .map_err(|e| self.locate(e, depth))?;
        }
        let mut bytes = self
            .array_to_bytes
            .encode(array, &self.bytes_repr)
            .map_err(|e| self.locate(e, self.array_to_array.len()))?;
        for (codec, _) in &self.bytes_to_bytes {
            bytes = codec.encode(bytes)?;
        }
        Ok(bytes)
    }

    /// Decode the bytes->bytes codecs from the last down to (not including) `stop`.
    fn decode_bytes_to(&self, mut bytes: Bytes, stop: usize) -> Result<Bytes> {
        for (codec, expected) in self.bytes_to_bytes[stop..].iter().rev() {
            bytes = codec.decode(bytes, *expected)?;
            // Checked here too, so a codec from elsewhere cannot break the bound.
            expected.check(&codec.to_metadata().name, bytes.len() as u64)?;
        }
        Ok(bytes)
    }

    /// Decode the array->array codecs from the last down to (not including) `stop`.
    fn decode_arrays_to(&self, mut array: ArrayBytes, stop: usize) -> Result<ArrayBytes> {
        for depth in (stop..self.array_to_array.len()).rev() {
            let (codec, repr) = &self.array_to_array[depth];
            array = codec
                .decode(array, repr)
                .map_err(|e| self.locate(e, depth))?;
            array.validate_for(&codec.to_metadata().name, repr)?;
        }
        Ok(array)
    }

    fn decode_array_to_bytes(&self, bytes: Bytes) -> Result<ArrayBytes> {
        let array = self
            .array_to_bytes
            .decode(bytes, &self.bytes_repr)
            .map_err(|e| self.locate(e, self.array_to_array.len()))?;
        array.validate_for(&self.array_to_bytes.to_metadata().name, &self.bytes_repr)?;
        Ok(array)
    }

    /// An [`Error::InvalidElement`] of the codec that works on the representation after the
    /// first `depth` array->array codecs, with its position moved back through them into
    /// the chunk's C order. When one of them cannot say where its elements come from
    /// ([`ArrayToArrayCodec::decoded_position`] is `None`), the error is wrapped as
    /// [`Error::External`] naming that codec, its position left in the rejecting codec's
    /// input. Other errors pass through.
    fn locate(&self, err: Error, depth: usize) -> Error {
        let Error::InvalidElement { index, .. } = &err else {
            return err;
        };
        let mut position = *index;
        for (codec, repr) in self.array_to_array[..depth].iter().rev() {
            match codec.decoded_position(position, repr) {
                Some(p) => position = p,
                None => {
                    return Error::External {
                        codec: codec.to_metadata().name,
                        source: Box::new(err),
                    };
                }
            }
        }
        match err {
            Error::InvalidElement {
                codec,
                data_type,
                reason,
                ..
            } => Error::InvalidElement {
                codec,
                index: position,
                data_type,
                reason,
            },
            other => other,
        }
    }

    /// Decode a chunk.
    ///
    /// # Errors
    /// Whatever a codec returns for malformed data; [`Error::UnexpectedArray`] /
    /// [`Error::DecodedSizeMismatch`] if the result does not match the chunk.
    pub fn decode(&self, encoded: Bytes) -> Result<ArrayBytes> {
        let bytes = self.decode_bytes_to(encoded, 0)?;
        let array = self.decode_array_to_bytes(bytes)?;
        self.decode_arrays_to(array, 0)
    }

    /// Decode a chunk of a fixed-size data type straight into `out`, which must hold exactly
    /// the decoded chunk (C order, native byte order).
    ///
    /// Without array->array codecs, the last decoding step writes directly into `out`: with
    /// `bytes` + a compressor, the compressor decompresses into `out` and the byte order is
    /// fixed in place, so the chunk is written once.
    ///
    /// # Errors
    /// [`Error::OutputSize`] if `out` has the wrong length; [`Error::Unsupported`] for
    /// variable-length data; otherwise as [`CodecChain::decode`].
    pub fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        if self.decoded.element_size().is_none() {
            return Err(Error::unsupported(
                "chain",
                "decoding variable-length data into a buffer (use `decode`)",
            ));
        }
        let size = self.decoded.fixed_size_usize()?;
        if out.len() != size {
            return Err(Error::output_size(size, out.len()));
        }
        if self.relabel_only {
            if let Some((first, _)) = self.bytes_to_bytes.first()
                && self.array_to_bytes.supports_in_place(&self.bytes_repr)
            {
                let bytes = self.decode_bytes_to(encoded, 1)?;
                first.decode_into(bytes, out)?;
                return self.array_to_bytes.decode_in_place(out, &self.bytes_repr);
            }
            let bytes = self.decode_bytes_to(encoded, 0)?;
            return self
                .array_to_bytes
                .decode_into(bytes, &self.bytes_repr, out);
        }
        let bytes = self.decode_bytes_to(encoded, 0)?;
        let array = self.decode_array_to_bytes(bytes)?;
        let array = self.decode_arrays_to(array, 1)?;
        let (first, repr) = &self.array_to_array[0];
        first.decode_into(array, repr, out)
    }

    /// Whether [`decode_region_into`](Self::decode_region_into) can decode part of a chunk
    /// without decoding all of it: with `bytes` alone, or `bytes` and `blosc`, after any
    /// array->array codecs that only relabel the shape (`zarrs.squeeze`).
    pub fn can_partially_decode(&self) -> bool {
        self.partial_path().is_some()
    }

    fn partial_path(&self) -> Option<PartialPath> {
        if !self.relabel_only {
            return None;
        }
        match self.bytes_to_bytes.as_slice() {
            [] if self.array_to_bytes.can_partially_decode() => Some(PartialPath::ArrayToBytes),
            [(only, _)]
                if only.can_partially_decode()
                    && self.array_to_bytes.supports_in_place(&self.bytes_repr) =>
            {
                Some(PartialPath::BytesToBytes)
            }
            _ => None,
        }
    }

    /// `region` of a decoded chunk as the same elements of the array->bytes codec's input,
    /// when every array->array codec only relabels the shape.
    fn encoded_region(&self, region: &Region) -> Option<Region> {
        let mut region = region.clone();
        for (codec, repr) in &self.array_to_array {
            region = codec.encoded_region(&region, repr)?;
        }
        Some(region)
    }

    /// Decode the elements of `region` (chunk coordinates) into `out`, in the region's C
    /// order. Decodes only what the region needs when the chain allows it (see
    /// [`can_partially_decode`](Self::can_partially_decode)) and the region is small;
    /// otherwise decodes the chunk and copies the region out.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the region does not lie in the chunk; [`Error::OutputSize`]
    /// if `out` does not hold it; otherwise as [`CodecChain::decode`].
    pub fn decode_region_into(
        &self,
        encoded: Bytes,
        region: &Region,
        out: &mut [u8],
    ) -> Result<()> {
        let elem = self.decoded.element_size().ok_or_else(|| {
            Error::unsupported("chain", "partial decoding of variable-length data")
        })?;
        let n = strided::check_region(&self.decoded, region)?;
        if out.len() != n * elem {
            return Err(Error::output_size(n * elem, out.len()));
        }
        let total = self.decoded.fixed_size_usize()?;
        if out.len() == total {
            return self.decode_into(encoded, out);
        }
        let path = self.partial_path();
        // The same elements of the array->bytes codec's input, in the same order.
        let inner = match path {
            Some(_) => self.encoded_region(region),
            None => None,
        };
        match (path, inner) {
            (Some(PartialPath::ArrayToBytes), Some(inner)) => {
                return self.array_to_bytes.partial_decode_into(
                    encoded,
                    &self.bytes_repr,
                    &inner,
                    out,
                );
            }
            (Some(PartialPath::BytesToBytes), Some(inner))
                if worth_partial(&self.bytes_repr, &inner, elem, total)? =>
            {
                let (codec, expected) = &self.bytes_to_bytes[0];
                let mut written = 0;
                strided::for_each_run(self.bytes_repr.shape(), &inner, elem, |offset, len| {
                    codec.partial_decode_into(
                        &encoded,
                        *expected,
                        offset as u64,
                        &mut out[written..written + len],
                    )?;
                    written += len;
                    Ok(())
                })?;
                let region_repr = self.bytes_repr.with_shape(inner.shape())?;
                return self.array_to_bytes.decode_in_place(out, &region_repr);
            }
            _ => {}
        }
        let mut whole = crate::zeroed_bytes(total)?;
        self.decode_into(encoded, &mut whole)?;
        strided::extract_region(&whole, &self.decoded, region, out)
    }
}

impl CodecChain {
    /// Decode `region` (chunk coordinates) of a chunk straight into `view`, which has the
    /// region's shape and usually is the chunk's place in a larger output buffer.
    ///
    /// When the region is the whole chunk and the view is contiguous, the chunk is decoded
    /// straight into it ([`decode_into`](Self::decode_into)); otherwise the chunk (or the
    /// region, when the chain decodes regions) is decoded into a per-thread scratch buffer
    /// that is reused across calls, and copied into the view in contiguous runs.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the region does not lie in the chunk or does not have the
    /// view's shape; otherwise as [`CodecChain::decode`].
    pub fn decode_into_view(
        &self,
        encoded: Bytes,
        region: &Region,
        view: &mut ArrayViewMut<'_>,
    ) -> Result<()> {
        let elem = self.decoded.element_size().ok_or_else(|| {
            Error::unsupported("chain", "decoding variable-length data into a view")
        })?;
        if view.element_size() != elem {
            return Err(Error::output_size(elem, view.element_size()));
        }
        strided::check_region(&self.decoded, region)?;
        if region.shape() != view.shape() {
            return Err(Error::InvalidRegion {
                reason: format!(
                    "region {region} of the chunk does not have the view's shape {:?}",
                    view.shape()
                ),
            });
        }
        let whole = region.shape() == self.decoded.shape();
        if whole && let Some(out) = view.as_contiguous_mut() {
            return self.decode_into(encoded, out);
        }
        // A chain that stores elements as they are (`bytes` in the machine's byte order and
        // nothing else) copies the region straight out of the encoded chunk.
        if self.relabel_only
            && self.bytes_to_bytes.is_empty()
            && let Some(stored) = self
                .array_to_bytes
                .decode_unchanged(&encoded, &self.bytes_repr)?
        {
            return view.copy_from(stored, self.decoded.shape(), region);
        }
        with_scratch(|scratch| {
            if whole || !self.can_partially_decode() {
                let size = self.decoded.fixed_size_usize()?;
                let buf = scratch_slice(scratch, size);
                self.decode_into(encoded, buf)?;
                view.copy_from(buf, self.decoded.shape(), region)
            } else {
                let shape = region.shape();
                let size = view.num_bytes();
                let buf = scratch_slice(scratch, size);
                self.decode_region_into(encoded, region, buf)?;
                view.copy_from(buf, &shape, &Region::full(&shape))
            }
        })
    }
}

thread_local! {
    /// Per-thread scratch for [`CodecChain::decode_into_view`]: decoding many chunks on a
    /// pool thread reuses one buffer instead of allocating (and page-faulting) per chunk.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Run `f` with this thread's scratch buffer. The buffer is taken out while `f` runs, so a
/// nested call (a sharded chunk decoding its inner chunks) gets a fresh one, not a panic.
fn with_scratch<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    let mut scratch = SCRATCH.with(std::cell::Cell::take);
    let result = f(&mut scratch);
    // Keep at most 64 MiB per thread between calls.
    if scratch.capacity() <= 64 << 20 {
        SCRATCH.with(|cell| {
            let previous = cell.replace(scratch);
            drop(previous);
        });
    }
    result
}

/// The first `n` bytes of `scratch`, growing it (zeroing only new bytes) when needed.
fn scratch_slice(scratch: &mut Vec<u8>, n: usize) -> &mut [u8] {
    if scratch.len() < n {
        scratch.resize(n, 0);
    }
    &mut scratch[..n]
}

enum PartialPath {
    /// The array->bytes codec decodes regions itself.
    ArrayToBytes,
    /// The single bytes->bytes codec decodes byte ranges; the array->bytes codec converts in
    /// place.
    BytesToBytes,
}

/// Whether decoding runs one by one beats decoding the whole chunk: a small part in few runs.
fn worth_partial(
    repr: &ChunkRepresentation,
    region: &Region,
    elem: usize,
    total: usize,
) -> Result<bool> {
    let mut runs = 0usize;
    let mut bytes = 0usize;
    strided::for_each_run(repr.shape(), region, elem, |_, len| {
        runs += 1;
        bytes += len;
        Ok(())
    })?;
    Ok(runs <= 64 && bytes.saturating_mul(4) <= total)
}
