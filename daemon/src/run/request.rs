//! Checking a request and turning it, with its policy, into the plan init carries out.
//! Everything a client can get wrong is caught here, before anything is created.
//!
//! Each run-like method turns its own request into a [`Spec`] (`run`: [`from_run`];
//! `evaluate`: `evaluation::request`); [`prepare`] checks a spec against its policy.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use segi_proto::{Limits, Payload, RunRequest};

use super::passed::PassedFiles;
use crate::policy::{Effective, Policy};
use crate::sandbox::messages::{Area, FileEntry, RlimitPlan, SandboxPlan, WorkspacePlan};

/// Most files one request may place in the box.
const MAX_FILES: usize = 1024;
/// Most files one request may collect.
pub const MAX_COLLECT: usize = 64;
/// Bound on argv plus environment, as the kernel's own ARG_MAX order of magnitude.
const MAX_ARGS_BYTES: usize = 1 << 20;

/// What the daemon does with the program's stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdoutMode {
    /// Streams it as `stdout` events (`run`).
    Raw,
    /// Parses it into SEGI text and data events with these markers (`evaluate`).
    Segi { begin: String, end: String },
}

/// Descriptors the daemon wires into the program in place of its own (judging: files and
/// pipes between processes). Targets of `extra` are 3 to [`MAX_EXTRA_FD`].
#[derive(Debug, Default)]
pub struct Wiring {
    /// The program's stdin, instead of the request's bytes or /dev/null.
    pub stdin: Option<OwnedFd>,
    /// The program's stdout, instead of a pipe streamed as events.
    pub stdout: Option<OwnedFd>,
    /// `(target fd, descriptor)`: the program finds the descriptor at the target number.
    pub extra: Vec<(i32, OwnedFd)>,
}

/// The highest descriptor number `Wiring::extra` may target.
pub const MAX_EXTRA_FD: i32 = 63;

/// A file for the sandbox, its bytes already decoded.
pub struct SpecFile {
    pub area: Area,
    pub path: String,
    pub bytes: Vec<u8>,
    pub executable: bool,
}

/// What a run-like request asks for, method-independent.
pub struct Spec {
    pub command: Vec<String>,
    pub limits: Limits,
    /// Added to the policy's environment.
    pub env: BTreeMap<String, String>,
    pub stdin: Option<Vec<u8>>,
    pub files: Vec<SpecFile>,
    /// Input directories mounted even when they get no file.
    pub inputs: Vec<Area>,
    pub cwd: PathBuf,
    pub collect: Vec<String>,
    pub stdout: StdoutMode,
    pub wiring: Wiring,
    /// A tar archive to unpack as `/workspace` (program graders).
    pub workspace: Option<Vec<u8>>,
}

/// A checked request, ready to run.
pub struct Prepared {
    pub policy: Arc<Policy>,
    pub limits: Effective,
    pub plan: SandboxPlan,
    pub stdin: Option<Vec<u8>>,
    /// The files' bytes, concatenated in `plan.files` order.
    pub file_bytes: Vec<u8>,
    pub collect: Vec<String>,
    pub stdout: StdoutMode,
    /// Taken by the run when it starts.
    pub wiring: Wiring,
}

/// A path as a client gives it: relative to `dir` (for messages), only plain components.
pub fn check_relative_path(path: &str, dir: &str) -> Result<(), String> {
    if path.is_empty() || path.len() > 4096 || path.contains('\0') {
        return Err(format!("path {path:?} must be 1 to 4096 bytes without NUL"));
    }
    let p = Path::new(path);
    if p.is_absolute() {
        return Err(format!("path {path:?} must be relative to {dir}, not absolute"));
    }
    for component in p.components() {
        match component {
            Component::Normal(_) => {}
            Component::CurDir => {}
            _ => return Err(format!("path {path:?} must stay inside {dir} (no ..)")),
        }
    }
    if p.components().all(|c| c == Component::CurDir) {
        return Err(format!("path {path:?} names {dir} itself, not a file"));
    }
    Ok(())
}

/// A box path as a client gives it: relative to `/box`, only plain components.
pub fn check_box_path(path: &str) -> Result<(), String> {
    check_relative_path(path, "/box").map_err(|e| format!("box {e}"))
}

