//! Judging (`judge`, Sphere Engine's model: sphere-judges.txt, decisions 15 to 17) end to end:
//! the example packages of `examples/problems/` and small packages made here, solutions in
//! several languages, every status, custom test case judges and master judges that misbehave.

use std::path::Path;
use std::time::Duration;

use segi_tests::{workspace_dir, Daemon};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(120);

fn daemon() -> &'static Daemon {
    Daemon::shared()
}

/// The files of a package directory as the request carries them (`solutions/` left out).
fn package(dir: &Path) -> Vec<Value> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read the package") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(dir).expect("inside").to_string_lossy().into_owned();
            if path.is_dir() {
                if rel != "solutions" {
                    stack.push(path);
                }
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a text file");
            files.push(json!({"path": rel, "content": {"text": text}}));
        }
    }
    files
}

/// `(path, text)` pairs as package files.
fn inline(files: &[(&str, &str)]) -> Vec<Value> {
    files.iter().map(|(path, text)| json!({"path": path, "content": {"text": text}})).collect()
}

/// Sends `judge` and returns `(test events, response)`.
fn judge_request(problem: Vec<Value>, filename: &str, source: &str) -> (Vec<Value>, Value) {
    let mut conn = daemon().raw_connect();
    let params = json!({"problem": problem, "submission": {"filename": filename, "content": {"text": source}}});
    let (events, response) = conn.call_with_id(&json!(1), "judge", params, TIMEOUT);
    (events.into_iter().filter(|e| e["type"] == "test").collect(), response)
}

/// Judges an example solution of `examples/problems/<problem>`.
fn judge_example(problem: &str, solution: &str) -> (Vec<Value>, Value) {
    let dir = workspace_dir().join("examples/problems").join(problem);
    let source = std::fs::read_to_string(dir.join("solutions").join(solution)).expect("the solution");
    judge_request(package(&dir), solution, &source)
}

fn result(response: &Value) -> &Value {
    assert!(response.get("result").is_some(), "judge failed: {response}");
    &response["result"]
}

fn statuses(tests: &[Value]) -> Vec<&str> {
    tests.iter().map(|t| t["status"].as_str().expect("a status")).collect()
}

/// `(status, score)` of the final verdict.
fn verdict(response: &Value) -> (String, f64) {
    let r = result(response);
    (r["status"].as_str().unwrap_or_default().to_string(), r["score"].as_f64().unwrap_or(f64::NAN))
}

#[test]
fn accepted_in_every_language() {
    for solution in ["ac.c", "ac.cpp", "ac.py", "ac.rs", "ac_whitespace.py"] {
        let (tests, response) = judge_example("sum", solution);
        assert_eq!(verdict(&response), ("AC".into(), 0.0), "{solution}: {response}");
        assert_eq!(statuses(&tests), ["AC"; 5], "{solution}: {tests:?}");
        // Events come in test order, and the result repeats them.
        let numbers: Vec<u64> = tests.iter().map(|t| t["test"].as_u64().unwrap()).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4], "{solution}");
        assert_eq!(result(&response)["tests"].as_array().map(Vec::len), Some(5));
        for t in &tests {
            assert!(t["time"].as_f64().is_some_and(|x| (0.0..1.0).contains(&x)), "{t}");
            assert!(t["memory"].as_u64().is_some_and(|m| m > 0 && m < 64 * 1024), "{t}");
            assert_eq!(t["signal"], 0, "{t}");
        }
        let language = result(&response)["language"].as_str().unwrap().to_string();
        let expected = match solution.rsplit_once('.').unwrap().1 {
            "c" => "c",
            "cpp" => "cpp",
            "py" => "python3",
            _ => "rust",
        };
        assert_eq!(language, expected);
    }
}

