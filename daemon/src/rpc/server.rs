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

/// Binds the socket at `path` with mode 0660, replacing a stale socket file but never a live one.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
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
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
    Ok(listener)
}

/// Serves until `shutdown` fires, then waits (up to `grace`) for the connections' runs to end.
pub async fn serve(daemon: Arc<Daemon>, listener: UnixListener, shutdown: CancellationToken, grace: Duration) {
    let tracker = TaskTracker::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let daemon = daemon.clone();
                    let stop = shutdown.child_token();
                    tracker.spawn(super::connection::serve(daemon, stream, stop));
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
    tracker.close();
    if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
        tracing::warn!("connections still open after the grace period");
    }
    // Connections are gone, so every run is cancelled; wait for their cleanup.
    daemon.runs.close();
    daemon.runs.wait().await;
    let warm = daemon.warm_init.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(warm) = warm {
        crate::run::spawn::discard(warm).await;
    }
}
