//! The conformance suite: the behaviour every store must have, as runnable checks.
//!
//! Enabled by the `testing` feature. Every backend of this crate runs it in its tests, and a
//! backend written outside the crate proves itself the same way:
//!
//! ```
//! use std::sync::Arc;
//! use zarr_store::{MemoryStore, testing};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // Use a multi-threaded runtime in real tests so that the concurrency checks run in parallel.
//! let options = testing::SuiteOptions::default().with_large_value_bytes(1 << 20);
//! testing::run_conformance_with(Arc::new(MemoryStore::new()), &options).await;
//! # }
//! ```
//!
//! The checks panic, with a message naming the check and what differed, as test assertions do.
//! [`run_conformance`] needs an empty store (use a fresh directory, bucket prefix or
//! [`PrefixStore`](crate::PrefixStore)) and leaves it empty when it passes. Each check works
//! under its own top-level prefix and erases it at the end, so the checks can also be run one
//! at a time. The suite needs a Tokio runtime: it spawns tasks to write concurrently.
//!
//! For a read-only store, seed it with [`sample_values`] by other means and run
//! [`check_readable`].

use std::fmt::Debug;
use std::sync::Arc;

use bytes::Bytes;

use crate::{
    ByteRange, Error, ListDir, ListableStore, ReadableStore, ReadableStoreExt, Result, Store,
    StoreKey, StorePrefix, WritableStore,
};

/// Options of the conformance suite.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SuiteOptions {
    /// Size of the value written and read by [`check_large_value`]; default 100 MiB plus a bit
    /// more, so that values over 100 MiB are known to work. Set 0 to skip the check.
    pub large_value_bytes: u64,
    /// How many tasks [`check_concurrent_writers`] runs at once; default 32.
    pub concurrent_writers: usize,
    /// Whether a read of a value while it is being replaced sees the old or the new value
    /// whole, never part of one (default `true`). Stores that write in place (such as a
    /// `FilesystemStore` with `atomic_writes` off) set `false`: [`check_concurrent_writers`]
    /// then reads no value while it is being written.
    pub atomic_writes: bool,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        Self {
            large_value_bytes: 100 * 1024 * 1024 + 12_345,
            concurrent_writers: 32,
            atomic_writes: true,
        }
    }
}

impl SuiteOptions {
    /// Set [`large_value_bytes`](SuiteOptions::large_value_bytes).
    #[must_use]
    pub fn with_large_value_bytes(mut self, bytes: u64) -> Self {
        self.large_value_bytes = bytes;
        self
    }

    /// Set [`concurrent_writers`](SuiteOptions::concurrent_writers).
    #[must_use]
    pub fn with_concurrent_writers(mut self, writers: usize) -> Self {
        self.concurrent_writers = writers;
        self
    }

    /// Set [`atomic_writes`](SuiteOptions::atomic_writes).
    #[must_use]
    pub fn with_atomic_writes(mut self, atomic: bool) -> Self {
        self.atomic_writes = atomic;
        self
    }
}

/// Run every check with the default options. The store must be empty.
///
/// # Panics
/// When the store fails a check; the message names the check and the difference.
pub async fn run_conformance<S: Store + ?Sized>(store: Arc<S>) {
    run_conformance_with(store, &SuiteOptions::default()).await;
}

/// Run every check. The store must be empty.
///
/// # Panics
/// When the store fails a check; the message names the check and the difference.
pub async fn run_conformance_with<S: Store + ?Sized>(store: Arc<S>, options: &SuiteOptions) {
    check_empty(&*store).await;
    check_set_get(&*store).await;
    check_readable_after_seeding(&*store).await;
    check_partial_reads(&*store).await;
    check_ranges_beyond_the_value(&*store).await;
    check_missing_and_repeated_keys(&*store).await;
    check_set_partial_values(&*store).await;
    check_erase(&*store).await;
    check_listing(&*store).await;
    check_concurrent_writers_with(Arc::clone(&store), options).await;
    if options.large_value_bytes > 0 {
        check_large_value(&*store, options.large_value_bytes).await;
    }
    check_erase_everything(&*store).await;
}

/// Deterministic bytes: `len` bytes derived from `seed`.
#[must_use]
pub fn pattern(len: usize, seed: u64) -> Bytes {
    let mut out = Vec::with_capacity(len);
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while out.len() < len {
        // xorshift64: fast enough for values over 100 MiB in debug builds.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let take = (len - out.len()).min(8);
        out.extend_from_slice(&state.to_le_bytes()[..take]);
    }
    Bytes::from(out)
}

