//! The blocking API, for programs without an async runtime.
//!
//! [`Array`] and [`Group`] here wrap the async [`crate::Array`] and [`crate::Group`] and run
//! each call to completion on a runtime the crate starts once (a multi-threaded tokio
//! runtime with one worker per core, up to 8). Decoding still runs on rayon's pool, so a
//! blocking read is as parallel as an async one.
//!
//! Calling the blocking API from inside an async runtime would stall that runtime's thread;
//! it returns [`Error::BlockingInAsync`] instead. Use the async API there.
//!
//! ```
//! use std::sync::Arc;
//! use zarr_array::{ArrayBuilder, blocking};
//! use zarr_core::DataType;
//! use zarr_store::MemoryStore;
//!
//! let store = Arc::new(MemoryStore::new());
//! let builder = ArrayBuilder::new(vec![4, 4], DataType::Int32, vec![2, 2]);
//! let array = blocking::Array::create(&builder, store.clone(), "/counts")?;
//! array.write([0..4, 0..4], &(0..16).collect::<Vec<i32>>())?;
//! assert_eq!(array.read::<i32>([1..2, 1..3])?, [5, 6]);
//!
//! let group = blocking::Group::open(store, "/")?;
//! assert_eq!(group.children()?.len(), 1);
//! # Ok::<(), zarr_array::Error>(())
//! ```

use std::future::Future;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::{Map, Value};
use zarr_codecs::{ArrayBytes, CodecChain};
use zarr_core::{
    ArrayMetadata, DataType, FillValue, GroupMetadata, NodeMetadata, NodePath, Region,
};
use zarr_store::{ListableStore, ReadableStore, StoreKey, WritableStore};
use zarr_vlen::{VlenBinary, VlenOffset, VlenStrings};

use crate::element::Element;
use crate::error::{Error, Result};
use crate::region::IntoRegion;
use crate::{ArrayBuilder, ArrayOptions, Selection};

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let threads = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .clamp(1, 8);
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("zarr-blocking")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Task(format!("cannot start the blocking API's runtime: {e}")))
}

/// Run `future` to completion on the blocking API's runtime.
///
/// # Errors
/// [`Error::BlockingInAsync`] when called from inside an async runtime.
pub fn block_on<F: Future>(future: F) -> Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::BlockingInAsync);
    }
    Ok(runtime()?.block_on(future))
}

/// A blocking handle to an array (see [`crate::Array`] for what each method does).
#[derive(Debug)]
pub struct Array<S: ?Sized>(crate::Array<S>);

impl<S: ?Sized> Clone for Array<S> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<S: ?Sized> From<crate::Array<S>> for Array<S> {
    fn from(array: crate::Array<S>) -> Self {
        Self(array)
    }
}

impl<S: ?Sized> Array<S> {
    /// The async array inside.
    pub fn as_async(&self) -> &crate::Array<S> {
        &self.0
    }

    /// The async array inside, by value.
    pub fn into_async(self) -> crate::Array<S> {
        self.0
    }

    /// The path.
    pub fn path(&self) -> &NodePath {
        self.0.path()
    }

    /// The metadata.
    pub fn metadata(&self) -> &ArrayMetadata {
        self.0.metadata()
    }

    /// The shape.
    pub fn shape(&self) -> &[u64] {
        self.0.shape()
    }

    /// The attributes.
    pub fn attributes(&self) -> &Map<String, Value> {
        self.0.attributes()
    }

    /// [`crate::Array::attribute`]: attribute `key` as a `T`, `None` if there is none.
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attribute does not deserialize as a `T`.
    pub fn attribute<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        self.0.attribute(key)
    }

    /// [`crate::Array::attributes_as`]: the attributes as a whole as a `T`.
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attributes do not deserialize as a `T`.
    pub fn attributes_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        self.0.attributes_as()
    }

    /// [`crate::Array::zarr_format`].
    pub fn zarr_format(&self) -> zarr_core::v2::ZarrFormat {
        self.0.zarr_format()
    }

    /// The data type.
    pub fn data_type(&self) -> &DataType {
        self.0.data_type()
    }

    /// The fill value.
    pub fn fill_value(&self) -> &FillValue {
        self.0.fill_value()
    }

    /// [`crate::Array::fill_value_as`].
    ///
    /// # Errors
    /// As [`crate::Array::fill_value_as`].
    pub fn fill_value_as<T: Element>(&self) -> Result<T> {
        self.0.fill_value_as()
    }

    /// [`crate::Array::ndim`].
    pub fn ndim(&self) -> usize {
        self.0.ndim()
    }

    /// [`crate::Array::num_elements`].
    ///
    /// # Errors
    /// As [`crate::Array::num_elements`].
    pub fn num_elements(&self) -> Result<u64> {
        self.0.num_elements()
    }

    /// [`crate::Array::chunk_grid`].
    pub fn chunk_grid(&self) -> &zarr_core::ChunkGrid {
        self.0.chunk_grid()
    }

    /// [`crate::Array::chunk_shape`].
    pub fn chunk_shape(&self) -> Option<&[u64]> {
        self.0.chunk_shape()
    }

    /// [`crate::Array::inner_chunk_shape`].
    pub fn inner_chunk_shape(&self) -> Option<&[u64]> {
        self.0.inner_chunk_shape()
    }

    /// [`crate::Array::dimension_names`].
    pub fn dimension_names(&self) -> Option<&[Option<String>]> {
        self.0.dimension_names()
    }

    /// [`crate::Array::chunk_key_encoding`].
    pub fn chunk_key_encoding(&self) -> &zarr_core::ChunkKeyEncoding {
        self.0.chunk_key_encoding()
    }

    /// [`crate::Array::full_region`].
    pub fn full_region(&self) -> Region {
        self.0.full_region()
    }

    /// [`crate::Array::split_region`]: `region` cut into parts of whole chunks, in C order,
    /// each of at most `max_elements` elements where one chunk allows.
    ///
    /// # Errors
    /// As [`crate::Array::split_region`].
    pub fn split_region(&self, region: impl IntoRegion, max_elements: u64) -> Result<Vec<Region>> {
        self.0.split_region(region, max_elements)
    }

    /// [`crate::Array::split_region_whole_chunks`]: as `split_region`, never cutting a chunk
    /// (a shard included), for writing part by part.
    ///
    /// # Errors
    /// As [`crate::Array::split_region`].
    pub fn split_region_whole_chunks(
        &self,
        region: impl IntoRegion,
        max_elements: u64,
    ) -> Result<Vec<Region>> {
        self.0.split_region_whole_chunks(region, max_elements)
    }

    /// [`crate::Array::grid_shape`].
    ///
    /// # Errors
    /// As [`crate::Array::grid_shape`].
    pub fn grid_shape(&self) -> Result<Vec<u64>> {
        self.0.grid_shape()
    }

    /// [`crate::Array::chunk_key`].
    ///
    /// # Errors
    /// As [`crate::Array::chunk_key`].
    pub fn chunk_key(&self, chunk: &[u64]) -> Result<StoreKey> {
        self.0.chunk_key(chunk)
    }

    /// [`crate::Array::codec_chain`].
    pub fn codec_chain(&self) -> &CodecChain {
        self.0.codec_chain()
    }

    /// [`crate::Array::options`].
    pub fn options(&self) -> &ArrayOptions {
        self.0.options()
    }

    /// [`crate::Array::store`].
    pub fn store(&self) -> &Arc<S> {
        self.0.store()
    }

    /// [`crate::Array::uses_storage_transformer`].
    pub fn uses_storage_transformer(&self) -> bool {
        self.0.uses_storage_transformer()
    }
}

