//! What the renderer needs besides the snapshot: the shared options, IPVS
//! mode's own, and the node's addresses.

use crate::Scheduler;
use plan::Options;
use std::net::IpAddr;

/// How to render. `Default` is upstream's default configuration for IPv4
/// (rr, mark bit 14, no cluster CIDR, no local addresses known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// The options every mode shares (family, local-traffic detection,
    /// masquerading, NodePort addresses).
    pub common: Options,
    /// `--ipvs-scheduler`.
    pub scheduler: Scheduler,
    /// The node's local addresses except those on the dummy interface
    /// (the host layer reads them from the interfaces each sync): NodePort
    /// virtual servers are made on them, and external / load-balancer IPs
    /// among them are not bound to `kube-ipvs0`.
    pub local_addresses: Vec<IpAddr>,
    /// iptables supports `MASQUERADE --random-fully`.
    pub random_fully: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self { common: Options::default(), scheduler: Scheduler::default(), local_addresses: Vec::new(), random_fully: true }
    }
}
