//! Reference sets (kerchunk, fsspec's `ReferenceFileSystem`) as a read-only store.
//!
//! A reference set maps each key of a Zarr hierarchy to its bytes, given inline or as a byte
//! range of another file: kerchunk writes them for HDF5, netCDF, GRIB, TIFF and FITS files, so
//! that those files read as Zarr without being converted. See [`ReferenceStore`].

#[cfg(feature = "parquet")]
mod parquet;
mod spec;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::try_join_all;

#[cfg(feature = "parquet")]
pub use parquet::{DEFAULT_CACHED_RECORDS, ParquetReferences};
pub use spec::MAX_GENERATED_REFERENCES;

use crate::{
    ByteRange, Error, ListDir, ListableStore, ObjectStoreAdapter, ReadableStore, Result, StoreKey,
    StorePrefix, WritableStore,
};

/// Where the value of one key of a [`References`] set is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reference {
    /// The bytes themselves.
    Inline(Bytes),
    /// The whole file at `url` (`None`: the store's default target).
    Whole {
        /// The file's URL or path.
        url: Option<String>,
    },
    /// `length` bytes of the file at `url`, from byte `offset` (`None`: the store's default
    /// target).
    Range {
        /// The file's URL or path.
        url: Option<String>,
        /// The first byte.
        offset: u64,
        /// How many bytes.
        length: u64,
    },
}

/// A parsed reference set: store keys mapped to [`Reference`]s, sorted by key.
///
/// [`References::from_json`] reads fsspec's JSON reference specification:
///
/// - **version 0**: a JSON object mapping keys to references;
/// - **version 1**: `{"version": 1, "templates": {..}, "gen": [..], "refs": {..}}`, where
///   `{{name}}` in a URL is replaced by the template `name`, and each generator produces the
///   references for every combination of its dimensions' values (Python `range`s or lists),
///   rendering its `key`, `url`, `offset` and `length` fields. Generated references replace
///   explicit ones with the same key, as in fsspec.
///
/// A reference is a string (the value's UTF-8 text, or base64 data after `base64:`), a JSON
/// object (its text, as fsspec reads it), `[url]` (a whole file) or `[url, offset, length]`;
/// a `null` URL means the store's default target.
///
/// Template and generator fields are Jinja templates in fsspec. The subset every known
/// producer uses is evaluated here: names, integer and string literals, `+ - * // %` with
/// Python's rounding, and parentheses. Anything else (filters, calls, templates with
/// arguments) is [`Error::InvalidReferences`], as is every malformed part of the set, naming
/// it. Generators may produce at most [`MAX_GENERATED_REFERENCES`] references in all.
/// kerchunk's Parquet reference sets are read by `ParquetReferences` (cargo feature
/// `parquet`).
///
/// ```
/// use zarr_store::{Reference, References, StoreKey};
///
/// let refs = References::from_json(br#"{
///     "version": 1,
///     "templates": {"u": "s3://bucket/data.nc"},
///     "gen": [{"key": "t/{{i}}", "url": "{{u}}", "offset": "{{8 + i * 100}}", "length": "100",
///              "dimensions": {"i": {"stop": 3}}}],
///     "refs": {".zgroup": "{\"zarr_format\": 2}", "t/.zarray": "...", "extra": "base64:AAE="}
/// }"#)?;
/// assert_eq!(refs.len(), 6);
/// assert_eq!(
///     refs.get(&StoreKey::new("t/2")),
///     Some(&Reference::Range { url: Some("s3://bucket/data.nc".into()), offset: 208, length: 100 })
/// );
/// assert_eq!(refs.get(&StoreKey::new("extra")), Some(&Reference::Inline(vec![0, 1].into())));
/// # Ok::<(), zarr_store::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct References {
    map: BTreeMap<StoreKey, Reference>,
}

