//! Verdicts (decisions 21), from invocations to tests to the submission, with groups and their
//! dependencies (decisions 22). Pure functions: the pipeline runs the programs, this module
//! decides what they mean.
//!
//! # Representation
//! A [`Verdict`] serializes as its name, a string: `"OK"`, `"WA"`, ..., and `"PT"` for every
//! partial score. PT's points travel beside it, in a `points` field of the object that carries
//! the verdict (as in the strategy protocol: `"verdict":"PT","points":2.5`), as
//! [`TestOutcome`] and [`TestFeedback`] do, both ways. A bare [`Verdict`] deserialized from
//! `"PT"` is `PT(0.0)`: rebuild it from the two fields with [`Verdict::from_parts`].
//!
//! # Invocations ([`invocation_verdict`], pipelines.md 2.4 and 2.7)
//! - `user`: exit 0 → OK; another exit code or a signal → RE; CPU time → TLE, real time → ILE,
//!   memory → MLE, a forbidden system call → SV; the output limit → RE (there is no OLE verdict);
//!   a sandbox failure → CF. The user's stderr never becomes a comment: the program reads the
//!   test, and comments may be shown to the contestant.
//! - `system`: exit 0 → OK; anything else → CF, commented with what happened and stderr.
//! - `testlib`: an exit → [`testlib_verdict`]; limits, signals, failures → CF.
//!
//! # Tests ([`combine`])
//! The first invocation whose verdict is neither OK, PT nor PE decides. Otherwise PE if any
//! invocation said PE (the spec allows only one PE among testlib programs that did not fail;
//! PE also wins over PT), else PT if any said PT, with the **smallest** points when several did
//! (every scorer must agree on the points it gives), else OK.
//!
//! # Groups ([`check_groups`], [`apply_dependencies`])
//! Dependencies name groups and must form a DAG. A test **passes** when it is OK, or PT with at
//! least its `max_points` (`PT max` is OK, up to a rounding tolerance). A group **fails** when any
//! of its tests does not pass or when it depends on a failed group; a group with no test fails
//! only through its dependencies. Every test of a group that depends, directly or transitively,
//! on a failed group becomes IG, except a CF, which stays: the problem's fault must show.
//!
//! # Points
//! A test's `max_points` is its `points` (default 1). It earns `max_points` when OK, its PT
//! points clamped to `[0, max_points]` when PT, else 0. A group's points: `each-test` → the sum
//! of what its tests earn; `complete-group` → the sum of its tests' `max_points` if all of them
//! pass, else 0. Tests outside any group (no group, or a name not among the groups) score
//! `each-test`. The submission's points are the sum of both; its `max_points` the sum of every
//! test's `max_points`.
//!
//! # Submission ([`submission_verdict`])
//! Dependencies are applied first (to a copy; applying them twice changes nothing). Then:
//! 1. every test passes (or there is none) → `AC`, with all the points;
//! 2. any test is CF → `CF` (the problem's fault first);
//! 3. the problem is scored (it has groups, a test has a PT verdict, or a test's `max_points`
//!    is not the default 1) → `PT` with its points, or `AC` if they reach `max_points`;
//! 4. else ICPC style: `{VERDICT} {TEST}` of the lowest-numbered test that does not pass,
//!    skipping IG tests (e.g. `WA 3`); if only IG tests fail, the first of them.
//!
//! [`SubmissionVerdict::compilation_error`] is the whole submission's CE.
//!
//! # Feedback
//! Each [`GroupResult`] carries the judge's full record (points, max, passed) and, in
//! `feedback`, what its `feedback_policy` lets the contestant see, each level adding to the
//! previous one: `none` → nothing; `points` → the group's points and max; `icpc` → also the
//! first (lowest-numbered) test that did not pass, with its verdict; `complete` → also every
//! test's verdict.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::testlib::{stderr_text, testlib_verdict};

/// A test's or an invocation's verdict. Serialized as its name (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Accepted.
    OK,
    /// Wrong answer.
    WA,
    /// Presentation error: the output's format is wrong.
    PE,
    /// Runtime error: a non-zero exit or a signal (or the output limit).
    RE,
    /// CPU time limit exceeded.
    TLE,
    /// Memory limit exceeded.
    MLE,
    /// Idleness (real time) limit exceeded.
    ILE,
    /// Check failed: the problem's or the judge's fault, never the contestant's.
    CF,
    /// Compilation error.
    CE,
    /// Ignored: not judged, because the test's group depends on a failed group.
    IG,
    /// Security violation: a forbidden system call.
    SV,
    /// Partially correct, with the points the test earns.
    PT(f64),
}

impl Verdict {
    /// Every verdict but PT, by name.
    const NAMED: [Verdict; 11] = [
        Verdict::OK,
        Verdict::WA,
        Verdict::PE,
        Verdict::RE,
        Verdict::TLE,
        Verdict::MLE,
        Verdict::ILE,
        Verdict::CF,
        Verdict::CE,
        Verdict::IG,
        Verdict::SV,
    ];

