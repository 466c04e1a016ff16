//! The write engine: merge and encode chunks in parallel, store them concurrently.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use rayon::prelude::*;
use tokio::sync::OwnedMutexGuard;
use tracing::Instrument;
use zarr_codecs::{ArrayBytes, ArrayViewMut, CodecChain, VlenBytes};
use zarr_core::{ChunkSelection, Region};
use zarr_sharding::ShardingTransformer;
use zarr_sharding::{EncodedChunks, ShardingCodec};
use zarr_store::{ByteRange, ReadableStore, StoreKey, WritableStore};

use crate::array::Array;
use crate::error::{Error, Result};
use crate::locks::{Kind, LockKey, lock_all};
use crate::read::{bytes_of, bytes_of_mut, element_ids};

/// What to do with one chunk after encoding.
enum Action {
    Set(StoreKey, Bytes),
    Erase(StoreKey),
    /// A whole shard whose inner chunks are encoded: assemble it, then store it (or erase
    /// it, when every inner chunk is empty). Assembling is left to the step that stores,
    /// so that the next shard's inner chunks can start encoding meanwhile.
    Assemble(StoreKey, Arc<ShardingCodec>, EncodedChunks),
}

/// The value an action stores under its key (`None`: erase the key). Assembles a shard.
fn finish<S: ?Sized>(array: &Array<S>, action: Action) -> Result<(StoreKey, Option<Bytes>)> {
    match action {
        Action::Set(key, bytes) => Ok((key, Some(bytes))),
        Action::Erase(key) => Ok((key, None)),
        Action::Assemble(key, codec, chunks) => {
            let merged = codec
                .assemble(chunks)
                .map_err(|e| array.shard_error(&key, e))?;
            let value = shard_value(array, &codec, &key, merged)?;
            Ok((key, value))
        }
    }
}

/// A chunk the write touches.
struct Touched {
    selection: ChunkSelection,
    key: StoreKey,
    /// Whether the write covers every element of the chunk that lies inside the array (no
    /// read needed).
    whole: bool,
    /// The chunk's current bytes, for partial writes.
    existing: Option<Bytes>,
}

/// Encode `values` for `key`, or `None` if it is all fill value and empty chunks are not
/// written.
pub(crate) fn encode_chunk<S: ?Sized>(
    array: &Array<S>,
    chain: &CodecChain,
    key: &StoreKey,
    chunk: &[u64],
    values: ArrayBytes,
) -> Result<Option<Bytes>> {
    let repr = chain.decoded_representation();
    values
        .validate(repr)
        .map_err(|e| array.chunk_error(key, e))?;
    if !array.options.write_empty_chunks() && values.is_fill(repr) {
        return Ok(None);
    }
    chain
        .encode(values)
        .map(Some)
        .map_err(|e| array.chunk_error_at(key, chunk, e))
}

/// Whether `selection` covers every element of its chunk that lies inside the array.
fn covers_chunk<S: ?Sized>(array: &Array<S>, selection: &ChunkSelection) -> Result<bool> {
    let inside = array
        .metadata
        .chunk_grid
        .chunk_region_clipped(&array.metadata.shape, &selection.chunk)?;
    Ok(inside.shape() == selection.within_chunk.shape()
        && selection.within_chunk.starts().iter().all(|&s| s == 0))
}

/// The in-process lock of the chunk (or shard) stored at `key`: it serialises read-merge-write
/// of one key, so that two writers updating different parts of one chunk at the same time
/// do not lose either update, and a chunk stored whole is never stored between another
/// write's read of it and that write's store of the merge.
///
/// No deadlock: a writer that holds chunk locks while waiting for another takes all of its
/// locks at once, in key order ([`lock_all`]); a whole chunk stored alone takes its own
/// lock around the store only ([`Locks::Each`]), holding no other while it waits. See
/// [`crate::locks`].
pub(crate) fn chunk_lock<S: ?Sized>(array: &Array<S>, key: &StoreKey) -> LockKey {
    LockKey::new(&*array.store, key.as_str(), Kind::Chunk)
}

/// Who takes the locks of the values [`Sink::put_many`] stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Locks {
    /// The caller holds them (the locks of every key, or of every shard through the
    /// transformer).
    Held,
    /// Each value's store takes its own lock (through the transformer, the locks of all the
    /// shards at once), holding it only while it stores.
    Each,
}

/// Where chunk writes go: the store itself, or the sharding storage transformer wrapping it.
pub(crate) enum Sink<'a, S: ?Sized> {
    Store(&'a S),
    Transformer(&'a ShardingTransformer<S>),
}

impl<S: WritableStore + ?Sized> Array<S> {
    /// Where this array's chunk writes go.
    pub(crate) fn sink(&self) -> Sink<'_, S> {
        match &self.transformer {
            Some(transformer) => Sink::Transformer(transformer),
            None => Sink::Store(&*self.store),
        }
    }
}

impl<S: WritableStore + ?Sized> Sink<'_, S> {
    /// The whole values at `keys` (`None` where missing): `io` requests at a time, or, through
    /// the transformer, two requests in all (the shard indexes, then the chunks).
    async fn get_many(&self, keys: &[StoreKey], io: usize) -> Result<Vec<Option<Bytes>>> {
        match self {
            Sink::Store(store) => stream::iter(keys.iter().cloned())
                .map(|key| async move { store.get(&key).await })
                .buffered(io)
                .try_collect::<Vec<_>>()
                .await
                .map_err(Error::from),
            Sink::Transformer(transformer) => {
                let requests: Vec<(StoreKey, ByteRange)> = keys
                    .iter()
                    .map(|key| (key.clone(), ByteRange::FULL))
                    .collect();
                Ok(transformer.get_partial_values(&requests).await?)
            }
        }
    }

    /// Store (`Some`) or erase (`None`) each value: `io` requests at a time, or, through the
    /// transformer, one write (or erase) per shard.
    pub(crate) async fn put_many<A: ?Sized>(
        &self,
        array: &Array<A>,
        values: Vec<(StoreKey, Option<Bytes>)>,
        io: usize,
        locks: Locks,
    ) -> Result<()> {
        match self {
            Sink::Store(store) => stream::iter(values)
                .map(|(key, value)| async move {
                    let _guard = match locks {
                        Locks::Each => Some(chunk_lock(array, &key).lock().await),
                        Locks::Held => None,
                    };
                    match value {
                        Some(bytes) => store.set(&key, bytes).await,
                        None => store.erase(&key).await,
                    }
                })
                .buffer_unordered(io)
                .try_collect::<Vec<()>>()
                .await
                .map(drop)
                .map_err(Error::from),
            Sink::Transformer(transformer) => {
                let _guards = match locks {
                    Locks::Each => {
                        let keys: Vec<StoreKey> =
                            values.iter().map(|(key, _)| key.clone()).collect();
                        lock_shards_of(array, &keys).await
                    }
                    Locks::Held => Vec::new(),
                };
                transformer
                    .set_or_erase_values(&values)
                    .await
                    .map_err(|source| Error::Sharding {
                        array: array.path.as_str().to_owned(),
                        source: Box::new(source),
                    })
            }
        }
    }

    /// Store or erase one value, outside [`write_chunks`]: it takes the lock of the chunk
    /// (or of its shard, through the transformer) around the store.
    pub(crate) async fn put(
        &self,
        array: &Array<S>,
        key: StoreKey,
        value: Option<Bytes>,
    ) -> Result<()> {
        let _cache = array.index_cache_write_guard();
        self.put_many(array, vec![(key, value)], 1, Locks::Each)
            .await
    }

    /// [`Sink::put`] of a value whose lock ([`lock_unit`]) the caller holds.
    pub(crate) async fn put_locked(
        &self,
        array: &Array<S>,
        key: StoreKey,
        value: Option<Bytes>,
    ) -> Result<()> {
        let _cache = array.index_cache_write_guard();
        self.put_many(array, vec![(key, value)], 1, Locks::Held)
            .await
    }

    /// Erase many values, taking their locks (or their shards') as [`Sink::put`] does.
    pub(crate) async fn erase_many(&self, array: &Array<S>, keys: &[StoreKey]) -> Result<()> {
        let _cache = array.index_cache_write_guard();
        match self {
            Sink::Store(store) => {
                let _guards =
                    lock_all(keys.iter().map(|key| chunk_lock(array, key)).collect()).await;
                Ok(store.erase_values(keys).await?)
            }
            Sink::Transformer(_) => {
                let values = keys.iter().map(|key| (key.clone(), None)).collect();
                self.put_many(array, values, 1, Locks::Each).await
            }
        }
    }
}

