//! Repository automation, run as `cargo xtask <task>`.
//!
//! - `ci`: the whole CI sequence (format check, clippy with warnings denied, tests, doc tests,
//!   the comparison harness's smoke run, rustdoc with warnings denied). This is what
//!   `.ci/run` and the README's test command run.
//! - `fixtures`: regenerate the fixture corpus written by zarr-python and tensorstore.
//! - `s3-server`: start the S3 test server (moto) and print the variables that point the tests
//!   at it and at the interop peers' Python, for running those tests by hand.
//! - `bench`: the side-by-side comparison with zarrs, tensorstore and zarr-python (issue #5);
//!   `bench --smoke` is the reduced run that `ci` includes.
//! - `fuzz [ROUNDS]`: run the test suite's property tests ROUNDS times (default 10), each
//!   round with a fresh random seed, printing the seed of any round that fails.

use std::process::Command;

use anyhow::{Context, Result, bail};

mod bench;
mod fixtures;
mod java;
mod servers;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    match task {
        "ci" => ci(),
        "fixtures" => fixtures::run(&args[1..]),
        "s3-server" => s3_server(),
        "bench" => bench::run(&args[1..]),
        "fuzz" => fuzz(&args[1..]),
        "help" | "--help" | "-h" => {
            print_help();
            Ok(())
        }
        other => {
            print_help();
            bail!("unknown task `{other}`")
        }
    }
}

fn print_help() {
    eprintln!(
        "usage: cargo xtask <task>\n\n\
         tasks:\n  \
         ci        format check, clippy -D warnings, tests, doc tests, the comparison\n            \
         harness's smoke run, rustdoc -D warnings\n  \
         bench     the comparison with zarrs, tensorstore, zarr-python and the machine's\n            \
         limits (results in target/bench/; --smoke for the quick check)\n  \
         fixtures  regenerate the fixture corpus with pinned zarr-python and tensorstore\n  \
         fuzz      run the property tests ROUNDS times (default 10) with fresh random seeds\n  \
         s3-server start the S3 test server (moto) and print the variables for the S3 and\n            \
         interop tests"
    );
}

