//! Sharding for Zarr v3: many small chunks stored in few objects.
//!
//! Object stores and file systems handle millions of tiny values badly; small chunks are what
//! make reads of small regions cheap. A **shard** stores many inner chunks in one value with an
//! index of where each one is, so a reader fetches only the index and the inner chunks it
//! needs. This crate implements the two forms of it the project supports, on one binary
//! format and one implementation:
//!
//! - [`ShardingCodec`]: the `sharding_indexed` codec of the final v3 specification (ZEP0002),
//!   interoperable with zarr-python 3, tensorstore and zarrs. The array's chunk grid is the
//!   shard grid; the codec holds the inner chunk shape, the inner codecs (which may shard
//!   again), the index codecs and the index location. Register it with [`register`].
//! - [`ShardingTransformer`]: the sharding *storage transformer* of the earlier draft, a store
//!   wrapper over any store that maps an array's chunk keys into shards and implements the
//!   store traits on top (two calls below per `get_partial_values`, listing chunks as if
//!   unsharded, per-shard locking of writers in this process).
//! - [`ShardIndex`]: the index, one `(offset, nbytes)` pair per inner chunk in C order,
//!   validated before use (every entry inside the shard, no overflow, no overlap with the
//!   index itself).
//!
//! # Reading a region of a stored shard: I/O, then CPU
//!
//! [`ShardingCodec::fetch`] reads what a region needs with at most two store requests (the
//! index by a suffix or prefix range, then every needed inner chunk in one
//! `get_partial_values`); [`ShardingCodec::decode_fetched_into_view`] then decodes those inner
//! chunks in parallel (rayon), each straight into its place in the caller's output.
//!
//! ```
//! use std::sync::Arc;
//! use zarr_codecs::{ArrayBytes, ArrayViewMut, ChunkRepresentation, CodecRegistry};
//! use zarr_core::{DataType, ExtensionObject, FillValue, Region};
//! use zarr_sharding::ShardingCodec;
//! use zarr_store::{MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut registry = CodecRegistry::with_defaults();
//! zarr_sharding::register(&mut registry);
//!
//! // Shards of 64x64 float32 elements in inner chunks of 16x16, zstd inside.
//! let meta = ExtensionObject::from_json(&serde_json::json!({
//!     "name": "sharding_indexed",
//!     "configuration": {
//!         "chunk_shape": [16, 16],
//!         "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
//!                    {"name": "zstd", "configuration": {"level": 3, "checksum": false}}],
//!         "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
//!                          {"name": "crc32c"}],
//!         "index_location": "end"
//!     }
//! }), "codecs[0]")?;
//! let shard = ChunkRepresentation::try_new(vec![64, 64], DataType::Float32, FillValue::new([0; 4]))?;
//! let codec = ShardingCodec::from_metadata(&meta, &shard, &registry)?;
//! assert_eq!(codec.chunks_per_shard(), &[4, 4]);
//!
//! // Write a shard (inner chunks encoded in parallel; `None` would mean "all fill").
//! let values: Vec<f32> = (0..64 * 64).map(|i| i as f32).collect();
//! let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
//! let store = RecordingStore::new(MemoryStore::new());
//! let key = StoreKey::new("array/c/0/0");
//! store.set(&key, codec.encode_shard(ArrayBytes::fixed(bytes))?.unwrap()).await?;
//! store.clear();
//!
//! // Read rows 10..20, columns 30..40: two requests, four inner chunks.
//! let region = Region::try_new(vec![10..20, 30..40])?;
//! let fetch = codec.fetch(&store, &key, &region).await?.expect("the shard exists");
//! assert_eq!(store.stats().calls(), 2);
//!
//! let mut out = vec![0u8; 10 * 10 * 4];
//! let mut view = ArrayViewMut::new(&mut out, &[10, 10], 4)?;
//! codec.decode_fetched_into_view(&fetch, &region, &mut view)?;
//! assert_eq!(f32::from_ne_bytes(out[..4].try_into()?), (10 * 64 + 30) as f32);
//!
//! // Partial writes re-encode only the inner chunks they touch.
//! let stored = store.get(&key).await?;
//! let ones: Vec<u8> = [1f32; 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
//! let merged = codec.merge_region(stored, &Region::try_new(vec![0..2, 0..2])?, &ArrayBytes::fixed(ones))?;
//! assert!(merged.is_some());
//! # Ok(())
//! # }
//! ```
//!
//! # Bad input
//!
//! A shard is data from outside: an index entry pointing outside the shard or into the
//! index, `offset + nbytes` overflowing, half an empty marker, a shard shorter than its index,
//! a failed index checksum, a corrupt inner chunk, a `chunk_shape` that does not divide the
//! shard shape, are all typed [`Error`]s naming the shard (its store key when known) and the
//! inner chunk, never panics. (One check needs the shard's size, which a partial read of a
//! shard whose index is at its end does not learn: there, an entry pointing into the index is
//! found only when the whole shard is read; the inner chunk's own codecs, such as `crc32c`,
//! catch the bytes it reads.) Through a codec chain they arrive as `zarr_codecs::Error::External`, through the
//! transformer as `zarr_store::Error::Wrapper`; both keep this crate's error as the source.
//!
//! # Feature flags
//!
//! None.
//!
//! # Why it looks like this
//!
//! - The array engine wants the I/O on its async runtime and the decoding on its CPU pool, so
//!   reads are split into [`ShardingCodec::fetch`] (async, `Send`) and the `decode_fetched*`
//!   methods (synchronous, parallel).
//! - Inner chunks decode into disjoint subviews of one output buffer
//!   (`zarr_codecs::ArrayViewMut`): no intermediate copy per inner chunk.
//! - The transformer and the codec share the index type and the shard layout, so the same
//!   bytes come out of both (see `docs/sharding.md`).

mod codec;
mod error;
mod fetch;
mod index;
mod nd;
mod transformer;

pub use codec::{EncodedChunks, IndexLocation, NAME, ShardingCodec, register};
pub use error::{Error, Result, ShardName};
pub use fetch::{COALESCE_GAP, ShardFetch};
pub use index::{EMPTY_ENTRY, ShardIndex};
pub use transformer::{
    LEGACY_TRANSFORMER_URL, ShardingTransformer, ShardingTransformerConfig, TRANSFORMER_NAME,
};
