//! Output pumps: read a run's stdout or stderr pipe and stream it as events, counting bytes
//! against the run's output limit.
//!
//! Memory stays flat whatever the program writes: one fixed buffer per stream, and events go
//! through a bounded channel, so a slow client slows the pump and a full pipe blocks the
//! program instead of the daemon buffering.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use segi_proto::{Event, Payload};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, Notify};

const CHUNK: usize = 64 * 1024;

#[derive(Debug, Clone, Copy)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The output limit shared by both streams of a run.
pub struct OutputBudget {
    limit: u64,
    used: AtomicU64,
    /// Bytes handed to the event queue: what the client gets.
    sent: AtomicU64,
    exceeded: AtomicBool,
    pub exceeded_signal: Notify,
}

impl OutputBudget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(OutputBudget {
            limit,
            used: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            exceeded: AtomicBool::new(false),
            exceeded_signal: Notify::new(),
        })
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed).min(self.limit)
    }

    /// Bytes queued as events (at most `used`; less when a cancel stopped a pump mid-way).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    pub fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }

    /// Counts `n` bytes as handed to the event queue.
    pub fn mark_sent(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes `n` bytes; returns how many may still be forwarded.
    pub fn take(&self, n: usize) -> usize {
        let before = self.used.fetch_add(n as u64, Ordering::Relaxed);
        let allowed = self.limit.saturating_sub(before).min(n as u64) as usize;
        if allowed < n && !self.exceeded.swap(true, Ordering::Relaxed) {
            self.exceeded_signal.notify_one();
        }
        allowed
    }
}

/// Streams `fd` until EOF (every writer gone) or until the budget is spent.
pub async fn pump(fd: OwnedFd, stream: Stream, budget: Arc<OutputBudget>, events: mpsc::Sender<Event>) {
    let Ok(mut pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else {
        return;
    };
    let mut buf = vec![0u8; CHUNK];
    // Up to 3 bytes of a UTF-8 sequence cut by the chunk boundary, kept for the next chunk.
    let mut carry = 0usize;
    loop {
        let n = match pipe.read(&mut buf[carry..]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let allowed = budget.take(n);
        let end = carry + allowed;
        if allowed < n {
            // Over the limit: forward what fits, then stop reading; the run is being ended.
            send(&events, stream, &buf[..end], &budget).await;
            return;
        }
        let keep = incomplete_utf8_tail(&buf[..end]);
        send(&events, stream, &buf[..end - keep], &budget).await;
        buf.copy_within(end - keep..end, 0);
        carry = keep;
    }
    send(&events, stream, &buf[..carry], &budget).await;
}

async fn send(events: &mpsc::Sender<Event>, stream: Stream, bytes: &[u8], budget: &OutputBudget) {
    if bytes.is_empty() {
        return;
    }
    let payload = Payload::from_bytes(bytes);
    let event = match stream {
        Stream::Stdout => Event::Stdout(payload),
        Stream::Stderr => Event::Stderr(payload),
    };
    // A closed receiver means the client is gone; the run is cancelled elsewhere.
    if events.send(event).await.is_ok() {
        budget.sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }
}

/// Length of an unfinished UTF-8 sequence at the end of `bytes` (0 when none), so that a
/// character split across reads is not sent as base64 twice.
fn incomplete_utf8_tail(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => 0,
        Err(e) if e.error_len().is_none() => bytes.len() - e.valid_up_to(),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_cuts_at_the_limit() {
        let budget = OutputBudget::new(10);
        assert_eq!(budget.take(6), 6);
        assert!(!budget.exceeded());
        assert_eq!(budget.take(6), 4);
        assert!(budget.exceeded());
        assert_eq!(budget.take(6), 0);
        assert_eq!(budget.used(), 10);
    }

    #[test]
    fn exactly_the_limit_is_fine() {
        let budget = OutputBudget::new(10);
        assert_eq!(budget.take(10), 10);
        assert!(!budget.exceeded());
    }

    #[test]
    fn split_characters_are_carried() {
        let text = "héllo".as_bytes();
        assert_eq!(incomplete_utf8_tail(&text[..2]), 1);
        assert_eq!(incomplete_utf8_tail(text), 0);
        assert_eq!(incomplete_utf8_tail(b"\xff\xfe"), 0);
    }
}
