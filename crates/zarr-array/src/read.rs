//! The read engine: fetch chunks concurrently, decode them in parallel straight into the one
//! output buffer.

use bytes::Bytes;
use futures::{FutureExt, StreamExt, stream};
use rayon::prelude::*;
use tracing::Instrument;
use zarr_codecs::{ArrayBytes, ArrayViewMut, VlenBytes};
use zarr_core::{ChunkSelection, Region};
use zarr_sharding::{ShardFetch, ShardIndex, ShardingCodec};
use zarr_store::{ReadableStore, StoreKey};

use crate::array::Array;
use crate::error::{Error, Result};
use crate::vlen_partial::{self, RangedVlen};

/// At most how many fetched chunks are decoded in one parallel batch, per decoding thread, on
/// the batched schedule (a batch also stops at the decode budget of encoded bytes). Small
/// batches bound what a read holds (a batch is fetched before it is decoded): with 256-chunk
/// batches, a whole read of a sharded array held all its shards at once.
const BATCH_PER_THREAD: usize = 4;

/// What was fetched for one chunk.
enum Payload {
    /// Not stored: reads as the fill value.
    Missing,
    /// The whole stored chunk (or shard).
    Whole(Bytes),
    /// The index and the needed inner chunks of a shard read in part.
    Shard(ShardFetch),
    /// The selected elements of a variable-length chunk read in part (in the C order of the
    /// selection).
    Elements(VlenBytes),
}

impl Payload {
    /// The bytes held: the stored chunk, or for a shard read in part what was read of it
    /// (its inner chunks and the gaps read between them).
    fn encoded_bytes(&self) -> usize {
        match self {
            Self::Missing => 0,
            Self::Whole(bytes) => bytes.len(),
            Self::Shard(fetch) => usize::try_from(fetch.bytes_read()).unwrap_or(usize::MAX),
            Self::Elements(elements) => elements.values().len(),
        }
    }
}

/// How to fetch chunks the region needs only part of.
#[derive(Clone, Copy)]
enum Partial<'a> {
    /// Read them whole.
    Whole,
    /// Read a shard's index and only the inner chunks needed.
    Shards,
    /// Read only the offsets and values needed of uncompressed ZEP0007 chunks.
    Vlen(&'a RangedVlen),
}

/// A chunk the region needs, with what was fetched for it.
struct Fetched {
    selection: ChunkSelection,
    key: StoreKey,
    payload: Payload,
}

/// Fetch the chunks of `selections` with at most `io_concurrency` requests in flight and
/// decode each with `decode`. `partial` says how to read chunks the region needs only part of.
///
/// On a multi-threaded Tokio runtime, a read of more than one chunk is a pipeline
/// ([`pipeline`]): this thread plans (`block_in_place`, then `Handle::block_on`) and rayon's
/// pool fetches and decodes, or, for stores that answer on the network's time, this thread
/// fetches while rayon's pool decodes what was fetched, with at most
/// [`ArrayOptions::decode_budget`](crate::ArrayOptions) encoded bytes waiting or being
/// decoded. Elsewhere (a current-thread runtime, or one chunk), fetches
/// and decodes alternate in batches of what has arrived, up to [`BATCH_PER_THREAD`] chunks per
/// rayon thread and the decode budget.
async fn fetch_and_decode<S, I, D>(
    array: &Array<S>,
    selections: I,
    chunks: u64,
    partial: Partial<'_>,
    decode: D,
) -> Result<()>
where
    S: ReadableStore + ?Sized,
    I: Iterator<Item = ChunkSelection> + Send,
    D: Fn(Fetched) -> Result<()> + Sync,
{
    let chunks = usize::try_from(chunks).unwrap_or(usize::MAX);
    if let Some(handle) = pipeline_handle(chunks) {
        let jobs = job_stream(array, selections, partial);
        return tokio::task::block_in_place(|| pipeline(&handle, array, jobs, chunks, &decode));
    }
    // Batches of what has arrived, up to the decode budget of encoded bytes (or one chunk).
    let budget = array.options.decode_budget();
    let most = BATCH_PER_THREAD * decoders();
    let fetches = fetch_stream(array, selections, partial);
    futures::pin_mut!(fetches);
    while let Some(first) = fetches.next().await {
        let first = first?;
        let mut held = first.payload.encoded_bytes();
        let mut batch = vec![first];
        while held < budget && batch.len() < most {
            match fetches.next().now_or_never() {
                Some(Some(fetched)) => {
                    let fetched = fetched?;
                    held = held.saturating_add(fetched.payload.encoded_bytes());
                    batch.push(fetched);
                }
                Some(None) | None => break,
            }
        }
        if batch.len() == 1 {
            batch.into_iter().try_for_each(&decode)?;
        } else {
            batch.into_par_iter().try_for_each(&decode)?;
        }
    }
    Ok(())
}

