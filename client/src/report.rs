//! What a finished run, judging or grading means to a shell: the client's exit status, and
//! the lines people read (the one-line summary of a run; a judging's lines per test and
//! verdict, for a Sphere problem or a problem with a strategy; a grading's line per grader and
//! its count of passes).

use segi_proto::grade::{GradeResult, GraderResult};
use segi_proto::judge::{JudgeResult, PipelineResult, PipelineTest, Status, TestResult, VerdictUpdate};
use segi_proto::run::LimitKind;
use segi_proto::units::HumanSize;
use segi_proto::{RunResult, Verdict};

/// segi-client or the daemon failed (connection, usage, internal error), not the program.
pub const CLIENT_FAILURE: u8 = 125;
/// The user interrupted the client (Ctrl-C or SIGTERM), as a shell reports SIGINT.
pub const INTERRUPTED: u8 = 130;
/// The status of a run stopped by a limit that reported no signal: as if SIGKILLed.
pub const STOPPED_BY_LIMIT: u8 = 128 + 9;
/// `judge`: the submission earned a verdict other than AC (WA, TLE, RE, MLE, OLE, CE; for a
/// problem with a strategy `WA 3`, `PT`, ...).
pub const REJECTED: u8 = 1;
/// `judge`: the verdict is IE (a Sphere problem) or CF (a problem with a strategy): a judge's,
/// the strategy's or the sandbox's failure, never the submission's.
pub const JUDGE_FAILURE: u8 = 2;
/// `grade`: at least one grader failed.
pub const GRADER_FAILED: u8 = 1;

/// The exit status `segi-client run` ends with: the program's exit code if it exited,
/// 128+N if it was killed by signal N, [`CLIENT_FAILURE`] if the sandbox failed.
///
/// A run whose verdict is not OK never maps to 0, even if the program exited 0 (an `OLE`
/// whose output was cut short, say): scripts test `$?` and must not take it for success.
pub fn exit_status(result: &RunResult) -> u8 {
    if result.verdict == Verdict::IE {
        return CLIENT_FAILURE;
    }
    if let Some(signal) = result.signal {
        return u8::try_from(128 + signal.clamp(1, 127)).unwrap_or(CLIENT_FAILURE);
    }
    if let Some(code) = result.exit_code.filter(|code| (1..=255).contains(code)) {
        return code as u8;
    }
    match result.verdict {
        Verdict::OK => 0,
        // RE without a non-zero exit code or a signal: a failure all the same.
        Verdict::RE => 1,
        Verdict::TLE | Verdict::MLE | Verdict::OLE | Verdict::SV => STOPPED_BY_LIMIT,
        Verdict::IE => CLIENT_FAILURE,
    }
}

/// The line printed on stderr after a run, e.g.
/// `segi: TLE cpu=1.003s wall=1.004s memory=1.2MiB signal=9 limit=cpu_time`.
pub fn summary_line(result: &RunResult) -> String {
    let mut line = format!(
        "segi: {} cpu={:.3}s wall={:.3}s memory={}",
        result.verdict,
        result.cpu_time,
        result.wall_time,
        HumanSize(result.memory)
    );
    if let Some(code) = result.exit_code {
        line += &format!(" exit={code}");
    }
    if let Some(signal) = result.signal {
        line += &format!(" signal={signal}");
    }
    if let Some(limit) = result.limit {
        line += &format!(" limit={}", limit_name(limit));
    }
    if let Some(message) = result.message.as_deref().filter(|m| !m.is_empty()) {
        line += &format!(" ({message})");
    }
    line
}

/// The limit's name as on the wire (`cpu_time`, `file_size`, ...).
pub fn limit_name(limit: LimitKind) -> &'static str {
    match limit {
        LimitKind::CpuTime => "cpu_time",
        LimitKind::WallTime => "wall_time",
        LimitKind::Memory => "memory",
        LimitKind::Output => "output",
        LimitKind::FileSize => "file_size",
        LimitKind::Processes => "processes",
    }
}

