//! Property tests: every codec and random chains round-trip random data of random shapes and
//! types; `decode_into` and `decode_region_into` agree with `decode`.

use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;
use zarr_codecs::{
    ArrayBytes, BloscCodec, BloscCompressor, BloscShuffle, BytesCodec, BytesToBytesCodec, Codec,
    CodecChain, Crc32cCodec, Endian, ExpectedSize, GzipCodec, TransposeCodec, VlenBytes, ZstdCodec,
};
use zarr_core::{DataType, FillValue, Region};

fn data_type() -> impl Strategy<Value = DataType> {
    prop_oneof![
        Just(DataType::Bool),
        Just(DataType::Int8),
        Just(DataType::UInt16),
        Just(DataType::Float16),
        Just(DataType::BFloat16),
        Just(DataType::Int32),
        Just(DataType::Float32),
        Just(DataType::UInt64),
        Just(DataType::Float64),
        Just(DataType::Complex64),
        Just(DataType::Complex128),
        Just(DataType::RawBits(3)),
        Just(DataType::FixedLengthUtf32 { length_bytes: 8 }),
    ]
}

fn shape() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(1u64..7, 0..5)
}

/// A permutation of `0..n`.
fn permutation(n: usize) -> impl Strategy<Value = Vec<usize>> {
    Just((0..n).collect::<Vec<_>>()).prop_shuffle()
}

pub(crate) fn bytes_to_bytes() -> impl Strategy<Value = Arc<dyn BytesToBytesCodec>> {
    prop_oneof![
        (0u32..10)
            .prop_map(|l| Arc::new(GzipCodec::try_new(l).unwrap()) as Arc<dyn BytesToBytesCodec>),
        (-20i32..6, any::<bool>()).prop_map(
            |(l, c)| Arc::new(ZstdCodec::try_new(l, c).unwrap()) as Arc<dyn BytesToBytesCodec>
        ),
        Just(Arc::new(Crc32cCodec) as Arc<dyn BytesToBytesCodec>),
        (
            prop::sample::select(vec![
                BloscCompressor::BloscLz,
                BloscCompressor::Lz4,
                BloscCompressor::Lz4Hc,
                BloscCompressor::Zstd,
                BloscCompressor::Zlib,
                BloscCompressor::Snappy,
            ]),
            0u8..10,
            prop::sample::select(vec![
                BloscShuffle::NoShuffle,
                BloscShuffle::Shuffle,
                BloscShuffle::BitShuffle,
            ]),
            1usize..17,
            prop::sample::select(vec![0usize, 64, 256, 4096]),
        )
            .prop_map(|(c, l, s, t, b)| {
                Arc::new(BloscCodec::try_new(c, l, s, t, b).unwrap()) as Arc<dyn BytesToBytesCodec>
            }),
    ]
}

