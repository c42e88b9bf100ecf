//! Program graders (program-grader.txt: Microsoft Vally's "program" grader; decisions 18 to
//! 20): an AI agent changed a workspace, and graders, programs of the caller's, decide whether
//! it did well.
//!
//! Every grader runs at once in its own sandbox (policy `evaluator`) on its own copy-on-write
//! view of the workspace at `/workspace` (`EVALUATE_WORKSPACE`), with the GraderInput as a
//! read-only `/grader/input.json` (`EVALUATE_GRADER_INPUT`), its working directory at
//! `sub_path` below the workspace root.
//!
//! - [`config`]: a grader's config checked (timeout, env, sub_path).
//! - [`workspace`]: what the workspace archive holds, from its headers.
//! - [`outcome`]: the GraderResult from how the grader ended and what it printed.

pub mod config;
pub mod outcome;
pub mod workspace;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::stream::{FuturesUnordered, StreamExt};
use segi_proto::grade::{GradeResult, GraderConfig, GraderEvent, GraderResult};
use segi_proto::{Event, Limits, RunResult, Verdict};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::judging::engine::Engine;
use crate::run::request::{Spec, SpecFile, StdoutMode, Wiring};
use crate::sandbox::messages::Area;
use config::Checked;

/// The most of a grader's stdout read (a GraderResult is small; more is not one).
const MAX_STDOUT: usize = 1 << 20;

/// A checked `grade` request.
pub struct Grading {
    pub policy: String,
    pub archive: Arc<Vec<u8>>,
    pub input: Value,
    pub graders: Vec<(GraderConfig, Checked)>,
}

/// Checks the configs against the workspace; the error is a configuration error for -32602.
pub fn check(policy: String, archive: Vec<u8>, input: Value, configs: Vec<GraderConfig>) -> Result<Grading, String> {
    if configs.is_empty() {
        return Err("graders must list at least one grader".into());
    }
    if !input.is_object() {
        return Err("input (the GraderInput) must be a JSON object".into());
    }
    let inventory = workspace::Inventory::read(&archive)?;
    let graders = configs
        .into_iter()
        .enumerate()
        .map(|(i, c)| config::check(i, &c, &inventory).map(|checked| (c, checked)))
        .collect::<Result<_, _>>()?;
    Ok(Grading { policy, archive: Arc::new(archive), input, graders })
}

/// Runs every grader at once; each result goes to `events` as it finishes.
pub async fn grade(engine: Engine, grading: Grading, events: mpsc::Sender<Event>) -> GradeResult {
    let grading = Arc::new(grading);
    let mut running: FuturesUnordered<_> = (0..grading.graders.len())
        .map(|index| {
            let (engine, grading) = (engine.clone(), grading.clone());
            async move { (index, run_grader(&engine, &grading, index).await) }
        })
        .collect();
    let mut results: Vec<Option<GraderResult>> = vec![None; grading.graders.len()];
    while let Some((index, result)) = running.next().await {
        let _ = events.send(Event::Grader(GraderEvent { index, result: result.clone() })).await;
        results[index] = Some(result);
    }
    let results: Vec<GraderResult> = results.into_iter().flatten().collect();
    GradeResult { passed: results.iter().all(|r| r.passed), results }
}

async fn run_grader(engine: &Engine, grading: &Grading, index: usize) -> GraderResult {
    let (config, checked) = &grading.graders[index];
    if !checked.sub_path_exists {
        // As the reference's spawn with a cwd that does not exist.
        return outcome::decide(&checked.name, &not_started(), b"", b"");
    }
    // The GraderInput as given, with the grader's own config when it has none (decisions 20).
    let mut input = grading.input.clone();
    if let Value::Object(object) = &mut input {
        if !object.contains_key("config") {
            object.insert("config".into(), serde_json::to_value(config).unwrap_or(Value::Null));
        }
    }
    let input = serde_json::to_vec_pretty(&input).unwrap_or_default();
    let mut env: BTreeMap<String, String> = config.env.clone();
    env.insert("EVALUATE_WORKSPACE".into(), "/workspace".into());
    env.insert("EVALUATE_GRADER_INPUT".into(), "/grader/input.json".into());
    let cwd = match checked.sub_path.is_empty() {
        true => PathBuf::from("/workspace"),
        false => PathBuf::from("/workspace").join(&checked.sub_path),
    };
    let spec = Spec {
        command: checked.command.clone(),
        limits: Limits { cpu_time: Some(checked.timeout), wall_time: Some(checked.timeout), ..Limits::default() },
        env,
        stdin: None,
        files: vec![SpecFile { area: Area::Grader, path: "input.json".into(), bytes: input, executable: false }],
        inputs: vec![Area::Grader],
        cwd,
        collect: Vec::new(),
        stdout: StdoutMode::Raw,
        wiring: Wiring::default(),
        workspace: Some(grading.archive.to_vec()),
    };
    let failed = |why: String| {
        let mut run = not_started();
        run.verdict = Verdict::IE;
        run.message = Some(why);
        outcome::decide(&checked.name, &run, b"", b"")
    };
    let Some(slot) = engine.slots(1).await else {
        return failed("cancelled".into());
    };
    match engine.run_spec(spec, &grading.policy, slot, MAX_STDOUT).await {
        Ok(ran) => outcome::decide(&checked.name, &ran.result, &ran.stdout, &ran.stderr),
        Err(why) => failed(why),
    }
}

/// The result of a program that could not be started (ENOENT).
fn not_started() -> RunResult {
    RunResult {
        verdict: Verdict::RE,
        exit_code: Some(127),
        signal: None,
        cpu_time: 0.0,
        wall_time: 0.0,
        memory: 0,
        limit: None,
        message: Some("the working directory: cannot execute: No such file or directory".into()),
        output_bytes: 0,
        limits: Limits::default(),
        measured_by: String::new(),
        collected: Vec::new(),
        warnings: Vec::new(),
    }
}
