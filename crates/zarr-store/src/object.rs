//! An adapter from any [`object_store::ObjectStore`] (S3, GCS, Azure, HTTP, local, memory).

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutPayload,
};
use url::Url;

use crate::fallback::{RangesByKey, ranges_by_key};
use crate::{
    ByteRange, ByteRangeForm, Error, ListDir, ListableStore, ReadableStore, Result, StoreKey,
    StorePrefix, WritableStore, fallback,
};

/// Options of an [`ObjectStoreAdapter`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ObjectStoreOptions {
    /// Ranges of one object whose gap is at most this many bytes are fetched with one request
    /// and sliced apart. Default 1 MiB (as `object_store`'s own coalescing).
    pub coalesce_gap: u64,
    /// How many requests one call keeps in flight. Default 16.
    pub max_concurrency: usize,
}

impl Default for ObjectStoreOptions {
    fn default() -> Self {
        Self {
            coalesce_gap: 1024 * 1024,
            max_concurrency: 16,
        }
    }
}

impl ObjectStoreOptions {
    /// Set [`coalesce_gap`](ObjectStoreOptions::coalesce_gap).
    #[must_use]
    pub fn with_coalesce_gap(mut self, bytes: u64) -> Self {
        self.coalesce_gap = bytes;
        self
    }

    /// Set [`max_concurrency`](ObjectStoreOptions::max_concurrency) (at least 1).
    #[must_use]
    pub fn with_max_concurrency(mut self, requests: usize) -> Self {
        self.max_concurrency = requests.max(1);
        self
    }
}

/// A store over any [`object_store::ObjectStore`]: Amazon S3 and compatible servers, Google
/// Cloud Storage, Azure Blob Storage, HTTP(S) (read-only), the local filesystem or memory.
///
/// Keys are object paths below an optional base path (`s3://bucket/base/path` stores key `k`
/// at `base/path/k`).
///
/// - [`get_partial_values`](ReadableStore::get_partial_values) groups the ranges per object.
///   Bounded ranges of one object within [`coalesce_gap`](ObjectStoreOptions::coalesce_gap) of
///   each other cost one request (a span covering them, sliced apart without copying);
///   offset and suffix ranges cost one request each (`Range: bytes=N-` and `bytes=-N`), so a
///   shard index at the end of an object is read without knowing its length. Objects are read
///   concurrently. Every range is checked against the object's size reported with the
///   response, so a range beyond the end is [`Error::RangeOutOfBounds`], never a short answer.
///   (The adapter coalesces itself rather than calling `ObjectStore::get_ranges`: for HTTP
///   backends its default implementation slices a merged response as if every range lay
///   inside the object, answering a range past the end short or panicking.)
/// - [`list_dir`](ListableStore::list_dir) is one delimiter listing.
/// - `set_partial_values` reads, patches and rewrites each touched object (object stores have
///   no partial writes).
/// - Objects whose names are not valid keys (such as names containing a backslash) are
///   not listed.
///
/// ```
/// use std::sync::Arc;
/// use bytes::Bytes;
/// use zarr_store::{ByteRange, ObjectStoreAdapter, ReadableStore, StoreKey, WritableStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = ObjectStoreAdapter::new(Arc::new(object_store::memory::InMemory::new()));
/// // Or: ObjectStoreAdapter::from_url("s3://bucket/path/to/data.zarr")?
/// let key = StoreKey::new("c/0/0");
/// store.set(&key, Bytes::from_static(b"chunk bytes, then an index")).await?;
/// let index = store.get_partial_values(&[(key, ByteRange::suffix(5))]).await?;
/// assert_eq!(index[0].as_deref(), Some(&b"index"[..]));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ObjectStoreAdapter {
    store: Arc<dyn ObjectStore>,
    /// Base path, without leading or trailing `/`; empty for the store's root.
    base: String,
    read_only: bool,
    options: ObjectStoreOptions,
}

