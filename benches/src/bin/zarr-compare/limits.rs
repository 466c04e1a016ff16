//! The machine's limits, measured on the same data (implementation `limit`):
//!
//! - `zstd_compress` / `zstd_decompress` of W1's chunks (workload W1) or W2's inner chunks
//!   (workload W2) at level 1, on `--threads` threads (a rayon pool), each thread with a
//!   reused context and reused output buffer: the cost of zstd alone;
//! - `zstd_decompress_fresh` (W1, W2): a straightforward whole-array read into a new buffer
//!   with every chunk already in memory: the same decompression, each chunk's rows then
//!   copied (`copy_nonoverlapping`) to their place in a freshly allocated output (advised to
//!   use huge pages, as ours is), which the first touch faults in. Not a limit: it shows what
//!   a fresh output costs a plain implementation beyond raw decompression (the kernel zeroing
//!   the new pages, and writing the output through the cache), with no store, metadata or
//!   engine in the way;
//! - `memcpy_fresh` / `memcpy_prefaulted` (W3): copying the array into a freshly allocated
//!   buffer (its pages are faulted in by the copy, as in a read into a new `Vec`) or into one
//!   allocated and touched once before timing (one thread);
//! - `fs_read` (W1, W2, W3): `std::fs::read` of every file of our copy of the workload's
//!   store, on `--threads` threads; `bytes` is then the files' size.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde_json::Value;
use zarr_benches::chunks_of;

use crate::job::{self, Job, Outcome};
use crate::stats::time_reps;

fn files_below(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            files_below(&entry.path(), out)?;
        } else {
            out.push(entry.path());
        }
    }
    Ok(())
}

/// A freshly allocated, zeroed output of `len` bytes, allocated as a read's output is
/// (`alloc_zeroed`, so fresh pages for a large buffer, advised to use transparent huge pages).
struct FreshOutput {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

/// The base of a [`FreshOutput`], shared by the threads that fill disjoint parts of it.
#[derive(Clone, Copy)]
struct OutputBase(*mut u8);

// SAFETY: the threads write disjoint byte ranges only (see `OutputBase::write`).
unsafe impl Send for OutputBase {}
// SAFETY: as above.
unsafe impl Sync for OutputBase {}

impl OutputBase {
    /// Copy `src` to byte offset `at`.
    ///
    /// # Safety
    /// `at + src.len()` must not exceed the output's length, and no other thread may write
    /// or read those bytes meanwhile.
    unsafe fn write(self, at: usize, src: &[u8]) {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.0.add(at), src.len()) }
    }
}

