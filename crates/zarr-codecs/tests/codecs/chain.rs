//! Chain construction and validation, the spec's worked examples, partial decoding and a
//! user-registered codec.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, BytesCodec, BytesToBytesCodec, ChunkRepresentation, Codec,
    CodecChain, CodecRegistry, Crc32cCodec, Endian, Error, ExpectedSize, Result, TransposeCodec,
    ZstdCodec,
};
use zarr_core::{DataType, ExtensionObject, FillValue, Region};

use crate::{codecs, repr};

fn chain(json: serde_json::Value, repr: ChunkRepresentation) -> Result<CodecChain> {
    CodecChain::from_metadata(&codecs(json), repr, &CodecRegistry::with_defaults())
}

fn le_i16(values: &[i16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn ne_i16(values: &[i16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// SPEC-NOTES checklist 56: transpose [1, 0] + bytes on int16 [[0,1,2],[3,4,5]] stores
/// 0 3 1 4 2 5.
#[test]
fn spec_transpose_then_bytes_stores_column_major() {
    let c = chain(
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "bytes", "configuration": {"endian": "little"}}]),
        repr(&[2, 3], DataType::Int16),
    )
    .unwrap();
    let stored = c
        .encode(ArrayBytes::fixed(ne_i16(&[0, 1, 2, 3, 4, 5])))
        .unwrap();
    assert_eq!(&stored[..], &le_i16(&[0, 3, 1, 4, 2, 5])[..]);
    assert_eq!(
        c.decode(stored).unwrap(),
        ArrayBytes::fixed(ne_i16(&[0, 1, 2, 3, 4, 5]))
    );
}

/// SPEC-NOTES checklist 55: encoded shape[i] = decoded shape[order[i]], and a
/// non-self-inverse order round-trips with the right element mapping.
#[test]
fn spec_non_self_inverse_transpose() {
    let decoded = repr(&[2, 3, 4], DataType::UInt8);
    let t = TransposeCodec::try_new(vec![1, 2, 0]).unwrap();
    let encoded_repr =
        zarr_codecs::ArrayToArrayCodec::encoded_representation(&t, &decoded).unwrap();
    assert_eq!(encoded_repr.shape(), &[3, 4, 2]);
    let c = CodecChain::new(
        vec![
            Codec::ArrayToArray(Arc::new(t)),
            Codec::ArrayToBytes(Arc::new(BytesCodec::new(None))),
        ],
        decoded,
    )
    .unwrap();
    let data: Vec<u8> = (0..24).collect();
    let stored = c.encode(ArrayBytes::fixed(data.clone())).unwrap();
    // encoded[j][k][i] == decoded[i][j][k]
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                assert_eq!(stored[j * 8 + k * 2 + i], data[i * 12 + j * 4 + k]);
            }
        }
    }
    assert_eq!(c.decode(stored).unwrap(), ArrayBytes::fixed(data));
}

/// SPEC-NOTES checklist 63/65 and the sharding index size (71): bytes + crc32c of n bytes
/// is n + 4, fixed; a compressor makes the size data-dependent.
#[test]
fn encoded_sizes() {
    let index = repr(&[4, 2], DataType::UInt64);
    let c = chain(
        json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]),
        index.clone(),
    )
    .unwrap();
    assert_eq!(c.encoded_size(), Some(16 * 4 + 4));
    let c = chain(
        json!([{"name": "bytes", "configuration": {"endian": "little"}},
               {"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}]),
        index,
    )
    .unwrap();
    assert_eq!(c.encoded_size(), None);
}

/// SPEC-NOTES checklist 48: exactly one array->bytes codec, in order.
#[test]
fn chain_order_is_checked() {
    let r = repr(&[4], DataType::UInt16);
    for (codecs, needle) in [
        (json!([]), "no array->bytes codec"),
        (json!([{"name": "crc32c"}]), "`crc32c` comes before"),
        (
            json!([{"name": "crc32c"}, {"name": "bytes", "configuration": {"endian": "little"}}]),
            "`crc32c` comes before",
        ),
        (
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "bytes", "configuration": {"endian": "big"}}]),
            "two array->bytes codecs",
        ),
        (
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "transpose", "configuration": {"order": [0]}}]),
            "`transpose` comes after",
        ),
    ] {
        let e = chain(codecs.clone(), r.clone()).unwrap_err();
        assert!(matches!(e, Error::InvalidChain { .. }), "{codecs}: {e:?}");
        assert!(e.to_string().contains(needle), "{codecs}: {e}");
    }
}

