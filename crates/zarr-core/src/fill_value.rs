//! Fill values: the value of every element of a chunk that is not stored.
//!
//! A [`FillValue`] holds the exact bytes of one element in native byte order (for `string` the
//! UTF-8 bytes, for `bytes` the raw bytes), so that filling a buffer is a copy, and NaN payloads
//! and signed zeros survive.

use base64::Engine as _;
use half::{bf16, f16};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::data_type::{DataType, NdArrayType, OptionalType};
use crate::error::{Error, Result};
use crate::minifloat::{self, MiniFloat};

/// The fill value of an array: one element's bytes in native byte order.
///
/// ```
/// use zarr_core::{DataType, FillValue};
/// use serde_json::json;
///
/// let nan = FillValue::from_json(&json!("NaN"), &DataType::Float32)?;
/// assert_eq!(nan.as_bytes(), 0x7fc0_0000_u32.to_ne_bytes());
/// let payload = FillValue::from_json(&json!("0x7fc00001"), &DataType::Float32)?;
/// assert_eq!(payload.to_json(&DataType::Float32)?, json!("0x7fc00001"));
/// let big = FillValue::from_json(&json!(18446744073709551615u64), &DataType::UInt64)?;
/// assert_eq!(big.as_bytes(), u64::MAX.to_ne_bytes());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A fill value made from a Rust value (`FillValue::from(5)`) remembers the value's type, so
/// that it is never taken for another data type's bytes: [`FillValue::for_data_type`]
/// converts it when the data type holds it exactly (`5` becomes `5.0` for `float32`), and
/// [`FillValue::check`] refuses it for any data type other than its own. Equality compares
/// the bytes only.
///
/// ```
/// use zarr_core::{DataType, FillValue};
///
/// let five = FillValue::from(5); // an i32
/// assert!(five.check(&DataType::Float32).is_err()); // not float32's bytes
/// let as_float = five.for_data_type(&DataType::Float32)?;
/// assert_eq!(as_float.as_bytes(), 5.0f32.to_ne_bytes());
/// assert!(FillValue::from(16_777_217).for_data_type(&DataType::Float32).is_err()); // inexact
/// assert!(FillValue::from(300).for_data_type(&DataType::UInt8).is_err()); // out of range
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FillValue {
    bytes: Vec<u8>,
    /// The Rust type the value was made from, if any.
    typed: Option<Typed>,
}

/// The Rust type a [`FillValue`] was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Typed {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    Str,
}

impl Typed {
    fn name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::U8 => "u8",
            Self::U16 => "u16",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::Str => "str",
        }
    }

    /// The data type whose elements are values of this Rust type.
    fn data_type(self) -> DataType {
        match self {
            Self::Bool => DataType::Bool,
            Self::I8 => DataType::Int8,
            Self::I16 => DataType::Int16,
            Self::I32 => DataType::Int32,
            Self::I64 => DataType::Int64,
            Self::U8 => DataType::UInt8,
            Self::U16 => DataType::UInt16,
            Self::U32 => DataType::UInt32,
            Self::U64 => DataType::UInt64,
            Self::F16 => DataType::Float16,
            Self::BF16 => DataType::BFloat16,
            Self::F32 => DataType::Float32,
            Self::F64 => DataType::Float64,
            Self::Str => DataType::String,
        }
    }

    /// Whether the value's bytes are, unchanged, an element of `data_type`.
    fn is_element_of(self, data_type: &DataType) -> bool {
        *data_type == self.data_type()
            || match self {
                Self::I64 => matches!(
                    data_type,
                    DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. }
                ),
                Self::U8 => *data_type == DataType::RawBits(1),
                Self::U16 => *data_type == DataType::RawBits(2),
                Self::U32 => *data_type == DataType::RawBits(4),
                Self::U64 => *data_type == DataType::RawBits(8),
                _ => false,
            }
            // A fixed-point type's stored integer.
            || match data_type {
                DataType::FixedPoint(fp) => fp.base_type() == self.data_type(),
                _ => false,
            }
    }
}

impl PartialEq for FillValue {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for FillValue {}

impl std::hash::Hash for FillValue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes.hash(state);
    }
}

impl std::fmt::Debug for FillValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.typed {
            Some(t) => match self.to_json(&t.data_type()) {
                Ok(v) => write!(f, "FillValue({v}{})", t.name()),
                Err(_) => write!(f, "FillValue({:02x?})", self.bytes),
            },
            None => write!(f, "FillValue({:02x?})", self.bytes),
        }
    }
}

