//! Request counts, proven with the store's recording wrapper: a region inside one shard costs
//! at most two requests (index + chunks), the index is read once per fetch, and missing shards
//! or empty inner chunks cost less.

use std::sync::Arc;

use serde_json::json;
use zarr_codecs::{ArrayBytes, ArrayViewMut};
use zarr_core::{DataType, FillValue, Region};
use zarr_sharding::ShardingCodec;
use zarr_store::{
    ByteRangeForm, MemoryStore, Operation, ReadableStore, RecordingStore, StoreKey, WritableStore,
};

use crate::{registry, repr, sharding};

/// 64x64 uint32 shards of 8x8 inner chunks, zstd inside, index at `location`.
fn codec(location: &str) -> ShardingCodec {
    let meta = sharding(json!({
        "chunk_shape": [8, 8],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
        "index_location": location
    }));
    ShardingCodec::from_metadata(
        &meta,
        &repr(&[64, 64], DataType::UInt32, FillValue::new([0; 4])),
        &registry(),
    )
    .unwrap()
}

/// Values `i + 1` except in inner chunk row 7, which is all fill (empty in the index).
fn shard_values() -> Vec<u32> {
    (0..64 * 64u32)
        .map(|i| if i / 64 >= 56 { 0 } else { i + 1 })
        .collect()
}

fn ne(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

async fn stored(codec: &ShardingCodec) -> (Arc<RecordingStore<MemoryStore>>, StoreKey) {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let key = StoreKey::new("array/c/0/0");
    let shard = codec
        .encode_shard(ArrayBytes::fixed(ne(&shard_values())))
        .unwrap()
        .unwrap();
    store.set(&key, shard).await.unwrap();
    store.clear();
    (store, key)
}

fn expected(region: &Region) -> Vec<u32> {
    let all = shard_values();
    let r = region.ranges();
    let mut out = Vec::new();
    for y in r[0].clone() {
        for x in r[1].clone() {
            out.push(all[(y * 64 + x) as usize]);
        }
    }
    out
}

#[tokio::test]
async fn a_region_in_one_shard_costs_two_requests() {
    for location in ["end", "start"] {
        let codec = codec(location);
        let (store, key) = stored(&codec).await;
        let region = Region::try_new(vec![3..29, 10..50]).unwrap();
        let fetch = codec
            .fetch(store.as_ref(), &key, &region)
            .await
            .unwrap()
            .unwrap();
        let ops = store.operations();
        assert_eq!(ops.len(), 2, "{location}: {ops:?}");
        // First the index: a suffix range at the end, a prefix range at the start.
        let Operation::GetPartialValues { requests, .. } = &ops[0] else {
            panic!("{ops:?}")
        };
        assert_eq!(requests.len(), 1);
        let expected_form = if location == "end" {
            ByteRangeForm::Suffix {
                length: 64 * 16 + 4,
            }
        } else {
            ByteRangeForm::Bounded {
                start: 0,
                end: 64 * 16 + 4,
            }
        };
        assert_eq!(requests[0].1.form(), expected_form);
        // Then every needed inner chunk in one call (coalesced: they are written back to back).
        let Operation::GetPartialValues { requests, .. } = &ops[1] else {
            panic!("{ops:?}")
        };
        assert!(!requests.is_empty() && requests.len() <= 4, "{requests:?}");
        // 4 x 6 inner chunks touched; the fetch holds exactly those.
        let touched = (0..4u64).flat_map(|y| (1..7u64).map(move |x| vec![y, x]));
        for chunk in touched {
            assert!(fetch.encoded_chunk(&chunk).is_some(), "{chunk:?}");
        }
        assert!(fetch.encoded_chunk(&[5, 5]).is_none());

        let mut out = vec![0u8; 26 * 40 * 4];
        let mut view = ArrayViewMut::new(&mut out, &[26, 40], 4).unwrap();
        codec
            .decode_fetched_into_view(&fetch, &region, &mut view)
            .unwrap();
        assert_eq!(out, ne(&expected(&region)));
        // Decoding did no I/O.
        assert_eq!(store.operations().len(), 2);
    }
}

#[tokio::test]
async fn far_apart_chunks_still_take_one_chunk_request() {
    let codec = codec("end");
    let (store, key) = stored(&codec).await;
    // The first and last stored inner chunks: far apart, two ranges in one call.
    let region = Region::try_new(vec![0..55, 0..64]).unwrap();
    let corner = Region::try_new(vec![0..1, 0..1]).unwrap();
    let index = codec
        .fetch_index(store.as_ref(), &key)
        .await
        .unwrap()
        .unwrap();
    let index = Arc::new(index);
    store.clear();
    let fetch = codec
        .fetch_chunks(store.as_ref(), &key, Arc::clone(&index), &region)
        .await
        .unwrap();
    assert_eq!(store.stats().partial_reads, 1);
    // Shards written back to back coalesce into one range.
    assert_eq!(store.stats().ranges, 1);
    assert!(fetch.encoded_bytes() > 0);
    // The same index serves another fetch without being read again.
    store.clear();
    let small = codec
        .fetch_chunks(store.as_ref(), &key, index, &corner)
        .await
        .unwrap();
    assert_eq!(store.stats().calls(), 1);
    assert_eq!(
        codec.decode_fetched(&small, &corner).unwrap(),
        ArrayBytes::fixed(ne(&[1]))
    );
}

#[tokio::test]
async fn empty_inner_chunks_and_missing_shards_cost_less() {
    let codec = codec("end");
    let (store, key) = stored(&codec).await;
    // Inner chunk row 7 is empty: only the index is read.
    let region = Region::try_new(vec![56..64, 0..64]).unwrap();
    let fetch = codec
        .fetch(store.as_ref(), &key, &region)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.stats().calls(), 1);
    assert_eq!(
        codec.decode_fetched(&fetch, &region).unwrap(),
        ArrayBytes::fixed(vec![0u8; 8 * 64 * 4])
    );
    // A missing shard: one request, None.
    store.clear();
    let missing = codec
        .fetch(store.as_ref(), &StoreKey::new("array/c/9/9"), &region)
        .await
        .unwrap();
    assert!(missing.is_none());
    assert_eq!(store.stats().calls(), 1);
    // One inner chunk's encoded bytes: two requests.
    store.clear();
    let bytes = codec
        .fetch_inner_chunk(store.as_ref(), &key, &[0, 0])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.stats().calls(), 2);
    let decoded = codec.inner_chain().decode(bytes).unwrap();
    let first_row: Vec<u32> = (1..=8).collect();
    assert_eq!(&decoded.as_fixed().unwrap()[..32], &ne(&first_row)[..]);
    assert_eq!(
        codec
            .fetch_inner_chunk(store.as_ref(), &key, &[7, 0])
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn fetch_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let codec = codec("end");
    let store: Arc<dyn ReadableStore> = Arc::new(MemoryStore::new());
    let key = StoreKey::new("c/0/0");
    let region = Region::full(&[64, 64]);
    let fut = codec.fetch(store.as_ref(), &key, &region);
    assert_send(&fut);
    assert!(fut.await.unwrap().is_none());
}

