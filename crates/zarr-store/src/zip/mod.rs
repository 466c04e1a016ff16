//! A store inside one zip archive: [`ZipStore`].

mod format;
mod reader;

pub use reader::ZipEntryReader;

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::ops::{Bound, Range};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;

use self::format::{CentralEntry, End, LOCAL_LEN, NewEntry};
use crate::fallback::list_dir_from_keys;
use crate::{
    ByteRange, Error, ListDir, ListableStore, ReadableStore, Result, StoreKey, StorePrefix,
    WritableStore,
};

/// Ranges of the archive at most this far apart are read with one `pread`.
const COALESCE_GAP: u64 = 4096;
/// Coalesced reads stop growing at this size (a single larger range is still one read).
const MAX_COALESCED: u64 = 16 << 20;

/// How a [`ZipStore`] writes.
///
/// ```
/// use zarr_store::ZipOptions;
///
/// let options = ZipOptions::new().with_durable(true);
/// assert!(options.durable());
/// assert!(!options.force_zip64());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZipOptions {
    force_zip64: bool,
    durable: bool,
}

impl ZipOptions {
    /// The defaults: ZIP64 records only where a size, offset or count needs them, and no
    /// `fsync`.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Write ZIP64 records for every entry and for the end of the archive, even where the
    /// classic 32-bit fields would do (as Python's `zipfile` does with `force_zip64`). Every
    /// reader that handles archives over 4 GiB reads them; the default writes them only where
    /// needed, which every zip reader understands.
    #[must_use]
    pub fn with_force_zip64(mut self, force: bool) -> Self {
        self.force_zip64 = force;
        self
    }

    /// `fsync` the archive each time [`ZipStore::finish`] completes it.
    #[must_use]
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// Whether every entry gets ZIP64 records.
    #[must_use]
    pub fn force_zip64(&self) -> bool {
        self.force_zip64
    }

    /// Whether [`ZipStore::finish`] syncs the archive to disk.
    #[must_use]
    pub fn durable(&self) -> bool {
        self.durable
    }
}

/// A store whose values are the entries of one zip archive: a whole Zarr hierarchy in one
/// file, as zarr-python's `ZipStore` writes it.
///
/// Key `a/b/c` is the entry named `a/b/c` (entries are at the archive's root; to use a
/// hierarchy kept in a folder of the archive, wrap the store in a
/// [`PrefixStore`](crate::PrefixStore)). Directory entries and names that are not valid store
/// keys (`../x`, absolute paths) are not listed and cannot be read, but a writable store
/// keeps them in the archive.
///
/// **Reading** ([`open`](ZipStore::open), or [`from_store`](ZipStore::from_store) for an
/// archive that is itself a value in another store, such as a `.zip` object on S3): entries
/// may be stored (uncompressed) or deflated. Range reads of stored entries read only their
/// bytes, and ranges of many entries in one call are read together (with one `pread` for
/// ranges less than 4 KiB apart, or one `get_partial_values` call on the underlying store).
/// A whole-entry read checks the entry's CRC-32; a deflated entry is inflated whole, bounded
/// by its recorded size. [`reader`](ZipStore::reader) streams one entry instead. ZIP64 archives (over 4 GiB, or over 65,535 entries), archive
/// comments and data prepended to the archive are read. Encrypted entries and other
/// compression methods are [`Error::UnsupportedZipEntry`] when read, and anything malformed
/// is [`Error::InvalidZip`] naming the archive and the entry.
///
/// **Writing** ([`create`](ZipStore::create), [`append`](ZipStore::append)): each `set`
/// appends a stored entry (Zarr chunks are compressed by their codecs already), writing
/// concurrently into reserved regions of the file. The central directory, which lists the
/// entries, is written by [`finish`](ZipStore::finish), and again when the last handle to the
/// store is dropped if anything changed since (an error there can only be logged, so call
/// `finish` to see it). **Until then the file on disk is not a complete archive**: a process
/// that dies before writing it leaves a file that zip readers reject. Replacing or erasing a
/// value only changes the central directory: the old bytes stay in the file, unreachable, so
/// an archive that is rewritten often grows; copy the hierarchy into a new archive to
/// reclaim the space. Writes after `finish` are fine: the next `finish` (or the drop) writes
/// the directory again.
///
/// Zip readers disagree on little, but note: names are written as UTF-8 (flagged as such
/// when not ASCII), times are UTC, and a name may hold at most 65,535 bytes.
///
/// ```
/// use bytes::Bytes;
/// use zarr_store::{ListableStore, ReadableStore, StoreKey, WritableStore, ZipStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let path = dir.path().join("data.zarr.zip");
/// let store = ZipStore::create(&path)?;
/// store.set(&StoreKey::new("zarr.json"), Bytes::from_static(b"{}")).await?;
/// store.set(&StoreKey::new("a/c/0"), Bytes::from_static(b"chunk")).await?;
/// store.finish()?; // the archive is complete
/// drop(store);
///
/// let store = ZipStore::open(&path)?;
/// assert_eq!(store.get(&StoreKey::new("a/c/0")).await?.as_deref(), Some(&b"chunk"[..]));
/// assert_eq!(store.list().await?.len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ZipStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for ZipStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZipStore")
            .field("archive", &self.inner.archive)
            .field("writable", &self.inner.writer.is_some())
            .finish()
    }
}

