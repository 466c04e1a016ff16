use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use zarr_store::{
    ByteRange, Error, ListableStore, MemoryStore, Operation, ReadableStore, RecordingStore,
    StoreKey, StorePrefix, WritableStore, ZipOptions, ZipStore, testing,
};

fn key(name: &str) -> StoreKey {
    StoreKey::new(name)
}

/// Where the central directory record of entry `name` starts in `archive`.
fn central_record(archive: &[u8], name: &str) -> usize {
    (0..archive.len() - 46)
        .find(|&i| {
            archive[i..i + 4] == *b"PK\x01\x02"
                && archive[i + 46..].starts_with(name.as_bytes())
                && u16::from_le_bytes([archive[i + 28], archive[i + 29]]) as usize == name.len()
        })
        .unwrap_or_else(|| panic!("no central directory record for {name}"))
}

/// Where the local header of entry `name` starts in `archive`.
fn local_header(archive: &[u8], name: &str) -> usize {
    let record = central_record(archive, name);
    u32::from_le_bytes(archive[record + 42..record + 46].try_into().unwrap()) as usize
}

/// Write `bytes` to `path`, open them as an archive and read `name`, which must fail.
async fn read_fails(path: &Path, bytes: &[u8], name: &str) -> Error {
    std::fs::write(path, bytes).unwrap();
    ZipStore::open(path)
        .unwrap()
        .get(&key(name))
        .await
        .unwrap_err()
}

async fn write_archive(path: &Path, options: ZipOptions, values: &[(&str, &[u8])]) {
    let store = ZipStore::create_with(path, options).unwrap();
    for (name, value) in values {
        store
            .set(&key(name), Bytes::copy_from_slice(value))
            .await
            .unwrap();
    }
    store.finish().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn zip_store_passes_the_conformance_suite_and_reopens_with_the_same_contents() {
    for options in [ZipOptions::new(), ZipOptions::new().with_force_zip64(true)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("suite.zip");
        let store = Arc::new(ZipStore::create_with(&path, options).unwrap());
        let suite = testing::SuiteOptions::default().with_large_value_bytes(3 << 20);
        testing::run_conformance_with(Arc::clone(&store), &suite).await;
        store
            .set(&key("after/the/suite"), Bytes::from_static(b"last"))
            .await
            .unwrap();
        let keys = store.list().await.unwrap();
        let mut values = Vec::new();
        for k in &keys {
            values.push(store.get(k).await.unwrap().unwrap());
        }
        drop(store); // the drop writes the central directory

        let reopened = ZipStore::open(&path).unwrap();
        assert!(!reopened.is_writable());
        assert_eq!(reopened.list().await.unwrap(), keys, "{options:?}");
        for (k, v) in keys.iter().zip(&values) {
            assert_eq!(reopened.get(k).await.unwrap().as_ref(), Some(v), "{k}");
        }
    }
}

#[tokio::test]
async fn an_archive_reads_by_range_lists_and_refuses_writes_when_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    let chunk: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    write_archive(
        &path,
        ZipOptions::new(),
        &[
            ("zarr.json", b"{\"zarr_format\":3}"),
            ("arr/zarr.json", b"{}"),
            ("arr/c/0/0", &chunk),
            ("arr/c/0/1", b""),
            ("grp/sub/zarr.json", b"{}"),
        ],
    )
    .await;
    let store = ZipStore::open(&path).unwrap();
    let parts = store
        .get_partial_values(&[
            (key("arr/c/0/0"), ByteRange::new(100, 200)),
            (key("arr/c/0/0"), ByteRange::suffix(16)),
            (key("missing"), ByteRange::FULL),
            (key("arr/c/0/1"), ByteRange::FULL),
            (key("zarr.json"), ByteRange::from_offset(2)),
        ])
        .await
        .unwrap();
    assert_eq!(parts[0].as_deref(), Some(&chunk[100..200]));
    assert_eq!(parts[1].as_deref(), Some(&chunk[10_000 - 16..]));
    assert_eq!(parts[2], None);
    assert_eq!(parts[3].as_deref(), Some(&b""[..]));
    assert_eq!(parts[4].as_deref(), Some(&b"zarr_format\":3}"[..]));
    assert_eq!(store.size(&key("arr/c/0/0")).await.unwrap(), Some(10_000));
    let err = store
        .get_partial_values(&[(key("arr/c/0/0"), ByteRange::new(9_000, 10_001))])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::RangeOutOfBounds { key: Some(k), size: 10_000, .. } if k.as_str() == "arr/c/0/0"),
        "{err}"
    );

    let root = store.list_dir(&StorePrefix::root()).await.unwrap();
    assert_eq!(root.keys, vec![key("zarr.json")]);
    assert_eq!(
        root.prefixes,
        vec![StorePrefix::new("arr/"), StorePrefix::new("grp/")]
    );
    assert_eq!(
        store
            .list_prefix(&StorePrefix::new("arr/c/"))
            .await
            .unwrap(),
        vec![key("arr/c/0/0"), key("arr/c/0/1")]
    );

    let err = store.set(&key("x"), Bytes::new()).await.unwrap_err();
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    let err = store.erase(&key("zarr.json")).await.unwrap_err();
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    // `finish` of a read-only store does nothing.
    store.finish().unwrap();
}

