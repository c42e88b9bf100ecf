//! segid itself: its host check, refusing a bad start, and where its directories may be.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use segi_tests::daemon::run_with_timeout;
use segi_tests::{binary, Daemon, Verdict};

#[test]
fn check_reports_the_host_and_exits() {
    let output =
        run_with_timeout(Command::new(binary("segid")).arg("--check").stdin(Stdio::null()), Duration::from_secs(10));
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{text}");
    for word in ["cgroup", "seccomp", "landlock", "namespace"] {
        assert!(text.to_lowercase().contains(word), "`segid --check` says nothing about {word}:\n{text}");
    }
}

#[test]
fn a_missing_policies_directory_is_refused_at_start() {
    let dir = segi_tests::temp_dir("bad-start");
    let output = run_with_timeout(
        Command::new(binary("segid"))
            .arg("--socket")
            .arg(dir.join("segid.sock"))
            .arg("--policies")
            .arg(dir.join("no-such-policies"))
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdin(Stdio::null()),
        Duration::from_secs(10),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no-such-policies"), "the error should name the directory: {stderr}");
}

#[test]
fn a_broken_policy_is_refused_at_start() {
    let dir = segi_tests::temp_dir("bad-policy");
    let policies = dir.join("policies");
    fs::create_dir_all(&policies).unwrap();
    fs::write(policies.join("broken.toml"), "[limits.default]\ncpu_time = \"many\"\n").unwrap();
    let output = run_with_timeout(
        Command::new(binary("segid"))
            .arg("--socket")
            .arg(dir.join("segid.sock"))
            .arg("--policies")
            .arg(&policies)
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdin(Stdio::null()),
        Duration::from_secs(10),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("broken"), "the error should name the policy: {stderr}");
}

#[test]
fn runs_work_when_the_state_dir_is_in_a_private_directory() {
    // `mktemp -d` (as scripts/demo.sh uses) and systemd's StateDirectory= make 0700
    // directories; the sandbox's uid cannot enter them, and must not need to.
    let daemon = Daemon::start();
    fs::set_permissions(daemon.dir(), fs::Permissions::from_mode(0o700)).unwrap();
    let run = daemon.run_json(&["--", "true"]);
    fs::set_permissions(daemon.dir(), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
}

#[test]
fn an_idle_daemon_stops_at_once_on_sigterm() {
    let daemon = Daemon::start();
    let run = daemon.run_json(&["--", "true"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let stopped = daemon.stop().expect("running");
    assert!(stopped.graceful, "segid did not exit within 5 s of SIGTERM: {stopped:?}\n{}", daemon.log());
    assert!(stopped.took < Duration::from_secs(2), "segid took {:?} to stop", stopped.took);
    assert_eq!(stopped.status.and_then(|s| s.code()), Some(0), "{stopped:?}\n{}", daemon.log());
    assert!(!daemon.socket().exists(), "the socket file is left behind");
}

#[test]
fn a_sandbox_step_that_fails_after_fork_is_ie_not_the_programs_fault() {
    // More open files than the kernel allows (fs.nr_open): setrlimit fails in the program's
    // process just before exec. That is the sandbox failing, not the program.
    let default = fs::read_to_string(segi_tests::workspace_dir().join("policies/default.toml")).unwrap();
    let broken = default.replace("open_files = 256", "open_files = 1073741824");
    assert_ne!(broken, default, "default.toml no longer sets open_files = 256");
    let daemon = Daemon::start_with_policies(&[("huge_nofile", &broken)]);
    let run = daemon.run_json(&["--policy", "huge_nofile", "--", "true"]);
    assert_eq!(run.result.verdict, Verdict::IE, "{}", run.describe());
    let message = run.result.message.clone().unwrap_or_default();
    assert!(message.contains("program setup"), "{message}");
    assert_eq!(daemon.run_json(&["--", "true"]).result.verdict, Verdict::OK);
}

#[test]
fn bad_service_flags_are_refused_at_start_naming_the_flag() {
    let dir = segi_tests::temp_dir("bad-flags");
    for (flag, value) in [
        ("--socket-group", "no-such-group-segi"),
        ("--stop-timeout", "-1"),
        ("--stop-timeout", "soon"),
        ("--uid-base", "-5"),
        ("--max-runs", "many"),
    ] {
        let output = run_with_timeout(
            Command::new(binary("segid"))
                .arg("--socket")
                .arg(dir.join("segid.sock"))
                .arg("--policies")
                .arg(segi_tests::workspace_dir().join("policies"))
                .arg("--state-dir")
                .arg(dir.join("state"))
                .arg(format!("{flag}={value}"))
                .stdin(Stdio::null()),
            Duration::from_secs(10),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(output.status.code(), Some(0), "{flag}={value} was accepted: {stderr}");
        assert!(
            stderr.contains(flag.trim_start_matches('-')),
            "{flag}={value}: the error should name the flag: {stderr}"
        );
        assert!(!dir.join("segid.sock").exists(), "{flag}={value}: a socket was created");
    }
}
