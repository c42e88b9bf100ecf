//! The seccomp filter: compiled once per policy by the daemon (libseccomp → classic BPF),
//! loaded by init as its very last setup step, and inherited by the program.
//!
//! "kill" rules use `SECCOMP_RET_USER_NOTIF`: the call never runs, the daemon learns which
//! call it was from the listener fd, ends the run with `SV` and names the call. A plain
//! `SECCOMP_RET_KILL_PROCESS` would stop the call as well but leave no trace of its name.
//! Calls from a non-native architecture (int 0x80, x32) kill the process outright.

use std::io::{Read, Seek};
use std::os::fd::{FromRawFd, OwnedFd};

use libseccomp::{ScmpAction, ScmpArch, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpSyscall};
use serde::Deserialize;

use super::SetupError;

/// One entry of a policy's seccomp rules file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub syscalls: Vec<String>,
    pub action: Action,
    /// An errno name (`EPERM`, `ENOSYS`, ...) for `action = "errno"`.
    #[serde(default)]
    pub errno: Option<String>,
    /// `namespace_flags`: only when the call's first argument has a `CLONE_NEW*` flag.
    #[serde(default)]
    pub when: Option<Condition>,
    /// Why the rule exists; required so that every rule is explained.
    pub why: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Kill,
    Errno,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    NamespaceFlags,
}

/// Every `CLONE_NEW*` flag, including CLONE_NEWTIME.
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    0x80, // CLONE_NEWTIME
];

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("unknown errno {0:?} in a seccomp rule")]
    UnknownErrno(String),
    #[error("seccomp rule for {0:?}: action \"errno\" needs `errno`")]
    MissingErrno(Vec<String>),
    #[error("libseccomp failed: {0}")]
    Libseccomp(#[from] libseccomp::error::SeccompError),
    #[error("exporting the filter failed: {0}")]
    Export(#[from] std::io::Error),
}

fn errno_by_name(name: &str) -> Option<i32> {
    Some(match name {
        "EPERM" => libc::EPERM,
        "ENOSYS" => libc::ENOSYS,
        "EACCES" => libc::EACCES,
        "EINVAL" => libc::EINVAL,
        "ENOTSUP" | "EOPNOTSUPP" => libc::EOPNOTSUPP,
        _ => return None,
    })
}

/// Compiles `rules` into classic BPF for the native architecture. Syscall names this
/// architecture lacks are skipped (listed in the second value, for the logs).
pub fn compile(rules: &[Rule]) -> Result<(Vec<u8>, Vec<String>), CompileError> {
    let mut filter = ScmpFilterContext::new(ScmpAction::Allow)?;
    filter.set_act_badarch(ScmpAction::KillProcess)?;
    let mut skipped = Vec::new();
    for rule in rules {
        let action = match rule.action {
            Action::Kill => ScmpAction::Notify,
            Action::Errno => {
                let name = rule.errno.as_deref().ok_or_else(|| CompileError::MissingErrno(rule.syscalls.clone()))?;
                ScmpAction::Errno(errno_by_name(name).ok_or_else(|| CompileError::UnknownErrno(name.into()))?)
            }
        };
        for name in &rule.syscalls {
            let Ok(syscall) = ScmpSyscall::from_name(name) else {
                skipped.push(name.clone());
                continue;
            };
            match rule.when {
                None => {
                    filter.add_rule(action, syscall)?;
                }
                Some(Condition::NamespaceFlags) => {
                    // Conditions of one libseccomp rule are ANDed: one rule per flag gives OR.
                    for &flag in NAMESPACE_FLAGS {
                        let cmp = ScmpArgCompare::new(0, ScmpCompareOp::MaskedEqual(flag), flag);
                        filter.add_rule_conditional(action, syscall, &[cmp])?;
                    }
                }
            }
        }
    }
    let memfd = nix::sys::memfd::memfd_create(c"segi-bpf", nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC)
        .map_err(std::io::Error::from)?;
    filter.export_bpf(&memfd)?;
    let mut file = std::fs::File::from(memfd);
    file.rewind()?;
    let mut bpf = Vec::new();
    file.read_to_end(&mut bpf)?;
    Ok((bpf, skipped))
}

/// Loads `bpf` on the calling thread (init; inherited by everything it forks) and returns the
/// notification listener. Requires no_new_privs.
pub fn load(bpf: &[u8]) -> Result<OwnedFd, SetupError> {
    const INSN: usize = std::mem::size_of::<libc::sock_filter>();
    if bpf.is_empty() || !bpf.len().is_multiple_of(INSN) || bpf.len() / INSN > u16::MAX as usize {
        return Err(SetupError::new("seccomp", format!("filter of {} bytes is not BPF", bpf.len())));
    }
    // Copy into properly aligned instructions.
    let insns: Vec<libc::sock_filter> = bpf
        .chunks_exact(INSN)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect();
    let prog = libc::sock_fprog { len: insns.len() as u16, filter: insns.as_ptr() as *mut libc::sock_filter };
    // SAFETY: prog points at insns, which lives until the call returns; the kernel copies it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(SetupError::new("seccomp", format!("loading the filter: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The name of native syscall `nr`, for the SV message.
pub fn syscall_name(syscall: ScmpSyscall, arch: ScmpArch) -> String {
    syscall.get_name_by_arch(arch).unwrap_or_else(|_| format!("syscall {}", i32::from(syscall)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Vec<Rule> {
        #[derive(Deserialize)]
        struct File {
            rule: Vec<Rule>,
        }
        toml::from_str::<File>(text).unwrap().rule
    }

    #[test]
    fn the_shipped_rules_compile() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../policies/seccomp/deny.toml")).unwrap();
        let (bpf, _skipped) = compile(&rules(&text)).unwrap();
        assert!(!bpf.is_empty() && bpf.len() % 8 == 0);
    }

    #[test]
    fn bad_errno_is_refused() {
        let bad = rules("[[rule]]\nsyscalls=[\"ptrace\"]\naction=\"errno\"\nerrno=\"EWHAT\"\nwhy=\"x\"\n");
        assert!(matches!(compile(&bad), Err(CompileError::UnknownErrno(_))));
    }
}
