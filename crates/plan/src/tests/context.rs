use super::{ep, ip, net, port, snapshot};
use crate::{LocalDetection, LocalTraffic, Mark, NodeFacts, NodePortAddresses, NodePorts, Options, SyncContext};
use model::IpFamily;

fn ctx(opts: &Options, locals: &[&str]) -> SyncContext {
    let facts = NodeFacts { local_addresses: locals.iter().map(|s| ip(s)).collect() };
    SyncContext::new(&snapshot(Vec::new()), opts, &facts)
}

const LOCALS: [&str; 5] = ["192.168.0.2", "10.1.1.1", "127.0.0.1", "fd00::2", "10.1.1.1"];

#[test]
fn the_mark_is_one_shifted_by_the_masquerade_bit() {
    assert_eq!(ctx(&Options::default(), &[]).mark, Mark(0x4000));
    assert_eq!(ctx(&Options { masquerade_bit: 0, ..Options::default() }, &[]).mark.to_string(), "0x1");
    assert_eq!(Mark(0x4000).to_string(), "0x4000");
}

#[test]
fn node_ports_answer_everywhere_unless_addresses_of_the_family_are_given() {
    assert_eq!(ctx(&Options::default(), &LOCALS).node_ports, NodePorts::EveryLocalAddress);
    let v6_only = Options { node_port_addresses: NodePortAddresses::Cidrs(vec![net("fd00::/64")]), ..Options::default() };
    assert_eq!(ctx(&v6_only, &LOCALS).node_ports, NodePorts::EveryLocalAddress, "no CIDR of IPv4");
    let everything = Options { node_port_addresses: NodePortAddresses::Cidrs(vec![net("0.0.0.0/0")]), ..Options::default() };
    assert_eq!(ctx(&everything, &LOCALS).node_ports, NodePorts::EveryLocalAddress, "a /0");
    let some = Options { node_port_addresses: NodePortAddresses::Cidrs(vec![net("10.0.0.0/8")]), ..Options::default() };
    assert_eq!(ctx(&some, &LOCALS).node_ports, NodePorts::Only(vec![ip("10.1.1.1")]), "once each");
}

#[test]
fn primary_is_the_nodes_ip_of_the_family() {
    let opts = Options { node_port_addresses: NodePortAddresses::Primary, ..Options::default() };
    let c = ctx(&opts, &LOCALS);
    assert_eq!(c.node_ports, NodePorts::Only(vec![ip("192.168.0.2")]));
    assert_eq!(c.node_port_addresses(), [ip("192.168.0.2")]);
    let v6 = Options { family: IpFamily::V6, ..opts };
    assert_eq!(ctx(&v6, &LOCALS).node_ports, NodePorts::EveryLocalAddress, "no IPv6 node IP: every address");
}

#[test]
fn listed_node_port_addresses_never_include_loopback() {
    let c = ctx(&Options::default(), &LOCALS);
    assert!(c.localhost_nodeports);
    assert_eq!(c.node_port_addresses(), [ip("10.1.1.1"), ip("192.168.0.2")]);
    let with_lo = Options { node_port_addresses: NodePortAddresses::Cidrs(vec![net("127.0.0.0/8")]), ..Options::default() };
    let c = ctx(&with_lo, &LOCALS);
    assert_eq!(c.node_ports, NodePorts::Only(vec![ip("127.0.0.1")]), "localhost NodePorts keep loopback");
    assert!(c.node_port_addresses().is_empty());
}

#[test]
fn localhost_node_ports_need_ipv4_the_option_and_loopback_in_the_addresses() {
    assert!(!ctx(&Options { localhost_nodeports: false, ..Options::default() }, &LOCALS).localhost_nodeports);
    assert!(!ctx(&Options { family: IpFamily::V6, ..Options::default() }, &LOCALS).localhost_nodeports);
    let no_lo = Options { node_port_addresses: NodePortAddresses::Cidrs(vec![net("10.0.0.0/8")]), ..Options::default() };
    assert!(!ctx(&no_lo, &LOCALS).localhost_nodeports);
}

#[test]
fn local_traffic_comes_from_the_cluster_or_node_cidr_of_the_family() {
    let cidrs = LocalDetection::ClusterCidr(vec![net("fd00:10::/32"), net("10.0.0.0/8")]);
    let opts = Options { local_detection: cidrs, ..Options::default() };
    let cidr = |s| Some(LocalTraffic::Cidr(net(s)));
    assert_eq!(ctx(&opts, &[]).local_traffic, cidr("10.0.0.0/8"));
    assert_eq!(ctx(&Options { family: IpFamily::V6, ..opts }, &[]).local_traffic, cidr("fd00:10::/32"));
    assert_eq!(ctx(&Options::default(), &[]).local_traffic, None, "ClusterCIDR without CIDRs");
    let node = Options { local_detection: LocalDetection::NodeCidr, ..Options::default() };
    assert_eq!(ctx(&node, &[]).local_traffic, cidr("10.180.0.0/24"));
}

#[test]
fn local_traffic_comes_in_from_the_bridge_or_prefixed_interfaces_in_every_family() {
    for family in [IpFamily::V4, IpFamily::V6] {
        let bridge = LocalDetection::BridgeInterface("cbr0".into());
        let opts = Options { family, local_detection: bridge, ..Options::default() };
        assert_eq!(ctx(&opts, &[]).local_traffic, Some(LocalTraffic::Interface("cbr0".into())));
        let prefix = LocalDetection::InterfaceNamePrefix("veth".into());
        let opts = Options { family, local_detection: prefix, ..Options::default() };
        assert_eq!(ctx(&opts, &[]).local_traffic, Some(LocalTraffic::InterfacePrefix("veth".into())));
    }
}

#[test]
fn large_cluster_mode_starts_above_a_thousand_endpoints_of_the_family() {
    let eps = |n: u16| (0..n).map(|i| ep(&format!("10.180.{}.{}", i / 256, i % 256), false)).collect::<Vec<_>>();
    let with = |n| SyncContext::new(&snapshot(vec![(port("a"), eps(n))]), &Options::default(), &NodeFacts::default());
    assert!(!with(1000).large_cluster);
    assert!(with(1001).large_cluster);
    let v6 = SyncContext::new(
        &snapshot(vec![(port("a"), eps(1001))]),
        &Options { family: IpFamily::V6, ..Options::default() },
        &NodeFacts::default(),
    );
    assert!(!v6.large_cluster, "IPv4 services do not count for IPv6");
}