/// The exit status `segi-client judge` ends with: 0 for AC, [`REJECTED`] for any other
/// verdict the submission earned, [`JUDGE_FAILURE`] for IE.
pub fn judge_exit_status(status: Status) -> u8 {
    match status {
        Status::AC => 0,
        Status::WA | Status::TLE | Status::RE | Status::MLE | Status::OLE | Status::CE => REJECTED,
        Status::IE => JUDGE_FAILURE,
    }
}

/// One test's line, e.g. `test 0 - AC (score=0.00, sig=0, time=0.01, mem=1234)` (time in
/// seconds, memory in KiB), followed by a line `  info: ...` for each line of the test case
/// judge's `info` and `  message: ...` for each line of the `message`.
pub fn test_lines(test: &TestResult) -> String {
    let mut text =
        format!("test {} - {}\n", test.test, figures(test.status, test.score, test.signal, test.time, test.memory));
    if let Some(info) = &test.info {
        text += &labelled("info", info);
    }
    if let Some(message) = &test.message {
        text += &labelled("message", message);
    }
    text
}

/// The verdict's line, e.g. `WA (score=0.00, sig=0, time=0.03, mem=1234)`.
pub fn verdict_line(result: &JudgeResult) -> String {
    figures(result.status, result.score, result.signal, result.time, result.memory)
}

fn figures(status: Status, score: f64, signal: i32, time: f64, memory: u64) -> String {
    let (score, time) = (two_decimals(score), two_decimals(time));
    format!("{status} (score={score}, sig={signal}, time={time}, mem={memory})")
}

/// The exit status `segi-client judge` ends with for a problem with a strategy: 0 for `AC`,
/// [`JUDGE_FAILURE`] for `CF` (check failed: the problem's fault), [`REJECTED`] for any other
/// verdict (`WA 3`, `PT`, `CE`, ...).
pub fn pipeline_exit_status(verdict: &str) -> u8 {
    match verdict.split_whitespace().next() {
        Some("AC") => 0,
        Some("CF") => JUDGE_FAILURE,
        _ => REJECTED,
    }
}

/// A verdict change of a problem with a strategy as it streams in, e.g.
/// `test 3: WA (expected 5, got 6)`, `test 2: PT 0.5` or `submission: PT 2.5`. A comment of one
/// line goes in parentheses; a longer one follows, a line `  comment: ...` for each of its lines.
pub fn verdict_update_lines(update: &VerdictUpdate) -> String {
    let mut text = match update.test {
        Some(no) => format!("test {no}: {}", escaped(&update.verdict)),
        None => format!("submission: {}", escaped(&update.verdict)),
    };
    if let Some(points) = update.points {
        text += &format!(" {points}");
    }
    let comment = update.comment.as_deref().map(str::trim).unwrap_or("");
    if comment.is_empty() {
        text.push('\n');
    } else if !comment.contains('\n') {
        text += &format!(" ({})\n", escaped(comment));
    } else {
        text.push('\n');
        text += &labelled("comment", comment);
    }
    text
}

/// One test's line of a problem with a strategy, e.g.
/// `test 1 - WA (points=0.00/1.00, time=0.01, mem=3196 KiB)` (CPU seconds, peak memory in KiB),
/// then `  comment: ...` for each line of its comment.
pub fn pipeline_test_lines(test: &PipelineTest) -> String {
    let mut text = format!(
        "test {} - {} (points={}/{}, time={}, mem={} KiB)\n",
        test.no,
        escaped(&test.verdict),
        two_decimals(test_points(test)),
        two_decimals(test.max_points),
        two_decimals(test.time),
        test.memory / 1024
    );
    if let Some(comment) = &test.comment {
        text += &labelled("comment", comment);
    }
    text
}

