//! The sandbox's filesystem: a fresh tmpfs root holding read-only binds of the system
//! directories a policy names, a fresh `/proc`, a minimal `/dev`, and size-limited tmpfs
//! `/box` and `/tmp`. Runs inside init, in its own mount namespace, before `pivot_root`.

use std::ffi::CString;
use std::os::unix::fs::{symlink, DirBuilderExt};
use std::path::{Component, Path, PathBuf};

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::mount::{mount, umount2, MntFlags, MsFlags};

use super::messages::{Area, RootPlan};
use super::SetupError;

/// Device nodes a program may use, bound from the host's `/dev` (a user namespace cannot mknod).
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

fn step(what: &str) -> impl Fn(nix::Error) -> SetupError + '_ {
    move |e| SetupError::new("rootfs", format!("{what}: {e}"))
}

fn io_step(what: &str) -> impl Fn(std::io::Error) -> SetupError + '_ {
    move |e| SetupError::new("rootfs", format!("{what}: {e}"))
}

/// A bind source, opened before init gives up its host identity.
pub enum Source {
    /// `O_PATH` descriptor of a directory or file to bind.
    Tree { path: PathBuf, fd: OwnedFd, is_dir: bool },
    /// A symlink to recreate (merged-/usr hosts: /bin -> usr/bin).
    Link { path: PathBuf, target: PathBuf },
}

/// Opens every bind source while init still has the daemon's view of host permissions (root
/// mode: host root, which may traverse /root); the mounts are then made from these
/// descriptors (open_tree) after init has switched to the sandbox's identity.
pub fn open_sources(plan: &RootPlan) -> Result<Vec<Source>, SetupError> {
    let mut sources: Vec<Source> = Vec::with_capacity(plan.binds.len());
    for path in &plan.binds {
        // Binds are recursive: a path below an earlier bind (/usr/local under /usr) is already
        // there, with its submounts.
        let covered = sources
            .iter()
            .any(|s| matches!(s, Source::Tree { path: bound, is_dir: true, .. } if path.starts_with(bound)));
        if covered {
            continue;
        }
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta,
            // A policy may name directories some hosts lack (/lib64, /lib32), or that the
            // daemon's user may not see (/root/.cargo when segid runs as its own user): the
            // sandbox then lacks them too, which is never less isolated.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied) => {
                continue
            }
            Err(e) => return Err(io_step("inspect a bind source")(e)),
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path).map_err(io_step("read a bind symlink"))?;
            sources.push(Source::Link { path: path.clone(), target });
            continue;
        }
        let fd = nix::fcntl::open(
            path.as_path(),
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(step("open a bind source"))?;
        // SAFETY: the kernel just returned this descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        sources.push(Source::Tree { path: path.clone(), fd, is_dir: meta.is_dir() });
    }
    Ok(sources)
}

/// Mounts the new root's tmpfs on `plan.new_root` and makes it the working directory. Done
/// before init takes the sandbox's identity: the path to the state directory may be closed
/// to that identity (a 0700 directory), and from here on everything is relative to ".".
pub fn mount_root(plan: &RootPlan) -> Result<(), SetupError> {
    // Nothing we mount may propagate back to the host's mount namespace.
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(step("make / private"))?;
    mount(
        Some("segi"),
        &plan.new_root,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(format!("size=1m,nr_inodes=4096,mode=0755,uid={0},gid={0}", plan.inside_id).as_str()),
    )
    .map_err(step("mount the root tmpfs"))?;
    nix::unistd::chdir(&plan.new_root).map_err(step("chdir to the new root"))
}

/// Fills the new root (the working directory) from `sources`.
pub fn build(plan: &RootPlan, sources: Vec<Source>) -> Result<(), SetupError> {
    let root = Path::new(".");
    for source in sources {
        bind_readonly(source, root)?;
    }
    mount_proc(root)?;
    mount_dev(root)?;
    mount_tmpfs(root, "box", plan.box_size, &format!("mode=0755,uid={0},gid={0}", plan.inside_id))?;
    mount_tmpfs(root, "tmp", plan.tmp_size, "mode=1777")?;
    // Mount points only: evaluations and graders mount their inputs on them at start.
    for dir in Area::INPUTS.iter().map(|a| a.dir()).chain([WORKSPACE]) {
        let target = root.join(dir.trim_start_matches('/'));
        std::fs::DirBuilder::new().mode(0o755).create(target).map_err(io_step("create an input mount point"))?;
    }
    Ok(())
}

/// Mounts a tmpfs for a read-only input directory (after pivot_root): sized for `bytes` of
/// content in `entries` files and directories, so that filling it cannot take more memory
/// than the request brought. Made read-only by [`seal_input`] once filled.
pub fn mount_input(area: Area, bytes: u64, entries: usize, inside_id: u32) -> Result<(), SetupError> {
    // Each entry may take a page beyond its bytes (a file's last page is partly empty).
    let size = bytes + (entries as u64 + 16) * 4096;
    let inodes = entries + 16;
    mount(
        Some("segi-input"),
        area.dir(),
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(format!("size={size},nr_inodes={inodes},mode=0755,uid={inside_id},gid={inside_id}").as_str()),
    )
    .map_err(step("mount an input directory"))
}

