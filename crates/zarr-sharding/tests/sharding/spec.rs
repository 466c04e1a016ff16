//! The two byte-exact examples of SPEC-NOTES 3.3 (checked against zarr-python 3.1.6).

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::{ArrayBytes, CodecChain};
use zarr_core::{DataType, FillValue, Region};
use zarr_sharding::{IndexLocation, ShardingCodec};

use crate::{registry, repr, sharding};

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn u16s(values: &[u16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

fn example_1_codec() -> ShardingCodec {
    let meta = sharding(json!({
        "chunk_shape": [2],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"
    }));
    let shard = repr(&[4], DataType::UInt16, FillValue::new([0, 0]));
    ShardingCodec::from_metadata(&meta, &shard, &registry()).unwrap()
}

const EXAMPLE_1_INDEX: &str = "00 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00
     ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff  8a 07 29 c5";

#[test]
fn example_1_index_at_the_end() {
    let codec = example_1_codec();
    assert_eq!(codec.index_size(), 36);
    assert_eq!(codec.index_location(), IndexLocation::End);
    // Shard c/0 holds [1, 2, 0, 0]: inner chunk 1 is all fill and takes no bytes.
    let c0 = hex(&format!("01 00 02 00 {EXAMPLE_1_INDEX}"));
    let encoded = codec
        .encode_shard(ArrayBytes::fixed(u16s(&[1, 2, 0, 0])))
        .unwrap()
        .unwrap();
    assert_eq!(&encoded[..], &c0[..]);
    assert_eq!(
        codec.decode_shard(Bytes::from(c0.clone())).unwrap(),
        ArrayBytes::fixed(u16s(&[1, 2, 0, 0]))
    );
    // Shard c/1 holds [5, 6] and two elements past the array's end (fill).
    let c1 = hex(&format!("05 00 06 00 {EXAMPLE_1_INDEX}"));
    let encoded = codec
        .encode_shard(ArrayBytes::fixed(u16s(&[5, 6, 0, 0])))
        .unwrap()
        .unwrap();
    assert_eq!(&encoded[..], &c1[..]);
    // And they are the files zarr-python wrote.
    let dir = crate::fixtures::corpus().join("zarr-python/spec_shard_example_end");
    assert_eq!(std::fs::read(dir.join("c/0")).unwrap(), c0);
    assert_eq!(std::fs::read(dir.join("c/1")).unwrap(), c1);
    // Through a codec chain, as an array would use it.
    let chain = CodecChain::from_metadata(
        &[sharding(json!({
            "chunk_shape": [2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        }))],
        repr(&[4], DataType::UInt16, FillValue::new([0, 0])),
        &registry(),
    )
    .unwrap();
    let mut out = vec![0u8; 8];
    chain
        .decode_into(Bytes::from(c1.clone()), &mut out)
        .unwrap();
    assert_eq!(out, u16s(&[5, 6, 0, 0]));
    assert!(chain.can_partially_decode());
    let mut part = vec![0u8; 2];
    chain
        .decode_region_into(
            Bytes::from(c1),
            &Region::try_new(vec![1..2]).unwrap(),
            &mut part,
        )
        .unwrap();
    assert_eq!(part, u16s(&[6]));
}

#[test]
fn example_2_index_at_the_start() {
    let meta = sharding(json!({
        "chunk_shape": [2],
        "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "start"
    }));
    let shard = repr(&[4], DataType::UInt8, FillValue::new([0]));
    let codec = ShardingCodec::from_metadata(&meta, &shard, &registry()).unwrap();
    let expected = hex("ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff
         24 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00  62 7a c7 b7  07 08");
    let encoded = codec
        .encode_shard(ArrayBytes::fixed(vec![0, 0, 7, 8]))
        .unwrap()
        .unwrap();
    assert_eq!(&encoded[..], &expected[..]);
    assert_eq!(
        codec.decode_shard(Bytes::from(expected.clone())).unwrap(),
        ArrayBytes::fixed(vec![0, 0, 7, 8])
    );
    let dir = crate::fixtures::corpus().join("zarr-python/spec_shard_example_start");
    assert_eq!(std::fs::read(dir.join("c/0")).unwrap(), expected);
    // Reading one inner chunk's bytes.
    assert_eq!(
        codec
            .inner_chunk_bytes(&Bytes::from(expected.clone()), &[1])
            .unwrap()
            .as_deref(),
        Some(&[7u8, 8][..])
    );
    assert_eq!(
        codec
            .inner_chunk_bytes(&Bytes::from(expected), &[0])
            .unwrap(),
        None
    );
}

#[test]
fn an_all_fill_shard_is_not_stored() {
    let codec = example_1_codec();
    assert_eq!(
        codec
            .encode_shard(ArrayBytes::fixed(u16s(&[0; 4])))
            .unwrap(),
        None
    );
    // The trait's encode must return bytes: the index alone, which decodes to fill.
    let bytes = zarr_codecs::ArrayToBytesCodec::encode(
        &codec,
        ArrayBytes::fixed(u16s(&[0; 4])),
        codec.shard_representation(),
    )
    .unwrap();
    assert_eq!(bytes.len(), 36);
    assert_eq!(
        codec.decode_shard(bytes).unwrap(),
        ArrayBytes::fixed(u16s(&[0; 4]))
    );
    // A write of fill over the only stored inner chunk empties the shard.
    let stored = codec
        .encode_shard(ArrayBytes::fixed(u16s(&[1, 2, 0, 0])))
        .unwrap();
    let merged = codec
        .merge_region(
            stored,
            &Region::try_new(vec![0..2]).unwrap(),
            &ArrayBytes::fixed(u16s(&[0, 0])),
        )
        .unwrap();
    assert_eq!(merged, None);
}

#[test]
fn metadata_round_trips() {
    let codec = example_1_codec();
    let meta = codec.metadata();
    assert_eq!(
        meta.to_json(),
        json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"
        }})
    );
    let again =
        ShardingCodec::from_metadata(&meta, codec.shard_representation(), &registry()).unwrap();
    assert_eq!(again.metadata(), meta);
    assert_eq!(again.chunks_per_shard(), &[2]);
    assert_eq!(again.inner_chunk_shape(), &[2]);
}

/// SPEC-NOTES checklist 74: inner chunks may be stored in any order, with unused bytes
/// between and around them; a reader follows the index alone (whole, in part, one chunk).
#[test]
fn inner_chunks_in_any_order_with_gaps() {
    let meta = sharding(json!({
        "chunk_shape": [2],
        "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_location": "end"
    }));
    let shard = repr(&[6], DataType::UInt8, FillValue::new([0]));
    let codec = ShardingCodec::from_metadata(&meta, &shard, &registry()).unwrap();
    // Chunk 2 first after three junk bytes, then junk, then chunk 0; chunk 1 is empty.
    let mut bytes = hex("ee ee ee 05 06 ee ee 01 02 ee");
    for (offset, nbytes) in [(7u64, 2u64), (u64::MAX, u64::MAX), (3, 2)] {
        bytes.extend(offset.to_le_bytes());
        bytes.extend(nbytes.to_le_bytes());
    }
    let bytes = Bytes::from(bytes);
    assert_eq!(
        codec.decode_shard(bytes.clone()).unwrap(),
        ArrayBytes::fixed(vec![1, 2, 0, 0, 5, 6])
    );
    let chain = CodecChain::from_metadata(&[meta], shard, &registry()).unwrap();
    let mut part = vec![9u8; 3];
    chain
        .decode_region_into(
            bytes.clone(),
            &Region::try_new(vec![1..4]).unwrap(),
            &mut part,
        )
        .unwrap();
    assert_eq!(part, [2, 0, 0]);
    assert_eq!(
        codec.inner_chunk_bytes(&bytes, &[2]).unwrap().as_deref(),
        Some(&[5u8, 6][..])
    );
}
