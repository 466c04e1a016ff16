//! What a newcomer writes first works, or fails with an error that says what to change:
//! Rust values as fill values, regions of any range kind, the byte APIs' size errors,
//! chunks too large to hold, and the blocking API beside the async one.

use std::sync::Arc;

use zarr_array::{ArrayBuilder, Error};
use zarr_core::{DataType, FillValue};
use zarr_store::{MemoryStore, ReadableStore, StoreKey};

fn memory() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new())
}

#[tokio::test]
async fn rust_fill_values_convert_exactly_or_are_refused() {
    let store = memory();
    // An integer literal is an `i32`: it becomes 5.0 for float32, not its bit pattern.
    let a = ArrayBuilder::new(vec![4], DataType::Float32, vec![2])
        .fill_value(5.into())
        .create(Arc::clone(&store), "/f")
        .await
        .unwrap();
    assert_eq!(a.read::<f32>(0..4).await.unwrap(), [5.0; 4]);
    assert_eq!(
        a.fill_value().to_json(&DataType::Float32).unwrap(),
        serde_json::json!(5.0)
    );
    let b = ArrayBuilder::new(vec![2], DataType::Int32, vec![2])
        .fill_value((-1.0f32).into())
        .create(Arc::clone(&store), "/i")
        .await
        .unwrap();
    assert_eq!(b.read::<i32>(0..2).await.unwrap(), [-1, -1]);
    let c = ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
        .fill_value(200.into())
        .create(Arc::clone(&store), "/u")
        .await
        .unwrap();
    assert_eq!(c.read::<u8>(0..2).await.unwrap(), [200, 200]);
    let nan = ArrayBuilder::new(vec![2], DataType::Float16, vec![2])
        .fill_value(FillValue::from(f64::NAN))
        .create(Arc::clone(&store), "/h")
        .await
        .unwrap();
    assert!(nan.read::<half::f16>(0..2).await.unwrap()[0].is_nan());

    // What the data type cannot hold exactly is an error naming the value and the type,
    // and nothing is written.
    for (fill, data_type, says) in [
        (FillValue::from(300), DataType::UInt8, "300 (a `i32`)"),
        (FillValue::from(-1), DataType::UInt32, "-1 (a `i32`)"),
        (FillValue::from(0.5), DataType::Int32, "0.5 (a `f64`)"),
        (FillValue::from(16_777_217), DataType::Float32, "16777216"),
        (FillValue::from(1e300), DataType::Float32, "1e+300"),
        (FillValue::from(1), DataType::String, "not a string value"),
        (FillValue::from("x"), DataType::Int8, "not a int8 value"),
        (FillValue::from(true), DataType::UInt8, "not a uint8 value"),
    ] {
        let err = ArrayBuilder::new(vec![2], data_type.clone(), vec![2])
            .fill_value(fill.clone())
            .create(Arc::clone(&store), "/bad")
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, Error::Core(_)),
            "{fill:?} {data_type}: {err:?}"
        );
        assert!(
            text.contains(says) && text.contains(&data_type.to_string()),
            "{fill:?} {data_type}: {text}"
        );
        let written = store.get(&StoreKey::new("bad/zarr.json")).await.unwrap();
        assert!(written.is_none(), "{fill:?} {data_type}");
    }

    // Bytes given as bytes are still taken as they are.
    let raw = ArrayBuilder::new(vec![1], DataType::Float32, vec![1])
        .fill_value(FillValue::new(1.5f32.to_ne_bytes()))
        .create(Arc::clone(&store), "/raw")
        .await
        .unwrap();
    assert_eq!(raw.read::<f32>(0..1).await.unwrap(), [1.5]);
}

#[tokio::test]
async fn regions_take_every_kind_of_range() {
    let a = ArrayBuilder::new(vec![10], DataType::UInt8, vec![4])
        .create(memory(), "/r")
        .await
        .unwrap();
    let values: Vec<u8> = (0..10).collect();
    a.write(.., &values).await.unwrap();
    let n: usize = 3;
    assert_eq!(a.read::<u8>(0..n).await.unwrap(), [0, 1, 2]);
    assert_eq!(a.read::<u8>(7..).await.unwrap(), [7, 8, 9]);
    assert_eq!(a.read::<u8>(..2).await.unwrap(), [0, 1]);
    assert_eq!(a.read::<u8>(..=1u32).await.unwrap(), [0, 1]);
    assert_eq!(a.read::<u8>(4..=5i64).await.unwrap(), [4, 5]);
    assert_eq!(a.read::<u8>(..).await.unwrap(), values);
    a.write(8usize..10, &[80u8, 90]).await.unwrap();
    assert_eq!(a.read::<u8>(8..).await.unwrap(), [80, 90]);

    let err = a.read::<u8>(-1..3).await.unwrap_err();
    assert!(matches!(err, Error::Region { .. }), "{err:?}");
    assert!(err.to_string().contains("-1 is negative"), "{err}");

    let b = ArrayBuilder::new(vec![2, 3], DataType::UInt8, vec![2, 2])
        .create(memory(), "/b")
        .await
        .unwrap();
    b.write(.., &[1u8, 2, 3, 4, 5, 6]).await.unwrap();
    assert_eq!(b.read::<u8>([0..2usize, 1..2]).await.unwrap(), [2, 5]);
    assert_eq!(b.read::<u8>(vec![1..2, 0..3]).await.unwrap(), [4, 5, 6]);
    // A one-dimensional open range on a 2-D array says what to do instead.
    let err = b.read::<u8>(1..).await.unwrap_err();
    assert!(err.to_string().contains("one range per dimension"), "{err}");
}

