//! `zarrs.optional` (zarr-extensions `optional`): nullable values stored as a validity mask
//! and the values that are present, each through a codec chain of its own.
//!
//! The encoded chunk is the length of the encoded mask (`u64`, little-endian), the length of
//! the encoded data (`u64`, little-endian), the encoded mask, then the encoded data. The mask
//! is a `bool` array of the chunk's shape encoded by `mask_codecs`; the data is a 1-d array
//! of the inner type holding only the present values, in C order, encoded by
//! `data_codecs`. A chunk without present values has no data bytes at all.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::Value;
use zarr_core::{DataType, ExtensionObject, FillValue, OptionalType};

use crate::array_bytes::{ArrayBytes, VlenBytes, zeroed_bytes};
use crate::chain::CodecChain;
use crate::codec::ArrayToBytesCodec;
use crate::config::{Config, map};
use crate::error::{Error, Result};
use crate::registry::CodecRegistry;
use crate::representation::ChunkRepresentation;

/// The length of the header: the two `u64` lengths.
const HEADER: usize = 16;

/// The `zarrs.optional` codec (array->bytes), also read under its zarr-extensions name
/// `optional`, for arrays of [`DataType::Optional`].
///
/// In memory an element is the inner element followed by one validity byte (see
/// [`OptionalType`]); this codec splits the validity bytes into the mask and gathers the
/// present values, and puts them back on decoding, with missing values zeroed. Nested
/// optional types nest the codec: the data codecs of `optional<optional<T>>` hold an
/// optional codec for `optional<T>`.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ChunkRepresentation, CodecChain, CodecRegistry, OptionalCodec};
/// use zarr_core::{DataType, FillValue, OptionalType};
///
/// let optional = OptionalType::new(DataType::UInt16);
/// let repr = ChunkRepresentation::try_new(
///     vec![4],
///     DataType::Optional(optional.clone()),
///     FillValue::new([0, 0, 0]),
/// )?;
/// let codecs = [OptionalCodec::default_metadata(&optional)];
/// let chain = CodecChain::from_metadata(&codecs, repr, &CodecRegistry::with_defaults())?;
/// // Some(7), None, Some(9), None: each value followed by its validity byte.
/// let mut chunk = Vec::new();
/// for value in [Some(7u16), None, Some(9), None] {
///     chunk.extend(value.unwrap_or(0).to_ne_bytes());
///     chunk.push(u8::from(value.is_some()));
/// }
/// let encoded = chain.encode(ArrayBytes::fixed(chunk.clone()))?;
/// // 16 bytes of lengths, 1 byte of packed mask, 2 values of 2 bytes.
/// assert_eq!(encoded.len(), 16 + 1 + 4);
/// assert_eq!(chain.decode(encoded)?.as_fixed().unwrap()[..], chunk[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OptionalCodec {
    /// The name it was read under, written back.
    name: String,
    /// For a `bool` mask of the chunk's shape.
    mask: CodecChain,
    /// For a 1-d array of the inner type, as long as the chunk (rebuilt for each chunk's
    /// count of present values).
    data: CodecChain,
    optional: OptionalType,
}

impl OptionalCodec {
    /// The name zarrs writes and reads, and this crate writes.
    pub const NAME: &'static str = "zarrs.optional";
    /// The zarr-extensions name, also read.
    pub const REGISTERED: &'static str = "optional";

