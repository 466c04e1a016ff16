//! Fuzz-style properties of stored chunks: whatever happens to a chunk's bytes (bits flipped,
//! cut short, garbage appended, replaced wholesale), decoding it through any bytes->bytes
//! codec or a whole chain returns a typed error or data of exactly the expected size: never a
//! panic, never more bytes than the chunk holds. The numcodecs codecs round-trip like the
//! others.

use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;
use zarr_codecs::{
    ArrayBytes, BytesCodec, BytesToBytesCodec, Checksum, ChecksumCodec, Codec, CodecChain, Endian,
    ExpectedSize, Location, Lz4Codec, NumericFilter, NumericFilterCodec, ShuffleCodec, ZlibCodec,
};
use zarr_core::{DataType, FillValue, Region};

/// Every bytes->bytes codec of the crate, with random parameters. `numcodecs.shuffle` takes
/// whole elements only (as numcodecs' `Shuffle`), so its element size divides 8, and the
/// data of these tests is whole 8-byte words.
fn any_bytes_codec() -> impl Strategy<Value = Arc<dyn BytesToBytesCodec>> {
    prop_oneof![
        1 => prop::sample::select(vec![1usize, 2, 4, 8])
            .prop_map(|e| Arc::new(ShuffleCodec::new(e)) as Arc<dyn BytesToBytesCodec>),
        9 => any_length_codec(),
    ]
}

/// Every bytes->bytes codec that takes input of any length (all but `numcodecs.shuffle`):
/// those of the round-trip properties, and zlib, LZ4 and the numcodecs checksums.
fn any_length_codec() -> impl Strategy<Value = Arc<dyn BytesToBytesCodec>> {
    let checksum = prop::sample::select(vec![
        Checksum::Crc32,
        Checksum::Adler32,
        Checksum::Crc32c,
        Checksum::Fletcher32,
    ]);
    let location = prop::sample::select(vec![Location::Start, Location::End]);
    prop_oneof![
        4 => crate::properties::bytes_to_bytes(),
        1 => (0u32..10).prop_map(|l| Arc::new(ZlibCodec::try_new(l).unwrap()) as Arc<dyn BytesToBytesCodec>),
        1 => Just(Arc::new(Lz4Codec::default()) as Arc<dyn BytesToBytesCodec>),
        2 => (checksum, location).prop_map(
            |(c, l)| Arc::new(ChecksumCodec::new(c, l)) as Arc<dyn BytesToBytesCodec>
        ),
    ]
}

/// What happens to a stored chunk.
#[derive(Debug, Clone)]
enum Damage {
    /// XOR these bytes at these positions (taken modulo the length).
    Flip(Vec<(usize, u8)>),
    /// Keep only this many bytes (modulo the length).
    Truncate(usize),
    /// Append these bytes.
    Append(Vec<u8>),
    /// Replace the whole chunk.
    Replace(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        prop::collection::vec((any::<usize>(), 1u8..=255), 1..6).prop_map(Damage::Flip),
        any::<usize>().prop_map(Damage::Truncate),
        prop::collection::vec(any::<u8>(), 1..64).prop_map(Damage::Append),
        prop::collection::vec(any::<u8>(), 0..256).prop_map(Damage::Replace),
    ]
}

fn apply(stored: &[u8], damage: &Damage) -> Vec<u8> {
    let mut bad = stored.to_vec();
    match damage {
        Damage::Flip(flips) => {
            if !bad.is_empty() {
                let n = bad.len();
                for &(at, mask) in flips {
                    bad[at % n] ^= mask;
                }
            }
        }
        Damage::Truncate(keep) => bad.truncate(keep % (stored.len() + 1)),
        Damage::Append(extra) => bad.extend_from_slice(extra),
        Damage::Replace(other) => bad.clone_from(other),
    }
    bad
}

