//! `docs/protocol.md` is checked against the real daemon: in every fenced block whose info
//! string is `jsonrpc`, a line `-> {json}` is sent and a line `<- {json}` is the pattern the next
//! message from the daemon must match (see `segi_tests::pattern`), in order, on one fresh
//! connection per block. A `->` line whose JSON is invalid is sent as it is (the parse-error
//! example). Other lines in the block are ignored.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use segi_tests::pattern::matches;
use segi_tests::{workspace_dir, Daemon, ReadError};

/// One step of an example: something to send or to expect, with its line number.
enum Step {
    Send { line: usize, raw: String },
    Expect { line: usize, pattern: Value },
}

struct Example {
    /// Line of the opening fence.
    line: usize,
    steps: Vec<Step>,
}

fn doc_path() -> PathBuf {
    workspace_dir().join("docs/protocol.md")
}

/// The examples of the document. Every fenced block is tracked, so that `->` lines in other
/// blocks (a shell transcript, say) are never taken for examples.
fn examples_in(text: &str) -> Result<Vec<Example>, String> {
    let mut examples = Vec::new();
    let mut open: Option<(String, Option<Example>)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        match open.as_mut() {
            Some((fence, example)) => {
                if trimmed.starts_with(fence.as_str()) && trimmed[fence.len()..].trim().is_empty() {
                    if let Some((_, Some(example))) = open.take() {
                        examples.push(example);
                    }
                    continue;
                }
                let Some(example) = example.as_mut() else { continue };
                if let Some(raw) = trimmed.strip_prefix("->") {
                    example.steps.push(Step::Send { line: number, raw: raw.trim().to_owned() });
                } else if let Some(json) = trimmed.strip_prefix("<-") {
                    let pattern = serde_json::from_str(json.trim())
                        .map_err(|e| format!("docs/protocol.md:{number}: the expected message is not JSON ({e})"))?;
                    example.steps.push(Step::Expect { line: number, pattern });
                }
            }
            None => {
                let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) else { continue };
                let fence_char = marker.chars().next().unwrap();
                let fence_len = trimmed.chars().take_while(|&c| c == fence_char).count();
                let fence = fence_char.to_string().repeat(fence_len);
                let info = trimmed[fence_len..].trim();
                let example = (info.split_whitespace().next() == Some("jsonrpc"))
                    .then(|| Example { line: number, steps: Vec::new() });
                open = Some((fence, example));
            }
        }
    }
    if let Some((_, example)) = open {
        let line = example.map(|e| e.line).unwrap_or(0);
        return Err(format!("docs/protocol.md:{line}: a fenced block is never closed"));
    }
    Ok(examples)
}

/// Runs one example on a fresh connection; `Err` says which line failed and why.
fn check(daemon: &Daemon, example: &Example) -> Result<(), String> {
    let mut conn = daemon.raw_connect();
    for step in &example.steps {
        match step {
            Step::Send { line, raw } => {
                // Valid JSON is sent compactly on one line; anything else exactly as written.
                let bytes = match serde_json::from_str::<Value>(raw) {
                    Ok(value) => serde_json::to_string(&value).expect("serialize"),
                    Err(_) => raw.clone(),
                };
                conn.send_raw(format!("{bytes}\n").as_bytes()).map_err(|e| format!("line {line}: send failed: {e}"))?;
            }
            Step::Expect { line, pattern } => {
                let received = match conn.read_line(Duration::from_secs(15)) {
                    Ok(bytes) => bytes,
                    Err(ReadError::Timeout) => return Err(format!("line {line}: nothing received within 15 s")),
                    Err(e) => return Err(format!("line {line}: the connection ended: {e:?}")),
                };
                let actual: Value = serde_json::from_slice(&received).map_err(|e| {
                    format!("line {line}: the daemon sent non-JSON ({e}): {}", String::from_utf8_lossy(&received))
                })?;
                matches(pattern, &actual)
                    .map_err(|why| format!("line {line}: {why}\n  expected: {pattern}\n  received: {actual}"))?;
            }
        }
    }
    Ok(())
}

#[test]
fn protocol_doc_examples_match_the_daemon() {
    let path = doc_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{} cannot be read ({e}). It must document ping, capabilities and run with ```jsonrpc \
             examples (`-> request` and `<- expected response` lines) that this test checks.",
            path.display()
        )
    });
    let examples = examples_in(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(!examples.is_empty(), "{} has no ```jsonrpc blocks", path.display());

    // Every method the issue asks about is documented by an example request.
    let mut sent_methods = Vec::new();
    for example in &examples {
        for step in &example.steps {
            if let Step::Send { raw, .. } = step {
                if let Ok(value) = serde_json::from_str::<Value>(raw) {
                    if let Some(method) = value["method"].as_str() {
                        sent_methods.push(method.to_owned());
                    }
                }
            }
        }
        assert!(
            example.steps.iter().any(|s| matches!(s, Step::Expect { .. })),
            "docs/protocol.md:{}: a jsonrpc block with no expected message (`<-`)",
            example.line
        );
    }
    for method in ["ping", "capabilities", "run"] {
        assert!(
            sent_methods.iter().any(|m| m == method),
            "docs/protocol.md has no ```jsonrpc example sending `{method}`"
        );
    }

    let daemon = Daemon::shared();
    let failures: Vec<String> = examples
        .iter()
        .filter_map(|example| {
            check(daemon, example).err().map(|why| format!("block at docs/protocol.md:{}: {why}", example.line))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} examples failed:\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_parser_reads_blocks() {
    let doc = "text\n```sh\n-> not this\n```\n```jsonrpc\n-> {\"a\":1}\n<- {\"b\":\"*\"}\nnote\n-> {bad\n```\n";
    let examples = examples_in(doc).unwrap();
    assert_eq!(examples.len(), 1);
    assert_eq!(examples[0].steps.len(), 3);
    assert!(matches!(&examples[0].steps[2], Step::Send { raw, .. } if raw == "{bad"));
}
