//! Resource limits of the program process (setrlimit), applied in the forked child just before
//! exec. The cgroup is the primary limit for memory, processes and CPU; these are backstops
//! (RLIMIT_CPU) and the limits cgroups do not offer (file size, stack, open files, core).

use nix::sys::resource::{setrlimit, Resource};

use super::messages::RlimitPlan;

/// Applies `plan`; returns the name of the limit that failed.
pub fn apply(plan: &RlimitPlan) -> Result<(), (&'static str, nix::Error)> {
    set(Resource::RLIMIT_CORE, Some(0), "core")?;
    // RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL one second later at the hard one.
    set_pair(Resource::RLIMIT_CPU, plan.cpu_seconds.map(|s| (s, s + 1)), "cpu")?;
    set(Resource::RLIMIT_FSIZE, plan.file_size, "file_size")?;
    set(Resource::RLIMIT_STACK, plan.stack, "stack")?;
    set(Resource::RLIMIT_NOFILE, plan.open_files, "open_files")?;
    set(Resource::RLIMIT_AS, plan.address_space, "address_space")?;
    set(Resource::RLIMIT_NPROC, plan.processes, "processes")?;
    Ok(())
}

fn set(resource: Resource, value: Option<u64>, name: &'static str) -> Result<(), (&'static str, nix::Error)> {
    set_pair(resource, value.map(|v| (v, v)), name)
}

fn set_pair(
    resource: Resource,
    value: Option<(u64, u64)>,
    name: &'static str,
) -> Result<(), (&'static str, nix::Error)> {
    match value {
        Some((soft, hard)) => setrlimit(resource, soft, hard).map_err(|e| (name, e)),
        None => Ok(()),
    }
}
