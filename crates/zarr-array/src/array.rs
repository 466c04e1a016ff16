//! [`Array`]: open, inspect, read and write an array.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde_json::{Map, Value};
use tracing::Instrument;
use zarr_codecs::{ArrayBytes, CodecChain, CodecRegistry};
use zarr_core::v2::ZarrFormat;
use zarr_core::{
    ArrayMetadata, ChunkGrid, ChunkKeyEncoding, DataType, FillValue, NodeMetadata, NodePath, Region,
};
use zarr_sharding::{ShardingTransformer, ShardingTransformerConfig};
use zarr_store::{ListableStore, ReadableStore, StoreKey, StorePrefix, WritableStore};
use zarr_vlen::{VlenBinary, VlenOffset, VlenStrings};

use crate::codecs::{ArrayCodecs, shared_default_registry};
use crate::element::{Element, as_bytes, as_bytes_mut};
use crate::error::{Error, Result};
use crate::group::{read_node, require_node, v2_key, write_attributes_v2, write_metadata};
use crate::region::IntoRegion;

/// The default number of store requests an operation keeps in flight.
pub const DEFAULT_IO_CONCURRENCY: usize = 32;

/// The default of [`ArrayOptions::with_decode_budget`]: 4 MiB of encoded chunks fetched and
/// waiting to be decoded.
pub const DEFAULT_DECODE_BUDGET: usize = 4 << 20;

/// The default of [`ArrayOptions::with_selection_budget`]: 256 MiB of decoded parts of a
/// selection held at once.
pub const DEFAULT_SELECTION_BUDGET: usize = 256 << 20;

/// How an [`Array`] reads and writes: concurrency, empty chunks, codecs.
///
/// CPU work (encoding and decoding chunks) runs on rayon's global pool, which uses every core
/// unless configured otherwise (`RAYON_NUM_THREADS`, or `rayon::ThreadPoolBuilder`); store
/// requests run concurrently up to [`io_concurrency`](Self::io_concurrency). On a
/// multi-threaded Tokio runtime (and in the blocking API), a read of several chunks fetches
/// while it decodes: memory held by such a read is the output plus at most
/// [`decode_budget`](Self::decode_budget) bytes of encoded chunks waiting for or in decoding
/// (or one chunk, if larger), plus those of at most `io_concurrency` requests in flight. A
/// shard larger than the budget is not held whole: it is read as its index and parts of at
/// most half the budget (see `docs/sharding.md`).
#[derive(Debug, Clone)]
pub struct ArrayOptions {
    io_concurrency: usize,
    decode_budget: usize,
    write_empty_chunks: bool,
    registry: Arc<CodecRegistry>,
    shard_index_cache: usize,
    selection_budget: usize,
}

impl Default for ArrayOptions {
    fn default() -> Self {
        Self {
            io_concurrency: DEFAULT_IO_CONCURRENCY,
            decode_budget: DEFAULT_DECODE_BUDGET,
            write_empty_chunks: false,
            registry: shared_default_registry(),
            shard_index_cache: 0,
            selection_budget: DEFAULT_SELECTION_BUDGET,
        }
    }
}

impl ArrayOptions {
    /// How many store requests an operation keeps in flight (at least 1). Default
    /// [`DEFAULT_IO_CONCURRENCY`].
    #[must_use]
    pub fn with_io_concurrency(mut self, requests: usize) -> Self {
        self.io_concurrency = requests.max(1);
        self
    }

    /// The most bytes of encoded chunks a read holds fetched but not yet decoded, while it
    /// fetches further chunks (at least 1; a chunk larger than this is decoded alone).
    /// Default [`DEFAULT_DECODE_BUDGET`]. Larger keeps more fetches ahead of the decoders
    /// (which helps stores with uneven latency) and reads large shards in fewer, larger
    /// requests (a shard that decodes to more than the budget is read in parts of at most
    /// half of it); smaller lowers a read's peak memory.
    #[must_use]
    pub fn with_decode_budget(mut self, bytes: usize) -> Self {
        self.decode_budget = bytes.max(1);
        self
    }

    /// Whether a chunk whose values are all the fill value is stored (`true`) or not stored,
    /// erasing any chunk that was there (`false`, the default, as zarr-python's
    /// `write_empty_chunks=False`). Readers see the same values either way.
    #[must_use]
    pub fn with_write_empty_chunks(mut self, write: bool) -> Self {
        self.write_empty_chunks = write;
        self
    }

    /// The codec registry to build the array's codecs from (default:
    /// [`default_registry`](crate::default_registry)).
    #[must_use]
    pub fn with_registry(mut self, registry: Arc<CodecRegistry>) -> Self {
        self.registry = registry;
        self
    }

    /// Keep the indexes of the shards read (and which shards are missing), up to `bytes` in
    /// all (16 bytes per inner chunk and ~100 per shard), least recently used out first. Off
    /// (0) by default.
    ///
    /// Reading part of a shard then costs one request instead of two once its index is
    /// known: for random access to a dataset nobody rewrites, on object stores above all.
    /// The cache sees writes through this array and its clones (each write empties it), not
    /// writes by other handles or processes: after those, a cached index points into a
    /// replaced shard, and reads return wrong values or decoding errors until
    /// [`Array::clear_shard_index_cache`] (or a fresh `Array`). See `docs/sharding.md`.
    #[must_use]
    pub fn with_shard_index_cache(mut self, bytes: usize) -> Self {
        self.shard_index_cache = bytes;
        self
    }

    /// The most bytes of decoded parts a selection read or write ([`Array::read_selection`],
    /// [`Array::read_points`], [`Array::write_selection`], ...) holds at once beside its
    /// output (or values): each part is the box of selected elements inside one chunk, or
    /// one stored unit for writes. At least 1; a part larger than this runs alone. Default
    /// [`DEFAULT_SELECTION_BUDGET`]. Variable-length parts count 16 bytes per element.
    #[must_use]
    pub fn with_selection_budget(mut self, bytes: usize) -> Self {
        self.selection_budget = bytes.max(1);
        self
    }

    /// The most bytes of decoded parts a selection holds at once.
    pub fn selection_budget(&self) -> usize {
        self.selection_budget
    }

    /// The most bytes of shard indexes kept (0: none).
    pub fn shard_index_cache(&self) -> usize {
        self.shard_index_cache
    }

    /// Requests kept in flight.
    pub fn io_concurrency(&self) -> usize {
        self.io_concurrency
    }

    /// Encoded bytes a read may hold waiting for decoding.
    pub fn decode_budget(&self) -> usize {
        self.decode_budget
    }

    /// Whether all-fill chunks are stored.
    pub fn write_empty_chunks(&self) -> bool {
        self.write_empty_chunks
    }

    /// The codec registry.
    pub fn registry(&self) -> &Arc<CodecRegistry> {
        &self.registry
    }
}

/// A Zarr array in a store.
///
/// `S` is the store type: a concrete backend (`Array<FilesystemStore>`) or a trait object
/// (`Array<dyn Store>`). Reading needs `S: ReadableStore`, writing `S: WritableStore`.
/// Cloning is cheap (the store and codecs are shared).
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// use zarr_array::{Array, ArrayBuilder};
/// use zarr_core::DataType;
/// use zarr_store::MemoryStore;
///
/// let store = Arc::new(MemoryStore::new());
/// let array = ArrayBuilder::new(vec![100, 100], DataType::Float32, vec![10, 10])
///     .zstd(3)
///     .create(store.clone(), "/data/temperature")
///     .await?;
///
/// // Write a 20x20 block, read back a region that straddles its edge.
/// array.write([0..20, 0..20], &vec![1.5f32; 400]).await?;
/// let values: Vec<f32> = array.read([15..25, 0..1]).await?;
/// assert_eq!(values, [1.5, 1.5, 1.5, 1.5, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0]);
///
/// // Open it again from the store.
/// let again = Array::open(store, "/data/temperature").await?;
/// assert_eq!(again.shape(), [100, 100]);
/// # Ok::<(), zarr_array::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Array<S: ?Sized> {
    pub(crate) store: Arc<S>,
    pub(crate) path: NodePath,
    /// Shared, so that cloning an array (one per task, say) does not copy its attributes.
    pub(crate) metadata: Arc<ArrayMetadata>,
    pub(crate) codecs: Arc<ArrayCodecs>,
    pub(crate) options: ArrayOptions,
    /// The sharding storage transformer the metadata names, wrapping `store`.
    pub(crate) transformer: Option<Arc<ShardingTransformer<S>>>,
    /// Shard index fetches in flight, shared by concurrent reads (and by clones).
    pub(crate) index_flights: Arc<crate::index_flights::IndexFlights>,
    /// Shard indexes kept between reads, when the options ask for it (shared by clones).
    pub(crate) index_cache: Option<Arc<crate::index_cache::IndexCache>>,
    /// The format of the metadata (`zarr.json`, or `.zarray` for Zarr v2).
    pub(crate) format: ZarrFormat,
}

impl<S: ?Sized> Clone for Array<S> {
    fn clone(&self) -> Self {
        Self {
            store: Arc::clone(&self.store),
            path: self.path.clone(),
            metadata: Arc::clone(&self.metadata),
            codecs: Arc::clone(&self.codecs),
            options: self.options.clone(),
            transformer: self.transformer.clone(),
            index_flights: Arc::clone(&self.index_flights),
            index_cache: self.index_cache.clone(),
            format: self.format,
        }
    }
}

/// Where a struct field lies in a record ([`Array::read_field`]): its byte offset, and its
/// path as shown in errors.
pub(crate) struct FieldPlan {
    offset: usize,
    shown: String,
}

