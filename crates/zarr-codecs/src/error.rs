//! The error type of `zarr-codecs`.

/// The result type of `zarr-codecs`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while building a codec chain, encoding or decoding a chunk.
///
/// Variants name the codec involved (by its metadata name, e.g. `zstd`) so that a caller
/// that adds the chunk key (as `zarr-array` does) gives a complete account of what failed and
/// where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error from `zarr-core` (metadata, data types, overflowing shapes).
    #[error(transparent)]
    Core(#[from] zarr_core::Error),

    /// A codec in the metadata is not in the registry and is not marked
    /// `"must_understand": false`.
    #[error("unknown codec `{name}` in `codecs[{index}]`")]
    UnknownCodec {
        /// The codec's name.
        name: String,
        /// Its position in the codec list.
        index: usize,
    },

    /// A codec's configuration is invalid.
    #[error("invalid configuration for codec `{codec}`: {reason}")]
    InvalidConfiguration {
        /// The codec's name.
        codec: String,
        /// What is wrong.
        reason: String,
    },

    /// A codec cannot take the representation (shape, data type) it is given.
    #[error("codec `{codec}` cannot be applied here: {reason}")]
    IncompatibleRepresentation {
        /// The codec's name.
        codec: String,
        /// Why not.
        reason: String,
    },

    /// The codec list breaks the chain rules: exactly one array->bytes codec, with
    /// array->array codecs before it and bytes->bytes codecs after it.
    #[error("invalid codec chain: {reason}")]
    InvalidChain {
        /// Which rule is broken.
        reason: String,
    },

    /// A chunk representation is invalid (a fill value that does not fit its data type, a
    /// shape whose byte size overflows).
    #[error("invalid chunk representation: {reason}")]
    InvalidRepresentation {
        /// What is wrong.
        reason: String,
    },

    /// A buffer as large as asked for (a chunk, a shard, its decoded form, a region's
    /// values) could not be allocated. Chunks far larger than memory come from chunk shapes
    /// that are too large (or swapped with the array's shape), or from malformed metadata.
    #[error("cannot allocate {bytes} bytes for {what}")]
    OutOfMemory {
        /// What the buffer was for.
        what: String,
        /// The size asked for.
        bytes: usize,
    },

    /// Variable-length array bytes are malformed (offsets that do not start at 0, decrease, or
    /// do not end at the length of the values).
    #[error("invalid variable-length array bytes: {reason}")]
    InvalidOffsets {
        /// What is wrong.
        reason: String,
    },

    /// An array given to encode, or produced by a decoder, does not match its representation.
    #[error("codec `{codec}`: expected {expected}, found {found}")]
    UnexpectedArray {
        /// The codec (or `chain`) that found the mismatch.
        codec: String,
        /// What was expected, e.g. `48 bytes` or `12 elements`.
        expected: String,
        /// What was found.
        found: String,
    },

    /// Decoded data has the wrong size: a frame that decodes to fewer or more bytes than the
    /// chunk needs.
    #[error("codec `{codec}` decoded {found} bytes, expected {expected}")]
    DecodedSizeMismatch {
        /// The codec.
        codec: String,
        /// The expected size (or the most that was allowed) in bytes.
        expected: String,
        /// What the data decoded to (or claims to decode to).
        found: u64,
    },

    /// Encoded data claims (or tries to produce) more decoded bytes than the chunk can hold.
    /// Nothing is allocated for such a frame.
    #[error(
        "codec `{codec}` input claims {claimed} decoded bytes, more than the {limit} the chunk \
         allows"
    )]
    DecodedSizeLimit {
        /// The codec.
        codec: String,
        /// The claimed (or produced) size; for streams without a size, the first size seen to
        /// exceed the limit.
        claimed: u64,
        /// The most the chunk can hold.
        limit: u64,
    },

    /// Encoded data ends before it should.
    #[error("codec `{codec}`: encoded data is truncated ({reason})")]
    Truncated {
        /// The codec.
        codec: String,
        /// What was missing.
        reason: String,
    },

    /// Encoded data is malformed.
    #[error("codec `{codec}`: encoded data is corrupt ({reason})")]
    Corrupt {
        /// The codec.
        codec: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A compression library reported an error while decoding.
    #[error("codec `{codec}` failed to decode")]
    Decompression {
        /// The codec.
        codec: String,
        /// The library's error.
        #[source]
        source: std::io::Error,
    },

    /// A compression library reported an error while encoding.
    #[error("codec `{codec}` failed to encode: {reason}")]
    Compression {
        /// The codec.
        codec: String,
        /// What the library said.
        reason: String,
    },

    /// A stored checksum does not match the data.
    #[error(
        "codec `{codec}`: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
    )]
    ChecksumMismatch {
        /// The codec.
        codec: String,
        /// The checksum stored with the data.
        stored: u32,
        /// The checksum of the data.
        computed: u32,
    },

    /// An element is not a valid value of its data type (a decoded string that is not
    /// UTF-8), or a codec cannot store it (a NaN that a `numcodecs.astype` to an integer
    /// type meets).
    ///
    /// From a [`CodecChain`](crate::CodecChain), `index` is the element's position in the
    /// chunk, in C order, whatever `transpose` codecs the chain holds. (Behind an
    /// array->array codec that cannot place its elements, the chain wraps this error as
    /// [`Error::External`] naming that codec, and `index` is in the input of `codec`.)
    #[error(
        "codec `{codec}`: element {index} of the chunk (in C order) is not a valid {data_type} \
         ({reason})"
    )]
    InvalidElement {
        /// The codec.
        codec: String,
        /// The element's position in the chunk (C order).
        index: u64,
        /// The data type.
        data_type: String,
        /// What is wrong.
        reason: String,
    },

    /// A chain that skipped an ignorable (`"must_understand": false`) codec cannot encode:
    /// readers that know the codec would apply it to data it never touched.
    #[error("cannot encode: the chain skipped codec `{name}` (must_understand: false)")]
    SkippedCodec {
        /// The skipped codec's name.
        name: String,
    },

    /// A region passed to a partial decode lies outside the chunk or does not match it.
    #[error("invalid region for partial decoding: {reason}")]
    InvalidRegion {
        /// What is wrong.
        reason: String,
    },

    /// An output buffer has the wrong length.
    #[error("output buffer holds {found} bytes, expected {expected}")]
    OutputSize {
        /// The length the output must have.
        expected: u64,
        /// Its length.
        found: u64,
    },

    /// An error from a codec defined in another crate, kept whole (as its source) so callers
    /// can downcast it: the sharding codec reports a bad shard index this way.
    #[error("codec `{codec}` failed")]
    External {
        /// The codec.
        codec: String,
        /// The codec's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// An operation the codec does not offer (decoding in place, decoding variable-length
    /// data into a fixed buffer).
    #[error("codec `{codec}` does not support {operation}")]
    Unsupported {
        /// The codec.
        codec: String,
        /// What was asked for.
        operation: String,
    },
}

impl Error {
    pub(crate) fn config(codec: &str, reason: impl Into<String>) -> Self {
        Self::InvalidConfiguration {
            codec: codec.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn incompatible(codec: &str, reason: impl Into<String>) -> Self {
        Self::IncompatibleRepresentation {
            codec: codec.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn corrupt(codec: &str, reason: impl Into<String>) -> Self {
        Self::Corrupt {
            codec: codec.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn truncated(codec: &str, reason: impl Into<String>) -> Self {
        Self::Truncated {
            codec: codec.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn unsupported(codec: &str, operation: impl Into<String>) -> Self {
        Self::Unsupported {
            codec: codec.to_owned(),
            operation: operation.into(),
        }
    }

    pub(crate) fn output_size(expected: usize, found: usize) -> Self {
        Self::OutputSize {
            expected: expected as u64,
            found: found as u64,
        }
    }
}
