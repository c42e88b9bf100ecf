//! A private `segid` for the benchmark: started in a temporary directory, checked with
//! `segi-client ping`, and stopped (and its directory removed) when the guard drops, on
//! success, error or interruption alike.

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the daemon gets to answer its first ping.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the daemon gets to exit after SIGTERM before it is killed.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// A running `segid`; dropping it stops the daemon and removes its temporary directory.
pub struct Daemon {
    child: Option<Child>,
    dir: PathBuf,
    socket: PathBuf,
}

impl Daemon {
    /// Starts `segid` with a socket and state directory in a fresh temporary directory and
    /// waits until `client` gets an answer to `ping`.
    pub fn start(segid: &Path, client: &Path, policies: &Path) -> Result<Daemon> {
        let dir = make_temp_dir("segi-bench.")?;
        let socket = dir.join("segid.sock");
        // The guard exists before the daemon does, so that every failure below cleans up.
        let mut daemon = Daemon { child: None, dir, socket };
        let log = std::fs::File::create(daemon.log_path()).context("creating the segid log")?;
        let child = Command::new(segid)
            .arg("--socket")
            .arg(&daemon.socket)
            .arg("--policies")
            .arg(policies)
            .arg("--state-dir")
            .arg(daemon.dir.join("state"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            // Its own process group: Ctrl-C reaches only the bench, which then stops the
            // daemon through this guard instead of racing it.
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", segid.display()))?;
        daemon.child = Some(child);
        daemon.wait_until_ready(client)?;
        Ok(daemon)
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("segid.log")
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn wait_until_ready(&mut self, client: &Path) -> Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            let answered = Command::new(client)
                .arg("--socket")
                .arg(&self.socket)
                .arg("ping")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .with_context(|| format!("running {}", client.display()))?
                .success();
            if answered {
                return Ok(());
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!("segid exited during startup ({status}); its log:\n{}", self.log_tail());
            }
            if Instant::now() >= deadline {
                bail!(
                    "segid did not answer ping within {} s; its log:\n{}",
                    STARTUP_TIMEOUT.as_secs(),
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// SIGTERM first so the daemon can clean up its sandboxes; SIGKILL if it takes too long.
fn stop(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) has no memory effects; `pid` is our own unreaped child, so the id
        // cannot have been reused by another process.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("segi-bench: segid ignored SIGTERM for {SHUTDOWN_TIMEOUT:?}; killing it");
    let _ = child.kill();
    let _ = child.wait();
}

/// A new private directory under `$TMPDIR` (or /tmp), like `mktemp -d`.
fn make_temp_dir(prefix: &str) -> Result<PathBuf> {
    let mut template = std::env::temp_dir().join(format!("{prefix}XXXXXX")).into_os_string();
    template.push("\0");
    let mut bytes = template.into_vec();
    // SAFETY: `bytes` is a writable, NUL-terminated buffer ending in "XXXXXX", as mkdtemp(3)
    // requires; it rewrites those six bytes in place and keeps no pointer to the buffer.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(std::io::Error::last_os_error()).context("creating a temporary directory");
    }
    bytes.pop(); // the NUL
    Ok(PathBuf::from(OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_dirs_are_new_and_private() {
        let a = make_temp_dir("segi-bench-test.").unwrap();
        let b = make_temp_dir("segi-bench-test.").unwrap();
        assert_ne!(a, b);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::remove_dir(a).unwrap();
        std::fs::remove_dir(b).unwrap();
    }
}
