//! Checking a `run` request and turning it, with its policy, into the plan init carries out.
//! Everything a client can get wrong is caught here, before anything is created.

use std::path::{Component, Path};
use std::sync::Arc;

use segi_proto::RunRequest;

use crate::policy::{Effective, Policy};
use crate::sandbox::messages::{FileEntry, RlimitPlan, SandboxPlan};

/// Most files one request may place in the box.
const MAX_FILES: usize = 1024;
/// Most files one request may collect.
pub const MAX_COLLECT: usize = 64;
/// Bound on argv plus environment, as the kernel's own ARG_MAX order of magnitude.
const MAX_ARGS_BYTES: usize = 1 << 20;

/// A checked request, ready to run.
pub struct Prepared {
    pub policy: Arc<Policy>,
    pub limits: Effective,
    pub plan: SandboxPlan,
    pub stdin: Option<Vec<u8>>,
    /// The files' bytes, concatenated in `plan.files` order.
    pub file_bytes: Vec<u8>,
    pub collect: Vec<String>,
}

/// A box path as a client gives it: relative to `/box`, only plain components.
pub fn check_box_path(path: &str) -> Result<(), String> {
    if path.is_empty() || path.len() > 4096 || path.contains('\0') {
        return Err(format!("box path {path:?} must be 1 to 4096 bytes without NUL"));
    }
    let p = Path::new(path);
    if p.is_absolute() {
        return Err(format!("box path {path:?} must be relative to /box, not absolute"));
    }
    for component in p.components() {
        match component {
            Component::Normal(_) => {}
            Component::CurDir => {}
            _ => return Err(format!("box path {path:?} must stay inside /box (no ..)")),
        }
    }
    if p.components().all(|c| c == Component::CurDir) {
        return Err(format!("box path {path:?} names /box itself, not a file"));
    }
    Ok(())
}

/// Checks `request` against `policy`; the error is a message for -32602.
pub fn prepare(request: RunRequest, policy: Arc<Policy>, base: SandboxPlan) -> Result<Prepared, String> {
    if request.command.is_empty() || request.command[0].is_empty() {
        return Err("command must name a program: a non-empty array like [\"./prog\", \"arg\"]".into());
    }
    let limits = policy.resolve(&request.limits)?;
    let mut args_bytes = 0usize;
    for arg in &request.command {
        if arg.contains('\0') {
            return Err("command arguments must not contain NUL".into());
        }
        args_bytes += arg.len() + 1;
    }
    let mut env: Vec<String> = Vec::new();
    let mut merged = policy.env.clone();
    for (key, value) in &request.env {
        if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
            return Err(format!("env key {key:?} must be non-empty without '=' or NUL, and its value without NUL"));
        }
        merged.insert(key.clone(), value.clone());
    }
    for (key, value) in merged {
        args_bytes += key.len() + value.len() + 2;
        env.push(format!("{key}={value}"));
    }
    if args_bytes > MAX_ARGS_BYTES {
        return Err(format!("command and env total {args_bytes} bytes, more than {MAX_ARGS_BYTES}"));
    }
    if request.files.len() > MAX_FILES {
        return Err(format!("{} files, more than {MAX_FILES}", request.files.len()));
    }
    let mut files = Vec::with_capacity(request.files.len());
    let mut file_bytes = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in &request.files {
        check_box_path(&file.path)?;
        let normal: String = Path::new(&file.path)
            .components()
            .filter(|c| *c != Component::CurDir)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if !seen.insert(normal.clone()) {
            return Err(format!("file {:?} is given twice", file.path));
        }
        let bytes =
            file.content.to_bytes().map_err(|e| format!("file {:?}: content is not valid base64: {e}", file.path))?;
        files.push(FileEntry { path: normal, len: bytes.len() as u64, executable: file.executable });
        file_bytes.extend_from_slice(&bytes);
    }
    if file_bytes.len() as u64 > policy.box_size {
        return Err(format!(
            "files total {} bytes, more than the box holds ({} bytes)",
            file_bytes.len(),
            policy.box_size
        ));
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
    let plan = SandboxPlan {
        argv: request.command,
        env,
        files,
        stdin: stdin.is_some(),
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
    Ok(Prepared { policy, limits, plan, stdin, file_bytes, collect: request.collect })
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
}
