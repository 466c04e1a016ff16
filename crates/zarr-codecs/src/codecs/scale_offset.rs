//! The `scale_offset` codec (zarr-extensions): `(x - offset) * scale` on encoding,
//! `x / scale + offset` on decoding, in the array's own data type.

use half::{bf16, f16};
use serde_json::{Map, Value};
use zarr_core::{DataType, ExtensionObject, FillValue};

use super::numcodecs::{NumType, Scalar};
use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToArrayCodec;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// The `scale_offset` codec (array->array, zarr-extensions): each element `x` is stored as
/// `(x - offset) * scale` and read back as `x / scale + offset`, computed in the array's
/// own data type (no promotion), so the data type does not change.
///
/// Its usual partner is [`CastValueCodec`](crate::CastValueCodec) after it: floats scaled
/// into the range of a small integer type and stored as that type, the CF convention's
/// `scale_factor` and `add_offset` expressed as codecs. Together the two do what the older
/// `numcodecs.fixedscaleoffset` does (with `cast_value`'s `"out_of_range": "wrap"` for
/// numcodecs' wrapping of integers).
///
/// Configuration: `offset` and `scale`, each written as a fill value of the array's data
/// type (`5`, `0.1`, `"0x3dcccccd"`). Both are written out; on reading, a missing one
/// defaults to 0 (`offset`) or 1 (`scale`), and a missing configuration is the identity.
///
/// - Data types: `int8` to `uint64`, `float16`, `bfloat16`, `float32` and `float64`; any
///   other is refused when the array opens. So are a zero `scale`, a `scale` or `offset`
///   that is not finite, and values that are not numbers of the array's type (`0.1` for an
///   integer array).
/// - Integers: encoding a value whose result does not fit the type is an error naming the
///   element, never a wrapped value; decoding a stored value that `scale` does not divide
///   exactly is an error too (it cannot have been written by this codec).
/// - Floats: the arithmetic rounds as the type does (IEEE 754, `float16` and `bfloat16` one
///   rounding per operation); encoding a finite value to an infinity is an error, NaN and
///   infinities pass through, and decoding follows IEEE 754 without further checks.
/// - The fill value is encoded like the elements; one that cannot be is refused at open.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToArrayCodec, ChunkRepresentation, ScaleOffsetCodec};
/// use zarr_core::{DataType, FillValue};
///
/// let codec = ScaleOffsetCodec::try_new(273.15, 100.0)?;
/// let repr = ChunkRepresentation::try_new(vec![2], DataType::Float64, FillValue::from(273.15f64))?;
/// let kelvin: Vec<u8> = [273.15f64, 300.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let stored = codec.encode(ArrayBytes::fixed(kelvin.clone()), &repr)?;
/// let stored: Vec<f64> = stored.as_fixed().unwrap().chunks(8)
///     .map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect();
/// assert_eq!(stored[0], 0.0);
/// assert!((stored[1] - 2685.0).abs() < 1e-9);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleOffsetCodec {
    /// `offset` as given (a fill value of the data type), or `None` for the default, 0.
    offset: Option<Value>,
    /// `scale` as given, or `None` for the default, 1.
    scale: Option<Value>,
}

/// The typed parameters for one data type.
#[derive(Debug, Clone, Copy)]
enum Params {
    /// An integer type, with offset and scale as values of it.
    Int {
        ty: NumType,
        offset: i128,
        scale: i128,
    },
    F16 {
        offset: f16,
        scale: f16,
    },
    BF16 {
        offset: bf16,
        scale: bf16,
    },
    F32 {
        offset: f32,
        scale: f32,
    },
    F64 {
        offset: f64,
        scale: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Encode,
    Decode,
}

impl ScaleOffsetCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "scale_offset";

