//! Reads of a few elements of large uncompressed ZEP0007 (`zarr-rs.vlen_arrow`) chunks fetch
//! only the offsets and values bytes they need, directly and inside shards; strings in shards
//! of any inner codecs fetch only the inner chunks they need; bad chunks are errors naming
//! the key.

// Regions are written as literal range lists, including one-range ones.
#![allow(clippy::single_range_in_vec_init)]

use std::sync::Arc;

use bytes::Bytes;
use zarr_array::{Array, ArrayBuilder, Error};
use zarr_core::{DataType, ExtensionObject};
use zarr_store::{MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};
use zarr_vlen::VlenStrings;

fn vlen_arrow() -> ExtensionObject {
    ExtensionObject::from_json(
        &serde_json::json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}}),
        "codecs[0]",
    )
    .unwrap()
}

/// Element `i`: varied lengths, multi-byte UTF-8, some empty.
fn word(i: usize) -> String {
    match i % 7 {
        0 => String::new(),
        1 => format!("ß{i}"),
        2 => format!("{i}🦀{}", "x".repeat(i % 13)),
        _ => format!("w{i}"),
    }
}

fn words(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(word).collect()
}

async fn read(
    array: &Array<RecordingStore<MemoryStore>>,
    region: &[std::ops::Range<u64>],
) -> Vec<String> {
    let strings = array.read_strings::<i32>(region.to_vec()).await.unwrap();
    strings.iter().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_strings_of_a_large_chunk_cost_two_small_requests() {
    let n = 200_000usize;
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![n as u64], DataType::String, vec![n as u64])
        .array_to_bytes(vlen_arrow())
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    let all = words(0..n);
    array
        .write_strings(0..n as u64, &VlenStrings::<i32>::from_strs(&all).unwrap())
        .await
        .unwrap();
    let stored = store.get(&StoreKey::new("s/c/0")).await.unwrap().unwrap();
    assert!(stored.len() > 1_000_000, "a large chunk: {}", stored.len());

    store.clear();
    let got = read(&array, &[123_456..123_466]).await;
    assert_eq!(got, all[123_456..123_466]);
    let stats = store.stats();
    assert_eq!(stats.calls(), 2, "offsets, then values: {stats:?}");
    assert!(stats.bytes_read < 256, "only the bytes in range: {stats:?}");

    // The whole chunk is still read whole, in one request.
    store.clear();
    let got = read(&array, &[0..n as u64]).await;
    assert_eq!(got, all);
    assert_eq!(store.stats().calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regions_of_2d_chunks_and_missing_chunks() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![300, 200], DataType::String, vec![150, 100])
        .array_to_bytes(vlen_arrow())
        .fill_value_json(serde_json::json!("∅"))
        .unwrap()
        .create(Arc::clone(&store), "/t")
        .await
        .unwrap();
    // Chunks (0, 0), (0, 1) and (1, 0) written; (1, 1) missing.
    let all = words(0..300 * 200);
    let at = |y: u64, x: u64| -> String {
        if y >= 150 && x >= 100 {
            "∅".to_owned()
        } else {
            all[(y * 200 + x) as usize].clone()
        }
    };
    for (ys, xs) in [(0..150, 0..200), (150..300, 0..100)] {
        let values: Vec<String> = ys
            .clone()
            .flat_map(|y| xs.clone().map(move |x| (y, x)))
            .map(|(y, x)| at(y, x))
            .collect();
        array
            .write_strings(
                vec![ys.clone(), xs.clone()],
                &VlenStrings::<i32>::from_strs(&values).unwrap(),
            )
            .await
            .unwrap();
    }
    // A block inside one chunk: 3 rows, so 3 runs, in two requests.
    store.clear();
    let got = read(&array, &[10..13, 40..45]).await;
    let expected: Vec<String> = (10..13)
        .flat_map(|y| (40..45).map(move |x| (y, x)))
        .map(|(y, x)| at(y, x))
        .collect();
    assert_eq!(got, expected);
    let stats = store.stats();
    assert_eq!(stats.calls(), 2, "{stats:?}");
    assert!(stats.bytes_read < 512, "{stats:?}");

    // A block across all four chunks, one of them missing (fill value).
    let got = read(&array, &[148..153, 97..103]).await;
    let expected: Vec<String> = (148..153)
        .flat_map(|y| (97..103).map(move |x| (y, x)))
        .map(|(y, x)| at(y, x))
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_strings_of_a_shard_cost_three_small_requests() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    // Shards of 40_000 strings in inner chunks of 10_000.
    let n = 80_000u64;
    let array = ArrayBuilder::new(vec![n], DataType::String, vec![40_000])
        .array_to_bytes(vlen_arrow())
        .sharding(vec![10_000])
        .create(Arc::clone(&store), "/sh")
        .await
        .unwrap();
    let mut all = words(0..n as usize);
    // Inner chunk 2 of shard 0 all fill (empty strings): not stored, marked empty.
    for s in &mut all[20_000..30_000] {
        s.clear();
    }
    array
        .write_strings(0..n, &VlenStrings::<i32>::from_strs(&all).unwrap())
        .await
        .unwrap();

    store.clear();
    let got = read(&array, &[15_000..15_004]).await;
    assert_eq!(got, all[15_000..15_004]);
    let stats = store.stats();
    assert_eq!(stats.calls(), 3, "index, offsets, values: {stats:?}");
    assert!(
        stats.bytes_read < 1024,
        "the index (16 bytes per inner chunk + crc) and a few offsets and values: {stats:?}"
    );

    // Across inner chunks, through the empty one, and into the next shard.
    let got = read(&array, &[19_998..20_003]).await;
    assert_eq!(got, all[19_998..20_003]);
    let got = read(&array, &[29_999..40_002]).await;
    assert_eq!(got, all[29_999..40_002]);
}

