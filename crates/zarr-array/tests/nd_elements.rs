//! Arrays of the zarr-extensions `ndarray` data type: elements that are arrays, ragged
//! (`vlen-ndarray`) or fixed-shape (`bytes`), through the typed element API.

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder, ArrayBytes, Error, NdElement};
use zarr_core::{ArrayMetadata, DataType, NdArrayType};
use zarr_store::{MemoryStore, ReadableStore, StoreKey, WritableStore};

fn nd(dtype: DataType, shape: Vec<Option<u64>>) -> DataType {
    DataType::NdArray(NdArrayType::new(dtype, shape).unwrap())
}

async fn zarr_json(store: &MemoryStore, path: &str) -> Value {
    let key = StoreKey::new(&format!("{path}/zarr.json"));
    serde_json::from_slice(&store.get(&key).await.unwrap().unwrap()).unwrap()
}

async fn chunk(store: &MemoryStore, key: &str) -> Option<Vec<u8>> {
    let key = StoreKey::new(key);
    store.get(&key).await.unwrap().map(|b| b.to_vec())
}

#[tokio::test]
async fn ragged_elements_are_written_and_read_with_their_shapes() {
    let store = Arc::new(MemoryStore::new());
    let pairs = nd(DataType::Float32, vec![None, Some(2)]);
    let array = ArrayBuilder::new(vec![5], pairs.clone(), vec![2])
        .create(Arc::clone(&store), "/points")
        .await
        .unwrap();
    let meta = zarr_json(&store, "points").await;
    assert_eq!(
        meta["data_type"],
        json!({"name": "ndarray", "configuration": {"dtype": "float32", "shape": [null, 2]}})
    );
    assert_eq!(meta["fill_value"], "");
    assert_eq!(meta["codecs"][0]["name"], "vlen-ndarray");

    let cells = vec![
        NdElement::new(vec![2, 2], vec![0.5f32, 1.0, -2.0, 3.5]),
        NdElement::new(vec![0, 2], vec![]),
        NdElement::new(vec![1, 2], vec![7.0, 8.0]),
    ];
    array.write_elements(1..4, &cells).await.unwrap();
    // Chunk c/0 holds the unwritten element 0 (empty) and cells[0], framed as vlen-bytes
    // frames little-endian bytes.
    let mut expected = 2u32.to_le_bytes().to_vec();
    expected.extend(0u32.to_le_bytes());
    expected.extend(16u32.to_le_bytes());
    for v in [0.5f32, 1.0, -2.0, 3.5] {
        expected.extend(v.to_le_bytes());
    }
    assert_eq!(chunk(&store, "points/c/0").await.unwrap(), expected);

    let read = array.read_elements::<f32>(..).await.unwrap();
    assert_eq!(read.len(), 5);
    assert_eq!(read[0], NdElement::new(vec![0, 2], vec![]));
    assert_eq!(&read[1..4], &cells[..]);
    assert_eq!(read[4].shape, [0, 2]);
    // A region of one element, and the same through ndarray.
    assert_eq!(
        array.read_elements::<f32>(3..4).await.unwrap(),
        [cells[2].clone()]
    );
    let views = array.read_elements_ndarray::<f32>(1..2).await.unwrap();
    assert_eq!(
        views[0],
        ndarray::array![[0.5f32, 1.0], [-2.0, 3.5]].into_dyn()
    );
    // Any ndarray array becomes an element (a transposed view included).
    let m = ndarray::array![[1.0f32, 3.0], [2.0, 4.0]];
    array
        .write_elements(4..5, &[NdElement::from(&m.t())])
        .await
        .unwrap();
    assert_eq!(
        array.read_elements::<f32>(4..5).await.unwrap()[0],
        NdElement::new(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0])
    );

    // Typed mistakes.
    assert!(matches!(
        array.read_elements::<f64>(..).await,
        Err(Error::ElementType { .. })
    ));
    assert!(matches!(
        array.read::<f32>(..).await,
        Err(Error::Unsupported { .. } | Error::ElementType { .. })
    ));
    for (bad, what) in [
        (
            NdElement::new(vec![1, 3], vec![0.0f32; 3]),
            "does not follow",
        ),
        (NdElement::new(vec![2], vec![0.0f32; 2]), "does not follow"),
        (
            NdElement::new(vec![2, 2], vec![0.0f32; 3]),
            "does not hold 3 values",
        ),
    ] {
        let err = array.write_elements(0..1, &[bad]).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidValue { reason, .. } if reason.contains(what)),
            "{err}"
        );
    }
    // Nothing was written by the refused calls.
    assert_eq!(read[0], array.read_elements::<f32>(0..1).await.unwrap()[0]);
}

