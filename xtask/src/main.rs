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

use std::process::Command;

use anyhow::{Context, Result, bail};

mod bench;
mod fixtures;
mod servers;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    match task {
        "ci" => ci(),
        "fixtures" => fixtures::run(&args[1..]),
        "s3-server" => s3_server(),
        "bench" => bench::run(&args[1..]),
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
    let mut envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    envs.push(NO_INCREMENTAL);
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
