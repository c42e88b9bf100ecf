//! One cgroup per run: memory limit without swap, pids limit, CPU accounting, peak memory,
//! OOM kills, and a kill switch.
//!
//! cgroup v2 where the daemon's own cgroup offers `memory` and `pids` (the systemd case, with
//! `Delegate=yes`), else the v1 `memory`, `pids` and `cpuacct` hierarchies. Run cgroups are
//! made as children of the cgroup segid itself is in, per controller (as read from
//! `/proc/self/cgroup`): a delegated subtree is all segid may touch.
//!
//! Not cgroups-rs: it assumes one relative path for every v1 hierarchy, while a daemon placed
//! by its host (as here: memory at `/process_api/...`, the rest at `/`) has one per controller;
//! the handful of files used here are simpler written directly.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where run cgroups are created, per cgroup version.
#[derive(Debug, Clone, Serialize)]
pub enum Hierarchy {
    V2 { parent: PathBuf },
    V1 { memory: PathBuf, pids: PathBuf, cpuacct: PathBuf },
}

/// The limits a run cgroup enforces.
#[derive(Debug, Clone, Copy)]
pub struct CgroupLimits {
    pub memory: u64,
    /// Processes of the run, init included.
    pub pids: u64,
}

/// A run's cgroup (one directory per hierarchy on v1).
#[derive(Debug)]
pub struct RunCgroup {
    kind: Kind,
    dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    V1,
    V2,
}

/// Figures read once the run is over.
#[derive(Debug, Default, Clone, Copy)]
pub struct Usage {
    pub cpu_ns: u64,
    pub memory_peak: u64,
    pub oom_killed: bool,
    pub pids_limit_hit: bool,
}

impl Hierarchy {
    /// Finds where this process may create cgroups. Returns why not, when it may not.
    pub fn detect() -> Result<Hierarchy, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
        let mounts =
            std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
        let mounts = parse_mountinfo(&mounts);
        let mut v2_reason = String::from("no cgroup2 mount");
        if let Some(dir) = v2_dir(&own, &mounts) {
            let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
            if has("memory") && has("pids") {
                match prepare_v2(&dir) {
                    Ok(parent) => return Ok(Hierarchy::V2 { parent }),
                    Err(e) => v2_reason = e,
                }
            } else {
                v2_reason =
                    format!("cgroup v2 at {} lacks memory or pids (has: {})", dir.display(), controllers.trim());
            }
        }
        let v1 = |controller: &str| -> Result<PathBuf, String> {
            let dir = v1_dir(&own, &mounts, controller).ok_or_else(|| format!("no v1 {controller} hierarchy"))?;
            probe_writable(&dir)?;
            Ok(dir)
        };
        match (v1("memory"), v1("pids"), v1("cpuacct")) {
            (Ok(memory), Ok(pids), Ok(cpuacct)) => Ok(Hierarchy::V1 { memory, pids, cpuacct }),
            (a, b, c) => {
                let v1_reasons: Vec<String> = [a, b, c].into_iter().filter_map(|r| r.err()).collect();
                Err(format!("{v2_reason}; {}", v1_reasons.join("; ")))
            }
        }
    }

    pub fn version(&self) -> &'static str {
        match self {
            Hierarchy::V2 { .. } => "v2",
            Hierarchy::V1 { .. } => "v1",
        }
    }

    pub fn controllers(&self) -> Vec<String> {
        match self {
            Hierarchy::V2 { .. } => vec!["memory".into(), "pids".into(), "cpu.stat".into()],
            Hierarchy::V1 { .. } => vec!["memory".into(), "pids".into(), "cpuacct".into()],
        }
    }

    /// Whether a parent directory is closed to writes even for its owner, so that creating
    /// run cgroups in it takes CAP_DAC_OVERRIDE.
    pub fn parents_need_dac_override(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let euid = nix::unistd::geteuid().as_raw();
        self.parents().iter().any(|dir| match std::fs::metadata(dir) {
            Ok(meta) => !(meta.uid() == euid && meta.mode() & 0o300 == 0o300),
            Err(_) => true,
        })
    }

    fn parents(&self) -> Vec<&Path> {
        match self {
            Hierarchy::V2 { parent } => vec![parent],
            Hierarchy::V1 { memory, pids, cpuacct } => vec![memory, pids, cpuacct],
        }
    }

    /// Creates the cgroup `name` with `limits`.
    pub fn create(&self, name: &str, limits: CgroupLimits) -> std::io::Result<RunCgroup> {
        let kind = match self {
            Hierarchy::V2 { .. } => Kind::V2,
            Hierarchy::V1 { .. } => Kind::V1,
        };
        let mut cgroup = RunCgroup { kind, dirs: Vec::new() };
        for parent in self.parents() {
            let dir = parent.join(name);
            std::fs::create_dir(&dir)?;
            // Pushed first so that a failure below still removes what was made (Drop of the
            // caller's RunCgroup is not relied on; remove() is called on error here).
            cgroup.dirs.push(dir);
        }
        if let Err(e) = cgroup.set_limits(limits) {
            cgroup.remove_now();
            return Err(e);
        }
        Ok(cgroup)
    }

    /// Removes run cgroups a crashed earlier segid left behind (named `prefix*` and judged
    /// stale by `is_stale`), killing what is still in them: segid made them, so segid may
    /// clean them. Cgroups of a live segid are left alone.
    pub fn remove_stale(&self, prefix: &str, is_stale: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for parent in self.parents() {
            let Ok(entries) = std::fs::read_dir(parent) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if !name.starts_with(prefix) || !is_stale(&name) || !entry.path().is_dir() {
                    continue;
                }
                let dir = entry.path();
                kill_members(&dir);
                if std::fs::remove_dir(&dir).is_ok() {
                    removed.push(dir);
                }
            }
        }
        removed
    }
}

