//! This project's measurements, through the async API (`ours`, `ours-durable`) and the
//! blocking API (`ours-blocking`, `ours-blocking-durable`). `-durable` writes with
//! `FilesystemOptions::with_durable(true)` (fsync every file, like zarrs and tensorstore).
//! W6 (strings) is measured through the async API only: `write_strings` and `read_strings`
//! (Arrow layout, `i32` offsets), `vlen-utf8` (ops `write`, `read`) and this project's
//! ZEP0007 codec `zarr-rs.vlen_arrow` (`write_arrow`, `read_arrow`), both with zstd(1).

use std::ops::Range;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use zarr_array::{Array, ArrayBuilder, blocking};
use zarr_benches::Geometry;
use zarr_core::{DataType, ExtensionObject};
use zarr_store::{FilesystemOptions, FilesystemStore};
use zarr_vlen::VlenStrings;

use crate::job::{self, Job, Outcome};
use crate::stats::{self, time_reps};

type Region = [Range<u64>; 3];

/// An array opened through one of our two APIs.
enum Handle {
    Async(tokio::runtime::Runtime, Array<FilesystemStore>),
    Blocking(blocking::Array<FilesystemStore>),
}

impl Handle {
    fn read(&self, region: Region) -> Result<Vec<u16>> {
        Ok(match self {
            Self::Async(rt, array) => rt.block_on(array.read::<u16>(region))?,
            Self::Blocking(array) => array.read::<u16>(region)?,
        })
    }

    fn read_into(&self, region: Region, out: &mut [u16]) -> Result<()> {
        match self {
            Self::Async(rt, array) => rt.block_on(array.read_into(region, out))?,
            Self::Blocking(array) => array.read_into(region, out)?,
        }
        Ok(())
    }

    fn write(&self, region: Region, values: &[u16]) -> Result<()> {
        match self {
            Self::Async(rt, array) => rt.block_on(array.write(region, values))?,
            Self::Blocking(array) => array.write(region, values)?,
        }
        Ok(())
    }

