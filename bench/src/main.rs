//! segi-bench: the median wall time of one run of `/bin/true`, bare and under each kind of
//! sandbox, measured in one go on one machine so that the figures compare.
//!
//! - [`commands`]: cases that time a whole command line (bare, unshare, bwrap, segi-client).
//! - [`connection`]: the case that times `run` requests over one open client connection.
//! - [`daemon`]: the private `segid` the segi cases talk to, stopped by a drop guard.
//! - [`stats`]: median and p90 of the samples.
//! - [`parser`]: `--parser`, the throughput of segid's SEGI stdout parser instead (no daemon).
//!
//! A benchmark, not a test: it reports figures and asserts none.

mod commands;
mod connection;
mod daemon;
mod parser;
mod stats;

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use serde_json::json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use daemon::Daemon;
use stats::Summary;

/// The program every case runs: it does nothing, so what is measured is the sandbox's cost.
const PROGRAM: &str = "/bin/true";

/// bubblewrap with every namespace unshared and a minimal read-only root (/bin, /lib and
/// /lib64 are needed where they are not links into /usr).
#[rustfmt::skip]
const BWRAP_ARGS: &[&str] = &[
    "--unshare-all",
    "--ro-bind", "/usr", "/usr",
    "--ro-bind", "/lib", "/lib",
    "--ro-bind", "/lib64", "/lib64",
    "--ro-bind", "/bin", "/bin",
    "--proc", "/proc",
    "--dev", "/dev",
    "--tmpfs", "/tmp",
];

/// Measure how long one run of /bin/true takes bare, under unshare, bwrap, and segi.
#[derive(Debug, Parser)]
#[command(name = "segi-bench", version)]
struct Args {
    /// Timed runs per case.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    iterations: u64,
    /// Untimed runs per case before the timed ones.
    #[arg(long, default_value_t = 10)]
    warmup: u64,
    /// Measure only these cases (comma-separated), e.g. `--only bare,unshare,bwrap`.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Case>,
    /// Print the figures as one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Where segid and segi-client are [default: the directory of this executable].
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// The policy directory for the daemon [default: the repository's policies/].
    #[arg(long, value_name = "DIR")]
    policies: Option<PathBuf>,
    /// Measure the throughput of the SEGI stdout parser instead (text lines, then data lines),
    /// in-process: no daemon, no sandbox.
    #[arg(long)]
    parser: bool,
    /// With --parser: the size of each generated stream.
    #[arg(long, default_value_t = 256, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=16384))]
    parser_mib: u64,
}

/// With --parser: timed passes over each stream (the median is reported).
const PARSER_REPETITIONS: usize = 5;

/// What is measured, in the order of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Case {
    /// (a) fork+exec+wait of the program, no isolation.
    Bare,
    /// (b) `unshare -Urmpfni`: the namespaces alone.
    Unshare,
    /// (c) bubblewrap with every namespace and a minimal read-only root.
    Bwrap,
    /// (d) `segi-client run` as a new process each time: the command-line user's path.
    SegiCli,
    /// (e) `run` requests over one persistent client connection: a judge's path.
    SegiConn,
}

impl Case {
    const ALL: [Case; 5] = [Case::Bare, Case::Unshare, Case::Bwrap, Case::SegiCli, Case::SegiConn];

    fn letter(self) -> char {
        match self {
            Case::Bare => 'a',
            Case::Unshare => 'b',
            Case::Bwrap => 'c',
            Case::SegiCli => 'd',
            Case::SegiConn => 'e',
        }
    }

    fn id(self) -> &'static str {
        match self {
            Case::Bare => "bare",
            Case::Unshare => "unshare",
            Case::Bwrap => "bwrap",
            Case::SegiCli => "segi-cli",
            Case::SegiConn => "segi-conn",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Case::Bare => "bare fork+exec+wait",
            Case::Unshare => "unshare -Urmpfni",
            Case::Bwrap => "bwrap --unshare-all",
            Case::SegiCli => "segi-client run (new process)",
            Case::SegiConn => "segi Client (one connection)",
        }
    }

    fn needs_daemon(self) -> bool {
        matches!(self, Case::SegiCli | Case::SegiConn)
    }
}

