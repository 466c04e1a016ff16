//! Arrays end to end on real stores: round trips against a model, request counts of whole and
//! partial writes, empty chunks, resize, attributes, grids, key encodings, element types,
//! bad input and the blocking API.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use serde_json::json;
use zarr_array::{Array, ArrayBuilder, ArrayBytes, ArrayOptions, Error, Group, Node, blocking};
use zarr_codecs::{BytesToBytesCodec, Codec, ExpectedSize};
use zarr_core::{
    ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, DataType, DimensionChunks, ExtensionObject,
    FloatFormat,
};
use zarr_store::{MemoryStore, ReadableStore, RecordingStore, StoreKey, WritableStore};

fn memory() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new())
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A C-order model of an array: write regions, read regions.
struct Model {
    shape: Vec<u64>,
    values: Vec<i32>,
}

impl Model {
    fn new(shape: &[u64], fill: i32) -> Self {
        let n = shape.iter().product::<u64>() as usize;
        Self {
            shape: shape.to_vec(),
            values: vec![fill; n],
        }
    }

    fn indices(&self, region: &[std::ops::Range<u64>]) -> Vec<usize> {
        let mut out = vec![0usize];
        for (d, r) in region.iter().enumerate() {
            let mut next = Vec::new();
            for base in &out {
                for i in r.clone() {
                    next.push(base * self.shape[d] as usize + i as usize);
                }
            }
            out = next;
        }
        out
    }

    fn write(&mut self, region: &[std::ops::Range<u64>], values: &[i32]) {
        for (i, v) in self.indices(region).into_iter().zip(values) {
            self.values[i] = *v;
        }
    }

    fn read(&self, region: &[std::ops::Range<u64>]) -> Vec<i32> {
        self.indices(region)
            .into_iter()
            .map(|i| self.values[i])
            .collect()
    }
}

mod model {
    use super::*;
    use proptest::prelude::*;

    fn ranges(shape: Vec<u64>) -> impl Strategy<Value = Vec<std::ops::Range<u64>>> {
        shape
            .into_iter()
            .map(|n| (0..=n, 0..=n).prop_map(|(a, b)| a.min(b)..a.max(b)))
            .collect::<Vec<_>>()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random writes then random reads match the model, with edge chunks, all-fill
        /// chunks erased, and zstd.
        #[test]
        fn random_writes_and_reads_match_a_model(
            writes in proptest::collection::vec((ranges(vec![13, 9, 5]), any::<i32>()), 1..6),
            reads in proptest::collection::vec(ranges(vec![13, 9, 5]), 1..4),
            compress in any::<bool>(),
        ) {
            rt().block_on(async {
                let mut builder = ArrayBuilder::new(vec![13, 9, 5], DataType::Int32, vec![4, 3, 5])
                    .fill_value_json(json!(-1)).unwrap();
                if compress {
                    builder = builder.zstd(1);
                }
                let array = builder.create(memory(), "/m").await.unwrap();
                let mut model = Model::new(&[13, 9, 5], -1);
                for (k, (region, seed)) in writes.iter().enumerate() {
                    let n: u64 = region.iter().map(|r| r.end - r.start).product();
                    // Every third write is all fill value (exercises erasing).
                    let values: Vec<i32> = (0..n as i32)
                        .map(|i| if k % 3 == 2 { -1 } else { seed.wrapping_add(i) })
                        .collect();
                    array.write(region.clone(), &values).await.unwrap();
                    model.write(region, &values);
                }
                for region in &reads {
                    let got: Vec<i32> = array.read(region.clone()).await.unwrap();
                    prop_assert_eq!(got, model.read(region));
                }
                Ok(())
            })?;
        }
    }
}

/// Typed round trips of every element type, and the type check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_element_type_round_trips_and_mismatches_are_errors() {
    use half::{bf16, f16};
    use num_complex::Complex;
    let store = memory();
    macro_rules! round_trip {
        ($dt:expr, $t:ty, $values:expr) => {{
            let values: Vec<$t> = $values;
            let array = ArrayBuilder::new(vec![values.len() as u64], $dt, vec![3])
                .create(Arc::clone(&store), &format!("/{}", $dt.name()))
                .await
                .unwrap();
            array.write(0..values.len() as u64, &values).await.unwrap();
            let back: Vec<$t> = array.read(array.full_region()).await.unwrap();
            assert_eq!(back, values, "{}", $dt.name());
        }};
    }
    round_trip!(DataType::Bool, bool, vec![true, false, true, true]);
    round_trip!(DataType::Int8, i8, vec![-128, 0, 127, 5]);
    round_trip!(DataType::Int16, i16, vec![-1, 2, 300, -30000]);
    round_trip!(DataType::Int64, i64, vec![i64::MIN, 0, i64::MAX, 7]);
    round_trip!(DataType::UInt8, u8, vec![0, 255, 1, 2]);
    round_trip!(DataType::UInt16, u16, vec![0, 65535, 1, 2]);
    round_trip!(DataType::UInt32, u32, vec![0, u32::MAX, 1, 2]);
    round_trip!(DataType::UInt64, u64, vec![0, u64::MAX, 1, 2]);
    round_trip!(
        DataType::Float16,
        f16,
        vec![f16::from_f32(1.5), f16::NEG_INFINITY]
    );
    round_trip!(
        DataType::BFloat16,
        bf16,
        vec![bf16::from_f32(-2.0), bf16::ONE]
    );
    round_trip!(DataType::Float32, f32, vec![1.5, -0.0, f32::INFINITY, 3.25]);
    round_trip!(DataType::Float64, f64, vec![1e300, -0.0, f64::MIN_POSITIVE]);
    round_trip!(
        DataType::Complex64,
        Complex<f32>,
        vec![Complex::new(1.0, -2.0), Complex::new(0.5, 0.25)]
    );
    round_trip!(
        DataType::Complex128,
        Complex<f64>,
        vec![Complex::new(1.0, -2.0), Complex::new(0.5, 0.25)]
    );
    // The zarr-extensions complex types named after their parts.
    round_trip!(
        DataType::ComplexFloat(FloatFormat::Float16),
        Complex<f16>,
        vec![
            Complex::new(f16::from_f32(1.5), f16::NEG_INFINITY),
            Complex::new(f16::ONE, f16::from_f32(-0.25))
        ]
    );
    round_trip!(
        DataType::ComplexFloat(FloatFormat::BFloat16),
        Complex<bf16>,
        vec![Complex::new(bf16::from_f32(-2.0), bf16::ONE)]
    );
    round_trip!(
        DataType::ComplexFloat(FloatFormat::Float32),
        Complex<f32>,
        vec![Complex::new(1.0, -2.0), Complex::new(0.5, 0.25)]
    );
    round_trip!(
        DataType::ComplexFloat(FloatFormat::Float64),
        Complex<f64>,
        vec![Complex::new(1e-300, -2.0)]
    );
    let halves = Array::open(Arc::clone(&store), "/complex_float16")
        .await
        .unwrap();
    let err = halves
        .read::<Complex<f32>>(halves.full_region())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err}");

    let array = Array::open(Arc::clone(&store), "/float32").await.unwrap();
    let err = array.read::<u32>(array.full_region()).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err}");
    let err = array.write(0..1, &[1.0f64]).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err}");
    let err = array.read_into(0..4, &mut [0f32; 3]).await.unwrap_err();
    assert!(matches!(err, Error::BufferSize { .. }), "{err}");
    let err = array.read::<f32>(0..5).await.unwrap_err();
    assert!(matches!(err, Error::Core(_)), "{err}");

    // A bool array is never given or handed an invalid `bool`: writing the byte 2 is
    // refused, and a stored byte other than 0 reads as `true` (SPEC-NOTES checklist 53).
    let bools = Array::open(Arc::clone(&store), "/bool").await.unwrap();
    let err = bools.write_bytes(0..1, &[2]).await.unwrap_err();
    assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    store
        .set(
            &StoreKey::new("bool/c/0"),
            Bytes::from_static(&[0, 2, 0xff]),
        )
        .await
        .unwrap();
    assert_eq!(bools.read::<bool>(0..3).await.unwrap(), [false, true, true]);
}

/// SPEC-NOTES checklist 27 and 28: an edge chunk is stored at the full chunk shape with its
/// out-of-bounds elements set to the fill value, and a reader ignores whatever they hold
/// (garbage left by another writer reads fine, with and without a compressor).
#[tokio::test]
async fn edge_chunks_are_padded_with_the_fill_value_and_padding_is_ignored() {
    let store = memory();
    // Shape [5], chunks [3], fill 9: the spec's example stores c/1 as 04 05 09.
    let array = ArrayBuilder::new(vec![5], DataType::UInt8, vec![3])
        .fill_value_json(json!(9))
        .unwrap()
        .create(Arc::clone(&store), "/u8")
        .await
        .unwrap();
    array.write(0..5, &[1u8, 2, 3, 4, 5]).await.unwrap();
    let stored = store.get(&StoreKey::new("u8/c/1")).await.unwrap().unwrap();
    assert_eq!(&stored[..], &[4, 5, 9]);
    // A partial write of the edge chunk keeps its padding at the fill value too.
    array.write(4..5, &[6u8]).await.unwrap();
    let stored = store.get(&StoreKey::new("u8/c/1")).await.unwrap().unwrap();
    assert_eq!(&stored[..], &[4, 6, 9]);

    for compress in [false, true] {
        // A writer whose padding is 0xab: the edge chunk it stores is 01 00 ab.
        let builder = |data_type| {
            let builder = ArrayBuilder::new(vec![5], data_type, vec![3]);
            if compress { builder.zstd(1) } else { builder }
        };
        let source = builder(DataType::UInt8)
            .fill_value_json(json!(0xab))
            .unwrap()
            .create(Arc::clone(&store), &format!("/source-{compress}"))
            .await
            .unwrap();
        source.write(3..5, &[1u8, 0]).await.unwrap();
        let garbage = store
            .get(&StoreKey::new(&format!("source-{compress}/c/1")))
            .await
            .unwrap()
            .unwrap();
        for data_type in [DataType::Bool, DataType::UInt8] {
            let path = format!("{data_type}-{compress}");
            let array = builder(data_type)
                .create(Arc::clone(&store), &format!("/{path}"))
                .await
                .unwrap();
            store
                .set(&StoreKey::new(&format!("{path}/c/1")), garbage.clone())
                .await
                .unwrap();
            assert_eq!(array.read_bytes(3..5).await.unwrap(), [1, 0], "{path}");
            assert_eq!(array.read_bytes(0..5).await.unwrap()[3..], [1, 0], "{path}");
            // A partial write of that chunk keeps the other element and resets the padding.
            array.write_bytes(4..5, &[1]).await.unwrap();
            assert_eq!(array.read_bytes(3..5).await.unwrap(), [1, 1], "{path}");
            let raw = store
                .get(&StoreKey::new(&format!("{path}/c/1")))
                .await
                .unwrap()
                .unwrap();
            if !compress {
                assert_eq!(
                    &raw[..],
                    &[1, 1, 0],
                    "{path}: padding back to the fill value"
                );
            }
        }
    }
}

