//! Store-aware reads: fetch what a region needs with at most two requests (I/O), then decode
//! it in parallel (CPU).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use zarr_codecs::{ArrayBytes, ArrayViewMut};
use zarr_core::Region;
use zarr_store::{ByteRange, ReadableStore, StoreKey};

use crate::codec::{IndexLocation, ShardingCodec};
use crate::error::{Error, Result, ShardName};
use crate::index::ShardIndex;

/// Ranges closer than this are read as one range (the bytes between are read and dropped):
/// one request instead of two costs more than a few KiB on every store.
pub const COALESCE_GAP: u64 = 16 * 1024;

/// A fetch's inner chunks (position in C order, byte range) and the ranges it reads (each
/// with the positions in the first list of the inner chunks it holds).
type FetchPlan = (Vec<(usize, Range<u64>)>, Vec<(Range<u64>, Vec<usize>)>);

/// The bytes read for the merged ranges of a [`FetchPlan`].
fn read_len(merged: &[(Range<u64>, Vec<usize>)]) -> u64 {
    merged
        .iter()
        .fold(0u64, |n, (m, _)| n.saturating_add(m.end - m.start))
}

/// The bytes a region of one shard needs: the shard's index and the encoded inner chunks the
/// region touches. Made by [`ShardingCodec::fetch`] (I/O), consumed by
/// [`ShardingCodec::decode_fetched_into_view`] or [`ShardingCodec::decode_fetched`] (CPU).
///
/// The encoded chunks are slices of the buffers the store returned: no copies.
#[derive(Debug, Clone)]
pub struct ShardFetch {
    key: StoreKey,
    index: Arc<ShardIndex>,
    region: Region,
    /// Fetched inner chunks by position in C order, ascending.
    chunks: Vec<(usize, Bytes)>,
    /// The bytes the store returned (the chunks are slices of them).
    read: u64,
}

impl ShardFetch {
    /// The shard's key.
    pub fn key(&self) -> &StoreKey {
        &self.key
    }

    /// The shard's index (share it to fetch other regions of the same shard without reading
    /// the index again, see [`ShardingCodec::fetch_chunks`]).
    pub fn index(&self) -> &Arc<ShardIndex> {
        &self.index
    }

    /// The region (shard coordinates) the fetch covers.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The encoded bytes of the fetched inner chunk at `chunk` (indices in the inner chunk
    /// grid), or `None` if it is empty or was not fetched.
    pub fn encoded_chunk(&self, chunk: &[u64]) -> Option<&Bytes> {
        let linear = self.index.linear_index(chunk)?;
        self.get(linear)
    }

    fn get(&self, linear: usize) -> Option<&Bytes> {
        self.chunks
            .binary_search_by_key(&linear, |(l, _)| *l)
            .ok()
            .map(|pos| &self.chunks[pos].1)
    }

    /// The number of encoded bytes of the fetched inner chunks.
    pub fn encoded_bytes(&self) -> u64 {
        self.chunks.iter().map(|(_, b)| b.len() as u64).sum()
    }

    /// The number of bytes the store returned, which the fetch holds until dropped: the
    /// encoded inner chunks and the gaps read between them (see [`COALESCE_GAP`]); what
    /// [`ShardingCodec::fetch_len`] predicts.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }
}

impl ShardingCodec {
    /// The byte range of the index in a stored shard: a suffix range for `end`, a prefix range
    /// for `start`.
    pub fn index_byte_range(&self) -> ByteRange {
        match self.index_location() {
            IndexLocation::End => ByteRange::suffix(self.index_size()),
            IndexLocation::Start => ByteRange::new(0, self.index_size()),
        }
    }

