//! Policies: the TOML files in `policies/` that say what a kind of run may do: its default
//! and maximum limits, the host paths it sees, its rlimits, environment and seccomp rules.
//!
//! A request may tighten a policy's defaults up to the policy's maximum; above the maximum it
//! is refused with a message naming the limit, never silently clamped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use segi_proto::units::{parse_duration, parse_size};
use segi_proto::Limits;

use crate::sandbox::seccomp;

/// A loaded policy, its seccomp filter compiled.
#[derive(Debug)]
pub struct Policy {
    pub name: String,
    pub description: String,
    pub default: Effective,
    pub max: Effective,
    pub binds: Vec<PathBuf>,
    pub box_size: u64,
    pub tmp_size: u64,
    pub stack: Option<u64>,
    pub open_files: u64,
    pub env: BTreeMap<String, String>,
    pub seccomp_bpf: Vec<u8>,
}

/// Limits with every value set: what a run actually gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effective {
    pub cpu_time: f64,
    pub wall_time: f64,
    pub memory: u64,
    pub processes: u64,
    pub output: u64,
    pub file_size: u64,
}

impl Effective {
    pub fn to_limits(self) -> Limits {
        Limits {
            cpu_time: Some(self.cpu_time),
            wall_time: Some(self.wall_time),
            memory: Some(self.memory),
            processes: Some(self.processes),
            output: Some(self.output),
            file_size: Some(self.file_size),
        }
    }
}

/// All policies of a directory, by name (file stem).
#[derive(Debug)]
pub struct Policies {
    pub by_name: BTreeMap<String, Arc<Policy>>,
    /// `languages.toml` of the same directory (empty when there is none): for `judge`.
    pub languages: Arc<crate::judging::languages::Languages>,
    /// segi's strategy runtime (`strategy/`), read once with the policies; why not, when the
    /// directory has none (then only problems with a strategy cannot be judged).
    pub strategy_runtime: Result<Arc<crate::pipeline::host::Runtime>, String>,
}

