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

fn ci() -> Result<()> {
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
        &[],
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
    let envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    cargo(&["test", "--workspace", "--all-targets"], &envs)?;
    cargo(&["test", "--workspace", "--doc"], &envs)?;
    drop(s3);
    // The comparison harness's smoke run, so it cannot rot: every implementation (ours,
    // zarrs, tensorstore, zarr-python) writes, reads and reads the others' data; any error or
    // difference fails CI.
    bench::smoke(&venv).context("the comparison harness's smoke run failed")?;
    cargo(
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    eprintln!("==> ci: all steps passed");
    Ok(())
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
