//! [`Client`]: one connection to segid that carries many requests at once.
//!
//! Two tasks serve the connection. The writer sends whole request lines from a queue, so a
//! request is never half-written even when the caller's future is dropped. The reader hands
//! every line the daemon sends to the router, which completes the request it belongs to.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use segi_proto::jsonrpc::Request;
use segi_proto::{Capabilities, Event, RunRequest, RunResult, MAX_MESSAGE_BYTES};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::router::{Pending, Reply, Router};
use crate::Error;

/// What `ping` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pong {
    pub pong: bool,
    /// The daemon's version.
    pub version: String,
}

/// A connection to segid. Methods take `&self`: share the client (e.g. in an `Arc`) to run
/// several requests at once over the one connection.
///
/// Dropping the client closes the connection, and segid then stops every run it carried.
pub struct Client {
    socket: PathBuf,
    router: Router,
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicU64,
    max_message_bytes: usize,
    reader: JoinHandle<()>,
}

impl Client {
    /// Connects to the daemon's socket.
    pub async fn connect(socket: impl AsRef<Path>) -> Result<Client, Error> {
        let socket = socket.as_ref().to_path_buf();
        match UnixStream::connect(&socket).await {
            Ok(stream) => Ok(Client::from_stream(stream, socket)),
            Err(io) => Err(Error::Connect { socket, io }),
        }
    }

    /// Speaks the protocol over a stream that is already connected (socket activation, tests).
    /// `socket` only names the peer in error messages. Must be called inside a tokio runtime.
    pub fn from_stream(stream: UnixStream, socket: impl Into<PathBuf>) -> Client {
        let socket = socket.into();
        let router = Router::new(socket.clone());
        let (read_half, write_half) = stream.into_split();
        let (outgoing, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_requests(write_half, queue, router.clone()));
        let reader = tokio::spawn(read_answers(read_half, router.clone()));
        Client { socket, router, outgoing, next_id: AtomicU64::new(1), max_message_bytes: MAX_MESSAGE_BYTES, reader }
    }

    /// The socket this client talks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Requests longer than this are refused here, before sending ([`Error::MessageTooLarge`]).
    /// Defaults to segid's default; set it to `capabilities().max_message_bytes` to follow a
    /// daemon started with another `--max-message-bytes`.
    pub fn set_max_message_bytes(&mut self, bytes: usize) {
        self.max_message_bytes = bytes;
    }

