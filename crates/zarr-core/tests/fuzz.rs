//! Fuzz-style properties: the parser never panics, whatever it is fed.

use proptest::prelude::*;
use serde_json::{Value, json};
use zarr_core::NodeMetadata;

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z_./0-9xNaInfity-]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("NaN"),
            Just("Infinity"),
            Just("0x7fc00001"),
            Just("regular"),
            Just("rectilinear"),
            Just("default"),
            Just("v2"),
            Just("float16"),
            Just("uint64"),
            Just("string"),
            Just("r16"),
            Just("numpy.datetime64"),
            Just("inline"),
            Just("/"),
            Just("."),
            Just("array"),
            Just("group"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("name".to_owned()),
                        Just("configuration".to_owned()),
                        Just("chunk_shape".to_owned()),
                        Just("chunk_shapes".to_owned()),
                        Just("kind".to_owned()),
                        Just("separator".to_owned()),
                        Just("must_understand".to_owned()),
                        Just("unit".to_owned()),
                        Just("scale_factor".to_owned()),
                        "[a-z]{1,6}",
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

const FIELDS: [&str; 12] = [
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "dimension_names",
    "storage_transformers",
    "consolidated_metadata",
];

fn valid_array() -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": [7, 5], "data_type": "int16",
        "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[[2, 3], 1], 2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}},
        "fill_value": -3, "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
        "attributes": {"a": [1, 2]}, "dimension_names": ["x", null]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = NodeMetadata::from_slice(&bytes);
    }

    #[test]
    fn random_json_never_panics(value in arb_json()) {
        let _ = NodeMetadata::from_json(&value.to_string());
        let _ = NodeMetadata::from_value(&value);
    }

    /// A valid document with one field replaced by random JSON: an error, or a document that
    /// writes and reads back to itself; never a panic.
    #[test]
    fn mutated_documents_never_panic(field in 0..FIELDS.len(), value in arb_json(), array in any::<bool>()) {
        let mut doc = if array {
            valid_array()
        } else {
            json!({"zarr_format": 3, "node_type": "group", "attributes": {}})
        };
        doc[FIELDS[field]] = value;
        if let Ok(node) = NodeMetadata::from_json(&doc.to_string()) {
            let written = node.to_json_pretty().expect("a parsed document can be written");
            let again = NodeMetadata::from_json(&written).expect("what we write, we read");
            prop_assert_eq!(again, node);
        }
    }
}

#[test]
fn the_mutation_base_is_valid() {
    NodeMetadata::from_json(&valid_array().to_string()).unwrap();
}
