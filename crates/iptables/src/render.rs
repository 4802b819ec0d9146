//! The pure renderer: one IP family of a [`model::Snapshot`] to a
//! [`Ruleset`], the rules upstream kube-proxy's iptables mode writes for
//! the same state, rule for rule and byte for byte as `iptables-save`
//! prints them.
//!
//! Layout: [`render`] assembles the static chains ([`static_chains`]) and,
//! for every service port in name order, [`render_service_port`], which
//! decides the port's traffic plan once and then renders one traffic kind
//! per module (cluster IP, external IPs, load-balancer IPs and firewall,
//! node ports, no-endpoint filter rules, EXT chains, SVC/SVL balancing, SEP
//! chains). A later partial sync can re-render only the changed ports.

mod balancing;
mod builtin_jumps;
mod cluster_ip;
mod consistency;
mod context;
mod endpoint_chains;
mod external_chain;
mod external_ip;
mod family;
mod load_balancer;
mod no_endpoints;
mod node_port;
mod plan;
pub(crate) mod rule;
mod service_port;
mod static_chains;

pub use consistency::consistency_problems;
pub use context::RenderContext;
pub use family::IpFamily;
pub use service_port::{ServicePortRules, render_service_port};

use crate::{Ruleset, TableRules};
use ipnet::IpNet;
use std::net::IpAddr;

/// How to render: the proxy's configuration for one IP family. `Default`
/// is upstream's default configuration for IPv4 on a kernel with nfacct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// The IP family rendered; services and addresses of the other family
    /// are ignored.
    pub family: IpFamily,
    /// `clusterCIDR` for `detectLocalMode: ClusterCIDR` (or the node's pod
    /// CIDR for `NodeCIDR`): traffic from it counts as pod traffic. `None`
    /// (or a CIDR of the other family) disables local-traffic detection.
    pub cluster_cidr: Option<IpNet>,
    /// `masqueradeAll`: masquerade all traffic to cluster IPs.
    pub masquerade_all: bool,
    /// `iptables.masqueradeBit` (0..=31): the mark is `1 << bit`.
    pub masquerade_bit: u8,
    /// `nodePortAddresses` CIDRs; none of this family means every local
    /// address (`--dst-type LOCAL`).
    pub node_port_addresses: Vec<IpNet>,
    /// `nodePortAddresses` held upstream's `primary` keyword: the node's
    /// primary IP of this family (first of `snapshot.node.addresses`) is
    /// added as a host CIDR.
    pub node_port_primary: bool,
    /// The node's local addresses, matched against `node_port_addresses`
    /// when those are set (upstream reads them from the interfaces). Empty
    /// means `snapshot.node.addresses`.
    pub node_ips: Vec<IpAddr>,
    /// `iptables.localhostNodePorts`: NodePorts answer on 127.0.0.0/8
    /// (IPv4 only, and only if `node_port_addresses` include loopback).
    pub localhost_nodeports: bool,
    /// The kernel has the nfacct counters: emit `-m nfacct` matches.
    pub nfacct: bool,
    /// `nf_conntrack_tcp_be_liberal` is set: no DROP of INVALID packets.
    pub conntrack_tcp_be_liberal: bool,
    /// iptables supports `MASQUERADE --random-fully`.
    pub random_fully: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            family: IpFamily::V4,
            cluster_cidr: None,
            masquerade_all: false,
            masquerade_bit: 14,
            node_port_addresses: Vec::new(),
            node_port_primary: false,
            node_ips: Vec::new(),
            localhost_nodeports: true,
            nfacct: true,
            conntrack_tcp_be_liberal: false,
            random_fully: true,
        }
    }
}

/// Services whose traffic policy is Local but that have no local endpoint,
/// for `kubeproxy_sync_proxy_rules_no_local_endpoints_total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoLocalEndpoints {
    /// `traffic_policy="internal"`: internalTrafficPolicy Local.
    pub internal: usize,
    /// `traffic_policy="external"`: externalTrafficPolicy Local.
    pub external: usize,
}

/// What one render produces: the rules and the figures the metrics need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The rules to apply.
    pub ruleset: Ruleset,
    /// Services without the local endpoints their policy needs.
    pub no_local_endpoints: NoLocalEndpoints,
}

/// Renders every service port of `snapshot` (of `opts.family`) with the
/// static chains and the jumps from the built-in chains.
pub fn render(snapshot: &model::Snapshot, opts: &RenderOptions) -> Rendered {
    let ctx = RenderContext::new(snapshot, opts);
    let mut out = Rendered { ruleset: static_chains::render_static(&ctx), ..Rendered::default() };
    for (name, svc) in &snapshot.services {
        if !ctx.family.contains(svc.cluster_ip) {
            continue;
        }
        let port = render_service_port(&ctx, svc, snapshot.endpoints_of(name));
        add_service_port(&mut out, port);
    }
    static_chains::append_tail_rules(&ctx, &mut out.ruleset);
    out
}

/// Adds one service port's rules to the whole.
fn add_service_port(out: &mut Rendered, port: ServicePortRules) {
    out.no_local_endpoints.internal += usize::from(port.no_local_internal);
    out.no_local_endpoints.external += usize::from(port.no_local_external);
    out.ruleset.filter.rules.extend(port.filter);
    let nat: &mut TableRules = &mut out.ruleset.nat;
    nat.rules.extend(port.nat_entries);
    nat.chains.extend(port.nat_chains);
    nat.rules.extend(port.nat_rules);
}
