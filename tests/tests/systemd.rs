//! segid as a systemd service: what `make install` stages (binaries, policies, units with their
//! paths filled in, the sysusers.d snippet), `systemd-analyze verify` on the staged units, and
//! socket activation for real: `systemd-socket-activate` passes segid its listening socket as
//! fd 3 with LISTEN_FDS/LISTEN_PID, exactly as systemd does for `segid.socket`.
//!
//! systemd is not PID 1 on the machines these tests run on, so the units are never started
//! here. Instead, the file-system side of the unit's hardening (ProtectSystem=strict and the
//! rest) and its credentials (User=, an empty CapabilityBoundingSet=, NoNewPrivileges=) are
//! rebuilt with unshare(1) and setpriv(1) around a real segid, which must still run programs.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use segi_tests::daemon::run_with_timeout;
use segi_tests::{binary, host, poll_until, workspace_dir};

/// `make install-files` copies a few files; it never builds.
const MAKE_TIMEOUT: Duration = Duration::from_secs(120);
/// systemd-analyze loads the units and their default dependencies; a second or two at most.
const ANALYZE_TIMEOUT: Duration = Duration::from_secs(60);
/// One segi-client invocation against the activated segid.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// segid's stop: its default --stop-timeout is 10 s with a run going, at once when idle.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

const SOCKET_ACTIVATE: &str = "/usr/bin/systemd-socket-activate";

/// Every file `make install-files` must stage, relative to DESTDIR, with PREFIX=/usr.
const STAGED: &[&str] = &[
    "usr/bin/segid",
    "usr/bin/segi-client",
    "usr/share/segi/policies/default.toml",
    "usr/share/segi/policies/compile.toml",
    "usr/share/segi/policies/evaluator.toml",
    "usr/share/segi/policies/seccomp/deny.toml",
    "usr/lib/systemd/system/segid.socket",
    "usr/lib/systemd/system/segid.service",
    "usr/lib/sysusers.d/segi.conf",
    "usr/share/doc/segi/operations.md",
];

/// `make -C <workspace> TARGET DESTDIR=<destdir> PREFIX=/usr`, with RELEASE pointed at the
/// binaries the tests use (they may live outside target/release: CARGO_TARGET_DIR,
/// SEGI_BIN_DIR). `install-files` is `install` without its `build` prerequisite: the binaries
/// are built before the tests run, and a cargo build from inside a test would be slow and would
/// contend for the build directory's lock.
fn make(target: &str, destdir: &Path) -> Output {
    let bin_dir = binary("segid").parent().expect("segid has a directory").to_path_buf();
    assert!(binary("segi-client").starts_with(&bin_dir), "segid and segi-client must be in one directory");
    let mut command = Command::new("make");
    command
        .arg("-C")
        .arg(workspace_dir())
        .arg("--no-print-directory")
        .arg(target)
        .arg(format!("DESTDIR={}", destdir.display()))
        .arg("PREFIX=/usr")
        .arg(format!("RELEASE={}", bin_dir.display()))
        .stdin(Stdio::null());
    // A `make` invoked from `make test` passes its flags down (MAKEFLAGS); they must not leak
    // into this sub-make (a -j jobserver of the outer make, or its variable overrides).
    command.env_remove("MAKEFLAGS").env_remove("MAKELEVEL").env_remove("MFLAGS");
    run_with_timeout(&mut command, MAKE_TIMEOUT)
}

fn describe(output: &Output) -> String {
    format!(
        "exit status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// One staged install (DESTDIR) shared by the tests of this file: `make install-files` runs once.
fn staged() -> &'static Path {
    static DESTDIR: OnceLock<PathBuf> = OnceLock::new();
    DESTDIR.get_or_init(|| {
        // A directory of the test's own, as an unprivileged packager's staging dir would be.
        let destdir = segi_tests::temp_dir("destdir");
        let output = make("install-files", &destdir);
        assert!(output.status.success(), "make install-files failed:\n{}", describe(&output));
        destdir
    })
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The value of every `Key=` line of a unit file (comments and sections ignored).
fn unit_values(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with(';'))
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_owned())
        .collect()
}

fn unit_value(text: &str, key: &str) -> String {
    let values = unit_values(text, key);
    assert_eq!(values.len(), 1, "expected exactly one {key}= line, found {values:?} in:\n{text}");
    values.into_iter().next().unwrap_or_default()
}

