//! Program graders (`grade`: program-grader.txt, decisions 18 to 20) end to end: every row of
//! the reference's outcome list, configuration errors, and graders that cannot disturb each
//! other or the original workspace.

use std::path::Path;
use std::time::Duration;

use segi_tests::{host, poll_until, temp_dir, workspace_dir, Daemon};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(120);

fn daemon() -> &'static Daemon {
    Daemon::shared()
}

/// A tar archive of `dir`'s contents (relative paths, symlinks kept), base64 for the request.
fn archive(dir: &Path) -> Value {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    for entry in std::fs::read_dir(dir).expect("read the workspace") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("a name").to_owned();
        if path.is_dir() && !path.is_symlink() {
            builder.append_dir_all(&name, &path).expect("append a directory");
        } else {
            builder.append_path_with_name(&path, &name).expect("append a file");
        }
    }
    let bytes = builder.into_inner().expect("finish the archive");
    json!({"base64": base64(&bytes)})
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
        }
    }
    out
}

fn example_workspace() -> std::path::PathBuf {
    workspace_dir().join("examples/graders/workspace")
}

/// Sends `grade` with `graders` on the example workspace (or `workspace`): `(events, response)`.
fn grade_on(workspace: &Path, graders: Value, input: Value) -> (Vec<Value>, Value) {
    let mut conn = daemon().raw_connect();
    let params = json!({"workspace": {"archive": archive(workspace)}, "graders": graders, "input": input});
    let (events, response) = conn.call_with_id(&json!(1), "grade", params, TIMEOUT);
    (events.into_iter().filter(|e| e["type"] == "grader").collect(), response)
}

fn grade(graders: Value) -> Vec<Value> {
    let (_, response) = grade_on(&example_workspace(), graders, json!({}));
    assert!(response.get("result").is_some(), "grade failed: {response}");
    response["result"]["results"].as_array().expect("results").clone()
}

/// One grader that is a shell script (exec'd through sh, not `shell: true`).
fn sh(script: &str) -> Value {
    grade(json!([{"name": "t", "program": "sh", "args": ["-c", script]}])).remove(0)
}

fn outcome(r: &Value) -> (bool, f64, &str) {
    (
        r["passed"].as_bool().expect("passed"),
        r["score"].as_f64().expect("score"),
        r["message"].as_str().expect("message"),
    )
}

#[test]
fn exit_code_mode_passes_and_fails() {
    let r = sh("echo diagnostics >&2; exit 0");
    assert_eq!(outcome(&r), (true, 1.0, "Grader exited successfully"), "{r}");
    assert_eq!(r["stderr"], "diagnostics\n", "{r}");
    for key in ["cpu_time", "wall_time", "memory"] {
        assert!(r[key].as_f64().is_some_and(|x| x > 0.0), "no {key}: {r}");
    }
    let r = sh("exit 3");
    assert_eq!(outcome(&r), (false, 0.0, "Grader exited with exit code 3"), "{r}");
    assert_eq!(r["exit_code"], 3);
}

