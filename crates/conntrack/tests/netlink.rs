//! Conntrack over netlink on a real kernel, in network namespaces of their
//! own: UDP flows are made by real datagrams through a DNAT rule (as a
//! proxy's rules would NAT them), listed over netlink with their tuples,
//! and the stale ones deleted in batches. Needs root; without it the tests
//! fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use conntrack::apply::{apply_stale_flow_cleanup, delete_flows, list_flows};
use conntrack::netlink::ConntrackSocket;
use conntrack::{Deletion, Flow, Tuple};
use model::{Endpoint, IpFamily, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::{IpAddr, UdpSocket};
use std::sync::Arc;
use std::time::Instant;
use testkit::netns::Netns;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A namespace with client 10.244.0.5, endpoints 10.244.1.3 and
/// 10.244.1.4 (on loopback), a route to the service range, and UDP to
/// 10.96.0.10:53 DNATed to 10.244.1.3:5353 for source ports below 5000,
/// to 10.244.1.4:5353 for 5000 and above.
fn namespace(label: &str) -> Netns {
    let ns = Netns::new(label).unwrap();
    for addr in ["10.244.0.5/32", "10.244.1.3/32", "10.244.1.4/32"] {
        ns.ip(&["addr", "add", addr, "dev", "lo"]).unwrap();
    }
    ns.ip(&["route", "add", "10.96.0.0/16", "dev", "lo"]).unwrap();
    for (sports, to) in [("1:4999", "10.244.1.3:5353"), ("5000:65535", "10.244.1.4:5353")] {
        let rule = ["-t", "nat", "-A", "OUTPUT", "-p", "udp", "-d", "10.96.0.10", "--dport", "53", "--sport", sports];
        ns.exec("iptables", &[&rule[..], &["-j", "DNAT", "--to-destination", to]].concat()).unwrap();
    }
    ns
}

/// Sends one datagram from 10.244.0.5:`sport` to `dst` inside `ns`:
/// one conntrack entry each.
fn send_from(ns: &Netns, sports: Vec<u16>, dst: &'static str) {
    ns.run(move || {
        for sport in sports {
            let sock = UdpSocket::bind(("10.244.0.5", sport)).unwrap();
            sock.send_to(b"q", dst).unwrap();
        }
    })
    .unwrap();
}

fn block_on<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

fn flows_in(ns: &Netns) -> Vec<Flow> {
    let mut flows: Vec<Flow> =
        ns.run(|| block_on(list_flows(IpFamily::V4)).unwrap()).unwrap().into_iter().filter(|f| f.orig.proto == 17).collect();
    flows.sort();
    flows
}

fn udp(src: &str, dst: &str, sport: u16, dport: u16) -> Tuple {
    Tuple { proto: 17, src: ip(src), dst: ip(dst), sport, dport }
}

/// ns/dns:dns, UDP 10.96.0.10:53, endpoint 10.244.1.4 only.
fn snapshot() -> Snapshot {
    let name = ServicePortName::new("ns", "dns", "dns", Protocol::Udp);
    let svc = ServicePort::cluster_ip(name.clone(), ip("10.96.0.10"), 53);
    let mut snapshot = Snapshot::default();
    snapshot.services.insert(name.clone(), Arc::new(svc));
    snapshot.endpoints.insert(name, Arc::new(vec![Endpoint::ready(ip("10.244.1.4"), 5353, None, false)]));
    snapshot
}

#[test]
fn dnat_flows_are_listed_with_both_tuples() {
    testkit::netns::require_kernel();
    let ns = namespace("ctlist");
    send_from(&ns, vec![4000, 6000], "10.96.0.10:53");
    send_from(&ns, vec![4001], "10.96.0.20:80");
    let flows = flows_in(&ns);
    let expected = vec![
        Flow { orig: udp("10.244.0.5", "10.96.0.10", 4000, 53), reply: udp("10.244.1.3", "10.244.0.5", 5353, 4000), zone: 0 },
        Flow { orig: udp("10.244.0.5", "10.96.0.10", 6000, 53), reply: udp("10.244.1.4", "10.244.0.5", 5353, 6000), zone: 0 },
        Flow { orig: udp("10.244.0.5", "10.96.0.20", 4001, 80), reply: udp("10.96.0.20", "10.244.0.5", 80, 4001), zone: 0 },
    ];
    assert_eq!(flows, expected);
}

#[test]
fn stale_entries_are_deleted_and_counted_others_stay_and_other_namespaces_are_untouched() {
    testkit::netns::require_kernel();
    let ns = namespace("ctstale");
    let other = namespace("ctother");
    for n in [&ns, &other] {
        send_from(n, vec![4000, 4001, 4002, 6000], "10.96.0.10:53"); // three to the removed endpoint
        send_from(n, vec![4003], "10.96.0.20:53"); // not a service
    }
    let before_other = flows_in(&other);
    assert_eq!(before_other.len(), 5);

    let deleted = ns
        .run(|| block_on(apply_stale_flow_cleanup(&snapshot(), &[], IpFamily::V4)).unwrap())
        .unwrap();
    let stale = Deletion { dst: ip("10.96.0.10"), dport: 53, reply_src: ip("10.244.1.3") };
    assert_eq!(deleted, vec![stale; 3], "one deletion per conntrack entry");

    let left: Vec<(Tuple, IpAddr)> = flows_in(&ns).iter().map(|f| (f.orig, f.reply.src)).collect();
    assert_eq!(
        left,
        vec![(udp("10.244.0.5", "10.96.0.10", 6000, 53), ip("10.244.1.4")), (udp("10.244.0.5", "10.96.0.20", 4003, 53), ip("10.96.0.20"))]
    );
    assert_eq!(flows_in(&other), before_other);
}

#[test]
fn deleting_an_entry_already_gone_is_not_an_error() {
    testkit::netns::require_kernel();
    let ns = namespace("ctgone");
    send_from(&ns, vec![4000], "10.96.0.10:53");
    let flows = flows_in(&ns);
    assert_eq!(flows.len(), 1);
    let twice = vec![flows[0], flows[0]];
    let outcome = ns.run(move || block_on(delete_flows(twice)).unwrap()).unwrap();
    assert_eq!((outcome.deleted, outcome.gone), (vec![flows[0]], 1));
    assert!(flows_in(&ns).is_empty());
}

#[test]
fn a_thousand_entries_go_in_one_batch() {
    testkit::netns::require_kernel();
    let ns = namespace("ct1000");
    send_from(&ns, (3000..4000).collect(), "10.96.0.10:53");
    let flows = flows_in(&ns);
    assert_eq!(flows.len(), 1000);
    let (outcome, took) = ns
        .run(move || {
            let mut sock = ConntrackSocket::connect().unwrap();
            assert!(sock.batch_size() >= 1000, "not one batch: {}", sock.batch_size());
            let start = Instant::now();
            let outcome = sock.delete(&flows).unwrap();
            (outcome, start.elapsed())
        })
        .unwrap();
    println!("deleted {} conntrack entries over netlink in one batch in {took:?}", outcome.deleted.len());
    assert_eq!((outcome.deleted.len(), outcome.gone), (1000, 0));
    assert!(flows_in(&ns).is_empty());
}

#[test]
fn ipv6_dnat_flows_are_listed_and_deleted() {
    testkit::netns::require_kernel();
    let ns = Netns::new("ct6").unwrap();
    for addr in ["fd00::5/128", "fd00:1::3/128"] {
        ns.ip(&["-6", "addr", "add", addr, "dev", "lo", "nodad"]).unwrap();
    }
    ns.ip(&["-6", "route", "add", "fd00:96::/64", "dev", "lo"]).unwrap();
    let rule = ["-t", "nat", "-A", "OUTPUT", "-p", "udp", "-d", "fd00:96::a", "--dport", "53", "-j", "DNAT"];
    ns.exec("ip6tables", &[&rule[..], &["--to-destination", "[fd00:1::3]:5353"]].concat()).unwrap();
    ns.run(|| {
        let sock = UdpSocket::bind(("fd00::5", 4000)).unwrap();
        sock.send_to(b"q", "[fd00:96::a]:53").unwrap();
    })
    .unwrap();
    let list = || -> Vec<Flow> {
        let all = ns.run(|| block_on(list_flows(IpFamily::V6)).unwrap()).unwrap();
        all.into_iter().filter(|f| f.orig.proto == 17).collect()
    };
    let flows = list();
    let expected =
        Flow { orig: udp("fd00::5", "fd00:96::a", 4000, 53), reply: udp("fd00:1::3", "fd00::5", 5353, 4000), zone: 0 };
    assert_eq!(flows, vec![expected]);
    let outcome = ns.run(move || block_on(delete_flows(flows)).unwrap()).unwrap();
    assert_eq!(outcome.deleted, vec![expected]);
    assert!(list().is_empty());
}
