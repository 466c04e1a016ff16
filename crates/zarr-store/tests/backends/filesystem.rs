use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use zarr_store::{
    BlockingStrategy, ByteRange, Error, FilesystemOptions, FilesystemStore, ListDir, ListableStore,
    ReadableStore, StoreKey, StorePrefix, WritableStore, testing,
};

fn key(s: &str) -> StoreKey {
    StoreKey::new(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filesystem_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path().join("store")).unwrap();
    testing::run_conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn durable_filesystem_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let options = FilesystemOptions::default().with_durable(true);
    let store = FilesystemStore::with_options(dir.path(), options).unwrap();
    let suite = testing::SuiteOptions::default().with_large_value_bytes(8 << 20);
    testing::run_conformance_with(Arc::new(store), &suite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spawn_blocking_filesystem_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let options = FilesystemOptions::default().with_blocking(BlockingStrategy::SpawnBlocking);
    let store = FilesystemStore::with_options(dir.path(), options).unwrap();
    testing::run_conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filesystem_store_without_nonblocking_reads_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let options = FilesystemOptions::default().with_nonblocking_reads(false);
    let store = Arc::new(FilesystemStore::with_options(dir.path(), options).unwrap());
    testing::run_conformance(Arc::clone(&store) as Arc<_>).await;
    let stats = store.io_stats();
    assert_eq!(stats.nonblocking_reads, 0, "{stats:?}");
    assert!(stats.blocking_reads > 0, "{stats:?}");
}

/// Whether this kernel and the filesystem of `dir` serve what
/// `FilesystemOptions::nonblocking_reads` needs: `openat2(RESOLVE_CACHED)` and
/// `preadv2(RWF_NOWAIT)` (probed here with the system calls themselves).
#[cfg(target_os = "linux")]
fn nonblocking_reads_supported(dir: &std::path::Path) -> bool {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let probe = dir.join("probe");
    std::fs::write(&probe, b"probe").unwrap();
    let _warm = std::fs::read(&probe).unwrap();
    let Ok(root) = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()) else {
        return false;
    };
    let Ok(fd) = rustix::fs::openat2(
        &root,
        "probe",
        OFlags::RDONLY,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::CACHED,
    ) else {
        return false;
    };
    let mut buf = [0u8; 5];
    let read = rustix::io::preadv2(
        &fd,
        &mut [std::io::IoSliceMut::new(&mut buf)],
        0,
        rustix::io::ReadWriteFlags::NOWAIT,
    );
    std::fs::remove_file(&probe).unwrap();
    read == Ok(5)
}

#[cfg(not(target_os = "linux"))]
fn nonblocking_reads_supported(_dir: &std::path::Path) -> bool {
    false
}

