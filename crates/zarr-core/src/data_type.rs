//! Data types: the core numeric types, raw bits, and the registered extension types `string`,
//! `bytes`, `numpy.datetime64`, `numpy.timedelta64` and `struct` (also read as zarr-python's
//! `structured`).

use std::fmt;

use serde_json::Value;

use crate::error::{Error, ExtensionKind, Result};
use crate::extension::ExtensionObject;
use crate::fixed_point::FixedPointType;
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// `struct` (or zarr-python's older `structured`): records of named fixed-size fields,
    /// packed in declaration order without padding (numpy's structured arrays).
    Struct(StructType),
    /// The zarr-extensions complex types named after their component: `complex_float16`,
    /// `complex_bfloat16`, `complex_float32`, `complex_float64` and `complex_` followed by
    /// any 8-bit-or-smaller float (`complex_float8_e4m3`, `complex_float4_e2m1fn`, ...): the
    /// real part, then the imaginary part, each stored as the component type is (a small
    /// float takes one byte). `complex_float32` and `complex_float64` hold what
    /// [`DataType::Complex64`] and [`DataType::Complex128`] hold, under their own names.
    ComplexFloat(FloatFormat),
    /// `zarrs.optional` (zarr-extensions `optional`): a nullable value of another type. In
    /// memory an element is the inner element followed by one validity byte, 1 for a value
    /// and 0 for a missing one (whose inner bytes are zero, or empty for variable-length
    /// types); the `optional` codec stores the validity mask and the present values apart.
    Optional(OptionalType),
    /// `ndarray` (zarr-extensions): each element is itself an n-dimensional array of a core
    /// numeric type, its shape following a pattern in which variable dimensions may differ
    /// between elements. Elements of a pattern without variable dimensions are fixed-size
    /// (the scalars packed in C order); the others are variable-length, each the packed
    /// scalars of one element (native byte order in memory).
    NdArray(NdArrayType),
    /// A binary fixed-point number (zarr-extensions proposals `Q{m}f{n}`, `N{m}f{n}` and
    /// `binary_fixed_point`): stored as its integer base type, which every codec sees.
    FixedPoint(FixedPointType),
}

/// The component type of a [`DataType::ComplexFloat`]: a floating-point format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FloatFormat {
    /// `float16`
    Float16,
    /// `bfloat16`
    BFloat16,
    /// `float32`
    Float32,
    /// `float64`
    Float64,
    /// A float of 8 bits or fewer.
    Mini(MiniFloat),
}

impl FloatFormat {
    /// The format as a data type of its own.
    pub fn data_type(self) -> DataType {
        match self {
            Self::Float16 => DataType::Float16,
            Self::BFloat16 => DataType::BFloat16,
            Self::Float32 => DataType::Float32,
            Self::Float64 => DataType::Float64,
            Self::Mini(format) => DataType::MiniFloat(format),
        }
    }

    /// The format of a floating-point data type, `None` for other types.
    pub fn of(data_type: &DataType) -> Option<Self> {
        Some(match data_type {
            DataType::Float16 => Self::Float16,
            DataType::BFloat16 => Self::BFloat16,
            DataType::Float32 => Self::Float32,
            DataType::Float64 => Self::Float64,
            DataType::MiniFloat(format) => Self::Mini(*format),
            _ => return None,
        })
    }

    /// The size of one value in bytes.
    pub fn size(self) -> usize {
        match self {
            Self::Mini(_) => 1,
            Self::Float16 | Self::BFloat16 => 2,
            Self::Float32 => 4,
            Self::Float64 => 8,
        }
    }
}

/// One field of a [`DataType::Struct`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructField {
    /// The field's name, unique within its struct.
    pub name: String,
    /// The field's data type: any fixed-size type, including another struct.
    pub data_type: DataType,
}

impl StructField {
    /// A field named `name` of `data_type`.
    pub fn new(name: impl Into<String>, data_type: DataType) -> Self {
        Self {
            name: name.into(),
            data_type,
        }
    }
}

/// The fields of a [`DataType::Struct`], and which of the two metadata forms it is written
/// in.
///
/// The `struct` form (`{"name": "struct", "configuration": {"fields": [{"name": "x",
/// "data_type": "float32"}, ...]}}`, fill values as objects of field values) is the
/// registered one and the default. The `structured` form (`"fields": [["x", "float32"], ...]`,
/// fill values as base64 of the packed little-endian bytes) is what zarr-python 3.1 writes
/// and reads; [`StructType::structured`] picks it, for arrays zarr-python must open.
///
/// ```
/// use zarr_core::{DataType, StructField, StructType};
///
/// let point = StructType::new(vec![
///     StructField::new("x", DataType::Float32),
///     StructField::new("flag", DataType::UInt8),
/// ])?;
/// assert_eq!(point.size(), 5);
/// assert_eq!(point.offsets().collect::<Vec<_>>(), [0, 4]);
/// let dt = DataType::Struct(point);
/// assert_eq!(DataType::from_json(&dt.to_json(), "data_type")?, dt);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructType {
    fields: Vec<StructField>,
    size: usize,
    structured: bool,
}

impl StructType {
    /// A struct of `fields`, in the `struct` form.
    ///
    /// # Errors
    /// [`Error::InvalidField`] if there are no fields, a name is empty or repeated, a field's
    /// type has no fixed size, or the record's size overflows.
    pub fn new(fields: Vec<StructField>) -> Result<Self> {
        Self::checked(fields, false, "data_type.configuration.fields")
    }

    pub(crate) fn checked(fields: Vec<StructField>, structured: bool, field: &str) -> Result<Self> {
        if fields.is_empty() {
            return Err(Error::invalid(field, "a struct needs at least one field"));
        }
        let mut size = 0usize;
        for (i, f) in fields.iter().enumerate() {
            if f.name.is_empty() {
                return Err(Error::invalid(
                    field,
                    format!("field {i} has an empty name"),
                ));
            }
            if fields[..i].iter().any(|g| g.name == f.name) {
                return Err(Error::invalid(
                    field,
                    format!("the field name {:?} appears twice", f.name),
                ));
            }
            let Some(n) = f.data_type.fixed_size() else {
                return Err(Error::invalid(
                    field,
                    format!(
                        "field {:?} is {}, which has no fixed size",
                        f.name, f.data_type
                    ),
                ));
            };
            size = size
                .checked_add(n)
                .ok_or_else(|| Error::invalid(field, "the record's size overflows"))?;
        }
        Ok(Self {
            fields,
            size,
            structured,
        })
    }