/// SPEC-NOTES checklist 50, 52, 54: a codec that cannot take its input fails at open time.
#[test]
fn codecs_check_their_input_at_construction() {
    // bytes needs `endian` for multi-byte types, not for 1-byte ones.
    let e = chain(json!([{"name": "bytes"}]), repr(&[4], DataType::Int32)).unwrap_err();
    assert!(
        matches!(e, Error::IncompatibleRepresentation { .. }),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("`bytes`") && e.to_string().contains("endian"),
        "{e}"
    );
    chain(json!([{"name": "bytes"}]), repr(&[4], DataType::UInt8)).unwrap();
    chain(json!([{"name": "bytes"}]), repr(&[4], DataType::Bool)).unwrap();
    // bytes cannot encode strings.
    let strings =
        ChunkRepresentation::try_new(vec![2], DataType::String, FillValue::from("")).unwrap();
    let e = chain(
        json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
        strings,
    )
    .unwrap_err();
    assert!(e.to_string().contains("variable-length"), "{e}");
    // transpose's order must match the rank.
    let e = chain(
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "bytes", "configuration": {"endian": "little"}}]),
        repr(&[2, 3, 4], DataType::UInt16),
    )
    .unwrap_err();
    assert!(e.to_string().contains("`transpose`"), "{e}");
    // "C" and "F" are refused.
    let e = chain(
        json!([{"name": "transpose", "configuration": {"order": "C"}},
               {"name": "bytes", "configuration": {"endian": "little"}}]),
        repr(&[2, 3], DataType::UInt16),
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidConfiguration { .. }), "{e:?}");
    // Invalid configurations name the codec.
    for (codecs, needle) in [
        (
            json!({"name": "zstd", "configuration": {"level": 23}}),
            "`zstd`",
        ),
        (json!({"name": "zstd"}), "`level` is required"),
        (
            json!({"name": "gzip", "configuration": {"level": 10}}),
            "`gzip`",
        ),
        (
            json!({"name": "blosc", "configuration": {"cname": "lzma", "clevel": 1, "shuffle": "shuffle"}}),
            "`cname`",
        ),
        (
            json!({"name": "crc32c", "configuration": {"x": 1}}),
            "unknown key `x`",
        ),
    ] {
        let list = json!([{"name": "bytes", "configuration": {"endian": "little"}}, codecs]);
        let e = chain(list, repr(&[4], DataType::UInt16)).unwrap_err();
        assert!(matches!(e, Error::InvalidConfiguration { .. }), "{e:?}");
        assert!(e.to_string().contains(needle), "{e}");
    }
}

/// SPEC-NOTES checklist 10: an unknown codec is an error naming it, unless it is marked
/// `must_understand: false`, in which case it is skipped.
#[test]
fn unknown_codecs() {
    let r = repr(&[4], DataType::UInt8);
    let e = chain(
        json!([{"name": "bytes"}, {"name": "numcodecs.categorize", "configuration": {"dtype": "<U1"}}]),
        r.clone(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::UnknownCodec { name, index: 1 } if name == "numcodecs.categorize"),
        "{e:?}"
    );
    assert!(e.to_string().contains("numcodecs.categorize"), "{e}");

    let list = json!([{"name": "bytes"},
                      {"name": "example.advisory", "must_understand": false},
                      {"name": "crc32c"}]);
    let c = chain(list.clone(), r).unwrap();
    assert_eq!(
        c.skipped().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        ["example.advisory"]
    );
    // Metadata is written back as it was, in object form.
    let written: Vec<_> = c
        .to_metadata()
        .iter()
        .map(ExtensionObject::to_json)
        .collect();
    assert_eq!(serde_json::Value::from(written), list);
    // Reading works without the skipped codec...
    let stored = Crc32cCodec
        .encode(Bytes::from_static(&[1, 2, 3, 4]))
        .unwrap();
    assert_eq!(
        c.decode(stored).unwrap(),
        ArrayBytes::fixed(vec![1, 2, 3, 4])
    );
    // ...but writing does not pretend to apply it.
    let e = c.encode(ArrayBytes::fixed(vec![1, 2, 3, 4])).unwrap_err();
    assert!(matches!(e, Error::SkippedCodec { .. }), "{e:?}");
}

