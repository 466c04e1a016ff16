//! numcodecs' numeric filters as array->array codecs: `numcodecs.delta`,
//! `numcodecs.fixedscaleoffset`, `numcodecs.bitround`, `numcodecs.quantize` and
//! `numcodecs.astype`.

use zarr_core::{DataType, ExtensionObject, FillValue};

use super::{NumType, Scalar, float, num_type};
use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToArrayCodec;
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// Which numcodecs filter a [`NumericFilterCodec`] applies, with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum NumericFilter {
    /// `numcodecs.delta`: the first element, then each element minus the one before it (in C
    /// order of the chunk), computed in `dtype` and stored as `astype`. Integers wrap.
    Delta {
        /// The array's element type.
        dtype: DataType,
        /// The encoded element type.
        astype: DataType,
    },
    /// `numcodecs.fixedscaleoffset`: `round((x - offset) * scale)` stored as `astype`;
    /// decoding computes `y / scale + offset`.
    FixedScaleOffset {
        /// The array's element type.
        dtype: DataType,
        /// The encoded element type.
        astype: DataType,
        /// The scale.
        scale: f64,
        /// The offset.
        offset: f64,
    },
    /// `numcodecs.bitround`: floats with their mantissa rounded to `keepbits` bits (lossy;
    /// decoding changes nothing).
    BitRound {
        /// Mantissa bits kept.
        keepbits: u32,
    },
    /// `numcodecs.quantize`: floats rounded to a power-of-two step fine enough for `digits`
    /// decimal digits (lossy; decoding only converts `astype` back to `dtype`).
    Quantize {
        /// Decimal digits kept.
        digits: i32,
        /// The array's element type.
        dtype: DataType,
        /// The encoded element type.
        astype: DataType,
    },
    /// `numcodecs.astype`: elements converted to `encode_dtype` as numpy's `astype` does.
    AsType {
        /// The array's element type.
        decode_dtype: DataType,
        /// The encoded element type.
        encode_dtype: DataType,
    },
}

/// numcodecs' numeric filters (array->array), as zarr-python 3 writes them in v3 metadata and
/// as Zarr v2 `filters` name them: see [`NumericFilter`] for each. They compute what numcodecs'
/// Python code computes, element by element, so values round-trip with zarr-python.
///
/// Configuration, numcodecs' keys with numpy type strings (`"<i4"`, `"uint16"`):
/// - `numcodecs.delta`: `dtype`, `astype` (default `dtype`); integer to integer, or one
///   float type to itself;
/// - `numcodecs.fixedscaleoffset`: `scale`, `offset`, `dtype`, `astype` (default `dtype`);
///   `dtype` may be left out and is then the array's type (as zarr-python does);
/// - `numcodecs.bitround`: `keepbits` (at most 10, 23 or 52 for `float16`, `float32`,
///   `float64`);
/// - `numcodecs.quantize`: `digits`, `dtype`, `astype` (default `dtype`); `float32` and
///   `float64`;
/// - `numcodecs.astype`: `encode_dtype`, `decode_dtype` (default the array's type).
///
/// The filter's `dtype` must be the array's data type, checked when the chain is built. The
/// encoded data type is `astype`. A value that does not fit its target integer type (NaN,
/// or out of range), which numpy leaves undefined, is an error.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToArrayCodec, ChunkRepresentation, NumericFilterCodec};
/// use zarr_core::{DataType, ExtensionObject, FillValue};
///
/// let json = serde_json::json!({"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}});
/// let metadata = ExtensionObject::from_json(&json, "codecs[0]")?;
/// let codec = NumericFilterCodec::from_metadata(&metadata, &DataType::Int32)?;
/// let repr = ChunkRepresentation::try_new(vec![4], DataType::Int32, FillValue::new([0; 4]))?;
/// let values: Vec<u8> = [10i32, 12, 15, 15].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let encoded = codec.encode(ArrayBytes::fixed(values.clone()), &repr)?;
/// let deltas: Vec<u8> = [10i32, 2, 3, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// assert_eq!(encoded.as_fixed().unwrap().as_ref(), &deltas[..]);
/// let decoded = codec.decode(encoded, &repr)?;
/// assert_eq!(decoded.as_fixed().unwrap().as_ref(), &values[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NumericFilterCodec {
    filter: NumericFilter,
    /// The metadata this codec was read from, written back unchanged.
    metadata: ExtensionObject,
}