/// The values [`check_readable`] expects, for seeding a read-only store.
#[must_use]
pub fn sample_values() -> Vec<(StoreKey, Bytes)> {
    vec![
        (
            StoreKey::new("readable/zarr.json"),
            Bytes::from_static(br#"{"zarr_format":3}"#),
        ),
        (StoreKey::new("readable/empty"), Bytes::new()),
        (StoreKey::new("readable/c/0/0"), pattern(1000, 1)),
        (StoreKey::new("readable/c/0/1"), pattern(65_536 + 17, 2)),
    ]
}

/// Unwrap `result`, panicking with the check's name and the whole error chain.
#[track_caller]
fn ok<T>(check: &str, what: &str, result: Result<T>) -> T {
    match result {
        Ok(value) => value,
        Err(err) => panic!("{check}: {what} failed: {}", chain(&err)),
    }
}

fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Compare bytes without printing megabytes when they differ.
#[track_caller]
fn same_bytes(check: &str, what: &str, got: Option<&[u8]>, expected: Option<&[u8]>) {
    match (got, expected) {
        (None, None) => {}
        (Some(got), Some(expected)) if got == expected => {}
        (Some(got), Some(expected)) => {
            let at = got
                .iter()
                .zip(expected)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(expected.len()));
            panic!(
                "{check}: {what}: got {} bytes, expected {}; first difference at byte {at}",
                got.len(),
                expected.len()
            );
        }
        (got, expected) => panic!(
            "{check}: {what}: got {}, expected {}",
            describe(got),
            describe(expected)
        ),
    }
}

fn describe(value: Option<&[u8]>) -> String {
    match value {
        None => "no value".into(),
        Some(bytes) => format!("{} bytes", bytes.len()),
    }
}

#[track_caller]
fn same<T: PartialEq + Debug>(check: &str, what: &str, got: T, expected: T) {
    assert!(
        got == expected,
        "{check}: {what}: got {got:?}, expected {expected:?}"
    );
}

fn keys(names: &[&str]) -> Vec<StoreKey> {
    names.iter().map(|name| StoreKey::new(name)).collect()
}

fn slice(value: &[u8], range: std::ops::Range<usize>) -> Option<&[u8]> {
    Some(&value[range])
}

async fn cleanup<S: WritableStore + ListableStore + ?Sized>(check: &str, store: &S, prefix: &str) {
    let prefix = StorePrefix::new(prefix);
    ok(check, "erase_prefix", store.erase_prefix(&prefix).await);
    let left = ok(check, "list_prefix", store.list_prefix(&prefix).await);
    same(check, "keys left after erase_prefix", left, vec![]);
}

/// An empty store lists nothing and answers `None` for any key.
///
/// # Panics
/// When the store is not empty or misbehaves.
pub async fn check_empty<S: Store + ?Sized>(store: &S) {
    let check = "empty store";
    let all = ok(check, "list", store.list().await);
    assert!(
        all.is_empty(),
        "{check}: the conformance suite needs an empty store, found {} keys (first {:?})",
        all.len(),
        all.first()
    );
    same(
        check,
        "list_dir of the root",
        ok(
            check,
            "list_dir",
            store.list_dir(&StorePrefix::root()).await,
        ),
        ListDir::default(),
    );
    let missing = StoreKey::new("missing/key");
    same(
        check,
        "get of a missing key",
        ok(check, "get", store.get(&missing).await),
        None,
    );
    same(
        check,
        "size of a missing key",
        ok(check, "size", store.size(&missing).await),
        None,
    );
    same(
        check,
        "exists",
        ok(check, "exists", store.exists(&missing).await),
        false,
    );
    same(
        check,
        "partial read of a missing key",
        ok(
            check,
            "get_partial_values",
            store
                .get_partial_values(&[
                    (missing.clone(), ByteRange::new(0, 4)),
                    (missing.clone(), ByteRange::suffix(4)),
                    (missing.clone(), ByteRange::from_offset(4)),
                ])
                .await,
        ),
        vec![None, None, None],
    );
    same(
        check,
        "empty batch",
        ok(
            check,
            "get_partial_values",
            store.get_partial_values(&[]).await,
        ),
        vec![],
    );
    ok(check, "erase of a missing key", store.erase(&missing).await);
    ok(
        check,
        "erase_values of missing keys",
        store.erase_values(std::slice::from_ref(&missing)).await,
    );
    ok(
        check,
        "erase_prefix of a missing prefix",
        store.erase_prefix(&StorePrefix::new("missing/")).await,
    );
    same(
        check,
        "list_prefix of a missing prefix",
        ok(
            check,
            "list_prefix",
            store.list_prefix(&StorePrefix::new("missing/")).await,
        ),
        vec![],
    );
}

