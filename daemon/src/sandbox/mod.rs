//! The sandbox: one module per kernel mechanism, in the order a run meets them.
//!
//! - [`zygote`]: the single-threaded process that clones each run's init with its namespaces.
//! - [`idmap`]: the user namespace's uid/gid maps, written by the daemon.
//! - [`cgroup`]: the run's cgroup (v2 or v1): memory, pids, CPU accounting, kill.
//! - [`init`]: pid 1 of the run, which carries out the plan:
//!   [`rootfs`] (mounts, pivot_root) → [`credentials`] (uid, capabilities, no_new_privs) →
//!   [`landlock`] → [`seccomp`] → [`rlimits`] and exec of the program.
//! - [`channel`] and [`messages`]: the typed channel between the daemon and init.

pub mod cgroup;
pub mod channel;
mod credentials;
pub mod idmap;
mod init;
pub mod landlock;
pub mod messages;
mod rlimits;
mod rootfs;
pub mod seccomp;
pub mod zygote;

/// A setup step that failed inside init; the run is aborted, never run less isolated.
#[derive(Debug, Clone)]
pub struct SetupError {
    pub step: String,
    pub error: String,
}

impl SetupError {
    pub fn new(step: &str, error: impl Into<String>) -> Self {
        SetupError { step: step.into(), error: error.into() }
    }
}
