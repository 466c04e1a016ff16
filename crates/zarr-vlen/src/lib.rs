//! Variable-length strings and binary data for Zarr, in Arrow layout: the ZEP0007 chunk
//! layout and zarr-python's `vlen-utf8` / `vlen-bytes` codecs.
//!
//! Zarr arrays of data type `string` (UTF-8) or `bytes` hold elements of any length. In
//! memory this crate keeps them as Arrow does: one buffer of offsets and one buffer with all
//! values back to back, built on [`arrow_buffer`].
//!
//! - [`VlenStrings`] and [`VlenBinary`]: validated Arrow-layout arrays with `i32` offsets
//!   (Arrow's `Utf8`/`Binary`) or `i64` offsets (`LargeUtf8`/`LargeBinary`), converting to
//!   and from `&[&str]`, `Vec<String>`, `&[&[u8]]`, `Vec<Vec<u8>>`, and without copying the
//!   values to and from [`zarr_codecs::VlenBytes`] / [`zarr_codecs::ArrayBytes`] and (feature
//!   `arrow`) arrow-array's `StringArray`, `LargeStringArray`, `BinaryArray` and
//!   `LargeBinaryArray`.
//! - [`VlenUtf8Codec`] (`vlen-utf8`) and [`VlenBytesCodec`] (`vlen-bytes`): the codecs
//!   zarr-python writes. Use them for data that other implementations must read.
//! - [`VlenArrowCodec`] (`zarr-rs.vlen_arrow`): this project's codec for the ZEP0007 layout,
//!   offsets then padding to 64 bytes then the data. Decoding hands out the chunk's own bytes
//!   as values (no copy), and a few elements of a large chunk can be read with two small
//!   byte-range requests. Only this project reads it.
//! - [`ZarrsVlenCodec`] (`zarrs.vlen`): zarrs' codec, the same Arrow layout with the offsets
//!   and the values each encoded by a codec chain of its own; read and written for
//!   interoperability with zarrs; and [`ZarrsVlenV2Codec`] (`zarrs.vlen_v2`), zarrs' name
//!   for the `vlen-utf8` layout on either data type.
//! - [`VlenNdArrayCodec`] (`vlen-ndarray`): ragged arrays of the zarr-extensions `ndarray`
//!   data type, each element an `(n, d1, ..., dk)` array, in the `vlen-bytes` layout.
//! - [`register`]: adds these codecs to a [`CodecRegistry`].
//!
//! # Read a chunk written by zarr-python
//!
//! ```
//! use zarr_codecs::{ArrayBytes, CodecChain, CodecRegistry};
//! use zarr_core::ArrayMetadata;
//! use zarr_vlen::VlenStrings;
//!
//! let metadata = ArrayMetadata::from_json(r#"{
//!   "zarr_format": 3, "node_type": "array", "shape": [5], "data_type": "string",
//!   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}},
//!   "chunk_key_encoding": {"name": "default"}, "fill_value": "",
//!   "codecs": [{"name": "vlen-utf8", "configuration": {}}]
//! }"#)?;
//! let mut registry = CodecRegistry::with_defaults();
//! zarr_vlen::register(&mut registry);
//! let chain = CodecChain::from_array_metadata(&metadata, vec![5], &registry)?;
//!
//! // The chunk `c/0` as zarr-python 3 writes ["a", "", "héllo", "zarr", "xyz"].
//! let stored = b"\x05\0\0\0\x01\0\0\0a\0\0\0\0\x06\0\0\0h\xc3\xa9llo\x04\0\0\0zarr\x03\0\0\0xyz";
//! let decoded = chain.decode(bytes::Bytes::from_static(stored))?;
//! let strings = VlenStrings::<i32>::try_from(decoded)?;
//! assert_eq!(strings.to_strings(), ["a", "", "héllo", "zarr", "xyz"]);
//!
//! // And back, byte for byte.
//! let encoded = chain.encode(ArrayBytes::try_from(strings)?)?;
//! assert_eq!(&encoded[..], stored);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Write and read the ZEP0007 layout
//!
//! ```
//! use zarr_codecs::{ArrayBytes, CodecChain, CodecRegistry};
//! use zarr_core::ArrayMetadata;
//! use zarr_vlen::VlenStrings;
//!
//! let metadata = ArrayMetadata::from_json(r#"{
//!   "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "string",
//!   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
//!   "chunk_key_encoding": {"name": "default"}, "fill_value": "",
//!   "codecs": [{"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}},
//!              {"name": "zstd", "configuration": {"level": 3}}]
//! }"#)?;
//! let mut registry = CodecRegistry::with_defaults();
//! zarr_vlen::register(&mut registry);
//! let chain = CodecChain::from_array_metadata(&metadata, vec![4], &registry)?;
//!
//! let strings = VlenStrings::<i64>::try_from(&["the", "quick", "brown", "🦊"][..])?;
//! let stored = chain.encode(ArrayBytes::try_from(strings.clone())?)?;
//! let back = VlenStrings::<i64>::try_from(chain.decode(stored)?)?;
//! assert_eq!(back, strings);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Feature flags
//!
//! - `arrow` (off by default): zero-copy conversions between [`VlenStrings`] /
//!   [`VlenBinary`] and arrow-array's `GenericStringArray` / `GenericBinaryArray` (see the
//!   `arrow` module's docs). Only [`arrow_buffer`] is needed without it.
//!
//! # Why these choices
//!
//! - Arrow layout in memory: it is what the ZEP0007 chunk layout is, what analytics
//!   libraries take without copying, and it keeps a million short strings in two
//!   allocations rather than a million.
//! - Validation up front: the constructors and decoders check offsets and UTF-8 once, so
//!   element access is plain slicing and a corrupt chunk is an error naming the element,
//!   never a panic or a wrong string later.
//! - zarr-python's codecs stay the default for writing because zarr-python cannot read
//!   anything else; the ZEP0007 codec is there for data that this project (or an Arrow-aware
//!   reader that follows docs/strings.md) reads.