/// Whole values round-trip: empty, small, binary, deep keys, Unicode keys; overwrites replace.
///
/// # Panics
/// When the store misbehaves.
pub async fn check_set_get<S: Store + ?Sized>(store: &S) {
    let check = "set and get";
    let values = [
        ("basic/empty", Bytes::new()),
        ("basic/small", Bytes::from_static(b"hello")),
        ("basic/binary", pattern(256_000, 3)),
        ("basic/deep/a/b/c/d/e/f", Bytes::from_static(b"deep")),
        (
            "basic/unicode/\u{e9}t\u{e9} \u{fc}",
            Bytes::from_static(b"unicode"),
        ),
        ("basic/dots/.zattrs", Bytes::from_static(b"{}")),
        // Keys are case-sensitive (SPEC-NOTES checklist 98); a filesystem store on a
        // case-insensitive filesystem fails here.
        ("basic/case/x", Bytes::from_static(b"lower")),
        ("basic/case/X", Bytes::from_static(b"upper")),
    ];
    for (name, value) in &values {
        ok(
            check,
            "set",
            store.set(&StoreKey::new(name), value.clone()).await,
        );
    }
    for (name, value) in &values {
        let key = StoreKey::new(name);
        let got = ok(check, "get", store.get(&key).await);
        same_bytes(check, &format!("get {name}"), got.as_deref(), Some(value));
        same(
            check,
            &format!("size of {name}"),
            ok(check, "size", store.size(&key).await),
            Some(value.len() as u64),
        );
        same(
            check,
            "exists",
            ok(check, "exists", store.exists(&key).await),
            true,
        );
    }
    let key = StoreKey::new("basic/binary");
    ok(
        check,
        "overwrite",
        store.set(&key, Bytes::from_static(b"shorter")).await,
    );
    same_bytes(
        check,
        "get after a shorter overwrite",
        ok(check, "get", store.get(&key).await).as_deref(),
        Some(b"shorter"),
    );
    let longer = pattern(300_000, 4);
    ok(check, "overwrite", store.set(&key, longer.clone()).await);
    same_bytes(
        check,
        "get after a longer overwrite",
        ok(check, "get", store.get(&key).await).as_deref(),
        Some(&longer),
    );
    cleanup(check, store, "basic/").await;
}

/// Seed [`sample_values`], run [`check_readable`], and erase them.
async fn check_readable_after_seeding<S: Store + ?Sized>(store: &S) {
    let check = "readable";
    let values = sample_values();
    for (key, value) in &values {
        ok(check, "set", store.set(key, value.clone()).await);
    }
    check_readable(store, &values).await;
    cleanup(check, store, "readable/").await;
}

/// Read checks for any store holding `values` (for example [`sample_values`]): whole reads,
/// sizes, every range form, repeated and missing keys, and ranges beyond the end.
///
/// Needs only [`ReadableStore`], so it also runs on read-only stores. `values` must hold at
/// least one non-empty value, and the key `"missing/key"` must not exist.
///
/// # Panics
/// When the store does not hold `values` or misbehaves.
pub async fn check_readable<S: ReadableStore + ?Sized>(store: &S, values: &[(StoreKey, Bytes)]) {
    let check = "readable";
    let missing = StoreKey::new("missing/key");
    let mut requests = Vec::new();
    let mut expected: Vec<Option<Bytes>> = Vec::new();
    for (key, value) in values {
        let got = ok(check, "get", store.get(key).await);
        same_bytes(check, &format!("get {key}"), got.as_deref(), Some(value));
        same(
            check,
            &format!("size of {key}"),
            ok(check, "size", store.size(key).await),
            Some(value.len() as u64),
        );
        let len = value.len() as u64;
        let ranges = [
            ByteRange::FULL,
            ByteRange::new(0, 0),
            ByteRange::new(0, len.min(7)),
            ByteRange::new(len / 3, len / 2),
            ByteRange::new(len, len),
            ByteRange::from_offset(len / 2),
            ByteRange::from_offset(len),
            ByteRange::suffix(0),
            ByteRange::suffix(len.min(16)),
            ByteRange::suffix(len),
        ];
        for range in ranges {
            requests.push((key.clone(), range));
            requests.push((missing.clone(), range));
            let part = ok(check, "resolve", range.slice(value));
            expected.push(Some(part));
            expected.push(None);
        }
        // One value, one range at a time, through the extension trait.
        let single = ok(
            check,
            "get_range",
            store.get_range(key, ByteRange::suffix(len.min(5))).await,
        );
        same_bytes(
            check,
            &format!("get_range suffix of {key}"),
            single.as_deref(),
            Some(&value[value.len() - value.len().min(5)..]),
        );
    }
    let got = ok(
        check,
        "get_partial_values",
        store.get_partial_values(&requests).await,
    );
    same(check, "number of answers", got.len(), expected.len());
    for (i, ((key, range), (got, expected))) in
        requests.iter().zip(got.iter().zip(&expected)).enumerate()
    {
        same_bytes(
            check,
            &format!("answer {i} ({key}, {range})"),
            got.as_deref(),
            expected.as_deref(),
        );
    }
    if let Some((key, value)) = values.iter().find(|(_, value)| !value.is_empty()) {
        let len = value.len() as u64;
        for range in [
            ByteRange::new(0, len + 1),
            ByteRange::new(len + 1, len + 2),
            ByteRange::from_offset(len + 1),
            ByteRange::suffix(len + 1),
        ] {
            expect_out_of_bounds(check, store, key, range, len).await;
        }
    }
}