/// The runtime to pipeline `chunks` chunks on: a multi-threaded Tokio runtime, where this
/// thread may block in place while rayon works, and more than one chunk.
pub(crate) fn pipeline_handle(chunks: usize) -> Option<tokio::runtime::Handle> {
    if chunks < 2 {
        return None;
    }
    let handle = tokio::runtime::Handle::try_current().ok()?;
    (handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread).then_some(handle)
}

/// The number of rayon threads (at least 1).
fn decoders() -> usize {
    rayon::current_num_threads().max(1)
}

/// At most how many decoded bytes one task of a local pipeline fetches and decodes (it
/// always takes at least one job).
const LOCAL_BATCH_BYTES: u64 = 1 << 20;

/// At most how many jobs one task of a local pipeline takes.
const LOCAL_BATCH_JOBS: usize = 32;

/// Run `jobs` on rayon's pool, holding the first error. Returns when every task has
/// finished.
///
/// The first job is fetched here, on this thread (which may block: the caller is inside
/// `block_in_place`), with [`allow_blocking_here`](zarr_store::inline::allow_blocking_here).
/// If the store answers at once (memory, files from the page cache or the disk), the read is
/// **local**: every other job is fetched *and* decoded by a rayon task, in batches of up to
/// [`LOCAL_BATCH_JOBS`] jobs and [`LOCAL_BATCH_BYTES`] decoded bytes, so that the store's
/// calls run on all cores and a fetched chunk is decoded by the thread that read it (no
/// hand-off, no wake-up, freed where it was allocated). With many small chunks this halves
/// the time per chunk. A task that finds a fetch waiting (a store that answers on another
/// thread's time after all) waits for it, and tells this thread to fetch the rest itself.
///
/// Otherwise (object stores) this thread fetches, with at most `io_concurrency` requests in
/// flight, and rayon decodes what arrives ([`decode_fetched`]).
fn pipeline<'a, S, J, D>(
    handle: &tokio::runtime::Handle,
    array: &'a Array<S>,
    jobs: J,
    chunks: usize,
    decode: &D,
) -> Result<()>
where
    S: ReadableStore + ?Sized,
    J: futures::Stream<Item = Result<Job<'a>>> + Send + 'a,
    D: Fn(Fetched) -> Result<()> + Sync,
{
    use std::sync::atomic::{AtomicBool, Ordering};

    let store = array.read_store();
    let failure: std::sync::Mutex<Option<Error>> = std::sync::Mutex::new(None);
    let failed = AtomicBool::new(false);
    let fail = |error: Error| {
        failed.store(true, Ordering::Relaxed);
        let mut first = failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        first.get_or_insert(error);
    };
    // Whether the store answers on the thread that polls it.
    let local = AtomicBool::new(true);
    let decode_all = |fetched: Vec<Fetched>| {
        for fetched in fetched {
            if let Err(error) = decode(fetched) {
                fail(error);
                return;
            }
        }
    };
    let elem = array
        .metadata
        .data_type
        .fixed_size()
        .map_or(16, |n| n as u64);
    let per_batch = (chunks / (4 * decoders())).clamp(1, LOCAL_BATCH_JOBS);
    rayon::in_place_scope(|scope| {
        handle.block_on(async {
            let jobs = jobs.fuse();
            futures::pin_mut!(jobs);
            let first = match jobs.next().await {
                None => return,
                Some(Err(error)) => return fail(error),
                Some(Ok(job)) => job,
            };
            let mut first: FetchFuture<'a> = Box::pin(run(array, store, first));
            let polled = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(zarr_store::inline::allow_blocking_here(|| {
                    first.as_mut().poll(cx)
                }))
            })
            .await;
            // Local: batches of jobs, each fetched and decoded by one task; at most two
            // batches per decoding thread queued or running, and the bytes their largest jobs
            // hold once fetched within the decode budget. (A task holds one job's chunk at a
            // time; one waiting inside a decode may take up another task, so each task counts.)
            let queued = std::sync::Arc::new(tokio::sync::Semaphore::new(2 * decoders()));
            let budget = array
                .options
                .decode_budget()
                .clamp(1, tokio::sync::Semaphore::MAX_PERMITS)
                .min(u32::MAX as usize);
            let held = std::sync::Arc::new(tokio::sync::Semaphore::new(budget));
            let mut waiting = match polled {
                std::task::Poll::Ready(Ok(fetched)) => {
                    // The first batch: what was just fetched (the semaphores are full).
                    let cost = fetched
                        .iter()
                        .fold(0usize, |n, f| n.saturating_add(f.payload.encoded_bytes()))
                        .clamp(1, budget) as u32;
                    let permit = (
                        std::sync::Arc::clone(&queued).try_acquire_owned().ok(),
                        std::sync::Arc::clone(&held)
                            .try_acquire_many_owned(cost)
                            .ok(),
                    );
                    scope.spawn(move |_| {
                        decode_all(fetched);
                        drop(permit);
                    });
                    Vec::new()
                }
                std::task::Poll::Ready(Err(error)) => return fail(error),
                std::task::Poll::Pending => {
                    local.store(false, Ordering::Relaxed);
                    vec![first]
                }
            };
            let mut unsent: Vec<Job<'a>> = Vec::new();
            // Jobs a task did not start because the store turned out to make reads wait.
            let (returned, returns) = futures::channel::mpsc::unbounded::<Job<'a>>();
            while local.load(Ordering::Relaxed) {
                let mut batch = Vec::new();
                let (mut bytes, mut largest) = (0u64, 0u64);
                let mut done = false;
                while batch.len() < per_batch && bytes < LOCAL_BATCH_BYTES {
                    match jobs.next().await {
                        None => {
                            done = true;
                            break;
                        }
                        Some(Err(error)) => return fail(error),
                        Some(Ok(job)) => {
                            let holds = job.held(elem);
                            let size = job.elements().saturating_mul(elem).max(holds);
                            bytes = bytes.saturating_add(size);
                            largest = largest.max(holds);
                            batch.push(job);
                        }
                    }
                }
                if batch.is_empty() {
                    break;
                }
                let cost = largest.clamp(1, budget as u64) as u32;
                let (Ok(slot), Ok(room)) = (
                    std::sync::Arc::clone(&queued).acquire_owned().await,
                    std::sync::Arc::clone(&held).acquire_many_owned(cost).await,
                ) else {
                    // Never closed.
                    return;
                };
                let permit = (slot, room);
                if failed.load(Ordering::Relaxed) {
                    return;
                }
                if !local.load(Ordering::Relaxed) {
                    unsent = batch;
                    break;
                }
                let (handle, local, failed, fail, decode_all, returned) = (
                    handle.clone(),
                    &local,
                    &failed,
                    &fail,
                    &decode_all,
                    returned.clone(),
                );
                scope.spawn(move |_| {
                    let _permit = permit;
                    let _runtime = handle.enter();
                    let mut batch = batch.into_iter();
                    while let Some(job) = batch.next() {
                        if failed.load(Ordering::Relaxed) {
                            return;
                        }
                        if !local.load(Ordering::Relaxed) {
                            // Fetched by the pipeline's thread, many at a time.
                            for job in std::iter::once(job).chain(batch) {
                                // The receiver lives until every task has finished.
                                let _ = returned.unbounded_send(job);
                            }
                            return;
                        }
                        match fetch_here(run(array, store, job), local) {
                            Ok(fetched) => decode_all(fetched),
                            Err(error) => return fail(error),
                        }
                    }
                });
                if done {
                    break;
                }
            }
            // The local tasks hold the other senders: the returns end when they have all
            // finished.
            drop(returned);
            if failed.load(Ordering::Relaxed) {
                return;
            }
            // Fetched here, decoded on rayon's pool: what was being fetched, what was
            // planned but not sent, what tasks gave back, and the rest.
            let planned = stream::iter(unsent.into_iter().map(Ok)).chain(jobs);
            let rest =
                stream::select(planned, returns.map(Ok)).map(move |job| -> FetchFuture<'a> {
                    match job {
                        Ok(job) => Box::pin(run(array, store, job)),
                        Err(error) => Box::pin(std::future::ready(Err(error))),
                    }
                });
            let fetches = stream::iter(waiting.drain(..))
                .chain(rest)
                .buffer_unordered(array.options.io_concurrency())
                .flat_map(|fetched| {
                    let fetched: Vec<Result<Fetched>> = match fetched {
                        Ok(fetched) => fetched.into_iter().map(Ok).collect(),
                        Err(error) => vec![Err(error)],
                    };
                    stream::iter(fetched)
                });
            decode_fetched(
                scope,
                fetches,
                array.options.decode_budget(),
                decode,
                &failed,
                &fail,
            )
            .await;
        });
    });
    match failure
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// The fetch of one job, boxed so that fetches started in different places can be awaited
/// together.
type FetchFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<Fetched>>> + Send + 'a>>;