    /// Sends any method and waits for its result. `Value::Null` params are left out of the
    /// request. Events the daemon streams for the request are dropped.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        let (_, pending) = self.send(method, params, false)?;
        self.wait(pending.reply).await
    }

    /// `ping`: is the daemon there, and which version is it?
    pub async fn ping(&self) -> Result<Pong, Error> {
        decode(self.call("ping", Value::Null).await?, "ping")
    }

    /// `capabilities`: the host's isolation layers and the daemon's settings.
    pub async fn capabilities(&self) -> Result<Capabilities, Error> {
        decode(self.call("capabilities", Value::Null).await?, "capabilities")
    }

    /// Starts a `run` and returns as soon as it is sent; read its output and result from
    /// the [`RunHandle`], whose [`RunHandle::id`] is what [`Client::cancel`] takes.
    pub async fn start_run(&self, request: &RunRequest) -> Result<RunHandle, Error> {
        let params = serde_json::to_value(request)
            .map_err(|e| Error::Protocol(format!("cannot encode the run request: {e}")))?;
        let (id, pending) = self.send("run", params, true)?;
        Ok(RunHandle {
            id,
            events: pending.events.unwrap_or_else(|| mpsc::unbounded_channel().1),
            reply: pending.reply,
            socket: self.socket.clone(),
        })
    }

    /// Runs a program to its end, calling `on_event` for each piece of output as it arrives.
    pub async fn run(&self, request: &RunRequest, mut on_event: impl FnMut(Event)) -> Result<RunResult, Error> {
        let mut run = self.start_run(request).await?;
        while let Some(event) = run.next_event().await? {
            on_event(event);
        }
        run.finish().await
    }

    /// `cancel`: stops the request `id` on this connection. Answers whether there was such a
    /// request still going; the cancelled request itself then fails with code -32002.
    pub async fn cancel(&self, id: u64) -> Result<bool, Error> {
        let answer = self.call("cancel", json!({ "id": id })).await?;
        match answer.get("cancelled").and_then(Value::as_bool) {
            Some(cancelled) => Ok(cancelled),
            None => Err(Error::Protocol(format!("`cancel` answered {answer}, without `cancelled`"))),
        }
    }

    fn send(&self, method: &str, params: Value, with_events: bool) -> Result<(u64, Pending), Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = Request::new(id, method, params);
        if request.params.as_ref().is_some_and(Value::is_null) {
            request.params = None;
        }
        let mut line =
            serde_json::to_vec(&request).map_err(|e| Error::Protocol(format!("cannot encode the request: {e}")))?;
        if line.len() > self.max_message_bytes {
            return Err(Error::MessageTooLarge { bytes: line.len(), limit: self.max_message_bytes });
        }
        line.push(b'\n');
        // Registered before it is sent: the answer may come back before `send` returns.
        let pending = self.router.register(id, with_events)?;
        if self.outgoing.send(line).is_err() {
            // The writer stopped after a failed write; the router already knows why.
            self.router.close("cannot send to segid any more");
        }
        Ok((id, pending))
    }

    async fn wait(&self, reply: oneshot::Receiver<Reply>) -> Result<Value, Error> {
        wait(reply, &self.socket).await
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // The writer ends by itself once `outgoing` is dropped, closing our side of the socket.
        self.reader.abort();
    }
}

/// One `run` in progress: its output as it arrives, then its result.
pub struct RunHandle {
    id: u64,
    events: mpsc::UnboundedReceiver<Value>,
    reply: oneshot::Receiver<Reply>,
    socket: PathBuf,
}