/// `a/./b` → `a/b`, for a path [`check_relative_path`] accepted.
pub fn normalize(path: &str) -> String {
    Path::new(path)
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A file's bytes from exactly one of its inline `content` and its passed descriptor `fd`.
pub fn file_bytes(
    content: Option<&Payload>,
    fd: Option<usize>,
    passed: &mut PassedFiles,
    what: &str,
) -> Result<Vec<u8>, String> {
    match (content, fd) {
        (Some(content), None) => content.to_bytes().map_err(|e| format!("{what}: content is not valid base64: {e}")),
        (None, Some(index)) => passed.take(index).ok_or_else(|| format!("{what}: descriptor {index} is named twice")),
        (None, None) => {
            Err(format!("{what} needs its bytes: \"content\" ({{\"text\": ...}} or {{\"base64\": ...}}) or \"fd\""))
        }
        (Some(_), Some(_)) => Err(format!("{what} has both \"content\" and \"fd\"; give one")),
    }
}

/// The descriptor indexes a `run` request names.
pub fn run_fds(request: &RunRequest) -> Vec<usize> {
    request.files.iter().filter_map(|f| f.fd).collect()
}

/// `run`'s request as a spec.
pub fn from_run(request: RunRequest, passed: &mut PassedFiles) -> Result<Spec, String> {
    let mut files = Vec::with_capacity(request.files.len());
    for file in request.files {
        check_box_path(&file.path)?;
        let bytes = file_bytes(file.content.as_ref(), file.fd, passed, &format!("file {:?}", file.path))?;
        files.push(SpecFile { area: Area::Box, path: file.path, bytes, executable: file.executable });
    }
    if request.collect.len() > MAX_COLLECT {
        return Err(format!("{} collect paths, more than {MAX_COLLECT}", request.collect.len()));
    }
    for path in &request.collect {
        check_box_path(path)?;
    }
    let stdin = request
        .stdin
        .as_ref()
        .map(|p| p.to_bytes())
        .transpose()
        .map_err(|e| format!("stdin is not valid base64: {e}"))?;
    Ok(Spec {
        command: request.command,
        limits: request.limits,
        env: request.env,
        stdin,
        files,
        inputs: Vec::new(),
        cwd: PathBuf::from("/box"),
        collect: request.collect,
        stdout: StdoutMode::Raw,
        wiring: Wiring::default(),
        workspace: None,
    })
}

/// Checks `spec` against `policy`; the error is a message for -32602.
pub fn prepare(spec: Spec, policy: Arc<Policy>, base: SandboxPlan) -> Result<Prepared, String> {
    if spec.command.is_empty() || spec.command[0].is_empty() {
        return Err("command must name a program: a non-empty array like [\"./prog\", \"arg\"]".into());
    }
    let limits = policy.resolve(&spec.limits)?;
    let mut args_bytes = 0usize;
    for arg in &spec.command {
        if arg.contains('\0') {
            return Err("command arguments must not contain NUL".into());
        }
        args_bytes += arg.len() + 1;
    }
    let mut env: Vec<String> = Vec::new();
    let mut merged = policy.env.clone();
    for (key, value) in spec.env {
        if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
            return Err(format!("env key {key:?} must be non-empty without '=' or NUL, and its value without NUL"));
        }
        merged.insert(key, value);
    }
    for (key, value) in merged {
        args_bytes += key.len() + value.len() + 2;
        env.push(format!("{key}={value}"));
    }
    if args_bytes > MAX_ARGS_BYTES {
        return Err(format!("command and env total {args_bytes} bytes, more than {MAX_ARGS_BYTES}"));
    }
    if spec.files.len() > MAX_FILES {
        return Err(format!("{} files, more than {MAX_FILES}", spec.files.len()));
    }
    let mut files = Vec::with_capacity(spec.files.len());
    let mut file_bytes = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in spec.files {
        let normal = normalize(&file.path);
        if !seen.insert((file.area, normal.clone())) {
            return Err(format!("file {:?} is given twice", file.path));
        }
        files.push(FileEntry {
            area: file.area,
            path: normal,
            len: file.bytes.len() as u64,
            executable: file.executable,
        });
        file_bytes.extend_from_slice(&file.bytes);
    }
    let workspace = spec.workspace.map(|archive| {
        let archive_len = archive.len() as u64;
        file_bytes.extend_from_slice(&archive);
        // The unpacked files take no more than the archive; the box size is room for changes.
        WorkspacePlan { archive_len, size: archive_len + policy.box_size }
    });
    let files_total = file_bytes.len() as u64 - workspace.as_ref().map_or(0, |w| w.archive_len);
    if files_total > policy.box_size {
        return Err(format!("files total {} bytes, more than the box holds ({} bytes)", files_total, policy.box_size));
    }
    let mut targets = std::collections::BTreeSet::new();
    for (target, _) in &spec.wiring.extra {
        // The daemon's own wiring, not a client's: a bad target is a bug, refused all the same.
        if !(3..=MAX_EXTRA_FD).contains(target) || !targets.insert(*target) {
            return Err(format!("descriptor {target} cannot be wired twice or outside 3 to {MAX_EXTRA_FD}"));
        }
    }
    let plan = SandboxPlan {
        argv: spec.command,
        extra_fds: targets.into_iter().collect(),
        env,
        files,
        inputs: spec.inputs,
        cwd: spec.cwd,
        workspace,
        stdin: spec.stdin.is_some() || spec.wiring.stdin.is_some(),
        stdout_given: spec.wiring.stdout.is_some(),
        rlimits: RlimitPlan {
            // The backstop sits a little above the polled cgroup limit: it is per process and
            // only needs to catch what polling could miss.
            cpu_seconds: Some(limits.cpu_time.ceil() as u64 + 1),
            file_size: Some(limits.file_size),
            stack: policy.stack,
            open_files: Some(policy.open_files),
            ..RlimitPlan::default()
        },
        ..base
    };
    let mut wiring = spec.wiring;
    // In target order, as `plan.extra_fds` lists them.
    wiring.extra.sort_by_key(|(target, _)| *target);
    Ok(Prepared {
        policy,
        limits,
        plan,
        stdin: spec.stdin,
        file_bytes,
        collect: spec.collect,
        stdout: spec.stdout,
        wiring,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_paths() {
        for good in ["a", "dir/a.txt", "./a", "a/./b"] {
            assert!(check_box_path(good).is_ok(), "{good}");
        }
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a/..", ".", "a\0b"] {
            assert!(check_box_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn normalized_paths() {
        assert_eq!(normalize("./a/./b"), "a/b");
        assert_eq!(normalize("a"), "a");
    }
}
