//! Writing Zarr v2 metadata: the `.zarray` document of a v3 array description that Zarr v2
//! can express ([`ArrayMetadataV2::from_v3`]), and the `.zgroup` and `.zattrs` documents.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::{ArrayMetadataV2, ByteOrder, DtypeV2, ELEMENT_FILTERS, Order, ZARRAY};
use crate::error::{Error, ErrorChain, Result};
use crate::extension::ExtensionObject;
use crate::{ArrayMetadata, ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, DataType, FillValue};

/// An [`Error::InvalidField`] for something Zarr v2 cannot store.
fn no_v2(field: impl std::fmt::Display, reason: impl Into<String>) -> Error {
    Error::invalid(format!("{field} (writing Zarr v2)"), reason)
}

impl DtypeV2 {
    /// The dtype as `.zarray` writes it: a numpy typestr (`"<u2"`, `"|b1"`, `">M8[10ms]"`,
    /// `"|O"`), or for a struct a list of `[name, type]` fields, nested structs as nested
    /// lists.
    ///
    /// # Errors
    /// [`Error::InvalidField`] for a data type numpy has no typestr for (`int4`, `bfloat16`,
    /// the `float8` formats, `r*` bit types, variable-length types other than `|O`).
    pub fn to_json(&self) -> Result<Value> {
        match self {
            Self::Object => Ok(Value::from("|O")),
            Self::Fixed(data_type, order) => typestr(data_type, *order, "dtype"),
        }
    }

    /// The dtype of elements of `data_type` stored in `order` (ignored for types whose bytes
    /// no byte order swaps).
    fn of(data_type: &DataType, order: ByteOrder) -> Self {
        match data_type {
            DataType::String | DataType::Bytes => Self::Object,
            _ if has_byte_order(data_type) => Self::Fixed(data_type.clone(), order),
            _ => Self::Fixed(data_type.clone(), ByteOrder::NotApplicable),
        }
    }
}

/// Whether a byte order changes how elements of `data_type` are stored.
fn has_byte_order(data_type: &DataType) -> bool {
    data_type
        .swap_units()
        .is_some_and(|units| units.iter().any(|&(_, width)| width > 1))
}

fn typestr(data_type: &DataType, order: ByteOrder, field: &str) -> Result<Value> {
    let o = if !has_byte_order(data_type) {
        '|'
    } else if order == ByteOrder::Big {
        '>'
    } else {
        '<'
    };
    let time = |kind: char, unit: crate::TimeUnit, scale_factor: u32| {
        if scale_factor == 1 {
            format!("{o}{kind}8[{unit}]")
        } else {
            format!("{o}{kind}8[{scale_factor}{unit}]")
        }
    };
    Ok(Value::String(match data_type {
        DataType::Bool => "|b1".into(),
        DataType::Int8 => "|i1".into(),
        DataType::UInt8 => "|u1".into(),
        DataType::Int16 => format!("{o}i2"),
        DataType::Int32 => format!("{o}i4"),
        DataType::Int64 => format!("{o}i8"),
        DataType::UInt16 => format!("{o}u2"),
        DataType::UInt32 => format!("{o}u4"),
        DataType::UInt64 => format!("{o}u8"),
        DataType::Float16 => format!("{o}f2"),
        DataType::Float32 => format!("{o}f4"),
        DataType::Float64 => format!("{o}f8"),
        DataType::Complex64 => format!("{o}c8"),
        DataType::Complex128 => format!("{o}c16"),
        DataType::NullTerminatedBytes { length_bytes } => format!("|S{length_bytes}"),
        DataType::RawBytes { length_bytes } => format!("|V{length_bytes}"),
        DataType::FixedLengthUtf32 { length_bytes } => format!("{o}U{}", length_bytes / 4),
        DataType::DateTime64 { unit, scale_factor } => time('M', *unit, *scale_factor),
        DataType::TimeDelta64 { unit, scale_factor } => time('m', *unit, *scale_factor),
        DataType::String | DataType::Bytes => "|O".into(),
        DataType::Struct(st) => {
            return st
                .fields()
                .iter()
                .map(|f| {
                    let inner = format!("{field}.{}", f.name);
                    Ok(json!([f.name, typestr(&f.data_type, order, &inner)?]))
                })
                .collect::<Result<Vec<Value>>>()
                .map(Value::Array);
        }
        other => {
            return Err(no_v2(
                field,
                format!("numpy, and so Zarr v2, has no type for `{other}`"),
            ));
        }
    }))
}