impl<S: ReadableStore + ?Sized> Array<S> {
    /// [`crate::Array::open`].
    ///
    /// # Errors
    /// As [`crate::Array::open`], and [`Error::BlockingInAsync`].
    pub fn open(store: Arc<S>, path: &str) -> Result<Self> {
        block_on(crate::Array::open(store, path))?.map(Self)
    }

    /// [`crate::Array::open_with`].
    ///
    /// # Errors
    /// As [`crate::Array::open_with`], and [`Error::BlockingInAsync`].
    pub fn open_with(store: Arc<S>, path: &str, options: ArrayOptions) -> Result<Self> {
        block_on(crate::Array::open_with(store, path, options))?.map(Self)
    }

    /// [`crate::Array::read`].
    ///
    /// # Errors
    /// As [`crate::Array::read`], and [`Error::BlockingInAsync`].
    pub fn read<T: Element>(&self, region: impl IntoRegion) -> Result<Vec<T>> {
        block_on(self.0.read(region))?
    }

    /// [`crate::Array::read_into`].
    ///
    /// # Errors
    /// As [`crate::Array::read_into`], and [`Error::BlockingInAsync`].
    pub fn read_into<T: Element>(&self, region: impl IntoRegion, out: &mut [T]) -> Result<()> {
        block_on(self.0.read_into(region, out))?
    }

    /// [`crate::Array::read_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::read_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_bytes(&self, region: impl IntoRegion) -> Result<Vec<u8>> {
        block_on(self.0.read_bytes(region))?
    }

    /// [`crate::Array::read_field`].
    ///
    /// # Errors
    /// As [`crate::Array::read_field`], and [`Error::BlockingInAsync`].
    pub fn read_field<T: Element>(
        &self,
        region: impl IntoRegion,
        field: &[&str],
    ) -> Result<Vec<T>> {
        block_on(self.0.read_field(region, field))?
    }

    /// [`crate::Array::read_optional`].
    ///
    /// # Errors
    /// As [`crate::Array::read_optional`], and [`Error::BlockingInAsync`].
    pub fn read_optional<T: Element>(&self, region: impl IntoRegion) -> Result<Vec<Option<T>>> {
        block_on(self.0.read_optional(region))?
    }

    /// [`crate::Array::read_optional_text`].
    ///
    /// # Errors
    /// As [`crate::Array::read_optional_text`], and [`Error::BlockingInAsync`].
    pub fn read_optional_text(&self, region: impl IntoRegion) -> Result<Vec<Option<String>>> {
        block_on(self.0.read_optional_text(region))?
    }

    /// [`crate::Array::read_optional_binary`].
    ///
    /// # Errors
    /// As [`crate::Array::read_optional_binary`], and [`Error::BlockingInAsync`].
    pub fn read_optional_binary(&self, region: impl IntoRegion) -> Result<Vec<Option<Vec<u8>>>> {
        block_on(self.0.read_optional_binary(region))?
    }

    /// [`crate::Array::read_array_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::read_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_array_bytes(&self, region: impl IntoRegion) -> Result<ArrayBytes> {
        block_on(self.0.read_array_bytes(region))?
    }

    /// [`crate::Array::read_chunk`].
    ///
    /// # Errors
    /// As [`crate::Array::read_chunk`], and [`Error::BlockingInAsync`].
    pub fn read_chunk(&self, chunk: &[u64]) -> Result<ArrayBytes> {
        block_on(self.0.read_chunk(chunk))?
    }

    /// [`crate::Array::refresh`].
    ///
    /// # Errors
    /// As [`crate::Array::refresh`], and [`Error::BlockingInAsync`].
    pub fn refresh(&mut self) -> Result<()> {
        block_on(self.0.refresh())?
    }

    /// [`crate::Array::read_bytes_into`].
    ///
    /// # Errors
    /// As [`crate::Array::read_bytes_into`], and [`Error::BlockingInAsync`].
    pub fn read_bytes_into(&self, region: impl IntoRegion, out: &mut [u8]) -> Result<()> {
        block_on(self.0.read_bytes_into(region, out))?
    }

    /// [`crate::Array::read_ndarray`].
    ///
    /// # Errors
    /// As [`crate::Array::read_ndarray`], and [`Error::BlockingInAsync`].
    #[cfg(feature = "ndarray")]
    pub fn read_ndarray<T: Element>(&self, region: impl IntoRegion) -> Result<ndarray::ArrayD<T>> {
        block_on(self.0.read_ndarray(region))?
    }

    /// [`crate::Array::read_elements`].
    ///
    /// # Errors
    /// As [`crate::Array::read_elements`], and [`Error::BlockingInAsync`].
    pub fn read_elements<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<crate::NdElement<T>>> {
        block_on(self.0.read_elements(region))?
    }

    /// [`crate::Array::read_fixed_point`].
    ///
    /// # Errors
    /// As [`crate::Array::read_fixed_point`], and [`Error::BlockingInAsync`].
    pub fn read_fixed_point(&self, region: impl IntoRegion) -> Result<Vec<f64>> {
        block_on(self.0.read_fixed_point(region))?
    }

    /// [`crate::Array::read_text`].
    ///
    /// # Errors
    /// As [`crate::Array::read_text`], and [`Error::BlockingInAsync`].
    pub fn read_text(&self, region: impl IntoRegion) -> Result<Vec<String>> {
        block_on(self.0.read_text(region))?
    }

    /// [`crate::Array::read_strings`].
    ///
    /// # Errors
    /// As [`crate::Array::read_strings`], and [`Error::BlockingInAsync`].
    pub fn read_strings<O: VlenOffset>(&self, region: impl IntoRegion) -> Result<VlenStrings<O>> {
        block_on(self.0.read_strings(region))?
    }

    /// [`crate::Array::read_binary`].
    ///
    /// # Errors
    /// As [`crate::Array::read_binary`], and [`Error::BlockingInAsync`].
    pub fn read_binary<O: VlenOffset>(&self, region: impl IntoRegion) -> Result<VlenBinary<O>> {
        block_on(self.0.read_binary(region))?
    }

    /// [`crate::Array::read_encoded_chunk`].
    ///
    /// # Errors
    /// As [`crate::Array::read_encoded_chunk`], and [`Error::BlockingInAsync`].
    pub fn read_encoded_chunk(&self, chunk: &[u64]) -> Result<Option<Bytes>> {
        block_on(self.0.read_encoded_chunk(chunk))?
    }

    /// [`crate::Array::chunk_exists`].
    ///
    /// # Errors
    /// As [`crate::Array::chunk_exists`], and [`Error::BlockingInAsync`].
    pub fn chunk_exists(&self, chunk: &[u64]) -> Result<bool> {
        block_on(self.0.chunk_exists(chunk))?
    }
}

impl<S: ReadableStore + ListableStore + ?Sized> Array<S> {
    /// [`crate::Array::stored_chunks`].
    ///
    /// # Errors
    /// As [`crate::Array::stored_chunks`], and [`Error::BlockingInAsync`].
    pub fn stored_chunks(&self) -> Result<Vec<Vec<u64>>> {
        block_on(self.0.stored_chunks())?
    }

    /// [`crate::Array::num_stored_chunks`].
    ///
    /// # Errors
    /// As [`crate::Array::num_stored_chunks`], and [`Error::BlockingInAsync`].
    pub fn num_stored_chunks(&self) -> Result<u64> {
        block_on(self.0.num_stored_chunks())?
    }
}

