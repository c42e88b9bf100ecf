//! The sandbox's init: pid 1 of the run's pid namespace, forked by the zygote.
//!
//! It builds the sandbox from the daemon's plan (cgroup namespace, hostname, root filesystem,
//! box files, pivot_root, credentials, landlock, seccomp — in that order, each step needing
//! the privilege the next removes), forks the program, reaps everything in the namespace,
//! reports how the program ended, hands out collected files, and exits when told to.
//! Its own confinement equals the program's: a program that took it over would gain nothing.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Pid};

use super::channel::{self, ChannelError};
use super::messages::{Area, ExitStatus, FromInit, RootPlan, SandboxPlan, ToInit};
use super::{credentials, landlock, rlimits, rootfs, seccomp, SetupError};
use ::landlock::RulesetCreated;

/// Entry point in the cloned child; never returns.
pub fn main(chan: OwnedFd) -> ! {
    // Whatever segid inherited from its own parent must not reach the sandbox: keep only
    // 0-2 (the daemon's, replaced before exec) and the channel.
    let chan = keep_only(chan);
    let code = match serve(chan.as_raw_fd()) {
        Ok(()) => 0,
        Err(_) => 1,
    };
    // SAFETY: _exit ends this single-threaded child without running the parent's atexit
    // handlers or flushing buffers it shares with the daemon.
    unsafe { libc::_exit(code) }
}

/// Moves `chan` to fd 3, points 0-2 at /dev/null and closes every descriptor above 3.
fn keep_only(chan: OwnedFd) -> OwnedFd {
    // SAFETY: dup3/close_range on this freshly cloned process's own descriptors; nothing else
    // in this single-threaded process holds them.
    unsafe {
        let raw = chan.as_raw_fd();
        if raw != 3 {
            libc::dup3(raw, 3, libc::O_CLOEXEC);
        }
        std::mem::forget(chan);
        libc::close_range(4, u32::MAX, 0);
        // 0-2 were the daemon's own (its log, say); init never needs them.
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 3 {
                libc::close(null);
            }
        }
        OwnedFd::from_raw_fd(3)
    }
}

struct Stdio {
    stdout: OwnedFd,
    stderr: OwnedFd,
    stdin: Option<OwnedFd>,
    files: Option<OwnedFd>,
    /// For `plan.extra_fds`, in the same order.
    extra: Vec<OwnedFd>,
}

fn serve(chan: RawFd) -> Result<(), ChannelError> {
    let (mut message, mut fds) = channel::recv::<ToInit>(chan)?;
    // A warm init builds its root before any request exists; a failure is reported at Start.
    let mut prepared = None;
    if let ToInit::Prepare(root) = message {
        let mut steps = Vec::with_capacity(8);
        let built = prepare_root(&root, &mut steps);
        prepared = Some((root, built));
        (message, fds) = channel::recv::<ToInit>(chan)?;
    }
    let ToInit::Start(plan) = message else {
        return Err(ChannelError::Malformed("expected Start".into()));
    };
    let mut fds = fds.into_iter();
    let (Some(stdout), Some(stderr)) = (fds.next(), fds.next()) else {
        return Err(ChannelError::Malformed("Start without stdout and stderr".into()));
    };
    let stdin = if plan.stdin { fds.next() } else { None };
    let files = if plan.files.is_empty() && plan.workspace.is_none() { None } else { fds.next() };
    let extra: Vec<OwnedFd> = fds.by_ref().take(plan.extra_fds.len()).collect();
    if extra.len() != plan.extra_fds.len() {
        return Err(ChannelError::Malformed("Start without its extra descriptors".into()));
    }
    let stdio = Stdio { stdout, stderr, stdin, files, extra };

    let sigchld = match block_sigchld() {
        Ok(fd) => fd,
        Err(e) => return report_setup_failure(chan, e),
    };
    let mut steps = Vec::with_capacity(8);
    let listener = match setup(&plan, prepared, &stdio, &mut steps) {
        Ok(listener) => listener,
        Err(e) => return report_setup_failure(chan, e),
    };
    let steps = steps.into_iter().map(|(name, us)| (name.to_string(), us)).collect();
    channel::send(chan, &FromInit::Ready { steps }, &[listener.as_raw_fd()])?;
    drop(listener);

    match resolve_program(&plan) {
        Ok(program) => run_program(chan, &plan, &program, stdio, &sigchld)?,
        Err(errno) => {
            drop(stdio);
            channel::send(chan, &FromInit::ExecFailed { program: plan.argv[0].clone(), errno }, &[])?;
        }
    }
    after_run(chan)
}

