//! The Markdown report of a run: throughput, latency, memory, the cross-check, which of
//! issue #5's targets are met, and the strings of W6. Everything here is computed from the
//! JSON records, so `zarr-compare table FILE.jsonl` regenerates it. A section whose workloads
//! did not run (`--only`) is left out.

use std::fmt::Write as _;

use serde_json::Value;

/// A cell is flagged when other processes used more than this fraction of the CPUs.
const BUSY: f64 = 0.10;

fn s<'a>(r: &'a Value, key: &str) -> &'a str {
    r.get(key).and_then(Value::as_str).unwrap_or("")
}

fn f(r: &Value, key: &str) -> Option<f64> {
    r.get(key).and_then(Value::as_f64)
}

fn ok(r: &Value) -> bool {
    r.get("error").is_none()
}

/// Thousands separators, no decimals.
fn int(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(seconds: f64) -> String {
    if seconds < 0.01 {
        format!("{:.2}", seconds * 1e3)
    } else {
        format!("{:.1}", seconds * 1e3)
    }
}

fn is_latency(r: &Value) -> bool {
    matches!(s(r, "workload"), "W4" | "W5")
}

/// One line about a record, for progress output.
pub(crate) fn summary(r: &Value) -> String {
    let (Some(median), Some(min)) = (f(r, "median_s"), f(r, "min_s")) else {
        return "no timing".into();
    };
    let mut text = if is_latency(r) {
        format!("{} ms (min {} ms)", ms(median), ms(min))
    } else if let Some(elements) = f(r, "elements_s") {
        format!(
            "{} MiB/s, {:.1} M strings/s (median {:.3} s, min {:.3} s)",
            int(f(r, "mib_s").unwrap_or(0.0)),
            elements / 1e6,
            median,
            min
        )
    } else {
        format!(
            "{} MiB/s (median {:.3} s, min {:.3} s)",
            int(f(r, "mib_s").unwrap_or(0.0)),
            median,
            min
        )
    };
    if let Some(other) = f(r, "other_cpu") {
        let _ = write!(text, ", others used {:.0}% of the CPUs", other * 100.0);
    }
    match (f(r, "peak_rss"), r.get("elements").is_some()) {
        // W6's output is more than its value bytes (offsets, or a `String` per element).
        (Some(peak), true) => {
            let _ = write!(text, ", peak RSS {} MiB", int(peak / f64::from(1 << 20)));
        }
        (Some(peak), false) => {
            let _ = write!(
                text,
                ", peak RSS {:.2}x the output",
                peak / f(r, "bytes").unwrap_or(1.0)
            );
        }
        (None, _) => {}
    }
    text
}

/// The records of a run, with lookups.
struct Run<'a> {
    records: &'a [Value],
    cores: u64,
}

impl<'a> Run<'a> {
    fn get(&self, implementation: &str, workload: &str, op: &str) -> Option<&'a Value> {
        self.records.iter().find(|r| {
            ok(r)
                && s(r, "implementation") == implementation
                && s(r, "workload") == workload
                && s(r, "op") == op
                && r.get("writer").is_none_or(Value::is_null)
                && (implementation != "limit"
                    || r.get("threads").and_then(Value::as_u64) == Some(self.cores))
        })
    }

    fn limit(&self, workload: &str, op: &str, threads: u64) -> Option<&'a Value> {
        self.records.iter().find(|r| {
            ok(r)
                && s(r, "implementation") == "limit"
                && s(r, "workload") == workload
                && s(r, "op") == op
                && r.get("threads").and_then(Value::as_u64) == Some(threads)
        })
    }

    fn mib(&self, implementation: &str, workload: &str, op: &str) -> Option<f64> {
        f(self.get(implementation, workload, op)?, "mib_s")
    }

    fn median(&self, implementation: &str, workload: &str, op: &str) -> Option<f64> {
        f(self.get(implementation, workload, op)?, "median_s")
    }

    /// Whether any record is of one of `workloads`.
    fn has(&self, workloads: &[&str]) -> bool {
        self.records
            .iter()
            .any(|r| workloads.contains(&s(r, "workload")))
    }

    fn version(&self, implementation: &str) -> String {
        self.records
            .iter()
            .find(|r| ok(r) && s(r, "implementation") == implementation)
            .map(|r| s(r, "version").to_owned())
            .unwrap_or_default()
    }

    /// The throughput limit a cell is compared with.
    fn limit_of(&self, workload: &str, write: bool) -> Option<f64> {
        let r = match (workload, write) {
            ("W1" | "W2", true) => self.limit(workload, "zstd_compress", self.cores)?,
            ("W1" | "W2", false) => self.limit(workload, "zstd_decompress", self.cores)?,
            ("W3", false) => self.limit("W3", "memcpy_fresh", 1)?,
            _ => return None,
        };
        f(r, "mib_s")
    }
}

