//! The Web Evaluation API (`segid --http`: web-evaluation-api.txt, decisions 10 to 14) end to
//! end, driven by curl as a user would: evaluations of an evaluator kept in a local git
//! repository made here, pages of events read by cursor, and every error the API names.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use segi_tests::{poll_until, temp_dir, Daemon};
use serde_json::{json, Value};

/// The evaluator the repository holds: complete lines only, so that the events do not depend
/// on timing (no line is cut by a silence).
const EVALUATOR: &str = r#"import json, os
begin, end = os.environ["EVALUATION_DATA_BEGIN"], os.environ["EVALUATION_DATA_END"]
path = os.environ["SUBMISSION_FILE_SOURCE"]
print("evaluating " + os.path.basename(path), flush=True)
print(open("cases/answer.txt").read().strip(), flush=True)
lines = [begin] + [json.dumps({"type": "case", "n": n}) for n in range(150)] + [end]
print("\n" + "\n".join(lines), flush=True)
print("done", flush=True)
"#;

/// A git repository with the evaluator in `problems/sum/`; its commits' ids.
struct Repo {
    dir: PathBuf,
    first: String,
    second: String,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn repo(root: &Path) -> Repo {
    let dir = root.join("repo");
    std::fs::create_dir_all(dir.join("problems/sum/cases")).expect("mkdir");
    git(&dir, &["init", "-q"]);
    std::fs::write(dir.join("problems/sum/evaluator.py"), EVALUATOR).expect("write");
    std::fs::write(dir.join("problems/sum/cases/answer.txt"), "first answer\n").expect("write");
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-qm", "first"]);
    let first = git(&dir, &["rev-parse", "HEAD"]);
    std::fs::write(dir.join("problems/sum/cases/answer.txt"), "second answer\n").expect("write");
    git(&dir, &["commit", "-qam", "second"]);
    let second = git(&dir, &["rev-parse", "HEAD"]);
    Repo { dir, first, second }
}

/// A daemon serving HTTP on a free loopback port, allowing file:// repositories below `root`.
fn daemon_with_http(root: &Path, extra: &[&str]) -> (Daemon, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
    let addr = format!("127.0.0.1:{port}");
    let root = root.display().to_string();
    let mut args = vec!["--http", addr.as_str(), "--http-git-file-root", root.as_str()];
    args.extend_from_slice(extra);
    let daemon = Daemon::start_with(&[], &args);
    (daemon, format!("http://{addr}"))
}

/// `curl` with `args`: (HTTP status, body as JSON or as a string).
fn curl(args: &[&str]) -> (u16, Value) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "60", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", ""));
    let status = status
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("curl {args:?}: {text} {}", String::from_utf8_lossy(&out.stderr)));
    (status, serde_json::from_str(body).unwrap_or(Value::String(body.to_string())))
}

/// POST /evaluate with the repository at `commit` and a submission file; `extra` form fields.
fn post_evaluate(base: &str, repo: &Repo, commit: &str, submission: &Path, extra: &[&str]) -> (u16, Value) {
    let url = format!("repository[url]=file://{}", repo.dir.display());
    let commit = format!("commit_oid={commit}");
    let file = format!("submission[source]=@{}", submission.display());
    let mut args = vec![
        "-F",
        &url,
        "-F",
        &commit,
        "-F",
        "directory=problems/sum",
        "-F",
        "evaluator_cmd=python3 evaluator.py",
        "-F",
        &file,
    ];
    for field in extra {
        args.extend_from_slice(&["-F", field]);
    }
    let endpoint = format!("{base}/evaluate");
    args.push(&endpoint);
    curl(&args)
}

/// Reads every page of an evaluation to the end: (events, every page seen).
fn read_all(base: &str, id: &str) -> (Vec<Value>, Vec<Value>) {
    let (mut events, mut pages) = (Vec::new(), Vec::new());
    let mut after: Option<String> = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let url = match &after {
            Some(cursor) => format!("{base}/evaluation/{id}/events?after={cursor}"),
            None => format!("{base}/evaluation/{id}/events"),
        };
        let (status, page) = curl(&[&url]);
        assert_eq!(status, 200, "{url}: {page}");
        events.extend(page["data"].as_array().expect("data").iter().cloned());
        pages.push(page.clone());
        match page["end"].as_str() {
            None => return (events, pages),
            Some(end) if Some(end) == after.as_deref() => {
                assert!(std::time::Instant::now() < deadline, "the evaluation did not finish");
                std::thread::sleep(Duration::from_millis(20));
            }
            Some(end) => after = Some(end.to_string()),
        }
    }
}

