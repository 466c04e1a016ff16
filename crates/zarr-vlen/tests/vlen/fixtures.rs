//! Read every string and bytes array of the zarr-python 3.1.6 fixture corpus
//! (`crates/zarr-core/tests/fixtures`) chunk by chunk through a [`CodecChain`] built from its
//! metadata, and compare with the manifest exactly. Re-encode every stored chunk and check
//! that we write the bytes zarr-python wrote (before compression).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;
use zarr_codecs::{
    ArrayBytes, ArrayToBytesCodec, BytesToBytesCodec, ChunkRepresentation, CodecChain,
    ExpectedSize, ZstdCodec,
};
use zarr_core::{ArrayMetadata, DataType, NodeMetadata};
use zarr_vlen::{VlenBinary, VlenBytesCodec, VlenStrings, VlenUtf8Codec};

use crate::registry;

/// Fixtures that need the `sharding_indexed` codec, which lives in `zarr-sharding`, a crate
/// above this one: they are skipped here, by name, and counted (`zarr-array`'s fixture tests
/// read them).
const SKIPPED_SHARDED_FIXTURES: [&str; 1] = ["zarr-python/shard_strings"];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../zarr-core/tests/fixtures")
}

/// Every chunk index of a grid of `grid` chunks, in C order.
fn chunk_indices(grid: &[u64]) -> Vec<Vec<u64>> {
    let total: u64 = grid.iter().product();
    (0..total)
        .map(|mut flat| {
            let mut index = vec![0; grid.len()];
            for d in (0..grid.len()).rev() {
                index[d] = flat % grid[d];
                flat /= grid[d];
            }
            index
        })
        .collect()
}

/// Place the in-bounds elements of a decoded chunk (full chunk shape) into the array.
fn place(
    array: &mut [Vec<u8>],
    shape: &[u64],
    chunk: &VlenBinary<i64>,
    chunk_shape: &[u64],
    origin: &[u64],
) {
    for (flat, element) in chunk.iter().enumerate() {
        let mut rem = flat as u64;
        let mut within = vec![0u64; shape.len()];
        for d in (0..shape.len()).rev() {
            within[d] = rem % chunk_shape[d];
            rem /= chunk_shape[d];
        }
        if (0..shape.len()).any(|d| origin[d] + within[d] >= shape[d]) {
            continue; // outside the array: an edge chunk's padding
        }
        let dst = (0..shape.len()).fold(0u64, |acc, d| acc * shape[d] + origin[d] + within[d]);
        array[dst as usize] = element.to_vec();
    }
}

/// The bytes a manifest value stands for.
fn expected_bytes(dtype: &str, value: &Value) -> Vec<u8> {
    match dtype {
        "str" => value.as_str().unwrap().as_bytes().to_vec(),
        "bytes" => base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap())
            .unwrap(),
        other => panic!("unexpected dtype {other}"),
    }
}

/// The chunk before any bytes->bytes codec: the vlen layer zarr-python wrote.
fn strip_compression(metadata: &ArrayMetadata, stored: Bytes) -> Bytes {
    let mut bytes = stored;
    for codec in metadata.codecs[1..].iter().rev() {
        assert_eq!(codec.name, "zstd", "only zstd follows vlen in the corpus");
        let zstd = ZstdCodec::from_metadata(codec).unwrap();
        bytes = zstd.decode(bytes, ExpectedSize::AtMost(1 << 20)).unwrap();
    }
    bytes
}

/// Decode one stored chunk with the codec's direct Arrow path too, and check it agrees.
fn check_direct_decode(
    metadata: &ArrayMetadata,
    vlen_layer: &Bytes,
    repr: &ChunkRepresentation,
    via_chain: &VlenBinary<i64>,
    name: &str,
) {
    let n = repr.num_elements();
    match metadata.codecs[0].name.as_str() {
        "vlen-utf8" => {
            let s: VlenStrings<i32> = VlenUtf8Codec::new().decode_strings(vlen_layer, n).unwrap();
            assert_eq!(s.as_binary().to_vecs(), via_chain.to_vecs(), "{name}");
            let re = VlenUtf8Codec::new().encode_strings(&s).unwrap();
            assert_eq!(&re, vlen_layer, "{name}: encode_strings");
        }
        "vlen-bytes" => {
            let b: VlenBinary<i32> = VlenBytesCodec::new().decode_binary(vlen_layer, n).unwrap();
            assert_eq!(b.to_vecs(), via_chain.to_vecs(), "{name}");
            let re = VlenBytesCodec::new().encode_binary(&b).unwrap();
            assert_eq!(&re, vlen_layer, "{name}: encode_binary");
        }
        other => panic!("{name}: unexpected codec {other}"),
    }
    // The array->bytes codec on its own re-encodes the same bytes.
    let codec: Box<dyn ArrayToBytesCodec> = match metadata.codecs[0].name.as_str() {
        "vlen-utf8" => Box::new(VlenUtf8Codec::from_metadata(&metadata.codecs[0]).unwrap()),
        _ => Box::new(VlenBytesCodec::from_metadata(&metadata.codecs[0]).unwrap()),
    };
    let array = ArrayBytes::try_from(via_chain.clone()).unwrap();
    assert_eq!(&codec.encode(array, repr).unwrap(), vlen_layer, "{name}");
}

