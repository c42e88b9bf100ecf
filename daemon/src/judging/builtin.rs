//! The built-in judges (decisions 17): test case judges that compare a submission's output with
//! the model output, and master judges that turn the tests' results into the final verdict.
//!
//! Pure functions, run in the daemon rather than in a sandbox: they are segi's own code, and
//! running them in-process spares a sandbox per test. Their results have the same shape as a
//! custom judge's (status, score, info; or a [`Final`]), so the caller treats both alike.
//!
//! # Test case judges
//! - 1 `ignore-whitespace`: the outputs' tokens (runs of non-whitespace bytes; whitespace is C's
//!   `isspace`: space, `\t`, `\n`, `\v`, `\f`, `\r`) must be equal. So CRLF, tabs, blank lines and
//!   a missing final newline do not matter. Score 0.
//! - 2 `float-1e-2`, 3 `float-1e-6`: tokens compared one by one; equal bytes match, else both must
//!   be finite numbers with |got - expected| <= eps * max(1, |expected|): absolute near zero,
//!   relative for large numbers. Token counts must match. Score 0.
//! - 4 `source-length`: as 1; the score is the source's length in bytes (0 on WA).
//! - 10 `exact`: byte-for-byte equality. Score 0.
//!
//! A WA's `info` says where the first difference is, bounded to [`INFO_MAX`] bytes. Outputs can
//! be tens of MB: tokens are slices of the outputs, never copied.
//!
//! # Master judges
//! - 1000 `generic`: all AC → AC with the average score; else the status and signal of the first
//!   (lowest-numbered) failed test, score 0. Time is the sum, memory the maximum, of all tests.
//! - 1001 `percentage`: AC, score 100 × accepted / tests (two decimals); time and memory over the
//!   accepted tests only.
//! - `weighted`: as `percentage`, with the problem's per-test weights.

use segi_proto::judge::{Status, TestResult};

use super::streams::{bounded_text, quoted, Final};

/// The longest `info` of a WA, in bytes (then `…`).
pub const INFO_MAX: usize = 200;

/// How many bytes of a token or an excerpt a WA's `info` quotes: two fit in [`INFO_MAX`].
const EXCERPT_MAX: usize = 60;

/// Tolerance for the float judges' rounding: the inputs are decimal and f64 is binary, so
/// `1.01 - 1.00` is `0.010000000000000009`. Without it, a difference of exactly epsilon (the
/// boundary the problem setter means to accept) would be WA by chance of representation. A few
/// ulps of the numbers compared: far below any epsilon a problem uses.
const ROUNDING: f64 = 4.0 * f64::EPSILON;

/// A built-in test case judge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TestJudge {
    /// Id 1: the tokens must be equal.
    IgnoreWhitespace,
    /// Ids 2 (`epsilon` 1e-2) and 3 (1e-6): the tokens must be equal or close numbers.
    Float { epsilon: f64 },
    /// Id 4: as [`TestJudge::IgnoreWhitespace`], scored by the source's length.
    SourceLength,
    /// Id 10: the outputs must be byte-for-byte equal.
    Exact,
}

/// A test case judge's decision on one test.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// AC or WA: the only two a test case judge decides (sphere-judges.txt).
    pub status: Status,
    pub score: f64,
    /// For WA, where the output first differs, for the user; else absent.
    pub info: Option<String>,
}

impl TestJudge {
    /// The built-in named by `name`: its id (`"1"`) or its name (`"ignore-whitespace"`), as
    /// `problem.toml` may give either.
    pub fn by_name(name: &str) -> Option<TestJudge> {
        match name {
            "1" | "ignore-whitespace" => Some(TestJudge::IgnoreWhitespace),
            "2" | "float-1e-2" => Some(TestJudge::Float { epsilon: 1e-2 }),
            "3" | "float-1e-6" => Some(TestJudge::Float { epsilon: 1e-6 }),
            "4" | "source-length" => Some(TestJudge::SourceLength),
            "10" | "exact" => Some(TestJudge::Exact),
            _ => None,
        }
    }

