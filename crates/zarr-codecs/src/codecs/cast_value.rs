//! The `cast_value` codec (zarr-extensions): numbers converted to another numeric data type
//! by value, with a rounding mode, an out-of-range policy and optional exact substitutions.

use half::f16;
use serde_json::{Map, Value};
use zarr_core::{DataType, ExtensionObject, FillValue};

use super::numcodecs::{NumType, Scalar};
use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToArrayCodec;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// How a value that falls between two values of the target type is rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Rounding {
    /// To the nearest, ties to even (`"nearest-even"`, the default).
    #[default]
    NearestEven,
    /// Towards zero (`"towards-zero"`).
    TowardsZero,
    /// Towards positive infinity (`"towards-positive"`).
    TowardsPositive,
    /// Towards negative infinity (`"towards-negative"`).
    TowardsNegative,
    /// To the nearest, ties away from zero (`"nearest-away"`).
    NearestAway,
}

impl Rounding {
    const NAMES: [(&'static str, Self); 5] = [
        ("nearest-even", Self::NearestEven),
        ("towards-zero", Self::TowardsZero),
        ("towards-positive", Self::TowardsPositive),
        ("towards-negative", Self::TowardsNegative),
        ("nearest-away", Self::NearestAway),
    ];

    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, r)| *r == self)
            .expect("listed")
            .0
    }

    /// `x` rounded to an integer.
    fn to_integer(self, x: f64) -> f64 {
        match self {
            Self::NearestEven => x.round_ties_even(),
            Self::TowardsZero => x.trunc(),
            Self::TowardsPositive => x.ceil(),
            Self::TowardsNegative => x.floor(),
            Self::NearestAway => x.round(),
        }
    }
}

/// What happens to a value outside the target type's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutOfRange {
    /// The chunk fails to encode or decode (`"error"`, the default).
    #[default]
    Error,
    /// The value becomes the type's minimum or maximum (`"clamp"`).
    Clamp,
    /// The value wraps around modulo the number of values of the type (`"wrap"`; integer
    /// targets only).
    Wrap,
}

/// Substitutions applied before casting, in one direction: each `(source, target)` pair
/// turns elements equal to `source` (NaN matches NaN) into `target`, in order.
type ScalarMap = Vec<(Scalar, Scalar)>;

/// The `cast_value` codec (array->array, zarr-extensions): each element converted by value
/// to `data_type`, as the zarr-developers `cast-value` package does for zarr-python. The
/// usual use is lossy compression: floats stored as small integers, often after a scale.
///
/// Configuration:
/// - `data_type` (required): the encoded type, an integer or float type (`int8` to
///   `uint64`, `float16`, `float32`, `float64`), as is the array's;
/// - `rounding`: `"nearest-even"` (default), `"towards-zero"`, `"towards-positive"`,
///   `"towards-negative"` or `"nearest-away"`, for floats to integers and for numbers a float
///   type cannot hold exactly;
/// - `out_of_range`: `"error"` (default, also when absent), `"clamp"` (to the type's
///   minimum or maximum; a float type's largest finite values) or `"wrap"` (integers
///   modulo 2^bits; integer targets only);
/// - `scalar_map`: `{"encode": [[source, target], ...], "decode": [...]}`, exact
///   substitutions made before casting, each value written as a fill value of its side's
///   data type: `{"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}` stores NaN as 0.
///
/// Decoding casts back to the array's type with the same `rounding` and `out_of_range` and
/// the `decode` map. NaN or an infinity cast to an integer type is always an error, unless
/// the map replaces it first. The fill value is cast like the elements.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToArrayCodec, CastValueCodec, ChunkRepresentation};
/// use zarr_core::{DataType, ExtensionObject, FillValue};
///
/// let json = serde_json::json!({"name": "cast_value", "configuration": {
///     "data_type": "uint8", "out_of_range": "clamp"}});
/// let codec = CastValueCodec::from_metadata(&ExtensionObject::from_json(&json, "codecs[0]")?)?;
/// let repr = ChunkRepresentation::try_new(vec![4], DataType::Float64, FillValue::from(0.0f64))?;
/// let values: Vec<u8> = [1.5f64, 100.7, 255.9, -3.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let stored = codec.encode(ArrayBytes::fixed(values), &repr)?;
/// assert_eq!(stored.as_fixed().unwrap()[..], [2, 101, 255, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CastValueCodec {
    target: NumType,
    rounding: Rounding,
    out_of_range: OutOfRange,
    /// Whether `out_of_range` was given (`"error"` is written back only if it was).
    out_of_range_given: bool,
    /// The `scalar_map` configuration as given, parsed against the chunk's types when used.
    scalar_map: Option<Value>,
}

