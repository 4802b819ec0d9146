//! The local-traffic detector of one family: how each mode tells traffic
//! from pods on this node apart (upstream's `LocalTrafficDetector`). The
//! plan decides it once per sync; renderers only spell it.

use ipnet::IpNet;

/// What marks traffic as coming from a pod; `None` in a
/// [`crate::SyncContext`] when it cannot be told apart (upstream's no-op
/// detector).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalTraffic {
    /// From this pod network (`ClusterCIDR`, `NodeCIDR`): iptables
    /// `-s <cidr>`, nftables `ip saddr <cidr>`.
    Cidr(IpNet),
    /// In from this bridge (`BridgeInterface`): iptables `-i <name>`,
    /// nftables `iifname <name>`.
    Interface(String),
    /// In from an interface whose name starts with this prefix
    /// (`InterfaceNamePrefix`): iptables `-i <prefix>+`, nftables
    /// `iifname <prefix>*`.
    InterfacePrefix(String),
}
