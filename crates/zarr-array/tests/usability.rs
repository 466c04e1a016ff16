//! What a newcomer writes first works, or fails with an error that says what to change:
//! Rust values as fill values, regions of any range kind, the byte APIs' size errors,
//! chunks too large to hold, and the blocking API beside the async one.

use std::sync::Arc;

use zarr_array::{ArrayBuilder, Error};
use zarr_core::v2::ZarrFormat;
use zarr_core::{ChunkGrid, DataType, DimensionChunks, FillValue};
use zarr_store::{MemoryStore, ReadableStore, StoreKey, WritableStore};

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

/// Every error in the chain says only its own part, so a reporter that prints the chain
/// repeats nothing.
fn assert_no_repeats(err: &(dyn std::error::Error + 'static)) {
    let mut current = err;
    while let Some(source) = current.source() {
        let (text, cause) = (current.to_string(), source.to_string());
        assert!(
            !text.contains(&cause),
            "{text:?} repeats its source {cause:?}"
        );
        current = source;
    }
}

#[tokio::test]
async fn errors_say_what_in_their_text_and_why_in_their_source() {
    // The reason a sharding configuration is refused is the error's source; the chain says
    // it once.
    let err = ArrayBuilder::new(vec![100], DataType::UInt8, vec![10])
        .sharding(vec![3])
        .create(memory(), "/s")
        .await
        .unwrap_err();
    assert_no_repeats(&err);
    let why = "[3] does not divide shard shape [10]";
    assert!(!err.to_string().contains(why), "{err}");
    let line = zarr_array::ErrorChain(&err).to_string();
    assert_eq!(line.matches(why).count(), 1, "{line}");
    assert!(
        line.starts_with("codec error in array /s: codec `sharding_indexed` failed: "),
        "{line}"
    );
    let err = ArrayBuilder::new(vec![100], DataType::UInt8, vec![10])
        .sharding(vec![5, 5])
        .create(memory(), "/s")
        .await
        .unwrap_err();
    assert_no_repeats(&err);
    assert!(
        zarr_array::ErrorChain(&err)
            .to_string()
            .contains("has 2 dimensions"),
        "{err}"
    );

    // A corrupt chunk: the array and key, then the codec's reason.
    let store = memory();
    let a = ArrayBuilder::new(vec![4], DataType::UInt8, vec![4])
        .zstd(1)
        .create(Arc::clone(&store), "/z")
        .await
        .unwrap();
    a.write(.., &[1u8, 2, 3, 4]).await.unwrap();
    store
        .set(&StoreKey::try_new("z/c/0").unwrap(), "garbage".into())
        .await
        .unwrap();
    let err = a.read::<u8>(..).await.unwrap_err();
    assert_no_repeats(&err);
    assert_eq!(err.to_string(), "array /z, chunk z/c/0");
    let line = zarr_array::ErrorChain(&err).to_string();
    assert!(line.starts_with("array /z, chunk z/c/0: "), "{line}");
    assert!(line.contains("zstd"), "{line}");

    // A store error: what the store did, then the operating system's reason.
    let err = Error::from(zarr_store::Error::Io {
        operation: "read",
        path: "/data/a/c/0".into(),
        source: std::io::Error::other("input/output error"),
    });
    assert_no_repeats(&err);
    assert_eq!(err.to_string(), "cannot read /data/a/c/0");
    assert_eq!(
        zarr_array::ErrorChain(&err).to_string(),
        "cannot read /data/a/c/0: input/output error"
    );
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
    assert!(
        zarr_array::ErrorChain(&err)
            .to_string()
            .contains("cannot allocate"),
        "{err}"
    );
    // The array stays usable.
    assert_eq!(a.read::<u8>(0..10).await.unwrap(), [0; 10]);

    let big = ArrayBuilder::new(vec![1 << 60], DataType::UInt16, vec![1 << 20])
        .create(store, "/big")
        .await
        .unwrap();
    let err = big.read::<u16>(..).await.unwrap_err();
    assert!(
        zarr_array::ErrorChain(&err)
            .to_string()
            .contains("cannot allocate"),
        "{err}"
    );
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
        zarr_array::ErrorChain(&err)
            .to_string()
            .contains("leave out the leading `/`"),
        "{err}"
    );
}