#[tokio::test]
async fn appending_replaces_erases_and_keeps_what_it_does_not_touch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    write_archive(
        &path,
        ZipOptions::new(),
        &[
            ("keep", b"kept"),
            ("replace", b"old"),
            ("erase/me", b"gone"),
        ],
    )
    .await;
    // An archive comment survives the rewrite.
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 2..].copy_from_slice(&7u16.to_le_bytes());
    bytes.extend_from_slice(b"comment");
    std::fs::write(&path, &bytes).unwrap();

    let store = ZipStore::append(&path).unwrap();
    assert_eq!(
        store.get(&key("replace")).await.unwrap().as_deref(),
        Some(&b"old"[..])
    );
    store
        .set(&key("replace"), Bytes::from_static(b"new value"))
        .await
        .unwrap();
    store
        .erase_prefix(&StorePrefix::new("erase/"))
        .await
        .unwrap();
    store
        .set(&key("added"), Bytes::from_static(b"more"))
        .await
        .unwrap();
    store.finish().unwrap();
    // Writing after `finish` is fine: the drop completes the archive again.
    store
        .set(&key("late"), Bytes::from_static(b"after finish"))
        .await
        .unwrap();
    drop(store);

    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.ends_with(b"comment"));
    let store = ZipStore::open(&path).unwrap();
    assert_eq!(
        store.list().await.unwrap(),
        vec![key("added"), key("keep"), key("late"), key("replace")]
    );
    for (k, v) in [
        ("added", &b"more"[..]),
        ("keep", b"kept"),
        ("late", b"after finish"),
        ("replace", b"new value"),
    ] {
        assert_eq!(store.get(&key(k)).await.unwrap().as_deref(), Some(v), "{k}");
    }
}

#[tokio::test]
async fn create_refuses_an_existing_file_and_append_refuses_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    std::fs::write(&path, b"not a zip archive at all").unwrap();
    let err = ZipStore::create(&path).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    let err = ZipStore::append(&path).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("no end of central directory")),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"not a zip archive at all");
    // An empty file, or none, becomes an empty archive.
    let empty = dir.path().join("empty.zip");
    drop(ZipStore::append(&empty).unwrap());
    let store = ZipStore::open(&empty).unwrap();
    assert!(store.list().await.unwrap().is_empty());
    assert_eq!(std::fs::read(&empty).unwrap().len(), 22);
}

/// Mark entry `name` of the archive at `path` (stored, holding deflate data) deflated, with
/// the size and CRC-32 of `original`; the archive's new bytes and the entry's central
/// directory record.
fn mark_deflated(path: &Path, name: &str, original: &[u8]) -> (Vec<u8>, usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let record = central_record(&bytes, name);
    bytes[record + 10..record + 12].copy_from_slice(&8u16.to_le_bytes());
    bytes[record + 16..record + 20].copy_from_slice(&crc32fast::hash(original).to_le_bytes());
    bytes[record + 24..record + 28].copy_from_slice(&(original.len() as u32).to_le_bytes());
    std::fs::write(path, &bytes).unwrap();
    (bytes, record)
}