/// Reads of values in the page cache are served on the calling thread, with no blocking
/// operation; a value over `NONBLOCKING_READ_MAX` still goes to a blocking thread; the
/// answers are the same either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_small_reads_do_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let supported = nonblocking_reads_supported(dir.path());
    let store = FilesystemStore::new(dir.path().join("store")).unwrap();
    let small = testing::pattern(10_000, 3);
    let large = testing::pattern(zarr_store::NONBLOCKING_READ_MAX as usize + 1, 4);
    store.set(&key("a/small"), small.clone()).await.unwrap();
    store.set(&key("a/large"), large.clone()).await.unwrap();
    // Warm the caches: the page cache (both values were just written, but be sure), and the
    // kernel's record that the missing names are missing (a first lookup of a name may need
    // the disk).
    for name in ["a/small", "a/large", "a/missing", "a/none"] {
        store.get(&key(name)).await.unwrap();
    }
    store.reset_io_stats();

    assert_eq!(
        store.get(&key("a/small")).await.unwrap(),
        Some(small.clone())
    );
    assert_eq!(store.get(&key("a/missing")).await.unwrap(), None);
    let ranges = [
        (key("a/small"), ByteRange::with_length(10, 20).unwrap()),
        (key("a/large"), ByteRange::suffix(16)),
        (
            key("a/small"),
            ByteRange::with_length(9_000, 1_000).unwrap(),
        ),
        (key("a/none"), ByteRange::with_length(0, 1).unwrap()),
    ];
    let got = store.get_partial_values(&ranges).await.unwrap();
    assert_eq!(got[0].as_deref(), Some(&small[10..30]));
    assert_eq!(got[1].as_deref(), Some(&large[large.len() - 16..]));
    assert_eq!(got[2].as_deref(), Some(&small[9_000..]));
    assert_eq!(got[3], None);
    assert_eq!(store.get(&key("a/large")).await.unwrap(), Some(large));
    let error = store
        .get_partial_values(&[(key("a/small"), ByteRange::with_length(9_990, 20).unwrap())])
        .await;
    assert!(
        error.is_err(),
        "a range past the end is an error: {error:?}"
    );

    let stats = store.io_stats();
    if supported {
        // The small get and both values of the batch (a missing value and a failed range
        // are answered without blocking too, but not counted as reads); the large get
        // blocks.
        assert_eq!(stats.nonblocking_reads, 3, "{stats:?}");
        assert_eq!(stats.blocking_reads, 1, "{stats:?}");
        assert_eq!(stats.peak_blocking_ops, 1, "{stats:?}");
    } else {
        eprintln!("this filesystem does not serve RWF_NOWAIT reads: only the answers are checked");
        assert_eq!(stats.nonblocking_reads, 0, "{stats:?}");
    }
}

/// A batch of many cached values reads only about `NONBLOCKING_READ_MAX` bytes on the calling
/// thread; the rest go to blocking threads, and every answer is right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_batch_reads_only_a_bounded_amount_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let supported = nonblocking_reads_supported(dir.path());
    let store = FilesystemStore::new(dir.path().join("store")).unwrap();
    let size = 256 << 10;
    let mut requests = Vec::new();
    let mut values = Vec::new();
    for i in 0..16 {
        let k = key(&format!("v/{i}"));
        let value = testing::pattern(size, i);
        store.set(&k, value.clone()).await.unwrap();
        store.get(&k).await.unwrap();
        requests.push((k, ByteRange::FULL));
        values.push(value);
    }
    store.reset_io_stats();
    let got = store.get_partial_values(&requests).await.unwrap();
    for (got, value) in got.iter().zip(&values) {
        assert_eq!(got.as_ref(), Some(value));
    }
    let stats = store.io_stats();
    assert_eq!(
        stats.nonblocking_reads + stats.blocking_reads,
        16,
        "{stats:?}"
    );
    if supported {
        // 4 values of 256 KiB make 1 MiB.
        assert_eq!(stats.nonblocking_reads, 4, "{stats:?}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn block_in_place_falls_back_to_the_blocking_pool_on_a_current_thread_runtime() {
    let dir = tempfile::tempdir().unwrap();
    // The default strategy.
    let options = FilesystemOptions::default();
    assert_eq!(options.blocking, BlockingStrategy::BlockInPlace);
    let store = FilesystemStore::with_options(dir.path(), options).unwrap();
    // block_in_place would panic here; the store must not call it.
    store
        .set(&key("k"), Bytes::from_static(b"v"))
        .await
        .unwrap();
    assert_eq!(
        store.get(&key("k")).await.unwrap().as_deref(),
        Some(&b"v"[..])
    );
}

#[tokio::test]
async fn keys_map_to_files_under_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path()).unwrap();
    store
        .set(&key("a/b/c"), Bytes::from_static(b"abc"))
        .await
        .unwrap();
    assert_eq!(std::fs::read(dir.path().join("a/b/c")).unwrap(), b"abc");
    std::fs::write(dir.path().join("a/external"), b"made outside").unwrap();
    assert_eq!(
        store.get(&key("a/external")).await.unwrap().as_deref(),
        Some(&b"made outside"[..])
    );
    // A directory is not a value.
    assert_eq!(store.get(&key("a/b")).await.unwrap(), None);
    assert_eq!(store.size(&key("a/b")).await.unwrap(), None);
    // A value where a directory would have to be.
    assert_eq!(store.get(&key("a/b/c/d")).await.unwrap(), None);
    match store.set(&key("a/b/c/d"), Bytes::new()).await {
        Err(Error::ParentIsAValue { key, path }) => {
            assert_eq!(key, "a/b/c/d");
            assert_eq!(path, dir.path().canonicalize().unwrap().join("a/b/c"));
        }
        other => panic!("expected ParentIsAValue, got {other:?}"),
    }
    assert_eq!(std::fs::read(dir.path().join("a/b/c")).unwrap(), b"abc");
    // Erasing the last value removes the directories it leaves empty.
    store.erase(&key("a/b/c")).await.unwrap();
    assert!(!dir.path().join("a/b").exists());
    assert!(dir.path().join("a/external").exists());
}