fn busy_mark(r: &Value) -> &'static str {
    if f(r, "other_cpu").unwrap_or(0.0) > BUSY {
        "*"
    } else {
        ""
    }
}

/// A row of the throughput table: which record fills the write and the read columns.
struct Row {
    label: String,
    implementation: &'static str,
    write: Option<&'static str>,
    read: Option<&'static str>,
    /// Which of our rows a write is compared with.
    ours_write: &'static str,
}

const WORKLOADS: [&str; 3] = ["W1", "W2", "W3"];

/// The workloads on the `uint16` field.
const FIELD_WORKLOADS: [&str; 5] = ["W1", "W2", "W3", "W4", "W5"];

/// Render the report.
pub(crate) fn render(records: &[Value]) -> String {
    let cores = records
        .iter()
        .find(|r| s(r, "implementation") == "limit" && s(r, "op") == "zstd_compress")
        .and_then(|_| {
            records
                .iter()
                .filter(|r| s(r, "implementation") == "limit")
                .filter_map(|r| r.get("threads").and_then(Value::as_u64))
                .max()
        })
        .unwrap_or(1);
    let run = Run { records, cores };
    let mut out = String::new();
    header(&run, &mut out);
    if run.has(&WORKLOADS) {
        throughput(&run, &mut out);
    }
    if run.has(&["W4", "W5"]) {
        latency(&run, &mut out);
    }
    if run.has(&WORKLOADS) {
        memory(&run, &mut out);
    }
    cross_check(&run, "W2", &mut out);
    if run.has(&FIELD_WORKLOADS) {
        targets(&run, &mut out);
    }
    if run.has(&["W6"]) {
        strings(&run, &mut out);
        cross_check(&run, "W6", &mut out);
    }
    failures(&run, &mut out);
    out
}

fn header(run: &Run<'_>, out: &mut String) {
    let mut versions = vec![format!("ours {}", run.version("ours"))];
    for peer in ["zarrs", "tensorstore", "zarr-python"] {
        let v = run.version(peer);
        if !v.is_empty() {
            versions.push(format!("{peer} {v}"));
        }
    }
    let mut others: Vec<f64> = run
        .records
        .iter()
        .filter_map(|r| f(r, "other_cpu"))
        .collect();
    others.sort_by(f64::total_cmp);
    let side = run
        .records
        .iter()
        .find_map(|r| r.get("side").and_then(Value::as_u64))
        .unwrap_or(0);
    let reps_of = |w: &str, op: &str| {
        run.get("ours", w, op)
            .and_then(|r| r.get("reps").and_then(Value::as_u64))
            .unwrap_or(0)
    };
    let (reps, latency_reps) = (reps_of("W1", "read"), reps_of("W5", "slab_w1"));
    let w4_chunks = run
        .get("ours", "W4", "serial")
        .and_then(|r| Some(f(r, "bytes")? / (side / 16).pow(3).max(1) as f64 / 2.0))
        .unwrap_or(0.0);
    if run.has(&FIELD_WORKLOADS) {
        let _ = writeln!(
            out,
            "Array {side}^3 uint16 ({} MiB); {}; medians of {reps} repetitions (W4, W5: \
             {latency_reps}; W4 reads {} inner chunks), each measurement in a fresh process \
             after a warm-up run.",
            (side * side * side * 2) >> 20,
            versions.join(", "),
            int(w4_chunks)
        );
    } else {
        let _ = writeln!(
            out,
            "{}; each measurement in a fresh process after a warm-up run.",
            versions.join(", ")
        );
    }
    if let (Some(median), Some(max)) = (others.get(others.len() / 2), others.last()) {
        let busy = others.iter().filter(|&&o| o > BUSY).count();
        let _ = writeln!(
            out,
            "Load: other processes used {:.0}% of the CPUs in the median measurement, {:.0}% at \
             most; {busy} of {} measurements ran while they used more than {:.0}% (marked *).",
            median * 100.0,
            max * 100.0,
            others.len(),
            BUSY * 100.0
        );
    }
    let mut mallocs: Vec<&str> = run
        .records
        .iter()
        .filter_map(|r| r.get("malloc").and_then(Value::as_str))
        .collect();
    mallocs.sort_unstable();
    mallocs.dedup();
    match mallocs.as_slice() {
        [] => {}
        [one] => {
            let _ = writeln!(out, "malloc: every measuring process ran with {one}.");
        }
        several => {
            let _ = writeln!(
                out,
                "malloc: the measuring processes ran with different settings ({}).",
                several.join("; ")
            );
        }
    }
    out.push('\n');
}

