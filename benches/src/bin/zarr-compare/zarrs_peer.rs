//! zarrs's measurements (implementation `zarrs`), through its synchronous API with its
//! default rayon parallelism: `retrieve_array_subset` into a fresh `Vec<u16>` (op `read`)
//! and `retrieve_array_subset_into` a preallocated buffer (op `read_into`). W6 (strings):
//! `store_array_subset` of variable-length `ArrayBytes` (offsets and bytes, the input's own
//! buffers, borrowed), `retrieve_array_subset` into a `Vec<String>` (op `read`) and as
//! variable-length `ArrayBytes` (op `read_bytes`, the closest to our Arrow-layout read).

use std::ops::Range;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde_json::Value;
use zarrs::array::codec::{VlenUtf8Codec, ZstdCodec};
use zarrs::array::{
    Array, ArrayBuilder, ArrayBytes, ArrayBytesFixedDisjointView, ArrayBytesOffsets, ArraySubset,
    data_type,
};
use zarrs::filesystem::FilesystemStore;

use crate::job::{self, Job, Outcome};
use crate::ours::w4_blocks;
use crate::stats::{self, time_reps};

type ZArray = Array<FilesystemStore>;

fn subset(region: &[Range<u64>; 3]) -> ArraySubset {
    ArraySubset::new_with_ranges(region)
}

fn open(dir: &std::path::Path) -> Result<ZArray> {
    let store = Arc::new(FilesystemStore::new(dir)?);
    Ok(Array::open(store, "/")?)
}

/// A fresh store directory for `job`'s copy of `w`.
fn fresh_store(job: &Job, w: &str) -> Result<Arc<FilesystemStore>> {
    let dir = job::store_dir(&job.data, &job.implementation, w);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(Arc::new(FilesystemStore::new(&dir)?))
}

fn create(job: &Job, w: &str) -> Result<ZArray> {
    let g = job.geometry;
    let store = fresh_store(job, w)?;
    let (grid, inner, zstd) = match w {
        "w1" => (g.chunk(), None, true),
        "w2" => (g.shard(), Some(g.inner()), true),
        "w3" => (g.chunk(), None, false),
        other => bail!("no array layout for {other}"),
    };
    let mut builder = ArrayBuilder::new(g.shape(), vec![grid; 3], data_type::uint16(), 0u16);
    if zstd {
        builder.bytes_to_bytes_codecs(vec![Arc::new(ZstdCodec::new(1, false))]);
    }
    if let Some(inner) = inner {
        builder.subchunk_shape(vec![inner; 3]);
    }
    let array = builder.build(store, "/")?;
    array.store_metadata()?;
    Ok(array)
}

/// Decode `region` of `array` into `out` (C order, the region's shape) with
/// `retrieve_array_subset_into`.
fn read_into(array: &ZArray, region: &[Range<u64>; 3], out: &mut [u16]) -> Result<()> {
    let shape: Vec<u64> = region.iter().map(|r| r.end - r.start).collect();
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
    let cells = unsafe_cell_slice::UnsafeCellSlice::new(bytes);
    // SAFETY: this view is the only one over `out`, so no two views overlap.
    let mut view = unsafe {
        ArrayBytesFixedDisjointView::new(
            cells,
            2,
            &shape,
            ArraySubset::new_with_shape(shape.clone()),
        )?
    };
    array.retrieve_array_subset_into(&subset(region), (&mut view).into())?;
    Ok(())
}

fn read(array: &ZArray, region: &[Range<u64>; 3]) -> Result<Vec<u16>> {
    Ok(array.retrieve_array_subset::<Vec<u16>>(&subset(region))?)
}

/// The strings of a variable-length `ArrayBytes`, in order.
fn strings_of<'a>(bytes: &'a ArrayBytes<'_>) -> Result<impl Iterator<Item = &'a [u8]>> {
    let ArrayBytes::Variable(vlen) = bytes else {
        bail!("zarrs read variable-length data as fixed-size or optional bytes");
    };
    let (values, offsets) = (vlen.bytes(), vlen.offsets());
    Ok(offsets.windows(2).map(move |w| &values[w[0]..w[1]]))
}