#[test]
fn an_evaluation_over_http_pages_the_same_events_as_json_rpc() {
    let root = temp_dir("web");
    let repo = repo(&root);
    let (daemon, base) = daemon_with_http(&root, &[]);
    let submission = root.join("sol.py");
    std::fs::write(&submission, "print(1)\n").expect("write");
    let (status, answer) = post_evaluate(&base, &repo, &repo.first, &submission, &[]);
    assert_eq!(status, 200, "{answer}");
    let id = answer["evaluation_id"].as_str().expect("an id").to_string();
    let (events, pages) = read_all(&base, &id);
    // 150 data events: at least two pages of at most 100, the last ending at DUMMY_END.
    assert!(pages.iter().all(|p| p["data"].as_array().unwrap().len() <= 100));
    let ends: Vec<&str> = pages.iter().filter_map(|p| p["end"].as_str()).collect();
    assert_eq!(ends.last(), Some(&"DUMMY_END"), "{pages:?}");
    assert_eq!(pages.last().unwrap()["begin"], "DUMMY_END");
    // The evaluation is gone once DUMMY_END was read.
    let (status, gone) = curl(&[&format!("{base}/evaluation/{id}/events")]);
    assert_eq!(status, 404, "{gone}");
    assert!(gone["message"].as_str().is_some(), "{gone}");

    // The JSON-RPC evaluate of the same input gives the same events.
    let problem = vec![
        json!({"path": "evaluator.py", "content": {"text": EVALUATOR}}),
        json!({"path": "cases/answer.txt", "content": {"text": "first answer\n"}}),
    ];
    let params = json!({
        "command": ["/bin/sh", "-c", "python3 evaluator.py"],
        "problem": problem,
        "submission": [{"field": "source", "filename": "sol.py", "content": {"text": "print(1)\n"}}],
    });
    let (rpc_events, response) =
        daemon.raw_connect().call_with_id(&json!(1), "evaluate", params, Duration::from_secs(60));
    assert_eq!(response["result"]["verdict"], "OK", "{response}");
    let rpc_events: Vec<Value> =
        rpc_events.into_iter().filter(|e| e["type"] == "text" || e["type"] == "data").collect();
    assert_eq!(events, rpc_events);
    assert_eq!(events[0], json!({"type": "text", "payload": "evaluating sol.py"}));
    assert!(events.contains(&json!({"type": "text", "payload": "first answer"})), "{events:?}");
    assert!(events.contains(&json!({"type": "data", "payload": {"type": "case", "n": 149}})));
}

#[test]
fn a_page_can_be_repeated_until_a_later_one_is_read() {
    let root = temp_dir("web-repeat");
    let repo = repo(&root);
    let (_daemon, base) = daemon_with_http(&root, &["--http-page-size", "10"]);
    let submission = root.join("s.c");
    std::fs::write(&submission, "").expect("write");
    let (_, answer) = post_evaluate(&base, &repo, &repo.second, &submission, &[]);
    let id = answer["evaluation_id"].as_str().expect("an id").to_string();
    // Wait until the first page is full, then ask for it twice, and for the next one.
    let first_url = format!("{base}/evaluation/{id}/events");
    assert!(poll_until(Duration::from_secs(30), || curl(&[&first_url]).1["data"]
        .as_array()
        .is_some_and(|d| d.len() == 10)));
    let (_, once) = curl(&[&first_url]);
    let (_, twice) = curl(&[&first_url]);
    assert_eq!(once, twice);
    let end = once["end"].as_str().expect("a cursor").to_string();
    let (status, next) = curl(&[&format!("{first_url}?after={end}")]);
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["begin"], end.as_str());
    // Read past: the first page's events are deleted, and its cursor with them.
    let (status, _) = curl(&[&format!("{first_url}?after=0")]);
    assert_eq!(status, 404);
    // The alias answers the same page as the path form.
    let (_, alias) = curl(&[&format!("{base}/evaluation_events?evaluation={id}&after={end}")]);
    assert_eq!(alias, next);
    let (status, unknown) = curl(&[&format!("{first_url}?after=nonsense")]);
    assert_eq!(status, 404, "{unknown}");
}

