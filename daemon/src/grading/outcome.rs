//! From how a grader's run ended and what it printed to its GraderResult (decisions 18, 19):
//! a pure function, with the reference's messages.
//!
//! - stdout empty or only whitespace: the exit code decides (0 passes with score 1, anything
//!   else fails with 0);
//! - otherwise stdout, trimmed, must be one JSON object of the GraderResult schema, which
//!   decides whatever the exit code; text that is not JSON, or JSON off the schema, fails
//!   with score 0.

use segi_proto::grade::GraderResult;
use segi_proto::{RunResult, Verdict};
use serde_json::{Map, Value};

/// The longest evidence or error text kept from a grader.
const MAX_TEXT: usize = 4096;

pub fn decide(name: &str, run: &RunResult, stdout: &[u8], stderr: &[u8]) -> GraderResult {
    let mut result = GraderResult {
        name: name.to_string(),
        passed: false,
        score: 0.0,
        evidence: None,
        kind: None,
        metadata: None,
        details: None,
        message: String::new(),
        exit_code: run.exit_code,
        cpu_time: run.cpu_time,
        wall_time: run.wall_time,
        memory: run.memory,
        stderr: (!stderr.is_empty()).then(|| bounded(&String::from_utf8_lossy(stderr))),
    };
    // How the run ended, when it did not end by itself.
    let ended = match run.verdict {
        Verdict::TLE => Some("Grader timed out".to_string()),
        Verdict::MLE => Some("Grader exceeded its memory limit".to_string()),
        Verdict::OLE => Some(format!("Grader exceeded its output limit: {}", run.message.clone().unwrap_or_default())),
        Verdict::SV => Some(format!("Grader was stopped: {}", run.message.clone().unwrap_or_default())),
        Verdict::IE => Some(format!("Failed to run the grader: {}", run.message.clone().unwrap_or_default())),
        Verdict::RE if run.exit_code == Some(127) && is_spawn_failure(run) => {
            Some("Failed to start grader program: ENOENT (spawn)".to_string())
        }
        Verdict::RE if run.exit_code == Some(126) && is_spawn_failure(run) => {
            Some("Failed to start grader program: EACCES (spawn)".to_string())
        }
        Verdict::OK | Verdict::RE => None,
    };
    if let Some(message) = ended {
        result.message = message;
        return result;
    }
    let text = String::from_utf8_lossy(stdout);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        match (run.exit_code, run.signal) {
            (Some(0), _) => {
                (result.passed, result.score, result.message) = (true, 1.0, "Grader exited successfully".into())
            }
            (Some(code), _) => result.message = format!("Grader exited with exit code {code}"),
            (None, Some(signal)) => result.message = format!("Grader was killed by signal {signal}"),
            (None, None) => result.message = "Grader ended without an exit code".into(),
        }
        return result;
    }
    let value: Value = match serde_json::from_str(trimmed) {
        Ok(value) => value,
        Err(e) => {
            result.message = format!("Grader returned unparseable JSON output on stdout: SyntaxError: {e}");
            return result;
        }
    };
    match from_schema(value) {
        Ok(fields) => {
            result.passed = fields.passed;
            result.score = fields.score.unwrap_or(if fields.passed { 1.0 } else { 0.0 });
            if let Some(name) = fields.name {
                result.name = name;
            }
            (result.evidence, result.kind, result.metadata, result.details) =
                (fields.evidence.map(|e| bounded(&e)), fields.kind, fields.metadata, fields.details);
            result.message = match (run.exit_code, fields.passed) {
                (Some(0), _) => "Grader exited successfully".into(),
                (Some(code), _) => format!("Grader exited with exit code {code}"),
                (None, _) => "Grader ended without an exit code".into(),
            };
        }
        Err(why) => {
            result.message = "Grader output did not match schema".into();
            result.evidence = Some(why);
        }
    }
    result
}

/// Whether exit 126/127 came from segid failing to exec the program (no such file, not
/// executable), not from the program itself exiting so.
fn is_spawn_failure(run: &RunResult) -> bool {
    run.message.as_deref().is_some_and(|m| m.contains(": cannot execute: "))
}

/// The schema's fields (decisions 18).
struct Fields {
    passed: bool,
    name: Option<String>,
    score: Option<f64>,
    evidence: Option<String>,
    kind: Option<String>,
    metadata: Option<Value>,
    details: Option<Vec<Value>>,
}

