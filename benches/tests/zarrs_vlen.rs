//! zarrs' `zarrs.vlen` and `zarrs.vlen_v2` codecs against zarrs 0.23: for strings and
//! bytes, both index types and locations, compressed and plain chains, and inside a shard, zarrs writes arrays we
//! read, we write arrays zarrs reads, and the two write the same chunk bytes. (Here because
//! this crate already builds zarrs for the comparison harness.)

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder, ArrayBytes, VlenBytes};
use zarr_store::FilesystemStore;
use zarrs::array::{Array as ZArray, ArrayBytes as ZBytes, ArrayBytesOffsets, ArraySubset};
use zarrs::filesystem::FilesystemStore as ZStore;

use common::chunk_files;

/// Strings of 0 to 40 bytes, some empty, some with 2- and 4-byte characters; a run of empty
/// ones fills one chunk with the fill value.
fn elements(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| match i % 7 {
            _ if (10..20).contains(&i) => Vec::new(),
            0 => Vec::new(),
            1 => "héllo".into(),
            2 => "🦊 zarr".into(),
            _ => "abcdefghij".repeat(i % 5).into_bytes(),
        })
        .collect()
}

fn vlen(index_codecs: Value, data_codecs: Value, index_type: &str, location: &str) -> Value {
    json!({"name": "zarrs.vlen", "configuration": {
        "index_codecs": index_codecs,
        "data_codecs": data_codecs,
        "index_data_type": index_type,
        "index_location": location,
    }})
}

fn cases() -> Vec<(&'static str, &'static str, Value)> {
    let le = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let be = json!({"name": "bytes", "configuration": {"endian": "big"}});
    let bytes = json!({"name": "bytes"});
    let zstd = json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}});
    let crc = json!({"name": "crc32c"});
    vec![
        (
            "strings_defaults",
            "string",
            json!([vlen(json!([le]), json!([bytes]), "uint64", "start")]),
        ),
        (
            "strings_compressed_end",
            "string",
            json!([vlen(
                json!([le, zstd]),
                json!([bytes, zstd]),
                "uint32",
                "end"
            )]),
        ),
        (
            "bytes_big_endian_index_checksummed_data",
            "bytes",
            json!([vlen(json!([be]), json!([bytes, crc]), "uint32", "start")]),
        ),
        (
            "strings_then_zstd",
            "string",
            json!([vlen(json!([le]), json!([bytes]), "uint64", "end"), zstd]),
        ),
        (
            "strings_vlen_v2",
            "string",
            json!([{"name": "zarrs.vlen_v2"}]),
        ),
        (
            "bytes_vlen_v2_then_zstd",
            "bytes",
            json!([{"name": "zarrs.vlen_v2", "configuration": {}}, zstd]),
        ),
        (
            "strings_in_shards",
            "string",
            json!([{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [5],
                "codecs": [vlen(json!([le]), json!([bytes, zstd]), "uint32", "end")],
                "index_codecs": [le, crc],
                "index_location": "end",
            }}]),
        ),
    ]
}

fn metadata(data_type: &str, codecs: &Value) -> Value {
    let fill = if data_type == "string" {
        json!("")
    } else {
        json!([])
    };
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [47],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill,
        "codecs": codecs,
    })
}

async fn read_ours(array: &Array<FilesystemStore>, data_type: &str) -> Vec<Vec<u8>> {
    if data_type == "string" {
        let text = array.read_text(..).await.unwrap();
        text.into_iter().map(String::into_bytes).collect()
    } else {
        array.read_binary::<i64>(..).await.unwrap().to_vecs()
    }
}

fn split(bytes: ZBytes<'static>) -> Vec<Vec<u8>> {
    let (values, offsets) = bytes.into_variable().unwrap().into_parts();
    offsets
        .windows(2)
        .map(|w| values[w[0]..w[1]].to_vec())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zarrs_vlen_interoperates_with_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let zarrs_root = dir.path().join("zarrs");
    let ours_root = dir.path().join("ours");
    std::fs::create_dir_all(&zarrs_root).unwrap();
    std::fs::create_dir_all(&ours_root).unwrap();
    let zarrs_store = Arc::new(ZStore::new(&zarrs_root).unwrap());
    let values = elements(47);
    let mut offsets = vec![0usize];
    for v in &values {
        offsets.push(offsets.last().unwrap() + v.len());
    }
    let flat: Vec<u8> = values.concat();
    let subset = ArraySubset::new_with_shape(vec![47]);
    for (name, data_type, codecs) in cases() {
        // zarrs writes, we read.
        std::fs::create_dir_all(zarrs_root.join(name)).unwrap();
        std::fs::write(
            zarrs_root.join(name).join("zarr.json"),
            metadata(data_type, &codecs).to_string(),
        )
        .unwrap();
        let theirs = ZArray::open(Arc::clone(&zarrs_store), &format!("/{name}"))
            .unwrap_or_else(|e| panic!("{name}: zarrs opens: {e}"));
        let input = ZBytes::new_vlen(
            flat.clone(),
            ArrayBytesOffsets::new(offsets.clone()).unwrap(),
        )
        .unwrap();
        theirs
            .store_array_subset(&subset, input)
            .unwrap_or_else(|e| panic!("{name}: zarrs writes: {e}"));
        let read = Array::open(
            Arc::new(FilesystemStore::new(&zarrs_root).unwrap()),
            &format!("/{name}"),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: we open zarrs' array: {e}"));
        assert_eq!(
            read_ours(&read, data_type).await,
            values,
            "{name}: we read zarrs' array"
        );

        // We write, zarrs reads.
        let ours = ArrayBuilder::new(vec![47], read.metadata().data_type.clone(), vec![10])
            .fill_value(read.metadata().fill_value.clone())
            .codecs(read.metadata().codecs.clone())
            .create(
                Arc::new(FilesystemStore::new(&ours_root).unwrap()),
                &format!("/{name}"),
            )
            .await
            .unwrap();
        let elements = VlenBytes::from_elements(values.iter().map(Vec::as_slice));
        ours.write_array_bytes(.., ArrayBytes::Variable(elements))
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
        assert_eq!(split(bytes), values, "{name}: zarrs reads our array");
        assert_eq!(
            chunk_files(&ours_root.join(name)),
            chunk_files(&zarrs_root.join(name)),
            "{name}: chunk bytes"
        );
    }
}