#[tokio::test]
async fn deflated_entries_inflate_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    let original: Vec<u8> = b"a fairly repetitive value ".repeat(400);
    let mut deflater =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    deflater.write_all(&original).unwrap();
    let compressed = deflater.finish().unwrap();
    write_archive(
        &path,
        ZipOptions::new(),
        &[("deflated", &compressed), ("stored", b"plain")],
    )
    .await;
    let (bytes, record) = mark_deflated(&path, "deflated", &original);

    let store = ZipStore::open(&path).unwrap();
    assert_eq!(
        store.size(&key("deflated")).await.unwrap(),
        Some(original.len() as u64)
    );
    assert_eq!(
        store.get(&key("deflated")).await.unwrap().as_deref(),
        Some(&original[..])
    );
    let parts = store
        .get_partial_values(&[
            (key("deflated"), ByteRange::new(26, 52)),
            (key("deflated"), ByteRange::suffix(6)),
        ])
        .await
        .unwrap();
    assert_eq!(parts[0].as_deref(), Some(&original[26..52]));
    assert_eq!(parts[1].as_deref(), Some(&b"value "[..]));

    // A recorded size smaller than what the data inflates to.
    let mut short = bytes.clone();
    short[record + 24..record + 28].copy_from_slice(&100u32.to_le_bytes());
    let err = read_fails(&path, &short, "deflated").await;
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("more than the recorded 100")),
        "{err}"
    );
    // A recorded size that deflate cannot reach: refused before any allocation.
    let mut huge = bytes.clone();
    huge[record + 24..record + 28].copy_from_slice(&(u32::MAX - 1).to_le_bytes());
    let err = read_fails(&path, &huge, "deflated").await;
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("more than deflate can expand to")),
        "{err}"
    );
    // A wrong CRC-32.
    let mut bad_crc = bytes.clone();
    bad_crc[record + 16] ^= 1;
    let err = read_fails(&path, &bad_crc, "deflated").await;
    assert!(
        matches!(&err, Error::ZipChecksumMismatch { entry, .. } if entry == "deflated"),
        "{err}"
    );
    // Corrupt deflate data.
    let mut corrupt = bytes.clone();
    let data = local_header(&corrupt, "deflated") + 30 + "deflated".len();
    corrupt[data] = 0xFF; // block type 3 does not exist
    std::fs::write(&path, &corrupt).unwrap();
    let store = ZipStore::open(&path).unwrap();
    let err = store.get(&key("deflated")).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("\"deflated\": deflate data")),
        "{err}"
    );
    // The rest of the archive stays readable.
    assert_eq!(
        store.get(&key("stored")).await.unwrap().as_deref(),
        Some(&b"plain"[..])
    );
}