    /// The name: `"OK"`, ..., `"PT"` for any points.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::OK => "OK",
            Verdict::WA => "WA",
            Verdict::PE => "PE",
            Verdict::RE => "RE",
            Verdict::TLE => "TLE",
            Verdict::MLE => "MLE",
            Verdict::ILE => "ILE",
            Verdict::CF => "CF",
            Verdict::CE => "CE",
            Verdict::IG => "IG",
            Verdict::SV => "SV",
            Verdict::PT(_) => "PT",
        }
    }

    /// The verdict named `name`; `None` for an unknown name and for `"PT"`, which needs points
    /// ([`Verdict::from_parts`]).
    pub fn parse(name: &str) -> Option<Verdict> {
        Self::NAMED.into_iter().find(|v| v.name() == name)
    }

    /// The verdict of a name and its sibling `points`: PT needs finite points; the others take
    /// none (`points` is then ignored).
    pub fn from_parts(name: &str, points: Option<f64>) -> Option<Verdict> {
        match name {
            "PT" => points.filter(|p| p.is_finite()).map(Verdict::PT),
            _ => Self::parse(name),
        }
    }

    /// PT's points; `None` for the others.
    pub fn points(&self) -> Option<f64> {
        match self {
            Verdict::PT(p) => Some(*p),
            _ => None,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Verdict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Verdict, D::Error> {
        let name = String::deserialize(d)?;
        Verdict::from_parts(&name, Some(0.0))
            .ok_or_else(|| serde::de::Error::custom(format!("unknown verdict {name:?}")))
    }
}

/// Who is to blame when a program fails (pipelines.md 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The contestant's program: its failures are the contestant's.
    User,
    /// The problem's program: any failure is CF.
    System,
    /// The problem's testlib program: failures are CF, exits are read as testlib's.
    Testlib,
}

/// How an invocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal, not by a limit.
    Signaled(i32),
    /// CPU time limit.
    TimeLimit,
    /// Real (wall) time limit.
    RealTimeLimit,
    /// Memory limit.
    MemoryLimit,
    /// Output or file size limit.
    OutputLimit,
    /// A forbidden system call, by name.
    Forbidden(String),
    /// The sandbox failed; never the program's fault.
    Internal(String),
}

/// An invocation's end and its stderr (only read for `system` and `testlib` programs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub stderr: Vec<u8>,
}

/// The verdict and comment of one invocation of a program of kind `kind`.
pub fn invocation_verdict(kind: Kind, run: &RunOutcome) -> (Verdict, Option<String>) {
    match kind {
        Kind::User => match &run.status {
            RunStatus::Exited(0) => (Verdict::OK, None),
            RunStatus::Exited(_) | RunStatus::Signaled(_) => (Verdict::RE, Some(describe(&run.status))),
            RunStatus::TimeLimit => (Verdict::TLE, Some(describe(&run.status))),
            RunStatus::RealTimeLimit => (Verdict::ILE, Some(describe(&run.status))),
            RunStatus::MemoryLimit => (Verdict::MLE, Some(describe(&run.status))),
            RunStatus::OutputLimit => (Verdict::RE, Some(describe(&run.status))),
            RunStatus::Forbidden(_) => (Verdict::SV, Some(describe(&run.status))),
            RunStatus::Internal(_) => (Verdict::CF, Some(describe(&run.status))),
        },
        Kind::System => match &run.status {
            RunStatus::Exited(0) => (Verdict::OK, None),
            status => (Verdict::CF, Some(problem_failure("system", status, &run.stderr))),
        },
        Kind::Testlib => match &run.status {
            RunStatus::Exited(code) => testlib_verdict(Some(*code), &run.stderr),
            status => (Verdict::CF, Some(problem_failure("testlib", status, &run.stderr))),
        },
    }
}

/// What happened, in a few words.
fn describe(status: &RunStatus) -> String {
    match status {
        RunStatus::Exited(code) => format!("exit code {code}"),
        RunStatus::Signaled(signal) => {
            let name = nix::sys::signal::Signal::try_from(*signal).map(|s| s.as_str()).unwrap_or("unknown signal");
            format!("killed by signal {signal} ({name})")
        }
        RunStatus::TimeLimit => "time limit exceeded".to_string(),
        RunStatus::RealTimeLimit => "real time limit exceeded".to_string(),
        RunStatus::MemoryLimit => "memory limit exceeded".to_string(),
        RunStatus::OutputLimit => "output limit exceeded".to_string(),
        RunStatus::Forbidden(syscall) => format!("forbidden system call {syscall}"),
        RunStatus::Internal(message) => format!("internal error: {message}"),
    }
}

/// A CF's comment for a problem's program: what happened, then its stderr.
fn problem_failure(kind: &str, status: &RunStatus, stderr: &[u8]) -> String {
    let what = format!("{kind} program: {}", describe(status));
    match stderr_text(stderr) {
        Some(text) => format!("{what}: {text}"),
        None => what,
    }
}

/// A test's verdict from its invocations' verdicts, in the order they ran (module doc).
pub fn combine(invocations: &[Verdict]) -> Verdict {
    if let Some(v) = invocations.iter().find(|v| !matches!(v, Verdict::OK | Verdict::PT(_) | Verdict::PE)) {
        return *v;
    }
    if invocations.contains(&Verdict::PE) {
        return Verdict::PE;
    }
    invocations.iter().filter_map(Verdict::points).reduce(f64::min).map_or(Verdict::OK, Verdict::PT)
}

/// How a group's points are counted (decisions 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointsPolicy {
    /// All the group's points if every test passes, else none.
    CompleteGroup,
    /// The sum of what each test earns.
    EachTest,
}

/// What the contestant sees of a group (decisions 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeedbackPolicy {
    None,
    Points,
    Icpc,
    Complete,
}

/// A test group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    pub points_policy: PointsPolicy,
    pub feedback_policy: FeedbackPolicy,
    /// The names of the groups this one depends on.
    #[serde(default)]
    pub dependencies: Vec<String>,
}

