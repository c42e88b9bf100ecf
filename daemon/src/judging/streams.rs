//! The text formats of Sphere Engine's judge streams (sphere-judges.txt, decisions 15 and 16):
//! what segi writes to a master judge, what it reads back from master and test case judges, and
//! the report lines for people.
//!
//! Pure: bytes in, values or lines out. A judge is a program a problem setter wrote, so
//! everything read from one is checked, and a mistake becomes an error message that quotes the
//! offending text (bounded to [`QUOTE_MAX`] bytes) and says what was expected: the caller turns
//! it into an internal error (IE) that the problem setter can act on.
//!
//! # Formats
//! - Master judge input (fd 0), one line per test: `N STATUS SCORE SIGNAL TIME MEMORY`, SCORE and
//!   TIME with two decimals, MEMORY in KiB, e.g. `0 AC 10.00 0 0.57 8096` (decisions 15: the
//!   order of the example and of the reference judges' `scanf`, not of the handbook's header).
//! - Master judge output (fd 1): one line `STATUS SCORE SIGNAL TIME MEMORY`.
//! - Test case judge score (fd 1): nothing (score 0) or one number.
//! - Report lines: `test N - STATUS (score=S, sig=G, time=T, mem=M)` and the final
//!   `STATUS (score=S, sig=G, time=T, mem=M)`.
//!
//! # Choices where the handbook is silent
//! - **Whitespace is C's `isspace`** (space, `\t`, `\n`, `\v`, `\f`, `\r`): judges are mostly C
//!   programs whose `printf`/`scanf` think so. Whitespace around the text is ignored, so a
//!   trailing newline or leading blank lines are fine.
//! - **One line means one line**: a master judge's verdict split across lines is an error even
//!   with five fields, since it most likely printed something else too.
//! - **MEMORY is digits only** (`8096`, not `8096.0` or `+8096`): it is an integer of KiB, and a
//!   float there means the judge computed something else than the handbook's number.
//! - **Numbers are Rust's `f64` syntax** (`12`, `2.00`, `1e3`, `.5`); infinities and NaN are
//!   rejected, as no score or time can be one.

use segi_proto::judge::{Status, TestResult};

/// How many bytes of a judge's text an error message quotes.
pub const QUOTE_MAX: usize = 200;

/// What a master judge's output must look like, said in every error about it.
const MASTER_FORMAT: &str = "expected STATUS SCORE SIGNAL TIME MEMORY";

/// The master judge's verdict on a submission: the final line of fd 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Final {
    pub status: Status,
    pub score: f64,
    pub signal: i32,
    /// Seconds.
    pub time: f64,
    /// KiB.
    pub memory: u64,
}

/// The line of the master judge's input (fd 0) for one test, newline included.
pub fn master_input_line(t: &TestResult) -> String {
    format!("{} {} {:.2} {} {:.2} {}\n", t.test, t.status, t.score, t.signal, t.time, t.memory)
}

/// The line for people about one test (the handbook's debug stream format), without newline.
pub fn report_line(t: &TestResult) -> String {
    format!("test {} - {}", t.test, summary(t.status, t.score, t.signal, t.time, t.memory))
}

/// The line for people about the final verdict, without newline.
pub fn final_line(f: &Final) -> String {
    summary(f.status, f.score, f.signal, f.time, f.memory)
}

/// `STATUS (score=S, sig=G, time=T, mem=M)`, shared by both report lines.
fn summary(status: Status, score: f64, signal: i32, time: f64, memory: u64) -> String {
    format!("{status} (score={score:.2}, sig={signal}, time={time:.2}, mem={memory})")
}

/// Parses what a master judge wrote on fd 1: one line `STATUS SCORE SIGNAL TIME MEMORY`,
/// surrounded by any whitespace.
pub fn parse_master_output(bytes: &[u8]) -> Result<Final, String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(format!("the master judge wrote non-UTF-8 text on fd 1: {} ({MASTER_FORMAT})", quote(bytes)));
    };
    let line = trim_space(text);
    if line.is_empty() {
        return Err(format!("the master judge wrote nothing on fd 1 ({MASTER_FORMAT})"));
    }
    parse_master_line(line)
        .map_err(|why| format!("the master judge wrote {}: {why} ({MASTER_FORMAT})", quote(line.as_bytes())))
}

