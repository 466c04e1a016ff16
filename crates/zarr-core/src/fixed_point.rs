//! Binary fixed-point data types (zarr-extensions proposals): the named `Q{m}f{n}` and
//! `N{m}f{n}` types and the parameterized `binary_fixed_point`.

use serde_json::{Map, Value};

use crate::data_type::DataType;
use crate::error::{Error, Result};
use crate::json;

/// Which family a [`FixedPointType`] belongs to: how it is named and scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FixedPointKind {
    /// `Q{m}f{n}`: a signed integer of `m + n + 1` bits (8, 16, 32 or 64) holding `i / 2^n`
    /// (`Fixed{Int*, n}` in FixedPointNumbers.jl).
    Q,
    /// `N{m}f{n}`: an unsigned "normed" integer of `m + n` bits holding `i / (2^n - 1)`
    /// (`Normed{UInt*, n}` in FixedPointNumbers.jl; `N0f8` maps `0..=255` onto `0.0..=1.0`).
    N,
    /// `binary_fixed_point`: any integer base type with `integer_bits` and
    /// `fractional_bits` that fit in it, holding `i / 2^fractional_bits`.
    Binary,
}

/// A fixed-point number type: an integer stored as its base integer type (and compatible
/// with every codec that type is), read as that integer divided by a scale.
///
/// | text | metadata | base | value of the stored integer `i` |
/// |---|---|---|---|
/// | `Q7f8` | `"Q7f8"` | `int16` | `i / 2^8` |
/// | `N0f8` | `"N0f8"` | `uint8` | `i / 255` |
/// | `binary_fixed_point<uint16, 8, 8>` | `{"name": "binary_fixed_point", "configuration": {"base_data_type": "uint16", "integer_bits": 8, "fractional_bits": 8}}` | `uint16` | `i / 2^8` |
///
/// The stored integers are the raw values ([`raw_from_ne_bytes`](Self::raw_from_ne_bytes),
/// `i128` so that every base type fits); [`to_f64`](Self::to_f64) and
/// [`from_f64`](Self::from_f64) convert to and from the numbers they stand for.
///
/// ```
/// use zarr_core::{DataType, FixedPointType};
///
/// let q = FixedPointType::q(0, 7)?;
/// assert_eq!(q.name(), "Q0f7");
/// assert_eq!(q.base_type(), DataType::Int8);
/// assert_eq!(q.to_f64(-128), -1.0);
/// assert_eq!(q.from_f64(0.5), Some(64));
/// assert_eq!(q.from_f64(1.0), None, "out of range");
///
/// let n: DataType = "N0f8".parse()?;
/// let DataType::FixedPoint(n) = n else { unreachable!() };
/// assert_eq!(n.to_f64(255), 1.0);
/// assert_eq!(n.from_f64(0.5), Some(128), "the nearest, 127.5 rounded to even");
/// # Ok::<(), zarr_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedPointType {
    kind: FixedPointKind,
    signed: bool,
    bits: u32,
    integer_bits: u32,
    fractional_bits: u32,
}

/// The integer base types, as (signed, bits).
fn base_of(data_type: &DataType) -> Option<(bool, u32)> {
    Some(match data_type {
        DataType::Int8 => (true, 8),
        DataType::Int16 => (true, 16),
        DataType::Int32 => (true, 32),
        DataType::Int64 => (true, 64),
        DataType::UInt8 => (false, 8),
        DataType::UInt16 => (false, 16),
        DataType::UInt32 => (false, 32),
        DataType::UInt64 => (false, 64),
        _ => return None,
    })
}

impl FixedPointType {
    /// `Q{integer_bits}f{fractional_bits}`: signed, `integer_bits + fractional_bits + 1`
    /// bits in all (8, 16, 32 or 64), scaled by `2^fractional_bits`.
    ///
    /// # Errors
    /// [`Error::InvalidField`] when the bits do not add up to an integer type.
    pub fn q(integer_bits: u32, fractional_bits: u32) -> Result<Self> {
        Self::named(FixedPointKind::Q, integer_bits, fractional_bits)
    }