/// The accessors a caller needs to size buffers and label axes, for each kind of grid and
/// sharding, through both APIs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_describe_their_chunks_and_dimensions() {
    let store = memory();
    let plain = ArrayBuilder::new(vec![10, 20, 30], DataType::Int16, vec![5, 5, 5])
        .dimension_names_opt([Some("t"), None, Some("x")])
        .create(Arc::clone(&store), "/plain")
        .await
        .unwrap();
    assert_eq!(plain.ndim(), 3);
    assert_eq!(plain.num_elements().unwrap(), 6000);
    assert_eq!(plain.chunk_shape(), Some(&[5, 5, 5][..]));
    assert_eq!(plain.inner_chunk_shape(), None);
    assert_eq!(
        plain.dimension_names(),
        Some(&[Some("t".to_owned()), None, Some("x".to_owned())][..])
    );
    assert_eq!(plain.chunk_key_encoding().encode(&[1, 2, 3]), "c/1/2/3");

    let sharded = ArrayBuilder::new(vec![64, 64], DataType::UInt8, vec![32, 32])
        .sharding(vec![8, 16])
        .create(Arc::clone(&store), "/sharded")
        .await
        .unwrap();
    assert_eq!(sharded.chunk_shape(), Some(&[32, 32][..]));
    assert_eq!(sharded.inner_chunk_shape(), Some(&[8, 16][..]));
    assert_eq!(sharded.dimension_names(), None);

    // With the storage transformer the grid's chunks are the inner chunks.
    let transformed = ArrayBuilder::new(vec![64], DataType::UInt8, vec![8])
        .sharding_transformer(vec![4])
        .create(Arc::clone(&store), "/transformed")
        .await
        .unwrap();
    assert_eq!(transformed.chunk_shape(), Some(&[8][..]));
    assert_eq!(transformed.inner_chunk_shape(), None);

    let grid = ChunkGrid::rectilinear(vec![DimensionChunks::from_edges([2, 3, 5])]).unwrap();
    let ragged = ArrayBuilder::new(vec![10], DataType::Float64, vec![1])
        .chunk_grid(grid.clone())
        .create(Arc::clone(&store), "/ragged")
        .await
        .unwrap();
    assert_eq!(ragged.chunk_shape(), None);
    assert_eq!(ragged.chunk_grid(), &grid);
    assert_eq!(ragged.chunk_grid().chunk_shape(&[10], &[2]).unwrap(), [5]);

    let scalar = ArrayBuilder::new(vec![], DataType::Float32, vec![])
        .create(Arc::clone(&store), "/scalar")
        .await
        .unwrap();
    assert_eq!(scalar.ndim(), 0);
    assert_eq!(scalar.num_elements().unwrap(), 1);

    let store2 = Arc::clone(&store);
    std::thread::spawn(move || {
        let b = zarr_array::blocking::Array::open(store2, "/sharded").unwrap();
        assert_eq!(b.ndim(), 2);
        assert_eq!(b.num_elements().unwrap(), 4096);
        assert_eq!(b.chunk_shape(), Some(&[32, 32][..]));
        assert_eq!(b.inner_chunk_shape(), Some(&[8, 16][..]));
        assert_eq!(b.dimension_names(), None);
        assert!(matches!(b.chunk_grid(), ChunkGrid::Regular(_)));
        assert_eq!(b.chunk_key_encoding().encode(&[0, 1]), "c/0/1");
    })
    .join()
    .unwrap();
}