/// The fields of a trimmed, non-empty line; the error says what is wrong, without context.
fn parse_master_line(line: &str) -> Result<Final, String> {
    if line.contains(['\n', '\r']) {
        return Err("more than one line".to_string());
    }
    let fields: Vec<&str> = split_space(line).collect();
    let [status, score, signal, time, memory] = fields[..] else {
        return Err(format!("{} fields, not 5", fields.len()));
    };
    let status = status.parse::<Status>().map_err(|_| {
        let known: Vec<String> = Status::ALL.iter().map(Status::to_string).collect();
        format!("STATUS {} is not one of {}", quote(status.as_bytes()), known.join(" "))
    })?;
    let score = finite("SCORE", score)?;
    let signal = signal.parse::<i32>().map_err(|_| format!("SIGNAL {} is not an integer", quote(signal.as_bytes())))?;
    let time = non_negative("TIME", time)?;
    let memory = kib(memory)?;
    Ok(Final { status, score, signal, time, memory })
}

/// A finite number, or why the field `name` is not one.
fn finite(name: &str, field: &str) -> Result<f64, String> {
    match field.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(format!("{name} {} is not a finite number", quote(field.as_bytes()))),
        Err(_) => Err(format!("{name} {} is not a number", quote(field.as_bytes()))),
    }
}

/// A finite number >= 0; `-0` becomes `0`, so that it is not shown as `-0.00`.
fn non_negative(name: &str, field: &str) -> Result<f64, String> {
    let x = finite(name, field)?;
    if x < 0.0 {
        return Err(format!("{name} {} is negative", quote(field.as_bytes())));
    }
    Ok(if x == 0.0 { 0.0 } else { x })
}

/// MEMORY: a whole number of KiB, in digits only.
fn kib(field: &str) -> Result<u64, String> {
    if !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("MEMORY {} is not a whole number of KiB", quote(field.as_bytes())));
    }
    field.parse::<u64>().map_err(|_| format!("MEMORY {} is too large", quote(field.as_bytes())))
}

/// Parses the score a test case judge wrote on fd 1: nothing or whitespace is 0 (most judges only
/// decide AC or WA and write nothing), else exactly one finite number.
pub fn parse_score(bytes: &[u8]) -> Result<f64, String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(format!("the test case judge's score on fd 1 is not UTF-8 text: {}", quote(bytes)));
    };
    let text = trim_space(text);
    if text.is_empty() {
        return Ok(0.0);
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(format!("the test case judge's score on fd 1 is not a finite number: {}", quote(text.as_bytes()))),
        Err(_) => Err(format!("the test case judge's score on fd 1 is not a number: {}", quote(text.as_bytes()))),
    }
}

/// A judge's or compiler's text for a message or a result: lossy UTF-8, at most `max` bytes cut
/// at a character boundary, then `…` when something was cut.
///
/// Reads only the first `max + 4` bytes, so a judge's megabytes of debug output cost nothing.
pub fn bounded_text(bytes: &[u8], max: usize) -> String {
    let (mut text, cut) = bounded(bytes, max);
    if cut {
        text.push('…');
    }
    text
}

/// A judge's text quoted for an error message: escaped as Rust does (`"a\nb"`), at most `max`
/// bytes of it, and `…` after the closing quote when cut, so that what is between the quotes is
/// always exactly a prefix of the (lossy UTF-8) text.
pub fn quoted(bytes: &[u8], max: usize) -> String {
    let (text, cut) = bounded(bytes, max);
    format!("{text:?}{}", if cut { "…" } else { "" })
}

/// [`quoted`] with the bound of error messages.
fn quote(bytes: &[u8]) -> String {
    quoted(bytes, QUOTE_MAX)
}

