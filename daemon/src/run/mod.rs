//! A run's life on the daemon's side: request → policy → sandbox → events → result.
//!
//! [`request`] checks the request against its policy; [`execute`] creates the cgroup, has the
//! zygote clone init, writes the id maps, hands init its plan, then supervises: output pumps
//! ([`output`]), CPU polling, the wall clock, seccomp notifications and cancellation, until
//! init reports the end. It then collects files, tears everything down and [`verdict`] turns
//! what happened into the result object.

pub mod output;
pub mod passed;
pub mod request;
pub mod spawn;
pub mod verdict;

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use segi_proto::evaluate::Warning;
use segi_proto::run::Collected;
use segi_proto::{Event, Payload, RunResult};
use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::daemon::Daemon;
use crate::evaluation::{self, parser::Parser};
use crate::policy::Policy;
use crate::sandbox::cgroup::{CgroupLimits, Hierarchy, RunCgroup};
use crate::sandbox::channel::{self, ChannelError};
use crate::sandbox::messages::{FromInit, RootPlan, SandboxPlan, ToInit};
use crate::sandbox::seccomp;
use output::{OutputBudget, Stream};
use request::{Prepared, StdoutMode, Wiring};
use spawn::InitGuard;
use verdict::{decide, End, Outcome, Stop};

/// The uid and gid a program has inside its user namespace.
pub const INSIDE_ID: u32 = 1000;
/// How long init may take to build the sandbox.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long init may take to stop everything after being told to.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// The root a policy gives every run of it.
pub fn root_plan(daemon: &Daemon, policy: &Policy) -> RootPlan {
    RootPlan {
        new_root: daemon.new_root.clone(),
        binds: policy.binds.clone(),
        box_size: policy.box_size,
        tmp_size: policy.tmp_size,
        inside_id: INSIDE_ID,
        hostname: "segi".into(),
        landlock_abi: daemon.host.landlock_abi,
        can_setgroups: daemon.host.root,
    }
}

/// The plan fields that come from the daemon and the policy rather than the request.
pub fn base_plan(daemon: &Daemon, policy: &Policy) -> SandboxPlan {
    SandboxPlan {
        root: root_plan(daemon, policy),
        argv: Vec::new(),
        env: Vec::new(),
        files: Vec::new(),
        inputs: Vec::new(),
        cwd: "/box".into(),
        workspace: None,
        stdin: false,
        stdout_given: false,
        extra_fds: Vec::new(),
        rlimits: Default::default(),
        seccomp_bpf: policy.seccomp_bpf.clone(),
    }
}

/// A run that ends with IE before anything started.
fn failed_before_start(prepared: &Prepared, why: String) -> RunResult {
    decide(&Outcome {
        end: End::SetupFailed(why),
        stop: None,
        usage: None,
        limits: prepared.limits,
        output_bytes: 0,
        daemon_wall: 0.0,
        measured_by: "none",
    })
}