#[test]
fn every_failure_status_with_its_figures() {
    let (tests, response) = judge_example("sum", "wa.py");
    assert_eq!(verdict(&response), ("WA".into(), 0.0), "{response}");
    assert_eq!(statuses(&tests), ["WA", "WA", "AC", "WA", "WA"]);
    assert!(tests[0]["info"].as_str().is_some_and(|i| i.contains("expected")), "{tests:?}");

    let (tests, response) = judge_example("sum", "tle.c");
    assert_eq!(verdict(&response).0, "TLE", "{response}");
    for t in &tests {
        assert_eq!(t["status"], "TLE", "{t}");
        assert!(t["time"].as_f64().is_some_and(|x| (1.0..1.2).contains(&x)), "{t}");
        assert_eq!(t["signal"], 9, "{t}");
    }

    let (tests, response) = judge_example("sum", "mle.c");
    assert_eq!(verdict(&response).0, "MLE", "{response}");
    assert!(tests.iter().all(|t| t["status"] == "MLE" && t["memory"].as_u64() >= Some(60 * 1024)), "{tests:?}");

    let (tests, response) = judge_example("sum", "re.c");
    assert_eq!((verdict(&response).0.as_str(), result(&response)["signal"].as_i64()), ("RE", Some(11)), "{response}");
    assert!(tests.iter().all(|t| t["status"] == "RE" && t["signal"] == 11), "{tests:?}");

    let (tests, response) = judge_example("sum", "re_exit.py");
    assert_eq!(verdict(&response).0, "RE", "{response}");
    assert!(tests.iter().all(|t| t["signal"] == 0 && t["message"] == "exited with status 3"), "{tests:?}");

    let (tests, response) = judge_example("sum", "ole.c");
    assert_eq!(verdict(&response).0, "OLE", "{response}");
    assert!(tests.iter().all(|t| t["status"] == "OLE"), "{tests:?}");
}

#[test]
fn a_compilation_error_is_ce_with_the_compilers_message() {
    let (tests, response) = judge_example("sum", "ce.c");
    assert!(tests.is_empty(), "{tests:?}");
    let r = result(&response);
    assert_eq!(r["status"], "CE", "{response}");
    assert!(r["message"].as_str().is_some_and(|m| m.contains("error:") && m.contains("main.c")), "{response}");
    assert_eq!(r["compilation"]["exit_code"], 1, "{response}");
    // Python's syntax errors are CE too, and Rust's.
    let (_, response) = judge_request(package(&workspace_dir().join("examples/problems/sum")), "a.py", "print(\n");
    assert_eq!(verdict(&response).0, "CE", "{response}");
    let (_, response) = judge_request(package(&workspace_dir().join("examples/problems/sum")), "a.rs", "fn main() {");
    assert_eq!(verdict(&response).0, "CE", "{response}");
}

#[test]
fn a_custom_judge_accepts_any_root() {
    let (tests, response) = judge_example("roots", "ac_other_root.c");
    assert_eq!(verdict(&response), ("AC".into(), 100.0), "{response}");
    assert!(tests.iter().all(|t| t["info"].as_str().is_some_and(|i| i.starts_with("f(x) ="))), "{tests:?}");
    let (_, response) = judge_example("roots", "ac.py");
    assert_eq!(verdict(&response), ("AC".into(), 100.0), "{response}");
    // percentage: 1 of 5 tests.
    let (_, response) = judge_example("roots", "wa.py");
    assert_eq!(verdict(&response), ("AC".into(), 20.0), "{response}");
}

#[test]
fn the_weighted_master_judge_weighs_each_test() {
    let (_, response) = judge_example("weighted", "partial.py");
    assert_eq!(verdict(&response), ("AC".into(), 70.0), "{response}");
    let (_, response) = judge_example("weighted", "ac.c");
    assert_eq!(verdict(&response), ("AC".into(), 100.0), "{response}");
}

#[test]
fn interactive_problems_wire_the_judge_and_the_program_together() {
    let (tests, response) = judge_example("guess", "ac.c");
    assert_eq!(verdict(&response).0, "AC", "{response}");
    assert!(tests.iter().all(|t| t["info"].as_str().is_some_and(|i| i.starts_with("found in"))), "{tests:?}");
    let (tests, response) = judge_example("guess", "wa.py");
    assert_eq!(verdict(&response).0, "WA", "{response}");
    assert_eq!(statuses(&tests), ["AC", "AC", "WA", "WA"]);
    // Both wait for the other: the program's wall time ends it, never a hang.
    let (tests, response) = judge_example("guess", "silent.py");
    assert_eq!(verdict(&response).0, "TLE", "{response}");
    assert!(tests.iter().all(|t| t["message"].as_str().is_some_and(|m| m.contains("wall time"))), "{tests:?}");
}

#[test]
fn a_custom_master_judge_reads_the_source() {
    let (_, response) = judge_example("master_custom", "ac_while.py");
    assert_eq!(verdict(&response).0, "WA", "{response}");
    let (_, response) = judge_example("master_custom", "ac_for.py");
    assert_eq!(verdict(&response).0, "AC", "{response}");
}

