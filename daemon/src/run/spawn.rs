//! Getting an init for a run: cloned by the zygote with the run's namespaces, its id maps
//! written. One is kept warm ahead of the next request, so that the namespaces' cost (a new
//! network namespace alone is a third of a millisecond) is paid off the request's path.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;

use super::INSIDE_ID;
use crate::daemon::Daemon;
use crate::policy::Policy;
use crate::sandbox::channel;
use crate::sandbox::idmap::{self, PoolId};
use crate::sandbox::messages::{RootPlan, ToInit};

/// An init waiting for its plan.
pub struct Prespawned {
    pub pid: i32,
    pub init: InitGuard,
    /// The daemon's end of the init channel.
    pub channel: OwnedFd,
    /// Root mode: the run's own host uid and gid.
    pub pool_id: Option<PoolId>,
    /// The root this init already built, if any.
    pub prepared: Option<RootPlan>,
}

/// The warm init if there is one, else a fresh one. The caller calls [`refill`] once its
/// run is over: cloning while a run sets up would compete with it for the CPUs.
pub async fn take(daemon: &Arc<Daemon>, policy: &Policy) -> Result<Prespawned, String> {
    let warm = daemon.warm_init.lock().unwrap_or_else(|p| p.into_inner()).take();
    match warm {
        Some(init) if init.prepared.as_ref() == Some(&super::root_plan(daemon, policy)) && !init.init.has_exited() => {
            Ok(init)
        }
        // Another root (another policy, or one reloaded since) or a dead init.
        unusable => {
            if let Some(init) = unusable {
                daemon.runs.spawn(discard(init));
            }
            spawn_one(daemon, None).await
        }
    }
}

/// Clones the next warm init in the background and has it build `policy`'s root, unless one
/// is on its way or segid stops. The next run most likely uses the policy of the last one.
pub fn refill(daemon: &Arc<Daemon>, policy: Arc<Policy>) {
    if daemon.runs.is_closed() || daemon.refilling.swap(true, Ordering::AcqRel) {
        return;
    }
    let d = daemon.clone();
    daemon.runs.spawn(async move {
        match spawn_one(&d, Some(&policy)).await {
            Ok(init) => {
                let unused = {
                    let mut slot = d.warm_init.lock().unwrap_or_else(|p| p.into_inner());
                    match slot.is_none() && !d.runs.is_closed() {
                        true => slot.replace(init),
                        false => Some(init),
                    }
                };
                if let Some(init) = unused {
                    discard(init).await;
                }
            }
            Err(why) => tracing::warn!(%why, "cannot clone a warm init"),
        }
        d.refilling.store(false, Ordering::Release);
    });
}

/// Kills an init that will not be used and waits until it is gone, so that nothing of it
/// outlives segid.
pub async fn discard(init: Prespawned) {
    init.init.kill();
    init.init.exited(Duration::from_secs(5)).await;
}

/// Clones an init, writes its id maps and, given a policy, has it build that policy's root.
async fn spawn_one(daemon: &Arc<Daemon>, policy: Option<&Policy>) -> Result<Prespawned, String> {
    // Root mode: a host uid of the run's own. Rootless: the daemon's, the only one it can map.
    let pool_id = match daemon.host.root {
        true => Some(daemon.ids.take().ok_or("no free sandbox uid")?),
        false => None,
    };
    let (outer_uid, outer_gid) = match &pool_id {
        Some(p) => (p.id, p.id),
        None => (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw()),
    };
    let (daemon_end, init_end) = channel::pair().map_err(|e| format!("cannot create the init channel: {e}"))?;
    let spawner = daemon.clone();
    let spawned = match tokio::task::spawn_blocking(move || spawner.zygote.spawn(init_end)).await {
        Ok(Ok(spawned)) => spawned,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(e) => return Err(format!("spawn task failed: {e}")),
    };
    let init = InitGuard { pidfd: spawned.pidfd };
    idmap::write(spawned.pid, INSIDE_ID, outer_uid, outer_gid, !daemon.host.root)
        .map_err(|e| format!("cannot write the user namespace's id maps: {e}"))?;
    let prepared = match policy {
        Some(policy) => {
            let root = super::root_plan(daemon, policy);
            channel::send(daemon_end.as_raw_fd(), &ToInit::Prepare(Box::new(root.clone())), &[])
                .map_err(|e| format!("cannot reach a new init: {e}"))?;
            Some(root)
        }
        None => None,
    };
    Ok(Prespawned { pid: spawned.pid, init, channel: daemon_end, pool_id, prepared })
}

/// Kills init (and with it its pid namespace) if a run is abandoned half-way.
pub struct InitGuard {
    pidfd: OwnedFd,
}

impl InitGuard {
    pub fn kill(&self) {
        // SAFETY: pidfd_send_signal on a pidfd we own, with no siginfo.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
    }

    /// Waits until init has fully exited (its pidfd becomes readable).
    pub async fn exited(&self, within: Duration) -> bool {
        // SAFETY: the pidfd is owned by self, which outlives this registration.
        let Ok(fd) =
            (unsafe { AsyncFd::register_with_interest(self.pidfd.as_raw_fd(), tokio::io::Interest::READABLE) })
        else {
            return false;
        };
        tokio::time::timeout(within, fd.readable()).await.is_ok()
    }
}

impl InitGuard {
    /// Whether init is already gone (a warm init that died while waiting is not used).
    fn has_exited(&self) -> bool {
        let mut fds = [nix::poll::PollFd::new(
            // SAFETY: the pidfd is owned by self and open for this call.
            unsafe { std::os::fd::BorrowedFd::borrow_raw(self.pidfd.as_raw_fd()) },
            nix::poll::PollFlags::POLLIN,
        )];
        matches!(nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO), Ok(n) if n > 0)
    }
}

impl Drop for InitGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
