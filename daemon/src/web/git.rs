//! The evaluator's repository: `repository[url]` at `commit_oid`, fetched with git and cached.
//!
//! The Web evaluation API names a repository by URL and a full commit id (decision 14): the tree
//! of that commit is fetched once, kept as a tar archive in a cache directory keyed by
//! (url, commit), and reused by later requests; `repository[branch]` and `repository[depth]`
//! only narrow the fetch. The cache is bounded in size (least recently used archives go first)
//! and concurrent requests for one (url, commit) share a single fetch.
//!
//! git runs outside the evaluator's sandbox, as the daemon, on a repository chosen by the client,
//! so it must not run anything the repository (or its server) asks for:
//! - **A bare repository and `git archive`.** Nothing is ever checked out: there is no working
//!   tree, so no checkout hooks and no index. `git archive` converts blobs as a checkout would, but
//!   a `filter=` attribute in the fetched tree only names a filter: the command comes from the
//!   configuration, which is ours and empty (a fetch never copies the source repository's
//!   configuration or hooks).
//! - **`env_clear()`.** Only `PATH`, a throw-away `HOME`, `LC_ALL` and the `GIT_*` variables below
//!   reach git: no `GIT_DIR`, `GIT_SSH_COMMAND`, `GIT_CONFIG_*`, proxy or credential settings of the
//!   daemon's environment. `GIT_CONFIG_NOSYSTEM` and `GIT_CONFIG_GLOBAL=/dev/null` leave the
//!   command line as the only configuration beyond the fresh repository's, which sets
//!   `core.hooksPath=/dev/null`, `core.fsmonitor=false`, `core.sshCommand=/bin/false`, disables
//!   credential helpers, automatic gc/maintenance and bundle URIs.
//! - **`GIT_ALLOW_PROTOCOL`.** The URL is checked here (`https://`, `http://`, `git://`, and
//!   `file://` below a configured directory), but git may be led elsewhere: redirects, remote
//!   helpers (`ext::` runs a command), submodules. The allow-list makes git itself refuse any other
//!   transport; `file` is in it only for a local request, and `protocol.ext.allow=never` is set too.
//! - **No prompts, bounded time.** stdin is null, `GIT_TERMINAL_PROMPT=0` and `GIT_ASKPASS=/bin/false`
//!   make a password request fail; a fetch that does not finish in time is killed (its whole
//!   process group, since git runs helpers) and reported as [`GitError::Timeout`].
//!
//! Each fetch runs in a fresh temporary directory inside the cache directory, removed afterwards
//! whatever happens (leftovers of a crash are removed at start-up). Archives are written
//! atomically (a temporary file renamed into place); an archive's URL is kept beside it and
//! compared on every hit, so a collision of the file name's URL hash can only cost a fetch.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;
use tokio::time::Instant;

/// How long a whole fetch (init, fetch, check, archive) may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest archive git may produce; a larger one fails the request.
pub const MAX_ARCHIVE_BYTES: usize = 1 << 30;
/// The largest `repository[depth]`.
pub const MAX_DEPTH: u32 = 1_000_000;
/// How much of git's stderr an error keeps.
const MAX_STDERR: usize = 4096;
/// The longest URL accepted.
const MAX_URL: usize = 4096;
/// Temporary files and directories older than this are leftovers of a crash.
const STALE_AFTER: Duration = Duration::from_secs(3600);
/// The prefix of the cache directory's temporary entries.
const TEMP_PREFIX: &str = "tmp-";
/// `PATH` for git.
const GIT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// Configuration given to every git invocation, ahead of the subcommand.
const HARDENING: &[&str] = &[
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.sshCommand=/bin/false",
    "-c",
    "credential.helper=",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "transfer.bundleURI=false",
    "-c",
    "fetch.recurseSubmodules=false",
    "-c",
    "init.defaultBranch=fetched",
];

/// Where an evaluator's files come from: `repository[url]`, `commit_oid`, `repository[branch]`,
/// `repository[depth]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub url: String,
    pub commit: String,
    pub branch: Option<String>,
    pub depth: Option<u32>,
}

/// Why a repository's archive could not be had.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `commit_oid` is not 40 hexadecimal digits (the value, shortened).
    #[error("commit_oid must be a full commit id (40 hexadecimal digits), not {0:?}")]
    BadCommit(String),
    /// The URL is not one this server fetches (why).
    #[error("repository[url] refused: {0}")]
    UrlRefused(String),
    /// `repository[branch]` is not a plausible branch name (why).
    #[error("bad repository[branch]: {0}")]
    BadBranch(String),
    /// `repository[depth]` is out of range.
    #[error("repository[depth] must be between 1 and {MAX_DEPTH}, not {0}")]
    BadDepth(u32),
    /// git failed (its stderr, bounded).
    #[error("fetching the repository failed: {0}")]
    Fetch(String),
    /// The fetch worked but the commit is not in it (a message saying where it was looked for).
    #[error("{0}")]
    CommitNotFound(String),
    /// git did not finish in time and was killed.
    #[error("fetching the repository timed out")]
    Timeout,
    /// The cache directory failed us.
    #[error("repository cache: {0}")]
    Io(#[from] io::Error),
}

impl GitError {
    /// Whether the request is at fault (a bad parameter, a refused URL, a missing commit), as
    /// opposed to the repository's server, the network or this host.
    pub fn is_request_error(&self) -> bool {
        matches!(
            self,
            GitError::BadCommit(_)
                | GitError::UrlRefused(_)
                | GitError::BadBranch(_)
                | GitError::BadDepth(_)
                | GitError::CommitNotFound(_)
        )
    }
}

/// An archive being fetched or just fetched, shared by the requests waiting for it.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Vec<u8>>>>>;

