//! Integration tests of `zarr-vlen`, one binary: the zarr-python fixture corpus, the
//! byte-exact examples of SPEC-NOTES section 5, round trips, partial decoding and bad input.

// A region of a 1-D chunk is a `Vec` holding one range, which is what this lint dislikes.
#![allow(clippy::single_range_in_vec_init)]

mod bad_input;
mod fixtures;
mod optional;
mod partial;
mod properties;
mod spec;
mod vlen_array;
mod zarrs_vlen;

use zarr_codecs::{ChunkRepresentation, CodecChain, CodecRegistry};
use zarr_core::{DataType, ExtensionObject, FillValue};

/// The default registry plus this crate's codecs.
pub(crate) fn registry() -> CodecRegistry {
    let mut registry = CodecRegistry::with_defaults();
    zarr_vlen::register(&mut registry);
    registry
}

/// A chain from codec metadata given as JSON, for chunks of `shape` of `data_type` with an
/// empty fill value.
pub(crate) fn chain(codecs: serde_json::Value, data_type: DataType, shape: &[u64]) -> CodecChain {
    let codecs: Vec<ExtensionObject> = codecs
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, c)| ExtensionObject::from_json(c, &format!("codecs[{i}]")).unwrap())
        .collect();
    CodecChain::from_metadata(&codecs, repr(data_type, shape), &registry()).unwrap()
}

/// A chunk representation with an empty fill value.
pub(crate) fn repr(data_type: DataType, shape: &[u64]) -> ChunkRepresentation {
    ChunkRepresentation::try_new(shape.to_vec(), data_type, FillValue::new(Vec::<u8>::new()))
        .unwrap()
}