/// `Group::create_array` puts an array (and the groups between) below a group, in the
/// group's format, and refuses a builder of the other format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_create_arrays_below_themselves() {
    let store = memory();
    let root = zarr_array::Group::create(Arc::clone(&store), "/")
        .await
        .unwrap();
    let builder = ArrayBuilder::new(vec![3], DataType::UInt16, vec![2]);
    let array = root.create_array("a/b/c", &builder).await.unwrap();
    array.write(.., &[1u16, 2, 3]).await.unwrap();
    let b = root.open_group("a/b").await.unwrap();
    assert_eq!(
        b.open_array("c")
            .await
            .unwrap()
            .read::<u16>(..)
            .await
            .unwrap(),
        [1, 2, 3]
    );
    // An existing node is refused, as by the builder.
    assert!(matches!(
        root.create_array("a/b/c", &builder).await.unwrap_err(),
        Error::NodeExists { .. }
    ));
    assert!(matches!(
        root.create_array("/a/d", &builder).await.unwrap_err(),
        Error::Core(_)
    ));

    let v2 = zarr_array::Group::create_with_format(
        Arc::clone(&store),
        "/old",
        zarr_core::GroupMetadata::new(),
        ZarrFormat::V2,
    )
    .await
    .unwrap();
    let err = v2.create_array("x", &builder).await.unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("Zarr v2"), "{err}");
    assert!(
        store
            .get(&StoreKey::try_new("old/x/zarr.json").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    let x = v2
        .create_array("x", &builder.clone().zarr_format(ZarrFormat::V2))
        .await
        .unwrap();
    assert_eq!(x.zarr_format(), ZarrFormat::V2);
    assert!(
        store
            .get(&StoreKey::try_new("old/x/.zarray").unwrap())
            .await
            .unwrap()
            .is_some()
    );

    let store2 = Arc::clone(&store);
    std::thread::spawn(move || {
        let root = zarr_array::blocking::Group::open(store2, "/").unwrap();
        let y = root
            .create_array("y", &ArrayBuilder::new(vec![2], DataType::Int8, vec![2]))
            .unwrap();
        y.write(.., &[-1i8, 1]).unwrap();
        assert_eq!(
            root.open_array("y").unwrap().read::<i8>(..).unwrap(),
            [-1, 1]
        );
    })
    .join()
    .unwrap();
}

/// Variable-length values built by the caller convert into the crate's error with `?`.
#[test]
fn vlen_errors_convert_with_the_question_mark() {
    fn build() -> Result<zarr_vlen::VlenStrings<i32>, Error> {
        Ok(zarr_vlen::VlenStrings::<i32>::from_strs(["a", "b"])?)
    }
    assert_eq!(build().unwrap().len(), 2);
    let bad = zarr_vlen::VlenStrings::<i32>::try_new(vec![0i32, 5], b"ab".to_vec());
    let err: Error = bad.unwrap_err().into();
    assert!(matches!(err, Error::VlenValues(_)), "{err}");
}

/// The fill value comes back as a typed Rust value, for every kind of element type.
#[tokio::test]
async fn fill_values_read_back_as_rust_values() {
    let store = memory();
    let make = |data_type: DataType, fill: serde_json::Value, path: &'static str| {
        let store = Arc::clone(&store);
        async move {
            ArrayBuilder::new(vec![2], data_type, vec![2])
                .fill_value_json(fill)
                .unwrap()
                .create(store, path)
                .await
                .unwrap()
        }
    };
    let f = make(DataType::Float32, serde_json::json!("-Infinity"), "/f").await;
    assert_eq!(f.fill_value_as::<f32>().unwrap(), f32::NEG_INFINITY);
    let h = make(DataType::Float16, serde_json::json!(1.5), "/h").await;
    assert_eq!(
        h.fill_value_as::<half::f16>().unwrap(),
        half::f16::from_f32(1.5)
    );
    let b = make(DataType::Bool, serde_json::json!(true), "/b").await;
    assert!(b.fill_value_as::<bool>().unwrap());
    let c = make(DataType::Complex64, serde_json::json!([1.0, -2.0]), "/c").await;
    assert_eq!(
        c.fill_value_as::<num_complex::Complex<f32>>().unwrap(),
        num_complex::Complex::new(1.0, -2.0)
    );
    let u = make(DataType::UInt64, serde_json::json!(u64::MAX), "/u").await;
    assert_eq!(u.fill_value_as::<u64>().unwrap(), u64::MAX);
    let wrong = u.fill_value_as::<i64>().unwrap_err();
    assert!(matches!(wrong, Error::ElementType { .. }), "{wrong}");
    let s = make(DataType::String, serde_json::json!("n/a"), "/s").await;
    assert!(matches!(
        s.fill_value_as::<u8>().unwrap_err(),
        Error::ElementType { .. }
    ));
}