impl References {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse a JSON reference set (version 0 or 1).
    ///
    /// # Errors
    /// [`Error::InvalidReferences`] naming what is malformed: not JSON, an unknown version, a
    /// key that is not a valid [`StoreKey`], a reference of the wrong shape, invalid base64,
    /// an offset and length that overflow, a template or generator that cannot be rendered.
    pub fn from_json(json: &[u8]) -> Result<Self> {
        spec::parse(json)
    }

    /// Parse a reference set already read as a JSON value.
    ///
    /// # Errors
    /// As for [`from_json`](References::from_json).
    pub fn from_json_value(value: &serde_json::Value) -> Result<Self> {
        spec::parse_value(value)
    }

    /// The set as version 1 JSON (no templates or generators): inline values as text when
    /// they are printable ASCII, otherwise as base64. fsspec and kerchunk read it.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        spec::to_json(self)
    }

    /// How many keys the set has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the set has no keys.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The reference of `key`.
    #[must_use]
    pub fn get(&self, key: &StoreKey) -> Option<&Reference> {
        self.map.get(key)
    }

    /// Add or replace the reference of `key`, returning the one it replaces.
    ///
    /// # Errors
    /// [`Error::InvalidReferences`] if a range's offset plus length overflows a `u64`.
    pub fn insert(&mut self, key: StoreKey, reference: Reference) -> Result<Option<Reference>> {
        if let Reference::Range { offset, length, .. } = &reference
            && offset.checked_add(*length).is_none()
        {
            return Err(Error::InvalidReferences {
                reason: format!("reference {key}: offset {offset} plus length {length} overflows"),
            });
        }
        Ok(self.map.insert(key, reference))
    }

    /// The keys and their references, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&StoreKey, &Reference)> {
        self.map.iter()
    }
}

/// A reference set ([`References`]) read as a **read-only** store, such as the JSON kerchunk
/// writes for an HDF5 or netCDF file.
///
/// Inline values are answered from memory. A reference into another file is read from that
/// file, which the store finds by its URL, in this order:
///
/// 1. a store mapped to a prefix of the URL with [`with_target`](ReferenceStore::with_target)
///    (the longest prefix wins; the rest of the URL is the key in that store);
/// 2. local paths and `file://` URLs (the scheme in any case), if
///    [`with_local_files`](ReferenceStore::with_local_files) gave the directory that relative
///    paths start from;
/// 3. other URLs (`s3://`, `gs://`, `az://`, `http(s)://`), if
///    [`with_remote_urls`](ReferenceStore::with_remote_urls) allows them: opened with
///    [`ObjectStoreAdapter::from_url`] (credentials from the environment, and the backend's
///    cargo feature), one store per directory, kept for the store's lifetime. The URL's
///    path is percent-decoded, its file name as its directories (`run%201.nc` is the file
///    `run 1.nc`).
///
/// Nothing is read from anywhere unless allowed, so a reference set from elsewhere cannot make
/// a program read files it did not mean to. A URL no rule resolves is
/// [`Error::UnreachableReference`], as is a file shorter than a reference into it; listing
/// needs no file at all. All ranges read in one
/// [`get_partial_values`](ReadableStore::get_partial_values) call go to each file in one batch
/// (one open of a local file; one coalescing call of an object store).
///
/// Writes fail with [`Error::ReadOnly`].
///
/// ```
/// use std::sync::Arc;
/// use bytes::Bytes;
/// use zarr_store::{MemoryStore, ReadableStore, References, ReferenceStore, StoreKey, WritableStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A "remote" file, here in memory, holding two chunks at known offsets.
/// let files = Arc::new(MemoryStore::new());
/// files.set(&StoreKey::new("data.bin"), Bytes::from_static(b"HEADERchunk0chunk1")).await?;
///
/// let refs = References::from_json(br#"{
///     ".zgroup": "{\"zarr_format\": 2}",
///     "a/0": ["s3://bucket/data.bin", 6, 6],
///     "a/1": ["s3://bucket/data.bin", 12, 6]
/// }"#)?;
/// let store = ReferenceStore::new(refs).with_target("s3://bucket/", files);
/// assert_eq!(store.get(&StoreKey::new("a/1")).await?.as_deref(), Some(&b"chunk1"[..]));
/// assert_eq!(store.get(&StoreKey::new("a/2")).await?, None);
/// # Ok(())
/// # }
/// ```
pub struct ReferenceStore {
    source: Source,
    name: String,
    targets: Vec<(String, Arc<dyn ReadableStore>)>,
    local: Option<PathBuf>,
    remote: bool,
    remote_stores: Mutex<HashMap<String, Arc<ObjectStoreAdapter>>>,
    default_target: Option<String>,
}

