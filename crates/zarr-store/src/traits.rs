//! The capability traits every store implements, and the extension trait with conveniences.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use crate::{ByteRange, Result, StoreKey, StorePrefix, fallback};

/// A store whose values can be read.
///
/// The trait is object-safe: use it as `Arc<dyn ReadableStore>` as well as a generic bound.
/// A missing key is never an error: reads answer `Ok(None)`, which Zarr reads as "fill value".
///
/// Only [`get`](ReadableStore::get) and [`size`](ReadableStore::size) are required;
/// [`get_partial_values`](ReadableStore::get_partial_values) falls back to reading each
/// distinct key whole and slicing it, so a backend without native range reads still answers
/// range requests correctly. Backends that can read ranges should override it.
#[async_trait]
pub trait ReadableStore: Send + Sync + Debug + 'static {
    /// The whole value at `key`, or `None` if there is none.
    ///
    /// # Errors
    /// Backend failures (I/O, network) and refused keys (for example a
    /// [`FilesystemStore`](crate::FilesystemStore) key crossing a symbolic link).
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>>;

    /// The size in bytes of the value at `key`, or `None` if there is none.
    ///
    /// # Errors
    /// As for [`get`](ReadableStore::get).
    async fn size(&self, key: &StoreKey) -> Result<Option<u64>>;

    /// Many byte ranges of many values in one call.
    ///
    /// `key_ranges` is an ordered list of `(key, range)` pairs and may repeat a key with
    /// different ranges. The answer has one entry per pair, in the same order: the bytes of the
    /// range, or `None` if the key has no value. Backends group the requests per key so that
    /// one value costs one open (filesystem) or one coalesced request (object storage).
    ///
    /// # Errors
    /// [`Error::RangeOutOfBounds`](crate::Error::RangeOutOfBounds) naming the key if a range
    /// reaches beyond its value; otherwise as for [`get`](ReadableStore::get). One failing range
    /// fails the whole call.
    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        fallback::get_partial_values_by_full_read(self, key_ranges).await
    }
}

/// A store whose values can be written and erased.
///
/// Writable stores are readable too: partial writes, and Zarr writes of part of a chunk, must
/// read what is there.
///
/// Required: [`set`](WritableStore::set), [`erase`](WritableStore::erase),
/// [`erase_prefix`](WritableStore::erase_prefix). The partial and batch forms have default
/// implementations built on them.
#[async_trait]
pub trait WritableStore: ReadableStore {
    /// Store `value` at `key`, replacing any value there.
    ///
    /// # Errors
    /// Backend failures and refused keys; [`Error::ReadOnly`](crate::Error::ReadOnly) for a
    /// read-only store.
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()>;

    /// Write each `(key, start, bytes)` into the existing value at `key`, at offset `start`.
    ///
    /// Writes to one key must not overlap. A missing key is treated as an empty value, and a
    /// write past the end of a value extends it, filling any gap with zero bytes. A write of
    /// zero bytes changes nothing.
    ///
    /// The default reads each touched value whole, patches it in memory and writes it back with
    /// [`set`](WritableStore::set).
    ///
    /// # Errors
    /// [`Error::OverlappingWrites`](crate::Error::OverlappingWrites) (checked before anything is
    /// written), [`Error::TooLarge`](crate::Error::TooLarge) if an end overflows, otherwise as
    /// for [`set`](WritableStore::set).
    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        fallback::set_partial_values_by_read_modify_write(self, key_start_values).await
    }

    /// Erase the value at `key`. Erasing a missing key succeeds.
    ///
    /// # Errors
    /// As for [`set`](WritableStore::set).
    async fn erase(&self, key: &StoreKey) -> Result<()>;

    /// Erase the values at `keys`. Missing keys are ignored.
    ///
    /// # Errors
    /// As for [`set`](WritableStore::set).
    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        fallback::erase_values_one_by_one(self, keys).await
    }

    /// Erase every value whose key starts with `prefix` (everything, for the root prefix).
    ///
    /// # Errors
    /// As for [`set`](WritableStore::set).
    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()>;
}

