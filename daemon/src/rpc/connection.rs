//! One client connection: `\n`-framed JSON-RPC in, responses and event notifications out.
//!
//! Reading and writing are separate tasks joined by a bounded queue, so a request that streams
//! events never blocks the reading of the next request (`cancel` must get through), and a
//! client that stops reading slows its own runs, not the daemon. Closing the connection
//! cancels every run it started.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use std::os::fd::OwnedFd;

use segi_proto::jsonrpc::{self, Response, RpcError};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::framing::{FrameError, LineReader, MAX_FDS};
use super::methods;
use crate::daemon::Daemon;

/// Lines waiting to be written to one client.
const OUTBOX: usize = 64;

/// What a method handler needs to answer and stream.
#[derive(Clone)]
pub struct Context {
    pub daemon: Arc<Daemon>,
    pub outbox: mpsc::Sender<String>,
    /// Runs of this connection by request id (its JSON text), for `cancel`.
    pub running: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// Fires when the connection closes.
    pub closed: CancellationToken,
    pub peer_uid: Option<u32>,
}

impl Context {
    /// Queues a response; a closed connection drops it.
    pub async fn reply(&self, response: Response) {
        if let Ok(line) = serde_json::to_string(&response) {
            let _ = self.outbox.send(line).await;
        }
    }
}

pub async fn serve(daemon: Arc<Daemon>, stream: UnixStream, stop: CancellationToken) {
    let peer_uid = stream.peer_cred().ok().map(|c| c.uid());
    let max = daemon.settings.max_message_bytes;
    let (read, mut write) = stream.into_split();
    let (outbox, mut outgoing) = mpsc::channel::<String>(OUTBOX);
    let closed = stop;
    let writer_closed = closed.clone();
    let writer = tokio::spawn(async move {
        while let Some(mut line) = outgoing.recv().await {
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
        // The client is gone: its runs must not go on.
        writer_closed.cancel();
    });
    let ctx = Context { daemon, outbox, running: Arc::default(), closed: closed.clone(), peer_uid };
    let mut frames = LineReader::new(read, max);
    loop {
        let frame = tokio::select! {
            frame = frames.next() => frame,
            _ = closed.cancelled() => break,
        };
        match frame {
            Ok(None) => break,
            Ok(Some(frame)) if frame.too_many_fds => {
                let message = format!("more than {MAX_FDS} file descriptors came with one request");
                ctx.reply(Response::failure(Value::Null, RpcError::new(jsonrpc::INVALID_REQUEST, message))).await;
            }
            Ok(Some(frame)) => handle_line(&ctx, &frame.line, frame.fds).await,
            Err(FrameError::TooLong) => {
                let message = format!("message longer than the maximum of {max} bytes; send files smaller or pass them as file descriptors");
                ctx.reply(Response::failure(Value::Null, RpcError::new(jsonrpc::INVALID_REQUEST, message))).await;
                // The rest of the line would be read as garbage: close.
                break;
            }
            Err(FrameError::Io(_)) => break,
        }
    }
    closed.cancel();
    drop(ctx);
    let _ = writer.await;
}

async fn handle_line(ctx: &Context, bytes: &[u8], fds: Vec<OwnedFd>) {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => {
            let error = RpcError::new(jsonrpc::PARSE_ERROR, format!("not valid JSON: {e}"));
            return ctx.reply(Response::failure(Value::Null, error)).await;
        }
    };
    let id = value.get("id").cloned();
    let invalid = |message: &str| RpcError::new(jsonrpc::INVALID_REQUEST, message.to_string());
    let Value::Object(object) = &value else {
        let why = if value.is_array() {
            "batches are not supported: send one request per line"
        } else {
            "a request must be a JSON object"
        };
        return ctx.reply(Response::failure(Value::Null, invalid(why))).await;
    };
    let reply_id = match &id {
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id.clone(),
        Some(_) => {
            return ctx.reply(Response::failure(Value::Null, invalid("id must be a string, a number or null"))).await
        }
        None => Value::Null,
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return ctx.reply(Response::failure(reply_id, invalid("\"jsonrpc\" must be \"2.0\""))).await;
    }
    let Some(Value::String(method)) = object.get("method") else {
        return ctx.reply(Response::failure(reply_id, invalid("\"method\" must be a string"))).await;
    };
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    if !(params.is_object() || params.is_null() || params.is_array()) {
        return ctx.reply(Response::failure(reply_id, invalid("\"params\" must be an object or an array"))).await;
    }
    methods::dispatch(ctx, method, id, params, fds).await;
}
