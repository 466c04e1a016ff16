//! The read engine's two schedules give the same answers: fetching and decoding in turns (a
//! current-thread runtime, or one chunk) and the pipeline (a multi-threaded runtime or the
//! blocking API: rayon's tasks fetch and decode from stores that answer at once, otherwise
//! this thread fetches while rayon decodes). The pipeline holds at most its
//! decode budget of fetched chunks, stops at the first bad chunk, and never hangs. Writes
//! likewise: encoding a batch, then storing it, or (on a multi-threaded runtime) storing each
//! chunk as soon as it is encoded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use zarr_array::{Array, ArrayBuilder, ArrayBytes, ArrayOptions, Error, blocking};
use zarr_core::DataType;
use zarr_store::{
    ByteRange, ListableStore, MemoryStore, ReadableStore, ReadableStoreExt, StoreKey, StorePrefix,
    WritableStore,
};

/// Wraps a store and counts the bytes of the values it handed out that are still alive, and
/// the most that were alive at once.
#[derive(Debug)]
struct LiveBytes<S> {
    inner: Arc<S>,
    live: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

/// Owns a value handed out by [`LiveBytes`] and counts it down when dropped.
struct Tracked {
    value: Bytes,
    live: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for Tracked {
    fn as_ref(&self) -> &[u8] {
        &self.value
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.live.fetch_sub(self.value.len(), Ordering::SeqCst);
    }
}

impl<S> LiveBytes<S> {
    fn new(inner: Arc<S>) -> Self {
        Self {
            inner,
            live: Arc::default(),
            peak: Arc::default(),
        }
    }

    fn track(&self, value: Bytes) -> Bytes {
        let now = self.live.fetch_add(value.len(), Ordering::SeqCst) + value.len();
        self.peak.fetch_max(now, Ordering::SeqCst);
        Bytes::from_owner(Tracked {
            value,
            live: Arc::clone(&self.live),
        })
    }
}

#[async_trait]
impl<S: ReadableStore> ReadableStore for LiveBytes<S> {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        Ok(self.inner.get(key).await?.map(|v| self.track(v)))
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        let values = self.inner.get_partial_values(key_ranges).await?;
        Ok(values
            .into_iter()
            .map(|v| v.map(|v| self.track(v)))
            .collect())
    }
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const SHAPE: [u64; 3] = [40, 48, 56];

/// Values that compress, but not to nothing.
fn values() -> Vec<u16> {
    let n = SHAPE.iter().product::<u64>();
    (0..n)
        .map(|i| ((i * 7_919) % 4_099) as u16 ^ (i / 97) as u16)
        .collect()
}

fn expected(all: &[u16], region: &[std::ops::Range<u64>; 3]) -> Vec<u16> {
    let mut out = Vec::new();
    for z in region[0].clone() {
        for y in region[1].clone() {
            for x in region[2].clone() {
                out.push(all[((z * SHAPE[1] + y) * SHAPE[2] + x) as usize]);
            }
        }
    }
    out
}

/// A chunked and a sharded array with the same values, some chunks (and one whole shard)
/// left unwritten so they read as the fill value.
fn stores() -> (Arc<MemoryStore>, Vec<u16>) {
    let store = Arc::new(MemoryStore::new());
    let mut all = values();
    current_thread().block_on(async {
        let chunked = ArrayBuilder::new(SHAPE.to_vec(), DataType::UInt16, vec![8, 16, 8])
            .fill_value(7u16.into())
            .zstd(1)
            .create(Arc::clone(&store), "/chunked")
            .await
            .unwrap();
        let sharded = ArrayBuilder::new(SHAPE.to_vec(), DataType::UInt16, vec![16, 16, 16])
            .fill_value(7u16.into())
            .sharding(vec![8, 8, 8])
            .zstd(1)
            .create(Arc::clone(&store), "/sharded")
            .await
            .unwrap();
        // Leave z 32..40 unwritten: the last layer of chunks and of shards is missing.
        for z in 32..SHAPE[0] {
            for i in 0..SHAPE[1] * SHAPE[2] {
                all[(z * SHAPE[1] * SHAPE[2] + i) as usize] = 7;
            }
        }
        let written = [0..32, 0..SHAPE[1], 0..SHAPE[2]];
        let part = expected(&all, &written);
        chunked.write(written.clone(), &part).await.unwrap();
        sharded.write(written, &part).await.unwrap();
    });
    (store, all)
}

const REGIONS: [[std::ops::Range<u64>; 3]; 5] = [
    [0..40, 0..48, 0..56],
    [3..37, 5..47, 1..55],
    [8..16, 16..32, 8..16],
    [0..40, 20..21, 0..56],
    [30..40, 0..48, 50..56],
];

#[test]
fn both_schedules_and_every_budget_read_the_same() {
    let (store, all) = stores();
    for path in ["/chunked", "/sharded"] {
        for budget in [1, 3_000, zarr_array::DEFAULT_DECODE_BUDGET] {
            let options = ArrayOptions::default().with_decode_budget(budget);
            for rt in [current_thread(), multi_thread()] {
                rt.block_on(async {
                    let array = Array::open_with(Arc::clone(&store), path, options.clone())
                        .await
                        .unwrap();
                    for region in &REGIONS {
                        let got: Vec<u16> = array.read(region.clone()).await.unwrap();
                        assert_eq!(got, expected(&all, region), "{path} {region:?} {budget}");
                    }
                });
            }
            let array = blocking::Array::open_with(Arc::clone(&store), path, options).unwrap();
            for region in &REGIONS {
                let got: Vec<u16> = array.read(region.clone()).unwrap();
                assert_eq!(got, expected(&all, region), "{path} {region:?} {budget}");
            }
        }
    }
}

/// While a read decodes, it holds at most its decode budget of fetched chunks, plus the one
/// fetched chunk waiting for room. Fetching from memory is far faster than decoding, so a
/// pipeline without the budget would hold nearly every chunk at once.
#[test]
fn the_pipeline_holds_at_most_its_decode_budget() {
    let (store, all) = stores();
    let largest = |prefix: &str| {
        current_thread().block_on(async {
            let mut largest = 0;
            for key in zarr_store::ListableStore::list(store.as_ref())
                .await
                .unwrap()
            {
                if key.as_str().starts_with(prefix) && !key.as_str().ends_with("zarr.json") {
                    largest = largest.max(store.get(&key).await.unwrap().unwrap().len());
                }
            }
            largest
        })
    };
    for path in ["/chunked", "/sharded"] {
        let chunk = largest(&path[1..]);
        let budget = 3 * chunk;
        let wrapped = Arc::new(LiveBytes::new(Arc::clone(&store)));
        let options = ArrayOptions::default()
            .with_decode_budget(budget)
            .with_io_concurrency(1);
        multi_thread().block_on(async {
            let array = Array::open_with(Arc::clone(&wrapped), path, options)
                .await
                .unwrap();
            wrapped.peak.store(0, Ordering::SeqCst);
            let region = [0..40, 0..48, 0..56];
            let got: Vec<u16> = array.read(region.clone()).await.unwrap();
            assert_eq!(got, expected(&all, &region));
        });
        let peak = wrapped.peak.load(Ordering::SeqCst);
        assert!(peak > 0);
        assert!(
            peak <= budget + chunk,
            "{path}: {peak} bytes alive at once; budget {budget}, chunks up to {chunk}"
        );
        assert_eq!(
            wrapped.live.load(Ordering::SeqCst),
            0,
            "{path}: all released"
        );
    }
}

/// A shard that decodes to more than the budget is read in parts (index first, then groups
/// of inner chunks of at most half the budget): a whole read never holds a whole shard.
#[test]
fn shards_larger_than_the_budget_are_read_in_parts() {
    let (store, all) = stores();
    let shard = current_thread().block_on(async {
        let key = StoreKey::new("sharded/c/0/0/0");
        store.get(&key).await.unwrap().unwrap().len()
    });
    let budget = shard / 2;
    for rt in [multi_thread(), current_thread()] {
        let wrapped = Arc::new(LiveBytes::new(Arc::clone(&store)));
        let options = ArrayOptions::default()
            .with_decode_budget(budget)
            .with_io_concurrency(1);
        rt.block_on(async {
            let array = Array::open_with(Arc::clone(&wrapped), "/sharded", options)
                .await
                .unwrap();
            for region in &REGIONS {
                wrapped.peak.store(0, Ordering::SeqCst);
                let got: Vec<u16> = array.read(region.clone()).await.unwrap();
                assert_eq!(got, expected(&all, region), "{region:?}");
                let peak = wrapped.peak.load(Ordering::SeqCst);
                assert!(
                    peak < shard,
                    "{region:?}: {peak} bytes alive at once, a shard is {shard}"
                );
            }
        });
        assert_eq!(wrapped.live.load(Ordering::SeqCst), 0, "all released");
    }
}

/// A corrupt chunk among many fails the whole read with an error naming it, on either
/// schedule, and the pipeline neither hangs nor leaves decodes running.
#[test]
fn a_corrupt_chunk_fails_a_pipelined_read() {
    let (store, _) = stores();
    let bad = StoreKey::new("chunked/c/1/1/3");
    current_thread().block_on(async {
        let good = store.get(&bad).await.unwrap().unwrap();
        store.set(&bad, good.slice(..good.len() / 2)).await.unwrap();
    });
    for budget in [1, zarr_array::DEFAULT_DECODE_BUDGET] {
        let options = ArrayOptions::default().with_decode_budget(budget);
        for rt in [current_thread(), multi_thread()] {
            rt.block_on(async {
                let array = Array::open_with(Arc::clone(&store), "/chunked", options.clone())
                    .await
                    .unwrap();
                let error = array.read::<u16>(array.full_region()).await.unwrap_err();
                assert!(
                    matches!(&error, Error::Chunk { key, .. } if key == bad.as_str()),
                    "{error:?}"
                );
                // The rest of the array stays readable.
                let fine: Vec<u16> = array.read([0..8, 0..16, 0..8]).await.unwrap();
                assert_eq!(fine.len(), 8 * 16 * 8);
            });
        }
    }
}

/// Wraps a store: the first `immediate` reads answer at once, every later one only after a
/// short sleep on the runtime's timer (as a network store answers); each read records
/// whether it ran on one of rayon's threads.
#[derive(Debug)]
struct Answering<S> {
    inner: Arc<S>,
    immediate: usize,
    reads: AtomicUsize,
    on_rayon: AtomicUsize,
    delayed: AtomicUsize,
}

impl<S> Answering<S> {
    fn new(inner: Arc<S>, immediate: usize) -> Self {
        Self {
            inner,
            immediate,
            reads: AtomicUsize::new(0),
            on_rayon: AtomicUsize::new(0),
            delayed: AtomicUsize::new(0),
        }
    }