/// The cache of repository archives; share it (in an `Arc`) between requests so that they share
/// fetches.
pub struct GitCache {
    dir: PathBuf,
    max_bytes: u64,
    file_root: Option<PathBuf>,
    timeout: Duration,
    fetches: AtomicU64,
    /// One slot per (url, commit) with a request under way.
    inflight: Mutex<HashMap<(String, String), Slot>>,
    /// Serializes storing and eviction.
    store_lock: tokio::sync::Mutex<()>,
}

/// A [`Source`] checked: what git gets.
struct Checked {
    /// The URL as given, for messages.
    shown_url: String,
    /// The URL given to git (a local path as `file://` and canonical); also the cache key.
    url: String,
    local: bool,
    commit: String,
    branch: Option<String>,
    depth: Option<u32>,
}

impl GitCache {
    /// `dir`: where archives are kept (created if missing, mode 0700); `max_bytes`: the cache's
    /// bound; `file_root`: `file://` URLs (and plain absolute paths) are allowed only below this
    /// directory (None: refused).
    pub fn new(dir: PathBuf, max_bytes: u64, file_root: Option<PathBuf>) -> io::Result<GitCache> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
        remove_stale(&dir);
        Ok(GitCache {
            dir,
            max_bytes,
            file_root,
            timeout: DEFAULT_TIMEOUT,
            fetches: AtomicU64::new(0),
            inflight: Mutex::new(HashMap::new()),
            store_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The same cache with another time limit for a fetch ([`DEFAULT_TIMEOUT`] otherwise).
    pub fn with_timeout(mut self, timeout: Duration) -> GitCache {
        self.timeout = timeout;
        self
    }

    /// How many fetches this cache has started (cache hits and refused requests do not count).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The tree of `commit` of `url` as a tar archive (`git archive --format=tar <commit>`), from
    /// the cache or fetched.
    pub async fn archive(&self, source: &Source) -> Result<Arc<Vec<u8>>, GitError> {
        let checked = self.check(source).await?;
        let slot = SlotRef::new(&self.inflight, (checked.url.clone(), checked.commit.clone()));
        let mut held = slot.slot.clone().lock_owned().await;
        if let Some(archive) = held.as_ref() {
            return Ok(archive.clone());
        }
        let (tar, url_file) = self.paths(&checked);
        let url = checked.url.clone();
        let found = {
            let (tar, url_file) = (tar.clone(), url_file.clone());
            blocking(move || lookup(&tar, &url_file, &url)).await
        };
        match found {
            Ok(Some(archive)) => {
                let archive = Arc::new(archive);
                *held = Some(archive.clone());
                return Ok(archive);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(path = %tar.display(), "reading a cached repository archive failed: {e}"),
        }
        let archive = Arc::new(self.fetch(&checked).await?);
        if archive.len() as u64 <= self.max_bytes {
            let _storing = self.store_lock.lock().await;
            let (dir, data, url, max) = (self.dir.clone(), archive.clone(), checked.url.clone(), self.max_bytes);
            if let Err(e) = blocking(move || store(&dir, &tar, &url_file, &url, &data, max)).await {
                tracing::warn!(path = %self.dir.display(), "caching a repository archive failed: {e}");
            }
        }
        *held = Some(archive.clone());
        Ok(archive)
    }

    /// Checks a request's parameters; a local URL is resolved against `file_root`.
    async fn check(&self, source: &Source) -> Result<Checked, GitError> {
        let commit = check_commit(&source.commit)?;
        let branch = source.branch.as_deref().map(check_branch).transpose()?;
        let depth = source.depth.map(check_depth).transpose()?;
        let (url, local) = match classify_url(&source.url)? {
            Url::Network(url) => (url, false),
            Url::Local(path) => {
                let Some(root) = self.file_root.clone() else {
                    return Err(GitError::UrlRefused(
                        "file:// URLs and local paths are not allowed on this server".into(),
                    ));
                };
                let shown = source.url.clone();
                let url = tokio::task::spawn_blocking(move || local_url(&root, &path, &shown))
                    .await
                    .map_err(|e| GitError::Io(io::Error::other(e)))??;
                (url, true)
            }
        };
        Ok(Checked { shown_url: source.url.clone(), url, local, commit, branch, depth })
    }

    /// The archive of a cache entry and the file with its URL.
    fn paths(&self, checked: &Checked) -> (PathBuf, PathBuf) {
        let base = format!("{}-{:016x}", checked.commit, fnv1a(checked.url.as_bytes()));
        (self.dir.join(format!("{base}.tar")), self.dir.join(format!("{base}.url")))
    }

    /// Fetches the commit into a fresh bare repository and archives it.
    async fn fetch(&self, checked: &Checked) -> Result<Vec<u8>, GitError> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + self.timeout;
        let temp = TempDir::create(&self.dir).await?;
        let started = std::time::Instant::now();
        let result = fetch_in(checked, &temp.path, deadline).await;
        temp.remove().await;
        match &result {
            Ok(archive) => tracing::info!(
                url = checked.shown_url,
                commit = checked.commit,
                bytes = archive.len(),
                seconds = started.elapsed().as_secs_f64(),
                "repository fetched"
            ),
            Err(e) => {
                tracing::warn!(url = checked.shown_url, commit = checked.commit, error = %e, "repository fetch failed")
            }
        }
        result
    }
}

/// The steps of a fetch, in the temporary directory `temp`.
async fn fetch_in(checked: &Checked, temp: &Path, deadline: Instant) -> Result<Vec<u8>, GitError> {
    let git = Git { home: temp, local: checked.local, deadline };
    let repo = temp.join("repo.git");
    let out = git.run(args(["init", "-q", "--bare", "--template="]).chain([repo.clone().into()]), false).await?;
    if !out.status.success() {
        return Err(GitError::Fetch(out.stderr));
    }
    let git_dir = || [OsString::from("--git-dir"), repo.clone().into()].into_iter();

    let mut fetch: Vec<OsString> =
        git_dir().chain(args(["fetch", "--quiet", "--no-tags", "--no-recurse-submodules"])).collect();
    if let Some(depth) = checked.depth {
        fetch.extend(args(["--depth".to_string(), depth.to_string()]));
    }
    fetch.extend(args(["--".to_string(), checked.url.clone()]));
    let out = match &checked.branch {
        Some(branch) => {
            fetch.push(format!("+refs/heads/{branch}:refs/fetched").into());
            git.run(fetch.into_iter(), false).await?
        }
        None => {
            fetch.push("+refs/heads/*:refs/fetched/*".into());
            let mut with_head = fetch.clone();
            with_head.push("+HEAD:refs/fetched-head".into());
            let out = git.run(with_head.into_iter(), false).await?;
            if !out.status.success() && out.stderr.contains("couldn't find remote ref HEAD") {
                // A dangling HEAD (pointing to a branch that does not exist): the branches may do.
                git.run(fetch.into_iter(), false).await?
            } else {
                out
            }
        }
    };
    if !out.status.success() {
        return Err(GitError::Fetch(out.stderr));
    }

    let object = format!("{}^{{commit}}", checked.commit);
    let out = git.run(git_dir().chain(args(["cat-file", "-e", &object])), false).await?;
    if !out.status.success() {
        let mut message = format!("commit {} is not in {}", checked.commit, checked.shown_url);
        match &checked.branch {
            Some(branch) => message.push_str(&format!(" on branch {branch}")),
            None => message.push_str(" (in its branches or HEAD)"),
        }
        if let Some(depth) = checked.depth {
            message.push_str(&format!(
                "; the fetch was shallow (depth {depth}): an older commit needs a larger repository[depth]"
            ));
        }
        return Err(GitError::CommitNotFound(message));
    }

    let out = git.run(git_dir().chain(args(["archive", "--format=tar", &checked.commit])), true).await?;
    if out.too_big {
        return Err(GitError::Fetch(format!("the repository's tree is larger than {MAX_ARCHIVE_BYTES} bytes")));
    }
    if !out.status.success() {
        return Err(GitError::Fetch(out.stderr));
    }
    Ok(out.stdout)
}

/// Arguments as `OsString`s.
fn args<S: Into<OsString>>(args: impl IntoIterator<Item = S>) -> impl Iterator<Item = OsString> {
    args.into_iter().map(Into::into)
}

/// How git is run for one fetch.
struct Git<'a> {
    /// The temporary directory: `HOME` and the working directory.
    home: &'a Path,
    /// Whether the `file` transport is allowed.
    local: bool,
    deadline: Instant,
}

/// What a git invocation did.
struct GitOutput {
    status: ExitStatus,
    /// Empty unless captured.
    stdout: Vec<u8>,
    /// Bounded and trimmed.
    stderr: String,
    /// stdout passed [`MAX_ARCHIVE_BYTES`] and git was killed.
    too_big: bool,
}

impl Git<'_> {
    /// Runs git with `args` (after the hardening options), stdout captured if `capture`; kills it
    /// at the deadline.
    async fn run(&self, args: impl Iterator<Item = OsString>, capture: bool) -> Result<GitOutput, GitError> {
        let mut command = Command::new("git");
        command
            .env_clear()
            .env("PATH", GIT_PATH)
            .env("HOME", self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ALLOW_PROTOCOL", if self.local { "file:git:http:https" } else { "git:http:https" })
            .env("GIT_ASKPASS", "/bin/false")
            .env("LC_ALL", "C")
            .args(HARDENING)
            .args(args)
            .current_dir(self.home)
            .stdin(Stdio::null())
            .stdout(if capture { Stdio::piped() } else { Stdio::null() })
            .stderr(Stdio::piped())
            .process_group(0);
        let child =
            command.spawn().map_err(|e| GitError::Io(io::Error::new(e.kind(), format!("cannot run git: {e}"))))?;
        let process = Arc::new(Process { group: Pid::from_raw(child.id() as i32), reaped: Mutex::new(false) });
        let kill = KillOnDrop(process.clone());
        let mut task = tokio::task::spawn_blocking(move || collect(child, &process));
        match tokio::time::timeout_at(self.deadline, &mut task).await {
            Ok(joined) => Ok(joined.map_err(|e| GitError::Io(io::Error::other(e)))??),
            Err(_) => {
                drop(kill);
                // The process group is dead: its pipes close and the task reaps git.
                let _ = task.await;
                Err(GitError::Timeout)
            }
        }
    }
}

/// A running git, the leader of its process group.
struct Process {
    group: Pid,
    /// Set once git is reaped; until then its pid (and so the group's id) cannot be reused.
    reaped: Mutex<bool>,
}

impl Process {
    /// Kills the process group unless git has been reaped.
    fn kill(&self) {
        let reaped = lock(&self.reaped);
        if !*reaped {
            let _ = killpg(self.group, Signal::SIGKILL);
        }
    }
}

/// Kills git's process group when a request gives up on it (timeout, or the future dropped).
struct KillOnDrop(Arc<Process>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.kill();
    }
}