impl<S: ?Sized> Array<S> {
    /// An array from metadata already read (or about to be written).
    ///
    /// # Errors
    /// [`Error::Core`] if the metadata breaks a rule [`ArrayMetadata::validate`] checks;
    /// [`Error::Codecs`] if the codecs cannot be built; [`Error::Unsupported`] for storage
    /// transformers this crate does not know.
    pub fn from_metadata(
        store: Arc<S>,
        path: NodePath,
        metadata: ArrayMetadata,
        options: ArrayOptions,
    ) -> Result<Self> {
        metadata.validate()?;
        let transformer = match metadata.storage_transformers.as_slice() {
            [] => None,
            [only] if let Ok(config) = ShardingTransformerConfig::from_metadata(only) => {
                if config.chunks_per_shard.len() != metadata.shape.len() {
                    return Err(zarr_core::Error::RankMismatch {
                        what: "the sharding storage transformer's chunks_per_shard".into(),
                        expected: metadata.shape.len(),
                        found: config.chunks_per_shard.len(),
                    }
                    .into());
                }
                let prefix = StorePrefix::try_new(path.prefix())?;
                let transformer = ShardingTransformer::from_metadata(
                    Arc::clone(&store),
                    prefix,
                    only,
                    metadata.chunk_key_encoding.clone(),
                )
                .map_err(|source| Error::Sharding {
                    array: path.as_str().to_owned(),
                    source: Box::new(source),
                })?;
                Some(Arc::new(transformer))
            }
            list => {
                let names: Vec<&str> = list.iter().map(|t| t.name.as_str()).collect();
                return Err(Error::unsupported(
                    path.as_str(),
                    format!("the storage transformers {names:?}"),
                ));
            }
        };
        let codecs = ArrayCodecs::new(path.as_str(), &metadata, &options.registry)?;
        let index_cache = (options.shard_index_cache > 0).then(|| {
            Arc::new(crate::index_cache::IndexCache::new(
                options.shard_index_cache,
            ))
        });
        Ok(Self {
            store,
            path,
            metadata: Arc::new(metadata),
            codecs: Arc::new(codecs),
            options,
            transformer,
            index_flights: Arc::default(),
            index_cache,
            format: ZarrFormat::V3,
        })
    }

    /// The array as read from metadata of `format`.
    pub(crate) fn with_format(mut self, format: ZarrFormat) -> Self {
        self.format = format;
        self
    }

    /// The version of the format of the array's metadata: `zarr.json` (v3) or `.zarray`
    /// (v2). Both read and write alike, through the v3 description
    /// ([`metadata`](Self::metadata)); create a v2 array with
    /// [`ArrayBuilder::zarr_format`](crate::ArrayBuilder::zarr_format).
    pub fn zarr_format(&self) -> ZarrFormat {
        self.format
    }

    /// Forget the shard indexes kept by [`ArrayOptions::with_shard_index_cache`] (for this
    /// array and its clones): call it after another handle or process rewrote shards. Does
    /// nothing without the cache.
    pub fn clear_shard_index_cache(&self) {
        if let Some(cache) = &self.index_cache {
            cache.invalidate();
        }
    }

    /// Empties the shard index cache now and when dropped: held by every operation that
    /// writes.
    pub(crate) fn index_cache_write_guard(&self) -> crate::index_cache::WriteGuard<'_> {
        crate::index_cache::WriteGuard::new(self.index_cache.as_deref())
    }

    /// The array's path.
    pub fn path(&self) -> &NodePath {
        &self.path
    }

    /// The array's metadata.
    pub fn metadata(&self) -> &ArrayMetadata {
        &self.metadata
    }

    /// The shape.
    pub fn shape(&self) -> &[u64] {
        &self.metadata.shape
    }

    /// The data type.
    pub fn data_type(&self) -> &DataType {
        &self.metadata.data_type
    }

    /// The fill value.
    pub fn fill_value(&self) -> &FillValue {
        &self.metadata.fill_value
    }

    /// The fill value as a Rust value of the array's element type, for masking elements
    /// that were never written.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![4], DataType::Int16, vec![2])
    ///     .fill_value((-9999).into())
    ///     .create(Arc::new(MemoryStore::new()), "/depth")
    ///     .await?;
    /// assert_eq!(array.fill_value_as::<i16>()?, -9999);
    /// assert!(array.fill_value_as::<f32>().is_err()); // not the array's element type
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] if `T` is not an element type of the array's data type (as for
    /// [`read`](Array::read)); [`Error::InvalidValue`] if the stored fill value is not a
    /// valid `T` (a `bool` byte other than 0 or 1).
    pub fn fill_value_as<T: Element>(&self) -> Result<T> {
        self.check_element::<T>()?;
        let bytes = self.metadata.fill_value.as_bytes();
        if bytes.len() != std::mem::size_of::<T>() || T::first_invalid(bytes).is_some() {
            return Err(Error::InvalidValue {
                array: self.path.as_str().to_owned(),
                reason: format!("the fill value {:02x?} is not a valid {}", bytes, T::NAME),
            });
        }
        // SAFETY: `T` is a sealed plain-old-data element type whose size is `bytes.len()`,
        // and `first_invalid` accepted the bytes (only `bool` has invalid patterns);
        // `read_unaligned` needs no alignment.
        Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
    }

    /// The attributes.
    pub fn attributes(&self) -> &Map<String, Value> {
        &self.metadata.attributes
    }

    /// Attribute `key` as a `T` (any `serde::Deserialize` type), or `None` if the array has
    /// no such attribute.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// #[derive(serde::Deserialize, Debug, PartialEq)]
    /// struct Scale {
    ///     unit: String,
    ///     factor: f64,
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let array = ArrayBuilder::new(vec![4], DataType::Float32, vec![2])
    ///     .attribute("scale", serde_json::json!({"unit": "m", "factor": 0.5}))
    ///     .attribute("bands", serde_json::json!(["red", "green"]))
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// let scale: Option<Scale> = array.attribute("scale")?;
    /// assert_eq!(scale, Some(Scale { unit: "m".into(), factor: 0.5 }));
    /// assert_eq!(array.attribute::<Vec<String>>("bands")?.unwrap(), ["red", "green"]);
    /// assert_eq!(array.attribute::<f64>("missing")?, None);
    /// assert!(array.attribute::<f64>("bands").is_err()); // a list, not a number
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Attribute`] (naming the array and the attribute) if the attribute does not
    /// deserialize as a `T`.
    pub fn attribute<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        crate::attributes::attribute(self.path.as_str(), &self.metadata.attributes, key)
    }

    /// The attributes as a whole as a `T`: a struct whose fields are attributes (missing
    /// ones as `Option` or `#[serde(default)]` fields, the others ignored unless the struct
    /// says `#[serde(deny_unknown_fields)]`).
    ///
    /// # Errors
    /// [`Error::Attribute`] (naming the array) if the attributes do not deserialize as a
    /// `T`.
    pub fn attributes_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        crate::attributes::attributes_as(self.path.as_str(), &self.metadata.attributes)
    }

    /// The number of dimensions (0 for a scalar array).
    pub fn ndim(&self) -> usize {
        self.metadata.shape.len()
    }

    /// The number of elements: the product of the shape.
    ///
    /// # Errors
    /// [`Error::Core`] if the product does not fit in a `u64`.
    pub fn num_elements(&self) -> Result<u64> {
        Ok(self.metadata.num_elements()?)
    }

    /// The chunk grid.
    pub fn chunk_grid(&self) -> &ChunkGrid {
        &self.metadata.chunk_grid
    }

    /// The shape of every chunk of a regular chunk grid; `None` for a rectilinear or a
    /// `zarrs.regular_bounded` grid, whose chunks differ in shape (ask
    /// [`ChunkGrid::chunk_shape`] for one chunk's shape, and
    /// [`ChunkGrid::nominal_chunk_shape`] for a bounded grid's full chunks).
    ///
    /// These are the units stored under one key each. With the `sharding_indexed` codec
    /// they are the shards, and [`inner_chunk_shape`](Array::inner_chunk_shape) gives the
    /// chunks inside them (zarr-python calls the two `shards` and `chunks`). With the
    /// sharding storage transformer they are the inner chunks, and the transformer's
    /// `chunks_per_shard` groups them.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![100, 60], DataType::UInt8, vec![50, 30])
    ///     .sharding(vec![10, 10])
    ///     .dimension_names(["y", "x"])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// assert_eq!(array.ndim(), 2);
    /// assert_eq!(array.chunk_shape(), Some(&[50, 30][..]));
    /// assert_eq!(array.inner_chunk_shape(), Some(&[10, 10][..]));
    /// assert_eq!(array.dimension_names(), Some(&[Some("y".to_owned()), Some("x".to_owned())][..]));
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn chunk_shape(&self) -> Option<&[u64]> {
        match &self.metadata.chunk_grid {
            ChunkGrid::Regular(grid) => Some(grid.chunk_shape()),
            _ => None,
        }
    }

    /// The shape of the chunks inside each shard when the array's codec is
    /// `sharding_indexed`; `None` otherwise.
    pub fn inner_chunk_shape(&self) -> Option<&[u64]> {
        self.codecs.sharding_codec().map(|c| c.inner_chunk_shape())
    }

    /// The dimension names, if the metadata has them (a name may be `null`).
    pub fn dimension_names(&self) -> Option<&[Option<String>]> {
        self.metadata.dimension_names.as_deref()
    }

    /// How chunk grid indices become store keys.
    pub fn chunk_key_encoding(&self) -> &ChunkKeyEncoding {
        &self.metadata.chunk_key_encoding
    }

    /// Whether the array's chunks go through the sharding storage transformer (the metadata
    /// names it in `storage_transformers`). Reads and writes then go through a
    /// [`ShardingTransformer`] wrapping [`store`](Array::store).
    pub fn uses_storage_transformer(&self) -> bool {
        self.transformer.is_some()
    }

    /// The sharding storage transformer chunk reads and writes go through, if the metadata
    /// names one.
    pub fn storage_transformer(&self) -> Option<&Arc<ShardingTransformer<S>>> {
        self.transformer.as_ref()
    }

    /// The options.
    pub fn options(&self) -> &ArrayOptions {
        &self.options
    }

    /// The store.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }

    /// The array with other options (codecs are rebuilt when the registry changes).
    ///
    /// # Errors
    /// As [`Array::from_metadata`].
    pub fn with_options(self, options: ArrayOptions) -> Result<Self> {
        if Arc::ptr_eq(&options.registry, &self.options.registry)
            && options.shard_index_cache == self.options.shard_index_cache
        {
            return Ok(Self { options, ..self });
        }
        let format = self.format;
        Ok(Self::from_metadata(
            self.store,
            self.path,
            Arc::unwrap_or_clone(self.metadata),
            options,
        )?
        .with_format(format))
    }

    /// The region covering the whole array.
    pub fn full_region(&self) -> Region {
        Region::full(&self.metadata.shape)
    }

    /// The number of chunks along each dimension.
    ///
    /// # Errors
    /// [`Error::Core`] if the grid does not suit the shape.
    pub fn grid_shape(&self) -> Result<Vec<u64>> {
        Ok(self.metadata.chunk_grid.grid_shape(&self.metadata.shape)?)
    }

    /// The store key of the chunk with grid indices `chunk`.
    ///
    /// # Errors
    /// [`Error::Core`] if the chunk lies outside the grid.
    pub fn chunk_key(&self, chunk: &[u64]) -> Result<StoreKey> {
        self.metadata
            .chunk_grid
            .chunk_shape(&self.metadata.shape, chunk)?;
        self.chunk_key_unchecked(chunk)
    }

    pub(crate) fn chunk_key_unchecked(&self, chunk: &[u64]) -> Result<StoreKey> {
        let key = format!("{}{}", self.path.prefix(), self.metadata.chunk_key(chunk));
        Ok(StoreKey::try_new(key)?)
    }

    /// The codec chain for chunks of `shape`.
    pub(crate) fn chain(&self, shape: &[u64]) -> Result<Arc<CodecChain>> {
        self.codecs.chain(self.path.as_str(), shape)
    }

    /// The chain for chunks of the grid's first chunk shape.
    pub fn codec_chain(&self) -> &CodecChain {
        self.codecs.first()
    }

    /// A zeroed buffer for the `T` elements of `region`, which must lie in the array.
    pub(crate) fn output_for<T: Element>(&self, region: &Region) -> Result<Vec<T>> {
        region.check_within(&self.metadata.shape)?;
        let n =
            usize::try_from(region.num_elements()?).map_err(|_| zarr_core::Error::Overflow {
                what: "the number of elements in the region".into(),
            })?;
        crate::element::zeroed_vec::<T>(n).map_err(|e| self.codecs_error(e))
    }

    /// A zeroed buffer for the bytes of `region` (a fixed-size data type's elements).
    pub(crate) fn byte_output_for(&self, region: &Region) -> Result<Vec<u8>> {
        region.check_within(&self.metadata.shape)?;
        let elem = self.element_size()?;
        let n = region
            .num_elements()?
            .checked_mul(elem as u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| zarr_core::Error::Overflow {
                what: "the size of the region in bytes".into(),
            })?;
        crate::element::zeroed_vec::<u8>(n).map_err(|e| self.codecs_error(e))
    }

    pub(crate) fn check_element<T: Element>(&self) -> Result<()> {
        if T::is_compatible(&self.metadata.data_type) {
            Ok(())
        } else {
            Err(Error::element_type(
                self.path.as_str(),
                &self.metadata.data_type,
                T::NAME,
            ))
        }
    }

    pub(crate) fn element_size(&self) -> Result<usize> {
        self.metadata.data_type.fixed_size().ok_or_else(|| {
            Error::unsupported(
                self.path.as_str(),
                match self.metadata.data_type {
                    DataType::String => "string has variable-length elements; use read_text / \
                                         write_text (or read_strings / write_strings; for \
                                         selections read_selection_text, read_points_text, \
                                         ...)"
                        .to_string(),
                    DataType::Bytes => "bytes has variable-length elements; use read_binary / \
                                        write_binary (for selections \
                                        read_selection_array_bytes, ...)"
                        .to_string(),
                    ref other => format!(
                        "{} has variable-length elements; use read_array_bytes / \
                         write_array_bytes (for selections read_selection_array_bytes, ...)",
                        other.name()
                    ),
                },
            )
        })
    }

    /// The sharding codec for shards of `shape`, if the array is sharded.
    pub(crate) fn sharding(
        &self,
        shape: &[u64],
    ) -> Result<Option<Arc<zarr_sharding::ShardingCodec>>> {
        self.codecs.sharding(self.path.as_str(), shape)
    }

    pub(crate) fn shard_error(&self, key: &StoreKey, source: zarr_sharding::Error) -> Error {
        Error::Shard {
            array: self.path.as_str().to_owned(),
            key: key.as_str().to_owned(),
            source: Box::new(source),
        }
    }

    /// [`Array::shard_error`] for the shard at grid indices `chunk`: an element a codec
    /// refused (which the sharding codec places in the shard) becomes [`Error::Element`].
    pub(crate) fn shard_error_at(
        &self,
        key: &StoreKey,
        chunk: &[u64],
        source: zarr_sharding::Error,
    ) -> Error {
        if let zarr_sharding::Error::Codec(zarr_codecs::Error::InvalidElement { index, .. }) =
            &source
            && let Some(element) = self.element_in_chunk(chunk, *index)
            && let zarr_sharding::Error::Codec(codec_error) = source
        {
            return Error::Element {
                array: self.path.as_str().to_owned(),
                key: key.as_str().to_owned(),
                element,
                source: Box::new(codec_error),
            };
        }
        self.shard_error(key, source)
    }

    pub(crate) fn check_vlen(&self, data_type: DataType, element: &'static str) -> Result<()> {
        if self.metadata.data_type == data_type {
            Ok(())
        } else {
            Err(Error::element_type(
                self.path.as_str(),
                &self.metadata.data_type,
                element,
            ))
        }
    }

    pub(crate) fn vlen_error(&self, source: zarr_vlen::Error) -> Error {
        Error::Vlen {
            array: self.path.as_str().to_owned(),
            source: Box::new(source),
        }
    }

    pub(crate) fn codecs_error(&self, source: zarr_codecs::Error) -> Error {
        Error::Codecs {
            array: self.path.as_str().to_owned(),
            source: Box::new(source),
        }
    }

    pub(crate) fn chunk_error(&self, key: &StoreKey, source: zarr_codecs::Error) -> Error {
        Error::Chunk {
            array: self.path.as_str().to_owned(),
            key: key.as_str().to_owned(),
            source: Box::new(source),
        }
    }

    /// [`Array::chunk_error`] for the chunk at grid indices `chunk`, which turns a codec's
    /// invalid element (an index in the chunk's C order) into [`Error::Element`] naming the
    /// element's indices in the array.
    pub(crate) fn chunk_error_at(
        &self,
        key: &StoreKey,
        chunk: &[u64],
        source: zarr_codecs::Error,
    ) -> Error {
        if let zarr_codecs::Error::InvalidElement { index, .. } = &source
            && let Some(element) = self.element_in_chunk(chunk, *index)
        {
            return Error::Element {
                array: self.path.as_str().to_owned(),
                key: key.as_str().to_owned(),
                element,
                source: Box::new(source),
            };
        }
        self.chunk_error(key, source)
    }

    /// The array indices of the element at C-order `index` of chunk `chunk` (codec chains
    /// and the sharding codec report positions in that order, through transposes and
    /// shards), when it lies inside the array (not in an edge chunk's padding).
    fn element_in_chunk(&self, chunk: &[u64], index: u64) -> Option<Vec<u64>> {
        let metadata = &*self.metadata;
        let grid = &metadata.chunk_grid;
        let shape = grid.chunk_shape(&metadata.shape, chunk).ok()?;
        let origin = grid.chunk_origin(&metadata.shape, chunk).ok()?;
        let element = zarr_core::unravel_index(index, &shape)?
            .iter()
            .zip(&origin)
            .map(|(i, o)| o.checked_add(*i))
            .collect::<Option<Vec<u64>>>()?;
        let inside = element.iter().zip(&metadata.shape).all(|(i, n)| i < n);
        inside.then_some(element)
    }
}