    /// The same struct in zarr-python 3.1's `structured` form (tuple fields, base64 fill
    /// value), which zarr-python reads; the `struct` form is the registered one.
    #[must_use]
    pub fn structured(mut self) -> Self {
        self.structured = true;
        self
    }

    /// The same struct in the registered `struct` form.
    #[must_use]
    pub fn registered(mut self) -> Self {
        self.structured = false;
        self
    }

    /// Whether this struct is written in the `structured` form.
    pub fn is_structured(&self) -> bool {
        self.structured
    }

    /// The fields, in declaration (and storage) order.
    pub fn fields(&self) -> &[StructField] {
        &self.fields
    }

    /// The size of one record in bytes: the sum of the fields' sizes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The byte offset of each field within a record.
    pub fn offsets(&self) -> impl Iterator<Item = usize> + '_ {
        self.fields.iter().scan(0usize, |offset, f| {
            let here = *offset;
            *offset += f.data_type.fixed_size().unwrap_or(0);
            Some(here)
        })
    }

    /// The field named `name`, with its byte offset.
    pub fn field(&self, name: &str) -> Option<(usize, &StructField)> {
        self.offsets()
            .zip(&self.fields)
            .find(|(_, f)| f.name == name)
    }
}

/// The inner type of a [`DataType::Optional`], and which of its two names it is written
/// under.
///
/// zarrs writes and reads `zarrs.optional`; zarr-extensions registers the same type as
/// `optional`. Both are read; `zarrs.optional` is written unless
/// [`OptionalType::registered`] picks the registered name.
///
/// An element is the inner element followed by one validity byte: `[42, 1]` is
/// `Some(42u8)`, `[0, 0]` is a missing value. Nested optionals nest the same way
/// (`[42, 1, 1]` is `Some(Some(42))`, `[0, 0, 1]` is `Some(None)`).
///
/// ```
/// use zarr_core::{DataType, DataTypeSize, OptionalType};
///
/// let dt = DataType::Optional(OptionalType::new(DataType::UInt16));
/// assert_eq!(dt.size(), DataTypeSize::Fixed(3));
/// assert_eq!(dt.to_json()["name"], "zarrs.optional");
/// assert_eq!(DataType::from_json(&dt.to_json(), "data_type")?, dt);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OptionalType {
    inner: Box<DataType>,
    registered: bool,
}

impl OptionalType {
    /// The optional form of `inner`, written as `zarrs.optional`.
    pub fn new(inner: DataType) -> Self {
        Self {
            inner: Box::new(inner),
            registered: false,
        }
    }

    /// The same type under the zarr-extensions name `optional` (no released implementation
    /// reads it yet; zarrs 0.23 reads `zarrs.optional`).
    #[must_use]
    pub fn registered(mut self) -> Self {
        self.registered = true;
        self
    }

    /// The same type under zarrs' name `zarrs.optional`, the default.
    #[must_use]
    pub fn zarrs(mut self) -> Self {
        self.registered = false;
        self
    }

    /// Whether the type is written under the registered name `optional`.
    pub fn is_registered(&self) -> bool {
        self.registered
    }

    /// The type of the values that are present.
    pub fn inner(&self) -> &DataType {
        &self.inner
    }

    /// The size of the inner element in bytes (where the validity byte sits), `None` when
    /// the inner type has variable-length elements.
    pub fn inner_size(&self) -> Option<usize> {
        self.inner.fixed_size()
    }

    /// One element split into the inner element and its validity byte (the last byte), or
    /// `None` for an empty slice.
    ///
    /// ```
    /// use zarr_core::OptionalType;
    ///
    /// assert_eq!(OptionalType::split(b"ab\x01"), Some((&b"ab"[..], 1)));
    /// assert_eq!(OptionalType::split(&[]), None);
    /// ```
    pub fn split(element: &[u8]) -> Option<(&[u8], u8)> {
        element
            .split_last()
            .map(|(&validity, inner)| (inner, validity))
    }
}

/// The element type of a [`DataType::NdArray`]: a core numeric scalar type and the element
/// shape pattern, `None` marking a variable dimension.
///
/// ```
/// use zarr_core::{DataType, DataTypeSize, NdArrayType};
///
/// // Elements of shape (n, 2), n varying: a ragged list of float32 pairs.
/// let pairs = NdArrayType::new(DataType::Float32, vec![None, Some(2)])?;
/// assert_eq!(pairs.item_size(), 8);
/// assert_eq!(pairs.element_shape(24), Some(vec![3, 2]));
/// let dt = DataType::NdArray(pairs);
/// assert_eq!(dt.size(), DataTypeSize::Variable);
/// assert_eq!(dt.to_string(), "ndarray<float32, [null, 2]>");
/// assert_eq!(DataType::from_json(&dt.to_json(), "data_type")?, dt);
///
/// // Fixed (3, 2) int16 elements take 12 bytes each.
/// let block = DataType::NdArray(NdArrayType::new(DataType::Int16, vec![Some(3), Some(2)])?);
/// assert_eq!(block.size(), DataTypeSize::Fixed(12));
/// # Ok::<(), zarr_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NdArrayType {
    dtype: Box<DataType>,
    shape: Vec<Option<u64>>,
    /// The scalar size times the product of the fixed dimensions.
    item_size: usize,
}

/// The scalar types an `ndarray` element may hold.
const NDARRAY_SCALARS: [DataType; 14] = [
    DataType::Bool,
    DataType::Int8,
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::UInt8,
    DataType::UInt16,
    DataType::UInt32,
    DataType::UInt64,
    DataType::Float16,
    DataType::Float32,
    DataType::Float64,
    DataType::Complex64,
    DataType::Complex128,
];

