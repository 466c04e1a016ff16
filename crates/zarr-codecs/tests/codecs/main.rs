//! Integration tests of `zarr-codecs`, in one test binary.

#![allow(clippy::single_range_in_vec_init)]

mod bad_input;
mod chain;
mod corruption;
mod fixtures;
mod properties;

use zarr_codecs::ChunkRepresentation;
use zarr_core::{DataType, FillValue};

/// A representation with the data type's default fill value.
fn repr(shape: &[u64], data_type: DataType) -> ChunkRepresentation {
    let fill = FillValue::default_for(&data_type);
    ChunkRepresentation::try_new(shape.to_vec(), data_type, fill).unwrap()
}

/// Parse a JSON list of codec metadata.
fn codecs(json: serde_json::Value) -> Vec<zarr_core::ExtensionObject> {
    json.as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, v)| zarr_core::ExtensionObject::from_json(v, &format!("codecs[{i}]")).unwrap())
        .collect()
}
