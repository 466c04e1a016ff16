//! One measurement, as the orchestrator asks a fresh process for it, and the JSON record that
//! process prints.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use zarr_benches::{Geometry, Strings};

use crate::stats::Timing;

/// One measurement: `implementation` runs `op` of `workload` (see the crate docs).
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub(crate) implementation: String,
    pub(crate) workload: String,
    pub(crate) op: String,
    /// The directory with the input file, the W4 chunk list and every writer's stores.
    pub(crate) data: PathBuf,
    pub(crate) geometry: Geometry,
    pub(crate) reps: usize,
    /// For `cross_read`: whose W2 copy to read.
    pub(crate) writer: Option<String>,
    /// For the limits: how many threads.
    pub(crate) threads: Option<usize>,
}

impl Job {
    /// The arguments that describe this job to a measuring process (this binary's `measure`
    /// or `peers.py`; both parse the same flags).
    pub(crate) fn args(&self) -> Vec<String> {
        let mut args = vec![
            "--impl".to_owned(),
            self.implementation.clone(),
            "--workload".to_owned(),
            self.workload.clone(),
            "--op".to_owned(),
            self.op.clone(),
            "--data".to_owned(),
            self.data.to_string_lossy().into_owned(),
            "--side".to_owned(),
            self.geometry.side.to_string(),
            "--reps".to_owned(),
            self.reps.to_string(),
        ];
        if let Some(writer) = &self.writer {
            args.extend(["--writer".to_owned(), writer.clone()]);
        }
        if let Some(threads) = self.threads {
            args.extend(["--threads".to_owned(), threads.to_string()]);
        }
        args
    }

    /// Parse what [`args`](Self::args) produced.
    pub(crate) fn parse(args: &[String]) -> Result<Self> {
        let get = |flag: &str| -> Option<String> {
            let i = args.iter().position(|a| a == flag)?;
            args.get(i + 1).cloned()
        };
        let need = |value: Option<String>, flag: &str| {
            value.with_context(|| format!("measure: missing {flag}"))
        };
        let side: u64 = need(get("--side"), "--side")?.parse()?;
        Ok(Self {
            implementation: need(get("--impl"), "--impl")?,
            workload: need(get("--workload"), "--workload")?,
            op: need(get("--op"), "--op")?,
            data: need(get("--data"), "--data")?.into(),
            geometry: Geometry::try_new(side).map_err(anyhow::Error::msg)?,
            reps: need(get("--reps"), "--reps")?.parse()?,
            writer: get("--writer"),
            threads: get("--threads").map(|t| t.parse()).transpose()?,
        })
    }

    /// A short label for progress lines and failure lists.
    pub(crate) fn label(&self) -> String {
        let mut label = format!("{} {} {}", self.workload, self.op, self.implementation);
        if let Some(writer) = &self.writer {
            label += &format!(" (copy of {writer})");
        }
        if let Some(threads) = self.threads {
            label += &format!(" ({threads} threads)");
        }
        label
    }
}

/// The raw input every implementation writes: the [`zarr_benches::field`], little endian.
pub(crate) fn input_path(data: &Path) -> PathBuf {
    data.join("input.u16")
}

/// W6's input: the [`Strings`] in their file form.
pub(crate) fn strings_path(data: &Path) -> PathBuf {
    data.join("input-w6.strings")
}

