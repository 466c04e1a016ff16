//! The `bitround` codec (zarr-extensions): numbers rounded to fewer significant bits.

use zarr_core::{DataType, ExtensionObject, FillValue};

use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToArrayCodec;
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// How a data type's elements are rounded: each `width`-byte component (a complex number has
/// two) either as a float with `mantissa` bits, or as an integer from its highest set bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Float { width: usize, mantissa: u32 },
    Int { width: usize },
}

impl Kind {
    fn of(data_type: &DataType) -> Option<Self> {
        use DataType as D;
        Some(match data_type {
            D::Int8 | D::UInt8 => Self::Int { width: 1 },
            D::Int16 | D::UInt16 => Self::Int { width: 2 },
            D::Int32 | D::UInt32 => Self::Int { width: 4 },
            D::Int64 | D::UInt64 | D::DateTime64 { .. } | D::TimeDelta64 { .. } => {
                Self::Int { width: 8 }
            }
            D::Float16 => Self::Float {
                width: 2,
                mantissa: 10,
            },
            D::BFloat16 => Self::Float {
                width: 2,
                mantissa: 7,
            },
            D::Float32 | D::Complex64 => Self::Float {
                width: 4,
                mantissa: 23,
            },
            D::Float64 | D::Complex128 => Self::Float {
                width: 8,
                mantissa: 52,
            },
            D::ComplexFloat(component) => match component.data_type() {
                D::MiniFloat(_) => return None,
                other => return Self::of(&other),
            },
            _ => return None,
        })
    }
}

/// The `bitround` codec (array->array, zarr-extensions): reduces the precision of numbers so
/// that a compressor after it finds more repetition. Lossy; decoding changes nothing.
///
/// - Floats (`float16`, `bfloat16`, `float32`, `float64`, and each half of `complex64`,
///   `complex128` and `complex_float16` to `complex_float64`) keep `keepbits` bits of their mantissa, rounded to nearest with ties to
///   even, as numcodecs' `BitRound` does; sign and exponent stay.
/// - Integers (`int8` to `uint64`, and `numpy.datetime64` / `numpy.timedelta64` as
///   `int64`) keep `keepbits` bits from their highest set bit, rounded the same way. The
///   element's bits are taken as unsigned (a negative number's highest set bit is its sign
///   bit) and rounding saturates rather than wrapping, as zarrs, which maintains the codec,
///   does: `uint8` 250 with `keepbits` 2 is 192, not 0.
///
/// Configuration: `keepbits`, at least 1 (required). A `keepbits` at or above the bits an
/// element has leaves it unchanged. numcodecs' own `numcodecs.bitround` (floats only) is a
/// separate codec here, [`NumericFilterCodec`](crate::NumericFilterCodec), byte for byte what
/// numcodecs writes.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToArrayCodec, BitroundCodec, ChunkRepresentation};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![3], DataType::UInt16, FillValue::from(0u16))?;
/// let values: Vec<u8> = [1000u16, 1023, 7].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let encoded = BitroundCodec::try_new(3)?.encode(ArrayBytes::fixed(values), &repr)?;
/// let rounded: Vec<u16> = encoded.as_fixed().unwrap().chunks(2)
///     .map(|b| u16::from_ne_bytes([b[0], b[1]])).collect();
/// assert_eq!(rounded, [1024, 1024, 7]); // three significant bits each
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BitroundCodec {
    keepbits: u32,
}

