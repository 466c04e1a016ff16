//! Decode every chunk of the fixture corpus (arrays written by zarr-python 3.1.6 and
//! tensorstore 0.1.86, see `crates/zarr-core/tests/fixtures/README.md`) and compare the
//! assembled arrays with the values in the manifest, exactly.
//!
//! Arrays that need codecs this crate does not have (sharding, variable-length strings and
//! bytes) or a data type `zarr-core` does not model (`structured`) are skipped by name, and
//! the number skipped is checked so nothing drops out silently.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;
use zarr_codecs::{ArrayBytes, CodecChain, CodecRegistry};
use zarr_core::{ArrayMetadata, NodeMetadata};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../zarr-core/tests/fixtures")
}

/// Codecs of other crates: arrays using them are skipped here.
const OTHER_CRATES_CODECS: [&str; 3] = ["sharding_indexed", "vlen-utf8", "vlen-bytes"];
/// Arrays skipped because of a codec of another crate.
const EXPECTED_SKIPPED_FOR_CODECS: usize = 19;
/// Arrays whose data type `zarr-core` does not model yet.
const UNMODELLED: [&str; 1] = ["zarr-python/structured"];

#[path = "../../../zarr-core/tests/fixtures/check.rs"]
mod check;
use check::check_element;

fn files(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, root, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push(rel);
        }
    }
}

/// Copy a decoded chunk (full chunk shape) into its clipped place in the array.
fn place_chunk(
    array: &mut [u8],
    shape: &[u64],
    chunk: &[u8],
    chunk_shape: &[u64],
    origin: &[u64],
    elem: usize,
) {
    let rank = shape.len();
    let extent: Vec<u64> = (0..rank)
        .map(|i| chunk_shape[i].min(shape[i] - origin[i]))
        .collect();
    let n: u64 = extent.iter().product();
    for flat in 0..n {
        let mut rem = flat;
        let mut within = vec![0u64; rank];
        for i in (0..rank).rev() {
            within[i] = rem % extent[i];
            rem /= extent[i];
        }
        let (mut src, mut dst) = (0u64, 0u64);
        for i in 0..rank {
            src = src * chunk_shape[i] + within[i];
            dst = dst * shape[i] + origin[i] + within[i];
        }
        let (s, d) = (src as usize * elem, dst as usize * elem);
        array[d..d + elem].copy_from_slice(&chunk[s..s + elem]);
    }
}

/// Whether the chain's bytes->bytes codecs are deterministic across implementations (so we
/// must write exactly the stored bytes).
fn byte_identical_expected(metadata: &ArrayMetadata) -> bool {
    metadata
        .codecs
        .iter()
        .all(|c| matches!(c.name.as_str(), "bytes" | "transpose" | "crc32c"))
}

