//! Direct dispatch (ours, not upstream's): a ClusterIP-only service port
//! (no NodePort, external or load-balancer IP) with internalTrafficPolicy
//! Cluster, exactly one cluster-wide endpoint and no session affinity
//! needs no chain of its own. Its ClusterIP, protocol and port map straight to the endpoint in
//! `service-ips-direct`, and one fixed rule of `services` DNATs through it
//! (`dnat ip to ip daddr . meta l4proto . th dport map
//! @service-ips-direct`), right after upstream's `vmap @service-ips`.
//!
//! Upstream's table sends such a packet to the port's `service-` chain, whose one rule DNATs it to that endpoint; the fixed
//! rules around it (the ClusterIP masquerade mark before it in
//! `services`, hairpin masquerading, the filter checks) are the same for
//! both. What it saves is the kernel's: a new, changed or removed such
//! port is an element update of a data map, which makes the commit
//! validate nothing, where a chain and its `service-ips` `goto` make it
//! validate every chain reachable from the base chains (O(chains)), and
//! every commit walks one chain fewer per such port.

use super::RenderContext;
use super::service_port::Port;
use plan::PortPlan;
use std::net::IpAddr;

/// The endpoint `port`'s ClusterIP traffic is DNATed to straight from
/// `services`, when the port needs no chain of its own; `None` otherwise
/// (or without direct dispatch).
pub fn direct_target(port: &Port<'_>) -> Option<(IpAddr, u16)> {
    direct_target_of(port.ctx, port.plan)
}

/// [`direct_target`] of a port planned as `plan` in `ctx`.
pub fn direct_target_of(ctx: &RenderContext, plan: &PortPlan) -> Option<(IpAddr, u16)> {
    let chainless = ctx.direct_dispatch
        && plan.affinity_seconds.is_none()
        && plan.internal_refusal.is_none()
        && !plan.svc.internal_policy_local
        && !plan.svc.externally_accessible()
        && plan.uses_cluster_endpoints
        && !plan.uses_local_endpoints;
    if !chainless {
        return None;
    }
    match plan.cluster.as_slice() {
        [ep] => Some((ep.ip, ep.port)),
        _ => None,
    }
}