impl FillValue {
    /// A fill value from an element's bytes in native byte order. [`FillValue::check`] tells
    /// whether the bytes suit a data type.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self::untyped(bytes.into())
    }

    fn untyped(bytes: Vec<u8>) -> Self {
        Self { bytes, typed: None }
    }

    fn typed(bytes: Vec<u8>, typed: Typed) -> Self {
        Self {
            bytes,
            typed: Some(typed),
        }
    }

    /// This value as an element of `data_type`.
    ///
    /// A value made from a Rust number or `bool` (`FillValue::from(5)`) is converted when
    /// `data_type` holds it exactly: `5` becomes `5.0` for `float32` or `5u8` for `uint8`,
    /// and `-1.0` becomes `-1` for `int32`; a string becomes UTF-32 for
    /// `fixed_length_utf32`. Any other value is checked as [`FillValue::check`] does and
    /// returned unchanged.
    ///
    /// # Errors
    /// [`Error::InvalidFillValue`] if the value does not fit `data_type` exactly (out of
    /// range, a fraction for an integer type, rounded by a narrower float) or has no
    /// meaning for it (a number for `string`, a string for `int32`).
    pub fn for_data_type(&self, data_type: &DataType) -> Result<Self> {
        let Some(typed) = self.typed else {
            self.check(data_type)?;
            return Ok(self.clone());
        };
        if typed.is_element_of(data_type) {
            self.check(data_type)?;
            return Ok(Self::untyped(self.bytes.clone()));
        }
        if let DataType::Optional(o) = data_type {
            // A plain value is the present value `Some(value)`.
            let mut bytes = self.for_data_type(o.inner())?.bytes;
            bytes.push(1);
            return Ok(Self::untyped(bytes));
        }
        let own = typed.data_type();
        let refuse = |reason: String| Error::InvalidFillValue {
            data_type: data_type.to_string(),
            value: self.describe(),
            reason,
        };
        let convertible = match typed {
            Typed::Str => matches!(data_type, DataType::FixedLengthUtf32 { .. }),
            Typed::Bool => false,
            _ => {
                data_type.fixed_size().is_some()
                    && !matches!(
                        data_type,
                        DataType::Bool
                            | DataType::RawBits(_)
                            | DataType::FixedLengthUtf32 { .. }
                            | DataType::NullTerminatedBytes { .. }
                            | DataType::RawBytes { .. }
                            | DataType::Complex64
                            | DataType::Complex128
                            | DataType::ComplexFloat(_)
                            | DataType::Struct(_)
                    )
            }
        };
        if !convertible {
            return Err(refuse(format!(
                "a `{}` is not a {data_type} value; give one of the data type's own type, \
                 or its JSON form (`fill_value_json`)",
                typed.name()
            )));
        }
        let json = self.to_json(&own)?;
        let converted = Self::from_json(&json, data_type).map_err(|e| match e {
            Error::InvalidFillValue { reason, .. } => refuse(reason),
            other => other,
        })?;
        // Exact only if converting back gives the same value.
        let back = converted
            .to_json(data_type)
            .and_then(|v| Self::from_json(&v, &own));
        if back.as_ref().map(Self::as_bytes).ok() != Some(self.as_bytes()) {
            return Err(refuse(format!(
                "{data_type} cannot hold it exactly (it would be {})",
                converted
                    .to_json(data_type)
                    .map_or_else(|_| "something else".to_string(), |v| v.to_string())
            )));
        }
        Ok(converted)
    }

    /// The value for messages: its JSON form and Rust type when it has one, else its bytes.
    fn describe(&self) -> String {
        match self.typed {
            Some(t) => match self.to_json(&t.data_type()) {
                Ok(v) => format!("{v} (a `{}`)", t.name()),
                Err(_) => format!("{:02x?}", self.bytes),
            },
            None => format!("{:02x?}", self.bytes),
        }
    }

    /// The element's bytes (native byte order).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The element's bytes (native byte order).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The default fill value zarr-python chooses for a data type: zero, `false`, the empty
    /// string, empty bytes, or NaT for datetimes and timedeltas; for an optional type, a
    /// missing value.
    pub fn default_for(data_type: &DataType) -> Self {
        match data_type {
            DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
                Self::untyped(i64::MIN.to_ne_bytes().to_vec())
            }
            // Missing.
            DataType::Optional(o) => Self::untyped(vec![0; o.inner_size().unwrap_or(0) + 1]),
            dt => Self::untyped(vec![0; dt.fixed_size().unwrap_or(0)]),
        }
    }

    /// Whether the bytes are a valid element of `data_type`.
    ///
    /// # Errors
    /// [`Error::InvalidFillValue`] if the value was made from a Rust value of another type
    /// (convert it with [`FillValue::for_data_type`]), the size is wrong, a `bool` is not 0
    /// or 1, or a `string` is not UTF-8.
    pub fn check(&self, data_type: &DataType) -> Result<()> {
        let bad = |reason: String| Error::InvalidFillValue {
            data_type: data_type.to_string(),
            value: self.describe(),
            reason,
        };
        if let Some(t) = self.typed
            && !t.is_element_of(data_type)
        {
            return Err(bad(format!(
                "a `{}` is not a {data_type} element (`FillValue::for_data_type` converts \
                 a value the data type holds exactly)",
                t.name()
            )));
        }
        if let Some(size) = data_type.fixed_size()
            && self.bytes.len() != size
        {
            return Err(bad(format!(
                "expected {size} bytes, found {}",
                self.bytes.len()
            )));
        }
        match data_type {
            DataType::Bool if self.bytes[0] > 1 => Err(bad("a bool must be 0 or 1".into())),
            DataType::Struct(st) => {
                for (offset, field) in st.offsets().zip(st.fields()) {
                    let size = field.data_type.fixed_size().unwrap_or(0);
                    FillValue::untyped(self.bytes[offset..offset + size].to_vec())
                        .check(&field.data_type)
                        .map_err(|e| bad(format!("field {:?}: {e}", field.name)))?;
                }
                Ok(())
            }
            DataType::String => std::str::from_utf8(&self.bytes)
                .map(drop)
                .map_err(|e| bad(format!("not UTF-8: {e}"))),
            DataType::NdArray(nd) => {
                if nd.element_shape(self.bytes.len()).is_none() {
                    return Err(bad(match nd.variable_dimensions() {
                        0 => format!("expected {} bytes", nd.item_size()),
                        1 => format!(
                            "{} bytes are not a whole number of {}-byte items",
                            self.bytes.len(),
                            nd.item_size()
                        ),
                        _ => "with two or more variable dimensions the fill value must be \
                              the empty element"
                            .into(),
                    }));
                }
                if *nd.dtype() == DataType::Bool && self.bytes.iter().any(|&b| b > 1) {
                    return Err(bad("a bool must be 0 or 1".into()));
                }
                Ok(())
            }
            DataType::Optional(o) => {
                let Some((inner, flag)) = OptionalType::split(&self.bytes) else {
                    return Err(bad("the validity byte is missing".into()));
                };
                match flag {
                    0 if inner.iter().all(|&b| b == 0) => Ok(()),
                    0 => Err(bad("a missing value's inner bytes must be zero".into())),
                    1 => FillValue::untyped(inner.to_vec())
                        .check(o.inner())
                        .map_err(|e| bad(format!("the inner value: {e}"))),
                    _ => Err(bad("the validity byte must be 0 or 1".into())),
                }
            }
            _ => Ok(()),
        }
    }

    /// Parse a `fill_value` for `data_type` per the specification's JSON encoding.
    ///
    /// Numbers for `float16` and `float32` are rounded from the JSON number's decimal value;
    /// [`FillValue::from_json_text`] rounds from the document's own text, which is exact in every
    /// case (`ArrayMetadata` uses it).
    ///
    /// # Errors
    /// [`Error::InvalidFillValue`] if the value is not a valid encoding for the data type or is
    /// out of its range.
    pub fn from_json(value: &Value, data_type: &DataType) -> Result<Self> {
        parse(value, None, data_type)
    }

    /// Parse a `fill_value` from its JSON text, rounding decimal numbers to the nearest
    /// representable value with ties to even, exactly, for every float width.
    ///
    /// # Errors
    /// As [`FillValue::from_json`]; [`Error::Json`] if `text` is not JSON.
    pub fn from_json_text(text: &str, data_type: &DataType) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(Error::Json)?;
        parse(&value, Some(text), data_type)
    }

    /// The JSON encoding of this fill value for `data_type`.
    ///
    /// Floats are written as numbers (the exact value, as `float64`), `"NaN"` for the canonical
    /// quiet NaN, `"0x…"` for any other NaN so its payload survives, and `"Infinity"` /
    /// `"-Infinity"`. `bytes` are written as base64, datetimes as integers (NaT as `i64::MIN`).
    ///
    /// # Errors
    /// [`Error::InvalidFillValue`] if the bytes do not suit the data type (see
    /// [`FillValue::check`]).
    pub fn to_json(&self, data_type: &DataType) -> Result<Value> {
        self.check(data_type)?;
        let b = &self.bytes;
        Ok(match data_type {
            DataType::Bool => Value::Bool(b[0] != 0),
            DataType::Int8 => Value::from(i8::from_ne_bytes(arr(b))),
            DataType::Int16 => Value::from(i16::from_ne_bytes(arr(b))),
            DataType::Int32 => Value::from(i32::from_ne_bytes(arr(b))),
            DataType::Int64 | DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
                Value::from(i64::from_ne_bytes(arr(b)))
            }
            DataType::UInt8 => Value::from(b[0]),
            DataType::UInt16 => Value::from(u16::from_ne_bytes(arr(b))),
            DataType::UInt32 => Value::from(u32::from_ne_bytes(arr(b))),
            DataType::UInt64 => Value::from(u64::from_ne_bytes(arr(b))),
            DataType::Float16 => float_to_json(Float::F16, b),
            DataType::BFloat16 => float_to_json(Float::BF16, b),
            DataType::MiniFloat(format) => minifloat_to_json(*format, b[0]),
            DataType::Int2 | DataType::Int4 => {
                let bits = if *data_type == DataType::Int2 { 2 } else { 4 };
                // Sign-extend the low bits.
                Value::from(((b[0] << (8 - bits)) as i8) >> (8 - bits))
            }
            DataType::FixedPoint(fp) => fp.fill_to_json(fp.raw_from_ne_bytes(b)),
            DataType::UInt2 => Value::from(b[0] & 0x3),
            DataType::UInt4 => Value::from(b[0] & 0xf),
            DataType::FixedLengthUtf32 { .. } => {
                // Trailing NULs pad the value (as in NumPy); NULs inside it are kept.
                let units: Vec<u32> = b
                    .chunks_exact(4)
                    .map(|unit| u32::from_ne_bytes(arr(unit)))
                    .collect();
                let end = units.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
                let text: Option<String> =
                    units[..end].iter().map(|&u| char::from_u32(u)).collect();
                Value::String(text.ok_or_else(|| Error::InvalidFillValue {
                    data_type: data_type.to_string(),
                    value: format!("{b:02x?}"),
                    reason: "not valid UTF-32".into(),
                })?)
            }
            DataType::NullTerminatedBytes { .. } => {
                let end = b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
                Value::String(base64::engine::general_purpose::STANDARD.encode(&b[..end]))
            }
            DataType::RawBytes { .. } => {
                Value::String(base64::engine::general_purpose::STANDARD.encode(b))
            }
            DataType::Float32 => float_to_json(Float::F32, b),
            DataType::Float64 => float_to_json(Float::F64, b),
            DataType::Complex64 => Value::Array(vec![
                float_to_json(Float::F32, &b[..4]),
                float_to_json(Float::F32, &b[4..]),
            ]),
            DataType::Complex128 => Value::Array(vec![
                float_to_json(Float::F64, &b[..8]),
                float_to_json(Float::F64, &b[8..]),
            ]),
            DataType::ComplexFloat(component) => {
                let (re, im) = b.split_at(component.size());
                let part = |bytes: &[u8]| {
                    FillValue::untyped(bytes.to_vec()).to_json(&component.data_type())
                };
                Value::Array(vec![part(re)?, part(im)?])
            }
            DataType::RawBits(_) => Value::Array(b.iter().map(|&x| Value::from(x)).collect()),
            DataType::String => Value::String(String::from_utf8_lossy(b).into_owned()),
            DataType::Bytes => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            DataType::NdArray(nd) => {
                // Little-endian scalars in C order, as base64.
                let mut little = b.clone();
                swap_scalars(nd, &mut little);
                Value::String(base64::engine::general_purpose::STANDARD.encode(little))
            }
            DataType::Optional(o) => {
                let (inner, flag) = OptionalType::split(b).unwrap_or_default();
                if flag == 0 {
                    Value::Null
                } else {
                    Value::Array(vec![FillValue::untyped(inner.to_vec()).to_json(o.inner())?])
                }
            }
            DataType::Struct(st) if st.is_structured() => {
                // zarr-python's form: the packed record in little-endian order, as base64.
                let mut little = b.clone();
                native_to_little(data_type, &mut little);
                Value::String(base64::engine::general_purpose::STANDARD.encode(little))
            }
            DataType::Struct(st) => {
                let mut fields = serde_json::Map::new();
                for (offset, field) in st.offsets().zip(st.fields()) {
                    let size = field.data_type.fixed_size().unwrap_or(0);
                    let value = FillValue::untyped(b[offset..offset + size].to_vec())
                        .to_json(&field.data_type)?;
                    fields.insert(field.name.clone(), value);
                }
                Value::Object(fields)
            }
        })
    }
}

