//! Endpoint selection shared by every backend (upstream's
//! `CategorizeEndpoints`): which endpoints serve cluster traffic and which
//! serve traffic that must stay on this node, with topology-aware routing
//! (EndpointSlice hints) applied to cluster traffic.
//!
//! Topology follows upstream v1.36's proxy: only the hints count. The
//! Service's `spec.trafficDistribution` and its `topology-mode` /
//! `topology-aware-hints` annotations tell the EndpointSlice controller
//! whether to write hints; the proxy itself does not read them.

use crate::{Endpoint, NodeInfo, ServicePort};

/// What topology-aware routing needs to know of this node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeTopology<'a> {
    /// The node's name (as `forNodes` hints name it); empty when unknown.
    pub name: &'a str,
    /// The node's `topology.kubernetes.io/zone`, if known.
    pub zone: Option<&'a str>,
}

impl<'a> NodeTopology<'a> {
    /// The topology facts of `node`.
    pub fn of(node: &'a NodeInfo) -> Self {
        Self { name: &node.name, zone: node.zone.as_deref() }
    }
}

/// Which endpoints cluster traffic uses (upstream's topology mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TopologyMode {
    /// Every endpoint: no usable hints.
    #[default]
    Unfiltered,
    /// Endpoints hinted for this node's zone.
    PreferSameZone,
    /// Endpoints hinted for this node.
    PreferSameNode,
}

/// The endpoints of one service port, sorted by role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CategorizedEndpoints<'a> {
    /// Endpoints for cluster-wide traffic: the ready ones (only those the
    /// topology mode picks), or, when no endpoint is ready anywhere, the
    /// serving and terminating ones. Empty when the port never uses
    /// cluster endpoints (ITP Local without an ETP Cluster external path).
    pub cluster: Vec<&'a Endpoint>,
    /// Endpoints for traffic that must stay on this node (ITP or ETP Local):
    /// the local ready ones, or else the local serving and terminating ones.
    /// Topology never applies here.
    pub local: Vec<&'a Endpoint>,
    /// Every endpoint some traffic can reach (`cluster` ∪ `local`), in input
    /// order: backends create per-endpoint state for these.
    pub all_reachable: Vec<&'a Endpoint>,
    /// At least one usable endpoint exists anywhere. When false the service
    /// rejects traffic ("has no endpoints") instead of dropping it.
    pub has_any: bool,
    /// How `cluster` was narrowed by hints.
    pub topology: TopologyMode,
}

/// Sorts `endpoints` of `svc` into the traffic roles above, on the node
/// `node`.
pub fn categorize_endpoints<'a>(
    svc: &ServicePort,
    endpoints: &'a [Endpoint],
    node: NodeTopology<'_>,
) -> CategorizedEndpoints<'a> {
    let mut out = CategorizedEndpoints::default();
    if svc.uses_cluster_endpoints() {
        out.topology = topology_mode_from_hints(endpoints, node);
        out.cluster = ready_or_serving_terminating(endpoints, |ep| available_for_topology(ep, out.topology, node));
        out.has_any = !out.cluster.is_empty();
    }
    if !svc.uses_local_endpoints() {
        out.all_reachable = out.cluster.clone();
        return out;
    }
    out.has_any |= endpoints.iter().any(usable);
    out.local = ready_or_serving_terminating_local(endpoints);
    out.all_reachable = union_in_order(endpoints, &out.cluster, &out.local);
    out
}

/// The topology mode the hints of the ready `endpoints` allow on `node`
/// (upstream's `topologyModeFromHints`): same node when every ready
/// endpoint has node hints and one is hinted for this node; else same
/// zone when every ready endpoint has zone hints and one is hinted for
/// this node's zone; else none. All or nothing: one ready endpoint
/// without hints turns topology off.
pub fn topology_mode_from_hints(endpoints: &[Endpoint], node: NodeTopology<'_>) -> TopologyMode {
    let mut ready = endpoints.iter().filter(|ep| ep.ready).peekable();
    if ready.peek().is_none() {
        return TopologyMode::Unfiltered;
    }
    let (mut all_node_hints, mut for_node, mut all_zone_hints, mut for_zone) = (true, false, true, false);
    for ep in ready {
        let Some(hints) = ep.hints.as_deref() else {
            return TopologyMode::Unfiltered;
        };
        all_node_hints &= hints.has_node_hints();
        for_node |= hints.for_node(node.name);
        all_zone_hints &= hints.has_zone_hints();
        for_zone |= node.zone.is_some_and(|zone| hints.for_zone(zone));
    }
    if all_node_hints && for_node {
        TopologyMode::PreferSameNode
    } else if all_zone_hints && for_zone {
        TopologyMode::PreferSameZone
    } else {
        TopologyMode::Unfiltered
    }
}