/// What a test earned: its `points` when the verdict carries some (PT), all of its
/// `max_points` when OK, else nothing.
fn test_points(test: &PipelineTest) -> f64 {
    match (test.points, test.verdict.as_str()) {
        (Some(points), _) => points,
        (None, "OK" | "AC") => test.max_points,
        (None, _) => 0.0,
    }
}

/// A group's line of a problem with a strategy, e.g. `group g1: 2.00/3.00 passed` (or
/// `failed`), from the group result's `name`, `points`, `max_points` and `passed`.
pub fn pipeline_group_line(group: &serde_json::Value) -> String {
    let name = group.get("name").and_then(serde_json::Value::as_str).unwrap_or("?");
    let number = |key: &str| group.get(key).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    let passed = group.get("passed").and_then(serde_json::Value::as_bool).unwrap_or(false);
    format!(
        "group {}: {}/{} {}",
        escaped(name),
        two_decimals(number("points")),
        two_decimals(number("max_points")),
        if passed { "passed" } else { "failed" }
    )
}

/// The verdict's line of a problem with a strategy, e.g. `WA 1 (points=0.00/2.00)`.
pub fn pipeline_verdict_line(result: &PipelineResult) -> String {
    format!("{} (points={}/{})", escaped(&result.verdict), two_decimals(result.points), two_decimals(result.max_points))
}

/// The exit status `segi-client grade` ends with: 0 when every grader passed, else
/// [`GRADER_FAILED`].
pub fn grade_exit_status(result: &GradeResult) -> u8 {
    match result.passed && result.results.iter().all(|r| r.passed) {
        true => 0,
        false => GRADER_FAILED,
    }
}

/// One grader's line, e.g. `✔ check-output  score=1.00  Grader exited successfully`, then
/// `  evidence: ...` for each line of its evidence when that says more than the message, and
/// for a grader that failed, `  stderr: ...` for each line of the end of its stderr. What the
/// grader wrote has its control characters escaped.
pub fn grader_lines(result: &GraderResult) -> String {
    let mark = if result.passed { '✔' } else { '✘' };
    let mut text = format!("{mark} {}  score={}", escaped(result.name.trim()), two_decimals(result.score));
    let message = result.message.trim();
    if !message.is_empty() {
        text += "  ";
        text += &escaped(message);
    }
    text.push('\n');
    if let Some(evidence) = result.evidence.as_deref().filter(|e| e.trim() != message) {
        text += &labelled("evidence", evidence);
    }
    if let Some(stderr) = result.stderr.as_deref().filter(|_| !result.passed) {
        text += &labelled("stderr", stderr);
    }
    text
}

/// The line `grade` ends with on stderr, e.g. `segi: 2 of 3 graders passed`.
pub fn grade_summary_line(result: &GradeResult) -> String {
    let passed = result.results.iter().filter(|r| r.passed).count();
    let total = result.results.len();
    let noun = if total == 1 { "grader" } else { "graders" };
    format!("segi: {passed} of {total} {noun} passed")
}

/// `{:.2}`, except that a value that rounds to zero is `0.00`, never `-0.00` (an empty sum of
/// floats is -0.0).
fn two_decimals(value: f64) -> String {
    let text = format!("{value:.2}");
    match text.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| matches!(b, b'0' | b'.')) => rest.to_owned(),
        _ => text,
    }
}

/// `  LABEL: LINE` for each line of `text` (trailing blank lines left out), with control
/// characters escaped so that a judge's output cannot drive the terminal.
fn labelled(label: &str, text: &str) -> String {
    let mut out = String::new();
    for line in text.trim_end().lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        out += &format!("  {label}:");
        if !line.is_empty() {
            out.push(' ');
            out += &escaped(line);
        }
        out.push('\n');
    }
    out
}