/// The outcome of one GET of a part of an object.
struct Fetched {
    bytes: Bytes,
    /// The absolute range `bytes` covers.
    range: Range<u64>,
    /// The object's size.
    size: u64,
}

/// What went wrong with a request of the fast path.
enum FetchError {
    /// The object does not exist.
    Missing,
    /// Anything else (it may be a range past the end; the caller checks the size).
    Other(Error),
}

impl ObjectStoreAdapter {
    /// Wrap `store`, with keys at the root of it.
    #[must_use]
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        Self {
            store,
            base: String::new(),
            read_only: false,
            options: ObjectStoreOptions::default(),
        }
    }

    /// Keep keys below `base` (an object path such as `"data/array.zarr"`).
    ///
    /// # Errors
    /// [`Error::InvalidPrefix`] if `base` has empty, `.` or `..` segments or control
    /// characters.
    pub fn with_base_path(mut self, base: &str) -> Result<Self> {
        let path = Path::parse(base).map_err(|_| Error::InvalidPrefix {
            prefix: base.to_owned(),
            reason: "not a valid object path",
        })?;
        self.base = path.as_ref().to_owned();
        Ok(self)
    }

    /// Refuse (or allow) writes with [`Error::ReadOnly`].
    #[must_use]
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Set the options.
    #[must_use]
    pub fn with_options(mut self, options: ObjectStoreOptions) -> Self {
        self.options = options;
        self
    }

    /// The wrapped object store.
    #[must_use]
    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The base path keys live below (empty for the root).
    #[must_use]
    pub fn base_path(&self) -> &str {
        &self.base
    }

    /// Whether writes are refused.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Open a store from a URL, configured from the environment as `object_store` does.
    ///
    /// | URL | backend | cargo feature |
    /// |---|---|---|
    /// | `s3://bucket/path`, `s3a://…`, `https://…amazonaws.com/…` | Amazon S3 | `s3` |
    /// | `gs://bucket/path` | Google Cloud Storage | `gcs` |
    /// | `az://container/path`, `abfs[s]://…`, `https://…blob.core.windows.net/…` | Azure | `azure` |
    /// | `http://host/path`, `https://host/path` | HTTP, **read-only** (plain HTTP allowed for `http://`) | `http` |
    /// | `file:///absolute/path` | local filesystem (`object_store`'s) | always |
    /// | `memory:///path` | a new, empty in-memory store | always |
    ///
    /// Cloud backends read their `AWS_*`, `GOOGLE_*` or `AZURE_*` variables (credentials,
    /// region, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`, …) through the builders' `from_env`.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`], [`Error::UnsupportedUrl`] (unknown scheme, or its feature is not
    /// enabled), [`Error::ObjectStore`] if the backend cannot be configured.
    pub fn from_url(url: &str) -> Result<Self> {
        Self::from_url_with_options(url, std::iter::empty::<(&str, &str)>())
    }

    /// Like [`from_url`](ObjectStoreAdapter::from_url), with configuration options that
    /// override the environment: the backend builders' keys, such as `aws_endpoint`,
    /// `aws_allow_http`, `aws_access_key_id` or `google_service_account` (case-insensitive).
    ///
    /// # Errors
    /// As for [`from_url`](ObjectStoreAdapter::from_url), and [`Error::UnknownOption`] for an
    /// option the backend does not know.
    pub fn from_url_with_options<I, K, V>(url: &str, options: I) -> Result<Self>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        let parsed = Url::parse(url).map_err(|source| Error::InvalidUrl {
            url: url.to_owned(),
            source,
        })?;
        let (scheme, path) =
            ObjectStoreScheme::parse(&parsed).map_err(|e| Error::UnsupportedUrl {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        let options: Vec<(String, String)> = options
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_ascii_lowercase(), v.into()))
            .collect();
        let configure = |source| Error::ObjectStore {
            operation: "configure a store for",
            path: url.to_owned(),
            source,
        };
        // HTTP servers are read through; writes would need WebDAV.
        let read_only = scheme == ObjectStoreScheme::Http;
        let mut base = path.as_ref().to_owned();
        let store: Arc<dyn ObjectStore> = match scheme {
            ObjectStoreScheme::Memory => {
                no_options(&options, "memory")?;
                Arc::new(object_store::memory::InMemory::new())
            }
            ObjectStoreScheme::Local => {
                no_options(&options, "file")?;
                let dir = parsed.to_file_path().map_err(|()| Error::UnsupportedUrl {
                    url: url.to_owned(),
                    reason: "not a local file path".into(),
                })?;
                std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
                    operation: "create the store directory",
                    path: dir.clone(),
                    source,
                })?;
                base.clear();
                Arc::new(
                    object_store::local::LocalFileSystem::new_with_prefix(&dir)
                        .map_err(configure)?
                        .with_automatic_cleanup(true),
                )
            }
            #[cfg(feature = "s3")]
            ObjectStoreScheme::AmazonS3 => {
                use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
                let mut builder = AmazonS3Builder::from_env().with_url(url);
                for (key, value) in options {
                    let config: AmazonS3ConfigKey = parse_option(&key, "s3")?;
                    builder = builder.with_config(config, value);
                }
                Arc::new(builder.build().map_err(configure)?)
            }
            #[cfg(feature = "gcs")]
            ObjectStoreScheme::GoogleCloudStorage => {
                use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
                let mut builder = GoogleCloudStorageBuilder::from_env().with_url(url);
                for (key, value) in options {
                    let config: GoogleConfigKey = parse_option(&key, "gcs")?;
                    builder = builder.with_config(config, value);
                }
                Arc::new(builder.build().map_err(configure)?)
            }
            #[cfg(feature = "azure")]
            ObjectStoreScheme::MicrosoftAzure => {
                use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
                let mut builder = MicrosoftAzureBuilder::from_env().with_url(url);
                for (key, value) in options {
                    let config: AzureConfigKey = parse_option(&key, "azure")?;
                    builder = builder.with_config(config, value);
                }
                Arc::new(builder.build().map_err(configure)?)
            }
            #[cfg(feature = "http")]
            ObjectStoreScheme::Http => {
                use object_store::ClientConfigKey;
                use object_store::http::HttpBuilder;
                let mut builder = HttpBuilder::new().with_url(&parsed[..url::Position::BeforePath]);
                // An explicit http:// URL asks for plain HTTP.
                if parsed.scheme() == "http" {
                    builder = builder.with_config(ClientConfigKey::AllowHttp, "true");
                }
                for (key, value) in options {
                    let config: ClientConfigKey = parse_option(&key, "http")?;
                    builder = builder.with_config(config, value);
                }
                Arc::new(builder.build().map_err(configure)?)
            }
            other => {
                return Err(Error::UnsupportedUrl {
                    url: url.to_owned(),
                    reason: format!(
                        "{other:?} support is not enabled (cargo features `s3`, `gcs`, `azure`, \
                         `http` of zarr-store or zarr)"
                    ),
                });
            }
        };
        let adapter = Self::new(store).with_read_only(read_only);
        adapter.with_base_path(&base)
    }

    fn path(&self, key: &StoreKey) -> Result<Path> {
        let raw = if self.base.is_empty() {
            key.as_str().to_owned()
        } else {
            format!("{}/{key}", self.base)
        };
        Path::parse(raw).map_err(|_| Error::InvalidKey {
            key: key.as_str().to_owned(),
            reason: "object paths cannot contain control characters",
        })
    }

    /// The object path of `prefix`, or `None` for the root of an adapter without a base.
    fn prefix_path(&self, prefix: &StorePrefix) -> Result<Option<Path>> {
        let stem = prefix.as_str().trim_end_matches('/');
        let raw = match (self.base.is_empty(), stem.is_empty()) {
            (true, true) => return Ok(None),
            (true, false) => stem.to_owned(),
            (false, true) => self.base.clone(),
            (false, false) => format!("{}/{stem}", self.base),
        };
        Path::parse(raw)
            .map(Some)
            .map_err(|_| Error::InvalidPrefix {
                prefix: prefix.as_str().to_owned(),
                reason: "object paths cannot contain control characters",
            })
    }

    /// The key of an object path, if it lies below the base and is a valid key.
    fn key_of(&self, location: &Path) -> Option<StoreKey> {
        let raw = location.as_ref();
        let rest = if self.base.is_empty() {
            raw
        } else {
            raw.strip_prefix(self.base.as_str())?.strip_prefix('/')?
        };
        StoreKey::try_new(rest).ok()
    }

    fn check_writable(&self, operation: &'static str) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly {
                store: self.store.to_string(),
                operation,
            });
        }
        Ok(())
    }

    fn error(&self, operation: &'static str, path: &Path, source: object_store::Error) -> Error {
        Error::ObjectStore {
            operation,
            path: path.to_string(),
            source,
        }
    }

    async fn head_size(&self, path: &Path) -> Result<Option<u64>> {
        match self.store.head(path).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(self.error("head", path, err)),
        }
    }

    async fn fetch(&self, path: &Path, range: GetRange) -> Result<Fetched, FetchError> {
        let result = match self
            .store
            .get_opts(path, GetOptions::new().with_range(Some(range)))
            .await
        {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Err(FetchError::Missing),
            Err(err) => return Err(FetchError::Other(self.error("get", path, err))),
        };
        let (range, size) = (result.range.clone(), result.meta.size);
        let bytes = match result.bytes().await {
            Ok(bytes) => bytes,
            Err(object_store::Error::NotFound { .. }) => return Err(FetchError::Missing),
            Err(err) => return Err(FetchError::Other(self.error("get", path, err))),
        };
        if bytes.len() as u64 != range.end.saturating_sub(range.start) {
            return Err(FetchError::Other(Error::ObjectStore {
                operation: "get",
                path: path.to_string(),
                source: object_store::Error::Generic {
                    store: "zarr-store",
                    source: format!(
                        "the response holds {} bytes for the range {range:?}",
                        bytes.len()
                    )
                    .into(),
                },
            }));
        }
        Ok(Fetched { bytes, range, size })
    }

    /// Read `ranges` of the object of `key`: `None` if it does not exist.
    async fn read_ranges(
        &self,
        key: &StoreKey,
        ranges: &[ByteRange],
    ) -> Result<Option<Vec<Bytes>>> {
        let path = self.path(key)?;
        // Empty ranges cannot be requested over HTTP; alone, they need a HEAD for the size.
        if ranges.iter().all(|r| r.known_len() == Some(0)) {
            return self.read_with_size(key, &path, ranges).await;
        }
        match self.read_direct(key, &path, ranges).await {
            Ok(parts) => Ok(Some(parts)),
            Err(FetchError::Missing) => Ok(None),
            // Perhaps a range past the end (servers answer 416): learn the size and check.
            // If the careful path answers (for example an empty range at the very end, which
            // servers refuse), its answer stands; otherwise report the original failure unless
            // the size shows a range past the end.
            Err(FetchError::Other(err)) => {
                tracing::debug!(
                    key = key.as_str(),
                    error = %err,
                    "range request failed: checking the ranges against the object's size"
                );
                match self.read_with_size(key, &path, ranges).await {
                    Err(checked @ Error::RangeOutOfBounds { .. }) => Err(checked),
                    Ok(answer) => Ok(answer),
                    Err(_) => Err(err),
                }
            }
        }
    }

    /// The fast path: one request per span of near bounded ranges, one per other range.
    async fn read_direct(
        &self,
        key: &StoreKey,
        path: &Path,
        ranges: &[ByteRange],
    ) -> Result<Vec<Bytes>, FetchError> {
        let mut bounded: Vec<(usize, Range<u64>)> = Vec::new();
        let mut requests: Vec<(GetRange, Vec<usize>)> = Vec::new();
        // Empty ranges are checked against the size the other responses report.
        let mut empty: Vec<usize> = Vec::new();
        for (i, range) in ranges.iter().enumerate() {
            if range.known_len() == Some(0) {
                empty.push(i);
                continue;
            }
            match range.form() {
                ByteRangeForm::Bounded { start, end } => bounded.push((i, start..end)),
                ByteRangeForm::FromOffset { start } => {
                    requests.push((GetRange::Offset(start), vec![i]));
                }
                ByteRangeForm::Suffix { length } => {
                    requests.push((GetRange::Suffix(length), vec![i]));
                }
            }
        }
        for (span, members) in coalesce(&bounded, self.options.coalesce_gap) {
            requests.push((GetRange::Bounded(span), members));
        }
        let fetches: Vec<_> = requests
            .iter()
            .map(|(range, _)| self.fetch(path, range.clone()))
            .collect();
        let fetched: Vec<Fetched> = futures::stream::iter(fetches)
            .buffered(self.options.max_concurrency.max(1))
            .try_collect()
            .await?;
        let mut out = vec![Bytes::new(); ranges.len()];
        if let Some(size) = fetched.first().map(|f| f.size) {
            for &i in &empty {
                ranges[i]
                    .resolve(size)
                    .map_err(|e| FetchError::Other(e.with_key(key)))?;
            }
        }
        for ((_, members), fetched) in requests.iter().zip(fetched) {
            for &i in members {
                let wanted = ranges[i]
                    .resolve(fetched.size)
                    .map_err(|e| FetchError::Other(e.with_key(key)))?;
                if wanted.start < fetched.range.start || wanted.end > fetched.range.end {
                    return Err(FetchError::Other(Error::RangeOutOfBounds {
                        key: Some(key.clone()),
                        range: ranges[i],
                        size: fetched.size,
                    }));
                }
                // Inside the fetched range, whose length is that of `bytes` (a usize).
                let start = (wanted.start - fetched.range.start) as usize;
                let end = (wanted.end - fetched.range.start) as usize;
                out[i] = fetched.bytes.slice(start..end);
            }
        }
        Ok(out)
    }

    /// The careful path: learn the size first, then fetch only non-empty, checked ranges.
    async fn read_with_size(
        &self,
        key: &StoreKey,
        path: &Path,
        ranges: &[ByteRange],
    ) -> Result<Option<Vec<Bytes>>> {
        let Some(size) = self.head_size(path).await? else {
            return Ok(None);
        };
        let mut bounded = Vec::new();
        for (i, range) in ranges.iter().enumerate() {
            let resolved = range.resolve(size).map_err(|e| e.with_key(key))?;
            if resolved.start < resolved.end {
                bounded.push((i, resolved));
            }
        }
        let as_ranges: Vec<ByteRange> = bounded
            .iter()
            .map(|(_, r)| ByteRange::new(r.start, r.end))
            .collect();
        let parts = match self.read_direct(key, path, &as_ranges).await {
            Ok(parts) => parts,
            Err(FetchError::Missing) => return Ok(None),
            Err(FetchError::Other(err)) => return Err(err),
        };
        let mut out = vec![Bytes::new(); ranges.len()];
        for ((i, _), part) in bounded.iter().zip(parts) {
            out[*i] = part;
        }
        Ok(Some(out))
    }

    async fn delete(&self, path: &Path) -> Result<()> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(self.error("delete", path, err)),
        }
    }

    async fn delete_all(&self, paths: Vec<Path>) -> Result<()> {
        let stream = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
        let mut results = self.store.delete_stream(stream);
        while let Some(result) = results.next().await {
            match result {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => {
                    return Err(Error::ObjectStore {
                        operation: "delete",
                        path: self.base.clone(),
                        source: err,
                    });
                }
            }
        }
        Ok(())
    }
}

