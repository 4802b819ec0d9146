//! Waiting for SIGTERM or SIGINT. Rules are left in place on exit, as
//! upstream does: a restarting proxy must not leave the node without them.

/// Resolves when the process is asked to stop.
pub async fn signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::warn!("cannot listen for signals; stop the process with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
    }
}
