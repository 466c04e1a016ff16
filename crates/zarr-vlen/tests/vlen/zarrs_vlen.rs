//! zarrs' `zarrs.vlen` and `zarrs.vlen_v2` codecs: byte layouts, round trips through every
//! index type, location and chain, configurations, and malformed chunks as typed errors.
//! (zarrs itself reads and writes the same chunks in `benches/tests/zarrs_vlen.rs`.)

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use zarr_codecs::{
    ArrayBytes, BytesToBytesCodec, ChunkRepresentation, Codec, CodecChain, CodecRegistry,
    Error as CodecError, VlenBytes, ZstdCodec,
};
use zarr_core::{DataType, ExtensionObject, FillValue};
use zarr_vlen::{VlenIndexLocation, VlenIndexType, ZarrsVlenCodec};

use crate::{chain, registry, repr};

fn vlen(index_codecs: Value, data_codecs: Value, index_type: &str, location: &str) -> Value {
    json!([{"name": "zarrs.vlen", "configuration": {
        "index_codecs": index_codecs,
        "data_codecs": data_codecs,
        "index_data_type": index_type,
        "index_location": location,
    }}])
}

fn plain(index_type: &str, location: &str) -> Value {
    vlen(
        json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
        json!([{"name": "bytes"}]),
        index_type,
        location,
    )
}

fn build(codecs: Value, data_type: DataType, n: u64) -> Result<CodecChain, CodecError> {
    let codecs: Vec<ExtensionObject> = codecs
        .as_array()
        .unwrap()
        .iter()
        .map(|c| ExtensionObject::from_json(c, "codecs[0]").unwrap())
        .collect();
    CodecChain::from_metadata(&codecs, repr(data_type, &[n]), &registry())
}

fn elements(items: &[&[u8]]) -> ArrayBytes {
    ArrayBytes::Variable(VlenBytes::from_elements(items.iter().copied()))
}

/// The index's length, the `uint32` offsets, then the values; or the reverse at the end.
#[test]
fn chunks_have_zarrs_layout() {
    let items: [&[u8]; 3] = [b"ab", b"", "é".as_bytes()];
    let start = chain(plain("uint32", "start"), DataType::String, &[3]);
    let stored = start.encode(elements(&items)).unwrap();
    let mut want = 16u64.to_le_bytes().to_vec();
    for o in [0u32, 2, 2, 4] {
        want.extend_from_slice(&o.to_le_bytes());
    }
    want.extend_from_slice("abé".as_bytes());
    assert_eq!(&stored[..], &want[..]);

    let end = chain(plain("uint64", "end"), DataType::String, &[3]);
    let stored = end.encode(elements(&items)).unwrap();
    let mut want = "abé".as_bytes().to_vec();
    for o in [0u64, 2, 2, 4] {
        want.extend_from_slice(&o.to_le_bytes());
    }
    want.extend_from_slice(&32u64.to_le_bytes());
    assert_eq!(&stored[..], &want[..]);
    assert_eq!(end.decode(stored).unwrap(), elements(&items));

    // All empty: the data is left out.
    let stored = start.encode(elements(&[b"", b"", b""])).unwrap();
    assert_eq!(stored.len(), 8 + 16);
}

#[test]
fn every_configuration_round_trips() {
    let items: Vec<Vec<u8>> = (0..500)
        .map(|i| match i % 4 {
            0 => Vec::new(),
            1 => "héllo 🦊".into(),
            _ => vec![b'a' + (i % 26) as u8; i % 37],
        })
        .collect();
    let slices: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    let le = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let be = json!({"name": "bytes", "configuration": {"endian": "big"}});
    let zstd = json!({"name": "zstd", "configuration": {"level": 3}});
    let gzip = json!({"name": "gzip", "configuration": {"level": 1}});
    for data_type in [DataType::String, DataType::Bytes] {
        for index_type in ["uint32", "uint64"] {
            for location in ["start", "end"] {
                for (index, data) in [
                    (json!([le]), json!([{"name": "bytes"}])),
                    (json!([be, zstd]), json!([{"name": "bytes"}, gzip])),
                    (
                        json!([le, {"name": "crc32c"}]),
                        json!([{"name": "bytes"}, zstd]),
                    ),
                ] {
                    let codecs = vlen(index, data, index_type, location);
                    let c = chain(codecs.clone(), data_type.clone(), &[500]);
                    let stored = c.encode(elements(&slices)).unwrap();
                    assert_eq!(c.decode(stored).unwrap(), elements(&slices), "{codecs}");
                    // The metadata written is the metadata read.
                    let written: Vec<Value> = c
                        .to_metadata()
                        .iter()
                        .map(ExtensionObject::to_json)
                        .collect();
                    assert_eq!(Value::Array(written), codecs);
                }
            }
        }
    }
}

