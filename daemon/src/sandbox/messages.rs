//! The named messages of the daemon ↔ init channel, and the plan init carries out.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The part of a sandbox that depends on the policy and the daemon only, never on a request:
/// init can build it ahead of the request (a warm init, see `run::spawn`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootPlan {
    /// An empty host directory init mounts its new root on (in its own mount namespace).
    pub new_root: PathBuf,
    /// Host paths bound read-only at the same path inside.
    pub binds: Vec<PathBuf>,
    pub box_size: u64,
    pub tmp_size: u64,
    /// The uid and gid the program runs as inside the user namespace.
    pub inside_id: u32,
    pub hostname: String,
    /// Landlock ABI to enforce, exactly (0: landlock unavailable, reported in capabilities).
    pub landlock_abi: u32,
    /// Whether `setgroups` is allowed (root mode); rootless maps deny it.
    pub can_setgroups: bool,
}

/// Everything init needs to build the sandbox and start the program. Computed by the daemon
/// (policy + request), so init makes no decisions of its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SandboxPlan {
    pub root: RootPlan,
    /// argv of the program; `argv[0]` is resolved in `PATH` unless it contains a `/`.
    pub argv: Vec<String>,
    /// `KEY=VALUE` pairs, the program's whole environment.
    pub env: Vec<String>,
    /// Files to place in `/box` or an input directory; their bytes follow one another in the
    /// files memfd.
    pub files: Vec<FileEntry>,
    /// Read-only input directories to mount and fill with their `files`, even when empty.
    pub inputs: Vec<Area>,
    /// The program's working directory.
    pub cwd: PathBuf,
    /// A workspace for `/workspace`: a tar archive of this many bytes follows the files in the
    /// files memfd; it is unpacked as the read-only lower layer of a private overlay.
    pub workspace: Option<WorkspacePlan>,
    pub stdin: bool,
    /// The daemon passes the program's stdout (judging) instead of a pipe of its own; it is
    /// still the second descriptor of `Start`.
    pub stdout_given: bool,
    /// Target numbers of the extra descriptors that follow in `Start`, ascending (3 to 63).
    pub extra_fds: Vec<i32>,
    pub rlimits: RlimitPlan,
    /// The seccomp filter as classic BPF, compiled once per policy by the daemon.
    pub seccomp_bpf: Vec<u8>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    pub area: Area,
    /// Relative to the area's directory, validated by the daemon (no `..`, not absolute).
    pub path: String,
    pub len: u64,
    pub executable: bool,
}

/// How `/workspace` is made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkspacePlan {
    /// Bytes of the tar archive in the files memfd, after the files.
    pub archive_len: u64,
    /// Size of the tmpfs holding the unpacked archive and the program's changes.
    pub size: u64,
}

/// Where a file of the plan goes. Every root has the mount points; an input directory is
/// mounted (a small tmpfs, read-only once filled) only when the plan lists it in `inputs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Area {
    /// `/box`: the program's writable working area.
    Box,
    /// `/submission`: an evaluation's submission files, read-only.
    Submission,
    /// `/problem`: an evaluation's problem directory, read-only.
    Problem,
    /// `/grader`: a program grader's input, read-only.
    Grader,
}

impl Area {
    pub const INPUTS: [Area; 3] = [Area::Submission, Area::Problem, Area::Grader];

    pub fn dir(self) -> &'static str {
        match self {
            Area::Box => "/box",
            Area::Submission => "/submission",
            Area::Problem => "/problem",
            Area::Grader => "/grader",
        }
    }
}

/// Resource limits set on the program with setrlimit; `None` leaves the inherited value.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RlimitPlan {
    pub cpu_seconds: Option<u64>,
    pub file_size: Option<u64>,
    pub stack: Option<u64>,
    pub open_files: Option<u64>,
    /// Only without a memory cgroup (fallback).
    pub address_space: Option<u64>,
    /// Only without a pids cgroup (fallback, root mode where the uid is the run's own).
    pub processes: Option<u64>,
}

/// Daemon → init.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToInit {
    /// Build the root now, ahead of the request; `Start` follows with the same root.
    Prepare(Box<RootPlan>),
    /// Build the sandbox and start. fds: stdout, stderr, then stdin if `plan.stdin`, then the
    /// files memfd if `plan.files` is not empty or there is a workspace, then one per
    /// `plan.extra_fds`.
    Start(Box<SandboxPlan>),
    /// Kill every process of the run now (a limit, a cancel).
    Kill,
    /// Open these box paths for reading; answered by `Collected`.
    Collect(Vec<String>),
    /// All done: exit.
    Finish,
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExitStatus {
    Exited(i32),
    Signaled(i32),
}

/// Init → daemon.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromInit {
    /// The sandbox is built and the program is starting. fd: the seccomp notification listener.
    /// `steps`: microseconds since setup began at the end of each step, for the debug log.
    Ready { steps: Vec<(String, u32)> },
    /// A setup step failed; the program never ran.
    SetupFailed { step: String, error: String },
    /// The program could not be executed (`errno` from execve or the PATH lookup).
    ExecFailed { program: String, errno: i32 },
    /// The program and every process it left behind are gone.
    Exited {
        status: ExitStatus,
        /// Nanoseconds from fork to the program's exit.
        wall_ns: u64,
        /// user+system of all reaped processes (rusage of init's children), nanoseconds.
        cpu_ns: u64,
        /// Largest resident set of any one process, bytes.
        max_rss: u64,
    },
    /// One entry per requested path, in order: the file's length, or why it is not there.
    /// fds: one per `Ok` entry, in order.
    Collected(Vec<Result<u64, String>>),
}
