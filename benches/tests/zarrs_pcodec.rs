//! The `numcodecs.pcodec` codec against zarrs 0.23, which compresses with pco 1.x (pco's
//! format 4.1) where numcodecs 0.16 and this crate's encoder use pco 0.4 (format 3.0): zarrs
//! writes arrays we read, and we write arrays zarrs reads. (Here because this crate already
//! builds zarrs for the comparison harness.)

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder};
use zarr_store::FilesystemStore;
use zarrs::array::{Array as ZArray, ArrayBytes as ZBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore as ZStore;

/// 1,000 numbers of one type, in memory order, with structure pco looks for: a smooth
/// trend with noise, runs, and multiples of a base (so `auto` picks its other modes).
fn values(data_type: &str) -> Vec<u8> {
    let n = 1000usize;
    let x = |i: usize| {
        let t = i as f64;
        (t * 0.05).sin() * 300.0 + t * 0.7 + ((i * 7919) % 13) as f64
    };
    let mut out = Vec::new();
    for i in 0..n {
        match data_type {
            "int16" => out.extend_from_slice(&((x(i) as i16) - 200).to_ne_bytes()),
            "int32" => out.extend_from_slice(&((x(i) as i32) * 1000 - 7).to_ne_bytes()),
            "int64" => out.extend_from_slice(&((x(i) as i64) << 20).to_ne_bytes()),
            "uint16" => out.extend_from_slice(&((x(i) + 400.0) as u16).to_ne_bytes()),
            "uint32" => out.extend_from_slice(&((x(i) + 400.0) as u32 * 3).to_ne_bytes()),
            "uint64" => out.extend_from_slice(&(i as u64 * 1_000_003 + 17).to_ne_bytes()),
            "float16" => out.extend_from_slice(&half::f16::from_f64(x(i) / 10.0).to_ne_bytes()),
            // Decimal-looking floats: FloatMult mode.
            "float32" => out.extend_from_slice(&((x(i) as i32) as f32 * 0.1).to_ne_bytes()),
            "float64" => out.extend_from_slice(&(x(i) * 1e-3).to_ne_bytes()),
            other => panic!("no values for {other}"),
        }
    }
    out
}

const TYPES: [&str; 9] = [
    "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "float32", "float64",
];

/// The configurations both write: numcodecs' defaults and one of each kind of choice.
fn configurations() -> Vec<(&'static str, Value)> {
    vec![
        ("default", json!({})),
        (
            "classic_no_delta",
            json!({"level": 3, "mode_spec": "classic", "delta_spec": "none"}),
        ),
        (
            "consecutive_2_small_pages",
            json!({"delta_spec": "try_consecutive", "delta_encoding_order": 2,
                   "equal_pages_up_to": 300}),
        ),
        (
            "lookback",
            json!({"delta_spec": "try_lookback", "level": 10}),
        ),
    ]
}

fn metadata(data_type: &str, configuration: &Value) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [1000],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [400]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "numcodecs.pcodec", "configuration": configuration}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pcodec_interoperates_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    std::fs::create_dir_all(&zarrs_root).unwrap();
    std::fs::create_dir_all(&ours_root).unwrap();
    let zarrs_store = Arc::new(ZStore::new(&zarrs_root).unwrap());
    let ours_store = Arc::new(FilesystemStore::new(&ours_root).unwrap());
    let subset = ArraySubset::new_with_shape(vec![1000]);
    for data_type in TYPES {
        let values = values(data_type);
        for (config_name, configuration) in configurations() {
            let name = format!("{data_type}_{config_name}");

            // zarrs writes (pco 1.x), we read.
            std::fs::create_dir_all(zarrs_root.join(&name)).unwrap();
            std::fs::write(
                zarrs_root.join(&name).join("zarr.json"),
                metadata(data_type, &configuration).to_string(),
            )
            .unwrap();
            let theirs = ZArray::open(Arc::clone(&zarrs_store), &format!("/{name}"))
                .unwrap_or_else(|e| panic!("{name}: zarrs opens: {e}"));
            theirs
                .store_array_subset(&subset, ZBytes::new_flen(values.clone()))
                .unwrap_or_else(|e| panic!("{name}: zarrs writes: {e}"));
            let read = Array::open(
                Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
                &format!("/{name}"),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: we open zarrs' array: {e}"));
            let ours_of_theirs = read
                .read_bytes(read.full_region())
                .await
                .unwrap_or_else(|e| panic!("{name}: we read zarrs' array: {e}"));
            assert_eq!(ours_of_theirs, values, "{name}: we read zarrs' array");

            // We write (pco 0.4), zarrs reads.
            let ours = ArrayBuilder::new(vec![1000], read.metadata().data_type.clone(), vec![400])
                .fill_value(read.metadata().fill_value.clone())
                .codecs(read.metadata().codecs.clone())
                .create(Arc::clone(&ours_store), &format!("/{name}"))
                .await
                .unwrap();
            ours.write_bytes(ours.full_region(), &values).await.unwrap();
            let back = ZArray::open(
                Arc::new(ZStore::new(&ours_root).unwrap()),
                &format!("/{name}"),
            )
            .unwrap_or_else(|e| panic!("{name}: zarrs opens ours: {e}"));
            let bytes: ZBytes<'static> = back
                .retrieve_array_subset(&subset)
                .unwrap_or_else(|e| panic!("{name}: zarrs reads ours: {e}"));
            assert_eq!(
                &bytes.into_fixed().unwrap()[..],
                &values[..],
                "{name}: zarrs reads our array"
            );
            // Two formats: pco 1.x's (4.1) there, pco 0.4's (3.0) here.
            let theirs_chunk = std::fs::read(zarrs_root.join(&name).join("c/0")).unwrap();
            let ours_chunk = std::fs::read(ours_root.join(&name).join("c/0")).unwrap();
            assert_eq!(&theirs_chunk[..4], b"pco!", "{name}");
            assert_ne!(theirs_chunk, ours_chunk, "{name}");
        }
    }
}
