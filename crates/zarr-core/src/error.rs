//! The error type of `zarr-core`.

use std::fmt;

/// The result type of `zarr-core`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The kind of extension point an unknown name was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExtensionKind {
    /// `data_type`.
    DataType,
    /// `chunk_grid`.
    ChunkGrid,
    /// `chunk_key_encoding`.
    ChunkKeyEncoding,
    /// An entry of `codecs`.
    Codec,
    /// An entry of `storage_transformers`.
    StorageTransformer,
}

impl fmt::Display for ExtensionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::DataType => "data type",
            Self::ChunkGrid => "chunk grid",
            Self::ChunkKeyEncoding => "chunk key encoding",
            Self::Codec => "codec",
            Self::StorageTransformer => "storage transformer",
        })
    }
}

/// Displays an error followed by each of its causes, joined by `": "`.
///
/// The errors of the `zarr` crates follow the Rust convention of saying in `Display` what
/// failed and where, and leaving the cause to [`source()`](std::error::Error::source): a
/// corrupt chunk displays as `array /temperature, chunk temperature/c/0/1`, and its source
/// says why (a zstd frame that does not decode, say). Reporters that walk the chain (`anyhow`'s `{:#}`, `eyre`)
/// print the whole story; `ErrorChain` does the same for callers who want one line:
///
/// ```
/// use zarr_core::{ErrorChain, NodePath};
///
/// let error = NodePath::new("/a/../b").unwrap_err();
/// assert_eq!(error.to_string(), r#"invalid node path "/a/../b""#);
/// let line = ErrorChain(&error).to_string();
/// assert!(line.starts_with(r#"invalid node path "/a/../b": invalid node name "..": "#), "{line}");
/// ```
///
/// A cause whose text is empty, or that the line already ends with (errors of other crates
/// that do repeat their source), is skipped.
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut last = self.0.to_string();
        f.write_str(&last)?;
        let mut cause = self.0.source();
        while let Some(error) = cause {
            let text = error.to_string();
            if !text.is_empty() && !last.ends_with(&text) {
                write!(f, ": {text}")?;
                last = text;
            }
            cause = error.source();
        }
        Ok(())
    }
}

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Everything that can go wrong while parsing, validating or computing with Zarr metadata.
///
/// Every variant names the offending field (as a JSON path such as
/// `chunk_grid.configuration.chunk_shape[1]`) or value, so that a user can find the mistake in
/// the document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The document is not valid JSON, or its top level is not an object.
    #[error("metadata is not a valid JSON document")]
    Json(#[source] serde_json::Error),

    /// The document's top level is not a JSON object.
    #[error("metadata document must be a JSON object, found {found}")]
    NotAnObject {
        /// What was found instead (`array`, `string`, ...).
        found: &'static str,
    },

    /// A required field is absent.
    #[error("required metadata field `{field}` is missing")]
    MissingField {
        /// The field's JSON path.
        field: String,
    },

    /// A field is present but its value breaks a rule of the specification.
    #[error("metadata field `{field}` is invalid: {reason}")]
    InvalidField {
        /// The field's JSON path.
        field: String,
        /// What rule the value breaks.
        reason: String,
    },

    /// A field that readers must understand is not known to this implementation.
    #[error(
        "metadata field `{field}` is not understood (a field readers may ignore must be an \
         object with \"must_understand\": false)"
    )]
    UnknownField {
        /// The field's JSON path.
        field: String,
    },

    /// An extension (data type, chunk grid, codec, ...) is not known to this implementation.
    #[error("unknown {kind} `{name}` in `{field}`")]
    UnknownExtension {
        /// Which extension point.
        kind: ExtensionKind,
        /// The extension's name.
        name: String,
        /// The field's JSON path.
        field: String,
    },

    /// `"must_understand": false` was set on an extension point that does not allow it.
    #[error("`must_understand: false` is not allowed on `{field}`")]
    MustUnderstandNotAllowed {
        /// The field's JSON path.
        field: String,
    },

    /// A fill value does not fit its data type.
    #[error("invalid fill value {value} for data type {data_type}: {reason}")]
    InvalidFillValue {
        /// The data type's name.
        data_type: String,
        /// The offending JSON value, as JSON text.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A node name breaks the naming rules of the specification.
    #[error("invalid node name {name:?}: {reason}")]
    InvalidNodeName {
        /// The offending name.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },

    /// A node path is malformed.
    #[error("invalid node path {path:?}")]
    InvalidNodePath {
        /// The offending path.
        path: String,
        /// The invalid name inside it.
        #[source]
        source: Box<Error>,
    },

    /// A computation on shapes, offsets or element counts overflows `u64`.
    #[error("{what} overflows u64")]
    Overflow {
        /// What was being computed.
        what: String,
    },

    /// Two things that must have the same number of dimensions do not.
    #[error("{what} has {found} dimensions, expected {expected}")]
    RankMismatch {
        /// What has the wrong rank.
        what: String,
        /// The rank it should have.
        expected: usize,
        /// The rank it has.
        found: usize,
    },

    /// A region (or an element) lies outside the array.
    #[error("region {region} lies outside the array of shape {shape:?}")]
    RegionOutOfBounds {
        /// The region, printed as `[start..end, ...]`.
        region: String,
        /// The array shape.
        shape: Vec<u64>,
    },

    /// A region has a range whose start lies after its end.
    #[error("region dimension {dimension} has start {start} greater than end {end}")]
    InvalidRegion {
        /// The dimension of the offending range.
        dimension: usize,
        /// The range's start.
        start: u64,
        /// The range's end.
        end: u64,
    },

    /// A chunk index lies outside the chunk grid.
    #[error("chunk {chunk:?} lies outside the chunk grid of shape {grid_shape:?}")]
    ChunkOutOfBounds {
        /// The chunk's grid indices.
        chunk: Vec<u64>,
        /// The grid shape (number of chunks per dimension).
        grid_shape: Vec<u64>,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidField`].
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidField {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::MissingField`].
    pub(crate) fn missing(field: impl Into<String>) -> Self {
        Self::MissingField {
            field: field.into(),
        }
    }

    /// Shorthand for [`Error::Overflow`].
    pub(crate) fn overflow(what: impl Into<String>) -> Self {
        Self::Overflow { what: what.into() }
    }
}