    /// A codec subtracting `offset`, then multiplying by `scale`. Each is any JSON value a
    /// fill value of the array's data type can be (`5`, `0.1`, `"NaN"`...); they are checked
    /// against the data type when a chain is built.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `offset` or `scale` is not a number or a string.
    pub fn try_new(offset: impl Into<Value>, scale: impl Into<Value>) -> Result<Self> {
        let (offset, scale) = (offset.into(), scale.into());
        for (key, value) in [("offset", &offset), ("scale", &scale)] {
            if !(value.is_number() || value.is_string()) {
                return Err(Error::config(
                    Self::NAME,
                    format!("`{key}` must be a number (as a fill value), found {value}"),
                ));
            }
        }
        Ok(Self {
            offset: Some(offset),
            scale: Some(scale),
        })
    }

    /// Parse `{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a key other than `offset` and `scale`, or a value
    /// that is not a number or a string.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["offset", "scale"])?;
        let mut codec = Self::try_new(
            config.get("offset").cloned().unwrap_or(Value::from(0)),
            config.get("scale").cloned().unwrap_or(Value::from(1)),
        )?;
        codec.offset = config.get("offset").cloned();
        codec.scale = config.get("scale").cloned();
        Ok(codec)
    }

    /// `offset` and `scale` for `data_type`, checked.
    fn params(&self, data_type: &DataType) -> Result<Params> {
        let value = |key: &str, given: &Option<Value>, default: i64| -> Result<FillValue> {
            let json = given.clone().unwrap_or(Value::from(default));
            FillValue::from_json(&json, data_type).map_err(|e| {
                Error::incompatible(
                    Self::NAME,
                    format!("`{key}` {json} is not a value of the array's `{data_type}`: {e}"),
                )
            })
        };
        let offset = value("offset", &self.offset, 0)?;
        let scale = value("scale", &self.scale, 1)?;
        let (o, s) = (offset.as_bytes(), scale.as_bytes());
        let params = match data_type {
            DataType::Float16 => Params::F16 {
                offset: f16::from_ne_bytes(ne(o)),
                scale: f16::from_ne_bytes(ne(s)),
            },
            DataType::BFloat16 => Params::BF16 {
                offset: bf16::from_ne_bytes(ne(o)),
                scale: bf16::from_ne_bytes(ne(s)),
            },
            DataType::Float32 => Params::F32 {
                offset: f32::from_ne_bytes(ne(o)),
                scale: f32::from_ne_bytes(ne(s)),
            },
            DataType::Float64 => Params::F64 {
                offset: f64::from_ne_bytes(ne(o)),
                scale: f64::from_ne_bytes(ne(s)),
            },
            _ => match NumType::of(data_type) {
                Some(ty) => match (ty.load(o, 0), ty.load(s, 0)) {
                    (Scalar::Int(offset), Scalar::Int(scale)) => Params::Int { ty, offset, scale },
                    _ => unreachable!("the float types are matched above"),
                },
                None => {
                    return Err(Error::incompatible(
                        Self::NAME,
                        format!("it scales integers and floats, not `{data_type}`"),
                    ));
                }
            },
        };
        let (offset, scale) = params.as_f64();
        if !offset.is_finite() || !scale.is_finite() {
            return Err(Error::incompatible(
                Self::NAME,
                format!("`offset` and `scale` must be finite, found {offset} and {scale}"),
            ));
        }
        if scale == 0.0 {
            return Err(Error::incompatible(
                Self::NAME,
                "`scale` must not be zero (decoding divides by it)",
            ));
        }
        Ok(params)
    }
}

/// The first `N` bytes of `bytes` (a fill value of an `N`-byte type).
fn ne<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes[..N]
        .try_into()
        .expect("a fill value of the type's size")
}

