//! Each match the tracer models, one behaviour per test: a rule
//! `<spec> -j DNAT --to-destination 10.9.9.9:9` in nat PREROUTING and
//! OUTPUT answers "matched" when the trace reaches that DNAT, "not
//! matched" when the packet goes on unchanged, "both" when the match can
//! go either way.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use testkit::tracer::{IpSet, IpSetKind, IpSets, Outcome, Packet, Protocol, TraceContext, TraceError, parse_rules, trace};

const MARKER: &str = "10.9.9.9:9";

#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Matched,
    NotMatched,
    Both,
}

use Answer::{Both, Matched, NotMatched};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// Node 192.168.0.2 with pods in 10.0.0.0/8.
fn node() -> TraceContext {
    TraceContext::new([ip("192.168.0.2")]).with_pod_cidr("10.0.0.0/8".parse().unwrap())
}

fn tcp_in(src: &str, dst: &str) -> Packet {
    Packet::inbound(Protocol::Tcp, ip(src), addr(dst))
}

fn tcp_local(src: &str, dst: &str) -> Packet {
    Packet::local(Protocol::Tcp, ip(src), addr(dst))
}

fn outcomes_with(ctx: &TraceContext, setup: &str, spec: &str, packet: &Packet) -> Result<BTreeSet<Outcome>, TraceError> {
    let text = format!(
        "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n{setup}\
         -A PREROUTING {spec} -j DNAT --to-destination {MARKER}\n\
         -A OUTPUT {spec} -j DNAT --to-destination {MARKER}\nCOMMIT\n"
    );
    Ok(trace(&parse_rules(&text)?, ctx, packet)?.outcomes)
}

fn answer_with(ctx: &TraceContext, setup: &str, spec: &str, packet: &Packet) -> Answer {
    let outcomes = outcomes_with(ctx, setup, spec, packet).unwrap();
    let hit = outcomes.iter().any(|o| matches!(o, Outcome::Dnat { to, .. } if *to == addr(MARKER)));
    let miss = outcomes.iter().any(|o| !matches!(o, Outcome::Dnat { to, .. } if *to == addr(MARKER)));
    match (hit, miss) {
        (true, true) => Both,
        (true, false) => Matched,
        (false, true) => NotMatched,
        (false, false) => panic!("no outcome for {spec}"),
    }
}

fn answer(spec: &str, packet: &Packet) -> Answer {
    answer_with(&node(), "", spec, packet)
}

#[test]
fn source_and_destination_prefixes_with_negation() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    assert_eq!(answer("-s 10.0.0.0/8", &p), Matched);
    assert_eq!(answer("-s 10.1.2.3/32", &p), Matched);
    assert_eq!(answer("-s 10.1.2.4", &p), NotMatched);
    assert_eq!(answer("! -s 10.0.0.0/8", &p), NotMatched);
    assert_eq!(answer("-d 172.30.0.1/32", &p), Matched);
    assert_eq!(answer("! -d 172.30.0.0/16", &p), NotMatched);
    assert_eq!(answer("! -d 192.168.0.0/16", &p), Matched);
}

#[test]
fn protocol_with_negation_and_numbers() {
    let tcp = tcp_in("10.1.2.3", "172.30.0.1:80");
    let udp = Packet::inbound(Protocol::Udp, ip("10.1.2.3"), addr("172.30.0.1:53"));
    assert_eq!(answer("-p tcp", &tcp), Matched);
    assert_eq!(answer("-p 6", &tcp), Matched);
    assert_eq!(answer("-p udp", &tcp), NotMatched);
    assert_eq!(answer("! -p tcp", &udp), Matched);
    assert_eq!(answer("-p all", &udp), Matched);
    assert_eq!(answer("-p icmp", &udp), NotMatched);
}

