//! The host seen from outside the sandbox: processes, cgroups and mounts. Used to prove that
//! an attack reached nothing and that a run left nothing behind.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A host process as `/proc` shows it.
#[derive(Debug, Clone)]
pub struct Process {
    pub pid: i32,
    /// Real, effective, saved and filesystem uid (the `Uid:` line of `status`).
    pub uids: Vec<u32>,
    /// argv, joined by spaces.
    pub cmdline: String,
    pub cwd: Option<PathBuf>,
    /// The `State:` letter (`Z` for a zombie).
    pub state: String,
}

impl std::fmt::Display for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pid {} uids {:?} state {} cwd {:?} cmdline {:?}",
            self.pid, self.uids, self.state, self.cwd, self.cmdline
        )
    }
}

/// Every process on the host (that has not exited while being read), except this one.
pub fn processes() -> Vec<Process> {
    let own = std::process::id() as i32;
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == own {
            continue;
        }
        let dir = entry.path();
        let Ok(status) = fs::read_to_string(dir.join("status")) else { continue };
        let field = |name: &str| {
            status.lines().find_map(|l| l.strip_prefix(name)).map(|rest| rest.trim().to_owned()).unwrap_or_default()
        };
        let uids = field("Uid:").split_whitespace().filter_map(|u| u.parse().ok()).collect();
        let state = field("State:").chars().next().map(String::from).unwrap_or_default();
        let cmdline = fs::read(dir.join("cmdline"))
            .map(|raw| {
                raw.split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let cwd = fs::read_link(dir.join("cwd")).ok();
        found.push(Process { pid, uids, cmdline, cwd, state });
    }
    found
}

/// Processes any of whose uids is in `uids`.
pub fn processes_with_uid_in(uids: std::ops::Range<u32>) -> Vec<Process> {
    processes().into_iter().filter(|p| p.uids.iter().any(|u| uids.contains(u))).collect()
}

/// Processes whose command line or working directory mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<Process> {
    processes()
        .into_iter()
        .filter(|p| p.cmdline.contains(needle) || p.cwd.as_ref().is_some_and(|c| c.to_string_lossy().contains(needle)))
        .collect()
}

/// Processes whose argv is exactly `argv`.
pub fn processes_with_argv(argv: &[&str]) -> Vec<Process> {
    let wanted = argv.join(" ");
    processes().into_iter().filter(|p| p.cmdline == wanted).collect()
}

/// One line of `/proc/self/mountinfo`, the fields the tests need.
#[derive(Debug, Clone)]
pub struct Mount {
    /// The root of the mount within its filesystem.
    pub root: String,
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub super_options: Vec<String>,
    pub line: String,
}

/// The mounts of this process's mount namespace.
pub fn mounts() -> Vec<Mount> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            Some(Mount {
                root: unescape(left.get(3)?),
                mount_point: PathBuf::from(unescape(left.get(4)?)),
                fs_type: right.first()?.to_string(),
                super_options: right.get(2).map(|o| o.split(',').map(String::from).collect()).unwrap_or_default(),
                line: line.to_owned(),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\NNN` (octal).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// mountinfo lines whose mount point is `dir` or below it.
pub fn mounts_under(dir: &Path) -> Vec<String> {
    mounts().into_iter().filter(|m| m.mount_point.starts_with(dir)).map(|m| m.line).collect()
}

/// mountinfo lines that mention `needle` anywhere.
pub fn mounts_mentioning(needle: &str) -> Vec<String> {
    mounts().into_iter().filter(|m| m.line.contains(needle)).map(|m| m.line).collect()
}

/// The mount points of every cgroup hierarchy (v1 controllers and v2).
pub fn cgroup_mount_points() -> Vec<PathBuf> {
    mounts().into_iter().filter(|m| m.fs_type == "cgroup" || m.fs_type == "cgroup2").map(|m| m.mount_point).collect()
}

/// The directories of this process's own cgroups, one per hierarchy that is mounted
/// (from `/proc/self/cgroup`).
pub fn own_cgroup_dirs() -> Vec<PathBuf> {
    let mounts = mounts();
    let text = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut dirs = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let wanted: Vec<&str> = controllers.split(',').filter(|c| !c.is_empty()).collect();
        let mount = mounts.iter().find(|m| {
            if wanted.is_empty() {
                m.fs_type == "cgroup2"
            } else {
                m.fs_type == "cgroup" && wanted.iter().all(|c| m.super_options.iter().any(|o| o == c))
            }
        });
        let Some(mount) = mount else { continue };
        let relative = if mount.root == "/" { path } else { path.strip_prefix(mount.root.as_str()).unwrap_or(path) };
        let dir = mount.mount_point.join(relative.trim_start_matches('/'));
        if dir.is_dir() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Every cgroup directory whose name starts with `segi` in every hierarchy (8 levels deep at
/// most), with everything below it.
pub fn segi_cgroups() -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    for root in cgroup_mount_points() {
        walk(&root, 0, false, &mut found);
    }
    found
}

fn walk(dir: &Path, depth: usize, inside_segi: bool, found: &mut BTreeSet<PathBuf>) {
    if depth > 8 {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        let segi = inside_segi || entry.file_name().to_string_lossy().starts_with("segi");
        if segi {
            found.insert(path.clone());
        }
        walk(&path, depth + 1, segi, found);
    }
}

/// Entries of the temporary directory whose name contains `segi`.
pub fn segi_temp_entries() -> BTreeSet<PathBuf> {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else { return BTreeSet::new() };
    entries.flatten().filter(|e| e.file_name().to_string_lossy().contains("segi")).map(|e| e.path()).collect()
}

/// The open file descriptors of process `pid`, each as `fd -> target`.
pub fn open_fds(pid: u32) -> Vec<String> {
    let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    let mut fds: Vec<(u32, String)> = entries
        .flatten()
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse().ok()?;
            let target = fs::read_link(e.path()).map(|t| t.display().to_string()).unwrap_or_default();
            Some((fd, target))
        })
        .collect();
    fds.sort();
    fds.into_iter().map(|(fd, target)| format!("{fd} -> {target}")).collect()
}

/// The direct children of process `pid` (from `/proc/*/stat`).
pub fn children_of(pid: u32) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let child: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(e.path().join("stat")).ok()?;
            // The command name may contain spaces and parentheses: parse after the last ')'.
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == pid).then_some(child)
        })
        .collect()
}