    /// `N{integer_bits}f{fractional_bits}`: unsigned, `integer_bits + fractional_bits` bits
    /// in all (8, 16, 32 or 64), scaled by `2^fractional_bits - 1`; at least one fractional
    /// bit.
    ///
    /// # Errors
    /// [`Error::InvalidField`] when the bits do not add up to an integer type or there is no
    /// fractional bit.
    pub fn n(integer_bits: u32, fractional_bits: u32) -> Result<Self> {
        Self::named(FixedPointKind::N, integer_bits, fractional_bits)
    }

    fn named(kind: FixedPointKind, integer_bits: u32, fractional_bits: u32) -> Result<Self> {
        let signed = kind == FixedPointKind::Q;
        let letter = if signed { 'Q' } else { 'N' };
        let name = format!("{letter}{integer_bits}f{fractional_bits}");
        let bits = integer_bits
            .checked_add(fractional_bits)
            .and_then(|b| b.checked_add(u32::from(signed)))
            .filter(|b| matches!(b, 8 | 16 | 32 | 64))
            .ok_or_else(|| {
                Error::invalid(
                    "data_type",
                    format!(
                        "{name}: the integer bits{} and fractional bits must add up to 8, 16, \
                         32 or 64",
                        if signed { ", the sign bit" } else { "" }
                    ),
                )
            })?;
        if !signed && fractional_bits == 0 {
            return Err(Error::invalid(
                "data_type",
                format!("{name}: a normed type needs at least one fractional bit"),
            ));
        }
        Ok(Self {
            kind,
            signed,
            bits,
            integer_bits,
            fractional_bits,
        })
    }

    /// `binary_fixed_point` on the integer type `base`: `integer_bits` and
    /// `fractional_bits` (and a sign bit for a signed base) must fit in it; scaled by
    /// `2^fractional_bits`.
    ///
    /// # Errors
    /// [`Error::InvalidField`] when `base` is not an integer type of 8 to 64 bits or the
    /// bits do not fit in it.
    pub fn binary(base: &DataType, integer_bits: u32, fractional_bits: u32) -> Result<Self> {
        Self::binary_at(
            base,
            integer_bits,
            fractional_bits,
            "data_type.configuration",
        )
    }

    fn binary_at(
        base: &DataType,
        integer_bits: u32,
        fractional_bits: u32,
        field: &str,
    ) -> Result<Self> {
        let (signed, bits) = base_of(base).ok_or_else(|| {
            Error::invalid(
                json::join(field, "base_data_type"),
                format!("{base} is not one of int8 ... int64, uint8 ... uint64"),
            )
        })?;
        let needed = u64::from(integer_bits) + u64::from(fractional_bits) + u64::from(signed);
        if needed > u64::from(bits) {
            return Err(Error::invalid(
                field,
                format!(
                    "{integer_bits} integer bits and {fractional_bits} fractional bits{} need \
                     {needed} bits, more than {base} has",
                    if signed { " and the sign bit" } else { "" }
                ),
            ));
        }
        Ok(Self {
            kind: FixedPointKind::Binary,
            signed,
            bits,
            integer_bits,
            fractional_bits,
        })
    }

    /// The family: `Q`, `N` or `binary_fixed_point`.
    pub fn kind(&self) -> FixedPointKind {
        self.kind
    }

    /// The name written in metadata: `Q7f8`, `N0f8` or `binary_fixed_point`.
    pub fn name(&self) -> String {
        match self.kind {
            FixedPointKind::Q => format!("Q{}f{}", self.integer_bits, self.fractional_bits),
            FixedPointKind::N => format!("N{}f{}", self.integer_bits, self.fractional_bits),
            FixedPointKind::Binary => "binary_fixed_point".into(),
        }
    }

    /// The integer type the values are stored as (`int16` for `Q7f8`, `uint8` for `N0f8`).
    pub fn base_type(&self) -> DataType {
        match (self.signed, self.bits) {
            (true, 8) => DataType::Int8,
            (true, 16) => DataType::Int16,
            (true, 32) => DataType::Int32,
            (true, _) => DataType::Int64,
            (false, 8) => DataType::UInt8,
            (false, 16) => DataType::UInt16,
            (false, 32) => DataType::UInt32,
            (false, _) => DataType::UInt64,
        }
    }

    /// Whether the stored integers are signed.
    pub fn is_signed(&self) -> bool {
        self.signed
    }

    /// The element size in bytes.
    pub fn size(&self) -> usize {
        self.bits as usize / 8
    }

