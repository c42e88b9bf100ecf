//! Work done when the test process exits.
//!
//! A daemon shared by the tests of one binary lives in a `static`, and statics are never
//! dropped; libtest ends the process with `exit` (or by returning from `main`), which runs the
//! C library's `atexit` handlers, so that is where shared daemons are stopped and temporary
//! directories removed.

use std::path::Path;
use std::sync::{Mutex, Once};

type Task = Box<dyn FnOnce() + Send>;

static TASKS: Mutex<Vec<Task>> = Mutex::new(Vec::new());
static REGISTER: Once = Once::new();

extern "C" fn run_tasks() {
    let tasks = std::mem::take(&mut *TASKS.lock().unwrap_or_else(|p| p.into_inner()));
    // Last registered first: a daemon is stopped before the directory it lives in is removed.
    for task in tasks.into_iter().rev() {
        task();
    }
}

/// Runs `task` when the process exits normally.
pub fn at_exit(task: impl FnOnce() + Send + 'static) {
    REGISTER.call_once(|| {
        // SAFETY: `run_tasks` is a plain `extern "C" fn()` that lives for the whole process.
        let rc = unsafe { libc::atexit(run_tasks) };
        assert_eq!(rc, 0, "atexit failed");
    });
    TASKS.lock().unwrap_or_else(|p| p.into_inner()).push(Box::new(task));
}

/// Removes `dir` recursively, unless something is mounted at or below it: following a
/// leftover bind mount could delete host files. Such a directory is reported and kept.
pub fn remove_dir_safely(dir: &Path) {
    let mounts = crate::host::mounts_under(dir);
    if !mounts.is_empty() {
        eprintln!("segi-tests: not removing {}: still mounted below it:\n{}", dir.display(), mounts.join("\n"));
        return;
    }
    if let Err(e) = std::fs::remove_dir_all(dir) {
        if e.kind() != std::io::ErrorKind::NotFound {
            eprintln!("segi-tests: cannot remove {}: {e}", dir.display());
        }
    }
}
