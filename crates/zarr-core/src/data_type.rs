//! Data types: the core numeric types, raw bits, and the registered extension types `string`,
//! `bytes`, `numpy.datetime64` and `numpy.timedelta64`.

use std::fmt;

use serde_json::Value;

use crate::error::{Error, ExtensionKind, Result};
use crate::extension::ExtensionObject;
use crate::json::{self, Map};
pub use crate::minifloat::MiniFloat;

/// The unit of a `numpy.datetime64` or `numpy.timedelta64` data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeUnit {
    /// `Y`
    Year,
    /// `M`
    Month,
    /// `W`
    Week,
    /// `D`
    Day,
    /// `h`
    Hour,
    /// `m`
    Minute,
    /// `s`
    Second,
    /// `ms`
    Millisecond,
    /// `us` (also read as `μs`)
    Microsecond,
    /// `ns`
    Nanosecond,
    /// `ps`
    Picosecond,
    /// `fs`
    Femtosecond,
    /// `as`
    Attosecond,
    /// `generic`
    Generic,
}

impl TimeUnit {
    const ALL: [(TimeUnit, &'static str); 14] = [
        (Self::Year, "Y"),
        (Self::Month, "M"),
        (Self::Week, "W"),
        (Self::Day, "D"),
        (Self::Hour, "h"),
        (Self::Minute, "m"),
        (Self::Second, "s"),
        (Self::Millisecond, "ms"),
        (Self::Microsecond, "us"),
        (Self::Nanosecond, "ns"),
        (Self::Picosecond, "ps"),
        (Self::Femtosecond, "fs"),
        (Self::Attosecond, "as"),
        (Self::Generic, "generic"),
    ];

    /// The unit's name in metadata (`"ns"`, `"D"`, ...).
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(unit, _)| *unit == self)
            .map_or("generic", |(_, name)| name)
    }

    /// Parse a unit name; `μs` is accepted as microseconds.
    pub fn parse(name: &str) -> Option<Self> {
        if name == "μs" {
            return Some(Self::Microsecond);
        }
        Self::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(unit, _)| *unit)
    }
}

impl fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The element data type of an array.
///
/// Endianness is not part of the data type: the `bytes` codec chooses it.
///
/// ```
/// use zarr_core::{DataType, DataTypeSize};
///
/// let dt = DataType::from_json(&serde_json::json!("uint16"), "data_type")?;
/// assert_eq!(dt, DataType::UInt16);
/// assert_eq!(dt.size(), DataTypeSize::Fixed(2));
/// assert_eq!(DataType::String.size(), DataTypeSize::Variable);
/// assert_eq!(DataType::from_json(&serde_json::json!("r24"), "data_type")?.size(), DataTypeSize::Fixed(3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `bool`: one byte, `0x00` or `0x01`.
    Bool,
    /// `int8`
    Int8,
    /// `int16`
    Int16,
    /// `int32`
    Int32,
    /// `int64`
    Int64,
    /// `uint8`
    UInt8,
    /// `uint16`
    UInt16,
    /// `uint32`
    UInt32,
    /// `uint64`
    UInt64,
    /// `float16` (IEEE 754 binary16)
    Float16,
    /// `float32`
    Float32,
    /// `float64`
    Float64,
    /// `complex64`: real then imaginary part, each a `float32`
    Complex64,
    /// `complex128`: real then imaginary part, each a `float64`
    Complex128,
    /// `bfloat16`: 8 exponent bits, 7 mantissa bits.
    BFloat16,
    /// A floating-point format of 8 bits or fewer (`float8_e4m3fn`, `float4_e2m1fn`, ...),
    /// one element per byte.
    MiniFloat(MiniFloat),
    /// `int2`: one element per byte, the value in the low bits.
    Int2,
    /// `int4`: one element per byte, the value in the low bits.
    Int4,
    /// `uint2`: one element per byte, the value in the low bits.
    UInt2,
    /// `uint4`: one element per byte, the value in the low bits.
    UInt4,
    /// `r<N>`: `N` raw bits; the value held here is the size in **bytes** (`N / 8`).
    RawBits(usize),
    /// `fixed_length_utf32`: text of at most `length_bytes / 4` code points, stored as UTF-32
    /// code units padded with zeros.
    FixedLengthUtf32 {
        /// The element size in bytes, a multiple of 4.
        length_bytes: usize,
    },
    /// zarr-python's `null_terminated_bytes` (numpy `S<n>`): byte strings of at most
    /// `length_bytes`, padded with zeros. Not a registered type; read for interoperability.
    NullTerminatedBytes {
        /// The element size in bytes.
        length_bytes: usize,
    },
    /// zarr-python's `raw_bytes` (numpy `V<n>`): opaque elements of `length_bytes`. Not a
    /// registered type; read for interoperability.
    RawBytes {
        /// The element size in bytes.
        length_bytes: usize,
    },
    /// `string`: variable-length UTF-8 text.
    String,
    /// `bytes`: variable-length binary (also read as zarr-python's `variable_length_bytes` and
    /// ZEP0007's `binary`).
    Bytes,
    /// `numpy.datetime64`: an `int64` count of `scale_factor` units since the epoch;
    /// `i64::MIN` is NaT.
    DateTime64 {
        /// The unit.
        unit: TimeUnit,
        /// How many units one step is, 1 to 2^31 - 1.
        scale_factor: u32,
    },
    /// `numpy.timedelta64`: an `int64` count of `scale_factor` units; `i64::MIN` is NaT.
    TimeDelta64 {
        /// The unit.
        unit: TimeUnit,
        /// How many units one step is, 1 to 2^31 - 1.
        scale_factor: u32,
    },
}