impl<S: ReadableStore + ?Sized> Array<S> {
    /// The store chunk reads go to: the sharding storage transformer when the array uses
    /// one, the store itself otherwise.
    pub(crate) fn read_store(&self) -> &dyn ReadableStore {
        match &self.transformer {
            Some(transformer) => &**transformer,
            None => &self.store,
        }
    }

    /// Open the array at `path` with default options.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`], [`Error::WrongNodeType`] for a group, metadata errors, and
    /// [`Error::Codecs`] for codecs that cannot be built (checked now, not at the first read).
    pub async fn open(store: Arc<S>, path: &str) -> Result<Self> {
        Self::open_with(store, path, ArrayOptions::default()).await
    }

    /// Open the array at `path` with `options`.
    ///
    /// # Errors
    /// As [`Array::open`].
    pub async fn open_with(store: Arc<S>, path: &str, options: ArrayOptions) -> Result<Self> {
        let path = NodePath::new(path)?;
        let span = tracing::debug_span!("zarr.open", array = %path);
        let (metadata, format) = require_node(&*store, &path).instrument(span).await?;
        match metadata {
            NodeMetadata::Array(metadata) => {
                Ok(Self::from_metadata(store, path, *metadata, options)?.with_format(format))
            }
            NodeMetadata::Group(_) => Err(Error::WrongNodeType {
                path: path.as_str().to_owned(),
                expected: "an array",
                found: "a group",
            }),
        }
    }

    /// Re-read the metadata from the store (after another writer resized the array, say).
    ///
    /// # Errors
    /// As [`Array::open`].
    pub async fn refresh(&mut self) -> Result<()> {
        let fresh = Self::open_with(
            Arc::clone(&self.store),
            self.path.as_str(),
            self.options.clone(),
        )
        .await?;
        *self = fresh;
        Ok(())
    }

    /// Read `region` as a new `Vec<T>` in C order.
    ///
    /// # Errors
    /// [`Error::ElementType`] if `T` does not match the data type; region errors; store and
    /// chunk errors.
    pub async fn read<T: Element>(&self, region: impl IntoRegion) -> Result<Vec<T>> {
        self.check_element::<T>()?;
        let region = region.into_region_of(&self.metadata.shape)?;
        let mut out = self.output_for::<T>(&region)?;
        self.read_into(&region, &mut out).await?;
        Ok(out)
    }

    /// Read `region` into `out`, which must hold exactly its elements (C order).
    ///
    /// # Errors
    /// As [`Array::read`]; [`Error::BufferSize`] if `out` has the wrong length.
    pub async fn read_into<T: Element>(
        &self,
        region: impl IntoRegion,
        out: &mut [T],
    ) -> Result<()> {
        self.check_element::<T>()?;
        let region = region.into_region_of(&self.metadata.shape)?;
        let bytes = as_bytes_mut(out);
        self.read_bytes_into(&region, bytes).await?;
        self.check_values::<T>(bytes, "")?;
        Ok(())
    }