/// Short-hand codec names are read; the chain writes object form.
#[test]
fn metadata_is_written_in_object_form() {
    let c = chain(json!(["bytes", "crc32c"]), repr(&[3], DataType::UInt8)).unwrap();
    let written: Vec<_> = c
        .to_metadata()
        .iter()
        .map(ExtensionObject::to_json)
        .collect();
    assert_eq!(
        serde_json::Value::from(written),
        json!([{"name": "bytes"}, {"name": "crc32c"}])
    );
    let c = chain(
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "bytes", "configuration": {"endian": "big"}},
               {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "shuffle"}},
               {"name": "zstd", "configuration": {"level": -3, "checksum": true}},
               {"name": "gzip", "configuration": {"level": 4}}]),
        repr(&[3, 2], DataType::Float32),
    )
    .unwrap();
    let written: Vec<_> = c
        .to_metadata()
        .iter()
        .map(ExtensionObject::to_json)
        .collect();
    assert_eq!(
        serde_json::Value::from(written),
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "bytes", "configuration": {"endian": "big"}},
               {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}},
               {"name": "zstd", "configuration": {"level": -3, "checksum": true}},
               {"name": "gzip", "configuration": {"level": 4}}])
    );
}

/// A bytes->bytes codec registered by a user: XOR with a key.
#[derive(Debug)]
struct Xor(u8);

impl BytesToBytesCodec for Xor {
    fn to_metadata(&self) -> ExtensionObject {
        let mut config = serde_json::Map::new();
        config.insert("key".into(), self.0.into());
        ExtensionObject::with_configuration("test.xor", config)
    }
    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        Ok(decoded
            .iter()
            .map(|b| b ^ self.0)
            .collect::<Vec<u8>>()
            .into())
    }
    fn decode(&self, encoded: Bytes, _expected: ExpectedSize) -> Result<Bytes> {
        // Deliberately does not check the size: the chain must.
        self.encode(encoded)
    }
    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        Some(decoded)
    }
}

fn registry_with_xor() -> CodecRegistry {
    let mut registry = CodecRegistry::with_defaults();
    registry.register("test.xor", |meta, _repr, _registry| {
        let key = meta
            .configuration
            .as_ref()
            .and_then(|c| c.get("key"))
            .and_then(serde_json::Value::as_u64)
            .and_then(|k| u8::try_from(k).ok())
            .ok_or_else(|| Error::InvalidConfiguration {
                codec: "test.xor".into(),
                reason: "`key` must be 0..=255".into(),
            })?;
        Ok(Codec::BytesToBytes(Arc::new(Xor(key))))
    });
    registry
}

#[test]
fn a_registered_custom_codec_runs_in_a_chain() {
    let registry = registry_with_xor();
    let list = codecs(json!([
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "test.xor", "configuration": {"key": 90}},
        {"name": "zstd", "configuration": {"level": 1}},
        {"name": "test.xor", "configuration": {"key": 7}},
        {"name": "crc32c"}
    ]));
    let r = repr(&[5, 7], DataType::UInt16);
    let c = CodecChain::from_metadata(&list, r.clone(), &registry).unwrap();
    let values: Vec<u8> = (0..35u16).flat_map(|v| (v * 1000).to_ne_bytes()).collect();
    let stored = c.encode(ArrayBytes::fixed(values.clone())).unwrap();
    assert_eq!(
        c.decode(stored.clone()).unwrap(),
        ArrayBytes::fixed(values.clone())
    );
    let mut out = vec![0; values.len()];
    c.decode_into(stored, &mut out).unwrap();
    assert_eq!(out, values);
    assert_eq!(
        c.to_metadata()
            .iter()
            .map(ExtensionObject::to_json)
            .collect::<Vec<_>>(),
        list.iter()
            .map(ExtensionObject::to_json)
            .collect::<Vec<_>>()
    );

    // Without registering it, the codec is unknown.
    let e =
        CodecChain::from_metadata(&list, r.clone(), &CodecRegistry::with_defaults()).unwrap_err();
    assert!(e.to_string().contains("test.xor"), "{e}");
    // Its constructor's errors come through.
    let bad = codecs(
        json!([{"name": "bytes", "configuration": {"endian": "big"}},
                            {"name": "test.xor", "configuration": {"key": 300}}]),
    );
    let e = CodecChain::from_metadata(&bad, r, &registry).unwrap_err();
    assert!(e.to_string().contains("`key`"), "{e}");
}

