//! Codecs from the numcodecs library, under the `numcodecs.` names zarr-python 3 writes in v3
//! metadata (and which Zarr v2 filters and compressors map to).
//!
//! numcodecs defines each codec by what its Python implementation does to a numpy buffer;
//! these codecs do the same to the elements of a chunk, so data either side writes reads the
//! same on the other. Configuration keys are numcodecs' own (`dtype`, `astype`, `location`,
//! ...), with numpy type strings such as `"<i4"` or `"uint16"`.

pub(crate) mod alias;
pub(crate) mod bz2;
pub(crate) mod checksum;
pub(crate) mod jenkins;
pub(crate) mod lz4;
pub(crate) mod lzma;
pub(crate) mod numeric;
pub(crate) mod packbits;
pub(crate) mod pcodec;
pub(crate) mod shuffle;

use half::f16;
use serde_json::Value;
use zarr_core::DataType;

use crate::config::Config;
use crate::error::{Error, Result};

/// A numeric numpy type a numcodecs filter can name in `dtype` or `astype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum NumType {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

impl NumType {
    /// Parse a numpy type string: a type code with an optional byte-order mark (`"<i4"`,
    /// `"|u1"`, `"f8"`) or a name (`"int32"`, `"float64"`). The byte order is dropped: the
    /// codecs see elements in the machine's order, and the `bytes` codec decides how they
    /// are stored. Returns `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let code = text.trim_start_matches(['<', '>', '|', '=']);
        Some(match code {
            "i1" | "int8" => Self::I8,
            "i2" | "int16" => Self::I16,
            "i4" | "int32" => Self::I32,
            "i8" | "int64" => Self::I64,
            "u1" | "uint8" => Self::U8,
            "u2" | "uint16" => Self::U16,
            "u4" | "uint32" => Self::U32,
            "u8" | "uint64" => Self::U64,
            "f2" | "float16" => Self::F16,
            "f4" | "float32" => Self::F32,
            "f8" | "float64" => Self::F64,
            _ => return None,
        })
    }

    /// The Zarr data type with the same elements.
    pub(crate) fn data_type(self) -> DataType {
        match self {
            Self::I8 => DataType::Int8,
            Self::I16 => DataType::Int16,
            Self::I32 => DataType::Int32,
            Self::I64 => DataType::Int64,
            Self::U8 => DataType::UInt8,
            Self::U16 => DataType::UInt16,
            Self::U32 => DataType::UInt32,
            Self::U64 => DataType::UInt64,
            Self::F16 => DataType::Float16,
            Self::F32 => DataType::Float32,
            Self::F64 => DataType::Float64,
        }
    }

    /// The numeric type of a Zarr data type, if it has one.
    pub(crate) fn of(data_type: &DataType) -> Option<Self> {
        Some(match data_type {
            DataType::Int8 => Self::I8,
            DataType::Int16 => Self::I16,
            DataType::Int32 => Self::I32,
            DataType::Int64 => Self::I64,
            DataType::UInt8 => Self::U8,
            DataType::UInt16 => Self::U16,
            DataType::UInt32 => Self::U32,
            DataType::UInt64 => Self::U64,
            DataType::Float16 => Self::F16,
            DataType::Float32 => Self::F32,
            DataType::Float64 => Self::F64,
            _ => return None,
        })
    }

    /// numpy's little-endian type string (`"<i4"`, `"|u1"`), as numcodecs writes it.
    pub(crate) fn typestr(self) -> &'static str {
        match self {
            Self::I8 => "|i1",
            Self::I16 => "<i2",
            Self::I32 => "<i4",
            Self::I64 => "<i8",
            Self::U8 => "|u1",
            Self::U16 => "<u2",
            Self::U32 => "<u4",
            Self::U64 => "<u8",
            Self::F16 => "<f2",
            Self::F32 => "<f4",
            Self::F64 => "<f8",
        }
    }

    pub(crate) fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 | Self::F16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
        }
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, Self::F16 | Self::F32 | Self::F64)
    }

    fn is_signed(self) -> bool {
        matches!(self, Self::I8 | Self::I16 | Self::I32 | Self::I64)
    }

    /// The integer range of an integer type.
    pub(crate) fn int_range(self) -> (i128, i128) {
        let bits = self.size() as u32 * 8;
        if self.is_signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        }
    }

    /// Read element `index` of `bytes` (machine order).
    pub(crate) fn load(self, bytes: &[u8], index: usize) -> Scalar {
        let s = self.size();
        let b = &bytes[index * s..(index + 1) * s];
        match self {
            Self::I8 => Scalar::Int(i128::from(b[0] as i8)),
            Self::U8 => Scalar::Int(i128::from(b[0])),
            Self::I16 => Scalar::Int(i128::from(i16::from_ne_bytes([b[0], b[1]]))),
            Self::U16 => Scalar::Int(i128::from(u16::from_ne_bytes([b[0], b[1]]))),
            Self::I32 => Scalar::Int(i128::from(i32::from_ne_bytes(array(b)))),
            Self::U32 => Scalar::Int(i128::from(u32::from_ne_bytes(array(b)))),
            Self::I64 => Scalar::Int(i128::from(i64::from_ne_bytes(array(b)))),
            Self::U64 => Scalar::Int(i128::from(u64::from_ne_bytes(array(b)))),
            Self::F16 => Scalar::Float(f16::from_ne_bytes([b[0], b[1]]).to_f64()),
            Self::F32 => Scalar::Float(f64::from(f32::from_ne_bytes(array(b)))),
            Self::F64 => Scalar::Float(f64::from_ne_bytes(array(b))),
        }
    }

    /// Write `value` as element `index` of `out`, converting it as numpy's `astype` does:
    /// integers wrap to the type's width, floats round to the nearest value of the type, and a
    /// float becomes an integer by truncation toward zero. numpy leaves a float that is NaN or
    /// outside the integer type's range undefined; here it is an error naming the value.
    pub(crate) fn store(self, value: Scalar, out: &mut [u8], index: usize) -> Result<()> {
        let s = self.size();
        let b = &mut out[index * s..(index + 1) * s];
        let int = match (value, self.is_float()) {
            (Scalar::Int(v), false) => v,
            (Scalar::Float(f), false) => {
                let t = f.trunc();
                let (lo, hi) = self.int_range();
                if !t.is_finite() || t < lo as f64 || t > hi as f64 {
                    return Err(Error::InvalidElement {
                        // Renamed to the codec by its caller.
                        codec: "numcodecs".into(),
                        index: index as u64,
                        data_type: self.data_type().to_string(),
                        reason: format!("{f} is not in the range of {}", self.typestr()),
                    });
                }
                t as i128
            }
            (value, true) => {
                let f = match value {
                    Scalar::Int(v) => v as f64,
                    Scalar::Float(f) => f,
                };
                match self {
                    Self::F16 => b.copy_from_slice(&f16::from_f64(f).to_ne_bytes()),
                    Self::F32 => {
                        // An integer converts straight to f32 (one rounding), as numpy does.
                        let x = match value {
                            Scalar::Int(v) => v as f32,
                            Scalar::Float(f) => f as f32,
                        };
                        b.copy_from_slice(&x.to_ne_bytes());
                    }
                    _ => b.copy_from_slice(&f.to_ne_bytes()),
                }
                return Ok(());
            }
        };
        // Two's complement wrap to the width: the low bytes of the value.
        let wide = (int as u128).to_ne_bytes();
        if cfg!(target_endian = "little") {
            b.copy_from_slice(&wide[..s]);
        } else {
            b.copy_from_slice(&wide[16 - s..]);
        }
        Ok(())
    }
}

