//! segi's strategy runtime (`policies/strategy/segi_strategy.py`, `run.py`) against a fake
//! daemon: its own unittest suite (`tests/strategy/test_runtime.py`), run by python3 here so
//! that `cargo test` covers it.

use std::process::Command;

#[test]
fn the_strategy_runtime_passes_its_python_tests() {
    let out = Command::new("python3")
        .args(["-m", "unittest", "tests/strategy/test_runtime.py"])
        .current_dir(segi_tests::workspace_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "python3 -m unittest tests/strategy/test_runtime.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