fn report_setup_failure(chan: RawFd, e: SetupError) -> Result<(), ChannelError> {
    channel::send(chan, &FromInit::SetupFailed { step: e.step.clone(), error: e.error }, &[])
}

/// SIGCHLD arrives through a signalfd so that one poll loop serves children and the daemon.
fn block_sigchld() -> Result<SignalFd, SetupError> {
    let fail = |e: nix::Error| SetupError::new("signals", e.to_string());
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    // The zygote ignores SIGCHLD (the kernel reaps its children); init must see them.
    // SAFETY: restoring the default disposition installs no handler code.
    unsafe { nix::sys::signal::signal(Signal::SIGCHLD, nix::sys::signal::SigHandler::SigDfl) }.map_err(fail)?;
    mask.thread_block().map_err(fail)?;
    SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK).map_err(fail)
}

/// Hostname, root filesystem, the sandbox identity and the landlock ruleset: everything the
/// policy decides, nothing of the request's.
fn prepare_root(root: &RootPlan, steps: &mut Vec<(&'static str, u32)>) -> Result<Option<RulesetCreated>, SetupError> {
    let started = Instant::now();
    let mut mark = |name: &'static str| steps.push((name, started.elapsed().as_micros() as u32));
    nix::unistd::sethostname(&root.hostname).map_err(|e| SetupError::new("hostname", e.to_string()))?;
    let sources = rootfs::open_sources(root)?;
    rootfs::mount_root(root)?;
    credentials::become_inside(root.inside_id)?;
    // Changing uids cleared the parent-death signal the zygote's clone set: set it again, so
    // that an init waiting for its plan dies with segid (the zygote dies with segid).
    // SAFETY: prctl with integer arguments.
    // (Had the zygote already died, the channel's end of file ends this init anyway.)
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    mark("sources, root, identity");
    rootfs::build(root, sources)?;
    rootfs::pivot()?;
    mark("mounts, pivot");
    let ruleset = landlock::ruleset(root)?;
    credentials::narrow(root.can_setgroups)?;
    mark("landlock ruleset, groups, bounding set");
    Ok(ruleset)
}

/// A root built ahead of the request: the plan it was built from, and the outcome.
type Prepared = (Box<RootPlan>, Result<Option<RulesetCreated>, SetupError>);

fn setup(
    plan: &SandboxPlan,
    prepared: Option<Prepared>,
    stdio: &Stdio,
    steps: &mut Vec<(&'static str, u32)>,
) -> Result<OwnedFd, SetupError> {
    let ruleset = match prepared {
        Some((root, built)) => {
            if *root != plan.root {
                return Err(SetupError::new("rootfs", "the root was prepared for another policy"));
            }
            steps.push(("prepared ahead", 0));
            built?
        }
        None => prepare_root(&plan.root, steps)?,
    };
    let started = Instant::now();
    let mut mark = |name: &'static str| steps.push((name, started.elapsed().as_micros() as u32));
    // The daemon moved us into the run's cgroup before sending Start: a cgroup namespace made
    // now is rooted there, so the run sees its own cgroup as "/".
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWCGROUP)
        .map_err(|e| SetupError::new("cgroup namespace", e.to_string()))?;
    for &area in &plan.inputs {
        // Sized for exactly these files and the directories on their way: no room to spare.
        let files = plan.files.iter().filter(|f| f.area == area);
        let bytes = files.clone().map(|f| f.len).sum();
        let dirs: std::collections::BTreeSet<&Path> =
            files.clone().flat_map(|f| Path::new(&f.path).ancestors().skip(1)).collect();
        rootfs::mount_input(area, bytes, files.count() + dirs.len(), plan.root.inside_id)?;
    }
    if let Some(files) = &stdio.files {
        place_files(plan, files)?;
    }
    for &area in &plan.inputs {
        rootfs::seal_input(area)?;
    }
    let inputs: Vec<&str> = plan.inputs.iter().map(|a| a.dir()).collect();
    let mut ruleset = landlock::allow_read(ruleset, &inputs, plan.root.landlock_abi)?;
    if let Some(workspace) = &plan.workspace {
        // A plan with a workspace and no archive is a daemon bug: never start without it.
        let files = stdio.files.as_ref().ok_or_else(|| SetupError::new("workspace", "the archive is missing"))?;
        // The archive follows the files in the memfd, whose offset place_files left there.
        let source = std::fs::File::from(files.try_clone().map_err(|e| SetupError::new("workspace", e.to_string()))?);
        rootfs::mount_workspace(source.take(workspace.archive_len), workspace.size, plan.root.inside_id)?;
        ruleset = landlock::allow_all(ruleset, &[rootfs::WORKSPACE], plan.root.landlock_abi)?;
    }
    nix::unistd::chdir(&plan.cwd).map_err(|e| SetupError::new("working directory", e.to_string()))?;
    mark("cgroup namespace, files");
    credentials::drop_all()?;
    mark("credentials");
    landlock::enforce(ruleset)?;
    mark("landlock");
    // Last: the filter need not allow anything the setup above does.
    seccomp::load(&plan.seccomp_bpf)
}

/// Writes the request's files into `/box` and the input directories (init is in the new root
/// already). Input files are read-only (0444, 0555 when executable) on a mount sealed after.
fn place_files(plan: &SandboxPlan, files: &OwnedFd) -> Result<(), SetupError> {
    let fail = |e: std::io::Error| SetupError::new("box files", e.to_string());
    let mut source = std::fs::File::from(files.try_clone().map_err(fail)?);
    let id = Some(plan.root.inside_id);
    for entry in &plan.files {
        let box_dir = PathBuf::from(entry.area.dir());
        let target = box_dir.join(&entry.path);
        // Paths were validated by the daemon (relative, no `..`); create missing parents.
        let mut dir = box_dir.clone();
        if let Some(parent) = Path::new(&entry.path).parent() {
            for part in parent.iter() {
                dir.push(part);
                if !dir.is_dir() {
                    std::fs::create_dir(&dir).map_err(fail)?;
                    std::os::unix::fs::chown(&dir, id, id).map_err(fail)?;
                }
            }
        }
        let mode = match (entry.area, entry.executable) {
            (Area::Box, true) => 0o755,
            (Area::Box, false) => 0o644,
            (_, true) => 0o555,
            (_, false) => 0o444,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(mode)
            .open(&target)
            .map_err(fail)?;
        let copied = std::io::copy(&mut (&mut source).take(entry.len), &mut file).map_err(fail)?;
        if copied != entry.len {
            return Err(SetupError::new("box files", format!("{} is short", entry.path)));
        }
        std::os::unix::fs::fchown(&file, id, id).map_err(fail)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode)).map_err(fail)?;
    }
    Ok(())
}

