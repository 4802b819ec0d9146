//! The probes of one Service port: the first packet of a new connection
//! to each address the Service answers on (or, under one mode, might),
//! from each kind of client.

use crate::error::ExplainError;
use crate::node::Node;
use crate::query::{Query, Sender};
use crate::tracer::{DEFAULT_SOURCE_PORT, Protocol};
use model::{ServicePort, ServicePortName};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Who the probes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clients {
    /// A pod on this node (an address of the cluster CIDR).
    pub pod: IpAddr,
    /// A client outside the node.
    pub outside: IpAddr,
    /// The interface outside clients arrive on (`None`: unknown, interface
    /// matches are explored both ways).
    pub outside_interface: Option<String>,
    /// The pod network (cluster CIDRs): outside clients do not reach the
    /// node's addresses in it.
    pub pod_cidrs: Vec<ipnet::IpNet>,
}

/// What a probe is sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// The ClusterIP and the port's port.
    ClusterIp,
    /// The ClusterIP and a port no port of the Service has.
    ClusterIpOtherPort,
    /// The NodePort on one of the node's addresses.
    NodePort,
    /// The NodePort on 127.0.0.1 (from the node).
    LocalhostNodePort,
    /// A load-balancer IP.
    LoadBalancerIp,
    /// An external IP.
    ExternalIp,
}

impl Target {
    /// How the text output names it.
    pub fn name(self) -> &'static str {
        match self {
            Target::ClusterIp => "cluster IP",
            Target::ClusterIpOtherPort => "cluster IP, a port the Service does not have",
            Target::NodePort => "NodePort",
            Target::LocalhostNodePort => "NodePort on localhost",
            Target::LoadBalancerIp => "load-balancer IP",
            Target::ExternalIp => "external IP",
        }
    }
}

/// One probe: a new connection's first packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// The Service port (`namespace/name:port`).
    pub port: String,
    /// What it is sent to.
    pub target: Target,
    /// `tcp`, `udp`, `sctp`.
    pub protocol: String,
    /// The client's address.
    pub source: IpAddr,
    /// Where to.
    pub destination: SocketAddr,
    /// Who sends it.
    pub sender: Sender,
    /// The interface it arrives on, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_interface: Option<String>,
}

impl Probe {
    /// The packet to walk.
    pub fn query(&self) -> Result<Query, ExplainError> {
        let protocol = match self.protocol.as_str() {
            "tcp" => Protocol::Tcp,
            "udp" => Protocol::Udp,
            "sctp" => Protocol::Sctp,
            other => return Err(ExplainError::NothingProgrammed(format!("a probe of protocol {other}"))),
        };
        Ok(Query {
            protocol,
            source: SocketAddr::new(self.source, DEFAULT_SOURCE_PORT),
            destination: self.destination,
            sender: self.sender,
            in_interface: if self.sender == Sender::Outside { self.in_interface.clone() } else { None },
        })
    }

    /// One line: `tcp from a pod 10.244.0.200 to 10.96.0.10:53 (cluster IP)`.
    pub fn line(&self) -> String {
        let from = match self.sender {
            Sender::Pod => "a pod",
            Sender::Node => "the node",
            Sender::Outside => "outside",
        };
        format!("{} from {from} {} to {} ({})", self.protocol, self.source, self.destination, self.target.name())
    }
}

/// The probes of `port` (named `name`) on `node`, whose processes send
/// from `node_source` (its InternalIP); `other_port`: a port of its
/// ClusterIP no port of the Service has, probed once per Service.
pub fn of_port(name: &ServicePortName, port: &ServicePort, node: &Node, node_source: Option<IpAddr>, clients: &Clients, other_port: Option<u16>) -> Vec<Probe> {
    let v4 = port.cluster_ip.is_ipv4();
    let same_family = |ip: &IpAddr| ip.is_ipv4() == v4;
    let node_source = node_source
        .filter(same_family)
        .or_else(|| node.addresses.iter().copied().find(|ip| same_family(ip) && !ip.is_loopback()))
        .unwrap_or(loopback(v4));
    let label = name.to_string();
    let probe = |target, sender, destination: SocketAddr| {
        let source = match sender {
            Sender::Pod => clients.pod,
            Sender::Node if destination.ip().is_loopback() => destination.ip(),
            Sender::Node => node_source,
            Sender::Outside => clients.outside,
        };
        Probe {
            port: label.clone(),
            target,
            protocol: name.protocol.to_string(),
            source,
            destination,
            sender,
            in_interface: clients.outside_interface.clone(),
        }
    };
    let mut out = Vec::new();
    let mut from_all = |target, ip: IpAddr, number: u16, senders: &[Sender]| {
        for sender in senders {
            out.push(probe(target, *sender, SocketAddr::new(ip, number)));
        }
    };
    const EVERYONE: [Sender; 3] = [Sender::Outside, Sender::Pod, Sender::Node];
    from_all(Target::ClusterIp, port.cluster_ip, port.port, &[Sender::Pod, Sender::Node]);
    if let Some(other) = other_port {
        from_all(Target::ClusterIpOtherPort, port.cluster_ip, other, &[Sender::Pod]);
    }
    if let Some(node_port) = port.node_port {
        for address in node.addresses.iter().filter(|ip| same_family(ip) && !ip.is_loopback()) {
            let in_pod_network = clients.pod_cidrs.iter().any(|c| c.contains(address));
            from_all(Target::NodePort, *address, node_port, if in_pod_network { &EVERYONE[1..] } else { &EVERYONE });
        }
        if v4 {
            from_all(Target::LocalhostNodePort, loopback(true), node_port, &[Sender::Node]);
        }
    }
    for ip in port.load_balancer_ips.iter().filter(|ip| same_family(ip)) {
        from_all(Target::LoadBalancerIp, *ip, port.port, &EVERYONE);
    }
    for ip in port.external_ips.iter().filter(|ip| same_family(ip)) {
        from_all(Target::ExternalIp, *ip, port.port, &EVERYONE);
    }
    out
}

fn loopback(v4: bool) -> IpAddr {
    if v4 { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { IpAddr::V6(Ipv6Addr::LOCALHOST) }
}

/// A port of `cluster_ip` none of `used` is: the first of 9, 10, 11 …
pub fn unused_port(used: &[u16]) -> u16 {
    (9..u16::MAX).find(|p| !used.contains(p)).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_other_port_is_one_the_service_does_not_have() {
        assert_eq!(unused_port(&[80, 443]), 9);
        assert_eq!(unused_port(&[9, 10, 53]), 11);
    }
}