    /// The codec of `metadata` for chunks of `decoded`, building the mask and data chains
    /// with `registry`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing, empty or malformed `mask_codecs` or
    /// `data_codecs`; [`Error::IncompatibleRepresentation`] if `decoded` is not of an
    /// optional data type; whatever building the two chains returns.
    pub fn from_metadata(
        metadata: &ExtensionObject,
        decoded: &ChunkRepresentation,
        registry: &CodecRegistry,
    ) -> Result<Self> {
        let config = Config::new(metadata, &["mask_codecs", "data_codecs"])?;
        let list = |key: &str| -> Result<Vec<ExtensionObject>> {
            let value = config.required(key)?;
            let items = value
                .as_array()
                .filter(|items| !items.is_empty())
                .ok_or_else(|| config.error(key, "a non-empty array of codecs", value))?;
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    ExtensionObject::from_json(item, &format!("{key}[{i}]")).map_err(|e| {
                        Error::config(&metadata.name, zarr_core::ErrorChain(&e).to_string())
                    })
                })
                .collect()
        };
        let (mask_codecs, data_codecs) = (list("mask_codecs")?, list("data_codecs")?);
        let optional = Self::optional_type(&metadata.name, decoded)?.clone();
        let mask = CodecChain::from_metadata(&mask_codecs, mask_repr(decoded.shape())?, registry)?;
        let data = CodecChain::from_metadata(
            &data_codecs,
            data_repr(&optional, decoded.num_elements())?,
            registry,
        )?;
        Ok(Self {
            name: metadata.name.clone(),
            mask,
            data,
            optional,
        })
    }

    /// The metadata of the codec zarrs writes by default for `optional`: the mask packed
    /// into bits (`packbits`), the values through `bytes` (little-endian where the order
    /// matters), `vlen-utf8` or `vlen-bytes` for strings and bytes, or another optional
    /// codec for a nested optional type.
    pub fn default_metadata(optional: &OptionalType) -> ExtensionObject {
        let data = match optional.inner() {
            DataType::Optional(inner) => Self::default_metadata(inner),
            DataType::String => ExtensionObject::new("vlen-utf8"),
            DataType::Bytes => ExtensionObject::new("vlen-bytes"),
            DataType::NdArray(nd) if nd.element_size().is_none() => {
                ExtensionObject::new("vlen-ndarray")
            }
            inner if inner.swap_units().is_some_and(|units| !units.is_empty()) => {
                ExtensionObject::with_configuration(
                    "bytes",
                    map([("endian", Value::from("little"))]),
                )
            }
            _ => ExtensionObject::new("bytes"),
        };
        let name = if optional.is_registered() {
            Self::REGISTERED
        } else {
            Self::NAME
        };
        ExtensionObject::with_configuration(
            name,
            map([
                (
                    "mask_codecs",
                    Value::Array(vec![ExtensionObject::new("packbits").to_json()]),
                ),
                ("data_codecs", Value::Array(vec![data.to_json()])),
            ]),
        )
    }

    fn optional_type<'a>(name: &str, decoded: &'a ChunkRepresentation) -> Result<&'a OptionalType> {
        match decoded.data_type() {
            DataType::Optional(optional) => Ok(optional),
            other => Err(Error::incompatible(
                name,
                format!("it encodes optional data types only, not {other}"),
            )),
        }
    }

    /// The mask chain for chunks of `shape`.
    fn mask_for(&self, shape: &[u64]) -> Result<Cow<'_, CodecChain>> {
        if self.mask.decoded_representation().shape() == shape {
            Ok(Cow::Borrowed(&self.mask))
        } else {
            Ok(Cow::Owned(self.mask.with_chunk_shape(shape.to_vec())?))
        }
    }

    /// Check that `decoded` holds the optional type this codec was built for.
    fn check(&self, decoded: &ChunkRepresentation) -> Result<()> {
        let optional = Self::optional_type(&self.name, decoded)?;
        if optional.inner() != self.optional.inner() {
            return Err(Error::incompatible(
                &self.name,
                format!(
                    "it was configured for {}, not {}",
                    DataType::Optional(self.optional.clone()),
                    decoded.data_type()
                ),
            ));
        }
        Ok(())
    }
}

/// A `bool` mask of `shape`, missing by default.
fn mask_repr(shape: &[u64]) -> Result<ChunkRepresentation> {
    ChunkRepresentation::try_new(shape.to_vec(), DataType::Bool, FillValue::new([0]))
}

/// `count` present values of the inner type; their fill value is zero, or empty for
/// variable-length types (for a nested optional, missing), as zarrs has it.
fn data_repr(optional: &OptionalType, count: u64) -> Result<ChunkRepresentation> {
    let fill = match optional.inner() {
        nested @ DataType::Optional(_) => FillValue::default_for(nested),
        inner => FillValue::new(vec![0; inner.fixed_size().unwrap_or(0)]),
    };
    ChunkRepresentation::try_new(vec![count], optional.inner().clone(), fill)
}

