//! A node: a namespace on the wire that forwards for its pods (IPv4 and
//! IPv6), routes the other nodes' pod CIDRs via those nodes, and is where
//! kube-proxy-rs runs.

use super::plan::{CLIENT_NET, CLIENT_NET6, NodePlan, WIRE_GATEWAY, WIRE_GATEWAY6, WIRE_NET, WIRE_NET6};
use super::wire::Wire;
use crate::netns::Netns;
use anyhow::Result;
use ipnet::{Ipv4Net, Ipv6Net};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A node of the simulated cluster.
#[derive(Debug)]
pub struct Node {
    plan: NodePlan,
    ns: Netns,
    veths: std::sync::atomic::AtomicUsize,
}

impl Node {
    /// Creates the node's namespace, plugs it into the wire with its IPs,
    /// turns forwarding on (reverse-path filtering and redirects off, no
    /// IPv6 duplicate address detection), and routes the client's subnets
    /// on-link and everything else to the wire's black-hole gateways.
    pub fn new(plan: &NodePlan, wire: &Wire) -> Result<Self> {
        let ns = Netns::new(&plan.name)?;
        ns.route_like_a_node()?;
        ns.skip_ipv6_dad()?;
        wire.plug(&ns)?;
        ns.ip_batch(&[
            format!("addr add {}/{} dev eth0", plan.ip, WIRE_NET.prefix_len()),
            format!("addr add {}/{} dev eth0 nodad", plan.ip6, WIRE_NET6.prefix_len()),
            "link set eth0 up".to_string(),
            format!("route add {CLIENT_NET} dev eth0"),
            format!("route add default via {WIRE_GATEWAY} dev eth0"),
            format!("route add {CLIENT_NET6} dev eth0"),
            format!("route add default via {WIRE_GATEWAY6} dev eth0"),
        ])?;
        Ok(Self { plan: plan.clone(), ns, veths: std::sync::atomic::AtomicUsize::new(0) })
    }

    /// Routes `other`'s pod CIDRs via `other`'s wire IPs (no overlay).
    pub fn route_pods_of(&self, other: &Node) -> Result<()> {
        self.ns.ip_batch(&[
            format!("route add {} via {} dev eth0", other.pod_cidr(), other.ip()),
            format!("route add {} via {} dev eth0", other.pod_cidr6(), other.ip6()),
        ])
    }

    /// Attaches `pod` with a veth: the pod side is `eth0` (left down for the
    /// pod to configure), the node side holds the gateways as /32 and /128
    /// and a host route to each of `ips` (either family) with the gateway of
    /// its family as source.
    pub fn attach(&self, pod: &Netns, ips: &[IpAddr]) -> Result<()> {
        let veth = format!("p{}", self.veths.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        let mut commands = vec![
            format!("link add {veth} type veth peer name eth0 netns {}", pod.name()),
            format!("addr add {}/32 dev {veth}", self.gateway()),
            format!("addr add {}/128 dev {veth} nodad", self.gateway6()),
            format!("link set {veth} up"),
        ];
        for ip in ips {
            let (len, gateway) = match ip {
                IpAddr::V4(_) => (32, IpAddr::V4(self.gateway())),
                IpAddr::V6(_) => (128, IpAddr::V6(self.gateway6())),
            };
            commands.push(format!("route add {ip}/{len} dev {veth} src {gateway}"));
        }
        self.ns.ip_batch(&commands)
    }

    /// Node name.
    pub fn name(&self) -> &str {
        &self.plan.name
    }

    /// InternalIP (on the wire).
    pub fn ip(&self) -> Ipv4Addr {
        self.plan.ip
    }

    /// Pod CIDR.
    pub fn pod_cidr(&self) -> Ipv4Net {
        self.plan.pod_cidr
    }

    /// IPv6 InternalIP (on the wire).
    pub fn ip6(&self) -> Ipv6Addr {
        self.plan.ip6
    }

    /// IPv6 pod CIDR.
    pub fn pod_cidr6(&self) -> Ipv6Net {
        self.plan.pod_cidr6
    }

    /// The pods' gateway, also the source address the node uses towards its
    /// own pods.
    pub fn gateway(&self) -> Ipv4Addr {
        self.plan.gateway()
    }

    /// The pods' IPv6 gateway, the source the node uses towards its own
    /// pods over IPv6.
    pub fn gateway6(&self) -> Ipv6Addr {
        self.plan.gateway6()
    }

    /// Every address a packet masqueraded by this node can carry: its wire
    /// IPs and its pod gateways, IPv4 first.
    pub fn addresses(&self) -> [IpAddr; 4] {
        [IpAddr::V4(self.ip()), IpAddr::V4(self.gateway()), IpAddr::V6(self.ip6()), IpAddr::V6(self.gateway6())]
    }

    /// The node's namespace (run commands, connect from the node itself).
    pub fn ns(&self) -> &Netns {
        &self.ns
    }
}
