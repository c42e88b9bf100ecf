//! A testlib program's exit code and stderr → a test verdict (decisions 21).
//!
//! Pure: the caller runs the program (a checker, an interactor, a grader compiled with
//! `kind="testlib"`) and hands over how it ended.
//!
//! | exit code | verdict |
//! |-----------|---------|
//! | 0         | OK      |
//! | 1         | WA      |
//! | 2, 8      | PE (2 `_pe`/`_dirt`, 8 `_unexpected_eof`) |
//! | 3, 4      | CF (3 `_fail`, 4 the old `_dirt` code) |
//! | 7         | PT with the points of stderr's `points X` line; CF without a valid one |
//! | any other, or none (killed) | CF |
//!
//! Partial credit `_pc(n)` is **not** recognized: testlib exits with `PC_BASE_EXIT_CODE + n`
//! where the base is 0 in a default build (50 only under `TESTSYS`), so `_pc(1)` exits 1 and
//! cannot be told from WA. Codes 16 and above are therefore CF like every unlisted code.
//!
//! The comment is stderr's text: lossy UTF-8, trimmed, at most [`COMMENT_MAX`] characters;
//! `None` when empty. testlib writes its result there (`ok 3 numbers`, `wrong answer ...`,
//! `points 3.5 ...`), which is what a judge shows as the checker comment.

use super::valuation::Verdict;

/// The most characters of stderr a comment keeps.
pub const COMMENT_MAX: usize = 1000;

/// The verdict and comment of a testlib program that exited with `exit_code` (`None`: it did
/// not exit, e.g. it was killed) and wrote `stderr`.
pub fn testlib_verdict(exit_code: Option<i32>, stderr: &[u8]) -> (Verdict, Option<String>) {
    let text = stderr_text(stderr);
    match exit_code {
        Some(0) => (Verdict::OK, text),
        Some(1) => (Verdict::WA, text),
        Some(2 | 8) => (Verdict::PE, text),
        Some(3 | 4) => (Verdict::CF, text),
        Some(7) => match parse_points(stderr) {
            Ok(points) => (Verdict::PT(points), text),
            Err(why) => (Verdict::CF, Some(with_text(&format!("testlib exit code 7 (points): {why}"), text))),
        },
        Some(code) => (Verdict::CF, Some(with_text(&format!("unexpected testlib exit code {code}"), text))),
        None => (Verdict::CF, Some(with_text("the testlib program did not exit", text))),
    }
}

/// The points of the first line of `stderr` that starts (after leading whitespace) with the
/// word `points`: the next whitespace-separated token, a finite number >= 0. testlib's
/// `quitp(x, msg)` writes `points x msg`.
pub fn parse_points(stderr: &[u8]) -> Result<f64, String> {
    let text = String::from_utf8_lossy(stderr);
    let Some(rest) = text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix("points")?;
        (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
    }) else {
        return Err("no `points X` line in stderr".to_string());
    };
    let Some(token) = rest.split_whitespace().next() else {
        return Err("`points` without a number".to_string());
    };
    match token.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        Ok(_) => Err(format!("points must be a finite number >= 0, not {token}")),
        Err(_) => Err(format!("points must be a number, not {}", bounded(token, 40))),
    }
}

/// Stderr as a comment: lossy UTF-8, trimmed, at most [`COMMENT_MAX`] characters, `None` when
/// nothing is left.
pub fn stderr_text(stderr: &[u8]) -> Option<String> {
    // A character takes at most 4 bytes and every invalid byte becomes one U+FFFD, so this prefix
    // holds COMMENT_MAX characters after any leading whitespace that is not absurdly long.
    let prefix = &stderr[..stderr.len().min(8 * COMMENT_MAX)];
    let text = String::from_utf8_lossy(prefix);
    let text: String = text.trim_start().chars().take(COMMENT_MAX).collect();
    let text = text.trim_end();
    (!text.is_empty()).then(|| text.to_string())
}

/// `what`, then `: text` when there is a text.
fn with_text(what: &str, text: Option<String>) -> String {
    match text {
        Some(t) => format!("{what}: {t}"),
        None => what.to_string(),
    }
}