#[test]
fn make_install_stages_binaries_policies_units_and_sysusers() {
    let destdir = staged();
    for file in STAGED {
        let path = destdir.join(file);
        assert!(path.is_file(), "make install-files did not stage {file} (looked for {})", path.display());
    }
    for bin in ["segid", "segi-client"] {
        let mode = fs::metadata(destdir.join("usr/bin").join(bin)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "{bin} is installed with mode {mode:o}");
    }
    for unit in ["segid.socket", "segid.service"] {
        let path = destdir.join("usr/lib/systemd/system").join(unit);
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644, "{unit} is installed with mode {mode:o}");
        let text = read(&path);
        assert!(!text.contains('@'), "{unit} still has a placeholder after install:\n{text}");
        // The staging directory is only where files are put together; the units must name
        // the paths they will have once installed.
        assert!(
            !text.contains(&*destdir.to_string_lossy()),
            "{unit} names the staging directory (DESTDIR) instead of the install paths:\n{text}"
        );
        assert_eq!(
            unit_value(&text, "Documentation"),
            "file:/usr/share/doc/segi/operations.md",
            "{unit}: Documentation= must point at the installed docs"
        );
    }
    assert!(
        !destdir.join("usr/lib/systemd/system/segid.socket.tmp").exists(),
        "make install-files left a temporary file behind"
    );
}

#[test]
fn the_installed_units_match_what_segid_expects() {
    let dir = staged().join("usr/lib/systemd/system");
    let socket = read(&dir.join("segid.socket"));
    let service = read(&dir.join("segid.service"));

    // segid takes exactly one socket, as fd 3 (daemon/src/main.rs, systemd_listen_fd), and
    // serves every connection itself: one ListenStream, Accept=no.
    assert_eq!(unit_value(&socket, "ListenStream"), "/run/segi/segid.sock");
    for other in ["ListenDatagram", "ListenSequentialPacket", "ListenFIFO", "ListenNetlink"] {
        assert!(unit_values(&socket, other).is_empty(), "segid.socket must have no {other}=");
    }
    assert_eq!(unit_value(&socket, "Accept"), "no");
    assert_eq!(unit_value(&socket, "SocketMode"), "0660");
    assert_eq!(unit_value(&socket, "SocketGroup"), "segi");
    assert_eq!(unit_value(&socket, "RemoveOnStop"), "yes");

    let exec_start = unit_value(&service, "ExecStart");
    let argv: Vec<&str> = exec_start.split_whitespace().collect();
    assert_eq!(argv.first(), Some(&"/usr/bin/segid"), "ExecStart= of PREFIX=/usr: {exec_start}");
    let arg = |flag: &str| argv.iter().position(|a| *a == flag).and_then(|i| argv.get(i + 1)).copied();
    assert_eq!(arg("--policies"), Some("/usr/share/segi/policies"), "ExecStart=: {exec_start}");
    assert_eq!(arg("--state-dir"), Some("/var/lib/segi/state"), "ExecStart=: {exec_start}");
    assert!(exec_start.contains("/var/lib/segi/") && unit_value(&service, "StateDirectory") == "segi");
    assert_eq!(unit_value(&service, "Type"), "simple", "segid does not speak sd_notify");
    assert_eq!(unit_value(&service, "Requires"), "segid.socket");
    assert_eq!(unit_value(&service, "After"), "segid.socket");
    assert_eq!(unit_value(&service, "User"), "segi");
    assert_eq!(unit_value(&service, "Group"), "segi");
    assert_eq!(unit_value(&service, "Delegate"), "yes");
    // Rootless segid needs no capability; segid's zygote cannot shrink a bounding set itself.
    assert_eq!(unit_value(&service, "CapabilityBoundingSet"), "");
    assert_eq!(unit_value(&service, "KillMode"), "mixed", "segid cleans up its runs itself on SIGTERM");
    // Options that would break the sandbox (see the comments in segid.service).
    assert_eq!(unit_value(&service, "ProtectControlGroups"), "no");
    assert_eq!(unit_value(&service, "ProtectKernelTunables"), "no");
    for breaking in ["ProtectKernelLogs", "ProtectProc", "ProcSubset", "MemoryDenyWriteExecute", "RuntimeDirectory"] {
        assert!(unit_values(&service, breaking).is_empty(), "segid.service must not set {breaking}=");
    }
    // The user the unit names is the one the sysusers.d snippet creates.
    let sysusers = read(&staged().join("usr/lib/sysusers.d/segi.conf"));
    assert!(
        sysusers.lines().any(|l| l.split_whitespace().take(2).eq(["u", "segi"])),
        "segi.conf must create the user segi:\n{sysusers}"
    );
}

