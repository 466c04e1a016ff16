//! The Zarr v3 metadata model: a strict, lossless, pure (no I/O) description of arrays and
//! groups.
//!
//! - [`NodeMetadata`], [`ArrayMetadata`], [`GroupMetadata`]: parse and write `zarr.json`.
//! - [`DataType`] and [`FillValue`]: every core type and the registered extension types, with
//!   fill values kept as the element's exact bytes.
//! - [`ChunkGrid`]: `regular` and `rectilinear` grids, with one implementation of the grid
//!   arithmetic that maps a [`Region`] to the chunks it touches.
//! - [`ChunkKeyEncoding`], [`NodePath`]: how chunks and nodes are named in a store.
//!
//! ```
//! use zarr_core::{ArrayMetadata, DataType, Region};
//!
//! let json = r#"{
//!   "zarr_format": 3, "node_type": "array", "shape": [10, 10], "data_type": "float32",
//!   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
//!   "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
//!   "fill_value": "NaN", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]
//! }"#;
//! let array = ArrayMetadata::from_json(json)?;
//! assert_eq!(array.data_type, DataType::Float32);
//! assert_eq!(array.fill_value.as_bytes(), f32::NAN.to_ne_bytes());
//! assert_eq!(array.chunk_key(&[2, 1]), "c/2/1");
//!
//! // Which chunks does the region [3..5, 0..10] touch?
//! let region = Region::try_new(vec![3..5, 0..10])?;
//! let chunks: Vec<_> = array.chunk_grid.chunks_in_region(&array.shape, &region)?.collect();
//! assert_eq!(chunks.len(), 6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Why a separate crate
//!
//! Metadata is the contract between implementations. Keeping it free of async runtimes and I/O
//! lets tools that only inspect or generate metadata depend on it alone, and keeps the rules of
//! the format in one audited place.

mod chunk_grid;
mod chunk_key_encoding;
mod data_type;
mod error;
mod extension;
mod fill_value;
mod fixed_point;
mod json;
mod metadata;
mod minifloat;
mod node;
mod region;
pub mod v2;

pub use chunk_grid::*;
pub use chunk_key_encoding::*;
pub use data_type::*;
pub use error::{Error, ErrorChain, ExtensionKind, Result};
pub use extension::ExtensionObject;
pub use fill_value::*;
pub use fixed_point::{FixedPointKind, FixedPointType};
pub use metadata::*;
pub use node::*;
pub use region::*;