impl RunHandle {
    /// The request id, for [`Client::cancel`].
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The next piece of output, or `None` once the run has ended (then call
    /// [`RunHandle::finish`]). Event types this client does not know are skipped, so a newer
    /// daemon may add some.
    pub async fn next_event(&mut self) -> Result<Option<Event>, Error> {
        while let Some(event) = self.events.recv().await {
            let kind = event.get("type").and_then(Value::as_str);
            if !matches!(kind, Some("stdout" | "stderr")) {
                continue;
            }
            return serde_json::from_value(event.clone())
                .map(Some)
                .map_err(|e| Error::Protocol(format!("segid sent an event segi-client cannot read ({e}): {event}")));
        }
        Ok(None)
    }

    /// Waits for the result (any output not read yet is dropped).
    pub async fn finish(self) -> Result<RunResult, Error> {
        decode(wait(self.reply, &self.socket).await?, "run")
    }
}

async fn wait(reply: oneshot::Receiver<Reply>, socket: &Path) -> Result<Value, Error> {
    reply.await.unwrap_or_else(|_| {
        Err(Error::Disconnected {
            socket: socket.to_path_buf(),
            reason: "the client was dropped before segid answered".into(),
        })
    })
}

fn decode<T: DeserializeOwned>(value: Value, method: &str) -> Result<T, Error> {
    serde_json::from_value(value)
        .map_err(|e| Error::Protocol(format!("`{method}` answered something segi-client cannot read: {e}")))
}

async fn write_requests(mut socket: OwnedWriteHalf, mut queue: mpsc::UnboundedReceiver<Vec<u8>>, router: Router) {
    while let Some(line) = queue.recv().await {
        if let Err(error) = socket.write_all(&line).await {
            router.close(&format!("cannot send to segid: {error}"));
            return;
        }
    }
    // Every sender is gone: the client was dropped. Shutting down our side tells segid.
    let _ = socket.shutdown().await;
}

async fn read_answers(socket: OwnedReadHalf, router: Router) {
    let mut socket = BufReader::new(socket);
    let mut line = Vec::new();
    loop {
        line.clear();
        match socket.read_until(b'\n', &mut line).await {
            Ok(0) => return router.close("segid closed the connection"),
            Ok(_) if line.last() != Some(&b'\n') => {
                return router.close("segid closed the connection in the middle of a message");
            }
            Ok(_) => match std::str::from_utf8(&line) {
                Ok(text) if text.trim().is_empty() => {}
                Ok(text) => router.deliver(text),
                Err(_) => return router.close("segid sent a line that is not UTF-8"),
            },
            Err(error) => return router.close(&format!("cannot read from segid: {error}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use segi_proto::Payload;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A scripted daemon on the other end of a socket pair.
    struct FakeDaemon {
        lines: tokio::io::Lines<BufReader<OwnedReadHalf>>,
        writer: OwnedWriteHalf,
    }

    impl FakeDaemon {
        async fn receive(&mut self) -> Value {
            let line = self.lines.next_line().await.unwrap().expect("a request line");
            serde_json::from_str(&line).unwrap()
        }
        async fn say(&mut self, message: Value) {
            let mut line = message.to_string();
            line.push('\n');
            self.writer.write_all(line.as_bytes()).await.unwrap();
        }
    }

    fn pair() -> (Client, FakeDaemon) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (read, writer) = theirs.into_split();
        let daemon = FakeDaemon { lines: BufReader::new(read).lines(), writer };
        (Client::from_stream(ours, "/test/segid.sock"), daemon)
    }

    fn run_request() -> RunRequest {
        serde_json::from_value(json!({"command": ["sh", "-c", "echo hi"]})).unwrap()
    }

    #[tokio::test]
    async fn ping_sends_no_params() {
        let (client, mut daemon) = pair();
        let answer = tokio::spawn(async move { client.ping().await });
        let request = daemon.receive().await;
        assert_eq!(request, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        daemon.say(json!({"jsonrpc": "2.0", "id": 1, "result": {"pong": true, "version": "0.1.0"}})).await;
        let pong = answer.await.unwrap().unwrap();
        assert_eq!(pong, Pong { pong: true, version: "0.1.0".into() });
    }

    #[tokio::test]
    async fn answers_out_of_order_reach_their_callers() {
        let (client, mut daemon) = pair();
        let client = std::sync::Arc::new(client);
        let first = tokio::spawn({
            let client = client.clone();
            async move { client.call("first", Value::Null).await }
        });
        let a = daemon.receive().await;
        let second = tokio::spawn({
            let client = client.clone();
            async move { client.call("second", json!({"x": 1})).await }
        });
        let b = daemon.receive().await;
        assert_eq!(b["params"], json!({"x": 1}));
        daemon.say(json!({"jsonrpc": "2.0", "id": b["id"], "result": "second"})).await;
        daemon.say(json!({"jsonrpc": "2.0", "id": a["id"], "error": {"code": -32601, "message": "no first"}})).await;
        assert_eq!(second.await.unwrap().unwrap(), json!("second"));
        let error = first.await.unwrap().unwrap_err();
        assert_eq!(error.rpc_code(), Some(-32601));
        assert!(error.to_string().contains("no first"), "{error}");
    }

    #[tokio::test]
    async fn run_streams_events_then_the_result() {
        let (client, mut daemon) = pair();
        let mut run = client.start_run(&run_request()).await.unwrap();
        let request = daemon.receive().await;
        assert_eq!(request["method"], "run");
        assert_eq!(request["params"]["command"], json!(["sh", "-c", "echo hi"]));
        let id = request["id"].clone();
        // An event for another request, and one of a type this client does not know.
        daemon.say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": 99, "event": {"type": "stdout", "text": "no"}}})).await;
        daemon
            .say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": {"type": "progress"}}}))
            .await;
        daemon.say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": {"type": "stdout", "text": "hi\n"}}})).await;
        daemon.say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": {"type": "stderr", "base64": "/w=="}}})).await;
        daemon
            .say(json!({"jsonrpc": "2.0", "id": id, "result": {
                "verdict": "OK", "exit_code": 0, "signal": null, "cpu_time": 0.01, "wall_time": 0.02,
                "memory": 1024, "limit": null, "message": null}}))
            .await;
        assert_eq!(run.next_event().await.unwrap(), Some(Event::Stdout(Payload::Text("hi\n".into()))));
        assert_eq!(run.next_event().await.unwrap(), Some(Event::Stderr(Payload::Base64("/w==".into()))));
        assert_eq!(run.next_event().await.unwrap(), None);
        let result = run.finish().await.unwrap();
        assert_eq!(result.verdict, segi_proto::Verdict::OK);
        assert_eq!(result.exit_code, Some(0));
    }

    #[tokio::test]
    async fn cancel_names_the_run() {
        let (client, mut daemon) = pair();
        let run = client.start_run(&run_request()).await.unwrap();
        let _ = daemon.receive().await;
        let client = std::sync::Arc::new(client);
        let cancel = tokio::spawn({
            let client = client.clone();
            let id = run.id();
            async move { client.cancel(id).await }
        });
        let request = daemon.receive().await;
        assert_eq!(request["method"], "cancel");
        assert_eq!(request["params"], json!({"id": run.id()}));
        daemon.say(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"cancelled": true}})).await;
        daemon.say(json!({"jsonrpc": "2.0", "id": run.id(), "error": {"code": -32002, "message": "cancelled"}})).await;
        assert!(cancel.await.unwrap().unwrap());
        assert_eq!(run.finish().await.unwrap_err().rpc_code(), Some(-32002));
    }

    #[tokio::test]
    async fn a_closed_connection_fails_every_request() {
        let (client, mut daemon) = pair();
        let run = client.start_run(&run_request()).await.unwrap();
        let _ = daemon.receive().await;
        drop(daemon);
        let error = run.finish().await.unwrap_err();
        assert!(matches!(error, Error::Disconnected { .. }), "{error:?}");
        assert!(error.to_string().contains("/test/segid.sock"), "{error}");
        let later = client.call("ping", Value::Null).await.unwrap_err();
        assert!(matches!(later, Error::Disconnected { .. }), "{later:?}");
    }

    #[tokio::test]
    async fn an_error_without_id_fails_the_waiting_requests() {
        let (client, mut daemon) = pair();
        let run = client.start_run(&run_request()).await.unwrap();
        let _ = daemon.receive().await;
        daemon
            .say(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "message above 64 MiB"}}))
            .await;
        assert_eq!(run.finish().await.unwrap_err().rpc_code(), Some(-32600));
    }

    #[tokio::test]
    async fn garbage_from_the_daemon_is_a_lost_connection() {
        let (client, mut daemon) = pair();
        let run = client.start_run(&run_request()).await.unwrap();
        let _ = daemon.receive().await;
        daemon.writer.write_all(b"{not json\n").await.unwrap();
        let error = run.finish().await.unwrap_err();
        assert!(error.to_string().contains("not JSON-RPC"), "{error}");
    }

    #[tokio::test]
    async fn connect_failure_names_the_socket() {
        let error = Client::connect("/nonexistent/segi/segid.sock").await.err().unwrap();
        let text = error.to_string();
        assert!(text.starts_with("cannot connect to segid at /nonexistent/segi/segid.sock: "), "{text}");
        assert!(text.contains("SEGID_SOCKET"), "{text}");
    }

    #[tokio::test]
    async fn oversized_requests_are_refused_here() {
        let (mut client, _daemon) = pair();
        client.set_max_message_bytes(1000);
        let huge = "x".repeat(1000);
        let error = client.call("run", json!({ "stdin": { "text": huge } })).await.unwrap_err();
        assert!(matches!(error, Error::MessageTooLarge { .. }), "{error:?}");
    }
}
