//! What upstream's change trackers count for the
//! `sync_proxy_rules_{service,endpoint}_changes_{total,pending}` metrics:
//! the Service and EndpointSlice events that changed what the proxy uses,
//! and the changes waiting for the next snapshot.
//!
//! Upstream also counts updates that change nothing the proxy uses; here
//! they are not counted, because sources that deliver whole states (the
//! manifests file re-read, a re-list) hand the tracker every object again,
//! and counting those would add every object on every read.

use model::ServiceName;
use foldhash::HashSet;

/// The change counts a metrics owner reads after feeding events
/// ([`crate::Tracker::take_change_counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeCounts {
    /// Service events that changed something since the counts were last
    /// taken: what `sync_proxy_rules_service_changes_total` grows by.
    pub service_changes: u64,
    /// EndpointSlice events that changed something since the counts were
    /// last taken: what `sync_proxy_rules_endpoint_changes_total` grows by.
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
    /// A Service event changed the service `name`.
    pub(crate) fn service_changed(&mut self, name: &ServiceName) {
        self.service_events += 1;
        self.pending_services.insert(name.clone());
    }

    /// An EndpointSlice event changed what the tracker holds.
    pub(crate) fn slice_changed(&mut self) {
        self.slice_events += 1;
        self.pending_slice_changes += 1;
    }

    /// A snapshot took every pending change.
    pub(crate) fn snapshot_taken(&mut self) {
        self.pending_services = HashSet::default();
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