/// Wake a thread parked in [`fetch_here`].
struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Run `fetch` to completion on this (rayon) thread, letting the store block it. If the
/// store makes it wait, `local` is cleared: the pipeline fetches the rest elsewhere.
fn fetch_here<F: std::future::Future>(
    fetch: F,
    local: &std::sync::atomic::AtomicBool,
) -> F::Output {
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fetch = std::pin::pin!(fetch);
    loop {
        let polled = zarr_store::inline::allow_blocking_here(|| fetch.as_mut().poll(&mut cx));
        match polled {
            std::task::Poll::Ready(output) => return output,
            std::task::Poll::Pending => {
                local.store(false, std::sync::atomic::Ordering::Relaxed);
                std::thread::park();
            }
        }
    }
}

/// Drive `fetches` on this thread and decode what arrives on rayon's pool (in `scope`),
/// holding at most `budget` encoded bytes (and always at least one chunk) fetched but not
/// yet decoded. Errors go to `fail`.
///
/// Once the budget is used up, this thread waits for half of it to be free again, not for
/// each chunk's share: a 512-chunk read made about 870 context switches with a wake-up
/// per chunk and about 90 this way, 3-5% faster on two cores.
async fn decode_fetched<'scope, F, D, E>(
    scope: &rayon::Scope<'scope>,
    fetches: F,
    budget: usize,
    decode: &'scope D,
    failed: &'scope std::sync::atomic::AtomicBool,
    fail: &'scope E,
) where
    F: futures::Stream<Item = Result<Fetched>>,
    D: Fn(Fetched) -> Result<()> + Sync,
    E: Fn(Error) + Sync,
{
    // Permits count encoded bytes; one chunk larger than the whole budget takes all of it.
    let budget = budget.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(budget));
    // Budget taken but not yet given to a chunk.
    let mut reserve: Option<tokio::sync::OwnedSemaphorePermit> = None;
    futures::pin_mut!(fetches);
    while let Some(fetched) = fetches.next().await {
        if failed.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let fetched = match fetched {
            Ok(fetched) => fetched,
            Err(error) => return fail(error),
        };
        let cost = fetched.payload.encoded_bytes().clamp(1, budget);
        let permit = match reserve.as_mut().and_then(|r| r.split(cost)) {
            Some(permit) => permit,
            None => {
                // Hold nothing while waiting (what is held and what is wanted may not fit in
                // the budget together), then take half the budget at once: this thread
                // sleeps until that much has been decoded, not once per chunk, and decoders
                // find work queued instead of waiting for it.
                reserve = None;
                let want = cost.max(budget / 2);
                let want = u32::try_from(want).unwrap_or(u32::MAX);
                let Ok(mut taken) = std::sync::Arc::clone(&permits)
                    .acquire_many_owned(want)
                    .await
                else {
                    // Never closed.
                    return;
                };
                // `want >= cost`, so the split succeeds; the rest is the reserve.
                match taken.split(cost) {
                    Some(permit) => {
                        reserve = Some(taken);
                        permit
                    }
                    None => taken,
                }
            }
        };
        scope.spawn(move |_| {
            if let Err(error) = decode(fetched) {
                fail(error);
            }
            drop(permit);
        });
    }
}

