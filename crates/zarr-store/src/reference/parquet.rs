//! kerchunk's Parquet reference sets: the directory layout of fsspec's `LazyReferenceMapper`
//! (what `kerchunk.df.refs_to_dataframe` writes).
//!
//! ```text
//! refs.parq/.zmetadata                 {"metadata": {".zgroup": {..}, "a/.zarray": {..}, ..},
//!                                       "record_size": N}
//! refs.parq/a/refs.0.parq              the references of chunks 0 .. N-1 of array `a`
//! refs.parq/a/refs.1.parq              chunks N .. 2N-1, and so on
//! ```
//!
//! Chunks are numbered in C order of the array's chunk grid (`ceil(shape / chunks)` per
//! dimension, from its `.zarray`); chunk `n` is row `n % N` of record file `n / N`. A row has
//! the columns `path` (a URL, null for none), `offset` and `size` (both 0 for the whole file)
//! and `raw` (the value itself, null for none); a row with neither, a missing row and a missing
//! record file are chunks that do not exist.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use bytes::Bytes;
use futures::future::try_join_all;
use futures::stream::{self, StreamExt as _, TryStreamExt as _};
use parquet::file::reader::{FileReader as _, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;

use super::Reference;
use crate::fallback::list_dir_from_keys;
use crate::{Error, ListDir, ReadableStore, Result, StoreKey, StorePrefix, WritableStore};

/// How many record files a [`ParquetReferences`] keeps decoded unless told otherwise (as
/// fsspec does).
pub const DEFAULT_CACHED_RECORDS: usize = 128;

/// The most rows a record file written here may have (each written file holds a row for
/// every chunk of its record, present or not).
const MAX_RECORD_ROWS: u64 = 1 << 24;

/// Record files read at once while listing an array's chunks.
const LIST_CONCURRENCY: usize = 8;

/// kerchunk's Parquet reference set (the layout fsspec's `LazyReferenceMapper` and
/// `kerchunk.df.refs_to_dataframe` write), read lazily: the metadata at once, each record
/// file of chunk references when a key in it is first asked for. Read it as a store with
/// [`ReferenceStore::from_parquet`](crate::ReferenceStore::from_parquet), or
/// [`ReferenceStore::open`](crate::ReferenceStore::open) for a local directory.
///
/// The set's metadata documents (`.zgroup`, `.zattrs`, `a/.zarray`, ...) read as values of
/// their keys, and `.zmetadata` as Zarr v2 consolidated metadata of them all. A chunk key of
/// an array with a `.zarray` (either dimension separator) reads its row of the record file
/// that holds it. Decoded record files are kept, the least recently used dropped first,
/// up to [`with_cached_records`](ParquetReferences::with_cached_records) of them.
///
/// Every malformed part is [`Error::InvalidReferences`] naming it: `.zmetadata` that is not
/// such a document, a `.zarray` whose grid cannot be read, a record file that is not Parquet,
/// has more rows than `record_size`, or columns of the wrong type, a negative offset or size.
///
/// ```no_run
/// use std::sync::Arc;
/// use zarr_store::{FilesystemStore, ParquetReferences, ReferenceStore, StorePrefix};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), zarr_store::Error> {
/// // Written by `kerchunk.df.refs_to_dataframe(refs, "refs.parq")`.
/// let dir = Arc::new(FilesystemStore::open("refs.parq")?);
/// let references = ParquetReferences::open(dir, &StorePrefix::root()).await?;
/// let store = ReferenceStore::from_parquet(references).with_local_files(".");
/// # Ok(())
/// # }
/// ```
pub struct ParquetReferences {
    store: Arc<dyn ReadableStore>,
    root: StorePrefix,
    name: String,
    record_size: u64,
    metadata: BTreeMap<StoreKey, Bytes>,
    arrays: HashMap<String, Grid>,
    cache: Mutex<Cache>,
}

impl fmt::Debug for ParquetReferences {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParquetReferences")
            .field("name", &self.name)
            .field("record_size", &self.record_size)
            .field("metadata", &self.metadata.len())
            .field("arrays", &self.arrays.len())
            .finish_non_exhaustive()
    }
}

