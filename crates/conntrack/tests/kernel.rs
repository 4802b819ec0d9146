//! Stale-flow cleanup on a real conntrack table, in a network namespace of
//! its own: flows are injected with `conntrack -I` (as NAT would have left
//! them), the cleanup runs for a snapshot, and exactly the stale ones are
//! gone. Needs root; without it the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use conntrack::apply::{apply_stale_flow_cleanup, list_udp_flows};
use conntrack::{Deletion, UdpFlow};
use model::{Endpoint, IpFamily, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::IpAddr;
use std::sync::Arc;
use testkit::netns::Netns;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Injects a UDP flow `client:sport -> dst:dport` answered by `reply_src`.
fn inject(ns: &Netns, client: &str, sport: u16, dst: &str, dport: u16, reply_src: &str) {
    let (sport, dport) = (sport.to_string(), dport.to_string());
    let args = [
        "-I", "-p", "udp", "-s", client, "-d", dst, "--sport", &sport, "--dport", &dport, "-r", reply_src, "-q", client,
        "--reply-port-src", "5353", "--reply-port-dst", &sport, "-t", "120",
    ];
    ns.exec("conntrack", &args).unwrap();
}

/// ns/dns:dns, UDP 10.96.0.10:53 with node port 30053, endpoint 10.244.1.4 only.
fn snapshot() -> Snapshot {
    let name = ServicePortName::new("ns", "dns", "dns", Protocol::Udp);
    let mut svc = ServicePort::cluster_ip(name.clone(), ip("10.96.0.10"), 53);
    svc.node_port = Some(30053);
    let mut snapshot = Snapshot::default();
    snapshot.services.insert(name.clone(), Arc::new(svc));
    snapshot.endpoints.insert(name, Arc::new(vec![Endpoint::ready(ip("10.244.1.4"), 5353, None, false)]));
    snapshot
}

#[test]
fn only_stale_udp_flows_are_deleted() {
    testkit::netns::require_kernel();
    let ns = Netns::new("ctstale").unwrap();
    inject(&ns, "10.244.0.5", 4000, "10.96.0.10", 53, "10.244.1.3"); // removed endpoint: stale
    inject(&ns, "10.244.0.5", 4001, "10.96.0.10", 53, "10.244.1.4"); // serving endpoint: kept
    inject(&ns, "10.244.0.6", 4002, "10.96.0.10", 53, "10.96.0.10"); // never NATed: stale now
    inject(&ns, "172.20.0.9", 4003, "192.168.0.2", 30053, "10.244.1.3"); // node port, removed endpoint
    inject(&ns, "10.244.0.5", 4004, "8.8.8.8", 53, "8.8.8.8"); // not a service: kept

    let deletions = ns
        .run(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let deleted = apply_stale_flow_cleanup(&snapshot(), &[ip("192.168.0.2")], IpFamily::V4).await.unwrap();
                (deleted, list_udp_flows(IpFamily::V4).await.unwrap())
            })
        })
        .unwrap();
    let (deleted, left) = deletions;
    let d = |dst: &str, dport, reply_src: &str| Deletion { dst: ip(dst), dport, reply_src: ip(reply_src) };
    assert_eq!(
        deleted,
        vec![d("10.96.0.10", 53, "10.96.0.10"), d("10.96.0.10", 53, "10.244.1.3"), d("192.168.0.2", 30053, "10.244.1.3")]
    );
    let f = |dst: &str, dport, reply_src: &str| UdpFlow { orig_dst: ip(dst), orig_dport: dport, reply_src: ip(reply_src) };
    let mut left = left;
    left.sort_by_key(|flow| flow.orig_dst);
    assert_eq!(left, vec![f("8.8.8.8", 53, "8.8.8.8"), f("10.96.0.10", 53, "10.244.1.4")]);
}
