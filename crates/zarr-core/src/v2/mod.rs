//! Zarr v2 metadata (`.zarray`, `.zgroup`, `.zattrs`): read as its Zarr v3 equivalent, and
//! written from a v3 description that v2 can express ([`ArrayMetadataV2::from_v3`]).
//!
//! A v2 array is read through the same chunk pipeline as a v3 one: [`ArrayMetadataV2::to_v3`]
//! turns its `dtype`, `order`, `filters`, `compressor`, `fill_value` and
//! `dimension_separator` into a v3 data type, codec chain, fill value and the `v2` chunk key
//! encoding, so the chunks are found and decoded exactly as v2 stored them:
//!
//! | v2 | v3 equivalent |
//! |---|---|
//! | `dtype` `"<u2"`, `">f8"`, `"\|b1"`, `"<M8[ns]"`, `"\|S12"`, `"<U5"`, `"\|V8"` | the data type, and `bytes` with the byte order |
//! | `dtype` `"\|O"` with the `vlen-utf8`, `vlen-bytes` or `vlen-array` filter | `string`, or `bytes` with that codec (`numcodecs.vlen-array` for `vlen-array`, keeping its `dtype`) |
//! | structured `dtype` `[["a", "<i4"], ["p", [["x", "<f4"], ["y", "<f4"]]]]` (one byte order) | `struct` in the `structured` form, `bytes` with that order; a base64 `fill_value` in that order |
//! | `order: "F"` | `transpose` with the axes reversed, before `bytes` |
//! | `compressor` `blosc`, `zstd`, `gzip`, `zlib` | `blosc` (shuffle 0/1/2 as its names, -1 as numcodecs resolves it), `zstd`, `gzip`, `numcodecs.zlib` |
//! | `filters` `delta`, `fixedscaleoffset`, `bitround`, `quantize`, `astype`, `packbits` | `numcodecs.<id>` before `bytes`, in order; the last one's `astype` sets the stored byte order |
//! | `lz4`, `shuffle`, `crc32`, `adler32`, `crc32c`, `fletcher32`, `jenkins_lookup3`, `bz2`, `lzma` (as a filter or the compressor) | `numcodecs.<id>` after `bytes`, in order |
//! | `compressor` `pcodec` or `zfpy` (little-endian elements, no byte filters) | `numcodecs.pcodec` or `numcodecs.zfpy` in place of `bytes`, after any element filters |
//! | `dimension_separator` (default `.`) | the `v2` chunk key encoding (`0` for a 0-d array) |
//! | `fill_value: null` | the data type's default (zero, `false`, empty) |
//! | `.zattrs` `_ARRAY_DIMENSIONS` (xarray's convention: one string per dimension) | `dimension_names` (the attribute stays among the attributes) |
//!
//! Structured data types with subarray or object fields or with both byte orders, object
//! arrays without a string or bytes filter, and the other numcodecs filters and compressors
//! (`categorize`, ...) are refused with an error naming them.
//!
//! ```
//! use zarr_core::v2::ArrayMetadataV2;
//! use zarr_core::{ChunkKeyEncoding, ChunkKeySeparator, DataType};
//!
//! let zarray = br#"{"zarr_format": 2, "shape": [100, 80], "chunks": [10, 10],
//!     "dtype": ">i4", "order": "F", "fill_value": -1, "filters": null,
//!     "compressor": {"id": "zstd", "level": 3, "checksum": false}}"#;
//! let v2 = ArrayMetadataV2::from_slice(zarray)?;
//! let v3 = v2.to_v3(serde_json::Map::new())?;
//! assert_eq!(v3.data_type, DataType::Int32);
//! assert_eq!(
//!     v3.chunk_key_encoding,
//!     ChunkKeyEncoding::V2 { separator: ChunkKeySeparator::Dot }
//! );
//! let names: Vec<&str> = v3.codecs.iter().map(|c| c.name.as_str()).collect();
//! assert_eq!(names, ["transpose", "bytes", "zstd"]);
//! # Ok::<(), zarr_core::Error>(())
//! ```

use serde_json::{Map, Value, json};

mod write;
pub use write::{zattrs_json, zgroup_json, zmetadata_json};

use crate::error::{Error, ExtensionKind, Result};
use crate::extension::ExtensionObject;
use crate::json;
use crate::{
    ArrayMetadata, ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, DataType, FillValue,
    GroupMetadata, RegularChunkGrid, StructField, StructType, TimeUnit,
};

/// The store key (relative to a node) of a v2 array's metadata.
pub const ZARRAY: &str = ".zarray";
/// The store key (relative to a node) of a v2 group's metadata.
pub const ZGROUP: &str = ".zgroup";
/// The store key (relative to a node) of a v2 node's attributes.
pub const ZATTRS: &str = ".zattrs";
/// The store key (relative to a group) of v2 consolidated metadata.
pub const ZMETADATA: &str = ".zmetadata";

/// The attribute in which xarray keeps a Zarr v2 array's dimension names (v2 metadata has
/// no place for them): a list of one string per dimension.
pub const ARRAY_DIMENSIONS: &str = "_ARRAY_DIMENSIONS";

/// The dimension names a Zarr v2 array keeps in its [`ARRAY_DIMENSIONS`] attribute: `Some`
/// when the attribute is a list of `rank` strings, `None` when it is missing or anything else
/// (a malformed attribute is left to the attributes, as other attributes are).
///
/// ```
/// use zarr_core::v2::dimension_names_from_attributes;
///
/// let attributes = serde_json::json!({"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m"});
/// let attributes = attributes.as_object().unwrap();
/// assert_eq!(
///     dimension_names_from_attributes(attributes, 2),
///     Some(vec![Some("y".to_owned()), Some("x".to_owned())])
/// );
/// assert_eq!(dimension_names_from_attributes(attributes, 3), None);
/// ```
pub fn dimension_names_from_attributes(
    attributes: &Map<String, Value>,
    rank: usize,
) -> Option<Vec<Option<String>>> {
    let Some(Value::Array(list)) = attributes.get(ARRAY_DIMENSIONS) else {
        return None;
    };
    if list.len() != rank {
        return None;
    }
    list.iter()
        .map(|name| name.as_str().map(|n| Some(n.to_owned())))
        .collect()
}

/// The version of the Zarr format a node's metadata was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ZarrFormat {
    /// Zarr v2 (`.zarray` / `.zgroup`): read through its v3 equivalent.
    V2,
    /// Zarr v3 (`zarr.json`).
    #[default]
    V3,
}

impl std::fmt::Display for ZarrFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::V2 => "2",
            Self::V3 => "3",
        })
    }
}

/// Byte order of a v2 `dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// `<`
    Little,
    /// `>`
    Big,
    /// `|`: not applicable (one-byte elements, byte strings, raw bytes).
    NotApplicable,
}

/// A parsed v2 `dtype` (numpy typestr).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DtypeV2 {
    /// A fixed-size type and its byte order.
    Fixed(DataType, ByteOrder),
    /// `|O`: Python objects, given meaning by an object codec among the filters.
    Object,
}

