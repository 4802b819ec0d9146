//! Re-reading the manifests file when it changes.
//!
//! A tokio task checks the file every `poll`: when its modification time,
//! size or inode differ from the last read (or the last read was so soon
//! after a write that a second write in the same timestamp tick could have
//! been missed), it reads the file and compares a hash of the content.
//! Changed content that parses is sent on; content that does not parse, or
//! a file that cannot be read, is logged once and the last good state
//! stays (nothing is sent), so a half-written file never wipes the rules.

use super::Parsed;
use super::decode::parse_named;
use crate::Error;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

/// How often the file is checked unless told otherwise.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// A file modified less than this long before it was read is read again at
/// the next poll even if its metadata looks the same (file timestamps are
/// coarse: two writes can share one).
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// A watched manifests file: the state read at start and the later ones.
#[derive(Debug)]
pub struct Watch {
    /// The state when watching started.
    pub initial: Parsed,
    /// Every later state: one per content change that parsed. The watcher
    /// stops when this receiver is dropped.
    pub updates: mpsc::Receiver<Parsed>,
}

/// Reads `path` now (an error if it cannot be read or is not YAML: the
/// start-up check) and starts a tokio task that checks it every `poll` and
/// sends each new good state. Must be called inside a tokio runtime.
pub fn watch(path: impl Into<PathBuf>, poll: Duration) -> Result<Watch, Error> {
    let path = path.into();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Err(Error::NoRuntime { path });
    };
    let (initial, seen) = read_state(&path)?;
    let (tx, updates) = mpsc::channel(1);
    runtime.spawn(poll_file(path, poll, seen, tx));
    Ok(Watch { initial, updates })
}

/// What the watcher knows of the file as last read.
#[derive(Debug, Clone, Default)]
struct Seen {
    stamp: Option<Stamp>,
    hash: u64,
    racy: bool,
    /// The read error last logged, until a read succeeds again.
    read_failing: Option<String>,
}

/// File metadata that changes when the file is rewritten or replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: (u64, u64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode: (meta.dev(), meta.ino()),
        }
    }

    /// Modified so recently that a later write could carry the same time.
    fn is_racy(&self) -> bool {
        let now = SystemTime::now();
        self.modified
            .is_none_or(|m| now.duration_since(m).unwrap_or_default() < RACY_WINDOW)
    }
}

fn hash_of(text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Reads and parses the file, with what the watcher needs to notice the
/// next change.
fn read_state(path: &Path) -> Result<(Parsed, Seen), Error> {
    let read_err = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let stamp = Stamp::of(&std::fs::metadata(path).map_err(read_err)?);
    let text = std::fs::read_to_string(path).map_err(read_err)?;
    let parsed = parse_named(&path.display().to_string(), &text)?;
    let seen = Seen {
        racy: stamp.is_racy(),
        stamp: Some(stamp),
        hash: hash_of(&text),
        read_failing: None,
    };
    Ok((parsed, seen))
}

async fn poll_file(path: PathBuf, poll: Duration, mut seen: Seen, tx: mpsc::Sender<Parsed>) {
    let mut ticker = tokio::time::interval(poll);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = tx.closed() => return,
        }
        if let Some(parsed) = check_once(&path, &mut seen).await
            && tx.send(parsed).await.is_err()
        {
            return;
        }
    }
}

/// One poll: the new state if the content changed and parses.
async fn check_once(path: &Path, seen: &mut Seen) -> Option<Parsed> {
    let stamp = match tokio::fs::metadata(path).await {
        Ok(meta) => Stamp::of(&meta),
        Err(err) => return read_failed(seen, path, err),
    };
    if seen.stamp.as_ref() == Some(&stamp) && !seen.racy {
        return None;
    }
    let text = match tokio::fs::read_to_string(path).await {
        Ok(text) => text,
        Err(err) => return read_failed(seen, path, err),
    };
    seen.read_failing = None;
    seen.racy = stamp.is_racy();
    seen.stamp = Some(stamp);
    let hash = hash_of(&text);
    if hash == seen.hash {
        return None;
    }
    seen.hash = hash;
    let origin = path.display().to_string();
    match tokio::task::spawn_blocking(move || parse_named(&origin, &text)).await {
        Ok(Ok(parsed)) => {
            tracing::info!(path = %path.display(), "manifests changed: {} services, {} endpoint slices, {} nodes",
                parsed.objects.services.len(), parsed.objects.endpoint_slices.len(), parsed.objects.nodes.len());
            Some(parsed)
        }
        Ok(Err(err)) => {
            tracing::warn!("{err}; keeping the last good state");
            None
        }
        Err(join) => {
            tracing::error!(path = %path.display(), "parsing manifests failed: {join}");
            None
        }
    }
}

/// Logs a read error once (until a read succeeds again) and forgets the
/// stamp so the file is read again as soon as it is back.
fn read_failed(seen: &mut Seen, path: &Path, source: std::io::Error) -> Option<Parsed> {
    let message = Error::Read {
        path: path.to_path_buf(),
        source,
    }
    .to_string();
    if seen.read_failing.as_deref() != Some(message.as_str()) {
        tracing::warn!("{message}; keeping the last good state");
        seen.read_failing = Some(message);
    }
    seen.stamp = None;
    None
}