/// A judged test. JSON: `{"no":1,"group":"g1"|null,"max_points":1.0,"verdict":"PT","points":0.5}`,
/// `points` present for PT only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "RawTestOutcome", from = "RawTestOutcome")]
pub struct TestOutcome {
    pub no: u32,
    pub group: Option<String>,
    /// The test's `points` (default 1).
    pub max_points: f64,
    pub verdict: Verdict,
}

/// [`TestOutcome`]'s JSON, with PT's points beside the verdict.
#[derive(Serialize, Deserialize)]
struct RawTestOutcome {
    no: u32,
    group: Option<String>,
    max_points: f64,
    verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    points: Option<f64>,
}

impl From<TestOutcome> for RawTestOutcome {
    fn from(t: TestOutcome) -> RawTestOutcome {
        let points = t.verdict.points();
        RawTestOutcome { no: t.no, group: t.group, max_points: t.max_points, verdict: t.verdict, points }
    }
}

impl From<RawTestOutcome> for TestOutcome {
    fn from(r: RawTestOutcome) -> TestOutcome {
        TestOutcome { no: r.no, group: r.group, max_points: r.max_points, verdict: with_points(r.verdict, r.points) }
    }
}

/// A deserialized verdict completed with its sibling `points` (a PT without them has 0).
fn with_points(verdict: Verdict, points: Option<f64>) -> Verdict {
    match verdict {
        Verdict::PT(_) => Verdict::PT(points.filter(|p| p.is_finite()).unwrap_or(0.0)),
        v => v,
    }
}

/// Tolerance for `PT max`: points computed by a checker may miss the maximum by rounding.
const POINTS_EPSILON: f64 = 1e-9;

impl TestOutcome {
    /// The most the test can earn: `max_points`, 0 if it is negative or not finite.
    fn max(&self) -> f64 {
        if self.max_points.is_finite() {
            self.max_points.max(0.0)
        } else {
            0.0
        }
    }

    /// OK, or PT with (nearly) all of its points.
    pub fn passed(&self) -> bool {
        match self.verdict {
            Verdict::OK => true,
            Verdict::PT(p) => p >= self.max() - POINTS_EPSILON * self.max().max(1.0),
            _ => false,
        }
    }

    /// What the test earns (module doc).
    pub fn earned(&self) -> f64 {
        match self.verdict {
            Verdict::OK => self.max(),
            Verdict::PT(p) if p.is_finite() => p.clamp(0.0, self.max()),
            _ => 0.0,
        }
    }
}

/// Refuses duplicate group names, dependencies on unknown groups, and cycles (the error names
/// the cycle: `g1 -> g2 -> g1`).
pub fn check_groups(groups: &[Group]) -> Result<(), String> {
    let mut index = HashMap::new();
    for (i, g) in groups.iter().enumerate() {
        if index.insert(g.name.as_str(), i).is_some() {
            return Err(format!("duplicate group {:?}", g.name));
        }
    }
    let mut edges = Vec::with_capacity(groups.len());
    for g in groups {
        let mut deps = Vec::with_capacity(g.dependencies.len());
        for d in &g.dependencies {
            match index.get(d.as_str()) {
                Some(&j) => deps.push(j),
                None => return Err(format!("group {:?} depends on unknown group {d:?}", g.name)),
            }
        }
        edges.push(deps);
    }
    // Depth-first search; `path` is the grey chain, `state` 0 white, 1 grey, 2 black.
    let mut state = vec![0u8; groups.len()];
    for root in 0..groups.len() {
        if state[root] != 0 {
            continue;
        }
        state[root] = 1;
        let mut path = vec![root];
        let mut next = vec![0usize];
        while let Some(&node) = path.last() {
            let k = next.last_mut().expect("next follows path");
            if let Some(&dep) = edges[node].get(*k) {
                *k += 1;
                match state[dep] {
                    0 => {
                        state[dep] = 1;
                        path.push(dep);
                        next.push(0);
                    }
                    1 => {
                        let start = path.iter().position(|&n| n == dep).expect("a grey node is on the path");
                        let mut names: Vec<&str> = path[start..].iter().map(|&n| groups[n].name.as_str()).collect();
                        names.push(&groups[dep].name);
                        return Err(format!("group dependencies form a cycle: {}", names.join(" -> ")));
                    }
                    _ => {}
                }
            } else {
                state[node] = 2;
                path.pop();
                next.pop();
            }
        }
    }
    Ok(())
}

/// The names of the failed groups (module doc), dependencies included. Terminates on cycles and
/// ignores unknown names, though [`check_groups`] refuses both.
fn failed_groups<'a>(tests: &[TestOutcome], groups: &'a [Group]) -> HashSet<&'a str> {
    let mut failed: HashSet<&str> = groups
        .iter()
        .filter(|g| tests.iter().any(|t| t.group.as_deref() == Some(g.name.as_str()) && !t.passed()))
        .map(|g| g.name.as_str())
        .collect();
    // Grows until nothing changes: at most one pass per group.
    loop {
        let more: Vec<&str> = groups
            .iter()
            .filter(|g| !failed.contains(g.name.as_str()) && g.dependencies.iter().any(|d| failed.contains(d.as_str())))
            .map(|g| g.name.as_str())
            .collect();
        if more.is_empty() {
            return failed;
        }
        failed.extend(more);
    }
}