#[test]
fn dot_dot_and_absolute_keys_cannot_be_made() {
    // The store only takes validated keys and prefixes, and these never validate.
    for bad in [
        "..",
        "../x",
        "a/../../x",
        "/etc/passwd",
        "a/./b",
        "a\\..\\x",
        "a//b",
        "x\0y",
    ] {
        assert!(bad.parse::<StoreKey>().is_err(), "{bad:?}");
        assert!(
            format!("{bad}/").parse::<StorePrefix>().is_err(),
            "{bad:?}/"
        );
    }
}

/// A store rooted inside `base/root`, with an outside directory holding a secret and links
/// pointing out of (and within) the root.
fn store_with_links() -> (tempfile::TempDir, FilesystemStore) {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(root.join("data/sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    std::fs::write(root.join("data/value"), b"inside").unwrap();
    symlink(&outside, root.join("dirlink")).unwrap();
    symlink(outside.join("secret"), root.join("filelink")).unwrap();
    symlink("../../outside", root.join("data/sub/relative")).unwrap();
    symlink(root.join("data"), root.join("innerlink")).unwrap();
    let store = FilesystemStore::new(&root).unwrap();
    (base, store)
}

fn assert_refused<T: std::fmt::Debug>(what: &str, result: Result<T, Error>) {
    match result {
        Err(Error::SymlinkRefused { .. }) => {}
        other => panic!("{what}: expected SymlinkRefused, got {other:?}"),
    }
}

#[tokio::test]
async fn symlinks_are_never_followed() {
    let (base, store) = store_with_links();
    let outside = base.path().join("outside");
    for k in [
        "dirlink/secret",
        "filelink",
        "data/sub/relative/secret",
        "innerlink/value",
    ] {
        let k = key(k);
        assert_refused("get", store.get(&k).await);
        assert_refused("size", store.size(&k).await);
        assert_refused(
            "get_partial_values",
            store
                .get_partial_values(&[(k.clone(), ByteRange::suffix(2))])
                .await,
        );
        if k.as_str() != "filelink" {
            assert_refused("erase", store.erase(&k).await);
        }
    }
    assert_refused(
        "set through a link",
        store.set(&key("dirlink/new"), Bytes::new()).await,
    );
    assert_refused(
        "set through a relative link",
        store.set(&key("data/sub/relative/new"), Bytes::new()).await,
    );
    assert!(!outside.join("new").exists());
    assert_refused(
        "set_partial_values through a link",
        store
            .set_partial_values(&[(key("dirlink/secret"), 0, Bytes::from_static(b"XX"))])
            .await,
    );
    assert_refused(
        "list_prefix",
        store.list_prefix(&StorePrefix::new("dirlink/")).await,
    );
    assert_refused(
        "list_dir",
        store.list_dir(&StorePrefix::new("innerlink/")).await,
    );
    // Listings skip links.
    assert_eq!(store.list().await.unwrap(), vec![key("data/value")]);
    assert_eq!(
        store.list_dir(&StorePrefix::root()).await.unwrap(),
        ListDir {
            keys: vec![],
            prefixes: vec![StorePrefix::new("data/")]
        }
    );
    // Replacing a link by a value replaces the link, not its target.
    store
        .set(&key("filelink"), Bytes::from_static(b"mine"))
        .await
        .unwrap();
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    assert_eq!(
        store.get(&key("filelink")).await.unwrap().as_deref(),
        Some(&b"mine"[..])
    );
    // Erasing a key that is a link removes the link, not its target.
    symlink(outside.join("secret"), store.root().join("data/filelink")).unwrap();
    store.erase(&key("data/filelink")).await.unwrap();
    assert!(std::fs::symlink_metadata(store.root().join("data/filelink")).is_err());
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    // Erasing a prefix that is a link removes the link only; erasing everything never
    // reaches outside.
    store
        .erase_prefix(&StorePrefix::new("dirlink/"))
        .await
        .unwrap();
    assert!(std::fs::symlink_metadata(store.root().join("dirlink")).is_err());
    store.erase_prefix(&StorePrefix::root()).await.unwrap();
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    assert_eq!(std::fs::read_dir(store.root()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_root_behind_a_symlink_is_resolved_once() {
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir(base.path().join("real")).unwrap();
    symlink(base.path().join("real"), base.path().join("alias")).unwrap();
    let store = FilesystemStore::new(base.path().join("alias")).unwrap();
    assert_eq!(
        store.root(),
        base.path().join("real").canonicalize().unwrap()
    );
    store
        .set(&key("k"), Bytes::from_static(b"v"))
        .await
        .unwrap();
    assert_eq!(std::fs::read(base.path().join("real/k")).unwrap(), b"v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_are_atomic_for_concurrent_readers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
    let k = key("value");
    let small = Bytes::from(vec![0xAA; 1 << 20]);
    let large = Bytes::from(vec![0xBB; 3 << 20]);
    store.set(&k, small.clone()).await.unwrap();
    let writer = {
        let (store, k, small, large) =
            (Arc::clone(&store), k.clone(), small.clone(), large.clone());
        tokio::spawn(async move {
            for i in 0..60 {
                let value = if i % 2 == 0 {
                    large.clone()
                } else {
                    small.clone()
                };
                store.set(&k, value).await.unwrap();
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let value = store
            .get(&k)
            .await
            .unwrap()
            .expect("the value never disappears");
        let uniform = (value.len() == small.len() && value.iter().all(|&b| b == 0xAA))
            || (value.len() == large.len() && value.iter().all(|&b| b == 0xBB));
        assert!(uniform, "torn read of {} bytes", value.len());
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads > 0);
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["value"]);
}

/// A write racing an erase of a prefix above its key succeeds, as if it came after the
/// erase: the erase removing its temporary file or directory makes it write again, never
/// fail with "not found".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_racing_an_erase_of_their_prefix_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FilesystemStore::new(dir.path()).unwrap());
    let prefix = StorePrefix::new("a/");
    let value = Bytes::from(vec![7u8; 256 << 10]);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let eraser = {
        let (store, prefix, stop) = (Arc::clone(&store), prefix.clone(), Arc::clone(&stop));
        tokio::spawn(async move {
            let mut erased = 0usize;
            while !stop.load(Ordering::Relaxed) {
                store.erase_prefix(&prefix).await.unwrap();
                erased += 1;
            }
            erased
        })
    };
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (store, value) = (Arc::clone(&store), value.clone());
            tokio::spawn(async move {
                let mut failed = Vec::new();
                for i in 0..300 {
                    let k = key(&format!("a/b/{w}/{i}"));
                    if let Err(err) = store.set(&k, value.clone()).await {
                        failed.push(format!("{k}: {err}"));
                    }
                }
                failed
            })
        })
        .collect();
    let mut failed = Vec::new();
    for writer in writers {
        failed.extend(writer.await.unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    assert!(eraser.await.unwrap() > 0);
    assert!(
        failed.is_empty(),
        "{} writes failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(3)]
    );
}

#[tokio::test]
async fn a_failed_write_leaves_the_old_value_and_no_temporary_file() {
    for in_place in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let options = FilesystemOptions::default().with_atomic_writes(!in_place);
        let store = FilesystemStore::with_options(dir.path(), options).unwrap();
        store
            .set(&key("d/x"), Bytes::from_static(b"x"))
            .await
            .unwrap();
        // "d" is a directory of values: it cannot be replaced by a value.
        let err = store
            .set(&key("d"), Bytes::from_static(b"value"))
            .await
            .unwrap_err();
        match &err {
            Error::Io { path, .. } => assert_eq!(path, &store.root().join("d")),
            other => panic!("in place {in_place}: expected Error::Io naming d, got {other:?}"),
        }
        // A value where a directory should be.
        let err = store
            .set(&key("d/x/y"), Bytes::from_static(b"value"))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::ParentIsAValue { .. }), "{err:?}");
        assert_eq!(
            store.get(&key("d/x")).await.unwrap().as_deref(),
            Some(&b"x"[..])
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["d"]);
    }
}

/// Erasing a prefix removes its directory whole, entries whose names are not UTF-8 (no
/// keys, made by another program) included, so that the prefix is gone from listings.
#[tokio::test]
async fn erasing_a_prefix_removes_names_that_are_no_keys() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path()).unwrap();
    store
        .set(&key("a/b/v"), Bytes::from_static(b"v"))
        .await
        .unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9");
    std::fs::write(dir.path().join("a").join(odd), b"x").unwrap();
    std::fs::create_dir(dir.path().join("a/b").join(odd)).unwrap();
    std::fs::write(dir.path().join("a/b").join(odd).join(odd), b"y").unwrap();
    store.erase_prefix(&StorePrefix::new("a/")).await.unwrap();
    assert!(!dir.path().join("a").exists());
    assert_eq!(
        store.list_dir(&StorePrefix::root()).await.unwrap().prefixes,
        Vec::<StorePrefix>::new()
    );
}

/// An in-place write to a key whose file is a FIFO is refused at once (not a hang waiting
/// for a reader, nor bytes sent to one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_writes_refuse_a_fifo() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from(0o644),
        0,
    )
    .unwrap();
    for durable in [false, true] {
        let store = FilesystemStore::with_options(
            dir.path(),
            FilesystemOptions::default()
                .with_atomic_writes(false)
                .with_durable(durable),
        )
        .unwrap();
        let f = key("f");
        let write = store.set(&f, Bytes::from_static(b"value"));
        let answer = match tokio::time::timeout(std::time::Duration::from_secs(20), write).await {
            Ok(answer) => answer,
            Err(_) => {
                // Release the blocked writer before failing, so that the test ends.
                let _reader = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                    .open(&fifo);
                panic!("the write waited for a reader");
            }
        };
        assert!(matches!(answer, Err(Error::NotAFile { .. })), "{answer:?}");
        // With a reader: still refused, and nothing sent to it.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&fifo)
            .unwrap();
        let answer = store.set(&key("f"), Bytes::from_static(b"value")).await;
        assert!(matches!(answer, Err(Error::NotAFile { .. })), "{answer:?}");
        let mut buf = [0u8; 8];
        let read = std::io::Read::read(&mut &reader, &mut buf);
        assert!(matches!(read, Ok(0)) || read.is_err(), "{read:?}");
    }
}