/// Whole-chunk writes never read; partial writes read only the chunks they touch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_chunk_writes_never_read_and_partial_writes_read_only_touched_chunks() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    let array = ArrayBuilder::new(vec![10, 10], DataType::UInt8, vec![4, 4])
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    store.clear();
    // [0..8, 0..10]: chunks [0..2, 0..3]; the last column of chunks is an edge chunk whose
    // in-bounds part (columns 8..10) is covered whole.
    array.write([0..8, 0..10], &[7u8; 80]).await.unwrap();
    let stats = store.stats();
    assert_eq!(stats.gets, 0, "{stats:?}");
    assert_eq!(stats.sets, 6, "{stats:?}");

    store.clear();
    // One element in chunk (2, 1): one read, one write.
    array.write([9..10, 5..6], &[1u8]).await.unwrap();
    let stats = store.stats();
    assert_eq!((stats.gets, stats.sets), (1, 1), "{stats:?}");
    let back: Vec<u8> = array.read([8..10, 4..8]).await.unwrap();
    assert_eq!(back, [0, 0, 0, 0, 0, 1, 0, 0]);
}

/// All-fill chunks are not stored and existing ones are erased, unless configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_chunks_are_erased_unless_configured() {
    let store = memory();
    let array = ArrayBuilder::new(vec![8], DataType::Float32, vec![4])
        .fill_value_json(json!("NaN"))
        .unwrap()
        .create(Arc::clone(&store), "/f")
        .await
        .unwrap();
    array.write(0..8, &[1.0f32; 8]).await.unwrap();
    assert!(array.chunk_exists(&[0]).await.unwrap());
    array.write(0..4, &[f32::NAN; 4]).await.unwrap();
    assert!(!array.chunk_exists(&[0]).await.unwrap(), "NaN fill erased");
    assert!(array.chunk_exists(&[1]).await.unwrap());
    let back: Vec<f32> = array.read(0..8).await.unwrap();
    assert!(back[..4].iter().all(|v| v.is_nan()));

    let keep = array
        .clone()
        .with_options(ArrayOptions::default().with_write_empty_chunks(true))
        .unwrap();
    keep.write(0..4, &[f32::NAN; 4]).await.unwrap();
    assert!(keep.chunk_exists(&[0]).await.unwrap(), "stored when asked");
}

/// Missing chunks read as the fill value without calling any codec: a counting codec proves
/// it, and shows a user-registered codec reading and writing an array.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_codec_works_and_missing_chunks_skip_codecs() {
    #[derive(Debug)]
    struct Counting(Arc<AtomicUsize>);
    impl BytesToBytesCodec for Counting {
        fn to_metadata(&self) -> ExtensionObject {
            ExtensionObject::new("test.counting")
        }
        fn encode(&self, decoded: Bytes) -> zarr_codecs::Result<Bytes> {
            Ok(decoded
                .iter()
                .map(|b| b.wrapping_add(1))
                .collect::<Vec<_>>()
                .into())
        }
        fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> zarr_codecs::Result<Bytes> {
            self.0.fetch_add(1, Ordering::SeqCst);
            expected.check("test.counting", encoded.len() as u64)?;
            Ok(encoded
                .iter()
                .map(|b| b.wrapping_sub(1))
                .collect::<Vec<_>>()
                .into())
        }
    }
    let decodes = Arc::new(AtomicUsize::new(0));
    let mut registry = zarr_array::default_registry();
    let counter = Arc::clone(&decodes);
    registry.register("test.counting", move |_, _, _| {
        Ok(Codec::BytesToBytes(Arc::new(Counting(Arc::clone(
            &counter,
        )))))
    });
    let options = ArrayOptions::default().with_registry(Arc::new(registry));
    let store = memory();
    let codecs = vec![
        ExtensionObject::with_configuration(
            "bytes",
            json!({"endian": "little"}).as_object().unwrap().clone(),
        ),
        ExtensionObject::new("test.counting"),
    ];
    let array = ArrayBuilder::new(vec![6], DataType::UInt16, vec![2])
        .codecs(codecs)
        .options(options.clone())
        .create(Arc::clone(&store), "/c")
        .await
        .unwrap();
    array.write(2..4, &[10u16, 11]).await.unwrap();
    let stored = store.get(&StoreKey::new("c/c/1")).await.unwrap().unwrap();
    assert_eq!(&stored[..], &[11, 1, 12, 1], "the codec encoded the chunk");
    let back: Vec<u16> = array.read(0..6).await.unwrap();
    assert_eq!(back, [0, 0, 10, 11, 0, 0]);
    assert_eq!(
        decodes.load(Ordering::SeqCst),
        1,
        "only the stored chunk decoded"
    );

    // Without the codec registered, opening fails at open time, naming the codec.
    let err = Array::open(Arc::clone(&store), "/c").await.unwrap_err();
    assert!(
        zarr_array::ErrorChain(&err)
            .to_string()
            .contains("test.counting"),
        "{err}"
    );
    // With it, it opens.
    Array::open_with(store, "/c", options).await.unwrap();
}

/// Corrupt chunks are typed errors naming the array and chunk key; the rest stays readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_chunks_are_errors_naming_the_chunk() {
    let store = memory();
    let cases: Vec<(&str, ArrayBuilder)> = vec![
        (
            "zstd",
            ArrayBuilder::new(vec![8], DataType::UInt32, vec![4]).zstd(3),
        ),
        (
            "gzip",
            ArrayBuilder::new(vec![8], DataType::UInt32, vec![4]).gzip(5),
        ),
        (
            "blosc",
            ArrayBuilder::new(vec![8], DataType::UInt32, vec![4]).blosc("lz4", 5),
        ),
        (
            "crc",
            ArrayBuilder::new(vec![8], DataType::UInt32, vec![4]).crc32c(),
        ),
        (
            "plain",
            ArrayBuilder::new(vec![8], DataType::UInt32, vec![4]),
        ),
    ];
    for (name, builder) in cases {
        let path = format!("/{name}");
        let array = builder.create(Arc::clone(&store), &path).await.unwrap();
        let values: Vec<u32> = (1..=8).collect();
        array.write(0..8, &values).await.unwrap();
        let key = StoreKey::new(&format!("{name}/c/0"));
        let good = store.get(&key).await.unwrap().unwrap();
        let corruptions: Vec<Bytes> = vec![
            good.slice(..good.len() / 2),        // truncated
            Bytes::from(vec![0xAB; good.len()]), // garbage
            {
                let mut v = good.to_vec(); // one flipped byte at the end
                let last = v.len() - 1;
                v[last] ^= 0x55;
                Bytes::from(v)
            },
            Bytes::from([good.to_vec(), vec![1, 2, 3, 4]].concat()), // too long
        ];
        for bad in corruptions {
            store.set(&key, bad.clone()).await.unwrap();
            match array.read::<u32>(0..8).await {
                Err(Error::Chunk {
                    array: a, key: k, ..
                }) => {
                    assert_eq!(a, path);
                    assert_eq!(k, key.as_str());
                }
                // Without a checksum, a flipped byte may decode to other values (zstd and
                // blosc store incompressible data raw); with crc32c it never does.
                // Uncompressed garbage of the right size is just other values.
                Ok(v)
                    if name != "crc"
                        && v.len() == 8
                        && bad.len() == good.len()
                        && (name == "plain" || bad[..] != vec![0xAB; good.len()][..]) => {}
                other => panic!("{name}: {bad:02x?} read as {other:?}"),
            }
            // The other chunk reads fine.
            let rest: Vec<u32> = array.read(4..8).await.unwrap();
            assert_eq!(rest, [5, 6, 7, 8], "{name}");
        }
    }

    // Metadata naming an unknown codec fails at open.
    let meta = json!({
        "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes"}, {"name": "no.such.codec"}]
    });
    store
        .set(
            &StoreKey::new("unknown/zarr.json"),
            Bytes::from(meta.to_string()),
        )
        .await
        .unwrap();
    let err = Array::open(Arc::clone(&store), "/unknown")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Codecs { .. }), "{err}");
    assert!(
        zarr_array::ErrorChain(&err)
            .to_string()
            .contains("no.such.codec"),
        "{err}"
    );
}

/// Shrinking erases chunks outside and resets edge elements; growing shows fill there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resize_erases_outside_chunks_and_resets_edges() {
    let store = memory();
    let mut array = ArrayBuilder::new(vec![10], DataType::Int16, vec![4])
        .create(Arc::clone(&store), "/r")
        .await
        .unwrap();
    array.write(0..10, &[5i16; 10]).await.unwrap();
    array.resize(vec![6]).await.unwrap();
    assert!(!array.chunk_exists(&[2]).await.unwrap_or(false));
    assert!(store.get(&StoreKey::new("r/c/2")).await.unwrap().is_none());
    array.resize(vec![12]).await.unwrap();
    let back: Vec<i16> = array.read(0..12).await.unwrap();
    assert_eq!(back, [5, 5, 5, 5, 5, 5, 0, 0, 0, 0, 0, 0]);
    let reopened = Array::open(Arc::clone(&store), "/r").await.unwrap();
    assert_eq!(reopened.shape(), [12]);
    let err = array.resize(vec![1, 2]).await.unwrap_err();
    assert!(matches!(err, Error::Region { .. }), "{err}");
    assert!(err.to_string().contains("has rank 1"), "{err}");
    assert_eq!(array.shape(), [12]);
}

