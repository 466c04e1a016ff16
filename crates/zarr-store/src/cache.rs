//! [`CachingStore`]: a store wrapper that keeps recently read values in memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;

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
        match answer {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        answer
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

    /// Reads and ranges that went to the store below so far.
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
        let epoch = {
            let mut state = self.state();
            if let Some(answer) = state.lookup(key, whole) {
                return answer;
            }
            state.epoch
        };
        let value = self.inner.get(key).await?;
        let cached = match &value {
            Some(bytes) => Cached::Value(bytes.clone()),
            None => Cached::Missing,
        };
        self.insert_if_current(epoch, key, whole, cached);
        Ok(value)
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
        let mut missed: Vec<usize> = Vec::new();
        let epoch = {
            let mut state = self.state();
            for (i, (key, range)) in key_ranges.iter().enumerate() {
                match state.lookup(key, *range) {
                    Some(answer) => out[i] = answer?,
                    None => missed.push(i),
                }
            }
            state.epoch
        };
        if missed.is_empty() {
            return Ok(out);
        }
        let requests: Vec<(StoreKey, ByteRange)> =
            missed.iter().map(|&i| key_ranges[i].clone()).collect();
        let values = self.inner.get_partial_values(&requests).await?;
        for ((key, range), (&i, value)) in requests.iter().zip(missed.iter().zip(values)) {
            let (range, cached) = match &value {
                Some(bytes) => (*range, Cached::Value(bytes.clone())),
                // No value at all: the key is missing, whatever the range.
                None => (ByteRange::from_offset(0), Cached::Missing),
            };
            self.insert_if_current(epoch, key, range, cached);
            out[i] = value;
        }
        Ok(out)
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
