//! [`ShardWriter`]: write a sharded array in pieces smaller than its shards, storing each
//! shard once.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use rayon::prelude::*;
use tracing::Instrument;
use zarr_codecs::{ArrayBytes, ArrayViewMut, VlenBytes};
use zarr_core::Region;
use zarr_sharding::{EncodedChunks, ShardingCodec};
use zarr_store::{StoreKey, WritableStore};

use crate::array::Array;
use crate::element::{Element, as_bytes};
use crate::error::{Error, Result};
use crate::read::{bytes_of, bytes_of_mut, element_ids};
use crate::region::IntoRegion;
use crate::write::{Locks, chunk_lock, shard_value};

/// Writes a sharded array in regions smaller than its shards, storing each shard once.
///
/// [`Array::write`] stores every shard a region touches at once; a shard the region covers
/// only in part is read, merged and stored again. Writing an array of large shards in slabs
/// (a row of inner chunks at a time, say, to bound memory) would then rewrite each shard once
/// per slab. A `ShardWriter` instead encodes the inner chunks each write covers (in parallel)
/// and keeps them, encoded, until every inner chunk of their shard has been written; then it
/// assembles the shard and stores it, without reading it. The memory it holds is the encoded
/// inner chunks of the shards still being filled ([`pending_bytes`](Self::pending_bytes)).
///
/// [`finish`](Self::finish) stores the shards that were written only in part: their other
/// inner chunks keep what the store holds (copied as stored bytes, not decoded), or the fill
/// value where the shard is not stored. **Call it**: a writer dropped before `finish` stores
/// none of its partly written shards (it logs a warning through `tracing`).
///
/// Regions need not follow inner chunks: an inner chunk a write covers only in part is
/// merged with what an earlier write of this writer gave it, or else with what the store
/// holds, and the next write that touches it merges again.
///
/// The writer assumes it is the only writer of the shards it touches until `finish`: a
/// change another writer makes to one of them in between is lost when this writer stores
/// the shard. (Within the process, `finish` takes each shard's write lock while it reads and
/// stores it, as [`Array::write`] does.)
///
/// Arrays whose shards are not written by the `sharding_indexed` codec alone (unsharded
/// arrays, other codecs around it, the sharding storage transformer) gain nothing from
/// waiting: for them each write goes straight to [`Array::write_array_bytes`].
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// use zarr_array::ArrayBuilder;
/// use zarr_core::DataType;
/// use zarr_store::{MemoryStore, RecordingStore};
///
/// let store = Arc::new(RecordingStore::new(MemoryStore::new()));
/// // Shards of 8x8 elements in inner chunks of 2x8.
/// let array = ArrayBuilder::new(vec![16, 8], DataType::UInt16, vec![8, 8])
///     .sharding(vec![2, 8])
///     .create(Arc::clone(&store), "/a")
///     .await?;
/// let values: Vec<u16> = (0..128).collect();
/// store.clear(); // count from here
///
/// let mut writer = array.shard_writer();
/// for row in (0..16).step_by(2) {
///     // Two rows at a time: one inner chunk of each shard.
///     let slab = &values[row * 8..(row + 2) * 8];
///     writer.write([row as u64..row as u64 + 2, 0..8], slab).await?;
/// }
/// writer.finish().await?;
///
/// let stats = store.stats();
/// assert_eq!(stats.sets, 2); // the two shards, each stored once
/// assert_eq!(stats.gets + stats.partial_reads, 0); // and nothing read back
/// assert_eq!(array.read::<u16>(..).await?, values);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct ShardWriter<'a, S: WritableStore + ?Sized> {
    array: &'a Array<S>,
    /// Shards written in part, by grid indices.
    pending: BTreeMap<Vec<u64>, Pending>,
}

/// A shard some of whose inner chunks have been written.
#[derive(Debug, Clone)]
struct Pending {
    key: StoreKey,
    codec: Arc<ShardingCodec>,
    /// Per inner chunk (C order): `None` until written; then its encoded bytes, `None` when
    /// it holds only the fill value. Inner chunks wholly outside the array start as empty.
    parts: Vec<Option<Option<Bytes>>>,
    /// Inner chunks written in part so far: which of their elements inside the array have
    /// been written.
    partial: std::collections::HashMap<usize, Coverage>,
    /// How many inner chunks are not written whole yet (`None` in `parts`, or in `partial`).
    missing: usize,
}

