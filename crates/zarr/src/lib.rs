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
//! the [sharding guide](sharding_guide): when to shard, shapes, the codec and the transformer.
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

pub use zarr_array as array;
pub use zarr_codecs as codecs;
pub use zarr_core as metadata;
pub use zarr_sharding as sharding;
pub use zarr_store as store;
pub use zarr_vlen as vlen;
