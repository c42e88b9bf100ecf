//! A problem package, read from the files a `judge` request carries and checked before
//! anything runs: `problem.toml`, the tests `tests/N.in` and `tests/N.out` (N = 0, 1, 2, ...),
//! and the sources of custom judges. The format is documented in `docs/problems.md`.

use std::collections::BTreeMap;
use std::sync::Arc;

use segi_proto::units::{parse_duration, parse_size};
use serde::Deserialize;

use super::builtin::{MasterJudge, TestJudge};

/// Judges get these limits unless `problem.toml` says otherwise.
const JUDGE_TIME_LIMIT: f64 = 10.0;
const JUDGE_MEMORY_LIMIT: u64 = 512 << 20;
const OUTPUT_LIMIT: u64 = 64 << 20;
const STRATEGY_TIME_LIMIT: f64 = 10.0;

/// A judge program of the problem's own: its source, compiled like a submission.
#[derive(Debug, Clone)]
pub struct CustomJudge {
    /// The source's path in the package, for messages and its extension.
    pub path: String,
    pub source: Arc<Vec<u8>>,
    pub language: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Judge<B> {
    Builtin(B),
    Custom(CustomJudge),
}

/// One test: the submission's input and the model output.
#[derive(Debug, Clone)]
pub struct Test {
    pub input: Arc<Vec<u8>>,
    /// Empty when the package has no `.out` (allowed with a custom test case judge).
    pub output: Arc<Vec<u8>>,
}

/// A checked problem package.
#[derive(Debug, Clone)]
pub struct Problem {
    pub name: Option<String>,
    /// CPU seconds per test run of the submission.
    pub time_limit: f64,
    pub wall_time_limit: f64,
    pub memory_limit: u64,
    pub output_limit: u64,
    pub interactive: bool,
    pub test_judge: Judge<TestJudge>,
    pub master_judge: Judge<MasterJudge>,
    pub weights: Option<Vec<f64>>,
    /// CPU seconds a judge may take, per run.
    pub judge_time_limit: f64,
    pub judge_memory_limit: u64,
    /// CPU seconds a strategy may use (it mostly waits for what it runs).
    pub strategy_time_limit: f64,
    pub tests: Vec<Test>,
    /// Set when the problem has a `strategy` (pipelines.md): then the test case judge and the
    /// master judge are unused and the strategy decides.
    pub pipeline: Option<Pipeline>,
}

/// The pipeline part of a package: the strategy, the problem's executables, groups, points.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The strategy script: a built-in's name or the package's own source.
    pub strategy: StrategySource,
    /// `checker`, `interactor`, ...: source and kind.
    pub executables: BTreeMap<String, ProblemExecutable>,
    pub groups: Vec<RawGroup>,
    /// Each test's points (pipelines' `test.points`), default 1.
    pub points: Vec<f64>,
    /// Each test's group, when there are groups.
    pub test_groups: Vec<Option<String>>,
    /// Every file of the package, for the strategy's `problem/<path>` handles.
    pub files: BTreeMap<String, Arc<Vec<u8>>>,
    /// Each test's other files: `tests/N.code.cpp` is the test's `code` attribute, a File named
    /// `code.cpp` (2.8's `test.code`), by attribute.
    pub test_files: Vec<BTreeMap<String, TestFile>>,
}

/// A test's own file: its name in the package (after `N.`) and its bytes.
pub type TestFile = (String, Arc<Vec<u8>>);

#[derive(Debug, Clone)]
pub enum StrategySource {
    Builtin(String),
    Custom(Arc<Vec<u8>>),
}

#[derive(Debug, Clone)]
pub struct ProblemExecutable {
    pub source: CustomJudge,
    /// `user`, `system` or `testlib`.
    pub kind: String,
}

/// A group of tests (decisions 22).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    pub name: String,
    /// Test numbers, from 1 as pipelines number them.
    pub tests: Vec<u32>,
    #[serde(default = "complete_group")]
    pub points_policy: String,
    #[serde(default = "complete")]
    pub feedback_policy: String,
    #[serde(default)]
    pub dependencies: Vec<String>,
}

fn complete_group() -> String {
    "complete-group".into()
}