async fn expect_out_of_bounds<S: ReadableStore + ?Sized>(
    check: &str,
    store: &S,
    key: &StoreKey,
    range: ByteRange,
    size: u64,
) {
    match store.get_partial_values(&[(key.clone(), range)]).await {
        Err(Error::RangeOutOfBounds {
            key: Some(k),
            range: r,
            size: s,
        }) => {
            same(
                check,
                &format!("key named by the error for {range}"),
                &k,
                key,
            );
            same(
                check,
                &format!("range named by the error for {range}"),
                r,
                range,
            );
            same(
                check,
                &format!("size named by the error for {range}"),
                s,
                size,
            );
        }
        other => panic!(
            "{check}: range {range} of the {size}-byte value {key}: expected \
             Error::RangeOutOfBounds, got {:?}",
            other.map_err(|e| chain(&e))
        ),
    }
}

/// Every form of byte range on one value, in one batch, including empty ranges and ranges
/// touching the end, and on an empty value.
///
/// # Panics
/// When the store misbehaves.
pub async fn check_partial_reads<S: Store + ?Sized>(store: &S) {
    let check = "partial reads";
    let key = StoreKey::new("partial/value");
    let empty = StoreKey::new("partial/empty");
    let value = pattern(1000, 5);
    ok(check, "set", store.set(&key, value.clone()).await);
    ok(check, "set", store.set(&empty, Bytes::new()).await);
    let cases: Vec<(StoreKey, ByteRange, Option<&[u8]>)> = vec![
        (key.clone(), ByteRange::new(0, 0), slice(&value, 0..0)),
        (key.clone(), ByteRange::new(0, 10), slice(&value, 0..10)),
        (key.clone(), ByteRange::new(10, 20), slice(&value, 10..20)),
        (
            key.clone(),
            ByteRange::new(500, 501),
            slice(&value, 500..501),
        ),
        (
            key.clone(),
            ByteRange::new(990, 1000),
            slice(&value, 990..1000),
        ),
        (
            key.clone(),
            ByteRange::new(1000, 1000),
            slice(&value, 1000..1000),
        ),
        (key.clone(), ByteRange::new(0, 1000), slice(&value, 0..1000)),
        (key.clone(), ByteRange::FULL, slice(&value, 0..1000)),
        (
            key.clone(),
            ByteRange::from_offset(500),
            slice(&value, 500..1000),
        ),
        (
            key.clone(),
            ByteRange::from_offset(999),
            slice(&value, 999..1000),
        ),
        (
            key.clone(),
            ByteRange::from_offset(1000),
            slice(&value, 1000..1000),
        ),
        (key.clone(), ByteRange::suffix(0), slice(&value, 1000..1000)),
        (key.clone(), ByteRange::suffix(1), slice(&value, 999..1000)),
        (key.clone(), ByteRange::suffix(16), slice(&value, 984..1000)),
        (key.clone(), ByteRange::suffix(1000), slice(&value, 0..1000)),
        (empty.clone(), ByteRange::new(0, 0), Some(b"")),
        (empty.clone(), ByteRange::FULL, Some(b"")),
        (empty.clone(), ByteRange::suffix(0), Some(b"")),
    ];
    let requests: Vec<_> = cases.iter().map(|(k, r, _)| (k.clone(), *r)).collect();
    let got = ok(
        check,
        "get_partial_values",
        store.get_partial_values(&requests).await,
    );
    same(check, "number of answers", got.len(), cases.len());
    for ((key, range, expected), got) in cases.iter().zip(&got) {
        same_bytes(check, &format!("{key} {range}"), got.as_deref(), *expected);
    }
    // The same ranges one call at a time.
    for (key, range, expected) in &cases {
        let got = ok(check, "get_range", store.get_range(key, *range).await);
        same_bytes(
            check,
            &format!("get_range {key} {range}"),
            got.as_deref(),
            *expected,
        );
    }
    cleanup(check, store, "partial/").await;
}

