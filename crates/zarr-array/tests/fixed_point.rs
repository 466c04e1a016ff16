//! Fixed-point data types (`Q{m}f{n}`, `N{m}f{n}`, `binary_fixed_point`): stored as their
//! integer base type through any codec that type takes, read and written as the integers or
//! as the numbers they stand for.

use std::sync::Arc;

use serde_json::{Value, json};
use zarr_array::{Array, ArrayBuilder, CachedArray, Error, Reduction, blocking};
use zarr_core::{DataType, ExtensionObject, FillValue};
use zarr_store::{MemoryStore, ReadableStore, StoreKey, WritableStore};

fn codec(name: &str, configuration: Value) -> ExtensionObject {
    ExtensionObject::with_configuration(name, configuration.as_object().unwrap().clone())
}

async fn stored(store: &MemoryStore, key: &str) -> Vec<u8> {
    store
        .get(&StoreKey::new(key))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{key} missing"))
        .to_vec()
}

async fn metadata(store: &MemoryStore, path: &str) -> Value {
    serde_json::from_slice(&stored(store, &format!("{path}/zarr.json")).await).unwrap()
}

#[tokio::test]
async fn normed_values_round_to_the_nearest_stored_integer() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![6], "N0f8".parse().unwrap(), vec![4])
        .fill_value_json(json!(1))
        .unwrap()
        .create(Arc::clone(&store), "/gray")
        .await
        .unwrap();
    let meta = metadata(&store, "gray").await;
    assert_eq!(meta["data_type"], "N0f8");
    assert_eq!(meta["fill_value"], 1);
    assert_eq!(
        meta["codecs"],
        json!([{"name": "bytes", "configuration": {"endian": "little"}}])
    );
    array
        .write_fixed_point(0..4, &[0.0, 0.2, 0.5, 1.0])
        .await
        .unwrap();
    // 0.2 * 255 = 51 exactly; 0.5 * 255 = 127.5, ties to even: 128.
    assert_eq!(stored(&store, "gray/c/0").await, [0, 51, 128, 255]);
    assert_eq!(
        array.read_fixed_point(..).await.unwrap(),
        [0.0, 0.2, 128.0 / 255.0, 1.0, 1.0, 1.0],
        "the fill value 1 where nothing was written"
    );
    assert_eq!(
        array.read::<u8>(..).await.unwrap(),
        [0, 51, 128, 255, 255, 255]
    );
    // Stored integers directly.
    array.write(4..6, &[1u8, 254]).await.unwrap();
    assert_eq!(
        array.read_fixed_point(4..6).await.unwrap(),
        [1.0 / 255.0, 254.0 / 255.0]
    );
    // Opened again, the same type and fill value.
    let again = Array::open(Arc::clone(&store), "/gray").await.unwrap();
    assert_eq!(again.data_type().to_string(), "N0f8");
    assert_eq!(again.fill_value().as_bytes(), [255]);
}

