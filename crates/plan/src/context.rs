//! Everything a sync derives once from the options and the node before
//! looking at any service: the mark, local-traffic detection, the node IP,
//! where NodePorts answer, and large-cluster mode.

use crate::options::{LocalDetection, Options};
use crate::{LocalTraffic, Mark, NodeFacts};
use ipnet::IpNet;
use model::topology::NodeTopology;
use model::{IpFamily, Snapshot};
use std::net::IpAddr;

/// Above this many endpoints upstream leaves out per-endpoint details
/// ("large cluster mode").
const LARGE_CLUSTER_ENDPOINTS: usize = 1000;

/// Where NodePorts answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodePorts {
    /// On every local address of the family.
    EveryLocalAddress,
    /// On these local addresses only (sorted, once each; loopback only
    /// with localhost NodePorts).
    Only(Vec<IpAddr>),
}

/// The per-sync settings every service port is planned and rendered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncContext {
    /// The family rendered.
    pub family: IpFamily,
    /// The masquerade mark.
    pub mark: Mark,
    /// How pod traffic is detected (`detectLocalMode` for the family);
    /// `None` when it cannot be told apart.
    pub local_traffic: Option<LocalTraffic>,
    /// `masqueradeAll`.
    pub masquerade_all: bool,
    /// Localhost NodePorts are on (IPv4, option set, loopback included in
    /// the NodePort addresses).
    pub localhost_nodeports: bool,
    /// More than 1000 endpoints: per-endpoint comments are left out.
    pub large_cluster: bool,
    /// The Node's primary IP of the family (first of its addresses).
    pub node_ip: Option<IpAddr>,
    /// Where NodePorts answer.
    pub node_ports: NodePorts,
    /// The node's local addresses of the family, sorted, once each.
    pub local_addresses: Vec<IpAddr>,
    /// The node's name, for `forNodes` topology hints.
    pub node_name: String,
    /// The node's zone, for `forZones` topology hints.
    pub zone: Option<String>,
}

impl SyncContext {
    /// Derives the settings for `snapshot` with `opts` on a node with
    /// `facts`.
    pub fn new(snapshot: &Snapshot, opts: &Options, facts: &NodeFacts) -> Self {
        let family = opts.family;
        let node_ip = snapshot.node.addresses.iter().copied().find(|ip| family.contains(*ip));
        let cidrs = opts.node_port_cidrs(node_ip);
        let localhost_nodeports =
            opts.localhost_nodeports && family == IpFamily::V4 && cidrs.as_deref().is_none_or(has_ipv4_loopback);
        let mut local_addresses: Vec<IpAddr> =
            facts.local_addresses.iter().copied().filter(|ip| family.contains(*ip)).collect();
        local_addresses.sort();
        local_addresses.dedup();
        let node_ports = match cidrs {
            None => NodePorts::EveryLocalAddress,
            Some(c) => NodePorts::Only(addresses_in(&c, &local_addresses, localhost_nodeports)),
        };
        Self {
            family,
            mark: Mark(1u32.checked_shl(u32::from(opts.masquerade_bit)).unwrap_or(1 << 14)),
            local_traffic: local_traffic(snapshot, opts),
            masquerade_all: opts.masquerade_all,
            localhost_nodeports,
            large_cluster: total_endpoints(snapshot, family) > LARGE_CLUSTER_ENDPOINTS,
            node_ip,
            node_ports,
            local_addresses,
            node_name: snapshot.node.name.clone(),
            zone: snapshot.node.zone.clone(),
        }
    }

    /// What topology-aware routing knows of the node.
    pub fn topology(&self) -> NodeTopology<'_> {
        NodeTopology { name: &self.node_name, zone: self.zone.as_deref() }
    }

    /// The addresses NodePorts answer on, listed (never loopback): for
    /// modes that need one entry per address, such as IPVS virtual servers.
    pub fn node_port_addresses(&self) -> Vec<IpAddr> {
        let listed = match &self.node_ports {
            NodePorts::EveryLocalAddress => &self.local_addresses,
            NodePorts::Only(ips) => ips,
        };
        listed.iter().copied().filter(|ip| !ip.is_loopback()).collect()
    }

    /// `ip` is one of the node's own addresses.
    pub fn is_local_address(&self, ip: IpAddr) -> bool {
        self.local_addresses.binary_search(&ip).is_ok()
    }
}

/// The local-traffic detector of the family per `detectLocalMode`: the
/// first CIDR of the family, or the interface (prefix) whatever the
/// family.
fn local_traffic(snapshot: &Snapshot, opts: &Options) -> Option<LocalTraffic> {
    let family = opts.family;
    let first_of_family = |cidrs: &[IpNet]| cidrs.iter().find(|c| family.contains_net(c)).copied();
    match &opts.local_detection {
        LocalDetection::ClusterCidr(cidrs) => first_of_family(cidrs).map(LocalTraffic::Cidr),
        LocalDetection::NodeCidr => first_of_family(&snapshot.node.pod_cidrs).map(LocalTraffic::Cidr),
        LocalDetection::BridgeInterface(name) => Some(LocalTraffic::Interface(name.clone())),
        LocalDetection::InterfaceNamePrefix(prefix) => Some(LocalTraffic::InterfacePrefix(prefix.clone())),
    }
}

/// Upstream's `ContainsIPv4Loopback`.
fn has_ipv4_loopback(cidrs: &[IpNet]) -> bool {
    let start: IpAddr = [127, 0, 0, 0].into();
    cidrs.iter().any(|c| c.addr().is_ipv4() && (c.addr().is_loopback() || c.contains(&start)))
}

/// The local addresses inside `cidrs`; loopback only when localhost
/// NodePorts are on. `local` is sorted and deduplicated.
fn addresses_in(cidrs: &[IpNet], local: &[IpAddr], localhost: bool) -> Vec<IpAddr> {
    local
        .iter()
        .copied()
        .filter(|ip| cidrs.iter().any(|c| c.contains(ip)))
        .filter(|ip| localhost || !ip.is_loopback())
        .collect()
}

/// Endpoints of every service port of `family`, as upstream counts them
/// for large-cluster mode.
fn total_endpoints(snapshot: &Snapshot, family: IpFamily) -> usize {
    snapshot
        .services
        .iter()
        .filter(|(_, svc)| family.contains(svc.cluster_ip))
        .map(|(name, _)| snapshot.endpoints_of(name).len())
        .sum()
}
