//! Cases that time a whole command line: spawn, wait, check the exit status.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::interrupted;

/// Runs `argv` `warmup` times untimed (at least once), then `iterations` times timed, and
/// returns the wall time of each timed run. Every run must exit 0: a failing command is a broken case, and
/// its time would mean nothing.
pub fn time_command(argv: &[String], warmup: usize, iterations: usize) -> Result<Vec<Duration>> {
    let (program, args) = argv.split_first().context("empty command")?;
    // The first run keeps stderr, so that a broken setup says why.
    let first = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("running {program}"))?;
    if !first.status.success() {
        bail!("`{}` failed ({}): {}", argv.join(" "), first.status, String::from_utf8_lossy(&first.stderr).trim());
    }

    let more_warmup = warmup.saturating_sub(1);
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..more_warmup + iterations {
        if interrupted() {
            bail!("interrupted");
        }
        let start = Instant::now();
        let status = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("running {program}"))?;
        let elapsed = start.elapsed();
        if !status.success() {
            bail!("`{}` failed ({status}) on run {}", argv.join(" "), i + 2);
        }
        if i >= more_warmup {
            samples.push(elapsed);
        }
    }
    Ok(samples)
}

/// `name` as found in `$PATH`, like `command -v`.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn counts_only_timed_runs() {
        assert_eq!(time_command(&argv(&["/bin/true"]), 3, 5).unwrap().len(), 5);
        assert_eq!(time_command(&argv(&["/bin/true"]), 0, 2).unwrap().len(), 2);
    }

    #[test]
    fn a_failing_command_says_why() {
        let err = time_command(&argv(&["sh", "-c", "echo nope >&2; exit 3"]), 1, 1).unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("nope"), "{message}");
    }

    #[test]
    fn finds_sh_but_not_nonsense() {
        assert!(find_in_path("sh").is_some());
        assert!(find_in_path("segi-bench-no-such-program").is_none());
    }
}
