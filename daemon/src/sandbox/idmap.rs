//! User and group id maps of a run's user namespace, written by the daemon (the parent user
//! namespace) after the clone and before init does anything.
//!
//! One id inside (`inside`) maps to one id outside. As root, the outside id is the run's own
//! unprivileged uid from [`IdPool`], so two runs never share an identity on the host; rootless,
//! it can only be the daemon's own uid, and `setgroups` must be denied first (user_namespaces(7)).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// Default first host uid/gid handed to runs in root mode, as isolate's and nsjail's pools do.
pub const POOL_BASE: u32 = 100_000;
const POOL_SIZE: u32 = 65_536;

/// Writes the maps of process `pid`.
pub fn write(pid: i32, inside: u32, outside_uid: u32, outside_gid: u32, deny_setgroups: bool) -> std::io::Result<()> {
    let proc_dir = format!("/proc/{pid}");
    if deny_setgroups {
        std::fs::write(format!("{proc_dir}/setgroups"), "deny")?;
    }
    std::fs::write(format!("{proc_dir}/uid_map"), format!("{inside} {outside_uid} 1\n"))?;
    std::fs::write(format!("{proc_dir}/gid_map"), format!("{inside} {outside_gid} 1\n"))
}

/// Host ids for concurrent runs in root mode; each run holds one until it is cleaned up.
#[derive(Clone)]
pub struct IdPool {
    base: u32,
    used: Arc<Mutex<BTreeSet<u32>>>,
}

/// An id taken from the pool, given back on drop.
pub struct PoolId {
    pub id: u32,
    pool: IdPool,
}

impl IdPool {
    /// A pool of 65536 ids from `base`; two segids on one host need disjoint pools.
    pub fn new(base: u32) -> Self {
        IdPool { base, used: Arc::default() }
    }

    pub fn take(&self) -> Option<PoolId> {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        let id = (self.base..self.base.saturating_add(POOL_SIZE)).find(|id| !used.contains(id))?;
        used.insert(id);
        Some(PoolId { id, pool: self.clone() })
    }
}

impl Drop for PoolId {
    fn drop(&mut self) {
        self.pool.used.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}
