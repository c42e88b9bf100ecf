//! A private `segid` for the tests, and `segi-client` pointed at it.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use segi_proto::RunResult;
use serde_json::Value;

use crate::raw::RawConn;

/// How long the daemon may take to answer its first ping.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the daemon may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one `segi-client` invocation may take before the test gives up on it.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// A `segid` running on a socket in its own temporary directory:
/// `dir/segid.sock`, `dir/policies/` (the repository's policies plus the test's own),
/// `dir/state/` and `dir/segid.log` (its stderr).
pub struct Daemon {
    dir: PathBuf,
    child: Mutex<Option<Child>>,
    pid: u32,
}

/// How [`Daemon::stop`] went.
#[derive(Debug, Clone, Copy)]
pub struct Stopped {
    /// The daemon exited by itself after SIGTERM, within [`STOP_TIMEOUT`].
    pub graceful: bool,
    pub status: Option<ExitStatus>,
    pub took: Duration,
}

impl Daemon {
    /// Starts a daemon with the repository's policies.
    pub fn start() -> Daemon {
        Self::start_with_policies(&[])
    }

    /// Starts a daemon with the repository's policies plus `extra` (`(name, toml)`, written to
    /// `policies/<name>.toml`).
    pub fn start_with_policies(extra: &[(&str, &str)]) -> Daemon {
        Self::start_with(extra, &[])
    }

    /// Starts a daemon with the repository's policies plus `extra`, and `args` added to its
    /// command line.
    pub fn start_with(extra: &[(&str, &str)], args: &[&str]) -> Daemon {
        let dir = crate::temp_dir("daemon");
        let policies = dir.join("policies");
        copy_dir(&crate::workspace_dir().join("policies"), &policies);
        for (name, toml) in extra {
            fs::write(policies.join(format!("{name}.toml")), toml).expect("write extra policy");
        }
        Self::start_in(&dir, args)
    }

