//! The machine's limits, measured on the same data (implementation `limit`):
//!
//! - `zstd_compress` / `zstd_decompress` of W1's chunks (workload W1) or W2's inner chunks
//!   (workload W2) at level 1, on `--threads` threads (a rayon pool), each thread with a
//!   reused context and reused output buffer: the cost of zstd alone;
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
            let chunks = chunks_of(&job::load_input(&job.data, g)?, g.side, chunk()?);
            let size = chunks[0].len();
            let encoded: Vec<Vec<u8>> = chunks
                .iter()
                .map(|c| zstd::bulk::compress(c, 1))
                .collect::<std::io::Result<_>>()?;
            drop(chunks);
            let decompress = || -> Result<()> {
                pool.install(|| {
                    encoded.par_iter().try_for_each_init(
                        || (zstd::bulk::Decompressor::new(), vec![0u8; size]),
                        |(decompressor, out), chunk| -> Result<()> {
                            let decompressor =
                                decompressor.as_mut().map_err(|e| anyhow::anyhow!("{e}"))?;
                            let n = decompressor.decompress_to_buffer(
                                std::hint::black_box(&chunk[..]),
                                &mut out[..],
                            )?;
                            if n != size {
                                bail!("a chunk decompressed to {n} bytes, not {size}");
                            }
                            Ok(())
                        },
                    )
                })
            };
            decompress()?;
            (g.bytes(), time_reps(job.reps, decompress)?)
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
