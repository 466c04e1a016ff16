//! A store in a directory of the local filesystem (Unix).
//!
//! Every path is resolved one component at a time from a descriptor of the root directory,
//! with `openat(2)`-family calls and `O_NOFOLLOW`, so no symbolic link below the root is ever
//! followed, whatever happens to the tree concurrently.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::fallback::{KeyWrites, RangesByKey, group_partial_writes, patch_value, ranges_by_key};
use crate::pool::BufferPool;
use crate::{
    ByteRange, Error, ListDir, ListableStore, ReadableStore, Result, StoreKey, StorePrefix,
    WritableStore,
};

/// The most memory a store keeps in idle read buffers for reuse.
const POOL_BYTES: usize = 32 << 20;

/// Options of a [`FilesystemStore`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FilesystemOptions {
    /// Make every write durable before it returns: `fsync` the written file before renaming it
    /// into place, then `fsync` its directory (and the parent of any directory created for it).
    /// Off by default: writes are still atomic (a reader or a crash of this process never sees
    /// a torn value), but after a power failure or an operating-system crash the most recent
    /// writes may be missing.
    pub durable: bool,
    /// Ranges of one value closer than this many bytes are read with one positional read and
    /// handed out as slices of it. Default 4096.
    pub coalesce_gap: u64,
    /// The most file operations the store runs at once on blocking threads, across all
    /// calls and tasks; further operations wait their turn without holding a thread (so a
    /// thousand concurrent reads do not start a thousand threads). Also how many values one
    /// [`get_partial_values`](ReadableStore::get_partial_values) call reads at once. Default
    /// 32.
    pub max_concurrency: usize,
    /// Where blocking file I/O runs. Default [`BlockingStrategy::BlockInPlace`].
    pub blocking: BlockingStrategy,
    /// Serve reads from the kernel's caches on the calling thread when that cannot block,
    /// before handing them to the [`BlockingStrategy`]. On Linux 5.12 and later, a read of at
    /// most [`NONBLOCKING_READ_MAX`] bytes first opens its file with `openat2(RESOLVE_CACHED)`
    /// (which fails rather than wait for a directory lookup on disk) and reads with
    /// `preadv2(RWF_NOWAIT)` (which fails rather than wait for a page not in the page cache);
    /// only a read that would wait goes to a blocking thread. A warm read then costs no thread
    /// hand-off at all, which matters for many small concurrent reads. Filesystems that do
    /// not support `RWF_NOWAIT` are detected on the first read and always take the blocking
    /// path. Has no effect on other systems. Default `true`.
    pub nonblocking_reads: bool,
    /// Write each value atomically: into a new temporary file beside it, renamed over the old
    /// value, so that a reader, a crash or a failed write never sees a torn value (the old
    /// value or the new one, nothing between). Default `true`.
    ///
    /// With `false`, a value is written in place: its file is opened (created where missing),
    /// truncated and written, with one `openat2` where the directory exists. That saves the
    /// temporary file and the rename, the most expensive steps of writing a small value (on
    /// `tmpfs`, about half the time of writing many small chunks; docs/performance.md), at the
    /// price of those guarantees: a read of a value while it is written may see part of it, and
    /// a failed write or a crash in the middle of one leaves the value cut short (read back as
    /// a corrupt chunk, never as the old value). Writes of one key through one store are
    /// serialized; writes from other stores or processes are not. Use it for writing data
    /// nothing reads until the writes are done, such as an ingest or a conversion.
    pub atomic_writes: bool,
}

/// The largest read [`FilesystemOptions::nonblocking_reads`] serves on the calling thread
/// (1 MiB, about 100 µs of copying): larger reads go to the [`BlockingStrategy`], so that no
/// async worker is held up for long even when the data is cached. A `get_partial_values`
/// call likewise reads values on the calling thread only until it has read this much.
pub const NONBLOCKING_READ_MAX: u64 = 1 << 20;

/// Where a [`FilesystemStore`] runs its blocking file I/O, so that it never stalls the async
/// runtime. Without a Tokio runtime, I/O always runs inline on the calling thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockingStrategy {
    /// Each operation (and each value of a `get_partial_values` batch) is a task on Tokio's
    /// blocking thread pool (`spawn_blocking`). Operations awaited together in one task
    /// (`join!`, `buffer_unordered`) run in parallel. Each costs a hand-off to another thread
    /// and back (12 to 30 µs on a busy 2-core machine), which dominates small reads from the
    /// page cache. Choose it when the files are slow to reach (a network filesystem, a cold
    /// disk) and one task keeps many reads in flight.
    SpawnBlocking,
    /// The default. On a multi-threaded runtime, a read or listing runs on the calling thread
    /// after Tokio hands that worker's other tasks to another thread (`block_in_place`): no
    /// hand-off latency, and other tasks keep running. Reads polled by the same task (in a
    /// `join!`, or a buffered stream) wait for each other, and a batch reads its values one
    /// after the other; reads in separate tasks (`tokio::spawn`) still run in parallel.
    /// Writes always go to the blocking pool, so that many writes awaited together (each
    /// perhaps with an `fsync`) run in parallel. Falls back to `SpawnBlocking` on a
    /// current-thread runtime, where blocking in place is not possible.
    #[default]
    BlockInPlace,
}

impl Default for FilesystemOptions {
    fn default() -> Self {
        Self {
            durable: false,
            coalesce_gap: 4096,
            max_concurrency: 32,
            blocking: BlockingStrategy::BlockInPlace,
            nonblocking_reads: true,
            atomic_writes: true,
        }
    }
}

impl FilesystemOptions {
    /// Set [`durable`](FilesystemOptions::durable).
    #[must_use]
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// Set [`coalesce_gap`](FilesystemOptions::coalesce_gap).
    #[must_use]
    pub fn with_coalesce_gap(mut self, bytes: u64) -> Self {
        self.coalesce_gap = bytes;
        self
    }

    /// Set [`blocking`](FilesystemOptions::blocking).
    #[must_use]
    pub fn with_blocking(mut self, blocking: BlockingStrategy) -> Self {
        self.blocking = blocking;
        self
    }

    /// Set [`nonblocking_reads`](FilesystemOptions::nonblocking_reads).
    #[must_use]
    pub fn with_nonblocking_reads(mut self, nonblocking: bool) -> Self {
        self.nonblocking_reads = nonblocking;
        self
    }

    /// Set [`atomic_writes`](FilesystemOptions::atomic_writes).
    #[must_use]
    pub fn with_atomic_writes(mut self, atomic: bool) -> Self {
        self.atomic_writes = atomic;
        self
    }

    /// Set [`max_concurrency`](FilesystemOptions::max_concurrency) (at least 1).
    #[must_use]
    pub fn with_max_concurrency(mut self, values: usize) -> Self {
        self.max_concurrency = values.max(1);
        self
    }
}

/// Counts of the file I/O a [`FilesystemStore`] has done, from [`FilesystemStore::io_stats`].
///
/// Meant for tests and benchmarks that prove how a read was served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoStats {
    /// Value files opened for reading.
    pub opens: u64,
    /// Whole-file reads (by `get`, or by a partial write reading the old value).
    pub whole_reads: u64,
    /// Positional reads (`pread`) issued for byte ranges.
    pub positional_reads: u64,
    /// Bytes read from value files, by either kind of read.
    pub bytes_read: u64,
    /// The most operations that ran on blocking threads at the same time (at most
    /// [`FilesystemOptions::max_concurrency`]).
    pub peak_blocking_ops: u64,
    /// Reads served from the kernel's caches on the calling thread, without blocking (a
    /// `get`, or all the ranges of one value in a `get_partial_values` call; see
    /// [`FilesystemOptions::nonblocking_reads`]). Also counted in the counts above.
    pub nonblocking_reads: u64,
    /// Reads that went to a blocking thread (as `nonblocking_reads` counts them).
    pub blocking_reads: u64,
    /// Operations that would have gone to a blocking thread but ran on the calling thread,
    /// because it allowed blocking ([`inline::allow_blocking_here`](crate::inline)). Also
    /// counted in `peak_blocking_ops`.
    pub inline_ops: u64,
}