/// `text` with its control characters but tabs escaped, so that it cannot drive the terminal.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push(c),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict, exit_code: Option<i32>, signal: Option<i32>) -> RunResult {
        RunResult {
            verdict,
            exit_code,
            signal,
            cpu_time: 1.0034,
            wall_time: 1.0041,
            memory: 1_258_291,
            limit: None,
            message: None,
            output_bytes: 0,
            limits: Default::default(),
            measured_by: "cgroup-v2".into(),
            collected: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn exit_status_follows_the_program() {
        assert_eq!(exit_status(&result(Verdict::OK, Some(0), None)), 0);
        assert_eq!(exit_status(&result(Verdict::RE, Some(3), None)), 3);
        assert_eq!(exit_status(&result(Verdict::RE, None, Some(11))), 139);
        assert_eq!(exit_status(&result(Verdict::TLE, None, Some(9))), 137);
        assert_eq!(exit_status(&result(Verdict::SV, None, Some(31))), 159);
    }

    #[test]
    fn limits_without_a_signal_look_killed() {
        assert_eq!(exit_status(&result(Verdict::TLE, None, None)), 137);
        assert_eq!(exit_status(&result(Verdict::MLE, None, None)), 137);
        // Exited 0 but its output was cut: not a success.
        assert_eq!(exit_status(&result(Verdict::OLE, Some(0), None)), 137);
        // Exited non-zero after hitting the file size limit: the program's own code.
        assert_eq!(exit_status(&result(Verdict::OLE, Some(2), None)), 2);
        assert_eq!(exit_status(&result(Verdict::RE, None, None)), 1);
    }

    #[test]
    fn internal_errors_are_client_failures() {
        assert_eq!(exit_status(&result(Verdict::IE, None, None)), 125);
        assert_eq!(exit_status(&result(Verdict::IE, Some(0), Some(9))), 125);
    }

    #[test]
    fn summary_of_a_time_limit() {
        let mut tle = result(Verdict::TLE, None, Some(9));
        tle.limit = Some(LimitKind::CpuTime);
        assert_eq!(summary_line(&tle), "segi: TLE cpu=1.003s wall=1.004s memory=1.2MiB signal=9 limit=cpu_time");
    }

    #[test]
    fn summary_of_an_exit_and_a_message() {
        let mut re = result(Verdict::RE, Some(3), None);
        re.memory = 512;
        assert_eq!(summary_line(&re), "segi: RE cpu=1.003s wall=1.004s memory=512B exit=3");
        let mut ie = result(Verdict::IE, None, None);
        ie.message = Some("cannot create the cgroup".into());
        assert_eq!(summary_line(&ie), "segi: IE cpu=1.003s wall=1.004s memory=1.2MiB (cannot create the cgroup)");
    }

    fn test_result(test: usize, status: Status) -> TestResult {
        TestResult { test, status, score: 10.0, signal: 0, time: 0.567, memory: 8096, info: None, message: None }
    }

    #[test]
    fn test_lines_have_the_report_form() {
        assert_eq!(test_lines(&test_result(0, Status::AC)), "test 0 - AC (score=10.00, sig=0, time=0.57, mem=8096)\n");
        let mut re = test_result(12, Status::RE);
        (re.score, re.signal, re.time) = (0.0, 11, 0.004);
        assert_eq!(test_lines(&re), "test 12 - RE (score=0.00, sig=11, time=0.00, mem=8096)\n");
    }

    #[test]
    fn info_and_message_follow_indented() {
        let mut wa = test_result(3, Status::WA);
        wa.info = Some("f(x) = 3.2e-9\r\n\nexpected 0\x1b[31m\ttab\n\n".into());
        wa.message = Some("the judge said so".into());
        assert_eq!(
            test_lines(&wa),
            "test 3 - WA (score=10.00, sig=0, time=0.57, mem=8096)\n  info: f(x) = 3.2e-9\n  info:\n  \
             info: expected 0\\u{1b}[31m\ttab\n  message: the judge said so\n"
        );
        wa.info = Some(" \n".into());
        wa.message = None;
        assert_eq!(test_lines(&wa), "test 3 - WA (score=10.00, sig=0, time=0.57, mem=8096)\n");
    }

    #[test]
    fn verdicts_and_their_exit_status() {
        let result = JudgeResult {
            status: Status::AC,
            score: 100.0 / 3.0,
            signal: 0,
            time: 1.005,
            memory: 12_345,
            language: "c".into(),
            tests: Vec::new(),
            message: None,
            compilation: None,
        };
        assert_eq!(verdict_line(&result), "AC (score=33.33, sig=0, time=1.00, mem=12345)");
        assert_eq!(judge_exit_status(Status::AC), 0);
        for status in [Status::WA, Status::TLE, Status::RE, Status::MLE, Status::OLE, Status::CE] {
            assert_eq!(judge_exit_status(status), 1, "{status}");
        }
        assert_eq!(judge_exit_status(Status::IE), 2);
    }

    fn pipeline_test(no: u32, verdict: &str, points: Option<f64>, comment: Option<&str>) -> PipelineTest {
        PipelineTest {
            no,
            verdict: verdict.into(),
            points,
            max_points: 1.0,
            comment: comment.map(Into::into),
            group: None,
            time: 0.0123,
            memory: 3_272_704,
        }
    }

    #[test]
    fn verdict_updates_as_they_come() {
        let update = |test, verdict: &str, points, comment: Option<&str>| VerdictUpdate {
            test,
            verdict: verdict.into(),
            points,
            comment: comment.map(Into::into),
        };
        assert_eq!(
            verdict_update_lines(&update(Some(3), "WA", None, Some("expected 5, got 6\n"))),
            "test 3: WA (expected 5, got 6)\n"
        );
        assert_eq!(verdict_update_lines(&update(Some(2), "PT", Some(0.5), None)), "test 2: PT 0.5\n");
        assert_eq!(verdict_update_lines(&update(None, "PT", Some(2.5), Some(" "))), "submission: PT 2.5\n");
        assert_eq!(
            verdict_update_lines(&update(Some(1), "CF", None, Some("checker crashed\nTraceback\x1b[0m"))),
            "test 1: CF\n  comment: checker crashed\n  comment: Traceback\\u{1b}[0m\n"
        );
    }

    #[test]
    fn pipeline_tests_groups_and_verdict() {
        assert_eq!(
            pipeline_test_lines(&pipeline_test(1, "OK", None, None)),
            "test 1 - OK (points=1.00/1.00, time=0.01, mem=3196 KiB)\n"
        );
        assert_eq!(
            pipeline_test_lines(&pipeline_test(2, "WA", None, Some("expected 3\ngot 4\n"))),
            "test 2 - WA (points=0.00/1.00, time=0.01, mem=3196 KiB)\n  comment: expected 3\n  comment: got 4\n"
        );
        let mut pt = pipeline_test(3, "PT", Some(0.25), None);
        pt.max_points = 2.0;
        assert_eq!(pipeline_test_lines(&pt), "test 3 - PT (points=0.25/2.00, time=0.01, mem=3196 KiB)\n");

        let group = serde_json::json!({"name": "g1", "points": 2.0, "max_points": 3.0, "passed": true,
                                       "feedback": {"none": null}});
        assert_eq!(pipeline_group_line(&group), "group g1: 2.00/3.00 passed");
        let group = serde_json::json!({"name": "g2", "points": 0.0, "max_points": 1.5, "passed": false});
        assert_eq!(pipeline_group_line(&group), "group g2: 0.00/1.50 failed");

        let result = PipelineResult {
            verdict: "WA 2".into(),
            points: 1.0,
            max_points: 2.0,
            language: "python3".into(),
            strategy: "standard".into(),
            tests: Vec::new(),
            groups: Vec::new(),
            comment: None,
        };
        assert_eq!(pipeline_verdict_line(&result), "WA 2 (points=1.00/2.00)");
    }

    #[test]
    fn pipeline_verdicts_and_their_exit_status() {
        assert_eq!(pipeline_exit_status("AC"), 0);
        for verdict in ["WA 3", "PT", "CE", "TLE 1", "RE 12", "IG 2", "SV 1", ""] {
            assert_eq!(pipeline_exit_status(verdict), 1, "{verdict}");
        }
        assert_eq!(pipeline_exit_status("CF"), 2);
        assert_eq!(pipeline_exit_status("CF 4"), 2);
    }

    fn grader(name: &str, passed: bool, score: f64, message: &str, evidence: Option<&str>) -> GraderResult {
        GraderResult {
            name: name.into(),
            passed,
            score,
            evidence: evidence.map(Into::into),
            kind: Some("code".into()),
            metadata: None,
            details: None,
            message: message.into(),
            exit_code: Some(if passed { 0 } else { 1 }),
            cpu_time: 0.01,
            wall_time: 0.02,
            memory: 1 << 20,
            stderr: None,
        }
    }

    #[test]
    fn grader_lines_have_a_mark_a_score_and_the_evidence() {
        let ok = grader("check-output", true, 1.0, "Grader exited successfully", None);
        assert_eq!(grader_lines(&ok), "✔ check-output  score=1.00  Grader exited successfully\n");
        let failed =
            grader("tests", false, 0.0, "Grader exited with exit code 1", Some("Grader exited with exit code 1"));
        assert_eq!(grader_lines(&failed), "✘ tests  score=0.00  Grader exited with exit code 1\n");
        let partial =
            grader("my-custom-check", true, 0.875, "Grader exited successfully", Some("14 of 16 assertions passed"));
        assert_eq!(
            grader_lines(&partial),
            "✔ my-custom-check  score=0.88  Grader exited successfully\n  evidence: 14 of 16 assertions passed\n"
        );
        let mut crashed = grader("crash", false, 0.0, "Grader exited with exit code 1", None);
        crashed.stderr = Some("Traceback (most recent call last):\n  File \"check.py\"\n".into());
        assert_eq!(
            grader_lines(&crashed),
            "✘ crash  score=0.00  Grader exited with exit code 1\n  stderr: Traceback (most recent call last):\n  \
             stderr:   File \"check.py\"\n"
        );
        // A grader that passed keeps its diagnostics to itself.
        let mut chatty = grader("chatty", true, 1.0, "Grader exited successfully", None);
        chatty.stderr = Some("checking...\n".into());
        assert_eq!(grader_lines(&chatty), "✔ chatty  score=1.00  Grader exited successfully\n");
        let noisy = grader("x\x1b[2J", false, 0.0, "Grader timed out", Some("line 1\nline\x07 2\n"));
        assert_eq!(
            grader_lines(&noisy),
            "✘ x\\u{1b}[2J  score=0.00  Grader timed out\n  evidence: line 1\n  evidence: line\\u{7} 2\n"
        );
    }

    #[test]
    fn grading_summary_and_exit_status() {
        let mut result = GradeResult {
            passed: false,
            results: vec![
                grader("a", true, 1.0, "Grader exited successfully", None),
                grader("b", false, 0.0, "Grader exited with exit code 1", None),
                grader("c", true, 1.0, "Grader exited successfully", None),
            ],
        };
        assert_eq!(grade_summary_line(&result), "segi: 2 of 3 graders passed");
        assert_eq!(grade_exit_status(&result), 1);
        result.results.remove(1);
        result.passed = true;
        assert_eq!(grade_exit_status(&result), 0);
        result.results.truncate(1);
        assert_eq!(grade_summary_line(&result), "segi: 1 of 1 grader passed");
        // The daemon's `passed` and the results must agree for a success.
        result.results[0].passed = false;
        assert_eq!(grade_exit_status(&result), 1);
    }

    #[test]
    fn no_negative_zero() {
        assert_eq!(two_decimals(-0.0), "0.00");
        assert_eq!(two_decimals(-0.004), "0.00");
        assert_eq!(two_decimals(-0.005_1), "-0.01");
        assert_eq!(two_decimals(-12.5), "-12.50");
        assert_eq!(two_decimals(f64::NAN), "NaN");
    }
}
