//! zarrs' `zarrs.regular_bounded` chunk grid (edge chunks end at the array's end) against
//! zarrs: zarrs writes arrays we read, we write arrays zarrs reads, both store the same chunk
//! files, and after we resize an array, zarrs reads the re-encoded edge chunks. (Here
//! because this crate already builds zarrs for the comparison harness.)

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder};
use zarr_core::ChunkGrid;
use zarr_store::FilesystemStore;
use zarrs::array::{Array as ZArray, ArrayBytes as ZBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore as ZStore;

use common::chunk_files;

fn metadata(shape: &[u64], chunks: &[u64], codecs: &Value) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": "uint16",
        "chunk_grid": {"name": "zarrs.regular_bounded", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 7,
        "codecs": codecs,
    })
}

fn values(shape: &[u64]) -> Vec<u16> {
    let len: u64 = shape.iter().product();
    (0..len as u16).map(|v| v.wrapping_mul(3) + 1).collect()
}

fn bytes_of(values: &[u16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// What zarrs reads from the array at `path` under `root`.
fn zarrs_reads(root: &std::path::Path, path: &str) -> Vec<u8> {
    let array = ZArray::open(Arc::new(ZStore::new(root).unwrap()), path)
        .unwrap_or_else(|e| panic!("{path}: zarrs opens ours: {e}"));
    let subset = ArraySubset::new_with_shape(array.shape().to_vec());
    let read: ZBytes<'static> = array
        .retrieve_array_subset(&subset)
        .unwrap_or_else(|e| panic!("{path}: zarrs reads ours: {e}"));
    read.into_fixed().unwrap().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regular_bounded_grids_interoperate_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    std::fs::create_dir_all(&zarrs_root).unwrap();
    std::fs::create_dir_all(&ours_root).unwrap();
    let zarrs_store = Arc::new(ZStore::new(&zarrs_root).unwrap());
    let ours_store = Arc::new(FilesystemStore::new(&ours_root).unwrap());
    let plain = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    let zstd = json!([
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "zstd", "configuration": {"level": 1, "checksum": false}},
    ]);
    let sharded = json!([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 3],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}
        ],
        "index_location": "end"}}]);
    let cases = [
        ("plain", vec![5u64, 7], vec![2u64, 3], plain),
        ("zstd", vec![10, 4, 3], vec![4, 4, 2], zstd),
        ("sharded", vec![6, 9], vec![4, 6], sharded),
        (
            "smaller_than_a_chunk",
            vec![3, 2],
            vec![8, 8],
            json!([
                {"name": "bytes", "configuration": {"endian": "little"}}
            ]),
        ),
    ];
    for (name, shape, chunks, codecs) in cases {
        let values = values(&shape);
        let bytes = bytes_of(&values);
        let subset = ArraySubset::new_with_shape(shape.clone());

        // zarrs writes, we read.
        std::fs::create_dir_all(zarrs_root.join(name)).unwrap();
        std::fs::write(
            zarrs_root.join(name).join("zarr.json"),
            metadata(&shape, &chunks, &codecs).to_string(),
        )
        .unwrap();
        let theirs = ZArray::open(Arc::clone(&zarrs_store), &format!("/{name}"))
            .unwrap_or_else(|e| panic!("{name}: zarrs opens: {e}"));
        theirs
            .store_array_subset(&subset, ZBytes::new_flen(bytes.clone()))
            .unwrap_or_else(|e| panic!("{name}: zarrs writes: {e}"));
        let read = Array::open(
            Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
            &format!("/{name}"),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: we open zarrs' array: {e}"));
        assert_eq!(
            read.chunk_grid(),
            &ChunkGrid::regular_bounded(chunks.clone()).unwrap()
        );
        let ours_of_theirs: Vec<u16> = read.read(read.full_region()).await.unwrap();
        assert_eq!(ours_of_theirs, values, "{name}: we read zarrs' array");

        // We write, zarrs reads.
        let ours = ArrayBuilder::new(shape.clone(), read.metadata().data_type.clone(), chunks)
            .chunk_grid(read.chunk_grid().clone())
            .fill_value(read.metadata().fill_value.clone())
            .codecs(read.metadata().codecs.clone())
            .create(Arc::clone(&ours_store), &format!("/{name}"))
            .await
            .unwrap();
        ours.write(ours.full_region(), &values).await.unwrap();
        assert_eq!(
            zarrs_reads(&ours_root, &format!("/{name}")),
            bytes,
            "{name}: zarrs reads ours"
        );
        // The same chunk files, by name and content: edge chunks are cut alike.
        assert_eq!(
            chunk_files(&ours_root.join(name)),
            chunk_files(&zarrs_root.join(name)),
            "{name}: chunk files"
        );
    }
}

/// After we grow or shrink a bounded array, its edge chunks have the new shapes, so zarrs
/// (which re-encodes nothing when it resizes) reads the resized array correctly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zarrs_reads_bounded_arrays_we_resized() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
    let shape = vec![5u64, 7];
    let mut array = ArrayBuilder::new(shape.clone(), zarr_core::DataType::UInt16, vec![2, 3])
        .chunk_grid(ChunkGrid::regular_bounded(vec![2, 3]).unwrap())
        .fill_value(zarr_core::FillValue::new(7u16.to_ne_bytes().to_vec()))
        .create(store, "/r")
        .await
        .unwrap();
    let values = values(&shape);
    array.write(array.full_region(), &values).await.unwrap();
    // A model of the array: element (i, j) of the current shape.
    let mut model: Vec<Vec<u16>> = values.chunks(7).map(<[u16]>::to_vec).collect();
    for new_shape in [[6u64, 8], [3, 4], [4, 9], [4, 9 + 3]] {
        array.resize(new_shape.to_vec()).await.unwrap();
        let (rows, cols) = (new_shape[0] as usize, new_shape[1] as usize);
        model.resize(rows, Vec::new());
        for row in &mut model {
            row.resize(cols, 7);
        }
        let expected: Vec<u16> = model.iter().flatten().copied().collect();
        assert_eq!(
            array.read::<u16>(array.full_region()).await.unwrap(),
            expected,
            "we read {new_shape:?}"
        );
        assert_eq!(
            zarrs_reads(dir.path(), "/r"),
            bytes_of(&expected),
            "zarrs reads {new_shape:?}"
        );
    }
}
