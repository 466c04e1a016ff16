//! The object_store adapter against a real S3-compatible server (moto).
//!
//! `cargo xtask ci` starts moto and sets `ZARR_TEST_S3_ENDPOINT` and `ZARR_TEST_S3_BUCKET`;
//! for a manual run, `cargo xtask s3-server` starts one and prints the variables to export.
//! Without `ZARR_TEST_S3_ENDPOINT` these tests fail when `CI` is set and are skipped (with a
//! notice) otherwise.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use object_store::ClientOptions;
use object_store::aws::AmazonS3Builder;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use zarr_store::{
    ByteRange, ListableStore, ObjectStoreAdapter, ReadableStore, RecordingStore, StoreKey,
    StorePrefix, WritableStore, testing,
};

struct S3 {
    endpoint: String,
    bucket: String,
}

/// The S3 server to test against, or `None` (after a notice) when there is none outside CI.
fn s3_server(test: &str) -> Option<S3> {
    match std::env::var("ZARR_TEST_S3_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => Some(S3 {
            endpoint,
            bucket: std::env::var("ZARR_TEST_S3_BUCKET").unwrap_or_else(|_| "zarr-test".into()),
        }),
        _ => {
            let in_ci =
                std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(
                !in_ci,
                "{test}: ZARR_TEST_S3_ENDPOINT is not set but CI is: the S3 tests never skip in CI. \
                 Run the tests through `cargo xtask ci`, which starts an S3 server (moto) and sets it."
            );
            eprintln!(
                "NOTICE: skipping {test}: ZARR_TEST_S3_ENDPOINT is not set. Run `cargo xtask s3-server` \
                 and export the variables it prints to run the S3 tests."
            );
            None
        }
    }
}

/// A prefix no other test run uses.
fn unique(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{name}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn credentials() -> Vec<(&'static str, String)> {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    vec![
        ("aws_access_key_id", env("AWS_ACCESS_KEY_ID", "testing")),
        (
            "aws_secret_access_key",
            env("AWS_SECRET_ACCESS_KEY", "testing"),
        ),
        ("aws_region", env("AWS_REGION", "us-east-1")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_store_passes_the_conformance_suite() {
    let Some(s3) = s3_server("s3_store_passes_the_conformance_suite") else {
        return;
    };
    let url = format!("s3://{}/{}/data.zarr", s3.bucket, unique("conformance"));
    let mut options = credentials();
    options.extend([
        ("aws_endpoint", s3.endpoint.clone()),
        ("aws_allow_http", "true".into()),
        ("aws_virtual_hosted_style_request", "false".into()),
    ]);
    let store = ObjectStoreAdapter::from_url_with_options(&url, options).unwrap();
    testing::run_conformance(Arc::new(store)).await;
}

/// One HTTP request as the client sent it.
#[derive(Clone, Debug)]
struct Sent {
    method: String,
    uri: String,
    range: Option<String>,
}

/// An HTTP connector that records every request object_store sends.
#[derive(Debug, Default, Clone)]
struct CountingConnector {
    sent: Arc<Mutex<Vec<Sent>>>,
}

impl CountingConnector {
    fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.sent.lock().unwrap())
    }
}

#[derive(Debug)]
struct CountingService {
    inner: HttpClient,
    sent: Arc<Mutex<Vec<Sent>>>,
}

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(CountingService {
            inner,
            sent: Arc::clone(&self.sent),
        }))
    }
}

#[async_trait]
impl HttpService for CountingService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        self.sent.lock().unwrap().push(Sent {
            method: req.method().to_string(),
            uri: req.uri().to_string(),
            range: req
                .headers()
                .get("range")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        });
        self.inner.execute(req).await
    }
}

fn counted_store(s3: &S3, connector: &CountingConnector, base: &str) -> ObjectStoreAdapter {
    let mut builder = AmazonS3Builder::new()
        .with_endpoint(&s3.endpoint)
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .with_bucket_name(&s3.bucket)
        .with_http_connector(connector.clone());
    for (key, value) in credentials() {
        builder = builder.with_config(key.parse().unwrap(), value);
    }
    ObjectStoreAdapter::new(Arc::new(builder.build().unwrap()))
        .with_base_path(base)
        .unwrap()
}

#[tokio::test]
async fn s3_near_ranges_in_one_object_cost_one_request() {
    let Some(s3) = s3_server("s3_near_ranges_in_one_object_cost_one_request") else {
        return;
    };
    let connector = CountingConnector::default();
    let store = RecordingStore::new(counted_store(&s3, &connector, &unique("ranges")));
    let key = StoreKey::new("shard");
    let value = testing::pattern(4 << 20, 7);
    store.set(&key, value.clone()).await.unwrap();
    connector.take();
    store.clear();

    // 100 ranges of 1,000 bytes, 9 KiB apart: near enough to share one request.
    let requests: Vec<_> = (0..100u64)
        .map(|i| {
            (
                key.clone(),
                ByteRange::with_length(100_000 + i * 10_000, 1000).unwrap(),
            )
        })
        .collect();
    let got = store.get_partial_values(&requests).await.unwrap();
    for ((_, range), got) in requests.iter().zip(&got) {
        assert_eq!(got.as_ref().unwrap(), &range.slice(&value).unwrap());
    }
    let sent = connector.take();
    assert_eq!(sent.len(), 1, "expected one request, sent {sent:#?}");
    assert_eq!(sent[0].method, "GET");
    assert_eq!(sent[0].range.as_deref(), Some("bytes=100000-1090999"));
    let stats = store.stats();
    assert_eq!(
        (stats.partial_reads, stats.ranges, stats.bytes_read),
        (1, 100, 100_000)
    );

    // A shard index at the end is one suffix request, without knowing the size.
    let got = store
        .get_partial_values(&[(key.clone(), ByteRange::suffix(4096))])
        .await
        .unwrap();
    assert_eq!(got[0].as_ref().unwrap(), &value.slice(value.len() - 4096..));
    let sent = connector.take();
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0].range.as_deref(), Some("bytes=-4096"));

    // Far-apart ranges are separate requests.
    store
        .get_partial_values(&[
            (key.clone(), ByteRange::new(0, 10)),
            (key.clone(), ByteRange::new(3 << 20, (3 << 20) + 10)),
        ])
        .await
        .unwrap();
    assert_eq!(connector.take().len(), 2);
}

#[tokio::test]
async fn s3_list_dir_is_one_delimiter_listing() {
    let Some(s3) = s3_server("s3_list_dir_is_one_delimiter_listing") else {
        return;
    };
    let connector = CountingConnector::default();
    let store = counted_store(&s3, &connector, &unique("listing"));
    for key in ["zarr.json", "a/zarr.json", "a/c/0", "b/zarr.json"] {
        store
            .set(&StoreKey::new(key), Bytes::from_static(b"{}"))
            .await
            .unwrap();
    }
    connector.take();
    let listed = store.list_dir(&StorePrefix::root()).await.unwrap();
    assert_eq!(listed.keys, vec![StoreKey::new("zarr.json")]);
    assert_eq!(
        listed.prefixes,
        vec![StorePrefix::new("a/"), StorePrefix::new("b/")]
    );
    let sent = connector.take();
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(sent[0].uri.contains("delimiter=%2F"), "{}", sent[0].uri);
}
