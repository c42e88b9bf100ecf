//! The wire contract between `segid` and its clients (see `docs/protocol.md`).
//!
//! - [`grade`]: the `grade` method: program graders on a workspace (AI-agent evaluations).
//! - [`jsonrpc`]: JSON-RPC 2.0 frames, one message per line, and the error codes.
//! - [`run`]: the `run` method: request, streamed events and the result object.
//! - [`evaluate`]: the `evaluate` method (SEGI): submission fields, text and data events.
//! - [`judge`]: the `judge` method (Sphere Engine's model): problem packages, test results.
//! - [`units`]: sizes (`256M`) and durations (`500ms`) as people write them.
//! - [`bytes`]: byte payloads carried as UTF-8 text or base64.

pub mod bytes;
pub mod evaluate;
pub mod grade;
pub mod jsonrpc;
pub mod judge;
pub mod run;
pub mod units;

pub use bytes::Payload;
pub use evaluate::{EvaluateRequest, SubmissionFile};
pub use run::{Capabilities, Data, Event, Limits, RunRequest, RunResult, Verdict};

/// Default upper bound for one protocol line, in bytes (requests carry files inline).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