/// Compressible data: random bytes with runs, a whole number of 8-byte words.
fn data() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(any::<u8>(), 0..1500), 0usize..1500).prop_map(|(mut d, runs)| {
        d.extend(std::iter::repeat_n(3u8, runs));
        d.truncate(d.len() / 8 * 8);
        d
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The numcodecs bytes codecs (and the others) round-trip, also into a buffer and in part.
    #[test]
    fn every_bytes_codec_round_trips(codec in any_bytes_codec(), data in data()) {
        let n = data.len() as u64;
        let stored = codec.encode(Bytes::from(data.clone())).unwrap();
        if let Some(size) = codec.encoded_size(ExpectedSize::Exact(n)) {
            size.check("test", stored.len() as u64).unwrap();
        }
        prop_assert_eq!(&codec.decode(stored.clone(), ExpectedSize::Exact(n)).unwrap()[..], &data[..]);
        let mut out = vec![0u8; data.len()];
        codec.decode_into(stored.clone(), &mut out).unwrap();
        prop_assert_eq!(&out, &data);
        let start = data.len() / 4;
        let mut part = vec![0u8; data.len() / 2];
        codec.partial_decode_into(&stored, ExpectedSize::Exact(n), start as u64, &mut part).unwrap();
        prop_assert_eq!(&part[..], &data[start..start + part.len()]);
    }

    /// A damaged chunk decodes to an error or to exactly the expected size; a codec with a
    /// checksum never hands out data that differs from what was stored.
    #[test]
    fn damaged_chunks_never_panic(codec in any_bytes_codec(), data in data(), damage in damage()) {
        let n = data.len() as u64;
        let stored = codec.encode(Bytes::from(data.clone())).unwrap();
        let bad = Bytes::from(apply(&stored, &damage));
        let changed = bad != stored;
        if let Ok(decoded) = codec.decode(bad.clone(), ExpectedSize::Exact(n)) {
            prop_assert_eq!(decoded.len() as u64, n);
            if changed && is_checked(&codec) {
                prop_assert_eq!(&decoded[..], &data[..], "a checked codec accepted damage");
            }
        }
        if let Ok(decoded) = codec.decode(bad.clone(), ExpectedSize::AtMost(n)) {
            prop_assert!(decoded.len() as u64 <= n);
        }
        let mut out = vec![0u8; data.len()];
        let _ = codec.decode_into(bad.clone(), &mut out);
        let mut part = vec![0u8; data.len() / 3];
        let _ = codec.partial_decode_into(&bad, ExpectedSize::Exact(n), (data.len() / 3) as u64, &mut part);
    }

    /// The same through whole chains: a numeric filter, `bytes` in either order, maybe
    /// `numcodecs.shuffle` of the stored elements, then up to two other bytes codecs; the
    /// intact chunk round-trips, a damaged one is an error or a chunk of the right size, also
    /// when only a region is decoded.
    #[test]
    fn damaged_chains_never_panic(
        shape in prop::collection::vec(1u64..9, 1..4),
        filter in 0usize..4,
        big_endian in any::<bool>(),
        shuffle in any::<bool>(),
        b2b in prop::collection::vec(any_length_codec(), 0..3),
        seed in any::<u64>(),
        damage in damage(),
    ) {
        let (dtype, codec) = numeric_filter(filter);
        let fill = FillValue::default_for(&dtype);
        let repr = zarr_codecs::ChunkRepresentation::try_new(shape.clone(), dtype.clone(), fill).unwrap();
        let mut codecs = Vec::new();
        if let Some(codec) = codec {
            codecs.push(Codec::ArrayToArray(Arc::new(codec)));
        }
        let endian = if big_endian { Endian::Big } else { Endian::Little };
        codecs.push(Codec::ArrayToBytes(Arc::new(BytesCodec::new(Some(endian)))));
        let size = dtype.fixed_size().unwrap();
        if shuffle {
            codecs.push(Codec::BytesToBytes(Arc::new(ShuffleCodec::new(stored_size(filter)))));
        }
        codecs.extend(b2b.into_iter().map(Codec::BytesToBytes));
        let chain = CodecChain::new(codecs, repr.clone()).unwrap();
        let n = repr.num_elements() as usize;
        let data = values(dtype, n, seed);
        let stored = chain.encode(ArrayBytes::fixed(data.clone())).unwrap();
        prop_assert_eq!(chain.decode(stored.clone()).unwrap(), ArrayBytes::fixed(data.clone()));

        let bad = Bytes::from(apply(&stored, &damage));
        if let Ok(decoded) = chain.decode(bad.clone()) {
            prop_assert_eq!(decoded.as_fixed().map(|b| b.len()), Some(n * size));
        }
        let mut out = vec![0u8; n * size];
        let _ = chain.decode_into(bad.clone(), &mut out);
        let region = Region::try_new(shape.iter().map(|&e| e / 2..e).collect()).unwrap();
        let mut part = vec![0u8; region.num_elements().unwrap() as usize * size];
        let _ = chain.decode_region_into(bad, &region, &mut part);
    }
}

/// Whether the codec verifies a checksum of the data it hands out.
fn is_checked(codec: &Arc<dyn BytesToBytesCodec>) -> bool {
    let name = codec.to_metadata().name;
    matches!(
        name.as_str(),
        "crc32c"
            | "numcodecs.crc32"
            | "numcodecs.crc32c"
            | "numcodecs.adler32"
            | "numcodecs.fletcher32"
    )
}

/// A lossless numeric filter for the chain test, with its array's data type.
fn numeric_filter(which: usize) -> (DataType, Option<NumericFilterCodec>) {
    let codec = |filter| Some(NumericFilterCodec::new(filter).unwrap());
    match which {
        0 => (
            DataType::Int32,
            codec(NumericFilter::Delta {
                dtype: DataType::Int32,
                astype: DataType::Int32,
            }),
        ),
        1 => (
            DataType::UInt16,
            codec(NumericFilter::Delta {
                dtype: DataType::UInt16,
                astype: DataType::Int8,
            }),
        ),
        2 => (
            DataType::Float64,
            codec(NumericFilter::Delta {
                dtype: DataType::Float64,
                astype: DataType::Float64,
            }),
        ),
        _ => (DataType::Int16, None),
    }
}

/// The size of the elements [`numeric_filter`]`(which)` stores (the filter may narrow them).
fn stored_size(which: usize) -> usize {
    match which {
        0 => 4,
        1 => 1,
        2 => 8,
        _ => 2,
    }
}

/// `n` values of `dtype` as little-endian bytes, small enough that every filter of
/// [`numeric_filter`] is lossless on them (deltas of `uint16` fit an `int8`).
fn values(dtype: DataType, n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        s >> 33
    };
    let mut out = Vec::new();
    let mut level: u16 = 0;
    for _ in 0..n {
        match dtype {
            DataType::Int32 => out.extend_from_slice(&(next() as i32).to_le_bytes()),
            DataType::UInt16 => {
                level = level.wrapping_add((next() % 200) as u16).wrapping_sub(100);
                out.extend_from_slice(&level.to_le_bytes());
            }
            DataType::Float64 => {
                out.extend_from_slice(&((next() % 1000) as f64 / 8.0).to_le_bytes());
            }
            _ => out.extend_from_slice(&(next() as i16).to_le_bytes()),
        }
    }
    out
}