/// Strings in shards of `vlen-utf8` inner chunks (what zarr-python writes): a region inside
/// a shard costs the index and one request for the inner chunks it touches, never the whole
/// shard; a whole shard is one request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_of_a_vlen_utf8_shard_fetches_only_its_inner_chunks() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let n = 80_000u64;
    let array = ArrayBuilder::new(vec![n], DataType::String, vec![40_000])
        .sharding(vec![10_000])
        .create(Arc::clone(&store), "/u")
        .await
        .unwrap();
    assert_eq!(array.metadata().codecs[0].name, "sharding_indexed");
    let inner = array.codec_chain().codecs()[0].to_metadata();
    let inner_codecs = inner.configuration.as_ref().unwrap()["codecs"].to_string();
    assert!(inner_codecs.contains("vlen-utf8"), "{inner_codecs}");
    let all = words(0..n as usize);
    array
        .write_strings(0..n, &VlenStrings::<i32>::from_strs(&all).unwrap())
        .await
        .unwrap();
    let shard = store.get(&StoreKey::new("u/c/0")).await.unwrap().unwrap();

    store.clear();
    let got = read(&array, &[15_000..15_004]).await;
    assert_eq!(got, all[15_000..15_004]);
    let stats = store.stats();
    assert_eq!(
        stats.calls(),
        2,
        "the index, then one inner chunk: {stats:?}"
    );
    assert!(
        (stats.bytes_read as usize) < shard.len() / 3,
        "one inner chunk of four and the index, not the {}-byte shard: {stats:?}",
        shard.len()
    );

    store.clear();
    let got = read(&array, &[0..40_000]).await;
    assert_eq!(got, all[..40_000]);
    assert_eq!(store.stats().calls(), 1, "a whole shard: one request");

    // Across inner chunks and shards.
    let got = read(&array, &[19_998..50_003]).await;
    assert_eq!(got, all[19_998..50_003]);
    let text = array.read_text(39_999..40_001).await.unwrap();
    assert_eq!(text, all[39_999..40_001]);
}