impl DtypeV2 {
    /// Parse a numpy typestr (`"<u2"`, `"|b1"`, `"<M8[10ms]"`, `"|S12"`, `"|O"`, ...), or a
    /// structured dtype: a list of `[name, typestr]` fields, where a field's type may itself
    /// be such a list (`[["a", "<i4"], ["p", [["x", "<f4"], ["y", "<f4"]]]]`). A structured
    /// dtype is a [`DataType::Struct`] in the `structured` form, with the byte order its
    /// multi-byte fields share.
    ///
    /// # Errors
    /// [`Error::InvalidField`] for a malformed typestr or one without a byte order where it
    /// matters, a malformed field, or a struct whose fields have both byte orders;
    /// [`Error::UnknownExtension`] for a field with a subarray shape (`["v", "<f4", [2]]`) or
    /// of objects (`"|O"`).
    pub fn from_json(value: &Value, field: &str) -> Result<Self> {
        let text = match value {
            Value::String(s) => s.as_str(),
            Value::Array(fields) => return Self::structured(fields, field),
            other => {
                return Err(Error::invalid(
                    field,
                    format!("expected a numpy typestr, found {}", json::type_name(other)),
                ));
            }
        };
        let bad = |reason: &str| Error::invalid(field, format!("{text:?}: {reason}"));
        let mut chars = text.chars();
        let order = match chars.next() {
            Some('<') => ByteOrder::Little,
            Some('>') => ByteOrder::Big,
            Some('|') => ByteOrder::NotApplicable,
            _ => return Err(bad("a typestr starts with its byte order, `<`, `>` or `|`")),
        };
        let rest = chars.as_str();
        let kind = rest.chars().next().ok_or_else(|| bad("no type"))?;
        let tail = &rest[kind.len_utf8()..];
        if kind == 'O' {
            return if tail.is_empty() {
                Ok(Self::Object)
            } else {
                Err(bad("`O` takes no size"))
            };
        }
        if kind == 'M' || kind == 'm' {
            let unit = tail
                .strip_prefix('8')
                .and_then(|t| t.strip_prefix('['))
                .and_then(|t| t.strip_suffix(']'))
                .ok_or_else(|| bad("a datetime or timedelta is `M8[unit]` or `m8[unit]`"))?;
            let digits = unit.bytes().take_while(u8::is_ascii_digit).count();
            let scale_factor = if digits == 0 {
                1
            } else {
                unit[..digits]
                    .parse::<u32>()
                    .ok()
                    .filter(|s| (1..=i32::MAX as u32).contains(s))
                    .ok_or_else(|| bad("the unit's multiple must be 1 to 2^31 - 1"))?
            };
            let unit = TimeUnit::parse(&unit[digits..]).ok_or_else(|| bad("unknown time unit"))?;
            let data_type = if kind == 'M' {
                DataType::DateTime64 { unit, scale_factor }
            } else {
                DataType::TimeDelta64 { unit, scale_factor }
            };
            return Self::fixed(data_type, order, text, field);
        }
        let size: usize = tail
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("expected a positive size after the type character"))?;
        let data_type = match (kind, size) {
            ('b', 1) => DataType::Bool,
            ('i', 1) => DataType::Int8,
            ('i', 2) => DataType::Int16,
            ('i', 4) => DataType::Int32,
            ('i', 8) => DataType::Int64,
            ('u', 1) => DataType::UInt8,
            ('u', 2) => DataType::UInt16,
            ('u', 4) => DataType::UInt32,
            ('u', 8) => DataType::UInt64,
            ('f', 2) => DataType::Float16,
            ('f', 4) => DataType::Float32,
            ('f', 8) => DataType::Float64,
            ('c', 8) => DataType::Complex64,
            ('c', 16) => DataType::Complex128,
            ('S', n) => DataType::NullTerminatedBytes { length_bytes: n },
            ('V', n) => DataType::RawBytes { length_bytes: n },
            ('U', n) => DataType::FixedLengthUtf32 {
                length_bytes: n
                    .checked_mul(4)
                    .ok_or_else(|| Error::overflow(format!("the size of {text:?}")))?,
            },
            _ => return Err(bad("not a data type this crate reads")),
        };
        Self::fixed(data_type, order, text, field)
    }

    /// A structured dtype's list of fields.
    fn structured(list: &[Value], field: &str) -> Result<Self> {
        let mut fields = Vec::with_capacity(list.len());
        // The byte order of the multi-byte fields (and of nested structs), once one is seen.
        let mut order = ByteOrder::NotApplicable;
        for (i, entry) in list.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let parts = entry
                .as_array()
                .ok_or_else(|| Error::invalid(&at, "a field is a list of its name and its type"))?;
            let (name, ty) = match parts.as_slice() {
                [Value::String(name), ty] => (name, ty),
                [Value::String(name), _, _] => {
                    return Err(Error::UnknownExtension {
                        kind: ExtensionKind::DataType,
                        name: format!("structured with a subarray field ({name:?})"),
                        field: at,
                    });
                }
                _ => {
                    return Err(Error::invalid(
                        &at,
                        "a field is a list of its name (a string) and its type",
                    ));
                }
            };
            let (data_type, field_order) = match Self::from_json(ty, &format!("{at}[1]"))? {
                Self::Fixed(data_type, field_order) => (data_type, field_order),
                Self::Object => {
                    return Err(Error::UnknownExtension {
                        kind: ExtensionKind::DataType,
                        name: format!("structured with an object field ({name:?})"),
                        field: at,
                    });
                }
            };
            // Types without a byte order may still be written `<` or `>` (`"<u1"`): they do
            // not decide the struct's order.
            let field_order = if unordered(&data_type) {
                ByteOrder::NotApplicable
            } else {
                field_order
            };
            match (order, field_order) {
                (_, ByteOrder::NotApplicable) => {}
                (ByteOrder::NotApplicable, o) => order = o,
                (a, b) if a == b => {}
                _ => {
                    return Err(Error::invalid(
                        &at,
                        format!(
                            "field {name:?} has the other byte order than the fields before it: \
                             a struct is stored in one byte order"
                        ),
                    ));
                }
            }
            fields.push(StructField::new(name.clone(), data_type));
        }
        let struct_type = StructType::checked(fields, true, field)?;
        Ok(Self::Fixed(DataType::Struct(struct_type), order))
    }

    fn fixed(data_type: DataType, order: ByteOrder, text: &str, field: &str) -> Result<Self> {
        // Types whose bytes are swapped by the byte order need one.
        if !unordered(&data_type) && order == ByteOrder::NotApplicable {
            return Err(Error::invalid(
                field,
                format!("{text:?}: a multi-byte type needs the byte order `<` or `>`"),
            ));
        }
        Ok(Self::Fixed(data_type, order))
    }
}

/// Whether a typestr's type has bytes no byte order swaps (one-byte types, byte strings, raw
/// bytes).
fn unordered(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Bool
            | DataType::Int8
            | DataType::UInt8
            | DataType::NullTerminatedBytes { .. }
            | DataType::RawBytes { .. }
    )
}

/// The `order` of a v2 array: how elements are laid out inside each chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// `"C"`: row-major.
    C,
    /// `"F"`: column-major.
    F,
}