/// Where a grader's workspace appears.
pub const WORKSPACE: &str = "/workspace";

/// Builds `/workspace` (after pivot_root): a tmpfs of `size` bytes holding the unpacked
/// `archive` as a read-only lower layer and a private upper layer, joined by an overlay at
/// `/workspace` itself. The program may change anything it sees; the lower layer, hidden
/// under the overlay, stays as the archive had it. Only regular files, directories, symlinks
/// and hard links are unpacked; paths that would leave the lower layer are refused (the tar
/// crate's `unpack_in`).
pub fn mount_workspace(archive: impl std::io::Read, size: u64, inside_id: u32) -> Result<(), SetupError> {
    mount(
        Some("segi-workspace"),
        WORKSPACE,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(format!("size={size},nr_inodes=1048576,mode=0755,uid={inside_id},gid={inside_id}").as_str()),
    )
    .map_err(step("mount the workspace tmpfs"))?;
    let layer = |name: &str| Path::new(WORKSPACE).join(name);
    for name in [".lower", ".upper", ".work"] {
        std::fs::DirBuilder::new().mode(0o755).create(layer(name)).map_err(io_step("create a workspace layer"))?;
    }
    unpack(archive, &layer(".lower"))?;
    // The lower layer read-only: a bind of it onto itself, then the attribute.
    mount(Some(&layer(".lower")), &layer(".lower"), None::<&str>, MsFlags::MS_BIND, None::<&str>)
        .map_err(step("bind the workspace's lower layer"))?;
    setattr(&layer(".lower"), MOUNT_ATTR_RDONLY, false).map_err(step("make the lower layer read-only"))?;
    // userxattr: overlay's own metadata goes to user.* xattrs, the only ones a user namespace
    // may write (tmpfs has them).
    let options = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        layer(".lower").display(),
        layer(".upper").display(),
        layer(".work").display()
    );
    mount(
        Some("segi-workspace"),
        WORKSPACE,
        Some("overlay"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(options.as_str()),
    )
    .map_err(step("mount the workspace overlay"))
}

fn unpack(archive: impl std::io::Read, into: &Path) -> Result<(), SetupError> {
    let fail = |e: std::io::Error| SetupError::new("workspace archive", e.to_string());
    let mut archive = tar::Archive::new(archive);
    archive.set_preserve_permissions(false);
    archive.set_unpack_xattrs(false);
    for entry in archive.entries().map_err(fail)? {
        let mut entry = entry.map_err(fail)?;
        use tar::EntryType::*;
        match entry.header().entry_type() {
            Regular | Continuous | Directory | Symlink | Link | GNUSparse => {}
            // Devices, fifos and the like have no place in a workspace.
            _ => continue,
        }
        entry.unpack_in(into).map_err(fail)?;
    }
    Ok(())
}

/// Makes a filled input directory read-only: from here on not even its owner (the program's
/// uid) can change it, and the program has no capability left to remount it.
pub fn seal_input(area: Area) -> Result<(), SetupError> {
    setattr(Path::new(area.dir()), MOUNT_ATTR_RDONLY, false).map_err(step("make an input directory read-only"))
}

/// Switches to the new root. pivot_root, not chroot: a chroot keeps the host tree reachable
/// (a second chroot plus `..` walks out), whereas after pivot_root and the lazy unmount of the
/// old root the host tree is simply absent from this mount namespace.
pub fn pivot() -> Result<(), SetupError> {
    // The root tmpfs only holds mount points: read-only from here on.
    setattr(Path::new("."), MOUNT_ATTR_RDONLY, false).map_err(step("make the root read-only"))?;
    // pivot_root(".", ".") stacks the old root on top of the new one; unmounting "." then
    // removes exactly the old root (the trick from pivot_root(2)).
    nix::unistd::pivot_root(".", ".").map_err(step("pivot_root"))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(step("detach the old root"))?;
    nix::unistd::chdir("/box").map_err(step("chdir to /box"))?;
    Ok(())
}

/// `/usr` → `<root>/usr`; rejects anything but a clean absolute path.
fn inside(root: &Path, host_path: &Path) -> Result<PathBuf, SetupError> {
    let mut target = root.to_path_buf();
    for component in host_path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(part) => target.push(part),
            _ => return Err(SetupError::new("rootfs", format!("bind path {host_path:?} is not clean"))),
        }
    }
    Ok(target)
}