#[derive(Debug, Default)]
struct Counters {
    opens: AtomicU64,
    whole_reads: AtomicU64,
    positional_reads: AtomicU64,
    bytes_read: AtomicU64,
    blocking_ops: AtomicU64,
    peak_blocking_ops: AtomicU64,
    nonblocking_reads: AtomicU64,
    blocking_reads: AtomicU64,
    inline_ops: AtomicU64,
}

impl Counters {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// A store in a directory of the local filesystem: key `a/b/c` is the file `root/a/b/c`.
///
/// Available on Unix (Linux, macOS, the BSDs).
///
/// # Guarantees
///
/// - **Keys stay inside the root.** Keys are validated ([`StoreKey`] has no `..`, `.`, empty
///   or absolute segments, backslashes or NULs), and paths are resolved one component at a time
///   from a descriptor of the root opened once, with `O_NOFOLLOW`. **No symbolic link below the
///   root is ever followed**, even one pointing inside the root: a key or prefix crossing one is
///   refused with [`Error::SymlinkRefused`], and listings skip symbolic links. Because the
///   check and the use are the same system call, this holds even if another process swaps a
///   directory for a link concurrently. The root path itself may contain symbolic links; it is
///   resolved once, when the store is opened.
/// - **Writes are atomic.** A value is written to a temporary file in its directory and
///   renamed over the old one, so readers and crashes see the old value or the new one, never
///   a mix. Temporary files have names that are not valid keys (they contain a backslash), so
///   they never show in listings, and a failed write removes its own. Parent directories are
///   created as needed; erasing a value removes the directories it leaves empty.
/// - **Durability is opt-in:** see [`FilesystemOptions::durable`].
/// - **Reads never stall the async runtime.** File I/O runs where Tokio allows blocking:
///   by default in place on a multi-threaded runtime's worker after Tokio moved its other
///   tasks away (`block_in_place`), otherwise on the blocking thread pool (see
///   [`BlockingStrategy`]), or inline when no Tokio runtime is running. At most
///   [`FilesystemOptions::max_concurrency`] operations run at once. All the ranges one
///   [`get_partial_values`](ReadableStore::get_partial_values) call asks of one value are
///   served by one blocking task with one open file and positional reads (`pread`); near
///   ranges share one read. A range read never reads the whole file.
/// - `set_partial_values` is atomic per value too: it writes a patched copy and renames it.
///   It therefore costs a copy of each value it touches.
/// - Only regular files are values. A directory is not a value (reading its key answers
///   `None`); other file types are [`Error::NotAFile`]. Directories made by other programs
///   show as prefixes in [`list_dir`](ListableStore::list_dir) even when empty.
///
/// A key and a prefix cannot share a name here (`a` as a value and `a/b` below it): writing
/// one when the other exists is an error ([`Error::ParentIsAValue`] or [`Error::Io`]).
#[derive(Clone, Debug)]
pub struct FilesystemStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    root_fd: OwnedFd,
    options: FilesystemOptions,
    counters: Counters,
    /// `options.max_concurrency` permits for operations on blocking threads.
    permits: Arc<tokio::sync::Semaphore>,
    /// Read buffers that come back when the values read into them are dropped.
    pool: Arc<BufferPool>,
    /// Whether to try [`FilesystemOptions::nonblocking_reads`]: cleared for good when the
    /// filesystem refuses `RWF_NOWAIT`.
    nonblocking: std::sync::atomic::AtomicBool,
    /// Locks serializing in-place writes of one key ([`FilesystemOptions::atomic_writes`]
    /// off), a key's lock chosen by its hash.
    key_locks: Box<[std::sync::Mutex<()>]>,
}

/// How many locks [`Inner::key_locks`] spreads keys over.
const KEY_LOCKS: usize = 64;

/// What to do when a component of a path is missing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// Answer "nothing there".
    Absent,
    /// Create the directory.
    Create,
}

/// A directory descriptor: the root's (borrowed) or one opened below it.
enum DirFd<'a> {
    Root(BorrowedFd<'a>),
    Owned(OwnedFd),
}

impl AsFd for DirFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Root(fd) => *fd,
            Self::Owned(fd) => fd.as_fd(),
        }
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How many times a write retries when a concurrent erase removed its directory.
const WRITE_ATTEMPTS: usize = 8;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_name() -> String {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    // The backslash makes the name an invalid key segment: never listed, never a key.
    format!(".zarr-tmp\\{:x}.{n:x}", std::process::id())
}

/// Whether `openat2` is worth trying (it is missing before Linux 5.6, or may be filtered).
#[cfg(any(target_os = "linux", target_os = "android"))]
static OPENAT2: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// `openat2` below `root` refusing every link (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS`, plus `extra`), while `gate` says the call is worth trying. An
/// error in `unavailable` means the kernel (or a seccomp filter) lacks the call or the flags:
/// `gate` is cleared for good, with `note` in the debug log, and the answer is `None`.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(clippy::too_many_arguments)]
fn openat2_gated(
    root: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
    mode: Mode,
    extra: rustix::fs::ResolveFlags,
    gate: &std::sync::atomic::AtomicBool,
    unavailable: &[Errno],
    note: &'static str,
) -> Option<std::result::Result<OwnedFd, Errno>> {
    use rustix::fs::ResolveFlags;
    if !gate.load(Ordering::Relaxed) {
        return None;
    }
    let resolve =
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | extra;
    match rustix::fs::openat2(root, path, flags, mode, resolve) {
        Err(err) if unavailable.contains(&err) => {
            tracing::debug!(error = %std::io::Error::from(err), "{note}");
            gate.store(false, Ordering::Relaxed);
            None
        }
        result => Some(result),
    }
}

/// Open `path` (relative, `/`-separated) below `root` in one system call that refuses every
/// symbolic link and any escape from `root`: `openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`. `None` where that call is not available; callers then walk the path
/// one component at a time, which guarantees the same.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_beneath(
    root: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
) -> Option<std::result::Result<OwnedFd, Errno>> {
    open_beneath_mode(root, path, flags, Mode::empty())
}

