//! Topology: the node's zone label and the endpoints' hints, and what
//! cluster traffic then uses (the Service's trafficDistribution and
//! topology annotations are the EndpointSlice controller's business, not
//! the proxy's).

use super::support::*;
use crate::Tracker;
use model::topology::{NodeTopology, TopologyMode, categorize_endpoints};
use serde_json::{Value, json};

fn node_a(labels: Value) -> k8s_openapi::api::core::v1::Node {
    node(json!({"metadata": {"name": "node-a", "labels": labels}}))
}

/// A ready endpoint on `node` with `hints` (JSON, as in a slice).
fn hinted(addr: &str, node: &str, hints: Value) -> Value {
    json!({"addresses": [addr], "nodeName": node, "conditions": {"ready": true}, "hints": hints})
}

fn zones(names: &[&str]) -> Value {
    json!({"forZones": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()})
}

#[test]
fn the_zone_label_is_the_nodes_zone_and_a_change_marks_the_node() {
    let mut t = Tracker::new("node-a");
    t.upsert_node(&node_a(json!({"topology.kubernetes.io/zone": "zone-a", "other": "x"})));
    let (snap, changes) = t.snapshot();
    assert_eq!(snap.node.zone.as_deref(), Some("zone-a"));
    assert!(changes.node_changed);

    t.upsert_node(&node_a(json!({"topology.kubernetes.io/zone": "zone-a", "other": "y"})));
    assert!(!t.has_changes(), "other labels do not matter");

    t.upsert_node(&node_a(json!({"topology.kubernetes.io/zone": "zone-b"})));
    let (snap, changes) = t.snapshot();
    assert_eq!(snap.node.zone.as_deref(), Some("zone-b"));
    assert!(changes.node_changed, "a new zone re-renders every service");

    t.upsert_node(&node_a(json!({"topology.kubernetes.io/zone": ""})));
    let (snap, changes) = t.snapshot();
    assert_eq!(snap.node.zone, None, "an empty zone label is no zone");
    assert!(changes.node_changed);
}

#[test]
fn zone_and_node_hints_are_read_and_empty_hints_are_none() {
    let mut t = Tracker::new("node-a");
    let eps = json!([
        hinted("10.0.0.1", "node-a", json!({"forZones": [{"name": "zone-b"}, {"name": "zone-a"}], "forNodes": [{"name": "node-a"}]})),
        hinted("10.0.0.2", "node-b", json!({})),
        hinted("10.0.0.3", "node-b", json!({"forZones": []})),
        ep("10.0.0.4", "node-b"),
    ]);
    t.upsert_service(&plain_service("ns", "s", "172.30.0.1"));
    t.upsert_endpoint_slice(&slice("ns", "s-1", Some("s"), http_port(80), eps));
    let snap = t.snapshot().0;
    let eps = snap.endpoints_of(&tcp("ns", "s", "http"));
    let hints = eps[0].hints.as_deref().expect("hints of 10.0.0.1");
    assert_eq!(hints.zones().collect::<Vec<_>>(), ["zone-a", "zone-b"]);
    assert_eq!(hints.nodes().collect::<Vec<_>>(), ["node-a"]);
    assert!(eps[1..].iter().all(|e| e.hints.is_none()), "{eps:?}");
}

#[test]
fn a_hint_change_marks_the_service_changed() {
    let mut t = Tracker::new("node-a");
    let with = |zone: &str| slice("ns", "s-1", Some("s"), http_port(80), json!([hinted("10.0.0.1", "node-a", zones(&[zone]))]));
    t.upsert_service(&plain_service("ns", "s", "172.30.0.1"));
    t.upsert_endpoint_slice(&with("zone-a"));
    t.snapshot();
    t.upsert_endpoint_slice(&with("zone-a"));
    assert!(!t.has_changes());
    t.upsert_endpoint_slice(&with("zone-b"));
    let changes = t.snapshot().1;
    assert_eq!(changes.services.len(), 1);
}

/// Service `ns/s` with `extra` merged into its spec and `annotations`,
/// hinted endpoints on node-a (zone-a) and node-b (zone-b); what node-a
/// in zone-a sends cluster traffic to.
fn cluster_endpoints(extra: Value, annotations: Value, eps: Value) -> (TopologyMode, Vec<String>) {
    let mut spec = json!({"clusterIP": "172.30.0.1", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let svc = service_full(json!({"metadata": {"namespace": "ns", "name": "s", "annotations": annotations}, "spec": spec}));
    let mut t = Tracker::new("node-a");
    t.upsert_node(&node_a(json!({"topology.kubernetes.io/zone": "zone-a"})));
    t.upsert_service(&svc);
    t.upsert_endpoint_slice(&slice("ns", "s-1", Some("s"), http_port(80), eps));
    let snap = t.snapshot().0;
    let name = tcp("ns", "s", "http");
    let c = categorize_endpoints(&snap.services[&name], snap.endpoints_of(&name), NodeTopology::of(&snap.node));
    (c.topology, c.cluster.iter().map(|e| e.ip.to_string()).collect())
}

fn zone_hinted() -> Value {
    json!([hinted("10.0.0.1", "node-a", zones(&["zone-a"])), hinted("10.0.0.2", "node-b", zones(&["zone-b"]))])
}

#[test]
fn hints_decide_whatever_the_service_says() {
    let same_zone = (TopologyMode::PreferSameZone, vec!["10.0.0.1".to_string()]);
    assert_eq!(cluster_endpoints(json!({}), json!({}), zone_hinted()), same_zone, "no annotation, no trafficDistribution");
    assert_eq!(
        cluster_endpoints(json!({}), json!({"service.kubernetes.io/topology-mode": "Disabled"}), zone_hinted()),
        same_zone,
        "the annotation only steers the EndpointSlice controller (upstream ≥ 1.33)"
    );
    assert_eq!(
        cluster_endpoints(json!({}), json!({"service.kubernetes.io/topology-aware-hints": "disabled"}), zone_hinted()),
        same_zone
    );
    let unhinted = json!([ep("10.0.0.1", "node-a"), ep("10.0.0.2", "node-b")]);
    let all = (TopologyMode::Unfiltered, vec!["10.0.0.1".to_string(), "10.0.0.2".to_string()]);
    for distribution in ["PreferClose", "PreferSameZone", "PreferSameNode"] {
        assert_eq!(cluster_endpoints(json!({"trafficDistribution": distribution}), json!({}), unhinted.clone()), all, "{distribution} without hints");
    }
    assert_eq!(cluster_endpoints(json!({}), json!({"service.kubernetes.io/topology-mode": "Auto"}), unhinted), all);
}

#[test]
fn prefer_same_node_hints_pick_this_nodes_endpoints() {
    let eps = json!([
        hinted("10.0.0.1", "node-a", json!({"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-a"}]})),
        hinted("10.0.0.2", "node-c", json!({"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-c"}]})),
    ]);
    let got = cluster_endpoints(json!({"trafficDistribution": "PreferSameNode"}), json!({}), eps);
    assert_eq!(got, (TopologyMode::PreferSameNode, vec!["10.0.0.1".to_string()]));
}

#[test]
fn internal_traffic_policy_local_wins_over_hints() {
    let eps = json!([hinted("10.0.0.1", "node-a", zones(&["zone-b"])), hinted("10.0.0.2", "node-b", zones(&["zone-a"]))]);
    let (_, cluster) = cluster_endpoints(json!({"internalTrafficPolicy": "Local"}), json!({}), eps);
    assert!(cluster.is_empty(), "no cluster-wide traffic: only the local endpoint serves");
}