/// Ranges reaching beyond the value are [`Error::RangeOutOfBounds`] naming the key, the range
/// and the size, alone or among valid ranges.
///
/// # Panics
/// When the store misbehaves.
pub async fn check_ranges_beyond_the_value<S: Store + ?Sized>(store: &S) {
    let check = "ranges beyond the value";
    let key = StoreKey::new("bounds/value");
    let empty = StoreKey::new("bounds/empty");
    ok(check, "set", store.set(&key, pattern(100, 6)).await);
    ok(check, "set", store.set(&empty, Bytes::new()).await);
    for range in [
        ByteRange::new(90, 101),
        ByteRange::new(0, 101),
        ByteRange::new(100, 101),
        ByteRange::new(101, 101),
        ByteRange::new(200, 300),
        ByteRange::from_offset(101),
        ByteRange::suffix(101),
    ] {
        expect_out_of_bounds(check, store, &key, range, 100).await;
    }
    for range in [
        ByteRange::new(0, 1),
        ByteRange::from_offset(1),
        ByteRange::suffix(1),
    ] {
        expect_out_of_bounds(check, store, &empty, range, 0).await;
    }
    let mixed = store
        .get_partial_values(&[
            (key.clone(), ByteRange::new(0, 10)),
            (key.clone(), ByteRange::new(95, 105)),
            (key.clone(), ByteRange::suffix(5)),
        ])
        .await;
    assert!(
        matches!(mixed, Err(Error::RangeOutOfBounds { .. })),
        "{check}: a batch with one range beyond the value must fail, got {:?}",
        mixed.map_err(|e| chain(&e))
    );
    cleanup(check, store, "bounds/").await;
}

/// A batch mixing present and missing keys, repeating keys with different ranges, answers in
/// request order with `None` for the missing ones.
///
/// # Panics
/// When the store misbehaves.
pub async fn check_missing_and_repeated_keys<S: Store + ?Sized>(store: &S) {
    let check = "missing and repeated keys";
    let present: Vec<(StoreKey, Bytes)> = (0..5)
        .map(|i| {
            (
                StoreKey::new(&format!("batch/k{i}")),
                pattern(4096 + i * 100, 10 + i as u64),
            )
        })
        .collect();
    for (key, value) in &present {
        ok(check, "set", store.set(key, value.clone()).await);
    }
    let missing = StoreKey::new("batch/missing");
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    // A deterministic shuffle of 600 requests: keys interleaved, ranges repeated.
    let mut state = 12_345_u64;
    for _ in 0..600 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let which = (state >> 33) as usize % 6;
        let start = (state >> 20) % 4000;
        let len = (state >> 10) % 96;
        let range = ByteRange::new(start, start + len);
        if which == 5 {
            requests.push((missing.clone(), range));
            expected.push(None);
        } else {
            let (key, value) = &present[which];
            requests.push((key.clone(), range));
            expected.push(Some(value.slice(start as usize..(start + len) as usize)));
        }
    }
    let got = ok(
        check,
        "get_partial_values",
        store.get_partial_values(&requests).await,
    );
    same(check, "number of answers", got.len(), expected.len());
    for (i, (got, expected)) in got.iter().zip(&expected).enumerate() {
        same_bytes(
            check,
            &format!("answer {i} ({} {})", requests[i].0, requests[i].1),
            got.as_deref(),
            expected.as_deref(),
        );
    }
    cleanup(check, store, "batch/").await;
}

