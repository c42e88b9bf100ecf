//! The typed channel between the daemon and a sandbox's init process.
//!
//! A `SOCK_SEQPACKET` socketpair keeps message boundaries and carries file descriptors
//! (`SCM_RIGHTS`), so each message is one JSON value plus the fds that belong to it. A message
//! too large for one packet travels in a sealed memfd passed as the first fd.

use std::io::{IoSlice, IoSliceMut, Read, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType,
};
use serde::{de::DeserializeOwned, Serialize};

/// Largest message sent inline; larger ones go through a memfd.
const INLINE_MAX: usize = 32 * 1024;
/// Most fds one message may carry (the kernel's SCM_MAX_FD is 253).
pub const MAX_FDS: usize = 250;
const TAG_INLINE: u8 = b'J';
const TAG_MEMFD: u8 = b'M';

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("channel closed by the other side")]
    Closed,
    #[error("channel I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("channel message is malformed: {0}")]
    Malformed(String),
}

impl From<nix::Error> for ChannelError {
    fn from(e: nix::Error) -> Self {
        ChannelError::Io(e.into())
    }
}

/// A pair of connected channel ends, both close-on-exec.
pub fn pair() -> Result<(OwnedFd, OwnedFd), ChannelError> {
    Ok(socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)?)
}

/// Sends `message` with `fds` on `sock`.
pub fn send<T: Serialize>(sock: RawFd, message: &T, fds: &[RawFd]) -> Result<(), ChannelError> {
    let json = serde_json::to_vec(message).map_err(|e| ChannelError::Malformed(e.to_string()))?;
    if fds.len() >= MAX_FDS {
        return Err(ChannelError::Malformed(format!("{} fds in one message", fds.len())));
    }
    if json.len() <= INLINE_MAX {
        let iov = [IoSlice::new(&[TAG_INLINE]), IoSlice::new(&json)];
        send_packet(sock, &iov, fds)
    } else {
        let memfd = memfd_with(&json)?;
        let mut all = Vec::with_capacity(fds.len() + 1);
        all.push(memfd.as_raw_fd());
        all.extend_from_slice(fds);
        send_packet(sock, &[IoSlice::new(&[TAG_MEMFD])], &all)
    }
}

fn send_packet(sock: RawFd, iov: &[IoSlice<'_>], fds: &[RawFd]) -> Result<(), ChannelError> {
    let cmsg = [ControlMessage::ScmRights(fds)];
    let cmsgs: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &cmsg };
    loop {
        match sendmsg::<()>(sock, iov, cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Ok(_) => return Ok(()),
            Err(nix::Error::EINTR) => continue,
            Err(nix::Error::EPIPE) | Err(nix::Error::ECONNRESET) => return Err(ChannelError::Closed),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Receives one message and its fds; `Closed` on end of stream.
pub fn recv<T: DeserializeOwned>(sock: RawFd) -> Result<(T, Vec<OwnedFd>), ChannelError> {
    let mut buf = vec![0u8; INLINE_MAX + 1];
    let mut cmsg_space = nix::cmsg_space!([RawFd; MAX_FDS]);
    let (len, mut fds) = loop {
        let mut iov = [IoSliceMut::new(&mut buf)];
        match recvmsg::<()>(sock, &mut iov, Some(&mut cmsg_space), MsgFlags::MSG_CMSG_CLOEXEC) {
            Ok(msg) => {
                let mut fds = Vec::new();
                for cmsg in msg.cmsgs()? {
                    if let ControlMessageOwned::ScmRights(raw) = cmsg {
                        // SAFETY: the kernel just installed these descriptors for us; nothing
                        // else owns them.
                        fds.extend(raw.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
                    }
                }
                if msg.flags.contains(MsgFlags::MSG_TRUNC) || msg.flags.contains(MsgFlags::MSG_CTRUNC) {
                    return Err(ChannelError::Malformed("truncated packet".into()));
                }
                break (msg.bytes, fds);
            }
            Err(nix::Error::EINTR) => continue,
            Err(nix::Error::ECONNRESET) => return Err(ChannelError::Closed),
            Err(e) => return Err(e.into()),
        }
    };
    match buf[..len].split_first() {
        None => Err(ChannelError::Closed),
        Some((&TAG_INLINE, json)) => Ok((parse(json)?, fds)),
        Some((&TAG_MEMFD, _)) if !fds.is_empty() => {
            let memfd = fds.remove(0);
            let mut file = std::fs::File::from(memfd);
            file.rewind()?;
            let mut json = Vec::new();
            file.read_to_end(&mut json)?;
            Ok((parse(&json)?, fds))
        }
        Some(_) => Err(ChannelError::Malformed("unknown packet tag".into())),
    }
}

fn parse<T: DeserializeOwned>(json: &[u8]) -> Result<T, ChannelError> {
    serde_json::from_slice(json).map_err(|e| ChannelError::Malformed(e.to_string()))
}

/// A memfd holding `bytes`, positioned at its start.
pub fn memfd_with(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    let fd = nix::sys::memfd::memfd_create(c"segi", nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC)
        .map_err(std::io::Error::from)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    file.rewind()?;
    Ok(file.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Msg {
        text: String,
    }

    #[test]
    fn small_and_large_messages_with_fds() {
        let (a, b) = pair().unwrap();
        let (r, _w) = nix::unistd::pipe().unwrap();
        let small = Msg { text: "hi".into() };
        send(a.as_raw_fd(), &small, &[r.as_raw_fd()]).unwrap();
        let (got, fds): (Msg, _) = recv(b.as_raw_fd()).unwrap();
        assert_eq!(got, small);
        assert_eq!(fds.len(), 1);

        let large = Msg { text: "x".repeat(INLINE_MAX * 3) };
        send(a.as_raw_fd(), &large, &[r.as_raw_fd()]).unwrap();
        let (got, fds): (Msg, _) = recv(b.as_raw_fd()).unwrap();
        assert_eq!(got, large);
        assert_eq!(fds.len(), 1);

        drop(a);
        assert!(matches!(recv::<Msg>(b.as_raw_fd()), Err(ChannelError::Closed)));
    }
}
