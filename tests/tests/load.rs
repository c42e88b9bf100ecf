//! Load and faults: many clients at once, clients and daemons that die mid-run, clients that
//! send garbage, and a client that stops reading. Each test has its own `segid`, and the tests
//! of this binary run one at a time, so that what one sees on the host (processes, cgroups,
//! the daemon's memory, timings) is its own.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use segi_tests::daemon::{event_bytes, truncate};
use segi_tests::{compile_c, host, mapping, poll_until, Daemon, RawConn, ReadError, Verdict, SANDBOX_UIDS};

/// The tests of this binary run one at a time (see the module comment).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------------------------------------
// 200 runs from 20 clients
// ---------------------------------------------------------------------------------------------

const CLIENTS: usize = 20;
const RUNS_PER_CLIENT: usize = 10;
/// Clients that use `segi-client` processes; the others speak the protocol on a raw socket.
const CLI_CLIENTS: usize = 4;

#[test]
fn two_hundred_runs_from_twenty_clients() {
    let _serial = one_at_a_time();
    let hello = compile_c("hello");
    let hello_bytes = std::fs::read(&hello).expect("read the compiled hello");
    let hello_file = serde_json::to_value(segi_proto::Payload::from_bytes(&hello_bytes)).expect("payload");
    let hello_mapping = mapping("hello", &hello);
    // Fewer slots than clients on any machine, so that runs queue.
    let daemon = Daemon::start_with(&[], &["--max-runs", "4"]);
    let done = AtomicUsize::new(0);
    let queued = AtomicUsize::new(0);

    let started = Instant::now();
    thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (daemon, done, queued, hello_file, hello_mapping) =
                    (&daemon, &done, &queued, &hello_file, &hello_mapping);
                scope.spawn(move || {
                    if client < CLI_CLIENTS {
                        cli_client(daemon, client, hello_mapping, done)
                    } else {
                        raw_client(daemon, client, hello_file, done, queued)
                    }
                })
            })
            .collect();
        let mut failures = Vec::new();
        for (client, handle) in handles.into_iter().enumerate() {
            if let Err(panic) = handle.join() {
                failures.push(format!("client {client}: {}", panic_text(&panic)));
            }
        }
        assert!(failures.is_empty(), "{} of {CLIENTS} clients failed:\n{}", failures.len(), failures.join("\n"));
    });
    let took = started.elapsed();
    let runs = done.load(Ordering::Relaxed);
    let queued = queued.load(Ordering::Relaxed);
    eprintln!(
        "{runs} runs from {CLIENTS} clients took {took:?} ({:?} per run); {queued} of the {} raw-socket runs were told they were queued",
        took / runs.max(1) as u32,
        (CLIENTS - CLI_CLIENTS) * RUNS_PER_CLIENT
    );
    assert_eq!(runs, CLIENTS * RUNS_PER_CLIENT);
    // 16 clients asking at once for 4 slots: some wait, and are told so.
    assert!(queued > 0, "no run was told it was queued (a `queued` event) with {CLIENTS} clients and 4 slots");
    assert!(took < Duration::from_secs(30), "200 runs took {took:?}");
    daemon.assert_alive();
}

/// A unique number for run `run` of client `client`.
fn run_number(client: usize, run: usize) -> u64 {
    1000 + (client * RUNS_PER_CLIENT + run) as u64
}

