use std::sync::Arc;

use bytes::Bytes;
use zarr_store::{
    ByteRange, CachingStore, ListDir, ListableStore, MemoryStore, Operation, PrefixStore,
    ReadableStore, RecordingStore, Store, StoreKey, StorePrefix, WritableStore, testing,
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn caching_store_passes_the_conformance_suite_large_and_small() {
    testing::run_conformance(Arc::new(CachingStore::new(MemoryStore::new(), 64 << 20))).await;
    // A cache of a few entries evicts all the time.
    testing::run_conformance(Arc::new(CachingStore::new(MemoryStore::new(), 300))).await;
    // A cache too small for anything passes everything through.
    testing::run_conformance(Arc::new(CachingStore::new(MemoryStore::new(), 0))).await;
}

/// Repeated reads of values, ranges and missing keys cost the store below one read each;
/// ranges of a value cached whole are sliced from it; ranges beyond it are errors.
#[tokio::test]
async fn caching_store_answers_repeated_reads_itself() {
    let below = RecordingStore::new(MemoryStore::new());
    let shard = StoreKey::new("a/c/0");
    let value = Bytes::from((0..100u8).collect::<Vec<_>>());
    below.set(&shard, value.clone()).await.unwrap();
    below
        .set(&StoreKey::new("a/c/1"), Bytes::from_static(b"xyz"))
        .await
        .unwrap();
    below.clear();
    let store = CachingStore::new(below, 1 << 20);

    // A suffix range (a shard index), then ranges of it, twice.
    let index = vec![(shard.clone(), ByteRange::suffix(10))];
    for _ in 0..2 {
        let got = store.get_partial_values(&index).await.unwrap();
        assert_eq!(got, [Some(value.slice(90..))]);
    }
    assert_eq!(store.inner().stats().partial_reads, 1);
    // Missing keys, alone and among ranges.
    let missing = StoreKey::new("a/c/9");
    for _ in 0..2 {
        assert_eq!(store.get(&missing).await.unwrap(), None);
        let got = store
            .get_partial_values(&[(missing.clone(), ByteRange::new(0, 4))])
            .await
            .unwrap();
        assert_eq!(got, [None]);
        assert_eq!(store.size(&missing).await.unwrap(), None);
    }
    assert_eq!(store.inner().stats().gets, 1);
    assert_eq!(store.inner().stats().partial_reads, 1);

    // The whole value: then every range of it, and its size, come from the cache.
    assert_eq!(store.get(&shard).await.unwrap(), Some(value.clone()));
    let ranges = vec![
        (shard.clone(), ByteRange::new(5, 9)),
        (shard.clone(), ByteRange::from_offset(95)),
        (shard.clone(), ByteRange::suffix(3)),
        (StoreKey::new("a/c/1"), ByteRange::new(1, 2)),
    ];
    let got = store.get_partial_values(&ranges).await.unwrap();
    assert_eq!(
        got,
        [
            Some(value.slice(5..9)),
            Some(value.slice(95..)),
            Some(value.slice(97..)),
            Some(Bytes::from_static(b"y")),
        ]
    );
    assert_eq!(store.size(&shard).await.unwrap(), Some(100));
    let stats = store.inner().stats();
    assert_eq!(
        (stats.gets, stats.partial_reads, stats.sizes),
        (2, 2, 0),
        "{stats:?}"
    );
    // Only the range of a/c/1 went below, alone.
    match store.inner().operations().last().unwrap() {
        Operation::GetPartialValues { requests, .. } => {
            assert_eq!(requests, &[(StoreKey::new("a/c/1"), ByteRange::new(1, 2))]);
        }
        other => panic!("{other:?}"),
    }
    let err = store
        .get_partial_values(&[(shard.clone(), ByteRange::new(90, 101))])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, zarr_store::Error::RangeOutOfBounds { key: Some(k), size: 100, .. } if *k == shard),
        "{err}"
    );
    assert_eq!((store.hits(), store.misses()), (8, 4));
}

/// Writes and erases through the cache are seen by the next read; a write made below it is
/// not, until the cache is cleared.
#[tokio::test]
async fn caching_store_sees_its_own_writes() {
    let store = CachingStore::new(RecordingStore::new(MemoryStore::new()), 1 << 20);
    let key = StoreKey::new("g/a/c/0");
    assert_eq!(store.get(&key).await.unwrap(), None);
    store.set(&key, Bytes::from_static(b"one")).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some(&b"one"[..]));
    // The value written is cached: that read did not go below.
    assert_eq!(store.inner().stats().gets, 1);

    store
        .set_partial_values(&[(key.clone(), 1, Bytes::from_static(b"NE"))])
        .await
        .unwrap();
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some(&b"oNE"[..]));
    let suffix = [(key.clone(), ByteRange::suffix(2))];
    assert_eq!(
        store.get_partial_values(&suffix).await.unwrap(),
        [Some(Bytes::from_static(b"NE"))]
    );
    store.erase(&key).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert_eq!(store.get_partial_values(&suffix).await.unwrap(), [None]);

    store.set(&key, Bytes::from_static(b"two")).await.unwrap();
    store
        .erase_values(std::slice::from_ref(&key))
        .await
        .unwrap();
    assert_eq!(store.get(&key).await.unwrap(), None);
    store.set(&key, Bytes::from_static(b"three")).await.unwrap();
    store.get_partial_values(&suffix).await.unwrap();
    store.erase_prefix(&StorePrefix::new("g/a/")).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert_eq!(store.get_partial_values(&suffix).await.unwrap(), [None]);
    assert_eq!(store.cached_bytes(), 64, "only the missing key is cached");

    // Below the cache's back: not seen until cleared.
    store
        .inner()
        .set(&key, Bytes::from_static(b"four"))
        .await
        .unwrap();
    assert_eq!(store.get(&key).await.unwrap(), None);
    store.clear();
    assert_eq!(store.cached_bytes(), 0);
    assert_eq!(
        store.get(&key).await.unwrap().as_deref(),
        Some(&b"four"[..])
    );
}