    /// The name [`TestJudge::by_name`] knows it by; `float` for an epsilon no built-in has.
    pub fn name(&self) -> &'static str {
        match *self {
            TestJudge::IgnoreWhitespace => "ignore-whitespace",
            TestJudge::Float { epsilon: 1e-2 } => "float-1e-2",
            TestJudge::Float { epsilon: 1e-6 } => "float-1e-6",
            TestJudge::Float { .. } => "float",
            TestJudge::SourceLength => "source-length",
            TestJudge::Exact => "exact",
        }
    }

    /// Judges the `user`'s output of one test against the `model` output. `input` (the test's
    /// input) is used by no built-in; it is taken so that built-in and custom judges, which get
    /// the same streams, are called alike.
    pub fn judge(&self, input: &[u8], user: &[u8], model: &[u8], source: &[u8]) -> Verdict {
        let _ = input;
        let outcome = match *self {
            TestJudge::IgnoreWhitespace | TestJudge::SourceLength => {
                compare_tokens(user, model, |e, g| e == g).map_err(|d| d.describe(None))
            }
            TestJudge::Float { epsilon } => {
                compare_tokens(user, model, |e, g| floats_match(e, g, epsilon)).map_err(|d| d.describe(Some(epsilon)))
            }
            TestJudge::Exact => compare_exact(user, model),
        };
        match outcome {
            Ok(()) => Verdict { status: Status::AC, score: self.score(source), info: None },
            Err(info) => {
                Verdict { status: Status::WA, score: 0.0, info: Some(bounded_text(info.as_bytes(), INFO_MAX)) }
            }
        }
    }

    /// The score of an accepted output.
    fn score(&self, source: &[u8]) -> f64 {
        match self {
            TestJudge::SourceLength => source.len() as f64,
            _ => 0.0,
        }
    }
}

/// C's `isspace` in the "C" locale: what a token judge written in C would skip.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// The tokens of an output, as slices of it: no copy, whatever its size.
fn tokens(output: &[u8]) -> impl Iterator<Item = &[u8]> {
    output.split(|b| is_space(*b)).filter(|t| !t.is_empty())
}

/// The first difference between two outputs' token sequences.
#[derive(Debug, PartialEq)]
enum Difference<'a> {
    /// Token `index` (from 0) differs.
    Token { index: usize, expected: &'a [u8], got: &'a [u8] },
    /// All tokens of the shorter sequence match, but the counts differ.
    Count { expected: usize, got: usize },
}

/// Compares the tokens of `user` with those of `model`, one by one with `same(expected, got)`.
fn compare_tokens<'a>(
    user: &'a [u8],
    model: &'a [u8],
    same: impl Fn(&[u8], &[u8]) -> bool,
) -> Result<(), Difference<'a>> {
    let mut got = tokens(user);
    let mut expected = tokens(model);
    let mut index = 0;
    loop {
        match (expected.next(), got.next()) {
            (None, None) => return Ok(()),
            (Some(e), Some(g)) if same(e, g) => index += 1,
            (Some(e), Some(g)) => return Err(Difference::Token { index, expected: e, got: g }),
            (e, g) => {
                // One sequence ended: count the rest of the other, to say how many there are.
                let expected = index + usize::from(e.is_some()) + expected.count();
                let got = index + usize::from(g.is_some()) + got.count();
                return Err(Difference::Count { expected, got });
            }
        }
    }
}

impl Difference<'_> {
    /// The WA's info; with the float judge's `epsilon`, how far off a number is.
    fn describe(&self, epsilon: Option<f64>) -> String {
        match *self {
            Difference::Token { index, expected, got } => {
                let detail = epsilon.map(|eps| float_detail(expected, got, eps)).unwrap_or_default();
                format!(
                    "token {}: expected {}, got {}{detail}",
                    index + 1,
                    quoted(expected, EXCERPT_MAX),
                    quoted(got, EXCERPT_MAX)
                )
            }
            Difference::Count { expected, got } => format!("expected {expected} {}, got {got}", plural(expected)),
        }
    }
}

fn plural(tokens: usize) -> &'static str {
    if tokens == 1 {
        "token"
    } else {
        "tokens"
    }
}

/// Whether the float judges accept `got` for `expected`.
fn floats_match(expected: &[u8], got: &[u8], epsilon: f64) -> bool {
    if expected == got {
        return true;
    }
    match (finite_number(expected), finite_number(got)) {
        (Some(e), Some(g)) => (g - e).abs() <= allowed(e, g, epsilon),
        _ => false,
    }
}

/// The largest difference accepted between `expected` and `got`: epsilon, relative to
/// `expected` when it is larger than 1, and the rounding of binary floats.
fn allowed(expected: f64, got: f64, epsilon: f64) -> f64 {
    epsilon * expected.abs().max(1.0) + ROUNDING * expected.abs().max(got.abs()).max(1.0)
}