/// Through the storage transformer, lock the shards holding `keys` (nothing otherwise).
async fn lock_shards_of<S: ?Sized>(
    array: &Array<S>,
    keys: &[StoreKey],
) -> Vec<OwnedMutexGuard<()>> {
    let Some(transformer) = &array.transformer else {
        return Vec::new();
    };
    let shards = keys
        .iter()
        .filter_map(|key| transformer.shard_of(key))
        .map(|(shard, _)| chunk_lock(array, &shard))
        .collect();
    lock_all(shards).await
}

/// The chunks of `region` in write batches. Without a storage transformer, batches of
/// `batch_size` chunks in C order. Through the transformer, every chunk of one shard lies in
/// one batch (several shards share a batch until it holds `batch_size` chunks), so each
/// shard is read and written once per write, not once per batch.
fn batches<'a, S: WritableStore + ?Sized>(
    array: &'a Array<S>,
    region: &'a Region,
    batch_size: usize,
) -> Result<Box<dyn Iterator<Item = Result<Vec<ChunkSelection>>> + Send + 'a>> {
    let metadata = &array.metadata;
    let grid = &metadata.chunk_grid;
    let shape = &metadata.shape;
    let Some(transformer) = &array.transformer else {
        let mut selections = grid.chunks_in_region(shape, region)?.peekable();
        return Ok(Box::new(std::iter::from_fn(move || {
            selections.peek()?;
            Some(Ok(selections.by_ref().take(batch_size).collect()))
        })));
    };
    let per_shard = transformer.chunks_per_shard().to_vec();
    if region.is_empty() {
        return Ok(Box::new(std::iter::empty()));
    }
    // The chunks the region touches, then the shards they lie in.
    let first_chunk = grid.chunk_of(shape, &region.starts())?.0;
    let last: Vec<u64> = region.ranges().iter().map(|r| r.end - 1).collect();
    let last_chunk = grid.chunk_of(shape, &last)?.0;
    let shard_lo: Vec<u64> = first_chunk
        .iter()
        .zip(&per_shard)
        .map(|(c, n)| c / n)
        .collect();
    let shard_hi: Vec<u64> = last_chunk
        .iter()
        .zip(&per_shard)
        .map(|(c, n)| c / n)
        .collect();
    // Shards in C order (an odometer over shard_lo..=shard_hi).
    let mut next_shard = Some(shard_lo.clone());
    let mut shards = std::iter::from_fn(move || {
        let current = next_shard.take()?;
        let mut following = current.clone();
        for d in (0..following.len()).rev() {
            if following[d] < shard_hi[d] {
                following[d] += 1;
                next_shard = Some(following);
                break;
            }
            following[d] = shard_lo[d];
        }
        Some(current)
    });
    let mut pending: Option<Vec<ChunkSelection>> = None;
    Ok(Box::new(std::iter::from_fn(move || {
        let mut batch = pending.take().unwrap_or_default();
        for shard in shards.by_ref() {
            let group =
                match shard_chunks(array, region, &shard, &per_shard, &first_chunk, &last_chunk) {
                    Ok(group) => group,
                    Err(e) => return Some(Err(e)),
                };
            if !batch.is_empty() && batch.len() + group.len() > batch_size {
                pending = Some(group);
                return Some(Ok(batch));
            }
            batch.extend(group);
        }
        (!batch.is_empty()).then_some(Ok(batch))
    })))
}

/// The chunk selections of `region` inside shard `shard` (transformer shard grid indices),
/// with `within_output` relative to `region`.
fn shard_chunks<S: ?Sized>(
    array: &Array<S>,
    region: &Region,
    shard: &[u64],
    per_shard: &[u64],
    first_chunk: &[u64],
    last_chunk: &[u64],
) -> Result<Vec<ChunkSelection>> {
    let grid = &array.metadata.chunk_grid;
    let shape = &array.metadata.shape;
    let lo: Vec<u64> = shard
        .iter()
        .zip(per_shard)
        .zip(first_chunk)
        // `s * n` is at most a chunk index of the region (s = chunk / n), so it fits.
        .map(|((s, n), f)| (s * n).max(*f))
        .collect();
    let hi: Vec<u64> = shard
        .iter()
        .zip(per_shard)
        .zip(last_chunk)
        .map(|((s, n), l)| (s * n).saturating_add(n - 1).min(*l))
        .collect();
    let start = grid.chunk_region(shape, &lo)?;
    let end = grid.chunk_region(shape, &hi)?;
    let ranges: Vec<std::ops::Range<u64>> = region
        .ranges()
        .iter()
        .zip(start.ranges().iter().zip(end.ranges()))
        .map(|(r, (a, b))| r.start.max(a.start)..r.end.min(b.end))
        .collect();
    let sub = Region::try_new(ranges)?;
    let offset: Vec<u64> = sub
        .starts()
        .iter()
        .zip(region.starts())
        .map(|(s, r)| s - r)
        .collect();
    grid.chunks_in_region(shape, &sub)?
        .map(|mut selection| {
            let shifted = selection
                .within_output
                .ranges()
                .iter()
                .zip(&offset)
                .map(|(r, o)| r.start + o..r.end + o)
                .collect();
            selection.within_output = Region::try_new(shifted)?;
            Ok(selection)
        })
        .collect()
}

/// Run the chunks of `region` through, batch by batch: fetch existing bytes for partial
/// ones, merge and encode in parallel with `merge`, then store them (`io` requests at a time,
/// or one write per shard through the storage transformer). Partial chunks are locked (in
/// the process) from their read until their write.
///
/// With `lock` false the caller holds the lock of the one unit (chunk or shard) the region
/// lies in (see [`lock_unit`]).
///
/// `part`, when given, encodes inner chunks of a whole shard cut from the write's values: the
/// pipeline then encodes such shards as jobs of inner chunks (see [`Plan::Parts`]).
async fn write_chunks<S, F>(
    array: &Array<S>,
    region: &Region,
    lock: bool,
    merge: F,
    part: Option<&PartFn<'_>>,
) -> Result<()>
where
    S: WritableStore + ?Sized,
    F: Fn(&Touched) -> Result<Action> + Sync,
{
    let _cache = array.index_cache_write_guard();
    let sink = array.sink();
    let io = array.options.io_concurrency();
    // A batch ends with a barrier (its last encodes and stores finish before the next batch
    // starts), which leaves cores idle. Batches exist to lock and read the partial chunks
    // they merge; a write that replaces every chunk it touches needs neither, so on the
    // pipeline (which holds at most a window of chunks whatever the batch) its chunks flow
    // through in batches only as long as bounds the bookkeeping. The other schedule encodes
    // a whole batch before storing it, so its batches stay small.
    let pipelined = matches!(sink, Sink::Store(_)) && crate::read::pipeline_handle(2).is_some();
    let batch_size = io.max(4 * rayon::current_num_threads());
    let batch_size = if pipelined && covers_its_chunks(array, region)? {
        WHOLE_CHUNK_BATCH.max(batch_size)
    } else {
        batch_size
    };
    for batch in batches(array, region, batch_size)? {
        let batch = batch?
            .into_iter()
            .map(|selection| {
                let key = array.chunk_key_unchecked(&selection.chunk)?;
                let whole = covers_chunk(array, &selection)?;
                Ok((selection, key, whole))
            })
            .collect::<Result<Vec<_>>>()?;
        // Lock what is read, merged and written back. Through the transformer: every shard
        // the batch touches (a shard is rewritten even when a chunk in it is replaced
        // whole). Otherwise, when the batch has partial chunks: all its chunks, the whole
        // ones too, since a whole chunk stored between another write's read of it and that
        // write's store would be lost; when it has none, each chunk's store takes its own
        // lock ([`Locks::Each`]), so that the batch holds no lock while it encodes.
        let has_partial = batch.iter().any(|(_, _, whole)| !whole);
        let held: Vec<LockKey> = match &array.transformer {
            None if has_partial => batch
                .iter()
                .map(|(_, key, _)| chunk_lock(array, key))
                .collect(),
            None => Vec::new(),
            Some(transformer) => batch
                .iter()
                .filter_map(|(_, key, _)| transformer.shard_of(key))
                .map(|(shard, _)| chunk_lock(array, &shard))
                .collect(),
        };
        let locks = if lock && !has_partial && array.transformer.is_none() {
            Locks::Each
        } else {
            Locks::Held
        };
        let guards = if lock {
            lock_all(held).await
        } else {
            Vec::new()
        };
        let partial: Vec<StoreKey> = batch
            .iter()
            .filter(|(_, _, whole)| !whole)
            .map(|(_, key, _)| key.clone())
            .collect();
        let mut existing = sink.get_many(&partial, io).await?.into_iter();
        let touched: Vec<Touched> = batch
            .into_iter()
            .map(|(selection, key, whole)| Touched {
                selection,
                key,
                whole,
                existing: if whole {
                    None
                } else {
                    existing.next().flatten()
                },
            })
            .collect();
        match (&sink, crate::read::pipeline_handle(touched.len())) {
            (Sink::Store(store), Some(handle)) => tokio::task::block_in_place(|| {
                let window = write_window(array, io, &touched[0].selection.chunk_shape);
                let pipeline = Pipeline {
                    io,
                    window,
                    wide: 2 * rayon::current_num_threads(),
                };
                let plans: Vec<Plan<'_>> = touched.iter().map(|t| plan(array, t, part)).collect();
                let lock_of =
                    |key: &StoreKey| (locks == Locks::Each).then(|| chunk_lock(array, key));
                encode_while_storing(
                    &handle,
                    *store,
                    &touched,
                    &plans,
                    &merge,
                    |action| finish(array, action),
                    &lock_of,
                    pipeline,
                )
            })?,
            _ => {
                let actions: Vec<Action> = if touched.len() == 1 {
                    touched.iter().map(&merge).collect::<Result<_>>()?
                } else {
                    touched.par_iter().map(&merge).collect::<Result<_>>()?
                };
                let values = actions
                    .into_iter()
                    .map(|action| finish(array, action))
                    .collect::<Result<_>>()?;
                sink.put_many(array, values, io, locks).await?;
            }
        }
        drop(guards);
    }
    Ok(())
}