impl NdArrayType {
    /// Elements of scalar type `dtype` shaped by `shape` (`None` for a variable dimension).
    ///
    /// # Errors
    /// [`Error::InvalidField`] if `dtype` is not one of the fixed-size core types (`bool`,
    /// integers, `float16/32/64`, `complex64/128`), `shape` is empty, a fixed dimension is 0,
    /// or the fixed part of an element is larger than memory can address.
    pub fn new(dtype: DataType, shape: Vec<Option<u64>>) -> Result<Self> {
        Self::checked(dtype, shape, "data_type.configuration")
    }

    fn checked(dtype: DataType, shape: Vec<Option<u64>>, field: &str) -> Result<Self> {
        if !NDARRAY_SCALARS.contains(&dtype) {
            return Err(Error::invalid(
                json::join(field, "dtype"),
                format!(
                    "{dtype} is not a scalar type an ndarray element may hold (bool, an \
                     integer, float16/32/64 or complex64/128)"
                ),
            ));
        }
        let shape_field = json::join(field, "shape");
        if shape.is_empty() {
            return Err(Error::invalid(
                &shape_field,
                "the element shape needs at least one dimension (use the scalar type itself \
                 for single values)",
            ));
        }
        let mut item_size = dtype.fixed_size().unwrap_or(1);
        for (i, dim) in shape.iter().enumerate() {
            match dim {
                Some(0) => {
                    return Err(Error::invalid(
                        &shape_field,
                        format!("dimension {i} is 0; fixed dimensions are at least 1"),
                    ));
                }
                Some(n) => {
                    item_size = usize::try_from(*n)
                        .ok()
                        .and_then(|n| item_size.checked_mul(n))
                        .ok_or_else(|| {
                            Error::invalid(&shape_field, "the element is too large to address")
                        })?;
                }
                None => {}
            }
        }
        Ok(Self {
            dtype: Box::new(dtype),
            shape,
            item_size,
        })
    }

    /// The scalar type of the elements.
    pub fn dtype(&self) -> &DataType {
        &self.dtype
    }

    /// The element shape pattern, `None` for a variable dimension.
    pub fn shape(&self) -> &[Option<u64>] {
        &self.shape
    }

    /// How many dimensions are variable.
    pub fn variable_dimensions(&self) -> usize {
        self.shape.iter().filter(|d| d.is_none()).count()
    }

    /// Whether the pattern is `[null, d1, ..., dk]`: one variable dimension, the first (what
    /// the `vlen-ndarray` codec serves).
    pub fn is_leading_variable(&self) -> bool {
        self.shape[0].is_none() && self.variable_dimensions() == 1
    }

    /// How many bytes swap as a unit between little-endian and native order: the scalar's
    /// size, a complex scalar's component size, 1 for one-byte scalars.
    pub fn swap_width(&self) -> usize {
        self.dtype
            .swap_units()
            .and_then(|units| units.first().map(|&(_, width)| width))
            .unwrap_or(1)
    }

    /// The size in bytes of the fixed part of an element: the scalar size times the product
    /// of the fixed dimensions (the whole element when no dimension is variable).
    pub fn item_size(&self) -> usize {
        self.item_size
    }

    /// The size of every element, `None` when a dimension is variable.
    pub fn element_size(&self) -> Option<usize> {
        (self.variable_dimensions() == 0).then_some(self.item_size)
    }

