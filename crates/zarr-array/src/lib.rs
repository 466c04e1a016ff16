//! Zarr arrays and groups over any store: create, open, read and write regions, in parallel.
//!
//! - [`ArrayBuilder`] describes a new array (shape, data type, chunk grid, fill value,
//!   codecs, sharding, dimension names, attributes) and creates it, with any missing
//!   ancestor groups.
//! - [`Array`] reads and writes regions as typed values ([`Element`]: `u8` ... `f64`,
//!   `half::f16`, complex, `bool`), raw bytes, or [`ArrayBytes`] (which also holds strings and
//!   other variable-length data); single chunks; resizes; updates attributes.
//! - [`Group`] and [`Node`]: groups, attributes, children (one `list_dir`), the whole tree.
//! - [`Array::downsample_from`]: one level of a multiscale image from the level before
//!   ([`Reduction`]: mean, mode, min, max, stride).
//! - [`blocking`]: the same for programs without an async runtime.
//!
//! # Create, write, read
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use zarr_array::ArrayBuilder;
//! use zarr_core::DataType;
//! use zarr_store::MemoryStore;
//!
//! let store = Arc::new(MemoryStore::new());
//! let array = ArrayBuilder::new(vec![256, 256], DataType::UInt16, vec![64, 64])
//!     .zstd(1)
//!     .create(store, "/image")
//!     .await?;
//! let ramp: Vec<u16> = (0..256 * 256).map(|i| (i % 1000) as u16).collect();
//! array.write([0..256, 0..256], &ramp).await?;
//! let row: Vec<u16> = array.read([3..4, 0..256]).await?;
//! assert_eq!(row[..], ramp[3 * 256..4 * 256]);
//! # Ok::<(), zarr_array::Error>(())
//! # }).unwrap();
//! ```
//!
//! # How reads and writes run
//!
//! A read lists the chunks its region touches, fetches them with up to
//! [`ArrayOptions::io_concurrency`] requests in flight, and decodes each batch of fetched
//! chunks in parallel on rayon's pool, each chunk straight into its place in the one output
//! buffer (through a per-thread scratch buffer when the chunk's part is not contiguous in the
//! output). Chunks that are not stored read as the fill value without touching a codec. A
//! read holds the output plus at most `io_concurrency` encoded chunks.
//!
//! A write encodes the chunks it touches in parallel. Chunks the region covers whole (every
//! element inside the array) are never read; partly covered chunks are read, merged and
//! re-encoded. A chunk that ends up all fill value is erased rather than stored, unless
//! [`ArrayOptions::with_write_empty_chunks`] says otherwise.
//!
//! # Errors
//!
//! A chunk that does not decode (truncated, corrupt frame, failed checksum, wrong size) is an
//! [`Error::Chunk`] naming the array and the chunk's store key; other chunks stay readable.
//! Element types are checked against the data type ([`Error::ElementType`]), never
//! transmuted.
//!
//! # Tracing
//!
//! `open`, `read`, `write` and `resize` run in `tracing` spans (`zarr.open`, `zarr.read`,
//! `zarr.write`, `zarr.resize`) with the array path, region, chunk count and bytes, at debug
//! level: silent unless a subscriber asks for them.

mod array;
mod attributes;
pub mod blocking;
mod boxes;
mod builder;
mod cached;
mod codecs;
mod downsample;
mod element;
mod error;
mod fixed_point;
mod group;
mod index_cache;
mod index_flights;
mod locks;
mod nd_elements;
mod parts;
mod read;
mod records;
mod region;
mod selection;
mod selection_vlen;
mod shard_writer;
mod vlen_partial;
mod write;

pub use array::{
    Array, ArrayOptions, DEFAULT_DECODE_BUDGET, DEFAULT_IO_CONCURRENCY, DEFAULT_SELECTION_BUDGET,
};
pub use builder::{ArrayBuilder, default_array_to_bytes};
pub use cached::{CachedArray, ChunkCacheStats};
pub use codecs::default_registry;
pub use downsample::{Reduction, downsampled_shape};
pub use element::Element;
pub use error::{Error, Result};
pub use group::{Group, Node};
pub use nd_elements::NdElement;
pub use region::{IntoRegion, RegionIndex};
pub use selection::{AxisSelection, Selection};
pub use shard_writer::ShardWriter;
pub use zarr_codecs::{ArrayBytes, VlenBytes};
pub use zarr_core::{ErrorChain, Region};

/// The `ndarray` crate this one reads and writes regions as (`read_ndarray`,
/// `write_ndarray`), re-exported so callers use the same version.
#[cfg(feature = "ndarray")]
pub use ndarray;
