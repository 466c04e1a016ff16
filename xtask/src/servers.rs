//! The Python side of the test run: one virtual environment with the S3-compatible test
//! server (moto) and the interop peers (zarr-python, tensorstore).
//!
//! The environment lives in `<workspace>/target/test-venv` and is (re)built from
//! `xtask/requirements-test.txt` whenever that file changes.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// The bucket the tests use.
pub(crate) const S3_BUCKET: &str = "zarr-test";

/// How long moto may take to answer after it starts.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A running moto server; dropping the guard stops it.
pub(crate) struct S3Server {
    child: Child,
    endpoint: String,
    log: PathBuf,
}

impl S3Server {
    /// The environment the tests read to reach this server.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        [
            ("ZARR_TEST_S3_ENDPOINT", self.endpoint.as_str()),
            ("ZARR_TEST_S3_BUCKET", S3_BUCKET),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// Wait for the server to exit (it runs until killed).
    pub(crate) fn wait(mut self) -> Result<()> {
        let status = self.child.wait().context("waiting for moto_server")?;
        bail!(
            "moto_server exited ({status}); its log is {}",
            self.log.display()
        )
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The variable that tells the interop tests which Python has the peers installed.
pub(crate) const PYTHON_VAR: &str = "ZARR_TEST_PYTHON";

/// The test virtual environment, built and checked.
pub(crate) struct TestVenv {
    dir: PathBuf,
}

impl TestVenv {
    /// Create (or update) the environment and check that the peers import.
    pub(crate) fn ensure() -> Result<Self> {
        let venv = Self {
            dir: ensure_venv()?,
        };
        let status = Command::new(venv.python())
            .args([
                "-c",
                "import zarr, tensorstore, numcodecs, numpy; \
                 from importlib.metadata import version as v; \
                 print(f'==> interop peers: zarr {v(\"zarr\")}, tensorstore {v(\"tensorstore\")}')",
            ])
            .status()
            .with_context(|| format!("cannot run {}", venv.python().display()))?;
        if !status.success() {
            bail!(
                "the test virtual environment {} cannot import zarr and tensorstore ({status}); \
                 delete it to rebuild it from xtask/requirements-test.txt",
                venv.dir.display()
            );
        }
        Ok(venv)
    }

    /// The environment's Python interpreter.
    pub(crate) fn python(&self) -> PathBuf {
        self.dir.join("bin").join("python")
    }

    /// The variables that point the interop tests at this environment.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        vec![(
            PYTHON_VAR.to_owned(),
            self.python().to_string_lossy().into_owned(),
        )]
    }
}

/// Create (or update) the virtual environment with the pinned test packages.
fn ensure_venv() -> Result<PathBuf> {
    let root = workspace_root();
    let venv = root.join("target").join("test-venv");
    let requirements = root.join("xtask").join("requirements-test.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let stamp = venv.join("requirements.installed");
    if std::fs::read_to_string(&stamp).is_ok_and(|installed| installed == wanted)
        && venv.join("bin").join("moto_server").exists()
    {
        return Ok(venv);
    }
    eprintln!(
        "==> creating the test virtual environment in {}",
        venv.display()
    );
    run(
        Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv),
        "python3 -m venv (the S3 and interop tests need Python 3.11+ with the venv module)",
    )?;
    run(
        Command::new(venv.join("bin").join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements),
        "pip install -r xtask/requirements-test.txt (needs access to PyPI)",
    )?;
    std::fs::write(&stamp, wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(venv)
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// A TCP port on the loopback interface that nothing listens on right now.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// Send a body-less HTTP/1.1 request and return the status code.
fn http_status(addr: SocketAddr, method: &str, path: &str) -> Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("malformed HTTP response to {method} {path}: {text:.200}"))?;
    Ok(status)
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Start moto's S3 server (from the test environment) on a free loopback port, wait until it
/// answers, and create the test bucket.
pub(crate) fn start_s3(venv: &TestVenv) -> Result<S3Server> {
    let venv = &venv.dir;
    let port = free_port()?;
    let log = venv.join(format!("moto-{port}.log"));
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let child = Command::new(venv.join("bin").join("moto_server"))
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()
        .context("cannot start moto_server from the test virtual environment")?;
    let mut server = S3Server {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
        log,
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let started = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait()? {
            bail!(
                "moto_server exited during startup ({status}); the end of {}:\n{}",
                server.log.display(),
                log_tail(&server.log)
            );
        }
        match http_status(addr, "GET", "/moto-api/") {
            Ok(200) => break,
            _ if started.elapsed() > STARTUP_TIMEOUT => bail!(
                "moto_server did not answer on {} within {STARTUP_TIMEOUT:?}; the end of {}:\n{}",
                server.endpoint,
                server.log.display(),
                log_tail(&server.log)
            ),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let status =
        http_status(addr, "PUT", &format!("/{S3_BUCKET}")).context("creating the test bucket")?;
    if status != 200 {
        bail!("creating the test bucket {S3_BUCKET} answered HTTP {status}");
    }
    eprintln!(
        "==> moto S3 server on {} (bucket {S3_BUCKET})",
        server.endpoint
    );
    Ok(server)
}
