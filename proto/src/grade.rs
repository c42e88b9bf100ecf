//! The `grade` method: program graders (Microsoft Vally's "program" grader,
//! program-grader.txt, decisions 18 to 20) run on a workspace an AI agent changed.
//!
//! Each grader's [`GraderResult`] streams as a `grader` event when it finishes (graders run in
//! parallel); the response lists them all, in the order of the request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Payload;

/// Params of `grade`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GradeRequest {
    /// The workspace as a tar archive (inline or a passed descriptor).
    pub workspace: Workspace,
    /// The GraderInput JSON (`trajectory`, `stimulus`, `config`, ...), passed through.
    #[serde(default = "empty_object")]
    pub input: Value,
    /// One or more graders, each run on its own copy-on-write view of the workspace.
    pub graders: Vec<GraderConfig>,
    /// The policy graders run under.
    #[serde(default = "evaluator_policy")]
    pub policy: String,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

fn evaluator_policy() -> String {
    "evaluator".into()
}

/// A tar archive of the workspace: exactly one of `archive` and `fd`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workspace {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<Payload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<usize>,
}

/// One program grader's `config` (the reference's fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraderConfig {
    /// The grader's name in results; default: `program`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The program to run (`python3`, `bash`, `node`, `./check`).
    pub program: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Through `/bin/sh -c` (program and args joined by spaces, as the reference does).
    #[serde(default)]
    pub shell: bool,
    /// The working directory below the workspace root; it must stay inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    /// `60s`, `2m`, `1.5s`, or seconds as a number; default 60 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Value>,
    /// Merged into the grader's environment; `EVALUATE_WORKSPACE` and
    /// `EVALUATE_GRADER_INPUT` (in any letter case) are refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// One grader's result: the GraderResult schema (decisions 18) and the run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraderResult {
    pub name: String,
    pub passed: bool,
    /// In [0, 1].
    pub score: f64,
    /// What the grader said, or the reference's message for how it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<Value>>,
    /// How the grader ended, in the reference's words (`Grader exited successfully`, ...).
    pub message: String,
    /// The grader's exit code, when it exited.
    pub exit_code: Option<i32>,
    pub cpu_time: f64,
    pub wall_time: f64,
    /// Peak memory, bytes.
    pub memory: u64,
    /// The start of what the grader wrote to stderr (its diagnostics), at most 4 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
}

/// The response of `grade`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GradeResult {
    /// True when every grader passed.
    pub passed: bool,
    /// In the order of the request's graders.
    pub results: Vec<GraderResult>,
}

/// The `grader` event: grader number `index` (in the request) finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraderEvent {
    pub index: usize,
    pub result: GraderResult,
}
