//! Reading and writing an array part by part: [`Array::split_region`] cuts a region into
//! parts of whole chunks, of bounded size, [`Array::read_parts`] reads them in order with a
//! few reads in flight, and [`Array::write_parts`] writes parts with a few writes in
//! flight, so that a program can go through an array larger than its memory.

use std::ops::Range;

use futures::{Stream, StreamExt, TryStreamExt};
use zarr_core::Region;
use zarr_store::{ReadableStore, WritableStore};

use crate::array::Array;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::region::IntoRegion;

/// The grid a region is cut along: the array's chunk grid, or the inner chunks of one shard.
enum Level<'a> {
    Chunks,
    /// The inner chunks of the shard whose first element is `origin`.
    Inner {
        origin: Vec<u64>,
        shape: &'a [u64],
    },
}

/// The state of one [`Array::split_region`].
struct Splitter<'a, S: ?Sized> {
    array: &'a Array<S>,
    max: u128,
    /// Whether a shard too large on its own is cut along its inner chunks.
    cut_shards: bool,
}

impl<S: ?Sized> Splitter<'_, S> {
    /// The end, along `dim`, of the unit of `level` that holds index `at`.
    fn unit_end(&self, level: &Level<'_>, dim: usize, at: u64) -> Result<u64> {
        match level {
            Level::Chunks => {
                let (_, span) = self
                    .array
                    .chunk_grid()
                    .chunk_along(self.array.shape(), dim, at)?;
                Ok(span.end)
            }
            Level::Inner { origin, shape } => {
                let side = shape[dim].max(1);
                let index = (at - origin[dim]) / side + 1;
                index
                    .checked_mul(side)
                    .and_then(|offset| offset.checked_add(origin[dim]))
                    .ok_or_else(|| {
                        Error::from(zarr_core::Error::Overflow {
                            what: format!("the end of an inner chunk in dimension {dim}"),
                        })
                    })
            }
        }
    }

    /// Append the parts of `region` to `out`: `region` itself if it is small enough, else
    /// slabs of whole units of `level` along `dim`, each unit too large on its own cut
    /// along the next dimension.
    fn split(
        &self,
        level: &Level<'_>,
        region: Region,
        dim: usize,
        out: &mut Vec<Region>,
    ) -> Result<()> {
        let extents = region.shape();
        let count: u128 = extents.iter().map(|&n| u128::from(n)).product();
        if count <= self.max {
            out.push(region);
            return Ok(());
        }
        if dim == region.rank() {
            // One unit of `level`, too large on its own.
            if let (Level::Chunks, Some(inner), true) =
                (level, self.array.inner_chunk_shape(), self.cut_shards)
            {
                let shape = self.array.shape();
                let grid = self.array.chunk_grid();
                let (chunk, _) = grid.chunk_of(shape, &region.starts())?;
                let origin = grid.chunk_region(shape, &chunk)?.starts();
                let inner = Level::Inner {
                    origin,
                    shape: inner,
                };
                return self.split(&inner, region, 0, out);
            }
            out.push(region);
            return Ok(());
        }
        // Elements per index along `dim`.
        let across = count / u128::from(extents[dim]);
        let Range { start: first, end } = region.ranges()[dim].clone();
        let slab = |range: Range<u64>| {
            let mut ranges = region.ranges().to_vec();
            ranges[dim] = range;
            Region::try_new(ranges)
        };
        let mut start = first;
        while start < end {
            let mut stop = self.unit_end(level, dim, start)?.min(end);
            if u128::from(stop - start) * across > self.max {
                self.split(level, slab(start..stop)?, dim + 1, out)?;
            } else {
                while stop < end {
                    let next = self.unit_end(level, dim, stop)?.min(end);
                    if u128::from(next - start) * across > self.max {
                        break;
                    }
                    stop = next;
                }
                out.push(slab(start..stop)?);
            }
            start = stop;
        }
        Ok(())
    }
}

