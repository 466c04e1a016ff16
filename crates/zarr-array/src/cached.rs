//! [`CachedArray`]: an array whose reads keep recently decoded chunks in memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt;
use tokio::sync::Semaphore;
use zarr_codecs::{ArrayBytes, ArrayViewMut, VlenBytes};
use zarr_core::{ChunkGrid, ChunkSelection, DataType, Region};
use zarr_store::{ReadableStore, WritableStore};
use zarr_vlen::{VlenBinary, VlenOffset, VlenStrings};

use crate::element::{Element, as_bytes, as_bytes_mut};
use crate::error::{Error, Result};
use crate::region::IntoRegion;
use crate::{Array, Selection, vlen_partial};

/// What an entry counts against the capacity beyond its data (so that many tiny blocks
/// cannot grow the cache without bound).
const ENTRY_OVERHEAD: u64 = 96;

/// Counters of a [`CachedArray`]'s cache, from [`CachedArray::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ChunkCacheStats {
    /// Blocks a read found in the cache (or that another read in flight fetched for it).
    pub hits: u64,
    /// Blocks a read fetched and decoded.
    pub misses: u64,
    /// Blocks held now.
    pub entries: usize,
    /// What the blocks held now count against the capacity, in bytes.
    pub bytes: u64,
    /// The capacity, in bytes.
    pub capacity: u64,
}

#[derive(Debug)]
struct Entry {
    block: Arc<ArrayBytes>,
    /// The elements of the array the block holds (its chunk clipped to the array).
    region: Region,
    /// The entry's place in the recency order (`State::order`).
    tick: u64,
    cost: u64,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<Vec<u64>, Entry>,
    /// Least recently used first.
    order: BTreeMap<u64, Vec<u64>>,
    tick: u64,
    bytes: u64,
    /// Bumped by every write through the wrapper and by [`CachedArray::invalidate`] and
    /// [`CachedArray::clear`]: a fetch that began before does not keep what it decoded.
    epoch: u64,
    hits: u64,
    misses: u64,
    /// Blocks being fetched: a read of the same block waits for the fetch (the semaphore is
    /// closed when it ends) rather than decoding it again.
    flights: HashMap<Vec<u64>, Arc<Semaphore>>,
}

impl State {
    fn touch(&mut self, block: &[u64]) -> Option<Arc<ArrayBytes>> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(block)?;
        self.order.remove(&entry.tick);
        entry.tick = tick;
        self.order.insert(tick, block.to_vec());
        Some(Arc::clone(&entry.block))
    }

    fn remove(&mut self, block: &[u64]) {
        if let Some(entry) = self.entries.remove(block) {
            self.order.remove(&entry.tick);
            self.bytes -= entry.cost;
        }
    }

    fn insert(&mut self, key: Vec<u64>, block: Arc<ArrayBytes>, region: Region, capacity: u64) {
        let cost = cost_of(&block, key.len());
        if cost > capacity {
            return;
        }
        self.remove(&key);
        while self.bytes + cost > capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.remove(&oldest) {
                self.bytes -= entry.cost;
            }
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(
            key,
            Entry {
                block,
                region,
                tick: self.tick,
                cost,
            },
        );
        self.bytes += cost;
    }
}

fn cost_of(block: &ArrayBytes, rank: usize) -> u64 {
    let data = match block {
        ArrayBytes::Fixed(bytes) => bytes.len() as u64,
        ArrayBytes::Variable(vlen) => {
            (vlen.offsets().len() as u64) * 8 + vlen.values().len() as u64
        }
    };
    data + ENTRY_OVERHEAD + 8 * rank as u64
}

/// Whether two regions of the same rank share an element.
fn overlaps(a: &Region, b: &Region) -> bool {
    a.ranges()
        .iter()
        .zip(b.ranges())
        .all(|(a, b)| a.start < b.end && b.start < a.end && a.start < a.end && b.start < b.end)
}

#[derive(Debug)]
struct Cache {
    capacity: u64,
    state: Mutex<State>,
}

