//! A workspace directory as the tar archive `grade` takes (`"workspace": {"fd": N}`), written
//! into an anonymous in-memory file (a memfd) that is passed to segid open.
//!
//! The archive holds the directory's contents with relative paths (`src/app/main.py`, no
//! leading `./` or `/`), in name order, parents before their contents: directories, regular
//! files with their permission bits and modification times, and symlinks as symlinks (never
//! followed; their targets as written). Anything else (named pipes, sockets, devices) is left
//! out, and the caller is told.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use tar::{EntryType, Header};

/// An entry of the directory that is not in the archive, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The entry's path relative to the workspace (`logs/pipe`).
    pub path: PathBuf,
    /// What it is: `a named pipe`, `a socket`, `a block device`, `a character device`.
    pub kind: &'static str,
}

/// Archives the directory `dir` into an anonymous file, rewound to its start and sealed
/// against changes where the kernel allows. `on_skip` hears of each entry left out.
///
/// The file is a memfd; where `memfd_create` is refused (an old kernel, a seccomp filter), an
/// unnamed temporary file (`O_TMPFILE`) in the temporary directory.
pub fn archive(dir: &Path, on_skip: impl FnMut(Skipped)) -> io::Result<File> {
    let meta = fs::metadata(dir).map_err(|e| with_path(e, dir))?;
    if !meta.is_dir() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not a directory", dir.display())));
    }
    let (file, sealable) = anonymous_file()?;
    let mut archive = Archive { builder: tar::Builder::new(BufWriter::new(file)), on_skip };
    archive.dir(dir, Path::new(""))?;
    let mut file = archive.builder.into_inner()?.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.seek(SeekFrom::Start(0))?;
    if sealable {
        // segid then reads an archive that can no longer change under it.
        let seals = SealFlag::F_SEAL_SEAL | SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_WRITE;
        fcntl(file.as_raw_fd(), FcntlArg::F_ADD_SEALS(seals)).map_err(io::Error::from)?;
    }
    Ok(file)
}

/// A memfd (sealable), else an `O_TMPFILE` file.
fn anonymous_file() -> io::Result<(File, bool)> {
    match memfd_create(c"segi-workspace.tar", MemFdCreateFlag::MFD_CLOEXEC | MemFdCreateFlag::MFD_ALLOW_SEALING) {
        Ok(fd) => Ok((File::from(fd), true)),
        Err(_) => {
            let tmp = std::env::temp_dir();
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .mode(0o600)
                .custom_flags(libc::O_TMPFILE)
                .open(&tmp)
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot create a temporary file in {}: {e}", tmp.display()))
                })?;
            Ok((file, false))
        }
    }
}

struct Archive<W: Write, S> {
    builder: tar::Builder<W>,
    on_skip: S,
}

impl<W: Write, S: FnMut(Skipped)> Archive<W, S> {
    /// Appends the entries of the directory `real`, whose path in the archive is `rel`.
    fn dir(&mut self, real: &Path, rel: &Path) -> io::Result<()> {
        let mut entries = fs::read_dir(real)
            .and_then(|entries| entries.collect::<Result<Vec<_>, _>>())
            .map_err(|e| with_path(e, real))?;
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            let path = entry.path();
            let child = rel.join(entry.file_name());
            let meta = fs::symlink_metadata(&path).map_err(|e| with_path(e, &path))?;
            let file_type = meta.file_type();
            if file_type.is_dir() {
                let mut header = header(&meta, EntryType::Directory, 0);
                self.builder.append_data(&mut header, &child, io::empty()).map_err(|e| with_path(e, &path))?;
                self.dir(&path, &child)?;
            } else if file_type.is_file() {
                self.file(&path, &child)?;
            } else if file_type.is_symlink() {
                let target = fs::read_link(&path).map_err(|e| with_path(e, &path))?;
                let mut header = header(&meta, EntryType::Symlink, 0);
                // A link's own mode bits mean nothing on Linux.
                header.set_mode(0o777);
                self.builder.append_link(&mut header, &child, &target).map_err(|e| with_path(e, &path))?;
            } else {
                (self.on_skip)(Skipped { path: child, kind: special_kind(file_type) });
            }
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, rel: &Path) -> io::Result<()> {
        // Non-blocking: a file swapped for a named pipe since it was listed must not hang us.
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| with_path(e, path))?;
        let meta = file.metadata().map_err(|e| with_path(e, path))?;
        if !meta.is_file() {
            (self.on_skip)(Skipped { path: rel.to_path_buf(), kind: special_kind(meta.file_type()) });
            return Ok(());
        }
        let size = meta.len();
        let mut header = header(&meta, EntryType::Regular, size);
        // Exactly `size` bytes whatever happens to the file meanwhile: the header says so.
        let data = file.take(size).chain(io::repeat(0)).take(size);
        self.builder.append_data(&mut header, rel, data).map_err(|e| with_path(e, path))
    }
}

fn header(meta: &fs::Metadata, kind: EntryType, size: u64) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(meta.mode() & 0o777);
    header.set_mtime(u64::try_from(meta.mtime()).unwrap_or(0));
    // Ownership means nothing in segid's sandbox.
    header.set_uid(0);
    header.set_gid(0);
    header
}

fn special_kind(file_type: fs::FileType) -> &'static str {
    if file_type.is_fifo() {
        "a named pipe"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_char_device() {
        "a character device"
    } else {
        "an unknown kind of file"
    }
}

