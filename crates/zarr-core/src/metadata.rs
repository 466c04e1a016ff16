//! Array and group metadata: `zarr.json` documents.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::chunk_grid::ChunkGrid;
use crate::chunk_key_encoding::{ChunkKeyEncoding, ChunkKeySeparator};
use crate::data_type::DataType;
use crate::error::{Error, ErrorChain, Result};
use crate::extension::ExtensionObject;
use crate::fill_value::FillValue;
use crate::json::{self, Map};
use crate::node::NodePath;

/// The URL naming the sharding storage transformer in its August 2022 draft form.
const LEGACY_SHARDING_URL: &str = "https://purl.org/zarr/spec/storage_transformers/sharding/1.0";

const ARRAY_FIELDS: [&str; 11] = [
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "dimension_names",
    "storage_transformers",
];

const GROUP_FIELDS: [&str; 4] = [
    "zarr_format",
    "node_type",
    "attributes",
    "consolidated_metadata",
];

/// Whether a node is an array or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// An array.
    Array,
    /// A group.
    Group,
}

/// The metadata of a node: an array or a group.
///
/// ```
/// use zarr_core::NodeMetadata;
///
/// let node = NodeMetadata::from_json(r#"{"zarr_format": 3, "node_type": "group"}"#)?;
/// assert!(node.attributes().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum NodeMetadata {
    /// An array's metadata.
    Array(Box<ArrayMetadata>),
    /// A group's metadata.
    Group(Box<GroupMetadata>),
}

impl NodeMetadata {
    /// Parse a `zarr.json` document.
    ///
    /// # Errors
    /// [`Error::Json`] for invalid JSON; otherwise an error naming the first invalid, missing or
    /// not-understood field.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(Error::Json)?;
        Self::parse(&value, raw_fill_value(text))
    }

    /// Parse a `zarr.json` document from bytes (which must be UTF-8 JSON).
    ///
    /// # Errors
    /// As [`NodeMetadata::from_json`].
    pub fn from_slice(bytes: &[u8]) -> Result<Self> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Error::Json(serde_json::Error::io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                e,
            )))
        })?;
        Self::from_json(text)
    }

    /// Parse an already-parsed JSON document.
    ///
    /// Prefer [`NodeMetadata::from_json`] when the text is at hand: it rounds `float16` and
    /// `float32` fill values from the document's exact decimal text.
    ///
    /// # Errors
    /// As [`NodeMetadata::from_json`].
    pub fn from_value(value: &Value) -> Result<Self> {
        Self::parse(value, None)
    }

    fn parse(value: &Value, fill_text: Option<&str>) -> Result<Self> {
        let map = top_level(value)?;
        check_zarr_format(map)?;
        let node_type = json::as_str(json::required(map, "node_type", "")?, "node_type")?;
        match node_type {
            "array" => Ok(Self::Array(Box::new(ArrayMetadata::parse_map(
                map, fill_text,
            )?))),
            "group" => Ok(Self::Group(Box::new(GroupMetadata::parse_map(map)?))),
            other => Err(Error::invalid(
                "node_type",
                format!("expected \"array\" or \"group\", found {other:?}"),
            )),
        }
    }

    /// Whether this is an array or a group.
    pub fn node_type(&self) -> NodeType {
        match self {
            Self::Array(_) => NodeType::Array,
            Self::Group(_) => NodeType::Group,
        }
    }

    /// The node's user attributes.
    pub fn attributes(&self) -> &serde_json::Map<String, Value> {
        match self {
            Self::Array(a) => &a.attributes,
            Self::Group(g) => &g.attributes,
        }
    }

    /// The document as JSON.
    ///
    /// # Errors
    /// [`Error::InvalidFillValue`] if an array's fill value does not suit its data type.
    pub fn to_value(&self) -> Result<Value> {
        match self {
            Self::Array(a) => a.to_value(),
            Self::Group(g) => Ok(g.to_value()),
        }
    }

    /// The document as indented JSON text (two spaces, as zarr-python writes it).
    ///
    /// # Errors
    /// As [`NodeMetadata::to_value`].
    pub fn to_json_pretty(&self) -> Result<String> {
        pretty(&self.to_value()?)
    }
}

impl From<ArrayMetadata> for NodeMetadata {
    fn from(value: ArrayMetadata) -> Self {
        Self::Array(Box::new(value))
    }
}