    async fn before_read(&self) {
        if rayon::current_thread_index().is_some() {
            self.on_rayon.fetch_add(1, Ordering::SeqCst);
        }
        if self.reads.fetch_add(1, Ordering::SeqCst) >= self.immediate {
            self.delayed.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}

#[async_trait]
impl<S: ReadableStore> ReadableStore for Answering<S> {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        self.before_read().await;
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        self.before_read().await;
        self.inner.get_partial_values(key_ranges).await
    }
}

/// A store that answers at once is read on rayon's threads, each chunk fetched by the task
/// that decodes it; one that makes reads wait (from the start, or from some read on) is
/// fetched by the pipeline's own thread. Either way every region reads right, and a corrupt
/// chunk fails the read.
#[test]
fn local_stores_are_fetched_by_the_decoding_threads() {
    let (store, all) = stores();
    // (reads answered at once, whether the chunks are fetched on rayon's threads)
    for (immediate, on_rayon) in [(usize::MAX, true), (0, false), (3, false)] {
        for path in ["/chunked", "/sharded"] {
            let answering = Arc::new(Answering::new(Arc::clone(&store), immediate));
            multi_thread().block_on(async {
                let array = Array::open_with(
                    Arc::clone(&answering),
                    path,
                    ArrayOptions::default().with_decode_budget(20_000),
                )
                .await
                .unwrap();
                let mut on_rayon_in_all = 0;
                for region in &REGIONS {
                    // `immediate` counts from the start of each read.
                    for counter in [&answering.reads, &answering.on_rayon, &answering.delayed] {
                        counter.store(0, Ordering::SeqCst);
                    }
                    let got: Vec<u16> = array.read(region.clone()).await.unwrap();
                    assert_eq!(got, expected(&all, region), "{path} {region:?} {immediate}");
                    let reads = answering.reads.load(Ordering::SeqCst);
                    let rayon = answering.on_rayon.load(Ordering::SeqCst);
                    if reads < 2 {
                        continue;
                    }
                    if on_rayon && path == "/chunked" {
                        // All but the first fetch (made to find out how the store answers).
                        assert_eq!(rayon, reads - 1, "{path} {region:?}");
                    } else if on_rayon {
                        // Shard indexes are read while planning, on the pipeline's thread;
                        // the inner chunks on rayon's (all the first, for a one-shard read).
                        on_rayon_in_all += rayon;
                    } else {
                        // At most the reads made before the store first made one wait, and
                        // the tasks already running then.
                        assert!(
                            rayon <= immediate.min(reads) + 4,
                            "{path} {region:?} {immediate}: {rayon} of {reads} on rayon"
                        );
                        assert_eq!(
                            answering.delayed.load(Ordering::SeqCst),
                            reads.saturating_sub(immediate)
                        );
                    }
                }
                if on_rayon && path == "/sharded" {
                    assert!(on_rayon_in_all > 0);
                }
            });
        }
    }
    // A corrupt chunk fetched by a decoding thread fails the read, naming the chunk.
    let bad = StoreKey::new("chunked/c/2/1/3");
    current_thread().block_on(async {
        let good = store.get(&bad).await.unwrap().unwrap();
        store.set(&bad, good.slice(..good.len() / 2)).await.unwrap();
    });
    let wrapped = Arc::new(Answering::new(Arc::clone(&store), usize::MAX));
    multi_thread().block_on(async {
        let array = Array::open(Arc::clone(&wrapped), "/chunked").await.unwrap();
        let error = array.read::<u16>(array.full_region()).await.unwrap_err();
        assert!(
            matches!(&error, Error::Chunk { key, .. } if key == bad.as_str()),
            "{error:?}"
        );
    });
    assert!(wrapped.on_rayon.load(Ordering::SeqCst) > 1);
}

/// A [`MemoryStore`] whose writes answer at once, or (`wait`) only after a short sleep on
/// the runtime's timer, as a network store's do; counts the writes made on rayon's threads.
#[derive(Debug, Default)]
struct TimedWrites {
    inner: MemoryStore,
    wait: bool,
    sets: AtomicUsize,
    on_rayon: AtomicUsize,
}

#[async_trait]
impl ReadableStore for TimedWrites {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }
}

#[async_trait]
impl WritableStore for TimedWrites {
    async fn set(&self, key: &StoreKey, value: Bytes) -> zarr_store::Result<()> {
        if !key.as_str().ends_with("zarr.json") {
            self.sets.fetch_add(1, Ordering::SeqCst);
            if rayon::current_thread_index().is_some() {
                self.on_rayon.fetch_add(1, Ordering::SeqCst);
            }
            if self.wait {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
        self.inner.set(key, value).await
    }

    async fn erase(&self, key: &StoreKey) -> zarr_store::Result<()> {
        self.inner.erase(key).await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> zarr_store::Result<()> {
        self.inner.erase_prefix(prefix).await
    }
}

/// A write to a store that answers at once stores its chunks on the encoding threads (once
/// the pipeline's thread has stored one to find out); one to a store that makes writes wait
/// stores them from the pipeline's thread. Both store the same chunks.
#[test]
fn local_stores_are_written_by_the_encoding_threads() {
    let mut chunks = Vec::new();
    for wait in [false, true] {
        let store = Arc::new(TimedWrites {
            wait,
            ..TimedWrites::default()
        });
        let all = values();
        multi_thread().block_on(async {
            let array = ArrayBuilder::new(SHAPE.to_vec(), DataType::UInt16, vec![8, 8, 8])
                .zstd(1)
                .create(Arc::clone(&store), "/a")
                .await
                .unwrap();
            array.write(array.full_region(), &all).await.unwrap();
            let back: Vec<u16> = array.read(array.full_region()).await.unwrap();
            assert_eq!(back, all);
        });
        let (sets, on_rayon) = (
            store.sets.load(Ordering::SeqCst),
            store.on_rayon.load(Ordering::SeqCst),
        );
        assert_eq!(sets, 5 * 6 * 7);
        if wait {
            assert_eq!(on_rayon, 0, "{on_rayon} of {sets} on rayon");
        } else {
            // Those encoded after the pipeline's thread found out (how many were encoded
            // before depends on the timing: 178 to 209 of 210 here).
            assert!(on_rayon > 0, "{on_rayon} of {sets} on rayon");
        }
        let stored = current_thread().block_on(async {
            let mut out = Vec::new();
            for key in store.inner.list().await.unwrap() {
                out.push((key.clone(), store.inner.get(&key).await.unwrap().unwrap()));
            }
            out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            out
        });
        chunks.push(stored);
    }
    assert_eq!(chunks[0], chunks[1]);
}

/// A [`MemoryStore`] with hooks on writes: every write of the key `refuse` fails, each write
/// takes `delay` first, finished chunk writes are counted in `counts`, and chunk writes are
/// logged in `log` as they start.
#[derive(Debug, Default)]
struct FailingWrites {
    inner: MemoryStore,
    refuse: String,
    delay: std::time::Duration,
    counts: Option<Arc<InFlight>>,
    log: Option<Arc<std::sync::Mutex<Vec<Seen>>>>,
}

#[async_trait]
impl ReadableStore for FailingWrites {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        self.inner.get_partial_values(key_ranges).await
    }
}

#[async_trait]
impl WritableStore for FailingWrites {
    async fn set(&self, key: &StoreKey, value: Bytes) -> zarr_store::Result<()> {
        if key.as_str() == self.refuse {
            return Err(zarr_store::Error::ReadOnly {
                store: "a test store".into(),
                operation: "set",
            });
        }
        if let Some(log) = &self.log
            && !key.as_str().ends_with("zarr.json")
        {
            log.lock().unwrap().push(Seen::Set(key.as_str().to_owned()));
        }
        std::thread::sleep(self.delay);
        self.inner.set(key, value).await?;
        if let Some(counts) = &self.counts
            && !key.as_str().ends_with("zarr.json")
        {
            counts.stored.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    async fn erase(&self, key: &StoreKey) -> zarr_store::Result<()> {
        self.inner.erase(key).await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> zarr_store::Result<()> {
        self.inner.erase_prefix(prefix).await
    }
}

/// Writes of whole and partial chunks, and of chunks that become all fill value (erased),
/// store the same bytes on either schedule.
#[test]
fn both_schedules_write_the_same_chunks() {
    let all = values();
    let write = |rt: tokio::runtime::Runtime| {
        let store = Arc::new(MemoryStore::new());
        rt.block_on(async {
            for (path, builder) in [
                (
                    "/chunked",
                    ArrayBuilder::new(SHAPE.to_vec(), DataType::UInt16, vec![8, 16, 8]),
                ),
                (
                    "/sharded",
                    ArrayBuilder::new(SHAPE.to_vec(), DataType::UInt16, vec![16, 16, 16])
                        .sharding(vec![8, 8, 8]),
                ),
            ] {
                let array = builder
                    .fill_value(7u16.into())
                    .zstd(1)
                    .create(Arc::clone(&store), path)
                    .await
                    .unwrap();
                array.write(array.full_region(), &all).await.unwrap();
                // Partial chunks, then a block of fill values that empties whole chunks.
                let region = [3..29, 5..40, 1..50];
                let ones = vec![1u16; 26 * 35 * 49];
                array.write(region, &ones).await.unwrap();
                let region = [8..24, 16..48, 8..56];
                array
                    .write(region, &vec![7u16; 16 * 32 * 48])
                    .await
                    .unwrap();
            }
        });
        store
    };
    let (a, b) = (write(current_thread()), write(multi_thread()));
    current_thread().block_on(async {
        let keys = a.list().await.unwrap();
        assert_eq!(keys, b.list().await.unwrap());
        assert!(keys.len() > 10);
        for key in keys {
            assert_eq!(
                a.get(&key).await.unwrap(),
                b.get(&key).await.unwrap(),
                "{key}"
            );
        }
        // The erased chunk is gone.
        assert!(!a.exists(&StoreKey::new("chunked/c/1/1/1")).await.unwrap());
    });
}

/// A store error while the write pipeline is storing fails the write with that error, after
/// the encodes still running have finished; the other chunks are written.
#[test]
fn a_failed_chunk_write_fails_a_pipelined_write() {
    let refuse = "chunked/c/2/1/3";
    for rt in [current_thread(), multi_thread()] {
        let store = Arc::new(FailingWrites {
            refuse: refuse.into(),
            ..FailingWrites::default()
        });
        rt.block_on(async {
            let array = ArrayBuilder::new(SHAPE.to_vec(), DataType::UInt16, vec![8, 16, 8])
                .zstd(1)
                .create(Arc::clone(&store), "/chunked")
                .await
                .unwrap();
            let error = array
                .write(array.full_region(), &values())
                .await
                .unwrap_err();
            assert!(
                matches!(error, Error::Store(zarr_store::Error::ReadOnly { .. })),
                "{error:?}"
            );
            assert!(!store.exists(&StoreKey::new(refuse)).await.unwrap());
            assert!(
                store
                    .exists(&StoreKey::new("chunked/c/0/0/0"))
                    .await
                    .unwrap()
            );
        });
    }
}

/// Counts encodes (a pass-through codec) against a store's finished writes, and records the
/// most chunks encoded but not yet stored at once.
#[derive(Debug, Default)]
struct InFlight {
    encoded: AtomicUsize,
    stored: AtomicUsize,
    most: AtomicUsize,
}

/// A pass-through codec whose encode counts into `counts` (the most chunks encoded and not
/// yet stored), logs each encode (by the value the chunk holds: each shard of the order test
/// holds one), or panics.
#[derive(Debug)]
enum TestEncode {
    Count(Arc<InFlight>),
    Log(Arc<std::sync::Mutex<Vec<Seen>>>),
    Panic,
    /// Takes 4 ms per unit of the chunk's first value to encode.
    Slow,
}

impl zarr_codecs::BytesToBytesCodec for TestEncode {
    fn to_metadata(&self) -> zarr_core::ExtensionObject {
        zarr_core::ExtensionObject::new(match self {
            Self::Count(_) => "test.count_encodes",
            Self::Log(_) => "test.log_encodes",
            Self::Panic => "test.panicking_encode",
            Self::Slow => "test.slow_encode",
        })
    }
    fn encode(&self, decoded: Bytes) -> zarr_codecs::Result<Bytes> {
        let counts = match self {
            Self::Count(counts) => counts,
            Self::Log(log) => {
                let value = u16::from_le_bytes([decoded[0], decoded[1]]);
                log.lock().unwrap().push(Seen::Encode(value - 1));
                return Ok(decoded);
            }
            Self::Panic => panic!("the test codec panics"),
            Self::Slow => {
                let value = u16::from_le_bytes([decoded[0], decoded[1]]);
                std::thread::sleep(std::time::Duration::from_millis(4 * u64::from(value)));
                return Ok(decoded);
            }
        };
        let encoded = counts.encoded.fetch_add(1, Ordering::SeqCst) + 1;
        // Stores finishing meanwhile can make this stale, never too high.
        let waiting = encoded.saturating_sub(counts.stored.load(Ordering::SeqCst));
        counts.most.fetch_max(waiting, Ordering::SeqCst);
        Ok(decoded)
    }
    fn decode(
        &self,
        encoded: Bytes,
        _expected: zarr_codecs::ExpectedSize,
    ) -> zarr_codecs::Result<Bytes> {
        Ok(encoded)
    }
}

/// The codec list `bytes` (little-endian), then the codec named `name`.
fn bytes_then(name: &str) -> Vec<zarr_core::ExtensionObject> {
    vec![
        zarr_core::ExtensionObject::with_configuration(
            "bytes",
            serde_json::json!({"endian": "little"})
                .as_object()
                .unwrap()
                .clone(),
        ),
        zarr_core::ExtensionObject::new(name),
    ]
}

/// A write of many whole chunks to a slow store encodes ahead of the store by at most its
/// window (`max(io_concurrency, 4 x rayon threads)` chunks), not by the whole write, and
/// stores every chunk.
#[test]
fn a_write_encodes_at_most_its_window_ahead_of_a_slow_store() {
    let counts = Arc::new(InFlight::default());
    let mut registry = zarr_array::default_registry();
    let counter = Arc::clone(&counts);
    registry.register("test.count_encodes", move |_, _, _| {
        Ok(zarr_codecs::Codec::BytesToBytes(Arc::new(
            TestEncode::Count(Arc::clone(&counter)),
        )))
    });
    let io = 2;
    let options = ArrayOptions::default()
        .with_registry(Arc::new(registry))
        .with_io_concurrency(io);
    let store = Arc::new(FailingWrites {
        delay: std::time::Duration::from_millis(1),
        counts: Some(Arc::clone(&counts)),
        ..FailingWrites::default()
    });
    let codecs = bytes_then("test.count_encodes");
    let shape = [32u64, 32, 64];
    let n: usize = shape.iter().product::<u64>() as usize;
    let values: Vec<u16> = (0..n).map(|i| (i % 1000) as u16 + 1).collect();
    multi_thread().block_on(async {
        let array = ArrayBuilder::new(shape.to_vec(), DataType::UInt16, vec![4, 4, 64])
            .codecs(codecs)
            .options(options)
            .create(Arc::clone(&store), "/slow")
            .await
            .unwrap();
        array.write(array.full_region(), &values).await.unwrap();
        let back: Vec<u16> = array.read(array.full_region()).await.unwrap();
        assert_eq!(back, values);
    });
    let chunks = 8 * 8;
    assert_eq!(counts.encoded.load(Ordering::SeqCst), chunks);
    assert_eq!(counts.stored.load(Ordering::SeqCst), chunks);
    let window = io.max(4 * rayon::current_num_threads());
    let most = counts.most.load(Ordering::SeqCst);
    assert!(
        most <= window,
        "{most} chunks were encoded and not yet stored, more than the window of {window}"
    );
}

/// A panic in an encode reaches the writer (as it would without the pipeline) instead of
/// leaving the write waiting for a result that never comes.
#[test]
fn a_panicking_encode_panics_the_write_and_does_not_hang() {
    // Plain chunks (one merge each), and whole shards whose 64 KiB inner chunks are encoded
    // as jobs of their own.
    let inner = serde_json::json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": [128, 256],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "test.panicking_encode"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_location": "end"
    }});
    let sharded = vec![zarr_core::ExtensionObject::from_json(&inner, "codecs[0]").unwrap()];
    for (shape, chunks, codecs) in [
        ([64u64, 64], [8u64, 8], bytes_then("test.panicking_encode")),
        ([256, 1024], [256, 512], sharded),
    ] {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut registry = zarr_array::default_registry();
            registry.register("test.panicking_encode", |_, _, _| {
                Ok(zarr_codecs::Codec::BytesToBytes(Arc::new(
                    TestEncode::Panic,
                )))
            });
            let rt = multi_thread();
            let array = rt
                .block_on(
                    ArrayBuilder::new(shape.to_vec(), DataType::UInt16, chunks.to_vec())
                        .codecs(codecs)
                        .options(ArrayOptions::default().with_registry(Arc::new(registry)))
                        .create(Arc::new(MemoryStore::new()), "/p"),
                )
                .unwrap();
            let values = vec![1u16; (shape[0] * shape[1]) as usize];
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rt.block_on(array.write(array.full_region(), &values))
            }));
            let _ = done.send(outcome.is_err());
        });
        let panicked = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the write finished");
        assert!(
            panicked,
            "{chunks:?}: the encode's panic reached the writer"
        );
    }
}