/// Turns into IG every test (but a CF) of a group that depends, directly or transitively, on a
/// failed group.
pub fn apply_dependencies(tests: &mut [TestOutcome], groups: &[Group]) {
    let failed = failed_groups(tests, groups);
    let blocked: HashSet<&str> = groups
        .iter()
        .filter(|g| g.dependencies.iter().any(|d| failed.contains(d.as_str())))
        .map(|g| g.name.as_str())
        .collect();
    for t in tests.iter_mut() {
        if t.verdict != Verdict::CF && t.group.as_deref().is_some_and(|g| blocked.contains(g)) {
            t.verdict = Verdict::IG;
        }
    }
}

/// A test as the contestant may see it: PT's points in `points` (absent for the others).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "RawTestFeedback")]
pub struct TestFeedback {
    pub no: u32,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<f64>,
}

/// [`TestFeedback`]'s JSON, read back into a PT with its points.
#[derive(Deserialize)]
struct RawTestFeedback {
    no: u32,
    verdict: Verdict,
    #[serde(default)]
    points: Option<f64>,
}

impl From<RawTestFeedback> for TestFeedback {
    fn from(r: RawTestFeedback) -> TestFeedback {
        let verdict = with_points(r.verdict, r.points);
        TestFeedback { no: r.no, verdict, points: verdict.points() }
    }
}

impl TestFeedback {
    fn of(t: &TestOutcome) -> TestFeedback {
        TestFeedback { no: t.no, verdict: t.verdict, points: t.verdict.points() }
    }
}

/// What a group's `feedback_policy` lets the contestant see. JSON: `{"policy":"none"}`,
/// `{"policy":"points","points":..,"max_points":..}`, `icpc` adds `first_failure` (a
/// [`TestFeedback`] or null), `complete` adds `tests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "lowercase")]
pub enum Feedback {
    None,
    Points { points: f64, max_points: f64 },
    Icpc { points: f64, max_points: f64, first_failure: Option<TestFeedback> },
    Complete { points: f64, max_points: f64, tests: Vec<TestFeedback> },
}

/// A group's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupResult {
    pub name: String,
    pub points: f64,
    pub max_points: f64,
    /// Every test of the group passed, and it depends on no failed group.
    pub passed: bool,
    pub feedback: Feedback,
}

/// The submission's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmissionVerdict {
    /// `"AC"`, `"{VERDICT} {TEST}"` (e.g. `"WA 3"`), `"CF"`, `"CE"` or `"PT"`.
    pub verdict: String,
    pub points: f64,
    pub max_points: f64,
    /// One per group, in the problem's order; empty without groups.
    pub groups: Vec<GroupResult>,
}

impl SubmissionVerdict {
    /// The whole submission did not compile: no points, and no tests known (max 0).
    pub fn compilation_error() -> SubmissionVerdict {
        SubmissionVerdict { verdict: "CE".to_string(), points: 0.0, max_points: 0.0, groups: Vec::new() }
    }

    /// The judge could not judge the submission (e.g. the strategy crashed): CF, no points.
    pub fn check_failed(max_points: f64) -> SubmissionVerdict {
        SubmissionVerdict { verdict: "CF".to_string(), points: 0.0, max_points, groups: Vec::new() }
    }
}

/// The submission's verdict, points and groups (module doc).
pub fn submission_verdict(tests: &[TestOutcome], groups: &[Group]) -> SubmissionVerdict {
    let mut tests = tests.to_vec();
    tests.sort_by_key(|t| t.no);
    apply_dependencies(&mut tests, groups);
    let failed = failed_groups(&tests, groups);
    let known: HashSet<&str> = groups.iter().map(|g| g.name.as_str()).collect();

    let max_points: f64 = tests.iter().map(TestOutcome::max).sum();
    let ungrouped: f64 =
        tests.iter().filter(|t| !t.group.as_deref().is_some_and(|g| known.contains(g))).map(TestOutcome::earned).sum();
    let results: Vec<GroupResult> = groups
        .iter()
        .map(|g| {
            let members: Vec<&TestOutcome> =
                tests.iter().filter(|t| t.group.as_deref() == Some(g.name.as_str())).collect();
            group_result(g, &members, !failed.contains(g.name.as_str()))
        })
        .collect();
    let points = ungrouped + results.iter().map(|r| r.points).sum::<f64>();

    let full = |verdict: &str| SubmissionVerdict {
        verdict: verdict.to_string(),
        points: max_points,
        max_points,
        groups: results.clone(),
    };
    if tests.iter().all(TestOutcome::passed) {
        return full("AC");
    }
    let verdict = if tests.iter().any(|t| t.verdict == Verdict::CF) {
        "CF".to_string()
    } else if !groups.is_empty() || tests.iter().any(|t| matches!(t.verdict, Verdict::PT(_)) || t.max_points != 1.0) {
        if points >= max_points - POINTS_EPSILON * max_points.max(1.0) {
            return full("AC");
        }
        "PT".to_string()
    } else {
        let first = tests
            .iter()
            .find(|t| !t.passed() && t.verdict != Verdict::IG)
            .or_else(|| tests.iter().find(|t| !t.passed()))
            .expect("not every test passed");
        format!("{} {}", first.verdict, first.no)
    };
    SubmissionVerdict { verdict, points, max_points, groups: results }
}

