//! [`N5Store`]: N5 containers read and written as Zarr v3 hierarchies.

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::{
    ByteRange, Error, ListDir, ListableStore, ReadableStore, Result, StoreKey, StorePrefix,
    WritableStore, fallback,
};

/// The N5 specification version written to the root group of a container.
pub const N5_VERSION: &str = "4.0.0";

/// The name of a node's metadata in N5.
const ATTRIBUTES: &str = "attributes.json";
/// The name of a node's metadata in Zarr v3.
const ZARR_JSON: &str = "zarr.json";
/// The dataset attributes of N5: they become the array's metadata, not its attributes.
const RESERVED: [&str; 5] = [
    "dimensions",
    "blockSize",
    "dataType",
    "compression",
    "compressionType",
];
/// The data types of N5 default-mode blocks, named as in Zarr v3.
const DATA_TYPES: [&str; 10] = [
    "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64",
];

/// A wrapper that presents an [N5](https://github.com/saalfeldlab/n5) container as a Zarr v3
/// hierarchy, as the zarr-extensions `n5_default` codec recommends.
///
/// Reading `<node>/zarr.json` reads `<node>/attributes.json` and answers the Zarr v3
/// metadata it describes:
/// - a dataset (`dimensions`, `blockSize`, `dataType`, `compression`) is an array of the
///   same shape and dimension order, chunks of `blockSize`, fill value 0, chunk keys as N5
///   paths (`v2` encoding with `/`), and the `n5_default` codec holding the N5 compressor
///   as a Zarr codec (`raw`, `gzip` (also zlib), `bzip2`, `xz`, `lz4` (as
///   `zarr-rs.n5_lz4`, lz4-java's block stream), `blosc`, `zstd`); the
///   other keys are its attributes;
/// - any other attributes file, and any directory without one that holds keys and lies
///   outside a dataset (N5 groups need no metadata), is a group whose attributes are the
///   file's keys.
///
/// Writing `<node>/zarr.json` writes `<node>/attributes.json` the other way round, for
/// arrays N5 can hold (the `n5_default` codec, a regular grid, `v2` keys with `/`, an N5
/// data type, fill value 0, no dimension names; for groups, no consolidated metadata); the
/// root's attributes (group or dataset) get the N5 version. Erasing it erases `attributes.json`; listings show `zarr.json` in its place.
/// Every other key (the blocks) passes through unchanged.
///
/// ```
/// use bytes::Bytes;
/// use zarr_store::{MemoryStore, N5Store, ReadableStore, StoreKey, WritableStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let memory = MemoryStore::new();
/// let attributes = r#"{"dimensions": [100, 50], "blockSize": [10, 10], "dataType": "uint16",
///     "compression": {"type": "gzip", "level": 4}, "resolution": [4, 4]}"#;
/// memory.set(&StoreKey::new("raw/attributes.json"), Bytes::from(attributes)).await?;
///
/// let n5 = N5Store::new(memory);
/// let metadata = n5.get(&StoreKey::new("raw/zarr.json")).await?.unwrap();
/// let metadata: serde_json::Value = serde_json::from_slice(&metadata)?;
/// assert_eq!(metadata["shape"], serde_json::json!([100, 50]));
/// assert_eq!(metadata["codecs"][0]["name"], "n5_default");
/// assert_eq!(metadata["attributes"]["resolution"], serde_json::json!([4, 4]));
/// // The root holds keys, so it is a group.
/// assert!(n5.get(&StoreKey::new("zarr.json")).await?.is_some());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct N5Store<S> {
    inner: S,
}