    /// The number of integer bits (not counting a sign bit).
    pub fn integer_bits(&self) -> u32 {
        self.integer_bits
    }

    /// The number of fractional bits.
    pub fn fractional_bits(&self) -> u32 {
        self.fractional_bits
    }

    /// What a stored integer is divided by: `2^fractional_bits`, or `2^fractional_bits - 1`
    /// for the normed `N` types.
    pub fn scale(&self) -> f64 {
        let power = 2f64.powi(self.fractional_bits as i32);
        if self.kind == FixedPointKind::N {
            power - 1.0
        } else {
            power
        }
    }

    /// The scale as an exact integer, when it fits in an `i128` (always but for 127 and
    /// more fractional bits, which no type has).
    fn scale_int(&self) -> i128 {
        let power = 1i128 << self.fractional_bits.min(126);
        if self.kind == FixedPointKind::N {
            power - 1
        } else {
            power
        }
    }

    /// The stored integers the type's bits describe, as `(min, max)`: the base type's range
    /// for `Q` and `N` types; for `binary_fixed_point`, the range of its integer and
    /// fractional bits (which may be narrower than the base type's).
    pub fn raw_range(&self) -> (i128, i128) {
        let magnitude = self.integer_bits + self.fractional_bits;
        if self.signed {
            (-(1i128 << magnitude), (1i128 << magnitude) - 1)
        } else {
            (0, (1i128 << magnitude) - 1)
        }
    }

    /// The number a stored integer stands for (the nearest `f64`).
    pub fn to_f64(self, raw: i128) -> f64 {
        raw as f64 / self.scale()
    }

    /// The stored integer nearest to `value` (ties to even), or `None` when `value` is not
    /// finite or falls outside [`raw_range`](Self::raw_range).
    pub fn from_f64(&self, value: f64) -> Option<i128> {
        if !value.is_finite() {
            return None;
        }
        let scaled = (value * self.scale()).round_ties_even();
        let (min, max) = self.raw_range();
        // Every bound is a power of two or one less, so comparing as f64 is exact enough:
        // `max as f64` may round up to the next power of two, which the cast below then
        // checks once more.
        if scaled < min as f64 || scaled > max as f64 {
            return None;
        }
        let raw = scaled as i128;
        (min..=max).contains(&raw).then_some(raw)
    }

    /// The stored integer of one element's native-endian bytes (`size()` of them).
    ///
    /// # Panics
    /// If `bytes` is not `size()` long.
    pub fn raw_from_ne_bytes(&self, bytes: &[u8]) -> i128 {
        assert_eq!(bytes.len(), self.size(), "one {} element", self.name());
        let mut wide = [0u8; 8];
        if cfg!(target_endian = "little") {
            wide[..bytes.len()].copy_from_slice(bytes);
        } else {
            wide[8 - bytes.len()..].copy_from_slice(bytes);
        }
        let unsigned = u64::from_ne_bytes(wide);
        if self.signed {
            // Sign-extend from the base width.
            let shift = 64 - self.bits;
            i128::from(((unsigned << shift) as i64) >> shift)
        } else {
            i128::from(unsigned)
        }
    }

    /// One element's native-endian bytes holding `raw`, which must be a value of the base
    /// type (higher bits are dropped).
    pub fn raw_to_ne_bytes(&self, raw: i128) -> Vec<u8> {
        let wide = (raw as u64).to_ne_bytes();
        let size = self.size();
        if cfg!(target_endian = "little") {
            wide[..size].to_vec()
        } else {
            wide[8 - size..].to_vec()
        }
    }

