//! Parsing, validation and lossless writing of `zarr.json` documents.

use serde_json::{Value, json};
use zarr_core::{
    ArrayMetadata, ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, DataType, Error, FillValue,
    GroupMetadata, NodeMetadata, NodePath,
};

/// A valid array document in zarr-python's style.
fn base() -> Value {
    json!({
        "shape": [10, 6],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
        ],
        "attributes": {},
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": []
    })
}

fn with(mut doc: Value, key: &str, value: Value) -> Value {
    doc[key] = value;
    doc
}

fn without(mut doc: Value, key: &str) -> Value {
    doc.as_object_mut().unwrap().remove(key);
    doc
}

fn parse(doc: &Value) -> Result<NodeMetadata, Error> {
    NodeMetadata::from_json(&doc.to_string())
}

fn round_trip(doc: &Value) -> Value {
    let node = parse(doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let text = node.to_json_pretty().unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_typical_array_round_trips_exactly() {
    let doc = base();
    assert_eq!(round_trip(&doc), doc);
    let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
        panic!("not an array")
    };
    assert_eq!(array.shape, [10, 6]);
    assert_eq!(array.data_type, DataType::Float32);
    assert_eq!(array.chunk_key(&[1, 2]), "c/1/2");
    assert_eq!(array.num_elements().unwrap(), 60);
    assert_eq!(array.codecs.len(), 2);
    assert_eq!(array.codecs[1].name, "zstd");
}

#[test]
fn missing_required_fields_are_named() {
    for field in [
        "zarr_format",
        "node_type",
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
    ] {
        let err = parse(&without(base(), field)).unwrap_err();
        assert!(
            matches!(&err, Error::MissingField { field: f } if f == field),
            "{field}: {err}"
        );
    }
}

#[test]
fn invalid_fields_are_named() {
    let cases: Vec<(Value, &str)> = vec![
        (with(base(), "zarr_format", json!(2)), "zarr_format"),
        (with(base(), "zarr_format", json!("3")), "zarr_format"),
        (with(base(), "node_type", json!("table")), "node_type"),
        (with(base(), "shape", json!([10, -1])), "shape[1]"),
        (with(base(), "shape", json!([10, 1.5])), "shape[1]"),
        (with(base(), "shape", json!("10")), "shape"),
        (
            with(
                base(),
                "chunk_grid",
                json!({"name": "regular", "configuration": {"chunk_shape": [4, 0]}}),
            ),
            "chunk_grid.configuration.chunk_shape[1]",
        ),
        (
            with(
                base(),
                "chunk_grid",
                json!({"name": "regular", "configuration": {"chunk_shape": [4, -3]}}),
            ),
            "chunk_grid.configuration.chunk_shape[1]",
        ),
        (
            with(base(), "fill_value", json!("nope")),
            "invalid fill value",
        ),
        (with(base(), "codecs", json!([])), "codecs"),
        (with(base(), "codecs", json!({"name": "bytes"})), "codecs"),
        (
            with(base(), "codecs", json!([{"name": "bytes"}, 3])),
            "codecs[1]",
        ),
        (with(base(), "attributes", json!([1, 2])), "attributes"),
        (
            with(base(), "dimension_names", json!(["x", 1])),
            "dimension_names[1]",
        ),
        (
            with(base(), "storage_transformers", json!({})),
            "storage_transformers",
        ),
        (
            with(base(), "storage_transformers", json!([{"nom": "x"}])),
            "storage_transformers[0]",
        ),
    ];
    for (doc, needle) in cases {
        let err = parse(&doc).unwrap_err().to_string();
        assert!(err.contains(needle), "`{err}` should name `{needle}`");
    }
}

#[test]
fn typed_errors_for_cross_field_rules() {
    let err = parse(&with(
        base(),
        "chunk_grid",
        json!({"name": "regular", "configuration": {"chunk_shape": [4]}}),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::RankMismatch { .. }), "{err}");

    let err = parse(&with(base(), "dimension_names", json!(["x"]))).unwrap_err();
    assert!(
        matches!(&err, Error::RankMismatch { what, expected: 2, found: 1 } if what == "dimension_names"),
        "{err}"
    );

    let err = parse(&with(base(), "fill_value", json!(1e300))).unwrap_err();
    assert!(matches!(err, Error::InvalidFillValue { .. }), "{err}");
    let err = parse(&with(
        with(base(), "data_type", json!("uint8")),
        "fill_value",
        json!(256),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::InvalidFillValue { .. }), "{err}");

    let huge = with(
        with(base(), "shape", json!([u64::MAX, 2])),
        "chunk_grid",
        json!({"name": "regular", "configuration": {"chunk_shape": [1, 1]}}),
    );
    let err = parse(&huge).unwrap_err();
    assert!(
        matches!(&err, Error::Overflow { what } if what.contains("shape")),
        "{err}"
    );

    let err = parse(&with(base(), "data_type", json!("float128"))).unwrap_err();
    assert!(
        matches!(&err, Error::UnknownExtension { name, field, .. } if name == "float128" && field == "data_type"),
        "{err}"
    );
    let err = parse(&with(
        base(),
        "chunk_grid",
        json!({"name": "hexagonal", "configuration": {}}),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::UnknownExtension { .. }), "{err}");
    let err = parse(&with(
        base(),
        "chunk_key_encoding",
        json!({"name": "hilbert"}),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::UnknownExtension { .. }), "{err}");
    // A template must name each of the array's dimensions once.
    let rank = base()["shape"].as_array().unwrap().len();
    let format = (0..=rank)
        .map(|d| format!("{{{d}}}"))
        .collect::<Vec<_>>()
        .join("/");
    let err = parse(&with(
        base(),
        "chunk_key_encoding",
        json!({"name": "template", "configuration": {"format": format}}),
    ))
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidField { field, .. } if field == "chunk_key_encoding"),
        "{err}"
    );
}