/// Partial writes patch values, extend them with zeros, create missing ones, and refuse
/// overlapping writes without changing anything.
///
/// # Panics
/// When the store misbehaves.
pub async fn check_set_partial_values<S: Store + ?Sized>(store: &S) {
    let check = "set_partial_values";
    let key = StoreKey::new("patch/value");
    let fresh = StoreKey::new("patch/fresh");
    let untouched = StoreKey::new("patch/untouched");
    ok(
        check,
        "set",
        store.set(&key, Bytes::from_static(b"0123456789")).await,
    );
    ok(
        check,
        "set_partial_values",
        store
            .set_partial_values(&[
                (key.clone(), 6, Bytes::from_static(b"cd")),
                (key.clone(), 2, Bytes::from_static(b"ab")),
                (fresh.clone(), 3, Bytes::from_static(b"z")),
                (untouched.clone(), 5, Bytes::new()),
            ])
            .await,
    );
    same_bytes(
        check,
        "patched value",
        ok(check, "get", store.get(&key).await).as_deref(),
        Some(b"01ab45cd89"),
    );
    same_bytes(
        check,
        "value created by a partial write",
        ok(check, "get", store.get(&fresh).await).as_deref(),
        Some(b"\0\0\0z"),
    );
    same(
        check,
        "a zero-byte write creates nothing",
        ok(check, "get", store.get(&untouched).await),
        None,
    );
    ok(
        check,
        "set_partial_values past the end",
        store
            .set_partial_values(&[(key.clone(), 12, Bytes::from_static(b"xy"))])
            .await,
    );
    same_bytes(
        check,
        "value extended past its end",
        ok(check, "get", store.get(&key).await).as_deref(),
        Some(b"01ab45cd89\0\0xy"),
    );
    let overlapping = store
        .set_partial_values(&[
            (fresh.clone(), 0, Bytes::from_static(b"keep")),
            (key.clone(), 0, Bytes::from_static(b"AAA")),
            (key.clone(), 2, Bytes::from_static(b"BB")),
        ])
        .await;
    match overlapping {
        Err(Error::OverlappingWrites { key: k, .. }) => {
            same(check, "key of the overlap", k, key.clone())
        }
        other => panic!(
            "{check}: overlapping writes must be Error::OverlappingWrites, got {:?}",
            other.map_err(|e| chain(&e))
        ),
    }
    same_bytes(
        check,
        "nothing written by a refused batch",
        ok(check, "get", store.get(&fresh).await).as_deref(),
        Some(b"\0\0\0z"),
    );
    same_bytes(
        check,
        "nothing written by a refused batch",
        ok(check, "get", store.get(&key).await).as_deref(),
        Some(b"01ab45cd89\0\0xy"),
    );
    cleanup(check, store, "patch/").await;
}

/// `erase`, `erase_values` and `erase_prefix`: missing keys are fine, a prefix erases its whole
/// subtree and nothing beside it (not even keys sharing its text, such as `a/bc` for `a/b/`).
///
/// # Panics
/// When the store misbehaves.
pub async fn check_erase<S: Store + ?Sized>(store: &S) {
    let check = "erase";
    let all = keys(&[
        "erase/a/1",
        "erase/a/2/x",
        "erase/a/2/y/z",
        "erase/ab/1",
        "erase/a.txt",
        "erase/b",
        "erase/c",
        "erase/d",
    ]);
    for (i, key) in all.iter().enumerate() {
        ok(
            check,
            "set",
            store.set(key, pattern(10 + i, i as u64)).await,
        );
    }
    let c = StoreKey::new("erase/c");
    ok(check, "erase", store.erase(&c).await);
    same(
        check,
        "get after erase",
        ok(check, "get", store.get(&c).await),
        None,
    );
    ok(check, "erase again", store.erase(&c).await);
    ok(
        check,
        "erase_values",
        store
            .erase_values(&keys(&["erase/b", "erase/missing", "erase/d"]))
            .await,
    );
    ok(
        check,
        "erase_prefix",
        store.erase_prefix(&StorePrefix::new("erase/a/")).await,
    );
    let left = ok(
        check,
        "list_prefix",
        store.list_prefix(&StorePrefix::new("erase/")).await,
    );
    same(
        check,
        "keys left",
        left,
        keys(&["erase/a.txt", "erase/ab/1"]),
    );
    for key in &all[..3] {
        same(
            check,
            "get of an erased key",
            ok(check, "get", store.get(key).await),
            None,
        );
    }
    let dir = ok(
        check,
        "list_dir",
        store.list_dir(&StorePrefix::new("erase/")).await,
    );
    same(
        check,
        "list_dir after erase_prefix",
        dir,
        ListDir {
            keys: keys(&["erase/a.txt"]),
            prefixes: vec![StorePrefix::new("erase/ab/")],
        },
    );
    cleanup(check, store, "erase/").await;
}

