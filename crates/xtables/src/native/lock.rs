//! The xtables lock the legacy tools take (`/run/xtables.lock`, or
//! `$XTABLES_LOCKFILE`), taken by the native writer for the whole of its
//! read–replace as `iptables-restore --wait=N` takes it.

use std::fs::{File, OpenOptions};
use std::time::{Duration, Instant};

/// The tools' default lock file (iptables ≥ 1.8.6).
pub const DEFAULT_LOCK_FILE: &str = "/run/xtables.lock";

/// How often a held lock is tried again.
const RETRY: Duration = Duration::from_millis(50);

/// The lock file: `file`, else `$XTABLES_LOCKFILE`, else the default.
pub fn path(file: Option<&str>) -> String {
    match file {
        Some(path) => path.to_string(),
        None => std::env::var(super::super::apply::LOCK_FILE_VARIABLE).unwrap_or_else(|_| DEFAULT_LOCK_FILE.to_string()),
    }
}

/// Takes the lock at `file` (default: `$XTABLES_LOCKFILE`, else
/// [`DEFAULT_LOCK_FILE`]), waiting at most `wait`; `None` when another
/// program held it that long. Released when the file is dropped.
pub async fn hold(file: Option<&str>, wait: Duration) -> std::io::Result<Option<File>> {
    let lock = OpenOptions::new().create(true).truncate(false).write(true).open(path(file))?;
    let deadline = Instant::now() + wait;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(Some(lock)),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => tokio::time::sleep(RETRY).await,
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(err)) => return Err(err),
        }
    }
}

/// [`hold`] for a process without an async runtime (the native writer's
/// child, `kube-proxy-rs xtables-restore`).
pub fn hold_blocking(file: Option<&str>, wait: Duration) -> std::io::Result<Option<File>> {
    let lock = OpenOptions::new().create(true).truncate(false).write(true).open(path(file))?;
    let deadline = Instant::now() + wait;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(Some(lock)),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(RETRY),
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(err)) => return Err(err),
        }
    }
}