/// Chunks per batch of a write that replaces whole chunks only (see `write_chunks`).
const WHOLE_CHUNK_BATCH: usize = 4096;

/// Whether every chunk `region` touches lies in it whole (as far as the chunk lies inside
/// the array), so that writing the region reads no chunk.
fn covers_its_chunks<S: ?Sized>(array: &Array<S>, region: &Region) -> Result<bool> {
    if region.is_empty() {
        return Ok(true);
    }
    let grid = &array.metadata.chunk_grid;
    let shape = &array.metadata.shape;
    let first = grid.chunk_of(shape, &region.starts())?.0;
    let last_element: Vec<u64> = region.ranges().iter().map(|r| r.end - 1).collect();
    let last = grid.chunk_of(shape, &last_element)?.0;
    let first = grid.chunk_region(shape, &first)?;
    let last = grid.chunk_region_clipped(shape, &last)?;
    Ok(region
        .ranges()
        .iter()
        .zip(first.ranges().iter().zip(last.ranges()))
        .all(|(r, (f, l))| r.start == f.start && r.end == l.end))
}

/// Decoded bytes of chunks a pipelined write may have in flight (at least two chunks, at
/// most `max(io_concurrency, 4 x rayon threads)`): a bound on its memory when chunks are
/// large shards.
const WRITE_BUDGET: usize = 256 << 20;

/// How many chunks of `chunk_shape` a pipelined write keeps encoding, encoded or being
/// stored at once.
fn write_window<S: ?Sized>(array: &Array<S>, io: usize, chunk_shape: &[u64]) -> usize {
    let most = io.max(4 * rayon::current_num_threads()).max(2);
    (WRITE_BUDGET / chunk_bytes(array, chunk_shape).max(1)).clamp(2, most)
}

/// The decoded size of a chunk of `chunk_shape`, roughly (8 bytes per element of a
/// variable-length type).
fn chunk_bytes<S: ?Sized>(array: &Array<S>, chunk_shape: &[u64]) -> usize {
    let elem = match array.metadata.data_type.size() {
        zarr_core::DataTypeSize::Fixed(n) => n as u64,
        zarr_core::DataTypeSize::Variable => 8,
    };
    chunk_shape
        .iter()
        .try_fold(elem, |n, &d| n.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(usize::MAX)
}

/// Encodes the inner chunks at C-order positions `chunks` of the whole shard `t`, cut from
/// the write's values.
type PartFn<'a> =
    dyn Fn(&Touched, &ShardingCodec, std::ops::Range<usize>) -> Result<EncodedChunks> + Sync + 'a;

/// How the write pipeline encodes one touched chunk.
enum Plan<'a> {
    /// One job: the merge. `width` is the count of inner chunks it encodes in parallel by
    /// itself (those of a shard the write touches), or 0.
    One { width: usize },
    /// A whole shard as jobs of [`ShardingCodec::inner_chunks_per_job`] inner chunks each,
    /// queued on the pool with the other shards' jobs. The last job to finish hands the
    /// shard on (to be assembled and stored). No job waits for another, so no thread takes
    /// up a later shard while waiting inside an earlier one, and no thread idles between
    /// shards.
    Parts {
        codec: Arc<ShardingCodec>,
        part: &'a PartFn<'a>,
        /// The number of jobs.
        jobs: usize,
    },
}

/// The plan for `t`: in parts when it is a whole shard and `part` is given, at least two jobs.
fn plan<'a, S: ?Sized>(array: &Array<S>, t: &Touched, part: Option<&'a PartFn<'a>>) -> Plan<'a> {
    let Ok(Some(codec)) = array.sharding(&t.selection.chunk_shape) else {
        return Plan::One { width: 0 };
    };
    let inner = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let whole = t.whole && t.selection.within_chunk.shape() == t.selection.chunk_shape;
    let n = if whole {
        inner(codec.chunks_per_shard().iter().product::<u64>())
    } else {
        // The inner chunks the part of the shard written overlaps.
        inner(
            t.selection
                .within_chunk
                .ranges()
                .iter()
                .zip(codec.inner_chunk_shape())
                .map(|(r, &c)| r.end.div_ceil(c.max(1)) - r.start / c.max(1))
                .product::<u64>(),
        )
    };
    let per = codec.inner_chunks_per_job().max(1);
    match part {
        Some(part) if whole && n > per => Plan::Parts {
            codec,
            part,
            jobs: n.div_ceil(per),
        },
        _ => Plan::One {
            width: if n > 1 { n } else { 0 },
        },
    }
}

/// The bounds of [`encode_while_storing`].
#[derive(Clone, Copy)]
struct Pipeline {
    /// Stores at once.
    io: usize,
    /// Chunks encoding, encoded or being stored at once.
    window: usize,
    /// Inner chunks of shards encoding at once, beyond the first shard.
    wide: usize,
}