/// Random element bytes that are valid for `dt` (bools are 0 or 1).
fn elements(dt: &DataType, n: usize, seed: u64) -> Vec<u8> {
    let size = dt.fixed_size().unwrap();
    let mut state = seed | 1;
    (0..n * size)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Some runs, so compressors have something to do.
            let b = if i % 5 < 2 {
                (i / 16) as u8
            } else {
                state as u8
            };
            if *dt == DataType::Bool { b & 1 } else { b }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn bytes_to_bytes_codecs_round_trip(
        codec in bytes_to_bytes(),
        data in prop::collection::vec(any::<u8>(), 0..3000),
        runs in 0usize..2000,
    ) {
        let mut data = data;
        data.extend(std::iter::repeat_n(7u8, runs));
        let n = data.len() as u64;
        let encoded = codec.encode(Bytes::from(data.clone())).unwrap();
        if let Some(size) = codec.encoded_size(ExpectedSize::Exact(n)) {
            size.check("test", encoded.len() as u64).unwrap();
        }
        prop_assert_eq!(&codec.decode(encoded.clone(), ExpectedSize::Exact(n)).unwrap()[..], &data[..]);
        prop_assert_eq!(&codec.decode(encoded.clone(), ExpectedSize::AtMost(n + 10)).unwrap()[..], &data[..]);
        let mut out = vec![0u8; data.len()];
        codec.decode_into(encoded.clone(), &mut out).unwrap();
        prop_assert_eq!(&out, &data);
        // One byte short of room is refused.
        if n > 0 {
            prop_assert!(codec.decode(encoded.clone(), ExpectedSize::Exact(n - 1)).is_err());
            prop_assert!(codec.decode(encoded.clone(), ExpectedSize::AtMost(n - 1)).is_err());
        }
        // Partial decoding of a middle range.
        let start = data.len() / 3;
        let mut part = vec![0u8; data.len() / 2];
        codec.partial_decode_into(&encoded, ExpectedSize::Exact(n), start as u64, &mut part).unwrap();
        prop_assert_eq!(&part[..], &data[start..start + part.len()]);
    }

    #[test]
    fn transpose_round_trips(
        (shape, order) in shape().prop_flat_map(|s| { let n = s.len(); (Just(s), permutation(n)) }),
        dt in data_type(),
        seed in any::<u64>(),
    ) {
        let fill = FillValue::default_for(&dt);
        let repr = zarr_codecs::ChunkRepresentation::try_new(shape.clone(), dt.clone(), fill).unwrap();
        let n = repr.num_elements() as usize;
        let data = elements(&dt, n, seed);
        let t = TransposeCodec::try_new(order.clone()).unwrap();
        use zarr_codecs::ArrayToArrayCodec;
        let encoded = t.encode(ArrayBytes::fixed(data.clone()), &repr).unwrap();
        // Element (i0, i1, ...) of the decoded array is at the permuted index.
        let encoded_repr = t.encoded_representation(&repr).unwrap();
        let size = dt.fixed_size().unwrap();
        let bytes = encoded.as_fixed().unwrap().clone();
        for flat in 0..n {
            let mut rem = flat;
            let mut index = vec![0usize; shape.len()];
            for d in (0..shape.len()).rev() {
                index[d] = rem % shape[d] as usize;
                rem /= shape[d] as usize;
            }
            let mut at = 0usize;
            for (i, &d) in order.iter().enumerate() {
                at = at * encoded_repr.shape()[i] as usize + index[d];
            }
            prop_assert_eq!(&bytes[at * size..(at + 1) * size], &data[flat * size..(flat + 1) * size]);
        }
        let decoded = t.decode(encoded.clone(), &repr).unwrap();
        prop_assert_eq!(&decoded, &ArrayBytes::fixed(data.clone()));
        let mut out = vec![0u8; data.len()];
        t.decode_into(encoded, &repr, &mut out).unwrap();
        prop_assert_eq!(out, data);
    }

    #[test]
    fn chains_round_trip(
        (shape, order) in shape().prop_flat_map(|s| {
            let n = s.len();
            (Just(s), prop::option::of(permutation(n)))
        }),
        dt in data_type(),
        big_endian in any::<bool>(),
        b2b in prop::collection::vec(bytes_to_bytes(), 0..3),
        seed in any::<u64>(),
        region_seed in any::<u64>(),
    ) {
        let fill = FillValue::default_for(&dt);
        let repr = zarr_codecs::ChunkRepresentation::try_new(shape.clone(), dt.clone(), fill).unwrap();
        let mut codecs = Vec::new();
        if let Some(order) = order {
            codecs.push(Codec::ArrayToArray(Arc::new(TransposeCodec::try_new(order).unwrap())));
        }
        let endian = if big_endian { Endian::Big } else { Endian::Little };
        codecs.push(Codec::ArrayToBytes(Arc::new(BytesCodec::new(Some(endian)))));
        codecs.extend(b2b.into_iter().map(Codec::BytesToBytes));
        let chain = CodecChain::new(codecs, repr.clone()).unwrap();
        let n = repr.num_elements() as usize;
        let data = elements(&dt, n, seed);
        let stored = chain.encode(ArrayBytes::fixed(data.clone())).unwrap();
        if let Some(size) = chain.encoded_size() {
            prop_assert_eq!(size, stored.len() as u64);
        }
        prop_assert_eq!(chain.decode(stored.clone()).unwrap(), ArrayBytes::fixed(data.clone()));
        let mut out = vec![0u8; data.len()];
        chain.decode_into(stored.clone(), &mut out).unwrap();
        prop_assert_eq!(&out, &data);

        // A random region.
        let mut s = region_seed;
        let ranges: Vec<_> = shape.iter().map(|&extent| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let a = (s >> 33) % (extent + 1);
            let b = (s >> 17) % (extent + 1);
            a.min(b)..a.max(b)
        }).collect();
        let region = Region::try_new(ranges.clone()).unwrap();
        let size = dt.fixed_size().unwrap();
        let mut got = vec![0u8; region.num_elements().unwrap() as usize * size];
        chain.decode_region_into(stored, &region, &mut got).unwrap();
        let mut want = Vec::new();
        for flat in 0..n {
            let mut rem = flat;
            let mut inside = true;
            for d in (0..shape.len()).rev() {
                let i = (rem % shape[d] as usize) as u64;
                rem /= shape[d] as usize;
                inside &= ranges[d].contains(&i);
            }
            if inside {
                want.extend_from_slice(&data[flat * size..(flat + 1) * size]);
            }
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn variable_length_elements_transpose(
        (shape, order) in prop::collection::vec(1u64..5, 1..4)
            .prop_flat_map(|s| { let n = s.len(); (Just(s), permutation(n)) }),
        words in prop::collection::vec(".{0,5}", 64),
    ) {
        let repr = zarr_codecs::ChunkRepresentation::try_new(
            shape.clone(), DataType::String, FillValue::from("")).unwrap();
        let n = repr.num_elements() as usize;
        let elements = VlenBytes::from_elements(words.iter().take(n).map(|w| w.as_bytes()));
        prop_assume!(elements.len() == n);
        let t = TransposeCodec::try_new(order).unwrap();
        use zarr_codecs::ArrayToArrayCodec;
        let encoded = t.encode(ArrayBytes::Variable(elements.clone()), &repr).unwrap();
        encoded.validate(&t.encoded_representation(&repr).unwrap()).unwrap();
        prop_assert_eq!(t.decode(encoded, &repr).unwrap(), ArrayBytes::Variable(elements));
    }

    #[test]
    fn offsets_validation_matches_the_rules(offsets in prop::collection::vec(0u64..20, 0..8), len in 0usize..20) {
        let valid = !offsets.is_empty()
            && offsets[0] == 0
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && *offsets.last().unwrap() == len as u64;
        let result = VlenBytes::try_new(offsets, Bytes::from(vec![b'x'; len]));
        prop_assert_eq!(result.is_ok(), valid);
    }
}
