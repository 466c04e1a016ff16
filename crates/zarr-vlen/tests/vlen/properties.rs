//! Property tests: round trips of random strings and bytes through every layout, partial
//! decoding against the full decode, and random or mutated input never panicking.

use bytes::Bytes;
use proptest::prelude::*;
use serde_json::json;
use zarr_codecs::{ArrayBytes, VlenBytes};
use zarr_core::{DataType, Region};
use zarr_vlen::{
    OffsetType, VlenArrowCodec, VlenBinary, VlenBytesCodec, VlenStrings, VlenUtf8Codec,
};

use crate::{chain, repr};

/// Strings biased towards the interesting cases: empty, ASCII, multi-byte, emoji, any.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z]{0,8}",
        "[é日本語ü€]{0,4}",
        "[🦀🎉👍🏽]{0,3}",
        any::<String>(),
    ]
}

/// A chunk shape (possibly with a zero extent) and that many strings.
fn shaped_strings() -> impl Strategy<Value = (Vec<u64>, Vec<String>)> {
    prop::collection::vec(0u64..5, 0..4).prop_flat_map(|shape| {
        let n = shape.iter().product::<u64>() as usize;
        (Just(shape), prop::collection::vec(string(), n))
    })
}

fn shaped_bytes() -> impl Strategy<Value = (Vec<u64>, Vec<Vec<u8>>)> {
    prop::collection::vec(0u64..6, 1..3).prop_flat_map(|shape| {
        let n = shape.iter().product::<u64>() as usize;
        (
            Just(shape),
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), n),
        )
    })
}

fn codecs_for(data_type: DataType) -> Vec<serde_json::Value> {
    let interop = if data_type == DataType::String {
        "vlen-utf8"
    } else {
        "vlen-bytes"
    };
    vec![
        json!([{"name": interop}]),
        json!([{"name": "zarr-rs.vlen_arrow"}]),
        json!([{"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int64"}}]),
        json!([{"name": "zarr-rs.vlen_arrow"}, {"name": "zstd", "configuration": {"level": 1}}]),
        json!([{"name": interop}, {"name": "crc32c"}]),
    ]
}

