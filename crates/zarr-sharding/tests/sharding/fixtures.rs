//! Every sharded array of the fixture corpus (zarr-python 3.1.6, tensorstore 0.1.86) decodes
//! to the manifest's values: whole shards through a codec chain, and regions through
//! `fetch` + `decode_fetched*` over a store, with at most two requests per shard.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use zarr_codecs::{ArrayBytes, ArrayViewMut, ChunkRepresentation, CodecChain};
use zarr_core::{ArrayMetadata, NodeMetadata, Region};
use zarr_sharding::ShardingCodec;
use zarr_store::{MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};

use crate::registry;

pub(crate) fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../zarr-core/tests/fixtures")
}

/// The sharded fixtures; the test checks that the manifest holds no others.
const SHARDED: [&str; 12] = [
    "zarr-python/spec_shard_example_end",
    "zarr-python/spec_shard_example_start",
    "zarr-python/shard_index_end",
    "zarr-python/shard_index_start",
    "zarr-python/shard_index_no_crc32c",
    "zarr-python/shard_index_big_endian",
    "zarr-python/shard_index_start_no_crc32c",
    "zarr-python/shard_2d",
    "zarr-python/shard_nested",
    "zarr-python/shard_strings",
    "zarr-python/shard_transpose",
    "tensorstore/sharded",
];

/// One element of the manifest as native bytes (the sharded fixtures hold integers and
/// strings only).
fn element(dtype: &str, value: &Value) -> Vec<u8> {
    let int = || -> i128 {
        value
            .as_i64()
            .map(i128::from)
            .or_else(|| value.as_u64().map(i128::from))
            .unwrap_or_else(|| panic!("{value} is not an integer"))
    };
    match dtype {
        "|u1" => vec![int() as u8],
        "|i1" => vec![int() as i8 as u8],
        "<u2" => (int() as u16).to_ne_bytes().to_vec(),
        "<i2" => (int() as i16).to_ne_bytes().to_vec(),
        "<u4" => (int() as u32).to_ne_bytes().to_vec(),
        "<i4" => (int() as i32).to_ne_bytes().to_vec(),
        "<u8" => (int() as u64).to_ne_bytes().to_vec(),
        "<i8" => (int() as i64).to_ne_bytes().to_vec(),
        "str" => value.as_str().unwrap().as_bytes().to_vec(),
        other => panic!("dtype {other} is not used by the sharded fixtures"),
    }
}

fn elements(array: &ArrayBytes, elem: Option<usize>) -> Vec<Vec<u8>> {
    match (array, elem) {
        (ArrayBytes::Fixed(b), Some(e)) => b.chunks(e).map(<[u8]>::to_vec).collect(),
        (ArrayBytes::Variable(v), None) => v.iter().map(<[u8]>::to_vec).collect(),
        _ => panic!("array kind does not match the data type"),
    }
}

/// The expected elements of `region` of the shard at `origin`: manifest values inside the
/// array, the fill value outside.
fn expected(
    values: &[Vec<u8>],
    fill: &[u8],
    shape: &[u64],
    origin: &[u64],
    region: &Region,
) -> Vec<Vec<u8>> {
    let extent = region.shape();
    let n: u64 = extent.iter().product();
    (0..n)
        .map(|flat| {
            let mut rest = flat;
            let mut pos = vec![0u64; extent.len()];
            for d in (0..extent.len()).rev() {
                pos[d] = origin[d] + region.ranges()[d].start + rest % extent[d];
                rest /= extent[d];
            }
            if pos.iter().zip(shape).all(|(p, s)| p < s) {
                let linear = (0..shape.len()).fold(0u64, |acc, d| acc * shape[d] + pos[d]);
                values[linear as usize].clone()
            } else {
                fill.to_vec()
            }
        })
        .collect()
}

/// A region in the middle of a shard, touching several inner chunks partly.
fn middle(shard: &[u64]) -> Region {
    Region::try_new(
        shard
            .iter()
            .map(|&s| s / 4..(s - s / 4).max(s / 4 + 1))
            .collect(),
    )
    .unwrap()
}

fn grid_indices(grid: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![vec![]];
    for &n in grid {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..n).map(move |i| {
                    let mut p = prefix.clone();
                    p.push(i);
                    p
                })
            })
            .collect();
    }
    out
}

