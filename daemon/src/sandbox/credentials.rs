//! Dropping privilege inside the sandbox: supplementary groups, uid/gid, every capability set,
//! `no_new_privs`, and non-dumpability. Runs in init after the filesystem is built (mounting
//! needs the capabilities this removes) and before landlock and seccomp.

use caps::CapSet;
use nix::unistd::{Gid, Uid};

use super::SetupError;

fn fail(what: &str, e: impl std::fmt::Display) -> SetupError {
    SetupError::new("credentials", format!("{what}: {e}"))
}

/// Takes the sandbox's identity `id:id` early, keeping the capabilities (in the run's user
/// namespace) that building the root needs. In root mode init starts as host uid 0, which
/// the namespace does not map: files it created would fail (EOVERFLOW) or, worse, belong
/// to host root. Bind sources were already opened as that identity ([`super::rootfs::open_sources`]).
pub fn become_inside(id: u32) -> Result<(), SetupError> {
    set_prctl(libc::PR_SET_KEEPCAPS, 1).map_err(|e| fail("PR_SET_KEEPCAPS", e))?;
    let gid = Gid::from_raw(id);
    nix::unistd::setresgid(gid, gid, gid).map_err(|e| fail("setresgid", e))?;
    let uid = Uid::from_raw(id);
    nix::unistd::setresuid(uid, uid, uid).map_err(|e| fail("setresuid", e))?;
    set_prctl(libc::PR_SET_KEEPCAPS, 0).map_err(|e| fail("PR_SET_KEEPCAPS", e))?;
    // Leaving uid 0 cleared the effective set; raise it again from the kept permitted set.
    let permitted = caps::read(None, CapSet::Permitted).map_err(|e| fail("read capabilities", e))?;
    caps::set(None, CapSet::Effective, &permitted).map_err(|e| fail("raise capabilities", e))
}

/// Removes what an exec could grant and the supplementary groups, while the effective set
/// still serves the setup that remains (a warm init does this before the request exists).
pub fn narrow(can_setgroups: bool) -> Result<(), SetupError> {
    if can_setgroups {
        // Root mode: the daemon's supplementary groups (root's!) must not reach the program.
        nix::unistd::setgroups(&[]).map_err(|e| fail("setgroups", e))?;
    }
    // The bounding set bounds what an exec of a file can grant; clearing it needs CAP_SETPCAP,
    // so it happens while we still hold it, before setresuid clears the other sets.
    caps::clear(None, CapSet::Bounding).map_err(|e| fail("clear the bounding set", e))?;
    caps::clear(None, CapSet::Ambient).map_err(|e| fail("clear the ambient set", e))?;
    caps::clear(None, CapSet::Inheritable).map_err(|e| fail("clear the inheritable set", e))
}

/// Drops every capability for good, with no way to regain any, verifies that none is left in
/// any set, and sets no_new_privs. [`narrow`] must have run.
pub fn drop_all() -> Result<(), SetupError> {
    // Permitted last: once it is empty nothing can be raised again (the uids are non-zero
    // since become_inside, so no exec can grant root's implicit set either).
    caps::clear(None, CapSet::Effective).map_err(|e| fail("clear the effective set", e))?;
    caps::clear(None, CapSet::Permitted).map_err(|e| fail("clear the permitted set", e))?;
    for set in [CapSet::Effective, CapSet::Permitted, CapSet::Inheritable, CapSet::Ambient, CapSet::Bounding] {
        let left = caps::read(None, set).map_err(|e| fail("read capabilities", e))?;
        if !left.is_empty() {
            return Err(fail("capabilities remain", format!("{set:?}: {left:?}")));
        }
    }
    // No process of the run can ptrace init or open its /proc files (init holds the channel).
    set_prctl(libc::PR_SET_DUMPABLE, 0).map_err(|e| fail("PR_SET_DUMPABLE", e))?;
    // No exec may gain privilege (setuid bits, file capabilities); required by seccomp and
    // landlock for an unprivileged process anyway.
    set_prctl(libc::PR_SET_NO_NEW_PRIVS, 1).map_err(|e| fail("PR_SET_NO_NEW_PRIVS", e))?;
    Ok(())
}

fn set_prctl(option: libc::c_int, value: libc::c_ulong) -> nix::Result<()> {
    // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
    let rc = unsafe { libc::prctl(option, value, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong) };
    if rc == 0 {
        Ok(())
    } else {
        Err(nix::Error::last())
    }
}
