//! `zarr-compare`: this project side by side with zarrs, tensorstore and zarr-python, and the
//! machine's own limits, in one run on one machine (issue #5). `cargo xtask bench` builds and
//! runs it; `docs/performance.md` explains the output.
//!
//! ```text
//! zarr-compare [--smoke] [--side N] [--strings N] [--reps N] [--only W6,...] [--out DIR]
//!              [--name NAME] [--python PYTHON] [--keep-data] [--malloc-defaults]
//! zarr-compare table FILE.jsonl          # print the tables of a finished run again
//! zarr-compare measure --impl I --workload W --op O --data DIR --side N --reps N
//! ```
//!
//! The orchestrator (the first form) writes the input (a deterministic `uint16` field, see
//! `zarr_benches::field`, and W6's strings, `zarr_benches::Strings`) once, then runs every
//! measurement in a fresh process: this binary's
//! `measure` for our two APIs, zarrs and the limits, `peers.py` (embedded in this binary and
//! written next to the results) with `--python` for tensorstore and zarr-python. Each
//! process warms up (one untimed run, which also loads the page cache), times `--reps`
//! repetitions, checks the values it read against the input, and prints one JSON line.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use zarr_benches::Geometry;

mod job;
mod limits;
mod ours;
mod stats;
mod table;
mod zarrs_peer;

use job::Job;

/// The Python side, written next to the results at run time so the binary works alone.
const PEERS_PY: &str = include_str!("../../../compare/peers.py");

const USAGE: &str = "\
usage: zarr-compare [--smoke] [--side N] [--strings N] [--reps N] [--only W6,...]
                    [--out DIR] [--name NAME] [--python PYTHON] [--keep-data]
                    [--malloc-defaults]
       zarr-compare table FILE.jsonl
       zarr-compare measure --impl I --workload W --op O --data DIR --side N --reps N

Runs the side-by-side comparison (issue #5): W1-W5 for this project (async and blocking
API, default and durable writes), zarrs, and with --python (a Python with zarr and
tensorstore; or ZARR_COMPARE_PYTHON) tensorstore and zarr-python, plus the machine's limits;
W6 (--strings short strings, vlen-utf8 + zstd(1)) for ours, zarrs and zarr-python.
--only runs only the listed workloads (W4 needs W2, W5 needs W1 and W2: they read those
copies). Writes OUT/NAME.jsonl (one JSON line per measurement) and a Markdown table to
OUT/table.md (OUT/NAME.md for other names than `full`). Defaults: side 512, 10,000,000
strings, 5 reps (W4 and W5: 20), W4 reads 1,000 inner chunks, OUT target/bench, NAME full;
--smoke: side 64, 100,000 strings, 1 rep, 100 W4 chunks, NAME smoke. Every measuring
process (ours, zarrs, the Python peers, the limits) runs with the same glibc malloc
settings, GLIBC_TUNABLES=glibc.malloc.trim_threshold=134217728:glibc.malloc.mmap_threshold=33554432
(see docs/performance.md); --malloc-defaults leaves glibc's defaults. Exits 1 if a
measurement fails or a cross-check finds different values.";