    /// Read every block, all in flight at once: one task per block on the async API (what a
    /// program with its own runtime does); `read_many` on the blocking API.
    fn read_all_concurrently(&self, blocks: &[Region]) -> Result<Vec<Vec<u16>>> {
        match self {
            Self::Async(rt, array) => rt.block_on(async {
                let tasks: Vec<_> = blocks
                    .iter()
                    .map(|region| {
                        let array = array.clone();
                        let region = region.clone();
                        tokio::spawn(async move { array.read::<u16>(region).await })
                    })
                    .collect();
                let mut out = Vec::with_capacity(tasks.len());
                for task in tasks {
                    out.push(task.await??);
                }
                Ok(out)
            }),
            Self::Blocking(array) => Ok(array.read_many::<u16, _>(blocks.iter().cloned())?),
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

fn builder(job: &Job, w: &str) -> Result<ArrayBuilder> {
    let g = job.geometry;
    Ok(match w {
        "w1" => ArrayBuilder::new(g.shape(), DataType::UInt16, vec![g.chunk(); 3]).zstd(1),
        "w2" => ArrayBuilder::new(g.shape(), DataType::UInt16, vec![g.shard(); 3])
            .zstd(1)
            .sharding(vec![g.inner(); 3]),
        "w3" => ArrayBuilder::new(g.shape(), DataType::UInt16, vec![g.chunk(); 3]),
        other => bail!("no array layout for {other}"),
    })
}

fn is_blocking(job: &Job) -> bool {
    job.implementation.starts_with("ours-blocking")
}

fn is_durable(job: &Job) -> bool {
    job.implementation.ends_with("-durable")
}

fn open(job: &Job, writer: &str, w: &str) -> Result<Handle> {
    let dir = job::store_dir(&job.data, writer, w);
    let store = Arc::new(FilesystemStore::new(&dir)?);
    Ok(if is_blocking(job) {
        Handle::Blocking(blocking::Array::open(store, "/")?)
    } else {
        let rt = runtime()?;
        let array = rt.block_on(Array::open(store, "/"))?;
        Handle::Async(rt, array)
    })
}

fn create(job: &Job, w: &str) -> Result<Handle> {
    let store = fresh_store(job, w)?;
    let builder = builder(job, w)?;
    Ok(if is_blocking(job) {
        Handle::Blocking(blocking::Array::create(&builder, store, "/")?)
    } else {
        let rt = runtime()?;
        let array = rt.block_on(builder.create(store, "/"))?;
        Handle::Async(rt, array)
    })
}

/// A fresh store directory for `job`'s copy of `w`.
fn fresh_store(job: &Job, w: &str) -> Result<Arc<FilesystemStore>> {
    let dir = job::store_dir(&job.data, &job.implementation, w);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let options = FilesystemOptions::default().with_durable(is_durable(job));
    Ok(Arc::new(FilesystemStore::with_options(&dir, options)?))
}

/// The array->bytes codec of our ZEP0007 copy of W6.
fn vlen_arrow() -> Result<ExtensionObject> {
    Ok(ExtensionObject::from_json(
        &serde_json::json!({"name": "zarr-rs.vlen_arrow", "configuration": {"offsets": "int32"}}),
        "codecs[0]",
    )?)
}

/// W6: the strings of `input-w6.strings` as a 1-D `string` array in chunks of a tenth, zstd(1)
/// after `vlen-utf8` (ops `write`, `read`, `cross_read`) or after `zarr-rs.vlen_arrow`
/// (`write_arrow`, `read_arrow`), through the async API.
fn strings(job: &Job) -> Result<Outcome> {
    if is_blocking(job) {
        bail!("W6 is measured through the async API only");
    }
    let rt = runtime()?;
    let threads = stats::cores();
    let (op, w) = match job.op.strip_suffix("_arrow") {
        Some(op) => (op, "w6-arrow"),
        None => (job.op.as_str(), "w6"),
    };
    match op {
        "write" => {
            let input = job::load_strings(&job.data)?;
            let n = input.len() as u64;
            let typed = VlenStrings::<i32>::from_strs(input.iter())?;
            let mut builder =
                ArrayBuilder::new(vec![n], DataType::String, vec![job::strings_chunk(n)]);
            if w == "w6-arrow" {
                builder = builder.array_to_bytes(vlen_arrow()?);
            }
            let array = rt.block_on(builder.zstd(1).create(fresh_store(job, w)?, "/"))?;
            let write = || -> Result<()> {
                rt.block_on(array.write_strings(0..n, &typed))?;
                Ok(())
            };
            write()?;
            Ok(Outcome {
                bytes: input.values().len() as u64,
                elements: Some(n),
                timing: time_reps(job.reps, write)?,
                threads,
                verified: false,
                rss: None,
            })
        }
        "read" | "cross_read" => {
            let writer = match op {
                "read" => job.implementation.as_str(),
                _ => job.writer.as_deref().context("cross_read needs --writer")?,
            };
            let store = Arc::new(FilesystemStore::new(job::store_dir(&job.data, writer, w))?);
            let array = rt.block_on(Array::open(store, "/"))?;
            let n = array.shape()[0];
            let read = || -> Result<VlenStrings<i32>> {
                Ok(rt.block_on(array.read_strings::<i32>(0..n))?)
            };
            let base = stats::current_rss_bytes();
            let (timing, rss, got) = if op == "read" {
                drop(read()?);
                let timing = time_reps(job.reps, || {
                    drop(std::hint::black_box(read()?));
                    Ok(())
                })?;
                (timing, Some((stats::peak_rss_bytes(), base)), read()?)
            } else {
                let mut got = None;
                let timing = time_reps(1, || {
                    got = Some(read()?);
                    Ok(())
                })?;
                (timing, None, got.context("no read")?)
            };
            let input = job::load_strings(&job.data)?;
            let what = if op == "read" {
                "whole read".to_owned()
            } else {
                format!("reading {writer}'s W6")
            };
            job::check_strings(&what, got.iter().map(str::as_bytes), &input)?;
            Ok(Outcome {
                bytes: input.values().len() as u64,
                elements: Some(n),
                timing,
                threads,
                verified: true,
                rss,
            })
        }
        other => bail!("ours: no W6 op {other}"),
    }
}

/// Run `job` and return its record.
pub(crate) fn run(job: &Job) -> Result<Value> {
    if job.workload == "W6" {
        let outcome = strings(job)?;
        return Ok(job::record(
            job,
            env!("CARGO_PKG_VERSION"),
            "async",
            job.op.starts_with("write").then(|| is_durable(job)),
            &outcome,
        ));
    }
    let g = job.geometry;
    let full: Region = [0..g.side, 0..g.side, 0..g.side];
    let w = job.workload.to_lowercase();
    let threads = stats::cores();
    let outcome = match job.op.as_str() {
        "write" => {
            let input = job::load_input(&job.data, g)?;
            let array = create(job, &w)?;
            array.write(full.clone(), &input)?;
            let timing = time_reps(job.reps, || array.write(full.clone(), &input))?;
            Outcome {
                bytes: g.bytes(),
                elements: None,
                timing,
                threads,
                verified: false,
                rss: None,
            }
        }
        "read" | "read_into" => {
            let array = open(job, &job.implementation, &w)?;
            let mut reused = Vec::new();
            let base = stats::current_rss_bytes();
            let timing = if job.op == "read" {
                drop(array.read(full.clone())?);
                time_reps(job.reps, || {
                    drop(std::hint::black_box(array.read(full.clone())?));
                    Ok(())
                })?
            } else {
                reused = vec![0u16; g.elements() as usize];
                array.read_into(full.clone(), &mut reused)?;
                time_reps(job.reps, || array.read_into(full.clone(), &mut reused))?
            };
            let rss = Some((stats::peak_rss_bytes(), base));
            let got = if job.op == "read" {
                array.read(full.clone())?
            } else {
                reused
            };
            job::check_equal("whole read", &got, &job::load_input(&job.data, g)?)?;
            Outcome {
                bytes: g.bytes(),
                elements: None,
                timing,
                threads,
                verified: true,
                rss,
            }
        }
        "cross_read" => {
            let writer = job.writer.as_deref().context("cross_read needs --writer")?;
            let array = open(job, writer, &w)?;
            let mut got = Vec::new();
            let timing = time_reps(1, || {
                got = array.read(full.clone())?;
                Ok(())
            })?;
            job::check_equal(
                &format!("reading {writer}'s {}", job.workload),
                &got,
                &job::load_input(&job.data, g)?,
            )?;
            Outcome {
                bytes: g.bytes(),
                elements: None,
                timing,
                threads,
                verified: true,
                rss: None,
            }
        }
        "serial" | "concurrent" => {
            let array = open(job, &job.implementation, "w2")?;
            let blocks = w4_blocks(job)?;
            job::measure_blocks(job, &blocks, threads, || {
                if job.op == "serial" {
                    blocks.iter().map(|b| array.read(b.clone())).collect()
                } else {
                    array.read_all_concurrently(&blocks)
                }
            })?
        }
        "slab_w1" | "slab_w2" => {
            let array = open(job, &job.implementation, &job.op[5..])?;
            let y = g.slab_y();
            let slab: Region = [0..g.side, y..y + 1, 0..g.side];
            let input = job::load_input(&job.data, g)?;
            job::check_equal(
                "W5 slab",
                &array.read(slab.clone())?,
                &job::expected_box(&input, g.side, slab.clone()),
            )?;
            let timing = time_reps(job.reps, || {
                drop(std::hint::black_box(array.read(slab.clone())?));
                Ok(())
            })?;
            Outcome {
                bytes: g.side * g.side * 2,
                elements: None,
                timing,
                threads,
                verified: true,
                rss: None,
            }
        }
        other => bail!("ours: no op {other}"),
    };
    let api = if is_blocking(job) {
        "blocking"
    } else {
        "async"
    };
    Ok(job::record(
        job,
        env!("CARGO_PKG_VERSION"),
        api,
        (job.op == "write").then(|| is_durable(job)),
        &outcome,
    ))
}

/// W4's blocks: the inner chunks listed in the data directory's `w4-chunks.json`.
pub(crate) fn w4_blocks(job: &Job) -> Result<Vec<Region>> {
    let path = job.data.join("w4-chunks.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let chunks: Vec<[u64; 3]> = serde_json::from_str(&text)?;
    Ok(blocks_of(job.geometry, &chunks))
}

/// The regions of inner chunks.
pub(crate) fn blocks_of(g: Geometry, chunks: &[[u64; 3]]) -> Vec<Region> {
    let i = g.inner();
    chunks
        .iter()
        .map(|c| {
            [
                c[0] * i..(c[0] + 1) * i,
                c[1] * i..(c[1] + 1) * i,
                c[2] * i..(c[2] + 1) * i,
            ]
        })
        .collect()
}