/// W6: the strings of `input-w6.strings` as a 1-D `string` array in chunks of a tenth,
/// `vlen-utf8` then zstd(1).
fn strings(job: &Job) -> Result<Outcome> {
    let threads = rayon::current_num_threads();
    match job.op.as_str() {
        "write" => {
            let input = job::load_strings(&job.data)?;
            let n = input.len() as u64;
            let mut builder = ArrayBuilder::new(
                vec![n],
                vec![job::strings_chunk(n)],
                data_type::string(),
                "",
            );
            builder.array_to_bytes_codec(Arc::new(VlenUtf8Codec::new()));
            builder.bytes_to_bytes_codecs(vec![Arc::new(ZstdCodec::new(1, false))]);
            let array = builder.build(fresh_store(job, "w6")?, "/")?;
            array.store_metadata()?;
            let bytes =
                ArrayBytes::new_vlen(input.values(), ArrayBytesOffsets::new(input.offsets())?)?;
            let all = ArraySubset::new_with_shape(vec![n]);
            let write = || -> Result<()> {
                array.store_array_subset(&all, bytes.clone())?;
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
        "read" | "read_bytes" | "cross_read" => {
            let writer = match job.op.as_str() {
                "cross_read" => job.writer.as_deref().context("cross_read needs --writer")?,
                _ => job.implementation.as_str(),
            };
            let array = open(&job::store_dir(&job.data, writer, "w6"))?;
            let n = array.shape()[0];
            let all = ArraySubset::new_with_shape(vec![n]);
            let typed = || -> Result<Vec<String>> { Ok(array.retrieve_array_subset(&all)?) };
            let raw = || -> Result<ArrayBytes<'static>> { Ok(array.retrieve_array_subset(&all)?) };
            let base = stats::current_rss_bytes();
            let mut got_typed = None;
            let mut got_raw = None;
            let (timing, rss) = match job.op.as_str() {
                "cross_read" => (
                    time_reps(1, || {
                        got_typed = Some(typed()?);
                        Ok(())
                    })?,
                    None,
                ),
                "read" => {
                    drop(typed()?);
                    let timing = time_reps(job.reps, || {
                        drop(std::hint::black_box(typed()?));
                        Ok(())
                    })?;
                    let rss = Some((stats::peak_rss_bytes(), base));
                    got_typed = Some(typed()?);
                    (timing, rss)
                }
                _ => {
                    drop(raw()?);
                    let timing = time_reps(job.reps, || {
                        drop(std::hint::black_box(raw()?));
                        Ok(())
                    })?;
                    let rss = Some((stats::peak_rss_bytes(), base));
                    got_raw = Some(raw()?);
                    (timing, rss)
                }
            };
            let input = job::load_strings(&job.data)?;
            let what = match job.op.as_str() {
                "cross_read" => format!("reading {writer}'s W6"),
                _ => "whole read".to_owned(),
            };
            match (&got_typed, &got_raw) {
                (Some(got), _) => {
                    job::check_strings(&what, got.iter().map(String::as_bytes), &input)?
                }
                (None, Some(got)) => job::check_strings(&what, strings_of(got)?, &input)?,
                (None, None) => bail!("{what}: nothing read"),
            }
            Ok(Outcome {
                bytes: input.values().len() as u64,
                elements: Some(n),
                timing,
                threads,
                verified: true,
                rss,
            })
        }
        other => bail!("zarrs: no W6 op {other}"),
    }
}

/// Run `job` and return its record.
pub(crate) fn run(job: &Job) -> Result<Value> {
    if job.workload == "W6" {
        let outcome = strings(job)?;
        return Ok(job::record(
            job,
            zarrs::version::version_str(),
            "sync",
            (job.op == "write").then_some(true),
            &outcome,
        ));
    }
    let g = job.geometry;
    let full = [0..g.side, 0..g.side, 0..g.side];
    let w = job.workload.to_lowercase();
    let threads = rayon::current_num_threads();
    let outcome = match job.op.as_str() {
        "write" => {
            let input = job::load_input(&job.data, g)?;
            let array = create(job, &w)?;
            let write = || -> Result<()> {
                array.store_array_subset(&subset(&full), &input[..])?;
                Ok(())
            };
            write()?;
            Outcome {
                bytes: g.bytes(),
                elements: None,
                timing: time_reps(job.reps, write)?,
                threads,
                verified: false,
                rss: None,
            }
        }
        "read" | "read_into" => {
            let array = open(&job::store_dir(&job.data, &job.implementation, &w))?;
            let base = stats::current_rss_bytes();
            let mut reused = Vec::new();
            let timing = if job.op == "read" {
                drop(read(&array, &full)?);
                time_reps(job.reps, || {
                    drop(std::hint::black_box(read(&array, &full)?));
                    Ok(())
                })?
            } else {
                reused = vec![0u16; g.elements() as usize];
                read_into(&array, &full, &mut reused)?;
                time_reps(job.reps, || read_into(&array, &full, &mut reused))?
            };
            let rss = Some((stats::peak_rss_bytes(), base));
            let got = if job.op == "read" {
                read(&array, &full)?
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
            let array = open(&job::store_dir(&job.data, writer, &w))?;
            let mut got = Vec::new();
            let timing = time_reps(1, || {
                got = read(&array, &full)?;
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
            let array = open(&job::store_dir(&job.data, &job.implementation, "w2"))?;
            let blocks = w4_blocks(job)?;
            job::measure_blocks(job, &blocks, threads, || {
                if job.op == "serial" {
                    blocks.iter().map(|b| read(&array, b)).collect()
                } else {
                    blocks.par_iter().map(|b| read(&array, b)).collect()
                }
            })?
        }
        "slab_w1" | "slab_w2" => {
            let array = open(&job::store_dir(
                &job.data,
                &job.implementation,
                &job.op[5..],
            ))?;
            let y = g.slab_y();
            let slab = [0..g.side, y..y + 1, 0..g.side];
            let input = job::load_input(&job.data, g)?;
            job::check_equal(
                "W5 slab",
                &read(&array, &slab)?,
                &job::expected_box(&input, g.side, slab.clone()),
            )?;
            let timing = time_reps(job.reps, || {
                drop(std::hint::black_box(read(&array, &slab)?));
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
        other => bail!("zarrs: no op {other}"),
    };
    Ok(job::record(
        job,
        zarrs::version::version_str(),
        "sync",
        (job.op == "write").then_some(true),
        &outcome,
    ))
}