/// Load W6's input.
pub(crate) fn load_strings(data: &Path) -> Result<Strings> {
    let path = strings_path(data);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    Strings::from_file_bytes(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// W6's chunk length for an array of `elements` strings: a tenth of it (1,000,000 for the
/// full run's 10,000,000). `peers.py` computes the same.
pub(crate) fn strings_chunk(elements: u64) -> u64 {
    elements.div_ceil(10).max(1)
}

/// Fail with the first difference when the strings `got` are not `expected`.
pub(crate) fn check_strings<'a>(
    what: &str,
    got: impl IntoIterator<Item = &'a [u8]>,
    expected: &Strings,
) -> Result<()> {
    match expected.first_difference(got) {
        None => Ok(()),
        Some((i, None)) => bail!(
            "{what}: read {i} strings, expected {} (the values differ from the input)",
            expected.len()
        ),
        Some((i, Some(got))) if i == expected.len() => {
            bail!(
                "{what}: read more than the {i} strings expected, string {i} is {:?} (the \
                 values differ from the input)",
                String::from_utf8_lossy(got)
            )
        }
        Some((i, Some(got))) => bail!(
            "{what}: string {i} is {:?}, expected {:?} (the values differ from the input)",
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(expected.bytes(i))
        ),
    }
}

/// The store (a directory) `writer` wrote for workload `w` (`"w1"`, `"w2"`, `"w3"`, `"w6"`,
/// and `"w6-arrow"` for our ZEP0007 copy of W6).
pub(crate) fn store_dir(data: &Path, writer: &str, w: &str) -> PathBuf {
    data.join(writer).join(w)
}

/// Load the input file.
pub(crate) fn load_input(data: &Path, geometry: Geometry) -> Result<Vec<u16>> {
    let path = input_path(data);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 != geometry.bytes() {
        bail!(
            "{} holds {} bytes, not the {} of a {}^3 uint16 array",
            path.display(),
            bytes.len(),
            geometry.bytes(),
            geometry.side
        );
    }
    Ok(bytes
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect())
}

/// The values of the box `[z0..z1, y0..y1, x0..x1]` of the input, C order.
pub(crate) fn expected_box(
    input: &[u16],
    side: u64,
    bounds: [std::ops::Range<u64>; 3],
) -> Vec<u16> {
    let [zs, ys, xs] = bounds;
    let mut out = Vec::new();
    for z in zs {
        for y in ys.clone() {
            let start = ((z * side + y) * side + xs.start) as usize;
            out.extend_from_slice(&input[start..start + (xs.end - xs.start) as usize]);
        }
    }
    out
}

/// W4 for any implementation: check every block `read_blocks` returns against the input,
/// then time `job.reps` calls of it.
pub(crate) fn measure_blocks(
    job: &Job,
    blocks: &[[std::ops::Range<u64>; 3]],
    threads: usize,
    read_blocks: impl Fn() -> Result<Vec<Vec<u16>>>,
) -> Result<Outcome> {
    let g = job.geometry;
    let input = load_input(&job.data, g)?;
    for (got, block) in read_blocks()?.iter().zip(blocks) {
        check_equal(
            "W4 block",
            got,
            &expected_box(&input, g.side, block.clone()),
        )?;
    }
    let timing = crate::stats::time_reps(job.reps, || {
        drop(std::hint::black_box(read_blocks()?));
        Ok(())
    })?;
    Ok(Outcome {
        bytes: blocks.len() as u64 * g.inner().pow(3) * 2,
        elements: None,
        timing,
        threads,
        verified: true,
        rss: None,
    })
}

/// Fail with the first difference when `got` is not `expected`.
pub(crate) fn check_equal(what: &str, got: &[u16], expected: &[u16]) -> Result<()> {
    if got.len() != expected.len() {
        bail!(
            "{what}: read {} values, expected {}",
            got.len(),
            expected.len()
        );
    }
    if let Some(i) = got.iter().zip(expected).position(|(a, b)| a != b) {
        bail!(
            "{what}: value {i} is {}, expected {} (the values differ from the input)",
            got[i],
            expected[i]
        );
    }
    Ok(())
}

/// What a measurement found, before it becomes a JSON record.
pub(crate) struct Outcome {
    /// Decoded bytes per repetition (W6: the strings' UTF-8 bytes, without offsets).
    pub(crate) bytes: u64,
    /// W6: the number of strings per repetition.
    pub(crate) elements: Option<u64>,
    pub(crate) timing: Timing,
    pub(crate) threads: usize,
    /// Whether the values read were checked against the input (writes are checked by the
    /// reads that follow them).
    pub(crate) verified: bool,
    /// Peak and baseline resident memory, for whole-array reads.
    pub(crate) rss: Option<(u64, u64)>,
}

/// The JSON record of a measurement.
pub(crate) fn record(
    job: &Job,
    version: &str,
    api: &str,
    durable: Option<bool>,
    outcome: &Outcome,
) -> Value {
    let median = outcome.timing.median();
    let mut value = json!({
        "implementation": job.implementation,
        "version": version,
        "api": api,
        "workload": job.workload,
        "op": job.op,
        "side": job.geometry.side,
        "bytes": outcome.bytes,
        "reps": outcome.timing.seconds.len(),
        "median_s": median,
        "min_s": outcome.timing.min(),
        "mib_s": outcome.bytes as f64 / median / f64::from(1 << 20),
        "threads": outcome.threads,
        "other_cpu": outcome.timing.load.other_cpu,
        "own_cores": outcome.timing.load.own_cores,
        "verified": outcome.verified,
        "seconds": outcome.timing.seconds,
    });
    let map = value.as_object_mut().expect("an object");
    if let Some(durable) = durable {
        map.insert("durable".into(), durable.into());
    }
    if let Some(writer) = &job.writer {
        map.insert("writer".into(), writer.clone().into());
    }
    if let Some(elements) = outcome.elements {
        map.insert("elements".into(), elements.into());
        map.insert("chunk_elements".into(), strings_chunk(elements).into());
        map.insert("elements_s".into(), (elements as f64 / median).into());
    }
    if let Some((peak, base)) = outcome.rss {
        map.insert("peak_rss".into(), peak.into());
        map.insert("base_rss".into(), base.into());
    }
    value
}