impl From<GroupMetadata> for NodeMetadata {
    fn from(value: GroupMetadata) -> Self {
        Self::Group(Box::new(value))
    }
}

/// The metadata of an array.
///
/// Parsing is strict: every rule of the specification is checked, unknown fields are refused
/// unless marked `"must_understand": false`, and every error names its field. Writing is
/// lossless: fields this crate does not change are written back as they were read (the same
/// spelling of the data type, fill value, chunk grid and key encoding, the presence or absence
/// of `attributes` and `storage_transformers`, ignorable extra fields).
///
/// ```
/// use zarr_core::{ArrayMetadata, ChunkGrid, DataType, ExtensionObject, FillValue, RegularChunkGrid};
///
/// let bytes_codec = ExtensionObject::with_configuration(
///     "bytes",
///     serde_json::json!({"endian": "little"}).as_object().unwrap().clone(),
/// );
/// let meta = ArrayMetadata::new(
///     vec![100, 100],
///     DataType::Float64,
///     ChunkGrid::Regular(RegularChunkGrid::try_new(vec![10, 10])?),
///     FillValue::from(f64::NAN),
///     vec![bytes_codec],
/// )?;
/// let text = meta.to_json_pretty()?;
/// assert_eq!(ArrayMetadata::from_json(&text)?, meta);
/// assert!(text.contains(r#""fill_value": "NaN""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ArrayMetadata {
    /// The array's shape; `[]` for a 0-d array.
    pub shape: Vec<u64>,
    /// The element data type.
    pub data_type: DataType,
    /// How the array is split into chunks.
    pub chunk_grid: ChunkGrid,
    /// How chunk indices become store keys.
    pub chunk_key_encoding: ChunkKeyEncoding,
    /// The value of elements that were never written.
    pub fill_value: FillValue,
    /// The codec chain, as written in metadata (interpreted by `zarr-codecs`).
    pub codecs: Vec<ExtensionObject>,
    /// User attributes (arbitrary JSON, key order kept).
    pub attributes: serde_json::Map<String, Value>,
    /// Dimension names, if given: one entry per dimension, `None` for an unnamed one.
    pub dimension_names: Option<Vec<Option<String>>>,
    /// Storage transformers (interpreted by `zarr-sharding`); empty when there are none.
    pub storage_transformers: Vec<ExtensionObject>,
    /// Top-level fields marked `"must_understand": false` that this crate does not know, kept
    /// so they are written back.
    pub extra_fields: serde_json::Map<String, Value>,
    /// The document this was parsed from, to write unchanged fields back as they were.
    source: Option<Map>,
}

impl PartialEq for ArrayMetadata {
    /// Equal when every field is equal; how fields were spelled in a source document is not
    /// compared.
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape
            && self.data_type == other.data_type
            && self.chunk_grid == other.chunk_grid
            && self.chunk_key_encoding == other.chunk_key_encoding
            && self.fill_value == other.fill_value
            && self.codecs == other.codecs
            && self.attributes == other.attributes
            && self.dimension_names == other.dimension_names
            && self.storage_transformers == other.storage_transformers
            && self.extra_fields == other.extra_fields
    }
}

impl ArrayMetadata {
    /// New array metadata with the default chunk key encoding (`default`, `/`), no attributes,
    /// no dimension names and no storage transformers.
    ///
    /// # Errors
    /// As [`ArrayMetadata::validate`].
    pub fn new(
        shape: Vec<u64>,
        data_type: DataType,
        chunk_grid: ChunkGrid,
        fill_value: FillValue,
        codecs: Vec<ExtensionObject>,
    ) -> Result<Self> {
        let meta = Self {
            shape,
            data_type,
            chunk_grid,
            chunk_key_encoding: ChunkKeyEncoding::default(),
            fill_value,
            codecs,
            attributes: Map::new(),
            dimension_names: None,
            storage_transformers: Vec::new(),
            extra_fields: Map::new(),
            source: None,
        };
        meta.validate()?;
        Ok(meta)
    }

    /// Replace the chunk key encoding.
    #[must_use]
    pub fn with_chunk_key_encoding(mut self, encoding: ChunkKeyEncoding) -> Self {
        self.chunk_key_encoding = encoding;
        self
    }

