//! [`ArrayBuilder`]: describe a new array and create it in a store.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use zarr_core::v2::{ArrayMetadataV2, ZarrFormat};
use zarr_core::{
    ArrayMetadata, ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, DataType, ErrorChain,
    ExtensionObject, FillValue, NodeMetadata, NodePath,
};
use zarr_sharding::ShardingTransformerConfig;
use zarr_store::WritableStore;

use crate::array::{Array, ArrayOptions};
use crate::error::{Error, Result};
use crate::group::{ensure_ancestors, node_prefix, read_metadata, write_metadata};

fn extension(name: &str, configuration: Value) -> ExtensionObject {
    match configuration {
        Value::Object(map) => ExtensionObject::with_configuration(name, map),
        _ => ExtensionObject::new(name),
    }
}

/// Describes a new array: shape, data type, chunking, fill value, codecs and the rest, then
/// writes its `zarr.json` (and any missing ancestor groups) with
/// [`create`](ArrayBuilder::create).
///
/// Defaults: a regular grid of the given chunk shape, the data type's default fill value
/// (zero, `false`, `""`), the `default` chunk key encoding (`c/0/1`), and the codecs a
/// reader such as zarr-python expects: `bytes` (little-endian) for fixed-size types,
/// `vlen-utf8` / `vlen-bytes` for strings and bytes, and no compression unless you add it.
///
/// ```
/// use zarr_array::ArrayBuilder;
/// use zarr_core::DataType;
///
/// let metadata = ArrayBuilder::new(vec![1000, 1000], DataType::UInt16, vec![100, 100])
///     .fill_value_json(serde_json::json!(7))?
///     .zstd(1)
///     .crc32c()
///     .dimension_names(["y", "x"])
///     .build_metadata()?;
/// assert_eq!(metadata.codecs.len(), 3);
/// assert_eq!(metadata.codecs[1].name, "zstd");
/// # Ok::<(), zarr_array::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ArrayBuilder {
    shape: Vec<u64>,
    data_type: DataType,
    chunk_grid: Result<ChunkGrid, String>,
    fill_value: Option<FillValue>,
    chunk_key_encoding: Option<ChunkKeyEncoding>,
    zarr_format: ZarrFormat,
    array_to_array: Vec<ExtensionObject>,
    array_to_bytes: Option<ExtensionObject>,
    bytes_to_bytes: Vec<ExtensionObject>,
    codecs: Option<Vec<ExtensionObject>>,
    shard_inner: Option<Vec<u64>>,
    chunks_per_shard: Option<Vec<u64>>,
    attributes: Map<String, Value>,
    dimension_names: Option<Vec<Option<String>>>,
    /// Storage transformers taken whole from metadata ([`ArrayBuilder::from_metadata`]);
    /// [`ArrayBuilder::sharding_transformer`] replaces them.
    storage_transformers: Vec<ExtensionObject>,
    /// Top-level fields with `"must_understand": false`, from metadata.
    extra_fields: Map<String, Value>,
    n5: bool,
    overwrite: bool,
    options: ArrayOptions,
}

impl ArrayBuilder {
    /// An array of `shape` and `data_type` in a regular grid of `chunk_shape` chunks.
    pub fn new(shape: Vec<u64>, data_type: DataType, chunk_shape: Vec<u64>) -> Self {
        Self {
            shape,
            data_type,
            chunk_grid: ChunkGrid::regular(chunk_shape).map_err(|e| ErrorChain(&e).to_string()),
            fill_value: None,
            chunk_key_encoding: None,
            zarr_format: ZarrFormat::V3,
            array_to_array: Vec::new(),
            array_to_bytes: None,
            bytes_to_bytes: Vec::new(),
            codecs: None,
            shard_inner: None,
            chunks_per_shard: None,
            attributes: Map::new(),
            dimension_names: None,
            storage_transformers: Vec::new(),
            extra_fields: Map::new(),
            n5: false,
            overwrite: false,
            options: ArrayOptions::default(),
        }
    }