impl<S: ?Sized> Array<S> {
    /// Cut `region` into parts of whole chunks (clipped to the region), in C order, each of
    /// at most `max_elements` elements where one chunk allows: for going through an array
    /// larger than memory with [`Array::read_parts`] (or writing one part by part), reading
    /// every chunk once.
    ///
    /// The parts are slabs along the first dimension made of whole rows of chunks, as many
    /// rows as fit; where one row of chunks is too large, it is cut the same way along the
    /// next dimension, and so on. A chunk is never cut, except a shard (an array whose
    /// codecs are `sharding_indexed`) too large on its own, which is cut the same way along
    /// its inner chunks, all of whose reads are partial. So a part can hold more than
    /// `max_elements` only where one chunk (or inner chunk) does. A `max_elements` of `0`
    /// counts as `1`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::{Array, ArrayBuilder, ArrayOptions, Region};
    /// use zarr_core::{DataType, NodePath};
    /// use zarr_store::MemoryStore;
    ///
    /// let metadata = ArrayBuilder::new(vec![10, 1000], DataType::Float32, vec![5, 100])
    ///     .build_metadata()?;
    /// let store = Arc::new(MemoryStore::new());
    /// let array = Array::from_metadata(store, NodePath::root(), metadata, ArrayOptions::default())?;
    /// // A row of chunks (5 x 1000 = 5,000 elements) fits: two slabs.
    /// let parts = array.split_region(.., 5_000)?;
    /// assert_eq!(parts.len(), 2);
    /// assert_eq!(parts[1], Region::try_new(vec![5..10, 0..1000])?);
    /// // It does not: each row of chunks (clipped to the region) in groups of chunks.
    /// let parts = array.split_region([2..10, 0..1000], 2_000)?;
    /// assert_eq!(parts.len(), 5);
    /// assert_eq!(parts[0], Region::try_new(vec![2..5, 0..600])?); // 6 chunks of 3 x 100
    /// assert_eq!(parts[1], Region::try_new(vec![2..5, 600..1000])?);
    /// assert_eq!(parts[2], Region::try_new(vec![5..10, 0..400])?); // 4 chunks of 5 x 100
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// # Errors
    /// Region errors (a region outside the array, of another rank), and chunk grid errors.
    pub fn split_region(&self, region: impl IntoRegion, max_elements: u64) -> Result<Vec<Region>> {
        self.split_region_with(region, max_elements, true)
    }

    /// As [`Array::split_region`], but never cutting a chunk, a shard included: for writing
    /// an array part by part ([`Array::write_parts`]), where each part then covers whole
    /// chunks (clipped to the region), so each chunk (shard) is encoded and stored once and
    /// never read back. A part holds more than `max_elements` only where one chunk (shard)
    /// does. For an array without sharding, the parts are those of `split_region`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::{Array, ArrayBuilder, ArrayOptions, Region};
    /// use zarr_core::{DataType, NodePath};
    /// use zarr_store::MemoryStore;
    ///
    /// // Shards of 4 x 100, inner chunks of 2 x 50.
    /// let metadata = ArrayBuilder::new(vec![8, 200], DataType::UInt8, vec![4, 100])
    ///     .sharding(vec![2, 50])
    ///     .build_metadata()?;
    /// let store = Arc::new(MemoryStore::new());
    /// let array = Array::from_metadata(store, NodePath::root(), metadata, ArrayOptions::default())?;
    /// // Reading may cut a shard along its inner chunks...
    /// assert_eq!(array.split_region(.., 100)?[0], Region::try_new(vec![0..2, 0..50])?);
    /// // ...writing keeps whole shards, one per part here.
    /// let parts = array.split_region_whole_chunks(.., 100)?;
    /// assert_eq!(parts.len(), 4);
    /// assert_eq!(parts[1], Region::try_new(vec![0..4, 100..200])?);
    /// # Ok::<(), zarr_array::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Array::split_region`].
    pub fn split_region_whole_chunks(
        &self,
        region: impl IntoRegion,
        max_elements: u64,
    ) -> Result<Vec<Region>> {
        self.split_region_with(region, max_elements, false)
    }

    fn split_region_with(
        &self,
        region: impl IntoRegion,
        max_elements: u64,
        cut_shards: bool,
    ) -> Result<Vec<Region>> {
        let region = region.into_region_of(self.shape())?;
        region.check_within(self.shape())?;
        let mut parts = Vec::new();
        if region.is_empty() {
            return Ok(parts);
        }
        let splitter = Splitter {
            array: self,
            max: u128::from(max_elements.max(1)),
            cut_shards,
        };
        splitter.split(&Level::Chunks, region, 0, &mut parts)?;
        Ok(parts)
    }
}