/// Where a [`ReferenceStore`]'s references come from.
enum Source {
    /// A set in memory (JSON).
    Set(Arc<References>),
    /// kerchunk's Parquet record files, read when needed.
    #[cfg(feature = "parquet")]
    Parquet(Arc<ParquetReferences>),
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Set(set) => write!(f, "{} references", set.len()),
            #[cfg(feature = "parquet")]
            Self::Parquet(parquet) => parquet.fmt(f),
        }
    }
}

impl fmt::Debug for ReferenceStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReferenceStore")
            .field("name", &self.name)
            .field("references", &self.source)
            .field(
                "targets",
                &self.targets.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            )
            .field("local", &self.local)
            .field("remote", &self.remote)
            .field("default_target", &self.default_target)
            .finish()
    }
}

impl ReferenceStore {
    /// A store answering from `references`, with no file access allowed yet: inline values
    /// read, references into files fail until a rule resolves their URLs.
    #[must_use]
    pub fn new(references: References) -> Self {
        Self::from_shared(Arc::new(references))
    }

    /// Like [`new`](ReferenceStore::new), sharing a set with other stores.
    #[must_use]
    pub fn from_shared(references: Arc<References>) -> Self {
        Self::with_source(Source::Set(references))
    }

    /// A store answering from kerchunk's Parquet reference set `references`, with no file
    /// access allowed yet (as for [`new`](ReferenceStore::new)). Needs the cargo feature
    /// `parquet`.
    #[cfg(feature = "parquet")]
    #[must_use]
    pub fn from_parquet(references: ParquetReferences) -> Self {
        Self::with_source(Source::Parquet(Arc::new(references)))
    }

    fn with_source(source: Source) -> Self {
        Self {
            source,
            name: "reference set".to_owned(),
            targets: Vec::new(),
            local: None,
            remote: false,
            remote_stores: Mutex::new(HashMap::new()),
            default_target: None,
        }
    }

