//! The crate's error type.

use zarr_core::DataType;

/// What can go wrong opening, reading or writing arrays and groups.
///
/// Errors that concern one chunk name the array and the chunk's store key, so a corrupt chunk
/// can be found (and the rest of the array stays readable: the error stops one operation,
/// it does not poison the array).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Metadata or arguments broke a rule of the format.
    #[error(transparent)]
    Core(#[from] zarr_core::Error),

    /// The store failed.
    #[error(transparent)]
    Store(#[from] zarr_store::Error),

    /// A codec could not be built from the array's metadata.
    #[error("codec error in array {array}")]
    Codecs {
        /// The array's path.
        array: String,
        /// What the codec layer said.
        #[source]
        source: Box<zarr_codecs::Error>,
    },

    /// A chunk could not be decoded or encoded.
    #[error("array {array}, chunk {key}")]
    Chunk {
        /// The array's path.
        array: String,
        /// The chunk's store key.
        key: String,
        /// What the codec said.
        #[source]
        source: Box<zarr_codecs::Error>,
    },

    /// An element of a chunk has a value its data type or a codec cannot take (a string that
    /// is not UTF-8, a number a `numcodecs` filter cannot convert), named by its indices in
    /// the array. Reported in place of [`Error::Chunk`] or [`Error::Shard`] when the codec
    /// names the element: codec chains place it through `transpose` codecs, and the sharding
    /// codec places it in its shard. (Behind a codec that cannot say where its elements go,
    /// such as `numcodecs.packbits`, it stays [`Error::Chunk`].)
    #[error("array {array}, element {element:?} (chunk {key})")]
    Element {
        /// The array's path.
        array: String,
        /// The chunk's store key.
        key: String,
        /// The element's indices in the array.
        element: Vec<u64>,
        /// What the codec said (a [`zarr_codecs::Error::InvalidElement`]).
        #[source]
        source: Box<zarr_codecs::Error>,
    },

    /// A shard could not be read, decoded or encoded.
    #[error("array {array}, shard {key}")]
    Shard {
        /// The array's path.
        array: String,
        /// The shard's store key.
        key: String,
        /// What the sharding layer said.
        #[source]
        source: Box<zarr_sharding::Error>,
    },

    /// The sharding codec or transformer could not be built from the array's metadata.
    #[error("sharding error in array {array}")]
    Sharding {
        /// The array's path.
        array: String,
        /// What the sharding layer said.
        #[source]
        source: Box<zarr_sharding::Error>,
    },

    /// Variable-length values are malformed (invalid UTF-8, offsets that do not fit).
    #[error("invalid variable-length values in array {array}")]
    Vlen {
        /// The array's path.
        array: String,
        /// What the variable-length layer said.
        #[source]
        source: Box<zarr_vlen::Error>,
    },

    /// Variable-length values a caller built are malformed, for example with
    /// [`VlenStrings::from_strs`](zarr_vlen::VlenStrings::from_strs) (offsets that overflow
    /// `i32`). Converted by `?`; errors in an array's stored values are [`Error::Vlen`],
    /// which names the array.
    #[error(transparent)]
    VlenValues(#[from] zarr_vlen::Error),

    /// No node (no `zarr.json`) at the path.
    #[error("no Zarr node at {path:?} (no {key:?} in the store)")]
    NodeNotFound {
        /// The node's path.
        path: String,
        /// The metadata key that is missing.
        key: String,
    },

    /// The node a handle describes was replaced through another handle (or process) since
    /// this one opened it: re-created with another data type, chunk grid, chunk key
    /// encoding, fill value, codecs or storage transformers, or stored now in the other
    /// Zarr format. A change of its metadata through the old handle would overwrite the new
    /// node's definition, so it is refused; open the node again.
    #[error("{path:?} was replaced since this handle opened it ({reason}); open it again")]
    NodeReplaced {
        /// The node's path.
        path: String,
        /// What differs.
        reason: String,
    },

    /// A node's `zarr.json` is not a valid Zarr v3 document (not JSON, a field missing or
    /// malformed, an inline consolidated record that does not parse, ...).
    #[error("metadata of {path:?} ({key})")]
    Metadata {
        /// The node's path.
        path: String,
        /// The store key of the document.
        key: String,
        /// What is wrong, naming the field.
        #[source]
        source: Box<zarr_core::Error>,
    },

    /// A Zarr v2 node's metadata (`.zarray`, `.zgroup` or `.zattrs`) is malformed or has no
    /// v3 equivalent here (an unsupported filter or compressor, ...), or an array to be
    /// written as Zarr v2 has something v2 cannot store (a sharding codec, dimension names,
    /// a `bfloat16` data type, ...).
    #[error("Zarr v2 metadata of {path:?}")]
    V2Metadata {
        /// The node's path.
        path: String,
        /// What is wrong, naming the file and field.
        #[source]
        source: Box<zarr_core::Error>,
    },

    /// The node at the path is a group where an array was expected, or the reverse.
    #[error("the node at {path:?} is {found}, not {expected}")]
    WrongNodeType {
        /// The node's path.
        path: String,
        /// `"an array"` or `"a group"`.
        expected: &'static str,
        /// What is there.
        found: &'static str,
    },

    /// Consolidated metadata cannot be read or written for the group: it has none
    /// ([`Group::open_consolidated`](crate::Group::open_consolidated)), or the hierarchy
    /// below it mixes Zarr v2 and v3 nodes
    /// ([`Group::consolidate_metadata`](crate::Group::consolidate_metadata)).
    #[error("consolidated metadata of group {path:?}: {reason}")]
    Consolidated {
        /// The group's path.
        path: String,
        /// What is wrong.
        reason: String,
    },

    /// Creating a node where an array already is, or under an array.
    #[error("cannot create {path:?}: {reason}")]
    NodeExists {
        /// The path asked for.
        path: String,
        /// Why not.
        reason: String,
    },

    /// The element type of a buffer does not match the array's data type.
    #[error("array {array} holds {data_type}; it cannot be read as or written from {element}")]
    ElementType {
        /// The array's path.
        array: String,
        /// The array's data type.
        data_type: String,
        /// The Rust element type asked for.
        element: std::borrow::Cow<'static, str>,
    },

    /// A region cannot be made from the ranges given (a negative bound, an open range such
    /// as `..` where no array shape is at hand, an open range for an array of another
    /// rank).
    #[error("invalid region: {reason}")]
    Region {
        /// What is wrong.
        reason: String,
    },

    /// A caller's buffer does not hold the region.
    #[error("the buffer holds {found} elements, the region {expected}")]
    BufferSize {
        /// Elements the region has.
        expected: u64,
        /// Elements the buffer has.
        found: u64,
    },

    /// A caller's byte buffer (`read_bytes_into`, `write_bytes`) is not a whole number of
    /// elements, so it cannot hold the region.
    #[error(
        "the buffer holds {found} bytes, the region {expected} ({elements} elements of \
         {element_size} bytes)"
    )]
    BufferBytes {
        /// Bytes the region has.
        expected: u64,
        /// Bytes the buffer has.
        found: u64,
        /// Elements the region has.
        elements: u64,
        /// The size of one element in bytes.
        element_size: usize,
    },

    /// Decoded values are not valid for the element type (a `bool` that is neither 0 nor 1).
    #[error("array {array}: {reason}")]
    InvalidValue {
        /// The array's path.
        array: String,
        /// What was wrong.
        reason: String,
    },

    /// An operation the array cannot do (a typed read of a variable-length array, ...).
    #[error("array {array}: {reason}")]
    Unsupported {
        /// The array's path.
        array: String,
        /// What is not supported.
        reason: String,
    },

    /// An attribute, or the attributes as a whole, did not deserialize as the type asked for
    /// (`attribute::<T>`, `attributes_as::<T>`).
    #[error("cannot read {} of {node} as the type asked for", attribute_what(.key.as_deref()))]
    Attribute {
        /// The array's or group's path.
        node: String,
        /// The attribute's name; `None` for the attributes as a whole.
        key: Option<String>,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },

    /// The blocking API was called from inside an async runtime, where blocking would stall
    /// it.
    #[error("the blocking API was called from inside an async runtime; use the async API there")]
    BlockingInAsync,

    /// A worker task failed (panicked or was cancelled).
    #[error("a worker task failed: {0}")]
    Task(String),
}