/// The chain checks sizes even when a codec does not: a custom decoder producing too many
/// bytes is an error, not a silently longer chunk.
#[test]
fn the_chain_bounds_custom_decoders() {
    #[derive(Debug)]
    struct Padder;
    impl BytesToBytesCodec for Padder {
        fn to_metadata(&self) -> ExtensionObject {
            ExtensionObject::new("test.padder")
        }
        fn encode(&self, decoded: Bytes) -> Result<Bytes> {
            Ok(decoded)
        }
        fn decode(&self, encoded: Bytes, _expected: ExpectedSize) -> Result<Bytes> {
            let mut v = encoded.to_vec();
            v.push(0);
            Ok(v.into())
        }
    }
    let c = CodecChain::new(
        vec![
            Codec::ArrayToBytes(Arc::new(BytesCodec::new(None))),
            Codec::BytesToBytes(Arc::new(Padder)),
        ],
        repr(&[4], DataType::UInt8),
    )
    .unwrap();
    let e = c.decode(Bytes::from_static(&[1, 2, 3, 4])).unwrap_err();
    assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e:?}");
}

/// An array->bytes codec that holds a codec chain of its own, built with the registry it is
/// given: the shape `sharding_indexed` needs. Here it just stores the inner chain's output
/// after a 1-byte tag.
#[derive(Debug)]
struct Wrapped {
    inner: CodecChain,
}

impl ArrayToBytesCodec for Wrapped {
    fn to_metadata(&self) -> ExtensionObject {
        let mut config = serde_json::Map::new();
        let inner: Vec<_> = self
            .inner
            .to_metadata()
            .iter()
            .map(ExtensionObject::to_json)
            .collect();
        config.insert("codecs".into(), inner.into());
        ExtensionObject::with_configuration("test.wrapped", config)
    }
    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>> {
        self.inner.with_chunk_shape(decoded.shape().to_vec())?;
        Ok(self.inner.encoded_size().map(|n| n + 1))
    }
    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes> {
        let inner = self.inner.with_chunk_shape(decoded.shape().to_vec())?;
        let body = inner.encode(array)?;
        let mut out = vec![0x5a];
        out.extend_from_slice(&body);
        Ok(out.into())
    }
    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        if bytes.first() != Some(&0x5a) {
            return Err(Error::Corrupt {
                codec: "test.wrapped".into(),
                reason: "missing tag".into(),
            });
        }
        let inner = self.inner.with_chunk_shape(decoded.shape().to_vec())?;
        inner.decode(bytes.slice(1..))
    }
}

#[test]
fn constructors_can_build_inner_chains_with_the_registry() {
    let mut registry = registry_with_xor();
    registry.register("test.wrapped", |meta, repr, registry| {
        let inner_meta = meta
            .configuration
            .as_ref()
            .and_then(|c| c.get("codecs"))
            .cloned()
            .unwrap_or_default();
        let inner = CodecChain::from_metadata(&codecs(inner_meta), repr.clone(), registry)?;
        Ok(Codec::ArrayToBytes(Arc::new(Wrapped { inner })))
    });
    let list = codecs(json!([
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "test.wrapped", "configuration": {"codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "test.xor", "configuration": {"key": 1}},
            {"name": "crc32c"}
        ]}},
        {"name": "crc32c"}
    ]));
    let r = repr(&[3, 2], DataType::Int16);
    let c = CodecChain::from_metadata(&list, r, &registry).unwrap();
    assert_eq!(c.encoded_size(), Some(12 + 4 + 1 + 4));
    let values = ne_i16(&[1, -2, 3, -4, 5, -6]);
    let stored = c.encode(ArrayBytes::fixed(values.clone())).unwrap();
    assert_eq!(stored.len(), 21);
    assert_eq!(c.decode(stored).unwrap(), ArrayBytes::fixed(values));
}