struct Inner {
    /// The archive, for messages: its path, or its key and store.
    archive: String,
    source: Source,
    entries: RwLock<Entries>,
    /// Where the entries of the archive as opened end (its central directory's position):
    /// their local headers and data must lie before it.
    data_end: u64,
    writer: Option<Writer>,
}

enum Source {
    File {
        file: File,
        path: PathBuf,
    },
    Store {
        store: Arc<dyn ReadableStore>,
        key: StoreKey,
    },
}

#[derive(Default)]
struct Entries {
    by_key: BTreeMap<StoreKey, Arc<Entry>>,
    /// Central directory records of the opened archive that name no store key (directories,
    /// names that are not valid keys), written back unchanged.
    other: Vec<Vec<u8>>,
}

struct Entry {
    name: String,
    /// The local header's position in the file.
    header_offset: u64,
    /// Where the data starts, once the local header has been read.
    data_offset: OnceLock<u64>,
    compressed_size: u64,
    size: u64,
    crc32: u32,
    method: u16,
    flags: u16,
    /// Why the entry cannot be read, found when the archive was opened.
    problem: Option<String>,
    record: Record,
}

enum Record {
    /// The central directory record as read, for entries of the opened archive.
    Existing(Vec<u8>),
    /// An entry this store wrote.
    New { time: u16, date: u16 },
}

struct Writer {
    state: Mutex<WriteState>,
    options: ZipOptions,
}

struct WriteState {
    /// Where the next entry goes: the end of the last entry written or reserved.
    end: u64,
    /// Whether the file lacks an up-to-date central directory.
    dirty: bool,
    comment: Vec<u8>,
}

impl Writer {
    fn lock(&self) -> MutexGuard<'_, WriteState> {
        // Every update of the state is one assignment, so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What opening an archive found.
struct Loaded {
    entries: Entries,
    end: End,
}

impl ZipStore {
    /// Open the archive at `path` for reading.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or read, [`Error::InvalidZip`] if it is not a
    /// zip archive or its central directory is malformed.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_owned();
        let file = File::open(&path).map_err(|source| io_error("open", &path, source))?;
        let source = Source::File { file, path };
        let archive = source.describe();
        let size = source.file_size()?;
        let loaded = load_blocking(&source, &archive, size)?;
        Ok(Self::from_parts(archive, source, loaded, None))
    }

