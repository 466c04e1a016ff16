//! Zarr v3 codecs: the codec traits, the in-memory chunk, codec chains and an extensible
//! codec registry.
//!
//! A Zarr array stores each chunk encoded by its `codecs`: zero or more array->array codecs
//! (`transpose`), exactly one array->bytes codec (`bytes`), then zero or more bytes->bytes
//! codecs (`zstd`, `gzip`, `blosc`, `crc32c`). This crate turns that list into a
//! [`CodecChain`] that encodes and decodes chunks. It knows nothing about stores: it works on
//! bytes in memory.
//!
//! - [`ChunkRepresentation`]: what a codec sees of a chunk (shape, data type, fill value).
//! - [`ArrayBytes`]: a decoded chunk, fixed-size element bytes or variable-length elements
//!   ([`VlenBytes`], Arrow layout).
//! - [`ArrayToArrayCodec`], [`ArrayToBytesCodec`], [`BytesToBytesCodec`]: the three kinds of
//!   codec, object-safe, used as `Arc<dyn ...>` inside a [`Codec`].
//! - [`CodecRegistry`]: names to constructors; [`CodecRegistry::with_defaults`] holds every
//!   codec here, and other crates (sharding, variable-length strings) or users add theirs.
//! - [`CodecChain`]: a validated chain with `encode`, `decode`, `decode_into` (straight into a
//!   caller's buffer), `decode_region_into` (part of a chunk) and `decode_into_view` (into a
//!   chunk's place in a larger output, see [`ArrayViewMut`]).
//!
//! The codecs: [`BytesCodec`], [`TransposeCodec`], [`GzipCodec`], [`ZlibCodec`]
//! (`numcodecs.zlib`, also what Zarr v2's `zlib` compressor is read as), [`ZstdCodec`],
//! [`BloscCodec`] and [`Crc32cCodec`].
//!
//! # Build a chain from metadata and decode a chunk
//!
//! ```
//! use zarr_codecs::{ArrayBytes, CodecChain, CodecRegistry};
//! use zarr_core::ArrayMetadata;
//!
//! let metadata = ArrayMetadata::from_json(r#"{
//!   "zarr_format": 3, "node_type": "array", "shape": [1000], "data_type": "float64",
//!   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100]}},
//!   "chunk_key_encoding": {"name": "default"}, "fill_value": "NaN",
//!   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
//!              {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
//!                 "shuffle": "shuffle", "typesize": 8, "blocksize": 0}}]
//! }"#)?;
//! let registry = CodecRegistry::with_defaults();
//! // Regular grids have one chunk shape; edge chunks are encoded at the full shape too.
//! let chunk_shape = metadata.chunk_grid.chunk_shape(&metadata.shape, &[0])?;
//! let chain = CodecChain::from_array_metadata(&metadata, chunk_shape, &registry)?;
//!
//! let values: Vec<f64> = (0..100).map(|i| i as f64 / 4.0).collect();
//! let native: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
//! let stored = chain.encode(ArrayBytes::fixed(native.clone()))?; // what goes in the store
//!
//! // Decode into a buffer you own (one write per element, no intermediate copies).
//! let mut out = vec![0u8; 800];
//! chain.decode_into(stored, &mut out)?;
//! assert_eq!(out, native);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Register a codec of your own
//!
//! ```
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use zarr_codecs::{
//!     ArrayBytes, BytesToBytesCodec, ChunkRepresentation, Codec, CodecChain, CodecRegistry,
//!     Error, ExpectedSize, Result,
//! };
//! use zarr_core::{DataType, ExtensionObject, FillValue};
//!
//! /// XOR every byte with a key from the configuration.
//! #[derive(Debug)]
//! struct Xor(u8);
//!
//! impl BytesToBytesCodec for Xor {
//!     fn to_metadata(&self) -> ExtensionObject {
//!         let mut config = serde_json::Map::new();
//!         config.insert("key".into(), self.0.into());
//!         ExtensionObject::with_configuration("example.xor", config)
//!     }
//!     fn encode(&self, decoded: Bytes) -> Result<Bytes> {
//!         Ok(decoded.iter().map(|b| b ^ self.0).collect::<Vec<u8>>().into())
//!     }
//!     fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
//!         expected.check("example.xor", encoded.len() as u64)?;
//!         self.encode(encoded)
//!     }
//!     fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
//!         Some(decoded) // same size
//!     }
//! }
//!
//! let mut registry = CodecRegistry::with_defaults();
//! registry.register("example.xor", |meta, _repr, _registry| {
//!     let key = meta
//!         .configuration
//!         .as_ref()
//!         .and_then(|c| c.get("key"))
//!         .and_then(|k| k.as_u64())
//!         .and_then(|k| u8::try_from(k).ok())
//!         .ok_or_else(|| Error::InvalidConfiguration {
//!             codec: "example.xor".into(),
//!             reason: "`key` must be an integer from 0 to 255".into(),
//!         })?;
//!     Ok(Codec::BytesToBytes(Arc::new(Xor(key))))
//! });
//!
//! let codecs = [
//!     ExtensionObject::from_json(&serde_json::json!({"name": "bytes"}), "codecs[0]")?,
//!     ExtensionObject::from_json(
//!         &serde_json::json!({"name": "example.xor", "configuration": {"key": 255}}),
//!         "codecs[1]",
//!     )?,
//! ];
//! let repr = ChunkRepresentation::try_new(vec![4], DataType::UInt8, FillValue::new([0]))?;
//! let chain = CodecChain::from_metadata(&codecs, repr, &registry)?;
//! let stored = chain.encode(ArrayBytes::fixed(vec![0, 1, 2, 3]))?;
//! assert_eq!(&stored[..], &[255, 254, 253, 252]);
//! assert_eq!(chain.decode(stored)?, ArrayBytes::fixed(vec![0, 1, 2, 3]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bad input
//!
//! Every decoder bounds its output by the chunk's decoded size: a zstd frame or blosc header
//! that claims more is refused before anything is allocated, and a stream that produces more
//! is stopped. Truncated and corrupt data, failed checksums and wrong sizes are typed
//! [`Error`]s naming the codec, never panics.
//!
//! # Feature flags
//!
//! None. c-blosc is always built (by `blosc-src`, with lz4, zlib, zstd and snappy, so every
//! `cname` works), as are zstd and a pure-Rust deflate for gzip.
//!
//! # Why these choices
//!
//! - `bytes::Bytes` between codecs: codecs that do not change the data (`bytes` on a native
//!   byte order, `crc32c` after checking) hand it on without copying.
//! - `decode_into`: a read writes each chunk straight into its final place; copying decoded
//!   chunks a second time, and touching fresh allocations, is what makes reads slow.
//! - zstd contexts are kept per thread, not allocated per chunk.
//! - c-blosc is called through its thread-safe `_ctx` functions only.

use blosc_src as _;

mod array_bytes;
mod chain;
mod codec;
mod codecs;
mod config;
mod error;
mod registry;
mod representation;
mod strided;
mod view;

pub use array_bytes::{ArrayBytes, VlenBytes, zeroed_bytes};
pub use chain::{CodecChain, DEFAULT_SIZE_LIMIT};
pub use codec::{ArrayToArrayCodec, ArrayToBytesCodec, BytesToBytesCodec, Codec, ExpectedSize};
pub use codecs::bitpacking::{BitPackingCodec, PaddingEncoding};
pub use codecs::bitround::BitroundCodec;
pub use codecs::blosc::{BloscCodec, BloscCompressor, BloscShuffle};
pub use codecs::bytes::{BytesCodec, Endian};
pub use codecs::cast_value::{CastValueCodec, OutOfRange, Rounding};
pub use codecs::crc32c::Crc32cCodec;
pub use codecs::gzip::GzipCodec;
pub use codecs::n5::N5DefaultCodec;
pub use codecs::n5_lz4::N5Lz4Codec;
pub use codecs::numcodecs::bz2::Bz2Codec;
pub use codecs::numcodecs::checksum::{Checksum, ChecksumCodec, Location};
pub use codecs::numcodecs::jenkins::{JenkinsLookup3Codec, jenkins_lookup3};
pub use codecs::numcodecs::lz4::Lz4Codec;
pub use codecs::numcodecs::lzma::{LzmaCodec, LzmaFormat};
pub use codecs::numcodecs::numeric::{NUMERIC_FILTER_NAMES, NumericFilter, NumericFilterCodec};
pub use codecs::numcodecs::packbits::PackBitsCodec;
pub use codecs::numcodecs::pcodec::{PcodecCodec, PcodecDelta, PcodecMode};
pub use codecs::numcodecs::shuffle::ShuffleCodec;
pub use codecs::optional::OptionalCodec;
pub use codecs::pad::{OffsetCodec, PadCodec, PadLocation};
pub use codecs::reshape::{ReshapeCodec, ReshapeDim};
pub use codecs::scale_offset::ScaleOffsetCodec;
pub use codecs::singleton_dim::{SingletonDimCodec, SingletonDimOp};
pub use codecs::squeeze::SqueezeCodec;
pub use codecs::transpose::TransposeCodec;
pub use codecs::zfp::{ZfpCodec, ZfpMode, ZfpyCodec};
pub use codecs::zlib::ZlibCodec;
pub use codecs::zstd::ZstdCodec;
pub use error::{Error, Result};
pub use registry::{CodecConstructor, CodecRegistry};
pub use representation::ChunkRepresentation;
pub use view::{ArrayViewMut, copy_block, for_each_block_run};