/// Encode the `touched` chunks on rayon's pool and store (or erase) each as soon as it is
/// encoded, `io` requests at a time, so that storing overlaps encoding. At most `window`
/// chunks are encoding, encoded or being stored at once: a chunk's encode starts when an
/// earlier chunk's store finishes, so the cores stay busy without a barrier and memory stays
/// bounded however slow the store. After an error no further encode or store starts; returns the first error,
/// after every started encode and store has finished.
///
/// Each chunk goes as its plan says (`plans[i]` for `touched[i]`). A whole shard in
/// [`Plan::Parts`] is queued as jobs of inner chunks behind the shards before it. A merge
/// that encodes many inner chunks in parallel itself ([`Plan::One`] with a `width`, a shard
/// written in part) starts only while such merges touch fewer than `wide` inner chunks, the
/// first always. Started all at once, those would finish together: a thread waiting inside
/// one shard's parallel encode takes up the next shard, so every shard's encode would end
/// only when the last one's does, and all the stores (and `finish`, which assembles each
/// shard) would come after the encoding instead of beside it.
#[allow(clippy::too_many_arguments)]
fn encode_while_storing<S, F, Fin, L>(
    handle: &tokio::runtime::Handle,
    store: &S,
    touched: &[Touched],
    plans: &[Plan<'_>],
    merge: &F,
    finish: Fin,
    lock_of: &L,
    bounds: Pipeline,
) -> Result<()>
where
    S: WritableStore + ?Sized,
    F: Fn(&Touched) -> Result<Action> + Sync,
    Fin: Fn(Action) -> Result<(StoreKey, Option<Bytes>)> + Sync,
    L: Fn(&StoreKey) -> Option<LockKey> + Sync,
{
    use std::task::Poll;

    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let Pipeline { io, window, wide } = bounds;
    // An encode's width and what came of it (a panic is counted like a result, then resumed,
    // so that a panicking codec fails the write instead of leaving it waiting forever).
    // Chunks encoded and stored by their tasks (`local`) whose tasks sent nothing: counted
    // here first, then the task lowers `running` (the one-job tasks not finished). Such a
    // task wakes this thread ([`Done::Tick`]) only when at most `low_water` are left
    // running, so that many small chunks cost one wake-up per half window, not one each;
    // the last task to finish always wakes it.
    let quiet = AtomicUsize::new(0);
    let running = AtomicUsize::new(0);
    let low_water = window / 2;
    // Whether the store has been seen to answer at once (a store this thread made at once,
    // and none has made wait since, nor failed): encoding tasks then store their chunks
    // themselves.
    let local = AtomicBool::new(false);
    // Whether this thread has tried to store a value itself.
    let mut probed = false;
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<(usize, Done<'_>)>();
    // Stores an encoding task started and handed over: taken into `stores` (and polled)
    // however many stores run, since such a store may hold a chunk's lock that a store
    // waiting in `stores` needs.
    let (storing_sender, mut storing) =
        tokio::sync::mpsc::unbounded_channel::<(usize, StoreFuture<'_>)>();
    let finish = &finish;
    rayon::in_place_scope(|scope| {
        let mut pending = touched.iter().zip(plans).peekable();
        // Chunks spawned whose store has not finished.
        let mut in_flight = 0usize;
        // Inner chunks of the shards spawned whose encode has not returned.
        let mut encoding_wide = 0usize;
        let mut stores = stream::FuturesUnordered::new();
        let mut first_error: Option<Error> = None;
        let mut panic = None;
        handle.block_on(std::future::poll_fn(|cx| {
            loop {
                let mut progressed = false;
                while first_error.is_none() && panic.is_none() && in_flight < window.max(1) {
                    let Some(&(t, plan)) = pending.peek() else {
                        break;
                    };
                    // Merges that encode in parallel themselves start while those running
                    // touch at most `wide` inner chunks. Shards in parts start while their
                    // jobs number at most 32 x `wide` (64 per thread), or two shards' worth:
                    // the next shard's jobs are always queued behind the current one's, and
                    // small shards keep enough work queued that the threads never wait for
                    // this thread to queue more.
                    let (w, most) = match plan {
                        Plan::One { width } => (*width, wide),
                        Plan::Parts { jobs, .. } => {
                            (*jobs, wide.saturating_mul(32).max(jobs.saturating_mul(2)))
                        }
                    };
                    if w > 0 && encoding_wide > 0 && encoding_wide.saturating_add(w) > most {
                        break;
                    }
                    pending.next();
                    match plan {
                        Plan::One { .. } => {
                            let (sender, local, handle) = (sender.clone(), &local, handle.clone());
                            let storing_sender = storing_sender.clone();
                            let (quiet, running) = (&quiet, &running);
                            running.fetch_add(1, Ordering::AcqRel);
                            scope.spawn(move |_| {
                                let encoded =
                                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                        merge(t)
                                    }));
                                let done = match encoded {
                                    Ok(Ok(action)) if local.load(Ordering::Relaxed) => {
                                        store_here(&handle, store, finish, lock_of, action, local)
                                    }
                                    other => Done::Encoded(other),
                                };
                                let message = if w == 0 && matches!(done, Done::Stored(Ok(Ok(()))))
                                {
                                    quiet.fetch_add(1, Ordering::AcqRel);
                                    let left = running.fetch_sub(1, Ordering::AcqRel) - 1;
                                    if left > low_water {
                                        return;
                                    }
                                    Done::Tick
                                } else {
                                    running.fetch_sub(1, Ordering::AcqRel);
                                    done
                                };
                                // The receiver is gone only after an error; the encode is
                                // then wasted.
                                let _ = match message {
                                    Done::Storing(stored) => {
                                        storing_sender.send((w, stored)).map_err(drop)
                                    }
                                    message => sender.send((w, message)).map_err(drop),
                                };
                            });
                        }
                        Plan::Parts { codec, part, jobs } => {
                            spawn_parts(scope, t, codec, *part, *jobs, &sender);
                        }
                    }
                    in_flight += 1;
                    encoding_wide += w;
                }
                let stored_quietly = quiet.swap(0, Ordering::AcqRel);
                if stored_quietly > 0 {
                    progressed = true;
                    in_flight -= stored_quietly;
                }
                while let Poll::Ready(Some(done)) = stores.poll_next_unpin(cx) {
                    progressed = true;
                    in_flight -= 1;
                    if let Err(e) = done {
                        first_error.get_or_insert(e);
                    }
                }
                while let Poll::Ready(Some((w, stored))) = storing.poll_recv(cx) {
                    progressed = true;
                    encoding_wide -= w;
                    stores.push(stored);
                }
                while stores.len() < io.max(1) {
                    let Poll::Ready(Some((w, done))) = receiver.poll_recv(cx) else {
                        break;
                    };
                    progressed = true;
                    encoding_wide -= w;
                    let encoded = match done {
                        Done::Encoded(encoded) => encoded,
                        // Chunks stored quietly: counted at the top of the loop.
                        Done::Tick => continue,
                        Done::Stored(stored) => {
                            in_flight -= 1;
                            match stored {
                                Ok(Ok(())) => {}
                                Ok(Err(e)) => {
                                    first_error.get_or_insert(e);
                                }
                                Err(payload) => {
                                    panic.get_or_insert(payload);
                                }
                            }
                            continue;
                        }
                        Done::Storing(stored) => {
                            stores.push(stored);
                            continue;
                        }
                    };
                    let action = match encoded {
                        Ok(Ok(action)) if first_error.is_none() && panic.is_none() => action,
                        // After an error, what is still encoded is not stored.
                        Ok(Ok(_)) => {
                            in_flight -= 1;
                            continue;
                        }
                        Ok(Err(e)) => {
                            in_flight -= 1;
                            first_error.get_or_insert(e);
                            continue;
                        }
                        Err(payload) => {
                            in_flight -= 1;
                            panic.get_or_insert(payload);
                            continue;
                        }
                    };
                    let (key, value) = match finish(action) {
                        Ok(stored) => stored,
                        Err(e) => {
                            in_flight -= 1;
                            first_error.get_or_insert(e);
                            continue;
                        }
                    };
                    // With no other store running and no other chunk waiting, this thread
                    // stores a small value itself if the store can (it is inside
                    // `block_in_place` or outside the runtime, so it may block), saving the
                    // hand-off to the blocking pool and back. When chunks arrive faster
                    // than one thread stores them, they queue up and go to the pool; so do
                    // large values, whose store would hold this thread up for longer than
                    // the hand-off costs. The first small value is always tried here: if
                    // the store answers at once, the encoding tasks store theirs themselves
                    // from then on (`local`).
                    let small = value.as_ref().map_or(0, Bytes::len) <= INLINE_STORE_MAX;
                    let inline = small && (!probed || (stores.is_empty() && receiver.is_empty()));
                    probed |= small;
                    let lock = StoreLock::of(lock_of(&key));
                    let mut stored = store_value(store, key, value, lock);
                    if inline {
                        let polled =
                            zarr_store::inline::allow_blocking_here(|| stored.as_mut().poll(cx));
                        if let Poll::Ready(done) = polled {
                            in_flight -= 1;
                            match done {
                                // The store answers at once: let the encoding tasks store.
                                Ok(()) => local.store(
                                    first_error.is_none() && panic.is_none(),
                                    Ordering::Relaxed,
                                ),
                                Err(e) => {
                                    first_error.get_or_insert(e);
                                }
                            }
                            continue;
                        }
                        local.store(false, Ordering::Relaxed);
                    }
                    stores.push(stored);
                }
                if first_error.is_some() || panic.is_some() {
                    // What is still encoded is not stored (tasks hand it back).
                    local.store(false, Ordering::Relaxed);
                }
                if in_flight == 0
                    && (pending.len() == 0 || first_error.is_some() || panic.is_some())
                {
                    return Poll::Ready(());
                }
                if !progressed {
                    return Poll::Pending;
                }
            }
        }));
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
        first_error.map_or(Ok(()), Err)
    })
}

