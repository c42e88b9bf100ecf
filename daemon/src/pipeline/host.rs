//! The strategy host: runs a problem's strategy (pipelines.md's Python DSL, with segi's runtime
//! `policies/strategy/segi_strategy.py`) in an `evaluator` sandbox, and carries out what it asks
//! over its descriptors 3 (requests) and 4 (responses): every compilation and invocation in a
//! sandbox of its own, under the limits of its kind, with files kept by the daemon
//! (reader-after-writer) and real pipes between processes. The protocol is documented in
//! `docs/problems.md`.
//!
//! The strategy can never loosen a limit: what it asks for is capped by the problem's limits
//! for the kind (`user`: the problem's; `system`, `testlib`: the judges').

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use segi_proto::judge::{PipelineResult, PipelineTest, VerdictUpdate};
use segi_proto::run::LimitKind;
use segi_proto::{Event, Limits, RunResult, Verdict as RunVerdict};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

use super::valuation::{self, FeedbackPolicy, Group, Kind, PointsPolicy, RunOutcome, RunStatus, TestOutcome, Verdict};
use crate::judging::engine::{self, CompileError, Engine, Program, KEPT_OUTPUT};
use crate::judging::languages::{Language, Languages};
use crate::judging::problem::{Pipeline, Problem, StrategySource};
use crate::judging::sphere::Submission;
use crate::judging::streams::bounded_text;
use crate::run::request::{Spec, SpecFile, StdoutMode, Wiring};
use crate::sandbox::messages::Area;

/// The most of a comment (compiler output, strategy traceback) kept.
const COMMENT: usize = 16 * 1024;
/// Longest request line from a strategy.
const MAX_REQUEST: usize = 64 << 20;

/// The files of segi's runtime, read from the policies directory.
#[derive(Debug)]
pub struct Runtime {
    pub segi_strategy: Vec<u8>,
    pub run: Vec<u8>,
    pub builtin: BTreeMap<String, Vec<u8>>,
}

impl Runtime {
    pub fn load(policies: &std::path::Path) -> Result<Runtime, String> {
        let dir = policies.join("strategy");
        let read = |p: std::path::PathBuf| std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()));
        let mut builtin = BTreeMap::new();
        for name in crate::judging::problem::BUILTIN_STRATEGIES {
            builtin.insert(name.to_string(), read(dir.join("builtin").join(format!("{name}.py")))?);
        }
        Ok(Runtime { segi_strategy: read(dir.join("segi_strategy.py"))?, run: read(dir.join("run.py"))?, builtin })
    }
}

/// A file the strategy named: its bytes, and how many invocations are still writing it.
#[derive(Default)]
struct FileSlot {
    bytes: Arc<Vec<u8>>,
    writers: usize,
}

#[derive(Default)]
struct PipeSlot {
    read: Option<OwnedFd>,
    write: Option<OwnedFd>,
    made: bool,
}

struct Exe {
    program: Program,
    kind: Kind,
}

#[derive(Default)]
struct TestState {
    cancel: CancellationToken,
    verdicts: Vec<Verdict>,
    comment: Option<String>,
    failed: bool,
    rated: Option<(Verdict, Option<String>)>,
    time: f64,
    memory: u64,
}

#[derive(Default)]
struct State {
    files: HashMap<String, FileSlot>,
    pipes: HashMap<String, PipeSlot>,
    executables: HashMap<String, Arc<Exe>>,
    tests: BTreeMap<u32, TestState>,
    autorate: bool,
    submission_rating: Option<(Verdict, Option<String>)>,
    compilation_error: Option<String>,
    next_exe: u32,
}

/// One strategy run.
struct Host {
    engine: Engine,
    problem: Arc<Problem>,
    pipeline: Pipeline,
    languages: Arc<Languages>,
    submission: Submission,
    state: Mutex<State>,
    files_changed: Notify,
    events: mpsc::Sender<Event>,
}