    /// Read the reference set at `path`, as kerchunk writes it: a JSON file, or the directory
    /// of a Parquet reference set (cargo feature `parquet`; see [`ParquetReferences`]), whose
    /// record files are then read when needed. Local files are allowed, relative paths
    /// starting from the current directory, as fsspec reads them; remote URLs still need
    /// [`with_remote_urls`](ReferenceStore::with_remote_urls).
    ///
    /// # Errors
    /// [`Error::Io`] if the file (a directory's `.zmetadata`) cannot be read, otherwise as for
    /// [`References::from_json`] (or [`ParquetReferences::from_zmetadata`]), the message
    /// starting with `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let named = |e: Error| match e {
            Error::InvalidReferences { reason } => Error::InvalidReferences {
                reason: format!("{}: {reason}", path.display()),
            },
            other => other,
        };
        let cwd = std::env::current_dir().map_err(|source| Error::Io {
            operation: "find the current directory",
            path: PathBuf::from("."),
            source,
        })?;
        let store = if path.is_dir() {
            Self::open_dir(path).map_err(named)?
        } else {
            let json = std::fs::read(path).map_err(|source| Error::Io {
                operation: "read the reference set",
                path: path.to_path_buf(),
                source,
            })?;
            Self::new(References::from_json(&json).map_err(named)?)
        };
        Ok(store
            .with_name(path.display().to_string())
            .with_local_files(cwd))
    }

    /// The Parquet reference set in directory `dir`.
    #[cfg(feature = "parquet")]
    fn open_dir(dir: &Path) -> Result<Self> {
        let metadata = dir.join(".zmetadata");
        let zmetadata = std::fs::read(&metadata).map_err(|source| Error::Io {
            operation: "read the metadata of the Parquet reference set",
            path: metadata,
            source,
        })?;
        let files = Arc::new(crate::FilesystemStore::open(dir)?);
        let references = ParquetReferences::from_zmetadata(&zmetadata, files, StorePrefix::root())?
            .with_name(format!("{}/", dir.display()));
        Ok(Self::from_parquet(references))
    }

    #[cfg(not(feature = "parquet"))]
    fn open_dir(dir: &Path) -> Result<Self> {
        Err(Error::InvalidReferences {
            reason: format!(
                "{} is a directory: a Parquet reference set, which needs zarr-store's cargo \
                 feature `parquet`",
                dir.display()
            ),
        })
    }

    /// Name the store in messages and `Debug` output (for example, the reference file's path).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Read URLs starting with `prefix` from `store`: the rest of the URL is the key. For
    /// example, with prefix `"s3://bucket/"`, URL `s3://bucket/run/1.nc` is key `run/1.nc`.
    #[must_use]
    pub fn with_target(mut self, prefix: impl Into<String>, store: Arc<dyn ReadableStore>) -> Self {
        self.targets.push((prefix.into(), store));
        // The longest prefix first, so the most specific mapping wins.
        self.targets
            .sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        self
    }

    /// Allow local files: absolute paths, `file://` URLs, and relative paths, which start from
    /// `base`.
    #[must_use]
    pub fn with_local_files(mut self, base: impl Into<PathBuf>) -> Self {
        self.local = Some(base.into());
        self
    }

    /// Allow (`true`) or forbid other URLs, opened with [`ObjectStoreAdapter::from_url`].
    #[must_use]
    pub fn with_remote_urls(mut self, allow: bool) -> Self {
        self.remote = allow;
        self
    }

    /// The URL of references whose URL is `null` (fsspec's `target`).
    #[must_use]
    pub fn with_default_target(mut self, url: impl Into<String>) -> Self {
        self.default_target = Some(url.into());
        self
    }

    /// The reference set, when it is in memory (read from JSON or given); `None` for a
    /// Parquet set (see [`parquet_references`](ReferenceStore::parquet_references)).
    #[must_use]
    pub fn references(&self) -> Option<&Arc<References>> {
        match &self.source {
            Source::Set(set) => Some(set),
            #[cfg(feature = "parquet")]
            Source::Parquet(_) => None,
        }
    }

    /// The Parquet reference set the store reads, if it reads one.
    #[cfg(feature = "parquet")]
    #[must_use]
    pub fn parquet_references(&self) -> Option<&Arc<ParquetReferences>> {
        match &self.source {
            Source::Parquet(parquet) => Some(parquet),
            Source::Set(_) => None,
        }
    }

    /// The references of `keys` (`None`: no such key).
    async fn lookup(&self, keys: &[StoreKey]) -> Result<Vec<Option<Cow<'_, Reference>>>> {
        match &self.source {
            Source::Set(set) => Ok(keys
                .iter()
                .map(|key| set.get(key).map(Cow::Borrowed))
                .collect()),
            #[cfg(feature = "parquet")]
            Source::Parquet(parquet) => Ok(parquet
                .get_many(keys)
                .await?
                .into_iter()
                .map(|reference| reference.map(Cow::Owned))
                .collect()),
        }
    }

    fn url_of<'a>(&'a self, key: &StoreKey, url: &'a Option<String>) -> Result<&'a str> {
        url.as_deref()
            .or(self.default_target.as_deref())
            .ok_or_else(|| Error::UnreachableReference {
                key: key.clone(),
                url: "null".into(),
                reason: "the reference has no URL and the store no default target \
                         (ReferenceStore::with_default_target)"
                    .into(),
                source: None,
            })
    }

    /// Where `url` is read from.
    fn resolve(&self, key: &StoreKey, url: &str) -> Result<Target> {
        let unreachable = |reason: String, source: Option<Error>| Error::UnreachableReference {
            key: key.clone(),
            url: url.to_owned(),
            reason,
            source: source.map(Box::new),
        };
        for (prefix, store) in &self.targets {
            if let Some(rest) = url.strip_prefix(prefix.as_str()) {
                let target_key = StoreKey::try_new(rest).map_err(|e| {
                    unreachable(
                        format!("{rest:?} is not a key of the store for {prefix:?}"),
                        Some(e),
                    )
                })?;
                return Ok(Target::Store {
                    id: format!("{prefix}\0{rest}"),
                    store: Arc::clone(store),
                    key: target_key,
                });
            }
        }
        // Schemes are case-insensitive: `FILE://` names a local file as `file://` does.
        let scheme = url
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase())
            .filter(|s| {
                s.len() > 1
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            });
        if scheme.as_deref().is_none_or(|s| s == "file") {
            let Some(base) = &self.local else {
                return Err(unreachable(
                    "local files are not allowed (ReferenceStore::with_local_files)".into(),
                    None,
                ));
            };
            let path = match scheme {
                Some(_) => url::Url::parse(url)
                    .ok()
                    .and_then(|u| u.to_file_path().ok())
                    .ok_or_else(|| unreachable("not a local file URL".into(), None))?,
                None => base.join(url),
            };
            return Ok(Target::Local(path));
        }
        if scheme.as_deref() == Some("memory") {
            return Err(unreachable(
                "memory:// names no data a reference can point to".into(),
                None,
            ));
        }
        if !self.remote {
            return Err(unreachable(
                "URLs are not allowed (ReferenceStore::with_remote_urls), and no store is \
                 mapped to a prefix of this one (ReferenceStore::with_target)"
                    .into(),
                None,
            ));
        }
        let (parent, name) = url
            .rsplit_once('/')
            .filter(|(parent, _)| parent.contains("://") && !parent.ends_with('/'))
            .ok_or_else(|| unreachable("the URL names no file".into(), None))?;
        // The directory's path is percent-decoded when its store is opened; so is the name.
        let decoded = object_store::path::Path::from_url_path(name)
            .map_err(|e| unreachable(format!("{name:?} is not a file name: {e}"), None))?;
        let target_key = StoreKey::try_new(decoded.as_ref())
            .map_err(|e| unreachable(format!("{name:?} is not a file name"), Some(e)))?;
        let store = {
            let mut stores = self
                .remote_stores
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match stores.get(parent) {
                Some(store) => Arc::clone(store),
                None => {
                    let store = Arc::new(
                        ObjectStoreAdapter::from_url(parent)
                            .map_err(|e| unreachable("cannot open its store".into(), Some(e)))?
                            .with_read_only(true),
                    );
                    stores.insert(parent.to_owned(), Arc::clone(&store));
                    store
                }
            }
        };
        Ok(Target::Store {
            id: url.to_owned(),
            store,
            key: target_key,
        })
    }

    fn read_only(&self, operation: &'static str) -> Error {
        Error::ReadOnly {
            store: self.name.clone(),
            operation,
        }
    }
}