/// 80,000 strings (`words`) in shards of 40,000 of inner chunks of 10,000 (`vlen-utf8`) at
/// `path`, with the UTF-8 of `broken` (the text `w{broken}`) made invalid in its shard.
async fn string_shards_with_a_broken_element(
    store: &Arc<RecordingStore<MemoryStore>>,
    path: &str,
    broken: usize,
) -> (Array<RecordingStore<MemoryStore>>, Vec<String>) {
    let n = 80_000u64;
    let sharding = ExtensionObject::from_json(
        &serde_json::json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": [10_000], "codecs": [{"name": "vlen-utf8"}]}}),
        "codecs[0]",
    )
    .unwrap();
    let array = ArrayBuilder::new(vec![n], DataType::String, vec![40_000])
        .codecs(vec![sharding])
        .create(Arc::clone(store), path)
        .await
        .unwrap();
    let all = words(0..n as usize);
    array
        .write_strings(0..n, &VlenStrings::<i32>::from_strs(&all).unwrap())
        .await
        .unwrap();
    let text = format!("w{broken}");
    assert_eq!(all[broken], text);
    let key = StoreKey::try_new(format!(
        "{}/c/{}",
        path.trim_start_matches('/'),
        broken / 40_000
    ))
    .unwrap();
    let mut shard = store.get(&key).await.unwrap().unwrap().to_vec();
    let at = shard
        .windows(text.len())
        .position(|w| w == text.as_bytes())
        .unwrap();
    shard[at] = 0xff;
    store.set(&key, shard.into()).await.unwrap();
    (array, all)
}

/// Writing part of a string shard reads the shard once, re-encodes only the inner chunks the
/// region touches and writes the shard once: an inner chunk elsewhere is neither decoded
/// nor re-encoded (a corrupt one is kept byte for byte and does not fail the write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_into_part_of_a_string_shard_re_encodes_only_its_inner_chunks() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    // Element 35,003 is in inner chunk 3 of shard 0.
    let (array, mut all) = string_shards_with_a_broken_element(&store, "/w", 35_003).await;
    let key = StoreKey::new("w/c/0");

    // Rewrite elements 5..10 (inner chunk 0).
    store.clear();
    let new: Vec<String> = (5..10).map(|i| format!("new {i}")).collect();
    array
        .write_strings(5..10, &VlenStrings::<i32>::from_strs(&new).unwrap())
        .await
        .unwrap();
    let stats = store.stats();
    assert_eq!((stats.gets, stats.sets), (1, 1), "{stats:?}");
    all.splice(5..10, new);

    assert_eq!(read(&array, &[0..30_000]).await, all[..30_000]);
    let shard = store.get(&key).await.unwrap().unwrap();
    assert!(
        shard.windows(6).any(|w| w == b"\xff35003"),
        "the untouched inner chunk keeps its bytes"
    );
    let err = array.read_text(35_000..35_010).await.unwrap_err();
    assert!(
        matches!(&err, Error::Element { element, .. } if element == &[35_003]),
        "{err:?}"
    );
}

