//! The `vlen-ndarray` codec (zarr-extensions) for the `ndarray` data type.

use bytes::Bytes;
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, Error as CodecError, Result as CodecResult,
    VlenBytes,
};
use zarr_core::{DataType, ExtensionObject, NdArrayType};

use crate::common::check_keys;

/// The `vlen-ndarray` codec (array->bytes) of zarr-extensions, for the `ndarray` data type
/// ([`DataType::NdArray`]) with a shape pattern whose only variable dimension is the first
/// (`[null, d1, ..., dk]`): ragged arrays whose elements are `(n, d1, ..., dk)` arrays, `n`
/// varying between elements.
///
/// Each element is stored as its scalars in little-endian order and C order, framed as the
/// `vlen-bytes` codec frames byte strings (a `u32` element count, then each element's `u32`
/// byte length and bytes), so a chunk is byte for byte what `vlen-bytes` writes for the
/// elements' raw bytes. An element's length must be a whole number of `(1, d1, ..., dk)`
/// items, on encoding and on decoding; a `bool` scalar must be 0 or 1. The codec takes no
/// configuration. The reference implementation is the Python package `zarr-vlen-ndarray`.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, VlenBytes};
/// use zarr_core::{DataType, FillValue, NdArrayType};
/// use zarr_vlen::VlenNdArrayCodec;
///
/// // Elements of shape (n, 2) of uint8: [[1, 2]] and the empty element.
/// let pairs = DataType::NdArray(NdArrayType::new(DataType::UInt8, vec![None, Some(2)])?);
/// let repr = ChunkRepresentation::try_new(vec![2], pairs, FillValue::new(vec![]))?;
/// let chunk = ArrayBytes::Variable(VlenBytes::from_elements([&[1u8, 2][..], &[]]));
/// let stored = VlenNdArrayCodec.encode(chunk.clone(), &repr)?;
/// assert_eq!(&stored[..], b"\x02\0\0\0\x02\0\0\0\x01\x02\0\0\0\0");
/// assert_eq!(VlenNdArrayCodec.decode(stored, &repr)?, chunk);
/// // Three bytes are not whole (1, 2) items.
/// let odd = ArrayBytes::Variable(VlenBytes::from_elements([&[1u8, 2, 3][..], &[]]));
/// assert!(VlenNdArrayCodec.encode(odd, &repr).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VlenNdArrayCodec;

impl VlenNdArrayCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "vlen-ndarray";

    /// The codec (it has no configuration).
    pub fn new() -> Self {
        Self
    }

    /// Parse `{"name": "vlen-ndarray"}` with an optional empty configuration.
    ///
    /// # Errors
    /// [`zarr_codecs::Error::InvalidConfiguration`] for any configuration key.
    pub fn from_metadata(metadata: &ExtensionObject) -> CodecResult<Self> {
        check_keys(metadata, &[])?;
        Ok(Self)
    }

    /// The chunk's `ndarray` type, checked to have the one leading variable dimension the
    /// codec serves.
    fn element_type(repr: &ChunkRepresentation) -> CodecResult<&NdArrayType> {
        let incompatible = |reason: String| CodecError::IncompatibleRepresentation {
            codec: Self::NAME.to_owned(),
            reason,
        };
        match repr.data_type() {
            DataType::NdArray(nd) if nd.is_leading_variable() => Ok(nd),
            DataType::NdArray(_) => Err(incompatible(format!(
                "it serves element shapes whose only variable dimension is the first \
                 ([null, d1, ...]), not {} (fixed shapes take the `bytes` codec)",
                repr.data_type()
            ))),
            other => Err(incompatible(format!(
                "it encodes the ndarray data type only, not {other}"
            ))),
        }
    }

    /// Check that every element is whole items of valid scalars.
    fn check_elements(
        nd: &NdArrayType,
        elements: &VlenBytes,
        data_type: &DataType,
        decoding: bool,
    ) -> CodecResult<()> {
        let item = nd.item_size();
        let bool_scalars = *nd.dtype() == DataType::Bool;
        for (index, element) in elements.iter().enumerate() {
            let reason = if !element.len().is_multiple_of(item) {
                format!(
                    "{} bytes are not a whole number of {item}-byte items",
                    element.len()
                )
            } else if bool_scalars && let Some(b) = element.iter().find(|&&b| b > 1) {
                format!("a bool scalar holds {b}, not 0 or 1")
            } else {
                continue;
            };
            return Err(if decoding {
                CodecError::Corrupt {
                    codec: Self::NAME.to_owned(),
                    reason: format!("element {index}: {reason}"),
                }
            } else {
                CodecError::InvalidElement {
                    codec: Self::NAME.to_owned(),
                    index: index as u64,
                    data_type: data_type.to_string(),
                    reason,
                }
            });
        }
        Ok(())
    }

    /// Swap the scalars between native and little-endian order (nothing on little-endian
    /// machines). Each element is whole scalars, so the values buffer is too.
    fn swapped(nd: &NdArrayType, elements: VlenBytes) -> CodecResult<VlenBytes> {
        let width = nd.swap_width();
        if cfg!(target_endian = "little") || width == 1 {
            return Ok(elements);
        }
        let mut values = elements.values().to_vec();
        for scalar in values.chunks_exact_mut(width) {
            scalar.reverse();
        }
        VlenBytes::try_new(elements.offsets().to_vec(), values.into())
    }
}

