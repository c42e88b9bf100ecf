//! The JSON-RPC protocol beyond single requests: ping and capabilities, live streaming,
//! several requests on one connection, cancel, and a closed connection stopping its runs.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use segi_proto::jsonrpc::{CANCELLED, DUPLICATE_ID};
use segi_proto::Capabilities;
use segi_tests::{host, poll_until, Daemon};

fn daemon() -> &'static Daemon {
    Daemon::shared()
}

#[test]
fn ping_answers_pong_and_version() {
    let mut conn = daemon().raw_connect();
    let (events, response) = conn.call_with_id(&json!("p-1"), "ping", Value::Null, Duration::from_secs(5));
    assert!(events.is_empty());
    assert_eq!(response["jsonrpc"], "2.0", "{response}");
    assert_eq!(response["id"], "p-1", "{response}");
    assert_eq!(response["result"]["pong"], true, "{response}");
    assert!(response["result"]["version"].as_str().is_some_and(|v| !v.is_empty()), "{response}");
    // ping with empty params works too.
    let (_, response) = conn.call("ping", json!({}));
    assert_eq!(response["result"]["pong"], true, "{response}");
}

#[test]
fn capabilities_describe_this_host() {
    let mut conn = daemon().raw_connect();
    let (_, response) = conn.call("capabilities", Value::Null);
    let caps: Capabilities = serde_json::from_value(response["result"].clone())
        .unwrap_or_else(|e| panic!("not a Capabilities object ({e}): {response}"));
    assert!(["v1", "v2", "none"].contains(&caps.cgroup.as_str()), "{response}");
    let host_v1 = std::path::Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists()
        || std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default().contains(":memory:");
    if host_v1 {
        // This host: cgroup v1 with memory, pids and cpuacct (the task's description).
        assert_eq!(caps.cgroup, "v1", "{response}");
        for controller in ["memory", "pids", "cpuacct"] {
            assert!(caps.cgroup_controllers.iter().any(|c| c == controller), "{controller} missing: {response}");
        }
    }
    assert!(caps.seccomp, "{response}");
    assert!(caps.user_namespaces, "{response}");
    for policy in ["default", "compile", "evaluator"] {
        assert!(caps.policies.iter().any(|p| p == policy), "policy {policy} missing: {response}");
    }
    for method in ["ping", "capabilities", "run", "cancel"] {
        assert!(caps.methods.iter().any(|m| m == method), "method {method} missing: {response}");
    }
    assert_eq!(caps.max_message_bytes, segi_proto::MAX_MESSAGE_BYTES, "{response}");
    assert_eq!(caps.version, response["result"]["version"], "{response}");
    // The client shows the same.
    let output = daemon().client(&["--json", "capabilities"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let printed: Value = serde_json::from_slice(&output.stdout).expect("capabilities as JSON");
    assert_eq!(printed["policies"], response["result"]["policies"]);
}

#[test]
fn client_ping() {
    let output = daemon().client(&["ping"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let output = daemon().client(&["--json", "ping"]);
    let printed: Value = serde_json::from_slice(&output.stdout).expect("ping as JSON");
    assert_eq!(printed["pong"], true, "{printed}");
}

#[test]
fn output_is_streamed_live() {
    let mut conn = daemon().raw_connect();
    conn.send_request(&json!("live"), "run", json!({"command": ["sh", "-c", "echo first; sleep 0.5; echo second"]}));
    let started = Instant::now();
    let first = conn.read_json_skipping_queued(Duration::from_secs(5));
    let first_at = started.elapsed();
    assert_eq!(first["method"], "event", "expected an event first: {first}");
    assert_eq!(first["params"]["id"], "live", "{first}");
    assert_eq!(first["params"]["event"], json!({"type": "stdout", "text": "first\n"}), "{first}");
    let (events, response) = conn.wait_response(&json!("live"), Duration::from_secs(10));
    let done_at = started.elapsed();
    assert_eq!(events, [json!({"type": "stdout", "text": "second\n"})], "{response}");
    assert_eq!(response["result"]["verdict"], "OK", "{response}");
    // The first line came while the program still ran, not with the result.
    assert!(done_at >= first_at + Duration::from_millis(400), "first event at {first_at:?}, result at {done_at:?}");
}

#[test]
fn several_requests_on_one_connection() {
    let mut conn = daemon().raw_connect();
    conn.send_request(&json!(1), "run", json!({"command": ["sh", "-c", "sleep 0.5; echo one"]}));
    conn.send_request(&json!(2), "run", json!({"command": ["sh", "-c", "echo two"]}));
    conn.send_request(&json!(3), "ping", Value::Null);
    let mut responses = std::collections::BTreeMap::new();
    let mut events: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while responses.len() < 3 {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = conn.read_json(left);
        if message["method"] == "event" {
            // A run may also be told it waits for a slot (other tests share this daemon).
            if message["params"]["event"]["type"] != "queued" {
                events.push(message["params"].clone());
            }
        } else {
            responses.insert(message["id"].as_i64().expect("numeric id"), message);
        }
    }
    assert_eq!(responses[&1]["result"]["verdict"], "OK");
    assert_eq!(responses[&2]["result"]["verdict"], "OK");
    assert_eq!(responses[&3]["result"]["pong"], true);
    // Each event carries the id of the run that printed it.
    assert!(events.contains(&json!({"id": 1, "event": {"type": "stdout", "text": "one\n"}})), "{events:?}");
    assert!(events.contains(&json!({"id": 2, "event": {"type": "stdout", "text": "two\n"}})), "{events:?}");
    assert_eq!(events.len(), 2, "{events:?}");
}

#[test]
fn a_duplicate_running_id_is_refused() {
    let mut conn = daemon().raw_connect();
    conn.send_request(&json!("dup"), "run", json!({"command": ["sleep", "1"], "limits": {"wall_time": 5}}));
    conn.send_request(&json!("dup"), "run", json!({"command": ["true"]}));
    let first = conn.read_json_skipping_queued(Duration::from_secs(5));
    assert_eq!(first["id"], "dup", "{first}");
    assert_eq!(first["error"]["code"].as_i64(), Some(DUPLICATE_ID), "{first}");
    let (_, response) = conn.wait_response(&json!("dup"), Duration::from_secs(10));
    assert_eq!(response["result"]["verdict"], "OK", "the first run should go on: {response}");
}

#[test]
fn cancel_stops_a_run() {
    let mut conn = daemon().raw_connect();
    conn.send_request(
        &json!("c1"),
        "run",
        json!({"command": ["sh", "-c", "echo started; exec sleep 103"], "limits": {"wall_time": 30}}),
    );
    let started = conn.read_json_skipping_queued(Duration::from_secs(10));
    assert_eq!(started["params"]["event"]["text"], "started\n", "{started}");
    let cancelled_at = Instant::now();
    conn.send_request(&json!("c2"), "cancel", json!({"id": "c1"}));
    let mut run_response = None;
    let mut cancel_response = None;
    while run_response.is_none() || cancel_response.is_none() {
        let message = conn.read_json(Duration::from_secs(5));
        match message["id"].as_str() {
            Some("c1") => run_response = Some(message),
            Some("c2") => cancel_response = Some(message),
            _ => panic!("unexpected message {message}"),
        }
    }
    let (run_response, cancel_response) = (run_response.unwrap(), cancel_response.unwrap());
    assert!(cancelled_at.elapsed() < Duration::from_secs(3), "cancel took {:?}", cancelled_at.elapsed());
    // docs/protocol.md: the answer says whether such a request was still going.
    assert_eq!(cancel_response["result"]["cancelled"], true, "{cancel_response}");
    assert_eq!(run_response["error"]["code"].as_i64(), Some(CANCELLED), "{run_response}");
    assert!(
        poll_until(Duration::from_secs(2), || host::processes_with_argv(&["sleep", "103"]).is_empty()),
        "the cancelled run's process is still alive"
    );
    // Cancelling something that does not run answers `cancelled: false`.
    let (_, response) = conn.call("cancel", json!({"id": "nothing-like-this"}));
    assert_eq!(response["result"]["cancelled"], false, "{response}");
    daemon().assert_alive();
}

#[test]
fn closing_the_connection_stops_its_runs() {
    let mut conn = daemon().raw_connect();
    conn.send_request(
        &json!(1),
        "run",
        json!({"command": ["sh", "-c", "echo started; exec sleep 104"], "limits": {"wall_time": 30}}),
    );
    let started = conn.read_json_skipping_queued(Duration::from_secs(10));
    assert_eq!(started["params"]["event"]["text"], "started\n", "{started}");
    assert!(
        poll_until(Duration::from_secs(2), || !host::processes_with_argv(&["sleep", "104"]).is_empty()),
        "the run's process is not visible on the host"
    );
    drop(conn);
    assert!(
        poll_until(Duration::from_secs(3), || host::processes_with_argv(&["sleep", "104"]).is_empty()),
        "the run went on after its connection closed: {:?}",
        host::processes_with_argv(&["sleep", "104"])
    );
    daemon().assert_alive();
}

#[test]
fn stdin_and_files_over_the_raw_protocol() {
    let mut conn = daemon().raw_connect();
    let (events, response) = conn.call(
        "run",
        json!({
            "command": ["sh", "-c", "cat - in.txt; ./run.sh"],
            "stdin": {"base64": "c3RkaW4K"},
            "files": [
                {"path": "in.txt", "content": {"text": "file\n"}},
                {"path": "run.sh", "content": {"text": "#!/bin/sh\necho script\n"}, "executable": true},
            ],
            "env": {"X": "y"},
        }),
    );
    assert_eq!(response["result"]["verdict"], "OK", "{response}");
    let stdout: String = events.iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(stdout, "stdin\nfile\nscript\n", "{events:?}");
}

#[test]
fn the_client_library_example_judges_over_one_connection() {
    // `cargo test` builds the examples of the workspace next to the binaries.
    let example = segi_tests::bin_dir().join("examples/judge");
    if !example.is_file() {
        panic!("{} is missing: build it with `cargo build --release --examples`", example.display());
    }
    let output = std::process::Command::new(example)
        .env("SEGID_SOCKET", daemon().socket())
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run the judge example");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.ends_with("3/3 passed\n"), "{stdout}");
}

#[test]
fn run_files_may_be_passed_as_descriptors_each_to_its_own_line() {
    use std::os::fd::AsRawFd;
    let dir = segi_tests::temp_dir("run-fd");
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::write(&a, "first file\n").expect("write");
    std::fs::write(&b, "second file\n").expect("write");
    let (a, b) = (std::fs::File::open(&a).expect("open"), std::fs::File::open(&b).expect("open"));
    // Two requests back to back on one connection, each with its own descriptor: each line
    // gets exactly the descriptors sent with it.
    let mut conn = daemon().raw_connect();
    for (id, fd) in [(1, a.as_raw_fd()), (2, b.as_raw_fd())] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "run", "params": {
            "command": ["cat", "in"], "files": [{"path": "in", "fd": 0}],
        }});
        conn.send_with_fds(&request, &[fd]);
    }
    // The two runs go on at once: read until both are answered, sorting messages by id.
    let mut out = [String::new(), String::new()];
    let mut answered = 0;
    while answered < 2 {
        let message = conn.read_json(Duration::from_secs(30));
        let id = message.get("id").or(message["params"].get("id")).and_then(Value::as_u64).expect("an id");
        let slot = &mut out[id as usize - 1];
        match message.get("method") {
            Some(_) => slot.push_str(message["params"]["event"]["text"].as_str().unwrap_or_default()),
            None => {
                assert_eq!(message["result"]["verdict"], "OK", "{message}");
                answered += 1;
            }
        }
    }
    assert_eq!(out, ["first file\n", "second file\n"]);
    // A descriptor sent with a request that names none is refused, and closed.
    conn.send_with_fds(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "run", "params": {"command": ["true"]}}),
        &[a.as_raw_fd()],
    );
    let (_, response) = conn.wait_response(&json!(3), Duration::from_secs(30));
    assert_eq!(response["error"]["code"], -32602, "{response}");
    daemon().assert_alive();
}