/// Chunks of another element count (edge chunks of rectilinear grids) rebuild the index
/// chain; zarrs' first configuration, without `index_location`, means "start".
#[test]
fn other_chunk_sizes_and_the_first_configuration() {
    let c = chain(plain("uint64", "start"), DataType::Bytes, &[4]);
    let other = c.with_chunk_shape(vec![2]).unwrap();
    let stored = other.encode(elements(&[b"x", b"yz"])).unwrap();
    assert_eq!(
        other.decode(stored.clone()).unwrap(),
        elements(&[b"x", b"yz"])
    );
    assert!(c.decode(stored).is_err());

    let first = json!([{"name": "zarrs.vlen", "configuration": {
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "data_codecs": [{"name": "bytes"}],
        "index_data_type": "uint32",
    }}]);
    let old = chain(first, DataType::String, &[2]);
    let new = chain(plain("uint32", "start"), DataType::String, &[2]);
    let stored = new.encode(elements(&[b"a", b"bc"])).unwrap();
    assert_eq!(old.decode(stored).unwrap(), elements(&[b"a", b"bc"]));

    let codec = ZarrsVlenCodec::default();
    assert_eq!(codec.index_type(), VlenIndexType::UInt64);
    assert_eq!(codec.index_location(), VlenIndexLocation::Start);
}

/// Offsets that do not start at 0 still say where each element is.
#[test]
fn offsets_may_start_past_zero() {
    let mut stored = 12u64.to_le_bytes().to_vec();
    for o in [2u32, 3, 5] {
        stored.extend_from_slice(&o.to_le_bytes());
    }
    stored.extend_from_slice(b"__abc");
    let c = chain(plain("uint32", "start"), DataType::String, &[2]);
    assert_eq!(
        c.decode(Bytes::from(stored)).unwrap(),
        elements(&[b"a", b"bc"])
    );
}

fn with_index(offsets: &[u32], data: &[u8]) -> Bytes {
    let mut out = ((offsets.len() * 4) as u64).to_le_bytes().to_vec();
    for o in offsets {
        out.extend_from_slice(&o.to_le_bytes());
    }
    out.extend_from_slice(data);
    out.into()
}