    /// Create a new, empty archive at `path` for writing (and reading). The file must not
    /// exist yet.
    ///
    /// # Errors
    /// [`Error::Io`] if the file exists or cannot be created.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Self::create_with(path, ZipOptions::default())
    }

    /// [`create`](ZipStore::create) with options.
    ///
    /// # Errors
    /// As for [`create`](ZipStore::create).
    pub fn create_with(path: impl AsRef<Path>, options: ZipOptions) -> Result<Self> {
        let path = path.as_ref().to_owned();
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|source| io_error("create", &path, source))?;
        Ok(Self::new_archive(file, path, options))
    }

    /// Open the archive at `path` for reading and writing, creating an empty one if there is
    /// no file. New entries are appended after the existing ones; the existing entries stay
    /// where they are, and [`finish`](ZipStore::finish) writes a central directory listing
    /// both (and every entry of the archive that names no store key, unchanged).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or read; [`Error::InvalidZip`] if a
    /// non-empty file is not a zip archive, or is one with data before it (a self-extracting
    /// archive: open those with [`open`](ZipStore::open)).
    pub fn append(path: impl AsRef<Path>) -> Result<Self> {
        Self::append_with(path, ZipOptions::default())
    }

    /// [`append`](ZipStore::append) with options.
    ///
    /// # Errors
    /// As for [`append`](ZipStore::append).
    pub fn append_with(path: impl AsRef<Path>, options: ZipOptions) -> Result<Self> {
        let path = path.as_ref().to_owned();
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| io_error("open", &path, source))?;
        let source = Source::File { file, path };
        let size = source.file_size()?;
        if size == 0 {
            let Source::File { file, path } = source else {
                unreachable!("built as a file source above")
            };
            return Ok(Self::new_archive(file, path, options));
        }
        let archive = source.describe();
        let loaded = load_blocking(&source, &archive, size)?;
        if loaded.end.prepended > 0 {
            return Err(Error::InvalidZip {
                archive,
                reason: format!(
                    "{} bytes of other data precede the archive; such archives open read-only",
                    loaded.end.prepended
                ),
            });
        }
        let writer = Writer {
            state: Mutex::new(WriteState {
                end: loaded.end.directory_offset,
                dirty: false,
                comment: loaded.end.comment.clone(),
            }),
            options,
        };
        Ok(Self::from_parts(archive, source, loaded, Some(writer)))
    }

    /// Open, read-only, the archive stored at `key` in another store: a `.zip` object in a
    /// bucket, say. Reads become range requests on `store` (the archive's end and central
    /// directory when opening, then each entry's local header once and its data).
    ///
    /// # Errors
    /// [`Error::InvalidZip`] if there is no value at `key`, or it is not a zip archive; errors
    /// of `store`.
    pub async fn from_store(store: Arc<dyn ReadableStore>, key: StoreKey) -> Result<Self> {
        let archive = format!("zip archive {key}");
        let size = store.size(&key).await?.ok_or_else(|| Error::InvalidZip {
            archive: archive.clone(),
            reason: "there is no value at that key".into(),
        })?;
        let source = Source::Store { store, key };
        let tail_start = size.saturating_sub(format::MAX_TAIL);
        let tail_range = tail_start..size;
        let tail = source.read_async(&archive, vec![tail_range]).await?;
        let end = format::parse_end(&tail[0], size).map_err(|reason| Error::InvalidZip {
            archive: archive.clone(),
            reason,
        })?;
        let directory = match directory_within(&end, tail_start, &tail[0]) {
            Some(directory) => directory,
            None => source
                .read_async(&archive, vec![directory_range(&end)])
                .await?
                .remove(0),
        };
        let loaded = build(&archive, end, &directory)?;
        Ok(Self::from_parts(archive, source, loaded, None))
    }

    fn new_archive(file: File, path: PathBuf, options: ZipOptions) -> Self {
        let source = Source::File { file, path };
        let archive = source.describe();
        let writer = Writer {
            state: Mutex::new(WriteState {
                end: 0,
                // An empty archive still needs its end record.
                dirty: true,
                comment: Vec::new(),
            }),
            options,
        };
        let end = End {
            entries: 0,
            directory_size: 0,
            directory_offset: 0,
            prepended: 0,
            comment: Vec::new(),
        };
        let loaded = Loaded {
            entries: Entries::default(),
            end,
        };
        Self::from_parts(archive, source, loaded, Some(writer))
    }

    fn from_parts(archive: String, source: Source, loaded: Loaded, writer: Option<Writer>) -> Self {
        Self {
            inner: Arc::new(Inner {
                archive,
                source,
                entries: RwLock::new(loaded.entries),
                data_end: loaded.end.directory_offset,
                writer,
            }),
        }
    }

    /// Whether the store was opened for writing.
    #[must_use]
    pub fn is_writable(&self) -> bool {
        self.inner.writer.is_some()
    }

    /// Write the central directory and end records, making the file a complete archive that
    /// lists every value set and not erased. Does nothing for a read-only store, or when
    /// nothing changed since the last `finish`. With [`ZipOptions::with_durable`], the file
    /// is then synced to disk.
    ///
    /// This is blocking file I/O (a central directory is about 80 bytes per entry).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be written.
    pub fn finish(&self) -> Result<()> {
        self.inner.finish()
    }

    fn writer(&self, operation: &'static str) -> Result<&Writer> {
        self.inner.writer.as_ref().ok_or_else(|| Error::ReadOnly {
            store: self.inner.archive.clone(),
            operation,
        })
    }

    fn entry(&self, key: &StoreKey) -> Option<Arc<Entry>> {
        self.inner.read_entries().by_key.get(key).cloned()
    }
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Self::File { path, .. } => format!("zip archive {}", path.display()),
            Self::Store { key, .. } => format!("zip archive {key}"),
        }
    }

    fn file_size(&self) -> Result<u64> {
        match self {
            Self::File { file, path } => Ok(file
                .metadata()
                .map_err(|source| io_error("stat", path, source))?
                .len()),
            Self::Store { .. } => unreachable!("only file sources are sized this way"),
        }
    }

    /// Read `ranges` of a file source (blocking), coalescing near ones.
    fn read_blocking(&self, archive: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let Self::File { file, path } = self else {
            unreachable!("only file sources are read blocking")
        };
        let mut order: Vec<usize> = (0..ranges.len()).collect();
        order.sort_by_key(|&i| ranges[i].start);
        let mut out = vec![Bytes::new(); ranges.len()];
        let mut i = 0;
        while i < order.len() {
            let start = ranges[order[i]].start;
            let mut end = ranges[order[i]].end;
            let mut j = i + 1;
            while j < order.len() {
                let next = &ranges[order[j]];
                if next.start > end.saturating_add(COALESCE_GAP)
                    || next.end.max(end) - start > MAX_COALESCED
                {
                    break;
                }
                end = end.max(next.end);
                j += 1;
            }
            let len = usize::try_from(end - start).map_err(|_| Error::TooLarge {
                what: "zip read",
                value: end - start,
                key: None,
            })?;
            let mut buffer = Vec::new();
            buffer.try_reserve_exact(len).map_err(|_| Error::TooLarge {
                what: "zip read",
                value: len as u64,
                key: None,
            })?;
            buffer.resize(len, 0);
            file.read_exact_at(&mut buffer, start).map_err(|source| {
                if source.kind() == std::io::ErrorKind::UnexpectedEof {
                    Error::InvalidZip {
                        archive: archive.to_owned(),
                        reason: format!("the file ends before byte {end}"),
                    }
                } else {
                    io_error("read", path, source)
                }
            })?;
            let buffer = Bytes::from(buffer);
            for &k in &order[i..j] {
                let r = &ranges[k];
                out[k] = buffer.slice((r.start - start) as usize..(r.end - start) as usize);
            }
            i = j;
        }
        Ok(out)
    }

    /// Read `ranges` of the archive, off the async runtime's workers for a file.
    async fn read_async(&self, archive: &str, ranges: Vec<Range<u64>>) -> Result<Vec<Bytes>> {
        match self {
            Self::File { .. } => {
                // `block_in_place` keeps the borrow of `self`: no hand-off to another thread.
                in_place(|| self.read_blocking(archive, &ranges)).await
            }
            Self::Store { store, key } => {
                let requests: Vec<_> = ranges
                    .iter()
                    .map(|r| (key.clone(), ByteRange::new(r.start, r.end)))
                    .collect();
                store
                    .get_partial_values(&requests)
                    .await?
                    .into_iter()
                    .map(|value| {
                        value.ok_or_else(|| Error::InvalidZip {
                            archive: archive.to_owned(),
                            reason: "the archive has disappeared from its store".into(),
                        })
                    })
                    .collect()
            }
        }
    }
}

