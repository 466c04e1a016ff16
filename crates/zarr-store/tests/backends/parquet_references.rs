//! `ParquetReferences`: kerchunk's Parquet reference sets (fsspec's `LazyReferenceMapper`
//! layout), with record files written here by the `parquet` crate. The interop test in
//! zarr-array reads sets that fsspec itself writes, with both of its engines.

use std::sync::Arc;

use bytes::Bytes;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use serde_json::{Value, json};
use zarr_store::{
    Error, ListableStore, MemoryStore, ParquetReferences, ReadableStore, RecordingStore, Reference,
    ReferenceStore, StoreKey, StorePrefix, WritableStore,
};

/// One row of a record file: `path`, `offset`, `size`, `raw`.
type Row<'a> = (Option<&'a str>, i64, i64, Option<&'a [u8]>);

/// A record file with fsspec's four columns.
fn record_file(rows: &[Row<'_>]) -> Bytes {
    record_file_of("", rows)
}

/// A record file whose `offset` and `size` columns are INT64 with `annotation`
/// (`" (INTEGER(64,false))"`: unsigned, the i64 values' bits).
fn record_file_of(annotation: &str, rows: &[Row<'_>]) -> Bytes {
    let schema = Arc::new(
        parse_message_type(&format!(
            "message schema {{
                OPTIONAL BYTE_ARRAY path (UTF8);
                REQUIRED INT64 offset{annotation};
                REQUIRED INT64 size{annotation};
                OPTIONAL BYTE_ARRAY raw;
            }}"
        ))
        .unwrap(),
    );
    let mut out = Vec::new();
    let mut writer =
        SerializedFileWriter::new(&mut out, schema, Arc::new(WriterProperties::default())).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let optional = |values: Vec<Option<&[u8]>>| {
        let defs: Vec<i16> = values.iter().map(|v| i16::from(v.is_some())).collect();
        let present: Vec<ByteArray> = values.into_iter().flatten().map(ByteArray::from).collect();
        (present, defs)
    };
    let (paths, path_defs) = optional(rows.iter().map(|r| r.0.map(str::as_bytes)).collect());
    let (raws, raw_defs) = optional(rows.iter().map(|r| r.3).collect());
    let offsets: Vec<i64> = rows.iter().map(|r| r.1).collect();
    let sizes: Vec<i64> = rows.iter().map(|r| r.2).collect();
    for column in 0..4 {
        let mut col = group.next_column().unwrap().unwrap();
        match column {
            0 => {
                col.typed::<ByteArrayType>()
                    .write_batch(&paths, Some(&path_defs), None)
                    .unwrap();
            }
            1 | 2 => {
                let values = if column == 1 { &offsets } else { &sizes };
                col.typed::<Int64Type>()
                    .write_batch(values, None, None)
                    .unwrap();
            }
            _ => {
                col.typed::<ByteArrayType>()
                    .write_batch(&raws, Some(&raw_defs), None)
                    .unwrap();
            }
        }
        col.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
    Bytes::from(out)
}

fn key(k: &str) -> StoreKey {
    StoreKey::new(k)
}

/// A set with record size 3 over:
/// - `a`: 5x4 in 2x2 chunks (a 3x2 grid, records 0 and 1; record 1 has no file),
/// - `g/b`: 2x2 in 1x1 chunks with the `/` separator (one record, chunk 1 without a row
///   value, chunk 3 past the file's rows),
/// - `s`: 0-d, its one chunk inline.
async fn sample() -> (Arc<MemoryStore>, Value) {
    let dir = Arc::new(MemoryStore::new());
    let metadata = json!({
        ".zgroup": {"zarr_format": 2},
        ".zattrs": {"title": "parquet"},
        "a/.zarray": {"shape": [5, 4], "chunks": [2, 2], "dtype": "<u2", "zarr_format": 2,
                      "compressor": null, "filters": null, "fill_value": 0, "order": "C"},
        "g/.zgroup": {"zarr_format": 2},
        "g/b/.zarray": {"shape": [2, 2], "chunks": [1, 1], "dtype": "|u1", "zarr_format": 2,
                        "compressor": null, "filters": null, "fill_value": 0, "order": "C",
                        "dimension_separator": "/"},
        "s/.zarray": {"shape": [], "chunks": [], "dtype": "<f8", "zarr_format": 2,
                      "compressor": null, "filters": null, "fill_value": 0, "order": "C"}
    });
    let zmetadata = json!({"metadata": metadata, "record_size": 3});
    dir.set(&key(".zmetadata"), zmetadata.to_string().into())
        .await
        .unwrap();
    // a: chunk 0 a range, 1 a whole file, 2 missing (no path, no raw).
    dir.set(
        &key("a/refs.0.parq"),
        record_file(&[
            (Some("mem://data.bin"), 4, 8, None),
            (Some("mem://whole.bin"), 0, 0, None),
            (None, 0, 0, None),
        ]),
    )
    .await
    .unwrap();
    // g/b: chunk 0 inline, 1 missing, 2 a range; chunk 3 has no row.
    dir.set(
        &key("g/b/refs.0.parq"),
        record_file(&[
            (None, 0, 0, Some(&[7])),
            (None, 0, 0, None),
            (Some("mem://data.bin"), 1, 1, None),
        ]),
    )
    .await
    .unwrap();
    dir.set(
        &key("s/refs.0.parq"),
        record_file(&[(None, 0, 0, Some(&2.5f64.to_le_bytes()))]),
    )
    .await
    .unwrap();
    (dir, metadata)
}

/// Inside `inline::allow_blocking_here`, a record file is read and decoded during the
/// first poll of the lookup that needs it, on that thread.
#[test]
fn record_files_are_decoded_on_the_polling_thread_when_it_may_block() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use zarr_store::inline::allow_blocking_here;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (dir, _) = runtime.block_on(sample());
    let references = runtime
        .block_on(ParquetReferences::open(
            Arc::clone(&dir) as _,
            &StorePrefix::root(),
        ))
        .unwrap();
    let _entered = runtime.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let chunk = key("g/b/1/0");
    let mut get = std::pin::pin!(references.get(&chunk));
    match allow_blocking_here(|| get.as_mut().poll(&mut cx)) {
        Poll::Ready(Ok(Some(reference))) => assert_eq!(
            reference,
            Reference::Range {
                url: Some("mem://data.bin".into()),
                offset: 1,
                length: 1
            }
        ),
        other => panic!("{other:?}"),
    }
    // Another record file, without the hint: decoded on the blocking pool. (Whether that is
    // done by the first poll depends on the pool's thread, so only the answer is checked.)
    assert!(
        runtime
            .block_on(references.get(&key("a/0.0")))
            .unwrap()
            .is_some()
    );
}

