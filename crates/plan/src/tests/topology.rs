//! Topology hints in the plan: cluster traffic follows the node's zone
//! (or node) hints; Local policies do not.

use super::{ep, port, snapshot};
use crate::{NodeFacts, Options, PortPlan, SyncContext};
use model::topology::TopologyMode;
use model::{Endpoint, EndpointHints, ServicePort, Snapshot};

/// node-a of [`snapshot`], in `zone`.
fn zoned(zone: Option<&str>) -> Snapshot {
    let mut snap = snapshot(Vec::new());
    snap.node.zone = zone.map(str::to_string);
    snap
}

fn hinted(addr: &str, local: bool, zones: &[&str], nodes: &[&str]) -> Endpoint {
    ep(addr, local).with_hints(EndpointHints::new(zones.iter().copied(), nodes.iter().copied()))
}

fn addrs(eps: &[&Endpoint]) -> Vec<String> {
    eps.iter().map(|e| e.ip.to_string()).collect()
}

/// Plans `svc` on node-a of `snap`, returning (topology, cluster, local,
/// reachable).
fn plan_on(snap: &Snapshot, svc: &ServicePort, eps: &[Endpoint]) -> (TopologyMode, Vec<String>, Vec<String>, Vec<String>) {
    let ctx = SyncContext::new(snap, &Options::default(), &NodeFacts::default());
    let p = PortPlan::new(&ctx, svc, eps);
    (p.topology, addrs(&p.cluster), addrs(&p.local), addrs(&p.reachable))
}

fn zone_hinted() -> Vec<Endpoint> {
    vec![
        hinted("10.180.0.1", true, &["zone-a"], &[]),
        hinted("10.180.1.1", false, &["zone-b"], &[]),
        hinted("10.180.2.1", false, &["zone-a"], &[]),
    ]
}

#[test]
fn the_context_carries_the_nodes_name_and_zone() {
    let ctx = SyncContext::new(&zoned(Some("zone-a")), &Options::default(), &NodeFacts::default());
    assert_eq!(ctx.topology().name, "node-a");
    assert_eq!(ctx.topology().zone, Some("zone-a"));
}

#[test]
fn cluster_traffic_uses_only_the_zones_endpoints() {
    let (mode, cluster, local, reachable) = plan_on(&zoned(Some("zone-a")), &port("a"), &zone_hinted());
    assert_eq!(mode, TopologyMode::PreferSameZone);
    assert_eq!(cluster, ["10.180.0.1", "10.180.2.1"]);
    assert!(local.is_empty());
    assert_eq!(reachable, cluster, "the other zone's endpoint gets no per-endpoint state");
}

#[test]
fn an_unzoned_node_uses_every_endpoint() {
    let (mode, cluster, _, _) = plan_on(&zoned(None), &port("a"), &zone_hinted());
    assert_eq!(mode, TopologyMode::Unfiltered);
    assert_eq!(cluster.len(), 3);
}

#[test]
fn a_zone_without_hinted_endpoints_uses_every_endpoint() {
    let (mode, cluster, _, _) = plan_on(&zoned(Some("zone-c")), &port("a"), &zone_hinted());
    assert_eq!(mode, TopologyMode::Unfiltered);
    assert_eq!(cluster.len(), 3);
}

#[test]
fn node_hints_name_this_proxys_node() {
    let eps = [
        hinted("10.180.0.1", false, &["zone-a"], &["node-b"]),
        hinted("10.180.1.1", true, &["zone-a"], &["node-a"]),
    ];
    let (mode, cluster, _, _) = plan_on(&zoned(Some("zone-a")), &port("a"), &eps);
    assert_eq!(mode, TopologyMode::PreferSameNode);
    assert_eq!(cluster, ["10.180.1.1"]);
}

#[test]
fn external_local_plans_local_endpoints_outside_the_zone() {
    let svc = ServicePort { node_port: Some(30080), external_policy_local: true, ..port("a") };
    let eps = [hinted("10.180.0.1", true, &["zone-b"], &[]), hinted("10.180.1.1", false, &["zone-a"], &[])];
    let ctx = SyncContext::new(&zoned(Some("zone-a")), &Options::default(), &NodeFacts::default());
    let p = PortPlan::new(&ctx, &svc, &eps);
    assert_eq!(addrs(&p.cluster), ["10.180.1.1"]);
    assert_eq!(addrs(&p.local), ["10.180.0.1"]);
    assert!(p.has_internal && p.has_external);
    assert_eq!(addrs(&p.reachable), ["10.180.0.1", "10.180.1.1"]);
}
