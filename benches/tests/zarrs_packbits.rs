//! The `packbits` codec (zarr-extensions) against zarrs, the implementation that writes it:
//! zarrs writes arrays we read, we write arrays zarrs reads, and the two write the same chunk
//! bytes for the same values. (Here because this crate already builds zarrs for the
//! comparison harness.)

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::Array;
use zarr_store::FilesystemStore;
use zarrs::array::{Array as ZArray, ArrayBytes as ZBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore as ZStore;

use common::chunk_files;

struct Case {
    name: &'static str,
    data_type: &'static str,
    configuration: Value,
    shape: Vec<u64>,
    chunks: Vec<u64>,
    /// Every element, in memory (native byte order), C order.
    values: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let bools: Vec<u8> = (0..13).map(|i| u8::from(i % 3 != 1)).collect();
    let int4: Vec<u8> = (0..15).map(|i| ((i % 16) as i8 - 8) as u8).collect();
    let uint2: Vec<u8> = (0..10).map(|i| (i * 7 % 4) as u8).collect();
    // Only bits 4..=11 set, so the range keeps every value whole.
    let uint16: Vec<u8> = (0..9u16)
        .flat_map(|i| ((i * 37 % 256) << 4).to_ne_bytes())
        .collect();
    // Values of 12 signed bits in int16: the sign comes from bit 11.
    let int16: Vec<u8> = [-2048i16, 2047, -1, 0, 5, -300, 1000]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    // float32 values whose low 16 bits are zero, kept as their upper halves.
    let float32: Vec<u8> = [1.5f32, -2.0, 0.25, 65536.0, -0.0, f32::INFINITY]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    // complex_float4_e2m1fn: two parts of 4 bits each, every code.
    let complex4: Vec<u8> = (0..22u8).map(|i| (i * 5) % 16).collect();
    // complex_float16: two parts of 16 bits each.
    let complex16: Vec<u8> = [1.5f32, -2.0, 0.25, 65504.0, -0.0, f32::INFINITY]
        .iter()
        .flat_map(|&v| half::f16::from_f32(v).to_ne_bytes())
        .collect();
    vec![
        Case {
            name: "complex_float4_e2m1fn",
            data_type: "complex_float4_e2m1fn",
            configuration: json!({"padding_encoding": "last_byte"}),
            shape: vec![11],
            chunks: vec![4],
            values: complex4,
        },
        Case {
            name: "complex_float16",
            data_type: "complex_float16",
            configuration: json!({}),
            shape: vec![3],
            chunks: vec![2],
            values: complex16,
        },
        Case {
            name: "bool_first_byte",
            data_type: "bool",
            configuration: json!({"padding_encoding": "first_byte"}),
            shape: vec![13],
            chunks: vec![5],
            values: bools,
        },
        Case {
            name: "int4",
            data_type: "int4",
            configuration: json!({}),
            shape: vec![3, 5],
            chunks: vec![2, 3],
            values: int4,
        },
        Case {
            name: "uint2_last_byte",
            data_type: "uint2",
            configuration: json!({"padding_encoding": "last_byte"}),
            shape: vec![10],
            chunks: vec![7],
            values: uint2,
        },
        Case {
            name: "uint16_bits_4_to_11",
            data_type: "uint16",
            configuration: json!({"first_bit": 4, "last_bit": 11}),
            shape: vec![9],
            chunks: vec![4],
            values: uint16,
        },
        Case {
            name: "int16_low_12_bits",
            data_type: "int16",
            configuration: json!({"last_bit": 11, "padding_encoding": "first_byte"}),
            shape: vec![7],
            chunks: vec![7],
            values: int16,
        },
        Case {
            name: "float32_upper_halves",
            data_type: "float32",
            configuration: json!({"first_bit": 16, "last_bit": 31}),
            shape: vec![6],
            chunks: vec![4],
            values: float32,
        },
    ]
}

fn metadata(case: &Case) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": case.shape,
        "data_type": case.data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": case.chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": match case.data_type {
            "bool" => json!(false),
            complex if complex.starts_with("complex") => json!([0, 0]),
            _ => json!(0),
        },
        "codecs": [{"name": "packbits", "configuration": case.configuration}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packbits_interoperates_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    std::fs::create_dir_all(&zarrs_root).unwrap();
    std::fs::create_dir_all(&ours_root).unwrap();
    let zarrs_store = Arc::new(ZStore::new(&zarrs_root).unwrap());
    let ours_store = Arc::new(FilesystemStore::new(&ours_root).unwrap());
    for case in cases() {
        let name = case.name;
        let subset = ArraySubset::new_with_shape(case.shape.clone());

        // zarrs writes, we read.
        std::fs::create_dir_all(zarrs_root.join(name)).unwrap();
        std::fs::write(
            zarrs_root.join(name).join("zarr.json"),
            metadata(&case).to_string(),
        )
        .unwrap();
        let theirs = ZArray::open(Arc::clone(&zarrs_store), &format!("/{name}"))
            .unwrap_or_else(|e| panic!("{name}: zarrs opens: {e}"));
        theirs
            .store_array_subset(&subset, ZBytes::new_flen(case.values.clone()))
            .unwrap_or_else(|e| panic!("{name}: zarrs writes: {e}"));
        let read = Array::open(
            Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
            &format!("/{name}"),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: we open zarrs' array: {e}"));
        let ours_of_theirs = read.read_bytes(read.full_region()).await.unwrap();
        assert_eq!(ours_of_theirs, case.values, "{name}: we read zarrs' array");

        // We write, zarrs reads.
        let ours = zarr_array::ArrayBuilder::new(
            case.shape.clone(),
            read.metadata().data_type.clone(),
            case.chunks.clone(),
        )
        .fill_value(read.metadata().fill_value.clone())
        .codecs(read.metadata().codecs.clone())
        .create(Arc::clone(&ours_store), &format!("/{name}"))
        .await
        .unwrap();
        ours.write_bytes(ours.full_region(), &case.values)
            .await
            .unwrap();
        // zarrs decodes each of our chunks whole as we do. (Whole chunks: when a region
        // covers part of a chunk, zarrs 0.23.14 neither extends the signs of signed types,
        // such as int4, nor shifts the bits back to `first_bit`, even in its own arrays.)
        let back = ZArray::open(
            Arc::new(ZStore::new(&ours_root).unwrap()),
            &format!("/{name}"),
        )
        .unwrap_or_else(|e| panic!("{name}: zarrs opens ours: {e}"));
        let grid: Vec<u64> = case
            .shape
            .iter()
            .zip(&case.chunks)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        let mut chunk = vec![0u64; grid.len()];
        loop {
            let theirs_chunk: ZBytes<'static> = back
                .retrieve_chunk(&chunk)
                .unwrap_or_else(|e| panic!("{name}: zarrs reads our chunk {chunk:?}: {e}"));
            let ours_chunk = ours.read_chunk(&chunk).await.unwrap();
            assert_eq!(
                &theirs_chunk.into_fixed().unwrap()[..],
                &ours_chunk.as_fixed().unwrap()[..],
                "{name}: zarrs decodes our chunk {chunk:?}"
            );
            // The next chunk index in C order.
            let Some(d) = (0..grid.len()).rev().find(|&d| chunk[d] + 1 < grid[d]) else {
                break;
            };
            chunk[d] += 1;
            chunk[d + 1..].iter_mut().for_each(|c| *c = 0);
        }
        // And whole regions, where that partial decoding cannot go wrong.
        let plain_bits = case.configuration.get("first_bit").is_none()
            && case.configuration.get("last_bit").is_none();
        if plain_bits && !case.data_type.starts_with("int") {
            let bytes: ZBytes<'static> = back
                .retrieve_array_subset(&subset)
                .unwrap_or_else(|e| panic!("{name}: zarrs reads ours: {e}"));
            assert_eq!(
                &bytes.into_fixed().unwrap()[..],
                &case.values[..],
                "{name}: zarrs reads our array"
            );
        }

        // The same values make the same chunks.
        assert_eq!(
            chunk_files(&ours_root.join(name)),
            chunk_files(&zarrs_root.join(name)),
            "{name}: chunk bytes"
        );
    }
}
