//! Where Zarr data lives: async store traits, and backends for the local filesystem, memory
//! and cloud object storage.
//!
//! A Zarr hierarchy is a set of **keys** (`"group/array/zarr.json"`, `"group/array/c/0/1"`)
//! mapped to **values** (bytes). This crate defines how those are read, written and listed,
//! and knows nothing about arrays or codecs.
//!
//! - Keys and prefixes are validated types: [`StoreKey`] and [`StorePrefix`] (the root
//!   prefix is `""`). Neither can hold `..`, `.` or empty segments, backslashes, NULs or a
//!   leading `/`, so no key can name anything outside its store.
//! - [`ByteRange`] is a bounded range `[start, end)`, everything from an offset, or the last
//!   `n` bytes (a suffix: how a shard index at the end of a shard is read without knowing
//!   the shard's size). Sizes and offsets are `u64`, arithmetic is checked, and a range
//!   beyond its value is the error [`Error::RangeOutOfBounds`].
//! - Capabilities are separate, object-safe async traits: [`ReadableStore`] (`get`, `size`,
//!   `get_partial_values`), [`WritableStore`] (`set`, `set_partial_values`, `erase`,
//!   `erase_values`, `erase_prefix`) and [`ListableStore`] (`list`, `list_prefix`,
//!   `list_dir`). [`Store`] is all three. All work as `Arc<dyn …>`. Conveniences such as
//!   [`ReadableStoreExt::get_range`] live in an extension trait.
//! - Values are [`bytes::Bytes`]; range reads hand out slices of one buffer, not copies.
//! - A missing key is `Ok(None)`, never an error: in Zarr a missing chunk is the fill value.
//!
//! # Picking a backend
//!
//! | backend | use it for | notes |
//! |---|---|---|
//! | [`FilesystemStore`] | a directory on local disk (Unix) | atomic writes, `pread` range reads, never follows symbolic links |
//! | [`MemoryStore`] | tests, caches, scratch arrays | concurrent; reads are zero-copy slices |
//! | [`ObjectStoreAdapter`] | S3 and S3-compatible servers, GCS, Azure, HTTP(S) (read-only), and anything else implementing [`object_store::ObjectStore`] | [`ObjectStoreAdapter::from_url`] takes `s3://`, `gs://`, `az://`, `http(s)://`, `file://`, `memory://` URLs and reads credentials from the environment |
//! | [`ZipStore`] | a whole hierarchy in one `.zip` file, as zarr-python's `ZipStore` writes it | read (stored and deflated entries, ZIP64), append, or read an archive kept in another store; [`ZipStore::finish`] completes a written archive |
//! | [`ReferenceStore`] | files kerchunk indexed (HDF5, netCDF, GRIB, TIFF...) read as Zarr through a reference set (JSON, or Parquet with the `parquet` feature: `ParquetReferences`), with no conversion | read-only; reads only the files its rules allow; Parquet record files read lazily |
//! | [`PrefixStore`] | rooting any store at a sub-path (one group of a larger hierarchy) | wrapper |
//! | [`RecordingStore`] | proving what a read cost: every call and byte, counted | wrapper |
//! | [`CachingStore`] | answering repeated reads from memory (object storage, HTTP) | wrapper |
//!
//! ```
//! use bytes::Bytes;
//! use zarr_store::{ByteRange, FilesystemStore, ListableStore, ReadableStore, StoreKey, StorePrefix, WritableStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let store = FilesystemStore::new(dir.path().join("data.zarr"))?;
//! let key = StoreKey::try_new("array/c/0/0")?;
//! store.set(&key, Bytes::from_static(b"chunk....index")).await?;
//!
//! // Many ranges of many keys in one call: answers come back in request order.
//! let parts = store
//!     .get_partial_values(&[
//!         (key.clone(), ByteRange::suffix(5)),        // the last 5 bytes
//!         (key.clone(), ByteRange::try_new(0, 5)?),   // bytes 0..5
//!         (StoreKey::new("array/c/9/9"), ByteRange::FULL), // missing: None
//!     ])
//!     .await?;
//! assert_eq!(parts[0].as_deref(), Some(&b"index"[..]));
//! assert_eq!(parts[1].as_deref(), Some(&b"chunk"[..]));
//! assert_eq!(parts[2], None);
//!
//! let listing = store.list_dir(&StorePrefix::try_new("array/c/")?).await?;
//! assert_eq!(listing.prefixes, vec![StorePrefix::new("array/c/0/")]);
//! # Ok(())
//! # }
//! ```
//!
//! # Writing a backend
//!
//! Implement the traits for your type with [`async_trait`](https://docs.rs/async-trait).
//! Only `get`, `size`, `set`, `erase`, `erase_prefix` and `list_prefix` are required; the
//! others have default implementations built on them (whole-value reads sliced into ranges,
//! read-modify-write partial writes, `list_dir` derived from `list_prefix`). Override the
//! ones your storage can do better, such as native range reads. Then prove the backend with
//! the conformance suite in `zarr_store::testing` (cargo feature `testing`), which every backend of this
//! crate passes too:
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::{Arc, Mutex};
//!
//! use async_trait::async_trait;
//! use bytes::Bytes;
//! use zarr_store::{ListableStore, ReadableStore, Result, StoreKey, StorePrefix, WritableStore};
//!
//! #[derive(Debug, Default)]
//! struct MyStore(Mutex<BTreeMap<StoreKey, Bytes>>);
//!
//! #[async_trait]
//! impl ReadableStore for MyStore {
//!     async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
//!         Ok(self.0.lock().unwrap().get(key).cloned())
//!     }
//!     async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
//!         Ok(self.0.lock().unwrap().get(key).map(|v| v.len() as u64))
//!     }
//! }
//!
//! #[async_trait]
//! impl WritableStore for MyStore {
//!     async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
//!         self.0.lock().unwrap().insert(key.clone(), value);
//!         Ok(())
//!     }
//!     async fn erase(&self, key: &StoreKey) -> Result<()> {
//!         self.0.lock().unwrap().remove(key);
//!         Ok(())
//!     }
//!     async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
//!         self.0.lock().unwrap().retain(|key, _| !key.has_prefix(prefix));
//!         Ok(())
//!     }
//! }
//!
//! #[async_trait]
//! impl ListableStore for MyStore {
//!     async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
//!         // A BTreeMap iterates in key order: the listing is sorted, as required.
//!         let map = self.0.lock().unwrap();
//!         Ok(map.keys().filter(|key| key.has_prefix(prefix)).cloned().collect())
//!     }
//! }
//!
//! # #[tokio::main]
//! # async fn main() {
//! // In a test (with the `testing` feature in your dev-dependencies):
//! let options = zarr_store::testing::SuiteOptions::default().with_large_value_bytes(1 << 20);
//! zarr_store::testing::run_conformance_with(Arc::new(MyStore::default()), &options).await;
//! # }
//! ```
//!
//! A complete, commented backend that passes the full suite (values over 100 MiB included)
//! is `examples/custom_backend.rs`; the test command runs it (`cargo test -p zarr-store`), and
//! `cargo run -p zarr-store --example custom_backend` prints its verdict.
//!
//! # Feature flags
//!
//! | feature | default | enables |
//! |---|---|---|
//! | `s3` | no | `s3://` URLs: Amazon S3 and S3-compatible servers (object_store `aws`) |
//! | `gcs` | no | `gs://` URLs: Google Cloud Storage (object_store `gcp`) |
//! | `azure` | no | `az://`, `abfs://` URLs: Azure Blob Storage (object_store `azure`) |
//! | `http` | no | `http://`, `https://` URLs, read-only (object_store `http`) |
//! | `testing` | no | the public conformance suite, `zarr_store::testing` |
//!
//! [`ObjectStoreAdapter`] itself, `file://` and `memory://` URLs need no feature. The cloud
//! features pull in an HTTP client and TLS; leave them off when you only need local data. The
//! `zarr` facade crate forwards `s3`, `gcs`, `azure` and `http`.
//!
//! # What [`FilesystemStore`] guarantees
//!
//! - Key `a/b/c` is the file `root/a/b/c`; parent directories are created as needed, and
//!   erasing removes directories left empty.
//! - Keys never reach outside the root, and **no symbolic link below the root is followed**:
//!   paths are resolved from a descriptor of the root with `O_NOFOLLOW` on every component
//!   (one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` call on Linux), so even a
//!   concurrent swap of a directory for a link cannot redirect a read or write. A key crossing
//!   a link is [`Error::SymlinkRefused`]; listings skip links.
//! - Writes are atomic: a temporary file in the same directory is renamed over the value. Opt
//!   in to durability (`fsync` of file and directory) with [`FilesystemOptions::durable`].
//! - Range reads of one value in one call use one open file and positional reads (`pread`),
//!   never a read of the whole file. Blocking I/O runs off the async runtime's worker threads
//!   ([`BlockingStrategy`]).
//!
//! # Why it looks like this
//!
//! Zarr v3 defines an abstract store with optional capabilities; splitting the traits lets a
//! read-only or unlistable store say so in its type, while [`Store`] keeps the common case to
//! one bound. Default methods keep the required surface small so that writing a backend is an
//! afternoon's work, and the conformance suite keeps every backend honest about the details
//! (request order, `None` for missing keys, errors for ranges past the end, segment-aware
//! prefixes) that Zarr readers rely on.