#[test]
fn must_understand_rules() {
    // An unknown top-level field is refused, naming it.
    let err = parse(&with(base(), "chunk_stats", json!({"min": 0}))).unwrap_err();
    assert!(
        matches!(&err, Error::UnknownField { field } if field == "chunk_stats"),
        "{err}"
    );
    let err = parse(&with(base(), "chunk_stats", json!(7))).unwrap_err();
    assert!(matches!(err, Error::UnknownField { .. }));
    let err = parse(&with(
        base(),
        "chunk_stats",
        json!({"must_understand": true}),
    ))
    .unwrap_err();
    assert!(matches!(err, Error::UnknownField { .. }));
    // ... unless marked ignorable; then it is kept and written back.
    let doc = with(
        base(),
        "chunk_stats",
        json!({"must_understand": false, "min": 0}),
    );
    assert_eq!(round_trip(&doc), doc);
    let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
        panic!()
    };
    assert_eq!(array.extra_fields["chunk_stats"]["min"], 0);
    // Never allowed on data_type, chunk_grid or chunk_key_encoding.
    for (field, value) in [
        (
            "data_type",
            json!({"name": "float32", "must_understand": false}),
        ),
        (
            "chunk_grid",
            json!({"name": "regular", "configuration": {"chunk_shape": [4, 3]}, "must_understand": false}),
        ),
        (
            "chunk_key_encoding",
            json!({"name": "default", "must_understand": false}),
        ),
    ] {
        let err = parse(&with(base(), field, value)).unwrap_err();
        assert!(
            matches!(&err, Error::MustUnderstandNotAllowed { field: f } if f == field),
            "{field}: {err}"
        );
    }
    // Groups follow the same rule.
    let err =
        NodeMetadata::from_json(r#"{"zarr_format":3,"node_type":"group","x":1}"#).unwrap_err();
    assert!(matches!(err, Error::UnknownField { .. }));
    let doc = json!({"zarr_format": 3, "node_type": "group", "x": {"must_understand": false}});
    assert_eq!(round_trip(&doc), doc);
}

#[test]
fn short_hand_names_are_read_and_codecs_written_as_objects() {
    let doc = with(base(), "codecs", json!(["bytes", {"name": "crc32c"}]));
    let doc = with(doc, "chunk_key_encoding", json!("default"));
    let written = round_trip(&doc);
    assert_eq!(
        written["codecs"],
        json!([{"name": "bytes"}, {"name": "crc32c"}])
    );
    // What was read and not changed is written as it was read.
    assert_eq!(written["chunk_key_encoding"], json!("default"));
    let doc = with(base(), "data_type", json!({"name": "float32"}));
    assert_eq!(round_trip(&doc)["data_type"], json!({"name": "float32"}));
}

