//! The `evaluate` method (SEGI, `segi.txt` with decisions 1 to 9): an evaluator runs on a
//! submission, and its stdout streams back as text and data events.
//!
//! The events are [`crate::Event::Text`] and [`crate::Event::Data`] (TuringArena's form,
//! decisions 8), [`crate::Event::Stderr`] for the evaluator's log output, and the response is
//! the usual [`crate::RunResult`], whose `warnings` name the evaluator's protocol mistakes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::run::{BoxFile, Limits};
use crate::Payload;

/// Params of `evaluate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluateRequest {
    /// The policy the evaluator runs under.
    #[serde(default = "evaluator_policy")]
    pub policy: String,
    /// The evaluator's argv, run in the problem directory (`/problem`) when there is one,
    /// else in `/box`.
    pub command: Vec<String>,
    /// The submission's fields, each a read-only file `/submission/<field>/<filename>` named
    /// by `SUBMISSION_FILE_<FIELD>`.
    #[serde(default)]
    pub submission: Vec<SubmissionFile>,
    /// The problem directory's files, paths relative to it: a read-only `/problem`, the
    /// evaluator's working directory. Absent: no `/problem`, the working directory is `/box`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<Vec<BoxFile>>,
    #[serde(default)]
    pub limits: Limits,
    /// Variables added to the policy's environment; `SUBMISSION_FILE_*` and
    /// `EVALUATION_DATA_*` are the daemon's own and are refused here.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

fn evaluator_policy() -> String {
    "evaluator".into()
}

/// One field of a submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmissionFile {
    /// Lowercase letters, digits and `_`, starting with a letter (decisions 9).
    pub field: String,
    /// The file's basename as the client has it, e.g. `solution.c`.
    pub filename: String,
    /// The bytes, inline; exactly one of `content` and `fd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Payload>,
    /// Index of a file descriptor passed with the request (SCM_RIGHTS): the daemon reads the
    /// file through it, so it never opens a path on the client's behalf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<usize>,
}

/// A protocol mistake of the evaluator, reported with the result; never fatal (decisions 6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// The stdout line it is about (1-based, every line counted, marker lines included).
    pub line: u64,
    pub message: String,
}