    /// The shape of an element of `bytes` bytes: the pattern with its variable dimension
    /// (at most one) set to `bytes / item_size`. `None` when `bytes` is not a whole number of
    /// items, differs from the fixed size of a pattern without variable dimensions, or the
    /// pattern has two or more variable dimensions (a nonzero length then names no single
    /// shape; zero bytes is the element whose variable extents are all 0).
    pub fn element_shape(&self, bytes: usize) -> Option<Vec<u64>> {
        let variable = self.variable_dimensions();
        if variable > 1 {
            return (bytes == 0).then(|| self.shape.iter().map(|d| d.unwrap_or(0)).collect());
        }
        if !bytes.is_multiple_of(self.item_size) || (variable == 0 && bytes != self.item_size) {
            return None;
        }
        let n = (bytes / self.item_size) as u64;
        Some(self.shape.iter().map(|d| d.unwrap_or(n)).collect())
    }
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
            Self::ComplexFloat(component) => 2 * component.size(),
            Self::RawBits(bytes) => *bytes,
            Self::Struct(st) => st.size(),
            Self::Optional(o) => match o.inner_size() {
                Some(n) => n + 1,
                None => return DataTypeSize::Variable,
            },
            Self::FixedLengthUtf32 { length_bytes }
            | Self::NullTerminatedBytes { length_bytes }
            | Self::RawBytes { length_bytes } => *length_bytes,
            Self::NdArray(nd) => match nd.element_size() {
                Some(n) => n,
                None => return DataTypeSize::Variable,
            },
            Self::FixedPoint(fp) => fp.size(),
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
            Self::Struct(st) if st.structured => "structured".into(),
            Self::Struct(_) => "struct".into(),
            Self::Optional(o) if o.registered => "optional".into(),
            Self::Optional(_) => "zarrs.optional".into(),
            Self::ComplexFloat(component) => format!("complex_{}", component.data_type().name()),
            Self::NdArray(_) => "ndarray".into(),
            Self::FixedPoint(fp) => fp.name(),
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
        matches!(
            self,
            Self::Complex64 | Self::Complex128 | Self::ComplexFloat(_)
        )
    }

    /// The type of each of the two parts of a complex type (`float32` for `complex64` and
    /// `complex_float32`, `float16` for `complex_float16`, ...); `None` for other types.
    pub fn complex_component(&self) -> Option<DataType> {
        match self {
            Self::Complex64 => Some(Self::Float32),
            Self::Complex128 => Some(Self::Float64),
            Self::ComplexFloat(component) => Some(component.data_type()),
            _ => None,
        }
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
            return no_configuration(dt.clone());
        }
        if let Some((format, _)) = MiniFloat::ALL.iter().find(|(_, n)| *n == name) {
            return no_configuration(Self::MiniFloat(*format));
        }
        if let Some(component) = name.strip_prefix("complex_") {
            let format = match component {
                "float16" => Some(FloatFormat::Float16),
                "bfloat16" => Some(FloatFormat::BFloat16),
                "float32" => Some(FloatFormat::Float32),
                "float64" => Some(FloatFormat::Float64),
                _ => MiniFloat::ALL
                    .iter()
                    .find(|(_, n)| *n == component)
                    .map(|(format, _)| FloatFormat::Mini(*format)),
            };
            if let Some(format) = format {
                return no_configuration(Self::ComplexFloat(format));
            }
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
        if name == "struct" || name == "structured" {
            let config = ext
                .configuration
                .as_ref()
                .ok_or_else(|| Error::missing(&config_field))?;
            json::deny_unknown(config, &["fields"], &config_field)?;
            let fields_field = json::join(&config_field, "fields");
            let items = json::required(config, "fields", &config_field)?
                .as_array()
                .ok_or_else(|| Error::invalid(&fields_field, "expected an array of fields"))?;
            let mut fields = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let at = format!("{fields_field}[{i}]");
                // The registered form is an object; zarr-python's is a [name, type] pair.
                let (field_name, data_type) = match item {
                    Value::Object(o) => {
                        json::deny_unknown(o, &["name", "data_type"], &at)?;
                        (
                            json::required(o, "name", &at)?,
                            json::required(o, "data_type", &at)?,
                        )
                    }
                    Value::Array(pair) if pair.len() == 2 => (&pair[0], &pair[1]),
                    _ => {
                        return Err(Error::invalid(
                            &at,
                            "expected {\"name\": ..., \"data_type\": ...} or [name, data_type]",
                        ));
                    }
                };
                let field_name = json::as_str(field_name, &json::join(&at, "name"))?;
                let data_type = Self::from_json(data_type, &json::join(&at, "data_type"))?;
                fields.push(StructField::new(field_name, data_type));
            }
            return Ok(Self::Struct(StructType::checked(
                fields,
                name == "structured",
                &fields_field,
            )?));
        }
        if name == "optional" || name == "zarrs.optional" {
            // The configuration is the inner type as an extension object.
            let config = ext
                .configuration
                .as_ref()
                .ok_or_else(|| Error::missing(&config_field))?;
            let inner = Self::from_json(&Value::Object(config.clone()), &config_field)?;
            let optional = OptionalType::new(inner);
            return Ok(Self::Optional(if name == "optional" {
                optional.registered()
            } else {
                optional
            }));
        }
        if name == "ndarray" {
            let config = ext.configuration.as_ref().ok_or_else(|| {
                Error::invalid(
                    field,
                    "data type ndarray needs its configuration (dtype and shape)",
                )
            })?;
            json::deny_unknown(config, &["dtype", "shape"], &config_field)?;
            let dtype_field = json::join(&config_field, "dtype");
            let dtype_value = json::required(config, "dtype", &config_field)?;
            if !dtype_value.is_string() {
                return Err(Error::invalid(&dtype_field, "expected a data type name"));
            }
            let dtype = Self::from_json(dtype_value, &dtype_field)?;
            let shape_field = json::join(&config_field, "shape");
            let items = json::required(config, "shape", &config_field)?
                .as_array()
                .ok_or_else(|| Error::invalid(&shape_field, "expected an array"))?;
            let mut shape = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                shape.push(match item {
                    Value::Null => None,
                    other => Some(other.as_u64().ok_or_else(|| {
                        Error::invalid(
                            format!("{shape_field}[{i}]"),
                            format!("expected an integer of at least 1 or null, found {other}"),
                        )
                    })?),
                });
            }
            return Ok(Self::NdArray(NdArrayType::checked(
                dtype,
                shape,
                &config_field,
            )?));
        }
        if let Some(fixed) = FixedPointType::parse_name(name) {
            return no_configuration(Self::FixedPoint(fixed?));
        }
        if name == "binary_fixed_point" {
            let config = ext.configuration.as_ref().ok_or_else(|| {
                Error::invalid(
                    field,
                    "data type binary_fixed_point needs its configuration (base_data_type, \
                     integer_bits, fractional_bits)",
                )
            })?;
            return Ok(Self::FixedPoint(FixedPointType::from_configuration(
                config,
                &config_field,
            )?));
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
            Self::Struct(st) => {
                let fields = st
                    .fields
                    .iter()
                    .map(|f| {
                        if st.structured {
                            Value::Array(vec![Value::String(f.name.clone()), f.data_type.to_json()])
                        } else {
                            let mut o = Map::new();
                            o.insert("name".into(), Value::String(f.name.clone()));
                            o.insert("data_type".into(), f.data_type.to_json());
                            Value::Object(o)
                        }
                    })
                    .collect();
                let mut config = Map::new();
                config.insert("fields".into(), Value::Array(fields));
                ExtensionObject::with_configuration(self.name(), config).to_json()
            }
            Self::Optional(o) => {
                // zarrs writes (and expects) the inner type as an object with a
                // configuration, empty for types that take none.
                let config = match o.inner.to_json() {
                    Value::Object(object) => object,
                    other => {
                        let mut object = Map::new();
                        object.insert("name".into(), other);
                        object.insert("configuration".into(), Value::Object(Map::new()));
                        object
                    }
                };
                ExtensionObject::with_configuration(self.name(), config).to_json()
            }
            Self::NdArray(nd) => {
                let mut config = Map::new();
                config.insert("dtype".into(), nd.dtype.to_json());
                let shape = nd.shape.iter().map(|d| d.map_or(Value::Null, Value::from));
                config.insert("shape".into(), Value::Array(shape.collect()));
                ExtensionObject::with_configuration(self.name(), config).to_json()
            }
            Self::FixedPoint(fp) => fp.to_json(),
            _ => Value::String(self.name()),
        }
    }

    /// The byte ranges of one element that swap as a unit between little- and big-endian
    /// order, as `(offset, width)` with `width > 1`, in order: none for single-byte and opaque
    /// types, one per component of a complex number, one per UTF-32 code unit, and those of
    /// each field of a struct. `None` for variable-length types.
    pub fn swap_units(&self) -> Option<Vec<(usize, usize)>> {
        let mut units = Vec::new();
        self.push_swap_units(0, &mut units)?;
        Some(units)
    }

    fn push_swap_units(&self, base: usize, units: &mut Vec<(usize, usize)>) -> Option<()> {
        let size = self.fixed_size()?;
        let width = match self {
            Self::Struct(st) => {
                for (offset, f) in st.offsets().zip(&st.fields) {
                    f.data_type.push_swap_units(base + offset, units)?;
                }
                return Some(());
            }
            // The validity byte after the inner element does not swap.
            Self::Optional(o) => return o.inner.push_swap_units(base, units),
            Self::NdArray(nd) => nd.swap_width(),
            Self::Complex64 | Self::FixedLengthUtf32 { .. } => 4,
            Self::Complex128 => 8,
            Self::ComplexFloat(component) => component.size(),
            Self::RawBits(_) | Self::NullTerminatedBytes { .. } | Self::RawBytes { .. } => 1,
            _ => size,
        };
        if width > 1 {
            units.extend((0..size / width).map(|i| (base + i * width, width)));
        }
        Some(())
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
            Self::Optional(o) => write!(f, "{}<{}>", self.name(), o.inner),
            Self::FixedPoint(fp) => fp.fmt(f),
            Self::NdArray(nd) => {
                write!(f, "ndarray<{}, [", nd.dtype)?;
                for (i, dim) in nd.shape.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    match dim {
                        Some(n) => write!(f, "{sep}{n}")?,
                        None => write!(f, "{sep}null")?,
                    }
                }
                f.write_str("]>")
            }
            Self::Struct(st) => {
                write!(f, "{}{{", self.name())?;
                for (i, field) in st.fields.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{}: {}", field.name, field.data_type)?;
                }
                f.write_str("}")
            }
            _ => f.write_str(&self.name()),
        }
    }
}