    /// The stored integer of a `fill_value`: a JSON number (the value to represent, rounded
    /// to the nearest stored integer, within [`raw_range`](Self::raw_range)) or a `"0x…"`
    /// string of the stored integer's bits (any value of the base type).
    pub(crate) fn fill_from_json(&self, value: &Value) -> std::result::Result<i128, String> {
        let (min, max) = self.raw_range();
        let out_of_range = || {
            format!(
                "out of range: {} holds {} to {}",
                self.name(),
                self.to_f64(min),
                self.to_f64(max)
            )
        };
        match value {
            Value::Number(n) => {
                // Integers exactly, however large; other numbers through f64.
                let exact = n
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from));
                match exact {
                    Some(int) => int
                        .checked_mul(self.scale_int())
                        .filter(|raw| (min..=max).contains(raw))
                        .ok_or_else(out_of_range),
                    None => self
                        .from_f64(n.as_f64().unwrap_or(f64::NAN))
                        .ok_or_else(out_of_range),
                }
            }
            Value::String(text) => {
                let digits = text
                    .strip_prefix("0x")
                    .or_else(|| text.strip_prefix("0X"))
                    .ok_or_else(|| {
                        if matches!(text.as_str(), "NaN" | "Infinity" | "-Infinity") {
                            "fixed-point types have no NaN or infinities".to_owned()
                        } else {
                            "expected a number, or the stored integer's bits as a \"0x…\" string"
                                .to_owned()
                        }
                    })?;
                let width = self.size() * 2;
                if digits.is_empty()
                    || digits.len() > width
                    || !digits.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    return Err(format!(
                        "expected 1 to {width} hexadecimal digits after 0x (the bits of {})",
                        self.base_type()
                    ));
                }
                let bits = u64::from_str_radix(digits, 16).map_err(|e| e.to_string())?;
                // Through the element's bytes: sign-extended for a signed base.
                Ok(self.raw_from_ne_bytes(&self.raw_to_ne_bytes(i128::from(bits))))
            }
            _ => Err("expected a number or a \"0x…\" string".into()),
        }
    }

    /// The `fill_value` of a stored integer: the number it stands for when that number
    /// reads back as the same integer (an integer when it is whole), the `"0x…"` bits
    /// otherwise.
    pub(crate) fn fill_to_json(&self, raw: i128) -> Value {
        let value = self.to_f64(raw);
        if self.from_f64(value) == Some(raw) {
            if value.fract() == 0.0 && value.abs() < 2f64.powi(53) {
                return Value::from(value as i64);
            }
            if let Some(n) = serde_json::Number::from_f64(value) {
                return Value::Number(n);
            }
        }
        let bits = (raw as u64) & (u64::MAX >> (64 - self.bits));
        Value::String(format!("0x{bits:0width$x}", width = self.size() * 2))
    }

    /// Parse a `Q{m}f{n}` or `N{m}f{n}` name; `None` for names of another shape.
    pub(crate) fn parse_name(name: &str) -> Option<Result<Self>> {
        let (kind, rest) = match name.as_bytes().first()? {
            b'Q' => (FixedPointKind::Q, &name[1..]),
            b'N' => (FixedPointKind::N, &name[1..]),
            _ => return None,
        };
        let (m, n) = rest.split_once('f')?;
        let number = |digits: &str| -> Option<u32> {
            let canonical = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'));
            canonical.then(|| digits.parse().ok()).flatten()
        };
        let (m, n) = (number(m)?, number(n)?);
        Some(Self::named(kind, m, n))
    }

    /// The `binary_fixed_point` configuration.
    pub(crate) fn from_configuration(config: &Map<String, Value>, field: &str) -> Result<Self> {
        json::deny_unknown(
            config,
            &["base_data_type", "fractional_bits", "integer_bits"],
            field,
        )?;
        let base_field = json::join(field, "base_data_type");
        let base_value = json::required(config, "base_data_type", field)?;
        if !base_value.is_string() {
            return Err(Error::invalid(&base_field, "expected a data type name"));
        }
        let base = DataType::from_json(base_value, &base_field)?;
        let count = |key: &str| -> Result<u32> {
            let at = json::join(field, key);
            let n = json::as_u64(json::required(config, key, field)?, &at)?;
            u32::try_from(n).ok().filter(|&n| n <= 64).ok_or_else(|| {
                Error::invalid(&at, format!("{n} is more bits than any base type has"))
            })
        };
        let (integer_bits, fractional_bits) = (count("integer_bits")?, count("fractional_bits")?);
        Self::binary_at(&base, integer_bits, fractional_bits, field)
    }

    /// The metadata form: the bare name, or the `binary_fixed_point` object.
    pub(crate) fn to_json(self) -> Value {
        match self.kind {
            FixedPointKind::Binary => {
                let mut config = Map::new();
                config.insert("base_data_type".into(), self.base_type().to_json());
                config.insert("fractional_bits".into(), self.fractional_bits.into());
                config.insert("integer_bits".into(), self.integer_bits.into());
                crate::ExtensionObject::with_configuration(self.name(), config).to_json()
            }
            _ => Value::String(self.name()),
        }
    }
}

