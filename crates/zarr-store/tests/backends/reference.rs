//! `ReferenceStore` and `References`: fsspec's JSON reference sets (what kerchunk writes),
//! parsed and read from inline values, mapped stores, local files and HTTP.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;
use zarr_store::{
    ByteRange, Error, ListableStore, MemoryStore, Operation, ReadableStore, RecordingStore,
    Reference, ReferenceStore, References, StoreKey, StorePrefix, WritableStore,
};

use super::http::RangeServer;

fn refs(value: serde_json::Value) -> References {
    References::from_json(value.to_string().as_bytes()).unwrap()
}

fn key(k: &str) -> StoreKey {
    StoreKey::new(k)
}

fn range(url: &str, offset: u64, length: u64) -> Reference {
    Reference::Range {
        url: Some(url.into()),
        offset,
        length,
    }
}

#[test]
fn both_versions_parse_every_form_of_reference() {
    let v0 = refs(json!({
        ".zgroup": "{\"zarr_format\":2}",
        "a/.zarray": {"shape": [2], "chunks": [2]},
        "a/0": "base64:AAEC/w==",
        "a/1": ["data.h5", 10, 20],
        "a/2": ["s3://b/whole.bin"],
        "a/3": [null, 5, 6],
        "text": "\u{0}\u{1}\u{e9}"
    }));
    assert_eq!(v0.len(), 7);
    let inline = |k: &str| match v0.get(&key(k)) {
        Some(Reference::Inline(bytes)) => bytes.clone(),
        other => panic!("{k}: {other:?}"),
    };
    assert_eq!(&inline(".zgroup")[..], br#"{"zarr_format":2}"#);
    // A JSON object is its text, as fsspec reads it.
    let zarray: serde_json::Value = serde_json::from_slice(&inline("a/.zarray")).unwrap();
    assert_eq!(zarray, json!({"shape": [2], "chunks": [2]}));
    assert_eq!(&inline("a/0")[..], &[0, 1, 2, 255]);
    // Text is its UTF-8 (fsspec's `str.encode()`).
    assert_eq!(&inline("text")[..], "\u{0}\u{1}\u{e9}".as_bytes());
    assert_eq!(v0.get(&key("a/1")), Some(&range("data.h5", 10, 20)));
    assert_eq!(
        v0.get(&key("a/2")),
        Some(&Reference::Whole {
            url: Some("s3://b/whole.bin".into())
        })
    );
    assert_eq!(
        v0.get(&key("a/3")),
        Some(&Reference::Range {
            url: None,
            offset: 5,
            length: 6
        })
    );

    // Version 1 with templates: the same references.
    let v1 = refs(json!({
        "version": 1,
        "templates": {"f": "data", "s": "s3://b"},
        "refs": {
            ".zgroup": "{\"zarr_format\":2}",
            "a/.zarray": {"shape": [2], "chunks": [2]},
            "a/0": "base64:AAEC/w==",
            "a/1": ["{{f}}.h5", 10, 20],
            "a/2": ["{{ s }}/whole.bin"],
            "a/3": [null, 5, 6],
            "text": "\u{0}\u{1}\u{e9}"
        }
    }));
    assert_eq!(v1, v0);
    // Keys come back sorted.
    let keys: Vec<&str> = v0.iter().map(|(k, _)| k.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted);
}

#[test]
fn generators_expand_every_combination_and_override_refs() {
    let set = refs(json!({
        "version": 1,
        "templates": {"u": "https://host/run"},
        "gen": [
            {
                "key": "t/{{j}}.{{i}}",
                "url": "{{u}}_{{j}}.nc",
                "offset": "{{ 100 + i * 8 }}",
                "length": "8",
                "dimensions": {"j": ["a", "b"], "i": {"start": 1, "stop": 7, "step": 2}}
            },
            {"key": "w/{{k}}", "url": "{{u}}/{{k // 2}}", "dimensions": {"k": {"stop": 4}}},
            {"key": "empty/{{k}}", "url": "x", "dimensions": {"k": {"start": 3, "stop": 3}}}
        ],
        "refs": {"t/a.1": "replaced by the generator", "kept": "yes"}
    }));
    // 2 x 3 ranged, 4 whole, 0 empty, and the one explicit reference left.
    assert_eq!(set.len(), 6 + 4 + 1);
    assert_eq!(
        set.get(&key("t/a.1")),
        Some(&range("https://host/run_a.nc", 108, 8))
    );
    assert_eq!(
        set.get(&key("t/b.5")),
        Some(&range("https://host/run_b.nc", 140, 8))
    );
    assert_eq!(set.get(&key("t/a.2")), None);
    assert_eq!(
        set.get(&key("w/3")),
        Some(&Reference::Whole {
            url: Some("https://host/run/1".into())
        })
    );
    assert_eq!(
        set.get(&key("kept")),
        Some(&Reference::Inline(Bytes::from_static(b"yes")))
    );
}

#[test]
fn malformed_sets_are_typed_errors_naming_the_problem() {
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (json!([1, 2]), "not a JSON object"),
        (json!({"version": 2}), "unknown reference set version 2"),
        (
            json!({"version": 1, "refs": [1]}),
            "\"refs\" is not a JSON object",
        ),
        (
            json!({"version": 1, "extra": {}}),
            "unknown member \"extra\"",
        ),
        (json!({"../escape": "x"}), "reference key \"../escape\""),
        (json!({"/abs": "x"}), "reference key \"/abs\""),
        (json!({"a": 5}), "reference \"a\" is 5"),
        (json!({"a": "base64:!!"}), "invalid base64"),
        (json!({"a": ["f", 1]}), "has 2 items"),
        (json!({"a": ["f", -1, 2]}), "offset -1"),
        (json!({"a": ["f", 1, 2.5]}), "length 2.5"),
        (json!({"a": [7, 1, 2]}), "URL string or null"),
        (json!({"a": ["f", u64::MAX, 2]}), "overflows"),
        (
            json!({"version": 1, "refs": {"a": ["{{nope}}"]}}),
            "unknown name \"nope\"",
        ),
        (
            json!({"version": 1, "templates": {"f": "{{c}}"}, "refs": {}}),
            "templates taking arguments",
        ),
        (
            json!({"version": 1, "templates": {"f": "x"}, "refs": {"a": ["{{ f(c='x') }}"]}}),
            "calls, attributes",
        ),
        (
            json!({"version": 1, "gen": [{"key": "k{{i}}", "url": "u", "offset": "1",
                   "dimensions": {"i": {"stop": 2}}}]}),
            "only one of \"offset\" and \"length\"",
        ),
        (
            json!({"version": 1, "gen": [{"key": "k{{i}}", "url": "u", "offset": "{{i - 5}}",
                   "length": "1", "dimensions": {"i": {"stop": 2}}}]}),
            "not a non-negative integer",
        ),
        (
            json!({"version": 1, "gen": [{"key": "k", "url": "u",
                   "dimensions": {"i": {"stop": 2, "step": 0}}}]}),
            "step 0",
        ),
        (
            json!({"version": 1, "gen": [{"key": "k{{i}}{{j}}", "url": "u", "dimensions": {
                   "i": {"stop": 1 << 13}, "j": {"stop": 1 << 12}}}]}),
            "generates more than 16777216 references",
        ),
        (
            json!({"version": 1, "gen": [{"key": "k{{i}}", "url": "u",
                   "dimensions": {"i": {"stop": 1_i64 << 40}}}]}),
            "more than 16777216 values",
        ),
        (
            json!({"version": 1, "gen": [{"url": "u", "dimensions": {}}]}),
            "no \"key\"",
        ),
        (
            json!({"version": 1, "gen": [{"key": "k", "url": "u", "offset": 1, "length": "2",
                   "dimensions": {}}]}),
            "not a string (a template)",
        ),
    ];
    for (value, expected) in cases {
        match References::from_json(value.to_string().as_bytes()) {
            Err(Error::InvalidReferences { reason }) => {
                assert!(
                    reason.contains(expected),
                    "{value}: {reason:?} lacks {expected:?}"
                );
            }
            other => panic!("{value}: {other:?}"),
        }
    }
    assert!(matches!(
        References::from_json(b"{not json"),
        Err(Error::InvalidReferences { .. })
    ));
}