#[test]
fn every_string_and_bytes_fixture_decodes_to_the_manifest_values() {
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("manifest.json")).unwrap())
            .unwrap();
    let registry = registry();
    let (mut checked, mut skipped, mut stored_chunks, mut missing_chunks) = (0, 0, 0, 0);
    for entry in manifest.iter().filter(|e| {
        e["node_type"] == "array" && matches!(e["dtype"].as_str(), Some("str" | "bytes"))
    }) {
        let store = entry["store"].as_str().unwrap();
        let path = entry["path"].as_str().unwrap();
        let dtype = entry["dtype"].as_str().unwrap();
        let name = format!("{store} {path}");
        if SKIPPED_SHARDED_FIXTURES.contains(&store) {
            skipped += 1;
            continue;
        }
        let dir = corpus().join(store).join(path);
        let text = std::fs::read_to_string(dir.join("zarr.json")).unwrap();
        let NodeMetadata::Array(metadata) = NodeMetadata::from_json(&text).unwrap() else {
            panic!("{name} is not an array");
        };
        let metadata = *metadata;
        let expected_type = if dtype == "str" {
            DataType::String
        } else {
            DataType::Bytes
        };
        assert_eq!(metadata.data_type, expected_type, "{name}");

        let shape = metadata.shape.clone();
        let n: u64 = shape.iter().product();
        let mut array: Vec<Vec<u8>> = vec![Vec::new(); n as usize];
        let grid = metadata.chunk_grid.grid_shape(&shape).unwrap();
        let mut keys_read = Vec::new();
        for index in chunk_indices(&grid) {
            let chunk_shape = metadata.chunk_grid.chunk_shape(&shape, &index).unwrap();
            let origin = metadata.chunk_grid.chunk_origin(&shape, &index).unwrap();
            let chain = CodecChain::from_array_metadata(&metadata, chunk_shape.clone(), &registry)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let repr = chain.decoded_representation().clone();
            let key = metadata.chunk_key_encoding.encode(&index);
            let decoded = match std::fs::read(dir.join(&key)) {
                Ok(stored) => {
                    let stored = Bytes::from(stored);
                    keys_read.push(key.clone());
                    stored_chunks += 1;
                    let decoded = chain
                        .decode(stored.clone())
                        .unwrap_or_else(|e| panic!("{name} {key}: {e}"));
                    let binary = VlenBinary::<i64>::try_from(decoded.clone()).unwrap();
                    let vlen_layer = strip_compression(&metadata, stored.clone());
                    check_direct_decode(&metadata, &vlen_layer, &repr, &binary, &name);
                    // We write what zarr-python wrote: identical when uncompressed; through
                    // zstd, the same chunk once decompressed.
                    let encoded = chain.encode(decoded.clone()).unwrap();
                    if metadata.codecs.len() == 1 {
                        assert_eq!(encoded, stored, "{name} {key}: not zarr-python's bytes");
                    } else {
                        assert_eq!(strip_compression(&metadata, encoded), vlen_layer, "{name}");
                    }
                    decoded
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    missing_chunks += 1;
                    ArrayBytes::fill(&repr).unwrap()
                }
                Err(e) => panic!("{name} {key}: {e}"),
            };
            let binary = VlenBinary::<i64>::try_from(decoded).unwrap();
            assert_eq!(binary.len() as u64, repr.num_elements(), "{name} {key}");
            if dtype == "str" {
                // Every chunk is valid UTF-8 as a whole.
                VlenStrings::try_from_binary(binary.clone()).unwrap();
            }
            place(&mut array, &shape, &binary, &chunk_shape, &origin);
        }

        let mut manifest_keys: Vec<String> = entry["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .filter(|k| k != "zarr.json")
            .collect();
        manifest_keys.sort();
        keys_read.sort();
        assert_eq!(keys_read, manifest_keys, "{name}: stored chunks");

        let values = entry["values"].as_array().unwrap();
        assert_eq!(values.len(), array.len(), "{name}");
        for (i, (got, want)) in array.iter().zip(values).enumerate() {
            assert_eq!(got, &expected_bytes(dtype, want), "{name}[{i}]");
        }
        assert_eq!(
            metadata.fill_value.as_bytes(),
            expected_bytes(dtype, &entry["fill_value"]),
            "{name}: fill value"
        );
        checked += 1;
    }
    assert_eq!(skipped, SKIPPED_SHARDED_FIXTURES.len());
    assert_eq!(checked, 7, "string and bytes arrays checked");
    assert_eq!(stored_chunks, 14, "stored chunks decoded");
    assert_eq!(missing_chunks, 6, "missing chunks read as the fill value");
}

#[test]
fn the_uncompressed_fixture_is_the_spec_notes_example() {
    let stored = std::fs::read(corpus().join("zarr-python/string_uncompressed/c/0")).unwrap();
    assert_eq!(stored, crate::spec::VLEN_UTF8_EXAMPLE);
}