/// Read all of `reader` in reads of at most `step` bytes.
fn read_in_steps(reader: &mut impl std::io::Read, step: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; step];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// The store's error inside an `io::Error` from a [`ZipEntryReader`](zarr_store::ZipEntryReader).
fn store_error(err: std::io::Error) -> Error {
    *err.into_inner()
        .expect("a store error inside")
        .downcast::<Error>()
        .expect("a zarr_store::Error")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_stream_through_a_reader_and_are_checked_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    // About 3 MiB that deflate shrinks only somewhat, so the reader refills its 256 KiB
    // input buffer several times.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let original: Vec<u8> = (0..3_000_000)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 3 == 0 { b'a' } else { (x % 40) as u8 }
        })
        .collect();
    let mut deflater = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    deflater.write_all(&original).unwrap();
    let compressed = deflater.finish().unwrap();
    assert!(compressed.len() > 4 * (256 << 10), "{}", compressed.len());
    let stored: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    write_archive(
        &path,
        ZipOptions::new(),
        &[("deflated", &compressed), ("stored", &stored)],
    )
    .await;
    let (bytes, record) = mark_deflated(&path, "deflated", &original);

    let store = ZipStore::open(&path).unwrap();
    assert!(store.reader(&key("absent")).await.unwrap().is_none());
    for step in [7, 4096, 1 << 20] {
        let mut reader = store.reader(&key("deflated")).await.unwrap().unwrap();
        assert_eq!(reader.size(), original.len() as u64);
        assert!(
            read_in_steps(&mut reader, step).unwrap() == original,
            "step {step}"
        );
        let mut reader = store.reader(&key("stored")).await.unwrap().unwrap();
        assert_eq!(
            read_in_steps(&mut reader, step).unwrap(),
            stored,
            "step {step}"
        );
    }
    // The same through an archive kept in another store.
    let memory = MemoryStore::new();
    memory
        .set(&key("a.zip"), Bytes::from(bytes.clone()))
        .await
        .unwrap();
    let nested = ZipStore::from_store(Arc::new(memory), key("a.zip"))
        .await
        .unwrap();
    let mut reader = nested.reader(&key("deflated")).await.unwrap().unwrap();
    assert!(read_in_steps(&mut reader, 5000).unwrap() == original);

    // Damage: each found by the stream, as the last read's error.
    let reopen = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        ZipStore::open(&path).unwrap()
    };
    let stream_error = |store: ZipStore, name: &'static str| async move {
        let mut reader = store.reader(&key(name)).await.unwrap().unwrap();
        store_error(read_in_steps(&mut reader, 65536).unwrap_err())
    };
    let mut bad_crc = bytes.clone();
    bad_crc[record + 16] ^= 1;
    let err = stream_error(reopen(&bad_crc), "deflated").await;
    assert!(
        matches!(&err, Error::ZipChecksumMismatch { entry, .. } if entry == "deflated"),
        "{err}"
    );
    let stored_record = central_record(&bytes, "stored");
    let mut bad_stored_crc = bytes.clone();
    bad_stored_crc[stored_record + 17] ^= 1;
    let err = stream_error(reopen(&bad_stored_crc), "stored").await;
    assert!(
        matches!(&err, Error::ZipChecksumMismatch { entry, .. } if entry == "stored"),
        "{err}"
    );
    let mut short = bytes.clone();
    short[record + 24..record + 28].copy_from_slice(&100_000u32.to_le_bytes());
    let err = stream_error(reopen(&short), "deflated").await;
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("more than the recorded 100000")),
        "{err}"
    );
    let mut long = bytes.clone();
    long[record + 24..record + 28].copy_from_slice(&(original.len() as u32 + 1).to_le_bytes());
    let err = stream_error(reopen(&long), "deflated").await;
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("not the recorded")),
        "{err}"
    );
    let mut corrupt = bytes.clone();
    let data = local_header(&corrupt, "deflated") + 30 + "deflated".len();
    corrupt[data] = 0xFF; // block type 3 does not exist
    let err = stream_error(reopen(&corrupt), "deflated").await;
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("deflate data is corrupt")),
        "{err}"
    );
    // Compressed data cut short: the recorded compressed size ends mid-stream.
    let mut cut = bytes.clone();
    let half = (compressed.len() as u32 / 2).to_le_bytes();
    cut[record + 20..record + 24].copy_from_slice(&half);
    let header = local_header(&cut, "deflated");
    cut[header + 18..header + 22].copy_from_slice(&half);
    let err = stream_error(reopen(&cut), "deflated").await;
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("ends after")),
        "{err}"
    );
}