#[test]
fn changed_fields_are_written_canonically() {
    let doc = with(
        with(base(), "data_type", json!("variable_length_bytes")),
        "fill_value",
        json!(""),
    );
    let NodeMetadata::Array(mut array) = parse(&doc).unwrap() else {
        panic!()
    };
    assert_eq!(array.data_type, DataType::Bytes);
    assert_eq!(
        array.to_value().unwrap()["data_type"],
        json!("variable_length_bytes")
    );
    array.data_type = DataType::String;
    array.fill_value = FillValue::from("n/a");
    let written = array.to_value().unwrap();
    assert_eq!(written["data_type"], json!("string"));
    assert_eq!(written["fill_value"], json!("n/a"));
    array.chunk_key_encoding = ChunkKeyEncoding::V2 {
        separator: ChunkKeySeparator::Slash,
    };
    assert_eq!(
        array.to_value().unwrap()["chunk_key_encoding"],
        json!({"name": "v2", "configuration": {"separator": "/"}})
    );
}

#[test]
fn fill_values_keep_their_spelling_and_bits() {
    // An integer written for a float fill keeps its spelling.
    let doc = with(base(), "fill_value", json!(0));
    assert_eq!(round_trip(&doc)["fill_value"], json!(0));
    // A NaN payload survives a round trip, and is written as hex.
    let doc = with(base(), "fill_value", json!("0x7fc00001"));
    let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
        panic!()
    };
    assert_eq!(array.fill_value.as_bytes(), 0x7fc0_0001u32.to_ne_bytes());
    assert_eq!(round_trip(&doc)["fill_value"], json!("0x7fc00001"));
    let fresh = ArrayMetadata::new(
        vec![1],
        DataType::Float32,
        ChunkGrid::regular(vec![1]).unwrap(),
        FillValue::new(0xffc0_0000u32.to_ne_bytes()),
        vec![zarr_core::ExtensionObject::new("bytes")],
    )
    .unwrap();
    assert_eq!(fresh.to_value().unwrap()["fill_value"], json!("0xffc00000"));
}

#[test]
fn attributes_are_lossless() {
    let text = r#"{"zarr_format":3,"node_type":"group","attributes":
        {"z":1,"a":{"nested":[1,2.5,"x",null,true]},"big":18446744073709551615,"neg":-9223372036854775808,
         "uni":"héllo 🌍","m":0.1,"e":1e-300}}"#;
    let group = GroupMetadata::from_json(text).unwrap();
    let keys: Vec<_> = group.attributes.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["z", "a", "big", "neg", "uni", "m", "e"],
        "key order kept"
    );
    assert_eq!(group.attributes["big"].as_u64(), Some(u64::MAX));
    let written = group.to_json_pretty().unwrap();
    let again = GroupMetadata::from_json(&written).unwrap();
    assert_eq!(again, group);
    let original: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), original);
    // Key order survives writing, not just equality.
    let order: Vec<_> = serde_json::from_str::<Value>(&written).unwrap()["attributes"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(order, ["z", "a", "big", "neg", "uni", "m", "e"]);
}

#[test]
fn minimal_documents_stay_minimal() {
    // tensorstore-style: no attributes, no storage_transformers.
    let doc = without(without(base(), "attributes"), "storage_transformers");
    assert_eq!(round_trip(&doc), doc);
    let doc = json!({"zarr_format": 3, "node_type": "group"});
    assert_eq!(round_trip(&doc), doc);
}

#[test]
fn zero_dimensional_and_zero_length_arrays() {
    let doc = with(
        with(base(), "shape", json!([])),
        "chunk_grid",
        json!({"name": "regular", "configuration": {"chunk_shape": []}}),
    );
    let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
        panic!()
    };
    assert_eq!(array.num_elements().unwrap(), 1);
    assert_eq!(array.chunk_key(&[]), "c");
    assert_eq!(round_trip(&doc), doc);
    let doc = with(base(), "shape", json!([0, 6]));
    let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
        panic!()
    };
    assert_eq!(array.num_elements().unwrap(), 0);
    assert_eq!(array.chunk_grid.grid_shape(&array.shape).unwrap(), [0, 2]);
}

#[test]
fn dimension_names() {
    let doc = with(base(), "dimension_names", json!(["y", null]));
    let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
        panic!()
    };
    assert_eq!(array.dimension_names, Some(vec![Some("y".into()), None]));
    assert_eq!(round_trip(&doc), doc);
}

#[test]
fn storage_transformers_in_both_draft_forms() {
    let current = json!([{"name": "sharding", "configuration": {"chunks_per_shard": [2, 2]}}]);
    let legacy = json!([{
        "extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
        "type": "indexed",
        "configuration": {"chunks_per_shard": [2, 2]}
    }]);
    for doc in [
        with(base(), "storage_transformers", current),
        with(base(), "storage_transformers", legacy),
    ] {
        let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
            panic!()
        };
        assert_eq!(array.storage_transformers.len(), 1);
        assert_eq!(array.storage_transformers[0].name, "sharding");
        assert_eq!(
            array.storage_transformers[0]
                .configuration
                .as_ref()
                .unwrap()["chunks_per_shard"],
            json!([2, 2])
        );
        assert_eq!(
            round_trip(&doc),
            doc,
            "written back in the form it was read"
        );
    }
}