/// A deterministic stream of numbers for the string model test.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A non-empty range inside `0..n`.
    fn range(&mut self, n: u64) -> std::ops::Range<u64> {
        let a = self.next() % n;
        let b = self.next() % n;
        a.min(b)..a.max(b) + 1
    }
}

/// Random 2-D region writes and reads of `string` arrays (chunked, sharded, and our ZEP0007
/// layout read in ranges) agree with a model, on both schedules: whole, partial and edge
/// chunks, in every order.
#[test]
fn string_regions_agree_with_a_model() {
    let shape = [23u64, 17];
    let arrow = zarr_core::ExtensionObject::from_json(
        &serde_json::json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}}),
        "codecs[0]",
    )
    .unwrap();
    let builders = || {
        [
            ArrayBuilder::new(shape.to_vec(), DataType::String, vec![5, 4]).zstd(1),
            ArrayBuilder::new(shape.to_vec(), DataType::String, vec![10, 8]).sharding(vec![5, 4]),
            ArrayBuilder::new(shape.to_vec(), DataType::String, vec![6, 5])
                .array_to_bytes(arrow.clone()),
        ]
    };
    for (seed, rt) in [(1u64, current_thread()), (2, multi_thread())] {
        for builder in builders() {
            let mut random = XorShift(0x9e37_79b9 + seed);
            let store = Arc::new(MemoryStore::new());
            let mut model = vec![String::from("·"); (shape[0] * shape[1]) as usize];
            rt.block_on(async {
                let array = builder
                    .fill_value("·".into())
                    .create(Arc::clone(&store), "/s")
                    .await
                    .unwrap();
                for round in 0..12 {
                    let region = [random.range(shape[0]), random.range(shape[1])];
                    let mut strings = Vec::new();
                    for i in region[0].clone() {
                        for j in region[1].clone() {
                            let s = "ab🦀é".repeat((random.next() % 4) as usize)
                                + &format!("{round}.{i}.{j}");
                            model[(i * shape[1] + j) as usize] = s.clone();
                            strings.push(s);
                        }
                    }
                    let values = zarr_vlen::VlenStrings::<i32>::from_strs(&strings).unwrap();
                    array.write_strings(region, &values).await.unwrap();
                    let read = [random.range(shape[0]), random.range(shape[1])];
                    let got: Vec<String> =
                        (&array.read_strings::<i64>(read.clone()).await.unwrap()).into();
                    let expected: Vec<String> = read[0]
                        .clone()
                        .flat_map(|i| read[1].clone().map(move |j| (i * shape[1] + j) as usize))
                        .map(|k| model[k].clone())
                        .collect();
                    assert_eq!(got, expected, "round {round}, read {read:?}");
                }
                let all: Vec<String> = (&array
                    .read_strings::<i32>(array.full_region())
                    .await
                    .unwrap())
                    .into();
                assert_eq!(all, model);
            });
        }
    }
}