#[tokio::test]
async fn every_scalar_kind_and_a_non_empty_fill_value() {
    let store = Arc::new(MemoryStore::new());
    // uint64 lists whose fill value is the one-item list [7] (base64 of its LE bytes).
    let lists = nd(DataType::UInt64, vec![None]);
    let array = ArrayBuilder::new(vec![2, 3], lists, vec![2, 2])
        .fill_value_json(json!("BwAAAAAAAAA="))
        .unwrap()
        .zstd(3)
        .create(Arc::clone(&store), "/lists")
        .await
        .unwrap();
    array
        .write_elements(
            vec![0..1, 0..2],
            &[
                NdElement::new(vec![3], vec![1u64, u64::MAX, 0]),
                NdElement::new(vec![0], vec![]),
            ],
        )
        .await
        .unwrap();
    let read = array.read_elements::<u64>(..).await.unwrap();
    let shapes: Vec<Vec<u64>> = read.iter().map(|e| e.shape.clone()).collect();
    assert_eq!(
        shapes,
        [vec![3], vec![0], vec![1], vec![1], vec![1], vec![1]]
    );
    assert_eq!(read[0].values, [1, u64::MAX, 0]);
    assert_eq!(read[5].values, [7]);
    // The second column of chunks was never written.
    assert!(chunk(&store, "lists/c/0/1").await.is_none());

    // bool, int8, complex and float16 scalars.
    let masks = ArrayBuilder::new(vec![2], nd(DataType::Bool, vec![None, Some(2)]), vec![2])
        .create(Arc::clone(&store), "/masks")
        .await
        .unwrap();
    let m = vec![NdElement::new(vec![1, 2], vec![true, false]); 2];
    masks.write_elements(.., &m).await.unwrap();
    assert_eq!(masks.read_elements::<bool>(..).await.unwrap(), m);
    let c = ArrayBuilder::new(vec![1], nd(DataType::Complex64, vec![None]), vec![1])
        .create(Arc::clone(&store), "/complex")
        .await
        .unwrap();
    let z = vec![NdElement::new(
        vec![2],
        vec![
            num_complex::Complex::new(1.0f32, -1.0),
            num_complex::Complex::new(0.0, 2.5),
        ],
    )];
    c.write_elements(.., &z).await.unwrap();
    assert_eq!(c.read_elements(..).await.unwrap(), z);
    let h = ArrayBuilder::new(vec![1], nd(DataType::Float16, vec![None, Some(1)]), vec![1])
        .create(Arc::clone(&store), "/half")
        .await
        .unwrap();
    let halves = vec![NdElement::new(
        vec![2, 1],
        vec![half::f16::ONE, half::f16::NEG_ONE],
    )];
    h.write_elements(.., &halves).await.unwrap();
    assert_eq!(h.read_elements(..).await.unwrap(), halves);
}

#[tokio::test]
async fn fixed_shape_elements_take_the_bytes_codec() {
    let store = Arc::new(MemoryStore::new());
    let blocks = nd(DataType::Int16, vec![Some(3), Some(2)]);
    assert_eq!(blocks.fixed_size(), Some(12));
    // 1, 2, ..., 6 as little-endian int16, in base64.
    let fill = "AQACAAMABAAFAAYA";
    let array = ArrayBuilder::new(vec![3], blocks.clone(), vec![2])
        .fill_value_json(json!(fill))
        .unwrap()
        .create(Arc::clone(&store), "/blocks")
        .await
        .unwrap();
    let meta = zarr_json(&store, "blocks").await;
    assert_eq!(
        meta["codecs"][0],
        json!({"name": "bytes", "configuration": {"endian": "little"}})
    );
    assert_eq!(meta["fill_value"], json!(fill));
    let block = NdElement::new(vec![3, 2], vec![-1i16, 2, -3, 4, -5, 6]);
    array
        .write_elements(0..2, &[block.clone(), block.clone()])
        .await
        .unwrap();
    let stored = chunk(&store, "blocks/c/0").await.unwrap();
    let le: Vec<u8> = block.values.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(stored, [le.clone(), le].concat());
    let read = array.read_elements::<i16>(..).await.unwrap();
    assert_eq!(read[..2], [block.clone(), block]);
    assert_eq!(read[2], NdElement::new(vec![3, 2], (1..=6).collect()));
    // Raw bytes work as for any fixed-size type.
    assert_eq!(array.read_bytes(2..3).await.unwrap().len(), 12);

    // zarr-vlen-ndarray 0.2 writes a bare `bytes` for fixed shapes: little-endian by the
    // data type's definition. Big-endian is refused.
    let mut bare = meta.clone();
    bare["codecs"] = json!([{"name": "bytes"}]);
    store
        .set(
            &StoreKey::new("bare/zarr.json"),
            serde_json::to_vec(&bare).unwrap().into(),
        )
        .await
        .unwrap();
    store
        .set(&StoreKey::new("bare/c/0"), stored.clone().into())
        .await
        .unwrap();
    let bare = Array::open(Arc::clone(&store), "/bare").await.unwrap();
    assert_eq!(bare.read_elements::<i16>(0..1).await.unwrap(), read[..1]);
    let err = ArrayBuilder::new(vec![3], blocks, vec![2])
        .big_endian()
        .create(Arc::clone(&store), "/big")
        .await
        .unwrap_err();
    let err = zarr_core::ErrorChain(&err).to_string();
    assert!(err.contains("little-endian by definition"), "{err}");
}

