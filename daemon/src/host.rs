//! What this host offers: cgroups, landlock, seccomp user notification, user namespaces,
//! and root or rootless mode. Detected once at start; `segid --check` prints it and
//! `capabilities` reports it. A missing layer is named here and in the logs, never skipped
//! silently.

use crate::sandbox::cgroup::Hierarchy;
use crate::sandbox::landlock;

#[derive(Debug)]
pub struct Host {
    pub cgroup: Result<Hierarchy, String>,
    pub landlock_abi: u32,
    pub seccomp_notify: bool,
    pub user_namespaces: Result<(), String>,
    /// Running as root: per-run host uids from the pool. Otherwise rootless.
    pub root: bool,
}

impl Host {
    pub fn detect() -> Host {
        Host {
            cgroup: Hierarchy::detect(),
            landlock_abi: landlock::usable_abi(),
            seccomp_notify: std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
                .map(|a| a.split_whitespace().any(|x| x == "user_notif"))
                .unwrap_or(false),
            user_namespaces: probe_user_namespaces(),
            root: nix::unistd::geteuid().is_root(),
        }
    }

    /// Limits enforced by a weaker mechanism than the one segid prefers, each as a sentence.
    pub fn fallbacks(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Err(why) = &self.cgroup {
            notes.push(format!(
                "no usable cgroup ({why}): memory is limited by RLIMIT_AS and measured as the largest process's peak RSS, \
                 cpu time by RLIMIT_CPU per process and measured by rusage"
            ));
            if self.root {
                notes.push("no usable cgroup: processes are limited by RLIMIT_NPROC of the run's own uid".into());
            } else {
                notes.push("no usable cgroup: processes are not limited in rootless mode (RLIMIT_NPROC would count all of the daemon user's processes)".into());
            }
        }
        if self.landlock_abi == 0 {
            notes.push("landlock unavailable: filesystem confinement rests on the mount namespace alone".into());
        } else if self.landlock_abi < 4 {
            notes.push(format!(
                "landlock ABI {} has no network rules: TCP is confined by the network namespace alone",
                self.landlock_abi
            ));
        } else if self.landlock_abi < 6 {
            notes.push(format!("landlock ABI {} cannot scope abstract unix sockets and signals", self.landlock_abi));
        }
        if !self.root {
            notes.push("rootless: the sandbox runs as the daemon's own uid outside its user namespace and keeps its supplementary groups".into());
        }
        notes
    }

    /// Whether runs can happen at all: a missing user namespace or seccomp notifier is fatal.
    pub fn blocking_problem(&self) -> Option<String> {
        if let Err(why) = &self.user_namespaces {
            return Some(format!("user namespaces are unavailable: {why}"));
        }
        if !self.seccomp_notify {
            return Some("the kernel lacks seccomp user notification (Linux 5.0+ needed)".into());
        }
        None
    }

    /// The report of `segid --check`.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, what: &str, state: String| out.push_str(&format!("{what:<18} {state}\n"));
        line(&mut out, "mode", if self.root { "root (per-run uids from 100000)".into() } else { "rootless".into() });
        line(
            &mut out,
            "user namespaces",
            match &self.user_namespaces {
                Ok(()) => "yes".into(),
                Err(e) => format!("NO: {e}"),
            },
        );
        line(
            &mut out,
            "cgroup",
            match &self.cgroup {
                Ok(h) => format!("{} ({}) under {}", h.version(), h.controllers().join(", "), describe(h)),
                Err(e) => format!("none: {e}"),
            },
        );
        line(
            &mut out,
            "landlock",
            if self.landlock_abi > 0 { format!("ABI {}", self.landlock_abi) } else { "unavailable".into() },
        );
        line(
            &mut out,
            "seccomp",
            if self.seccomp_notify { "yes, with user notification".into() } else { "NO user notification".into() },
        );
        let enforce = |what: &str, how: &str| format!("{what:<18} {how}\n");
        out.push_str("\nlimits\n");
        let cg = self.cgroup.is_ok();
        out.push_str(&enforce("  memory", if cg { "cgroup (peak from the cgroup)" } else { "RLIMIT_AS (fallback)" }));
        out.push_str(&enforce(
            "  processes",
            if cg {
                "cgroup pids.max"
            } else if self.root {
                "RLIMIT_NPROC (fallback)"
            } else {
                "NOT LIMITED (rootless, no cgroup)"
            },
        ));
        out.push_str(&enforce(
            "  cpu time",
            if cg { "cgroup accounting, polled; RLIMIT_CPU backstop" } else { "RLIMIT_CPU per process (fallback)" },
        ));
        out.push_str(&enforce("  wall time", "daemon timer"));
        out.push_str(&enforce("  output", "daemon byte count"));
        out.push_str(&enforce("  file size", "RLIMIT_FSIZE, tmpfs sizes"));
        let notes = self.fallbacks();
        if !notes.is_empty() {
            out.push_str("\nfallbacks\n");
            for note in notes {
                out.push_str(&format!("  - {note}\n"));
            }
        }
        out
    }
}

fn describe(h: &Hierarchy) -> String {
    match h {
        Hierarchy::V2 { parent } => parent.display().to_string(),
        Hierarchy::V1 { memory, pids, cpuacct } => {
            format!("{}, {}, {}", memory.display(), pids.display(), cpuacct.display())
        }
    }
}

/// Forks a child that tries to make a user namespace.
fn probe_user_namespaces() -> Result<(), String> {
    // SAFETY: called at start while single-threaded; the child only calls unshare and _exit.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let ok = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER).is_ok();
            // SAFETY: leaving the probe child without running any of the parent's exit code.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => match nix::sys::wait::waitpid(child, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(_) => Err("unshare(CLONE_NEWUSER) failed (check /proc/sys/user/max_user_namespaces and kernel.unprivileged_userns_clone)".into()),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(format!("fork: {e}")),
    }
}