/// [`open_beneath`] with the `mode` of a file `flags` may create.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_beneath_mode(
    root: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
    mode: Mode,
) -> Option<std::result::Result<OwnedFd, Errno>> {
    openat2_gated(
        root,
        path,
        flags,
        mode,
        rustix::fs::ResolveFlags::empty(),
        &OPENAT2,
        &[Errno::NOSYS, Errno::PERM],
        "openat2 is not available: resolving paths one component at a time",
    )
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_beneath(
    _root: BorrowedFd<'_>,
    _path: &str,
    _flags: OFlags,
) -> Option<std::result::Result<OwnedFd, Errno>> {
    None
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_beneath_mode(
    _root: BorrowedFd<'_>,
    _path: &str,
    _flags: OFlags,
    _mode: Mode,
) -> Option<std::result::Result<OwnedFd, Errno>> {
    None
}

/// Whether this system has the calls [`FilesystemOptions::nonblocking_reads`] needs.
const NONBLOCKING_SUPPORTED: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// Whether `RESOLVE_CACHED` is worth trying (it is missing before Linux 5.12).
#[cfg(any(target_os = "linux", target_os = "android"))]
static OPENAT2_CACHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Open `path` below `root` as [`open_beneath`] does, but only if the kernel can resolve
/// every component from its caches: `None` when that would wait for the disk, or when the
/// kernel cannot tell (the caller then opens with blocking allowed).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_beneath_cached(
    root: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
) -> Option<std::result::Result<OwnedFd, Errno>> {
    if !OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    match openat2_gated(
        root,
        path,
        flags,
        Mode::empty(),
        rustix::fs::ResolveFlags::CACHED,
        &OPENAT2_CACHED,
        &[Errno::NOSYS, Errno::PERM, Errno::INVAL],
        "openat2 with RESOLVE_CACHED is not available: reads open files on blocking threads",
    )? {
        // Resolving would need the disk.
        Err(Errno::AGAIN) => None,
        result => Some(result),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_beneath_cached(
    _root: BorrowedFd<'_>,
    _path: &str,
    _flags: OFlags,
) -> Option<std::result::Result<OwnedFd, Errno>> {
    None
}

/// What reading one part of a file from the page cache alone came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CachedRead {
    /// The buffer is filled.
    Filled,
    /// Some of it is not cached (or the file ended early): read it with blocking allowed.
    WouldBlock,
    /// The filesystem does not support reads that refuse to wait.
    Unsupported,
}

/// Fill `buf` from `offset` of `file` with `preadv2(RWF_NOWAIT)`, which returns what the
/// page cache holds instead of waiting for the disk.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn pread_cached(file: &File, buf: &mut [u8], offset: u64) -> CachedRead {
    use rustix::io::ReadWriteFlags;
    let mut filled = 0;
    while filled < buf.len() {
        let mut slices = [std::io::IoSliceMut::new(&mut buf[filled..])];
        match rustix::io::preadv2(
            file,
            &mut slices,
            offset + filled as u64,
            ReadWriteFlags::NOWAIT,
        ) {
            Ok(0) => return CachedRead::WouldBlock,
            Ok(n) => filled += n,
            Err(Errno::INTR) => {}
            Err(Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => return CachedRead::Unsupported,
            // Not cached, or an error the blocking path reports with its context.
            Err(_) => return CachedRead::WouldBlock,
        }
    }
    CachedRead::Filled
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn pread_cached(_file: &File, _buf: &mut [u8], _offset: u64) -> CachedRead {
    CachedRead::Unsupported
}

/// Whether a directory entry's name could be a key segment.
fn is_key_segment(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['\\', '/', '\0'])
}

impl FilesystemStore {
    /// Open (creating it and its parents if needed) the directory `root` as a store. To
    /// read an existing store without creating anything, use [`FilesystemStore::open`].
    ///
    /// # Errors
    /// [`Error::Io`] if the directory cannot be created, resolved or opened.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        Self::with_options(root, FilesystemOptions::default())
    }

    /// Open the existing directory `root` as a store, creating nothing: what a program that
    /// only reads wants, so that a mistyped path is an error naming it rather than a new
    /// empty store.
    ///
    /// ```
    /// use zarr_store::FilesystemStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// assert!(FilesystemStore::open(dir.path()).is_ok());
    /// let err = FilesystemStore::open(dir.path().join("missing.zarr")).unwrap_err();
    /// assert!(err.to_string().contains("missing.zarr"));
    /// assert!(!dir.path().join("missing.zarr").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] if `root` is not an existing directory, or cannot be resolved or opened.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(root, FilesystemOptions::default())
    }

    /// Like [`FilesystemStore::open`], with options.
    ///
    /// # Errors
    /// As [`FilesystemStore::open`].
    pub fn open_with(root: impl AsRef<Path>, options: FilesystemOptions) -> Result<Self> {
        let root = root.as_ref();
        match std::fs::metadata(root) {
            Ok(meta) if meta.is_dir() => Self::with_options(root, options),
            Ok(_) => Err(Error::Io {
                operation: "open the store directory",
                path: root.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            }),
            Err(source) => Err(Error::Io {
                operation: "open the store directory",
                path: root.to_path_buf(),
                source,
            }),
        }
    }

    /// Like [`FilesystemStore::new`], with options.
    ///
    /// # Errors
    /// [`Error::Io`] if the directory cannot be created, resolved or opened.
    pub fn with_options(root: impl AsRef<Path>, options: FilesystemOptions) -> Result<Self> {
        let root = root.as_ref();
        let io = |operation, source| Error::Io {
            operation,
            path: root.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(root).map_err(|e| io("create the store directory", e))?;
        let root = std::fs::canonicalize(root).map_err(|e| io("resolve the store directory", e))?;
        let root_fd = rustix::fs::open(&root, DIR_FLAGS, Mode::empty()).map_err(|e| Error::Io {
            operation: "open the store directory",
            path: root.clone(),
            source: e.into(),
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                root,
                root_fd,
                permits: Arc::new(tokio::sync::Semaphore::new(options.max_concurrency.max(1))),
                pool: BufferPool::new(POOL_BYTES),
                nonblocking: std::sync::atomic::AtomicBool::new(
                    options.nonblocking_reads && NONBLOCKING_SUPPORTED,
                ),
                options,
                counters: Counters::default(),
                key_locks: (0..KEY_LOCKS).map(|_| std::sync::Mutex::new(())).collect(),
            }),
        })
    }

    /// The store's root directory (absolute, with symbolic links resolved).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The file I/O done so far by this store and its clones.
    #[must_use]
    pub fn io_stats(&self) -> IoStats {
        let c = &self.inner.counters;
        IoStats {
            opens: c.opens.load(Ordering::Relaxed),
            whole_reads: c.whole_reads.load(Ordering::Relaxed),
            positional_reads: c.positional_reads.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
            peak_blocking_ops: c.peak_blocking_ops.load(Ordering::Relaxed),
            nonblocking_reads: c.nonblocking_reads.load(Ordering::Relaxed),
            blocking_reads: c.blocking_reads.load(Ordering::Relaxed),
            inline_ops: c.inline_ops.load(Ordering::Relaxed),
        }
    }

    /// Reset the counters of [`io_stats`](FilesystemStore::io_stats) to zero.
    pub fn reset_io_stats(&self) {
        let c = &self.inner.counters;
        for counter in [
            &c.opens,
            &c.whole_reads,
            &c.positional_reads,
            &c.bytes_read,
            &c.peak_blocking_ops,
            &c.nonblocking_reads,
            &c.blocking_reads,
            &c.inline_ops,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// Run the read (or listing) `f` on the inner state where blocking is allowed, as the
    /// [`BlockingStrategy`] says.
    async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T> + Send + 'static,
    {
        self.run_blocking(self.inner.options.blocking, f).await
    }

    /// Run the write `f` on the blocking thread pool whatever the strategy: writes (with
    /// `fsync` when durable) are slow next to the hand-off, and a task that writes many values
    /// at once (an array write) needs them in parallel, which `block_in_place` would not give.
    async fn blocking_write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T> + Send + 'static,
    {
        self.run_blocking(BlockingStrategy::SpawnBlocking, f).await
    }

    async fn run_blocking<T, F>(&self, strategy: BlockingStrategy, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            // Without a Tokio runtime there is no runtime to protect: run inline.
            return f(&inner);
        };
        // The permit travels with the work: it is released when the file operation ends,
        // even if this future is dropped before. (The semaphore is never closed, so the
        // permit is always granted.) Where the caller lets this thread block
        // (`inline::allow_blocking_here`) and a permit is free, the work runs here, without
        // the hand-off to the blocking pool and its two wake-ups.
        let inline = crate::inline::blocking_allowed_here();
        let (permit, inline) = match inline
            .then(|| Arc::clone(&self.inner.permits).try_acquire_owned().ok())
            .flatten()
        {
            Some(permit) => (Some(permit), true),
            None => (
                Arc::clone(&self.inner.permits).acquire_owned().await.ok(),
                false,
            ),
        };
        let run = move || {
            let _permit = permit;
            let c = &inner.counters;
            let now = c.blocking_ops.fetch_add(1, Ordering::Relaxed) + 1;
            c.peak_blocking_ops.fetch_max(now, Ordering::Relaxed);
            let result = f(&inner);
            c.blocking_ops.fetch_sub(1, Ordering::Relaxed);
            result
        };
        if inline {
            self.inner
                .counters
                .inline_ops
                .fetch_add(1, Ordering::Relaxed);
            return run();
        }
        match (strategy, handle.runtime_flavor()) {
            (BlockingStrategy::BlockInPlace, tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(run)
            }
            _ => handle
                .spawn_blocking(run)
                .await
                .map_err(Error::TaskFailed)?,
        }
    }
}