#[tokio::test]
async fn corrupt_entries_are_typed_errors_and_the_rest_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    let values: [(&str, &[u8]); 4] = [
        ("crc", b"checked on whole reads"),
        ("far", b"header elsewhere"),
        ("locked", b"secret"),
        ("good", b"fine"),
    ];
    write_archive(&path, ZipOptions::new(), &values).await;
    let mut bytes = std::fs::read(&path).unwrap();
    // A flipped data byte.
    let data = local_header(&bytes, "crc") + 30 + 3;
    bytes[data] ^= 0x20;
    // A header offset past the entries.
    let far = central_record(&bytes, "far");
    bytes[far + 42..far + 46].copy_from_slice(&1_000_000u32.to_le_bytes());
    // The encryption flag, and bzip2.
    let locked = central_record(&bytes, "locked");
    bytes[locked + 8] |= 1;
    std::fs::write(&path, &bytes).unwrap();

    let store = ZipStore::open(&path).unwrap();
    let err = store.get(&key("crc")).await.unwrap_err();
    assert!(
        matches!(&err, Error::ZipChecksumMismatch { entry, .. } if entry == "crc"),
        "{err}"
    );
    // A range read cannot be checked, and returns the bytes as stored.
    let part = store
        .get_partial_values(&[(key("crc"), ByteRange::new(0, 7))])
        .await
        .unwrap();
    assert_eq!(part[0].as_deref(), Some(&b"Checked"[..]));
    let err = store.get(&key("far")).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("\"far\"") && reason.contains("past the entries' end")),
        "{err}"
    );
    let err = store.get(&key("locked")).await.unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedZipEntry { entry, reason, .. } if entry == "locked" && reason.contains("encrypted")),
        "{err}"
    );
    let method = central_record(&bytes, "locked");
    bytes[method + 8] &= !1;
    bytes[method + 10..method + 12].copy_from_slice(&12u16.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let store = ZipStore::open(&path).unwrap();
    let err = store.get(&key("locked")).await.unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedZipEntry { reason, .. } if reason.contains("bzip2")),
        "{err}"
    );
    assert_eq!(
        store.get(&key("good")).await.unwrap().as_deref(),
        Some(&b"fine"[..])
    );

    // A local header naming another entry.
    let header = local_header(&bytes, "good");
    bytes[header + 30] = b'G';
    let err = read_fails(&path, &bytes, "good").await;
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("names it \"Good\"")),
        "{err}"
    );

    // Truncated archives do not open.
    for len in [0, 10, bytes.len() - 30, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        let err = ZipStore::open(&path).unwrap_err();
        assert!(matches!(err, Error::InvalidZip { .. }), "{len}: {err}");
    }
}

