//! The `segid` binary: parse the command line, check the host, start the zygote while still
//! single-threaded, then serve the socket on a tokio runtime.

use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use tokio_util::sync::CancellationToken;

use segid::daemon::{Daemon, Settings};
use segid::host::Host;
use segid::policy::Policies;
use segid::sandbox::idmap::IdPool;
use segid::sandbox::zygote::Zygote;

/// The segi sandbox daemon.
#[derive(Parser, Debug)]
#[command(
    version,
    about,
    after_help = "Example:\n  segid --socket /tmp/segi/segid.sock --policies ./policies\n  segi-client --socket /tmp/segi/segid.sock run -- /bin/echo hello"
)]
struct Args {
    /// Socket to listen on [default: /run/segi/segid.sock for root, else $XDG_RUNTIME_DIR/segi/segid.sock].
    #[arg(long, env = "SEGID_SOCKET")]
    socket: Option<PathBuf>,
    /// Group that owns the socket (mode 0660): the users allowed to run things.
    #[arg(long)]
    socket_group: Option<String>,
    /// Directory of policy files (*.toml).
    #[arg(long, default_value = "/usr/local/share/segi/policies")]
    policies: PathBuf,
    /// Directory for the daemon's own state (kept tiny: the sandboxes live in tmpfs).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Runs at once; more wait in line [default: the number of CPUs].
    #[arg(long)]
    max_runs: Option<usize>,
    /// Largest accepted protocol line, in bytes.
    #[arg(long, default_value_t = segi_proto::MAX_MESSAGE_BYTES)]
    max_message_bytes: usize,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
    /// First host uid (and gid) of the per-run pool in root mode; 65536 ids from there.
    /// Two segids on one host need disjoint pools.
    #[arg(long, default_value_t = segid::sandbox::idmap::POOL_BASE)]
    uid_base: u32,
    /// Seconds a stop (SIGTERM) lets running runs finish before killing them.
    #[arg(long, default_value_t = 10.0)]
    stop_timeout: f64,
    /// Print what this host supports and exit.
    #[arg(long)]
    check: bool,
    /// `none` runs without cgroups even where they exist: limits fall back to rlimits and
    /// figures to rusage, as on a host without cgroups (for such hosts' operators and tests).
    #[arg(long, value_enum, default_value = "auto")]
    cgroup: CgroupMode,
    /// Serve the HTTP evaluation API (web-evaluation-api.txt) on ADDR [default when given
    /// without a value: 127.0.0.1:8080]. An address beyond loopback needs --http-token-file.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
    http: Option<std::net::SocketAddr>,
    /// A file holding the token HTTP clients must send as `Authorization: Bearer <token>`.
    #[arg(long, value_name = "FILE")]
    http_token_file: Option<PathBuf>,
    /// Allow `file://` repositories below DIR (off by default: a web client must not read the
    /// host's files through segid).
    #[arg(long, value_name = "DIR")]
    http_git_file_root: Option<PathBuf>,
    /// How long a finished HTTP evaluation's events are kept unread.
    #[arg(long, default_value = "10m", value_parser = parse_duration_flag)]
    http_retention: f64,
    /// Events per page.
    #[arg(long, default_value_t = 100)]
    http_page_size: usize,
    /// HTTP evaluations kept at once (running, or finished and not read to the end).
    #[arg(long, default_value_t = 64)]
    http_max_live: usize,
    /// Largest POST /evaluate body.
    #[arg(long, default_value = "64M", value_parser = parse_size_flag)]
    http_max_body: u64,
    /// Largest submission file of an HTTP evaluation.
    #[arg(long, default_value = "16M", value_parser = parse_size_flag)]
    http_max_file: u64,
    /// Most submission files of an HTTP evaluation.
    #[arg(long, default_value_t = 16)]
    http_max_files: usize,
    /// Bound on the cache of fetched repositories (in the state directory).
    #[arg(long, default_value = "1G", value_parser = parse_size_flag)]
    http_git_cache: u64,
}

fn parse_duration_flag(text: &str) -> Result<f64, String> {
    segi_proto::units::parse_duration(text).map_err(|e| e.to_string())
}