#[test]
fn l4_ports_ranges_and_negation() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80").with_source_port(5555);
    assert_eq!(answer("-p tcp -m tcp --dport 80", &p), Matched);
    assert_eq!(answer("-p tcp -m tcp --dport 81", &p), NotMatched);
    assert_eq!(answer("-p tcp -m tcp ! --dport 81", &p), Matched);
    assert_eq!(answer("-p tcp -m tcp --dport 70:90", &p), Matched);
    assert_eq!(answer("-p tcp -m tcp --dport 81:", &p), NotMatched);
    assert_eq!(answer("-p tcp -m tcp --sport 5555", &p), Matched);
    assert_eq!(answer("-p tcp --dport 80", &p), Matched, "implicit -m tcp");
    assert_eq!(answer("-p tcp -m tcp", &p), Matched);
    assert_eq!(answer("-p tcp -m tcp --syn", &p), Matched, "a new connection's first packet is a SYN");
    let udp = Packet::inbound(Protocol::Udp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    assert_eq!(answer("-p udp -m udp --dport 80", &udp), Matched);
    assert_eq!(answer("-m tcp --dport 80", &udp), NotMatched, "a tcp match never matches udp");
    let sctp = Packet::inbound(Protocol::Sctp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    assert_eq!(answer("-p sctp -m sctp --dport 80", &sctp), Matched);
}

#[test]
fn multiport_lists() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:1500");
    assert_eq!(answer("-p tcp -m multiport --dports 80,443,1000:2000", &p), Matched);
    assert_eq!(answer("-p tcp -m multiport --dports 80,443", &p), NotMatched);
    assert_eq!(answer("-p tcp -m multiport ! --dports 80,443", &p), Matched);
    assert_eq!(answer("-p tcp -m multiport --ports 1500", &p), Matched);
}

#[test]
fn comment_and_nfacct_always_match() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    assert_eq!(answer(r#"-m comment --comment "any text, even -j DROP""#, &p), Matched);
    assert_eq!(answer("-m nfacct --nfacct-name  localhost_nps_accepted_pkts", &p), Matched);
}

#[test]
fn addrtype_local_uses_node_addresses_and_loopback() {
    let to_node = tcp_in("10.1.2.3", "192.168.0.2:30080");
    let elsewhere = tcp_in("10.1.2.3", "172.30.0.1:80");
    assert_eq!(answer("-m addrtype --dst-type LOCAL", &to_node), Matched);
    assert_eq!(answer("-m addrtype --dst-type LOCAL", &elsewhere), NotMatched);
    assert_eq!(answer("-m addrtype ! --dst-type LOCAL", &elsewhere), Matched);
    assert_eq!(answer("-m addrtype --dst-type UNICAST", &elsewhere), Matched);
    assert_eq!(answer("-m addrtype --src-type LOCAL", &to_node), NotMatched);
    assert_eq!(answer("-m addrtype --src-type LOCAL", &tcp_local("192.168.0.2", "172.30.0.1:80")), Matched);
    assert_eq!(answer("-m addrtype --dst-type LOCAL", &tcp_local("127.0.0.1", "127.0.0.1:30080")), Matched);
    assert_eq!(answer("-m addrtype --dst-type LOCAL,BROADCAST", &tcp_in("10.1.2.3", "255.255.255.255:9")), Matched);
}

#[test]
fn conntrack_state_of_a_new_connection() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    assert_eq!(answer("-m conntrack --ctstate NEW", &p), Matched);
    assert_eq!(answer("-m conntrack --ctstate RELATED,ESTABLISHED", &p), NotMatched);
    assert_eq!(answer("-m conntrack ! --ctstate RELATED,ESTABLISHED", &p), Matched);
    assert_eq!(answer("-m conntrack --ctstate INVALID", &p), NotMatched);
    assert_eq!(answer("-m conntrack --ctstate DNAT", &p), NotMatched, "no DNAT yet");
    assert_eq!(answer("-m state --state NEW", &p), Matched);
}

#[test]
fn conntrack_dnat_state_is_set_once_a_dnat_happened() {
    let text = "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -d 172.30.0.1 -j DNAT --to-destination 10.1.1.1:8080\nCOMMIT\n\
                *filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m conntrack --ctstate DNAT -j DROP\nCOMMIT\n";
    let rules = parse_rules(text).unwrap();
    assert_eq!(trace(&rules, &node(), &tcp_in("10.1.2.3", "172.30.0.1:80")).unwrap().outcomes, BTreeSet::from([Outcome::Drop]));
    assert_eq!(
        trace(&rules, &node(), &tcp_in("10.1.2.3", "172.30.0.2:80")).unwrap().outcomes,
        BTreeSet::from([Outcome::Accept { masquerade: false }])
    );
}

