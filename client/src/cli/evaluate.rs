//! `segi-client evaluate`: open the submission's files, read the problem directory, evaluate,
//! show the evaluator's report as it comes, then end with the evaluator's status.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use anyhow::Context as _;
use segi_client::client::RawEvent;
use segi_client::report::{exit_status, summary_line};
use segi_proto::evaluate::Warning;
use segi_proto::{EvaluateRequest, Event, Payload, SubmissionFile};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::signal::unix::{signal, SignalKind};

use super::args::{EvaluateArgs, SubmissionArg};
use super::problem_dir::{open_source, problem_files};
use super::run::{cancel, print_json_line, write_flushed};

pub async fn evaluate(socket: Option<PathBuf>, json: bool, args: EvaluateArgs) -> anyhow::Result<u8> {
    // Files are opened and read before connecting: a typo in a path should not cost a sandbox.
    let (request, fds) = build_request(&args)?;
    let client = super::connect(socket).await?;
    let mut evaluation = client.start_evaluate(&request, fds).await?;

    // From here on Ctrl-C and SIGTERM cancel the evaluation instead of killing the client.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut screen = Screen::new(io::stdout(), io::stderr());
    loop {
        tokio::select! {
            event = evaluation.next_raw_event() => match event? {
                Some(event) if json => print_raw_line(&event.json).context("cannot write to stdout")?,
                Some(event) => screen.show(&event).context("cannot show the evaluator's report")?,
                None => break,
            },
            _ = interrupt.recv() => return cancel(&client, evaluation.id(), "evaluation", &mut interrupt, &mut terminate).await,
            _ = terminate.recv() => return cancel(&client, evaluation.id(), "evaluation", &mut interrupt, &mut terminate).await,
        }
    }
    let result = evaluation.finish().await?;

    if json {
        print_json_line(&result)?;
    } else {
        let mut stderr = io::stderr().lock();
        for warning in &result.warnings {
            let _ = writeln!(stderr, "{}", warning_line(warning));
        }
        let _ = writeln!(stderr, "{}", summary_line(&result));
    }
    Ok(exit_status(&result))
}

/// `segi: warning: stdout line 7 ...`: a mistake the evaluator made in its report. segid's
/// message names the line already (`line` is there for programs).
fn warning_line(warning: &Warning) -> String {
    format!("segi: warning: {}", warning.message)
}

/// The request as the daemon takes it, and the open submission files its `fd`s index.
fn build_request(args: &EvaluateArgs) -> anyhow::Result<(EvaluateRequest, Vec<OwnedFd>)> {
    let mut submission = Vec::new();
    let mut fds = Vec::new();
    for arg in &args.submissions {
        let (filename, file) = open_submission(arg)?;
        submission.push(SubmissionFile { field: arg.field.clone(), filename, content: None, fd: Some(fds.len()) });
        fds.push(OwnedFd::from(file));
    }
    let problem = args.problem.as_deref().map(problem_files).transpose()?;
    let request = EvaluateRequest {
        policy: args.policy.clone(),
        command: args.command.clone(),
        submission,
        problem,
        limits: args.limits.to_limits(),
        env: args.env.iter().cloned().collect(),
    };
    Ok((request, fds))
}

/// Opens one `--submission` file for segid to read through; its name goes along as the
/// field's filename.
fn open_submission(arg: &SubmissionArg) -> anyhow::Result<(String, File)> {
    open_source(&arg.path, &format!("--submission {}={}", arg.field, arg.path.display()))
}

/// One event object as segid sent it, on a line of its own (`--json`).
fn print_raw_line(json: &RawValue) -> io::Result<()> {
    let mut line = Vec::with_capacity(json.get().len() + 1);
    line.extend_from_slice(json.get().as_bytes());
    line.push(b'\n');
    write_flushed(&mut io::stdout().lock(), &line)
}

/// The readable report: text as it comes, each data value on a line of its own, the
/// evaluator's stderr on stderr.
struct Screen<O, E> {
    out: O,
    err: E,
    /// Whether what `out` shows so far ends with a line break (or is empty).
    at_line_start: bool,
}

impl<O: Write, E: Write> Screen<O, E> {
    fn new(out: O, err: E) -> Self {
        Screen { out, err, at_line_start: true }
    }

