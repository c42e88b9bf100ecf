//! segid as a service: a stop lets running runs finish (up to `--stop-timeout`) and refuses
//! new ones, SIGHUP reloads the policies, and runs beyond `--max-runs` wait in line and say so.

use std::fs;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use segi_proto::jsonrpc::{CANCELLED, SHUTTING_DOWN};
use segi_tests::{host, poll_until, Daemon};

fn signal(daemon: &Daemon, signal: libc::c_int) {
    // SAFETY: kill(2) on the pid of a daemon this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(daemon.pid() as libc::pid_t, signal) }, 0);
}

/// Reads until the response to `id`, returning the events seen on the way.
fn response(conn: &mut segi_tests::RawConn, id: &str, timeout: Duration) -> (Vec<Value>, Value) {
    conn.wait_response(&json!(id), timeout)
}

#[test]
fn sigterm_lets_a_running_run_finish_and_refuses_new_ones() {
    let daemon = Daemon::start_with(&[], &["--stop-timeout", "20"]);
    let mut conn = daemon.raw_connect();
    conn.send_request(
        &json!("long"),
        "run",
        json!({"command": ["sh", "-c", "echo started; sleep 1; echo finished"], "limits": {"wall_time": 10}}),
    );
    let started = conn.read_json(Duration::from_secs(10));
    assert_eq!(started["params"]["event"]["text"], "started\n", "{started}");
    signal(&daemon, libc::SIGTERM);
    // A new run on the open connection is refused while the first one goes on.
    assert!(
        poll_until(Duration::from_secs(5), || !daemon.socket().exists()),
        "the socket should disappear when the stop begins"
    );
    conn.send_request(&json!("late"), "run", json!({"command": ["true"]}));
    let mut late = None;
    let mut long = None;
    while late.is_none() || long.is_none() {
        let message = conn.read_json(Duration::from_secs(10));
        match message["id"].as_str() {
            Some("late") => late = Some(message),
            Some("long") => long = Some(message),
            _ => {}
        }
    }
    let (late, long) = (late.unwrap(), long.unwrap());
    assert_eq!(late["error"]["code"].as_i64(), Some(SHUTTING_DOWN), "{late}");
    assert_eq!(long["result"]["verdict"], "OK", "the running run should finish: {long}");
    let stopped = daemon.stop().expect("the daemon was running");
    assert!(stopped.status.is_some_and(|s| s.success()), "segid should exit 0 after a stop: {stopped:?}");
}

#[test]
fn sigterm_kills_runs_that_outlast_the_stop_timeout() {
    let daemon = Daemon::start_with(&[], &["--stop-timeout", "0.3"]);
    let mut conn = daemon.raw_connect();
    conn.send_request(
        &json!("forever"),
        "run",
        json!({"command": ["sh", "-c", "echo started; exec sleep 107"], "limits": {"wall_time": 60}}),
    );
    let started = conn.read_json(Duration::from_secs(10));
    assert_eq!(started["params"]["event"]["text"], "started\n", "{started}");
    let signalled = Instant::now();
    signal(&daemon, libc::SIGTERM);
    let (_, answer) = response(&mut conn, "forever", Duration::from_secs(10));
    assert_eq!(answer["error"]["code"].as_i64(), Some(CANCELLED), "{answer}");
    assert!(signalled.elapsed() < Duration::from_secs(3), "the stop took {:?}", signalled.elapsed());
    let stopped = daemon.stop().expect("the daemon was running");
    assert!(stopped.status.is_some_and(|s| s.success()), "{stopped:?}");
    assert!(host::processes_with_argv(&["sleep", "107"]).is_empty(), "the run's process outlived segid");
}

#[test]
fn sighup_reloads_policies_and_keeps_the_old_ones_when_the_new_are_broken() {
    let daemon = Daemon::start();
    let extra = daemon.policies_dir().join("extra.toml");
    let default = fs::read_to_string(daemon.policies_dir().join("default.toml")).unwrap();
    let runs_extra = || daemon.client(&["--json", "run", "--policy", "extra", "--", "true"]).status.success();
    assert!(!runs_extra(), "there is no extra policy yet");

    fs::write(&extra, default.replace("processes = 16", "processes = 7")).unwrap();
    signal(&daemon, libc::SIGHUP);
    assert!(
        poll_until(Duration::from_secs(5), runs_extra),
        "the new policy should be usable after SIGHUP: {}",
        daemon.log()
    );
    let run = daemon.run_json(&["--policy", "extra", "--", "true"]);
    assert_eq!(run.result.limits.processes, Some(7), "{}", run.describe());

    fs::write(daemon.policies_dir().join("broken.toml"), "this is [not toml").unwrap();
    signal(&daemon, libc::SIGHUP);
    assert!(
        poll_until(Duration::from_secs(5), || daemon.log().contains("policies not reloaded")),
        "a broken reload should be logged: {}",
        daemon.log()
    );
    let run = daemon.run_json(&["--policy", "extra", "--", "true"]);
    assert_eq!(run.result.limits.processes, Some(7), "the old policies stay in force: {}", run.describe());
    daemon.assert_alive();
}

#[test]
fn runs_beyond_max_runs_wait_in_line_and_say_so() {
    let daemon = Daemon::start_with(&[], &["--max-runs", "1"]);
    let mut first = daemon.raw_connect();
    first.send_request(
        &json!(1),
        "run",
        json!({"command": ["sh", "-c", "echo busy; sleep 1"], "limits": {"wall_time": 10}}),
    );
    let busy = first.read_json(Duration::from_secs(10));
    assert_eq!(busy["params"]["event"]["text"], "busy\n", "{busy}");
    let mut second = daemon.raw_connect();
    second.send_request(&json!(2), "run", json!({"command": ["echo", "my turn"]}));
    let (events, answer) = second.wait_response(&json!(2), Duration::from_secs(10));
    let queued = events.iter().find(|e| e["type"] == "queued");
    assert!(queued.is_some(), "the waiting run should get a queued event: {events:?}");
    assert_eq!(queued.unwrap()["ahead"], 0, "{events:?}");
    assert_eq!(answer["result"]["verdict"], "OK", "{answer}");
    let (_, first_answer) = first.wait_response(&json!(1), Duration::from_secs(10));
    assert_eq!(first_answer["result"]["verdict"], "OK", "{first_answer}");
}

fn cap_eff(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:")).expect("CapEff").trim().to_string();
    u64::from_str_radix(&hex, 16).unwrap()
}

#[test]
fn as_root_the_daemon_keeps_only_what_runs_need() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: segid drops capabilities only when started as root");
        return;
    }
    let daemon = Daemon::start();
    // CAP_SETUID, CAP_SETGID, CAP_KILL; CAP_DAC_OVERRIDE only where the host's cgroup is 0555.
    let allowed: u64 = (1 << 7) | (1 << 6) | (1 << 5) | (1 << 1);
    let effective = cap_eff(daemon.pid());
    assert_eq!(effective & !allowed, 0, "segid kept more than it needs: {effective:#x}");
    assert_ne!(effective & (1 << 7), 0, "segid needs CAP_SETUID to map a run's own uid: {effective:#x}");
    // The zygote (segid's child) keeps nothing.
    let children = fs::read_to_string(format!("/proc/{0}/task/{0}/children", daemon.pid())).unwrap();
    let zygote: u32 = children.split_whitespace().next().expect("the zygote").parse().unwrap();
    assert_eq!(cap_eff(zygote), 0, "the zygote keeps capabilities");
    // And runs still work.
    assert_eq!(daemon.run_json(&["--", "true"]).result.verdict, segi_tests::Verdict::OK);
}