    /// Replace the attributes.
    #[must_use]
    pub fn with_attributes(mut self, attributes: serde_json::Map<String, Value>) -> Self {
        self.attributes = attributes;
        self
    }

    /// Set the dimension names.
    ///
    /// # Errors
    /// [`Error::RankMismatch`] if there is not one name per dimension.
    pub fn with_dimension_names(mut self, names: Vec<Option<String>>) -> Result<Self> {
        check_rank("dimension_names", names.len(), self.shape.len())?;
        self.dimension_names = Some(names);
        Ok(self)
    }

    /// Replace the storage transformers.
    #[must_use]
    pub fn with_storage_transformers(mut self, transformers: Vec<ExtensionObject>) -> Self {
        self.storage_transformers = transformers;
        self
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements, `shape`'s product.
    ///
    /// # Errors
    /// [`Error::Overflow`] if the product overflows `u64`.
    pub fn num_elements(&self) -> Result<u64> {
        num_elements(&self.shape)
    }

    /// The store key of a chunk, relative to the array's prefix (see
    /// [`NodePath::prefix`]).
    ///
    /// # Panics
    /// As [`ChunkKeyEncoding::encode`]: only for a `template` encoding that does not suit the
    /// rank, which [`ArrayMetadata::validate`] refuses.
    pub fn chunk_key(&self, chunk: &[u64]) -> String {
        self.chunk_key_encoding.encode(chunk)
    }

    /// Check the rules that tie fields together: the element count fits `u64`, the chunk grid
    /// suits the shape, the fill value suits the data type, dimension names and the chunk key
    /// encoding (a `template`) suit the rank, and there is at least one codec.
    ///
    /// # Errors
    /// The first broken rule, naming its field.
    pub fn validate(&self) -> Result<()> {
        num_elements(&self.shape)?;
        self.chunk_grid.validate(&self.shape)?;
        self.fill_value.check(&self.data_type)?;
        if let Some(names) = &self.dimension_names {
            check_rank("dimension_names", names.len(), self.shape.len())?;
        }
        self.chunk_key_encoding
            .check_rank(self.shape.len(), "chunk_key_encoding")?;
        if self.codecs.is_empty() {
            return Err(Error::invalid(
                "codecs",
                "there must be at least one codec (exactly one array -> bytes codec)",
            ));
        }
        Ok(())
    }

    /// Parse an array's `zarr.json`.
    ///
    /// # Errors
    /// As [`NodeMetadata::from_json`]; [`Error::InvalidField`] naming `node_type` for a group.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(Error::Json)?;
        Self::parse_value(&value, raw_fill_value(text))
    }

    /// Parse an already-parsed array document (see [`NodeMetadata::from_value`]).
    ///
    /// # Errors
    /// As [`ArrayMetadata::from_json`].
    pub fn from_value(value: &Value) -> Result<Self> {
        Self::parse_value(value, None)
    }

    fn parse_value(value: &Value, fill_text: Option<&str>) -> Result<Self> {
        let map = top_level(value)?;
        check_zarr_format(map)?;
        match json::as_str(json::required(map, "node_type", "")?, "node_type")? {
            "array" => Self::parse_map(map, fill_text),
            other => Err(Error::invalid(
                "node_type",
                format!("expected \"array\", found {other:?}"),
            )),
        }
    }