/// `children_each` lists every child with its own result: one broken child (metadata that
/// does not parse, an unknown codec) does not hide the others, where `children` fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_broken_child_does_not_hide_the_others() {
    use zarr_store::WritableStore;
    let store = memory();
    let root = zarr_array::Group::create(Arc::clone(&store), "/")
        .await
        .unwrap();
    let builder = ArrayBuilder::new(vec![2], DataType::UInt8, vec![2]);
    root.create_array("a", &builder).await.unwrap();
    root.create_group("g").await.unwrap();
    let mut unknown = builder.build_metadata().unwrap().to_value().unwrap();
    unknown["codecs"] = serde_json::json!([{"name": "no-such-codec"}]);
    store
        .set(
            &StoreKey::try_new("odd/zarr.json").unwrap(),
            unknown.to_string().into(),
        )
        .await
        .unwrap();
    store
        .set(
            &StoreKey::try_new("torn/zarr.json").unwrap(),
            "{\"zarr_for".into(),
        )
        .await
        .unwrap();
    // A directory without metadata is not a node.
    store
        .set(&StoreKey::try_new("loose/data.bin").unwrap(), "x".into())
        .await
        .unwrap();

    assert!(root.children().await.is_err());
    let children = root.children_each().await.unwrap();
    let names: Vec<_> = children.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, ["/a", "/g", "/odd", "/torn"]);
    assert!(matches!(children[0].1, Ok(zarr_array::Node::Array(_))));
    assert!(matches!(children[1].1, Ok(zarr_array::Node::Group(_))));
    let odd = zarr_array::ErrorChain(children[2].1.as_ref().unwrap_err()).to_string();
    assert!(odd.contains("no-such-codec"), "{odd}");
    assert!(matches!(children[3].1, Err(Error::Metadata { .. })));

    std::thread::spawn(move || {
        let root = zarr_array::blocking::Group::open(store, "/").unwrap();
        let children = root.children_each().unwrap();
        assert_eq!(children.len(), 4);
        assert_eq!(children.iter().filter(|(_, n)| n.is_err()).count(), 2);
    })
    .join()
    .unwrap();
}

#[tokio::test]
async fn an_invalid_element_is_named_by_its_indices_in_the_array() {
    let store = memory();
    let a = ArrayBuilder::new(vec![6, 6], DataType::String, vec![3, 3])
        .create(Arc::clone(&store), "/s")
        .await
        .unwrap();
    let text: Vec<String> = (0..6)
        .flat_map(|i| (0..6).map(move |j| format!("v{i}{j}")))
        .collect();
    a.write_text(.., &text).await.unwrap();
    // Break the UTF-8 of element [4, 5]: element [1, 2] of chunk [1, 1].
    let key = StoreKey::try_new("s/c/1/1").unwrap();
    let mut bytes = store.get(&key).await.unwrap().unwrap().to_vec();
    let at = bytes.windows(3).position(|w| w == b"v45").unwrap();
    bytes[at + 1] = 0xff;
    store.set(&key, bytes.into()).await.unwrap();

    let err = a.read_text(..).await.unwrap_err();
    match &err {
        Error::Element {
            array,
            key,
            element,
            ..
        } => {
            assert_eq!((array.as_str(), key.as_str()), ("/s", "s/c/1/1"));
            assert_eq!(element, &[4, 5]);
        }
        other => panic!("{other:?}"),
    }
    assert_no_repeats(&err);
    let line = zarr_array::ErrorChain(&err).to_string();
    assert!(
        line.starts_with("array /s, element [4, 5] (chunk s/c/1/1): codec `vlen-utf8`: "),
        "{line}"
    );
    assert!(line.contains("element 5 of the chunk"), "{line}");
    // Reading one chunk names the same element; the other chunks still read.
    let err = a.read_chunk(&[1, 1]).await.unwrap_err();
    assert!(
        matches!(&err, Error::Element { element, .. } if element == &[4, 5]),
        "{err:?}"
    );
    assert_eq!(a.read_text([0..3, 0..6]).await.unwrap(), text[..18]);

    // Writing: a value a numcodecs filter cannot store is named the same way.
    let codecs = [
        serde_json::json!({"name": "numcodecs.fixedscaleoffset",
            "configuration": {"offset": 0, "scale": 1, "dtype": "<f8", "astype": "|u1"}}),
        serde_json::json!({"name": "bytes"}),
    ];
    let codecs = codecs
        .iter()
        .map(|c| zarr_core::ExtensionObject::from_json(c, "codecs").unwrap())
        .collect();
    let f = ArrayBuilder::new(vec![2, 4], DataType::Float64, vec![2, 2])
        .codecs(codecs)
        .create(store, "/f")
        .await
        .unwrap();
    let err = f
        .write(.., &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 1000.0])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Element { key, element, .. } if key == "f/c/0/1" && element == &[1, 3]),
        "{err:?}"
    );
}