/// Parse a data type from the text [`Display`](fmt::Display) writes, or from its metadata
/// JSON.
///
/// Accepted forms:
/// - a name: `float32`, `uint16`, `bfloat16`, `float8_e4m3fn`, `r24`, `string`, `bytes`, ...;
/// - a name with its size: `fixed_length_utf32[16]` (bytes), `null_terminated_bytes[8]`,
///   `raw_bytes[4]`;
/// - a time type with its unit: `numpy.datetime64[1s]`, `numpy.timedelta64[10ms]` (the
///   scale factor may be left out: `numpy.datetime64[ns]`);
/// - a struct: `struct{x: float32, y: float32}` (or `structured{...}`), fields possibly
///   structs themselves; field names may not contain `,`, `:`, `{` or `}` in this form;
/// - an optional type: `zarrs.optional<int8>` (or `optional<...>`);
/// - an `ndarray` type: `ndarray<float32, [null, 2]>`, the scalar type then the element
///   shape pattern as JSON;
/// - a fixed-point type: `Q7f8`, `N0f8`, or `binary_fixed_point<int16, 1, 14>` (the base
///   type, the integer bits, the fractional bits);
/// - the metadata JSON: `{"name": "numpy.datetime64", "configuration": {...}}` or `"int8"`.
///
/// ```
/// use zarr_core::{DataType, TimeUnit};
///
/// assert_eq!("float32".parse::<DataType>()?, DataType::Float32);
/// let t: DataType = "numpy.datetime64[1s]".parse()?;
/// assert_eq!(t, DataType::DateTime64 { unit: TimeUnit::Second, scale_factor: 1 });
/// let point: DataType = "struct{x: float32, y: float32}".parse()?;
/// assert_eq!(point.to_string(), "struct{x: float32, y: float32}");
/// assert!("float31".parse::<DataType>().is_err());
/// # Ok::<(), zarr_core::Error>(())
/// ```
impl std::str::FromStr for DataType {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        parse_data_type(text, 0)
    }
}

/// How deeply struct and optional types may nest in text, so that hostile text cannot exhaust the stack
/// (serde_json limits the JSON form the same way).
const MAX_STRUCT_DEPTH: usize = 64;

