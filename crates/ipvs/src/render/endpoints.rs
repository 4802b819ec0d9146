//! Which endpoints become real servers of a virtual server (upstream's
//! `syncEndpoint`): the cluster endpoints, or for a traffic-policy-Local
//! path the local ones — falling back to the cluster endpoints when there
//! is no local one, so pods on the node can still reach the service
//! (upstream PR 97081).

use crate::RealServer;
use plan::PortPlan;

/// NAT-mode real servers, weight 1, sorted, for `plan`'s path that is
/// node-local when `only_local`.
pub(super) fn real_servers(plan: &PortPlan<'_>, only_local: bool) -> Vec<RealServer> {
    let chosen = if only_local && !plan.local.is_empty() { &plan.local } else { &plan.cluster };
    let mut servers: Vec<RealServer> = chosen.iter().map(|ep| RealServer::masquerade(ep.ip, ep.port)).collect();
    servers.sort_by_key(RealServer::addr);
    servers.dedup_by_key(|rs| rs.addr());
    servers
}