/// Runs `prepared` to the end. Events go to `events`; `cancel` ends the run early. The result
/// goes to `result` as soon as it is known, before the teardown (init's exit, the cgroup's
/// removal), which this future still completes: a caller answers early and tracks the future
/// so that shutdown waits for the cleanup.
pub async fn execute(
    daemon: Arc<Daemon>,
    mut prepared: Prepared,
    events: mpsc::Sender<Event>,
    cancel: CancellationToken,
    result: oneshot::Sender<RunResult>,
) {
    let seq = daemon.run_counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let hierarchy = daemon.host.cgroup.as_ref().ok();
    let measured_by = match hierarchy {
        Some(Hierarchy::V1 { .. }) => "cgroup-v1",
        Some(Hierarchy::V2 { .. }) => "cgroup-v2",
        None => "rusage",
    };
    // The namespaces are usually cloned already, ahead of this request (see spawn).
    let mut init = match spawn::take(&daemon, &prepared.policy).await {
        Ok(init) => init,
        Err(why) => {
            let _ = result.send(failed_before_start(&prepared, why));
            return;
        }
    };
    // The run's host uid stays taken until its cleanup is complete.
    let pool_id = init.pool_id.take();
    let limits = prepared.limits;
    let cgroup = match hierarchy {
        Some(h) => match h.create(
            &format!("{}{seq}", daemon.cgroup_prefix),
            CgroupLimits { memory: limits.memory, pids: limits.processes + 1 },
        ) {
            Ok(cg) => Some(cg),
            Err(e) => {
                let _ = result.send(failed_before_start(&prepared, format!("cannot create the run's cgroup: {e}")));
                return;
            }
        },
        None => {
            // Fallback, reported in capabilities: per-process rlimits instead of the cgroup.
            prepared.plan.rlimits.address_space = Some(limits.memory);
            if daemon.host.root {
                prepared.plan.rlimits.processes = Some(limits.processes + 1);
            }
            None
        }
    };
    let t_setup = std::time::Instant::now();
    let wiring = std::mem::take(&mut prepared.wiring);
    let (run_result, teardown) = supervise(&prepared, wiring, cgroup.as_ref(), init, measured_by, events, cancel).await;
    let t_supervised = t_setup.elapsed();
    let _ = result.send(run_result);
    spawn::refill(&daemon, prepared.policy.clone());
    if let Some(teardown) = teardown {
        teardown.finish().await;
    }
    if let Some(cg) = cgroup {
        if let Err(e) = cg.remove().await {
            tracing::error!(error = %e, "a run's cgroup could not be removed");
        }
    }
    tracing::debug!(?t_supervised, removed = ?t_setup.elapsed(), "run teardown");
    drop(pool_id);
}

/// What is left of a run once its result is known: init, waiting to be told to exit.
struct Teardown {
    chan: InitChannel,
    init: InitGuard,
    /// Kept open until init is gone, so that a blocked forbidden call never returns.
    listener: OwnedFd,
}

impl Teardown {
    /// Lets init exit, and makes sure it has: only then may the cgroup go and the uid be reused.
    async fn finish(self) {
        let _ = self.chan.send(&ToInit::Finish, &[]);
        let _ = tokio::time::timeout(KILL_GRACE, self.chan.recv()).await;
        if !self.init.exited(Duration::from_millis(50)).await {
            self.init.kill();
            self.init.exited(Duration::from_secs(5)).await;
        }
        drop(self.listener);
    }
}

/// The daemon's end of the channel, driven by tokio.
struct InitChannel {
    fd: AsyncFd<OwnedFd>,
}

impl InitChannel {
    fn new(fd: OwnedFd) -> std::io::Result<Self> {
        nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK))?;
        Ok(InitChannel { fd: watch(fd)? })
    }

    fn send(&self, message: &ToInit, fds: &[RawFd]) -> Result<(), ChannelError> {
        channel::send(self.fd.get_ref().as_raw_fd(), message, fds)
    }

    async fn recv(&self) -> Result<(FromInit, Vec<OwnedFd>), ChannelError> {
        loop {
            let mut guard = self.fd.readable().await?;
            match channel::recv::<FromInit>(self.fd.get_ref().as_raw_fd()) {
                Err(ChannelError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => guard.clear_ready(),
                other => return other,
            }
        }
    }
}

/// Registers an owned descriptor with the reactor.
fn watch(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open and the same for the
    // registration's whole lifetime.
    unsafe { AsyncFd::register(fd) }.map_err(|e| e.into_parts().1)
}