/// execvp's lookup, done here so that a missing program is reported as such (exit 127).
fn resolve_program(plan: &SandboxPlan) -> Result<CString, i32> {
    let name = plan.argv.first().ok_or(libc::ENOENT)?;
    let to_c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| libc::EINVAL);
    if name.contains('/') {
        return to_c(Path::new(name));
    }
    let path = plan.env.iter().find_map(|kv| kv.strip_prefix("PATH=")).unwrap_or("/usr/bin:/bin");
    let mut denied = false;
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let candidate = PathBuf::from(dir).join(name);
        let Ok(meta) = std::fs::metadata(&candidate) else { continue };
        if !meta.is_file() {
            continue;
        }
        let c = to_c(&candidate)?;
        // SAFETY: c is a valid NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
            return Ok(c);
        }
        denied = true;
    }
    Err(if denied { libc::EACCES } else { libc::ENOENT })
}

fn run_program(
    chan: RawFd,
    plan: &SandboxPlan,
    program: &CString,
    stdio: Stdio,
    sigchld: &SignalFd,
) -> Result<(), ChannelError> {
    let argv: Vec<CString> = plan.argv.iter().map(|a| CString::new(a.as_bytes()).unwrap_or_default()).collect();
    let env: Vec<CString> = plan.env.iter().map(|a| CString::new(a.as_bytes()).unwrap_or_default()).collect();
    // Tells us whether execve worked: it is close-on-exec, so EOF means success.
    let (err_read, err_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let started = Instant::now();
    // SAFETY: init is single-threaded (forked from the single-threaded zygote), so the child
    // may run ordinary code between fork and exec.
    let child = match unsafe { nix::unistd::fork() }? {
        ForkResult::Child => exec_program(plan, program, &argv, &env, &stdio, err_write.as_raw_fd()),
        ForkResult::Parent { child } => child,
    };
    drop(err_write);
    drop(stdio);

    let mut exec_errno: Option<i32> = None;
    let mut err_read = Some(std::fs::File::from(err_read));
    let mut status: Option<(ExitStatus, u64)> = None;
    while status.is_none() {
        let mut pollfds = vec![
            nix::poll::PollFd::new(sigchld.as_fd(), nix::poll::PollFlags::POLLIN),
            // SAFETY: chan stays open for the whole of this loop.
            nix::poll::PollFd::new(unsafe { std::os::fd::BorrowedFd::borrow_raw(chan) }, nix::poll::PollFlags::POLLIN),
        ];
        if let Some(pipe) = &err_read {
            pollfds.push(nix::poll::PollFd::new(pipe.as_fd(), nix::poll::PollFlags::POLLIN));
        }
        match nix::poll::poll(&mut pollfds, nix::poll::PollTimeout::NONE) {
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        let ready = |i: usize| pollfds.get(i).and_then(|p| p.revents()).is_some_and(|r| !r.is_empty());
        let (sig_ready, chan_ready, err_ready) = (ready(0), ready(1), ready(2));
        if err_ready {
            if let Some(mut pipe) = err_read.take() {
                let mut buf = [0u8; 4];
                if pipe.read(&mut buf).unwrap_or(0) == 4 {
                    exec_errno = Some(i32::from_ne_bytes(buf));
                }
            }
        }
        if chan_ready {
            match channel::recv::<ToInit>(chan) {
                Ok((ToInit::Kill, _)) => kill_everything_once(),
                Ok(_) => {}
                Err(_) => {
                    // The daemon is gone: nobody is left to account for this run.
                    reap_everything();
                    return Err(ChannelError::Closed);
                }
            }
        }
        if sig_ready {
            while let Ok(Some(_)) = sigchld.read_signal() {}
            loop {
                match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::Exited(pid, code)) if pid == child => {
                        status = Some((ExitStatus::Exited(code), started.elapsed().as_nanos() as u64));
                    }
                    Ok(WaitStatus::Signaled(pid, signal, _)) if pid == child => {
                        status = Some((ExitStatus::Signaled(signal as i32), started.elapsed().as_nanos() as u64));
                    }
                    Ok(WaitStatus::StillAlive) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        }
    }
    // The program is gone; whatever it left running goes with it.
    reap_everything();
    if exec_errno.is_none() {
        if let Some(mut pipe) = err_read.take() {
            let mut buf = [0u8; 4];
            if pipe.read(&mut buf).unwrap_or(0) == 4 {
                exec_errno = Some(i32::from_ne_bytes(buf));
            }
        }
    }
    match exec_errno {
        Some(code) if code < 0 => {
            let error = std::io::Error::from_raw_os_error(-code).to_string();
            return channel::send(chan, &FromInit::SetupFailed { step: "program setup".into(), error }, &[]);
        }
        Some(errno) => {
            return channel::send(chan, &FromInit::ExecFailed { program: plan.argv[0].clone(), errno }, &[]);
        }
        None => {}
    }
    let (status, wall_ns) = status.unwrap_or((ExitStatus::Exited(0), 0));
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)?;
    let to_ns = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1_000;
    let cpu_ns = to_ns(usage.user_time()) + to_ns(usage.system_time());
    let max_rss = usage.max_rss() as u64 * 1024;
    channel::send(chan, &FromInit::Exited { status, wall_ns, cpu_ns, max_rss }, &[])
}

/// The forked child: becomes the program. Never returns.
fn exec_program(
    plan: &SandboxPlan,
    program: &CString,
    argv: &[CString],
    env: &[CString],
    stdio: &Stdio,
    err_write: RawFd,
) -> ! {
    // The error pipe carries errno for a failed execve (the program's fault: missing, not
    // executable) and -errno for a failed step before it (the sandbox's fault).
    let report = |code: i32| -> ! {
        // SAFETY: writing 4 bytes from a live buffer to our own pipe, then exiting.
        unsafe {
            libc::write(err_write, code.to_ne_bytes().as_ptr().cast(), 4);
            libc::_exit(127)
        }
    };
    let fail = |errno: i32| -> ! { report(-errno.max(1)) };
    // A fresh session: no controlling terminal, no job-control link to anything outside.
    if nix::unistd::setsid().is_err() {
        fail(nix::Error::last_raw());
    }
    // Default dispositions and an empty mask: the daemon ignores SIGPIPE, init blocks SIGCHLD,
    // and neither must leak into the program.
    for signal in Signal::iterator() {
        if signal != Signal::SIGKILL && signal != Signal::SIGSTOP {
            // SAFETY: restoring the default disposition installs no handler code.
            let _ = unsafe { nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigDfl) };
        }
    }
    if SigSet::empty().thread_set_mask().is_err() {
        fail(nix::Error::last_raw());
    }
    let stdin = match &stdio.stdin {
        Some(fd) => fd.as_raw_fd(),
        None => match nix::fcntl::open("/dev/null", nix::fcntl::OFlag::O_RDONLY, nix::sys::stat::Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => fail(e as i32),
        },
    };
    for (from, to) in [(stdin, 0), (stdio.stdout.as_raw_fd(), 1), (stdio.stderr.as_raw_fd(), 2)] {
        // SAFETY: dup2 on descriptors we own; the targets 0-2 are meant to be replaced.
        if unsafe { libc::dup2(from, to) } < 0 {
            fail(nix::Error::last_raw());
        }
    }
    // The extra descriptors go to their targets (3 to 63) in two steps, so that no source is
    // overwritten before it is copied: first each above 63, then each to its target. The
    // error pipe moves above 63 too, out of the targets' way.
    let err_write = match raise_fd(err_write) {
        Ok(fd) => fd,
        Err(errno) => fail(errno),
    };
    let report = |code: i32| -> ! {
        // SAFETY: writing 4 bytes from a live buffer to our own pipe, then exiting.
        unsafe {
            libc::write(err_write, code.to_ne_bytes().as_ptr().cast(), 4);
            libc::_exit(127)
        }
    };
    let fail = |errno: i32| -> ! { report(-errno.max(1)) };
    let mut raised = Vec::with_capacity(stdio.extra.len());
    for fd in &stdio.extra {
        match raise_fd(fd.as_raw_fd()) {
            Ok(high) => raised.push(high),
            Err(errno) => fail(errno),
        }
    }
    // Everything above 2 closes at exec (the error pipe stays usable until then) ...
    // SAFETY: close_range with CLOEXEC only sets flags on our own descriptors.
    if unsafe { libc::close_range(3, u32::MAX, libc::CLOSE_RANGE_CLOEXEC as i32) } < 0 {
        fail(nix::Error::last_raw());
    }
    // ... except the wired ones: dup2 makes its copy without close-on-exec.
    for (&target, &high) in plan.extra_fds.iter().zip(&raised) {
        // SAFETY: dup2 onto a number reserved for wiring (3 to 63; nothing of ours is there).
        if unsafe { libc::dup2(high, target) } < 0 {
            fail(nix::Error::last_raw());
        }
    }
    if let Err((_, e)) = rlimits::apply(&plan.rlimits) {
        fail(e as i32);
    }
    let _ = nix::unistd::execve(program, argv, env);
    report(nix::Error::last_raw())
}

