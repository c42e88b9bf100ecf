//! A host without cgroups, as `segid --cgroup none` makes one: the daemon says so in
//! `capabilities` and in every result (`measured_by: rusage`), and the rlimit fallbacks
//! still stop what the cgroup would have stopped.

use segi_tests::{compile_c, mapping, Daemon, LimitKind, Verdict};

fn daemon() -> &'static Daemon {
    static DAEMON: std::sync::OnceLock<&'static Daemon> = std::sync::OnceLock::new();
    DAEMON.get_or_init(|| Daemon::start_with(&[], &["--cgroup", "none"]).into_shared())
}

#[test]
fn capabilities_name_the_fallback() {
    let output = daemon().client(&["--json", "capabilities"]);
    assert!(output.status.success(), "{output:?}");
    let caps: serde_json::Value = serde_json::from_slice(&output.stdout).expect("capabilities JSON");
    assert_eq!(caps["cgroup"], "none", "{caps}");
    let fallbacks = caps["fallbacks"].as_array().expect("fallbacks").iter().map(|f| f.to_string()).collect::<String>();
    assert!(fallbacks.contains("RLIMIT_AS"), "{fallbacks}");
}

#[test]
fn a_run_says_how_it_was_measured() {
    let run = daemon().run_json(&["--", "true"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.result.measured_by, "rusage", "{}", run.describe());
}

#[test]
fn memory_is_limited_by_rlimit_as() {
    let program = compile_c("memory_touch");
    let run = daemon().run_json(&["--memory", "64M", "--file", &mapping("prog", &program), "--", "./prog", "300"]);
    // Without a cgroup there is no OOM kill to see: the allocation fails instead.
    assert_ne!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert!(run.result.memory < 64 << 20, "{}", run.describe());
}

#[test]
fn cpu_time_is_limited_by_rlimit_cpu() {
    let run = daemon().run_json(&["--time", "1", "--wall-time", "10", "--", "sh", "-c", "while :; do :; done"]);
    assert_eq!(run.result.verdict, Verdict::TLE, "{}", run.describe());
    assert_eq!(run.result.limit, Some(LimitKind::CpuTime), "{}", run.describe());
    // RLIMIT_CPU is whole seconds, set one above the limit: the backstop, not the poll.
    assert!(run.result.cpu_time >= 1.0 && run.result.cpu_time < 3.5, "{}", run.describe());
}

#[test]
fn a_fork_bomb_is_held_by_rlimit_nproc() {
    let program = compile_c("fork_bomb");
    let run = daemon().run_json(&[
        "--processes",
        "10",
        "--time",
        "1",
        "--wall-time",
        "3",
        "--file",
        &mapping("prog", &program),
        "--",
        "./prog",
    ]);
    assert_ne!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert!(run.result.wall_time < 3.5, "{}", run.describe());
    daemon().assert_alive();
}