/// A store whose first read of a record file waits until `open` is notified.
#[derive(Debug)]
struct Gate {
    inner: Arc<MemoryStore>,
    held: std::sync::atomic::AtomicBool,
    open: tokio::sync::Notify,
    record_reads: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl ReadableStore for Gate {
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        use std::sync::atomic::Ordering;
        if key.as_str().ends_with(".parq") {
            self.record_reads.fetch_add(1, Ordering::SeqCst);
            if !self.held.swap(true, Ordering::SeqCst) {
                self.open.notified().await;
            }
        }
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, zarr_store::ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        self.inner.get_partial_values(key_ranges).await
    }
}

/// A reader that may block does not wait for another reader of the same record file (which
/// would send an array read back to fetching on one thread): it reads the file itself.
/// Readers that may not block wait for the one read, as before.
#[test]
fn readers_that_may_block_do_not_wait_for_another_readers_record_file() {
    use std::future::Future;
    use std::sync::atomic::Ordering;
    use std::task::{Context, Poll, Waker};
    use zarr_store::inline::allow_blocking_here;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (dir, _) = runtime.block_on(sample());
    let gate = Arc::new(Gate {
        inner: dir,
        held: std::sync::atomic::AtomicBool::new(false),
        open: tokio::sync::Notify::new(),
        record_reads: std::sync::atomic::AtomicUsize::new(0),
    });
    let references = runtime
        .block_on(ParquetReferences::open(
            Arc::clone(&gate) as _,
            &StorePrefix::root(),
        ))
        .unwrap();
    let _entered = runtime.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let chunk = key("a/0.0");
    // The first reader starts reading record file 0 of `a` and waits at the gate.
    let mut first = std::pin::pin!(references.get(&chunk));
    assert!(first.as_mut().poll(&mut cx).is_pending());
    // A second reader that may not block waits for it.
    let mut waiting = std::pin::pin!(references.get(&chunk));
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert_eq!(gate.record_reads.load(Ordering::SeqCst), 1);
    // One that may block reads the file itself, at once.
    let mut blocking = std::pin::pin!(references.get(&chunk));
    let expected = Some(Reference::Range {
        url: Some("mem://data.bin".into()),
        offset: 4,
        length: 8,
    });
    match allow_blocking_here(|| blocking.as_mut().poll(&mut cx)) {
        Poll::Ready(Ok(reference)) => assert_eq!(reference, expected),
        other => panic!("{other:?}"),
    }
    assert_eq!(gate.record_reads.load(Ordering::SeqCst), 2);
    gate.open.notify_one();
    assert_eq!(runtime.block_on(first).unwrap(), expected);
    assert_eq!(runtime.block_on(waiting).unwrap(), expected);
    // The first reader's read is cached: no third read.
    assert_eq!(runtime.block_on(references.get(&chunk)).unwrap(), expected);
    assert_eq!(gate.record_reads.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn chunks_read_from_their_record_files_and_metadata_from_zmetadata() {
    let (dir, metadata) = sample().await;
    let references = ParquetReferences::open(Arc::clone(&dir) as _, &StorePrefix::root())
        .await
        .unwrap();
    assert_eq!(references.record_size(), 3);
    assert_eq!(references.arrays(), ["a", "g/b", "s"]);
    let range = |url: &str, offset, length| {
        Some(Reference::Range {
            url: Some(url.into()),
            offset,
            length,
        })
    };
    assert_eq!(
        references.get(&key("a/0.0")).await.unwrap(),
        range("mem://data.bin", 4, 8)
    );
    assert_eq!(
        references.get(&key("a/0.1")).await.unwrap(),
        Some(Reference::Whole {
            url: Some("mem://whole.bin".into())
        })
    );
    // Missing: a null row, rows of a record with no file, a row past the file's end, keys
    // outside the grid or of the other separator.
    for missing in [
        "a/1.0", "a/1.1", "a/2.1", "g/b/0/1", "g/b/1/1", "a/3.0", "a/0", "a/0.0.0", "a/0/0",
        "g/b/0.0", "a/00.x", "s/1", "nothing",
    ] {
        assert_eq!(
            references.get(&key(missing)).await.unwrap(),
            None,
            "{missing}"
        );
    }
    assert_eq!(
        references.get(&key("g/b/0/0")).await.unwrap(),
        Some(Reference::Inline(Bytes::from_static(&[7])))
    );
    assert_eq!(
        references.get(&key("g/b/1/0")).await.unwrap(),
        range("mem://data.bin", 1, 1)
    );

    // As a store: chunk bytes from the mapped file, metadata documents inline, and
    // `.zmetadata` as v2 consolidated metadata of them all.
    let files = Arc::new(MemoryStore::new());
    files
        .set(&key("data.bin"), Bytes::from_static(b"0123456789abcdef"))
        .await
        .unwrap();
    files
        .set(&key("whole.bin"), Bytes::from_static(b"WHOLE"))
        .await
        .unwrap();
    let store = ReferenceStore::from_parquet(references).with_target("mem://", files);
    assert!(store.references().is_none());
    assert_eq!(store.parquet_references().unwrap().record_size(), 3);
    let get = |k: &'static str| {
        let store = &store;
        async move { store.get(&key(k)).await.unwrap() }
    };
    assert_eq!(get("a/0.0").await.as_deref(), Some(&b"456789ab"[..]));
    assert_eq!(get("a/0.1").await.as_deref(), Some(&b"WHOLE"[..]));
    assert_eq!(get("a/1.0").await, None);
    assert_eq!(get("g/b/1/0").await.as_deref(), Some(&b"1"[..]));
    assert_eq!(get("s/0").await.as_deref(), Some(&2.5f64.to_le_bytes()[..]));
    assert_eq!(store.size(&key("a/0.1")).await.unwrap(), Some(5));
    let zattrs: Value = serde_json::from_slice(&get(".zattrs").await.unwrap()).unwrap();
    assert_eq!(zattrs, json!({"title": "parquet"}));
    let zarray: Value = serde_json::from_slice(&get("g/b/.zarray").await.unwrap()).unwrap();
    assert_eq!(zarray, metadata["g/b/.zarray"]);
    let consolidated: Value = serde_json::from_slice(&get(".zmetadata").await.unwrap()).unwrap();
    assert_eq!(
        consolidated,
        json!({"zarr_consolidated_format": 1, "metadata": metadata})
    );

    // Listing: metadata keys and the chunks that have a reference.
    let names = |keys: Vec<StoreKey>| {
        keys.iter()
            .map(|k| k.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(store.list().await.unwrap()),
        [
            ".zattrs",
            ".zgroup",
            ".zmetadata",
            "a/.zarray",
            "a/0.0",
            "a/0.1",
            "g/.zgroup",
            "g/b/.zarray",
            "g/b/0/0",
            "g/b/1/0",
            "s/.zarray",
            "s/0"
        ]
    );
    assert_eq!(
        names(
            store
                .list_prefix(&StorePrefix::new("g/b/1/"))
                .await
                .unwrap()
        ),
        ["g/b/1/0"]
    );
    let root = store.list_dir(&StorePrefix::root()).await.unwrap();
    assert_eq!(names(root.keys), [".zattrs", ".zgroup", ".zmetadata"]);
    let prefixes: Vec<&str> = root.prefixes.iter().map(StorePrefix::as_str).collect();
    assert_eq!(prefixes, ["a/", "g/", "s/"]);
    let b = store.list_dir(&StorePrefix::new("g/b/")).await.unwrap();
    assert_eq!(names(b.keys), ["g/b/.zarray"]);
    let prefixes: Vec<&str> = b.prefixes.iter().map(StorePrefix::as_str).collect();
    assert_eq!(prefixes, ["g/b/0/", "g/b/1/"]);
}

#[tokio::test]
async fn record_files_are_read_once_while_cached() {
    let (dir, _) = sample().await;
    let recording = Arc::new(RecordingStore::new(dir));
    let references = ParquetReferences::open(Arc::clone(&recording) as _, &StorePrefix::root())
        .await
        .unwrap();
    let gets = || recording.stats().gets;
    assert_eq!(gets(), 1, ".zmetadata");
    // Three chunks of one record, and a metadata document: one read of the record.
    let found = references
        .get_many(&[key("a/0.0"), key("a/0.1"), key("a/.zarray"), key("a/1.0")])
        .await
        .unwrap();
    assert_eq!(found.iter().filter(|r| r.is_some()).count(), 3);
    assert_eq!(gets(), 2);
    references.get(&key("a/0.0")).await.unwrap();
    assert_eq!(gets(), 2, "cached");
    // A record with no file is remembered too.
    references.get(&key("a/2.0")).await.unwrap();
    references.get(&key("a/2.1")).await.unwrap();
    assert_eq!(gets(), 3);

    // Readers that come while a record file is being read wait for that read.
    let before = gets();
    let keys: Vec<StoreKey> = ["g/b/0/0", "g/b/1/0", "g/b/0/1"]
        .iter()
        .cycle()
        .take(30)
        .map(|k| key(k))
        .collect();
    let found = futures::future::join_all(keys.iter().map(|k| references.get(k))).await;
    assert_eq!(
        found.iter().filter(|r| matches!(r, Ok(Some(_)))).count(),
        20
    );
    assert_eq!(gets(), before + 1, "one read of g/b's record file");

    // With room for one record, alternating records read each again.
    let references = references.with_cached_records(1);
    references.get(&key("a/0.0")).await.unwrap();
    references.get(&key("g/b/0/0")).await.unwrap();
    references.get(&key("a/0.0")).await.unwrap();
    assert_eq!(gets(), 7);
    references.get(&key("a/0.1")).await.unwrap();
    assert_eq!(gets(), 7, "the last record is kept");
}

#[tokio::test]
async fn malformed_sets_and_record_files_are_typed_errors_naming_the_file() {
    let open = |zmetadata: Value| {
        let dir = Arc::new(MemoryStore::new());
        async move {
            dir.set(&key(".zmetadata"), zmetadata.to_string().into())
                .await
                .unwrap();
            ParquetReferences::open(dir, &StorePrefix::root()).await
        }
    };
    let reason = |result: Result<ParquetReferences, Error>| match result {
        Err(Error::InvalidReferences { reason }) => reason,
        other => panic!("{other:?}"),
    };
    let array = |zarray: Value| json!({"metadata": {"x/.zarray": zarray}, "record_size": 10});
    for (zmetadata, expected) in [
        (
            json!({"metadata": {}}),
            "record_size must be a positive integer",
        ),
        (
            json!({"metadata": {}, "record_size": 0}),
            "record_size must be a positive integer",
        ),
        (json!({"record_size": 5}), "metadata must be an object"),
        (json!([1]), "not a JSON object"),
        (
            array(json!({"shape": [4], "chunks": [0]})),
            "x/.zarray: chunks [0] has a zero",
        ),
        (
            array(json!({"shape": [4, 4], "chunks": [2]})),
            "x/.zarray: shape has 2 dimensions",
        ),
        (
            array(json!({"shape": [-4], "chunks": [2]})),
            "shape must hold non-negative integers",
        ),
        (
            array(json!({"chunks": [2]})),
            "shape must be a list of integers",
        ),
        (
            array(json!({"shape": [4], "chunks": [2], "dimension_separator": "_"})),
            "dimension_separator \"_\"",
        ),
        (
            array(json!({"shape": [u64::MAX, u64::MAX], "chunks": [1, 1]})),
            "more than a u64 counts",
        ),
        (
            json!({"metadata": {"../up": {}}, "record_size": 5}),
            "metadata key \"../up\" is not a store key",
        ),
    ] {
        let reason = reason(open(zmetadata.clone()).await);
        assert!(reason.starts_with(".zmetadata: "), "{reason}");
        assert!(reason.contains(expected), "{zmetadata}: {reason}");
    }
    let dir = Arc::new(MemoryStore::new());
    assert!(
        reason(ParquetReferences::open(dir, &StorePrefix::root()).await).contains("no such file")
    );

    // Record files: each failure names the file (after the set's name) and the row.
    let dir = Arc::new(MemoryStore::new());
    dir.set(
        &key("sets/one/.zmetadata"),
        array(json!({"shape": [40], "chunks": [1]}))
            .to_string()
            .into(),
    )
    .await
    .unwrap();
    let references = ParquetReferences::open(Arc::clone(&dir) as _, &StorePrefix::new("sets/one/"))
        .await
        .unwrap()
        .with_name("refs.parq/");
    let record = |bytes: Bytes| {
        let dir = &dir;
        async move {
            dir.set(&key("sets/one/x/refs.0.parq"), bytes)
                .await
                .unwrap()
        }
    };
    let cases: [(Bytes, &str); 5] = [
        (Bytes::from_static(b"PAR1 not really"), "not a Parquet file"),
        (
            record_file(&[(Some("f"), -1, 4, None)]),
            "row 0, column offset: -1 is negative",
        ),
        (
            record_file(&[(None, 0, 0, None), (Some("f"), 1, -5, None)]),
            "row 1, column size: -5 is negative",
        ),
        (
            record_file(&vec![(None, 0, 0, None); 11]),
            "it has 11 rows, more than the set's record_size 10",
        ),
        (
            record_file_of(" (INTEGER(64,false))", &[(Some("f"), -1, 1, None)]),
            "row 0: offset 18446744073709551615 plus size 1 overflows",
        ),
    ];
    for (i, (bytes, expected)) in cases.into_iter().enumerate() {
        record(bytes).await;
        // A fresh set for each, so nothing is cached.
        let references =
            ParquetReferences::open(Arc::clone(&dir) as _, &StorePrefix::new("sets/one/"))
                .await
                .unwrap()
                .with_name("refs.parq/");
        let reason = reason(
            references
                .get(&key("x/0"))
                .await
                .map(|r| panic!("case {i}: {r:?}")),
        );
        assert!(
            reason.starts_with("refs.parq/sets/one/x/refs.0.parq: ") && reason.contains(expected),
            "case {i}: {reason}"
        );
    }
    drop(references);
}

#[tokio::test]
async fn written_sets_read_back_the_same() {
    use zarr_store::References;

    // The sample set, read into memory, written again with another record size.
    let (dir, metadata) = sample().await;
    let read = ParquetReferences::open(Arc::clone(&dir) as _, &StorePrefix::root())
        .await
        .unwrap();
    let mut references = read.to_references().await.unwrap();
    assert_eq!(references.len(), 12, "{references:?}");
    // An empty range is stored as empty bytes (offset and size 0 would mean the whole file).
    let empty = Reference::Range {
        url: Some("mem://data.bin".into()),
        offset: 3,
        length: 0,
    };
    references.insert(key("a/2.1"), empty).unwrap();

    let out = Arc::new(MemoryStore::new());
    let root = StorePrefix::new("copy/");
    ParquetReferences::write(&references, out.as_ref(), &root, 2)
        .await
        .unwrap();
    let zmetadata: Value =
        serde_json::from_slice(&out.get(&key("copy/.zmetadata")).await.unwrap().unwrap()).unwrap();
    assert_eq!(zmetadata, json!({"metadata": metadata, "record_size": 2}));
    // a: 6 chunks, 3 records, the last with only a/2.1; no file for record 1 (no references).
    let mut files: Vec<String> = out
        .list()
        .await
        .unwrap()
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "copy/.zmetadata",
            "copy/a/refs.0.parq",
            "copy/a/refs.2.parq",
            "copy/g/b/refs.0.parq",
            "copy/g/b/refs.1.parq",
            "copy/s/refs.0.parq"
        ]
    );
    let back = ParquetReferences::open(Arc::clone(&out) as _, &root)
        .await
        .unwrap();
    assert_eq!(back.record_size(), 2);
    let mut expected = references.clone();
    expected
        .insert(key("a/2.1"), Reference::Inline(Bytes::new()))
        .unwrap();
    let mut got = back.to_references().await.unwrap();
    for refs in [&mut expected, &mut got] {
        // Each side's .zmetadata is its own consolidated document: compare the rest.
        let kept: Vec<(StoreKey, Reference)> = refs
            .iter()
            .filter(|(k, _)| k.as_str() != ".zmetadata")
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect();
        *refs = References::new();
        for (k, r) in kept {
            refs.insert(k, r).unwrap();
        }
    }
    assert_eq!(got, expected);

    // What the layout cannot hold: named errors, and nothing written.
    let reason = |result: Result<(), Error>| match result {
        Err(Error::InvalidReferences { reason }) => reason,
        other => panic!("{other:?}"),
    };
    let with = |k: &str, r: Reference| {
        let mut refs = references.clone();
        refs.insert(key(k), r).unwrap();
        refs
    };
    let inline = |b: &'static [u8]| Reference::Inline(Bytes::from_static(b));
    let cases = [
        (
            with("x/0", inline(b"1")),
            3,
            "x/0: neither metadata nor a chunk",
        ),
        (with("loose", inline(b"1")), 3, "loose: a key at the root"),
        (
            with("a/9.9", inline(b"1")),
            3,
            "a/9.9: neither metadata nor a chunk",
        ),
        (
            with("a/.zattrs", inline(b"{not json")),
            3,
            "a/.zattrs: not JSON",
        ),
        (
            with(
                "a/.zattrs",
                Reference::Whole {
                    url: Some("f".into()),
                },
            ),
            3,
            "a/.zattrs: a metadata document must be inline",
        ),
        (
            with("a/1.1", Reference::Whole { url: None }),
            3,
            "a/refs.1.parq: a/1.1: a reference without a URL",
        ),
        (
            with(
                "a/1.1",
                Reference::Range {
                    url: Some("f".into()),
                    offset: u64::MAX - 1,
                    length: 1,
                },
            ),
            3,
            "a/refs.1.parq: a/1.1: 18446744073709551614 does not fit",
        ),
        (references.clone(), 0, "record_size must be positive"),
        // A record file of a row per chunk of a huge array: refused, not allocated.
        (
            {
                let mut refs = with(
                    "big/.zarray",
                    inline(br#"{"shape": [1000000000000], "chunks": [1]}"#),
                );
                refs.insert(key("big/5"), inline(b"1")).unwrap();
                refs
            },
            u64::MAX,
            "big/refs.0.parq would need 1000000000000 rows",
        ),
    ];
    for (i, (refs, record_size, expected)) in cases.into_iter().enumerate() {
        let out = MemoryStore::new();
        let reason =
            reason(ParquetReferences::write(&refs, &out, &StorePrefix::root(), record_size).await);
        assert!(reason.contains(expected), "case {i}: {reason}");
        assert!(
            out.get(&key(".zmetadata")).await.unwrap().is_none(),
            "case {i}: .zmetadata written"
        );
    }
}
