//! Streaming one entry of a [`ZipStore`]: [`ZipEntryReader`].

use std::fmt;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;

use super::{Entry, Inner, Source, ZipStore, format, io_error};
use crate::{Error, Result, StoreKey};

/// How much deflate data a [`ZipEntryReader`] reads from the archive at a time.
const INPUT_BUFFER: usize = 256 << 10;

/// The value of one zip entry as a [`std::io::Read`] stream, from
/// [`ZipStore::reader`]: memory stays bounded whatever the entry's size.
///
/// A stored entry is read straight from the archive file; a deflated one is inflated as it
/// is read, 256 KiB of compressed data at a time. The CRC-32 and the recorded size are
/// checked when the stream ends, so the last read of a damaged entry fails rather than
/// returning 0: data read before that is not known to be correct until then. (For an
/// archive inside another store, [`ZipStore::from_store`], the compressed data is fetched
/// whole when the reader is made, and inflated as it is read.)
///
/// Reads are blocking file reads, like [`std::fs::File`]'s: in async code, read on a
/// blocking thread. Errors are [`std::io::Error`]s that carry the store's [`Error`]
/// (`InvalidZip`, `ZipChecksumMismatch`, `Io`): get it with
/// [`into_inner`](std::io::Error::into_inner) and a downcast.
pub struct ZipEntryReader {
    inner: Arc<Inner>,
    entry: Arc<Entry>,
    raw: Raw,
    /// Deflate state, for a deflated entry.
    inflate: Option<Inflate>,
    crc: crc32fast::Hasher,
    /// Bytes of the value handed out so far.
    produced: u64,
    /// Whether the whole value has been read and checked.
    finished: bool,
}

impl fmt::Debug for ZipEntryReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZipEntryReader")
            .field("archive", &self.inner.archive)
            .field("entry", &self.entry.name)
            .field("size", &self.entry.size)
            .field("produced", &self.produced)
            .finish()
    }
}

/// Where the entry's raw (stored or deflated) bytes come from.
enum Raw {
    /// The archive file, from `pos` to `end`.
    File { pos: u64, end: u64 },
    /// The raw bytes, fetched whole from the archive's store.
    Memory { data: Bytes, pos: usize },
}

struct Inflate {
    state: flate2::Decompress,
    input: Box<[u8]>,
    /// The unread part of `input`.
    start: usize,
    end: usize,
    /// Whether the deflate stream has ended.
    ended: bool,
}

impl ZipStore {
    /// A stream of the value of `key`, or `None` if the archive has no such entry: for
    /// values too large to hold in memory at once (a `numpy.savez` archive's arrays, say).
    ///
    /// ```
    /// use std::io::Read as _;
    /// use bytes::Bytes;
    /// use zarr_store::{StoreKey, WritableStore, ZipStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("data.zip");
    /// let store = ZipStore::create(&path)?;
    /// store.set(&StoreKey::new("x.npy"), Bytes::from(vec![7u8; 100_000])).await?;
    /// store.finish()?;
    ///
    /// let store = ZipStore::open(&path)?;
    /// let mut reader = store.reader(&StoreKey::new("x.npy")).await?.expect("present");
    /// let mut first = [0u8; 10];
    /// reader.read_exact(&mut first)?;
    /// assert_eq!(first, [7; 10]);
    /// assert_eq!(std::io::copy(&mut reader, &mut std::io::sink())?, 99_990);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`get`](crate::ReadableStore::get) for an entry that cannot be read at all
    /// ([`Error::UnsupportedZipEntry`], [`Error::InvalidZip`] for a bad local header); errors
    /// in the data come from the reader's reads.
    pub async fn reader(&self, key: &StoreKey) -> Result<Option<ZipEntryReader>> {
        let Some(entry) = self.entry(key) else {
            return Ok(None);
        };
        let inner = &self.inner;
        inner.check_readable(&entry)?;
        inner.resolve(std::slice::from_ref(&entry)).await?;
        let data = *entry
            .data_offset
            .get()
            .expect("resolved above: the entry's data offset is known");
        let end = data + entry.compressed_size;
        let raw = match &inner.source {
            Source::File { .. } => Raw::File { pos: data, end },
            Source::Store { .. } => {
                let mut read = inner
                    .source
                    .read_async(&inner.archive, std::iter::once(data..end).collect())
                    .await?;
                Raw::Memory {
                    data: read.pop().unwrap_or_default(),
                    pos: 0,
                }
            }
        };
        let inflate = (entry.method == format::METHOD_DEFLATED).then(|| Inflate {
            state: flate2::Decompress::new(false),
            input: vec![0; INPUT_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            ended: false,
        });
        Ok(Some(ZipEntryReader {
            inner: Arc::clone(inner),
            entry,
            raw,
            inflate,
            crc: crc32fast::Hasher::new(),
            produced: 0,
            finished: false,
        }))
    }
}

impl Raw {
    fn remaining(&self) -> u64 {
        match self {
            Self::File { pos, end } => end - pos,
            Self::Memory { data, pos } => (data.len() - pos) as u64,
        }
    }