/// One fetch of a read, planned before its bytes are read.
enum Job<'a> {
    /// Known without reading more (a shard found missing while planning).
    Ready(Fetched),
    /// The whole stored chunk or shard: one request.
    Whole {
        selection: ChunkSelection,
        key: StoreKey,
    },
    /// The selected elements of a variable-length chunk, read in part where the codecs allow.
    Elements {
        selection: ChunkSelection,
        key: StoreKey,
        ranged: &'a RangedVlen,
    },
    /// Whole chunks of one shard of the sharding storage transformer: one
    /// `get_partial_values` call, which the transformer serves with two requests.
    Chunks(Vec<(ChunkSelection, StoreKey)>),
    /// `selection.within_chunk` of a shard whose index has been read: one request for its
    /// inner chunks.
    ShardPart {
        selection: ChunkSelection,
        key: StoreKey,
        codec: std::sync::Arc<ShardingCodec>,
        index: std::sync::Arc<ShardIndex>,
    },
}

impl Job<'_> {
    /// About how many bytes this job's fetch holds until it is decoded, known before it is
    /// made: exactly what is read for the inner chunks of a shard read in part (from its
    /// index, whatever part of them the region needs), otherwise the decoded size (with `elem`
    /// bytes per element), which stored chunks rarely exceed.
    fn held(&self, elem: u64) -> u64 {
        match self {
            Self::Ready(fetched) => fetched.payload.encoded_bytes() as u64,
            Self::ShardPart {
                selection,
                codec,
                index,
                ..
            } => codec
                .fetch_len(index, std::slice::from_ref(&selection.within_chunk))
                .unwrap_or(u64::MAX),
            _ => self.elements().saturating_mul(elem),
        }
    }

    /// How many elements decoding this job produces (or at least decodes).
    fn elements(&self) -> u64 {
        let chunk = |selection: &ChunkSelection| {
            selection
                .chunk_shape
                .iter()
                .fold(1u64, |n, &d| n.saturating_mul(d))
        };
        match self {
            Self::Ready(_) => 0,
            Self::Whole { selection, .. } => chunk(selection),
            Self::Elements { selection, .. } | Self::ShardPart { selection, .. } => {
                selection.within_chunk.num_elements().unwrap_or(u64::MAX)
            }
            Self::Chunks(chunks) => chunks
                .iter()
                .fold(0u64, |n, (selection, _)| n.saturating_add(chunk(selection))),
        }
    }
}