    fn show(&mut self, event: &RawEvent) -> io::Result<()> {
        match &event.event {
            Event::Text { payload } => self.text(payload.as_bytes()),
            Event::Stdout(payload) => self.text(&decode(payload)?),
            Event::Data { payload } => {
                // The evaluator's own text (key order kept), without its spacing.
                let value = raw_payload(&event.json).unwrap_or(payload.0.get());
                let mut line = String::new();
                if !self.at_line_start {
                    line.push('\n');
                }
                line.push_str("  data: ");
                line.push_str(&compact(value));
                line.push('\n');
                self.at_line_start = true;
                write_flushed(&mut self.out, line.as_bytes())
            }
            Event::Stderr(payload) => write_flushed(&mut self.err, &decode(payload)?),
            // `run`, `judge` and `grade` events.
            Event::Queued { .. } | Event::Test(_) | Event::Grader(_) | Event::Verdict(_) => Ok(()),
        }
    }

    fn text(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(&last) = bytes.last() {
            self.at_line_start = last == b'\n';
        }
        write_flushed(&mut self.out, bytes)
    }
}

fn decode(payload: &Payload) -> io::Result<Vec<u8>> {
    payload
        .to_bytes()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("segid sent invalid base64: {e}")))
}

/// The `payload` of a data event's object, as written.
fn raw_payload(event: &RawValue) -> Option<&str> {
    #[derive(Deserialize)]
    struct DataEvent<'a> {
        #[serde(borrow)]
        payload: &'a RawValue,
    }
    serde_json::from_str::<DataEvent>(event.get()).ok().map(|data| data.payload.get())
}