/// A v2 array's `.zarray`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayMetadataV2 {
    /// The shape.
    pub shape: Vec<u64>,
    /// The chunk shape (one chunk shape for the whole array).
    pub chunks: Vec<u64>,
    /// The element type.
    pub dtype: DtypeV2,
    /// The compressor (`{"id": ..., ...}`), if any.
    pub compressor: Option<Map<String, Value>>,
    /// The filters, in the order they are applied when writing.
    pub filters: Vec<Map<String, Value>>,
    /// The fill value as written (`null` for undefined).
    pub fill_value: Value,
    /// The element order inside chunks.
    pub order: Order,
    /// The separator of chunk keys (`.` when absent).
    pub dimension_separator: ChunkKeySeparator,
}

impl ArrayMetadataV2 {
    /// Parse a `.zarray` document. Unknown keys are ignored, as v2 asks.
    ///
    /// # Errors
    /// [`Error::Json`] / [`Error::NotAnObject`] for a document that is not a JSON object;
    /// [`Error::MissingField`] / [`Error::InvalidField`] naming the field that breaks the v2
    /// specification.
    pub fn from_slice(bytes: &[u8]) -> Result<Self> {
        let doc = json_object(bytes)?;
        let field = |name: &str| format!("{ZARRAY}: {name}");
        let get = |name: &str| doc.get(name).ok_or_else(|| Error::missing(field(name)));
        match get("zarr_format")? {
            Value::Number(n) if n.as_u64() == Some(2) => {}
            other => {
                return Err(Error::invalid(
                    field("zarr_format"),
                    format!("expected 2, found {other}"),
                ));
            }
        }
        let shape = u64_list(get("shape")?, &field("shape"), false)?;
        let chunks = u64_list(get("chunks")?, &field("chunks"), true)?;
        if chunks.len() != shape.len() {
            return Err(Error::RankMismatch {
                what: field("chunks"),
                expected: shape.len(),
                found: chunks.len(),
            });
        }
        let dtype = DtypeV2::from_json(get("dtype")?, &field("dtype"))?;
        let compressor = match get("compressor")? {
            Value::Null => None,
            Value::Object(c) => Some(codec_object(c, &field("compressor"))?.clone()),
            other => {
                return Err(Error::invalid(
                    field("compressor"),
                    format!(
                        "expected an object or null, found {}",
                        json::type_name(other)
                    ),
                ));
            }
        };
        let filters = match get("filters")? {
            Value::Null => Vec::new(),
            Value::Array(list) => list
                .iter()
                .enumerate()
                .map(|(i, f)| match f {
                    Value::Object(f) => {
                        Ok(codec_object(f, &format!("{}[{i}]", field("filters")))?.clone())
                    }
                    other => Err(Error::invalid(
                        format!("{}[{i}]", field("filters")),
                        format!("expected an object, found {}", json::type_name(other)),
                    )),
                })
                .collect::<Result<_>>()?,
            other => {
                return Err(Error::invalid(
                    field("filters"),
                    format!("expected a list or null, found {}", json::type_name(other)),
                ));
            }
        };
        let fill_value = get("fill_value")?.clone();
        let order = match get("order")? {
            Value::String(s) if s == "C" => Order::C,
            Value::String(s) if s == "F" => Order::F,
            other => {
                return Err(Error::invalid(
                    field("order"),
                    format!("expected \"C\" or \"F\", found {other}"),
                ));
            }
        };
        let dimension_separator = match doc.get("dimension_separator") {
            None | Some(Value::Null) => ChunkKeySeparator::Dot,
            Some(Value::String(s)) if s == "." => ChunkKeySeparator::Dot,
            Some(Value::String(s)) if s == "/" => ChunkKeySeparator::Slash,
            Some(other) => {
                return Err(Error::invalid(
                    field("dimension_separator"),
                    format!("expected \".\" or \"/\", found {other}"),
                ));
            }
        };
        Ok(Self {
            shape,
            chunks,
            dtype,
            compressor,
            filters,
            fill_value,
            order,
            dimension_separator,
        })
    }

    /// The v3 data type: the dtype's, or for `|O` the one its object codec gives.
    ///
    /// # Errors
    /// [`Error::InvalidField`] for an object dtype without a `vlen-utf8`, `vlen-bytes` or
    /// `vlen-array` filter; [`Error::UnknownExtension`] for another object codec.
    pub fn data_type(&self) -> Result<DataType> {
        match &self.dtype {
            DtypeV2::Fixed(data_type, _) => Ok(data_type.clone()),
            DtypeV2::Object => match self.filters.first().map(codec_id) {
                Some("vlen-utf8") => Ok(DataType::String),
                // numcodecs' ragged arrays: each element the bytes of a 1-D array.
                Some("vlen-bytes" | "vlen-array") => Ok(DataType::Bytes),
                Some(other) => Err(Error::UnknownExtension {
                    kind: ExtensionKind::Codec,
                    name: other.to_owned(),
                    field: format!("{ZARRAY}: filters[0] (the object codec of dtype \"|O\")"),
                }),
                None => Err(Error::invalid(
                    format!("{ZARRAY}: filters"),
                    "dtype \"|O\" needs an object codec (vlen-utf8, vlen-bytes or vlen-array) as \
                     its first filter",
                )),
            },
        }
    }

    /// The v3 equivalent, with `attributes` (from `.zattrs`).
    ///
    /// # Errors
    /// As [`data_type`](Self::data_type); [`Error::UnknownExtension`] for a filter or
    /// compressor with no v3 equivalent here; [`Error::InvalidFillValue`] for a fill value
    /// that does not suit the data type; the checks of [`ArrayMetadata::new`].
    pub fn to_v3(&self, attributes: Map<String, Value>) -> Result<ArrayMetadata> {
        let data_type = self.data_type()?;
        let element_size = data_type.fixed_size();
        let mut codecs = Vec::new();
        if self.order == Order::F && self.shape.len() > 1 {
            let reversed: Vec<usize> = (0..self.shape.len()).rev().collect();
            codecs.push(ExtensionObject::with_configuration(
                "transpose",
                object(json!({ "order": reversed })),
            ));
        }
        let mut filters = self.filters.iter().enumerate().peekable();
        let mut element_size = element_size;
        match &self.dtype {
            DtypeV2::Object => {
                let object_codec = filters.next().map(|(_, f)| f);
                codecs.push(match (&data_type, object_codec) {
                    (DataType::String, _) => ExtensionObject::new("vlen-utf8"),
                    // `{"id": "vlen-array", "dtype": "<i4"}` keeps its `dtype`.
                    (_, Some(f)) if codec_id(f) == "vlen-array" => numcodecs_v3(f),
                    _ => ExtensionObject::new("vlen-bytes"),
                });
            }
            DtypeV2::Fixed(_, order) => {
                // numcodecs' element filters come first: they see the elements, and the last
                // one's `astype` is what is stored.
                let (mut order, mut size) = (*order, element_size);
                while let Some((i, filter)) =
                    filters.next_if(|(_, f)| ELEMENT_FILTERS.contains(&codec_id(f)))
                {
                    let field = format!("{ZARRAY}: filters[{i}]");
                    (order, size) = numeric_filter_output(filter, order, size, &field)?;
                    codecs.push(numcodecs_v3(filter));
                }
                element_size = size;
                if let Some(compressor) = self
                    .compressor
                    .as_ref()
                    .filter(|c| ELEMENT_COMPRESSORS.contains(&codec_id(c)))
                {
                    // numcodecs' pcodec and zfpy compress the elements themselves: in v3 each
                    // is the array->bytes codec, in place of `bytes`, and nothing can follow.
                    let field = format!("{ZARRAY}: compressor");
                    let id = codec_id(compressor);
                    if let Some((i, filter)) = filters.peek() {
                        return Err(Error::invalid(
                            field,
                            format!(
                                "`{id}` compresses elements, but the byte filter `{}` \
                                 (filters[{i}]) comes before it: no v3 chain can do that",
                                codec_id(filter)
                            ),
                        ));
                    }
                    if order == ByteOrder::Big && size.is_some_and(|s| s > 1) {
                        return Err(Error::invalid(
                            field,
                            format!(
                                "`{id}` takes little-endian elements only (numcodecs refuses \
                                 big-endian ones)"
                            ),
                        ));
                    }
                    codecs.push(numcodecs_v3(compressor));
                    let fill_value = self.fill_value_v3(&data_type)?;
                    return self.v3_with(data_type, fill_value, codecs, attributes);
                }
                let bytes = match (order, size) {
                    (ByteOrder::Big, Some(size)) if size > 1 => {
                        ExtensionObject::with_configuration(
                            "bytes",
                            object(json!({ "endian": "big" })),
                        )
                    }
                    (_, Some(size)) if size > 1 => ExtensionObject::with_configuration(
                        "bytes",
                        object(json!({ "endian": "little" })),
                    ),
                    _ => ExtensionObject::new("bytes"),
                };
                codecs.push(bytes);
            }
        }
        for (i, filter) in filters {
            let field = format!("{ZARRAY}: filters[{i}]");
            if ELEMENT_FILTERS.contains(&codec_id(filter)) {
                return Err(Error::invalid(
                    field,
                    format!(
                        "the element filter `{}` follows a filter that works on bytes (or the object codec): no v3 chain can do that",
                        codec_id(filter)
                    ),
                ));
            }
            codecs.push(compressor_to_v3(filter, element_size.unwrap_or(1), &field)?);
        }
        if let Some(compressor) = &self.compressor {
            let field = format!("{ZARRAY}: compressor");
            codecs.push(compressor_to_v3(
                compressor,
                element_size.unwrap_or(1),
                &field,
            )?);
        }
        let fill_value = self.fill_value_v3(&data_type)?;
        self.v3_with(data_type, fill_value, codecs, attributes)
    }

