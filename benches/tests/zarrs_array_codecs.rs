//! The zarr-extensions array->array codecs `bitround` and `reshape`, zarrs' own
//! `zarrs.squeeze`, and the zarr-extensions complex types (`complex_float16`, ...), against
//! zarrs 0.23, which implements them all: zarrs writes arrays we read, we write arrays zarrs reads, and the
//! two write the same chunk bytes for the same values. (Here because this crate already
//! builds zarrs for the comparison harness.)

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder, ArrayBytes};
use zarr_store::FilesystemStore;
use zarrs::array::{Array as ZArray, ArrayBytes as ZBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore as ZStore;

use common::chunk_files;

struct Case {
    name: String,
    data_type: &'static str,
    shape: Vec<u64>,
    chunks: Vec<u64>,
    codecs: Value,
}

/// Bytes from a fixed-seed generator: every bit pattern, NaNs and negative numbers included.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (data_type, keepbits) in [
        ("uint8", 3),
        ("int16", 5),
        ("uint32", 7),
        ("int64", 20),
        ("float16", 4),
        ("float32", 9),
        ("float64", 30),
        ("complex128", 12),
    ] {
        cases.push(Case {
            name: format!("bitround_{data_type}"),
            data_type,
            shape: vec![7, 9],
            chunks: vec![4, 4],
            codecs: json!([
                {"name": "bitround", "configuration": {"keepbits": keepbits}},
                {"name": "bytes", "configuration": {"endian": "little"}},
            ]),
        });
    }
    cases.push(Case {
        name: "reshape_planes".into(),
        data_type: "uint16",
        shape: vec![8, 10, 6],
        chunks: vec![4, 5, 6],
        codecs: json!([
            {"name": "reshape", "configuration": {"shape": [[0, 1], -1]}},
            {"name": "bytes", "configuration": {"endian": "big"}},
        ]),
    });
    cases.push(Case {
        name: "reshape_flat_then_bitround".into(),
        data_type: "float32",
        shape: vec![5, 6],
        chunks: vec![3, 4],
        codecs: json!([
            {"name": "reshape", "configuration": {"shape": [-1]}},
            {"name": "bitround", "configuration": {"keepbits": 6}},
            {"name": "bytes", "configuration": {"endian": "little"}},
        ]),
    });
    cases.push(Case {
        name: "reshape_then_sharding".into(),
        data_type: "int32",
        shape: vec![8, 6, 4],
        chunks: vec![4, 6, 4],
        codecs: json!([
            {"name": "reshape", "configuration": {"shape": [[0], [1, 2]]}},
            {"name": "sharding_indexed", "configuration": {
                "chunk_shape": [2, 8],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"},
                ],
                "index_location": "end",
            }},
        ]),
    });
    // The zarr-extensions complex types named after their parts.
    for (data_type, codecs) in [
        (
            "complex_float16",
            json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
        ),
        (
            "complex_bfloat16",
            json!([{"name": "bitround", "configuration": {"keepbits": 3}},
                   {"name": "bytes", "configuration": {"endian": "little"}}]),
        ),
        (
            "complex_float32",
            json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
        ),
        (
            "complex_float64",
            json!([{"name": "bitround", "configuration": {"keepbits": 12}},
                   {"name": "bytes", "configuration": {"endian": "big"}}]),
        ),
        ("complex_float8_e4m3", json!([{"name": "bytes"}])),
        ("complex_float8_e5m2fnuz", json!([{"name": "bytes"}])),
    ] {
        cases.push(Case {
            name: data_type.into(),
            data_type,
            shape: vec![5, 7],
            chunks: vec![3, 4],
            codecs,
        });
    }
    cases.push(Case {
        name: "squeeze_then_transpose".into(),
        data_type: "uint16",
        shape: vec![6, 1, 10, 4],
        chunks: vec![3, 1, 5, 4],
        codecs: json!([
            {"name": "zarrs.squeeze"},
            {"name": "transpose", "configuration": {"order": [2, 0, 1]}},
            {"name": "bytes", "configuration": {"endian": "big"}},
        ]),
    });
    cases.push(Case {
        name: "squeeze_then_sharding".into(),
        data_type: "float32",
        shape: vec![2, 8, 1, 12],
        chunks: vec![1, 8, 1, 12],
        codecs: json!([
            {"name": "zarrs.squeeze", "configuration": {}},
            {"name": "sharding_indexed", "configuration": {
                "chunk_shape": [4, 6],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"},
                ],
                "index_location": "end",
            }},
        ]),
    });
    cases
}

