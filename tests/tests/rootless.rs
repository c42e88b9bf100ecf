//! Rootless mode: segid as an ordinary user (`nobody` here), in a cgroup v1 subtree that the
//! operator (this test, as root) created and handed to that user, as a delegation would.
//! Also: files travel as contents the client itself read, so a user cannot have segid read a
//! host file for them.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use segi_tests::{binary, poll_until, temp_dir, workspace_dir};

const USER: &str = "nobody";
const GROUP: &str = "nogroup";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// This process's cgroup directory for a v1 controller, if the host mounts it.
fn own_v1_dir(controller: &str) -> Option<PathBuf> {
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == controller).then(|| path.to_string())
    })?;
    let dir = PathBuf::from(format!("/sys/fs/cgroup/{controller}{path}"));
    dir.is_dir().then_some(dir)
}

/// A delegated subtree per controller, owned by USER; removed (with what segid made in it)
/// when dropped.
struct Delegation {
    dirs: Vec<PathBuf>,
}

impl Delegation {
    fn create(tag: &str) -> Option<Delegation> {
        let mut dirs = Vec::new();
        for controller in ["memory", "pids", "cpuacct"] {
            let dir = own_v1_dir(controller)?.join(format!("segi-rootless-{}-{tag}", std::process::id()));
            fs::create_dir_all(&dir).expect("create the delegated cgroup");
            let status = Command::new("chown").arg("-R").arg(format!("{USER}:{GROUP}")).arg(&dir).status().unwrap();
            assert!(status.success(), "chown of {dir:?}");
            dirs.push(dir);
        }
        Some(Delegation { dirs })
    }

    fn children(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .flat_map(|d| fs::read_dir(d).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_dir()))
            .collect()
    }
}

impl Drop for Delegation {
    fn drop(&mut self) {
        // A daemon killed a moment ago may still be leaving its cgroups.
        poll_until(Duration::from_secs(5), || {
            for dir in &self.dirs {
                for child in fs::read_dir(dir).into_iter().flatten().flatten() {
                    let _ = fs::remove_dir(child.path());
                }
                let _ = fs::remove_dir(dir);
            }
            self.dirs.iter().all(|d| !d.exists())
        });
    }
}

struct RootlessDaemon {
    child: Child,
    dir: PathBuf,
}

impl RootlessDaemon {
    /// Starts segid as USER with its process in the delegated cgroups.
    fn start(delegation: &Delegation, dir: &Path) -> RootlessDaemon {
        let policies = dir.join("policies");
        let status =
            Command::new("cp").arg("-r").arg(workspace_dir().join("policies")).arg(&policies).status().unwrap();
        assert!(status.success());
        let status = Command::new("chown").arg("-R").arg(format!("{USER}:{GROUP}")).arg(dir).status().unwrap();
        assert!(status.success());
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
        let join: String =
            delegation.dirs.iter().map(|d| format!("echo $$ > {}/cgroup.procs && ", d.display())).collect();
        let script = format!(
            "{join} exec setpriv --reuid={USER} --regid={GROUP} --clear-groups env HOME=/ {segid} --socket {dir}/s.sock --policies {policies} --state-dir {dir}/state",
            segid = binary("segid").display(),
            dir = dir.display(),
            policies = policies.display(),
        );
        let log = fs::File::create(dir.join("segid.log")).unwrap();
        let child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start segid as nobody");
        let daemon = RootlessDaemon { child, dir: dir.to_path_buf() };
        assert!(
            poll_until(Duration::from_secs(10), || daemon.client(&["ping"]).status.success()),
            "rootless segid did not come up: {}",
            fs::read_to_string(dir.join("segid.log")).unwrap_or_default()
        );
        daemon
    }