impl Cache {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a read of a block that is not cached does.
enum Next {
    /// Wait for the fetch in flight (its semaphore closes when it ends).
    Wait(Arc<Semaphore>),
    /// Fetch it, as of this epoch.
    Fetch(Arc<Semaphore>, u64),
}

/// Ends a fetch's flight however the fetch ends (done, failed or cancelled): removes it from
/// the map and wakes the reads waiting for it.
struct Flight<'a> {
    cache: &'a Cache,
    block: Vec<u64>,
    semaphore: Arc<Semaphore>,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut state = self.cache.lock();
        if state
            .flights
            .get(&self.block)
            .is_some_and(|s| Arc::ptr_eq(s, &self.semaphore))
        {
            state.flights.remove(&self.block);
        }
        drop(state);
        self.semaphore.close();
    }
}

/// An [`Array`] whose reads keep the chunks they decode in memory, least recently used
/// evicted first, so that reads of the same chunks again (a viewer panning over an image, a
/// training loop sampling patches) cost a copy rather than a fetch and a decode.
///
/// The cache holds *blocks*: the array's chunks, or for a sharded array with a regular grid,
/// the shards' inner chunks (the unit a read of a shard decodes), each clipped to the array
/// and decoded. A read takes the blocks it finds, fetches and decodes the others
/// concurrently (at most [`ArrayOptions::io_concurrency`](crate::ArrayOptions::io_concurrency)
/// at a time, each through [`Array::read_array_bytes`]), copies its region out of them, and
/// keeps them. A block bigger than the whole capacity is used but not kept. Reads of the
/// same block at the same time decode it once.
///
/// Writes through the wrapper drop the blocks they touch (and a read that was decoding one
/// of them when the write began does not keep it). Writes by anyone else (another handle,
/// another process) are not seen until the blocks are evicted, [`CachedArray::invalidate`]d
/// or [`CachedArray::clear`]ed. Clones share the cache.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// use zarr_array::{ArrayBuilder, CachedArray};
/// use zarr_core::DataType;
/// use zarr_store::MemoryStore;
///
/// let array = ArrayBuilder::new(vec![8, 8], DataType::UInt16, vec![4, 4])
///     .create(Arc::new(MemoryStore::new()), "/image")
///     .await?;
/// array.write(.., &(0..64).collect::<Vec<u16>>()).await?;
///
/// let cached = CachedArray::new(array, 64 << 20);
/// assert_eq!(cached.read::<u16>([1..3, 3..5]).await?, [11, 12, 19, 20]);
/// assert_eq!(cached.read::<u16>([2..3, 2..6]).await?, [18, 19, 20, 21]);
/// let stats = cached.stats();
/// assert_eq!((stats.misses, stats.hits), (2, 2)); // two chunks decoded, then found again
/// # Ok::<(), zarr_array::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct CachedArray<S: ?Sized> {
    array: Array<S>,
    /// The grid of the cached blocks.
    blocks: ChunkGrid,
    cache: Arc<Cache>,
}

impl<S: ?Sized> Clone for CachedArray<S> {
    fn clone(&self) -> Self {
        Self {
            array: self.array.clone(),
            blocks: self.blocks.clone(),
            cache: Arc::clone(&self.cache),
        }
    }
}

