//! SEGI evaluations end to end (`evaluate`, segi.txt with decisions 1 to 9): raw protocol
//! requests to the shared daemon, evaluators that are shell scripts or the example problem's
//! Python evaluator, and what streams back.

use std::os::fd::AsRawFd;
use std::time::Duration;

use segi_tests::{temp_dir, workspace_dir, Daemon, RawConn};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(60);

fn daemon() -> &'static Daemon {
    Daemon::shared()
}

/// Sends `evaluate` with `params` and waits for its response: `(events, response)`, the
/// `queued` events left out.
fn evaluate(params: Value) -> (Vec<Value>, Value) {
    let mut conn = daemon().raw_connect();
    let (events, response) = conn.call_with_id(&json!(1), "evaluate", params, TIMEOUT);
    (events.into_iter().filter(|e| e["type"] != "queued").collect(), response)
}

/// An evaluator that is a shell script, with a one-field submission.
fn sh(script: &str) -> (Vec<Value>, Value) {
    evaluate(json!({
        "command": ["sh", "-c", script],
        "submission": [{"field": "source", "filename": "sol.c", "content": {"text": "int main(){}"}}],
    }))
}

fn result(response: &Value) -> &Value {
    assert!(response.get("result").is_some(), "the evaluation failed: {response}");
    &response["result"]
}

/// The text payloads, concatenated.
fn text(events: &[Value]) -> String {
    events.iter().filter(|e| e["type"] == "text").map(|e| e["payload"].as_str().expect("text payload")).collect()
}

fn data(events: &[Value]) -> Vec<Value> {
    events.iter().filter(|e| e["type"] == "data").map(|e| e["payload"].clone()).collect()
}

/// The events without `stderr` ones, as `(type, payload)` pairs, for exact comparisons.
fn stdout_events(events: &[Value]) -> Vec<Value> {
    events.iter().filter(|e| e["type"] == "text" || e["type"] == "data").cloned().collect()
}

fn invalid_params(params: Value) -> String {
    let (_, response) = evaluate(params);
    assert_eq!(response["error"]["code"], -32602, "expected invalid params: {response}");
    response["error"]["message"].as_str().unwrap_or_default().to_string()
}

/// The example problem's files, inline, as the client sends them.
fn example_problem() -> Value {
    let dir = workspace_dir().join("examples/sum");
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read examples/sum") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&dir).expect("inside").to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).expect("a text file");
            files.push(json!({"path": rel, "content": {"text": text}}));
        }
    }
    Value::Array(files)
}

fn example_submission(name: &str) -> Value {
    let path = workspace_dir().join("examples/sum/submissions").join(name);
    let text = std::fs::read_to_string(&path).expect("a submission");
    json!([{"field": "source", "filename": name, "content": {"text": text}}])
}

#[test]
fn the_spec_example_stream_gives_the_spec_events() {
    // segi.txt's example, with the lines decisions 1 restores: `Hello.` and the markers.
    let script = r#"printf 'Hello.\n\n%s\n{"type": "goal", "name": "correct", "outcome": true}\n{"type": "goal", "name": "linear_time", "outcome": false}\n%s\nNice! You got 60 points!\n\n%s\n{"type": "score", "value": 60}\n%s\n' "$EVALUATION_DATA_BEGIN" "$EVALUATION_DATA_END" "$EVALUATION_DATA_BEGIN" "$EVALUATION_DATA_END""#;
    let (events, response) = sh(script);
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    let expected = vec![
        json!({"type": "text", "payload": "Hello."}),
        json!({"type": "text", "payload": "\n"}),
        json!({"type": "data", "payload": {"type": "goal", "name": "correct", "outcome": true}}),
        json!({"type": "data", "payload": {"type": "goal", "name": "linear_time", "outcome": false}}),
        json!({"type": "text", "payload": "Nice! You got 60 points!"}),
        json!({"type": "text", "payload": "\n"}),
        json!({"type": "data", "payload": {"type": "score", "value": 60}}),
    ];
    assert_eq!(stdout_events(&events), expected);
    assert!(result(&response).get("warnings").is_none(), "{response}");
}

#[test]
fn stderr_is_streamed_as_log_output_apart_from_the_events() {
    let (events, response) = sh("echo to-the-log >&2; echo to-the-user");
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    let log: String = events.iter().filter(|e| e["type"] == "stderr").map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(log, "to-the-log\n");
    assert_eq!(text(&events), "to-the-user\n");
}