#[test]
fn json_mode_returns_a_custom_score() {
    let r = sh(
        r#"echo '{"name": "my-custom-check", "passed": true, "score": 0.85, "evidence": "14 of 16 assertions passed", "kind": "code", "metadata": {"n": 16}}'"#,
    );
    assert_eq!(outcome(&r), (true, 0.85, "Grader exited successfully"), "{r}");
    assert_eq!(
        (r["name"].as_str(), r["evidence"].as_str()),
        (Some("my-custom-check"), Some("14 of 16 assertions passed"))
    );
    assert_eq!((r["kind"].as_str(), &r["metadata"]), (Some("code"), &json!({"n": 16})));
    // The JSON decides whatever the exit code.
    let r = sh(r#"echo '{"passed": false}'; exit 0"#);
    assert_eq!(outcome(&r), (false, 0.0, "Grader exited successfully"), "{r}");
    let r = sh(r#"echo '{"passed": true}'; exit 4"#);
    assert_eq!(outcome(&r), (true, 1.0, "Grader exited with exit code 4"), "{r}");
}

#[test]
fn output_off_the_schema_or_not_json_fails_with_score_0() {
    for bad in [r#"{"passed": true, "score": 1.5}"#, r#"{"passed": "yes"}"#, r#"{"score": 1}"#, r#"[1]"#] {
        let r = sh(&format!("echo '{bad}'"));
        assert_eq!(outcome(&r), (false, 0.0, "Grader output did not match schema"), "{bad}: {r}");
    }
    for bad in ["All tests passed", r#"Checking... {"passed": true}"#, r#"{"passed": true} and more"#] {
        let r = sh(&format!("echo '{bad}'"));
        let (passed, score, message) = outcome(&r);
        assert!(!passed && score == 0.0, "{r}");
        assert!(message.starts_with("Grader returned unparseable JSON output on stdout: SyntaxError: "), "{r}");
    }
}

#[test]
fn a_grader_that_runs_too_long_is_killed_with_its_children() {
    let marker = "segi-grade-timeout-child-4711";
    let graders = json!([{"program": "bash", "args": ["-c", format!("(exec -a {marker} sleep 1000) & sleep 1000")], "timeout": "500ms"}]);
    let r = grade(graders).remove(0);
    assert_eq!(outcome(&r), (false, 0.0, "Grader timed out"), "{r}");
    assert!(r["wall_time"].as_f64().is_some_and(|w| (0.45..2.0).contains(&w)), "{r}");
    assert!(r.get("stderr").is_none(), "the grader itself failed: {r}");
    assert!(poll_until(Duration::from_secs(5), || host::processes_mentioning(marker).is_empty()), "a child survived");
}

#[test]
fn a_program_that_does_not_exist_cannot_start() {
    let r = grade(json!([{"program": "no-such-grader"}])).remove(0);
    assert_eq!(outcome(&r), (false, 0.0, "Failed to start grader program: ENOENT (spawn)"), "{r}");
    let r = grade(json!([{"program": "true", "sub_path": "no/such/dir"}])).remove(0);
    assert_eq!(outcome(&r).2, "Failed to start grader program: ENOENT (spawn)", "{r}");
}

#[test]
fn a_shell_grader_runs_its_words_through_sh() {
    let r =
        grade(json!([{"program": "test -f README.md &&", "args": ["exit", "0", "||", "exit", "9"], "shell": true}]))
            .remove(0);
    assert_eq!(outcome(&r), (true, 1.0, "Grader exited successfully"), "{r}");
    // Without a shell the same words are one program name that does not exist.
    let r = grade(json!([{"program": "test -f README.md &&"}])).remove(0);
    assert_eq!(outcome(&r).2, "Failed to start grader program: ENOENT (spawn)", "{r}");
}

#[test]
fn the_environment_cwd_and_input_are_as_the_reference_says() {
    let script = r#"import json, os
input = json.load(open(os.environ["EVALUATE_GRADER_INPUT"]))
ok = (os.environ["EVALUATE_WORKSPACE"] == "/workspace" and os.getcwd() == "/workspace/src/app"
      and input["stimulus"] == "fix add" and input["config"]["program"] == "python3"
      and os.environ["EXTRA"] == "yes" and os.path.isfile(os.path.join(os.environ["EVALUATE_WORKSPACE"], "output.json")))
try:
    open(os.environ["EVALUATE_GRADER_INPUT"], "w")
    ok = False
except OSError:
    pass
print(json.dumps({"passed": ok, "evidence": os.getcwd()}))
"#;
    let graders =
        json!([{"program": "python3", "args": ["-c", script], "sub_path": "src/app", "env": {"EXTRA": "yes"}}]);
    let (_, response) = grade_on(&example_workspace(), graders, json!({"stimulus": "fix add", "trajectory": []}));
    let r = &response["result"]["results"][0];
    assert!(outcome(r).0, "{r}");
}

#[test]
fn configuration_errors_are_refused_before_anything_runs() {
    let dir = temp_dir("grade-symlink");
    std::fs::write(dir.join("file"), "x").expect("write");
    std::os::unix::fs::symlink("/etc", dir.join("out")).expect("symlink");
    std::os::unix::fs::symlink("..", dir.join("up")).expect("symlink");
    let cases = [
        (json!({"program": "true", "sub_path": "../x"}), "leaves the workspace"),
        (json!({"program": "true", "sub_path": "/etc"}), "absolute"),
        (json!({"program": "true", "sub_path": "out"}), "symlink"),
        (json!({"program": "true", "sub_path": "up/x"}), "symlink"),
        (json!({"program": "true", "env": {"Evaluate_Workspace": "/"}}), "reserved"),
        (json!({"program": "true", "env": {"evaluate_grader_input": "/x"}}), "reserved"),
        (json!({"program": "true", "timeout": "forever"}), "timeout"),
        (json!({"program": "true", "shel": true}), "shel"),
    ];
    for (grader, expected) in cases {
        let (events, response) = grade_on(&dir, json!([grader]), json!({}));
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(response["error"]["code"], -32602, "{grader}: {response}");
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{grader}: expected {expected:?} in {message}");
    }
    daemon().assert_alive();
}

#[test]
fn graders_cannot_disturb_each_other_or_the_original() {
    let before = snapshot(&example_workspace());
    let destroy = json!({"name": "destructive", "program": "python3", "args": ["graders/destructive.py"]});
    let check =
        json!({"name": "check", "program": "sh", "args": ["-c", "test -f output.json && test -f src/app/calc.py"]});
    let (events, response) = grade_on(&example_workspace(), json!([destroy, check, destroy, check]), json!({}));
    let results = response["result"]["results"].as_array().expect("results");
    let passed: Vec<bool> = results.iter().map(|r| r["passed"].as_bool().unwrap()).collect();
    assert_eq!(passed, [true, true, true, true], "{response}");
    assert_eq!(events.len(), 4, "one event per grader");
    assert_eq!(snapshot(&example_workspace()), before, "the original workspace changed");
}

/// Every path below `dir` with its size, to compare before and after.
fn snapshot(dir: &Path) -> Vec<(String, u64)> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read") {
            let path = entry.expect("entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            if meta.is_dir() {
                stack.push(path.clone());
            }
            all.push((path.display().to_string(), meta.len()));
        }
    }
    all.sort();
    all
}