    /// A builder holding everything `metadata` describes: shape, data type, chunk grid,
    /// fill value, chunk key encoding, the whole codec list, attributes, dimension names,
    /// storage transformers and unknown optional fields. `build_metadata` gives `metadata`
    /// back; change what should differ (a `shape`, `attributes`, a new `codecs` list, ...)
    /// before [`create`](Self::create). See [`ArrayBuilder::like`] for an open array.
    ///
    /// The codec list is given whole ([`codecs`](Self::codecs)), so the codec conveniences
    /// (`zstd`, `sharding`, ...) cannot add to it: `build_metadata` refuses them; give a new
    /// list instead.
    pub fn from_metadata(metadata: &ArrayMetadata) -> Self {
        Self {
            chunk_grid: Ok(metadata.chunk_grid.clone()),
            fill_value: Some(metadata.fill_value.clone()),
            chunk_key_encoding: Some(metadata.chunk_key_encoding.clone()),
            codecs: Some(metadata.codecs.clone()),
            attributes: metadata.attributes.clone(),
            dimension_names: metadata.dimension_names.clone(),
            storage_transformers: metadata.storage_transformers.clone(),
            extra_fields: metadata.extra_fields.clone(),
            ..Self::new(
                metadata.shape.clone(),
                metadata.data_type.clone(),
                Vec::new(),
            )
        }
    }

