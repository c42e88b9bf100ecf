//! After a batch of nasty runs and a shutdown of the daemon with a run still going, nothing is
//! left: no process, cgroup, mount, temporary file, state or file descriptor.
//!
//! This binary has one test and its own daemon, so that what it sees on the host is its own.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use segi_tests::{compile_c, host, mapping, poll_until, Daemon, Verdict, SANDBOX_UIDS};

#[test]
fn nothing_is_left_after_nasty_runs_and_shutdown() {
    // What was there before (another segid on the host may have its own).
    let cgroups_before = host::segi_cgroups();
    let temp_before = host::segi_temp_entries();
    let sandbox_pids_before: BTreeSet<i32> = host::processes_with_uid_in(SANDBOX_UIDS).iter().map(|p| p.pid).collect();

    // Compile first: the programs' directory is this process's, not a leftover.
    let flood = mapping("flood", &compile_c("flood"));
    let fork_bomb = mapping("fork_bomb", &compile_c("fork_bomb"));
    let memory = mapping("memory_touch", &compile_c("memory_touch"));

    let daemon = Daemon::start();
    let dir = daemon.dir().to_path_buf();
    let daemon_pid = daemon.pid();
    let dir_text = dir.display().to_string();

    // A first run, so that everything the daemon sets up once is set up; then its fds.
    let warm = daemon.run_json(&["--", "true"]);
    assert_eq!(warm.result.verdict, Verdict::OK, "{}", warm.describe());
    // segid keeps one init cloned ahead of the next run (its pidfd and channel); count the
    // fds once that init is there.
    let fds_before = daemon.idle_fds();

    let batch: Vec<(&str, Vec<String>, Verdict)> = vec![
        (
            "background sleepers killed by the wall time",
            strings(&[
                "--wall-time",
                "1",
                "--",
                "sh",
                "-c",
                "sleep 1000 & sleep 1000 & setsid sleep 1000 & (sleep 1000 &); sleep 1000",
            ]),
            Verdict::TLE,
        ),
        (
            "an orphan outliving a program that exits 0",
            strings(&["--", "sh", "-c", "trap '' HUP TERM; (setsid sleep 1000 &); exit 0"]),
            Verdict::OK,
        ),
        (
            "fork bomb",
            strings(&[
                "--processes",
                "20",
                "--time",
                "1",
                "--wall-time",
                "3",
                "--file",
                &fork_bomb,
                "--",
                "./fork_bomb",
            ]),
            Verdict::TLE,
        ),
        ("output flood", strings(&["--output", "1M", "--file", &flood, "--", "./flood", "1024"]), Verdict::OLE),
        ("memory limit", strings(&["--memory", "64M", "--file", &memory, "--", "./memory_touch", "200"]), Verdict::MLE),
        (
            "files and /tmp filled",
            strings(&[
                "--",
                "sh",
                "-c",
                "dd if=/dev/zero of=/tmp/f bs=1M count=20 2>/dev/null; dd if=/dev/zero of=f bs=1M count=20 2>/dev/null",
            ]),
            Verdict::OK,
        ),
    ];
    let daemon_ref = &daemon;
    thread::scope(|scope| {
        let handles: Vec<_> = batch
            .iter()
            .map(|(what, args, verdict)| {
                scope.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let run = daemon_ref.run_json(&args);
                    assert_eq!(run.result.verdict, *verdict, "{what}: {}", run.describe());
                })
            })
            .collect();
        for handle in handles {
            handle.join().expect("a run of the batch failed");
        }
    });

    // Every run is over: the daemon holds no more file descriptors than after the first run.
    let settled = poll_until(Duration::from_secs(3), || host::open_fds(daemon.pid()).len() <= fds_before.len());
    let fds_after = host::open_fds(daemon.pid());
    let mut problems = Vec::new();
    if !settled {
        problems.push(format!(
            "the daemon holds {} file descriptors after the batch, {} before:\nbefore: {fds_before:#?}\nafter: {fds_after:#?}",
            fds_after.len(),
            fds_before.len()
        ));
    }
    // ... and no process of a finished run is alive.
    let alive: Vec<String> = host::processes_with_argv(&["sleep", "1000"]).iter().map(|p| p.to_string()).collect();
    if !alive.is_empty() {
        problems.push(format!("processes of finished runs still alive: {alive:#?}"));
    }

    // A run still going when the daemon is told to stop.
    let mut inflight = daemon
        .client_command(&[
            "--json",
            "run",
            "--wall-time",
            "60",
            "--",
            "sh",
            "-c",
            "echo started; sleep 1001 & exec sleep 1002",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn segi-client");
    let mut lines = BufReader::new(inflight.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(first.contains("started"), "the in-flight run did not start: {first:?}");

    let stopped = daemon.stop().expect("the daemon was running");
    if !stopped.graceful {
        problems.push(format!(
            "segid did not exit within 5 s of SIGTERM with a run going on (killed after {:?}); its log:\n{}",
            stopped.took,
            daemon.log()
        ));
    }
    // The in-flight client is told (it does not hang).
    let client_deadline = Instant::now() + Duration::from_secs(10);
    let client_status = loop {
        if let Some(status) = inflight.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= client_deadline {
            let _ = inflight.kill();
            let _ = inflight.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    if client_status.is_none() {
        problems.push("segi-client with a run in flight did not exit within 10 s of the daemon's stop".into());
    }

    // Let the kernel finish reaping what was killed; then nothing may be left. (The wait ends
    // as soon as everything is gone.)
    let leftovers = || {
        let mut found = Vec::new();
        for p in host::processes_with_uid_in(SANDBOX_UIDS) {
            let cgroups = std::fs::read_to_string(format!("/proc/{}/cgroup", p.pid)).unwrap_or_default();
            if !sandbox_pids_before.contains(&p.pid)
                && !another_live_segid(&cgroups, daemon_pid)
                && !warm_init_of_another_segid(p.pid, daemon_pid)
            {
                found.push(format!("sandbox-uid process: {p}"));
            }
        }
        for p in host::processes_mentioning(&dir_text) {
            found.push(format!("process mentioning {dir_text}: {p}"));
        }
        for argv in [["sleep", "1000"], ["sleep", "1001"], ["sleep", "1002"]] {
            for p in host::processes_with_argv(&argv) {
                found.push(format!("process of a run: {p}"));
            }
        }
        for p in host::processes_with_argv(&["./fork_bomb"]) {
            found.push(format!("fork bomb process: {p}"));
        }
        for cgroup in host::segi_cgroups().difference(&cgroups_before) {
            if another_live_segid(&cgroup.display().to_string(), daemon_pid) {
                continue;
            }
            found.push(format!("cgroup: {}", cgroup.display()));
        }
        for line in host::mounts_mentioning(&dir_text) {
            found.push(format!("mount: {line}"));
        }
        found
    };
    poll_until(Duration::from_secs(2), || leftovers().is_empty());
    problems.extend(leftovers());

    let state = daemon.state_dir();
    if let Ok(entries) = std::fs::read_dir(&state) {
        let names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        if !names.is_empty() {
            problems.push(format!("the state directory {} is not empty: {names:?}", state.display()));
        }
    }
    let own_prefix = format!("{}{}-", segi_tests::TEMP_PREFIX, std::process::id());
    for entry in host::segi_temp_entries().difference(&temp_before) {
        let name = entry.file_name().unwrap_or_default().to_string_lossy();
        if !name.starts_with(&own_prefix) && !another_live_test(&name) {
            problems.push(format!("new temporary entry: {}", entry.display()));
        }
    }

    drop(daemon);
    assert!(problems.is_empty(), "left behind:\n{}", problems.join("\n"));
}

/// Whether `text` (a cgroup path) names a run cgroup `segi-<pid>-<n>` of a segid other than
/// ours that is still running: another developer's daemon on the same host, not our leftover.
fn another_live_segid(text: &str, ours: u32) -> bool {
    text.split(['/', '\n', ':']).any(|part| {
        let Some(rest) = part.strip_prefix("segi-") else { return false };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { return false };
        pid != ours && std::path::Path::new(&format!("/proc/{pid}")).exists()
    })
}

/// Whether `pid` is an init another running segid keeps warm for its next run: a child of
/// a zygote, itself a child of a live segid that is not ours. (A warm init is in no run
/// cgroup yet, so `another_live_segid` cannot tell.)
fn warm_init_of_another_segid(pid: i32, ours: u32) -> bool {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let Some(zygote) = parent(pid as u32) else { return false };
    let Some(segid) = parent(zygote) else { return false };
    segid != ours && comm(zygote).trim() == "segid" && comm(segid).trim() == "segid"
}

/// Whether a temporary entry belongs to another test process that is still running (this
/// suite's `segi-test-<pid>-...` or the client's `segi-client-test-<pid>...`).
fn another_live_test(name: &str) -> bool {
    let rest = name.strip_prefix(segi_tests::TEMP_PREFIX).or_else(|| name.strip_prefix("segi-client-test-"));
    let Some(pid) = rest.and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    pid != std::process::id() && std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}