/// Codec chains move an invalid element's position back through `transpose` codecs, and
/// the sharding codec moves it from the inner chunk into the shard, so the array names the
/// element by its indices behind both (and both nested).
#[tokio::test]
async fn an_invalid_element_is_named_through_transposes_and_shards() {
    fn codecs(json: serde_json::Value) -> Vec<zarr_core::ExtensionObject> {
        json.as_array()
            .unwrap()
            .iter()
            .map(|c| zarr_core::ExtensionObject::from_json(c, "codecs").unwrap())
            .collect()
    }
    let transpose = serde_json::json!({"name": "transpose", "configuration": {"order": [1, 0]}});
    let vlen = serde_json::json!({"name": "vlen-utf8"});
    let shard = |inner: serde_json::Value| {
        serde_json::json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2], "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}})
    };
    let cases = [
        // (array, codecs, chunk shape, the stored key that holds [5, 7])
        ("t", serde_json::json!([transpose, vlen]), [4, 4], "t/c/1/1"),
        (
            "s",
            serde_json::json!([shard(serde_json::json!([vlen]))]),
            [4, 4],
            "s/c/1/1",
        ),
        (
            "ts",
            serde_json::json!([transpose, shard(serde_json::json!([transpose, vlen]))]),
            [4, 4],
            "ts/c/1/1",
        ),
        (
            "big",
            serde_json::json!([shard(serde_json::json!([vlen]))]),
            [8, 8],
            "big/c/0/0",
        ),
        (
            "nested",
            serde_json::json!([{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [4, 4],
                "codecs": [shard(serde_json::json!([transpose, vlen]))]}}]),
            [8, 8],
            "nested/c/0/0",
        ),
    ];
    let store = memory();
    let text: Vec<String> = (0..8)
        .flat_map(|i| (0..8).map(move |j| format!("v{i}{j}")))
        .collect();
    for (name, list, chunk, key) in cases {
        let a = ArrayBuilder::new(vec![8, 8], DataType::String, chunk.to_vec())
            .codecs(codecs(list))
            .create(Arc::clone(&store), &format!("/{name}"))
            .await
            .unwrap();
        a.write_text(.., &text).await.unwrap();
        let key = StoreKey::try_new(key).unwrap();
        let mut bytes = store.get(&key).await.unwrap().unwrap().to_vec();
        let at = bytes.windows(3).position(|w| w == b"v57").unwrap();
        bytes[at + 1] = 0xff;
        store.set(&key, bytes.into()).await.unwrap();

        let err = a.read_text(..).await.unwrap_err();
        assert!(
            matches!(&err, Error::Element { key: k, element, .. }
                if k == key.as_str() && element == &[5, 7]),
            "{name}: {err:?}"
        );
        assert_no_repeats(&err);
        // The rest of the array still reads.
        assert_eq!(
            a.read_text([0..4, 0..8]).await.unwrap(),
            text[..32],
            "{name}"
        );
    }
}

#[tokio::test]
async fn overwrite_replaces_a_node_whose_metadata_does_not_parse() {
    let store = memory();
    let a = ArrayBuilder::new(vec![4], DataType::UInt8, vec![2])
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    a.write(.., &[1u8, 2, 3, 4]).await.unwrap();
    store
        .set(&StoreKey::try_new("a/zarr.json").unwrap(), "{torn".into())
        .await
        .unwrap();
    // Without overwrite: the broken document is the error, and nothing changes.
    let err = ArrayBuilder::new(vec![4], DataType::UInt8, vec![2])
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Metadata { .. }), "{err:?}");
    assert!(
        store
            .get(&StoreKey::try_new("a/c/0").unwrap())
            .await
            .unwrap()
            .is_some()
    );
    // With it: the node and its chunks are replaced.
    let a = ArrayBuilder::new(vec![4], DataType::UInt8, vec![2])
        .overwrite(true)
        .create(Arc::clone(&store), "/a")
        .await
        .unwrap();
    assert_eq!(a.read::<u8>(..).await.unwrap(), [0; 4]);
    assert!(
        store
            .get(&StoreKey::try_new("a/c/0").unwrap())
            .await
            .unwrap()
            .is_none()
    );

    // The same for a Zarr v2 node whose `.zarray` does not parse.
    store
        .set(&StoreKey::try_new("b/.zarray").unwrap(), "[]".into())
        .await
        .unwrap();
    let b = ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])
        .zarr_format(ZarrFormat::V2)
        .overwrite(true)
        .create(Arc::clone(&store), "/b")
        .await
        .unwrap();
    assert_eq!(b.read::<u8>(..).await.unwrap(), [0; 2]);
}