impl ArrayToBytesCodec for VlenNdArrayCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(Self::NAME, serde_json::Map::new())
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> CodecResult<Option<u64>> {
        Self::element_type(decoded)?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> CodecResult<Bytes> {
        let nd = Self::element_type(decoded)?;
        let array = match array {
            ArrayBytes::Variable(elements) => {
                Self::check_elements(nd, &elements, decoded.data_type(), false)?;
                ArrayBytes::Variable(Self::swapped(nd, elements)?)
            }
            fixed => fixed,
        };
        crate::interleaved::encode_chunk(Self::NAME, false, array, decoded)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> CodecResult<ArrayBytes> {
        let nd = Self::element_type(decoded)?;
        match crate::interleaved::decode_chunk(Self::NAME, false, &bytes, decoded)? {
            ArrayBytes::Variable(elements) => {
                let elements = Self::swapped(nd, elements)?;
                Self::check_elements(nd, &elements, decoded.data_type(), true)?;
                Ok(ArrayBytes::Variable(elements))
            }
            fixed => Ok(fixed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zarr_core::FillValue;

    fn repr(dtype: DataType, shape: Vec<Option<u64>>, n: u64) -> ChunkRepresentation {
        let dt = DataType::NdArray(NdArrayType::new(dtype, shape).unwrap());
        let fill = FillValue::default_for(&dt);
        ChunkRepresentation::try_new(vec![n], dt, fill).unwrap()
    }

    #[test]
    fn float_pairs_round_trip_as_vlen_bytes_frames() {
        let r = repr(DataType::Float32, vec![None, Some(2)], 3);
        let a: Vec<u8> = [1.5f32, -2.0, 3.0, 4.25]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: Vec<u8> = [0.5f32, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let chunk = ArrayBytes::Variable(VlenBytes::from_elements([&a[..], &[], &b[..]]));
        let stored = VlenNdArrayCodec.encode(chunk.clone(), &r).unwrap();
        let mut expected = 3u32.to_le_bytes().to_vec();
        for e in [&a[..], &[], &b[..]] {
            expected.extend((e.len() as u32).to_le_bytes());
            expected.extend(e);
        }
        assert_eq!(&stored[..], expected);
        assert_eq!(VlenNdArrayCodec.decode(stored, &r).unwrap(), chunk);
    }

    #[test]
    fn malformed_chunks_and_other_types_are_errors() {
        let r = repr(DataType::Int16, vec![None, Some(3)], 1);
        // Element 0 holds 7 bytes: not whole 6-byte items.
        let stored = Bytes::from_static(b"\x01\0\0\0\x07\0\0\0abcdefg");
        let err = VlenNdArrayCodec.decode(stored, &r).unwrap_err().to_string();
        assert!(
            err.contains("element 0") && err.contains("6-byte items"),
            "{err}"
        );
        // Two elements claimed, the chunk has one.
        let stored = Bytes::from_static(b"\x02\0\0\0\0\0\0\0\0\0\0\0");
        assert!(VlenNdArrayCodec.decode(stored, &r).is_err());
        // A truncated element.
        let stored = Bytes::from_static(b"\x01\0\0\0\x06\0\0\0abc");
        assert!(VlenNdArrayCodec.decode(stored, &r).is_err());
        // Bool scalars are 0 or 1.
        let b = repr(DataType::Bool, vec![None], 1);
        let stored = Bytes::from_static(b"\x01\0\0\0\x02\0\0\0\x01\x02");
        let err = VlenNdArrayCodec.decode(stored, &b).unwrap_err().to_string();
        assert!(err.contains("not 0 or 1"), "{err}");
        let bad = ArrayBytes::Variable(VlenBytes::from_elements([&[0u8, 7][..]]));
        assert!(matches!(
            VlenNdArrayCodec.encode(bad, &b),
            Err(CodecError::InvalidElement { index: 0, .. })
        ));
        // Patterns the codec does not serve, and other data types.
        for shape in [vec![Some(2), None], vec![None, None], vec![Some(2)]] {
            let r = repr(DataType::UInt8, shape, 1);
            let err = VlenNdArrayCodec.encoded_size(&r).unwrap_err().to_string();
            assert!(
                err.contains("only variable dimension is the first"),
                "{err}"
            );
        }
        let bytes =
            ChunkRepresentation::try_new(vec![1], DataType::Bytes, FillValue::new(vec![])).unwrap();
        assert!(VlenNdArrayCodec.encoded_size(&bytes).is_err());
        // No configuration keys.
        let meta = ExtensionObject::from_json(
            &serde_json::json!({"name": "vlen-ndarray", "configuration": {"x": 1}}),
            "codecs[0]",
        )
        .unwrap();
        assert!(VlenNdArrayCodec::from_metadata(&meta).is_err());
    }
}