impl Params {
    /// Offset and scale as `f64` (exact for floats; integers beyond 2^53 round, which does
    /// not matter for the checks this is used for).
    fn as_f64(self) -> (f64, f64) {
        match self {
            Self::Int { offset, scale, .. } => (offset as f64, scale as f64),
            Self::F16 { offset, scale } => (offset.to_f64(), scale.to_f64()),
            Self::BF16 { offset, scale } => (offset.to_f64(), scale.to_f64()),
            Self::F32 { offset, scale } => (f64::from(offset), f64::from(scale)),
            Self::F64 { offset, scale } => (offset, scale),
        }
    }

    /// Apply the codec in `direction` to the elements of `src`, writing them to `out` (of
    /// the same length). Returns the index of the first element that fails, and why.
    fn apply(
        self,
        direction: Direction,
        src: &[u8],
        out: &mut [u8],
    ) -> std::result::Result<(), (usize, String)> {
        debug_assert_eq!(src.len(), out.len());
        macro_rules! halves {
            ($t:ty, $offset:expr, $scale:expr) => {{
                let round = |v: f32| <$t>::from_f32(v).to_f32();
                floats::<2, $t>(
                    direction,
                    src,
                    out,
                    ($offset, $scale),
                    (<$t>::from_ne_bytes, <$t>::to_ne_bytes),
                    move |x, o, s| <$t>::from_f32(round(x.to_f32() - o.to_f32()) * s.to_f32()),
                    move |x, o, s| <$t>::from_f32(round(x.to_f32() / s.to_f32()) + o.to_f32()),
                    <$t>::is_finite,
                )
            }};
        }
        match self {
            Self::Int { ty, offset, scale } => {
                macro_rules! ints {
                    ($t:ty) => {
                        ints::<{ size_of::<$t>() }, $t>(
                            direction,
                            src,
                            out,
                            offset as $t,
                            scale as $t,
                            <$t>::from_ne_bytes,
                            <$t>::to_ne_bytes,
                            |x, o, s| x.checked_sub(o)?.checked_mul(s),
                            |x, o, s| match (x.checked_rem(s), x.checked_div(s)) {
                                (Some(0), Some(q)) => q.checked_add(o),
                                _ => None,
                            },
                        )
                    };
                }
                match ty {
                    NumType::I8 => ints!(i8),
                    NumType::I16 => ints!(i16),
                    NumType::I32 => ints!(i32),
                    NumType::I64 => ints!(i64),
                    NumType::U8 => ints!(u8),
                    NumType::U16 => ints!(u16),
                    NumType::U32 => ints!(u32),
                    NumType::U64 => ints!(u64),
                    NumType::F16 | NumType::F32 | NumType::F64 => {
                        unreachable!("float types have their own parameters")
                    }
                }
            }
            Self::F32 { offset, scale } => floats::<4, f32>(
                direction,
                src,
                out,
                (offset, scale),
                (f32::from_ne_bytes, f32::to_ne_bytes),
                |x, o, s| (x - o) * s,
                |x, o, s| x / s + o,
                f32::is_finite,
            ),
            Self::F64 { offset, scale } => floats::<8, f64>(
                direction,
                src,
                out,
                (offset, scale),
                (f64::from_ne_bytes, f64::to_ne_bytes),
                |x, o, s| (x - o) * s,
                |x, o, s| x / s + o,
                f64::is_finite,
            ),
            // Half precision: each operation in f32, then rounded to the type. f32 has at
            // least 2p + 2 bits for these types' p, so the two roundings give the type's own
            // correctly rounded result.
            Self::F16 { offset, scale } => halves!(f16, offset, scale),
            Self::BF16 { offset, scale } => halves!(bf16, offset, scale),
        }
    }
}