/// Shrinking an array of string shards re-encodes only the inner chunks the new edge cuts
/// through: one wholly inside is kept byte for byte (a corrupt one does not fail the resize).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shrinking_a_string_shard_re_encodes_only_the_inner_chunk_it_cuts() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let n = 80_000u64;
    // Element 5,003 is in inner chunk 0 of shard 0.
    let (mut array, all) = string_shards_with_a_broken_element(&store, "/s", 5_003).await;
    let key = StoreKey::new("s/c/0");

    // Cut shard 0 in its inner chunk 2; shard 1 goes.
    store.clear();
    array.resize(vec![25_000]).await.unwrap();
    let stats = store.stats();
    assert_eq!(
        (stats.gets, stats.sets),
        (3, 2),
        "the shard and zarr.json, a read of the array's zarr.json first (another handle may \
         have changed it), and one of the root's zarr.json (which could hold a consolidated \
         record listing the array): {stats:?}"
    );
    assert!(store.get(&StoreKey::new("s/c/1")).await.unwrap().is_none());
    let shard = store.get(&key).await.unwrap().unwrap();
    assert!(
        shard.windows(5).any(|w| w == b"\xff5003"),
        "the inner chunk wholly inside keeps its bytes"
    );

    array.resize(vec![n]).await.unwrap();
    assert_eq!(read(&array, &[10_000..25_000]).await, all[10_000..25_000]);
    let rest = read(&array, &[25_000..n]).await;
    assert!(
        rest.iter().all(String::is_empty),
        "cut elements read as the fill value"
    );
    let err = array.read_text(5_000..5_010).await.unwrap_err();
    assert!(
        matches!(&err, Error::Element { element, .. } if element == &[5_003]),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_and_corrupt_chunks_are_errors_naming_the_key() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![1000], DataType::String, vec![1000])
        .array_to_bytes(vlen_arrow())
        .create(Arc::clone(&store), "/bad")
        .await
        .unwrap();
    let all = words(0..1000);
    array
        .write_strings(0..1000, &VlenStrings::<i32>::from_strs(&all).unwrap())
        .await
        .unwrap();
    let key = StoreKey::new("bad/c/0");
    let good = store.get(&key).await.unwrap().unwrap();

    // Cut off in the values: the last elements' values are missing.
    store
        .set(&key, good.slice(..good.len() - 10))
        .await
        .unwrap();
    let err = array.read_strings::<i32>(990..1000).await.unwrap_err();
    assert!(matches!(err, Error::Chunk { .. }), "{err}");
    assert!(err.to_string().contains("bad/c/0"), "{err}");

    // Cut off inside the offsets.
    store.set(&key, good.slice(..100)).await.unwrap();
    let err = array.read_strings::<i32>(500..501).await.unwrap_err();
    assert!(err.to_string().contains("bad/c/0"), "{err}");

    // An offset that goes backwards.
    let mut bytes = good.to_vec();
    bytes[4 * 501..4 * 502].copy_from_slice(&i32::MAX.to_le_bytes());
    store.set(&key, Bytes::from(bytes)).await.unwrap();
    let err = array.read_strings::<i32>(500..502).await.unwrap_err();
    assert!(err.to_string().contains("bad/c/0"), "{err}");

    // Invalid UTF-8 in the values read.
    let mut bytes = good.to_vec();
    let values_start = bytes.len() - all.iter().map(String::len).sum::<usize>();
    let offset = values_start + all[..1].iter().map(String::len).sum::<usize>();
    bytes[offset] = 0xff;
    store.set(&key, Bytes::from(bytes)).await.unwrap();
    let err = array.read_strings::<i32>(1..2).await.unwrap_err();
    assert!(err.to_string().contains("bad/c/0"), "{err}");
}

/// A store that answers one byte range fewer than asked (a broken third-party store).
#[derive(Debug)]
struct ShortAnswers(MemoryStore);

#[async_trait::async_trait]
impl ReadableStore for ShortAnswers {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        self.0.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.0.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, zarr_store::ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        let mut answers = self.0.get_partial_values(key_ranges).await?;
        answers.pop();
        Ok(answers)
    }
}

/// A store answering fewer byte ranges than asked is an error naming the chunk, not a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_answering_short_is_an_error() {
    let memory = MemoryStore::new();
    let array = ArrayBuilder::new(vec![1000], DataType::String, vec![1000])
        .array_to_bytes(vlen_arrow())
        .create(Arc::new(memory.clone()), "/short")
        .await
        .unwrap();
    let all = words(0..1000);
    array
        .write_strings(0..1000, &VlenStrings::<i32>::from_strs(&all).unwrap())
        .await
        .unwrap();
    let short = Array::open(Arc::new(ShortAnswers(memory)), "/short")
        .await
        .unwrap();
    let err = short.read_strings::<i32>(500..510).await.unwrap_err();
    assert!(err.to_string().contains("short/c/0"), "{err}");
}