/// The pipelines step out of the runtime with `block_in_place`; reads and writes driven from
/// places where that needs care still work: a blocking-pool thread running `Handle::block_on`,
/// and a plain thread running another executor inside the runtime's context.
#[test]
fn pipelined_reads_and_writes_work_from_blocking_threads_and_foreign_executors() {
    let (store, all) = stores();
    let rt = multi_thread();
    let region = [0..40, 0..48, 0..56];
    let expected_all = expected(&all, &region);
    let array = rt
        .block_on(Array::open(Arc::clone(&store), "/chunked"))
        .unwrap();
    let handle = rt.handle().clone();
    let from_blocking = rt.block_on({
        let array = array.clone();
        let region = region.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let handle = tokio::runtime::Handle::current();
                let values = handle.block_on(array.read::<u16>(region.clone()))?;
                handle.block_on(array.write(region.clone(), &values))?;
                handle.block_on(array.read::<u16>(region))
            })
            .await
            .unwrap()
        }
    });
    assert_eq!(from_blocking.unwrap(), expected_all);
    let _entered = handle.enter();
    block_on_this_thread(array.write(region.clone(), &expected_all)).unwrap();
    let foreign = block_on_this_thread(array.read::<u16>(region));
    assert_eq!(foreign.unwrap(), expected_all);
}

