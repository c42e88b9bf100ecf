//! The zygote: a single-threaded process forked from segid before its async runtime starts,
//! which clones every sandbox's init.
//!
//! Forking straight from the multi-threaded daemon would hand the child copies of locks held
//! by other threads (the allocator's among them); a child of the zygote is a copy of a
//! process that never had a second thread, so init can run ordinary Rust. No re-exec is
//! needed, and a clone costs one small message each way.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::channel::{self, ChannelError};
use super::init;

/// The namespaces every run gets. The cgroup namespace is made by init once it is in the
/// run's cgroup, so that the namespace is rooted there.
const NAMESPACES: libc::c_int = libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS;

#[derive(Serialize, Deserialize)]
struct SpawnRequest;

#[derive(Serialize, Deserialize)]
enum SpawnReply {
    /// fd: a pidfd for the new init.
    Spawned {
        pid: i32,
    },
    Failed {
        errno: i32,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ZygoteError {
    #[error("cannot start the zygote: {0}")]
    Start(nix::Error),
    #[error("the zygote is gone: {0}")]
    Channel(#[from] ChannelError),
    #[error("clone of a sandbox failed: {0}")]
    Clone(std::io::Error),
}

/// The daemon's handle on its zygote.
pub struct Zygote {
    sock: Mutex<OwnedFd>,
    pid: i32,
}

/// A freshly cloned init: its pid in the daemon's namespace and a pidfd that stays valid
/// (and pollable) whatever happens to the pid number.
pub struct Spawned {
    pub pid: i32,
    pub pidfd: OwnedFd,
}

impl Zygote {
    /// Forks the zygote. Must be called while the process still has a single thread.
    pub fn start() -> Result<Zygote, ZygoteError> {
        let (daemon_end, zygote_end) = channel::pair().map_err(|_| ZygoteError::Start(nix::Error::last()))?;
        // SAFETY: called before any thread exists (documented precondition; main() calls it
        // before building the runtime).
        match unsafe { nix::unistd::fork() }.map_err(ZygoteError::Start)? {
            nix::unistd::ForkResult::Child => {
                drop(daemon_end);
                serve(zygote_end)
            }
            nix::unistd::ForkResult::Parent { child } => {
                Ok(Zygote { sock: Mutex::new(daemon_end), pid: child.as_raw() })
            }
        }
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Clones a new init that will serve `init_channel`. Blocking (a few hundred µs).
    pub fn spawn(&self, init_channel: OwnedFd) -> Result<Spawned, ZygoteError> {
        let sock = self.sock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        channel::send(sock.as_raw_fd(), &SpawnRequest, &[init_channel.as_raw_fd()])?;
        drop(init_channel);
        let (reply, mut fds) = channel::recv::<SpawnReply>(sock.as_raw_fd())?;
        match reply {
            SpawnReply::Spawned { pid } if fds.len() == 1 => Ok(Spawned { pid, pidfd: fds.remove(0) }),
            SpawnReply::Spawned { .. } => Err(ChannelError::Malformed("Spawned without a pidfd".into()).into()),
            SpawnReply::Failed { errno } => Err(ZygoteError::Clone(std::io::Error::from_raw_os_error(errno))),
        }
    }
}

/// The zygote's loop; never returns.
fn serve(sock: OwnedFd) -> ! {
    // SAFETY: prctl with integer arguments: die with the daemon rather than outlive it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    // Cloning with new namespaces needs no capability (the user namespace comes first), and
    // each init gets its full set inside its own namespace: the zygote keeps none. If that
    // fails the zygote exits, and every spawn reports it.
    if crate::privileges::drop_all().is_err() {
        // SAFETY: ending this single-threaded child without the parent's exit handlers.
        unsafe { libc::_exit(1) }
    }
    // Nothing segid inherited (a socket from systemd, say) stays open in the zygote, so none
    // of it can reach an init.
    let keep = sock.as_raw_fd() as u32;
    // SAFETY: closing this process's own descriptors other than 0-2 and `sock`.
    unsafe {
        if keep > 3 {
            libc::close_range(3, keep - 1, 0);
        }
        libc::close_range(keep + 1, u32::MAX, 0);
    }
    // Children are reaped by the kernel: the daemon follows each init through its pidfd and
    // its channel, so the zygote never waits.
    // SAFETY: SIG_IGN installs no handler code.
    let _ =
        unsafe { nix::sys::signal::signal(nix::sys::signal::Signal::SIGCHLD, nix::sys::signal::SigHandler::SigIgn) };
    loop {
        let (_, mut fds) = match channel::recv::<SpawnRequest>(sock.as_raw_fd()) {
            Ok(request) => request,
            // SAFETY: the daemon is gone: exit without running its atexit handlers.
            Err(_) => unsafe { libc::_exit(0) },
        };
        let Some(init_channel) = fds.pop() else { continue };
        let reply = match clone_init(sock.as_raw_fd(), init_channel) {
            Ok((pid, pidfd)) => {
                let result = channel::send(sock.as_raw_fd(), &SpawnReply::Spawned { pid }, &[pidfd.as_raw_fd()]);
                drop(pidfd);
                result
            }
            Err(errno) => channel::send(sock.as_raw_fd(), &SpawnReply::Failed { errno }, &[]),
        };
        if reply.is_err() {
            // SAFETY: as above.
            unsafe { libc::_exit(0) }
        }
    }
}

/// clone(2) with the run's namespaces and CLONE_PIDFD. In the child this never returns.
fn clone_init(zygote_sock: RawFd, init_channel: OwnedFd) -> Result<(i32, OwnedFd), i32> {
    let mut pidfd: libc::c_int = -1;
    let flags = (NAMESPACES | libc::CLONE_PIDFD) as libc::c_ulong | libc::SIGCHLD as libc::c_ulong;
    // SAFETY: raw clone without a new stack behaves like fork: the child continues on a copy of
    // this stack. The zygote is single-threaded, so the copy holds no foreign lock.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            std::ptr::null_mut::<libc::c_void>(),
            &mut pidfd as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_void>(),
            0usize,
        )
    };
    match pid {
        -1 => Err(nix::Error::last_raw()),
        0 => {
            // SAFETY: the child owns its copy of the zygote's socket and closes it: init must
            // not be able to ask for clones.
            unsafe { libc::close(zygote_sock) };
            // SAFETY: prctl with integer arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
            init::main(init_channel)
        }
        pid => {
            drop(init_channel);
            // SAFETY: the kernel stored a new pidfd that nothing else owns.
            Ok((pid as i32, unsafe { OwnedFd::from_raw_fd(pidfd) }))
        }
    }
}
