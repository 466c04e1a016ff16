//! An in-memory store.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use bytes::Bytes;

use crate::fallback::{group_partial_writes, list_dir_from_keys, patch_value};
use crate::{
    ByteRange, ListDir, ListableStore, ReadableStore, Result, StoreKey, StorePrefix, WritableStore,
};

/// A store holding its values in memory, for tests, caches and scratch arrays.
///
/// Many readers and writers may use it at once (it is a sorted map behind a read-write lock
/// that is never held across an `await`). Values are [`Bytes`]: `set` keeps the caller's
/// buffer without copying, and `get` and range reads hand out zero-copy slices of it.
/// Cloning the store is cheap and the clones share their contents.
///
/// ```
/// use bytes::Bytes;
/// use zarr_store::{ByteRange, MemoryStore, ReadableStore, StoreKey, WritableStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = MemoryStore::new();
/// let key = StoreKey::new("a/b");
/// store.set(&key, Bytes::from_static(b"hello world")).await?;
/// let parts = store
///     .get_partial_values(&[(key.clone(), ByteRange::suffix(5)), (key, ByteRange::new(0, 5))])
///     .await?;
/// assert_eq!(parts[0].as_deref(), Some(&b"world"[..]));
/// assert_eq!(parts[1].as_deref(), Some(&b"hello"[..]));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    map: Arc<RwLock<BTreeMap<StoreKey, Bytes>>>,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many values the store holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the store holds no values.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    // A panic while the lock is held cannot leave the map half-updated (every update is a
    // single map operation), so a poisoned lock is still safe to use.
    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<StoreKey, Bytes>> {
        self.map.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<StoreKey, Bytes>> {
        self.map.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn keys_below(map: &BTreeMap<StoreKey, Bytes>, prefix: &StorePrefix) -> Vec<StoreKey> {
        map.range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(key, _)| key.has_prefix(prefix))
            .map(|(key, _)| key.clone())
            .collect()
    }
}

#[async_trait]
impl ReadableStore for MemoryStore {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        Ok(self.read().get(key).cloned())
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        Ok(self.read().get(key).map(|value| value.len() as u64))
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        let map = self.read();
        key_ranges
            .iter()
            .map(|(key, range)| match map.get(key) {
                None => Ok(None),
                Some(value) => range.slice(value).map(Some).map_err(|e| e.with_key(key)),
            })
            .collect()
    }
}

#[async_trait]
impl WritableStore for MemoryStore {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        self.write().insert(key.clone(), value);
        Ok(())
    }

    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        let groups = group_partial_writes(key_start_values)?;
        let mut map = self.write();
        // Build every new value before replacing any, so an error changes nothing.
        let new_values = groups
            .iter()
            .map(|group| patch_value(map.get(group.key).map(|v| &v[..]), group))
            .collect::<Result<Vec<_>>>()?;
        for (group, value) in groups.iter().zip(new_values) {
            map.insert(group.key.clone(), value);
        }
        Ok(())
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        self.write().remove(key);
        Ok(())
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        let mut map = self.write();
        for key in keys {
            map.remove(key);
        }
        Ok(())
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        let mut map = self.write();
        if prefix.is_root() {
            map.clear();
        } else {
            for key in Self::keys_below(&map, prefix) {
                map.remove(&key);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ListableStore for MemoryStore {
    async fn list(&self) -> Result<Vec<StoreKey>> {
        Ok(self.read().keys().cloned().collect())
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        Ok(Self::keys_below(&self.read(), prefix))
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let keys = Self::keys_below(&self.read(), prefix);
        Ok(list_dir_from_keys(prefix, keys))
    }
}