/// A minimal executor: poll `future` on this thread, parking between wake-ups.
fn block_on_this_thread<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let mut future = std::pin::pin!(future);
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        std::thread::park();
    }
}

/// What [`TestEncode::Log`] and [`FailingWrites`] saw, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// An inner chunk of the shard whose values are all `n + 1` was encoded.
    Encode(u16),
    /// A shard was stored, under this key.
    Set(String),
}

/// A write of many shards, whole (encoded as jobs of inner chunks) or in part (one merge
/// each), encodes a few at a time and stores each as soon as it is encoded, while the next
/// ones encode: the stores are spread over the write, not left to its end. Started all at
/// once as merges, the shards would all finish together (a thread waiting inside one
/// shard's parallel encode takes up the next shard), and every store would come after the
/// last encode. The shards read back as written; an all-fill shard is not stored, or is
/// stored as an empty shard when empty chunks are written.
#[test]
fn shards_are_stored_while_the_next_ones_encode() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut registry = zarr_array::default_registry();
    let encodes = Arc::clone(&log);
    registry.register("test.log_encodes", move |_, _, _| {
        Ok(zarr_codecs::Codec::BytesToBytes(Arc::new(TestEncode::Log(
            Arc::clone(&encodes),
        ))))
    });
    let registry = Arc::new(registry);
    // Inner chunks of 64 KiB (one per job of a whole shard), 8 x 8 of them per shard.
    let (inner, per_shard) = ([128u64, 256], 8u64);
    let sharding = zarr_core::ExtensionObject::from_json(
        &serde_json::json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "test.log_encodes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": "end"
        }}),
        "codecs[0]",
    )
    .unwrap();
    // Eight shards in a row; shard s holds s + 1, and shard 5 the fill value (0).
    let shards = 8u16;
    let shard = [inner[0] * per_shard, inner[1] * per_shard];
    let shape = [shard[0], shard[1] * u64::from(shards)];
    let value_of = |s: u16| if s == 5 { 0 } else { s + 1 };
    let values: Vec<u16> = (0..shape[0] * shape[1])
        .map(|i| value_of((i % shape[1] / shard[1]) as u16))
        .collect();
    let inner_chunks = (per_shard * per_shard) as usize;
    // How many shards may encode at once (see `encode_while_storing`): whole shards while
    // their jobs number at most 64 per rayon thread or two shards' worth, shards written in
    // part (one merge each) while they touch at most twice the rayon threads' inner chunks
    // (the first always). On two threads: two, then one.
    let wide = 2 * rayon::current_num_threads();
    let at_once = |whole: bool| {
        let most = if whole {
            (32 * wide).max(2 * inner_chunks)
        } else {
            wide
        };
        (most / inner_chunks).max(1) as u16
    };
    for write_empty in [false, true] {
        let store = Arc::new(FailingWrites {
            log: Some(Arc::clone(&log)),
            ..FailingWrites::default()
        });
        let options = ArrayOptions::default()
            .with_registry(Arc::clone(&registry))
            .with_write_empty_chunks(write_empty);
        // The whole array (whole shards, encoded as jobs of inner chunks), then rows 1.. of
        // it (every shard in part, read and merged; all its inner chunks are touched).
        let mut logs = Vec::new();
        multi_thread().block_on(async {
            let array = ArrayBuilder::new(shape.to_vec(), DataType::UInt16, shard.to_vec())
                .codecs(vec![sharding.clone()])
                .options(options)
                .create(Arc::clone(&store), "/s")
                .await
                .unwrap();
            let row = shape[1] as usize;
            for (whole, rows) in [(true, 0..shape[0]), (false, 1..shape[0])] {
                log.lock().unwrap().clear();
                let part = &values[rows.start as usize * row..];
                array.write([rows, 0..shape[1]], part).await.unwrap();
                let back: Vec<u16> = array.read(array.full_region()).await.unwrap();
                assert!(back == values, "whole: {whole}: the values read back");
                assert_eq!(
                    array.chunk_exists(&[0, 5]).await.unwrap(),
                    write_empty,
                    "whole: {whole}: the all-fill shard is stored only when empty chunks \
                     are written"
                );
                logs.push((whole, log.lock().unwrap().clone()));
            }
        });
        for (whole, seen) in logs {
            let position = |wanted: &Seen| seen.iter().position(|s| s == wanted);
            for s in (0..shards).filter(|&s| s != 5) {
                let encodes = seen.iter().filter(|e| **e == Seen::Encode(s)).count();
                assert_eq!(
                    encodes, inner_chunks,
                    "whole: {whole}: shard {s}: every inner chunk encoded once"
                );
            }
            for s in 0..shards {
                if s == 5 && !write_empty {
                    continue;
                }
                assert!(
                    position(&Seen::Set(format!("s/c/0/{s}"))).is_some(),
                    "whole: {whole}: shard {s} stored"
                );
            }
            // With k shards encoding at once, the first shards done (at most k) free their
            // places: at most 2k shards have started when the pipeline hands the first one to
            // the store, and the next one starts only after (shard 5, all fill, encodes
            // nothing). Started all at once, every shard would encode before any was stored.
            let k = at_once(whole);
            let first_set = seen.iter().position(|e| matches!(e, Seen::Set(_))).unwrap();
            let later = (2 * k..shards).find(|&l| l != 5).unwrap();
            let first = position(&Seen::Encode(later)).unwrap();
            assert!(
                first_set < first,
                "whole: {whole}: the first shard was stored at {first_set}, after shard \
                 {later} began encoding at {first}: {seen:?}"
            );
        }
    }
}