/// A store whose keys can be listed.
///
/// Every list is sorted in ascending byte order of the keys. Only
/// [`list_prefix`](ListableStore::list_prefix) is required.
#[async_trait]
pub trait ListableStore: Send + Sync + Debug + 'static {
    /// Every key in the store.
    ///
    /// # Errors
    /// Backend failures.
    async fn list(&self) -> Result<Vec<StoreKey>> {
        self.list_prefix(&StorePrefix::root()).await
    }

    /// Every key below `prefix`, at any depth.
    ///
    /// # Errors
    /// Backend failures.
    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>>;

    /// The direct children of `prefix`: the keys right below it and the prefixes of deeper
    /// keys. With keys `a/b`, `a/c`, `a/d/e` and `a/f/g`, `list_dir("a/")` answers keys `a/b`,
    /// `a/c` and prefixes `a/d/`, `a/f/`. Keys and prefixes are full, not relative to `prefix`.
    ///
    /// The default derives the answer from [`list_prefix`](ListableStore::list_prefix).
    ///
    /// # Errors
    /// Backend failures.
    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        fallback::list_dir_from_list_prefix(self, prefix).await
    }
}

/// The answer of [`ListableStore::list_dir`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListDir {
    /// Keys directly below the prefix, sorted.
    pub keys: Vec<StoreKey>,
    /// Prefixes of the deeper keys (one per child "directory"), sorted.
    pub prefixes: Vec<StorePrefix>,
}

/// A store with every capability: readable, writable and listable.
///
/// Implemented automatically for every type that implements the three traits, so it can be
/// used as `Arc<dyn Store>` and upcast to `Arc<dyn ReadableStore>` and the others.
pub trait Store: ReadableStore + WritableStore + ListableStore {}

impl<T: ReadableStore + WritableStore + ListableStore + ?Sized> Store for T {}

/// Conveniences for every [`ReadableStore`], built on its methods.
///
/// Implemented for every readable store (including `dyn ReadableStore`); it cannot be
/// implemented separately, so the conveniences always agree with the store's own methods.
#[async_trait]
pub trait ReadableStoreExt: ReadableStore {
    /// One byte range of the value at `key`, or `None` if there is none.
    ///
    /// # Errors
    /// As for [`ReadableStore::get_partial_values`].
    async fn get_range(&self, key: &StoreKey, range: ByteRange) -> Result<Option<Bytes>> {
        if range.is_full() {
            return self.get(key).await;
        }
        let mut values = self.get_partial_values(&[(key.clone(), range)]).await?;
        Ok(values.pop().flatten())
    }

    /// Whether there is a value at `key`.
    ///
    /// # Errors
    /// As for [`ReadableStore::size`].
    async fn exists(&self, key: &StoreKey) -> Result<bool> {
        Ok(self.size(key).await?.is_some())
    }
}

impl<T: ReadableStore + ?Sized> ReadableStoreExt for T {}

macro_rules! forward_pointer {
    ($ptr:ident) => {
        #[async_trait]
        #[deny(clippy::missing_trait_methods)]
        impl<T: ReadableStore + ?Sized> ReadableStore for $ptr<T> {
            async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
                (**self).get(key).await
            }

            async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
                (**self).size(key).await
            }

            async fn get_partial_values(
                &self,
                key_ranges: &[(StoreKey, ByteRange)],
            ) -> Result<Vec<Option<Bytes>>> {
                (**self).get_partial_values(key_ranges).await
            }
        }

        #[async_trait]
        #[deny(clippy::missing_trait_methods)]
        impl<T: WritableStore + ?Sized> WritableStore for $ptr<T> {
            async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
                (**self).set(key, value).await
            }

            async fn set_partial_values(
                &self,
                key_start_values: &[(StoreKey, u64, Bytes)],
            ) -> Result<()> {
                (**self).set_partial_values(key_start_values).await
            }

            async fn erase(&self, key: &StoreKey) -> Result<()> {
                (**self).erase(key).await
            }

            async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
                (**self).erase_values(keys).await
            }

            async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
                (**self).erase_prefix(prefix).await
            }
        }

        #[async_trait]
        #[deny(clippy::missing_trait_methods)]
        impl<T: ListableStore + ?Sized> ListableStore for $ptr<T> {
            async fn list(&self) -> Result<Vec<StoreKey>> {
                (**self).list().await
            }

            async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
                (**self).list_prefix(prefix).await
            }

            async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
                (**self).list_dir(prefix).await
            }
        }
    };
}

forward_pointer!(Arc);
forward_pointer!(Box);