/// A token as a finite number, if it is one.
fn finite_number(token: &[u8]) -> Option<f64> {
    std::str::from_utf8(token).ok()?.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Why two differing tokens are not close numbers, for the float judges' info.
fn float_detail(expected: &[u8], got: &[u8], epsilon: f64) -> String {
    match (finite_number(expected), finite_number(got)) {
        (Some(e), Some(g)) => format!(" (off by {:.3e}, allowed {:.3e})", (g - e).abs(), epsilon * e.abs().max(1.0)),
        (Some(_), None) => " (not a finite number)".to_string(),
        _ => String::new(),
    }
}

/// Compares two outputs byte for byte; the error says where they first differ.
fn compare_exact(user: &[u8], model: &[u8]) -> Result<(), String> {
    if user == model {
        return Ok(());
    }
    let excerpt = |bytes: &[u8], at: usize| quoted(&bytes[at..], EXCERPT_MAX);
    match user.iter().zip(model).position(|(u, m)| u != m) {
        Some(at) => {
            let (line, column) = line_column(model, at);
            Err(format!("line {line}, column {column}: expected {}, got {}", excerpt(model, at), excerpt(user, at)))
        }
        None if user.len() < model.len() => Err(format!(
            "expected {} bytes, got {}: missing {} at the end",
            model.len(),
            user.len(),
            excerpt(model, user.len())
        )),
        None => Err(format!(
            "expected {} bytes, got {}: extra {} at the end",
            model.len(),
            user.len(),
            excerpt(user, model.len())
        )),
    }
}

/// The line and column (from 1, the column in bytes) of byte `at` of `text`.
fn line_column(text: &[u8], at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = 1 + memchr::memchr_iter(b'\n', before).count();
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    (line, at - line_start + 1)
}

/// A built-in master judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterJudge {
    /// Id 1000: all AC or the first failure.
    Generic,
    /// Id 1001: the percentage of accepted tests.
    Percentage,
    /// No id (Sphere Engine has none): the weighted percentage of accepted tests.
    Weighted,
}

impl MasterJudge {
    /// The built-in named by `name`: `"1000"`/`"generic"`, `"1001"`/`"percentage"`, `"weighted"`.
    pub fn by_name(name: &str) -> Option<MasterJudge> {
        match name {
            "1000" | "generic" => Some(MasterJudge::Generic),
            "1001" | "percentage" => Some(MasterJudge::Percentage),
            "weighted" => Some(MasterJudge::Weighted),
            _ => None,
        }
    }

    /// The name [`MasterJudge::by_name`] knows it by.
    pub fn name(&self) -> &'static str {
        match self {
            MasterJudge::Generic => "generic",
            MasterJudge::Percentage => "percentage",
            MasterJudge::Weighted => "weighted",
        }
    }

    /// The final verdict on `tests`, given in test order. `weights[i]` is the weight of
    /// `tests[i]`; only `weighted` uses them. An error is the problem's fault (no tests for a
    /// percentage, bad weights): the caller reports IE with it.
    pub fn summarize(&self, tests: &[TestResult], weights: Option<&[f64]>) -> Result<Final, String> {
        match self {
            MasterJudge::Generic => Ok(generic(tests)),
            MasterJudge::Percentage => {
                if tests.is_empty() {
                    return Err("the percentage master judge needs at least one test".to_string());
                }
                Ok(accepted_share(tests, &vec![1.0; tests.len()]))
            }
            MasterJudge::Weighted => Ok(accepted_share(tests, check_weights(tests.len(), weights)?)),
        }
    }
}

/// The generic master judge. No tests at all is vacuously all AC, with score 0.
fn generic(tests: &[TestResult]) -> Final {
    let time = sum(tests.iter().map(|t| t.time));
    let memory = tests.iter().map(|t| t.memory).max().unwrap_or(0);
    match tests.iter().filter(|t| t.status != Status::AC).min_by_key(|t| t.test) {
        Some(failed) => Final { status: failed.status, score: 0.0, signal: failed.signal, time, memory },
        None => {
            let score = if tests.is_empty() { 0.0 } else { sum(tests.iter().map(|t| t.score)) / tests.len() as f64 };
            Final { status: Status::AC, score, signal: 0, time, memory }
        }
    }
}

