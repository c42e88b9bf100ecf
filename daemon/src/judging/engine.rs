//! The general part of judging: programs compiled once and run many times, each run in its
//! own sandbox with files and pipes wired to numbered descriptors, and what they wrote read
//! back. The Sphere flow ([`super::sphere`]) is one arrangement of these pieces; problem
//! pipelines are others.
//!
//! Descriptors are memfds and pipes made here: an input is a sealed-off copy (a fresh
//! read-only open of a memfd), an output a memfd the program writes and the daemon reads after
//! the run, bounded by the run's file size limit (RLIMIT_FSIZE applies to memfds). Nothing
//! touches the host's filesystem.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use segi_proto::{Event, Limits, RunResult, Verdict};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use super::languages::Language;
use crate::daemon::Daemon;
use crate::run::request::{self, Spec, SpecFile, StdoutMode, Wiring};
use crate::run::{self as runner};
use crate::sandbox::channel;
use crate::sandbox::messages::Area;

/// The most of a compiler's output kept for a compilation error.
pub const COMPILER_OUTPUT: usize = 64 * 1024;
/// The most of a run's own stdout and stderr kept when they are not wired.
pub const KEPT_OUTPUT: usize = 64 * 1024;

/// A program ready to run: its files in `/box` and its argv.
#[derive(Debug, Clone)]
pub struct Program {
    /// `(path in /box, bytes, executable)`.
    pub files: Vec<(String, Arc<Vec<u8>>, bool)>,
    pub command: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// One run of a program: its policy, limits and wiring.
pub struct Launch<'a> {
    pub program: &'a Program,
    pub policy: &'a str,
    pub limits: Limits,
    pub wiring: Wiring,
    /// Box paths to copy out after the run.
    pub collect: Vec<String>,
    /// How much of the run's own stdout (when not wired) to keep.
    pub keep_stdout: usize,
}

/// What a run left: its result, and its own stdout (when not wired) and stderr, bounded.
#[derive(Debug)]
pub struct Ran {
    pub result: RunResult,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs programs for one request: the daemon's sandboxes and run slots, and the request's
/// cancellation.
#[derive(Clone)]
pub struct Engine {
    pub daemon: Arc<Daemon>,
    pub cancel: CancellationToken,
}

/// Why a source did not become a program.
#[derive(Debug)]
pub enum CompileError {
    /// The compiler refused the source: its output (bounded) and its run.
    Rejected { output: String, result: Box<RunResult> },
    /// The sandbox or the daemon failed.
    Failed(String),
}

impl Engine {
    /// Takes `slots` run slots (at most the daemon's number), waiting in line; `None` if the
    /// request was cancelled first.
    pub async fn slots(&self, slots: u32) -> Option<Arc<OwnedSemaphorePermit>> {
        let slots = slots.min(self.daemon.settings.max_runs.max(1) as u32);
        tokio::select! {
            permit = self.daemon.run_slots.clone().acquire_many_owned(slots) => permit.ok().map(Arc::new),
            _ = self.cancel.cancelled() => None,
        }
    }

    /// A permit for no slot at all: for runs that must not wait in line (a strategy, which
    /// mostly waits for its own invocations; invocations joined by pipes).
    pub async fn unlimited_slot(&self) -> Option<Arc<OwnedSemaphorePermit>> {
        self.daemon.run_slots.clone().acquire_many_owned(0).await.ok().map(Arc::new)
    }

    /// Runs `launch` in a fresh sandbox holding `slot` (taken with [`Engine::slots`]).
    pub async fn run(&self, launch: Launch<'_>, slot: Arc<OwnedSemaphorePermit>) -> Result<Ran, String> {
        let files = launch
            .program
            .files
            .iter()
            .map(|(path, bytes, executable)| SpecFile {
                area: Area::Box,
                path: path.clone(),
                bytes: bytes.to_vec(),
                executable: *executable,
            })
            .collect();
        let spec = Spec {
            command: launch.program.command.clone(),
            limits: launch.limits,
            env: launch.program.env.clone(),
            stdin: None,
            files,
            inputs: Vec::new(),
            cwd: "/box".into(),
            collect: launch.collect,
            stdout: StdoutMode::Raw,
            wiring: launch.wiring,
            workspace: None,
        };
        self.run_spec(spec, launch.policy, slot, launch.keep_stdout).await
    }