/// Judges `submission` on a pipeline problem.
pub async fn judge(
    engine: Engine,
    problem: Arc<Problem>,
    languages: Arc<Languages>,
    runtime: &Runtime,
    submission: Submission,
    events: mpsc::Sender<Event>,
) -> PipelineResult {
    let pipeline = problem.pipeline.clone().expect("a pipeline problem");
    let (strategy_name, strategy) = match &pipeline.strategy {
        StrategySource::Builtin(name) => (name.clone(), runtime.builtin.get(name).cloned().unwrap_or_default()),
        StrategySource::Custom(bytes) => ("custom".to_string(), bytes.to_vec()),
    };
    let mut state = State { autorate: true, ..State::default() };
    for n in 0..problem.tests.len() as u32 {
        state.tests.insert(n + 1, TestState::default());
    }
    let host = Arc::new(Host {
        engine,
        problem,
        pipeline,
        languages,
        submission,
        state: Mutex::new(state),
        files_changed: Notify::new(),
        events,
    });
    let strategy_error = host.clone().run_strategy(runtime, strategy).await;
    host.finish(strategy_name, strategy_error)
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

impl Host {
    /// Runs the strategy and serves its requests until it ends; its failure, if any.
    async fn run_strategy(self: Arc<Self>, runtime: &Runtime, strategy: Vec<u8>) -> Option<String> {
        let pipes = (engine::pipe(), engine::pipe());
        let ((requests_read, requests_write), (responses_read, responses_write)) = match pipes {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Some("cannot create the strategy's pipes".into()),
        };
        let files = vec![
            SpecFile {
                area: Area::Problem,
                path: "segi_strategy.py".into(),
                bytes: runtime.segi_strategy.clone(),
                executable: false,
            },
            SpecFile { area: Area::Problem, path: "run.py".into(), bytes: runtime.run.clone(), executable: false },
            SpecFile { area: Area::Problem, path: "strategy.py".into(), bytes: strategy, executable: false },
        ];
        // All the tests' time, and more, within the evaluator policy's maximum.
        let tests = self.problem.tests.len() as f64;
        let wall =
            (60.0 + tests * (self.problem.wall_time_limit + 3.0 * self.problem.judge_time_limit + 2.0)).min(1200.0);
        let spec = Spec {
            command: vec!["python3".into(), "-I".into(), "run.py".into()],
            limits: Limits {
                cpu_time: Some(self.problem.strategy_time_limit),
                wall_time: Some(wall),
                ..Limits::default()
            },
            env: BTreeMap::new(),
            stdin: None,
            files,
            inputs: vec![Area::Problem],
            cwd: "/problem".into(),
            collect: Vec::new(),
            stdout: StdoutMode::Raw,
            wiring: Wiring { stdin: None, stdout: None, extra: vec![(3, requests_write), (4, responses_read)] },
            workspace: None,
        };
        // The strategy mostly waits for what it asked: it takes no run slot, so that it can
        // never hold the one its own invocations need.
        let Some(slot) = self.engine.unlimited_slot().await else { return Some("cancelled".into()) };
        let strategy = {
            let engine = self.engine.clone();
            tokio::spawn(async move { engine.run_spec(spec, "evaluator", slot, KEPT_OUTPUT).await })
        };
        let (responses, mut outgoing) = mpsc::channel::<String>(64);
        let writer = tokio::spawn(async move {
            let Ok(mut pipe) = tokio::net::unix::pipe::Sender::from_owned_fd(responses_write) else { return };
            while let Some(mut line) = outgoing.recv().await {
                line.push('\n');
                if pipe.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let mut handlers = tokio::task::JoinSet::new();
        if let Ok(pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(requests_read) {
            let mut lines = tokio::io::BufReader::new(pipe);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.len() > MAX_REQUEST => break,
                    Ok(_) => {}
                }
                let request: Value = match serde_json::from_slice(&line) {
                    Ok(v) => v,
                    Err(e) => {
                        let _ =
                            responses.send(json!({"id": null, "error": format!("not JSON: {e}")}).to_string()).await;
                        continue;
                    }
                };
                // Writes and ratings apply here, in request order (a File written in several
                // calls keeps their order); so does an invocation's registration as a writer.
                if matches!(request["op"].as_str(), Some("write" | "rate" | "disable_autorate" | "log")) {
                    // Quick, and their order matters (the last rating is the one that stands).
                    let mut answer = self.handle(&request, Vec::new()).await.unwrap_or_else(|e| json!({"error": e}));
                    answer["id"] = request.get("id").cloned().unwrap_or(Value::Null);
                    let _ = responses.send(answer.to_string()).await;
                    continue;
                }
                let prepared = self.prepare(&request);
                let (host, responses) = (self.clone(), responses.clone());
                handlers.spawn(async move {
                    let id = request.get("id").cloned().unwrap_or(Value::Null);
                    let mut answer = match prepared {
                        Ok(prepared) => host.handle(&request, prepared).await.unwrap_or_else(|e| json!({"error": e})),
                        Err(e) => json!({"error": e}),
                    };
                    answer["id"] = id;
                    let _ = responses.send(answer.to_string()).await;
                });
            }
        }
        let ran = strategy.await;
        // What the strategy started may still run: its verdicts count.
        while handlers.join_next().await.is_some() {}
        drop(responses);
        let _ = writer.await;
        match ran {
            Ok(Ok(ran)) if ran.result.verdict == RunVerdict::OK => None,
            Ok(Ok(ran)) => {
                let why = ran.result.message.clone().unwrap_or_else(|| format!("{}", ran.result.verdict));
                Some(format!("the strategy failed ({why}): {}", bounded_text(&ran.stderr, COMMENT)))
            }
            Ok(Err(e)) => Some(format!("the strategy could not run: {e}")),
            Err(e) => Some(format!("the strategy's task failed: {e}")),
        }
    }

    /// What must happen in request order before a request's task runs: an invocation's
    /// written files are registered, so that later readers wait for it.
    fn prepare(&self, request: &Value) -> Result<Vec<String>, String> {
        if request["op"] != "invoke" {
            return Ok(Vec::new());
        }
        let mut written = Vec::new();
        let mut note = |v: &Value, writes: bool| {
            if let Some(file) = v.get("file").and_then(Value::as_str) {
                if writes || v["rw"] == true {
                    written.push(file.to_string());
                }
            }
        };
        for stream in ["stdout", "stderr"] {
            note(&request[stream], true);
        }
        for arg in request["argv"].as_array().into_iter().flatten() {
            note(arg, false);
        }
        for file in request["files"].as_object().into_iter().flat_map(|o| o.values()) {
            note(file, false);
        }
        let mut state = lock(&self.state);
        for file in &written {
            state.files.entry(file.clone()).or_default().writers += 1;
        }
        Ok(written)
    }

    async fn handle(&self, request: &Value, written: Vec<String>) -> Result<Value, String> {
        match request["op"].as_str().unwrap_or_default() {
            "hello" => Ok(self.hello()),
            "write" => self.write(request),
            "read" => {
                let file = request["file"].as_str().ok_or("read needs a file")?;
                let bytes = self.read_file(file, &[]).await?;
                Ok(json!({"data": base64::engine::general_purpose::STANDARD.encode(bytes.as_slice())}))
            }
            "compile" => self.compile(request).await,
            "invoke" => {
                let answer = self.invoke(request, &written).await;
                self.release(&written, None);
                answer
            }
            "rate" => self.rate(request).await,
            "disable_autorate" => {
                lock(&self.state).autorate = false;
                Ok(json!({}))
            }
            "log" => {
                let message = request["message"].as_str().unwrap_or_default();
                tracing::info!(message = &message[..message.len().min(1000)], "strategy");
                Ok(json!({}))
            }
            other => Err(format!("unknown op {other:?}")),
        }
    }

    /// Appends to a File (creating it).
    fn write(&self, request: &Value) -> Result<Value, String> {
        let data = base64::engine::general_purpose::STANDARD
            .decode(request["data"].as_str().unwrap_or_default())
            .map_err(|e| format!("data is not base64: {e}"))?;
        let file = request["file"].as_str().ok_or("write needs a file")?.to_string();
        let mut state = lock(&self.state);
        let slot = state.files.entry(file).or_default();
        Arc::make_mut(&mut slot.bytes).extend_from_slice(&data);
        Ok(json!({}))
    }

    fn hello(&self) -> Value {
        let p = &self.pipeline;
        let tests: Vec<Value> = (0..self.problem.tests.len())
            .map(|n| {
                let no = n as u32 + 1;
                let mut files = json!({"input": format!("test/{no}/input"), "answer": format!("test/{no}/answer")});
                for attr in p.test_files[n].keys() {
                    files[attr] = json!(format!("test/{no}/{attr}"));
                }
                json!({"no": no, "group": p.test_groups[n], "points": p.points[n], "files": files})
            })
            .collect();
        let groups: serde_json::Map<String, Value> =
            p.groups.iter().map(|g| (g.name.clone(), serde_json::to_value(g).unwrap_or(Value::Null))).collect();
        let executables: serde_json::Map<String, Value> =
            p.executables.iter().map(|(name, e)| (name.clone(), json!({"kind": e.kind}))).collect();
        let kind_limits =
            |time: f64, memory: u64, real_time: f64| json!({"time": time, "memory": memory, "real_time": real_time});
        let problem = &self.problem;
        let (language, _) =
            self.languages.choose(Some(&self.submission.language), &self.submission.filename).unwrap_or(("", &DUMMY));
        json!({
            "tests": tests,
            "groups": groups,
            "executables": executables,
            "submission": {"type": language, "filename": self.submission.filename, "id": "", "timestamp": 0},
            "problem_files": p.files.keys().filter(|f| !f.starts_with("tests/")).collect::<Vec<_>>(),
            "limits": {
                "user": kind_limits(problem.time_limit, problem.memory_limit, problem.wall_time_limit),
                "system": kind_limits(problem.judge_time_limit, problem.judge_memory_limit, 3.0 * problem.judge_time_limit + 1.0),
                "testlib": kind_limits(problem.judge_time_limit, problem.judge_memory_limit, 3.0 * problem.judge_time_limit + 1.0),
            },
        })
    }

    /// A file's bytes once no invocation writes it (other than `own`, the caller's writes).
    async fn read_file(&self, name: &str, own: &[String]) -> Result<Arc<Vec<u8>>, String> {
        loop {
            let notified = self.files_changed.notified();
            {
                let state = lock(&self.state);
                if let Some(bytes) = self.fixed_file(name) {
                    return Ok(bytes);
                }
                let slot = state.files.get(name).ok_or_else(|| format!("no file {name:?}"))?;
                let mine = own.iter().filter(|f| *f == name).count();
                if slot.writers <= mine {
                    return Ok(slot.bytes.clone());
                }
            }
            notified.await;
        }
    }

    /// The files that exist before the strategy: the submission, the tests' and the problem's.
    fn fixed_file(&self, name: &str) -> Option<Arc<Vec<u8>>> {
        if name == "submission" {
            return Some(self.submission.source.clone());
        }
        if let Some(path) = name.strip_prefix("problem/") {
            return self.pipeline.files.get(path).cloned();
        }
        let mut parts = name.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("test"), Some(no), Some(which)) => {
                let test = self.problem.tests.get(no.parse::<usize>().ok()?.checked_sub(1)?)?;
                match which {
                    "input" => Some(test.input.clone()),
                    "answer" => Some(test.output.clone()),
                    attr => self.pipeline.test_files.get(no.parse::<usize>().ok()? - 1)?.get(attr).map(|f| f.1.clone()),
                }
            }
            _ => None,
        }
    }

    /// An invocation (or a write) is done with `written`: their new bytes, and readers go on.
    fn release(&self, written: &[String], bytes: Option<&HashMap<String, Vec<u8>>>) {
        let mut state = lock(&self.state);
        for file in written {
            let slot = state.files.entry(file.clone()).or_default();
            if let Some(new) = bytes.and_then(|b| b.get(file)) {
                slot.bytes = Arc::new(new.clone());
            }
            slot.writers = slot.writers.saturating_sub(1);
        }
        drop(state);
        self.files_changed.notify_waiters();
    }

    async fn compile(&self, request: &Value) -> Result<Value, String> {
        let sources: Vec<String> =
            request["sources"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)).collect();
        let first = sources.first().ok_or("compile needs at least one source")?;
        let filename = |handle: &str| -> String {
            let parts: Vec<&str> = handle.splitn(3, '/').collect();
            match parts.as_slice() {
                ["submission"] => self.submission.filename.clone(),
                // A test's own file keeps its name (`code.cpp`), for its language.
                ["test", no, attr] => no
                    .parse::<usize>()
                    .ok()
                    .and_then(|no| self.pipeline.test_files.get(no.checked_sub(1)?)?.get(*attr))
                    .map(|f| f.0.clone())
                    .unwrap_or_else(|| attr.to_string()),
                _ => handle.rsplit('/').next().unwrap_or(handle).to_string(),
            }
        };
        let language_name = (first == "submission").then(|| self.submission.language.clone());
        let (_, language) = self.languages.choose(language_name.as_deref(), &filename(first))?;
        let mut files = Vec::new();
        for (i, handle) in sources.iter().enumerate() {
            let bytes = self.read_file(handle, &[]).await?;
            let name = if i == 0 { language.source.clone() } else { filename(handle) };
            files.push((name, bytes, false));
        }
        let kind = parse_kind(request["kind"].as_str()).unwrap_or(Kind::User);
        let test = request["test"].as_u64().map(|t| t as u32);
        match self.compile_files(language, files).await {
            Ok(program) => {
                let mut state = lock(&self.state);
                state.next_exe += 1;
                let name = format!("e{}", state.next_exe);
                state.executables.insert(name.clone(), Arc::new(Exe { program, kind }));
                Ok(json!({"executable": name}))
            }
            Err(comment) => {
                {
                    let mut state = lock(&self.state);
                    match test.and_then(|t| state.tests.get_mut(&t)) {
                        Some(t) => {
                            t.verdicts.push(Verdict::CE);
                            t.comment = Some(comment.clone());
                            t.failed = true;
                            t.cancel.cancel();
                        }
                        None => state.compilation_error = Some(comment.clone()),
                    }
                }
                self.update(test, Verdict::CE, Some(comment.clone())).await;
                Ok(json!({"failed": true, "verdict": "CE", "comment": comment}))
            }
        }
    }

    /// Compiles `files` (the first as the language's source, the others beside it), the
    /// compiler's complaint as the error.
    async fn compile_files(
        &self,
        language: &Language,
        mut files: Vec<(String, Arc<Vec<u8>>, bool)>,
    ) -> Result<Program, String> {
        let (_, source, _) = files.remove(0);
        let others = files.into_iter().map(|(name, bytes, _)| (name, bytes)).collect();
        self.engine.compile_with(language, &source, others).await.map_err(|e| match e {
            CompileError::Rejected { output, .. } => output,
            CompileError::Failed(why) => why,
        })
    }

    /// A problem executable (`checker`, ...) compiled on first use, or one `compile` returned.
    async fn executable(&self, name: &str) -> Result<Arc<Exe>, String> {
        if let Some(exe) = lock(&self.state).executables.get(name) {
            return Ok(exe.clone());
        }
        let declared = self.pipeline.executables.get(name).ok_or_else(|| format!("no executable {name:?}"))?;
        let (_, language) = self.languages.choose(declared.source.language.as_deref(), &declared.source.path)?;
        let files = vec![(language.source.clone(), declared.source.source.clone(), false)];
        let program = self
            .compile_files(language, files)
            .await
            .map_err(|e| format!("the problem's {name} does not compile: {e}"))?;
        let exe = Arc::new(Exe { program, kind: parse_kind(Some(&declared.kind)).unwrap_or(Kind::Testlib) });
        lock(&self.state).executables.entry(name.to_string()).or_insert(exe.clone());
        Ok(exe)
    }

    async fn invoke(&self, request: &Value, written: &[String]) -> Result<Value, String> {
        let test = request["test"].as_u64().map(|t| t as u32);
        let cancel = match test {
            Some(no) => {
                let state = lock(&self.state);
                let t = state.tests.get(&no).ok_or_else(|| format!("no test {no}"))?;
                if t.failed {
                    return Ok(json!({"aborted": true}));
                }
                t.cancel.clone()
            }
            None => self.engine.cancel.child_token(),
        };
        let exe = match self.executable(request["exe"].as_str().unwrap_or_default()).await {
            Ok(exe) => exe,
            Err(e) => return self.fail_test(test, Verdict::CF, e),
        };
        let kind = parse_kind(request["kind"].as_str()).unwrap_or(exe.kind);
        // The files it reads, once their writers are done; the pipes' ends.
        let mut files: Vec<SpecFile> = exe
            .program
            .files
            .iter()
            .map(|(p, b, x)| SpecFile { area: Area::Box, path: p.clone(), bytes: b.to_vec(), executable: *x })
            .collect();
        let mut collect = Vec::new();
        let mut rw_paths: HashMap<String, String> = HashMap::new();
        // What each read-write copy held when it went in.
        let mut placed: HashMap<String, Vec<u8>> = HashMap::new();
        let mut argv = exe.program.command.clone();
        let mut wiring = Wiring::default();
        let mut uses_pipe = false;
        for (i, arg) in request["argv"].as_array().into_iter().flatten().enumerate() {
            if let Some(s) = arg.get("str").and_then(Value::as_str) {
                argv.push(s.to_string());
            } else if let Some(file) = arg.get("file").and_then(Value::as_str) {
                let path = format!(".segi/arg{i}");
                let bytes = self.read_file(file, written).await?.to_vec();
                if arg["rw"] == true {
                    collect.push(path.clone());
                    rw_paths.insert(path.clone(), file.to_string());
                    placed.insert(path.clone(), bytes.clone());
                }
                files.push(SpecFile { area: Area::Box, path: path.clone(), bytes, executable: false });
                argv.push(format!("/box/{path}"));
            } else if let Some(pipe) = arg.get("pipe").and_then(Value::as_str) {
                // Passed as a path: /dev/fd/N of a wired descriptor.
                let write = arg["write"] == true;
                let fd = 10 + i as i32;
                if fd > crate::run::request::MAX_EXTRA_FD {
                    return Err("too many pipe arguments".into());
                }
                wiring.extra.push((fd, self.pipe_end(pipe, write)?));
                argv.push(format!("/dev/fd/{fd}"));
                uses_pipe = true;
            } else {
                return Err(format!("argument {i} must be a string, a file or a pipe"));
            }
        }
        for (path, file) in request["files"].as_object().into_iter().flatten() {
            crate::run::request::check_box_path(path)?;
            let handle = file.get("file").and_then(Value::as_str).ok_or("files take File objects")?;
            let bytes = self.read_file(handle, written).await?.to_vec();
            if file["rw"] == true {
                collect.push(path.clone());
                rw_paths.insert(path.clone(), handle.to_string());
                placed.insert(path.clone(), bytes.clone());
            }
            files.push(SpecFile { area: Area::Box, path: path.clone(), bytes, executable: false });
        }
        let mut stdin_bytes = None;
        match &request["stdin"] {
            Value::Null => {}
            v => match (v.get("file").and_then(Value::as_str), v.get("pipe").and_then(Value::as_str)) {
                (Some(file), _) => stdin_bytes = Some(self.read_file(file, written).await?.to_vec()),
                (_, Some(pipe)) => {
                    wiring.stdin = Some(self.pipe_end(pipe, false)?);
                    uses_pipe = true;
                }
                _ => return Err("stdin takes a File or a Pipe".into()),
            },
        }
        let mut stdout_file = None;
        match &request["stdout"] {
            Value::Null => wiring.stdout = Some(engine::output()?),
            v => match (v.get("file").and_then(Value::as_str), v.get("pipe").and_then(Value::as_str)) {
                (Some(file), _) => stdout_file = Some(file.to_string()),
                (_, Some(pipe)) => {
                    wiring.stdout = Some(self.pipe_end(pipe, true)?);
                    uses_pipe = true;
                }
                _ => return Err("stdout takes a File or a Pipe".into()),
            },
        }
        let stderr_file = request["stderr"].get("file").and_then(Value::as_str).map(String::from);
        if request["stderr"].get("pipe").is_some() {
            return Err("stderr to a Pipe is not supported; use a File".into());
        }
        let limits = self.limits(kind, &request["limits"]);
        let spec = Spec {
            command: argv,
            limits,
            env: exe.program.env.clone(),
            stdin: stdin_bytes,
            files,
            inputs: Vec::new(),
            cwd: "/box".into(),
            collect,
            stdout: StdoutMode::Raw,
            wiring,
            workspace: None,
        };
        // Invocations joined by pipes run at once without waiting for slots: a pair must never
        // wait for each other's slot.
        let slot = match uses_pipe {
            true => self.engine.unlimited_slot().await,
            false => self.engine.slots(1).await,
        };
        let Some(slot) = slot else { return Ok(json!({"aborted": true})) };
        let engine = Engine { daemon: self.engine.daemon.clone(), cancel: cancel.clone() };
        let keep = self.problem.output_limit as usize;
        let ran = engine.run_spec(spec, "default", slot, keep).await?;
        // Outputs back into their files.
        let mut new_bytes: HashMap<String, Vec<u8>> = HashMap::new();
        if let Some(file) = &stdout_file {
            new_bytes.insert(file.clone(), ran.stdout.clone());
        }
        if let Some(file) = &stderr_file {
            new_bytes.insert(file.clone(), ran.stderr.clone());
        }
        for c in &ran.result.collected {
            if let (Some(handle), Some(Ok(bytes))) = (rw_paths.get(&c.path), c.content.as_ref().map(|p| p.to_bytes())) {
                // A copy that came back as it went in changed nothing: it must not hide what
                // the program wrote to the same File through stdout (2.6's output.txt).
                let unchanged = placed.get(&c.path).is_some_and(|before| *before == bytes);
                if !(unchanged && new_bytes.contains_key(handle)) {
                    new_bytes.insert(handle.clone(), bytes);
                }
            }
        }
        self.release(written, Some(&new_bytes));
        if cancel.is_cancelled() && ran.result.verdict == RunVerdict::IE {
            return Ok(json!({"aborted": true}));
        }
        let outcome = RunOutcome { status: run_status(&ran.result), stderr: ran.stderr.clone() };
        let (verdict, comment) = valuation::invocation_verdict(kind, &outcome);
        let failed = !matches!(verdict, Verdict::OK | Verdict::PT(_));
        if let (true, true, Some(no)) = (failed, uses_pipe, test) {
            self.let_the_cause_report_first(no, kind, verdict).await;
        }
        let metrics =
            json!({"time": ran.result.cpu_time, "memory": ran.result.memory, "real_time": ran.result.wall_time});
        if test.is_none() && kind == Kind::Testlib {
            // A testlib program outside any test (2.11's valuer) rates the submission.
            lock(&self.state).submission_rating = Some((verdict, comment.clone()));
            self.update(None, verdict, comment.clone()).await;
        }
        if let Some(no) = test {
            let update = {
                let mut state = lock(&self.state);
                let t = state.tests.entry(no).or_default();
                if kind == Kind::User {
                    t.time = t.time.max(ran.result.cpu_time);
                    t.memory = t.memory.max(ran.result.memory);
                }
                if !t.failed {
                    t.verdicts.push(verdict);
                    if failed {
                        t.failed = true;
                        t.comment = comment.clone();
                        t.cancel.cancel();
                    }
                }
                failed.then_some(())
            };
            if update.is_some() {
                self.update(Some(no), verdict, comment.clone()).await;
            }
        }
        Ok(json!({
            "exit_code": ran.result.exit_code, "signal": ran.result.signal, "verdict": verdict.name(),
            "points": verdict.points(), "comment": comment, "metrics": metrics, "failed": failed, "aborted": false,
        }))
    }

    /// Programs joined by pipes fail together, and which end is seen first is a race: a
    /// program whose interactor stopped dies of a broken pipe (RE); an interactor whose
    /// program hit a limit sees end of file (WA). The cause must decide, so a failure that may
    /// be a consequence waits a moment for the cause to be recorded: a user program's RE for
    /// the interactor's verdict (2 s), an interactor's verdict for the user's limit (1 s).
    async fn let_the_cause_report_first(&self, test: u32, kind: Kind, verdict: Verdict) {
        let wait = match (kind, verdict) {
            (Kind::User, Verdict::RE) => std::time::Duration::from_secs(2),
            (Kind::User, _) => return,
            _ => std::time::Duration::from_secs(1),
        };
        let deadline = tokio::time::Instant::now() + wait;
        while tokio::time::Instant::now() < deadline {
            if lock(&self.state).tests.get(&test).is_some_and(|t| t.failed) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// The limits of an invocation of `kind`: what the strategy asked, never above the problem's.
    fn limits(&self, kind: Kind, asked: &Value) -> Limits {
        let p = &self.problem;
        let (time, memory, real_time) = match kind {
            Kind::User => (p.time_limit, p.memory_limit, p.wall_time_limit),
            _ => (p.judge_time_limit, p.judge_memory_limit, 3.0 * p.judge_time_limit + 1.0),
        };
        let tighter =
            |key: &str, max: f64| asked[key].as_f64().filter(|x| x.is_finite() && *x > 0.0).map_or(max, |x| x.min(max));
        Limits {
            cpu_time: Some(tighter("time", time)),
            wall_time: Some(tighter("real_time", real_time)),
            memory: Some(tighter("memory", memory as f64) as u64),
            processes: None,
            output: Some(p.output_limit),
            file_size: None,
        }
    }

    /// Takes one end of pipe `name` (made on first use); each end goes to one invocation.
    fn pipe_end(&self, name: &str, write: bool) -> Result<OwnedFd, String> {
        let mut state = lock(&self.state);
        let slot = state.pipes.entry(name.to_string()).or_default();
        if !slot.made {
            let (r, w) = engine::pipe()?;
            (slot.read, slot.write, slot.made) = (Some(r), Some(w), true);
        }
        let end = if write { slot.write.take() } else { slot.read.take() };
        end.ok_or_else(|| {
            format!(
                "the {} end of pipe {name} is already given to another invocation",
                if write { "write" } else { "read" }
            )
        })
    }

    fn fail_test(&self, test: Option<u32>, verdict: Verdict, why: String) -> Result<Value, String> {
        let mut state = lock(&self.state);
        if let Some(t) = test.and_then(|no| state.tests.get_mut(&no)) {
            if !t.failed {
                t.verdicts.push(verdict);
                t.comment = Some(why.clone());
                t.failed = true;
                t.cancel.cancel();
            }
        }
        Ok(json!({"failed": true, "verdict": verdict.name(), "comment": why, "aborted": false}))
    }

    async fn rate(&self, request: &Value) -> Result<Value, String> {
        let name = request["verdict"].as_str().ok_or("rate needs a verdict")?;
        let verdict = Verdict::from_parts(name, request["points"].as_f64())
            .ok_or_else(|| format!("unknown verdict {name:?} (PT needs points)"))?;
        let comment = request["comment"].as_str().map(String::from);
        let test = request["test"].as_u64().map(|t| t as u32);
        {
            let mut state = lock(&self.state);
            match test {
                Some(no) => {
                    state.tests.get_mut(&no).ok_or_else(|| format!("no test {no}"))?.rated =
                        Some((verdict, comment.clone()))
                }
                None => state.submission_rating = Some((verdict, comment.clone())),
            }
        }
        self.update(test, verdict, comment).await;
        Ok(json!({}))
    }

    async fn update(&self, test: Option<u32>, verdict: Verdict, comment: Option<String>) {
        let event = VerdictUpdate { test, verdict: verdict.name().into(), points: verdict.points(), comment };
        let _ = self.events.send(Event::Verdict(event)).await;
    }

    /// The verdicts once the strategy is over.
    fn finish(&self, strategy: String, strategy_error: Option<String>) -> PipelineResult {
        let state = lock(&self.state);
        let groups: Vec<Group> = self
            .pipeline
            .groups
            .iter()
            .map(|g| Group {
                name: g.name.clone(),
                points_policy: if g.points_policy == "each-test" {
                    PointsPolicy::EachTest
                } else {
                    PointsPolicy::CompleteGroup
                },
                feedback_policy: match g.feedback_policy.as_str() {
                    "none" => FeedbackPolicy::None,
                    "points" => FeedbackPolicy::Points,
                    "icpc" => FeedbackPolicy::Icpc,
                    _ => FeedbackPolicy::Complete,
                },
                dependencies: g.dependencies.clone(),
            })
            .collect();
        let outcomes: Vec<(TestOutcome, Option<String>, f64, u64)> = state
            .tests
            .iter()
            .map(|(&no, t)| {
                let (verdict, comment) = match &t.rated {
                    Some((v, c)) => (*v, c.clone()),
                    // Nothing ran on this test: the strategy judged nothing, never an OK.
                    None if t.verdicts.is_empty() => {
                        (Verdict::CF, Some("the strategy ran nothing on this test and did not rate it".into()))
                    }
                    None => (valuation::combine(&t.verdicts), t.comment.clone()),
                };
                let n = no as usize - 1;
                let outcome = TestOutcome {
                    no,
                    group: self.pipeline.test_groups.get(n).cloned().flatten(),
                    max_points: self.pipeline.points.get(n).copied().unwrap_or(1.0),
                    verdict,
                };
                (outcome, comment, t.time, t.memory)
            })
            .collect();
        let mut tests: Vec<TestOutcome> = outcomes.iter().map(|o| o.0.clone()).collect();
        let max_points: f64 = tests.iter().map(|t| t.max_points).sum();
        let (verdict, points, max, group_results, comment) = if let Some(ce) = &state.compilation_error {
            ("CE".to_string(), 0.0, max_points, Vec::new(), Some(ce.clone()))
        } else if let Some(why) = strategy_error {
            ("CF".to_string(), 0.0, max_points, Vec::new(), Some(why))
        } else if let Some((v @ (Verdict::CE | Verdict::CF), c)) = &state.submission_rating {
            // A failure the strategy rated the submission with stands even under autorate
            // (2.12 rates CE without disabling it).
            (v.name().to_string(), 0.0, max_points, Vec::new(), c.clone())
        } else if !state.autorate {
            match &state.submission_rating {
                Some((v, c)) => {
                    let points = v.points().unwrap_or(if *v == Verdict::OK { max_points } else { 0.0 });
                    let name = if *v == Verdict::OK { "AC".to_string() } else { v.name().to_string() };
                    (name, points, max_points, Vec::new(), c.clone())
                }
                None => (
                    "CF".to_string(),
                    0.0,
                    max_points,
                    Vec::new(),
                    Some("the strategy disabled autorate but never rated the submission".into()),
                ),
            }
        } else {
            if let Err(e) = valuation::check_groups(&groups) {
                return self.check_failed(strategy, e, max_points);
            }
            valuation::apply_dependencies(&mut tests, &groups);
            let v = valuation::submission_verdict(&tests, &groups);
            let groups_json = v.groups.iter().map(|g| serde_json::to_value(g).unwrap_or(Value::Null)).collect();
            (v.verdict, v.points, v.max_points, groups_json, None)
        };
        // After CE or a failed strategy the tests were not judged: none is listed as passed.
        let judged = state.compilation_error.is_none() && verdict != "CF";
        let tests = outcomes
            .iter()
            .zip(&tests)
            .filter(|_| judged)
            .map(|((_, comment, time, memory), t)| PipelineTest {
                no: t.no,
                verdict: t.verdict.name().into(),
                points: t.verdict.points(),
                max_points: t.max_points,
                comment: comment.clone(),
                group: t.group.clone(),
                time: *time,
                memory: *memory,
            })
            .collect();
        PipelineResult {
            verdict,
            points,
            max_points: max,
            language: self.submission.language.clone(),
            strategy,
            tests,
            groups: group_results,
            comment: comment.map(|c| bounded_text(c.as_bytes(), COMMENT)),
        }
    }

    fn check_failed(&self, strategy: String, why: String, max_points: f64) -> PipelineResult {
        PipelineResult {
            verdict: "CF".into(),
            points: 0.0,
            max_points,
            language: self.submission.language.clone(),
            strategy,
            tests: Vec::new(),
            groups: Vec::new(),
            comment: Some(why),
        }
    }
}

/// A stand-in for an unknown language in `hello` (never compiled with).
static DUMMY: Language = Language {
    name: String::new(),
    extensions: Vec::new(),
    source: String::new(),
    compile: None,
    output: None,
    run: Vec::new(),
    env: BTreeMap::new(),
};

fn parse_kind(kind: Option<&str>) -> Option<Kind> {
    match kind? {
        "user" => Some(Kind::User),
        "system" => Some(Kind::System),
        "testlib" => Some(Kind::Testlib),
        _ => None,
    }
}

/// How a run ended, in the pipelines' terms.
fn run_status(r: &RunResult) -> RunStatus {
    match r.verdict {
        RunVerdict::OK => RunStatus::Exited(0),
        RunVerdict::RE => match (r.exit_code, r.signal) {
            (Some(code), _) => RunStatus::Exited(code),
            (None, Some(signal)) => RunStatus::Signaled(signal),
            _ => RunStatus::Internal(r.message.clone().unwrap_or_default()),
        },
        RunVerdict::TLE if r.limit == Some(LimitKind::WallTime) => RunStatus::RealTimeLimit,
        RunVerdict::TLE => RunStatus::TimeLimit,
        RunVerdict::MLE => RunStatus::MemoryLimit,
        RunVerdict::OLE => RunStatus::OutputLimit,
        RunVerdict::SV => RunStatus::Forbidden(r.message.clone().unwrap_or_default()),
        RunVerdict::IE => RunStatus::Internal(r.message.clone().unwrap_or_default()),
    }
}