#[tokio::test]
async fn leftover_temporary_files_are_invisible_and_erased_with_their_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path()).unwrap();
    store
        .set(&key("a/v"), Bytes::from_static(b"v"))
        .await
        .unwrap();
    // What a crash in the middle of a write leaves behind.
    std::fs::write(dir.path().join("a/.zarr-tmp\\1.0"), b"partial").unwrap();
    assert_eq!(store.list().await.unwrap(), vec![key("a/v")]);
    store.erase_prefix(&StorePrefix::new("a/")).await.unwrap();
    assert!(!dir.path().join("a").exists());
}

#[tokio::test]
async fn many_ranges_in_one_file_cost_one_open_and_no_whole_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path()).unwrap();
    let size = 64u64 << 20;
    let value = testing::pattern(size as usize, 9);
    let k = key("shard");
    store.set(&k, value.clone()).await.unwrap();
    store.reset_io_stats();
    // 1,000 ranges of 100 bytes, 64 KiB apart: too far apart to share a read.
    let requests: Vec<_> = (0..1000u64)
        .map(|i| {
            (
                k.clone(),
                ByteRange::with_length(i * 65_536 + 7, 100).unwrap(),
            )
        })
        .collect();
    let got = store.get_partial_values(&requests).await.unwrap();
    for ((_, range), got) in requests.iter().zip(&got) {
        assert_eq!(got.as_ref().unwrap(), &range.slice(&value).unwrap());
    }
    let stats = store.io_stats();
    assert_eq!(stats.opens, 1, "{stats:?}");
    assert_eq!(stats.whole_reads, 0, "{stats:?}");
    assert_eq!(stats.positional_reads, 1000, "{stats:?}");
    assert_eq!(stats.bytes_read, 100_000, "{stats:?}");

    // Adjacent ranges (the inner chunks of a shard) share positional reads.
    store.reset_io_stats();
    let adjacent: Vec<_> = (0..1000u64)
        .map(|i| {
            (
                k.clone(),
                ByteRange::with_length((1 << 20) + i * 100, 100).unwrap(),
            )
        })
        .collect();
    let got = store.get_partial_values(&adjacent).await.unwrap();
    for ((_, range), got) in adjacent.iter().zip(&got) {
        assert_eq!(got.as_ref().unwrap(), &range.slice(&value).unwrap());
    }
    let stats = store.io_stats();
    assert_eq!((stats.opens, stats.whole_reads), (1, 0), "{stats:?}");
    assert_eq!(stats.positional_reads, 1, "{stats:?}");
    assert_eq!(stats.bytes_read, 100_000, "{stats:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_io_does_not_run_on_the_async_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path()).unwrap();
    let k = key("big");
    store.set(&k, testing::pattern(16 << 20, 1)).await.unwrap();
    // On a single-threaded runtime, the other task runs while the read is in flight. A read
    // on the async thread would finish inside its first poll, before the other task, every
    // time; a read on the blocking pool can also finish first when this thread is
    // descheduled between handing it over and polling it (a loaded CI machine), so one
    // attempt of five must show the other task first.
    let mut outcomes = Vec::new();
    for _ in 0..5 {
        let order = AtomicUsize::new(0);
        let (read_done, other_done) = tokio::join!(
            async {
                store.get(&k).await.unwrap().unwrap();
                order.fetch_add(1, Ordering::SeqCst)
            },
            async { order.fetch_add(1, Ordering::SeqCst) },
        );
        if (other_done, read_done) == (0, 1) {
            return;
        }
        outcomes.push((other_done, read_done));
    }
    panic!("the read finished before the other task every time: {outcomes:?}");
}