#[test]
fn submission_files_are_read_only_files_named_by_their_variables() {
    let script = r#"
        set -u
        echo "path=$SUBMISSION_FILE_SOURCE"
        echo "other=$SUBMISSION_FILE_NOTES"
        echo "content=$(cat "$SUBMISSION_FILE_SOURCE")"
        test -f "$SUBMISSION_FILE_SOURCE" && echo regular
        echo x >> "$SUBMISSION_FILE_SOURCE" 2>/dev/null && echo WRITABLE
        rm -f "$SUBMISSION_FILE_SOURCE" 2>/dev/null; test -e "$SUBMISSION_FILE_SOURCE" || echo REMOVED
        chmod 777 "$SUBMISSION_FILE_SOURCE" 2>/dev/null && echo CHMOD
        touch /submission/new 2>/dev/null && echo CREATED
        echo "cwd=$(pwd)"
    "#;
    let (events, response) = evaluate(json!({
        "command": ["sh", "-c", script],
        "submission": [
            {"field": "source", "filename": "main.py", "content": {"text": "print(42)"}},
            {"field": "notes", "filename": "README", "content": {"base64": "aGk="}},
        ],
    }));
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    assert_eq!(
        text(&events),
        "path=/submission/source/main.py\nother=/submission/notes/README\ncontent=print(42)\nregular\ncwd=/box\n"
    );
}

#[test]
fn the_problem_directory_is_the_read_only_working_directory() {
    let script = r#"
        echo "cwd=$(pwd)"
        cat data/case.txt
        ./check.sh
        touch new 2>/dev/null && echo CREATED
        echo x >> data/case.txt 2>/dev/null && echo WRITABLE
        mkdir d 2>/dev/null && echo MKDIR
        echo scratch > /box/ok && echo box-writable
    "#;
    let (events, response) = evaluate(json!({
        "command": ["sh", "-c", script],
        "problem": [
            {"path": "data/case.txt", "content": {"text": "case one\n"}},
            {"path": "check.sh", "content": {"text": "#!/bin/sh\necho checker ran\n"}, "executable": true},
            {"path": "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/deep", "content": {"text": ""}},
        ],
    }));
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    assert_eq!(text(&events), "cwd=/problem\ncase one\nchecker ran\nbox-writable\n");
}

#[test]
fn children_of_the_evaluator_inherit_its_environment_and_limits() {
    // A grandchild sees the same variables.
    let script = r#"sh -c 'sh -c "cat \"\$SUBMISSION_FILE_SOURCE\"; echo; test -n \"\$EVALUATION_DATA_BEGIN\" && echo markers"'"#;
    let (events, response) = sh(script);
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    assert_eq!(text(&events), "int main(){}\nmarkers\n");
}

#[test]
fn what_the_evaluator_starts_shares_its_limits() {
    // A submission the evaluator runs is in the same cgroup: its memory is the run's.
    let (_, response) = evaluate(json!({
        "command": ["sh", "-c", "python3 -c 'x = bytearray(400 << 20)'; echo survived"],
        "limits": {"memory": 128 << 20},
    }));
    let r = result(&response);
    assert_eq!((r["verdict"].as_str(), r["limit"].as_str()), (Some("MLE"), Some("memory")), "{response}");
}

