//! The `run` method: what a client asks for, what streams back, and the result object
//! (the table in `interface.md`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::Payload;

/// Limits a request asks for. Each is optional: a missing one takes the policy's default,
/// and none may exceed the policy's maximum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// CPU time of all processes of the run, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time: Option<f64>,
    /// Wall-clock time, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time: Option<f64>,
    /// Peak memory of the run, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
    /// Processes and threads alive at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Bytes of stdout plus stderr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// Largest file the run may write, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
}

/// A file placed in `/box` before the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxFile {
    /// Path relative to `/box`; no `..`, not absolute.
    pub path: String,
    /// The file's bytes, inline; exactly one of `content` and `fd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Payload>,
    /// Index of a file descriptor passed with the request (SCM_RIGHTS) to read the bytes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<usize>,
    /// Whether the file is executable (the client keeps the host file's executable bit).
    #[serde(default)]
    pub executable: bool,
}

/// Params of `run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The policy to run under (`default`, `compile`, `evaluator`, ...).
    #[serde(default = "default_policy")]
    pub policy: String,
    /// argv; `argv[0]` is looked up in the sandbox's `PATH` unless it contains a `/`.
    pub command: Vec<String>,
    #[serde(default)]
    pub limits: Limits,
    /// Variables added to the policy's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Standard input; `/dev/null` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<Payload>,
    #[serde(default)]
    pub files: Vec<BoxFile>,
    /// Box paths (relative to `/box`) to copy out after the run.
    #[serde(default)]
    pub collect: Vec<String>,
}

fn default_policy() -> String {
    "default".into()
}

/// An event streamed while a run goes on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Event {
    Stdout(#[serde(with = "flat_payload")] Payload),
    Stderr(#[serde(with = "flat_payload")] Payload),
    /// Every run slot is taken: the run waits its turn (first come, first served) behind
    /// `ahead` other waiting runs. Sent once, before the run starts.
    Queued {
        ahead: u64,
    },
    /// `evaluate`: text the evaluator wrote to stdout (never empty; a line terminator is an
    /// event of its own).
    Text {
        payload: String,
    },
    /// `evaluate`: one line of a data block, the evaluator's JSON as it wrote it.
    Data {
        payload: Data,
    },
    /// `judge`: a test's result, sent in test order as the tests finish.
    Test(crate::judge::TestResult),
    /// `grade`: one grader finished.
    Grader(crate::grade::GraderEvent),
    /// `judge` of a problem with a strategy: a verdict changed (realtime updates).
    Verdict(crate::judge::VerdictUpdate),
}

/// A data event's payload: any JSON value, kept as the evaluator's own text (validated, not
/// re-encoded).
#[derive(Debug, Clone)]
pub struct Data(pub Box<serde_json::value::RawValue>);

impl Data {
    /// The payload as a JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.0.get()).unwrap_or(serde_json::Value::Null)
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Through a Value: inside an internally tagged enum serde has already buffered the
        // payload, which a RawValue cannot borrow from.
        let value = serde_json::Value::deserialize(d)?;
        serde_json::value::to_raw_value(&value).map(Data).map_err(serde::de::Error::custom)
    }
}

/// `{"type":"stdout","text":"..."}`: the payload's key sits beside `type`.
mod flat_payload {
    use super::Payload;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Flat {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base64: Option<String>,
    }

    pub fn serialize<S: Serializer>(payload: &Payload, s: S) -> Result<S::Ok, S::Error> {
        match payload {
            Payload::Text(t) => Flat { text: Some(t.clone()), base64: None },
            Payload::Base64(b) => Flat { text: None, base64: Some(b.clone()) },
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Payload, D::Error> {
        let flat = Flat::deserialize(d)?;
        match (flat.text, flat.base64) {
            (Some(t), None) => Ok(Payload::Text(t)),
            (None, Some(b)) => Ok(Payload::Base64(b)),
            _ => Err(serde::de::Error::custom("an output event has exactly one of text and base64")),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// Exited with status 0.
    OK,
    /// Non-zero exit or a signal not caused by a limit.
    RE,
    /// CPU or wall time limit.
    TLE,
    /// Memory limit.
    MLE,
    /// Output or file size limit.
    OLE,
    /// A forbidden system call.
    SV,
    /// The sandbox failed; never the program's fault.
    IE,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// The limit that ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    CpuTime,
    WallTime,
    Memory,
    Output,
    FileSize,
    Processes,
}

/// A file copied out of the box after the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collected {
    pub path: String,
    /// The content, or absent when the file could not be collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Payload>,
    /// Why the file could not be collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result object of every run-like method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub verdict: Verdict,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Seconds of user+system time of every process of the run.
    pub cpu_time: f64,
    /// Seconds from the program's start to the end of its last process.
    pub wall_time: f64,
    /// Peak memory in bytes.
    pub memory: u64,
    pub limit: Option<LimitKind>,
    pub message: Option<String>,
    /// Bytes of stdout and stderr the run produced (up to the output limit).
    #[serde(default)]
    pub output_bytes: u64,
    /// The limits that were in force.
    #[serde(default)]
    pub limits: Limits,
    /// How each figure was measured: `cgroup-v1`, `cgroup-v2` or `rusage` (the fallback).
    #[serde(default)]
    pub measured_by: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collected: Vec<Collected>,
    /// `evaluate`: the evaluator's protocol mistakes (decisions 6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<crate::evaluate::Warning>,
}

/// What `capabilities` answers: the host's isolation layers and the daemon's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    pub version: String,
    /// `v2`, `v1`, or `none` (limits then fall back to rlimits and rusage).
    pub cgroup: String,
    /// Controllers segid can use, e.g. `["memory", "pids", "cpuacct"]`.
    pub cgroup_controllers: Vec<String>,
    /// Landlock ABI version in use; 0 when landlock is unavailable.
    pub landlock_abi: u32,
    pub seccomp: bool,
    pub user_namespaces: bool,
    /// Limits that are enforced by a weaker fallback on this host, each with a sentence.
    pub fallbacks: Vec<String>,
    pub policies: Vec<String>,
    pub methods: Vec<String>,
    pub max_message_bytes: usize,
    pub max_runs: usize,
}