/// A pipelined write stores a chunk on its own thread while nothing else waits (no store in
/// flight, no other chunk encoded) and the chunk is small, sparing the hand-off to the
/// blocking pool; chunks that arrive faster than one thread stores them go to the pool and
/// are stored in parallel.
#[test]
fn a_write_stores_chunks_itself_only_while_the_stores_keep_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(zarr_store::FilesystemStore::new(dir.path()).unwrap());
    // Write 8 chunks of `chunk` elements through a slow codec (chunk i takes 4(i + 1) ms to
    // encode, so they finish one by one), read them back, and answer the store's counts for
    // the write.
    let slow_write = |path: &str, chunk: u64| {
        let mut registry = zarr_array::default_registry();
        registry.register("test.slow_encode", |_, _, _| {
            Ok(zarr_codecs::Codec::BytesToBytes(Arc::new(TestEncode::Slow)))
        });
        let options = ArrayOptions::default().with_registry(Arc::new(registry));
        let values: Vec<u16> = (0..8 * chunk).map(|i| (i / chunk + 1) as u16).collect();
        multi_thread().block_on(async {
            let array = ArrayBuilder::new(vec![8 * chunk], DataType::UInt16, vec![chunk])
                .codecs(bytes_then("test.slow_encode"))
                .options(options)
                .create(Arc::clone(&store), path)
                .await
                .unwrap();
            store.reset_io_stats();
            array.write(array.full_region(), &values).await.unwrap();
            let stats = store.io_stats();
            let back = array.read::<u16>(array.full_region()).await.unwrap();
            assert_eq!(back, values);
            stats
        })
    };
    // Quick stores of small values: the pipeline's thread stores the chunks.
    let stats = slow_write("/small_values", 16);
    assert!(
        stats.inline_ops >= 1,
        "no chunk was stored inline: {stats:?}"
    );
    // Values of more than 1 MiB go to the pool, so as not to hold the pipeline's thread up.
    let stats = slow_write("/large_values", 1 << 20);
    assert_eq!(
        stats.inline_ops, 0,
        "a large value was stored inline: {stats:?}"
    );

    // Quick encodes and slow stores (an `fsync` each): the chunks queue up and most go to the
    // pool, several at once. The `fsync`s must reach a disk, so the directory is in the build's
    // target directory, not in a `/tmp` that may be a tmpfs (where an `fsync` costs nothing).
    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let durable = zarr_store::FilesystemOptions::default().with_durable(true);
    let store = Arc::new(
        zarr_store::FilesystemStore::with_options(disk.path().join("d"), durable).unwrap(),
    );
    let values: Vec<u16> = (0..64 * 1024).map(|i| (i % 1000) as u16 + 1).collect();
    let stats = multi_thread().block_on(async {
        let array = ArrayBuilder::new(vec![64 * 1024], DataType::UInt16, vec![1024])
            .create(Arc::clone(&store), "/slow_stores")
            .await
            .unwrap();
        store.reset_io_stats();
        array.write(array.full_region(), &values).await.unwrap();
        let stats = store.io_stats();
        assert_eq!(
            array.read::<u16>(array.full_region()).await.unwrap(),
            values
        );
        stats
    });
    assert!(
        stats.peak_blocking_ops >= 2 && stats.inline_ops < 64,
        "the stores did not run in parallel: {stats:?}"
    );
}