#[test]
fn malformed_chunks_are_typed_errors() {
    let c = chain(plain("uint32", "start"), DataType::String, &[2]);
    let err = |bytes: Bytes| c.decode(bytes).unwrap_err();

    let e = err(Bytes::from_static(&[1, 2, 3]));
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    assert!(e.to_string().contains("zarrs.vlen"), "{e}");

    let mut long = 1000u64.to_le_bytes().to_vec();
    long.extend_from_slice(&[0; 12]);
    let e = err(long.into());
    assert!(matches!(e, CodecError::Truncated { .. }), "{e}");
    assert!(e.to_string().contains("1000"), "{e}");

    // Offsets that go back.
    let e = err(with_index(&[0, 3, 1], b"abc"));
    assert!(matches!(e, CodecError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("offset 2 (1)"), "{e}");

    // Data shorter or longer than the last offset.
    for data in [&b"ab"[..], b"abcd"] {
        let e = err(with_index(&[0, 1, 3], data));
        assert!(matches!(e, CodecError::Corrupt { .. }), "{data:?}: {e}");
        assert!(e.to_string().contains("take 3 bytes"), "{e}");
    }
    // Data after an index of empty elements.
    let e = err(with_index(&[0, 0, 0], b"x"));
    assert!(e.to_string().contains("1 bytes of data"), "{e}");

    // An index of the wrong size for the chunk.
    let e = err(with_index(&[0, 1], b"a"));
    assert!(matches!(e, CodecError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("3 offsets takes 12 bytes"), "{e}");

    // Not UTF-8, named by element.
    let e = err(with_index(&[0, 1, 3], b"a\xff\xfe"));
    assert!(
        matches!(e, CodecError::InvalidElement { index: 1, .. }),
        "{e}"
    );
    // The same bytes are fine as `bytes`.
    let b = chain(plain("uint32", "start"), DataType::Bytes, &[2]);
    b.decode(with_index(&[0, 1, 3], b"a\xff\xfe")).unwrap();

    // An index claiming more values than any chunk may hold, with compressed data: refused
    // before anything is allocated.
    let z = chain(
        vlen(
            json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
            json!([{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}]),
            "uint64",
            "start",
        ),
        DataType::Bytes,
        &[1],
    );
    let mut huge = 16u64.to_le_bytes().to_vec();
    huge.extend_from_slice(&0u64.to_le_bytes());
    huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let frame = ZstdCodec::try_new(1, false)
        .unwrap()
        .encode(Bytes::from_static(b"x"))
        .unwrap();
    huge.extend_from_slice(&frame);
    let e = z.decode(huge.into()).unwrap_err();
    assert!(matches!(e, CodecError::DecodedSizeLimit { .. }), "{e}");
}

#[test]
fn bad_configurations_are_refused_when_built() {
    let le = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    let bytes = json!([{"name": "bytes"}]);
    let cases = [
        (
            json!([{"name": "zarrs.vlen", "configuration": {"index_codecs": le, "data_codecs": bytes}}]),
            "index_data_type",
        ),
        (
            json!([{"name": "zarrs.vlen", "configuration": {"data_codecs": bytes, "index_data_type": "uint32"}}]),
            "index_codecs",
        ),
        (vlen(le.clone(), bytes.clone(), "int32", "start"), "uint32"),
        (
            vlen(le.clone(), bytes.clone(), "uint32", "middle"),
            "middle",
        ),
        (
            vlen(json!({"name": "bytes"}), bytes.clone(), "uint32", "start"),
            "list",
        ),
        (
            vlen(
                le.clone(),
                json!([{"name": "unheard-of"}]),
                "uint32",
                "start",
            ),
            "unheard-of",
        ),
        // Multi-byte offsets need an endianness.
        (
            vlen(bytes.clone(), bytes.clone(), "uint64", "start"),
            "endian",
        ),
        (
            json!([{"name": "zarrs.vlen", "configuration": {"index_codecs": le, "data_codecs": bytes, "index_data_type": "uint32", "extra": 1}}]),
            "extra",
        ),
    ];
    for (codecs, needle) in cases {
        let e = build(codecs.clone(), DataType::String, 4).unwrap_err();
        assert!(
            e.to_string().contains(needle) || format!("{e:?}").contains(needle),
            "{codecs}: {e:?}"
        );
    }
    // Fixed-size data types are not its to encode.
    let int32 =
        ChunkRepresentation::try_new(vec![4], DataType::Int32, FillValue::from(0i32)).unwrap();
    let meta = ExtensionObject::from_json(&plain("uint32", "start")[0], "codecs[0]").unwrap();
    let e = CodecChain::from_metadata(&[meta], int32, &registry()).unwrap_err();
    assert!(
        matches!(e, CodecError::IncompatibleRepresentation { .. }),
        "{e}"
    );
}

/// The chains inside are built from the registry the codec is built from, so a codec the
/// user registers can be used there.
#[test]
fn inner_chains_use_the_callers_registry() {
    let mut registry = CodecRegistry::with_defaults();
    zarr_vlen::register(&mut registry);
    registry.register("example.zstd", |meta, _, _| {
        Ok(Codec::BytesToBytes(Arc::new(ZstdCodec::from_metadata(
            meta,
        )?)))
    });
    let codecs = vlen(
        json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
        json!([{"name": "bytes"}, {"name": "example.zstd", "configuration": {"level": 1}}]),
        "uint32",
        "end",
    );
    let meta = ExtensionObject::from_json(&codecs[0], "codecs[0]").unwrap();
    let c = CodecChain::from_metadata(
        std::slice::from_ref(&meta),
        repr(DataType::Bytes, &[2]),
        &registry,
    )
    .unwrap();
    let items = elements(&[b"abcabcabcabc", b"abc"]);
    let stored = c.encode(items.clone()).unwrap();
    assert_eq!(c.decode(stored).unwrap(), items);
    assert!(
        CodecChain::from_metadata(&[meta], repr(DataType::Bytes, &[2]), &crate::registry())
            .is_err()
    );
}

/// `zarrs.vlen_v2` is the `vlen-utf8` layout for both data types: strings are checked as
/// UTF-8, bytes are not, and fixed-size types are refused.
#[test]
fn vlen_v2_is_the_interleaved_layout_for_both_types() {
    let codecs = json!([{"name": "zarrs.vlen_v2"}]);
    let strings = chain(codecs.clone(), DataType::String, &[2]);
    let utf8 = chain(json!([{"name": "vlen-utf8"}]), DataType::String, &[2]);
    let items = elements(&[b"h\xc3\xa9", b""]);
    let stored = strings.encode(items.clone()).unwrap();
    assert_eq!(stored, utf8.encode(items.clone()).unwrap());
    assert_eq!(strings.decode(stored).unwrap(), items);

    let mut bad = 2u32.to_le_bytes().to_vec();
    for item in [&b"\xff"[..], b""] {
        bad.extend_from_slice(&(item.len() as u32).to_le_bytes());
        bad.extend_from_slice(item);
    }
    let e = strings.decode(Bytes::from(bad.clone())).unwrap_err();
    assert!(
        matches!(e, CodecError::InvalidElement { index: 0, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("zarrs.vlen_v2"), "{e}");
    let binary = chain(codecs.clone(), DataType::Bytes, &[2]);
    assert_eq!(
        binary.decode(Bytes::from(bad)).unwrap(),
        elements(&[b"\xff", b""])
    );

    let int32 =
        ChunkRepresentation::try_new(vec![2], DataType::Int32, FillValue::from(0i32)).unwrap();
    let meta = ExtensionObject::from_json(&codecs[0], "codecs[0]").unwrap();
    let e = CodecChain::from_metadata(&[meta], int32, &registry()).unwrap_err();
    assert!(
        matches!(e, CodecError::IncompatibleRepresentation { .. }),
        "{e}"
    );
}