fn bounded(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(code: i32, stderr: &str) -> (Verdict, Option<String>) {
        testlib_verdict(Some(code), stderr.as_bytes())
    }

    #[test]
    fn exit_code_table() {
        assert_eq!(v(0, "ok 3 numbers\n"), (Verdict::OK, Some("ok 3 numbers".into())));
        assert_eq!(
            v(1, "wrong answer 1st numbers differ\n"),
            (Verdict::WA, Some("wrong answer 1st numbers differ".into()))
        );
        assert_eq!(v(2, "wrong output format Unexpected end of file\n").0, Verdict::PE);
        assert_eq!(v(8, "unexpected eof\n").0, Verdict::PE);
        assert_eq!(v(3, "FAIL answer is wrong\n"), (Verdict::CF, Some("FAIL answer is wrong".into())));
        assert_eq!(v(4, "").0, Verdict::CF);
        assert_eq!(v(7, "points 3.5\n").0, Verdict::PT(3.5));
        for code in [5, 6, 9, 10, 15, 16, 17, 50, 51, 127, 255, -1] {
            let (verdict, comment) = v(code, "partially correct (1) ");
            assert_eq!(verdict, Verdict::CF, "exit code {code}");
            let comment = comment.unwrap();
            assert!(comment.contains(&format!("exit code {code}")), "{comment}");
            assert!(comment.ends_with("partially correct (1)"), "{comment}");
        }
        let (verdict, comment) = testlib_verdict(None, b"");
        assert_eq!(verdict, Verdict::CF);
        assert_eq!(comment.as_deref(), Some("the testlib program did not exit"));
    }

    #[test]
    fn empty_stderr_is_no_comment() {
        assert_eq!(v(0, ""), (Verdict::OK, None));
        assert_eq!(v(1, " \n\t\n"), (Verdict::WA, None));
    }

    #[test]
    fn points_forms() {
        assert_eq!(v(7, "points 3.5 some comment\n"), (Verdict::PT(3.5), Some("points 3.5 some comment".into())));
        assert_eq!(v(7, "points 2").0, Verdict::PT(2.0));
        assert_eq!(v(7, "points 0").0, Verdict::PT(0.0));
        assert_eq!(v(7, "points 1e1").0, Verdict::PT(10.0));
        assert_eq!(v(7, "  points\t0.25\tgood\r\n").0, Verdict::PT(0.25));
        // The first `points` line counts.
        assert_eq!(v(7, "debug: reading\npoints 4 ok\npoints 5\n").0, Verdict::PT(4.0));
        assert_eq!(parse_points(b"pointsless\npoints 1"), Ok(1.0));
    }

    #[test]
    fn invalid_points_are_cf() {
        for stderr in ["", "ok\n", "points\n", "points x\n", "points -1\n", "points nan\n", "points inf\n", "pointsy 3"]
        {
            let (verdict, comment) = v(7, stderr);
            assert_eq!(verdict, Verdict::CF, "{stderr:?}");
            assert!(comment.unwrap().starts_with("testlib exit code 7 (points): "), "{stderr:?}");
        }
        assert_eq!(parse_points(b"points -1").unwrap_err(), "points must be a finite number >= 0, not -1");
        assert_eq!(parse_points(b"x").unwrap_err(), "no `points X` line in stderr");
        assert_eq!(parse_points(b"points").unwrap_err(), "`points` without a number");
    }

    #[test]
    fn comment_is_bounded_lossy_and_trimmed() {
        let long = format!("  \n{}", "é".repeat(3000));
        let text = stderr_text(long.as_bytes()).unwrap();
        assert_eq!(text.chars().count(), COMMENT_MAX);
        assert!(text.starts_with('é'));
        assert_eq!(stderr_text(b"\xffwrong\xfe answer \n").as_deref(), Some("\u{fffd}wrong\u{fffd} answer"));
        let invalid = vec![0xffu8; 10 * COMMENT_MAX];
        assert_eq!(stderr_text(&invalid).unwrap().chars().count(), COMMENT_MAX);
        assert_eq!(stderr_text(b""), None);
    }
}
