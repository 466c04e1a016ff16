//! zarrs' `zarrs.default_suffix` chunk key encoding against zarrs: zarrs writes arrays we
//! read, we write arrays zarrs reads, and both name and fill the same chunk files. (Here
//! because this crate already builds zarrs for the comparison harness.)

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder};
use zarr_core::ChunkKeyEncoding;
use zarr_store::FilesystemStore;
use zarrs::array::{Array as ZArray, ArrayBytes as ZBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore as ZStore;

use common::chunk_files;

fn metadata(shape: &[u64], chunks: &[u64], encoding: &Value) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": encoding,
        "fill_value": 7,
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "zstd", "configuration": {"level": 1, "checksum": false}},
        ],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_suffix_keys_interoperate_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    std::fs::create_dir_all(&zarrs_root).unwrap();
    std::fs::create_dir_all(&ours_root).unwrap();
    let zarrs_store = Arc::new(ZStore::new(&zarrs_root).unwrap());
    let ours_store = Arc::new(FilesystemStore::new(&ours_root).unwrap());
    let cases = [
        (
            "slash",
            vec![5, 7],
            vec![2, 3],
            json!({"name": "zarrs.default_suffix", "configuration": {"suffix": ".tiff"}}),
            ["c/0/0.tiff", "c/2/2.tiff"],
        ),
        (
            "dot",
            vec![4, 4, 3],
            vec![2, 2, 2],
            json!({"name": "zarrs.default_suffix",
                   "configuration": {"separator": ".", "suffix": ".shard.bin"}}),
            ["c.0.0.0.shard.bin", "c.1.1.1.shard.bin"],
        ),
        (
            "scalar",
            vec![],
            vec![],
            json!({"name": "zarrs.default_suffix", "configuration": {"suffix": "-x"}}),
            ["c-x", "c-x"],
        ),
    ];
    for (name, shape, chunks, encoding, keys) in cases {
        let len: u64 = shape.iter().product();
        let values: Vec<u16> = (0..len as u16).map(|v| v * 3 + 1).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let subset = ArraySubset::new_with_shape(shape.clone());

        // zarrs writes, we read.
        std::fs::create_dir_all(zarrs_root.join(name)).unwrap();
        std::fs::write(
            zarrs_root.join(name).join("zarr.json"),
            metadata(&shape, &chunks, &encoding).to_string(),
        )
        .unwrap();
        let theirs = ZArray::open(Arc::clone(&zarrs_store), &format!("/{name}"))
            .unwrap_or_else(|e| panic!("{name}: zarrs opens: {e}"));
        theirs
            .store_array_subset(&subset, ZBytes::new_flen(bytes.clone()))
            .unwrap_or_else(|e| panic!("{name}: zarrs writes: {e}"));
        for key in keys {
            assert!(
                zarrs_root.join(name).join(key).is_file(),
                "{name}: zarrs wrote {key}"
            );
        }
        let read = Array::open(
            Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
            &format!("/{name}"),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: we open zarrs' array: {e}"));
        assert_eq!(
            read.chunk_key_encoding(),
            &ChunkKeyEncoding::from_json(&encoding, "chunk_key_encoding").unwrap()
        );
        let ours_of_theirs: Vec<u16> = read.read(read.full_region()).await.unwrap();
        assert_eq!(ours_of_theirs, values, "{name}: we read zarrs' array");
        assert_eq!(
            read.stored_chunks().await.unwrap().len(),
            chunks
                .iter()
                .zip(&shape)
                .map(|(c, s)| s.div_ceil(*c) as usize)
                .product::<usize>(),
            "{name}: we list zarrs' chunks"
        );

        // We write, zarrs reads.
        let ours = ArrayBuilder::new(shape.clone(), read.metadata().data_type.clone(), chunks)
            .fill_value(read.metadata().fill_value.clone())
            .codecs(read.metadata().codecs.clone())
            .chunk_key_encoding(read.chunk_key_encoding().clone())
            .create(Arc::clone(&ours_store), &format!("/{name}"))
            .await
            .unwrap();
        ours.write(ours.full_region(), &values).await.unwrap();
        let back = ZArray::open(
            Arc::new(ZStore::new(&ours_root).unwrap()),
            &format!("/{name}"),
        )
        .unwrap_or_else(|e| panic!("{name}: zarrs opens ours: {e}"));
        let theirs_of_ours: ZBytes<'static> = back
            .retrieve_array_subset(&subset)
            .unwrap_or_else(|e| panic!("{name}: zarrs reads ours: {e}"));
        assert_eq!(
            &theirs_of_ours.into_fixed().unwrap()[..],
            &bytes[..],
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