    /// The daemon shared by every test of this test binary, stopped when the process exits.
    pub fn shared() -> &'static Daemon {
        static SHARED: OnceLock<&'static Daemon> = OnceLock::new();
        SHARED.get_or_init(|| Daemon::start().into_shared())
    }

    /// Keeps this daemon for the rest of the process; it is stopped (and its directory
    /// removed) when the process exits.
    pub fn into_shared(self) -> &'static Daemon {
        let daemon: &'static Daemon = Box::leak(Box::new(self));
        crate::cleanup::at_exit(move || {
            daemon.stop();
            crate::cleanup::remove_dir_safely(&daemon.dir);
        });
        daemon
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn socket(&self) -> PathBuf {
        self.dir.join("segid.sock")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }
    pub fn policies_dir(&self) -> PathBuf {
        self.dir.join("policies")
    }
    pub fn pid(&self) -> u32 {
        self.pid
    }
    /// What the daemon wrote to stderr so far.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("segid.log")).unwrap_or_default()
    }

    fn wait_until_ready(&self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.try_wait() {
                panic!("segid exited during startup with {status}; its log:\n{}", self.log());
            }
            if self.try_ping(Duration::from_millis(500)).is_ok() {
                return;
            }
            if Instant::now() >= deadline {
                panic!("segid did not answer ping within {START_TIMEOUT:?}; its log:\n{}", self.log());
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn try_wait(&self) -> Option<ExitStatus> {
        let mut guard = self.child.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_mut().and_then(|child| child.try_wait().ok().flatten())
    }

    /// Whether the daemon process is still running.
    pub fn is_running(&self) -> bool {
        let mut guard = self.child.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// One ping on a new connection.
    pub fn try_ping(&self, timeout: Duration) -> Result<Value, String> {
        let mut stream = UnixStream::connect(self.socket()).map_err(|e| format!("connect: {e}"))?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        stream
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"alive\",\"method\":\"ping\"}\n")
            .map_err(|e| format!("write: {e}"))?;
        let mut reply = Vec::new();
        let mut byte = [0u8; 4096];
        while !reply.contains(&b'\n') {
            let n = stream.read(&mut byte).map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(format!("closed after {:?}", String::from_utf8_lossy(&reply)));
            }
            reply.extend_from_slice(&byte[..n]);
        }
        let line = &reply[..reply.iter().position(|&b| b == b'\n').unwrap_or(reply.len())];
        let value: Value = serde_json::from_slice(line).map_err(|e| format!("bad reply: {e}"))?;
        if value["result"]["pong"] == Value::Bool(true) && value["id"] == "alive" {
            Ok(value)
        } else {
            Err(format!("unexpected reply {value}"))
        }
    }

    /// Panics unless a ping on a new connection is answered within 5 s.
    pub fn assert_alive(&self) {
        if let Err(e) = self.try_ping(Duration::from_secs(5)) {
            panic!("segid no longer answers ping on a new connection: {e}\nits log:\n{}", self.log());
        }
    }

    /// Opens a raw connection to the socket.
    pub fn raw_connect(&self) -> RawConn {
        RawConn::connect(&self.socket())
    }

    /// SIGTERM, then up to 5 s to exit, then SIGKILL. Does nothing the second time.
    pub fn stop(&self) -> Option<Stopped> {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        let started = Instant::now();
        if let Ok(Some(status)) = child.try_wait() {
            return Some(Stopped { graceful: false, status: Some(status), took: Duration::ZERO });
        }
        // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        while started.elapsed() < STOP_TIMEOUT {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(Stopped { graceful: true, status: Some(status), took: started.elapsed() });
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let status = child.wait().ok();
        Some(Stopped { graceful: false, status, took: started.elapsed() })
    }

    /// Runs `segi-client --socket SOCKET ARGS...` and waits for it (at most [`CLIENT_TIMEOUT`]).
    pub fn client(&self, args: &[&str]) -> Output {
        let mut command = self.client_command(args);
        run_with_timeout(&mut command, CLIENT_TIMEOUT)
    }

    /// `segi-client --socket SOCKET ARGS...`, not started yet.
    pub fn client_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(crate::binary("segi-client"));
        command.arg("--socket").arg(self.socket()).args(args).stdin(Stdio::null());
        command.env_remove("SEGID_SOCKET");
        command
    }

    /// Runs `segi-client --json run ARGS...` and parses its JSON Lines: output events, then
    /// the result object. Panics (showing stderr) when there is no result.
    pub fn run_json(&self, args: &[&str]) -> JsonRun {
        let mut full = vec!["--json", "run"];
        full.extend_from_slice(args);
        let started = Instant::now();
        let output = self.client(&full);
        JsonRun::parse(&args.join(" "), output, started.elapsed())
    }

    /// The daemon's open file descriptors once it is idle: segid keeps one init cloned ahead of
    /// the next run (its pidfd and channel), so wait until that init is there and the list
    /// holds still, or counts taken before and after some runs would differ by timing alone.
    pub fn idle_fds(&self) -> Vec<String> {
        let mut fds = crate::host::open_fds(self.pid);
        crate::poll_until(Duration::from_secs(3), || {
            thread::sleep(Duration::from_millis(20));
            let now = crate::host::open_fds(self.pid);
            let settled = now == fds && now.iter().any(|fd| fd.contains("pidfd"));
            fds = now;
            settled
        });
        fds
    }

    /// Starts another `segid` in the directory of an earlier daemon (`dir()` of a daemon that
    /// was stopped or killed), on the same socket, policies and state directory, with `args`
    /// added to its command line: a restart. Its stderr is appended to `segid.log`. Drop the
    /// new daemon before the old one's directory goes (dropping either removes it).
    pub fn start_in(dir: &Path, args: &[&str]) -> Daemon {
        let log = fs::OpenOptions::new().create(true).append(true).open(dir.join("segid.log")).expect("open segid.log");
        let mut command = Command::new(crate::binary("segid"));
        command
            .arg("--socket")
            .arg(dir.join("segid.sock"))
            .arg("--policies")
            .arg(dir.join("policies"))
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        // A stop lets running runs finish for --stop-timeout (10 s by default): 1 s keeps the
        // suite quick; tests of the stop itself pass their own.
        if !args.contains(&"--stop-timeout") {
            command.args(["--stop-timeout", "1"]);
        }
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "info");
        }
        let child = spawn_tied_to_this_process(command).expect("spawn segid");
        let daemon = Daemon { dir: dir.to_path_buf(), pid: child.id(), child: Mutex::new(Some(child)) };
        daemon.wait_until_ready();
        daemon
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
        crate::cleanup::remove_dir_safely(&self.dir);
    }
}

