//! After a sync: delete the UDP conntrack entries that still send clients
//! to endpoints that are gone (see the `conntrack` crate). A failure is a
//! warning; the rules are in place either way.

use model::{IpFamily, Snapshot};

/// Deletes stale UDP flows for `snapshot` (nothing is listed when it has no
/// UDP service); node ports are matched on the Node object's addresses (and
/// loopback), so the sync reads no interface addresses for this.
pub async fn clean_stale_udp_flows(snapshot: &Snapshot) {
    match conntrack::apply::apply_stale_flow_cleanup(snapshot, &snapshot.node.addresses, IpFamily::V4).await {
        Ok(deleted) if !deleted.is_empty() => tracing::info!(?deleted, "deleted stale UDP conntrack entries"),
        Ok(_) => {}
        Err(err) => tracing::warn!(%err, "cannot clean stale UDP conntrack entries"),
    }
}