/// The size of one element of a [`DataType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataTypeSize {
    /// Every element takes this many bytes.
    Fixed(usize),
    /// Elements have variable lengths (strings and byte strings).
    Variable,
}

const SIMPLE: [(DataType, &str); 19] = [
    (DataType::Bool, "bool"),
    (DataType::Int8, "int8"),
    (DataType::Int16, "int16"),
    (DataType::Int32, "int32"),
    (DataType::Int64, "int64"),
    (DataType::UInt8, "uint8"),
    (DataType::UInt16, "uint16"),
    (DataType::UInt32, "uint32"),
    (DataType::UInt64, "uint64"),
    (DataType::Float16, "float16"),
    (DataType::Float32, "float32"),
    (DataType::Float64, "float64"),
    (DataType::Complex64, "complex64"),
    (DataType::Complex128, "complex128"),
    (DataType::BFloat16, "bfloat16"),
    (DataType::Int2, "int2"),
    (DataType::Int4, "int4"),
    (DataType::UInt2, "uint2"),
    (DataType::UInt4, "uint4"),
];

/// Names read as [`DataType::Bytes`]: the registered name, zarr-python 3.1's name and ZEP0007's.
const BYTES_NAMES: [&str; 3] = ["bytes", "variable_length_bytes", "binary"];

impl DataType {
    /// The element size, or [`DataTypeSize::Variable`].
    pub fn size(&self) -> DataTypeSize {
        DataTypeSize::Fixed(match self {
            Self::Bool
            | Self::Int8
            | Self::UInt8
            | Self::MiniFloat(_)
            | Self::Int2
            | Self::Int4
            | Self::UInt2
            | Self::UInt4 => 1,
            Self::Int16 | Self::UInt16 | Self::Float16 | Self::BFloat16 => 2,
            Self::Int32 | Self::UInt32 | Self::Float32 => 4,
            Self::Int64
            | Self::UInt64
            | Self::Float64
            | Self::Complex64
            | Self::DateTime64 { .. }
            | Self::TimeDelta64 { .. } => 8,
            Self::Complex128 => 16,
            Self::RawBits(bytes) => *bytes,
            Self::FixedLengthUtf32 { length_bytes }
            | Self::NullTerminatedBytes { length_bytes }
            | Self::RawBytes { length_bytes } => *length_bytes,
            Self::String | Self::Bytes => return DataTypeSize::Variable,
        })
    }

