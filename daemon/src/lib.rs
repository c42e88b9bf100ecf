//! segid: runs untrusted programs in sandboxes and streams what happens.
//!
//! A run's life, module by module:
//! - [`rpc`]: the Unix socket, JSON-RPC framing, one module per method (`rpc::methods`).
//! - [`policy`]: the TOML policies a request runs under, and its limits against them.
//! - [`run`]: one run from checked request to result: supervision, output events, verdict.
//! - [`evaluation`]: SEGI evaluations; the parser turning an evaluator's stdout into events.
//! - [`grading`]: program graders (AI-agent evaluations) on a copy-on-write workspace.
//! - [`judging`]: Sphere Engine judging: problem packages, test case and master judges, built
//!   on runs whose descriptors are wired to files and pipes.
//! - [`sandbox`]: the kernel mechanisms, one module each (namespaces via the zygote, id maps,
//!   cgroups, root filesystem, credentials, landlock, seccomp, rlimits) and init, which
//!   applies them inside the run.
//! - [`web`]: the HTTP evaluation API (`segid --http`): evaluations from a git repository,
//!   events paged by cursor.
//! - [`host`]: what this host supports (`segid --check`, `capabilities`).
//! - [`daemon`]: the state shared by all connections.
//! - [`privileges`]: what the daemon keeps of root after set-up.

pub mod daemon;
pub mod evaluation;
pub mod grading;
pub mod host;
pub mod judging;
pub mod pipeline;
pub mod policy;
pub mod privileges;
pub mod rpc;
pub mod run;
pub mod sandbox;
pub mod web;
