//! What upstream's change trackers count for the
//! `sync_proxy_rules_{service,endpoint}_changes_{total,pending}` metrics:
//! every Service and EndpointSlice event the tracker accepts, and the
//! changes waiting for the next snapshot.

use model::ServiceName;
use std::collections::HashSet;

/// The change counts a metrics owner reads after feeding events
/// ([`crate::Tracker::take_change_counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeCounts {
    /// Service events accepted since the counts were last taken: what
    /// `sync_proxy_rules_service_changes_total` grows by.
    pub service_changes: u64,
    /// EndpointSlice events accepted since the counts were last taken:
    /// what `sync_proxy_rules_endpoint_changes_total` grows by.
    pub endpoint_changes: u64,
    /// Services whose Service object changed something the proxy uses
    /// since the last snapshot (`sync_proxy_rules_service_changes_pending`).
    pub service_changes_pending: usize,
    /// EndpointSlice events that changed something since the last
    /// snapshot (`sync_proxy_rules_endpoint_changes_pending`).
    pub endpoint_changes_pending: usize,
}

/// The tracker's running counts behind [`ChangeCounts`].
#[derive(Debug, Default)]
pub(crate) struct ChangeCounter {
    service_events: u64,
    slice_events: u64,
    pending_services: HashSet<ServiceName>,
    pending_slice_changes: usize,
}

impl ChangeCounter {
    /// One Service event was accepted; `changed` when it changed `name`.
    pub(crate) fn service_event(&mut self, name: &ServiceName, changed: bool) {
        self.service_events += 1;
        if changed {
            self.pending_services.insert(name.clone());
        }
    }

    /// One EndpointSlice event was accepted; `changed` when it changed
    /// what the tracker holds.
    pub(crate) fn slice_event(&mut self, changed: bool) {
        self.slice_events += 1;
        if changed {
            self.pending_slice_changes += 1;
        }
    }

    /// A snapshot took every pending change.
    pub(crate) fn snapshot_taken(&mut self) {
        self.pending_services = HashSet::new();
        self.pending_slice_changes = 0;
    }

    /// The events counted since the last call, and what is pending now.
    pub(crate) fn take(&mut self) -> ChangeCounts {
        ChangeCounts {
            service_changes: std::mem::take(&mut self.service_events),
            endpoint_changes: std::mem::take(&mut self.slice_events),
            service_changes_pending: self.pending_services.len(),
            endpoint_changes_pending: self.pending_slice_changes,
        }
    }
}