#[test]
fn works_without_a_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::new(dir.path()).unwrap();
    futures::executor::block_on(async {
        store
            .set(&key("k"), Bytes::from_static(b"v"))
            .await
            .unwrap();
        assert_eq!(
            store.get(&key("k")).await.unwrap().as_deref(),
            Some(&b"v"[..])
        );
    });
}

/// Hundreds of concurrent reads from many tasks run at most `max_concurrency` file operations
/// at once (so they do not start hundreds of blocking threads), and all succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reads_are_bounded_by_max_concurrency() {
    for strategy in [
        BlockingStrategy::BlockInPlace,
        BlockingStrategy::SpawnBlocking,
    ] {
        concurrent_reads_bounded(strategy).await;
    }
}

async fn concurrent_reads_bounded(strategy: BlockingStrategy) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        FilesystemStore::with_options(
            dir.path(),
            FilesystemOptions::default()
                .with_max_concurrency(3)
                .with_blocking(strategy),
        )
        .unwrap(),
    );
    for i in 0..20 {
        store
            .set(&key(&format!("v/{i}")), Bytes::from(vec![i as u8; 2 << 20]))
            .await
            .unwrap();
    }
    store.reset_io_stats();
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let value = store.get(&key(&format!("v/{}", i % 20))).await.unwrap();
                assert_eq!(value.unwrap()[0], (i % 20) as u8);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let stats = store.io_stats();
    assert_eq!(stats.whole_reads, 200, "{stats:?}");
    assert!(
        (1..=3).contains(&stats.peak_blocking_ops),
        "{strategy:?}: at most 3 at once: {stats:?}"
    );
}

