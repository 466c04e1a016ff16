//! [`CachingStore`]: a store wrapper that keeps recently read values in memory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::Semaphore;

use crate::{
    ByteRange, ListDir, ListableStore, ReadableStore, Result, StoreKey, StorePrefix, WritableStore,
};

/// What a cached read answered: the bytes, or that the key has no value.
#[derive(Clone, Debug)]
enum Cached {
    Value(Bytes),
    Missing,
}

/// What an entry counts against the capacity: its bytes, and a little for the entry itself
/// (so that many missing keys cannot grow the cache without bound).
const ENTRY_OVERHEAD: u64 = 64;

#[derive(Debug)]
struct Entry {
    cached: Cached,
    /// The entry's place in the recency order (`CacheState::order`).
    tick: u64,
    cost: u64,
}

#[derive(Debug, Default)]
struct CacheState {
    /// Per key, the whole value (`ByteRange::full`, which is `from_offset(0)`) and any
    /// ranges read on their own.
    entries: HashMap<StoreKey, HashMap<ByteRange, Entry>>,
    /// Least recently used first.
    order: BTreeMap<u64, (StoreKey, ByteRange)>,
    tick: u64,
    bytes: u64,
    /// Bumped by every write and erase through the wrapper (before and after it reaches the
    /// store below): a read that began before a write does not cache what it read.
    epoch: u64,
    hits: u64,
    misses: u64,
    /// Reads on their way to the store below, by value or range: a read of the same one
    /// waits for it (the semaphore is closed when it ends) rather than asking again.
    flights: HashMap<(StoreKey, ByteRange), Arc<Semaphore>>,
}

impl CacheState {
    fn touch(&mut self, key: &StoreKey, range: ByteRange) -> Option<Cached> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(key)?.get_mut(&range)?;
        self.order.remove(&entry.tick);
        entry.tick = tick;
        self.order.insert(tick, (key.clone(), range));
        Some(entry.cached.clone())
    }

    /// The answer for `range` of `key` from the cache: a cached read of the same range, or
    /// a slice of the cached whole value.
    fn lookup(&mut self, key: &StoreKey, range: ByteRange) -> Option<Result<Option<Bytes>>> {
        let whole = ByteRange::from_offset(0);
        let answer = match self.touch(key, whole) {
            Some(Cached::Missing) => Some(Ok(None)),
            Some(Cached::Value(value)) => {
                Some(range.slice(&value).map(Some).map_err(|e| e.with_key(key)))
            }
            None if range != whole => self.touch(key, range).map(|cached| match cached {
                Cached::Missing => Ok(None),
                Cached::Value(value) => Ok(Some(value)),
            }),
            None => None,
        };
        if answer.is_some() {
            self.hits += 1;
        }
        answer
    }

    /// What to do about `range` of `key`, which the cache does not hold: `Plan::Wait` for the
    /// read of it on its way when there is one (and `may_wait`), else `Plan::Fetch`; a fetch
    /// that no other read of it is on its way for leads a flight (recorded in `lead`).
    fn plan(
        &mut self,
        key: &StoreKey,
        range: ByteRange,
        may_wait: bool,
        lead: &mut Lead<'_>,
    ) -> Plan {
        let flight = (key.clone(), range);
        match self.flights.get(&flight) {
            Some(waiting) if may_wait && !lead.keys.contains(&flight) => {
                Plan::Wait(Arc::clone(waiting))
            }
            Some(_) => {
                self.misses += 1;
                Plan::Fetch
            }
            None => {
                self.misses += 1;
                self.flights
                    .insert(flight.clone(), Arc::new(Semaphore::new(0)));
                lead.keys.insert(flight);
                Plan::Fetch
            }
        }
    }

    fn insert(&mut self, capacity: u64, key: &StoreKey, range: ByteRange, cached: Cached) {
        let cost = ENTRY_OVERHEAD
            + match &cached {
                Cached::Value(value) => value.len() as u64,
                Cached::Missing => 0,
            };
        if cost > capacity {
            return;
        }
        self.remove(key, range);
        self.tick += 1;
        let tick = self.tick;
        self.order.insert(tick, (key.clone(), range));
        self.entries
            .entry(key.clone())
            .or_default()
            .insert(range, Entry { cached, tick, cost });
        self.bytes += cost;
        while self.bytes > capacity {
            let Some((_, (old_key, old_range))) = self.order.pop_first() else {
                break;
            };
            self.remove(&old_key, old_range);
        }
    }

    fn remove(&mut self, key: &StoreKey, range: ByteRange) {
        let Some(ranges) = self.entries.get_mut(key) else {
            return;
        };
        if let Some(entry) = ranges.remove(&range) {
            self.order.remove(&entry.tick);
            self.bytes -= entry.cost;
        }
        if ranges.is_empty() {
            self.entries.remove(key);
        }
    }

    fn forget_key(&mut self, key: &StoreKey) {
        if let Some(ranges) = self.entries.remove(key) {
            for entry in ranges.into_values() {
                self.order.remove(&entry.tick);
                self.bytes -= entry.cost;
            }
        }
    }
}