/// `list`, `list_prefix` and `list_dir` on a nested tree: complete, sorted, segment-aware.
///
/// # Panics
/// When the store misbehaves.
pub async fn check_listing<S: Store + ?Sized>(store: &S) {
    let check = "listing";
    let tree = keys(&[
        "tree/zarr.json",
        "tree/a/zarr.json",
        "tree/a/c/0/0",
        "tree/a/c/0/1",
        "tree/a/c/1/0",
        "tree/b/zarr.json",
        "tree/b/x/y/z/deep",
        "tree/bc",
        "tree/b.txt",
    ]);
    for key in &tree {
        ok(
            check,
            "set",
            store.set(key, Bytes::from(key.as_str().to_owned())).await,
        );
    }
    let mut sorted = tree.clone();
    sorted.sort();
    same(
        check,
        "list",
        ok(check, "list", store.list().await),
        sorted.clone(),
    );
    let prefix = |p: &str| StorePrefix::new(p);
    let list_prefix = |p: &'static str| async move {
        ok(
            check,
            "list_prefix",
            store.list_prefix(&StorePrefix::new(p)).await,
        )
    };
    same(
        check,
        "list_prefix of the root",
        list_prefix("").await,
        sorted.clone(),
    );
    same(
        check,
        "list_prefix tree/",
        list_prefix("tree/").await,
        sorted.clone(),
    );
    same(
        check,
        "list_prefix tree/a/",
        list_prefix("tree/a/").await,
        keys(&[
            "tree/a/c/0/0",
            "tree/a/c/0/1",
            "tree/a/c/1/0",
            "tree/a/zarr.json",
        ]),
    );
    same(
        check,
        "list_prefix tree/b/ (not tree/bc nor tree/b.txt)",
        list_prefix("tree/b/").await,
        keys(&["tree/b/x/y/z/deep", "tree/b/zarr.json"]),
    );
    same(
        check,
        "list_prefix nothing/",
        list_prefix("nothing/").await,
        vec![],
    );
    same(
        check,
        "list_prefix tree/zarr.json/",
        list_prefix("tree/zarr.json/").await,
        vec![],
    );
    let list_dir = |p: &'static str| async move {
        ok(
            check,
            "list_dir",
            store.list_dir(&StorePrefix::new(p)).await,
        )
    };
    same(
        check,
        "list_dir of the root",
        list_dir("").await,
        ListDir {
            keys: vec![],
            prefixes: vec![prefix("tree/")],
        },
    );
    same(
        check,
        "list_dir tree/",
        list_dir("tree/").await,
        ListDir {
            keys: keys(&["tree/b.txt", "tree/bc", "tree/zarr.json"]),
            prefixes: vec![prefix("tree/a/"), prefix("tree/b/")],
        },
    );
    same(
        check,
        "list_dir tree/a/c/",
        list_dir("tree/a/c/").await,
        ListDir {
            keys: vec![],
            prefixes: vec![prefix("tree/a/c/0/"), prefix("tree/a/c/1/")],
        },
    );
    same(
        check,
        "list_dir tree/a/c/0/",
        list_dir("tree/a/c/0/").await,
        ListDir {
            keys: keys(&["tree/a/c/0/0", "tree/a/c/0/1"]),
            prefixes: vec![],
        },
    );
    same(
        check,
        "list_dir tree/b/x/y/z/",
        list_dir("tree/b/x/y/z/").await,
        ListDir {
            keys: keys(&["tree/b/x/y/z/deep"]),
            prefixes: vec![],
        },
    );
    same(
        check,
        "list_dir nothing/",
        list_dir("nothing/").await,
        ListDir::default(),
    );
    same(
        check,
        "list_dir tree/bc/",
        list_dir("tree/bc/").await,
        ListDir::default(),
    );
    cleanup(check, store, "tree/").await;
}

/// Many tasks writing distinct keys at once (some in a shared "directory", some in their own),
/// while others read: every value arrives whole.
///
/// # Panics
/// When the store misbehaves or a task panics.
pub async fn check_concurrent_writers<S: Store + ?Sized>(store: Arc<S>, writers: usize) {
    let options = SuiteOptions::default().with_concurrent_writers(writers);
    check_concurrent_writers_with(store, &options).await;
}