/// Where one file is read from.
#[derive(Clone)]
enum Target {
    Store {
        /// Identifies the file, to batch its ranges.
        id: String,
        store: Arc<dyn ReadableStore>,
        key: StoreKey,
    },
    Local(PathBuf),
}

impl Target {
    fn id(&self) -> String {
        match self {
            Self::Store { id, .. } => id.clone(),
            Self::Local(path) => format!("\u{1}{}", path.display()),
        }
    }
}

/// The ranges of one file read in one batch: `(answer index, reference key, url, range in
/// the file, the length the answer must have when the reference fixes it)`.
struct Batch {
    target: Target,
    reads: Vec<(usize, StoreKey, String, ByteRange, Option<u64>)>,
}

#[async_trait]
impl ReadableStore for ReferenceStore {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        let mut answers = self
            .get_partial_values(&[(key.clone(), ByteRange::FULL)])
            .await?;
        Ok(answers.pop().flatten())
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        let reference = self
            .lookup(std::slice::from_ref(key))
            .await?
            .pop()
            .flatten();
        match reference.as_deref() {
            None => Ok(None),
            Some(Reference::Inline(bytes)) => Ok(Some(bytes.len() as u64)),
            Some(Reference::Range { length, .. }) => Ok(Some(*length)),
            Some(Reference::Whole { url }) => {
                let url = self.url_of(key, url)?;
                let failed = |e: Error| Error::UnreachableReference {
                    key: key.clone(),
                    url: url.to_owned(),
                    reason: "cannot find its size".into(),
                    source: Some(Box::new(e)),
                };
                let size = match self.resolve(key, url)? {
                    Target::Store { store, key: k, .. } => store.size(&k).await.map_err(failed)?,
                    Target::Local(path) => {
                        let metadata = crate::inline::run_blocking(move || {
                            std::fs::metadata(&path).map_err(|source| Error::Io {
                                operation: "read the metadata of",
                                path,
                                source,
                            })
                        })
                        .await?
                        .map_err(failed)?;
                        Some(metadata.len())
                    }
                };
                size.map(Some).ok_or_else(|| Error::UnreachableReference {
                    key: key.clone(),
                    url: url.to_owned(),
                    reason: "the file does not exist".into(),
                    source: None,
                })
            }
        }
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        let mut answers: Vec<Option<Bytes>> = vec![None; key_ranges.len()];
        let mut batches: Vec<Batch> = Vec::new();
        let mut batch_of: HashMap<String, usize> = HashMap::new();
        let keys: Vec<StoreKey> = key_ranges.iter().map(|(key, _)| key.clone()).collect();
        let references = self.lookup(&keys).await?;
        for (i, ((key, range), reference)) in key_ranges.iter().zip(&references).enumerate() {
            let Some(reference) = reference else {
                continue;
            };
            let (url, in_file, expected) = match &**reference {
                Reference::Inline(bytes) => {
                    answers[i] = Some(range.slice(bytes).map_err(|e| with_key(e, key))?);
                    continue;
                }
                Reference::Whole { url } => (url, *range, None),
                Reference::Range {
                    url,
                    offset,
                    length,
                } => {
                    let within = range.resolve(*length).map_err(|e| with_key(e, key))?;
                    // Both ends are at most offset + length, which does not overflow.
                    let in_file = ByteRange::new(offset + within.start, offset + within.end);
                    (url, in_file, Some(within.end - within.start))
                }
            };
            let url = self.url_of(key, url)?;
            let target = self.resolve(key, url)?;
            let id = target.id();
            let b = *batch_of.entry(id).or_insert_with(|| {
                batches.push(Batch {
                    target,
                    reads: Vec::new(),
                });
                batches.len() - 1
            });
            batches[b]
                .reads
                .push((i, key.clone(), url.to_owned(), in_file, expected));
        }
        let results = try_join_all(batches.into_iter().map(read_batch)).await?;
        for (i, bytes) in results.into_iter().flatten() {
            answers[i] = Some(bytes);
        }
        Ok(answers)
    }
}

