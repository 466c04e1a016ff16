//! Async store traits for Zarr with filesystem, memory and `object_store` backends.

mod error;
pub mod fallback;
#[cfg(unix)]
mod filesystem;
mod key;
mod memory;
mod object;
mod range;
mod traits;
mod wrappers;

pub use error::{Error, Result};
#[cfg(unix)]
pub use filesystem::{BlockingStrategy, FilesystemOptions, FilesystemStore, IoStats};
pub use key::{StoreKey, StorePrefix};
pub use memory::MemoryStore;
pub use object::{ObjectStoreAdapter, ObjectStoreOptions};
pub use range::{ByteRange, ByteRangeForm};
pub use traits::{ListDir, ListableStore, ReadableStore, ReadableStoreExt, Store, WritableStore};
pub use wrappers::{Operation, PrefixStore, RecordingStore, StoreStats};

#[cfg(feature = "testing")]
pub mod testing;