/// [`check_concurrent_writers`] with [`SuiteOptions::concurrent_writers`] tasks; without
/// [`SuiteOptions::atomic_writes`], the tasks do not read the values others are writing.
///
/// # Panics
/// When the store misbehaves or a task panics.
pub async fn check_concurrent_writers_with<S: Store + ?Sized>(
    store: Arc<S>,
    options: &SuiteOptions,
) {
    let check = "concurrent writers";
    let (writers, atomic) = (options.concurrent_writers, options.atomic_writes);
    let mut tasks = Vec::new();
    for i in 0..writers {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            for round in 0..4u64 {
                let shared = StoreKey::new(&format!("concurrent/shared/{i}"));
                let own = StoreKey::new(&format!("concurrent/w{i}/r{round}/value"));
                let value = pattern(1024 + i * 37, i as u64 * 100 + round);
                ok(check, "set", store.set(&shared, value.clone()).await);
                ok(check, "set", store.set(&own, value.clone()).await);
                let read = ok(check, "get", store.get(&own).await);
                same_bytes(
                    check,
                    "read back by the writer",
                    read.as_deref(),
                    Some(&value),
                );
                // Readers of the shared directory see whole values or nothing.
                if !atomic {
                    continue;
                }
                let other = StoreKey::new(&format!("concurrent/shared/{}", (i + 1) % writers));
                if let Some(v) = ok(check, "get", store.get(&other).await) {
                    let j = (i + 1) % writers;
                    assert!(
                        v.len() == 1024 + j * 37,
                        "{check}: torn read of {other}: {} bytes",
                        v.len()
                    );
                }
            }
        }));
    }
    for task in tasks {
        if let Err(err) = task.await {
            panic!("{check}: a writer task failed: {err}");
        }
    }
    for i in 0..writers {
        let shared = StoreKey::new(&format!("concurrent/shared/{i}"));
        let value = pattern(1024 + i * 37, i as u64 * 100 + 3);
        let got = ok(check, "get", store.get(&shared).await);
        same_bytes(
            check,
            &format!("final {shared}"),
            got.as_deref(),
            Some(&value),
        );
    }
    let all = ok(
        check,
        "list_prefix",
        store.list_prefix(&StorePrefix::new("concurrent/")).await,
    );
    same(check, "number of keys written", all.len(), writers * 5);
    cleanup(check, &*store, "concurrent/").await;
}

/// A value of `bytes` bytes (over 100 MiB by default) round-trips whole and by ranges.
///
/// # Panics
/// When the store misbehaves, or `bytes` does not fit in memory.
pub async fn check_large_value<S: Store + ?Sized>(store: &S, bytes: u64) {
    let check = "large value";
    let len = usize::try_from(bytes).expect("the large value must fit in memory");
    let key = StoreKey::new("large/value");
    let value = pattern(len, 42);
    ok(check, "set", store.set(&key, value.clone()).await);
    same(
        check,
        "size",
        ok(check, "size", store.size(&key).await),
        Some(bytes),
    );
    let got = ok(check, "get", store.get(&key).await);
    same_bytes(check, "whole value", got.as_deref(), Some(&value));
    drop(got);
    let mid = bytes / 2;
    let requests = [
        (key.clone(), ByteRange::new(0, 16)),
        (key.clone(), ByteRange::new(mid, mid + 4096)),
        (key.clone(), ByteRange::suffix(1 << 20)),
        (key.clone(), ByteRange::from_offset(bytes - 10)),
    ];
    let got = ok(
        check,
        "get_partial_values",
        store.get_partial_values(&requests).await,
    );
    for ((_, range), got) in requests.iter().zip(&got) {
        let expected = ok(check, "resolve", range.slice(&value));
        same_bytes(
            check,
            &format!("range {range}"),
            got.as_deref(),
            Some(&expected),
        );
    }
    ok(check, "erase", store.erase(&key).await);
    same(
        check,
        "get after erase",
        ok(check, "get", store.get(&key).await),
        None,
    );
    cleanup(check, store, "large/").await;
}

/// `erase_prefix` of the root prefix erases everything and leaves a usable, empty store.
///
/// # Panics
/// When the store misbehaves.
pub async fn check_erase_everything<S: Store + ?Sized>(store: &S) {
    let check = "erase everything";
    for key in keys(&["all/a", "all/b/c", "top"]) {
        ok(
            check,
            "set",
            store.set(&key, Bytes::from_static(b"x")).await,
        );
    }
    ok(
        check,
        "erase_prefix of the root",
        store.erase_prefix(&StorePrefix::root()).await,
    );
    same(
        check,
        "list after erasing everything",
        ok(check, "list", store.list().await),
        vec![],
    );
    let key = StoreKey::new("after/erase");
    ok(
        check,
        "set after erasing everything",
        store.set(&key, Bytes::from_static(b"y")).await,
    );
    same_bytes(
        check,
        "get after erasing everything",
        ok(check, "get", store.get(&key).await).as_deref(),
        Some(b"y"),
    );
    ok(check, "erase", store.erase(&key).await);
    same(
        check,
        "list at the end",
        ok(check, "list", store.list().await),
        vec![],
    );
}