    /// The v3 metadata with this array's shape, chunks and chunk keys.
    fn v3_with(
        &self,
        data_type: DataType,
        fill_value: FillValue,
        codecs: Vec<ExtensionObject>,
        attributes: Map<String, Value>,
    ) -> Result<ArrayMetadata> {
        let grid = ChunkGrid::Regular(RegularChunkGrid::try_new(self.chunks.clone())?);
        let names = dimension_names_from_attributes(&attributes, self.shape.len());
        let mut metadata =
            ArrayMetadata::new(self.shape.clone(), data_type, grid, fill_value, codecs)?
                .with_chunk_key_encoding(ChunkKeyEncoding::V2 {
                    separator: self.dimension_separator,
                })
                .with_attributes(attributes);
        if let Some(names) = names {
            metadata = metadata.with_dimension_names(names)?;
        }
        Ok(metadata)
    }

    fn fill_value_v3(&self, data_type: &DataType) -> Result<FillValue> {
        match (&self.fill_value, data_type) {
            (Value::Null, dt) => Ok(FillValue::default_for(dt)),
            // A struct's fill value is base64 of the record in the dtype's byte order; the
            // `structured` form reads it little-endian.
            (Value::String(text), DataType::Struct(_))
                if self.dtype == DtypeV2::Fixed(data_type.clone(), ByteOrder::Big) =>
            {
                use base64::Engine as _;
                let engine = base64::engine::general_purpose::STANDARD;
                let field = format!("{ZARRAY}: fill_value");
                let mut bytes = engine
                    .decode(text)
                    .map_err(|e| Error::invalid(&field, format!("not base64: {e}")))?;
                if bytes.len() != data_type.fixed_size().unwrap_or(0) {
                    return Err(Error::invalid(
                        &field,
                        format!(
                            "expected {} bytes, found {}",
                            data_type.fixed_size().unwrap_or(0),
                            bytes.len()
                        ),
                    ));
                }
                for (offset, width) in data_type.swap_units().unwrap_or_default() {
                    bytes[offset..offset + width].reverse();
                }
                FillValue::from_json(&Value::String(engine.encode(&bytes)), data_type)
            }
            // zarr-python 2 wrote `0` (or other non-strings) as the fill of object arrays.
            (Value::String(_), DataType::String) => {
                FillValue::from_json(&self.fill_value, data_type)
            }
            (_, DataType::String | DataType::Bytes) if !self.fill_value.is_string() => {
                Ok(FillValue::default_for(data_type))
            }
            (value, dt) => FillValue::from_json(value, dt),
        }
    }
}

/// A v2 group from its `.zgroup` document and attributes (from `.zattrs`).
///
/// # Errors
/// [`Error::Json`] / [`Error::NotAnObject`] for a document that is not a JSON object;
/// [`Error::InvalidField`] unless `zarr_format` is 2.
pub fn group_from_v2(zgroup: &[u8], attributes: Map<String, Value>) -> Result<GroupMetadata> {
    let doc = json_object(zgroup)?;
    match doc.get("zarr_format") {
        Some(Value::Number(n)) if n.as_u64() == Some(2) => {}
        Some(other) => {
            return Err(Error::invalid(
                format!("{ZGROUP}: zarr_format"),
                format!("expected 2, found {other}"),
            ));
        }
        None => return Err(Error::missing(format!("{ZGROUP}: zarr_format"))),
    }
    Ok(GroupMetadata::new().with_attributes(attributes))
}

/// Parse a `.zattrs` document (a JSON object).
///
/// # Errors
/// [`Error::Json`] / [`Error::NotAnObject`].
pub fn attributes_from_v2(zattrs: &[u8]) -> Result<Map<String, Value>> {
    json_object(zattrs)
}

