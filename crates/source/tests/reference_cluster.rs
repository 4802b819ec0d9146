//! The reference cluster (examples/cluster.yaml, a copy of upstream's
//! corpus scenario file) through the manifests parser and the tracker.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use model::{Protocol, ServicePortName, Snapshot};
use std::net::IpAddr;
use std::path::PathBuf;
use tracker::Tracker;

fn cluster_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster.yaml")
}

fn snapshot() -> Snapshot {
    let parsed = source::manifests::load(cluster_path()).expect("reference cluster parses");
    let mut tracker = Tracker::new("node-a");
    let warnings = tracker.replace_all(&parsed.objects);
    assert!(warnings.is_empty(), "{warnings:?}");
    tracker.snapshot().0
}

fn spn(ns: &str, name: &str, port: &str) -> ServicePortName {
    ServicePortName::new(ns, name, port, Protocol::Tcp)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn counts_of_each_kind() {
    let parsed = source::manifests::load(cluster_path()).unwrap();
    assert_eq!(parsed.objects.services.len(), 21);
    assert_eq!(parsed.objects.endpoint_slices.len(), 21);
    assert_eq!(parsed.objects.nodes.len(), 3);
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn ignored_services_have_no_ports() {
    let snap = snapshot();
    let names: Vec<String> = snap
        .services
        .keys()
        .map(|k| k.service.to_string())
        .collect();
    for skipped in [
        "storefront/db",
        "storefront/partner-api",
        "storefront/mesh-only",
    ] {
        assert!(
            !names.iter().any(|n| n == skipped),
            "{skipped} should be skipped"
        );
    }
    // 21 services: db, partner-api, mesh-only skipped; cluster-dns and shop have 2 ports.
    assert_eq!(snap.services.len(), 20);
}

#[test]
fn web_merges_two_slices() {
    let snap = snapshot();
    let eps = snap.endpoints_of(&spn("storefront", "web", "http"));
    let addrs: Vec<String> = eps.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        addrs,
        ["10.244.0.11:8080", "10.244.1.11:8080", "10.244.2.11:8080"]
    );
    assert_eq!(eps.iter().filter(|e| e.is_local).count(), 1);
    assert!(eps[0].is_local);
}

#[test]
fn old_release_conditions() {
    let snap = snapshot();
    let eps = snap.endpoints_of(&spn("storefront", "old-release", "http"));
    let conds: Vec<(IpAddr, bool, bool, bool)> = eps
        .iter()
        .map(|e| (e.ip, e.ready, e.serving, e.terminating))
        .collect();
    assert_eq!(
        conds,
        [
            (ip("10.244.0.26"), false, true, true),
            (ip("10.244.1.26"), false, true, true),
            (ip("10.244.2.26"), false, false, true),
        ]
    );
}

#[test]
fn service_fields() {
    let snap = snapshot();
    let frontend = &snap.services[&spn("storefront", "frontend", "https")];
    assert_eq!(frontend.cluster_ip, ip("10.96.10.60"));
    assert_eq!(frontend.node_port, Some(31443));
    assert_eq!(
        frontend.load_balancer_ips,
        [ip("192.0.2.10"), ip("192.0.2.11")]
    );
    let ranges: Vec<String> = frontend
        .load_balancer_source_ranges
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(ranges, ["172.20.0.0/28", "192.168.86.0/24"]);
    assert!(!frontend.external_policy_local);

    let search = &snap.services[&spn("storefront", "search", "http")];
    assert!(search.external_policy_local);
    assert_eq!(search.health_check_node_port, Some(32052));

    let cart = &snap.services[&spn("storefront", "cart", "grpc")];
    assert_eq!(cart.session_affinity_seconds, Some(600));

    let legacy = &snap.services[&spn("storefront", "legacy", "http")];
    assert_eq!(legacy.external_ips, [ip("192.0.2.50")]);
    assert_eq!(legacy.node_port, None);

    assert!(snap.services[&spn("ops", "audit", "http")].internal_policy_local);
    let dns = ServicePortName::new("kube-system", "cluster-dns", "dns", Protocol::Udp);
    assert_eq!(snap.services[&dns].port, 53);
    assert_eq!(snap.endpoints_of(&dns).len(), 2);
    assert_eq!(snap.endpoints_of(&dns)[0].port, 5353);
    assert!(
        snap.endpoints_of(&spn("storefront", "coming-soon", "http"))
            .is_empty()
    );
}

#[test]
fn our_node() {
    let snap = snapshot();
    assert_eq!(snap.node.name, "node-a");
    assert_eq!(snap.node.addresses, [ip("192.168.86.2")]);
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