impl<S: ReadableStore + ?Sized + 'static> Array<S> {
    /// [`crate::Array::read_many`]: several regions at once, each read a task of its own on
    /// this API's runtime (up to `io_concurrency` in flight), returned in the order given.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, blocking};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let builder = ArrayBuilder::new(vec![6], DataType::Int16, vec![2]);
    /// let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/a")?;
    /// array.write(0..6, &[1i16, 2, 3, 4, 5, 6])?;
    /// let parts: Vec<Vec<i16>> = array.read_many([0..2, 4..6, 1..4])?;
    /// assert_eq!(parts, [vec![1, 2], vec![5, 6], vec![2, 3, 4]]);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`crate::Array::read_many`], and [`Error::BlockingInAsync`].
    pub fn read_many<T: Element, R: IntoRegion>(
        &self,
        regions: impl IntoIterator<Item = R>,
    ) -> Result<Vec<Vec<T>>> {
        block_on(self.0.read_many(regions))?
    }

    /// [`crate::Array::read_parts`], as an iterator: `parts` read in order, each a task of
    /// its own on this API's runtime, up to `ahead` of them (at least one) in flight, so
    /// that the next parts are fetched and decoded while the caller works on one. The
    /// memory held is at most `ahead` parts, plus the one the caller holds. Dropping the
    /// iterator cancels the reads in flight.
    ///
    /// With [`crate::Array::split_region`], this goes through an array larger than memory:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, blocking};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let builder = ArrayBuilder::new(vec![1000], DataType::Int32, vec![100]);
    /// let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/a")?;
    /// array.write(.., &(0..1000).collect::<Vec<i32>>())?;
    /// let mut largest = i32::MIN;
    /// for part in array.read_parts::<i32>(array.split_region(.., 300)?, 2)? {
    ///     let (region, values) = part?;
    ///     assert_eq!(values.len() as u64, region.num_elements()?);
    ///     largest = largest.max(values.into_iter().max().unwrap());
    /// }
    /// assert_eq!(largest, 999);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// # Errors
    /// At once: [`Error::BlockingInAsync`] inside an async runtime, [`Error::ElementType`]
    /// if `T` does not match the data type, region errors for a part outside the array. From
    /// the iterator: each part's read errors (as [`crate::Array::read`]), in that part's
    /// place (the other parts are still read), and [`Error::BlockingInAsync`] if the
    /// iterator is advanced inside an async runtime.
    pub fn read_parts<T: Element>(
        &self,
        parts: impl IntoIterator<Item = Region>,
        ahead: usize,
    ) -> Result<ReadParts<S, T>> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::BlockingInAsync);
        }
        let parts = self.0.checked_parts::<T>(parts)?;
        Ok(ReadParts {
            array: self.0.clone(),
            runtime: runtime()?.handle().clone(),
            queued: parts.into_iter(),
            in_flight: std::collections::VecDeque::new(),
            ahead: ahead.max(1),
        })
    }

    /// [`crate::Array::read_selection`]: an orthogonal selection (steps, listed indices,
    /// masks), in C order over its shape.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection, blocking};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let builder = ArrayBuilder::new(vec![8], DataType::Int16, vec![3]);
    /// let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/a")?;
    /// array.write(.., &[0i16, 1, 2, 3, 4, 5, 6, 7])?;
    /// let odd = Selection::new([AxisSelection::step(1.., 2)]);
    /// assert_eq!(array.read_selection::<i16>(&odd)?, [1, 3, 5, 7]);
    /// assert_eq!(array.read_points::<i16, _>([[6u64], [2]])?, [6, 2]);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`crate::Array::read_selection`], and [`Error::BlockingInAsync`].
    pub fn read_selection<T: Element>(&self, selection: &Selection) -> Result<Vec<T>> {
        block_on(self.0.read_selection(selection))?
    }

    /// [`crate::Array::read_selection_ndarray`] (feature `ndarray`).
    ///
    /// # Errors
    /// As [`crate::Array::read_selection_ndarray`], and [`Error::BlockingInAsync`].
    #[cfg(feature = "ndarray")]
    pub fn read_selection_ndarray<T: Element>(
        &self,
        selection: &Selection,
    ) -> Result<ndarray::ArrayD<T>> {
        block_on(self.0.read_selection_ndarray(selection))?
    }

    /// [`crate::Array::read_selection_into`]: into a caller's buffer.
    ///
    /// # Errors
    /// As [`crate::Array::read_selection_into`], and [`Error::BlockingInAsync`].
    pub fn read_selection_into<T: Element>(
        &self,
        selection: &Selection,
        out: &mut [T],
    ) -> Result<()> {
        block_on(self.0.read_selection_into(selection, out))?
    }

    /// [`crate::Array::read_points_into`]: into a caller's buffer.
    ///
    /// # Errors
    /// As [`crate::Array::read_points_into`], and [`Error::BlockingInAsync`].
    pub fn read_points_into<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        out: &mut [T],
    ) -> Result<()> {
        block_on(self.0.read_points_into(points, out))?
    }

    /// [`crate::Array::read_selection_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::read_selection_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_selection_bytes(&self, selection: &Selection) -> Result<Vec<u8>> {
        block_on(self.0.read_selection_bytes(selection))?
    }

    /// [`crate::Array::read_points`]: the elements at `points`, in their order.
    ///
    /// # Errors
    /// As [`crate::Array::read_points`], and [`Error::BlockingInAsync`].
    pub fn read_points<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<T>> {
        block_on(self.0.read_points(points))?
    }

    /// [`crate::Array::read_points_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::read_points_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_points_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<u8>> {
        block_on(self.0.read_points_bytes(points))?
    }

    /// [`crate::Array::read_selection_array_bytes`]: an orthogonal selection of any data
    /// type, variable-length data in Arrow layout.
    ///
    /// # Errors
    /// As [`crate::Array::read_selection_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_selection_array_bytes(&self, selection: &Selection) -> Result<ArrayBytes> {
        block_on(self.0.read_selection_array_bytes(selection))?
    }

    /// [`crate::Array::read_selection_text`]: an orthogonal selection of a `string` array.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection, blocking};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let builder = ArrayBuilder::new(vec![4], DataType::String, vec![3]);
    /// let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/s")?;
    /// array.write_points_text([[3u64], [1]], &["three", "one"])?;
    /// let odd = Selection::new([AxisSelection::step(1.., 2)]);
    /// assert_eq!(array.read_selection_text(&odd)?, ["one", "three"]);
    /// assert_eq!(array.read_points_text([[3u64], [0]])?, ["three", ""]);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`crate::Array::read_selection_text`], and [`Error::BlockingInAsync`].
    pub fn read_selection_text(&self, selection: &Selection) -> Result<Vec<String>> {
        block_on(self.0.read_selection_text(selection))?
    }

    /// [`crate::Array::read_points_array_bytes`]: points of an array of any data type.
    ///
    /// # Errors
    /// As [`crate::Array::read_points_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_points_array_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<ArrayBytes> {
        block_on(self.0.read_points_array_bytes(points))?
    }

    /// [`crate::Array::read_points_text`]: points of a `string` array.
    ///
    /// # Errors
    /// As [`crate::Array::read_points_text`], and [`Error::BlockingInAsync`].
    pub fn read_points_text<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<String>> {
        block_on(self.0.read_points_text(points))?
    }

    /// [`crate::Array::read_blocks`]: whole chunks (shards) by grid index.
    ///
    /// # Errors
    /// As [`crate::Array::read_blocks`], and [`Error::BlockingInAsync`].
    pub fn read_blocks<T: Element>(&self, blocks: impl IntoRegion) -> Result<Vec<T>> {
        block_on(self.0.read_blocks(blocks))?
    }
}

impl<S: WritableStore + ?Sized> Array<S> {
    /// [`ArrayBuilder::create`].
    ///
    /// # Errors
    /// As [`ArrayBuilder::create`], and [`Error::BlockingInAsync`].
    pub fn create(builder: &ArrayBuilder, store: Arc<S>, path: &str) -> Result<Self> {
        block_on(builder.create(store, path))?.map(Self)
    }