impl CastValueCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "cast_value";

    /// A codec casting to `data_type` (an integer or float type).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for another data type, or `Wrap` with a float target.
    pub fn try_new(
        data_type: &DataType,
        rounding: Rounding,
        out_of_range: OutOfRange,
    ) -> Result<Self> {
        let target = NumType::of(data_type).ok_or_else(|| {
            Error::config(
                Self::NAME,
                format!("`data_type` must be an integer or float type, found `{data_type}`"),
            )
        })?;
        if out_of_range == OutOfRange::Wrap && target.is_float() {
            return Err(Error::config(
                Self::NAME,
                format!(
                    "`out_of_range` \"wrap\" needs an integer `data_type`, found `{data_type}`"
                ),
            ));
        }
        Ok(Self {
            target,
            rounding,
            out_of_range,
            out_of_range_given: out_of_range != OutOfRange::Error,
            scalar_map: None,
        })
    }

    /// Parse the codec's metadata.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing or malformed key, any other key, or a
    /// combination [`CastValueCodec::try_new`] refuses.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(
            metadata,
            &["data_type", "rounding", "out_of_range", "scalar_map"],
        )?;
        let data_type = DataType::from_json(config.required("data_type")?, "data_type")
            .map_err(|e| Error::config(Self::NAME, format!("`data_type`: {e}")))?;
        let rounding = match config.get("rounding") {
            None => Rounding::default(),
            Some(v) => {
                let name = config.str("rounding", v)?;
                Rounding::NAMES
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, r)| *r)
                    .ok_or_else(|| {
                        config.error(
                            "rounding",
                            "\"nearest-even\", \"towards-zero\", \"towards-positive\", \
                             \"towards-negative\" or \"nearest-away\"",
                            v,
                        )
                    })?
            }
        };
        let out_of_range = match config.get("out_of_range") {
            None => OutOfRange::Error,
            Some(v) => match config.str("out_of_range", v)? {
                "error" => OutOfRange::Error,
                "clamp" => OutOfRange::Clamp,
                "wrap" => OutOfRange::Wrap,
                _ => {
                    return Err(config.error(
                        "out_of_range",
                        "\"error\", \"clamp\" or \"wrap\"",
                        v,
                    ));
                }
            },
        };
        let mut codec = Self::try_new(&data_type, rounding, out_of_range)?;
        codec.out_of_range_given = config.get("out_of_range").is_some();
        if let Some(map) = config.get("scalar_map") {
            let Some(object) = map.as_object() else {
                return Err(config.error(
                    "scalar_map",
                    "an object with \"encode\" and/or \"decode\" lists",
                    map,
                ));
            };
            if let Some(key) = object.keys().find(|k| *k != "encode" && *k != "decode") {
                return Err(Error::config(
                    Self::NAME,
                    format!("unknown key `{key}` in `scalar_map` (expected `encode`, `decode`)"),
                ));
            }
            // The pairs' values are checked against the data types when the chain is built.
            for (direction, pairs) in object {
                let well_formed = pairs.as_array().is_some_and(|pairs| {
                    pairs
                        .iter()
                        .all(|p| p.as_array().is_some_and(|p| p.len() == 2))
                });
                if !well_formed {
                    return Err(Error::config(
                        Self::NAME,
                        format!(
                            "`scalar_map.{direction}` must be a list of [source, target] pairs, \
                             found {pairs}"
                        ),
                    ));
                }
            }
            codec.scalar_map = Some(map.clone());
        }
        Ok(codec)
    }

    /// The same codec with `scalar_map` substitutions (`{"encode": [...], "decode": [...]}`,
    /// values as fill values of their side's data type).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `map` is malformed.
    pub fn with_scalar_map(&self, map: Value) -> Result<Self> {
        let mut metadata = self.to_metadata();
        if let Some(config) = metadata.configuration.as_mut() {
            config.insert("scalar_map".into(), map);
        }
        Self::from_metadata(&metadata)
    }

    /// The encoded data type.
    pub fn data_type(&self) -> DataType {
        self.target.data_type()
    }

    /// The rounding mode.
    pub fn rounding(&self) -> Rounding {
        self.rounding
    }

    /// The out-of-range policy.
    pub fn out_of_range(&self) -> OutOfRange {
        self.out_of_range
    }

    fn source(decoded: &ChunkRepresentation) -> Result<NumType> {
        NumType::of(decoded.data_type()).ok_or_else(|| {
            Error::incompatible(
                Self::NAME,
                format!(
                    "it casts integer and float elements, not `{}`",
                    decoded.data_type()
                ),
            )
        })
    }

    /// The `direction` pairs of the scalar map, `from` values of type `from`, `to` values of
    /// type `to`.
    fn map(&self, direction: &str, from: NumType, to: NumType) -> Result<ScalarMap> {
        let Some(pairs) = self
            .scalar_map
            .as_ref()
            .and_then(|m| m.get(direction))
            .and_then(Value::as_array)
        else {
            return Ok(Vec::new());
        };
        let scalar = |v: &Value, t: NumType| -> Result<Scalar> {
            let fill = FillValue::from_json(v, &t.data_type()).map_err(|e| {
                Error::incompatible(
                    Self::NAME,
                    format!(
                        "`scalar_map.{direction}` value {v} is not a {}: {e}",
                        t.data_type()
                    ),
                )
            })?;
            Ok(t.load(fill.as_bytes(), 0))
        };
        pairs
            .iter()
            .filter_map(Value::as_array)
            .map(|p| Ok((scalar(&p[0], from)?, scalar(&p[1], to)?)))
            .collect()
    }

    /// Cast `n` elements of `from` in `src` to `to`, after the `map` substitutions.
    fn cast(
        &self,
        src: &[u8],
        from: NumType,
        to: NumType,
        map: &ScalarMap,
        out: &mut [u8],
    ) -> Result<()> {
        let n = src.len() / from.size();
        for i in 0..n {
            let mut v = from.load(src, i);
            for (source, target) in map {
                if same(v, *source) {
                    v = *target;
                }
            }
            let cast = convert(v, to, self.rounding, self.out_of_range).map_err(|reason| {
                Error::InvalidElement {
                    codec: Self::NAME.into(),
                    index: i as u64,
                    data_type: to.data_type().to_string(),
                    reason,
                }
            })?;
            to.store(cast, out, i)?;
        }
        Ok(())
    }
}