impl BitroundCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "bitround";

    /// A codec keeping `keepbits` significant bits.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a `keepbits` of 0.
    pub fn try_new(keepbits: u32) -> Result<Self> {
        if keepbits == 0 {
            return Err(Error::config(Self::NAME, "`keepbits` must be at least 1"));
        }
        Ok(Self { keepbits })
    }

    /// The bits kept.
    pub fn keepbits(&self) -> u32 {
        self.keepbits
    }

    /// Parse `{"name": "bitround", "configuration": {"keepbits": 10}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing, malformed or zero `keepbits`, or any
    /// other key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["keepbits"])?;
        let keepbits = config.int_in(
            "keepbits",
            config.required("keepbits")?,
            1..=i64::from(u32::MAX),
        )?;
        Self::try_new(keepbits as u32)
    }

    fn kind(decoded: &ChunkRepresentation) -> Result<Kind> {
        Kind::of(decoded.data_type()).ok_or_else(|| {
            Error::incompatible(
                Self::NAME,
                format!(
                    "it rounds integers, floats and complex numbers, not `{}`",
                    decoded.data_type()
                ),
            )
        })
    }

    /// Round every component of `bytes` in place.
    fn round(&self, bytes: &mut [u8], kind: Kind) {
        macro_rules! round_all {
            ($t:ty, |$x:ident| $maxbits:expr) => {
                for c in bytes.chunks_exact_mut(size_of::<$t>()) {
                    let $x = <$t>::from_ne_bytes(c.try_into().expect("exact chunks"));
                    let maxbits: u32 = $maxbits;
                    if self.keepbits < maxbits {
                        let maskbits = maxbits - self.keepbits;
                        let mask = (<$t>::MAX >> maskbits) << maskbits;
                        let half_quantum1: $t = (1 << (maskbits - 1)) - 1;
                        let rounded =
                            $x.saturating_add((($x >> maskbits) & 1) + half_quantum1) & mask;
                        c.copy_from_slice(&rounded.to_ne_bytes());
                    }
                }
            };
        }
        match kind {
            Kind::Float { width: 2, mantissa } => round_all!(u16, |_x| mantissa),
            Kind::Float { width: 4, mantissa } => round_all!(u32, |_x| mantissa),
            Kind::Float { mantissa, .. } => round_all!(u64, |_x| mantissa),
            Kind::Int { width: 1 } => round_all!(u8, |x| 8 - x.leading_zeros()),
            Kind::Int { width: 2 } => round_all!(u16, |x| 16 - x.leading_zeros()),
            Kind::Int { width: 4 } => round_all!(u32, |x| 32 - x.leading_zeros()),
            Kind::Int { .. } => round_all!(u64, |x| 64 - x.leading_zeros()),
        }
    }
}