/// What a read does about one value or range the cache does not hold.
enum Plan {
    /// Read it from the store below.
    Fetch,
    /// Wait for the read of it on its way, then look again.
    Wait(Arc<Semaphore>),
}

/// The flights a read leads. Dropping it (when the read ends, fails, or is dropped itself)
/// ends them and wakes the reads waiting for them, which then find the answer cached, or
/// read it themselves.
struct Lead<'a> {
    state: &'a Mutex<CacheState>,
    keys: HashSet<(StoreKey, ByteRange)>,
}

impl<'a> Lead<'a> {
    fn new(state: &'a Mutex<CacheState>) -> Self {
        Self {
            state,
            keys: HashSet::new(),
        }
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        for flight in self.keys.drain() {
            if let Some(waiting) = state.flights.remove(&flight) {
                waiting.close();
            }
        }
    }
}

/// A store wrapper that keeps the values (and byte ranges) recently read from the store
/// below in memory, up to a capacity in bytes, and answers repeated reads from there.
///
/// Worth it where a read costs a request: object storage, HTTP, or a zip archive inside
/// another store. A Zarr array read again and again (a viewer panning over an image, many
/// small reads of one shard's index) then costs the store below one read per value.
///
/// - Whole values and byte ranges are cached; a range of a value that is cached whole is
///   sliced from it without a copy. A missing key is cached as missing too, so reads of the
///   unwritten chunks of a sparse array do not ask again. Errors are not cached.
/// - Reads of a value or range already on its way from the store below wait for that read
///   rather than asking again, so many readers arriving at once cost one request. If that
///   read fails or is dropped, they read for themselves.
/// - The least recently used entries go first once the capacity is reached. A value larger
///   than the capacity is not cached. Each entry counts 64 bytes on top of its value.
/// - Writes and erases through the wrapper go to the store below and drop what the cache
///   held for their keys; `set` keeps the new value (a read after a write costs nothing).
///   Writes made by other processes, or to the store below directly, are not seen until
///   [`CachingStore::clear`] or until their entries are evicted: use the wrapper where the
///   data does not change underneath, or clear it when it may have.
/// - Listings pass through uncached.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use bytes::Bytes;
/// use zarr_store::{CachingStore, MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};
///
/// let below = RecordingStore::new(MemoryStore::new());
/// below.set(&StoreKey::new("a/c/0"), Bytes::from_static(b"chunk")).await?;
/// let store = CachingStore::new(below, 64 << 20);
/// for _ in 0..3 {
///     assert_eq!(store.get(&StoreKey::new("a/c/0")).await?.as_deref(), Some(&b"chunk"[..]));
///     assert_eq!(store.get(&StoreKey::new("a/c/1")).await?, None);
/// }
/// assert_eq!(store.inner().stats().gets, 2); // one per key
/// assert_eq!((store.hits(), store.misses()), (4, 2));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct CachingStore<S> {
    inner: S,
    capacity: u64,
    state: Mutex<CacheState>,
}

