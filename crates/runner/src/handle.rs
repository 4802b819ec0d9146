//! The cheap, cloneable side of the runner: request a sync, open the
//! start-up gate, stop, and read the timestamps health checks need.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio::time::Instant;

/// What the runner has done, for `/healthz` and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// When [`Handle::ready`] was called, if it has been.
    pub ready_at: Option<Instant>,
    /// The most recent [`Handle::run`] request.
    pub last_queued: Option<Instant>,
    /// The oldest request not yet covered by a successful sync (upstream's
    /// "oldest pending queued" time). `None`: nothing is waiting.
    pub oldest_pending: Option<Instant>,
    /// When the last successful sync finished.
    pub last_sync: Option<Instant>,
    /// When the last sync (successful or not) started.
    pub last_attempt: Option<Instant>,
    /// Failed syncs since the last successful one.
    pub consecutive_failures: u32,
    /// Syncs run so far, successful or not.
    pub syncs: u64,
}

/// State shared between handles and the loop.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) status: Status,
    pub(crate) requested: bool,
    pub(crate) stopping: bool,
    pub(crate) in_sync: bool,
    /// First request made while the current sync runs: it stays pending
    /// after that sync even when the sync succeeds.
    pub(crate) queued_during_sync: Option<Instant>,
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
    pub(crate) wake: Notify,
}

impl Shared {
    /// Locks the state; a poisoned lock (a panic while held) still holds
    /// consistent plain data, so it is used as is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Asks a [`crate::Runner`] for syncs. Clone it freely; all clones drive
/// the same runner.
#[derive(Clone, Debug)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl Handle {
    /// Requests a sync. Requests made before the next sync starts are
    /// coalesced into that one sync; it starts once `min_interval` has
    /// passed since the previous sync started (and any failure backoff is
    /// over).
    pub fn run(&self) {
        let now = Instant::now();
        let mut st = self.shared.lock();
        st.requested = true;
        st.status.last_queued = Some(now);
        st.status.oldest_pending.get_or_insert(now);
        if st.in_sync {
            st.queued_during_sync.get_or_insert(now);
        }
        drop(st);
        self.shared.wake.notify_one();
    }

    /// Opens the start-up gate: the initial state is complete, syncs may run.
    /// The first sync starts at once. Calling it again does nothing.
    pub fn ready(&self) {
        let mut st = self.shared.lock();
        if st.status.ready_at.is_none() {
            st.status.ready_at = Some(Instant::now());
        }
        drop(st);
        self.shared.wake.notify_one();
    }

    /// Stops the runner after the sync in progress, if any.
    pub fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_one();
    }

    /// A snapshot of the runner's timestamps and counters.
    pub fn status(&self) -> Status {
        self.shared.lock().status
    }
}