    /// [`crate::Array::write`].
    ///
    /// # Errors
    /// As [`crate::Array::write`], and [`Error::BlockingInAsync`].
    pub fn write<T: Element>(&self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        block_on(self.0.write(region, values))?
    }

    /// [`crate::Array::downsample_from`].
    ///
    /// # Errors
    /// As [`crate::Array::downsample_from`], and [`Error::BlockingInAsync`].
    pub fn downsample_from<R: ReadableStore + ?Sized>(
        &self,
        source: &Array<R>,
        factors: &[u64],
        reduction: crate::Reduction,
    ) -> Result<()> {
        block_on(self.0.downsample_from(&source.0, factors, reduction))?
    }

    /// [`crate::Array::write_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::write_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_bytes(&self, region: impl IntoRegion, values: &[u8]) -> Result<()> {
        block_on(self.0.write_bytes(region, values))?
    }

    /// [`crate::Array::write_optional`].
    ///
    /// # Errors
    /// As [`crate::Array::write_optional`], and [`Error::BlockingInAsync`].
    pub fn write_optional<T: Element>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        block_on(self.0.write_optional(region, values))?
    }

    /// [`crate::Array::write_optional_text`].
    ///
    /// # Errors
    /// As [`crate::Array::write_optional_text`], and [`Error::BlockingInAsync`].
    pub fn write_optional_text<T: AsRef<str>>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        block_on(self.0.write_optional_text(region, values))?
    }

    /// [`crate::Array::write_optional_binary`].
    ///
    /// # Errors
    /// As [`crate::Array::write_optional_binary`], and [`Error::BlockingInAsync`].
    pub fn write_optional_binary<T: AsRef<[u8]>>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        block_on(self.0.write_optional_binary(region, values))?
    }

    /// [`crate::Array::write_array_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::write_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_array_bytes(&self, region: impl IntoRegion, values: ArrayBytes) -> Result<()> {
        block_on(self.0.write_array_bytes(region, values))?
    }

    /// [`crate::Array::write_chunk`].
    ///
    /// # Errors
    /// As [`crate::Array::write_chunk`], and [`Error::BlockingInAsync`].
    pub fn write_chunk(&self, chunk: &[u64], values: ArrayBytes) -> Result<()> {
        block_on(self.0.write_chunk(chunk, values))?
    }

    /// [`crate::Array::write_ndarray`].
    ///
    /// # Errors
    /// As [`crate::Array::write_ndarray`], and [`Error::BlockingInAsync`].
    #[cfg(feature = "ndarray")]
    pub fn write_ndarray<T: Element, D: ndarray::Dimension>(
        &self,
        origin: &[u64],
        values: ndarray::ArrayView<'_, T, D>,
    ) -> Result<()> {
        block_on(self.0.write_ndarray(origin, values))?
    }

    /// [`crate::Array::write_elements`].
    ///
    /// # Errors
    /// As [`crate::Array::write_elements`], and [`Error::BlockingInAsync`].
    pub fn write_elements<T: Element>(
        &self,
        region: impl IntoRegion,
        values: &[crate::NdElement<T>],
    ) -> Result<()> {
        block_on(self.0.write_elements(region, values))?
    }

    /// [`crate::Array::write_fixed_point`].
    ///
    /// # Errors
    /// As [`crate::Array::write_fixed_point`], and [`Error::BlockingInAsync`].
    pub fn write_fixed_point(&self, region: impl IntoRegion, values: &[f64]) -> Result<()> {
        block_on(self.0.write_fixed_point(region, values))?
    }

    /// [`crate::Array::write_text`].
    ///
    /// # Errors
    /// As [`crate::Array::write_text`], and [`Error::BlockingInAsync`].
    pub fn write_text<T: AsRef<str>>(&self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        block_on(self.0.write_text(region, values))?
    }

    /// [`crate::Array::write_strings`].
    ///
    /// # Errors
    /// As [`crate::Array::write_strings`], and [`Error::BlockingInAsync`].
    pub fn write_strings<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
        values: &VlenStrings<O>,
    ) -> Result<()> {
        block_on(self.0.write_strings(region, values))?
    }

    /// [`crate::Array::write_binary`].
    ///
    /// # Errors
    /// As [`crate::Array::write_binary`], and [`Error::BlockingInAsync`].
    pub fn write_binary<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
        values: &VlenBinary<O>,
    ) -> Result<()> {
        block_on(self.0.write_binary(region, values))?
    }

    /// [`crate::Array::erase_chunk`].
    ///
    /// # Errors
    /// As [`crate::Array::erase_chunk`], and [`Error::BlockingInAsync`].
    pub fn erase_chunk(&self, chunk: &[u64]) -> Result<()> {
        block_on(self.0.erase_chunk(chunk))?
    }

    /// [`crate::Array::resize`].
    ///
    /// # Errors
    /// As [`crate::Array::resize`], and [`Error::BlockingInAsync`].
    pub fn resize(&mut self, shape: Vec<u64>) -> Result<()> {
        block_on(self.0.resize(shape))?
    }

    /// [`crate::Array::with_shape`]: a handle with another shape, not stored.
    ///
    /// # Errors
    /// As [`crate::Array::with_shape`].
    pub fn with_shape(&self, shape: Vec<u64>) -> Result<Self> {
        Ok(Self(self.0.with_shape(shape)?))
    }

    /// [`crate::Array::discard_outside`].
    ///
    /// # Errors
    /// As [`crate::Array::discard_outside`], and [`Error::BlockingInAsync`].
    pub fn discard_outside(&self, grown: &Self) -> Result<()> {
        block_on(self.0.discard_outside(&grown.0))?
    }

    /// [`crate::Array::append`].
    ///
    /// # Errors
    /// As [`crate::Array::append`], and [`Error::BlockingInAsync`].
    pub fn append<T: Element>(&mut self, axis: usize, values: &[T]) -> Result<Region> {
        block_on(self.0.append(axis, values))?
    }

    /// [`crate::Array::append_array_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::append`], and [`Error::BlockingInAsync`].
    pub fn append_array_bytes(&mut self, axis: usize, values: ArrayBytes) -> Result<Region> {
        block_on(self.0.append_array_bytes(axis, values))?
    }

    /// [`crate::Array::set_attributes`].
    ///
    /// # Errors
    /// As [`crate::Array::set_attributes`], and [`Error::BlockingInAsync`].
    pub fn set_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        block_on(self.0.set_attributes(attributes))?
    }

    /// [`crate::Array::update_attributes`].
    ///
    /// # Errors
    /// As [`crate::Array::update_attributes`], and [`Error::BlockingInAsync`].
    pub fn update_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        block_on(self.0.update_attributes(attributes))?
    }

    /// [`crate::Array::set_attribute`]: set attribute `key` to `value`, keeping the others.
    ///
    /// # Errors
    /// As [`crate::Array::set_attribute`], and [`Error::BlockingInAsync`].
    pub fn set_attribute<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<()> {
        block_on(self.0.set_attribute(key, value))?
    }

    /// [`crate::Array::shard_writer`]: write the array in regions smaller than its shards,
    /// storing each shard once.
    pub fn shard_writer(&self) -> ShardWriter<'_, S> {
        ShardWriter(self.0.shard_writer())
    }
}

/// A blocking [`crate::ShardWriter`] (see there for what each method does): made by
/// [`Array::shard_writer`].
///
/// ```
/// use std::sync::Arc;
/// use zarr_array::{ArrayBuilder, blocking};
/// use zarr_core::DataType;
/// use zarr_store::MemoryStore;
///
/// let builder = ArrayBuilder::new(vec![8, 4], DataType::Int32, vec![4, 4]).sharding(vec![1, 4]);
/// let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/a")?;
/// let mut writer = array.shard_writer();
/// for row in 0..8 {
///     writer.write([row..row + 1, 0..4], &[row as i32; 4])?;
/// }
/// writer.finish()?;
/// assert_eq!(array.read::<i32>([7..8, 0..4])?, [7; 4]);
/// # Ok::<(), zarr_array::Error>(())
/// ```
#[derive(Debug)]
pub struct ShardWriter<'a, S: WritableStore + ?Sized>(crate::ShardWriter<'a, S>);

