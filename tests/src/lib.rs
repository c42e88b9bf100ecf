//! The harness of segi's end-to-end tests. Every test talks to a real `segid` over its real
//! Unix socket, through `segi-client` or with raw protocol bytes.
//!
//! - [`daemon`]: a private `segid` in a fresh temporary directory, started and stopped per test
//!   binary (or per test), and `segi-client` pointed at it.
//! - [`raw`]: a line-based connection to the socket for sending arbitrary bytes.
//! - [`programs`]: the C programs of `tests/programs/`, compiled once per test process.
//! - [`host`]: what the host looks like from outside the sandbox: processes, cgroups, mounts
//!   (for the attack and leftover checks).
//! - [`pattern`]: matching JSON against an expected pattern (`"*"` matches anything).
//! - [`cleanup`]: work done when the test process exits (stopping shared daemons, removing
//!   temporary directories), since statics are never dropped.

pub mod cleanup;
pub mod daemon;
pub mod host;
pub mod pattern;
pub mod programs;
pub mod raw;

pub use daemon::{Daemon, JsonRun};
pub use programs::compile_c;
pub use raw::{RawConn, ReadError};
pub use segi_proto::run::LimitKind;
pub use segi_proto::{RunResult, Verdict};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Every temporary directory the tests make starts with this, so that
/// `scripts/check-leftovers.sh` can find any that was left behind.
pub const TEMP_PREFIX: &str = "segi-test-";

/// Host uids that segid in root mode gives to sandboxed programs (its pool starts at 100000);
/// a process with such a uid alive when no run is going on is a leftover.
pub const SANDBOX_UIDS: std::ops::Range<u32> = 100_000..200_000;

/// The workspace root (the directory above this crate).
pub fn workspace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// Where `segid` and `segi-client` are: `$SEGI_BIN_DIR`, else the release build if it has
/// `segid`, else the debug build.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SEGI_BIN_DIR") {
        return dir.into();
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_dir().join("target"));
    let release = target.join("release");
    if release.join("segid").is_file() {
        release
    } else {
        target.join("debug")
    }
}

/// The path of one of the workspace's binaries; panics with the command that builds it.
pub fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} does not exist: build it first with `cargo build --release --workspace --bins` \
         (or point SEGI_BIN_DIR at the directory that has it)",
        path.display()
    );
    path
}

/// Makes a fresh, empty directory `<tmp>/segi-test-<pid>-<tag>-<n>` that is removed when the
/// test process exits (unless something is still mounted below it).
pub fn temp_dir(tag: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("{TEMP_PREFIX}{}-{tag}-{n}", std::process::id()));
    // A stale directory of the same name can only come from an earlier process with our pid.
    if dir.exists() {
        cleanup::remove_dir_safely(&dir);
    }
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let to_remove = dir.clone();
    cleanup::at_exit(move || cleanup::remove_dir_safely(&to_remove));
    dir
}

/// `BOXPATH=HOSTPATH`, the form of `--file` and `--collect`.
pub fn mapping(box_path: &str, host_path: &Path) -> String {
    format!("{box_path}={}", host_path.display())
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
pub fn poll_until(timeout: std::time::Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
