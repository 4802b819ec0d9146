use super::*;
use model::{Endpoint, ServicePort, ServicePortName};
use std::sync::Arc;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn flow(dst: &str, dport: u16, reply_src: &str) -> UdpFlow {
    UdpFlow { orig_dst: ip(dst), orig_dport: dport, reply_src: ip(reply_src) }
}

/// ns/dns:dns UDP 10.96.0.10:53 (external IP 192.0.2.53, node port 30053)
/// with `eps`; ns/web:http TCP 10.96.0.20:53 with one endpoint.
fn snapshot(eps: &[&str]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    let dns = ServicePortName::new("ns", "dns", "dns", Protocol::Udp);
    let mut svc = ServicePort::cluster_ip(dns.clone(), ip("10.96.0.10"), 53);
    svc.external_ips = vec![ip("192.0.2.53")];
    svc.node_port = Some(30053);
    snapshot.services.insert(dns.clone(), Arc::new(svc));
    let endpoints = eps.iter().map(|e| Endpoint::ready(ip(e), 5353, None, false)).collect();
    snapshot.endpoints.insert(dns, Arc::new(endpoints));
    let web = ServicePortName::new("ns", "web", "http", Protocol::Tcp);
    snapshot.services.insert(web.clone(), Arc::new(ServicePort::cluster_ip(web.clone(), ip("10.96.0.20"), 53)));
    snapshot.endpoints.insert(web, Arc::new(vec![Endpoint::ready(ip("10.244.9.9"), 53, None, false)]));
    snapshot
}

fn stale(eps: &[&str], flows: &[UdpFlow]) -> Vec<Deletion> {
    find_stale(flows, &ServiceTargets::new(&snapshot(eps), &[ip("192.168.0.2")]))
}

fn deletion(dst: &str, dport: u16, reply_src: &str) -> Deletion {
    Deletion { dst: ip(dst), dport, reply_src: ip(reply_src) }
}

#[test]
fn flows_to_a_removed_endpoint_are_stale_on_every_service_address() {
    let flows = [
        flow("10.96.0.10", 53, "10.244.1.3"),
        flow("10.96.0.10", 53, "10.244.1.4"),
        flow("192.0.2.53", 53, "10.244.1.3"),
        flow("192.168.0.2", 30053, "10.244.1.3"),
        flow("127.0.0.1", 30053, "10.244.1.4"),
    ];
    assert_eq!(
        stale(&["10.244.1.4"], &flows),
        vec![deletion("10.96.0.10", 53, "10.244.1.3"), deletion("192.0.2.53", 53, "10.244.1.3"), deletion("192.168.0.2", 30053, "10.244.1.3")]
    );
}

#[test]
fn un_natted_flows_are_stale_once_the_service_has_endpoints() {
    let flows = [flow("10.96.0.10", 53, "10.96.0.10")];
    assert_eq!(stale(&["10.244.1.4"], &flows), vec![deletion("10.96.0.10", 53, "10.96.0.10")]);
    assert_eq!(stale(&[], &flows), vec![], "no endpoints: nothing better to send them to");
}

#[test]
fn without_endpoints_only_natted_flows_go() {
    let flows = [flow("10.96.0.10", 53, "10.244.1.3"), flow("10.96.0.10", 53, "10.96.0.10")];
    assert_eq!(stale(&[], &flows), vec![deletion("10.96.0.10", 53, "10.244.1.3")]);
}

#[test]
fn other_flows_are_left_alone() {
    let flows = [
        flow("10.96.0.20", 53, "10.244.7.7"),   // a TCP service's address
        flow("10.96.0.10", 54, "10.244.7.7"),   // another port
        flow("8.8.8.8", 53, "8.8.8.8"),         // not a service
        flow("192.168.0.9", 30053, "10.244.7.7"), // a node port, not on this node
    ];
    assert_eq!(stale(&["10.244.1.4"], &flows), vec![]);
}

#[test]
fn repeated_flows_give_one_deletion() {
    let flows = [flow("10.96.0.10", 53, "10.244.1.3"), flow("10.96.0.10", 53, "10.244.1.3")];
    assert_eq!(stale(&["10.244.1.4"], &flows).len(), 1);
}

#[test]
fn every_stale_udp_entry_is_returned_and_other_protocols_are_not() {
    use crate::flow::Tuple;
    let entry = |proto, sport, endpoint: &str| Flow {
        orig: Tuple { proto, src: ip("10.244.0.5"), dst: ip("10.96.0.10"), sport, dport: 53 },
        reply: Tuple { proto, src: ip(endpoint), dst: ip("10.244.0.5"), sport: 5353, dport: sport },
        zone: 0,
    };
    let flows = [entry(17, 4000, "10.244.1.3"), entry(17, 4001, "10.244.1.3"), entry(17, 4002, "10.244.1.4"), entry(6, 4003, "10.244.1.3")];
    let targets = ServiceTargets::new(&snapshot(&["10.244.1.4"]), &[]);
    assert_eq!(find_stale_entries(&flows, &targets), vec![flows[0], flows[1]]);
}
