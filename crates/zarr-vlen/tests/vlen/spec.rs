//! The byte-exact examples of SPEC-NOTES section 5.

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, VlenBytes};
use zarr_core::DataType;
use zarr_vlen::{OffsetType, VlenArrowCodec, VlenBinary, VlenStrings, VlenUtf8Codec};

use crate::{chain, repr};

const STRINGS: [&str; 5] = ["a", "", "héllo", "zarr", "xyz"];

/// SPEC-NOTES 5b: zarr-python's `c/0` for [`STRINGS`], 38 bytes.
pub(crate) const VLEN_UTF8_EXAMPLE: &[u8] = b"\x05\x00\x00\x00\
\x01\x00\x00\x00a\
\x00\x00\x00\x00\
\x06\x00\x00\x00h\xc3\xa9llo\
\x04\x00\x00\x00zarr\
\x03\x00\x00\x00xyz";

/// SPEC-NOTES 5a: the ZEP0007 chunk of [`STRINGS`], 78 bytes.
fn zep0007_example() -> Vec<u8> {
    let mut out = Vec::new();
    for o in [0i32, 1, 1, 7, 11, 14] {
        out.extend_from_slice(&o.to_le_bytes());
    }
    out.resize(0x40, 0);
    out.extend_from_slice(&[
        0x61, 0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f, 0x7a, 0x61, 0x72, 0x72, 0x78, 0x79, 0x7a,
    ]);
    out
}

fn strings_array() -> ArrayBytes {
    ArrayBytes::Variable(VlenBytes::from_elements(STRINGS.map(str::as_bytes)))
}

#[test]
fn zep0007_example_is_78_bytes_exactly() {
    let expected = zep0007_example();
    assert_eq!(expected.len(), 78);
    // Through a chain from metadata.
    let chain = chain(
        json!([{"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}}]),
        DataType::String,
        &[5],
    );
    let encoded = chain.encode(strings_array()).unwrap();
    assert_eq!(&encoded[..], &expected[..]);
    assert_eq!(chain.decode(encoded).unwrap(), strings_array());
    // The codec's default configuration (no `configuration`) is int32.
    let bare = crate::chain(
        json!([{"name": "zarr-rs.vlen_arrow"}]),
        DataType::String,
        &[5],
    );
    assert_eq!(&bare.encode(strings_array()).unwrap()[..], &expected[..]);
    assert_eq!(
        bare.to_metadata()[0].to_json(),
        json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}})
    );

    // Straight from Arrow layout, and back without copying the values.
    let codec = VlenArrowCodec::default();
    let strings = VlenStrings::<i32>::try_from(&STRINGS[..]).unwrap();
    assert_eq!(&codec.encode_strings(&strings).unwrap()[..], &expected[..]);
    let chunk = Bytes::from(expected);
    let decoded = codec.decode_strings::<i32>(&chunk, 5).unwrap();
    assert_eq!(decoded, strings);
    assert_eq!(decoded.values().as_ptr(), chunk[64..].as_ptr());
    // Offsets of the stored width on an aligned buffer are not copied either.
    assert_eq!(decoded.offsets().as_ptr().cast::<u8>(), chunk.as_ptr());
    // Asked for i64 offsets, they are converted; the values are still the chunk's.
    let large = codec.decode_strings::<i64>(&chunk, 5).unwrap();
    assert_eq!(large.to_strings(), STRINGS);
    assert_eq!(large.values().as_ptr(), chunk[64..].as_ptr());
    // Through the trait, the values are a slice of the chunk too.
    let via_trait = codec
        .decode(chunk.clone(), &repr(DataType::String, &[5]))
        .unwrap();
    assert_eq!(
        via_trait.as_variable().unwrap().values().as_ptr(),
        chunk[64..].as_ptr()
    );
}