/// Convert one element of `data_type` between native and little-endian byte order (the same
/// swap both ways; nothing to do on a little-endian machine).
/// Swap each scalar of an `ndarray` element in `bytes` between little-endian and native
/// order (nothing on little-endian machines); a trailing partial scalar is left alone.
fn swap_scalars(nd: &NdArrayType, bytes: &mut [u8]) {
    if cfg!(target_endian = "big") {
        let width = nd.swap_width();
        if width > 1 {
            for scalar in bytes.chunks_exact_mut(width) {
                scalar.reverse();
            }
        }
    }
}

fn native_to_little(data_type: &DataType, bytes: &mut [u8]) {
    if cfg!(target_endian = "big") {
        for (offset, width) in data_type.swap_units().unwrap_or_default() {
            bytes[offset..offset + width].reverse();
        }
    }
}

fn arr<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

macro_rules! from_primitive {
    ($($t:ty => $typed:ident),*) => {$(
        impl From<$t> for FillValue {
            fn from(value: $t) -> Self {
                Self::typed(value.to_ne_bytes().to_vec(), Typed::$typed)
            }
        }
    )*};
}
from_primitive!(
    i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32,
    u64 => U64, f16 => F16, bf16 => BF16, f32 => F32, f64 => F64
);

impl From<bool> for FillValue {
    fn from(value: bool) -> Self {
        Self::typed(vec![u8::from(value)], Typed::Bool)
    }
}

impl From<&str> for FillValue {
    fn from(value: &str) -> Self {
        Self::typed(value.as_bytes().to_vec(), Typed::Str)
    }
}