/// The integer kernel: checked arithmetic, stopping at the first element that fails.
#[allow(clippy::too_many_arguments)]
fn ints<const N: usize, T: Copy + std::fmt::Display>(
    direction: Direction,
    src: &[u8],
    out: &mut [u8],
    offset: T,
    scale: T,
    load: fn([u8; N]) -> T,
    store: fn(T) -> [u8; N],
    encode: impl Fn(T, T, T) -> Option<T>,
    decode: impl Fn(T, T, T) -> Option<T>,
) -> std::result::Result<(), (usize, String)> {
    let (src, _) = src.as_chunks::<N>();
    let (dst, _) = out.as_chunks_mut::<N>();
    for (i, (s, d)) in src.iter().zip(dst).enumerate() {
        let x = load(*s);
        let y = match direction {
            Direction::Encode => encode(x, offset, scale).ok_or_else(|| {
                (
                    i,
                    format!("({x} - {offset}) * {scale} is outside the type's range"),
                )
            }),
            Direction::Decode => decode(x, offset, scale).ok_or_else(|| {
                (
                    i,
                    format!(
                        "stored {x} is not a whole multiple of the scale {scale}, or {x} / \
                         {scale} + {offset} is outside the type's range"
                    ),
                )
            }),
        }?;
        *d = store(y);
    }
    Ok(())
}

/// Reading and writing an element of `N` bytes in the machine's order.
type NativeBytes<const N: usize, T> = (fn([u8; N]) -> T, fn(T) -> [u8; N]);

/// The float kernel: IEEE 754 arithmetic in the type; on encoding, a finite element that
/// becomes infinite is an error (found after the loop, which stays branch-free).
#[allow(clippy::too_many_arguments)]
fn floats<const N: usize, T: Copy + std::fmt::Display>(
    direction: Direction,
    src: &[u8],
    out: &mut [u8],
    (offset, scale): (T, T),
    (load, store): NativeBytes<N, T>,
    encode: impl Fn(T, T, T) -> T,
    decode: impl Fn(T, T, T) -> T,
    is_finite: fn(T) -> bool,
) -> std::result::Result<(), (usize, String)> {
    let (src, _) = src.as_chunks::<N>();
    let (dst, _) = out.as_chunks_mut::<N>();
    if direction == Direction::Decode {
        for (s, d) in src.iter().zip(dst) {
            *d = store(decode(load(*s), offset, scale));
        }
        return Ok(());
    }
    let mut overflow = false;
    for (s, d) in src.iter().zip(dst.iter_mut()) {
        let x = load(*s);
        let y = encode(x, offset, scale);
        overflow |= is_finite(x) & !is_finite(y);
        *d = store(y);
    }
    if !overflow {
        return Ok(());
    }
    let i = src
        .iter()
        .zip(dst.iter())
        .position(|(s, d)| is_finite(load(*s)) && !is_finite(load(*d)))
        .expect("an overflowing element");
    let x = load(src[i]);
    Err((
        i,
        format!("({x} - {offset}) * {scale} is outside the type's finite range"),
    ))
}

impl ScaleOffsetCodec {
    /// Apply the codec to a chunk of `decoded`'s data type, naming a failing element.
    fn run(
        &self,
        direction: Direction,
        decoded: &ChunkRepresentation,
        src: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let params = self.params(decoded.data_type())?;
        params
            .apply(direction, src, out)
            .map_err(|(index, reason)| Error::InvalidElement {
                codec: Self::NAME.into(),
                index: index as u64,
                data_type: decoded.data_type().to_string(),
                reason,
            })
    }
}

impl ArrayToArrayCodec for ScaleOffsetCodec {
    fn to_metadata(&self) -> ExtensionObject {
        // Both keys are written (the specification requires them), defaults included.
        let mut map = Map::new();
        map.insert(
            "offset".into(),
            self.offset.clone().unwrap_or(Value::from(0)),
        );
        map.insert("scale".into(), self.scale.clone().unwrap_or(Value::from(1)));
        ExtensionObject::with_configuration(Self::NAME, map)
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        let fill = decoded.fill_value().as_bytes();
        let mut encoded = vec![0u8; fill.len()];
        self.params(decoded.data_type())?
            .apply(Direction::Encode, fill, &mut encoded)
            .map_err(|(_, reason)| {
                Error::incompatible(
                    Self::NAME,
                    format!("the fill value does not encode: {reason}"),
                )
            })?;
        ChunkRepresentation::try_new(
            decoded.shape().to_vec(),
            decoded.data_type().clone(),
            FillValue::new(encoded),
        )
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        array.validate_for(Self::NAME, decoded)?;
        let src = array.into_fixed(Self::NAME)?;
        let mut out = crate::zeroed_bytes(src.len())?;
        self.run(Direction::Encode, decoded, &src, &mut out)?;
        Ok(ArrayBytes::fixed(out))
    }