/// The nodes below a group listed in its v2 consolidated metadata (`.zmetadata`:
/// `{"zarr_consolidated_format": 1, "metadata": {"a/b/.zarray": {...}, "a/b/.zattrs": {...},
/// ...}}`), as (path relative to the group, v3 equivalent), in path order. The group's own
/// entries (`.zgroup`, `.zattrs`) are left out.
///
/// # Errors
/// [`Error::InvalidField`] unless `zarr_consolidated_format` is 1 and `metadata` an object
/// of objects; the errors of [`ArrayMetadataV2::from_slice`] and [`group_from_v2`] for an
/// entry, with its key in the field name.
pub fn consolidated_nodes(zmetadata: &[u8]) -> Result<Vec<(String, crate::NodeMetadata)>> {
    let doc = json_object(zmetadata)?;
    match doc.get("zarr_consolidated_format") {
        Some(Value::Number(n)) if n.as_u64() == Some(1) => {}
        other => {
            return Err(Error::invalid(
                format!("{ZMETADATA}: zarr_consolidated_format"),
                format!("expected 1, found {}", other.unwrap_or(&Value::Null)),
            ));
        }
    }
    let Some(Value::Object(entries)) = doc.get("metadata") else {
        return Err(Error::invalid(
            format!("{ZMETADATA}: metadata"),
            "expected an object of documents",
        ));
    };
    let document = |key: &str| -> Result<Option<Vec<u8>>> {
        match entries.get(key) {
            None => Ok(None),
            Some(value @ Value::Object(_)) => {
                Ok(Some(serde_json::to_vec(value).map_err(Error::Json)?))
            }
            Some(other) => Err(Error::invalid(
                format!("{ZMETADATA}: metadata.{key}"),
                format!("expected an object, found {}", json::type_name(other)),
            )),
        }
    };
    let in_entry = |key: &str, e: Error| match e {
        Error::InvalidField { field, reason } => Error::InvalidField {
            field: format!("{ZMETADATA}: metadata.{key}: {field}"),
            reason,
        },
        Error::MissingField { field } => Error::MissingField {
            field: format!("{ZMETADATA}: metadata.{key}: {field}"),
        },
        other => other,
    };
    let mut nodes = Vec::new();
    for key in entries.keys() {
        let (path, is_array) = if let Some(path) = key.strip_suffix(&format!("/{ZARRAY}")) {
            (path, true)
        } else if let Some(path) = key.strip_suffix(&format!("/{ZGROUP}")) {
            (path, false)
        } else {
            continue;
        };
        let attributes = match document(&format!("{path}/{ZATTRS}"))? {
            Some(bytes) => attributes_from_v2(&bytes)?,
            None => Map::new(),
        };
        let bytes = document(key)?.unwrap_or_default();
        let metadata = if is_array {
            crate::NodeMetadata::Array(Box::new(
                ArrayMetadataV2::from_slice(&bytes)
                    .and_then(|m| m.to_v3(attributes))
                    .map_err(|e| in_entry(key, e))?,
            ))
        } else {
            crate::NodeMetadata::Group(Box::new(
                group_from_v2(&bytes, attributes).map_err(|e| in_entry(key, e))?,
            ))
        };
        nodes.push((path.to_owned(), metadata));
    }
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(nodes)
}

fn json_object(bytes: &[u8]) -> Result<Map<String, Value>> {
    match serde_json::from_slice::<Value>(bytes).map_err(Error::Json)? {
        Value::Object(map) => Ok(map),
        other => Err(Error::NotAnObject {
            found: json::type_name(&other),
        }),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn u64_list(value: &Value, field: &str, positive: bool) -> Result<Vec<u64>> {
    let list = value
        .as_array()
        .ok_or_else(|| Error::invalid(field, "expected a list of integers"))?;
    list.iter()
        .map(|n| {
            n.as_u64().filter(|n| !positive || *n > 0).ok_or_else(|| {
                Error::invalid(
                    field,
                    format!(
                        "expected {} integers, found {n}",
                        if positive { "positive" } else { "non-negative" }
                    ),
                )
            })
        })
        .collect()
}

fn codec_object<'a>(codec: &'a Map<String, Value>, field: &str) -> Result<&'a Map<String, Value>> {
    match codec.get("id") {
        Some(Value::String(_)) => Ok(codec),
        _ => Err(Error::invalid(
            field,
            "a numcodecs codec needs a string `id`",
        )),
    }
}

fn codec_id(codec: &Map<String, Value>) -> &str {
    codec.get("id").and_then(Value::as_str).unwrap_or("")
}

/// numcodecs' filters that work on elements (array->array codecs in v3, `numcodecs.<id>`):
/// the numeric ones and `packbits` (booleans).
const ELEMENT_FILTERS: [&str; 6] = [
    "delta",
    "fixedscaleoffset",
    "bitround",
    "quantize",
    "astype",
    "packbits",
];

/// numcodecs' compressors of elements (`numcodecs.pcodec` and `numcodecs.zfpy` in v3,
/// array->bytes codecs).
const ELEMENT_COMPRESSORS: [&str; 2] = ["pcodec", "zfpy"];

/// numcodecs' byte codecs read under their `numcodecs.<id>` v3 name with the same
/// configuration.
const NUMCODECS_BYTES: [&str; 9] = [
    "lz4",
    "shuffle",
    "crc32",
    "adler32",
    "crc32c",
    "fletcher32",
    "jenkins_lookup3",
    "bz2",
    "lzma",
];

/// A numcodecs codec's v3 form: `numcodecs.<id>` with the rest of its configuration.
fn numcodecs_v3(codec: &Map<String, Value>) -> ExtensionObject {
    let mut configuration = codec.clone();
    configuration.remove("id");
    ExtensionObject::with_configuration(format!("numcodecs.{}", codec_id(codec)), configuration)
}

/// The byte order and element size of what a numeric `filter` produces from elements of
/// `order` and `size`. numcodecs reinterprets the buffer as the filter's `dtype`, so a `dtype`
/// of the other byte order than the array's has no v3 equivalent.
fn numeric_filter_output(
    filter: &Map<String, Value>,
    order: ByteOrder,
    size: Option<usize>,
    field: &str,
) -> Result<(ByteOrder, Option<usize>)> {
    let typed = |key: &str| -> Result<Option<(ByteOrder, Option<usize>)>> {
        match filter.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match DtypeV2::from_json(v, &format!("{field}.{key}"))? {
                DtypeV2::Fixed(t, o) => Ok(Some((o, t.fixed_size()))),
                DtypeV2::Object => Err(Error::invalid(
                    format!("{field}.{key}"),
                    "expected a numeric type, found \"|O\"",
                )),
            },
        }
    };
    let (input, output) = match codec_id(filter) {
        // Booleans in, bytes out.
        "packbits" => (None, Some((ByteOrder::NotApplicable, Some(1)))),
        "astype" => (typed("decode_dtype")?, typed("encode_dtype")?),
        "bitround" => (None, None),
        _ => (typed("dtype")?, typed("astype")?),
    };
    if let Some((o, s)) = input
        && s.is_some_and(|s| s > 1)
        && o != order
    {
        return Err(Error::invalid(
            field,
            format!(
                "the filter's dtype has the other byte order than the array's ({order:?}): \
                 numcodecs would reinterpret the bytes, which no v3 chain does"
            ),
        ));
    }
    Ok(match output {
        Some((ByteOrder::NotApplicable, s)) => (order, s),
        Some((o, s)) => (o, s),
        None => (order, size),
    })
}

/// The v3 codec that reads and writes what the numcodecs byte codec `codec` (its configuration
/// with `"id"`, as in `.zarray`) does: `blosc` (with numcodecs' integer `shuffle`, -1
/// resolved for `element_size`-byte elements), `zstd`, `gzip`, `zlib` as `numcodecs.zlib`,
/// and `lz4`, `shuffle`, `crc32`, `adler32`, `crc32c`, `fletcher32` as `numcodecs.<id>`.
/// Also what zarr-python's `numcodecs.blosc`, `numcodecs.zstd` and `numcodecs.gzip` v3 codecs
/// are read as.
///
/// # Errors
/// [`Error::UnknownExtension`] for any other id; [`Error::InvalidField`] or
/// [`Error::MissingField`] for a malformed configuration.
///
/// ```
/// use serde_json::json;
/// use zarr_core::v2::numcodec_to_v3;
///
/// let codec = json!({"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": -1, "blocksize": 0});
/// let v3 = numcodec_to_v3(codec.as_object().unwrap(), 1)?;
/// assert_eq!(v3.name, "blosc");
/// assert_eq!(v3.configuration.unwrap()["shuffle"], "bitshuffle"); // -1 with 1-byte elements
/// # Ok::<(), zarr_core::Error>(())
/// ```
pub fn numcodec_to_v3(codec: &Map<String, Value>, element_size: usize) -> Result<ExtensionObject> {
    compressor_to_v3(codec, element_size, "codec")
}

