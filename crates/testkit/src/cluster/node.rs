//! A node: a namespace on the wire that forwards for its pods, routes the
//! other nodes' pod CIDRs via those nodes, and is where kube-proxy-rs runs.

use super::plan::{CLIENT_NET, NodePlan, WIRE_GATEWAY, WIRE_NET};
use super::wire::Wire;
use crate::netns::Netns;
use anyhow::Result;
use ipnet::Ipv4Net;
use std::net::{IpAddr, Ipv4Addr};

/// A node of the simulated cluster.
#[derive(Debug)]
pub struct Node {
    plan: NodePlan,
    ns: Netns,
    veths: std::sync::atomic::AtomicUsize,
}

impl Node {
    /// Creates the node's namespace, plugs it into the wire with its IP,
    /// turns forwarding on (reverse-path filtering and redirects off), and
    /// routes the client's subnet on-link and everything else to the wire's
    /// black-hole gateway.
    pub fn new(plan: &NodePlan, wire: &Wire) -> Result<Self> {
        let ns = Netns::new(&plan.name)?;
        ns.route_like_a_node()?;
        wire.plug(&ns)?;
        ns.ip(&["addr", "add", &format!("{}/{}", plan.ip, WIRE_NET.prefix_len()), "dev", "eth0"])?;
        ns.ip(&["link", "set", "eth0", "up"])?;
        ns.ip(&["route", "add", &CLIENT_NET.to_string(), "dev", "eth0"])?;
        ns.ip(&["route", "add", "default", "via", &WIRE_GATEWAY.to_string(), "dev", "eth0"])?;
        Ok(Self { plan: plan.clone(), ns, veths: std::sync::atomic::AtomicUsize::new(0) })
    }

    /// Routes `other`'s pod CIDR via `other`'s wire IP (no overlay).
    pub fn route_pods_of(&self, other: &Node) -> Result<()> {
        self.ns.ip(&["route", "add", &other.pod_cidr().to_string(), "via", &other.ip().to_string(), "dev", "eth0"])?;
        Ok(())
    }

    /// Attaches `pod` with a veth: the pod side is `eth0` (left down for the
    /// pod to configure), the node side holds the gateway as /32 and a /32
    /// route to each of `ips`.
    pub fn attach(&self, pod: &Netns, ips: &[Ipv4Addr]) -> Result<()> {
        let veth = format!("p{}", self.veths.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        self.ns.ip(&["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", pod.name()])?;
        self.ns.ip(&["addr", "add", &format!("{}/32", self.gateway()), "dev", &veth])?;
        self.ns.ip(&["link", "set", &veth, "up"])?;
        for ip in ips {
            self.ns.ip(&["route", "add", &format!("{ip}/32"), "dev", &veth, "src", &self.gateway().to_string()])?;
        }
        Ok(())
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

    /// The pods' gateway, also the source address the node uses towards its
    /// own pods.
    pub fn gateway(&self) -> Ipv4Addr {
        self.plan.gateway()
    }

    /// Every address a packet masqueraded by this node can carry: its wire IP
    /// and its pod gateway.
    pub fn addresses(&self) -> [IpAddr; 2] {
        [IpAddr::V4(self.ip()), IpAddr::V4(self.gateway())]
    }

    /// The node's namespace (run commands, connect from the node itself).
    pub fn ns(&self) -> &Netns {
        &self.ns
    }
}