#[tokio::test]
async fn ranges_of_one_file_go_to_its_store_in_one_call() {
    let file: Bytes = (0..=255u8).collect::<Vec<_>>().into();
    let files = Arc::new(RecordingStore::new(MemoryStore::new()));
    files.set(&key("dir/f.bin"), file.clone()).await.unwrap();
    files
        .set(&key("other.bin"), Bytes::from_static(b"0123456789"))
        .await
        .unwrap();
    let set = refs(json!({
        "inline": "hello",
        "r/0": ["mem://dir/f.bin", 10, 20],
        "r/1": ["mem://dir/f.bin", 100, 50],
        "r/2": ["mem://other.bin", 2, 3],
        "whole": ["mem://other.bin"],
        "past": ["mem://dir/f.bin", 250, 10],
        "gone": ["mem://dir/missing.bin", 0, 1]
    }));
    let store = ReferenceStore::new(set).with_target("mem://", Arc::clone(&files) as _);
    files.clear();
    let answers = store
        .get_partial_values(&[
            (key("r/0"), ByteRange::FULL),
            (key("inline"), ByteRange::suffix(3)),
            (key("r/1"), ByteRange::new(5, 10)),
            (key("nothing"), ByteRange::FULL),
            (key("r/2"), ByteRange::suffix(2)),
            (key("r/1"), ByteRange::from_offset(45)),
            (key("whole"), ByteRange::new(8, 10)),
        ])
        .await
        .unwrap();
    assert_eq!(answers[0].as_deref(), Some(&file[10..30]));
    assert_eq!(answers[1].as_deref(), Some(&b"llo"[..]));
    assert_eq!(answers[2].as_deref(), Some(&file[105..110]));
    assert_eq!(answers[3], None);
    assert_eq!(answers[4].as_deref(), Some(&b"34"[..]));
    assert_eq!(answers[5].as_deref(), Some(&file[145..150]));
    assert_eq!(answers[6].as_deref(), Some(&b"89"[..]));
    // One batched call per file, each range translated into the file.
    let ops = files.operations();
    assert_eq!(files.stats().partial_reads, 2, "{ops:?}");
    assert!(
        ops.iter()
            .all(|op| matches!(op, Operation::GetPartialValues { .. })),
        "{ops:?}"
    );

    assert_eq!(store.size(&key("r/1")).await.unwrap(), Some(50));
    assert_eq!(store.size(&key("whole")).await.unwrap(), Some(10));
    assert_eq!(store.size(&key("inline")).await.unwrap(), Some(5));
    assert_eq!(store.size(&key("nothing")).await.unwrap(), None);

    // A range beyond the reference's length is out of bounds of the reference, not a read of
    // the bytes after it.
    match store
        .get_partial_values(&[(key("r/0"), ByteRange::new(15, 21))])
        .await
    {
        Err(Error::RangeOutOfBounds {
            key: Some(k),
            size: 20,
            ..
        }) => assert_eq!(k, key("r/0")),
        other => panic!("{other:?}"),
    }
    // A reference reaching past the end of its file, or into a missing file, is an error
    // naming the reference and the file.
    for (k, url) in [
        ("past", "mem://dir/f.bin"),
        ("gone", "mem://dir/missing.bin"),
    ] {
        match store.get(&key(k)).await {
            Err(Error::UnreachableReference {
                key: got,
                url: got_url,
                ..
            }) => {
                assert_eq!((got.as_str(), got_url.as_str()), (k, url));
            }
            other => panic!("{k}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn local_files_only_where_allowed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/data.bin"), b"abcdefghij").unwrap();
    let absolute = dir.path().join("sub/data.bin");
    let file_url = url::Url::from_file_path(&absolute).unwrap().to_string();
    let set = refs(json!({
        "rel": ["sub/data.bin", 2, 3],
        "abs": [absolute.to_str().unwrap(), 5, 5],
        "url": [file_url, 0, 1],
        "whole": ["sub/data.bin"],
        "short": ["sub/data.bin", 8, 5],
        "missing": ["sub/none.bin", 0, 1],
        "remote": ["s3://bucket/x.nc", 0, 1]
    }));
    // Nothing is read without permission.
    let closed = ReferenceStore::new(set.clone());
    for k in ["rel", "abs", "url", "remote"] {
        match closed.get(&key(k)).await {
            Err(Error::UnreachableReference { reason, .. }) => {
                assert!(reason.contains("not allowed"), "{k}: {reason}");
            }
            other => panic!("{k}: {other:?}"),
        }
    }
    let store = ReferenceStore::new(set).with_local_files(dir.path());
    assert_eq!(
        store.get(&key("rel")).await.unwrap().as_deref(),
        Some(&b"cde"[..])
    );
    assert_eq!(
        store.get(&key("abs")).await.unwrap().as_deref(),
        Some(&b"fghij"[..])
    );
    assert_eq!(
        store.get(&key("url")).await.unwrap().as_deref(),
        Some(&b"a"[..])
    );
    assert_eq!(
        store.get(&key("whole")).await.unwrap().as_deref(),
        Some(&b"abcdefghij"[..])
    );
    assert_eq!(store.size(&key("whole")).await.unwrap(), Some(10));
    // Several ranges of one local file in one call.
    let answers = store
        .get_partial_values(&[
            (key("rel"), ByteRange::new(1, 3)),
            (key("whole"), ByteRange::suffix(4)),
            (key("abs"), ByteRange::from_offset(4)),
        ])
        .await
        .unwrap();
    let answers: Vec<&[u8]> = answers.iter().map(|a| a.as_deref().unwrap()).collect();
    assert_eq!(answers, [&b"de"[..], b"ghij", b"j"]);
    for k in ["short", "missing", "remote"] {
        assert!(
            matches!(
                store.get(&key(k)).await,
                Err(Error::UnreachableReference { .. })
            ),
            "{k}"
        );
    }
}

/// Inside `inline::allow_blocking_here` (as a read's decoding threads poll), a reference to
/// a local file is read during its first poll, on that thread: the array reader then fetches
/// on every core.
#[test]
fn local_files_are_read_on_the_polling_thread_when_it_may_block() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use zarr_store::inline::allow_blocking_here;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.bin"), b"abcdefghij").unwrap();
    let store = ReferenceStore::new(refs(json!({
        "part": ["data.bin", 2, 3],
        "whole": ["data.bin"]
    })))
    .with_local_files(dir.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let mut cx = Context::from_waker(Waker::noop());
    let part = key("part");
    let mut get = std::pin::pin!(store.get(&part));
    match allow_blocking_here(|| get.as_mut().poll(&mut cx)) {
        Poll::Ready(Ok(Some(bytes))) => assert_eq!(&bytes[..], b"cde"),
        other => panic!("{other:?}"),
    }
    let whole = key("whole");
    let mut size = std::pin::pin!(store.size(&whole));
    assert!(matches!(
        allow_blocking_here(|| size.as_mut().poll(&mut cx)),
        Poll::Ready(Ok(Some(10)))
    ));
    // Without the hint: handed to the blocking pool (whether that is done by the first poll
    // depends on the pool's thread, so only the answer is checked).
    assert_eq!(
        runtime.block_on(store.get(&part)).unwrap().as_deref(),
        Some(&b"cde"[..])
    );
}

#[tokio::test]
async fn null_urls_read_the_default_target() {
    let files = Arc::new(MemoryStore::new());
    files
        .set(&key("t.bin"), Bytes::from_static(b"0123456789"))
        .await
        .unwrap();
    let set = refs(json!({"a": [null, 3, 4], "b": [null]}));
    let without = ReferenceStore::new(set.clone()).with_target("m://", Arc::clone(&files) as _);
    assert!(matches!(
        without.get(&key("a")).await,
        Err(Error::UnreachableReference { .. })
    ));
    let store = without.with_default_target("m://t.bin");
    assert_eq!(
        store.get(&key("a")).await.unwrap().as_deref(),
        Some(&b"3456"[..])
    );
    assert_eq!(
        store.get(&key("b")).await.unwrap().as_deref(),
        Some(&b"0123456789"[..])
    );
}

#[tokio::test]
async fn remote_urls_are_opened_per_directory_when_allowed() {
    let file: Bytes = (0..200u8).collect::<Vec<_>>().into();
    let (server, base) =
        RangeServer::start(HashMap::from([("data/run.nc".to_owned(), file.clone())])).await;
    let url = format!("{base}/data/run.nc");
    let set = refs(json!({"c/0": [url, 10, 5], "c/1": [url, 150, 50], "w": [url]}));
    let store = ReferenceStore::new(set).with_remote_urls(true);
    let answers = store
        .get_partial_values(&[
            (key("c/0"), ByteRange::FULL),
            (key("c/1"), ByteRange::new(0, 10)),
        ])
        .await
        .unwrap();
    assert_eq!(answers[0].as_deref(), Some(&file[10..15]));
    assert_eq!(answers[1].as_deref(), Some(&file[150..160]));
    let log = server.take_log();
    assert!(
        log.iter()
            .all(|r| r.method == "GET" && r.path == "/data/run.nc"),
        "{log:?}"
    );
    assert_eq!(store.get(&key("w")).await.unwrap(), Some(file));
}

/// A file name percent-encoded in a remote URL is decoded as its directory is, so the
/// request names the file the URL does.
#[tokio::test]
async fn remote_urls_with_percent_escapes_name_the_file() {
    let file: Bytes = (0..50u8).collect::<Vec<_>>().into();
    let (server, base) = RangeServer::start(HashMap::from([(
        "data%20dir/run%201.nc".to_owned(),
        file.clone(),
    )]))
    .await;
    let url = format!("{base}/data%20dir/run%201.nc");
    let set = refs(json!({"c/0": [url, 10, 5]}));
    let store = ReferenceStore::new(set).with_remote_urls(true);
    assert_eq!(
        store.get(&key("c/0")).await.unwrap().as_deref(),
        Some(&file[10..15])
    );
    let log = server.take_log();
    assert!(
        log.iter().all(|r| r.path == "/data%20dir/run%201.nc"),
        "{log:?}"
    );
}

/// URL schemes are case-insensitive: remote URLs allowed do not let `FILE://` (or
/// `memory://`) through as a remote store.
#[tokio::test]
async fn local_files_stay_refused_whatever_the_scheme_case() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret"), b"0123456789").unwrap();
    let file_url = url::Url::from_file_path(dir.path().join("secret")).unwrap();
    for url in [
        file_url.as_str().replacen("file", "FILE", 1),
        file_url.as_str().replacen("file", "File", 1),
        "memory:///x/y".to_owned(),
        "MEMORY:///x/y".to_owned(),
    ] {
        let set = refs(json!({"a": [url, 0, 4]}));
        let store = ReferenceStore::new(set).with_remote_urls(true);
        let answer = store.get(&key("a")).await;
        assert!(
            matches!(answer, Err(Error::UnreachableReference { .. })),
            "{url}: {answer:?}"
        );
    }
    // Allowed, the upper-case scheme reads the local file.
    let upper = file_url.as_str().replacen("file", "FILE", 1);
    let set = refs(json!({"a": [upper, 2, 4]}));
    let store = ReferenceStore::new(set).with_local_files(dir.path());
    assert_eq!(
        store.get(&key("a")).await.unwrap().as_deref(),
        Some(&b"2345"[..])
    );
}

