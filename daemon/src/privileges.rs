//! The daemon's own privilege after set-up. As root, segid needs only:
//! - `CAP_SETUID` and `CAP_SETGID`: to write a run's uid and gid maps with the run's own host
//!   ids (a process may otherwise only map itself);
//! - `CAP_KILL`: to kill a run's init, which runs under another uid.
//!
//! Everything else (`CAP_SYS_ADMIN`, `CAP_DAC_OVERRIDE`, ...) goes, from every set, before the
//! runtime's threads exist. Its cgroups and the cgroup files it writes are root's own, so
//! ownership, not a capability, lets it use them; only where the host made the cgroup segid
//! sits in unwritable even for its owner (mode 0555, as some hosts mount v1 hierarchy roots)
//! does it keep `CAP_DAC_OVERRIDE`, and says so in the log.

use caps::{CapSet, Capability, CapsHashSet};

/// What runs need; see the module documentation.
const KEPT: [Capability; 3] = [Capability::CAP_SETUID, Capability::CAP_SETGID, Capability::CAP_KILL];

/// Reduces every capability set of the calling thread to [`KEPT`] (plus `CAP_DAC_OVERRIDE`
/// when `dac_override`), none inheritable or ambient. Returns the capabilities kept.
pub fn keep_only_run_capabilities(dac_override: bool) -> Result<Vec<String>, caps::errors::CapsError> {
    let mut kept: CapsHashSet = KEPT.into_iter().collect();
    if dac_override {
        kept.insert(Capability::CAP_DAC_OVERRIDE);
    }
    // The bounding set first: shrinking it needs CAP_SETPCAP, which goes right after.
    for cap in caps::read(None, CapSet::Bounding)? {
        if !kept.contains(&cap) {
            caps::drop(None, CapSet::Bounding, cap)?;
        }
    }
    caps::clear(None, CapSet::Ambient)?;
    caps::clear(None, CapSet::Inheritable)?;
    caps::set(None, CapSet::Effective, &kept)?;
    caps::set(None, CapSet::Permitted, &kept)?;
    let left = caps::read(None, CapSet::Permitted)?;
    let mut names: Vec<String> = left.iter().map(|c| c.to_string()).collect();
    names.sort();
    Ok(names)
}

/// Drops every capability of the calling thread (the zygote: it only clones, which needs none).
/// The bounding set can only shrink with CAP_SETPCAP; without it (rootless) nothing in the
/// other sets can be regained from it anyway.
pub fn drop_all() -> Result<(), caps::errors::CapsError> {
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP)? {
        for cap in caps::read(None, CapSet::Bounding)? {
            caps::drop(None, CapSet::Bounding, cap)?;
        }
    }
    for set in [CapSet::Ambient, CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
        caps::clear(None, set)?;
    }
    Ok(())
}
