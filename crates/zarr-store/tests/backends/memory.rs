use std::sync::Arc;

use bytes::Bytes;
use zarr_store::{ByteRange, MemoryStore, ReadableStore, StoreKey, WritableStore, testing};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_passes_the_conformance_suite() {
    testing::run_conformance(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn memory_store_reads_are_zero_copy() {
    let store = MemoryStore::new();
    let key = StoreKey::new("k");
    let value = Bytes::from(vec![7u8; 4096]);
    store.set(&key, value.clone()).await.unwrap();
    let whole = store.get(&key).await.unwrap().unwrap();
    assert_eq!(
        whole.as_ptr(),
        value.as_ptr(),
        "get must hand out the stored buffer"
    );
    let parts = store
        .get_partial_values(&[
            (key.clone(), ByteRange::new(100, 200)),
            (key, ByteRange::suffix(10)),
        ])
        .await
        .unwrap();
    assert_eq!(parts[0].as_ref().unwrap().as_ptr(), value[100..].as_ptr());
    assert_eq!(parts[1].as_ref().unwrap().as_ptr(), value[4086..].as_ptr());
}