impl<S: WritableStore + ?Sized> ShardWriter<'_, S> {
    /// [`crate::ShardWriter::pending_shards`].
    pub fn pending_shards(&self) -> usize {
        self.0.pending_shards()
    }

    /// [`crate::ShardWriter::pending_bytes`].
    pub fn pending_bytes(&self) -> u64 {
        self.0.pending_bytes()
    }

    /// [`crate::ShardWriter::is_buffering`].
    pub fn is_buffering(&self) -> bool {
        self.0.is_buffering()
    }

    /// [`crate::ShardWriter::write`].
    ///
    /// # Errors
    /// As [`crate::ShardWriter::write`], and [`Error::BlockingInAsync`].
    pub fn write<T: Element>(&mut self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        block_on(self.0.write(region, values))?
    }

    /// [`crate::ShardWriter::write_bytes`].
    ///
    /// # Errors
    /// As [`crate::ShardWriter::write_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_bytes(&mut self, region: impl IntoRegion, values: &[u8]) -> Result<()> {
        block_on(self.0.write_bytes(region, values))?
    }

    /// [`crate::ShardWriter::write_array_bytes`].
    ///
    /// # Errors
    /// As [`crate::ShardWriter::write_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_array_bytes(&mut self, region: impl IntoRegion, values: ArrayBytes) -> Result<()> {
        block_on(self.0.write_array_bytes(region, values))?
    }

    /// [`crate::ShardWriter::write_text`].
    ///
    /// # Errors
    /// As [`crate::ShardWriter::write_text`], and [`Error::BlockingInAsync`].
    pub fn write_text<T: AsRef<str>>(
        &mut self,
        region: impl IntoRegion,
        values: &[T],
    ) -> Result<()> {
        block_on(self.0.write_text(region, values))?
    }

    /// [`crate::ShardWriter::finish`].
    ///
    /// # Errors
    /// As [`crate::ShardWriter::finish`], and [`Error::BlockingInAsync`] (the shards written
    /// in part are then not stored).
    pub fn finish(self) -> Result<()> {
        block_on(self.0.finish())?
    }
}

impl<S: WritableStore + ?Sized + 'static> Array<S> {
    /// A writer of parts ([`crate::Array::write_parts`] for a caller that computes the
    /// parts one after the other): each [`PartWriter::write`] hands its part to a task on
    /// this API's runtime and returns while up to `ahead` writes (at least one) are in
    /// flight, waiting for any one to finish otherwise, so that the next part is computed while
    /// the last ones are encoded and stored. [`PartWriter::finish`] waits for them all and
    /// says whether every write succeeded.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, blocking};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let builder = ArrayBuilder::new(vec![1000, 10], DataType::Float64, vec![100, 10]);
    /// let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/a")?;
    /// let mut writer = array.part_writer::<f64>(2)?;
    /// for region in array.split_region_whole_chunks(.., 2_500)? {
    ///     let first = region.ranges()[0].start;
    ///     let values = (0..region.num_elements()?).map(|i| (first * 10 + i) as f64).collect();
    ///     writer.write(region, values)?;
    /// }
    /// writer.finish()?;
    /// assert_eq!(array.read::<f64>([999..1000, 8..10])?, [9998.0, 9999.0]);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::BlockingInAsync`] inside an async runtime; [`Error::ElementType`] if `T`
    /// does not match the data type.
    pub fn part_writer<T: Element>(&self, ahead: usize) -> Result<PartWriter<S, T>> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::BlockingInAsync);
        }
        self.0.check_element::<T>()?;
        Ok(PartWriter {
            array: self.0.clone(),
            runtime: runtime()?.handle().clone(),
            in_flight: std::collections::VecDeque::new(),
            ahead: ahead.max(1),
            _values: std::marker::PhantomData,
        })
    }

    /// [`crate::Array::write_selection`]: values in C order over an orthogonal selection.
    ///
    /// # Errors
    /// As [`crate::Array::write_selection`], and [`Error::BlockingInAsync`].
    pub fn write_selection<T: Element>(&self, selection: &Selection, values: &[T]) -> Result<()> {
        block_on(self.0.write_selection(selection, values))?
    }

    /// [`crate::Array::write_selection_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::write_selection_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_selection_bytes(&self, selection: &Selection, values: &[u8]) -> Result<()> {
        block_on(self.0.write_selection_bytes(selection, values))?
    }

    /// [`crate::Array::write_points`]: one value per point, in their order.
    ///
    /// # Errors
    /// As [`crate::Array::write_points`], and [`Error::BlockingInAsync`].
    pub fn write_points<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: &[T],
    ) -> Result<()> {
        block_on(self.0.write_points(points, values))?
    }

    /// [`crate::Array::write_points_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::write_points_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_points_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: &[u8],
    ) -> Result<()> {
        block_on(self.0.write_points_bytes(points, values))?
    }

    /// [`crate::Array::write_selection_array_bytes`]: values of any data type into an
    /// orthogonal selection, variable-length values in Arrow layout.
    ///
    /// # Errors
    /// As [`crate::Array::write_selection_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_selection_array_bytes(
        &self,
        selection: &Selection,
        values: ArrayBytes,
    ) -> Result<()> {
        block_on(self.0.write_selection_array_bytes(selection, values))?
    }

    /// [`crate::Array::write_selection_text`]: strings into an orthogonal selection of a
    /// `string` array.
    ///
    /// # Errors
    /// As [`crate::Array::write_selection_text`], and [`Error::BlockingInAsync`].
    pub fn write_selection_text<T: AsRef<str>>(
        &self,
        selection: &Selection,
        values: &[T],
    ) -> Result<()> {
        block_on(self.0.write_selection_text(selection, values))?
    }

    /// [`crate::Array::write_points_array_bytes`]: one value of any data type per point.
    ///
    /// # Errors
    /// As [`crate::Array::write_points_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_points_array_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: ArrayBytes,
    ) -> Result<()> {
        block_on(self.0.write_points_array_bytes(points, values))?
    }

    /// [`crate::Array::write_points_text`]: one string per point of a `string` array.
    ///
    /// # Errors
    /// As [`crate::Array::write_points_text`], and [`Error::BlockingInAsync`].
    pub fn write_points_text<T: AsRef<str>, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: &[T],
    ) -> Result<()> {
        block_on(self.0.write_points_text(points, values))?
    }
}

impl<S: ReadableStore + ?Sized> Array<S> {
    /// [`crate::Array::copy_to`]: every value into `dest` (same shape and data type, any
    /// layout), in parts of whole chunks of `dest` of at most `max_elements`.
    ///
    /// # Errors
    /// As [`crate::Array::copy_to`], and [`Error::BlockingInAsync`].
    pub fn copy_to<D: WritableStore + ?Sized>(
        &self,
        dest: &Array<D>,
        max_elements: u64,
    ) -> Result<()> {
        block_on(self.0.copy_to(&dest.0, max_elements))?
    }
}

/// The iterator of [`Array::read_parts`]: `(region, values)` of each part, in order.
pub struct ReadParts<S: ?Sized, T> {
    array: crate::Array<S>,
    runtime: tokio::runtime::Handle,
    queued: std::vec::IntoIter<Region>,
    in_flight: std::collections::VecDeque<(Region, crate::array::AbortOnDrop<Result<Vec<T>>>)>,
    ahead: usize,
}

