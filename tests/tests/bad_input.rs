//! Bad input over the raw socket: each gets a clear JSON-RPC error (or result message), and
//! after each the daemon still answers a ping on a new connection.

use std::io::Write;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use segi_proto::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use segi_tests::raw::assert_error_shape;
use segi_tests::{Daemon, ReadError};

fn daemon() -> &'static Daemon {
    Daemon::shared()
}

/// Sends `params` to `run` on a fresh connection and asserts a -32602 whose message is
/// non-empty; then checks that the daemon still serves.
fn assert_invalid_params(params: Value) -> String {
    let mut conn = daemon().raw_connect();
    let (events, response) = conn.call("run", params.clone());
    assert!(events.is_empty(), "a refused run produced events: {events:?}");
    assert_error_shape(&response);
    assert_eq!(
        response["error"]["code"].as_i64(),
        Some(INVALID_PARAMS),
        "`run` with {params} should be invalid params, got {response}"
    );
    daemon().assert_alive();
    response["error"]["message"].as_str().unwrap_or_default().to_owned()
}

fn ping_on(conn: &mut segi_tests::RawConn) {
    let (_, response) = conn.call("ping", Value::Null);
    assert_eq!(response["result"]["pong"], true, "{response}");
}

#[test]
fn malformed_json_is_a_parse_error_and_the_connection_goes_on() {
    let mut conn = daemon().raw_connect();
    for bad in [&b"{\"jsonrpc\":\"2.0\",\n"[..], b"not json at all\n", b"{\"a\":1}}\n", b"\xff\xfe\n"] {
        conn.send_raw(bad).unwrap();
        let response = conn.read_json(Duration::from_secs(5));
        assert_error_shape(&response);
        assert_eq!(response["error"]["code"].as_i64(), Some(PARSE_ERROR), "{response}");
        assert_eq!(response["id"], Value::Null, "a parse error has id null: {response}");
        // The same connection still works.
        ping_on(&mut conn);
    }
    daemon().assert_alive();
}