/// Runs on one raw connection, one after the other: even runs a shell computing a square,
/// odd runs the compiled `hello` (sent as a file) printing its argument.
fn raw_client(daemon: &Daemon, client: usize, hello_file: &Value, done: &AtomicUsize, queued: &AtomicUsize) {
    let mut conn = daemon.raw_connect();
    for run in 0..RUNS_PER_CLIENT {
        let n = run_number(client, run);
        let (params, expected) = if run % 2 == 0 {
            (json!({"command": ["sh", "-c", format!("n={n}; echo $((n * n))")]}), format!("{}\n", n * n))
        } else {
            (
                json!({
                    "command": ["./hello", format!("client {client} run {run}")],
                    "files": [{"path": "hello", "content": hello_file, "executable": true}],
                }),
                format!("hello\nclient {client} run {run}\n"),
            )
        };
        let id = json!(format!("c{client}-r{run}"));
        let (events, response) = conn.call_with_id(&id, "run", params.clone(), Duration::from_secs(60));
        let result = &response["result"];
        let stdout = stream_of(&events, "stdout");
        let stderr = stream_of(&events, "stderr");
        assert!(
            result["verdict"] == "OK" && result["exit_code"] == 0 && stdout == expected.as_bytes() && stderr.is_empty(),
            "client {client} run {run} ({params}): expected OK with stdout {expected:?}, got {response}\n\
             stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
        assert_eq!(result["output_bytes"], expected.len(), "client {client} run {run}: {response}");
        // A `queued` event comes at most once, before any output, and says how many wait ahead.
        let queued_at: Vec<usize> =
            events.iter().enumerate().filter(|(_, e)| e["type"] == "queued").map(|(i, _)| i).collect();
        if let Some(&at) = queued_at.first() {
            assert!(
                queued_at.len() == 1 && at == 0 && events[at]["ahead"].is_u64(),
                "client {client} run {run}: a queued event that is not alone, first and with a count: {events:?}"
            );
            queued.fetch_add(1, Ordering::Relaxed);
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs through `segi-client` processes, one after the other.
fn cli_client(daemon: &Daemon, client: usize, hello_mapping: &str, done: &AtomicUsize) {
    for run in 0..RUNS_PER_CLIENT {
        let n = run_number(client, run);
        let arg = format!("{}", n * 7);
        let script = format!("n={n}; echo $((n * n))");
        let (args, expected) = if run % 2 == 0 {
            (vec!["--", "sh", "-c", script.as_str()], format!("{}\n", n * n))
        } else {
            (vec!["--file", hello_mapping, "--", "./hello", arg.as_str()], format!("hello\n{arg}\n"))
        };
        let result = daemon.run_json(&args);
        assert!(
            result.result.verdict == Verdict::OK
                && result.result.exit_code == Some(0)
                && result.stdout() == expected
                && result.stderr_events().is_empty(),
            "segi-client {client} run {run} ({args:?}): expected OK with stdout {expected:?}\n{}",
            result.describe()
        );
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// The bytes of the `kind` events (`stdout`, `stderr`) among `events`, other types skipped.
fn stream_of(events: &[Value], kind: &str) -> Vec<u8> {
    events.iter().filter(|e| e["type"] == kind).flat_map(event_bytes).collect()
}

// ---------------------------------------------------------------------------------------------
// A client killed mid-run
// ---------------------------------------------------------------------------------------------

#[test]
fn a_killed_client_leaves_nothing() {
    let _serial = one_at_a_time();
    let daemon = Daemon::start();
    let daemon_pid = daemon.pid();
    let mut client = KillOnDrop(
        daemon
            .client_command(&["run", "--wall-time", "60", "--", "sh", "-c", "sleep 2001 & exec sleep 2002"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn segi-client"),
    );

    // The run's processes: both sleeps and the init above them.
    let mut sleeps = Vec::new();
    let found = poll_until(Duration::from_secs(10), || {
        if let Ok(Some(status)) = client.0.try_wait() {
            panic!("segi-client exited with {status} before its run started; segid's log:\n{}", daemon.log());
        }
        sleeps = descendants(daemon_pid)
            .into_iter()
            .filter(|p| p.cmdline == "sleep 2001" || p.cmdline == "sleep 2002")
            .collect();
        sleeps.len() == 2
    });
    assert!(found, "the run's two sleeps did not appear below segid within 10 s: {sleeps:?}");
    let main = sleeps.iter().find(|p| p.cmdline == "sleep 2002").expect("sleep 2002").clone();
    let init = proc_info(main.ppid).expect("the init of the run");
    let mut run_processes = sleeps.clone();
    run_processes.push(init.clone());
    for p in &run_processes {
        assert!(
            p.uids.iter().all(|u| SANDBOX_UIDS.contains(u)),
            "a process of the run does not run as a sandbox uid: {p:?}"
        );
    }
    let run_cgroups = segi_cgroup_names(main.pid);
    assert!(
        !run_cgroups.is_empty() || daemon_cgroups(daemon_pid).is_empty(),
        "the run is in no segi cgroup, yet segid has {:?}",
        daemon_cgroups(daemon_pid)
    );

    // SIGKILL: the client gets no chance to say anything; the daemon sees the socket close.
    client.0.kill().expect("kill segi-client");
    let killed = Instant::now();
    client.0.wait().expect("reap segi-client");

    let processes_gone = wait_for(Duration::from_secs(5), || run_processes.iter().all(Proc::is_gone));
    let cgroups_gone = wait_for(Duration::from_secs(5), || {
        daemon_cgroups(daemon_pid).is_empty()
            && host::segi_cgroups().iter().all(|c| !run_cgroups.iter().any(|name| c.ends_with(name)))
    });
    eprintln!(
        "after SIGKILL of the client: run processes gone after {:?}, cgroups gone after {:?} (run cgroups {run_cgroups:?})",
        processes_gone.map(|t| t - killed),
        cgroups_gone.map(|t| t - killed)
    );
    let left: Vec<String> = run_processes.iter().filter(|p| !p.is_gone()).map(|p| format!("{p:?}")).collect();
    let processes_gone = processes_gone
        .unwrap_or_else(|| panic!("run processes still alive 5 s after the client was killed: {left:#?}"));
    let cgroups_gone = cgroups_gone.unwrap_or_else(|| {
        panic!("cgroups of segid still there 5 s after the client was killed: {:#?}", daemon_cgroups(daemon_pid))
    });
    assert!(
        processes_gone - killed < Duration::from_millis(500),
        "the run's processes took {:?} to die after the client was killed (the issue asks for 100 ms)",
        processes_gone - killed
    );
    assert!(
        cgroups_gone - killed < Duration::from_secs(1),
        "the run's cgroups took {:?} to go after the client was killed",
        cgroups_gone - killed
    );

    // The daemon goes on serving.
    let mut conn = daemon.raw_connect();
    let (events, response) = conn.call("run", json!({"command": ["echo", "still here"]}));
    assert_eq!(response["result"]["verdict"], "OK", "{response}");
    assert_eq!(stream_of(&events, "stdout"), b"still here\n", "{response}");
}

// ---------------------------------------------------------------------------------------------
// segid killed mid-run, then restarted
// ---------------------------------------------------------------------------------------------

#[test]
fn segid_killed_mid_run_leaves_nothing_after_restart() {
    let _serial = one_at_a_time();
    let old = Daemon::start();
    let old_pid = old.pid();
    let dir = old.dir().to_path_buf();
    let dir_text = dir.display().to_string();

    // Two long runs with children, on two connections.
    let mut conns: Vec<RawConn> = (0..2).map(|_| old.raw_connect()).collect();
    for (i, conn) in conns.iter_mut().enumerate() {
        let script = format!("sleep 300{i} & sleep 300{i} & exec sleep 301{i}");
        conn.send_request(
            &json!(i),
            "run",
            json!({"command": ["sh", "-c", script], "limits": {"wall_time": 60, "cpu_time": 5}}),
        );
    }
    let mut run_processes = Vec::new();
    let started = poll_until(Duration::from_secs(10), || {
        run_processes = descendants(old_pid).into_iter().filter(|p| p.cmdline.starts_with("sleep 30")).collect();
        run_processes.len() == 6
    });
    assert!(started, "the two runs did not start within 10 s: {run_processes:?}\nlog:\n{}", old.log());
    // Everything below segid: the zygote, the inits (warm ones too), the programs.
    let below = descendants(old_pid);
    let cgroups_before_kill = daemon_cgroups(old_pid);
    eprintln!("before SIGKILL: {} processes below segid {old_pid}, its cgroups: {cgroups_before_kill:#?}", below.len());
    assert!(below.len() >= 6 + 3, "expected a zygote, two inits and six sleeps below segid: {below:#?}");
    let state_before: BTreeSet<String> = dir_entries(&old.state_dir());

    // SIGKILL: nothing of segid's own cleanup runs.
    // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
    assert_eq!(unsafe { libc::kill(old_pid as libc::pid_t, libc::SIGKILL) }, 0, "kill segid");
    let killed = Instant::now();
    assert!(poll_until(Duration::from_secs(5), || !old.is_running()), "segid did not die of SIGKILL");

    // The clients see the connection close.
    for (i, conn) in conns.iter_mut().enumerate() {
        match conn.read_line(Duration::from_secs(5)) {
            Err(ReadError::Eof(_)) | Err(ReadError::Io(_)) => {}
            Ok(line) => panic!("connection {i}: a message from a killed segid? {:?}", String::from_utf8_lossy(&line)),
            Err(ReadError::Timeout) => panic!("connection {i} still open 5 s after segid was killed"),
        }
    }

    // Everything below segid dies with it: the zygote and the inits by PR_SET_PDEATHSIG, the
    // programs with their pid namespace.
    let gone = wait_for(Duration::from_secs(5), || below.iter().all(Proc::is_gone));
    eprintln!("after SIGKILL of segid: everything below it gone after {:?}", gone.map(|t| t - killed));
    let alive: Vec<String> = below.iter().filter(|p| !p.is_gone()).map(|p| format!("{p:?}")).collect();
    assert!(alive.is_empty(), "alive 5 s after segid was killed with SIGKILL:\n{}", alive.join("\n"));
    let stale = daemon_cgroups(old_pid);
    eprintln!("cgroups the killed segid left (for the next one to remove): {stale:#?}");

    // A new segid on the same socket and state directory.
    let new = Daemon::start_in(&dir, &[]);
    let mut problems = Vec::new();
    if !poll_until(Duration::from_secs(2), || daemon_cgroups(old_pid).is_empty()) {
        problems.push(format!(
            "cgroups of the killed segid {old_pid} still there after the restart: {:#?}",
            daemon_cgroups(old_pid)
        ));
    }
    for line in host::mounts_mentioning(&dir_text) {
        problems.push(format!("mount: {line}"));
    }
    for p in below.iter().filter(|p| !p.is_gone()) {
        problems.push(format!("process of the killed segid: {p:?}"));
    }
    let old_prefix = format!("segi-{old_pid}-");
    for p in host::processes_with_uid_in(SANDBOX_UIDS) {
        let cgroups = std::fs::read_to_string(format!("/proc/{}/cgroup", p.pid)).unwrap_or_default();
        if cgroups.contains(&old_prefix) && p.state != "Z" {
            problems.push(format!("sandbox process in a cgroup of the killed segid: {p}"));
        }
    }
    // What the killed segid had in its state directory (besides the root mount point, which
    // the new one uses too) is gone.
    let state_after = dir_entries(&new.state_dir());
    for name in state_before.intersection(&state_after).filter(|n| n.as_str() != "root") {
        problems.push(format!("state entry of the killed segid still there: {name}"));
    }

    // The new daemon works, on the same socket.
    let mut conn = new.raw_connect();
    let (events, response) = conn.call("run", json!({"command": ["sh", "-c", "echo after restart"]}));
    if response["result"]["verdict"] != "OK" || stream_of(&events, "stdout") != b"after restart\n" {
        problems.push(format!("a run on the restarted segid failed: {response} {events:?}"));
    }
    let log = new.log();
    drop(conn);
    drop(new);
    drop(old);
    assert!(problems.is_empty(), "after SIGKILL and restart:\n{}\nlog:\n{log}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Garbage next to a good client
// ---------------------------------------------------------------------------------------------

#[test]
fn a_garbage_client_does_not_disturb_a_good_one() {
    let _serial = one_at_a_time();
    let daemon = Daemon::start();
    let daemon_pid = daemon.pid();
    // A first run, so that what the daemon sets up once is counted in the baseline.
    let mut good = daemon.raw_connect();
    let (_, warm) = good.call("run", json!({"command": ["true"]}));
    assert_eq!(warm["result"]["verdict"], "OK", "{warm}");
    let rss_before = vm_kib(daemon_pid, "VmRSS").expect("VmRSS of segid");
    let fds_before = daemon.idle_fds();

    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let (garbage_report, good_report) = thread::scope(|scope| {
        let garbage = scope.spawn(|| spew_garbage(&daemon.socket(), &stop, started + Duration::from_secs(4)));
        // Whatever happens to the good client, the garbage thread is told to stop.
        let stopper = SetOnDrop(&stop);
        let good_result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| good_client(&daemon, &mut good)));
        drop(stopper);
        let garbage_result = garbage.join();
        (garbage_result, good_result)
    });
    let took = started.elapsed();
    let garbage = match garbage_report {
        Ok(report) => report,
        Err(panic) => panic!("the garbage thread panicked: {}", panic_text(&panic)),
    };
    eprintln!(
        "garbage: {} connections, {} MiB sent, {} closed by the daemon; {took:?} in all",
        garbage.connections,
        garbage.bytes_sent >> 20,
        garbage.closed_by_daemon
    );
    if let Err(panic) = good_report {
        panic!(
            "the well-behaved client failed next to the garbage: {}\nsegid log (tail):\n{}",
            panic_text(&panic),
            tail(&daemon.log(), 40)
        );
    }
    assert!(garbage.problems.is_empty(), "garbage connections:\n{}", garbage.problems.join("\n"));
    assert!(garbage.connections >= 10, "only {} garbage connections were made", garbage.connections);

    daemon.assert_alive();
    // Every garbage connection is closed on the daemon's side too, and the runs sent on
    // connections that went away are gone.
    let settled = poll_until(Duration::from_secs(3), || {
        host::open_fds(daemon_pid).len() <= fds_before.len()
            && !descendants(daemon_pid).iter().any(|p| p.cmdline == "sleep 4000")
    });
    assert!(
        settled,
        "after the garbage: segid holds {:?}\n(before: {fds_before:?}), runs of closed connections: {:?}",
        host::open_fds(daemon_pid),
        descendants(daemon_pid).iter().filter(|p| p.cmdline == "sleep 4000").collect::<Vec<_>>()
    );
    // The last connections' buffers are freed once the daemon has seen them close.
    let rss_after = wait_for(Duration::from_secs(3), || {
        vm_kib(daemon_pid, "VmRSS").is_some_and(|rss| rss < rss_before + 200 * 1024)
    });
    let rss_now = vm_kib(daemon_pid, "VmRSS").unwrap_or(0);
    let hwm = vm_kib(daemon_pid, "VmHWM").unwrap_or(0);
    eprintln!("segid VmRSS: {} MiB before, {} MiB after, peak {} MiB", rss_before >> 10, rss_now >> 10, hwm >> 10);
    assert!(
        rss_after.is_some(),
        "segid's memory grew from {} MiB to {} MiB with the garbage (peak {} MiB)",
        rss_before >> 10,
        rss_now >> 10,
        hwm >> 10
    );
}

/// 30 runs, each after a ping on its connection and one on a new connection.
fn good_client(daemon: &Daemon, conn: &mut RawConn) {
    let mut slowest_ping = Duration::ZERO;
    for i in 0..30u64 {
        let asked = Instant::now();
        let (_, pong) = conn.call_with_id(&json!(format!("ping-{i}")), "ping", Value::Null, Duration::from_secs(10));
        let took = asked.elapsed();
        assert_eq!(pong["result"]["pong"], true, "ping {i}: {pong}");
        assert!(took < Duration::from_secs(1), "ping {i} took {took:?}");
        let asked = Instant::now();
        daemon.try_ping(Duration::from_secs(10)).unwrap_or_else(|e| panic!("ping {i} on a new connection: {e}"));
        let took_new = asked.elapsed();
        assert!(took_new < Duration::from_secs(1), "ping {i} on a new connection took {took_new:?}");
        slowest_ping = slowest_ping.max(took).max(took_new);

        let n = 5000 + i;
        let (events, response) = conn.call_with_id(
            &json!(format!("run-{i}")),
            "run",
            json!({"command": ["sh", "-c", format!("n={n}; echo $((n * n)) $((n + 1))")]}),
            Duration::from_secs(30),
        );
        let expected = format!("{} {}\n", n * n, n + 1);
        assert_eq!(response["result"]["verdict"], "OK", "run {i}: {response}");
        assert_eq!(String::from_utf8_lossy(&stream_of(&events, "stdout")), expected, "run {i}: {response} {events:?}");
    }
    eprintln!("good client: 30 runs and 60 pings done, slowest ping {slowest_ping:?}");
}

#[derive(Default)]
struct GarbageReport {
    connections: usize,
    bytes_sent: usize,
    closed_by_daemon: usize,
    problems: Vec<String>,
}

/// Garbage on one connection after another until `stop` is set (and at least until
/// `at_least_until`), each kind in turn.
fn spew_garbage(socket: &Path, stop: &AtomicBool, at_least_until: Instant) -> GarbageReport {
    let mut report = GarbageReport::default();
    let mut random = XorShift(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    let mut kind = 0usize;
    while !stop.load(Ordering::Relaxed) || Instant::now() < at_least_until {
        let stream = match UnixStream::connect(socket) {
            Ok(stream) => stream,
            Err(e) => {
                report.problems.push(format!("connection {}: cannot connect: {e}", report.connections));
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        report.connections += 1;
        let drain = Drain::start(&stream);
        let mut writer = Writer { stream: &stream, sent: 0, closed: false };
        // The huge line only now and then: each costs the daemon 64 MiB for a moment.
        let this_kind = if kind % 8 == 1 && kind > 16 { 0 } else { kind % 8 };
        let what = match this_kind {
            0 => {
                for _ in 0..16 {
                    writer.send(&random.bytes(16 * 1024));
                }
                "random bytes"
            }
            1 => {
                // 70 MiB without a newline: over the 64 MiB limit, so the daemon answers
                // -32600 and closes.
                let chunk = vec![b'a'; 1 << 20];
                for _ in 0..70 {
                    writer.send(&chunk);
                }
                "a 70 MiB line"
            }
            2 => {
                writer.send(br#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":["sh","-c","echo"#);
                "half a run request"
            }
            3 => {
                for line in WRONG_SHAPES {
                    writer.send(line.as_bytes());
                    writer.send(b"\n");
                }
                "valid JSON of the wrong shape"
            }
            4 => {
                writer.send(&vec![b'['; 100_000]);
                writer.send(b"\n");
                writer.send(&"{\"a\":".repeat(50_000).into_bytes());
                writer.send(b"\n");
                let mut balanced = vec![b'['; 100_000];
                balanced.extend(vec![b']'; 100_000]);
                writer.send(&balanced);
                writer.send(b"\n");
                "deep nesting"
            }
            5 => {
                writer.send(b"\xff\xfe\x00\x01\r\n\r\n\n\0\0\0\n\x1b[2J{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"ping\"}\n");
                writer.send(&b"x\n".repeat(20_000));
                "bad UTF-8, control bytes and many short lines"
            }
            6 => {
                // Valid runs, then the connection goes away at once.
                for id in 0..3 {
                    let request = json!({"jsonrpc": "2.0", "id": id, "method": "run",
                        "params": {"command": ["sleep", "4000"], "limits": {"wall_time": 60}}});
                    writer.send(format!("{request}\n").as_bytes());
                }
                "runs, then a close"
            }
            _ => {
                // A request cut in the middle of a string, then a second "request" starting
                // inside it.
                writer.send(br#"{"jsonrpc":"2.0","id":"cut","method":"run","params":{"command":["ec"#);
                writer.send(b"\n");
                writer.send(br#"ho"]}}{"jsonrpc":"2.0","id":2,"method":"ping"}}}}"#);
                "a request cut in two"
            }
        };
        kind += 1;
        report.bytes_sent += writer.sent;
        // Close our side: the daemon must then close its side (and cancel what was started).
        let _ = stream.shutdown(Shutdown::Write);
        let outcome = drain.finish(Duration::from_secs(10));
        if outcome.eof {
            report.closed_by_daemon += 1;
        } else {
            report.problems.push(format!(
                "connection {} ({what}): the daemon kept it open 10 s after the client closed its side",
                report.connections
            ));
        }
        if this_kind == 1 && !outcome.first_line.contains("-32600") {
            report.problems.push(format!(
                "connection {} ({what}): expected error -32600 before the close, got {:?}",
                report.connections,
                truncate(&outcome.first_line, 300)
            ));
        }
        let _ = stream.shutdown(Shutdown::Both);
    }
    report
}

/// JSON that is not a request, or a request with impossible members.
const WRONG_SHAPES: &[&str] = &[
    "[]",
    "[1, 2, 3]",
    r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
    "null",
    "true",
    "12345678901234567890123456789012345678901234567890",
    r#""a string""#,
    "{}",
    r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":{"nested":1},"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":"sh"}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":[1,2]}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":"echo hi"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":[]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":[1,2]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":["true"],"limits":{"memory":-1}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":["true"],"limits":{"cpu_time":1e309}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":["true"],"stdin":{"base64":"!!!"}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":["true"],"files":[{"path":"/etc/passwd","content":{"text":""}}]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"command":["true"],"collect":[1]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"cancel","params":{"id":[1,2]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"cancel"}"#,
    r#"{"jsonrpc":"2.0","id":1.5e300,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","method":"run","params":{"command":["true"]}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"extra":[1,{"a":null}]}}"#,
];

/// Writes to a garbage connection, stopping at the first error (the daemon may close first).
struct Writer<'a> {
    stream: &'a UnixStream,
    sent: usize,
    closed: bool,
}

impl Writer<'_> {
    fn send(&mut self, bytes: &[u8]) {
        if self.closed {
            return;
        }
        let _ = self.stream.set_write_timeout(Some(Duration::from_secs(10)));
        let mut stream = self.stream;
        match stream.write_all(bytes) {
            Ok(()) => self.sent += bytes.len(),
            Err(_) => self.closed = true,
        }
    }
}

/// Reads and discards what the daemon sends on a garbage connection, so that its answers
/// never block it; keeps the first line.
struct Drain {
    handle: thread::JoinHandle<DrainOutcome>,
    stop: std::sync::Arc<AtomicBool>,
}

struct DrainOutcome {
    eof: bool,
    first_line: String,
}

impl Drain {
    fn start(stream: &UnixStream) -> Drain {
        let mut reader = stream.try_clone().expect("clone the stream");
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let told = stop.clone();
        let handle = thread::spawn(move || {
            let _ = reader.set_read_timeout(Some(Duration::from_millis(50)));
            let mut buf = vec![0u8; 1 << 16];
            let mut first = Vec::new();
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => return DrainOutcome { eof: true, first_line: String::from_utf8_lossy(&first).into() },
                    Ok(n) => {
                        if !first.contains(&b'\n') && first.len() < 4096 {
                            first.extend_from_slice(&buf[..n.min(4096)]);
                        }
                    }
                    Err(e)
                        if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) =>
                    {
                        if told.load(Ordering::Relaxed) {
                            return DrainOutcome { eof: false, first_line: String::from_utf8_lossy(&first).into() };
                        }
                    }
                    // A reset is the daemon closing too (with data we never read).
                    Err(_) => return DrainOutcome { eof: true, first_line: String::from_utf8_lossy(&first).into() },
                }
            }
        });
        Drain { handle, stop }
    }

    /// Waits up to `timeout` for the daemon to close the connection.
    fn finish(self, timeout: Duration) -> DrainOutcome {
        let deadline = Instant::now() + timeout;
        while !self.handle.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::Relaxed);
        let mut outcome = self.handle.join().expect("drain thread");
        if let Some(end) = outcome.first_line.find('\n') {
            outcome.first_line.truncate(end);
        }
        outcome
    }
}

/// Sets the flag when dropped, also while unwinding.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n.div_ceil(8)).flat_map(|_| self.next().to_le_bytes()).take(n).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// A client that stops reading
// ---------------------------------------------------------------------------------------------

#[test]
fn a_client_that_stops_reading_does_not_grow_the_daemon() {
    let _serial = one_at_a_time();
    let daemon = Daemon::start();
    let daemon_pid = daemon.pid();
    let mut other = daemon.raw_connect();
    let (_, warm) = other.call("run", json!({"command": ["true"]}));
    assert_eq!(warm["result"]["verdict"], "OK", "{warm}");
    let rss_before = vm_kib(daemon_pid, "VmRSS").expect("VmRSS of segid");

    // A run that writes as fast as it can, on a connection nobody reads.
    let (slow, yes) = start_unread_flood(&daemon, "a line of output that goes nowhere");

    // For 3 s: the daemon's memory, and another client's pings and runs.
    let sampling = Instant::now();
    let mut peak = rss_before;
    let mut slowest_ping = Duration::ZERO;
    let mut slowest_run = Duration::ZERO;
    let mut rounds = 0;
    while sampling.elapsed() < Duration::from_secs(3) {
        let rss = vm_kib(daemon_pid, "VmRSS").expect("VmRSS of segid");
        peak = peak.max(rss);
        assert!(
            rss < rss_before + 100 * 1024,
            "segid's memory grew from {} MiB to {} MiB while a client did not read",
            rss_before >> 10,
            rss >> 10
        );
        let asked = Instant::now();
        let (_, pong) =
            other.call_with_id(&json!(format!("ping-{rounds}")), "ping", Value::Null, Duration::from_secs(10));
        assert_eq!(pong["result"]["pong"], true, "{pong}");
        slowest_ping = slowest_ping.max(asked.elapsed());
        let asked = Instant::now();
        let (events, response) = other.call_with_id(
            &json!(format!("run-{rounds}")),
            "run",
            json!({"command": ["sh", "-c", format!("echo {rounds}")]}),
            Duration::from_secs(20),
        );
        slowest_run = slowest_run.max(asked.elapsed());
        assert_eq!(response["result"]["verdict"], "OK", "{response}");
        assert_eq!(stream_of(&events, "stdout"), format!("{rounds}\n").as_bytes(), "{response}");
        rounds += 1;
    }
    eprintln!(
        "while a client did not read: segid VmRSS {} MiB before, peak {} MiB; {rounds} rounds, slowest ping {slowest_ping:?}, slowest run {slowest_run:?}",
        rss_before >> 10,
        peak >> 10
    );
    assert!(slowest_ping < Duration::from_secs(1), "a ping took {slowest_ping:?} while a client did not read");
    assert!(slowest_run < Duration::from_secs(5), "a run took {slowest_run:?} while a client did not read");

    // The run is still going (held back, not ended), until its connection closes.
    let alive: Vec<&Proc> = yes.iter().filter(|p| !p.is_gone()).collect();
    assert!(!alive.is_empty(), "the yes run ended before its connection closed; log:\n{}", tail(&daemon.log(), 20));
    let _ = slow.stream().shutdown(Shutdown::Both);
    drop(slow);
    let closed = Instant::now();
    let gone = wait_for(Duration::from_secs(5), || {
        yes.iter().all(Proc::is_gone) && !descendants(daemon_pid).iter().any(|p| p.cmdline.starts_with("yes "))
    });
    eprintln!("the yes run was gone {:?} after its connection closed", gone.map(|t| t - closed));
    let gone = gone.unwrap_or_else(|| panic!("yes still running 5 s after its connection closed: {yes:?}"));
    assert!(gone - closed < Duration::from_secs(1), "the yes run took {:?} to go after the close", gone - closed);
    daemon.assert_alive();
}

/// `cancel` gets through on a connection whose client does not read its output (the daemon
/// reads requests apart from writing answers), and kills the run at once; the output held back
/// and both answers then arrive, the run's response last.
#[test]
fn a_client_that_stops_reading_can_still_cancel() {
    let _serial = one_at_a_time();
    let daemon = Daemon::start();
    let cancelled = cancel_a_run_nobody_reads(&daemon);
    eprintln!(
        "cancel on a connection nobody reads: the run was gone after {:?}; {} bytes of output held back",
        cancelled.took, cancelled.output
    );
    assert!(cancelled.took < Duration::from_millis(500), "the run took {:?} to go after its cancel", cancelled.took);
    assert_eq!(cancelled.cancel_answer["result"]["cancelled"], true, "{}", cancelled.cancel_answer);
    assert_eq!(cancelled.run_answer["error"]["code"], segi_proto::jsonrpc::CANCELLED, "{}", cancelled.run_answer);
    assert_eq!(
        cancelled.late_output, 0,
        "{} bytes of output events came after the run's response {}",
        cancelled.late_output, cancelled.run_answer
    );
    daemon.assert_alive();
}

/// The figures of a cancelled run (its error's `data`) count the output it was sent: the
/// `output_bytes` of the result is not less than the bytes of the events before it.
#[test]
fn a_cancelled_run_counts_all_the_output_it_sent() {
    let _serial = one_at_a_time();
    let daemon = Daemon::start();
    // A few tries: the gap shows only when output is in flight at the cancel.
    for attempt in 0..10 {
        let cancelled = cancel_a_run_nobody_reads(&daemon);
        let counted = cancelled.run_answer["error"]["data"]["output_bytes"].as_u64().unwrap_or(0) as usize;
        eprintln!("attempt {attempt}: {} bytes of output events, output_bytes {counted}", cancelled.output);
        assert!(
            cancelled.output <= counted,
            "the cancelled run's events carried {} bytes of output, but its result says output_bytes {counted} \
             ({} bytes more were sent than counted): {}",
            cancelled.output,
            cancelled.output - counted,
            cancelled.run_answer
        );
    }
}

struct Cancelled {
    /// From the cancel to the end of the run's last process.
    took: Duration,
    /// Output bytes of the run's events.
    output: usize,
    /// Output bytes of events that came after the run's response.
    late_output: usize,
    cancel_answer: Value,
    run_answer: Value,
}

/// Starts `yes` on a new connection and does not read until the daemon holds back its output
/// (the program blocks in a pipe write), then sends `cancel` without reading, waits for the
/// program to die, and reads everything.
fn cancel_a_run_nobody_reads(daemon: &Daemon) -> Cancelled {
    let (mut slow, yes) = start_unread_flood(daemon, "more output nobody reads");
    // Everything between the program and the client fills up: the daemon no longer takes
    // output from the pipe, so the program sleeps in a pipe write.
    let blocked = poll_until(Duration::from_secs(5), || {
        stat_of(yes[0].pid).is_some_and(|(state, _, _)| state == 'S')
            // (wchan names the kernel function where it sleeps, where the kernel tells.)
            && std::fs::read_to_string(format!("/proc/{}/wchan", yes[0].pid))
                .map_or(true, |w| w.contains("pipe") || w.trim() == "0" || w.trim().is_empty())
    });
    assert!(blocked, "yes is not held back in a pipe write with nobody reading: {:?}", stat_of(yes[0].pid));

    slow.send_request(&json!("stop"), "cancel", json!({"id": "flood"}));
    let sent = Instant::now();
    let gone = wait_for(Duration::from_secs(5), || yes.iter().all(Proc::is_gone))
        .unwrap_or_else(|| panic!("yes still running 5 s after its cancel: {yes:?}"));

    // Now read: the output held back, then both answers.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut cancel_answer, mut run_answer, mut output, mut late_output) = (None, None, 0usize, 0usize);
    while cancel_answer.is_none() || run_answer.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = slow.read_json(left);
        if message["method"] == "event" {
            let bytes = stream_of(&[message["params"]["event"].clone()], "stdout").len();
            output += bytes;
            if run_answer.is_some() {
                late_output += bytes;
            }
        } else if message["id"] == "stop" {
            cancel_answer = Some(message);
        } else if message["id"] == "flood" {
            run_answer = Some(message);
        } else {
            panic!("an unexpected message: {message}");
        }
    }
    // Nothing more of the run may follow its response.
    while let Ok(line) = slow.read_line(Duration::from_millis(200)) {
        let message: Value = serde_json::from_slice(&line).expect("a JSON line");
        let bytes = stream_of(&[message["params"]["event"].clone()], "stdout").len();
        output += bytes;
        late_output += bytes;
    }
    Cancelled {
        took: gone - sent,
        output,
        late_output,
        cancel_answer: cancel_answer.expect("cancel answered"),
        run_answer: run_answer.expect("run answered"),
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A process as `/proc/<pid>/stat` and `status` show it.
#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    ppid: i32,
    /// Clock ticks after boot: tells a process from a later one that got the same pid.
    start: u64,
    uids: Vec<u32>,
    cmdline: String,
}

impl Proc {
    /// Whether this process has exited (a zombie counts as exited: it runs nothing).
    fn is_gone(&self) -> bool {
        match stat_of(self.pid) {
            None => true,
            Some((state, _, start)) => start != self.start || state == 'Z' || state == 'X',
        }
    }
}

/// `(state, ppid, starttime)` of process `pid`.
fn stat_of(pid: i32) -> Option<(char, i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: parse after the last ')'.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, ppid, start))
}

fn proc_info(pid: i32) -> Option<Proc> {
    let (_, ppid, start) = stat_of(pid)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let uids = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .map(|rest| rest.split_whitespace().filter_map(|u| u.parse().ok()).collect())
        .unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    Some(Proc { pid, ppid, start, uids, cmdline })
}

/// Every living process below `root` (children, their children, ...).
fn descendants(root: u32) -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let table: Vec<(i32, i32)> = entries
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let (state, ppid, _) = stat_of(pid)?;
            (state != 'Z' && state != 'X').then_some((pid, ppid))
        })
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![root as i32];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid) in &table {
            if ppid == parent {
                frontier.push(pid);
                if let Some(p) = proc_info(pid) {
                    found.push(p);
                }
            }
        }
    }
    found
}