/// A numcodecs compressor's v3 equivalent (also a byte filter's: `shuffle`, checksums).
fn compressor_to_v3(
    c: &Map<String, Value>,
    element_size: usize,
    field: &str,
) -> Result<ExtensionObject> {
    let int = |key: &str, default: Option<i64>| -> Result<i64> {
        match c.get(key) {
            None | Some(Value::Null) => {
                default.ok_or_else(|| Error::missing(format!("{field}.{key}")))
            }
            Some(v) => v.as_i64().ok_or_else(|| {
                Error::invalid(
                    format!("{field}.{key}"),
                    format!("expected an integer, found {v}"),
                )
            }),
        }
    };
    let id = codec_id(c);
    Ok(match id {
        "blosc" => {
            let typesize = match c.get("typesize") {
                Some(v) if !v.is_null() => int("typesize", None)?,
                _ => element_size as i64,
            };
            let shuffle = match int("shuffle", Some(1))? {
                0 => "noshuffle",
                1 => "shuffle",
                2 => "bitshuffle",
                // numcodecs' AUTOSHUFFLE: bit shuffle for one-byte elements, byte shuffle
                // otherwise. (Decoding reads the shuffle from each chunk's header anyway.)
                -1 if typesize == 1 => "bitshuffle",
                -1 => "shuffle",
                other => {
                    return Err(Error::invalid(
                        format!("{field}.shuffle"),
                        format!("expected -1, 0, 1 or 2, found {other}"),
                    ));
                }
            };
            let cname = c
                .get("cname")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::missing(format!("{field}.cname")))?;
            ExtensionObject::with_configuration(
                "blosc",
                object(json!({
                    "cname": cname,
                    "clevel": int("clevel", Some(5))?,
                    "shuffle": shuffle,
                    "typesize": typesize.clamp(1, 255),
                    "blocksize": int("blocksize", Some(0))?,
                })),
            )
        }
        "zstd" => {
            let checksum = match c.get("checksum") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(Error::invalid(
                        format!("{field}.checksum"),
                        format!("expected true or false, found {other}"),
                    ));
                }
            };
            ExtensionObject::with_configuration(
                "zstd",
                object(json!({ "level": int("level", Some(1))?, "checksum": checksum })),
            )
        }
        "gzip" => ExtensionObject::with_configuration(
            "gzip",
            object(json!({ "level": int("level", Some(1))? })),
        ),
        "zlib" => ExtensionObject::with_configuration(
            "numcodecs.zlib",
            object(json!({ "level": int("level", Some(1))? })),
        ),
        id if NUMCODECS_BYTES.contains(&id) => numcodecs_v3(c),
        other => {
            return Err(Error::UnknownExtension {
                kind: ExtensionKind::Codec,
                name: other.to_owned(),
                field: format!(
                    "{field} (v2 codecs read here: blosc, zstd, gzip, zlib, {}, pcodec and \
                     zfpy as the compressor, and the filters {})",
                    NUMCODECS_BYTES.join(", "),
                    ELEMENT_FILTERS.join(", ")
                ),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dtype(s: &str) -> Result<DtypeV2> {
        DtypeV2::from_json(&Value::from(s), "dtype")
    }

    #[test]
    fn typestrs_parse_with_their_byte_order() {
        use ByteOrder::*;
        assert_eq!(
            dtype("<u2").unwrap(),
            DtypeV2::Fixed(DataType::UInt16, Little)
        );
        assert_eq!(
            dtype(">f8").unwrap(),
            DtypeV2::Fixed(DataType::Float64, Big)
        );
        assert_eq!(
            dtype("|b1").unwrap(),
            DtypeV2::Fixed(DataType::Bool, NotApplicable)
        );
        assert_eq!(
            dtype("|i1").unwrap(),
            DtypeV2::Fixed(DataType::Int8, NotApplicable)
        );
        assert_eq!(
            dtype("<c16").unwrap(),
            DtypeV2::Fixed(DataType::Complex128, Little)
        );
        assert_eq!(
            dtype("|S12").unwrap(),
            DtypeV2::Fixed(
                DataType::NullTerminatedBytes { length_bytes: 12 },
                NotApplicable
            )
        );
        assert_eq!(
            dtype(">U5").unwrap(),
            DtypeV2::Fixed(DataType::FixedLengthUtf32 { length_bytes: 20 }, Big)
        );
        assert_eq!(
            dtype("|V8").unwrap(),
            DtypeV2::Fixed(DataType::RawBytes { length_bytes: 8 }, NotApplicable)
        );
        assert_eq!(
            dtype("<M8[ns]").unwrap(),
            DtypeV2::Fixed(
                DataType::DateTime64 {
                    unit: TimeUnit::Nanosecond,
                    scale_factor: 1
                },
                Little
            )
        );
        assert_eq!(
            dtype("<m8[10ms]").unwrap(),
            DtypeV2::Fixed(
                DataType::TimeDelta64 {
                    unit: TimeUnit::Millisecond,
                    scale_factor: 10
                },
                Little
            )
        );
        assert_eq!(dtype("|O").unwrap(), DtypeV2::Object);
    }

    #[test]
    fn malformed_typestrs_are_refused_with_the_field() {
        for bad in [
            "u2",
            "|u2",
            "<u3",
            "<x4",
            "<M8",
            "<M8[lightyear]",
            "<S0",
            "=i4",
            "",
            "|O4",
        ] {
            let e = dtype(bad).unwrap_err();
            assert!(matches!(e, Error::InvalidField { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("dtype"), "{bad}: {e}");
        }
    }

    #[test]
    fn structured_dtypes_are_structs_with_one_byte_order() {
        let parsed = |v: Value| DtypeV2::from_json(&v, "dtype");
        let DtypeV2::Fixed(DataType::Struct(st), order) = parsed(json!([
            ["id", "<i4"],
            ["flag", "|b1"],
            ["p", [["x", "<f4"], ["tag", "|S3"]]],
            ["t", "<M8[s]"]
        ]))
        .unwrap() else {
            panic!("not a struct")
        };
        assert_eq!(order, ByteOrder::Little);
        assert!(st.is_structured());
        assert_eq!(st.size(), 4 + 1 + (4 + 3) + 8);
        let names: Vec<&str> = st.fields().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["id", "flag", "p", "t"]);
        assert_eq!(st.fields()[0].data_type, DataType::Int32);
        let DataType::Struct(inner) = &st.fields()[2].data_type else {
            panic!("not nested")
        };
        assert_eq!(
            inner.fields()[1].data_type,
            DataType::NullTerminatedBytes { length_bytes: 3 }
        );
        // Big-endian; single-byte fields written `<` do not count as an order.
        assert!(matches!(
            parsed(json!([["a", ">i4"], ["b", "<u1"], ["c", ">c8"]])).unwrap(),
            DtypeV2::Fixed(DataType::Struct(_), ByteOrder::Big)
        ));
        // Only single-byte fields: no byte order.
        assert!(matches!(
            parsed(json!([["a", "|u1"], ["b", "|i1"]])).unwrap(),
            DtypeV2::Fixed(DataType::Struct(_), ByteOrder::NotApplicable)
        ));

        // Refused, naming the field.
        let mixed = parsed(json!([["a", "<i4"], ["b", [["c", ">i2"]]]])).unwrap_err();
        assert!(matches!(mixed, Error::InvalidField { .. }), "{mixed}");
        assert!(mixed.to_string().contains("dtype[1]"), "{mixed}");
        for (unsupported, what) in [
            (json!([["a", "<i4"], ["v", "<f4", [2]]]), "subarray"),
            (json!([["o", "|O"]]), "object"),
        ] {
            let e = parsed(unsupported).unwrap_err();
            assert!(matches!(e, Error::UnknownExtension { .. }), "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
        for malformed in [
            json!([]),
            json!([["a"]]),
            json!([[1, "<i4"]]),
            json!(["a", "<i4"]),
            json!([["a", "<i4"], ["a", "<i2"]]),
            json!([["", "<i4"]]),
            json!([["a", "<i3"]]),
        ] {
            let e = parsed(malformed.clone()).unwrap_err();
            assert!(matches!(e, Error::InvalidField { .. }), "{malformed}: {e}");
        }
    }

    #[test]
    fn structured_arrays_keep_their_byte_order_and_fill_value() {
        // Big-endian record (7, 1.5), as numpy's `tobytes()`: 00000007 3ff8000000000000.
        let meta = v3(json!({
            "dtype": [["a", ">i4"], ["b", ">f8"]],
            "fill_value": "AAAABz/4AAAAAAAA",
            "compressor": {"id": "zstd", "level": 0}
        }))
        .unwrap();
        let DataType::Struct(st) = &meta.data_type else {
            panic!("not a struct")
        };
        assert!(st.is_structured());
        assert_eq!(
            meta.fill_value.as_bytes(),
            [
                7i32.to_ne_bytes().as_slice(),
                1.5f64.to_ne_bytes().as_slice()
            ]
            .concat()
        );
        assert_eq!(meta.codecs[0].name, "bytes");
        assert_eq!(
            meta.codecs[0].configuration.as_ref().unwrap()["endian"],
            json!("big")
        );
        // Little-endian, null fill: zero records.
        let meta = v3(json!({"dtype": [["a", "<i4"], ["b", "<f8"]], "fill_value": null})).unwrap();
        assert_eq!(meta.fill_value.as_bytes(), [0u8; 12]);
        assert_eq!(
            meta.codecs[0].configuration.as_ref().unwrap()["endian"],
            json!("little")
        );
        // A fill value of the wrong size.
        let e = v3(json!({"dtype": [["a", ">i4"]], "fill_value": "AAAA"})).unwrap_err();
        assert!(e.to_string().contains("fill_value"), "{e}");
    }

    fn zarray(extra: Value) -> Vec<u8> {
        let mut doc = object(json!({
            "zarr_format": 2, "shape": [10, 6], "chunks": [4, 4], "dtype": "<i2",
            "compressor": null, "fill_value": 0, "order": "C", "filters": null
        }));
        doc.extend(object(extra));
        serde_json::to_vec(&doc).unwrap()
    }

    fn v3(extra: Value) -> Result<ArrayMetadata> {
        ArrayMetadataV2::from_slice(&zarray(extra))?.to_v3(Map::new())
    }

    fn names(meta: &ArrayMetadata) -> Vec<String> {
        meta.codecs
            .iter()
            .map(|c| serde_json::to_string(&c.to_json()).unwrap())
            .collect()
    }

    #[test]
    fn the_v3_equivalent_has_the_same_chunks_keys_and_codecs() {
        let meta = v3(json!({"unknown_key": 1})).unwrap();
        assert_eq!(meta.shape, [10, 6]);
        assert_eq!(meta.chunk_key(&[2, 1]), "2.1");
        assert_eq!(
            names(&meta),
            [r#"{"name":"bytes","configuration":{"endian":"little"}}"#]
        );

        let meta = v3(json!({"dimension_separator": "/", "order": "F", "dtype": ">i2",
            "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1, "blocksize": 0}}))
        .unwrap();
        assert_eq!(meta.chunk_key(&[2, 1]), "2/1");
        assert_eq!(
            names(&meta),
            [
                r#"{"name":"transpose","configuration":{"order":[1,0]}}"#,
                r#"{"name":"bytes","configuration":{"endian":"big"}}"#,
                r#"{"name":"blosc","configuration":{"cname":"lz4","clevel":5,"shuffle":"shuffle","typesize":2,"blocksize":0}}"#,
            ]
        );

        let meta = v3(
            json!({"dtype": "|O", "filters": [{"id": "vlen-utf8"}], "fill_value": 0,
            "compressor": {"id": "zlib", "level": 1}}),
        )
        .unwrap();
        assert_eq!(meta.data_type, DataType::String);
        assert_eq!(meta.fill_value, FillValue::from(""));
        assert_eq!(
            names(&meta),
            [
                r#"{"name":"vlen-utf8"}"#,
                r#"{"name":"numcodecs.zlib","configuration":{"level":1}}"#
            ]
        );
    }

    #[test]
    fn numcodecs_filters_and_compressors_keep_their_order() {
        let meta = v3(json!({"dtype": ">u2", "order": "F",
            "filters": [{"id": "delta", "dtype": ">u2", "astype": ">i4"},
                        {"id": "fixedscaleoffset", "offset": 1, "scale": 2, "dtype": ">i4", "astype": "|u1"},
                        {"id": "shuffle", "elementsize": 1},
                        {"id": "crc32", "location": "end"}],
            "compressor": {"id": "lz4", "acceleration": 2}}))
        .unwrap();
        let ids: Vec<&str> = meta.codecs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            ids,
            [
                "transpose",
                "numcodecs.delta",
                "numcodecs.fixedscaleoffset",
                "bytes",
                "numcodecs.shuffle",
                "numcodecs.crc32",
                "numcodecs.lz4"
            ]
        );
        // The last filter's astype is one byte: `bytes` needs no byte order.
        assert_eq!(meta.codecs[3], ExtensionObject::new("bytes"));
        assert_eq!(
            serde_json::to_value(meta.codecs[1].configuration.as_ref().unwrap()).unwrap(),
            json!({"dtype": ">u2", "astype": ">i4"})
        );
        assert_eq!(
            serde_json::to_value(meta.codecs[6].configuration.as_ref().unwrap()).unwrap(),
            json!({"acceleration": 2})
        );
        // packbits turns booleans into bytes; bz2, lzma and jenkins_lookup3 are byte codecs.
        let meta = v3(json!({"dtype": "|b1", "fill_value": false,
            "filters": [{"id": "packbits"}, {"id": "jenkins_lookup3", "initval": 0, "prefix": null}],
            "compressor": {"id": "lzma", "format": 1, "check": -1, "preset": null, "filters": null}}))
        .unwrap();
        let ids: Vec<&str> = meta.codecs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            ids,
            [
                "numcodecs.packbits",
                "bytes",
                "numcodecs.jenkins_lookup3",
                "numcodecs.lzma"
            ]
        );
        let meta = v3(json!({"compressor": {"id": "bz2", "level": 9}})).unwrap();
        assert_eq!(
            meta.codecs[1],
            ExtensionObject::with_configuration("numcodecs.bz2", object(json!({"level": 9})))
        );
        // A big-endian astype makes the stored bytes big-endian.
        let meta = v3(json!({"dtype": "<f8",
            "filters": [{"id": "astype", "encode_dtype": ">f4", "decode_dtype": "<f8"}]}))
        .unwrap();
        assert_eq!(
            meta.codecs[1],
            ExtensionObject::with_configuration("bytes", object(json!({"endian": "big"})))
        );
    }

    #[test]
    fn fill_values_follow_the_v2_encodings() {
        let f = |dtype: &str, fill: Value| {
            v3(json!({"dtype": dtype, "fill_value": fill})).map(|m| m.fill_value)
        };
        assert_eq!(f("<f8", json!("NaN")).unwrap(), FillValue::from(f64::NAN));
        assert_eq!(
            f("<f4", json!("-Infinity")).unwrap(),
            FillValue::from(f32::NEG_INFINITY)
        );
        assert_eq!(f("<i4", Value::Null).unwrap(), FillValue::from(0i32));
        assert_eq!(f("|b1", json!(true)).unwrap(), FillValue::from(true));
        assert_eq!(f("|S3", json!("YWI=")).unwrap().as_bytes(), b"ab\0");
        assert_eq!(f("<c8", json!([1.0, "NaN"])).unwrap().as_bytes().len(), 8);
        assert!(matches!(
            f("<u1", json!(300)).unwrap_err(),
            Error::InvalidFillValue { .. }
        ));
    }

    #[test]
    fn what_has_no_equivalent_is_named() {
        let e = v3(json!({"filters": [{"id": "categorize", "dtype": "<U1"}]})).unwrap_err();
        assert!(e.to_string().contains("categorize"), "{e}");
        // A numeric filter after a byte filter; a filter dtype of the other byte order.
        let e = v3(json!({"filters": [{"id": "shuffle", "elementsize": 2},
            {"id": "delta", "dtype": "<u2"}]}))
        .unwrap_err();
        assert!(e.to_string().contains("filters[1]"), "{e}");
        let e =
            v3(json!({"dtype": ">u2", "filters": [{"id": "delta", "dtype": "<u2"}]})).unwrap_err();
        assert!(e.to_string().contains("byte order"), "{e}");
        let e = v3(json!({"dtype": "|O"})).unwrap_err();
        assert!(e.to_string().contains("object codec"), "{e}");
        // pcodec compresses little-endian elements, with no byte filter before it.
        let pcodec = json!({"id": "pcodec", "level": 8});
        let meta = v3(json!({"compressor": pcodec})).unwrap();
        assert_eq!(
            names(&meta),
            [r#"{"name":"numcodecs.pcodec","configuration":{"level":8}}"#]
        );
        let e = v3(json!({"compressor": pcodec, "filters": [{"id": "shuffle"}]})).unwrap_err();
        assert!(e.to_string().contains("`shuffle` (filters[0])"), "{e}");
        let e = v3(json!({"compressor": pcodec, "dtype": ">i2"})).unwrap_err();
        assert!(e.to_string().contains("little-endian"), "{e}");
        let e = v3(json!({"filters": [pcodec]})).unwrap_err();
        assert!(
            e.to_string().contains("pcodec and zfpy as the compressor"),
            "{e}"
        );
        // So does zfpy (numcodecs' configuration kept whole).
        let zfpy = json!({"id": "zfpy", "mode": 4, "tolerance": 0.1, "rate": -1,
            "precision": -1, "compression_kwargs": {"tolerance": 0.1}});
        let meta = v3(json!({"compressor": zfpy, "dtype": "<f8"})).unwrap();
        assert_eq!(meta.codecs.len(), 1);
        assert_eq!(meta.codecs[0].name, "numcodecs.zfpy");
        assert_eq!(
            meta.codecs[0].configuration.as_ref().unwrap()["compression_kwargs"],
            json!({"tolerance": 0.1})
        );
        let e = v3(json!({"compressor": zfpy, "dtype": ">f8"})).unwrap_err();
        assert!(e.to_string().contains("`zfpy` takes little-endian"), "{e}");
        let e = v3(json!({"zarr_format": 3})).unwrap_err();
        assert!(e.to_string().contains("zarr_format"), "{e}");
        let e = v3(json!({"chunks": [4]})).unwrap_err();
        assert!(matches!(e, Error::RankMismatch { .. }), "{e}");
        let e = v3(json!({"chunks": [4, 0]})).unwrap_err();
        assert!(e.to_string().contains("chunks"), "{e}");
        assert!(matches!(
            ArrayMetadataV2::from_slice(b"[1]"),
            Err(Error::NotAnObject { .. })
        ));
    }

    #[test]
    fn consolidated_metadata_lists_the_nodes_below_the_group() {
        let doc = json!({"zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2}, ".zattrs": {"root": true},
            "g/.zgroup": {"zarr_format": 2}, "g/.zattrs": {"x": 1},
            "g/a/.zarray": object(serde_json::from_slice(&zarray(json!({}))).unwrap()),
            "g/a/.zattrs": {"units": "m"}
        }});
        let nodes = consolidated_nodes(&serde_json::to_vec(&doc).unwrap()).unwrap();
        let paths: Vec<&str> = nodes.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["g", "g/a"]);
        assert_eq!(nodes[0].1.attributes()["x"], 1);
        assert_eq!(nodes[1].1.attributes()["units"], "m");
        assert!(matches!(nodes[1].1, crate::NodeMetadata::Array(_)));

        let bad = json!({"zarr_consolidated_format": 1, "metadata": {
            "a/.zarray": {"zarr_format": 2}}});
        let e = consolidated_nodes(&serde_json::to_vec(&bad).unwrap()).unwrap_err();
        assert!(e.to_string().contains("a/.zarray"), "{e}");
        let e = consolidated_nodes(br#"{"zarr_consolidated_format": 2, "metadata": {}}"#);
        assert!(e.is_err());
    }

    #[test]
    fn zmetadata_written_reads_back() {
        let mut entries = Map::new();
        entries.insert(".zgroup".into(), json!({"zarr_format": 2}));
        entries.insert("g/.zgroup".into(), json!({"zarr_format": 2}));
        entries.insert("g/.zattrs".into(), json!({"x": [1, 2]}));
        let text = zmetadata_json(entries).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["zarr_consolidated_format"], 1);
        let nodes = consolidated_nodes(text.as_bytes()).unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].0, "g");
        assert_eq!(nodes[0].1.attributes()["x"], json!([1, 2]));
    }

    #[test]
    fn groups_and_attributes() {
        let mut attributes = Map::new();
        attributes.insert("a".into(), json!(1));
        let group = group_from_v2(br#"{"zarr_format": 2}"#, attributes.clone()).unwrap();
        assert_eq!(group.attributes, attributes);
        assert!(group_from_v2(br#"{"zarr_format": 3}"#, Map::new()).is_err());
        assert!(group_from_v2(br#"{}"#, Map::new()).is_err());
        assert!(attributes_from_v2(b"\"x\"").is_err());
    }
}