/// The names of the codecs [`NumericFilterCodec`] reads.
pub const NUMERIC_FILTER_NAMES: [&str; 5] = [
    "numcodecs.delta",
    "numcodecs.fixedscaleoffset",
    "numcodecs.bitround",
    "numcodecs.quantize",
    "numcodecs.astype",
];

fn num(data_type: &DataType, codec: &str) -> Result<NumType> {
    NumType::of(data_type).ok_or_else(|| {
        Error::incompatible(
            codec,
            format!("it takes integer or float elements, not {data_type}"),
        )
    })
}

impl NumericFilterCodec {
    /// The filter and its parameters.
    pub fn filter(&self) -> &NumericFilter {
        &self.filter
    }

    /// Parse the codec's metadata for an array (or inner chunk) of `data_type`, which fills
    /// in a `dtype` the configuration leaves out where numcodecs allows that.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing, unknown or malformed key, or a type
    /// pair the filter does not support, or a name that is not one of
    /// [`NUMERIC_FILTER_NAMES`].
    pub fn from_metadata(metadata: &ExtensionObject, data_type: &DataType) -> Result<Self> {
        let name = metadata.name.as_str();
        let dtype_or = |config: &Config<'_>, key: &str| -> Result<NumType> {
            match config.get(key) {
                Some(v) => num_type(config, key, v),
                None => num(data_type, name),
            }
        };
        let astype_or = |config: &Config<'_>, key: &str, dtype: NumType| -> Result<NumType> {
            match config.get(key) {
                Some(v) => num_type(config, key, v),
                None => Ok(dtype),
            }
        };
        let filter = match name {
            "numcodecs.delta" => {
                let config = Config::new(metadata, &["dtype", "astype"])?;
                let dtype = num_type(&config, "dtype", config.required("dtype")?)?;
                let astype = astype_or(&config, "astype", dtype)?;
                let ints = !dtype.is_float() && !astype.is_float();
                if !ints && dtype != astype {
                    return Err(Error::config(
                        name,
                        format!(
                            "delta from {} to {} is not supported: integer to integer, or a \
                             float type to itself",
                            dtype.typestr(),
                            astype.typestr()
                        ),
                    ));
                }
                NumericFilter::Delta {
                    dtype: dtype.data_type(),
                    astype: astype.data_type(),
                }
            }
            "numcodecs.fixedscaleoffset" => {
                let config = Config::new(metadata, &["scale", "offset", "dtype", "astype"])?;
                let scale = float(&config, "scale", config.required("scale")?)?;
                let offset = float(&config, "offset", config.required("offset")?)?;
                let dtype = dtype_or(&config, "dtype")?;
                let astype = astype_or(&config, "astype", dtype)?;
                if dtype == NumType::F16 || astype == NumType::F16 {
                    return Err(Error::config(name, "float16 is not supported"));
                }
                NumericFilter::FixedScaleOffset {
                    dtype: dtype.data_type(),
                    astype: astype.data_type(),
                    scale,
                    offset,
                }
            }
            "numcodecs.bitround" => {
                let config = Config::new(metadata, &["keepbits"])?;
                let keepbits = config.int_in("keepbits", config.required("keepbits")?, 0..=52)?;
                NumericFilter::BitRound {
                    keepbits: keepbits as u32,
                }
            }
            "numcodecs.quantize" => {
                let config = Config::new(metadata, &["digits", "dtype", "astype"])?;
                let digits = config.int_in("digits", config.required("digits")?, -300..=300)?;
                let dtype = dtype_or(&config, "dtype")?;
                let astype = astype_or(&config, "astype", dtype)?;
                for t in [dtype, astype] {
                    if !matches!(t, NumType::F32 | NumType::F64) {
                        return Err(Error::config(
                            name,
                            format!("it takes float32 and float64, not {}", t.typestr()),
                        ));
                    }
                }
                NumericFilter::Quantize {
                    digits: digits as i32,
                    dtype: dtype.data_type(),
                    astype: astype.data_type(),
                }
            }
            "numcodecs.astype" => {
                let config = Config::new(metadata, &["encode_dtype", "decode_dtype"])?;
                let encode = num_type(&config, "encode_dtype", config.required("encode_dtype")?)?;
                let decode = dtype_or(&config, "decode_dtype")?;
                NumericFilter::AsType {
                    decode_dtype: decode.data_type(),
                    encode_dtype: encode.data_type(),
                }
            }
            other => {
                return Err(Error::config(
                    other,
                    format!("not a numcodecs numeric filter (one of {NUMERIC_FILTER_NAMES:?})"),
                ));
            }
        };
        Ok(Self {
            filter,
            metadata: metadata.clone(),
        })
    }

    /// A codec for `filter`, with numcodecs' metadata for it.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for parameters the filter does not support (a type that
    /// is not an integer or float, a type pair it cannot convert between).
    pub fn new(filter: NumericFilter) -> Result<Self> {
        let t = |d: &DataType| -> Result<serde_json::Value> {
            Ok(num(d, "numcodecs")?.typestr().into())
        };
        let metadata = match &filter {
            NumericFilter::Delta { dtype, astype } => ExtensionObject::with_configuration(
                "numcodecs.delta",
                config::map([("dtype", t(dtype)?), ("astype", t(astype)?)]),
            ),
            NumericFilter::FixedScaleOffset {
                dtype,
                astype,
                scale,
                offset,
            } => ExtensionObject::with_configuration(
                "numcodecs.fixedscaleoffset",
                config::map([
                    ("scale", (*scale).into()),
                    ("offset", (*offset).into()),
                    ("dtype", t(dtype)?),
                    ("astype", t(astype)?),
                ]),
            ),
            NumericFilter::BitRound { keepbits } => ExtensionObject::with_configuration(
                "numcodecs.bitround",
                config::map([("keepbits", (*keepbits).into())]),
            ),
            NumericFilter::Quantize {
                digits,
                dtype,
                astype,
            } => ExtensionObject::with_configuration(
                "numcodecs.quantize",
                config::map([
                    ("digits", (*digits).into()),
                    ("dtype", t(dtype)?),
                    ("astype", t(astype)?),
                ]),
            ),
            NumericFilter::AsType {
                decode_dtype,
                encode_dtype,
            } => ExtensionObject::with_configuration(
                "numcodecs.astype",
                config::map([
                    ("encode_dtype", t(encode_dtype)?),
                    ("decode_dtype", t(decode_dtype)?),
                ]),
            ),
        };
        // Parse it back: one place checks every parameter.
        let any = DataType::Float64;
        Self::from_metadata(&metadata, &any)
    }

    fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The decoded and encoded element types for a chunk of `data_type`.
    fn types(&self, data_type: &DataType) -> Result<(NumType, NumType)> {
        let found = num(data_type, self.name())?;
        let (dtype, astype) = match &self.filter {
            NumericFilter::Delta { dtype, astype }
            | NumericFilter::FixedScaleOffset { dtype, astype, .. }
            | NumericFilter::Quantize { dtype, astype, .. } => {
                (num(dtype, self.name())?, num(astype, self.name())?)
            }
            NumericFilter::AsType {
                decode_dtype,
                encode_dtype,
            } => (
                num(decode_dtype, self.name())?,
                num(encode_dtype, self.name())?,
            ),
            NumericFilter::BitRound { keepbits } => {
                let bits = match found {
                    NumType::F16 => 10,
                    NumType::F32 => 23,
                    NumType::F64 => 52,
                    _ => {
                        return Err(Error::incompatible(
                            self.name(),
                            format!("it rounds float16, float32 and float64, not {data_type}"),
                        ));
                    }
                };
                if *keepbits > bits {
                    return Err(Error::incompatible(
                        self.name(),
                        format!(
                            "keepbits {keepbits} exceeds the {bits} mantissa bits of {data_type}"
                        ),
                    ));
                }
                (found, found)
            }
        };
        if dtype != found {
            return Err(Error::incompatible(
                self.name(),
                format!(
                    "its dtype {} is not the chunk's data type {data_type}",
                    dtype.typestr()
                ),
            ));
        }
        Ok((dtype, astype))
    }

    /// Encode `n` elements of `from` (`src`) into elements of `to`.
    fn encode_values(&self, src: &[u8], from: NumType, to: NumType) -> Result<Vec<u8>> {
        let n = src.len() / from.size();
        let mut out = vec![0u8; n * to.size()];
        match self.filter {
            NumericFilter::Delta { .. } => {
                if from.is_float() {
                    let mut prev = 0.0;
                    for i in 0..n {
                        let x = from.load(src, i).as_f64();
                        let d = if i == 0 { x } else { round_to(from, x - prev) };
                        to.store(Scalar::Float(d), &mut out, i)?;
                        prev = x;
                    }
                } else {
                    let mut prev = 0;
                    for i in 0..n {
                        let x = from.load(src, i).as_i128();
                        to.store(Scalar::Int(from.wrap(x - prev)), &mut out, i)?;
                        prev = x;
                    }
                }
            }
            NumericFilter::FixedScaleOffset { scale, offset, .. } => {
                for i in 0..n {
                    let x = from.load(src, i).as_f64();
                    let v = if from == NumType::F32 {
                        let (x, offset, scale) = (x as f32, offset as f32, scale as f32);
                        f64::from(((x - offset) * scale).round_ties_even())
                    } else {
                        ((x - offset) * scale).round_ties_even()
                    };
                    to.store(Scalar::Float(v), &mut out, i)?;
                }
            }
            NumericFilter::BitRound { keepbits } => {
                let bits = match from {
                    NumType::F16 => 10,
                    NumType::F32 => 23,
                    _ => 52,
                };
                let width = from.size() * 8;
                let maskbits = bits - keepbits;
                for (s, o) in src
                    .chunks_exact(from.size())
                    .zip(out.chunks_exact_mut(from.size()))
                {
                    let b = signed_bits(s);
                    let rounded = if maskbits == 0 {
                        b
                    } else {
                        let mask = -1i64 << maskbits;
                        let half_quantum1 = (1i64 << (maskbits - 1)) - 1;
                        b.wrapping_add(((b >> maskbits) & 1) + half_quantum1) & mask
                    };
                    let bytes = rounded.to_ne_bytes();
                    if cfg!(target_endian = "little") {
                        o.copy_from_slice(&bytes[..width / 8]);
                    } else {
                        o.copy_from_slice(&bytes[8 - width / 8..]);
                    }
                }
            }
            NumericFilter::Quantize { digits, .. } => {
                let precision = 10f64.powf(-f64::from(digits));
                let exp = precision.log10();
                let exp = if exp < 0.0 { exp.floor() } else { exp.ceil() };
                let bits = 10f64.powf(-exp).log2().ceil();
                let scale = 2f64.powf(bits);
                for i in 0..n {
                    let x = from.load(src, i).as_f64();
                    let v = if from == NumType::F32 {
                        let scale = scale as f32;
                        f64::from((scale * x as f32).round_ties_even() / scale)
                    } else {
                        (scale * x).round_ties_even() / scale
                    };
                    to.store(Scalar::Float(v), &mut out, i)?;
                }
            }
            NumericFilter::AsType { .. } => {
                for i in 0..n {
                    to.store(from.load(src, i), &mut out, i)?;
                }
            }
        }
        Ok(out)
    }

    /// Decode `n` elements of `from` (the encoded type, `src`) into elements of `to`.
    fn decode_values(&self, src: &[u8], from: NumType, to: NumType, out: &mut [u8]) -> Result<()> {
        let n = src.len() / from.size();
        match self.filter {
            NumericFilter::Delta { .. } => {
                if from.is_float() {
                    let mut acc = 0.0;
                    for i in 0..n {
                        acc = round_to(to, acc + from.load(src, i).as_f64());
                        to.store(Scalar::Float(acc), out, i)?;
                    }
                } else {
                    let mut acc = 0;
                    for i in 0..n {
                        let d = from.load(src, i).as_i128();
                        acc = to.wrap(acc + to.wrap(d));
                        to.store(Scalar::Int(acc), out, i)?;
                    }
                }
            }
            NumericFilter::FixedScaleOffset { scale, offset, .. } => {
                for i in 0..n {
                    let y = from.load(src, i).as_f64();
                    let v = if from == NumType::F32 {
                        f64::from(y as f32 / scale as f32 + offset as f32)
                    } else {
                        y / scale + offset
                    };
                    to.store(Scalar::Float(v), out, i)?;
                }
            }
            NumericFilter::BitRound { .. } => out.copy_from_slice(src),
            NumericFilter::Quantize { .. } | NumericFilter::AsType { .. } => {
                for i in 0..n {
                    to.store(from.load(src, i), out, i)?;
                }
            }
        }
        Ok(())
    }

    /// The encoded fill value: the fill value encoded as a one-element chunk, or zero when
    /// it has no encoding (a NaN fill value under an integer `astype`).
    fn encoded_fill(&self, fill: &FillValue, from: NumType, to: NumType) -> FillValue {
        self.encode_values(fill.as_bytes(), from, to)
            .map(FillValue::new)
            .unwrap_or_else(|_| FillValue::new(vec![0u8; to.size()]))
    }
}