/// [`DataType::from_str`] for text nested `depth` structs deep.
fn parse_data_type(text: &str, depth: usize) -> Result<DataType> {
    const FIELD: &str = "data type";
    let text = text.trim();
    if text.starts_with('{') || text.starts_with('"') {
        let value: Value = serde_json::from_str(text).map_err(Error::Json)?;
        return DataType::from_json(&value, FIELD);
    }
    for (prefix, registered) in [("zarrs.optional<", false), ("optional<", true)] {
        if let Some(body) = text.strip_prefix(prefix) {
            let inner = body.strip_suffix('>').ok_or_else(|| {
                Error::invalid(FIELD, format!("{text:?}: an optional type ends with `>`"))
            })?;
            if depth >= MAX_STRUCT_DEPTH {
                return Err(Error::invalid(
                    FIELD,
                    format!("data types nest more than {MAX_STRUCT_DEPTH} deep"),
                ));
            }
            let optional = OptionalType::new(parse_data_type(inner, depth + 1)?);
            return Ok(DataType::Optional(if registered {
                optional.registered()
            } else {
                optional
            }));
        }
    }
    if let Some(body) = text.strip_prefix("binary_fixed_point<") {
        let parts: Vec<&str> = body
            .strip_suffix('>')
            .map(|b| b.split(',').map(str::trim).collect())
            .unwrap_or_default();
        let [base, integer_bits, fractional_bits] = parts[..] else {
            return Err(Error::invalid(
                FIELD,
                format!(
                    "{text:?}: expected binary_fixed_point<base, integer bits, fractional \
                     bits>, e.g. binary_fixed_point<int16, 1, 14>"
                ),
            ));
        };
        let count = |digits: &str| -> Result<u64> {
            digits.parse().map_err(|_| {
                Error::invalid(
                    FIELD,
                    format!("{text:?}: {digits:?} is not a number of bits"),
                )
            })
        };
        let json = serde_json::json!({
            "name": "binary_fixed_point",
            "configuration": {
                "base_data_type": base,
                "integer_bits": count(integer_bits)?,
                "fractional_bits": count(fractional_bits)?,
            },
        });
        return DataType::from_json(&json, FIELD);
    }
    if let Some(body) = text.strip_prefix("ndarray<") {
        let (dtype, shape) = body
            .strip_suffix('>')
            .and_then(|b| b.split_once(','))
            .ok_or_else(|| {
                Error::invalid(
                    FIELD,
                    format!("{text:?}: expected ndarray<dtype, [shape]>, e.g. ndarray<float32, [null, 2]>"),
                )
            })?;
        let shape: Value = serde_json::from_str(shape.trim()).map_err(Error::Json)?;
        let json = serde_json::json!({
            "name": "ndarray",
            "configuration": {"dtype": dtype.trim(), "shape": shape},
        });
        return DataType::from_json(&json, FIELD);
    }
    for (prefix, structured) in [("struct{", false), ("structured{", true)] {
        if let Some(body) = text.strip_prefix(prefix) {
            let body = body.strip_suffix('}').ok_or_else(|| {
                Error::invalid(FIELD, format!("{text:?}: a struct ends with `}}`"))
            })?;
            let mut fields = Vec::new();
            for part in split_top_level(body) {
                let (name, data_type) = part.split_once(':').ok_or_else(|| {
                    Error::invalid(
                        FIELD,
                        format!("{text:?}: struct field {part:?} is not `name: type`"),
                    )
                })?;
                if depth >= MAX_STRUCT_DEPTH {
                    return Err(Error::invalid(
                        FIELD,
                        format!("data types nest more than {MAX_STRUCT_DEPTH} deep"),
                    ));
                }
                fields.push(StructField::new(
                    name.trim(),
                    parse_data_type(data_type, depth + 1)?,
                ));
            }
            return Ok(DataType::Struct(StructType::checked(
                fields, structured, FIELD,
            )?));
        }
    }
    if let Some((name, argument)) = text.strip_suffix(']').and_then(|rest| rest.split_once('[')) {
        let mut config = Map::new();
        match name {
            "numpy.datetime64" | "numpy.timedelta64" => {
                let digits = argument.bytes().take_while(u8::is_ascii_digit).count();
                let (scale, unit) = argument.split_at(digits);
                let scale: u64 = if scale.is_empty() {
                    1
                } else {
                    scale.parse().map_err(|_| {
                        Error::invalid(
                            FIELD,
                            format!("{text:?}: scale factor {scale} is too large"),
                        )
                    })?
                };
                config.insert("unit".into(), Value::from(unit));
                config.insert("scale_factor".into(), Value::from(scale));
            }
            "fixed_length_utf32" | "null_terminated_bytes" | "raw_bytes" => {
                let length: u64 = argument.trim().parse().map_err(|_| {
                    Error::invalid(
                        FIELD,
                        format!("{text:?}: expected the size in bytes between the brackets"),
                    )
                })?;
                config.insert("length_bytes".into(), Value::from(length));
            }
            _ => {
                return Err(Error::invalid(
                    FIELD,
                    format!("{text:?}: {name} takes no argument in brackets"),
                ));
            }
        }
        return DataType::from_json(
            &ExtensionObject::with_configuration(name, config).to_json(),
            FIELD,
        );
    }
    DataType::from_json(&Value::String(text.to_owned()), FIELD)
}