/// A one-test A+B package with `judge_lines` in problem.toml and `extra` files.
fn small_package(judge_lines: &str, extra: &[(&str, &str)]) -> Vec<Value> {
    let toml = format!("time_limit = \"1s\"\nmemory_limit = \"64M\"\njudge_time_limit = \"1s\"\n{judge_lines}\n");
    let mut files = vec![("problem.toml", toml.as_str()), ("tests/0.in", "1 2\n"), ("tests/0.out", "3\n")];
    files.extend_from_slice(extra);
    inline(&files)
}

const AC_PY: &str = "a, b = map(int, input().split())\nprint(a + b)\n";

#[test]
fn test_case_judges_that_misbehave_give_ie() {
    let judges = [
        ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "failed"),
        ("import os\nos.write(1, b'lots of points')\n", "not a number"),
        ("import sys\nsys.exit(2)\n", "exited with 2"),
        ("import sys\nsys.exit(7)\n", "failed"),
        ("while True:\n    pass\n", "time limit"),
        ("def broken(:\n", "does not compile"),
    ];
    for (judge, expected) in judges {
        let problem = small_package("test_judge = { source = \"judge.py\" }", &[("judge.py", judge)]);
        let (tests, response) = judge_request(problem, "a.py", AC_PY);
        let r = result(&response);
        assert_eq!(r["status"], "IE", "{judge}: {response}");
        let message = tests.first().map(|t| t["message"].clone()).unwrap_or_else(|| r["message"].clone());
        assert!(message.as_str().is_some_and(|m| m.contains(expected)), "{judge}: expected {expected:?} in {message}");
    }
}

#[test]
fn a_judge_sees_every_stream_by_its_number() {
    // fd 0 input, 3 the user's output, 4 the model output, 5 the source; 1 score, 7 info.
    let judge = r#"import os
inp, user, model, src = (os.read(fd, 1 << 16) for fd in (0, 3, 4, 5))
os.write(7, b"%d %d %d %d" % (len(inp), len(user), len(model), len(src)))
os.write(1, b"2.5\n")
"#;
    let problem = small_package("test_judge = { source = \"judge.py\" }", &[("judge.py", judge)]);
    let (tests, response) = judge_request(problem, "a.py", AC_PY);
    assert_eq!(verdict(&response), ("AC".into(), 2.5), "{response}");
    assert_eq!(tests[0]["info"], format!("4 2 2 {}", AC_PY.len()), "{tests:?}");
    assert_eq!(tests[0]["score"], 2.5);
}

#[test]
fn master_judges_that_misbehave_give_ie_with_what_they_wrote() {
    let cases = [
        ("print('ACCEPTED 100')\n", "ACCEPTED 100"),
        ("print('AC ten 0 0.5 100')\n", "ten"),
        ("while True:\n    pass\n", "master judge failed"),
        ("import time\ntime.sleep(100)\n", "master judge failed"),
    ];
    for (master, expected) in cases {
        let problem = small_package(
            "test_judge = \"exact\"\nmaster_judge = { source = \"master.py\" }",
            &[("master.py", master)],
        );
        let (_, response) = judge_request(problem, "a.py", AC_PY);
        let r = result(&response);
        assert_eq!(r["status"], "IE", "{master}: {response}");
        assert!(r["message"].as_str().is_some_and(|m| m.contains(expected)), "{master}: {response}");
    }
    // A well-behaved one decides, whatever the tests said.
    let master = "import sys\nlines = sys.stdin.read().split()\nprint('WA 1.5 0', lines[4], lines[5])\n";
    let problem =
        small_package("test_judge = \"exact\"\nmaster_judge = { source = \"master.py\" }", &[("master.py", master)]);
    let (_, response) = judge_request(problem, "a.py", AC_PY);
    let r = result(&response);
    assert_eq!((r["status"].as_str(), r["score"].as_f64()), (Some("WA"), Some(1.5)), "{response}");
}

#[test]
fn bad_packages_and_submissions_are_clear_errors() {
    let cases = [
        (inline(&[("tests/0.in", "")]), "a.py", "problem.toml"),
        (small_package("test_judge = \"nope\"", &[]), "a.py", "not a built-in"),
        (small_package("test_judge = 1", &[]), "a.pas", "no language"),
        (small_package("test_judge = { source = \"missing.c\" }", &[]), "a.py", "not in the problem"),
        (inline(&[("../escape", "")]), "a.py", "inside the problem"),
    ];
    for (problem, filename, expected) in cases {
        let (_, response) = judge_request(problem, filename, AC_PY);
        assert_eq!(response["error"]["code"], -32602, "{response}");
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "expected {expected:?} in: {message}");
    }
    daemon().assert_alive();
}