/// The glibc malloc settings every measuring process runs with (unless `--malloc-defaults`):
/// freed memory is returned to the kernel only above 128 MiB free at the top of a heap, and
/// allocations of 32 MiB or more are mapped separately (so a whole-array output is still
/// fresh pages every time). With glibc's defaults, memory freed by another thread than the
/// one that allocated it is trimmed and faulted in again each repetition, which decided W4
/// more than the implementations did; see `docs/performance.md`.
const MALLOC_TUNABLES: &str =
    "glibc.malloc.trim_threshold=134217728:glibc.malloc.mmap_threshold=33554432";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("measure") => measure(&args[1..]),
        Some("table") => reprint(&args[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Options::parse(&args).and_then(orchestrate),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zarr-compare: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Run one measurement in this process and print its record.
fn measure(args: &[String]) -> Result<()> {
    let job = Job::parse(args)?;
    let record = match job.implementation.as_str() {
        "ours" | "ours-durable" | "ours-blocking" | "ours-blocking-durable" => ours::run(&job)?,
        "zarrs" => zarrs_peer::run(&job)?,
        "limit" => limits::run(&job)?,
        other => bail!("measure: unknown implementation {other:?}"),
    };
    println!("{record}");
    Ok(())
}

/// Print the tables of a finished run's JSON lines.
fn reprint(args: &[String]) -> Result<()> {
    let path = args
        .first()
        .context("usage: zarr-compare table FILE.jsonl")?;
    let records = read_records(Path::new(path))?;
    print!("{}", table::render(&records));
    Ok(())
}

fn read_records(path: &Path) -> Result<Vec<Value>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    std::io::BufReader::new(file)
        .lines()
        .filter(|l| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .map(|l| Ok(serde_json::from_str(&l?)?))
        .collect()
}

/// Every workload, in the order they run.
const WORKLOADS: [&str; 6] = ["W1", "W2", "W3", "W4", "W5", "W6"];

/// The orchestrator's options.
#[derive(Debug)]
struct Options {
    side: u64,
    /// W6's number of strings.
    strings: u64,
    reps: usize,
    /// The workloads to run (`--only`; all by default).
    only: Vec<String>,
    out: PathBuf,
    name: String,
    python: Option<PathBuf>,
    keep_data: bool,
    /// Run the measuring processes with glibc's default malloc settings, not
    /// [`MALLOC_TUNABLES`].
    malloc_defaults: bool,
    smoke: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self> {
        let smoke = args.iter().any(|a| a == "--smoke");
        let mut options = Self {
            side: if smoke { 64 } else { 512 },
            strings: if smoke { 100_000 } else { 10_000_000 },
            reps: if smoke { 1 } else { 5 },
            only: WORKLOADS.map(str::to_owned).to_vec(),
            out: PathBuf::from("target/bench"),
            name: if smoke { "smoke" } else { "full" }.to_owned(),
            python: std::env::var_os("ZARR_COMPARE_PYTHON").map(PathBuf::from),
            keep_data: false,
            malloc_defaults: false,
            smoke,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |flag: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{flag} needs a value\n\n{USAGE}"))
            };
            match arg.as_str() {
                "--smoke" => {}
                "--keep-data" => options.keep_data = true,
                "--malloc-defaults" => options.malloc_defaults = true,
                "--side" => options.side = value("--side")?.parse().context("--side")?,
                "--strings" => {
                    options.strings = value("--strings")?.parse().context("--strings")?;
                }
                "--only" => {
                    options.only = value("--only")?
                        .split(',')
                        .map(|w| w.trim().to_uppercase())
                        .collect();
                }
                "--reps" => options.reps = value("--reps")?.parse().context("--reps")?,
                "--out" => options.out = value("--out")?.into(),
                "--name" => options.name = value("--name")?,
                "--python" => options.python = Some(value("--python")?.into()),
                other => bail!("unknown argument {other:?}\n\n{USAGE}"),
            }
        }
        if options.reps == 0 {
            bail!("--reps must be at least 1");
        }
        if options.strings == 0 {
            bail!("--strings must be at least 1");
        }
        for w in &options.only {
            if !WORKLOADS.contains(&w.as_str()) {
                bail!(
                    "--only: no workload {w:?} (there are {})",
                    WORKLOADS.join(", ")
                );
            }
        }
        for (w, needs) in [("W4", &["W2"][..]), ("W5", &["W1", "W2"][..])] {
            if options.runs(w) && !needs.iter().all(|n| options.runs(n)) {
                bail!(
                    "--only: {w} reads the copies of {} written in the same run",
                    needs.join(" and ")
                );
            }
        }
        Geometry::try_new(options.side).map_err(anyhow::Error::msg)?;
        Ok(options)
    }

    /// Whether workload `w` runs.
    fn runs(&self, w: &str) -> bool {
        self.only.iter().any(|o| o == w)
    }

    /// Whether any workload on the `uint16` field (W1-W5) runs.
    fn runs_field(&self) -> bool {
        WORKLOADS[..5].iter().any(|w| self.runs(w))
    }

    fn table_path(&self) -> PathBuf {
        if self.name == "full" {
            self.out.join("table.md")
        } else {
            self.out.join(format!("{}.md", self.name))
        }
    }
}

/// How a measuring process is started.
enum Runner<'a> {
    /// This binary's `measure`.
    Native,
    /// `peers.py` with this Python.
    Python(&'a Path, &'a Path),
}