impl<S: ?Sized> CachedArray<S> {
    /// Wrap `array` with a cache of decoded blocks holding at most `capacity` bytes (each
    /// block counts its decoded bytes, its offsets for variable-length data, and about a
    /// hundred bytes of bookkeeping).
    pub fn new(array: Array<S>, capacity: u64) -> Self {
        let grid = &array.metadata.chunk_grid;
        let blocks = match (grid, array.inner_chunk_shape()) {
            // Inner chunks of a regular grid of shards tile the array on a regular grid
            // (the shard shape is a multiple of the inner chunk shape).
            (ChunkGrid::Regular(_), Some(inner)) => {
                ChunkGrid::regular(inner.to_vec()).unwrap_or_else(|_| grid.clone())
            }
            // Shards cut at the array's end hold whole inner chunks (checked when the
            // array was opened), so their inner chunks tile it the same way.
            (ChunkGrid::RegularBounded(_), Some(inner)) => {
                ChunkGrid::regular_bounded(inner.to_vec()).unwrap_or_else(|_| grid.clone())
            }
            _ => grid.clone(),
        };
        Self {
            array,
            blocks,
            cache: Arc::new(Cache {
                capacity,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The array underneath, for its metadata and for what the wrapper does not do.
    ///
    /// A write through it goes around the cache, as another handle's would: the blocks it
    /// touches are still served until [`invalidate`](Self::invalidate)d. Write through the
    /// wrapper ([`CachedArray::write`] and the like), which drops them.
    pub fn array(&self) -> &Array<S> {
        &self.array
    }

    /// The array underneath, leaving the cache.
    pub fn into_inner(self) -> Array<S> {
        self.array
    }

    /// The grid of the blocks the cache holds: the array's chunk grid, or the regular grid
    /// of its shards' inner chunks.
    pub fn block_grid(&self) -> &ChunkGrid {
        &self.blocks
    }

    /// The cache's counters and size.
    pub fn stats(&self) -> ChunkCacheStats {
        let state = self.cache.lock();
        ChunkCacheStats {
            hits: state.hits,
            misses: state.misses,
            entries: state.entries.len(),
            bytes: state.bytes,
            capacity: self.cache.capacity,
        }
    }

    /// Drop every cached block (after the array was changed by another handle, say).
    pub fn clear(&self) {
        let mut state = self.cache.lock();
        state.epoch += 1;
        state.entries.clear();
        state.order.clear();
        state.bytes = 0;
    }

    /// Drop the cached blocks holding any element of `region`.
    ///
    /// # Errors
    /// Region errors (the region must lie inside the array).
    pub fn invalidate(&self, region: impl IntoRegion) -> Result<()> {
        let region = region.into_region_of(&self.array.metadata.shape)?;
        region.check_within(&self.array.metadata.shape)?;
        self.invalidate_region(&region);
        Ok(())
    }

    fn invalidate_region(&self, region: &Region) {
        let mut state = self.cache.lock();
        state.epoch += 1;
        let stale: Vec<Vec<u64>> = state
            .entries
            .iter()
            .filter(|(_, entry)| overlaps(&entry.region, region))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            state.remove(&key);
        }
    }
}

impl<S: ReadableStore + ?Sized> CachedArray<S> {
    /// [`Array::read`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read`].
    pub async fn read<T: Element>(&self, region: impl IntoRegion) -> Result<Vec<T>> {
        self.array.check_element::<T>()?;
        let region = region.into_region_of(&self.array.metadata.shape)?;
        let mut out = self.array.output_for::<T>(&region)?;
        self.read_into(&region, &mut out).await?;
        Ok(out)
    }

    /// [`Array::read_into`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_into`].
    pub async fn read_into<T: Element>(
        &self,
        region: impl IntoRegion,
        out: &mut [T],
    ) -> Result<()> {
        self.array.check_element::<T>()?;
        let region = region.into_region_of(&self.array.metadata.shape)?;
        let bytes = as_bytes_mut(out);
        self.read_bytes_into(&region, bytes).await?;
        self.array.check_values::<T>(bytes, "")
    }

    /// [`Array::read_bytes`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_bytes`].
    pub async fn read_bytes(&self, region: impl IntoRegion) -> Result<Vec<u8>> {
        let region = region.into_region_of(&self.array.metadata.shape)?;
        let mut out = self.array.byte_output_for(&region)?;
        self.read_bytes_into(&region, &mut out).await?;
        Ok(out)
    }

    /// [`Array::read_bytes_into`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_bytes_into`].
    pub async fn read_bytes_into(&self, region: impl IntoRegion, out: &mut [u8]) -> Result<()> {
        let shape = &self.array.metadata.shape;
        let region = region.into_region_of(shape)?;
        region.check_within(shape)?;
        let elem = self.array.element_size()?;
        let expected = region.num_elements()?;
        if out.len() as u64 != expected.saturating_mul(elem as u64) {
            return Err(Error::buffer_size(expected, elem, out.len()));
        }
        if expected == 0 {
            return Ok(());
        }
        let view = ArrayViewMut::new(out, &region.shape(), elem)
            .map_err(|e| self.array.codecs_error(e))?;
        self.for_each_block(&region, |selection, block| {
            let ArrayBytes::Fixed(bytes) = block else {
                return Err(self.unexpected("variable-length data in a fixed-size array"));
            };
            // SAFETY: one view at a time: `target` is dropped before the next block is
            // copied, and the parent view is not written while it lives.
            let mut target = unsafe { view.subview(selection.within_output.clone()) }
                .map_err(|e| self.array.codecs_error(e))?;
            let block_shape = self.block_shape(&selection.chunk)?;
            target
                .copy_from(bytes, &block_shape, &selection.within_chunk)
                .map_err(|e| self.array.codecs_error(e))
        })
        .await
    }

    /// [`Array::read_array_bytes`] through the cache: any data type, fixed-size or
    /// variable-length.
    ///
    /// # Errors
    /// As [`Array::read_array_bytes`].
    pub async fn read_array_bytes(&self, region: impl IntoRegion) -> Result<ArrayBytes> {
        let shape = &self.array.metadata.shape;
        let region = region.into_region_of(shape)?;
        region.check_within(shape)?;
        if self.array.metadata.data_type.fixed_size().is_some() {
            return Ok(ArrayBytes::fixed(self.read_bytes(&region).await?));
        }
        if region.num_elements()? == 0 {
            return Ok(ArrayBytes::Variable(VlenBytes::from_elements(
                std::iter::empty(),
            )));
        }
        let mut parts: Vec<(Region, VlenBytes)> = Vec::new();
        self.for_each_block(&region, |selection, block| {
            let ArrayBytes::Variable(vlen) = block else {
                return Err(self.unexpected("fixed-size data in a variable-length array"));
            };
            let block_shape = self.block_shape(&selection.chunk)?;
            let part = crate::read::select_elements(vlen, &block_shape, &selection.within_chunk)?;
            parts.push((selection.within_output.clone(), part));
            Ok(())
        })
        .await?;
        let elements = vlen_partial::assemble(&region.shape(), &parts).map_err(|e| match e {
            Error::Codecs { source, .. } => Error::Codecs {
                array: self.array.path.as_str().to_owned(),
                source,
            },
            other => other,
        })?;
        Ok(ArrayBytes::Variable(elements))
    }

    /// [`Array::read_strings`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_strings`].
    pub async fn read_strings<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
    ) -> Result<VlenStrings<O>> {
        self.array.check_vlen(DataType::String, "VlenStrings")?;
        let vlen = self.read_vlen(region).await?;
        VlenStrings::from_vlen_bytes(&vlen).map_err(|e| self.array.vlen_error(e))
    }

    /// [`Array::read_text`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_text`].
    pub async fn read_text(&self, region: impl IntoRegion) -> Result<Vec<String>> {
        Ok(self.read_strings::<i64>(region).await?.to_strings())
    }

    /// [`Array::read_binary`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_binary`].
    pub async fn read_binary<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
    ) -> Result<VlenBinary<O>> {
        self.array.check_vlen(DataType::Bytes, "VlenBinary")?;
        let vlen = self.read_vlen(region).await?;
        VlenBinary::from_vlen_bytes(&vlen).map_err(|e| self.array.vlen_error(e))
    }

    /// [`Array::read_field`] through the cache: the records come from the cached blocks,
    /// and the field is taken out of each.
    ///
    /// # Errors
    /// As [`Array::read_field`].
    pub async fn read_field<T: Element>(
        &self,
        region: impl IntoRegion,
        field: &[&str],
    ) -> Result<Vec<T>> {
        let plan = self.array.field_plan::<T>(field)?;
        let records = self.read_bytes(region).await?;
        self.array.field_values(&records, &plan)
    }

    /// [`Array::read_elements`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_elements`].
    pub async fn read_elements<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<crate::NdElement<T>>> {
        let nd = self.array.nd_type::<T>()?;
        let bytes = self.read_array_bytes(region).await?;
        self.array.nd_elements(nd, bytes)
    }

    /// [`Array::read_fixed_point`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_fixed_point`].
    pub async fn read_fixed_point(&self, region: impl IntoRegion) -> Result<Vec<f64>> {
        let fp = self.array.fixed_point_type()?;
        let bytes = self.read_bytes(region).await?;
        Ok(crate::fixed_point::fixed_point_values(&fp, &bytes))
    }

    /// [`Array::read_optional`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_optional`].
    pub async fn read_optional<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<Option<T>>> {
        self.array.optional_inner::<T>()?;
        let bytes = self.read_bytes(region).await?;
        self.array.optional_values(&bytes)
    }

    /// [`Array::read_optional_text`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_optional_text`].
    pub async fn read_optional_text(&self, region: impl IntoRegion) -> Result<Vec<Option<String>>> {
        self.array
            .optional_vlen(&DataType::String, "Option<String>")?;
        let vlen = self.read_vlen(region).await?;
        self.array
            .optional_texts(self.array.optional_elements(vlen)?)
    }

    /// [`Array::read_optional_binary`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_optional_binary`].
    pub async fn read_optional_binary(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        self.array
            .optional_vlen(&DataType::Bytes, "Option<Vec<u8>>")?;
        let vlen = self.read_vlen(region).await?;
        Ok(self
            .array
            .optional_elements(vlen)?
            .into_iter()
            .map(|value| value.map(|bytes| bytes.to_vec()))
            .collect())
    }

    /// [`Array::read_ndarray`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_ndarray`].
    #[cfg(feature = "ndarray")]
    pub async fn read_ndarray<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<ndarray::ArrayD<T>> {
        let region = region.into_region_of(&self.array.metadata.shape)?;
        let values = self.read(&region).await?;
        self.array
            .to_ndarray(&region.shape(), values, "the region's shape")
    }

    /// [`Array::read_selection`] through the cache: the blocks holding selected elements are
    /// taken from the cache or fetched (and kept) whole, and the elements copied out of them.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, CachedArray, Selection};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![6, 6], DataType::Int32, vec![3, 3])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// array.write(.., &(0..36).collect::<Vec<i32>>()).await?;
    /// let cached = CachedArray::new(array, 1 << 20);
    /// let selection = Selection::new([AxisSelection::indices([5, 0]), AxisSelection::step(1.., 2)]);
    /// assert_eq!(cached.read_selection::<i32>(&selection).await?, [31, 33, 35, 1, 3, 5]);
    /// assert_eq!(cached.read_points::<i32, _>([[4, 4], [0, 0]]).await?, [28, 0]);
    /// assert_eq!(cached.stats().misses, 4); // every chunk decoded once, then found again
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Array::read_selection`]; [`Error::Unsupported`] for variable-length data.
    pub async fn read_selection<T: Element>(&self, selection: &Selection) -> Result<Vec<T>> {
        self.array.check_element::<T>()?;
        let bytes = self.read_selection_bytes(selection).await?;
        let mut out = crate::element::zeroed_vec::<T>(bytes.len() / size_of::<T>().max(1))
            .map_err(|e| self.array.codecs_error(e))?;
        as_bytes_mut(&mut out).copy_from_slice(&bytes);
        self.array.check_values::<T>(as_bytes(&out), "")?;
        Ok(out)
    }

    /// [`Array::read_selection_bytes`] through the cache.
    ///
    /// # Errors
    /// As [`CachedArray::read_selection`].
    pub async fn read_selection_bytes(&self, selection: &Selection) -> Result<Vec<u8>> {
        let shape = self.array.metadata.shape.clone();
        let out_shape = selection.shape_in(&shape)?;
        if let Some(region) = selection.as_region(&shape)? {
            return self.read_bytes(region).await;
        }
        let elem = self.array.element_size()?;
        let count = Region::full(&out_shape).num_elements()?;
        let mut out =
            zarr_codecs::zeroed_bytes(self.array.bytes_of_elements(count, "the selection")?)
                .map_err(|e| self.array.codecs_error(e))?;
        if count == 0 {
            return Ok(out);
        }
        // Per dimension: the selected indices grouped by block, each with its place in the
        // output and in the block.
        let mut axes: Vec<Vec<AxisBlock>> = Vec::with_capacity(shape.len());
        for (dim, (axis, &len)) in selection.axes().iter().zip(&shape).enumerate() {
            let mut groups: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
            for (place, x) in axis.indices_in(len)?.into_iter().enumerate() {
                let (block, covered) = self.blocks.chunk_along(&shape, dim, x)?;
                groups
                    .entry(block)
                    .or_default()
                    .push((place as u64, x - covered.start));
            }
            axes.push(groups.into_iter().collect());
        }
        let out_strides = strides(&out_shape);
        let mut combination = vec![0_usize; axes.len()];
        let mut items = Vec::new();
        'blocks: loop {
            let key: Vec<u64> = axes
                .iter()
                .zip(&combination)
                .map(|(a, &i)| a[i].0)
                .collect();
            items.push((key, combination.clone()));
            for d in (0..axes.len()).rev() {
                combination[d] += 1;
                if combination[d] < axes[d].len() {
                    continue 'blocks;
                }
                combination[d] = 0;
            }
            break;
        }
        self.with_blocks(items, |key, combination, block| {
            let ArrayBytes::Fixed(bytes) = block else {
                return Err(self.unexpected("variable-length data in a fixed-size array"));
            };
            let block_strides = strides(&self.block_shape(key)?);
            let members: Vec<&[(u64, u64)]> = axes
                .iter()
                .zip(&combination)
                .map(|(a, &i)| a[i].1.as_slice())
                .collect();
            let mut at = vec![0_usize; members.len()];
            'elements: loop {
                let (mut o, mut b) = (0_u64, 0_u64);
                for (d, &i) in at.iter().enumerate() {
                    let (place, within) = members[d][i];
                    o += place * out_strides[d];
                    b += within * block_strides[d];
                }
                let (o, b) = (o as usize * elem, b as usize * elem);
                out[o..o + elem].copy_from_slice(&bytes[b..b + elem]);
                for d in (0..at.len()).rev() {
                    at[d] += 1;
                    if at[d] < members[d].len() {
                        continue 'elements;
                    }
                    at[d] = 0;
                }
                return Ok(());
            }
        })
        .await?;
        Ok(out)
    }

    /// [`Array::read_points`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_points`]; [`Error::Unsupported`] for variable-length data.
    pub async fn read_points<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<T>> {
        self.array.check_element::<T>()?;
        let bytes = self.read_points_bytes(points).await?;
        let mut out = crate::element::zeroed_vec::<T>(bytes.len() / size_of::<T>().max(1))
            .map_err(|e| self.array.codecs_error(e))?;
        as_bytes_mut(&mut out).copy_from_slice(&bytes);
        self.array.check_values::<T>(as_bytes(&out), "")?;
        Ok(out)
    }