impl<S> N5Store<S> {
    /// Present the N5 container in `inner` as Zarr.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The wrapped store, consuming the wrapper.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// `attributes.json` beside `key` if `key` names a node's `zarr.json`.
fn attributes_key(key: &StoreKey) -> Option<StoreKey> {
    (key.name() == ZARR_JSON).then(|| key.parent().join(&StoreKey::new(ATTRIBUTES)))
}

/// `key`, with a node's `attributes.json` shown as its `zarr.json`.
fn zarr_key(key: StoreKey) -> StoreKey {
    if key.name() == ATTRIBUTES {
        key.parent().join(&StoreKey::new(ZARR_JSON))
    } else {
        key
    }
}

fn invalid(key: &StoreKey, reason: impl Into<String>) -> Error {
    Error::N5Metadata {
        key: key.clone(),
        reason: reason.into(),
    }
}

impl<S: ReadableStore + ListableStore> N5Store<S> {
    /// The Zarr v3 metadata of the node whose `zarr.json` is `key`, if it is one.
    async fn zarr_json(&self, key: &StoreKey, attributes: &StoreKey) -> Result<Option<Bytes>> {
        let document = match self.inner.get(attributes).await? {
            Some(bytes) => {
                let value: Value = serde_json::from_slice(&bytes)
                    .map_err(|e| invalid(attributes, format!("not JSON: {e}")))?;
                let Value::Object(map) = value else {
                    return Err(invalid(attributes, "not a JSON object"));
                };
                n5_to_zarr(map, attributes)?
            }
            None => {
                // N5 groups need no attributes file: a directory holding keys is one, unless
                // it lies inside a dataset (its blocks' directories are no nodes).
                let listed = self.inner.list_dir(&key.parent()).await?;
                if listed.keys.is_empty() && listed.prefixes.is_empty() {
                    return Ok(None);
                }
                if self.inside_dataset(&key.parent()).await? {
                    return Ok(None);
                }
                json!({"zarr_format": 3, "node_type": "group", "attributes": {}})
            }
        };
        let text = serde_json::to_vec_pretty(&document).expect("a JSON value serializes");
        Ok(Some(Bytes::from(text)))
    }
}

impl<S: ReadableStore> N5Store<S> {
    /// Whether a directory above `prefix` is a dataset (its attributes file has
    /// `dimensions`).
    async fn inside_dataset(&self, prefix: &StorePrefix) -> Result<bool> {
        let mut place = prefix.parent();
        while let Some(dir) = place {
            let key = dir.join(&StoreKey::new(ATTRIBUTES));
            if let Some(bytes) = self.inner.get(&key).await?
                && serde_json::from_slice::<Value>(&bytes)
                    .is_ok_and(|doc| doc.get("dimensions").is_some())
            {
                return Ok(true);
            }
            place = dir.parent();
        }
        Ok(false)
    }
}

#[async_trait]
impl<S: ReadableStore + ListableStore> ReadableStore for N5Store<S> {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        match attributes_key(key) {
            Some(attributes) => self.zarr_json(key, &attributes).await,
            None => self.inner.get(key).await,
        }
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        match attributes_key(key) {
            Some(attributes) => Ok(self
                .zarr_json(key, &attributes)
                .await?
                .map(|b| b.len() as u64)),
            None => self.inner.size(key).await,
        }
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        if key_ranges.iter().any(|(key, _)| key.name() == ZARR_JSON) {
            // Metadata is small and translated whole: slice it as any value.
            return fallback::get_partial_values_by_full_read(self, key_ranges).await;
        }
        self.inner.get_partial_values(key_ranges).await
    }
}

#[async_trait]
impl<S: WritableStore + ListableStore> WritableStore for N5Store<S> {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        let Some(attributes) = attributes_key(key) else {
            return self.inner.set(key, value).await;
        };
        let document: Value =
            serde_json::from_slice(&value).map_err(|e| invalid(key, format!("not JSON: {e}")))?;
        let n5 = zarr_to_n5(&document, key.parent().is_root(), key)?;
        let text = serde_json::to_vec_pretty(&n5).expect("a JSON value serializes");
        self.inner.set(&attributes, Bytes::from(text)).await
    }

    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        if let Some((key, _, _)) = key_start_values
            .iter()
            .find(|(key, _, _)| key.name() == ZARR_JSON)
        {
            return Err(invalid(
                key,
                "metadata is translated whole: write it with `set`, not in parts",
            ));
        }
        self.inner.set_partial_values(key_start_values).await
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        match attributes_key(key) {
            Some(attributes) => self.inner.erase(&attributes).await,
            None => self.inner.erase(key).await,
        }
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        let keys: Vec<StoreKey> = keys
            .iter()
            .map(|key| attributes_key(key).unwrap_or_else(|| key.clone()))
            .collect();
        self.inner.erase_values(&keys).await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.inner.erase_prefix(prefix).await
    }
}

#[async_trait]
impl<S: ListableStore> ListableStore for N5Store<S> {
    async fn list(&self) -> Result<Vec<StoreKey>> {
        let mut keys: Vec<StoreKey> = self.inner.list().await?.into_iter().map(zarr_key).collect();
        // A node holding both `attributes.json` and `zarr.json` lists the latter once.
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let mut keys: Vec<StoreKey> = self
            .inner
            .list_prefix(prefix)
            .await?
            .into_iter()
            .map(zarr_key)
            .collect();
        // A node holding both `attributes.json` and `zarr.json` lists the latter once.
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let listed = self.inner.list_dir(prefix).await?;
        let mut keys: Vec<StoreKey> = listed.keys.into_iter().map(zarr_key).collect();
        // A node holding both `attributes.json` and `zarr.json` lists the latter once.
        keys.sort();
        keys.dedup();
        Ok(ListDir {
            keys,
            prefixes: listed.prefixes,
        })
    }
}