/// The fetches of `selections`, planned (with at most `io_concurrency` plans, which may
/// read shard indexes, in flight).
///
/// Each selection is first planned, then fetched. A shard the region needs only part of, or
/// a whole shard that decodes to more than the decode budget, has its index read while
/// planning and is then fetched in parts of at most half the budget of encoded bytes
/// ([`ShardingCodec::split_region`]): a large shard is never held whole, and its first inner
/// chunks are decoded while the rest are read. A region within half the budget costs the two
/// requests of a partial shard read (index, inner chunks); a smaller whole shard is one `get`.
///
/// Through the sharding storage transformer, the chunks of one shard are fetched together
/// ([`transformer_batches`]).
fn job_stream<'a, S, I>(
    array: &'a Array<S>,
    selections: I,
    partial: Partial<'a>,
) -> impl futures::Stream<Item = Result<Job<'a>>> + Send + 'a
where
    S: ReadableStore + ?Sized,
    I: Iterator<Item = ChunkSelection> + Send + 'a,
{
    let store = array.read_store();
    let concurrency = array.options.io_concurrency();
    let groups: Box<dyn Iterator<Item = Result<Vec<ChunkSelection>>> + Send + 'a> =
        match transformer_batches(array, partial) {
            Some(elem) => Box::new(
                crate::boxes::batched(
                    selections.map(Ok),
                    (array.options.decode_budget() / 2).max(1) as u64,
                    move |selection: &ChunkSelection| {
                        let elements = selection.chunk_shape.iter().product::<u64>();
                        let key = array.chunk_key_unchecked(&selection.chunk)?;
                        let shard = array
                            .transformer
                            .as_ref()
                            .and_then(|t| t.shard_of(&key))
                            .map(|(shard, _)| shard);
                        Ok((elements.saturating_mul(elem), shard))
                    },
                )
                .map(|batch| batch.map(|(_, selections)| selections)),
            ),
            None => Box::new(selections.map(|selection| Ok(vec![selection]))),
        };
    stream::iter(groups)
        .map(move |group| async move { plan_group(array, store, partial, group?).await })
        .buffer_unordered(concurrency)
        .flat_map(|planned| {
            let jobs: Vec<Result<Job<'a>>> = match planned {
                Ok(jobs) => jobs.into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error)],
            };
            stream::iter(jobs)
        })
}

/// The chunks of `selections`, fetched with at most `io_concurrency` requests in flight
/// ([`job_stream`], each job then fetched).
fn fetch_stream<'a, S, I>(
    array: &'a Array<S>,
    selections: I,
    partial: Partial<'a>,
) -> impl futures::Stream<Item = Result<Fetched>> + Send + 'a
where
    S: ReadableStore + ?Sized,
    I: Iterator<Item = ChunkSelection> + Send + 'a,
{
    let store = array.read_store();
    let concurrency = array.options.io_concurrency();
    job_stream(array, selections, partial)
        .map(move |job| async move { run(array, store, job?).await })
        .buffer_unordered(concurrency)
        .flat_map(|fetched| {
            let fetched: Vec<Result<Fetched>> = match fetched {
                Ok(fetched) => fetched.into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error)],
            };
            stream::iter(fetched)
        })
}

/// Whether a read fetches the chunks of each shard of the sharding storage transformer
/// together, and if so the bytes per element to count them by (the decoded size; 16 for
/// variable-length elements): for arrays through the transformer, without the
/// `sharding_indexed` codec, unless their variable-length chunks are read element by
/// element. Each batch holds at most half the decode budget of decoded bytes, or one chunk,
/// and costs the transformer's two requests (every index, then every chunk range), where a
/// `get` per chunk costs two requests each.
fn transformer_batches<S: ?Sized>(array: &Array<S>, partial: Partial<'_>) -> Option<u64> {
    let batched = array.transformer.is_some()
        && array.inner_chunk_shape().is_none()
        && !matches!(partial, Partial::Vlen(_));
    batched.then(|| {
        array
            .metadata
            .data_type
            .fixed_size()
            .map_or(16, |n| n as u64)
    })
}