/// Decoding a region decodes only what it needs where the chain allows it, and always
/// gives the same elements as decoding the chunk and cutting the region out.
#[test]
fn regions_decode_like_the_whole_chunk() {
    let r = repr(&[16, 24, 8], DataType::UInt32);
    let values: Vec<u8> = (0..16 * 24 * 8u32)
        .flat_map(|v| v.wrapping_mul(2_654_435_761).to_ne_bytes())
        .collect();
    let regions = [
        vec![0..16, 0..24, 0..8],
        vec![3..4, 5..6, 7..8],
        vec![0..16, 2..3, 0..8],
        vec![1..15, 0..24, 2..6],
        vec![8..16, 0..24, 0..8],
        vec![4..4, 0..24, 0..8],
    ];
    for (list, partial) in [
        (
            json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
            true,
        ),
        (
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 1024}}]),
            true,
        ),
        (
            json!([{"name": "bytes", "configuration": {"endian": "big"}},
                   {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1, "shuffle": "bitshuffle", "typesize": 4}}]),
            true,
        ),
        (
            json!([{"name": "singleton_dim", "configuration": {"operations": [{"insert": 1}, {"insert": 4}]}},
                   {"name": "bytes", "configuration": {"endian": "big"}},
                   {"name": "pad", "configuration": {"location": "end", "nbytes": 3, "padding": "AQID"}}]),
            true,
        ),
        (
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "offset", "configuration": {"offset": 5}}]),
            true,
        ),
        (
            json!([{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                   {"name": "bytes", "configuration": {"endian": "big"}},
                   {"name": "zstd", "configuration": {"level": 1}}]),
            false,
        ),
    ] {
        let c = chain(list.clone(), r.clone()).unwrap();
        assert_eq!(c.can_partially_decode(), partial, "{list}");
        let stored = c.encode(ArrayBytes::fixed(values.clone())).unwrap();
        for region in &regions {
            let region = Region::try_new(region.clone()).unwrap();
            let n = region.num_elements().unwrap() as usize * 4;
            let mut got = vec![0u8; n];
            c.decode_region_into(stored.clone(), &region, &mut got)
                .unwrap();
            let mut want = Vec::with_capacity(n);
            let ranges = region.ranges();
            for i in ranges[0].clone() {
                for j in ranges[1].clone() {
                    for k in ranges[2].clone() {
                        let at = ((i * 24 + j) * 8 + k) as usize * 4;
                        want.extend_from_slice(&values[at..at + 4]);
                    }
                }
            }
            assert_eq!(got, want, "{list} {:?}", region.ranges());
        }
        // Out of bounds, wrong rank and wrong output sizes are errors.
        let outside = Region::try_new(vec![0..17, 0..1, 0..1]).unwrap();
        let e = c
            .decode_region_into(stored.clone(), &outside, &mut [0u8; 68])
            .unwrap_err();
        assert!(matches!(e, Error::InvalidRegion { .. }), "{e:?}");
        let flat = Region::try_new(std::iter::once(0..1).collect()).unwrap();
        assert!(
            c.decode_region_into(stored.clone(), &flat, &mut [0u8; 4])
                .is_err()
        );
        let one = Region::try_new(vec![0..1, 0..1, 0..1]).unwrap();
        let e = c
            .decode_region_into(stored, &one, &mut [0u8; 3])
            .unwrap_err();
        assert!(matches!(e, Error::OutputSize { .. }), "{e:?}");
    }
}

/// `zarrs.squeeze` drops the chunk's dimensions of length 1 for the codecs after it: a
/// `transpose` of rank 3 takes a 4-d chunk with one such dimension, the stored bytes are
/// those of the chain without it, and regions still decode partially.
#[test]
fn squeeze_relabels_the_shape_and_keeps_partial_decoding() {
    let r = repr(&[16, 1, 24, 8], DataType::UInt32);
    let values: Vec<u8> = (0..16 * 24 * 8u32)
        .flat_map(|v| v.wrapping_mul(2_654_435_761).to_ne_bytes())
        .collect();
    let squeeze = json!({"name": "zarrs.squeeze"});
    let blosc = json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 1024}});
    let big = json!({"name": "bytes", "configuration": {"endian": "big"}});
    let transpose = json!({"name": "transpose", "configuration": {"order": [2, 0, 1]}});
    let zstd = json!({"name": "zstd", "configuration": {"level": 1}});
    for (list, without, partial) in [
        (json!([squeeze, big]), json!([big]), true),
        (json!([squeeze, big, blosc]), json!([big, blosc]), true),
        (
            json!([squeeze, squeeze, big, zstd]),
            json!([big, zstd]),
            false,
        ),
        (json!([squeeze, transpose, big]), json!(null), false),
    ] {
        let c = chain(list.clone(), r.clone()).unwrap();
        assert_eq!(c.can_partially_decode(), partial, "{list}");
        let stored = c.encode(ArrayBytes::fixed(values.clone())).unwrap();
        if !without.is_null() {
            let plain = chain(without, r.clone()).unwrap();
            let unsqueezed = plain.encode(ArrayBytes::fixed(values.clone())).unwrap();
            assert_eq!(stored, unsqueezed, "{list}");
        }
        let mut whole = vec![0u8; values.len()];
        c.decode_into(stored.clone(), &mut whole).unwrap();
        assert_eq!(whole, values, "{list}");
        for ranges in [
            vec![3..4, 0..1, 5..6, 7..8],
            vec![0..16, 0..1, 2..3, 0..8],
            vec![1..15, 0..1, 0..24, 2..6],
            vec![4..4, 0..1, 0..24, 0..8],
        ] {
            let region = Region::try_new(ranges.clone()).unwrap();
            let mut got = vec![0u8; region.num_elements().unwrap() as usize * 4];
            c.decode_region_into(stored.clone(), &region, &mut got)
                .unwrap();
            let mut want = Vec::new();
            for i in ranges[0].clone() {
                for j in ranges[2].clone() {
                    for k in ranges[3].clone() {
                        let at = ((i * 24 + j) * 8 + k) as usize * 4;
                        want.extend_from_slice(&values[at..at + 4]);
                    }
                }
            }
            assert_eq!(got, want, "{list} {ranges:?}");
        }
    }
    // Without squeeze, the transpose's order has the wrong rank.
    assert!(chain(json!([transpose, big]), r).is_err());
}