/// Runs `systemd-analyze verify` on `units` and returns its complaints: every output line
/// that mentions one of the units. An empty list means the units are clean.
fn verify(units: &[PathBuf]) -> (Output, Vec<String>) {
    let mut command = Command::new("systemd-analyze");
    // --man=no: Documentation= is a file: URL, and verify would otherwise look up man pages.
    command.arg("verify").arg("--man=no").args(units).env("SYSTEMD_LOG_COLOR", "0").stdin(Stdio::null());
    let output = run_with_timeout(&mut command, ANALYZE_TIMEOUT);
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let names: Vec<String> = units
        .iter()
        .flat_map(|u| [u.display().to_string(), u.file_name().unwrap().to_string_lossy().into_owned()])
        .collect();
    let mut complaints = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if names.iter().any(|n| line.contains(n.as_str())) || line.contains("segi") {
            complaints.push(line.to_owned());
        } else {
            // Only lines about other units (a broken unit elsewhere on the host that the
            // default dependencies pull in) are not our units' fault; show them, do not fail.
            eprintln!("systemd-analyze (not about segi's units): {line}");
        }
    }
    (output, complaints)
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// How the staged units are verified. `systemd-analyze verify` checks that ExecStart='s
/// binary exists, so the units as installed (ExecStart=/usr/bin/segid) cannot be verified
/// before they are installed for real. `--root=<DESTDIR>` does not help with systemd 252: it
/// resolves *everything* below the root, so the default dependencies (sysinit.target,
/// sockets.target, shutdown.target) and ExecReload='s /bin/kill are missing in a staging
/// directory and verify fails on them. So verify checks copies of the staged units, in a
/// directory of their own (verify adds it to the unit search path, so Requires=segid.socket
/// finds the copy of the socket), with one change: ExecStart='s /usr/bin/segid becomes the
/// staged binary. Everything else is verified exactly as installed.
fn verifiable_copies(dir: &Path) -> Vec<PathBuf> {
    let staged = staged();
    let staged_segid = staged.join("usr/bin/segid");
    fs::create_dir_all(dir).unwrap();
    ["segid.socket", "segid.service"]
        .iter()
        .map(|unit| {
            let text = read(&staged.join("usr/lib/systemd/system").join(unit));
            let rewritten =
                text.replace("ExecStart=/usr/bin/segid ", &format!("ExecStart={} ", staged_segid.display()));
            if *unit == "segid.service" {
                assert_ne!(
                    rewritten, text,
                    "segid.service has no `ExecStart=/usr/bin/segid ` to point at the staged binary"
                );
            }
            let copy = dir.join(unit);
            fs::write(&copy, rewritten).unwrap();
            copy
        })
        .collect()
}

#[test]
fn systemd_analyze_verify_accepts_the_installed_units() {
    if !have("systemd-analyze") {
        eprintln!("SKIPPED: systemd-analyze is not installed on this host");
        return;
    }
    let dir = segi_tests::temp_dir("verify");
    let units = verifiable_copies(&dir.join("units"));
    let (output, complaints) = verify(&units);
    assert!(
        output.status.success() && complaints.is_empty(),
        "systemd-analyze verify complains about segi's units:\n{}\n{}",
        complaints.join("\n"),
        describe(&output)
    );

    // The check above is not vacuous: the same verify, on a copy with one misspelt option,
    // reports it (systemd-analyze warns about unknown keys but still exits 0).
    let broken_dir = dir.join("broken");
    let mut broken = verifiable_copies(&broken_dir);
    let service = broken.pop().unwrap();
    let text = read(&service).replacen("[Service]\n", "[Service]\nDelegat=yes\n", 1);
    fs::write(&service, text).unwrap();
    broken.push(service);
    let (_, complaints) = verify(&broken);
    assert!(
        complaints.iter().any(|l| l.contains("Delegat")),
        "systemd-analyze verify did not report a misspelt key, so its silence proves nothing: {complaints:?}"
    );
}