/// What an encoding task of [`encode_while_storing`] sends back.
enum Done<'a> {
    /// The encode's result (or its panic), for the pipeline's thread to store.
    Encoded(std::thread::Result<Result<Action>>),
    /// Encoded and stored by the task, the store having answered at once (or the panic
    /// finishing or storing raised).
    Stored(std::thread::Result<Result<()>>),
    /// Encoded, and its store started, which the store made wait: the pipeline's thread
    /// drives it to the end.
    Storing(StoreFuture<'a>),
    /// Chunks were stored by their tasks without a message each (`quiet` in
    /// `encode_while_storing`): the pipeline's thread counts them and starts more.
    Tick,
}

/// Storing (or erasing) one chunk.
type StoreFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;

/// The lock a store of one chunk holds while it stores.
enum StoreLock {
    /// None (the caller holds the chunk's lock, or it needs none).
    None,
    /// This lock, taken when the store is first polled.
    Take(LockKey),
    /// A lock already taken.
    Held(OwnedMutexGuard<()>),
}

impl StoreLock {
    fn of(lock: Option<LockKey>) -> Self {
        lock.map_or(Self::None, Self::Take)
    }
}

/// Store `value` at `key` (`None`: erase it), holding `lock` while it does.
fn store_value<S: WritableStore + ?Sized>(
    store: &S,
    key: StoreKey,
    value: Option<Bytes>,
    lock: StoreLock,
) -> StoreFuture<'_> {
    Box::pin(async move {
        let _guard = match lock {
            StoreLock::None => None,
            StoreLock::Take(key) => Some(key.lock().await),
            StoreLock::Held(guard) => Some(guard),
        };
        match value {
            Some(bytes) => store.set(&key, bytes).await?,
            None => store.erase(&key).await?,
        }
        Ok(())
    })
}

/// On an encoding (rayon) thread: finish `action` and store it here, where the store answers
/// at once; a store that makes it wait clears `local` and goes back to the pipeline's thread
/// ([`Done::Storing`]), as do values too large to store here and values whose lock is held
/// elsewhere. Those go back unpolled: the thread never waits for a lock (the holder may
/// need the thread to finish its own encode), and a future polled once here would queue
/// for the lock and could be handed it while it sits in the channel, where the pipeline's
/// thread, busy with stores queued behind it, might never take it out.
fn store_here<'a, S, Fin, L>(
    handle: &tokio::runtime::Handle,
    store: &'a S,
    finish: &Fin,
    lock_of: &L,
    action: Action,
    local: &std::sync::atomic::AtomicBool,
) -> Done<'a>
where
    S: WritableStore + ?Sized,
    Fin: Fn(Action) -> Result<(StoreKey, Option<Bytes>)>,
    L: Fn(&StoreKey) -> Option<LockKey>,
{
    let _runtime = handle.enter();
    let mut pending = None;
    let stored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (key, value) = finish(action)?;
        let large = value.as_ref().map_or(0, Bytes::len) > INLINE_STORE_MAX;
        let (lock, free) = match lock_of(&key) {
            None => (StoreLock::None, true),
            Some(key) => match key.try_lock() {
                Some(guard) => (StoreLock::Held(guard), true),
                None => (StoreLock::Take(key), false),
            },
        };
        let mut stored = store_value(store, key, value, lock);
        if !large && free {
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let polled = zarr_store::inline::allow_blocking_here(|| stored.as_mut().poll(&mut cx));
            if let std::task::Poll::Ready(done) = polled {
                return done;
            }
            local.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        pending = Some(stored);
        Ok(())
    }));
    match pending {
        Some(stored) => Done::Storing(stored),
        None => Done::Stored(stored),
    }
}

/// The largest value the write pipeline's own thread stores (see `encode_while_storing`): 1
/// MiB takes the page cache about 100 µs to copy, several times the hand-off to a blocking
/// thread and back.
const INLINE_STORE_MAX: usize = 1 << 20;

/// The result of one job of a shard in parts, or the panic it raised.
type PartResult = std::thread::Result<Result<EncodedChunks>>;

/// Queue the jobs of the whole shard `t` ([`Plan::Parts`]) on `scope`. Each job encodes its
/// inner chunks with `part` and leaves its result in its slot; the last one to finish sends
/// the shard (its parts joined in order) or the first failure, as one merge would.
fn spawn_parts<'s, 'a: 's>(
    scope: &rayon::Scope<'s>,
    t: &'a Touched,
    codec: &Arc<ShardingCodec>,
    part: &'a PartFn<'a>,
    jobs: usize,
    sender: &tokio::sync::mpsc::UnboundedSender<(usize, Done<'s>)>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Slots {
        results: std::sync::Mutex<Vec<Option<PartResult>>>,
        remaining: AtomicUsize,
    }
    let n = usize::try_from(codec.chunks_per_shard().iter().product::<u64>()).unwrap_or(0);
    let per = n.div_ceil(jobs.max(1)).max(1);
    let slots = Arc::new(Slots {
        results: std::sync::Mutex::new((0..jobs).map(|_| None).collect()),
        remaining: AtomicUsize::new(jobs),
    });
    for job in 0..jobs {
        let (codec, slots, sender) = (Arc::clone(codec), Arc::clone(&slots), sender.clone());
        scope.spawn(move |_| {
            let chunks = (job * per).min(n)..((job + 1) * per).min(n);
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| part(t, &codec, chunks)));
            fn lock(slots: &Slots) -> std::sync::MutexGuard<'_, Vec<Option<PartResult>>> {
                slots
                    .results
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            }
            lock(&slots)[job] = Some(result);
            if slots.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            let results = std::mem::take(&mut *lock(&slots));
            let mut parts = Vec::with_capacity(jobs);
            let mut outcome = None;
            // Every slot is filled before its job counts down; a missing one would leave the
            // shard short of inner chunks, which `assemble` refuses.
            for result in results.into_iter().flatten() {
                match result {
                    Ok(Ok(chunks)) => parts.push(chunks),
                    Ok(Err(e)) => {
                        outcome = Some(Ok(Err(e)));
                        break;
                    }
                    Err(payload) => {
                        outcome = Some(Err(payload));
                        break;
                    }
                }
            }
            let outcome = outcome.unwrap_or_else(|| {
                Ok(Ok(Action::Assemble(
                    t.key.clone(),
                    codec,
                    EncodedChunks::concat(parts),
                )))
            });
            // The receiver is gone only after an error; the encode is then wasted.
            let _ = sender.send((jobs, Done::Encoded(outcome)));
        });
    }
}

fn codecs_error<S: ?Sized>(array: &Array<S>, source: zarr_codecs::Error) -> Error {
    Error::Codecs {
        array: array.path.as_str().to_owned(),
        source: Box::new(source),
    }
}

/// Write `values` (C order over `region`) of a fixed-size array.
pub(crate) async fn write_fixed<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: &[u8],
) -> Result<()> {
    write_fixed_with(array, region, values, true).await
}

/// Take the in-process lock of the unit stored under one key (a chunk, or the shard holding
/// it through the storage transformer) that holds `chunk` (grid indices), as a write of
/// part of it would. While the guard lives, no other write in the process updates the unit.
pub(crate) async fn lock_unit<S: ?Sized>(
    array: &Array<S>,
    chunk: &[u64],
) -> Result<OwnedMutexGuard<()>> {
    let key = array.chunk_key_unchecked(chunk)?;
    let key = match &array.transformer {
        Some(transformer) => transformer.shard_of(&key).map_or(key, |(shard, _)| shard),
        None => key,
    };
    Ok(chunk_lock(array, &key).lock().await)
}