/// An array's chunk grid, as the references number its chunks.
#[derive(Debug)]
struct Grid {
    /// The array's number in the set (for the cache).
    id: usize,
    /// Chunks along each dimension (`[1]` for a 0-d array, whose one chunk is `0`).
    chunks: Vec<u64>,
    /// The dimension separator of its chunk keys.
    separator: char,
    /// Chunks in all.
    count: u64,
}

impl Grid {
    /// The C-order number of the chunk whose key, below the array, is `name`.
    fn number(&self, name: &str) -> Option<u64> {
        if self.separator == '.' && name.contains('/') {
            return None;
        }
        let mut parts = name.split(self.separator);
        let mut number = 0u64;
        for &n in &self.chunks {
            let part = parts.next()?;
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let index: u64 = part.parse().ok()?;
            if index >= n {
                return None;
            }
            // No overflow: the product of `chunks` fits in a u64 (checked when parsed).
            number = number * n + index;
        }
        parts.next().is_none().then_some(number)
    }

    /// The key, below the array, of chunk `number`.
    fn name(&self, mut number: u64) -> String {
        let mut indices = vec![0; self.chunks.len()];
        for (index, &n) in indices.iter_mut().zip(&self.chunks).rev() {
            *index = number % n;
            number /= n;
        }
        let parts: Vec<String> = indices.iter().map(u64::to_string).collect();
        parts.join(&self.separator.to_string())
    }
}

/// One decoded record file: the reference of each row (`None`: no chunk).
type Record = Arc<Vec<Option<Reference>>>;

/// A record file's slot: filled once, by the first reader; readers that come while it is
/// being read wait for that read rather than decoding the file again.
type Slot = Arc<tokio::sync::OnceCell<Record>>;

/// Record files read or being read, keyed by (array, record), the least recently used
/// dropped first.
#[derive(Default)]
struct Cache {
    capacity: usize,
    clock: u64,
    slots: HashMap<(usize, u64), (Slot, u64)>,
}

impl Cache {
    /// The slot of record `record` of array `array`, made if there is none.
    fn slot(&mut self, array: usize, record: u64) -> Slot {
        self.clock += 1;
        let clock = self.clock;
        if let Some(entry) = self.slots.get_mut(&(array, record)) {
            entry.1 = clock;
            return Arc::clone(&entry.0);
        }
        let slot = Slot::default();
        if self.capacity == 0 {
            return slot;
        }
        self.trim(self.capacity - 1);
        self.slots
            .insert((array, record), (Arc::clone(&slot), clock));
        slot
    }

    /// Drop the least recently used slots until at most `keep` are left.
    fn trim(&mut self, keep: usize) {
        while self.slots.len() > keep {
            let Some(oldest) = self
                .slots
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| *k)
            else {
                break;
            };
            self.slots.remove(&oldest);
        }
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidReferences { reason }
}

impl ParquetReferences {
    /// Read the set whose `.zmetadata` is at `root` in `store`; its record files are read from
    /// the same store when needed.
    ///
    /// # Errors
    /// [`Error::InvalidReferences`] if there is no `.zmetadata` or it is malformed (as for
    /// [`from_zmetadata`](ParquetReferences::from_zmetadata)); errors of the store.
    pub async fn open(store: Arc<dyn ReadableStore>, root: &StorePrefix) -> Result<Self> {
        let key = root.key(".zmetadata")?;
        let Some(zmetadata) = store.get(&key).await? else {
            return Err(invalid(format!(
                "{key}: no such file (a Parquet reference set has its metadata there)"
            )));
        };
        Self::from_zmetadata(&zmetadata, store, root.clone())
    }

