//! The object_store adapter over object_store's own in-memory and local-filesystem backends.

use std::sync::Arc;

use bytes::Bytes;
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use zarr_store::{
    ByteRange, Error, ListableStore, ObjectStoreAdapter, ReadableStore, StoreKey, StorePrefix,
    WritableStore, testing,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn object_store_in_memory_passes_the_conformance_suite() {
    let store = ObjectStoreAdapter::new(Arc::new(InMemory::new()));
    testing::run_conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn object_store_with_a_base_path_passes_the_conformance_suite() {
    let inner = Arc::new(InMemory::new());
    let store = ObjectStoreAdapter::new(Arc::clone(&inner) as _)
        .with_base_path("some/base")
        .unwrap();
    // A neighbour sharing the base's text must stay invisible and untouched.
    let neighbour = ObjectStoreAdapter::new(inner)
        .with_base_path("some/basement")
        .unwrap();
    neighbour
        .set(&StoreKey::new("k"), Bytes::from_static(b"n"))
        .await
        .unwrap();
    testing::run_conformance(Arc::new(store)).await;
    assert_eq!(neighbour.list().await.unwrap(), vec![StoreKey::new("k")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn object_store_local_filesystem_from_a_file_url_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let url = url::Url::from_directory_path(dir.path().join("data")).unwrap();
    let store = ObjectStoreAdapter::from_url(url.as_str()).unwrap();
    assert!(!store.is_read_only());
    testing::run_conformance(Arc::new(store)).await;
}

#[tokio::test]
async fn memory_url_opens_an_empty_writable_store_at_its_path() {
    let store = ObjectStoreAdapter::from_url("memory:///some/path").unwrap();
    assert_eq!(store.base_path(), "some/path");
    let key = StoreKey::new("a/b");
    store.set(&key, Bytes::from_static(b"v")).await.unwrap();
    assert_eq!(
        store
            .object_store()
            .head(&"some/path/a/b".into())
            .await
            .unwrap()
            .size,
        1
    );
}

#[test]
fn bad_urls_and_options_are_typed_errors() {
    assert!(matches!(
        ObjectStoreAdapter::from_url("not a url"),
        Err(Error::InvalidUrl { .. })
    ));
    // A plain path is the commonest mistake: the error says what a URL looks like.
    let Err(err) = ObjectStoreAdapter::from_url("/data/images.zarr") else {
        panic!("a path without a scheme was taken as a URL");
    };
    let text = err.to_string();
    assert!(matches!(err, Error::InvalidUrl { .. }), "{text}");
    assert!(text.contains("/data/images.zarr"), "{text}");
    assert!(text.contains("file:///absolute/path"), "{text}");
    assert!(text.contains("FilesystemStore"), "{text}");
    assert!(matches!(
        ObjectStoreAdapter::from_url("ftp://host/path"),
        Err(Error::UnsupportedUrl { .. })
    ));
    match ObjectStoreAdapter::from_url_with_options("s3://bucket/p", [("no_such_option", "1")]) {
        Err(Error::UnknownOption { key, backend }) => {
            assert_eq!((key.as_str(), backend), ("no_such_option", "s3"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ObjectStoreAdapter::from_url_with_options("memory:///", [("x", "1")]),
        Err(Error::UnknownOption { .. })
    ));
}

#[test]
fn cloud_urls_configure_their_backends() {
    // Building a client does not touch the network.
    let s3 = ObjectStoreAdapter::from_url_with_options(
        "s3://bucket/base/path",
        [
            ("aws_region", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "key"),
            ("aws_secret_access_key", "secret"),
        ],
    )
    .unwrap();
    assert_eq!(s3.base_path(), "base/path");
    assert!(!s3.is_read_only());
    let http = ObjectStoreAdapter::from_url("http://127.0.0.1:1/files/data.zarr").unwrap();
    assert_eq!(http.base_path(), "files/data.zarr");
    assert!(http.is_read_only());
}

#[tokio::test]
async fn ranges_are_checked_against_the_object_size() {
    let store = ObjectStoreAdapter::new(Arc::new(InMemory::new()));
    let key = StoreKey::new("v");
    store
        .set(&key, Bytes::from_static(b"0123456789"))
        .await
        .unwrap();
    // Ranges coalesced into one span past the end must not be answered short (or panic).
    let result = store
        .get_partial_values(&[
            (key.clone(), ByteRange::new(0, 2)),
            (key.clone(), ByteRange::new(8, 12)),
        ])
        .await;
    assert!(
        matches!(result, Err(Error::RangeOutOfBounds { size: 10, .. })),
        "{result:?}"
    );
    let result = store
        .get_partial_values(&[
            (key.clone(), ByteRange::new(0, 2)),
            (key, ByteRange::new(20, 30)),
        ])
        .await;
    assert!(
        matches!(result, Err(Error::RangeOutOfBounds { size: 10, .. })),
        "{result:?}"
    );
    assert_eq!(
        store.list_dir(&StorePrefix::root()).await.unwrap().keys,
        vec![StoreKey::new("v")]
    );
}

#[tokio::test]
async fn read_only_adapters_refuse_every_write() {
    let store = ObjectStoreAdapter::new(Arc::new(InMemory::new())).with_read_only(true);
    let key = StoreKey::new("k");
    let refused = [
        store.set(&key, Bytes::new()).await,
        store
            .set_partial_values(&[(key.clone(), 0, Bytes::from_static(b"x"))])
            .await,
        store.erase(&key).await,
        store.erase_values(std::slice::from_ref(&key)).await,
        store.erase_prefix(&StorePrefix::root()).await,
    ];
    for result in refused {
        assert!(matches!(result, Err(Error::ReadOnly { .. })), "{result:?}");
    }
}

#[tokio::test]
async fn erase_prefix_removes_objects_that_are_not_valid_keys() {
    use object_store::ObjectStore;
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let store = ObjectStoreAdapter::new(Arc::clone(&inner));
    // Written by another tool: a backslash is fine in an object name, not in a key.
    let odd = object_store::path::Path::parse("a/b\\c").unwrap();
    inner
        .put(&odd, Bytes::from_static(b"x").into())
        .await
        .unwrap();
    inner
        .put(&"a".into(), Bytes::from_static(b"x").into())
        .await
        .unwrap();
    assert_eq!(store.list().await.unwrap(), vec![StoreKey::new("a")]);
    store.erase_prefix(&StorePrefix::new("a/")).await.unwrap();
    assert!(inner.head(&odd).await.is_err());
    // The object named like the prefix is not below it.
    assert_eq!(store.list().await.unwrap(), vec![StoreKey::new("a")]);
}