    /// Read one field of every record of `region` of a [`DataType::Struct`] array, as a new
    /// `Vec<T>` in C order. `field` is the path of names to the field: `&["x"]`, or
    /// `&["p", "x"]` for field `x` of the nested struct `p`. `T` must match the field's data
    /// type as [`Array::read`] checks it against an array's (a nested struct is read field by
    /// field).
    ///
    /// The records are decoded as for [`Array::read_bytes`] and the field's bytes taken out
    /// of each, so a read costs the whole records' decoding whichever field is asked for.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the array's data type is not a struct or a name in `field` is
    /// not a field (of a struct); [`Error::ElementType`] if `T` does not match the field's
    /// data type; [`Error::InvalidValue`] for a `bool` field holding other bytes than 0 or 1;
    /// as [`Array::read_bytes`].
    pub async fn read_field<T: Element>(
        &self,
        region: impl IntoRegion,
        field: &[&str],
    ) -> Result<Vec<T>> {
        let plan = self.field_plan::<T>(field)?;
        let records = self.read_bytes(region).await?;
        self.field_values(&records, &plan)
    }

    /// Where `field` lies in a record, checked against `T` (the checks of
    /// [`Array::read_field`], made before anything is read).
    pub(crate) fn field_plan<T: Element>(&self, field: &[&str]) -> Result<FieldPlan> {
        let (offset, data_type) = self.struct_field(field)?;
        let shown = field.join(".");
        if !T::is_compatible(&data_type) {
            return Err(Error::element_type(
                &format!("{} (field {shown})", self.path.as_str()),
                &data_type,
                T::NAME,
            ));
        }
        Ok(FieldPlan { offset, shown })
    }

    /// The field `plan` names, taken out of each of `records` (native bytes).
    pub(crate) fn field_values<T: Element>(
        &self,
        records: &[u8],
        plan: &FieldPlan,
    ) -> Result<Vec<T>> {
        let record = self.element_size()?;
        let width = size_of::<T>();
        let n = records.len() / record.max(1);
        let mut out = crate::element::zeroed_vec::<T>(n).map_err(|e| self.codecs_error(e))?;
        let bytes = as_bytes_mut(&mut out);
        for (i, chunk) in bytes.chunks_exact_mut(width).enumerate() {
            let start = i * record + plan.offset;
            chunk.copy_from_slice(&records[start..start + width]);
        }
        self.check_values::<T>(bytes, &format!("field {} of ", plan.shown))?;
        Ok(out)
    }

    /// Read `region` of an array of an optional (nullable) data type
    /// ([`DataType::Optional`]) as a new `Vec<Option<T>>` in C order: `None` where a value is
    /// missing. `T` must match the inner data type as [`Array::read`] checks it (`u16` for
    /// `zarrs.optional<uint16>`). Nested optional types are read with
    /// [`Array::read_bytes`]: each element is the inner element followed by a validity byte.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::{DataType, OptionalType};
    /// use zarr_store::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let nullable = DataType::Optional(OptionalType::new(DataType::Float32));
    /// let array = ArrayBuilder::new(vec![6], nullable, vec![4])
    ///     .create(store, "/readings")
    ///     .await?;
    /// array.write_optional(0..3, &[Some(1.5f32), None, Some(-2.0)]).await?;
    /// // Unwritten elements are the fill value: missing, by default.
    /// assert_eq!(
    ///     array.read_optional::<f32>(..).await?,
    ///     [Some(1.5), None, Some(-2.0), None, None, None]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] if the array's data type is not optional or `T` does not match
    /// its inner type; [`Error::InvalidValue`] for a validity byte other than 0 or 1 or an
    /// invalid `bool`; as [`Array::read_bytes`].
    pub async fn read_optional<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<Option<T>>> {
        self.optional_inner::<T>()?;
        let bytes = self.read_bytes(region).await?;
        self.optional_values(&bytes)
    }

    /// Elements of an optional array (each the inner value, then its validity byte) as
    /// `Option<T>`s; `T` was checked with `optional_inner`.
    pub(crate) fn optional_values<T: Element>(&self, bytes: &[u8]) -> Result<Vec<Option<T>>> {
        let inner = self.optional_inner::<T>()?;
        let width = size_of::<T>();
        let mut values = crate::element::zeroed_vec::<T>(bytes.len() / (width + 1))
            .map_err(|e| self.codecs_error(e))?;
        let mut present = Vec::with_capacity(values.len());
        {
            let out = as_bytes_mut(&mut values);
            for (i, (element, slot)) in bytes
                .chunks_exact(width + 1)
                .zip(out.chunks_exact_mut(width))
                .enumerate()
            {
                match element[width] {
                    0 => present.push(false),
                    1 => {
                        present.push(true);
                        slot.copy_from_slice(&element[..width]);
                    }
                    other => {
                        return Err(Error::InvalidValue {
                            array: self.path.as_str().to_owned(),
                            reason: format!(
                                "element {i} of the region has the validity byte {other}, \
                                 not 0 or 1"
                            ),
                        });
                    }
                }
            }
            self.check_values::<T>(out, &format!("the {inner} value of "))?;
        }
        Ok(values
            .into_iter()
            .zip(present)
            .map(|(value, present)| present.then_some(value))
            .collect())
    }

    /// Read `region` of a `zarrs.optional<string>` array as `Option<String>`s (C order;
    /// `None` where a value is missing).
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `zarrs.optional<string>`;
    /// [`Error::InvalidValue`] for a value that is not UTF-8 or an element without a
    /// validity byte of 0 or 1; as [`Array::read`].
    pub async fn read_optional_text(&self, region: impl IntoRegion) -> Result<Vec<Option<String>>> {
        self.optional_vlen(&DataType::String, "Option<String>")?;
        let vlen = self.read_vlen(region).await?;
        self.optional_texts(self.optional_elements(vlen)?)
    }

    /// Optional variable-length values as `Option<String>`s, each checked as UTF-8.
    pub(crate) fn optional_texts(&self, values: Vec<Option<Bytes>>) -> Result<Vec<Option<String>>> {
        let mut out = Vec::with_capacity(values.len());
        for (i, value) in values.into_iter().enumerate() {
            out.push(match value {
                None => None,
                Some(bytes) => {
                    Some(
                        String::from_utf8(bytes.to_vec()).map_err(|e| Error::InvalidValue {
                            array: self.path.as_str().to_owned(),
                            reason: format!("element {i} of the region is not UTF-8: {e}"),
                        })?,
                    )
                }
            });
        }
        Ok(out)
    }

    /// Read `region` of a `zarrs.optional<bytes>` array as `Option<Vec<u8>>`s (C order;
    /// `None` where a value is missing).
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `zarrs.optional<bytes>`; as
    /// [`Array::read_optional_text`].
    pub async fn read_optional_binary(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        self.optional_vlen(&DataType::Bytes, "Option<Vec<u8>>")?;
        let vlen = self.read_vlen(region).await?;
        Ok(self
            .optional_elements(vlen)?
            .into_iter()
            .map(|value| value.map(|bytes| bytes.to_vec()))
            .collect())
    }

    /// The elements of an optional array of a variable-length type, with their validity
    /// bytes checked and taken off.
    pub(crate) fn optional_elements(
        &self,
        vlen: zarr_codecs::VlenBytes,
    ) -> Result<Vec<Option<Bytes>>> {
        let (offsets, values) = vlen.into_parts();
        let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
        for (i, range) in offsets.windows(2).enumerate() {
            let element = values.slice(range[0] as usize..range[1] as usize);
            let Some((_, validity)) = zarr_core::OptionalType::split(&element) else {
                return Err(Error::InvalidValue {
                    array: self.path.as_str().to_owned(),
                    reason: format!("element {i} of the region has no validity byte"),
                });
            };
            out.push(match validity {
                0 => None,
                1 => Some(element.slice(..element.len() - 1)),
                other => {
                    return Err(Error::InvalidValue {
                        array: self.path.as_str().to_owned(),
                        reason: format!(
                            "element {i} of the region has the validity byte {other}, not 0 \
                             or 1"
                        ),
                    });
                }
            });
        }
        Ok(out)
    }

    /// Check that the array is an optional of `inner` (`string` or `bytes`).
    pub(crate) fn optional_vlen(&self, inner: &DataType, element: &'static str) -> Result<()> {
        match &self.metadata.data_type {
            DataType::Optional(optional) if optional.inner() == inner => Ok(()),
            other => Err(Error::element_type(self.path.as_str(), other, element)),
        }
    }

    /// The inner type of an optional array, checked against `T`.
    pub(crate) fn optional_inner<T: Element>(&self) -> Result<&DataType> {
        match &self.metadata.data_type {
            DataType::Optional(optional) if T::is_compatible(optional.inner()) => {
                Ok(optional.inner())
            }
            other => Err(Error::element_type(
                self.path.as_str(),
                other,
                format!("Option<{}>", T::NAME),
            )),
        }
    }

    /// Check decoded `bytes` before they are seen as values of `T` ([`Element::first_invalid`]);
    /// `what` prefixes "element i" in the error.
    pub(crate) fn check_values<T: Element>(&self, bytes: &[u8], what: &str) -> Result<()> {
        match T::first_invalid(bytes) {
            Some(i) => Err(Error::InvalidValue {
                array: self.path.as_str().to_owned(),
                reason: format!(
                    "{what}element {i} of the region is the byte {}, not a valid {}",
                    bytes[i],
                    T::NAME
                ),
            }),
            None => Ok(()),
        }
    }

    /// The byte offset within a record and the data type of the struct field at `path`.
    fn struct_field(&self, path: &[&str]) -> Result<(usize, DataType)> {
        let unsupported = |reason: String| Error::unsupported(self.path.as_str(), reason);
        let DataType::Struct(mut current) = self.metadata.data_type.clone() else {
            return Err(unsupported(format!(
                "fields are read from struct arrays; this one holds {}",
                self.metadata.data_type.name()
            )));
        };
        let (last, parents) = path
            .split_last()
            .ok_or_else(|| unsupported("the path to a field is empty".into()))?;
        let mut offset = 0;
        for (depth, name) in parents.iter().enumerate() {
            let (at, field) = current.field(name).ok_or_else(|| {
                unsupported(format!(
                    "the struct has no field {:?}",
                    path[..=depth].join(".")
                ))
            })?;
            let DataType::Struct(inner) = field.data_type.clone() else {
                return Err(unsupported(format!(
                    "field {:?} is {}, not a struct with fields",
                    path[..=depth].join("."),
                    field.data_type.name()
                )));
            };
            offset += at;
            current = inner;
        }
        let (at, field) = current
            .field(last)
            .ok_or_else(|| unsupported(format!("the struct has no field {:?}", path.join("."))))?;
        Ok((offset + at, field.data_type.clone()))
    }