#[tokio::test]
async fn patterns_without_a_codec_and_malformed_metadata_are_errors() {
    let store = Arc::new(MemoryStore::new());
    // Two variable dimensions, or one that is not the first: no registered codec serves them.
    for pattern in [vec![None, None], vec![Some(2), None]] {
        let err = ArrayBuilder::new(vec![2], nd(DataType::UInt8, pattern), vec![2])
            .create(Arc::clone(&store), "/x")
            .await
            .unwrap_err();
        let err = zarr_core::ErrorChain(&err).to_string();
        assert!(
            err.contains("only variable dimension is the first"),
            "{err}"
        );
    }
    // Fill values must be a shape of the pattern.
    for (pattern, fill, reason) in [
        (
            vec![None, Some(2)],
            "AAA=",
            "not a whole number of 8-byte items",
        ),
        (vec![Some(2)], "", "expected 8 bytes"),
        (vec![None, None], "AAAAAA==", "must be the empty element"),
    ] {
        let err = ArrayBuilder::new(vec![2], nd(DataType::Float32, pattern), vec![2])
            .fill_value_json(json!(fill))
            .map(drop)
            .unwrap_err()
            .to_string();
        assert!(err.contains(reason), "{fill}: {err}");
    }
    // Malformed data types.
    let base = json!({
        "zarr_format": 3, "node_type": "array", "shape": [2],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": "",
        "codecs": [{"name": "vlen-ndarray"}]
    });
    for (data_type, fragment) in [
        (json!("ndarray"), "needs its configuration"),
        (json!({"name": "ndarray"}), "needs its configuration"),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "float32"}}),
            "shape",
        ),
        (
            json!({"name": "ndarray", "configuration": {"shape": [null]}}),
            "dtype",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "string", "shape": [null]}}),
            "not a scalar type",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "bfloat16", "shape": [null]}}),
            "not a scalar type",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": {"name": "int8"}, "shape": [null]}}),
            "expected a data type name",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "int8", "shape": []}}),
            "at least one dimension",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "int8", "shape": [null, 0]}}),
            "dimension 1 is 0",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "int8", "shape": [2.0]}}),
            "shape[0]",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "int8", "shape": [-1]}}),
            "shape[0]",
        ),
        (
            json!({"name": "ndarray", "configuration": {"dtype": "int8", "shape": "n"}}),
            "expected an array",
        ),
        (
            json!({"name": "ndarray",
                   "configuration": {"dtype": "int8", "shape": [null], "order": "C"}}),
            "order",
        ),
        (
            json!({"name": "ndarray",
                   "configuration": {"dtype": "int64", "shape": [null, 4294967296u64, 4294967296u64]}}),
            "too large",
        ),
    ] {
        let mut doc = base.clone();
        doc["data_type"] = data_type.clone();
        let err = ArrayMetadata::from_json(&doc.to_string())
            .map(drop)
            .unwrap_err()
            .to_string();
        assert!(err.contains(fragment), "{data_type}: {err}");
    }
    // Zarr v2 has no ndarray type.
    let err = ArrayBuilder::new(vec![2], nd(DataType::Int8, vec![None]), vec![2])
        .zarr_format(zarr_core::v2::ZarrFormat::V2)
        .create(Arc::clone(&store), "/v2")
        .await
        .map(drop)
        .unwrap_err()
        .to_string();
    assert!(err.contains("ndarray"), "{err}");
}

#[tokio::test]
async fn corrupt_chunks_are_errors_naming_the_element() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![2], nd(DataType::Int32, vec![None, Some(2)]), vec![2])
        .create(Arc::clone(&store), "/c")
        .await
        .unwrap();
    // Element 1 holds 5 bytes: not whole 8-byte items.
    let mut chunk = 2u32.to_le_bytes().to_vec();
    chunk.extend(0u32.to_le_bytes());
    chunk.extend(5u32.to_le_bytes());
    chunk.extend([1, 2, 3, 4, 5]);
    store
        .set(&StoreKey::new("c/c/0"), chunk.into())
        .await
        .unwrap();
    let err = array.read_elements::<i32>(..).await.unwrap_err();
    let text = zarr_core::ErrorChain(&err).to_string();
    assert!(
        text.contains("element 1") && text.contains("8-byte items") && text.contains("c/c/0"),
        "{text}"
    );
    // Truncated.
    store
        .set(&StoreKey::new("c/c/0"), vec![2, 0, 0, 0, 9].into())
        .await
        .unwrap();
    assert!(array.read_elements::<i32>(..).await.is_err());
}