/// Rectilinear grids have chunks of several shapes: one chain per shape, same codecs.
#[test]
fn with_chunk_shape_rechecks() {
    let c = chain(
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "bytes", "configuration": {"endian": "little"}},
               {"name": "crc32c"}]),
        repr(&[4, 4], DataType::Float64),
    )
    .unwrap();
    let other = c.with_chunk_shape(vec![2, 5]).unwrap();
    assert_eq!(other.decoded_representation().shape(), &[2, 5]);
    assert_eq!(other.encoded_size(), Some(80 + 4));
    assert!(c.with_chunk_shape(vec![2, 5, 1]).is_err());
    let values: Vec<u8> = (0..10).flat_map(|v| f64::from(v).to_ne_bytes()).collect();
    let stored = other.encode(ArrayBytes::fixed(values.clone())).unwrap();
    assert_eq!(other.decode(stored).unwrap(), ArrayBytes::fixed(values));
}

/// SPEC-NOTES checklist 51: little and big endian for every fixed-size type, complex per
/// component.
#[test]
fn every_fixed_size_type_in_both_byte_orders() {
    use zarr_core::{MiniFloat, TimeUnit};
    let types = [
        (DataType::Bool, 1),
        (DataType::Int8, 1),
        (DataType::UInt8, 1),
        (DataType::Int16, 2),
        (DataType::UInt16, 2),
        (DataType::Float16, 2),
        (DataType::BFloat16, 2),
        (DataType::Int32, 4),
        (DataType::UInt32, 4),
        (DataType::Float32, 4),
        (DataType::Complex64, 4),
        (DataType::Int64, 8),
        (DataType::UInt64, 8),
        (DataType::Float64, 8),
        (DataType::Complex128, 8),
        (
            DataType::DateTime64 {
                unit: TimeUnit::Nanosecond,
                scale_factor: 10,
            },
            8,
        ),
        (
            DataType::TimeDelta64 {
                unit: TimeUnit::Second,
                scale_factor: 1,
            },
            8,
        ),
        (DataType::MiniFloat(MiniFloat::E4M3FN), 1),
        (DataType::Int4, 1),
        (DataType::RawBits(3), 1),
        (DataType::FixedLengthUtf32 { length_bytes: 8 }, 4),
        (DataType::RawBytes { length_bytes: 5 }, 1),
        (DataType::NullTerminatedBytes { length_bytes: 4 }, 1),
    ];
    for (dt, width) in types {
        let size = dt.fixed_size().unwrap();
        let r = repr(&[3], dt.clone());
        let native: Vec<u8> = (0..3 * size as u8)
            .map(|b| if dt == DataType::Bool { b % 2 } else { b })
            .collect();
        for endian in [Endian::Little, Endian::Big] {
            let c = CodecChain::new(
                vec![Codec::ArrayToBytes(Arc::new(BytesCodec::new(Some(endian))))],
                r.clone(),
            )
            .unwrap();
            let stored = c.encode(ArrayBytes::fixed(native.clone())).unwrap();
            let expected: Vec<u8> = if endian == Endian::NATIVE {
                native.clone()
            } else {
                native
                    .chunks(width)
                    .flat_map(|unit| unit.iter().rev().copied())
                    .collect()
            };
            assert_eq!(&stored[..], &expected[..], "{dt} {endian:?}");
            assert_eq!(c.decode(stored).unwrap(), ArrayBytes::fixed(native.clone()));
        }
    }
}

