//! Reading a connection: `\n`-terminated request lines, each with the file descriptors the
//! client passed along with it (SCM_RIGHTS).
//!
//! A client sends a request line and its descriptors in one `sendmsg`, so the descriptors
//! ride on the line's first bytes. The kernel never merges bytes that carry descriptors with
//! later bytes into one read, so the descriptors a read returns belong to the line holding the
//! last byte of that read: that is how they are matched to their line here.

use std::collections::VecDeque;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use memchr::memchr;
use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use tokio::io::Interest;
use tokio::net::unix::OwnedReadHalf;

/// Most descriptors one request may carry (the kernel's own cap, SCM_MAX_FD, is 253).
pub const MAX_FDS: usize = 64;
const READ_CHUNK: usize = 64 * 1024;

/// Why a connection's input cannot be read further.
#[derive(Debug)]
pub enum FrameError {
    /// A line longer than the limit: the rest of it would be read as garbage.
    TooLong,
    Io(std::io::Error),
}

/// One request line (without its `\n`) and the descriptors that came with it.
pub struct Frame {
    pub line: Vec<u8>,
    pub fds: Vec<OwnedFd>,
    /// More descriptors came with the line than [`MAX_FDS`] (the extra ones are closed).
    pub too_many_fds: bool,
}

pub struct LineReader {
    read: OwnedReadHalf,
    max: usize,
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    buf_start: u64,
    /// Bytes of `buf` already searched for `\n`.
    searched: usize,
    /// Received descriptors with the stream offset of the last byte read with them.
    fds: VecDeque<(u64, OwnedFd)>,
    /// Offsets of lines whose descriptors were cut off (MSG_CTRUNC or over MAX_FDS).
    truncated: VecDeque<u64>,
    eof: bool,
}

impl LineReader {
    pub fn new(read: OwnedReadHalf, max: usize) -> Self {
        LineReader {
            read,
            max,
            buf: Vec::new(),
            buf_start: 0,
            searched: 0,
            fds: VecDeque::new(),
            truncated: VecDeque::new(),
            eof: false,
        }
    }

    /// The next line; `None` at the end of the stream (an unterminated last line included,
    /// as JSON-RPC needs its terminator).
    pub async fn next(&mut self) -> Result<Option<Frame>, FrameError> {
        loop {
            if let Some(newline) = memchr(b'\n', &self.buf[self.searched..]).map(|i| i + self.searched) {
                return Ok(Some(self.take_line(newline)));
            }
            self.searched = self.buf.len();
            if self.buf.len() > self.max {
                return Err(FrameError::TooLong);
            }
            if self.eof {
                return Ok(None);
            }
            self.fill().await.map_err(FrameError::Io)?;
        }
    }

    fn take_line(&mut self, newline: usize) -> Frame {
        let end = self.buf_start + newline as u64;
        let line = self.buf[..newline].to_vec();
        self.buf.drain(..=newline);
        self.buf_start = end + 1;
        self.searched = 0;
        let mut fds = Vec::new();
        while self.fds.front().is_some_and(|(at, _)| *at <= end) {
            if let Some((_, fd)) = self.fds.pop_front() {
                fds.push(fd);
            }
        }
        let mut too_many_fds = fds.len() > MAX_FDS;
        while self.truncated.front().is_some_and(|at| *at <= end) {
            self.truncated.pop_front();
            too_many_fds = true;
        }
        if too_many_fds {
            fds.clear();
        }
        Frame { line, fds, too_many_fds }
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        let stream = self.read.as_ref();
        let old = self.buf.len();
        self.buf.resize(old + READ_CHUNK, 0);
        let fd = stream.as_raw_fd();
        let received = loop {
            stream.readable().await?;
            match stream.try_io(Interest::READABLE, || receive(fd, &mut self.buf[old..])) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                other => break other,
            }
        };
        let (n, fds, truncated) = match received {
            Ok(r) => r,
            Err(e) => {
                self.buf.truncate(old);
                return Err(e);
            }
        };
        self.buf.truncate(old + n);
        if n == 0 {
            self.eof = true;
            return Ok(());
        }
        let last = self.buf_start + (old + n - 1) as u64;
        if truncated {
            self.truncated.push_back(last);
        }
        self.fds.extend(fds.into_iter().map(|fd| (last, fd)));
        Ok(())
    }
}

/// One recvmsg: bytes read, the descriptors that came with them (close-on-exec), and whether
/// the kernel had to drop some (more than the control buffer holds).
fn receive(fd: RawFd, buf: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>, bool)> {
    let mut control = nix::cmsg_space!([RawFd; MAX_FDS + 1]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(fd, &mut iov, Some(&mut control), MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT)
        .map_err(std::io::Error::from)?;
    let mut fds = Vec::new();
    if let Ok(cmsgs) = msg.cmsgs() {
        for cmsg in cmsgs {
            if let ControlMessageOwned::ScmRights(raw) = cmsg {
                // SAFETY: the kernel just installed these descriptors in this process for us;
                // nothing else owns them.
                fds.extend(raw.into_iter().map(|r| unsafe { OwnedFd::from_raw_fd(r) }));
            }
        }
    }
    let truncated = msg.flags.contains(MsgFlags::MSG_CTRUNC) || fds.len() > MAX_FDS;
    Ok((msg.bytes, fds, truncated))
}
