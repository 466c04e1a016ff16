//! `cargo xtask fixtures`: regenerate the fixture corpus written by zarr-python and
//! tensorstore.
//!
//! Steps:
//! 1. create (or reuse) a virtualenv at `<workspace>/target/fixtures-venv` with
//!    `python3 -m venv` (set `FIXTURES_PYTHON` to use another interpreter);
//! 2. `pip install -r xtask/fixtures/requirements.txt` into it (exact pins);
//! 3. run `xtask/fixtures/generate.py` into `<workspace>/target/fixtures-tmp`; the script
//!    re-reads every store and fails if anything differs from its manifest;
//! 4. replace `crates/zarr-core/tests/fixtures/` with the result.

use std::ffi::OsStr;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The corpus, relative to the workspace root.
const FIXTURES_DIR: &str = "crates/zarr-core/tests/fixtures";
/// The generator script and its lock file, relative to the workspace root.
const GENERATOR: &str = "xtask/fixtures/generate.py";
const REQUIREMENTS: &str = "xtask/fixtures/requirements.txt";
/// Scratch locations, relative to the workspace root.
const VENV_DIR: &str = "target/fixtures-venv";
const TMP_DIR: &str = "target/fixtures-tmp";
/// Oldest Python zarr 3.1.6 supports.
const MIN_PYTHON: (u32, u32) = (3, 11);

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(arg) = args.first() {
        if matches!(arg.as_str(), "-h" | "--help") {
            eprintln!(
                "usage: cargo xtask fixtures\n\n\
                 Regenerates {FIXTURES_DIR}/ with the versions pinned in {REQUIREMENTS}.\n\
                 Needs python3 >= {}.{} with the venv module and access to PyPI.\n\
                 Set FIXTURES_PYTHON to use an interpreter other than `python3`.",
                MIN_PYTHON.0, MIN_PYTHON.1
            );
            return Ok(());
        }
        bail!("`cargo xtask fixtures` takes no arguments (got `{arg}`)");
    }

    let root = crate::workspace_root();
    let python = ensure_venv(&root)?;

    eprintln!("==> pip install -r {REQUIREMENTS}");
    run_checked(
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "-r"])
            .arg(root.join(REQUIREMENTS))
            .current_dir(&root),
        "installing the pinned Python packages (needs access to PyPI)",
    )?;

    let tmp = root.join(TMP_DIR);
    remove_dir_if_exists(&tmp)?;
    eprintln!("==> python {GENERATOR} {TMP_DIR}");
    run_checked(
        Command::new(&python)
            .arg(root.join(GENERATOR))
            .arg(&tmp)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONHASHSEED", "0")
            .current_dir(&root),
        "generating the fixture corpus",
    )?;
    if !tmp.join("manifest.json").is_file() {
        bail!(
            "{GENERATOR} exited successfully but wrote no manifest.json into {}",
            tmp.display()
        );
    }

    let dest = root.join(FIXTURES_DIR);
    remove_dir_if_exists(&dest)?;
    let parent = dest.parent().expect("FIXTURES_DIR has a parent");
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    std::fs::rename(&tmp, &dest)
        .with_context(|| format!("moving {} to {}", tmp.display(), dest.display()))?;
    eprintln!("==> fixtures: wrote {}", dest.display());
    Ok(())
}

/// Create the virtualenv unless a working one exists; return its Python interpreter.
fn ensure_venv(root: &Path) -> Result<PathBuf> {
    let venv = root.join(VENV_DIR);
    let python = venv_python(&venv);
    if python.is_file() && python_version(python.as_os_str()).is_ok() {
        eprintln!("==> reusing virtualenv {}", venv.display());
        return Ok(python);
    }

    let base = std::env::var_os("FIXTURES_PYTHON").unwrap_or_else(|| "python3".into());
    let base_name = base.to_string_lossy().into_owned();
    let version = python_version(&base).with_context(|| {
        format!(
            "`cargo xtask fixtures` needs Python >= {}.{} (tried `{base_name}`; \
             set FIXTURES_PYTHON to choose another interpreter)",
            MIN_PYTHON.0, MIN_PYTHON.1
        )
    })?;
    if version < MIN_PYTHON {
        bail!(
            "`{base_name}` is Python {}.{}, but zarr 3.1.6 needs >= {}.{} \
             (set FIXTURES_PYTHON to choose another interpreter)",
            version.0,
            version.1,
            MIN_PYTHON.0,
            MIN_PYTHON.1
        );
    }

    eprintln!("==> {base_name} -m venv --clear {VENV_DIR}");
    run_checked(
        Command::new(&base)
            .args(["-m", "venv", "--clear"])
            .arg(&venv)
            .current_dir(root),
        "creating the virtualenv (on Debian/Ubuntu the venv module is the \
         `python3-venv` package)",
    )?;
    if !python.is_file() {
        bail!(
            "`{base_name} -m venv` succeeded but {} does not exist",
            python.display()
        );
    }
    Ok(python)
}

/// The interpreter inside a virtualenv.
fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// `(major, minor)` of a Python interpreter, with a clear error if it cannot be run.
fn python_version(python: &OsStr) -> Result<(u32, u32)> {
    let name = python.to_string_lossy();
    let output = Command::new(python)
        .args([
            "-c",
            "import sys; print(sys.version_info[0], sys.version_info[1])",
        ])
        .output()
        .map_err(|e| {
            if e.kind() == ErrorKind::NotFound {
                anyhow::anyhow!("`{name}` was not found on PATH")
            } else {
                anyhow::Error::new(e).context(format!("running `{name}`"))
            }
        })?;
    if !output.status.success() {
        bail!(
            "`{name}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut parts = text.split_whitespace().map(str::parse::<u32>);
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => Ok((major, minor)),
        _ => bail!("could not parse the version printed by `{name}`: {text:?}"),
    }
}

/// Run a command with inherited stdio, failing with `what` if it cannot start or fails.
fn run_checked(command: &mut Command, what: &str) -> Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let status = command
        .status()
        .with_context(|| format!("{what}: could not run `{program}`"))?;
    if !status.success() {
        bail!("{what}: `{program}` failed ({status})");
    }
    Ok(())
}

fn remove_dir_if_exists(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", dir.display())),
    }
}