impl RunCgroup {
    fn set_limits(&self, limits: CgroupLimits) -> std::io::Result<()> {
        match self.kind {
            Kind::V2 => {
                let dir = &self.dirs[0];
                write(dir, "memory.max", limits.memory)?;
                // No swap: a run's memory figure is its RAM.
                write_optional(dir, "memory.swap.max", 0)?;
                write(dir, "pids.max", limits.pids)
            }
            Kind::V1 => {
                let (memory, pids) = (&self.dirs[0], &self.dirs[1]);
                write(memory, "memory.limit_in_bytes", limits.memory)?;
                // memory+swap equal to memory: no swap. Absent when swap accounting is off.
                write_optional(memory, "memory.memsw.limit_in_bytes", limits.memory)?;
                write(pids, "pids.max", limits.pids)
            }
        }
    }

    /// Moves `pid` (the run's init, before it starts the program) into every directory.
    pub fn add(&self, pid: i32) -> std::io::Result<()> {
        for dir in &self.dirs {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    /// CPU time of the run so far, nanoseconds.
    pub fn cpu_ns(&self) -> std::io::Result<u64> {
        match self.kind {
            Kind::V2 => {
                let stat = std::fs::read_to_string(self.dirs[0].join("cpu.stat"))?;
                Ok(keyed(&stat, "usage_usec").unwrap_or(0) * 1000)
            }
            Kind::V1 => read_u64(&self.dirs[2].join("cpuacct.usage")),
        }
    }

    pub fn usage(&self) -> std::io::Result<Usage> {
        let cpu_ns = self.cpu_ns()?;
        Ok(match self.kind {
            Kind::V2 => {
                let dir = &self.dirs[0];
                let events = std::fs::read_to_string(dir.join("memory.events")).unwrap_or_default();
                let pids = std::fs::read_to_string(dir.join("pids.events")).unwrap_or_default();
                Usage {
                    cpu_ns,
                    memory_peak: read_u64(&dir.join("memory.peak"))?,
                    oom_killed: keyed(&events, "oom_kill").unwrap_or(0) > 0,
                    pids_limit_hit: keyed(&pids, "max").unwrap_or(0) > 0,
                }
            }
            Kind::V1 => {
                let (memory, pids) = (&self.dirs[0], &self.dirs[1]);
                let oom = std::fs::read_to_string(memory.join("memory.oom_control")).unwrap_or_default();
                let pid_events = std::fs::read_to_string(pids.join("pids.events")).unwrap_or_default();
                Usage {
                    cpu_ns,
                    memory_peak: read_u64(&memory.join("memory.max_usage_in_bytes"))?,
                    oom_killed: keyed(&oom, "oom_kill").unwrap_or(0) > 0,
                    pids_limit_hit: keyed(&pid_events, "max").unwrap_or(0) > 0,
                }
            }
        })
    }

    /// SIGKILLs everything in the cgroup (the last resort; init normally does it).
    pub fn kill_all(&self) {
        if self.kind == Kind::V2 && std::fs::write(self.dirs[0].join("cgroup.kill"), "1").is_ok() {
            return;
        }
        for dir in &self.dirs {
            kill_members(dir);
        }
    }

    /// Removes the directories, waiting briefly for exiting processes to leave them.
    pub async fn remove(mut self) -> std::io::Result<()> {
        for attempt in 0..200 {
            self.dirs.retain(|dir| match std::fs::remove_dir(dir) {
                Ok(()) => false,
                Err(e) => e.kind() != ErrorKind::NotFound,
            });
            if self.dirs.is_empty() {
                return Ok(());
            }
            if attempt == 50 {
                self.kill_all();
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        Err(std::io::Error::other(format!("cgroups still busy: {:?}", self.dirs)))
    }

    fn remove_now(&mut self) {
        for dir in self.dirs.drain(..) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The last resort for a run abandoned without `remove` (its task failed): kill what is left
/// and remove the directories, so that a failure never leaves a cgroup behind.
impl Drop for RunCgroup {
    fn drop(&mut self) {
        if self.dirs.is_empty() {
            return;
        }
        self.kill_all();
        for _ in 0..100 {
            self.dirs.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
            if self.dirs.is_empty() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        tracing::error!(dirs = ?self.dirs, "run cgroups could not be removed");
    }
}

fn kill_members(dir: &Path) {
    for _ in 0..100 {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        if procs.trim().is_empty() {
            return;
        }
        for pid in procs.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

fn write(dir: &Path, file: &str, value: u64) -> std::io::Result<()> {
    std::fs::write(dir.join(file), value.to_string())
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.join(file).display())))
}

fn write_optional(dir: &Path, file: &str, value: u64) -> std::io::Result<()> {
    match write(dir, file, value) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn read_u64(path: &Path) -> std::io::Result<u64> {
    let text = std::fs::read_to_string(path)?;
    text.trim().parse().map_err(|_| std::io::Error::other(format!("{}: not a number", path.display())))
}

/// `key value` lines (cpu.stat, memory.events, pids.events, memory.oom_control).
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut parts = line.split_whitespace();
        (parts.next() == Some(key)).then(|| parts.next()?.parse().ok()).flatten()
    })
}

struct Mount {
    root: String,
    point: PathBuf,
    fstype: String,
    options: String,
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            Some(Mount {
                root: left.get(3)?.to_string(),
                point: PathBuf::from(left.get(4)?.replace("\\040", " ")),
                fstype: right.first()?.to_string(),
                options: right.get(2).unwrap_or(&"").to_string(),
            })
        })
        .collect()
}

/// The directory of `path` (relative to a hierarchy's root) under the mount `m`.
fn under_mount(m: &Mount, path: &str) -> Option<PathBuf> {
    let relative = if m.root == "/" { path } else { path.strip_prefix(m.root.as_str())? };
    Some(m.point.join(relative.trim_start_matches('/')))
}

fn v2_dir(own: &str, mounts: &[Mount]) -> Option<PathBuf> {
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mount = mounts.iter().find(|m| m.fstype == "cgroup2")?;
    under_mount(mount, path)
}

fn v1_dir(own: &str, mounts: &[Mount], controller: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == controller).then_some(path)
    })?;
    let mount = mounts.iter().find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == controller))?;
    under_mount(mount, path)
}