    fn parse_map(map: &Map, fill_text: Option<&str>) -> Result<Self> {
        let extra_fields = ignorable_extras(map, &ARRAY_FIELDS)?;
        let shape = json::as_u64_list(json::required(map, "shape", "")?, "shape")?;
        let data_type = DataType::from_json(json::required(map, "data_type", "")?, "data_type")?;
        let grid_value = json::required(map, "chunk_grid", "")?;
        let chunk_grid = ChunkGrid::from_json(grid_value, "chunk_grid")?;
        let chunk_key_encoding = match map.get("chunk_key_encoding") {
            Some(v) => ChunkKeyEncoding::from_json(v, "chunk_key_encoding")?,
            // The ZEP0003 draft form carried the separator in the chunk grid.
            None => match grid_value.get("separator").and_then(Value::as_str) {
                Some("/") => ChunkKeyEncoding::Default {
                    separator: ChunkKeySeparator::Slash,
                },
                Some(".") => ChunkKeyEncoding::Default {
                    separator: ChunkKeySeparator::Dot,
                },
                _ => return Err(Error::missing("chunk_key_encoding")),
            },
        };
        let fill_json = json::required(map, "fill_value", "")?;
        let fill_value = match fill_text {
            Some(text) => FillValue::from_json_text(text, &data_type)?,
            None => FillValue::from_json(fill_json, &data_type)?,
        };
        let codecs_value = json::as_array(json::required(map, "codecs", "")?, "codecs")?;
        let codecs = codecs_value
            .iter()
            .enumerate()
            .map(|(i, v)| ExtensionObject::from_json(v, &json::index("codecs", i)))
            .collect::<Result<Vec<_>>>()?;
        let attributes = match map.get("attributes") {
            Some(v) => json::as_object(v, "attributes")?.clone(),
            None => Map::new(),
        };
        let dimension_names = map
            .get("dimension_names")
            .map(parse_dimension_names)
            .transpose()?;
        let storage_transformers = match map.get("storage_transformers") {
            Some(v) => parse_storage_transformers(v)?,
            None => Vec::new(),
        };
        let meta = Self {
            shape,
            data_type,
            chunk_grid,
            chunk_key_encoding,
            fill_value,
            codecs,
            attributes,
            dimension_names,
            storage_transformers,
            extra_fields,
            source: Some(map.clone()),
        };
        meta.validate()?;
        Ok(meta)
    }

    /// The document as JSON: codecs in object form, data types in short-hand where they need
    /// no configuration, and fields that were read and not changed spelled as they were read.
    ///
    /// # Errors
    /// [`Error::InvalidFillValue`] if the fill value does not suit the data type.
    pub fn to_value(&self) -> Result<Value> {
        let source = self.source.as_ref();
        let from_source = |key: &str, same: &dyn Fn(&Value) -> bool| -> Option<Value> {
            source.and_then(|s| s.get(key)).filter(|v| same(v)).cloned()
        };
        let mut map = Map::new();
        map.insert("zarr_format".into(), Value::from(3));
        map.insert("node_type".into(), Value::from("array"));
        map.insert(
            "shape".into(),
            Value::Array(self.shape.iter().map(|&d| Value::from(d)).collect()),
        );
        let data_type = from_source("data_type", &|v| {
            DataType::from_json(v, "").is_ok_and(|dt| dt == self.data_type)
        })
        .unwrap_or_else(|| self.data_type.to_json());
        map.insert("data_type".into(), data_type);
        let chunk_grid = from_source("chunk_grid", &|v| {
            // Draft (ZEP0003) spellings are written in the final form.
            v.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n != "rectangular")
                && ChunkGrid::from_json(v, "").is_ok_and(|g| g == self.chunk_grid)
        })
        .unwrap_or_else(|| self.chunk_grid.to_json());
        map.insert("chunk_grid".into(), chunk_grid);
        let encoding = from_source("chunk_key_encoding", &|v| {
            ChunkKeyEncoding::from_json(v, "").is_ok_and(|e| e == self.chunk_key_encoding)
        })
        .unwrap_or_else(|| self.chunk_key_encoding.to_json());
        map.insert("chunk_key_encoding".into(), encoding);
        let fill_value = match from_source("fill_value", &|v| {
            FillValue::from_json(v, &self.data_type).is_ok_and(|f| f == self.fill_value)
        }) {
            Some(v) => v,
            None => self.fill_value.to_json(&self.data_type)?,
        };
        map.insert("fill_value".into(), fill_value);
        map.insert(
            "codecs".into(),
            Value::Array(self.codecs.iter().map(ExtensionObject::to_json).collect()),
        );
        let omitted = |key: &str| source.is_some_and(|s| !s.contains_key(key));
        if !(self.attributes.is_empty() && omitted("attributes")) {
            map.insert("attributes".into(), Value::Object(self.attributes.clone()));
        }
        if let Some(names) = &self.dimension_names {
            map.insert(
                "dimension_names".into(),
                Value::Array(
                    names
                        .iter()
                        .map(|n| n.as_ref().map_or(Value::Null, |s| Value::from(s.as_str())))
                        .collect(),
                ),
            );
        }
        if !(self.storage_transformers.is_empty() && omitted("storage_transformers")) {
            let transformers = from_source("storage_transformers", &|v| {
                parse_storage_transformers(v).is_ok_and(|t| t == self.storage_transformers)
            })
            .unwrap_or_else(|| {
                Value::Array(
                    self.storage_transformers
                        .iter()
                        .map(ExtensionObject::to_json)
                        .collect(),
                )
            });
            map.insert("storage_transformers".into(), transformers);
        }
        for (key, value) in &self.extra_fields {
            map.insert(key.clone(), value.clone());
        }
        Ok(Value::Object(map))
    }

    /// The document as indented JSON text.
    ///
    /// # Errors
    /// As [`ArrayMetadata::to_value`].
    pub fn to_json_pretty(&self) -> Result<String> {
        pretty(&self.to_value()?)
    }
}