#[test]
fn the_sysusers_snippet_creates_the_segi_user() {
    if !have("systemd-sysusers") {
        eprintln!("SKIPPED: systemd-sysusers is not installed on this host");
        return;
    }
    // --root=<DESTDIR>: read DESTDIR's sysusers.d (only segi.conf) against DESTDIR's (absent)
    // /etc/passwd; --dry-run: write nothing. systemd-sysusers exits 0 even on a malformed
    // line, so its messages are checked too.
    let destdir = staged();
    let mut command = Command::new("systemd-sysusers");
    command.arg(format!("--root={}", destdir.display())).arg("--dry-run").stdin(Stdio::null());
    let output = run_with_timeout(&mut command, ANALYZE_TIMEOUT);
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "systemd-sysusers --dry-run failed:\n{}", describe(&output));
    let complaints: Vec<&str> = text.lines().filter(|l| l.contains("segi.conf")).collect();
    assert!(complaints.is_empty(), "systemd-sysusers complains about segi.conf:\n{}", complaints.join("\n"));
    assert!(text.contains("Creating user 'segi'"), "segi.conf does not create the user segi:\n{text}");
    assert!(text.contains("Creating group 'segi'"), "segi.conf does not create the group segi:\n{text}");
    for entry in fs::read_dir(destdir).unwrap().flatten() {
        assert_ne!(entry.file_name(), "etc", "systemd-sysusers --dry-run wrote to {}", destdir.display());
    }
}

#[test]
fn make_uninstall_removes_what_install_staged() {
    let destdir = segi_tests::temp_dir("uninstall");
    let output = make("install-files", &destdir);
    assert!(output.status.success(), "make install-files failed:\n{}", describe(&output));
    let output = make("uninstall", &destdir);
    assert!(output.status.success(), "make uninstall failed:\n{}", describe(&output));
    let mut left = Vec::new();
    let mut stack = vec![destdir.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                left.push(entry.path());
            }
        }
    }
    assert!(left.is_empty(), "make uninstall left files behind: {left:?}");
}

/// A background process that is killed (and reaped) when dropped, whatever the test did.
struct Background {
    child: Option<Child>,
}

