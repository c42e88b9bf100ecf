//! Files a client passes as open descriptors (SCM_RIGHTS) instead of inline bytes.
//!
//! The client opened them, so the daemon reads exactly what the client could read, and never
//! opens a path on its behalf. Only regular files are taken: a pipe or a FUSE file could make
//! a read wait forever, so reading happens on a blocking thread under a deadline, and a
//! descriptor that is not a regular file is refused before any read.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// How long reading every passed file of a request may take.
const READ_DEADLINE: Duration = Duration::from_secs(10);

/// The bytes of the passed files a request names, by descriptor index.
#[derive(Debug, Default)]
pub struct PassedFiles(HashMap<usize, Vec<u8>>);

impl PassedFiles {
    /// The bytes of descriptor `index`, once: a second use is `None`.
    pub fn take(&mut self, index: usize) -> Option<Vec<u8>> {
        self.0.remove(&index)
    }
}

/// Reads the descriptors `named` (indexes into `fds`, as the request gives them), at most
/// `max_total` bytes in all. Every descriptor passed must be named, and every name must exist.
pub async fn read(fds: Vec<OwnedFd>, named: Vec<usize>, max_total: u64) -> Result<PassedFiles, String> {
    let wanted: BTreeSet<usize> = named.iter().copied().collect();
    if let Some(&missing) = wanted.iter().find(|&&i| i >= fds.len()) {
        return Err(format!(
            "fd {missing} is named, but the request carried {} descriptor(s) (fds are indexes, from 0, into the \
             descriptors sent with the request line)",
            fds.len()
        ));
    }
    if let Some(unused) = (0..fds.len()).find(|i| !wanted.contains(i)) {
        return Err(format!("descriptor {unused} was passed with the request but nothing names it (\"fd\": {unused})"));
    }
    if fds.is_empty() {
        return Ok(PassedFiles::default());
    }
    let job = tokio::task::spawn_blocking(move || read_all(fds, max_total));
    match tokio::time::timeout(READ_DEADLINE, job).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(format!("reading the passed files failed: {e}")),
        Err(_) => Err(format!("reading the passed files took more than {}s", READ_DEADLINE.as_secs())),
    }
}

fn read_all(fds: Vec<OwnedFd>, max_total: u64) -> Result<PassedFiles, String> {
    let mut files = HashMap::new();
    let mut total = 0u64;
    for (index, fd) in fds.into_iter().enumerate() {
        let file = std::fs::File::from(fd);
        let meta = file.metadata().map_err(|e| format!("descriptor {index}: {e}"))?;
        if !meta.is_file() {
            return Err(format!(
                "descriptor {index} is not a regular file; pass an open regular file (not a pipe, socket or directory)"
            ));
        }
        total += meta.len();
        if total > max_total {
            return Err(format!("the passed files hold more than {max_total} bytes, more than the box holds"));
        }
        // From offset 0 whatever the descriptor's position; one byte more than the size shows
        // a file that grows while it is read.
        let mut bytes = vec![0u8; meta.len() as usize + 1];
        let mut filled = 0;
        while filled < bytes.len() {
            match file.read_at(&mut bytes[filled..], filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EBADF) => {
                    return Err(format!("descriptor {index} is not open for reading"))
                }
                Err(e) => return Err(format!("descriptor {index}: {e}")),
            }
        }
        if filled > meta.len() as usize {
            return Err(format!("descriptor {index}: the file grew while it was read"));
        }
        bytes.truncate(filled);
        files.insert(index, bytes);
    }
    Ok(PassedFiles(files))
}
