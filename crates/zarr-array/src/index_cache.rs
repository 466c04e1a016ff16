//! An opt-in cache of shard indexes for one array ([`ArrayOptions::with_shard_index_cache`]).
//!
//! Reading part of a shard costs two requests: its index, then its inner chunks. Random
//! access to a dataset nobody rewrites (a training loop reading chunks of a stored dataset,
//! say) pays for the index again on every read; on object stores that is half the requests
//! and half the latency. With the cache, a shard's index is read once and kept (least
//! recently used first out, within a byte limit), and so is the fact that a shard is missing.
//!
//! What the cache sees: writes through this array and its clones. Each write, chunk write or
//! erase, and resize empties the cache when it starts and again when it ends, and an index
//! fetched while a write ran is not kept (a write epoch is checked before inserting), so a
//! read that begins after a write completed never uses an index from before it. Writes by
//! other handles or processes are not seen: a cached index then points into a shard that
//! has been replaced, and reads return wrong values or decoding errors until
//! [`Array::clear_shard_index_cache`](crate::Array::clear_shard_index_cache) is called.
//!
//! [`ArrayOptions::with_shard_index_cache`]: crate::ArrayOptions::with_shard_index_cache

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use zarr_store::StoreKey;

use crate::index_flights::Index;

/// What an entry is counted as beyond its index entries (the key, the maps' bookkeeping).
const ENTRY_OVERHEAD: usize = 96;

/// Shard indexes kept for one array, least recently used out first.
#[derive(Debug)]
pub(crate) struct IndexCache {
    /// The most bytes held.
    limit: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Bumped by every invalidation: an index fetched across one is not kept.
    epoch: u64,
    /// Orders uses.
    clock: u64,
    bytes: usize,
    entries: HashMap<StoreKey, Entry>,
    /// Keys by last use.
    by_use: BTreeMap<u64, StoreKey>,
}

#[derive(Debug)]
struct Entry {
    index: Index,
    bytes: usize,
    used: u64,
}

impl IndexCache {
    /// A cache of at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            state: Mutex::new(State::default()),
        }
    }

    /// The index kept for `key`, if any (`Some(None)`: the shard was missing).
    pub(crate) fn get(&self, key: &StoreKey) -> Option<Index> {
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        let entry = state.entries.get_mut(key)?;
        let before = std::mem::replace(&mut entry.used, now);
        let index = entry.index.clone();
        state.by_use.remove(&before);
        state.by_use.insert(now, key.clone());
        Some(index)
    }

    /// The current write epoch: take it before fetching an index to [`insert`](Self::insert).
    pub(crate) fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Keep `index` for `key`, unless the cache was invalidated since `epoch` was taken (the
    /// index may predate a write) or the index alone exceeds the limit. Evicts the least
    /// recently used entries to make room.
    pub(crate) fn insert(&self, epoch: u64, key: &StoreKey, index: Index) {
        let bytes = index
            .as_ref()
            .map_or(0, |index| index.len().saturating_mul(16))
            .saturating_add(key.as_str().len() + ENTRY_OVERHEAD);
        if bytes > self.limit {
            return;
        }
        let mut state = self.lock();
        if state.epoch != epoch {
            return;
        }
        state.clock += 1;
        let used = state.clock;
        if let Some(old) = state.entries.remove(key) {
            state.by_use.remove(&old.used);
            state.bytes -= old.bytes;
        }
        while state.bytes + bytes > self.limit {
            let Some((_, oldest)) = state.by_use.pop_first() else {
                break;
            };
            if let Some(old) = state.entries.remove(&oldest) {
                state.bytes -= old.bytes;
            }
        }
        state.bytes += bytes;
        state.by_use.insert(used, key.clone());
        state
            .entries
            .insert(key.clone(), Entry { index, bytes, used });
    }

    /// Forget every index, and refuse those being fetched now.
    pub(crate) fn invalidate(&self) {
        let mut state = self.lock();
        state.epoch += 1;
        state.entries.clear();
        state.by_use.clear();
        state.bytes = 0;
    }

    /// The bytes held now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Empties an array's cache when made and when dropped: held by each operation that writes,
/// so that the cache holds nothing from before the write once it has ended (even if it
/// failed or was dropped half way).
pub(crate) struct WriteGuard<'a>(Option<&'a IndexCache>);

impl<'a> WriteGuard<'a> {
    pub(crate) fn new(cache: Option<&'a IndexCache>) -> Self {
        if let Some(cache) = cache {
            cache.invalidate();
        }
        Self(cache)
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        if let Some(cache) = self.0 {
            cache.invalidate();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use zarr_sharding::ShardIndex;

    fn key(i: usize) -> StoreKey {
        StoreKey::try_new(format!("a/c/{i}")).unwrap()
    }

    /// An index of `n` inner chunks: `16 n` bytes.
    fn index(n: u64) -> Index {
        Some(Arc::new(ShardIndex::new_empty(&[n]).unwrap()))
    }

    fn size(n: usize, i: usize) -> usize {
        16 * n + key(i).as_str().len() + ENTRY_OVERHEAD
    }

    #[test]
    fn keeps_the_most_recently_used_within_the_limit() {
        let cache = IndexCache::new(3 * size(100, 0));
        for i in 0..3 {
            cache.insert(cache.epoch(), &key(i), index(100));
        }
        assert_eq!(cache.bytes(), 3 * size(100, 0));
        // Use 0, so that 1 is the least recently used, then make room for a fourth.
        assert!(cache.get(&key(0)).is_some());
        cache.insert(cache.epoch(), &key(3), index(100));
        assert!(cache.get(&key(1)).is_none());
        for i in [0, 2, 3] {
            assert!(cache.get(&key(i)).is_some(), "{i}");
        }
        // Missing shards are kept too, and replacing an entry does not count it twice.
        cache.insert(cache.epoch(), &key(2), None);
        assert!(matches!(cache.get(&key(2)), Some(None)));
        assert_eq!(cache.bytes(), 2 * size(100, 0) + size(0, 2));
        // An index larger than the whole cache is not kept, and evicts nothing.
        cache.insert(cache.epoch(), &key(9), index(1_000));
        assert!(cache.get(&key(9)).is_none());
        assert!(cache.get(&key(0)).is_some());
    }

    #[test]
    fn an_index_fetched_across_an_invalidation_is_refused() {
        let cache = IndexCache::new(1 << 20);
        cache.insert(cache.epoch(), &key(0), index(4));
        let before = cache.epoch();
        {
            let _write = WriteGuard::new(Some(&cache));
            assert!(
                cache.get(&key(0)).is_none(),
                "emptied when the write starts"
            );
            cache.insert(before, &key(1), index(4));
            assert!(
                cache.get(&key(1)).is_none(),
                "fetched before the write began"
            );
            cache.insert(cache.epoch(), &key(2), index(4));
            assert!(
                cache.get(&key(2)).is_some(),
                "fetched during the write: kept"
            );
        }
        // Until the write ends, which empties the cache again.
        assert!(cache.get(&key(2)).is_none());
        assert_eq!(cache.bytes(), 0);
        WriteGuard::new(None);
    }
}
