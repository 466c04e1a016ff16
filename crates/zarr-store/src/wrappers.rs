//! Stores that wrap other stores: [`RecordingStore`] and [`PrefixStore`].

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;

use crate::{
    ByteRange, Error, ListDir, ListableStore, ReadableStore, Result, StoreKey, StorePrefix,
    WritableStore,
};

/// One call recorded by a [`RecordingStore`], with the bytes it moved.
///
/// Calls are recorded whether they succeed or fail; a failed call moved 0 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// [`ReadableStore::get`], with the size of the value read (`None` if missing).
    Get {
        /// The key read.
        key: StoreKey,
        /// Bytes returned.
        bytes: Option<u64>,
    },
    /// [`ReadableStore::size`].
    Size {
        /// The key asked about.
        key: StoreKey,
    },
    /// [`ReadableStore::get_partial_values`].
    GetPartialValues {
        /// The requested ranges, in order.
        requests: Vec<(StoreKey, ByteRange)>,
        /// Total bytes returned.
        bytes: u64,
    },
    /// [`WritableStore::set`].
    Set {
        /// The key written.
        key: StoreKey,
        /// Bytes written.
        bytes: u64,
    },
    /// [`WritableStore::set_partial_values`].
    SetPartialValues {
        /// `(key, start, length)` of each write.
        writes: Vec<(StoreKey, u64, u64)>,
        /// Total bytes written.
        bytes: u64,
    },
    /// [`WritableStore::erase`].
    Erase {
        /// The key erased.
        key: StoreKey,
    },
    /// [`WritableStore::erase_values`].
    EraseValues {
        /// The keys erased.
        keys: Vec<StoreKey>,
    },
    /// [`WritableStore::erase_prefix`].
    ErasePrefix {
        /// The prefix erased.
        prefix: StorePrefix,
    },
    /// [`ListableStore::list`].
    List,
    /// [`ListableStore::list_prefix`].
    ListPrefix {
        /// The prefix listed.
        prefix: StorePrefix,
    },
    /// [`ListableStore::list_dir`].
    ListDir {
        /// The prefix listed.
        prefix: StorePrefix,
    },
}

/// Totals over the operations of a [`RecordingStore`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreStats {
    /// Calls to `get`.
    pub gets: u64,
    /// Calls to `size`.
    pub sizes: u64,
    /// Calls to `get_partial_values`.
    pub partial_reads: u64,
    /// Ranges requested by `get_partial_values` calls.
    pub ranges: u64,
    /// Bytes returned by `get` and `get_partial_values`.
    pub bytes_read: u64,
    /// Calls to `set`.
    pub sets: u64,
    /// Calls to `set_partial_values`.
    pub partial_writes: u64,
    /// Bytes passed to `set` and `set_partial_values`.
    pub bytes_written: u64,
    /// Calls to `erase`, `erase_values` and `erase_prefix`.
    pub erases: u64,
    /// Calls to `list`, `list_prefix` and `list_dir`.
    pub lists: u64,
}

impl StoreStats {
    /// Every call, of any kind.
    #[must_use]
    pub fn calls(&self) -> u64 {
        self.gets
            + self.sizes
            + self.partial_reads
            + self.sets
            + self.partial_writes
            + self.erases
            + self.lists
    }
}

/// A wrapper recording every call made to the store it wraps, with byte counts.
///
/// For tests and benchmarks that prove how many operations a read costs. Each call is
/// forwarded unchanged: wrapping a store does not change what it does.
///
/// ```
/// use bytes::Bytes;
/// use zarr_store::{ByteRange, MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RecordingStore::new(MemoryStore::new());
/// let key = StoreKey::new("shard");
/// store.set(&key, Bytes::from(vec![0u8; 1000])).await?;
/// let ranges: Vec<_> = (0..10).map(|i| (key.clone(), ByteRange::new(i * 10, i * 10 + 5))).collect();
/// store.get_partial_values(&ranges).await?;
/// let stats = store.stats();
/// assert_eq!((stats.partial_reads, stats.ranges, stats.bytes_read), (1, 10, 50));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RecordingStore<S> {
    inner: S,
    log: Mutex<Vec<Operation>>,
}