#[tokio::test]
async fn listing_and_refused_writes() {
    let set = refs(json!({
        ".zgroup": "{}", "a/.zarray": "{}", "a/0.0": "x", "a/0.1": "y", "ab": "z", "b/c/d": "w"
    }));
    let store = ReferenceStore::new(set);
    let all: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(StoreKey::into_string)
        .collect();
    assert_eq!(
        all,
        [".zgroup", "a/.zarray", "a/0.0", "a/0.1", "ab", "b/c/d"]
    );
    let below_a = store.list_prefix(&StorePrefix::new("a/")).await.unwrap();
    assert_eq!(below_a, [key("a/.zarray"), key("a/0.0"), key("a/0.1")]);
    let root = store.list_dir(&StorePrefix::root()).await.unwrap();
    assert_eq!(root.keys, [key(".zgroup"), key("ab")]);
    assert_eq!(
        root.prefixes,
        [StorePrefix::new("a/"), StorePrefix::new("b/")]
    );
    assert!(matches!(
        store.set(&key("a/0.0"), Bytes::new()).await,
        Err(Error::ReadOnly { .. })
    ));
    assert!(matches!(
        store.erase(&key("a/0.0")).await,
        Err(Error::ReadOnly { .. })
    ));
    assert!(matches!(
        store.erase_prefix(&StorePrefix::root()).await,
        Err(Error::ReadOnly { .. })
    ));
    assert_eq!(
        store.get(&key("a/0.1")).await.unwrap().as_deref(),
        Some(&b"y"[..])
    );
}