/// Run blocking `f` on this thread: after handing the worker's other tasks to another thread
/// on a multi-threaded Tokio runtime, directly otherwise. The reads this runs are positional
/// reads of one file, mostly from the page cache.
async fn in_place<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Run the blocking write `f` on Tokio's blocking pool (so that many writes awaited together
/// run in parallel), or directly without a runtime.
async fn on_blocking_pool<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(f).await.map_err(Error::TaskFailed)?,
        Err(_) => f(),
    }
}

fn io_error(operation: &'static str, path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        operation,
        path: path.to_owned(),
        source,
    }
}

fn directory_range(end: &End) -> Range<u64> {
    end.directory_offset..end.directory_offset + end.directory_size
}

/// The central directory, if the tail read (starting at `tail_start`) holds all of it.
fn directory_within(end: &End, tail_start: u64, tail: &Bytes) -> Option<Bytes> {
    let range = directory_range(end);
    let start = usize::try_from(range.start.checked_sub(tail_start)?).ok()?;
    let len = usize::try_from(end.directory_size).ok()?;
    (start + len <= tail.len()).then(|| tail.slice(start..start + len))
}

/// Read the end records and central directory of a file source.
fn load_blocking(source: &Source, archive: &str, size: u64) -> Result<Loaded> {
    let tail_start = size.saturating_sub(format::MAX_TAIL);
    let tail_range = tail_start..size;
    let tail = source
        .read_blocking(archive, std::slice::from_ref(&tail_range))?
        .remove(0);
    let end = format::parse_end(&tail, size).map_err(|reason| Error::InvalidZip {
        archive: archive.to_owned(),
        reason,
    })?;
    let directory = match directory_within(&end, tail_start, &tail) {
        Some(directory) => directory,
        None => source
            .read_blocking(archive, &[directory_range(&end)])?
            .remove(0),
    };
    build(archive, end, &directory)
}