/// An error of the shared element conversions, renamed to the codec that hit it.
fn named(e: Error, codec: &str) -> Error {
    match e {
        Error::InvalidElement {
            index,
            data_type,
            reason,
            ..
        } => Error::InvalidElement {
            codec: codec.to_owned(),
            index,
            data_type,
            reason,
        },
        other => other,
    }
}

/// A float rounded to the precision of a float type (as numpy computes in that type).
fn round_to(t: NumType, x: f64) -> f64 {
    match t {
        NumType::F32 => f64::from(x as f32),
        NumType::F16 => half::f16::from_f64(x).to_f64(),
        _ => x,
    }
}

/// The bits of a 2-, 4- or 8-byte element as a sign-extended `i64`.
fn signed_bits(b: &[u8]) -> i64 {
    match b.len() {
        2 => i64::from(i16::from_ne_bytes([b[0], b[1]])),
        4 => i64::from(i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        _ => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            i64::from_ne_bytes(a)
        }
    }
}

impl NumType {
    /// An integer wrapped into this integer type's range (two's complement).
    fn wrap(self, v: i128) -> i128 {
        let bits = self.size() as u32 * 8;
        let low = v & ((1i128 << bits) - 1);
        if self.is_signed() && low >= 1i128 << (bits - 1) {
            low - (1i128 << bits)
        } else {
            low
        }
    }
}

