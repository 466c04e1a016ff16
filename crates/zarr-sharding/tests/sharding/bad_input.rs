//! Bad shards and bad configurations are typed errors naming what and where, never panics.

use bytes::Bytes;
use serde_json::json;
use zarr_codecs::{ArrayBytes, CodecChain};
use zarr_core::{DataType, FillValue, Region};
use zarr_sharding::{Error, ShardingCodec};
use zarr_store::{MemoryStore, StoreKey, WritableStore};

use crate::{registry, repr, sharding};

fn u16s(values: &[u16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// uint16 shards of [4] in inner chunks of [2]; index bytes LE (+ crc32c when `crc`).
fn codec(crc: bool, location: &str) -> ShardingCodec {
    let mut index_codecs = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    if crc {
        index_codecs.push(json!({"name": "crc32c"}));
    }
    let meta = sharding(json!({
        "chunk_shape": [2],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": index_codecs,
        "index_location": location,
    }));
    ShardingCodec::from_metadata(
        &meta,
        &repr(&[4], DataType::UInt16, FillValue::new([0, 0])),
        &registry(),
    )
    .unwrap()
}

/// A shard with plain LE index at the end: data, then `entries`.
fn shard_with(data: &[u8], entries: [(u64, u64); 2]) -> Bytes {
    let mut out = data.to_vec();
    for (o, n) in entries {
        out.extend_from_slice(&o.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
    }
    Bytes::from(out)
}

fn is_checksum_error(err: &Error) -> bool {
    matches!(err, Error::IndexDecode { source, .. }
        if matches!(**source, zarr_codecs::Error::ChecksumMismatch { .. }))
}

#[test]
fn an_index_pointing_outside_the_shard() {
    let codec = codec(false, "end");
    let shard = shard_with(&[1, 0, 2, 0], [(0, 4), (2, 100)]);
    match codec.decode_shard(shard).unwrap_err() {
        Error::EntryOutOfBounds {
            chunk,
            offset: 2,
            nbytes: 100,
            shard_size: Some(36),
            ..
        } => {
            assert_eq!(chunk, vec![1]);
        }
        e => panic!("{e:?}"),
    }
    // offset + nbytes overflowing u64.
    let shard = shard_with(&[1, 0, 2, 0], [(u64::MAX - 1, 4), (0, 4)]);
    let err = codec.decode_shard(shard).unwrap_err();
    assert!(
        matches!(
            err,
            Error::EntryOutOfBounds {
                shard_size: None,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("inner chunk [0]"), "{err}");
}

#[test]
fn an_index_overlapping_itself() {
    let plain = codec(false, "end");
    // The chunk claims bytes 2..6; the index starts at byte 4.
    let shard = shard_with(&[1, 0, 2, 0], [(2, 4), (u64::MAX, u64::MAX)]);
    match plain.decode_shard(shard).unwrap_err() {
        Error::EntryOverlapsIndex { chunk, index, .. } => {
            assert_eq!(chunk, vec![0]);
            assert_eq!(index, 4..36);
        }
        e => panic!("{e:?}"),
    }
    // Index at the start: an entry pointing into the first 32 bytes.
    let start = codec(false, "start");
    let mut bytes = Vec::new();
    for (o, n) in [(0u64, 4u64), (u64::MAX, u64::MAX)] {
        bytes.extend_from_slice(&o.to_le_bytes());
        bytes.extend_from_slice(&n.to_le_bytes());
    }
    bytes.extend_from_slice(&[1, 0, 2, 0]);
    assert!(matches!(
        start.decode_shard(Bytes::from(bytes)).unwrap_err(),
        Error::EntryOverlapsIndex { .. }
    ));
}

#[test]
fn a_truncated_shard() {
    let codec = codec(true, "end");
    let good = codec
        .encode_shard(ArrayBytes::fixed(u16s(&[1, 2, 3, 4])))
        .unwrap()
        .unwrap();
    // Shorter than the index.
    assert!(matches!(
        codec.decode_shard(good.slice(..20)).unwrap_err(),
        Error::ShardTooSmall {
            size: 20,
            index_size: 36,
            ..
        }
    ));
    // Cut short: the last bytes are no longer the index, its checksum fails.
    let err = codec
        .decode_shard(good.slice(..good.len() - 2))
        .unwrap_err();
    assert!(is_checksum_error(&err), "{err:?}");
    // Without a checksum: a shard missing one inner chunk's bytes has its second entry
    // pointing into the index.
    let plain = self::codec(false, "end");
    let good = plain
        .encode_shard(ArrayBytes::fixed(u16s(&[1, 2, 3, 4])))
        .unwrap()
        .unwrap();
    let mut cut = good[..4].to_vec();
    cut.extend_from_slice(&good[8..]);
    assert!(matches!(
        plain.decode_shard(Bytes::from(cut)).unwrap_err(),
        Error::EntryOverlapsIndex { .. }
    ));
}

#[test]
fn a_crc_mismatch() {
    let codec = codec(true, "end");
    let good = codec
        .encode_shard(ArrayBytes::fixed(u16s(&[1, 2, 3, 4])))
        .unwrap()
        .unwrap();
    let mut bad = good.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let err = codec.decode_shard(Bytes::from(bad.clone())).unwrap_err();
    assert!(is_checksum_error(&err), "{err:?}");
    // Through a codec chain the error stays typed: External with our error as its source.
    let chain = CodecChain::from_metadata(
        &[codec.metadata()],
        codec.shard_representation().clone(),
        &registry(),
    )
    .unwrap();
    match chain.decode(Bytes::from(bad)).unwrap_err() {
        zarr_codecs::Error::External { codec, source } => {
            assert_eq!(codec, "sharding_indexed");
            assert!(matches!(
                source.downcast_ref::<Error>(),
                Some(Error::IndexDecode { .. })
            ));
        }
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn bad_shards_in_a_store_name_their_key() {
    let codec = codec(false, "end");
    let store = MemoryStore::new();
    let key = StoreKey::new("arr/c/3");
    // The index says inner chunk 1 is at 100..104; the shard has 36 bytes. Fetching the index
    // alone cannot know; reading the chunk reports it, naming the key and the inner chunk.
    store
        .set(&key, shard_with(&[1, 0, 2, 0], [(0, 4), (100, 4)]))
        .await
        .unwrap();
    let err = codec
        .fetch(&store, &key, &Region::full(&[4]))
        .await
        .unwrap_err();
    match &err {
        Error::EntryOutOfBounds {
            shard,
            chunk,
            shard_size: Some(36),
            ..
        } => {
            assert_eq!(shard.0.as_ref(), Some(&key));
            assert_eq!(chunk, &vec![1]);
        }
        e => panic!("{e:?}"),
    }
    assert!(err.to_string().contains("shard arr/c/3"), "{err}");
    // A value shorter than the index.
    store.set(&key, Bytes::from_static(b"tiny")).await.unwrap();
    assert!(matches!(
        codec
            .fetch(&store, &key, &Region::full(&[4]))
            .await
            .unwrap_err(),
        Error::ShardTooSmall { size: 4, .. }
    ));
    // A corrupt inner chunk names the inner chunk.
    let zstd = ShardingCodec::from_metadata(
        &sharding(json!({
            "chunk_shape": [2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
        })),
        &repr(&[4], DataType::UInt16, FillValue::new([0, 0])),
        &registry(),
    )
    .unwrap();
    let mut shard = zstd
        .encode_shard(ArrayBytes::fixed(u16s(&[1, 2, 3, 4])))
        .unwrap()
        .unwrap()
        .to_vec();
    shard[0] ^= 0xff; // the zstd magic of inner chunk 0
    store.set(&key, Bytes::from(shard)).await.unwrap();
    let fetch = zstd
        .fetch(&store, &key, &Region::full(&[4]))
        .await
        .unwrap()
        .unwrap();
    match zstd
        .decode_fetched(&fetch, &Region::full(&[4]))
        .unwrap_err()
    {
        Error::InnerChunk { shard, chunk, .. } => {
            assert_eq!(shard.0, Some(key.clone()));
            assert_eq!(chunk, vec![0]);
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn chunk_shapes_that_do_not_divide_the_shard() {
    let shard = repr(&[6, 4], DataType::UInt8, FillValue::new([0]));
    let bad = |chunk_shape: serde_json::Value| {
        ShardingCodec::from_metadata(
            &sharding(json!({"chunk_shape": chunk_shape, "codecs": [{"name": "bytes"}]})),
            &shard,
            &registry(),
        )
        .unwrap_err()
    };
    match bad(json!([4, 2])) {
        Error::ChunkShapeMismatch {
            dimension: 0,
            chunk_shape,
            shard_shape,
        } => {
            assert_eq!(chunk_shape, vec![4, 2]);
            assert_eq!(shard_shape, vec![6, 4]);
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        bad(json!([3, 3])),
        Error::ChunkShapeMismatch { dimension: 1, .. }
    ));
    // A shape of another rank says so.
    match bad(json!([3])) {
        Error::InvalidConfiguration { field, reason } => {
            assert_eq!(field, "configuration.chunk_shape");
            assert!(reason.contains("has 1 dimensions"), "{reason}");
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        bad(json!([0, 2])),
        Error::ChunkShapeMismatch { dimension: 0, .. }
    ));
    // Through the registry, as an array's codec chain builds it.
    let err = CodecChain::from_metadata(
        &[sharding(
            json!({"chunk_shape": [4, 4], "codecs": [{"name": "bytes"}]}),
        )],
        shard.clone(),
        &registry(),
    )
    .unwrap_err();
    assert!(
        matches!(err, zarr_codecs::Error::External { .. }),
        "{err:?}"
    );
}

#[test]
fn malformed_configurations() {
    let shard = repr(&[4], DataType::UInt8, FillValue::new([0]));
    let err = |config: serde_json::Value| {
        ShardingCodec::from_metadata(&sharding(config), &shard, &registry()).unwrap_err()
    };
    let field = |e: Error| match e {
        Error::InvalidConfiguration { field, .. } => field,
        e => panic!("{e:?}"),
    };
    assert_eq!(
        field(err(json!({"codecs": [{"name": "bytes"}]}))),
        "configuration.chunk_shape"
    );
    assert_eq!(
        field(err(json!({"chunk_shape": [2]}))),
        "configuration.codecs"
    );
    assert_eq!(
        field(err(
            json!({"chunk_shape": [-2], "codecs": [{"name": "bytes"}]})
        )),
        "configuration.chunk_shape[0]"
    );
    assert_eq!(
        field(err(
            json!({"chunk_shape": [2], "codecs": [{"name": "bytes"}], "index_location": "middle"})
        )),
        "configuration.index_location"
    );
    assert_eq!(
        field(err(
            json!({"chunk_shape": [2], "codecs": [{"name": "bytes"}], "extra": 1})
        )),
        "configuration.extra"
    );
    // A compressed index has no fixed size.
    assert_eq!(
        field(err(
            json!({"chunk_shape": [2], "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]})
        )),
        "configuration.index_codecs"
    );
    // An unknown inner codec is the chain's error.
    assert!(matches!(
        err(json!({"chunk_shape": [2], "codecs": [{"name": "nope"}]})),
        Error::Codec(zarr_codecs::Error::UnknownCodec { .. })
    ));
}

#[test]
fn regions_and_data_that_do_not_fit() {
    let codec = codec(true, "end");
    let outside = Region::try_new(vec![2..5]).unwrap();
    assert!(matches!(
        codec
            .merge_region(None, &outside, &ArrayBytes::fixed(u16s(&[1, 2, 3])))
            .unwrap_err(),
        Error::InvalidRegion { .. }
    ));
    let region = Region::try_new(vec![1..3]).unwrap();
    assert!(matches!(
        codec
            .merge_region(None, &region, &ArrayBytes::fixed(u16s(&[1, 2, 3])))
            .unwrap_err(),
        Error::DataMismatch { .. }
    ));
    let shard = codec
        .encode_shard(ArrayBytes::fixed(u16s(&[1, 2, 3, 4])))
        .unwrap()
        .unwrap();
    assert!(matches!(
        codec
            .decode_shard_region(shard, &Region::try_new(vec![0..1, 0..1]).unwrap())
            .unwrap_err(),
        Error::InvalidRegion { .. }
    ));
}

/// `encode_shard_from` refuses a source of the wrong size, a shard that does not fit in the
/// source at its origin (including an overflowing origin), and a wrong rank.
#[test]
fn a_shard_source_that_does_not_fit() {
    let codec = codec(true, "end");
    let shape = codec.shard_representation().shape().to_vec();
    let outer: Vec<u64> = shape.iter().map(|s| s + 1).collect();
    let n = outer.iter().product::<u64>() as usize;
    let src = vec![0u8; n * 2];
    let mismatch =
        |r: zarr_sharding::Result<Option<Bytes>>| matches!(r, Err(Error::DataMismatch { .. }));
    assert!(mismatch(codec.encode_shard_from(
        &src[1..],
        &outer,
        &vec![0; shape.len()]
    )));
    assert!(mismatch(codec.encode_shard_from(
        &src,
        &outer,
        &vec![2; shape.len()]
    )));
    assert!(mismatch(codec.encode_shard_from(
        &src,
        &outer,
        &vec![u64::MAX; shape.len()]
    )));
    assert!(mismatch(codec.encode_shard_from(
        &src,
        &outer[1..],
        &vec![0; shape.len() - 1]
    )));
    assert!(
        codec
            .encode_shard_from(&src, &outer, &vec![1; shape.len()])
            .is_ok()
    );
    // A range of inner chunks beyond the shard's, or reversed; and parts that do not make up
    // the shard's inner chunks.
    let count = codec.chunks_per_shard().iter().product::<u64>() as usize;
    let origin = vec![1; shape.len()];
    let range = |chunks: std::ops::Range<usize>| {
        codec.encode_chunk_range_from(&src, &outer, &origin, chunks)
    };
    assert!(matches!(
        range(0..count + 1),
        Err(Error::DataMismatch { .. })
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = range(2..1);
    assert!(matches!(reversed, Err(Error::DataMismatch { .. })));
    let short = range(0..count - 1).unwrap();
    assert!(matches!(
        codec.assemble(short),
        Err(Error::DataMismatch { .. })
    ));
    let twice =
        zarr_sharding::EncodedChunks::concat([range(0..count).unwrap(), range(0..1).unwrap()]);
    assert!(matches!(
        codec.assemble(twice),
        Err(Error::DataMismatch { .. })
    ));
    assert_eq!(
        codec.assemble(range(0..count).unwrap()).unwrap(),
        codec.encode_shard_from(&src, &outer, &origin).unwrap()
    );
}