/// The weights of `weighted`, checked: one positive finite number per test, at least one test.
fn check_weights(tests: usize, weights: Option<&[f64]>) -> Result<&[f64], String> {
    if tests == 0 {
        return Err("the weighted master judge needs at least one test".to_string());
    }
    let Some(weights) = weights else {
        return Err("the weighted master judge needs `weights` in problem.toml: one positive number per test".into());
    };
    if weights.len() != tests {
        return Err(format!(
            "the weighted master judge has {} weights for {tests} tests: one positive number per test",
            weights.len()
        ));
    }
    if let Some((test, w)) = weights.iter().enumerate().find(|(_, w)| !(w.is_finite() && **w > 0.0)) {
        return Err(format!("the weight of test {test} is {w}: weights must be positive numbers"));
    }
    if !weights.iter().sum::<f64>().is_finite() {
        return Err("the weights add up to more than a 64-bit float holds".to_string());
    }
    Ok(weights)
}

/// `percentage` and `weighted`: AC, score 100 × the accepted tests' weight / all the weight;
/// time and memory of the accepted tests only. `weights` are checked, as many as `tests`.
fn accepted_share(tests: &[TestResult], weights: &[f64]) -> Final {
    let total = sum(weights.iter().copied());
    let accepted = || tests.iter().zip(weights).filter(|(t, _)| t.status == Status::AC);
    let won = sum(accepted().map(|(_, w)| *w));
    let time = sum(accepted().map(|(t, _)| t.time));
    let memory = accepted().map(|(t, _)| t.memory).max().unwrap_or(0);
    Final { status: Status::AC, score: two_decimals(100.0 * won / total), signal: 0, time, memory }
}

/// A sum that is 0.0 for no terms: `Iterator::sum` of f64 starts from -0.0, which would
/// reach clients as `-0.0`.
fn sum(terms: impl Iterator<Item = f64>) -> f64 {
    terms.fold(0.0, |total, x| total + x)
}

