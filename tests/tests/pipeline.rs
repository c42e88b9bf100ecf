//! Problem pipelines (`judge` of a problem with a strategy: pipelines.md, decisions 21, 22) end
//! to end: the example problems of `examples/pipelines/` with correct and incorrect
//! solutions, and small packages made here for groups, limits and strategies that misbehave.

use std::path::Path;
use std::time::Duration;

use segi_tests::{workspace_dir, Daemon};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(180);

fn daemon() -> &'static Daemon {
    Daemon::shared()
}

/// Every file of a package directory but `solutions/`, inline (base64: some are ZIPs).
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
            let bytes = std::fs::read(&path).expect("read");
            files.push(json!({"path": rel, "content": payload(&bytes)}));
        }
    }
    files
}

fn payload(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({"text": text}),
        Err(_) => json!({"base64": base64(bytes)}),
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
        }
    }
    out
}

/// Sends `judge`: `(verdict events, response)`.
fn judge(problem: Vec<Value>, filename: &str, source: &[u8]) -> (Vec<Value>, Value) {
    let mut conn = daemon().raw_connect();
    let params = json!({"problem": problem, "submission": {"filename": filename, "content": payload(source)}});
    let (events, response) = conn.call_with_id(&json!(1), "judge", params, TIMEOUT);
    (events.into_iter().filter(|e| e["type"] == "verdict").collect(), response)
}

fn result(response: &Value) -> &Value {
    assert!(response.get("result").is_some(), "judge failed: {response}");
    &response["result"]
}

/// `(verdict, points)` of the submission.
fn verdict(response: &Value) -> (String, f64) {
    let r = result(response);
    (r["verdict"].as_str().unwrap_or_default().to_string(), r["points"].as_f64().unwrap_or(f64::NAN))
}