impl Inner {
    fn path_of(&self, segments: &[&str]) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(segments);
        path
    }

    fn io_error(&self, operation: &'static str, segments: &[&str], err: Errno) -> Error {
        Error::Io {
            operation,
            path: self.path_of(segments),
            source: err.into(),
        }
    }

    /// Classify an entry that could not be opened as expected: a symbolic link is refused.
    fn refuse_symlink(
        &self,
        dir: BorrowedFd<'_>,
        segments: &[&str],
        what: &'static str,
        name: &str,
        err: Errno,
        operation: &'static str,
    ) -> Error {
        let last = segments.last().copied().unwrap_or_default();
        match rustix::fs::statat(dir, last, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                Error::SymlinkRefused {
                    what,
                    name: name.to_owned(),
                    path: self.path_of(segments),
                }
            }
            _ => self.io_error(operation, segments, err),
        }
    }

    /// Open the directory at `segments` below the root without following symbolic links.
    /// `Ok(None)` if it does not exist (or a value sits where a directory should be) and
    /// `missing` is `Absent`.
    fn open_dir(
        &self,
        segments: &[&str],
        missing: Missing,
        what: &'static str,
        name: &str,
    ) -> Result<Option<DirFd<'_>>> {
        if segments.is_empty() {
            return Ok(Some(DirFd::Root(self.root_fd.as_fd())));
        }
        match open_beneath(self.root_fd.as_fd(), &segments.join("/"), DIR_FLAGS) {
            Some(Ok(fd)) => return Ok(Some(DirFd::Owned(fd))),
            Some(Err(Errno::NOENT)) if missing == Missing::Absent => return Ok(None),
            // Links, missing directories to create, old kernels: walk for the exact answer.
            _ => {}
        }
        self.walk_dir(segments, missing, what, name)
    }

    /// [`open_dir`](Inner::open_dir) one component at a time.
    fn walk_dir(
        &self,
        segments: &[&str],
        missing: Missing,
        what: &'static str,
        name: &str,
    ) -> Result<Option<DirFd<'_>>> {
        let mut dir = DirFd::Root(self.root_fd.as_fd());
        for (depth, segment) in segments.iter().enumerate() {
            let here = &segments[..=depth];
            let mut created = false;
            let fd = loop {
                match rustix::fs::openat(dir.as_fd(), *segment, DIR_FLAGS, Mode::empty()) {
                    Ok(fd) => break fd,
                    Err(Errno::NOENT) if missing == Missing::Create && !created => {
                        match rustix::fs::mkdirat(dir.as_fd(), *segment, Mode::from(0o777)) {
                            Ok(()) | Err(Errno::EXIST) => {}
                            Err(err) => return Err(self.io_error("create directory", here, err)),
                        }
                        if self.options.durable {
                            rustix::fs::fsync(dir.as_fd())
                                .map_err(|e| self.io_error("sync directory", here, e))?;
                        }
                        created = true;
                    }
                    Err(Errno::NOENT) if missing == Missing::Absent => return Ok(None),
                    Err(err @ (Errno::LOOP | Errno::MLINK | Errno::NOTDIR)) => {
                        let error = self.refuse_symlink(
                            dir.as_fd(),
                            here,
                            what,
                            name,
                            err,
                            "open directory",
                        );
                        return match (&error, missing) {
                            (Error::SymlinkRefused { .. }, _) => Err(error),
                            // A value where a directory should be: nothing below it.
                            (_, Missing::Absent) if err == Errno::NOTDIR => Ok(None),
                            (_, Missing::Create) if err == Errno::NOTDIR => {
                                Err(Error::ParentIsAValue {
                                    key: name.to_owned(),
                                    path: self.path_of(here),
                                })
                            }
                            _ => Err(error),
                        };
                    }
                    Err(err) => return Err(self.io_error("open directory", here, err)),
                }
            };
            dir = DirFd::Owned(fd);
        }
        Ok(Some(dir))
    }

    /// Open the value file of `key`, or `None` if there is none.
    fn open_value(&self, key: &StoreKey) -> Result<Option<(File, u64)>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = match open_beneath(self.root_fd.as_fd(), key.as_str(), flags) {
            Some(Ok(fd)) => fd,
            Some(Err(Errno::NOENT)) => return Ok(None),
            // A link or a value on the way (Linux may answer ENOTDIR for a link opened with
            // O_NOFOLLOW), or no openat2: walk for the exact answer.
            _ => match self.walk_value(key, flags)? {
                Some(fd) => fd,
                None => return Ok(None),
            },
        };
        Counters::add(&self.counters.opens, 1);
        self.inspect_value(key, File::from(fd))
    }

    /// Check that an opened entry is a value, and measure it.
    fn inspect_value(&self, key: &StoreKey, file: File) -> Result<Option<(File, u64)>> {
        let meta = file.metadata().map_err(|e| Error::Io {
            operation: "inspect",
            path: self.root.join(key.as_str()),
            source: e,
        })?;
        if meta.is_dir() {
            return Ok(None);
        }
        if !meta.is_file() {
            return Err(Error::NotAFile {
                path: self.root.join(key.as_str()),
            });
        }
        Ok(Some((file, meta.len())))
    }

    /// Open the value file of `key` one component at a time.
    fn walk_value(&self, key: &StoreKey, flags: OFlags) -> Result<Option<OwnedFd>> {
        let segments: Vec<&str> = key.segments().collect();
        let (name, parents) = segments.split_last().unwrap_or((&"", &[]));
        let Some(dir) = self.walk_dir(parents, Missing::Absent, "key", key.as_str())? else {
            return Ok(None);
        };
        let fd = match rustix::fs::openat(dir.as_fd(), *name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(None),
            Err(err @ (Errno::LOOP | Errno::MLINK)) => {
                return Err(self.refuse_symlink(
                    dir.as_fd(),
                    &segments,
                    "key",
                    key.as_str(),
                    err,
                    "open",
                ));
            }
            Err(err) => return Err(self.io_error("open", &segments, err)),
        };
        Ok(Some(fd))
    }

    fn read_whole(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        let Some((mut file, size)) = self.open_value(key)? else {
            return Ok(None);
        };
        let too_large = || Error::TooLarge {
            what: "value",
            value: size,
            key: Some(key.clone()),
        };
        let capacity = usize::try_from(size).map_err(|_| too_large())?;
        let mut buf = self.pool.take(capacity).map_err(|_| too_large())?;
        file.read_to_end(&mut buf).map_err(|e| Error::Io {
            operation: "read",
            path: self.root.join(key.as_str()),
            source: e,
        })?;
        Counters::add(&self.counters.whole_reads, 1);
        Counters::add(&self.counters.bytes_read, buf.len() as u64);
        Ok(Some(BufferPool::bytes(&self.pool, buf)))
    }

    /// Open the value file of `key` only if that needs nothing but the kernel's caches:
    /// `None` when it would wait (or the fast path is off).
    fn open_value_cached(&self, key: &StoreKey) -> Option<Result<Option<(File, u64)>>> {
        if !self.nonblocking.load(Ordering::Relaxed) {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        match open_beneath_cached(self.root_fd.as_fd(), key.as_str(), flags)? {
            Ok(fd) => {
                Counters::add(&self.counters.opens, 1);
                Some(self.inspect_value(key, File::from(fd)))
            }
            Err(Errno::NOENT) => Some(Ok(None)),
            // Links, values on the way, anything unusual: the blocking path has the exact
            // answer.
            Err(_) => None,
        }
    }

    /// [`read_whole`](Self::read_whole) from the kernel's caches alone, on the calling
    /// thread; `None` when some of it would wait for the disk.
    fn read_whole_cached(&self, key: &StoreKey) -> Option<Result<Option<Bytes>>> {
        let (file, size) = match self.open_value_cached(key)? {
            Ok(Some(found)) => found,
            other => return Some(other.map(|_| None)),
        };
        if size > NONBLOCKING_READ_MAX {
            return None;
        }
        // At most 1 MiB, so the conversion holds.
        let value = self.read_at(&file, key, 0..size, true).transpose()?;
        if value.is_ok() {
            Counters::add(&self.counters.whole_reads, 1);
            Counters::add(&self.counters.nonblocking_reads, 1);
        }
        Some(value.map(Some))
    }

    /// [`read_ranges`](Self::read_ranges) from the kernel's caches alone, on the calling
    /// thread; `None` when some of it would wait for the disk.
    fn read_ranges_cached(
        &self,
        key: &StoreKey,
        ranges: &[ByteRange],
    ) -> Option<Result<Option<Vec<Bytes>>>> {
        let (file, size) = match self.open_value_cached(key)? {
            Ok(Some(found)) => found,
            other => return Some(other.map(|_| None)),
        };
        let parts = self.ranges_of(&file, size, key, ranges, true).transpose()?;
        if parts.is_ok() {
            Counters::add(&self.counters.nonblocking_reads, 1);
        }
        Some(parts.map(Some))
    }

    /// Read `ranges` of one value with one open file and positional reads.
    fn read_ranges(&self, key: &StoreKey, ranges: &[ByteRange]) -> Result<Option<Vec<Bytes>>> {
        let Some((file, size)) = self.open_value(key)? else {
            return Ok(None);
        };
        self.ranges_of(&file, size, key, ranges, false)
    }

    /// Read `ranges` of the open value `file` of `size` bytes, coalescing near ranges. With
    /// `cached`, from the page cache alone: `Ok(None)` when some of it is not there, or when
    /// the ranges add up to more than [`NONBLOCKING_READ_MAX`].
    fn ranges_of(
        &self,
        file: &File,
        size: u64,
        key: &StoreKey,
        ranges: &[ByteRange],
        cached: bool,
    ) -> Result<Option<Vec<Bytes>>> {
        let resolved = ranges
            .iter()
            .map(|range| range.resolve(size).map_err(|e| e.with_key(key)))
            .collect::<Result<Vec<Range<u64>>>>()?;
        let total = resolved
            .iter()
            .fold(0u64, |sum, r| sum.saturating_add(r.end - r.start));
        if cached && total > NONBLOCKING_READ_MAX {
            return Ok(None);
        }
        let mut order: Vec<usize> = (0..resolved.len()).collect();
        order.sort_by_key(|&i| resolved[i].start);
        let mut out = vec![Bytes::new(); resolved.len()];
        let mut i = 0;
        while i < order.len() {
            // Grow a span over the ranges that start within `coalesce_gap` of its end.
            let span_start = resolved[order[i]].start;
            let mut span_end = resolved[order[i]].end;
            let mut j = i + 1;
            while j < order.len()
                && resolved[order[j]].start <= span_end.saturating_add(self.options.coalesce_gap)
            {
                span_end = span_end.max(resolved[order[j]].end);
                j += 1;
            }
            let Some(span) = self.read_at(file, key, span_start..span_end, cached)? else {
                return Ok(None);
            };
            for &k in &order[i..j] {
                let r = &resolved[k];
                // Inside the span by construction, and the span's length is a usize.
                let start = (r.start - span_start) as usize;
                let end = (r.end - span_start) as usize;
                out[k] = span.slice(start..end);
            }
            i = j;
        }
        Ok(Some(out))
    }

    /// Read `range` of `file`. With `cached`, from the page cache alone: `Ok(None)` when some
    /// of it is not there (and on a filesystem that cannot tell, which turns the fast path
    /// off for this store).
    fn read_at(
        &self,
        file: &File,
        key: &StoreKey,
        range: Range<u64>,
        cached: bool,
    ) -> Result<Option<Bytes>> {
        let len = range.end - range.start;
        if len == 0 {
            return Ok(Some(Bytes::new()));
        }
        let len = usize::try_from(len).map_err(|_| Error::TooLarge {
            what: "byte range",
            value: len,
            key: Some(key.clone()),
        })?;
        // Every byte is read into before the buffer is handed out.
        let mut buf = self.pool.take_filled(len).map_err(|_| Error::TooLarge {
            what: "byte range",
            value: len as u64,
            key: Some(key.clone()),
        })?;
        if cached {
            match pread_cached(file, &mut buf, range.start) {
                CachedRead::Filled => Counters::add(&self.counters.positional_reads, 1),
                outcome => {
                    if outcome == CachedRead::Unsupported {
                        tracing::debug!(
                            "this filesystem does not support RWF_NOWAIT: reads go to blocking threads"
                        );
                        self.nonblocking.store(false, Ordering::Relaxed);
                    }
                    self.pool.give(buf);
                    return Ok(None);
                }
            }
        } else {
            let mut filled = 0;
            while filled < len {
                let offset = range.start + filled as u64;
                Counters::add(&self.counters.positional_reads, 1);
                match file.read_at(&mut buf[filled..], offset) {
                    Ok(0) => {
                        return Err(Error::Io {
                            operation: "read (the file shrank while being read)",
                            path: self.root.join(key.as_str()),
                            source: ErrorKind::UnexpectedEof.into(),
                        });
                    }
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(Error::Io {
                            operation: "read",
                            path: self.root.join(key.as_str()),
                            source: e,
                        });
                    }
                }
            }
        }
        Counters::add(&self.counters.bytes_read, len as u64);
        Ok(Some(BufferPool::bytes(&self.pool, buf)))
    }

    fn value_size(&self, key: &StoreKey) -> Result<Option<u64>> {
        let segments: Vec<&str> = key.segments().collect();
        let (name, parents) = segments.split_last().unwrap_or((&"", &[]));
        let Some(dir) = self.open_dir(parents, Missing::Absent, "key", key.as_str())? else {
            return Ok(None);
        };
        let stat = match rustix::fs::statat(dir.as_fd(), *name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT | Errno::NOTDIR) => return Ok(None),
            Err(err) => return Err(self.io_error("inspect", &segments, err)),
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Ok(Some(u64::try_from(stat.st_size).unwrap_or(0))),
            FileType::Directory => Ok(None),
            FileType::Symlink => Err(Error::SymlinkRefused {
                what: "key",
                name: key.as_str().to_owned(),
                path: self.path_of(&segments),
            }),
            _ => Err(Error::NotAFile {
                path: self.path_of(&segments),
            }),
        }
    }

    /// Write `value` to `key` atomically: temporary file, then rename.
    fn write_value(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
        let segments: Vec<&str> = key.segments().collect();
        if !self.options.atomic_writes {
            return self.write_in_place(key, &segments, value);
        }
        let (name, parents) = segments.split_last().unwrap_or((&"", &[]));
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (dir, created) =
                self.open_in_dir(key, parents, &[Errno::NOENT, Errno::EXIST], |dir| {
                    let temp = temp_name();
                    rustix::fs::openat(dir, temp.as_str(), flags, Mode::from(0o666))
                        .map(|fd| (temp, fd))
                })?;
            let (temp, fd) =
                created.map_err(|err| self.io_error("create a temporary file in", parents, err))?;
            let last = attempt >= WRITE_ATTEMPTS;
            let result = self.fill_and_rename(
                key,
                &segments,
                &dir,
                &temp,
                File::from(fd),
                name,
                value,
                last,
            );
            match result {
                Ok(true) => return Ok(()),
                // A concurrent erase of a prefix above the key removed the temporary file (or
                // its directory): write again, as after the erase.
                Ok(false) => continue,
                Err(err) => {
                    // Best effort: the temporary file is invisible to the store anyway.
                    if let Err(e) =
                        rustix::fs::unlinkat(dir.as_fd(), temp.as_str(), AtFlags::empty())
                    {
                        tracing::warn!(
                            key = key.as_str(),
                            temp = temp.as_str(),
                            error = %std::io::Error::from(e),
                            "cannot remove the temporary file of a failed write"
                        );
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Open (creating it) the directory of `key`, whose components are `parents`, and call
    /// `open` in it; again, up to [`WRITE_ATTEMPTS`] times, while a concurrent erase removes
    /// the directory in between (`open` failing with an error in `retry`). Gives the directory
    /// and what `open` answered last.
    fn open_in_dir<T>(
        &self,
        key: &StoreKey,
        parents: &[&str],
        retry: &[Errno],
        mut open: impl FnMut(BorrowedFd<'_>) -> std::result::Result<T, Errno>,
    ) -> Result<(DirFd<'_>, std::result::Result<T, Errno>)> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let dir = match self.open_dir(parents, Missing::Create, "key", key.as_str()) {
                Ok(Some(dir)) => dir,
                // `Missing::Create` never answers "absent"; treat it as a vanished directory.
                Ok(None) if attempt < WRITE_ATTEMPTS => continue,
                Ok(None) => {
                    return Err(self.io_error("create directory", parents, Errno::NOENT));
                }
                // A concurrent erase removed a directory we were creating into: try again.
                Err(Error::Io { source, .. })
                    if source.kind() == ErrorKind::NotFound && attempt < WRITE_ATTEMPTS =>
                {
                    continue;
                }
                Err(err) => return Err(err),
            };
            match open(dir.as_fd()) {
                Err(err) if retry.contains(&err) && attempt < WRITE_ATTEMPTS => {}
                result => return Ok((dir, result)),
            }
        }
    }

    /// [`write_value`](Inner::write_value) without [`FilesystemOptions::atomic_writes`]:
    /// open the value's file (creating it), truncate it and write it, holding the key's lock.
    fn write_in_place(&self, key: &StoreKey, segments: &[&str], value: &[u8]) -> Result<()> {
        let (name, parents) = segments.split_last().unwrap_or((&"", &[]));
        // Non-blocking, so that a FIFO in the key's place (without a reader) is refused at
        // once instead of hanging the write; regular files ignore the flag.
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let mode = Mode::from(0o666);
        let lock = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            key.as_str().hash(&mut hasher);
            &self.key_locks[(hasher.finish() % KEY_LOCKS as u64) as usize]
        };
        let _serialized = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // One call where the directory exists and none needs syncing. Anything else (missing
        // directories, a link or a directory in the way) takes the exact path below, which
        // also names what is wrong.
        let fast = if self.options.durable {
            None
        } else {
            match open_beneath_mode(self.root_fd.as_fd(), key.as_str(), flags, mode) {
                Some(Ok(fd)) => Some(File::from(fd)),
                _ => None,
            }
        };
        let (mut file, dir) = match fast {
            Some(file) => (file, None),
            None => {
                let (dir, opened) = self.open_in_dir(key, parents, &[Errno::NOENT], |dir| {
                    rustix::fs::openat(dir, *name, flags | OFlags::NOFOLLOW, mode)
                })?;
                match opened {
                    Ok(fd) => (File::from(fd), Some(dir)),
                    Err(err @ Errno::ISDIR) => {
                        return Err(Error::Io {
                            operation: "write (a directory of values is in the way)",
                            path: self.root.join(key.as_str()),
                            source: err.into(),
                        });
                    }
                    Err(err @ (Errno::LOOP | Errno::MLINK)) => {
                        return Err(self.refuse_symlink(
                            dir.as_fd(),
                            segments,
                            "key",
                            key.as_str(),
                            err,
                            "open",
                        ));
                    }
                    Err(Errno::NXIO) => {
                        return Err(Error::NotAFile {
                            path: self.root.join(key.as_str()),
                        });
                    }
                    Err(err) => return Err(self.io_error("open", segments, err)),
                }
            }
        };
        // Only a regular file holds a value (not a FIFO with a reader, say).
        let meta = file.metadata().map_err(|e| Error::Io {
            operation: "inspect",
            path: self.root.join(key.as_str()),
            source: e,
        })?;
        if !meta.is_file() {
            return Err(Error::NotAFile {
                path: self.root.join(key.as_str()),
            });
        }
        self.fill(key, &mut file, value)?;
        if self.options.durable
            && let Some(dir) = dir
        {
            rustix::fs::fsync(dir.as_fd())
                .map_err(|e| self.io_error("sync the directory of", segments, e))?;
        }
        Ok(())
    }

    /// Write `value` into the file of `key` (a temporary file, or the value's own), and
    /// `fsync` it in durable mode.
    fn fill(&self, key: &StoreKey, file: &mut File, value: &[u8]) -> Result<()> {
        let io = |operation, source| Error::Io {
            operation,
            path: self.root.join(key.as_str()),
            source,
        };
        file.write_all(value).map_err(|e| io("write", e))?;
        if self.options.durable {
            file.sync_all().map_err(|e| io("sync", e))?;
        }
        Ok(())
    }

    /// Fill the temporary file `temp` in `dir` with `value` and rename it to `name`: `true`
    /// once done, `false` if the temporary file vanished (a concurrent erase removed it)
    /// and this is not the `last` attempt.
    #[allow(clippy::too_many_arguments)]
    fn fill_and_rename(
        &self,
        key: &StoreKey,
        segments: &[&str],
        dir: &DirFd<'_>,
        temp: &str,
        mut file: File,
        name: &str,
        value: &[u8],
        last: bool,
    ) -> Result<bool> {
        let path = || self.root.join(key.as_str());
        self.fill(key, &mut file, value)?;
        drop(file);
        match rustix::fs::renameat(dir.as_fd(), temp, dir.as_fd(), name) {
            Ok(()) => {}
            // The temporary file is gone: removed by a concurrent erase.
            Err(Errno::NOENT) if !last => return Ok(false),
            Err(err @ (Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST)) => {
                return Err(Error::Io {
                    operation: "replace (a directory of values is in the way)",
                    path: path(),
                    source: err.into(),
                });
            }
            Err(err) => return Err(self.io_error("rename a temporary file to", segments, err)),
        }
        if self.options.durable {
            rustix::fs::fsync(dir.as_fd())
                .map_err(|e| self.io_error("sync the directory of", segments, e))?;
        }
        Ok(true)
    }

    fn patch(&self, group: &KeyWrites<'_>) -> Result<Bytes> {
        let old = self.read_whole(group.key)?;
        patch_value(old.as_deref(), group)
    }

    /// Remove the directories at `segments`, deepest first, while they are empty.
    fn remove_empty_dirs(&self, segments: &[&str]) {
        for depth in (1..=segments.len()).rev() {
            let (name, parents) = segments[..depth].split_last().unwrap_or((&"", &[]));
            let Ok(Some(dir)) = self.open_dir(parents, Missing::Absent, "prefix", "") else {
                return;
            };
            if rustix::fs::unlinkat(dir.as_fd(), *name, AtFlags::REMOVEDIR).is_err() {
                // Not empty (or already gone, or not a directory): stop climbing.
                return;
            }
        }
    }

    fn erase_value(&self, key: &StoreKey) -> Result<()> {
        let segments: Vec<&str> = key.segments().collect();
        let (name, parents) = segments.split_last().unwrap_or((&"", &[]));
        let Some(dir) = self.open_dir(parents, Missing::Absent, "key", key.as_str())? else {
            return Ok(());
        };
        match rustix::fs::unlinkat(dir.as_fd(), *name, AtFlags::empty()) {
            // A directory is not a value: erasing it as a key does nothing.
            Ok(()) | Err(Errno::NOENT | Errno::ISDIR | Errno::PERM) => {}
            Err(err) => return Err(self.io_error("remove", &segments, err)),
        }
        if self.options.durable {
            rustix::fs::fsync(dir.as_fd())
                .map_err(|e| self.io_error("sync the directory of", &segments, e))?;
        }
        drop(dir);
        self.remove_empty_dirs(parents);
        Ok(())
    }

    /// Remove everything inside the directory `dir` (at `segments`), not following links.
    fn clear_dir(&self, dir: OwnedFd, segments: &mut Vec<String>) -> Result<()> {
        let refs = |segments: &Vec<String>| -> PathBuf {
            let mut path = self.root.clone();
            path.extend(segments.iter());
            path
        };
        // Every entry, names that are not UTF-8 (and so no keys) included: erasing a prefix
        // removes its directory, whatever another program put there.
        let entries = self.read_raw_entries(dir.as_fd(), || refs(segments))?;
        for (raw, kind) in entries {
            let name = raw.to_string_lossy().into_owned();
            let raw = raw.as_c_str();
            if kind == FileType::Directory {
                match rustix::fs::openat(dir.as_fd(), raw, DIR_FLAGS, Mode::empty()) {
                    Ok(child) => {
                        segments.push(name.clone());
                        let cleared = self.clear_dir(child, segments);
                        segments.pop();
                        cleared?;
                    }
                    Err(Errno::NOENT) => continue,
                    Err(err) => {
                        segments.push(name.clone());
                        let path = refs(segments);
                        return Err(Error::Io {
                            operation: "open directory",
                            path,
                            source: err.into(),
                        });
                    }
                }
                match rustix::fs::unlinkat(dir.as_fd(), raw, AtFlags::REMOVEDIR) {
                    // A concurrent writer put something back: its write wins.
                    Ok(()) | Err(Errno::NOENT | Errno::NOTEMPTY | Errno::EXIST) => {}
                    Err(err) => {
                        segments.push(name);
                        let path = refs(segments);
                        return Err(Error::Io {
                            operation: "remove directory",
                            path,
                            source: err.into(),
                        });
                    }
                }
            } else {
                // Files, temporary files and symbolic links (the link, never its target).
                match rustix::fs::unlinkat(dir.as_fd(), raw, AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(err) => {
                        segments.push(name);
                        let path = refs(segments);
                        return Err(Error::Io {
                            operation: "remove",
                            path,
                            source: err.into(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        let segments: Vec<&str> = prefix.segments().collect();
        let Some((name, parents)) = segments.split_last() else {
            let root = rustix::fs::openat(self.root_fd.as_fd(), ".", DIR_FLAGS, Mode::empty())
                .map_err(|e| self.io_error("open directory", &[], e))?;
            return self.clear_dir(root, &mut Vec::new());
        };
        let Some(dir) = self.open_dir(parents, Missing::Absent, "prefix", prefix.as_str())? else {
            return Ok(());
        };
        match rustix::fs::openat(dir.as_fd(), *name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => {
                let mut owned: Vec<String> = segments.iter().map(|s| (*s).to_owned()).collect();
                self.clear_dir(fd, &mut owned)?;
                match rustix::fs::unlinkat(dir.as_fd(), *name, AtFlags::REMOVEDIR) {
                    Ok(()) | Err(Errno::NOENT | Errno::NOTEMPTY | Errno::EXIST) => {}
                    Err(err) => return Err(self.io_error("remove directory", &segments, err)),
                }
            }
            Err(Errno::NOENT) => return Ok(()),
            // A link (Linux answers ENOTDIR for a link to a directory opened with O_NOFOLLOW and
            // O_DIRECTORY, others ELOOP or EMLINK), or a value named like the prefix.
            Err(err @ (Errno::NOTDIR | Errno::LOOP | Errno::MLINK)) => {
                let error = self.refuse_symlink(
                    dir.as_fd(),
                    &segments,
                    "prefix",
                    prefix.as_str(),
                    err,
                    "open directory",
                );
                match error {
                    // Remove the link itself, never what it points to.
                    Error::SymlinkRefused { .. } => {
                        rustix::fs::unlinkat(dir.as_fd(), *name, AtFlags::empty())
                            .map_err(|e| self.io_error("remove", &segments, e))?;
                    }
                    // A value is not below the prefix named like it.
                    _ if err == Errno::NOTDIR => return Ok(()),
                    _ => return Err(error),
                }
            }
            Err(err) => return Err(self.io_error("open directory", &segments, err)),
        }
        drop(dir);
        self.remove_empty_dirs(parents);
        Ok(())
    }

    /// The entries of a directory that could be key segments, with their types (symbolic
    /// links reported as such, never followed). Temporary files are included for removal.
    fn read_entries(
        &self,
        dir: BorrowedFd<'_>,
        path: impl Fn() -> PathBuf,
    ) -> Result<Vec<(String, FileType)>> {
        let entries = self.read_raw_entries(dir, path)?;
        Ok(entries
            .into_iter()
            // Names that are not UTF-8 cannot be keys; nothing in the store made them.
            .filter_map(|(name, kind)| name.into_string().ok().map(|name| (name, kind)))
            .collect())
    }

    /// Every entry of a directory but `.` and `..`, with its type (symbolic links reported
    /// as such, never followed).
    fn read_raw_entries(
        &self,
        dir: BorrowedFd<'_>,
        path: impl Fn() -> PathBuf,
    ) -> Result<Vec<(std::ffi::CString, FileType)>> {
        let io = |source: Errno| Error::Io {
            operation: "list",
            path: path(),
            source: source.into(),
        };
        let mut entries = Vec::new();
        let mut reader = Dir::read_from(dir).map_err(io)?;
        while let Some(entry) = reader.read() {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            let mut kind = entry.file_type();
            if kind == FileType::Unknown {
                kind = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                    Err(Errno::NOENT) => continue,
                    Err(err) => return Err(io(err)),
                };
            }
            entries.push((name.to_owned(), kind));
        }
        Ok(entries)
    }

    fn list_below(
        &self,
        prefix: &StorePrefix,
        recursive: bool,
    ) -> Result<(Vec<StoreKey>, Vec<StorePrefix>)> {
        let segments: Vec<&str> = prefix.segments().collect();
        let mut keys = Vec::new();
        let mut prefixes = Vec::new();
        let Some(dir) = self.open_dir(&segments, Missing::Absent, "prefix", prefix.as_str())?
        else {
            return Ok((keys, prefixes));
        };
        self.walk(
            dir.as_fd(),
            prefix.as_str(),
            recursive,
            &mut keys,
            &mut prefixes,
        )?;
        keys.sort();
        prefixes.sort();
        Ok((keys, prefixes))
    }

    fn walk(
        &self,
        dir: BorrowedFd<'_>,
        prefix: &str,
        recursive: bool,
        keys: &mut Vec<StoreKey>,
        prefixes: &mut Vec<StorePrefix>,
    ) -> Result<()> {
        let path = || self.root.join(prefix);
        for (name, kind) in self.read_entries(dir, path)? {
            if !is_key_segment(&name) {
                tracing::trace!(
                    prefix,
                    name = name.as_str(),
                    "not listed: not a key segment"
                );
                continue;
            }
            match kind {
                FileType::RegularFile => keys.push(StoreKey::try_new(format!("{prefix}{name}"))?),
                FileType::Directory if recursive => {
                    let child =
                        match rustix::fs::openat(dir, name.as_str(), DIR_FLAGS, Mode::empty()) {
                            Ok(child) => child,
                            // Removed meanwhile, or swapped for a link: not listed.
                            Err(Errno::NOENT | Errno::LOOP | Errno::MLINK | Errno::NOTDIR) => {
                                continue;
                            }
                            Err(err) => {
                                return Err(Error::Io {
                                    operation: "open directory",
                                    path: self.root.join(prefix).join(&name),
                                    source: err.into(),
                                });
                            }
                        };
                    let child_prefix = format!("{prefix}{name}/");
                    self.walk(child.as_fd(), &child_prefix, true, keys, prefixes)?;
                }
                FileType::Directory => {
                    prefixes.push(StorePrefix::try_new(format!("{prefix}{name}/"))?);
                }
                // Symbolic links and special files are not values.
                _ => {}
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ReadableStore for FilesystemStore {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        if let Some(answer) = self.inner.read_whole_cached(key) {
            return answer;
        }
        let key = key.clone();
        self.blocking(move |inner| {
            Counters::add(&inner.counters.blocking_reads, 1);
            inner.read_whole(&key)
        })
        .await
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        let key = key.clone();
        self.blocking(move |inner| inner.value_size(&key)).await
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
        // Values the page cache holds are read here, up to `NONBLOCKING_READ_MAX` bytes in
        // all (so a large batch does not hold this thread for long); one blocking task per
        // other value, holding all of that value's ranges.
        let mut inline = 0u64;
        let mut answers: Vec<Option<Result<Option<Vec<Bytes>>>>> = keys
            .iter()
            .zip(&per_key)
            .map(|(key, ranges)| {
                if inline >= NONBLOCKING_READ_MAX {
                    return None;
                }
                let answer = self.inner.read_ranges_cached(key, ranges);
                if let Some(Ok(Some(parts))) = &answer {
                    inline += parts.iter().map(|p| p.len() as u64).sum::<u64>();
                }
                answer
            })
            .collect();
        let tasks: Vec<_> = keys
            .iter()
            .zip(per_key)
            .enumerate()
            .filter(|(i, _)| answers[*i].is_none())
            .map(|(i, (key, ranges))| {
                let key = (*key).clone();
                let read = self.blocking(move |inner| {
                    Counters::add(&inner.counters.blocking_reads, 1);
                    inner.read_ranges(&key, &ranges)
                });
                async move { (i, read.await) }
            })
            .collect();
        let blocking: Vec<(usize, Result<Option<Vec<Bytes>>>)> = futures::stream::iter(tasks)
            .buffered(self.inner.options.max_concurrency.max(1))
            .collect()
            .await;
        for (i, answer) in blocking {
            answers[i] = Some(answer);
        }
        let mut answers = answers
            .into_iter()
            .map(|answer| {
                answer
                    .unwrap_or_else(|| unreachable!("every value was read"))
                    .map(|parts| parts.map(Vec::into_iter))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(slots
            .iter()
            .map(|&slot| answers[slot].as_mut().and_then(Iterator::next))
            .collect())
    }
}

#[async_trait]
impl WritableStore for FilesystemStore {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        let key = key.clone();
        self.blocking_write(move |inner| inner.write_value(&key, &value))
            .await
    }

    async fn set_partial_values(&self, key_start_values: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        // Validate everything (overlaps, overflow) before touching any file.
        let groups = group_partial_writes(key_start_values)?;
        let owned: Vec<(StoreKey, Vec<(u64, Bytes)>)> = groups
            .iter()
            .map(|g| {
                let writes = g
                    .writes
                    .iter()
                    .map(|&(start, _, b)| (start, b.clone()))
                    .collect();
                (g.key.clone(), writes)
            })
            .collect();
        self.blocking_write(move |inner| {
            for (key, writes) in &owned {
                let group = KeyWrites {
                    key,
                    writes: writes
                        .iter()
                        .map(|(start, bytes)| (*start, *start + bytes.len() as u64, bytes))
                        .collect(),
                };
                let value = inner.patch(&group)?;
                inner.write_value(key, &value)?;
            }
            Ok(())
        })
        .await
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        let key = key.clone();
        self.blocking_write(move |inner| inner.erase_value(&key))
            .await
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> Result<()> {
        let keys = keys.to_vec();
        self.blocking_write(move |inner| keys.iter().try_for_each(|key| inner.erase_value(key)))
            .await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        let prefix = prefix.clone();
        self.blocking_write(move |inner| inner.erase_prefix(&prefix))
            .await
    }
}

#[async_trait]
impl ListableStore for FilesystemStore {
    async fn list(&self) -> Result<Vec<StoreKey>> {
        self.list_prefix(&StorePrefix::root()).await
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let prefix = prefix.clone();
        self.blocking(move |inner| Ok(inner.list_below(&prefix, true)?.0))
            .await
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        let prefix = prefix.clone();
        self.blocking(move |inner| {
            let (keys, prefixes) = inner.list_below(&prefix, false)?;
            Ok(ListDir { keys, prefixes })
        })
        .await
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;

    /// The component-by-component walk alone (as on kernels without `openat2`, or other Unix
    /// systems) keeps every guarantee.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_walk_without_openat2_passes_the_conformance_suite() {
        // Only this test in this binary touches the filesystem store.
        OPENAT2.store(false, Ordering::Relaxed);
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let store = FilesystemStore::new(dir.path().join("store")).unwrap();
        let suite = crate::testing::SuiteOptions::default().with_large_value_bytes(1 << 20);
        crate::testing::run_conformance_with(Arc::new(store), &suite).await;
        let linked = FilesystemStore::new(dir.path()).unwrap();
        assert!(matches!(
            linked.get(&StoreKey::new("link/x")).await,
            Err(Error::SymlinkRefused { .. })
        ));
        assert!(!OPENAT2.load(Ordering::Relaxed));
    }
}