#[test]
fn zep0007_with_64_bit_offsets() {
    let codec = VlenArrowCodec::new(OffsetType::Int64);
    let strings = VlenStrings::<i64>::try_from(&STRINGS[..]).unwrap();
    let chunk = codec.encode_strings(&strings).unwrap();
    // 6 offsets of 8 bytes = 48, padded to 64.
    let mut expected = Vec::new();
    for o in [0i64, 1, 1, 7, 11, 14] {
        expected.extend_from_slice(&o.to_le_bytes());
    }
    expected.resize(64, 0);
    expected.extend_from_slice("ahéllozarrxyz".as_bytes());
    assert_eq!(&chunk[..], &expected[..]);
    let decoded = codec.decode_strings::<i64>(&chunk, 5).unwrap();
    assert_eq!(decoded, strings);
    assert_eq!(decoded.offsets().as_ptr().cast::<u8>(), chunk.as_ptr());
    let narrow = codec.decode_strings::<i32>(&chunk, 5).unwrap();
    assert_eq!(narrow.to_strings(), STRINGS);
    assert_eq!(
        codec.to_metadata().to_json(),
        json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int64"}})
    );
}

#[test]
fn padding_rounds_up_to_64_only_when_needed() {
    let codec = VlenArrowCodec::default();
    // 15 elements: 16 offsets = 64 bytes exactly, no padding.
    let fifteen = VlenBinary::<i32>::from_elements(vec![&b"x"[..]; 15]).unwrap();
    let chunk = codec.encode_binary(&fifteen).unwrap();
    assert_eq!(chunk.len(), 64 + 15);
    assert_eq!(codec.values_start(15).unwrap(), 64);
    assert_eq!(codec.values_start(16).unwrap(), 128);
    // No elements: one offset, padded.
    let empty = VlenBinary::<i32>::from_elements(Vec::<&[u8]>::new()).unwrap();
    assert_eq!(&codec.encode_binary(&empty).unwrap()[..], &[0u8; 64][..]);
    assert_eq!(
        codec
            .decode_binary::<i32>(&Bytes::from(vec![0u8; 64]), 0)
            .unwrap(),
        empty
    );
}

#[test]
fn vlen_utf8_examples_are_byte_exact() {
    let chain = chain(
        json!([{"name": "vlen-utf8", "configuration": {}}]),
        DataType::String,
        &[5],
    );
    let encoded = chain.encode(strings_array()).unwrap();
    assert_eq!(&encoded[..], VLEN_UTF8_EXAMPLE);
    assert_eq!(chain.decode(encoded).unwrap(), strings_array());
    // Metadata is written as zarr-python writes it, and read without `configuration` too.
    assert_eq!(
        chain.to_metadata()[0].to_json(),
        json!({"name": "vlen-utf8", "configuration": {}})
    );
    let bare = crate::chain(json!([{"name": "vlen-utf8"}]), DataType::String, &[5]);
    assert_eq!(
        &bare.encode(strings_array()).unwrap()[..],
        VLEN_UTF8_EXAMPLE
    );

    // The edge chunk c/1 of shape 5, chunk 3: ["zarr", "xyz", fill ""].
    let edge = crate::chain(json!([{"name": "vlen-utf8"}]), DataType::String, &[3]);
    let elements = ArrayBytes::Variable(VlenBytes::from_elements(
        ["zarr", "xyz", ""].map(str::as_bytes),
    ));
    let expected = b"\x03\0\0\0\x04\0\0\0zarr\x03\0\0\0xyz\0\0\0\0";
    assert_eq!(&edge.encode(elements.clone()).unwrap()[..], expected);
    assert_eq!(edge.decode(Bytes::from_static(expected)).unwrap(), elements);

    // An inner chunk of a shard: ["xy", ""], 14 bytes.
    let inner = crate::chain(json!([{"name": "vlen-utf8"}]), DataType::String, &[2]);
    let elements = ArrayBytes::Variable(VlenBytes::from_elements(["xy", ""].map(str::as_bytes)));
    let expected = b"\x02\0\0\0\x02\0\0\0xy\0\0\0\0";
    assert_eq!(&inner.encode(elements).unwrap()[..], expected);

    // The direct path.
    let codec = VlenUtf8Codec::new();
    let strings = codec.decode_strings::<i32>(VLEN_UTF8_EXAMPLE, 5).unwrap();
    assert_eq!(strings.to_strings(), STRINGS);
}

#[test]
fn vlen_bytes_example_is_byte_exact() {
    let chain = chain(json!([{"name": "vlen-bytes"}]), DataType::Bytes, &[3]);
    let elements = ArrayBytes::Variable(VlenBytes::from_elements([&b"\x00\x01"[..], b"", b"abc"]));
    let expected = b"\x03\0\0\0\x02\0\0\0\x00\x01\0\0\0\0\x03\0\0\0abc";
    assert_eq!(&chain.encode(elements.clone()).unwrap()[..], expected);
    assert_eq!(
        chain.decode(Bytes::from_static(expected)).unwrap(),
        elements
    );
    assert_eq!(
        chain.to_metadata()[0].to_json(),
        json!({"name": "vlen-bytes", "configuration": {}})
    );
}