/// [`write_fixed`] of a region inside one unit (chunk, or shard through the transformer)
/// whose lock ([`lock_unit`]) the caller holds.
pub(crate) async fn write_fixed_locked<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: &[u8],
) -> Result<()> {
    write_fixed_with(array, region, values, false).await
}

async fn write_fixed_with<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: &[u8],
    lock: bool,
) -> Result<()> {
    let metadata = &array.metadata;
    region.check_within(&metadata.shape)?;
    let elem = array.element_size()?;
    let expected = region.num_elements()?;
    if values.len() as u64 != expected.saturating_mul(elem as u64) {
        return Err(Error::buffer_size(expected, elem, values.len()));
    }
    if expected == 0 {
        return Ok(());
    }
    let region_shape = region.shape();
    let span = tracing::debug_span!(
        "zarr.write",
        array = %array.path,
        region = %region,
        chunks = metadata
            .chunk_grid
            .chunks_in_region(&metadata.shape, region)?
            .num_chunks()?,
        bytes = values.len()
    );
    let merge = |t: &Touched| -> Result<Action> {
        if let Some(codec) = array.sharding(&t.selection.chunk_shape)? {
            return merge_shard(array, &codec, t, values, &region_shape, elem);
        }
        let chain = array.chain(&t.selection.chunk_shape)?;
        let repr = chain.decoded_representation();
        let size = repr
            .fixed_size_usize()
            .map_err(|e| array.chunk_error(&t.key, e))?;
        let mut chunk =
            zarr_codecs::zeroed_bytes(size).map_err(|e| array.chunk_error(&t.key, e))?;
        match (&t.existing, t.whole) {
            (Some(bytes), false) => {
                chain
                    .decode_into(bytes.clone(), &mut chunk)
                    .map_err(|e| array.chunk_error_at(&t.key, &t.selection.chunk, e))?;
                reset_padding(array, &t.selection, &mut chunk, elem)?;
            }
            // Every element is written below: filling first (or even checking that the
            // fresh buffer is zero) would touch each page once more.
            _ if t.selection.within_chunk.shape() == t.selection.chunk_shape => {}
            _ => fill_bytes(&mut chunk, metadata.fill_value.as_bytes()),
        }
        {
            let view = ArrayViewMut::new(&mut chunk, &t.selection.chunk_shape, elem)
                .map_err(|e| codecs_error(array, e))?;
            // SAFETY: the only view of the chunk buffer in use.
            let mut target = unsafe { view.subview(t.selection.within_chunk.clone()) }
                .map_err(|e| codecs_error(array, e))?;
            target
                .copy_from(values, &region_shape, &t.selection.within_output)
                .map_err(|e| codecs_error(array, e))?;
        }
        Ok(
            match encode_chunk(
                array,
                &chain,
                &t.key,
                &t.selection.chunk,
                ArrayBytes::fixed(chunk),
            )? {
                Some(bytes) => Action::Set(t.key.clone(), bytes),
                None => Action::Erase(t.key.clone()),
            },
        )
    };
    let part = |t: &Touched, codec: &ShardingCodec, chunks: std::ops::Range<usize>| {
        codec
            .encode_chunk_range_from(
                values,
                &region_shape,
                &t.selection.within_output.starts(),
                chunks,
            )
            .map_err(|e| array.shard_error_at(&t.key, &t.selection.chunk, e))
    };
    write_chunks(array, region, lock, merge, Some(&part))
        .instrument(span)
        .await
}

/// Set the elements of an edge chunk that lie outside the array to the fill value, whatever
/// the stored chunk held there (SPEC-NOTES 1.9: padding should be the fill value, and readers
/// ignore it; another writer may have left anything).
fn reset_padding<S: ?Sized>(
    array: &Array<S>,
    selection: &ChunkSelection,
    chunk: &mut [u8],
    elem: usize,
) -> Result<()> {
    let metadata = &array.metadata;
    let clipped = metadata
        .chunk_grid
        .chunk_region_clipped(&metadata.shape, &selection.chunk)?;
    let inside = Region::full(&clipped.shape());
    if inside.shape() == selection.chunk_shape {
        return Ok(());
    }
    let mut padded = zarr_codecs::zeroed_bytes(chunk.len()).map_err(|e| codecs_error(array, e))?;
    fill_bytes(&mut padded, metadata.fill_value.as_bytes());
    {
        let view = ArrayViewMut::new(&mut padded, &selection.chunk_shape, elem)
            .map_err(|e| codecs_error(array, e))?;
        // SAFETY: the only view of `padded` in use.
        let mut target =
            unsafe { view.subview(inside.clone()) }.map_err(|e| codecs_error(array, e))?;
        target
            .copy_from(chunk, &selection.chunk_shape, &inside)
            .map_err(|e| codecs_error(array, e))?;
    }
    chunk.copy_from_slice(&padded);
    Ok(())
}

/// Merge `values` into a shard: a shard written whole is encoded (inner chunks in parallel)
/// without being read; a shard written in part re-encodes only the inner chunks it touches.
fn merge_shard<S: ?Sized>(
    array: &Array<S>,
    codec: &Arc<ShardingCodec>,
    t: &Touched,
    values: &[u8],
    region_shape: &[u64],
    elem: usize,
) -> Result<Action> {
    let within = &t.selection.within_chunk;
    let shape = within.shape();
    if t.whole && shape == t.selection.chunk_shape {
        // A whole shard: its inner chunks are cut straight out of the values (and the
        // shard assembled where it is stored, see `finish`).
        let chunks = codec
            .encode_chunks_from(values, region_shape, &t.selection.within_output.starts())
            .map_err(|e| array.shard_error_at(&t.key, &t.selection.chunk, e))?;
        return Ok(Action::Assemble(t.key.clone(), Arc::clone(codec), chunks));
    }
    let n = within.num_elements()? as usize;
    let mut part = vec![0u8; n * elem];
    {
        let mut view =
            ArrayViewMut::new(&mut part, &shape, elem).map_err(|e| codecs_error(array, e))?;
        view.copy_from(values, region_shape, &t.selection.within_output)
            .map_err(|e| codecs_error(array, e))?;
    }
    let existing = if t.whole { None } else { t.existing.clone() };
    let merged = if t.whole && shape != t.selection.chunk_shape {
        // An edge shard covered whole: the part outside the array is fill.
        let mut full = codec
            .shard_representation()
            .fixed_size_usize()
            .and_then(zarr_codecs::zeroed_bytes)
            .map_err(|e| codecs_error(array, e))?;
        fill_bytes(&mut full, array.metadata.fill_value.as_bytes());
        {
            let view = ArrayViewMut::new(&mut full, &t.selection.chunk_shape, elem)
                .map_err(|e| codecs_error(array, e))?;
            // SAFETY: the only view of `full` in use.
            let mut target =
                unsafe { view.subview(within.clone()) }.map_err(|e| codecs_error(array, e))?;
            target
                .copy_from(&part, &shape, &Region::full(&shape))
                .map_err(|e| codecs_error(array, e))?;
        }
        codec.encode_shard(ArrayBytes::fixed(full))
    } else {
        codec.merge_region(existing, within, &ArrayBytes::fixed(part))
    }
    .map_err(|e| array.shard_error_at(&t.key, &t.selection.chunk, e))?;
    shard_action(array, codec, &t.key, merged)
}

/// What to do with a shard encoded to `merged` (`None`: every inner chunk is empty).
fn shard_action<S: ?Sized>(
    array: &Array<S>,
    codec: &ShardingCodec,
    key: &StoreKey,
    merged: Option<Bytes>,
) -> Result<Action> {
    Ok(match shard_value(array, codec, key, merged)? {
        Some(bytes) => Action::Set(key.clone(), bytes),
        None => Action::Erase(key.clone()),
    })
}

