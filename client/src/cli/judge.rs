//! `segi-client judge`: read the problem package, open the submission, judge, show each test's
//! result (a Sphere problem) or each verdict change (a problem with a strategy) as it comes,
//! then end with the verdict.

use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use anyhow::Context as _;
use segi_client::client::{JudgeOutcome, RawEvent};
use segi_client::report::{
    judge_exit_status, pipeline_exit_status, pipeline_group_line, pipeline_test_lines, pipeline_verdict_line,
    test_lines, verdict_line, verdict_update_lines,
};
use segi_proto::judge::{JudgeRequest, JudgeResult, PipelineResult, SourceFile, Status};
use segi_proto::Event;
use tokio::signal::unix::{signal, SignalKind};

use super::args::JudgeArgs;
use super::problem_dir::{open_source, problem_files};
use super::run::{cancel, write_flushed};

pub async fn judge(socket: Option<PathBuf>, json: bool, args: JudgeArgs) -> anyhow::Result<u8> {
    // Files are opened and read before connecting: a typo in a path should not cost a sandbox.
    let (request, fds) = build_request(&args)?;
    let client = super::connect(socket).await?;
    let mut judging = client.start_judge(&request, fds).await?;

    // From here on Ctrl-C and SIGTERM cancel the judging instead of killing the client.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut screen = Screen { out: io::stdout(), err: io::stderr(), json };
    loop {
        tokio::select! {
            event = judging.next_raw_event() => match event? {
                Some(event) => screen.event(&event).context("cannot show a test's result")?,
                None => break,
            },
            _ = interrupt.recv() => return cancel(&client, judging.id(), "judging", &mut interrupt, &mut terminate).await,
            _ = terminate.recv() => return cancel(&client, judging.id(), "judging", &mut interrupt, &mut terminate).await,
        }
    }
    let outcome = judging.finish_any().await?;
    screen.outcome(&outcome).context("cannot show the verdict")?;
    Ok(exit_status(&outcome))
}

/// 0 for AC, 1 for another verdict of the submission, 2 for the judge's failure (IE, CF).
fn exit_status(outcome: &JudgeOutcome) -> u8 {
    match outcome {
        JudgeOutcome::Sphere(result) => judge_exit_status(result.status),
        JudgeOutcome::Pipeline(result) => pipeline_exit_status(&result.verdict),
    }
}

/// The request as the daemon takes it: the package inline, the submission as descriptor 0.
fn build_request(args: &JudgeArgs) -> anyhow::Result<(JudgeRequest, Vec<OwnedFd>)> {
    let shown = format!("--submission {}", args.submission.display());
    let (filename, file) = open_source(&args.submission, &shown)?;
    let problem = problem_files(&args.problem)?;
    let request = JudgeRequest {
        problem,
        submission: SourceFile { filename, content: None, fd: Some(0) },
        language: args.language.clone(),
    };
    Ok((request, vec![OwnedFd::from(file)]))
}

/// Where the judging is shown: readable lines, or (`json`) JSON Lines on `out`.
struct Screen<O, E> {
    out: O,
    err: E,
    json: bool,
}

impl<O: Write, E: Write> Screen<O, E> {
    fn event(&mut self, event: &RawEvent) -> io::Result<()> {
        match (&event.event, self.json) {
            (Event::Test(_) | Event::Verdict(_), true) => {
                let mut line = event.json.get().as_bytes().to_vec();
                line.push(b'\n');
                write_flushed(&mut self.out, &line)
            }
            (Event::Test(test), false) => write_flushed(&mut self.out, test_lines(test).as_bytes()),
            (Event::Verdict(update), false) => write_flushed(&mut self.out, verdict_update_lines(update).as_bytes()),
            (Event::Queued { ahead }, false) => {
                let line = format!("segi: queued: every run slot is busy, {ahead} other run(s) waiting ahead\n");
                write_flushed(&mut self.err, line.as_bytes())
            }
            _ => Ok(()),
        }
    }

