//! The loop that decides when to call the sync function: after the gate
//! opens, at once; then whenever a request, a retry or the periodic resync
//! is due, never sooner than `min_interval` after the previous start.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::Periods;
use crate::handle::{Handle, Shared};

/// Why a sync runs, so a backend can choose a partial or a full sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The first sync after [`Handle::ready`]: sync everything.
    Initial,
    /// Someone called [`Handle::run`]: changes are waiting.
    Requested,
    /// `max_interval` passed with no sync: resync everything.
    Periodic,
    /// The previous sync failed: resync everything.
    Retry,
}

impl Trigger {
    /// True when upstream would do a full sync for this reason.
    pub fn wants_full_sync(self) -> bool {
        !matches!(self, Trigger::Requested)
    }
}

/// Calls `sync` within the bounds of [`Periods`]; drive it with
/// [`Runner::run_loop`] (or [`Runner::spawn`]) and control it through its
/// [`Handle`].
pub struct Runner<F> {
    name: &'static str,
    periods: Periods,
    sync: F,
    shared: Arc<Shared>,
}

/// Timing of the last sync, kept by the loop.
struct Timing {
    last_start: Instant,
    next_periodic: Instant,
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl<F, Fut, E> Runner<F>
where
    F: FnMut(Trigger) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    /// A runner named `name` (for logs) that calls `sync`, and its handle.
    pub fn new(name: &'static str, periods: Periods, sync: F) -> (Runner<F>, Handle) {
        let shared = Arc::new(Shared::default());
        let handle = Handle {
            shared: Arc::clone(&shared),
        };
        (
            Runner {
                name,
                periods,
                sync,
                shared,
            },
            handle,
        )
    }

    /// Runs syncs until [`Handle::stop`]. Nothing runs before
    /// [`Handle::ready`].
    pub async fn run_loop(mut self) {
        if !wait_until_ready(&self.shared).await {
            return;
        }
        let mut trigger = Trigger::Initial;
        let mut timing = Timing {
            last_start: Instant::now(),
            next_periodic: Instant::now(),
            retry_at: None,
            backoff: self.periods.initial_backoff(),
        };
        loop {
            self.sync_once(trigger, &mut timing).await;
            match wait_for_trigger(&self.shared, &self.periods, &timing).await {
                Some(next) => trigger = next,
                None => return,
            }
        }
    }

    /// Runs the sync function once and updates status and timing.
    async fn sync_once(&mut self, trigger: Trigger, timing: &mut Timing) {
        let start = Instant::now();
        {
            let mut st = self.shared.lock();
            st.requested = false;
            st.in_sync = true;
            st.queued_during_sync = None;
            st.status.last_attempt = Some(start);
        }
        let result = (self.sync)(trigger).await;
        let end = Instant::now();
        let mut st = self.shared.lock();
        st.in_sync = false;
        st.status.syncs += 1;
        timing.last_start = start;
        timing.next_periodic = end + self.periods.max_interval();
        match result {
            Ok(()) => {
                st.status.last_sync = Some(end);
                st.status.consecutive_failures = 0;
                st.status.oldest_pending = st.queued_during_sync;
                timing.retry_at = None;
                timing.backoff = self.periods.initial_backoff();
            }
            Err(err) => {
                st.status.consecutive_failures += 1;
                tracing::warn!(
                    runner = self.name,
                    ?trigger,
                    error = %err,
                    retry_in = ?timing.backoff,
                    failures = st.status.consecutive_failures,
                    "sync failed; will retry"
                );
                timing.retry_at = Some(end + timing.backoff);
                timing.backoff = self.periods.next_backoff(timing.backoff);
            }
        }
    }
}

/// Waits for the gate; false when stopped first.
async fn wait_until_ready(shared: &Shared) -> bool {
    loop {
        {
            let st = shared.lock();
            if st.stopping {
                return false;
            }
            if st.status.ready_at.is_some() {
                return true;
            }
        }
        shared.wake.notified().await;
    }
}

/// Sleeps until the next sync is due and says why; `None` when stopped.
async fn wait_for_trigger(shared: &Shared, periods: &Periods, timing: &Timing) -> Option<Trigger> {
    loop {
        let (requested, stopping) = {
            let st = shared.lock();
            (st.requested, st.stopping)
        };
        if stopping {
            return None;
        }
        let (when, trigger) = next_due(periods, timing, requested);
        if Instant::now() >= when {
            return Some(trigger);
        }
        tokio::select! {
            _ = sleep_until(when) => {}
            _ = shared.wake.notified() => {}
        }
    }
}

/// The earliest due sync: a retry or a request (each no sooner than
/// `min_interval` after the last start), else the periodic resync.
fn next_due(periods: &Periods, timing: &Timing, requested: bool) -> (Instant, Trigger) {
    let earliest = timing.last_start + periods.min_interval();
    let asked = match timing.retry_at {
        Some(at) => Some((at.max(earliest), Trigger::Retry)),
        None if requested => Some((earliest, Trigger::Requested)),
        None => None,
    };
    match asked {
        Some((at, trigger)) if at <= timing.next_periodic => (at, trigger),
        _ => (timing.next_periodic.max(earliest), Trigger::Periodic),
    }
}

impl<F, Fut, E> Runner<F>
where
    F: FnMut(Trigger) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Display + 'static,
{
    /// Starts [`Runner::run_loop`] on the current tokio runtime.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run_loop())
    }
}