#[test]
fn written_sets_read_back_the_same() {
    let mut set = References::new();
    set.insert(
        key("text"),
        Reference::Inline(Bytes::from_static(b"{\"a\": 1}\n")),
    )
    .unwrap();
    set.insert(
        key("bin"),
        Reference::Inline(Bytes::from_static(&[0, 159, 255])),
    )
    .unwrap();
    set.insert(
        key("looks"),
        Reference::Inline(Bytes::from_static(b"base64:AAA=")),
    )
    .unwrap();
    set.insert(key("r"), range("s3://b/f.nc", 7, 9)).unwrap();
    set.insert(key("w"), Reference::Whole { url: None })
        .unwrap();
    assert!(set.insert(key("bad"), range("f", u64::MAX, 1)).is_err());
    let json = set.to_json();
    assert_eq!(json["version"], 1);
    assert_eq!(json["refs"]["text"], "{\"a\": 1}\n");
    assert_eq!(json["refs"]["bin"], "base64:AJ//");
    assert_eq!(json["refs"]["r"], json!(["s3://b/f.nc", 7, 9]));
    assert_eq!(json["refs"]["w"], json!([null]));
    assert_eq!(References::from_json_value(&json).unwrap(), set);
}

#[tokio::test]
async fn reference_stores_pass_the_read_checks_of_the_conformance_suite() {
    let values = zarr_store::testing::sample_values();
    // Every value a range of one packed file, behind a mapped store.
    let files = Arc::new(MemoryStore::new());
    let mut blob = Vec::new();
    let mut ranged = References::new();
    let mut inline = References::new();
    for (k, value) in &values {
        blob.extend_from_slice(b"--");
        let offset = blob.len() as u64;
        blob.extend_from_slice(value);
        ranged
            .insert(
                k.clone(),
                range("m://packed.bin", offset, value.len() as u64),
            )
            .unwrap();
        inline
            .insert(k.clone(), Reference::Inline(value.clone()))
            .unwrap();
    }
    blob.extend_from_slice(b"trailing bytes no reference covers");
    files
        .set(&key("packed.bin"), Bytes::from(blob))
        .await
        .unwrap();
    let store = ReferenceStore::new(ranged).with_target("m://", files as _);
    zarr_store::testing::check_readable(&store, &values).await;
    // The same values inline.
    zarr_store::testing::check_readable(&ReferenceStore::new(inline), &values).await;
}