    fn outcome(&mut self, outcome: &JudgeOutcome) -> io::Result<()> {
        match outcome {
            JudgeOutcome::Sphere(result) => self.verdict(result),
            JudgeOutcome::Pipeline(result) => self.pipeline(result),
        }
    }

    /// Each test's lines (none after CE) and each group's line on `out`, then the result's
    /// comment on `err`
    /// (the compiler's output after CE, the strategy's error after CF), then the verdict's
    /// line on `out`; or the result object as the last JSON line.
    fn pipeline(&mut self, result: &PipelineResult) -> io::Result<()> {
        if self.json {
            let mut line = serde_json::to_vec(result).map_err(io::Error::other)?;
            line.push(b'\n');
            return write_flushed(&mut self.out, &line);
        }
        let mut text = String::new();
        // After CE no test ran: whatever the result says of them (segid lists them as OK) means
        // nothing, and would read as if they passed.
        let tests = if result.verdict == "CE" { &[][..] } else { &result.tests[..] };
        for test in tests {
            text += &pipeline_test_lines(test);
        }
        for group in &result.groups {
            text += &pipeline_group_line(group);
            text.push('\n');
        }
        write_flushed(&mut self.out, text.as_bytes())?;
        if let Some(comment) = result.comment.as_deref().filter(|c| !c.trim().is_empty()) {
            let mut text = match result.verdict.as_str() {
                "CE" => comment.to_owned(),
                "CF" => format!("segi: check failed: {comment}"),
                _ => format!("segi: {comment}"),
            };
            if !text.ends_with('\n') {
                text.push('\n');
            }
            write_flushed(&mut self.err, text.as_bytes())?;
        }
        write_flushed(&mut self.out, format!("{}\n", pipeline_verdict_line(result)).as_bytes())
    }

    /// The verdict's line on `out`, after segid's message on `err` (the compiler's output after
    /// CE, the reason for IE); or the result object as the last JSON line.
    fn verdict(&mut self, result: &JudgeResult) -> io::Result<()> {
        if self.json {
            let mut line = serde_json::to_vec(result).map_err(io::Error::other)?;
            line.push(b'\n');
            return write_flushed(&mut self.out, &line);
        }
        if let Some(message) = result.message.as_deref().filter(|m| !m.trim().is_empty()) {
            let mut text = match result.status {
                Status::CE => message.to_owned(),
                Status::IE => format!("segi: internal error: {message}"),
                _ => format!("segi: {message}"),
            };
            if !text.ends_with('\n') {
                text.push('\n');
            }
            write_flushed(&mut self.err, text.as_bytes())?;
        }
        write_flushed(&mut self.out, format!("{}\n", verdict_line(result)).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Cli, Command};
    use clap::Parser as _;
    use serde_json::value::RawValue;
    use std::fs;
    use std::io::Read as _;
    use std::path::Path;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("segi-client-judge-test-{}", std::process::id())).join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn judge_args(args: &[&str]) -> JudgeArgs {
        let line = ["segi-client", "judge"].into_iter().chain(args.iter().copied());
        match Cli::try_parse_from(line).unwrap().command {
            Command::Judge(args) => args,
            _ => unreachable!(),
        }
    }

    fn problem(dir: &Path) {
        fs::create_dir_all(dir.join("tests")).unwrap();
        fs::write(dir.join("problem.toml"), "time_limit = \"1s\"\n").unwrap();
        fs::write(dir.join("tests/0.in"), "1 2\n").unwrap();
        fs::write(dir.join("tests/0.out"), "3\n").unwrap();
    }

    #[test]
    fn the_package_goes_inline_and_the_submission_open() {
        let dir = scratch("request");
        problem(&dir.join("sum"));
        fs::write(dir.join("sol.py"), "print(sum(map(int, input().split())))\n").unwrap();
        let problem = dir.join("sum");
        let submission = dir.join("sol.py");
        let args = judge_args(&["--problem", problem.to_str().unwrap(), "--submission", submission.to_str().unwrap()]);
        let (request, fds) = build_request(&args).unwrap();
        let paths: Vec<&str> = request.problem.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["problem.toml", "tests/0.in", "tests/0.out"]);
        assert_eq!(request.submission, SourceFile { filename: "sol.py".into(), content: None, fd: Some(0) });
        assert_eq!(request.language, None);
        let json = serde_json::to_value(&request).unwrap();
        assert_eq!(json["submission"], serde_json::json!({"filename": "sol.py", "fd": 0}));
        assert!(json.get("language").is_none(), "{json}");
        let mut text = String::new();
        fs::File::from(fds.into_iter().next().unwrap()).read_to_string(&mut text).unwrap();
        assert!(text.starts_with("print("), "{text}");

