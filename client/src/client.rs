//! [`Client`]: one connection to segid that carries many requests at once.
//!
//! Two tasks serve the connection. The writer sends whole request lines from a queue, so a
//! request is never half-written even when the caller's future is dropped. The reader hands
//! every line the daemon sends to the router, which completes the request it belongs to.
//!
//! A request may pass open files along (SCM_RIGHTS): its `"fd": N` fields are indexes into the
//! descriptors sent with its line. segid gives a read's descriptors to the line that holds the
//! last byte of that read, so the writer sends a line's first bytes and its descriptors in one
//! `sendmsg`, after the previous line is written in full, and the rest of the line plainly.

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
use segi_proto::grade::{GradeRequest, GradeResult, GraderResult};
use segi_proto::jsonrpc::Request;
use segi_proto::judge::{JudgeRequest, JudgeResult, PipelineResult, TestResult, VerdictUpdate};
use segi_proto::{Capabilities, EvaluateRequest, Event, RunRequest, RunResult, MAX_MESSAGE_BYTES};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Interest};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::router::{Pending, Reply, Router};
use crate::Error;

/// Most file descriptors one request may pass (segid refuses more).
pub const MAX_FDS: usize = 64;

/// One request line for the writer, with the descriptors that go with it.
type Outgoing = (Vec<u8>, Vec<OwnedFd>);

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
    outgoing: mpsc::UnboundedSender<Outgoing>,
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
        let (_, pending) = self.send(method, params, false, Vec::new())?;
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
        self.start_run_with_fds(request, Vec::new()).await
    }

    /// [`Client::start_run`] for a request whose `files[].fd` name open files: `fds[N]` is
    /// what `"fd": N` reads (at most [`MAX_FDS`], each named by the request). The descriptors
    /// are closed here once sent.
    pub async fn start_run_with_fds(&self, request: &RunRequest, fds: Vec<OwnedFd>) -> Result<RunHandle, Error> {
        Ok(RunHandle { stream: self.start_streaming("run", request, fds)? })
    }

    /// Starts an `evaluate` (a SEGI evaluation) and returns as soon as it is sent. `fds[N]` is
    /// the open file that `"fd": N` of a submission or problem file reads (at most
    /// [`MAX_FDS`], each named by the request); they are closed here once sent. The handle
    /// yields [`Event::Text`], [`Event::Data`] and [`Event::Stderr`], then the result with its
    /// `warnings`.
    pub async fn start_evaluate(&self, request: &EvaluateRequest, fds: Vec<OwnedFd>) -> Result<RunHandle, Error> {
        Ok(RunHandle { stream: self.start_streaming("evaluate", request, fds)? })
    }

    /// Evaluates to the end, calling `on_event` for each event as it arrives.
    pub async fn evaluate(
        &self,
        request: &EvaluateRequest,
        fds: Vec<OwnedFd>,
        mut on_event: impl FnMut(Event),
    ) -> Result<RunResult, Error> {
        let mut evaluation = self.start_evaluate(request, fds).await?;
        while let Some(event) = evaluation.next_event().await? {
            on_event(event);
        }
        evaluation.finish().await
    }

    /// Starts a `judge` (a submission judged on a problem package) and returns as soon as it
    /// is sent. `fds[N]` is the open file that `"fd": N` of the submission or a problem file
    /// reads (at most [`MAX_FDS`], each named by the request); they are closed here once sent.
    /// The [`JudgeHandle`] yields each test's result as it finishes, then the verdict.
    pub async fn start_judge(&self, request: &JudgeRequest, fds: Vec<OwnedFd>) -> Result<JudgeHandle, Error> {
        Ok(JudgeHandle { stream: self.start_streaming("judge", request, fds)? })
    }

    /// Judges a Sphere problem to the end, calling `on_test` with each test's result as it
    /// arrives (in test order). A problem with a strategy answers another result: judge it with
    /// [`Client::judge_any`].
    pub async fn judge(
        &self,
        request: &JudgeRequest,
        fds: Vec<OwnedFd>,
        mut on_test: impl FnMut(TestResult),
    ) -> Result<JudgeResult, Error> {
        let mut judging = self.start_judge(request, fds).await?;
        while let Some(test) = judging.next_test().await? {
            on_test(test);
        }
        judging.finish().await
    }

    /// Judges a problem of either kind to the end, calling `on_event` with each event as it
    /// arrives: [`Event::Test`] for a Sphere problem, [`Event::Verdict`] for a problem with a
    /// strategy (and [`Event::Queued`] for either, when every run slot is busy).
    pub async fn judge_any(
        &self,
        request: &JudgeRequest,
        fds: Vec<OwnedFd>,
        mut on_event: impl FnMut(Event),
    ) -> Result<JudgeOutcome, Error> {
        let mut judging = self.start_judge(request, fds).await?;
        while let Some(raw) = judging.next_raw_event().await? {
            on_event(raw.event);
        }
        judging.finish_any().await
    }

    /// Starts a `grade` (program graders on a workspace) and returns as soon as it is sent.
    /// `fds[N]` is the open file that `"workspace": {"fd": N}` reads, a tar archive such as
    /// [`crate::workspace::archive`] writes (at most [`MAX_FDS`]); they are closed here once
    /// sent. The [`GradeHandle`] yields each grader's result as it finishes (in the order they
    /// finish, with its index in the request), then all of them.
    pub async fn start_grade(&self, request: &GradeRequest, fds: Vec<OwnedFd>) -> Result<GradeHandle, Error> {
        Ok(GradeHandle { stream: self.start_streaming("grade", request, fds)? })
    }

    /// Grades to the end, calling `on_result` with each grader's index in the request and its
    /// result as it finishes.
    pub async fn grade(
        &self,
        request: &GradeRequest,
        fds: Vec<OwnedFd>,
        mut on_result: impl FnMut(usize, GraderResult),
    ) -> Result<GradeResult, Error> {
        let mut grading = self.start_grade(request, fds).await?;
        while let Some((index, result)) = grading.next_result().await? {
            on_result(index, result);
        }
        grading.finish().await
    }

    fn start_streaming(
        &self,
        method: &'static str,
        request: &impl Serialize,
        fds: Vec<OwnedFd>,
    ) -> Result<EventStream, Error> {
        let params = serde_json::to_value(request)
            .map_err(|e| Error::Protocol(format!("cannot encode the {method} request: {e}")))?;
        let (id, pending) = self.send(method, params, true, fds)?;
        Ok(EventStream {
            id,
            method,
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

    fn send(&self, method: &str, params: Value, with_events: bool, fds: Vec<OwnedFd>) -> Result<(u64, Pending), Error> {
        if fds.len() > MAX_FDS {
            return Err(Error::TooManyDescriptors { count: fds.len(), limit: MAX_FDS });
        }
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
        if self.outgoing.send((line, fds)).is_err() {
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

/// One streaming request in progress: its event objects as they arrive, then its response.
struct EventStream {
    id: u64,
    /// `run`, `evaluate`, `judge` or `grade`, for error messages.
    method: &'static str,
    events: mpsc::UnboundedReceiver<Box<RawValue>>,
    reply: oneshot::Receiver<Reply>,
    socket: PathBuf,
}

impl EventStream {
    /// The next event whose type is one of `kinds`; events of other types are skipped.
    async fn next(&mut self, kinds: &[&str]) -> Result<Option<RawEvent>, Error> {
        #[derive(Deserialize)]
        struct Tag {
            #[serde(rename = "type")]
            kind: Option<String>,
        }
        while let Some(json) = self.events.recv().await {
            let kind = serde_json::from_str::<Tag>(json.get()).ok().and_then(|tag| tag.kind);
            if !kind.is_some_and(|kind| kinds.contains(&kind.as_str())) {
                continue;
            }
            return match serde_json::from_str(json.get()) {
                Ok(event) => Ok(Some(RawEvent { event, json })),
                Err(e) => Err(Error::Protocol(format!("segid sent an event segi-client cannot read ({e}): {json}"))),
            };
        }
        Ok(None)
    }

    async fn finish<T: DeserializeOwned>(self) -> Result<T, Error> {
        decode(wait(self.reply, &self.socket).await?, self.method)
    }
}

/// One `run` or `evaluate` in progress: its events as they arrive, then its result.
pub struct RunHandle {
    stream: EventStream,
}

/// An event as read, with the object exactly as segid wrote it (e.g. to print it as is).
#[derive(Debug, Clone)]
pub struct RawEvent {
    pub event: Event,
    /// The event object's JSON text as it came, key order and spacing kept.
    pub json: Box<RawValue>,
}

impl RunHandle {
    /// The request id, for [`Client::cancel`].
    pub fn id(&self) -> u64 {
        self.stream.id
    }

    /// The next event, or `None` once the run has ended (then call [`RunHandle::finish`]):
    /// output (`stdout`, `stderr`) and, for `evaluate`, `text` and `data`. `queued` and event
    /// types this client does not know are skipped, so a newer daemon may add some.
    pub async fn next_event(&mut self) -> Result<Option<Event>, Error> {
        Ok(self.next_raw_event().await?.map(|raw| raw.event))
    }

    /// [`RunHandle::next_event`], with the event's JSON exactly as segid sent it.
    pub async fn next_raw_event(&mut self) -> Result<Option<RawEvent>, Error> {
        self.stream.next(&["stdout", "stderr", "text", "data"]).await
    }

    /// Waits for the result (any event not read yet is dropped).
    pub async fn finish(self) -> Result<RunResult, Error> {
        self.stream.finish().await
    }
}

/// One `judge` in progress. segid judges two kinds of problems (`docs/problems.md`):
///
/// - a Sphere problem (test case judges and a master judge): each test's result streams as it
///   finishes (in test order), then the master judge's verdict, a [`JudgeResult`];
/// - a problem with a strategy (a pipeline): each verdict change streams as it happens (a
///   test's, or the submission's), then the [`PipelineResult`].
///
/// Read the events with [`JudgeHandle::next_raw_event`] (every kind, with the JSON as sent) or,
/// for a Sphere problem, [`JudgeHandle::next_test`]; then call [`JudgeHandle::finish_any`],
/// which takes either result, or [`JudgeHandle::finish`], which takes only a Sphere one.
pub struct JudgeHandle {
    stream: EventStream,
}

/// What `judge` answered: the result of a Sphere problem or of a problem with a strategy. The
/// two are told apart by their fields: a pipeline's result has a `verdict`, a Sphere result a
/// `status`.
#[derive(Debug, Clone, PartialEq)]
pub enum JudgeOutcome {
    Sphere(JudgeResult),
    Pipeline(PipelineResult),
}

impl JudgeOutcome {
    /// Reads `judge`'s answer as the result of either kind of problem.
    pub fn from_value(value: Value) -> Result<JudgeOutcome, Error> {
        if value.get("verdict").is_some() {
            decode(value, "judge").map(JudgeOutcome::Pipeline)
        } else {
            decode(value, "judge").map(JudgeOutcome::Sphere)
        }
    }

    /// The verdict as a person reads it: a Sphere status (`WA`), or a pipeline's (`WA 3`, `PT`).
    pub fn verdict(&self) -> String {
        match self {
            JudgeOutcome::Sphere(result) => result.status.to_string(),
            JudgeOutcome::Pipeline(result) => result.verdict.clone(),
        }
    }
}

impl JudgeHandle {
    /// The request id, for [`Client::cancel`].
    pub fn id(&self) -> u64 {
        self.stream.id
    }

    /// The next test's result of a Sphere problem, or `None` once the judging has ended (then
    /// call [`JudgeHandle::finish`]). Other events (a pipeline's `verdict` events included)
    /// are skipped.
    pub async fn next_test(&mut self) -> Result<Option<TestResult>, Error> {
        while let Some(raw) = self.stream.next(&["test"]).await? {
            if let Event::Test(test) = raw.event {
                return Ok(Some(test));
            }
        }
        Ok(None)
    }

    /// The next verdict change of a problem with a strategy (a test's verdict, or with `test`
    /// `None` the submission's), or `None` once the judging has ended (then call
    /// [`JudgeHandle::finish_any`]). Other events are skipped.
    pub async fn next_verdict(&mut self) -> Result<Option<VerdictUpdate>, Error> {
        while let Some(raw) = self.stream.next(&["verdict"]).await? {
            if let Event::Verdict(update) = raw.event {
                return Ok(Some(update));
            }
        }
        Ok(None)
    }

    /// The next event with its JSON exactly as segid sent it: [`Event::Test`] (a Sphere
    /// problem), [`Event::Verdict`] (a problem with a strategy), or [`Event::Queued`] when
    /// every run slot is busy. Event types this client does not know are skipped, so a newer
    /// daemon may add some.
    pub async fn next_raw_event(&mut self) -> Result<Option<RawEvent>, Error> {
        self.stream.next(&["test", "verdict", "queued"]).await
    }

    /// Waits for the verdict of a Sphere problem (any event not read yet is dropped). A
    /// compilation error, a wrong answer or a judge's internal error is a verdict, not an
    /// [`Error`]; a problem package or language segid refuses is an [`Error::Rpc`] with code
    /// -32602. The result of a problem with a strategy is an [`Error::Protocol`] here: take it
    /// with [`JudgeHandle::finish_any`].
    pub async fn finish(self) -> Result<JudgeResult, Error> {
        match self.finish_any().await? {
            JudgeOutcome::Sphere(result) => Ok(result),
            JudgeOutcome::Pipeline(result) => Err(Error::Protocol(format!(
                "the problem has a strategy, and its result (verdict {}) is not a Sphere problem's; \
                 read it with JudgeHandle::finish_any",
                result.verdict
            ))),
        }
    }

    /// Waits for the result of either kind of problem (any event not read yet is dropped).
    /// As with [`JudgeHandle::finish`], every verdict is a result (a pipeline's `CE` and `CF`
    /// included), and a problem or language segid refuses is an [`Error::Rpc`].
    pub async fn finish_any(self) -> Result<JudgeOutcome, Error> {
        JudgeOutcome::from_value(wait(self.stream.reply, &self.stream.socket).await?)
    }
}

/// One `grade` in progress: each grader's result as it finishes (graders run in parallel, so
/// in the order they finish, each with its index in the request), then all the results in the
/// request's order. Read them with [`GradeHandle::next_result`] (or
/// [`GradeHandle::next_raw_event`] to see `queued` too, and the JSON as sent), then call
/// [`GradeHandle::finish`].
pub struct GradeHandle {
    stream: EventStream,
}

impl GradeHandle {
    /// The request id, for [`Client::cancel`].
    pub fn id(&self) -> u64 {
        self.stream.id
    }

    /// The next grader to finish: its index in the request and its result; `None` once the
    /// grading has ended (then call [`GradeHandle::finish`]). Other events are skipped.
    pub async fn next_result(&mut self) -> Result<Option<(usize, GraderResult)>, Error> {
        while let Some(raw) = self.stream.next(&["grader"]).await? {
            if let Event::Grader(grader) = raw.event {
                return Ok(Some((grader.index, grader.result)));
            }
        }
        Ok(None)
    }

    /// The next event with its JSON exactly as segid sent it: [`Event::Grader`], or
    /// [`Event::Queued`] when every run slot is busy. Event types this client does not know
    /// are skipped, so a newer daemon may add some.
    pub async fn next_raw_event(&mut self) -> Result<Option<RawEvent>, Error> {
        self.stream.next(&["grader", "queued"]).await
    }

    /// Waits for every grader's result, in the request's order (any event not read yet is
    /// dropped). A grader that fails, times out or cannot start is a result, not an
    /// [`Error`]; a configuration segid refuses (a `sub_path` that leaves the workspace, a
    /// reserved variable in `env`, an archive it cannot unpack) is an [`Error::Rpc`] with
    /// code -32602.
    pub async fn finish(self) -> Result<GradeResult, Error> {
        self.stream.finish().await
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

async fn write_requests(mut socket: OwnedWriteHalf, mut queue: mpsc::UnboundedReceiver<Outgoing>, router: Router) {
    while let Some((line, fds)) = queue.recv().await {
        let written = match fds.is_empty() {
            true => socket.write_all(&line).await,
            false => write_with_fds(&mut socket, &line, &fds).await,
        };
        // Sent (the daemon has its own copies) or failed: either way ours are closed now.
        drop(fds);
        if let Err(error) = written {
            router.close(&format!("cannot send to segid: {error}"));
            return;
        }
    }
    // Every sender is gone: the client was dropped. Shutting down our side tells segid.
    let _ = socket.shutdown().await;
}

/// Writes one whole line whose first bytes carry `fds`: one `sendmsg` with the descriptors
/// (as much of the line as the socket takes), then the rest with plain writes.
async fn write_with_fds(socket: &mut OwnedWriteHalf, line: &[u8], fds: &[OwnedFd]) -> io::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
    let sent = {
        let stream: &UnixStream = socket.as_ref();
        loop {
            stream.writable().await?;
            match stream.try_io(Interest::WRITABLE, || send_with_fds(stream.as_raw_fd(), line, &raw)) {
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => continue,
                other => break other?,
            }
        }
    };
    socket.write_all(&line[sent..]).await
}

/// One non-blocking `sendmsg` of `bytes` with `fds` attached: the bytes it took (at least one).
fn send_with_fds(socket: RawFd, bytes: &[u8], fds: &[RawFd]) -> io::Result<usize> {
    let iov = [IoSlice::new(bytes)];
    let rights = [ControlMessage::ScmRights(fds)];
    match sendmsg::<()>(socket, &iov, &rights, MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL, None) {
        Ok(0) => Err(io::Error::new(io::ErrorKind::WriteZero, "the socket took no bytes")),
        Ok(sent) => Ok(sent),
        Err(errno) => Err(io::Error::from(errno)),
    }
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
    use segi_proto::judge::{Status, VerdictUpdate};
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
            self.say_raw(&message.to_string()).await;
        }
        async fn say_raw(&mut self, line: &str) {
            self.writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
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

    fn evaluate_request() -> EvaluateRequest {
        serde_json::from_value(json!({
            "command": ["python3", "evaluator.py"],
            "submission": [{"field": "source", "filename": "sol.c", "content": {"text": "int main() {}"}}],
            "problem": [{"path": "evaluator.py", "content": {"text": "print(1)"}, "executable": true}],
        }))
        .unwrap()
    }

    fn data(json: Value) -> Event {
        Event::Data { payload: segi_proto::Data(serde_json::value::to_raw_value(&json).unwrap()) }
    }

    #[tokio::test]
    async fn evaluate_streams_text_and_data_then_the_result() {
        let (client, mut daemon) = pair();
        let evaluation = tokio::spawn(async move {
            let mut events = Vec::new();
            let result = client.evaluate(&evaluate_request(), Vec::new(), |event| events.push(event)).await;
            (result, events)
        });
        let request = daemon.receive().await;
        assert_eq!(request["method"], "evaluate");
        assert_eq!(
            request["params"],
            json!({
                "policy": "evaluator",
                "command": ["python3", "evaluator.py"],
                "submission": [{"field": "source", "filename": "sol.c", "content": {"text": "int main() {}"}}],
                "problem": [{"path": "evaluator.py", "content": {"text": "print(1)"}, "executable": true}],
                "limits": {},
                "env": {},
            })
        );
        let id = request["id"].clone();
        let event = |event: Value| json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": event}});
        daemon.say(event(json!({"type": "queued", "ahead": 2}))).await;
        daemon.say(event(json!({"type": "text", "payload": "Compiling sol.c..."}))).await;
        daemon.say(event(json!({"type": "text", "payload": "\n"}))).await;
        daemon.say(event(json!({"type": "progress", "percent": 50}))).await;
        daemon.say(event(json!({"type": "data", "payload": {"type": "score", "value": 60}}))).await;
        daemon.say(event(json!({"type": "data", "payload": [1, "two", null]}))).await;
        daemon.say(event(json!({"type": "stderr", "text": "log\n"}))).await;
        daemon
            .say(json!({"jsonrpc": "2.0", "id": id, "result": {
                "verdict": "OK", "exit_code": 0, "signal": null, "cpu_time": 0.4, "wall_time": 0.5,
                "memory": 1 << 20, "limit": null, "message": null,
                "warnings": [{"line": 7, "message": "a data line that is not JSON"}]}}))
            .await;
        let (result, events) = evaluation.await.unwrap();
        assert_eq!(
            events,
            [
                Event::Text { payload: "Compiling sol.c...".into() },
                Event::Text { payload: "\n".into() },
                data(json!({"type": "score", "value": 60})),
                data(json!([1, "two", null])),
                Event::Stderr(Payload::Text("log\n".into())),
            ]
        );
        let result = result.unwrap();
        assert_eq!(result.exit_code, Some(0));
        assert_eq!(
            result.warnings,
            [segi_proto::evaluate::Warning { line: 7, message: "a data line that is not JSON".into() }]
        );
    }

    #[tokio::test]
    async fn raw_events_are_kept_as_the_daemon_wrote_them() {
        let (client, mut daemon) = pair();
        let mut evaluation = client.start_evaluate(&evaluate_request(), Vec::new()).await.unwrap();
        let id = daemon.receive().await["id"].clone();
        let payload = r#"{"type": "testcase", "case": "01", "outcome": "correct"}"#;
        daemon
            .say_raw(&format!(
                r#"{{"jsonrpc":"2.0","method":"event","params":{{"id":{id},"event":{{"type":"data","payload":{payload}}}}}}}"#
            ))
            .await;
        let raw = evaluation.next_raw_event().await.unwrap().unwrap();
        assert_eq!(raw.json.get(), format!(r#"{{"type":"data","payload":{payload}}}"#));
        assert_eq!(raw.event, data(json!({"type": "testcase", "case": "01", "outcome": "correct"})));
        // A known type that does not read as that event is the daemon's mistake.
        daemon.say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": {"type": "text"}}})).await;
        let error = evaluation.next_event().await.unwrap_err();
        assert!(error.to_string().contains("cannot read"), "{error}");
    }

    /// The fake daemon's reading of a connection with descriptors: like segid's framing, a
    /// read's descriptors belong to the line holding the read's last byte. Reads `count` lines.
    fn receive_lines_with_fds(socket: std::os::unix::net::UnixStream, count: usize) -> Vec<(Value, Vec<OwnedFd>)> {
        use nix::sys::socket::{recvmsg, ControlMessageOwned};
        use std::os::fd::FromRawFd as _;
        let mut bytes: Vec<u8> = Vec::new();
        let mut received: Vec<(usize, OwnedFd)> = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut newlines = 0;
        while newlines < count {
            let mut control = nix::cmsg_space!([RawFd; MAX_FDS + 1]);
            let mut iov = [io::IoSliceMut::new(&mut chunk)];
            let msg = recvmsg::<()>(socket.as_raw_fd(), &mut iov, Some(&mut control), MsgFlags::empty()).unwrap();
            let n = msg.bytes;
            assert!(n > 0, "the client closed the connection early");
            let mut fds = Vec::new();
            for cmsg in msg.cmsgs().unwrap() {
                if let ControlMessageOwned::ScmRights(raw) = cmsg {
                    // SAFETY: the kernel just installed these descriptors for us; nothing else owns them.
                    fds.extend(raw.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
                }
            }
            let last = bytes.len() + n - 1;
            bytes.extend_from_slice(&chunk[..n]);
            newlines += chunk[..n].iter().filter(|&&b| b == b'\n').count();
            received.extend(fds.into_iter().map(|fd| (last, fd)));
        }
        let mut lines = Vec::new();
        let mut start = 0;
        for end in bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i) {
            let line = serde_json::from_slice(&bytes[start..end]).unwrap();
            let (mine, later): (Vec<_>, Vec<_>) = received.into_iter().partition(|(at, _)| *at <= end);
            received = later;
            lines.push((line, mine.into_iter().map(|(_, fd)| fd).collect()));
            start = end + 1;
        }
        lines
    }

    fn scratch_file(name: &str, content: &str) -> std::fs::File {
        let dir = std::env::temp_dir().join(format!("segi-client-lib-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        std::fs::File::open(path).unwrap()
    }

    #[tokio::test]
    async fn descriptors_arrive_with_their_request_line() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let client = Client::from_stream(UnixStream::from_std(ours).unwrap(), "/test/segid.sock");
        let daemon = tokio::task::spawn_blocking(move || receive_lines_with_fds(theirs, 3));

        // A plain line, then a line with descriptors too long for one write into the socket
        // (the rest follows without them), then another plain line.
        let _ = client.send("ping", Value::Null, false, Vec::new()).unwrap();
        let mut request = evaluate_request();
        request.submission = vec![
            segi_proto::SubmissionFile { field: "source".into(), filename: "sol.c".into(), content: None, fd: Some(0) },
            segi_proto::SubmissionFile { field: "notes".into(), filename: "n.txt".into(), content: None, fd: Some(1) },
        ];
        let big = "x".repeat(4 << 20);
        request.problem = Some(vec![segi_proto::run::BoxFile {
            path: "big.txt".into(),
            content: Some(Payload::Text(big.clone())),
            fd: None,
            executable: false,
        }]);
        let fds = vec![
            OwnedFd::from(scratch_file("sol.c", "int main() { return 0; }\n")),
            OwnedFd::from(scratch_file("n.txt", "notes")),
        ];
        let _evaluation = client.start_evaluate(&request, fds).await.unwrap();
        let _ = client.send("ping", Value::Null, false, Vec::new()).unwrap();

        let lines = daemon.await.unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].0["method"], "ping");
        assert!(lines[0].1.is_empty());
        assert_eq!(lines[2].0["method"], "ping");
        assert!(lines[2].1.is_empty());
        let (evaluate, fds) = &lines[1];
        assert_eq!(evaluate["method"], "evaluate");
        assert_eq!(evaluate["params"]["submission"][0]["fd"], 0);
        assert_eq!(evaluate["params"]["submission"][1]["fd"], 1);
        assert_eq!(evaluate["params"]["problem"][0]["content"]["text"].as_str().map(str::len), Some(big.len()));
        let contents: Vec<String> = fds
            .iter()
            .map(|fd| std::io::read_to_string(std::fs::File::from(fd.try_clone().unwrap())).unwrap())
            .collect();
        assert_eq!(contents, ["int main() { return 0; }\n", "notes"]);
    }

    #[tokio::test]
    async fn run_requests_pass_descriptors_too() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let client = Client::from_stream(UnixStream::from_std(ours).unwrap(), "/test/segid.sock");
        let daemon = tokio::task::spawn_blocking(move || receive_lines_with_fds(theirs, 1));
        let request: RunRequest = serde_json::from_value(
            json!({"command": ["./prog"], "files": [{"path": "prog", "fd": 0, "executable": true}]}),
        )
        .unwrap();
        let _run = client.start_run_with_fds(&request, vec![OwnedFd::from(scratch_file("prog", "#!/bin/sh\n"))]).await;
        let lines = daemon.await.unwrap();
        assert_eq!(lines[0].0["params"]["files"][0]["fd"], 0);
        assert_eq!(lines[0].1.len(), 1);
    }

    #[tokio::test]
    async fn too_many_descriptors_are_refused_here() {
        let (client, _daemon) = pair();
        let file = scratch_file("many", "x");
        let fds: Vec<OwnedFd> = (0..=MAX_FDS).map(|_| OwnedFd::from(file.try_clone().unwrap())).collect();
        let error = client.start_evaluate(&evaluate_request(), fds).await.err().unwrap();
        assert!(matches!(error, Error::TooManyDescriptors { count: 65, limit: 64 }), "{error:?}");
    }

    fn judge_request() -> JudgeRequest {
        serde_json::from_value(json!({
            "problem": [
                {"path": "problem.toml", "content": {"text": "time_limit = \"1s\"\n"}},
                {"path": "tests/0.in", "content": {"text": "1 2\n"}},
            ],
            "submission": {"filename": "sol.c", "fd": 0},
            "language": "c",
        }))
        .unwrap()
    }

    fn test_event(test: usize, status: &str) -> Value {
        json!({"type": "test", "test": test, "status": status, "score": 0.0, "signal": 0, "time": 0.01, "memory": 1234})
    }

    #[tokio::test]
    async fn judge_streams_tests_then_the_verdict() {
        let (client, mut daemon) = pair();
        let judging = tokio::spawn(async move {
            let mut tests = Vec::new();
            let result = client.judge(&judge_request(), Vec::new(), |test| tests.push(test)).await;
            (result, tests)
        });
        let request = daemon.receive().await;
        assert_eq!(request["method"], "judge");
        assert_eq!(request["params"], serde_json::to_value(judge_request()).unwrap());
        assert_eq!(request["params"]["submission"], json!({"filename": "sol.c", "fd": 0}));
        let id = request["id"].clone();
        let event = |event: Value| json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": event}});
        daemon.say(event(json!({"type": "queued", "ahead": 0}))).await;
        daemon.say(event(test_event(0, "AC"))).await;
        daemon.say(event(json!({"type": "stdout", "text": "not for a judge"}))).await;
        daemon.say(event(json!({"type": "compiling"}))).await;
        let mut wa = test_event(1, "WA");
        wa["info"] = json!("expected 3");
        daemon.say(event(wa.clone())).await;
        daemon
            .say(json!({"jsonrpc": "2.0", "id": id, "result": {
                "status": "WA", "score": 0.0, "signal": 0, "time": 0.02, "memory": 1234, "language": "c",
                "tests": [test_event(0, "AC"), wa]}}))
            .await;
        let (result, tests) = judging.await.unwrap();
        let result = result.unwrap();
        assert_eq!(tests.iter().map(|t| (t.test, t.status)).collect::<Vec<_>>(), [(0, Status::AC), (1, Status::WA)]);
        assert_eq!(tests[1].info.as_deref(), Some("expected 3"));
        assert_eq!(result.status, Status::WA);
        assert_eq!(result.language, "c");
        assert_eq!(result.tests, tests);
        assert_eq!(result.message, None);
        assert_eq!(result.compilation, None);
    }

    #[tokio::test]
    async fn judge_raw_events_and_refusals() {
        let (client, mut daemon) = pair();
        let mut judging = client.start_judge(&judge_request(), Vec::new()).await.unwrap();
        let id = daemon.receive().await["id"].clone();
        daemon
            .say_raw(&format!(
                r#"{{"jsonrpc":"2.0","method":"event","params":{{"id":{id},"event":{{"type":"queued","ahead":2}}}}}}"#
            ))
            .await;
        let test = r#"{"type":"test","test":0,"status":"TLE","score":0.0,"signal":9,"time":1.01,"memory":512,"message":"cpu time limit of 1s"}"#;
        daemon.say_raw(&format!(r#"{{"jsonrpc":"2.0","method":"event","params":{{"id":{id},"event":{test}}}}}"#)).await;
        assert_eq!(judging.next_raw_event().await.unwrap().unwrap().event, Event::Queued { ahead: 2 });
        let raw = judging.next_raw_event().await.unwrap().unwrap();
        assert_eq!(raw.json.get(), test);
        let Event::Test(result) = raw.event else { panic!("{:?}", raw.event) };
        assert_eq!((result.status, result.signal, result.memory), (Status::TLE, 9, 512));
        assert_eq!(result.message.as_deref(), Some("cpu time limit of 1s"));
        // A test event that does not read as one is the daemon's mistake.
        daemon.say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": {"type": "test", "test": 1}}})).await;
        let error = judging.next_test().await.unwrap_err();
        assert!(error.to_string().contains("cannot read"), "{error}");
        daemon
            .say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "problem.toml: unknown test_judge \"x\""}}))
            .await;
        assert_eq!(judging.next_test().await.unwrap(), None);
        let error = judging.finish().await.unwrap_err();
        assert_eq!(error.rpc_code(), Some(-32602));
        assert!(error.to_string().contains("unknown test_judge"), "{error}");
    }

    #[tokio::test]
    async fn judge_passes_the_submission_open() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let client = Client::from_stream(UnixStream::from_std(ours).unwrap(), "/test/segid.sock");
        let daemon = tokio::task::spawn_blocking(move || receive_lines_with_fds(theirs, 1));
        let fds = vec![OwnedFd::from(scratch_file("judged.c", "int main() { return 0; }\n"))];
        let _judging = client.start_judge(&judge_request(), fds).await.unwrap();
        let lines = daemon.await.unwrap();
        let (request, fds) = &lines[0];
        assert_eq!(request["method"], "judge");
        assert_eq!(request["params"]["submission"]["fd"], 0);
        assert_eq!(fds.len(), 1);
        let content = std::io::read_to_string(std::fs::File::from(fds[0].try_clone().unwrap())).unwrap();
        assert_eq!(content, "int main() { return 0; }\n");
    }

    fn pipeline_result(verdict: &str) -> Value {
        json!({
            "verdict": verdict, "points": 0.0, "max_points": 2.0, "language": "python3", "strategy": "standard",
            "tests": [
                {"no": 1, "verdict": "WA", "max_points": 1.0, "comment": "expected 5, got 6", "time": 0.01,
                 "memory": 1234},
                {"no": 2, "verdict": "OK", "max_points": 1.0, "time": 0.02, "memory": 2048},
            ],
            "groups": [{"name": "g1", "points": 0.0, "max_points": 2.0, "passed": false}],
        })
    }

    #[tokio::test]
    async fn judge_of_a_pipeline_streams_verdicts_then_its_result() {
        let (client, mut daemon) = pair();
        let judging = tokio::spawn(async move {
            let mut events = Vec::new();
            let outcome = client.judge_any(&judge_request(), Vec::new(), |event| events.push(event)).await;
            (outcome, events)
        });
        let request = daemon.receive().await;
        assert_eq!(request["method"], "judge");
        let id = request["id"].clone();
        let event = |event: Value| json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": event}});
        daemon.say(event(json!({"type": "queued", "ahead": 0}))).await;
        daemon.say(event(json!({"type": "verdict", "test": 1, "verdict": "WA", "comment": "expected 5, got 6"}))).await;
        daemon.say(event(json!({"type": "stdout", "text": "not for a judge"}))).await;
        daemon.say(event(json!({"type": "verdict", "test": null, "verdict": "PT", "points": 2.5}))).await;
        daemon.say(json!({"jsonrpc": "2.0", "id": id, "result": pipeline_result("WA 1")})).await;
        let (outcome, events) = judging.await.unwrap();
        assert_eq!(
            events,
            [
                Event::Queued { ahead: 0 },
                Event::Verdict(VerdictUpdate {
                    test: Some(1),
                    verdict: "WA".into(),
                    points: None,
                    comment: Some("expected 5, got 6".into())
                }),
                Event::Verdict(VerdictUpdate { test: None, verdict: "PT".into(), points: Some(2.5), comment: None }),
            ]
        );
        let JudgeOutcome::Pipeline(result) = outcome.unwrap() else { panic!("not a pipeline's result") };
        assert_eq!(result.verdict, "WA 1");
        assert_eq!((result.points, result.max_points), (0.0, 2.0));
        assert_eq!(result.strategy, "standard");
        assert_eq!(result.tests.len(), 2);
        assert_eq!(result.tests[0].comment.as_deref(), Some("expected 5, got 6"));
        assert_eq!(result.tests[1].points, None);
        assert_eq!(result.groups[0]["name"], "g1");
        assert_eq!(result.comment, None);
    }

    #[tokio::test]
    async fn judge_raw_verdict_events_and_either_result() {
        let (client, mut daemon) = pair();
        let mut judging = client.start_judge(&judge_request(), Vec::new()).await.unwrap();
        let id = daemon.receive().await["id"].clone();
        let verdict = r#"{"type":"verdict","test":3,"verdict":"PT","points":0.25,"comment":"partial"}"#;
        daemon
            .say_raw(&format!(r#"{{"jsonrpc":"2.0","method":"event","params":{{"id":{id},"event":{verdict}}}}}"#))
            .await;
        let raw = judging.next_raw_event().await.unwrap().unwrap();
        assert_eq!(raw.json.get(), verdict);
        let Event::Verdict(update) = raw.event else { panic!("{:?}", raw.event) };
        assert_eq!((update.test, update.verdict.as_str(), update.points), (Some(3), "PT", Some(0.25)));
        // next_verdict skips the tests of a Sphere problem, next_test the verdicts.
        daemon
            .say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": test_event(0, "AC")}}))
            .await;
        daemon
            .say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event":
                {"type": "verdict", "test": null, "verdict": "CF", "comment": "the strategy crashed"}}}))
            .await;
        let update = judging.next_verdict().await.unwrap().unwrap();
        assert_eq!((update.test, update.verdict.as_str()), (None, "CF"));
        daemon.say(json!({"jsonrpc": "2.0", "id": id, "result": pipeline_result("CF")})).await;
        assert_eq!(judging.next_test().await.unwrap(), None);
        let outcome = judging.finish_any().await.unwrap();
        assert_eq!(outcome.verdict(), "CF");
        assert!(matches!(outcome, JudgeOutcome::Pipeline(_)), "{outcome:?}");

        // A Sphere problem's result through finish_any.
        let mut judging = client.start_judge(&judge_request(), Vec::new()).await.unwrap();
        let id = daemon.receive().await["id"].clone();
        daemon
            .say(json!({"jsonrpc": "2.0", "id": id, "result": {
                "status": "AC", "score": 0.0, "signal": 0, "time": 0.01, "memory": 1234, "language": "c",
                "tests": [test_event(0, "AC")]}}))
            .await;
        assert_eq!(judging.next_raw_event().await.unwrap().map(|raw| raw.event), None);
        let JudgeOutcome::Sphere(result) = judging.finish_any().await.unwrap() else { panic!("not Sphere's") };
        assert_eq!(result.status, Status::AC);
        assert_eq!(result.tests.len(), 1);

        // finish, for Sphere callers, says what to call for a pipeline's result.
        let judging = client.start_judge(&judge_request(), Vec::new()).await.unwrap();
        let id = daemon.receive().await["id"].clone();
        daemon.say(json!({"jsonrpc": "2.0", "id": id, "result": pipeline_result("AC")})).await;
        let error = judging.finish().await.unwrap_err();
        assert!(matches!(error, Error::Protocol(_)), "{error:?}");
        assert!(error.to_string().contains("finish_any"), "{error}");

        // A result of neither kind is the daemon's mistake.
        let judging = client.start_judge(&judge_request(), Vec::new()).await.unwrap();
        let id = daemon.receive().await["id"].clone();
        daemon.say(json!({"jsonrpc": "2.0", "id": id, "result": {"verdict": "AC"}})).await;
        let error = judging.finish_any().await.unwrap_err();
        assert!(error.to_string().contains("cannot read"), "{error}");
    }

    fn grade_request() -> GradeRequest {
        serde_json::from_value(json!({
            "workspace": {"fd": 0},
            "input": {"trajectory": {"events": []}},
            "graders": [
                {"program": "python3", "args": ["check.py"], "timeout": "60s"},
                {"name": "lint", "program": "sh", "args": ["-c", "exit 1"], "shell": true},
            ],
        }))
        .unwrap()
    }

    fn grader_result(name: &str, passed: bool) -> Value {
        json!({
            "name": name, "passed": passed, "score": if passed { 1.0 } else { 0.0 },
            "message": if passed { "Grader exited successfully" } else { "Grader exited with exit code 1" },
            "exit_code": if passed { 0 } else { 1 }, "cpu_time": 0.01, "wall_time": 0.02, "memory": 4096,
        })
    }

    #[tokio::test]
    async fn grade_streams_graders_as_they_finish_then_all() {
        let (client, mut daemon) = pair();
        let grading = tokio::spawn(async move {
            let mut finished = Vec::new();
            let result =
                client.grade(&grade_request(), Vec::new(), |index, result| finished.push((index, result))).await;
            (result, finished)
        });
        let request = daemon.receive().await;
        assert_eq!(request["method"], "grade");
        assert_eq!(
            request["params"],
            json!({
                "workspace": {"fd": 0},
                "input": {"trajectory": {"events": []}},
                "graders": [
                    {"program": "python3", "args": ["check.py"], "shell": false, "timeout": "60s"},
                    {"name": "lint", "program": "sh", "args": ["-c", "exit 1"], "shell": true},
                ],
                "policy": "evaluator",
            })
        );
        let id = request["id"].clone();
        let event = |event: Value| json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": event}});
        daemon.say(event(json!({"type": "queued", "ahead": 1}))).await;
        // The second grader finishes first.
        daemon.say(event(json!({"type": "grader", "index": 1, "result": grader_result("lint", false)}))).await;
        daemon.say(event(json!({"type": "stderr", "text": "not for a grading"}))).await;
        daemon.say(event(json!({"type": "grader", "index": 0, "result": grader_result("program", true)}))).await;
        daemon
            .say(json!({"jsonrpc": "2.0", "id": id, "result": {
                "passed": false, "results": [grader_result("program", true), grader_result("lint", false)]}}))
            .await;
        let (result, finished) = grading.await.unwrap();
        let result = result.unwrap();
        assert_eq!(
            finished.iter().map(|(i, r)| (*i, r.name.as_str(), r.passed)).collect::<Vec<_>>(),
            [(1, "lint", false), (0, "program", true)]
        );
        assert_eq!(finished[0].1.message, "Grader exited with exit code 1");
        assert_eq!(finished[0].1.exit_code, Some(1));
        assert!(!result.passed);
        assert_eq!(result.results, [finished[1].1.clone(), finished[0].1.clone()]);
    }

    #[tokio::test]
    async fn grade_raw_events_and_refusals() {
        let (client, mut daemon) = pair();
        let mut grading = client.start_grade(&grade_request(), Vec::new()).await.unwrap();
        let id = daemon.receive().await["id"].clone();
        daemon
            .say_raw(&format!(
                r#"{{"jsonrpc":"2.0","method":"event","params":{{"id":{id},"event":{{"type":"queued","ahead":2}}}}}}"#
            ))
            .await;
        let grader = r#"{"type":"grader","index":0,"result":{"name":"my-custom-check","passed":true,"score":0.85,"evidence":"14 of 16 assertions passed","kind":"code","metadata":{"k":1},"message":"Grader exited successfully","exit_code":0,"cpu_time":0.1,"wall_time":0.2,"memory":1024}}"#;
        daemon
            .say_raw(&format!(r#"{{"jsonrpc":"2.0","method":"event","params":{{"id":{id},"event":{grader}}}}}"#))
            .await;
        assert_eq!(grading.next_raw_event().await.unwrap().unwrap().event, Event::Queued { ahead: 2 });
        let raw = grading.next_raw_event().await.unwrap().unwrap();
        assert_eq!(raw.json.get(), grader);
        let Event::Grader(event) = raw.event else { panic!("{:?}", raw.event) };
        assert_eq!(event.index, 0);
        assert_eq!(event.result.score, 0.85);
        assert_eq!(event.result.evidence.as_deref(), Some("14 of 16 assertions passed"));
        assert_eq!(event.result.metadata, Some(json!({"k": 1})));
        // A grader event that does not read as one is the daemon's mistake.
        daemon
            .say(json!({"jsonrpc": "2.0", "method": "event", "params": {"id": id, "event": {"type": "grader", "index": 1}}}))
            .await;
        let error = grading.next_result().await.unwrap_err();
        assert!(error.to_string().contains("cannot read"), "{error}");
        daemon
            .say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "graders[1]: sub_path \"../x\" leaves the workspace"}}))
            .await;
        assert_eq!(grading.next_result().await.unwrap(), None);
        let error = grading.finish().await.unwrap_err();
        assert_eq!(error.rpc_code(), Some(-32602));
        assert!(error.to_string().contains("leaves the workspace"), "{error}");
    }

    #[tokio::test]
    async fn grade_passes_the_workspace_archive_open() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let client = Client::from_stream(UnixStream::from_std(ours).unwrap(), "/test/segid.sock");
        let daemon = tokio::task::spawn_blocking(move || receive_lines_with_fds(theirs, 1));
        let dir = std::env::temp_dir().join(format!("segi-client-lib-grade-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/app")).unwrap();
        std::fs::write(dir.join("src/app/main.py"), "print('hi')\n").unwrap();
        let archive = crate::workspace::archive(&dir, |_| {}).unwrap();
        let _grading = client.start_grade(&grade_request(), vec![OwnedFd::from(archive)]).await.unwrap();
        let lines = daemon.await.unwrap();
        let (request, fds) = &lines[0];
        assert_eq!(request["method"], "grade");
        assert_eq!(request["params"]["workspace"], json!({"fd": 0}));
        assert_eq!(fds.len(), 1);
        let mut archive = tar::Archive::new(std::fs::File::from(fds[0].try_clone().unwrap()));
        let mut listed = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let mut content = String::new();
            std::io::Read::read_to_string(&mut entry, &mut content).unwrap();
            listed.push((entry.path().unwrap().display().to_string(), content));
        }
        assert_eq!(
            listed,
            [
                ("src".to_owned(), String::new()),
                ("src/app".to_owned(), String::new()),
                ("src/app/main.py".to_owned(), "print('hi')\n".to_owned())
            ]
        );
    }
}