fn throughput(run: &Run<'_>, out: &mut String) {
    let v = |i: &str| {
        let v = run.version(i);
        if v.is_empty() {
            String::new()
        } else {
            format!(" {v}")
        }
    };
    let rows = [
        Row {
            label: "ours (async)".into(),
            implementation: "ours",
            write: Some("write"),
            read: Some("read"),
            ours_write: "ours",
        },
        Row {
            label: "ours (async, read_into)".into(),
            implementation: "ours",
            write: None,
            read: Some("read_into"),
            ours_write: "ours",
        },
        Row {
            label: "ours (blocking)".into(),
            implementation: "ours-blocking",
            write: Some("write"),
            read: Some("read"),
            ours_write: "ours",
        },
        Row {
            label: "ours (blocking, read_into)".into(),
            implementation: "ours-blocking",
            write: None,
            read: Some("read_into"),
            ours_write: "ours",
        },
        Row {
            label: format!("zarrs{} (fsync; typed read)", v("zarrs")),
            implementation: "zarrs",
            write: Some("write"),
            read: Some("read"),
            ours_write: "ours-durable",
        },
        Row {
            label: "zarrs (read_into)".into(),
            implementation: "zarrs",
            write: None,
            read: Some("read_into"),
            ours_write: "ours-durable",
        },
        Row {
            label: format!("tensorstore{} (fsync)", v("tensorstore")),
            implementation: "tensorstore",
            write: Some("write"),
            read: Some("read"),
            ours_write: "ours-durable",
        },
        Row {
            label: format!("zarr-python{} (no fsync)", v("zarr-python")),
            implementation: "zarr-python",
            write: Some("write"),
            read: Some("read"),
            ours_write: "ours",
        },
    ];
    out.push_str(
        "### Throughput\n\nMiB/s of decoded data (median), then in brackets the ratio to ours \
         like for like (the same API kind; writes: ours default against writers that do not \
         fsync, ours durable against those that do) and the ratio to the limit (raw zstd on \
         all cores for W1 and W2, memcpy into a fresh buffer for W3 reads). * = other \
         processes were busy.\n\n",
    );
    out.push_str("| MiB/s | W1 write | W1 read | W2 write | W2 read | W3 write | W3 read |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for row in &rows {
        if run
            .records
            .iter()
            .all(|r| s(r, "implementation") != row.implementation)
        {
            continue;
        }
        let mut line = format!("| {} |", row.label);
        for w in WORKLOADS {
            for (op, write) in [(row.write, true), (row.read, false)] {
                let cell = op
                    .and_then(|op| run.get(row.implementation, w, op))
                    .map(|r| {
                        let mib = f(r, "mib_s").unwrap_or(0.0);
                        let ours = if write {
                            run.mib(row.ours_write, w, "write")
                        } else {
                            run.mib("ours", w, s(r, "op"))
                        };
                        let mut ratios = Vec::new();
                        if let Some(ours) = ours {
                            ratios.push(format!("{:.2}", mib / ours));
                        }
                        if let Some(limit) = run.limit_of(w, write) {
                            ratios.push(format!("{:.2}", mib / limit));
                        }
                        format!("{}{} ({})", int(mib), busy_mark(r), ratios.join(", "))
                    });
                let _ = write!(line, " {} |", cell.unwrap_or_default());
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    // Our durable writes have their own row: place them after ours.
    let durable = |i: &str, label: &str| -> Option<String> {
        let mut line = format!("| {label} |");
        let mut any = false;
        for w in WORKLOADS {
            let cell = run.get(i, w, "write").map(|r| {
                any = true;
                let mib = f(r, "mib_s").unwrap_or(0.0);
                let mut ratios = Vec::new();
                if let Some(ours) = run.mib("ours-durable", w, "write") {
                    ratios.push(format!("{:.2}", mib / ours));
                }
                if let Some(limit) = run.limit_of(w, true) {
                    ratios.push(format!("{:.2}", mib / limit));
                }
                format!("{}{} ({})", int(mib), busy_mark(r), ratios.join(", "))
            });
            let _ = write!(line, " {} | |", cell.unwrap_or_default());
        }
        any.then_some(line)
    };
    for (i, label) in [
        ("ours-durable", "ours (async), durable write (fsync)"),
        (
            "ours-blocking-durable",
            "ours (blocking), durable write (fsync)",
        ),
    ] {
        if let Some(line) = durable(i, label) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    // The limits.
    let limit_cell = |r: Option<&Value>| {
        r.map(|r| format!("{}{}", int(f(r, "mib_s").unwrap_or(0.0)), busy_mark(r)))
            .unwrap_or_default()
    };
    for threads in [run.cores, 1] {
        if threads == 1 && run.cores == 1 {
            continue;
        }
        let _ = writeln!(
            out,
            "| limit: raw zstd(1), {threads} thread{} (W2: its inner chunks) | {} | {} | {} | {} | | |",
            if threads == 1 { "" } else { "s" },
            limit_cell(run.limit("W1", "zstd_compress", threads)),
            limit_cell(run.limit("W1", "zstd_decompress", threads)),
            limit_cell(run.limit("W2", "zstd_compress", threads)),
            limit_cell(run.limit("W2", "zstd_decompress", threads)),
        );
    }
    let _ = writeln!(
        out,
        "| reference: raw zstd(1), rows copied into a new buffer, {} threads | | {} | | {} | | |",
        run.cores,
        limit_cell(run.limit("W1", "zstd_decompress_fresh", run.cores)),
        limit_cell(run.limit("W2", "zstd_decompress_fresh", run.cores)),
    );
    let _ = writeln!(
        out,
        "| limit: memcpy into a fresh buffer | | | | | | {} |",
        limit_cell(run.limit("W3", "memcpy_fresh", 1))
    );
    let _ = writeln!(
        out,
        "| limit: memcpy into a pre-faulted buffer | | | | | | {} |",
        limit_cell(run.limit("W3", "memcpy_prefaulted", 1))
    );
    for threads in [run.cores, 1] {
        if threads == 1 && run.cores == 1 {
            continue;
        }
        let _ = writeln!(
            out,
            "| limit: `std::fs::read` of our files, {threads} thread{} (MiB/s of files) | | {} | | {} | | {} |",
            if threads == 1 { "" } else { "s" },
            limit_cell(run.limit("W1", "fs_read", threads)),
            limit_cell(run.limit("W2", "fs_read", threads)),
            limit_cell(run.limit("W3", "fs_read", threads)),
        );
    }
    out.push('\n');
}

fn latency(run: &Run<'_>, out: &mut String) {
    let columns = [
        ("W4", "serial", "W4 one at a time"),
        ("W4", "concurrent", "W4 all in flight"),
        ("W5", "slab_w1", "W5 slab of W1"),
        ("W5", "slab_w2", "W5 slab of W2"),
    ];
    out.push_str(
        "### Latency\n\nMilliseconds (median), ratio to ours (async) in brackets. W4 reads \
         random inner chunks of W2 (the same list for everyone); W5 reads the slab \
         [0:side, 200/512 side, 0:side].\n\n",
    );
    let _ = writeln!(out, "| ms | {} |", columns.map(|c| c.2).join(" | "));
    out.push_str("|---|---|---|---|---|\n");
    for (i, label) in [
        ("ours", "ours (async)"),
        ("ours-blocking", "ours (blocking)"),
        ("zarrs", "zarrs"),
        ("tensorstore", "tensorstore"),
        ("zarr-python", "zarr-python"),
    ] {
        if columns.iter().all(|(w, op, _)| run.get(i, w, op).is_none()) {
            continue;
        }
        let mut line = format!("| {label} |");
        for (w, op, _) in columns {
            let cell = run.get(i, w, op).map(|r| {
                let t = f(r, "median_s").unwrap_or(0.0);
                match run.median("ours", w, op) {
                    Some(ours) => format!("{}{} ({:.2})", ms(t), busy_mark(r), t / ours),
                    None => format!("{}{}", ms(t), busy_mark(r)),
                }
            });
            let _ = write!(line, " {} |", cell.unwrap_or_default());
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
}

fn memory(run: &Run<'_>, out: &mut String) {
    out.push_str(
        "### Peak memory of whole-array reads\n\nPeak resident memory of the reading process \
         (`VmHWM`) over the output's size; in brackets, the growth over the process's \
         resident memory before the first read (interpreter and libraries for the Python \
         peers; `read_into` counts its buffer there).\n\n",
    );
    out.push_str("| peak RSS / output | W1 | W2 | W3 |\n|---|---|---|---|\n");
    for (i, op, label) in [
        ("ours", "read", "ours (async)"),
        ("ours", "read_into", "ours (async, read_into)"),
        ("ours-blocking", "read", "ours (blocking)"),
        ("zarrs", "read", "zarrs"),
        ("zarrs", "read_into", "zarrs (read_into)"),
        ("tensorstore", "read", "tensorstore"),
        ("zarr-python", "read", "zarr-python"),
    ] {
        if WORKLOADS.iter().all(|w| run.get(i, w, op).is_none()) {
            continue;
        }
        let mut line = format!("| {label} |");
        for w in WORKLOADS {
            let cell = run.get(i, w, op).and_then(|r| {
                let bytes = f(r, "bytes")?;
                let peak = f(r, "peak_rss")?;
                let base = f(r, "base_rss").unwrap_or(0.0);
                Some(format!(
                    "{:.2} ({:.2})",
                    peak / bytes,
                    (peak - base) / bytes
                ))
            });
            let _ = write!(line, " {} |", cell.unwrap_or_default());
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
}

/// A row of W6's table.
struct StringsRow {
    label: String,
    implementation: &'static str,
    write: Option<&'static str>,
    read: Option<&'static str>,
    /// Which of our records a write is compared with.
    ours_write: (&'static str, &'static str),
}

/// W6: MiB/s of UTF-8 value bytes and millions of strings per second.
fn strings(run: &Run<'_>, out: &mut String) {
    let Some(first) = run
        .records
        .iter()
        .find(|r| ok(r) && s(r, "workload") == "W6" && r.get("elements").is_some())
    else {
        return;
    };
    let v = |i: &str| {
        let v = run.version(i);
        if v.is_empty() { v } else { format!(" {v}") }
    };
    let elements = f(first, "elements").unwrap_or(0.0);
    let bytes = f(first, "bytes").unwrap_or(0.0);
    let reps = run
        .get("ours", "W6", "read")
        .and_then(|r| r.get("reps").and_then(Value::as_u64))
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "### W6: strings\n\n{} strings of 0 to 16 bytes ({} MiB of UTF-8 values, {:.2} bytes \
         on average), a 1-D `string` array in chunks of {}, `vlen-utf8` then zstd(1) \
         (zarr-python's default string encoding); medians of {reps} repetitions. MiB/s count \
         the strings' UTF-8 bytes only (not their offsets or lengths); M strings/s are millions \
         of strings per second. In brackets, the ratio to ours like for like (writes: ours \
         default against writers that do not fsync, ours durable against those that do; \
         reads: ours `read_strings`). Peak RSS: the reading process's `VmHWM` in MiB, in \
         brackets its growth from before the first read. * = other processes were busy.\n",
        int(elements),
        int(bytes / f64::from(1 << 20)),
        bytes / elements.max(1.0),
        int(f(first, "chunk_elements").unwrap_or(0.0)),
    );
    let rows = [
        StringsRow {
            label: "ours (async; `read_strings` into Arrow layout)".into(),
            implementation: "ours",
            write: Some("write"),
            read: Some("read"),
            ours_write: ("ours", "write"),
        },
        StringsRow {
            label: "ours (async), durable write (fsync)".into(),
            implementation: "ours-durable",
            write: Some("write"),
            read: None,
            ours_write: ("ours-durable", "write"),
        },
        StringsRow {
            label: format!("zarrs{} (fsync; read into `Vec<String>`)", v("zarrs")),
            implementation: "zarrs",
            write: Some("write"),
            read: Some("read"),
            ours_write: ("ours-durable", "write"),
        },
        StringsRow {
            label: "zarrs (read as `ArrayBytes`: bytes and offsets)".into(),
            implementation: "zarrs",
            write: None,
            read: Some("read_bytes"),
            ours_write: ("ours-durable", "write"),
        },
        StringsRow {
            label: format!("zarr-python{} (no fsync)", v("zarr-python")),
            implementation: "zarr-python",
            write: Some("write"),
            read: Some("read"),
            ours_write: ("ours", "write"),
        },
        StringsRow {
            label: "ours only: ZEP0007 `zarr-rs.vlen_arrow` then zstd(1) (async; no other \
                    implementation reads it)"
                .into(),
            implementation: "ours",
            write: Some("write_arrow"),
            read: Some("read_arrow"),
            ours_write: ("ours", "write"),
        },
    ];
    out.push_str(
        "| W6 | write MiB/s | write M strings/s | read MiB/s | read M strings/s | read peak RSS, MiB |\n\
         |---|---|---|---|---|---|\n",
    );
    let rate = |r: &Value, ours: Option<f64>| {
        let mib = f(r, "mib_s").unwrap_or(0.0);
        let ratio = ours
            .map(|o| format!(" ({:.2})", mib / o))
            .unwrap_or_default();
        (
            format!("{}{}{ratio}", int(mib), busy_mark(r)),
            format!("{:.1}", f(r, "elements_s").unwrap_or(0.0) / 1e6),
        )
    };
    for row in &rows {
        let write = row
            .write
            .and_then(|op| run.get(row.implementation, "W6", op));
        let read = row
            .read
            .and_then(|op| run.get(row.implementation, "W6", op));
        if write.is_none() && read.is_none() {
            continue;
        }
        let (write_mib, write_n) = write
            .map(|r| rate(r, run.mib(row.ours_write.0, "W6", row.ours_write.1)))
            .unwrap_or_default();
        let (read_mib, read_n) = read
            .map(|r| rate(r, run.mib("ours", "W6", "read")))
            .unwrap_or_default();
        let rss = read
            .and_then(|r| {
                let peak = f(r, "peak_rss")?;
                let base = f(r, "base_rss").unwrap_or(0.0);
                let mib = |x: f64| int(x / f64::from(1 << 20));
                Some(format!("{} ({})", mib(peak), mib(peak - base)))
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | {write_mib} | {write_n} | {read_mib} | {read_n} | {rss} |",
            row.label
        );
    }
    out.push('\n');
}

/// The cross-check of `workload` (W2 or W6).
fn cross_check(run: &Run<'_>, workload: &str, out: &mut String) {
    let cross: Vec<&Value> = run
        .records
        .iter()
        .filter(|r| s(r, "op") == "cross_read" && s(r, "workload") == workload)
        .collect();
    if cross.is_empty() {
        return;
    }
    let mut names: Vec<&str> = Vec::new();
    for r in &cross {
        for name in [s(r, "implementation"), s(r, "writer")] {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    out.push_str(if workload == "W6" {
        "### Cross-check of W6\n\nEach implementation read every other one's W6 array \
         (`vlen-utf8`, zstd) and compared every string with the input.\n\n"
    } else {
        "### Cross-check\n\nEach implementation read every other one's W2 array (sharded, \
         zstd) and compared all values with the input.\n\n"
    });
    let _ = writeln!(out, "| reader \\ writer | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(names.len()));
    for reader in &names {
        let mut line = format!("| {reader} |");
        for writer in &names {
            let cell = if reader == writer {
                "(own)".to_owned()
            } else {
                match cross
                    .iter()
                    .find(|r| s(r, "implementation") == *reader && s(r, "writer") == *writer)
                {
                    Some(r) if ok(r) && r.get("verified") == Some(&Value::Bool(true)) => {
                        "equal".into()
                    }
                    Some(_) => "**FAILED**".into(),
                    None => String::new(),
                }
            };
            let _ = write!(line, " {cell} |");
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
}

/// A target: a measured ratio against the required one.
struct Target {
    what: String,
    /// The measured value as text, or why there is none.
    measured: Result<(f64, String), String>,
    /// `measured >= required` (or `<=` when `at_most`).
    required: f64,
    at_most: bool,
}

fn best(
    values: impl IntoIterator<Item = Option<(f64, &'static str)>>,
) -> Option<(f64, &'static str)> {
    values
        .into_iter()
        .flatten()
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

fn targets(run: &Run<'_>, out: &mut String) {
    let mut list: Vec<Target> = Vec::new();
    let missing = |what: &str| Err(format!("not measured ({what})"));
    let peers_read = |w: &str| {
        best(["zarrs", "tensorstore", "zarr-python"].map(|p| run.mib(p, w, "read").map(|m| (m, p))))
    };
    let durable_peers =
        |w: &str| best(["zarrs", "tensorstore"].map(|p| run.mib(p, w, "write").map(|m| (m, p))));
    let mut versus =
        |what: String, ours: Option<f64>, other: Option<(f64, &str)>, required: f64| {
            let measured = match (ours, other) {
                (Some(ours), Some((other, name))) => Ok((
                    ours / other,
                    format!("{} / {} ({name})", int(ours), int(other)),
                )),
                (None, _) => missing("ours"),
                (_, None) => missing("peer"),
            };
            list.push(Target {
                what,
                measured,
                required,
                at_most: false,
            });
        };
    for w in ["W1", "W2", "W3"] {
        let factor = if w == "W3" { 1.0 } else { 1.3 };
        versus(
            format!("{w} read: ours (async) >= {factor}x the fastest peer"),
            run.mib("ours", w, "read"),
            peers_read(w),
            factor,
        );
        versus(
            format!("{w} read into a buffer: ours >= {factor}x zarrs"),
            run.mib("ours", w, "read_into"),
            run.mib("zarrs", w, "read_into").map(|m| (m, "zarrs")),
            factor,
        );
        versus(
            format!("{w} write without fsync: ours >= {factor}x zarr-python"),
            run.mib("ours", w, "write"),
            run.mib("zarr-python", w, "write")
                .map(|m| (m, "zarr-python")),
            factor,
        );
        versus(
            format!("{w} write with fsync: ours durable >= {factor}x the fastest peer"),
            run.mib("ours-durable", w, "write"),
            durable_peers(w),
            factor,
        );
        if w == "W3" {
            versus(
                "W3 read: ours >= 0.5x memcpy into a fresh buffer".into(),
                run.mib("ours", w, "read"),
                run.limit("W3", "memcpy_fresh", 1)
                    .and_then(|r| f(r, "mib_s"))
                    .map(|m| (m, "memcpy")),
                0.5,
            );
        } else {
            versus(
                format!("{w} read: ours >= 0.85x raw zstd decompression"),
                run.mib("ours", w, "read"),
                run.limit_of(w, false).map(|m| (m, "raw zstd")),
                0.85,
            );
            versus(
                format!("{w} write: ours >= 0.85x raw zstd compression"),
                run.mib("ours", w, "write"),
                run.limit_of(w, true).map(|m| (m, "raw zstd")),
                0.85,
            );
        }
    }
    let mut time_target =
        |what: &str, w: &str, op: &str, peer: Option<(f64, &str)>, factor: f64| {
            let measured = match (run.median("ours", w, op), peer) {
                (Some(ours), Some((other, name))) => Ok((
                    ours / other,
                    format!("{} ms / {} ms ({name})", ms(ours), ms(other)),
                )),
                (None, _) => missing("ours"),
                (_, None) => missing("peer"),
            };
            list.push(Target {
                what: what.to_owned(),
                measured,
                required: factor,
                at_most: true,
            });
        };
    let time = |i: &'static str, w: &str, op: &str| run.median(i, w, op).map(|t| (t, i));
    time_target(
        "W4 all in flight: ours <= 0.8x tensorstore's time",
        "W4",
        "concurrent",
        time("tensorstore", "W4", "concurrent"),
        0.8,
    );
    time_target(
        "W4 one at a time: ours <= zarrs' time",
        "W4",
        "serial",
        time("zarrs", "W4", "serial"),
        1.0,
    );
    for op in ["slab_w1", "slab_w2"] {
        let fastest = ["zarrs", "tensorstore", "zarr-python"]
            .into_iter()
            .filter_map(|p| time(p, "W5", op))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        time_target(
            &format!(
                "W5 {}: ours <= the fastest peer's latency",
                op.replace('_', " of ").replace("w", "W")
            ),
            "W5",
            op,
            fastest,
            1.0,
        );
    }
    for w in WORKLOADS {
        let measured = run
            .get("ours", w, "read")
            .and_then(|r| Some((f(r, "peak_rss")? / f(r, "bytes")?, f(r, "peak_rss")?)))
            .map(|(ratio, peak)| {
                (
                    ratio,
                    format!("{} MiB peak", int(peak / f64::from(1 << 20))),
                )
            })
            .ok_or_else(|| "not measured (ours)".to_owned());
        list.push(Target {
            what: format!("{w} whole-array read: peak memory <= 1.1x the output"),
            measured,
            required: 1.1,
            at_most: true,
        });
    }

    let met = list
        .iter()
        .filter(|t| {
            t.measured.as_ref().is_ok_and(|(v, _)| {
                if t.at_most {
                    *v <= t.required
                } else {
                    *v >= t.required
                }
            })
        })
        .count();
    let measured = list.iter().filter(|t| t.measured.is_ok()).count();
    let _ = writeln!(
        out,
        "### Targets (issue #5)\n\n{met} of {measured} measured targets met ({} not measurable \
         in this run).\n",
        list.len() - measured
    );
    out.push_str("| target | measured | ratio | required | |\n|---|---|---|---|---|\n");
    for t in &list {
        let (detail, ratio, verdict) = match &t.measured {
            Ok((v, detail)) => {
                let met = if t.at_most {
                    *v <= t.required
                } else {
                    *v >= t.required
                };
                (
                    detail.clone(),
                    format!("{v:.3}"),
                    if met { "met" } else { "**missed**" },
                )
            }
            Err(why) => (why.clone(), String::new(), "n/a"),
        };
        let _ = writeln!(
            out,
            "| {} | {detail} | {ratio} | {} {} | {verdict} |",
            t.what,
            if t.at_most { "<=" } else { ">=" },
            t.required
        );
    }
    out.push('\n');
}

fn failures(run: &Run<'_>, out: &mut String) {
    let failed: Vec<&Value> = run.records.iter().filter(|r| !ok(r)).collect();
    if failed.is_empty() {
        return;
    }
    out.push_str("### Failed measurements\n\n");
    for r in failed {
        let _ = writeln!(
            out,
            "- {} {} {}: {}",
            s(r, "workload"),
            s(r, "op"),
            s(r, "implementation"),
            s(r, "error")
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rec(i: &str, w: &str, op: &str, median: f64, mib: f64) -> Value {
        json!({"implementation": i, "workload": w, "op": op, "median_s": median,
               "min_s": median, "mib_s": mib, "bytes": 100.0, "other_cpu": 0.0,
               "threads": 2, "version": "1", "side": 64, "reps": 2, "verified": true})
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(int(1234567.4), "1,234,567");
        assert_eq!(int(999.0), "999");
        assert_eq!(int(0.0), "0");
    }

    #[test]
    fn targets_compare_ours_with_the_fastest_peer() {
        let records = vec![
            rec("ours", "W1", "read", 1.0, 1300.0),
            rec("zarrs", "W1", "read", 1.0, 900.0),
            rec("tensorstore", "W1", "read", 1.0, 1000.0),
            rec("ours", "W4", "serial", 0.2, 1.0),
            rec("zarrs", "W4", "serial", 0.1, 1.0),
        ];
        let text = render(&records);
        assert!(
            text.contains("| W1 read: ours (async) >= 1.3x the fastest peer | 1,300 / 1,000 (tensorstore) | 1.300 | >= 1.3 | met |"),
            "{text}"
        );
        assert!(
            text.contains("| W4 one at a time: ours <= zarrs' time | 200.0 ms / 100.0 ms (zarrs) | 2.000 | <= 1 | **missed** |"),
            "{text}"
        );
    }

    #[test]
    fn w6_alone_has_its_own_table_and_cross_check() {
        let w6 = |i: &str, op: &str, mib: f64| {
            let mut r = rec(i, "W6", op, 0.5, mib);
            r["elements"] = 1_000_000.into();
            r["chunk_elements"] = 100_000.into();
            r["elements_s"] = 2e6.into();
            r["bytes"] = 7_580_000.into();
            r
        };
        let mut read = w6("ours", "read", 200.0);
        read["peak_rss"] = (50u64 << 20).into();
        read["base_rss"] = (10u64 << 20).into();
        let mut cross = w6("zarrs", "cross_read", 100.0);
        cross["writer"] = "ours".into();
        let records = vec![
            w6("ours", "write", 100.0),
            w6("ours-durable", "write", 50.0),
            w6("zarrs", "write", 75.0),
            read,
            w6("zarrs", "read", 100.0),
            w6("zarrs", "read_bytes", 150.0),
            w6("ours", "read_arrow", 300.0),
            cross,
        ];
        let text = render(&records);
        assert!(!text.contains("malloc:"), "{text}");
        let mut records = records;
        for r in &mut records {
            r["malloc"] = "glibc defaults".into();
        }
        let text = render(&records);
        assert!(
            text.contains("malloc: every measuring process ran with glibc defaults."),
            "{text}"
        );
        records[0]["malloc"] = "GLIBC_TUNABLES=x".into();
        assert!(
            render(&records).contains("different settings (GLIBC_TUNABLES=x; glibc defaults)"),
            "{text}"
        );
        assert!(text.contains("### W6: strings"), "{text}");
        assert!(
            text.contains("1,000,000 strings of 0 to 16 bytes"),
            "{text}"
        );
        assert!(text.contains("chunks of 100,000"), "{text}");
        assert!(
            text.contains("| ours (async; `read_strings` into Arrow layout) | 100 (1.00) | 2.0 | 200 (1.00) | 2.0 | 50 (40) |"),
            "{text}"
        );
        // zarrs fsyncs: its write is compared with our durable write.
        assert!(
            text.contains("| 75 (1.50) | 2.0 | 100 (0.50) | 2.0 |"),
            "{text}"
        );
        assert!(text.contains("|  |  | 150 (0.75) | 2.0 |"), "{text}");
        assert!(
            text.contains("(async; no other implementation reads it) |  |  | 300 (1.50) | 2.0 |"),
            "{text}"
        );
        assert!(text.contains("### Cross-check of W6"), "{text}");
        assert!(text.contains("| zarrs | (own) | equal |"), "{text}");
        // The sections of W1-W5 are left out when only W6 ran.
        for absent in [
            "### Throughput",
            "### Latency",
            "### Targets",
            "Array 64^3",
            "### Cross-check\n",
        ] {
            assert!(!text.contains(absent), "{absent}: {text}");
        }
    }

    #[test]
    fn a_failed_cross_check_shows() {
        let bad = json!({"implementation": "zarrs", "workload": "W2", "op": "cross_read",
                         "writer": "ours", "error": "value 3 is 1, expected 2"});
        let mut good = rec("ours", "W2", "cross_read", 1.0, 1.0);
        good["writer"] = "zarrs".into();
        let text = render(&[good, bad]);
        assert!(text.contains("| zarrs | **FAILED** | (own) |"), "{text}");
        assert!(text.contains("| ours | (own) | equal |"), "{text}");
        assert!(text.contains("value 3 is 1, expected 2"), "{text}");
    }
}