fn parse_size_flag(text: &str) -> Result<u64, String> {
    segi_proto::units::parse_size(text).map_err(|e| e.to_string())
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum CgroupMode {
    Auto,
    None,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LogFormat {
    Text,
    Json,
}

fn default_socket(root: bool) -> PathBuf {
    if root {
        return PathBuf::from("/run/segi/segid.sock");
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    runtime.join("segi/segid.sock")
}

fn main() {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_env("SEGID_LOG").unwrap_or_else(|_| "info".into());
    // Colours only on a terminal: journald stores escape codes as "[blob data]".
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match args.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
    if let Err(e) = run(args) {
        eprintln!("segid: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let mut host = Host::detect();
    if args.cgroup == CgroupMode::None {
        host.cgroup = Err("cgroups disabled with --cgroup none".into());
    }
    if args.check {
        print!("{}", host.report());
        return Ok(());
    }
    if let Some(problem) = host.blocking_problem() {
        bail!("{problem}; segid cannot sandbox anything on this host");
    }
    for note in host.fallbacks() {
        tracing::warn!("{note}");
    }
    let policies = Policies::load(&args.policies)?;
    let socket_group = match &args.socket_group {
        Some(name) => Some(
            nix::unistd::Group::from_name(name)
                .with_context(|| format!("cannot look up --socket-group {name}"))?
                .with_context(|| format!("--socket-group {name}: no such group"))?
                .gid
                .as_raw(),
        ),
        None => None,
    };
    let socket = args.socket.clone().unwrap_or_else(|| default_socket(host.root));
    let state_dir = args.state_dir.clone().unwrap_or_else(|| {
        socket.parent().map(|p| p.join("state")).unwrap_or_else(|| PathBuf::from("/tmp/segi-state"))
    });
    let web = args.http.map(|addr| web_settings(addr, &args, &state_dir)).transpose()?;
    let new_root = state_dir.join("root");
    std::fs::create_dir_all(&new_root).with_context(|| format!("cannot create {}", new_root.display()))?;
    let cgroup_prefix = format!("segi-{}-", std::process::id());
    if let Ok(hierarchy) = &host.cgroup {
        let removed = hierarchy.remove_stale("segi-", is_stale_cgroup);
        if !removed.is_empty() {
            tracing::info!(?removed, "removed cgroups a previous segid left behind");
        }
    }
    // Before any thread exists: the zygote must be a copy of a single-threaded process.
    let zygote = Zygote::start()?;
    let listen_fd = systemd_listen_fd();

    let max_runs =
        args.max_runs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
    if !(args.stop_timeout.is_finite() && args.stop_timeout >= 0.0) {
        bail!("--stop-timeout must be a number of seconds, not {}", args.stop_timeout);
    }
    let settings = Settings {
        policies_dir: args.policies,
        state_dir,
        max_runs,
        max_message_bytes: args.max_message_bytes,
        uid_base: args.uid_base,
        stop_grace: Duration::from_secs_f64(args.stop_timeout),
    };
    let daemon = Arc::new(Daemon {
        settings,
        policies: RwLock::new(Arc::new(policies)),
        host,
        zygote,
        ids: IdPool::new(args.uid_base),
        run_slots: Arc::new(tokio::sync::Semaphore::new(max_runs)),
        runs: tokio_util::task::TaskTracker::new(),
        warm_init: std::sync::Mutex::new(None),
        refilling: std::sync::atomic::AtomicBool::new(false),
        stopping: std::sync::atomic::AtomicBool::new(false),
        stop_runs: CancellationToken::new(),
        waiting: std::sync::atomic::AtomicUsize::new(0),
        run_counter: AtomicU64::new(0),
        new_root,
        cgroup_prefix,
    });

    let std_listener = match listen_fd {
        // SAFETY: systemd passed us this listening socket as fd 3 (LISTEN_FDS).
        Some(fd) => unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) },
        None => segid::rpc::server::bind(&socket, socket_group)
            .with_context(|| format!("cannot listen on {}", socket.display()))?,
    };
    std_listener.set_nonblocking(true)?;
    // Bound before capabilities go, like the socket (a port below 1024 needs one).
    let web_listener = match &web {
        Some(settings) => {
            let listener = std::net::TcpListener::bind(settings.addr)
                .with_context(|| format!("cannot listen on --http {}", settings.addr))?;
            listener.set_nonblocking(true)?;
            Some(listener)
        }
        None => None,
    };
    // Set-up is over: keep only what runs need, before any other thread exists (capabilities
    // are per thread, and the runtime's threads inherit the caller's).
    if daemon.host.root {
        let dac_override = daemon.host.cgroup.as_ref().is_ok_and(|h| h.parents_need_dac_override());
        let kept = segid::privileges::keep_only_run_capabilities(dac_override).context("cannot drop capabilities")?;
        tracing::info!(?kept, "capabilities dropped to what runs need");
        if dac_override {
            tracing::warn!("CAP_DAC_OVERRIDE kept: a cgroup segid creates runs in is not writable by its owner");
        }
    }

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::UnixListener::from_std(std_listener)?;
        tracing::info!(socket = %socket.display(), zygote = daemon.zygote.pid(), max_runs, "segid ready");
        if let Some(default) = daemon.policies().get("default") {
            segid::run::spawn::refill(&daemon, default);
        }
        let shutdown = CancellationToken::new();
        let signals = shutdown.clone();
        let reloader = daemon.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int), Ok(mut hup)) =
                (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup()))
            else {
                return;
            };
            loop {
                tokio::select! {
                    _ = term.recv() => break,
                    _ = int.recv() => break,
                    _ = hup.recv() => match reloader.reload_policies() {
                        Ok(count) => tracing::info!(count, "policies reloaded"),
                        Err(e) => tracing::error!(error = %e, "policies not reloaded; the old ones stay in force"),
                    },
                }
            }
            tracing::info!("stopping: no new runs; running ones may finish, then everything is cleaned up");
            signals.cancel();
        });
        if let (Some(settings), Some(listener)) = (web, web_listener) {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            let (daemon, shutdown) = (daemon.clone(), shutdown.clone());
            tokio::spawn(async move {
                if let Err(e) = segid::web::server::serve(daemon, settings, listener, shutdown).await {
                    tracing::error!(error = %e, "the HTTP evaluation API stopped");
                }
            });
        }
        let new_root = daemon.new_root.clone();
        let grace = daemon.settings.stop_grace;
        let own_socket = listen_fd.is_none().then_some(socket.as_path());
        segid::rpc::server::serve(daemon, listener, own_socket, shutdown, grace).await;
        // The mount point of every run's root, empty now that every run is gone.
        let _ = std::fs::remove_dir(&new_root);
        anyhow::Ok(())
    })
}