/// `ep` may serve this node's cluster traffic under `mode` (upstream's
/// `availableForTopology`; the fallback was decided with the mode).
fn available_for_topology(ep: &Endpoint, mode: TopologyMode, node: NodeTopology<'_>) -> bool {
    let hints = ep.hints.as_deref();
    match mode {
        TopologyMode::Unfiltered => true,
        TopologyMode::PreferSameNode => hints.is_some_and(|h| h.for_node(node.name)),
        TopologyMode::PreferSameZone => hints.is_some_and(|h| node.zone.is_some_and(|zone| h.for_zone(zone))),
    }
}

/// Ready endpoints passing `keep`; if there are none, the serving and
/// terminating ones (whatever `keep` says: topology was already given up
/// when no ready endpoint fits it, so none is ready anywhere).
fn ready_or_serving_terminating(endpoints: &[Endpoint], keep: impl Fn(&Endpoint) -> bool) -> Vec<&Endpoint> {
    let ready: Vec<_> = endpoints.iter().filter(|ep| ep.ready && keep(ep)).collect();
    if !ready.is_empty() {
        return ready;
    }
    endpoints.iter().filter(|ep| ep.serving && ep.terminating).collect()
}

/// Local ready endpoints; if there are none, the local serving and
/// terminating ones.
fn ready_or_serving_terminating_local(endpoints: &[Endpoint]) -> Vec<&Endpoint> {
    let ready: Vec<_> = endpoints.iter().filter(|ep| ep.ready && ep.is_local).collect();
    if !ready.is_empty() {
        return ready;
    }
    endpoints.iter().filter(|ep| ep.serving && ep.terminating && ep.is_local).collect()
}

/// Whether an endpoint could receive traffic under some policy.
fn usable(ep: &Endpoint) -> bool {
    ep.ready || (ep.serving && ep.terminating)
}