    fn client(&self, args: &[&str]) -> std::process::Output {
        Command::new(binary("segi-client"))
            .arg("--socket")
            .arg(self.dir.join("s.sock"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run segi-client")
    }

    /// Runs segi-client as USER, as a second unprivileged user would.
    fn client_as_user(&self, args: &[&str]) -> std::process::Output {
        Command::new("setpriv")
            .arg(format!("--reuid={USER}"))
            .arg(format!("--regid={GROUP}"))
            .arg("--clear-groups")
            .arg(binary("segi-client"))
            .arg("--socket")
            .arg(self.dir.join("s.sock"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run segi-client as nobody")
    }

    fn stop(mut self) {
        // SAFETY: kill(2) on our own child's pid (the shell exec'ed segid).
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        assert!(
            poll_until(Duration::from_secs(10), || self.child.try_wait().ok().flatten().is_some()),
            "segid did not stop"
        );
    }
}

impl Drop for RootlessDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_json(daemon: &RootlessDaemon, args: &[&str]) -> serde_json::Value {
    let mut full = vec!["--json", "run"];
    full.extend_from_slice(args);
    let output = daemon.client(&full);
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("null")).unwrap_or(serde_json::Value::Null)
}

#[test]
fn segid_runs_as_an_ordinary_user_with_a_delegated_v1_subtree() {
    if !is_root() {
        eprintln!("skipped: setting up a delegation needs root (CI runs as root)");
        return;
    }
    let Some(delegation) = Delegation::create("runs") else {
        eprintln!("skipped: this host mounts no cgroup v1 memory, pids and cpuacct");
        return;
    };
    let dir = temp_dir("rootless");
    let daemon = RootlessDaemon::start(&delegation, &dir);

    let check = Command::new("setpriv")
        .args([&format!("--reuid={USER}"), &format!("--regid={GROUP}"), "--clear-groups"])
        .arg(binary("segid"))
        .arg("--check")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains("rootless"), "{report}");

    let caps = daemon.client(&["--json", "capabilities"]);
    let caps: serde_json::Value = serde_json::from_slice(&caps.stdout).expect("capabilities");
    assert_eq!(caps["cgroup"], "v1", "{caps}");
    assert!(caps["fallbacks"].to_string().contains("rootless"), "{caps}");

    let ok = run_json(&daemon, &["--", "sh", "-c", "id -u; grep CapEff /proc/self/status"]);
    assert_eq!(ok["verdict"], "OK", "{ok}");
    let mle = run_json(&daemon, &["--memory", "64M", "--", "python3", "-c", "b = bytearray(100 << 20)"]);
    assert_eq!(mle["verdict"], "MLE", "{mle}");
    let tle = run_json(&daemon, &["--time", "0.5", "--", "sh", "-c", "while :; do :; done"]);
    assert_eq!(tle["verdict"], "TLE", "{tle}");
    assert!(tle["cpu_time"].as_f64().unwrap() < 0.7, "{tle}");
    let bomb = run_json(
        &daemon,
        &["--processes", "8", "--wall-time", "2", "--", "sh", "-c", "for i in $(seq 50); do sleep 5 & done; wait"],
    );
    // The shell cannot fork past the delegated pids limit and gives up: RE, naming the limit.
    assert_eq!(bomb["verdict"], "RE", "{bomb}");
    assert_eq!(bomb["limit"], "processes", "{bomb}");

    daemon.stop();
    assert!(delegation.children().is_empty(), "cgroups left in the delegation: {:?}", delegation.children());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_user_cannot_read_a_host_file_through_segid() {
    if !is_root() {
        eprintln!("skipped: needs root to set up a second user's view");
        return;
    }
    let Some(delegation) = Delegation::create("files") else {
        eprintln!("skipped: this host mounts no cgroup v1 memory, pids and cpuacct");
        return;
    };
    let dir = temp_dir("rootless-files");
    let daemon = RootlessDaemon::start(&delegation, &dir);
    let secret = temp_dir("secret").join("secret.txt");
    fs::write(&secret, "root's secret\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();

    // The client reads --file itself: as nobody it cannot, and says so.
    let output = daemon.client_as_user(&["run", "--file", &format!("s={}", secret.display()), "--", "cat", "s"]);
    assert_eq!(output.status.code(), Some(125), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ermission denied"), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("secret"), "{output:?}");

    // Nor can the protocol name a host path for the daemon to read.
    let mut conn = segi_tests::RawConn::connect(&dir.join("s.sock"));
    let (_, answer) = conn.call(
        "run",
        serde_json::json!({"command": ["cat", "s"], "files": [{"path": "s", "host_path": secret.display().to_string()}]}),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    daemon.stop();
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_dir_all(secret.parent().unwrap());
}
