//! `segi-client grade`: read the graders and the GraderInput, archive the workspace, grade,
//! show each grader's result in the order of the graders as soon as it and those before it are
//! known, then end with how many passed.

use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use segi_client::client::RawEvent;
use segi_client::report::{grade_exit_status, grade_summary_line, grader_lines};
use segi_proto::grade::{GradeRequest, GradeResult, GraderConfig, GraderResult, Workspace};
use segi_proto::Event;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};
use tokio::signal::unix::{signal, SignalKind};

use super::args::GradeArgs;
use super::run::{cancel, write_flushed};

pub async fn grade(socket: Option<PathBuf>, json: bool, args: GradeArgs) -> anyhow::Result<u8> {
    // Files are read before connecting: a typo in a path should not cost a sandbox.
    let (request, fds) = build_request(&args, |skipped| {
        eprintln!(
            "segi: warning: {} is {}; it is left out of the workspace",
            args.workspace.join(&skipped.path).display(),
            skipped.kind
        )
    })?;
    let client = super::connect(socket).await?;
    let mut grading = client.start_grade(&request, fds).await?;

    // From here on Ctrl-C and SIGTERM cancel the grading instead of killing the client.
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut screen = Screen::new(io::stdout(), io::stderr(), json, request.graders.len());
    loop {
        tokio::select! {
            event = grading.next_raw_event() => match event? {
                Some(event) => screen.event(&event).context("cannot show a grader's result")?,
                None => break,
            },
            _ = interrupt.recv() => return cancel(&client, grading.id(), "grading", &mut interrupt, &mut terminate).await,
            _ = terminate.recv() => return cancel(&client, grading.id(), "grading", &mut interrupt, &mut terminate).await,
        }
    }
    let result = grading.finish().await?;
    screen.end(&result).context("cannot show the graders' results")?;
    Ok(grade_exit_status(&result))
}

/// The request as the daemon takes it, with the workspace archive as descriptor 0.
fn build_request(
    args: &GradeArgs,
    on_skip: impl FnMut(segi_client::workspace::Skipped),
) -> anyhow::Result<(GradeRequest, Vec<OwnedFd>)> {
    let graders = match &args.config {
        Some(path) => read_config(path)?,
        None => vec![flag_grader(args)],
    };
    let input = match &args.input {
        Some(path) => read_input(path)?,
        None => Value::Object(Map::new()),
    };
    let archive = segi_client::workspace::archive(&args.workspace, on_skip)
        .with_context(|| format!("cannot archive --workspace {}", args.workspace.display()))?;
    let request = GradeRequest {
        workspace: Workspace { archive: None, fd: Some(0) },
        input,
        graders,
        policy: args.policy.clone(),
    };
    Ok((request, vec![OwnedFd::from(archive)]))
}

/// The one grader `--program` and its flags describe.
fn flag_grader(args: &GradeArgs) -> GraderConfig {
    GraderConfig {
        name: args.name.clone(),
        program: args.program.clone().unwrap_or_default(),
        args: args.args.clone(),
        shell: args.shell,
        sub_path: args.sub_path.clone(),
        timeout: args.timeout.and_then(Number::from_f64).map(Value::Number),
        env: args.env.iter().cloned().collect(),
    }
}

/// `--input FILE`: a JSON object, sent as it is.
fn read_input(path: &Path) -> anyhow::Result<Value> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read --input {shown}"))?;
    let input: Value = serde_json::from_str(&text).with_context(|| format!("--input {shown} is not valid JSON"))?;
    if !input.is_object() {
        bail!("--input {shown}: a GraderInput is a JSON object (trajectory, stimulus, ...), not {}", what(&input));
    }
    Ok(input)
}

/// `--config FILE`: the graders of the file.
fn read_config(path: &Path) -> anyhow::Result<Vec<GraderConfig>> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read --config {shown}"))?;
    parse_config(&text).with_context(|| format!("--config {shown}"))
}

