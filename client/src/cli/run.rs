//! `segi-client run`: read the host files, run, forward output live, write collected files,
//! then end with the program's status.

use std::io::Write;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use segi_client::report::{exit_status, summary_line, INTERRUPTED};
use segi_client::Client;
use segi_proto::run::BoxFile;
use segi_proto::{Event, Payload, RunRequest, RunResult};
use tokio::signal::unix::{signal, SignalKind};

use super::args::{PathMapping, RunArgs};

/// How long an interrupted client waits for segid to confirm the cancel before leaving;
/// leaving closes the connection, which stops the run too.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

pub async fn run(socket: Option<PathBuf>, json: bool, args: RunArgs) -> anyhow::Result<u8> {
    // Host files are read before connecting: a typo in a path should not cost a sandbox.
    let request = build_request(&args)?;
    let client = super::connect(socket).await?;
    let mut run = client.start_run(&request).await?;

    // From here on Ctrl-C and SIGTERM cancel the run instead of killing the client.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    loop {
        tokio::select! {
            event = run.next_event() => match event? {
                Some(event) => show_event(&event, json)?,
                None => break,
            },
            _ = interrupt.recv() => return cancel(&client, run.id(), "run", &mut interrupt, &mut terminate).await,
            _ = terminate.recv() => return cancel(&client, run.id(), "run", &mut interrupt, &mut terminate).await,
        }
    }
    let mut result = run.finish().await?;

    write_collected(&args.collect, &result);
    if json {
        // The files went to their HOSTPATHs; repeating their bytes on stdout helps nobody.
        for collected in &mut result.collected {
            collected.content = None;
        }
        print_json_line(&result)?;
    } else {
        eprintln!("{}", summary_line(&result));
    }
    Ok(exit_status(&result))
}

/// Asks segid to stop the request `id` (`what` names it: "run", "evaluation", "judging") and
/// waits (briefly) for its answer; a second signal leaves at once.
pub(super) async fn cancel(
    client: &Client,
    id: u64,
    what: &str,
    interrupt: &mut tokio::signal::unix::Signal,
    terminate: &mut tokio::signal::unix::Signal,
) -> anyhow::Result<u8> {
    eprintln!("segi: interrupted; cancelling the {what}");
    tokio::select! {
        _ = tokio::time::timeout(CANCEL_GRACE, client.cancel(id)) => {}
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    Ok(INTERRUPTED)
}

/// The request as the daemon takes it, with `--file` and `--stdin` contents read here.
fn build_request(args: &RunArgs) -> anyhow::Result<RunRequest> {
    let stdin = match &args.stdin {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read --stdin {}", path.display()))?;
            Some(Payload::from_bytes(&bytes))
        }
        None => None,
    };
    let files = args.files.iter().map(box_file).collect::<anyhow::Result<_>>()?;
    let mut collect: Vec<String> = Vec::new();
    for mapping in &args.collect {
        if !collect.contains(&mapping.box_path) {
            collect.push(mapping.box_path.clone());
        }
    }
    Ok(RunRequest {
        policy: args.policy.clone(),
        command: args.command.clone(),
        limits: args.limits.to_limits(),
        env: args.env.iter().cloned().collect(),
        stdin,
        files,
        collect,
    })
}

/// Reads one `--file`, keeping whether the host file is executable by anyone.
fn box_file(mapping: &PathMapping) -> anyhow::Result<BoxFile> {
    let host = &mapping.host_path;
    let context = || format!("cannot read --file {}={}", mapping.box_path, host.display());
    let executable = std::fs::metadata(host).with_context(context)?.permissions().mode() & 0o111 != 0;
    let bytes = std::fs::read(host).with_context(context)?;
    Ok(BoxFile { path: mapping.box_path.clone(), content: Some(Payload::from_bytes(&bytes)), fd: None, executable })
}

/// Forwards one piece of output: raw bytes to our own stdout/stderr, or a JSON line.
fn show_event(event: &Event, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json_line(event);
    }
    let (payload, to_stdout) = match event {
        Event::Stdout(payload) => (payload, true),
        Event::Stderr(payload) => (payload, false),
        Event::Queued { ahead } => {
            let line = format!("segi: queued: every run slot is busy, {ahead} other run(s) waiting ahead\n");
            return write_flushed(&mut std::io::stderr().lock(), line.as_bytes()).context("cannot write to stderr");
        }
        // Only `evaluate`, `judge` and `grade` send these.
        Event::Text { .. } | Event::Data { .. } | Event::Test(_) | Event::Grader(_) | Event::Verdict(_) => {
            return Ok(())
        }
    };
    let bytes = payload.to_bytes().context("segid sent output that is not valid base64")?;
    let written = match to_stdout {
        true => write_flushed(&mut std::io::stdout().lock(), &bytes),
        false => write_flushed(&mut std::io::stderr().lock(), &bytes),
    };
    written.context("cannot forward the program's output")
}