    /// The fixed element size in bytes, or `None` for variable-length types.
    pub fn fixed_size(&self) -> Option<usize> {
        match self.size() {
            DataTypeSize::Fixed(n) => Some(n),
            DataTypeSize::Variable => None,
        }
    }

    /// The name written in metadata (`"float32"`, `"r16"`, `"numpy.datetime64"`, ...).
    pub fn name(&self) -> String {
        match self {
            Self::RawBits(bytes) => format!("r{}", bytes * 8),
            Self::String => "string".into(),
            Self::Bytes => "bytes".into(),
            Self::DateTime64 { .. } => "numpy.datetime64".into(),
            Self::TimeDelta64 { .. } => "numpy.timedelta64".into(),
            Self::MiniFloat(format) => format.name().into(),
            Self::FixedLengthUtf32 { .. } => "fixed_length_utf32".into(),
            Self::NullTerminatedBytes { .. } => "null_terminated_bytes".into(),
            Self::RawBytes { .. } => "raw_bytes".into(),
            simple => SIMPLE
                .iter()
                .find(|(dt, _)| dt == simple)
                .map_or_else(String::new, |(_, name)| (*name).to_owned()),
        }
    }

    /// Whether the type is a floating-point type.
    pub fn is_float(&self) -> bool {
        matches!(
            self,
            Self::Float16 | Self::Float32 | Self::Float64 | Self::BFloat16 | Self::MiniFloat(_)
        )
    }

    /// Whether the type is a complex type.
    pub fn is_complex(&self) -> bool {
        matches!(self, Self::Complex64 | Self::Complex128)
    }

    /// Parse the `data_type` field: a bare name or an extension object.
    ///
    /// # Errors
    /// [`Error::UnknownExtension`] for a name this crate does not know,
    /// [`Error::MustUnderstandNotAllowed`] for `"must_understand": false`, and
    /// [`Error::InvalidField`] for a malformed configuration.
    pub fn from_json(value: &Value, field: &str) -> Result<Self> {
        let ext = ExtensionObject::from_json_understood(value, field)?;
        let config_field = json::join(field, "configuration");
        let no_configuration = |dt: DataType| -> Result<DataType> {
            match &ext.configuration {
                Some(c) if !c.is_empty() => Err(Error::invalid(
                    &config_field,
                    format!("data type {} takes no configuration", ext.name),
                )),
                _ => Ok(dt),
            }
        };
        let name = ext.name.as_str();
        if let Some((dt, _)) = SIMPLE.iter().find(|(_, n)| *n == name) {
            return no_configuration(*dt);
        }
        if let Some((format, _)) = MiniFloat::ALL.iter().find(|(_, n)| *n == name) {
            return no_configuration(Self::MiniFloat(*format));
        }
        if name == "string" {
            return no_configuration(Self::String);
        }
        if matches!(
            name,
            "fixed_length_utf32" | "null_terminated_bytes" | "raw_bytes"
        ) {
            let config = ext
                .configuration
                .as_ref()
                .ok_or_else(|| Error::missing(&config_field))?;
            json::deny_unknown(config, &["length_bytes"], &config_field)?;
            let length_field = json::join(&config_field, "length_bytes");
            let length = json::as_u64(
                json::required(config, "length_bytes", &config_field)?,
                &length_field,
            )?;
            let utf32 = name == "fixed_length_utf32";
            if length == 0 || (utf32 && length % 4 != 0) {
                return Err(Error::invalid(
                    &length_field,
                    if utf32 {
                        "must be a positive multiple of 4"
                    } else {
                        "must be positive"
                    },
                ));
            }
            let length = usize::try_from(length)
                .map_err(|_| Error::invalid(&length_field, format!("{length} is too large")))?;
            return Ok(match name {
                "fixed_length_utf32" => Self::FixedLengthUtf32 {
                    length_bytes: length,
                },
                "null_terminated_bytes" => Self::NullTerminatedBytes {
                    length_bytes: length,
                },
                _ => Self::RawBytes {
                    length_bytes: length,
                },
            });
        }
        if BYTES_NAMES.contains(&name) {
            return no_configuration(Self::Bytes);
        }
        if let Some(bits) = name.strip_prefix('r')
            && !bits.is_empty()
            && bits.bytes().all(|b| b.is_ascii_digit())
        {
            let bits: u64 = bits
                .parse()
                .map_err(|_| Error::invalid(field, format!("raw bits type {name} is too large")))?;
            if bits == 0 || !bits.is_multiple_of(8) {
                return Err(Error::invalid(
                    field,
                    format!(
                        "raw bits type {name}: the number of bits must be a positive multiple of 8"
                    ),
                ));
            }
            let bytes = usize::try_from(bits / 8)
                .map_err(|_| Error::invalid(field, format!("raw bits type {name} is too large")))?;
            return no_configuration(Self::RawBits(bytes));
        }
        if name == "numpy.datetime64" || name == "numpy.timedelta64" {
            let config = ext
                .configuration
                .as_ref()
                .ok_or_else(|| Error::missing(&config_field))?;
            let (unit, scale_factor) = parse_time_config(config, &config_field)?;
            return Ok(if name == "numpy.datetime64" {
                Self::DateTime64 { unit, scale_factor }
            } else {
                Self::TimeDelta64 { unit, scale_factor }
            });
        }
        Err(Error::UnknownExtension {
            kind: ExtensionKind::DataType,
            name: name.to_owned(),
            field: field.to_owned(),
        })
    }

