//! Hands each line the daemon sends to the request it belongs to.
//!
//! One connection carries many requests, so responses and `event` notifications arrive
//! interleaved. Every request in flight has a [`Waiter`] in the table under its id: events go
//! to its stream, the response completes it and removes it. Removing the waiter also drops
//! its event sender, so a reader of the stream sees every event before the stream ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use segi_proto::jsonrpc::{Response, ServerMessage};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::Error;

/// What a request ends with: its `result`, or why there is none.
pub(crate) type Reply = Result<Value, Error>;

/// The receiving ends a caller keeps for one request.
pub(crate) struct Pending {
    pub reply: oneshot::Receiver<Reply>,
    /// Event objects exactly as the daemon wrote them, when the caller asked for them.
    pub events: Option<mpsc::UnboundedReceiver<Box<RawValue>>>,
}

struct Waiter {
    reply: oneshot::Sender<Reply>,
    // Unbounded so that a slow reader of one run never stalls the responses of the others;
    // the daemon's output limit bounds what can pile up.
    events: Option<mpsc::UnboundedSender<Box<RawValue>>>,
}

#[derive(Default)]
struct Table {
    waiting: HashMap<u64, Waiter>,
    /// Set once the connection is unusable, with the reason given to every later request.
    closed: Option<String>,
}

/// Shared between the [`crate::Client`], its reader task and its writer task.
#[derive(Clone)]
pub(crate) struct Router {
    socket: PathBuf,
    table: Arc<Mutex<Table>>,
}

impl Router {
    pub fn new(socket: PathBuf) -> Self {
        Router { socket, table: Arc::default() }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // A panic while holding the lock leaves the table consistent (every step is a single
        // insert or remove), so a poisoned lock is still safe to use.
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn disconnected(&self, reason: &str) -> Error {
        Error::Disconnected { socket: self.socket.clone(), reason: reason.to_owned() }
    }

    /// Registers request `id` before it is sent, so that a quick answer finds its waiter.
    pub fn register(&self, id: u64, with_events: bool) -> Result<Pending, Error> {
        let mut table = self.table();
        if let Some(reason) = &table.closed {
            return Err(self.disconnected(reason));
        }
        let (reply_tx, reply) = oneshot::channel();
        let (events_tx, events) = match with_events {
            true => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        table.waiting.insert(id, Waiter { reply: reply_tx, events: events_tx });
        Ok(Pending { reply, events })
    }

    /// Routes one line from the daemon. A line that is not the protocol closes the
    /// connection: after it, no answer can be trusted to reach the right request.
    pub fn deliver(&self, line: &str) {
        match ServerMessage::parse(line) {
            Ok(ServerMessage::Event(event)) => {
                let events = {
                    let table = self.table();
                    let waiter = event.id.as_u64().and_then(|id| table.waiting.get(&id));
                    waiter.and_then(|w| w.events.clone())
                };
                // Events for requests that are not waiting (plain calls, or answered
                // already) are dropped.
                if let Some(events) = events {
                    // The receiver may be gone (a caller that stopped listening): fine.
                    let _ = events.send(raw_event(line, &event.event));
                }
            }
            Ok(ServerMessage::Response(response)) => self.answer(response),
            Err(error) => {
                let shown: String = line.chars().take(200).collect();
                self.close(&format!("segid sent a line that is not JSON-RPC ({error}): {shown}"));
            }
        }
    }

    fn answer(&self, response: Response) {
        let Some(id) = response.id.as_u64() else {
            // An error without a usable id (the daemon could not read one of our lines, e.g.
            // an oversized one) cannot be pinned on one request: every request waiting shares
            // it, as the daemon closes the connection after such an error anyway.
            let error = response
                .error
                .unwrap_or_else(|| segi_proto::jsonrpc::RpcError::internal("a response without a request id"));
            let waiting: Vec<Waiter> = self.table().waiting.drain().map(|(_, w)| w).collect();
            for waiter in waiting {
                let _ = waiter.reply.send(Err(Error::Rpc(error.clone())));
            }
            return;
        };
        let Some(waiter) = self.table().waiting.remove(&id) else {
            return; // An answer nobody waits for (the caller gave up): nothing to do.
        };
        let reply = match (response.error, response.result) {
            (Some(error), _) => Err(Error::Rpc(error)),
            (None, Some(result)) => Ok(result),
            // serde reads `"result": null` as a missing result.
            (None, None) => Ok(Value::Null),
        };
        let _ = waiter.reply.send(reply);
    }

    /// Fails every waiting request, and every later one, with `reason`.
    pub fn close(&self, reason: &str) {
        let waiting: Vec<Waiter> = {
            let mut table = self.table();
            table.closed.get_or_insert_with(|| reason.to_owned());
            table.waiting.drain().map(|(_, w)| w).collect()
        };
        for waiter in waiting {
            let _ = waiter.reply.send(Err(self.disconnected(reason)));
        }
    }
}

/// The `event` object of an event notification as the daemon wrote it (key order and spacing
/// kept, e.g. a data event's payload as the evaluator wrote it); `parsed` is the fallback.
fn raw_event(line: &str, parsed: &Value) -> Box<RawValue> {
    #[derive(Deserialize)]
    struct Notification<'a> {
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        event: &'a RawValue,
    }
    match serde_json::from_str::<Notification>(line) {
        Ok(notification) => notification.params.event.to_owned(),
        // Cannot happen for a line that parsed as a notification; the parsed form is as good.
        Err(_) => serde_json::value::to_raw_value(parsed).unwrap_or_else(|_| RawValue::NULL.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_keep_the_daemon_s_text() {
        let line = r#"{"jsonrpc":"2.0","method":"event","params":{"id":1,"event":{"type":"data","payload":{"z": 1, "a": [2]}}}}"#;
        let parsed = serde_json::json!({"type": "data", "payload": {"z": 1, "a": [2]}});
        assert_eq!(raw_event(line, &parsed).get(), r#"{"type":"data","payload":{"z": 1, "a": [2]}}"#);
    }
}