/// Decide how to fetch the selections of `group` (chunks of one shard of the storage
/// transformer, fetched together, or one selection).
async fn plan_group<'a, S: ReadableStore + ?Sized>(
    array: &'a Array<S>,
    store: &'a dyn ReadableStore,
    partial: Partial<'a>,
    mut group: Vec<ChunkSelection>,
) -> Result<Vec<Job<'a>>> {
    if group.len() == 1
        && let Some(selection) = group.pop()
    {
        return plan(array, store, partial, selection).await;
    }
    let chunks = group
        .into_iter()
        .map(|selection| {
            let key = array.chunk_key_unchecked(&selection.chunk)?;
            Ok((selection, key))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(vec![Job::Chunks(chunks)])
}

/// Decide how to fetch `selection`; reads a shard's index when the shard is to be read in
/// part.
async fn plan<'a, S: ReadableStore + ?Sized>(
    array: &'a Array<S>,
    store: &'a dyn ReadableStore,
    partial: Partial<'a>,
    selection: ChunkSelection,
) -> Result<Vec<Job<'a>>> {
    let key = array.chunk_key_unchecked(&selection.chunk)?;
    let whole = selection.within_chunk.shape() == selection.chunk_shape;
    match partial {
        Partial::Vlen(ranged) if !whole => {
            return Ok(vec![Job::Elements {
                selection,
                key,
                ranged,
            }]);
        }
        Partial::Shards => {}
        Partial::Vlen(_) | Partial::Whole => return Ok(vec![Job::Whole { selection, key }]),
    }
    let Some(codec) = array.sharding(&selection.chunk_shape)? else {
        return Ok(vec![Job::Whole { selection, key }]);
    };
    let budget = array.options.decode_budget();
    let decoded = codec
        .shard_representation()
        .fixed_size_usize()
        .unwrap_or(usize::MAX);
    // A whole shard is one request; of variable-length elements, whatever its size (its
    // decoded size is not known before decoding).
    let variable = codec.shard_representation().element_size().is_none();
    if whole && (decoded <= budget || variable) {
        return Ok(vec![Job::Whole { selection, key }]);
    }
    let Some(index) = shard_index(array, store, &codec, &key).await? else {
        return Ok(vec![Job::Ready(Fetched {
            selection,
            key,
            payload: Payload::Missing,
        })]);
    };
    let parts = codec
        .split_region(&index, &selection.within_chunk, (budget / 2).max(1) as u64)
        .map_err(|e| array.shard_error(&key, e))?;
    let origin = selection.within_chunk.starts();
    let output = selection.within_output.starts();
    parts
        .into_iter()
        .map(|part| {
            let within_output = Region::try_new(
                part.ranges()
                    .iter()
                    .zip(origin.iter().zip(&output))
                    .map(|(r, (&o, &out))| r.start - o + out..r.end - o + out)
                    .collect(),
            )?;
            Ok(Job::ShardPart {
                selection: ChunkSelection {
                    chunk: selection.chunk.clone(),
                    chunk_shape: selection.chunk_shape.clone(),
                    within_chunk: part,
                    within_output,
                },
                key: key.clone(),
                codec: std::sync::Arc::clone(&codec),
                index: std::sync::Arc::clone(&index),
            })
        })
        .collect()
}

/// The index of the shard at `key` (`None` if the shard is not stored): from the array's
/// index cache if it has it, otherwise read, joining a read of the same index in flight.
pub(crate) async fn shard_index<S: ReadableStore + ?Sized>(
    array: &Array<S>,
    store: &dyn ReadableStore,
    codec: &ShardingCodec,
    key: &StoreKey,
) -> Result<Option<std::sync::Arc<ShardIndex>>> {
    let cache = array.index_cache.as_deref();
    if let Some(index) = cache.and_then(|cache| cache.get(key)) {
        return Ok(index);
    }
    array
        .index_flights
        .fetch(key, || async {
            let epoch = cache.map(crate::index_cache::IndexCache::epoch);
            let index = codec
                .fetch_index(store, key)
                .await?
                .map(std::sync::Arc::new);
            if let (Some(cache), Some(epoch)) = (cache, epoch) {
                cache.insert(epoch, key, index.clone());
            }
            Ok(index)
        })
        .await
        .map_err(|e| array.shard_error(key, e))
}