    /// The metadata form: the bare name for types without configuration (the form zarr-python
    /// reads), an object otherwise.
    pub fn to_json(&self) -> Value {
        match self {
            Self::DateTime64 { unit, scale_factor } | Self::TimeDelta64 { unit, scale_factor } => {
                let mut config = Map::new();
                config.insert("unit".into(), Value::String(unit.as_str().into()));
                config.insert("scale_factor".into(), Value::from(*scale_factor));
                ExtensionObject::with_configuration(self.name(), config).to_json()
            }
            Self::FixedLengthUtf32 { length_bytes }
            | Self::NullTerminatedBytes { length_bytes }
            | Self::RawBytes { length_bytes } => {
                let mut config = Map::new();
                config.insert("length_bytes".into(), Value::from(*length_bytes));
                ExtensionObject::with_configuration(self.name(), config).to_json()
            }
            _ => Value::String(self.name()),
        }
    }
}

fn parse_time_config(config: &Map, field: &str) -> Result<(TimeUnit, u32)> {
    json::deny_unknown(config, &["unit", "scale_factor"], field)?;
    let unit_field = json::join(field, "unit");
    let unit_name = json::as_str(json::required(config, "unit", field)?, &unit_field)?;
    let unit = TimeUnit::parse(unit_name)
        .ok_or_else(|| Error::invalid(&unit_field, format!("unknown time unit {unit_name:?}")))?;
    let scale_field = json::join(field, "scale_factor");
    let scale = json::as_u64(json::required(config, "scale_factor", field)?, &scale_field)?;
    let scale_factor = u32::try_from(scale)
        .ok()
        .filter(|s| (1..=i32::MAX as u32).contains(s))
        .ok_or_else(|| Error::invalid(&scale_field, format!("{scale} is not in 1..=2147483647")))?;
    Ok((unit, scale_factor))
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DateTime64 { unit, scale_factor } | Self::TimeDelta64 { unit, scale_factor } => {
                write!(f, "{}[{scale_factor}{unit}]", self.name())
            }
            Self::FixedLengthUtf32 { length_bytes }
            | Self::NullTerminatedBytes { length_bytes }
            | Self::RawBytes { length_bytes } => write!(f, "{}[{length_bytes}]", self.name()),
            _ => f.write_str(&self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_simple_type_round_trips() {
        for (dt, name) in SIMPLE {
            assert_eq!(DataType::from_json(&json!(name), "data_type").unwrap(), dt);
            assert_eq!(
                DataType::from_json(&json!({"name": name}), "data_type").unwrap(),
                dt
            );
            assert_eq!(dt.to_json(), json!(name));
        }
        assert_eq!(DataType::Complex128.fixed_size(), Some(16));
        assert_eq!(DataType::Float16.fixed_size(), Some(2));
    }

    #[test]
    fn extension_types() {
        for name in BYTES_NAMES {
            assert_eq!(
                DataType::from_json(&json!(name), "data_type").unwrap(),
                DataType::Bytes
            );
        }
        assert_eq!(
            DataType::from_json(&json!({"name": "string"}), "data_type").unwrap(),
            DataType::String
        );
        assert_eq!(DataType::String.to_json(), json!("string"));
        let dt = DataType::from_json(
            &json!({"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 10}}),
            "data_type",
        )
        .unwrap();
        assert_eq!(
            dt,
            DataType::DateTime64 {
                unit: TimeUnit::Nanosecond,
                scale_factor: 10
            }
        );
        assert_eq!(dt.fixed_size(), Some(8));
        assert_eq!(
            dt.to_json(),
            json!({"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 10}})
        );
        assert_eq!(dt.to_string(), "numpy.datetime64[10ns]");
        let micro = DataType::from_json(
            &json!({"name": "numpy.timedelta64", "configuration": {"unit": "μs", "scale_factor": 1}}),
            "data_type",
        )
        .unwrap();
        assert_eq!(
            micro,
            DataType::TimeDelta64 {
                unit: TimeUnit::Microsecond,
                scale_factor: 1
            }
        );
        assert_eq!(
            DataType::from_json(&json!("r8"), "data_type").unwrap(),
            DataType::RawBits(1)
        );
        assert_eq!(DataType::RawBits(3).name(), "r24");
        let f8 = DataType::from_json(&json!("float8_e4m3fn"), "data_type").unwrap();
        assert_eq!(f8, DataType::MiniFloat(MiniFloat::E4M3FN));
        assert_eq!(
            (f8.fixed_size(), f8.to_json()),
            (Some(1), json!("float8_e4m3fn"))
        );
        for (value, dt) in [
            (
                json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 16}}),
                DataType::FixedLengthUtf32 { length_bytes: 16 },
            ),
            (
                json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}),
                DataType::NullTerminatedBytes { length_bytes: 4 },
            ),
            (
                json!({"name": "raw_bytes", "configuration": {"length_bytes": 3}}),
                DataType::RawBytes { length_bytes: 3 },
            ),
        ] {
            assert_eq!(DataType::from_json(&value, "data_type").unwrap(), dt);
            assert_eq!(dt.to_json(), value);
        }
        assert!(
            DataType::from_json(
                &json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}}),
                "data_type"
            )
            .unwrap_err()
            .to_string()
            .contains("data_type.configuration.length_bytes")
        );
    }

    #[test]
    fn bad_data_types_name_the_field() {
        let cases = [
            (
                json!("float128"),
                "unknown data type `float128` in `data_type`",
            ),
            (json!("r12"), "data_type"),
            (json!("r0"), "data_type"),
            (json!("r99999999999999999999999"), "data_type"),
            (
                json!({"name": "int8", "must_understand": false}),
                "not allowed on `data_type`",
            ),
            (
                json!({"name": "int8", "configuration": {"x": 1}}),
                "data_type.configuration",
            ),
            (
                json!({"name": "numpy.datetime64"}),
                "data_type.configuration",
            ),
            (
                json!({"name": "numpy.datetime64", "configuration": {"unit": "fortnight", "scale_factor": 1}}),
                "data_type.configuration.unit",
            ),
            (
                json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 0}}),
                "data_type.configuration.scale_factor",
            ),
            (
                json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 2147483648u64}}),
                "data_type.configuration.scale_factor",
            ),
            (
                json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1, "x": 0}}),
                "data_type.configuration.x",
            ),
            (json!(5), "data_type"),
        ];
        for (value, needle) in cases {
            let err = DataType::from_json(&value, "data_type").unwrap_err();
            assert!(
                err.to_string().contains(needle),
                "{value}: `{err}` should contain `{needle}`"
            );
        }
    }
}