mod array;
#[cfg(feature = "arrow")]
pub mod arrow;
mod common;
mod error;
mod interleaved;
mod ndarray;
mod offset;
mod utf8;
mod zarrs_vlen;
mod zep0007;

use std::sync::Arc;

use zarr_codecs::{Codec, CodecRegistry};

pub use array::{BinaryIter, StringsIter, VlenBinary, VlenStrings};
pub use error::{Error, Result};
pub use interleaved::{VlenArrayCodec, VlenBytesCodec, VlenUtf8Codec, ZarrsVlenV2Codec};
pub use ndarray::VlenNdArrayCodec;
pub use offset::VlenOffset;
pub use zarrs_vlen::{VlenIndexLocation, VlenIndexType, ZarrsVlenCodec};
pub use zep0007::{OffsetType, VALUES_ALIGNMENT, VlenArrowCodec};

/// Add `vlen-utf8`, `vlen-bytes`, `zarr-rs.vlen_arrow`, `zarrs.vlen`, `zarrs.vlen_v2`,
/// `numcodecs.vlen-array` and `vlen-ndarray` to `registry`.
/// `zarrs.vlen` builds its index and data chains with the registry it is built from, so
/// codecs registered there are available inside it.
///
/// ```
/// let mut registry = zarr_codecs::CodecRegistry::with_defaults();
/// zarr_vlen::register(&mut registry);
/// assert!(registry.contains("vlen-utf8"));
/// assert!(registry.contains("vlen-bytes"));
/// assert!(registry.contains(zarr_vlen::VlenArrowCodec::NAME));
/// assert!(registry.contains(zarr_vlen::ZarrsVlenCodec::NAME));
/// assert!(registry.contains(zarr_vlen::ZarrsVlenV2Codec::NAME));
/// assert!(registry.contains(zarr_vlen::VlenArrayCodec::NAME));
/// assert!(registry.contains(zarr_vlen::VlenNdArrayCodec::NAME));
/// ```
pub fn register(registry: &mut CodecRegistry) {
    registry
        .register(VlenUtf8Codec::NAME, |meta, _, _| {
            Ok(Codec::ArrayToBytes(Arc::new(VlenUtf8Codec::from_metadata(
                meta,
            )?)))
        })
        .register(VlenBytesCodec::NAME, |meta, _, _| {
            Ok(Codec::ArrayToBytes(Arc::new(
                VlenBytesCodec::from_metadata(meta)?,
            )))
        })
        .register(VlenArrowCodec::NAME, |meta, _, _| {
            Ok(Codec::ArrayToBytes(Arc::new(
                VlenArrowCodec::from_metadata(meta)?,
            )))
        })
        .register(ZarrsVlenCodec::NAME, |meta, repr, registry| {
            Ok(Codec::ArrayToBytes(Arc::new(
                ZarrsVlenCodec::from_metadata(meta, repr, registry)?,
            )))
        })
        .register(ZarrsVlenV2Codec::NAME, |meta, _, _| {
            Ok(Codec::ArrayToBytes(Arc::new(
                ZarrsVlenV2Codec::from_metadata(meta)?,
            )))
        })
        .register(VlenArrayCodec::NAME, |meta, _, _| {
            Ok(Codec::ArrayToBytes(Arc::new(
                VlenArrayCodec::from_metadata(meta)?,
            )))
        })
        .register(VlenNdArrayCodec::NAME, |meta, _, _| {
            Ok(Codec::ArrayToBytes(Arc::new(
                VlenNdArrayCodec::from_metadata(meta)?,
            )))
        });
}