impl ArrayToArrayCodec for BitroundCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("keepbits", self.keepbits.into())]),
        )
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        let kind = Self::kind(decoded)?;
        // The fill value is rounded as the elements are, so that chunks of nothing but the
        // fill value still encode to the encoded fill value.
        let mut fill = decoded.fill_value().as_bytes().to_vec();
        self.round(&mut fill, kind);
        ChunkRepresentation::try_new(
            decoded.shape().to_vec(),
            decoded.data_type().clone(),
            FillValue::new(fill),
        )
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let kind = Self::kind(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        let mut bytes = array.into_fixed(Self::NAME)?.to_vec();
        self.round(&mut bytes, kind);
        Ok(ArrayBytes::fixed(bytes))
    }

    fn decode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        Self::kind(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        Ok(array)
    }

    fn decode_into(
        &self,
        array: ArrayBytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        Self::kind(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        crate::codec::copy_exact(&array.into_fixed(Self::NAME)?, out)
    }

    fn decoded_position(&self, index: u64, _decoded: &ChunkRepresentation) -> Option<u64> {
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};
    use serde_json::json;

    fn repr(n: u64, data_type: DataType) -> ChunkRepresentation {
        let fill = FillValue::default_for(&data_type);
        ChunkRepresentation::try_new(vec![n], data_type, fill).unwrap()
    }

    fn encode(keepbits: u32, data_type: DataType, bytes: Vec<u8>) -> Vec<u8> {
        let n = (bytes.len() / data_type.fixed_size().unwrap()) as u64;
        let codec = BitroundCodec::try_new(keepbits).unwrap();
        let r = repr(n, data_type);
        let encoded = codec.encode(ArrayBytes::fixed(bytes), &r).unwrap();
        // Decoding hands the rounded values back unchanged.
        let decoded = codec.decode(encoded.clone(), &r).unwrap();
        assert_eq!(decoded.as_fixed(), encoded.as_fixed());
        encoded.as_fixed().unwrap().to_vec()
    }

    #[test]
    fn floats_keep_mantissa_bits_rounding_ties_to_even() {
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        // 1 + 2^-23 * m: with one mantissa bit kept, 1.25 is a tie between 1.0 and 1.5 and
        // goes to the even 1.0; 1.75 ties between 1.5 and 2.0 and goes to 2.0.
        assert_eq!(
            encode(1, DataType::Float32, f32s(&[1.25, 1.75, 1.3, -1.7, 0.0])),
            f32s(&[1.0, 2.0, 1.5, -1.5, 0.0])
        );
        // Infinity and NaN keep their class.
        let out = encode(2, DataType::Float32, f32s(&[f32::INFINITY, f32::NAN]));
        let back: Vec<f32> = out
            .chunks(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(back[0], f32::INFINITY);
        assert!(back[1].is_nan());
        // A keepbits at or above the mantissa's leaves values as they are.
        let pi = f32s(&[std::f32::consts::PI]);
        assert_eq!(encode(23, DataType::Float32, pi.clone()), pi);
        assert_eq!(encode(40, DataType::Float32, pi.clone()), pi);
        // float64, float16 and bfloat16 round their own mantissas.
        let third = (1.0f64 / 3.0).to_ne_bytes().to_vec();
        let out = f64::from_ne_bytes(encode(4, DataType::Float64, third).try_into().unwrap());
        assert_eq!(out, 0.328_125); // 1.0101b x 2^-2: the next bit is 0, so rounded down
        let h = f16::from_f32(1.3).to_ne_bytes().to_vec();
        let out = f16::from_ne_bytes(encode(2, DataType::Float16, h).try_into().unwrap());
        assert_eq!(out, f16::from_f32(1.25));
        let b = bf16::from_f32(1.3).to_ne_bytes().to_vec();
        let out = bf16::from_ne_bytes(encode(1, DataType::BFloat16, b).try_into().unwrap());
        assert_eq!(out, bf16::from_f32(1.5));
        // Complex numbers: each half on its own.
        let z = f32s(&[1.25, 1.75]);
        assert_eq!(encode(1, DataType::Complex64, z), f32s(&[1.0, 2.0]));
    }

    #[test]
    fn integers_keep_bits_from_their_highest_set_bit() {
        assert_eq!(
            encode(2, DataType::UInt8, vec![0, 1, 5, 6, 7, 250, 255]),
            // 5 = 101 -> 100 (tie to even), 6 = 110 stays, 7 = 111 -> 1000 (8), 250 and 255
            // saturate at 255 and keep their top two bits: 192.
            vec![0, 1, 4, 6, 8, 192, 192]
        );
        let u16s = |v: &[u16]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        assert_eq!(
            encode(3, DataType::UInt16, u16s(&[1000, 1023, 7, 0])),
            u16s(&[1024, 1024, 7, 0])
        );
        // Negative numbers are taken as their unsigned bits: -1 is 32 set bits, of which
        // the top four stay (rounding up saturates).
        let i32s = |v: &[i32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        assert_eq!(
            encode(4, DataType::Int32, i32s(&[100, -1, i32::MIN])),
            i32s(&[96, 0xF000_0000u32 as i32, i32::MIN])
        );
        // NaT (i64::MIN) stays NaT.
        let nat = i64::MIN.to_ne_bytes().to_vec();
        let dt = DataType::from_json(
            &json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}),
            "data_type",
        )
        .unwrap();
        assert_eq!(encode(3, dt, nat.clone()), nat);
    }

    #[test]
    fn configuration_and_types() {
        let meta = |config: serde_json::Value| {
            ExtensionObject::with_configuration(
                BitroundCodec::NAME,
                config.as_object().unwrap().clone(),
            )
        };
        let codec = BitroundCodec::from_metadata(&meta(json!({"keepbits": 10}))).unwrap();
        assert_eq!(codec.keepbits(), 10);
        assert_eq!(
            BitroundCodec::from_metadata(&codec.to_metadata()).unwrap(),
            codec
        );
        for bad in [
            json!({}),
            json!({"keepbits": 0}),
            json!({"keepbits": -3}),
            json!({"keepbits": 1.5}),
            json!({"keepbits": 3, "extra": 1}),
        ] {
            assert!(
                matches!(
                    BitroundCodec::from_metadata(&meta(bad.clone())),
                    Err(Error::InvalidConfiguration { .. })
                ),
                "{bad}"
            );
        }
        for data_type in [DataType::Bool, DataType::String, DataType::RawBits(2)] {
            let fill = FillValue::default_for(&data_type);
            let r = ChunkRepresentation::try_new(vec![2], data_type, fill).unwrap();
            assert!(matches!(
                codec.encoded_representation(&r),
                Err(Error::IncompatibleRepresentation { .. })
            ));
        }
        // The fill value is rounded with the elements.
        let r =
            ChunkRepresentation::try_new(vec![2], DataType::UInt8, FillValue::from(7u8)).unwrap();
        let encoded = BitroundCodec::try_new(2)
            .unwrap()
            .encoded_representation(&r)
            .unwrap();
        assert_eq!(encoded.fill_value().as_bytes(), [8]);
        // A chunk of the wrong size is an error.
        assert!(codec.encode(ArrayBytes::fixed(vec![0u8; 3]), &r).is_err());
    }
}