/// `append` grows the array along an axis by the slices the values fill and writes them
/// there (2-D along either axis, into partial edge chunks, strings, v2, the blocking API);
/// values that do not fill whole slices, a missing axis and an ambiguous zero-length
/// dimension are refused with the shape unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_grows_along_an_axis_and_writes_the_values() {
    let store = memory();
    let mut array = ArrayBuilder::new(vec![2, 3], DataType::Int32, vec![4, 2])
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    array
        .write([0..2, 0..3], &[1, 2, 3, 4, 5, 6])
        .await
        .unwrap();
    let region = array
        .append(0, &[7, 8, 9, 10, 11, 12, 13, 14, 15])
        .await
        .unwrap();
    assert_eq!(region.ranges(), &[2..5, 0..3]);
    assert_eq!(array.shape(), [5, 3]);
    let region = array.append(1, &[-1, -2, -3, -4, -5]).await.unwrap();
    assert_eq!(region.ranges(), &[0..5, 3..4]);
    let reopened = Array::open(Arc::clone(&store), "/a").await.unwrap();
    assert_eq!(reopened.shape(), [5, 4]);
    let all: Vec<i32> = reopened.read([0..5, 0..4]).await.unwrap();
    assert_eq!(
        all,
        [
            1, 2, 3, -1, 4, 5, 6, -2, 7, 8, 9, -3, 10, 11, 12, -4, 13, 14, 15, -5
        ]
    );

    for (axis, values, wanted) in [
        (
            0,
            vec![1, 2, 3],
            "not a whole number of slices of 4 elements",
        ),
        (2, vec![1, 2, 3, 4], "the array has rank 2"),
    ] {
        let err = array.append(axis, &values).await.unwrap_err();
        assert!(matches!(err, Error::Region { .. }), "{err}");
        assert!(err.to_string().contains(wanted), "{err}");
    }
    let err = array.append(0, &[1u8; 4]).await.unwrap_err();
    assert!(matches!(err, Error::ElementType { .. }), "{err}");
    assert_eq!(array.shape(), [5, 4]);
    let mut empty = ArrayBuilder::new(vec![0, 0], DataType::Int32, vec![2, 2])
        .create(Arc::clone(&store), "/e")
        .await
        .unwrap();
    let err = empty.append(0, &[1, 2]).await.unwrap_err();
    assert!(err.to_string().contains("cannot tell how far"), "{err}");

    // Strings, Zarr v2, and the blocking API.
    let mut words = ArrayBuilder::new(vec![1], DataType::String, vec![2])
        .zarr_format(zarr_core::v2::ZarrFormat::V2)
        .create(Arc::clone(&store), "/w")
        .await
        .unwrap();
    words.write_text(0..1, &["zero"]).await.unwrap();
    let strings = zarr_vlen::VlenStrings::<i32>::from_strs(["one", "two", "three"]).unwrap();
    let region = words
        .append_array_bytes(0, ArrayBytes::try_from(strings).unwrap())
        .await
        .unwrap();
    assert_eq!((region.starts(), region.ends()), (vec![1], vec![4]));
    let back = Array::open(Arc::clone(&store), "/w").await.unwrap();
    assert_eq!(
        back.read_text(0..4).await.unwrap(),
        ["zero", "one", "two", "three"]
    );

    // The chunks are stored before the shape that makes them visible.
    let recording = Arc::new(RecordingStore::new(MemoryStore::new()));
    let mut log = ArrayBuilder::new(vec![0], DataType::UInt8, vec![2])
        .create(Arc::clone(&recording), "/log")
        .await
        .unwrap();
    recording.clear();
    log.append(0, &[1u8, 2, 3, 4, 5]).await.unwrap();
    let sets: Vec<String> = recording
        .operations()
        .into_iter()
        .filter_map(|op| match op {
            zarr_store::Operation::Set { key, .. } => Some(key.as_str().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(sets.len(), 4, "{sets:?}");
    assert_eq!(
        sets.last().map(String::as_str),
        Some("log/zarr.json"),
        "{sets:?}"
    );

    let store2 = memory();
    let builder = ArrayBuilder::new(vec![0], DataType::UInt16, vec![4]);
    let handle = std::thread::spawn(move || {
        let mut array = blocking::Array::create(&builder, store2, "/s").unwrap();
        array.append(0, &[1u16, 2, 3]).unwrap();
        array.append(0, &[4u16, 5]).unwrap();
        array.read::<u16>(0..5).unwrap()
    });
    assert_eq!(handle.join().unwrap(), [1, 2, 3, 4, 5]);
}

/// Attributes, nodes, groups, ancestors, overwrite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_attributes_and_hierarchy() {
    let store = memory();
    let mut array = ArrayBuilder::new(vec![3], DataType::UInt8, vec![3])
        .attribute("units", "m")
        .dimension_names(["x"])
        .create(Arc::clone(&store), "/a/b/c")
        .await
        .unwrap();
    // Ancestors were created as groups.
    for path in ["/", "/a", "/a/b"] {
        Group::open(Arc::clone(&store), path).await.unwrap();
    }
    let mut extra = serde_json::Map::new();
    extra.insert("scale".into(), json!(0.5));
    array.update_attributes(extra).await.unwrap();
    let reopened = Array::open(Arc::clone(&store), "/a/b/c").await.unwrap();
    assert_eq!(reopened.attributes()["units"], "m");
    assert_eq!(reopened.attributes()["scale"], 0.5);
    assert_eq!(
        reopened.metadata().dimension_names,
        Some(vec![Some("x".to_owned())])
    );

    // Creating again fails unless overwriting; creating under an array fails.
    let builder = ArrayBuilder::new(vec![3], DataType::UInt8, vec![3]);
    let err = builder
        .create(Arc::clone(&store), "/a/b/c")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NodeExists { .. }), "{err}");
    builder
        .clone()
        .overwrite(true)
        .create(Arc::clone(&store), "/a/b/c")
        .await
        .unwrap();
    let err = builder
        .create(Arc::clone(&store), "/a/b/c/d")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NodeExists { .. }), "{err}");
    let err = Group::open(Arc::clone(&store), "/a/b/c").await.unwrap_err();
    assert!(matches!(err, Error::WrongNodeType { .. }), "{err}");
    let err = Array::open(Arc::clone(&store), "/nope").await.unwrap_err();
    assert!(matches!(err, Error::NodeNotFound { .. }), "{err}");

    let root = Group::open(Arc::clone(&store), "/").await.unwrap();
    let sub = root.create_group("g").await.unwrap();
    assert_eq!(sub.path().as_str(), "/g");
    let names: Vec<String> = root
        .children()
        .await
        .unwrap()
        .iter()
        .map(|n| n.path().as_str().to_owned())
        .collect();
    assert_eq!(names, ["/a", "/g"]);
    let tree = root.tree().await.unwrap();
    let paths: Vec<&str> = tree.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["/a", "/a/b", "/a/b/c", "/g"]);
    assert!(matches!(
        Node::open(Arc::clone(&store), "/a/b/c").await.unwrap(),
        Node::Array(_)
    ));
}

/// What is not a node is not listed (SPEC-NOTES checklist 18, 20): a directory without
/// `zarr.json` and one whose name starts with `__` are skipped by `children` and the tree, and
/// opening the former is `NodeNotFound`. Consolidated metadata (checklist 116): `tree` uses
/// it when it is `inline` (so it can be stale), `tree_listed` never does, and another kind
/// is ignored. An unknown storage transformer refuses the open (checklist 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_nodes_consolidated_metadata_and_unknown_transformers() {
    let store = memory();
    ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let root = Group::open(Arc::clone(&store), "/").await.unwrap();
    root.create_group("g").await.unwrap();
    // Not nodes: a bare chunk directory, and a `__`-prefixed one holding a zarr.json.
    store
        .set(&StoreKey::new("y/c/0"), Bytes::from_static(&[1]))
        .await
        .unwrap();
    store
        .set(
            &StoreKey::new("__meta/zarr.json"),
            Bytes::from_static(br#"{"zarr_format":3,"node_type":"group"}"#),
        )
        .await
        .unwrap();
    let names = |nodes: Vec<Node<MemoryStore>>| -> Vec<String> {
        nodes.iter().map(|n| n.path().as_str().to_owned()).collect()
    };
    assert_eq!(names(root.children().await.unwrap()), ["/a", "/g"]);
    let paths = |tree: Vec<(zarr_core::NodePath, zarr_core::NodeMetadata)>| -> Vec<String> {
        tree.iter().map(|(p, _)| p.as_str().to_owned()).collect()
    };
    assert_eq!(paths(root.tree_listed().await.unwrap()), ["/a", "/g"]);
    let err = Group::open(Arc::clone(&store), "/y").await.unwrap_err();
    assert!(matches!(err, Error::NodeNotFound { .. }), "{err}");

    // Consolidated metadata naming only /a (stale: /g exists too).
    let array_doc: serde_json::Value = serde_json::from_slice(
        &store
            .get(&StoreKey::new("a/zarr.json"))
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    let with_kind = |kind: &str| {
        json!({"zarr_format": 3, "node_type": "group", "consolidated_metadata":
            {"kind": kind, "must_understand": false, "metadata": {"a": array_doc.clone()}}})
    };
    for (kind, expected) in [("inline", vec!["/a"]), ("other", vec!["/a", "/g"])] {
        store
            .set(
                &StoreKey::new("zarr.json"),
                Bytes::from(with_kind(kind).to_string()),
            )
            .await
            .unwrap();
        let root = Group::open(Arc::clone(&store), "/").await.unwrap();
        assert_eq!(paths(root.tree().await.unwrap()), expected, "{kind}");
        assert_eq!(paths(root.tree_listed().await.unwrap()), ["/a", "/g"]);
    }

    // An array naming a storage transformer we do not know.
    let mut doc = array_doc.clone();
    doc["storage_transformers"] = json!([{"name": "no-such-transformer", "configuration": {}}]);
    store
        .set(&StoreKey::new("t/zarr.json"), Bytes::from(doc.to_string()))
        .await
        .unwrap();
    let err = Array::open(Arc::clone(&store), "/t").await.unwrap_err();
    assert!(err.to_string().contains("no-such-transformer"), "{err}");
}

/// A sharded array on a rectilinear grid: every shard's edge lengths must be multiples of the
/// inner chunk shape, and a shard that is not is refused when the array is created or opened,
/// not when that shard is first read. Edges past the array's end are no shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rectilinear_shards_that_the_inner_chunks_do_not_divide_are_refused_at_open() {
    let store = memory();
    let grid = |edges: [u64; 3]| {
        ChunkGrid::rectilinear(vec![
            DimensionChunks::Regular(4),
            DimensionChunks::from_edges(edges),
        ])
        .unwrap()
    };
    let builder = |edges| {
        ArrayBuilder::new(vec![8, 30], DataType::UInt8, vec![1, 1])
            .chunk_grid(grid(edges))
            .sharding(vec![2, 5])
    };
    // 12 is not a multiple of 5: refused before anything is written.
    let err = builder([10, 12, 10])
        .create(Arc::clone(&store), "/bad")
        .await
        .unwrap_err();
    let text = zarr_core::ErrorChain(&err).to_string();
    assert!(matches!(err, Error::Codecs { .. }), "{text}");
    assert!(
        text.contains("[2, 5]") && text.contains("[4, 12]"),
        "{text}"
    );
    assert!(
        store
            .get(&StoreKey::new("bad/zarr.json"))
            .await
            .unwrap()
            .is_none()
    );

    // The same metadata written by another implementation is refused at open.
    let mut metadata = builder([10, 20, 8]).build_metadata().unwrap();
    metadata.chunk_grid = grid([10, 12, 10]);
    store
        .set(
            &StoreKey::new("foreign/zarr.json"),
            Bytes::from(metadata.to_json_pretty().unwrap()),
        )
        .await
        .unwrap();
    let err = Array::open(Arc::clone(&store), "/foreign")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Codecs { .. }), "{err}");

    // A regular step that the inner chunks do not divide, in the other dimension.
    let err = ArrayBuilder::new(vec![8, 30], DataType::UInt8, vec![1, 1])
        .chunk_grid(
            ChunkGrid::rectilinear(vec![
                DimensionChunks::Regular(3),
                DimensionChunks::from_edges([10, 20]),
            ])
            .unwrap(),
        )
        .sharding(vec![2, 5])
        .create(Arc::clone(&store), "/bad_step")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Codecs { .. }), "{err}");

    // The 8 starts at the array's end (10 + 20 = 30): it is no shard, and the array works.
    let array = builder([10, 20, 8])
        .create(Arc::clone(&store), "/good")
        .await
        .unwrap();
    let values: Vec<u8> = (0..240).map(|i| i as u8).collect();
    array.write([0..8, 0..30], &values).await.unwrap();
    assert_eq!(array.read::<u8>([0..8, 0..30]).await.unwrap(), values);
}

