//! numcodecs' `vlen-array` codec (`numcodecs.vlen-array`): the bytes numcodecs' `VLenArray`
//! writes, configurations, and elements that are not whole items as typed errors. (Zarr v2
//! arrays with the `vlen-array` object codec go both ways with numcodecs in `zarr-array`'s
//! `tests/interop.rs`.)

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, Error as CodecError, VlenBytes};
use zarr_core::{DataType, ExtensionObject};
use zarr_vlen::VlenArrayCodec;

use crate::{chain, repr};

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn codec(config: serde_json::Value) -> Result<VlenArrayCodec, CodecError> {
    let meta = ExtensionObject::from_json(
        &json!({"name": "numcodecs.vlen-array", "configuration": config}),
        "codecs[0]",
    )
    .unwrap();
    VlenArrayCodec::from_metadata(&meta)
}

/// What numcodecs 0.16's `VLenArray` encodes (computed with it): `[1, 2, 3], [], [-7]` as
/// `"<i4"`, and `[1.5], [2.0, -0.0]` as `">f8"`.
#[test]
fn decodes_and_encodes_what_numcodecs_writes() {
    let cases = [
        (
            "<i4",
            "030000000c0000000100000002000000030000000000000004000000f9ffffff",
            vec![
                [1i32, 2, 3]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<u8>>(),
                vec![],
                (-7i32).to_le_bytes().to_vec(),
            ],
        ),
        (
            ">f8",
            "02000000080000003ff80000000000001000000040000000000000008000000000000000",
            vec![
                1.5f64.to_be_bytes().to_vec(),
                [2.0f64, -0.0]
                    .iter()
                    .flat_map(|v| v.to_be_bytes())
                    .collect(),
            ],
        ),
    ];
    for (dtype, stored, elements) in cases {
        let codec = codec(json!({ "dtype": dtype })).unwrap();
        assert_eq!(codec.dtype(), Some(dtype));
        let repr = repr(DataType::Bytes, &[elements.len() as u64]);
        let expected =
            ArrayBytes::Variable(VlenBytes::from_elements(elements.iter().map(Vec::as_slice)));
        let stored = hex(stored);
        assert_eq!(
            codec.decode(Bytes::from(stored.clone()), &repr).unwrap(),
            expected,
            "{dtype}"
        );
        assert_eq!(
            &codec.encode(expected, &repr).unwrap()[..],
            &stored[..],
            "{dtype}"
        );
        assert_eq!(
            codec.to_metadata().to_json(),
            json!({"name": "numcodecs.vlen-array", "configuration": {"dtype": dtype}})
        );
    }
    // Through a chain with a compressor, as a v2 array with a compressor stores it.
    let chain = chain(
        json!([{"name": "numcodecs.vlen-array", "configuration": {"dtype": "<u2"}},
               {"name": "zstd", "configuration": {"level": 1}}]),
        DataType::Bytes,
        &[2],
    );
    let values = ArrayBytes::Variable(VlenBytes::from_elements([&[1u8, 0, 2, 0][..], &[9, 9]]));
    let encoded = chain.encode(values.clone()).unwrap();
    assert_eq!(chain.decode(encoded).unwrap(), values);
}

#[test]
fn configurations() {
    // Without `dtype` (as zarrs writes it), any element length goes.
    let any = codec(json!({})).unwrap();
    assert_eq!((any.dtype(), any.item_size()), (None, None));
    assert_eq!(
        any.to_metadata().to_json(),
        json!({"name": "numcodecs.vlen-array", "configuration": {}})
    );
    let repr = repr(DataType::Bytes, &[1]);
    let odd = ArrayBytes::Variable(VlenBytes::from_elements([&[1u8, 2, 3][..]]));
    let stored = any.encode(odd.clone(), &repr).unwrap();
    assert_eq!(any.decode(stored, &repr).unwrap(), odd);

    for (dtype, size) in [
        ("<i4", 4),
        (">u8", 8),
        ("|u1", 1),
        ("i1", 1),
        ("|b1", 1),
        ("<f2", 2),
        ("=f8", 8),
        ("<c16", 16),
        ("<M8[ns]", 8),
        (">m8", 8),
    ] {
        assert_eq!(
            VlenArrayCodec::with_dtype(dtype).unwrap().item_size(),
            Some(size),
            "{dtype}"
        );
    }
    for dtype in [
        "", "<", "|O", "<U4", "|S3", "<i3", "<i0", "<f1", "b2", "<M8[]", "<M8[n", "<i4[ns]", "x",
    ] {
        let err = VlenArrayCodec::with_dtype(dtype).unwrap_err();
        assert!(
            matches!(err, CodecError::InvalidConfiguration { .. }),
            "{dtype}: {err}"
        );
    }
    for config in [json!({"dtype": 4}), json!({"dtype": "<i4", "other": 1})] {
        let err = codec(config.clone()).unwrap_err();
        assert!(
            matches!(err, CodecError::InvalidConfiguration { .. }),
            "{config}: {err}"
        );
    }
    // Only for `bytes`.
    let err = any
        .encoded_size(&crate::repr(DataType::String, &[1]))
        .unwrap_err();
    assert!(
        matches!(err, CodecError::IncompatibleRepresentation { .. }),
        "{err}"
    );
}

#[test]
fn elements_that_are_not_whole_items_are_typed_errors() {
    let codec = VlenArrayCodec::with_dtype("<i4").unwrap();
    let repr = repr(DataType::Bytes, &[2]);
    let bad = ArrayBytes::Variable(VlenBytes::from_elements([&[0u8; 4][..], &[0; 6]]));
    let err = codec.encode(bad, &repr).unwrap_err();
    assert!(
        matches!(&err, CodecError::InvalidElement { index: 1, reason, .. } if reason.contains("6 bytes")),
        "{err}"
    );
    // The same chunk as stored by a writer that did not check: refused on reading too.
    let stored = zarr_vlen::VlenBytesCodec
        .encode(
            ArrayBytes::Variable(VlenBytes::from_elements([&[0u8; 4][..], &[0; 6]])),
            &repr,
        )
        .unwrap();
    let err = codec.decode(stored.clone(), &repr).unwrap_err();
    assert!(
        matches!(err, CodecError::InvalidElement { index: 1, .. }),
        "{err}"
    );
    // Truncated chunks are the layout's errors.
    let err = codec.decode(stored.slice(..9), &repr).unwrap_err();
    assert!(matches!(err, CodecError::Truncated { .. }), "{err}");
}
