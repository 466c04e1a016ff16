//! Property tests: encode, merge and fetch + decode agree with a naive element-by-element
//! model, for random shard shapes, inner chunk shapes, data and regions, for fixed-size and
//! variable-length elements.

use proptest::prelude::*;
use serde_json::json;
use zarr_codecs::{ArrayBytes, ArrayViewMut, VlenBytes};
use zarr_core::{DataType, FillValue, Region};
use zarr_sharding::{EncodedChunks, ShardingCodec};
use zarr_store::{MemoryStore, StoreKey, WritableStore};

use crate::{registry, repr, sharding};

/// A case: inner chunk shape, chunks per shard, a region, and a seed for the data.
#[derive(Debug, Clone)]
struct Case {
    chunk: Vec<u64>,
    cps: Vec<u64>,
    region: Vec<(u64, u64)>,
    seed: u64,
    location: &'static str,
    compress: bool,
}

impl Case {
    fn shard_shape(&self) -> Vec<u64> {
        self.chunk
            .iter()
            .zip(&self.cps)
            .map(|(c, n)| c * n)
            .collect()
    }

    fn region(&self) -> Region {
        let shape = self.shard_shape();
        Region::try_new(
            self.region
                .iter()
                .zip(&shape)
                .map(|(&(a, b), &s)| {
                    let (a, b) = (a % (s + 1), b % (s + 1));
                    a.min(b)..a.max(b)
                })
                .collect(),
        )
        .unwrap()
    }
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|rank| {
            (
                proptest::collection::vec(1u64..4, rank),
                proptest::collection::vec(1u64..4, rank),
                proptest::collection::vec((0u64..16, 0u64..16), rank),
                any::<u64>(),
                prop_oneof![Just("start"), Just("end")],
                any::<bool>(),
            )
        })
        .prop_map(|(chunk, cps, region, seed, location, compress)| Case {
            chunk,
            cps,
            region,
            seed,
            location,
            compress,
        })
}

/// Deterministic data where about a third of the elements are the fill value 7, and whole
/// inner chunks often are.
fn data(n: usize, seed: u64) -> Vec<u16> {
    let mut x = seed | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (seed >> (i % 64)) & 1 == 1 || x.is_multiple_of(3) {
                7
            } else {
                (x % 1000) as u16
            }
        })
        .collect()
}