    /// [`Array::read_points_bytes`] through the cache.
    ///
    /// # Errors
    /// As [`CachedArray::read_points`].
    pub async fn read_points_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<u8>> {
        let shape = self.array.metadata.shape.clone();
        let elem = self.array.element_size()?;
        let mut groups: BTreeMap<Vec<u64>, Vec<(usize, Vec<u64>)>> = BTreeMap::new();
        let mut count = 0_usize;
        for (i, point) in points.into_iter().enumerate() {
            let point = point.as_ref();
            if point.len() != shape.len() {
                return Err(crate::selection::region_error(format!(
                    "point {i} has {} indices, the array {} dimensions",
                    point.len(),
                    shape.len()
                )));
            }
            let (block, within) = self.blocks.chunk_of(&shape, point)?;
            groups.entry(block).or_default().push((i, within));
            count += 1;
        }
        let mut out =
            zarr_codecs::zeroed_bytes(self.array.bytes_of_elements(count as u64, "the points")?)
                .map_err(|e| self.array.codecs_error(e))?;
        self.with_blocks(
            groups
                .into_iter()
                .map(|(key, members)| (key.clone(), (key, members)))
                .collect(),
            |_, (key, members), block| {
                let ArrayBytes::Fixed(bytes) = block else {
                    return Err(self.unexpected("variable-length data in a fixed-size array"));
                };
                let block_strides = strides(&self.block_shape(&key)?);
                for (i, within) in members {
                    let b: u64 = within.iter().zip(&block_strides).map(|(x, s)| x * s).sum();
                    let (o, b) = (i * elem, b as usize * elem);
                    out[o..o + elem].copy_from_slice(&bytes[b..b + elem]);
                }
                Ok(())
            },
        )
        .await?;
        Ok(out)
    }

