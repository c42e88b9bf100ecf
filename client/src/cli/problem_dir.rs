//! The host files a request sends along: a problem directory, read inline (`evaluate
//! --problem`, `judge --problem`), and a source file, passed open (`--submission`).

use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use segi_proto::run::BoxFile;
use segi_proto::Payload;

/// Opens a regular file for segid to read through, and gives its file name (which goes
/// along with it). `shown` names the flag and path in messages, e.g. `--submission sol.c`.
pub(super) fn open_source(path: &Path, shown: &str) -> anyhow::Result<(String, File)> {
    let filename = match path.file_name().map(OsStr::to_str) {
        Some(Some(name)) => name.to_owned(),
        Some(None) => bail!("{shown}: the file name is not UTF-8; rename the file or copy it"),
        None => bail!("{shown}: the path names no file"),
    };
    // Non-blocking, so that a named pipe given by mistake is refused here instead of waiting
    // for a writer (segid takes regular files only).
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot open {shown}"))?;
    let file_type = file.metadata().with_context(|| format!("cannot read {shown}"))?.file_type();
    if !file_type.is_file() {
        bail!("{shown}: not a regular file but {}", kind(file_type));
    }
    Ok((filename, file))
}

/// Every regular file under `dir`, inline, with paths relative to it (`/`-separated).
pub(super) fn problem_files(dir: &Path) -> anyhow::Result<Vec<BoxFile>> {
    let root = dir.canonicalize().with_context(|| format!("cannot read --problem {}", dir.display()))?;
    if !root.is_dir() {
        bail!("--problem {}: not a directory", dir.display());
    }
    let mut walk = Walk { shown: dir.to_path_buf(), ancestors: vec![root.clone()], files: Vec::new(), root };
    let root = walk.root.clone();
    walk.dir(&root, "")?;
    Ok(walk.files)
}

struct Walk {
    /// The canonical problem directory: symlinks may lead anywhere inside it, nowhere else.
    root: PathBuf,
    /// The directory as the user named it, for messages.
    shown: PathBuf,
    /// The canonical directories being read, from the root down: a link back to one is a loop.
    ancestors: Vec<PathBuf>,
    files: Vec<BoxFile>,
}

impl Walk {
    /// Reads the directory `real` (canonical), whose path in the problem is `rel` ("" at the top).
    fn dir(&mut self, real: &Path, rel: &str) -> anyhow::Result<()> {
        let cannot_read = || format!("--problem: cannot read the directory {}", self.show(rel));
        let mut entries =
            fs::read_dir(real).with_context(cannot_read)?.collect::<Result<Vec<_>, _>>().with_context(cannot_read)?;
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            let name = entry.file_name();
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let Some(name) = name.to_str() else {
                bail!("--problem: the name of {} is not UTF-8; rename it", self.shown.join(rel).join(&name).display());
            };
            let path = real.join(name);
            let child = match rel {
                "" => name.to_owned(),
                _ => format!("{rel}/{name}"),
            };
            let meta =
                fs::symlink_metadata(&path).with_context(|| format!("--problem: cannot read {}", self.show(&child)))?;
            let file_type = meta.file_type();
            if file_type.is_symlink() {
                self.symlink(&path, &child)?;
            } else if file_type.is_file() {
                self.file(&path, child, &meta)?;
            } else if file_type.is_dir() {
                self.subdir(path, &child)?;
            } else {
                bail!(
                    "--problem: {} is {}; only regular files, directories and symlinks to them can be sent",
                    self.show(&child),
                    kind(file_type)
                );
            }
        }
        Ok(())
    }

    /// Follows a link only to a regular file or a directory inside the problem directory.
    fn symlink(&mut self, link: &Path, rel: &str) -> anyhow::Result<()> {
        let shown = self.show(rel);
        let target = match link.canonicalize() {
            Ok(target) => target,
            Err(e) => bail!("--problem: the symlink {shown} leads nowhere ({e})"),
        };
        if !target.starts_with(&self.root) {
            bail!(
                "--problem: the symlink {shown} points outside {} (to {}); copy the file in instead",
                self.shown.display(),
                target.display()
            );
        }
        let meta = fs::metadata(&target).with_context(|| format!("--problem: cannot read {shown}"))?;
        if meta.is_file() {
            self.file(&target, rel.to_owned(), &meta)
        } else if meta.is_dir() {
            self.subdir(target, rel)
        } else {
            bail!(
                "--problem: the symlink {shown} points to {}, not a regular file or directory",
                kind(meta.file_type())
            )
        }
    }

    fn subdir(&mut self, real: PathBuf, rel: &str) -> anyhow::Result<()> {
        if self.ancestors.contains(&real) {
            bail!("--problem: the symlink {} makes a loop (it leads back to {})", self.show(rel), real.display());
        }
        self.ancestors.push(real.clone());
        let walked = self.dir(&real, rel);
        self.ancestors.pop();
        walked
    }

    fn file(&mut self, real: &Path, rel: String, meta: &fs::Metadata) -> anyhow::Result<()> {
        let bytes = fs::read(real).with_context(|| format!("--problem: cannot read {}", self.show(&rel)))?;
        let executable = meta.permissions().mode() & 0o100 != 0;
        self.files.push(BoxFile { path: rel, content: Some(Payload::from_bytes(&bytes)), fd: None, executable });
        Ok(())
    }

    /// A path in the problem as the user would write it: `DIR/rel`.
    fn show(&self, rel: &str) -> String {
        self.shown.join(rel).display().to_string()
    }
}