/// A close-on-exec copy of `fd` numbered above the wiring targets (64 and up).
fn raise_fd(fd: RawFd) -> Result<RawFd, i32> {
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own; no memory is involved.
    let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 64) };
    if high < 0 {
        return Err(nix::Error::last_raw());
    }
    Ok(high)
}

/// One SIGKILL to every process of the namespace but init; the reap loop finishes the job.
fn kill_everything_once() {
    let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
}

/// SIGKILL to every process of the namespace but init, until none is left.
fn reap_everything() {
    loop {
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        match waitpid(Pid::from_raw(-1), None) {
            Err(nix::Error::ECHILD) => return,
            Err(nix::Error::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// After the run: hand out files, then exit on `Finish` or when the daemon goes away.
fn after_run(chan: RawFd) -> Result<(), ChannelError> {
    loop {
        match channel::recv::<ToInit>(chan)? {
            (ToInit::Collect(paths), _) => {
                let mut entries = Vec::with_capacity(paths.len());
                let mut fds = Vec::new();
                for path in &paths {
                    match open_in_box(path) {
                        Ok((fd, len)) => {
                            entries.push(Ok(len));
                            fds.push(fd);
                        }
                        Err(message) => entries.push(Err(message)),
                    }
                }
                let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
                channel::send(chan, &FromInit::Collected(entries), &raw)?;
            }
            (ToInit::Finish, _) => return Ok(()),
            _ => {}
        }
    }
}

/// Opens a regular file below `/box` without following any symlink (RESOLVE_NO_SYMLINKS):
/// a link pointing out of the box, or anywhere, is refused.
fn open_in_box(path: &str) -> Result<(OwnedFd, u64), String> {
    let c_path = CString::new(path).map_err(|_| "the path contains NUL".to_string())?;
    let box_dir = nix::fcntl::open(
        "/box",
        nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| format!("cannot open /box: {e}"))?;
    // SAFETY: the kernel just returned this descriptor.
    let box_dir = unsafe { OwnedFd::from_raw_fd(box_dir) };
    // SAFETY: open_how is plain integers, for which all-zero is valid.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: valid dirfd, NUL-terminated path, and an open_how of the size we pass.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            box_dir.as_raw_fd(),
            c_path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::EXDEV) => {
                "it is or passes through a symbolic link, which is not followed".into()
            }
            Some(libc::ENOENT) => "no such file in /box".into(),
            _ => err.to_string(),
        });
    }
    // SAFETY: the kernel just returned this descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let stat = nix::sys::stat::fstat(fd.as_raw_fd()).map_err(|e| e.to_string())?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err("not a regular file".into());
    }
    Ok((fd, stat.st_size as u64))
}