/// The reference's form, in YAML or JSON: a top-level `graders:` list of
/// `{type: program, name?, config: {...}}` entries (other top-level keys are not ours).
fn parse_config(text: &str) -> anyhow::Result<Vec<GraderConfig>> {
    let document: Value = match text.trim_start().starts_with('{') {
        true => serde_json::from_str(text).context("not valid JSON")?,
        false => serde_yaml_ng::from_str(text).context("not valid YAML")?,
    };
    let Value::Object(mut document) = document else {
        bail!("expected a mapping with a `graders:` list, not {}", what(&document));
    };
    let entries = match document.remove("graders") {
        Some(Value::Array(entries)) => entries,
        Some(other) => bail!("`graders` must be a list of graders, not {}", what(&other)),
        None => bail!("no top-level `graders:` list"),
    };
    if entries.is_empty() {
        bail!("the `graders:` list is empty");
    }
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| grader_entry(entry).context(format!("graders[{index}]")))
        .collect()
}

/// One entry of `graders:`.
fn grader_entry(entry: Value) -> anyhow::Result<GraderConfig> {
    let Value::Object(mut entry) = entry else {
        bail!("expected a mapping with `type` and `config`, not {}", what(&entry));
    };
    match entry.remove("type") {
        Some(Value::String(kind)) if kind == "program" => {}
        Some(Value::String(kind)) => {
            bail!("grader type `{kind}` is not supported: segi runs only `program` graders")
        }
        Some(other) => bail!("`type` must be a string such as program, not {}", what(&other)),
        None => bail!("no `type` (segi runs `type: program` graders)"),
    }
    let name = match entry.remove("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name),
        Some(other) => bail!("`name` must be a string, not {}", what(&other)),
    };
    let config = entry.remove("config");
    if let Some(key) = entry.keys().next() {
        bail!("unknown key `{key}` (an entry has `type`, `name` and `config`)");
    }
    let Some(Value::Object(mut config)) = config else {
        bail!("`config` must be a mapping with at least `program`");
    };
    // An empty YAML key (`args:`) is null: as if it were not there.
    config.retain(|_, value| !value.is_null());
    // `A: 1` and `args: [-n, 5]` mean the text, as on a command line.
    if let Some(Value::Array(args)) = config.get_mut("args") {
        args.iter_mut().for_each(scalar_to_string);
    }
    if let Some(Value::Object(env)) = config.get_mut("env") {
        env.values_mut().for_each(scalar_to_string);
    }
    let mut config: GraderConfig = serde_json::from_value(Value::Object(config)).context("config")?;
    if config.name.is_none() {
        config.name = name;
    }
    Ok(config)
}

/// A number or boolean as the text it stands for; anything else stays (and may be refused).
fn scalar_to_string(value: &mut Value) {
    match value {
        Value::Number(n) => *value = Value::String(n.to_string()),
        Value::Bool(b) => *value = Value::String(b.to_string()),
        _ => {}
    }
}