/// The elements of an inner chunk written so far, one bit each (C order over the inner
/// chunk's shape).
#[derive(Debug, Clone)]
struct Coverage {
    bits: Vec<u64>,
    /// Bits set.
    written: u64,
    /// Elements of the inner chunk inside the array: when all are written, it is whole.
    needed: u64,
}

impl Coverage {
    fn new(shape: &[u64], needed: u64) -> Self {
        let n = shape.iter().product::<u64>();
        Self {
            bits: vec![0; n.div_ceil(64) as usize],
            written: 0,
            needed,
        }
    }

    /// Mark the elements of `region` (of an inner chunk of `shape`) written; whether every
    /// element inside the array now is. Runs along the last dimension are set together.
    fn mark(&mut self, shape: &[u64], region: &Region) -> bool {
        if !region.is_empty() {
            let ranges = region.ranges();
            match ranges.split_last() {
                None => self.set_run(0, 1),
                Some((last, outer)) => {
                    let side = shape[shape.len() - 1];
                    let counts: Vec<u64> = outer.iter().map(|r| r.end - r.start).collect();
                    let mut at = vec![0u64; outer.len()];
                    'rows: loop {
                        let row = outer
                            .iter()
                            .zip(&at)
                            .zip(shape)
                            .fold(0u64, |n, ((r, a), len)| n * len + r.start + a);
                        self.set_run(row * side + last.start, last.end - last.start);
                        for d in (0..at.len()).rev() {
                            at[d] += 1;
                            if at[d] < counts[d] {
                                continue 'rows;
                            }
                            at[d] = 0;
                        }
                        break;
                    }
                }
            }
        }
        self.written >= self.needed
    }

    /// Set bits `start..start + len`, counting those newly set.
    fn set_run(&mut self, start: u64, len: u64) {
        for bit in start..start + len {
            let (word, mask) = ((bit / 64) as usize, 1u64 << (bit % 64));
            if let Some(w) = self.bits.get_mut(word)
                && *w & mask == 0
            {
                *w |= mask;
                self.written += 1;
            }
        }
    }
}

impl Pending {
    fn new<S: ?Sized>(
        array: &Array<S>,
        shard: &[u64],
        key: StoreKey,
        codec: Arc<ShardingCodec>,
    ) -> Result<Self> {
        let metadata = &array.metadata;
        let inside = metadata
            .chunk_grid
            .chunk_region_clipped(&metadata.shape, shard)?
            .shape();
        let inner = codec.inner_chunk_shape().to_vec();
        let per_shard = codec.chunks_per_shard().to_vec();
        let mut parts = Vec::with_capacity(codec.num_inner_chunks());
        let mut missing = 0;
        for linear in 0..codec.num_inner_chunks() {
            let indices = zarr_core::unravel_index(linear as u64, &per_shard).unwrap_or_default();
            let outside = indices
                .iter()
                .zip(&inner)
                .zip(&inside)
                .any(|((i, n), len)| i.saturating_mul(*n) >= *len);
            if outside {
                parts.push(Some(None));
            } else {
                parts.push(None);
                missing += 1;
            }
        }
        Ok(Self {
            key,
            codec,
            parts,
            partial: std::collections::HashMap::new(),
            missing,
        })
    }

    fn held_bytes(&self) -> u64 {
        self.parts
            .iter()
            .flatten()
            .flatten()
            .map(|b| b.len() as u64)
            .sum()
    }

    /// The shard's inner chunks, every one written (the bytes shared, not copied).
    fn chunks(&self) -> EncodedChunks {
        let parts = self.parts.iter().cloned().map(Option::flatten).collect();
        EncodedChunks::from_parts(parts)
    }

