//! `cargo xtask bench`: the side-by-side comparison of issue #5 (the `zarr-compare` binary of
//! `benches/`), from a fresh clone.
//!
//! Builds the harness (release; the dev profile for `--smoke`, so CI reuses its test build),
//! makes sure the Python environment with tensorstore and zarr-python exists (the test
//! environment, [`TestVenv`]), and runs it with results in `target/bench/`. Without a usable
//! Python the peers are skipped with a note; `cargo xtask ci` runs the smoke mode with the
//! environment it has already built, where a failing peer fails the run.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::servers::TestVenv;
use crate::{cargo, workspace_root};

const USAGE: &str = "\
usage: cargo xtask bench [--smoke] [ZARR-COMPARE OPTIONS]

  --smoke   a small array (side 64), 100,000 strings (W6) and few repetitions: checks that
            every implementation runs and reads the others' data; takes about a minute
            after the build
  other options go to zarr-compare (`--only W6` for one workload, `--reps N`, `--side N`,
            `--strings N`, `--keep-data`, `--malloc-defaults`, ...)

Results: target/bench/full.jsonl and target/bench/table.md (smoke: smoke.jsonl, smoke.md).";

/// Run the comparison with the arguments after `bench`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("{USAGE}");
        return Ok(());
    }
    let smoke = args.iter().any(|a| a == "--smoke");
    let harness = build(smoke)?;
    let python = match TestVenv::ensure() {
        Ok(venv) => Some(venv.python()),
        Err(e) => {
            eprintln!(
                "==> note: no Python environment for the peers ({e:#}); tensorstore and \
                 zarr-python are skipped"
            );
            None
        }
    };
    compare(&harness, python, args)
}

/// The smoke run of `cargo xtask ci`: the peers must run.
pub(crate) fn smoke(venv: &TestVenv) -> Result<()> {
    let harness = build(true)?;
    compare(&harness, Some(venv.python()), &["--smoke".to_owned()])
}

/// Build `zarr-compare` and return its path.
fn build(smoke: bool) -> Result<PathBuf> {
    let mut args = vec!["build", "-p", "zarr-benches", "--bin", "zarr-compare"];
    if !smoke {
        args.push("--release");
    }
    cargo(&args, &[])?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| workspace_root().join(dir))
        .unwrap_or_else(|| workspace_root().join("target"));
    let binary = target
        .join(if smoke { "debug" } else { "release" })
        .join(format!("zarr-compare{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        bail!(
            "cargo built zarr-compare but {} is not there",
            binary.display()
        );
    }
    Ok(binary)
}

fn compare(harness: &PathBuf, python: Option<PathBuf>, args: &[String]) -> Result<()> {
    let out = workspace_root().join("target").join("bench");
    let mut command = Command::new(harness);
    command.arg("--out").arg(&out).args(args);
    if let Some(python) = python {
        command.arg("--python").arg(python);
    }
    eprintln!("==> {command:?}");
    let status = command
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("running {}", harness.display()))?;
    if !status.success() {
        bail!("the comparison harness failed ({status}); see its messages above");
    }
    Ok(())
}
