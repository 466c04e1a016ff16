//! The error type of `zarr-sharding`.

use std::fmt;
use std::ops::Range;

use zarr_store::StoreKey;

/// The result type of `zarr-sharding`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where a shard came from, for error messages: a store key, or "in memory" when a shard is
/// decoded from bytes the caller holds (the codec path, where no key is known).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ShardName(pub Option<StoreKey>);

impl fmt::Display for ShardName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(key) => write!(f, "shard {key}"),
            None => f.write_str("shard"),
        }
    }
}

impl From<&StoreKey> for ShardName {
    fn from(key: &StoreKey) -> Self {
        Self(Some(key.clone()))
    }
}

impl From<Option<&StoreKey>> for ShardName {
    fn from(key: Option<&StoreKey>) -> Self {
        Self(key.cloned())
    }
}

/// Everything that can go wrong while configuring, encoding, decoding or storing shards.
///
/// Problems with a shard's index name the shard (its store key when it is known) and the
/// inner chunk (its indices within the shard).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error from the codec layer (a codec of the inner chain or of the index chain).
    #[error(transparent)]
    Codec(#[from] zarr_codecs::Error),

    /// An error from the store below.
    #[error(transparent)]
    Store(#[from] zarr_store::Error),

    /// An error from `zarr-core` (regions, shapes).
    #[error(transparent)]
    Core(#[from] zarr_core::Error),

    /// The codec or transformer configuration is invalid; `field` is the JSON path of the
    /// offending member (such as `configuration.index_location`).
    #[error("invalid sharding configuration at `{field}`: {reason}")]
    InvalidConfiguration {
        /// Where in the metadata the problem is.
        field: String,
        /// What is wrong.
        reason: String,
    },

    /// The inner chunk shape does not divide the shard shape (required by `sharding_indexed`
    /// v1.0). (An inner chunk shape of the wrong rank is
    /// [`Error::InvalidConfiguration`].)
    #[error(
        "inner chunk shape {chunk_shape:?} does not divide shard shape {shard_shape:?} \
         (dimension {dimension})"
    )]
    ChunkShapeMismatch {
        /// The inner chunk shape (`chunk_shape`).
        chunk_shape: Vec<u64>,
        /// The shard shape (the outer chunk shape).
        shard_shape: Vec<u64>,
        /// The first dimension that does not fit.
        dimension: usize,
    },

    /// The shard is shorter than its index.
    #[error("{shard} is truncated: {size} bytes cannot hold its {index_size}-byte index")]
    ShardTooSmall {
        /// The shard.
        shard: ShardName,
        /// Its size in bytes.
        size: u64,
        /// The size of the encoded index.
        index_size: u64,
    },

    /// The shard index could not be decoded (a checksum mismatch, a wrong size).
    #[error("{shard}: cannot decode the shard index")]
    IndexDecode {
        /// The shard.
        shard: ShardName,
        /// The index codec's error.
        #[source]
        source: Box<zarr_codecs::Error>,
    },

    /// An index entry reaches outside the shard, or `offset + nbytes` overflows.
    #[error(
        "{shard}: index entry of inner chunk {chunk:?} (offset {offset}, nbytes {nbytes}) lies \
         outside the {}", size_text(*shard_size)
    )]
    EntryOutOfBounds {
        /// The shard.
        shard: ShardName,
        /// The inner chunk's indices within the shard.
        chunk: Vec<u64>,
        /// The entry's offset.
        offset: u64,
        /// The entry's length.
        nbytes: u64,
        /// The shard's size, when known (`None` when `offset + nbytes` overflows `u64`).
        shard_size: Option<u64>,
    },

    /// An index entry overlaps the bytes of the index itself.
    #[error(
        "{shard}: index entry of inner chunk {chunk:?} (offset {offset}, nbytes {nbytes}) \
         overlaps the index at bytes {}..{}", index.start, index.end
    )]
    EntryOverlapsIndex {
        /// The shard.
        shard: ShardName,
        /// The inner chunk's indices within the shard.
        chunk: Vec<u64>,
        /// The entry's offset.
        offset: u64,
        /// The entry's length.
        nbytes: u64,
        /// Where the index lies in the shard.
        index: Range<u64>,
    },

    /// An inner chunk failed to encode or decode.
    #[error("{shard}: inner chunk {chunk:?}")]
    InnerChunk {
        /// The shard.
        shard: ShardName,
        /// The inner chunk's indices within the shard.
        chunk: Vec<u64>,
        /// The codec error.
        #[source]
        source: Box<zarr_codecs::Error>,
    },

    /// The shard disappeared (or shrank) between reading its index and reading its chunks: a
    /// concurrent writer replaced or erased it.
    #[error("{shard} changed while it was being read")]
    ShardChanged {
        /// The shard.
        shard: ShardName,
    },

    /// A region does not fit the shard (wrong rank, or reaches past the shard shape), or a
    /// decode asks for a part of the shard that the fetch did not cover.
    #[error("invalid region {region} for a shard of shape {shard_shape:?}: {reason}")]
    InvalidRegion {
        /// The region.
        region: String,
        /// The shard shape.
        shard_shape: Vec<u64>,
        /// What is wrong.
        reason: String,
    },

    /// Data given to write does not match the region it is written to.
    #[error("data for region {region} does not fit: {reason}")]
    DataMismatch {
        /// The region.
        region: String,
        /// What is wrong.
        reason: String,
    },
}

fn size_text(size: Option<u64>) -> String {
    match size {
        Some(size) => format!("{size}-byte shard"),
        None => "shard (offset + nbytes overflows u64)".to_owned(),
    }
}

impl From<Error> for zarr_codecs::Error {
    /// Codec errors pass through unchanged; every other error is wrapped as
    /// [`zarr_codecs::Error::External`] naming `sharding_indexed`, so callers can downcast the
    /// source back to [`Error`].
    fn from(err: Error) -> Self {
        match err {
            Error::Codec(e) => e,
            other => zarr_codecs::Error::External {
                codec: crate::codec::NAME.to_owned(),
                source: Box::new(other),
            },
        }
    }
}

impl From<Error> for zarr_store::Error {
    /// Store errors pass through unchanged; every other error is wrapped as
    /// [`zarr_store::Error::Wrapper`] naming the sharding transformer, so callers can downcast
    /// the source back to [`Error`].
    fn from(err: Error) -> Self {
        match err {
            Error::Store(e) => e,
            other => zarr_store::Error::Wrapper {
                wrapper: "sharding transformer",
                source: Box::new(other),
            },
        }
    }
}