fn no_options(options: &[(String, String)], backend: &'static str) -> Result<()> {
    match options.first() {
        Some((key, _)) => Err(Error::UnknownOption {
            key: key.clone(),
            backend,
        }),
        None => Ok(()),
    }
}

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure", feature = "http"))]
fn parse_option<T: std::str::FromStr>(key: &str, backend: &'static str) -> Result<T> {
    key.parse().map_err(|_| Error::UnknownOption {
        key: key.to_owned(),
        backend,
    })
}

/// Merge `(index, range)` pairs into spans: ranges whose gap is at most `gap` share a span.
/// Returns each span with the indices it serves.
fn coalesce(ranges: &[(usize, Range<u64>)], gap: u64) -> Vec<(Range<u64>, Vec<usize>)> {
    let mut sorted: Vec<&(usize, Range<u64>)> = ranges.iter().collect();
    sorted.sort_by_key(|(_, r)| r.start);
    let mut spans: Vec<(Range<u64>, Vec<usize>)> = Vec::new();
    for (i, range) in sorted {
        match spans.last_mut() {
            Some((span, members)) if range.start <= span.end.saturating_add(gap) => {
                span.end = span.end.max(range.end);
                members.push(*i);
            }
            _ => spans.push((range.clone(), vec![*i])),
        }
    }
    spans
}