impl ArrayMetadataV2 {
    /// The v2 form of `metadata`, for writing `.zarray`: the data type and the `bytes`
    /// codec's byte order become `dtype`, a leading `transpose` that reverses the axes
    /// becomes `order: "F"`, numcodecs' element filters (`numcodecs.delta`, ...) and every
    /// bytes->bytes codec but the last become `filters`, the last one `compressor`, and the
    /// `v2` chunk key encoding's separator `dimension_separator`. This is the inverse of
    /// [`to_v3`](Self::to_v3): reading the result back gives the same array.
    ///
    /// | v3 | v2 |
    /// |---|---|
    /// | `bytes` (`endian`) | the `dtype`'s byte order (`<`, `>`, or `\|` for one-byte types) |
    /// | `vlen-utf8` / `vlen-bytes` / `numcodecs.vlen-array` | `dtype` `"\|O"` with that codec (`vlen-array`, with its `dtype`) as the first filter |
    /// | `transpose` with the axes reversed (or unchanged) | `order: "F"` (or `"C"`) |
    /// | `zstd`, `gzip`, `blosc`, `crc32c` | `zstd`, `gzip`, `blosc` (shuffle as 0/1/2, `typesize` left to numcodecs), `crc32c` |
    /// | `numcodecs.<id>` | `<id>` with the same configuration |
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming what Zarr v2 cannot store: a data type numpy has no
    /// typestr for, another array->bytes codec (`sharding_indexed`, ...), a `transpose` that
    /// is not a reversal, a codec numcodecs does not have, a rectilinear chunk grid, the
    /// `default` chunk key encoding, dimension names, storage transformers, extension fields,
    /// or a NaN fill value with a payload (v2 writes only `"NaN"`).
    ///
    /// ```
    /// use zarr_core::v2::ArrayMetadataV2;
    /// use zarr_core::{
    ///     ArrayMetadata, ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, DataType,
    ///     ExtensionObject, FillValue,
    /// };
    ///
    /// let codecs = vec![
    ///     ExtensionObject::from_json(&serde_json::json!({"name": "bytes", "configuration": {"endian": "big"}}), "codecs")?,
    ///     ExtensionObject::from_json(&serde_json::json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}}), "codecs")?,
    /// ];
    /// let v3 = ArrayMetadata::new(vec![100], DataType::Int32, ChunkGrid::regular(vec![10])?,
    ///     FillValue::from(-1i32), codecs)?
    ///     .with_chunk_key_encoding(ChunkKeyEncoding::V2 { separator: ChunkKeySeparator::Dot });
    /// let zarray = ArrayMetadataV2::from_v3(&v3)?.to_json()?;
    /// assert_eq!(zarray["dtype"], ">i4");
    /// assert_eq!(zarray["compressor"]["id"], "zstd");
    /// assert_eq!(zarray["fill_value"], -1);
    /// # Ok::<(), zarr_core::Error>(())
    /// ```
    pub fn from_v3(metadata: &ArrayMetadata) -> Result<Self> {
        let data_type = &metadata.data_type;
        if !metadata.storage_transformers.is_empty() {
            return Err(no_v2(
                "storage_transformers",
                "Zarr v2 has no storage transformers",
            ));
        }
        if let Some(names) = metadata
            .dimension_names
            .as_ref()
            .filter(|names| names.iter().any(Option::is_some))
        {
            // v2 keeps them only in xarray's attribute, which the attributes must hold.
            if names.iter().any(Option::is_none) {
                return Err(no_v2(
                    "dimension_names",
                    "Zarr v2 keeps dimension names in xarray's `_ARRAY_DIMENSIONS` \
                     attribute, which needs a name for every dimension",
                ));
            }
            let kept = super::dimension_names_from_attributes(&metadata.attributes, names.len());
            if kept.as_ref() != Some(names) {
                return Err(no_v2(
                    "dimension_names",
                    format!(
                        "Zarr v2 keeps dimension names in xarray's `_ARRAY_DIMENSIONS` \
                         attribute, and the attributes {}",
                        match metadata.attributes.get(super::ARRAY_DIMENSIONS) {
                            None => "have none".to_owned(),
                            Some(other) => format!("hold {other} instead"),
                        }
                    ),
                ));
            }
        }
        if let Some(name) = metadata.extra_fields.keys().next() {
            return Err(no_v2(name, "Zarr v2 has no extension fields"));
        }
        let chunks = match &metadata.chunk_grid {
            ChunkGrid::Regular(grid) => grid.chunk_shape().to_vec(),
            _ => {
                return Err(no_v2("chunk_grid", "Zarr v2 has only regular chunk grids"));
            }
        };
        let dimension_separator = match &metadata.chunk_key_encoding {
            ChunkKeyEncoding::V2 { separator } => *separator,
            other => {
                return Err(no_v2(
                    "chunk_key_encoding",
                    format!(
                        "Zarr v2 names chunks with the `v2` chunk key encoding, not `{}`",
                        other.name()
                    ),
                ));
            }
        };

        let mut codecs = metadata.codecs.iter().enumerate().peekable();
        let mut order = Order::C;
        if let Some((i, transpose)) = codecs.next_if(|(_, c)| c.name == "transpose") {
            order = transpose_order(transpose, metadata.shape.len(), i)?;
        }
        let mut filters = Vec::new();
        while let Some((_, filter)) = codecs.next_if(|(_, c)| {
            c.name
                .strip_prefix("numcodecs.")
                .is_some_and(|id| ELEMENT_FILTERS.contains(&id))
        }) {
            filters.push(numcodec(filter));
        }
        let mut pcodec = None;
        let dtype = match codecs.next() {
            Some((i, c)) if c.name == "numcodecs.pcodec" || c.name == "numcodecs.zfpy" => {
                // numcodecs' pcodec and zfpy compress the elements: v2's compressor, with
                // nothing after it (the filters come before the compressor in v2).
                if let Some((j, next)) = codecs.peek() {
                    return Err(no_v2(
                        format!("codecs[{j}]"),
                        format!(
                            "`{}` follows `{}` (codecs[{i}]), which is v2's compressor: \
                             nothing can follow it there",
                            next.name, c.name
                        ),
                    ));
                }
                pcodec = Some(numcodec(c));
                DtypeV2::of(data_type, ByteOrder::Little)
            }
            Some((i, c)) if c.name == "bytes" => {
                let big = c
                    .configuration
                    .as_ref()
                    .and_then(|config| config.get("endian"))
                    .and_then(Value::as_str)
                    == Some("big");
                let stored = if big {
                    ByteOrder::Big
                } else {
                    ByteOrder::Little
                };
                // numcodecs' element filters see the elements in the dtype's byte order and
                // store what the last one produces: with filters, the dtype takes the order
                // the first filter that names its input type names.
                let dtype = DtypeV2::of(data_type, filters_input_order(&filters).unwrap_or(stored));
                if dtype == DtypeV2::Object {
                    return Err(no_v2(
                        format!("codecs[{i}]"),
                        format!("`{data_type}` is written with `vlen-utf8` or `vlen-bytes`"),
                    ));
                }
                dtype
            }
            Some((i, c))
                if matches!(
                    c.name.as_str(),
                    "vlen-utf8" | "vlen-bytes" | "numcodecs.vlen-array"
                ) =>
            {
                let fits = matches!(
                    (c.name.as_str(), data_type),
                    ("vlen-utf8", DataType::String)
                        | ("vlen-bytes" | "numcodecs.vlen-array", DataType::Bytes)
                );
                if !fits || !filters.is_empty() {
                    return Err(no_v2(
                        format!("codecs[{i}]"),
                        format!("`{}` does not suit `{data_type}` here", c.name),
                    ));
                }
                // `vlen-array` keeps its configuration (`dtype`) beside numcodecs' id.
                filters.push(numcodec(c));
                DtypeV2::Object
            }
            Some((i, c)) => {
                return Err(no_v2(
                    format!("codecs[{i}]"),
                    format!(
                        "`{}` has no Zarr v2 equivalent (v2 stores elements with `bytes`, \
                         `vlen-utf8` or `vlen-bytes`, after an optional reversing \
                         `transpose` and numcodecs' element filters)",
                        c.name
                    ),
                ));
            }
            None => return Err(no_v2("codecs", "no array->bytes codec")),
        };
        // Typestrs for every type, before looking at the fill value.
        dtype.to_json()?;
        let mut byte_codecs = codecs
            .map(|(i, c)| byte_codec(c, &format!("codecs[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        let compressor = match pcodec {
            Some(pcodec) => Some(pcodec),
            None => {
                let compressor = byte_codecs.pop();
                filters.extend(byte_codecs);
                compressor
            }
        };
        let byte_order = match &dtype {
            DtypeV2::Fixed(_, order) => *order,
            DtypeV2::Object => ByteOrder::NotApplicable,
        };
        let fill_value = fill_value(&metadata.fill_value, data_type, byte_order)?;
        let written = Self {
            shape: metadata.shape.clone(),
            chunks,
            dtype,
            compressor,
            filters,
            fill_value,
            order,
            dimension_separator,
        };
        if written.filters.iter().any(|f| {
            let id = f.get("id").and_then(Value::as_str).unwrap_or_default();
            ELEMENT_FILTERS.contains(&id)
        }) {
            // The byte order numcodecs' filters leave is fixed by their types: a `bytes` codec
            // of the other order would be read back (by any v2 reader) as other values.
            let stored = |m: &ArrayMetadata| {
                m.codecs
                    .iter()
                    .find(|c| c.name == "bytes")
                    .and_then(|c| c.configuration.as_ref()?.get("endian").cloned())
            };
            let back = written.to_v3(Map::new()).map_err(|e| {
                no_v2(
                    "codecs",
                    format!(
                        "the `.zarray` these filters make would not read back: {}",
                        ErrorChain(&e)
                    ),
                )
            })?;
            if stored(&back) != stored(metadata) {
                return Err(no_v2(
                    "codecs",
                    "numcodecs' element filters here would store the other byte order than \
                     the `bytes` codec does (in v2 their types decide it): give the filters' \
                     types and `bytes` the same byte order",
                ));
            }
        }
        Ok(written)
    }

    /// The `.zarray` document.
    ///
    /// # Errors
    /// As [`DtypeV2::to_json`].
    pub fn to_json(&self) -> Result<Value> {
        Ok(json!({
            "zarr_format": 2,
            "shape": self.shape,
            "chunks": self.chunks,
            "dtype": self.dtype.to_json()?,
            "compressor": self.compressor,
            "fill_value": self.fill_value,
            "order": match self.order {
                Order::C => "C",
                Order::F => "F",
            },
            "filters": if self.filters.is_empty() {
                Value::Null
            } else {
                Value::from(self.filters.iter().cloned().map(Value::Object).collect::<Vec<_>>())
            },
            "dimension_separator": match self.dimension_separator {
                ChunkKeySeparator::Dot => ".",
                ChunkKeySeparator::Slash => "/",
            },
        }))
    }

    /// The `.zarray` document as indented JSON text, with a final newline.
    ///
    /// # Errors
    /// As [`DtypeV2::to_json`].
    pub fn to_json_pretty(&self) -> Result<String> {
        pretty(&self.to_json()?)
    }
}

/// The `.zgroup` document (`{"zarr_format": 2}`) as JSON text.
pub fn zgroup_json() -> String {
    "{\n  \"zarr_format\": 2\n}\n".to_owned()
}

/// A `.zattrs` document holding `attributes`, as indented JSON text.
///
/// # Errors
/// [`Error::Json`] if the attributes cannot be written as JSON.
pub fn zattrs_json(attributes: &Map<String, Value>) -> Result<String> {
    pretty(&Value::Object(attributes.clone()))
}

/// A `.zmetadata` document (zarr-python's v2 consolidated metadata) holding `entries`, as
/// indented JSON text: `{"metadata": {".zgroup": {...}, "a/.zarray": {...}, ...},
/// "zarr_consolidated_format": 1}`. The entries are the nodes' documents keyed by store key
/// relative to the consolidating group; [`consolidated_nodes`](super::consolidated_nodes)
/// reads the result back.
///
/// # Errors
/// [`Error::Json`] if the entries cannot be written as JSON.
pub fn zmetadata_json(entries: Map<String, Value>) -> Result<String> {
    let mut doc = Map::new();
    doc.insert("metadata".into(), Value::Object(entries));
    doc.insert("zarr_consolidated_format".into(), Value::from(1));
    pretty(&Value::Object(doc))
}

fn pretty(value: &Value) -> Result<String> {
    let mut text = serde_json::to_string_pretty(value).map_err(Error::Json)?;
    text.push('\n');
    Ok(text)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// `order` of a v2 array whose first codec is `transpose`.
fn transpose_order(transpose: &ExtensionObject, rank: usize, i: usize) -> Result<Order> {
    let field = format!("codecs[{i}] (transpose)");
    let axes: Option<Vec<u64>> = transpose
        .configuration
        .as_ref()
        .and_then(|config| config.get("order"))
        .and_then(Value::as_array)
        .and_then(|list| list.iter().map(Value::as_u64).collect());
    let Some(axes) = axes else {
        return Err(no_v2(field, "expected `order`, a list of axes"));
    };
    let identity = axes.iter().enumerate().all(|(i, &a)| a == i as u64);
    let reversed = axes.iter().rev().enumerate().all(|(i, &a)| a == i as u64);
    if axes.len() != rank {
        Err(no_v2(field, format!("expected {rank} axes")))
    } else if identity {
        Ok(Order::C)
    } else if reversed {
        Ok(Order::F)
    } else {
        Err(no_v2(
            field,
            format!("Zarr v2 lays chunks out in C or F order only; the axes {axes:?} are neither"),
        ))
    }
}

/// A numcodecs codec in v3 metadata (`numcodecs.<id>`) as its v2 form (`{"id": <id>, ...}`).
fn numcodec(codec: &ExtensionObject) -> Map<String, Value> {
    let id = codec.name.strip_prefix("numcodecs.").unwrap_or(&codec.name);
    let mut map = Map::new();
    map.insert("id".into(), Value::from(id));
    if let Some(config) = &codec.configuration {
        map.extend(config.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    map
}

/// The byte order the first of numcodecs' element `filters` that names its input type takes
/// the elements in (`None` when none does before one that changes the type).
fn filters_input_order(filters: &[Map<String, Value>]) -> Option<ByteOrder> {
    for filter in filters {
        let key = match filter.get("id").and_then(Value::as_str) {
            // These keep the elements' type and order.
            Some("bitround" | "packbits") => continue,
            Some("astype") => "decode_dtype",
            _ => "dtype",
        };
        return match DtypeV2::from_json(filter.get(key)?, "filters") {
            Ok(DtypeV2::Fixed(t, order)) if t.fixed_size().is_some_and(|n| n > 1) => Some(order),
            _ => None,
        };
    }
    None
}

/// A bytes->bytes codec's v2 form (a filter, or the compressor when it is the last).
fn byte_codec(codec: &ExtensionObject, field: &str) -> Result<Map<String, Value>> {
    let config = codec.configuration.clone().unwrap_or_default();
    let get = |key: &str| config.get(key).cloned().unwrap_or(Value::Null);
    Ok(match codec.name.as_str() {
        "zstd" => {
            // numcodecs writes `checksum` only when it is on, and tensorstore's v2 driver
            // refuses the member otherwise ("extra members").
            let mut zstd = object(json!({ "id": "zstd", "level": get("level") }));
            if config.get("checksum").and_then(Value::as_bool) == Some(true) {
                zstd.insert("checksum".into(), Value::Bool(true));
            }
            zstd
        }
        "gzip" => object(json!({ "id": "gzip", "level": get("level") })),
        "crc32c" => object(json!({ "id": "crc32c" })),
        "blosc" => {
            let shuffle = match config.get("shuffle").and_then(Value::as_str) {
                Some("noshuffle") => 0,
                Some("shuffle") => 1,
                Some("bitshuffle") => 2,
                _ => {
                    return Err(no_v2(
                        format!("{field}.shuffle"),
                        "expected \"noshuffle\", \"shuffle\" or \"bitshuffle\"",
                    ));
                }
            };
            // numcodecs takes the element size as blosc's `typesize` itself.
            object(json!({
                "id": "blosc",
                "cname": get("cname"),
                "clevel": get("clevel"),
                "shuffle": shuffle,
                "blocksize": config.get("blocksize").cloned().unwrap_or(Value::from(0)),
            }))
        }
        name if name.starts_with("numcodecs.") => {
            let map = numcodec(codec);
            if ELEMENT_FILTERS.contains(&super::codec_id(&map)) {
                return Err(no_v2(
                    field,
                    format!("`{name}` works on elements, so it must come before `bytes`"),
                ));
            }
            map
        }
        other => {
            return Err(no_v2(
                field,
                format!("`{other}` has no numcodecs equivalent, so Zarr v2 cannot name it"),
            ));
        }
    })
}

/// The `fill_value` of `.zarray`: as in v3 metadata for numbers, booleans and text; base64 of
/// the record in the dtype's `order` for a struct; `null` for empty bytes.
fn fill_value(fill: &FillValue, data_type: &DataType, order: ByteOrder) -> Result<Value> {
    let engine = base64::engine::general_purpose::STANDARD;
    let value = match data_type {
        DataType::Struct(_) => {
            fill.check(data_type)?;
            let mut record = fill.as_bytes().to_vec();
            let swap = (order == ByteOrder::Big) == cfg!(target_endian = "little");
            if swap && order != ByteOrder::NotApplicable {
                for (offset, width) in data_type.swap_units().unwrap_or_default() {
                    record[offset..offset + width].reverse();
                }
            }
            return Ok(Value::String(engine.encode(record)));
        }
        DataType::Bytes if fill.as_bytes().is_empty() => return Ok(Value::Null),
        _ => fill.to_json(data_type)?,
    };
    let payload = |v: &Value| v.as_str().is_some_and(|s| s.starts_with("0x"));
    let has_payload = match &value {
        Value::Array(parts) => parts.iter().any(payload),
        v => payload(v),
    };
    if has_payload {
        return Err(no_v2(
            format!("{ZARRAY}: fill_value"),
            format!("{value}: a NaN with a payload has no Zarr v2 form (only \"NaN\")"),
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zarray(dtype: Value, extra: Value) -> Vec<u8> {
        let mut doc = object(json!({
            "zarr_format": 2, "shape": [7, 5, 3], "chunks": [3, 2, 3], "dtype": dtype,
            "compressor": null, "fill_value": null, "order": "C", "filters": null,
        }));
        doc.extend(object(extra));
        serde_json::to_vec(&doc).unwrap()
    }

    /// Read as v3, written back as v2, read again: the same array.
    fn round_trip(doc: &[u8]) -> (ArrayMetadata, Value) {
        let first = ArrayMetadataV2::from_slice(doc)
            .and_then(|v2| v2.to_v3(Map::new()))
            .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(doc)));
        let written = ArrayMetadataV2::from_v3(&first)
            .and_then(|v2| v2.to_json())
            .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(doc)));
        let again = ArrayMetadataV2::from_slice(&serde_json::to_vec(&written).unwrap())
            .and_then(|v2| v2.to_v3(Map::new()))
            .unwrap();
        assert_eq!(again, first, "{written}");
        (first, written)
    }

    #[test]
    fn every_readable_zarray_is_written_back_as_the_same_array() {
        let types = [
            "|b1",
            "|i1",
            "|u1",
            "<i2",
            ">i2",
            "<i4",
            ">i4",
            "<i8",
            "<u2",
            ">u4",
            "<u8",
            "<f2",
            ">f2",
            "<f4",
            ">f8",
            "<c8",
            ">c16",
            "|S7",
            "|V3",
            "<U5",
            ">U2",
            "<M8[ns]",
            ">m8[10ms]",
            "<M8[D]",
        ];
        for dtype in types {
            let (_, written) = round_trip(&zarray(json!(dtype), json!({})));
            assert_eq!(written["dtype"], dtype);
        }
        let structs = [
            json!([["a", "<i4"], ["b", "<f8"]]),
            json!([["a", ">i4"], ["b", ">f8"], ["c", "|u1"]]),
            json!([["a", "<i4"], ["p", [["x", "|u1"], ["y", "<i2"]]]]),
            json!([["x", "|u1"], ["y", "|b1"]]),
        ];
        for dtype in structs {
            let (_, written) = round_trip(&zarray(dtype.clone(), json!({})));
            assert_eq!(written["dtype"], dtype);
        }
        let variants = [
            json!({"order": "F"}),
            json!({"dimension_separator": "/"}),
            json!({"compressor": {"id": "zstd", "level": -3, "checksum": true}}),
            json!({"compressor": {"id": "gzip", "level": 6}}),
            json!({"compressor": {"id": "zlib", "level": 2}}),
            json!({"compressor": {"id": "lz4", "acceleration": 3}}),
            json!({"compressor": {"id": "crc32c"}}),
            json!({"compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}}),
            json!({"compressor": {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 256}}),
            json!({"filters": [{"id": "delta", "dtype": "<i4"}, {"id": "shuffle", "elementsize": 4},
                               {"id": "crc32", "location": "start"}],
                   "compressor": {"id": "zstd", "level": 1}}),
            json!({"compressor": {"id": "zstd", "level": 5, "checksum": true}}),
            json!({"filters": [{"id": "fixedscaleoffset", "offset": 1, "scale": 10, "dtype": "<i4", "astype": "|u1"}]}),
            json!({"fill_value": 7, "order": "F", "dimension_separator": "/"}),
        ];
        for extra in variants {
            round_trip(&zarray(json!("<i4"), extra));
        }
        // numcodecs' bz2, lzma and jenkins_lookup3, and packbits on booleans.
        for extra in [
            json!({"compressor": {"id": "bz2", "level": 9}}),
            json!({"compressor": {"id": "lzma", "format": 1, "check": -1, "preset": null, "filters": null}}),
            json!({"filters": [{"id": "jenkins_lookup3", "initval": 3, "prefix": null}],
                   "compressor": {"id": "lzma", "format": 3, "check": -1, "preset": null,
                                  "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]}}),
        ] {
            let (_, written) = round_trip(&zarray(json!("<i4"), extra.clone()));
            assert_eq!(written["compressor"], extra["compressor"]);
        }
        // A filter that stores the other byte order than the array's: the dtype keeps the
        // array's order (found by fuzzing: it was written with the stored order, which no
        // reader then accepts).
        for (dtype, filters) in [
            (
                "<i4",
                json!([{"id": "astype", "encode_dtype": ">i2", "decode_dtype": "<i4"}]),
            ),
            (
                ">u2",
                json!([{"id": "bitround", "keepbits": 3}, {"id": "delta", "dtype": ">u2", "astype": "<i4"}]),
            ),
        ] {
            let (_, written) = round_trip(&zarray(json!(dtype), json!({ "filters": filters })));
            assert_eq!(written["dtype"], dtype);
            assert_eq!(written["filters"], filters);
        }
        // pcodec as the compressor is the array->bytes codec in v3, after element filters.
        let pcodec = json!({"id": "pcodec", "level": 8, "mode_spec": "auto",
            "delta_spec": "auto", "paging_spec": "equal_pages_up_to",
            "delta_encoding_order": null, "equal_pages_up_to": 262144});
        for filters in [json!(null), json!([{"id": "delta", "dtype": "<i4"}])] {
            let (meta, written) = round_trip(&zarray(
                json!("<i4"),
                json!({"compressor": pcodec, "filters": filters}),
            ));
            assert_eq!(meta.codecs.last().unwrap().name, "numcodecs.pcodec");
            assert_eq!(written["compressor"], pcodec);
            assert_eq!(written["filters"], filters);
        }
        let zfpy = json!({"id": "zfpy", "mode": 2, "tolerance": -1, "rate": 12.5,
            "precision": -1, "compression_kwargs": {"rate": 12.5}});
        let (meta, written) = round_trip(&zarray(json!("<f4"), json!({"compressor": zfpy})));
        assert_eq!(meta.codecs.last().unwrap().name, "numcodecs.zfpy");
        assert_eq!(written["compressor"], zfpy);
        let (meta, written) = round_trip(&zarray(
            json!("|b1"),
            json!({"filters": [{"id": "packbits"}], "fill_value": false}),
        ));
        assert_eq!(meta.codecs[0].name, "numcodecs.packbits");
        assert_eq!(written["filters"], json!([{"id": "packbits"}]));
        for (dtype, fill) in [
            ("<f8", json!("NaN")),
            ("<f4", json!("-Infinity")),
            ("<c16", json!([1.5, "NaN"])),
            ("|b1", json!(true)),
            ("<U3", json!("é")),
            ("|S4", json!("YWI=")),
            ("<M8[s]", json!(-5)),
        ] {
            let (_, written) = round_trip(&zarray(json!(dtype), json!({ "fill_value": fill })));
            assert_eq!(written["fill_value"], fill, "{dtype}");
        }
        // A big-endian struct's fill value is base64 in big-endian order, as read.
        let (_, written) = round_trip(&zarray(
            json!([["a", ">i4"], ["c", "|u1"]]),
            json!({"fill_value": "AAAAAQI="}),
        ));
        assert_eq!(written["fill_value"], "AAAAAQI=");
        for (id, dtype) in [("vlen-utf8", "|O"), ("vlen-bytes", "|O")] {
            let (_, written) = round_trip(&zarray(
                json!(dtype),
                json!({"filters": [{"id": id}], "compressor": {"id": "zstd", "level": 1}}),
            ));
            assert_eq!(written["filters"], json!([{"id": id}]));
        }
        // numcodecs' ragged arrays: `bytes` with `numcodecs.vlen-array`, keeping `dtype`.
        let ragged = zarray(
            json!("|O"),
            json!({"filters": [{"id": "vlen-array", "dtype": "<i4"}], "fill_value": 0}),
        );
        let meta = ArrayMetadataV2::from_slice(&ragged).unwrap();
        assert_eq!(meta.data_type().unwrap(), DataType::Bytes);
        let v3 = meta.to_v3(Map::new()).unwrap();
        assert_eq!(
            v3.codecs[0].to_json(),
            json!({"name": "numcodecs.vlen-array", "configuration": {"dtype": "<i4"}})
        );
        let (_, written) = round_trip(&ragged);
        assert_eq!(
            written["filters"],
            json!([{"id": "vlen-array", "dtype": "<i4"}])
        );
    }

    #[test]
    fn what_zarr_v2_cannot_store_is_refused_by_name() {
        use crate::{DimensionChunks, ExtensionObject as E, RectilinearChunkGrid};
        let base = |data_type: DataType, codecs: Vec<E>| {
            ArrayMetadata::new(
                vec![4, 6],
                data_type.clone(),
                ChunkGrid::regular(vec![2, 3]).unwrap(),
                FillValue::default_for(&data_type),
                codecs,
            )
            .unwrap()
            .with_chunk_key_encoding(ChunkKeyEncoding::V2 {
                separator: ChunkKeySeparator::Dot,
            })
        };
        let codec = |name: &str, config: Value| match config {
            Value::Object(map) => E::with_configuration(name, map),
            _ => E::new(name),
        };
        let bytes = || codec("bytes", json!({"endian": "little"}));
        let refused = |m: ArrayMetadata, what: &str| {
            let e = ArrayMetadataV2::from_v3(&m).unwrap_err().to_string();
            assert!(e.contains(what) && e.contains("Zarr v2"), "{what}: {e}");
        };
        assert!(ArrayMetadataV2::from_v3(&base(DataType::Int16, vec![bytes()])).is_ok());
        refused(
            base(DataType::Int16, vec![bytes()])
                .with_chunk_key_encoding(ChunkKeyEncoding::default()),
            "chunk_key_encoding",
        );
        refused(base(DataType::BFloat16, vec![bytes()]), "bfloat16");
        refused(
            base(
                DataType::Int16,
                vec![codec("transpose", json!({"order": [1, 0]})), bytes()],
            )
            .with_dimension_names(vec![Some("y".into()), None])
            .unwrap(),
            "dimension_names",
        );
        // Every dimension named: written when the attributes hold the same names.
        let named = |attributes: Value| {
            base(DataType::Int16, vec![bytes()])
                .with_dimension_names(vec![Some("y".into()), Some("x".into())])
                .unwrap()
                .with_attributes(attributes.as_object().unwrap().clone())
        };
        refused(named(json!({})), "have none");
        refused(
            named(json!({"_ARRAY_DIMENSIONS": ["x", "y"]})),
            r#"hold ["x","y"] instead"#,
        );
        let written = named(json!({"_ARRAY_DIMENSIONS": ["y", "x"]}));
        let v2 = ArrayMetadataV2::from_v3(&written).unwrap();
        let back = v2.to_v3(written.attributes.clone()).unwrap();
        assert_eq!(back.dimension_names, written.dimension_names);
        assert_eq!(back.attributes, written.attributes);
        refused(
            base(
                DataType::Int16,
                vec![codec(
                    "sharding_indexed",
                    json!({"chunk_shape": [1, 1], "codecs": [{"name": "bytes"}],
                           "index_codecs": [{"name": "bytes"}]}),
                )],
            ),
            "sharding_indexed",
        );
        refused(
            base(
                DataType::Int16,
                vec![bytes(), codec("zarr-rs.lz4", json!({}))],
            ),
            "zarr-rs.lz4",
        );
        refused(
            base(
                DataType::Int16,
                vec![bytes(), codec("numcodecs.delta", json!({"dtype": "<i2"}))],
            ),
            "before `bytes`",
        );
        // numcodecs' astype stores big-endian here: a little-endian `bytes` after it would be
        // read by v2 readers as other values.
        refused(
            base(
                DataType::Int32,
                vec![
                    codec(
                        "numcodecs.astype",
                        json!({"encode_dtype": ">i2", "decode_dtype": "<i4"}),
                    ),
                    bytes(),
                ],
            ),
            "the other byte order",
        );
        refused(
            base(
                DataType::Int16,
                vec![
                    codec("numcodecs.pcodec", json!({"level": 3})),
                    codec("crc32c", Value::Null),
                ],
            ),
            "follows `numcodecs.pcodec`",
        );
        let mut grid = base(DataType::Int16, vec![bytes()]);
        grid.chunk_grid = ChunkGrid::Rectilinear(
            RectilinearChunkGrid::try_new(vec![
                DimensionChunks::Explicit(vec![(1, 1), (3, 1)]),
                DimensionChunks::Regular(6),
            ])
            .unwrap(),
        );
        refused(grid, "chunk_grid");
        let mut nan = base(DataType::Float32, vec![bytes()]);
        nan.fill_value = FillValue::from_json(&json!("0x7fc00001"), &DataType::Float32).unwrap();
        refused(nan, "payload");
        // A 3-d transpose that is not a reversal.
        let m = ArrayMetadata::new(
            vec![2, 3, 4],
            DataType::UInt8,
            ChunkGrid::regular(vec![2, 3, 4]).unwrap(),
            FillValue::default_for(&DataType::UInt8),
            vec![
                codec("transpose", json!({"order": [1, 0, 2]})),
                E::new("bytes"),
            ],
        )
        .unwrap()
        .with_chunk_key_encoding(ChunkKeyEncoding::V2 {
            separator: ChunkKeySeparator::Slash,
        });
        refused(m, "C or F order");
    }
}
