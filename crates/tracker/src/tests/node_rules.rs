//! Node → NodeInfo rules.

use super::support::*;
use crate::{Problem, Tracker};
use serde_json::{Value, json};

fn node_a(spec: Value, status: Value) -> k8s_openapi::api::core::v1::Node {
    node(json!({"metadata": {"name": "node-a"}, "spec": spec, "status": status}))
}

#[test]
fn addresses_internal_then_external_and_pod_cidrs() {
    let mut t = Tracker::new("node-a");
    let n = node_a(
        json!({"podCIDRs": ["10.244.0.0/24", "fd00:10::/64"]}),
        json!({"addresses": [
            {"type": "ExternalIP", "address": "203.0.113.5"},
            {"type": "Hostname", "address": "node-a"},
            {"type": "InternalIP", "address": "192.168.86.2"},
            {"type": "InternalIP", "address": "fd00::2"},
        ]}),
    );
    assert!(t.upsert_node(&n).is_empty());
    let (snap, changes) = t.snapshot();
    assert!(changes.node_changed);
    assert_eq!(snap.node.name, "node-a");
    assert_eq!(snap.node.addresses, [ip("192.168.86.2"), ip("203.0.113.5")]);
    assert_eq!(
        snap.node
            .pod_cidrs
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>(),
        ["10.244.0.0/24"]
    );
    assert!(!snap.node.deleting);
}

#[test]
fn pod_cidr_fallback_and_bad_values_warned() {
    let mut t = Tracker::new("node-a");
    let n = node_a(
        json!({"podCIDR": "10.244.0.0/24"}),
        json!({"addresses": [{"type": "InternalIP", "address": "node-a.example"}, {"type": "InternalIP", "address": "192.168.86.2"}]}),
    );
    let w = t.upsert_node(&n);
    assert_eq!(w.len(), 1);
    assert_eq!(
        w[0].problem,
        Problem::BadNodeAddress("node-a.example".into())
    );
    assert_eq!(w[0].object(), "Node node-a");
    let snap = t.snapshot().0;
    assert_eq!(snap.node.addresses, [ip("192.168.86.2")]);
    assert_eq!(snap.node.pod_cidrs.len(), 1);

    let w = t.upsert_node(&node_a(json!({"podCIDRs": ["10.244.0.0/33"]}), json!({})));
    assert_eq!(w[0].problem, Problem::BadPodCidr("10.244.0.0/33".into()));
}

#[test]
fn deleting_by_timestamp_or_autoscaler_taint() {
    let mut t = Tracker::new("node-a");
    let tainted = node_a(
        json!({"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}),
        json!({}),
    );
    t.upsert_node(&tainted);
    assert!(t.snapshot().0.node.deleting);
    let other_taint = node_a(
        json!({"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}),
        json!({}),
    );
    t.upsert_node(&other_taint);
    assert!(!t.snapshot().0.node.deleting);
    let going =
        node(json!({"metadata": {"name": "node-a", "deletionTimestamp": "2026-01-01T00:00:00Z"}}));
    t.upsert_node(&going);
    assert!(t.snapshot().0.node.deleting);
}

#[test]
fn other_nodes_do_not_matter() {
    let mut t = Tracker::new("node-a");
    let b = node(
        json!({"metadata": {"name": "node-b"}, "status": {"addresses": [{"type": "InternalIP", "address": "bad"}]}}),
    );
    assert!(t.upsert_node(&b).is_empty());
    t.delete_node(&b);
    let (snap, changes) = t.snapshot();
    assert!(changes.is_empty());
    assert!(snap.node.addresses.is_empty());
}

#[test]
fn node_changed_only_when_addresses_or_cidrs_change() {
    let mut t = Tracker::new("node-a");
    let base = node_a(
        json!({"podCIDRs": ["10.244.0.0/24"]}),
        json!({"addresses": [{"type": "InternalIP", "address": "192.168.86.2"}]}),
    );
    t.upsert_node(&base);
    assert!(t.snapshot().1.node_changed);
    t.upsert_node(&base);
    assert!(!t.snapshot().1.node_changed, "same node again");
    let mut labelled = base.clone();
    labelled.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    t.upsert_node(&labelled);
    assert!(t.snapshot().1.is_empty(), "labels do not matter");
    let moved = node_a(
        json!({"podCIDRs": ["10.244.9.0/24"]}),
        json!({"addresses": [{"type": "InternalIP", "address": "192.168.86.2"}]}),
    );
    t.upsert_node(&moved);
    assert!(t.snapshot().1.node_changed);
    t.delete_node(&moved);
    let (snap, changes) = t.snapshot();
    assert!(changes.node_changed);
    assert_eq!(snap.node.name, "node-a");
    assert!(snap.node.addresses.is_empty() && snap.node.pod_cidrs.is_empty());
}