#[test]
fn bad_requests_get_clear_json_errors() {
    let root = temp_dir("web-errors");
    let repo = repo(&root);
    let (daemon, base) = daemon_with_http(&root, &["--http-max-file", "1K"]);
    let submission = root.join("sol.py");
    std::fs::write(&submission, "print(1)\n").expect("write");
    let absent = "0123456789abcdef0123456789abcdef01234567";
    let cases: Vec<(Vec<&str>, &str, u16, &str)> = vec![
        (vec![], absent, 400, "not"),
        (vec![], "abc", 400, "commit"),
        (vec!["evil=1"], &repo.first, 400, "unknown parameter"),
        (vec!["submission[Bad]=x"], &repo.first, 400, "not a valid name"),
        (vec!["repository[depth]=-3"], &repo.first, 400, "depth"),
    ];
    for (extra, commit, status, expected) in cases {
        let (got, body) = post_evaluate(&base, &repo, commit, &submission, &extra);
        assert_eq!(got, status, "{extra:?} {commit}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{extra:?}: expected {expected:?} in {message}");
    }
    // A missing field.
    let (status, body) = curl(&["-F", "commit_oid=x", &format!("{base}/evaluate")]);
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("required"), "{body}");
    // A file too large.
    let big = root.join("big.py");
    std::fs::write(&big, vec![b'#'; 4096]).expect("write");
    let (status, body) = post_evaluate(&base, &repo, &repo.first, &big, &[]);
    assert_eq!(status, 413, "{body}");
    // Not a form, a wrong method, an unknown path, an unknown evaluation.
    let (status, body) = curl(&["-X", "POST", "-d", "{}", &format!("{base}/evaluate")]);
    assert_eq!((status, body["message"].is_string()), (400, true), "{body}");
    let (status, body) = curl(&[&format!("{base}/evaluate")]);
    assert_eq!((status, body["message"].is_string()), (405, true), "{body}");
    let (status, _) = curl(&[&format!("{base}/nowhere")]);
    assert_eq!(status, 404);
    let (status, _) = curl(&[&format!("{base}/evaluation/0000/events")]);
    assert_eq!(status, 404);
    let (status, _) = curl(&[&format!("{base}/evaluation_events")]);
    assert_eq!(status, 400);
    // A file:// repository outside the allowed directory.
    let (status, body) = curl(&[
        "-F",
        "repository[url]=file:///etc",
        "-F",
        &format!("commit_oid={}", repo.first),
        "-F",
        "evaluator_cmd=true",
        &format!("{base}/evaluate"),
    ]);
    assert_eq!(status, 400, "{body}");
    let (status, yaml) = curl(&[&format!("{base}/openapi.yaml")]);
    assert_eq!(status, 200);
    assert!(yaml.as_str().is_some_and(|y| y.contains("openapi:")), "{yaml}");
    daemon.assert_alive();
}

#[test]
fn a_value_without_a_filename_is_field_txt_and_one_commit_is_fetched_once() {
    let root = temp_dir("web-fetch");
    let repo = repo(&root);
    let (daemon, base) = daemon_with_http(&root, &[]);
    let url = format!("repository[url]=file://{}", repo.dir.display());
    let commit = format!("commit_oid={}", repo.first);
    let endpoint = format!("{base}/evaluate");
    let form = [
        "-F",
        url.as_str(),
        "-F",
        commit.as_str(),
        "-F",
        "directory=problems/sum",
        "-F",
        "evaluator_cmd=python3 evaluator.py",
        "-F",
        "submission[source]=print(2)",
        endpoint.as_str(),
    ];
    // Three at once, of the same commit.
    let ids: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3).map(|_| s.spawn(|| curl(&form))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("join").1["evaluation_id"].as_str().expect("an id").to_string())
            .collect()
    });
    for id in &ids {
        let (events, _) = read_all(&base, id);
        assert_eq!(events[0], json!({"type": "text", "payload": "evaluating source.txt"}), "{events:?}");
    }
    let log = daemon.log();
    let fetches: Vec<&str> = log.lines().filter(|l| l.contains("repository fetched")).collect();
    assert_eq!(fetches.len(), 1, "{log}");
}