    /// [`Array::read_blocks`] through the cache.
    ///
    /// # Errors
    /// As [`Array::read_blocks`].
    pub async fn read_blocks<T: Element>(&self, blocks: impl IntoRegion) -> Result<Vec<T>> {
        let region = self.array.blocks_region(blocks)?;
        self.read(region).await
    }

    async fn read_vlen(&self, region: impl IntoRegion) -> Result<VlenBytes> {
        match self.read_array_bytes(region).await? {
            ArrayBytes::Variable(vlen) => Ok(vlen),
            ArrayBytes::Fixed(_) => {
                Err(self.unexpected("fixed-size data where variable-length data was expected"))
            }
        }
    }

    fn unexpected(&self, what: &str) -> Error {
        Error::unsupported(self.array.path.as_str(), what)
    }

    /// The shape of a block as cached: its chunk of the block grid clipped to the array.
    fn block_shape(&self, block: &[u64]) -> Result<Vec<u64>> {
        Ok(self
            .blocks
            .chunk_region_clipped(&self.array.metadata.shape, block)?
            .shape())
    }

    /// Call `place` with every block `region` touches (and the part of it the region needs),
    /// cached ones first, then the others as they are decoded.
    async fn for_each_block<F>(&self, region: &Region, mut place: F) -> Result<()>
    where
        F: FnMut(&ChunkSelection, &ArrayBytes) -> Result<()>,
    {
        let shape = &self.array.metadata.shape;
        let items = self
            .blocks
            .chunks_in_region(shape, region)?
            .map(|selection| (selection.chunk.clone(), selection))
            .collect();
        self.with_blocks(items, |_, selection, block| place(&selection, block))
            .await
    }

