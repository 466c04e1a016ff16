//! Integration tests of `zarr-sharding`: one binary (link time), one module per topic.

// One-dimensional regions are vectors of one range: that is what they are, not a mistake.
#![allow(clippy::single_range_in_vec_init)]

mod bad_input;
mod fixtures;
mod properties;
mod requests;
mod spec;
mod transformer;

use std::sync::Arc;

use bytes::Bytes;
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, Codec, CodecRegistry, Result, VlenBytes,
};
use zarr_core::{DataType, ExtensionObject, FillValue};

/// A registry with the default codecs, sharding, and a test-only `vlen-utf8` (the real one
/// lives in `zarr-vlen`, written in parallel).
fn registry() -> CodecRegistry {
    let mut registry = CodecRegistry::with_defaults();
    zarr_sharding::register(&mut registry);
    registry.register("vlen-utf8", |_, _, _| {
        Ok(Codec::ArrayToBytes(Arc::new(TestVlenUtf8)))
    });
    registry
}

fn repr(shape: &[u64], data_type: DataType, fill: impl Into<FillValue>) -> ChunkRepresentation {
    ChunkRepresentation::try_new(shape.to_vec(), data_type, fill.into()).unwrap()
}

fn sharding(config: serde_json::Value) -> ExtensionObject {
    ExtensionObject::from_json(
        &serde_json::json!({"name": "sharding_indexed", "configuration": config}),
        "codecs[0]",
    )
    .unwrap()
}

/// zarr-python's `vlen-utf8` layout: u32 LE element count, then per element a u32 LE length
/// and the bytes. Enough for the fixtures; not the project's implementation.
#[derive(Debug)]
struct TestVlenUtf8;

impl ArrayToBytesCodec for TestVlenUtf8 {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration("vlen-utf8", serde_json::Map::new())
    }

    fn encoded_size(&self, _: &ChunkRepresentation) -> Result<Option<u64>> {
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, _: &ChunkRepresentation) -> Result<Bytes> {
        let v = array.as_variable().expect("strings");
        let mut out = (v.len() as u32).to_le_bytes().to_vec();
        for e in v.iter() {
            out.extend_from_slice(&(e.len() as u32).to_le_bytes());
            out.extend_from_slice(e);
        }
        Ok(out.into())
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let bad = || zarr_codecs::Error::Corrupt {
            codec: "vlen-utf8".into(),
            reason: "truncated".into(),
        };
        let u32_at = |at: usize| -> Result<usize> {
            let b = bytes.get(at..at + 4).ok_or_else(bad)?;
            Ok(u32::from_le_bytes(b.try_into().unwrap()) as usize)
        };
        let n = u32_at(0)?;
        if n as u64 != decoded.num_elements() {
            return Err(bad());
        }
        let mut at = 4;
        let mut elements = Vec::with_capacity(n);
        for _ in 0..n {
            let len = u32_at(at)?;
            elements.push(bytes.get(at + 4..at + 4 + len).ok_or_else(bad)?);
            at += 4 + len;
        }
        Ok(ArrayBytes::Variable(VlenBytes::from_elements(elements)))
    }
}
