//! The order of hooks and tables: where local and inbound packets go,
//! that filter rules see the DNATed destination, and that a local packet
//! to a local address loops back through INPUT without a second NAT.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use testkit::tracer::{Datapath, Outcome, Packet, Protocol, Step, TraceContext, parse_rules};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn node() -> TraceContext {
    TraceContext::new([ip("192.168.0.2")])
}

fn outcomes(text: &str, packet: &Packet) -> BTreeSet<Outcome> {
    parse_rules(text).unwrap().trace(&node(), packet).unwrap().outcomes
}

const DNAT_SERVICE: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
    -A PREROUTING -d 172.30.0.1/32 -j DNAT --to-destination 10.0.0.1:8080\n\
    -A OUTPUT -d 172.30.0.1/32 -j DNAT --to-destination 10.0.0.1:8080\nCOMMIT\n";

#[test]
fn no_rules_at_all_accepts_unchanged_or_delivers_locally() {
    let away = Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    let here = Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("192.168.0.2:22"));
    assert_eq!(outcomes("", &away), BTreeSet::from([Outcome::Accept { masquerade: false }]));
    assert_eq!(outcomes("", &here), BTreeSet::from([Outcome::Local]));
    let local_away = Packet::local(Protocol::Udp, ip("192.168.0.2"), addr("8.8.8.8:53"));
    assert_eq!(outcomes("", &local_away), BTreeSet::from([Outcome::Accept { masquerade: false }]));
    let local_here = Packet::local(Protocol::Tcp, ip("127.0.0.1"), addr("127.0.0.1:10256"));
    assert_eq!(outcomes("", &local_here), BTreeSet::from([Outcome::Local]));
}

#[test]
fn forward_filter_sees_the_dnated_destination() {
    let drop_original = format!("{DNAT_SERVICE}*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -d 172.30.0.1/32 -j DROP\nCOMMIT\n");
    let drop_endpoint = format!("{DNAT_SERVICE}*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -d 10.0.0.1/32 -p tcp --dport 8080 -j DROP\nCOMMIT\n");
    let packet = Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    assert_eq!(outcomes(&drop_original, &packet), BTreeSet::from([Outcome::Dnat { to: addr("10.0.0.1:8080"), masquerade: false }]));
    assert_eq!(outcomes(&drop_endpoint, &packet), BTreeSet::from([Outcome::Drop]));
}

#[test]
fn output_filter_sees_the_dnated_destination() {
    let drop_endpoint = format!("{DNAT_SERVICE}*filter\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -d 10.0.0.1/32 -j REJECT\nCOMMIT\n");
    let packet = Packet::local(Protocol::Tcp, ip("192.168.0.2"), addr("172.30.0.1:80"));
    assert_eq!(outcomes(&drop_endpoint, &packet), BTreeSet::from([Outcome::Reject]));
}

#[test]
fn inbound_to_a_local_address_goes_through_input_not_forward() {
    let text = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n\
        -A INPUT -m addrtype --dst-type LOCAL -p tcp --dport 30090 -j REJECT\n-A FORWARD -j DROP\nCOMMIT\n";
    let to_node_port = Packet::inbound(Protocol::Tcp, ip("172.20.0.10"), addr("192.168.0.2:30090"));
    let to_elsewhere = Packet::inbound(Protocol::Tcp, ip("172.20.0.10"), addr("172.30.0.1:30090"));
    assert_eq!(outcomes(text, &to_node_port), BTreeSet::from([Outcome::Reject]));
    assert_eq!(outcomes(text, &to_elsewhere), BTreeSet::from([Outcome::Drop]));
}

#[test]
fn local_packet_to_a_local_address_loops_through_input() {
    // Upstream's no-endpoint node port reject lives in filter INPUT, not
    // OUTPUT; node-a's own connection to it is still refused.
    let text = "*filter\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
        -A INPUT -m addrtype --dst-type LOCAL -p tcp --dport 30090 -i lo -j REJECT\nCOMMIT\n";
    let packet = Packet::local(Protocol::Tcp, ip("192.168.0.2"), addr("192.168.0.2:30090"));
    assert_eq!(outcomes(text, &packet), BTreeSet::from([Outcome::Reject]));
}

#[test]
fn looped_packet_is_not_nated_twice() {
    let text = "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -d 192.168.0.2/32 -j DNAT --to-destination 10.0.0.1:80\nCOMMIT\n";
    let local = Packet::local(Protocol::Tcp, ip("192.168.0.2"), addr("192.168.0.2:80"));
    assert_eq!(outcomes(text, &local), BTreeSet::from([Outcome::Local]));
    let inbound = Packet::inbound(Protocol::Tcp, ip("172.20.0.10"), addr("192.168.0.2:80"));
    assert_eq!(outcomes(text, &inbound), BTreeSet::from([Outcome::Dnat { to: addr("10.0.0.1:80"), masquerade: false }]));
}

#[test]
fn tables_run_in_kernel_order_within_a_hook() {
    // mangle PREROUTING marks before nat PREROUTING matches the mark.
    let text = "*mangle\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j MARK --set-xmark 0x1/0x1\nCOMMIT\n\
        *nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m mark --mark 0x1/0x1 -j DNAT --to-destination 10.0.0.1:80\nCOMMIT\n";
    let packet = Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    assert_eq!(outcomes(text, &packet), BTreeSet::from([Outcome::Dnat { to: addr("10.0.0.1:80"), masquerade: false }]));
}

#[test]
fn paths_record_the_rules_and_route_taken() {
    let text = format!("{DNAT_SERVICE}*filter\n:FORWARD DROP [0:0]\n-A FORWARD -d 10.0.0.0/8 -j ACCEPT\nCOMMIT\n");
    let packet = Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    let verdict = parse_rules(&text).unwrap().trace(&node(), &packet).unwrap();
    let steps: Vec<String> = verdict.paths[0].steps.iter().map(Step::to_string).collect();
    assert_eq!(
        steps,
        [
            "nat PREROUTING #1 (line 4): -d 172.30.0.1/32 -j DNAT --to-destination 10.0.0.1:8080",
            "route 10.0.0.1: not local (FORWARD)",
            "filter FORWARD #1 (line 9): -d 10.0.0.0/8 -j ACCEPT",
        ]
    );
    assert!(verdict.describe().contains("DNAT 10.0.0.1:8080"));
}

#[test]
fn each_branch_is_a_separate_path_with_its_assumption() {
    let text = "*nat\n:PREROUTING ACCEPT [0:0]\n\
        -A PREROUTING -m statistic --mode random --probability 0.5 -j DNAT --to-destination 10.0.0.1:80\n\
        -A PREROUTING -j DNAT --to-destination 10.0.0.2:80\nCOMMIT\n";
    let packet = Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    let verdict = parse_rules(text).unwrap().trace(&node(), &packet).unwrap();
    assert_eq!(verdict.dnat_targets(), BTreeSet::from([addr("10.0.0.1:80"), addr("10.0.0.2:80")]));
    assert_eq!(verdict.paths.len(), 2);
    let to_second = Outcome::Dnat { to: addr("10.0.0.2:80"), masquerade: false };
    let path = verdict.paths_to(&to_second).next().unwrap();
    assert!(matches!(&path.steps[0], Step::NotTaken { assumed, .. } if assumed[0].contains("statistic random 0.5")));
}