/// `x` rounded to two decimals, as the scores of `percentage` and `weighted` are.
fn two_decimals(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const WS: TestJudge = TestJudge::IgnoreWhitespace;
    const F2: TestJudge = TestJudge::Float { epsilon: 1e-2 };
    const F6: TestJudge = TestJudge::Float { epsilon: 1e-6 };

    fn judge(j: TestJudge, user: &str, model: &str) -> Verdict {
        j.judge(b"input", user.as_bytes(), model.as_bytes(), b"source")
    }

    fn ac(j: TestJudge, user: &str, model: &str) -> bool {
        let v = judge(j, user, model);
        assert!(v.status == Status::AC || v.status == Status::WA, "{v:?}");
        assert_eq!(v.info.is_none(), v.status == Status::AC, "{v:?}");
        v.status == Status::AC
    }

    fn info(j: TestJudge, user: &str, model: &str) -> String {
        let v = judge(j, user, model);
        assert_eq!((v.status, v.score), (Status::WA, 0.0));
        v.info.unwrap()
    }

    fn t(test: usize, status: Status, score: f64, signal: i32, time: f64, memory: u64) -> TestResult {
        TestResult { test, status, score, signal, time, memory, info: None, message: None }
    }

    #[test]
    fn test_judges_by_id_and_name() {
        for (id, name, judge) in [
            ("1", "ignore-whitespace", WS),
            ("2", "float-1e-2", F2),
            ("3", "float-1e-6", F6),
            ("4", "source-length", TestJudge::SourceLength),
            ("10", "exact", TestJudge::Exact),
        ] {
            assert_eq!(TestJudge::by_name(id), Some(judge));
            assert_eq!(TestJudge::by_name(name), Some(judge));
            assert_eq!(judge.name(), name);
        }
        for unknown in ["", "0", "5", "1000", "Exact", " exact", "float", "generic"] {
            assert_eq!(TestJudge::by_name(unknown), None, "{unknown:?}");
        }
        assert_eq!(TestJudge::Float { epsilon: 0.5 }.name(), "float");
    }

    #[test]
    fn master_judges_by_id_and_name() {
        for (id, name, judge) in
            [("1000", "generic", MasterJudge::Generic), ("1001", "percentage", MasterJudge::Percentage)]
        {
            assert_eq!(MasterJudge::by_name(id), Some(judge));
            assert_eq!(MasterJudge::by_name(name), Some(judge));
            assert_eq!(judge.name(), name);
        }
        assert_eq!(MasterJudge::by_name("weighted"), Some(MasterJudge::Weighted));
        assert_eq!(MasterJudge::Weighted.name(), "weighted");
        for unknown in ["", "1", "1002", "Generic", "exact"] {
            assert_eq!(MasterJudge::by_name(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn ignore_whitespace_matches() {
        let model = "1 2\n3\n";
        for user in [
            "1 2\n3\n",
            "1 2\r\n3\r\n",
            "1\t2\n3",
            "1 2 3",
            "\n\n1   2\n\n\n3\n\n",
            "  1 2\n3  ",
            "1\x0b2\x0c3",
            "1\r2\r3\r",
        ] {
            assert!(ac(WS, user, model), "{user:?}");
        }
        assert!(ac(WS, "", ""));
        assert!(ac(WS, " \n\r\n", ""));
        assert!(ac(WS, "", "\n"));
    }

    #[test]
    fn ignore_whitespace_mismatches() {
        assert_eq!(info(WS, "1 2\n6\n", "1 2\n5\n"), "token 3: expected \"5\", got \"6\"");
        assert_eq!(info(WS, "1 2 3", "1 2"), "expected 2 tokens, got 3");
        assert_eq!(info(WS, "1", "1 2"), "expected 2 tokens, got 1");
        assert_eq!(info(WS, "", "1"), "expected 1 token, got 0");
        assert_eq!(info(WS, "1 2 3 4 5", ""), "expected 0 tokens, got 5");
        // A token differs before either sequence ends: the token is what is reported.
        assert_eq!(info(WS, "1 x 3 4", "1 2"), "token 2: expected \"2\", got \"x\"");
        // Whitespace inside a token is not ignored; case matters.
        assert_eq!(info(WS, "12", "1 2"), "token 1: expected \"1\", got \"12\"");
        assert_eq!(info(WS, "yes", "YES"), "token 1: expected \"YES\", got \"yes\"");
        // Other Unicode spaces are not whitespace (C's isspace).
        assert!(!ac(WS, "1\u{a0}2", "1 2"));
    }

    #[test]
    fn info_is_bounded() {
        let long_model = "a".repeat(10_000);
        let long_user = "b".repeat(10_000);
        let i = info(WS, &long_user, &long_model);
        assert!(i.len() <= INFO_MAX + '…'.len_utf8(), "{} bytes: {i}", i.len());
        assert!(i.starts_with(&format!("token 1: expected {:?}…, got {:?}…", &long_model[..60], &long_user[..60])));
        let i = info(TestJudge::Exact, &long_user, &long_model);
        assert!(i.len() <= INFO_MAX + '…'.len_utf8(), "{} bytes: {i}", i.len());
        // Quoting escapes: the info stays one line.
        assert_eq!(info(WS, "a\u{1}", "a"), "token 1: expected \"a\", got \"a\\u{1}\"");
    }

    #[test]
    fn tokens_are_not_utf8_checked() {
        assert!(ac(WS, "\u{ff} 1", "\u{ff}\n1"));
        assert!(ac(WS, "\x00", "\x00"));
        let v = TestJudge::IgnoreWhitespace.judge(b"", b"\xff\xfe", b"\xff", b"");
        assert_eq!(v.info.as_deref(), Some("token 1: expected \"\u{fffd}\", got \"\u{fffd}\u{fffd}\""));
    }

    #[test]
    fn exact_matches_only_equal_bytes() {
        let e = TestJudge::Exact;
        assert!(ac(e, "1 2\n3\n", "1 2\n3\n"));
        assert!(ac(e, "", ""));
        assert_eq!(info(e, "1 2\n3", "1 2\n3\n"), "expected 6 bytes, got 5: missing \"\\n\" at the end");
        assert_eq!(info(e, "1 2\n3\n\n", "1 2\n3\n"), "expected 6 bytes, got 7: extra \"\\n\" at the end");
        assert_eq!(
            info(e, "1 2\r\n3\r\n", "1 2\n3\n"),
            "line 1, column 4: expected \"\\n3\\n\", got \"\\r\\n3\\r\\n\""
        );
        assert_eq!(info(e, "ab\ncd\nex\n", "ab\ncd\nef\n"), "line 3, column 2: expected \"f\\n\", got \"x\\n\"");
        assert_eq!(info(e, "", "x"), "expected 1 bytes, got 0: missing \"x\" at the end");
    }

    #[test]
    fn exact_versus_ignore_whitespace() {
        for (user, model) in [("1  2\n", "1 2\n"), ("1 2", "1 2\n"), ("1 2\r\n", "1 2\n"), ("\t1 2\n", "1 2\n")] {
            assert!(ac(WS, user, model), "{user:?}");
            assert!(!ac(TestJudge::Exact, user, model), "{user:?}");
        }
        assert!(!ac(WS, "1 3", "1 2"));
        assert!(!ac(TestJudge::Exact, "1 3", "1 2"));
    }

    #[test]
    fn float_equal_tokens_and_whitespace() {
        assert!(ac(F2, "YES 1.5\r\n", "YES\n1.5"));
        assert!(ac(F2, "1.0 2 3e0", "1 2.00 3"));
        assert!(ac(F6, "0.333333", "0.3333333"));
        assert_eq!(info(F2, "NO", "YES"), "token 1: expected \"YES\", got \"NO\"");
        assert_eq!(info(F2, "1 2", "1 2 3"), "expected 3 tokens, got 2");
    }

    #[test]
    fn float_1e2_boundary() {
        // Exactly epsilon away is accepted, despite binary rounding of the decimals.
        assert!(ac(F2, "1.01", "1.00"));
        assert!(ac(F2, "0.99", "1.00"));
        assert!(ac(F2, "0.01", "0"));
        assert!(ac(F2, "-0.01", "0"));
        assert!(ac(F2, "0.125", "0.115"));
        // Just beyond is not.
        assert!(!ac(F2, "1.0101", "1.00"));
        assert!(!ac(F2, "0.98999", "1.00"));
        assert!(!ac(F2, "0.0100001", "0"));
        assert_eq!(
            info(F2, "1 1.02", "1 1.00"),
            "token 2: expected \"1.00\", got \"1.02\" (off by 2.000e-2, allowed 1.000e-2)"
        );
    }

    #[test]
    fn float_1e6_boundary() {
        assert!(ac(F6, "0.000001", "0"));
        assert!(ac(F6, "3.141593", "3.1415926"));
        assert!(!ac(F6, "0.0000011", "0"));
        assert!(!ac(F6, "3.1416", "3.1415926"));
    }

    #[test]
    fn float_is_relative_for_large_numbers() {
        // 1e-2 of 1000 is 10.
        assert!(ac(F2, "1010", "1000"));
        assert!(ac(F2, "990", "1000"));
        assert!(ac(F2, "-1010", "-1000"));
        assert!(!ac(F2, "1010.01", "1000"));
        // Relative to the expected number, not to the output's.
        assert!(!ac(F2, "1000", "989"));
        assert!(ac(F6, "1000001", "1000000"));
        assert!(!ac(F6, "1000001.1", "1000000"));
        assert!(ac(F6, "1.0000001e20", "1e20"));
        assert!(!ac(F6, "1.000002e20", "1e20"));
        // Below 1 in magnitude, the tolerance stays absolute.
        assert!(ac(F2, "0.0001", "0.009"));
    }

    #[test]
    fn float_non_finite_tokens_only_when_byte_equal() {
        for token in ["nan", "NaN", "inf", "-inf", "infinity", "1e999"] {
            assert!(ac(F2, token, token), "{token}");
        }
        assert!(!ac(F2, "NaN", "nan"));
        assert!(!ac(F2, "inf", "infinity"));
        assert!(!ac(F2, "1e999", "inf"));
        assert!(!ac(F2, "1e308", "1e999"));
        assert!(!ac(F2, "nan", "1"));
        assert_eq!(info(F2, "inf", "1"), "token 1: expected \"1\", got \"inf\" (not a finite number)");
        assert_eq!(info(F2, "x1", "1"), "token 1: expected \"1\", got \"x1\" (not a finite number)");
        assert_eq!(info(F2, "1", "inf"), "token 1: expected \"inf\", got \"1\"");
    }

    #[test]
    fn source_length_scores_the_source() {
        let j = TestJudge::SourceLength;
        let v = j.judge(b"", b"1 2\r\n", b"1 2\n", b"int main() {}\n");
        assert_eq!(v, Verdict { status: Status::AC, score: 14.0, info: None });
        let v = j.judge(b"", b"1 3", b"1 2", b"int main() {}\n");
        assert_eq!(
            v,
            Verdict { status: Status::WA, score: 0.0, info: Some("token 2: expected \"2\", got \"3\"".into()) }
        );
        assert_eq!(j.judge(b"", b"", b"", b"").score, 0.0);
    }

    #[test]
    fn other_judges_score_zero() {
        for j in [WS, F2, F6, TestJudge::Exact] {
            assert_eq!(
                j.judge(b"in", b"1\n", b"1\n", b"long source"),
                Verdict { status: Status::AC, score: 0.0, info: None }
            );
        }
    }

    #[test]
    fn large_outputs() {
        let model: Vec<u8> = (0..1_000_000u32).flat_map(|i| format!("{i} {}.5\n", i % 7).into_bytes()).collect();
        let user: Vec<u8> = model.iter().map(|&b| if b == b'\n' { b' ' } else { b }).collect();
        for j in [WS, F2, TestJudge::SourceLength] {
            assert_eq!(j.judge(b"", &user, &model, b"").status, Status::AC);
        }
        let mut wrong = user.clone();
        let last = wrong.len() - 2;
        wrong[last] = b'7';
        assert_eq!(judge_info(WS, &wrong, &model), "token 2000000: expected \"0.5\", got \"0.7\"");
        assert!(judge_info(TestJudge::Exact, &user, &model).starts_with("line 1, column 6: expected \"\\n1 1.5"));
        let short = &model[..model.len() - 1];
        assert_eq!(
            judge_info(TestJudge::Exact, short, &model),
            format!("expected {} bytes, got {}: missing \"\\n\" at the end", model.len(), short.len())
        );
    }

    fn judge_info(j: TestJudge, user: &[u8], model: &[u8]) -> String {
        j.judge(b"", user, model, b"").info.unwrap()
    }

    proptest! {
        /// ignore-whitespace accepts exactly when the whitespace-split words are equal.
        #[test]
        fn ignore_whitespace_is_token_equality(
            user in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b' '), Just(b'\n'), Just(b'\r'), Just(b'\t')], 0..20),
            model in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b' '), Just(b'\n'), Just(b'\r'), Just(b'\t')], 0..20),
        ) {
            let words = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap().split_ascii_whitespace().map(String::from).collect::<Vec<_>>();
            let v = WS.judge(b"", &user, &model, b"");
            prop_assert_eq!(v.status == Status::AC, words(&user) == words(&model));
        }
    }

    #[test]
    fn generic_all_accepted_averages_scores() {
        let tests = [
            t(0, Status::AC, 10.0, 0, 0.5, 100),
            t(1, Status::AC, 20.0, 0, 0.25, 300),
            t(2, Status::AC, 30.0, 0, 1.0, 200),
        ];
        let f = MasterJudge::Generic.summarize(&tests, None).unwrap();
        assert_eq!(f, Final { status: Status::AC, score: 20.0, signal: 0, time: 1.75, memory: 300 });
    }

    #[test]
    fn generic_takes_the_first_failure() {
        let tests = [
            t(0, Status::AC, 10.0, 0, 0.5, 100),
            t(1, Status::TLE, 0.0, 9, 2.0, 50),
            t(2, Status::WA, 0.0, 0, 0.25, 400),
        ];
        let f = MasterJudge::Generic.summarize(&tests, None).unwrap();
        assert_eq!(f, Final { status: Status::TLE, score: 0.0, signal: 9, time: 2.75, memory: 400 });
        // The lowest test number, whatever the order of the slice.
        let reordered = [tests[2].clone(), tests[0].clone(), tests[1].clone()];
        assert_eq!(MasterJudge::Generic.summarize(&reordered, None).unwrap(), f);
    }

    #[test]
    fn generic_signal_of_a_runtime_error() {
        let tests = [t(0, Status::RE, 0.0, 11, 0.1, 10), t(1, Status::AC, 5.0, 0, 0.1, 10)];
        let f = MasterJudge::Generic.summarize(&tests, Some(&[1.0])).unwrap();
        assert_eq!((f.status, f.score, f.signal), (Status::RE, 0.0, 11));
    }

    #[test]
    fn generic_without_tests_is_accepted() {
        let f = MasterJudge::Generic.summarize(&[], None).unwrap();
        assert_eq!(f, Final { status: Status::AC, score: 0.0, signal: 0, time: 0.0, memory: 0 });
    }

    #[test]
    fn percentage_two_of_three() {
        let tests = [
            t(0, Status::AC, 1.0, 0, 0.5, 100),
            t(1, Status::WA, 0.0, 0, 3.0, 900),
            t(2, Status::AC, 1.0, 0, 0.25, 200),
        ];
        let f = MasterJudge::Percentage.summarize(&tests, None).unwrap();
        assert_eq!(f, Final { status: Status::AC, score: 66.67, signal: 0, time: 0.75, memory: 200 });
    }

    #[test]
    fn percentage_one_of_three_and_none() {
        let tests = [
            t(0, Status::AC, 0.0, 0, 0.5, 100),
            t(1, Status::RE, 0.0, 6, 3.0, 900),
            t(2, Status::TLE, 0.0, 9, 1.0, 10),
        ];
        let f = MasterJudge::Percentage.summarize(&tests, None).unwrap();
        assert_eq!(f, Final { status: Status::AC, score: 33.33, signal: 0, time: 0.5, memory: 100 });
        let f = MasterJudge::Percentage.summarize(&tests[1..], None).unwrap();
        assert_eq!(f, Final { status: Status::AC, score: 0.0, signal: 0, time: 0.0, memory: 0 });
        // Not -0.0, which JSON would carry as such.
        assert!(f.score.is_sign_positive() && f.time.is_sign_positive(), "{f:?}");
    }

    #[test]
    fn percentage_needs_tests() {
        let e = MasterJudge::Percentage.summarize(&[], None).unwrap_err();
        assert_eq!(e, "the percentage master judge needs at least one test");
    }

    #[test]
    fn weighted_handbook_example() {
        // sphere-judges.txt: tests a, b, c weighted 20, 30, 50; in its order: none, a, b, ab,
        // c, ac, bc, abc.
        let want = [0.0, 20.0, 30.0, 50.0, 50.0, 70.0, 80.0, 100.0];
        for (mask, want) in want.into_iter().enumerate() {
            let tests: Vec<TestResult> = (0..3)
                .map(|i| {
                    let status = if mask & (1 << i) != 0 { Status::AC } else { Status::WA };
                    t(i, status, 0.0, 0, 0.1 * (i + 1) as f64, 10 * (i as u64 + 1))
                })
                .collect();
            let f = MasterJudge::Weighted.summarize(&tests, Some(&[20.0, 30.0, 50.0])).unwrap();
            assert_eq!((f.status, f.score, f.signal), (Status::AC, want, 0), "mask {mask:03b}");
            let accepted = tests.iter().filter(|t| t.status == Status::AC);
            assert_eq!(f.memory, accepted.clone().map(|t| t.memory).max().unwrap_or(0));
            assert!((f.time - accepted.map(|t| t.time).sum::<f64>()).abs() < 1e-12);
        }
    }

    #[test]
    fn weighted_rounds_to_two_decimals() {
        let tests = [t(0, Status::WA, 0.0, 0, 0.0, 0), t(1, Status::AC, 0.0, 0, 0.0, 0)];
        let f = MasterJudge::Weighted.summarize(&tests, Some(&[1.0, 2.0])).unwrap();
        assert_eq!(f.score, 66.67);
        let f = MasterJudge::Weighted.summarize(&tests, Some(&[0.5, 0.25])).unwrap();
        assert_eq!(f.score, 33.33);
    }

    #[test]
    fn weighted_rejects_bad_weights() {
        let tests = [t(0, Status::AC, 0.0, 0, 0.0, 0), t(1, Status::AC, 0.0, 0, 0.0, 0)];
        let err = |weights: Option<&[f64]>| MasterJudge::Weighted.summarize(&tests, weights).unwrap_err();
        assert_eq!(
            err(None),
            "the weighted master judge needs `weights` in problem.toml: one positive number per test"
        );
        assert_eq!(
            err(Some(&[1.0])),
            "the weighted master judge has 1 weights for 2 tests: one positive number per test"
        );
        assert!(err(Some(&[1.0, 2.0, 3.0])).contains("has 3 weights for 2 tests"));
        assert_eq!(err(Some(&[1.0, 0.0])), "the weight of test 1 is 0: weights must be positive numbers");
        assert_eq!(err(Some(&[-1.0, 1.0])), "the weight of test 0 is -1: weights must be positive numbers");
        assert!(err(Some(&[f64::NAN, 1.0])).contains("the weight of test 0 is NaN"));
        assert!(err(Some(&[1.0, f64::INFINITY])).contains("the weight of test 1 is inf"));
        assert!(err(Some(&[f64::MAX, f64::MAX])).contains("add up to more than"));
        let e = MasterJudge::Weighted.summarize(&[], Some(&[])).unwrap_err();
        assert_eq!(e, "the weighted master judge needs at least one test");
    }

    #[test]
    fn weights_are_ignored_by_the_others() {
        let tests = [t(0, Status::AC, 4.0, 0, 0.0, 0), t(1, Status::WA, 0.0, 0, 0.0, 0)];
        assert_eq!(MasterJudge::Percentage.summarize(&tests, Some(&[9.0])).unwrap().score, 50.0);
        assert_eq!(MasterJudge::Generic.summarize(&tests, None).unwrap().status, Status::WA);
    }
}