    /// The set whose `.zmetadata` holds `zmetadata`, with its record files at `root` in
    /// `store`.
    ///
    /// # Errors
    /// [`Error::InvalidReferences`] naming what is malformed: not a JSON object, a
    /// `record_size` that is not a positive integer, `metadata` that is not an object, a key
    /// that is not a valid [`StoreKey`], a `.zarray` without integer `shape` and positive
    /// `chunks` of one length, or with more chunks than a `u64` counts.
    pub fn from_zmetadata(
        zmetadata: &[u8],
        store: Arc<dyn ReadableStore>,
        root: StorePrefix,
    ) -> Result<Self> {
        let name = String::new();
        let bad = |what: String| invalid(format!("{}.zmetadata: {what}", root.as_str()));
        let doc: Value =
            serde_json::from_slice(zmetadata).map_err(|e| bad(format!("not JSON ({e})")))?;
        let Value::Object(doc) = doc else {
            return Err(bad("not a JSON object".into()));
        };
        let record_size = doc
            .get("record_size")
            .and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                bad(format!(
                    "record_size must be a positive integer, found {}",
                    doc.get("record_size").unwrap_or(&Value::Null)
                ))
            })?;
        let Some(Value::Object(entries)) = doc.get("metadata") else {
            return Err(bad("metadata must be an object of documents".into()));
        };
        let mut metadata = BTreeMap::new();
        let mut arrays = HashMap::new();
        for (key, value) in entries {
            let store_key = StoreKey::try_new(key.as_str())
                .map_err(|e| bad(format!("metadata key {key:?} is not a store key ({e})")))?;
            if let Some(field) = key.strip_suffix("/.zarray") {
                let grid =
                    parse_grid(value, arrays.len()).map_err(|why| bad(format!("{key}: {why}")))?;
                arrays.insert(field.to_owned(), grid);
            }
            let bytes = serde_json::to_vec(value).map_err(|e| bad(format!("{key}: {e}")))?;
            metadata.insert(store_key, Bytes::from(bytes));
        }
        // The documents are Zarr v2 consolidated metadata of the hierarchy, as such.
        if let std::collections::btree_map::Entry::Vacant(entry) =
            metadata.entry(StoreKey::new(".zmetadata"))
        {
            let doc = serde_json::json!({
                "zarr_consolidated_format": 1,
                "metadata": Value::Object(entries.clone()),
            });
            let bytes = serde_json::to_vec(&doc).map_err(|e| bad(e.to_string()))?;
            entry.insert(Bytes::from(bytes));
        }
        Ok(Self {
            store,
            root,
            name,
            record_size,
            metadata,
            arrays,
            cache: Mutex::new(Cache {
                capacity: DEFAULT_CACHED_RECORDS,
                ..Cache::default()
            }),
        })
    }

    /// Name the set in messages (for example, its directory with a trailing `/`): errors
    /// about its files start with the name followed by the file's key.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Keep up to `records` decoded record files (0: none; each is read again when needed).
    #[must_use]
    pub fn with_cached_records(self, records: usize) -> Self {
        let mut cache = self.lock();
        cache.capacity = records;
        cache.trim(records);
        drop(cache);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// References per record file.
    #[must_use]
    pub fn record_size(&self) -> u64 {
        self.record_size
    }

    /// The paths of the arrays whose chunks the set references (those with a `.zarray`),
    /// sorted.
    #[must_use]
    pub fn arrays(&self) -> Vec<&str> {
        let mut arrays: Vec<&str> = self.arrays.keys().map(String::as_str).collect();
        arrays.sort_unstable();
        arrays
    }

    /// The reference of `key`: a metadata document inline, a chunk's from its record file.
    ///
    /// # Errors
    /// [`Error::InvalidReferences`] if the record file is malformed; errors of the store.
    pub async fn get(&self, key: &StoreKey) -> Result<Option<Reference>> {
        Ok(self
            .get_many(std::slice::from_ref(key))
            .await?
            .pop()
            .flatten())
    }

    /// The references of `keys`, reading each record file they need once, concurrently.
    ///
    /// # Errors
    /// As for [`get`](ParquetReferences::get).
    pub async fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Reference>>> {
        let mut answers = vec![None; keys.len()];
        let mut wanted: BTreeMap<(&str, u64), Vec<(usize, u64)>> = BTreeMap::new();
        for (i, key) in keys.iter().enumerate() {
            if let Some(value) = self.metadata.get(key) {
                answers[i] = Some(Reference::Inline(value.clone()));
            } else if let Some((field, number)) = self.locate(key.as_str()) {
                wanted
                    .entry((field, number / self.record_size))
                    .or_default()
                    .push((i, number % self.record_size));
            }
        }
        let loads = wanted
            .into_iter()
            .map(|((field, record), rows)| async move {
                let references = self.record(field, record).await?;
                Ok::<_, Error>(
                    rows.into_iter()
                        .map(|(i, row)| {
                            let reference = usize::try_from(row)
                                .ok()
                                .and_then(|row| references.get(row).cloned().flatten());
                            (i, reference)
                        })
                        .collect::<Vec<_>>(),
                )
            });
        for (i, reference) in try_join_all(loads).await?.into_iter().flatten() {
            answers[i] = reference;
        }
        Ok(answers)
    }

    /// The array and chunk number of chunk key `key`.
    fn locate<'a>(&'a self, key: &str) -> Option<(&'a str, u64)> {
        locate(&self.arrays, key)
    }

    /// Record file `record` of the array at `field`, decoded (empty when there is no file).
    async fn record(&self, field: &str, record: u64) -> Result<Record> {
        let slot = self.lock().slot(self.arrays[field].id, record);
        if let Some(decoded) = slot.get() {
            return Ok(Arc::clone(decoded));
        }
        // A failed read leaves the slot empty, for the next reader to try again.
        let started = std::sync::atomic::AtomicBool::new(false);
        let init = slot.get_or_try_init(|| {
            started.store(true, std::sync::atomic::Ordering::Relaxed);
            self.read_record(field, record)
        });
        let mut init = std::pin::pin!(init);
        let waited = std::future::poll_fn(|cx| match init.as_mut().poll(cx) {
            Poll::Ready(decoded) => Poll::Ready(Some(decoded.map(Arc::clone))),
            // Another reader is reading this file, and this thread may block: rather than
            // make the caller wait (which sends an array read back to fetching on one
            // thread), read it here too. At most one extra read per such thread.
            Poll::Pending
                if crate::inline::blocking_allowed_here()
                    && !started.load(std::sync::atomic::Ordering::Relaxed) =>
            {
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        })
        .await;
        match waited {
            Some(decoded) => decoded,
            None => self.read_record(field, record).await,
        }
    }

    /// Read and decode record file `record` of the array at `field`.
    async fn read_record(&self, field: &str, record: u64) -> Result<Record> {
        let key = StoreKey::try_new(format!("{}{field}/refs.{record}.parq", self.root.as_str()))?;
        let decoded: Record = match self.store.get(&key).await? {
            None => Arc::new(Vec::new()),
            Some(bytes) => {
                let record_size = self.record_size;
                let decoded = crate::inline::run_blocking(move || {
                    // The decoder is another crate's, run on input from elsewhere: a panic in
                    // it is a malformed file here, not a crash.
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        decode_record(bytes, record_size)
                    }))
                    .unwrap_or_else(|_| Err("the Parquet decoder failed on it".into()))
                })
                .await?;
                Arc::new(decoded.map_err(|why| invalid(format!("{}{key}: {why}", self.name)))?)
            }
        };
        Ok(decoded)
    }

    /// The keys of the chunks of the array at `field` that have a reference, sorted. The
    /// record files are read a few at a time, each dropped (unless cached) once its keys
    /// are taken.
    async fn chunk_keys(&self, field: &str) -> Result<Vec<StoreKey>> {
        let grid = &self.arrays[field];
        let records = grid.count.div_ceil(self.record_size);
        let mut loaded = stream::iter(0..records)
            .map(
                |record| async move { Ok::<_, Error>((record, self.record(field, record).await?)) },
            )
            .buffered(LIST_CONCURRENCY);
        let mut keys = Vec::new();
        while let Some((record, references)) = loaded.try_next().await? {
            for (row, reference) in references.iter().enumerate() {
                let number = record * self.record_size + row as u64;
                if reference.is_some() && number < grid.count {
                    keys.push(StoreKey::try_new(format!("{field}/{}", grid.name(number)))?);
                }
            }
        }
        keys.sort_unstable();
        Ok(keys)
    }

    /// The metadata keys below `prefix`, and the chunk keys below it of the arrays whose
    /// directory (`path/`) `include` picks (which reads their record files).
    async fn keys_below(
        &self,
        prefix: &StorePrefix,
        include: impl Fn(&str) -> bool,
    ) -> Result<BTreeSet<StoreKey>> {
        let mut keys: BTreeSet<StoreKey> = self
            .metadata
            .keys()
            .filter(|key| key.has_prefix(prefix))
            .cloned()
            .collect();
        for field in self.arrays() {
            if include(&format!("{field}/")) {
                let chunks = self.chunk_keys(field).await?;
                keys.extend(chunks.into_iter().filter(|key| key.has_prefix(prefix)));
            }
        }
        Ok(keys)
    }

    /// Every key below `prefix`: metadata documents, and the chunks with a reference of the
    /// arrays at or below it (which reads their record files).
    ///
    /// # Errors
    /// As for [`get`](ParquetReferences::get).
    pub async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let p = prefix.as_str();
        let keys = self
            .keys_below(prefix, |dir| dir.starts_with(p) || p.starts_with(dir))
            .await?;
        Ok(keys.into_iter().collect())
    }

    /// The direct children of `prefix`. Only arrays whose own directory is at or above
    /// `prefix` have their record files read.
    ///
    /// # Errors
    /// As for [`get`](ParquetReferences::get).
    pub async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let p = prefix.as_str();
        let keys = self.keys_below(prefix, |dir| p.starts_with(dir)).await?;
        Ok(list_dir_from_keys(prefix, keys))
    }

    /// Write `references` as a Parquet reference set at `root` of `store`, `record_size`
    /// references per record file, as fsspec's `LazyReferenceMapper` writes one: the
    /// metadata documents (keys whose name starts with `.z`, each JSON) into `.zmetadata`,
    /// each array's chunk references into its record files, zstd-compressed. Record files
    /// with no reference in them are not written (their chunks do not exist), so write into
    /// an empty place: files already there are not removed. `.zmetadata` is written last. A
    /// `.zmetadata` in `references` is left out (readers make their own).
    ///
    /// # Errors
    /// [`Error::InvalidReferences`] naming the key for what the layout cannot hold: a
    /// metadata document that is not inline JSON, a key that is neither metadata nor a chunk
    /// of an array with a `.zarray` (fsspec numbers chunks by that grid), a reference without
    /// a URL, an offset or length past `i64::MAX`; a `record_size` of 0, or one that would
    /// make a record file of more than 2^24 rows. Errors of the store.
    pub async fn write(
        references: &super::References,
        store: &dyn WritableStore,
        root: &StorePrefix,
        record_size: u64,
    ) -> Result<()> {
        if record_size == 0 {
            return Err(invalid("record_size must be positive".into()));
        }
        let mut metadata = serde_json::Map::new();
        let mut arrays = HashMap::new();
        for (key, reference) in references.iter() {
            let key = key.as_str();
            if !is_metadata(key) || key == ".zmetadata" {
                continue;
            }
            let Reference::Inline(bytes) = reference else {
                return Err(invalid(format!(
                    "{key}: a metadata document must be inline to go into .zmetadata"
                )));
            };
            let value: Value = serde_json::from_slice(bytes)
                .map_err(|e| invalid(format!("{key}: not JSON ({e})")))?;
            if let Some(field) = key.strip_suffix("/.zarray") {
                let grid = parse_grid(&value, arrays.len())
                    .map_err(|why| invalid(format!("{key}: {why}")))?;
                arrays.insert(field.to_owned(), grid);
            }
            metadata.insert(key.to_owned(), value);
        }
        let mut records: BTreeMap<(&str, u64), Vec<Row<'_>>> = BTreeMap::new();
        for (key, reference) in references.iter() {
            if is_metadata(key.as_str()) {
                continue;
            }
            if !key.as_str().contains('/') {
                return Err(invalid(format!(
                    "{key}: a key at the root (of an array at the root) cannot go into a \
                     Parquet reference set, which keeps chunks in a directory per array"
                )));
            }
            let Some((field, number)) = locate(&arrays, key.as_str()) else {
                return Err(invalid(format!(
                    "{key}: neither metadata nor a chunk of an array with a .zarray, which \
                     a Parquet reference set cannot hold"
                )));
            };
            let record = number / record_size;
            let rows = match records.entry((field, record)) {
                std::collections::btree_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::btree_map::Entry::Vacant(entry) => {
                    // A row for every chunk of the record (record_size, fewer in the array's
                    // last one), as fsspec's reader expects.
                    let rows = (arrays[field].count - record * record_size).min(record_size);
                    if rows > MAX_RECORD_ROWS {
                        return Err(invalid(format!(
                            "{field}/refs.{record}.parq would need {rows} rows, more than the \
                             {MAX_RECORD_ROWS} a record file may have here: give a smaller \
                             record_size"
                        )));
                    }
                    entry.insert(vec![None; usize::try_from(rows).unwrap_or(usize::MAX)])
                }
            };
            // In range: number % record_size < the record's chunks.
            rows[usize::try_from(number % record_size).unwrap_or(usize::MAX)] =
                Some((key, reference));
        }
        for ((field, record), rows) in records {
            let bytes = encode_record(&rows)
                .map_err(|why| invalid(format!("{field}/refs.{record}.parq: {why}")))?;
            let key = root.key(&format!("{field}/refs.{record}.parq"))?;
            store.set(&key, Bytes::from(bytes)).await?;
        }
        let doc = serde_json::json!({"metadata": metadata, "record_size": record_size});
        let bytes = serde_json::to_vec(&doc).map_err(|e| invalid(e.to_string()))?;
        store
            .set(&root.key(".zmetadata")?, Bytes::from(bytes))
            .await
    }

    /// Every reference of the set, read into memory (for example, to write it as JSON with
    /// [`References::to_json`](super::References::to_json)).
    ///
    /// # Errors
    /// As for [`get`](ParquetReferences::get).
    pub async fn to_references(&self) -> Result<super::References> {
        let keys = self.list_prefix(&StorePrefix::root()).await?;
        let found = self.get_many(&keys).await?;
        let mut references = super::References::new();
        for (key, reference) in keys.into_iter().zip(found) {
            if let Some(reference) = reference {
                references.insert(key, reference)?;
            }
        }
        Ok(references)
    }
}