    /// The shard's value to store: its inner chunks assembled (`None`: erase the shard).
    fn value<S: ?Sized>(&self, array: &Array<S>) -> Result<Option<Bytes>> {
        let merged = self
            .codec
            .assemble(self.chunks())
            .map_err(|e| array.shard_error(&self.key, e))?;
        shard_value(array, &self.codec, &self.key, merged)
    }
}

/// The values of one write, borrowed.
#[derive(Clone, Copy)]
enum Values<'v> {
    Fixed(&'v [u8], usize),
    Variable(&'v VlenBytes),
}

/// What an inner chunk starts from before a write's values are placed in it.
enum Base {
    /// The fill value; `whole` when the values cover every element of the inner chunk.
    Fill { whole: bool },
    /// An earlier write's encoded inner chunk (`None`: all fill).
    Given(Option<Bytes>),
    /// What the store holds: the decoded elements of the part of the inner chunk inside the
    /// array (inner chunk coordinates).
    Stored(ArrayBytes, Region),
}

/// One inner chunk a write touches.
struct Job {
    shard: Vec<u64>,
    linear: usize,
    /// Indices in the shard's inner chunk grid.
    chunk: Vec<u64>,
    /// Where the values go, in inner chunk coordinates.
    dst: Region,
    /// Where they come from, in the values' region.
    src: Region,
    /// How many of the inner chunk's elements lie inside the array; `None` when the write
    /// covers all of them.
    partial: Option<u64>,
    base: Base,
}

impl<S: ?Sized> Array<S> {
    /// Whether a [`ShardWriter`] of this array keeps inner chunks until their shard is whole
    /// (the array is sharded by the `sharding_indexed` codec alone).
    pub(crate) fn shards_buffered(&self) -> bool {
        self.transformer.is_none() && self.codecs.sharding_codec().is_some()
    }
}

impl<S: WritableStore + ?Sized> Array<S> {
    /// A [`ShardWriter`] for this array: write it in regions smaller than its shards and
    /// store each shard once, when every inner chunk of it has been written (or at
    /// [`ShardWriter::finish`]).
    pub fn shard_writer(&self) -> ShardWriter<'_, S> {
        ShardWriter {
            array: self,
            pending: BTreeMap::new(),
        }
    }
}

