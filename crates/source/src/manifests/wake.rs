//! Waking the manifests watcher as soon as the file was written: inotify
//! on the file's directory, for a write closed in place (`IN_CLOSE_WRITE`)
//! or a file renamed over it (`IN_MOVED_TO`, how editors and atomic
//! writers replace it: a new inode, which a watch on the file itself
//! would miss). Not on every `IN_MODIFY`: a file still being written is
//! not read half-way because of it. The poll stays as the fall-back
//! (inotify unavailable, or a write it does not see, such as one from
//! another machine over a network file system).
//!
//! The events are read on a thread of their own (a blocking read: no
//! unsafe registration of the descriptor with the runtime); it ends at the
//! first event after the watcher is gone.

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::ffi::OsString;
use std::path::Path;
use tokio::sync::mpsc;

/// Wake-ups for one file.
pub struct Wake {
    written: mpsc::Receiver<()>,
}

impl Wake {
    /// Watches `path`'s directory; `None` (logged) when that cannot be
    /// done, leaving the poll alone.
    pub fn new(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_os_string();
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let watched = Inotify::init(InitFlags::IN_CLOEXEC).and_then(|inotify| {
            inotify.add_watch(
                dir,
                AddWatchFlags::IN_CLOSE_WRITE | AddWatchFlags::IN_MOVED_TO,
            )?;
            Ok(inotify)
        });
        let inotify = match watched {
            Ok(inotify) => inotify,
            Err(err) => {
                tracing::info!(dir = %dir.display(), %err, "no inotify on the manifests file's directory: polling only");
                return None;
            }
        };
        // One pending wake-up is enough: the watcher reads the file as it is then.
        let (tx, written) = mpsc::channel(1);
        let spawned = std::thread::Builder::new()
            .name("manifests-inotify".into())
            .spawn(move || forward(&inotify, &name, &tx));
        match spawned {
            Ok(_) => Some(Self { written }),
            Err(err) => {
                tracing::info!(%err, "cannot start the inotify thread: polling only");
                None
            }
        }
    }

    /// Returns once the file was written or replaced; never, once the
    /// thread reading the events has ended.
    pub async fn written(&mut self) {
        if self.written.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

/// Sends a wake-up for each batch of events that names the file, until
/// reading fails or nobody listens.
fn forward(inotify: &Inotify, name: &OsString, tx: &mpsc::Sender<()>) {
    loop {
        let events = match inotify.read_events() {
            Ok(events) => events,
            Err(err) => {
                tracing::warn!(%err, "reading inotify events failed: polling only");
                return;
            }
        };
        if !events.iter().any(|e| e.name.as_ref() == Some(name)) {
            continue;
        }
        match tx.try_send(()) {
            Ok(()) | Err(mpsc::error::TrySendError::Full(())) => {}
            Err(mpsc::error::TrySendError::Closed(())) => return,
        }
    }
}
