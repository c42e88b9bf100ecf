//! Landlock: the filesystem and network rights of the run, enforced by the kernel independent
//! of mounts and uids. Read-only (and execute) on the system binds, read-write on `/box` and
//! `/tmp`, read-write on the device nodes, no TCP bind or connect (ABI ≥ 4), and abstract unix
//! sockets and signals scoped to the run (ABI ≥ 6). Applied by init after `pivot_root`.
//!
//! The ABI is detected once by the daemon and enforced here as a hard requirement: a ruleset
//! the kernel only partly applies aborts the run instead of running it less confined.

use std::path::Path;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, RestrictionStatus, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::messages::RootPlan;
use super::SetupError;

fn fail(e: impl std::fmt::Display) -> SetupError {
    SetupError::new("landlock", e.to_string())
}

/// The run's ruleset, built inside the new root (after pivot_root) but not yet enforced, so
/// that a warm init can build it ahead of the request. `None` when the daemon found no
/// landlock (`landlock_abi == 0`), which capabilities and logs report.
pub fn ruleset(root: &RootPlan) -> Result<Option<RulesetCreated>, SetupError> {
    if root.landlock_abi == 0 {
        return Ok(None);
    }
    let abi = ABI::from(root.landlock_abi as i32);
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut device: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::WriteFile;
    if abi >= ABI::V5 {
        device |= AccessFs::IoctlDev;
    }
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(all).map_err(fail)?;
    if abi >= ABI::V4 {
        // Handled with no rule allowing any port: every TCP bind and connect is refused.
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(fail)?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(fail)?;
    }
    let binds: Vec<&Path> = root.binds.iter().map(|p| p.as_path()).filter(|p| p.exists()).collect();
    let created = ruleset
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/"], BitFlags::<AccessFs>::from(AccessFs::ReadDir)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(binds, read))
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/proc"], AccessFs::ReadFile | AccessFs::ReadDir))
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/dev"], device))
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/box", "/tmp"], all))
        .map_err(fail)?;
    Ok(Some(created))
}

/// Adds read (and execute) rights on input directories mounted after the ruleset was built.
/// Rules hold on to inodes, and a path walk skips a covered mount point, so the rule must
/// name the mounted directory itself: it is added once the input tmpfs is in place.
pub fn allow_read(
    ruleset: Option<RulesetCreated>,
    dirs: &[&str],
    abi: u32,
) -> Result<Option<RulesetCreated>, SetupError> {
    let Some(ruleset) = ruleset else {
        return Ok(None);
    };
    let read = AccessFs::from_read(ABI::from(abi as i32));
    ruleset.add_rules(path_beneath_rules(dirs, read)).map(Some).map_err(fail)
}

/// Adds every right on directories mounted after the ruleset was built (a grader's
/// workspace), for the same reason as [`allow_read`].
pub fn allow_all(
    ruleset: Option<RulesetCreated>,
    dirs: &[&str],
    abi: u32,
) -> Result<Option<RulesetCreated>, SetupError> {
    let Some(ruleset) = ruleset else {
        return Ok(None);
    };
    let all = AccessFs::from_all(ABI::from(abi as i32));
    ruleset.add_rules(path_beneath_rules(dirs, all)).map(Some).map_err(fail)
}

/// Restricts the calling process (and what it forks) with `ruleset`.
pub fn enforce(ruleset: Option<RulesetCreated>) -> Result<(), SetupError> {
    let Some(ruleset) = ruleset else {
        return Ok(());
    };
    let status: RestrictionStatus = ruleset.restrict_self().map_err(fail)?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(fail(format!("ruleset only {:?}", status.ruleset)));
    }
    Ok(())
}

/// The kernel's landlock ABI version, 0 when landlock is unavailable.
pub fn kernel_abi() -> u32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only queries the version.
    let version =
        unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, 1u32) };
    u32::try_from(version).unwrap_or(0)
}

/// The ABI segid enforces: the kernel's, capped at the newest this build knows.
pub fn usable_abi() -> u32 {
    kernel_abi().min(9)
}
