//! Where segid listens when nobody says: `$SEGID_SOCKET`, else `/run/segi/segid.sock` for
//! root, else `$XDG_RUNTIME_DIR/segi/segid.sock` (the contract in `interface.md`).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::Error;

/// The system daemon's socket, used by root.
pub const SYSTEM_SOCKET: &str = "/run/segi/segid.sock";

/// The socket this process should use when no `--socket` was given.
pub fn default_socket() -> Result<PathBuf, Error> {
    // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
    let euid = unsafe { libc::geteuid() };
    resolve_socket(std::env::var_os("SEGID_SOCKET"), euid, std::env::var_os("XDG_RUNTIME_DIR")).ok_or(Error::NoSocket)
}

/// The rule behind [`default_socket`], given the environment it reads. An empty variable
/// counts as unset, as a shell user who wrote `SEGID_SOCKET=` would expect.
pub fn resolve_socket(segid_socket: Option<OsString>, euid: u32, xdg_runtime_dir: Option<OsString>) -> Option<PathBuf> {
    let set = |value: Option<OsString>| value.filter(|v| !v.is_empty());
    if let Some(socket) = set(segid_socket) {
        return Some(socket.into());
    }
    if euid == 0 {
        return Some(SYSTEM_SOCKET.into());
    }
    set(xdg_runtime_dir).map(|dir| PathBuf::from(dir).join("segi/segid.sock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(s.into())
    }

    #[test]
    fn environment_wins() {
        assert_eq!(resolve_socket(os("/tmp/s.sock"), 0, os("/run/user/1000")), Some("/tmp/s.sock".into()));
    }

    #[test]
    fn root_uses_the_system_socket() {
        assert_eq!(resolve_socket(None, 0, os("/run/user/0")), Some(SYSTEM_SOCKET.into()));
        assert_eq!(resolve_socket(os(""), 0, None), Some(SYSTEM_SOCKET.into()));
    }

    #[test]
    fn users_use_their_runtime_dir() {
        assert_eq!(resolve_socket(None, 1000, os("/run/user/1000")), Some("/run/user/1000/segi/segid.sock".into()));
        assert_eq!(resolve_socket(None, 1000, None), None);
        assert_eq!(resolve_socket(None, 1000, os("")), None);
    }
}