/// zstd levels including negative ones; the checksum flag is honoured (SPEC-NOTES 58, 59).
#[test]
fn zstd_configurations() {
    let r = repr(&[1000], DataType::UInt32);
    let values: Vec<u8> = (0..1000u32).flat_map(|v| (v / 10).to_ne_bytes()).collect();
    for (level, checksum) in [
        (-131_072, false),
        (-1, true),
        (0, false),
        (1, false),
        (22, true),
    ] {
        let c = CodecChain::new(
            vec![
                Codec::ArrayToBytes(Arc::new(BytesCodec::little())),
                Codec::BytesToBytes(Arc::new(ZstdCodec::try_new(level, checksum).unwrap())),
            ],
            r.clone(),
        )
        .unwrap();
        let stored = c.encode(ArrayBytes::fixed(values.clone())).unwrap();
        assert_eq!(&stored[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
        assert_eq!(stored[4] & 0x04 != 0, checksum);
        assert_eq!(c.decode(stored).unwrap(), ArrayBytes::fixed(values.clone()));
    }
}

/// A chain is shared across threads: each thread uses its own zstd contexts, and blosc's
/// context functions take no global lock.
#[test]
fn chains_decode_in_parallel() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CodecChain>();
    assert_send_sync::<CodecRegistry>();
    assert_send_sync::<Codec>();

    let r = repr(&[32, 32], DataType::Float32);
    let chains = [
        chain(
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "zstd", "configuration": {"level": 3, "checksum": true}}]),
            r.clone(),
        )
        .unwrap(),
        chain(
            json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
                   {"name": "bytes", "configuration": {"endian": "big"}},
                   {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "shuffle", "typesize": 4}},
                   {"name": "crc32c"}]),
            r,
        )
        .unwrap(),
    ];
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let chains = &chains;
            scope.spawn(move || {
                for i in 0..50u32 {
                    let values: Vec<u8> = (0..1024u32)
                        .flat_map(|v| ((v * (t + 1) + i) as f32).to_ne_bytes())
                        .collect();
                    for c in chains {
                        let stored = c.encode(ArrayBytes::fixed(values.clone())).unwrap();
                        let mut out = vec![0u8; 4096];
                        c.decode_into(stored, &mut out).unwrap();
                        assert_eq!(out, values);
                    }
                }
            });
        }
    });
}