fn with_key(error: Error, key: &StoreKey) -> Error {
    match error {
        Error::RangeOutOfBounds { range, size, .. } => Error::RangeOutOfBounds {
            key: Some(key.clone()),
            range,
            size,
        },
        other => other,
    }
}

/// Read one file's ranges, checking that each reference's bytes are all there.
async fn read_batch(batch: Batch) -> Result<Vec<(usize, Bytes)>> {
    let Batch { target, reads } = batch;
    let first = &reads[0];
    let failed = |key: &StoreKey, url: &str, reason: String, source: Option<Error>| {
        Error::UnreachableReference {
            key: key.clone(),
            url: url.to_owned(),
            reason,
            source: source.map(Box::new),
        }
    };
    let answers: Vec<Option<Bytes>> = match &target {
        Target::Store { store, key, .. } => {
            let requests: Vec<(StoreKey, ByteRange)> =
                reads.iter().map(|r| (key.clone(), r.3)).collect();
            store
                .get_partial_values(&requests)
                .await
                .map_err(|e| failed(&first.1, &first.2, "reading it failed".into(), Some(e)))?
        }
        Target::Local(path) => {
            let path = path.clone();
            let ranges: Vec<ByteRange> = reads.iter().map(|r| r.3).collect();
            crate::inline::run_blocking(move || read_local(&path, &ranges))
                .await?
                .map_err(|e| failed(&first.1, &first.2, "reading it failed".into(), Some(e)))?
        }
    };
    reads
        .into_iter()
        .zip(answers)
        .map(|((i, key, url, range, expected), bytes)| {
            let bytes = bytes.ok_or_else(|| {
                let reason = match &target {
                    Target::Local(path) => format!("there is no file {}", path.display()),
                    Target::Store { .. } => "the file does not exist".into(),
                };
                failed(&key, &url, reason, None)
            })?;
            if let Some(expected) = expected
                && bytes.len() as u64 != expected
            {
                return Err(failed(
                    &key,
                    &url,
                    format!(
                        "the file ends before the referenced bytes {range} (read {} of {expected})",
                        bytes.len()
                    ),
                    None,
                ));
            }
            Ok((i, bytes))
        })
        .collect()
}

