//! The `numcodecs.packbits` codec: booleans packed eight to a byte.

use zarr_core::{DataType, ExtensionObject, FillValue};

use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToArrayCodec;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// The `numcodecs.packbits` codec (array->array): a `bool` chunk of `n` elements becomes a
/// one-dimensional `uint8` array of `1 + ceil(n / 8)` bytes, as numcodecs' `PackBits` writes
/// it: first the number of padding bits in the last byte (0 to 7), then the elements in C
/// order, eight to a byte, the first in the most significant bit (numpy's `packbits`). Zarr
/// v2 arrays name it `packbits` (a filter); zarr-python 3 writes it in v3 metadata as
/// `numcodecs.packbits`. It has no configuration.
///
/// Decoding checks the size and the padding count against the chunk's element count, so a
/// chunk of another shape is an error rather than misplaced bits.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToArrayCodec, ChunkRepresentation, PackBitsCodec};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![4], DataType::Bool, FillValue::from(false))?;
/// let encoded = PackBitsCodec.encode(ArrayBytes::fixed(vec![1u8, 0, 0, 1]), &repr)?;
/// assert_eq!(encoded.as_fixed().unwrap()[..], [4, 0b1001_0000]); // numcodecs' own example
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PackBitsCodec;

impl PackBitsCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "numcodecs.packbits";

    /// Parse `{"name": "numcodecs.packbits", "configuration": {}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for any configuration key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        Config::new(metadata, &[])?;
        Ok(Self)
    }

    fn check_bool(decoded: &ChunkRepresentation) -> Result<usize> {
        if decoded.data_type() != &DataType::Bool {
            return Err(Error::incompatible(
                Self::NAME,
                format!("packs `bool` elements, not `{}`", decoded.data_type()),
            ));
        }
        decoded.num_elements_usize()
    }
}

/// The packed size of `n` booleans: the padding count, then `ceil(n / 8)` bytes.
fn packed_len(n: usize) -> usize {
    1 + n.div_ceil(8)
}

impl ArrayToArrayCodec for PackBitsCodec {
    fn to_metadata(&self) -> ExtensionObject {
        // zarr-python refuses a numcodecs codec without a `configuration` member.
        ExtensionObject::with_configuration(Self::NAME, serde_json::Map::new())
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        let n = Self::check_bool(decoded)?;
        ChunkRepresentation::try_new(
            vec![packed_len(n) as u64],
            DataType::UInt8,
            FillValue::default_for(&DataType::UInt8),
        )
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        Self::check_bool(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        let bits = array.into_fixed(Self::NAME)?;
        let mut out = Vec::with_capacity(packed_len(bits.len()));
        out.push(((8 - bits.len() % 8) % 8) as u8);
        out.extend(bits.chunks(8).map(|eight| {
            eight
                .iter()
                .enumerate()
                .fold(0u8, |byte, (i, &b)| byte | (u8::from(b != 0) << (7 - i)))
        }));
        Ok(ArrayBytes::fixed(out))
    }

    fn decode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let mut out = crate::zeroed_bytes(Self::check_bool(decoded)?)?;
        self.decode_into(array, decoded, &mut out)?;
        Ok(ArrayBytes::fixed(out))
    }

    fn decode_into(
        &self,
        array: ArrayBytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let n = Self::check_bool(decoded)?;
        if out.len() != n {
            return Err(Error::output_size(n, out.len()));
        }
        let packed = array.into_fixed(Self::NAME)?;
        if packed.len() != packed_len(n) {
            return Err(Error::DecodedSizeMismatch {
                codec: Self::NAME.into(),
                expected: format!("{} packed bytes for {n} elements", packed_len(n)),
                found: packed.len() as u64,
            });
        }
        let padding = (8 - n % 8) % 8;
        if usize::from(packed[0]) != padding {
            return Err(Error::corrupt(
                Self::NAME,
                format!(
                    "the chunk says {} padding bits, but {n} elements leave {padding}",
                    packed[0]
                ),
            ));
        }
        for (eight, &byte) in out.chunks_mut(8).zip(&packed[1..]) {
            for (i, b) in eight.iter_mut().enumerate() {
                *b = (byte >> (7 - i)) & 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(shape: Vec<u64>) -> ChunkRepresentation {
        ChunkRepresentation::try_new(shape, DataType::Bool, FillValue::from(false)).unwrap()
    }

    #[test]
    fn packs_as_numpy_and_round_trips_every_padding() {
        // numcodecs.PackBits().encode(np.arange(10) % 3 == 0): 6 padding bits, 0x92, 0x40.
        let bits: Vec<u8> = (0..10).map(|i| u8::from(i % 3 == 0)).collect();
        let encoded = PackBitsCodec
            .encode(ArrayBytes::fixed(bits.clone()), &repr(vec![10]))
            .unwrap();
        assert_eq!(
            encoded.as_fixed().unwrap()[..],
            [6, 0b1001_0010, 0b0100_0000]
        );
        for n in 0..=17u64 {
            let r = repr(vec![n]);
            let bits: Vec<u8> = (0..n).map(|i| u8::from(i * 7 % 5 < 2)).collect();
            let encoded = PackBitsCodec
                .encode(ArrayBytes::fixed(bits.clone()), &r)
                .unwrap();
            let e = PackBitsCodec.encoded_representation(&r).unwrap();
            assert_eq!(e.shape(), [1 + n.div_ceil(8)]);
            assert_eq!(e.data_type(), &DataType::UInt8);
            encoded.validate(&e).unwrap();
            let back = PackBitsCodec.decode(encoded, &r).unwrap();
            assert_eq!(back.as_fixed().unwrap()[..], bits[..], "n = {n}");
        }
        // Two-dimensional chunks pack in C order, as one run.
        let r = repr(vec![2, 3]);
        let encoded = PackBitsCodec
            .encode(ArrayBytes::fixed(vec![1, 1, 0, 0, 0, 1]), &r)
            .unwrap();
        assert_eq!(encoded.as_fixed().unwrap()[..], [2, 0b1100_0100]);
    }

    #[test]
    fn refuses_other_types_and_wrong_chunks() {
        let ints =
            ChunkRepresentation::try_new(vec![4], DataType::UInt8, FillValue::from(0u8)).unwrap();
        assert!(matches!(
            PackBitsCodec.encoded_representation(&ints),
            Err(Error::IncompatibleRepresentation { .. })
        ));
        let r = repr(vec![10]);
        let e = PackBitsCodec
            .decode(ArrayBytes::fixed(vec![6u8, 0]), &r)
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e:?}");
        let e = PackBitsCodec
            .decode(ArrayBytes::fixed(vec![2u8, 0, 0]), &r)
            .unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
        let meta = ExtensionObject::with_configuration(
            PackBitsCodec::NAME,
            serde_json::json!({"bitorder": "little"})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert!(PackBitsCodec::from_metadata(&meta).is_err());
        assert_eq!(
            PackBitsCodec::from_metadata(&PackBitsCodec.to_metadata()).unwrap(),
            PackBitsCodec
        );
    }
}