mod cache;
mod error;
pub mod fallback;
#[cfg(unix)]
mod filesystem;
pub mod inline;
mod key;
mod memory;
mod n5;
mod object;
#[cfg(unix)]
mod pool;
mod range;
mod reference;
mod traits;
mod wrappers;
#[cfg(unix)]
mod zip;

pub use cache::CachingStore;
pub use error::{Error, Result};
#[cfg(unix)]
pub use filesystem::{
    BlockingStrategy, FilesystemOptions, FilesystemStore, IoStats, NONBLOCKING_READ_MAX,
};
pub use key::{StoreKey, StorePrefix};
pub use memory::MemoryStore;
pub use n5::{N5_VERSION, N5Store};
pub use object::{ObjectStoreAdapter, ObjectStoreOptions};
pub use range::{ByteRange, ByteRangeForm};
#[cfg(feature = "parquet")]
pub use reference::{DEFAULT_CACHED_RECORDS, ParquetReferences};
pub use reference::{MAX_GENERATED_REFERENCES, Reference, ReferenceStore, References};
pub use traits::{ListDir, ListableStore, ReadableStore, ReadableStoreExt, Store, WritableStore};
pub use wrappers::{Operation, PrefixStore, RecordingStore, StoreStats};
#[cfg(unix)]
pub use zip::{ZipEntryReader, ZipOptions, ZipStore};

#[cfg(feature = "testing")]
pub mod testing;