#[test]
fn not_a_request_object_is_an_invalid_request() {
    let mut conn = daemon().raw_connect();
    for bad in [
        json!(42),
        json!("ping"),
        json!({"jsonrpc": "2.0", "id": 1}),
        json!({"jsonrpc": "1.0", "id": 2, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": 7}),
        json!({"id": 4, "method": "ping"}),
    ] {
        conn.send(&bad);
        let response = conn.read_json(Duration::from_secs(5));
        assert_error_shape(&response);
        assert_eq!(response["error"]["code"].as_i64(), Some(INVALID_REQUEST), "{bad} -> {response}");
        ping_on(&mut conn);
    }
    daemon().assert_alive();
}

#[test]
fn unknown_method_is_method_not_found() {
    let mut conn = daemon().raw_connect();
    let (_, response) = conn.call("no_such_method", json!({}));
    assert_error_shape(&response);
    assert_eq!(response["error"]["code"].as_i64(), Some(METHOD_NOT_FOUND), "{response}");
    assert!(
        response["error"]["message"].as_str().unwrap_or("").contains("no_such_method"),
        "the message should name the method: {response}"
    );
    ping_on(&mut conn);
    daemon().assert_alive();
}

#[test]
fn missing_command_is_invalid_params() {
    let message = assert_invalid_params(json!({}));
    assert!(message.contains("command"), "the message should name `command`: {message:?}");
    assert_invalid_params(json!({"command": []}));
    // No params at all.
    let mut conn = daemon().raw_connect();
    let (_, response) = conn.call("run", Value::Null);
    assert_eq!(response["error"]["code"].as_i64(), Some(INVALID_PARAMS), "{response}");
}

#[test]
fn wrong_types_are_invalid_params() {
    for params in [
        json!({"command": "true"}),
        json!({"command": [1, 2]}),
        json!({"command": ["true"], "limits": {"cpu_time": "1s"}}),
        json!({"command": ["true"], "limits": {"memory": 1.5}}),
        json!({"command": ["true"], "env": ["A=B"]}),
        json!({"command": ["true"], "policy": 3}),
        json!({"command": ["true"], "files": [{"path": "a", "content": "x"}]}),
        json!({"command": ["true"], "stdin": "text"}),
        json!([["true"]]),
    ] {
        assert_invalid_params(params);
    }
}

#[test]
fn unknown_fields_are_invalid_params() {
    let message = assert_invalid_params(json!({"command": ["true"], "bogus": 1}));
    assert!(message.contains("bogus"), "the message should name the field: {message:?}");
    assert_invalid_params(json!({"command": ["true"], "limits": {"cpu": 1}}));
    assert_invalid_params(json!({"command": ["true"], "files": [{"path": "a", "content": {"text": ""}, "mode": 7}]}));
}

#[test]
fn negative_and_absurd_limits_are_invalid_params() {
    for limits in [
        json!({"cpu_time": -1}),
        json!({"cpu_time": 1e12}),
        json!({"wall_time": -0.5}),
        json!({"wall_time": 1e300}),
        json!({"memory": -5}),
        json!({"memory": 1e30}),
        json!({"processes": -1}),
        json!({"output": -1}),
        json!({"file_size": -1}),
    ] {
        assert_invalid_params(json!({"command": ["true"], "limits": limits}));
    }
}

#[test]
fn limits_above_the_policy_max_are_invalid_params() {
    // policies/default.toml [limits.max]: cpu 60s, wall 300s, memory 4G, processes 256,
    // output 1G, file_size 1G.
    for (limits, name) in [
        (json!({"cpu_time": 61}), "cpu_time"),
        (json!({"wall_time": 301}), "wall_time"),
        (json!({"memory": 5u64 << 30}), "memory"),
        (json!({"processes": 257}), "processes"),
        (json!({"output": (1u64 << 30) + 1}), "output"),
        (json!({"file_size": 2u64 << 30}), "file_size"),
    ] {
        let message = assert_invalid_params(json!({"command": ["true"], "limits": limits}));
        assert!(message.contains(name), "the message should name `{name}`: {message:?}");
    }
    // Exactly the maximum is allowed (the run itself is `true`).
    let mut conn = daemon().raw_connect();
    let (_, response) = conn.call("run", json!({"command": ["true"], "limits": {"cpu_time": 60, "processes": 256}}));
    assert_eq!(response["result"]["verdict"], "OK", "{response}");
}

#[test]
fn escaping_box_paths_are_invalid_params() {
    let content = json!({"text": "x"});
    for path in ["../x", "/etc/x", "a/../../x", "..", "", "/box/x", "a/../../../etc/passwd"] {
        assert_invalid_params(json!({"command": ["true"], "files": [{"path": path, "content": content}]}));
        assert_invalid_params(json!({"command": ["true"], "collect": [path]}));
    }
}

#[test]
fn unknown_policy_is_invalid_params() {
    let message = assert_invalid_params(json!({"command": ["true"], "policy": "nope"}));
    assert!(message.contains("nope"), "the message should name the policy: {message:?}");
    for name in ["../default", "/etc/passwd", "default/../default", "", "seccomp/deny"] {
        assert_invalid_params(json!({"command": ["true"], "policy": name}));
    }
}

#[test]
fn a_program_that_does_not_exist_is_re_127() {
    let mut conn = daemon().raw_connect();
    for program in ["no-such-program-segi", "/usr/bin/no-such-program-segi", "./missing-in-box"] {
        let (_, response) = conn.call("run", json!({"command": [program]}));
        let result = &response["result"];
        assert_eq!(result["verdict"], "RE", "{program}: {response}");
        assert_eq!(result["exit_code"], 127, "{program}: {response}");
        let message = result["message"].as_str().unwrap_or("");
        assert!(message.contains(program), "{program}: the message should name it: {response}");
    }
}

#[test]
fn a_program_that_is_not_executable_is_re_126() {
    let mut conn = daemon().raw_connect();
    let (_, response) = conn
        .call("run", json!({"command": ["./data"], "files": [{"path": "data", "content": {"text": "#!/bin/sh\n"}}]}));
    assert_eq!(response["result"]["verdict"], "RE", "{response}");
    assert_eq!(response["result"]["exit_code"], 126, "{response}");
}

#[test]
fn an_oversized_line_is_refused_and_others_are_served() {
    let max = segi_proto::MAX_MESSAGE_BYTES;
    let mut conn = daemon().raw_connect();
    let mut writer = conn.stream().try_clone().unwrap();
    writer.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    // Write a request line longer than the maximum, in 1 MiB chunks as a real client would.
    let started = Instant::now();
    let sender = thread::spawn(move || {
        let mut sent = 0usize;
        let head = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":\"";
        if writer.write_all(head).is_err() {
            return sent;
        }
        sent += head.len();
        let chunk = vec![b'a'; 1 << 20];
        while sent <= max + (2 << 20) {
            if writer.write_all(&chunk).is_err() {
                // The daemon closed the connection: expected.
                return sent;
            }
            sent += chunk.len();
        }
        let _ = writer.write_all(b"\"}}\n");
        sent
    });
    // Meanwhile, another connection is served.
    daemon().assert_alive();
    // The oversized request gets an invalid-request error, then the connection closes.
    let response = match conn.read_line(Duration::from_secs(60)) {
        Ok(line) => serde_json::from_slice::<Value>(&line).expect("JSON error response"),
        Err(e) => panic!("no answer to an oversized line: {e:?}"),
    };
    assert_error_shape(&response);
    assert_eq!(response["error"]["code"].as_i64(), Some(INVALID_REQUEST), "{response}");
    match conn.read_line(Duration::from_secs(30)) {
        Err(ReadError::Eof(_)) | Err(ReadError::Io(_)) => {}
        other => panic!("the connection should be closed after an oversized line, got {other:?}"),
    }
    let sent = sender.join().unwrap();
    assert!(sent <= max + (3 << 20), "sent {sent}");
    assert!(started.elapsed() < Duration::from_secs(60));
    daemon().assert_alive();
}

#[test]
fn a_line_just_under_the_maximum_is_read() {
    // A file of 8 MiB inline: large, but well under the limit; the run must see all of it.
    let content = "z".repeat(8 << 20);
    let mut conn = daemon().raw_connect();
    let (_, response) = conn
        .call("run", json!({"command": ["wc", "-c", "big"], "files": [{"path": "big", "content": {"text": content}}]}));
    assert_eq!(response["result"]["verdict"], "OK", "{}", &response.to_string()[..500.min(response.to_string().len())]);
    daemon().assert_alive();
}

#[test]
fn a_half_message_then_disconnect_does_not_hurt() {
    for half in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"meth"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"run\",\"params\":{\"command\":[\"sleep\",\"1",
    ] {
        let mut conn = daemon().raw_connect();
        conn.send_raw(half).unwrap();
        drop(conn);
        daemon().assert_alive();
    }
    // A half message, then shutting down the writing side: the daemon sees EOF mid-line.
    let mut conn = daemon().raw_connect();
    conn.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi").unwrap();
    conn.stream().shutdown(std::net::Shutdown::Write).unwrap();
    match conn.read_line(Duration::from_secs(5)) {
        Ok(line) => {
            // An error for the truncated line is fine; a pong is not.
            let response: Value = serde_json::from_slice(&line).expect("JSON");
            assert!(response.get("error").is_some(), "a truncated request was answered: {response}");
        }
        Err(ReadError::Eof(_)) => {}
        Err(e) => panic!("the daemon neither answered nor closed: {e:?}"),
    }
    daemon().assert_alive();
}

#[test]
fn many_connections_at_once_are_served() {
    let handles: Vec<_> = (0..32)
        .map(|_| {
            thread::spawn(|| {
                let mut conn = daemon().raw_connect();
                for _ in 0..5 {
                    ping_on(&mut conn);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a ping thread failed");
    }
}

#[test]
fn client_usage_errors_exit_125_naming_the_flag() {
    for (args, flag) in [
        (&["run", "--time", "abc", "--", "true"][..], "--time"),
        (&["run", "--memory", "12X", "--", "true"][..], "--memory"),
        (&["run", "--file", "no-equals-sign", "--", "true"][..], "--file"),
    ] {
        let output = daemon().client(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(125), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: the error should name {flag}: {stderr}");
    }
    // Refused by the daemon (above the policy's maximum): also 125, with the daemon's reason.
    let output = daemon().client(&["run", "--memory", "5G", "--", "true"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("memory"), "{stderr}");
    // No daemon on the socket: 125.
    let output = segi_tests::daemon::run_with_timeout(
        std::process::Command::new(segi_tests::binary("segi-client"))
            .args(["--socket", "/nonexistent/segid.sock", "ping"])
            .stdin(std::process::Stdio::null()),
        Duration::from_secs(10),
    );
    assert_eq!(output.status.code(), Some(125), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn cancel_with_bad_params_is_invalid_params_and_stops_nothing() {
    let mut conn = daemon().raw_connect();
    conn.send_request(
        &json!("keep"),
        "run",
        json!({"command": ["sh", "-c", "echo started; sleep 0.5; echo finished"], "limits": {"wall_time": 10}}),
    );
    let started = conn.read_json_skipping_queued(Duration::from_secs(10));
    assert_eq!(started["params"]["event"]["text"], "started\n", "{started}");
    for params in [json!({}), json!({"id": 1, "extra": true}), json!([1, 2]), json!({"ids": ["keep"]})] {
        let (_, response) = conn.call("cancel", params.clone());
        assert_error_shape(&response);
        assert_eq!(response["error"]["code"].as_i64(), Some(INVALID_PARAMS), "cancel {params}: {response}");
    }
    // The run those requests did not name goes on to the end.
    let (events, response) = conn.wait_response(&json!("keep"), Duration::from_secs(10));
    assert_eq!(response["result"]["verdict"], "OK", "{response}");
    let text: String = events.iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(text, "finished\n", "{events:?}");
    daemon().assert_alive();
}