/// The least recently used entries go first; a value larger than the capacity is never
/// cached.
#[tokio::test]
async fn caching_store_evicts_the_least_recently_used() {
    let below = RecordingStore::new(MemoryStore::new());
    for name in ["a", "b", "c", "big"] {
        let len = if name == "big" { 1000 } else { 100 };
        below
            .set(&StoreKey::new(name), Bytes::from(vec![1u8; len]))
            .await
            .unwrap();
    }
    below.clear();
    // Room for two entries of 100 bytes (+ 64 each), not three.
    let store = CachingStore::new(below, 400);
    let get = |name: &'static str| {
        let store = &store;
        async move { store.get(&StoreKey::new(name)).await.unwrap().unwrap() }
    };
    let reads_below =
        |store: &CachingStore<RecordingStore<MemoryStore>>| store.inner().stats().gets;
    get("a").await;
    get("b").await;
    get("a").await; // a is now the most recent
    assert_eq!(reads_below(&store), 2);
    get("c").await; // evicts b
    assert_eq!(store.cached_bytes(), 328);
    get("a").await;
    assert_eq!(reads_below(&store), 3);
    get("b").await;
    assert_eq!(reads_below(&store), 4);
    get("big").await;
    get("big").await;
    assert_eq!(reads_below(&store), 6);
    assert!(store.cached_bytes() <= store.capacity());
}

/// A store below that takes a while to answer, and fails its first read when asked to.
#[derive(Debug)]
struct SlowStore {
    inner: RecordingStore<MemoryStore>,
    fail_next: std::sync::atomic::AtomicBool,
}

impl SlowStore {
    async fn pause_or_fail(&self) -> zarr_store::Result<()> {
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        if self
            .fail_next
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return Err(zarr_store::Error::Io {
                operation: "read",
                path: "slow".into(),
                source: std::io::Error::other("the first read fails"),
            });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ReadableStore for SlowStore {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        self.pause_or_fail().await?;
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        self.pause_or_fail().await?;
        self.inner.get_partial_values(key_ranges).await
    }
}

/// Every task's result, or a failure after 10 s (a reader left waiting forever).
async fn joined<T>(
    tasks: impl IntoIterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<Result<T, tokio::task::JoinError>> {
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        futures::future::join_all(tasks),
    )
    .await
    .expect("a reader was left waiting")
}

/// Readers asking at once for what is on its way from the store below wait for that one
/// read; when it fails, or its reader gives up, they read it themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn caching_store_asks_once_for_what_many_read_at_once() {
    let memory = MemoryStore::new();
    let key = StoreKey::new("a/c/0");
    let value = Bytes::from(vec![5u8; 1000]);
    memory.set(&key, value.clone()).await.unwrap();
    let slow = SlowStore {
        inner: RecordingStore::new(memory),
        fail_next: false.into(),
    };
    let store = Arc::new(CachingStore::new(slow, 1 << 20));

    let reads = (0..16).map(|_| {
        let store = Arc::clone(&store);
        let key = key.clone();
        tokio::spawn(async move { store.get(&key).await.unwrap() })
    });
    for read in joined(reads).await {
        assert_eq!(read.unwrap(), Some(value.clone()));
    }
    assert_eq!(store.inner().inner.stats().gets, 1);
    assert_eq!((store.hits(), store.misses()), (15, 1));

    let index = vec![
        (key.clone(), ByteRange::suffix(16)),
        (key.clone(), ByteRange::suffix(16)),
    ];
    store.clear();
    let reads = (0..8).map(|_| {
        let store = Arc::clone(&store);
        let index = index.clone();
        tokio::spawn(async move { store.get_partial_values(&index).await.unwrap() })
    });
    for read in joined(reads).await {
        assert_eq!(
            read.unwrap(),
            [Some(value.slice(984..)), Some(value.slice(984..))]
        );
    }
    // One call below, with the range twice (as the first caller asked).
    assert_eq!(store.inner().inner.stats().partial_reads, 1);
    assert_eq!(store.inner().inner.stats().ranges, 2);

    // The leading read fails: the others read for themselves, and succeed.
    store.clear();
    store
        .inner()
        .fail_next
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let reads: Vec<_> = (0..6)
        .map(|_| {
            let store = Arc::clone(&store);
            let key = key.clone();
            tokio::spawn(async move { store.get(&key).await.is_ok() })
        })
        .collect();
    let ok = joined(reads)
        .await
        .into_iter()
        .filter(|r| *r.as_ref().unwrap())
        .count();
    assert_eq!(ok, 5);

    // The leading reader gives up: the others are not left waiting.
    store.clear();
    let leader = {
        let store = Arc::clone(&store);
        let key = key.clone();
        tokio::spawn(async move { store.get(&key).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let follower = {
        let store = Arc::clone(&store);
        let key = key.clone();
        tokio::spawn(async move { store.get(&key).await.unwrap() })
    };
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    leader.abort();
    let got = tokio::time::timeout(std::time::Duration::from_secs(5), follower)
        .await
        .expect("the follower was left waiting")
        .unwrap();
    assert_eq!(got, Some(value));
}
