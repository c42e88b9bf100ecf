//! A raw connection to segid's socket: arbitrary bytes out, `\n`-terminated lines in.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long [`RawConn::call`] waits for the response of a short request.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Why no line could be read.
#[derive(Debug)]
pub enum ReadError {
    /// Nothing complete arrived in time.
    Timeout,
    /// The daemon closed the connection (with the partial line it sent, if any).
    Eof(Vec<u8>),
    Io(std::io::Error),
}

/// One connection, reading lines with deadlines. Lines are split by hand (not `BufReader`)
/// so that a timeout never loses a partly received line.
pub struct RawConn {
    stream: UnixStream,
    pending: Vec<u8>,
    next_id: u64,
    /// Messages read by [`RawConn::call`] that belonged to another request.
    pub unclaimed: Vec<Value>,
}

impl RawConn {
    pub fn connect(socket: &Path) -> RawConn {
        let stream = UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect to {}: {e}", socket.display()));
        RawConn { stream, pending: Vec::new(), next_id: 1, unclaimed: Vec::new() }
    }

    /// The underlying stream (to shut it down half-way, clone it for a writer thread, ...).
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Sends bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        self.stream.write_all(bytes)
    }

    /// Sends `value` as one line.
    pub fn send(&mut self, value: &Value) {
        let mut line = serde_json::to_vec(value).expect("serialize");
        line.push(b'\n');
        self.send_raw(&line).unwrap_or_else(|e| panic!("send {value}: {e}"));
    }

    /// Sends `value` as one line with `fds` attached (SCM_RIGHTS), all in one `sendmsg`, as a
    /// client passing files must.
    pub fn send_with_fds(&mut self, value: &Value, fds: &[std::os::fd::RawFd]) {
        use std::os::fd::AsRawFd;
        let mut line = serde_json::to_vec(value).expect("serialize");
        line.push(b'\n');
        let space = std::mem::size_of_val(fds) as u32;
        // SAFETY: CMSG_SPACE only computes a size.
        let mut control = vec![0u8; unsafe { libc::CMSG_SPACE(space) } as usize];
        let mut iov = libc::iovec { iov_base: line.as_mut_ptr().cast(), iov_len: line.len() };
        // SAFETY: msghdr is plain data; every pointer set below outlives the sendmsg call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = control.len();
            // SAFETY: the control buffer was sized with CMSG_SPACE for exactly these fds, so the
            // first header and its data fit in it.
            unsafe {
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = libc::SOL_SOCKET;
                (*cmsg).cmsg_type = libc::SCM_RIGHTS;
                (*cmsg).cmsg_len = libc::CMSG_LEN(space) as usize;
                std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
            }
        }
        // SAFETY: msg points at live buffers (line, control) for the duration of the call.
        let sent = unsafe { libc::sendmsg(self.stream.as_raw_fd(), &msg, 0) };
        assert!(sent > 0, "sendmsg: {}", std::io::Error::last_os_error());
        // A partial send: the rest goes without descriptors.
        self.send_raw(&line[sent as usize..]).unwrap_or_else(|e| panic!("send {value}: {e}"));
    }

    /// Sends a request `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}` (no
    /// `params` member when PARAMS is null).
    pub fn send_request(&mut self, id: &Value, method: &str, params: Value) {
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            request["params"] = params;
        }
        self.send(&request);
    }

    /// Reads the next line (without its `\n`).
    pub fn read_line(&mut self, timeout: Duration) -> Result<Vec<u8>, ReadError> {
        let deadline = Instant::now() + timeout;
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line = self.pending.drain(..=end).take(end).collect();
                return Ok(line);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadError::Timeout);
            }
            self.stream.set_read_timeout(Some(left)).map_err(ReadError::Io)?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ReadError::Eof(std::mem::take(&mut self.pending))),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(ReadError::Timeout)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::Io(e)),
            }
        }
    }

    /// Reads the next line as JSON; panics on a timeout, a closed connection or bad JSON.
    pub fn read_json(&mut self, timeout: Duration) -> Value {
        match self.read_line(timeout) {
            Ok(line) => serde_json::from_slice(&line).unwrap_or_else(|e| {
                panic!("the daemon sent a line that is not JSON ({e}): {:?}", String::from_utf8_lossy(&line))
            }),
            Err(e) => panic!("no message from the daemon: {e:?}"),
        }
    }

    /// Like [`RawConn::read_json`], skipping `queued` events (a run waiting for a slot of a
    /// daemon that other tests share).
    pub fn read_json_skipping_queued(&mut self, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let message = self.read_json(deadline.saturating_duration_since(Instant::now()));
            if message["params"]["event"]["type"] != "queued" {
                return message;
            }
        }
    }

    /// Sends a request with a fresh numeric id and waits for its response, collecting the
    /// `event` notifications for it. Returns `(events, response)`.
    pub fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.call_with_id(&id, method, params, CALL_TIMEOUT)
    }

    /// Like [`RawConn::call`], with a chosen id and timeout.
    pub fn call_with_id(&mut self, id: &Value, method: &str, params: Value, timeout: Duration) -> (Vec<Value>, Value) {
        self.send_request(id, method, params);
        self.wait_response(id, timeout)
    }

    /// Reads until the response for `id`, collecting its events (`params.event`).
    pub fn wait_response(&mut self, id: &Value, timeout: Duration) -> (Vec<Value>, Value) {
        let deadline = Instant::now() + timeout;
        let mut events = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.read_line(left) {
                Ok(line) => serde_json::from_slice::<Value>(&line).unwrap_or_else(|e| {
                    panic!("the daemon sent a line that is not JSON ({e}): {:?}", String::from_utf8_lossy(&line))
                }),
                Err(e) => panic!("no response for id {id} within {timeout:?}: {e:?}"),
            };
            if message.get("method").is_some() {
                if message["method"] == "event" && &message["params"]["id"] == id {
                    events.push(message["params"]["event"].clone());
                } else {
                    self.unclaimed.push(message);
                }
            } else if &message["id"] == id {
                return (events, message);
            } else {
                self.unclaimed.push(message);
            }
        }
    }

    /// Sends a request and returns the `error.code` of its response; panics on a success.
    pub fn error_code(&mut self, method: &str, params: Value) -> i64 {
        let (_, response) = self.call(method, params.clone());
        assert_error_shape(&response);
        response["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("`{method}` with {params} should have failed, the daemon answered {response}"))
    }
}

/// Checks that a response is a well-formed JSON-RPC error: `jsonrpc` "2.0", an `error` with an
/// integer `code` and a non-empty `message`, and no `result`.
pub fn assert_error_shape(response: &Value) {
    assert_eq!(response["jsonrpc"], "2.0", "not a JSON-RPC 2.0 response: {response}");
    if response.get("error").is_none() {
        return;
    }
    assert!(response["error"]["code"].is_i64(), "error without an integer code: {response}");
    let message = response["error"]["message"].as_str().unwrap_or("");
    assert!(!message.trim().is_empty(), "error without a message: {response}");
    assert!(response.get("result").is_none(), "a response with both error and result: {response}");
}