/// The workspace root (the parent of this crate's directory).
pub(crate) fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Run `cargo` with `args` in the workspace root, failing if it fails.
pub(crate) fn cargo(args: &[&str], envs: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("==> cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// CI builds from a clean clone once: incremental caches would only cost disk and time (a
/// long-lived `target/` held 16 GB of them).
const NO_INCREMENTAL: (&str, &str) = ("CARGO_INCREMENTAL", "0");

/// What a clean `cargo xtask ci` needs on the disk holding `target/`, with room to spare:
/// the debug build of every test measured 2.5 GB once the dev profile dropped full debug
/// info (with it, each test binary weighed ~200 MB and a run on a nearly full disk died in
/// the linker), the harness's smoke run included, plus 0.3 GB of Python venv.
const CI_DISK_NEED_GIB: u64 = 10;

/// The variable that seeds every property test's random cases (proptest reads it).
const PROPTEST_SEED_VAR: &str = "PROPTEST_RNG_SEED";

/// The seed CI gives the property tests, so that a run on a clean clone tests the same cases
/// as the run before it and its verdict does not depend on luck. A plain `cargo test` draws
/// fresh cases each time, and `cargo xtask fuzz` runs many rounds of fresh cases; a failure
/// either finds is kept in the test's `.proptest-regressions` file, which CI replays first.
const CI_PROPTEST_SEED: &str = "20261121";

fn ci() -> Result<()> {
    warn_if_disk_is_short();
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[NO_INCREMENTAL],
    )?;
    // One Python environment serves the object-store tests (a real S3 server) and the interop
    // tests (zarr-python and tensorstore as peers); neither kind skips in CI.
    let venv = servers::TestVenv::ensure().context(
        "cannot build the test Python environment (target/test-venv) that the S3 and interop \
         tests need",
    )?;
    let s3 = servers::start_s3(&venv)
        .context("cannot start the S3 test server (moto) that the object-store tests need")?;
    let mut env = s3.env();
    env.extend(venv.env());
    // lz4-java, the peer of the N5 lz4 tests (which do not skip in CI either).
    env.extend(java::ensure_lz4_java().context("cannot set up the lz4-java test peer")?);
    let mut envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    envs.push(NO_INCREMENTAL);
    // A seed set by the caller wins: it is how a failure `fuzz` found is replayed.
    if std::env::var_os(PROPTEST_SEED_VAR).is_none() {
        envs.push((PROPTEST_SEED_VAR, CI_PROPTEST_SEED));
    }
    cargo(&["test", "--workspace", "--all-targets"], &envs)?;
    cargo(&["test", "--workspace", "--doc"], &envs)?;
    drop(s3);
    // The comparison harness's smoke run, so it cannot rot: every implementation (ours,
    // zarrs, tensorstore, zarr-python) writes, reads and reads the others' data; any error or
    // difference fails CI.
    bench::smoke(&venv).context("the comparison harness's smoke run failed")?;
    cargo(
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings"), NO_INCREMENTAL],
    )?;
    eprintln!("==> ci: all steps passed");
    Ok(())
}

/// Run the workspace's tests (which hold every property test) `ROUNDS` times, each round with
/// a fresh seed. The interop and S3 tests skip themselves here, as in any run without their
/// environment; `ci` runs them.
fn fuzz(args: &[String]) -> Result<()> {
    let rounds: u32 = match args.first() {
        None => 10,
        Some(text) => text
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("ROUNDS must be a positive number, not `{text}`"))?,
    };
    let mut failed = Vec::new();
    for round in 1..=rounds {
        let seed = fresh_seed(round).to_string();
        eprintln!("==> fuzz round {round} of {rounds}: {PROPTEST_SEED_VAR}={seed}");
        let result = cargo(
            &["test", "--workspace", "--all-targets", "--quiet"],
            &[(PROPTEST_SEED_VAR, &seed), NO_INCREMENTAL],
        );
        if let Err(err) = result {
            eprintln!("==> fuzz round {round} failed: {err:#}");
            failed.push(seed);
        }
    }
    if failed.is_empty() {
        eprintln!("==> fuzz: {rounds} rounds passed");
        return Ok(());
    }
    bail!(
        "{} of {rounds} rounds failed; replay one with {PROPTEST_SEED_VAR}=<seed> cargo test \
         (seeds: {}), and keep the case proptest prints in the test's .proptest-regressions file",
        failed.len(),
        failed.join(", ")
    )
}

/// A seed that differs between rounds and between runs.
fn fresh_seed(round: u32) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    // SplitMix64's finaliser spreads nearby clock readings over the whole range.
    let mut z = nanos ^ (u64::from(round) << 32) ^ u64::from(std::process::id());
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Say up front when the disk under `target/` has less room than CI needs, so a run that
/// later dies in the linker ("No space left on device", a bus error) is explained at its top.
/// Only a warning: the estimate is coarse and a warm `target/` needs far less.
fn warn_if_disk_is_short() {
    let target = workspace_root().join("target");
    let probe = if target.exists() {
        target
    } else {
        workspace_root()
    };
    let output = Command::new("df").arg("-Pk").arg(&probe).output();
    let Ok(output) = output else {
        return;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    // `df -P`: a header line, then "filesystem blocks used available capacity mount".
    let available_kib = text
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|field| field.parse::<u64>().ok());
    if let Some(kib) = available_kib {
        let gib = kib / (1024 * 1024);
        if gib < CI_DISK_NEED_GIB {
            eprintln!(
                "==> warning: {gib} GiB free under {}; a clean CI run needs about \
                 {CI_DISK_NEED_GIB} GiB (free space or run `cargo clean` first)",
                probe.display()
            );
        }
    }
}

/// Start the S3 test server and keep it running until interrupted.
fn s3_server() -> Result<()> {
    let venv = servers::TestVenv::ensure()?;
    let server = servers::start_s3(&venv)?;
    println!("# The S3 test server runs until Ctrl-C. In another shell:");
    for (key, value) in server.env().into_iter().chain(venv.env()) {
        println!("export {key}={value}");
    }
    server.wait()
}