    /// Call `place` with each item's block (`items` pairs a block's key with what `place`
    /// needs of it): cached blocks first, then the others as they are decoded, at most
    /// `io_concurrency` at a time.
    async fn with_blocks<K, F>(&self, items: Vec<(Vec<u64>, K)>, mut place: F) -> Result<()>
    where
        F: FnMut(&[u64], K, &ArrayBytes) -> Result<()>,
    {
        let mut missing = Vec::new();
        for (key, item) in items {
            let found = {
                let mut state = self.cache.lock();
                let found = state.touch(&key);
                if found.is_some() {
                    state.hits += 1;
                }
                found
            };
            match found {
                Some(block) => place(&key, item, &block)?,
                None => missing.push((key, item)),
            }
        }
        let in_flight = self.array.options.io_concurrency().max(1);
        let mut fetches = futures::stream::iter(missing)
            .map(|(key, item)| async move {
                let block = self.block(&key).await?;
                Ok::<_, Error>((key, item, block))
            })
            .buffer_unordered(in_flight);
        while let Some(fetched) = fetches.next().await {
            let (key, item, block) = fetched?;
            place(&key, item, &block)?;
        }
        Ok(())
    }

    /// One block: from the cache, from a fetch of it already in flight, or fetched and
    /// decoded here (and kept).
    async fn block(&self, key: &[u64]) -> Result<Arc<ArrayBytes>> {
        loop {
            let next = {
                let mut state = self.cache.lock();
                if let Some(block) = state.touch(key) {
                    state.hits += 1;
                    return Ok(block);
                }
                match state.flights.get(key) {
                    Some(flight) => Next::Wait(Arc::clone(flight)),
                    None => {
                        let semaphore = Arc::new(Semaphore::new(0));
                        state.flights.insert(key.to_vec(), Arc::clone(&semaphore));
                        state.misses += 1;
                        Next::Fetch(semaphore, state.epoch)
                    }
                }
            };
            let (semaphore, epoch) = match next {
                Next::Wait(flight) => {
                    // Closed when the fetch ends: then look again.
                    let _ = flight.acquire().await;
                    continue;
                }
                Next::Fetch(semaphore, epoch) => (semaphore, epoch),
            };
            let _flight = Flight {
                cache: &self.cache,
                block: key.to_vec(),
                semaphore,
            };
            let region = self
                .blocks
                .chunk_region_clipped(&self.array.metadata.shape, key)?;
            let block = Arc::new(self.array.read_array_bytes(&region).await?);
            let mut state = self.cache.lock();
            if state.epoch == epoch {
                state.insert(
                    key.to_vec(),
                    Arc::clone(&block),
                    region,
                    self.cache.capacity,
                );
            }
            return Ok(block);
        }
    }
}