#[test]
fn the_reference_examples_grade_the_example_workspace() {
    let graders = json!([
        {"name": "output-schema", "program": "python3", "args": ["graders/validate_schema.py"], "timeout": "60s"},
        {"name": "unit-tests", "program": "bash", "args": ["graders/check.sh"], "shell": true},
        {"name": "trajectory-score", "program": "node", "args": ["graders/score.js"], "timeout": "120s"},
        {"name": "status-check", "program": "python3", "args": ["-m", "my_checker"],
         "env": {"API_ENDPOINT": "https://test.example.com", "EXPECTED_STATUS": "active"}},
    ]);
    let input: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_dir().join("examples/graders/input.json")).expect("input.json"),
    )
    .expect("JSON");
    let (_, response) = grade_on(&example_workspace(), graders, input);
    let results = response["result"]["results"].as_array().expect("results");
    let by_name =
        |name: &str| results.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("no {name}: {response}"));
    assert!(!outcome(by_name("output-schema")).0);
    assert_eq!(by_name("output-schema")["score"].as_f64(), Some(0.8));
    assert_eq!(outcome(by_name("unit-tests")), (true, 1.0, "Grader exited successfully"));
    assert_eq!(by_name("status-check")["score"].as_f64(), Some(1.0));
    if Path::new("/usr/bin/node").exists() {
        assert_eq!(by_name("trajectory-score")["score"].as_f64(), Some(0.8), "{response}");
    }
    assert_eq!(response["result"]["passed"], false);
}

#[test]
fn the_client_grades_with_the_reference_yaml() {
    let examples = workspace_dir().join("examples/graders");
    let (workspace, config, input) = (
        examples.join("workspace").display().to_string(),
        examples.join("graders.yaml").display().to_string(),
        examples.join("input.json").display().to_string(),
    );
    let out = daemon().client(&["grade", "--workspace", &workspace, "--config", &config, "--input", &input]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // output-schema fails on purpose (examples/graders/README.md): exit 1.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.lines().any(|l| l.starts_with("✘ output-schema  score=0.80")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("✔ unit-tests  score=1.00  Grader exited successfully")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("✔ status-check  score=1.00")), "{stdout}");

    let out = daemon().client(&["--json", "grade", "--workspace", &workspace, "--config", &config, "--input", &input]);
    let results: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let names: Vec<&str> = results.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["output-schema", "unit-tests", "trajectory-score", "status-check"]);
}

#[test]
fn the_client_grades_with_flags_and_exits_0_125() {
    let workspace = example_workspace().display().to_string();
    let out = daemon().client(&[
        "grade",
        "--workspace",
        &workspace,
        "--program",
        "test",
        "--arg",
        "-f",
        "--arg",
        "notes.txt",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out =
        daemon().client(&["grade", "--workspace", &workspace, "--program", "true", "--env", "EVALUATE_WORKSPACE=/"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("reserved"), "{stderr}");
}

#[test]
fn a_workspace_that_is_not_an_archive_is_refused_and_nothing_runs() {
    for workspace in
        [json!({"archive": {"base64": base64(&[b'x'; 1024])}}), json!({}), json!({"archive": {"base64": "!!"}})]
    {
        let mut conn = daemon().raw_connect();
        let params = json!({"workspace": workspace, "graders": [{"program": "true"}]});
        let (events, response) = conn.call_with_id(&json!(1), "grade", params, TIMEOUT);
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(response["error"]["code"], -32602, "{workspace}: {response}");
    }
    daemon().assert_alive();
}