/// Waits, on a blocking thread, for the first notification of the seccomp listener and
/// names its system call. The ioctl blocks and a notification can vanish between a poll and
/// the ioctl (its process killed), so it must not run on a runtime worker. It returns `None`
/// when the filter's last user (init) exits.
///
/// The notification is never answered: the call stays blocked, never executed, until the
/// run is killed. The caller keeps its own copy of the listener open until init is gone,
/// because closing the last one would make the kernel fail the call with ENOSYS and let the
/// program go on.
fn first_violation(listener: OwnedFd) -> tokio::task::JoinHandle<Option<String>> {
    tokio::task::spawn_blocking(move || {
        let req = libseccomp::ScmpNotifReq::receive(listener.as_raw_fd()).ok()?;
        Some(seccomp::syscall_name(req.data.syscall, req.data.arch))
    })
}

fn cpu_poll_interval(limit: f64, used: f64) -> Duration {
    // Usage can grow by one second per second per CPU: poll in time to catch the limit within
    // a few milliseconds, without polling a long run needlessly. The CPU count is read once:
    // available_parallelism reads cgroup files, which every tick of every run would repeat.
    static CPUS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64);
    Duration::from_secs_f64(((limit - used) / cpus / 2.0).clamp(0.002, 0.05))
}

async fn supervise(
    prepared: &Prepared,
    wiring: Wiring,
    cgroup: Option<&RunCgroup>,
    spawned: spawn::Prespawned,
    measured_by: &'static str,
    events: mpsc::Sender<Event>,
    cancel: CancellationToken,
) -> (RunResult, Option<Teardown>) {
    let limits = prepared.limits;
    let fail = |why: String| (failed_before_start(prepared, why), None);
    let Wiring { stdin: wired_stdin, stdout: wired_stdout, extra } = wiring;
    // stdout is the daemon's pipe, streamed as events, unless the run's stdout was wired.
    let (out_r, out_w) = match wired_stdout {
        Some(fd) => (None, fd),
        None => match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
            Ok((r, w)) => (Some(r), w),
            Err(_) => return fail("cannot create output pipes".into()),
        },
    };
    let (err_r, err_w) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(pipe) => pipe,
        Err(_) => return fail("cannot create output pipes".into()),
    };
    let t0 = Instant::now();
    let spawn::Prespawned { pid, init, channel: daemon_end, .. } = spawned;
    if let Some(cg) = cgroup {
        if let Err(e) = cg.add(pid) {
            return fail(format!("cannot move init into the run's cgroup: {e}"));
        }
    }
    let chan = match InitChannel::new(daemon_end) {
        Ok(chan) => chan,
        Err(e) => return fail(format!("init channel: {e}")),
    };
    let stdin_fd = match wired_stdin {
        Some(fd) => Some(fd),
        None => match prepared.stdin.as_deref().map(channel::memfd_with).transpose() {
            Ok(fd) => fd,
            Err(e) => return fail(format!("stdin memfd: {e}")),
        },
    };
    let files_fd = match (!prepared.plan.files.is_empty() || prepared.plan.workspace.is_some())
        .then(|| channel::memfd_with(&prepared.file_bytes))
        .transpose()
    {
        Ok(fd) => fd,
        Err(e) => return fail(format!("files memfd: {e}")),
    };
    let mut fds = vec![out_w.as_raw_fd(), err_w.as_raw_fd()];
    fds.extend(stdin_fd.as_ref().map(|f| f.as_raw_fd()));
    fds.extend(files_fd.as_ref().map(|f| f.as_raw_fd()));
    fds.extend(extra.iter().map(|(_, f)| f.as_raw_fd()));
    if let Err(e) = chan.send(&ToInit::Start(Box::new(prepared.plan.clone())), &fds) {
        return fail(format!("cannot reach init: {e}"));
    }
    // Only the sandbox may hold the write ends now, or the pumps would never see EOF.
    drop((out_w, err_w, stdin_fd, files_fd, extra));

    let ready = tokio::select! {
        ready = tokio::time::timeout(SETUP_TIMEOUT, chan.recv()) => ready,
        _ = cancel.cancelled() => return fail("the run was cancelled during setup".into()),
    };
    let listener = match ready {
        Ok(Ok((FromInit::Ready { steps }, mut fds))) if fds.len() == 1 => {
            tracing::debug!(?steps, "sandbox setup");
            fds.remove(0)
        }
        Ok(Ok((FromInit::SetupFailed { step, error }, _))) => return fail(format!("{step}: {error}")),
        Ok(Ok((other, _))) => return fail(format!("unexpected message from init during setup: {other:?}")),
        Ok(Err(e)) => return fail(format!("init ended during setup: {e}")),
        Err(_) => return fail(format!("setup took more than {}s", SETUP_TIMEOUT.as_secs())),
    };
    let started = Instant::now();
    let t_ready = t0.elapsed();
    // Only the first forbidden call matters: it ends the run.
    let mut violation = match listener.try_clone() {
        Ok(copy) => first_violation(copy),
        Err(e) => return fail(format!("seccomp listener: {e}")),
    };
    let mut violation_pending = true;

    let budget = OutputBudget::new(limits.output);
    // Each pump ends with the evaluator's protocol warnings (none for raw output).
    let mut pumps = tokio::task::JoinSet::<Vec<Warning>>::new();
    match (&prepared.stdout, out_r) {
        (_, None) => {}
        (StdoutMode::Raw, Some(out_r)) => {
            let pump = output::pump(out_r, Stream::Stdout, budget.clone(), events.clone());
            pumps.spawn(async move {
                pump.await;
                Vec::new()
            });
        }
        (StdoutMode::Segi { begin, end }, Some(out_r)) => {
            let parser = Parser::new(begin.as_bytes(), end.as_bytes());
            pumps.spawn(evaluation::stdout::pump(out_r, parser, budget.clone(), events.clone()));
        }
    }
    let pump = output::pump(err_r, Stream::Stderr, budget.clone(), events);
    pumps.spawn(async move {
        pump.await;
        Vec::new()
    });

    let wall_deadline = started + Duration::from_secs_f64(limits.wall_time);
    let mut stop: Option<Stop> = None;
    let mut kill_deadline: Option<Instant> = None;
    let mut cpu_used = 0.0;
    let end = loop {
        let poll = cpu_poll_interval(limits.cpu_time, cpu_used);
        let mut stop_now: Option<Stop> = None;
        tokio::select! {
            biased;
            message = chan.recv() => match message {
                Ok((FromInit::Exited { status, wall_ns, cpu_ns, max_rss }, _)) => {
                    break End::Exited { status, wall: wall_ns as f64 / 1e9, rusage_cpu: cpu_ns as f64 / 1e9, max_rss };
                }
                Ok((FromInit::ExecFailed { program, errno }, _)) => break End::ExecFailed { program, errno },
                Ok((FromInit::SetupFailed { step, error }, _)) => break End::SetupFailed(format!("{step}: {error}")),
                Ok((other, _)) => break End::Lost(format!("unexpected message from init: {other:?}")),
                Err(e) => break End::Lost(format!("the sandbox's init ended unexpectedly: {e}")),
            },
            found = &mut violation, if violation_pending => {
                violation_pending = false;
                if let Ok(Some(name)) = found {
                    stop_now = Some(Stop::Syscall(name));
                }
            },
            _ = budget.exceeded_signal.notified(), if stop.is_none() => stop_now = Some(Stop::Output),
            _ = cancel.cancelled(), if stop.is_none() => stop_now = Some(Stop::Cancelled),
            _ = tokio::time::sleep_until(wall_deadline), if stop.is_none() => stop_now = Some(Stop::WallTime),
            _ = tokio::time::sleep(poll), if cgroup.is_some() && stop.is_none() => {
                if let Some(Ok(ns)) = cgroup.map(|cg| cg.cpu_ns()) {
                    cpu_used = ns as f64 / 1e9;
                    if cpu_used > limits.cpu_time {
                        stop_now = Some(Stop::CpuTime);
                    }
                }
            },
            _ = async { tokio::time::sleep_until(kill_deadline.unwrap_or_else(Instant::now)).await }, if kill_deadline.is_some() => {
                // Init did not stop the run in time: end its whole pid namespace.
                init.kill();
                if let Some(cg) = cgroup {
                    cg.kill_all();
                }
                break End::Lost("the run did not stop when told to and was killed".into());
            },
        }
        if let Some(reason) = stop_now {
            if stop.is_none() {
                stop = Some(reason);
                let _ = chan.send(&ToInit::Kill, &[]);
                kill_deadline = Some(Instant::now() + KILL_GRACE);
            }
        }
    };
    let daemon_wall = started.elapsed().as_secs_f64();
    // A forbidden call seen while the end was already on its way still decides the verdict.
    if violation_pending && violation.is_finished() {
        if let Ok(Some(name)) = (&mut violation).await {
            stop = Some(Stop::Syscall(name));
        }
    }
    // So does spent output: the pump stops reading at the limit, and the program may die of
    // SIGPIPE and be reported before the daemon's loop saw the limit.
    if stop.is_none() && budget.exceeded() {
        stop = Some(Stop::Output);
    }

    // Every process is gone, so the pipes reach EOF; a client that stopped reading is the
    // only thing that can hold the pumps, and its cancellation releases them.
    let mut warnings = Vec::new();
    tokio::select! {
        _ = async { while let Some(done) = pumps.join_next().await { warnings.extend(done.unwrap_or_default()) } } => {}
        _ = cancel.cancelled() => {
            // Stop them where they are: `output_bytes` counts what reached the event queue,
            // so what the result says is exactly what the client gets before it.
            pumps.abort_all();
            while pumps.join_next().await.is_some() {}
        }
    }
    let usage = cgroup.and_then(|cg| cg.usage().ok());

    let collected = if matches!(end, End::Exited { .. }) && !prepared.collect.is_empty() {
        collect(&chan, &prepared.collect, limits.file_size).await
    } else {
        Vec::new()
    };
    tracing::debug!(?t_ready, end = ?t0.elapsed(), "run phases");
    let mut result =
        decide(&Outcome { end, stop, usage, limits, output_bytes: budget.sent(), daemon_wall, measured_by });
    result.collected = collected;
    result.warnings = warnings;
    (result, Some(Teardown { chan, init, listener }))
}