/// The HTTP API's settings from the command line: a token is needed beyond loopback.
fn web_settings(
    addr: std::net::SocketAddr,
    args: &Args,
    state_dir: &std::path::Path,
) -> anyhow::Result<segid::web::WebSettings> {
    let token = match &args.http_token_file {
        Some(path) => {
            let token = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --http-token-file {}", path.display()))?
                .trim()
                .to_string();
            if token.is_empty() {
                bail!("--http-token-file {} is empty", path.display());
            }
            Some(token)
        }
        None => None,
    };
    if token.is_none() && !addr.ip().is_loopback() {
        bail!("--http {addr} is reachable beyond this host: give --http-token-file too, or listen on 127.0.0.1");
    }
    let git_file_root = match &args.http_git_file_root {
        Some(dir) => {
            Some(std::fs::canonicalize(dir).with_context(|| format!("--http-git-file-root {}", dir.display()))?)
        }
        None => None,
    };
    Ok(segid::web::WebSettings {
        addr,
        token,
        max_body: args.http_max_body as usize,
        max_files: args.http_max_files,
        max_file: args.http_max_file as usize,
        max_live: args.http_max_live.max(1),
        retention: Duration::from_secs_f64(args.http_retention),
        page_size: args.http_page_size.max(1),
        git_cache: state_dir.join("git-cache"),
        git_cache_bytes: args.http_git_cache,
        git_file_root,
    })
}

/// `segi-<pid>-<n>` is stale when no segid runs as `<pid>` any more.
fn is_stale_cgroup(name: &str) -> bool {
    let Some(pid) =
        name.strip_prefix("segi-").and_then(|rest| rest.split('-').next()).and_then(|p| p.parse::<u32>().ok())
    else {
        return false;
    };
    if pid == std::process::id() {
        return false;
    }
    // A zombie segid (dead, not yet reaped) is as dead as a missing one.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(|s| s == "Z")))
        .unwrap_or(true);
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(comm) => zombie || comm.trim() != "segid",
        Err(_) => true,
    }
}

/// The socket systemd passed (socket activation), if any.
fn systemd_listen_fd() -> Option<i32> {
    let pid: u32 = std::env::var("LISTEN_PID").ok()?.parse().ok()?;
    let fds: u32 = std::env::var("LISTEN_FDS").ok()?.parse().ok()?;
    (pid == std::process::id() && fds >= 1).then_some(3)
}