/// The lossy UTF-8 prefix of `bytes` of at most `max` bytes, and whether it is shorter than the
/// whole text.
///
/// Why `max + 4` input bytes are enough: every input byte becomes at least one output byte (a
/// valid character keeps its bytes, an invalid sequence of 1 to 3 bytes becomes the 3 bytes of
/// U+FFFD), and only a sequence cut by the window (at most its last 3 bytes, so starting after
/// byte `max`) is converted differently from the whole text. So the first `max + 1` output bytes
/// are those of the whole text, and when the window is shorter than the text, the output is
/// longer than `max` and is cut.
fn bounded(bytes: &[u8], max: usize) -> (String, bool) {
    let window = &bytes[..bytes.len().min(max.saturating_add(4))];
    let mut text = String::from_utf8_lossy(window).into_owned();
    if text.len() <= max && window.len() == bytes.len() {
        return (text, false);
    }
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

/// C's `isspace` in the "C" locale.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

fn trim_space(text: &str) -> &str {
    text.trim_matches(is_space)
}

/// The whitespace-separated fields of `text`.
fn split_space(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_space).filter(|f| !f.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn result(test: usize, status: Status, score: f64, signal: i32, time: f64, memory: u64) -> TestResult {
        TestResult { test, status, score, signal, time, memory, info: None, message: None }
    }

    fn fin(status: Status, score: f64, signal: i32, time: f64, memory: u64) -> Final {
        Final { status, score, signal, time, memory }
    }

    fn master_err(text: &str) -> String {
        parse_master_output(text.as_bytes()).unwrap_err()
    }

    #[test]
    fn master_input_line_is_the_handbook_example() {
        let t = result(0, Status::AC, 10.0, 0, 0.57, 8096);
        assert_eq!(master_input_line(&t), "0 AC 10.00 0 0.57 8096\n");
    }

    #[test]
    fn master_input_line_rounds_to_two_decimals() {
        let t = result(12, Status::TLE, 2.0 / 3.0, 9, 1.005_1, 0);
        assert_eq!(master_input_line(&t), "12 TLE 0.67 9 1.01 0\n");
        let t = result(3, Status::RE, -1.5, -1, 0.0, 123_456);
        assert_eq!(master_input_line(&t), "3 RE -1.50 -1 0.00 123456\n");
    }

    #[test]
    fn handbook_final_line_parses() {
        assert_eq!(parse_master_output(b"AC 10 0 0.57 8096"), Ok(fin(Status::AC, 10.0, 0, 0.57, 8096)));
    }

    #[test]
    fn master_output_every_status() {
        for status in Status::ALL {
            let line = format!("{status} 1.5 0 2 3\n");
            assert_eq!(parse_master_output(line.as_bytes()), Ok(fin(status, 1.5, 0, 2.0, 3)));
        }
    }

    #[test]
    fn master_output_surrounding_whitespace_is_ignored() {
        let want = Ok(fin(Status::WA, 0.0, 11, 1.25, 64));
        for text in [
            "WA 0 11 1.25 64\n",
            "WA 0 11 1.25 64\r\n",
            "WA 0 11 1.25 64 \n\n\n",
            "\n\n  WA 0 11 1.25 64",
            "WA\t0  11\t\t1.25 \x0b64\x0c",
            "WA 0.00 11 1.25 64",
            "WA 0e0 +11 1.25e0 64",
        ] {
            assert_eq!(parse_master_output(text.as_bytes()), want, "{text:?}");
        }
    }

    #[test]
    fn master_output_negative_score_and_signal_are_fine() {
        assert_eq!(parse_master_output(b"RE -2.5 -11 0 0"), Ok(fin(Status::RE, -2.5, -11, 0.0, 0)));
    }

    #[test]
    fn master_output_negative_zero_time_is_zero() {
        let f = parse_master_output(b"AC 0 0 -0.0 0").unwrap();
        assert!(f.time == 0.0 && f.time.is_sign_positive());
        assert_eq!(final_line(&f), "AC (score=0.00, sig=0, time=0.00, mem=0)");
    }

    #[test]
    fn master_output_empty() {
        let want = "the master judge wrote nothing on fd 1 (expected STATUS SCORE SIGNAL TIME MEMORY)";
        assert_eq!(master_err(""), want);
        assert_eq!(master_err(" \n\r\n\t"), want);
    }

    #[test]
    fn master_output_bad_score_is_quoted() {
        assert_eq!(
            master_err("AC ten 0 0.5 100\n"),
            "the master judge wrote \"AC ten 0 0.5 100\": SCORE \"ten\" is not a number \
             (expected STATUS SCORE SIGNAL TIME MEMORY)"
        );
    }

    #[test]
    fn master_output_field_count() {
        assert!(master_err("AC 10 0 0.57").contains(": 4 fields, not 5 ("));
        assert!(master_err("AC 10 0 0.57 8096 7").contains(": 6 fields, not 5 ("));
        assert!(master_err("AC").contains(": 1 fields, not 5 ("));
    }

    #[test]
    fn master_output_more_than_one_line() {
        let e = master_err("AC 10 0\n0.57 8096\n");
        assert!(e.starts_with("the master judge wrote \"AC 10 0\\n0.57 8096\": more than one line"), "{e}");
        assert!(master_err("AC 10 0 0.57 8096\nAC 10 0 0.57 8096").contains("more than one line"));
        assert!(master_err("AC 10 0 0.57 8096\rdebug").contains("more than one line"));
    }

    #[test]
    fn master_output_bad_status() {
        let e = master_err("OK 10 0 0.57 8096");
        assert!(e.contains("STATUS \"OK\" is not one of AC WA TLE RE MLE OLE CE IE"), "{e}");
        assert!(master_err("ac 10 0 0.57 8096").contains("STATUS \"ac\""));
    }

    #[test]
    fn master_output_non_finite_score() {
        assert!(master_err("AC inf 0 0.57 8096").contains("SCORE \"inf\" is not a finite number"));
        assert!(master_err("AC NaN 0 0.57 8096").contains("SCORE \"NaN\" is not a finite number"));
        assert!(master_err("AC 1e999 0 0.57 8096").contains("SCORE \"1e999\" is not a finite number"));
    }

    #[test]
    fn master_output_bad_signal() {
        assert!(master_err("RE 0 9.0 0.57 8096").contains("SIGNAL \"9.0\" is not an integer"));
        assert!(master_err("RE 0 x 0.57 8096").contains("SIGNAL \"x\" is not an integer"));
        assert!(master_err("RE 0 99999999999 0.57 8096").contains("SIGNAL \"99999999999\" is not an integer"));
    }

    #[test]
    fn master_output_bad_time() {
        assert!(master_err("AC 0 0 -0.01 8096").contains("TIME \"-0.01\" is negative"));
        assert!(master_err("AC 0 0 fast 8096").contains("TIME \"fast\" is not a number"));
        assert!(master_err("AC 0 0 inf 8096").contains("TIME \"inf\" is not a finite number"));
        assert!(master_err("AC 0 0 NaN 8096").contains("TIME \"NaN\" is not a finite number"));
    }

    #[test]
    fn master_output_memory_is_digits_only() {
        for bad in ["8096.0", "-1", "+8096", "8e3", "8K"] {
            let e = master_err(&format!("AC 0 0 0.5 {bad}"));
            assert!(e.contains(&format!("MEMORY {bad:?} is not a whole number of KiB")), "{e}");
        }
        assert!(master_err("AC 0 0 0.5 99999999999999999999999").contains("is too large"));
        assert_eq!(parse_master_output(b"AC 0 0 0.5 0").map(|f| f.memory), Ok(0));
        assert_eq!(parse_master_output(b"AC 0 0 0.5 18446744073709551615").map(|f| f.memory), Ok(u64::MAX));
    }

    #[test]
    fn master_output_not_utf8() {
        let e = parse_master_output(b"AC 10 0 0.57 \xff8096").unwrap_err();
        assert_eq!(
            e,
            "the master judge wrote non-UTF-8 text on fd 1: \"AC 10 0 0.57 \u{fffd}8096\" \
             (expected STATUS SCORE SIGNAL TIME MEMORY)"
        );
    }

    #[test]
    fn master_output_quote_is_bounded() {
        let long = format!("AC 10 0 0.57 {}", "9".repeat(1000));
        let e = master_err(&format!("{long} x"));
        assert!(e.contains("6 fields, not 5"), "{e}");
        let quote = format!("{:?}…", &long[..QUOTE_MAX]);
        assert!(e.contains(&quote), "{e}");
        assert!(e.len() < QUOTE_MAX + 100, "{e}");
        // A long single field is bounded too, in its own quote.
        let e = master_err(&format!("AC {} 0 0.57 8096", "x".repeat(1000)));
        assert!(e.contains(&format!("SCORE {:?}…", "x".repeat(QUOTE_MAX))), "{e}");
    }

    #[test]
    fn score_empty_is_zero() {
        for text in ["", "\n", "  \t\r\n  "] {
            assert_eq!(parse_score(text.as_bytes()), Ok(0.0), "{text:?}");
        }
    }

    #[test]
    fn score_one_number() {
        assert_eq!(parse_score(b"12"), Ok(12.0));
        assert_eq!(parse_score(b"2.50\n"), Ok(2.5));
        assert_eq!(parse_score(b"\n -1e3 \n"), Ok(-1000.0));
        assert_eq!(parse_score(b"1345.00"), Ok(1345.0));
    }

    #[test]
    fn score_errors_quote_the_text() {
        assert_eq!(parse_score(b"ten\n"), Err("the test case judge's score on fd 1 is not a number: \"ten\"".into()));
        assert_eq!(parse_score(b"1 2"), Err("the test case judge's score on fd 1 is not a number: \"1 2\"".into()));
        assert_eq!(
            parse_score(b"12\nok"),
            Err("the test case judge's score on fd 1 is not a number: \"12\\nok\"".into())
        );
        assert_eq!(
            parse_score(b"inf"),
            Err("the test case judge's score on fd 1 is not a finite number: \"inf\"".into())
        );
        assert!(parse_score(b"nan").unwrap_err().contains("not a finite number"));
        assert!(parse_score(b"1\xff").unwrap_err().contains("is not UTF-8 text: \"1\u{fffd}\""));
        let e = parse_score("y".repeat(5000).as_bytes()).unwrap_err();
        assert!(e.ends_with(&format!("{:?}…", "y".repeat(QUOTE_MAX))), "{e}");
    }

    #[test]
    fn report_lines() {
        let t = result(0, Status::AC, 10.0, 0, 0.57, 8096);
        assert_eq!(report_line(&t), "test 0 - AC (score=10.00, sig=0, time=0.57, mem=8096)");
        let t = result(7, Status::TLE, 0.0, 9, 2.004, 1);
        assert_eq!(report_line(&t), "test 7 - TLE (score=0.00, sig=9, time=2.00, mem=1)");
        let f = fin(Status::WA, 66.666, 0, 1.5, 2048);
        assert_eq!(final_line(&f), "WA (score=66.67, sig=0, time=1.50, mem=2048)");
    }

    #[test]
    fn bounded_text_short_is_unchanged() {
        assert_eq!(bounded_text(b"", 10), "");
        assert_eq!(bounded_text(b"hello", 5), "hello");
        assert_eq!(bounded_text(b"hello", 200), "hello");
        assert_eq!(bounded_text("héllo".as_bytes(), 6), "héllo");
    }

    #[test]
    fn bounded_text_cuts_with_ellipsis() {
        assert_eq!(bounded_text(b"hello world", 5), "hello…");
        assert_eq!(bounded_text(b"hello", 0), "…");
        assert_eq!(bounded_text(b"", 0), "");
    }

    #[test]
    fn bounded_text_cuts_at_a_char_boundary() {
        // "é" is 2 bytes: at 2 bytes the cut would split it.
        assert_eq!(bounded_text("aéb".as_bytes(), 2), "a…");
        assert_eq!(bounded_text("aéb".as_bytes(), 3), "aé…");
        // A 4-byte character right at the limit.
        assert_eq!(bounded_text("ab😀".as_bytes(), 5), "ab…");
        assert_eq!(bounded_text("ab😀".as_bytes(), 6), "ab😀");
    }

    #[test]
    fn bounded_text_is_lossy() {
        assert_eq!(bounded_text(b"a\xffb", 10), "a\u{fffd}b");
        // U+FFFD takes 3 bytes: the bound is on the text produced.
        assert_eq!(bounded_text(b"a\xff\xffb", 4), "a\u{fffd}…");
        // A character cut by the reading window is not turned into U+FFFD.
        assert_eq!(bounded_text("abcd😀😀".as_bytes(), 8), "abcd😀…");
    }

    proptest! {
        /// The bound holds, the text is a prefix of the whole lossy text, and `…` means a cut.
        #[test]
        fn bounded_text_is_a_bounded_prefix(bytes in proptest::collection::vec(
            prop_oneof![Just(b'a'), Just(0xffu8), Just(0xc3), Just(0xa9), Just(0xf0), Just(0x9f), Just(0x98), Just(0x80)],
            0..40,
        ), max in 0usize..30) {
            let whole = String::from_utf8_lossy(&bytes).into_owned();
            let got = bounded_text(&bytes, max);
            match got.strip_suffix('…') {
                Some(prefix) if got != whole => {
                    prop_assert!(prefix.len() <= max);
                    prop_assert!(whole.starts_with(prefix));
                    prop_assert!(whole.len() > max);
                    prop_assert!(prefix.len() + 4 > max, "cut too early: {:?}", prefix);
                }
                _ => {
                    prop_assert_eq!(&got, &whole);
                    prop_assert!(whole.len() <= max);
                }
            }
        }
    }
}