#[tokio::test]
async fn stored_chunks_come_from_one_listing() {
    let store = memory();
    // Default keys; a stray file and a key outside the grid are not chunks.
    let a = ArrayBuilder::new(vec![10, 10], DataType::UInt16, vec![4, 4])
        .create(Arc::clone(&store), "/g/a")
        .await
        .unwrap();
    assert!(a.stored_chunks().await.unwrap().is_empty());
    a.write([0..4, 4..8], &[1u16; 16]).await.unwrap();
    a.write([8..10, 0..2], &[2u16; 4]).await.unwrap();
    for stray in ["g/a/notes.txt", "g/a/c/9/0", "g/a/c/01/0"] {
        store
            .set(&StoreKey::try_new(stray).unwrap(), "x".into())
            .await
            .unwrap();
    }
    assert_eq!(a.stored_chunks().await.unwrap(), [vec![0, 1], vec![2, 0]]);
    // An array that writes only fill values stores nothing.
    a.write([0..4, 4..8], &[0u16; 16]).await.unwrap();
    assert_eq!(a.num_stored_chunks().await.unwrap(), 1);

    // Zarr v2 keys (`1.0`), beside `.zarray` and `.zattrs`.
    let v2 = ArrayBuilder::new(vec![4, 4], DataType::UInt8, vec![2, 2])
        .zarr_format(ZarrFormat::V2)
        .create(Arc::clone(&store), "/v2")
        .await
        .unwrap();
    v2.write([2..4, 0..2], &[7u8; 4]).await.unwrap();
    assert_eq!(v2.stored_chunks().await.unwrap(), [vec![1, 0]]);

    // The sharding codec: the chunks are the shards.
    let sharded = ArrayBuilder::new(vec![8], DataType::UInt8, vec![4])
        .sharding(vec![2])
        .create(Arc::clone(&store), "/sharded")
        .await
        .unwrap();
    sharded.write(5..6, &[3u8]).await.unwrap();
    assert_eq!(sharded.stored_chunks().await.unwrap(), [vec![1]]);

    // The sharding storage transformer: the chunks its shard indexes list.
    let transformed = ArrayBuilder::new(vec![8], DataType::UInt8, vec![2])
        .sharding_transformer(vec![2])
        .create(Arc::clone(&store), "/t")
        .await
        .unwrap();
    transformed.write(2..3, &[4u8]).await.unwrap();
    transformed.write(7..8, &[5u8]).await.unwrap();
    assert_eq!(
        transformed.stored_chunks().await.unwrap(),
        [vec![1], vec![3]]
    );

    // The blocking API.
    std::thread::spawn(move || {
        let a = zarr_array::blocking::Array::open(store, "/g/a").unwrap();
        assert_eq!(a.stored_chunks().unwrap(), [vec![2, 0]]);
        assert_eq!(a.num_stored_chunks().unwrap(), 1);
    })
    .join()
    .unwrap();
}