impl Default for Policies {
    fn default() -> Self {
        Policies { by_name: BTreeMap::new(), languages: Arc::default(), strategy_runtime: Err("not loaded".into()) }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policies from {dir}: {source}; pass --policies DIR with the policies/ directory of segi")]
    ReadDir { dir: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{path}: seccomp: {source}")]
    Seccomp { path: PathBuf, source: seccomp::CompileError },
    #[error("no policy in {0}: it needs at least default.toml")]
    Empty(PathBuf),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    description: String,
    limits: RawLimitSets,
    filesystem: RawFilesystem,
    #[serde(default)]
    rlimits: RawRlimits,
    #[serde(default)]
    env: BTreeMap<String, String>,
    seccomp: RawSeccomp,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimitSets {
    default: RawLimits,
    max: RawLimits,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    cpu_time: Quantity,
    wall_time: Quantity,
    memory: Quantity,
    processes: u64,
    output: Quantity,
    file_size: Quantity,
}

/// `"256M"` or `268435456`; `"1.5s"` or `1.5`.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Quantity {
    Int(u64),
    Float(f64),
    Text(String),
}

impl Quantity {
    fn size(&self) -> Result<u64, String> {
        match self {
            Quantity::Int(n) => Ok(*n),
            Quantity::Float(_) => Err("a size must be whole bytes or a string like \"256M\"".into()),
            Quantity::Text(t) => parse_size(t).map_err(|e| e.to_string()),
        }
    }
    fn seconds(&self) -> Result<f64, String> {
        match self {
            Quantity::Int(n) => Ok(*n as f64),
            Quantity::Float(f) => Ok(*f),
            Quantity::Text(t) => parse_duration(t).map_err(|e| e.to_string()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilesystem {
    bind: Vec<PathBuf>,
    box_size: Quantity,
    tmp_size: Quantity,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRlimits {
    stack: Option<Quantity>,
    open_files: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeccomp {
    rules: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    rule: Vec<seccomp::Rule>,
}

impl Policies {
    /// Loads every `*.toml` of `dir` (not its subdirectories: `seccomp/` holds rule files).
    pub fn load(dir: &Path) -> Result<Policies, PolicyError> {
        let entries = std::fs::read_dir(dir).map_err(|source| PolicyError::ReadDir { dir: dir.into(), source })?;
        let mut policies = Policies::default();
        let mut compiled: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
        for entry in entries {
            let path = entry.map_err(|source| PolicyError::ReadDir { dir: dir.into(), source })?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") || !path.is_file() {
                continue;
            }
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
            if name == "languages" {
                let languages = crate::judging::languages::Languages::load(&path)
                    .map_err(|message| PolicyError::Invalid { path: path.clone(), message })?;
                policies.languages = Arc::new(languages);
                continue;
            }
            let policy = load_one(dir, &path, name.clone(), &mut compiled)?;
            policies.by_name.insert(name, Arc::new(policy));
        }
        if !policies.by_name.contains_key("default") {
            return Err(PolicyError::Empty(dir.into()));
        }
        policies.strategy_runtime = crate::pipeline::host::Runtime::load(dir).map(Arc::new);
        Ok(policies)
    }

    pub fn get(&self, name: &str) -> Option<Arc<Policy>> {
        self.by_name.get(name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        self.by_name.keys().cloned().collect()
    }
}

fn load_one(
    dir: &Path,
    path: &Path,
    name: String,
    compiled: &mut BTreeMap<PathBuf, Vec<u8>>,
) -> Result<Policy, PolicyError> {
    let invalid = |message: String| PolicyError::Invalid { path: path.into(), message };
    let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read { path: path.into(), source })?;
    let raw: RawPolicy = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    let default = effective(&raw.limits.default).map_err(|e| invalid(format!("limits.default: {e}")))?;
    let max = effective(&raw.limits.max).map_err(|e| invalid(format!("limits.max: {e}")))?;
    check_within(&default, &max).map_err(|e| invalid(format!("limits.default: {e}")))?;
    for bind in &raw.filesystem.bind {
        if !bind.is_absolute() || bind.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return Err(invalid(format!("filesystem.bind: {} must be an absolute path without ..", bind.display())));
        }
    }
    let rules_path = dir.join(&raw.seccomp.rules);
    let seccomp_bpf = match compiled.get(&rules_path) {
        Some(bpf) => bpf.clone(),
        None => {
            let text = std::fs::read_to_string(&rules_path)
                .map_err(|source| PolicyError::Read { path: rules_path.clone(), source })?;
            let rules: RawRules = toml::from_str(&text)
                .map_err(|e| PolicyError::Invalid { path: rules_path.clone(), message: e.to_string() })?;
            let (bpf, skipped) = seccomp::compile(&rules.rule)
                .map_err(|source| PolicyError::Seccomp { path: rules_path.clone(), source })?;
            if !skipped.is_empty() {
                tracing::debug!(rules = %rules_path.display(), ?skipped, "system calls absent on this architecture");
            }
            compiled.insert(rules_path, bpf.clone());
            bpf
        }
    };
    Ok(Policy {
        name,
        description: raw.description,
        default,
        max,
        binds: raw.filesystem.bind,
        box_size: raw.filesystem.box_size.size().map_err(|e| invalid(format!("filesystem.box_size: {e}")))?,
        tmp_size: raw.filesystem.tmp_size.size().map_err(|e| invalid(format!("filesystem.tmp_size: {e}")))?,
        stack: raw.rlimits.stack.map(|q| q.size()).transpose().map_err(|e| invalid(format!("rlimits.stack: {e}")))?,
        open_files: raw.rlimits.open_files.unwrap_or(256),
        env: raw.env,
        seccomp_bpf,
    })
}

fn effective(raw: &RawLimits) -> Result<Effective, String> {
    let limits = Effective {
        cpu_time: raw.cpu_time.seconds()?,
        wall_time: raw.wall_time.seconds()?,
        memory: raw.memory.size()?,
        processes: raw.processes,
        output: raw.output.size()?,
        file_size: raw.file_size.size()?,
    };
    validate(&limits)?;
    Ok(limits)
}

/// Limits any run must respect whatever a policy says.
fn validate(l: &Effective) -> Result<(), String> {
    let positive = |name: &str, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(format!("{name} must be a positive number of seconds, not {v}"))
        }
    };
    positive("cpu_time", l.cpu_time)?;
    positive("wall_time", l.wall_time)?;
    if l.memory < 1 << 20 {
        return Err(format!("memory must be at least 1 MiB, not {} bytes", l.memory));
    }
    if l.processes < 1 {
        return Err("processes must be at least 1".into());
    }
    Ok(())
}

fn check_within(l: &Effective, max: &Effective) -> Result<(), String> {
    let over =
        |name: &str, value: String, limit: String| Err(format!("{name} {value} is above the policy's maximum {limit}"));
    if l.cpu_time > max.cpu_time {
        return over("cpu_time", format!("{}s", l.cpu_time), format!("{}s", max.cpu_time));
    }
    if l.wall_time > max.wall_time {
        return over("wall_time", format!("{}s", l.wall_time), format!("{}s", max.wall_time));
    }
    for (name, value, limit) in [
        ("memory", l.memory, max.memory),
        ("processes", l.processes, max.processes),
        ("output", l.output, max.output),
        ("file_size", l.file_size, max.file_size),
    ] {
        if value > limit {
            return over(name, value.to_string(), limit.to_string());
        }
    }
    Ok(())
}

impl Policy {
    /// The limits of a run: the request's where given, else the policy's defaults; refused
    /// when a value is not positive and finite or above the policy's maximum.
    pub fn resolve(&self, asked: &Limits) -> Result<Effective, String> {
        let limits = Effective {
            cpu_time: asked.cpu_time.unwrap_or(self.default.cpu_time),
            wall_time: asked.wall_time.unwrap_or(self.default.wall_time),
            memory: asked.memory.unwrap_or(self.default.memory),
            processes: asked.processes.unwrap_or(self.default.processes),
            output: asked.output.unwrap_or(self.default.output),
            file_size: asked.file_size.unwrap_or(self.default.file_size),
        };
        validate(&limits).map_err(|e| format!("limits.{e}"))?;
        check_within(&limits, &self.max).map_err(|e| format!("limits.{e} (policy {:?})", self.name))?;
        Ok(limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Policies {
        Policies::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies")).unwrap()
    }

    #[test]
    fn shipped_policies_load() {
        let p = shipped();
        for name in ["default", "compile", "evaluator"] {
            assert!(p.get(name).is_some(), "{name} missing");
        }
    }

    #[test]
    fn requests_tighten_but_never_loosen() {
        let policy = shipped().get("default").unwrap();
        let tight = policy.resolve(&Limits { cpu_time: Some(0.5), ..Default::default() }).unwrap();
        assert_eq!(tight.cpu_time, 0.5);
        assert_eq!(tight.memory, policy.default.memory);
        let err = policy.resolve(&Limits { cpu_time: Some(1e12), ..Default::default() }).unwrap_err();
        assert!(err.contains("maximum"), "{err}");
        assert!(policy.resolve(&Limits { cpu_time: Some(-1.0), ..Default::default() }).is_err());
        assert!(policy.resolve(&Limits { wall_time: Some(f64::NAN), ..Default::default() }).is_err());
        assert!(policy.resolve(&Limits { processes: Some(0), ..Default::default() }).is_err());
        assert!(policy.resolve(&Limits { memory: Some(10), ..Default::default() }).is_err());
    }
}