/// Reads git's output, waits for it to exit and reaps it (blocking).
fn collect(mut child: Child, process: &Process) -> io::Result<GitOutput> {
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut stdout = Vec::new();
    let mut too_big = false;
    let read = match child.stdout.take() {
        Some(out) => {
            let errors = std::thread::spawn(move || read_bounded(stderr, MAX_STDERR));
            let read = out.take(MAX_ARCHIVE_BYTES as u64 + 1).read_to_end(&mut stdout);
            if stdout.len() > MAX_ARCHIVE_BYTES {
                too_big = true;
                stdout = Vec::new();
                process.kill();
            }
            // The pipe is closed here: a git still writing gets SIGPIPE.
            read.map(|_| errors.join().unwrap_or_default())
        }
        None => Ok(read_bounded(stderr, MAX_STDERR)),
    };
    // Wait without reaping, so that a concurrent kill cannot hit a reused pid, then reap.
    while let Err(nix::errno::Errno::EINTR) =
        waitid(Id::Pid(process.group), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
    {}
    let status = {
        let mut reaped = lock(&process.reaped);
        let status = child.wait();
        *reaped = true;
        status?
    };
    let errors = read?;
    let mut stderr = String::from_utf8_lossy(&errors).trim().to_string();
    if errors.len() >= MAX_STDERR {
        stderr.push_str(" […]");
    }
    Ok(GitOutput { status, stdout, stderr, too_big })
}

/// Reads all of `reader`, keeping at most `max` bytes.
fn read_bounded(mut reader: impl Read, max: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buffer = [0; 8192];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    kept
}

/// A mutex's content, poisoned or not.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A request's hold on the slot of its (url, commit); the slot is forgotten with its last holder.
struct SlotRef<'a> {
    inflight: &'a Mutex<HashMap<(String, String), Slot>>,
    key: (String, String),
    slot: Slot,
}

