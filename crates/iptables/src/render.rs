//! The pure renderer: one IP family of a [`model::Snapshot`] to a
//! [`Ruleset`], the rules upstream kube-proxy's iptables mode writes for
//! the same state, rule for rule and byte for byte as `iptables-save`
//! prints them.
//!
//! Layout: [`render`] assembles the static chains ([`static_chains`]) and,
//! for every service port in name order, [`render_service_port`], which
//! takes the port's [`plan::PortPlan`] (the decisions every mode shares),
//! names its chains once (`naming`) and then renders one traffic kind
//! per module (cluster IP, external IPs, load-balancer IPs and firewall,
//! node ports, no-endpoint filter rules, EXT chains, SVC/SVL balancing, SEP
//! chains). A later partial sync can re-render only the changed ports.

mod balancing;
mod builtin_jumps;
mod cluster_ip;

mod context;
mod endpoint_chains;
mod external_chain;
mod external_ip;

mod load_balancer;
mod local_traffic;
mod no_endpoints;
mod node_port;
mod naming;

mod service_port;
mod static_chains;

pub use xtables::rules::consistency_problems;
pub use xtables::FamilyText;
pub use context::RenderContext;
pub use service_port::{ServicePortRules, render_service_port, render_service_port_entries};

use xtables::{Piece, Rendering};
use xtables::{BuiltinJump, Ruleset, TableRules};
use std::borrow::Cow;
use std::collections::BTreeSet;
use model::ServiceName;
pub use plan::NoLocalEndpoints;
use plan::Options;
use std::net::IpAddr;

/// How to render: the shared options for one IP family plus iptables
/// mode's own. `Default` is upstream's default configuration for IPv4 on a
/// kernel with nfacct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// The options every mode shares (family, local-traffic detection,
    /// masquerading, NodePort addresses).
    pub common: Options,
    /// The node's local addresses, matched against `nodePortAddresses`
    /// (the host layer reads them from the interfaces). Empty means the
    /// Node's addresses (`snapshot.node.addresses`).
    pub local_addresses: Vec<IpAddr>,
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
            common: Options::default(),
            local_addresses: Vec::new(),
            nfacct: true,
            conntrack_tcp_be_liberal: false,
            random_fully: true,
        }
    }
}

/// What one render produces: the rules and the figures the metrics need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The rules to apply.
    pub ruleset: Ruleset,
    /// Services without the local endpoints their policy needs.
    pub no_local_endpoints: NoLocalEndpoints,
}

/// Renders every service port of `snapshot` (of `opts.common.family`) with the
/// static chains and the jumps from the built-in chains, collected in
/// one [`Ruleset`] (for tests, `--dry-run` and small rule sets; a sync
/// streams [`stream`] instead).
pub fn render(snapshot: &model::Snapshot, opts: &RenderOptions) -> Rendered {
    let streamed = stream(snapshot, opts);
    let mut out = Rendered::default();
    out.ruleset.builtin_jumps = streamed.builtin_jumps().into_owned();
    for piece in streamed.pieces() {
        out.no_local_endpoints += piece.no_local_endpoints;
        append(&mut out.ruleset, piece.rules.into_owned());
    }
    out.ruleset.shrink_to_fit();
    out
}

/// The rendering of `snapshot` with `opts`, piece by piece: the static
/// chains, one piece per service port in name order, then the rules
/// that end the shared chains. Rendered again on every walk.
pub fn stream<'a>(snapshot: &'a model::Snapshot, opts: &RenderOptions) -> Streamed<'a> {
    stream_with(snapshot, RenderContext::new(snapshot, opts), None)
}

/// The rendering of `snapshot` in `ctx`, as [`stream`]; with `changed`,
/// for a partial sync: the ports of services not in `changed` are carried
/// pieces (their rules in the shared chains only, their own chains left as
/// the last sync wrote them), which is right only when that sync rendered
/// them in an equal `ctx` and nothing else changed them since.
pub fn stream_with<'a>(snapshot: &'a model::Snapshot, ctx: RenderContext, changed: Option<&'a BTreeSet<ServiceName>>) -> Streamed<'a> {
    Streamed { snapshot, ctx, changed }
}

/// A snapshot rendered on demand, piece by piece (see [`stream`]).
#[derive(Debug, Clone)]
pub struct Streamed<'a> {
    snapshot: &'a model::Snapshot,
    ctx: RenderContext,
    /// Only these services' ports are rendered whole (see [`stream_with`]).
    changed: Option<&'a BTreeSet<ServiceName>>,
}

impl Streamed<'_> {
    /// The settings it renders with.
    pub fn context(&self) -> &RenderContext {
        &self.ctx
    }

    /// Gives up the settings it renders with.
    pub fn into_context(self) -> RenderContext {
        self.ctx
    }
}

impl Rendering for Streamed<'_> {
    fn pieces(&self) -> Box<dyn Iterator<Item = Piece<'_>> + Send + '_> {
        let ctx = &self.ctx;
        let shared = Piece::new(Cow::Owned(static_chains::render_static(ctx)), true);
        let family = ctx.sync.family;
        let changed = self.changed;
        let ports = self.snapshot.services.iter().filter(move |(_, svc)| family.contains(svc.cluster_ip)).map(move |(name, svc)| {
            let endpoints = self.snapshot.endpoints_of(name);
            let carried = changed.is_some_and(|changed| !changed.contains(&name.service));
            let rules = if carried { render_service_port_entries(ctx, svc, endpoints) } else { render_service_port(ctx, svc, endpoints) };
            Piece { key: Some(name.clone()), carried, ..port_piece(rules) }
        });
        let tail = Piece::new(Cow::Owned(static_chains::render_tail(ctx)), false);
        Box::new(std::iter::once(shared).chain(ports).chain(std::iter::once(tail)))
    }

    fn builtin_jumps(&self) -> Cow<'_, [BuiltinJump]> {
        Cow::Owned(builtin_jumps::render())
    }
}

/// One service port's rules as a piece: its entries in the shared chains,
/// then its own chains with their rules.
fn port_piece(port: ServicePortRules) -> Piece<'static> {
    let no_local_endpoints = port.no_local_endpoints;
    let mut nat = TableRules { chains: port.nat_chains, rules: port.nat_entries };
    nat.rules.extend(port.nat_rules);
    let rules = Ruleset { filter: TableRules { chains: Vec::new(), rules: port.filter }, nat, ..Ruleset::default() };
    Piece { no_local_endpoints, ..Piece::new(Cow::Owned(rules), false) }
}

/// Moves the chains and rules of `piece` to the end of `out`, table by table.
fn append(out: &mut Ruleset, piece: Ruleset) {
    for (into, from) in [(&mut out.filter, piece.filter), (&mut out.nat, piece.nat), (&mut out.mangle, piece.mangle)] {
        into.chains.extend(from.chains);
        into.rules.extend(from.rules);
    }
}
