//! After a sync: delete the UDP conntrack entries that still send clients
//! to endpoints that are gone (see the `conntrack` crate). A failure is a
//! warning; the rules are in place either way.

use model::{IpFamily, Protocol, Snapshot};

/// Deletes stale UDP flows for `snapshot`, if it has any UDP service.
pub async fn clean_stale_udp_flows(snapshot: &Snapshot) {
    if !snapshot.services.keys().any(|name| name.protocol == Protocol::Udp) {
        return;
    }
    let node_ips = match iptables::apply::read_local_addresses().await {
        Ok(ips) => ips,
        Err(err) => {
            tracing::warn!(%err, "cannot read the node's addresses; node-port UDP flows are not cleaned");
            Vec::new()
        }
    };
    match conntrack::apply::apply_stale_flow_cleanup(snapshot, &node_ips, IpFamily::V4).await {
        Ok(deleted) if !deleted.is_empty() => tracing::info!(?deleted, "deleted stale UDP conntrack entries"),
        Ok(_) => {}
        Err(err) => tracing::warn!(%err, "cannot clean stale UDP conntrack entries"),
    }
}
