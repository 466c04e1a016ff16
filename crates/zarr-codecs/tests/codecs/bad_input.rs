//! Bad input: truncated and corrupt chunks, failed checksums, wrong sizes and frames that
//! claim huge sizes are typed errors, never panics or huge allocations.

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::{
    ArrayBytes, BloscCodec, BytesToBytesCodec, CodecChain, CodecRegistry, Error, ExpectedSize,
    GzipCodec, ZstdCodec,
};
use zarr_core::DataType;

use crate::{codecs, repr};

/// A chain for a 32x32 uint16 chunk (2048 bytes) with the given bytes->bytes codecs.
fn chain(bytes_to_bytes: serde_json::Value) -> CodecChain {
    let mut list = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    list.extend(bytes_to_bytes.as_array().unwrap().iter().cloned());
    CodecChain::from_metadata(
        &codecs(list.into()),
        repr(&[32, 32], DataType::UInt16),
        &CodecRegistry::with_defaults(),
    )
    .unwrap()
}

fn sample() -> ArrayBytes {
    ArrayBytes::fixed(
        (0..1024u16)
            .flat_map(|v| (v / 5).to_ne_bytes())
            .collect::<Vec<u8>>(),
    )
}

fn all_chains() -> Vec<(&'static str, CodecChain)> {
    vec![
        ("bytes", chain(json!([]))),
        ("crc32c", chain(json!([{"name": "crc32c"}]))),
        (
            "gzip",
            chain(json!([{"name": "gzip", "configuration": {"level": 5}}])),
        ),
        (
            "zstd",
            chain(json!([{"name": "zstd", "configuration": {"level": 3}}])),
        ),
        (
            "zstd+checksum",
            chain(json!([{"name": "zstd", "configuration": {"level": 3, "checksum": true}}])),
        ),
        (
            "blosc",
            chain(
                json!([{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}]),
            ),
        ),
        (
            "zstd+crc32c",
            chain(json!([{"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}])),
        ),
    ]
}

/// Decode with both entry points; both must fail.
fn decode_fails(chain: &CodecChain, data: Bytes) -> Error {
    let mut out = vec![0u8; 2048];
    let into = chain.decode_into(data.clone(), &mut out);
    let e = chain.decode(data).unwrap_err();
    assert!(
        into.is_err(),
        "decode_into accepted what decode refused ({e})"
    );
    e
}

#[test]
fn truncated_chunks_are_errors() {
    for (name, chain) in all_chains() {
        let stored = chain.encode(sample()).unwrap();
        for cut in [0, 1, 3, 4, 15, stored.len() / 2, stored.len() - 1] {
            let e = decode_fails(&chain, stored.slice(..cut));
            assert!(
                matches!(
                    e,
                    Error::Truncated { .. }
                        | Error::Corrupt { .. }
                        | Error::Decompression { .. }
                        | Error::DecodedSizeMismatch { .. }
                        | Error::ChecksumMismatch { .. }
                        | Error::UnexpectedArray { .. }
                ),
                "{name} cut at {cut}: {e:?}"
            );
        }
    }
}

#[test]
fn trailing_garbage_is_an_error() {
    for (name, chain) in all_chains() {
        let stored = chain.encode(sample()).unwrap();
        let mut longer = stored.to_vec();
        longer.extend_from_slice(&[0x42; 7]);
        decode_fails(&chain, longer.into());
        let _ = name;
    }
}

#[test]
fn corrupt_frames_are_errors() {
    // Bytes every container checks: magic numbers, headers, checksums.
    let gzip = chain(json!([{"name": "gzip", "configuration": {"level": 5}}]));
    let stored = gzip.encode(sample()).unwrap();
    for at in [0, 2, stored.len() - 6, stored.len() - 2, stored.len() / 2] {
        let mut bad = stored.to_vec();
        bad[at] ^= 0x5a;
        let e = decode_fails(&gzip, bad.into());
        assert!(
            matches!(
                e,
                Error::Decompression { .. }
                    | Error::DecodedSizeMismatch { .. }
                    | Error::DecodedSizeLimit { .. }
            ),
            "gzip byte {at}: {e:?}"
        );
    }

    let zstd = chain(json!([{"name": "zstd", "configuration": {"level": 3, "checksum": true}}]));
    let stored = zstd.encode(sample()).unwrap();
    for at in [0, 3, stored.len() - 1, stored.len() / 2] {
        let mut bad = stored.to_vec();
        bad[at] ^= 0x5a;
        decode_fails(&zstd, bad.into());
    }

    let blosc = chain(
        json!([{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "bitshuffle", "typesize": 2}}]),
    );
    let stored = blosc.encode(sample()).unwrap();
    for (at, value) in [
        (0, 7u8),
        (2, 0x0a),
        (12, 0xff),
        (13, 0xff),
        (16, 0xff),
        (19, 0x7f),
    ] {
        let mut bad = stored.to_vec();
        bad[at] = value;
        let e = decode_fails(&blosc, bad.into());
        assert!(
            matches!(e, Error::Corrupt { .. } | Error::Truncated { .. }),
            "blosc byte {at}: {e:?}"
        );
    }

    // Random garbage is refused by every chain with a container format.
    let garbage: Vec<u8> = (0..2100u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for (name, chain) in all_chains() {
        if name != "bytes" {
            decode_fails(&chain, garbage.clone().into());
        }
    }
}

#[test]
fn failed_crc32c_is_a_checksum_error() {
    let chain = chain(json!([{"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}]));
    let stored = chain.encode(sample()).unwrap();
    for at in [0, stored.len() / 2, stored.len() - 1] {
        let mut bad = stored.to_vec();
        bad[at] ^= 1;
        let e = decode_fails(&chain, bad.into());
        assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e:?}");
        assert!(e.to_string().contains("crc32c"), "{e}");
    }
}

/// A chunk that decodes to the wrong size (written for another chunk shape).
#[test]
fn wrong_decoded_size_is_an_error() {
    let small = CodecChain::from_metadata(
        &codecs(json!([{"name": "bytes", "configuration": {"endian": "little"}}])),
        repr(&[16, 32], DataType::UInt16),
        &CodecRegistry::with_defaults(),
    )
    .unwrap();
    for (name, chain) in all_chains() {
        let half = ArrayBytes::fixed(vec![7u8; 1024]);
        let bytes_only = small.encode(half).unwrap();
        // Re-encode the 1024 bytes with this chain's bytes->bytes codecs.
        let mut data = bytes_only;
        for codec in chain.codecs().iter().skip(1) {
            let zarr_codecs::Codec::BytesToBytes(c) = codec else {
                unreachable!()
            };
            data = c.encode(data).unwrap();
        }
        let e = decode_fails(&chain, data.clone());
        assert!(
            matches!(
                e,
                Error::DecodedSizeMismatch { .. }
                    | Error::UnexpectedArray { .. }
                    | Error::Corrupt { .. }
            ),
            "{name}: {e:?}"
        );
        // And one too long.
        let long = ArrayBytes::fixed(vec![7u8; 4096]);
        let mut data = Bytes::from(long.as_fixed().unwrap().to_vec());
        for codec in chain.codecs().iter().skip(1) {
            let zarr_codecs::Codec::BytesToBytes(c) = codec else {
                unreachable!()
            };
            data = c.encode(data).unwrap();
        }
        let e = decode_fails(&chain, data);
        assert!(
            matches!(
                e,
                Error::DecodedSizeLimit { .. }
                    | Error::DecodedSizeMismatch { .. }
                    | Error::UnexpectedArray { .. }
            ),
            "{name}: {e:?}"
        );
    }
}

/// A zstd frame whose header claims 2^40 bytes is refused before anything is allocated.
#[test]
fn zstd_frame_claiming_a_huge_size() {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd];
    // Frame header descriptor: 8-byte content size (0b11 << 6), single segment (1 << 5).
    frame.push(0xe0);
    frame.extend_from_slice(&(1u64 << 40).to_le_bytes());
    // One last raw block of 3 bytes: header = last | raw (type 0) | size << 3.
    let block_header: u32 = 1 | (3 << 3);
    frame.extend_from_slice(&block_header.to_le_bytes()[..3]);
    frame.extend_from_slice(b"abc");
    let frame = Bytes::from(frame);
    let codec = ZstdCodec::try_new(1, false).unwrap();
    for expected in [ExpectedSize::Exact(4096), ExpectedSize::AtMost(1 << 32)] {
        let e = codec.decode(frame.clone(), expected).unwrap_err();
        assert!(
            matches!(e, Error::DecodedSizeLimit { claimed, .. } if claimed == 1 << 40),
            "{e:?}"
        );
    }
    let e = decode_fails(
        &chain(json!([{"name": "zstd", "configuration": {"level": 1}}])),
        frame.clone(),
    );
    assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
    // Even with no limit, 19 bytes of frame cannot hold 2^40 bytes.
    let e = codec
        .decode(frame, ExpectedSize::AtMost(u64::MAX))
        .unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
    // The most compressible data there is stays within that bound.
    let zeros = codec.encode(Bytes::from(vec![0u8; 4 << 20])).unwrap();
    let decoded = codec.decode(zeros, ExpectedSize::AtMost(u64::MAX)).unwrap();
    assert_eq!(decoded.len(), 4 << 20);
}

/// A blosc header claiming 2^31 bytes is refused before anything is allocated.
#[test]
fn blosc_header_claiming_a_huge_size() {
    let mut container = vec![2u8, 1, 0x02 | 0x10, 1];
    container.extend_from_slice(&(1u32 << 31).to_le_bytes()); // nbytes
    container.extend_from_slice(&4096u32.to_le_bytes()); // blocksize
    container.extend_from_slice(&24u32.to_le_bytes()); // cbytes
    container.extend_from_slice(&[0; 8]);
    let container = Bytes::from(container);
    let codec = BloscCodec::from_metadata(
        &codecs(json!([{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "noshuffle"}}]))[0],
        1,
    )
    .unwrap();
    let e = codec
        .decode(container.clone(), ExpectedSize::Exact(4096))
        .unwrap_err();
    assert!(
        matches!(e, Error::DecodedSizeLimit { claimed, .. } if claimed == 1 << 31),
        "{e:?}"
    );
    // Even with a generous limit, it is more than blosc can hold and more than the data.
    let e = codec
        .decode(container, ExpectedSize::AtMost(u64::MAX))
        .unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
}

/// A gzip bomb stops at the chunk's size.
#[test]
fn gzip_output_is_capped() {
    let codec = GzipCodec::try_new(1).unwrap();
    let bomb = codec.encode(Bytes::from(vec![0u8; 8 << 20])).unwrap();
    assert!(bomb.len() < 64 << 10);
    let e = codec
        .decode(bomb.clone(), ExpectedSize::Exact(2048))
        .unwrap_err();
    assert!(
        matches!(e, Error::DecodedSizeLimit { limit: 2048, .. }),
        "{e:?}"
    );
    let e = codec
        .decode(bomb, ExpectedSize::AtMost(1 << 20))
        .unwrap_err();
    assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
}

/// Arrays handed to `encode` must match the chunk.
#[test]
fn encode_checks_its_input() {
    let chain = chain(json!([{"name": "crc32c"}]));
    let e = chain
        .encode(ArrayBytes::fixed(vec![0u8; 2047]))
        .unwrap_err();
    assert!(matches!(e, Error::UnexpectedArray { .. }), "{e:?}");
    let strings = zarr_codecs::VlenBytes::from_elements([&b"a"[..]; 1024]);
    let e = chain.encode(ArrayBytes::Variable(strings)).unwrap_err();
    assert!(matches!(e, Error::UnexpectedArray { .. }), "{e:?}");
    let mut out = vec![0u8; 10];
    let stored = chain.encode(sample()).unwrap();
    let e = chain.decode_into(stored, &mut out).unwrap_err();
    assert!(matches!(e, Error::OutputSize { .. }), "{e:?}");
}
