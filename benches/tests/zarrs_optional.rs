//! zarrs' optional (nullable) data type and `zarrs.optional` codec against zarrs: zarrs
//! writes arrays we read, we write arrays zarrs reads, and both store the same chunk files.
//! (Here because this crate already builds zarrs for the comparison harness.)

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder};
use zarr_store::FilesystemStore;
use zarrs::array::{Array as ZArray, ArraySubset};
use zarrs::filesystem::FilesystemStore as ZStore;

use common::chunk_files;

fn metadata(shape: &[u64], chunks: &[u64], data_type: Value, fill: Value, codecs: Value) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": fill,
        "codecs": codecs,
    })
}

fn optional(inner: Value) -> Value {
    json!({"name": "zarrs.optional", "configuration": inner})
}

fn optional_codec(mask: Value, data: Value) -> Value {
    json!({"name": "zarrs.optional", "configuration": {"mask_codecs": mask, "data_codecs": data}})
}

/// An array zarrs and we each write from the same metadata.
struct Case {
    name: &'static str,
    metadata: Value,
    /// Whether zarrs reads it back (zarrs 0.23 writes sharded optional arrays but refuses
    /// to read them: its sharding codec's reader takes no optional data type).
    zarrs_reads: bool,
}

fn setup(root: &std::path::Path, case: &Case) {
    std::fs::create_dir_all(root.join(case.name)).unwrap();
    std::fs::write(
        root.join(case.name).join("zarr.json"),
        case.metadata.to_string(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_arrays_interoperate_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    let zarrs_store = Arc::new(ZStore::new(&zarrs_root).unwrap());
    let ours_store = Arc::new(FilesystemStore::new(&ours_root).unwrap());
    let uint16 = json!({"name": "uint16", "configuration": {}});
    let shape = [5u64, 7];
    let subset = ArraySubset::new_with_shape(shape.to_vec());
    // The first row missing (its chunks hold the fill value only), then a pattern.
    let values: Vec<Option<u16>> = (0..35u16)
        .map(|i| (i >= 7 && i % 3 != 0).then_some(i * 1000 + 1))
        .collect();
    let cases = [
        Case {
            name: "null_fill",
            metadata: metadata(
                &shape,
                &[2, 3],
                optional(uint16.clone()),
                Value::Null,
                json!([optional_codec(
                    json!([{"name": "packbits"}]),
                    json!([{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "zstd", "configuration": {"level": 1, "checksum": false}}])
                )]),
            ),
            zarrs_reads: true,
        },
        Case {
            name: "value_fill",
            metadata: metadata(
                &shape,
                &[3, 3],
                optional(uint16.clone()),
                json!([42]),
                json!([
                    optional_codec(
                        json!([{"name": "packbits"},
                               {"name": "zstd", "configuration": {"level": 3, "checksum": true}}]),
                        json!([{"name": "bytes", "configuration": {"endian": "big"}}])
                    ),
                    {"name": "crc32c"}
                ]),
            ),
            zarrs_reads: true,
        },
        Case {
            name: "sharded",
            metadata: metadata(
                &shape,
                &[4, 4],
                optional(uint16.clone()),
                Value::Null,
                json!([{"name": "sharding_indexed", "configuration": {
                    "chunk_shape": [2, 2],
                    "codecs": [optional_codec(
                        json!([{"name": "packbits"}]),
                        json!([{"name": "bytes", "configuration": {"endian": "little"}}])
                    )],
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                     {"name": "crc32c"}],
                    "index_location": "end"}}]),
            ),
            zarrs_reads: false,
        },
    ];
    for case in &cases {
        let name = case.name;
        setup(&zarrs_root, case);
        // zarrs writes, we read.
        let theirs = ZArray::open(Arc::clone(&zarrs_store), &format!("/{name}"))
            .unwrap_or_else(|e| panic!("{name}: zarrs opens: {e}"));
        theirs
            .store_array_subset(&subset, values.clone())
            .unwrap_or_else(|e| panic!("{name}: zarrs writes: {e}"));
        let read = Array::open(
            Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
            &format!("/{name}"),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: we open zarrs' array: {e}"));
        let ours_of_theirs = read.read_optional::<u16>(..).await.unwrap();
        assert_eq!(ours_of_theirs, values, "{name}: we read zarrs' array");

        // We write, zarrs reads.
        let ours = ArrayBuilder::new(
            shape.to_vec(),
            read.metadata().data_type.clone(),
            read.chunk_shape().unwrap().to_vec(),
        )
        .fill_value(read.metadata().fill_value.clone())
        .codecs(read.metadata().codecs.clone())
        .create(Arc::clone(&ours_store), &format!("/{name}"))
        .await
        .unwrap();
        ours.write_optional(.., &values).await.unwrap();
        let back = ZArray::open(
            Arc::new(ZStore::new(&ours_root).unwrap()),
            &format!("/{name}"),
        )
        .unwrap_or_else(|e| panic!("{name}: zarrs opens ours: {e}"));
        if case.zarrs_reads {
            let theirs_of_ours: Vec<Option<u16>> = back
                .retrieve_array_subset(&subset)
                .unwrap_or_else(|e| panic!("{name}: zarrs reads ours: {e}"));
            assert_eq!(theirs_of_ours, values, "{name}: zarrs reads our array");
        }
        // Our metadata as zarrs sees it: the data type and fill value round trip.
        let ours_json: Value =
            serde_json::from_slice(&std::fs::read(ours_root.join(name).join("zarr.json")).unwrap())
                .unwrap();
        assert_eq!(ours_json["data_type"], case.metadata["data_type"], "{name}");
        assert_eq!(
            ours_json["fill_value"], case.metadata["fill_value"],
            "{name}"
        );

        // The same chunk files, by name and content.
        assert_eq!(
            chunk_files(&ours_root.join(name)),
            chunk_files(&zarrs_root.join(name)),
            "{name}: chunk files"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_optional_arrays_interoperate_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    let case = Case {
        name: "nested",
        zarrs_reads: true,
        metadata: metadata(
            &[4, 4],
            &[2, 2],
            optional(optional(json!({"name": "uint8", "configuration": {}}))),
            json!([null]),
            json!([optional_codec(
                json!([{"name": "packbits"}]),
                json!([optional_codec(
                    json!([{"name": "packbits"}]),
                    json!([{"name": "bytes"}])
                )])
            )]),
        ),
    };
    // The zarr-extensions example: N, SN, 2, 3 / N, 5, N, 7 / SN, SN, N, N / SN, SN, N, N.
    let (n, sn) = (None, Some(None));
    let v = |x: u8| Some(Some(x));
    let values: Vec<Option<Option<u8>>> = vec![
        n,
        sn,
        v(2),
        v(3),
        n,
        v(5),
        n,
        v(7),
        sn,
        sn,
        n,
        n,
        sn,
        sn,
        n,
        n,
    ];
    let as_bytes = |values: &[Option<Option<u8>>]| -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| match v {
                None => [0, 0, 0],
                Some(None) => [0, 0, 1],
                Some(Some(x)) => [*x, 1, 1],
            })
            .collect()
    };
    setup(&zarrs_root, &case);
    let subset = ArraySubset::new_with_shape(vec![4, 4]);
    let theirs = ZArray::open(Arc::new(ZStore::new(&zarrs_root).unwrap()), "/nested").unwrap();
    theirs.store_array_subset(&subset, values.clone()).unwrap();
    let read = Array::open(
        Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
        "/nested",
    )
    .await
    .unwrap();
    assert_eq!(read.read_bytes(..).await.unwrap(), as_bytes(&values));

    let ours = ArrayBuilder::new(vec![4, 4], read.metadata().data_type.clone(), vec![2, 2])
        .fill_value(read.metadata().fill_value.clone())
        .create(
            Arc::new(FilesystemStore::new(&ours_root).unwrap()),
            "/nested",
        )
        .await
        .unwrap();
    // The builder's default codecs are the ones above.
    assert_eq!(
        Value::Array(ours.metadata().codecs.iter().map(|c| c.to_json()).collect()),
        case.metadata["codecs"]
    );
    ours.write_bytes(.., &as_bytes(&values)).await.unwrap();
    let back = ZArray::open(Arc::new(ZStore::new(&ours_root).unwrap()), "/nested").unwrap();
    let theirs_of_ours: Vec<Option<Option<u8>>> = back.retrieve_array_subset(&subset).unwrap();
    assert_eq!(theirs_of_ours, values);
    assert_eq!(
        chunk_files(&ours_root.join("nested")),
        chunk_files(&zarrs_root.join("nested"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_strings_interoperate_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    let case = Case {
        name: "strings",
        zarrs_reads: true,
        metadata: metadata(
            &[3, 3],
            &[2, 2],
            optional(json!({"name": "string", "configuration": {}})),
            Value::Null,
            json!([
                optional_codec(json!([{"name": "packbits"}]), json!([{"name": "vlen-utf8"}])),
                {"name": "zstd", "configuration": {"level": 1, "checksum": false}}
            ]),
        ),
    };
    let values: Vec<Option<String>> = [
        Some("ice"),
        None,
        Some(""),
        Some("snöw"),
        None,
        Some("a longer value"),
        None,
        None,
        Some("x"),
    ]
    .iter()
    .map(|v| v.map(str::to_owned))
    .collect();
    setup(&zarrs_root, &case);
    let subset = ArraySubset::new_with_shape(vec![3, 3]);
    let theirs = ZArray::open(Arc::new(ZStore::new(&zarrs_root).unwrap()), "/strings").unwrap();
    theirs.store_array_subset(&subset, values.clone()).unwrap();
    let read = Array::open(
        Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
        "/strings",
    )
    .await
    .unwrap();
    assert_eq!(read.read_optional_text(..).await.unwrap(), values);

    let ours = ArrayBuilder::new(vec![3, 3], read.metadata().data_type.clone(), vec![2, 2])
        .zstd(1)
        .create(
            Arc::new(FilesystemStore::new(&ours_root).unwrap()),
            "/strings",
        )
        .await
        .unwrap();
    let ours_json: Value = serde_json::from_slice(
        &std::fs::read(ours_root.join("strings").join("zarr.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(ours_json["codecs"], case.metadata["codecs"]);
    ours.write_optional_text(.., &values).await.unwrap();
    let back = ZArray::open(Arc::new(ZStore::new(&ours_root).unwrap()), "/strings").unwrap();
    let theirs_of_ours: Vec<Option<String>> = back.retrieve_array_subset(&subset).unwrap();
    assert_eq!(theirs_of_ours, values);
    assert_eq!(
        chunk_files(&ours_root.join("strings")),
        chunk_files(&zarrs_root.join("strings"))
    );
}