/// A transpose order for `rank` dimensions (reversed).
fn reversed(rank: usize) -> Vec<usize> {
    (0..rank).rev().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn strings_round_trip_through_every_layout((shape, strings) in shaped_strings()) {
        let array = ArrayBytes::Variable(VlenBytes::from_elements(strings.iter().map(|s| s.as_bytes())));
        for codecs in codecs_for(DataType::String) {
            let chain = chain(codecs.clone(), DataType::String, &shape);
            let stored = chain.encode(array.clone()).unwrap();
            prop_assert_eq!(&chain.decode(stored).unwrap(), &array, "{}", codecs);
            // With a transpose in front, too.
            let mut with_transpose = vec![json!({"name": "transpose", "configuration": {"order": reversed(shape.len())}})];
            with_transpose.extend(codecs.as_array().unwrap().iter().cloned());
            if !shape.is_empty() {
                let chain = crate::chain(json!(with_transpose), DataType::String, &shape);
                let stored = chain.encode(array.clone()).unwrap();
                prop_assert_eq!(&chain.decode(stored).unwrap(), &array);
            }
        }
        // The Arrow-layout paths agree with the chain.
        let n = strings.len() as u64;
        let typed = VlenStrings::<i32>::from_strs(&strings).unwrap();
        let utf8 = VlenUtf8Codec::new();
        let encoded = utf8.encode_strings(&typed).unwrap();
        prop_assert_eq!(utf8.decode_strings::<i64>(&encoded, n).unwrap().to_strings(), strings.clone());
        for offsets in [OffsetType::Int32, OffsetType::Int64] {
            let codec = VlenArrowCodec::new(offsets);
            let chunk = codec.encode_strings(&typed).unwrap();
            prop_assert_eq!(chunk.len() as u64, codec.values_start(n).unwrap() + typed.values().len() as u64);
            prop_assert_eq!(&codec.decode_strings::<i32>(&chunk, n).unwrap(), &typed);
            prop_assert_eq!(codec.decode_strings::<i64>(&chunk, n).unwrap().to_strings(), strings.clone());
            // Unaligned buffers decode the same (offsets copied, values still shared).
            let mut shifted = vec![0u8];
            shifted.extend_from_slice(&chunk);
            let unaligned = Bytes::from(shifted).slice(1..);
            let d = codec.decode_strings::<i32>(&unaligned, n).unwrap();
            prop_assert_eq!(&d, &typed);
            if !typed.values().is_empty() {
                prop_assert_eq!(d.values().as_ptr(), unaligned[codec.values_start(n).unwrap() as usize..].as_ptr());
            }
        }
    }

    #[test]
    fn bytes_round_trip_through_every_layout((shape, elements) in shaped_bytes()) {
        let array = ArrayBytes::Variable(VlenBytes::from_elements(elements.iter().map(Vec::as_slice)));
        for codecs in codecs_for(DataType::Bytes) {
            let chain = chain(codecs.clone(), DataType::Bytes, &shape);
            let stored = chain.encode(array.clone()).unwrap();
            prop_assert_eq!(&chain.decode(stored).unwrap(), &array, "{}", codecs);
        }
        let typed = VlenBinary::<i64>::try_from(elements.clone()).unwrap();
        let n = elements.len() as u64;
        let codec = VlenBytesCodec::new();
        let encoded = codec.encode_binary(&typed).unwrap();
        prop_assert_eq!(codec.decode_binary::<i32>(&encoded, n).unwrap().to_vecs(), elements.clone());
        let arrow = VlenArrowCodec::default();
        let chunk = arrow.encode_binary(&typed).unwrap();
        prop_assert_eq!(arrow.decode_binary::<i64>(&chunk, n).unwrap(), typed);
    }

    #[test]
    fn decode_region_equals_slicing_the_full_decode(
        (shape, strings) in shaped_strings(),
        cuts in prop::collection::vec((0u64..6, 0u64..6), 3),
    ) {
        let codec = VlenArrowCodec::default();
        let chunk = codec.encode_strings(&VlenStrings::<i32>::from_strs(&strings).unwrap()).unwrap();
        let ranges: Vec<std::ops::Range<u64>> = shape
            .iter()
            .zip(&cuts)
            .map(|(&s, &(a, b))| {
                let (a, b) = (a.min(s), b.min(s));
                a.min(b)..a.max(b)
            })
            .collect();
        let region = Region::try_new(ranges.clone()).unwrap();
        let got = codec.decode_region(&chunk, &repr(DataType::String, &shape), &region).unwrap();
        // The region's elements in C order, the slow way.
        let mut want: Vec<&[u8]> = Vec::new();
        let count: u64 = ranges.iter().map(|r| r.end - r.start).product();
        for flat in 0..count {
            let mut rem = flat;
            let mut element = 0u64;
            let mut stride = 1u64;
            for d in (0..shape.len()).rev() {
                let extent = ranges[d].end - ranges[d].start;
                element += (ranges[d].start + rem % extent) * stride;
                rem /= extent;
                stride *= shape[d];
            }
            want.push(strings[element as usize].as_bytes());
        }
        prop_assert_eq!(got.as_variable().unwrap().iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn random_bytes_never_panic(
        data in prop::collection::vec(any::<u8>(), 0..200),
        n in 0u64..40,
    ) {
        let data = Bytes::from(data);
        for data_type in [DataType::String, DataType::Bytes] {
            for codecs in codecs_for(data_type.clone()) {
                let chain = chain(codecs, data_type.clone(), &[n]);
                if let Ok(decoded) = chain.decode(data.clone()) {
                    decoded.validate(chain.decoded_representation()).unwrap();
                    if data_type == DataType::String {
                        VlenStrings::<i64>::try_from(decoded).unwrap();
                    }
                }
            }
        }
        let _ = VlenUtf8Codec::new().decode_strings::<i32>(&data, n);
        let _ = VlenBytesCodec::new().decode_binary::<i64>(&data, n);
        for offsets in [OffsetType::Int32, OffsetType::Int64] {
            let codec = VlenArrowCodec::new(offsets);
            let _ = codec.decode_strings::<i32>(&data, n);
            let _ = codec.decode_binary::<i64>(&data, n);
            let region = Region::try_new(vec![n / 3..n / 2]).unwrap();
            let _ = codec.decode_region(&data, &repr(DataType::String, &[n]), &region);
            let _ = codec.values_byte_range(n, &data);
            let _ = codec.decode_range(&DataType::String, n, 0..n.min(3), &data, data.clone());
        }
    }

    #[test]
    fn mutated_chunks_never_panic_and_decode_to_valid_strings(
        strings in prop::collection::vec(string(), 1..12),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let n = strings.len() as u64;
        let array = ArrayBytes::Variable(VlenBytes::from_elements(strings.iter().map(|s| s.as_bytes())));
        for codecs in codecs_for(DataType::String).into_iter().take(3) {
            let chain = chain(codecs, DataType::String, &[n]);
            let mut stored = chain.encode(array.clone()).unwrap().to_vec();
            for (index, value) in &flips {
                let i = index.index(stored.len());
                stored[i] ^= value | 1;
            }
            if let Ok(decoded) = chain.decode(Bytes::from(stored)) {
                let strings = VlenStrings::<i32>::try_from(decoded).unwrap();
                prop_assert_eq!(strings.len() as u64, n);
            }
        }
    }
}