/// The metadata of a group.
///
/// ```
/// use zarr_core::GroupMetadata;
///
/// let mut group = GroupMetadata::new();
/// group.attributes.insert("title".into(), "forecast".into());
/// let text = group.to_json_pretty()?;
/// assert_eq!(GroupMetadata::from_json(&text)?, group);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct GroupMetadata {
    /// User attributes (arbitrary JSON, key order kept).
    pub attributes: serde_json::Map<String, Value>,
    /// zarr-python's consolidated metadata, when present.
    pub consolidated_metadata: Option<ConsolidatedMetadata>,
    /// Top-level fields marked `"must_understand": false` that this crate does not know.
    pub extra_fields: serde_json::Map<String, Value>,
    /// Whether the source document had an `attributes` field (written back even when empty).
    had_attributes: bool,
}

impl PartialEq for GroupMetadata {
    fn eq(&self, other: &Self) -> bool {
        self.attributes == other.attributes
            && self.consolidated_metadata == other.consolidated_metadata
            && self.extra_fields == other.extra_fields
    }
}

impl Default for GroupMetadata {
    fn default() -> Self {
        Self::new()
    }
}

impl GroupMetadata {
    /// A group with no attributes.
    pub fn new() -> Self {
        Self {
            attributes: Map::new(),
            consolidated_metadata: None,
            extra_fields: Map::new(),
            had_attributes: true,
        }
    }

    /// Replace the attributes.
    #[must_use]
    pub fn with_attributes(mut self, attributes: serde_json::Map<String, Value>) -> Self {
        self.attributes = attributes;
        self
    }

    /// Parse a group's `zarr.json`.
    ///
    /// # Errors
    /// As [`NodeMetadata::from_json`]; [`Error::InvalidField`] naming `node_type` for an array.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text).map_err(Error::Json)?;
        Self::from_value(&value)
    }

    /// Parse an already-parsed group document.
    ///
    /// # Errors
    /// As [`GroupMetadata::from_json`].
    pub fn from_value(value: &Value) -> Result<Self> {
        let map = top_level(value)?;
        check_zarr_format(map)?;
        match json::as_str(json::required(map, "node_type", "")?, "node_type")? {
            "group" => Self::parse_map(map),
            other => Err(Error::invalid(
                "node_type",
                format!("expected \"group\", found {other:?}"),
            )),
        }
    }

    fn parse_map(map: &Map) -> Result<Self> {
        let mut extra_fields = ignorable_extras(map, &GROUP_FIELDS)?;
        let attributes = match map.get("attributes") {
            Some(v) => json::as_object(v, "attributes")?.clone(),
            None => Map::new(),
        };
        let consolidated_metadata = match map.get("consolidated_metadata") {
            None | Some(Value::Null) => None,
            Some(value) => match ConsolidatedMetadata::from_json(value) {
                Ok(consolidated) => Some(consolidated),
                // Marked ignorable: a form we cannot read is kept as it is and not used,
                // instead of making the group unreadable.
                Err(_) if value.get("must_understand") == Some(&Value::Bool(false)) => {
                    extra_fields.insert("consolidated_metadata".into(), value.clone());
                    None
                }
                Err(e) => return Err(e),
            },
        };
        Ok(Self {
            attributes,
            consolidated_metadata,
            extra_fields,
            had_attributes: map.contains_key("attributes"),
        })
    }

    /// The document as JSON.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("zarr_format".into(), Value::from(3));
        map.insert("node_type".into(), Value::from("group"));
        if self.had_attributes || !self.attributes.is_empty() {
            map.insert("attributes".into(), Value::Object(self.attributes.clone()));
        }
        if let Some(consolidated) = &self.consolidated_metadata {
            map.insert("consolidated_metadata".into(), consolidated.to_json());
        }
        for (key, value) in &self.extra_fields {
            map.insert(key.clone(), value.clone());
        }
        Value::Object(map)
    }

    /// The document as indented JSON text.
    ///
    /// # Errors
    /// Never in practice; the signature matches [`ArrayMetadata::to_json_pretty`].
    pub fn to_json_pretty(&self) -> Result<String> {
        pretty(&self.to_value())
    }
}

