//! The plan of one service port: which endpoints serve which traffic,
//! what happens to traffic with nowhere to go, and the addresses of the
//! family it answers on.

use crate::{NoLocalEndpoints, SyncContext};
use ipnet::IpNet;
use model::topology::{TopologyMode, categorize_endpoints};
use model::{Endpoint, IpFamily, ServicePort};
use std::net::IpAddr;

/// How traffic that cannot be served is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No endpoints anywhere: ICMP port unreachable.
    Reject,
    /// Policy Local and none on this node: silently dropped.
    Drop,
}

/// One service port's decisions (upstream's per-service locals in
/// `syncProxyRules`).
#[derive(Debug)]
pub struct PortPlan<'a> {
    /// The service port.
    pub svc: &'a ServicePort,
    /// Endpoints for cluster-wide traffic, in the order given (only those
    /// the topology hints pick for this node, see `topology`).
    pub cluster: Vec<&'a Endpoint>,
    /// How topology hints narrowed `cluster`.
    pub topology: TopologyMode,
    /// Endpoints on this node for traffic-policy-Local traffic.
    pub local: Vec<&'a Endpoint>,
    /// Every endpoint some traffic can reach.
    pub reachable: Vec<&'a Endpoint>,
    /// Some usable endpoint exists anywhere.
    pub has_endpoints: bool,
    /// ClusterIP traffic has somewhere to go.
    pub has_internal: bool,
    /// External traffic has somewhere to go.
    pub has_external: bool,
    /// externalTrafficPolicy Local on an externally accessible port.
    pub external_local: bool,
    /// Cluster-wide balancing over `cluster` is used.
    pub uses_cluster_endpoints: bool,
    /// Node-local balancing over `local` is used.
    pub uses_local_endpoints: bool,
    /// Externally reachable with endpoints: external traffic enters a
    /// per-port external path.
    pub uses_external_path: bool,
    /// ClusterIP traffic that cannot be served.
    pub internal_refusal: Option<Refusal>,
    /// External traffic that cannot be served.
    pub external_refusal: Option<Refusal>,
    /// externalIPs of the family.
    pub external_ips: Vec<IpAddr>,
    /// Load-balancer ingress IPs of the family.
    pub lb_ips: Vec<IpAddr>,
    /// loadBalancerSourceRanges of the family.
    pub source_ranges: Vec<IpNet>,
    /// The source-range firewall applies: endpoints, LB IPs and ranges.
    pub uses_firewall: bool,
    /// A source range holds the node's IP, so the node may reach its own
    /// load-balancer IPs.
    pub source_ranges_hold_node: bool,
    /// ClientIP session affinity timeout in seconds, if any.
    pub affinity_seconds: Option<u32>,
}

impl<'a> PortPlan<'a> {
    /// Plans `svc` with `endpoints` (already of the family and in the order
    /// the mode wants, see [`crate::upstream_order`]).
    pub fn new(ctx: &SyncContext, svc: &'a ServicePort, endpoints: &'a [Endpoint]) -> Self {
        let eps = categorize_endpoints(svc, endpoints, ctx.topology());
        let external_local = svc.external_policy_local && svc.externally_accessible();
        let has_internal = eps.has_any && (!svc.internal_policy_local || !eps.local.is_empty());
        let has_external = eps.has_any && (!external_local || !eps.local.is_empty());
        let lb_ips = of_family(&svc.load_balancer_ips, ctx.family);
        let source_ranges: Vec<IpNet> =
            svc.load_balancer_source_ranges.iter().filter(|n| ctx.family.contains_net(n)).copied().collect();
        Self {
            internal_refusal: refusal(eps.has_any, has_internal),
            external_refusal: refusal(eps.has_any, has_external),
            uses_cluster_endpoints: !eps.cluster.is_empty() && svc.uses_cluster_endpoints(),
            uses_local_endpoints: !eps.local.is_empty() && svc.uses_local_endpoints(),
            uses_external_path: eps.has_any && svc.externally_accessible(),
            uses_firewall: eps.has_any && !lb_ips.is_empty() && !source_ranges.is_empty(),
            source_ranges_hold_node: ctx.node_ip.is_some_and(|ip| source_ranges.iter().any(|r| r.contains(&ip))),
            external_ips: of_family(&svc.external_ips, ctx.family),
            affinity_seconds: svc.session_affinity_seconds,
            has_endpoints: eps.has_any,
            topology: eps.topology,
            cluster: eps.cluster,
            local: eps.local,
            reachable: eps.all_reachable,
            svc,
            has_internal,
            has_external,
            external_local,
            lb_ips,
            source_ranges,
        }
    }

    /// This port's share of the no-local-endpoints counts: its Local
    /// policies that have endpoints elsewhere but none here.
    pub fn no_local_endpoints(&self) -> NoLocalEndpoints {
        NoLocalEndpoints {
            internal: usize::from(self.has_endpoints && !self.has_internal),
            external: usize::from(self.has_endpoints && !self.has_external),
        }
    }
}

/// The refusal for traffic of one kind, if it cannot be served.
fn refusal(has_endpoints: bool, has_for_kind: bool) -> Option<Refusal> {
    if !has_endpoints {
        return Some(Refusal::Reject);
    }
    (!has_for_kind).then_some(Refusal::Drop)
}

fn of_family(ips: &[IpAddr], family: IpFamily) -> Vec<IpAddr> {
    ips.iter().copied().filter(|ip| family.contains(*ip)).collect()
}
