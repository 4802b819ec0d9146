//! One tracker serving both families: each object reaches the family it
//! belongs to, warnings and change counts come once.

use super::support::*;
use crate::{IpFamily, Problem, Tracker};
use serde_json::json;

fn dual_stack() -> Tracker {
    Tracker::with_families("node-a", IpFamily::V4, &[IpFamily::V6])
}

fn dual_service() -> k8s_openapi::api::core::v1::Service {
    service(
        "ns",
        "dual",
        json!({"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1", "fd00::1"], "ipFamilies": ["IPv4", "IPv6"],
               "ports": [{"name": "http", "port": 80}]}),
    )
}

fn v6_slice() -> k8s_openapi::api::discovery::v1::EndpointSlice {
    slice_full(json!({
        "metadata": {"namespace": "ns", "name": "dual-v6", "labels": {"kubernetes.io/service-name": "dual"}},
        "addressType": "IPv6",
        "ports": http_port(8080),
        "endpoints": [ep("fd00:10::1", "node-a")],
    }))
}

#[test]
fn each_family_gets_its_cluster_ip_and_its_endpoints() {
    let mut t = dual_stack();
    assert_eq!(t.families(), [IpFamily::V4, IpFamily::V6]);
    assert!(t.upsert_service(&dual_service()).is_empty());
    assert!(t.upsert_service(&plain_service("ns", "v4-only", "10.96.0.2")).is_empty());
    assert!(t.upsert_endpoint_slice(&slice("ns", "dual-v4", Some("dual"), http_port(8080), json!([ep("10.0.0.1", "node-a")]))).is_empty());
    assert!(t.upsert_endpoint_slice(&v6_slice()).is_empty());

    let (v4, changes_v4) = t.snapshot_of(IpFamily::V4).unwrap();
    assert_eq!(v4.services.len(), 2);
    assert_eq!(v4.services[&tcp("ns", "dual", "http")].cluster_ip, ip("10.96.0.1"));
    let v4_eps: Vec<_> = v4.endpoints[&tcp("ns", "dual", "http")].iter().map(|e| e.ip).collect();
    assert_eq!(v4_eps, [ip("10.0.0.1")]);
    assert_eq!(changes_v4.services.len(), 2);

    assert!(t.has_changes_of(IpFamily::V6), "taking the IPv4 snapshot leaves IPv6's changes pending");
    let (v6, changes_v6) = t.snapshot_of(IpFamily::V6).unwrap();
    assert_eq!(v6.services.len(), 1, "the IPv4-only service is not in the IPv6 snapshot");
    assert_eq!(v6.services[&tcp("ns", "dual", "http")].cluster_ip, ip("fd00::1"));
    let v6_eps: Vec<_> = v6.endpoints[&tcp("ns", "dual", "http")].iter().map(|e| e.ip).collect();
    assert_eq!(v6_eps, [ip("fd00:10::1")]);
    assert_eq!(changes_v6.services.len(), 1);
    assert!(!t.has_changes());
}

#[test]
fn a_change_of_one_family_marks_only_that_family() {
    let mut t = dual_stack();
    t.upsert_service(&dual_service());
    t.snapshot_of(IpFamily::V4);
    t.snapshot_of(IpFamily::V6);
    t.upsert_endpoint_slice(&v6_slice());
    assert!(t.has_changes_of(IpFamily::V6));
    assert!(!t.has_changes_of(IpFamily::V4), "an IPv6 slice changes nothing of IPv4");
}

#[test]
fn the_node_addresses_of_each_family_go_to_that_family() {
    let mut t = dual_stack();
    t.upsert_node(&node(json!({
        "metadata": {"name": "node-a"},
        "status": {"addresses": [{"type": "InternalIP", "address": "192.168.0.2"}, {"type": "InternalIP", "address": "fd00:192::2"}]},
    })));
    assert_eq!(t.snapshot_of(IpFamily::V4).unwrap().0.node.addresses, [ip("192.168.0.2")]);
    assert_eq!(t.snapshot_of(IpFamily::V6).unwrap().0.node.addresses, [ip("fd00:192::2")]);
}

#[test]
fn a_problem_every_family_finds_is_one_warning_and_an_event_counts_once() {
    let mut t = dual_stack();
    let bad = service("ns", "bad", json!({"clusterIP": "not-an-ip", "ports": [{"port": 80}]}));
    let warnings = t.upsert_service(&bad);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(matches!(warnings[0].problem, Problem::BadClusterIp(_)));
    t.upsert_service(&dual_service());
    assert_eq!(t.take_change_counts().service_changes, 1, "the dual-stack service is one change, as upstream counts it");
}

#[test]
fn a_family_not_served_has_no_snapshot() {
    let mut t = Tracker::new("node-a");
    assert_eq!(t.families(), [IpFamily::V4]);
    assert!(t.snapshot_of(IpFamily::V6).is_none());
}

#[test]
fn host_ips_are_the_first_internal_ip_then_the_first_of_the_other_family() {
    let n = node(json!({
        "metadata": {"name": "node-a"},
        "status": {"addresses": [
            {"type": "ExternalIP", "address": "203.0.113.1"},
            {"type": "Hostname", "address": "node-a"},
            {"type": "InternalIP", "address": "fd00:192::2"},
            {"type": "InternalIP", "address": "fd00:192::3"},
            {"type": "InternalIP", "address": "not-an-ip"},
            {"type": "InternalIP", "address": "192.168.0.2"},
        ]},
    }));
    assert_eq!(crate::node_host_ips(&n), [ip("fd00:192::2"), ip("192.168.0.2")]);
    let external_only = node(json!({"metadata": {"name": "b"}, "status": {"addresses": [{"type": "ExternalIP", "address": "203.0.113.1"}]}}));
    assert_eq!(crate::node_host_ips(&external_only), [ip("203.0.113.1")]);
    assert!(crate::node_host_ips(&node(json!({"metadata": {"name": "c"}}))).is_empty());
}
