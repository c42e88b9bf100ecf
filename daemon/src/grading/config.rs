//! A program grader's config checked before anything runs (program-grader.txt, decisions 19):
//! its timeout, its environment (the reserved variables refused in any letter case) and its
//! `sub_path`, which must stay inside the workspace, symlinks included.

use std::path::{Component, Path};

use segi_proto::grade::GraderConfig;
use segi_proto::units::parse_duration;
use serde_json::Value;

use super::workspace::Inventory;

/// The reference's default timeout.
pub const DEFAULT_TIMEOUT: f64 = 60.0;
/// Set by segid for every grader; a config may not set them.
pub const RESERVED: [&str; 2] = ["EVALUATE_WORKSPACE", "EVALUATE_GRADER_INPUT"];

/// A config ready to run.
#[derive(Debug, Clone)]
pub struct Checked {
    pub name: String,
    pub command: Vec<String>,
    pub timeout: f64,
    /// The working directory relative to the workspace root (empty: the root).
    pub sub_path: String,
    /// Whether `sub_path` exists in the workspace (if not, the grader cannot start: ENOENT).
    pub sub_path_exists: bool,
}

/// Checks grader `index`'s config; the error names the grader and what to change.
pub fn check(index: usize, config: &GraderConfig, workspace: &Inventory) -> Result<Checked, String> {
    let name = config.name.clone().unwrap_or_else(|| config.program.clone());
    let what = format!("grader {index} ({name})");
    if config.program.is_empty() || config.program.contains('\0') {
        return Err(format!("{what}: program must be a non-empty string"));
    }
    for key in config.env.keys() {
        if let Some(reserved) = RESERVED.iter().find(|r| r.eq_ignore_ascii_case(key)) {
            return Err(format!(
                "{what}: env {key:?} is reserved: segid sets {reserved} for every grader (configuration error)"
            ));
        }
    }
    let timeout = match &config.timeout {
        None => DEFAULT_TIMEOUT,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(text)) => parse_duration(text).map_err(|e| format!("{what}: timeout: {e}"))?,
        Some(other) => return Err(format!("{what}: timeout {other} must be a duration like \"60s\", \"2m\" or 1.5")),
    };
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(format!("{what}: timeout must be a positive duration like \"60s\""));
    }
    let sub_path = match &config.sub_path {
        None => String::new(),
        Some(sub) => {
            check_sub_path(sub, workspace).map_err(|e| format!("{what}: sub_path {sub:?} {e} (configuration error)"))?
        }
    };
    let sub_path_exists = sub_path.is_empty() || workspace.is_dir(&sub_path);
    let command = match config.shell {
        // As the reference (Node's spawn with `shell: true`): program and args joined by spaces.
        true => {
            let line = std::iter::once(config.program.as_str()).chain(config.args.iter().map(String::as_str));
            vec!["/bin/sh".into(), "-c".into(), line.collect::<Vec<_>>().join(" ")]
        }
        false => std::iter::once(config.program.clone()).chain(config.args.iter().cloned()).collect(),
    };
    Ok(Checked { name, command, timeout, sub_path, sub_path_exists })
}

/// `sub_path` normalized, or why it leaves the workspace.
fn check_sub_path(sub: &str, workspace: &Inventory) -> Result<String, String> {
    if sub.contains('\0') {
        return Err("contains NUL".into());
    }
    let path = Path::new(sub);
    if path.is_absolute() {
        return Err("is absolute; it must be relative to the workspace root".into());
    }
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => return Err("leaves the workspace (..)".into()),
        }
        // Every step must be a real directory of the archive, never a link (which could point
        // anywhere, the workspace's own parents included).
        let so_far = parts.join("/");
        if !so_far.is_empty() && workspace.is_symlink(&so_far) {
            return Err(format!(
                "goes through the symlink {so_far:?}: a link may lead out of the workspace, so sub_path must name \
                 real directories"
            ));
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> GraderConfig {
        serde_json::from_value(json).unwrap()
    }

    fn inventory() -> Inventory {
        Inventory::from_entries([
            ("src", false, true),
            ("src/app", false, true),
            ("link", true, false),
            ("src/out", true, false),
        ])
    }

    #[test]
    fn defaults_and_commands() {
        let c = check(0, &config(serde_json::json!({"program": "python3", "args": ["a.py", "x y"]})), &inventory())
            .unwrap();
        assert_eq!((c.name.as_str(), c.timeout, c.sub_path.as_str()), ("python3", 60.0, ""));
        assert_eq!(c.command, ["python3", "a.py", "x y"]);
        let c = check(
            0,
            &config(serde_json::json!({"program": "bash", "args": ["check.sh"], "shell": true, "timeout": "2m"})),
            &inventory(),
        )
        .unwrap();
        assert_eq!(c.command, ["/bin/sh", "-c", "bash check.sh"]);
        assert_eq!(c.timeout, 120.0);
        let c = check(
            0,
            &config(serde_json::json!({"program": "x", "timeout": 1.5, "sub_path": "./src/app"})),
            &inventory(),
        )
        .unwrap();
        assert_eq!((c.timeout, c.sub_path.as_str(), c.sub_path_exists), (1.5, "src/app", true));
        let c = check(0, &config(serde_json::json!({"program": "x", "sub_path": "missing"})), &inventory()).unwrap();
        assert!(!c.sub_path_exists);
    }

    #[test]
    fn configuration_errors_are_named() {
        let cases = [
            (serde_json::json!({"program": "x", "env": {"evaluate_Workspace": "/"}}), "reserved"),
            (serde_json::json!({"program": "x", "env": {"EVALUATE_GRADER_INPUT": "/"}}), "reserved"),
            (serde_json::json!({"program": "x", "sub_path": "../up"}), "leaves the workspace"),
            (serde_json::json!({"program": "x", "sub_path": "src/../../up"}), "leaves the workspace"),
            (serde_json::json!({"program": "x", "sub_path": "/etc"}), "absolute"),
            (serde_json::json!({"program": "x", "sub_path": "link"}), "symlink"),
            (serde_json::json!({"program": "x", "sub_path": "src/out/deeper"}), "symlink"),
            (serde_json::json!({"program": "x", "timeout": "soon"}), "timeout"),
            (serde_json::json!({"program": "x", "timeout": -1}), "timeout"),
            (serde_json::json!({"program": ""}), "program"),
        ];
        for (json, expected) in cases {
            let err = check(3, &config(json.clone()), &inventory()).unwrap_err();
            assert!(err.contains(expected) && err.starts_with("grader 3"), "{json}: {err}");
        }
    }
}
