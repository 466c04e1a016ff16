use std::sync::Arc;

use bytes::Bytes;
use zarr_store::{
    ByteRange, ListDir, ListableStore, MemoryStore, Operation, PrefixStore, ReadableStore,
    RecordingStore, Store, StoreKey, StorePrefix, WritableStore, testing,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prefix_store_passes_the_conformance_suite_and_stays_below_its_prefix() {
    let memory = MemoryStore::new();
    let neighbour = StoreKey::new("data/arrayX/zarr.json");
    let outside = StoreKey::new("top");
    memory
        .set(&neighbour, Bytes::from_static(b"n"))
        .await
        .unwrap();
    memory
        .set(&outside, Bytes::from_static(b"o"))
        .await
        .unwrap();
    let store = PrefixStore::new(memory.clone(), StorePrefix::new("data/array/"));
    testing::run_conformance(Arc::new(store)).await;
    assert_eq!(memory.list().await.unwrap(), vec![neighbour, outside]);
}

#[tokio::test]
async fn prefix_store_maps_keys_and_listings() {
    let memory = MemoryStore::new();
    let store = PrefixStore::new(memory.clone(), StorePrefix::new("g/"));
    store
        .set(&StoreKey::new("a/b"), Bytes::from_static(b"1"))
        .await
        .unwrap();
    store
        .set(&StoreKey::new("c"), Bytes::from_static(b"2"))
        .await
        .unwrap();
    assert_eq!(
        memory.list().await.unwrap(),
        vec![StoreKey::new("g/a/b"), StoreKey::new("g/c")]
    );
    assert_eq!(
        store.list_dir(&StorePrefix::root()).await.unwrap(),
        ListDir {
            keys: vec![StoreKey::new("c")],
            prefixes: vec![StorePrefix::new("a/")]
        }
    );
    let parts = store
        .get_partial_values(&[(StoreKey::new("a/b"), ByteRange::FULL)])
        .await
        .unwrap();
    assert_eq!(parts[0].as_deref(), Some(&b"1"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recording_store_passes_the_conformance_suite() {
    let store = Arc::new(RecordingStore::new(MemoryStore::new()));
    testing::run_conformance(Arc::clone(&store)).await;
    let stats = store.stats();
    assert!(
        stats.gets > 0 && stats.partial_reads > 0 && stats.sets > 0,
        "{stats:?}"
    );
    assert!(
        stats.bytes_read > 100 << 20 && stats.bytes_written > 100 << 20,
        "{stats:?}"
    );
}

#[tokio::test]
async fn recording_store_records_every_operation_and_byte() {
    let store = RecordingStore::new(MemoryStore::new());
    let k = StoreKey::new("a/k");
    let missing = StoreKey::new("missing");
    store.set(&k, Bytes::from(vec![1u8; 100])).await.unwrap();
    store.get(&k).await.unwrap();
    store.get(&missing).await.unwrap();
    store.size(&k).await.unwrap();
    store
        .get_partial_values(&[
            (k.clone(), ByteRange::new(0, 10)),
            (missing.clone(), ByteRange::suffix(3)),
            (k.clone(), ByteRange::suffix(5)),
        ])
        .await
        .unwrap();
    let _ = store
        .get_partial_values(&[(k.clone(), ByteRange::new(0, 1000))])
        .await
        .unwrap_err();
    store
        .set_partial_values(&[(k.clone(), 2, Bytes::from_static(b"xyz"))])
        .await
        .unwrap();
    store.erase(&missing).await.unwrap();
    store
        .erase_values(std::slice::from_ref(&missing))
        .await
        .unwrap();
    store.list().await.unwrap();
    store.list_prefix(&StorePrefix::new("a/")).await.unwrap();
    store.list_dir(&StorePrefix::root()).await.unwrap();
    store.erase_prefix(&StorePrefix::new("a/")).await.unwrap();
    let ops = store.operations();
    assert_eq!(ops.len(), 13);
    assert_eq!(
        ops[0],
        Operation::Set {
            key: k.clone(),
            bytes: 100
        }
    );
    assert_eq!(
        ops[2],
        Operation::Get {
            key: missing.clone(),
            bytes: None
        }
    );
    assert!(
        matches!(&ops[4], Operation::GetPartialValues { requests, bytes: 15 } if requests.len() == 3)
    );
    assert!(matches!(
        &ops[5],
        Operation::GetPartialValues { bytes: 0, .. }
    ));
    let stats = store.stats();
    assert_eq!(stats.gets, 2);
    assert_eq!(stats.sizes, 1);
    assert_eq!(stats.partial_reads, 2);
    assert_eq!(stats.ranges, 4);
    assert_eq!(stats.bytes_read, 100 + 15);
    assert_eq!(stats.sets, 1);
    assert_eq!(stats.partial_writes, 1);
    assert_eq!(stats.bytes_written, 103);
    assert_eq!(stats.erases, 3);
    assert_eq!(stats.lists, 3);
    assert_eq!(stats.calls(), 13);
    store.clear();
    assert_eq!(store.operations(), vec![]);
}

#[tokio::test]
async fn stores_work_as_trait_objects_and_through_wrappers() {
    let stores: Vec<Arc<dyn Store>> = vec![
        Arc::new(MemoryStore::new()),
        Arc::new(RecordingStore::new(PrefixStore::new(
            Arc::new(MemoryStore::new()) as Arc<dyn Store>,
            StorePrefix::new("p/"),
        ))),
    ];
    for store in stores {
        store
            .set(&StoreKey::new("k"), Bytes::from_static(b"v"))
            .await
            .unwrap();
        // Upcast to a single capability.
        let readable: Arc<dyn ReadableStore> = Arc::clone(&store) as _;
        assert_eq!(
            readable.get(&StoreKey::new("k")).await.unwrap().as_deref(),
            Some(&b"v"[..])
        );
        let listable: Arc<dyn ListableStore> = store;
        assert_eq!(listable.list().await.unwrap(), vec![StoreKey::new("k")]);
    }
}
