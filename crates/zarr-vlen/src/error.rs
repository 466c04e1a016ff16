//! The error type of `zarr-vlen`.

/// The result type of `zarr-vlen`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong building or converting variable-length arrays.
///
/// The codecs themselves ([`VlenUtf8Codec`](crate::VlenUtf8Codec),
/// [`VlenBytesCodec`](crate::VlenBytesCodec), [`VlenArrowCodec`](crate::VlenArrowCodec))
/// return [`zarr_codecs::Error`], so that a [`CodecChain`](zarr_codecs::CodecChain) reports
/// their failures like any other codec's; this type wraps it as [`Error::Codec`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// There are no offsets at all: `n` elements need `n + 1`.
    #[error("there are no offsets (n elements need n + 1 offsets, starting at 0)")]
    NoOffsets,

    /// The first offset is not 0.
    #[error("the first offset is {found}, not 0")]
    FirstOffset {
        /// The first offset.
        found: i64,
    },

    /// An offset is smaller than the one before it.
    #[error("offset {index} ({offset}) is less than offset {} ({previous})", index - 1)]
    DecreasingOffset {
        /// The position of the offending offset (element `index - 1` would have a negative
        /// length).
        index: usize,
        /// Its value.
        offset: i64,
        /// The offset before it.
        previous: i64,
    },

    /// The last offset is not the length of the values buffer.
    #[error("the last offset is {last}, but there are {values_len} value bytes")]
    LastOffset {
        /// The last offset.
        last: i64,
        /// The length of the values buffer.
        values_len: u64,
    },

    /// The values do not fit the offset type (more than `i32::MAX` bytes with 32-bit offsets).
    #[error("{values_len} value bytes do not fit {offset_type} offsets (use 64-bit offsets)")]
    OffsetOverflow {
        /// The number of value bytes.
        values_len: u64,
        /// `"int32"` or `"int64"`.
        offset_type: &'static str,
    },

    /// An element of a string array is not valid UTF-8.
    #[error("element {index} is not valid UTF-8 (error at byte {byte} of the values buffer)")]
    InvalidUtf8 {
        /// The element's index.
        index: usize,
        /// The position of the first invalid byte in the values buffer.
        byte: usize,
    },

    /// Fixed-size array bytes were given where variable-length elements are needed.
    #[error("expected variable-length elements, found {bytes} bytes of fixed-size elements")]
    NotVariableLength {
        /// The length of the fixed-size bytes.
        bytes: usize,
    },

    /// An Arrow array has null elements; Zarr's variable-length data has no validity bitmap.
    #[cfg(feature = "arrow")]
    #[error(
        "the Arrow array has {null_count} null elements; Zarr strings and bytes have no nulls \
         (replace them, e.g. by the fill value, first)"
    )]
    ArrowNulls {
        /// How many elements are null.
        null_count: usize,
    },

    /// An error from `zarr-codecs` (a codec failed, or a chunk did not match its
    /// representation).
    #[error(transparent)]
    Codec(#[from] zarr_codecs::Error),
}

impl Error {
    /// This error as a codec error of `codec`, for the codec trait methods: invalid UTF-8
    /// becomes [`zarr_codecs::Error::InvalidElement`], bad offsets
    /// [`zarr_codecs::Error::Corrupt`].
    pub(crate) fn into_codec(self, codec: &str) -> zarr_codecs::Error {
        match self {
            Self::Codec(e) => e,
            Self::InvalidUtf8 { index, byte } => zarr_codecs::Error::InvalidElement {
                codec: codec.to_owned(),
                index: index as u64,
                data_type: "string".into(),
                reason: format!("invalid UTF-8 at byte {byte} of the values"),
            },
            other => zarr_codecs::Error::Corrupt {
                codec: codec.to_owned(),
                reason: other.to_string(),
            },
        }
    }
}

impl From<Error> for zarr_codecs::Error {
    /// Codec errors pass through; the rest become [`zarr_codecs::Error::InvalidOffsets`]
    /// (invalid UTF-8 becomes [`zarr_codecs::Error::InvalidElement`]).
    fn from(e: Error) -> Self {
        match e {
            Error::Codec(e) => e,
            Error::InvalidUtf8 { .. } => e.into_codec("zarr-vlen"),
            other => Self::InvalidOffsets {
                reason: other.to_string(),
            },
        }
    }
}