/// `body` split at the commas outside brackets and braces.
fn split_top_level(body: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' | '[' | '<' => depth += 1,
            '}' | ']' | '>' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
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
    fn complex_types_named_after_their_parts() {
        let cases = [
            (
                "complex_float16",
                FloatFormat::Float16,
                4,
                vec![(0, 2), (2, 2)],
            ),
            (
                "complex_bfloat16",
                FloatFormat::BFloat16,
                4,
                vec![(0, 2), (2, 2)],
            ),
            (
                "complex_float32",
                FloatFormat::Float32,
                8,
                vec![(0, 4), (4, 4)],
            ),
            (
                "complex_float64",
                FloatFormat::Float64,
                16,
                vec![(0, 8), (8, 8)],
            ),
            (
                "complex_float8_e4m3",
                FloatFormat::Mini(MiniFloat::E4M3),
                2,
                vec![],
            ),
            (
                "complex_float4_e2m1fn",
                FloatFormat::Mini(MiniFloat::F4E2M1FN),
                2,
                vec![],
            ),
        ];
        for (name, format, size, units) in cases {
            let dt = DataType::from_json(&json!(name), "data_type").unwrap();
            assert_eq!(dt, DataType::ComplexFloat(format), "{name}");
            assert_eq!(dt.name(), name);
            assert_eq!(dt.to_json(), json!(name));
            assert_eq!(dt.to_string(), name);
            assert_eq!(dt.fixed_size(), Some(size), "{name}");
            assert_eq!(dt.swap_units(), Some(units), "{name}");
            assert!(dt.is_complex() && !dt.is_float());
            assert_eq!(dt.complex_component(), Some(format.data_type()));
            assert_eq!(FloatFormat::of(&format.data_type()), Some(format));
        }
        // Every small float has its complex type.
        for (format, name) in MiniFloat::ALL {
            let dt = DataType::from_json(&json!(format!("complex_{name}")), "data_type").unwrap();
            assert_eq!(dt, DataType::ComplexFloat(FloatFormat::Mini(format)));
        }
        assert_eq!(
            DataType::Complex64.complex_component(),
            Some(DataType::Float32)
        );
        assert_eq!(DataType::Float32.complex_component(), None);
        assert_eq!(FloatFormat::of(&DataType::Int8), None);
        for name in [
            "complex_int8",
            "complex_",
            "complex_complex64",
            "complex_float128",
        ] {
            let e = DataType::from_json(&json!(name), "data_type").unwrap_err();
            assert!(matches!(e, Error::UnknownExtension { .. }), "{name}: {e}");
        }
        let e = DataType::from_json(
            &json!({"name": "complex_float16", "configuration": {"x": 1}}),
            "data_type",
        )
        .unwrap_err();
        assert!(e.to_string().contains("no configuration"), "{e}");
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

    #[test]
    fn structs_parse_in_both_forms_and_round_trip() {
        let registered = json!({"name": "struct", "configuration": {"fields": [
            {"name": "id", "data_type": "int32"},
            {"name": "flags", "data_type": "uint8"},
            {"name": "point", "data_type": {"name": "struct", "configuration": {"fields": [
                {"name": "x", "data_type": "float32"},
                {"name": "y", "data_type": "float32"}]}}},
            {"name": "t", "data_type": {"name": "numpy.datetime64",
                "configuration": {"unit": "s", "scale_factor": 1}}},
            {"name": "c", "data_type": "complex64"}]}});
        let dt = DataType::from_json(&registered, "data_type").unwrap();
        let DataType::Struct(st) = &dt else {
            panic!("{dt:?}")
        };
        assert!(!st.is_structured());
        assert_eq!(st.size(), 4 + 1 + 8 + 8 + 8);
        assert_eq!(st.offsets().collect::<Vec<_>>(), [0, 4, 5, 13, 21]);
        assert_eq!(dt.fixed_size(), Some(29));
        assert_eq!(dt.to_json(), registered);
        assert_eq!(st.field("t").map(|(o, _)| o), Some(13));
        assert_eq!(
            dt.to_string(),
            "struct{id: int32, flags: uint8, point: struct{x: float32, y: float32}, \
             t: numpy.datetime64[1s], c: complex64}"
        );
        // Every multi-byte unit, nested fields and complex parts included.
        assert_eq!(
            dt.swap_units().unwrap(),
            [(0, 4), (5, 4), (9, 4), (13, 8), (21, 4), (25, 4)]
        );

        // zarr-python 3.1's form: [name, type] pairs, kept when written back.
        let legacy = json!({"name": "structured", "configuration": {"fields": [
            ["id", "int32"],
            ["point", {"name": "structured", "configuration": {"fields": [["x", "float64"]]}}]]}});
        let dt = DataType::from_json(&legacy, "data_type").unwrap();
        let DataType::Struct(st) = &dt else {
            panic!("{dt:?}")
        };
        assert!(st.is_structured());
        assert_eq!(st.size(), 12);
        assert_eq!(dt.to_json(), legacy);
        let registered = DataType::Struct(st.clone().registered());
        assert_eq!(registered.name(), "struct");
        assert_eq!(
            DataType::from_json(&registered.to_json(), "data_type").unwrap(),
            registered
        );
    }

    #[test]
    fn malformed_structs_are_refused() {
        let cases = [
            (json!({"name": "struct"}), "configuration"),
            (json!({"name": "struct", "configuration": {}}), "fields"),
            (
                json!({"name": "struct", "configuration": {"fields": []}}),
                "at least one field",
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [["a", "int8"], ["a", "int16"]]}}),
                "appears twice",
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [["", "int8"]]}}),
                "empty name",
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [["s", "string"]]}}),
                "no fixed size",
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [["a", "int8", 1]]}}),
                "fields[0]",
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [{"name": "a"}]}}),
                "data_type",
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [["a", "int9"]]}}),
                "int9",
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [["a", "int8"]], "x": 1}}),
                "x",
            ),
        ];
        for (value, needle) in cases {
            let err = DataType::from_json(&value, "data_type")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(needle),
                "{value}: `{err}` should contain `{needle}`"
            );
        }
    }
}

#[cfg(test)]
mod from_str_tests {
    use super::*;

    #[test]
    fn display_parses_back_to_the_same_type() {
        let point = StructType::new(vec![
            StructField::new("x", DataType::Float32),
            StructField::new(
                "when",
                DataType::DateTime64 {
                    unit: TimeUnit::Millisecond,
                    scale_factor: 10,
                },
            ),
            StructField::new(
                "inner",
                DataType::Struct(
                    StructType::new(vec![
                        StructField::new("a", DataType::Int8),
                        StructField::new("b", DataType::FixedLengthUtf32 { length_bytes: 8 }),
                    ])
                    .unwrap(),
                ),
            ),
        ])
        .unwrap();
        let types = [
            DataType::Bool,
            DataType::UInt16,
            DataType::Float16,
            DataType::BFloat16,
            DataType::Complex128,
            DataType::MiniFloat(MiniFloat::ALL[0].0),
            DataType::Int4,
            DataType::RawBits(3),
            DataType::String,
            DataType::Bytes,
            DataType::FixedLengthUtf32 { length_bytes: 12 },
            DataType::NullTerminatedBytes { length_bytes: 5 },
            DataType::RawBytes { length_bytes: 7 },
            DataType::TimeDelta64 {
                unit: TimeUnit::Generic,
                scale_factor: 1,
            },
            DataType::Struct(point.clone()),
            DataType::Struct(point.structured()),
            // Fields whose own text holds commas inside `<...>`.
            DataType::Struct(
                StructType::new(vec![
                    StructField::new(
                        "block",
                        DataType::NdArray(
                            NdArrayType::new(DataType::Int16, vec![Some(3), Some(2)]).unwrap(),
                        ),
                    ),
                    StructField::new("b", DataType::UInt8),
                ])
                .unwrap(),
            ),
        ];
        for data_type in types {
            let text = data_type.to_string();
            let parsed: DataType = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(parsed, data_type, "{text}");
            let json = data_type.to_json().to_string();
            assert_eq!(json.parse::<DataType>().unwrap(), data_type, "{json}");
        }
    }