#[tokio::test]
async fn every_codec_sees_the_base_integer_type() {
    let store = Arc::new(MemoryStore::new());
    // Q7f8 is an int16: big-endian bytes, a transpose, gzip and crc32c, sharded; then the
    // zarr-extensions scale_offset, which takes integers (and not fixed-point) elements.
    let data_type: DataType = "Q7f8".parse().unwrap();
    let values = [-128.0, -1.5, 0.0, 0.00390625, 1.0, 127.99609375];
    let raw: [i16; 6] = [i16::MIN, -384, 0, 1, 256, i16::MAX];
    let plain = ArrayBuilder::new(vec![2, 3], data_type.clone(), vec![2, 3])
        .big_endian()
        .create(Arc::clone(&store), "/plain")
        .await
        .unwrap();
    plain.write_fixed_point(.., &values).await.unwrap();
    let expected: Vec<u8> = raw.iter().flat_map(|v| v.to_be_bytes()).collect();
    assert_eq!(stored(&store, "plain/c/0/0").await, expected);
    assert_eq!(plain.read::<i16>(..).await.unwrap(), raw);
    assert_eq!(plain.read_fixed_point(..).await.unwrap(), values);

    let layouts = [
        ArrayBuilder::new(vec![2, 3], data_type.clone(), vec![2, 3])
            .transpose(vec![1, 0])
            .gzip(5)
            .crc32c(),
        ArrayBuilder::new(vec![2, 3], data_type.clone(), vec![2, 2]).sharding(vec![1, 1]),
        ArrayBuilder::new(vec![2, 3], data_type.clone(), vec![2, 3]).codecs(vec![
            codec("scale_offset", json!({"offset": 3, "scale": 1})),
            codec("bytes", json!({"endian": "little"})),
            codec("zstd", json!({"level": 1, "checksum": true})),
        ]),
    ];
    for (i, builder) in layouts.into_iter().enumerate() {
        let path = format!("/layout{i}");
        let array = builder.create(Arc::clone(&store), &path).await.unwrap();
        if i == 2 {
            // scale_offset works on the int16 values, and refuses to overflow them.
            let e = array.write_fixed_point(.., &values).await.unwrap_err();
            let text = zarr_core::ErrorChain(&e).to_string();
            assert!(text.contains("int16") && text.contains("outside"), "{text}");
            let moderate = [-1.5, 0.0, 0.00390625, 1.0, 2.0, 100.0];
            array.write_fixed_point(.., &moderate).await.unwrap();
            let back = Array::open(Arc::clone(&store), &path).await.unwrap();
            assert_eq!(back.read_fixed_point(..).await.unwrap(), moderate);
            assert_eq!(back.read::<i16>([1..2, 1..3]).await.unwrap(), [512, 25600]);
            continue;
        }
        array.write_fixed_point(.., &values).await.unwrap();
        let back = Array::open(Arc::clone(&store), &path).await.unwrap();
        assert_eq!(back.read_fixed_point(..).await.unwrap(), values, "{path}");
        assert_eq!(
            back.read::<i16>([1..2, 1..3]).await.unwrap(),
            raw[4..],
            "{path}"
        );
    }
}

#[tokio::test]
async fn binary_fixed_point_fill_values_are_numbers_or_bits() {
    let store = Arc::new(MemoryStore::new());
    let data_type: DataType = "binary_fixed_point<uint16, 8, 8>".parse().unwrap();
    let array = ArrayBuilder::new(vec![4], data_type, vec![2])
        .fill_value_json(json!("0x0180"))
        .unwrap()
        .create(Arc::clone(&store), "/b")
        .await
        .unwrap();
    let meta = metadata(&store, "b").await;
    assert_eq!(
        meta["data_type"],
        json!({"name": "binary_fixed_point", "configuration":
            {"base_data_type": "uint16", "fractional_bits": 8, "integer_bits": 8}})
    );
    assert_eq!(
        meta["fill_value"], 1.5,
        "written as the number it stands for"
    );
    assert_eq!(array.read_fixed_point(..).await.unwrap(), [1.5; 4]);
    array
        .write_fixed_point(2..3, &[255.99609375])
        .await
        .unwrap();
    assert_eq!(array.read::<u16>(..).await.unwrap(), [384, 384, 65535, 384]);

    // Fill values that are not a value of the type, each refused naming why.
    let open_error = |doc: Value| {
        let store = Arc::clone(&store);
        async move {
            store
                .set(&StoreKey::new("bad/zarr.json"), doc.to_string().into())
                .await
                .unwrap();
            let e = Array::open(store, "/bad").await.unwrap_err();
            zarr_core::ErrorChain(&e).to_string()
        }
    };
    for (fill, why) in [
        (json!(256), "out of range"),
        (json!(-0.5), "out of range"),
        (json!("NaN"), "no NaN"),
        (json!("0x10000"), "hexadecimal digits"),
        (json!([1]), "expected a number"),
    ] {
        let mut doc = meta.clone();
        doc["fill_value"] = fill.clone();
        let text = open_error(doc).await;
        assert!(
            text.contains(why) && text.contains("fill"),
            "{fill}: {text}"
        );
    }
    // A bad data type, named.
    let mut doc = meta.clone();
    doc["data_type"] = json!("Q3f3");
    let text = open_error(doc).await;
    assert!(
        text.contains("Q3f3") && text.contains("8, 16, 32 or 64"),
        "{text}"
    );
}