/// The array (in `arrays`) and chunk number of chunk key `key`.
fn locate<'a>(arrays: &'a HashMap<String, Grid>, key: &str) -> Option<(&'a str, u64)> {
    let mut end = key.len();
    while let Some(slash) = key[..end].rfind('/') {
        if let Some((field, grid)) = arrays.get_key_value(&key[..slash])
            && let Some(number) = grid.number(&key[slash + 1..])
        {
            return Some((field.as_str(), number));
        }
        end = slash;
    }
    None
}

/// Whether `key` is a metadata document in fsspec's sense (`.zarray`, `.zattrs`, `.zgroup`,
/// `.zmetadata`, at any depth).
fn is_metadata(key: &str) -> bool {
    key.rsplit('/')
        .next()
        .is_some_and(|name| name.starts_with(".z"))
}

/// A row of a record file to write: `None` for no chunk, else the chunk's key and reference.
type Row<'a> = Option<(&'a StoreKey, &'a Reference)>;

/// The bytes of a record file holding `rows`, in fsspec's four columns.
fn encode_record(rows: &[Row<'_>]) -> std::result::Result<Vec<u8>, String> {
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    let failed = |e: parquet::errors::ParquetError| format!("writing a record file: {e}");
    let mut paths = Vec::new();
    let mut path_defs = Vec::with_capacity(rows.len());
    let mut offsets = Vec::with_capacity(rows.len());
    let mut sizes = Vec::with_capacity(rows.len());
    let mut raws = Vec::new();
    let mut raw_defs = Vec::with_capacity(rows.len());
    for row in rows {
        let at = |what: String| match row {
            Some((key, _)) => format!("{key}: {what}"),
            None => what,
        };
        let (path, offset, size, raw): (Option<&str>, u64, u64, Option<&[u8]>) =
            match row.map(|(_, reference)| reference) {
                None => (None, 0, 0, None),
                Some(Reference::Inline(bytes)) => (None, 0, 0, Some(bytes)),
                // An empty range reads as empty bytes; as a path with offset and size 0 it would
                // read as the whole file.
                Some(Reference::Range { length: 0, .. }) => (None, 0, 0, Some(&[])),
                Some(Reference::Whole { url }) => (url.as_deref(), 0, 0, None),
                Some(Reference::Range {
                    url,
                    offset,
                    length,
                }) => (url.as_deref(), *offset, *length, None),
            };
        if row.is_some() && path.is_none() && raw.is_none() {
            return Err(at(
                "a reference without a URL (the default target) cannot be stored: a row \
                 without a path is a chunk that does not exist"
                    .into(),
            ));
        }
        let signed = |n: u64| {
            i64::try_from(n).map_err(|_| at(format!("{n} does not fit Parquet's signed 64 bits")))
        };
        offsets.push(signed(offset)?);
        sizes.push(signed(size)?);
        path_defs.push(i16::from(path.is_some()));
        paths.extend(path.map(|p| ByteArray::from(p.as_bytes().to_vec())));
        raw_defs.push(i16::from(raw.is_some()));
        raws.extend(raw.map(|r| ByteArray::from(r.to_vec())));
    }
    let schema = parse_message_type(
        "message schema {
            OPTIONAL BYTE_ARRAY path (UTF8);
            REQUIRED INT64 offset;
            REQUIRED INT64 size;
            OPTIONAL BYTE_ARRAY raw;
        }",
    )
    .map_err(failed)?;
    // zstd, as fsspec writes them.
    let level = ZstdLevel::try_new(3).map_err(failed)?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .build();
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, Arc::new(schema), Arc::new(properties))
        .map_err(failed)?;
    let mut group = writer.next_row_group().map_err(failed)?;
    let mut column = 0;
    while let Some(mut writer) = group.next_column().map_err(failed)? {
        match column {
            0 => writer
                .typed::<ByteArrayType>()
                .write_batch(&paths, Some(&path_defs), None),
            1 => writer
                .typed::<Int64Type>()
                .write_batch(&offsets, None, None),
            2 => writer.typed::<Int64Type>().write_batch(&sizes, None, None),
            _ => writer
                .typed::<ByteArrayType>()
                .write_batch(&raws, Some(&raw_defs), None),
        }
        .map_err(failed)?;
        writer.close().map_err(failed)?;
        column += 1;
    }
    group.close().map_err(failed)?;
    writer.close().map_err(failed)?;
    Ok(out)
}

