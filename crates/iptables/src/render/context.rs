//! Everything a render derives once from the options and the node before
//! looking at any service: the mark, local-traffic detection, where
//! NodePorts answer, and whether comments are elided.

use super::{IpFamily, RenderOptions, rule};
use ipnet::IpNet;
use model::Snapshot;
use std::net::IpAddr;

/// Above this many endpoints upstream drops the per-endpoint comments
/// ("large cluster mode").
const LARGE_CLUSTER_ENDPOINTS: usize = 1000;

/// The per-sync settings every service port is rendered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderContext {
    pub(crate) family: IpFamily,
    /// Masquerade mark, e.g. `0x4000`.
    pub(crate) mark: String,
    /// The pod network for local-traffic detection, as printed.
    pub(crate) local_net: Option<String>,
    pub(crate) masquerade_all: bool,
    /// Localhost NodePorts are on (IPv4, option set, loopback included).
    pub(crate) localhost_nodeports: bool,
    pub(crate) nfacct: bool,
    pub(crate) conntrack_liberal: bool,
    pub(crate) random_fully: bool,
    /// Per-endpoint comments are left out.
    pub(crate) large_cluster: bool,
    /// The node's primary IP of this family.
    pub(crate) node_ip: Option<IpAddr>,
    /// Where NodePorts answer: `None` for every local address, else these
    /// addresses.
    pub(crate) node_port_ips: Option<Vec<IpAddr>>,
}

impl RenderContext {
    /// Derives the settings for rendering `snapshot` with `opts`.
    pub fn new(snapshot: &Snapshot, opts: &RenderOptions) -> Self {
        let family = opts.family;
        let node_ip = snapshot.node.addresses.iter().copied().find(|ip| family.contains(*ip));
        let cidrs = node_port_cidrs(opts, node_ip);
        let localhost_nodeports =
            opts.localhost_nodeports && family == IpFamily::V4 && cidrs.as_deref().is_none_or(has_ipv4_loopback);
        let local_ips = if opts.node_ips.is_empty() { &snapshot.node.addresses } else { &opts.node_ips };
        let node_port_ips = cidrs.map(|c| node_ips_in(&c, local_ips, localhost_nodeports));
        Self {
            family,
            mark: format!("{:#x}", 1u32.checked_shl(u32::from(opts.masquerade_bit)).unwrap_or(1 << 14)),
            local_net: opts.cluster_cidr.filter(|c| family.contains_net(c)).map(|c| rule::net(&c)),
            masquerade_all: opts.masquerade_all,
            localhost_nodeports,
            nfacct: opts.nfacct,
            conntrack_liberal: opts.conntrack_tcp_be_liberal,
            random_fully: opts.random_fully,
            large_cluster: total_endpoints(snapshot, family) > LARGE_CLUSTER_ENDPOINTS,
            node_ip,
            node_port_ips,
        }
    }
}

/// The NodePort CIDRs of this family, or `None` when NodePorts answer on
/// every local address (nothing of this family given, or a /0).
fn node_port_cidrs(opts: &RenderOptions, node_ip: Option<IpAddr>) -> Option<Vec<IpNet>> {
    let mut cidrs: Vec<IpNet> =
        opts.node_port_addresses.iter().filter(|c| opts.family.contains_net(c)).copied().collect();
    if opts.node_port_primary {
        cidrs.extend(node_ip.map(IpNet::from));
    }
    if cidrs.is_empty() || cidrs.iter().any(|c| c.prefix_len() == 0) {
        return None;
    }
    Some(cidrs)
}

/// Upstream's `ContainsIPv4Loopback`.
fn has_ipv4_loopback(cidrs: &[IpNet]) -> bool {
    let start: IpAddr = [127, 0, 0, 0].into();
    cidrs.iter().any(|c| c.addr().is_ipv4() && (c.addr().is_loopback() || c.contains(&start)))
}

/// The local addresses inside `cidrs` (sorted, once each); loopback only
/// when localhost NodePorts are on.
fn node_ips_in(cidrs: &[IpNet], local_ips: &[IpAddr], localhost: bool) -> Vec<IpAddr> {
    let mut ips: Vec<IpAddr> = local_ips
        .iter()
        .copied()
        .filter(|ip| cidrs.iter().any(|c| c.contains(ip)))
        .filter(|ip| localhost || !ip.is_loopback())
        .collect();
    ips.sort();
    ips.dedup();
    ips
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