impl From<String> for FillValue {
    fn from(value: String) -> Self {
        Self::typed(value.into_bytes(), Typed::Str)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Float {
    F16,
    BF16,
    F32,
    F64,
}

impl Float {
    fn width(self) -> usize {
        match self {
            Self::F16 | Self::BF16 => 2,
            Self::F32 => 4,
            Self::F64 => 8,
        }
    }

    /// The canonical quiet NaN: sign 0, top mantissa bit 1, other mantissa bits 0.
    fn canonical_nan(self) -> u64 {
        match self {
            Self::F16 => 0x7e00,
            Self::BF16 => 0x7fc0,
            Self::F32 => 0x7fc0_0000,
            Self::F64 => 0x7ff8_0000_0000_0000,
        }
    }

    fn bits_to_bytes(self, bits: u64) -> Vec<u8> {
        match self {
            // The casts keep the low bits, which hold the whole value.
            Self::F16 | Self::BF16 => (bits as u16).to_ne_bytes().to_vec(),
            Self::F32 => (bits as u32).to_ne_bytes().to_vec(),
            Self::F64 => bits.to_ne_bytes().to_vec(),
        }
    }

    fn bytes_to_bits(self, bytes: &[u8]) -> u64 {
        match self {
            Self::F16 | Self::BF16 => u64::from(u16::from_ne_bytes(arr(bytes))),
            Self::F32 => u64::from(u32::from_ne_bytes(arr(bytes))),
            Self::F64 => u64::from_ne_bytes(arr(bytes)),
        }
    }

    /// The value as `f64` (exact for every width).
    fn to_f64(self, bits: u64) -> f64 {
        match self {
            Self::F16 => f16::from_bits(bits as u16).to_f64(),
            Self::BF16 => bf16::from_bits(bits as u16).to_f64(),
            Self::F32 => f64::from(f32::from_bits(bits as u32)),
            Self::F64 => f64::from_bits(bits),
        }
    }
}

fn float_to_json(kind: Float, bytes: &[u8]) -> Value {
    let bits = kind.bytes_to_bits(bytes);
    let value = kind.to_f64(bits);
    if value.is_nan() {
        if bits == kind.canonical_nan() {
            Value::String("NaN".into())
        } else {
            Value::String(format!("0x{bits:0width$x}", width = kind.width() * 2))
        }
    } else if value.is_infinite() {
        Value::String(if value > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        // Finite, so `from_f64` cannot fail; fall back to null defensively.
        serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
    }
}

struct Ctx<'a> {
    data_type: &'a DataType,
    value: &'a Value,
}

impl Ctx<'_> {
    fn err(&self, reason: impl Into<String>) -> Error {
        Error::InvalidFillValue {
            data_type: self.data_type.to_string(),
            value: self.value.to_string(),
            reason: reason.into(),
        }
    }
}

fn parse(value: &Value, text: Option<&str>, data_type: &DataType) -> Result<FillValue> {
    let ctx = Ctx { data_type, value };
    let bytes = match data_type {
        DataType::Bool => match value {
            Value::Bool(b) => vec![u8::from(*b)],
            _ => return Err(ctx.err("expected true or false")),
        },
        DataType::Int8 => int::<i8>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::Int16 => int::<i16>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::Int32 => int::<i32>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::Int64 => int::<i64>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::UInt8 => int::<u8>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::UInt16 => int::<u16>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::UInt32 => int::<u32>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::UInt64 => int::<u64>(&ctx)?.to_ne_bytes().to_vec(),
        DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => match value {
            Value::String(s) if s == "NaT" => i64::MIN.to_ne_bytes().to_vec(),
            _ => int::<i64>(&ctx)?.to_ne_bytes().to_vec(),
        },
        DataType::Float16 => float(&ctx, value, text, Float::F16)?,
        DataType::BFloat16 => float(&ctx, value, text, Float::BF16)?,
        DataType::MiniFloat(format) => vec![mini_float(&ctx, text, *format)?],
        DataType::FixedPoint(fp) => {
            fp.raw_to_ne_bytes(fp.fill_from_json(value).map_err(|e| ctx.err(e))?)
        }
        DataType::Int2 => vec![small_int(&ctx, -2, 1)?],
        DataType::Int4 => vec![small_int(&ctx, -8, 7)?],
        DataType::UInt2 => vec![small_int(&ctx, 0, 3)?],
        DataType::UInt4 => vec![small_int(&ctx, 0, 15)?],
        DataType::FixedLengthUtf32 { length_bytes } => {
            let Value::String(s) = value else {
                return Err(ctx.err("expected a string"));
            };
            let mut bytes: Vec<u8> = s.chars().flat_map(|c| u32::from(c).to_ne_bytes()).collect();
            if bytes.len() > *length_bytes {
                return Err(ctx.err(format!("longer than {} code points", length_bytes / 4)));
            }
            bytes.resize(*length_bytes, 0);
            bytes
        }
        DataType::NullTerminatedBytes { length_bytes } | DataType::RawBytes { length_bytes } => {
            let Value::String(s) = value else {
                return Err(ctx.err("expected a base64 string"));
            };
            let mut bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| ctx.err(format!("not base64: {e}")))?;
            let exact = matches!(data_type, DataType::RawBytes { .. });
            if bytes.len() > *length_bytes || (exact && bytes.len() != *length_bytes) {
                return Err(ctx.err(format!(
                    "expected {length_bytes} bytes, found {}",
                    bytes.len()
                )));
            }
            bytes.resize(*length_bytes, 0);
            bytes
        }
        DataType::Float32 => float(&ctx, value, text, Float::F32)?,
        DataType::Float64 => float(&ctx, value, text, Float::F64)?,
        DataType::Complex64 | DataType::Complex128 => {
            let kind = if *data_type == DataType::Complex64 {
                Float::F32
            } else {
                Float::F64
            };
            let parts = value
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| ctx.err("expected [real, imaginary]"))?;
            // The text of each part, when the document's text is at hand.
            let texts: Option<Vec<&RawValue>> = text.and_then(|t| serde_json::from_str(t).ok());
            let part_text = |i: usize| texts.as_ref().and_then(|t| t.get(i)).map(|r| r.get());
            let mut bytes = float(&ctx, &parts[0], part_text(0), kind)?;
            bytes.extend(float(&ctx, &parts[1], part_text(1), kind)?);
            bytes
        }
        DataType::ComplexFloat(component) => {
            let parts = value
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| ctx.err("expected [real, imaginary]"))?;
            let texts: Option<Vec<&RawValue>> = text.and_then(|t| serde_json::from_str(t).ok());
            let part_text = |i: usize| texts.as_ref().and_then(|t| t.get(i)).map(|r| r.get());
            let part = |i: usize| {
                parse(&parts[i], part_text(i), &component.data_type()).map_err(|e| match e {
                    Error::InvalidFillValue { reason, .. } => {
                        ctx.err(format!("the {} part: {reason}", ["real", "imaginary"][i]))
                    }
                    other => other,
                })
            };
            let mut bytes = part(0)?.bytes;
            bytes.extend(part(1)?.bytes);
            bytes
        }
        DataType::RawBits(n) => {
            let items = value
                .as_array()
                .filter(|a| a.len() == *n)
                .ok_or_else(|| ctx.err(format!("expected an array of {n} integers 0-255")))?;
            byte_list(&ctx, items)?
        }
        DataType::String => match value {
            Value::String(s) => s.as_bytes().to_vec(),
            _ => return Err(ctx.err("expected a string")),
        },
        DataType::Bytes => match value {
            Value::String(s) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(s))
                .map_err(|e| ctx.err(format!("not base64: {e}")))?,
            Value::Array(items) => byte_list(&ctx, items)?,
            _ => return Err(ctx.err("expected a base64 string or an array of integers 0-255")),
        },
        DataType::NdArray(nd) => {
            let Value::String(s) = value else {
                return Err(
                    ctx.err("expected a base64 string of the element's little-endian bytes")
                );
            };
            let mut bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| ctx.err(format!("not base64: {e}")))?;
            swap_scalars(nd, &mut bytes);
            let value = FillValue::untyped(bytes);
            value.check(data_type)?;
            value.bytes
        }
        DataType::Optional(o) => match value {
            Value::Null => vec![0; o.inner_size().unwrap_or(0) + 1],
            Value::Array(items) if items.len() == 1 => {
                let texts: Option<Vec<&RawValue>> = text.and_then(|t| serde_json::from_str(t).ok());
                let inner_text = texts.as_ref().and_then(|t| t.first()).map(|r| r.get());
                let mut bytes = parse(&items[0], inner_text, o.inner())
                    .map_err(|e| match e {
                        Error::InvalidFillValue { reason, .. } => {
                            ctx.err(format!("the inner value: {reason}"))
                        }
                        other => other,
                    })?
                    .bytes;
                bytes.push(1);
                bytes
            }
            _ => {
                return Err(ctx.err(
                    "expected null (a missing value) or a one-element array holding the value",
                ));
            }
        },
        DataType::Struct(st) => match value {
            Value::Object(values) => {
                if let Some(extra) = values.keys().find(|k| st.field(k).is_none()) {
                    return Err(ctx.err(format!("the struct has no field {extra:?}")));
                }
                let mut bytes = Vec::with_capacity(st.size());
                for field in st.fields() {
                    let value = values
                        .get(&field.name)
                        .ok_or_else(|| ctx.err(format!("no value for field {:?}", field.name)))?;
                    let part = parse(value, None, &field.data_type)
                        .map_err(|e| ctx.err(format!("field {:?}: {e}", field.name)))?;
                    bytes.extend(part.bytes);
                }
                bytes
            }
            // zarr-python 3.1's form: base64 of the packed little-endian record.
            Value::String(s) => {
                let mut bytes = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(s))
                    .map_err(|e| ctx.err(format!("not base64: {e}")))?;
                if bytes.len() != st.size() {
                    return Err(ctx.err(format!(
                        "expected {} bytes, found {}",
                        st.size(),
                        bytes.len()
                    )));
                }
                native_to_little(data_type, &mut bytes);
                let filled = FillValue::untyped(bytes);
                filled.check(data_type)?;
                return Ok(filled);
            }
            _ => {
                return Err(
                    ctx.err("expected an object of the fields' fill values or a base64 string")
                );
            }
        },
    };
    Ok(FillValue::untyped(bytes))
}

/// An integer of a sub-byte type, range-checked, as the byte that stores it.
fn small_int(ctx: &Ctx<'_>, min: i8, max: i8) -> Result<u8> {
    let v: i8 = int(ctx)?;
    if !(min..=max).contains(&v) {
        return Err(ctx.err(format!("{v} is out of range {min}..={max}")));
    }
    Ok(v as u8)
}

fn mini_float(ctx: &Ctx<'_>, text: Option<&str>, format: MiniFloat) -> Result<u8> {
    match ctx.value {
        Value::String(s) => {
            let code = match s.as_str() {
                "NaN" => format.nan(),
                "Infinity" => format.infinity(),
                "-Infinity" => format.infinity().map(|c| c | format.sign_bit()),
                hex if hex.starts_with("0x") => {
                    let digits = &hex[2..];
                    if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(ctx.err("a hex fill value needs exactly 2 hex digits after 0x"));
                    }
                    u8::from_str_radix(digits, 16).ok()
                }
                _ => {
                    return Err(ctx.err(
                        "expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or \"0x…\"",
                    ));
                }
            };
            code.ok_or_else(|| ctx.err(format!("{} has no {s}", format.name())))
        }
        Value::Number(n) => {
            let owned = n.to_string();
            let text = text.unwrap_or(&owned);
            format
                .round_decimal(text)
                .ok_or_else(|| ctx.err(format!("{n} is out of range")))
        }
        _ => Err(ctx.err("expected a number or a string")),
    }
}

