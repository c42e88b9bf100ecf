//! The accept loop: one task per connection, and a graceful stop that refuses new work,
//! cancels what runs and waits for every run to be cleaned up.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::daemon::Daemon;

/// Binds the socket at `path` with mode 0660 (and group `group`, when given: the clients'
/// group), replacing a stale socket file but never a live one.
pub fn bind(path: &Path, group: Option<u32>) -> std::io::Result<std::os::unix::net::UnixListener> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("{} is in use by a running segid; stop it or choose another --socket", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    let listener = std::os::unix::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
    if let Some(gid) = group {
        std::os::unix::fs::chown(path, None, Some(gid))?;
    }
    Ok(listener)
}

/// Serves until `shutdown` fires. Then it stops accepting, refuses new runs, lets running
/// ones finish for up to `grace`, cancels what is left, waits for every run's cleanup, and
/// closes the connections (which get their runs' responses first).
/// `socket`, when segid created it (not under socket activation), is removed as the stop
/// begins, so that new clients learn at once that segid is not there.
pub async fn serve(
    daemon: Arc<Daemon>,
    listener: UnixListener,
    socket: Option<&Path>,
    shutdown: CancellationToken,
    grace: Duration,
) {
    let connections = TaskTracker::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let daemon = daemon.clone();
                    let closed = daemon.stop_runs.child_token();
                    connections.spawn(super::connection::serve(daemon, stream, closed));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.cancelled() => break,
        }
    }
    drop(listener);
    if let Some(socket) = socket {
        let _ = std::fs::remove_file(socket);
    }
    daemon.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
    daemon.runs.close();
    if tokio::time::timeout(grace, daemon.runs.wait()).await.is_err() {
        tracing::warn!(grace_seconds = grace.as_secs_f64(), "runs still going after the grace period: killing them");
    }
    // Cancels every run left (and closes every connection), then waits for their cleanup.
    daemon.stop_runs.cancel();
    daemon.runs.wait().await;
    let warm = daemon.warm_init.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(warm) = warm {
        crate::run::spawn::discard(warm).await;
    }
    connections.close();
    if tokio::time::timeout(Duration::from_secs(5), connections.wait()).await.is_err() {
        tracing::warn!("connections did not close in time");
    }
}