impl<S> RecordingStore<S> {
    /// Record the calls made to `inner`.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            log: Mutex::new(Vec::new()),
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The wrapped store, consuming the wrapper.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The calls recorded so far, in the order they completed.
    #[must_use]
    pub fn operations(&self) -> Vec<Operation> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Totals over the calls recorded so far.
    #[must_use]
    pub fn stats(&self) -> StoreStats {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stats = StoreStats::default();
        for op in log.iter() {
            match op {
                Operation::Get { bytes, .. } => {
                    stats.gets += 1;
                    stats.bytes_read += bytes.unwrap_or(0);
                }
                Operation::Size { .. } => stats.sizes += 1,
                Operation::GetPartialValues { requests, bytes } => {
                    stats.partial_reads += 1;
                    stats.ranges += requests.len() as u64;
                    stats.bytes_read += bytes;
                }
                Operation::Set { bytes, .. } => {
                    stats.sets += 1;
                    stats.bytes_written += bytes;
                }
                Operation::SetPartialValues { bytes, .. } => {
                    stats.partial_writes += 1;
                    stats.bytes_written += bytes;
                }
                Operation::Erase { .. }
                | Operation::EraseValues { .. }
                | Operation::ErasePrefix { .. } => stats.erases += 1,
                Operation::List | Operation::ListPrefix { .. } | Operation::ListDir { .. } => {
                    stats.lists += 1;
                }
            }
        }
        stats
    }

    /// Forget the calls recorded so far.
    pub fn clear(&self) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn record(&self, op: Operation) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(op);
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ReadableStore> ReadableStore for RecordingStore<S> {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        let result = self.inner.get(key).await;
        let bytes = match &result {
            Ok(value) => value.as_ref().map(|v| v.len() as u64),
            Err(_) => None,
        };
        self.record(Operation::Get {
            key: key.clone(),
            bytes,
        });
        result
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        let result = self.inner.size(key).await;
        self.record(Operation::Size { key: key.clone() });
        result
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        let result = self.inner.get_partial_values(key_ranges).await;
        let bytes = match &result {
            Ok(values) => values.iter().flatten().map(|v| v.len() as u64).sum(),
            Err(_) => 0,
        };
        self.record(Operation::GetPartialValues {
            requests: key_ranges.to_vec(),
            bytes,
        });
        result
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: WritableStore> WritableStore for RecordingStore<S> {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        let bytes = value.len() as u64;
        let result = self.inner.set(key, value).await;
        self.record(Operation::Set {
            key: key.clone(),
            bytes: if result.is_ok() { bytes } else { 0 },
        });
        result
    }

    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        let result = self.inner.set_partial_values(key_start_values).await;
        let writes: Vec<_> = key_start_values
            .iter()
            .map(|(key, start, bytes)| (key.clone(), *start, bytes.len() as u64))
            .collect();
        let bytes = if result.is_ok() {
            writes.iter().map(|w| w.2).sum()
        } else {
            0
        };
        self.record(Operation::SetPartialValues { writes, bytes });
        result
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        let result = self.inner.erase(key).await;
        self.record(Operation::Erase { key: key.clone() });
        result
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        let result = self.inner.erase_values(keys).await;
        self.record(Operation::EraseValues {
            keys: keys.to_vec(),
        });
        result
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        let result = self.inner.erase_prefix(prefix).await;
        self.record(Operation::ErasePrefix {
            prefix: prefix.clone(),
        });
        result
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ListableStore> ListableStore for RecordingStore<S> {
    async fn list(&self) -> Result<Vec<StoreKey>> {
        let result = self.inner.list().await;
        self.record(Operation::List);
        result
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let result = self.inner.list_prefix(prefix).await;
        self.record(Operation::ListPrefix {
            prefix: prefix.clone(),
        });
        result
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let result = self.inner.list_dir(prefix).await;
        self.record(Operation::ListDir {
            prefix: prefix.clone(),
        });
        result
    }
}

/// A wrapper rooting a store at a prefix: key `k` of the wrapper is key `prefix + k` of the
/// wrapped store, and listings see only what lies below the prefix, with the prefix removed.
///
/// ```
/// use bytes::Bytes;
/// use zarr_store::{ListableStore, MemoryStore, PrefixStore, StoreKey, StorePrefix, WritableStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let memory = MemoryStore::new();
/// let group = PrefixStore::new(memory.clone(), StorePrefix::try_new("group/")?);
/// group.set(&StoreKey::new("zarr.json"), Bytes::from_static(b"{}")).await?;
/// assert_eq!(memory.list().await?, vec![StoreKey::new("group/zarr.json")]);
/// assert_eq!(group.list().await?, vec![StoreKey::new("zarr.json")]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct PrefixStore<S> {
    inner: S,
    prefix: StorePrefix,
}

impl<S> PrefixStore<S> {
    /// Root `inner` at `prefix` (the root prefix makes a transparent wrapper).
    pub fn new(inner: S, prefix: StorePrefix) -> Self {
        Self { inner, prefix }
    }

