//! `n5_default` (zarr-extensions): N5 blocks in "default" mode, read and written as Zarr
//! chunks.
//!
//! An N5 block is a header (mode `u16`, rank `u16`, then the block's extent in each
//! dimension as `u32`, all big-endian) followed by the elements in column-major order,
//! big-endian, through at most one compressor. In Zarr terms that is a codec chain of a
//! full transpose, `bytes` big-endian and an optional bytes->bytes codec, which the codec's
//! `codecs` configuration holds. A block's extent may differ from the chunk's: writers that
//! truncate the blocks at an array's far edge (the Java library) store smaller blocks, so
//! decoding places the block in a chunk of fill values.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::array_bytes::ArrayBytes;
use crate::chain::CodecChain;
use crate::codec::ArrayToBytesCodec;
use crate::config::{Config, map};
use crate::error::{Error, Result};
use crate::registry::CodecRegistry;
use crate::representation::ChunkRepresentation;
use crate::view::copy_block;

/// The block mode of a default-mode block, the only mode this codec reads.
const MODE_DEFAULT: u16 = 0;

/// The `n5_default` codec (array->bytes, zarr-extensions): chunks stored as N5 blocks in
/// default mode, so that N5 datasets read (and are written) as Zarr arrays.
///
/// The configuration's `codecs` must be a full `transpose` (order `[N-1, ..., 0]`: N5 keeps
/// elements in column-major order), `bytes` (big-endian, as N5 stores them; the endianness
/// may be left out for one-byte types) and at most one bytes->bytes codec, the block's
/// compressor. Encoding writes a header with the chunk's own extent (edge chunks padded to
/// the full chunk, as tensorstore writes them); decoding takes blocks of any extent up to
/// the chunk's size, padding with the fill value or truncating to the chunk.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ChunkRepresentation, CodecChain, CodecRegistry, N5DefaultCodec};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![2, 3], DataType::UInt16, FillValue::new([0, 0]))?;
/// let codecs = [N5DefaultCodec::default_metadata(2, None)];
/// let chain = CodecChain::from_metadata(&codecs, repr, &CodecRegistry::with_defaults())?;
/// let values: Vec<u8> = [0u16, 1, 2, 7, 8, 9].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let block = chain.encode(ArrayBytes::fixed(values.clone()))?;
/// // Mode 0, rank 2, extents 2 and 3, then the values column by column, big-endian.
/// assert_eq!(&block[..12], &[0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3]);
/// assert_eq!(&block[12..], &[0, 0, 0, 7, 0, 1, 0, 8, 0, 2, 0, 9]);
/// assert_eq!(chain.decode(block)?.as_fixed().unwrap()[..], values[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct N5DefaultCodec {
    /// The codecs of the block's data, for the chunk's own shape (rebuilt for blocks of
    /// another extent).
    inner: CodecChain,
}

impl N5DefaultCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "n5_default";

    /// The codec of `metadata` for chunks of `decoded`, building its codecs with
    /// `registry`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `codecs` is missing or not the N5 layout (a full
    /// `transpose`, big-endian `bytes`, at most one more codec); whatever building the chain
    /// returns (a compressor that is not bytes->bytes, a data type `bytes` cannot encode).
    pub fn from_metadata(
        metadata: &ExtensionObject,
        decoded: &ChunkRepresentation,
        registry: &CodecRegistry,
    ) -> Result<Self> {
        let config = Config::new(metadata, &["codecs"])?;
        let value = config.required("codecs")?;
        let items = value
            .as_array()
            .ok_or_else(|| config.error("codecs", "an array of codecs", value))?;
        let codecs = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                ExtensionObject::from_json(item, &format!("codecs[{i}]"))
                    .map_err(|e| Error::config(Self::NAME, zarr_core::ErrorChain(&e).to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        check_layout(&codecs, decoded)?;
        let inner = CodecChain::from_metadata(&codecs, decoded.clone(), registry)?;
        Ok(Self { inner })
    }

    /// The metadata of the codec for arrays of `rank` dimensions: the full transpose,
    /// big-endian `bytes`, then `compressor` if there is one.
    pub fn default_metadata(rank: usize, compressor: Option<ExtensionObject>) -> ExtensionObject {
        let order: Vec<Value> = (0..rank).rev().map(Value::from).collect();
        let mut codecs = vec![
            ExtensionObject::with_configuration("transpose", map([("order", order.into())]))
                .to_json(),
            ExtensionObject::with_configuration("bytes", map([("endian", "big".into())])).to_json(),
        ];
        codecs.extend(compressor.map(|c| c.to_json()));
        ExtensionObject::with_configuration(Self::NAME, map([("codecs", codecs.into())]))
    }

    /// The codecs of the block's data.
    pub fn codecs(&self) -> &CodecChain {
        &self.inner
    }

    /// The chain for blocks of `shape`.
    fn chain_for(&self, shape: &[u64]) -> Result<Cow<'_, CodecChain>> {
        if self.inner.decoded_representation().shape() == shape {
            Ok(Cow::Borrowed(&self.inner))
        } else {
            Ok(Cow::Owned(self.inner.with_chunk_shape(shape.to_vec())?))
        }
    }
}

