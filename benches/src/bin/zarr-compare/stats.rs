//! What the measuring process records about itself and the machine: timings, CPU time used
//! by this process and by everything else (so a measurement taken on a busy machine says
//! so), and resident memory.

use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Busy CPU time of the whole machine so far, in clock ticks (`/proc/stat`'s first line:
/// user, nice, system, irq, softirq and steal; idle and iowait are not busy).
fn machine_busy_ticks() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let line = text.lines().next().unwrap_or_default();
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    if fields.len() < 8 || !line.starts_with("cpu ") {
        bail!("unexpected first line of /proc/stat: {line:?}");
    }
    // user nice system idle iowait irq softirq steal
    Ok(fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7])
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// CPU time (user plus system, all threads) this process has used, in seconds.
fn own_cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data; getrusage fills it and cannot fail for RUSAGE_SELF.
    let u = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// A field of `/proc/self/status` in bytes (the file gives KiB).
fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// The most memory this process has had resident, in bytes (`VmHWM`). Not `ru_maxrss`:
/// Linux carries that over from the parent through fork and exec, so a child would report
/// the orchestrator's peak.
pub(crate) fn peak_rss_bytes() -> u64 {
    status_bytes("VmHWM:")
}

/// The memory this process has resident now, in bytes (`VmRSS`).
pub(crate) fn current_rss_bytes() -> u64 {
    status_bytes("VmRSS:")
}

/// The number of cores this process may use.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How the machine's CPUs were used during a measurement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Load {
    /// CPU time used by other processes, as a fraction of all cores' time.
    pub(crate) other_cpu: f64,
    /// CPU time used by this process, in cores (1.0 = one core busy throughout).
    pub(crate) own_cores: f64,
}

/// A running measurement of [`Load`].
pub(crate) struct LoadMeter {
    busy_ticks: u64,
    own_cpu: f64,
    started: Instant,
}

impl LoadMeter {
    pub(crate) fn start() -> Result<Self> {
        Ok(Self {
            busy_ticks: machine_busy_ticks()?,
            own_cpu: own_cpu_seconds(),
            started: Instant::now(),
        })
    }

    pub(crate) fn stop(self) -> Result<Load> {
        let wall = self.started.elapsed().as_secs_f64().max(1e-9);
        let busy = (machine_busy_ticks()? - self.busy_ticks) as f64 / clock_ticks_per_second();
        let own = own_cpu_seconds() - self.own_cpu;
        Ok(Load {
            other_cpu: ((busy - own) / (wall * cores() as f64)).clamp(0.0, 1.0),
            own_cores: own / wall,
        })
    }
}

/// The times of the repetitions of one measurement, and the load during them.
#[derive(Debug)]
pub(crate) struct Timing {
    pub(crate) seconds: Vec<f64>,
    pub(crate) load: Load,
}

impl Timing {
    pub(crate) fn median(&self) -> f64 {
        let mut s = self.seconds.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        }
    }

    pub(crate) fn min(&self) -> f64 {
        self.seconds.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// Time `reps` runs of `run` (the caller does any warm-up first), measuring the load over
/// all of them.
pub(crate) fn time_reps(reps: usize, mut run: impl FnMut() -> Result<()>) -> Result<Timing> {
    let meter = LoadMeter::start()?;
    let mut seconds = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        run()?;
        seconds.push(started.elapsed().as_secs_f64());
    }
    Ok(Timing {
        seconds,
        load: meter.stop()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_min() {
        let t = Timing {
            seconds: vec![3.0, 1.0, 2.0, 10.0],
            load: Load {
                other_cpu: 0.0,
                own_cores: 1.0,
            },
        };
        assert_eq!(t.median(), 2.5);
        assert_eq!(t.min(), 1.0);
    }

    #[test]
    fn a_busy_loop_counts_as_own_cpu_not_other() {
        // Spin until the process has used 0.3 s of CPU (however long that takes on a busy
        // machine, up to a minute): the meter must count it as our own.
        let meter = LoadMeter::start().unwrap();
        let started = Instant::now();
        let cpu_before = own_cpu_seconds();
        let mut x = 0u64;
        while own_cpu_seconds() - cpu_before < 0.3 && started.elapsed().as_secs() < 60 {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        let load = meter.stop().unwrap();
        let wall = started.elapsed().as_secs_f64();
        assert!(load.own_cores * wall >= 0.25, "{load:?} over {wall} s");
        assert!((0.0..=1.0).contains(&load.other_cpu), "{load:?}");
        assert!(current_rss_bytes() > 0);
        // 64 MiB touched raise the peak by about that much.
        let before = peak_rss_bytes();
        let big = vec![1u8; 64 << 20];
        std::hint::black_box(&big);
        assert!(
            peak_rss_bytes() >= before.max(current_rss_bytes()),
            "peak below current"
        );
        assert!(peak_rss_bytes() >= 64 << 20);
    }
}
