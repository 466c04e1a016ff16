//! Malformed chunks are typed errors naming what is wrong, never panics or unbounded
//! allocations.

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, Error as CodecError, VlenBytes};
use zarr_core::{DataType, ExtensionObject};
use zarr_vlen::{OffsetType, VlenArrowCodec, VlenBytesCodec, VlenStrings, VlenUtf8Codec};

use crate::{chain, repr};

/// A ZEP0007 chunk with int32 `offsets`, padded, then `data`.
fn zep(offsets: &[i32], data: &[u8]) -> Bytes {
    let mut out: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    out.resize(out.len().next_multiple_of(64), 0);
    out.extend_from_slice(data);
    out.into()
}

/// A vlen-utf8 chunk from a count and raw items (length prefix then bytes).
fn interleaved(count: u32, items: &[(u32, &[u8])]) -> Bytes {
    let mut out = count.to_le_bytes().to_vec();
    for (len, bytes) in items {
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out.into()
}

fn decode_utf8(bytes: Bytes, n: u64) -> Result<ArrayBytes, CodecError> {
    VlenUtf8Codec::new().decode(bytes, &repr(DataType::String, &[n]))
}

fn decode_zep(bytes: Bytes, n: u64) -> Result<ArrayBytes, CodecError> {
    VlenArrowCodec::default().decode(bytes, &repr(DataType::String, &[n]))
}

fn reason(e: &CodecError) -> String {
    e.to_string()
}

#[test]
fn vlen_utf8_truncated_and_miscounted() {
    // Too short for the count.
    let e = decode_utf8(Bytes::from_static(b"\x01\0"), 1).unwrap_err();
    assert!(
        matches!(e, CodecError::Truncated { ref codec, .. } if codec == "vlen-utf8"),
        "{e}"
    );
    // Count does not match the chunk.
    let e = decode_utf8(interleaved(2, &[(1, b"a"), (1, b"b")]), 3).unwrap_err();
    assert!(matches!(e, CodecError::Corrupt { .. }), "{e}");
    assert!(
        reason(&e).contains("counts 2 elements, the chunk has 3"),
        "{e}"
    );
    // A length beyond the buffer.
    let e = decode_utf8(interleaved(2, &[(1, b"a"), (100, b"bc")]), 2).unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    assert!(
        reason(&e).contains("element 1 claims 100 bytes, only 2 remain"),
        "{e}"
    );
    // A length of u32::MAX.
    let e = decode_utf8(interleaved(1, &[(u32::MAX, b"x")]), 1).unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    // The data ends before a length.
    let e = decode_utf8(
        interleaved(3, &[(0, b""), (0, b""), (0, b"")]).slice(..14),
        3,
    )
    .unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    let e = decode_utf8(interleaved(3, &[(5, b"abcde"), (0, b"")]), 3).unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    assert!(
        reason(&e).contains("element 0 claims 5 bytes, leaving too few for the lengths of the 2"),
        "{e}"
    );
    // Trailing bytes.
    let mut extra = interleaved(1, &[(1, b"a")]).to_vec();
    extra.push(0);
    let e = decode_utf8(extra.into(), 1).unwrap_err();
    assert!(matches!(e, CodecError::Corrupt { .. }), "{e}");
    assert!(reason(&e).contains("1 bytes follow the last"), "{e}");
}

#[test]
fn huge_claimed_counts_allocate_nothing() {
    // A chunk of 4 billion elements whose 8-byte encoding claims them all: refused before
    // allocating anything for the elements (the offsets alone would need 32 GiB).
    let n = u64::from(u32::MAX);
    let e = decode_utf8(interleaved(u32::MAX, &[(0, b"")]), n).unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    assert!(reason(&e).contains("cannot hold the lengths"), "{e}");
    let e = VlenBytesCodec::new()
        .decode_binary::<i64>(&interleaved(u32::MAX, &[]), n)
        .unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    // A count far beyond a small chunk.
    let e = decode_utf8(interleaved(u32::MAX, &[]), 4).unwrap_err();
    assert!(matches!(e, CodecError::Corrupt { .. }), "{e}");
    // The ZEP0007 layout: 2^40 elements need 4 TiB of offsets; 64 bytes are refused.
    let e = decode_zep(Bytes::from(vec![0u8; 64]), 1 << 40).unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    let e = VlenArrowCodec::default()
        .decode_strings::<i32>(&Bytes::from(vec![0u8; 64]), 1 << 40)
        .unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    // Offsets whose size overflows u64.
    let e = decode_zep(Bytes::new(), u64::MAX).unwrap_err();
    assert!(
        matches!(e, CodecError::IncompatibleRepresentation { .. }),
        "{e}"
    );
}

#[test]
fn invalid_utf8_names_the_element() {
    let e = decode_utf8(interleaved(3, &[(1, b"a"), (2, b"\xc3\x28"), (0, b"")]), 3).unwrap_err();
    assert!(
        matches!(e, CodecError::InvalidElement { index: 1, ref data_type, .. } if data_type == "string"),
        "{e}"
    );
    // The same bytes are fine for vlen-bytes.
    VlenBytesCodec::new()
        .decode(
            interleaved(3, &[(1, b"a"), (2, b"\xc3\x28"), (0, b"")]),
            &repr(DataType::Bytes, &[3]),
        )
        .unwrap();
    // "é" split across two elements: each half is invalid.
    let e = decode_utf8(interleaved(2, &[(1, b"\xc3"), (1, b"\xa9")]), 2).unwrap_err();
    assert!(
        matches!(e, CodecError::InvalidElement { index: 0, .. }),
        "{e}"
    );
    let e = decode_zep(zep(&[0, 1, 2], b"\xc3\xa9"), 2).unwrap_err();
    assert!(
        matches!(e, CodecError::InvalidElement { index: 0, .. }),
        "{e}"
    );
    let e = decode_zep(zep(&[0, 1, 3], b"ab\xff"), 2).unwrap_err();
    assert!(
        matches!(e, CodecError::InvalidElement { index: 1, .. }),
        "{e}"
    );
    let e = VlenArrowCodec::default()
        .decode_strings::<i32>(&zep(&[0, 1, 3], b"ab\xff"), 2)
        .unwrap_err();
    assert!(
        matches!(e, CodecError::InvalidElement { index: 1, .. }),
        "{e}"
    );
    // Encoding invalid UTF-8 as strings is refused too.
    let bad = ArrayBytes::Variable(VlenBytes::from_elements([&b"\xff"[..]]));
    for codec in [
        Box::new(VlenUtf8Codec::new()) as Box<dyn ArrayToBytesCodec>,
        Box::new(VlenArrowCodec::default()),
    ] {
        let e = codec
            .encode(bad.clone(), &repr(DataType::String, &[1]))
            .unwrap_err();
        assert!(
            matches!(e, CodecError::InvalidElement { index: 0, .. }),
            "{e}"
        );
    }
}

#[test]
fn zep0007_bad_offsets() {
    // Too short for the offsets and padding.
    let e = decode_zep(zep(&[0, 1], b"a").slice(..10), 1).unwrap_err();
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    // offsets[0] != 0
    let e = decode_zep(zep(&[1, 1], b"a"), 1).unwrap_err();
    assert!(matches!(e, CodecError::Corrupt { .. }), "{e}");
    assert!(reason(&e).contains("the first offset is 1, not 0"), "{e}");
    // Decreasing.
    let e = decode_zep(zep(&[0, 3, 2, 4], b"abcd"), 3).unwrap_err();
    assert!(
        reason(&e).contains("offset 2 (2) is less than offset 1 (3)"),
        "{e}"
    );
    // Negative in the middle.
    let e = decode_zep(zep(&[0, -1, 4], b"abcd"), 2).unwrap_err();
    assert!(
        reason(&e).contains("offset 1 (-1) is less than offset 0 (0)"),
        "{e}"
    );
    // Last offset is not the data length (both ways).
    let e = decode_zep(zep(&[0, 1, 3], b"abcd"), 2).unwrap_err();
    assert!(
        reason(&e).contains("the last offset is 3, but there are 4 value bytes"),
        "{e}"
    );
    let e = decode_zep(zep(&[0, 1, 5], b"abcd"), 2).unwrap_err();
    assert!(matches!(e, CodecError::Corrupt { .. }), "{e}");
    // Non-zero padding.
    let mut padded = zep(&[0, 1], b"a").to_vec();
    padded[20] = 7;
    let e = decode_zep(padded.into(), 1).unwrap_err();
    assert!(reason(&e).contains("padding byte 20"), "{e}");
    // The typed paths report the same.
    let codec = VlenArrowCodec::default();
    for (chunk, n) in [(zep(&[1, 1], b"a"), 1), (zep(&[0, 2], b"a"), 1)] {
        assert!(matches!(
            codec.decode_binary::<i32>(&chunk, n),
            Err(CodecError::Corrupt { .. })
        ));
        assert!(matches!(
            codec.decode_strings::<i64>(&chunk, n),
            Err(CodecError::Corrupt { .. })
        ));
    }
    assert!(matches!(
        codec.decode_binary::<i32>(&zep(&[0, 2, 1], b"a"), 2),
        Err(CodecError::Corrupt { .. })
    ));
    assert!(matches!(
        codec.decode_binary::<i64>(&zep(&[0, 2, 1], b"a"), 2),
        Err(CodecError::Corrupt { .. })
    ));
    // Int64 chunk read with the int32 configuration: the padding or offsets do not fit.
    let wide = VlenArrowCodec::new(OffsetType::Int64)
        .encode_strings(&VlenStrings::<i64>::try_from(&["ab", "c"][..]).unwrap())
        .unwrap();
    assert!(decode_zep(wide, 2).is_err());
}

#[test]
fn wrong_data_types_and_configurations_are_refused() {
    let registry = crate::registry();
    let build = |codec: serde_json::Value, data_type: DataType| {
        let meta = [ExtensionObject::from_json(&codec, "codecs[0]").unwrap()];
        let repr = zarr_codecs::ChunkRepresentation::try_new(
            vec![2],
            data_type.clone(),
            zarr_core::FillValue::default_for(&data_type),
        )
        .unwrap();
        zarr_codecs::CodecChain::from_metadata(&meta, repr, &registry)
    };
    for (codec, data_type) in [
        (json!({"name": "vlen-utf8"}), DataType::Bytes),
        (json!({"name": "vlen-utf8"}), DataType::Int32),
        (json!({"name": "vlen-bytes"}), DataType::String),
        (json!({"name": "zarr-rs.vlen_arrow"}), DataType::Float64),
    ] {
        let e = build(codec.clone(), data_type).unwrap_err();
        assert!(
            matches!(e, CodecError::IncompatibleRepresentation { .. }),
            "{codec}: {e}"
        );
    }
    for codec in [
        json!({"name": "vlen-utf8", "configuration": {"x": 1}}),
        json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "uint32"}}),
        json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": 64}}),
        json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offset": "int64"}}),
    ] {
        let e = build(codec.clone(), DataType::String).unwrap_err();
        assert!(
            matches!(e, CodecError::InvalidConfiguration { .. }),
            "{codec}: {e}"
        );
    }
    // Encoding the wrong number of elements, or fixed-size data.
    let chain = chain(json!([{"name": "vlen-utf8"}]), DataType::String, &[2]);
    let one = ArrayBytes::Variable(VlenBytes::from_elements([&b"a"[..]]));
    assert!(matches!(
        chain.encode(one.clone()),
        Err(CodecError::UnexpectedArray { .. })
    ));
    for codec in [
        Box::new(VlenUtf8Codec::new()) as Box<dyn ArrayToBytesCodec>,
        Box::new(VlenArrowCodec::default()),
    ] {
        let r = repr(DataType::String, &[2]);
        assert!(matches!(
            codec.encode(one.clone(), &r),
            Err(CodecError::UnexpectedArray { .. })
        ));
        assert!(matches!(
            codec.encode(ArrayBytes::fixed(vec![0; 2]), &r),
            Err(CodecError::UnexpectedArray { .. })
        ));
    }
}