impl<'a, S: WritableStore + ?Sized> ShardWriter<'a, S> {
    /// The array written.
    pub fn array(&self) -> &'a Array<S> {
        self.array
    }

    /// How many shards have been written in part and are not stored yet.
    pub fn pending_shards(&self) -> usize {
        self.pending.len()
    }

    /// The encoded bytes of the inner chunks held for shards not stored yet.
    pub fn pending_bytes(&self) -> u64 {
        self.pending.values().map(Pending::held_bytes).sum()
    }

    /// Whether writes wait for whole shards (the array is sharded by the `sharding_indexed`
    /// codec alone); otherwise each write goes straight to the array.
    pub fn is_buffering(&self) -> bool {
        self.array.shards_buffered()
    }

    /// Write `values` (C order) into `region`: the inner chunks it touches are encoded now,
    /// and the shards it completes are stored.
    ///
    /// # Errors
    /// As [`Array::write`]. After an error reading or encoding, the writer is as it was
    /// before this write (what earlier writes gave it is kept). After an error storing the
    /// shards this write completed, they stay with the writer, this write's inner chunks
    /// included, and [`finish`](Self::finish) stores them. The same holds for a write whose
    /// future is dropped while it stores them.
    pub async fn write<T: Element>(&mut self, region: impl IntoRegion, values: &[T]) -> Result<()> {
        self.array.check_element::<T>()?;
        self.write_bytes(region, as_bytes(values)).await
    }

    /// Write raw bytes (native byte order, C order) of a fixed-size data type into `region`.
    ///
    /// # Errors
    /// As [`Array::write_bytes`].
    pub async fn write_bytes(&mut self, region: impl IntoRegion, values: &[u8]) -> Result<()> {
        let array = self.array;
        let region = region.into_region_of(&array.metadata.shape)?;
        if !self.is_buffering() {
            return array.write_bytes(&region, values).await;
        }
        region.check_within(&array.metadata.shape)?;
        let elem = array.element_size()?;
        let expected = region.num_elements()?;
        if values.len() as u64 != expected.saturating_mul(elem as u64) {
            return Err(Error::buffer_size(expected, elem, values.len()));
        }
        array.check_bool_bytes(values)?;
        self.write_values(&region, Values::Fixed(values, elem))
            .await
    }

    /// Write [`ArrayBytes`] of any data type (fixed-size or variable-length) into `region`.
    ///
    /// # Errors
    /// As [`Array::write_array_bytes`].
    pub async fn write_array_bytes(
        &mut self,
        region: impl IntoRegion,
        values: ArrayBytes,
    ) -> Result<()> {
        let array = self.array;
        let region = region.into_region_of(&array.metadata.shape)?;
        let vlen = match values {
            ArrayBytes::Fixed(bytes) => return self.write_bytes(&region, &bytes).await,
            ArrayBytes::Variable(vlen) => vlen,
        };
        if !self.is_buffering() {
            return array
                .write_array_bytes(&region, ArrayBytes::Variable(vlen))
                .await;
        }
        region.check_within(&array.metadata.shape)?;
        if array.metadata.data_type.fixed_size().is_some() {
            return Err(Error::unsupported(
                array.path.as_str(),
                "variable-length values for a fixed-size data type",
            ));
        }
        let expected = region.num_elements()?;
        if vlen.len() as u64 != expected {
            return Err(Error::BufferSize {
                expected,
                found: vlen.len() as u64,
            });
        }
        self.write_values(&region, Values::Variable(&vlen)).await
    }

    /// Write strings (or any `AsRef<str>`) to a `string` array.
    ///
    /// # Errors
    /// As [`Array::write_text`].
    pub async fn write_text<T: AsRef<str>>(
        &mut self,
        region: impl IntoRegion,
        values: &[T],
    ) -> Result<()> {
        self.array
            .check_vlen(zarr_core::DataType::String, "strings")?;
        let vlen = VlenBytes::from_elements(values.iter().map(|v| v.as_ref().as_bytes()));
        self.write_array_bytes(region, ArrayBytes::Variable(vlen))
            .await
    }

    /// Store every shard written in part: its inner chunks not written keep their stored
    /// bytes (read with two requests per shard: the index, then those inner chunks), or the
    /// fill value where the shard is not stored. A shard left with only empty inner chunks
    /// is erased (or stored as an empty shard, as
    /// [`ArrayOptions::with_write_empty_chunks`](crate::ArrayOptions::with_write_empty_chunks)
    /// says).
    ///
    /// # Errors
    /// Store and shard errors (such as a corrupt index of a stored shard). Shards are stored
    /// independently: after an error, some of them may be stored; the writer is dropped with
    /// the others, which a `tracing` warning counts.
    pub async fn finish(mut self) -> Result<()> {
        let array = self.array;
        if self.pending.is_empty() {
            return Ok(());
        }
        let span = tracing::debug_span!(
            "zarr.shard_writer.finish",
            array = %array.path,
            shards = self.pending.len()
        );
        let _cache = array.index_cache_write_guard();
        // Each shard leaves `pending` once stored (its bytes are shared with the copy
        // completed, not copied).
        let shards: Vec<(Vec<u64>, Pending)> = self
            .pending
            .iter()
            .map(|(index, shard)| (index.clone(), shard.clone()))
            .collect();
        let mut stored = stream::iter(shards)
            .map(|(index, shard)| async move { complete(array, shard).await.map(|()| index) })
            .buffer_unordered(array.options.io_concurrency());
        async {
            while let Some(index) = stored.try_next().await? {
                self.pending.remove(&index);
            }
            Ok(())
        }
        .instrument(span)
        .await
    }

    /// Encode the inner chunks `region` touches, keep them, and store the shards completed.
    async fn write_values(&mut self, region: &Region, values: Values<'_>) -> Result<()> {
        if region.is_empty() {
            return Ok(());
        }
        let span = tracing::debug_span!(
            "zarr.shard_writer.write",
            array = %self.array.path,
            region = %region,
        );
        self.encode_and_store(region, values).instrument(span).await
    }

    async fn encode_and_store(&mut self, region: &Region, values: Values<'_>) -> Result<()> {
        let array = self.array;
        let metadata = &array.metadata;
        let mut jobs = Vec::new();
        let mut reads = Vec::new();
        // Shards this write touches first. Nothing in `self.pending` changes until every
        // inner chunk is encoded, so that a write that fails leaves the writer as it was.
        let mut fresh: BTreeMap<Vec<u64>, Pending> = BTreeMap::new();
        for selection in metadata
            .chunk_grid
            .chunks_in_region(&metadata.shape, region)?
        {
            let shard = selection.chunk;
            if !self.pending.contains_key(&shard) {
                let key = array.chunk_key_unchecked(&shard)?;
                let codec = array.sharding(&selection.chunk_shape)?.ok_or_else(|| {
                    Error::unsupported(array.path.as_str(), "a shard without the sharding codec")
                })?;
                fresh.insert(shard.clone(), Pending::new(array, &shard, key, codec)?);
            }
            let given = self
                .pending
                .get(&shard)
                .or_else(|| fresh.get(&shard))
                .expect("a shard just made pending");
            let codec = &given.codec;
            let inside = metadata
                .chunk_grid
                .chunk_region_clipped(&metadata.shape, &shard)?;
            let shard_origin = inside.starts();
            let inside = inside.shape();
            for (chunk, linear) in inner_chunks(codec, &selection.within_chunk) {
                let inner = codec.inner_chunk_shape();
                let origin: Vec<u64> = chunk.iter().zip(inner).map(|(c, n)| c * n).collect();
                // The inner chunk's elements inside the array, and those the write covers
                // (both in shard coordinates).
                let within_array: Vec<std::ops::Range<u64>> = origin
                    .iter()
                    .zip(inner)
                    .zip(&inside)
                    .map(|((o, n), len)| *o..(o + n).min(*len))
                    .collect();
                let covered: Vec<std::ops::Range<u64>> = within_array
                    .iter()
                    .zip(selection.within_chunk.ranges())
                    .map(|(a, w)| a.start.max(w.start)..a.end.min(w.end))
                    .collect();
                let shift = |ranges: &[std::ops::Range<u64>], by: &[u64], to: &[u64]| {
                    Region::try_new(
                        ranges
                            .iter()
                            .zip(by)
                            .zip(to)
                            .map(|((r, b), t)| r.start - b + t..r.end - b + t)
                            .collect(),
                    )
                };
                let dst = shift(&covered, &origin, &vec![0; origin.len()])?;
                let src = shift(
                    &covered,
                    &selection.within_chunk.starts(),
                    &selection.within_output.starts(),
                )?;
                let base = if covered == within_array {
                    Base::Fill {
                        whole: dst.shape() == inner,
                    }
                } else if let Some(earlier) = &given.parts[linear] {
                    Base::Given(earlier.clone())
                } else {
                    // Read what the store holds of the inner chunk (once all jobs are planned).
                    let part = shift(&within_array, &origin, &vec![0; origin.len()])?;
                    let in_array = shift(&within_array, &vec![0; origin.len()], &shard_origin)?;
                    reads.push((jobs.len(), in_array));
                    Base::Stored(ArrayBytes::fixed(Vec::new()), part)
                };
                let partial = (covered != within_array).then(|| {
                    within_array
                        .iter()
                        .map(|r| r.end - r.start)
                        .product::<u64>()
                });
                jobs.push(Job {
                    shard: shard.clone(),
                    linear,
                    chunk,
                    dst,
                    src,
                    partial,
                    base,
                });
            }
        }
        // The stored parts of inner chunks written in part for the first time.
        let io = array.options.io_concurrency();
        let stored: Vec<(usize, ArrayBytes)> = stream::iter(reads)
            .map(|(job, in_array)| async move {
                array
                    .read_array_bytes(&in_array)
                    .await
                    .map(|bytes| (job, bytes))
            })
            .buffered(io)
            .try_collect()
            .await?;
        for (job, bytes) in stored {
            if let Base::Stored(slot, _) = &mut jobs[job].base {
                *slot = bytes;
            }
        }
        let region_shape = region.shape();
        let encode = |job: &Job| -> Result<Option<Bytes>> {
            let Pending { key, codec, .. } = self
                .pending
                .get(&job.shard)
                .or_else(|| fresh.get(&job.shard))
                .expect("every shard a job touches is pending");
            let chunk = compose(array, key, &job.shard, codec, job, values, &region_shape)?;
            codec
                .encode_inner_chunk(chunk, &job.chunk)
                .map_err(|e| array.shard_error_at(key, &job.shard, e))
        };
        let encoded: Vec<Option<Bytes>> = if jobs.len() == 1 {
            vec![encode(&jobs[0])?]
        } else {
            jobs.par_iter()
                .with_max_len(1)
                .map(encode)
                .collect::<Result<_>>()?
        };
        self.pending.append(&mut fresh);
        let mut touched = Vec::new();
        for (job, bytes) in jobs.into_iter().zip(encoded) {
            let pending = self
                .pending
                .get_mut(&job.shard)
                .expect("every shard a job touches is pending");
            let was_whole = pending.parts[job.linear].replace(bytes).is_some()
                && !pending.partial.contains_key(&job.linear);
            let now_whole = match job.partial {
                None => {
                    pending.partial.remove(&job.linear);
                    true
                }
                Some(_) if was_whole => true,
                Some(needed) => {
                    let shape = pending.codec.inner_chunk_shape();
                    let coverage = pending
                        .partial
                        .entry(job.linear)
                        .or_insert_with(|| Coverage::new(shape, needed));
                    let whole = coverage.mark(shape, &job.dst);
                    if whole {
                        pending.partial.remove(&job.linear);
                    }
                    whole
                }
            };
            if now_whole && !was_whole {
                pending.missing -= 1;
            }
            if touched.last() != Some(&job.shard) {
                touched.push(job.shard);
            }
        }
        touched.retain(|shard| self.pending.get(shard).is_some_and(|p| p.missing == 0));
        if touched.is_empty() {
            return Ok(());
        }
        // The completed shards stay pending until they are stored: should storing fail (or
        // this future be dropped), `finish` stores them.
        let pending = &self.pending;
        let values = touched
            .par_iter()
            .map(|shard| {
                let done = &pending[shard];
                Ok((done.key.clone(), done.value(array)?))
            })
            .collect::<Result<Vec<_>>>()?;
        tracing::debug!(shards = values.len(), "storing completed shards");
        {
            let _cache = array.index_cache_write_guard();
            array
                .sink()
                .put_many(array, values, io, Locks::Each)
                .await?;
        }
        for shard in &touched {
            self.pending.remove(shard);
        }
        Ok(())
    }
}

