//! What the renderer needs besides the snapshot: the proxy's IPVS-mode
//! configuration for one IP family, and the node's addresses.

use crate::Scheduler;
use ipnet::IpNet;
use iptables::render::IpFamily;
use std::net::IpAddr;

/// How to render. `Default` is upstream's default configuration for IPv4
/// (rr, mark bit 14, no cluster CIDR, no local addresses known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// The IP family rendered; services of the other family are ignored.
    pub family: IpFamily,
    /// `--ipvs-scheduler`.
    pub scheduler: Scheduler,
    /// `masqueradeAll`: masquerade all traffic to cluster IPs.
    pub masquerade_all: bool,
    /// `iptables.masqueradeBit`: the mark is `1 << bit`.
    pub masquerade_bit: u8,
    /// `clusterCIDR` (local-traffic detection): traffic to a ClusterIP from
    /// outside it is masqueraded. `None` masquerades the node's own
    /// traffic sourced from a service address instead (upstream's
    /// `src,dst` rule).
    pub cluster_cidr: Option<IpNet>,
    /// The node's local addresses except those on the dummy interface
    /// (upstream reads them from the interfaces each sync): NodePort
    /// virtual servers are made on them, and external / load-balancer IPs
    /// among them are not bound to `kube-ipvs0`.
    pub local_addresses: Vec<IpAddr>,
    /// `nodePortAddresses` CIDRs; none of this family means every local
    /// address (loopback excluded).
    pub node_port_addresses: Vec<IpNet>,
    /// iptables supports `MASQUERADE --random-fully`.
    pub random_fully: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            family: IpFamily::V4,
            scheduler: Scheduler::default(),
            masquerade_all: false,
            masquerade_bit: 14,
            cluster_cidr: None,
            local_addresses: Vec::new(),
            node_port_addresses: Vec::new(),
            random_fully: true,
        }
    }
}

impl RenderOptions {
    /// The addresses NodePort virtual servers are made on: the local
    /// addresses of this family inside `node_port_addresses` (all of them
    /// when none is given), never loopback, sorted.
    pub fn node_port_ips(&self) -> Vec<IpAddr> {
        let cidrs: Vec<&IpNet> = self.node_port_addresses.iter().filter(|c| self.family.contains_net(c)).collect();
        let mut ips: Vec<IpAddr> = self
            .local_addresses
            .iter()
            .copied()
            .filter(|ip| self.family.contains(*ip) && !ip.is_loopback())
            .filter(|ip| cidrs.is_empty() || cidrs.iter().any(|c| c.contains(ip)))
            .collect();
        ips.sort();
        ips.dedup();
        ips
    }

    /// The masquerade mark, e.g. `0x4000`.
    pub fn mark(&self) -> String {
        format!("{:#x}", 1u32.checked_shl(u32::from(self.masquerade_bit)).unwrap_or(1 << 14))
    }
}