/// Rectilinear grids, the v2 chunk key encoding, 0-d and zero-length arrays, big-endian,
/// transpose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grids_key_encodings_and_degenerate_shapes() {
    let store = memory();
    let grid = ChunkGrid::rectilinear(vec![
        DimensionChunks::from_edges([3, 1, 6]),
        DimensionChunks::Regular(4),
    ])
    .unwrap();
    let array = ArrayBuilder::new(vec![10, 7], DataType::Float64, vec![1, 1])
        .chunk_grid(grid)
        .transpose(vec![1, 0])
        .big_endian()
        .create(Arc::clone(&store), "/rect")
        .await
        .unwrap();
    let values: Vec<f64> = (0..70).map(f64::from).collect();
    array.write([0..10, 0..7], &values).await.unwrap();
    let part: Vec<f64> = array.read([2..5, 3..5]).await.unwrap();
    assert_eq!(part, [17.0, 18.0, 24.0, 25.0, 31.0, 32.0]);
    assert!(
        store
            .get(&StoreKey::new("rect/c/2/1"))
            .await
            .unwrap()
            .is_some()
    );

    let v2 = ArrayBuilder::new(vec![4, 4], DataType::UInt8, vec![2, 2])
        .chunk_key_encoding(ChunkKeyEncoding::V2 {
            separator: ChunkKeySeparator::Dot,
        })
        .create(Arc::clone(&store), "/v2")
        .await
        .unwrap();
    v2.write([2..4, 0..2], &[1u8; 4]).await.unwrap();
    assert!(store.get(&StoreKey::new("v2/1.0")).await.unwrap().is_some());

    let scalar = ArrayBuilder::new(vec![], DataType::Int32, vec![])
        .fill_value_json(json!(42))
        .unwrap()
        .create(Arc::clone(&store), "/scalar")
        .await
        .unwrap();
    assert_eq!(scalar.read::<i32>(..).await.unwrap(), [42]);
    scalar.write(.., &[7i32]).await.unwrap();
    assert_eq!(
        scalar.read::<i32>(Vec::<Range<u64>>::new()).await.unwrap(),
        [7]
    );

    let empty = ArrayBuilder::new(vec![0, 5], DataType::UInt8, vec![2, 2])
        .create(Arc::clone(&store), "/empty")
        .await
        .unwrap();
    assert!(empty.read::<u8>([0..0, 0..5]).await.unwrap().is_empty());
    empty.write([0..0, 0..5], &[] as &[u8]).await.unwrap();
}

/// The filesystem store, many chunks, and bounded concurrency all give the same answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_arrays_read_the_same_at_any_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(zarr_store::FilesystemStore::new(dir.path()).unwrap());
    let array = ArrayBuilder::new(vec![64, 64, 64], DataType::UInt16, vec![16, 16, 16])
        .zstd(1)
        .create(Arc::clone(&store), "/vol")
        .await
        .unwrap();
    let values: Vec<u16> = (0..64 * 64 * 64).map(|i| (i * 7 % 65521) as u16).collect();
    array.write([0..64, 0..64, 0..64], &values).await.unwrap();
    for io in [1, 3, 64] {
        let a = array
            .clone()
            .with_options(ArrayOptions::default().with_io_concurrency(io))
            .unwrap();
        let back: Vec<u16> = a.read(a.full_region()).await.unwrap();
        assert!(back == values, "io {io}");
        let slab: Vec<u16> = a.read([5..6, 0..64, 3..60]).await.unwrap();
        let expected: Vec<u16> = (0..64)
            .flat_map(|y| (3..60).map(move |z| ((5 * 4096 + y * 64 + z) * 7 % 65521) as u16))
            .collect();
        assert_eq!(slab, expected);
    }
}

/// The blocking API works without a runtime and refuses to run inside one.
#[test]
fn blocking_api_round_trips_and_refuses_inside_a_runtime() {
    let store = memory();
    let builder = ArrayBuilder::new(vec![5], DataType::Int64, vec![2]);
    let mut array = blocking::Array::create(&builder, Arc::clone(&store), "/b").unwrap();
    array.write(1..4, &[1i64, 2, 3]).unwrap();
    assert_eq!(array.read::<i64>(0..5).unwrap(), [0, 1, 2, 3, 0]);
    array.resize(vec![3]).unwrap();
    assert_eq!(array.read::<i64>(0..3).unwrap(), [0, 1, 2]);
    let group = blocking::Group::open(Arc::clone(&store), "/").unwrap();
    assert_eq!(group.children().unwrap().len(), 1);
    assert_eq!(
        array.read_array_bytes(0..1).unwrap(),
        ArrayBytes::fixed(0i64.to_ne_bytes().to_vec())
    );

    rt().block_on(async {
        let err = blocking::Array::open(Arc::clone(&store), "/b").unwrap_err();
        assert!(matches!(err, Error::BlockingInAsync), "{err}");
    });
}

/// Strings and bytes through the whole stack: plain, compressed, transposed (stored in the
/// spec's order), sharded, a rectilinear grid, with missing chunks and partial writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_and_bytes_through_the_array() {
    use zarr_vlen::{VlenBinary, VlenStrings};
    let store = memory();
    let words = ["α", "", "🦀 crab", "naïve", "x", "日本語"];
    let builders = [
        (
            "plain",
            ArrayBuilder::new(vec![3, 4], DataType::String, vec![2, 3]),
        ),
        (
            "zstd",
            ArrayBuilder::new(vec![3, 4], DataType::String, vec![2, 3]).zstd(3),
        ),
        (
            "transposed",
            ArrayBuilder::new(vec![3, 4], DataType::String, vec![2, 3]).transpose(vec![1, 0]),
        ),
        (
            "sharded",
            ArrayBuilder::new(vec![3, 4], DataType::String, vec![2, 4])
                .sharding(vec![1, 2])
                .zstd(1),
        ),
        (
            "rectilinear",
            ArrayBuilder::new(vec![3, 4], DataType::String, vec![1, 1]).chunk_grid(
                zarr_core::ChunkGrid::rectilinear(vec![
                    zarr_core::DimensionChunks::from_edges([2, 1]),
                    zarr_core::DimensionChunks::from_edges([1, 2, 1]),
                ])
                .unwrap(),
            ),
        ),
    ];
    for (name, builder) in builders {
        let array = builder
            .fill_value_json(json!("-"))
            .unwrap()
            .create(Arc::clone(&store), &format!("/{name}"))
            .await
            .unwrap();
        let values = VlenStrings::<i32>::from_strs(words).unwrap();
        array.write_strings([0..2, 1..4], &values).await.unwrap();
        array
            .write_strings(
                [2..3, 3..4],
                &VlenStrings::<i32>::from_strs(["last"]).unwrap(),
            )
            .await
            .unwrap();
        let back: Vec<String> = (&array.read_strings::<i64>([0..3, 0..4]).await.unwrap()).into();
        assert_eq!(
            back,
            [
                "-",
                "α",
                "",
                "🦀 crab",
                "-",
                "naïve",
                "x",
                "日本語",
                "-",
                "-",
                "-",
                "last"
            ],
            "{name}"
        );
        let part: Vec<String> = (&array.read_strings::<i32>([1..3, 2..4]).await.unwrap()).into();
        assert_eq!(part, ["x", "日本語", "-", "last"], "{name}");
        let err = array.read::<u8>([0..1, 0..1]).await.unwrap_err();
        assert!(matches!(err, Error::ElementType { .. }), "{err}");
    }

    // The transposed array stores elements in the C order of the transposed chunk.
    let chunk = store
        .get(&StoreKey::new("transposed/c/0/0"))
        .await
        .unwrap()
        .unwrap();
    // Chunk (0, 0) holds rows 0..2, columns 0..3: [[-, α, ""], [-, naïve, x]]; transposed
    // [[-, -], [α, naïve], ["", x]] -> -, -, α, naïve, "", x after the count.
    let decoded: Vec<String> = (&zarr_vlen::VlenUtf8Codec::new()
        .decode_strings::<i32>(&chunk, 6)
        .unwrap())
        .into();
    assert_eq!(decoded, ["-", "-", "α", "naïve", "", "x"]);

    let binary = ArrayBuilder::new(vec![5], DataType::Bytes, vec![2])
        .create(Arc::clone(&store), "/bin")
        .await
        .unwrap();
    let blobs = VlenBinary::<i32>::from_elements([&[0u8, 1][..], &[], &[255; 3]]).unwrap();
    binary.write_binary(1..4, &blobs).await.unwrap();
    let back: Vec<Vec<u8>> = (&binary.read_binary::<i32>(0..5).await.unwrap()).into();
    assert_eq!(back, [vec![], vec![0, 1], vec![], vec![255; 3], vec![]]);
    assert!(
        !binary.chunk_exists(&[2]).await.unwrap(),
        "all-fill chunk not stored"
    );
}