#[tokio::test]
async fn names_that_are_not_keys_are_hidden_but_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    write_archive(
        &path,
        ZipOptions::new(),
        &[("dir/x", b""), ("a/value", b"v"), ("zzz/x", b"")],
    )
    .await;
    // Rename two entries (central and local, same length) into a directory and an escape.
    let mut bytes = std::fs::read(&path).unwrap();
    for (from, to) in [("dir/x", "dir//"), ("zzz/x", "../zz")] {
        let record = central_record(&bytes, from);
        let header = local_header(&bytes, from);
        bytes[record + 46..record + 51].copy_from_slice(to.as_bytes());
        bytes[header + 30..header + 35].copy_from_slice(to.as_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    let store = ZipStore::append(&path).unwrap();
    assert_eq!(store.list().await.unwrap(), vec![key("a/value")]);
    store
        .set(&key("b"), Bytes::from_static(b"w"))
        .await
        .unwrap();
    store.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    central_record(&bytes, "dir//");
    central_record(&bytes, "../zz");
    assert_eq!(
        ZipStore::open(&path).unwrap().list().await.unwrap(),
        vec![key("a/value"), key("b")]
    );
}

#[tokio::test]
async fn an_archive_in_another_store_costs_few_requests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    let values: Vec<(String, Vec<u8>)> = (0..50)
        .map(|i| (format!("c/{i}"), vec![i as u8; 1000 + i]))
        .collect();
    let borrowed: Vec<(&str, &[u8])> = values
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    write_archive(&path, ZipOptions::new(), &borrowed).await;
    let memory = MemoryStore::new();
    let archive_key = key("bucket/data.zarr.zip");
    memory
        .set(&archive_key, Bytes::from(std::fs::read(&path).unwrap()))
        .await
        .unwrap();
    let recording = Arc::new(RecordingStore::new(memory));
    let store = ZipStore::from_store(
        Arc::clone(&recording) as Arc<dyn ReadableStore>,
        archive_key.clone(),
    )
    .await
    .unwrap();
    // Opening: the size, then one read of the tail, which holds this small directory.
    assert_eq!(recording.stats().calls(), 2);
    assert_eq!(store.list().await.unwrap().len(), 50);
    recording.clear();
    let wanted: Vec<(StoreKey, ByteRange)> = (10..30)
        .map(|i| (key(&format!("c/{i}")), ByteRange::FULL))
        .collect();
    let got = store.get_partial_values(&wanted).await.unwrap();
    for (i, value) in (10..30).zip(&got) {
        assert_eq!(value.as_deref(), Some(&values[i].1[..]));
    }
    // Twenty entries: one call for their local headers, one for their data.
    let ops = recording.operations();
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert!(
        ops.iter()
            .all(|op| matches!(op, Operation::GetPartialValues { .. })),
        "{ops:?}"
    );
    recording.clear();
    store.get_partial_values(&wanted).await.unwrap();
    assert_eq!(recording.stats().calls(), 1, "headers are read once");

    let err = ZipStore::from_store(
        Arc::clone(&recording) as Arc<dyn ReadableStore>,
        key("nothing/here.zip"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidZip { reason, .. } if reason.contains("no value")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_65535_entries_use_zip64_end_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.zip");
    let store = ZipStore::create(&path).unwrap();
    let n = 66_000u32;
    for i in 0..n {
        store
            .set(
                &key(&format!("c/{i}")),
                Bytes::copy_from_slice(&i.to_le_bytes()),
            )
            .await
            .unwrap();
    }
    store.finish().unwrap();
    drop(store);
    let bytes = std::fs::read(&path).unwrap();
    let n_bytes = bytes.len();
    // The classic end record says "see the ZIP64 record".
    assert_eq!(&bytes[n_bytes - 22..n_bytes - 18], b"PK\x05\x06");
    assert_eq!(&bytes[n_bytes - 14..n_bytes - 12], &[0xFF, 0xFF]);
    assert_eq!(&bytes[n_bytes - 42..n_bytes - 38], b"PK\x06\x07");
    let store = ZipStore::open(&path).unwrap();
    assert_eq!(store.list().await.unwrap().len(), n as usize);
    for i in [0, 65_535, 65_536, n - 1] {
        assert_eq!(
            store.get(&key(&format!("c/{i}"))).await.unwrap().as_deref(),
            Some(&i.to_le_bytes()[..])
        );
    }
}

/// Two small archives (classic and with ZIP64 records everywhere), built once.
fn base_archives() -> &'static [Vec<u8>; 2] {
    static ARCHIVES: std::sync::OnceLock<[Vec<u8>; 2]> = std::sync::OnceLock::new();
    ARCHIVES.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let build = |name: &str, options: ZipOptions| {
            let path = dir.path().join(name);
            rt.block_on(write_archive(
                &path,
                options,
                &[
                    ("zarr.json", b"{\"zarr_format\":3,\"node_type\":\"group\"}"),
                    ("a/c/0", &[1u8; 300]),
                    ("a/c/1", b"xyz"),
                    ("b", b""),
                ],
            ));
            std::fs::read(&path).unwrap()
        };
        [
            build("plain.zip", ZipOptions::new()),
            build("zip64.zip", ZipOptions::new().with_force_zip64(true)),
        ]
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Damaged archives (bytes changed anywhere, or cut short) open and read as typed
    /// errors or as data, never as a panic or an unbounded allocation.
    #[test]
    fn damaged_archives_never_panic(
        zip64 in proptest::bool::ANY,
        flips in proptest::collection::vec(
            (proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()),
            1..6,
        ),
        cut in proptest::option::of(proptest::prelude::any::<proptest::sample::Index>()),
    ) {
        let mut bytes = base_archives()[usize::from(zip64)].clone();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("damaged.zip");
        std::fs::write(&path, &bytes).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let Ok(store) = ZipStore::open(&path) else {
                return;
            };
            for key in store.list().await.unwrap() {
                let _ = store.get(&key).await;
                let _ = store
                    .get_partial_values(&[(key.clone(), ByteRange::suffix(2))])
                    .await;
            }
            // Appending to a damaged archive that opens must not panic either.
            drop(store);
            if let Ok(store) = ZipStore::append(&path) {
                let _ = store.set(&key("new"), Bytes::from_static(b"n")).await;
                let _ = store.finish();
            }
        });
    }
}