/// Read `ranges` of the local file at `path` with one open. A missing file is `None` for
/// every range; a range past the end is [`Error::RangeOutOfBounds`].
fn read_local(path: &Path, ranges: &[ByteRange]) -> Result<Vec<Option<Bytes>>> {
    let io = |operation: &'static str| {
        move |source: std::io::Error| Error::Io {
            operation,
            path: path.to_path_buf(),
            source,
        }
    };
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![None; ranges.len()]),
        Err(e) => return Err(io("open")(e)),
    };
    let size = file.metadata().map_err(io("read the metadata of"))?.len();
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges {
        let within = range.resolve(size).map_err(|_| Error::RangeOutOfBounds {
            key: None,
            range: *range,
            size,
        })?;
        let len = usize::try_from(within.end - within.start).map_err(|_| Error::TooLarge {
            what: "referenced range",
            value: within.end - within.start,
            key: None,
        })?;
        let mut buffer = vec![0; len];
        file.seek(SeekFrom::Start(within.start))
            .map_err(io("seek in"))?;
        file.read_exact(&mut buffer).map_err(io("read"))?;
        out.push(Some(Bytes::from(buffer)));
    }
    Ok(out)
}

#[async_trait]
impl WritableStore for ReferenceStore {
    async fn set(&self, _key: &StoreKey, _value: Bytes) -> Result<()> {
        Err(self.read_only("set a value"))
    }

    async fn set_partial_values(&self, _: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        Err(self.read_only("write part of a value"))
    }

    async fn erase(&self, _key: &StoreKey) -> Result<()> {
        Err(self.read_only("erase a value"))
    }

    async fn erase_values(&self, _keys: &[StoreKey]) -> Result<()> {
        Err(self.read_only("erase values"))
    }

    async fn erase_prefix(&self, _prefix: &StorePrefix) -> Result<()> {
        Err(self.read_only("erase a prefix"))
    }
}

#[async_trait]
impl ListableStore for ReferenceStore {
    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let map = match &self.source {
            Source::Set(set) => &set.map,
            #[cfg(feature = "parquet")]
            Source::Parquet(parquet) => return parquet.list_prefix(prefix).await,
        };
        Ok(map
            .range::<str, _>((
                std::ops::Bound::Included(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .map(|(key, _)| key)
            .take_while(|key| key.has_prefix(prefix))
            .cloned()
            .collect())
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        match &self.source {
            // Only the arrays the prefix is inside have their record files read.
            #[cfg(feature = "parquet")]
            Source::Parquet(parquet) => parquet.list_dir(prefix).await,
            Source::Set(_) => crate::fallback::list_dir_from_list_prefix(self, prefix).await,
        }
    }
}