/// The chunk grid of a `.zarray` document.
fn parse_grid(zarray: &Value, id: usize) -> std::result::Result<Grid, String> {
    let integers = |name: &str| -> std::result::Result<Vec<u64>, String> {
        match zarray.get(name) {
            Some(Value::Array(list)) => list
                .iter()
                .map(|v| {
                    v.as_u64()
                        .ok_or_else(|| format!("{name} must hold non-negative integers, found {v}"))
                })
                .collect(),
            other => Err(format!(
                "{name} must be a list of integers, found {}",
                other.unwrap_or(&Value::Null)
            )),
        }
    };
    let shape = integers("shape")?;
    let chunk_shape = integers("chunks")?;
    if shape.len() != chunk_shape.len() {
        return Err(format!(
            "shape has {} dimensions and chunks {}",
            shape.len(),
            chunk_shape.len()
        ));
    }
    if chunk_shape.contains(&0) {
        return Err(format!("chunks {chunk_shape:?} has a zero"));
    }
    let separator = match zarray.get("dimension_separator") {
        None | Some(Value::Null) => '.',
        Some(Value::String(s)) if s == "." => '.',
        Some(Value::String(s)) if s == "/" => '/',
        Some(other) => {
            return Err(format!(
                "dimension_separator {other} is neither \".\" nor \"/\""
            ));
        }
    };
    let mut chunks: Vec<u64> = shape
        .iter()
        .zip(&chunk_shape)
        .map(|(s, c)| s.div_ceil(*c))
        .collect();
    if chunks.is_empty() {
        chunks.push(1);
    }
    let count = chunks
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| format!("its {chunks:?} chunks are more than a u64 counts"))?;
    Ok(Grid {
        id,
        chunks,
        separator,
        count,
    })
}