impl<S: WritableStore + ?Sized> CachedArray<S> {
    /// Run a write of `region`, dropping the blocks it touches before and after (so that no
    /// read in flight keeps a block from before the write).
    async fn writing<F>(&self, region: impl IntoRegion, write: F) -> Result<()>
    where
        F: AsyncFnOnce(Region) -> Result<()>,
    {
        let region = region.into_region_of(&self.array.metadata.shape)?;
        region.check_within(&self.array.metadata.shape)?;
        self.invalidate_region(&region);
        let written = write(region.clone()).await;
        self.invalidate_region(&region);
        written
    }

    /// [`Array::write`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write`].
    pub async fn write<T: Element>(&self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        self.array.check_element::<T>()?;
        self.write_bytes(region, as_bytes(values)).await
    }

    /// [`Array::write_bytes`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write_bytes`].
    pub async fn write_bytes(&self, region: impl IntoRegion, values: &[u8]) -> Result<()> {
        self.writing(region, async |region| {
            self.array.write_bytes(&region, values).await
        })
        .await
    }

    /// [`Array::write_array_bytes`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write_array_bytes`].
    pub async fn write_array_bytes(
        &self,
        region: impl IntoRegion,
        values: ArrayBytes,
    ) -> Result<()> {
        self.writing(region, async |region| {
            self.array.write_array_bytes(&region, values).await
        })
        .await
    }

