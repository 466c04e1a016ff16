//! Optional strings and bytes: the `zarrs.optional` codec (in `zarr-codecs`) around this
//! crate's `vlen-utf8` and `vlen-bytes`.

use serde_json::{Value, json};
use zarr_codecs::{
    ArrayBytes, ChunkRepresentation, CodecChain, Error, OptionalCodec, Result, VlenBytes,
};
use zarr_core::{DataType, ExtensionObject, FillValue};

use crate::registry;

fn dt(text: &str) -> DataType {
    text.parse().unwrap()
}

fn chain(codecs: Value, repr: ChunkRepresentation) -> Result<CodecChain> {
    let list: Vec<ExtensionObject> = codecs
        .as_array()
        .unwrap()
        .iter()
        .map(|c| ExtensionObject::from_json(c, "codecs").unwrap())
        .collect();
    CodecChain::from_metadata(&list, repr, &registry())
}

#[test]
fn strings_and_bytes_carry_their_validity_byte_last() {
    let text = dt("zarrs.optional<string>");
    let DataType::Optional(optional) = &text else {
        unreachable!()
    };
    assert_eq!(
        OptionalCodec::default_metadata(optional).to_json()["configuration"]["data_codecs"],
        json!([{"name": "vlen-utf8"}])
    );
    let repr = ChunkRepresentation::try_new(vec![2, 2], text.clone(), FillValue::new([0])).unwrap();
    let meta = OptionalCodec::default_metadata(optional).to_json();
    let chain_of_text = chain(json!([meta]), repr.clone()).unwrap();
    let elements: [&[u8]; 4] = [b"ice\x01", b"\x00", b"\x01", "sn\u{f6}w\u{1}".as_bytes()];
    let chunk = ArrayBytes::Variable(VlenBytes::from_elements(elements));
    let encoded = chain_of_text.encode(chunk.clone()).unwrap();
    assert_eq!(chain_of_text.decode(encoded).unwrap(), chunk);
    // All missing: the mask alone.
    let none = ArrayBytes::Variable(VlenBytes::from_elements([&[0u8][..]; 4]));
    let encoded = chain_of_text.encode(none.clone()).unwrap();
    assert_eq!(encoded[8..16], 0u64.to_le_bytes());
    assert_eq!(chain_of_text.decode(encoded).unwrap(), none);
    // An element without its validity byte, and invalid UTF-8 in a present value.
    let empty: [&[u8]; 4] = [b"a\x01", b"", b"\x00", b"\x00"];
    let e = chain_of_text
        .encode(ArrayBytes::Variable(VlenBytes::from_elements(empty)))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidElement { index: 1, .. }), "{e}");
    let bad: [&[u8]; 4] = [b"\xff\x01", b"\x00", b"\x00", b"\x00"];
    assert!(
        chain_of_text
            .encode(ArrayBytes::Variable(VlenBytes::from_elements(bad)))
            .is_err()
    );
    // Fixed-size bytes where elements of variable length belong.
    let e = chain_of_text
        .encode(ArrayBytes::fixed(vec![0; 4]))
        .unwrap_err();
    assert!(matches!(e, Error::UnexpectedArray { .. }), "{e}");

    let binary = dt("zarrs.optional<zarrs.optional<bytes>>");
    let repr = ChunkRepresentation::try_new(vec![3], binary.clone(), FillValue::new([0])).unwrap();
    let DataType::Optional(optional) = &binary else {
        unreachable!()
    };
    let chain = chain(
        json!([OptionalCodec::default_metadata(optional).to_json()]),
        repr,
    )
    .unwrap();
    let elements: [&[u8]; 3] = [b"\x00\xff\x01\x01", b"\x00\x01", b"\x00"];
    let chunk = ArrayBytes::Variable(VlenBytes::from_elements(elements));
    let encoded = chain.encode(chunk.clone()).unwrap();
    assert_eq!(chain.decode(encoded).unwrap(), chunk);
}