/// The entries of a central directory.
fn build(archive: &str, end: End, directory: &[u8]) -> Result<Loaded> {
    let records = format::parse_central_directory(directory, end.entries).map_err(|reason| {
        Error::InvalidZip {
            archive: archive.to_owned(),
            reason,
        }
    })?;
    let mut entries = Entries::default();
    for record in records {
        let key = std::str::from_utf8(&record.name)
            .ok()
            .filter(|name| !name.ends_with('/'))
            .and_then(|name| StoreKey::try_new(name).ok());
        let Some(key) = key else {
            tracing::debug!(
                archive,
                name = %String::from_utf8_lossy(&record.name),
                "zip entry names no store key; not listed"
            );
            entries.other.push(record.record);
            continue;
        };
        let entry = existing_entry(key.as_str(), record, &end);
        // A later record of the same name wins, as in other zip readers.
        entries.by_key.insert(key, Arc::new(entry));
    }
    Ok(Loaded { entries, end })
}

fn existing_entry(name: &str, record: CentralEntry, end: &End) -> Entry {
    let header_offset = record.header_offset.checked_add(end.prepended);
    let header_end = header_offset
        .and_then(|o| o.checked_add(LOCAL_LEN + record.name.len() as u64))
        .and_then(|e| e.checked_add(record.compressed_size));
    let problem = if header_end.is_none_or(|e| e > end.directory_offset) {
        Some(format!(
            "entry {name:?} records its header at byte {} and {} bytes of data, which reach \
             past the entries' end at byte {}",
            record.header_offset, record.compressed_size, end.directory_offset
        ))
    } else if record.method == format::METHOD_STORED && record.compressed_size != record.size {
        Some(format!(
            "stored entry {name:?} records {} stored bytes for {} bytes of data",
            record.compressed_size, record.size
        ))
    } else {
        None
    };
    Entry {
        name: name.to_owned(),
        header_offset: header_offset.unwrap_or(u64::MAX),
        data_offset: OnceLock::new(),
        compressed_size: record.compressed_size,
        size: record.size,
        crc32: record.crc32,
        method: record.method,
        flags: record.flags,
        problem,
        record: Record::Existing(record.record),
    }
}

impl Inner {
    fn read_entries(&self) -> std::sync::RwLockReadGuard<'_, Entries> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_entries(&self) -> std::sync::RwLockWriteGuard<'_, Entries> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn invalid(&self, reason: String) -> Error {
        Error::InvalidZip {
            archive: self.archive.clone(),
            reason,
        }
    }

    /// Check that `entry` can be read at all.
    fn check_readable(&self, entry: &Entry) -> Result<()> {
        if let Some(problem) = &entry.problem {
            return Err(self.invalid(problem.clone()));
        }
        let unsupported = |reason: String| Error::UnsupportedZipEntry {
            archive: self.archive.clone(),
            entry: entry.name.clone(),
            reason,
        };
        if entry.flags & format::FLAG_ENCRYPTED != 0 {
            return Err(unsupported("it is encrypted".into()));
        }
        match entry.method {
            format::METHOD_STORED | format::METHOD_DEFLATED => Ok(()),
            method => Err(unsupported(format!(
                "compression method {method} ({}); only stored (0) and deflate (8) are read",
                method_name(method)
            ))),
        }
    }