/// What `segi-client --json run` printed.
#[derive(Debug)]
pub struct JsonRun {
    /// The output events (`{"type":"stdout","text":"..."}`, ...), in order.
    pub events: Vec<Value>,
    pub result: RunResult,
    /// The result object as printed, for fields the typed result does not know.
    pub result_json: Value,
    /// segi-client's exit status.
    pub status: Option<i32>,
    /// segi-client's stderr.
    pub stderr: String,
    /// How long segi-client took.
    pub elapsed: Duration,
}

impl JsonRun {
    fn parse(what: &str, output: Output, elapsed: Duration) -> JsonRun {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let mut values = Vec::new();
        for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Value>(line) {
                Ok(value) => values.push(value),
                Err(e) => panic!(
                    "`segi-client --json run {what}` printed a line that is not JSON ({e}): {line:?}\nstderr: {stderr}"
                ),
            }
        }
        let Some(result_json) = values.pop() else {
            panic!(
                "`segi-client --json run {what}` printed no result (exit status {:?})\nstderr: {stderr}",
                output.status.code()
            );
        };
        let result: RunResult = serde_json::from_value(result_json.clone()).unwrap_or_else(|e| {
            panic!("`segi-client --json run {what}`: the last line is not a result object ({e}): {result_json}\nstderr: {stderr}")
        });
        JsonRun { events: values, result, result_json, status: output.status.code(), stderr, elapsed }
    }

    /// The bytes of every event of `kind` (`stdout` or `stderr`), concatenated.
    pub fn stream(&self, kind: &str) -> Vec<u8> {
        let mut bytes = Vec::new();
        for event in self.events.iter().filter(|e| e["type"] == kind) {
            bytes.extend(event_bytes(event));
        }
        bytes
    }

    /// The program's stdout as text (lossy).
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stream("stdout")).into_owned()
    }

    /// The program's stderr as text (lossy).
    pub fn stderr_events(&self) -> String {
        String::from_utf8_lossy(&self.stream("stderr")).into_owned()
    }

    /// A description of the run for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "result: {}\nprogram stdout: {:?}\nprogram stderr: {:?}\nclient status: {:?}, client stderr: {:?}",
            self.result_json,
            truncate(&self.stdout(), 2000),
            truncate(&self.stderr_events(), 2000),
            self.status,
            truncate(&self.stderr, 2000)
        )
    }
}

/// The bytes an output event carries (`text` or `base64`).
pub fn event_bytes(event: &Value) -> Vec<u8> {
    if let Some(text) = event["text"].as_str() {
        return text.as_bytes().to_vec();
    }
    if let Some(b64) = event["base64"].as_str() {
        return segi_proto::Payload::Base64(b64.to_owned())
            .to_bytes()
            .unwrap_or_else(|e| panic!("event with bad base64 ({e}): {event}"));
    }
    panic!("an output event without text or base64: {event}")
}

/// `text` cut to at most `max` bytes (on a character boundary), saying how long it was.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..end], text.len())
}

/// Runs `command` with its stdout and stderr captured; kills it and panics after `timeout`.
pub fn run_with_timeout(command: &mut Command, timeout: Duration) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| {
        panic!("cannot start {command:?}: {e}");
    });
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_reader = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = out.read_to_end(&mut bytes);
        bytes
    });
    let err_reader = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err_reader.join().unwrap_or_default();
            panic!("{command:?} did not finish within {timeout:?}; its stderr: {}", String::from_utf8_lossy(&stderr));
        }
        thread::sleep(Duration::from_millis(5));
    };
    Output { status, stdout: out_reader.join().unwrap_or_default(), stderr: err_reader.join().unwrap_or_default() }
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Spawns `command` so that it gets SIGTERM when this test process dies, however it dies (a
/// test binary killed by a timeout never runs its exit handlers). The signal follows the death
/// of the spawning *thread*, and libtest ends a thread with each test, so every such child is
/// spawned by one thread that lives as long as the process.
fn spawn_tied_to_this_process(mut command: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        thread::Builder::new()
            .name("segi-tests-spawner".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("start the spawner thread");
        Mutex::new(requests)
    });
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec only async-signal-safe calls are made (prctl, getppid,
    // _exit), touching no memory of the parent.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The test process may have died before the prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (reply, answer) = mpsc::channel();
    spawner.lock().unwrap_or_else(|p| p.into_inner()).send((command, reply)).expect("spawner thread alive");
    answer.recv().expect("spawner thread answered")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    let entries = fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.expect("read_dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("copy {} to {}: {e}", entry.path().display(), target.display()));
        }
    }
}