fn ne(values: &[u16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// The elements of `region` of a C-order array of `shape`, by their flat positions.
fn positions(shape: &[u64], region: &Region) -> Vec<usize> {
    let extent = region.shape();
    let n: u64 = extent.iter().product();
    if region.is_empty() {
        return vec![];
    }
    (0..n)
        .map(|flat| {
            let mut rest = flat;
            let mut pos = vec![0u64; extent.len()];
            for d in (0..extent.len()).rev() {
                pos[d] = region.ranges()[d].start + rest % extent[d];
                rest /= extent[d];
            }
            (0..shape.len()).fold(0u64, |acc, d| acc * shape[d] + pos[d]) as usize
        })
        .collect()
}

fn codec_for(
    case: &Case,
    data_type: DataType,
    fill: FillValue,
    inner: serde_json::Value,
) -> ShardingCodec {
    let meta = sharding(json!({
        "chunk_shape": case.chunk,
        "codecs": inner,
        "index_location": case.location,
    }));
    ShardingCodec::from_metadata(
        &meta,
        &repr(&case.shard_shape(), data_type, fill),
        &registry(),
    )
    .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn fixed_size_round_trips(case in case()) {
        let mut inner = vec![json!({"name": "bytes", "configuration": {"endian": "big"}})];
        if case.compress {
            inner.push(json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}));
        }
        let codec = codec_for(&case, DataType::UInt16, FillValue::new(7u16.to_ne_bytes()), json!(inner));
        let shape = case.shard_shape();
        let n = shape.iter().product::<u64>() as usize;
        let model = data(n, case.seed);
        let all_fill = model.iter().all(|&v| v == 7);

        // Encode / decode.
        let encoded = codec.encode_shard(ArrayBytes::fixed(ne(&model))).unwrap();
        prop_assert_eq!(encoded.is_none(), all_fill);
        if let Some(bytes) = &encoded {
            prop_assert_eq!(codec.decode_shard(bytes.clone()).unwrap(), ArrayBytes::fixed(ne(&model)));
        }

        // The same shard cut out of a larger array, around which other values lie.
        let origin: Vec<u64> = shape.iter().enumerate().map(|(d, _)| (d as u64 + case.seed) % 3).collect();
        let outer: Vec<u64> = shape.iter().zip(&origin).map(|(s, o)| s + o + 2).collect();
        let mut big = data(outer.iter().product::<u64>() as usize, case.seed ^ 0xabc);
        let inside = Region::try_new(origin.iter().zip(&shape).map(|(o, s)| *o..o + s).collect()).unwrap();
        for (p, v) in positions(&outer, &inside).into_iter().zip(&model) {
            big[p] = *v;
        }
        prop_assert_eq!(&codec.encode_shard_from(&ne(&big), &outer, &origin).unwrap(), &encoded);
        // And in jobs of any size, joined in order.
        let count = codec.chunks_per_shard().iter().product::<u64>() as usize;
        let per = 1 + (case.seed as usize) % count;
        let parts = (0..count)
            .step_by(per)
            .map(|start| {
                codec
                    .encode_chunk_range_from(&ne(&big), &outer, &origin, start..(start + per).min(count))
                    .unwrap()
            })
            .collect::<Vec<_>>();
        prop_assert_eq!(&codec.assemble(EncodedChunks::concat(parts)).unwrap(), &encoded);

        // Merge a region of new values into it.
        let region = case.region();
        let pos = positions(&shape, &region);
        let patch = data(pos.len(), case.seed.rotate_left(17) ^ 0x5555);
        let mut merged_model = model.clone();
        for (p, v) in pos.iter().zip(&patch) {
            merged_model[*p] = *v;
        }
        let merged = codec.merge_region(encoded.clone(), &region, &ArrayBytes::fixed(ne(&patch))).unwrap();
        prop_assert_eq!(merged.is_none(), merged_model.iter().all(|&v| v == 7));
        let whole = Region::full(&shape);
        let decoded = match &merged {
            Some(bytes) => codec.decode_shard(bytes.clone()).unwrap(),
            None => ArrayBytes::fixed(ne(&vec![7; n])),
        };
        prop_assert_eq!(decoded, ArrayBytes::fixed(ne(&merged_model)));

        // Keep only the region, the rest back to fill (a shard on the edge of a shrunk array).
        if let Some(bytes) = &merged {
            let mut kept_model = vec![7u16; n];
            for &p in &pos {
                kept_model[p] = merged_model[p];
            }
            let kept = codec.retain_region(bytes, &region).unwrap();
            prop_assert_eq!(kept.is_none(), kept_model.iter().all(|&v| v == 7));
            if let Some(kept) = kept {
                prop_assert_eq!(codec.decode_shard(kept).unwrap(), ArrayBytes::fixed(ne(&kept_model)));
            }
        }

        // Fetch + decode the region from a store, into a view and as new bytes.
        let rt = runtime();
        let store = MemoryStore::new();
        let key = StoreKey::new("c/0");
        if let Some(bytes) = merged {
            rt.block_on(store.set(&key, bytes)).unwrap();
        }
        let want: Vec<u16> = pos.iter().map(|&p| merged_model[p]).collect();
        match rt.block_on(codec.fetch(&store, &key, &region)).unwrap() {
            None => prop_assert!(want.iter().all(|&v| v == 7)),
            Some(fetch) => {
                prop_assert_eq!(codec.decode_fetched(&fetch, &region).unwrap(), ArrayBytes::fixed(ne(&want)));
                let mut out = vec![0u8; want.len() * 2];
                let mut view = ArrayViewMut::new(&mut out, &region.shape(), 2).unwrap();
                codec.decode_fetched_into_view(&fetch, &region, &mut view).unwrap();
                prop_assert_eq!(out, ne(&want));
                // The region split into parts of at most `max` encoded bytes (or one inner
                // chunk): the parts tile it in C order along inner chunk boundaries, and
                // fetching and decoding them one by one gives the same values.
                let index = std::sync::Arc::clone(fetch.index());
                let max = case.seed % 97;
                let parts = codec.split_region(&index, &region, max).unwrap();
                let mut seen = vec![false; pos.len()];
                let mut previous: Option<Vec<u64>> = None;
                for part in &parts {
                    for ((p, r), c) in part.ranges().iter().zip(region.ranges()).zip(&case.chunk) {
                        prop_assert!(r.start <= p.start && p.end <= r.end, "{part} outside {region}");
                        prop_assert!(p.start == r.start || p.start % c == 0, "{part} not aligned");
                        prop_assert!(p.end == r.end || p.end % c == 0, "{part} not aligned");
                    }
                    if let Some(previous) = &previous {
                        prop_assert!(previous < &part.starts(), "{parts:?} not in C order");
                    }
                    previous = Some(part.starts());
                    let piece = rt.block_on(codec.fetch_chunks(&store, &key, std::sync::Arc::clone(&index), part)).unwrap();
                    let one_chunk = part.ranges().iter().zip(&case.chunk).all(|(r, c)| r.is_empty() || r.start / c == (r.end - 1) / c);
                    prop_assert!(piece.encoded_bytes() <= max || one_chunk, "{part}: {} bytes", piece.encoded_bytes());
                    let want_part: Vec<u16> = positions(&shape, part).iter().map(|&p| merged_model[p]).collect();
                    prop_assert_eq!(codec.decode_fetched(&piece, part).unwrap(), ArrayBytes::fixed(ne(&want_part)));
                    let relative = Region::try_new(
                        part.ranges().iter().zip(region.ranges()).map(|(p, r)| p.start - r.start..p.end - r.start).collect(),
                    ).unwrap();
                    for p in positions(&region.shape(), &relative) {
                        prop_assert!(!seen[p], "parts {parts:?} overlap");
                        seen[p] = true;
                    }
                }
                prop_assert!(seen.iter().all(|&s| s), "parts {parts:?} leave gaps in {region}");
                // The whole shard needs inner chunks this fetch may not have read.
                if region != whole && codec.decode_fetched(&fetch, &whole).is_ok() {
                    // Only possible when every inner chunk outside the region is empty.
                    let again = rt.block_on(codec.fetch(&store, &key, &whole)).unwrap().unwrap();
                    prop_assert_eq!(fetch.encoded_bytes(), again.encoded_bytes());
                }
            }
        }
    }

    #[test]
    fn variable_length_round_trips(case in case()) {
        let fill = "-";
        let codec = codec_for(&case, DataType::String, FillValue::from(fill), json!([{"name": "vlen-utf8"}]));
        let shape = case.shard_shape();
        let n = shape.iter().product::<u64>() as usize;
        let text = |v: u16| if v == 7 { fill.to_owned() } else { "x".repeat(v as usize % 5) };
        let model: Vec<String> = data(n, case.seed).into_iter().map(text).collect();
        let array = |values: &[String]| ArrayBytes::Variable(VlenBytes::from_elements(values.iter().map(String::as_bytes)));

        let encoded = codec.encode_shard(array(&model)).unwrap();
        prop_assert_eq!(encoded.is_none(), model.iter().all(|s| s == fill));
        let region = case.region();
        let pos = positions(&shape, &region);
        let patch: Vec<String> = data(pos.len(), !case.seed).into_iter().map(text).collect();
        let mut merged_model = model.clone();
        for (p, v) in pos.iter().zip(&patch) {
            merged_model[*p] = v.clone();
        }
        let merged = codec.merge_region(encoded, &region, &array(&patch)).unwrap();
        prop_assert_eq!(merged.is_none(), merged_model.iter().all(|s| s == fill));
        if let Some(bytes) = &merged {
            prop_assert_eq!(codec.decode_shard(bytes.clone()).unwrap(), array(&merged_model));
            let mut kept_model = vec![fill.to_owned(); n];
            for &p in &pos {
                kept_model[p] = merged_model[p].clone();
            }
            match codec.retain_region(bytes, &region).unwrap() {
                Some(kept) => prop_assert_eq!(codec.decode_shard(kept).unwrap(), array(&kept_model)),
                None => prop_assert!(kept_model.iter().all(|s| s == fill)),
            }
            let rt = runtime();
            let store = MemoryStore::new();
            let key = StoreKey::new("c/0");
            rt.block_on(store.set(&key, bytes.clone())).unwrap();
            let fetch = rt.block_on(codec.fetch(&store, &key, &region)).unwrap().unwrap();
            let want: Vec<String> = pos.iter().map(|&p| merged_model[p].clone()).collect();
            prop_assert_eq!(codec.decode_fetched(&fetch, &region).unwrap(), array(&want));
        }
    }
}