/// The implementations, in table order, and what they run.
struct Implementation {
    name: &'static str,
    python: bool,
    /// Whole-array read ops.
    reads: &'static [&'static str],
    /// W4 ops.
    w4: &'static [&'static str],
    /// Reads the others' W2 copies in the cross-check (and has its W2 read by them); with
    /// W6 ops, also the others' W6 copies.
    cross: bool,
    /// W6 (strings) ops: writes first, then reads.
    w6: &'static [&'static str],
}

const IMPLEMENTATIONS: &[Implementation] = &[
    Implementation {
        name: "ours",
        python: false,
        reads: &["read", "read_into"],
        w4: &["serial", "concurrent"],
        cross: true,
        w6: &["write", "write_arrow", "read", "read_arrow"],
    },
    Implementation {
        name: "ours-durable",
        python: false,
        reads: &[],
        w4: &[],
        cross: false,
        w6: &["write"],
    },
    Implementation {
        name: "ours-blocking",
        python: false,
        reads: &["read", "read_into"],
        w4: &["serial", "concurrent"],
        cross: false,
        w6: &[],
    },
    Implementation {
        name: "ours-blocking-durable",
        python: false,
        reads: &[],
        w4: &[],
        cross: false,
        w6: &[],
    },
    Implementation {
        name: "zarrs",
        python: false,
        reads: &["read", "read_into"],
        w4: &["serial", "concurrent"],
        cross: true,
        w6: &["write", "read", "read_bytes"],
    },
    Implementation {
        name: "tensorstore",
        python: true,
        reads: &["read"],
        w4: &["serial", "concurrent"],
        cross: true,
        w6: &[],
    },
    Implementation {
        name: "zarr-python",
        python: true,
        reads: &["read"],
        w4: &["serial", "concurrent"],
        cross: true,
        w6: &["write", "read"],
    },
];

/// In a full run, the latency workloads (W4, W5) repeat this many times more than the
/// throughput ones: each repetition is short, and their medians need more samples to settle.
const LATENCY_REPS_FACTOR: usize = 4;

/// W4 reads this many inner chunks (the smoke run: [`SMOKE_W4_CHUNKS`]).
const W4_CHUNKS: usize = 1000;

/// The smoke run only checks that W4 works, on fewer chunks.
const SMOKE_W4_CHUNKS: usize = 100;

fn plan(options: &Options, data: &Path, with_python: bool) -> Result<Vec<Job>> {
    let geometry = Geometry::try_new(options.side).map_err(anyhow::Error::msg)?;
    let cores = stats::cores();
    let job = |implementation: &str, workload: &str, op: &str| Job {
        implementation: implementation.to_owned(),
        workload: workload.to_owned(),
        op: op.to_owned(),
        data: data.to_owned(),
        geometry,
        reps: options.reps,
        writer: None,
        threads: None,
    };
    let latency_reps = if options.smoke {
        options.reps
    } else {
        options.reps * LATENCY_REPS_FACTOR
    };
    let thread_counts: Vec<usize> = if cores > 1 { vec![1, cores] } else { vec![1] };
    let implementations: Vec<&Implementation> = IMPLEMENTATIONS
        .iter()
        .filter(|i| with_python || !i.python)
        .collect();
    let mut jobs = Vec::new();
    let runs = |w: &str| options.runs(w);
    for workload in ["W1", "W2"].into_iter().filter(|w| runs(w)) {
        for op in ["zstd_compress", "zstd_decompress"] {
            for &threads in &thread_counts {
                jobs.push(Job {
                    threads: Some(threads),
                    ..job("limit", workload, op)
                });
            }
        }
        jobs.push(Job {
            threads: Some(cores),
            ..job("limit", workload, "zstd_decompress_fresh")
        });
    }
    for op in ["memcpy_fresh", "memcpy_prefaulted"]
        .into_iter()
        .filter(|_| runs("W3"))
    {
        jobs.push(Job {
            threads: Some(1),
            ..job("limit", "W3", op)
        });
    }
    // Workload by workload, every implementation in turn, so a drift in the machine's load
    // spreads over all of them rather than landing on one.
    for workload in ["W1", "W2", "W3"].into_iter().filter(|w| runs(w)) {
        for i in &implementations {
            jobs.push(job(i.name, workload, "write"));
        }
        for i in &implementations {
            for op in i.reads {
                jobs.push(job(i.name, workload, op));
            }
        }
        for &threads in &thread_counts {
            jobs.push(Job {
                threads: Some(threads),
                ..job("limit", workload, "fs_read")
            });
        }
    }
    for i in implementations.iter().filter(|_| runs("W4")) {
        for op in i.w4 {
            jobs.push(Job {
                reps: latency_reps,
                ..job(i.name, "W4", op)
            });
        }
    }
    for i in implementations
        .iter()
        .filter(|i| !i.w4.is_empty() && runs("W5"))
    {
        for op in ["slab_w1", "slab_w2"] {
            jobs.push(Job {
                reps: latency_reps,
                ..job(i.name, "W5", op)
            });
        }
    }
    if runs("W6") {
        // Writes first: our ZEP0007 read needs our ZEP0007 copy.
        for i in &implementations {
            for op in i.w6.iter().filter(|op| op.starts_with("write")) {
                jobs.push(job(i.name, "W6", op));
            }
        }
        for i in &implementations {
            for op in i.w6.iter().filter(|op| !op.starts_with("write")) {
                jobs.push(job(i.name, "W6", op));
            }
        }
    }
    for (workload, w6) in [("W2", false), ("W6", true)] {
        if !runs(workload) {
            continue;
        }
        let cross: Vec<&&Implementation> = implementations
            .iter()
            .filter(|i| i.cross && (!w6 || i.w6.contains(&"read")))
            .collect();
        for reader in &cross {
            for writer in &cross {
                if reader.name != writer.name {
                    jobs.push(Job {
                        writer: Some(writer.name.to_owned()),
                        reps: 1,
                        ..job(reader.name, workload, "cross_read")
                    });
                }
            }
        }
    }
    Ok(jobs)
}

