//! zarr-python's `numcodecs.blosc`, `numcodecs.zstd` and `numcodecs.gzip`: numcodecs'
//! configurations of codecs this crate has under their v3 names.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, Codec, ExpectedSize};
use crate::error::{Error, Result};
use crate::registry::CodecRegistry;
use crate::representation::ChunkRepresentation;

/// The aliases: v3 name and numcodecs id.
pub(crate) const ALIASES: [(&str, &str); 3] = [
    ("numcodecs.blosc", "blosc"),
    ("numcodecs.zstd", "zstd"),
    ("numcodecs.gzip", "gzip"),
];

/// A codec read under a `numcodecs.*` name with numcodecs' configuration, run by the codec
/// with the same format, and written back under the name and configuration it was read with.
#[derive(Debug)]
pub(crate) struct NumcodecsAlias {
    inner: Arc<dyn BytesToBytesCodec>,
    metadata: ExtensionObject,
}

impl NumcodecsAlias {
    /// Build the alias for `metadata` (named `numcodecs.<id>`). zarr-python hands these codecs
    /// the chunk as bytes, so blosc's automatic shuffle and type size are those of one-byte
    /// elements, as there.
    pub(crate) fn build(
        id: &str,
        metadata: &ExtensionObject,
        repr: &ChunkRepresentation,
        registry: &CodecRegistry,
    ) -> Result<Codec> {
        let mut config = metadata.configuration.clone().unwrap_or_default();
        config.insert("id".into(), Value::from(id));
        let v3 = zarr_core::v2::numcodec_to_v3(&config, 1)
            .map_err(|e| Error::config(&metadata.name, zarr_core::ErrorChain(&e).to_string()))?;
        match registry.build(&v3, repr)? {
            Some(Codec::BytesToBytes(inner)) => Ok(Codec::BytesToBytes(Arc::new(Self {
                inner,
                metadata: metadata.clone(),
            }))),
            _ => Err(Error::config(
                &metadata.name,
                format!(
                    "no bytes->bytes codec `{}` is registered to run it",
                    v3.name
                ),
            )),
        }
    }
}

impl BytesToBytesCodec for NumcodecsAlias {
    fn to_metadata(&self) -> ExtensionObject {
        self.metadata.clone()
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        self.inner.encode(decoded)
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        self.inner.decode(encoded, expected)
    }

    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        self.inner.encoded_size(decoded)
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        self.inner.decode_into(encoded, out)
    }

    fn can_partially_decode(&self) -> bool {
        self.inner.can_partially_decode()
    }

    fn partial_decode_into(
        &self,
        encoded: &Bytes,
        expected: ExpectedSize,
        offset: u64,
        out: &mut [u8],
    ) -> Result<()> {
        self.inner
            .partial_decode_into(encoded, expected, offset, out)
    }
}

#[cfg(test)]
mod tests {
    use zarr_core::{DataType, FillValue};

    use super::*;

    fn build(json: Value) -> Result<Codec> {
        let meta = ExtensionObject::from_json(&json, "codec").unwrap();
        let repr = ChunkRepresentation::try_new(vec![64], DataType::UInt32, FillValue::new([0; 4]))
            .unwrap();
        CodecRegistry::with_defaults()
            .build(&meta, &repr)
            .map(Option::unwrap)
    }

    #[test]
    fn aliases_round_trip_and_keep_their_metadata() {
        let data = Bytes::from(
            (0..256u32)
                .flat_map(|i| (i / 3).to_le_bytes())
                .collect::<Vec<_>>(),
        );
        for json in [
            serde_json::json!({"name": "numcodecs.zstd", "configuration": {"level": 3, "checksum": true}}),
            serde_json::json!({"name": "numcodecs.gzip", "configuration": {"level": 5}}),
            serde_json::json!({"name": "numcodecs.blosc", "configuration":
                {"cname": "lz4", "clevel": 5, "shuffle": -1, "blocksize": 0}}),
        ] {
            let Codec::BytesToBytes(codec) = build(json.clone()).unwrap() else {
                panic!("not bytes->bytes")
            };
            assert_eq!(codec.to_metadata().to_json(), json);
            let enc = codec.encode(data.clone()).unwrap();
            assert!(enc.len() < data.len(), "{json}");
            assert_eq!(codec.decode(enc, ExpectedSize::Exact(1024)).unwrap(), data);
        }
        let e =
            build(serde_json::json!({"name": "numcodecs.zstd", "configuration": {"level": "x"}}))
                .unwrap_err();
        assert!(e.to_string().contains("numcodecs.zstd"), "{e}");
    }
}