/// Inside `inline::allow_blocking_here`, a write (or erase) is done during its first poll, on
/// the polling thread; outside it, or when no concurrency permit is free, it goes to the
/// blocking pool as before and the first poll returns `Pending`.
#[test]
fn writes_run_on_a_thread_that_allows_blocking() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use zarr_store::inline::allow_blocking_here;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::with_options(
        dir.path(),
        FilesystemOptions::default().with_max_concurrency(1),
    )
    .unwrap();
    let _entered = runtime.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let value = testing::pattern(1 << 20, 3);

    let (inline, pool, first, second) = (key("a/inline"), key("a/pool"), key("a/1"), key("a/2"));
    let mut set = std::pin::pin!(store.set(&inline, value.clone()));
    let polled = allow_blocking_here(|| set.as_mut().poll(&mut cx));
    assert!(matches!(polled, Poll::Ready(Ok(()))), "{polled:?}");
    assert_eq!(std::fs::read(dir.path().join("a/inline")).unwrap(), value);
    let mut erase = std::pin::pin!(store.erase(&inline));
    let polled = allow_blocking_here(|| erase.as_mut().poll(&mut cx));
    assert!(matches!(polled, Poll::Ready(Ok(()))), "{polled:?}");
    assert!(!dir.path().join("a/inline").exists());
    assert_eq!(store.io_stats().inline_ops, 2);

    // Not allowed: the pool does it. (Its first poll is usually `Pending`, but a pool thread
    // may finish the write before the poll looks, so only the counter is checked.)
    let mut set = std::pin::pin!(store.set(&pool, value.clone()));
    if set.as_mut().poll(&mut cx).is_pending() {
        runtime.block_on(set).unwrap();
    }
    assert_eq!(std::fs::read(dir.path().join("a/pool")).unwrap(), value);
    assert_eq!(store.io_stats().inline_ops, 2);

    // Allowed, but the one permit is held by a write in flight: this one does not run beside
    // it. A 32 MiB write is almost always still in flight when the second is polled; if it
    // has finished, the second may run inline, but two file operations never run at once.
    let big = testing::pattern(32 << 20, 5);
    let mut first = std::pin::pin!(store.set(&first, big.clone()));
    let first_done = first.as_mut().poll(&mut cx).is_ready();
    let mut second = std::pin::pin!(store.set(&second, value.clone()));
    let second_done = allow_blocking_here(|| second.as_mut().poll(&mut cx)).is_ready();
    runtime
        .block_on(async {
            if !first_done {
                first.await?;
            }
            if !second_done {
                second.await?;
            }
            Ok::<_, zarr_store::Error>(())
        })
        .unwrap();
    assert_eq!(std::fs::read(dir.path().join("a/1")).unwrap(), big);
    assert_eq!(std::fs::read(dir.path().join("a/2")).unwrap(), value);
    let stats = store.io_stats();
    assert_eq!(stats.peak_blocking_ops, 1, "{stats:?}");
    assert_eq!(stats.inline_ops, 2 + u64::from(second_done), "{stats:?}");
}

