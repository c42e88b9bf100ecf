//! The Web Evaluation API (web-evaluation-api.txt, decisions 10 to 14): SEGI evaluations over
//! HTTP, the evaluator taken from a git repository at a given commit, events read back in
//! pages by cursor. Served by `segid --http ADDR` on the same evaluation core as the
//! JSON-RPC `evaluate`.
//!
//! - [`server`]: the routes, authentication and errors.
//! - [`submit`]: a `POST /evaluate` form read and checked, and its evaluation started.
//! - [`store`]: the evaluations' events and the pages of them.
//! - [`git`]: repositories fetched at a commit, without hooks or filters, cached by (url, commit).

pub mod git;
pub mod server;
pub mod store;
pub mod submit;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What `segid --http...` configures.
#[derive(Debug, Clone)]
pub struct WebSettings {
    pub addr: SocketAddr,
    /// Required as `Authorization: Bearer <token>` when set.
    pub token: Option<String>,
    pub max_body: usize,
    pub max_files: usize,
    pub max_file: usize,
    pub max_live: usize,
    pub retention: Duration,
    pub page_size: usize,
    pub git_cache: PathBuf,
    pub git_cache_bytes: u64,
    /// `file://` repositories are allowed only below this directory.
    pub git_file_root: Option<PathBuf>,
}