/// Regions as `ndarray` arrays, from standard and transposed (non-contiguous) views.
#[cfg(feature = "ndarray")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndarray_regions_round_trip() {
    let array = ArrayBuilder::new(vec![4, 6], DataType::Float64, vec![3, 4])
        .create(memory(), "/nd")
        .await
        .unwrap();
    let block = ndarray::Array2::from_shape_fn((2, 3), |(i, j)| (i * 10 + j) as f64);
    array.write_ndarray(&[1, 2], block.view()).await.unwrap();
    let back = array.read_ndarray::<f64>([1..3, 2..5]).await.unwrap();
    assert_eq!(back, block.into_dyn());
    // A transposed view is not contiguous; it is written in its logical order.
    let t = ndarray::Array2::from_shape_fn((3, 2), |(i, j)| (100 + i * 2 + j) as f64);
    array.write_ndarray(&[0, 0], t.t()).await.unwrap();
    let back = array.read_ndarray::<f64>([0..2, 0..3]).await.unwrap();
    assert_eq!(back, t.t().to_owned().into_dyn());
    let err = array.write_ndarray(&[0], t.view()).await.unwrap_err();
    assert!(matches!(err, Error::Core(_)), "{err}");
}

/// Struct arrays (records of named fields): written and read as packed records, in either
/// byte order and either metadata form; missing chunks read as the struct fill value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_arrays_round_trip_in_both_byte_orders_and_forms() {
    use zarr_core::{StructField, StructType};
    let point = StructType::new(vec![
        StructField::new("id", DataType::Int32),
        StructField::new("flag", DataType::UInt8),
        StructField::new("xy", DataType::Complex64),
    ])
    .unwrap();
    let record = |i: i32| {
        let mut r = i.to_ne_bytes().to_vec();
        r.push(i as u8 ^ 0x5a);
        r.extend((i as f32 * 0.5).to_ne_bytes());
        r.extend((-(i as f32)).to_ne_bytes());
        r
    };
    let fill = record(-1);
    for (st, endian) in [
        (point.clone(), Some("big")),
        (point.clone(), Some("little")),
        (point.clone().structured(), None),
    ] {
        let store = memory();
        let mut bytes_codec = json!({"name": "bytes"});
        if let Some(e) = endian {
            bytes_codec["configuration"] = json!({"endian": e});
        }
        let codecs = vec![ExtensionObject::from_json(&bytes_codec, "codecs[0]").unwrap()];
        let dt = DataType::Struct(st.clone());
        let array = ArrayBuilder::new(vec![10], dt.clone(), vec![4])
            .codecs(codecs)
            .fill_value(zarr_core::FillValue::new(fill.clone()))
            .create(Arc::clone(&store), "/points")
            .await
            .unwrap();
        // Elements 0..6 written; the third chunk (8..10) is never stored.
        let written: Vec<u8> = (0..6).flat_map(record).collect();
        array.write_bytes(0..6, &written).await.unwrap();
        let reopened = Array::open(Arc::clone(&store), "/points").await.unwrap();
        assert_eq!(reopened.data_type(), &dt);
        let back = reopened.read_bytes(0..10).await.unwrap();
        let mut expected = written.clone();
        for _ in 6..10 {
            expected.extend(&fill);
        }
        assert_eq!(back, expected, "{endian:?}");
        assert!(!reopened.chunk_exists(&[2]).await.unwrap());
        // The stored chunk holds the records in the codec's byte order, fields packed.
        let raw = store
            .get(&StoreKey::new("points/c/0"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(raw.len(), 4 * 13);
        let first = &raw[..13];
        let id = if endian == Some("big") {
            i32::from_be_bytes(first[..4].try_into().unwrap())
        } else {
            i32::from_le_bytes(first[..4].try_into().unwrap())
        };
        assert_eq!((id, first[4]), (0, 0x5a));
        // The metadata keeps its form: object fields and fill value, or zarr-python's.
        let meta: serde_json::Value = serde_json::from_slice(
            &store
                .get(&StoreKey::new("points/zarr.json"))
                .await
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        if st.is_structured() {
            assert_eq!(meta["data_type"]["name"], "structured");
            assert!(meta["fill_value"].is_string());
        } else {
            assert_eq!(meta["data_type"]["name"], "struct");
            assert_eq!(meta["fill_value"]["id"], -1);
        }
    }
}

/// One field of a struct array's records, nested fields included, as typed values, in either
/// byte order; a wrong element type, an unknown field or a non-struct array is a typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_fields_read_as_typed_values() {
    use zarr_core::{StructField, StructType};
    let pos = StructType::new(vec![
        StructField::new("x", DataType::Float32),
        StructField::new("ok", DataType::Bool),
    ])
    .unwrap();
    let rec = StructType::new(vec![
        StructField::new("id", DataType::UInt16),
        StructField::new("pos", DataType::Struct(pos)),
        StructField::new("t", DataType::Int64),
    ])
    .unwrap();
    let record = |i: u16| {
        let mut r = i.to_ne_bytes().to_vec();
        r.extend((f32::from(i) * 0.25).to_ne_bytes());
        r.push((i % 2) as u8);
        r.extend((-i64::from(i) * 1000).to_ne_bytes());
        r
    };
    for endian in ["little", "big"] {
        let store = memory();
        let codecs = vec![
            ExtensionObject::from_json(
                &json!({"name": "bytes", "configuration": {"endian": endian}}),
                "codecs[0]",
            )
            .unwrap(),
        ];
        let array = ArrayBuilder::new(vec![3, 4], DataType::Struct(rec.clone()), vec![2, 3])
            .codecs(codecs)
            .create(Arc::clone(&store), "/r")
            .await
            .unwrap();
        let all: Vec<u8> = (0..12).flat_map(record).collect();
        array.write_bytes([0..3, 0..4], &all).await.unwrap();
        let region = [1..3, 1..4];
        let ids: Vec<u16> = array.read_field(region.clone(), &["id"]).await.unwrap();
        assert_eq!(ids, [5, 6, 7, 9, 10, 11], "{endian}");
        let xs: Vec<f32> = array
            .read_field(region.clone(), &["pos", "x"])
            .await
            .unwrap();
        assert_eq!(xs, [1.25, 1.5, 1.75, 2.25, 2.5, 2.75], "{endian}");
        let oks: Vec<bool> = array
            .read_field(region.clone(), &["pos", "ok"])
            .await
            .unwrap();
        assert_eq!(oks, [true, false, true, true, false, true], "{endian}");
        let ts: Vec<i64> = array.read_field(region.clone(), &["t"]).await.unwrap();
        assert_eq!(ts, [-5000, -6000, -7000, -9000, -10000, -11000], "{endian}");

        // Errors: the wrong type, a missing field, a path through a non-struct field.
        let e = array.read_field::<u32>(0..1, &["id"]).await.unwrap_err();
        assert!(matches!(e, Error::ElementType { .. }), "{e}");
        assert!(e.to_string().contains("field id"), "{e}");
        for path in [&["nope"][..], &["pos", "y"], &["id", "x"], &[]] {
            let e = array.read_field::<u16>(0..1, path).await.unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }), "{path:?}: {e}");
        }
        // A bool field holding another byte than 0 or 1.
        let mut bad = record(0);
        bad[6] = 2;
        array.write_bytes([0..1, 0..1], &bad).await.unwrap();
        let e = array
            .read_field::<bool>([0..1, 0..1], &["pos", "ok"])
            .await
            .unwrap_err();
        assert!(matches!(e, Error::InvalidValue { .. }), "{e}");
    }
    // Not a struct array.
    let plain = ArrayBuilder::new(vec![2], DataType::UInt16, vec![2])
        .create(memory(), "/p")
        .await
        .unwrap();
    let e = plain.read_field::<u16>(0..2, &["x"]).await.unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
}

/// `read_field` through the blocking API.
#[test]
fn struct_fields_read_through_the_blocking_api() {
    use zarr_core::{StructField, StructType};
    let st = StructType::new(vec![
        StructField::new("a", DataType::Int8),
        StructField::new("b", DataType::Float64),
    ])
    .unwrap();
    let builder = ArrayBuilder::new(vec![4], DataType::Struct(st), vec![3]);
    let array = blocking::Array::create(&builder, memory(), "/s").unwrap();
    let records: Vec<u8> = (0..4i8)
        .flat_map(|i| {
            let mut r = vec![i as u8];
            r.extend((f64::from(i) / 4.0).to_ne_bytes());
            r
        })
        .collect();
    array.write_bytes(0..4, &records).unwrap();
    assert_eq!(array.read_field::<i8>(1..4, &["a"]).unwrap(), [1, 2, 3]);
    assert_eq!(array.read_field::<f64>(0..2, &["b"]).unwrap(), [0.0, 0.25]);
}

/// A `numcodecs.pcodec` array of 8-bit integers, whose chunks only pco 1.x writes: read
/// exactly; writing is refused with the codec's reason, and the stored chunk is kept.
#[tokio::test]
async fn pcodec_8_bit_arrays_are_read_and_not_written() {
    let store = memory();
    let metadata = json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [64],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "numcodecs.pcodec", "configuration": {}}],
    });
    store
        .set(&StoreKey::new("p/zarr.json"), metadata.to_string().into())
        .await
        .unwrap();
    // Python's pcodec 1.1.0: standalone.simple_compress(
    //     (np.arange(64) * 5 % 256).astype(np.uint8), ChunkConfig(enable_8_bit=True))
    let hex = "70636f210300061004010a3f00001001018042000000";
    let chunk: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    store
        .set(&StoreKey::new("p/c/0"), chunk.clone().into())
        .await
        .unwrap();
    let array = Array::open(Arc::clone(&store), "/p").await.unwrap();
    let expected: Vec<u8> = (0..64u32).map(|i| (i * 5 % 256) as u8).collect();
    assert_eq!(array.read::<u8>(0..64).await.unwrap(), expected);
    assert_eq!(array.read::<u8>(10..13).await.unwrap(), [50, 55, 60]);
    let e = array.write(0..64, &[1u8; 64]).await.unwrap_err();
    match &e {
        Error::Chunk { source, .. } => assert!(
            matches!(**source, zarr_codecs::Error::Unsupported { .. }),
            "{source:?}"
        ),
        other => panic!("{other:?}"),
    }
    let kept = store.get(&StoreKey::new("p/c/0")).await.unwrap().unwrap();
    assert_eq!(kept[..], chunk[..]);
}