/// The `segi-*` components of the cgroup paths of process `pid`.
fn segi_cgroup_names(pid: i32) -> BTreeSet<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.splitn(3, ':').nth(2))
        .flat_map(|path| path.split('/'))
        .filter(|part| part.starts_with("segi-"))
        .map(String::from)
        .collect()
}

/// The run cgroups (`segi-<pid>-<n>`) of the segid with pid `pid`, in every hierarchy.
fn daemon_cgroups(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("segi-{pid}-");
    host::segi_cgroups()
        .into_iter()
        .filter(|c| c.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&prefix)))
        .collect()
}

/// A `kB` figure of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB.
fn vm_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// Polls `condition` every millisecond until it holds (returning when) or `timeout` passes.
fn wait_for(timeout: Duration, mut condition: impl FnMut() -> bool) -> Option<Instant> {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return Some(Instant::now());
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

fn dir_entries(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// A child process killed (and reaped) when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Starts `yes LINE` (request id "flood", output limit 1e9, 10 s) on a new connection that the
/// caller does not read yet; returns the connection and the `yes` processes once they run.
fn start_unread_flood(daemon: &Daemon, line: &str) -> (RawConn, Vec<Proc>) {
    let mut slow = daemon.raw_connect();
    slow.send_request(
        &json!("flood"),
        "run",
        json!({"command": ["yes", line], "limits": {"output": 1_000_000_000u64, "wall_time": 10, "cpu_time": 10}}),
    );
    let mut yes = Vec::new();
    let started = poll_until(Duration::from_secs(10), || {
        yes = descendants(daemon.pid()).into_iter().filter(|p| p.cmdline.starts_with("yes ")).collect();
        !yes.is_empty()
    });
    assert!(started, "the yes run did not start within 10 s; log:\n{}", daemon.log());
    (slow, yes)
}