fn complete() -> String {
    "complete".into()
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawStrategy {
    Builtin(String),
    Custom { source: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExecutable {
    source: String,
    #[serde(default)]
    language: Option<String>,
    #[serde(default = "testlib")]
    kind: String,
}

fn testlib() -> String {
    "testlib".into()
}

/// The strategies segi ships (`policies/strategy/builtin/<name>.py`).
pub const BUILTIN_STRATEGIES: [&str; 10] = [
    "standard",
    "run_twice",
    "interactive",
    "file_io",
    "output_only",
    "compile_with_grader",
    "efficiency",
    "raw",
    "valuer",
    "grader",
];

/// `problem.toml` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProblem {
    #[serde(default)]
    name: Option<String>,
    time_limit: Quantity,
    #[serde(default)]
    wall_time_limit: Option<Quantity>,
    memory_limit: Quantity,
    #[serde(default)]
    output_limit: Option<Quantity>,
    #[serde(default)]
    interactive: bool,
    #[serde(default)]
    test_judge: Option<RawJudge>,
    #[serde(default)]
    strategy: Option<RawStrategy>,
    #[serde(default)]
    executables: BTreeMap<String, RawExecutable>,
    #[serde(default)]
    groups: Vec<RawGroup>,
    #[serde(default)]
    points: Option<Vec<f64>>,
    #[serde(default = "generic")]
    master_judge: RawJudge,
    #[serde(default)]
    weights: Option<Vec<f64>>,
    #[serde(default)]
    judge_time_limit: Option<Quantity>,
    #[serde(default)]
    judge_memory_limit: Option<Quantity>,
    #[serde(default)]
    strategy_time_limit: Option<Quantity>,
}

fn generic() -> RawJudge {
    RawJudge::Name("generic".into())
}

/// `"1s"`, `1.5`, `"256M"`, `268435456`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Quantity {
    Int(u64),
    Float(f64),
    Text(String),
}

impl Quantity {
    fn seconds(&self, key: &str) -> Result<f64, String> {
        let value = match self {
            Quantity::Int(n) => *n as f64,
            Quantity::Float(f) => *f,
            Quantity::Text(t) => parse_duration(t).map_err(|e| format!("problem.toml: {key}: {e}"))?,
        };
        match value.is_finite() && value > 0.0 {
            true => Ok(value),
            false => Err(format!("problem.toml: {key} must be a positive duration, like \"1s\" or 0.5")),
        }
    }

    fn bytes(&self, key: &str) -> Result<u64, String> {
        let value = match self {
            Quantity::Int(n) => *n,
            Quantity::Float(_) => return Err(format!("problem.toml: {key} must be a size, like \"256M\"")),
            Quantity::Text(t) => parse_size(t).map_err(|e| format!("problem.toml: {key}: {e}"))?,
        };
        match value > 0 {
            true => Ok(value),
            false => Err(format!("problem.toml: {key} must be more than 0")),
        }
    }
}

/// A judge by id (`1`, `"1"`), by name (`"ignore-whitespace"`), or a source of the package.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawJudge {
    Id(u64),
    Name(String),
    Custom {
        source: String,
        #[serde(default)]
        language: Option<String>,
    },
}