fn in_place_store(root: &std::path::Path) -> FilesystemStore {
    let options = FilesystemOptions::default().with_atomic_writes(false);
    FilesystemStore::with_options(root, options).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_place_filesystem_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let suite = testing::SuiteOptions::default().with_atomic_writes(false);
    testing::run_conformance_with(Arc::new(in_place_store(dir.path())), &suite).await;
    let durable = FilesystemOptions::default()
        .with_atomic_writes(false)
        .with_durable(true);
    let dir = tempfile::tempdir().unwrap();
    let store = FilesystemStore::with_options(dir.path(), durable).unwrap();
    let suite = suite.with_large_value_bytes(8 << 20);
    testing::run_conformance_with(Arc::new(store), &suite).await;
}

#[tokio::test]
async fn in_place_writes_reuse_the_file_and_leave_no_temporary_file() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let atomic = FilesystemStore::new(dir.path()).unwrap();
    let in_place = in_place_store(dir.path());
    let k = key("c/0/1");
    atomic
        .set(&k, Bytes::from_static(b"first value"))
        .await
        .unwrap();
    let inode = || std::fs::metadata(dir.path().join("c/0/1")).unwrap().ino();
    let before = inode();
    in_place
        .set(&k, Bytes::from_static(b"short"))
        .await
        .unwrap();
    assert_eq!(inode(), before, "an in-place write keeps the file");
    assert_eq!(
        in_place.get(&k).await.unwrap().as_deref(),
        Some(&b"short"[..]),
        "the longer old value is cut off"
    );
    // The atomic store replaces the file (the check above can tell the two apart).
    atomic.set(&k, Bytes::from_static(b"again")).await.unwrap();
    assert_ne!(inode(), before);
    // New directories are created as needed; nothing but the values is left.
    in_place
        .set(&key("new/deep/value"), Bytes::from_static(b"v"))
        .await
        .unwrap();
    let mut keys = in_place.list().await.unwrap();
    keys.sort();
    assert_eq!(keys, vec![k.clone(), key("new/deep/value")]);
    let names: Vec<_> = std::fs::read_dir(dir.path().join("c/0"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["1"]);
}