fn union_in_order<'a>(all: &'a [Endpoint], a: &[&'a Endpoint], b: &[&'a Endpoint]) -> Vec<&'a Endpoint> {
    all.iter()
        .filter(|ep| a.iter().chain(b).any(|chosen| std::ptr::eq(*chosen, *ep)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EndpointHints, Protocol, ServicePortName};
    use std::net::{IpAddr, Ipv4Addr};

    /// This node: `node-a` in `zone-a`.
    const NODE: NodeTopology<'static> = NodeTopology { name: "node-a", zone: Some("zone-a") };

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 180, 0, last))
    }

    fn svc() -> ServicePort {
        let name = ServicePortName::new("ns", "svc", "p", Protocol::Tcp);
        ServicePort::cluster_ip(name, IpAddr::V4(Ipv4Addr::new(172, 30, 0, 41)), 80)
    }

    fn ep(last: u8, local: bool, ready: bool, serving: bool, terminating: bool) -> Endpoint {
        Endpoint { ready, serving, terminating, ..Endpoint::ready(ip(last), 80, None, local) }
    }

    fn ips(eps: &[&Endpoint]) -> Vec<u8> {
        eps.iter()
            .map(|e| match e.ip {
                IpAddr::V4(v4) => v4.octets()[3],
                IpAddr::V6(_) => 0,
            })
            .collect()
    }

    #[test]
    fn cluster_policy_uses_ready_endpoints_only() {
        let eps = [ep(1, true, true, true, false), ep(2, false, false, true, true), ep(3, false, true, true, false)];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(ips(&c.cluster), [1, 3]);
        assert!(c.local.is_empty());
        assert_eq!(ips(&c.all_reachable), [1, 3]);
        assert!(c.has_any);
    }

    #[test]
    fn falls_back_to_serving_terminating_when_none_ready() {
        let eps = [ep(1, true, false, true, true), ep(2, false, false, true, true), ep(3, false, false, false, true)];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(ips(&c.cluster), [1, 2]);
        assert!(c.has_any);
    }

    #[test]
    fn no_usable_endpoints_means_no_endpoints() {
        let eps = [ep(1, true, false, false, true), ep(2, false, false, false, false)];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert!(c.cluster.is_empty());
        assert!(!c.has_any);
    }

    #[test]
    fn internal_local_uses_only_local_endpoints() {
        let mut s = svc();
        s.internal_policy_local = true;
        let eps = [ep(1, true, true, true, false), ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps, NODE);
        assert!(c.cluster.is_empty());
        assert_eq!(ips(&c.local), [1]);
        assert_eq!(ips(&c.all_reachable), [1]);
        assert!(c.has_any);
    }

    #[test]
    fn internal_local_without_local_endpoints_still_has_some() {
        let mut s = svc();
        s.internal_policy_local = true;
        let eps = [ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps, NODE);
        assert!(c.local.is_empty());
        assert!(c.has_any, "remote endpoints exist: drop, not reject");
    }

    #[test]
    fn external_local_prefers_local_ready_then_local_terminating() {
        let mut s = svc();
        s.node_port = Some(30080);
        s.external_policy_local = true;
        // Scenario 17: the only local endpoint is terminating but serving.
        let eps = [ep(1, true, false, true, true), ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps, NODE);
        assert_eq!(ips(&c.cluster), [2]);
        assert_eq!(ips(&c.local), [1]);
        assert_eq!(ips(&c.all_reachable), [1, 2]);
    }

    #[test]
    fn both_policies_local_still_keep_cluster_endpoints_for_short_circuits() {
        let mut s = svc();
        s.node_port = Some(30080);
        s.internal_policy_local = true;
        s.external_policy_local = true;
        let eps = [ep(1, true, true, true, false), ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps, NODE);
        assert_eq!(ips(&c.cluster), [1, 2], "pod traffic to the NodePort short-circuits to KUBE-SVC");
        assert_eq!(ips(&c.local), [1]);
        assert_eq!(ips(&c.all_reachable), [1, 2]);
    }

    #[test]
    fn external_local_on_cluster_ip_only_service_is_ignored() {
        let mut s = svc();
        s.external_policy_local = true; // not externally accessible
        assert!(!s.uses_local_endpoints());
    }

    /// A ready endpoint hinted for `zones` and `nodes`.
    fn hinted(last: u8, local: bool, zones: &[&str], nodes: &[&str]) -> Endpoint {
        ep(last, local, true, true, false).with_hints(EndpointHints::new(zones.iter().copied(), nodes.iter().copied()))
    }

    #[test]
    fn zone_hints_pick_the_endpoints_of_this_nodes_zone() {
        let eps = [hinted(1, true, &["zone-a"], &[]), hinted(2, false, &["zone-b"], &[]), hinted(3, false, &["zone-a"], &[])];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::PreferSameZone);
        assert_eq!(ips(&c.cluster), [1, 3]);
        assert_eq!(ips(&c.all_reachable), [1, 3]);
        assert!(c.has_any);
    }

    #[test]
    fn an_endpoint_may_be_hinted_for_several_zones() {
        let eps = [hinted(1, false, &["zone-b", "zone-a"], &[]), hinted(2, false, &["zone-b"], &[])];
        assert_eq!(ips(&categorize_endpoints(&svc(), &eps, NODE).cluster), [1]);
    }

    #[test]
    fn one_ready_endpoint_without_hints_turns_topology_off() {
        let eps = [hinted(1, true, &["zone-a"], &[]), hinted(2, false, &["zone-b"], &[]), ep(3, false, true, true, false)];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::Unfiltered);
        assert_eq!(ips(&c.cluster), [1, 2, 3]);
    }

    #[test]
    fn endpoints_that_are_not_ready_need_no_hints() {
        let eps = [hinted(1, false, &["zone-a"], &[]), hinted(2, false, &["zone-b"], &[]), ep(3, false, false, true, true)];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::PreferSameZone);
        assert_eq!(ips(&c.cluster), [1]);
    }

    #[test]
    fn no_endpoint_hinted_for_this_zone_falls_back_to_all() {
        let eps = [hinted(1, true, &["zone-b"], &[]), hinted(2, false, &["zone-c"], &[])];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::Unfiltered);
        assert_eq!(ips(&c.cluster), [1, 2]);
    }

    #[test]
    fn a_node_without_zone_ignores_zone_hints() {
        let eps = [hinted(1, true, &["zone-a"], &[]), hinted(2, false, &["zone-b"], &[])];
        let unzoned = NodeTopology { zone: None, ..NODE };
        let c = categorize_endpoints(&svc(), &eps, unzoned);
        assert_eq!(c.topology, TopologyMode::Unfiltered);
        assert_eq!(ips(&c.cluster), [1, 2]);
    }

    #[test]
    fn node_hints_pick_the_endpoints_hinted_for_this_node() {
        // PreferSameNode: the controller writes node and zone hints.
        let eps = [
            hinted(1, true, &["zone-a"], &["node-a"]),
            hinted(2, false, &["zone-a"], &["node-b"]),
            hinted(3, false, &["zone-b"], &["node-c"]),
        ];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::PreferSameNode);
        assert_eq!(ips(&c.cluster), [1]);
    }

    #[test]
    fn node_hints_for_other_nodes_only_fall_back_to_zone_hints() {
        let eps = [hinted(1, false, &["zone-a"], &["node-b"]), hinted(2, false, &["zone-b"], &["node-c"])];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::PreferSameZone);
        assert_eq!(ips(&c.cluster), [1]);
    }

    #[test]
    fn node_hints_on_some_endpoints_only_fall_back_to_zone_hints() {
        let eps = [hinted(1, true, &["zone-a"], &["node-a"]), hinted(2, false, &["zone-a"], &[]), hinted(3, false, &["zone-b"], &[])];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::PreferSameZone);
        assert_eq!(ips(&c.cluster), [1, 2]);
    }

    #[test]
    fn node_hints_without_zone_hints_fall_back_to_all() {
        let eps = [hinted(1, false, &[], &["node-b"]), hinted(2, false, &[], &["node-c"])];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::Unfiltered);
        assert_eq!(ips(&c.cluster), [1, 2]);
    }

    #[test]
    fn no_ready_endpoint_ignores_hints_and_uses_serving_terminating_ones() {
        let hint = |zone: &str| EndpointHints::new([zone], Vec::<&str>::new());
        let eps = [ep(1, false, false, true, true).with_hints(hint("zone-b")), ep(2, false, false, true, true).with_hints(hint("zone-a"))];
        let c = categorize_endpoints(&svc(), &eps, NODE);
        assert_eq!(c.topology, TopologyMode::Unfiltered);
        assert_eq!(ips(&c.cluster), [1, 2]);
    }

    #[test]
    fn internal_local_wins_over_hints() {
        let mut s = svc();
        s.internal_policy_local = true;
        let eps = [hinted(1, true, &["zone-b"], &[]), hinted(2, false, &["zone-a"], &[])];
        let c = categorize_endpoints(&s, &eps, NODE);
        assert!(c.cluster.is_empty());
        assert_eq!(ips(&c.local), [1], "the local endpoint, though hinted for another zone");
        assert_eq!(ips(&c.all_reachable), [1]);
    }

    #[test]
    fn external_local_keeps_local_endpoints_and_zones_the_cluster_ones() {
        let mut s = svc();
        s.node_port = Some(30080);
        s.external_policy_local = true;
        let eps = [hinted(1, true, &["zone-b"], &[]), hinted(2, false, &["zone-a"], &[]), hinted(3, false, &["zone-b"], &[])];
        let c = categorize_endpoints(&s, &eps, NODE);
        assert_eq!(ips(&c.cluster), [2], "pod and node traffic (cluster) follows the zone hints");
        assert_eq!(ips(&c.local), [1], "external traffic (Local) ignores them");
        assert_eq!(ips(&c.all_reachable), [1, 2]);
    }

    #[test]
    fn node_topology_reads_name_and_zone() {
        let node = NodeInfo { name: "node-x".into(), zone: Some("zone-x".into()), ..NodeInfo::default() };
        assert_eq!(NodeTopology::of(&node), NodeTopology { name: "node-x", zone: Some("zone-x") });
    }
}