/// Many small regions of one shard (the points of a coordinate selection, say) fetch their
/// inner chunks with one request, each needed inner chunk once; each region then decodes
/// from the one fetch, and a region needing an inner chunk none of them touched is refused.
#[tokio::test]
async fn many_regions_of_one_shard_take_one_chunk_request() {
    let codec = codec("end");
    let (store, key) = stored(&codec).await;
    let index = Arc::new(
        codec
            .fetch_index(store.as_ref(), &key)
            .await
            .unwrap()
            .unwrap(),
    );
    store.clear();
    // Inner chunks (0, 0) twice, (0, 1), (6, 7), and (7, 0), which is empty in the index.
    let regions: Vec<Region> = [
        vec![0..1, 0..1],
        vec![2..5, 3..8],
        vec![1..2, 9..10],
        vec![50..52, 60..64],
        vec![60..61, 3..4],
    ]
    .into_iter()
    .map(|ranges| Region::try_new(ranges).unwrap())
    .collect();
    let fetch = codec
        .fetch_chunks_of(store.as_ref(), &key, Arc::clone(&index), &regions)
        .await
        .unwrap();
    let stats = store.stats();
    assert_eq!(stats.partial_reads, 1, "{stats:?}");
    // The stored chunks are small and back to back: one range, from the first needed
    // inner chunk to the end of the last.
    assert_eq!(stats.ranges, 1, "{stats:?}");
    let needed: Vec<_> = [[0, 0], [0, 1], [6, 7]]
        .iter()
        .map(|c| index.chunk_range(index.linear_index(c).unwrap()).unwrap())
        .collect();
    let span =
        needed.iter().map(|r| r.end).max().unwrap() - needed.iter().map(|r| r.start).min().unwrap();
    assert_eq!(stats.bytes_read, span, "{stats:?}");
    // Known before the fetch: what it reads.
    assert_eq!(codec.fetch_len(&index, &regions).unwrap(), span);
    assert_eq!(fetch.bytes_read(), span);
    assert!(fetch.encoded_bytes() < span);
    let empty = [Region::try_new(vec![60..61, 3..4]).unwrap()];
    assert_eq!(codec.fetch_len(&index, &empty).unwrap(), 0);
    assert_eq!(codec.fetch_len(&index, &[]).unwrap(), 0);
    // The fetch holds exactly the needed inner chunks.
    for y in 0..8u64 {
        for x in 0..8u64 {
            let held = fetch.encoded_chunk(&[y, x]).is_some();
            assert_eq!(
                held,
                [[0, 0], [0, 1], [6, 7]].contains(&[y, x]),
                "({y}, {x})"
            );
        }
    }
    assert_eq!(
        fetch.region(),
        &Region::try_new(vec![0..61, 0..64]).unwrap()
    );
    for region in &regions {
        let ArrayBytes::Fixed(decoded) = codec.decode_fetched(&fetch, region).unwrap() else {
            panic!("fixed-size data expected");
        };
        assert_eq!(&decoded[..], &ne(&expected(region))[..], "{region}");
    }
    // Inside the fetch's box, but in inner chunk (3, 3), which no region touched.
    let other = Region::try_new(vec![30..31, 30..31]).unwrap();
    let error = codec.decode_fetched(&fetch, &other).unwrap_err();
    assert!(
        matches!(error, zarr_sharding::Error::InvalidRegion { .. }),
        "{error}"
    );
    // No regions: nothing to read.
    store.clear();
    let none = codec
        .fetch_chunks_of(store.as_ref(), &key, index, &[])
        .await
        .unwrap();
    assert_eq!((none.encoded_bytes(), none.bytes_read()), (0, 0));
    assert_eq!(store.stats().calls(), 0);
}