/// How [`Error::Attribute`] names what did not deserialize.
fn attribute_what(key: Option<&str>) -> String {
    match key {
        Some(key) => format!("attribute {key:?}"),
        None => "the attributes".to_owned(),
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error for a buffer of `len` bytes given for a region of `elements` elements of
    /// `element_size` bytes: in elements when the buffer holds whole elements, else in bytes.
    pub(crate) fn buffer_size(elements: u64, element_size: usize, len: usize) -> Self {
        let size = element_size.max(1);
        if len.is_multiple_of(size) {
            Self::BufferSize {
                expected: elements,
                found: (len / size) as u64,
            }
        } else {
            Self::BufferBytes {
                expected: elements.saturating_mul(size as u64),
                found: len as u64,
                elements,
                element_size: size,
            }
        }
    }

    pub(crate) fn element_type(
        array: &str,
        data_type: &DataType,
        element: impl Into<std::borrow::Cow<'static, str>>,
    ) -> Self {
        Self::ElementType {
            array: array.to_owned(),
            data_type: data_type.to_string(),
            element: element.into(),
        }
    }

    pub(crate) fn unsupported(array: &str, reason: impl Into<String>) -> Self {
        Self::Unsupported {
            array: array.to_owned(),
            reason: reason.into(),
        }
    }
}