    /// Read a shard's index with one request. `None` if the shard is not stored.
    ///
    /// The entries are checked as far as the index alone allows (no overflow; with the index
    /// at the start, no entry overlapping it). Entries reaching past the end of the shard are
    /// reported when the chunks are read.
    ///
    /// # Errors
    /// [`Error::ShardTooSmall`] if the shard is shorter than its index; [`Error::IndexDecode`]
    /// (such as a checksum mismatch); [`Error::EntryOutOfBounds`] /
    /// [`Error::EntryOverlapsIndex`]; store errors.
    pub async fn fetch_index(
        &self,
        store: &dyn ReadableStore,
        key: &StoreKey,
    ) -> Result<Option<ShardIndex>> {
        let request = [(key.clone(), self.index_byte_range())];
        let mut answer = match store.get_partial_values(&request).await {
            Ok(answer) => answer,
            Err(zarr_store::Error::RangeOutOfBounds { size, .. }) => {
                return Err(Error::ShardTooSmall {
                    shard: ShardName::from(key),
                    size,
                    index_size: self.index_size(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let Some(encoded) = answer.pop().flatten() else {
            return Ok(None);
        };
        if encoded.len() as u64 != self.index_size() {
            return Err(Error::ShardChanged {
                shard: ShardName::from(key),
            });
        }
        let index = self.decode_index(encoded, Some(key))?;
        let index_bytes = match self.index_location() {
            IndexLocation::Start => Some(0..self.index_size()),
            IndexLocation::End => None,
        };
        index.validate(Some(key), None, index_bytes)?;
        Ok(Some(index))
    }

    /// Read the inner chunks `region` (shard coordinates) needs, given the shard's index, with
    /// one `get_partial_values` request (none if every touched inner chunk is empty). Ranges
    /// closer than [`COALESCE_GAP`] are merged.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the region does not lie in the shard;
    /// [`Error::EntryOutOfBounds`] naming the inner chunk if the index points past the end of
    /// the shard; [`Error::ShardChanged`] if the shard disappeared since the index was read;
    /// store errors.
    pub async fn fetch_chunks(
        &self,
        store: &dyn ReadableStore,
        key: &StoreKey,
        index: Arc<ShardIndex>,
        region: &Region,
    ) -> Result<ShardFetch> {
        self.fetch_chunks_of(store, key, index, std::slice::from_ref(region))
            .await
    }

    /// Read the inner chunks any of `regions` (shard coordinates) needs, given the shard's
    /// index, with one `get_partial_values` request (none if every touched inner chunk is
    /// empty): many small reads of one shard, such as the points of a coordinate selection,
    /// cost one request instead of one each. Ranges closer than [`COALESCE_GAP`] are merged,
    /// and an inner chunk two regions share is read once.
    ///
    /// The fetch's [`region`](ShardFetch::region) is the smallest box holding all of
    /// `regions`; decode each of them from it with
    /// [`decode_fetched_into_view`](Self::decode_fetched_into_view) or
    /// [`decode_fetched`](Self::decode_fetched). Decoding any other region that needs an
    /// inner chunk none of `regions` touches is an [`Error::InvalidRegion`].
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_codecs::{ArrayBytes, BytesCodec, ChunkRepresentation, Codec};
    /// use zarr_core::{DataType, FillValue, Region};
    /// use zarr_sharding::{IndexLocation, ShardingCodec};
    /// use zarr_store::{MemoryStore, RecordingStore, StoreKey, WritableStore};
    ///
    /// let shard = ChunkRepresentation::try_new(vec![8], DataType::UInt8, FillValue::new([0]))?;
    /// let codec = ShardingCodec::try_new(
    ///     shard,
    ///     vec![2],
    ///     vec![Codec::ArrayToBytes(Arc::new(BytesCodec::little()))],
    ///     ShardingCodec::default_index_codecs(),
    ///     IndexLocation::End,
    /// )?;
    /// let store = RecordingStore::new(MemoryStore::new());
    /// let key = StoreKey::new("c/0");
    /// let encoded = codec.encode_shard(ArrayBytes::fixed((1..=8).collect::<Vec<u8>>()))?;
    /// store.set(&key, encoded.unwrap()).await?;
    /// let index = Arc::new(codec.fetch_index(&store, &key).await?.unwrap());
    /// // Elements 1 and 6: inner chunks 0 and 3, read with one request.
    /// let points = [Region::try_new(vec![1..2])?, Region::try_new(vec![6..7])?];
    /// let fetch = codec.fetch_chunks_of(&store, &key, index, &points).await?;
    /// assert_eq!(store.stats().partial_reads, 2); // the index, then both inner chunks
    /// let second = codec.decode_fetched(&fetch, &points[1])?;
    /// assert_eq!(second, ArrayBytes::fixed(vec![7u8]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`fetch_chunks`](Self::fetch_chunks), for any of the regions.
    pub async fn fetch_chunks_of(
        &self,
        store: &dyn ReadableStore,
        key: &StoreKey,
        index: Arc<ShardIndex>,
        regions: &[Region],
    ) -> Result<ShardFetch> {
        let (needed, merged) = self.plan_fetch(&index, regions)?;
        let mut fetch = ShardFetch {
            key: key.clone(),
            index: Arc::clone(&index),
            region: bounding_box(self.shard_representation().shape(), regions)?,
            chunks: Vec::with_capacity(needed.len()),
            read: read_len(&merged),
        };
        if needed.is_empty() {
            return Ok(fetch);
        }
        let requests: Vec<(StoreKey, ByteRange)> = merged
            .iter()
            .map(|(m, _)| Ok((key.clone(), ByteRange::try_new(m.start, m.end)?)))
            .collect::<Result<_>>()?;
        let answers = match store.get_partial_values(&requests).await {
            Ok(answers) => answers,
            Err(zarr_store::Error::RangeOutOfBounds { size, .. }) => {
                // Name the first inner chunk that does not fit.
                let (linear, r) = needed
                    .iter()
                    .find(|(_, r)| r.end > size)
                    .cloned()
                    .unwrap_or((0, 0..0));
                return Err(Error::EntryOutOfBounds {
                    shard: ShardName::from(key),
                    chunk: index.chunk_indices(linear),
                    offset: r.start,
                    nbytes: r.end - r.start,
                    shard_size: Some(size),
                });
            }
            Err(e) => return Err(e.into()),
        };
        if answers.len() != merged.len() {
            return Err(Error::ShardChanged {
                shard: ShardName::from(key),
            });
        }
        for ((m, members), answer) in merged.iter().zip(answers) {
            let Some(bytes) = answer else {
                return Err(Error::ShardChanged {
                    shard: ShardName::from(key),
                });
            };
            if bytes.len() as u64 != m.end - m.start {
                return Err(Error::ShardChanged {
                    shard: ShardName::from(key),
                });
            }
            for &pos in members {
                let (linear, r) = &needed[pos];
                let start = (r.start - m.start) as usize;
                let end = (r.end - m.start) as usize;
                fetch.chunks.push((*linear, bytes.slice(start..end)));
            }
        }
        fetch.chunks.sort_by_key(|(l, _)| *l);
        Ok(fetch)
    }

    /// How many bytes [`fetch_chunks_of`](Self::fetch_chunks_of) reads for `regions` given
    /// the shard's `index`: the encoded inner chunks the regions touch and the gaps of at most
    /// [`COALESCE_GAP`] bytes read between them. What a fetch holds, known before it is made,
    /// so that a reader can bound the memory of the fetches it starts.
    ///
    /// # Errors
    /// As [`fetch_chunks_of`](Self::fetch_chunks_of), without the store's.
    pub fn fetch_len(&self, index: &ShardIndex, regions: &[Region]) -> Result<u64> {
        let (_, merged) = self.plan_fetch(index, regions)?;
        Ok(read_len(&merged))
    }

    /// The stored inner chunks `regions` touch, as (position in C order, byte range) sorted by
    /// range, and the ranges to read: near ranges merged, each with the positions (in the
    /// first list) of the inner chunks it holds.
    fn plan_fetch(&self, index: &ShardIndex, regions: &[Region]) -> Result<FetchPlan> {
        regions.iter().try_for_each(|r| self.check_region(r))?;
        self.check_index(index)?;
        let mut linears: Vec<usize> = regions
            .iter()
            .flat_map(|r| self.touched(r))
            .map(|t| t.linear)
            .collect();
        linears.sort_unstable();
        linears.dedup();
        let mut needed: Vec<(usize, Range<u64>)> = linears
            .into_iter()
            .filter_map(|linear| index.chunk_range(linear).map(|r| (linear, r)))
            .collect();
        needed.sort_by_key(|(_, r)| (r.start, r.end));
        let mut merged: Vec<(Range<u64>, Vec<usize>)> = Vec::new();
        for (pos, (_, r)) in needed.iter().enumerate() {
            match merged.last_mut() {
                Some((m, members)) if r.start <= m.end.saturating_add(COALESCE_GAP) => {
                    m.end = m.end.max(r.end);
                    members.push(pos);
                }
                _ => merged.push((r.clone(), vec![pos])),
            }
        }
        Ok((needed, merged))
    }

    /// Split `region` (shard coordinates) into parts whose stored inner chunks, by `index`,
    /// hold at most `max_bytes` encoded bytes each (a part of one inner chunk may hold more),
    /// so that a large read can be fetched and decoded piece by piece with bounded memory.
    ///
    /// The parts are boxes that tile `region`, in C order, cut along inner chunk boundaries:
    /// whole slabs along the first dimension where they fit, otherwise slabs of those along the
    /// next dimension, and so on. A region within `max_bytes` is returned whole. Fetch each
    /// part with [`fetch_chunks`](Self::fetch_chunks) (sharing the index).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use zarr_codecs::{BytesCodec, ChunkRepresentation, Codec};
    /// use zarr_core::{DataType, FillValue, Region};
    /// use zarr_sharding::{IndexLocation, ShardIndex, ShardingCodec};
    ///
    /// let shard = ChunkRepresentation::try_new(vec![4, 4], DataType::UInt8, FillValue::new([0]))?;
    /// let codec = ShardingCodec::try_new(
    ///     shard,
    ///     vec![2, 2],
    ///     vec![Codec::ArrayToBytes(Arc::new(BytesCodec::little()))],
    ///     ShardingCodec::default_index_codecs(),
    ///     IndexLocation::End,
    /// )?;
    /// // Four inner chunks of 100 bytes each.
    /// let mut index = ShardIndex::new_empty(&[2, 2])?;
    /// for i in 0..4 {
    ///     index.set(i, Some(100 * i as u64..100 * (i as u64 + 1)));
    /// }
    /// let parts = codec.split_region(&index, &Region::full(&[4, 4]), 200)?;
    /// assert_eq!(parts, [Region::try_new(vec![0..2, 0..4])?, Region::try_new(vec![2..4, 0..4])?]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the region does not lie in the shard; an index of another
    /// shape.
    pub fn split_region(
        &self,
        index: &ShardIndex,
        region: &Region,
        max_bytes: u64,
    ) -> Result<Vec<Region>> {
        self.check_region(region)?;
        self.check_index(index)?;
        if region.is_empty() {
            return Ok(vec![region.clone()]);
        }
        let inner = self.inner_chunk_shape();
        // The touched inner chunks, as ranges of inner chunk indices per dimension.
        let block: Vec<Range<u64>> = region
            .ranges()
            .iter()
            .zip(inner)
            .map(|(r, &c)| r.start / c..r.end.div_ceil(c))
            .collect();
        let mut blocks = Vec::new();
        split_block(index, block, 0, max_bytes, &mut blocks);
        blocks
            .into_iter()
            .map(|block| {
                let ranges = block
                    .iter()
                    .zip(inner)
                    .zip(region.ranges())
                    .map(|((b, &c), r)| (b.start * c).max(r.start)..(b.end * c).min(r.end))
                    .collect();
                Ok(Region::try_new(ranges)?)
            })
            .collect()
    }

    /// Read what `region` (shard coordinates) of the shard at `key` needs: at most two store
    /// requests, one for the index (a suffix range for an index at the end, a prefix range for
    /// one at the start) and one for all the needed inner chunks. `None` if the shard is not
    /// stored (the region is all fill value).
    ///
    /// The future is `Send`; decoding happens later, on any thread, with
    /// [`decode_fetched_into_view`](Self::decode_fetched_into_view).
    ///
    /// # Errors
    /// As [`fetch_index`](Self::fetch_index) and [`fetch_chunks`](Self::fetch_chunks).
    pub async fn fetch(
        &self,
        store: &dyn ReadableStore,
        key: &StoreKey,
        region: &Region,
    ) -> Result<Option<ShardFetch>> {
        self.check_region(region)?;
        let Some(index) = self.fetch_index(store, key).await? else {
            return Ok(None);
        };
        self.fetch_chunks(store, key, Arc::new(index), region)
            .await
            .map(Some)
    }

    /// The encoded bytes of one inner chunk (indices in the inner chunk grid) of a stored
    /// shard: two requests (index, chunk). `None` if the shard is missing or the inner chunk is
    /// empty.
    ///
    /// # Errors
    /// As [`fetch`](Self::fetch).
    pub async fn fetch_inner_chunk(
        &self,
        store: &dyn ReadableStore,
        key: &StoreKey,
        chunk: &[u64],
    ) -> Result<Option<Bytes>> {
        let linear = self.linear(chunk)?;
        let Some(index) = self.fetch_index(store, key).await? else {
            return Ok(None);
        };
        if index.chunk_range(linear).is_none() {
            return Ok(None);
        }
        let region = Region::try_new(
            chunk
                .iter()
                .zip(self.inner_chunk_shape())
                .map(|(&i, &c)| i * c..(i + 1) * c)
                .collect(),
        )?;
        let fetch = self
            .fetch_chunks(store, key, Arc::new(index), &region)
            .await?;
        Ok(fetch.get(linear).cloned())
    }

    /// Decode `region` (shard coordinates, within the fetched region) of a fetched shard
    /// straight into `view` (of the region's shape): the inner chunks in parallel on the rayon
    /// pool, each into its own part of the view; empty inner chunks become the fill value.
    ///
    /// # Errors
    /// [`Error::InvalidRegion`] if the region does not lie in the shard, does not match the
    /// view, or needs an inner chunk the fetch did not read; [`Error::InnerChunk`] if an inner
    /// chunk fails to decode; a codec error for variable-length data (use
    /// [`decode_fetched`](Self::decode_fetched)).
    pub fn decode_fetched_into_view(
        &self,
        fetch: &ShardFetch,
        region: &Region,
        view: &mut ArrayViewMut<'_>,
    ) -> Result<()> {
        self.check_region(region)?;
        self.check_index(&fetch.index)?;
        self.decode_into_view_with(Some(&fetch.key), region, view, |linear| {
            self.fetched_chunk(fetch, linear, region)
        })
    }

    /// Decode `region` of a fetched shard into new array bytes: fixed-size elements (as
    /// [`decode_fetched_into_view`](Self::decode_fetched_into_view) into a fresh buffer) or
    /// variable-length ones.
    ///
    /// # Errors
    /// As [`decode_fetched_into_view`](Self::decode_fetched_into_view).
    pub fn decode_fetched(&self, fetch: &ShardFetch, region: &Region) -> Result<ArrayBytes> {
        self.check_region(region)?;
        self.check_index(&fetch.index)?;
        self.decode_region_with(Some(&fetch.key), region, |linear| {
            self.fetched_chunk(fetch, linear, region)
        })
    }

    fn fetched_chunk(
        &self,
        fetch: &ShardFetch,
        linear: usize,
        region: &Region,
    ) -> Result<Option<Bytes>> {
        if fetch.index.chunk_range(linear).is_none() {
            return Ok(None);
        }
        match fetch.get(linear) {
            Some(bytes) => Ok(Some(bytes.clone())),
            None => Err(Error::InvalidRegion {
                region: region.to_string(),
                shard_shape: self.shard_representation().shape().to_vec(),
                reason: format!(
                    "inner chunk {:?} was not fetched (the fetch covered {})",
                    fetch.index.chunk_indices(linear),
                    fetch.region
                ),
            }),
        }
    }

    fn check_index(&self, index: &ShardIndex) -> Result<()> {
        if index.chunks_per_shard() == self.chunks_per_shard() {
            Ok(())
        } else {
            Err(Error::InvalidConfiguration {
                field: "index".into(),
                reason: format!(
                    "an index of {:?} inner chunks does not fit shards of {:?}",
                    index.chunks_per_shard(),
                    self.chunks_per_shard()
                ),
            })
        }
    }
}

/// The encoded bytes the stored inner chunks of `block` (ranges of inner chunk indices) hold.
fn block_bytes(index: &ShardIndex, block: &[Range<u64>]) -> u64 {
    let mut total = 0u64;
    let mut at: Vec<u64> = block.iter().map(|r| r.start).collect();
    if block.iter().any(|r| r.is_empty()) {
        return 0;
    }
    loop {
        if let Some(range) = index
            .linear_index(&at)
            .and_then(|linear| index.chunk_range(linear))
        {
            total = total.saturating_add(range.end - range.start);
        }
        // Next inner chunk in C order.
        let mut d = block.len();
        loop {
            if d == 0 {
                return total;
            }
            d -= 1;
            at[d] += 1;
            if at[d] < block[d].end {
                break;
            }
            at[d] = block[d].start;
        }
    }
}

/// Append to `out`, in C order, boxes tiling `block` (from dimension `from` on, the earlier
/// dimensions are one index wide) that hold at most `max_bytes` each, or are one inner chunk.
fn split_block(
    index: &ShardIndex,
    block: Vec<Range<u64>>,
    from: usize,
    max_bytes: u64,
    out: &mut Vec<Vec<Range<u64>>>,
) {
    let Some(dim) = (from..block.len()).find(|&d| block[d].end - block[d].start > 1) else {
        out.push(block);
        return;
    };
    if block_bytes(index, &block) <= max_bytes {
        out.push(block);
        return;
    }
    let slice = |i: u64| {
        let mut s = block.clone();
        s[dim] = i..i + 1;
        s
    };
    // Consecutive slices along `dim` grouped while they fit; a slice that alone does not fit
    // is split along the next dimensions.
    let mut group_start = block[dim].start;
    let mut group_bytes = 0u64;
    for i in block[dim].clone() {
        let bytes = block_bytes(index, &slice(i));
        if bytes > max_bytes {
            if group_start < i {
                let mut group = block.clone();
                group[dim] = group_start..i;
                out.push(group);
            }
            split_block(index, slice(i), dim + 1, max_bytes, out);
            group_start = i + 1;
            group_bytes = 0;
        } else if group_bytes + bytes > max_bytes && group_start < i {
            let mut group = block.clone();
            group[dim] = group_start..i;
            out.push(group);
            group_start = i;
            group_bytes = bytes;
        } else {
            group_bytes += bytes;
        }
    }
    if group_start < block[dim].end {
        let mut group = block.clone();
        group[dim] = group_start..block[dim].end;
        out.push(group);
    }
}

/// The smallest box holding all of `regions` (an empty box at the origin of a shard of
/// `shape` for none).
fn bounding_box(shape: &[u64], regions: &[Region]) -> Result<Region> {
    let Some((first, rest)) = regions.split_first() else {
        return Ok(Region::try_new(vec![0..0; shape.len()])?);
    };
    let mut ranges = first.ranges().to_vec();
    for region in rest {
        for (range, other) in ranges.iter_mut().zip(region.ranges()) {
            range.start = range.start.min(other.start);
            range.end = range.end.max(other.end);
        }
    }
    Ok(Region::try_new(ranges)?)
}