/// The Zarr v3 metadata of an N5 node whose attributes file (`key`) holds `attributes`.
fn n5_to_zarr(mut attributes: Map<String, Value>, key: &StoreKey) -> Result<Value> {
    let is_dataset = ["dimensions", "blockSize", "dataType"]
        .iter()
        .any(|k| attributes.contains_key(*k));
    if !is_dataset {
        return Ok(json!({"zarr_format": 3, "node_type": "group", "attributes": attributes}));
    }
    let mut take = |name: &str| {
        attributes
            .remove(name)
            .ok_or_else(|| invalid(key, format!("a dataset's `{name}` is missing")))
    };
    let dimensions = extents(&take("dimensions")?, "dimensions", key)?;
    let block_size = extents(&take("blockSize")?, "blockSize", key)?;
    let data_type = take("dataType")?;
    let compression = match (
        attributes.remove("compression"),
        attributes.remove("compressionType"),
    ) {
        (Some(c), _) => c,
        // N5 before 1.0: a compression type with its default parameters.
        (None, Some(Value::String(kind))) => json!({ "type": kind }),
        (None, Some(other)) => {
            return Err(invalid(
                key,
                format!("`compressionType` must be a string, found {other}"),
            ));
        }
        (None, None) => json!({"type": "raw"}),
    };
    if block_size.len() != dimensions.len() {
        return Err(invalid(
            key,
            format!(
                "`blockSize` has {} dimensions, `dimensions` {}",
                block_size.len(),
                dimensions.len()
            ),
        ));
    }
    if let Some(&zero) = block_size
        .iter()
        .find(|&&b| b == 0 || b > u64::from(u32::MAX))
    {
        return Err(invalid(
            key,
            format!("a `blockSize` extent of {zero} (blocks are 1 to 2^32-1 wide)"),
        ));
    }
    let data_type = match data_type.as_str() {
        Some(name) if DATA_TYPES.contains(&name) => name.to_owned(),
        Some("object") => {
            return Err(invalid(
                key,
                "`dataType` \"object\" (serialized objects) has no Zarr data type",
            ));
        }
        _ => return Err(invalid(key, format!("unknown `dataType` {data_type}"))),
    };
    let element_size = data_type
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<u64>()
        .map_or(1, |bits| bits / 8);
    let compressor = compressor_to_zarr(&compression, element_size, key)?;
    let rank = dimensions.len();
    let order: Vec<usize> = (0..rank).rev().collect();
    let mut codecs = vec![
        json!({"name": "transpose", "configuration": {"order": order}}),
        json!({"name": "bytes", "configuration": {"endian": "big"}}),
    ];
    codecs.extend(compressor);
    let fill_value = if data_type.starts_with("float") {
        json!(0.0)
    } else {
        json!(0)
    };
    Ok(json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": dimensions,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": block_size}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": [{"name": "n5_default", "configuration": {"codecs": codecs}}],
        "attributes": attributes,
    }))
}

/// A list of extents (`dimensions`, `blockSize`).
fn extents(value: &Value, name: &str, key: &StoreKey) -> Result<Vec<u64>> {
    value
        .as_array()
        .and_then(|items| items.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| {
            invalid(
                key,
                format!("`{name}` must be an array of non-negative integers, found {value}"),
            )
        })
}

/// An integer parameter of an N5 compression, `default` when absent.
fn parameter(
    compression: &Map<String, Value>,
    name: &str,
    default: i64,
    key: &StoreKey,
) -> Result<i64> {
    match compression.get(name) {
        None => Ok(default),
        Some(value) => value.as_i64().ok_or_else(|| {
            invalid(
                key,
                format!("the compression's `{name}` must be an integer, found {value}"),
            )
        }),
    }
}