impl<S> CachingStore<S> {
    /// Cache up to `capacity_bytes` of what is read from `inner`.
    pub fn new(inner: S, capacity_bytes: u64) -> Self {
        Self {
            inner,
            capacity: capacity_bytes,
            state: Mutex::new(CacheState::default()),
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The wrapped store, consuming the wrapper (and the cache).
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The bytes the cache holds now (values, and 64 per entry).
    pub fn cached_bytes(&self) -> u64 {
        self.state().bytes
    }

    /// Reads and ranges answered from the cache so far.
    pub fn hits(&self) -> u64 {
        self.state().hits
    }

    /// Reads and ranges that went to the store below so far (a read that waited for the same
    /// read by another caller, and found its answer, is a hit).
    pub fn misses(&self) -> u64 {
        self.state().misses
    }

    /// Forget everything cached (the counts of hits and misses stay).
    pub fn clear(&self) {
        let mut state = self.state();
        state.epoch += 1;
        state.entries.clear();
        state.order.clear();
        state.bytes = 0;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cache what a read that began at `epoch` answered, unless a write came since.
    fn insert_if_current(&self, epoch: u64, key: &StoreKey, range: ByteRange, cached: Cached) {
        let mut state = self.state();
        if state.epoch == epoch {
            state.insert(self.capacity, key, range, cached);
        }
    }

    /// Mark the start or the end of a write: reads in flight do not cache their answers.
    /// Returns the new epoch.
    fn invalidate(&self, keys: &[StoreKey]) -> u64 {
        let mut state = self.state();
        state.epoch += 1;
        for key in keys {
            state.forget_key(key);
        }
        state.epoch
    }

    fn invalidate_prefix(&self, prefix: &StorePrefix) {
        let mut state = self.state();
        state.epoch += 1;
        let keys: Vec<StoreKey> = state
            .entries
            .keys()
            .filter(|key| key.has_prefix(prefix))
            .cloned()
            .collect();
        for key in keys {
            state.forget_key(&key);
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ReadableStore> ReadableStore for CachingStore<S> {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        let whole = ByteRange::from_offset(0);
        let mut may_wait = true;
        loop {
            let mut lead = Lead::new(&self.state);
            let (epoch, plan) = {
                let mut state = self.state();
                if let Some(answer) = state.lookup(key, whole) {
                    return answer;
                }
                let plan = state.plan(key, whole, may_wait, &mut lead);
                (state.epoch, plan)
            };
            if let Plan::Wait(flight) = plan {
                // Closed when the read it waits for ends; then look again, once.
                let _ = flight.acquire().await;
                may_wait = false;
                continue;
            }
            let value = self.inner.get(key).await?;
            let cached = match &value {
                Some(bytes) => Cached::Value(bytes.clone()),
                None => Cached::Missing,
            };
            self.insert_if_current(epoch, key, whole, cached);
            drop(lead);
            return Ok(value);
        }
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        {
            let mut state = self.state();
            match state.touch(key, ByteRange::from_offset(0)) {
                Some(Cached::Value(value)) => return Ok(Some(value.len() as u64)),
                Some(Cached::Missing) => return Ok(None),
                None => {}
            }
        }
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        let mut out: Vec<Option<Bytes>> = vec![None; key_ranges.len()];
        let mut pending: Vec<usize> = (0..key_ranges.len()).collect();
        let mut may_wait = true;
        loop {
            let mut lead = Lead::new(&self.state);
            let mut fetch: Vec<usize> = Vec::new();
            let mut waiting: Vec<usize> = Vec::new();
            let mut flights: Vec<Arc<Semaphore>> = Vec::new();
            let epoch = {
                let mut state = self.state();
                for &i in &pending {
                    let (key, range) = &key_ranges[i];
                    if let Some(answer) = state.lookup(key, *range) {
                        out[i] = answer?;
                        continue;
                    }
                    match state.plan(key, *range, may_wait, &mut lead) {
                        Plan::Fetch => fetch.push(i),
                        Plan::Wait(flight) => {
                            waiting.push(i);
                            flights.push(flight);
                        }
                    }
                }
                state.epoch
            };
            if !fetch.is_empty() {
                let requests: Vec<(StoreKey, ByteRange)> =
                    fetch.iter().map(|&i| key_ranges[i].clone()).collect();
                let values = self.inner.get_partial_values(&requests).await?;
                for ((key, range), (&i, value)) in requests.iter().zip(fetch.iter().zip(values)) {
                    let (range, cached) = match &value {
                        Some(bytes) => (*range, Cached::Value(bytes.clone())),
                        // No value at all: the key is missing, whatever the range.
                        None => (ByteRange::from_offset(0), Cached::Missing),
                    };
                    self.insert_if_current(epoch, key, range, cached);
                    out[i] = value;
                }
            }
            // End the flights this call led before waiting for others' (so that two calls
            // each waiting for what the other leads cannot wait forever).
            drop(lead);
            if waiting.is_empty() {
                return Ok(out);
            }
            for flight in flights {
                let _ = flight.acquire().await;
            }
            pending = waiting;
            may_wait = false;
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: WritableStore> WritableStore for CachingStore<S> {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        let epoch = self.invalidate(std::slice::from_ref(key));
        let result = self.inner.set(key, value.clone()).await;
        let mut state = self.state();
        // Keep the new value only if no other write went through meanwhile (which might
        // have reached the store below after this one).
        let alone = state.epoch == epoch;
        state.epoch += 1;
        state.forget_key(key);
        if result.is_ok() && alone {
            state.insert(
                self.capacity,
                key,
                ByteRange::from_offset(0),
                Cached::Value(value),
            );
        }
        result
    }

    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        let keys: Vec<StoreKey> = key_start_values.iter().map(|(k, _, _)| k.clone()).collect();
        self.invalidate(&keys);
        let result = self.inner.set_partial_values(key_start_values).await;
        self.invalidate(&keys);
        result
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        let keys = std::slice::from_ref(key);
        self.invalidate(keys);
        let result = self.inner.erase(key).await;
        self.invalidate(keys);
        result
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        self.invalidate(keys);
        let result = self.inner.erase_values(keys).await;
        self.invalidate(keys);
        result
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.invalidate_prefix(prefix);
        let result = self.inner.erase_prefix(prefix).await;
        self.invalidate_prefix(prefix);
        result
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ListableStore> ListableStore for CachingStore<S> {
    async fn list(&self) -> Result<Vec<StoreKey>> {
        self.inner.list().await
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        self.inner.list_prefix(prefix).await
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        self.inner.list_dir(prefix).await
    }
}