#[tokio::test]
async fn in_place_writes_never_follow_links() {
    let (base, store) = store_with_links();
    let store = in_place_store(store.root());
    let outside = base.path().join("outside");
    for k in ["dirlink/new", "data/sub/relative/new", "innerlink/value"] {
        assert_refused(k, store.set(&key(k), Bytes::from_static(b"X")).await);
    }
    // A link as the value itself is refused too: writing in place would write its target.
    assert_refused(
        "filelink",
        store.set(&key("filelink"), Bytes::from_static(b"X")).await,
    );
    assert_refused(
        "set_partial_values through a link",
        store
            .set_partial_values(&[(key("filelink"), 0, Bytes::from_static(b"XX"))])
            .await,
    );
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    assert!(!outside.join("new").exists());
    assert_eq!(
        std::fs::read(base.path().join("root/data/value")).unwrap(),
        b"inside"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_place_writes_of_one_key_through_one_store_do_not_interleave() {
    const WRITERS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(in_place_store(dir.path()));
    let k = key("value");
    // Lengths differ, so that two interleaved writes leave a mixed value.
    let len = |writer: usize, round: usize| (256 << 10) + (writer * 16 + round) * 4099;
    let barrier = Arc::new(tokio::sync::Barrier::new(WRITERS));
    // What the checks found, asserted at the end (a panic between the barriers would leave
    // the other writers waiting forever).
    let wrong = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..WRITERS)
        .map(|i| {
            let (store, k) = (Arc::clone(&store), k.clone());
            let (barrier, wrong) = (Arc::clone(&barrier), Arc::clone(&wrong));
            tokio::spawn(async move {
                for round in 0..16 {
                    // All writers write at once, then one checks what is left.
                    let byte = u8::try_from(i).unwrap();
                    let written = store.set(&k, Bytes::from(vec![byte; len(i, round)])).await;
                    if barrier.wait().await.is_leader() {
                        let value = store.get(&k).await.unwrap().unwrap_or_default();
                        let whole = value.first().is_some_and(|&writer| {
                            value.len() == len(usize::from(writer), round)
                                && value.iter().all(|&b| b == writer)
                        });
                        if !whole {
                            wrong.lock().unwrap().push(format!(
                                "round {round}: {} bytes, not one writer's value",
                                value.len()
                            ));
                        }
                    }
                    if let Err(err) = written {
                        wrong.lock().unwrap().push(format!("writer {i}: {err}"));
                    }
                    barrier.wait().await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let wrong = wrong.lock().unwrap();
    assert!(wrong.is_empty(), "{wrong:?}");
}