#[async_trait]
impl ReadableStore for ObjectStoreAdapter {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        let path = self.path(key)?;
        let result = match self.store.get(&path).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(self.error("get", &path, err)),
        };
        match result.bytes().await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(self.error("get", &path, err)),
        }
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        let path = self.path(key)?;
        self.head_size(&path).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        let RangesByKey {
            keys,
            ranges: per_key,
            slots,
        } = ranges_by_key(key_ranges);
        let reads: Vec<_> = keys
            .iter()
            .zip(&per_key)
            .map(|(key, ranges)| self.read_ranges(key, ranges))
            .collect();
        let answers: Vec<Option<Vec<Bytes>>> = futures::stream::iter(reads)
            .buffered(self.options.max_concurrency.max(1))
            .try_collect()
            .await?;
        let mut answers: Vec<Option<std::vec::IntoIter<Bytes>>> = answers
            .into_iter()
            .map(|parts| parts.map(Vec::into_iter))
            .collect();
        Ok(slots
            .iter()
            .map(|&slot| answers[slot].as_mut().and_then(Iterator::next))
            .collect())
    }
}

#[async_trait]
impl WritableStore for ObjectStoreAdapter {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        self.check_writable("set")?;
        let path = self.path(key)?;
        self.store
            .put(&path, PutPayload::from(value))
            .await
            .map_err(|err| self.error("put", &path, err))?;
        Ok(())
    }

    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        self.check_writable("set_partial_values")?;
        fallback::set_partial_values_by_read_modify_write(self, key_start_values).await
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        self.check_writable("erase")?;
        let path = self.path(key)?;
        self.delete(&path).await
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        self.check_writable("erase_values")?;
        let paths = keys
            .iter()
            .map(|key| self.path(key))
            .collect::<Result<Vec<_>>>()?;
        self.delete_all(paths).await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.check_writable("erase_prefix")?;
        // Every object below the prefix goes, including any whose name is not a valid key
        // (and so is never listed): the whole sub-tree, as on the filesystem.
        let path = self.prefix_path(prefix)?;
        let listed: Vec<_> = match self.store.list(path.as_ref()).try_collect().await {
            Ok(listed) => listed,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(err) => {
                return Err(Error::ObjectStore {
                    operation: "list",
                    path: path.map(|p| p.to_string()).unwrap_or_default(),
                    source: err,
                });
            }
        };
        // An object named exactly like the prefix (without its "/") is not below it.
        let paths = listed
            .into_iter()
            .map(|meta| meta.location)
            .filter(|location| Some(location) != path.as_ref())
            .collect();
        self.delete_all(paths).await
    }
}