    /// A builder for an array laid out like `array` (zarr-python's `create_like`): its
    /// metadata as [`ArrayBuilder::from_metadata`] takes it, its Zarr format and its
    /// options. Attributes come too; clear them with `.attributes(Map::new())` if the new
    /// array should not have them.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = Arc::new(MemoryStore::new());
    /// let input = ArrayBuilder::new(vec![100, 100], DataType::Float32, vec![10, 50])
    ///     .zstd(3)
    ///     .dimension_names(["y", "x"])
    ///     .create(Arc::clone(&store), "/input")
    ///     .await?;
    /// // Same chunks, codecs and names; another shape.
    /// let output = ArrayBuilder::like(&input)
    ///     .shape(vec![100, 20])
    ///     .create(store, "/output")
    ///     .await?;
    /// assert_eq!(output.chunk_shape(), input.chunk_shape());
    /// assert_eq!(output.metadata().codecs, input.metadata().codecs);
    /// assert_eq!(output.shape(), [100, 20]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn like<S: ?Sized>(array: &Array<S>) -> Self {
        Self::from_metadata(array.metadata())
            .zarr_format(array.zarr_format())
            .options(array.options().clone())
    }

    /// Another shape (the chunk grid and the rest stay).
    #[must_use]
    pub fn shape(mut self, shape: Vec<u64>) -> Self {
        self.shape = shape;
        self
    }

    /// Another data type. A fill value given before is converted to it when the array is
    /// built (an error if it cannot hold the value exactly); the codecs must suit it.
    #[must_use]
    pub fn data_type(mut self, data_type: DataType) -> Self {
        // A fill value in the old type's bytes (as metadata holds it) goes through its JSON
        // form, which the new type reads if it can hold the value.
        if let Some(fill) = &self.fill_value
            && fill.for_data_type(&data_type).is_err()
            && let Ok(converted) = fill
                .to_json(&self.data_type)
                .and_then(|json| FillValue::from_json(&json, &data_type))
        {
            self.fill_value = Some(converted);
        }
        self.data_type = data_type;
        self
    }

    /// Use another chunk grid (for example a rectilinear one).
    #[must_use]
    pub fn chunk_grid(mut self, grid: ChunkGrid) -> Self {
        self.chunk_grid = Ok(grid);
        self
    }

    /// The fill value: a Rust value (`5.into()`, `FillValue::from(f32::NAN)`, `"text".into()`,
    /// converted with [`FillValue::for_data_type`] when the data type holds it exactly, so
    /// `5` suits a `float32` array and `-1.0` an `int32` one), or one element's bytes
    /// ([`FillValue::new`]). A value the data type cannot hold exactly (`300` for `uint8`,
    /// `0.5` for `int32`) is an error when the array is created.
    #[must_use]
    pub fn fill_value(mut self, fill_value: FillValue) -> Self {
        self.fill_value = Some(fill_value);
        self
    }

    /// The fill value in its JSON form (`0`, `"NaN"`, `"0x7fc00000"`, `"text"`, ...).
    ///
    /// # Errors
    /// [`Error::Core`] if the value does not suit the data type.
    pub fn fill_value_json(mut self, value: Value) -> Result<Self> {
        self.fill_value = Some(FillValue::from_json(&value, &self.data_type)?);
        Ok(self)
    }

    /// The chunk key encoding.
    #[must_use]
    pub fn chunk_key_encoding(mut self, encoding: ChunkKeyEncoding) -> Self {
        self.chunk_key_encoding = Some(encoding);
        self
    }

    /// The format to write: Zarr v3 (`zarr.json`, the default) or Zarr v2 (`.zarray` and
    /// `.zattrs`, for readers that know only v2, such as zarr-python 2). A v2 array's chunk
    /// keys default to the `v2` encoding with `.` (`0.1`); missing ancestor groups are
    /// written as v2 groups. Everything else is described as for v3 and translated
    /// ([`ArrayMetadataV2::from_v3`](zarr_core::v2::ArrayMetadataV2::from_v3)): the
    /// `bytes` codec's byte order becomes the `dtype`'s, a reversing `transpose` becomes
    /// `order: "F"`, the last bytes->bytes codec the `compressor` and the others `filters`,
    /// [dimension names](Self::dimension_names) xarray's `_ARRAY_DIMENSIONS` attribute.
    /// What v2 cannot store (sharding, some dimensions unnamed, `bfloat16`, a rectilinear
    /// grid, codecs numcodecs does not have) is an error from
    /// [`build_metadata`](Self::build_metadata) and [`create`](Self::create).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{Array, ArrayBuilder};
    /// use zarr_core::{DataType, v2::ZarrFormat};
    /// use zarr_store::{MemoryStore, ReadableStore, StoreKey};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let array = ArrayBuilder::new(vec![4, 6], DataType::Float32, vec![2, 3])
    ///     .zarr_format(ZarrFormat::V2)
    ///     .big_endian()
    ///     .zstd(3)
    ///     .create(Arc::clone(&store), "/data/t")
    ///     .await?;
    /// array.write([0..4, 0..6], &[1.5f32; 24]).await?;
    ///
    /// let zarray = store.get(&StoreKey::new("data/t/.zarray")).await?.unwrap();
    /// let zarray: serde_json::Value = serde_json::from_slice(&zarray)?;
    /// assert_eq!(zarray["dtype"], ">f4");
    /// assert_eq!(zarray["compressor"]["id"], "zstd");
    /// assert!(store.get(&StoreKey::new("data/t/1.1")).await?.is_some()); // v2 chunk keys
    ///
    /// let again = Array::open(store, "/data/t").await?;
    /// assert_eq!(again.zarr_format(), ZarrFormat::V2);
    /// assert_eq!(again.read::<f32>([3..4, 5..6]).await?, [1.5]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn zarr_format(mut self, format: ZarrFormat) -> Self {
        self.zarr_format = format;
        self
    }

    /// The format the builder writes (set with [`zarr_format`](Self::zarr_format)).
    pub fn format(&self) -> ZarrFormat {
        self.zarr_format
    }

    /// Replace the whole codec list (metadata form). The codec conveniences below cannot add
    /// to it: [`build_metadata`](Self::build_metadata) refuses them (put them in the list).
    #[must_use]
    pub fn codecs(mut self, codecs: Vec<ExtensionObject>) -> Self {
        self.codecs = Some(codecs);
        self
    }

    /// Add a `transpose` codec with `order` before the array->bytes codec.
    #[must_use]
    pub fn transpose(mut self, order: Vec<usize>) -> Self {
        self.array_to_array
            .push(extension("transpose", json!({ "order": order })));
        self
    }

    /// Use the `bytes` codec with big-endian byte order (the default is little-endian).
    #[must_use]
    pub fn big_endian(mut self) -> Self {
        self.array_to_bytes = Some(extension("bytes", json!({"endian": "big"})));
        self
    }

    /// Use `codec` as the array->bytes codec (for example the ZEP0007 string layout).
    #[must_use]
    pub fn array_to_bytes(mut self, codec: ExtensionObject) -> Self {
        self.array_to_bytes = Some(codec);
        self
    }

    /// Compress with zstd at `level` (negative levels are faster), no checksum.
    #[must_use]
    pub fn zstd(mut self, level: i32) -> Self {
        self.bytes_to_bytes.push(extension(
            "zstd",
            json!({"level": level, "checksum": false}),
        ));
        self
    }

    /// Compress with gzip at `level` (0-9).
    #[must_use]
    pub fn gzip(mut self, level: u32) -> Self {
        self.bytes_to_bytes
            .push(extension("gzip", json!({ "level": level })));
        self
    }

    /// Compress with blosc: `cname` (`lz4`, `lz4hc`, `blosclz`, `zstd`, `zlib`, `snappy`),
    /// `clevel` 0-9, and byte shuffling for the data type's element size.
    #[must_use]
    pub fn blosc(mut self, cname: &str, clevel: u32) -> Self {
        let typesize = self.data_type.fixed_size().unwrap_or(1);
        let shuffle = if typesize > 1 { "shuffle" } else { "noshuffle" };
        self.bytes_to_bytes.push(extension(
            "blosc",
            json!({"cname": cname, "clevel": clevel, "shuffle": shuffle,
                   "typesize": typesize, "blocksize": 0}),
        ));
        self
    }

    /// Add any bytes->bytes codec (a compressor or a checksum) after those added before, in
    /// its metadata form: for example `numcodecs.lz4`, or N5's `lz4` compression with
    /// [`n5`](Self::n5).
    ///
    /// ```
    /// use zarr_array::ArrayBuilder;
    /// use zarr_codecs::{BytesToBytesCodec, Lz4Codec};
    /// use zarr_core::DataType;
    ///
    /// let metadata = ArrayBuilder::new(vec![64], DataType::Int32, vec![16])
    ///     .bytes_to_bytes(Lz4Codec::default().to_metadata())
    ///     .crc32c()
    ///     .build_metadata()?;
    /// let names: Vec<&str> = metadata.codecs.iter().map(|c| c.name.as_str()).collect();
    /// assert_eq!(names, ["bytes", "numcodecs.lz4", "crc32c"]);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    #[must_use]
    pub fn bytes_to_bytes(mut self, codec: ExtensionObject) -> Self {
        self.bytes_to_bytes.push(codec);
        self
    }

    /// Add a crc32c checksum of each chunk (of each inner chunk when sharded).
    #[must_use]
    pub fn crc32c(mut self) -> Self {
        self.bytes_to_bytes.push(ExtensionObject::new("crc32c"));
        self
    }

    /// Store chunks as shards: the grid's chunk shape becomes the shard shape, split into
    /// inner chunks of `inner_chunk_shape` (which must divide it), each encoded with the
    /// codecs given to this builder; the shard index (at the end) is little-endian with a
    /// crc32c checksum.
    #[must_use]
    pub fn sharding(mut self, inner_chunk_shape: Vec<u64>) -> Self {
        self.shard_inner = Some(inner_chunk_shape);
        self
    }

    /// Lay the array out as an N5 dataset, for an N5 container opened through
    /// [`zarr_store::N5Store`]: the `n5_default` codec (a full transpose, big-endian `bytes`
    /// and the compressor given with [`gzip`](Self::gzip), [`zstd`](Self::zstd) or
    /// [`blosc`](Self::blosc), if any) and N5's block paths (the `v2` chunk key encoding with
    /// `/`). N5 has no fill value, no dimension names and no sharding: leave them out.
    ///
    /// ```
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    ///
    /// let metadata = ArrayBuilder::new(vec![64, 64], DataType::Float32, vec![16, 16])
    ///     .gzip(5)
    ///     .n5()
    ///     .build_metadata()?;
    /// assert_eq!(metadata.codecs[0].name, "n5_default");
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    #[must_use]
    pub fn n5(mut self) -> Self {
        self.n5 = true;
        self
    }

    /// Store the chunks through the sharding storage transformer (the seed's design, not
    /// the `sharding_indexed` codec of the final spec): every `chunks_per_shard` chunks (per
    /// dimension) share one object, with a plain little-endian index at its end. The
    /// metadata names the transformer in `storage_transformers`; this project reads and
    /// writes such arrays, but zarr-python, tensorstore and zarrs do not, so prefer
    /// [`sharding`](Self::sharding) for data others must read.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::{ListableStore, MemoryStore, StorePrefix};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let array = ArrayBuilder::new(vec![8, 8], DataType::UInt8, vec![2, 2])
    ///     .sharding_transformer(vec![2, 4])
    ///     .create(Arc::clone(&store), "/a")
    ///     .await?;
    /// array.write([0..8, 0..8], &[1u8; 64]).await?;
    /// // 4x4 chunks in shards of 2x4 chunks: two objects.
    /// assert_eq!(store.list_prefix(&StorePrefix::new("a/c/")).await?.len(), 2);
    /// assert_eq!(array.read::<u8>([3..5, 6..8]).await?, [1u8; 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn sharding_transformer(mut self, chunks_per_shard: Vec<u64>) -> Self {
        self.chunks_per_shard = Some(chunks_per_shard);
        self
    }

    /// Set one attribute.
    #[must_use]
    pub fn attribute(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }

    /// Replace the attributes.
    #[must_use]
    pub fn attributes(mut self, attributes: Map<String, Value>) -> Self {
        self.attributes = attributes;
        self
    }

    /// Name the dimensions.
    #[must_use]
    pub fn dimension_names<I, N>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.dimension_names = Some(names.into_iter().map(|n| Some(n.into())).collect());
        self
    }

    /// Name some of the dimensions: `None` leaves a dimension unnamed (`null` in
    /// `dimension_names`, as zarr-python and tensorstore write it).
    ///
    /// ```
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    ///
    /// let metadata = ArrayBuilder::new(vec![2, 3, 4], DataType::Float32, vec![2, 3, 4])
    ///     .dimension_names_opt([Some("t"), None, Some("z")])
    ///     .build_metadata()?;
    /// assert_eq!(metadata.dimension_names.unwrap()[1], None);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// Names may be `&str` or `String`; a list of only `None` needs the type spelled out
    /// (`[None::<&str>; 3]`).
    #[must_use]
    pub fn dimension_names_opt<I, N>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = Option<N>>,
        N: Into<String>,
    {
        self.dimension_names = Some(names.into_iter().map(|n| n.map(Into::into)).collect());
        self
    }

    /// Replace an existing node at the path (its chunks are erased first) instead of
    /// failing.
    #[must_use]
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// The options the created array uses.
    #[must_use]
    pub fn options(mut self, options: ArrayOptions) -> Self {
        self.options = options;
        self
    }

    /// The codec list the builder describes.
    fn codec_list(&self) -> Result<Vec<ExtensionObject>> {
        if let Some(codecs) = &self.codecs {
            let added = [
                (!self.array_to_array.is_empty(), "transpose"),
                (self.array_to_bytes.is_some(), "array_to_bytes"),
                (
                    !self.bytes_to_bytes.is_empty(),
                    "a bytes->bytes codec (zstd, gzip, ...)",
                ),
                (self.shard_inner.is_some(), "sharding"),
                (self.n5, "n5"),
            ];
            if let Some((_, what)) = added.iter().find(|(set, _)| *set) {
                return Err(zarr_core::Error::InvalidField {
                    field: "codecs".into(),
                    reason: format!(
                        "the codec list was given whole (`codecs`, or `from_metadata`), so \
                         {what} cannot be added to it: put it in the list"
                    ),
                }
                .into());
            }
            return Ok(codecs.clone());
        }
        if self.n5 {
            let mut codecs = vec![
                extension(
                    "transpose",
                    json!({"order": (0..self.shape.len()).rev().collect::<Vec<_>>()}),
                ),
                extension("bytes", json!({"endian": "big"})),
            ];
            codecs.extend(self.bytes_to_bytes.iter().cloned());
            let codecs: Vec<Value> = codecs.iter().map(ExtensionObject::to_json).collect();
            return Ok(vec![extension("n5_default", json!({ "codecs": codecs }))]);
        }
        let array_to_bytes = self
            .array_to_bytes
            .clone()
            .unwrap_or_else(|| default_array_to_bytes(&self.data_type));
        let mut inner: Vec<ExtensionObject> = self.array_to_array.clone();
        inner.push(array_to_bytes);
        inner.extend(self.bytes_to_bytes.iter().cloned());
        Ok(match &self.shard_inner {
            None => inner,
            Some(chunk_shape) => {
                let to_json = |list: &[ExtensionObject]| -> Vec<Value> {
                    list.iter().map(ExtensionObject::to_json).collect()
                };
                let index = [
                    extension("bytes", json!({"endian": "little"})),
                    ExtensionObject::new("crc32c"),
                ];
                vec![extension(
                    "sharding_indexed",
                    json!({
                        "chunk_shape": chunk_shape,
                        "codecs": to_json(&inner),
                        "index_codecs": to_json(&index),
                        "index_location": "end",
                    }),
                )]
            }
        })
    }

    /// The metadata the builder describes, validated.
    ///
    /// # Errors
    /// [`Error::Core`] for a grid that does not suit the shape, a fill value of the wrong
    /// size, dimension names of the wrong count, a codec convenience with a whole codec
    /// list, ...
    pub fn build_metadata(&self) -> Result<ArrayMetadata> {
        let grid = self
            .chunk_grid
            .clone()
            .map_err(|reason| zarr_core::Error::InvalidField {
                field: "chunk_grid".into(),
                reason,
            })?;
        if self.n5 {
            let conflict = if self.shard_inner.is_some() || self.chunks_per_shard.is_some() {
                Some("sharding")
            } else if !self.array_to_array.is_empty() || self.array_to_bytes.is_some() {
                Some("array codecs other than its own")
            } else if self.zarr_format != ZarrFormat::V3 {
                Some("Zarr v2 metadata")
            } else {
                None
            };
            if let Some(conflict) = conflict {
                return Err(zarr_core::Error::InvalidField {
                    field: "codecs".into(),
                    reason: format!("an N5 dataset cannot have {conflict}"),
                }
                .into());
            }
        }
        let fill_value = match &self.fill_value {
            Some(fill) => fill.for_data_type(&self.data_type)?,
            None => FillValue::default_for(&self.data_type),
        };
        let mut metadata = ArrayMetadata::new(
            self.shape.clone(),
            self.data_type.clone(),
            grid,
            fill_value,
            self.codec_list()?,
        )?
        .with_chunk_key_encoding(self.chunk_key_encoding.clone().unwrap_or(
            match self.zarr_format {
                ZarrFormat::V3 if self.n5 => ChunkKeyEncoding::V2 {
                    separator: ChunkKeySeparator::Slash,
                },
                ZarrFormat::V3 => ChunkKeyEncoding::default(),
                ZarrFormat::V2 => ChunkKeyEncoding::V2 {
                    separator: ChunkKeySeparator::Dot,
                },
            },
        ))
        .with_attributes(self.attributes.clone());
        metadata.extra_fields = self.extra_fields.clone();
        if !self.storage_transformers.is_empty() {
            metadata = metadata.with_storage_transformers(self.storage_transformers.clone());
        }
        if let Some(names) = &self.dimension_names {
            metadata = metadata.with_dimension_names(names.clone())?;
        }
        if let Some(per_shard) = &self.chunks_per_shard {
            let field = "storage_transformers[0].configuration.chunks_per_shard";
            if per_shard.len() != self.shape.len() {
                return Err(zarr_core::Error::RankMismatch {
                    what: field.into(),
                    expected: self.shape.len(),
                    found: per_shard.len(),
                }
                .into());
            }
            let config = ShardingTransformerConfig::try_new(per_shard.clone()).map_err(|e| {
                zarr_core::Error::InvalidField {
                    field: field.into(),
                    reason: ErrorChain(&e).to_string(),
                }
            })?;
            metadata = metadata.with_storage_transformers(vec![config.to_metadata()]);
        }
        if self.zarr_format == ZarrFormat::V2 {
            // v2 keeps dimension names in xarray's attribute (`from_v3` refuses names the
            // attributes do not hold, or some dimensions left unnamed).
            if let Some(names) = &metadata.dimension_names
                && names.iter().all(Option::is_some)
                && !names.is_empty()
                && !metadata
                    .attributes
                    .contains_key(zarr_core::v2::ARRAY_DIMENSIONS)
            {
                let names = Value::from(names.iter().flatten().cloned().collect::<Vec<_>>());
                metadata
                    .attributes
                    .insert(zarr_core::v2::ARRAY_DIMENSIONS.into(), names);
            }
            // What reading the `.zarray` back gives, so the created array is exactly what
            // opening it later gives.
            let attributes = metadata.attributes.clone();
            metadata = ArrayMetadataV2::from_v3(&metadata).and_then(|v2| v2.to_v3(attributes))?;
        }
        // The chunk key encoding was set after `ArrayMetadata::new` checked the rest.
        metadata.validate()?;
        Ok(metadata)
    }

    /// Create the array at `path`: check the codecs, create missing ancestor groups, and
    /// write `zarr.json` (for Zarr v2, `.zarray` and `.zattrs`).
    ///
    /// # Errors
    /// As [`build_metadata`](Self::build_metadata); [`Error::Codecs`] for codecs that cannot
    /// be built; [`Error::NodeExists`] if a node is at `path` and
    /// [`overwrite`](Self::overwrite) is off, or an ancestor is an array;
    /// [`Error::Metadata`] or [`Error::V2Metadata`] if the node at `path` has metadata that
    /// does not parse and `overwrite` is off (with it, the node is replaced); store errors.
    pub async fn create<S: WritableStore + ?Sized>(
        &self,
        store: Arc<S>,
        path: &str,
    ) -> Result<Array<S>> {
        let path = NodePath::new(path)?;
        let metadata = self.build_metadata()?;
        // Build the codecs before writing anything.
        let array = Array::from_metadata(store, path.clone(), metadata, self.options.clone())?
            .with_format(self.zarr_format);
        let store = &*array.store;
        // Changes in flight to a node it replaces finish first; those after find it gone.
        let _tree = crate::locks::lock_tree(store, &path).await;
        let existing = match read_metadata(store, &path).await {
            Ok(found) => found.is_some(),
            // A node whose metadata does not parse is still a node: `overwrite` replaces it.
            Err(Error::Metadata { .. } | Error::V2Metadata { .. }) if self.overwrite => true,
            Err(e) => return Err(e),
        };
        if existing {
            if !self.overwrite {
                return Err(Error::NodeExists {
                    path: path.as_str().to_owned(),
                    reason: "a node is already there (use `overwrite(true)` to replace it)".into(),
                });
            }
            // Records that list the node it replaces lose it (and any node below it), as
            // `Group::remove` does: they must not describe the new node with the old one's
            // metadata.
            for group in path.ancestors() {
                crate::records::forget_in_record(store, &group, &path).await?;
            }
            store.erase_prefix(&node_prefix(&path)?).await?;
        }
        ensure_ancestors(store, &path, self.zarr_format).await?;
        write_metadata(
            store,
            &path,
            &NodeMetadata::Array(Box::new(ArrayMetadata::clone(&array.metadata))),
            self.zarr_format,
        )
        .await?;
        tracing::debug!(array = %path, shape = ?array.metadata.shape, "created array");
        Ok(array)
    }
}

/// The array->bytes codec [`ArrayBuilder`] chooses for `data_type` when none is given:
/// `vlen-utf8` for `string`, `vlen-bytes` for `bytes`, `zarrs.optional` (its mask packed into
/// bits, its values through `bytes`) for optional types, and `bytes` (little-endian)
/// otherwise.
///
/// ```
/// use zarr_array::default_array_to_bytes;
/// use zarr_core::DataType;
///
/// assert_eq!(default_array_to_bytes(&DataType::String).name, "vlen-utf8");
/// assert_eq!(default_array_to_bytes(&"zarrs.optional<int8>".parse()?).name, "zarrs.optional");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn default_array_to_bytes(data_type: &DataType) -> ExtensionObject {
    match data_type {
        DataType::String => extension("vlen-utf8", json!({})),
        DataType::Bytes => extension("vlen-bytes", json!({})),
        DataType::Optional(optional) => zarr_codecs::OptionalCodec::default_metadata(optional),
        DataType::NdArray(nd) if nd.element_size().is_none() => {
            ExtensionObject::new("vlen-ndarray")
        }
        _ => extension("bytes", json!({"endian": "little"})),
    }
}