/// Asks init for the files and reads them, each up to `max` bytes.
async fn collect(chan: &InitChannel, paths: &[String], max: u64) -> Vec<Collected> {
    let failed = |why: String| {
        paths.iter().map(|p| Collected { path: p.clone(), content: None, error: Some(why.clone()) }).collect()
    };
    if let Err(e) = chan.send(&ToInit::Collect(paths.to_vec()), &[]) {
        return failed(e.to_string());
    }
    let (entries, fds) = match tokio::time::timeout(Duration::from_secs(5), chan.recv()).await {
        Ok(Ok((FromInit::Collected(entries), fds))) if entries.len() == paths.len() => (entries, fds),
        _ => return failed("the sandbox did not hand out the files".into()),
    };
    let paths = paths.to_vec();
    tokio::task::spawn_blocking(move || {
        let mut fds = fds.into_iter();
        paths
            .into_iter()
            .zip(entries)
            .map(|(path, entry)| match entry {
                Err(why) => Collected { path, content: None, error: Some(why) },
                Ok(len) if len > max => Collected {
                    path,
                    content: None,
                    error: Some(format!("{len} bytes, more than the file size limit {max}")),
                },
                Ok(_) => match fds.next().map(|fd| read_all(fd, max)) {
                    Some(Ok(bytes)) => Collected { path, content: Some(Payload::from_bytes(&bytes)), error: None },
                    Some(Err(e)) => Collected { path, content: None, error: Some(e.to_string()) },
                    None => Collected { path, content: None, error: Some("missing descriptor".into()) },
                },
            })
            .collect()
    })
    .await
    .unwrap_or_default()
}

fn read_all(fd: OwnedFd, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::from(fd).take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}