#[async_trait]
impl ListableStore for ObjectStoreAdapter {
    async fn list(&self) -> Result<Vec<StoreKey>> {
        self.list_prefix(&StorePrefix::root()).await
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let path = self.prefix_path(prefix)?;
        let listed: Vec<_> = match self.store.list(path.as_ref()).try_collect().await {
            Ok(listed) => listed,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(err) => {
                return Err(Error::ObjectStore {
                    operation: "list",
                    path: path.map(|p| p.to_string()).unwrap_or_default(),
                    source: err,
                });
            }
        };
        let mut keys: Vec<StoreKey> = listed
            .iter()
            .filter_map(|meta| {
                let key = self.key_of(&meta.location);
                if key.is_none() {
                    tracing::trace!(object = %meta.location, "not listed: not a valid key");
                }
                key
            })
            .filter(|key| key.has_prefix(prefix))
            .collect();
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let path = self.prefix_path(prefix)?;
        let listed = match self.store.list_with_delimiter(path.as_ref()).await {
            Ok(listed) => listed,
            Err(object_store::Error::NotFound { .. }) => return Ok(ListDir::default()),
            Err(err) => {
                return Err(Error::ObjectStore {
                    operation: "list",
                    path: path.map(|p| p.to_string()).unwrap_or_default(),
                    source: err,
                });
            }
        };
        let mut keys: Vec<StoreKey> = listed
            .objects
            .iter()
            .filter_map(|meta| self.key_of(&meta.location))
            .filter(|key| key.parent() == *prefix)
            .collect();
        let mut prefixes: Vec<StorePrefix> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| self.key_of(p))
            .filter(|key| key.parent() == *prefix)
            .map(|key| key.to_prefix())
            .collect();
        keys.sort();
        keys.dedup();
        prefixes.sort();
        prefixes.dedup();
        Ok(ListDir { keys, prefixes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_groups_near_ranges() {
        let ranges = vec![
            (0, 100..200),
            (1, 0..10),
            (2, 210..220),
            (3, 5000..5010),
            (4, 150..160),
        ];
        let spans = coalesce(&ranges, 10);
        assert_eq!(
            spans,
            vec![
                (0..10, vec![1]),
                (100..220, vec![0, 4, 2]),
                (5000..5010, vec![3])
            ]
        );
        assert_eq!(coalesce(&ranges, 1 << 20).len(), 1);
        assert!(coalesce(&[], 10).is_empty());
    }

    #[test]
    fn keys_map_below_the_base_path() {
        let adapter = ObjectStoreAdapter::new(Arc::new(object_store::memory::InMemory::new()))
            .with_base_path("/base/path/")
            .unwrap();
        assert_eq!(adapter.base_path(), "base/path");
        let path = adapter.path(&StoreKey::new("a/b")).unwrap();
        assert_eq!(path.as_ref(), "base/path/a/b");
        assert_eq!(adapter.key_of(&path), Some(StoreKey::new("a/b")));
        assert_eq!(adapter.key_of(&Path::from("base/pathx/a")), None);
        assert_eq!(adapter.key_of(&Path::from("base/path")), None);
        assert_eq!(
            adapter
                .prefix_path(&StorePrefix::root())
                .unwrap()
                .unwrap()
                .as_ref(),
            "base/path"
        );
        assert!(adapter.path(&StoreKey::new("tab\there")).is_err());
        assert!(
            ObjectStoreAdapter::new(Arc::new(object_store::memory::InMemory::new()))
                .with_base_path("a/../b")
                .is_err()
        );
    }
}