/// `with_shape`: writes through the handle land in the array's chunks but stay unseen until
/// the shape is stored; the handle refuses another rank.
#[tokio::test]
async fn with_shape_writes_beyond_the_stored_shape_until_resize() {
    let store = memory();
    let mut array = ArrayBuilder::new(vec![3, 2], DataType::Int32, vec![2, 2])
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    array
        .write([0..3, 0..2], &[1i32, 2, 3, 4, 5, 6])
        .await
        .unwrap();
    let grown = array.with_shape(vec![5, 2]).unwrap();
    assert_eq!(grown.shape(), &[5, 2]);
    grown.write([3..5, 0..2], &[7i32, 8, 9, 10]).await.unwrap();
    let reopened = Array::open(Arc::clone(&store), "/a").await.unwrap();
    assert_eq!(reopened.shape(), &[3, 2]);
    assert_eq!(
        reopened.read::<i32>([0..3, 0..2]).await.unwrap(),
        [1, 2, 3, 4, 5, 6]
    );
    array.resize(vec![5, 2]).await.unwrap();
    let reopened = Array::open(Arc::clone(&store), "/a").await.unwrap();
    assert_eq!(
        reopened.read::<i32>([0..5, 0..2]).await.unwrap(),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    );
    assert!(matches!(
        array.with_shape(vec![5]),
        Err(Error::Region { .. })
    ));
}

/// The extension chunk key encodings name the files an array writes, and arrays using them
/// read back, reopen, list their chunks, shrink, and go through the sharding storage
/// transformer; a template that does not suit the rank is refused when the array is built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_chunk_key_encodings_name_the_stored_chunks() {
    use zarr_core::ChunkKeyTemplate;
    use zarr_store::ListableStore;

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(zarr_store::FilesystemStore::new(dir.path()).unwrap());
    let encodings = [
        ChunkKeyEncoding::DefaultSuffix {
            separator: ChunkKeySeparator::Slash,
            suffix: ".bin".into(),
        },
        ChunkKeyEncoding::prefix(
            "x/",
            ChunkKeyEncoding::V2 {
                separator: ChunkKeySeparator::Dot,
            },
        )
        .unwrap(),
        ChunkKeyEncoding::suffix(".tiff", ChunkKeyEncoding::default()).unwrap(),
        ChunkKeyEncoding::fanout(3).unwrap(),
        ChunkKeyEncoding::Template(ChunkKeyTemplate::new("rows/{0:03}/{-1}.raw", None).unwrap()),
    ];
    let values: Vec<u16> = (0..100).collect();
    for (n, encoding) in encodings.iter().enumerate() {
        for transformer in [false, true] {
            let path = format!("/a{n}{}", if transformer { "t" } else { "" });
            let mut builder = ArrayBuilder::new(vec![10, 10], DataType::UInt16, vec![2, 5])
                .chunk_key_encoding(encoding.clone())
                .zstd(1);
            if transformer {
                builder = builder.sharding_transformer(vec![2, 2]);
            }
            let mut array = builder.create(Arc::clone(&store), &path).await.unwrap();
            array.write([0..10, 0..10], &values).await.unwrap();
            array.write([4..6, 5..10], &[0u16; 10]).await.unwrap();

            // The store holds the keys the encoding gives (for the transformer, of shards).
            let prefix = zarr_store::StorePrefix::new(&format!("{}/", &path[1..]));
            let mut listed: Vec<String> = store
                .list_prefix(&prefix)
                .await
                .unwrap()
                .into_iter()
                .map(|k| k.as_str()[prefix.as_str().len()..].to_owned())
                .filter(|k| k != "zarr.json")
                .collect();
            listed.sort();
            let grid: Vec<Vec<u64>> = if transformer {
                (0..3)
                    .flat_map(|i| (0..1).map(move |j| vec![i, j]))
                    .collect()
            } else {
                (0..5)
                    .flat_map(|i| (0..2).map(move |j| vec![i, j]))
                    .filter(|c| c != &vec![2, 1])
                    .collect()
            };
            let mut expected: Vec<String> = grid.iter().map(|c| encoding.encode(c)).collect();
            expected.sort();
            assert_eq!(listed, expected, "{encoding:?} transformer {transformer}");

            let reopened = Array::open(Arc::clone(&store), &path).await.unwrap();
            assert_eq!(reopened.chunk_key_encoding(), encoding);
            let back: Vec<u16> = reopened.read([0..10, 0..10]).await.unwrap();
            let mut want = values.clone();
            for row in 4..6 {
                want[row * 10 + 5..row * 10 + 10].fill(0);
            }
            assert_eq!(back, want, "{encoding:?}");
            let stored: Vec<Vec<u64>> = (0..5)
                .flat_map(|i| (0..2).map(move |j| vec![i, j]))
                .filter(|c| c != &vec![2, 1])
                .collect();
            assert_eq!(
                reopened.stored_chunks().await.unwrap(),
                stored,
                "{encoding:?}"
            );

            array.resize(vec![4, 10]).await.unwrap();
            assert_eq!(
                array.stored_chunks().await.unwrap().len(),
                4,
                "{encoding:?}"
            );
            let key = store
                .get(
                    &StoreKey::try_new(format!("{}{}", prefix.as_str(), encoding.encode(&[2, 0])))
                        .unwrap(),
                )
                .await
                .unwrap();
            assert!(
                key.is_none() || transformer,
                "{encoding:?}: chunk [2, 0] outlived the resize"
            );
        }
    }

    let three_d = ArrayBuilder::new(vec![4, 4, 4], DataType::UInt8, vec![2, 2, 2])
        .chunk_key_encoding(ChunkKeyEncoding::Template(
            ChunkKeyTemplate::new("{0}_{1}", None).unwrap(),
        ))
        .create(Arc::clone(&store), "/bad")
        .await
        .unwrap_err()
        .to_string();
    assert!(three_d.contains("chunk_key_encoding"), "{three_d}");
}

/// A sharded array read twice through a `CachingStore` costs the store below nothing the
/// second time, and a write through it is seen by the next read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caching_store_serves_repeated_reads_of_an_array() {
    use zarr_store::CachingStore;

    let store = Arc::new(CachingStore::new(
        RecordingStore::new(MemoryStore::new()),
        64 << 20,
    ));
    let array = ArrayBuilder::new(vec![16, 16], DataType::UInt16, vec![8, 8])
        .sharding(vec![4, 4])
        .create(Arc::clone(&store), "/img")
        .await
        .unwrap();
    let values: Vec<u16> = (0..256).collect();
    array.write([0..16, 0..16], &values).await.unwrap();
    array.write([0..8, 0..8], &[0u16; 64]).await.unwrap(); // an all-fill shard: erased

    let reopened = Array::open(Arc::clone(&store), "/img").await.unwrap();
    store.inner().clear();
    let region = [2..14, 3..11];
    let first: Vec<u16> = reopened.read(region.clone()).await.unwrap();
    let below = store.inner().stats();
    assert!(below.gets + below.partial_reads > 0, "{below:?}");
    store.inner().clear();
    for _ in 0..3 {
        let again: Vec<u16> = reopened.read(region.clone()).await.unwrap();
        assert_eq!(again, first);
    }
    assert_eq!(
        store.inner().operations(),
        [],
        "the store below was asked again"
    );

    array.write([4..6, 4..6], &[9u16; 4]).await.unwrap();
    let after: Vec<u16> = reopened.read([4..6, 4..6]).await.unwrap();
    assert_eq!(after, [9; 4]);
    let whole: Vec<u16> = reopened.read([0..16, 0..16]).await.unwrap();
    let mut want = values.clone();
    for r in 0..8 {
        want[r * 16..r * 16 + 8].fill(0);
    }
    for r in 4..6 {
        want[r * 16 + 4..r * 16 + 6].fill(9);
    }
    assert_eq!(whole, want);
}

/// Arrays of optional (nullable) values: the default `zarrs.optional` codec, missing values,
/// fill values of both kinds, empty chunks, sharding, nesting, and element-type errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_arrays_hold_missing_values() {
    use zarr_core::{FillValue, OptionalType};
    let store = memory();
    let nullable = DataType::Optional(OptionalType::new(DataType::Int16));
    let array = ArrayBuilder::new(vec![5, 6], nullable.clone(), vec![2, 4])
        .zstd(3)
        .create(Arc::clone(&store), "/opt")
        .await
        .unwrap();
    let meta: serde_json::Value = serde_json::from_slice(
        &store
            .get(&StoreKey::new("opt/zarr.json"))
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["fill_value"], json!(null));
    assert_eq!(meta["data_type"]["name"], "zarrs.optional");
    assert_eq!(meta["codecs"][0]["name"], "zarrs.optional");
    assert_eq!(meta["codecs"][1]["name"], "zstd");

    // Nothing written: everything is missing.
    assert_eq!(
        array.read_optional::<i16>(..).await.unwrap(),
        vec![None; 30]
    );
    let values: Vec<Option<i16>> = (0..30)
        .map(|i| (i % 4 != 1).then_some(i as i16 * -100))
        .collect();
    array.write_optional(.., &values).await.unwrap();
    assert_eq!(array.read_optional::<i16>(..).await.unwrap(), values);
    // A region across chunks, read and written.
    let part: Vec<Option<i16>> = vec![Some(7), None, Some(9), None, None, Some(i16::MIN)];
    array.write_optional([1..3, 2..5], &part).await.unwrap();
    assert_eq!(
        array.read_optional::<i16>([1..3, 2..5]).await.unwrap(),
        part
    );
    let reopened = Array::open(Arc::clone(&store), "/opt").await.unwrap();
    let mut expected = values.clone();
    for (k, v) in part.iter().enumerate() {
        expected[(1 + k / 3) * 6 + 2 + k % 3] = *v;
    }
    assert_eq!(reopened.read_optional::<i16>(..).await.unwrap(), expected);
    // A chunk of missing values is the fill value: not stored.
    assert!(array.chunk_exists(&[0, 0]).await.unwrap());
    array
        .write_optional([0..2, 0..4], &[None::<i16>; 8])
        .await
        .unwrap();
    assert!(!array.chunk_exists(&[0, 0]).await.unwrap());
    // Raw bytes: the value, then the validity byte.
    let raw = array.read_bytes([2..3, 0..1]).await.unwrap();
    let mut want = (-1200i16).to_ne_bytes().to_vec();
    want.push(1);
    assert_eq!(raw, want);

    // Element types are checked against the inner type.
    let e = array.read_optional::<u16>(..).await.unwrap_err();
    assert!(matches!(e, Error::ElementType { .. }), "{e}");
    assert!(e.to_string().contains("Option<u16>"), "{e}");
    let e = array.read::<i16>(..).await.unwrap_err();
    assert!(matches!(e, Error::ElementType { .. }), "{e}");
    let plain = ArrayBuilder::new(vec![4], DataType::Int16, vec![4])
        .create(Arc::clone(&store), "/plain")
        .await
        .unwrap();
    let e = plain
        .write_optional(.., &[Some(1i16); 4])
        .await
        .unwrap_err();
    assert!(matches!(e, Error::ElementType { .. }), "{e}");
    // A validity byte other than 0 or 1 is refused.
    let e = array
        .write_bytes([0..1, 0..1], &[1, 0, 2])
        .await
        .unwrap_err();
    let chain = zarr_core::ErrorChain(&e).to_string();
    assert!(chain.contains("validity byte is 2"), "{chain}");

    // A present fill value, sharded, with a bool inner type: unwritten elements read as it.
    let flags = DataType::Optional(OptionalType::new(DataType::Bool));
    let sharded = ArrayBuilder::new(vec![8, 8], flags, vec![4, 8])
        .sharding(vec![2, 4])
        .fill_value(FillValue::new([1, 1]))
        .create(Arc::clone(&store), "/flags")
        .await
        .unwrap();
    sharded
        .write_optional(
            [0..2, 0..3],
            &[Some(false), None, Some(true), None, None, None],
        )
        .await
        .unwrap();
    let back = sharded.read_optional::<bool>(..).await.unwrap();
    assert_eq!(&back[..3], &[Some(false), None, Some(true)]);
    assert_eq!(&back[8..11], &[None, None, None]);
    assert!(back[11..].iter().all(|v| *v == Some(true)), "{back:?}");
    assert!(!sharded.chunk_exists(&[1, 0]).await.unwrap());

    // Nested: optional<optional<uint8>>, read and written as bytes.
    let nested: DataType = "zarrs.optional<zarrs.optional<uint8>>".parse().unwrap();
    let deep = ArrayBuilder::new(vec![4], nested, vec![4])
        .fill_value_json(json!([null]))
        .unwrap()
        .create(Arc::clone(&store), "/nested")
        .await
        .unwrap();
    assert_eq!(deep.read_bytes(..).await.unwrap(), [0, 0, 1].repeat(4));
    let elements = [[5, 1, 1], [0, 0, 0], [0, 0, 1], [9, 1, 1]].concat();
    deep.write_bytes(.., &elements).await.unwrap();
    let reopened = Array::open(Arc::clone(&store), "/nested").await.unwrap();
    assert_eq!(reopened.read_bytes(..).await.unwrap(), elements);
}