    #[test]
    fn shorthand_and_bad_text() {
        assert_eq!(
            " numpy.datetime64[ns] ".parse::<DataType>().unwrap(),
            DataType::DateTime64 {
                unit: TimeUnit::Nanosecond,
                scale_factor: 1
            }
        );
        for (bad, says) in [
            ("float31", "float31"),
            ("", ""),
            ("fixed_length_utf32[6]", "multiple of 4"),
            ("fixed_length_utf32[x]", "size in bytes"),
            ("numpy.datetime64[1parsec]", "parsec"),
            ("numpy.datetime64[0s]", "not in 1..="),
            ("float32[4]", "takes no argument"),
            ("struct{x: float32", "ends with"),
            ("struct{x float32}", "not `name: type`"),
            ("struct{x: float32, x: int8}", "twice"),
            ("struct{s: string}", "no fixed size"),
            ("struct{}", "struct field"),
            ("{\"name\": 3}", "name"),
        ] {
            let err = bad.parse::<DataType>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}

#[cfg(test)]
mod nesting_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deeply_nested_struct_text_is_an_error_not_a_stack_overflow() {
        let depth = 100_000;
        let text = format!("{}int8{}", "struct{a: ".repeat(depth), "}".repeat(depth));
        let err = text.parse::<DataType>().unwrap_err().to_string();
        assert!(err.contains("nest more than 64"), "{err}");
        let text = format!("{}int8{}", "optional<".repeat(depth), ">".repeat(depth));
        let err = text.parse::<DataType>().unwrap_err().to_string();
        assert!(err.contains("nest more than 64"), "{err}");
        let ok = format!("{}int8{}", "struct{a: ".repeat(64), "}".repeat(64));
        assert_eq!(ok.parse::<DataType>().unwrap().fixed_size(), Some(1));
    }

    #[test]
    fn optional_types_parse_under_both_names_and_nest() {
        let zarrs = json!({"name": "zarrs.optional",
            "configuration": {"name": "int32", "configuration": {}}});
        let dt = DataType::from_json(&zarrs, "data_type").unwrap();
        let DataType::Optional(o) = &dt else {
            panic!("{dt:?}")
        };
        assert_eq!(o.inner(), &DataType::Int32);
        assert!(!o.is_registered());
        assert_eq!(dt.size(), DataTypeSize::Fixed(5));
        // Written back byte for byte as zarrs writes it.
        assert_eq!(dt.to_json(), zarrs);
        assert_eq!(dt.to_string(), "zarrs.optional<int32>");
        assert_eq!(dt.swap_units(), Some(vec![(0, 4)]));

        let registered = json!({"name": "optional", "configuration": {"name": "uint8"}});
        let dt = DataType::from_json(&registered, "data_type").unwrap();
        assert_eq!(dt.name(), "optional");
        assert_eq!(
            dt.to_json(),
            json!({"name": "optional", "configuration": {"name": "uint8", "configuration": {}}})
        );

        let nested = json!({"name": "zarrs.optional", "configuration": {
            "name": "zarrs.optional", "configuration": {
                "name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}}});
        let dt = DataType::from_json(&nested, "data_type").unwrap();
        assert_eq!(dt.size(), DataTypeSize::Fixed(10));
        assert_eq!(dt.to_json(), nested);
        assert_eq!(dt.swap_units(), Some(vec![(0, 8)]));
        assert_eq!(dt.to_string().parse::<DataType>().unwrap(), dt);
        assert_eq!(
            "optional<float64>".parse::<DataType>().unwrap().to_json(),
            json!({"name": "optional", "configuration": {"name": "float64", "configuration": {}}})
        );

        for (bad, says) in [
            (json!({"name": "zarrs.optional"}), "data_type.configuration"),
            (
                json!({"name": "zarrs.optional", "configuration": {}}),
                "data_type.configuration",
            ),
            (
                json!({"name": "zarrs.optional", "configuration": {"name": "nope"}}),
                "nope",
            ),
        ] {
            let err = DataType::from_json(&bad, "data_type")
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let text: DataType = "zarrs.optional<string>".parse().unwrap();
        assert_eq!(text.size(), DataTypeSize::Variable);
        assert_eq!(text.swap_units(), None);
        assert_eq!(
            text.to_json(),
            json!({"name": "zarrs.optional", "configuration": {"name": "string", "configuration": {}}})
        );
        for (bad, says) in [
            ("optional<int8", "ends with `>`"),
            ("optional<nope>", "nope"),
        ] {
            let err = bad.parse::<DataType>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }

    #[test]
    fn ndarray_types_parse_print_and_size() {
        for (text, size, units) in [
            ("ndarray<float32, [null, 2]>", None, None),
            ("ndarray<uint64, [null]>", None, None),
            ("ndarray<int16, [3, 2]>", Some(12), Some(6)),
            ("ndarray<complex128, [2]>", Some(32), Some(4)),
            ("ndarray<bool, [4]>", Some(4), Some(0)),
            ("ndarray<float16, [null, null, 3]>", None, None),
        ] {
            let dt: DataType = text.parse().unwrap();
            assert_eq!(dt.to_string(), text);
            assert_eq!(dt.fixed_size(), size, "{text}");
            assert_eq!(dt.swap_units().map(|u| u.len()), units, "{text}");
            assert_eq!(DataType::from_json(&dt.to_json(), "data_type").unwrap(), dt);
            let json_text = dt.to_json().to_string();
            assert_eq!(json_text.parse::<DataType>().unwrap(), dt);
        }
        let nd = NdArrayType::new(DataType::Int16, vec![None, Some(3)]).unwrap();
        assert!(nd.is_leading_variable());
        assert_eq!(nd.element_shape(0), Some(vec![0, 3]));
        assert_eq!(nd.element_shape(12), Some(vec![2, 3]));
        assert_eq!(nd.element_shape(5), None);
        let two = NdArrayType::new(DataType::Int8, vec![None, None]).unwrap();
        assert!(!two.is_leading_variable());
        assert_eq!(two.element_shape(0), Some(vec![0, 0]));
        assert_eq!(two.element_shape(4), None);
        let inner = NdArrayType::new(DataType::Int8, vec![Some(2), None]).unwrap();
        assert!(!inner.is_leading_variable());
        assert_eq!(inner.element_shape(6), Some(vec![2, 3]));
        for (bad, says) in [
            ("ndarray<float32>", "expected ndarray<dtype, [shape]>"),
            (
                "ndarray<float32, [null, 2]",
                "expected ndarray<dtype, [shape]>",
            ),
            ("ndarray<float32, [null, 0]>", "dimension 1 is 0"),
            ("ndarray<string, [null]>", "not a scalar type"),
            ("ndarray<float32, []>", "at least one dimension"),
        ] {
            let err = bad.parse::<DataType>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        assert!(
            NdArrayType::new(
                DataType::Struct(StructType::new(vec![]).unwrap_or_else(|_| {
                    StructType::new(vec![StructField::new("a", DataType::Int8)]).unwrap()
                })),
                vec![None]
            )
            .is_err()
        );
    }
}