impl<S: ?Sized, T> std::fmt::Debug for ReadParts<S, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadParts")
            .field("array", &self.array.path())
            .field("queued", &self.queued.len())
            .field("in_flight", &self.in_flight.len())
            .field("ahead", &self.ahead)
            .finish()
    }
}

impl<S: ReadableStore + ?Sized + 'static, T: Element> ReadParts<S, T> {
    /// Start reads until `ahead` are in flight or none is left.
    fn fill(&mut self) {
        while self.in_flight.len() < self.ahead {
            let Some(part) = self.queued.next() else {
                return;
            };
            let array = self.array.clone();
            let region = part.clone();
            let task = self
                .runtime
                .spawn(async move { array.read::<T>(&region).await });
            self.in_flight
                .push_back((part, crate::array::AbortOnDrop(task)));
        }
    }
}

impl<S: ReadableStore + ?Sized + 'static, T: Element> Iterator for ReadParts<S, T> {
    type Item = Result<(Region, Vec<T>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.fill();
        let (part, task) = self.in_flight.pop_front()?;
        let values = block_on(task.join())
            .and_then(|joined| joined)
            .and_then(|read| read);
        // Keep `ahead` reads going while the caller works on this part.
        self.fill();
        Some(values.map(|values| (part, values)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.queued.len() + self.in_flight.len();
        (left, Some(left))
    }
}

impl<S: ReadableStore + ?Sized + 'static, T: Element> ExactSizeIterator for ReadParts<S, T> {}

/// The writer of [`Array::part_writer`]: parts written by tasks on the blocking API's
/// runtime, a bounded number at a time.
///
/// Parts should not overlap (where two do, which of them is written last is not defined).
/// Dropping the writer without [`PartWriter::finish`] still waits for the writes in flight
/// (so no part handed over is silently abandoned), but their errors are then lost.
pub struct PartWriter<S: WritableStore + ?Sized + 'static, T> {
    array: crate::Array<S>,
    runtime: tokio::runtime::Handle,
    in_flight: std::collections::VecDeque<tokio::task::JoinHandle<Result<()>>>,
    ahead: usize,
    _values: std::marker::PhantomData<fn(T)>,
}

impl<S: WritableStore + ?Sized + 'static, T> std::fmt::Debug for PartWriter<S, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartWriter")
            .field("array", &self.array.path())
            .field("in_flight", &self.in_flight.len())
            .field("ahead", &self.ahead)
            .finish()
    }
}

/// Wait for a write task: its result, its panic resumed here, [`Error::Task`] if it was
/// cancelled (its runtime shut down).
fn join_write(task: tokio::task::JoinHandle<Result<()>>) -> Result<()> {
    write_result(block_on(task)?)
}

/// What a write task's handle gave: its result, its panic resumed here, [`Error::Task`] if
/// it was cancelled.
fn write_result(joined: std::result::Result<Result<()>, tokio::task::JoinError>) -> Result<()> {
    match joined {
        Ok(written) => written,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => Err(Error::Task(error.to_string())),
    }
}

impl<S: WritableStore + ?Sized + 'static, T: Element> PartWriter<S, T> {
    /// Hand `values` (C order) over to be written into `region`, once fewer than `ahead`
    /// writes are in flight (waiting for whichever finishes first otherwise).
    ///
    /// # Errors
    /// Before anything else, in which case this part is not written: region errors,
    /// [`Error::BufferSize`] if `values` does not hold the region, [`Error::BlockingInAsync`]
    /// inside an async runtime, and the error of an earlier part's write that has
    /// finished (as [`crate::Array::write`]; each earlier error is returned once, the
    /// oldest part first among those found finished). The writer stays usable after an
    /// error.
    pub fn write(&mut self, region: impl IntoRegion, values: Vec<T>) -> Result<()> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::BlockingInAsync);
        }
        let region = region.into_region_of(self.array.shape())?;
        region.check_within(self.array.shape())?;
        let elements = region.num_elements()?;
        if values.len() as u64 != elements {
            return Err(Error::BufferSize {
                expected: elements,
                found: values.len() as u64,
            });
        }
        // Report the writes that have finished, oldest part first, then wait for room: for
        // any one write to finish, so that a slow part does not hold up the others.
        loop {
            if let Some(i) = self.in_flight.iter().position(|task| task.is_finished()) {
                if let Some(task) = self.in_flight.remove(i) {
                    join_write(task)?;
                }
                continue;
            }
            if self.in_flight.len() < self.ahead {
                break;
            }
            let (joined, i, _) = block_on(futures::future::select_all(self.in_flight.iter_mut()))?;
            self.in_flight.remove(i);
            write_result(joined)?;
        }
        let array = self.array.clone();
        let task = self
            .runtime
            .spawn(async move { array.write(&region, &values).await });
        self.in_flight.push_back(task);
        Ok(())
    }

    /// The writes handed over and not yet reported.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Wait for every write in flight.
    ///
    /// # Errors
    /// The first error among the writes not yet reported (the others are still waited
    /// for); [`Error::BlockingInAsync`] inside an async runtime.
    pub fn finish(mut self) -> Result<()> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::BlockingInAsync);
        }
        let mut first = Ok(());
        while let Some(task) = self.in_flight.pop_front() {
            let written = join_write(task);
            if first.is_ok() {
                first = written;
            }
        }
        first
    }
}

impl<S: WritableStore + ?Sized + 'static, T> Drop for PartWriter<S, T> {
    fn drop(&mut self) {
        for task in self.in_flight.drain(..) {
            // Inside an async runtime the writes go on in the background.
            if tokio::runtime::Handle::try_current().is_err() {
                let _ = runtime().map(|runtime| runtime.block_on(task));
            }
        }
    }
}

/// A blocking handle to an array with a cache of decoded chunks (see
/// [`crate::CachedArray`]). Clones share the cache.
///
/// ```
/// use std::sync::Arc;
/// use zarr_array::{ArrayBuilder, blocking};
/// use zarr_core::DataType;
/// use zarr_store::MemoryStore;
///
/// let builder = ArrayBuilder::new(vec![6], DataType::Int32, vec![3]);
/// let array = blocking::Array::create(&builder, Arc::new(MemoryStore::new()), "/a")?;
/// let cached = blocking::CachedArray::new(array, 1 << 20);
/// cached.write(.., &[1, 2, 3, 4, 5, 6])?;
/// assert_eq!(cached.read::<i32>(2..4)?, [3, 4]);
/// assert_eq!(cached.read::<i32>(3..6)?, [4, 5, 6]);
/// assert_eq!(cached.stats().hits, 1);
/// # Ok::<(), zarr_array::Error>(())
/// ```
#[derive(Debug)]
pub struct CachedArray<S: ?Sized>(crate::CachedArray<S>);

impl<S: ?Sized> Clone for CachedArray<S> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<S: ?Sized> From<crate::CachedArray<S>> for CachedArray<S> {
    fn from(array: crate::CachedArray<S>) -> Self {
        Self(array)
    }
}

impl<S: ?Sized> CachedArray<S> {
    /// [`crate::CachedArray::new`].
    pub fn new(array: Array<S>, capacity: u64) -> Self {
        Self(crate::CachedArray::new(array.0, capacity))
    }

    /// The async cached array inside.
    pub fn as_async(&self) -> &crate::CachedArray<S> {
        &self.0
    }

    /// The async cached array inside, by value.
    pub fn into_async(self) -> crate::CachedArray<S> {
        self.0
    }

    /// [`crate::CachedArray::stats`].
    pub fn stats(&self) -> crate::ChunkCacheStats {
        self.0.stats()
    }

    /// [`crate::CachedArray::clear`].
    pub fn clear(&self) {
        self.0.clear();
    }