impl ArrayToArrayCodec for NumericFilterCodec {
    fn to_metadata(&self) -> ExtensionObject {
        self.metadata.clone()
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        let (from, to) = self.types(decoded.data_type())?;
        let fill = self.encoded_fill(decoded.fill_value(), from, to);
        ChunkRepresentation::try_new(decoded.shape().to_vec(), to.data_type(), fill)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let (from, to) = self.types(decoded.data_type())?;
        array.validate_for(self.name(), decoded)?;
        let bytes = array.into_fixed(self.name())?;
        let encoded = self
            .encode_values(&bytes, from, to)
            .map_err(|e| named(e, self.name()))?;
        Ok(ArrayBytes::fixed(encoded))
    }

    fn decoded_position(&self, index: u64, _decoded: &ChunkRepresentation) -> Option<u64> {
        // Every numcodecs filter here maps element i to element i.
        Some(index)
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
        let encoded = self.encoded_representation(decoded)?;
        array.validate_for(self.name(), &encoded)?;
        let bytes = array.into_fixed(self.name())?;
        let (from, to) = (
            num(encoded.data_type(), self.name())?,
            num(decoded.data_type(), self.name())?,
        );
        if out.len() != decoded.fixed_size_usize()? {
            return Err(Error::output_size(decoded.fixed_size_usize()?, out.len()));
        }
        self.decode_values(&bytes, from, to, out)
            .map_err(|e| named(e, self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> ExtensionObject {
        ExtensionObject::from_json(&serde_json::from_str(json).unwrap(), "codec").unwrap()
    }

    fn codec(json: &str, data_type: DataType) -> NumericFilterCodec {
        NumericFilterCodec::from_metadata(&parse(json), &data_type).unwrap()
    }

    fn repr(n: u64, data_type: DataType) -> ChunkRepresentation {
        let fill = FillValue::default_for(&data_type);
        ChunkRepresentation::try_new(vec![n], data_type, fill).unwrap()
    }

    fn ne<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        values.iter().flat_map(|&v| f(v)).collect()
    }

    fn round_trip(c: &NumericFilterCodec, r: &ChunkRepresentation, values: Vec<u8>) -> Vec<u8> {
        let enc = c.encode(ArrayBytes::fixed(values), r).unwrap();
        let enc_bytes = enc.as_fixed().unwrap().to_vec();
        c.decode(enc, r).unwrap();
        enc_bytes
    }

    #[test]
    fn delta_wraps_and_narrows() {
        let c = codec(
            r#"{"name": "numcodecs.delta", "configuration": {"dtype": "<u2", "astype": "|i1"}}"#,
            DataType::UInt16,
        );
        let r = repr(4, DataType::UInt16);
        let values = ne(&[65530u16, 65535, 3, 1], u16::to_ne_bytes);
        let enc = round_trip(&c, &r, values.clone());
        // 65530 -> i8 wraps to -6; 5; 65535 -> 3 wraps to +4; -2.
        assert_eq!(enc, [(-6i8) as u8, 5, 4, (-2i8) as u8]);
        let dec = c.decode(ArrayBytes::fixed(enc), &r).unwrap();
        assert_eq!(dec.as_fixed().unwrap().as_ref(), &values[..]);
        assert_eq!(
            c.encoded_representation(&r).unwrap().data_type(),
            &DataType::Int8
        );
        // The filter's dtype must be the chunk's.
        assert!(c.encoded_representation(&repr(4, DataType::Int16)).is_err());
    }

    #[test]
    fn delta_on_floats() {
        let c = codec(
            r#"{"name": "numcodecs.delta", "configuration": {"dtype": "<f4"}}"#,
            DataType::Float32,
        );
        let r = repr(3, DataType::Float32);
        let values = ne(&[1.5f32, 0.25, 1e10], f32::to_ne_bytes);
        let enc = round_trip(&c, &r, values.clone());
        assert_eq!(
            enc,
            ne(&[1.5f32, 0.25 - 1.5, 1e10 - 0.25], f32::to_ne_bytes)
        );
        let meta = parse(
            r#"{"name": "numcodecs.delta", "configuration": {"dtype": "<f8", "astype": "<i4"}}"#,
        );
        assert!(NumericFilterCodec::from_metadata(&meta, &DataType::Float64).is_err());
    }

    #[test]
    fn fixed_scale_offset_matches_numpy() {
        // numcodecs.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="u1"):
        // [1000, 1000.1, 1012.34, 1025.5] encodes to [0, 1, 123, 255].
        let c = codec(
            r#"{"name": "numcodecs.fixedscaleoffset", "configuration":
                {"offset": 1000, "scale": 10, "dtype": "<f8", "astype": "|u1"}}"#,
            DataType::Float64,
        );
        let r = repr(4, DataType::Float64);
        let enc = round_trip(
            &c,
            &r,
            ne(&[1000.0f64, 1000.1, 1012.34, 1025.5], f64::to_ne_bytes),
        );
        assert_eq!(enc, [0, 1, 123, 255]);
        let dec = c.decode(ArrayBytes::fixed(enc), &r).unwrap();
        assert_eq!(
            dec.as_fixed().unwrap().as_ref(),
            &ne(
                &[0.0f64, 1.0, 123.0, 255.0].map(|y| y / 10.0 + 1000.0),
                f64::to_ne_bytes
            )[..]
        );
        // Out of the range of u1: an error, not a wrapped value.
        let e = c
            .encode(ArrayBytes::fixed(ne(&[2000.0f64; 4], f64::to_ne_bytes)), &r)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidElement { .. }), "{e}");
        assert!(e.to_string().contains("numcodecs.fixedscaleoffset"), "{e}");
        // `dtype` left out: the array's.
        let c = codec(
            r#"{"name": "numcodecs.fixedscaleoffset", "configuration": {"offset": 0, "scale": 2}}"#,
            DataType::Int32,
        );
        assert!(matches!(
            c.filter(),
            NumericFilter::FixedScaleOffset {
                dtype: DataType::Int32,
                astype: DataType::Int32,
                ..
            }
        ));
    }

    #[test]
    fn bitround_and_quantize() {
        let c = codec(
            r#"{"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}"#,
            DataType::Float32,
        );
        let r = repr(2, DataType::Float32);
        // 1 + 2^-3 + 2^-4 (binary 1.0011) keeps 3 bits: rounds up to 1.010 = 1.25.
        let enc = round_trip(&c, &r, ne(&[1.1875f32, -3.0], f32::to_ne_bytes));
        assert_eq!(enc, ne(&[1.25f32, -3.0], f32::to_ne_bytes));
        assert!(
            codec(
                r#"{"name": "numcodecs.bitround", "configuration": {"keepbits": 30}}"#,
                DataType::Float32
            )
            .encoded_representation(&r)
            .is_err()
        );
        let c = codec(
            r#"{"name": "numcodecs.quantize", "configuration": {"digits": 1, "dtype": "<f8"}}"#,
            DataType::Float64,
        );
        // digits 1: step 2^-4 (2.6182 * 16 = 41.89 rounds to 42).
        let enc = round_trip(
            &c,
            &repr(2, DataType::Float64),
            ne(&[0.1f64, 2.6182], f64::to_ne_bytes),
        );
        assert_eq!(enc, ne(&[0.125f64, 42.0 / 16.0], f64::to_ne_bytes));
    }

    #[test]
    fn astype_and_new() {
        let c = NumericFilterCodec::new(NumericFilter::AsType {
            decode_dtype: DataType::Float64,
            encode_dtype: DataType::Float32,
        })
        .unwrap();
        let r = repr(2, DataType::Float64);
        let enc = round_trip(&c, &r, ne(&[0.5f64, 1e300], f64::to_ne_bytes));
        assert_eq!(enc, ne(&[0.5f32, f32::INFINITY], f32::to_ne_bytes));
        assert_eq!(c.to_metadata().name, "numcodecs.astype");
        let back = NumericFilterCodec::from_metadata(&c.to_metadata(), &DataType::Float64).unwrap();
        assert_eq!(back, c);
        let bad = parse(r#"{"name": "numcodecs.delta", "configuration": {"dtype": "<c8"}}"#);
        assert!(NumericFilterCodec::from_metadata(&bad, &DataType::Float32).is_err());
    }
}