/// An append whose write fails clears what it wrote beyond the stored shape, so a later
/// `resize` that grows the array shows fill values there, not the failed append's values;
/// `discard_outside` does the same after a failed write through a `with_shape` handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_append_leaves_no_values_beyond_the_shape() {
    let store = Arc::new(FailingWrites {
        refuse: "log/c/1".into(),
        ..FailingWrites::default()
    });
    let mut log = ArrayBuilder::new(vec![2], DataType::UInt32, vec![4])
        .create(Arc::clone(&store), "/log")
        .await
        .unwrap();
    log.write(0..2, &[1u32, 2]).await.unwrap();
    // Chunk 0 takes 3 and 4 past the stored edge; chunk 1 (5) is refused.
    assert!(log.append(0, &[3u32, 4, 5]).await.is_err());
    assert_eq!(log.shape(), [2]);
    log.resize(vec![8]).await.unwrap();
    assert_eq!(log.read::<u32>(..).await.unwrap(), [1, 2, 0, 0, 0, 0, 0, 0]);

    let memory = Arc::new(MemoryStore::new());
    let mut log = ArrayBuilder::new(vec![2], DataType::UInt32, vec![4])
        .create(Arc::clone(&memory), "/log")
        .await
        .unwrap();
    log.write(0..2, &[1u32, 2]).await.unwrap();
    let grown = log.with_shape(vec![5]).unwrap();
    grown.write(2..5, &[3u32, 4, 5]).await.unwrap();
    log.discard_outside(&grown).await.unwrap();
    assert!(
        memory
            .get(&StoreKey::new("log/c/1"))
            .await
            .unwrap()
            .is_none(),
        "the chunk wholly outside is erased"
    );
    log.resize(vec![8]).await.unwrap();
    assert_eq!(log.read::<u32>(..).await.unwrap(), [1, 2, 0, 0, 0, 0, 0, 0]);
    // A handle to another array is refused.
    let other = ArrayBuilder::new(vec![2], DataType::UInt32, vec![4])
        .create(Arc::clone(&memory), "/other")
        .await
        .unwrap();
    assert!(matches!(
        log.discard_outside(&other).await,
        Err(Error::Unsupported { .. })
    ));
}

/// A memory store whose first `get` of `key` once armed reads the value, then signals
/// `reading` and waits for `release`: a write reading that chunk to merge into it is held
/// between its read and its store.
#[derive(Debug)]
struct HeldRead {
    inner: MemoryStore,
    key: String,
    armed: std::sync::atomic::AtomicBool,
    reading: tokio::sync::Semaphore,
    release: tokio::sync::Semaphore,
}

impl HeldRead {
    fn new(key: &str) -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryStore::new(),
            key: key.to_owned(),
            armed: false.into(),
            reading: tokio::sync::Semaphore::new(0),
            release: tokio::sync::Semaphore::new(0),
        })
    }
}

#[async_trait]
impl ReadableStore for HeldRead {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        let value = self.inner.get(key).await;
        if key.as_str() == self.key && self.armed.swap(false, Ordering::SeqCst) {
            self.reading.add_permits(1);
            self.release.acquire().await.unwrap().forget();
        }
        value
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        self.inner.get_partial_values(key_ranges).await
    }
}

#[async_trait]
impl WritableStore for HeldRead {
    async fn set(&self, key: &StoreKey, value: Bytes) -> zarr_store::Result<()> {
        self.inner.set(key, value).await
    }

    async fn erase(&self, key: &StoreKey) -> zarr_store::Result<()> {
        self.inner.erase(key).await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> zarr_store::Result<()> {
        self.inner.erase_prefix(prefix).await
    }
}

/// Let other tasks run for a while (on either runtime), or until `done` says so.
async fn settle(done: impl Fn() -> bool) {
    for _ in 0..400 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
        std::thread::sleep(std::time::Duration::from_micros(250));
    }
}