    /// [`crate::CachedArray::invalidate`].
    ///
    /// # Errors
    /// As [`crate::CachedArray::invalidate`].
    pub fn invalidate(&self, region: impl IntoRegion) -> Result<()> {
        self.0.invalidate(region)
    }
}

impl<S: ReadableStore + ?Sized> CachedArray<S> {
    /// [`crate::CachedArray::read`].
    ///
    /// # Errors
    /// As [`crate::Array::read`], and [`Error::BlockingInAsync`].
    pub fn read<T: Element>(&self, region: impl IntoRegion) -> Result<Vec<T>> {
        block_on(self.0.read(region))?
    }

    /// [`crate::CachedArray::read_into`].
    ///
    /// # Errors
    /// As [`crate::Array::read_into`], and [`Error::BlockingInAsync`].
    pub fn read_into<T: Element>(&self, region: impl IntoRegion, out: &mut [T]) -> Result<()> {
        block_on(self.0.read_into(region, out))?
    }

    /// [`crate::CachedArray::read_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::read_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_bytes(&self, region: impl IntoRegion) -> Result<Vec<u8>> {
        block_on(self.0.read_bytes(region))?
    }

    /// [`crate::CachedArray::read_array_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::read_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn read_array_bytes(&self, region: impl IntoRegion) -> Result<ArrayBytes> {
        block_on(self.0.read_array_bytes(region))?
    }

    /// [`crate::CachedArray::read_text`].
    ///
    /// # Errors
    /// As [`crate::Array::read_text`], and [`Error::BlockingInAsync`].
    pub fn read_text(&self, region: impl IntoRegion) -> Result<Vec<String>> {
        block_on(self.0.read_text(region))?
    }

    /// [`crate::CachedArray::read_binary`].
    ///
    /// # Errors
    /// As [`crate::Array::read_binary`], and [`Error::BlockingInAsync`].
    pub fn read_binary<O: VlenOffset>(&self, region: impl IntoRegion) -> Result<VlenBinary<O>> {
        block_on(self.0.read_binary(region))?
    }

    /// [`crate::CachedArray::read_field`].
    ///
    /// # Errors
    /// As [`crate::Array::read_field`], and [`Error::BlockingInAsync`].
    pub fn read_field<T: Element>(
        &self,
        region: impl IntoRegion,
        field: &[&str],
    ) -> Result<Vec<T>> {
        block_on(self.0.read_field(region, field))?
    }

    /// [`crate::CachedArray::read_optional`].
    ///
    /// # Errors
    /// As [`crate::Array::read_optional`], and [`Error::BlockingInAsync`].
    pub fn read_optional<T: Element>(&self, region: impl IntoRegion) -> Result<Vec<Option<T>>> {
        block_on(self.0.read_optional(region))?
    }

    /// [`crate::CachedArray::read_elements`].
    ///
    /// # Errors
    /// As [`crate::Array::read_elements`], and [`Error::BlockingInAsync`].
    pub fn read_elements<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<crate::NdElement<T>>> {
        block_on(self.0.read_elements(region))?
    }

    /// [`crate::CachedArray::read_fixed_point`].
    ///
    /// # Errors
    /// As [`crate::Array::read_fixed_point`], and [`Error::BlockingInAsync`].
    pub fn read_fixed_point(&self, region: impl IntoRegion) -> Result<Vec<f64>> {
        block_on(self.0.read_fixed_point(region))?
    }

    /// [`crate::CachedArray::read_selection`].
    ///
    /// # Errors
    /// As [`crate::CachedArray::read_selection`], and [`Error::BlockingInAsync`].
    pub fn read_selection<T: Element>(&self, selection: &crate::Selection) -> Result<Vec<T>> {
        block_on(self.0.read_selection(selection))?
    }

    /// [`crate::CachedArray::read_points`].
    ///
    /// # Errors
    /// As [`crate::CachedArray::read_points`], and [`Error::BlockingInAsync`].
    pub fn read_points<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<T>> {
        block_on(self.0.read_points(points))?
    }

    /// [`crate::CachedArray::read_optional_text`].
    ///
    /// # Errors
    /// As [`crate::Array::read_optional_text`], and [`Error::BlockingInAsync`].
    pub fn read_optional_text(&self, region: impl IntoRegion) -> Result<Vec<Option<String>>> {
        block_on(self.0.read_optional_text(region))?
    }
}

impl<S: WritableStore + ?Sized> CachedArray<S> {
    /// [`crate::CachedArray::write_optional`].
    ///
    /// # Errors
    /// As [`crate::Array::write_optional`], and [`Error::BlockingInAsync`].
    pub fn write_optional<T: Element>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        block_on(self.0.write_optional(region, values))?
    }

    /// [`crate::CachedArray::write`].
    ///
    /// # Errors
    /// As [`crate::Array::write`], and [`Error::BlockingInAsync`].
    pub fn write<T: Element>(&self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        block_on(self.0.write(region, values))?
    }

    /// [`crate::CachedArray::write_array_bytes`].
    ///
    /// # Errors
    /// As [`crate::Array::write_array_bytes`], and [`Error::BlockingInAsync`].
    pub fn write_array_bytes(&self, region: impl IntoRegion, values: ArrayBytes) -> Result<()> {
        block_on(self.0.write_array_bytes(region, values))?
    }

    /// [`crate::CachedArray::write_text`].
    ///
    /// # Errors
    /// As [`crate::Array::write_text`], and [`Error::BlockingInAsync`].
    pub fn write_text<T: AsRef<str>>(&self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        block_on(self.0.write_text(region, values))?
    }
}

/// A blocking handle to a group (see [`crate::Group`]).
#[derive(Debug)]
pub struct Group<S: ?Sized>(crate::Group<S>);

impl<S: ?Sized> Clone for Group<S> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<S: ?Sized> Group<S> {
    /// The async group inside.
    pub fn as_async(&self) -> &crate::Group<S> {
        &self.0
    }

    /// The path.
    pub fn path(&self) -> &NodePath {
        self.0.path()
    }

    /// The attributes.
    pub fn attributes(&self) -> &Map<String, Value> {
        self.0.attributes()
    }

    /// [`crate::Array::attribute`]: attribute `key` as a `T`, `None` if there is none.
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attribute does not deserialize as a `T`.
    pub fn attribute<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        self.0.attribute(key)
    }

    /// [`crate::Array::attributes_as`]: the attributes as a whole as a `T`.
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attributes do not deserialize as a `T`.
    pub fn attributes_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        self.0.attributes_as()
    }

    /// [`crate::Group::zarr_format`].
    pub fn zarr_format(&self) -> zarr_core::v2::ZarrFormat {
        self.0.zarr_format()
    }

    /// The async group inside, by value.
    pub fn into_async(self) -> crate::Group<S> {
        self.0
    }

    /// The metadata.
    pub fn metadata(&self) -> &GroupMetadata {
        self.0.metadata()
    }

    /// The store.
    pub fn store(&self) -> &Arc<S> {
        self.0.store()
    }
}

impl<S: ?Sized> From<crate::Group<S>> for Group<S> {
    fn from(group: crate::Group<S>) -> Self {
        Self(group)
    }
}

/// A node of the hierarchy, with blocking handles: an array or a group.
#[derive(Debug)]
pub enum Node<S: ?Sized> {
    /// An array.
    Array(Array<S>),
    /// A group.
    Group(Group<S>),
}

impl<S: ?Sized> Node<S> {
    /// The node's path.
    pub fn path(&self) -> &NodePath {
        match self {
            Self::Array(a) => a.path(),
            Self::Group(g) => g.path(),
        }
    }

    /// The node's attributes.
    pub fn attributes(&self) -> &Map<String, Value> {
        match self {
            Self::Array(a) => a.attributes(),
            Self::Group(g) => g.attributes(),
        }
    }

