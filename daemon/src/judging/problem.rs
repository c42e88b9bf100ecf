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
    pub tests: Vec<Test>,
}

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
    test_judge: RawJudge,
    #[serde(default = "generic")]
    master_judge: RawJudge,
    #[serde(default)]
    weights: Option<Vec<f64>>,
    #[serde(default)]
    judge_time_limit: Option<Quantity>,
    #[serde(default)]
    judge_memory_limit: Option<Quantity>,
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
        let tests = read_tests(files, matches!(raw.test_judge, RawJudge::Custom { .. }))?;
        let test_judge = match raw.test_judge {
            RawJudge::Custom { source, language } => Judge::Custom(custom(files, source, language)?),
            named => {
                let name = named.name();
                Judge::Builtin(TestJudge::by_name(&name).ok_or_else(|| {
                    format!(
                        "problem.toml: test_judge {name:?} is not a built-in test case judge (1 ignore-whitespace, \
                         2 float-1e-2, 3 float-1e-6, 4 source-length, 10 exact) nor {{ source = \"...\" }}"
                    )
                })?)
            }
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
            tests,
        })
    }
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