impl ArrayToBytesCodec for OptionalCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            self.name.clone(),
            map([
                ("mask_codecs", self.mask.to_json()),
                ("data_codecs", self.data.to_json()),
            ]),
        )
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>> {
        self.check(decoded)?;
        self.mask_for(decoded.shape())?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes> {
        self.check(decoded)?;
        let count = decoded.num_elements_usize()?;
        let mut mask = Vec::with_capacity(count);
        let invalid = |index: usize, reason: String| Error::InvalidElement {
            codec: self.name.clone(),
            index: index as u64,
            data_type: decoded.data_type().to_string(),
            reason,
        };
        let flag = |index: usize, validity: u8| match validity {
            0 | 1 => Ok(validity),
            other => Err(invalid(
                index,
                format!("its validity byte is {other}, not 0 or 1"),
            )),
        };
        let (data, present) = match (&array, self.optional.inner_size()) {
            (ArrayBytes::Fixed(chunk), Some(inner)) => {
                let element = inner + 1;
                if chunk.len() != count * element {
                    return Err(Error::UnexpectedArray {
                        codec: self.name.clone(),
                        expected: format!("{} bytes", count * element),
                        found: format!("{} bytes", chunk.len()),
                    });
                }
                let mut data = Vec::new();
                for (index, value) in chunk.chunks_exact(element).enumerate() {
                    let validity = flag(index, value[inner])?;
                    mask.push(validity);
                    if validity == 1 {
                        data.extend_from_slice(&value[..inner]);
                    }
                }
                // Every inner type has at least one byte.
                let present = data.len() / inner.max(1);
                (ArrayBytes::fixed(data), present)
            }
            (ArrayBytes::Variable(chunk), None) if chunk.len() == count => {
                let mut values = Vec::new();
                for (index, element) in chunk.iter().enumerate() {
                    let (value, validity) = OptionalType::split(element).ok_or_else(|| {
                        invalid(index, "it is empty: it has no validity byte".into())
                    })?;
                    let validity = flag(index, validity)?;
                    mask.push(validity);
                    if validity == 1 {
                        values.push(value);
                    }
                }
                let present = values.len();
                (
                    ArrayBytes::Variable(VlenBytes::from_elements(values)),
                    present,
                )
            }
            _ => {
                return Err(Error::UnexpectedArray {
                    codec: self.name.clone(),
                    expected: format!("{count} elements of {}", decoded.data_type()),
                    found: match &array {
                        ArrayBytes::Fixed(b) => format!("{} fixed-size bytes", b.len()),
                        ArrayBytes::Variable(v) => format!("{} variable-length elements", v.len()),
                    },
                });
            }
        };
        let encoded_mask = self
            .mask_for(decoded.shape())?
            .encode(ArrayBytes::fixed(mask))?;
        let encoded_data = if present == 0 {
            Bytes::new()
        } else {
            self.data
                .with_chunk_shape(vec![present as u64])?
                .encode(data)?
        };
        let mut out = Vec::with_capacity(HEADER + encoded_mask.len() + encoded_data.len());
        out.extend_from_slice(&(encoded_mask.len() as u64).to_le_bytes());
        out.extend_from_slice(&(encoded_data.len() as u64).to_le_bytes());
        out.extend_from_slice(&encoded_mask);
        out.extend_from_slice(&encoded_data);
        Ok(out.into())
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        self.check(decoded)?;
        if bytes.len() < HEADER {
            return Err(Error::truncated(
                &self.name,
                format!(
                    "the chunk has {} bytes, fewer than the {HEADER} bytes of its header",
                    bytes.len()
                ),
            ));
        }
        let length = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
        let (mask_len, data_len) = (length(0), length(8));
        let expected = mask_len
            .checked_add(data_len)
            .and_then(|n| n.checked_add(HEADER as u64));
        let found = bytes.len() as u64;
        match expected {
            Some(total) if total == found => {}
            Some(total) if total < found => {
                return Err(Error::corrupt(
                    &self.name,
                    format!(
                        "the header gives {mask_len} bytes of mask and {data_len} of data, but \
                         {} bytes follow it",
                        found - HEADER as u64
                    ),
                ));
            }
            _ => {
                return Err(Error::truncated(
                    &self.name,
                    format!(
                        "the header gives {mask_len} bytes of mask and {data_len} of data, but \
                         only {} bytes follow it",
                        found - HEADER as u64
                    ),
                ));
            }
        }
        // Both fit: their sum is the chunk's length less the header.
        let mask_end = HEADER + mask_len as usize;
        let mask = self
            .mask_for(decoded.shape())?
            .decode(bytes.slice(HEADER..mask_end))?
            .into_fixed(&self.name)?;
        let mut present = 0u64;
        for (index, &m) in mask.iter().enumerate() {
            match m {
                0 => {}
                1 => present += 1,
                other => {
                    return Err(Error::corrupt(
                        &self.name,
                        format!("mask element {index} is {other}, not 0 or 1"),
                    ));
                }
            }
        }
        let data = if present == 0 {
            // Nothing is present: a writer stores no data (zarrs), so whatever follows is
            // not read.
            None
        } else {
            Some(
                self.data
                    .with_chunk_shape(vec![present])?
                    .decode(bytes.slice(mask_end..))?,
            )
        };
        match self.optional.inner_size() {
            Some(inner) => {
                let mut out = zeroed_bytes(decoded.fixed_size_usize()?)?;
                if let Some(data) = data {
                    let data = data.into_fixed(&self.name)?;
                    // The chain checked the decoded size: one value per present element.
                    let mut values = data.chunks_exact(inner.max(1));
                    for (slot, &m) in out.chunks_exact_mut(inner + 1).zip(mask.iter()) {
                        if m == 1
                            && let Some(value) = values.next()
                        {
                            slot[..inner].copy_from_slice(value);
                            slot[inner] = 1;
                        }
                    }
                }
                Ok(ArrayBytes::fixed(out))
            }
            None => {
                let values = match data {
                    Some(ArrayBytes::Variable(values)) => values,
                    Some(ArrayBytes::Fixed(_)) => {
                        return Err(Error::UnexpectedArray {
                            codec: self.name.clone(),
                            expected: "variable-length values".into(),
                            found: "fixed-size data".into(),
                        });
                    }
                    None => VlenBytes::from_elements(std::iter::empty()),
                };
                let mut values = values.iter();
                let mut offsets = Vec::with_capacity(mask.len() + 1);
                let mut out = Vec::new();
                offsets.push(0u64);
                for &m in mask.iter() {
                    if m == 1
                        && let Some(value) = values.next()
                    {
                        out.extend_from_slice(value);
                        out.push(1);
                    } else {
                        out.push(0);
                    }
                    offsets.push(out.len() as u64);
                }
                Ok(ArrayBytes::Variable(VlenBytes::try_new(
                    offsets,
                    out.into(),
                )?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Codec;
    use serde_json::json;

    fn dt(text: &str) -> DataType {
        text.parse().unwrap()
    }

    fn repr(shape: &[u64], data_type: &DataType) -> ChunkRepresentation {
        let size = data_type.fixed_size().unwrap();
        ChunkRepresentation::try_new(
            shape.to_vec(),
            data_type.clone(),
            FillValue::new(vec![0; size]),
        )
        .unwrap()
    }

    fn chain(codecs: Value, repr: ChunkRepresentation) -> Result<CodecChain> {
        let list: Vec<ExtensionObject> = codecs
            .as_array()
            .unwrap()
            .iter()
            .map(|c| ExtensionObject::from_json(c, "codecs").unwrap())
            .collect();
        CodecChain::from_metadata(&list, repr, &CodecRegistry::with_defaults())
    }

    /// The in-memory elements of `optional<uint16>` for `values`.
    fn elements(values: &[Option<u16>]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| {
                let mut e = v.unwrap_or(0).to_ne_bytes().to_vec();
                e.push(u8::from(v.is_some()));
                e
            })
            .collect()
    }

    #[test]
    fn the_layout_is_two_lengths_the_mask_and_the_present_values() {
        let u8_opt = dt("zarrs.optional<uint8>");
        let codecs = json!([{"name": "zarrs.optional", "configuration": {
            "mask_codecs": [{"name": "bytes"}], "data_codecs": [{"name": "bytes"}]}}]);
        let chain = chain(codecs.clone(), repr(&[2, 2], &u8_opt)).unwrap();
        // 0, N, 2, 3
        let chunk = vec![0, 1, 9, 0, 2, 1, 3, 1];
        let encoded = chain.encode(ArrayBytes::fixed(chunk)).unwrap();
        let mut expected = 4u64.to_le_bytes().to_vec();
        expected.extend(3u64.to_le_bytes());
        expected.extend([1, 0, 1, 1, 0, 2, 3]);
        assert_eq!(encoded[..], expected[..]);
        // The missing value's stray byte is not kept.
        assert_eq!(
            chain.decode(encoded).unwrap().as_fixed().unwrap()[..],
            [0, 1, 0, 0, 2, 1, 3, 1]
        );
        // Nothing present: no data bytes at all.
        let encoded = chain.encode(ArrayBytes::fixed(vec![0; 8])).unwrap();
        assert_eq!(encoded.len(), 16 + 4);
        assert_eq!(encoded[8..16], 0u64.to_le_bytes());
        assert_eq!(
            chain.decode(encoded).unwrap().as_fixed().unwrap()[..],
            [0; 8]
        );
        // The metadata is written back as read, under either name.
        assert_eq!(chain.to_json(), codecs);
        let registered = json!([{"name": "optional", "configuration": {
            "mask_codecs": [{"name": "bytes"}], "data_codecs": [{"name": "bytes"}]}}]);
        let chain = super::tests::chain(registered.clone(), repr(&[4], &u8_opt)).unwrap();
        assert_eq!(chain.to_metadata()[0].name, "optional");
    }

    #[test]
    fn values_round_trip_through_compressed_chains() {
        let u16_opt = dt("zarrs.optional<uint16>");
        let codecs = json!([{"name": "zarrs.optional", "configuration": {
            "mask_codecs": [{"name": "packbits"}, {"name": "gzip", "configuration": {"level": 5}}],
            "data_codecs": [{"name": "bytes", "configuration": {"endian": "big"}},
                            {"name": "zstd", "configuration": {"level": 3, "checksum": false}}]}}]);
        let chain = chain(codecs, repr(&[10, 10], &u16_opt)).unwrap();
        let values: Vec<Option<u16>> = (0..100u16)
            .map(|i| (i % 3 != 0).then_some(i * 257))
            .collect();
        let chunk = elements(&values);
        let encoded = chain.encode(ArrayBytes::fixed(chunk.clone())).unwrap();
        assert_eq!(
            chain.decode(encoded.clone()).unwrap().as_fixed().unwrap()[..],
            chunk[..]
        );
        let mut out = vec![0xaa; chunk.len()];
        chain.decode_into(encoded, &mut out).unwrap();
        assert_eq!(out, chunk);
        // All present, and a chunk of another shape (rectilinear grids, edge chunks).
        let all: Vec<Option<u16>> = (0..100).map(Some).collect();
        let encoded = chain.encode(ArrayBytes::fixed(elements(&all))).unwrap();
        assert_eq!(
            chain.decode(encoded).unwrap().as_fixed().unwrap()[..],
            elements(&all)[..]
        );
        let small = chain.with_chunk_shape(vec![3, 1]).unwrap();
        let three = elements(&[None, Some(5), Some(6)]);
        let encoded = small.encode(ArrayBytes::fixed(three.clone())).unwrap();
        assert_eq!(
            small.decode(encoded).unwrap().as_fixed().unwrap()[..],
            three[..]
        );
    }

    #[test]
    fn nested_optionals_nest_the_codec() {
        let nested = dt("zarrs.optional<zarrs.optional<uint8>>");
        let DataType::Optional(optional) = &nested else {
            unreachable!()
        };
        let meta = OptionalCodec::default_metadata(optional);
        assert_eq!(
            meta.to_json(),
            json!({"name": "zarrs.optional", "configuration": {
                "mask_codecs": [{"name": "packbits"}],
                "data_codecs": [{"name": "zarrs.optional", "configuration": {
                    "mask_codecs": [{"name": "packbits"}],
                    "data_codecs": [{"name": "bytes"}]}}]}})
        );
        let chain = chain(json!([meta.to_json()]), repr(&[4, 4], &nested)).unwrap();
        // The zarr-extensions example: N, SN, 2, 3 / N, 5, N, 7 / SN, SN, N, N / SN, SN, N, N.
        let n = [0u8, 0, 0];
        let sn = [0u8, 0, 1];
        let v = |x: u8| [x, 1, 1];
        let rows = [
            [n, sn, v(2), v(3)],
            [n, v(5), n, v(7)],
            [sn, sn, n, n],
            [sn, sn, n, n],
        ];
        let chunk: Vec<u8> = rows.iter().flatten().flatten().copied().collect();
        let encoded = chain.encode(ArrayBytes::fixed(chunk.clone())).unwrap();
        assert_eq!(
            chain.decode(encoded).unwrap().as_fixed().unwrap()[..],
            chunk[..]
        );
        let with_endian = OptionalCodec::default_metadata(&OptionalType::new(DataType::Float32));
        assert_eq!(
            with_endian.to_json()["configuration"]["data_codecs"],
            json!([{"name": "bytes", "configuration": {"endian": "little"}}])
        );
    }

    #[test]
    fn bad_configurations_and_types_are_refused() {
        let u8_opt = dt("zarrs.optional<uint8>");
        for (config, needle) in [
            (
                json!({"data_codecs": [{"name": "bytes"}]}),
                "`mask_codecs` is required",
            ),
            (
                json!({"mask_codecs": [], "data_codecs": [{"name": "bytes"}]}),
                "non-empty",
            ),
            (
                json!({"mask_codecs": [{"name": "bytes"}], "data_codecs": 3}),
                "data_codecs",
            ),
            (
                json!({"mask_codecs": [{"name": "bytes"}], "data_codecs": [{"name": "bytes"}], "x": 1}),
                "unknown key `x`",
            ),
            (
                json!({"mask_codecs": [{"nme": "bytes"}], "data_codecs": [{"name": "bytes"}]}),
                "mask_codecs[0]",
            ),
            (
                json!({"mask_codecs": [{"name": "nope"}], "data_codecs": [{"name": "bytes"}]}),
                "nope",
            ),
            (
                json!({"mask_codecs": [{"name": "bytes"}], "data_codecs": [{"name": "gzip", "configuration": {"level": 1}}]}),
                "array->bytes",
            ),
        ] {
            let e = chain(
                json!([{"name": "zarrs.optional", "configuration": config}]),
                repr(&[4], &u8_opt),
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains(needle),
                "{config}: `{e}` should contain `{needle}`"
            );
        }
        let codec = json!([{"name": "zarrs.optional", "configuration": {
            "mask_codecs": [{"name": "bytes"}], "data_codecs": [{"name": "bytes"}]}}]);
        let e = chain(codec, repr(&[4], &DataType::UInt8))
            .unwrap_err()
            .to_string();
        assert!(e.contains("optional data types only"), "{e}");
        let e = chain(json!([{"name": "bytes"}]), repr(&[4], &u8_opt))
            .unwrap_err()
            .to_string();
        assert!(e.contains("zarrs.optional"), "{e}");
    }

    #[test]
    fn malformed_chunks_are_typed_errors() {
        let u16_opt = dt("zarrs.optional<uint16>");
        let repr = repr(&[6], &u16_opt);
        let codecs = json!([{"name": "zarrs.optional", "configuration": {
            "mask_codecs": [{"name": "packbits"}],
            "data_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]);
        let chain = chain(codecs, repr.clone()).unwrap();
        let chunk = elements(&[Some(1), None, Some(3), Some(4), None, Some(6)]);
        let good = chain.encode(ArrayBytes::fixed(chunk)).unwrap();
        let decode = |bytes: Vec<u8>| chain.decode(bytes.into()).unwrap_err();
        assert!(matches!(
            decode(good[..10].to_vec()),
            Error::Truncated { .. }
        ));
        assert!(matches!(
            decode(good[..good.len() - 1].to_vec()),
            Error::Truncated { .. }
        ));
        let mut longer = good.to_vec();
        longer.push(0);
        assert!(matches!(decode(longer), Error::Corrupt { .. }));
        let mut huge = good.to_vec();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(decode(huge), Error::Truncated { .. }));
        // A mask with one present value fewer leaves a value over.
        let Codec::ArrayToBytes(codec) = CodecRegistry::with_defaults()
            .build(&chain.to_metadata()[0], &repr)
            .unwrap()
            .unwrap()
        else {
            unreachable!()
        };
        crate::codecs::assert_bit_flips_decode_safely(codec.as_ref(), &good, &repr, &[0x01, 0x80]);
        // A validity byte other than 0 or 1 is refused on encoding, naming the element.
        let mut bad = elements(&[Some(1), None, Some(3), Some(4), None, Some(6)]);
        bad[3 * 3 + 2] = 2;
        let e = chain.encode(ArrayBytes::fixed(bad)).unwrap_err();
        assert!(matches!(e, Error::InvalidElement { index: 3, .. }), "{e}");
        // Mask bytes other than 0 and 1 read as present, as `bool` elements do.
        let mask_bytes = json!([{"name": "zarrs.optional", "configuration": {
            "mask_codecs": [{"name": "bytes"}],
            "data_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]);
        let plain = super::tests::chain(mask_bytes, repr).unwrap();
        let mut bytes = 6u64.to_le_bytes().to_vec();
        bytes.extend(0u64.to_le_bytes());
        bytes.extend([0, 0, 7, 0, 0, 0]);
        let e = plain.decode(bytes.clone().into()).unwrap_err().to_string();
        assert!(e.contains("expected 2 bytes"), "{e}");
        bytes[8..16].copy_from_slice(&2u64.to_le_bytes());
        bytes.extend(0x1234u16.to_le_bytes());
        let decoded = plain.decode(bytes.into()).unwrap();
        assert_eq!(
            decoded.as_fixed().unwrap()[..],
            elements(&[None, None, Some(0x1234), None, None, None])[..]
        );
    }
}