/// What to store for a shard encoded to `merged` (`None`: erase it).
pub(crate) fn shard_value<S: ?Sized>(
    array: &Array<S>,
    codec: &ShardingCodec,
    key: &StoreKey,
    merged: Option<Bytes>,
) -> Result<Option<Bytes>> {
    Ok(match merged {
        Some(bytes) => Some(bytes),
        None if array.options.write_empty_chunks() => {
            Some(codec.empty_shard().map_err(|e| array.shard_error(key, e))?)
        }
        None => None,
    })
}

/// Write variable-length `values` (C order over `region`).
pub(crate) async fn write_variable<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: VlenBytes,
) -> Result<()> {
    write_variable_with(array, region, values, true).await
}

/// [`write_variable`] of a region inside one unit (chunk, or shard through the
/// transformer) whose lock ([`lock_unit`]) the caller holds.
pub(crate) async fn write_variable_locked<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: VlenBytes,
) -> Result<()> {
    write_variable_with(array, region, values, false).await
}

async fn write_variable_with<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: VlenBytes,
    lock: bool,
) -> Result<()> {
    let metadata = &array.metadata;
    region.check_within(&metadata.shape)?;
    if metadata.data_type.fixed_size().is_some() {
        return Err(Error::unsupported(
            array.path.as_str(),
            "variable-length values for a fixed-size data type",
        ));
    }
    let expected = region.num_elements()?;
    if values.len() as u64 != expected {
        return Err(Error::BufferSize {
            expected,
            found: values.len() as u64,
        });
    }
    if expected == 0 {
        return Ok(());
    }
    let region_shape = region.shape();
    let span = tracing::debug_span!("zarr.write", array = %array.path, region = %region);
    let merge = |t: &Touched| -> Result<Action> {
        let chain = array.chain(&t.selection.chunk_shape)?;
        let repr = chain.decoded_representation();
        if t.selection.within_chunk.shape() == t.selection.chunk_shape {
            // Every element of the chunk is new: copy its runs of the values.
            let runs = crate::vlen_partial::runs(&region_shape, &t.selection.within_output);
            let chunk = crate::vlen_partial::gather(&values, &runs)?;
            return Ok(
                match encode_chunk(
                    array,
                    &chain,
                    &t.key,
                    &t.selection.chunk,
                    ArrayBytes::Variable(chunk),
                )? {
                    Some(bytes) => Action::Set(t.key.clone(), bytes),
                    None => Action::Erase(t.key.clone()),
                },
            );
        }
        if let Some(codec) = array.sharding(&t.selection.chunk_shape)? {
            // Part of a shard: re-encode only the inner chunks the region touches; the
            // others keep their stored bytes.
            let runs = crate::vlen_partial::runs(&region_shape, &t.selection.within_output);
            let part = crate::vlen_partial::gather(&values, &runs)?;
            let existing = if t.whole { None } else { t.existing.clone() };
            let merged = codec
                .merge_region(
                    existing,
                    &t.selection.within_chunk,
                    &ArrayBytes::Variable(part),
                )
                .map_err(|e| array.shard_error_at(&t.key, &t.selection.chunk, e))?;
            return shard_action(array, &codec, &t.key, merged);
        }
        let existing = match (&t.existing, t.whole) {
            (Some(bytes), false) => chain.decode(bytes.clone()),
            _ => ArrayBytes::fill(repr),
        }
        .map_err(|e| array.chunk_error_at(&t.key, &t.selection.chunk, e))?;
        let ArrayBytes::Variable(existing) = existing else {
            return Err(Error::unsupported(
                array.path.as_str(),
                "a chunk of a variable-length data type decoded to fixed-size data",
            ));
        };
        // For each chunk element: below n_chunk it keeps element i of the old chunk, from
        // n_chunk on it takes element (id - n_chunk) of the new values.
        let n_chunk = existing.len() as u64;
        let mut sources: Vec<u64> = (0..n_chunk).collect();
        let from_values: Vec<u64> = element_ids(&region_shape, &t.selection.within_output)?
            .into_iter()
            .map(|i| i + n_chunk)
            .collect();
        {
            let view = ArrayViewMut::new(bytes_of_mut(&mut sources), &t.selection.chunk_shape, 8)
                .map_err(|e| codecs_error(array, e))?;
            // SAFETY: the only view of `sources` in use.
            let mut target = unsafe { view.subview(t.selection.within_chunk.clone()) }
                .map_err(|e| codecs_error(array, e))?;
            let shape = t.selection.within_chunk.shape();
            target
                .copy_from(bytes_of(&from_values), &shape, &Region::full(&shape))
                .map_err(|e| codecs_error(array, e))?;
        }
        let merged = VlenBytes::from_elements(sources.iter().map(|&id| {
            if id < n_chunk {
                existing.get(id as usize).unwrap_or(&[])
            } else {
                values.get((id - n_chunk) as usize).unwrap_or(&[])
            }
        }));
        Ok(
            match encode_chunk(
                array,
                &chain,
                &t.key,
                &t.selection.chunk,
                ArrayBytes::Variable(merged),
            )? {
                Some(bytes) => Action::Set(t.key.clone(), bytes),
                None => Action::Erase(t.key.clone()),
            },
        )
    };
    write_chunks(array, region, lock, merge, None)
        .instrument(span)
        .await
}

/// Fill `buffer` with copies of `element`.
pub(crate) fn fill_bytes(buffer: &mut [u8], element: &[u8]) {
    if element.iter().all(|&b| b == 0) {
        // A fresh zeroed buffer is already right; writing would touch every page.
        if buffer.iter().all(|&b| b == 0) {
            return;
        }
        buffer.fill(0);
    } else if !element.is_empty() {
        for chunk in buffer.chunks_exact_mut(element.len()) {
            chunk.copy_from_slice(element);
        }
    }
}

/// Erase the chunks of `array` that lie wholly outside `shape` (a smaller shape), and reset
/// to the fill value the elements of the chunks it cuts through that fall outside it. On a
/// grid whose chunk shapes depend on the array's shape (`zarrs.regular_bounded`) the chunks
/// it cuts through are left to [`reshape_edge_chunks`], which re-encodes them at their new
/// shape.
pub(crate) async fn clear_outside<S: WritableStore + ?Sized>(
    array: &Array<S>,
    shape: &[u64],
) -> Result<()> {
    let metadata = &array.metadata;
    let old = &metadata.shape;
    if old.contains(&0) {
        return Ok(());
    }
    let grid = &metadata.chunk_grid;
    let mut erase = Vec::new();
    let mut straddling = Vec::new();
    for selection in grid.chunks_in_region(old, &Region::full(old))? {
        let region = grid.chunk_region(old, &selection.chunk)?;
        let outside = region
            .ranges()
            .iter()
            .zip(shape)
            .any(|(r, &n)| r.start >= n);
        let crosses = region.ranges().iter().zip(shape).any(|(r, &n)| r.end > n);
        let key = array.chunk_key_unchecked(&selection.chunk)?;
        if outside {
            erase.push(key);
        } else if crosses && !grid.depends_on_shape() {
            straddling.push((selection.chunk, region));
        }
    }
    let sink = array.sink();
    for keys in erase.chunks(1024) {
        sink.erase_many(array, keys).await?;
    }
    for (chunk, region) in straddling {
        // The part of the chunk still inside the new shape.
        let keep: Vec<std::ops::Range<u64>> = region
            .ranges()
            .iter()
            .zip(shape)
            .map(|(r, &n)| 0..n.saturating_sub(r.start).min(r.end - r.start))
            .collect();
        rebuild_chunk(array, array, &chunk, &Region::try_new(keep)?).await?;
    }
    Ok(())
}