        let args = judge_args(&[
            "--problem",
            problem.to_str().unwrap(),
            "--submission",
            submission.to_str().unwrap(),
            "--language",
            "pypy3",
        ]);
        assert_eq!(build_request(&args).unwrap().0.language.as_deref(), Some("pypy3"));
    }

    fn request_error(problem: &Path, submission: &Path) -> String {
        let args = judge_args(&["--problem", problem.to_str().unwrap(), "--submission", submission.to_str().unwrap()]);
        format!("{:#}", build_request(&args).unwrap_err())
    }

    #[test]
    fn unusable_paths_name_the_flag() {
        let dir = scratch("errors");
        problem(&dir);
        let message = request_error(&dir, Path::new("/nonexistent/sol.c"));
        assert!(message.starts_with("cannot open --submission /nonexistent/sol.c: "), "{message}");
        let message = request_error(&dir, &dir.join("tests"));
        assert!(message.ends_with("tests: not a regular file but a directory"), "{message}");
        assert!(message.starts_with("--submission "), "{message}");
        let message = request_error(Path::new("/nonexistent/problem"), &dir.join("problem.toml"));
        assert!(message.starts_with("cannot read --problem /nonexistent/problem: "), "{message}");
    }

    fn raw(json: &str) -> RawEvent {
        RawEvent { event: serde_json::from_str(json).unwrap(), json: RawValue::from_string(json.into()).unwrap() }
    }

    fn result(json: serde_json::Value) -> JudgeResult {
        serde_json::from_value(json).unwrap()
    }

    fn shown(json: bool, events: &[&str], verdict: &JudgeResult) -> (String, String) {
        let mut screen = Screen { out: Vec::new(), err: Vec::new(), json };
        for event in events {
            screen.event(&raw(event)).unwrap();
        }
        screen.verdict(verdict).unwrap();
        (String::from_utf8(screen.out).unwrap(), String::from_utf8(screen.err).unwrap())
    }

    const EVENTS: [&str; 3] = [
        r#"{"type":"queued","ahead":1}"#,
        r#"{"type":"test","test":0,"status":"AC","score":0.0,"signal":0,"time":0.012,"memory":1234}"#,
        r#"{"type":"test", "test":1,"status":"WA","score":0.0,"signal":0,"time":0.5,"memory":2048,"info":"expected 3, got 4"}"#,
    ];

    fn wa() -> JudgeResult {
        result(serde_json::json!({
            "status": "WA", "score": 0.0, "signal": 0, "time": 0.512, "memory": 2048, "language": "c",
            "tests": [
                {"test": 0, "status": "AC", "score": 0.0, "signal": 0, "time": 0.012, "memory": 1234},
                {"test": 1, "status": "WA", "score": 0.0, "signal": 0, "time": 0.5, "memory": 2048,
                 "info": "expected 3, got 4"},
            ],
        }))
    }

    #[test]
    fn tests_as_they_come_then_the_verdict() {
        let (out, err) = shown(false, &EVENTS, &wa());
        assert_eq!(
            out,
            "test 0 - AC (score=0.00, sig=0, time=0.01, mem=1234)\n\
             test 1 - WA (score=0.00, sig=0, time=0.50, mem=2048)\n  info: expected 3, got 4\n\
             WA (score=0.00, sig=0, time=0.51, mem=2048)\n"
        );
        assert_eq!(err, "segi: queued: every run slot is busy, 1 other run(s) waiting ahead\n");
    }

    #[test]
    fn json_lines_keep_the_events_as_sent() {
        let (out, err) = shown(true, &EVENTS, &wa());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0], EVENTS[1]);
        assert_eq!(lines[1], EVENTS[2]);
        let last: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(last["status"], "WA");
        assert_eq!(last["tests"][1]["info"], "expected 3, got 4");
        assert!(last.get("message").is_none(), "{last}");
        assert_eq!(err, "");
    }

    #[test]
    fn a_compilation_error_shows_the_compiler() {
        let ce = result(serde_json::json!({
            "status": "CE", "score": 0.0, "signal": 0, "time": 0.0, "memory": 0, "language": "c", "tests": [],
            "message": "sol.c:1:1: error: expected ';'\n    1 | int main() {\n",
        }));
        let (out, err) = shown(false, &[], &ce);
        assert_eq!(out, "CE (score=0.00, sig=0, time=0.00, mem=0)\n");
        assert_eq!(err, "sol.c:1:1: error: expected ';'\n    1 | int main() {\n");
        assert_eq!(judge_exit_status(ce.status), 1);

        let ie = result(serde_json::json!({
            "status": "IE", "score": 0.0, "signal": 0, "time": 0.0, "memory": 0, "language": "c", "tests": [],
            "message": "the master judge wrote \"oops\"",
        }));
        let (out, err) = shown(false, &[], &ie);
        assert_eq!(out, "IE (score=0.00, sig=0, time=0.00, mem=0)\n");
        assert_eq!(err, "segi: internal error: the master judge wrote \"oops\"\n");
        assert_eq!(judge_exit_status(ie.status), 2);
    }

    fn pipeline(json: serde_json::Value) -> PipelineResult {
        serde_json::from_value(json).unwrap()
    }

    fn shown_pipeline(json: bool, events: &[&str], result: &PipelineResult) -> (String, String) {
        let mut screen = Screen { out: Vec::new(), err: Vec::new(), json };
        for event in events {
            screen.event(&raw(event)).unwrap();
        }
        screen.outcome(&JudgeOutcome::Pipeline(result.clone())).unwrap();
        (String::from_utf8(screen.out).unwrap(), String::from_utf8(screen.err).unwrap())
    }

    const VERDICTS: [&str; 4] = [
        r#"{"type":"queued","ahead":0}"#,
        r#"{"type":"verdict","test":1,"verdict":"WA","comment":"expected 5, got 6"}"#,
        r#"{"type":"verdict", "test":2,"verdict":"PT","points":0.5}"#,
        r#"{"type":"verdict","test":null,"verdict":"PT","points":0.5}"#,
    ];

    fn pt() -> PipelineResult {
        pipeline(serde_json::json!({
            "verdict": "PT", "points": 0.5, "max_points": 3.0, "language": "python3", "strategy": "standard",
            "tests": [
                {"no": 1, "verdict": "WA", "max_points": 1.0, "comment": "expected 5, got 6", "group": "g1",
                 "time": 0.012, "memory": 3_272_704},
                {"no": 2, "verdict": "PT", "points": 0.5, "max_points": 2.0, "group": "g2", "time": 0.5,
                 "memory": 1_048_576},
            ],
            "groups": [
                {"name": "g1", "points": 0.0, "max_points": 1.0, "passed": false, "feedback": "none"},
                {"name": "g2", "points": 0.5, "max_points": 2.0, "passed": false, "feedback": "none"},
            ],
        }))
    }

    #[test]
    fn pipeline_verdicts_as_they_come_then_tests_groups_and_the_verdict() {
        let (out, err) = shown_pipeline(false, &VERDICTS, &pt());
        assert_eq!(
            out,
            "test 1: WA (expected 5, got 6)\n\
             test 2: PT 0.5\n\
             submission: PT 0.5\n\
             test 1 - WA (points=0.00/1.00, time=0.01, mem=3196 KiB)\n  comment: expected 5, got 6\n\
             test 2 - PT (points=0.50/2.00, time=0.50, mem=1024 KiB)\n\
             group g1: 0.00/1.00 failed\n\
             group g2: 0.50/2.00 failed\n\
             PT (points=0.50/3.00)\n"
        );
        assert_eq!(err, "segi: queued: every run slot is busy, 0 other run(s) waiting ahead\n");
        assert_eq!(exit_status(&JudgeOutcome::Pipeline(pt())), 1);
    }

    #[test]
    fn pipeline_json_lines_keep_the_events_as_sent() {
        let (out, err) = shown_pipeline(true, &VERDICTS, &pt());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[..3], VERDICTS[1..]);
        let last: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
        assert_eq!(last["verdict"], "PT");
        assert_eq!(last["strategy"], "standard");
        assert_eq!(last["tests"][0]["comment"], "expected 5, got 6");
        assert_eq!(last["groups"][1]["name"], "g2");
        assert!(last.get("comment").is_none(), "{last}");
        assert!(last.get("status").is_none(), "{last}");
        assert_eq!(err, "");
    }

    #[test]
    fn pipeline_accepted_without_groups() {
        let ac = pipeline(serde_json::json!({
            "verdict": "AC", "points": 2.0, "max_points": 2.0, "language": "python3", "strategy": "standard",
            "tests": [
                {"no": 1, "verdict": "OK", "max_points": 1.0, "time": 0.017, "memory": 3_272_704},
                {"no": 2, "verdict": "OK", "max_points": 1.0, "time": 0.012, "memory": 3_399_680},
            ],
        }));
        let (out, err) = shown_pipeline(false, &[], &ac);
        assert_eq!(
            out,
            "test 1 - OK (points=1.00/1.00, time=0.02, mem=3196 KiB)\n\
             test 2 - OK (points=1.00/1.00, time=0.01, mem=3320 KiB)\n\
             AC (points=2.00/2.00)\n"
        );
        assert_eq!(err, "");
        assert_eq!(exit_status(&JudgeOutcome::Pipeline(ac)), 0);
    }

    #[test]
    fn pipeline_compilation_errors_and_check_failures_explain_on_stderr() {
        let ce = pipeline(serde_json::json!({
            "verdict": "CE", "points": 0.0, "max_points": 2.0, "language": "cpp", "strategy": "standard",
            "tests": [{"no": 1, "verdict": "OK", "max_points": 2.0, "time": 0.0, "memory": 0}],
            "comment": "ac.cpp:1:1: error: expected ';'\n",
        }));
        let (out, err) = shown_pipeline(false, &[r#"{"type":"verdict","test":null,"verdict":"CE"}"#], &ce);
        assert_eq!(out, "submission: CE\nCE (points=0.00/2.00)\n");
        assert_eq!(err, "ac.cpp:1:1: error: expected ';'\n");
        assert_eq!(exit_status(&JudgeOutcome::Pipeline(ce)), 1);

        let cf = pipeline(serde_json::json!({
            "verdict": "CF", "points": 0.0, "max_points": 2.0, "language": "python3", "strategy": "custom",
            "tests": [{"no": 1, "verdict": "CF", "max_points": 2.0, "comment": "checker exited 3", "time": 0.0,
                       "memory": 0}],
            "comment": "strategy.py raised ValueError",
        }));
        let (out, err) = shown_pipeline(false, &[], &cf);
        assert_eq!(
            out,
            "test 1 - CF (points=0.00/2.00, time=0.00, mem=0 KiB)\n  comment: checker exited 3\nCF (points=0.00/2.00)\n"
        );
        assert_eq!(err, "segi: check failed: strategy.py raised ValueError\n");
        assert_eq!(exit_status(&JudgeOutcome::Pipeline(cf)), 2);
    }

    #[test]
    fn sphere_exit_statuses_through_the_outcome() {
        assert_eq!(exit_status(&JudgeOutcome::Sphere(wa())), 1);
        let mut ac = wa();
        ac.status = Status::AC;
        assert_eq!(exit_status(&JudgeOutcome::Sphere(ac)), 0);
        let mut ie = wa();
        ie.status = Status::IE;
        assert_eq!(exit_status(&JudgeOutcome::Sphere(ie)), 2);
    }
}