pub(super) fn print_json_line(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    write_flushed(&mut std::io::stdout().lock(), &line).context("cannot write to stdout")
}

pub(super) fn write_flushed(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}

/// Writes each `--collect`ed file to its HOSTPATH. A file that could not be collected is
/// a warning, not a failure: the exit status stays the program's.
fn write_collected(mappings: &[PathMapping], result: &RunResult) {
    for mapping in mappings {
        if let Err(why) = write_one(mapping, result) {
            eprintln!("segi: cannot collect {}: {why}", mapping.box_path);
        }
    }
}

fn write_one(mapping: &PathMapping, result: &RunResult) -> Result<(), String> {
    let collected = result.collected.iter().find(|c| c.path == mapping.box_path).ok_or("segid did not return it")?;
    if let Some(error) = &collected.error {
        return Err(error.clone());
    }
    let content = collected.content.as_ref().ok_or("segid returned no content for it")?;
    let bytes = content.to_bytes().map_err(|e| format!("segid sent invalid base64 ({e})"))?;
    std::fs::write(&mapping.host_path, bytes).map_err(|e| format!("cannot write {}: {e}", mapping.host_path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Cli, Command};
    use clap::Parser as _;
    use segi_proto::Limits;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("segi-client-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn run_args(args: &[&str]) -> RunArgs {
        let line = ["segi-client", "run"].into_iter().chain(args.iter().copied());
        match Cli::try_parse_from(line).unwrap().command {
            Command::Run(args) => args,
            _ => unreachable!(),
        }
    }

    #[test]
    fn request_carries_files_limits_and_collect() {
        let program = scratch("prog");
        std::fs::write(&program, b"#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o750)).unwrap();
        let data = scratch("data.bin");
        std::fs::write(&data, [0xff, 0x00]).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o644)).unwrap();

        let prog_arg = format!("prog={}", program.display());
        let data_arg = format!("in/data={}", data.display());
        let stdin_arg = data.display().to_string();
        let args = run_args(&[
            "--time",
            "2s",
            "--memory",
            "64M",
            "--file",
            &prog_arg,
            "--file",
            &data_arg,
            "--stdin",
            &stdin_arg,
            "--env",
            "A=b",
            "--collect",
            "out=./x",
            "--collect",
            "out=./y",
            "--",
            "./prog",
        ]);
        let request = build_request(&args).unwrap();
        assert_eq!(request.policy, "default");
        assert_eq!(request.command, ["./prog"]);
        assert_eq!(request.limits, Limits { cpu_time: Some(2.0), memory: Some(64 << 20), ..Limits::default() });
        assert_eq!(request.env.get("A").map(String::as_str), Some("b"));
        assert_eq!(request.stdin, Some(Payload::from_bytes(&[0xff, 0x00])));
        assert_eq!(request.collect, ["out"]);
        assert_eq!(request.files[0].path, "prog");
        assert!(request.files[0].executable);
        assert_eq!(request.files[0].content, Some(Payload::Text("#!/bin/sh\necho hi\n".into())));
        assert_eq!(request.files[1].path, "in/data");
        assert!(!request.files[1].executable);
        assert!(matches!(request.files[1].content, Some(Payload::Base64(_))));
    }

    #[test]
    fn a_missing_host_file_names_the_flag() {
        let args = run_args(&["--file", "prog=/nonexistent/a.out", "--", "./prog"]);
        let message = format!("{:#}", build_request(&args).unwrap_err());
        assert!(message.starts_with("cannot read --file prog=/nonexistent/a.out: "), "{message}");
        let args = run_args(&["--stdin", "/nonexistent/in", "--", "cat"]);
        let message = format!("{:#}", build_request(&args).unwrap_err());
        assert!(message.starts_with("cannot read --stdin /nonexistent/in: "), "{message}");
    }

    #[test]
    fn collected_files_are_written_or_explained() {
        let out = scratch("collected.out");
        let _ = std::fs::remove_file(&out);
        let mut result: RunResult = serde_json::from_value(serde_json::json!({
            "verdict": "OK", "exit_code": 0, "signal": null, "cpu_time": 0.0, "wall_time": 0.0,
            "memory": 0, "limit": null, "message": null,
            "collected": [
                {"path": "out", "content": {"text": "42\n"}},
                {"path": "link", "error": "not a regular file"},
            ],
        }))
        .unwrap();
        let mapping =
            |box_path: &str, host: &PathBuf| PathMapping { box_path: box_path.into(), host_path: host.clone() };
        assert_eq!(write_one(&mapping("out", &out), &result), Ok(()));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "42\n");
        assert_eq!(write_one(&mapping("link", &out), &result), Err("not a regular file".into()));
        assert!(write_one(&mapping("other", &out), &result).is_err());
        result.collected.clear();
        assert_eq!(write_one(&mapping("out", &out), &result), Err("segid did not return it".into()));
    }
}