    /// Read `region` as an n-dimensional [`ndarray::ArrayD`] of the region's shape (feature
    /// `ndarray`).
    ///
    /// # Errors
    /// As [`Array::read`].
    #[cfg(feature = "ndarray")]
    pub async fn read_ndarray<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<ndarray::ArrayD<T>> {
        let region = region.into_region_of(&self.metadata.shape)?;
        let values = self.read(&region).await?;
        self.to_ndarray(&region.shape(), values, "the region's shape")
    }

    /// `values` (C order) as an [`ndarray::ArrayD`] of `shape`; `what` names the shape in
    /// errors.
    #[cfg(feature = "ndarray")]
    pub(crate) fn to_ndarray<T: Element>(
        &self,
        shape: &[u64],
        values: Vec<T>,
        what: &str,
    ) -> Result<ndarray::ArrayD<T>> {
        let shape: Vec<usize> = shape
            .iter()
            .map(|&n| usize::try_from(n))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| zarr_core::Error::Overflow { what: what.into() })?;
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), values).map_err(|e| {
            Error::unsupported(self.path.as_str(), format!("building the ndarray: {e}"))
        })
    }

    /// Read `region` as raw bytes (native byte order, C order) of any fixed-size data type.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for variable-length data; as [`Array::read`].
    pub async fn read_bytes(&self, region: impl IntoRegion) -> Result<Vec<u8>> {
        let region = region.into_region_of(&self.metadata.shape)?;
        let mut out = self.byte_output_for(&region)?;
        self.read_bytes_into(&region, &mut out).await?;
        Ok(out)
    }

    /// Read `region` into the byte buffer `out` (native byte order, C order).
    ///
    /// # Errors
    /// As [`Array::read_bytes`]; [`Error::BufferSize`] if `out` has the wrong length.
    pub async fn read_bytes_into(&self, region: impl IntoRegion, out: &mut [u8]) -> Result<()> {
        let region = region.into_region_of(&self.metadata.shape)?;
        crate::read::read_fixed(self, &region, out).await
    }

    /// Read `region` of any data type, fixed-size or variable-length (strings, bytes), as
    /// [`ArrayBytes`].
    ///
    /// # Errors
    /// As [`Array::read`].
    pub async fn read_array_bytes(&self, region: impl IntoRegion) -> Result<ArrayBytes> {
        let region = region.into_region_of(&self.metadata.shape)?;
        region.check_within(&self.metadata.shape)?;
        if self.metadata.data_type.fixed_size().is_some() {
            Ok(ArrayBytes::fixed(self.read_bytes(&region).await?))
        } else {
            crate::read::read_variable(self, &region).await
        }
    }

    /// Read `region` of a `string` array as UTF-8 strings in Arrow layout (offsets of type
    /// `O`, `i32` or `i64`, and one values buffer).
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `string`; [`Error::Vlen`] for values
    /// that are not UTF-8 or do not fit `O` offsets; as [`Array::read`].
    pub async fn read_strings<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
    ) -> Result<VlenStrings<O>> {
        self.check_vlen(DataType::String, "VlenStrings")?;
        let vlen = self.read_vlen(region).await?;
        VlenStrings::from_vlen_bytes(&vlen).map_err(|e| self.vlen_error(e))
    }

    /// Read `region` of a `string` array as `String`s: [`Array::read_strings`] without
    /// choosing an offset type, one allocation per string.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![3], DataType::String, vec![2])
    ///     .create(Arc::new(MemoryStore::new()), "/labels")
    ///     .await?;
    /// array.write_text(0..2, &["ice", "snow"]).await?;
    /// assert_eq!(array.read_text(..).await?, ["ice", "snow", ""]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Array::read_strings`].
    pub async fn read_text(&self, region: impl IntoRegion) -> Result<Vec<String>> {
        Ok(self.read_strings::<i64>(region).await?.to_strings())
    }

    /// Read `region` of a `bytes` array as binary values in Arrow layout.
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `bytes`; as [`Array::read_strings`].
    pub async fn read_binary<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
    ) -> Result<VlenBinary<O>> {
        self.check_vlen(DataType::Bytes, "VlenBinary")?;
        let vlen = self.read_vlen(region).await?;
        VlenBinary::from_vlen_bytes(&vlen).map_err(|e| self.vlen_error(e))
    }

    pub(crate) async fn read_vlen(
        &self,
        region: impl IntoRegion,
    ) -> Result<zarr_codecs::VlenBytes> {
        match self.read_array_bytes(region).await? {
            ArrayBytes::Variable(vlen) => Ok(vlen),
            ArrayBytes::Fixed(_) => Err(Error::unsupported(
                self.path.as_str(),
                "fixed-size data where variable-length data was expected",
            )),
        }
    }

    /// The stored (encoded) bytes of one chunk, `None` if it is not stored.
    ///
    /// # Errors
    /// [`Error::Core`] if the chunk lies outside the grid; store errors.
    pub async fn read_encoded_chunk(&self, chunk: &[u64]) -> Result<Option<Bytes>> {
        let key = self.chunk_key(chunk)?;
        Ok(self.read_store().get(&key).await?)
    }

    /// Decode one whole chunk (at its full shape, edge chunks included). A chunk that is not
    /// stored reads as the fill value.
    ///
    /// # Errors
    /// As [`Array::read_encoded_chunk`]; [`Error::Chunk`] if it does not decode.
    pub async fn read_chunk(&self, chunk: &[u64]) -> Result<ArrayBytes> {
        let key = self.chunk_key(chunk)?;
        let shape = self
            .metadata
            .chunk_grid
            .chunk_shape(&self.metadata.shape, chunk)?;
        let chain = self.chain(&shape)?;
        match self.read_store().get(&key).await? {
            None => ArrayBytes::fill(chain.decoded_representation())
                .map_err(|e| self.chunk_error(&key, e)),
            Some(bytes) => chain
                .decode(bytes)
                .map_err(|e| self.chunk_error_at(&key, chunk, e)),
        }
    }

    /// Whether the chunk is stored.
    ///
    /// # Errors
    /// As [`Array::read_encoded_chunk`].
    pub async fn chunk_exists(&self, chunk: &[u64]) -> Result<bool> {
        let key = self.chunk_key(chunk)?;
        Ok(self.read_store().size(&key).await?.is_some())
    }
}

impl<S: ReadableStore + ListableStore + ?Sized> Array<S> {
    /// The grid indices of the chunks that are stored, in C order, from one listing of the
    /// array's prefix (zarr-python's `nchunks_initialized` counts the same keys). Listed keys
    /// are decoded with the array's chunk key encoding; keys that name no chunk of the grid
    /// (metadata documents, stray files, chunks left outside the grid by a resize of
    /// another implementation) are not chunks. For a sharded array the chunks are the
    /// shards; through the sharding storage transformer they are the chunks its shard
    /// indexes list, which costs a read of every shard's index.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![8, 8], DataType::UInt8, vec![4, 4])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// array.write([4..8, 0..4], &[1u8; 16]).await?;
    /// assert_eq!(array.stored_chunks().await?, [vec![1, 0]]);
    /// assert_eq!(array.num_stored_chunks().await?, 1);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// Store errors, including a store that cannot list (an HTTP store); shard index errors
    /// through the sharding storage transformer.
    pub async fn stored_chunks(&self) -> Result<Vec<Vec<u64>>> {
        let prefix = StorePrefix::try_new(self.path.prefix())?;
        let keys = match &self.transformer {
            Some(transformer) => transformer.list_prefix(&prefix).await?,
            None => self.store.list_prefix(&prefix).await?,
        };
        let grid = self.grid_shape()?;
        let encoding = &self.metadata.chunk_key_encoding;
        let mut chunks: Vec<Vec<u64>> = keys
            .iter()
            .filter_map(|key| key.strip_prefix(&prefix))
            .filter_map(|key| encoding.decode(key.as_str(), grid.len()))
            .filter(|chunk| chunk.iter().zip(&grid).all(|(i, n)| i < n))
            .collect();
        chunks.sort_unstable();
        chunks.dedup();
        Ok(chunks)
    }

    /// How many chunks are stored: the length of [`Array::stored_chunks`].
    ///
    /// # Errors
    /// As [`Array::stored_chunks`].
    pub async fn num_stored_chunks(&self) -> Result<u64> {
        Ok(self.stored_chunks().await?.len() as u64)
    }
}

impl<S: ReadableStore + ?Sized + 'static> Array<S> {
    /// Read several regions at once, each as a new `Vec<T>`, returned in the order given.
    ///
    /// Up to [`ArrayOptions::io_concurrency`] reads are in flight together. On a
    /// multi-threaded Tokio runtime each read is a task of its own, so small reads (single
    /// chunks, say) decode in parallel; elsewhere they take turns on this task. Reads of one
    /// shard in flight together share its index requests (see `docs/sharding.md`). This is
    /// the way for the [blocking API](crate::blocking::Array::read_many) to keep many reads in
    /// flight.
    ///
    /// ```
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), zarr_array::Error> {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![8, 8], DataType::UInt8, vec![4, 4])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// array.write([0..8, 0..8], &(0..64).collect::<Vec<u8>>()).await?;
    /// let blocks: Vec<Vec<u8>> = array.read_many([[0..1, 0..2], [7..8, 6..8]]).await?;
    /// assert_eq!(blocks, [vec![0, 1], vec![62, 63]]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The first error of any read (as [`Array::read`]); the others are then abandoned.
    /// [`Error::Task`] if a read's task was cancelled (its runtime shut down).
    pub async fn read_many<T: Element, R: IntoRegion>(
        &self,
        regions: impl IntoIterator<Item = R>,
    ) -> Result<Vec<Vec<T>>> {
        self.check_element::<T>()?;
        let regions = regions
            .into_iter()
            .map(|region| {
                let region = region.into_region_of(&self.metadata.shape)?;
                region.check_within(&self.metadata.shape)?;
                Ok(region)
            })
            .collect::<Result<Vec<Region>>>()?;
        let in_flight = self.options.io_concurrency().max(1);
        let Some(handle) = crate::read::pipeline_handle(regions.len()) else {
            return futures::stream::iter(regions)
                .map(|region| self.read::<T>(region))
                .buffered(in_flight)
                .try_collect()
                .await;
        };
        let permits = Arc::new(tokio::sync::Semaphore::new(in_flight));
        let tasks: Vec<AbortOnDrop<Result<Vec<T>>>> = regions
            .into_iter()
            .map(|region| {
                let array = self.clone();
                let permits = Arc::clone(&permits);
                AbortOnDrop(handle.spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    array.read::<T>(region).await
                }))
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for task in tasks {
            out.push(task.join().await??);
        }
        Ok(out)
    }
}