#[test]
fn optional_values_through_the_blocking_api() {
    let nullable = DataType::Optional(zarr_core::OptionalType::new(DataType::Int16));
    let builder = ArrayBuilder::new(vec![3], nullable, vec![2]);
    let array = blocking::Array::create(&builder, memory(), "/b").unwrap();
    array
        .write_optional(.., &[None, Some(4i16), Some(5)])
        .unwrap();
    assert_eq!(
        array.read_optional::<i16>(..).unwrap(),
        [None, Some(4), Some(5)]
    );
}

/// Optional strings and bytes: missing values beside empty ones, both fill values, sharding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_strings_and_bytes_tell_missing_from_empty() {
    use zarr_core::{FillValue, OptionalType};
    let store = memory();
    let text = DataType::Optional(OptionalType::new(DataType::String));
    let array = ArrayBuilder::new(vec![7], text.clone(), vec![3])
        .zstd(1)
        .create(Arc::clone(&store), "/names")
        .await
        .unwrap();
    assert_eq!(array.metadata().fill_value.as_bytes(), [0]);
    assert_eq!(array.read_optional_text(..).await.unwrap(), vec![None; 7]);
    let values = [
        Some("ice"),
        None,
        Some(""),
        Some("snöw"),
        None,
        None,
        Some("x"),
    ];
    array.write_optional_text(.., &values).await.unwrap();
    let want: Vec<Option<String>> = values.iter().map(|v| v.map(str::to_owned)).collect();
    assert_eq!(array.read_optional_text(..).await.unwrap(), want);
    // A partial write across chunks, then a chunk of missing values only: not stored.
    array
        .write_optional_text(2..4, &[None, Some("melt")])
        .await
        .unwrap();
    assert_eq!(
        array.read_optional_text(1..5).await.unwrap(),
        [None, None, Some("melt".to_owned()), None]
    );
    array
        .write_optional_text(3..6, &[None::<&str>; 3])
        .await
        .unwrap();
    assert!(!array.chunk_exists(&[1]).await.unwrap());
    let reopened = Array::open(Arc::clone(&store), "/names").await.unwrap();
    assert_eq!(
        reopened.read_optional_text(..).await.unwrap(),
        [Some("ice"), None, None, None, None, None, Some("x")]
            .iter()
            .map(|v| v.map(str::to_owned))
            .collect::<Vec<_>>()
    );
    // In `ArrayBytes`, each element ends with its validity byte.
    let raw = array.read_array_bytes(0..3).await.unwrap();
    let raw: Vec<&[u8]> = raw.as_variable().unwrap().iter().collect();
    assert_eq!(raw, [&b"ice\x01"[..], b"\x00", b"\x00"]);
    // Element types.
    let e = array.read_optional_binary(..).await.unwrap_err();
    assert!(matches!(e, Error::ElementType { .. }), "{e}");
    let e = array.read_text(..).await.unwrap_err();
    assert!(matches!(e, Error::ElementType { .. }), "{e}");

    // Bytes, sharded, with a present fill value.
    let binary = DataType::Optional(OptionalType::new(DataType::Bytes));
    let blobs = ArrayBuilder::new(vec![8], binary, vec![8])
        .sharding(vec![2])
        .fill_value(FillValue::new(*b"\xff\x01"))
        .create(Arc::clone(&store), "/blobs")
        .await
        .unwrap();
    blobs
        .write_optional_binary(1..4, &[None, Some(vec![]), Some(vec![0, 1, 2])])
        .await
        .unwrap();
    let back = blobs.read_optional_binary(..).await.unwrap();
    let fill = Some(vec![0xff]);
    assert_eq!(
        back,
        [
            fill.clone(),
            None,
            Some(vec![]),
            Some(vec![0, 1, 2]),
            fill.clone(),
            fill.clone(),
            fill.clone(),
            fill
        ]
    );
}

/// The zarr-extensions `pad`, `offset` and `singleton_dim` codecs through arrays: a chunk
/// with a foreign header (an N5 block header) reads whatever the header holds; a custom
/// prefix is written before every chunk; a dimension of length 1 is dropped so that a 2-D
/// `transpose` applies to a 3-D array.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framing_and_singleton_dim_codecs() {
    use zarr_core::ExtensionObject;
    let codec = |v: serde_json::Value| ExtensionObject::from_json(&v, "codecs").unwrap();
    let store = Arc::new(MemoryStore::new());

    // The `pad` proposal's N5 example: big-endian values, zstd, a 12-byte header skipped.
    let n5 = ArrayBuilder::new(vec![6, 4], DataType::UInt16, vec![3, 4])
        .codecs(vec![
            codec(json!({"name": "bytes", "configuration": {"endian": "big"}})),
            codec(json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}})),
            codec(json!({"name": "pad", "configuration": {"location": "start", "nbytes": 12}})),
        ])
        .create(Arc::clone(&store), "/n5")
        .await
        .unwrap();
    let values: Vec<u16> = (0..24).map(|i| i * 1000 + 7).collect();
    n5.write(.., &values).await.unwrap();
    let key = StoreKey::new("n5/c/1/0");
    let stored = store.get(&key).await.unwrap().unwrap();
    assert_eq!(&stored[..12], &[0u8; 12], "zeros when no padding is given");
    let frame = zarr_codecs::ZstdCodec::try_new(3, false)
        .unwrap()
        .decode(stored.slice(12..), ExpectedSize::Exact(24))
        .unwrap();
    assert_eq!(
        &frame[..2],
        &12_007u16.to_be_bytes(),
        "big-endian under zstd"
    );
    // An N5 block header (mode 0, 2 dimensions, 4 x 3) in place of the zeros.
    let mut foreign = vec![0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 3];
    foreign.extend_from_slice(&stored[12..]);
    store.set(&key, foreign.into()).await.unwrap();
    let again = Array::open(Arc::clone(&store), "/n5").await.unwrap();
    assert_eq!(again.read::<u16>(..).await.unwrap(), values);
    assert_eq!(
        again.read::<u16>([4..5, 1..3]).await.unwrap(),
        [17_007, 18_007]
    );
    // A chunk shorter than its header is a typed error naming it.
    store.set(&key, Bytes::from_static(b"short")).await.unwrap();
    let err = again.read::<u16>([3..4, 0..1]).await.unwrap_err();
    assert!(matches!(err, Error::Chunk { .. }), "{err:?}");
    assert!(err.to_string().contains("n5/c/1/0"), "{err}");

    // `singleton_dim` drops the middle dimension; `transpose` then has rank 2; every chunk
    // starts with the `offset` prefix ("MY_CUSTOM_HEADER").
    let framed = ArrayBuilder::new(vec![4, 1, 6], DataType::UInt16, vec![2, 1, 3])
        .codecs(vec![
            codec(
                json!({"name": "singleton_dim", "configuration": {"operations": [{"remove": 1}]}}),
            ),
            codec(json!({"name": "transpose", "configuration": {"order": [1, 0]}})),
            codec(json!({"name": "bytes", "configuration": {"endian": "little"}})),
            codec(json!({"name": "offset", "configuration":
                {"offset": 16, "prefix": "TVlfQ1VTVE9NX0hFQURFUg=="}})),
        ])
        .create(Arc::clone(&store), "/framed")
        .await
        .unwrap();
    let values: Vec<u16> = (0..24).collect();
    framed.write(.., &values).await.unwrap();
    let stored = store
        .get(&StoreKey::new("framed/c/0/0/0"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&stored[..16], b"MY_CUSTOM_HEADER");
    // The 2 x 3 chunk [[0, 1, 2], [6, 7, 8]], transposed.
    let data: Vec<u16> = stored[16..]
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(data, [0, 6, 1, 7, 2, 8]);
    let reopened = Array::open(Arc::clone(&store), "/framed").await.unwrap();
    assert_eq!(reopened.read::<u16>(..).await.unwrap(), values);
    assert_eq!(
        reopened.read::<u16>([1..3, 0..1, 2..4]).await.unwrap(),
        [8, 9, 14, 15]
    );

    // An operation the chunk shape does not allow is refused when the array is created.
    let err = ArrayBuilder::new(vec![4, 6], DataType::UInt16, vec![2, 3])
        .codecs(vec![
            codec(
                json!({"name": "singleton_dim", "configuration": {"operations": [{"remove": 0}]}}),
            ),
            codec(json!({"name": "bytes", "configuration": {"endian": "little"}})),
        ])
        .create(Arc::clone(&store), "/bad")
        .await
        .unwrap_err();
    let text = zarr_core::ErrorChain(&err).to_string();
    assert!(matches!(err, Error::Codecs { .. }), "{err:?}");
    assert!(
        text.contains("singleton_dim") && text.contains("index 0"),
        "{text}"
    );
}