    fn decode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let mut out = crate::zeroed_bytes(decoded.fixed_size_usize()?)?;
        self.decode_into(array, decoded, &mut out)?;
        Ok(ArrayBytes::fixed(out))
    }

    fn decode_into(
        &self,
        array: ArrayBytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        // The encoded chunk has the decoded chunk's shape and data type; its parameters are
        // checked once, in `run`, not again through `encoded_representation`.
        array.validate_for(Self::NAME, decoded)?;
        let size = decoded.fixed_size_usize()?;
        if out.len() != size {
            return Err(Error::output_size(size, out.len()));
        }
        let src = array.into_fixed(Self::NAME)?;
        self.run(Direction::Decode, decoded, &src, out)
    }

    fn decoded_position(&self, index: u64, _decoded: &ChunkRepresentation) -> Option<u64> {
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CodecChain, CodecRegistry};
    use serde_json::json;

    fn codec(config: Value) -> Result<ScaleOffsetCodec> {
        ScaleOffsetCodec::from_metadata(&ExtensionObject::with_configuration(
            ScaleOffsetCodec::NAME,
            config.as_object().unwrap().clone(),
        ))
    }

    fn repr(n: u64, data_type: DataType) -> ChunkRepresentation {
        let fill = FillValue::default_for(&data_type);
        ChunkRepresentation::try_new(vec![n], data_type, fill).unwrap()
    }

    fn encode(codec: &ScaleOffsetCodec, data_type: DataType, values: Vec<u8>) -> Result<Vec<u8>> {
        let n = (values.len() / data_type.fixed_size().unwrap()) as u64;
        let out = codec.encode(ArrayBytes::fixed(values), &repr(n, data_type))?;
        Ok(out.as_fixed().unwrap().to_vec())
    }

    fn decode(codec: &ScaleOffsetCodec, data_type: DataType, values: Vec<u8>) -> Result<Vec<u8>> {
        let n = (values.len() / data_type.fixed_size().unwrap()) as u64;
        let out = codec.decode(ArrayBytes::fixed(values), &repr(n, data_type))?;
        Ok(out.as_fixed().unwrap().to_vec())
    }

    fn f64s(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    fn i16s(v: &[i16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn floats_subtract_then_multiply_and_decode_back() {
        let c = codec(json!({"offset": 5, "scale": 0.5})).unwrap();
        let stored = encode(&c, DataType::Float64, f64s(&[7.0, 5.0, -3.0, f64::NAN])).unwrap();
        let stored: Vec<f64> = stored
            .as_chunks::<8>()
            .0
            .iter()
            .map(|b| f64::from_ne_bytes(*b))
            .collect();
        assert_eq!(stored[..3], [1.0, 0.0, -4.0]);
        assert!(stored[3].is_nan());
        let back = decode(&c, DataType::Float64, f64s(&stored)).unwrap();
        assert_eq!(back[..24], f64s(&[7.0, 5.0, -3.0])[..]);
        // Infinities pass through both ways.
        let inf = f64s(&[f64::INFINITY, f64::NEG_INFINITY]);
        assert_eq!(encode(&c, DataType::Float64, inf.clone()).unwrap(), inf);
        assert_eq!(decode(&c, DataType::Float64, inf.clone()).unwrap(), inf);
        // float32 computes in float32: 0.1 is the float32 nearest 0.1.
        let c = codec(json!({"offset": 1, "scale": 0.1})).unwrap();
        let x: Vec<u8> = 3.0f32.to_ne_bytes().to_vec();
        let y = encode(&c, DataType::Float32, x).unwrap();
        assert_eq!(
            f32::from_ne_bytes(y[..].try_into().unwrap()),
            2.0f32 * 0.1f32
        );
    }

    #[test]
    fn a_finite_float_that_overflows_on_encoding_is_an_error_naming_it() {
        let c = codec(json!({"offset": 0, "scale": 10})).unwrap();
        let values: Vec<u8> = [1.0f32, f32::INFINITY, 3e38, f32::MAX]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let e = encode(&c, DataType::Float32, values).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 2, codec, .. } if codec == "scale_offset"),
            "{e:?}"
        );
    }

    #[test]
    fn integers_are_exact_or_an_error_never_wrapped() {
        let c = codec(json!({"offset": -3, "scale": 4})).unwrap();
        let stored = encode(&c, DataType::Int16, i16s(&[1, -5, 0])).unwrap();
        assert_eq!(stored, i16s(&[16, -8, 12]));
        assert_eq!(
            decode(&c, DataType::Int16, stored).unwrap(),
            i16s(&[1, -5, 0])
        );
        // (10000 + 3) * 4 does not fit in int16.
        let e = encode(&c, DataType::Int16, i16s(&[0, 10_000])).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 1, .. }),
            "{e:?}"
        );
        // 17 is not a multiple of 4, so no int16 encodes to it.
        let e = decode(&c, DataType::Int16, i16s(&[4, 17])).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 1, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("multiple"), "{e}");
        // Unsigned: 3 - 5 is below zero.
        let c = codec(json!({"offset": 5, "scale": 1})).unwrap();
        let fill5 = ChunkRepresentation::try_new(vec![2], DataType::UInt8, FillValue::new(vec![5]))
            .unwrap();
        let e = c
            .encode(ArrayBytes::fixed(vec![7u8, 3]), &fill5)
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 1, .. }),
            "{e:?}"
        );
        // The one signed division that overflows: -128 / -1.
        let c = codec(json!({"offset": 0, "scale": -1})).unwrap();
        assert_eq!(
            encode(&c, DataType::Int8, vec![5, 0x81]).unwrap(),
            [(-5i8) as u8, 127]
        );
        let e = encode(&c, DataType::Int8, vec![0x80]).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 0, .. }),
            "{e:?}"
        );
        let e = decode(&c, DataType::Int8, vec![1, 0x80]).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 1, .. }),
            "{e:?}"
        );
        // 64-bit extremes.
        let c = codec(json!({"offset": 0, "scale": 2})).unwrap();
        let big = u64::MAX / 2 + 1;
        let e = encode(&c, DataType::UInt64, big.to_ne_bytes().to_vec()).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 0, .. }),
            "{e:?}"
        );
        let ok = (u64::MAX / 2).to_ne_bytes().to_vec();
        let stored = encode(&c, DataType::UInt64, ok.clone()).unwrap();
        assert_eq!(stored, (u64::MAX - 1).to_ne_bytes());
        assert_eq!(decode(&c, DataType::UInt64, stored).unwrap(), ok);
    }

    /// Half-precision arithmetic against a per-operation reference in f64 (whose results,
    /// rounded once to the type, are the type's correctly rounded results), for every
    /// `float16` and `bfloat16` value.
    #[test]
    fn half_precision_rounds_each_operation_to_the_type() {
        for (offset, scale) in [(0.1, 3.0), (-1000.0, 0.01), (7.5, -2.5), (1e-3, 1e3)] {
            let c = ScaleOffsetCodec::try_new(offset, scale).unwrap();
            let all: Vec<u16> = (0..=u16::MAX).collect();
            let bytes: Vec<u8> = all.iter().flat_map(|b| b.to_ne_bytes()).collect();
            let n = all.len() as u64;
            let check = |data_type: DataType, to: fn(u16) -> f64, from: fn(f64) -> u16| {
                let o = to(from(offset));
                let s = to(from(scale));
                let r = repr(n, data_type.clone());
                let half = |v: f64| to(from(v));
                // Encoding: an error exactly when a finite value overflows.
                match c.encode(ArrayBytes::fixed(bytes.clone()), &r) {
                    Ok(out) => {
                        for (i, b) in out
                            .as_fixed()
                            .unwrap()
                            .as_chunks::<2>()
                            .0
                            .iter()
                            .enumerate()
                        {
                            let x = to(all[i]);
                            let want = half(half(x - o) * s);
                            let got = to(u16::from_ne_bytes(*b));
                            assert!(
                                got == want || (got.is_nan() && want.is_nan()),
                                "{data_type} encode {x} ({o}, {s}): {got} != {want}"
                            );
                        }
                    }
                    Err(Error::InvalidElement { index, .. }) => {
                        let x = to(all[index as usize]);
                        assert!(x.is_finite() && !half(half(x - o) * s).is_finite());
                    }
                    Err(e) => panic!("{e:?}"),
                }
                let out = c.decode(ArrayBytes::fixed(bytes.clone()), &r).unwrap();
                for (i, b) in out
                    .as_fixed()
                    .unwrap()
                    .as_chunks::<2>()
                    .0
                    .iter()
                    .enumerate()
                {
                    let x = to(all[i]);
                    let want = half(half(x / s) + o);
                    let got = to(u16::from_ne_bytes(*b));
                    assert!(
                        got == want || (got.is_nan() && want.is_nan()),
                        "{data_type} decode {x} ({o}, {s}): {got} != {want}"
                    );
                }
            };
            check(
                DataType::Float16,
                |b| f16::from_bits(b).to_f64(),
                |v| f16::from_f64(v).to_bits(),
            );
            check(
                DataType::BFloat16,
                |b| bf16::from_bits(b).to_f64(),
                |v| bf16::from_f64(v).to_bits(),
            );
        }
    }

    #[test]
    fn the_fill_value_is_encoded_and_must_encode() {
        let c = codec(json!({"offset": 273.15, "scale": 100})).unwrap();
        let r =
            ChunkRepresentation::try_new(vec![3], DataType::Float64, FillValue::from(273.15f64))
                .unwrap();
        let encoded = c.encoded_representation(&r).unwrap();
        assert_eq!(encoded.fill_value().as_bytes(), 0.0f64.to_ne_bytes());
        assert_eq!(encoded.data_type(), &DataType::Float64);
        // uint8 with the default fill value 0 and an offset of 5: 0 - 5 does not fit.
        let c = codec(json!({"offset": 5, "scale": 1})).unwrap();
        let e = c
            .encoded_representation(&repr(3, DataType::UInt8))
            .unwrap_err();
        assert!(
            matches!(&e, Error::IncompatibleRepresentation { .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("fill value"), "{e}");
    }

    #[test]
    fn configuration_is_checked_against_the_data_type() {
        let refused = |config: Value, data_type: DataType| {
            let c = codec(config.clone()).unwrap();
            let e = c.encoded_representation(&repr(1, data_type)).unwrap_err();
            assert!(
                matches!(&e, Error::IncompatibleRepresentation { .. }),
                "{config}: {e:?}"
            );
            e.to_string()
        };
        assert!(refused(json!({"offset": 0, "scale": 0}), DataType::Float32).contains("zero"));
        assert!(
            refused(json!({"offset": "NaN", "scale": 1}), DataType::Float32).contains("finite")
        );
        assert!(
            refused(json!({"offset": 0, "scale": "Infinity"}), DataType::Float64)
                .contains("finite")
        );
        assert!(refused(json!({"offset": 0, "scale": 0.1}), DataType::Int32).contains("`scale`"));
        assert!(refused(json!({"offset": -1, "scale": 2}), DataType::UInt16).contains("`offset`"));
        assert!(
            refused(json!({"offset": 0, "scale": 2}), DataType::Complex64).contains("complex64")
        );
        assert!(refused(json!({"offset": 0, "scale": 2}), DataType::Bool).contains("bool"));
        // Hex fill-value encoding: 0x40000000 is 2.0f32.
        let c = codec(json!({"offset": 0, "scale": "0x40000000"})).unwrap();
        let y = encode(&c, DataType::Float32, 1.5f32.to_ne_bytes().to_vec()).unwrap();
        assert_eq!(y, 3.0f32.to_ne_bytes());
        // Malformed configurations fail to parse.
        for bad in [
            json!({"offset": 0, "scale": 1, "astype": "u1"}),
            json!({"offset": true, "scale": 1}),
            json!({"offset": 0, "scale": [1]}),
        ] {
            let e = codec(bad.clone()).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidConfiguration { .. }),
                "{bad}: {e:?}"
            );
        }
    }

    #[test]
    fn defaults_when_read_and_both_keys_when_written() {
        let bare = ScaleOffsetCodec::from_metadata(&ExtensionObject::new("scale_offset")).unwrap();
        let values = i16s(&[3, -7]);
        assert_eq!(
            encode(&bare, DataType::Int16, values.clone()).unwrap(),
            values
        );
        assert_eq!(
            bare.to_metadata().to_json(),
            json!({"name": "scale_offset", "configuration": {"offset": 0, "scale": 1}})
        );
        let only_scale = codec(json!({"scale": 3})).unwrap();
        assert_eq!(
            encode(&only_scale, DataType::Int16, values).unwrap(),
            i16s(&[9, -21])
        );
        // What is given is written back as given.
        let c = codec(json!({"offset": "0x3f800000", "scale": 0.25})).unwrap();
        assert_eq!(
            c.to_metadata().to_json(),
            json!({"name": "scale_offset", "configuration": {"offset": "0x3f800000", "scale": 0.25}})
        );
    }

    /// The zarr-extensions specification defines `numcodecs.fixedscaleoffset` as
    /// `scale_offset` followed by a `cast_value` that wraps: both chains store the same bytes
    /// (numcodecs rounds ties to even, `cast_value`'s default) and read the same values.
    #[test]
    fn scale_offset_then_cast_value_stores_what_fixedscaleoffset_stores() {
        let registry = CodecRegistry::with_defaults();
        let decoded =
            ChunkRepresentation::try_new(vec![6], DataType::Float64, FillValue::from(10.0f64))
                .unwrap();
        let chain = |json: Value| {
            let metadata: Vec<ExtensionObject> = json
                .as_array()
                .unwrap()
                .iter()
                .map(|c| ExtensionObject::from_json(c, "codecs").unwrap())
                .collect();
            CodecChain::from_metadata(&metadata, decoded.clone(), &registry).unwrap()
        };
        let legacy = chain(json!([
            {"name": "numcodecs.fixedscaleoffset", "configuration":
                {"offset": 10, "scale": 4, "dtype": "<f8", "astype": "|u1"}},
            {"name": "bytes"}
        ]));
        let modern = chain(json!([
            {"name": "scale_offset", "configuration": {"offset": 10, "scale": 4}},
            {"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "wrap"}},
            {"name": "bytes"}
        ]));
        let values = f64s(&[10.0, 10.125, 10.375, 13.3, 73.7, 11.0]);
        let stored = legacy.encode(ArrayBytes::fixed(values.clone())).unwrap();
        assert_eq!(stored[..], [0, 0, 2, 13, 255, 4]);
        assert_eq!(modern.encode(ArrayBytes::fixed(values)).unwrap(), stored);
        assert_eq!(
            legacy.decode(stored.clone()).unwrap().as_fixed(),
            modern.decode(stored).unwrap().as_fixed()
        );
    }
}