/// The Zarr codec of an N5 compression (`None` for `raw`).
fn compressor_to_zarr(
    compression: &Value,
    element_size: u64,
    key: &StoreKey,
) -> Result<Option<Value>> {
    let Some(map) = compression.as_object() else {
        return Err(invalid(
            key,
            format!("`compression` must be an object, found {compression}"),
        ));
    };
    let Some(kind) = map.get("type").and_then(Value::as_str) else {
        return Err(invalid(key, "`compression` has no `type`"));
    };
    let in_range = |name: &str, value: i64, range: std::ops::RangeInclusive<i64>| {
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(invalid(
                key,
                format!(
                    "the {kind} compression's `{name}` {value} is not in {}..={}",
                    range.start(),
                    range.end()
                ),
            ))
        }
    };
    let codec = match kind {
        "raw" => return Ok(None),
        "gzip" => {
            let level = in_range("level", parameter(map, "level", -1, key)?, -1..=9)?;
            // -1: the library's default level.
            let level = if level < 0 { 6 } else { level };
            let zlib = match map.get("useZlib") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(invalid(
                        key,
                        format!(
                            "the gzip compression's `useZlib` must be a boolean, found {other}"
                        ),
                    ));
                }
            };
            if zlib {
                json!({"name": "numcodecs.zlib", "configuration": {"level": level}})
            } else {
                json!({"name": "gzip", "configuration": {"level": level}})
            }
        }
        "bzip2" => {
            let level = in_range("blockSize", parameter(map, "blockSize", 9, key)?, 1..=9)?;
            json!({"name": "numcodecs.bz2", "configuration": {"level": level}})
        }
        "xz" => {
            let preset = in_range("preset", parameter(map, "preset", 6, key)?, 0..=9)?;
            json!({"name": "numcodecs.lzma", "configuration": {"format": 1, "check": -1, "preset": preset}})
        }
        "zstd" => {
            let level = in_range("level", parameter(map, "level", 3, key)?, -131_072..=22)?;
            json!({"name": "zstd", "configuration": {"level": level, "checksum": false}})
        }
        "blosc" => {
            let cname = match map.get("cname") {
                None => "blosclz",
                Some(Value::String(name)) => name.as_str(),
                Some(other) => {
                    return Err(invalid(
                        key,
                        format!("the blosc compression's `cname` must be a string, found {other}"),
                    ));
                }
            };
            let clevel = in_range("clevel", parameter(map, "clevel", 6, key)?, 0..=9)?;
            let shuffle = match parameter(map, "shuffle", 1, key)? {
                0 => "noshuffle",
                1 => "shuffle",
                2 => "bitshuffle",
                other => {
                    return Err(invalid(
                        key,
                        format!("the blosc compression's `shuffle` {other} is not 0, 1 or 2"),
                    ));
                }
            };
            let blocksize = in_range(
                "blocksize",
                parameter(map, "blocksize", 0, key)?,
                0..=i64::from(i32::MAX),
            )?;
            json!({"name": "blosc", "configuration": {
                "cname": cname, "clevel": clevel, "shuffle": shuffle,
                "typesize": element_size, "blocksize": blocksize}})
        }
        "lz4" => {
            // lz4-java's block stream, which no registered Zarr codec reads.
            let block_size = in_range(
                "blockSize",
                parameter(map, "blockSize", 1 << 16, key)?,
                64..=1 << 25,
            )?;
            json!({"name": "zarr-rs.n5_lz4", "configuration": {"block_size": block_size}})
        }
        other => {
            return Err(invalid(key, format!("unknown compression type {other:?}")));
        }
    };
    Ok(Some(codec))
}

/// The N5 attributes of the Zarr v3 metadata `document` written to `key`.
fn zarr_to_n5(document: &Value, is_root: bool, key: &StoreKey) -> Result<Value> {
    let refuse = |reason: String| invalid(key, format!("N5 cannot hold this metadata: {reason}"));
    let attributes = match document.get("attributes") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => return Err(refuse(format!("`attributes` is {other}"))),
    };
    let mut out = match document.get("node_type").and_then(Value::as_str) {
        Some("group") => {
            if document
                .get("consolidated_metadata")
                .is_some_and(|c| !c.is_null())
            {
                return Err(refuse("consolidated metadata".into()));
            }
            attributes
        }
        Some("array") => array_to_n5(document, attributes, refuse)?,
        _ => return Err(refuse("no `node_type` of \"group\" or \"array\"".into())),
    };
    // The root names the N5 version, whether a group or a dataset: that is how readers
    // know the container.
    if is_root && !out.contains_key("n5") {
        out.insert("n5".into(), N5_VERSION.into());
    }
    Ok(Value::Object(out))
}