/// How one case went.
#[derive(Debug)]
enum Outcome {
    Measured(Summary),
    /// Not measurable on this host (a tool is missing); not an error.
    Skipped(String),
    Failed(String),
}

impl Outcome {
    fn from_samples(samples: Result<Vec<Duration>>) -> Outcome {
        match samples {
            Ok(samples) => match Summary::of(&samples) {
                Some(summary) => Outcome::Measured(summary),
                None => Outcome::Failed("no samples".into()),
            },
            Err(err) => Outcome::Failed(format!("{err:#}")),
        }
    }

    fn median_ms(&self) -> Option<f64> {
        match self {
            Outcome::Measured(s) => Some(s.median_ms),
            _ => None,
        }
    }
}

/// Set by Ctrl-C; the measuring loops stop at the next run, so the daemon guard can clean up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.parser {
        return parser_bench(&args);
    }
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            INTERRUPTED.store(true, Ordering::Relaxed);
        }
    });
    match bench(&args).await {
        Ok(results) => {
            if args.json {
                println!("{:#}", report_json(&args, &results));
            } else {
                print!("{}", report_table(&args, &results));
            }
            if interrupted() {
                ExitCode::from(130)
            } else if results.iter().any(|(_, o)| matches!(o, Outcome::Failed(_))) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(err) => {
            eprintln!("segi-bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--parser`: CPU-bound and in-process, so it runs on this thread, before anything else.
fn parser_bench(args: &Args) -> ExitCode {
    let Ok(size) = usize::try_from(args.parser_mib << 20) else {
        eprintln!("segi-bench: --parser-mib is too large for this machine");
        return ExitCode::FAILURE;
    };
    let results = parser::measure(size, PARSER_REPETITIONS, progress);
    if args.json {
        println!("{:#}", parser_json(&results));
    } else {
        print!("{}", parser_table(&results));
    }
    ExitCode::SUCCESS
}

fn parser_table(results: &[parser::Throughput]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "SEGI stdout parser: 64 KiB chunks, MB/s: median and best of {PARSER_REPETITIONS} passes, MB = 10^6 bytes"
    );
    let _ = writeln!(out, "{:<36} {:>6} {:>10} {:>8} {:>8}", "case", "MiB", "events", "MB/s", "best");
    for r in results {
        let (mib, median, best) = (r.bytes >> 20, r.median_mb_s(), r.best_mb_s());
        let _ = writeln!(out, "{:<36} {mib:>6} {:>10} {median:>8.0} {best:>8.0}", r.label, r.events);
    }
    for r in results {
        let (verdict, cmp) = if r.meets_bar() { ("met", ">=") } else { ("NOT met", "<") };
        let _ =
            writeln!(out, "bar {verdict}: {} {:.0} MB/s {cmp} {:.0} MB/s", r.case, r.median_mb_s(), parser::BAR_MB_S);
    }
    out
}

fn parser_json(results: &[parser::Throughput]) -> serde_json::Value {
    let cases: Vec<_> = results
        .iter()
        .map(|r| {
            json!({
                "case": r.case,
                "label": r.label,
                "bytes": r.bytes,
                "events": r.events,
                "median_mb_s": r.median_mb_s().round(),
                "best_mb_s": r.best_mb_s().round(),
                "mb_s": r.mb_s.iter().map(|v| v.round()).collect::<Vec<_>>(),
                "bar_met": r.meets_bar(),
            })
        })
        .collect();
    json!({ "parser": { "chunk_bytes": 64 * 1024, "bar_mb_s": parser::BAR_MB_S, "cases": cases } })
}

/// Measures every selected case; a case that cannot run is reported, not fatal.
async fn bench(args: &Args) -> Result<Vec<(Case, Outcome)>> {
    let cases: Vec<Case> = Case::ALL.into_iter().filter(|c| args.only.is_empty() || args.only.contains(c)).collect();
    let warmup = usize::try_from(args.warmup).context("--warmup is too large")?;
    let iterations = usize::try_from(args.iterations).context("--iterations is too large")?;
    let bin_dir = match &args.bin_dir {
        Some(dir) => dir.clone(),
        None => own_dir()?,
    };
    let segid = bin_dir.join("segid");
    let client = bin_dir.join("segi-client");

    // Started once for both segi cases, before either, and stopped when this returns.
    let mut daemon: Option<Result<Daemon, String>> = None;
    if cases.iter().any(|c| c.needs_daemon()) {
        progress("starting segid");
        let policies = match &args.policies {
            Some(dir) => dir.clone(),
            None => find_policies(&bin_dir),
        };
        let started = tokio::task::spawn_blocking(move || start_daemon(&segid, &client, &policies))
            .await
            .context("the daemon start-up task panicked")?;
        daemon = Some(started.map_err(|err| format!("{err:#}")));
    }

    let mut results = Vec::new();
    for case in cases {
        if interrupted() {
            break;
        }
        progress(&format!("measuring ({}) {}", case.letter(), case.label()));
        let outcome = match (case, &daemon) {
            (Case::SegiCli | Case::SegiConn, Some(Err(why))) => Outcome::Failed(format!("segid did not start: {why}")),
            (Case::SegiCli, Some(Ok(d))) => {
                let argv = vec![
                    path_string(&bin_dir.join("segi-client")),
                    "--socket".into(),
                    path_string(d.socket()),
                    "run".into(),
                    "--".into(),
                    PROGRAM.into(),
                ];
                time_blocking(argv, warmup, iterations).await
            }
            (Case::SegiConn, Some(Ok(d))) => {
                Outcome::from_samples(connection::time_runs(d.socket(), PROGRAM, warmup, iterations).await)
            }
            (Case::Bare, _) => time_blocking(vec![PROGRAM.into()], warmup, iterations).await,
            (Case::Unshare, _) => {
                let argv = ["unshare", "-Urmpfni", PROGRAM];
                time_blocking(argv.map(String::from).to_vec(), warmup, iterations).await
            }
            (Case::Bwrap, _) => match commands::find_in_path("bwrap") {
                None => Outcome::Skipped("bwrap is not installed".into()),
                Some(bwrap) => {
                    let mut argv = vec![path_string(&bwrap)];
                    argv.extend(BWRAP_ARGS.iter().map(|a| a.to_string()));
                    argv.push(PROGRAM.into());
                    time_blocking(argv, warmup, iterations).await
                }
            },
            (Case::SegiCli | Case::SegiConn, None) => unreachable!("the daemon starts for these"),
        };
        results.push((case, outcome));
    }
    // Stopping the daemon may wait for it: not on a runtime thread.
    tokio::task::spawn_blocking(move || drop(daemon)).await.context("stopping segid")?;
    Ok(results)
}

fn start_daemon(segid: &Path, client: &Path, policies: &Path) -> Result<Daemon> {
    for (binary, package) in [(segid, "segid"), (client, "segi-client")] {
        if !binary.exists() {
            anyhow::bail!(
                "{} not found; build it with `cargo build --release -p {package}` \
                 or pass --bin-dir",
                binary.display()
            );
        }
    }
    Daemon::start(segid, client, policies)
}

/// Times a command line on a blocking thread, so Ctrl-C is still noticed meanwhile.
async fn time_blocking(argv: Vec<String>, warmup: usize, iterations: usize) -> Outcome {
    let samples = tokio::task::spawn_blocking(move || commands::time_command(&argv, warmup, iterations))
        .await
        .unwrap_or_else(|panic| Err(anyhow::anyhow!("the measuring task panicked: {panic}")));
    Outcome::from_samples(samples)
}

/// The directory of this executable: `make build` puts segid and segi-client beside it.
fn own_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this executable's path")?;
    Ok(exe.parent().context("this executable has no directory")?.to_path_buf())
}

/// The repository's `policies/`: the nearest one above `bin_dir` (`target/release/..`), else
/// the one this crate was built from.
fn find_policies(bin_dir: &Path) -> PathBuf {
    bin_dir
        .ancestors()
        .map(|dir| dir.join("policies"))
        .find(|dir| dir.join("default.toml").is_file())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies"))
}

fn path_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Progress goes to a terminal only: piped output stays the report alone.
fn progress(message: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("segi-bench: {message}");
    }
}

/// The baseline every ratio divides by.
fn bare_median(results: &[(Case, Outcome)]) -> Option<f64> {
    results.iter().find(|(c, _)| *c == Case::Bare).and_then(|(_, o)| o.median_ms())
}

/// Whether the command-line path (d) is at most as slow as bubblewrap (c); `None` when
/// either was not measured.
fn bar(results: &[(Case, Outcome)]) -> Option<(bool, f64, f64)> {
    let median = |case| results.iter().find(|(c, _)| *c == case).and_then(|(_, o)| o.median_ms());
    let (cli, bwrap) = (median(Case::SegiCli)?, median(Case::Bwrap)?);
    Some((cli <= bwrap, cli, bwrap))
}

fn report_table(args: &Args, results: &[(Case, Outcome)]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{PROGRAM}: {} timed runs per case after {} warm-up runs", args.iterations, args.warmup);
    let _ = writeln!(out, "{:<36} {:>10} {:>10} {:>8}", "case", "median ms", "p90 ms", "vs (a)");
    let bare = bare_median(results);
    for (case, outcome) in results {
        let name = format!("({}) {}", case.letter(), case.label());
        let _ = match outcome {
            Outcome::Measured(s) => {
                let ratio = bare.map_or("-".into(), |b| format!("{:.1}x", s.median_ms / b));
                writeln!(out, "{name:<36} {:>10.3} {:>10.3} {ratio:>8}", s.median_ms, s.p90_ms)
            }
            Outcome::Skipped(why) => writeln!(out, "{name:<36} skipped ({why})"),
            Outcome::Failed(why) => writeln!(out, "{name:<36} FAILED: {why}"),
        };
    }
    let _ = match bar(results) {
        Some((true, cli, bwrap)) => writeln!(out, "bar met: segi-client run ({cli:.3} ms) <= bwrap ({bwrap:.3} ms)"),
        Some((false, cli, bwrap)) => {
            writeln!(out, "bar NOT met: segi-client run ({cli:.3} ms) > bwrap ({bwrap:.3} ms)")
        }
        None => writeln!(out, "bar not checked: it needs both (c) bwrap and (d) segi-client run"),
    };
    out
}

fn report_json(args: &Args, results: &[(Case, Outcome)]) -> serde_json::Value {
    let bare = bare_median(results);
    let cases: Vec<_> = results
        .iter()
        .map(|(case, outcome)| {
            let mut entry = json!({ "case": case.id(), "label": case.label() });
            let fields = match outcome {
                Outcome::Measured(s) => json!({
                    "status": "measured",
                    "median_ms": micro(s.median_ms),
                    "p90_ms": micro(s.p90_ms),
                    "min_ms": micro(s.min_ms),
                    "max_ms": micro(s.max_ms),
                    "samples": s.samples,
                    "ratio_to_bare": bare.map(|b| (s.median_ms / b * 100.0).round() / 100.0),
                }),
                Outcome::Skipped(why) => json!({ "status": "skipped", "reason": why }),
                Outcome::Failed(why) => json!({ "status": "failed", "reason": why }),
            };
            if let (Some(entry), serde_json::Value::Object(fields)) = (entry.as_object_mut(), fields) {
                entry.extend(fields);
            }
            entry
        })
        .collect();
    json!({
        "program": PROGRAM,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "cases": cases,
        "bar": bar(results).map(|(met, cli, bwrap)| json!({
            "met": met,
            "segi_cli_median_ms": micro(cli),
            "bwrap_median_ms": micro(bwrap),
        })),
    })
}

/// Milliseconds rounded to the microsecond: finer digits are noise.
fn micro(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}