    /// [`Array::write_text`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write_text`].
    pub async fn write_text<T: AsRef<str>>(
        &self,
        region: impl IntoRegion,
        values: &[T],
    ) -> Result<()> {
        self.writing(region, async |region| {
            self.array.write_text(&region, values).await
        })
        .await
    }

    /// [`Array::write_binary`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write_binary`].
    pub async fn write_binary<O: VlenOffset>(
        &self,
        region: impl IntoRegion,
        values: &VlenBinary<O>,
    ) -> Result<()> {
        self.writing(region, async |region| {
            self.array.write_binary(&region, values).await
        })
        .await
    }

    /// [`Array::write_optional`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write_optional`].
    pub async fn write_optional<T: Element>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        self.writing(region, async |region| {
            self.array.write_optional(&region, values).await
        })
        .await
    }

    /// [`Array::write_optional_text`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write_optional_text`].
    pub async fn write_optional_text<T: AsRef<str>>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        self.writing(region, async |region| {
            self.array.write_optional_text(&region, values).await
        })
        .await
    }

    /// [`Array::write_optional_binary`], dropping the cached blocks it touches.
    ///
    /// # Errors
    /// As [`Array::write_optional_binary`].
    pub async fn write_optional_binary<T: AsRef<[u8]>>(
        &self,
        region: impl IntoRegion,
        values: &[Option<T>],
    ) -> Result<()> {
        self.writing(region, async |region| {
            self.array.write_optional_binary(&region, values).await
        })
        .await
    }
}

/// Along one dimension of a selection: a block's index, and the selected indices it holds
/// as `(place in the output, index within the block)`.
type AxisBlock = (u64, Vec<(u64, u64)>);

/// C-order strides, in elements, of an array of `shape`.
fn strides(shape: &[u64]) -> Vec<u64> {
    let mut strides = vec![1_u64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}
