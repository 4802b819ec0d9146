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

use crate::rendering::{Piece, Rendering};
use crate::{BuiltinJump, Ruleset, TableRules};
use std::borrow::Cow;
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
/// static chains and the jumps from the built-in chains, collected in
/// one [`Ruleset`] (for tests, `--dry-run` and small rule sets; a sync
/// streams [`stream`] instead).
pub fn render(snapshot: &model::Snapshot, opts: &RenderOptions) -> Rendered {
    let streamed = stream(snapshot, opts);
    let mut out = Rendered::default();
    out.ruleset.builtin_jumps = streamed.builtin_jumps().into_owned();
    for piece in streamed.pieces() {
        out.no_local_endpoints.internal += piece.no_local_endpoints.internal;
        out.no_local_endpoints.external += piece.no_local_endpoints.external;
        append(&mut out.ruleset, &piece.rules);
    }
    out
}

/// The rendering of `snapshot` with `opts`, piece by piece: the static
/// chains, one piece per service port in name order, then the rules
/// that end the shared chains. Rendered again on every walk.
pub fn stream<'a>(snapshot: &'a model::Snapshot, opts: &RenderOptions) -> Streamed<'a> {
    Streamed { snapshot, ctx: RenderContext::new(snapshot, opts) }
}

/// A snapshot rendered on demand, piece by piece (see [`stream`]).
#[derive(Debug, Clone)]
pub struct Streamed<'a> {
    snapshot: &'a model::Snapshot,
    ctx: RenderContext,
}

impl Rendering for Streamed<'_> {
    fn pieces(&self) -> Box<dyn Iterator<Item = Piece<'_>> + Send + '_> {
        let ctx = &self.ctx;
        let shared = Piece { rules: Cow::Owned(static_chains::render_static(ctx)), open: true, no_local_endpoints: NoLocalEndpoints::default() };
        let ports = self.snapshot.services.iter().filter(|(_, svc)| ctx.family.contains(svc.cluster_ip)).map(|(name, svc)| {
            port_piece(render_service_port(ctx, svc, self.snapshot.endpoints_of(name)))
        });
        let tail = Piece { rules: Cow::Owned(static_chains::render_tail(ctx)), open: false, no_local_endpoints: NoLocalEndpoints::default() };
        Box::new(std::iter::once(shared).chain(ports).chain(std::iter::once(tail)))
    }

    fn builtin_jumps(&self) -> Cow<'_, [BuiltinJump]> {
        Cow::Owned(builtin_jumps::render())
    }
}

/// One service port's rules as a piece: its entries in the shared chains,
/// then its own chains with their rules.
fn port_piece(port: ServicePortRules) -> Piece<'static> {
    let no_local_endpoints =
        NoLocalEndpoints { internal: usize::from(port.no_local_internal), external: usize::from(port.no_local_external) };
    let mut nat = TableRules { chains: port.nat_chains, rules: port.nat_entries };
    nat.rules.extend(port.nat_rules);
    let rules = Ruleset { filter: TableRules { chains: Vec::new(), rules: port.filter }, nat, ..Ruleset::default() };
    Piece { rules: Cow::Owned(rules), open: false, no_local_endpoints }
}

/// Appends the chains and rules of `piece` to `out`, table by table.
fn append(out: &mut Ruleset, piece: &Ruleset) {
    for (into, from) in [(&mut out.filter, &piece.filter), (&mut out.nat, &piece.nat), (&mut out.mangle, &piece.mangle)] {
        into.chains.extend_from_slice(&from.chains);
        into.rules.extend_from_slice(&from.rules);
    }
}