#[tokio::test]
async fn byte_buffers_of_the_wrong_size_are_counted_in_bytes() {
    let a = ArrayBuilder::new(vec![4], DataType::UInt16, vec![2])
        .create(memory(), "/u")
        .await
        .unwrap();
    let err = a.write_bytes(0..2, &[1, 2, 3, 4, 5]).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the buffer holds 5 bytes, the region 4 (2 elements of 2 bytes)"
    );
    let err = a.read_bytes_into(0..2, &mut [0; 3]).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::BufferBytes {
                found: 3,
                expected: 4,
                ..
            }
        ),
        "{err:?}"
    );
    // Whole elements are still counted as elements.
    let err = a.write_bytes(0..2, &[1, 2]).await.unwrap_err();
    assert_eq!(err.to_string(), "the buffer holds 1 elements, the region 2");
}

#[tokio::test]
async fn errors_say_why_in_their_own_text() {
    // The reason a sharding configuration is refused is in the error's text, not only in
    // its sources.
    let err = ArrayBuilder::new(vec![100], DataType::UInt8, vec![10])
        .sharding(vec![3])
        .create(memory(), "/s")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("[3] does not divide shard shape [10]"),
        "{err}"
    );
    let err = ArrayBuilder::new(vec![100], DataType::UInt8, vec![10])
        .sharding(vec![5, 5])
        .create(memory(), "/s")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has 2 dimensions"), "{err}");
}

#[tokio::test]
async fn chunks_and_regions_too_large_to_allocate_are_errors() {
    let store = memory();
    // A chunk shape far larger than memory (swapped with the shape, say) is accepted, as
    // the format allows; writing into it part-way is an error, not an abort.
    let a = ArrayBuilder::new(vec![10], DataType::UInt8, vec![1 << 60])
        .create(Arc::clone(&store), "/huge")
        .await
        .unwrap();
    assert_eq!(a.read::<u8>(0..10).await.unwrap(), [0; 10]);
    let err = a.write(0..10, &[1u8; 10]).await.unwrap_err();
    assert!(matches!(err, Error::Chunk { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot allocate"), "{err}");
    // The array stays usable.
    assert_eq!(a.read::<u8>(0..10).await.unwrap(), [0; 10]);

    let big = ArrayBuilder::new(vec![1 << 60], DataType::UInt16, vec![1 << 20])
        .create(store, "/big")
        .await
        .unwrap();
    let err = big.read::<u16>(..).await.unwrap_err();
    assert!(err.to_string().contains("cannot allocate"), "{err}");
}

#[test]
fn the_blocking_api_covers_the_async_one() {
    use zarr_array::blocking;

    let store = memory();
    let mut root = blocking::Group::create(Arc::clone(&store), "/").unwrap();
    let builder = ArrayBuilder::new(vec![2, 3], DataType::Float32, vec![2, 2])
        .fill_value(FillValue::from(f32::NAN));
    let a = blocking::Array::create(&builder, Arc::clone(&store), "/a").unwrap();
    assert_eq!(a.data_type(), &DataType::Float32);
    assert_eq!(
        a.fill_value().to_json(a.data_type()).unwrap(),
        serde_json::json!("NaN")
    );
    a.write(.., &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let nd = a.read_ndarray::<f32>([0..2, 1..3]).unwrap();
    assert_eq!(nd.shape(), [2, 2]);
    assert_eq!(nd[[1, 0]], 5.0);
    a.write_ndarray(&[0, 0], zarr_array::ndarray::arr2(&[[9.0f32]]).view())
        .unwrap();
    assert_eq!(a.read::<f32>([0..1, 0..1]).unwrap(), [9.0]);
    assert!(a.chunk_exists(&[0, 1]).unwrap());
    assert!(a.read_encoded_chunk(&[0, 0]).unwrap().is_some());

    let s = blocking::Array::create(
        &ArrayBuilder::new(vec![3], DataType::String, vec![2]),
        Arc::clone(&store),
        "/s",
    )
    .unwrap();
    s.write_text(0..2, &["ice", "snow"]).unwrap();
    assert_eq!(s.read_text(..).unwrap(), ["ice", "snow", ""]);
    assert_eq!(s.read_strings::<i32>(1..2).unwrap().to_strings(), ["snow"]);

    let mut attrs = serde_json::Map::new();
    attrs.insert("title".into(), "demo".into());
    root.update_attributes(attrs).unwrap();
    assert_eq!(root.attributes()["title"], "demo");

    // Children are blocking handles too.
    let mut names = Vec::new();
    for child in root.children().unwrap() {
        match child {
            blocking::Node::Array(array) => {
                names.push(array.path().to_string());
                assert!(array.read_array_bytes(array.full_region()).is_ok());
            }
            blocking::Node::Group(_) => panic!("no groups here"),
        }
    }
    names.sort();
    assert_eq!(names, ["/a", "/s"]);
    assert!(matches!(
        blocking::Node::open(store, "/s").unwrap(),
        blocking::Node::Array(_)
    ));
}

#[tokio::test]
async fn names_below_a_group_are_relative_and_a_leading_slash_says_so() {
    use zarr_array::Group;

    let store = memory();
    ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
        .create(Arc::clone(&store), "/images/raw/a")
        .await
        .unwrap();
    let raw = Group::open(Arc::clone(&store), "/images/raw")
        .await
        .unwrap();
    assert!(raw.open_array("a").await.is_ok());
    // This looked up /images/raw/images/raw/a before.
    let err = raw.open_array("/images/raw/a").await.unwrap_err();
    assert!(
        err.to_string().contains("leave out the leading `/`"),
        "{err}"
    );
}