/// zarr-python's inline consolidated metadata on a group: the metadata documents of every
/// descendant, keyed by path relative to the group.
///
/// The specification allows it as an exception to the extension rules; it is marked
/// `"must_understand": false`, so readers may ignore it. It is not refreshed automatically: a
/// reader should prefer real listings when it may be stale.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsolidatedMetadata {
    /// The kind; `"inline"` is the only one defined.
    pub kind: String,
    /// Documents by relative path (`"sub"`, `"sub/arr"`), as JSON.
    pub metadata: serde_json::Map<String, Value>,
    /// The `must_understand` flag as written (zarr-python writes `false`).
    pub must_understand: Option<bool>,
    /// Any other members, kept as they are.
    pub extra: serde_json::Map<String, Value>,
}

impl ConsolidatedMetadata {
    /// Inline consolidated metadata holding `metadata` (documents keyed by path relative to
    /// the group, such as `"sub"` and `"sub/arr"`), marked `"must_understand": false` as
    /// zarr-python writes it.
    pub fn inline(metadata: serde_json::Map<String, Value>) -> Self {
        Self {
            kind: "inline".to_owned(),
            metadata,
            must_understand: Some(false),
            extra: Map::new(),
        }
    }

    fn from_json(value: &Value) -> Result<Self> {
        let field = "consolidated_metadata";
        let map = json::as_object(value, field)?;
        let kind = match map.get("kind") {
            Some(v) => json::as_str(v, &json::join(field, "kind"))?.to_owned(),
            None => "inline".to_owned(),
        };
        let metadata = match map.get("metadata") {
            Some(v) => json::as_object(v, &json::join(field, "metadata"))?.clone(),
            None => Map::new(),
        };
        let must_understand = map
            .get("must_understand")
            .map(|v| json::as_bool(v, &json::join(field, "must_understand")))
            .transpose()?;
        let extra = map
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "kind" | "metadata" | "must_understand"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Self {
            kind,
            metadata,
            must_understand,
            extra,
        })
    }

    fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("kind".into(), Value::from(self.kind.as_str()));
        if let Some(must_understand) = self.must_understand {
            map.insert("must_understand".into(), Value::Bool(must_understand));
        }
        // Another kind may have no `metadata` member; do not add one.
        if self.is_inline() || !self.metadata.is_empty() {
            map.insert("metadata".into(), Value::Object(self.metadata.clone()));
        }
        for (key, value) in &self.extra {
            map.insert(key.clone(), value.clone());
        }
        Value::Object(map)
    }

    /// Whether this is the one kind defined, `"inline"` (the documents are in `metadata`).
    /// Readers should list the hierarchy instead when it is not.
    pub fn is_inline(&self) -> bool {
        self.kind == "inline"
    }

    /// Parse every entry into a node path (relative to the consolidating group) and its
    /// metadata, in document order.
    ///
    /// # Errors
    /// The first entry whose path or document is invalid, wrapped so the error names the entry
    /// ([`Error::InvalidField`] with field `consolidated_metadata.metadata.<path>`).
    pub fn nodes(&self) -> Result<Vec<(NodePath, NodeMetadata)>> {
        self.metadata
            .iter()
            .map(|(path, doc)| {
                let field = format!("consolidated_metadata.metadata.{path}");
                let node_path = NodePath::new(path)
                    .map_err(|e| Error::invalid(&field, ErrorChain(&e).to_string()))?;
                let node = NodeMetadata::from_value(doc)
                    .map_err(|e| Error::invalid(&field, ErrorChain(&e).to_string()))?;
                Ok((node_path, node))
            })
            .collect()
    }
}

fn pretty(value: &Value) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(Error::Json)
}