impl Problem {
    /// Reads the package from its files (path relative to the package → bytes).
    pub fn from_files(files: &BTreeMap<String, Arc<Vec<u8>>>) -> Result<Problem, String> {
        let toml_bytes = files.get("problem.toml").ok_or("the problem has no problem.toml at its top")?;
        let text = std::str::from_utf8(toml_bytes).map_err(|_| "problem.toml is not UTF-8")?;
        let raw: RawProblem = toml::from_str(text).map_err(|e| format!("problem.toml: {e}"))?;
        let time_limit = raw.time_limit.seconds("time_limit")?;
        let wall_time_limit = match &raw.wall_time_limit {
            Some(q) => q.seconds("wall_time_limit")?,
            None => 3.0 * time_limit + 1.0,
        };
        // Without a strategy or a test case judge, the problem's executables say its type:
        // an interactor makes it interactive, a checker alone standard input/output.
        let mut raw = raw;
        if raw.strategy.is_none() && raw.test_judge.is_none() {
            let inferred = match (raw.executables.contains_key("interactor"), raw.executables.contains_key("checker")) {
                (true, true) => Some("interactive"),
                (false, true) => Some("standard"),
                _ => None,
            };
            raw.strategy = inferred.map(|name| RawStrategy::Builtin(name.into()));
        }
        let pipeline_problem = raw.strategy.is_some();
        if pipeline_problem && raw.test_judge.is_some() {
            return Err(
                "problem.toml: a problem has a test_judge (Sphere judging) or a strategy (a pipeline), not both".into(),
            );
        }
        // A strategy reads what it wants: model outputs are optional there.
        let custom_judge = matches!(raw.test_judge, Some(RawJudge::Custom { .. }));
        let tests = read_tests(files, custom_judge || pipeline_problem)?;
        let test_judge = match raw.test_judge {
            Some(RawJudge::Custom { source, language }) => Judge::Custom(custom(files, source, language)?),
            Some(named) => {
                let name = named.name();
                Judge::Builtin(TestJudge::by_name(&name).ok_or_else(|| {
                    format!(
                        "problem.toml: test_judge {name:?} is not a built-in test case judge (1 ignore-whitespace, \
                         2 float-1e-2, 3 float-1e-6, 4 source-length, 10 exact) nor {{ source = \"...\" }}"
                    )
                })?)
            }
            None if pipeline_problem => Judge::Builtin(TestJudge::IgnoreWhitespace),
            None => {
                return Err("problem.toml needs test_judge = ... (Sphere judging) or strategy = ... (a pipeline)".into())
            }
        };
        let pipeline = match raw.strategy {
            None => None,
            Some(strategy) => Some(pipeline(files, strategy, raw.executables, raw.groups, raw.points, tests.len())?),
        };
        let master_judge = match raw.master_judge {
            RawJudge::Custom { source, language } => Judge::Custom(custom(files, source, language)?),
            named => {
                let name = named.name();
                Judge::Builtin(MasterJudge::by_name(&name).ok_or_else(|| {
                    format!(
                        "problem.toml: master_judge {name:?} is not a built-in master judge (1000 generic, 1001 \
                         percentage, weighted) nor {{ source = \"...\" }}"
                    )
                })?)
            }
        };
        if let Some(weights) = &raw.weights {
            if weights.len() != tests.len() {
                return Err(format!("problem.toml: {} weights for {} tests", weights.len(), tests.len()));
            }
            if weights.iter().any(|w| !w.is_finite() || *w <= 0.0) {
                return Err("problem.toml: weights must be positive numbers, one per test".into());
            }
        }
        if matches!(master_judge, Judge::Builtin(MasterJudge::Weighted)) && raw.weights.is_none() {
            return Err("problem.toml: master_judge \"weighted\" needs weights = [...], one per test".into());
        }
        Ok(Problem {
            name: raw.name,
            time_limit,
            wall_time_limit,
            memory_limit: raw.memory_limit.bytes("memory_limit")?,
            output_limit: raw
                .output_limit
                .as_ref()
                .map(|q| q.bytes("output_limit"))
                .transpose()?
                .unwrap_or(OUTPUT_LIMIT),
            interactive: raw.interactive,
            test_judge,
            master_judge,
            weights: raw.weights,
            judge_time_limit: raw
                .judge_time_limit
                .as_ref()
                .map(|q| q.seconds("judge_time_limit"))
                .transpose()?
                .unwrap_or(JUDGE_TIME_LIMIT),
            judge_memory_limit: raw
                .judge_memory_limit
                .as_ref()
                .map(|q| q.bytes("judge_memory_limit"))
                .transpose()?
                .unwrap_or(JUDGE_MEMORY_LIMIT),
            strategy_time_limit: raw
                .strategy_time_limit
                .as_ref()
                .map(|q| q.seconds("strategy_time_limit"))
                .transpose()?
                .unwrap_or(STRATEGY_TIME_LIMIT),
            tests,
            pipeline,
        })
    }
}