impl<S: WritableStore + ?Sized> Drop for ShardWriter<'_, S> {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            tracing::warn!(
                array = %self.array.path,
                shards = self.pending.len(),
                "a ShardWriter was dropped before finish: its partly written shards are not \
                 stored"
            );
        }
    }
}

/// The inner chunks (indices, C-order position) `within` (shard coordinates) touches, in C
/// order.
fn inner_chunks(codec: &ShardingCodec, within: &Region) -> Vec<(Vec<u64>, usize)> {
    let inner = codec.inner_chunk_shape();
    let per_shard = codec.chunks_per_shard();
    let lo: Vec<u64> = within
        .ranges()
        .iter()
        .zip(inner)
        .map(|(r, n)| r.start / n)
        .collect();
    let hi: Vec<u64> = within
        .ranges()
        .iter()
        .zip(inner)
        .map(|(r, n)| (r.end - 1) / n + 1)
        .collect();
    let boxed =
        Region::try_new(lo.iter().zip(&hi).map(|(a, b)| *a..*b).collect()).expect("lo <= hi");
    let count = boxed.num_elements().unwrap_or(0);
    let shape = boxed.shape();
    (0..count)
        .filter_map(|i| {
            let at = zarr_core::unravel_index(i, &shape)?;
            let chunk: Vec<u64> = at.iter().zip(&lo).map(|(a, l)| a + l).collect();
            let linear = zarr_core::ravel_index(&chunk, per_shard)?;
            Some((chunk, usize::try_from(linear).ok()?))
        })
        .collect()
}