impl std::fmt::Display for FixedPointType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            FixedPointKind::Binary => write!(
                f,
                "binary_fixed_point<{}, {}, {}>",
                self.base_type(),
                self.integer_bits,
                self.fractional_bits
            ),
            _ => f.write_str(&self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_parse_only_in_their_canonical_form() {
        let t = FixedPointType::parse_name("Q7f8").unwrap().unwrap();
        assert_eq!(
            (t.base_type(), t.integer_bits(), t.fractional_bits()),
            (DataType::Int16, 7, 8)
        );
        let t = FixedPointType::parse_name("N0f64").unwrap().unwrap();
        assert_eq!(t.base_type(), DataType::UInt64);
        assert_eq!(
            FixedPointType::parse_name("Q63f0").unwrap().unwrap().size(),
            8
        );
        for other in [
            "Q", "Qf", "Q7", "Q07f8", "Q7f08", "Q+7f8", "Nxf1", "q7f8", "int8",
        ] {
            assert!(FixedPointType::parse_name(other).is_none(), "{other}");
        }
        for bad in ["Q7f7", "N8f0", "Q64f0", "N4f3", "Q999999999999f1"] {
            let parsed = FixedPointType::parse_name(bad);
            assert!(matches!(parsed, Some(Err(_)) | None), "{bad}");
        }
        assert!(
            FixedPointType::parse_name("N8f0")
                .unwrap()
                .unwrap_err()
                .to_string()
                .contains("fractional bit")
        );
    }

    #[test]
    fn data_types_round_trip_through_metadata_and_text() {
        let binary = json!({"name": "binary_fixed_point", "configuration":
            {"base_data_type": "uint16", "fractional_bits": 8, "integer_bits": 8}});
        for (metadata, text, size) in [
            (json!("Q7f8"), "Q7f8", 2),
            (json!("N0f8"), "N0f8", 1),
            (json!("Q0f63"), "Q0f63", 8),
            (binary.clone(), "binary_fixed_point<uint16, 8, 8>", 2),
        ] {
            let dt = DataType::from_json(&metadata, "data_type").unwrap();
            assert_eq!(dt.to_json(), metadata);
            assert_eq!(dt.to_string(), text);
            assert_eq!(text.parse::<DataType>().unwrap(), dt);
            assert_eq!(dt.fixed_size(), Some(size));
            assert_eq!(dt.swap_units().unwrap().len(), usize::from(size > 1));
        }
        let err = |value: Value| {
            DataType::from_json(&value, "data_type")
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(json!({"name": "Q7f8", "configuration": {"x": 1}})).contains("no configuration")
        );
        assert!(err(json!("binary_fixed_point")).contains("needs its configuration"));
        let config = |c: Value| json!({"name": "binary_fixed_point", "configuration": c});
        for (c, what) in [
            (
                json!({"base_data_type": "int8", "integer_bits": 4, "fractional_bits": 4}),
                "more than int8 has",
            ),
            (
                json!({"base_data_type": "float32", "integer_bits": 1, "fractional_bits": 1}),
                "base_data_type",
            ),
            (
                json!({"base_data_type": {"name": "int8"}, "integer_bits": 1, "fractional_bits": 1}),
                "expected a data type name",
            ),
            (
                json!({"base_data_type": "int8", "integer_bits": 1}),
                "fractional_bits",
            ),
            (
                json!({"base_data_type": "int8", "integer_bits": -1, "fractional_bits": 1}),
                "integer_bits",
            ),
            (
                json!({"base_data_type": "int64", "integer_bits": 65, "fractional_bits": 1}),
                "more bits than",
            ),
            (
                json!({"base_data_type": "int8", "integer_bits": 1, "fractional_bits": 1, "signed": true}),
                "signed",
            ),
        ] {
            let e = err(config(c.clone()));
            assert!(e.contains(what), "{c}: {e}");
        }
        assert!(err(json!("Q7f7")).contains("must add up to 8, 16, 32 or 64"));
        assert!("binary_fixed_point<int16, 1>".parse::<DataType>().is_err());
        assert!(
            "binary_fixed_point<int16, 1, x>"
                .parse::<DataType>()
                .is_err()
        );
    }

    #[test]
    fn raw_values_convert_at_the_edges() {
        let q = FixedPointType::q(15, 16).unwrap();
        assert_eq!(q.raw_range(), (i128::from(i32::MIN), i128::from(i32::MAX)));
        assert_eq!(q.to_f64(i128::from(i32::MIN)), -32768.0);
        assert_eq!(q.from_f64(-32768.0), Some(i128::from(i32::MIN)));
        assert_eq!(q.from_f64(32768.0), None);
        assert_eq!(q.from_f64(f64::NAN), None);
        let n = FixedPointType::n(0, 64).unwrap();
        assert_eq!(n.raw_range(), (0, i128::from(u64::MAX)));
        assert_eq!(n.from_f64(-0.1), None);
        assert_eq!(n.from_f64(0.0), Some(0));
        let bytes = q.raw_to_ne_bytes(-2);
        assert_eq!(bytes, (-2i32).to_ne_bytes());
        assert_eq!(q.raw_from_ne_bytes(&bytes), -2);
        let u = FixedPointType::n(8, 8).unwrap();
        assert_eq!(u.raw_from_ne_bytes(&u16::MAX.to_ne_bytes()), 65535);
        // binary: the declared bits may be narrower than the base type.
        let b = FixedPointType::binary(&DataType::Int32, 3, 4).unwrap();
        assert_eq!(b.raw_range(), (-128, 127));
        assert_eq!(b.to_f64(-128), -8.0);
        assert_eq!(b.from_f64(8.0), None);
        assert!(
            FixedPointType::binary(&DataType::Int8, 4, 4).is_err(),
            "sign bit"
        );
        assert!(FixedPointType::binary(&DataType::UInt8, 4, 4).is_ok());
        assert!(FixedPointType::binary(&DataType::Float32, 1, 1).is_err());
    }

    #[test]
    fn fill_values_are_numbers_or_bits() {
        let n = FixedPointType::n(0, 8).unwrap();
        assert_eq!(n.fill_from_json(&json!(0.5)), Ok(128));
        assert_eq!(n.fill_from_json(&json!(1)), Ok(255));
        assert_eq!(n.fill_from_json(&json!("0xff")), Ok(255));
        assert_eq!(n.fill_from_json(&json!("0x7")), Ok(7));
        assert_eq!(n.fill_to_json(255), json!(1));
        assert_eq!(n.fill_to_json(0), json!(0));
        assert_eq!(n.fill_to_json(128), json!(128.0 / 255.0));
        let q = FixedPointType::q(0, 7).unwrap();
        assert_eq!(q.fill_from_json(&json!("0x80")), Ok(-128));
        assert_eq!(q.fill_to_json(-128), json!(-1));
        assert_eq!(q.fill_to_json(-127), json!(-0.9921875));
        for bad in [
            json!(1.0),
            json!(-1.01),
            json!("NaN"),
            json!("0x100"),
            json!("0x"),
            json!("12"),
            json!(true),
        ] {
            assert!(q.fill_from_json(&bad).is_err(), "{bad}");
        }
        // 64-bit: integers exactly; values f64 cannot hold written as bits.
        let wide = FixedPointType::q(63, 0).unwrap();
        assert_eq!(
            wide.fill_from_json(&json!(i64::MAX)),
            Ok(i128::from(i64::MAX))
        );
        assert_eq!(
            wide.fill_to_json(i128::from(i64::MAX)),
            json!("0x7fffffffffffffff")
        );
        assert_eq!(
            wide.fill_from_json(&json!("0x7fffffffffffffff")),
            Ok(i128::from(i64::MAX))
        );
        assert_eq!(wide.fill_to_json(-3), json!(-3));
        let b = FixedPointType::binary(&DataType::Int32, 3, 4).unwrap();
        assert!(
            b.fill_from_json(&json!(8)).is_err(),
            "beyond the integer bits"
        );
        // Bits beyond the declared range are still the base type's: kept as bits.
        assert_eq!(b.fill_from_json(&json!("0x00000100")), Ok(256));
        assert_eq!(b.fill_to_json(256), json!("0x00000100"));
    }
}
