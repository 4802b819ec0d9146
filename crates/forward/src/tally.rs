//! A listener's live counters (atomics shared by its tasks), read as
//! [`Counters`].

use crate::Counters;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counters one listener's tasks update.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    connections: AtomicU64,
    active: AtomicU64,
    failed: AtomicU64,
    /// Bytes from clients to endpoints.
    pub(crate) bytes_in: AtomicU64,
    /// Bytes from endpoints to clients.
    pub(crate) bytes_out: AtomicU64,
}

impl Tally {
    /// Counts a connection or session opened; it is active until the
    /// returned guard drops.
    pub(crate) fn open(&self) -> Active<'_> {
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.active.fetch_add(1, Ordering::Relaxed);
        Active(self)
    }

    /// Counts a connection no endpoint took.
    pub(crate) fn fail(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    pub(crate) fn read(&self) -> Counters {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Counters {
            connections: get(&self.connections),
            active: get(&self.active),
            failed: get(&self.failed),
            bytes_in: get(&self.bytes_in),
            bytes_out: get(&self.bytes_out),
        }
    }
}

/// An open connection or session: counted active while it lives.
pub(crate) struct Active<'a>(&'a Tally);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Adds `bytes` to `counter`.
pub(crate) fn add(counter: &AtomicU64, bytes: usize) {
    counter.fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
}