#[test]
fn zep0003_draft_grid_without_key_encoding() {
    let doc = without(
        with(
            with(base(), "shape", json!([100, 100])),
            "chunk_grid",
            json!({"type": "rectangular", "chunk_shape": [[5, 5, 5, 15, 15, 20, 35], 10], "separator": "/"}),
        ),
        "chunk_key_encoding",
    );
    let NodeMetadata::Array(array) = parse(&doc).unwrap() else {
        panic!()
    };
    assert_eq!(array.chunk_key_encoding, ChunkKeyEncoding::default());
    let (chunk, offset) = array.chunk_grid.chunk_of(&array.shape, &[17, 17]).unwrap();
    assert_eq!((chunk, offset), (vec![3, 1], vec![2, 7]));
    // Written back in the final rectilinear form.
    let written = array.to_value().unwrap();
    assert_eq!(written["chunk_grid"]["name"], "rectilinear");
    let again = ArrayMetadata::from_value(&written).unwrap();
    assert_eq!(again, *array);
}

#[test]
fn consolidated_metadata_is_kept_and_readable() {
    let doc = json!({
        "zarr_format": 3, "node_type": "group", "attributes": {},
        "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {
            "sub": {"zarr_format": 3, "node_type": "group", "attributes": {"a": 1},
                    "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {}}},
            "sub/arr": base()
        }}
    });
    assert_eq!(round_trip(&doc), doc);
    let NodeMetadata::Group(group) = parse(&doc).unwrap() else {
        panic!()
    };
    let nodes = group.consolidated_metadata.unwrap().nodes().unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[1].0, NodePath::new("/sub/arr").unwrap());
    assert!(matches!(nodes[1].1, NodeMetadata::Array(_)));
}

/// SPEC-NOTES checklist 16: consolidated metadata marked `must_understand: false` never makes
/// a group unreadable. A form we cannot read is kept as it is (and written back), unused; a
/// kind other than `inline` is read but not inline.
#[test]
fn unreadable_ignorable_consolidated_metadata_is_kept_unused() {
    let doc = json!({
        "zarr_format": 3, "node_type": "group",
        "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": 7}
    });
    let NodeMetadata::Group(group) = parse(&doc).unwrap() else {
        panic!()
    };
    assert!(group.consolidated_metadata.is_none());
    assert_eq!(round_trip(&doc), doc);
    // Without the flag it is an error naming the field.
    let strict = json!({
        "zarr_format": 3, "node_type": "group",
        "consolidated_metadata": {"kind": "inline", "metadata": 7}
    });
    assert!(
        parse(&strict)
            .unwrap_err()
            .to_string()
            .contains("consolidated_metadata")
    );
    let other = json!({
        "zarr_format": 3, "node_type": "group",
        "consolidated_metadata": {"kind": "external", "must_understand": false, "url": "x"}
    });
    let NodeMetadata::Group(group) = parse(&other).unwrap() else {
        panic!()
    };
    assert!(!group.consolidated_metadata.as_ref().unwrap().is_inline());
    assert_eq!(round_trip(&other), other);
}

#[test]
fn type_specific_parsers_refuse_the_other_node_type() {
    let group = r#"{"zarr_format":3,"node_type":"group"}"#;
    assert!(
        ArrayMetadata::from_json(group)
            .unwrap_err()
            .to_string()
            .contains("node_type")
    );
    assert!(
        GroupMetadata::from_json(&base().to_string())
            .unwrap_err()
            .to_string()
            .contains("node_type")
    );
    assert!(matches!(
        NodeMetadata::from_json("[1]"),
        Err(Error::NotAnObject { .. })
    ));
    assert!(matches!(NodeMetadata::from_json("{"), Err(Error::Json(_))));
    assert!(matches!(
        NodeMetadata::from_slice(b"\xff\xfe"),
        Err(Error::Json(_))
    ));
}

#[test]
fn serde_serialize_matches_to_value() {
    let node = parse(&base()).unwrap();
    assert_eq!(
        serde_json::to_value(&node).unwrap(),
        node.to_value().unwrap()
    );
}