fn minifloat_to_json(format: MiniFloat, code: u8) -> Value {
    let value = format.decode(code);
    if value.is_nan() {
        if Some(code) == format.nan() {
            Value::String("NaN".into())
        } else {
            Value::String(format!("0x{code:02x}"))
        }
    } else if value.is_infinite() {
        Value::String(if value > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
    }
}

fn byte_list(ctx: &Ctx<'_>, items: &[Value]) -> Result<Vec<u8>> {
    items
        .iter()
        .map(|v| {
            v.as_u64()
                .and_then(|x| u8::try_from(x).ok())
                .ok_or_else(|| ctx.err(format!("{v} is not an integer 0-255")))
        })
        .collect()
}

/// An integer fill value. Integral numbers written with a fraction or an exponent (`1.0`,
/// `1e2`) are accepted, as zarr-python accepts them, below 2^53 in magnitude, where they are
/// certainly exact; larger ones must be plain JSON integers.
fn int<T: TryFrom<i64> + TryFrom<u64>>(ctx: &Ctx<'_>) -> Result<T> {
    let Value::Number(n) = ctx.value else {
        return Err(ctx.err("expected an integer"));
    };
    let out_of_range = || ctx.err(format!("{n} is out of range"));
    if let Some(u) = n.as_u64() {
        return T::try_from(u).map_err(|_| out_of_range());
    }
    if let Some(i) = n.as_i64() {
        return T::try_from(i).map_err(|_| out_of_range());
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(ctx.err("expected an integer"));
    }
    // Beyond 2^53 a number with a fraction or exponent may have been rounded on parsing
    // (9007199254740993.0 parses as ...992): refuse it rather than guess.
    if f.abs() >= 2f64.powi(53) {
        return Err(ctx.err(format!(
            "{n}: an integer of 2^53 or more must be written without a fraction or exponent \
             to be exact"
        )));
    }
    // |f| < 2^53 converts exactly to i64.
    T::try_from(f as i64).map_err(|_| out_of_range())
}

fn float(ctx: &Ctx<'_>, value: &Value, text: Option<&str>, kind: Float) -> Result<Vec<u8>> {
    match value {
        Value::String(s) => {
            let bits = match s.as_str() {
                "NaN" => kind.canonical_nan(),
                "Infinity" => kind.bits_for(f64::INFINITY),
                "-Infinity" => kind.bits_for(f64::NEG_INFINITY),
                hex if hex.starts_with("0x") => {
                    let digits = &hex[2..];
                    if digits.len() != kind.width() * 2
                        || !digits.bytes().all(|b| b.is_ascii_hexdigit())
                    {
                        return Err(ctx.err(format!(
                            "a hex fill value needs exactly {} hex digits after 0x",
                            kind.width() * 2
                        )));
                    }
                    u64::from_str_radix(digits, 16).map_err(|e| ctx.err(e.to_string()))?
                }
                _ => {
                    return Err(ctx.err(
                        "expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or a \"0x…\" bit pattern",
                    ));
                }
            };
            Ok(kind.bits_to_bytes(bits))
        }
        Value::Number(n) => {
            let owned;
            let text = match text {
                Some(t) => t.trim(),
                None => {
                    owned = n.to_string();
                    &owned
                }
            };
            let bits = match kind {
                Float::F64 => text.parse::<f64>().map(f64::to_bits),
                Float::F32 => text.parse::<f32>().map(|x| u64::from(x.to_bits())),
                Float::F16 | Float::BF16 => text
                    .parse::<f64>()
                    .map(|x| round_decimal_16(text, kind).unwrap_or(kind.bits_for(x))),
            }
            .map_err(|e| ctx.err(format!("not a number: {e}")))?;
            if kind.to_f64(bits).is_infinite() {
                return Err(ctx.err(format!("{n} is out of range")));
            }
            Ok(kind.bits_to_bytes(bits))
        }
        _ => Err(ctx.err("expected a number or a string")),
    }
}

impl Float {
    fn bits_for(self, value: f64) -> u64 {
        match self {
            Self::F16 => u64::from(f16::from_f64(value).to_bits()),
            Self::BF16 => u64::from(bf16::from_f64(value).to_bits()),
            Self::F32 => u64::from((value as f32).to_bits()),
            Self::F64 => value.to_bits(),
        }
    }

    /// The power of two at which finite numbers round to infinity (2^(emax + 1)).
    fn overflow_threshold(self) -> f64 {
        match self {
            Self::F16 => 65536.0,
            Self::BF16 | Self::F32 => 2f64.powi(128),
            Self::F64 => f64::MAX,
        }
    }
}

/// Round a JSON decimal to the nearest `float16` or `bfloat16` (ties to even), exactly.
///
/// Parsing to `f64` first and then rounding to 16 bits rounds twice; that is wrong only when
/// the `f64` lands exactly on the midpoint between two 16-bit values while the decimal does
/// not, so at midpoints [`minifloat::pick`] compares the decimal digits themselves.
fn round_decimal_16(text: &str, kind: Float) -> Option<u64> {
    let x: f64 = text.trim().parse().ok()?;
    let nearest = kind.bits_for(x);
    let nearest_value = kind.to_f64(nearest);
    if nearest_value == x || !x.is_finite() {
        return Some(nearest);
    }
    // Neighbours in value order; an infinity stands for the power of two just past the top.
    let (up, down) = (next_up_16(nearest), next_down_16(nearest));
    let (lo, hi) = if nearest_value < x {
        (nearest, up)
    } else {
        (down, nearest)
    };
    let value = |bits: u64| {
        let v = kind.to_f64(bits);
        if v.is_infinite() {
            v.signum() * kind.overflow_threshold()
        } else {
            v
        }
    };
    Some(minifloat::pick(text, x, (lo, value(lo)), (hi, value(hi))))
}

/// The next 16-bit IEEE code toward +infinity.
fn next_up_16(bits: u64) -> u64 {
    match bits {
        0x8000 => 0x0001,
        b if b & 0x8000 == 0 => b + 1,
        b => b - 1,
    }
}

/// The next 16-bit IEEE code toward -infinity.
fn next_down_16(bits: u64) -> u64 {
    match bits {
        0x0000 => 0x8001,
        b if b & 0x8000 == 0 => b - 1,
        b => b + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fv(value: Value, dt: impl std::borrow::Borrow<DataType>) -> Vec<u8> {
        let dt = dt.borrow();
        FillValue::from_json(&value, dt)
            .unwrap_or_else(|e| panic!("{value} as {dt}: {e}"))
            .into_bytes()
    }

    fn text(text: &str, dt: DataType) -> Vec<u8> {
        FillValue::from_json_text(text, &dt)
            .unwrap_or_else(|e| panic!("{text} as {dt}: {e}"))
            .into_bytes()
    }

    fn err(value: Value, dt: impl std::borrow::Borrow<DataType>) -> String {
        let dt = dt.borrow();
        FillValue::from_json(&value, dt).unwrap_err().to_string()
    }

    #[test]
    fn integers_are_range_checked() {
        assert_eq!(fv(json!(-128), DataType::Int8), (-128i8).to_ne_bytes());
        assert!(err(json!(-129), DataType::Int8).contains("out of range"));
        assert!(err(json!(128), DataType::Int8).contains("out of range"));
        assert_eq!(fv(json!(255), DataType::UInt8), [255]);
        assert!(err(json!(256), DataType::UInt8).contains("out of range"));
        assert!(err(json!(-1), DataType::UInt32).contains("out of range"));
        assert_eq!(
            fv(json!(u64::MAX), DataType::UInt64),
            u64::MAX.to_ne_bytes()
        );
        assert_eq!(fv(json!(i64::MIN), DataType::Int64), i64::MIN.to_ne_bytes());
        assert_eq!(
            text("18446744073709551615", DataType::UInt64),
            u64::MAX.to_ne_bytes()
        );
        assert!(FillValue::from_json_text("18446744073709551616", &DataType::UInt64).is_err());
        assert_eq!(fv(json!(65535), DataType::UInt16), 65535u16.to_ne_bytes());
        // Lenient, like zarr-python: exact integral numbers with a fraction or exponent.
        assert_eq!(text("1.0", DataType::Int32), 1i32.to_ne_bytes());
        assert_eq!(text("1e2", DataType::Int32), 100i32.to_ne_bytes());
        assert_eq!(
            text("9007199254740991.0", DataType::Int64),
            ((1i64 << 53) - 1).to_ne_bytes()
        );
        assert_eq!(
            text("18446744073709551615", DataType::UInt64),
            u64::MAX.to_ne_bytes()
        );
        // Past 2^53 a fraction or exponent may hide rounding: refused, not guessed.
        for rounded in ["9007199254740993.0", "1e19", "-9.3e18"] {
            let value: Value = serde_json::from_str(rounded).unwrap();
            let dt = if rounded.starts_with('-') {
                DataType::Int64
            } else {
                DataType::UInt64
            };
            assert!(FillValue::from_json(&value, &dt).is_err(), "{rounded}");
        }
        assert!(err(json!(1.5), DataType::Int32).contains("expected an integer"));
        assert!(err(json!("1"), DataType::Int32).contains("expected an integer"));
        assert!(err(json!(null), DataType::Int32).contains("expected an integer"));
    }

    #[test]
    fn integers_write_back_exactly() {
        for (value, dt) in [
            (json!(u64::MAX), DataType::UInt64),
            (json!(i64::MIN), DataType::Int64),
            (json!(-5), DataType::Int16),
            (json!(7), DataType::UInt8),
        ] {
            let f = FillValue::from_json(&value, &dt).unwrap();
            assert_eq!(f.to_json(&dt).unwrap(), value);
        }
    }

    #[test]
    fn bools() {
        assert_eq!(fv(json!(true), DataType::Bool), [1]);
        assert_eq!(fv(json!(false), DataType::Bool), [0]);
        assert!(err(json!(1), DataType::Bool).contains("true or false"));
        assert!(FillValue::new([2]).to_json(&DataType::Bool).is_err());
    }

    #[test]
    fn special_floats_are_exact() {
        assert_eq!(fv(json!("NaN"), DataType::Float16), 0x7e00u16.to_ne_bytes());
        assert_eq!(
            fv(json!("NaN"), DataType::Float32),
            0x7fc0_0000u32.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("NaN"), DataType::Float64),
            0x7ff8_0000_0000_0000u64.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("Infinity"), DataType::Float16),
            0x7c00u16.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("-Infinity"), DataType::Float32),
            0xff80_0000u32.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("Infinity"), DataType::Float64),
            f64::INFINITY.to_ne_bytes()
        );
        for dt in [DataType::Float16, DataType::Float32, DataType::Float64] {
            for s in ["NaN", "Infinity", "-Infinity"] {
                let f = FillValue::from_json(&json!(s), &dt).unwrap();
                assert_eq!(f.to_json(&dt).unwrap(), json!(s));
            }
            for bad in ["nan", "inf", "+Infinity", "NAN", "0X7fc00000", "0x1"] {
                assert!(
                    FillValue::from_json(&json!(bad), &dt).is_err(),
                    "{bad} for {dt}"
                );
            }
        }
    }

    #[test]
    fn hex_bit_patterns_keep_payloads() {
        assert_eq!(
            fv(json!("0x7fc00001"), DataType::Float32),
            0x7fc0_0001u32.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("0x7FC00001"), DataType::Float32),
            0x7fc0_0001u32.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("0xffc00000"), DataType::Float32),
            0xffc0_0000u32.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("0x3ff0000000000000"), DataType::Float64),
            1.0f64.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("0x7e01"), DataType::Float16),
            0x7e01u16.to_ne_bytes()
        );
        // Non-canonical NaNs are written back as hex, lowercase, full width.
        for (s, dt) in [
            ("0x7fc00001", DataType::Float32),
            ("0xffc00000", DataType::Float32),
            ("0x7ff8000000000001", DataType::Float64),
            ("0xfe00", DataType::Float16),
        ] {
            let f =
                FillValue::from_json(&json!(s.to_uppercase().replace("0X", "0x")), &dt).unwrap();
            assert_eq!(f.to_json(&dt).unwrap(), json!(s));
        }
        // A hex pattern that is an ordinary number reads as that number and writes as a number.
        let one = FillValue::from_json(&json!("0x3c00"), &DataType::Float16).unwrap();
        assert_eq!(one.to_json(&DataType::Float16).unwrap(), json!(1.0));
        assert!(err(json!("0x7fc0000"), DataType::Float32).contains("8 hex digits"));
        assert!(err(json!("0x7fc0000g"), DataType::Float32).contains("8 hex digits"));
    }

    #[test]
    fn numbers_round_ties_to_even() {
        // float32: 1 + 2^-24 is the midpoint of 1 and 1 + 2^-23: ties to even gives 1.
        assert_eq!(
            text("1.000000059604644775390625", DataType::Float32),
            1.0f32.to_ne_bytes()
        );
        // Just above the midpoint (beyond f64 precision) rounds up.
        assert_eq!(
            text("1.0000000596046447753906250000000001", DataType::Float32),
            (1.0f32 + f32::EPSILON).to_ne_bytes()
        );
        // float16: 1 + 2^-11 is the midpoint of 1 and 1 + 2^-10.
        assert_eq!(
            text("1.00048828125", DataType::Float16),
            f16::ONE.to_ne_bytes()
        );
        assert_eq!(
            text("1.00048828125000000000001", DataType::Float16),
            (f16::ONE + f16::EPSILON).to_ne_bytes()
        );
        assert_eq!(
            text("-1.00048828125000000000001", DataType::Float16),
            (-(f16::ONE + f16::EPSILON)).to_ne_bytes()
        );
        assert_eq!(
            text("1.00048828124999999999999", DataType::Float16),
            f16::ONE.to_ne_bytes()
        );
        // 1 + 3*2^-11 is the midpoint of 1 + 2^-10 (odd) and 1 + 2^-9 (even): rounds up.
        assert_eq!(
            text("1.00146484375", DataType::Float16),
            f16::from_f64(1.001953125).to_ne_bytes()
        );
        assert_eq!(text("0.1", DataType::Float32), 0.1f32.to_ne_bytes());
        assert_eq!(text("0.1", DataType::Float64), 0.1f64.to_ne_bytes());
        assert_eq!(text("-0.0", DataType::Float64), (-0.0f64).to_ne_bytes());
        assert_eq!(text("-0.0", DataType::Float16), f16::NEG_ZERO.to_ne_bytes());
        assert_eq!(text("65504", DataType::Float16), f16::MAX.to_ne_bytes());
        assert_eq!(text("65519.99", DataType::Float16), f16::MAX.to_ne_bytes());
        assert_eq!(text("1e-30", DataType::Float16), f16::ZERO.to_ne_bytes());
    }

    #[test]
    fn out_of_range_floats_are_refused() {
        for (t, dt) in [
            ("65520", DataType::Float16),
            ("1e5", DataType::Float16),
            ("-1e5", DataType::Float16),
            ("3.5e38", DataType::Float32),
        ] {
            let e = FillValue::from_json_text(t, &dt).unwrap_err().to_string();
            assert!(e.contains("out of range"), "{t} as {dt}: {e}");
        }
        // serde_json refuses numbers beyond f64.
        assert!(FillValue::from_json_text("1e400", &DataType::Float64).is_err());
    }

    #[test]
    fn floats_write_as_exact_f64_values() {
        let f = FillValue::from(0.1f32);
        assert_eq!(
            f.to_json(&DataType::Float32).unwrap(),
            json!(0.10000000149011612)
        );
        let back = FillValue::from_json(&json!(0.10000000149011612), &DataType::Float32).unwrap();
        assert_eq!(back, f);
        assert_eq!(
            FillValue::from(-0.0f64)
                .to_json(&DataType::Float64)
                .unwrap()
                .to_string(),
            "-0.0"
        );
        assert_eq!(
            FillValue::from(0.0f64)
                .to_json(&DataType::Float64)
                .unwrap()
                .to_string(),
            "0.0"
        );
    }

    #[test]
    fn complex() {
        let mut expected = 1.0f32.to_ne_bytes().to_vec();
        expected.extend(2.0f32.to_ne_bytes());
        assert_eq!(fv(json!([1, 2]), DataType::Complex64), expected);
        let mut expected = f64::NAN.to_ne_bytes().to_vec();
        expected.extend(f64::NEG_INFINITY.to_ne_bytes());
        assert_eq!(
            fv(json!(["NaN", "-Infinity"]), DataType::Complex128),
            expected
        );
        let f = FillValue::from_json(&json!(["NaN", "-Infinity"]), &DataType::Complex128).unwrap();
        assert_eq!(
            f.to_json(&DataType::Complex128).unwrap(),
            json!(["NaN", "-Infinity"])
        );
        assert_eq!(
            text(
                "[1.0000000596046447753906250000000001, 0.5]",
                DataType::Complex64
            )[..4],
            (1.0f32 + f32::EPSILON).to_ne_bytes()
        );
        assert!(err(json!([1]), DataType::Complex64).contains("[real, imaginary]"));
        assert!(err(json!(1), DataType::Complex64).contains("[real, imaginary]"));
    }

    /// The `complex_*` types take each part as a fill value of their component type: its
    /// special values, hex bit patterns and rounding.
    #[test]
    fn complex_types_named_after_their_parts() {
        use crate::{FloatFormat, MiniFloat};
        let c16 = DataType::ComplexFloat(FloatFormat::Float16);
        let mut expected = half::f16::from_f32(1.5).to_ne_bytes().to_vec();
        expected.extend(half::f16::NEG_INFINITY.to_ne_bytes());
        assert_eq!(fv(json!([1.5, "-Infinity"]), &c16), expected);
        let f = FillValue::from_json(&json!([1.5, "-Infinity"]), &c16).unwrap();
        assert_eq!(f.to_json(&c16).unwrap(), json!([1.5, "-Infinity"]));

        let bf16 = DataType::ComplexFloat(FloatFormat::BFloat16);
        let mut expected = 0x7fc1u16.to_ne_bytes().to_vec();
        expected.extend(half::bf16::from_f32(-2.0).to_ne_bytes());
        assert_eq!(fv(json!(["0x7fc1", -2]), &bf16), expected);
        let f = FillValue::from_json(&json!(["0x7fc1", -2]), &bf16).unwrap();
        assert_eq!(f.to_json(&bf16).unwrap(), json!(["0x7fc1", -2.0]));

        // complex_float32 holds what complex64 holds.
        let c32 = DataType::ComplexFloat(FloatFormat::Float32);
        assert_eq!(
            fv(json!([1, "NaN"]), &c32),
            fv(json!([1, "NaN"]), DataType::Complex64)
        );
        let c64 = DataType::ComplexFloat(FloatFormat::Float64);
        assert_eq!(fv(json!([0.1, -0.0]), &c64), {
            let mut b = 0.1f64.to_ne_bytes().to_vec();
            b.extend((-0.0f64).to_ne_bytes());
            b
        });

        // One byte per part for the small floats.
        let e4m3 = DataType::ComplexFloat(FloatFormat::Mini(MiniFloat::E4M3));
        assert_eq!(fv(json!([1.0, "NaN"]), &e4m3).len(), 2);
        assert_eq!(fv(json!([1.0, 0]), &e4m3), [0x38, 0x00]);
        let f = FillValue::from_json(&json!([1.0, -0.5]), &e4m3).unwrap();
        assert_eq!(f.to_json(&e4m3).unwrap(), json!([1.0, -0.5]));

        // Errors name the part.
        let e = err(
            json!([1, "Infinity"]),
            DataType::ComplexFloat(FloatFormat::Mini(MiniFloat::E4M3FN)),
        );
        assert!(e.contains("imaginary part"), "{e}");
        assert!(err(json!([1, 2, 3]), &c16).contains("[real, imaginary]"));
        assert!(err(json!("NaN"), &c16).contains("[real, imaginary]"));
        // Out of range for the component: float16 tops out at 65504.
        assert!(err(json!([1e6, 0]), &c16).contains("real part"));
    }

    #[test]
    fn raw_bits_strings_bytes_datetimes() {
        assert_eq!(fv(json!([1, 2, 255]), DataType::RawBits(3)), [1, 2, 255]);
        assert!(err(json!([1, 2]), DataType::RawBits(3)).contains("3 integers"));
        assert!(err(json!([1, 2, 256]), DataType::RawBits(3)).contains("256"));
        assert_eq!(fv(json!("héllo"), DataType::String), "héllo".as_bytes());
        assert!(err(json!(1), DataType::String).contains("expected a string"));
        assert_eq!(fv(json!("AQID"), DataType::Bytes), [1, 2, 3]);
        assert_eq!(fv(json!([1, 2, 3]), DataType::Bytes), [1, 2, 3]);
        assert_eq!(fv(json!(""), DataType::Bytes), Vec::<u8>::new());
        assert!(err(json!("***"), DataType::Bytes).contains("base64"));
        assert_eq!(
            FillValue::new([1, 2, 3]).to_json(&DataType::Bytes).unwrap(),
            json!("AQID")
        );
        let dt = DataType::DateTime64 {
            unit: crate::TimeUnit::Second,
            scale_factor: 1,
        };
        assert_eq!(fv(json!("NaT"), &dt), i64::MIN.to_ne_bytes());
        assert_eq!(
            fv(json!(-9223372036854775808i64), &dt),
            i64::MIN.to_ne_bytes()
        );
        assert_eq!(fv(json!(86400), &dt), 86400i64.to_ne_bytes());
        assert_eq!(
            FillValue::from_json(&json!("NaT"), &dt)
                .unwrap()
                .to_json(&dt)
                .unwrap(),
            json!(i64::MIN)
        );
        assert_eq!(
            FillValue::default_for(&dt).as_bytes(),
            i64::MIN.to_ne_bytes()
        );
        assert_eq!(
            FillValue::default_for(&DataType::Float32).as_bytes(),
            [0; 4]
        );
        assert!(
            FillValue::default_for(&DataType::String)
                .as_bytes()
                .is_empty()
        );
    }

    #[test]
    fn small_floats_and_ints() {
        assert_eq!(
            fv(json!("NaN"), DataType::BFloat16),
            0x7fc0u16.to_ne_bytes()
        );
        assert_eq!(
            fv(json!(1.5), DataType::BFloat16),
            bf16::from_f32(1.5).to_ne_bytes()
        );
        // 1 + 2^-8 is the midpoint of 1 (even) and 1 + 2^-7 for bfloat16.
        assert_eq!(
            text("1.00390625", DataType::BFloat16),
            bf16::ONE.to_ne_bytes()
        );
        assert_eq!(
            text("1.0039062500000000000000001", DataType::BFloat16),
            (bf16::ONE + bf16::EPSILON).to_ne_bytes()
        );
        let f = FillValue::from_json(&json!("0x7fc1"), &DataType::BFloat16).unwrap();
        assert_eq!(f.to_json(&DataType::BFloat16).unwrap(), json!("0x7fc1"));
        let e4m3fn = DataType::MiniFloat(MiniFloat::E4M3FN);
        assert_eq!(fv(json!(0.0), &e4m3fn), [0]);
        assert_eq!(fv(json!("NaN"), &e4m3fn), [0x7f]);
        assert!(err(json!("Infinity"), &e4m3fn).contains("has no Infinity"));
        assert!(err(json!(1000), &e4m3fn).contains("out of range"));
        assert_eq!(FillValue::new([0x3c]).to_json(&e4m3fn).unwrap(), json!(1.5));
        let e5m2 = DataType::MiniFloat(MiniFloat::E5M2);
        assert_eq!(fv(json!("-Infinity"), &e5m2), [0xfc]);
        assert_eq!(
            FillValue::new([0xfc]).to_json(&e5m2).unwrap(),
            json!("-Infinity")
        );
        assert_eq!(
            FillValue::new([0x7f]).to_json(&e5m2).unwrap(),
            json!("0x7f")
        );
        assert!(err(json!("NaN"), DataType::MiniFloat(MiniFloat::F4E2M1FN)).contains("has no NaN"));
        assert_eq!(fv(json!(-8), DataType::Int4), [0xf8]);
        assert_eq!(
            FillValue::new([0xf8]).to_json(&DataType::Int4).unwrap(),
            json!(-8)
        );
        assert!(err(json!(8), DataType::Int4).contains("out of range"));
        assert!(err(json!(-3), DataType::Int2).contains("out of range"));
        assert_eq!(fv(json!(15), DataType::UInt4), [15]);
        assert!(err(json!(4), DataType::UInt2).contains("out of range"));
    }

    #[test]
    fn fixed_length_text_and_bytes() {
        let utf32 = DataType::FixedLengthUtf32 { length_bytes: 12 };
        let mut expected: Vec<u8> = "ab"
            .chars()
            .flat_map(|c| u32::from(c).to_ne_bytes())
            .collect();
        expected.resize(12, 0);
        assert_eq!(fv(json!("ab"), &utf32), expected);
        assert_eq!(
            FillValue::new(expected).to_json(&utf32).unwrap(),
            json!("ab")
        );
        assert!(err(json!("abcd"), &utf32).contains("longer than 3"));
        // NULs inside the value are kept (as NumPy keeps them); trailing ones pad it.
        let inner = fv(json!("a\u{0}b"), &utf32);
        assert_eq!(
            FillValue::new(inner).to_json(&utf32).unwrap(),
            json!("a\u{0}b")
        );
        assert_eq!(
            FillValue::new(vec![0; 12]).to_json(&utf32).unwrap(),
            json!("")
        );
        let s4 = DataType::NullTerminatedBytes { length_bytes: 4 };
        assert_eq!(fv(json!("YWI="), &s4), b"ab\0\0");
        assert_eq!(
            FillValue::new(*b"ab\0\0").to_json(&s4).unwrap(),
            json!("YWI=")
        );
        let v3 = DataType::RawBytes { length_bytes: 3 };
        assert_eq!(fv(json!("AAAA"), &v3), [0, 0, 0]);
        assert!(err(json!("AA=="), &v3).contains("expected 3 bytes"));
    }

    #[test]
    fn check_catches_wrong_sizes() {
        assert!(FillValue::from(1u8).check(&DataType::UInt16).is_err());
        assert!(FillValue::new(vec![0xff]).check(&DataType::String).is_err());
        assert!(FillValue::from(1u16).check(&DataType::UInt16).is_ok());
    }

    #[test]
    fn struct_fill_values_read_both_forms() {
        let dt = DataType::from_json(
            &json!({"name": "struct", "configuration": {"fields": [
                ["id", "int32"], ["flags", "uint8"], ["value", "float64"],
                ["p", {"name": "struct", "configuration": {"fields": [["ok", "bool"]]}}]]}}),
            "data_type",
        )
        .unwrap();
        let mut expected = 1i32.to_ne_bytes().to_vec();
        expected.push(2);
        expected.extend(3.5f64.to_ne_bytes());
        expected.push(1);
        let object = json!({"id": 1, "flags": 2, "value": 3.5, "p": {"ok": true}});
        assert_eq!(fv(object.clone(), &dt), expected);
        assert_eq!(
            FillValue::new(expected.clone()).to_json(&dt).unwrap(),
            object
        );
        // zarr-python's base64 of the packed little-endian record (as it wrote it for
        // (1, 2, 3.5, True)).
        let DataType::Struct(st) = &dt else {
            unreachable!()
        };
        let structured = DataType::Struct(st.clone().structured());
        assert_eq!(fv(json!("AQAAAAIAAAAAAAAMQAE="), &structured), expected);
        assert_eq!(
            FillValue::new(expected).to_json(&structured).unwrap(),
            json!("AQAAAAIAAAAAAAAMQAE=")
        );
        for (value, needle) in [
            (
                json!({"id": 1, "flags": 2, "value": 3.5}),
                "no value for field \"p\"",
            ),
            (
                json!({"id": 1, "flags": 2, "value": 3.5, "p": {"ok": true}, "z": 0}),
                "no field",
            ),
            (
                json!({"id": 1, "flags": 300, "value": 3.5, "p": {"ok": true}}),
                "flags",
            ),
            (json!("AQAA"), "expected 14 bytes"),
            (json!("AQAAAAIAAAAAAAAMQAI="), "bool"),
            (json!(7), "an object"),
        ] {
            let e = err(value.clone(), &dt);
            assert!(
                e.contains(needle),
                "{value}: `{e}` should contain `{needle}`"
            );
        }
    }

    #[test]
    fn optional_fill_values_are_null_or_a_one_element_array() {
        let dt: DataType = "zarrs.optional<uint8>".parse().unwrap();
        assert_eq!(fv(json!(null), &dt), [0, 0]);
        assert_eq!(fv(json!([42]), &dt), [42, 1]);
        assert_eq!(FillValue::new([42, 1]).to_json(&dt).unwrap(), json!([42]));
        assert_eq!(FillValue::new([0, 0]).to_json(&dt).unwrap(), json!(null));
        // The table of the zarr-extensions text, nested.
        let nested: DataType = "zarrs.optional<zarrs.optional<uint8>>".parse().unwrap();
        assert_eq!(fv(json!(null), &nested), [0, 0, 0]);
        assert_eq!(fv(json!([null]), &nested), [0, 0, 1]);
        assert_eq!(fv(json!([[42]]), &nested), [42, 1, 1]);
        for bytes in [[0, 0, 0], [0, 0, 1], [42, 1, 1]] {
            let value = FillValue::new(bytes).to_json(&nested).unwrap();
            assert_eq!(fv(value, &nested), bytes);
        }
        // Floats keep their exact text inside the array.
        let f32_opt: DataType = "zarrs.optional<float32>".parse().unwrap();
        let parsed = FillValue::from_json_text("[0.1]", &f32_opt).unwrap();
        assert_eq!(parsed.as_bytes()[..4], 0.1f32.to_ne_bytes());
        assert_eq!(fv(json!(["NaN"]), &f32_opt)[4], 1);
        // A plain Rust value is a present value.
        assert_eq!(
            FillValue::from(7u8).for_data_type(&dt).unwrap().as_bytes(),
            [7, 1]
        );
        for (value, needle) in [
            (json!(42), "one-element array"),
            (json!([1, 2]), "one-element array"),
            (json!([300]), "the inner value"),
            (json!([[1]]), "the inner value"),
        ] {
            let e = err(value.clone(), &dt);
            assert!(
                e.contains(needle),
                "{value}: `{e}` should contain `{needle}`"
            );
        }
        for (bytes, needle) in [
            (vec![5, 0], "must be zero"),
            (vec![5, 2], "validity byte"),
            (vec![5], "expected 2 bytes"),
        ] {
            let e = FillValue::new(bytes.clone())
                .check(&dt)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(needle),
                "{bytes:?}: `{e}` should contain `{needle}`"
            );
        }
        // Variable-length inner types: a missing value is the validity byte alone.
        let text: DataType = "zarrs.optional<string>".parse().unwrap();
        assert_eq!(fv(json!(null), &text), [0]);
        assert_eq!(fv(json!(["ab"]), &text), *b"ab\x01");
        assert_eq!(
            FillValue::new(*b"ab\x01").to_json(&text).unwrap(),
            json!(["ab"])
        );
        assert_eq!(FillValue::new([0]).to_json(&text).unwrap(), json!(null));
        for (bytes, needle) in [
            (vec![], "validity byte is missing"),
            (vec![b'a', 0], "must be zero"),
            (vec![0xff, 1], "UTF-8"),
        ] {
            let e = FillValue::new(bytes.clone())
                .check(&text)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(needle),
                "{bytes:?}: `{e}` should contain `{needle}`"
            );
        }
        assert_eq!(FillValue::default_for(&text).as_bytes(), [0]);
        assert_eq!(FillValue::default_for(&nested).as_bytes(), [0, 0, 0]);
        let bool_opt: DataType = "zarrs.optional<bool>".parse().unwrap();
        let e = FillValue::new([2, 1])
            .check(&bool_opt)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bool"), "{e}");
    }
}