/// A spawned task, aborted if dropped before it finishes (when another read fails first, or
/// the caller stops waiting).
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    /// The task's output; its panic, resumed here; [`Error::Task`] if it was cancelled (its
    /// runtime shut down).
    pub(crate) async fn join(mut self) -> Result<T> {
        match (&mut self.0).await {
            Ok(output) => Ok(output),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => Err(Error::Task(error.to_string())),
        }
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<S: WritableStore + ?Sized> Array<S> {
    /// Write `values` (C order) into `region`. Chunks the region covers whole are encoded and
    /// written without being read; chunks it covers in part are read, merged and re-encoded.
    /// Chunks that end up all fill value are erased unless
    /// [`ArrayOptions::with_write_empty_chunks`] says to store them.
    ///
    /// # Errors
    /// [`Error::ElementType`], [`Error::BufferSize`], region, store and chunk errors. Chunks
    /// are written independently: after an error, some chunks may hold the new values.
    pub async fn write<T: Element>(&self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        self.check_element::<T>()?;
        self.write_bytes(region, as_bytes(values)).await
    }

    /// Write an [`ndarray`] array (any memory layout) at `origin` (feature `ndarray`): the
    /// region starts at `origin` and has the array's shape.
    ///
    /// # Errors
    /// As [`Array::write`]; [`Error::Core`] if `origin` has the wrong rank or the region does
    /// not fit the array.
    #[cfg(feature = "ndarray")]
    pub async fn write_ndarray<T: Element, D: ndarray::Dimension>(
        &self,
        origin: &[u64],
        values: ndarray::ArrayView<'_, T, D>,
    ) -> Result<()> {
        if origin.len() != values.ndim() {
            return Err(zarr_core::Error::RankMismatch {
                what: "the origin and the ndarray".into(),
                expected: values.ndim(),
                found: origin.len(),
            }
            .into());
        }
        let ranges: Vec<std::ops::Range<u64>> = origin
            .iter()
            .zip(values.shape())
            .map(|(&o, &n)| o..o.saturating_add(n as u64))
            .collect();
        match values.as_slice() {
            Some(slice) => self.write(ranges, slice).await,
            None => {
                let contiguous: Vec<T> = values.iter().copied().collect();
                self.write(ranges, &contiguous).await
            }
        }
    }

    /// Write `values` (C order; `None` for a missing value) into `region` of an array of an
    /// optional data type; see [`Array::read_optional`].
    ///
    /// # Errors
    /// [`Error::ElementType`] if the array's data type is not optional or `T` does not match
    /// its inner type; as [`Array::write`].
    pub async fn write_optional<T: Element>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        self.optional_inner::<T>()?;
        let width = size_of::<T>();
        let bytes =
            values
                .len()
                .checked_mul(width + 1)
                .ok_or_else(|| zarr_core::Error::Overflow {
                    what: "the size of the values in bytes".into(),
                })?;
        let mut elements =
            crate::element::zeroed_vec::<u8>(bytes).map_err(|e| self.codecs_error(e))?;
        for (slot, value) in elements.chunks_exact_mut(width + 1).zip(values) {
            if let Some(value) = value {
                slot[..width].copy_from_slice(as_bytes(std::slice::from_ref(value)));
                slot[width] = 1;
            }
        }
        self.write_bytes(region, &elements).await
    }

    /// Write `values` (C order; `None` for a missing value) into `region` of a
    /// `zarrs.optional<string>` array; see [`Array::read_optional_text`].
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `zarrs.optional<string>`; as
    /// [`Array::write`].
    pub async fn write_optional_text<T: AsRef<str>>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        self.optional_vlen(&DataType::String, "Option<String>")?;
        let elements = values
            .iter()
            .map(|v| v.as_ref().map(|s| s.as_ref().as_bytes()));
        self.write_optional_vlen(region, elements).await
    }

    /// Write `values` (C order; `None` for a missing value) into `region` of a
    /// `zarrs.optional<bytes>` array; see [`Array::read_optional_binary`].
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `zarrs.optional<bytes>`; as
    /// [`Array::write`].
    pub async fn write_optional_binary<T: AsRef<[u8]>>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        self.optional_vlen(&DataType::Bytes, "Option<Vec<u8>>")?;
        let elements = values.iter().map(|v| v.as_ref().map(AsRef::as_ref));
        self.write_optional_vlen(region, elements).await
    }

    async fn write_optional_vlen<'a>(
        &self,
        region: impl IntoRegion,
        values: impl Iterator<Item = Option<&'a [u8]>>,
    ) -> Result<()> {
        let mut offsets = vec![0u64];
        let mut bytes = Vec::new();
        for value in values {
            match value {
                Some(value) => {
                    bytes.extend_from_slice(value);
                    bytes.push(1);
                }
                None => bytes.push(0),
            }
            offsets.push(bytes.len() as u64);
        }
        let vlen = zarr_codecs::VlenBytes::try_new(offsets, bytes.into())
            .map_err(|e| self.codecs_error(e))?;
        self.write_array_bytes(region, ArrayBytes::Variable(vlen))
            .await
    }

    /// Write raw bytes (native byte order, C order) of any fixed-size data type into
    /// `region`.
    ///
    /// # Errors
    /// As [`Array::write`].
    pub async fn write_bytes(&self, region: impl IntoRegion, values: &[u8]) -> Result<()> {
        let region = region.into_region_of(&self.metadata.shape)?;
        self.check_bool_bytes(values)?;
        crate::write::write_fixed(self, &region, values).await
    }

    /// For a `bool` array, check that every byte of `values` is 0 or 1.
    pub(crate) fn check_bool_bytes(&self, values: &[u8]) -> Result<()> {
        if self.metadata.data_type == DataType::Bool
            && let Some(i) = bool::first_invalid(values)
        {
            return Err(Error::InvalidValue {
                array: self.path.as_str().to_owned(),
                reason: format!(
                    "byte {i} of the values is {}, not a bool (0 or 1)",
                    values[i]
                ),
            });
        }
        Ok(())
    }

    /// Write [`ArrayBytes`] of any data type (fixed-size or variable-length) into `region`.
    ///
    /// # Errors
    /// As [`Array::write`].
    pub async fn write_array_bytes(
        &self,
        region: impl IntoRegion,
        values: ArrayBytes,
    ) -> Result<()> {
        let region = region.into_region_of(&self.metadata.shape)?;
        match values {
            ArrayBytes::Fixed(bytes) => self.write_bytes(&region, &bytes).await,
            ArrayBytes::Variable(vlen) => crate::write::write_variable(self, &region, vlen).await,
        }
    }

    /// Write `values` (C order over `region`) to a `string` array: [`Array::write_strings`]
    /// from `&str`s or `String`s.
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `string`; [`Error::Vlen`] if the
    /// strings hold more bytes than `i64` offsets reach; as [`Array::write`].
    pub async fn write_text<T: AsRef<str>>(
        &self,
        region: impl IntoRegion,
        values: &[T],
    ) -> Result<()> {
        self.check_vlen(DataType::String, "strings")?;
        let strings = VlenStrings::<i64>::from_strs(values).map_err(|e| self.vlen_error(e))?;
        self.write_strings(region, &strings).await
    }

    /// Write UTF-8 strings (Arrow layout, C order) into `region` of a `string` array.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    /// use zarr_vlen::VlenStrings;
    ///
    /// let array = ArrayBuilder::new(vec![4], DataType::String, vec![2])
    ///     .create(Arc::new(MemoryStore::new()), "/labels")
    ///     .await?;
    /// let names = VlenStrings::<i32>::from_strs(["ice", "", "snow"]).unwrap();
    /// array.write_strings(0..3, &names).await?;
    /// let back = array.read_strings::<i32>(0..4).await?;
    /// assert_eq!(back.iter().collect::<Vec<_>>(), ["ice", "", "snow", ""]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `string`; as [`Array::write`].
    pub async fn write_strings<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
        values: &VlenStrings<O>,
    ) -> Result<()> {
        self.check_vlen(DataType::String, "VlenStrings")?;
        let vlen = values.to_vlen_bytes().map_err(|e| self.vlen_error(e))?;
        self.write_array_bytes(region, ArrayBytes::Variable(vlen))
            .await
    }

    /// Write binary values (Arrow layout, C order) into `region` of a `bytes` array.
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `bytes`; as [`Array::write`].
    pub async fn write_binary<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
        values: &VlenBinary<O>,
    ) -> Result<()> {
        self.check_vlen(DataType::Bytes, "VlenBinary")?;
        let vlen = values.to_vlen_bytes().map_err(|e| self.vlen_error(e))?;
        self.write_array_bytes(region, ArrayBytes::Variable(vlen))
            .await
    }

    /// Encode and store one whole chunk (its full shape, edge chunks included), or erase it if
    /// it is all fill value and empty chunks are not written.
    ///
    /// # Errors
    /// [`Error::Core`] if the chunk lies outside the grid; [`Error::Chunk`] if `values` do not
    /// match the chunk; store errors.
    pub async fn write_chunk(&self, chunk: &[u64], values: ArrayBytes) -> Result<()> {
        let key = self.chunk_key(chunk)?;
        let shape = self
            .metadata
            .chunk_grid
            .chunk_shape(&self.metadata.shape, chunk)?;
        let chain = self.chain(&shape)?;
        let value = crate::write::encode_chunk(self, &chain, &key, chunk, values)?;
        self.sink().put(self, key, value).await
    }

    /// Erase one chunk (it then reads as the fill value).
    ///
    /// # Errors
    /// As [`Array::write_chunk`].
    pub async fn erase_chunk(&self, chunk: &[u64]) -> Result<()> {
        let key = self.chunk_key(chunk)?;
        self.sink().put(self, key, None).await
    }

    /// Replace the attributes and write `zarr.json` (`.zattrs` for Zarr v2). Consolidated
    /// records above that list the array get them too (see [`Array::resize`]).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`] if the array was removed since this handle opened it, and
    /// [`Error::WrongNodeType`] or [`Error::NodeReplaced`] if another node replaced it (the
    /// change would bring it back or overwrite the other); metadata errors if its stored
    /// metadata does not parse; store errors.
    pub async fn set_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        self.change_attributes(|current| *current = attributes)
            .await
    }

    /// Change the attributes as stored now (another handle may have changed them, or the
    /// shape, since this one read them) with `change`, and write the metadata, holding the
    /// node's lock in the process (see [`Array::resize`]).
    async fn change_attributes(
        &mut self,
        change: impl FnOnce(&mut Map<String, Value>),
    ) -> Result<()> {
        let _node = self.lock_metadata().await;
        self.adopt_stored().await?;
        let mut metadata = ArrayMetadata::clone(&self.metadata);
        change(&mut metadata.attributes);
        self.store_metadata(metadata).await
    }

    /// Take this node's metadata lock (see [`crate::locks`]).
    async fn lock_metadata(&self) -> crate::locks::NodeGuard {
        crate::locks::lock_node(&*self.store, &self.path).await
    }

    /// Before a change of the metadata: take the stored shape and attributes (and dimension
    /// names and extra fields) when another handle changed them since this one read or
    /// wrote the metadata, so that the change starts from them and writes none of this
    /// handle's old ones back.
    ///
    /// # Errors
    /// - [`Error::NodeNotFound`] if the array is gone (removed through another handle): the
    ///   change would bring it back.
    /// - [`Error::WrongNodeType`] if a group is there now, and [`Error::NodeReplaced`] if an
    ///   array of another definition or format is: the change would overwrite it.
    /// - Metadata errors if the stored metadata does not parse or is invalid, and
    ///   [`Error::Codecs`] if its shape does not suit the shards' inner chunks.
    async fn adopt_stored(&mut self) -> Result<()> {
        let path = self.path.as_str();
        let (stored, format) = match read_node(&*self.store, &self.path).await? {
            Some((NodeMetadata::Array(stored), format)) => (*stored, format),
            Some((NodeMetadata::Group(_), _)) => {
                return Err(Error::WrongNodeType {
                    path: path.to_owned(),
                    expected: "an array",
                    found: "a group",
                });
            }
            None => {
                return Err(Error::NodeNotFound {
                    path: path.to_owned(),
                    key: crate::group::metadata_key(&self.path)?.as_str().to_owned(),
                });
            }
        };
        if format != self.format {
            return Err(Error::NodeReplaced {
                path: path.to_owned(),
                reason: format!(
                    "it is stored as Zarr v{format} now, this handle holds v{}",
                    self.format
                ),
            });
        }
        if stored == *self.metadata {
            return Ok(());
        }
        // The same codecs written with their defaults spelled out (or left out) are the
        // same codecs: compare them as this crate writes them.
        let same_codecs = || {
            crate::codecs::ArrayCodecs::new(path, &stored, &self.options.registry).is_ok_and(
                |codecs| codecs.first().to_metadata() == self.codecs.first().to_metadata(),
            )
        };
        if let Some(change) = redefined(&self.metadata, &stored, same_codecs) {
            return Err(Error::NodeReplaced {
                path: path.to_owned(),
                reason: format!("it was re-created with {change}"),
            });
        }
        stored.validate().map_err(|source| Error::Metadata {
            path: path.to_owned(),
            key: crate::group::metadata_key(&self.path)
                .map(|key| key.as_str().to_owned())
                .unwrap_or_default(),
            source: Box::new(source),
        })?;
        self.codecs.check_shape(path, &stored)?;
        tracing::debug!(
            array = %self.path,
            shape = ?self.metadata.shape,
            stored = ?stored.shape,
            "took the metadata another handle stored"
        );
        self.metadata = Arc::new(stored);
        Ok(())
    }

    /// Merge `attributes` into the attributes as stored now (replacing keys that exist; the
    /// attributes another handle wrote are kept) and write `zarr.json`.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`] if the array was removed since this handle opened it, and
    /// [`Error::WrongNodeType`] or [`Error::NodeReplaced`] if another node replaced it (the
    /// change would bring it back or overwrite the other); metadata errors if its stored
    /// metadata does not parse; store errors.
    pub async fn update_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        self.change_attributes(|current| current.extend(attributes))
            .await
    }

    /// Set attribute `key` to `value` (any `serde::Serialize`), keeping the others, and
    /// write the metadata as [`Array::update_attributes`] does. [`Array::attribute`] reads
    /// it back.
    ///
    /// # Errors
    /// [`Error::Attribute`] if `value` does not serialize to JSON (a map with non-string
    /// keys, say), before anything is written; as [`Array::update_attributes`].
    pub async fn set_attribute<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<()> {
        let value = crate::attributes::to_attribute(self.path.as_str(), key, value)?;
        let mut attributes = Map::new();
        attributes.insert(key.to_owned(), value);
        self.update_attributes(attributes).await
    }

    async fn store_metadata(&mut self, mut metadata: ArrayMetadata) -> Result<()> {
        match self.format {
            ZarrFormat::V3 => {
                write_metadata(
                    &*self.store,
                    &self.path,
                    &NodeMetadata::Array(Box::new(metadata.clone())),
                    ZarrFormat::V3,
                )
                .await?;
            }
            // Only what changed: the shape in `.zarray` (every other key of the document as
            // it was, so nothing another writer put there is lost), the attributes in
            // `.zattrs`.
            ZarrFormat::V2 => {
                // The dimension names follow xarray's attribute, as when the array is opened.
                metadata.dimension_names = zarr_core::v2::dimension_names_from_attributes(
                    &metadata.attributes,
                    metadata.rank(),
                );
                if metadata.shape != self.metadata.shape {
                    self.store_shape_v2(&metadata.shape).await?;
                }
                if metadata.attributes != self.metadata.attributes {
                    write_attributes_v2(&*self.store, &self.path, &metadata.attributes).await?;
                }
            }
        }
        let document = NodeMetadata::Array(Box::new(metadata.clone()));
        self.metadata = Arc::new(metadata);
        crate::records::refresh_in_records(&*self.store, &self.path, &document, self.format)
            .await?;
        Ok(())
    }

    /// Rewrite the `shape` of this Zarr v2 array's `.zarray`.
    async fn store_shape_v2(&self, shape: &[u64]) -> Result<()> {
        let key = v2_key(&self.path, zarr_core::v2::ZARRAY)?;
        let in_v2 = |source: zarr_core::Error| Error::V2Metadata {
            path: self.path.as_str().to_owned(),
            source: Box::new(source),
        };
        let bytes = self
            .store
            .get(&key)
            .await?
            .ok_or_else(|| Error::NodeNotFound {
                path: self.path.as_str().to_owned(),
                key: key.as_str().to_owned(),
            })?;
        let mut doc: Map<String, Value> =
            serde_json::from_slice(&bytes).map_err(|e| in_v2(zarr_core::Error::Json(e)))?;
        doc.insert("shape".into(), Value::from(shape.to_vec()));
        let mut text =
            serde_json::to_string_pretty(&doc).map_err(|e| in_v2(zarr_core::Error::Json(e)))?;
        text.push('\n');
        self.store.set(&key, Bytes::from(text.into_bytes())).await?;
        Ok(())
    }

    /// Change the shape. Chunks that fall wholly outside the new shape are erased, and the
    /// elements of edge chunks that fall outside it are reset to the fill value, so growing
    /// the array again shows the fill value there, not old data. Growing writes only
    /// `zarr.json`.
    ///
    /// On a `zarrs.regular_bounded` grid, whose edge chunks end at the array's end, the
    /// chunks whose shape changes (the last one along a dimension whose length changes, in
    /// the old shape and in the new) are re-encoded at their new shape before the shape is
    /// stored, keeping their values; growing then rewrites those chunks too. Between the two
    /// steps, readers of the old shape get a typed error for those chunks.
    ///
    /// The resize starts from the metadata as stored, read again first: if another handle
    /// changed the shape or the attributes since this one read them, this handle takes
    /// them (chunks are cleared from the stored shape, and no old attribute is written
    /// back). Attribute changes and appends do the same; within one process each holds the
    /// array's metadata lock throughout.
    ///
    /// Consolidated records of the groups above that list the array get its new metadata,
    /// after the array's own metadata is written, so readers of a record never see the old
    /// shape (zarr-python leaves them as they were). That costs one metadata read per group
    /// above (`zarr.json`, or `.zmetadata` for Zarr v2) and a write per record that lists the
    /// array; attribute changes and appends do the same.
    ///
    /// # Errors
    /// [`Error::Region`] if the new shape has another rank than the array; [`Error::Core`]
    /// if it does not suit the chunk grid (a rectilinear grid must still cover it); as
    /// [`Array::update_attributes`] if the array was removed or replaced through another
    /// handle (nothing is written then); store and chunk errors.
    pub async fn resize(&mut self, shape: Vec<u64>) -> Result<()> {
        if shape.len() != self.metadata.shape.len() {
            return Err(Error::Region {
                reason: format!(
                    "array {} has rank {}; it cannot be resized to {shape:?} (rank {}): the \
                     rank of an array never changes",
                    self.path,
                    self.metadata.shape.len(),
                    shape.len()
                ),
            });
        }
        let _node = self.lock_metadata().await;
        self.adopt_stored().await?;
        let resized = self.with_any_shape(shape.clone())?;
        let old = self.metadata.shape.clone();
        let span =
            tracing::debug_span!("zarr.resize", array = %self.path, from = ?old, to = ?shape);
        async {
            if old.iter().zip(&shape).any(|(o, n)| n < o) {
                crate::write::clear_outside(self, &shape).await?;
            }
            crate::write::reshape_edge_chunks(self, &resized).await
        }
        .instrument(span)
        .await?;
        self.store_metadata(ArrayMetadata::clone(&resized.metadata))
            .await
    }

    /// Append `values` (C order) along `axis`, as zarr-python's `Array.append`: the array
    /// grows along `axis` by as many slices as the values fill (a slice holds the product of
    /// the other dimensions' extents), and the values are written there. Answers the region
    /// written.
    ///
    /// The chunks are written before the new shape: until the shape is stored, readers see
    /// the array as it was, and a failed append leaves the shape unchanged. The append starts
    /// from the stored shape (read again first, in case another handle appended), and in the
    /// process holds the array's metadata lock throughout, so appends through any handles
    /// in one process run one after another. Appends from two processes must not run at the
    /// same time (both would write the same region).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let mut series = ArrayBuilder::new(vec![0, 3], DataType::Float32, vec![100, 3])
    ///     .create(store, "/series")
    ///     .await?;
    /// series.append(0, &[1.0f32, 2.0, 3.0]).await?; // one row
    /// let region = series.append(0, &[4.0f32, 5.0, 6.0, 7.0, 8.0, 9.0]).await?; // two more
    /// assert_eq!(region.ranges(), &[1..3, 0..3]);
    /// assert_eq!(series.shape(), &[3, 3]);
    /// assert_eq!(series.read::<f32>([2..3, 0..3]).await?, [7.0, 8.0, 9.0]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Region`] for an axis the array does not have, values that are not a whole
    /// number of slices, or a zero-length dimension besides `axis` (the values then cannot
    /// tell how far to grow); [`Error::Core`] if the grown shape overflows or does not suit
    /// the chunk grid; as [`Array::resize`] if the array was removed or replaced through
    /// another handle (nothing is written then); as [`Array::write`].
    pub async fn append<T: Element>(&mut self, axis: usize, values: &[T]) -> Result<Region> {
        self.check_element::<T>()?;
        let _node = self.lock_metadata().await;
        self.adopt_stored().await?;
        let (grown, region) = self.grown_along(axis, values.len() as u64)?;
        crate::write::reshape_edge_chunks(self, &grown).await?;
        let written = grown.write_bytes(&region, as_bytes(values)).await;
        self.discard_on_error(&grown, written).await?;
        self.store_metadata(ArrayMetadata::clone(&grown.metadata))
            .await?;
        Ok(region)
    }

    /// [`Array::append`] of [`ArrayBytes`] of any data type (fixed-size or variable-length,
    /// such as strings).
    ///
    /// # Errors
    /// As [`Array::append`].
    pub async fn append_array_bytes(&mut self, axis: usize, values: ArrayBytes) -> Result<Region> {
        let elements = match &values {
            ArrayBytes::Fixed(bytes) => {
                let size = self.element_size()?;
                if !bytes.len().is_multiple_of(size) {
                    return Err(Error::Region {
                        reason: format!(
                            "appending {} bytes to array {}: not a whole number of {size}-byte \
                             elements",
                            bytes.len(),
                            self.path
                        ),
                    });
                }
                (bytes.len() / size) as u64
            }
            ArrayBytes::Variable(vlen) => vlen.len() as u64,
        };
        let _node = self.lock_metadata().await;
        self.adopt_stored().await?;
        let (grown, region) = self.grown_along(axis, elements)?;
        crate::write::reshape_edge_chunks(self, &grown).await?;
        let written = grown.write_array_bytes(&region, values).await;
        self.discard_on_error(&grown, written).await?;
        self.store_metadata(ArrayMetadata::clone(&grown.metadata))
            .await?;
        Ok(region)
    }

    /// After a failed write through `grown`, clear what it wrote outside the stored shape
    /// (best effort: the write's error is the one answered).
    async fn discard_on_error(&self, grown: &Self, written: Result<()>) -> Result<()> {
        if let Err(err) = written {
            if let Err(cleanup) = self.discard_outside(grown).await {
                tracing::warn!(
                    array = %self.path,
                    error = %cleanup,
                    "cannot clear the values of a failed append"
                );
            }
            return Err(err);
        }
        Ok(())
    }

    /// Clear what `grown`, a handle to this array with another shape
    /// ([`Array::with_shape`]), wrote outside the stored shape: chunks wholly outside it are
    /// erased and the parts of those it cuts reset to the fill value, so that no later
    /// `resize` brings those values to light. For a write through such a handle that failed
    /// and will not be completed; [`Array::append`] does this itself when it fails.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if `grown` is a handle to another array; store and chunk
    /// errors.
    pub async fn discard_outside(&self, grown: &Self) -> Result<()> {
        if !Arc::ptr_eq(&self.store, &grown.store) || self.path != grown.path {
            return Err(Error::unsupported(
                self.path.as_str(),
                format!(
                    "clearing what a handle to another array ({}) wrote",
                    grown.path
                ),
            ));
        }
        crate::write::clear_outside(grown, &self.metadata.shape).await?;
        crate::write::reshape_edge_chunks(grown, self).await
    }

    /// This array grown along `axis` by the slices `elements` values fill, and the region
    /// they fill.
    fn grown_along(&self, axis: usize, elements: u64) -> Result<(Self, Region)> {
        let shape = &self.metadata.shape;
        let refuse = |reason: String| Error::Region {
            reason: format!(
                "appending {elements} values along axis {axis} of array {} (shape {shape:?}): \
                 {reason}",
                self.path
            ),
        };
        if axis >= shape.len() {
            return Err(refuse(format!("the array has rank {}", shape.len())));
        }
        let slice = shape
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != axis)
            .try_fold(1u64, |product, (_, &n)| product.checked_mul(n))
            .ok_or_else(|| refuse("a slice holds more than 2^64 elements".into()))?;
        if slice == 0 {
            return Err(refuse(
                "another dimension has length 0, so the values cannot tell how far to grow".into(),
            ));
        }
        if !elements.is_multiple_of(slice) {
            return Err(refuse(format!(
                "not a whole number of slices of {slice} elements"
            )));
        }
        let old = shape[axis];
        let new = old
            .checked_add(elements / slice)
            .ok_or_else(|| refuse("the length would pass 2^64".into()))?;
        let mut grown_shape = shape.clone();
        grown_shape[axis] = new;
        let grown = self.with_any_shape(grown_shape)?;
        let ranges = grown
            .metadata
            .shape
            .iter()
            .enumerate()
            .map(|(d, &n)| if d == axis { old..new } else { 0..n })
            .collect();
        let region = Region::try_new(ranges)?;
        Ok((grown, region))
    }

    /// A handle to this array with another shape, held in memory only: nothing is stored,
    /// and other handles (and other readers) keep the stored shape. Write beyond the stored
    /// shape through it, then store the shape with [`Array::resize`], so that readers never
    /// see the larger shape before its data; [`Array::append`] works this way, and `zarr put
    /// --append` streams a file through such a handle.
    ///
    /// Chunks written through it outside the stored shape stay invisible until a `resize`
    /// stores a shape that covers them; nothing else erases them (a shrinking `resize`
    /// clears only what lies within the stored shape). After a write through it that
    /// failed and will not be completed, [`Array::discard_outside`] clears them.
    ///
    /// Metadata changes through it (`resize`, `append`, the attribute setters) start from
    /// the stored metadata, as through any handle: the handle then takes the stored shape.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{Array, ArrayBuilder};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let mut log = ArrayBuilder::new(vec![2], DataType::UInt32, vec![4]).create(store, "/log").await?;
    /// log.write(0..2, &[1u32, 2]).await?;
    /// let grown = log.with_shape(vec![5])?;
    /// grown.write(2..5, &[3u32, 4, 5]).await?; // not visible yet: the stored shape is [2]
    /// assert_eq!(Array::open(log.store().clone(), "/log").await?.shape(), &[2]);
    /// log.resize(vec![5]).await?;
    /// assert_eq!(log.read::<u32>(0..5).await?, [1, 2, 3, 4, 5]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Region`] for another rank than the array's; [`Error::Core`] if the shape does
    /// not suit the chunk grid.
    pub fn with_shape(&self, shape: Vec<u64>) -> Result<Self> {
        let view = self.with_any_shape(shape)?;
        let grid = &self.metadata.chunk_grid;
        let (from, to) = (&self.metadata.shape, &view.metadata.shape);
        if let Some(&(d, k)) = crate::write::reshaped_edges(grid, from, to)?.first() {
            return Err(Error::unsupported(
                self.path.as_str(),
                format!(
                    "a handle of shape {to:?}: the array's {} grid cuts its edge chunks at the \
                     array's end, so chunk {k} along dimension {d} has another shape than in \
                     the stored shape {from:?}; change the shape with `resize` or `append`, \
                     which re-encode such chunks",
                    grid.to_json()["name"].as_str().unwrap_or("chunk")
                ),
            ));
        }
        Ok(view)
    }

    /// [`Array::with_shape`] without the check for edge chunks that change shape.
    fn with_any_shape(&self, shape: Vec<u64>) -> Result<Self> {
        if shape.len() != self.metadata.shape.len() {
            return Err(Error::Region {
                reason: format!(
                    "array {} has rank {}, not {} ({shape:?})",
                    self.path,
                    self.metadata.shape.len(),
                    shape.len()
                ),
            });
        }
        let mut metadata = ArrayMetadata::clone(&self.metadata);
        metadata.shape = shape;
        metadata.validate()?;
        self.codecs.check_shape(self.path.as_str(), &metadata)?;
        let mut view = self.clone();
        view.metadata = Arc::new(metadata);
        Ok(view)
    }
}

/// The first field that defines how an array's values are stored (as opposed to its shape,
/// attributes, dimension names and extra fields, which change in place) in which `stored`
/// differs from `held`, if any, as the words "re-created with" would take. Codecs written
/// differently are asked of `same_codecs` (another writer may spell out defaults).
fn redefined(
    held: &ArrayMetadata,
    stored: &ArrayMetadata,
    same_codecs: impl FnOnce() -> bool,
) -> Option<&'static str> {
    if held.data_type != stored.data_type {
        Some("another data type")
    } else if held.chunk_grid != stored.chunk_grid {
        Some("another chunk grid")
    } else if held.chunk_key_encoding != stored.chunk_key_encoding {
        Some("another chunk key encoding")
    } else if held.fill_value != stored.fill_value {
        Some("another fill value")
    } else if held.storage_transformers != stored.storage_transformers {
        Some("other storage transformers")
    } else if held.codecs != stored.codecs && !same_codecs() {
        Some("other codecs")
    } else {
        None
    }
}
