//! Every way talking to `segid` can fail, each worded so a person knows what to do next.

use std::io;
use std::path::PathBuf;

use segi_proto::jsonrpc::RpcError;

/// A failure of the client, the connection or the daemon (never the program's own failure:
/// that is a [`segi_proto::RunResult`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Neither `--socket`, `SEGID_SOCKET` nor `XDG_RUNTIME_DIR` says where segid listens.
    #[error(
        "cannot tell where segid listens: set SEGID_SOCKET to its socket (or pass --socket PATH); \
         XDG_RUNTIME_DIR, the usual place for a user's segid, is not set either"
    )]
    NoSocket,

    /// The socket could not be connected to. The message already tells the OS error, so
    /// `io` is not a `source()` (which would make error reporters print it twice).
    #[error("cannot connect to segid at {}: {}; {}", socket.display(), os_message(io), connect_hint(socket, io))]
    Connect { socket: PathBuf, io: io::Error },

    /// The connection ended (or broke) before the daemon answered.
    #[error("lost the connection to segid at {}: {reason}", socket.display())]
    Disconnected { socket: PathBuf, reason: String },

    /// The daemon answered with a JSON-RPC error; code and message are kept as sent.
    #[error("segid refused the request: {} (code {})", .0.message, .0.code)]
    Rpc(RpcError),

    /// The daemon sent something that is not the protocol (a bug on one side or the other).
    #[error("segid broke the protocol: {0}")]
    Protocol(String),

    /// The request does not fit in one protocol message; the daemon would refuse it.
    #[error(
        "the request is {bytes} bytes, above the {limit}-byte message limit; \
         send smaller files or stdin"
    )]
    MessageTooLarge { bytes: usize, limit: usize },

    /// More file descriptors than one request may carry; the daemon would refuse it.
    #[error("a request may pass at most {limit} file descriptors, not {count}; send some files inline")]
    TooManyDescriptors { count: usize, limit: usize },
}

impl Error {
    /// The JSON-RPC error code when the daemon refused the request.
    pub fn rpc_code(&self) -> Option<i64> {
        match self {
            Error::Rpc(error) => Some(error.code),
            _ => None,
        }
    }
}

/// `No such file or directory`, without Rust's ` (os error 2)` suffix.
fn os_message(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error ") {
        Some(end) => text[..end].to_owned(),
        None => text,
    }
}

fn connect_hint(socket: &std::path::Path, error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::PermissionDenied => "this user may not use that socket; ask for access to \
             it, or set SEGID_SOCKET to a segid you may use"
            .to_owned(),
        _ => format!("is segid running? start it with `segid --socket {}` or set SEGID_SOCKET", socket.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_error_says_what_to_do() {
        let error = Error::Connect { socket: "/tmp/x.sock".into(), io: io::Error::from_raw_os_error(libc::ENOENT) };
        assert_eq!(
            error.to_string(),
            "cannot connect to segid at /tmp/x.sock: No such file or directory; is segid running? \
             start it with `segid --socket /tmp/x.sock` or set SEGID_SOCKET"
        );
    }

    #[test]
    fn rpc_error_keeps_code_and_message() {
        let error = Error::Rpc(RpcError::invalid_params("unknown policy \"fast\""));
        assert_eq!(error.rpc_code(), Some(-32602));
        assert_eq!(error.to_string(), "segid refused the request: unknown policy \"fast\" (code -32602)");
    }
}