/// What a file that is not regular is, for a message.
fn kind(file_type: fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symlink"
    } else if file_type.is_fifo() {
        "a named pipe"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "an unknown kind of file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("segi-client-problem-dir-test-{}", std::process::id())).join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, content: &str, mode: u32) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn sources_are_regular_files() {
        let dir = scratch("sources");
        write(&dir.join("sol.c"), "int main() {}\n", 0o644);
        let (name, _) = open_source(&dir.join("sol.c"), "--submission sol.c").unwrap();
        assert_eq!(name, "sol.c");
        let message = format!("{:#}", open_source(&dir, "--submission DIR").unwrap_err());
        assert_eq!(message, "--submission DIR: not a regular file but a directory");
        let message = format!("{:#}", open_source(Path::new("/nonexistent/x.c"), "--submission X").unwrap_err());
        assert!(message.starts_with("cannot open --submission X: "), "{message}");
        let message = format!("{:#}", open_source(Path::new("/"), "--submission /").unwrap_err());
        assert_eq!(message, "--submission /: the path names no file");
    }

    fn problem_error(dir: &Path) -> String {
        format!("{:#}", problem_files(dir).unwrap_err())
    }

    #[test]
    fn problem_links_stay_inside() {
        let dir = scratch("outside");
        std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd")).unwrap();
        let message = problem_error(&dir);
        assert!(message.contains("passwd") && message.contains("points outside"), "{message}");

        let dir = scratch("broken");
        std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
        let message = problem_error(&dir);
        assert!(message.contains("dangling") && message.contains("leads nowhere"), "{message}");

        let dir = scratch("loop");
        fs::create_dir(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink("..", dir.join("sub/up")).unwrap();
        let message = problem_error(&dir);
        assert!(message.contains("sub/up") && message.contains("loop"), "{message}");

        let dir = scratch("fifo");
        nix::unistd::mkfifo(&dir.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let message = problem_error(&dir);
        assert!(message.contains("pipe is a named pipe"), "{message}");

        let message = problem_error(Path::new("/nonexistent/problem"));
        assert!(message.starts_with("cannot read --problem /nonexistent/problem: "), "{message}");
        let file = scratch("file").join("f");
        write(&file, "x", 0o644);
        assert!(problem_error(&file).ends_with("not a directory"));
    }
}