impl<'a> SlotRef<'a> {
    fn new(inflight: &'a Mutex<HashMap<(String, String), Slot>>, key: (String, String)) -> SlotRef<'a> {
        let slot = lock(inflight).entry(key.clone()).or_default().clone();
        SlotRef { inflight, key, slot }
    }
}

impl Drop for SlotRef<'_> {
    fn drop(&mut self) {
        let mut inflight = lock(self.inflight);
        // Clones are only made under this lock: 2 is the map's and ours.
        if Arc::strong_count(&self.slot) == 2 {
            inflight.remove(&self.key);
        }
    }
}

/// A temporary directory in the cache directory, removed when done with.
struct TempDir {
    path: PathBuf,
    armed: bool,
}

impl TempDir {
    async fn create(parent: &Path) -> io::Result<TempDir> {
        let path = parent.join(format!("{TEMP_PREFIX}{}", random_hex()?));
        let created = path.clone();
        blocking(move || std::fs::DirBuilder::new().mode(0o700).create(&created)).await?;
        Ok(TempDir { path, armed: true })
    }

    async fn remove(mut self) {
        self.armed = false;
        let path = std::mem::take(&mut self.path);
        let shown = path.clone();
        if let Err(e) = blocking(move || std::fs::remove_dir_all(&path)).await {
            tracing::warn!(path = %shown.display(), "removing a git fetch's temporary directory failed: {e}");
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let path = std::mem::take(&mut self.path);
        let remove = move || {
            let _ = std::fs::remove_dir_all(&path);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(remove)),
            Err(_) => remove(),
        }
    }
}

/// Runs blocking file work off the runtime.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> io::Result<T> + Send + 'static) -> io::Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(io::Error::other)?
}

/// 16 random hexadecimal digits.
fn random_hex() -> io::Result<String> {
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| io::Error::other(format!("the OS random source failed: {e}")))?;
    Ok(random.iter().map(|b| format!("{b:02x}")).collect())
}

/// FNV-1a, 64 bits: a hash of the URL that is the same in every run.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A cached archive if its URL is `url`; marks it recently used (blocking).
fn lookup(tar: &Path, url_file: &Path, url: &str) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(url_file) {
        Ok(stored) if stored == url.as_bytes() => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut file = match File::open(tar) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    file.set_modified(SystemTime::now())?;
    let mut archive = Vec::new();
    file.read_to_end(&mut archive)?;
    Ok(Some(archive))
}

/// Adds an archive to the cache, then evicts the least recently used others until the cache is
/// within `max_bytes` (blocking).
fn store(dir: &Path, tar: &Path, url_file: &Path, url: &str, archive: &[u8], max_bytes: u64) -> io::Result<()> {
    // The URL first: an archive without it is never used.
    write_atomically(dir, url_file, url.as_bytes())?;
    write_atomically(dir, tar, archive)?;
    evict(dir, tar, max_bytes)
}

/// Writes a file through a temporary file renamed into place.
fn write_atomically(dir: &Path, path: &Path, content: &[u8]) -> io::Result<()> {
    let temp = dir.join(format!("{TEMP_PREFIX}{}.part", random_hex()?));
    let written = (|| {
        let mut file = File::options().write(true).create_new(true).mode(0o600).open(&temp)?;
        file.write_all(content)?;
        file.sync_data()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Removes the least recently used archives but `keep` until the total is at most `max_bytes`.
fn evict(dir: &Path, keep: &Path, max_bytes: u64) -> io::Result<()> {
    let mut archives = Vec::new();
    let mut total = 0u64;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TEMP_PREFIX) || !name.ends_with(".tar") {
            continue;
        }
        let Ok(metadata) = entry.metadata() else { continue };
        if !metadata.is_file() {
            continue;
        }
        total += metadata.len();
        archives.push((metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH), metadata.len(), entry.path()));
    }
    archives.sort();
    for (_, size, path) in archives {
        if total <= max_bytes {
            break;
        }
        if path == keep {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let _ = std::fs::remove_file(path.with_extension("url"));
        total = total.saturating_sub(size);
    }
    Ok(())
}

/// Removes what a crash left: old temporary entries, URL files without their archive.
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let orphan = name.ends_with(".url") && !entry.path().with_extension("tar").exists();
        if !name.starts_with(TEMP_PREFIX) && !orphan {
            continue;
        }
        let Ok(metadata) = entry.path().symlink_metadata() else { continue };
        let old = metadata.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age > STALE_AFTER);
        if old {
            let _ = if metadata.is_dir() {
                std::fs::remove_dir_all(entry.path())
            } else {
                std::fs::remove_file(entry.path())
            };
        }
    }
}

/// A full commit id, in lowercase.
fn check_commit(commit: &str) -> Result<String, GitError> {
    if commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(commit.to_ascii_lowercase())
    } else {
        Err(GitError::BadCommit(shorten(commit)))
    }
}