/// Fetch what `job` needs (one chunk, or the chunks of [`Job::Chunks`]).
async fn run<S: ReadableStore + ?Sized>(
    array: &Array<S>,
    store: &dyn ReadableStore,
    job: Job<'_>,
) -> Result<Vec<Fetched>> {
    let (selection, key, payload) = match job {
        Job::Ready(fetched) => return Ok(vec![fetched]),
        Job::Chunks(chunks) => {
            let keys: Vec<&StoreKey> = chunks.iter().map(|(_, key)| key).collect();
            let stored = get_whole(array, store, &keys).await?;
            return Ok(chunks
                .into_iter()
                .zip(stored)
                .map(|((selection, key), stored)| Fetched {
                    selection,
                    key,
                    payload: stored.map_or(Payload::Missing, Payload::Whole),
                })
                .collect());
        }
        Job::Whole { selection, key } => {
            let payload = match store.get(&key).await? {
                Some(bytes) => Payload::Whole(bytes),
                None => Payload::Missing,
            };
            (selection, key, payload)
        }
        Job::Elements {
            selection,
            key,
            ranged,
        } => {
            let payload = match vlen_partial::fetch(array, store, ranged, &key, &selection).await? {
                Some(vlen_partial::Fetched::Missing) => Payload::Missing,
                Some(vlen_partial::Fetched::Elements(elements)) => Payload::Elements(elements),
                None => match store.get(&key).await? {
                    Some(bytes) => Payload::Whole(bytes),
                    None => Payload::Missing,
                },
            };
            (selection, key, payload)
        }
        Job::ShardPart {
            selection,
            key,
            codec,
            index,
        } => {
            let fetch = codec
                .fetch_chunks(store, &key, index, &selection.within_chunk)
                .await
                .map_err(|e| array.shard_error(&key, e))?;
            (selection, key, Payload::Shard(fetch))
        }
    };
    Ok(vec![Fetched {
        selection,
        key,
        payload,
    }])
}

/// The whole stored values of `keys` (`None` where not stored), with one
/// `get_partial_values` call.
pub(crate) async fn get_whole<S: ?Sized>(
    array: &Array<S>,
    store: &dyn ReadableStore,
    keys: &[&StoreKey],
) -> Result<Vec<Option<Bytes>>> {
    let requests: Vec<(StoreKey, zarr_store::ByteRange)> = keys
        .iter()
        .map(|key| ((*key).clone(), zarr_store::ByteRange::FULL))
        .collect();
    let answers = store.get_partial_values(&requests).await?;
    if answers.len() != keys.len() {
        return Err(Error::unsupported(
            array.path.as_str(),
            format!(
                "the store answered {} of {} chunk requests",
                answers.len(),
                keys.len()
            ),
        ));
    }
    Ok(answers)
}

/// Read `region` of a fixed-size array into `out`.
pub(crate) async fn read_fixed<S: ReadableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    out: &mut [u8],
) -> Result<()> {
    let metadata = &array.metadata;
    region.check_within(&metadata.shape)?;
    let elem = array.element_size()?;
    let expected = region.num_elements()?;
    if out.len() as u64 != expected.saturating_mul(elem as u64) {
        return Err(Error::buffer_size(expected, elem, out.len()));
    }
    if expected == 0 {
        return Ok(());
    }
    let selections = metadata
        .chunk_grid
        .chunks_in_region(&metadata.shape, region)?;
    let chunks = selections.num_chunks()?;
    let span = tracing::debug_span!(
        "zarr.read",
        array = %array.path,
        region = %region,
        chunks,
        bytes = out.len()
    );
    let view = ArrayViewMut::new(out, &region.shape(), elem).map_err(|e| Error::Codecs {
        array: array.path.as_str().to_owned(),
        source: Box::new(e),
    })?;
    let fill = metadata.fill_value.as_bytes();
    let decode_one = |fetched: Fetched| -> Result<()> {
        // SAFETY: the selections of one region are disjoint (each output element lies in
        // exactly one chunk), so the views decoded at the same time never overlap, and the
        // parent view is not written while they live.
        let mut target = unsafe { view.subview(fetched.selection.within_output.clone()) }
            .map_err(|e| array.chunk_error(&fetched.key, e))?;
        let selection = &fetched.selection;
        match fetched.payload {
            Payload::Missing => target
                .fill(fill)
                .map_err(|e| array.chunk_error(&fetched.key, e)),
            Payload::Elements(_) => Err(Error::unsupported(
                array.path.as_str(),
                "variable-length elements for a fixed-size data type",
            )),
            Payload::Shard(fetch) => {
                let codec = array
                    .sharding(&selection.chunk_shape)?
                    .ok_or_else(|| Error::unsupported(array.path.as_str(), "not sharded"))?;
                codec
                    .decode_fetched_into_view(&fetch, &selection.within_chunk, &mut target)
                    .map_err(|e| array.shard_error_at(&fetched.key, &selection.chunk, e))
            }
            Payload::Whole(bytes) => match array.sharding(&selection.chunk_shape)? {
                Some(codec) => codec
                    .decode_shard_into_view(bytes, &selection.within_chunk, &mut target)
                    .map_err(|e| array.shard_error_at(&fetched.key, &selection.chunk, e)),
                None => array
                    .chain(&selection.chunk_shape)?
                    .decode_into_view(bytes, &selection.within_chunk, &mut target)
                    .map_err(|e| array.chunk_error_at(&fetched.key, &selection.chunk, e)),
            },
        }
    };
    fetch_and_decode(array, selections, chunks, Partial::Shards, decode_one)
        .instrument(span)
        .await
}