impl FreshOutput {
    fn new(len: usize) -> Result<Self> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 64)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            bail!("cannot allocate {len} bytes");
        }
        #[cfg(target_os = "linux")]
        {
            const HUGE: usize = 2 << 20;
            let start = (ptr as usize).next_multiple_of(HUGE);
            let end = (ptr as usize + len) / HUGE * HUGE;
            if end > start {
                // SAFETY: the range is inside the fresh allocation; the advice changes how
                // its pages are backed, not their contents.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE)
                };
            }
        }
        Ok(Self { ptr, layout })
    }

    fn base(&mut self) -> OutputBase {
        OutputBase(self.ptr)
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: allocated zeroed with this length; the writers have finished.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl Drop for FreshOutput {
    fn drop(&mut self) {
        // SAFETY: allocated by the global allocator with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// The chunks of the input, each `chunk` per side, compressed with zstd(1), and their decoded
/// size.
fn encoded_chunks(job: &Job, chunk: u64) -> Result<(usize, Vec<Vec<u8>>)> {
    let g = job.geometry;
    let chunks = chunks_of(&job::load_input(&job.data, g)?, g.side, chunk);
    let size = chunks[0].len();
    let encoded = chunks
        .iter()
        .map(|c| zstd::bulk::compress(c, 1))
        .collect::<std::io::Result<_>>()?;
    Ok((size, encoded))
}

/// Decompress `chunk` into `out`, which it must fill.
fn decompress_into(
    decompressor: &mut std::io::Result<zstd::bulk::Decompressor<'static>>,
    chunk: &[u8],
    out: &mut [u8],
) -> Result<()> {
    let decompressor = decompressor.as_mut().map_err(|e| anyhow::anyhow!("{e}"))?;
    let n = decompressor.decompress_to_buffer(std::hint::black_box(chunk), &mut out[..])?;
    if n != out.len() {
        bail!("a chunk decompressed to {n} bytes, not {}", out.len());
    }
    Ok(())
}

/// Run `job` and return its record.
pub(crate) fn run(job: &Job) -> Result<Value> {
    let g = job.geometry;
    let threads = job.threads.unwrap_or_else(crate::stats::cores);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("building the thread pool")?;
    let chunk = || -> Result<u64> {
        Ok(match job.workload.as_str() {
            "W1" => g.chunk(),
            "W2" => g.inner(),
            other => bail!("zstd limits are for W1 and W2, not {other}"),
        })
    };
    let (bytes, timing) = match job.op.as_str() {
        "zstd_compress" => {
            let chunks = chunks_of(&job::load_input(&job.data, g)?, g.side, chunk()?);
            let bound = zstd::zstd_safe::compress_bound(chunks[0].len());
            let compress = || -> Result<()> {
                pool.install(|| {
                    chunks.par_iter().try_for_each_init(
                        || {
                            (
                                zstd::bulk::Compressor::new(1),
                                Vec::<u8>::with_capacity(bound),
                            )
                        },
                        |(compressor, out), chunk| -> Result<()> {
                            let compressor =
                                compressor.as_mut().map_err(|e| anyhow::anyhow!("{e}"))?;
                            out.clear();
                            compressor.compress_to_buffer(std::hint::black_box(&chunk[..]), out)?;
                            Ok(())
                        },
                    )
                })
            };
            compress()?;
            (g.bytes(), time_reps(job.reps, compress)?)
        }
        "zstd_decompress" => {
            let (size, encoded) = encoded_chunks(job, chunk()?)?;
            let decompress = || -> Result<()> {
                pool.install(|| {
                    encoded.par_iter().try_for_each_init(
                        || (zstd::bulk::Decompressor::new(), vec![0u8; size]),
                        |(decompressor, out), chunk| decompress_into(decompressor, chunk, out),
                    )
                })
            };
            decompress()?;
            (g.bytes(), time_reps(job.reps, decompress)?)
        }
        "zstd_decompress_fresh" => {
            let c = usize::try_from(chunk()?)?;
            let side = usize::try_from(g.side)?;
            let (size, encoded) = encoded_chunks(job, c as u64)?;
            let per = side / c;
            let read = || -> Result<()> {
                let mut out = FreshOutput::new(side * side * side * 2)?;
                let base = out.base();
                pool.install(|| {
                    encoded.par_iter().enumerate().try_for_each_init(
                        || (zstd::bulk::Decompressor::new(), vec![0u8; size]),
                        |(decompressor, buf), (i, chunk)| -> Result<()> {
                            decompress_into(decompressor, chunk, buf)?;
                            // `chunks_of` lists chunks in C order.
                            let (cz, cy, cx) = (i / (per * per), i / per % per, i % per);
                            for (row, src) in buf.chunks_exact(c * 2).enumerate() {
                                let (z, y) = (row / c, row % c);
                                let at = (((cz * c + z) * side + cy * c + y) * side + cx * c) * 2;
                                // SAFETY: `at + 2c` is inside the output (every index is
                                // below `side`), and the chunks' rows are disjoint, so no two
                                // threads write the same bytes.
                                unsafe { base.write(at, src) };
                            }
                            Ok(())
                        },
                    )
                })?;
                std::hint::black_box(out.bytes());
                Ok(())
            };
            read()?;
            (g.bytes(), time_reps(job.reps, read)?)
        }
        "memcpy_fresh" | "memcpy_prefaulted" => {
            let input = job::load_input(&job.data, g)?;
            let n = input.len();
            let mut prefaulted = vec![1u16; n];
            let fresh = job.op == "memcpy_fresh";
            let mut copy = || -> Result<()> {
                if fresh {
                    let mut out = vec![0u16; n];
                    out.copy_from_slice(std::hint::black_box(&input));
                    std::hint::black_box(&out);
                } else {
                    prefaulted.copy_from_slice(std::hint::black_box(&input));
                    std::hint::black_box(&prefaulted);
                }
                Ok(())
            };
            copy()?;
            (g.bytes(), time_reps(job.reps, copy)?)
        }
        "fs_read" => {
            let mut files = Vec::new();
            let dir = job::store_dir(&job.data, "ours", &job.workload.to_lowercase());
            files_below(&dir, &mut files)?;
            let read_all = || -> Result<u64> {
                pool.install(|| {
                    files
                        .par_iter()
                        .map(|f| {
                            std::fs::read(f)
                                .map(|b| std::hint::black_box(b).len() as u64)
                                .with_context(|| format!("reading {}", f.display()))
                        })
                        .sum()
                })
            };
            let bytes = read_all()?;
            (bytes, time_reps(job.reps, || read_all().map(drop))?)
        }
        other => bail!("limit: no op {other}"),
    };
    let outcome = Outcome {
        bytes,
        elements: None,
        timing,
        threads,
        verified: false,
        rss: None,
    };
    Ok(job::record(job, "", "raw", None, &outcome))
}