fn pipeline(
    files: &BTreeMap<String, Arc<Vec<u8>>>,
    strategy: RawStrategy,
    executables: BTreeMap<String, RawExecutable>,
    groups: Vec<RawGroup>,
    points: Option<Vec<f64>>,
    tests: usize,
) -> Result<Pipeline, String> {
    let strategy = match strategy {
        RawStrategy::Builtin(name) if BUILTIN_STRATEGIES.contains(&name.as_str()) => StrategySource::Builtin(name),
        RawStrategy::Builtin(name) => {
            return Err(format!(
                "problem.toml: strategy {name:?} is not a built-in one ({}) nor {{ source = \"strategy.py\" }}",
                BUILTIN_STRATEGIES.join(", ")
            ))
        }
        RawStrategy::Custom { source } => StrategySource::Custom(
            files
                .get(&source)
                .cloned()
                .ok_or_else(|| format!("problem.toml names the strategy {source:?}, not in the problem"))?,
        ),
    };
    let mut checked = BTreeMap::new();
    for (name, exe) in executables {
        if !matches!(exe.kind.as_str(), "user" | "system" | "testlib") {
            return Err(format!("problem.toml: executables.{name}.kind must be user, system or testlib"));
        }
        let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return Err(format!("problem.toml: executable name {name:?} must be letters, digits and _"));
        }
        checked.insert(name, ProblemExecutable { source: custom(files, exe.source, exe.language)?, kind: exe.kind });
    }
    let points = points.unwrap_or_else(|| vec![1.0; tests]);
    if points.len() != tests || points.iter().any(|p| !p.is_finite() || *p < 0.0) {
        return Err(format!("problem.toml: points must be {tests} numbers >= 0, one per test"));
    }
    let mut test_groups = vec![None; tests];
    for group in &groups {
        if !matches!(group.points_policy.as_str(), "complete-group" | "each-test") {
            return Err(format!("problem.toml: group {}: points_policy is complete-group or each-test", group.name));
        }
        if !matches!(group.feedback_policy.as_str(), "none" | "points" | "icpc" | "complete") {
            return Err(format!(
                "problem.toml: group {}: feedback_policy is none, points, icpc or complete",
                group.name
            ));
        }
        for &no in &group.tests {
            let slot = test_groups
                .get_mut((no as usize).wrapping_sub(1))
                .ok_or_else(|| format!("problem.toml: group {} names test {no}; tests are 1 to {tests}", group.name))?;
            if let Some(other) = slot.replace(group.name.clone()) {
                return Err(format!("problem.toml: test {no} is in groups {other} and {}", group.name));
            }
        }
    }
    if !groups.is_empty() && test_groups.iter().any(Option::is_none) {
        return Err("problem.toml: with groups, every test must be in one".into());
    }
    let mut test_files = vec![BTreeMap::new(); tests];
    for (path, bytes) in files {
        let Some((number, rest)) = path.strip_prefix("tests/").and_then(|name| name.split_once('.')) else { continue };
        let (Ok(n), attr) = (number.parse::<usize>(), rest.split('.').next().unwrap_or_default()) else { continue };
        if rest == "in" || rest == "out" || attr.is_empty() || n >= tests {
            continue;
        }
        test_files[n].insert(attr.to_string(), (rest.to_string(), bytes.clone()));
    }
    Ok(Pipeline { strategy, executables: checked, groups, points, test_groups, files: files.clone(), test_files })
}

impl RawJudge {
    fn name(&self) -> String {
        match self {
            RawJudge::Id(id) => id.to_string(),
            RawJudge::Name(name) => name.clone(),
            RawJudge::Custom { source, .. } => source.clone(),
        }
    }
}

fn custom(
    files: &BTreeMap<String, Arc<Vec<u8>>>,
    path: String,
    language: Option<String>,
) -> Result<CustomJudge, String> {
    let source =
        files.get(&path).ok_or_else(|| format!("problem.toml names the judge source {path:?}, not in the problem"))?;
    Ok(CustomJudge { path, source: source.clone(), language })
}

