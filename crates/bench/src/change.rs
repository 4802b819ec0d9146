//! One change to the cluster state through the manifests file, timed from
//! the moment the new file is in place to the proxy's next sync line.
//!
//! The interval includes: the watcher noticing the file (it polls every
//! second, so 0–1 s of it is waiting), reading and parsing the whole file,
//! the tracker taking the new state, the runner starting the sync (min
//! sync period 0), rendering and applying. The "manifests changed" log
//! line splits it into detection + parse, and the rest.

use crate::proxy_process::ProxyProcess;
use crate::sync_line::{MANIFESTS_CHANGED, SyncLine, parse_sync_line};
use anyhow::{Context, Result};
use std::path::Path;
use std::time::{Duration, Instant};

/// The timings of one change.
#[derive(Debug, Clone)]
pub struct ChangeTiming {
    /// New file in place → sync line.
    pub total: Duration,
    /// New file in place → watcher logged the parsed state.
    pub detect_and_parse: Duration,
    /// Watcher logged the parsed state → sync line (tracker, runner, render, apply).
    pub after_parse: Duration,
    /// The sync's own figures.
    pub sync: SyncLine,
}

/// Writes `text` to `path` atomically (temporary file + rename), as a
/// config-management tool would.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("rename to {}", path.display()))
}

/// Puts `text` in place and waits (until `cap`) for the sync it causes
/// (the log line containing `synced`); `None` if the cap passed first.
pub fn measure_change(
    proxy: &mut ProxyProcess,
    path: &Path,
    text: &str,
    synced: &str,
    cap: Duration,
) -> Result<Option<ChangeTiming>> {
    write_atomically(path, text)?;
    let start = Instant::now();
    let deadline = start + cap;
    let Some(parsed) = proxy.wait_for(MANIFESTS_CHANGED, deadline)? else {
        return Ok(None);
    };
    let Some(synced) = proxy.wait_for(synced, deadline)? else {
        return Ok(None);
    };
    Ok(Some(ChangeTiming {
        total: synced.at - start,
        detect_and_parse: parsed.at - start,
        after_parse: synced.at - parsed.at,
        sync: parse_sync_line(&synced.text),
    }))
}