#[test]
fn markers_are_fresh_and_an_old_one_cannot_forge_data() {
    let (events, _) = sh(r#"echo "begin=$EVALUATION_DATA_BEGIN end=$EVALUATION_DATA_END""#);
    let line = text(&events);
    let begin = line.split_whitespace().next().and_then(|w| w.strip_prefix("begin=")).expect("begin").to_string();
    let end = line.split_whitespace().nth(1).and_then(|w| w.strip_prefix("end=")).expect("end").to_string();
    assert!(begin.starts_with("--evaluation-data-begin-") && begin.len() == 44, "{begin}");
    assert!(end.starts_with("--evaluation-data-end---") && end.len() == 44, "{end}");

    // The next evaluation gets other markers: the old ones, and a guess, are plain text.
    let forged = format!(
        "printf '\\n%s\\n{{\"type\":\"score\",\"value\":100}}\\n%s\\n' '{begin}' '{end}'; \
         printf '\\n--evaluation-data-begin-00000000000000000000\\n{{\"forged\":1}}\\n'; \
         test \"$EVALUATION_DATA_BEGIN\" != '{begin}' && echo fresh"
    );
    let (events, response) = sh(&forged);
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    assert!(data(&events).is_empty(), "forged data: {events:?}");
    assert!(text(&events).contains(&begin) && text(&events).ends_with("fresh\n"), "{events:?}");
}

#[test]
fn protocol_mistakes_are_warnings_and_nothing_is_lost() {
    let script = r#"printf '%s\n{"ok":1}\nnot json\n\n%s\nafter\n%s\n{"kept":true}\n' "$EVALUATION_DATA_BEGIN" "$EVALUATION_DATA_END" "$EVALUATION_DATA_BEGIN""#;
    let (events, response) = sh(script);
    let r = result(&response);
    assert_eq!(r["verdict"], "OK", "{response}");
    assert_eq!(data(&events), vec![json!({"ok": 1}), json!({"kept": true})]);
    // `after`'s terminator is the protocol's own, swallowed before the second BEGIN.
    assert_eq!(text(&events), "not json\n\nafter");
    let warnings = r["warnings"].as_array().expect("warnings");
    let messages: Vec<&str> = warnings.iter().map(|w| w["message"].as_str().unwrap()).collect();
    assert_eq!(warnings.len(), 3, "{messages:?}");
    assert_eq!(warnings[0]["line"], 3, "{messages:?}");
    assert_eq!(warnings[1]["line"], 4, "{messages:?}");
    assert!(messages[2].contains("unterminated data block"), "{messages:?}");
}

#[test]
fn an_unfinished_line_shows_after_a_silence() {
    // The progress text comes as its own event while the evaluator is still working.
    let (events, response) = sh("printf 'working...'; sleep 0.3; printf ' done\\n'");
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    let texts: Vec<&str> = events.iter().filter_map(|e| e["payload"].as_str()).collect();
    assert_eq!(texts, ["working...", " done", "\n"]);
}

#[test]
fn an_evaluator_that_crashes_is_re_with_its_output_kept() {
    let (events, response) = sh("echo partial; kill -SEGV $$");
    let r = result(&response);
    assert_eq!(r["verdict"], "RE", "{response}");
    assert_eq!(r["signal"], 11, "{response}");
    assert_eq!(text(&events), "partial\n");
}

#[test]
fn an_evaluator_that_hangs_is_stopped_at_its_time_limits() {
    let (_, response) = evaluate(json!({
        "command": ["sh", "-c", "echo started; sleep 100"],
        "limits": {"wall_time": 0.5},
    }));
    let r = result(&response);
    assert_eq!((r["verdict"].as_str(), r["limit"].as_str()), (Some("TLE"), Some("wall_time")), "{response}");
    let (_, response) = evaluate(json!({"command": ["sh", "-c", "while :; do :; done"], "limits": {"cpu_time": 0.3}}));
    let r = result(&response);
    assert_eq!((r["verdict"].as_str(), r["limit"].as_str()), (Some("TLE"), Some("cpu_time")), "{response}");
}

#[test]
fn an_evaluator_that_floods_stdout_is_stopped_at_the_output_limit() {
    let (events, response) = evaluate(json!({"command": ["yes", "flood"], "limits": {"output": 1 << 20}}));
    let r = result(&response);
    assert_eq!((r["verdict"].as_str(), r["limit"].as_str()), (Some("OLE"), Some("output")), "{response}");
    let streamed = text(&events).len();
    assert!(streamed <= 1 << 20 && streamed > 1 << 19, "{streamed} bytes of text");
    assert_eq!(r["output_bytes"].as_u64(), Some(streamed as u64), "{response}");
}

#[test]
fn a_missing_evaluator_is_re_127_not_a_sandbox_failure() {
    let (_, response) = evaluate(json!({"command": ["./no-such-evaluator"], "problem": []}));
    let r = result(&response);
    assert_eq!((r["verdict"].as_str(), r["exit_code"].as_i64()), (Some("RE"), Some(127)), "{response}");
}

#[test]
fn bad_submission_fields_are_clear_errors() {
    let field = |field: &str, filename: &str| json!({"command": ["true"], "submission": [{"field": field, "filename": filename, "content": {"text": ""}}]});
    for bad in ["Source", "1st", "a-b", "", "_x", "sourcé"] {
        let message = invalid_params(field(bad, "a.c"));
        assert!(message.contains("not a valid name") && message.contains("lowercase"), "{bad}: {message}");
    }
    for bad in ["", "..", "a/b", "."] {
        let message = invalid_params(field("source", bad));
        assert!(message.contains("basename"), "{bad:?}: {message}");
    }
    let twice = json!({"command": ["true"], "submission": [
        {"field": "a", "filename": "x", "content": {"text": ""}},
        {"field": "a", "filename": "y", "content": {"text": ""}},
    ]});
    assert!(invalid_params(twice).contains("given twice"));
    let no_bytes = json!({"command": ["true"], "submission": [{"field": "a", "filename": "x"}]});
    assert!(invalid_params(no_bytes).contains("\"content\""));
    let reserved = json!({"command": ["true"], "env": {"EVALUATION_DATA_BEGIN": "x"}});
    assert!(invalid_params(reserved).contains("set by segid"));
    let reserved = json!({"command": ["true"], "env": {"submission_file_source": "/etc/passwd"}});
    assert!(invalid_params(reserved).contains("set by segid"));
    let escaping = json!({"command": ["true"], "problem": [{"path": "../x", "content": {"text": ""}}]});
    assert!(invalid_params(escaping).contains("inside /problem"));
    let unknown = json!({"command": ["true"], "submision": []});
    assert!(invalid_params(unknown).contains("submision"));
    daemon().assert_alive();
}

#[test]
fn submission_files_may_be_passed_as_descriptors() {
    let dir = temp_dir("evaluate-fd");
    let path = dir.join("solution.c");
    std::fs::write(&path, "passed by descriptor\n").expect("write");
    let file = std::fs::File::open(&path).expect("open");
    let mut conn = daemon().raw_connect();
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "evaluate", "params": {
        "command": ["sh", "-c", "cat \"$SUBMISSION_FILE_SOURCE\""],
        "submission": [{"field": "source", "filename": "solution.c", "fd": 0}],
    }});
    conn.send_with_fds(&request, &[file.as_raw_fd()]);
    let (events, response) = conn.wait_response(&json!(7), TIMEOUT);
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    assert_eq!(text(&events), "passed by descriptor\n");
}