/// A plausible branch name (`refs/heads/` optional), without it.
fn check_branch(branch: &str) -> Result<String, GitError> {
    let name = branch.strip_prefix("refs/heads/").unwrap_or(branch);
    let bad = |why: &str| Err(GitError::BadBranch(format!("{:?} {why}", shorten(branch))));
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > 255 {
        return bad("is too long");
    }
    if name.starts_with('-') {
        return bad("begins with '-'");
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return bad("contains spaces or control characters");
    }
    if name.chars().any(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\')) {
        return bad("contains one of ~ ^ : ? * [ \\");
    }
    if name.contains("..") || name.contains("@{") || name == "@" {
        return bad("contains '..' or '@{'");
    }
    if name.split('/').any(|part| part.is_empty() || part.starts_with('.') || part.ends_with(".lock")) {
        return bad("has an empty component, or one beginning with '.' or ending with '.lock'");
    }
    if name.ends_with('.') {
        return bad("ends with '.'");
    }
    Ok(name.to_string())
}

fn check_depth(depth: u32) -> Result<u32, GitError> {
    if (1..=MAX_DEPTH).contains(&depth) {
        Ok(depth)
    } else {
        Err(GitError::BadDepth(depth))
    }
}

/// A URL sorted out.
enum Url {
    /// `https://`, `http://` or `git://`, the scheme in lowercase.
    Network(String),
    /// A `file://` URL's or an absolute path's path, yet to be checked against `file_root`.
    Local(PathBuf),
}

/// Sorts a URL out; refuses anything but `https://`, `http://`, `git://`, `file://` and
/// absolute paths.
fn classify_url(url: &str) -> Result<Url, GitError> {
    let refuse = |why: String| Err(GitError::UrlRefused(why));
    if url.is_empty() {
        return refuse("the URL is empty".into());
    }
    if url.len() > MAX_URL {
        return refuse(format!("the URL is longer than {MAX_URL} bytes"));
    }
    if url.starts_with('-') {
        return refuse("a URL must not begin with '-'".into());
    }
    if url.chars().any(char::is_control) {
        return refuse("the URL contains control characters".into());
    }
    if url.starts_with('/') {
        return Ok(Url::Local(PathBuf::from(url)));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        if url.contains("::") {
            return refuse("git remote helpers (<transport>::<address>, such as ext::) are not allowed".into());
        }
        return refuse(format!(
            "{:?} is not an absolute URL: use https://, http:// or git:// (scp-like ssh addresses and \
             relative paths are not allowed)",
            shorten(url)
        ));
    };
    let scheme = scheme.to_ascii_lowercase();
    match scheme.as_str() {
        "https" | "http" | "git" => {
            if rest.is_empty() || rest.starts_with('/') {
                return refuse(format!("the {scheme}:// URL has no host"));
            }
            if rest.chars().any(char::is_whitespace) {
                return refuse("the URL contains spaces".into());
            }
            Ok(Url::Network(format!("{scheme}://{rest}")))
        }
        "file" => {
            if !rest.starts_with('/') {
                return refuse("a file URL must be file:///absolute/path (no host)".into());
            }
            if rest.contains('%') {
                return refuse("percent-encoded file URLs are not supported".into());
            }
            Ok(Url::Local(PathBuf::from(rest)))
        }
        _ => refuse(format!("the {:?} protocol is not allowed: use https://, http:// or git://", shorten(&scheme))),
    }
}

/// The `file://` URL of `path` if it lies below `root`, both resolved (blocking).
fn local_url(root: &Path, path: &Path, shown: &str) -> Result<String, GitError> {
    let refused = || {
        GitError::UrlRefused(format!(
            "{:?} is not a repository below the directory local repositories may be fetched from",
            shorten(shown)
        ))
    };
    let root = std::fs::canonicalize(root).map_err(|_| refused())?;
    let path = std::fs::canonicalize(path).map_err(|_| refused())?;
    if !path.starts_with(&root) {
        return Err(refused());
    }
    let path = path.to_str().ok_or_else(refused)?;
    if path.chars().any(char::is_control) {
        return Err(refused());
    }
    Ok(format!("file://{path}"))
}