/// Read `region` of a variable-length array.
pub(crate) async fn read_variable<S: ReadableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
) -> Result<ArrayBytes> {
    let metadata = &array.metadata;
    let n = usize::try_from(region.num_elements()?).map_err(|_| zarr_core::Error::Overflow {
        what: "the number of elements in the region".into(),
    })?;
    if n == 0 {
        return Ok(ArrayBytes::Variable(VlenBytes::from_elements(
            std::iter::empty(),
        )));
    }
    let selections = metadata
        .chunk_grid
        .chunks_in_region(&metadata.shape, region)?;
    let chunks = selections.num_chunks()?;
    let span = tracing::debug_span!("zarr.read", array = %array.path, region = %region, chunks);
    // Each chunk's selected elements, in the C order of its `within_chunk`.
    let parts: Vec<(Region, VlenBytes)> = Vec::new();
    let ranged = RangedVlen::of(array);
    // A region of a shard fetches the index and only the inner chunks it needs; a whole
    // shard is one request.
    let partial = match &ranged {
        Some(ranged) => Partial::Vlen(ranged),
        None if array.codecs.sharding_codec().is_some() => Partial::Shards,
        None => Partial::Whole,
    };
    let parts = std::sync::Mutex::new(parts);
    let decode = |fetched: Fetched| -> Result<()> {
        let Fetched {
            selection,
            key,
            payload,
        } = fetched;
        let fixed = || {
            Error::unsupported(
                array.path.as_str(),
                "a chunk of a variable-length data type decoded to fixed-size data",
            )
        };
        let part = match payload {
            Payload::Elements(part) => part,
            Payload::Shard(fetch) => {
                // Only the inner chunks the selection touches, decoded as the selection.
                let codec = array
                    .sharding(&selection.chunk_shape)?
                    .ok_or_else(|| Error::unsupported(array.path.as_str(), "not sharded"))?;
                match codec
                    .decode_fetched(&fetch, &selection.within_chunk)
                    .map_err(|e| array.shard_error_at(&key, &selection.chunk, e))?
                {
                    ArrayBytes::Variable(part) => part,
                    ArrayBytes::Fixed(_) => return Err(fixed()),
                }
            }
            payload => {
                let chain = array.chain(&selection.chunk_shape)?;
                let whole = match payload {
                    Payload::Whole(bytes) => chain.decode(bytes),
                    _ => ArrayBytes::fill(chain.decoded_representation()),
                }
                .map_err(|e| array.chunk_error_at(&key, &selection.chunk, e))?;
                let ArrayBytes::Variable(vlen) = whole else {
                    return Err(fixed());
                };
                select_elements(&vlen, &selection.chunk_shape, &selection.within_chunk)?
            }
        };
        parts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((selection.within_output, part));
        Ok(())
    };
    fetch_and_decode(array, selections, chunks, partial, decode)
        .instrument(span)
        .await?;
    let parts = parts
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let elements = vlen_partial::assemble(&region.shape(), &parts).map_err(|e| match e {
        Error::Codecs { source, .. } => Error::Codecs {
            array: array.path.as_str().to_owned(),
            source,
        },
        other => other,
    })?;
    Ok(ArrayBytes::Variable(elements))
}

/// The elements of `region` of a C-order chunk of `shape`, in the region's C order.
pub(crate) fn select_elements(
    vlen: &VlenBytes,
    shape: &[u64],
    region: &Region,
) -> Result<VlenBytes> {
    if region.shape() == shape {
        return Ok(vlen.clone());
    }
    vlen_partial::gather(vlen, &vlen_partial::runs(shape, region))
}

/// The C-order element numbers (within a C-order buffer of `shape`) of `region`'s elements,
/// in the region's C order.
pub(crate) fn element_ids(shape: &[u64], region: &Region) -> Result<Vec<u64>> {
    let m = usize::try_from(region.num_elements()?).map_err(|_| zarr_core::Error::Overflow {
        what: "the number of elements in the region".into(),
    })?;
    let mut ids = Vec::with_capacity(m);
    for run in vlen_partial::runs(shape, region) {
        ids.extend(run);
    }
    Ok(ids)
}

pub(crate) fn bytes_of(values: &[u64]) -> &[u8] {
    crate::element::as_bytes(values)
}

pub(crate) fn bytes_of_mut(values: &mut [u64]) -> &mut [u8] {
    crate::element::as_bytes_mut(values)
}