/// The error with the path it concerns in front (`/ws/src: Permission denied`).
fn with_path(error: io::Error, path: &Path) -> io::Error {
    let text = error.to_string();
    let text = match text.find(" (os error ") {
        Some(end) => &text[..end],
        None => &text,
    };
    io::Error::new(error.kind(), format!("{}: {text}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::PermissionsExt as _;

    fn bytes(path: &Path) -> &[u8] {
        path.as_os_str().as_bytes()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("segi-client-workspace-test-{}", std::process::id())).join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, content: &[u8], mode: u32) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// (path, type, mode, link target or content) of each entry.
    fn entries(file: File) -> Vec<(String, EntryType, u32, Vec<u8>)> {
        let mut archive = tar::Archive::new(file);
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let header = entry.header().clone();
                let path = String::from_utf8(bytes(&entry.path().unwrap()).to_vec()).unwrap();
                let mut body = Vec::new();
                match header.entry_type() {
                    EntryType::Symlink => body = bytes(&entry.link_name().unwrap().unwrap()).to_vec(),
                    _ => {
                        entry.read_to_end(&mut body).unwrap();
                    }
                }
                (path, header.entry_type(), header.mode().unwrap(), body)
            })
            .collect()
    }

    #[test]
    fn contents_with_relative_paths_modes_and_links() {
        let dir = scratch("tree");
        write(&dir.join("src/app/main.py"), b"print('hi')\n", 0o644);
        write(&dir.join("check.sh"), b"#!/bin/sh\nexit 0\n", 0o755);
        write(&dir.join("data.bin"), &[0xff, 0x00, 0x01], 0o600);
        write(&dir.join(".git/HEAD"), b"ref: refs/heads/main\n", 0o644);
        fs::create_dir(dir.join("empty")).unwrap();
        std::os::unix::fs::symlink("src/app/main.py", dir.join("main.py")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("src/passwd")).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
        let long = "d".repeat(120);
        write(&dir.join(&long).join("f".repeat(120)), b"long", 0o644);

        let mut skipped = Vec::new();
        let file = archive(&dir, |s| skipped.push(s)).unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        let listed = entries(file);
        let dir_mode = fs::metadata(dir.join("src")).unwrap().mode() & 0o777;
        let long_file = format!("{long}/{}", "f".repeat(120));
        let expected: Vec<(&str, EntryType, u32, &[u8])> = vec![
            (".git", EntryType::Directory, dir_mode, b""),
            (".git/HEAD", EntryType::Regular, 0o644, b"ref: refs/heads/main\n"),
            ("check.sh", EntryType::Regular, 0o755, b"#!/bin/sh\nexit 0\n"),
            ("dangling", EntryType::Symlink, 0o777, b"nowhere"),
            ("data.bin", EntryType::Regular, 0o600, &[0xff, 0x00, 0x01]),
            (&long, EntryType::Directory, dir_mode, b""),
            (&long_file, EntryType::Regular, 0o644, b"long"),
            ("empty", EntryType::Directory, dir_mode, b""),
            ("main.py", EntryType::Symlink, 0o777, b"src/app/main.py"),
            ("src", EntryType::Directory, dir_mode, b""),
            ("src/app", EntryType::Directory, dir_mode, b""),
            ("src/app/main.py", EntryType::Regular, 0o644, b"print('hi')\n"),
            ("src/passwd", EntryType::Symlink, 0o777, b"/etc/passwd"),
        ];
        let listed: Vec<(&str, EntryType, u32, &[u8])> =
            listed.iter().map(|(p, t, m, b)| (p.trim_end_matches('/'), *t, *m, b.as_slice())).collect();
        assert_eq!(listed, expected);
    }

    #[test]
    fn the_archive_is_rewound_and_sealed() {
        let dir = scratch("sealed");
        write(&dir.join("a.txt"), b"a", 0o644);
        let mut file = archive(&dir, |_| {}).unwrap();
        assert_eq!(file.stream_position().unwrap(), 0);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes.len() % 512, 0);
        assert_eq!(&bytes[..5], b"a.txt");
        // Sealed: neither we nor segid can change what was sent.
        file.seek(SeekFrom::Start(0)).unwrap();
        assert!(file.write_all(b"x").is_err());
        assert!(file.set_len(0).is_err());
    }

    #[test]
    fn special_files_are_left_out_and_named() {
        let dir = scratch("special");
        write(&dir.join("kept.txt"), b"kept", 0o644);
        fs::create_dir(dir.join("logs")).unwrap();
        nix::unistd::mkfifo(&dir.join("logs/pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let socket = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
        let mut skipped = Vec::new();
        let file = archive(&dir, |s| skipped.push(s)).unwrap();
        drop(socket);
        assert_eq!(
            skipped,
            [
                Skipped { path: "logs/pipe".into(), kind: "a named pipe" },
                Skipped { path: "sock".into(), kind: "a socket" },
            ]
        );
        let names: Vec<String> = entries(file).into_iter().map(|e| e.0.trim_end_matches('/').to_owned()).collect();
        assert_eq!(names, ["kept.txt", "logs"]);
    }

    #[test]
    fn the_workspace_must_be_a_directory() {
        let error = archive(Path::new("/nonexistent/ws"), |_| {}).unwrap_err();
        assert_eq!(error.to_string(), "/nonexistent/ws: No such file or directory");
        let dir = scratch("not-dir");
        write(&dir.join("f"), b"", 0o644);
        let error = archive(&dir.join("f"), |_| {}).unwrap_err();
        assert!(error.to_string().ends_with("/f: not a directory"), "{error}");
    }
}