#[test]
fn every_fixture_array_decodes_to_the_manifest_values() {
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("manifest.json")).unwrap())
            .unwrap();
    let registry = CodecRegistry::with_defaults();
    let (mut checked, mut skipped_codecs, mut skipped_types) = (0, 0, 0);
    let (mut chunks_decoded, mut byte_identical, mut compressed_identical) = (0, 0, 0);
    for entry in manifest.iter().filter(|e| e["node_type"] == "array") {
        let store = entry["store"].as_str().unwrap();
        let path = entry["path"].as_str().unwrap();
        let name = if path.is_empty() {
            store.to_owned()
        } else {
            format!("{store} {path}")
        };
        let dir = if path.is_empty() {
            corpus().join(store)
        } else {
            corpus().join(store).join(path)
        };
        if UNMODELLED.contains(&store) {
            skipped_types += 1;
            continue;
        }
        let text = std::fs::read_to_string(dir.join("zarr.json")).unwrap();
        let NodeMetadata::Array(metadata) = NodeMetadata::from_json(&text).unwrap() else {
            panic!("{name} is not an array");
        };
        if metadata
            .codecs
            .iter()
            .any(|c| OTHER_CRATES_CODECS.contains(&c.name.as_str()))
        {
            skipped_codecs += 1;
            continue;
        }

        let shape = metadata.shape.clone();
        let rank = shape.len();
        let elem = metadata.data_type.fixed_size().unwrap();
        let n_elements: u64 = shape.iter().product();
        let fill = metadata.fill_value.as_bytes().to_vec();
        let mut array: Vec<u8> = fill.repeat(n_elements as usize);

        // Every stored chunk, found by listing the store and decoding the keys.
        let mut listed = Vec::new();
        files(&dir, &dir, &mut listed);
        let mut chunk_keys = BTreeSet::new();
        let mut chains: Vec<(Vec<u64>, CodecChain)> = Vec::new();
        for key in listed.iter().filter(|k| *k != "zarr.json") {
            let index = metadata
                .chunk_key_encoding
                .decode(key, rank)
                .unwrap_or_else(|| panic!("{name}: `{key}` is not a chunk key"));
            chunk_keys.insert(key.clone());
            let chunk_shape = metadata.chunk_grid.chunk_shape(&shape, &index).unwrap();
            let origin = metadata.chunk_grid.chunk_origin(&shape, &index).unwrap();
            let chain = match chains.iter().find(|(s, _)| *s == chunk_shape) {
                Some((_, chain)) => chain.clone(),
                None => {
                    let chain =
                        CodecChain::from_array_metadata(&metadata, chunk_shape.clone(), &registry)
                            .unwrap_or_else(|e| panic!("{name}: {e}"));
                    chains.push((chunk_shape.clone(), chain.clone()));
                    chain
                }
            };
            let stored = Bytes::from(std::fs::read(dir.join(key)).unwrap());
            let decoded = chain
                .decode(stored.clone())
                .unwrap_or_else(|e| panic!("{name} {key}: {e}"));
            let ArrayBytes::Fixed(decoded_bytes) = &decoded else {
                panic!("{name} {key}: expected fixed-size elements")
            };
            // decode_into gives the same bytes.
            let mut direct = vec![0xa5; decoded_bytes.len()];
            chain
                .decode_into(stored.clone(), &mut direct)
                .unwrap_or_else(|e| panic!("{name} {key}: {e}"));
            assert_eq!(&direct[..], &decoded_bytes[..], "{name} {key}: decode_into");
            place_chunk(
                &mut array,
                &shape,
                decoded_bytes,
                &chunk_shape,
                &origin,
                elem,
            );

            // Round trip through our encoder.
            let encoded = chain
                .encode(decoded.clone())
                .unwrap_or_else(|e| panic!("{name} {key}: encode: {e}"));
            assert_eq!(
                chain.decode(encoded.clone()).unwrap(),
                decoded,
                "{name} {key}: round trip"
            );
            if byte_identical_expected(&metadata) {
                assert_eq!(
                    encoded, stored,
                    "{name} {key}: not the bytes zarr-python wrote"
                );
                byte_identical += 1;
            } else if encoded == stored {
                // zstd and blosc happen to match the peers' library versions byte for byte
                // (gzip does not: another deflate, another mtime); not required.
                compressed_identical += 1;
            }
            chunks_decoded += 1;
        }

        // The chunks found are the manifest's keys.
        let manifest_keys: BTreeSet<String> = entry["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .filter(|k| k != "zarr.json")
            .collect();
        assert_eq!(chunk_keys, manifest_keys, "{name}: chunk keys");

        // The values.
        let values = entry["values"].as_array().unwrap();
        assert_eq!(values.len() as u64, n_elements, "{name}: element count");
        for (i, (element, expected)) in array.chunks(elem.max(1)).zip(values).enumerate() {
            check_element(
                &metadata.data_type,
                element,
                expected,
                &format!("{name}[{i}]"),
            );
        }
        check_element(
            &metadata.data_type,
            &fill,
            &entry["fill_value"],
            &format!("{name} fill value"),
        );
        checked += 1;
    }
    assert_eq!(
        skipped_codecs, EXPECTED_SKIPPED_FOR_CODECS,
        "arrays skipped for codecs"
    );
    assert_eq!(
        skipped_types,
        UNMODELLED.len(),
        "arrays skipped for data types"
    );
    assert!(checked >= 90, "{checked} arrays checked");
    assert!(chunks_decoded > 150, "{chunks_decoded} chunks decoded");
    assert!(
        byte_identical > 50,
        "{byte_identical} chunks byte-identical"
    );
    eprintln!(
        "{checked} arrays, {chunks_decoded} chunks decoded, {byte_identical} re-encoded \
         byte for byte (and {compressed_identical} compressed ones); skipped {skipped_codecs} \
         (sharding/vlen) + {skipped_types} (data type)"
    );
}

/// c-blosc stores incompressible data (and everything at clevel 0) uncompressed, setting the
/// memcpyed flag but leaving the shuffle flag as it was: tensorstore's `float32_blosc`
/// chunks are such containers, and zarr-python's `blosc_clevel0` ones are memcpyed without
/// shuffle. Both decode to the manifest values in the test above; this pins down that the
/// corpus really has those headers.
#[test]
fn the_corpus_has_memcpyed_blosc_containers() {
    let flags = |rel: &str| std::fs::read(corpus().join(rel)).unwrap()[2];
    // 0x01 shuffle, 0x02 memcpyed, 0x10 blocks not split, 0x20 lz4.
    assert_eq!(flags("tensorstore/float32_blosc/c/0/0"), 0x33);
    assert_eq!(flags("zarr-python/blosc_clevel0/c/0"), 0x32);
    assert_eq!(flags("zarr-python/blosc_lz4_shuffle/c/0"), 0x31);
}