#[tokio::test]
async fn sharded_ragged_elements() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![10], nd(DataType::Float64, vec![None]), vec![4])
        .sharding(vec![2])
        .zstd(1)
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    let cells: Vec<NdElement<f64>> = (0..10)
        .map(|i| NdElement::new(vec![i % 3], vec![i as f64; (i % 3) as usize]))
        .collect();
    array.write_elements(.., &cells).await.unwrap();
    assert_eq!(array.read_elements::<f64>(..).await.unwrap(), cells);
    assert_eq!(array.read_elements::<f64>(5..7).await.unwrap(), cells[5..7]);
    let meta = zarr_json(&store, "s").await;
    assert_eq!(
        meta["codecs"][0]["configuration"]["codecs"][0]["name"],
        "vlen-ndarray"
    );
}

#[tokio::test]
async fn cached_arrays_read_elements_from_their_cache() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![4], nd(DataType::Int32, vec![None, Some(1)]), vec![2])
        .create(Arc::clone(&store), "/c")
        .await
        .unwrap();
    let cells: Vec<NdElement<i32>> = (0..4)
        .map(|i| NdElement::new(vec![i, 1], (0..i as i32).collect()))
        .collect();
    array.write_elements(.., &cells).await.unwrap();
    let cached = zarr_array::CachedArray::new(array.clone(), 1 << 20);
    assert_eq!(cached.read_elements::<i32>(1..4).await.unwrap(), cells[1..]);
    // Served from the cache once the chunks are gone from the store.
    store.erase(&StoreKey::new("c/c/1")).await.unwrap();
    assert_eq!(cached.read_elements::<i32>(2..4).await.unwrap(), cells[2..]);
    assert_eq!(
        array.read_elements::<i32>(3..4).await.unwrap()[0].shape,
        [0, 1]
    );
    assert!(matches!(
        cached.read_elements::<u32>(..).await,
        Err(Error::ElementType { .. })
    ));
}

#[tokio::test]
async fn optional_ragged_elements_take_vlen_ndarray_inside_the_optional_codec() {
    let store = Arc::new(MemoryStore::new());
    let inner = nd(DataType::Int16, vec![None, Some(2)]);
    let array = ArrayBuilder::new(
        vec![3],
        DataType::Optional(zarr_core::OptionalType::new(inner)),
        vec![3],
    )
    .create(Arc::clone(&store), "/o")
    .await
    .unwrap();
    let meta = zarr_json(&store, "o").await;
    assert_eq!(
        meta["codecs"][0]["configuration"]["data_codecs"][0]["name"],
        "vlen-ndarray"
    );
    // Each element in memory: the inner element's bytes, then the validity byte.
    let present: Vec<u8> = [1i16, -2, 3, 4]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .chain([1])
        .collect();
    let elements = zarr_codecs::VlenBytes::from_elements([&present[..], &[0], &[1]]);
    array
        .write_array_bytes(.., ArrayBytes::Variable(elements.clone()))
        .await
        .unwrap();
    assert_eq!(
        array.read_array_bytes(..).await.unwrap(),
        ArrayBytes::Variable(elements)
    );
    // A present element whose bytes are no whole (1, 2) item is refused.
    let odd = zarr_codecs::VlenBytes::from_elements([&[1u8, 0, 1][..], &[0], &[0]]);
    assert!(
        array
            .write_array_bytes(.., ArrayBytes::Variable(odd))
            .await
            .is_err()
    );
}

#[test]
fn blocking_arrays_read_and_write_elements() {
    let store = Arc::new(MemoryStore::new());
    let builder = ArrayBuilder::new(vec![3], nd(DataType::UInt8, vec![None]), vec![2]);
    let a = zarr_array::blocking::Array::create(&builder, store, "/b").unwrap();
    let cells = [
        NdElement::new(vec![2], vec![4u8, 5]),
        NdElement::new(vec![1], vec![6]),
    ];
    a.write_elements(1..3, &cells).unwrap();
    let read = a.read_elements::<u8>(..).unwrap();
    assert_eq!(read[0], NdElement::new(vec![0], vec![]));
    assert_eq!(read[1..], cells);
}
