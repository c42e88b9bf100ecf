//! The daemon's shared state: policies, what the host offers, the zygote, the run slots.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Semaphore;
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
    pub run_counter: AtomicU64,
    /// An empty directory each init mounts its new root on, inside its own mount namespace.
    pub new_root: PathBuf,
    /// Prefix of this instance's cgroup names, `segi-<pid>-`.
    pub cgroup_prefix: String,
}

impl Daemon {
    pub fn policies(&self) -> Arc<Policies> {
        self.policies.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