/// A handle opened before another handle changed the metadata starts its own change from
/// the stored metadata: setting an attribute keeps the other's shape and attributes, an
/// append goes after the other's, and a shrinking resize clears what the other wrote
/// beyond it. In both formats.
#[tokio::test]
async fn stale_handles_change_the_metadata_as_stored() {
    for format in [zarr_core::v2::ZarrFormat::V3, zarr_core::v2::ZarrFormat::V2] {
        let store = Arc::new(MemoryStore::new());
        let mut a = ArrayBuilder::new(vec![4, 2], DataType::Int32, vec![2, 2])
            .zarr_format(format)
            .create(Arc::clone(&store), "/s")
            .await
            .unwrap();
        a.write(.., &[1i32; 8]).await.unwrap();
        let mut b = Array::open(Arc::clone(&store), "/s").await.unwrap();
        b.append(0, &[2i32, 2]).await.unwrap();
        b.set_attribute("by", "b").await.unwrap();
        // `a` still thinks the shape is [4, 2] and there are no attributes.
        a.set_attribute("also", "a").await.unwrap();
        assert_eq!(a.shape(), &[5, 2], "{format}");
        let stored = Array::open(Arc::clone(&store), "/s").await.unwrap();
        assert_eq!(stored.shape(), &[5, 2], "{format}");
        assert_eq!(
            stored.attributes(),
            json!({"by": "b", "also": "a"}).as_object().unwrap(),
            "{format}"
        );
        // An append through a stale handle goes after the other handle's.
        b.append(0, &[3i32, 3]).await.unwrap();
        a.append(0, &[4i32, 4]).await.unwrap();
        assert_eq!(a.shape(), &[7, 2], "{format}");
        assert_eq!(
            a.read::<i32>([4..7, 0..2]).await.unwrap(),
            [2, 2, 3, 3, 4, 4],
            "{format}"
        );
        // `b` grows the array and writes far out; `a`, which has not seen it, shrinks it:
        // what `b` wrote is cleared, so growing again shows the fill value.
        b.refresh().await.unwrap();
        b.resize(vec![12, 2]).await.unwrap();
        b.write([10..12, 0..2], &[9i32; 4]).await.unwrap();
        a.resize(vec![8, 2]).await.unwrap();
        a.resize(vec![12, 2]).await.unwrap();
        assert_eq!(
            a.read::<i32>([10..12, 0..2]).await.unwrap(),
            [0; 4],
            "{format}"
        );
    }
}

/// Appends and attribute updates through many handles at once in one process lose
/// nothing: each starts from what the one before it stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_and_attribute_updates_lose_nothing() {
    for format in [zarr_core::v2::ZarrFormat::V3, zarr_core::v2::ZarrFormat::V2] {
        let store = Arc::new(MemoryStore::new());
        ArrayBuilder::new(vec![0, 3], DataType::UInt32, vec![4, 3])
            .zarr_format(format)
            .create(Arc::clone(&store), "/log")
            .await
            .unwrap();
        let tasks: Vec<_> = (0..16u32)
            .map(|i| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    let mut handle = Array::open(store, "/log").await.unwrap();
                    handle.append(0, &[i, i, i]).await.unwrap();
                    handle.set_attribute(&format!("k{i}"), &i).await.unwrap();
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let log = Array::open(Arc::clone(&store), "/log").await.unwrap();
        assert_eq!(log.shape(), &[16, 3], "{format}");
        let mut rows: Vec<u32> = log.read::<u32>(..).await.unwrap();
        assert!(
            rows.chunks(3)
                .all(|row| row[0] == row[1] && row[1] == row[2]),
            "{format}: {rows:?}"
        );
        rows.dedup();
        rows.sort_unstable();
        assert_eq!(rows, (0..16).collect::<Vec<u32>>(), "{format}");
        assert_eq!(
            log.attributes().len(),
            16,
            "{format}: {:?}",
            log.attributes()
        );
    }
}

/// A handle to an array removed through another handle does not bring it back by changing
/// its metadata: the change is `NodeNotFound`.
#[tokio::test]
async fn metadata_changes_to_a_removed_array_are_refused() {
    let store = Arc::new(MemoryStore::new());
    let mut root = Group::create(Arc::clone(&store), "/").await.unwrap();
    let mut array = ArrayBuilder::new(vec![4], DataType::UInt8, vec![2])
        .create(Arc::clone(&store), "/gone")
        .await
        .unwrap();
    root.remove("gone").await.unwrap();
    assert!(matches!(
        array.set_attribute("k", &1).await,
        Err(Error::NodeNotFound { .. })
    ));
    assert!(matches!(
        array.append(0, &[1u8, 2]).await,
        Err(Error::NodeNotFound { .. })
    ));
    assert!(matches!(
        array.resize(vec![8]).await,
        Err(Error::NodeNotFound { .. })
    ));
    assert!(root.children().await.unwrap().is_empty());
}

/// A stale handle whose node another handle replaced (an array of another definition or
/// format, a group for an array or the reverse, a group removed) refuses to change the
/// metadata, with an error naming what happened, and writes nothing: the new node is kept.
#[tokio::test]
async fn metadata_changes_to_a_replaced_node_are_refused() {
    let store = Arc::new(MemoryStore::new());
    let builder = |data_type| ArrayBuilder::new(vec![4], data_type, vec![2]);
    let mut stale = builder(DataType::UInt8)
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let stored = |store: &Arc<MemoryStore>, key: &str| {
        let store = Arc::clone(store);
        let key = StoreKey::new(key);
        async move { store.get(&key).await.unwrap() }
    };

    // Re-created with another data type.
    builder(DataType::UInt16)
        .overwrite(true)
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let before = stored(&store, "a/zarr.json").await;
    let err = stale.set_attribute("k", &1).await.unwrap_err();
    assert!(
        matches!(&err, Error::NodeReplaced { reason, .. } if reason.contains("data type")),
        "{err}"
    );
    assert!(matches!(
        stale.append(0, &[1u8, 2]).await,
        Err(Error::NodeReplaced { .. })
    ));
    assert!(matches!(
        stale.resize(vec![2]).await,
        Err(Error::NodeReplaced { .. })
    ));
    assert_eq!(stored(&store, "a/zarr.json").await, before);

    // Re-created as Zarr v2 (whose chunk key encoding differs too: the format is named).
    let mut stale = Array::open(Arc::clone(&store), "/a").await.unwrap();
    builder(DataType::UInt16)
        .overwrite(true)
        .zarr_format(zarr_core::v2::ZarrFormat::V2)
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let err = stale.resize(vec![8]).await.unwrap_err();
    assert!(
        matches!(&err, Error::NodeReplaced { reason, .. } if reason.contains("v2")),
        "{err}"
    );
    assert_eq!(stored(&store, "a/zarr.json").await, None);

    // Replaced by a group.
    let mut stale = Array::open(Arc::clone(&store), "/a").await.unwrap();
    let mut root = Group::create(Arc::clone(&store), "/").await.unwrap();
    root.remove("a").await.unwrap();
    let mut group = Group::create(Arc::clone(&store), "/a").await.unwrap();
    let before = stored(&store, "a/zarr.json").await;
    assert!(matches!(
        stale.update_attributes(serde_json::Map::new()).await,
        Err(Error::WrongNodeType { .. })
    ));
    assert_eq!(stored(&store, "a/zarr.json").await, before);

    // A group replaced by an array, then removed.
    root.remove("a").await.unwrap();
    builder(DataType::UInt8)
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    let before = stored(&store, "a/zarr.json").await;
    assert!(matches!(
        group.set_attribute("k", &1).await,
        Err(Error::WrongNodeType { .. })
    ));
    assert_eq!(stored(&store, "a/zarr.json").await, before);
    root.remove("a").await.unwrap();
    assert!(matches!(
        group.set_attribute("k", &1).await,
        Err(Error::NodeNotFound { .. })
    ));
    assert!(root.children().await.unwrap().is_empty());

    // Unreadable metadata is reported, not overwritten.
    let mut stale = builder(DataType::UInt8)
        .create(Arc::clone(&store), "/b")
        .await
        .unwrap();
    store
        .set(
            &StoreKey::new("b/zarr.json"),
            Bytes::from_static(b"{not json"),
        )
        .await
        .unwrap();
    assert!(matches!(
        stale.set_attribute("k", &1).await,
        Err(Error::Metadata { .. })
    ));
    assert_eq!(
        stored(&store, "b/zarr.json").await.as_deref(),
        Some(&b"{not json"[..])
    );
}

/// Another writer that leaves out a codec's defaults (zstd's `checksum: false`, which this
/// crate writes) has not re-created the array: a stale handle takes the stored metadata,
/// new shape included, and changes it.
#[tokio::test]
async fn a_stale_handle_takes_codecs_written_with_their_defaults() {
    let store = Arc::new(MemoryStore::new());
    let mut stale = ArrayBuilder::new(vec![4], DataType::UInt16, vec![2])
        .zstd(3)
        .create(Arc::clone(&store), "/z")
        .await
        .unwrap();
    let key = StoreKey::new("z/zarr.json");
    let mut document: serde_json::Value =
        serde_json::from_slice(&store.get(&key).await.unwrap().unwrap()).unwrap();
    let zstd = document["codecs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|codec| codec["name"] == "zstd")
        .unwrap();
    assert_eq!(
        zstd["configuration"],
        json!({"level": 3, "checksum": false})
    );
    zstd["configuration"] = json!({"level": 3});
    document["shape"] = json!([6]);
    store
        .set(&key, Bytes::from(serde_json::to_vec(&document).unwrap()))
        .await
        .unwrap();
    stale.set_attribute("k", &1).await.unwrap();
    assert_eq!(stale.shape(), &[6]);
    let opened = Array::open(Arc::clone(&store), "/z").await.unwrap();
    assert_eq!(opened.shape(), &[6]);
    assert_eq!(opened.attributes()["k"], json!(1));
    // A real change of the codecs is refused.
    let mut document: serde_json::Value =
        serde_json::from_slice(&store.get(&key).await.unwrap().unwrap()).unwrap();
    for codec in document["codecs"].as_array_mut().unwrap() {
        if codec["name"] == "zstd" {
            codec["configuration"] = json!({"level": 5});
        }
    }
    store
        .set(&key, Bytes::from(serde_json::to_vec(&document).unwrap()))
        .await
        .unwrap();
    let err = stale.append(0, &[1u16]).await.unwrap_err();
    assert!(
        matches!(&err, Error::NodeReplaced { reason, .. } if reason.contains("other codecs")),
        "{err}"
    );
}