/// SPEC-NOTES 5b: `transpose` before a vlen codec must store the elements in the C order of
/// the *transposed* array (zarr-python 3.1.6 gets this wrong; this follows the spec).
#[test]
fn transpose_then_vlen_stores_the_transposed_c_order() {
    let elements = ["a", "b", "c", "d", "e", "f"]; // [[a, b, c], [d, e, f]]
    let array = ArrayBytes::Variable(VlenBytes::from_elements(elements.map(str::as_bytes)));
    for (vlen, header) in [
        (json!({"name": "vlen-utf8"}), true),
        (json!({"name": "zarr-rs.vlen_arrow"}), false),
    ] {
        let chain = chain(
            json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, vlen]),
            DataType::String,
            &[2, 3],
        );
        let stored = chain.encode(array.clone()).unwrap();
        let order: Vec<u8> = if header {
            // count, then (length 1, letter) six times
            stored[4..].chunks(5).map(|c| c[4]).collect()
        } else {
            stored[64..].to_vec()
        };
        assert_eq!(order, b"adbecf", "{stored:02x?}");
        assert_eq!(chain.decode(stored).unwrap(), array);
    }

    // Three dimensions, order [2, 0, 1]: stored element (i, j, k) of the transposed array is
    // decoded element (j, k, i).
    let shape = [2u64, 3, 4];
    let names: Vec<String> = (0..24).map(|i| format!("e{i}")).collect();
    let array = ArrayBytes::Variable(VlenBytes::from_elements(names.iter().map(|s| s.as_bytes())));
    let chain = chain(
        json!([{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
               {"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int64"}}]),
        DataType::String,
        &shape,
    );
    let stored = chain.encode(array.clone()).unwrap();
    let codec = VlenArrowCodec::new(OffsetType::Int64);
    let transposed = codec.decode_strings::<i64>(&stored, 24).unwrap();
    let mut expected = Vec::new();
    for i in 0..4 {
        for j in 0..2 {
            for k in 0..3 {
                expected.push(format!("e{}", j * 12 + k * 4 + i));
            }
        }
    }
    assert_eq!(transposed.to_strings(), expected);
    assert_eq!(chain.decode(stored).unwrap(), array);
}

#[test]
fn bytes_to_bytes_codecs_after_vlen() {
    let strings: Vec<String> = (0..500)
        .map(|i| "é".repeat(i % 7) + &i.to_string())
        .collect();
    let array = ArrayBytes::Variable(VlenBytes::from_elements(
        strings.iter().map(|s| s.as_bytes()),
    ));
    for vlen in [
        json!({"name": "vlen-utf8"}),
        json!({"name": "zarr-rs.vlen_arrow"}),
    ] {
        let bare = chain(json!([vlen.clone()]), DataType::String, &[20, 25]);
        let plain = bare.encode(array.clone()).unwrap();
        for tail in [
            json!([{"name": "zstd", "configuration": {"level": 3, "checksum": true}}, {"name": "crc32c"}]),
            json!([{"name": "gzip", "configuration": {"level": 6}}]),
            json!([{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "noshuffle", "typesize": 1, "blocksize": 0}}]),
        ] {
            let mut codecs = vec![vlen.clone()];
            codecs.extend(tail.as_array().unwrap().iter().cloned());
            let chain = chain(json!(codecs), DataType::String, &[20, 25]);
            let stored = chain.encode(array.clone()).unwrap();
            assert!(stored.len() < plain.len(), "{tail}: compresses");
            assert_eq!(chain.decode(stored.clone()).unwrap(), array, "{tail}");
            // Corrupting the compressed bytes is an error, not a panic or wrong strings.
            let mut bad = stored.to_vec();
            let last = bad.len() - 1;
            bad[last] ^= 0x55;
            bad[stored.len() / 2] ^= 0x55;
            if let Ok(decoded) = chain.decode(Bytes::from(bad)) {
                // A compressor without a checksum may decode to other strings; they are
                // still valid UTF-8, as checked by the vlen codec.
                VlenStrings::<i64>::try_from(decoded).unwrap();
            }
        }
    }
}