/// What a JSON value is, for a message.
fn what(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Where the grading is shown: a line per grader (or, `json`, its result object) on `out`, in
/// the order of the request; the count of passes on `err`.
struct Screen<O, E> {
    out: O,
    err: E,
    json: bool,
    /// Each grader's result as shown (a JSON line or readable lines), once it is known.
    known: Vec<Option<Vec<u8>>>,
    /// How many of `known`, from the start, have been written.
    shown: usize,
}

impl<O: Write, E: Write> Screen<O, E> {
    fn new(out: O, err: E, json: bool, graders: usize) -> Self {
        Screen { out, err, json, known: vec![None; graders], shown: 0 }
    }

    fn event(&mut self, event: &RawEvent) -> io::Result<()> {
        match &event.event {
            Event::Grader(grader) => {
                // The result object as segid wrote it, key order kept.
                let raw = raw_result(&event.json).filter(|_| self.json).map(|raw| json_line(raw.get()));
                let shown = raw.unwrap_or_else(|| self.shown_result(&grader.result));
                match self.known.get_mut(grader.index) {
                    Some(slot) => *slot = Some(shown),
                    None => {
                        let line = format!(
                            "segi: warning: segid sent the result of grader {}, not in the request\n",
                            grader.index
                        );
                        return write_flushed(&mut self.err, line.as_bytes());
                    }
                }
                self.flush_known()
            }
            Event::Queued { ahead } if !self.json => {
                let line = format!("segi: queued: every run slot is busy, {ahead} other run(s) waiting ahead\n");
                write_flushed(&mut self.err, line.as_bytes())
            }
            _ => Ok(()),
        }
    }

    /// Shows the graders no event told of (from the response), then the count on `err`.
    fn end(&mut self, result: &GradeResult) -> io::Result<()> {
        if self.known.len() < result.results.len() {
            self.known.resize(result.results.len(), None);
        }
        for (index, grader) in result.results.iter().enumerate() {
            if self.known[index].is_none() {
                self.known[index] = Some(self.shown_result(grader));
            }
        }
        // Graders the response does not have either: nothing to show for them.
        self.known.iter_mut().for_each(|slot| {
            slot.get_or_insert_with(Vec::new);
        });
        self.flush_known()?;
        if self.json {
            return Ok(());
        }
        write_flushed(&mut self.err, format!("{}\n", grade_summary_line(result)).as_bytes())
    }

    fn shown_result(&self, result: &GraderResult) -> Vec<u8> {
        match self.json {
            true => json_line(&serde_json::to_string(result).unwrap_or_default()),
            false => grader_lines(result).into_bytes(),
        }
    }

    /// Writes the results known from the first not yet written on, up to the first unknown.
    fn flush_known(&mut self) -> io::Result<()> {
        let mut bytes = Vec::new();
        while let Some(Some(shown)) = self.known.get(self.shown) {
            bytes.extend_from_slice(shown);
            self.shown += 1;
        }
        match bytes.is_empty() {
            true => Ok(()),
            false => write_flushed(&mut self.out, &bytes),
        }
    }
}

fn json_line(json: &str) -> Vec<u8> {
    let mut line = Vec::with_capacity(json.len() + 1);
    line.extend_from_slice(json.as_bytes());
    line.push(b'\n');
    line
}

/// The `result` of a grader event's object, as written.
fn raw_result(event: &RawValue) -> Option<&RawValue> {
    #[derive(Deserialize)]
    struct GraderEvent<'a> {
        #[serde(borrow)]
        result: &'a RawValue,
    }
    serde_json::from_str::<GraderEvent>(event.get()).ok().map(|event| event.result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::{Cli, Command};
    use clap::Parser as _;
    use serde_json::json;
    use std::fs;
    use std::io::Read as _;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("segi-client-grade-test-{}", std::process::id())).join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn grade_args(args: &[&str]) -> GradeArgs {
        let line = ["segi-client", "grade"].into_iter().chain(args.iter().copied());
        match Cli::try_parse_from(line).unwrap().command {
            Command::Grade(args) => args,
            _ => unreachable!(),
        }
    }

    fn config(json: Value) -> GraderConfig {
        serde_json::from_value(json).unwrap()
    }

    /// The reference's examples (program-grader.txt), indented as YAML is.
    const REFERENCE_YAML: &str = r#"
graders:
  - type: program
    config:
      program: "python"
      args: ["graders/check_output.py"]
      timeout: 60s
      sub_path: "src/app"
  # Python script that inspects the workspace
  - type: program
    config:
      program: "python"
      args: ["graders/validate_schema.py"]
  # Bash script using exit-code mode
  - type: program
    config:
      program: "bash"
      args: ["graders/check.sh"]
      shell: true
  # Node.js script returning a GraderResult JSON
  - type: program
    config:
      program: "node"
      args: ["graders/score.js"]
      timeout: 120s
  # Pass custom environment variables to the grader
  - type: program
    config:
      program: python
      args: [-m, my_checker]
      env:
        API_ENDPOINT: "https://test.example.com"
        EXPECTED_STATUS: "active"
"#;

    #[test]
    fn the_reference_examples_parse() {
        let graders = parse_config(REFERENCE_YAML).unwrap();
        assert_eq!(
            graders,
            [
                config(
                    json!({"program": "python", "args": ["graders/check_output.py"], "timeout": "60s", "sub_path": "src/app"})
                ),
                config(json!({"program": "python", "args": ["graders/validate_schema.py"]})),
                config(json!({"program": "bash", "args": ["graders/check.sh"], "shell": true})),
                config(json!({"program": "node", "args": ["graders/score.js"], "timeout": "120s"})),
                config(json!({"program": "python", "args": ["-m", "my_checker"],
                    "env": {"API_ENDPOINT": "https://test.example.com", "EXPECTED_STATUS": "active"}})),
            ]
        );
        // As sent: the timeout as written, fields left out stay out.
        let sent = serde_json::to_value(&graders[0]).unwrap();
        assert_eq!(
            sent,
            json!({"program": "python", "args": ["graders/check_output.py"], "shell": false, "timeout": "60s", "sub_path": "src/app"})
        );
    }

    #[test]
    fn names_numbers_and_json() {
        let yaml = "
name: an eval spec with more than graders
stimuli: []
graders:
  - type: program
    name: my-check
    config:
      program: ./check
      args:
      timeout: 1.5
      env: {RETRIES: 3, VERBOSE: true, EMPTY: ''}
  - type: program
    name: outer
    config: {program: sh, name: inner, args: [-c, exit 0, 7]}
";
        let graders = parse_config(yaml).unwrap();
        assert_eq!(graders[0].name.as_deref(), Some("my-check"));
        assert!(graders[0].args.is_empty());
        assert_eq!(graders[0].timeout, Some(json!(1.5)));
        assert_eq!(graders[0].env.get("RETRIES").map(String::as_str), Some("3"));
        assert_eq!(graders[0].env.get("VERBOSE").map(String::as_str), Some("true"));
        assert_eq!(graders[0].env.get("EMPTY").map(String::as_str), Some(""));
        assert_eq!(graders[1].name.as_deref(), Some("inner"));
        assert_eq!(graders[1].args, ["-c", "exit 0", "7"]);

        let json = r#"{"graders": [{"type": "program", "config": {"program": "python3", "args": ["check.py"], "timeout": 30}}]}"#;
        assert_eq!(
            parse_config(json).unwrap(),
            [config(json!({"program": "python3", "args": ["check.py"], "timeout": 30}))]
        );
    }

    #[test]
    fn the_example_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/graders");
        for entry in fs::read_dir(&dir).into_iter().flatten() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let graders = read_config(&path).unwrap_or_else(|e| panic!("{e:#}"));
                assert!(graders.iter().all(|g| g.name.is_some() && !g.program.is_empty()), "{}", path.display());
            }
        }
    }

    fn config_error(text: &str) -> String {
        format!("{:#}", parse_config(text).unwrap_err())
    }

    #[test]
    fn config_mistakes_are_named() {
        let message = config_error(
            "graders:\n  - type: program\n    config: {program: x}\n  - type: file-exists\n    config: {path: a}\n",
        );
        assert_eq!(message, "graders[1]: grader type `file-exists` is not supported: segi runs only `program` graders");
        let message = config_error("graders:\n  - type: program\n    config: {program: x, timeuot: 5s}\n");
        assert!(message.starts_with("graders[0]: config: unknown field `timeuot`"), "{message}");
        let message = config_error("graders:\n  - type: program\n    config: {args: [x]}\n");
        assert!(message.starts_with("graders[0]: config: missing field `program`"), "{message}");
        let message = config_error("graders:\n  - type: program\n    weight: 2\n    config: {program: x}\n");
        assert!(message.starts_with("graders[0]: unknown key `weight`"), "{message}");
        let message = config_error("graders:\n  - type: program\n");
        assert!(message.contains("`config` must be a mapping"), "{message}");
        let message = config_error("graders:\n  - config: {program: x}\n");
        assert!(message.contains("no `type`"), "{message}");
        assert_eq!(config_error("graders: []\n"), "the `graders:` list is empty");
        assert_eq!(config_error("stimuli: []\n"), "no top-level `graders:` list");
        assert_eq!(config_error("- type: program\n"), "expected a mapping with a `graders:` list, not a list");
        assert!(config_error("graders: [\n").starts_with("not valid YAML"));
        assert!(config_error("{\"graders\": ").starts_with("not valid JSON"));
    }

    #[test]
    fn the_request_from_flags() {
        let dir = scratch("flags");
        fs::write(dir.join("check.py"), "print('{\"passed\": true}')\n").unwrap();
        let ws = dir.to_str().unwrap();
        let args = grade_args(&[
            "--workspace",
            ws,
            "--program",
            "python3",
            "--arg",
            "check.py",
            "--timeout",
            "500ms",
            "--env",
            "A=1",
            "--sub-path",
            "src",
        ]);
        let (request, fds) = build_request(&args, |s| panic!("{s:?}")).unwrap();
        assert_eq!(request.workspace, Workspace { archive: None, fd: Some(0) });
        assert_eq!(request.input, json!({}));
        assert_eq!(request.policy, "evaluator");
        assert_eq!(
            request.graders,
            [config(
                json!({"program": "python3", "args": ["check.py"], "timeout": 0.5, "env": {"A": "1"}, "sub_path": "src"})
            )]
        );
        let sent = serde_json::to_value(&request).unwrap();
        assert_eq!(sent["workspace"], json!({"fd": 0}));
        assert_eq!(sent["graders"][0].get("name"), None);
        // Descriptor 0 is the archive.
        let mut archive = tar::Archive::new(fs::File::from(fds.into_iter().next().unwrap()));
        let names: Vec<String> =
            archive.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect();
        assert_eq!(names, ["check.py"]);
    }

    #[test]
    fn the_request_from_files() {
        let dir = scratch("files");
        fs::create_dir(dir.join("ws")).unwrap();
        fs::write(dir.join("ws/a.txt"), "a").unwrap();
        nix::unistd::mkfifo(&dir.join("ws/pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        fs::write(dir.join("graders.yaml"), REFERENCE_YAML).unwrap();
        fs::write(dir.join("input.json"), r#"{"trajectory": {"events": []}, "stimulus": {"prompt": "hi"}}"#).unwrap();
        let path = |name: &str| dir.join(name).display().to_string();
        let args = grade_args(&[
            "--workspace",
            &path("ws"),
            "--config",
            &path("graders.yaml"),
            "--input",
            &path("input.json"),
            "--policy",
            "strict",
        ]);
        let mut skipped = Vec::new();
        let (request, fds) = build_request(&args, |s| skipped.push(s.path)).unwrap();
        assert_eq!(skipped, [PathBuf::from("pipe")]);
        assert_eq!(request.graders.len(), 5);
        assert_eq!(request.input, json!({"trajectory": {"events": []}, "stimulus": {"prompt": "hi"}}));
        assert_eq!(request.policy, "strict");
        let mut bytes = Vec::new();
        fs::File::from(fds.into_iter().next().unwrap()).read_to_end(&mut bytes).unwrap();
        assert_eq!(&bytes[..5], b"a.txt");
    }

    fn request_error(args: &[&str]) -> String {
        format!("{:#}", build_request(&grade_args(args), |_| {}).unwrap_err())
    }

    #[test]
    fn unusable_files_name_the_flag() {
        let dir = scratch("errors");
        fs::write(dir.join("list.json"), "[1, 2]").unwrap();
        fs::write(dir.join("bad.json"), "{trajectory").unwrap();
        fs::write(dir.join("g.yaml"), "graders:\n  - type: llm\n    config: {}\n").unwrap();
        let ws = dir.to_str().unwrap();
        let input = |name: &str| dir.join(name).display().to_string();
        let message = request_error(&["--workspace", ws, "--program", "x", "--input", &input("list.json")]);
        assert!(
            message.ends_with("list.json: a GraderInput is a JSON object (trajectory, stimulus, ...), not a list"),
            "{message}"
        );
        let message = request_error(&["--workspace", ws, "--program", "x", "--input", &input("bad.json")]);
        assert!(message.starts_with("--input ") && message.contains("bad.json is not valid JSON: "), "{message}");
        let message = request_error(&["--workspace", ws, "--program", "x", "--input", "/nonexistent/in.json"]);
        assert!(message.starts_with("cannot read --input /nonexistent/in.json: "), "{message}");
        let message = request_error(&["--workspace", ws, "--config", &input("g.yaml")]);
        assert!(
            message.starts_with("--config ")
                && message.ends_with(
                    "g.yaml: graders[0]: grader type `llm` is not supported: segi runs only `program` graders"
                ),
            "{message}"
        );
        let message = request_error(&["--workspace", "/nonexistent/ws", "--program", "x"]);
        assert_eq!(message, "cannot archive --workspace /nonexistent/ws: /nonexistent/ws: No such file or directory");
    }

    fn raw(json: &str) -> RawEvent {
        RawEvent { event: serde_json::from_str(json).unwrap(), json: RawValue::from_string(json.into()).unwrap() }
    }

    fn result_json(name: &str, passed: bool, score: f64, message: &str, evidence: Option<&str>) -> Value {
        let mut result = json!({
            "name": name, "passed": passed, "score": score, "kind": "code", "message": message,
            "exit_code": if passed { 0 } else { 1 }, "cpu_time": 0.01, "wall_time": 0.02, "memory": 1024,
        });
        if let Some(evidence) = evidence {
            result["evidence"] = json!(evidence);
        }
        result
    }

    fn event(index: usize, result: &Value) -> String {
        json!({"type": "grader", "index": index, "result": result}).to_string()
    }

    fn results() -> [Value; 3] {
        [
            result_json("tests", true, 1.0, "Grader exited successfully", None),
            result_json("style", false, 0.0, "Grader exited with exit code 1", Some("Grader exited with exit code 1")),
            result_json(
                "my-custom-check",
                true,
                0.85,
                "Grader exited successfully",
                Some("14 of 16 assertions passed"),
            ),
        ]
    }

    fn grade_result(results: &[Value]) -> GradeResult {
        serde_json::from_value(json!({"passed": results.iter().all(|r| r["passed"] == true), "results": results}))
            .unwrap()
    }

    /// What is on `out` after each event, and at the end, and on `err`.
    fn shown(json: bool, events: &[String], result: &GradeResult) -> (Vec<String>, String) {
        let mut screen = Screen::new(Vec::new(), Vec::new(), json, result.results.len());
        let mut steps = Vec::new();
        for event in events {
            screen.event(&raw(event)).unwrap();
            steps.push(String::from_utf8(screen.out.clone()).unwrap());
        }
        screen.end(result).unwrap();
        steps.push(String::from_utf8(screen.out).unwrap());
        (steps, String::from_utf8(screen.err).unwrap())
    }

    #[test]
    fn lines_in_request_order_as_soon_as_known() {
        let [tests, style, custom] = results();
        let events =
            [r#"{"type":"queued","ahead":0}"#.to_owned(), event(2, &custom), event(0, &tests), event(1, &style)];
        let (steps, err) = shown(false, &events, &grade_result(&[tests, style, custom]));
        let first = "✔ tests  score=1.00  Grader exited successfully\n";
        let all = "✔ tests  score=1.00  Grader exited successfully\n\
                   ✘ style  score=0.00  Grader exited with exit code 1\n\
                   ✔ my-custom-check  score=0.85  Grader exited successfully\n  evidence: 14 of 16 assertions passed\n";
        assert_eq!(steps, ["", "", first, all, all]);
        assert_eq!(
            err,
            "segi: queued: every run slot is busy, 0 other run(s) waiting ahead\nsegi: 2 of 3 graders passed\n"
        );
    }

    #[test]
    fn json_lines_are_the_results_in_request_order() {
        let [tests, style, custom] = results();
        // Spacing and key order as segid wrote them.
        let custom_raw = r#"{"passed": true, "name": "my-custom-check", "score": 0.85, "evidence": "14 of 16 assertions passed", "message": "Grader exited successfully", "exit_code": 0, "cpu_time": 0.01, "wall_time": 0.02, "memory": 1024}"#;
        let custom_event = format!(r#"{{"type":"grader","index":2,"result":{custom_raw}}}"#);
        let events = [r#"{"type":"queued","ahead":3}"#.to_owned(), custom_event, event(0, &tests)];
        // Grader 1's event never came: its result is taken from the response.
        let (steps, err) = shown(true, &events, &grade_result(&[tests.clone(), style.clone(), custom]));
        assert_eq!(err, "");
        assert_eq!(steps[..3], ["".to_owned(), "".to_owned(), format!("{tests}\n")]);
        let out = steps.last().unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0], tests.to_string());
        assert_eq!(serde_json::from_str::<Value>(lines[1]).unwrap(), style);
        assert_eq!(lines[2], custom_raw);
    }

    #[test]
    fn an_index_out_of_range_is_a_warning() {
        let [tests, ..] = results();
        let (steps, err) = shown(false, &[event(5, &tests)], &grade_result(std::slice::from_ref(&tests)));
        assert_eq!(steps.last().unwrap(), "✔ tests  score=1.00  Grader exited successfully\n");
        assert!(err.starts_with("segi: warning: segid sent the result of grader 5, not in the request\n"), "{err}");
    }
}