fn from_schema(value: Value) -> Result<Fields, String> {
    let Value::Object(mut object) = value else {
        return Err("the output is not a JSON object".into());
    };
    let passed = match object.remove("passed") {
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(format!("\"passed\" must be a boolean, not {other}")),
        None => return Err("\"passed\" is required".into()),
    };
    let string = |object: &mut Map<String, Value>, key: &str| match object.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("\"{key}\" must be a string, not {other}")),
    };
    let name = string(&mut object, "name")?;
    let evidence = string(&mut object, "evidence")?;
    let kind = string(&mut object, "kind")?;
    let score = match object.remove("score") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if (0.0..=1.0).contains(&x) => Some(x),
            _ => return Err(format!("\"score\" must be between 0 and 1, not {n}")),
        },
        Some(other) => return Err(format!("\"score\" must be a number, not {other}")),
    };
    let metadata = match object.remove("metadata") {
        None | Some(Value::Null) => None,
        Some(m @ Value::Object(_)) => Some(m),
        Some(other) => return Err(format!("\"metadata\" must be an object, not {other}")),
    };
    let details = match object.remove("details") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            for item in &items {
                // Each detail is itself a result: `passed` is what makes it one.
                if !item.get("passed").is_some_and(Value::is_boolean) {
                    return Err(format!(
                        "every entry of \"details\" must be a result with a boolean \"passed\", not {item}"
                    ));
                }
            }
            Some(items)
        }
        Some(other) => return Err(format!("\"details\" must be an array, not {other}")),
    };
    Ok(Fields { passed, name, score, evidence, kind, metadata, details })
}

fn bounded(text: &str) -> String {
    if text.len() <= MAX_TEXT {
        return text.to_string();
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(verdict: Verdict, exit_code: Option<i32>, message: Option<&str>) -> RunResult {
        serde_json::from_value(serde_json::json!({
            "verdict": verdict, "exit_code": exit_code, "signal": null, "cpu_time": 0.1, "wall_time": 0.2,
            "memory": 1024, "limit": null, "message": message,
        }))
        .unwrap()
    }

    fn ok() -> RunResult {
        run(Verdict::OK, Some(0), None)
    }

    #[test]
    fn exit_code_mode() {
        let r = decide("g", &ok(), b"  \n", b"");
        assert_eq!((r.passed, r.score, r.message.as_str()), (true, 1.0, "Grader exited successfully"));
        let r = decide("g", &run(Verdict::RE, Some(1), Some("exited with status 1")), b"", b"");
        assert_eq!((r.passed, r.score, r.message.as_str()), (false, 0.0, "Grader exited with exit code 1"));
        assert_eq!((r.cpu_time, r.wall_time, r.memory, r.exit_code), (0.1, 0.2, 1024, Some(1)));
    }

    #[test]
    fn json_mode_decides_whatever_the_exit_code() {
        let out =
            br#"{"name":"my-check","passed":true,"score":0.85,"evidence":"14 of 16","kind":"code","metadata":{"a":1}}"#;
        let r = decide("g", &run(Verdict::RE, Some(3), None), out, b"");
        assert_eq!((r.passed, r.score, r.name.as_str()), (true, 0.85, "my-check"));
        assert_eq!((r.evidence.as_deref(), r.kind.as_deref()), (Some("14 of 16"), Some("code")));
        assert_eq!(r.message, "Grader exited with exit code 3");
        let r = decide("g", &ok(), br#"{"passed": false}"#, b"");
        assert_eq!((r.passed, r.score), (false, 0.0));
        let r = decide("g", &ok(), br#"{"passed": true, "details": [{"passed": true, "name": "x"}]}"#, b"");
        assert_eq!((r.passed, r.score, r.details.map(|d| d.len())), (true, 1.0, Some(1)));
    }

    #[test]
    fn schema_and_parse_failures() {
        for out in [
            &br#"{"passed": true, "score": 1.5}"#[..],
            br#"{"passed": "yes"}"#,
            br#"{"score": 1}"#,
            br#"{"passed": true, "evidence": 3}"#,
            br#"{"passed": true, "metadata": []}"#,
            br#"{"passed": true, "details": [1]}"#,
            br#"[true]"#,
        ] {
            let r = decide("g", &ok(), out, b"");
            assert_eq!(
                (r.passed, r.score, r.message.as_str()),
                (false, 0.0, "Grader output did not match schema"),
                "{}",
                String::from_utf8_lossy(out)
            );
        }
        for out in [&b"All good!"[..], br#"checking... {"passed": true}"#, br#"{"passed": true} trailing"#] {
            let r = decide("g", &ok(), out, b"");
            assert!(
                r.message.starts_with("Grader returned unparseable JSON output on stdout: SyntaxError: "),
                "{}",
                r.message
            );
            assert!(!r.passed && r.score == 0.0);
        }
    }

    #[test]
    fn how_a_run_ended() {
        let r = decide("g", &run(Verdict::TLE, None, Some("wall time limit of 1s exceeded")), b"", b"");
        assert_eq!((r.passed, r.message.as_str()), (false, "Grader timed out"));
        let missing = run(Verdict::RE, Some(127), Some("nope: cannot execute: No such file or directory (os error 2)"));
        assert_eq!(decide("g", &missing, b"", b"").message, "Failed to start grader program: ENOENT (spawn)");
        // A program that itself exits 127 is not a spawn failure.
        assert_eq!(
            decide("g", &run(Verdict::RE, Some(127), Some("exited with status 127")), b"", b"").message,
            "Grader exited with exit code 127"
        );
    }
}