impl<S: ?Sized> Array<S> {
    /// `parts` as a `Vec`, once `T` is checked against the data type and each part against
    /// the array's shape (what both `read_parts` check before reading).
    pub(crate) fn checked_parts<T: Element>(
        &self,
        parts: impl IntoIterator<Item = Region>,
    ) -> Result<Vec<Region>> {
        self.check_element::<T>()?;
        parts
            .into_iter()
            .map(|part| {
                part.check_within(self.shape())?;
                Ok(part)
            })
            .collect()
    }
}

impl<S: ReadableStore + ?Sized> Array<S> {
    /// Read `parts` one after the other as a stream of `(region, values)` in their order,
    /// with up to `ahead` reads in flight (at least one): the next parts are fetched and
    /// decoded while the caller works on one. Each read is as parallel as [`Array::read`];
    /// the memory held is at most `ahead` parts, plus the one the caller holds.
    ///
    /// With [`Array::split_region`], this goes through an array larger than memory:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::TryStreamExt;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let builder = ArrayBuilder::new(vec![100, 100], DataType::UInt16, vec![10, 50]);
    /// let array = builder.create(Arc::new(MemoryStore::new()), "/a").await?;
    /// array.write(.., &(0..10_000).map(|v| v as u16).collect::<Vec<_>>()).await?;
    /// let parts = array.split_region(.., 2_000)?;
    /// let mut stream = array.read_parts::<u16>(parts, 2)?;
    /// let mut sum = 0u64;
    /// while let Some((region, values)) = stream.try_next().await? {
    ///     assert_eq!(values.len() as u64, region.num_elements()?);
    ///     sum += values.iter().map(|&v| u64::from(v)).sum::<u64>();
    /// }
    /// assert_eq!(sum, (0..10_000u64).sum::<u64>());
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// At once: [`Error::ElementType`] if `T` does not match the data type, region errors
    /// for a part outside the array. In the stream: each part's read errors (as
    /// [`Array::read`]), in that part's place; the other parts are still read.
    pub fn read_parts<T: Element>(
        &self,
        parts: impl IntoIterator<Item = Region>,
        ahead: usize,
    ) -> Result<impl Stream<Item = Result<(Region, Vec<T>)>> + Send + '_> {
        let parts = self.checked_parts::<T>(parts)?;
        Ok(futures::stream::iter(parts)
            .map(move |part| async move {
                let values = self.read::<T>(&part).await?;
                Ok((part, values))
            })
            .buffered(ahead.max(1)))
    }
}

impl<S: WritableStore + ?Sized> Array<S> {
    /// Write each `(region, values)` of `parts` (values in C order, as [`Array::write`]),
    /// with up to `ahead` writes in flight (at least one), taking the next parts from the
    /// stream as writes finish: the memory held is at most `ahead` parts, plus what the
    /// stream holds. Parts should not overlap (where two do, which of them is written last
    /// is not defined); the parts of [`Array::split_region_whole_chunks`] cover whole
    /// chunks, so no chunk is read back or written twice.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let builder = ArrayBuilder::new(vec![100, 100], DataType::Float32, vec![10, 50]);
    /// let array = builder.create(Arc::new(MemoryStore::new()), "/a").await?;
    /// // Each part computed when the writer is ready for it.
    /// let parts = array.split_region_whole_chunks(.., 2_000)?;
    /// let parts = futures::stream::iter(parts).map(|region| {
    ///     let values: Vec<f32> = (0..region.num_elements().unwrap()).map(|i| i as f32).collect();
    ///     (region, values)
    /// });
    /// # use futures::StreamExt;
    /// array.write_parts(parts, 2).await?;
    /// assert_eq!(array.read::<f32>([20..21, 0..3]).await?, [0.0, 1.0, 2.0]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] if `T` does not match the data type, before anything is
    /// written; then the first error of a part's write (as [`Array::write`]), after which
    /// no further part is taken and the writes in flight are cancelled. Each chunk is
    /// stored whole or not at all, but the parts written before the error (and chunks of
    /// the cancelled ones) stay written.
    pub async fn write_parts<T: Element, R: IntoRegion, V: AsRef<[T]>>(
        &self,
        parts: impl Stream<Item = (R, V)>,
        ahead: usize,
    ) -> Result<()> {
        self.check_element::<T>()?;
        parts
            .map(Ok)
            .try_for_each_concurrent(ahead.max(1), |(region, values)| async move {
                self.write(region, values.as_ref()).await
            })
            .await
    }
}