/// What happens to a stored shard: bytes XORed (positions modulo its length), cut to a
/// length (modulo its length + 1), garbage appended, or the whole shard replaced.
#[derive(Debug, Clone)]
enum Damage {
    Flip(Vec<(usize, u8)>),
    Truncate(usize),
    Append(Vec<u8>),
    Replace(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        proptest::collection::vec((any::<usize>(), 1u8..=255), 1..6).prop_map(Damage::Flip),
        any::<usize>().prop_map(Damage::Truncate),
        proptest::collection::vec(any::<u8>(), 1..64).prop_map(Damage::Append),
        proptest::collection::vec(any::<u8>(), 0..128).prop_map(Damage::Replace),
    ]
}

fn apply(stored: &[u8], damage: &Damage) -> Vec<u8> {
    let mut bad = stored.to_vec();
    match damage {
        Damage::Flip(flips) => {
            let n = bad.len();
            for &(at, mask) in flips {
                if n > 0 {
                    bad[at % n] ^= mask;
                }
            }
        }
        Damage::Truncate(keep) => bad.truncate(keep % (stored.len() + 1)),
        Damage::Append(extra) => bad.extend_from_slice(extra),
        Damage::Replace(other) => bad.clone_from(other),
    }
    bad
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A damaged shard (index or data; with and without the index checksum, inner chunks
    /// compressed or not, fixed-size or strings) is a typed error or values of the right size
    /// when decoded whole, fetched and decoded in part, or merged into: never a panic. With
    /// the index checksum, damage confined to the index is always an error.
    #[test]
    fn damaged_shards_never_panic(case in case(), damage in damage(), checked in any::<bool>(), strings in any::<bool>()) {
        let mut inner = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
        if case.compress {
            inner.push(json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}));
        }
        let (data_type, fill) = if strings {
            inner = vec![json!({"name": "vlen-utf8"})];
            (DataType::String, FillValue::from(""))
        } else {
            (DataType::UInt16, FillValue::new(7u16.to_ne_bytes()))
        };
        let mut index_codecs = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
        if checked {
            index_codecs.push(json!({"name": "crc32c"}));
        }
        let meta = sharding(json!({
            "chunk_shape": case.chunk,
            "codecs": inner,
            "index_codecs": index_codecs,
            "index_location": case.location,
        }));
        let shape = case.shard_shape();
        let codec = ShardingCodec::from_metadata(&meta, &repr(&shape, data_type, fill), &registry()).unwrap();
        let n = shape.iter().product::<u64>() as usize;
        let model = data(n, case.seed);
        let values = if strings {
            ArrayBytes::Variable(VlenBytes::from_elements(
                model.iter().map(|&v| if v == 7 { String::new() } else { "é".repeat(v as usize % 4) })
                    .collect::<Vec<_>>().iter().map(String::as_bytes),
            ))
        } else {
            ArrayBytes::fixed(ne(&model))
        };
        let Some(stored) = codec.encode_shard(values).unwrap() else {
            return Ok(());
        };
        let bad = bytes::Bytes::from(apply(&stored, &damage));
        let index_len = 16 * case.cps.iter().product::<u64>() as usize + if checked { 4 } else { 0 };
        let index_only = match &damage {
            Damage::Flip(flips) if !stored.is_empty() => flips.iter().all(|&(at, _)| {
                let at = at % stored.len();
                if case.location == "start" { at < index_len } else { at >= stored.len() - index_len }
            }),
            _ => false,
        };
        let size_ok = |decoded: &ArrayBytes| match decoded {
            ArrayBytes::Fixed(bytes) => bytes.len() == n * 2,
            ArrayBytes::Variable(elements) => elements.len() == n,
        };
        if let Ok(decoded) = codec.decode_shard(bad.clone()) {
            prop_assert!(size_ok(&decoded), "wrong size");
            prop_assert!(
                !(checked && index_only && bad != stored),
                "a damaged index passed its checksum"
            );
        }
        let region = case.region();
        let rt = runtime();
        let store = MemoryStore::new();
        let key = StoreKey::new("c/0");
        rt.block_on(store.set(&key, bad.clone())).unwrap();
        if let Ok(Some(fetch)) = rt.block_on(codec.fetch(&store, &key, &region)) {
            if let Ok(decoded) = codec.decode_fetched(&fetch, &region) {
                let m = region.num_elements().unwrap() as usize;
                match decoded {
                    ArrayBytes::Fixed(bytes) => prop_assert_eq!(bytes.len(), m * 2),
                    ArrayBytes::Variable(elements) => prop_assert_eq!(elements.len(), m),
                }
            }
            if !strings {
                let mut out = vec![0u8; region.num_elements().unwrap() as usize * 2];
                let mut view = ArrayViewMut::new(&mut out, &region.shape(), 2).unwrap();
                let _ = codec.decode_fetched_into_view(&fetch, &region, &mut view);
            }
        }
        // Retaining a region of a damaged shard keeps the inner chunks wholly inside it
        // unread, damage and all; what decodes from the result has the right size.
        if let Ok(Some(kept)) = codec.retain_region(&bad, &region)
            && let Ok(decoded) = codec.decode_shard(kept)
        {
            prop_assert!(size_ok(&decoded), "retained shard of the wrong size");
        }
        if !strings {
            let m = region.num_elements().unwrap() as usize;
            let _ = codec.merge_region(Some(bad), &region, &ArrayBytes::fixed(ne(&vec![1; m])));
        }
    }
}
