//! Zarr v3 for Rust: chunked, compressed, N-dimensional arrays.
//!
//! This facade crate holds no logic of its own: it re-exports the workspace's layered crates so
//! that most users need a single dependency.
//!
//! | module | crate | what it holds |
//! |---|---|---|
//! | [`metadata`](mod@metadata) | `zarr-core` | metadata, data types, fill values, chunk grids, node paths |
//! | [`store`](mod@store) | `zarr-store` | async store traits and backends |
//! | [`codecs`](mod@codecs) | `zarr-codecs` | codec traits, codec chains and the registry |
//! | [`sharding`](mod@sharding) | `zarr-sharding` | the sharding codec and storage transformer |
//! | [`vlen`](mod@vlen) | `zarr-vlen` | variable-length strings and binary |
//! | [`array`](mod@array) | `zarr-array` | arrays, groups and region I/O |
//!
//! Start with the [user guide](guide): create, write, read, groups, async and blocking; then
//! the [sharding guide](sharding_guide): when to shard, shapes, the codec and the transformer;
//! and the [stores guide](stores_guide): the backends, URLs, zip archives, your own backend.
//! The [strings guide](strings_guide) covers variable-length strings and bytes: the chunk
//! layouts, which to pick, and what each peer reads.
//!
//! ```
//! use zarr::metadata::NodeMetadata;
//!
//! let json = r#"{"zarr_format": 3, "node_type": "group", "attributes": {"title": "demo"}}"#;
//! let node = NodeMetadata::from_json(json)?;
//! assert!(matches!(node, NodeMetadata::Group(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[doc = include_str!("../../../docs/arrays.md")]
pub mod guide {}

#[doc = include_str!("../../../docs/sharding.md")]
pub mod sharding_guide {}

#[doc = include_str!("../../../docs/stores.md")]
pub mod stores_guide {}

#[doc = include_str!("../../../docs/codecs.md")]
pub mod codecs_guide {}

#[doc = include_str!("../../../docs/metadata.md")]
pub mod metadata_guide {}

#[doc = include_str!("../../../docs/strings.md")]
pub mod strings_guide {}

pub use zarr_array as array;

/// Crates whose types the API takes and returns, re-exported so one dependency is enough:
/// `bytes` (stored values), `half` (`float16`, `bfloat16`), `num_complex` (`complex64`,
/// `complex128`), `serde_json` (attributes, fill values) and `ndarray` (region reads and
/// writes as arrays).
pub use {bytes, half, num_complex, serde_json, zarr_array::ndarray};

/// What most programs use: `use zarr::prelude::*;`.
///
/// ```
/// use zarr::prelude::*;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = Arc::new(MemoryStore::new());
/// let array = ArrayBuilder::new(vec![4], DataType::UInt8, vec![2])
///     .create(store, "/a")
///     .await?;
/// array.write(.., &[1u8, 2, 3, 4]).await?;
/// assert_eq!(array.read::<u8>(1..3).await?, [2, 3]);
/// # Ok::<(), zarr::array::Error>(())
/// # }).unwrap();
/// ```
pub mod prelude {
    pub use std::sync::Arc;

    pub use zarr_array::{
        Array, ArrayBuilder, ArrayOptions, AxisSelection, CachedArray, Group, IntoRegion, Node,
        Reduction, Selection, blocking, downsampled_shape,
    };
    pub use zarr_core::{DataType, ErrorChain, FillValue, Region};
    pub use zarr_store::{
        FilesystemStore, ListableStore, MemoryStore, ReadableStore, WritableStore, ZipStore,
    };
}
pub use zarr_codecs as codecs;
pub use zarr_core as metadata;
pub use zarr_sharding as sharding;
pub use zarr_store as store;
pub use zarr_vlen as vlen;
