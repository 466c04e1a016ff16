//! The crate's error type.

use std::path::PathBuf;

use crate::{ByteRange, StoreKey};

/// A `Result` whose error defaults to this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a store.
///
/// A missing key is not an error: reads answer `Ok(None)` for it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A string is not a valid store key.
    #[error("invalid store key {key:?}: {reason}")]
    InvalidKey {
        /// The rejected string.
        key: String,
        /// Why it was rejected.
        reason: &'static str,
    },

    /// A string is not a valid store prefix.
    #[error("invalid store prefix {prefix:?}: {reason}")]
    InvalidPrefix {
        /// The rejected string.
        prefix: String,
        /// Why it was rejected.
        reason: &'static str,
    },

    /// A byte range that cannot exist whatever the value: its end is before its start, or its
    /// end does not fit in a `u64`.
    #[error("invalid byte range: start {start} with {what} {value}")]
    InvalidByteRange {
        /// The first byte of the range.
        start: u64,
        /// Which quantity was wrong (`"end"` or `"length"`).
        what: &'static str,
        /// Its value.
        value: u64,
    },

    /// A byte range reaches beyond the end of the value it was applied to.
    #[error("byte range {range} is beyond the end of the {size}-byte value{}", key_context(key.as_ref()))]
    RangeOutOfBounds {
        /// The key whose value was read, when known.
        key: Option<StoreKey>,
        /// The requested range.
        range: ByteRange,
        /// The size of the value in bytes.
        size: u64,
    },

    /// Two writes of one `set_partial_values` call overlap in the same value.
    #[error(
        "overlapping partial writes to {key}: bytes {first_start}..{first_end} and {second_start}..{second_end}"
    )]
    OverlappingWrites {
        /// The key written twice.
        key: StoreKey,
        /// Start of the earlier write.
        first_start: u64,
        /// End (exclusive) of the earlier write.
        first_end: u64,
        /// Start of the later write.
        second_start: u64,
        /// End (exclusive) of the later write.
        second_end: u64,
    },

    /// A value or offset does not fit in this machine's memory (`usize`), or an offset plus a
    /// length overflows `u64`.
    #[error("{what} of {value} bytes is too large for this platform{}", key_context(key.as_ref()))]
    TooLarge {
        /// What was too large (for example `"value"` or `"partial write end"`).
        what: &'static str,
        /// The size in bytes (saturated at `u64::MAX`).
        value: u64,
        /// The key involved, when known.
        key: Option<StoreKey>,
    },

    /// The store refuses writes (for example a store opened from an `http(s)://` URL).
    #[error("{store} is read-only: cannot {operation}")]
    ReadOnly {
        /// A description of the store.
        store: String,
        /// The refused operation.
        operation: &'static str,
    },

    /// A key or prefix would reach outside the root of a [`FilesystemStore`] through a symbolic
    /// link, which the store never follows.
    ///
    /// [`FilesystemStore`]: crate::FilesystemStore
    #[error("{what} {name:?} crosses the symbolic link {}, which the store does not follow", path.display())]
    SymlinkRefused {
        /// `"key"` or `"prefix"`.
        what: &'static str,
        /// The key or prefix.
        name: String,
        /// The symbolic link that was found.
        path: PathBuf,
    },

    /// A filesystem entry at a key's path is neither a regular file nor a directory.
    #[error("{} is not a regular file", path.display())]
    NotAFile {
        /// The path of the entry.
        path: PathBuf,
    },

    /// A value or prefix cannot be written because a value occupies one of its parent
    /// "directories" (the filesystem cannot hold both `a` and `a/b`).
    #[error("cannot write {key:?}: {} is a value, not a directory", path.display())]
    ParentIsAValue {
        /// The key being written.
        key: String,
        /// The path of the value in the way.
        path: PathBuf,
    },

    /// An I/O error on the local filesystem.
    #[error("cannot {operation} {}", path.display())]
    Io {
        /// What the store was doing (for example `"read"`, `"rename"`).
        operation: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// An error from an `object_store` backend.
    #[error("object store cannot {operation} {path:?}")]
    ObjectStore {
        /// What the adapter was doing (for example `"get"`, `"list"`).
        operation: &'static str,
        /// The object path involved.
        path: String,
        /// The backend's error.
        #[source]
        source: object_store::Error,
    },

    /// A URL could not be parsed or names a store this build cannot open.
    #[error("cannot open a store from {url:?}: {reason}")]
    UnsupportedUrl {
        /// The URL.
        url: String,
        /// Why it cannot be opened.
        reason: String,
    },

    /// A URL could not be parsed.
    #[error("cannot parse the store URL {url:?}{}", url_hint(.source))]
    InvalidUrl {
        /// The URL.
        url: String,
        /// The parser's error.
        #[source]
        source: url::ParseError,
    },

    /// A configuration option given with a URL is not known to its backend.
    #[error("unknown option {key:?} for {backend} stores")]
    UnknownOption {
        /// The option's name.
        key: String,
        /// The backend (for example `"s3"`).
        backend: &'static str,
    },

    /// A zip archive (or an entry in it) is malformed or truncated: the end records, the
    /// central directory or a local header cannot be read, or an entry's data lies outside
    /// the archive.
    #[error("{archive} is not a valid zip archive: {reason}")]
    InvalidZip {
        /// The archive (its path, or its key in another store).
        archive: String,
        /// What is wrong, and where.
        reason: String,
    },

    /// A zip entry uses what [`ZipStore`](crate::ZipStore) cannot read: encryption, or a
    /// compression method other than stored and deflate.
    #[error("cannot read {entry:?} in {archive}: {reason}")]
    UnsupportedZipEntry {
        /// The archive.
        archive: String,
        /// The entry's name.
        entry: String,
        /// What it uses.
        reason: String,
    },

    /// A zip entry's data does not match the CRC-32 its archive records for it.
    #[error(
        "{entry:?} in {archive} is corrupt: its data has CRC-32 {actual:08x}, the archive \
         records {expected:08x}"
    )]
    ZipChecksumMismatch {
        /// The archive.
        archive: String,
        /// The entry's name.
        entry: String,
        /// The CRC-32 the archive records.
        expected: u32,
        /// The CRC-32 of the data read.
        actual: u32,
    },

    /// A reference set (kerchunk's JSON, fsspec's reference specification) is malformed, or
    /// uses what [`References`](crate::References) cannot evaluate.
    #[error("invalid reference set: {reason}")]
    InvalidReferences {
        /// What is wrong, and where.
        reason: String,
    },

    /// The file a reference points into cannot be read: no rule of its
    /// [`ReferenceStore`](crate::ReferenceStore) resolves the URL, the file is missing or
    /// shorter than the reference, or reading it failed.
    #[error("reference {key} points into {url:?}, which cannot be read: {reason}")]
    UnreachableReference {
        /// The reference's key.
        key: StoreKey,
        /// The file's URL or path.
        url: String,
        /// Why it cannot be read.
        reason: String,
        /// The error reading it, when there is one.
        #[source]
        source: Option<Box<Error>>,
    },

    /// N5 metadata (`attributes.json`) that cannot be read as Zarr, or Zarr metadata that an
    /// N5 container cannot hold (see [`N5Store`](crate::N5Store)).
    #[error("N5 metadata at {key}: {reason}")]
    N5Metadata {
        /// The key read or written.
        key: StoreKey,
        /// What is wrong.
        reason: String,
    },

    /// An error from a store wrapper defined in another crate (such as the sharding storage
    /// transformer finding a corrupt shard index), kept whole as the source so callers can
    /// downcast it.
    #[error("{wrapper} failed")]
    Wrapper {
        /// The wrapper (for example `"sharding transformer"`).
        wrapper: &'static str,
        /// The wrapper's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },

    /// A background task doing blocking I/O panicked or was cancelled.
    #[error("a blocking store task failed")]
    TaskFailed(#[source] tokio::task::JoinError),
}

fn key_context(key: Option<&StoreKey>) -> String {
    match key {
        Some(key) => format!(" at {key}"),
        None => String::new(),
    }
}

impl Error {
    /// Attach a key to a [`RangeOutOfBounds`](Error::RangeOutOfBounds) or
    /// [`TooLarge`](Error::TooLarge) error that was produced without one.
    #[must_use]
    pub fn with_key(self, at: &StoreKey) -> Self {
        match self {
            Self::RangeOutOfBounds {
                key: None,
                range,
                size,
            } => Self::RangeOutOfBounds {
                key: Some(at.clone()),
                range,
                size,
            },
            Self::TooLarge {
                what,
                value,
                key: None,
            } => Self::TooLarge {
                what,
                value,
                key: Some(at.clone()),
            },
            other => other,
        }
    }
}

/// What to write instead, for the URL mistakes people make most.
fn url_hint(error: &url::ParseError) -> &'static str {
    match error {
        url::ParseError::RelativeUrlWithoutBase => {
            " (a URL starts with a scheme: s3://bucket/prefix, gs://, az://, https://, \
             memory:///; a local directory is file:///absolute/path, or use FilesystemStore)"
        }
        _ => "",
    }
}
