//! The C programs in `tests/programs/`, compiled with gcc once per test process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Compiles `tests/programs/NAME.c` (`gcc -O2 -pthread`) into this process's temporary
/// directory and returns the executable's path; later calls return the same file.
pub fn compile_c(name: &str) -> PathBuf {
    static COMPILED: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    static OUT_DIR: OnceLock<PathBuf> = OnceLock::new();

    // The lock is held while gcc runs: tests asking for the same program wait for one compile.
    let mut compiled = COMPILED.lock().unwrap_or_else(|p| p.into_inner());
    let compiled = compiled.get_or_insert_with(HashMap::new);
    if let Some(path) = compiled.get(name) {
        return path.clone();
    }
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("programs").join(format!("{name}.c"));
    assert!(source.is_file(), "no such test program: {}", source.display());
    let out_dir = OUT_DIR.get_or_init(|| crate::temp_dir("programs"));
    let out = out_dir.join(name);
    let output = Command::new("gcc")
        .args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(&out)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc (is it installed?): {e}"));
    assert!(
        output.status.success(),
        "gcc failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    compiled.insert(name.to_owned(), out.clone());
    out
}