/// The references in one record file, row by row.
fn decode_record(
    bytes: Bytes,
    record_size: u64,
) -> std::result::Result<Vec<Option<Reference>>, String> {
    let reader =
        SerializedFileReader::new(bytes).map_err(|e| format!("not a Parquet file ({e})"))?;
    let rows = reader.metadata().file_metadata().num_rows();
    match u64::try_from(rows) {
        Ok(rows) if rows <= record_size => {}
        _ => {
            return Err(format!(
                "it has {rows} rows, more than the set's record_size {record_size}"
            ));
        }
    }
    let columns: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    if !columns.iter().any(|c| c == "path" || c == "raw") {
        return Err(format!(
            "it has neither a path nor a raw column (columns: {columns:?})"
        ));
    }
    // The row count is the file's claim: reserve no more than a modest number up front.
    let mut out = Vec::with_capacity(usize::try_from(rows).unwrap_or(0).min(1 << 16));
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| format!("cannot read its rows ({e})"))?;
    for (n, row) in rows.enumerate() {
        let row = row.map_err(|e| format!("row {n}: {e}"))?;
        let mut path = None;
        let mut offset = 0;
        let mut size = 0;
        let mut raw = None;
        for (name, field) in row.get_column_iter() {
            let at = |what: String| format!("row {n}, column {name}: {what}");
            match name.as_str() {
                "path" => path = text(field).map_err(at)?,
                "offset" => offset = integer(field).map_err(at)?,
                "size" => size = integer(field).map_err(at)?,
                "raw" => raw = binary(field).map_err(at)?,
                _ => {}
            }
        }
        out.push(match (raw, path) {
            (Some(raw), _) => Some(Reference::Inline(raw)),
            (None, None) => None,
            (None, Some(url)) if offset == 0 && size == 0 => {
                Some(Reference::Whole { url: Some(url) })
            }
            (None, Some(url)) => {
                if offset.checked_add(size).is_none() {
                    return Err(format!(
                        "row {n}: offset {offset} plus size {size} overflows"
                    ));
                }
                Some(Reference::Range {
                    url: Some(url),
                    offset,
                    length: size,
                })
            }
        });
    }
    Ok(out)
}