#[test]
fn mark_value_and_mask_with_negation() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    let setup = ":MARKED - [0:0]\n-A PREROUTING -j MARK --set-xmark 0x4001/0xffffffff\n";
    assert_eq!(answer_with(&node(), setup, "-m mark --mark 0x4000/0x4000", &p), Matched);
    assert_eq!(answer_with(&node(), setup, "-m mark --mark 0x4001", &p), Matched);
    assert_eq!(answer_with(&node(), setup, "-m mark --mark 0x4000", &p), NotMatched, "no mask: all bits compared");
    assert_eq!(answer_with(&node(), setup, "-m mark ! --mark 0x4000/0x4000", &p), NotMatched);
    assert_eq!(answer("-m mark --mark 0x4000/0x4000", &p), NotMatched, "unmarked packet");
    assert_eq!(answer("-m mark ! --mark 0x4000/0x4000", &p), Matched);
}

#[test]
fn statistic_explores_both_branches_unless_certain() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    assert_eq!(answer("-m statistic --mode random --probability 0.33333333349", &p), Both);
    assert_eq!(answer("-m statistic --mode random --probability 1.0", &p), Matched);
    assert_eq!(answer("-m statistic --mode random ! --probability 1.0", &p), NotMatched);
    assert_eq!(answer("-m statistic --mode nth --every 3 --packet 0", &p), Both);
    assert_eq!(answer("-m statistic --mode nth --every 1 --packet 0", &p), Matched);
}

#[test]
fn recent_checks_hit_and_miss_and_set_always_matches() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    let rcheck = "-m recent --rcheck --seconds 600 --reap --name KUBE-SEP-X --mask 255.255.255.255 --rsource";
    assert_eq!(answer(rcheck, &p), Both);
    assert_eq!(answer("-m recent --set --name KUBE-SEP-X --mask 255.255.255.255 --rsource", &p), Matched);
    assert_eq!(answer("-m recent --update --seconds 10 --name X", &p), Both);
}

fn with_sets() -> TraceContext {
    let mut sets = IpSets::new();
    sets.insert(IpSet::new("KUBE-CLUSTER-IP", IpSetKind::HashIpPort).with("172.30.0.1,tcp:80").unwrap());
    sets.insert(IpSet::new("KUBE-LOOP-BACK", IpSetKind::HashIpPortIp).with("10.1.2.3,tcp:8080,10.1.2.3").unwrap());
    sets.insert(IpSet::new("KUBE-NODE-PORT-TCP", IpSetKind::BitmapPort).with("30000-30100").unwrap());
    sets.insert(IpSet::new("KUBE-LOAD-BALANCER-SOURCE-CIDR", IpSetKind::HashIpPortNet).with("192.0.2.1,tcp:443,10.0.0.0/8").unwrap());
    node().with_ipsets(sets)
}