/// The inner chunk of `job`: its base with the write's values placed in it.
fn compose<S: ?Sized>(
    array: &Array<S>,
    key: &StoreKey,
    shard: &[u64],
    codec: &ShardingCodec,
    job: &Job,
    values: Values<'_>,
    values_shape: &[u64],
) -> Result<ArrayBytes> {
    let repr = codec.inner_chunk_representation();
    let shape = repr.shape();
    let fill = || ArrayBytes::fill(repr).map_err(|e| array.chunk_error(key, e));
    let base = match &job.base {
        Base::Fill { whole: true } => match values {
            // Every element is written below: start from zeros, not the fill value.
            Values::Fixed(..) => ArrayBytes::fixed(
                repr.fixed_size_usize()
                    .and_then(zarr_codecs::zeroed_bytes)
                    .map_err(|e| array.chunk_error(key, e))?,
            ),
            Values::Variable(_) => fill()?,
        },
        Base::Fill { whole: false } | Base::Given(None) => fill()?,
        Base::Given(Some(encoded)) => codec
            .decode_inner_chunk_of(Some(key), encoded.clone(), &job.chunk)
            .map_err(|e| array.shard_error_at(key, shard, e))?,
        Base::Stored(part, at) => {
            let part_values = match part {
                ArrayBytes::Fixed(bytes) => Values::Fixed(bytes, repr.element_size().unwrap_or(1)),
                ArrayBytes::Variable(vlen) => Values::Variable(vlen),
            };
            let whole = Region::full(&at.shape());
            place(array, fill()?, shape, at, part_values, &at.shape(), &whole)?
        }
    };
    place(array, base, shape, &job.dst, values, values_shape, &job.src)
}