/// Per fixture: the codec (the array's sharding codec) and a chain over the array's codecs.
fn codec_and_chain(meta: &ArrayMetadata, shard: &[u64]) -> (ShardingCodec, CodecChain) {
    let registry = registry();
    let repr = ChunkRepresentation::try_new(
        shard.to_vec(),
        meta.data_type.clone(),
        meta.fill_value.clone(),
    )
    .unwrap();
    let chain = CodecChain::from_array_metadata(meta, shard.to_vec(), &registry).unwrap();
    let sharding = meta
        .codecs
        .iter()
        .find(|c| c.name == "sharding_indexed")
        .expect("a sharding codec");
    assert_eq!(meta.codecs.len(), 1, "only sharding at the top level");
    let codec = ShardingCodec::from_metadata(sharding, &repr, &registry).unwrap();
    (codec, chain)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sharded_fixture_reads_as_the_manifest_says() {
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("manifest.json")).unwrap())
            .unwrap();
    let mut seen = Vec::new();
    let mut shards_read = 0;
    for entry in manifest.iter().filter(|e| e["node_type"] == "array") {
        let name = entry["store"].as_str().unwrap();
        let path = entry["path"].as_str().unwrap();
        let dir = corpus().join(name).join(path);
        let text = std::fs::read_to_string(dir.join("zarr.json")).unwrap();
        if !text.contains("sharding_indexed") {
            continue;
        }
        let NodeMetadata::Array(meta) = NodeMetadata::from_json(&text).unwrap() else {
            panic!("{name}: not an array");
        };
        if !meta.codecs.iter().any(|c| c.name == "sharding_indexed") {
            continue;
        }
        seen.push(name.to_owned());
        let shape = meta.shape.clone();
        let shard_shape = meta
            .chunk_grid
            .chunk_shape(&shape, &vec![0; shape.len()])
            .unwrap();
        let (codec, chain) = codec_and_chain(&meta, &shard_shape);
        let dtype = entry["dtype"].as_str().unwrap();
        let values: Vec<Vec<u8>> = entry["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| element(dtype, v))
            .collect();
        let fill = meta.fill_value.as_bytes().to_vec();
        assert_eq!(fill, element(dtype, &entry["fill_value"]), "{name}: fill");
        let elem = meta.data_type.fixed_size();

        // The shards in a store that records every request.
        let store = Arc::new(RecordingStore::new(MemoryStore::new()));
        let grid = meta.chunk_grid.grid_shape(&shape).unwrap();
        for idx in grid_indices(&grid) {
            let key = meta.chunk_key_encoding.encode(&idx);
            if let Ok(bytes) = std::fs::read(dir.join(&key)) {
                store
                    .set(&StoreKey::new(&key), Bytes::from(bytes))
                    .await
                    .unwrap();
            }
        }
        store.clear();

        for idx in grid_indices(&grid) {
            let key = StoreKey::new(&meta.chunk_key_encoding.encode(&idx));
            let origin: Vec<u64> = idx.iter().zip(&shard_shape).map(|(i, s)| i * s).collect();
            let whole = Region::full(&shard_shape);
            let want = expected(&values, &fill, &shape, &origin, &whole);
            let stored = store.inner().get(&key).await.unwrap();

            // 1. Whole shards through the array's codec chain.
            if let Some(bytes) = &stored {
                let decoded = chain
                    .decode(bytes.clone())
                    .unwrap_or_else(|e| panic!("{name} {key}: {e}"));
                assert_eq!(elements(&decoded, elem), want, "{name} {key}: chain decode");
                // Our encoding decodes to the same values.
                let ours = codec.encode_shard(decoded.clone()).unwrap().unwrap();
                assert_eq!(
                    codec.decode_shard(ours.clone()).unwrap(),
                    decoded,
                    "{name} {key}"
                );
                // 1-D shards without compression: C order is Morton order, so the bytes
                // are the ones zarr-python wrote.
                let compressed = text.contains("zstd") || text.contains("gzip");
                if shard_shape.len() == 1 && !compressed && name.starts_with("zarr-python") {
                    assert_eq!(&ours[..], &bytes[..], "{name} {key}: byte-identical");
                }
            }

            // 2. Fetch + decode, whole shard and a middle region.
            for region in [whole.clone(), middle(&shard_shape)] {
                store.clear();
                let fetched = codec
                    .fetch(store.as_ref() as &dyn ReadableStore, &key, &region)
                    .await
                    .unwrap_or_else(|e| panic!("{name} {key}: {e}"));
                let requests = store.stats().calls();
                assert!(requests <= 2, "{name} {key} {region}: {requests} requests");
                let want = expected(&values, &fill, &shape, &origin, &region);
                let Some(fetched) = fetched else {
                    assert!(stored.is_none(), "{name} {key}: stored but not fetched");
                    assert!(
                        want.iter().all(|e| *e == fill),
                        "{name} {key}: missing shard"
                    );
                    continue;
                };
                let got = codec.decode_fetched(&fetched, &region).unwrap();
                assert_eq!(elements(&got, elem), want, "{name} {key} {region}");
                if let Some(elem) = elem {
                    let shape = region.shape();
                    let n = shape.iter().product::<u64>() as usize * elem;
                    let mut out = vec![0xa5u8; n];
                    let mut view = ArrayViewMut::new(&mut out, &shape, elem).unwrap();
                    codec
                        .decode_fetched_into_view(&fetched, &region, &mut view)
                        .unwrap();
                    assert_eq!(
                        out.chunks(elem).map(<[u8]>::to_vec).collect::<Vec<_>>(),
                        want,
                        "{name} {key} {region}: into a view"
                    );
                }
                shards_read += 1;
            }
        }
    }
    seen.sort();
    let mut expected_names = SHARDED.map(str::to_owned).to_vec();
    expected_names.sort();
    assert_eq!(seen, expected_names, "the sharded fixtures");
    assert!(shards_read >= 40, "{shards_read} shard reads");
}