/// Re-encode the chunks whose shape differs between `old` and `new`, two handles of one
/// array with different shapes on a grid whose chunk shapes depend on the array's shape
/// (`zarrs.regular_bounded`, whose edge chunks end at the array's end). Each keeps the
/// values of its elements inside both shapes; its elements new to the array are the fill
/// value. Missing chunks stay missing, and chunks outside either shape are not touched
/// (erasing those outside a smaller shape is [`clear_outside`]'s part).
///
/// Only the last chunk of each dimension (in either shape) can change shape, so this visits
/// those slabs of the grid alone, up to `io_concurrency` chunks at a time.
pub(crate) async fn reshape_edge_chunks<S: WritableStore + ?Sized>(
    old: &Array<S>,
    new: &Array<S>,
) -> Result<()> {
    let grid = &old.metadata.chunk_grid;
    let (from, to) = (&old.metadata.shape, &new.metadata.shape);
    if from.contains(&0) || to.contains(&0) {
        return Ok(());
    }
    // Element extents both shapes share; their chunks are the chunks both grids have.
    let common: Vec<u64> = from.iter().zip(to).map(|(a, b)| *a.min(b)).collect();
    let mut chunks = std::collections::BTreeSet::new();
    for (d, k) in reshaped_edges(grid, from, to)? {
        // The slab of chunks with index `k` along `d`.
        let mut ranges: Vec<std::ops::Range<u64>> = common.iter().map(|&n| 0..n).collect();
        let along = grid.chunk_range_along(from, d, k)?;
        ranges[d] = along.start..along.end.min(common[d]);
        for selection in grid.chunks_in_region(from, &Region::try_new(ranges)?)? {
            chunks.insert(selection.chunk);
        }
    }
    let span = tracing::debug_span!(
        "zarr.reshape_edge_chunks",
        array = %old.path,
        chunks = chunks.len()
    );
    stream::iter(chunks)
        .map(|chunk| async move {
            let old_region = grid.chunk_region(from, &chunk)?;
            let new_region = grid.chunk_region(to, &chunk)?;
            let keep = old_region
                .ranges()
                .iter()
                .zip(new_region.ranges())
                .map(|(a, b)| 0..(a.end - a.start).min(b.end - b.start))
                .collect();
            rebuild_chunk(old, new, &chunk, &Region::try_new(keep)?).await
        })
        .buffer_unordered(old.options.io_concurrency().max(1))
        .try_collect::<Vec<()>>()
        .instrument(span)
        .await?;
    Ok(())
}

/// The `(dimension, chunk index)` pairs along which a chunk both shapes have changes shape
/// between `from` and `to`: on a grid whose chunk shapes depend on the array's shape, the
/// last chunk of a dimension in either shape. Empty for other grids, and when either shape
/// has no elements.
pub(crate) fn reshaped_edges(
    grid: &zarr_core::ChunkGrid,
    from: &[u64],
    to: &[u64],
) -> Result<Vec<(usize, u64)>> {
    if !grid.depends_on_shape() || from.contains(&0) || to.contains(&0) {
        return Ok(Vec::new());
    }
    let (old_grid, new_grid) = (grid.grid_shape(from)?, grid.grid_shape(to)?);
    let mut edges = Vec::new();
    for d in 0..from.len() {
        let mut candidates = vec![old_grid[d] - 1, new_grid[d] - 1];
        candidates.dedup();
        for k in candidates {
            if k < old_grid[d].min(new_grid[d])
                && grid.chunk_range_along(from, d, k)? != grid.chunk_range_along(to, d, k)?
            {
                edges.push((d, k));
            }
        }
    }
    Ok(edges)
}

/// Rewrite chunk `chunk` through `new` from its stored value, decoded through `old`: the
/// elements of `keep` (counted from the chunk's origin, inside the chunk in both handles)
/// keep their values, every other element becomes the fill value. `old` and `new` are
/// handles of one array; the chunk's shape may differ between them. A missing chunk stays
/// missing.
async fn rebuild_chunk<S: WritableStore + ?Sized>(
    old: &Array<S>,
    new: &Array<S>,
    chunk: &[u64],
    keep: &Region,
) -> Result<()> {
    // Read, rebuilt and stored back under the chunk's (or its shard's) lock, so that a write
    // of the chunk in the process meanwhile is not lost.
    let _guard = lock_unit(new, chunk).await?;
    let key = new.chunk_key_unchecked(chunk)?;
    let old_shape = old
        .metadata
        .chunk_grid
        .chunk_shape(&old.metadata.shape, chunk)?;
    let new_shape = new
        .metadata
        .chunk_grid
        .chunk_shape(&new.metadata.shape, chunk)?;
    if old_shape == new_shape
        && let Some(codec) = new.sharding(&new_shape)?
    {
        // A shard of unchanged shape: only the inner chunks `keep` cuts through are
        // re-encoded.
        let Some(existing) = new.read_store().get(&key).await? else {
            return Ok(());
        };
        let kept = codec
            .retain_region(&existing, keep)
            .map_err(|e| new.shard_error_at(&key, chunk, e))?;
        let value = match kept {
            None if new.options.write_empty_chunks() => {
                Some(codec.empty_shard().map_err(|e| new.shard_error(&key, e))?)
            }
            kept => kept,
        };
        return new.sink().put_locked(new, key, value).await;
    }
    let Some(stored) = old.read_store().get(&key).await? else {
        return Ok(());
    };
    let values = old
        .chain(&old_shape)?
        .decode(stored)
        .map_err(|e| old.chunk_error_at(&key, chunk, e))?;
    let chain = new.chain(&new_shape)?;
    let fresh =
        ArrayBytes::fill(chain.decoded_representation()).map_err(|e| new.chunk_error(&key, e))?;
    let fresh = match (&values, fresh) {
        (ArrayBytes::Fixed(old_bytes), ArrayBytes::Fixed(new_bytes)) => {
            let elem = new.element_size()?;
            let mut buffer = new_bytes.to_vec();
            {
                let view = ArrayViewMut::new(&mut buffer, &new_shape, elem)
                    .map_err(|e| codecs_error(new, e))?;
                // SAFETY: the only view of the buffer in use.
                let mut target =
                    unsafe { view.subview(keep.clone()) }.map_err(|e| codecs_error(new, e))?;
                target
                    .copy_from(old_bytes, &old_shape, keep)
                    .map_err(|e| codecs_error(new, e))?;
            }
            ArrayBytes::fixed(buffer)
        }
        (ArrayBytes::Variable(old_vlen), ArrayBytes::Variable(fill_vlen)) => {
            let from_ids = element_ids(&old_shape, keep)?;
            let to_ids = element_ids(&new_shape, keep)?;
            let mut elements: Vec<&[u8]> = fill_vlen.iter().collect();
            for (from, to) in from_ids.into_iter().zip(to_ids) {
                elements[to as usize] = old_vlen.get(from as usize).unwrap_or(&[]);
            }
            ArrayBytes::Variable(VlenBytes::from_elements(elements))
        }
        _ => {
            return Err(Error::unsupported(
                new.path.as_str(),
                "a chunk decoded to the wrong kind of data",
            ));
        }
    };
    let value = encode_chunk(new, &chain, &key, chunk, fresh)?;
    new.sink().put_locked(new, key, value).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArrayBuilder, ArrayOptions};
    use zarr_core::DataType;
    use zarr_store::MemoryStore;

    /// A pipelined write of whole chunks waits for a chunk whose lock is held elsewhere (a
    /// write of part of it, say), storing the others, and finishes once it is released;
    /// with one store at a time, so that the stores behind the held chunk queue up.
    #[test]
    fn a_whole_chunk_write_waits_for_a_held_chunk_then_finishes() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let store = Arc::new(MemoryStore::new());
        let array = rt.block_on(async {
            ArrayBuilder::new(vec![256], DataType::UInt32, vec![4])
                .create(Arc::clone(&store), "/w")
                .await
                .unwrap();
            let options = ArrayOptions::default().with_io_concurrency(1);
            Array::open_with(Arc::clone(&store), "/w", options)
                .await
                .unwrap()
        });
        let key = array.chunk_key(&[5]).unwrap();
        let held = rt.block_on(chunk_lock(&array, &key).lock());
        let values: Vec<u32> = (0..256).collect();
        let writer = {
            let (array, values) = (array.clone(), values.clone());
            rt.spawn(async move { array.write(.., &values).await })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!writer.is_finished(), "did not wait for the held chunk");
        assert!(rt.block_on(store.get(&key)).unwrap().is_none());
        drop(held);
        let (done, finished) = std::sync::mpsc::channel();
        let waiter = rt.spawn(async move {
            let _ = done.send(writer.await);
        });
        let result = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the write did not finish once the chunk was released");
        result.unwrap().unwrap();
        rt.block_on(waiter).unwrap();
        assert_eq!(rt.block_on(array.read::<u32>(..)).unwrap(), values);
    }
}