/// `decode_into_view` puts a chunk (whole or part, through every decode path) at its place
/// in a larger output, the same as decoding and copying by hand.
#[test]
fn decode_into_view_places_chunks_in_a_larger_output() {
    use zarr_codecs::ArrayViewMut;
    let chains = [
        json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
        json!([{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]),
    ];
    let values: Vec<i16> = (0..12).collect();
    for codecs in chains {
        let c = chain(codecs.clone(), repr(&[3, 4], DataType::Int16)).unwrap();
        let stored = c.encode(ArrayBytes::fixed(ne_i16(&values))).unwrap();
        // Output 5x6 of i16; put chunk region [1..3, 1..4] at output [3..5, 0..3], and the
        // whole chunk at [0..3, 2..6] (not contiguous).
        let mut out = vec![0u8; 5 * 6 * 2];
        let view = ArrayViewMut::new(&mut out, &[5, 6], 2).unwrap();
        let mut part = unsafe { view.subview(Region::try_new(vec![3..5, 0..3]).unwrap()) }.unwrap();
        c.decode_into_view(
            stored.clone(),
            &Region::try_new(vec![1..3, 1..4]).unwrap(),
            &mut part,
        )
        .unwrap();
        let mut whole =
            unsafe { view.subview(Region::try_new(vec![0..3, 2..6]).unwrap()) }.unwrap();
        c.decode_into_view(stored.clone(), &Region::full(&[3, 4]), &mut whole)
            .unwrap();
        let got: Vec<i16> = out
            .chunks_exact(2)
            .map(|b| i16::from_ne_bytes([b[0], b[1]]))
            .collect();
        #[rustfmt::skip]
        let expected = [
            0, 0, 0, 1, 2, 3,
            0, 0, 4, 5, 6, 7,
            0, 0, 8, 9, 10, 11,
            5, 6, 7, 0, 0, 0,
            9, 10, 11, 0, 0, 0,
        ];
        assert_eq!(got, expected, "{codecs}");
        // A view of the wrong shape is an error, not a partial write.
        let view = ArrayViewMut::new(&mut out, &[5, 6], 2).unwrap();
        let mut small =
            unsafe { view.subview(Region::try_new(vec![0..1, 0..1]).unwrap()) }.unwrap();
        assert!(
            c.decode_into_view(stored, &Region::full(&[3, 4]), &mut small)
                .is_err()
        );
    }
}

/// A chain of `bytes` alone in the machine's byte order copies elements straight out of the
/// stored chunk into a view, and still checks it as decoding does: a chunk of the wrong size
/// is refused, and a `bool` byte other than 0 reads as `true`.
#[test]
fn bytes_only_views_check_the_stored_chunk() {
    use zarr_codecs::ArrayViewMut;
    let native = if cfg!(target_endian = "little") {
        "little"
    } else {
        "big"
    };
    let c = chain(
        json!([{"name": "bytes", "configuration": {"endian": native}}]),
        repr(&[2, 3], DataType::Int16),
    )
    .unwrap();
    let stored = Bytes::from(ne_i16(&[1, 2, 3, 4, 5, 6]));
    let mut out = vec![0u8; 2 * 2 * 2];
    let view = ArrayViewMut::new(&mut out, &[2, 2], 2).unwrap();
    let mut all = unsafe { view.subview(Region::full(&[2, 2])) }.unwrap();
    let region = Region::try_new(vec![0..2, 1..3]).unwrap();
    c.decode_into_view(stored.clone(), &region, &mut all)
        .unwrap();
    assert_eq!(out, ne_i16(&[2, 3, 5, 6]));
    let view = ArrayViewMut::new(&mut out, &[2, 2], 2).unwrap();
    let mut all = unsafe { view.subview(Region::full(&[2, 2])) }.unwrap();
    let short = stored.slice(..10);
    assert!(matches!(
        c.decode_into_view(short, &region, &mut all),
        Err(Error::UnexpectedArray { .. })
    ));

    let b = chain(json!([{"name": "bytes"}]), repr(&[4], DataType::Bool)).unwrap();
    let part = Region::try_new(vec![0..2]).unwrap();
    for (stored, expected) in [([1u8, 0, 1, 1], [1u8, 0]), ([7, 0, 1, 0xff], [1, 0])] {
        let mut out = vec![9u8; 2];
        let view = ArrayViewMut::new(&mut out, &[2], 1).unwrap();
        let mut all = unsafe { view.subview(Region::full(&[2])) }.unwrap();
        b.decode_into_view(Bytes::copy_from_slice(&stored), &part, &mut all)
            .unwrap();
        assert_eq!(out, expected);
    }
}

/// An element a codec refuses is reported at its position in the chunk, through the
/// transposes before that codec; behind a codec that cannot place elements (`packbits`) the
/// error is wrapped, naming that codec.
#[test]
fn refused_elements_are_placed_in_the_chunk() {
    let scale_into_u8 = |dtype: &str, scale: u32| {
        json!({"name": "numcodecs.fixedscaleoffset",
            "configuration": {"offset": 0, "scale": scale, "dtype": dtype, "astype": "|u1"}})
    };
    let transposed = chain(
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
            scale_into_u8("<f8", 1), {"name": "bytes"}]),
        repr(&[2, 3], DataType::Float64),
    )
    .unwrap();
    // 1000 does not fit a uint8: element [0, 2], position 2 in the chunk (4 after the
    // transpose).
    let values: Vec<u8> = [1.0f64, 2.0, 1000.0, 4.0, 5.0, 6.0]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let err = transposed.encode(ArrayBytes::fixed(values)).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidElement { codec, index: 2, .. }
            if codec == "numcodecs.fixedscaleoffset"),
        "{err:?}"
    );

    // Eight booleans pack into [padding 0, 0b1000_0000]; scaling 128 by 1000 overflows
    // element 1 of packbits' output, which is no element of the chunk.
    let packed = chain(
        json!([{"name": "numcodecs.packbits", "configuration": {}},
            scale_into_u8("|u1", 1000), {"name": "bytes"}]),
        repr(&[8], DataType::Bool),
    )
    .unwrap();
    let err = packed
        .encode(ArrayBytes::fixed(vec![1, 0, 0, 0, 0, 0, 0, 0]))
        .unwrap_err();
    match &err {
        Error::External { codec, source } => {
            assert_eq!(codec, "numcodecs.packbits");
            let inner = source.downcast_ref::<Error>().unwrap();
            assert!(
                matches!(inner, Error::InvalidElement { index: 1, .. }),
                "{inner:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}