/// A client's value, shortened for a message.
fn shorten(value: &str) -> String {
    const MAX: usize = 80;
    match value.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A directory for one test, removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "segid-git-{name}-{}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed),
                random_hex().unwrap()
            ));
            std::fs::create_dir_all(&path).unwrap();
            Scratch(path.canonicalize().unwrap())
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Runs git for a test repository, with no outside configuration; returns its stdout.
    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .env_clear()
            .env("PATH", GIT_PATH)
            .env("HOME", dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "core.hooksPath=/dev/null"])
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn write(path: &Path, content: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// A repository: commit 1 (`a.txt`, `sub/b.txt`) and commit 2 (`a.txt` changed) on `main`,
    /// commit 3 (`side.txt` added) on `side` only.
    struct Repo {
        path: PathBuf,
        commits: [String; 3],
    }

    fn repo(root: &Path) -> Repo {
        let path = root.join("origin");
        std::fs::create_dir_all(&path).unwrap();
        git(&path, &["init", "-q", "-b", "main"]);
        write(&path.join("a.txt"), "one\n");
        write(&path.join("sub/b.txt"), "bee\n");
        git(&path, &["add", "."]);
        git(&path, &["commit", "-q", "-m", "first"]);
        let first = git(&path, &["rev-parse", "HEAD"]);
        write(&path.join("a.txt"), "two\n");
        git(&path, &["commit", "-q", "-am", "second"]);
        let second = git(&path, &["rev-parse", "HEAD"]);
        git(&path, &["checkout", "-q", "-b", "side"]);
        write(&path.join("side.txt"), "side\n");
        git(&path, &["add", "."]);
        git(&path, &["commit", "-q", "-m", "third"]);
        let third = git(&path, &["rev-parse", "HEAD"]);
        git(&path, &["checkout", "-q", "main"]);
        Repo { path, commits: [first, second, third] }
    }

    fn source(url: impl Into<String>, commit: &str) -> Source {
        Source { url: url.into(), commit: commit.to_string(), branch: None, depth: None }
    }

    fn file_url(path: &Path) -> String {
        format!("file://{}", path.display())
    }

    /// The regular files of a tar archive, by path.
    fn files(archive: &[u8]) -> HashMap<String, String> {
        let mut files = HashMap::new();
        for entry in tar::Archive::new(archive).entries().unwrap() {
            let mut entry = entry.unwrap();
            if entry.header().entry_type().is_file() {
                let path = entry.path().unwrap().to_string_lossy().to_string();
                let mut content = String::new();
                entry.read_to_string(&mut content).unwrap();
                files.insert(path, content);
            }
        }
        files
    }

    /// The names of a cache directory's entries, sorted.
    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
        names.sort();
        names
    }

    /// No temporary file or directory is left in the cache directory.
    fn assert_no_temporaries(dir: &Path) {
        let names = entries(dir);
        assert!(names.iter().all(|n| !n.starts_with(TEMP_PREFIX)), "{names:?}");
    }

    #[tokio::test]
    async fn archives_each_commit_with_its_content() {
        let scratch = Scratch::new("content");
        let repo = repo(&scratch.0);
        let cache = GitCache::new(scratch.0.join("cache"), 1 << 30, Some(scratch.0.clone())).unwrap();
        let first = cache.archive(&source(file_url(&repo.path), &repo.commits[0])).await.unwrap();
        let second = cache.archive(&source(file_url(&repo.path), &repo.commits[1])).await.unwrap();
        assert_ne!(first, second);
        let first = files(&first);
        assert_eq!(first.len(), 2, "{first:?}");
        assert_eq!(first["a.txt"], "one\n");
        assert_eq!(first["sub/b.txt"], "bee\n");
        let second = files(&second);
        assert_eq!(second.len(), 2, "{second:?}");
        assert_eq!(second["a.txt"], "two\n");
        assert_eq!(second["sub/b.txt"], "bee\n");
        assert_eq!(cache.fetches(), 2);
        assert_no_temporaries(&scratch.0.join("cache"));
    }

    #[tokio::test]
    async fn cache_hits_do_not_fetch_again() {
        let scratch = Scratch::new("hit");
        let repo = repo(&scratch.0);
        let dir = scratch.0.join("cache");
        let cache = GitCache::new(dir.clone(), 1 << 30, Some(scratch.0.clone())).unwrap();
        let fetched = cache.archive(&source(file_url(&repo.path), &repo.commits[0])).await.unwrap();
        assert_eq!(cache.fetches(), 1);
        // The same commit in uppercase, the same repository as a plain path, a branch and depth.
        let upper = repo.commits[0].to_ascii_uppercase();
        for request in [
            source(file_url(&repo.path), &repo.commits[0]),
            source(file_url(&repo.path), &upper),
            source(repo.path.to_str().unwrap(), &repo.commits[0]),
            Source { branch: Some("main".into()), depth: Some(1), ..source(file_url(&repo.path), &upper) },
        ] {
            assert_eq!(cache.archive(&request).await.unwrap(), fetched);
        }
        assert_eq!(cache.fetches(), 1);
        // The cache is on disk: another instance on the same directory uses it.
        let again = GitCache::new(dir.clone(), 1 << 30, Some(scratch.0.clone())).unwrap();
        assert_eq!(again.archive(&source(file_url(&repo.path), &repo.commits[0])).await.unwrap(), fetched);
        assert_eq!(again.fetches(), 0);
        assert_eq!(entries(&dir).len(), 2, "an archive and its URL: {:?}", entries(&dir));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_requests_fetch_once() {
        let scratch = Scratch::new("concurrent");
        let repo = repo(&scratch.0);
        let cache = Arc::new(GitCache::new(scratch.0.join("cache"), 1 << 30, Some(scratch.0.clone())).unwrap());
        let mut requests = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (cache, request) = (cache.clone(), source(file_url(&repo.path), &repo.commits[1]));
            requests.spawn(async move { cache.archive(&request).await.unwrap() });
        }
        let archives = requests.join_all().await;
        assert_eq!(archives.len(), 8);
        assert!(archives.iter().all(|a| a == &archives[0]));
        assert_eq!(files(&archives[0])["a.txt"], "two\n");
        assert_eq!(cache.fetches(), 1);
        assert!(lock(&cache.inflight).is_empty());
    }

    #[tokio::test]
    async fn missing_commits_are_not_found_and_not_cached() {
        let scratch = Scratch::new("missing");
        let repo = repo(&scratch.0);
        let dir = scratch.0.join("cache");
        let cache = GitCache::new(dir.clone(), 1 << 30, Some(scratch.0.clone())).unwrap();
        let missing = "0123456789abcdef0123456789abcdef01234567";
        let error = cache.archive(&source(file_url(&repo.path), missing)).await.unwrap_err();
        assert!(matches!(&error, GitError::CommitNotFound(m) if m.contains(missing)), "{error}");
        assert!(error.is_request_error());
        // Errors are not cached: the next request fetches again.
        assert!(cache.archive(&source(file_url(&repo.path), missing)).await.is_err());
        assert_eq!(cache.fetches(), 2);
        // A shallow fetch misses an old commit, and says so.
        let shallow = Source { depth: Some(1), ..source(file_url(&repo.path), &repo.commits[0]) };
        let error = cache.archive(&shallow).await.unwrap_err();
        assert!(matches!(&error, GitError::CommitNotFound(m) if m.contains("larger repository[depth]")), "{error}");
        let deeper = Source { depth: Some(2), ..shallow };
        assert_eq!(files(&cache.archive(&deeper).await.unwrap())["a.txt"], "one\n");
        assert_eq!(entries(&dir).len(), 2, "{:?}", entries(&dir));
    }

    #[tokio::test]
    async fn a_branch_narrows_the_fetch() {
        let scratch = Scratch::new("branch");
        let repo = repo(&scratch.0);
        let cache = GitCache::new(scratch.0.join("cache"), 1 << 30, Some(scratch.0.clone())).unwrap();
        let on_side = source(file_url(&repo.path), &repo.commits[2]);
        let on_main = Source { branch: Some("main".into()), ..on_side.clone() };
        let error = cache.archive(&on_main).await.unwrap_err();
        assert!(matches!(&error, GitError::CommitNotFound(m) if m.contains("on branch main")), "{error}");
        let on_side_branch = Source { branch: Some("refs/heads/side".into()), ..on_side.clone() };
        assert_eq!(files(&cache.archive(&on_side_branch).await.unwrap())["side.txt"], "side\n");
        assert_eq!(cache.fetches(), 2);
        // Without a branch, all branches are fetched.
        let fresh = GitCache::new(scratch.0.join("fresh"), 1 << 30, Some(scratch.0.clone())).unwrap();
        assert_eq!(files(&fresh.archive(&on_side).await.unwrap())["side.txt"], "side\n");
        // A branch that does not exist: git's own message.
        let error = fresh
            .archive(&Source { branch: Some("nope".into()), ..source(file_url(&repo.path), &repo.commits[0]) })
            .await
            .unwrap_err();
        assert!(matches!(&error, GitError::Fetch(m) if m.contains("nope")), "{error}");
    }

    #[tokio::test]
    async fn a_dangling_head_does_not_prevent_the_fetch() {
        let scratch = Scratch::new("dangling");
        let repo = repo(&scratch.0);
        git(&repo.path, &["symbolic-ref", "HEAD", "refs/heads/gone"]);
        let cache = GitCache::new(scratch.0.join("cache"), 1 << 30, Some(scratch.0.clone())).unwrap();
        let archive = cache.archive(&source(file_url(&repo.path), &repo.commits[1])).await.unwrap();
        assert_eq!(files(&archive)["a.txt"], "two\n");
        assert_eq!(cache.fetches(), 1);
    }

    #[tokio::test]
    async fn bad_requests_are_refused_without_running_git() {
        let scratch = Scratch::new("refused");
        let repo = repo(&scratch.0);
        let root = scratch.0.join("allowed");
        std::fs::create_dir_all(&root).unwrap();
        let dir = scratch.0.join("cache");
        let cache = GitCache::new(dir.clone(), 1 << 30, Some(root.clone())).unwrap();
        let no_files = GitCache::new(scratch.0.join("cache2"), 1 << 30, None).unwrap();
        let commit = repo.commits[0].as_str();
        let url = file_url(&repo.path);

        for bad in ["", "abc", &commit[..39], &format!("{commit}0"), &format!("{}g", &commit[..39]), " ", "HEAD"] {
            let error = cache.archive(&source(file_url(&root), bad)).await.unwrap_err();
            assert!(matches!(error, GitError::BadCommit(_)), "{bad:?}: {error}");
        }
        for bad in [
            "ext::sh -c touch% /tmp/pwned",
            "fd::0",
            "ssh://example.com/repo.git",
            "git+ssh://example.com/repo.git",
            "git@example.com:repo.git",
            "-u",
            "--upload-pack=touch /tmp/pwned",
            "repo",
            "./repo",
            "https://",
            "https:///path",
            "http::https://example.com/repo.git",
            "https://example.com/a b",
            "https://example.com/\n",
            "ftp://example.com/repo.git",
            "file://host/path",
        ] {
            let error = cache.archive(&source(bad, commit)).await.unwrap_err();
            assert!(matches!(error, GitError::UrlRefused(_)), "{bad:?}: {error}");
        }
        // Local repositories: only below the root, symbolic links and `..` resolved first.
        std::os::unix::fs::symlink(&repo.path, root.join("link")).unwrap();
        for bad in [
            url.clone(),
            repo.path.to_str().unwrap().to_string(),
            file_url(&root.join("link")),
            file_url(&root.join("../origin")),
            file_url(&root.join("missing")),
        ] {
            let error = cache.archive(&source(bad.as_str(), commit)).await.unwrap_err();
            assert!(matches!(&error, GitError::UrlRefused(m) if m.contains("below the directory")), "{bad}: {error}");
        }
        for allowed_elsewhere in [url.clone(), repo.path.to_str().unwrap().to_string(), file_url(&root)] {
            let error = no_files.archive(&source(allowed_elsewhere.as_str(), commit)).await.unwrap_err();
            assert!(matches!(&error, GitError::UrlRefused(m) if m.contains("not allowed")), "{error}");
        }
        for bad in ["-x", "a b", "a..b", "a\u{1}", "", "a~1", "x:y", "a/.hidden", "a.lock", "a/", "a@{0}"] {
            let request = Source { branch: Some(bad.into()), ..source(file_url(&root), commit) };
            let error = cache.archive(&request).await.unwrap_err();
            assert!(matches!(error, GitError::BadBranch(_)), "{bad:?}: {error}");
        }
        for bad in [0, MAX_DEPTH + 1, u32::MAX] {
            let request = Source { depth: Some(bad), ..source(file_url(&root), commit) };
            assert!(matches!(cache.archive(&request).await.unwrap_err(), GitError::BadDepth(d) if d == bad));
        }
        assert_eq!(cache.fetches(), 0);
        assert_eq!(no_files.fetches(), 0);
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    }

    #[test]
    fn network_urls_are_accepted() {
        for (url, expected) in [
            ("https://example.com/repo.git", "https://example.com/repo.git"),
            ("HTTP://example.com:8080/r", "http://example.com:8080/r"),
            ("git://example.com/r", "git://example.com/r"),
        ] {
            assert!(matches!(classify_url(url), Ok(Url::Network(u)) if u == expected), "{url}");
        }
        assert!(matches!(check_branch("feature/x-1.2"), Ok(b) if b == "feature/x-1.2"));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[tokio::test]
    async fn git_failures_report_its_stderr() {
        let scratch = Scratch::new("failure");
        let not_a_repo = scratch.0.join("plain");
        std::fs::create_dir_all(&not_a_repo).unwrap();
        let dir = scratch.0.join("cache");
        let cache = GitCache::new(dir.clone(), 1 << 30, Some(scratch.0.clone())).unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let error = cache.archive(&source(file_url(&not_a_repo), commit)).await.unwrap_err();
        assert!(
            matches!(&error, GitError::Fetch(m) if m.contains("does not appear to be a git repository")),
            "{error}"
        );
        assert!(!error.is_request_error());
        assert_eq!(cache.fetches(), 1);
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    }

    #[tokio::test]
    async fn the_size_bound_evicts_the_least_recently_used() {
        let scratch = Scratch::new("evict");
        let repo = repo(&scratch.0);
        let url = file_url(&repo.path);
        // The archives' sizes, from an unbounded cache.
        let sizing = GitCache::new(scratch.0.join("sizing"), u64::MAX, Some(scratch.0.clone())).unwrap();
        let mut sizes = Vec::new();
        for commit in &repo.commits {
            sizes.push(sizing.archive(&source(url.as_str(), commit)).await.unwrap().len() as u64);
        }
        let [a, b, c] = [sizes[0], sizes[1], sizes[2]];
        let max = (a + b).max(a + c);
        assert!(max < a + b + c);

        let dir = scratch.0.join("cache");
        let cache = GitCache::new(dir.clone(), max, Some(scratch.0.clone())).unwrap();
        let tick = || tokio::time::sleep(Duration::from_millis(20));
        cache.archive(&source(url.as_str(), &repo.commits[0])).await.unwrap();
        tick().await;
        cache.archive(&source(url.as_str(), &repo.commits[1])).await.unwrap();
        tick().await;
        // The first is used again: the second is now the least recently used.
        cache.archive(&source(url.as_str(), &repo.commits[0])).await.unwrap();
        assert_eq!(cache.fetches(), 2);
        tick().await;
        cache.archive(&source(url.as_str(), &repo.commits[2])).await.unwrap();
        assert_eq!(cache.fetches(), 3);
        let names = entries(&dir);
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names.iter().all(|n| !n.starts_with(&repo.commits[1])), "{names:?}");
        // The first and third are still there; the second is fetched again (evicting the first).
        cache.archive(&source(url.as_str(), &repo.commits[0])).await.unwrap();
        cache.archive(&source(url.as_str(), &repo.commits[2])).await.unwrap();
        assert_eq!(cache.fetches(), 3);
        cache.archive(&source(url.as_str(), &repo.commits[1])).await.unwrap();
        assert_eq!(cache.fetches(), 4);
        let names = entries(&dir);
        assert!(names.iter().all(|n| !n.starts_with(&repo.commits[0])), "{names:?}");
        let total: u64 =
            names.iter().filter(|n| n.ends_with(".tar")).map(|n| std::fs::metadata(dir.join(n)).unwrap().len()).sum();
        assert!(total <= max);
    }

    #[tokio::test]
    async fn an_archive_larger_than_the_bound_is_returned_not_kept() {
        let scratch = Scratch::new("large");
        let repo = repo(&scratch.0);
        let dir = scratch.0.join("cache");
        let cache = GitCache::new(dir.clone(), 100, Some(scratch.0.clone())).unwrap();
        let request = source(file_url(&repo.path), &repo.commits[0]);
        assert_eq!(files(&cache.archive(&request).await.unwrap())["a.txt"], "one\n");
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
        cache.archive(&request).await.unwrap();
        assert_eq!(cache.fetches(), 2);
    }

    #[tokio::test]
    async fn the_repository_s_filters_and_hooks_do_not_run() {
        let scratch = Scratch::new("evil");
        let path = scratch.0.join("origin");
        std::fs::create_dir_all(&path).unwrap();
        git(&path, &["init", "-q", "-b", "main"]);
        write(&path.join(".gitattributes"), "* filter=evil\n");
        write(&path.join("a.txt"), "plain\n");
        git(&path, &["add", "."]);
        git(&path, &["commit", "-q", "-m", "evil"]);
        let commit = git(&path, &["rev-parse", "HEAD"]);
        let marker = scratch.0.join("marker");
        let touch = format!("touch {}", marker.display());
        for (key, value) in [
            ("filter.evil.smudge", format!("{touch}; echo smudged")),
            ("filter.evil.clean", format!("{touch}; cat")),
            ("filter.evil.process", touch.clone()),
            ("filter.evil.required", "true".to_string()),
            ("core.fsmonitor", touch.clone()),
            ("uploadpack.packObjectsHook", format!("{touch}; exec")),
            ("core.hooksPath", path.join(".git/hooks").display().to_string()),
        ] {
            git(&path, &["config", key, &value]);
        }
        for hook in ["post-checkout", "post-merge", "reference-transaction", "pre-auto-gc", "post-update", "pre-push"] {
            let hook = path.join(".git/hooks").join(hook);
            write(&hook, &format!("#!/bin/sh\n{touch}\n"));
            std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }

        let cache = GitCache::new(scratch.0.join("cache"), 1 << 30, Some(scratch.0.clone())).unwrap();
        let archive = cache.archive(&source(file_url(&path), &commit)).await.unwrap();
        let files = files(&archive);
        assert_eq!(files["a.txt"], "plain\n", "not smudged");
        assert_eq!(files[".gitattributes"], "* filter=evil\n");
        assert!(!marker.exists(), "something of the repository ran");
    }

    #[tokio::test]
    async fn a_fetch_that_hangs_is_killed() {
        let scratch = Scratch::new("timeout");
        // A git:// server that accepts connections (in the backlog) and never answers.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("git://{}/repo.git", listener.local_addr().unwrap());
        let dir = scratch.0.join("cache");
        let cache = GitCache::new(dir.clone(), 1 << 30, None).unwrap().with_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let error = cache.archive(&source(url, "0123456789abcdef0123456789abcdef01234567")).await.unwrap_err();
        assert!(matches!(error, GitError::Timeout), "{error}");
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
        drop(listener);
    }
}