/// Floats stored as scaled `int16` with the zarr-extensions `scale_offset` and `cast_value`
/// codecs: values read back as the codecs define them, unwritten chunks as the fill value,
/// the chain survives a reopen, and a value the chain cannot store is named by its indices.
#[tokio::test]
async fn scale_offset_and_cast_value_store_floats_as_scaled_integers() {
    let store = memory();
    let codecs: Vec<zarr_core::ExtensionObject> = [
        serde_json::json!({"name": "scale_offset", "configuration": {"offset": 273.15, "scale": 100}}),
        serde_json::json!({"name": "cast_value", "configuration": {"data_type": "int16"}}),
        serde_json::json!({"name": "bytes", "configuration": {"endian": "little"}}),
    ]
    .iter()
    .map(|c| zarr_core::ExtensionObject::from_json(c, "codecs").unwrap())
    .collect();
    let a = ArrayBuilder::new(vec![6, 10], DataType::Float32, vec![3, 4])
        .fill_value(273.15f32.into())
        .codecs(codecs)
        .create(Arc::clone(&store), "/t")
        .await
        .unwrap();
    let kelvin: Vec<f32> = (0..30).map(|i| 250.0 + i as f32 * 1.7319).collect();
    a.write([0..3, 0..10], &kelvin).await.unwrap();
    // As the codecs define it, in float32: (x - 273.15) * 100, rounded to an integer
    // (ties to even); back as n / 100 + 273.15.
    let (offset, scale) = (273.15f32, 100f32);
    let expect: Vec<f32> = kelvin
        .iter()
        .map(|&x| ((x - offset) * scale).round_ties_even() / scale + offset)
        .collect();
    let again = zarr_array::Array::open(Arc::clone(&store), "/t")
        .await
        .unwrap();
    let back = again.read::<f32>(..).await.unwrap();
    assert_eq!(back[..30], expect[..]);
    assert!(
        back.iter()
            .zip(&kelvin)
            .all(|(b, k)| (b - k).abs() <= 0.005 + 1e-4)
    );
    assert_eq!(back[30..], [273.15f32; 30]);
    // Row 3 was never written: no chunk there.
    assert!(
        store
            .get(&StoreKey::try_new("t/c/1/0").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    // The stored integers (3 x 4 of them): element [0, 0] is (250 - 273.15) * 100 = -2315.
    let raw = store
        .get(&StoreKey::try_new("t/c/0/0").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.len(), 24);
    assert_eq!(i16::from_le_bytes([raw[0], raw[1]]), -2315);
    // 700 K is (700 - 273.15) * 100 = 42685, beyond int16: named by its indices.
    let err = a.write([4..5, 5..6], &[700.0f32]).await.unwrap_err();
    assert!(
        matches!(&err, Error::Element { key, element, .. } if key == "t/c/1/1" && element == &[4, 5]),
        "{err:?}"
    );
    assert!(
        zarr_array::ErrorChain(&err).to_string().contains("int16"),
        "{err}"
    );
}

#[tokio::test]
async fn attributes_read_as_rust_types_or_say_which_did_not() {
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Axis {
        name: String,
        unit: Option<String>,
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Described {
        title: String,
        axes: Vec<Axis>,
        #[serde(default)]
        version: u32,
    }
    let store = memory();
    let attributes = serde_json::json!({
        "title": "scan",
        "axes": [{"name": "y", "unit": "µm"}, {"name": "x"}],
        "other": [1, 2],
    });
    let serde_json::Value::Object(attributes) = attributes else {
        unreachable!()
    };
    let array = ArrayBuilder::new(vec![2, 2], DataType::UInt8, vec![2, 2])
        .attributes(attributes.clone())
        .create(Arc::clone(&store), "/g/a")
        .await
        .unwrap();
    let want = Described {
        title: "scan".into(),
        axes: vec![
            Axis {
                name: "y".into(),
                unit: Some("µm".into()),
            },
            Axis {
                name: "x".into(),
                unit: None,
            },
        ],
        version: 0,
    };
    assert_eq!(array.attributes_as::<Described>().unwrap(), want);
    assert_eq!(array.attribute::<String>("title").unwrap().unwrap(), "scan");
    assert_eq!(
        array.attribute::<Vec<u8>>("other").unwrap().unwrap(),
        [1, 2]
    );
    assert_eq!(array.attribute::<String>("absent").unwrap(), None);
    // The wrong type: an error naming the node and the attribute, serde's reason as source.
    let err = array.attribute::<u32>("title").unwrap_err();
    assert!(
        matches!(&err, Error::Attribute { node, key: Some(key), .. } if node == "/g/a" && key == "title"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "cannot read attribute \"title\" of /g/a as the type asked for"
    );
    let source = std::error::Error::source(&err).unwrap().to_string();
    assert!(source.contains("expected u32"), "{source}");
    let err = array.attributes_as::<Vec<u8>>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot read the attributes of /g/a as the type asked for"
    );
    // Groups, nodes and the blocking API read them the same way.
    let mut group = zarr_array::Group::open(Arc::clone(&store), "/g")
        .await
        .unwrap();
    group.set_attributes(attributes).await.unwrap();
    assert_eq!(group.attributes_as::<Described>().unwrap(), want);
    let node = zarr_array::Node::open(Arc::clone(&store), "/g/a")
        .await
        .unwrap();
    assert_eq!(
        node.attribute::<Vec<Axis>>("axes").unwrap().unwrap(),
        want.axes
    );
    let err = node.attribute::<bool>("axes").unwrap_err();
    assert!(matches!(err, Error::Attribute { .. }), "{err:?}");
    // Written from Rust values: one attribute set, the others kept, read back typed.
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Window {
        low: f32,
        high: f32,
    }
    let mut array = array;
    let window = Window {
        low: -1.5,
        high: 3.0,
    };
    array.set_attribute("window", &window).await.unwrap();
    let again = zarr_array::Array::open(Arc::clone(&store), "/g/a")
        .await
        .unwrap();
    assert_eq!(again.attribute::<Window>("window").unwrap(), Some(window));
    assert_eq!(again.attribute::<String>("title").unwrap().unwrap(), "scan");
    // A value JSON cannot hold (a map with non-string keys): refused, nothing written.
    let odd: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 2)].into();
    let err = array.set_attribute("odd", &odd).await.unwrap_err();
    assert!(
        matches!(&err, Error::Attribute { key: Some(key), .. } if key == "odd"),
        "{err:?}"
    );
    let again = zarr_array::Array::open(Arc::clone(&store), "/g/a")
        .await
        .unwrap();
    assert!(!again.attributes().contains_key("odd"));
    let mut blocking_array = zarr_array::blocking::Array::from(array);
    assert_eq!(blocking_array.attributes_as::<Described>().unwrap(), want);
    let mut blocking_group = zarr_array::blocking::Group::from(group);
    assert_eq!(
        blocking_group
            .attribute::<String>("title")
            .unwrap()
            .unwrap(),
        "scan"
    );
    // The blocking API may not run inside this test's runtime: set from another thread.
    std::thread::scope(|scope| {
        scope.spawn(|| {
            blocking_group.set_attribute("count", &3u8).unwrap();
            blocking_array.set_attribute("count", &4u8).unwrap();
        });
    });
    assert_eq!(blocking_group.attribute::<u8>("count").unwrap(), Some(3));
    assert_eq!(blocking_array.attribute::<u8>("count").unwrap(), Some(4));
}

#[tokio::test]
async fn builders_from_metadata_give_it_back_and_like_copies_the_layout() {
    use zarr_core::ArrayMetadata;
    let examples = [
        ArrayBuilder::new(vec![30, 40], DataType::UInt16, vec![10, 8])
            .fill_value(7.into())
            .zstd(3)
            .crc32c()
            .attribute("units", "K")
            .dimension_names_opt([Some("y"), None]),
        ArrayBuilder::new(vec![64, 64], DataType::Float32, vec![32, 32]).sharding(vec![8, 8]),
        ArrayBuilder::new(vec![12], DataType::Int8, vec![1])
            .chunk_grid(ChunkGrid::rectilinear(vec![DimensionChunks::from_edges([5, 7])]).unwrap()),
        ArrayBuilder::new(vec![8, 8], DataType::UInt8, vec![4, 4]).sharding_transformer(vec![2, 1]),
        ArrayBuilder::new(vec![5], DataType::String, vec![2]).zarr_format(ZarrFormat::V2),
    ];
    for builder in examples {
        let metadata = builder.build_metadata().unwrap();
        let again = ArrayBuilder::from_metadata(&metadata)
            .zarr_format(builder.format())
            .build_metadata()
            .unwrap();
        assert_eq!(again, metadata);
        assert_eq!(again.to_value().unwrap(), metadata.to_value().unwrap());
    }
    // Optional fields a reader does not know come too.
    let text = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}},
        "fill_value": -1, "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
        "future_field": {"must_understand": false, "x": 1}}"#;
    let metadata = ArrayMetadata::from_json(text).unwrap();
    assert!(metadata.extra_fields.contains_key("future_field"));
    assert_eq!(
        ArrayBuilder::from_metadata(&metadata)
            .build_metadata()
            .unwrap(),
        metadata
    );

    // `like`: another shape, the rest as the source has it, written and read.
    let store = memory();
    let source = ArrayBuilder::new(vec![30, 40], DataType::UInt16, vec![10, 8])
        .fill_value(7.into())
        .sharding(vec![5, 4])
        .dimension_names(["y", "x"])
        .create(Arc::clone(&store), "/src")
        .await
        .unwrap();
    let made = ArrayBuilder::like(&source)
        .shape(vec![10, 16])
        .attributes(serde_json::Map::new())
        .create(Arc::clone(&store), "/made")
        .await
        .unwrap();
    assert_eq!(made.shape(), [10, 16]);
    assert_eq!(made.metadata().codecs, source.metadata().codecs);
    assert_eq!(made.inner_chunk_shape(), Some(&[5u64, 4][..]));
    assert_eq!(made.dimension_names(), source.dimension_names());
    made.write(.., &[3u16; 160]).await.unwrap();
    assert_eq!(made.read::<u16>([9..10, 15..16]).await.unwrap(), [3]);
    // Another data type: the fill value converts, or the build says why not.
    let wider = ArrayBuilder::like(&source)
        .data_type(DataType::Float64)
        .build_metadata()
        .unwrap();
    assert_eq!(wider.fill_value.to_json(&DataType::Float64).unwrap(), 7.0);
    let err = ArrayBuilder::like(&source)
        .data_type(DataType::Bool)
        .build_metadata()
        .unwrap_err();
    assert!(
        matches!(err, Error::Core(zarr_core::Error::InvalidFillValue { .. })),
        "{err:?}"
    );
    // A codec convenience cannot add to a list given whole: an error, not ignored.
    let err = ArrayBuilder::like(&source)
        .zstd(1)
        .build_metadata()
        .unwrap_err();
    assert!(err.to_string().contains("codecs"), "{err}");
    assert!(
        zarr_core::ErrorChain(&err).to_string().contains("zstd"),
        "{err}"
    );
}
