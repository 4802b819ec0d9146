//! The proxy configuration every mode shares, for one IP family.

use ipnet::IpNet;
use model::IpFamily;

/// How the proxy tells pod traffic from other traffic (`detectLocalMode`
/// with its parameter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalDetection {
    /// `ClusterCIDR`: traffic from the cluster CIDR of the family is pod
    /// traffic. No CIDR of the family disables detection (upstream's
    /// default: `ClusterCIDR` without `clusterCIDR`).
    ClusterCidr(Vec<IpNet>),
    /// `NodeCIDR`: traffic from the Node's `podCIDRs` of the family.
    NodeCidr,
    /// `BridgeInterface`: traffic in from this bridge.
    BridgeInterface(String),
    /// `InterfaceNamePrefix`: traffic in from interfaces with this prefix.
    InterfaceNamePrefix(String),
}

impl Default for LocalDetection {
    fn default() -> Self {
        Self::ClusterCidr(Vec::new())
    }
}

/// `nodePortAddresses`: where NodePorts answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NodePortAddresses {
    /// Unset: every local address.
    #[default]
    All,
    /// `primary`: the Node's primary IP of the family only.
    Primary,
    /// The local addresses inside these CIDRs (none of the family, or a
    /// `/0`, means every local address).
    Cidrs(Vec<IpNet>),
}

/// The configuration every mode renders with. `Default` is upstream's
/// default for IPv4. Mode-specific settings (IPVS scheduler, iptables
/// nfacct and `--random-fully`) live in the mode's own options beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The IP family rendered; services and addresses of the other family
    /// are ignored.
    pub family: IpFamily,
    /// `detectLocalMode` and its parameter.
    pub local_detection: LocalDetection,
    /// `masqueradeAll`: masquerade all traffic to cluster IPs.
    pub masquerade_all: bool,
    /// `iptables.masqueradeBit` (0..=31): the mark is `1 << bit`.
    pub masquerade_bit: u8,
    /// `nodePortAddresses`.
    pub node_port_addresses: NodePortAddresses,
    /// `iptables.localhostNodePorts`: NodePorts answer on 127.0.0.0/8
    /// (IPv4 only, and only if the NodePort addresses include loopback).
    pub localhost_nodeports: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            family: IpFamily::V4,
            local_detection: LocalDetection::default(),
            masquerade_all: false,
            masquerade_bit: 14,
            node_port_addresses: NodePortAddresses::All,
            localhost_nodeports: true,
        }
    }
}

impl Options {
    /// Upstream's defaults with local traffic detected by `cidr`
    /// (`detectLocalMode: ClusterCIDR`).
    pub fn with_cluster_cidr(cidr: IpNet) -> Self {
        Self { local_detection: LocalDetection::ClusterCidr(vec![cidr]), ..Self::default() }
    }

    /// The `nodePortAddresses` CIDRs of this family, with `primary`
    /// resolved to `node_ip`; `None` when NodePorts answer on every local
    /// address (nothing of this family given, or a `/0`).
    pub(crate) fn node_port_cidrs(&self, node_ip: Option<std::net::IpAddr>) -> Option<Vec<IpNet>> {
        let cidrs: Vec<IpNet> = match &self.node_port_addresses {
            NodePortAddresses::All => Vec::new(),
            NodePortAddresses::Primary => node_ip.map(IpNet::from).into_iter().collect(),
            NodePortAddresses::Cidrs(list) => list.iter().filter(|c| self.family.contains_net(c)).copied().collect(),
        };
        if cidrs.is_empty() || cidrs.iter().any(|c| c.prefix_len() == 0) {
            return None;
        }
        Some(cidrs)
    }
}
