//! The `judge` method: a submission judged on a problem package with test case judges and a
//! master judge, in the manner of Sphere Engine (sphere-judges.txt, decisions 15 to 17).
//!
//! While it runs, each test's [`TestResult`] streams as a `test` event, in test order; the
//! response is the [`JudgeResult`].

use serde::{Deserialize, Serialize};

use crate::run::{BoxFile, RunResult};
use crate::Payload;

/// Params of `judge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeRequest {
    /// The problem package's files (`problem.toml`, `tests/N.in`, `tests/N.out`, judge
    /// sources), paths relative to the package directory.
    pub problem: Vec<BoxFile>,
    pub submission: SourceFile,
    /// A language of `policies/languages.toml`; absent: chosen by the filename's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// A source file: its name (for the extension) and bytes, inline or as a passed descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFile {
    pub filename: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Payload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<usize>,
}

/// A status of the Sphere judge model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    /// Accepted.
    AC,
    /// Wrong answer.
    WA,
    /// Time limit exceeded (CPU or wall).
    TLE,
    /// Runtime error: a non-zero exit or a signal.
    RE,
    /// Memory limit exceeded.
    MLE,
    /// Output limit exceeded.
    OLE,
    /// Compilation error.
    CE,
    /// Internal error: a judge failed, or the sandbox did; never the submission's fault.
    IE,
}

impl Status {
    pub const ALL: [Status; 8] =
        [Status::AC, Status::WA, Status::TLE, Status::RE, Status::MLE, Status::OLE, Status::CE, Status::IE];
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl std::str::FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Status::ALL.into_iter().find(|st| st.to_string() == s).ok_or_else(|| format!("unknown status {s:?}"))
    }
}

/// One test's outcome: the `test` event, and a line of the master judge's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// The test's number, from 0.
    pub test: usize,
    pub status: Status,
    pub score: f64,
    /// The signal that ended the submission, 0 when it exited.
    pub signal: i32,
    /// CPU seconds of the submission.
    pub time: f64,
    /// Peak memory of the submission, KiB.
    pub memory: u64,
    /// What the test case judge wrote on fd 7 for the user (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<String>,
    /// Why the status is IE, or what a limit was (a sentence), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The response of `judge`: the master judge's verdict and each test's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeResult {
    pub status: Status,
    pub score: f64,
    pub signal: i32,
    /// Seconds, as the master judge computed it.
    pub time: f64,
    /// KiB, as the master judge computed it.
    pub memory: u64,
    /// The language the submission was judged as.
    pub language: String,
    pub tests: Vec<TestResult>,
    /// The compiler's output (bounded) after a compilation error, or IE's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The compilation's run, when the language compiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compilation: Option<RunResult>,
}

/// A verdict update of a pipeline problem (a problem with a strategy): a test's verdict
/// changed, or (`test` null) the submission's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictUpdate {
    pub test: Option<u32>,
    /// `OK`, `WA`, `PE`, `RE`, `TLE`, `MLE`, `ILE`, `CF`, `CE`, `IG`, `SV`, `PT`.
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// One test of a pipeline problem's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineTest {
    /// From 1, as pipelines number tests.
    pub no: u32,
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<f64>,
    pub max_points: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// CPU seconds and peak bytes of the user program's runs on this test (the largest).
    pub time: f64,
    pub memory: u64,
}

/// The response of `judge` for a problem with a strategy (pipelines.md; decisions 21, 22).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineResult {
    /// `AC`, `{VERDICT} {TEST}` (e.g. `WA 3`), `CF`, `CE` or `PT`.
    pub verdict: String,
    pub points: f64,
    pub max_points: f64,
    pub language: String,
    /// Which strategy judged: a built-in's name or `custom`.
    pub strategy: String,
    pub tests: Vec<PipelineTest>,
    /// Group results with each group's feedback (decisions 22).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<serde_json::Value>,
    /// The compiler's output after CE, the strategy's error after CF, or its rating comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}
