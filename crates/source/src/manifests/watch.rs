//! Re-reading the manifests file when it changes, feeding the tracker.
//!
//! A tokio task checks the file when [`Wake`] says it was written, and
//! every `poll` in any case: when its modification time,
//! size or inode differ from the last read (or the last read was so soon
//! after a write that a second write in the same timestamp tick could have
//! been missed), it hashes the file's content as it streams through a
//! small buffer, and only if that differs from the last read's reads the
//! file again, line by line, keeping the text of new documents only.
//! Changed content that passes the [`Checked`] test replaces the tracker's
//! state object by object; content that does not, or a file that cannot
//! be read, is logged once and the last good state stays (nothing is
//! touched), so a half-written file never wipes the rules.

use super::content_hash::hash_file;
use super::replace::{Held, Known, Replaced};
use super::{Checked, FileRead};
use super::wake::Wake;
use crate::{Error, SourceEvent};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tracker::Tracker;

/// How often the file is checked unless told otherwise.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// A file modified less than this long before it was read is read again at
/// the next poll even if its metadata looks the same (file timestamps are
/// coarse: two writes can share one).
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// A manifests file to watch, read and checked once; [`run`] feeds it to
/// the tracker.
#[derive(Debug)]
pub struct Watch {
    path: PathBuf,
    poll: Duration,
    initial: Checked,
    seen: Seen,
    release: Option<fn()>,
}

impl Watch {
    /// Calls `release` while a read is fed to the tracker, after every few
    /// MiB of its text freed (see [`Held::releasing_with`]).
    pub fn releasing_with(mut self, release: fn()) -> Self {
        self.release = Some(release);
        self
    }

    /// The file as read when watching started.
    pub fn initial(&self) -> &Checked {
        &self.initial
    }
}

/// Reads and checks `path` now (an error if it cannot be read or is not
/// YAML: the start-up check, before anything is touched); [`run`] checks
/// it every `poll` afterwards.
pub fn watch(path: impl Into<PathBuf>, poll: Duration) -> Result<Watch, Error> {
    let path = path.into();
    let (initial, seen) = read_state(&path)?;
    Ok(Watch {
        path,
        poll,
        initial,
        seen,
        release: None,
    })
}

/// Makes the file's content the state of `tracker`, then each new good
/// content it is rewritten with, calling `on_event` as described on
/// [`SourceEvent`] (once the first read is in; after a re-read that left
/// changes). Runs until the future is dropped.
///
/// Spawn it: `tokio::spawn(source::manifests::run(watch, tracker, on_event))`.
pub async fn run<F>(watch: Watch, tracker: Arc<Mutex<Tracker>>, on_event: F)
where
    F: Fn(SourceEvent) + Send + Sync,
{
    let Watch {
        path,
        poll,
        initial,
        mut seen,
        release,
    } = watch;
    let held = match release {
        Some(release) => Held::default().releasing_with(release),
        None => Held::default(),
    };
    let (mut held, replaced) = replace(held, initial, &tracker).await;
    tracing::info!(path = %path.display(), "manifests read: {}", summary(&replaced));
    on_event(SourceEvent::InitialListDone);
    let mut ticker = tokio::time::interval(poll);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    let mut wake = Wake::new(&path);
    loop {
        match wake.as_mut() {
            Some(wake) => tokio::select! {
                _ = ticker.tick() => {}
                () = wake.written() => {}
            },
            None => _ = ticker.tick().await,
        }
        let Some(checked) = check_once(&path, &mut seen, &held).await else {
            continue;
        };
        let replaced;
        (held, replaced) = replace(held, checked, &tracker).await;
        tracing::info!(path = %path.display(), "manifests changed: {}", summary(&replaced));
        if tracker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .has_changes()
        {
            on_event(SourceEvent::Changed);
        }
    }
}

/// Feeds `checked` to the tracker off the async threads (it takes seconds
/// for a large file), then drops its text.
async fn replace(
    mut held: Held,
    checked: Checked,
    tracker: &Arc<Mutex<Tracker>>,
) -> (Held, Replaced) {
    let tracker = Arc::clone(tracker);
    let work = tokio::task::spawn_blocking(move || {
        let replaced = held.replace(checked, &tracker);
        (held, replaced)
    });
    work.await.unwrap_or_else(|join| {
        // Only a bug gets here; what the next read cannot find to delete
        // stays until a restart.
        tracing::error!("applying the manifests failed: {join}");
        (Held::default(), Replaced::default())
    })
}

fn summary(r: &Replaced) -> String {
    format!(
        "{} services, {} endpoint slices, {} nodes, {} service CIDRs; {} objects gone; {} documents skipped; {} documents decoded",
        r.services, r.endpoint_slices, r.nodes, r.service_cidrs, r.deleted, r.skipped, r.decoded
    )
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

/// Reads and checks the file, with what the watcher needs to notice the
/// next change.
fn read_state(path: &Path) -> Result<(Checked, Seen), Error> {
    let read_err = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let stamp = Stamp::of(&std::fs::metadata(path).map_err(read_err)?);
    let FileRead { hash, checked } = Checked::read_after(path, &Known::default())?;
    let checked = checked?;
    let seen = Seen {
        racy: stamp.is_racy(),
        stamp: Some(stamp),
        hash,
        read_failing: None,
    };
    Ok((checked, seen))
}

/// One poll: the new content if it changed and passes the check.
/// Only the documents `held` does not hold yet are checked.
async fn check_once(path: &Path, seen: &mut Seen, held: &Held) -> Option<Checked> {
    let stamp = match tokio::fs::metadata(path).await {
        Ok(meta) => Stamp::of(&meta),
        Err(err) => return read_failed(seen, path, err),
    };
    if seen.stamp.as_ref() == Some(&stamp) && !seen.racy {
        return None;
    }
    let streamed = {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || hash_file(&path)).await
    };
    match streamed {
        Ok(Ok(hash)) if hash == seen.hash => {
            seen.read_failing = None;
            seen.racy = stamp.is_racy();
            seen.stamp = Some(stamp);
            return None;
        }
        Ok(Err(err)) => return read_failed(seen, path, err),
        // changed, or hashing could not run: read it again
        Ok(Ok(_)) | Err(_) => {}
    }
    let read = {
        let path = path.to_path_buf();
        let known = held.known();
        tokio::task::spawn_blocking(move || Checked::read_after(&path, &known)).await
    };
    let FileRead { hash, checked } = match read {
        Ok(Ok(read)) => read,
        Ok(Err(Error::Read { source, .. })) => return read_failed(seen, path, source),
        Ok(Err(err)) => {
            tracing::warn!("{err}; keeping the last good state");
            return None;
        }
        Err(join) => {
            tracing::error!(path = %path.display(), "reading the manifests failed: {join}");
            return None;
        }
    };
    seen.read_failing = None;
    seen.racy = stamp.is_racy();
    seen.stamp = Some(stamp);
    if hash == seen.hash {
        return None;
    }
    seen.hash = hash;
    checked
        .inspect_err(|err| tracing::warn!("{err}; keeping the last good state"))
        .ok()
}

/// Logs a read error once (until a read succeeds again) and forgets the
/// stamp so the file is read again as soon as it is back.
fn read_failed(seen: &mut Seen, path: &Path, source: std::io::Error) -> Option<Checked> {
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