/// Check that `codecs` are a full transpose, big-endian `bytes` and at most one more codec.
fn check_layout(codecs: &[ExtensionObject], decoded: &ChunkRepresentation) -> Result<()> {
    let bad = |reason: String| Error::config(N5DefaultCodec::NAME, reason);
    let rank = decoded.rank();
    let Some(transpose) = codecs.first().filter(|c| c.name == "transpose") else {
        return Err(bad(
            "`codecs` must start with a `transpose` codec (N5 blocks are column-major)".into(),
        ));
    };
    let order = transpose
        .configuration
        .as_ref()
        .and_then(|c| c.get("order"))
        .cloned()
        .unwrap_or(Value::Null);
    let full: Vec<Value> = (0..rank as u64).rev().map(Value::from).collect();
    if order != Value::Array(full.clone()) {
        return Err(bad(format!(
            "the `transpose` order must be {} for {rank} dimensions, found {order}",
            Value::Array(full)
        )));
    }
    let Some(bytes) = codecs.get(1).filter(|c| c.name == "bytes") else {
        return Err(bad(
            "the second codec of `codecs` must be `bytes` (big-endian)".into(),
        ));
    };
    let endian = bytes.configuration.as_ref().and_then(|c| c.get("endian"));
    match endian {
        Some(Value::String(e)) if e == "big" => {}
        None if decoded.element_size() == Some(1) => {}
        other => {
            return Err(bad(format!(
                "the `bytes` codec must be big-endian (N5 blocks are), found {}",
                other.map_or_else(|| "no endianness".to_owned(), Value::to_string)
            )));
        }
    }
    if codecs.len() > 3 {
        return Err(bad(format!(
            "`codecs` may hold one compressor after `bytes`, found {}",
            codecs.len() - 2
        )));
    }
    Ok(())
}

/// A parsed block header: the block's extent and where its data starts.
fn parse_header(bytes: &[u8], rank: usize) -> Result<(Vec<u64>, usize)> {
    let name = N5DefaultCodec::NAME;
    let u16_at = |at: usize| -> Result<u16> {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| {
                Error::truncated(
                    name,
                    format!(
                        "the block holds {} bytes, too few for its header",
                        bytes.len()
                    ),
                )
            })
    };
    let mode = u16_at(0)?;
    if mode != MODE_DEFAULT {
        let what = match mode {
            1 => "varlength".to_owned(),
            2 => "object".to_owned(),
            other => format!("unknown ({other})"),
        };
        return Err(Error::unsupported(
            name,
            format!("reading N5 blocks in {what} mode (only default mode, 0, is read)"),
        ));
    }
    let ndim = usize::from(u16_at(2)?);
    if ndim != rank {
        return Err(Error::corrupt(
            name,
            format!("the block header has {ndim} dimensions, the array {rank}"),
        ));
    }
    let start = 4 + 4 * ndim;
    let Some(dims) = bytes.get(4..start) else {
        return Err(Error::truncated(
            name,
            format!(
                "the block holds {} bytes, its header of {ndim} dimensions {start}",
                bytes.len()
            ),
        ));
    };
    let shape = dims
        .chunks_exact(4)
        .map(|d| u64::from(u32::from_be_bytes([d[0], d[1], d[2], d[3]])))
        .collect();
    Ok((shape, start))
}