#[test]
fn bad_descriptors_are_clear_errors() {
    let dir = temp_dir("evaluate-badfd");
    let path = dir.join("f");
    std::fs::write(&path, "x").expect("write");
    let file = std::fs::File::open(&path).expect("open");
    let (pipe_read, _pipe_write) = std::io::pipe().expect("pipe");
    let write_only = std::fs::OpenOptions::new().write(true).open(&path).expect("open for writing");
    let request = |fd: usize| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "evaluate", "params": {
            "command": ["true"], "submission": [{"field": "source", "filename": "f", "fd": fd}],
        }})
    };
    let cases: Vec<(Value, Vec<i32>, &str)> = vec![
        (request(1), vec![file.as_raw_fd()], "carried 1 descriptor"),
        (request(0), vec![], "carried 0 descriptor"),
        (request(0), vec![pipe_read.as_raw_fd()], "not a regular file"),
        (request(0), vec![write_only.as_raw_fd()], "not open for reading"),
        (request(0), vec![file.as_raw_fd(), file.as_raw_fd()], "nothing names it"),
    ];
    for (request, fds, expected) in cases {
        let mut conn: RawConn = daemon().raw_connect();
        conn.send_with_fds(&request, &fds);
        let (_, response) = conn.wait_response(&json!(1), TIMEOUT);
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(response["error"]["code"], -32602, "{expected}: {response}");
        assert!(message.contains(expected), "expected {expected:?} in: {message}");
    }
    daemon().assert_alive();
}

#[test]
fn the_example_problem_scores_a_correct_c_submission_100() {
    let (events, response) = evaluate(json!({
        "command": ["python3", "evaluator.py"],
        "problem": example_problem(),
        "submission": example_submission("correct.c"),
    }));
    assert_eq!(result(&response)["verdict"], "OK", "{response}\n{events:?}");
    let data = data(&events);
    assert!(data.contains(&json!({"type": "compilation", "outcome": "success"})), "{data:?}");
    assert!(data.contains(&json!({"type": "goal", "name": "correct", "outcome": true})), "{data:?}");
    assert_eq!(data.last(), Some(&json!({"type": "score", "value": 100})), "{data:?}");
    assert!(text(&events).contains("case 01: correct"), "{}", text(&events));
}

#[test]
fn the_example_problem_reports_a_compilation_error_and_wrong_answers() {
    let (events, response) = evaluate(json!({
        "command": ["python3", "evaluator.py"],
        "problem": example_problem(),
        "submission": example_submission("compile_error.c"),
    }));
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    let values = data(&events);
    assert!(values.iter().any(|d| d["type"] == "compilation" && d["outcome"] == "error"), "{values:?}");
    assert_eq!(values.last(), Some(&json!({"type": "score", "value": 0})), "{values:?}");

    let (events, response) = evaluate(json!({
        "command": ["python3", "evaluator.py"],
        "problem": example_problem(),
        "submission": example_submission("wrong.py"),
    }));
    assert_eq!(result(&response)["verdict"], "OK", "{response}");
    let values = data(&events);
    assert!(values.iter().any(|d| d["type"] == "testcase" && d["outcome"] == "wrong_answer"), "{values:?}");
    assert!(values.contains(&json!({"type": "goal", "name": "correct", "outcome": false})), "{values:?}");
}

