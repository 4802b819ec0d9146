//! The upstream v1.36 reference scenario (`testdata/upstream-v1.36/
//! cluster.yaml`, seen from node-a) built by hand the way the tracker would
//! hand it to a backend (headless, ExternalName and `service-proxy-name`
//! services left out): every mode's golden tests cross-check their parsed
//! input against it, and the IPVS tests render it directly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use ipnet::IpNet;
use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::IpAddr;
use std::sync::Arc;

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

/// The reference snapshot, as node-a sees it.
pub fn snapshot() -> Snapshot {
    let mut snap = Snapshot {
        node: NodeInfo {
            name: "node-a".into(),
            addresses: vec![ip("192.168.86.2")],
            pod_cidrs: vec![net("10.244.0.0/24")],
            deleting: false,
            zone: None,
        },
        ..Snapshot::default()
    };
    for (port, endpoints) in services() {
        if !endpoints.is_empty() {
            snap.endpoints.insert(port.name.clone(), Arc::new(endpoints));
        }
        snap.services.insert(port.name.clone(), Arc::new(port));
    }
    snap
}

/// A TCP service port `ns/name:port_name` at `cluster_ip:port`.
pub fn port(ns: &str, name: &str, port_name: &str, cluster_ip: &str, port: u16) -> ServicePort {
    ServicePort::cluster_ip(ServicePortName::new(ns, name, port_name, Protocol::Tcp), ip(cluster_ip), port)
}

/// Endpoints `ip@node[cond]` on port `target`: node `a` is local, `-` has
/// no node name; `!` not ready, `~` terminating and serving, `x` terminating and not serving.
pub fn eps(target: u16, specs: &[&str]) -> Vec<Endpoint> {
    let mut out: Vec<Endpoint> = specs.iter().map(|s| ep(target, s)).collect();
    out.sort();
    out
}

fn ep(target: u16, spec: &str) -> Endpoint {
    let (addr, rest) = spec.split_once('@').unwrap();
    let (node, cond) = rest.split_at(1);
    let node_name = (node != "-").then(|| format!("node-{node}"));
    let mut ep = Endpoint::ready(ip(addr), target, node_name.as_deref(), node == "a");
    match cond {
        "" => {}
        "!" => (ep.ready, ep.serving) = (false, false),
        "~" => (ep.ready, ep.terminating) = (false, true),
        "x" => (ep.ready, ep.serving, ep.terminating) = (false, false, true),
        other => panic!("bad condition {other}"),
    }
    ep
}

pub fn nodeport(mut p: ServicePort, node_port: u16, etp_local: bool) -> ServicePort {
    p.node_port = Some(node_port);
    p.external_policy_local = etp_local;
    p
}

pub fn lb(mut p: ServicePort, ips: &[&str], health_check: Option<u16>) -> ServicePort {
    p.load_balancer_ips = ips.iter().map(|s| ip(s)).collect();
    p.health_check_node_port = health_check;
    p
}

/// Scenarios 1-17 of the corpus README (10, 14 and 15 are dropped by the
/// tracker) plus `default/kubernetes`.
pub fn services() -> Vec<(ServicePort, Vec<Endpoint>)> {
    let mut cart = port("storefront", "cart", "grpc", "10.96.10.20", 7000);
    cart.session_affinity_seconds = Some(600);
    let mut frontend =
        lb(nodeport(port("storefront", "frontend", "https", "10.96.10.60", 443), 31443, false), &["192.0.2.10", "192.0.2.11"], None);
    frontend.load_balancer_source_ranges = vec![net("172.20.0.0/28"), net("192.168.86.0/24")];
    let mut legacy = port("storefront", "legacy", "http", "10.96.10.80", 8000);
    legacy.external_ips = vec![ip("192.0.2.50")];
    let mut metrics = port("ops", "node-metrics", "metrics", "10.96.10.110", 9100);
    metrics.internal_policy_local = true;
    let mut audit = port("ops", "audit", "http", "10.96.10.111", 80);
    audit.internal_policy_local = true;
    let mut dns = port("kube-system", "cluster-dns", "dns", "10.96.10.120", 53);
    dns.name.protocol = Protocol::Udp;
    vec![
        (port("default", "kubernetes", "https", "10.96.0.1", 443), eps(6443, &["192.168.77.1@-"])),
        (port("storefront", "web", "http", "10.96.10.10", 80), eps(8080, &["10.244.0.11@a", "10.244.1.11@b", "10.244.2.11@c"])),
        (cart, eps(7000, &["10.244.0.12@a", "10.244.1.12@b", "10.244.2.12@c"])),
        (nodeport(port("storefront", "catalog", "http", "10.96.10.30", 80), 30080, false), eps(8080, &["10.244.1.13@b", "10.244.2.13@c"])),
        (nodeport(port("storefront", "checkout", "https", "10.96.10.40", 443), 30443, true), eps(8443, &["10.244.0.14@a", "10.244.1.14@b"])),
        (nodeport(port("storefront", "inventory", "http", "10.96.10.51", 8080), 30808, true), eps(8080, &["10.244.1.15@b", "10.244.2.15@c"])),
        (
            lb(nodeport(port("storefront", "search", "http", "10.96.10.52", 9200), 31920, true), &["192.0.2.52"], Some(32052)),
            eps(9200, &["10.244.1.16@b", "10.244.2.16@c"]),
        ),
        (frontend, eps(8443, &["10.244.0.17@a", "10.244.2.17@c"])),
        (
            lb(nodeport(port("storefront", "api", "http", "10.96.10.70", 80), 30700, true), &["192.0.2.20"], Some(32070)),
            eps(8080, &["10.244.0.18@a", "10.244.0.19@a", "10.244.1.18@b"]),
        ),
        (legacy, eps(8000, &["10.244.1.20@b", "10.244.2.20@c"])),
        (nodeport(port("storefront", "coming-soon", "http", "10.96.10.90", 80), 30090, false), vec![]),
        (metrics, eps(9100, &["10.244.0.22@a", "10.244.1.22@b", "10.244.2.22@c"])),
        (audit, eps(8080, &["10.244.1.23@b", "10.244.2.23@c"])),
        (dns, eps(5353, &["10.244.0.24@a", "10.244.2.24@c"])),
        (port("kube-system", "cluster-dns", "dns-tcp", "10.96.10.120", 53), eps(5353, &["10.244.0.24@a", "10.244.2.24@c"])),
        (port("storefront", "shop", "http", "10.96.10.121", 80), eps(8080, &["10.244.1.25@b", "10.244.2.25@c"])),
        (port("storefront", "shop", "https", "10.96.10.121", 443), eps(8443, &["10.244.1.25@b", "10.244.2.25@c"])),
        (port("storefront", "old-release", "http", "10.96.10.130", 80), eps(8080, &["10.244.0.26@a~", "10.244.1.26@b~", "10.244.2.26@cx"])),
        (port("storefront", "reviews", "http", "10.96.10.160", 80), eps(8080, &["10.244.0.28@a", "10.244.1.28@b!"])),
        (
            lb(nodeport(port("storefront", "gateway", "http", "10.96.10.170", 80), 30170, true), &["192.0.2.30"], Some(32170)),
            eps(8080, &["10.244.0.29@a~", "10.244.2.29@c"]),
        ),
    ]
}
