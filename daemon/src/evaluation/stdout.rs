//! The evaluator's stdout, read while it runs and parsed into text and data events: the I/O
//! and the clock around the pure [`Parser`].
//!
//! Silence is measured here: after 20 ms without a byte (decisions 5) the parser may flush the
//! text of an unfinished line, so that a progress line shows while the evaluator works. The
//! output limit counts the raw bytes, as for `run`.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use segi_proto::evaluate::Warning;
use segi_proto::{Data, Event};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use super::parser::{ParsedEvent, Parser};
use crate::run::output::OutputBudget;

/// Silence after which an unfinished text line is flushed (decisions 5).
pub const IDLE: Duration = Duration::from_millis(20);
const CHUNK: usize = 64 * 1024;

/// Streams `fd` through `parser` until EOF or until the budget is spent; returns the
/// evaluator's protocol warnings.
pub async fn pump(
    fd: OwnedFd,
    mut parser: Parser,
    budget: Arc<OutputBudget>,
    events: mpsc::Sender<Event>,
) -> Vec<Warning> {
    let mut out = Vec::new();
    let Ok(mut pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else {
        return finish(parser, &events).await;
    };
    let mut buf = vec![0u8; CHUNK];
    // Whether bytes came since the last idle flush: silence is only worth a flush then.
    let mut fresh = false;
    loop {
        let read = if fresh {
            match tokio::time::timeout(IDLE, pipe.read(&mut buf)).await {
                Ok(read) => read,
                Err(_) => {
                    fresh = false;
                    parser.idle(&mut out);
                    if !send(&mut out, &events).await {
                        return Vec::new();
                    }
                    continue;
                }
            }
        } else {
            pipe.read(&mut buf).await
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let allowed = budget.take(n);
        parser.feed(&buf[..allowed], &mut out);
        if !send(&mut out, &events).await {
            return Vec::new();
        }
        budget.mark_sent(allowed as u64);
        if allowed < n {
            // Over the limit: stop reading; the run is being ended.
            break;
        }
        fresh = true;
    }
    finish(parser, &events).await
}

async fn finish(parser: Parser, events: &mpsc::Sender<Event>) -> Vec<Warning> {
    let mut out = Vec::new();
    let warnings = parser.finish(&mut out);
    send(&mut out, events).await;
    warnings.into_iter().map(|w| Warning { line: w.line, message: w.message }).collect()
}

/// Sends and empties `out`; false when the client is gone (the run is cancelled elsewhere).
async fn send(out: &mut Vec<ParsedEvent>, events: &mpsc::Sender<Event>) -> bool {
    for event in out.drain(..) {
        let event = match event {
            ParsedEvent::Text(text) => Event::Text { payload: text.into_owned() },
            ParsedEvent::Data(raw) => Event::Data { payload: Data(raw) },
        };
        if events.send(event).await.is_err() {
            return false;
        }
    }
    true
}