fn is_python(implementation: &str) -> bool {
    IMPLEMENTATIONS
        .iter()
        .any(|i| i.name == implementation && i.python)
}

/// What a measuring process's `GLIBC_TUNABLES` is set to: [`MALLOC_TUNABLES`] after any
/// tunables of our own environment, or (`--malloc-defaults`) nothing.
fn glibc_tunables(malloc_defaults: bool) -> Option<String> {
    if malloc_defaults {
        return None;
    }
    Some(match std::env::var("GLIBC_TUNABLES") {
        Ok(own) if !own.is_empty() => format!("{own}:{MALLOC_TUNABLES}"),
        _ => MALLOC_TUNABLES.to_owned(),
    })
}

/// Run one measuring process, with `GLIBC_TUNABLES` set to `tunables` if given; its last
/// stdout line is the record, to which the malloc settings are added (`malloc`).
fn run_job(
    job: &Job,
    runner: &Runner<'_>,
    tunables: Option<&str>,
    timeout: Duration,
) -> Result<Value> {
    let mut command = match runner {
        Runner::Native => {
            let mut c = Command::new(std::env::current_exe().context("finding this binary")?);
            c.arg("measure");
            c
        }
        Runner::Python(python, script) => {
            let mut c = Command::new(python);
            c.arg(script);
            c
        }
    };
    if let Some(tunables) = tunables {
        command.env("GLIBC_TUNABLES", tunables);
    }
    let mut child = command
        .args(job.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!("no result within {timeout:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = reader.join().expect("the reader thread")?;
    if !status.success() {
        bail!("the measuring process failed ({status}); its error is printed above");
    }
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .context("the measuring process printed no record")?;
    let mut record: Value =
        serde_json::from_str(line).with_context(|| format!("malformed record {line:?}"))?;
    if let Some(fields) = record.as_object_mut() {
        fields.insert(
            "malloc".to_owned(),
            Value::from(tunables.map_or("glibc defaults".to_owned(), |t| {
                format!("GLIBC_TUNABLES={t}")
            })),
        );
    }
    Ok(record)
}

/// Check the Python peers import, and return their versions.
fn python_versions(python: &Path, script: &Path) -> Result<String> {
    let output = Command::new(python)
        .arg(script)
        .arg("--versions")
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !output.status.success() {
        bail!(
            "{} cannot run the peers (zarr and tensorstore must import): {}",
            python.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn machine_line() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    format!("{} cores, {cpu}, Linux {kernel}", stats::cores())
}

fn orchestrate(options: Options) -> Result<()> {
    let started = Instant::now();
    let geometry = Geometry::try_new(options.side).map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("creating {}", options.out.display()))?;
    let out = options.out.canonicalize()?;
    let data = out.join(format!("data-{}", options.name));
    if data.exists() {
        std::fs::remove_dir_all(&data).with_context(|| format!("removing {}", data.display()))?;
    }
    std::fs::create_dir_all(&data)?;

    let script = out.join("peers.py");
    std::fs::write(&script, PEERS_PY).with_context(|| format!("writing {}", script.display()))?;
    let python = match &options.python {
        Some(python) => {
            let versions = python_versions(python, &script)?;
            eprintln!("==> peers: {versions} ({})", python.display());
            Some(python.as_path())
        }
        None => {
            eprintln!(
                "==> note: no Python given (--python or ZARR_COMPARE_PYTHON): tensorstore and \
                 zarr-python are skipped; `cargo xtask bench` provides one"
            );
            None
        }
    };

    let mut inputs = Vec::new();
    if options.runs_field() {
        inputs.push(format!(
            "{}^3 uint16 ({} MiB)",
            options.side,
            geometry.bytes() >> 20
        ));
    }
    if options.runs("W6") {
        inputs.push(format!("{} strings", options.strings));
    }
    eprintln!(
        "==> input: {}, {} reps; workloads {}; {}",
        inputs.join(" and "),
        options.reps,
        options.only.join(", "),
        machine_line()
    );
    if options.runs_field() {
        // The field once, written through a small buffer (the orchestrator's peak memory does
        // not matter for the measurements, which read VmHWM of their own process, but is kept
        // low).
        let mut input = std::io::BufWriter::new(std::fs::File::create(job::input_path(&data))?);
        for value in zarr_benches::field(options.side) {
            input.write_all(&value.to_le_bytes())?;
        }
        input.flush()?;
        drop(input);
    }
    if options.runs("W6") {
        let count = usize::try_from(options.strings).context("--strings")?;
        let strings = zarr_benches::Strings::generate(count);
        std::fs::write(job::strings_path(&data), strings.to_file_bytes())?;
    }
    let w4 = geometry.random_inner_chunks(if options.smoke {
        SMOKE_W4_CHUNKS
    } else {
        W4_CHUNKS
    });
    std::fs::write(data.join("w4-chunks.json"), serde_json::to_string(&w4)?)?;

    let jobs = plan(&options, &data, python.is_some())?;
    let jsonl_path = out.join(format!("{}.jsonl", options.name));
    let mut jsonl = std::fs::File::create(&jsonl_path)
        .with_context(|| format!("creating {}", jsonl_path.display()))?;
    let timeout = if options.smoke {
        Duration::from_secs(120)
    } else {
        Duration::from_secs(1800)
    };
    let tunables = glibc_tunables(options.malloc_defaults);
    let mut records = Vec::new();
    let mut failures = Vec::new();
    for (n, job) in jobs.iter().enumerate() {
        let runner = match python {
            Some(python) if is_python(&job.implementation) => Runner::Python(python, &script),
            _ => Runner::Native,
        };
        let record = match run_job(job, &runner, tunables.as_deref(), timeout) {
            Ok(record) => {
                eprintln!(
                    "[{:>3}/{}] {}: {}",
                    n + 1,
                    jobs.len(),
                    job.label(),
                    table::summary(&record)
                );
                record
            }
            Err(e) => {
                eprintln!(
                    "[{:>3}/{}] {}: FAILED: {e:#}",
                    n + 1,
                    jobs.len(),
                    job.label()
                );
                failures.push(format!("{}: {e:#}", job.label()));
                json!({
                    "implementation": job.implementation,
                    "workload": job.workload,
                    "op": job.op,
                    "writer": job.writer,
                    "threads": job.threads,
                    "error": format!("{e:#}"),
                })
            }
        };
        writeln!(jsonl, "{record}")?;
        records.push(record);
    }
    let mut text = format!(
        "<!-- {} run of `zarr-compare`: side {}, {} strings, {} reps, workloads {}; {}; {} -->\n\n",
        options.name,
        options.side,
        options.strings,
        options.reps,
        options.only.join(", "),
        machine_line(),
        jsonl_path.display()
    );
    text += &table::render(&records);
    let table_path = options.table_path();
    std::fs::write(&table_path, &text)
        .with_context(|| format!("writing {}", table_path.display()))?;
    println!("{text}");
    if !options.keep_data {
        std::fs::remove_dir_all(&data).with_context(|| format!("removing {}", data.display()))?;
    }
    eprintln!(
        "==> {} measurements in {:.0} s; records in {}, table in {}",
        records.len(),
        started.elapsed().as_secs_f64(),
        jsonl_path.display(),
        table_path.display()
    );
    if !failures.is_empty() {
        bail!(
            "{} of {} measurements failed:\n  {}",
            failures.len(),
            jobs.len(),
            failures.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Result<Options> {
        Options::parse(&args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn measuring_processes_get_the_malloc_settings_unless_told_not_to() {
        assert!(
            USAGE.contains(MALLOC_TUNABLES),
            "the usage names the settings"
        );
        assert!(!options(&["--smoke"]).unwrap().malloc_defaults);
        assert!(
            options(&["--smoke", "--malloc-defaults"])
                .unwrap()
                .malloc_defaults
        );
        assert_eq!(glibc_tunables(true), None);
        let tunables = glibc_tunables(false).unwrap();
        assert!(tunables.ends_with(MALLOC_TUNABLES), "{tunables}");
        // A measuring process sees them, and its record names them: a stand-in "Python"
        // (`sh`) whose script prints the variable as the record.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("peer.sh");
        std::fs::write(
            &script,
            "printf '{\"seen\": \"%s\"}\\n' \"$GLIBC_TUNABLES\"\n",
        )
        .unwrap();
        let o = options(&["--smoke"]).unwrap();
        let job = plan(&o, dir.path(), false).unwrap().remove(0);
        let runner = Runner::Python(Path::new("sh"), &script);
        let timeout = Duration::from_secs(30);
        let record = run_job(&job, &runner, Some(&tunables), timeout).unwrap();
        assert_eq!(record["seen"], tunables.as_str());
        assert_eq!(record["malloc"], format!("GLIBC_TUNABLES={tunables}"));
        let record = run_job(&job, &runner, None, timeout).unwrap();
        assert_eq!(record["malloc"], "glibc defaults");
    }

    #[test]
    fn only_w6_plans_writes_before_reads_and_cross_reads() {
        let o = options(&["--smoke", "--only", "w6"]).unwrap();
        assert_eq!(o.strings, 100_000);
        let jobs = plan(&o, Path::new("/data"), true).unwrap();
        assert!(jobs.iter().all(|j| j.workload == "W6"), "{jobs:?}");
        let labels: Vec<String> = jobs.iter().map(Job::label).collect();
        let at = |label: &str| {
            labels
                .iter()
                .position(|l| l == label)
                .unwrap_or_else(|| panic!("{label} not in {labels:?}"))
        };
        assert!(at("W6 write_arrow ours") < at("W6 read_arrow ours"));
        assert!(at("W6 write zarr-python") < at("W6 read ours"));
        at("W6 write ours-durable");
        at("W6 read_bytes zarrs");
        at("W6 cross_read zarrs (copy of zarr-python)");
        at("W6 cross_read ours (copy of zarrs)");
        assert!(
            !labels.iter().any(|l| l.contains("tensorstore")),
            "{labels:?}"
        );
        // Without Python, only the Rust implementations.
        let jobs = plan(&o, Path::new("/data"), false).unwrap();
        assert_eq!(
            jobs.iter().filter(|j| j.op == "cross_read").count(),
            2,
            "{jobs:?}"
        );
    }

    #[test]
    fn only_checks_its_workloads() {
        assert!(options(&["--only", "W7"]).is_err());
        assert!(options(&["--only", "W4"]).is_err());
        assert!(options(&["--only", "W1,W5"]).is_err());
        let o = options(&["--only", "W1,W2,W5", "--strings", "1000"]).unwrap();
        assert_eq!(o.strings, 1000);
        assert!(o.runs_field() && !o.runs("W6"));
        let jobs = plan(&o, Path::new("/data"), false).unwrap();
        assert!(jobs.iter().any(|j| j.workload == "W5"));
        assert!(
            !jobs
                .iter()
                .any(|j| ["W3", "W4", "W6"].contains(&j.workload.as_str()))
        );
        let all = plan(&options(&["--smoke"]).unwrap(), Path::new("/data"), false).unwrap();
        for w in WORKLOADS {
            assert!(all.iter().any(|j| j.workload == w), "{w}");
        }
    }
}