#[test]
fn ipset_membership_by_direction_flags() {
    let ctx = with_sets();
    let to_cluster_ip = tcp_in("10.1.2.3", "172.30.0.1:80");
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-CLUSTER-IP dst,dst", &to_cluster_ip), Matched);
    assert_eq!(answer_with(&ctx, "", "-m set ! --match-set KUBE-CLUSTER-IP dst,dst", &to_cluster_ip), NotMatched);
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-CLUSTER-IP dst,dst", &tcp_in("10.1.2.3", "172.30.0.1:81")), NotMatched);
    let udp = Packet::inbound(Protocol::Udp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-CLUSTER-IP dst,dst", &udp), NotMatched, "protocol is part of the entry");
    let hairpin = tcp_in("10.1.2.3", "10.1.2.3:8080");
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-LOOP-BACK dst,dst,src", &hairpin), Matched);
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-NODE-PORT-TCP dst", &tcp_in("10.1.2.3", "192.168.0.2:30080")), Matched);
    let from_pod = tcp_in("10.7.7.7", "192.0.2.1:443");
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src", &from_pod), Matched);
    let from_outside = tcp_in("172.20.0.66", "192.0.2.1:443");
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src", &from_outside), NotMatched);
}

#[test]
fn ipset_missing_or_with_wrong_flags_is_an_error() {
    let ctx = with_sets();
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    let err = outcomes_with(&ctx, "", "-m set --match-set KUBE-NOPE dst", &p).unwrap_err();
    assert!(matches!(err, TraceError::UnknownIpset { ref set, .. } if set == "KUBE-NOPE"), "{err}");
    let err = outcomes_with(&ctx, "", "-m set --match-set KUBE-CLUSTER-IP dst", &p).unwrap_err();
    assert!(matches!(err, TraceError::IpsetFlags { .. }), "{err}");
}

#[test]
fn ipsets_read_from_ipset_save() {
    let sets = IpSets::parse_save(
        "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\n\
         add KUBE-CLUSTER-IP 172.30.0.1,tcp:80\nadd KUBE-CLUSTER-IP 172.30.0.2,udp:53\n\
         create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\nadd KUBE-NODE-PORT-TCP 30080\n",
    )
    .unwrap();
    assert_eq!(sets.get("KUBE-CLUSTER-IP").unwrap().len(), 2);
    assert_eq!(sets.get("KUBE-NODE-PORT-TCP").unwrap().kind, IpSetKind::BitmapPort);
    let ctx = node().with_ipsets(sets);
    let dns = Packet::inbound(Protocol::Udp, ip("10.1.2.3"), addr("172.30.0.2:53"));
    assert_eq!(answer_with(&ctx, "", "-m set --match-set KUBE-CLUSTER-IP dst,dst", &dns), Matched);
    assert!(matches!(IpSets::parse_save("add NOPE 1.2.3.4\n"), Err(TraceError::IpsetSyntax { line: 1, .. })));
    assert!(matches!(IpSets::parse_save("create X hash:mac\n"), Err(TraceError::IpsetSyntax { .. })));
}

#[test]
fn input_interface_known_unknown_wildcard_and_absent() {
    let via_veth = tcp_in("10.1.2.3", "172.30.0.1:80").via("veth1234");
    assert_eq!(answer("-i veth1234", &via_veth), Matched);
    assert_eq!(answer("-i veth+", &via_veth), Matched);
    assert_eq!(answer("-i eth0", &via_veth), NotMatched);
    assert_eq!(answer("! -i eth0", &via_veth), Matched);
    assert_eq!(answer("-i eth0", &tcp_in("10.1.2.3", "172.30.0.1:80")), Both, "unknown interface: both ways");
    let local = tcp_local("192.168.0.2", "172.30.0.1:80");
    assert_eq!(answer("-i eth0", &local), NotMatched, "no input interface in OUTPUT");
    assert_eq!(answer("! -i eth0", &local), Matched);
}

#[test]
fn output_interface_follows_routes() {
    let ctx = node().with_route("0.0.0.0/0".parse().unwrap(), "eth0").with_route("172.30.0.0/16".parse().unwrap(), "kube0");
    let setup = "";
    let local = tcp_local("192.168.0.2", "172.30.0.1:80");
    assert_eq!(answer_with(&ctx, setup, "-o kube0", &local), Matched, "longest prefix");
    assert_eq!(answer_with(&ctx, setup, "-o eth0", &local), NotMatched);
    assert_eq!(answer_with(&ctx, setup, "-o lo", &tcp_local("192.168.0.2", "192.168.0.2:80")), Matched);
    assert_eq!(answer_with(&node(), setup, "-o eth0", &local), Both, "no route: unknown");
    assert_eq!(answer_with(&ctx, setup, "-o kube0", &tcp_in("10.1.2.3", "172.30.0.1:80")), NotMatched, "no output interface in PREROUTING");
}

#[test]
fn all_matches_of_a_rule_must_hold() {
    let p = tcp_in("10.1.2.3", "172.30.0.1:80");
    assert_eq!(answer("-s 10.0.0.0/8 -d 172.30.0.1/32 -p tcp -m tcp --dport 80", &p), Matched);
    assert_eq!(answer("-s 10.0.0.0/8 -d 172.30.0.1/32 -p tcp -m tcp --dport 81", &p), NotMatched);
    assert_eq!(answer("-p udp -m statistic --mode random --probability 0.5", &p), NotMatched, "a certain miss wins over a branch");
}