/// Whether an element equals a map's source value (NaN equals NaN).
fn same(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::Int(x), Scalar::Int(y)) => x == y,
        (Scalar::Float(x), Scalar::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Scalar::Int(x), Scalar::Float(y)) | (Scalar::Float(y), Scalar::Int(x)) => {
            y.is_finite() && y.fract() == 0.0 && (y as i128) == x && (x as f64) == y
        }
    }
}

/// The largest finite value of a float type.
fn float_max(t: NumType) -> f64 {
    match t {
        NumType::F16 => f16::MAX.to_f64(),
        NumType::F32 => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

/// `x` rounded to nearest (ties to even) in float type `t`, as an `f64`.
fn nearest_float(x: f64, t: NumType) -> f64 {
    match t {
        NumType::F16 => f16::from_f64(x).to_f64(),
        NumType::F32 => f64::from(x as f32),
        _ => x,
    }
}

/// The neighbour of `y` (a value of float type `t`) one step towards positive infinity
/// (`up`) or negative infinity.
fn next_float(y: f64, t: NumType, up: bool) -> f64 {
    fn step(bits: u64, negative: bool, up: bool) -> u64 {
        // Away from zero is one more in the magnitude's bits.
        if negative != up { bits + 1 } else { bits - 1 }
    }
    if y == 0.0 {
        let tiny = match t {
            NumType::F16 => f16::from_bits(1).to_f64(),
            NumType::F32 => f64::from(f32::from_bits(1)),
            _ => f64::from_bits(1),
        };
        return if up { tiny } else { -tiny };
    }
    let negative = y < 0.0;
    match t {
        NumType::F16 => {
            let h = f16::from_f64(y);
            let mag = u64::from(h.to_bits() & 0x7fff);
            let bits = step(mag, negative, up) as u16 | (h.to_bits() & 0x8000);
            f16::from_bits(bits).to_f64()
        }
        NumType::F32 => {
            let f = y as f32;
            let mag = u64::from(f.to_bits() & 0x7fff_ffff);
            let bits = step(mag, negative, up) as u32 | (f.to_bits() & 0x8000_0000);
            f64::from(f32::from_bits(bits))
        }
        _ => {
            let mag = y.to_bits() & 0x7fff_ffff_ffff_ffff;
            f64::from_bits(step(mag, negative, up) | (y.to_bits() & (1 << 63)))
        }
    }
}

/// `v` converted to type `t` by value, or why it cannot be.
fn convert(
    v: Scalar,
    t: NumType,
    rounding: Rounding,
    out_of_range: OutOfRange,
) -> std::result::Result<Scalar, String> {
    if t.is_float() {
        return to_float(v, t, rounding, out_of_range).map(Scalar::Float);
    }
    let (lo, hi) = t.int_range();
    let int = match v {
        Scalar::Int(x) => x,
        Scalar::Float(x) if !x.is_finite() => {
            return Err(format!(
                "{x} has no integer value (map it with `scalar_map`)"
            ));
        }
        Scalar::Float(x) => {
            let r = rounding.to_integer(x);
            // Beyond i128 the value is out of range whatever the policy.
            if r.abs() >= 2f64.powi(127) {
                return match out_of_range {
                    OutOfRange::Clamp => Ok(Scalar::Int(if r < 0.0 { lo } else { hi })),
                    _ => Err(format!("{x} is out of the range of {}", t.data_type())),
                };
            }
            r as i128
        }
    };
    if (lo..=hi).contains(&int) {
        return Ok(Scalar::Int(int));
    }
    match out_of_range {
        OutOfRange::Error => Err(format!(
            "{} is out of the range of {} ({lo} to {hi})",
            match v {
                Scalar::Int(x) => x.to_string(),
                Scalar::Float(x) => x.to_string(),
            },
            t.data_type()
        )),
        OutOfRange::Clamp => Ok(Scalar::Int(int.clamp(lo, hi))),
        OutOfRange::Wrap => {
            let span = hi - lo + 1;
            Ok(Scalar::Int((int - lo).rem_euclid(span) + lo))
        }
    }
}

/// `v` as a value of float type `t` (returned as an exact `f64`).
fn to_float(
    v: Scalar,
    t: NumType,
    rounding: Rounding,
    out_of_range: OutOfRange,
) -> std::result::Result<f64, String> {
    let (nearest, exact, source_finite) = match v {
        Scalar::Float(x) => {
            let y = nearest_float(x, t);
            (y, y == x || x.is_nan(), x.is_finite())
        }
        Scalar::Int(x) => {
            // One rounding, straight from the integer.
            let y = match t {
                NumType::F32 => f64::from(x as f32),
                NumType::F16 => f16::from_f64(x as f64).to_f64(),
                _ => x as f64,
            };
            let exact = y.is_finite() && y.abs() < 2f64.powi(127) && y as i128 == x;
            (y, exact, true)
        }
    };
    let mut y = nearest;
    if !exact && rounding != Rounding::NearestEven {
        // The other candidate lies one step from the nearest, on the source's other side.
        let above = match v {
            Scalar::Float(x) => nearest > x,
            Scalar::Int(x) => nearest.is_infinite() && nearest > 0.0 || (nearest as i128) > x,
        };
        let other = next_float(nearest, t, !above);
        let (low, high) = if above {
            (other, nearest)
        } else {
            (nearest, other)
        };
        y = match rounding {
            Rounding::TowardsPositive => high,
            Rounding::TowardsNegative => low,
            Rounding::TowardsZero => {
                if low.abs() < high.abs() {
                    low
                } else {
                    high
                }
            }
            Rounding::NearestAway => {
                let (d_low, d_high) = match v {
                    Scalar::Float(x) => (x - low, high - x),
                    // Candidates from an integer are whole numbers or infinite.
                    Scalar::Int(x) => (
                        if low.is_infinite() {
                            f64::INFINITY
                        } else {
                            (x - low as i128) as f64
                        },
                        if high.is_infinite() {
                            f64::INFINITY
                        } else {
                            (high as i128 - x) as f64
                        },
                    ),
                };
                if d_low < d_high || (d_low == d_high && low.abs() > high.abs()) {
                    low
                } else {
                    high
                }
            }
            Rounding::NearestEven => nearest,
        };
    }
    if y.is_infinite() && source_finite {
        return match out_of_range {
            OutOfRange::Clamp => Ok(float_max(t).copysign(y)),
            _ => Err(format!(
                "{} is out of the range of {}",
                match v {
                    Scalar::Int(x) => x.to_string(),
                    Scalar::Float(x) => x.to_string(),
                },
                t.data_type()
            )),
        };
    }
    Ok(y)
}

impl ArrayToArrayCodec for CastValueCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut map = Map::new();
        map.insert("data_type".into(), self.target.data_type().to_json());
        if self.rounding != Rounding::NearestEven {
            map.insert("rounding".into(), self.rounding.name().into());
        }
        if self.out_of_range_given {
            let name = match self.out_of_range {
                OutOfRange::Error => "error",
                OutOfRange::Clamp => "clamp",
                OutOfRange::Wrap => "wrap",
            };
            map.insert("out_of_range".into(), name.into());
        }
        if let Some(scalar_map) = &self.scalar_map {
            map.insert("scalar_map".into(), scalar_map.clone());
        }
        ExtensionObject::with_configuration(Self::NAME, map)
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        let source = Self::source(decoded)?;
        // Both maps are checked now, so a bad value fails when the array opens.
        let encode = self.map("encode", source, self.target)?;
        self.map("decode", self.target, source)?;
        let mut fill = vec![0u8; self.target.size()];
        self.cast(
            decoded.fill_value().as_bytes(),
            source,
            self.target,
            &encode,
            &mut fill,
        )
        .map_err(|e| {
            Error::incompatible(
                Self::NAME,
                format!("the fill value does not cast to {}: {e}", self.data_type()),
            )
        })?;
        ChunkRepresentation::try_new(
            decoded.shape().to_vec(),
            self.target.data_type(),
            FillValue::new(fill),
        )
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let source = Self::source(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        let src = array.into_fixed(Self::NAME)?;
        let map = self.map("encode", source, self.target)?;
        let mut out = crate::zeroed_bytes(src.len() / source.size() * self.target.size())?;
        self.cast(&src, source, self.target, &map, &mut out)?;
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
        let source = Self::source(decoded)?;
        let encoded = self.encoded_representation(decoded)?;
        array.validate_for(Self::NAME, &encoded)?;
        let size = decoded.fixed_size_usize()?;
        if out.len() != size {
            return Err(Error::output_size(size, out.len()));
        }
        let src = array.into_fixed(Self::NAME)?;
        let map = self.map("decode", self.target, source)?;
        self.cast(&src, self.target, source, &map, out)
    }

    fn decoded_position(&self, index: u64, _decoded: &ChunkRepresentation) -> Option<u64> {
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codec(config: Value) -> Result<CastValueCodec> {
        CastValueCodec::from_metadata(&ExtensionObject::with_configuration(
            CastValueCodec::NAME,
            config.as_object().unwrap().clone(),
        ))
    }

    fn repr(n: u64, data_type: DataType) -> ChunkRepresentation {
        let fill = FillValue::default_for(&data_type);
        ChunkRepresentation::try_new(vec![n], data_type, fill).unwrap()
    }

    fn f64s(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    fn encode(config: Value, data_type: DataType, values: Vec<u8>) -> Result<Vec<u8>> {
        let n = (values.len() / data_type.fixed_size().unwrap()) as u64;
        let codec = codec(config)?;
        let out = codec.encode(ArrayBytes::fixed(values), &repr(n, data_type))?;
        Ok(out.as_fixed().unwrap().to_vec())
    }

    #[test]
    fn floats_to_integers_round_as_configured() {
        let values = f64s(&[2.5, -2.5, 3.5, 1.2, -1.7]);
        let as_i8 = |rounding: &str| -> Vec<i8> {
            encode(
                json!({"data_type": "int8", "rounding": rounding}),
                DataType::Float64,
                values.clone(),
            )
            .unwrap()
            .into_iter()
            .map(|b| b as i8)
            .collect()
        };
        assert_eq!(as_i8("nearest-even"), [2, -2, 4, 1, -2]);
        assert_eq!(as_i8("nearest-away"), [3, -3, 4, 1, -2]);
        assert_eq!(as_i8("towards-zero"), [2, -2, 3, 1, -1]);
        assert_eq!(as_i8("towards-positive"), [3, -2, 4, 2, -1]);
        assert_eq!(as_i8("towards-negative"), [2, -3, 3, 1, -2]);
    }

    #[test]
    fn out_of_range_values() {
        let values = f64s(&[300.0, -5.0, 255.4]);
        let e = encode(
            json!({"data_type": "uint8"}),
            DataType::Float64,
            values.clone(),
        )
        .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidElement { index: 0, .. }),
            "{e:?}"
        );
        assert_eq!(
            encode(
                json!({"data_type": "uint8", "out_of_range": "clamp"}),
                DataType::Float64,
                values.clone()
            )
            .unwrap(),
            [255, 0, 255]
        );
        assert_eq!(
            encode(
                json!({"data_type": "uint8", "out_of_range": "wrap"}),
                DataType::Float64,
                values
            )
            .unwrap(),
            [44, 251, 255]
        );
        // Integers to integers.
        let ints: Vec<u8> = [-129i32, 127, 1000]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert!(encode(json!({"data_type": "int8"}), DataType::Int32, ints.clone()).is_err());
        assert_eq!(
            encode(
                json!({"data_type": "int8", "out_of_range": "clamp"}),
                DataType::Int32,
                ints.clone()
            )
            .unwrap(),
            [128, 127, 127]
        );
        assert_eq!(
            encode(
                json!({"data_type": "int8", "out_of_range": "wrap"}),
                DataType::Int32,
                ints
            )
            .unwrap(),
            [127, 127, 0xe8]
        );
        // A float too large for float32: an error, or the largest float32.
        let big = f64s(&[1e300, -1e300]);
        assert!(
            encode(
                json!({"data_type": "float32"}),
                DataType::Float64,
                big.clone()
            )
            .is_err()
        );
        let clamped = encode(
            json!({"data_type": "float32", "out_of_range": "clamp"}),
            DataType::Float64,
            big.clone(),
        )
        .unwrap();
        let back: Vec<f32> = clamped
            .chunks(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(back, [f32::MAX, f32::MIN]);
        // Rounding towards zero never overflows to infinity.
        let tz = encode(
            json!({"data_type": "float32", "rounding": "towards-zero"}),
            DataType::Float64,
            big,
        )
        .unwrap();
        assert_eq!(f32::from_ne_bytes(tz[..4].try_into().unwrap()), f32::MAX);
        // Infinity and NaN stay themselves in a float type.
        let specials = encode(
            json!({"data_type": "float16"}),
            DataType::Float64,
            f64s(&[f64::INFINITY, f64::NAN]),
        )
        .unwrap();
        assert!(f16::from_ne_bytes([specials[0], specials[1]]).is_infinite());
        assert!(f16::from_ne_bytes([specials[2], specials[3]]).is_nan());
    }

    #[test]
    fn floats_to_narrower_floats_round_as_configured() {
        // 1 + 2^-24 lies between float32's 1.0 and 1 + 2^-23, exactly half way.
        let tie = 1.0 + 2f64.powi(-24);
        let just_above = 1.0 + 2f64.powi(-24) + 2f64.powi(-40);
        let as_f32 = |rounding: &str, x: f64| -> f32 {
            let out = encode(
                json!({"data_type": "float32", "rounding": rounding}),
                DataType::Float64,
                f64s(&[x]),
            )
            .unwrap();
            f32::from_ne_bytes(out.try_into().unwrap())
        };
        let up = 1.0 + f32::EPSILON;
        assert_eq!(as_f32("nearest-even", tie), 1.0);
        assert_eq!(as_f32("nearest-away", tie), up);
        assert_eq!(as_f32("nearest-even", just_above), up);
        assert_eq!(as_f32("towards-zero", just_above), 1.0);
        assert_eq!(as_f32("towards-negative", just_above), 1.0);
        assert_eq!(as_f32("towards-positive", tie), up);
        assert_eq!(as_f32("towards-zero", -just_above), -1.0);
        assert_eq!(as_f32("towards-negative", -just_above), -up);
        assert_eq!(as_f32("towards-positive", -just_above), -1.0);
        // Integers to floats: 2^24 + 1 is not a float32.
        let int = (1i64 << 24) + 1;
        let as_f32_from_int = |rounding: &str| -> f32 {
            let out = encode(
                json!({"data_type": "float32", "rounding": rounding}),
                DataType::Int64,
                int.to_ne_bytes().to_vec(),
            )
            .unwrap();
            f32::from_ne_bytes(out.try_into().unwrap())
        };
        assert_eq!(as_f32_from_int("nearest-even"), 16_777_216.0);
        assert_eq!(as_f32_from_int("towards-positive"), 16_777_218.0);
        assert_eq!(as_f32_from_int("nearest-away"), 16_777_218.0);
        assert_eq!(as_f32_from_int("towards-zero"), 16_777_216.0);
    }

    #[test]
    fn nan_and_infinity_need_a_scalar_map_to_become_integers() {
        let values = f64s(&[1.0, f64::NAN, 3.0]);
        let e = encode(
            json!({"data_type": "int16"}),
            DataType::Float64,
            values.clone(),
        )
        .unwrap_err();
        assert!(matches!(e, Error::InvalidElement { index: 1, .. }), "{e:?}");
        let config = json!({
            "data_type": "int16",
            "scalar_map": {"encode": [["NaN", -32768]], "decode": [[-32768, "NaN"]]},
        });
        let stored = encode(config.clone(), DataType::Float64, values).unwrap();
        let ints: Vec<i16> = stored
            .chunks(2)
            .map(|c| i16::from_ne_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(ints, [1, -32768, 3]);
        let codec = codec(config).unwrap();
        let r = repr(3, DataType::Float64);
        let back = codec.decode(ArrayBytes::fixed(stored), &r).unwrap();
        let floats: Vec<f64> = back
            .as_fixed()
            .unwrap()
            .chunks(8)
            .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(floats[0], 1.0);
        assert!(floats[1].is_nan());
        assert_eq!(floats[2], 3.0);
    }

    #[test]
    fn fill_values_cast_and_bad_fill_values_fail_at_open() {
        let codec = codec(json!({"data_type": "uint8", "out_of_range": "clamp"})).unwrap();
        let r = ChunkRepresentation::try_new(vec![2], DataType::Float32, FillValue::from(7.6f32))
            .unwrap();
        let encoded = codec.encoded_representation(&r).unwrap();
        assert_eq!(encoded.data_type(), &DataType::UInt8);
        assert_eq!(encoded.fill_value().as_bytes(), [8]);
        let nan =
            ChunkRepresentation::try_new(vec![2], DataType::Float32, FillValue::from(f32::NAN))
                .unwrap();
        assert!(matches!(
            codec.encoded_representation(&nan),
            Err(Error::IncompatibleRepresentation { .. })
        ));
        // A scalar map value that is not of its side's type fails at open too.
        let mapped = codec
            .with_scalar_map(json!({"encode": [["NaN", 300]]}))
            .unwrap();
        assert!(matches!(
            mapped.encoded_representation(&nan),
            Err(Error::IncompatibleRepresentation { .. })
        ));
        let mapped = codec
            .with_scalar_map(json!({"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}))
            .unwrap();
        assert_eq!(
            mapped
                .encoded_representation(&nan)
                .unwrap()
                .fill_value()
                .as_bytes(),
            [0]
        );
    }

    #[test]
    fn configuration() {
        for good in [
            json!({"data_type": "uint8"}),
            json!({"data_type": "int16", "rounding": "towards-zero", "out_of_range": "wrap"}),
            json!({"data_type": "float32", "out_of_range": "error"}),
            json!({"data_type": "int32", "scalar_map": {"decode": [[0, 1]]}}),
        ] {
            let c = codec(good.clone()).unwrap();
            // Written back as given.
            assert_eq!(
                Value::Object(c.to_metadata().configuration.unwrap()),
                good,
                "{good}"
            );
        }
        for bad in [
            json!({}),
            json!({"data_type": "bool"}),
            json!({"data_type": "complex64"}),
            json!({"data_type": "string"}),
            json!({"data_type": "float32", "out_of_range": "wrap"}),
            json!({"data_type": "int8", "rounding": "up"}),
            json!({"data_type": "int8", "out_of_range": "saturate"}),
            json!({"data_type": "int8", "scalar_map": [[0, 1]]}),
            json!({"data_type": "int8", "scalar_map": {"encode": [[0]]}}),
            json!({"data_type": "int8", "scalar_map": {"both": []}}),
            json!({"data_type": "int8", "extra": true}),
        ] {
            assert!(
                matches!(codec(bad.clone()), Err(Error::InvalidConfiguration { .. })),
                "{bad}"
            );
        }
        let c = codec(json!({"data_type": "int8"})).unwrap();
        assert!(matches!(
            c.encoded_representation(&repr(2, DataType::Bool)),
            Err(Error::IncompatibleRepresentation { .. })
        ));
    }
}