/// One element's value, wide enough for every [`NumType`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scalar {
    Int(i128),
    Float(f64),
}

impl Scalar {
    /// The value as an integer (a float truncated; integer types always load as integers).
    pub(crate) fn as_i128(self) -> i128 {
        match self {
            Self::Int(v) => v,
            Self::Float(f) => f as i128,
        }
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Self::Int(v) => v as f64,
            Self::Float(f) => f,
        }
    }
}

fn array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(b);
    a
}

/// Parse a `dtype`-like key: a numpy type string naming a numeric type.
pub(crate) fn num_type(config: &Config<'_>, key: &str, value: &Value) -> Result<NumType> {
    config
        .str(key, value)
        .ok()
        .and_then(NumType::parse)
        .ok_or_else(|| config.error(key, "a numpy integer or float type such as \"<i4\"", value))
}

/// A float configuration value (JSON numbers, integers included).
pub(crate) fn float(config: &Config<'_>, key: &str, value: &Value) -> Result<f64> {
    value
        .as_f64()
        .ok_or_else(|| config.error(key, "a number", value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_strings() {
        assert_eq!(NumType::parse("<i4"), Some(NumType::I32));
        assert_eq!(NumType::parse(">u2"), Some(NumType::U16));
        assert_eq!(NumType::parse("|u1"), Some(NumType::U8));
        assert_eq!(NumType::parse("float64"), Some(NumType::F64));
        assert_eq!(NumType::parse("<c8"), None);
        assert_eq!(NumType::parse("<M8[s]"), None);
    }

    #[test]
    fn stores_cast_as_numpy_does() {
        let mut out = [0u8; 8];
        NumType::I8.store(Scalar::Int(200), &mut out, 0).unwrap();
        assert_eq!(out[0] as i8, -56);
        NumType::U16.store(Scalar::Int(-1), &mut out, 0).unwrap();
        assert_eq!(NumType::U16.load(&out, 0), Scalar::Int(65535));
        NumType::I32
            .store(Scalar::Float(-2.9), &mut out, 0)
            .unwrap();
        assert_eq!(NumType::I32.load(&out, 0), Scalar::Int(-2));
        assert!(
            NumType::U8
                .store(Scalar::Float(256.0), &mut out, 0)
                .is_err()
        );
        assert!(
            NumType::I16
                .store(Scalar::Float(f64::NAN), &mut out, 0)
                .is_err()
        );
        NumType::F32.store(Scalar::Float(0.1), &mut out, 0).unwrap();
        assert_eq!(NumType::F32.load(&out, 0), Scalar::Float(f64::from(0.1f32)));
    }
}