/// One group's result from its tests, in order of number.
fn group_result(group: &Group, tests: &[&TestOutcome], passed: bool) -> GroupResult {
    let max_points: f64 = tests.iter().map(|t| t.max()).sum();
    let points = match group.points_policy {
        PointsPolicy::EachTest => tests.iter().map(|t| t.earned()).sum(),
        PointsPolicy::CompleteGroup if tests.iter().all(|t| t.passed()) => max_points,
        PointsPolicy::CompleteGroup => 0.0,
    };
    let feedback = match group.feedback_policy {
        FeedbackPolicy::None => Feedback::None,
        FeedbackPolicy::Points => Feedback::Points { points, max_points },
        FeedbackPolicy::Icpc => Feedback::Icpc {
            points,
            max_points,
            first_failure: tests.iter().find(|t| !t.passed()).map(|t| TestFeedback::of(t)),
        },
        FeedbackPolicy::Complete => {
            Feedback::Complete { points, max_points, tests: tests.iter().map(|t| TestFeedback::of(t)).collect() }
        }
    };
    GroupResult { name: group.name.clone(), points, max_points, passed, feedback }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::*;

    fn run(status: RunStatus, stderr: &str) -> RunOutcome {
        RunOutcome { status, stderr: stderr.as_bytes().to_vec() }
    }

    fn verdict(kind: Kind, status: RunStatus, stderr: &str) -> Verdict {
        invocation_verdict(kind, &run(status, stderr)).0
    }

    fn test(no: u32, group: Option<&str>, max_points: f64, verdict: Verdict) -> TestOutcome {
        TestOutcome { no, group: group.map(str::to_string), max_points, verdict }
    }

    fn group(name: &str, points: PointsPolicy, feedback: FeedbackPolicy, deps: &[&str]) -> Group {
        Group {
            name: name.to_string(),
            points_policy: points,
            feedback_policy: feedback,
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    /// g1 (tests 1-2, 1 point each, complete-group), g2 (tests 3-4, 2 points each, each-test,
    /// depends on g1), g3 (tests 5-6, 3 points each, complete-group, depends on g2).
    fn three_groups(feedback: FeedbackPolicy) -> Vec<Group> {
        vec![
            group("g1", PointsPolicy::CompleteGroup, feedback, &[]),
            group("g2", PointsPolicy::EachTest, feedback, &["g1"]),
            group("g3", PointsPolicy::CompleteGroup, feedback, &["g2"]),
        ]
    }

    fn three_group_tests(verdicts: [Verdict; 6]) -> Vec<TestOutcome> {
        let spec = [("g1", 1.0), ("g1", 1.0), ("g2", 2.0), ("g2", 2.0), ("g3", 3.0), ("g3", 3.0)];
        spec.iter().zip(verdicts).enumerate().map(|(i, (&(g, p), v))| test(i as u32 + 1, Some(g), p, v)).collect()
    }

    #[test]
    fn verdict_names_parse_and_serde() {
        for v in Verdict::NAMED {
            assert_eq!(Verdict::parse(v.name()), Some(v));
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{}\"", v.name()));
            assert_eq!(serde_json::from_str::<Verdict>(&format!("\"{v}\"")).unwrap(), v);
        }
        assert_eq!(Verdict::parse("PT"), None);
        assert_eq!(Verdict::parse("AC"), None);
        assert_eq!(Verdict::parse("ok"), None);
        assert_eq!(serde_json::to_string(&PT(2.5)).unwrap(), "\"PT\"");
        assert_eq!(serde_json::from_str::<Verdict>("\"PT\"").unwrap(), PT(0.0));
        assert!(serde_json::from_str::<Verdict>("\"XX\"").is_err());
        assert_eq!(Verdict::from_parts("PT", Some(2.5)), Some(PT(2.5)));
        assert_eq!(Verdict::from_parts("PT", None), None);
        assert_eq!(Verdict::from_parts("PT", Some(f64::NAN)), None);
        assert_eq!(Verdict::from_parts("WA", Some(1.0)), Some(WA));
        assert_eq!(PT(2.5).points(), Some(2.5));
        assert_eq!(OK.points(), None);
        let feedback = TestFeedback::of(&test(3, None, 1.0, PT(0.5)));
        assert_eq!(serde_json::to_string(&feedback).unwrap(), r#"{"no":3,"verdict":"PT","points":0.5}"#);
        let feedback = TestFeedback::of(&test(4, None, 1.0, WA));
        assert_eq!(serde_json::to_string(&feedback).unwrap(), r#"{"no":4,"verdict":"WA"}"#);
        let read: TestFeedback = serde_json::from_str(r#"{"no":3,"verdict":"PT","points":0.5}"#).unwrap();
        assert_eq!(read, TestFeedback::of(&test(3, None, 1.0, PT(0.5))));
        let outcome = test(7, Some("g1"), 2.0, PT(1.5));
        let json = serde_json::to_string(&outcome).unwrap();
        assert_eq!(json, r#"{"no":7,"group":"g1","max_points":2.0,"verdict":"PT","points":1.5}"#);
        assert_eq!(serde_json::from_str::<TestOutcome>(&json).unwrap(), outcome);
        let outcome = test(8, None, 1.0, WA);
        let json = serde_json::to_string(&outcome).unwrap();
        assert_eq!(json, r#"{"no":8,"group":null,"max_points":1.0,"verdict":"WA"}"#);
        assert_eq!(serde_json::from_str::<TestOutcome>(&json).unwrap(), outcome);
        let kinds: Vec<Kind> = serde_json::from_str(r#"["user","system","testlib"]"#).unwrap();
        assert_eq!(kinds, [Kind::User, Kind::System, Kind::Testlib]);
    }

    #[test]
    fn user_kind() {
        let u = |s| invocation_verdict(Kind::User, &run(s, "secret test data"));
        assert_eq!(u(RunStatus::Exited(0)), (OK, None));
        assert_eq!(u(RunStatus::Exited(3)), (RE, Some("exit code 3".into())));
        assert_eq!(u(RunStatus::Signaled(11)), (RE, Some("killed by signal 11 (SIGSEGV)".into())));
        assert_eq!(u(RunStatus::TimeLimit).0, TLE);
        assert_eq!(u(RunStatus::RealTimeLimit).0, ILE);
        assert_eq!(u(RunStatus::MemoryLimit).0, MLE);
        assert_eq!(u(RunStatus::OutputLimit), (RE, Some("output limit exceeded".into())));
        assert_eq!(u(RunStatus::Forbidden("ptrace".into())), (SV, Some("forbidden system call ptrace".into())));
        assert_eq!(u(RunStatus::Internal("cgroup gone".into())), (CF, Some("internal error: cgroup gone".into())));
        // The user's stderr never leaks into a comment.
        for s in [RunStatus::Exited(1), RunStatus::Signaled(6), RunStatus::TimeLimit, RunStatus::OutputLimit] {
            assert!(!u(s).1.unwrap_or_default().contains("secret"));
        }
    }

    #[test]
    fn system_kind() {
        assert_eq!(invocation_verdict(Kind::System, &run(RunStatus::Exited(0), "noise")), (OK, None));
        assert_eq!(
            invocation_verdict(Kind::System, &run(RunStatus::Exited(1), "bad input\n")),
            (CF, Some("system program: exit code 1: bad input".into()))
        );
        for s in [
            RunStatus::Signaled(9),
            RunStatus::TimeLimit,
            RunStatus::RealTimeLimit,
            RunStatus::MemoryLimit,
            RunStatus::OutputLimit,
            RunStatus::Forbidden("fork".into()),
            RunStatus::Internal("x".into()),
        ] {
            assert_eq!(verdict(Kind::System, s, ""), CF);
        }
        assert_eq!(
            invocation_verdict(Kind::System, &run(RunStatus::TimeLimit, "")).1.as_deref(),
            Some("system program: time limit exceeded")
        );
    }

    #[test]
    fn testlib_kind() {
        assert_eq!(invocation_verdict(Kind::Testlib, &run(RunStatus::Exited(0), "ok\n")), (OK, Some("ok".into())));
        assert_eq!(verdict(Kind::Testlib, RunStatus::Exited(1), "wrong answer"), WA);
        assert_eq!(verdict(Kind::Testlib, RunStatus::Exited(2), ""), PE);
        assert_eq!(verdict(Kind::Testlib, RunStatus::Exited(8), ""), PE);
        assert_eq!(verdict(Kind::Testlib, RunStatus::Exited(3), ""), CF);
        assert_eq!(verdict(Kind::Testlib, RunStatus::Exited(7), "points 1.5 half"), PT(1.5));
        assert_eq!(verdict(Kind::Testlib, RunStatus::Exited(42), ""), CF);
        for s in [
            RunStatus::Signaled(11),
            RunStatus::TimeLimit,
            RunStatus::RealTimeLimit,
            RunStatus::MemoryLimit,
            RunStatus::OutputLimit,
            RunStatus::Forbidden("fork".into()),
            RunStatus::Internal("x".into()),
        ] {
            assert_eq!(verdict(Kind::Testlib, s, "ok"), CF);
        }
        assert_eq!(
            invocation_verdict(Kind::Testlib, &run(RunStatus::MemoryLimit, "partial\n")).1.as_deref(),
            Some("testlib program: memory limit exceeded: partial")
        );
    }

    #[test]
    fn combine_order() {
        assert_eq!(combine(&[]), OK);
        assert_eq!(combine(&[OK, OK]), OK);
        // The first failure decides, whatever follows and whatever PE or PT came before.
        assert_eq!(combine(&[OK, TLE, WA]), TLE);
        assert_eq!(combine(&[PE, WA, CF]), WA);
        assert_eq!(combine(&[PT(1.0), RE]), RE);
        assert_eq!(combine(&[OK, CF, WA]), CF);
        assert_eq!(combine(&[SV, OK]), SV);
        // No failure: PE over PT over OK.
        assert_eq!(combine(&[OK, PE]), PE);
        assert_eq!(combine(&[PT(2.0), PE]), PE);
        assert_eq!(combine(&[OK, PT(2.0), OK]), PT(2.0));
        assert_eq!(combine(&[PT(2.0), PT(0.5), PT(1.0)]), PT(0.5));
        assert_eq!(combine(&[PT(0.0)]), PT(0.0));
    }

    #[test]
    fn check_groups_refuses_unknown_duplicate_and_cycles() {
        assert_eq!(check_groups(&[]), Ok(()));
        assert_eq!(check_groups(&three_groups(FeedbackPolicy::None)), Ok(()));
        let e = PointsPolicy::EachTest;
        let f = FeedbackPolicy::None;
        // A diamond is no cycle.
        let diamond =
            [group("a", e, f, &[]), group("b", e, f, &["a"]), group("c", e, f, &["a"]), group("d", e, f, &["b", "c"])];
        assert_eq!(check_groups(&diamond), Ok(()));
        assert_eq!(
            check_groups(&[group("g1", e, f, &["gx"])]),
            Err(r#"group "g1" depends on unknown group "gx""#.into())
        );
        assert_eq!(
            check_groups(&[group("g1", e, f, &[]), group("g1", e, f, &[])]),
            Err(r#"duplicate group "g1""#.into())
        );
        assert_eq!(
            check_groups(&[group("g1", e, f, &["g1"])]),
            Err("group dependencies form a cycle: g1 -> g1".into())
        );
        let cycle = [
            group("g0", e, f, &[]),
            group("g1", e, f, &["g0", "g3"]),
            group("g2", e, f, &["g1"]),
            group("g3", e, f, &["g2"]),
        ];
        assert_eq!(check_groups(&cycle), Err("group dependencies form a cycle: g1 -> g3 -> g2 -> g1".into()));
        // Applying dependencies on a cycle still terminates.
        let mut tests = vec![test(1, Some("g0"), 1.0, WA), test(2, Some("g2"), 1.0, OK)];
        apply_dependencies(&mut tests, &cycle);
        assert_eq!(tests[1].verdict, IG);
    }

    #[test]
    fn dependencies_make_ig_transitively() {
        let groups = three_groups(FeedbackPolicy::Complete);
        // g1 fails: g2 and, through it, g3 are ignored.
        let mut tests = three_group_tests([OK, WA, OK, OK, OK, OK]);
        apply_dependencies(&mut tests, &groups);
        let verdicts: Vec<Verdict> = tests.iter().map(|t| t.verdict).collect();
        assert_eq!(verdicts, [OK, WA, IG, IG, IG, IG]);
        // Idempotent.
        let again = tests.clone();
        apply_dependencies(&mut tests, &groups);
        assert_eq!(tests, again);
        // g2 fails (partially): only g3 is ignored; a CF stays CF.
        let mut tests = three_group_tests([OK, OK, PT(1.0), OK, OK, CF]);
        apply_dependencies(&mut tests, &groups);
        let verdicts: Vec<Verdict> = tests.iter().map(|t| t.verdict).collect();
        assert_eq!(verdicts, [OK, OK, PT(1.0), OK, IG, CF]);
        // PT max passes, so nothing is ignored.
        let mut tests = three_group_tests([OK, PT(1.0), OK, PT(2.0), OK, OK]);
        apply_dependencies(&mut tests, &groups);
        assert!(tests.iter().all(|t| t.verdict != IG));
    }

    #[test]
    fn three_groups_points_policies() {
        let groups = three_groups(FeedbackPolicy::Points);
        // All OK: AC, 1+1 + 2+2 + 3+3.
        let all = submission_verdict(&three_group_tests([OK; 6]), &groups);
        assert_eq!((all.verdict.as_str(), all.points, all.max_points), ("AC", 12.0, 12.0));
        assert!(all.groups.iter().all(|g| g.passed && g.points == g.max_points));

        // g1 fails: complete-group g1 gets 0, g2 and g3 are IG.
        let s = submission_verdict(&three_group_tests([OK, WA, OK, OK, OK, OK]), &groups);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("PT", 0.0, 12.0));
        let points: Vec<(f64, f64, bool)> = s.groups.iter().map(|g| (g.points, g.max_points, g.passed)).collect();
        assert_eq!(points, [(0.0, 2.0, false), (0.0, 4.0, false), (0.0, 6.0, false)]);

        // each-test g2 earns per test (OK 2 + PT 0.5), complete-group g3 gets nothing (IG).
        let s = submission_verdict(&three_group_tests([OK, OK, OK, PT(0.5), OK, OK]), &groups);
        assert_eq!((s.verdict.as_str(), s.points), ("PT", 2.0 + 2.5));
        assert_eq!(s.groups[1].feedback, Feedback::Points { points: 2.5, max_points: 4.0 });
        assert!(!s.groups[1].passed);
        assert_eq!(s.groups[2].points, 0.0);

        // complete-group g3 with one WA: 0, the rest full.
        let s = submission_verdict(&three_group_tests([OK, OK, OK, OK, OK, WA]), &groups);
        assert_eq!((s.verdict.as_str(), s.points), ("PT", 6.0));
        // The same with g3 each-test: 3 of 6.
        let mut each = groups.clone();
        each[2].points_policy = PointsPolicy::EachTest;
        let s = submission_verdict(&three_group_tests([OK, OK, OK, OK, OK, WA]), &each);
        assert_eq!((s.verdict.as_str(), s.points), ("PT", 9.0));
        // PT points are clamped to the test's maximum.
        let s = submission_verdict(&three_group_tests([OK, OK, PT(5.0), PT(-1.0), OK, OK]), &each);
        assert_eq!(s.groups[1].points, 2.0);
        // g2 gets 0 of its PT test under complete-group.
        each[1].points_policy = PointsPolicy::CompleteGroup;
        let s = submission_verdict(&three_group_tests([OK, OK, OK, PT(1.5), OK, OK]), &each);
        assert_eq!(s.groups[1].points, 0.0);
    }

    #[test]
    fn feedback_policies() {
        let tests = three_group_tests([OK, OK, OK, WA, OK, OK]);
        let none = submission_verdict(&tests, &three_groups(FeedbackPolicy::None));
        assert!(none.groups.iter().all(|g| g.feedback == Feedback::None));
        assert_eq!(serde_json::to_value(&none.groups[0].feedback).unwrap(), serde_json::json!({"policy":"none"}));

        let points = submission_verdict(&tests, &three_groups(FeedbackPolicy::Points));
        assert_eq!(points.groups[1].feedback, Feedback::Points { points: 2.0, max_points: 4.0 });

        let icpc = submission_verdict(&tests, &three_groups(FeedbackPolicy::Icpc));
        assert_eq!(icpc.groups[0].feedback, Feedback::Icpc { points: 2.0, max_points: 2.0, first_failure: None });
        let wa = TestFeedback { no: 4, verdict: WA, points: None };
        assert_eq!(icpc.groups[1].feedback, Feedback::Icpc { points: 2.0, max_points: 4.0, first_failure: Some(wa) });
        let ig = TestFeedback { no: 5, verdict: IG, points: None };
        assert_eq!(icpc.groups[2].feedback, Feedback::Icpc { points: 0.0, max_points: 6.0, first_failure: Some(ig) });
        assert_eq!(
            serde_json::to_value(&icpc.groups[1].feedback).unwrap(),
            serde_json::json!({"policy":"icpc","points":2.0,"max_points":4.0,"first_failure":{"no":4,"verdict":"WA"}})
        );

        let complete = submission_verdict(
            &three_group_tests([OK, OK, OK, PT(1.0), OK, OK]),
            &three_groups(FeedbackPolicy::Complete),
        );
        let Feedback::Complete { points, max_points, tests } = &complete.groups[1].feedback else {
            panic!("{:?}", complete.groups[1].feedback)
        };
        assert_eq!((*points, *max_points), (3.0, 4.0));
        assert_eq!(
            tests,
            &[
                TestFeedback { no: 3, verdict: OK, points: None },
                TestFeedback { no: 4, verdict: PT(1.0), points: Some(1.0) }
            ]
        );
        let json = serde_json::to_string(&complete).unwrap();
        assert_eq!(serde_json::from_str::<SubmissionVerdict>(&json).unwrap(), complete);
    }

    #[test]
    fn icpc_style_without_groups() {
        let s = submission_verdict(&[test(1, None, 1.0, OK), test(2, None, 1.0, OK)], &[]);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("AC", 2.0, 2.0));
        assert!(s.groups.is_empty());
        // The lowest-numbered failure, whatever the order given.
        let tests = [test(5, None, 1.0, TLE), test(3, None, 1.0, WA), test(1, None, 1.0, OK)];
        let s = submission_verdict(&tests, &[]);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("WA 3", 1.0, 3.0));
        // IG is skipped when looking for the first failure, unless nothing else failed.
        let tests = [test(1, None, 1.0, IG), test(2, None, 1.0, ILE)];
        assert_eq!(submission_verdict(&tests, &[]).verdict, "ILE 2");
        assert_eq!(submission_verdict(&[test(1, None, 1.0, OK), test(2, None, 1.0, IG)], &[]).verdict, "IG 2");
        assert_eq!(submission_verdict(&[test(1, None, 1.0, PE)], &[]).verdict, "PE 1");
        // No tests: nothing failed.
        let s = submission_verdict(&[], &[]);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("AC", 0.0, 0.0));
    }

    #[test]
    fn scored_without_groups() {
        // A PT makes the problem scored.
        let s = submission_verdict(&[test(1, None, 1.0, OK), test(2, None, 1.0, PT(0.25))], &[]);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("PT", 1.25, 2.0));
        // So do test points other than 1: a WA is then PT.
        let s = submission_verdict(&[test(1, None, 10.0, OK), test(2, None, 30.0, WA)], &[]);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("PT", 10.0, 40.0));
    }

    #[test]
    fn pt_max_is_ac() {
        let s = submission_verdict(&[test(1, None, 1.0, OK), test(2, None, 5.0, PT(5.0))], &[]);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("AC", 6.0, 6.0));
        // Within rounding, and above the maximum too.
        let s =
            submission_verdict(&[test(1, None, 1.0, PT(0.1 + 0.2 + 0.7 - 1e-12)), test(2, None, 1.0, PT(7.0))], &[]);
        assert_eq!((s.verdict.as_str(), s.points), ("AC", 2.0));
        // In a complete-group group.
        let groups = [group("g", PointsPolicy::CompleteGroup, FeedbackPolicy::Points, &[])];
        let s = submission_verdict(&[test(1, Some("g"), 2.0, PT(2.0)), test(2, Some("g"), 1.0, OK)], &groups);
        assert_eq!((s.verdict.as_str(), s.points), ("AC", 3.0));
        assert!(s.groups[0].passed);
    }

    #[test]
    fn cf_comes_first() {
        let tests = [test(1, None, 1.0, WA), test(2, None, 1.0, CF), test(3, None, 1.0, TLE)];
        assert_eq!(submission_verdict(&tests, &[]).verdict, "CF");
        let groups = three_groups(FeedbackPolicy::Icpc);
        // Even in an ignored group, and with PT elsewhere.
        let s = submission_verdict(&three_group_tests([WA, OK, PT(1.0), OK, CF, OK]), &groups);
        assert_eq!((s.verdict.as_str(), s.points), ("CF", 0.0));
    }

    #[test]
    fn ungrouped_tests_in_a_grouped_problem_score_each_test() {
        let groups = [group("g", PointsPolicy::CompleteGroup, FeedbackPolicy::None, &[])];
        let tests = [test(1, Some("g"), 2.0, OK), test(2, None, 1.0, OK), test(3, Some("other"), 1.0, WA)];
        let s = submission_verdict(&tests, &groups);
        assert_eq!((s.verdict.as_str(), s.points, s.max_points), ("PT", 3.0, 4.0));
        assert_eq!(s.groups.len(), 1);
    }

    #[test]
    fn compilation_error_and_check_failed() {
        let ce = SubmissionVerdict::compilation_error();
        assert_eq!((ce.verdict.as_str(), ce.points, ce.max_points, ce.groups.len()), ("CE", 0.0, 0.0, 0));
        let cf = SubmissionVerdict::check_failed(10.0);
        assert_eq!((cf.verdict.as_str(), cf.points, cf.max_points), ("CF", 0.0, 10.0));
    }
}
