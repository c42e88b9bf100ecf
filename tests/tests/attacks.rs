//! Attacks that must fail. Each is a real program run in the sandbox of the shared daemon, and
//! each test asserts the specific way it fails (not just "not OK"), and that the host saw
//! nothing of it.

use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use segi_tests::{compile_c, host, mapping, poll_until, workspace_dir, Daemon, JsonRun, LimitKind, Verdict};

/// Where the setuid-root fixture lives. Not under /tmp: the sandbox mounts its own /tmp.
fn suid_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(format!("/var/tmp/{}suid-{}", segi_tests::TEMP_PREFIX, std::process::id()));
        if dir.exists() {
            segi_tests::cleanup::remove_dir_safely(&dir);
        }
        fs::create_dir_all(&dir).expect("create the setuid fixture directory");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let removed = dir.clone();
        segi_tests::cleanup::at_exit(move || segi_tests::cleanup::remove_dir_safely(&removed));
        // A copy of euid.c's program, owned by root (we are root) with the set-user-ID bit.
        let target = dir.join("euid");
        fs::copy(compile_c("euid"), &target).expect("copy euid");
        fs::set_permissions(&target, fs::Permissions::from_mode(0o4755)).unwrap();
        dir
    })
}

/// The shared daemon of this binary, with an extra policy `suid`: `default` plus a bind of
/// [`suid_dir`].
fn daemon() -> &'static Daemon {
    static DAEMON: OnceLock<&'static Daemon> = OnceLock::new();
    DAEMON.get_or_init(|| {
        let default = fs::read_to_string(workspace_dir().join("policies/default.toml")).expect("default.toml");
        let suid = default.replacen("bind = [", &format!("bind = [\n  \"{}\",", suid_dir().display()), 1);
        assert_ne!(suid, default, "default.toml has no `bind = [` to extend");
        Daemon::start_with_policies(&[("suid", &suid)]).into_shared()
    })
}

/// Runs the compiled `tests/programs/NAME.c` as `./NAME ARGS` with `FLAGS` before `--`.
fn run_program(name: &str, args: &[&str], flags: &[&str]) -> JsonRun {
    let file = mapping(name, &compile_c(name));
    let mut all: Vec<&str> = flags.to_vec();
    let command = format!("./{name}");
    all.extend(["--file", &file, "--", &command]);
    all.extend(args);
    daemon().run_json(&all)
}

fn sh(script: &str) -> JsonRun {
    daemon().run_json(&["--", "sh", "-c", script])
}

/// Kills and reaps a host process when dropped.
struct HostProcess(Child);

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn assert_sv_naming(run: &JsonRun, syscall: &str) {
    assert_eq!(run.result.verdict, Verdict::SV, "{}", run.describe());
    let message = run.result.message.clone().unwrap_or_default();
    assert!(message.contains(syscall), "the message {message:?} does not name `{syscall}`: {}", run.describe());
    assert_eq!(run.result.limit, None, "{}", run.describe());
    // The call never returned into the program.
    assert!(!run.stdout().contains("returned"), "the call returned: {}", run.describe());
}

// ---- processes ----

#[test]
fn fork_bomb_is_contained() {
    let started = Instant::now();
    let run = run_program("fork_bomb", &[], &["--processes", "10", "--time", "1", "--wall-time", "3"]);
    // It never exits by itself: only a limit ends it, and it ends within its wall limit.
    assert_eq!(run.result.verdict, Verdict::TLE, "{}", run.describe());
    assert!(matches!(run.result.limit, Some(LimitKind::CpuTime | LimitKind::WallTime)), "{}", run.describe());
    assert!(run.result.wall_time < 3.5, "{}", run.describe());
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
    // Nothing of it survives its result, and the daemon still serves.
    assert!(
        poll_until(Duration::from_secs(1), || host::processes_with_argv(&["./fork_bomb"]).is_empty()),
        "fork bomb processes outlived the run: {:?}",
        host::processes_with_argv(&["./fork_bomb"])
    );
    daemon().assert_alive();
}