    /// Runs any spec under `policy` holding `slot`, keeping up to `keep_stdout` bytes of its
    /// stdout (when not wired) and some of its stderr.
    pub async fn run_spec(
        &self,
        spec: Spec,
        policy: &str,
        slot: Arc<OwnedSemaphorePermit>,
        keep_stdout: usize,
    ) -> Result<Ran, String> {
        let policies = self.daemon.policies();
        let policy = policies.get(policy).ok_or_else(|| format!("segid has no {policy:?} policy"))?;
        let base = runner::base_plan(&self.daemon, &policy);
        let prepared = request::prepare(spec, policy, base)?;
        let (events, mut incoming) = mpsc::channel::<Event>(16);
        let (result_tx, result_rx) = oneshot::channel();
        let run = runner::execute(self.daemon.clone(), prepared, events, self.cancel.clone(), result_tx);
        // The teardown outlives the result; shutdown waits for it, and the slot is held to the end.
        self.daemon.runs.spawn(async move {
            run.await;
            drop(slot);
        });
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        while let Some(event) = incoming.recv().await {
            let (into, payload, keep) = match event {
                Event::Stdout(p) => (&mut stdout, p, keep_stdout),
                Event::Stderr(p) => (&mut stderr, p, KEPT_OUTPUT),
                _ => continue,
            };
            let bytes = payload.to_bytes().unwrap_or_default();
            let room = keep.saturating_sub(into.len());
            into.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        let result = result_rx.await.map_err(|_| "the run's task ended without a result".to_string())?;
        Ok(Ran { result, stdout, stderr })
    }

    /// Compiles `source` as `language` (under the `compile` policy) into a program; a language
    /// without a compile step just runs its source.
    pub async fn compile(&self, language: &Language, source: &Arc<Vec<u8>>) -> Result<Program, CompileError> {
        self.compile_with(language, source, Vec::new()).await
    }

    /// Compiles `source` with `others` beside it in `/box` (graders, headers, per-test code;
    /// pipelines.md 2.8, 2.12): those of the language's extensions also go on the compiler's
    /// command line.
    pub async fn compile_with(
        &self,
        language: &Language,
        source: &Arc<Vec<u8>>,
        others: Vec<(String, Arc<Vec<u8>>)>,
    ) -> Result<Program, CompileError> {
        let mut files = vec![(language.source.clone(), source.clone(), false)];
        files.extend(others.into_iter().map(|(name, bytes)| (name, bytes, false)));
        let program = |files| Program { files, command: language.run.clone(), env: language.env.clone() };
        let Some(compile) = &language.compile else {
            return Ok(program(files));
        };
        let mut command = compile.clone();
        for (name, _, _) in files.iter().skip(1) {
            let extension = std::path::Path::new(name).extension().and_then(|e| e.to_str()).unwrap_or_default();
            if language.extensions.iter().any(|e| e == extension) {
                command.push(name.clone());
            }
        }
        let compiler = Program { files: files.clone(), command, env: language.env.clone() };
        let slot = self.slots(1).await.ok_or_else(|| CompileError::Failed("cancelled".into()))?;
        let launch = Launch {
            program: &compiler,
            policy: "compile",
            limits: Limits::default(),
            wiring: Wiring::default(),
            collect: language.output.iter().cloned().collect(),
            keep_stdout: KEPT_OUTPUT,
        };
        let ran = self.run(launch, slot).await.map_err(CompileError::Failed)?;
        let mut output = ran.stdout;
        output.extend_from_slice(&ran.stderr);
        let output = super::streams::bounded_text(&output, COMPILER_OUTPUT);
        match ran.result.verdict {
            Verdict::OK => {}
            Verdict::IE => {
                return Err(CompileError::Failed(format!(
                    "the compiler's sandbox failed: {}",
                    ran.result.message.unwrap_or_default()
                )))
            }
            _ => return Err(CompileError::Rejected { output, result: Box::new(ran.result) }),
        }
        let Some(name) = &language.output else {
            return Ok(program(files));
        };
        let collected = ran.result.collected.iter().find(|c| &c.path == name);
        match collected.and_then(|c| c.content.as_ref()).map(|c| c.to_bytes()) {
            Some(Ok(bytes)) => Ok(program(vec![(name.clone(), Arc::new(bytes), true)])),
            _ => {
                let why = collected.and_then(|c| c.error.clone()).unwrap_or_else(|| "not produced".into());
                Err(CompileError::Rejected {
                    output: format!("{output}\n(the compiler left no {name}: {why})"),
                    result: Box::new(ran.result),
                })
            }
        }
    }
}

/// A memfd holding `bytes`, opened read-only (a fresh open file description at offset 0): the
/// program can read it, never change it.
pub fn input(bytes: &[u8]) -> Result<OwnedFd, String> {
    let fd = channel::memfd_with(bytes).map_err(|e| format!("memfd: {e}"))?;
    reopen_read_only(&fd)
}

/// An empty memfd for a program to write (read back with [`read_back`]).
pub fn output() -> Result<OwnedFd, String> {
    channel::memfd_with(&[]).map_err(|e| format!("memfd: {e}"))
}

/// Opens what `fd` refers to again, read-only, at offset 0.
pub fn reopen_read_only(fd: &OwnedFd) -> Result<OwnedFd, String> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let file = std::fs::File::open(&path).map_err(|e| format!("reopen {path}: {e}"))?;
    Ok(file.into())
}

/// Up to `max` bytes of what was written to `fd`, from its start.
pub fn read_back(fd: &OwnedFd, max: usize) -> Vec<u8> {
    let Ok(copy) = fd.try_clone() else {
        return Vec::new();
    };
    let file = std::fs::File::from(copy);
    let len = file.metadata().map(|m| m.len() as usize).unwrap_or(0).min(max);
    let mut bytes = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(&mut bytes[filled..], filled as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    bytes.truncate(filled);
    bytes
}

/// A pipe `(read end, write end)`, both close-on-exec in the daemon.
pub fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))
}