    /// Read raw bytes into `out` (at most what remains); 0 only when nothing remains.
    fn read(&mut self, inner: &Inner, out: &mut [u8]) -> Result<usize> {
        let want = out
            .len()
            .min(usize::try_from(self.remaining()).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        match self {
            Self::File { pos, end } => {
                let Source::File { file, path } = &inner.source else {
                    unreachable!("file reads come from file sources")
                };
                let n = file
                    .read_at(&mut out[..want], *pos)
                    .map_err(|source| io_error("read", path, source))?;
                if n == 0 {
                    return Err(inner.invalid(format!("the file ends before byte {end}")));
                }
                *pos += n as u64;
                Ok(n)
            }
            Self::Memory { data, pos } => {
                out[..want].copy_from_slice(&data[*pos..*pos + want]);
                *pos += want;
                Ok(want)
            }
        }
    }
}

impl ZipEntryReader {
    /// The entry's size, as its archive records it.
    pub fn size(&self) -> u64 {
        self.entry.size
    }

    fn corrupt(&self, what: String) -> Error {
        self.inner
            .invalid(format!("entry {:?}: deflate data {what}", self.entry.name))
    }

    /// Inflate into `out`: the bytes produced, 0 once the deflate stream has ended.
    fn inflate_into(&mut self, out: &mut [u8]) -> Result<usize> {
        let size = self.entry.size;
        loop {
            let inflate = self.inflate.as_mut().expect("a deflated entry");
            if inflate.ended {
                return Ok(0);
            }
            if inflate.start == inflate.end && self.raw.remaining() > 0 {
                inflate.end = self.raw.read(&self.inner, &mut inflate.input)?;
                inflate.start = 0;
            }
            let last = self.raw.remaining() == 0;
            let (in_before, out_before) = (inflate.state.total_in(), inflate.state.total_out());
            let status = inflate
                .state
                .decompress(
                    &inflate.input[inflate.start..inflate.end],
                    out,
                    if last {
                        flate2::FlushDecompress::Finish
                    } else {
                        flate2::FlushDecompress::None
                    },
                )
                .map_err(|e| format!("is corrupt ({e})"));
            let status = match status {
                Ok(status) => status,
                Err(what) => return Err(self.corrupt(what)),
            };
            let consumed = (inflate.state.total_in() - in_before) as usize;
            let produced = (inflate.state.total_out() - out_before) as usize;
            inflate.start += consumed;
            if status == flate2::Status::StreamEnd {
                inflate.ended = true;
            }
            let stuck = produced == 0
                && !inflate.ended
                && consumed == 0
                && last
                && inflate.start == inflate.end;
            if self.produced + produced as u64 > size {
                return Err(
                    self.corrupt(format!("inflates to more than the recorded {size} bytes"))
                );
            }
            if produced > 0 || self.inflate.as_ref().is_some_and(|i| i.ended) {
                return Ok(produced);
            }
            if stuck {
                return Err(self.corrupt(format!(
                    "ends after {} of the recorded {size} bytes",
                    self.produced
                )));
            }
        }
    }

    fn read_checked(&mut self, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() || self.finished {
            return Ok(0);
        }
        let size = self.entry.size;
        let n = if self.inflate.is_some() {
            self.inflate_into(buf)?
        } else {
            let want = buf
                .len()
                .min(usize::try_from(size - self.produced).unwrap_or(usize::MAX));
            let n = self.raw.read(&self.inner, &mut buf[..want])?;
            if n == 0 && want > 0 {
                return Err(self.inner.invalid(format!(
                    "stored entry {:?} ends after {} of its recorded {size} bytes",
                    self.entry.name, self.produced
                )));
            }
            n
        };
        self.crc.update(&buf[..n]);
        self.produced += n as u64;
        let done = match &self.inflate {
            Some(inflate) => inflate.ended,
            None => self.produced == size,
        };
        if done {
            self.finished = true;
            if self.produced != size {
                return Err(self.corrupt(format!(
                    "inflates to {} bytes, not the recorded {size}",
                    self.produced
                )));
            }
            let actual = self.crc.clone().finalize();
            if actual != self.entry.crc32 {
                return Err(Error::ZipChecksumMismatch {
                    archive: self.inner.archive.clone(),
                    entry: self.entry.name.clone(),
                    expected: self.entry.crc32,
                    actual,
                });
            }
        }
        Ok(n)
    }
}

impl Read for ZipEntryReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_checked(buf).map_err(|e| {
            let kind = match &e {
                Error::Io { source, .. } => source.kind(),
                _ => io::ErrorKind::InvalidData,
            };
            io::Error::new(kind, e)
        })
    }
}