#[test]
fn unread_evaluations_expire_and_a_token_is_required_when_set() {
    let root = temp_dir("web-expire");
    let repo = repo(&root);
    let token = root.join("token");
    std::fs::write(&token, "s3cret\n").expect("write");
    let token_arg = token.display().to_string();
    let (_daemon, base) = daemon_with_http(&root, &["--http-retention", "1s", "--http-token-file", &token_arg]);
    let (status, body) = curl(&[&format!("{base}/evaluation/x/events")]);
    assert_eq!(status, 401, "{body}");
    let submission = root.join("sol.py");
    std::fs::write(&submission, "").expect("write");
    let auth = "Authorization: Bearer s3cret";
    let url = format!("repository[url]=file://{}", repo.dir.display());
    let commit = format!("commit_oid={}", repo.first);
    let file = format!("submission[source]=@{}", submission.display());
    let (status, answer) = curl(&[
        "-H",
        auth,
        "-F",
        &url,
        "-F",
        &commit,
        "-F",
        "directory=problems/sum",
        "-F",
        "evaluator_cmd=python3 evaluator.py",
        "-F",
        &file,
        &format!("{base}/evaluate"),
    ]);
    assert_eq!(status, 200, "{answer}");
    let id = answer["evaluation_id"].as_str().expect("an id").to_string();
    let events = format!("{base}/evaluation/{id}/events");
    // Never read: gone once finished and the retention time has passed.
    assert!(poll_until(Duration::from_secs(30), || curl(&["-H", auth, &events]).0 == 404), "never expired");
}

#[test]
fn live_evaluations_are_bounded() {
    let root = temp_dir("web-live");
    let repo = repo(&root);
    let (daemon, base) = daemon_with_http(&root, &["--http-max-live", "1"]);
    let submission = root.join("sol.py");
    std::fs::write(&submission, "").expect("write");
    let (status, first) = post_evaluate(&base, &repo, &repo.first, &submission, &[]);
    assert_eq!(status, 200, "{first}");
    // The first is live until read to the end (or expired): the second is refused.
    let (status, body) = post_evaluate(&base, &repo, &repo.first, &submission, &[]);
    assert_eq!(status, 429, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("live")), "{body}");
    read_all(&base, first["evaluation_id"].as_str().expect("an id"));
    let (status, body) = post_evaluate(&base, &repo, &repo.first, &submission, &[]);
    assert_eq!(status, 200, "{body}");
    daemon.assert_alive();
}

#[test]
fn a_body_over_the_limit_is_413_and_the_server_goes_on() {
    let root = temp_dir("web-body");
    let repo = repo(&root);
    let (daemon, base) = daemon_with_http(&root, &["--http-max-body", "4K"]);
    let big = root.join("big.py");
    std::fs::write(&big, vec![b'#'; 64 * 1024]).expect("write");
    let (status, body) = post_evaluate(&base, &repo, &repo.first, &big, &[]);
    assert_eq!(status, 413, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("too large")), "{body}");
    let small = root.join("small.py");
    std::fs::write(&small, "").expect("write");
    let (status, body) = post_evaluate(&base, &repo, &repo.first, &small, &[]);
    assert_eq!(status, 200, "{body}");
    daemon.assert_alive();
}

#[test]
fn listening_beyond_loopback_needs_a_token() {
    let dir = temp_dir("web-open");
    let out = Command::new(segi_tests::binary("segid"))
        .args(["--socket", &dir.join("s.sock").display().to_string(), "--http", "0.0.0.0:1"])
        .args(["--policies", &segi_tests::workspace_dir().join("policies").display().to_string()])
        .args(["--state-dir", &dir.join("state").display().to_string()])
        .output()
        .expect("run segid");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("--http-token-file"), "{stderr}");
}
