//! After a sync: delete the UDP conntrack entries that still send clients
//! to endpoints that are gone (see the `conntrack` crate), and record the
//! cleanup as upstream's conntrack reconciler metrics. A failure is a
//! warning; the rules are in place either way.

use health::Metrics;
use model::{IpFamily, Snapshot};
use std::time::{Duration, Instant};

/// What one cleanup did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconciled {
    /// How long listing and deleting took.
    pub took: Duration,
    /// Conntrack entries deleted.
    pub deleted: u64,
}

/// Deletes stale UDP flows for `snapshot` and records the cleanup in
/// `conntrack_reconciler_sync_duration_seconds` and
/// `conntrack_reconciler_deleted_entries_total` (not after a failure, as
/// upstream records nothing when it cannot list the flows).
pub async fn reconcile_stale_udp_flows(snapshot: &Snapshot, metrics: &Metrics) {
    if let Some(reconciled) = clean_stale_udp_flows(snapshot).await {
        metrics.record_conntrack_reconcile(IpFamily::V4, reconciled.took, reconciled.deleted);
    }
}

/// Deletes stale UDP flows for `snapshot` (nothing is listed when it has no
/// UDP service); node ports are matched on the Node object's addresses (and
/// loopback), so the sync reads no interface addresses for this. `None`
/// when the cleanup failed.
pub async fn clean_stale_udp_flows(snapshot: &Snapshot) -> Option<Reconciled> {
    let start = Instant::now();
    match conntrack::apply::apply_stale_flow_cleanup(snapshot, &snapshot.node.addresses, IpFamily::V4).await {
        Ok(deleted) => {
            if !deleted.is_empty() {
                tracing::info!(entries = deleted.len(), "deleted stale UDP conntrack entries");
            }
            Some(Reconciled { took: start.elapsed(), deleted: deleted.len() as u64 })
        }
        Err(err) => {
            tracing::warn!(%err, "cannot clean stale UDP conntrack entries");
            None
        }
    }
}
