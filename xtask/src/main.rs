//! Repository automation, run as `cargo xtask <task>`.
//!
//! - `ci`: the whole CI sequence (format check, clippy with warnings denied, tests, doc tests,
//!   rustdoc with warnings denied). This is what `.ci/run` and the README's test command run.
//! - `fixtures`: regenerate the fixture corpus written by zarr-python and tensorstore.

use std::process::Command;

use anyhow::{Context, Result, bail};

mod fixtures;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    match task {
        "ci" => ci(),
        "fixtures" => fixtures::run(&args[1..]),
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
         ci        format check, clippy -D warnings, tests, doc tests, rustdoc -D warnings\n  \
         fixtures  regenerate the fixture corpus with pinned zarr-python and tensorstore"
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
    cargo(&["test", "--workspace", "--all-targets"], &[])?;
    cargo(&["test", "--workspace", "--doc"], &[])?;
    cargo(
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    eprintln!("==> ci: all steps passed");
    Ok(())
}