/// A chunk stored whole (by a region write on either schedule, `write_chunk` or
/// `erase_chunk`) while another write of part of it is between reading it and storing the
/// merge is not lost: the part's write does not store back the values it read before. The
/// outcome is one of the two orders: the part then the whole chunk, or the whole chunk then
/// the part.
#[test]
fn a_whole_chunk_stored_during_a_write_of_part_of_it_is_kept() {
    let mut lost = Vec::new();
    for layout in ["plain", "sharded"] {
        for how in [
            "region",
            "region on one thread",
            "region with a partial chunk",
            "write_chunk",
            "erase_chunk",
            "shard writer",
        ] {
            if how == "shard writer" && layout == "plain" {
                continue;
            }
            let rt = if how == "region on one thread" {
                current_thread()
            } else {
                multi_thread()
            };
            let store = HeldRead::new("a/c/0/0");
            let builder = ArrayBuilder::new(vec![8, 8], DataType::UInt16, vec![4, 4]);
            let builder = if layout == "sharded" {
                builder.sharding(vec![2, 2])
            } else {
                builder
            };
            let array = rt
                .block_on(builder.create(Arc::clone(&store), "/a"))
                .unwrap();
            rt.block_on(array.write(.., &[1u16; 64])).unwrap();
            store.armed.store(true, Ordering::SeqCst);
            let part = {
                let array = array.clone();
                rt.spawn(async move { array.write([0..2, 0..2], &[7u16; 4]).await })
            };
            rt.block_on(store.reading.acquire()).unwrap().forget();
            let whole = {
                let array = array.clone();
                let how = how.to_owned();
                rt.spawn(async move {
                    match how.as_str() {
                        "write_chunk" => {
                            let bytes: Vec<u8> =
                                [9u16; 16].iter().flat_map(|v| v.to_ne_bytes()).collect();
                            array.write_chunk(&[0, 0], ArrayBytes::fixed(bytes)).await
                        }
                        "erase_chunk" => array.erase_chunk(&[0, 0]).await,
                        // The second write completes shard (0, 0), which it then stores.
                        "shard writer" => {
                            let mut writer = array.shard_writer();
                            writer.write([0..4, 0..2], &[9u16; 8]).await?;
                            writer.write([0..4, 2..4], &[9u16; 8]).await?;
                            writer.finish().await
                        }
                        // Chunk (0, 0) whole, (0, 1) in part: one batch locks both.
                        "region with a partial chunk" => {
                            array.write([0..4, 0..6], &[9u16; 24]).await
                        }
                        // Chunks (0, 0) and (0, 1), so that the write takes the pipeline on
                        // the multi-threaded runtime.
                        _ => array.write([0..4, 0..8], &[9u16; 32]).await,
                    }
                })
            };
            // Without the part's lock, the whole chunk would be stored by now.
            rt.block_on(settle(|| whole.is_finished()));
            store.release.add_permits(1);
            rt.block_on(part).unwrap().unwrap();
            rt.block_on(whole).unwrap().unwrap();
            let got = rt.block_on(array.read::<u16>([0..4, 0..4])).unwrap();
            let new = if how == "erase_chunk" { 0 } else { 9 };
            let kept = got.iter().enumerate().all(|(i, &v)| {
                let in_part = i / 4 < 2 && i % 4 < 2;
                v == new || (in_part && v == 7)
            });
            if !kept {
                lost.push(format!("{layout}, {how}: {got:?}"));
            }
        }
    }
    assert!(lost.is_empty(), "whole chunks lost: {lost:#?}");
}

/// A resize that rebuilds an edge chunk it cuts through holds the chunk from its read to
/// its store: a write of part of the chunk meanwhile is kept, not overwritten by the
/// rebuilt chunk.
#[test]
fn a_write_during_a_resize_rebuilding_its_chunk_is_kept() {
    let mut lost = Vec::new();
    for layout in ["plain", "sharded"] {
        let rt = multi_thread();
        let store = HeldRead::new("r/c/0/1");
        let builder = ArrayBuilder::new(vec![8, 8], DataType::UInt16, vec![4, 4]);
        let builder = if layout == "sharded" {
            builder.sharding(vec![2, 2])
        } else {
            builder
        };
        let mut array = rt
            .block_on(builder.create(Arc::clone(&store), "/r"))
            .unwrap();
        rt.block_on(array.write(.., &[1u16; 64])).unwrap();
        let writer = array.clone();
        store.armed.store(true, Ordering::SeqCst);
        // Cuts chunk (0, 1) at column 6, and erases the chunks of rows 4.. (row 6 on).
        let resize = rt.spawn(async move {
            array.resize(vec![8, 6]).await?;
            Ok::<_, Error>(array)
        });
        rt.block_on(store.reading.acquire()).unwrap().forget();
        let part = rt.spawn(async move { writer.write([0..1, 4..5], &[7u16]).await });
        rt.block_on(settle(|| part.is_finished()));
        store.release.add_permits(1);
        let array = rt.block_on(resize).unwrap().unwrap();
        rt.block_on(part).unwrap().unwrap();
        let got = rt.block_on(array.read::<u16>([0..1, 4..6])).unwrap();
        if got != [7, 1] {
            lost.push(format!("{layout}: {got:?}"));
        }
    }
    assert!(lost.is_empty(), "writes lost: {lost:?}");
}

/// Removing or replacing a node waits for an append in flight below it, and the append
/// after it finds the node gone: no chunk or metadata of the old array is left behind or
/// written over the new node.
#[test]
fn a_removal_or_overwrite_waits_for_an_append_in_flight() {
    let mut left = Vec::new();
    for replace in ["remove", "overwrite"] {
        let rt = multi_thread();
        let store = HeldRead::new("g/a/c/1");
        let mut root = rt
            .block_on(zarr_array::Group::create(Arc::clone(&store), "/"))
            .unwrap();
        let builder = ArrayBuilder::new(vec![3], DataType::UInt8, vec![2]);
        let mut array = rt
            .block_on(builder.create(Arc::clone(&store), "/g/a"))
            .unwrap();
        rt.block_on(array.write(.., &[1u8, 2, 3])).unwrap();
        let mut stale = array.clone();
        store.armed.store(true, Ordering::SeqCst);
        // Merges into chunk 1, held between its read and its store.
        let append = rt.spawn(async move { array.append(0, &[4u8, 5]).await });
        let held = std::time::Duration::from_secs(60);
        rt.block_on(async { tokio::time::timeout(held, store.reading.acquire()).await })
            .expect("the append reads the chunk it merges into")
            .unwrap()
            .forget();
        let replacing = {
            let store = Arc::clone(&store);
            rt.spawn(async move {
                match replace {
                    "remove" => root.remove("g").await,
                    _ => ArrayBuilder::new(vec![2], DataType::Int32, vec![2])
                        .overwrite(true)
                        .create(store, "/g/a")
                        .await
                        .map(drop),
                }
            })
        };
        rt.block_on(settle(|| replacing.is_finished()));
        if replacing.is_finished() {
            left.push(format!("{replace}: did not wait for the append"));
        }
        store.release.add_permits(1);
        rt.block_on(append).unwrap().unwrap();
        rt.block_on(replacing).unwrap().unwrap();
        let keys = rt.block_on(store.inner.list()).unwrap();
        let keys: Vec<&str> = keys.iter().map(StoreKey::as_str).collect();
        let expected: &[&str] = match replace {
            "remove" => &["zarr.json"],
            _ => &["g/a/zarr.json", "g/zarr.json", "zarr.json"],
        };
        let replaced = replace == "remove"
            || rt
                .block_on(Array::open(Arc::clone(&store), "/g/a"))
                .is_ok_and(|a| a.data_type() == &DataType::Int32);
        if keys != expected || !replaced {
            left.push(format!("{replace}: {keys:?}"));
        }
        // A change through a handle from before finds the node gone or replaced.
        if rt.block_on(stale.append(0, &[6u8])).is_ok() {
            left.push(format!("{replace}: a stale handle appended"));
        }
    }
    assert!(left.is_empty(), "left behind: {left:?}");
}