#[test]
fn passed_descriptors_are_closed_after_use_or_refusal() {
    // A daemon of its own, so that no other test's runs change its descriptor count.
    let own = Daemon::start();
    let dir = temp_dir("evaluate-fd-leak");
    let path = dir.join("f");
    std::fs::write(&path, "x").expect("write");
    let file = std::fs::File::open(&path).expect("open");
    let mut conn = own.raw_connect();
    // One evaluation first, so that what segid sets up once is there before counting.
    conn.call("evaluate", json!({"command": ["true"]}));
    let before = own.idle_fds();
    for (id, named) in [(1, true), (2, false), (3, true)] {
        let submission = match named {
            true => json!([{"field": "source", "filename": "f", "fd": 0}]),
            false => json!([]),
        };
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "evaluate", "params": {
            "command": ["true"], "submission": submission,
        }});
        conn.send_with_fds(&request, &[file.as_raw_fd(), file.as_raw_fd()][..if named { 1 } else { 2 }]);
        let (_, response) = conn.wait_response(&json!(id), TIMEOUT);
        assert_eq!(response.get("result").is_some(), named, "{response}");
    }
    drop(conn);
    // Descriptor numbers may shift (a new warm init), their number may not grow.
    let settled = segi_tests::poll_until(Duration::from_secs(3), || own.idle_fds().len() <= before.len());
    assert!(settled, "segid holds more descriptors:\nbefore: {before:#?}\nafter: {:#?}", own.idle_fds());
}

/// `segi-client evaluate` on the example problem with `submission`, plus `extra` flags.
fn client_evaluate(submission: &str, extra: &[&str]) -> std::process::Output {
    let problem = workspace_dir().join("examples/sum");
    let source = format!("source={}", problem.join("submissions").join(submission).display());
    let problem = problem.display().to_string();
    let mut args = vec!["evaluate", "--problem", &problem, "--submission", &source];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "python3", "evaluator.py"]);
    daemon().client(&args)
}

#[test]
fn the_client_shows_text_as_it_comes_and_marks_data() {
    let out = client_evaluate("correct.c", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The evaluator's JSON text as it wrote it, key order included.
    for line in [
        "Compiling correct.c...",
        "  data: {\"type\":\"compilation\",\"outcome\":\"success\"}",
        "case 01: correct",
        "  data: {\"type\":\"score\",\"value\":100}",
        "Score: 100/100 (6/6 cases correct)",
    ] {
        assert!(stdout.lines().any(|l| l.starts_with(line)), "no line {line:?} in:\n{stdout}");
    }
    assert!(stderr.contains("segi: OK"), "{stderr}");
}

#[test]
fn the_client_prints_json_lines_with_the_result_last() {
    let out = client_evaluate("crash.c", &["--json", "--env", "SUM_CASE_TIMEOUT=1"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let (result, events) = lines.split_last().expect("a result line");
    assert_eq!(result["verdict"], "OK", "{result}");
    let data = data(events);
    let cases: Vec<&Value> = data.iter().filter(|d| d["type"] == "testcase").collect();
    assert_eq!(cases.len(), 6, "{data:?}");
    assert!(cases.iter().all(|c| c["outcome"] == "runtime_error"), "{cases:?}");
    assert_eq!(data.last(), Some(&json!({"type": "score", "value": 0})));
}

#[test]
fn the_client_refuses_a_bad_field_and_a_missing_file_with_status_125() {
    let problem = workspace_dir().join("examples/sum").display().to_string();
    let source = workspace_dir().join("examples/sum/submissions/correct.c");
    let bad = format!("Source={}", source.display());
    let out = daemon().client(&["evaluate", "--problem", &problem, "--submission", &bad, "--", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("\"Source\" is not a valid name"), "{stderr}");

    let out = daemon().client(&["evaluate", "--submission", "source=/no/such/file.c", "--", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("/no/such/file.c"), "{stderr}");
}

#[test]
fn the_example_problem_stops_a_slow_submission_at_each_case() {
    let out = client_evaluate("slow.py", &["--json", "--env", "SUM_CASE_TIMEOUT=0.3"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("\"outcome\":\"time_limit\"").count(), 6, "{stdout}");
}