    /// The prefix.
    pub fn prefix(&self) -> &StorePrefix {
        &self.prefix
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The wrapped store, consuming the wrapper.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn outer(&self, key: &StoreKey) -> StoreKey {
        self.prefix.join(key)
    }

    fn outer_prefix(&self, prefix: &StorePrefix) -> StorePrefix {
        self.prefix.join_prefix(prefix)
    }

    /// Name the caller's key, not the wrapped store's, in errors that carry a key.
    fn unprefix(&self, err: Error) -> Error {
        let strip = |key: StoreKey| key.strip_prefix(&self.prefix).unwrap_or(key);
        match err {
            Error::RangeOutOfBounds { key, range, size } => Error::RangeOutOfBounds {
                key: key.map(strip),
                range,
                size,
            },
            Error::OverlappingWrites {
                key,
                first_start,
                first_end,
                second_start,
                second_end,
            } => Error::OverlappingWrites {
                key: strip(key),
                first_start,
                first_end,
                second_start,
                second_end,
            },
            Error::TooLarge { what, value, key } => Error::TooLarge {
                what,
                value,
                key: key.map(strip),
            },
            other => other,
        }
    }

    fn strip(&self, keys: Vec<StoreKey>) -> Vec<StoreKey> {
        keys.iter()
            .filter_map(|key| key.strip_prefix(&self.prefix))
            .collect()
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ReadableStore> ReadableStore for PrefixStore<S> {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        self.inner
            .get(&self.outer(key))
            .await
            .map_err(|e| self.unprefix(e))
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        self.inner.size(&self.outer(key)).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        let outer: Vec<_> = key_ranges
            .iter()
            .map(|(key, range)| (self.outer(key), *range))
            .collect();
        self.inner
            .get_partial_values(&outer)
            .await
            .map_err(|e| self.unprefix(e))
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: WritableStore> WritableStore for PrefixStore<S> {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        self.inner
            .set(&self.outer(key), value)
            .await
            .map_err(|e| self.unprefix(e))
    }

    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        let outer: Vec<_> = key_start_values
            .iter()
            .map(|(key, start, bytes)| (self.outer(key), *start, bytes.clone()))
            .collect();
        self.inner
            .set_partial_values(&outer)
            .await
            .map_err(|e| self.unprefix(e))
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        self.inner.erase(&self.outer(key)).await
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        let outer: Vec<_> = keys.iter().map(|key| self.outer(key)).collect();
        self.inner.erase_values(&outer).await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.inner.erase_prefix(&self.outer_prefix(prefix)).await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ListableStore> ListableStore for PrefixStore<S> {
    async fn list(&self) -> Result<Vec<StoreKey>> {
        let keys = self.inner.list_prefix(&self.prefix).await?;
        Ok(self.strip(keys))
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let keys = self.inner.list_prefix(&self.outer_prefix(prefix)).await?;
        Ok(self.strip(keys))
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let listed = self.inner.list_dir(&self.outer_prefix(prefix)).await?;
        Ok(ListDir {
            keys: self.strip(listed.keys),
            prefixes: listed
                .prefixes
                .iter()
                .filter_map(|p| self.prefix.strip_from(p))
                .collect(),
        })
    }
}