/// `tests/N.in` and `tests/N.out` for N = 0, 1, ... without gaps.
fn read_tests(files: &BTreeMap<String, Arc<Vec<u8>>>, outputs_optional: bool) -> Result<Vec<Test>, String> {
    let mut inputs = BTreeMap::new();
    for (path, bytes) in files {
        let Some(name) = path.strip_prefix("tests/") else { continue };
        let Some((number, kind)) = name.rsplit_once('.') else { continue };
        if kind != "in" && kind != "out" {
            continue;
        }
        let n: usize = match number.parse::<usize>() {
            Ok(n) if number == n.to_string() => n,
            _ => return Err(format!("{path}: tests are named tests/N.in and tests/N.out with N = 0, 1, 2, ...")),
        };
        if kind == "in" {
            inputs.insert(n, bytes.clone());
        } else if !files.contains_key(&format!("tests/{n}.in")) {
            return Err(format!("{path} has no tests/{n}.in"));
        }
    }
    if inputs.is_empty() {
        return Err("the problem has no tests: add tests/0.in and tests/0.out".into());
    }
    let mut tests = Vec::with_capacity(inputs.len());
    for (expected, (n, input)) in inputs.into_iter().enumerate() {
        if n != expected {
            return Err(format!("tests/{expected}.in is missing (tests are numbered 0, 1, 2, ... without gaps)"));
        }
        let output = match files.get(&format!("tests/{n}.out")) {
            Some(out) => out.clone(),
            None if outputs_optional => Arc::new(Vec::new()),
            None => {
                return Err(format!("tests/{n}.out is missing (a built-in test case judge needs the model output)"))
            }
        };
        tests.push(Test { input, output });
    }
    Ok(tests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(toml: &str, extra: &[(&str, &str)]) -> BTreeMap<String, Arc<Vec<u8>>> {
        let mut files: BTreeMap<String, Arc<Vec<u8>>> = BTreeMap::new();
        files.insert("problem.toml".into(), Arc::new(toml.as_bytes().to_vec()));
        for (path, text) in extra {
            files.insert(path.to_string(), Arc::new(text.as_bytes().to_vec()));
        }
        files
    }

    const TESTS: [(&str, &str); 4] =
        [("tests/0.in", "1 2\n"), ("tests/0.out", "3\n"), ("tests/1.in", "2 2\n"), ("tests/1.out", "4\n")];

    #[test]
    fn a_simple_package_reads_with_defaults() {
        let p = Problem::from_files(&package(
            "time_limit = \"1s\"\nmemory_limit = \"64M\"\ntest_judge = \"ignore-whitespace\"\n",
            &TESTS,
        ))
        .unwrap();
        assert_eq!((p.time_limit, p.wall_time_limit, p.memory_limit), (1.0, 4.0, 64 << 20));
        assert_eq!(p.tests.len(), 2);
        assert_eq!(p.tests[1].output.as_slice(), b"4\n");
        assert!(matches!(p.test_judge, Judge::Builtin(TestJudge::IgnoreWhitespace)));
        assert!(matches!(p.master_judge, Judge::Builtin(MasterJudge::Generic)));
        assert!(!p.interactive);
    }

    #[test]
    fn judges_by_id_and_custom_ones() {
        let p = Problem::from_files(&package(
            "time_limit = 2\nmemory_limit = 67108864\ntest_judge = 10\nmaster_judge = { source = \"m.py\" }\n",
            &[TESTS[0], TESTS[1], ("m.py", "print('AC 0 0 0 0')")],
        ))
        .unwrap();
        assert!(matches!(p.test_judge, Judge::Builtin(TestJudge::Exact)));
        assert!(matches!(&p.master_judge, Judge::Custom(c) if c.path == "m.py"));
    }

    #[test]
    fn mistakes_are_named() {
        let base = "time_limit = \"1s\"\nmemory_limit = \"64M\"\n";
        type Case<'a> = (String, Vec<(&'a str, &'a str)>, &'a str);
        let cases: Vec<Case> = vec![
            (format!("{base}test_judge = \"nope\""), TESTS.to_vec(), "not a built-in test case judge"),
            (format!("{base}test_judge = 1\nmaster_judge = \"weighted\""), TESTS.to_vec(), "needs weights"),
            (format!("{base}test_judge = 1\nweights = [1]"), TESTS.to_vec(), "1 weights for 2 tests"),
            (format!("{base}test_judge = {{ source = \"j.c\" }}"), TESTS.to_vec(), "not in the problem"),
            (format!("{base}test_judge = 1"), [&TESTS[..], &[("tests/2.in", "")]].concat(), "tests/2.out is missing"),
            (format!("{base}test_judge = 1"), vec![TESTS[2], TESTS[3]], "tests/0.in is missing"),
            (format!("{base}test_judge = 1"), vec![("tests/01.in", "")], "tests/N.in"),
            (format!("{base}test_judge = 1"), vec![], "no tests"),
            ("time_limit = \"fast\"\nmemory_limit = \"64M\"\ntest_judge = 1".into(), TESTS.to_vec(), "time_limit"),
            (format!("{base}test_judge = 1\ncolour = 1"), TESTS.to_vec(), "unknown field"),
        ];
        for (toml, files, expected) in cases {
            let err = Problem::from_files(&package(&toml, &files)).unwrap_err();
            assert!(err.contains(expected), "{toml:?}: {err}");
        }
        let err = Problem::from_files(&BTreeMap::new()).unwrap_err();
        assert!(err.contains("problem.toml"), "{err}");
    }

    #[test]
    fn a_custom_test_judge_may_go_without_model_outputs() {
        let p = Problem::from_files(&package(
            "time_limit = 1\nmemory_limit = \"64M\"\ntest_judge = { source = \"j.py\" }\n",
            &[("tests/0.in", "x"), ("j.py", "")],
        ))
        .unwrap();
        assert!(p.tests[0].output.is_empty());
    }
}
