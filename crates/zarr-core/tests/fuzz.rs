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
            Just("complex_float16"),
            Just("complex_float8_e4m3fn"),
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

/// The fields of a v2 `.zarray`, and values that steer the parser into its branches.
const V2_FIELDS: [&str; 9] = [
    "zarr_format",
    "shape",
    "chunks",
    "dtype",
    "compressor",
    "fill_value",
    "order",
    "filters",
    "dimension_separator",
];

fn arb_v2_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        arb_json(),
        prop_oneof![
            Just("<i4"),
            Just(">f8"),
            Just("|b1"),
            Just("|O"),
            Just("<U3"),
            Just("|S0"),
            Just("|V2"),
            Just("<M8[ns]"),
            Just("<m8[7s]"),
            Just("<c16"),
            Just("F"),
            Just("C"),
        ]
        .prop_map(|s| Value::String(s.into())),
        (
            prop_oneof![
                Just("blosc"),
                Just("zstd"),
                Just("pcodec"),
                Just("delta"),
                Just("fixedscaleoffset"),
                Just("astype"),
                Just("packbits"),
                Just("shuffle"),
                Just("vlen-utf8"),
                Just("lzma"),
            ],
            arb_json(),
            arb_json(),
        )
            .prop_map(|(id, a, b)| json!({"id": id, "dtype": a, "shuffle": b, "astype": a})),
        prop::collection::vec(
            prop_oneof![
                Just(json!({"id": "delta", "dtype": "<i4"})),
                Just(json!({"id": "shuffle", "elementsize": 4})),
                Just(json!({"id": "vlen-utf8"})),
                Just(json!({"id": "packbits"})),
                Just(json!({"id": "astype", "encode_dtype": ">i2", "decode_dtype": "<i4"})),
            ],
            0..3
        )
        .prop_map(Value::Array),
        prop::collection::vec(
            prop_oneof![
                Just(json!(["a", "<i4"])),
                Just(json!(["b", [["x", ">f4"]]])),
                Just(json!(["c", "<f4", [2]])),
                Just(json!(["d"]))
            ],
            0..3
        )
        .prop_map(Value::Array),
    ]
}

fn valid_zarray() -> Value {
    json!({
        "zarr_format": 2, "shape": [10, 6], "chunks": [4, 4], "dtype": "<i4",
        "compressor": {"id": "zstd", "level": 1}, "fill_value": 0, "order": "C",
        "filters": [{"id": "delta", "dtype": "<i4"}], "dimension_separator": "."
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A valid `.zarray` with up to two fields replaced: an error, or a v3 equivalent that
    /// (when v2 can store it) writes back as a `.zarray` that reads as the same array.
    #[test]
    fn mutated_zarrays_never_panic(
        mutations in prop::collection::vec((0..V2_FIELDS.len(), arb_v2_value()), 1..3)
    ) {
        use zarr_core::v2::ArrayMetadataV2;
        let mut doc = valid_zarray();
        for (field, value) in mutations {
            doc[V2_FIELDS[field]] = value;
        }
        let bytes = doc.to_string().into_bytes();
        let Ok(v2) = ArrayMetadataV2::from_slice(&bytes) else { return Ok(()) };
        let Ok(v3) = v2.to_v3(serde_json::Map::new()) else { return Ok(()) };
        if let Ok(written) = ArrayMetadataV2::from_v3(&v3).and_then(|w| w.to_json()) {
            let again = ArrayMetadataV2::from_slice(written.to_string().as_bytes())
                .and_then(|w| w.to_v3(serde_json::Map::new()))
                .expect("a .zarray we write reads back");
            prop_assert_eq!(again, v3);
        }
    }

    /// Random `.zmetadata` documents, and valid ones with a random entry.
    #[test]
    fn zmetadata_never_panics(value in arb_json(), entry in arb_v2_value(), which in 0..4usize) {
        use zarr_core::v2::consolidated_nodes;
        let _ = consolidated_nodes(value.to_string().as_bytes());
        let mut zarray = valid_zarray();
        zarray[V2_FIELDS[which % V2_FIELDS.len()]] = entry.clone();
        let doc = json!({"zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2},
            "a/.zgroup": if which == 0 { entry.clone() } else { json!({"zarr_format": 2}) },
            "a/.zattrs": if which == 1 { entry.clone() } else { json!({"k": 1}) },
            "a/b/.zarray": zarray,
            "a/b/.zattrs": if which == 2 { entry } else { json!({}) },
        }});
        let _ = consolidated_nodes(doc.to_string().as_bytes());
    }

    /// A group whose inline consolidated metadata has a random record.
    #[test]
    fn consolidated_records_never_panic(record in arb_json(), node in arb_json(), flat in any::<bool>()) {
        let metadata = if flat {
            json!({"x": node, "x/y": valid_array()})
        } else {
            json!({"x": {"zarr_format": 3, "node_type": "group",
                         "consolidated_metadata": {"kind": "inline", "must_understand": false,
                                                   "metadata": {"y": node}}}})
        };
        for consolidated in [
            record,
            json!({"kind": "inline", "must_understand": false, "metadata": metadata}),
        ] {
            let doc = json!({"zarr_format": 3, "node_type": "group", "attributes": {},
                             "consolidated_metadata": consolidated});
            if let Ok(node) = NodeMetadata::from_json(&doc.to_string()) {
                let written = node.to_json_pretty().expect("a parsed document can be written");
                let again = NodeMetadata::from_json(&written).expect("what we write, we read");
                prop_assert_eq!(again, node);
            }
        }
    }
}