impl Background {
    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// SIGTERM, then up to `timeout` for it to exit. Returns its exit code (None: killed by a
    /// signal, or did not exit in time and was killed).
    fn terminate(&mut self, timeout: Duration) -> Result<Option<i32>, String> {
        let Some(mut child) = self.child.take() else { return Err("already stopped".into()) };
        // SAFETY: kill(2) on our own child, which has not been reaped (try_wait below reaps it).
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < timeout {
            if let Ok(Some(status)) = child.try_wait() {
                return Ok(status.code());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!("did not exit within {timeout:?} of SIGTERM; killed"))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn client(socket: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(binary("segi-client"));
    command.arg("--socket").arg(socket).args(args).stdin(Stdio::null()).env_remove("SEGID_SOCKET");
    run_with_timeout(&mut command, CLIENT_TIMEOUT)
}

#[test]
fn segid_serves_the_socket_systemd_passes_it() {
    assert!(
        Path::new(SOCKET_ACTIVATE).is_file(),
        "{SOCKET_ACTIVATE} is missing (package systemd); it plays systemd's part in this test"
    );
    let dir = segi_tests::temp_dir("activate");
    let socket = dir.join("s.sock");
    // segid is told another path: if it bound a socket of its own instead of taking fd 3,
    // this file would appear, and clients of s.sock would get no answer.
    let not_this = dir.join("segid-would-bind-this.sock");
    let log_path = dir.join("activate.log");
    let log = fs::File::create(&log_path).unwrap();
    // Without --accept, systemd-socket-activate binds and listens on s.sock, waits for the
    // first connection, then execs segid in its own process (same pid, so LISTEN_PID matches)
    // with the socket as fd 3 and LISTEN_FDS=1: what systemd does for segid.socket.
    let mut command = Command::new(SOCKET_ACTIVATE);
    command
        .arg("-l")
        .arg(&socket)
        .arg(binary("segid"))
        .arg("--socket")
        .arg(&not_this)
        .arg("--policies")
        .arg(workspace_dir().join("policies"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .env("NO_COLOR", "1")
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_PID")
        .env_remove("LISTEN_FDNAMES");
    // SAFETY: between fork and exec only prctl(2), which is async-signal-safe, is called.
    unsafe {
        command.pre_exec(|| {
            // If this test process dies without running Drop (killed by a timeout), so does
            // segid: SIGTERM, its ordinary stop.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut activator = Background { child: Some(command.spawn().expect("start systemd-socket-activate")) };
    let pid = activator.pid();
    let log_text = || fs::read_to_string(&log_path).unwrap_or_default();

    assert!(
        poll_until(Duration::from_secs(10), || socket.exists()),
        "systemd-socket-activate did not create {} within 10 s; its log:\n{}",
        socket.display(),
        log_text()
    );
    let argv0 = || {
        let cmdline = fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline.split('\0').next().unwrap_or_default().to_owned()
    };
    // Nothing has connected yet: the process is still the activator, segid is not started.
    assert_eq!(argv0(), SOCKET_ACTIVATE, "segid started before the first connection");

    // The first connection starts segid (it waits in the socket's backlog meanwhile).
    let ping = client(&socket, &["ping"]);
    assert_eq!(
        ping.status.code(),
        Some(0),
        "ping through the activated socket:\n{}\nlog:\n{}",
        describe(&ping),
        log_text()
    );
    assert!(String::from_utf8_lossy(&ping.stdout).contains("pong"), "ping: {}", describe(&ping));
    assert_eq!(
        argv0(),
        binary("segid").to_string_lossy(),
        "the activator's process should now be segid (exec, same pid, so LISTEN_PID matches)"
    );

    let run = client(&socket, &["run", "--", "/bin/echo", "hi"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "run through the activated socket:\n{}\nlog:\n{}",
        describe(&run),
        log_text()
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout), "hi\n", "{}", describe(&run));
    let json = client(&socket, &["--json", "run", "--", "/bin/true"]);
    let last = String::from_utf8_lossy(&json.stdout).lines().last().unwrap_or_default().to_owned();
    assert!(last.contains("\"verdict\":\"OK\""), "a second connection, --json: {}", describe(&json));

    assert!(!not_this.exists(), "segid bound {} instead of using the socket it was passed", not_this.display());

    // segid (the activator's pid since the exec) stops on SIGTERM, and takes its zygote and
    // every run's process with it.
    let needle = dir.to_string_lossy().into_owned();
    let stopped = activator.terminate(STOP_TIMEOUT);
    assert_eq!(stopped, Ok(Some(0)), "segid's stop after SIGTERM; its log:\n{}", log_text());
    let gone = poll_until(Duration::from_secs(5), || host::processes_mentioning(&needle).is_empty());
    let left: Vec<String> = host::processes_mentioning(&needle).iter().map(ToString::to_string).collect();
    assert!(gone, "processes of the activated segid outlived it:\n{}", left.join("\n"));
    assert!(!not_this.exists(), "segid left {} behind", not_this.display());
    // The socket file is systemd's (RemoveOnStop= in segid.socket), not segid's to remove.
    assert!(socket.exists(), "segid removed the socket file it did not create");
}

/// The mount side of segid.service's hardening, rebuilt with unshare(1) since systemd cannot
/// start the unit here: ProtectSystem=strict (every mount read-only but /dev, /proc, /sys and the
/// state directory), ProtectHome=read-only (covered by the former), PrivateTmp= (a private
/// /var/tmp; /tmp is left alone because this test's directory is in it) and
/// ProtectKernelModules= (an inaccessible /usr/lib/modules). Then setpriv(1) applies the
/// credentials: $1 is the directory to keep writable, the rest setpriv's arguments. Not rebuilt:
/// systemd's seccomp filters (LockPersonality=, RestrictRealtime=, SystemCallArchitectures=)
/// and the cgroup delegation.
const UNIT_LIKE_MOUNTS: &str = r#"
set -eu
keep=$1; shift
mount --bind "$keep" "$keep"
mount -t tmpfs -o mode=1777 segi-private-var-tmp /var/tmp
if [ -d /usr/lib/modules ]; then mount -t tmpfs -o ro,mode=000 segi-inaccessible /usr/lib/modules; fi
for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
    case $m in /dev|/dev/*|/proc|/proc/*|/sys|/sys/*|"$keep") continue ;; esac
    mount -o remount,bind,ro "$m" 2>/dev/null || echo "segi-test: cannot make $m read-only" >&2
done
for must_be_ro in / /usr /etc /var; do
    if [ -w "$must_be_ro" ]; then echo "segi-test: $must_be_ro is still writable" >&2; exit 97; fi
done
exec setpriv "$@"
"#;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// uid and gid 65534 (nobody) stand in for the unit's `segi`.
const UNIT_USER: u32 = 65534;

/// Starts segid under [`UNIT_LIKE_MOUNTS`] with `credentials` (setpriv arguments), runs a
/// couple of programs through it, stops it and checks that nothing of it is left.
fn run_under_the_units_mounts(tag: &str, owner: u32, credentials: &[&str]) {
    if !is_root() || !have("unshare") || !have("setpriv") {
        eprintln!("SKIPPED: rebuilding the unit's mounts needs root, unshare(1) and setpriv(1)");
        return;
    }
    let dir = segi_tests::temp_dir(tag);
    // /run/segi as segid.socket makes it, /var/lib/segi as StateDirectoryMode=0700 makes it.
    let run_dir = dir.join("run");
    let state = dir.join("state");
    for (path, mode) in [(&run_dir, 0o755), (&state, 0o700)] {
        fs::create_dir(path).unwrap();
        std::os::unix::fs::chown(path, Some(owner), Some(owner)).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let socket = run_dir.join("segid.sock");
    let log_path = dir.join("segid.log");
    let log = fs::File::create(&log_path).unwrap();
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--propagation", "private", "--", "sh", "-c", UNIT_LIKE_MOUNTS, "sh"])
        .arg(&dir)
        .args(credentials)
        .arg("--no-new-privs")
        .arg("--")
        .arg(binary("segid"))
        .arg("--socket")
        .arg(&socket)
        .arg("--policies")
        .arg(workspace_dir().join("policies"))
        .arg("--state-dir")
        .arg(&state)
        .env("NO_COLOR", "1")
        .env("HOME", "/")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    // SAFETY: between fork and exec only prctl(2), which is async-signal-safe, is called.
    unsafe {
        command.pre_exec(|| {
            // unshare, sh and setpriv all exec in this process, which ends as segid.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut segid = Background { child: Some(command.spawn().expect("start unshare")) };
    let log_text = || fs::read_to_string(&log_path).unwrap_or_default();
    let up = poll_until(Duration::from_secs(10), || {
        socket.exists() && client(&socket, &["ping"]).status.success()
            || segid.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))))
    });
    let log_now = log_text();
    if log_now.contains("user namespaces are unavailable") {
        eprintln!("SKIPPED: segid cannot create user namespaces here as this user:\n{log_now}");
        return;
    }
    assert!(up && socket.exists(), "segid did not come up under the unit's mounts; its log:\n{log_now}");
    assert!(!log_now.contains("segi-test:"), "the unit's mounts were not rebuilt:\n{log_now}");

    let run = client(&socket, &["run", "--", "/bin/echo", "hi"]);
    assert_eq!(run.status.code(), Some(0), "a run under the unit's mounts:\n{}\nlog:\n{}", describe(&run), log_text());
    assert_eq!(String::from_utf8_lossy(&run.stdout), "hi\n", "{}", describe(&run));
    // The sandbox's own /tmp, /box and /proc, on a host tree that is read-only for segid.
    let script = "echo x > /tmp/t && echo y > t && test -r /proc/1/status && echo fine";
    let run = client(&socket, &["run", "--", "/bin/sh", "-c", script]);
    assert_eq!(run.status.code(), Some(0), "writing /tmp and /box:\n{}\nlog:\n{}", describe(&run), log_text());
    assert_eq!(String::from_utf8_lossy(&run.stdout), "fine\n", "{}", describe(&run));

    let needle = dir.to_string_lossy().into_owned();
    assert_eq!(segid.terminate(STOP_TIMEOUT), Ok(Some(0)), "segid's stop; its log:\n{}", log_text());
    assert!(
        poll_until(Duration::from_secs(5), || host::processes_mentioning(&needle).is_empty()),
        "processes outlived segid: {:?}",
        host::processes_mentioning(&needle).iter().map(ToString::to_string).collect::<Vec<_>>()
    );
}

/// The unit as shipped: User=segi (rootless), CapabilityBoundingSet= (empty),
/// NoNewPrivileges=yes, on the unit's read-only file system.
#[test]
fn segid_runs_rootless_inside_the_units_protections() {
    let user = format!("--reuid={UNIT_USER}");
    let group = format!("--regid={UNIT_USER}");
    run_under_the_units_mounts("unit-rootless", UNIT_USER, &[&user, &group, "--clear-groups", "--bounding-set=-all"]);
}

/// The User=root drop-in of docs/operations.md, with the bounding set it lists.
#[test]
fn segid_runs_as_root_inside_the_units_protections() {
    run_under_the_units_mounts("unit-root", 0, &["--bounding-set=-all,+setuid,+setgid,+kill,+dac_override,+setpcap"]);
}