impl ArrayToBytesCodec for N5DefaultCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(Self::NAME, map([("codecs", self.inner.to_json())]))
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>> {
        if decoded.data_type() != self.inner.decoded_representation().data_type() {
            return Err(Error::incompatible(
                Self::NAME,
                format!(
                    "it was configured for {}, not {}",
                    self.inner.decoded_representation().data_type(),
                    decoded.data_type()
                ),
            ));
        }
        let chain = self.chain_for(decoded.shape())?;
        let header = 4 + 4 * decoded.rank() as u64;
        Ok(chain.encoded_size().map(|size| size + header))
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes> {
        let rank = u16::try_from(decoded.rank()).map_err(|_| {
            Error::incompatible(
                Self::NAME,
                format!(
                    "an N5 block header holds at most {} dimensions, not {}",
                    u16::MAX,
                    decoded.rank()
                ),
            )
        })?;
        let mut out = Vec::with_capacity(4 + 4 * decoded.rank());
        out.extend(MODE_DEFAULT.to_be_bytes());
        out.extend(rank.to_be_bytes());
        for &extent in decoded.shape() {
            let extent = u32::try_from(extent).map_err(|_| {
                Error::incompatible(
                    Self::NAME,
                    format!(
                        "an N5 block header holds extents up to {}, not {extent}",
                        u32::MAX
                    ),
                )
            })?;
            out.extend(extent.to_be_bytes());
        }
        let data = self.chain_for(decoded.shape())?.encode(array)?;
        out.extend_from_slice(&data);
        Ok(Bytes::from(out))
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let (block, start) = parse_header(&bytes, decoded.rank())?;
        let data = bytes.slice(start..);
        if block == decoded.shape() {
            return self.chain_for(&block)?.decode(data);
        }
        // A block of another extent: bounded by the chunk's size, then padded or cut.
        let count = block.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
        if count.is_none_or(|n| n > decoded.num_elements()) {
            return Err(Error::corrupt(
                Self::NAME,
                format!(
                    "the block header's extent {block:?} holds more elements than the chunk {:?}",
                    decoded.shape()
                ),
            ));
        }
        let elem = decoded.element_size().ok_or_else(|| {
            Error::incompatible(Self::NAME, "it encodes fixed-size data types only")
        })?;
        let values = self
            .chain_for(&block)?
            .decode(data)?
            .into_fixed(Self::NAME)?;
        let mut out = ArrayBytes::fill(decoded)?.into_fixed(Self::NAME)?.to_vec();
        let extent: Vec<u64> = block
            .iter()
            .zip(decoded.shape())
            .map(|(&b, &c)| b.min(c))
            .collect();
        let origin = vec![0; block.len()];
        if extent.iter().all(|&e| e > 0) {
            copy_block(
                &values,
                &block,
                &origin,
                &mut out,
                decoded.shape(),
                &origin,
                &extent,
                elem,
            );
        }
        Ok(ArrayBytes::fixed(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use zarr_core::{DataType, FillValue};

    fn chain(config: Value, shape: &[u64], fill: u16) -> Result<CodecChain> {
        let repr = ChunkRepresentation::try_new(
            shape.to_vec(),
            DataType::UInt16,
            FillValue::new(fill.to_ne_bytes()),
        )?;
        let meta = ExtensionObject::from_json(
            &json!({"name": "n5_default", "configuration": config}),
            "codec",
        )?;
        CodecChain::from_metadata(&[meta], repr, &CodecRegistry::with_defaults())
    }

    fn layout(rank: usize, compressor: Option<Value>) -> Value {
        let order: Vec<usize> = (0..rank).rev().collect();
        let mut codecs = vec![
            json!({"name": "transpose", "configuration": {"order": order}}),
            json!({"name": "bytes", "configuration": {"endian": "big"}}),
        ];
        codecs.extend(compressor);
        json!({ "codecs": codecs })
    }

    /// A default-mode block of `shape` holding `values` (column-major), uncompressed.
    fn block(shape: &[u32], values: &[u16]) -> Bytes {
        let mut out = vec![0, 0];
        out.extend((shape.len() as u16).to_be_bytes());
        for d in shape {
            out.extend(d.to_be_bytes());
        }
        for v in values {
            out.extend(v.to_be_bytes());
        }
        Bytes::from(out)
    }

    fn values(array: ArrayBytes) -> Vec<u16> {
        array
            .as_fixed()
            .unwrap()
            .chunks_exact(2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .collect()
    }

    #[test]
    fn blocks_are_column_major_big_endian_behind_a_header() {
        let chain = chain(layout(2, None), &[2, 3], 0).unwrap();
        // Column-major: (0,0) (1,0) (0,1) (1,1) (0,2) (1,2).
        let stored = block(&[2, 3], &[0, 7, 1, 8, 2, 9]);
        assert_eq!(
            values(chain.decode(stored.clone()).unwrap()),
            [0, 1, 2, 7, 8, 9]
        );
        let row_major: Vec<u8> = [0u16, 1, 2, 7, 8, 9]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(chain.encode(ArrayBytes::fixed(row_major)).unwrap(), stored);
        assert_eq!(chain.encoded_size(), Some(12 + 12));
    }

    #[test]
    fn truncated_and_oversized_blocks_fit_the_chunk() {
        let chain = chain(layout(2, None), &[2, 3], 5).unwrap();
        // A block cut at the array's edge (the Java library): 1x2, the rest fill value.
        let edge = block(&[1, 2], &[1, 2]);
        assert_eq!(values(chain.decode(edge).unwrap()), [1, 2, 5, 5, 5, 5]);
        // A block longer in one dimension, shorter in the other: cut and padded.
        let long = block(&[3, 1], &[1, 2, 3]);
        assert_eq!(values(chain.decode(long).unwrap()), [1, 5, 5, 2, 5, 5]);
        // An empty block: all fill value.
        let empty = block(&[0, 3], &[]);
        assert_eq!(values(chain.decode(empty).unwrap()), [5; 6]);
    }

    #[test]
    fn compressed_blocks_round_trip_in_every_rank() {
        let gzip = json!({"name": "gzip", "configuration": {"level": 5}});
        for shape in [vec![], vec![4], vec![2, 3], vec![2, 1, 3]] {
            let chain = chain(layout(shape.len(), Some(gzip.clone())), &shape, 0).unwrap();
            let n: u64 = shape.iter().product();
            let data: Vec<u8> = (0..n as u16).flat_map(|v| (v * 3).to_ne_bytes()).collect();
            let encoded = chain.encode(ArrayBytes::fixed(data.clone())).unwrap();
            assert_eq!(&encoded[2..4], (shape.len() as u16).to_be_bytes());
            assert_eq!(
                chain.decode(encoded).unwrap().as_fixed().unwrap()[..],
                data[..]
            );
        }
    }

    #[test]
    fn malformed_blocks_are_typed_errors() {
        let chain = chain(layout(2, None), &[2, 3], 0).unwrap();
        let decode = |bytes: Vec<u8>| chain.decode(Bytes::from(bytes)).unwrap_err().to_string();
        assert!(decode(vec![0]).contains("too few for its header"));
        assert!(decode(vec![0, 0, 0, 2, 0, 0]).contains("its header of 2 dimensions 12"));
        let mut varlength = block(&[2, 3], &[0; 6]).to_vec();
        varlength[1] = 1;
        assert!(decode(varlength).contains("varlength mode"));
        assert!(decode(block(&[6], &[0; 6]).to_vec()).contains("1 dimensions, the array 2"));
        let err = decode(block(&[3, 3], &[0; 9]).to_vec());
        assert!(err.contains("[3, 3] holds more elements"), "{err}");
        let err = decode(block(&[u32::MAX, u32::MAX], &[]).to_vec());
        assert!(err.contains("more elements"), "{err}");
        // Data shorter than the header says.
        assert!(chain.decode(block(&[2, 3], &[0; 5])).is_err());
    }

    #[test]
    fn configurations_other_than_the_n5_layout_are_refused() {
        let refused = |config: Value| chain(config, &[2, 3], 0).unwrap_err().to_string();
        assert!(refused(json!({})).contains("`codecs` is required"));
        assert!(refused(json!({"codecs": []})).contains("start with a `transpose`"));
        let c_order = json!({"codecs": [
            {"name": "transpose", "configuration": {"order": [0, 1]}},
            {"name": "bytes", "configuration": {"endian": "big"}}]});
        assert!(refused(c_order).contains("must be [1,0]"));
        let little = json!({"codecs": [
            {"name": "transpose", "configuration": {"order": [1, 0]}},
            {"name": "bytes", "configuration": {"endian": "little"}}]});
        assert!(refused(little).contains("big-endian"));
        let no_bytes = json!({"codecs": [
            {"name": "transpose", "configuration": {"order": [1, 0]}}]});
        assert!(refused(no_bytes).contains("must be `bytes`"));
        let two = layout(
            2,
            Some(json!({"name": "gzip", "configuration": {"level": 1}})),
        );
        let mut two_more = two.clone();
        two_more["codecs"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "gzip", "configuration": {"level": 1}}));
        assert!(refused(two_more).contains("one compressor"));
        assert!(chain(two, &[2, 3], 0).is_ok());
        // One-byte types may leave the endianness out.
        let repr =
            ChunkRepresentation::try_new(vec![2], DataType::UInt8, FillValue::new([0])).unwrap();
        let meta = ExtensionObject::from_json(
            &json!({"name": "n5_default", "configuration": {"codecs": [
                {"name": "transpose", "configuration": {"order": [0]}},
                {"name": "bytes"}]}}),
            "codec",
        )
        .unwrap();
        assert!(CodecChain::from_metadata(&[meta], repr, &CodecRegistry::with_defaults()).is_ok());
    }
}
