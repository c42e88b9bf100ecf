//! The daemon's shared state: policies, what the host offers, the zygote, the run slots.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::host::Host;
use crate::policy::Policies;
use crate::run::spawn::Prespawned;
use crate::sandbox::idmap::IdPool;
use crate::sandbox::zygote::Zygote;

/// Settings from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    pub policies_dir: PathBuf,
    pub state_dir: PathBuf,
    pub max_runs: usize,
    pub max_message_bytes: usize,
    /// First host uid/gid of the per-run pool in root mode.
    pub uid_base: u32,
    /// How long a stop lets running runs finish before killing them.
    pub stop_grace: std::time::Duration,
}

pub struct Daemon {
    pub settings: Settings,
    pub policies: RwLock<Arc<Policies>>,
    pub host: Host,
    pub zygote: Zygote,
    pub ids: IdPool,
    /// Bounds concurrent runs; further runs wait their turn.
    pub run_slots: Arc<Semaphore>,
    /// Every run's task, so that a stop waits for their cleanup.
    pub runs: TaskTracker,
    /// An init cloned ahead of the next run (see `run::spawn`).
    pub warm_init: Mutex<Option<Prespawned>>,
    pub refilling: AtomicBool,
    /// Set on SIGTERM: new runs are refused.
    pub stopping: AtomicBool,
    /// Cancels every run and closes every connection (the end of a stop).
    pub stop_runs: CancellationToken,
    /// Runs waiting for a slot, for the `queued` event.
    pub waiting: AtomicUsize,
    pub run_counter: AtomicU64,
    /// An empty directory each init mounts its new root on, inside its own mount namespace.
    pub new_root: PathBuf,
    /// Prefix of this instance's cgroup names, `segi-<pid>-`.
    pub cgroup_prefix: String,
}

impl Daemon {
    /// Re-reads the policies; on error the old ones stay and the error is returned.
    pub fn reload_policies(&self) -> Result<usize, crate::policy::PolicyError> {
        let policies = Policies::load(&self.settings.policies_dir)?;
        let count = policies.by_name.len();
        *self.policies.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(policies);
        Ok(count)
    }

    pub fn policies(&self) -> Arc<Policies> {
        self.policies.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