    /// Read the local headers of `entries` whose data offsets are not known yet.
    async fn resolve(&self, entries: &[Arc<Entry>]) -> Result<()> {
        let mut pending: Vec<&Arc<Entry>> = Vec::new();
        for entry in entries {
            if entry.data_offset.get().is_none()
                && !pending.iter().any(|other| Arc::ptr_eq(other, entry))
            {
                pending.push(entry);
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        let ranges = pending
            .iter()
            .map(|e| e.header_offset..e.header_offset + LOCAL_LEN + e.name.len() as u64)
            .collect();
        let headers = self.source.read_async(&self.archive, ranges).await?;
        for (entry, header) in pending.into_iter().zip(headers) {
            let (variable, name) = format::parse_local_header(&header).map_err(|reason| {
                self.invalid(format!(
                    "entry {:?}, local header at byte {}: {reason}",
                    entry.name, entry.header_offset
                ))
            })?;
            if name != entry.name.as_bytes() {
                return Err(self.invalid(format!(
                    "the central directory names an entry {:?}, its local header at byte {} \
                     names it {:?}",
                    entry.name,
                    entry.header_offset,
                    String::from_utf8_lossy(name)
                )));
            }
            let data = entry.header_offset + LOCAL_LEN + variable;
            if data
                .checked_add(entry.compressed_size)
                .is_none_or(|end| end > self.data_end)
            {
                return Err(self.invalid(format!(
                    "the {} bytes of entry {:?} start at byte {data} and reach past the \
                     entries' end at byte {}",
                    entry.compressed_size, entry.name, self.data_end
                )));
            }
            // Another read may have set it meanwhile, to the same value.
            let _ = entry.data_offset.set(data);
        }
        Ok(())
    }

    /// Inflate a deflated entry's `compressed` data, bounded by its recorded size, and check
    /// its CRC-32.
    fn inflate(&self, entry: &Entry, compressed: &[u8]) -> Result<Bytes> {
        let too_large = || Error::TooLarge {
            what: "zip entry",
            value: entry.size,
            key: None,
        };
        // Deflate expands at most 1,032 times (a run of one byte): a larger recorded size is
        // a lie, refused before reserving memory for it.
        if entry.size
            > entry
                .compressed_size
                .saturating_mul(1032)
                .saturating_add(64)
        {
            return Err(self.invalid(format!(
                "entry {:?} records {} bytes for {} bytes of deflate data, more than deflate \
                 can expand to",
                entry.name, entry.size, entry.compressed_size
            )));
        }
        let size = usize::try_from(entry.size).map_err(|_| too_large())?;
        let mut out = Vec::new();
        // One byte of room beyond the recorded size reveals data that inflates to more.
        out.try_reserve_exact(size.saturating_add(1))
            .map_err(|_| too_large())?;
        let mut inflater = flate2::Decompress::new(false);
        let corrupt =
            |what: String| self.invalid(format!("entry {:?}: deflate data {what}", entry.name));
        loop {
            let (before_in, before_out) = (inflater.total_in(), inflater.total_out());
            let input = compressed
                .get(usize::try_from(before_in).unwrap_or(usize::MAX)..)
                .unwrap_or_default();
            let status = inflater
                .decompress_vec(input, &mut out, flate2::FlushDecompress::Finish)
                .map_err(|e| corrupt(format!("is corrupt ({e})")))?;
            if out.len() > size {
                return Err(corrupt(format!(
                    "inflates to more than the recorded {size} bytes"
                )));
            }
            if status == flate2::Status::StreamEnd {
                break;
            }
            if (inflater.total_in(), inflater.total_out()) == (before_in, before_out) {
                return Err(corrupt(format!(
                    "ends after {} of the recorded {size} bytes",
                    out.len()
                )));
            }
        }
        if out.len() != size {
            return Err(corrupt(format!(
                "inflates to {} bytes, not the recorded {size}",
                out.len()
            )));
        }
        self.check_crc(entry, &out)?;
        Ok(Bytes::from(out))
    }

    fn check_crc(&self, entry: &Entry, data: &[u8]) -> Result<()> {
        let actual = crc32fast::hash(data);
        if actual == entry.crc32 {
            Ok(())
        } else {
            Err(Error::ZipChecksumMismatch {
                archive: self.archive.clone(),
                entry: entry.name.clone(),
                expected: entry.crc32,
                actual,
            })
        }
    }

    /// Append `value` as a stored entry named `key` (blocking).
    fn write_entry(&self, writer: &Writer, key: StoreKey, value: &[u8]) -> Result<()> {
        let Source::File { file, path } = &self.source else {
            unreachable!("writable stores are files")
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let (time, date) = format::dos_time_date(now);
        let mut new = NewEntry {
            name: key.as_str(),
            crc32: crc32fast::hash(value),
            size: value.len() as u64,
            header_offset: 0,
            time,
            date,
            force_zip64: writer.options.force_zip64,
        };
        // The local header's length does not depend on its offset: reserve, then write.
        let header_len = new.local_header().len() as u64;
        new.header_offset = {
            let mut state = writer.lock();
            let offset = state.end;
            state.end = offset
                .checked_add(header_len + new.size)
                .ok_or(Error::TooLarge {
                    what: "zip archive",
                    value: u64::MAX,
                    key: Some(key.clone()),
                })?;
            // The entry may overwrite the central directory on disk.
            state.dirty = true;
            offset
        };
        let header = new.local_header();
        file.write_all_at(&header, new.header_offset)
            .and_then(|()| file.write_all_at(value, new.header_offset + header_len))
            .map_err(|source| io_error("write", path, source))?;
        let entry = Entry {
            name: key.as_str().to_owned(),
            header_offset: new.header_offset,
            data_offset: OnceLock::from(new.header_offset + header_len),
            compressed_size: new.size,
            size: new.size,
            crc32: new.crc32,
            method: format::METHOD_STORED,
            flags: 0,
            problem: None,
            record: Record::New { time, date },
        };
        self.write_entries().by_key.insert(key, Arc::new(entry));
        // A `finish` between the reservation and here did not list this entry.
        writer.lock().dirty = true;
        Ok(())
    }

    fn finish(&self) -> Result<()> {
        let Some(writer) = &self.writer else {
            return Ok(());
        };
        let Source::File { file, path } = &self.source else {
            unreachable!("writable stores are files")
        };
        let mut state = writer.lock();
        if !state.dirty {
            return Ok(());
        }
        let mut directory = Vec::new();
        let mut count = 0u64;
        {
            let entries = self.read_entries();
            for record in &entries.other {
                directory.extend_from_slice(record);
                count += 1;
            }
            for entry in entries.by_key.values() {
                match &entry.record {
                    Record::Existing(record) => directory.extend_from_slice(record),
                    Record::New { time, date } => directory.extend_from_slice(
                        &NewEntry {
                            name: &entry.name,
                            crc32: entry.crc32,
                            size: entry.size,
                            header_offset: entry.header_offset,
                            time: *time,
                            date: *date,
                            force_zip64: writer.options.force_zip64,
                        }
                        .central_record(),
                    ),
                }
                count += 1;
            }
        }
        let offset = state.end;
        let records = format::end_records(
            count,
            offset,
            directory.len() as u64,
            &state.comment,
            writer.options.force_zip64,
        );
        directory.extend_from_slice(&records);
        file.write_all_at(&directory, offset)
            .and_then(|()| file.set_len(offset + directory.len() as u64))
            .map_err(|source| io_error("write the central directory of", path, source))?;
        if writer.options.durable {
            file.sync_all()
                .map_err(|source| io_error("sync", path, source))?;
        }
        state.dirty = false;
        Ok(())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Err(error) = self.finish() {
            tracing::error!(
                archive = %self.archive,
                %error,
                "could not complete the zip archive; call ZipStore::finish to handle this error"
            );
        }
    }
}

fn method_name(method: u16) -> &'static str {
    match method {
        1 => "shrink",
        6 => "implode",
        9 => "deflate64",
        12 => "bzip2",
        14 => "LZMA",
        93 => "Zstandard",
        95 => "xz",
        98 => "PPMd",
        _ => "unknown",
    }
}

/// How one requested range is answered.
enum Answer {
    Missing,
    /// Slice `range` of read `read`, checking the CRC-32 of `entry` first when it is the
    /// whole entry.
    Stored {
        read: usize,
        whole: bool,
        entry: Arc<Entry>,
    },
    /// `range` of the inflated entry of read `read`.
    Deflated {
        read: usize,
        range: ByteRange,
        key: StoreKey,
    },
}

#[async_trait]
impl ReadableStore for ZipStore {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        let mut values = self
            .get_partial_values(&[(key.clone(), ByteRange::FULL)])
            .await?;
        Ok(values.pop().flatten())
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        Ok(self.entry(key).map(|entry| entry.size))
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        let inner = &self.inner;
        let found: Vec<Option<Arc<Entry>>> = {
            let entries = inner.read_entries();
            key_ranges
                .iter()
                .map(|(key, _)| entries.by_key.get(key).cloned())
                .collect()
        };
        let present: Vec<Arc<Entry>> = found.iter().flatten().cloned().collect();
        for entry in &present {
            inner.check_readable(entry)?;
        }
        inner.resolve(&present).await?;

        let mut reads: Vec<Range<u64>> = Vec::new();
        // Deflated entries are read (and inflated) once per call.
        let mut deflated: Vec<(Arc<Entry>, usize)> = Vec::new();
        let mut answers = Vec::with_capacity(key_ranges.len());
        for ((key, range), entry) in key_ranges.iter().zip(found) {
            let Some(entry) = entry else {
                answers.push(Answer::Missing);
                continue;
            };
            let data = *entry
                .data_offset
                .get()
                .expect("resolved above: every present entry's data offset is known");
            if entry.method == format::METHOD_DEFLATED {
                let read = match deflated.iter().find(|(e, _)| Arc::ptr_eq(e, &entry)) {
                    Some(&(_, read)) => read,
                    None => {
                        reads.push(data..data + entry.compressed_size);
                        deflated.push((Arc::clone(&entry), reads.len() - 1));
                        reads.len() - 1
                    }
                };
                answers.push(Answer::Deflated {
                    read,
                    range: *range,
                    key: key.clone(),
                });
                continue;
            }
            let r = range.resolve(entry.size).map_err(|e| e.with_key(key))?;
            reads.push(data + r.start..data + r.end);
            answers.push(Answer::Stored {
                read: reads.len() - 1,
                whole: r.start == 0 && r.end == entry.size,
                entry,
            });
        }
        let mut values = if reads.is_empty() {
            Vec::new()
        } else {
            inner.source.read_async(&inner.archive, reads).await?
        };
        for (entry, read) in &deflated {
            values[*read] = inner.inflate(entry, &values[*read])?;
        }
        answers
            .into_iter()
            .map(|answer| match answer {
                Answer::Missing => Ok(None),
                Answer::Stored { read, whole, entry } => {
                    if whole {
                        inner.check_crc(&entry, &values[read])?;
                    }
                    Ok(Some(values[read].clone()))
                }
                Answer::Deflated { read, range, key } => range
                    .slice(&values[read])
                    .map(Some)
                    .map_err(|e| e.with_key(&key)),
            })
            .collect()
    }
}

#[async_trait]
impl WritableStore for ZipStore {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        self.writer("set")?;
        if key.as_str().len() > format::MAX_NAME_LEN {
            return Err(Error::InvalidKey {
                key: key.as_str().to_owned(),
                reason: "longer than the 65,535 bytes a zip entry name can hold",
            });
        }
        let inner = Arc::clone(&self.inner);
        let key = key.clone();
        on_blocking_pool(move || {
            let writer = inner.writer.as_ref().expect("checked above");
            inner.write_entry(writer, key, &value)
        })
        .await
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        self.erase_values(std::slice::from_ref(key)).await
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        let writer = self.writer("erase")?;
        let mut removed = false;
        {
            let mut entries = self.inner.write_entries();
            for key in keys {
                removed |= entries.by_key.remove(key).is_some();
            }
        }
        if removed {
            writer.lock().dirty = true;
        }
        Ok(())
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        let writer = self.writer("erase")?;
        let removed = {
            let mut entries = self.inner.write_entries();
            let before = entries.by_key.len();
            entries.by_key.retain(|key, _| !key.has_prefix(prefix));
            before != entries.by_key.len()
        };
        if removed {
            writer.lock().dirty = true;
        }
        Ok(())
    }
}

#[async_trait]
impl ListableStore for ZipStore {
    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let entries = self.inner.read_entries();
        Ok(entries
            .by_key
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(key, _)| key.has_prefix(prefix))
            .map(|(key, _)| key.clone())
            .collect())
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let keys = self.list_prefix(prefix).await?;
        Ok(list_dir_from_keys(prefix, keys))
    }
}