/// `chunk` (of `shape`) with the elements `src` of `values` (of `values_shape`) placed at
/// `dst`.
fn place<S: ?Sized>(
    array: &Array<S>,
    chunk: ArrayBytes,
    shape: &[u64],
    dst: &Region,
    values: Values<'_>,
    values_shape: &[u64],
    src: &Region,
) -> Result<ArrayBytes> {
    let codecs_error = |e| array.codecs_error(e);
    match (chunk, values) {
        (ArrayBytes::Fixed(bytes), Values::Fixed(values, elem)) => {
            let mut buffer = Vec::from(bytes);
            {
                let view = ArrayViewMut::new(&mut buffer, shape, elem).map_err(codecs_error)?;
                // SAFETY: the only view of `buffer` in use.
                let mut target = unsafe { view.subview(dst.clone()) }.map_err(codecs_error)?;
                target
                    .copy_from(values, values_shape, src)
                    .map_err(codecs_error)?;
            }
            Ok(ArrayBytes::fixed(buffer))
        }
        (ArrayBytes::Variable(base), Values::Variable(values)) => {
            // Each element of the chunk is element `id` of the base below `n`, else element
            // `id - n` of the values.
            let n = base.len() as u64;
            let mut sources: Vec<u64> = (0..n).collect();
            let from_values: Vec<u64> = element_ids(values_shape, src)?
                .into_iter()
                .map(|i| i + n)
                .collect();
            {
                let view = ArrayViewMut::new(bytes_of_mut(&mut sources), shape, 8)
                    .map_err(codecs_error)?;
                // SAFETY: the only view of `sources` in use.
                let mut target = unsafe { view.subview(dst.clone()) }.map_err(codecs_error)?;
                let dst_shape = dst.shape();
                target
                    .copy_from(
                        bytes_of(&from_values),
                        &dst_shape,
                        &Region::full(&dst_shape),
                    )
                    .map_err(codecs_error)?;
            }
            Ok(ArrayBytes::Variable(VlenBytes::from_elements(
                sources.iter().map(|&id| {
                    if id < n {
                        base.get(id as usize).unwrap_or(&[])
                    } else {
                        values.get((id - n) as usize).unwrap_or(&[])
                    }
                }),
            )))
        }
        _ => Err(Error::unsupported(
            array.path.as_str(),
            "a chunk and values of different kinds (fixed-size and variable-length)",
        )),
    }
}

