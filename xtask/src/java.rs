//! The Java side of the test run: lz4-java, the library the Java N5 implementation
//! compresses `lz4` datasets with, as the peer of `crates/zarr-array/tests/n5_lz4_java.rs`.
//!
//! The jar comes from Debian's `liblz4-java` package, installed here when missing; the tests
//! compile their small peer program against it with the machine's JDK (`javac`, `java`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The variable that tells the tests where the lz4-java jar is.
pub(crate) const LZ4_JAVA_VAR: &str = "ZARR_TEST_LZ4_JAVA";

/// Where Debian's `liblz4-java` puts the jar.
const LZ4_JAVA_JAR: &str = "/usr/share/java/lz4-java.jar";

/// Make sure the JDK and the lz4-java jar are there, installing the jar if needed; the
/// variables that point the tests at it.
pub(crate) fn ensure_lz4_java() -> Result<Vec<(String, String)>> {
    for tool in ["java", "javac"] {
        let found = Command::new(tool).arg("-version").output();
        if !found.is_ok_and(|o| o.status.success()) {
            bail!(
                "`{tool}` is not on PATH: the N5 lz4 tests need a JDK (Debian's \
                 openjdk-17-jdk-headless)"
            );
        }
    }
    let jar = PathBuf::from(LZ4_JAVA_JAR);
    if !jar.exists() {
        install_lz4_java()?;
    }
    if !jar.exists() {
        bail!(
            "{} is still missing after installing liblz4-java",
            jar.display()
        );
    }
    eprintln!("==> lz4-java peer: {}", jar.display());
    Ok(vec![(
        LZ4_JAVA_VAR.to_owned(),
        jar.to_string_lossy().into_owned(),
    )])
}

/// `apt-get install liblz4-java`, refreshing the package lists once if the first try fails.
fn install_lz4_java() -> Result<()> {
    eprintln!("==> installing Debian's liblz4-java (the N5 lz4 tests' peer)");
    let install = || {
        apt_get()
            .args(["install", "-y", "--no-install-recommends", "liblz4-java"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .context("cannot run apt-get")
    };
    if install()?.success() {
        return Ok(());
    }
    let update = apt_get()
        .arg("update")
        .status()
        .context("cannot run apt-get update")?;
    if !update.success() || !install()?.success() {
        bail!("`apt-get install liblz4-java` failed (the N5 lz4 tests need lz4-java)");
    }
    Ok(())
}

/// `apt-get`, through `sudo` when not running as root.
fn apt_get() -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if root || !Path::new("/usr/bin/sudo").exists() {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.arg("apt-get");
        sudo
    }
}