#[test]
fn process_limit_stops_fork() {
    let run = run_program("fork_count", &[], &["--processes", "10"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let stdout = run.stdout();
    let made: u32 = stdout
        .strip_prefix("forked ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {}", run.describe()));
    // 10 processes at once, the program itself included.
    assert!((1..=9).contains(&made), "forked {made} children under --processes 10: {}", run.describe());
    assert!(stdout.trim_end().ends_with("error EAGAIN"), "{}", run.describe());
}

#[test]
fn thread_bomb_is_contained() {
    let run = run_program("thread_bomb", &[], &["--processes", "10"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let stdout = run.stdout();
    let made: u32 = stdout
        .strip_prefix("threads ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {}", run.describe()));
    // Threads count as processes (tasks): at most 9 besides the main thread.
    assert!((1..=9).contains(&made), "{made} threads under --processes 10: {}", run.describe());
    assert!(stdout.trim_end().ends_with("error EAGAIN"), "{}", run.describe());
    daemon().assert_alive();
}

// ---- the filesystem view ----

#[test]
fn host_secrets_are_not_visible() {
    let run = daemon().run_json(&["--", "cat", "/etc/shadow"]);
    assert_eq!(run.result.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(run.result.exit_code, Some(1), "{}", run.describe());
    assert_eq!(run.stdout(), "", "{}", run.describe());
    assert!(run.stderr_events().contains("No such file or directory"), "{}", run.describe());

    for path in ["/home", "/root"] {
        let run = daemon().run_json(&["--", "ls", path]);
        assert_eq!(run.result.verdict, Verdict::RE, "ls {path}: {}", run.describe());
        assert_eq!(run.result.exit_code, Some(2), "ls {path}: {}", run.describe());
        assert!(run.stderr_events().contains("No such file or directory"), "{}", run.describe());
    }
}

#[test]
fn nothing_of_the_host_but_the_policy_binds_is_visible() {
    let d = daemon();
    let mut paths: Vec<String> = [
        "/etc/shadow",
        "/etc/hostname",
        "/etc/hosts",
        "/etc/sudoers",
        "/home",
        "/root",
        "/work",
        "/var",
        "/run",
        "/sys",
        "/opt",
        "/mnt",
        "/srv",
        "/boot",
        "/dev/sda",
        "/dev/vda",
        "/dev/mem",
        "/dev/kmsg",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    // The daemon's own directory, socket and state, and this test's programs.
    for own in [d.dir().to_path_buf(), d.socket(), d.state_dir(), compile_c("hello")] {
        paths.push(own.display().to_string());
    }
    let script = format!("for p in {}; do test -e \"$p\" && echo \"visible: $p\"; done; exit 0", paths.join(" "));
    let run = sh(&script);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "", "host paths visible in the sandbox: {}", run.describe());

    // The root holds the policy's binds and the sandbox's own mounts (and the empty mount points
    // of an evaluation's inputs), nothing else.
    let run = daemon().run_json(&["--", "ls", "-A", "/"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let allowed = [
        "bin",
        "box",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "proc",
        "sbin",
        "tmp",
        "usr",
        "problem",
        "submission",
        "grader",
        "workspace",
    ];
    let unexpected: Vec<String> = run.stdout().lines().filter(|e| !allowed.contains(e)).map(String::from).collect();
    assert!(unexpected.is_empty(), "unexpected entries in /: {unexpected:?}\n{}", run.describe());

    // /etc has only what the policy binds.
    let run = daemon().run_json(&["--", "ls", "-A", "/etc"]);
    let allowed =
        ["alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf"];
    let unexpected: Vec<String> = run.stdout().lines().filter(|e| !allowed.contains(e)).map(String::from).collect();
    assert!(unexpected.is_empty(), "unexpected entries in /etc: {unexpected:?}\n{}", run.describe());
}

#[test]
fn dev_is_minimal() {
    let run = sh("for d in null zero full random urandom; do test -c /dev/$d || echo missing: $d; done; ls -A /dev");
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let stdout = run.stdout();
    assert!(!stdout.contains("missing"), "{}", run.describe());
    let allowed = [
        "null", "zero", "full", "random", "urandom", "fd", "stdin", "stdout", "stderr", "shm", "pts", "ptmx", "mqueue",
        "core",
    ];
    let unexpected: Vec<&str> = stdout.lines().filter(|e| !allowed.contains(e)).collect();
    assert!(unexpected.is_empty(), "unexpected entries in /dev: {unexpected:?}\n{}", run.describe());
    // The devices work.
    let run =
        sh("head -c 4 /dev/zero | od -An -tu1; head -c 16 /dev/urandom | wc -c; echo x > /dev/null && echo null ok");
    assert_eq!(run.stdout(), "   0   0   0   0\n16\nnull ok\n", "{}", run.describe());
}

#[test]
fn writing_outside_box_and_tmp_fails() {
    let targets = [
        "/segi-x",
        "/usr/segi-x",
        "/usr/bin/segi-x",
        "/etc/segi-x",
        "/etc/passwd",
        "/bin/segi-x",
        "/lib/segi-x",
        "/dev/segi-x",
        "/proc/segi-x",
        "/proc/sys/kernel/hostname",
    ];
    let script = format!(
        "for p in {}; do (echo x >> \"$p\") 2>/dev/null && echo \"wrote: $p\"; done; \
         echo ok > /box/x && echo ok > /tmp/x && cat /box/x /tmp/x",
        targets.join(" ")
    );
    let run = sh(&script);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "ok\nok\n", "writes outside /box and /tmp succeeded: {}", run.describe());
    for host_path in ["/segi-x", "/usr/segi-x", "/usr/bin/segi-x", "/etc/segi-x", "/bin/segi-x", "/lib/segi-x"] {
        assert!(!std::path::Path::new(host_path).exists(), "{host_path} appeared on the host");
    }
    // Also with the calls programs use most (touch, mkdir), one by one.
    for command in [["touch", "/usr/x"], ["touch", "/x"], ["mkdir", "/etc/x"]] {
        let run = daemon().run_json(&["--", command[0], command[1]]);
        assert_eq!(run.result.verdict, Verdict::RE, "{command:?}: {}", run.describe());
        assert_eq!(run.result.exit_code, Some(1), "{command:?}: {}", run.describe());
    }
}

#[test]
fn tmp_is_size_limited() {
    // policies/default.toml: tmp_size = 64M.
    let run =
        daemon().run_json(&["--file-size", "1G", "--", "dd", "if=/dev/zero", "of=/tmp/fill", "bs=1M", "count=100"]);
    assert_eq!(run.result.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(run.result.exit_code, Some(1), "{}", run.describe());
    assert!(run.stderr_events().contains("No space left on device"), "{}", run.describe());
}

#[test]
fn proc_is_fresh_and_shows_only_the_run() {
    let run = sh("echo $$; ls /proc | grep -c '^[0-9]'");
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let stdout = run.stdout();
    let mut lines = stdout.lines();
    let pid: u32 = lines.next().and_then(|l| l.parse().ok()).unwrap_or_else(|| panic!("{}", run.describe()));
    let count: u32 = lines.next().and_then(|l| l.parse().ok()).unwrap_or_else(|| panic!("{}", run.describe()));
    assert_ne!(pid, 1, "the program is pid 1 (no reaper above it): {}", run.describe());
    assert!(pid < 10, "pid {pid}: not a fresh pid namespace: {}", run.describe());
    // A reaper, sh, ls and grep at most.
    assert!(count <= 5, "{count} processes visible in /proc: {}", run.describe());
}

// ---- privileges ----

#[test]
fn no_capabilities_and_no_new_privs() {
    let run = daemon().run_json(&["--", "cat", "/proc/self/status"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let status = run.stdout();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in /proc/self/status:\n{status}"))
    };
    for cap in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        assert_eq!(field(cap), "0000000000000000", "{cap} is not empty:\n{status}");
    }
    assert_eq!(field("NoNewPrivs:"), "1", "{status}");
    // 2 = a seccomp filter is installed.
    assert_eq!(field("Seccomp:"), "2", "{status}");
    // Not root on the host: the ids are mapped in a user namespace.
    let uids: Vec<u32> = field("Uid:").split_whitespace().filter_map(|u| u.parse().ok()).collect();
    assert_eq!(uids.len(), 4, "{status}");
    assert!(uids.iter().all(|&u| u == uids[0]), "real, effective, saved and fs uid differ:\n{status}");
}

#[test]
fn user_namespace_maps_one_unprivileged_id() {
    let run = daemon().run_json(&["--", "cat", "/proc/self/uid_map"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let lines: Vec<Vec<u64>> =
        run.stdout().lines().map(|l| l.split_whitespace().filter_map(|f| f.parse().ok()).collect()).collect();
    assert_eq!(lines.len(), 1, "uid_map should map one range: {}", run.describe());
    let (outside, count) = (lines[0][1], lines[0][2]);
    assert_ne!(outside, 0, "the sandbox's uid is host root: {}", run.describe());
    assert_eq!(count, 1, "more than one host uid mapped: {}", run.describe());
}

#[test]
fn setuid_binary_does_not_elevate() {
    let fixture = suid_dir().join("euid");
    // Control: outside the sandbox, the fixture really is setuid root (run as nobody, it
    // gets euid 0), so the sandbox's answer below means something.
    let control =
        Command::new("setpriv").args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&fixture).output();
    if let Ok(control) = control {
        let text = String::from_utf8_lossy(&control.stdout);
        assert!(text.starts_with("uid=65534 euid=0\n"), "the setuid fixture does not work on the host: {text:?}");
    }

    let path = fixture.display().to_string();
    let run = daemon().run_json(&["--policy", "suid", "--", &path]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let stdout = run.stdout();
    let first = stdout.lines().next().unwrap_or_else(|| panic!("{}", run.describe()));
    let ids: Vec<&str> = first.split(' ').filter_map(|kv| kv.split_once('=').map(|(_, v)| v)).collect();
    assert_eq!(ids.len(), 2, "{}", run.describe());
    assert_eq!(ids[0], ids[1], "the set-user-ID bit changed the effective uid: {}", run.describe());
    assert!(stdout.contains("setuid0=failed"), "the program became root: {}", run.describe());
}

// ---- network and sockets ----

#[test]
fn tcp_connect_to_a_host_listener_fails() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a host listener");
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let run = run_program("connect_tcp", &[&port], &[]);
    assert_eq!(run.result.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(run.result.exit_code, Some(1), "{}", run.describe());
    assert!(run.stdout().starts_with("connect failed: "), "{}", run.describe());
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host listener saw a connection from the sandbox: {other:?}"),
    }
}

#[test]
fn only_loopback_interface() {
    let run = daemon().run_json(&["--", "cat", "/proc/net/dev"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    let interfaces: Vec<String> =
        run.stdout().lines().skip(2).filter_map(|l| l.split(':').next()).map(|name| name.trim().to_owned()).collect();
    assert_eq!(interfaces, ["lo"], "{}", run.describe());
}

#[test]
fn daemon_socket_is_unreachable() {
    let socket = daemon().socket().display().to_string();
    let run = run_program("connect_unix", &[&socket], &[]);
    assert_eq!(run.result.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(run.result.exit_code, Some(1), "{}", run.describe());
    assert!(run.stdout().starts_with("connect failed: "), "{}", run.describe());
}

#[test]
fn abstract_socket_on_the_host_is_unreachable() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("{}abstract-{}", segi_tests::TEMP_PREFIX, std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&address).expect("bind an abstract socket");
    listener.set_nonblocking(true).unwrap();
    // Control: the host itself can connect (so the program's way of connecting is right).
    let control = Command::new(compile_c("connect_unix")).arg(format!("@{name}")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&control.stdout), "CONNECTED\n");
    let _ = listener.accept().expect("the control connection");

    let run = run_program("connect_unix", &[&format!("@{name}")], &[]);
    assert_eq!(run.result.verdict, Verdict::RE, "{}", run.describe());
    assert_eq!(run.result.exit_code, Some(1), "{}", run.describe());
    assert!(run.stdout().starts_with("connect failed: "), "{}", run.describe());
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host's abstract socket saw a connection from the sandbox: {other:?}"),
    }
}

#[test]
fn hostname_differs_from_the_host() {
    let host_name = fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let run = daemon().run_json(&["--", "cat", "/proc/sys/kernel/hostname"]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_ne!(run.stdout().trim(), host_name.trim(), "the sandbox shares the host's UTS namespace");
}

// ---- other processes ----

#[test]
fn ptrace_is_sv() {
    let run = run_program("ptrace_child", &["attach"], &[]);
    assert_sv_naming(&run, "ptrace");
    let run = run_program("ptrace_child", &["traceme"], &[]);
    assert_sv_naming(&run, "ptrace");
}

#[test]
fn foreign_syscall_abis_are_refused() {
    // ptrace through the i386 and x32 entry points: killed (SV), or at least not executed.
    for abi in ["i386", "x32"] {
        let run = run_program("foreign_arch", &[abi], &[]);
        if run.result.verdict == Verdict::SV {
            continue;
        }
        let stdout = run.stdout();
        assert!(
            run.result.verdict == Verdict::OK && stdout.starts_with(&format!("{abi} ptrace returned -")),
            "ptrace through the {abi} ABI was neither killed nor refused: {}",
            run.describe()
        );
    }
}

#[test]
fn killing_a_host_process_fails() {
    let sleeper =
        HostProcess(Command::new("sleep").arg("1000").stdin(Stdio::null()).spawn().expect("spawn a host sleep"));
    let pid = sleeper.0.id().to_string();
    let run = run_program("kill_pid", &[&pid], &[]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), format!("kill {pid}: ESRCH\n"), "{}", run.describe());

    // kill(-1): every process the program may signal.
    let run = run_program("kill_pid", &["-1"], &[]);
    assert!(run.result.verdict != Verdict::IE, "{}", run.describe());

    let mut sleeper = sleeper;
    assert!(matches!(sleeper.0.try_wait(), Ok(None)), "the host process was killed from inside the sandbox");
    daemon().assert_alive();
}

// ---- kernel surface ----

#[test]
fn mount_is_sv() {
    let run = run_program("mount_tmp", &["mount"], &[]);
    assert_sv_naming(&run, "mount");
    let run = run_program("mount_tmp", &["umount"], &[]);
    assert_sv_naming(&run, "umount");
}

#[test]
fn unshare_is_sv() {
    let run = run_program("unshare_user", &["unshare"], &[]);
    assert_sv_naming(&run, "unshare");
}

#[test]
fn clone_with_namespace_flags_is_sv() {
    let run = run_program("unshare_user", &["clone"], &[]);
    assert_sv_naming(&run, "clone");
}

#[test]
fn setns_is_sv() {
    let run = run_program("unshare_user", &["setns"], &[]);
    assert_sv_naming(&run, "setns");
}

#[test]
fn only_standard_fds_are_open() {
    let run = run_program("list_fds", &[], &[]);
    assert_eq!(run.result.verdict, Verdict::OK, "{}", run.describe());
    assert_eq!(run.stdout(), "0\n1\n2\n", "file descriptors leaked into the sandbox: {}", run.describe());
}

// ---- collect ----

#[test]
fn collect_of_a_symlink_out_of_box_is_an_error() {
    let dir = segi_tests::temp_dir("collect-link");
    let link = dir.join("link");
    let through_dir = dir.join("passwd");
    let run = daemon().run_json(&[
        "--collect",
        &mapping("link", &link),
        "--collect",
        &mapping("etc/passwd", &through_dir),
        "--",
        "sh",
        "-c",
        "ln -s /etc/passwd link && ln -s /etc etc",
    ]);
    let collected = run.result_json["collected"].as_array().cloned().unwrap_or_default();
    assert_eq!(collected.len(), 2, "one entry per --collect expected: {}", run.describe());
    for entry in &collected {
        assert!(entry.get("content").is_none(), "a link out of the box was followed: {entry}");
        assert!(entry["error"].as_str().is_some_and(|e| !e.is_empty()), "no error for {entry}");
    }
    for host_file in [&link, &through_dir] {
        let content = fs::read_to_string(host_file).unwrap_or_default();
        assert!(!content.contains("root:"), "{} received /etc/passwd", host_file.display());
    }
}

#[test]
fn collect_of_a_symlink_over_the_raw_protocol_is_an_error() {
    let mut conn = daemon().raw_connect();
    let (_, response) = conn.call(
        "run",
        serde_json::json!({
            "command": ["sh", "-c", "ln -s /etc/passwd link; ln -s /box/../etc/passwd link2"],
            "collect": ["link", "link2"],
        }),
    );
    let collected =
        response["result"]["collected"].as_array().unwrap_or_else(|| panic!("no collected list in {response}")).clone();
    assert_eq!(collected.len(), 2, "{response}");
    for entry in collected {
        assert!(entry.get("content").is_none(), "a link out of the box was followed: {entry}");
        assert!(entry["error"].as_str().is_some_and(|e| !e.is_empty()), "no error for {entry}");
    }
}