fn array_to_n5(
    document: &Value,
    attributes: Map<String, Value>,
    refuse: impl Fn(String) -> Error,
) -> Result<Map<String, Value>> {
    if let Some(name) = RESERVED.iter().find(|name| attributes.contains_key(**name)) {
        return Err(refuse(format!(
            "the attribute `{name}` is a dataset attribute of N5"
        )));
    }
    let shape = document.get("shape").cloned().unwrap_or(Value::Null);
    let data_type = document
        .get("data_type")
        .and_then(Value::as_str)
        .filter(|name| DATA_TYPES.contains(name))
        .ok_or_else(|| {
            refuse(format!(
                "the data type {} (N5 holds {})",
                document.get("data_type").unwrap_or(&Value::Null),
                DATA_TYPES.join(", ")
            ))
        })?;
    let grid = document.get("chunk_grid").unwrap_or(&Value::Null);
    let block_size = match grid.get("name").and_then(Value::as_str) {
        Some("regular") => grid["configuration"]["chunk_shape"].clone(),
        _ => {
            return Err(refuse(format!(
                "the chunk grid {grid} (N5 blocks are regular)"
            )));
        }
    };
    let encoding = document.get("chunk_key_encoding").unwrap_or(&Value::Null);
    let is_v2_slash = encoding.get("name").and_then(Value::as_str) == Some("v2")
        && encoding["configuration"]["separator"].as_str() == Some("/");
    if !is_v2_slash {
        return Err(refuse(format!(
            "the chunk key encoding {encoding} (N5 block paths are the `v2` encoding with \"/\")"
        )));
    }
    let fill = document.get("fill_value").unwrap_or(&Value::Null);
    if fill.as_f64() != Some(0.0) {
        return Err(refuse(format!(
            "the fill value {fill} (N5 has none: missing blocks read as 0)"
        )));
    }
    if let Some(names) = document.get("dimension_names").and_then(Value::as_array)
        && names.iter().any(|n| !n.is_null())
    {
        return Err(refuse("dimension names (N5 has no place for them)".into()));
    }
    if document
        .get("storage_transformers")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
    {
        return Err(refuse("storage transformers".into()));
    }
    let codecs = document.get("codecs").and_then(Value::as_array);
    let inner = match codecs.map(Vec::as_slice) {
        Some([codec]) if codec.get("name").and_then(Value::as_str) == Some("n5_default") => {
            codec["configuration"]["codecs"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        }
        _ => {
            return Err(refuse(format!(
                "the codecs {} (N5 arrays have the one codec `n5_default`)",
                document.get("codecs").unwrap_or(&Value::Null)
            )));
        }
    };
    let compression = match inner.get(2) {
        None => json!({"type": "raw"}),
        Some(codec) => compressor_to_n5(codec)
            .ok_or_else(|| refuse(format!("the compressor {codec} has no N5 equivalent")))?,
    };
    let mut out = Map::new();
    out.insert("dimensions".into(), shape);
    out.insert("blockSize".into(), block_size);
    out.insert("dataType".into(), data_type.into());
    out.insert("compression".into(), compression);
    out.extend(attributes);
    Ok(out)
}

/// The N5 compression of a Zarr codec, if N5 has one.
fn compressor_to_n5(codec: &Value) -> Option<Value> {
    let config = codec.get("configuration").and_then(Value::as_object);
    let int = |name: &str| config.and_then(|c| c.get(name)).and_then(Value::as_i64);
    let name = codec.get("name").and_then(Value::as_str)?;
    Some(match name {
        "gzip" => json!({"type": "gzip", "level": int("level")?, "useZlib": false}),
        "numcodecs.zlib" | "zlib" => {
            json!({"type": "gzip", "level": int("level")?, "useZlib": true})
        }
        "numcodecs.bz2" | "bz2" => json!({"type": "bzip2", "blockSize": int("level")?}),
        "numcodecs.lzma" | "lzma" => {
            let plain = config.is_none_or(|c| {
                c.get("format").is_none_or(|f| f == 1)
                    && c.get("filters").is_none_or(Value::is_null)
            });
            if !plain {
                return None;
            }
            json!({"type": "xz", "preset": int("preset").unwrap_or(6)})
        }
        "zstd" => json!({"type": "zstd", "level": int("level")?}),
        "zarr-rs.n5_lz4" => {
            json!({"type": "lz4", "blockSize": int("block_size").unwrap_or(1 << 16)})
        }
        "blosc" => {
            let c = config?;
            let shuffle = match c.get("shuffle").and_then(Value::as_str)? {
                "noshuffle" => 0,
                "shuffle" => 1,
                "bitshuffle" => 2,
                _ => return None,
            };
            json!({"type": "blosc", "cname": c.get("cname")?.as_str()?, "clevel": int("clevel")?,
                   "shuffle": shuffle, "blocksize": int("blocksize").unwrap_or(0)})
        }
        _ => return None,
    })
}