#[tokio::test]
async fn values_the_type_cannot_hold_are_refused_before_anything_is_written() {
    let store = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![3], "Q0f7".parse().unwrap(), vec![3])
        .create(Arc::clone(&store), "/q")
        .await
        .unwrap();
    for bad in [1.0, -1.01, f64::NAN, f64::INFINITY] {
        let e = array
            .write_fixed_point(.., &[0.5, bad, 0.0])
            .await
            .unwrap_err();
        assert!(matches!(e, Error::InvalidValue { .. }), "{e}");
        assert!(
            e.to_string().contains("value 1") && e.to_string().contains("-1 to 0.9921875"),
            "{e}"
        );
    }
    assert!(store.get(&StoreKey::new("q/c/0")).await.unwrap().is_none());
    // The edges are values.
    array
        .write_fixed_point(.., &[-1.0, 0.9921875, 0.5])
        .await
        .unwrap();
    assert_eq!(array.read::<i8>(..).await.unwrap(), [-128, 127, 64]);
    // Element types: the stored integer's own type only; fixed-point reads need the type.
    assert!(matches!(
        array.read::<u8>(..).await,
        Err(Error::ElementType { .. })
    ));
    assert!(matches!(
        array.read::<f64>(..).await,
        Err(Error::ElementType { .. })
    ));
    let ints = ArrayBuilder::new(vec![3], DataType::Int8, vec![3])
        .create(Arc::clone(&store), "/i")
        .await
        .unwrap();
    assert!(matches!(
        ints.read_fixed_point(..).await,
        Err(Error::ElementType { .. })
    ));
    assert!(matches!(
        ints.write_fixed_point(.., &[0.0; 3]).await,
        Err(Error::ElementType { .. })
    ));
    // A Rust fill value: the base type's integer is the stored integer; a float must be a
    // value the type holds exactly.
    let fill = |value: FillValue| {
        ArrayBuilder::new(vec![3], "Q0f7".parse().unwrap(), vec![3])
            .fill_value(value)
            .build_metadata()
    };
    assert_eq!(
        fill(FillValue::from(-128i8)).unwrap().fill_value.as_bytes(),
        [0x80]
    );
    assert_eq!(
        fill(FillValue::from(0.5f64)).unwrap().fill_value.as_bytes(),
        [64]
    );
    let e = fill(FillValue::from(0.3f64)).unwrap_err().to_string();
    assert!(e.contains("cannot hold it exactly"), "{e}");
    // Zarr v2 has no fixed-point types.
    let e = ArrayBuilder::new(vec![3], "Q0f7".parse().unwrap(), vec![3])
        .zarr_format(zarr_core::v2::ZarrFormat::V2)
        .build_metadata()
        .unwrap_err()
        .to_string();
    assert!(e.contains("Q0f7") && e.contains("Zarr v2"), "{e}");
}

#[tokio::test]
async fn downsampling_cached_and_blocking_reads_take_fixed_point_arrays() {
    let store = Arc::new(MemoryStore::new());
    let data_type: DataType = "N0f8".parse().unwrap();
    let source = ArrayBuilder::new(vec![4], data_type.clone(), vec![4])
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    source.write(.., &[0u8, 255, 100, 101]).await.unwrap();
    let half = ArrayBuilder::new(vec![2], data_type, vec![2])
        .create(Arc::clone(&store), "/h")
        .await
        .unwrap();
    half.downsample_from(&source, &[2], Reduction::Mean)
        .await
        .unwrap();
    // The mean of the stored integers (127.5 rounds to 128, 100.5 to 100).
    let means = half.read::<u8>(..).await.unwrap();
    assert!(matches!(means[..], [127 | 128, 100 | 101]), "{means:?}");

    let cached = CachedArray::new(source.clone(), 1 << 20);
    assert_eq!(
        cached.read_fixed_point(1..2).await.unwrap(),
        [1.0],
        "through the cache"
    );
}

#[test]
fn the_blocking_api_reads_and_writes_fixed_point_values() {
    let store = Arc::new(MemoryStore::new());
    let array = blocking::Array::create(
        &ArrayBuilder::new(vec![2], "N8f8".parse().unwrap(), vec![2]),
        Arc::clone(&store),
        "/s",
    )
    .unwrap();
    array.write_fixed_point(.., &[0.2, 257.0]).unwrap();
    assert_eq!(array.read::<u16>(..).unwrap(), [51, 65535]);
    assert_eq!(array.read_fixed_point(1..2).unwrap(), [257.0]);
    let cached = blocking::CachedArray::from(CachedArray::new(array.into_async(), 1 << 20));
    assert_eq!(cached.read_fixed_point(..).unwrap(), [0.2, 257.0]);
}