fn top_level(value: &Value) -> Result<&Map> {
    value.as_object().ok_or(Error::NotAnObject {
        found: json::type_name(value),
    })
}

fn check_zarr_format(map: &Map) -> Result<()> {
    let format = json::required(map, "zarr_format", "")?;
    match format.as_u64() {
        Some(3) => Ok(()),
        _ => Err(Error::invalid(
            "zarr_format",
            format!("expected 3, found {format}"),
        )),
    }
}

/// Top-level fields beyond `known`: kept when they are objects marked `"must_understand":
/// false`, refused otherwise.
fn ignorable_extras(map: &Map, known: &[&str]) -> Result<Map> {
    let mut extras = Map::new();
    for (key, value) in map {
        if known.contains(&key.as_str()) {
            continue;
        }
        let ignorable = value
            .get("must_understand")
            .is_some_and(|m| m == &Value::Bool(false));
        if !ignorable {
            return Err(Error::UnknownField { field: key.clone() });
        }
        extras.insert(key.clone(), value.clone());
    }
    Ok(extras)
}

fn check_rank(what: &str, found: usize, expected: usize) -> Result<()> {
    if found == expected {
        Ok(())
    } else {
        Err(Error::RankMismatch {
            what: what.to_owned(),
            expected,
            found,
        })
    }
}

fn num_elements(shape: &[u64]) -> Result<u64> {
    shape.iter().try_fold(1u64, |acc, &d| {
        acc.checked_mul(d)
            .ok_or_else(|| Error::overflow(format!("the number of elements of `shape` {shape:?}")))
    })
}

fn parse_dimension_names(value: &Value) -> Result<Vec<Option<String>>> {
    json::as_array(value, "dimension_names")?
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(Error::invalid(
                json::index("dimension_names", i),
                format!(
                    "expected a string or null, found {}",
                    json::type_name(other)
                ),
            )),
        })
        .collect()
}

/// Parse `storage_transformers`, reading the August 2022 draft form (`"extension"` URL plus
/// `"type"`) of the sharding transformer as `{"name": "sharding", ...}`.
fn parse_storage_transformers(value: &Value) -> Result<Vec<ExtensionObject>> {
    json::as_array(value, "storage_transformers")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let field = json::index("storage_transformers", i);
            match v.as_object() {
                Some(map) if map.contains_key("extension") => {
                    json::deny_unknown(
                        map,
                        &["extension", "type", "configuration", "must_understand"],
                        &field,
                    )?;
                    let url = json::as_str(&map["extension"], &json::join(&field, "extension"))?;
                    let kind = map
                        .get("type")
                        .map(|t| json::as_str(t, &json::join(&field, "type")))
                        .transpose()?;
                    let name = if url == LEGACY_SHARDING_URL && kind.is_none_or(|k| k == "indexed")
                    {
                        "sharding".to_owned()
                    } else {
                        url.to_owned()
                    };
                    let mut ext = ExtensionObject::new(name);
                    if let Some(c) = map.get("configuration") {
                        ext.configuration =
                            Some(json::as_object(c, &json::join(&field, "configuration"))?.clone());
                    }
                    if let Some(m) = map.get("must_understand") {
                        ext.must_understand =
                            json::as_bool(m, &json::join(&field, "must_understand"))?;
                    }
                    Ok(ext)
                }
                _ => ExtensionObject::from_json(v, &field),
            }
        })
        .collect()
}

/// The raw text of the top-level `fill_value`, so numbers can be rounded from their exact
/// decimal form.
fn raw_fill_value(text: &str) -> Option<&str> {
    #[derive(Deserialize)]
    struct Raw<'a> {
        #[serde(borrow, default)]
        fill_value: Option<&'a RawValue>,
    }
    serde_json::from_str::<Raw<'_>>(text)
        .ok()
        .and_then(|raw| raw.fill_value)
        .map(RawValue::get)
}

/// `Serialize` through the JSON document, so serde users get exactly what `to_value` writes.
macro_rules! serialize_via_value {
    ($($t:ty),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                serde::Serialize::serialize(
                    &self.to_value().map_err(serde::ser::Error::custom)?,
                    serializer,
                )
            }
        }
    )*};
}
serialize_via_value!(NodeMetadata, ArrayMetadata);

impl serde::Serialize for GroupMetadata {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}