impl<S: ReadableStore + ?Sized> Array<S> {
    /// Copy every value into `dest`, an array of the same shape and data type laid out in
    /// any way: other chunks or shards, other codecs, another store or Zarr format (to
    /// re-chunk or re-compress an array, make `dest` with [`ArrayBuilder::like`] and change
    /// what should differ). The values go in parts of whole chunks of `dest`
    /// ([`Array::split_region_whole_chunks`], at most `max_elements` each where one chunk
    /// allows), one part read while the one before is written, so each chunk of `dest` is
    /// encoded and stored once, never read back, and the memory held stays about two parts.
    /// When `dest` is sharded by the sharding codec, a shard too large for a part is cut
    /// along its inner chunks ([`Array::split_region`]) and written through a
    /// [`ShardWriter`](crate::ShardWriter), which stores each shard once, when whole: the
    /// memory is then about two parts plus the encoded inner chunks of the shards being
    /// filled.
    /// Chunks of `dest` that come out all fill value are not stored (as with any write,
    /// unless `dest`'s options say to write empty chunks). Variable-length data types are
    /// copied too.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = Arc::new(MemoryStore::new());
    /// let rows = ArrayBuilder::new(vec![100, 100], DataType::Int32, vec![1, 100])
    ///     .create(Arc::clone(&store), "/rows")
    ///     .await?;
    /// rows.write(.., &(0..10_000).collect::<Vec<i32>>()).await?;
    /// // The same values in 10 x 10 tiles, compressed.
    /// let tiles = ArrayBuilder::new(vec![100, 100], DataType::Int32, vec![10, 10])
    ///     .zstd(3)
    ///     .create(Arc::clone(&store), "/tiles")
    ///     .await?;
    /// rows.copy_to(&tiles, 2_000).await?;
    /// assert_eq!(tiles.read::<i32>([55..56, 40..43]).await?, [5540, 5541, 5542]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// [`ArrayBuilder::like`]: crate::ArrayBuilder::like
    ///
    /// # Errors
    /// [`Error::Unsupported`] (before anything is read) if the shapes or data types differ;
    /// then read errors of this array and write errors of `dest`, the first one ending the
    /// copy. The chunks (shards) stored before it stay written; a shard of `dest` that was
    /// being written along its inner chunks is not stored.
    pub async fn copy_to<D: WritableStore + ?Sized>(
        &self,
        dest: &Array<D>,
        max_elements: u64,
    ) -> Result<()> {
        let refuse = |what: &str, ours: String, theirs: String| {
            Err(Error::Unsupported {
                array: dest.path().as_str().to_owned(),
                reason: format!(
                    "cannot copy {} into it: the {what} differ ({ours} and {theirs})",
                    self.path()
                ),
            })
        };
        if self.shape() != dest.shape() {
            return refuse(
                "shapes",
                format!("{:?}", self.shape()),
                format!("{:?}", dest.shape()),
            );
        }
        if self.data_type() != dest.data_type() {
            return refuse(
                "data types",
                self.data_type().to_string(),
                dest.data_type().to_string(),
            );
        }
        let mut writer = dest.shard_writer();
        if writer.is_buffering() {
            // Parts may cut shards along their inner chunks: the writer keeps each shard's
            // encoded inner chunks until it is whole, then stores it once.
            let mut parts = dest.split_region(.., max_elements)?.into_iter();
            let mut current = match parts.next() {
                Some(part) => {
                    let values = self.read_array_bytes(&part).await?;
                    Some((part, values))
                }
                None => None,
            };
            while let Some((part, values)) = current.take() {
                let next = parts.next();
                let read_next = async {
                    match &next {
                        Some(next) => self.read_array_bytes(next).await.map(Some),
                        None => Ok(None),
                    }
                };
                // The next part is read while this one is written.
                let (written, read) =
                    futures::join!(writer.write_array_bytes(&part, values), read_next);
                written?;
                current = next.zip(read?);
            }
            return writer.finish().await;
        }
        let parts = dest.split_region_whole_chunks(.., max_elements)?;
        futures::stream::iter(parts)
            .map(|part| async move {
                let values = self.read_array_bytes(&part).await?;
                dest.write_array_bytes(&part, values).await
            })
            // One part read while the one before is written.
            .buffer_unordered(2)
            .try_for_each(|()| std::future::ready(Ok(())))
            .await
    }
}