fn text(field: &Field) -> std::result::Result<Option<String>, String> {
    match field {
        Field::Null => Ok(None),
        Field::Str(s) => Ok(Some(s.clone())),
        Field::Bytes(b) => std::str::from_utf8(b.data())
            .map(|s| Some(s.to_owned()))
            .map_err(|e| format!("not UTF-8 ({e})")),
        other => Err(format!("expected text, found {other}")),
    }
}

fn integer(field: &Field) -> std::result::Result<u64, String> {
    let value: i128 = match *field {
        Field::Null => 0,
        Field::Byte(v) => v.into(),
        Field::Short(v) => v.into(),
        Field::Int(v) => v.into(),
        Field::Long(v) => v.into(),
        Field::UByte(v) => v.into(),
        Field::UShort(v) => v.into(),
        Field::UInt(v) => v.into(),
        Field::ULong(v) => v.into(),
        ref other => return Err(format!("expected an integer, found {other}")),
    };
    u64::try_from(value).map_err(|_| format!("{value} is negative"))
}

fn binary(field: &Field) -> std::result::Result<Option<Bytes>, String> {
    match field {
        Field::Null => Ok(None),
        Field::Bytes(b) => Ok(Some(Bytes::copy_from_slice(b.data()))),
        Field::Str(s) => Ok(Some(Bytes::copy_from_slice(s.as_bytes()))),
        other => Err(format!("expected bytes, found {other}")),
    }
}
