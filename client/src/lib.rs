//! A client for `segid`, the segi sandbox daemon (protocol: `docs/protocol.md`).
//!
//! - [`client`]: [`Client`], one connection that carries many requests at once, and
//!   [`RunHandle`], one `run` or `evaluate` whose events stream in while it goes on, and
//!   [`JudgeHandle`], one `judge` whose tests' results (a Sphere problem) or verdict changes
//!   (a problem with a strategy) stream in while it goes on, ending in a [`JudgeOutcome`], and
//!   [`GradeHandle`], one `grade` whose graders' results stream in as they finish. Requests
//!   may pass open files along (SCM_RIGHTS): [`Client::start_evaluate`],
//!   [`Client::start_judge`], [`Client::start_grade`], [`Client::start_run_with_fds`].
//! - `router` (private): the table that hands each line the daemon sends to the request
//!   it belongs to.
//! - [`error`]: [`Error`], every way talking to the daemon can fail, worded for a person.
//! - [`socket`]: where the daemon listens when nobody says ([`default_socket`]).
//! - [`report`]: what a finished run, judging or grading means to a shell: the exit status
//!   and the lines people read.
//! - [`workspace`]: a directory as the tar archive `grade` takes, in an anonymous file to pass
//!   open.
//!
//! The wire types themselves (requests, events, results) live in [`segi_proto`].
//!
//! # Example
//!
//! ```no_run
//! use segi_client::{default_socket, Client};
//! use segi_proto::{Event, RunRequest};
//!
//! # async fn example() -> Result<(), segi_client::Error> {
//! let client = Client::connect(default_socket()?).await?;
//! println!("segid {}", client.ping().await?.version);
//!
//! let request: RunRequest = serde_json::from_value(serde_json::json!({
//!     "command": ["sh", "-c", "echo hi"],
//!     "limits": { "cpu_time": 1.0 },
//! }))
//! .expect("a valid request");
//!
//! let result = client
//!     .run(&request, |event| {
//!         if let Event::Stdout(payload) = event {
//!             print!("{}", String::from_utf8_lossy(&payload.to_bytes().unwrap_or_default()));
//!         }
//!     })
//!     .await?;
//! eprintln!("{}", segi_client::report::summary_line(&result));
//! std::process::exit(segi_client::report::exit_status(&result).into());
//! # }
//! ```

pub mod client;
pub mod error;
pub mod report;
mod router;
pub mod socket;
pub mod workspace;

pub use client::{Client, GradeHandle, JudgeHandle, JudgeOutcome, Pong, RawEvent, RunHandle};
pub use error::Error;
pub use socket::default_socket;