fn bind_readonly(source: Source, root: &Path) -> Result<(), SetupError> {
    let path = match &source {
        Source::Tree { path, .. } | Source::Link { path, .. } => path.clone(),
    };
    let target = inside(root, &path)?;
    if let Some(parent) = target.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(io_step("create a mount point"))?;
    }
    let (fd, is_dir) = match source {
        Source::Link { target: link, .. } => return symlink(&link, &target).map_err(io_step("recreate a symlink")),
        Source::Tree { fd, is_dir, .. } => (fd, is_dir),
    };
    if is_dir {
        std::fs::DirBuilder::new().mode(0o755).create(&target).map_err(io_step("create a mount point"))?;
    } else {
        std::fs::File::create(&target).map_err(io_step("create a file mount point"))?;
    }
    // A detached copy of the source tree, made read-only, nosuid and nodev (recursively, so
    // submounts too) before it is attached: at no moment is a writable copy visible.
    let tree = open_tree(&fd).map_err(step("clone a bind source"))?;
    setattr_fd(&tree, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
        .map_err(step("make a bind read-only, nosuid, nodev"))?;
    move_mount(&tree, &target).map_err(step("attach a bind"))
}

fn mount_proc(root: &Path) -> Result<(), SetupError> {
    let target = root.join("proc");
    std::fs::DirBuilder::new().mode(0o555).create(&target).map_err(io_step("create /proc"))?;
    // A fresh procfs for the new pid namespace: only the run's own processes appear.
    mount(
        Some("proc"),
        &target,
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(step("mount /proc"))
}

fn mount_dev(root: &Path) -> Result<(), SetupError> {
    let dev = root.join("dev");
    std::fs::DirBuilder::new().mode(0o755).create(&dev).map_err(io_step("create /dev"))?;
    mount(
        Some("segi-dev"),
        &dev,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("size=64k,nr_inodes=64,mode=0755"),
    )
    .map_err(step("mount /dev"))?;
    for name in DEVICES {
        let target = dev.join(name);
        std::fs::File::create(&target).map_err(io_step("create a device mount point"))?;
        mount(Some(&Path::new("/dev").join(name)), &target, None::<&str>, MsFlags::MS_BIND, None::<&str>)
            .map_err(step("bind a device"))?;
        // Not nodev: these nodes must stay usable.
        setattr(&target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false).map_err(step("restrict a device bind"))?;
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        symlink(target, dev.join(name)).map_err(io_step("create a /dev link"))?;
    }
    setattr(&dev, MOUNT_ATTR_RDONLY, false).map_err(step("make /dev read-only"))
}

fn mount_tmpfs(root: &Path, name: &str, size: u64, options: &str) -> Result<(), SetupError> {
    let target = root.join(name);
    std::fs::DirBuilder::new().mode(0o755).create(&target).map_err(io_step("create a tmpfs mount point"))?;
    mount(
        Some("segi"),
        &target,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(format!("size={size},nr_inodes=65536,{options}").as_str()),
    )
    .map_err(step("mount a box tmpfs"))
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const AT_RECURSIVE: u32 = 0x8000;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const OPEN_TREE_CLONE: u32 = 1;
const MOVE_MOUNT_F_EMPTY_PATH: u32 = 0x4;

fn open_tree(source: &OwnedFd) -> nix::Result<OwnedFd> {
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as u32 | AT_RECURSIVE | libc::AT_EMPTY_PATH as u32;
    // SAFETY: a valid descriptor and an empty NUL-terminated path.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, source.as_raw_fd(), c"".as_ptr(), flags) };
    if fd < 0 {
        return Err(nix::Error::last());
    }
    // SAFETY: the kernel just returned this descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn move_mount(tree: &OwnedFd, target: &Path) -> nix::Result<()> {
    let c_target = CString::new(target.as_os_str().as_encoded_bytes()).map_err(|_| nix::Error::EINVAL)?;
    // SAFETY: valid descriptors and NUL-terminated paths.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            c_target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(nix::Error::last())
    }
}

fn setattr_fd(tree: &OwnedFd, attrs: u64) -> nix::Result<()> {
    mount_setattr(tree.as_raw_fd(), c"", AT_RECURSIVE | libc::AT_EMPTY_PATH as u32, attrs)
}

/// mount_setattr(2): unlike a remount, it sets flags without having to restate (and so risk
/// clearing) the flags the kernel locked on the source mount, and it can act recursively.
fn setattr(path: &Path, attrs: u64, recursive: bool) -> nix::Result<()> {
    let c_path = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| nix::Error::EINVAL)?;
    mount_setattr(libc::AT_FDCWD, &c_path, if recursive { AT_RECURSIVE } else { 0 }, attrs)
}

fn mount_setattr(dirfd: i32, path: &std::ffi::CStr, flags: u32, attrs: u64) -> nix::Result<()> {
    let attr = MountAttr { attr_set: attrs, attr_clr: 0, propagation: 0, userns_fd: 0 };
    // SAFETY: path is NUL-terminated and attr a properly sized mount_attr; both outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(nix::Error::last())
    }
}