#[test]
fn tests_run_in_parallel_up_to_the_run_slots() {
    // Each run prints when it started and ended; the judge passes that on as its info.
    let own = Daemon::start_with(&[], &["--max-runs", "4"]);
    let program = "import time\nstart = time.time()\ntime.sleep(0.4)\nprint(start, time.time())\n";
    let judge = "import os\nos.write(7, os.read(3, 100))\n";
    let toml = "time_limit = \"1s\"\nmemory_limit = \"64M\"\ntest_judge = { source = \"judge.py\" }\n";
    let mut files = vec![("problem.toml", toml), ("judge.py", judge)];
    let names: Vec<String> = (0..4).map(|n| format!("tests/{n}.in")).collect();
    files.extend(names.iter().map(|n| (n.as_str(), "")));
    let mut conn = own.raw_connect();
    let params = json!({"problem": inline(&files), "submission": {"filename": "a.py", "content": {"text": program}}});
    let (_, response) = conn.call_with_id(&json!(1), "judge", params, TIMEOUT);
    let spans: Vec<(f64, f64)> = result(&response)["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .map(|t| {
            let info = t["info"].as_str().unwrap_or_else(|| panic!("no info: {t}"));
            let mut times = info.split_whitespace().map(|x| x.parse::<f64>().expect("a time"));
            (times.next().expect("start"), times.next().expect("end"))
        })
        .collect();
    let overlapping = spans.iter().enumerate().any(|(i, a)| spans[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1));
    assert!(overlapping, "no two tests ran at once: {spans:?}");
}

/// `segi-client judge` on an example solution, with `extra` flags first.
fn client_judge(problem: &str, solution: &str, extra: &[&str]) -> std::process::Output {
    let dir = workspace_dir().join("examples/problems").join(problem);
    let (dir_arg, source) = (dir.display().to_string(), dir.join("solutions").join(solution).display().to_string());
    let mut args = extra.to_vec();
    args.extend_from_slice(&["judge", "--problem", &dir_arg, "--submission", &source]);
    daemon().client(&args)
}

#[test]
fn the_client_prints_a_line_per_test_and_the_verdict() {
    let out = client_judge("sum", "ac.c", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    for (n, line) in lines[..5].iter().enumerate() {
        assert!(line.starts_with(&format!("test {n} - AC (score=0.00, sig=0, time=")), "{line}");
        assert!(line.contains(", mem=") && line.ends_with(')'), "{line}");
    }
    assert!(lines[5].starts_with("AC (score=0.00, sig=0, time="), "{stdout}");

    let out = client_judge("sum", "wa.py", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).lines().last().is_some_and(|l| l.starts_with("WA (")));
}

#[test]
fn the_client_prints_json_lines_with_the_verdict_last() {
    let out = client_judge("weighted", "partial.py", &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let (last, tests) = lines.split_last().expect("lines");
    assert_eq!(statuses(tests), ["AC", "WA", "AC"]);
    assert_eq!((last["status"].as_str(), last["score"].as_f64()), (Some("AC"), Some(70.0)), "{last}");
}

#[test]
fn the_client_exits_2_on_ie_and_125_on_a_refused_request() {
    let dir = segi_tests::temp_dir("judge-ie");
    std::fs::create_dir(dir.join("tests")).expect("mkdir");
    std::fs::write(
        dir.join("problem.toml"),
        "time_limit = 1\nmemory_limit = \"64M\"\ntest_judge = { source = \"j.py\" }\n",
    )
    .expect("write");
    std::fs::write(dir.join("j.py"), "import sys\nsys.exit(2)\n").expect("write");
    std::fs::write(dir.join("tests/0.in"), "1 2\n").expect("write");
    let source = dir.join("a.py");
    std::fs::write(&source, AC_PY).expect("write");
    let (dir_arg, source_arg) = (dir.display().to_string(), source.display().to_string());
    let out = daemon().client(&["judge", "--problem", &dir_arg, "--submission", &source_arg]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let out = daemon().client(&["judge", "--problem", &dir_arg, "--submission", &source_arg, "--language", "cobol"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("unknown language \"cobol\""), "{stderr}");
}