fn test_verdicts(response: &Value) -> Vec<String> {
    result(response)["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .map(|t| t["verdict"].as_str().unwrap().to_string())
        .collect()
}

/// A package: problem.toml `toml`, a Python testlib checker comparing tokens, `tests` as
/// `(input, answer)`, and `extra` files.
fn small(toml: &str, tests: &[(&str, &str)], extra: &[(&str, &str)]) -> Vec<Value> {
    const CHECKER: &str = "import sys\nout, ans = open(sys.argv[2]).read().split(), open(sys.argv[3]).read().split()\n\
        if out == ans:\n    sys.exit(0)\nprint('expected', ans, 'got', out, file=sys.stderr)\nsys.exit(1)\n";
    let mut files = vec![json!({"path": "problem.toml", "content": {"text": format!(
        "time_limit = \"1s\"\nmemory_limit = \"64M\"\nstrategy_time_limit = \"2s\"\n{toml}\n\
         [executables.checker]\nsource = \"checker.py\"\nkind = \"testlib\"\n")}})];
    files.push(json!({"path": "checker.py", "content": {"text": CHECKER}}));
    for (n, (input, answer)) in tests.iter().enumerate() {
        files.push(json!({"path": format!("tests/{n}.in"), "content": {"text": input}}));
        files.push(json!({"path": format!("tests/{n}.out"), "content": {"text": answer}}));
    }
    for (path, text) in extra {
        files.push(json!({"path": path, "content": {"text": text}}));
    }
    files
}

const SUM_TESTS: [(&str, &str); 3] = [("1 2\n", "3\n"), ("5 5\n", "10\n"), ("7 0\n", "7\n")];
const AC_PY: &[u8] = b"a, b = map(int, input().split())\nprint(a + b)\n";
const WA_PY: &[u8] = b"a, b = map(int, input().split())\nprint(a - b)\n";

/// Judges `solution` of `examples/pipelines/<problem>`.
fn example(problem: &str, solution: &str) -> Value {
    let dir = workspace_dir().join("examples/pipelines").join(problem);
    let source = std::fs::read(dir.join("solutions").join(solution)).expect("the solution");
    judge(package(&dir), solution, &source).1
}

#[test]
fn the_example_problems_give_their_documented_verdicts() {
    // (problem, solution, verdict, points): as each example's README states.
    let cases: &[(&str, &str, &str, Option<f64>)] = &[
        ("standard", "ac.cpp", "AC", Some(4.0)),
        ("standard", "ac.py", "AC", Some(4.0)),
        ("standard", "wa.py", "WA 3", None),
        ("standard", "pe.py", "PE 1", None),
        ("standard", "tle.c", "TLE 1", None),
        ("standard", "re.py", "RE 1", None),
        ("standard", "ce.cpp", "CE", None),
        ("run_twice", "ac.py", "AC", Some(6.0)),
        ("run_twice", "ac.cpp", "AC", Some(6.0)),
        ("run_twice", "wa.py", "WA 6", None),
        ("run_twice", "pe.py", "PE 1", None),
        ("interactive", "ac.cpp", "AC", None),
        ("interactive", "ac.py", "AC", None),
        ("interactive", "wa_linear.py", "WA 3", None),
        ("interactive", "ile_noflush.py", "ILE 1", None),
        ("file_io", "ac.py", "AC", None),
        ("file_io", "ac.c", "AC", None),
        ("file_io", "ac_stdio.py", "AC", None),
        ("file_io", "wa.py", "WA 1", None),
        ("output_only", "ac.zip", "AC", None),
        ("output_only", "missing.zip", "PE 2", None),
        ("output_only", "wa.zip", "WA 3", None),
        ("output_only", "not_a_zip.txt", "PE 1", None),
        ("raw", "good.txt", "AC", None),
        ("raw", "bad.txt", "WA 2", None),
        ("raw", "garbage.txt", "PE 1", None),
        ("compile_with_grader", "ac.cpp", "AC", None),
        ("compile_with_grader", "ac.py", "AC", None),
        ("compile_with_grader", "wa.cpp", "WA 4", None),
        ("compile_with_grader", "ce_main.cpp", "CE", None),
        ("compile_with_grader", "unsupported.c", "CE", None),
        ("arbitrary_compilation", "ac.cpp", "AC", Some(3.0)),
        ("arbitrary_compilation", "wa.cpp", "WA 3", None),
        ("arbitrary_compilation", "ce.cpp", "CE 1", None),
        ("efficiency", "fast.c", "AC", Some(30.0)),
        ("efficiency", "slow.c", "PT", None),
        ("efficiency", "wa.py", "PT", Some(20.0)),
        ("groups", "ac.py", "AC", Some(100.0)),
        ("groups", "fails_g1.py", "PT", Some(0.0)),
        ("groups", "fails_g2.py", "PT", Some(70.0)),
        ("valuer", "ac.py", "PT", None),
        ("valuer", "fails_one.py", "PT", Some(0.0)),
        ("broken/raises", "ac.py", "CF", None),
        ("broken/loops", "ac.py", "CF", None),
        ("broken/escapes", "ac.py", "AC", None),
        ("broken/escapes", "tle.c", "TLE 1", None),
        ("broken/escapes", "mle.py", "MLE 1", None),
    ];
    let mut wrong = Vec::new();
    for &(problem, solution, expected, points) in cases {
        let response = example(problem, solution);
        let (got, got_points) = verdict(&response);
        if got != expected || points.is_some_and(|p| (p - got_points).abs() > 1e-6) {
            wrong.push(format!(
                "{problem}/{solution}: expected {expected} {points:?}, got {got} {got_points}: {response}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_standard_strategy_judges_each_test_with_the_checker() {
    let problem = small("strategy = \"standard\"", &SUM_TESTS, &[]);
    let (events, response) = judge(problem.clone(), "a.py", AC_PY);
    assert_eq!(verdict(&response), ("AC".into(), 3.0), "{response}");
    assert!(events.is_empty(), "no failure, no update: {events:?}");
    let (events, response) = judge(problem.clone(), "a.py", WA_PY);
    // 7 - 0 = 7: the third test passes.
    assert_eq!(verdict(&response).0, "WA 1", "{response}");
    assert_eq!(test_verdicts(&response), ["WA", "WA", "OK"]);
    assert!(result(&response)["tests"][0]["comment"].as_str().is_some_and(|c| c.contains("expected")), "{response}");
    assert_eq!(events.len(), 2, "realtime updates: {events:?}");
    let (events, response) = judge(problem, "a.py", b"print(\n");
    assert_eq!(verdict(&response).0, "CE", "{response}");
    assert!(result(&response)["comment"].as_str().is_some_and(|c| c.contains("SyntaxError")), "{response}");
    assert_eq!(result(&response)["tests"], json!([]), "no test was judged: {response}");
    assert_eq!(events.first().map(|e| &e["verdict"]), Some(&json!("CE")), "{events:?}");
}

#[test]
fn user_failures_are_their_verdicts_and_limits_cannot_be_loosened() {
    let problem = small("strategy = \"standard\"", &SUM_TESTS[..1], &[]);
    let (_, response) = judge(problem.clone(), "a.py", b"while True:\n    pass\n");
    assert_eq!(test_verdicts(&response), ["TLE"], "{response}");
    let (_, response) = judge(problem.clone(), "a.py", b"import time\ntime.sleep(100)\n");
    assert_eq!(test_verdicts(&response), ["ILE"], "{response}");
    let (_, response) = judge(problem.clone(), "a.py", b"raise SystemExit(3)\n");
    assert_eq!(test_verdicts(&response), ["RE"], "{response}");
    let (_, response) = judge(problem, "a.py", b"x = bytearray(300 << 20)\n");
    assert_eq!(test_verdicts(&response), ["MLE"], "{response}");
    // A strategy asking for more time and memory still gets the problem's.
    let strategy = "user = await compile(submission)\nfor test in tests:\n    with test:\n        \
        output = File()\n        user(stdin=test.input, stdout=output, limits=Limits(time=100, memory=8 << 30, real_time=100))\n        \
        checker(test.input, output, test.answer)\n";
    let problem = small("strategy = { source = \"strategy.py\" }", &SUM_TESTS[..1], &[("strategy.py", strategy)]);
    let (_, response) = judge(problem, "a.py", b"while True:\n    pass\n");
    let test = &result(&response)["tests"][0];
    assert_eq!(test["verdict"], "TLE", "{response}");
    assert!(test["time"].as_f64().is_some_and(|t| t < 1.5), "{response}");
}

#[test]
fn strategies_that_misbehave_are_cf_and_the_daemon_goes_on() {
    for (strategy, expected) in [
        ("raise RuntimeError('the strategy is broken')\n", "the strategy is broken"),
        ("while True:\n    pass\n", "strategy failed"),
        ("import os\nos.kill(os.getpid(), 9)\n", "strategy failed"),
        ("x = undefined_name\n", "undefined_name"),
    ] {
        let problem = small("strategy = { source = \"strategy.py\" }", &SUM_TESTS[..1], &[("strategy.py", strategy)]);
        let (_, response) = judge(problem, "a.py", AC_PY);
        let r = result(&response);
        assert_eq!(r["verdict"], "CF", "{strategy}: {response}");
        assert!(r["comment"].as_str().is_some_and(|c| c.contains(expected)), "{strategy}: {response}");
    }
    daemon().assert_alive();
}

#[test]
fn groups_with_dependencies_and_both_points_policies() {
    let toml = "strategy = \"standard\"\npoints = [0, 2, 2, 3, 3]\n\
        [[groups]]\nname = \"samples\"\ntests = [1]\nfeedback_policy = \"complete\"\n\
        [[groups]]\nname = \"g1\"\ntests = [2, 3]\npoints_policy = \"complete-group\"\nfeedback_policy = \"icpc\"\n\
        [[groups]]\nname = \"g2\"\ntests = [4, 5]\npoints_policy = \"each-test\"\nfeedback_policy = \"points\"\ndependencies = [\"g1\"]";
    let tests = [("1 1\n", "2\n"), ("2 2\n", "4\n"), ("3 3\n", "6\n"), ("4 4\n", "8\n"), ("5 5\n", "10\n")];
    let problem = small(toml, &tests, &[]);
    let (_, response) = judge(problem.clone(), "a.py", AC_PY);
    assert_eq!(verdict(&response), ("AC".into(), 10.0), "{response}");
    // Wrong on test 3 only: g1 fails as a whole, so g2 (depending on it) is IG.
    let wrong_on_3 = b"a, b = map(int, input().split())\nprint(a + b + (a == 3))\n";
    let (_, response) = judge(problem.clone(), "a.py", wrong_on_3);
    assert_eq!(test_verdicts(&response), ["OK", "OK", "WA", "IG", "IG"], "{response}");
    assert_eq!(verdict(&response), ("PT".into(), 0.0), "{response}");
    // Wrong on test 5 only: g1 complete (4 points), g2 each-test (3 of 6).
    let wrong_on_5 = b"a, b = map(int, input().split())\nprint(a + b + (a == 5))\n";
    let (_, response) = judge(problem, "a.py", wrong_on_5);
    assert_eq!(verdict(&response), ("PT".into(), 7.0), "{response}");
    let groups = result(&response)["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 3, "{response}");
}

#[test]
fn a_custom_strategy_rates_by_efficiency() {
    let strategy = "user = await compile(submission)\n\
        async def run_test(test):\n    with test:\n        output = File()\n        \
        result = await user(stdin=test.input, stdout=output)\n        await checker(test.input, output, test.answer)\n        \
        test.rate(PT(test.points * min(1, 0.05 / max(result.metrics.time, 1e-9))))\n\
        for test in tests:\n    asyncio.create_task(run_test(test))\n";
    let problem = small("strategy = { source = \"strategy.py\" }", &SUM_TESTS[..2], &[("strategy.py", strategy)]);
    let slow = b"import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\na, b = map(int, input().split())\nprint(a + b)\n";
    let (_, response) = judge(problem.clone(), "a.py", slow);
    let (v, points) = verdict(&response);
    assert_eq!(v, "PT", "{response}");
    assert!(points > 0.0 && points < 1.0, "{response}");
}

#[test]
fn a_cpp_testlib_checker_gives_partial_points_by_exit_code_and_stderr() {
    // Exit 7 with `points X` on stderr is PT (decisions 21); 3 is the checker's own failure.
    let checker = r#"#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {
    if (argc < 4) return 3;
    long long out, ans;
    FILE* o = std::fopen(argv[2], "r");
    FILE* a = std::fopen(argv[3], "r");
    if (!o || !a || std::fscanf(a, "%lld", &ans) != 1) return 3;
    if (std::fscanf(o, "%lld", &out) != 1) { std::fprintf(stderr, "no number\n"); return 2; }
    if (out == ans) return 0;
    if (std::llabs(out - ans) <= 10) { std::fprintf(stderr, "points 0.25 close enough\n"); return 7; }
    std::fprintf(stderr, "expected %lld, found %lld\n", ans, out);
    return 1;
}
"#;
    let toml = "strategy = \"standard\"";
    let mut problem = small(toml, &SUM_TESTS, &[("checker.cpp", checker)]);
    // The package's checker is the C++ one.
    for file in problem.iter_mut() {
        if file["path"] == "problem.toml" {
            let text = file["content"]["text"].as_str().unwrap().replace("checker.py", "checker.cpp");
            file["content"]["text"] = json!(text);
        }
    }
    let close = b"a, b = map(int, input().split())\nprint(a + b + 5)\n";
    let (_, response) = judge(problem.clone(), "a.py", close);
    assert_eq!(test_verdicts(&response), ["PT", "PT", "PT"], "{response}");
    assert_eq!(verdict(&response), ("PT".into(), 0.75), "{response}");
    let (_, response) = judge(problem.clone(), "a.py", b"print('words')\n");
    assert_eq!(verdict(&response).0, "PE 1", "{response}");
    let (_, response) = judge(problem, "a.py", AC_PY);
    assert_eq!(verdict(&response), ("AC".into(), 3.0), "{response}");
}

#[test]
fn an_external_valuer_rates_the_submission() {
    // pipelines.md 2.11, the second form: the points go to a testlib valuer, whose verdict
    // (exit 7, `points X`) is the submission's.
    let strategy = "submission.disable_autorate()\nuser = await compile(submission)\n\
        async def run_test(test):\n    with test:\n        output = File()\n        \
        await user(stdin=test.input, stdout=output)\n        await checker(test.input, output, test.answer)\n    \
        return test.points if test.verdict is OK else 0\n\
        test_points = await asyncio.gather(*map(run_test, tests))\n\
        f = File()\nf.write(f\"{len(test_points)}\\n\".encode())\nfor x in test_points:\n    f.write(f\"{x}\\n\".encode())\n\
        await valuer(f)\n";
    let valuer = "import sys\nn, *points = open(sys.argv[1]).read().split()\n\
        print('points', sum(map(float, points)) * 10, file=sys.stderr)\nsys.exit(7)\n";
    let toml =
        "strategy = { source = \"strategy.py\" }\n[executables.valuer]\nsource = \"valuer.py\"\nkind = \"testlib\"";
    let problem = small(toml, &SUM_TESTS, &[("strategy.py", strategy), ("valuer.py", valuer)]);
    let (_, response) = judge(problem.clone(), "a.py", AC_PY);
    assert_eq!(verdict(&response), ("PT".into(), 30.0), "{response}");
    let (_, response) = judge(problem, "a.py", WA_PY);
    // 7 - 0 = 7: one test of three.
    assert_eq!(verdict(&response), ("PT".into(), 10.0), "{response}");
}

#[test]
fn a_problem_without_a_strategy_gets_the_built_in_one_for_its_type() {
    // Only a checker: standard input/output.
    let problem = small("", &SUM_TESTS, &[]);
    let (_, response) = judge(problem.clone(), "a.py", AC_PY);
    assert_eq!((verdict(&response).0.as_str(), result(&response)["strategy"].as_str()), ("AC", Some("standard")));
    let (_, response) = judge(problem, "a.py", WA_PY);
    assert_eq!(verdict(&response).0, "WA 1", "{response}");
}

#[test]
fn the_client_judges_a_pipeline_problem() {
    let dir = workspace_dir().join("examples/pipelines/standard");
    let (problem, wa) = (dir.display().to_string(), dir.join("solutions/wa.py").display().to_string());
    let out = daemon().client(&["judge", "--problem", &problem, "--submission", &wa]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.lines().any(|l| l.starts_with("test 3 - WA (points=0.00/1.00")), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("WA 3 (points=3.00/4.00)"), "{stdout}");
    let ac = dir.join("solutions/ac.py").display().to_string();
    let out = daemon().client(&["--json", "judge", "--problem", &problem, "--submission", &ac]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().expect("a line")).expect("JSON");
    assert_eq!(last["verdict"], "AC", "{last}");
}

#[test]
fn a_strategy_that_speaks_nonsense_gets_errors_and_the_daemon_goes_on() {
    // Garbage on the request descriptor, an unknown op, an executable that does not exist:
    // each is answered with an error; what the strategy then did not judge is CF.
    let strategy = "import os, json\nos.write(3, b'not json\\n')\n\
        os.write(3, json.dumps({'id': 999001, 'op': 'teleport'}).encode() + b'\\n')\n\
        for test in tests:\n    with test:\n        pass\n";
    let problem = small("strategy = { source = \"strategy.py\" }", &SUM_TESTS[..1], &[("strategy.py", strategy)]);
    let (_, response) = judge(problem, "a.py", AC_PY);
    let r = result(&response);
    assert_eq!(r["verdict"], "CF", "{response}");
    // An invocation of an executable the problem does not have fails its test.
    let strategy = "for test in tests:\n    with test:\n        await validator(test.input)\n";
    let problem = small("strategy = { source = \"strategy.py\" }", &SUM_TESTS[..1], &[("strategy.py", strategy)]);
    let (_, response) = judge(problem, "a.py", AC_PY);
    assert_eq!(result(&response)["verdict"], "CF", "{response}");
    daemon().assert_alive();
}