/// Valid JSON without the whitespace between its tokens.
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Cli, Command};
    use clap::Parser as _;
    use std::fs;
    use std::io::Read as _;
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("segi-client-evaluate-test-{}", std::process::id())).join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, content: &str, mode: u32) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn evaluate_args(args: &[&str]) -> EvaluateArgs {
        let line = ["segi-client", "evaluate"].into_iter().chain(args.iter().copied());
        match Cli::try_parse_from(line).unwrap().command {
            Command::Evaluate(args) => args,
            _ => unreachable!(),
        }
    }

    fn raw(json: &str) -> RawEvent {
        RawEvent { event: serde_json::from_str(json).unwrap(), json: RawValue::from_string(json.into()).unwrap() }
    }

    fn shown(events: &[&str]) -> (String, Vec<u8>) {
        let mut screen = Screen::new(Vec::new(), Vec::new());
        for event in events {
            screen.show(&raw(event)).unwrap();
        }
        (String::from_utf8(screen.out).unwrap(), screen.err)
    }

    #[test]
    fn text_as_it_comes_and_data_on_lines_of_their_own() {
        let (out, err) = shown(&[
            r#"{"type":"text","payload":"Compiling sol.c..."}"#,
            r#"{"type":"data","payload":{"type": "compilation", "outcome": "success"}}"#,
            r#"{"type":"stderr","text":"gcc: warning\n"}"#,
            r#"{"type":"text","payload":"case 01: correct"}"#,
            r#"{"type":"text","payload":"\n"}"#,
            r#"{"type":"data","payload":{"type":"score","value":60}}"#,
            r#"{"type":"data","payload":[1, "a b", {"k\"": " \" x"}]}"#,
            r#"{"type":"text","payload":"done\n"}"#,
            r#"{"type":"stderr","base64":"/w=="}"#,
        ]);
        assert_eq!(
            out,
            "Compiling sol.c...\n  data: {\"type\":\"compilation\",\"outcome\":\"success\"}\ncase 01: correct\n  \
             data: {\"type\":\"score\",\"value\":60}\n  data: [1,\"a b\",{\"k\\\"\":\" \\\" x\"}]\ndone\n"
        );
        assert_eq!(err, b"gcc: warning\n\xff");
    }

    #[test]
    fn data_first_needs_no_line_break() {
        let (out, _) = shown(&[r#"{"type":"data","payload":true}"#, r#"{"type":"data","payload":"x"}"#]);
        assert_eq!(out, "  data: true\n  data: \"x\"\n");
    }

    #[test]
    fn compact_keeps_strings() {
        assert_eq!(compact("{ \"a b\" : [ 1 ,\n 2 ] , \"\\\\\" : \"\\\\ \" }"), "{\"a b\":[1,2],\"\\\\\":\"\\\\ \"}");
    }

    #[test]
    fn warnings_name_the_stdout_line() {
        let warning = Warning { line: 7, message: "stdout line 7 is not JSON".into() };
        assert_eq!(warning_line(&warning), "segi: warning: stdout line 7 is not JSON");
    }

    #[test]
    fn submissions_are_passed_open() {
        let dir = scratch("submission");
        write(&dir.join("sol.c"), "int main() {}\n", 0o644);
        let sol = format!("source={}", dir.join("sol.c").display());
        let notes = format!("Notes={}", dir.join("sol.c").display());
        let args = evaluate_args(&["--submission", &sol, "--submission", &notes, "--time", "5", "--", "./check"]);
        let (request, fds) = build_request(&args).unwrap();
        assert_eq!(request.policy, "evaluator");
        assert_eq!(request.problem, None);
        assert_eq!(request.limits.cpu_time, Some(5.0));
        assert_eq!(
            request.submission,
            [
                SubmissionFile { field: "source".into(), filename: "sol.c".into(), content: None, fd: Some(0) },
                SubmissionFile { field: "Notes".into(), filename: "sol.c".into(), content: None, fd: Some(1) },
            ]
        );
        assert_eq!(fds.len(), 2);
        let mut text = String::new();
        File::from(fds.into_iter().next().unwrap()).read_to_string(&mut text).unwrap();
        assert_eq!(text, "int main() {}\n");
        let json = serde_json::to_value(&request).unwrap();
        assert!(json.get("problem").is_none(), "{json}");
    }

    #[test]
    fn unusable_submissions_name_the_flag_and_path() {
        let args = evaluate_args(&["--submission", "source=/nonexistent/sol.c", "--", "x"]);
        let message = format!("{:#}", build_request(&args).unwrap_err());
        assert!(message.starts_with("cannot open --submission source=/nonexistent/sol.c: "), "{message}");
        let dir = scratch("submission-dir");
        let arg = format!("source={}", dir.display());
        let message = format!("{:#}", build_request(&evaluate_args(&["--submission", &arg, "--", "x"])).unwrap_err());
        assert!(message.contains(&arg) && message.contains("not a regular file but a directory"), "{message}");
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let arg = format!("source={}", fifo.display());
        let message = format!("{:#}", build_request(&evaluate_args(&["--submission", &arg, "--", "x"])).unwrap_err());
        assert!(message.contains("a named pipe"), "{message}");
    }

    #[test]
    fn the_problem_directory_goes_inline() {
        let dir = scratch("problem");
        write(&dir.join("evaluator.py"), "print(1)\n", 0o644);
        write(&dir.join("bin/check"), "#!/bin/sh\n", 0o755);
        write(&dir.join("cases/01.in"), "1 2\n", 0o644);
        fs::write(dir.join("cases/bin.dat"), [0xff, 0x00]).unwrap();
        write(&dir.join(".git/config"), "[core]\n", 0o644);
        write(&dir.join("cases/.git/kept"), "x", 0o644);
        std::os::unix::fs::symlink("evaluator.py", dir.join("link.py")).unwrap();
        std::os::unix::fs::symlink("../bin", dir.join("cases/tools")).unwrap();
        let args = evaluate_args(&["--problem", dir.to_str().unwrap(), "--", "python3", "evaluator.py"]);
        let (request, fds) = build_request(&args).unwrap();
        assert!(fds.is_empty());
        let files = request.problem.unwrap();
        let listed: Vec<(&str, bool)> = files.iter().map(|f| (f.path.as_str(), f.executable)).collect();
        assert_eq!(
            listed,
            [
                ("bin/check", true),
                ("cases/.git/kept", false),
                ("cases/01.in", false),
                ("cases/bin.dat", false),
                ("cases/tools/check", true),
                ("evaluator.py", false),
                ("link.py", false),
            ]
        );
        assert_eq!(files[5].content, Some(Payload::Text("print(1)\n".into())));
        assert_eq!(files[6].content, files[5].content);
        assert!(matches!(files[3].content, Some(Payload::Base64(_))));
        assert!(files.iter().all(|f| f.fd.is_none()));
    }
}