/// Store a shard written in part: its missing inner chunks from the stored shard, if any.
async fn complete<S: WritableStore + ?Sized>(array: &Array<S>, mut shard: Pending) -> Result<()> {
    let _guard = chunk_lock(array, &shard.key).lock().await;
    let codec = Arc::clone(&shard.codec);
    let missing: Vec<usize> = (0..shard.parts.len())
        .filter(|&i| shard.parts[i].is_none())
        .collect();
    let store = array.read_store();
    let shard_error = |e| array.shard_error(&shard.key, e);
    // Every inner chunk written (some only in part, merged with what was stored then):
    // nothing of the stored shard is needed.
    let index = if missing.is_empty() {
        None
    } else {
        codec
            .fetch_index(store, &shard.key)
            .await
            .map_err(shard_error)?
    };
    match index {
        Some(index) => {
            let per_shard = codec.chunks_per_shard();
            let inner = codec.inner_chunk_shape();
            let chunks: Vec<Vec<u64>> = missing
                .iter()
                .map(|&i| zarr_core::unravel_index(i as u64, per_shard).unwrap_or_default())
                .collect();
            let regions = chunks
                .iter()
                .map(|c| {
                    Region::try_new(
                        c.iter()
                            .zip(inner)
                            .map(|(i, n)| i * n..(i + 1) * n)
                            .collect(),
                    )
                })
                .collect::<zarr_core::Result<Vec<_>>>()?;
            let fetch = codec
                .fetch_chunks_of(store, &shard.key, Arc::new(index), &regions)
                .await
                .map_err(shard_error)?;
            for (&i, chunk) in missing.iter().zip(&chunks) {
                shard.parts[i] = Some(fetch.encoded_chunk(chunk).cloned());
            }
        }
        None => {
            for &i in &missing {
                shard.parts[i] = Some(None);
            }
        }
    }
    shard.missing = 0;
    let value = shard.value(array)?;
    array
        .sink()
        .put_many(array, vec![(shard.key, value)], 1, Locks::Held)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Coverage counts each element once, across overlapping regions, in any rank.
    #[test]
    fn coverage_counts_each_element_once() {
        let shape = [4u64, 5, 6];
        let mut coverage = Coverage::new(&shape, 4 * 5 * 6);
        let mut seen = std::collections::HashSet::new();
        let regions = [
            vec![1..3, 0..5, 2..4],
            vec![0..4, 4..5, 0..6],
            vec![2..4, 1..3, 3..6],
            vec![1..3, 0..5, 2..4],
        ];
        for ranges in regions {
            let region = Region::try_new(ranges.clone()).unwrap();
            for z in ranges[0].clone() {
                for y in ranges[1].clone() {
                    for x in ranges[2].clone() {
                        seen.insert((z, y, x));
                    }
                }
            }
            assert!(!coverage.mark(&shape, &region));
            assert_eq!(coverage.written, seen.len() as u64);
            for &(z, y, x) in &seen {
                let bit = (z * 5 + y) * 6 + x;
                assert_ne!(coverage.bits[(bit / 64) as usize] & (1 << (bit % 64)), 0);
            }
        }
        assert!(coverage.mark(&shape, &Region::full(&shape)));
        assert_eq!(coverage.written, 120);
        // 0-d: one element.
        let mut scalar = Coverage::new(&[], 1);
        assert!(scalar.mark(&[], &Region::full(&[])));
        // An edge inner chunk: 2 of its 3 rows lie inside the array.
        let mut edge = Coverage::new(&[3, 4], 8);
        assert!(!edge.mark(&[3, 4], &Region::try_new(vec![0..1, 0..4]).unwrap()));
        assert!(edge.mark(&[3, 4], &Region::try_new(vec![1..2, 0..4]).unwrap()));
    }
}