fn probe_writable(dir: &Path) -> Result<(), String> {
    let probe = dir.join(format!("segi-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| format!("cannot create cgroups under {}: {e}", dir.display()))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(())
}

/// v2: enables memory and pids for children. A cgroup holding processes cannot have
/// controllers in its subtree (the no-internal-process rule), so segid first moves itself
/// (and only itself) into a `segid` leaf below its own cgroup, as a delegation allows.
fn prepare_v2(own: &Path) -> Result<PathBuf, String> {
    let enable = |dir: &Path| std::fs::write(dir.join("cgroup.subtree_control"), "+memory +pids");
    match enable(own) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            let leaf = own.join("segid");
            match std::fs::create_dir(&leaf) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot create {}: {e}", leaf.display())),
            }
            std::fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())
                .map_err(|e| format!("cannot move segid into {}: {e}", leaf.display()))?;
            enable(own).map_err(|e| format!("cannot enable memory and pids in {}: {e}", own.display()))?;
        }
        Err(e) => return Err(format!("cannot enable memory and pids in {}: {e}", own.display())),
    }
    probe_writable(own)?;
    Ok(own.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
30 25 0:27 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
31 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpu,cpuacct
32 25 0:29 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw
";

    #[test]
    fn finds_v1_directories_per_controller() {
        let own = "4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/\n";
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(v1_dir(own, &mounts, "memory"), Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc")));
        assert_eq!(v1_dir(own, &mounts, "cpuacct"), Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/")));
        assert_eq!(v1_dir(own, &mounts, "pids"), None);
        assert_eq!(v2_dir(own, &mounts), Some(PathBuf::from("/sys/fs/cgroup/unified/")));
    }

    #[test]
    fn reads_keyed_files() {
        let oom = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(keyed(oom, "oom_kill"), Some(2));
        assert_eq!(keyed("usage_usec 1500\nuser_usec 1000\n", "usage_usec"), Some(1500));
    }
}