fn metadata(case: &Case) -> Value {
    let fill = if case.data_type.starts_with("complex") {
        json!([0, 0])
    } else {
        json!(0)
    };
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": case.shape,
        "data_type": case.data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": case.chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill,
        "codecs": case.codecs,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_codecs_interoperate_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    std::fs::create_dir_all(&zarrs_root).unwrap();
    std::fs::create_dir_all(&ours_root).unwrap();
    let zarrs_store = Arc::new(ZStore::new(&zarrs_root).unwrap());
    let ours_store = Arc::new(FilesystemStore::new(&ours_root).unwrap());
    for (seed, case) in cases().into_iter().enumerate() {
        let name = case.name.as_str();
        let subset = ArraySubset::new_with_shape(case.shape.clone());

        // zarrs writes, we read.
        std::fs::create_dir_all(zarrs_root.join(name)).unwrap();
        std::fs::write(
            zarrs_root.join(name).join("zarr.json"),
            metadata(&case).to_string(),
        )
        .unwrap();
        let read = Array::open(
            Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
            &format!("/{name}"),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: we open the array: {e}"));
        let size = read.metadata().data_type.fixed_size().unwrap();
        let n: u64 = case.shape.iter().product();
        let values = noise(n as usize * size, seed as u64 + 1);
        let theirs = ZArray::open(Arc::clone(&zarrs_store), &format!("/{name}"))
            .unwrap_or_else(|e| panic!("{name}: zarrs opens: {e}"));
        theirs
            .store_array_subset(&subset, ZBytes::new_flen(values.clone()))
            .unwrap_or_else(|e| panic!("{name}: zarrs writes: {e}"));
        let ours_of_theirs = read
            .read_bytes(read.full_region())
            .await
            .unwrap_or_else(|e| panic!("{name}: we read zarrs' array: {e}"));
        if !case.codecs.to_string().contains("bitround") {
            assert_eq!(ours_of_theirs, values, "{name}: we read zarrs' array");
        }

        // We write the same values, zarrs reads.
        let ours = ArrayBuilder::new(
            case.shape.clone(),
            read.metadata().data_type.clone(),
            case.chunks.clone(),
        )
        .fill_value(read.metadata().fill_value.clone())
        .codecs(read.metadata().codecs.clone())
        .create(Arc::clone(&ours_store), &format!("/{name}"))
        .await
        .unwrap();
        ours.write_array_bytes(ours.full_region(), ArrayBytes::fixed(values.clone()))
            .await
            .unwrap();
        let back = ZArray::open(
            Arc::new(ZStore::new(&ours_root).unwrap()),
            &format!("/{name}"),
        )
        .unwrap_or_else(|e| panic!("{name}: zarrs opens ours: {e}"));
        let bytes: ZBytes<'static> = back
            .retrieve_array_subset(&subset)
            .unwrap_or_else(|e| panic!("{name}: zarrs reads ours: {e}"));
        // Both rounded the same values the same way.
        assert_eq!(
            &bytes.into_fixed().unwrap()[..],
            &ours_of_theirs[..],
            "{name}: zarrs reads our array as we read its"
        );
        assert_eq!(
            chunk_files(&ours_root.join(name)),
            chunk_files(&zarrs_root.join(name)),
            "{name}: chunk bytes"
        );
        if case.codecs.to_string().contains("bitround") {
            assert_ne!(ours_of_theirs, values, "{name}: bitround rounds");
        }
    }
}