    /// The node's attribute `key` as a `T`, `None` if there is none (see
    /// [`crate::Array::attribute`]).
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attribute does not deserialize as a `T`.
    pub fn attribute<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        match self {
            Self::Array(a) => a.attribute(key),
            Self::Group(g) => g.attribute(key),
        }
    }

    /// The node's attributes as a whole as a `T` (see [`crate::Array::attributes_as`]).
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attributes do not deserialize as a `T`.
    pub fn attributes_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        match self {
            Self::Array(a) => a.attributes_as(),
            Self::Group(g) => g.attributes_as(),
        }
    }
}

impl<S: ?Sized> From<crate::Node<S>> for Node<S> {
    fn from(node: crate::Node<S>) -> Self {
        match node {
            crate::Node::Array(a) => Self::Array(a.into()),
            crate::Node::Group(g) => Self::Group(g.into()),
        }
    }
}

impl<S: ReadableStore + ?Sized> Node<S> {
    /// [`crate::Node::open`].
    ///
    /// # Errors
    /// As [`crate::Node::open`], and [`Error::BlockingInAsync`].
    pub fn open(store: Arc<S>, path: &str) -> Result<Self> {
        block_on(crate::Node::open(store, path))?.map(Self::from)
    }
}

impl<S: ReadableStore + ?Sized> Group<S> {
    /// [`crate::Group::refresh`].
    ///
    /// # Errors
    /// As [`crate::Group::refresh`], and [`Error::BlockingInAsync`].
    pub fn refresh(&mut self) -> Result<()> {
        block_on(self.0.refresh())?
    }

    /// [`crate::Group::open`].
    ///
    /// # Errors
    /// As [`crate::Group::open`], and [`Error::BlockingInAsync`].
    pub fn open(store: Arc<S>, path: &str) -> Result<Self> {
        block_on(crate::Group::open(store, path))?.map(Self)
    }

    /// [`crate::Group::open_consolidated`].
    ///
    /// # Errors
    /// As [`crate::Group::open_consolidated`], and [`Error::BlockingInAsync`].
    pub fn open_consolidated(store: Arc<S>, path: &str) -> Result<Self> {
        block_on(crate::Group::open_consolidated(store, path))?.map(Self)
    }

    /// [`crate::Group::is_consolidated`].
    pub fn is_consolidated(&self) -> bool {
        self.0.is_consolidated()
    }

    /// [`crate::Group::open_group`].
    ///
    /// # Errors
    /// As [`crate::Group::open_group`], and [`Error::BlockingInAsync`].
    pub fn open_group(&self, name: &str) -> Result<Self> {
        block_on(self.0.open_group(name))?.map(Self)
    }

    /// [`crate::Group::open_array`].
    ///
    /// # Errors
    /// As [`crate::Group::open_array`], and [`Error::BlockingInAsync`].
    pub fn open_array(&self, name: &str) -> Result<Array<S>> {
        block_on(self.0.open_array(name))?.map(Array)
    }
}

impl<S: WritableStore + ?Sized> Group<S> {
    /// [`crate::Group::create`].
    ///
    /// # Errors
    /// As [`crate::Group::create`], and [`Error::BlockingInAsync`].
    pub fn create(store: Arc<S>, path: &str) -> Result<Self> {
        block_on(crate::Group::create(store, path))?.map(Self)
    }

    /// [`crate::Group::create_with`].
    ///
    /// # Errors
    /// As [`crate::Group::create_with`], and [`Error::BlockingInAsync`].
    pub fn create_with(store: Arc<S>, path: &str, metadata: GroupMetadata) -> Result<Self> {
        block_on(crate::Group::create_with(store, path, metadata))?.map(Self)
    }

    /// [`crate::Group::create_with_format`].
    ///
    /// # Errors
    /// As [`crate::Group::create_with_format`], and [`Error::BlockingInAsync`].
    pub fn create_with_format(
        store: Arc<S>,
        path: &str,
        metadata: GroupMetadata,
        format: zarr_core::v2::ZarrFormat,
    ) -> Result<Self> {
        block_on(crate::Group::create_with_format(
            store, path, metadata, format,
        ))?
        .map(Self)
    }

    /// [`crate::Group::create_group`].
    ///
    /// # Errors
    /// As [`crate::Group::create_group`], and [`Error::BlockingInAsync`].
    pub fn create_group(&self, name: &str) -> Result<Self> {
        block_on(self.0.create_group(name))?.map(Self)
    }

    /// [`crate::Group::create_array`].
    ///
    /// # Errors
    /// As [`crate::Group::create_array`], and [`Error::BlockingInAsync`].
    pub fn create_array(&self, name: &str, builder: &ArrayBuilder) -> Result<Array<S>> {
        block_on(self.0.create_array(name, builder))?.map(Array)
    }

    /// [`crate::Group::set_attributes`].
    ///
    /// # Errors
    /// As [`crate::Group::set_attributes`], and [`Error::BlockingInAsync`].
    pub fn set_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        block_on(self.0.set_attributes(attributes))?
    }

    /// [`crate::Group::update_attributes`].
    ///
    /// # Errors
    /// As [`crate::Group::update_attributes`], and [`Error::BlockingInAsync`].
    pub fn update_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        block_on(self.0.update_attributes(attributes))?
    }

    /// [`crate::Group::set_attribute`]: set attribute `key` to `value`, keeping the others.
    ///
    /// # Errors
    /// As [`crate::Group::set_attribute`], and [`Error::BlockingInAsync`].
    pub fn set_attribute<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<()> {
        block_on(self.0.set_attribute(key, value))?
    }

    /// [`crate::Group::remove`].
    ///
    /// # Errors
    /// As [`crate::Group::remove`], and [`Error::BlockingInAsync`].
    pub fn remove(&mut self, name: &str) -> Result<()> {
        block_on(self.0.remove(name))?
    }
}

impl<S: ReadableStore + ListableStore + ?Sized> Group<S> {
    /// [`crate::Group::children`].
    ///
    /// # Errors
    /// As [`crate::Group::children`], and [`Error::BlockingInAsync`].
    pub fn children(&self) -> Result<Vec<Node<S>>> {
        Ok(block_on(self.0.children())??
            .into_iter()
            .map(Node::from)
            .collect())
    }

    /// [`crate::Group::children_each`].
    ///
    /// # Errors
    /// As [`crate::Group::children_each`], and [`Error::BlockingInAsync`].
    pub fn children_each(&self) -> Result<Vec<(NodePath, Result<Node<S>>)>> {
        Ok(block_on(self.0.children_each())??
            .into_iter()
            .map(|(path, node)| (path, node.map(Node::from)))
            .collect())
    }

    /// [`crate::Group::tree`].
    ///
    /// # Errors
    /// As [`crate::Group::tree`], and [`Error::BlockingInAsync`].
    pub fn tree(&self) -> Result<Vec<(NodePath, NodeMetadata)>> {
        block_on(self.0.tree())?
    }

    /// [`crate::Group::tree_listed`].
    ///
    /// # Errors
    /// As [`crate::Group::tree_listed`], and [`Error::BlockingInAsync`].
    pub fn tree_listed(&self) -> Result<Vec<(NodePath, NodeMetadata)>> {
        block_on(self.0.tree_listed())?
    }
}

impl<S: ReadableStore + ListableStore + WritableStore + ?Sized> Group<S> {
    /// [`crate::Group::consolidate_metadata`].
    ///
    /// # Errors
    /// As [`crate::Group::consolidate_metadata`], and [`Error::BlockingInAsync`].
    pub fn consolidate_metadata(&mut self) -> Result<usize> {
        block_on(self.0.consolidate_metadata())?
    }
}
