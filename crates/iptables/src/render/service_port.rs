//! One service port's rules: its entries in the shared chains and its own
//! chains. The unit a partial sync re-renders.

use super::naming::NamedPlan;
use super::{
    RenderContext, balancing, cluster_ip, endpoint_chains, external_chain, external_ip, load_balancer,
    no_endpoints, node_port,
};
use model::{Endpoint, ServicePort};
use plan::{NoLocalEndpoints, PortPlan};
use xtables::Rule;

/// The rules of one service port, split by where they live.
///
/// The shared chains (`KUBE-SERVICES`, `KUBE-NODEPORTS`, ...) are rewritten
/// whole on every sync, so `filter` and `nat_entries` are always needed; the
/// port's own chains (`nat_chains` with `nat_rules`) can be left out of a
/// partial sync when the port did not change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServicePortRules {
    /// Rules in the shared filter chains (`KUBE-SERVICES`,
    /// `KUBE-EXTERNAL-SERVICES`, `KUBE-NODEPORTS`, `KUBE-PROXY-FIREWALL`).
    pub filter: Vec<Rule>,
    /// Rules in the shared nat chains (`KUBE-SERVICES`, `KUBE-NODEPORTS`).
    pub nat_entries: Vec<Rule>,
    /// The port's own nat chains: `KUBE-EXT`, `KUBE-FW`, `KUBE-SVC`,
    /// `KUBE-SVL`, `KUBE-SEP`s.
    pub nat_chains: Vec<String>,
    /// The rules of `nat_chains`.
    pub nat_rules: Vec<Rule>,
    /// Local traffic policies of the port without a local endpoint.
    pub no_local_endpoints: NoLocalEndpoints,
}

impl ServicePortRules {
    /// Declares one of the port's own chains.
    pub(crate) fn declare(&mut self, chain: &str) {
        self.nat_chains.push(chain.to_string());
    }
}

/// Renders `svc` with its `endpoints` (any order, any family: the
/// renderer keeps those of `ctx`'s family in upstream's order).
pub fn render_service_port(ctx: &RenderContext, svc: &ServicePort, endpoints: &[Endpoint]) -> ServicePortRules {
    let endpoints = plan::upstream_order(endpoints, ctx.sync.family);
    let plan = NamedPlan::new(PortPlan::new(&ctx.sync, svc, &endpoints));
    let mut out = ServicePortRules { no_local_endpoints: plan.port.no_local_endpoints(), ..ServicePortRules::default() };
    render_entries(ctx, &plan, &mut out);
    render_own_chains(ctx, &plan, &mut out);
    out
}

/// The rules of `svc` in the shared chains only (`filter` and
/// `nat_entries`; no chain of its own declared): a port a partial sync
/// carries over unchanged.
pub fn render_service_port_entries(ctx: &RenderContext, svc: &ServicePort, endpoints: &[Endpoint]) -> ServicePortRules {
    let endpoints = plan::upstream_order(endpoints, ctx.sync.family);
    let plan = NamedPlan::new(PortPlan::new(&ctx.sync, svc, &endpoints));
    let mut out = ServicePortRules { no_local_endpoints: plan.port.no_local_endpoints(), ..ServicePortRules::default() };
    render_entries(ctx, &plan, &mut out);
    out
}

/// Rules in the shared chains that lead to (or stand in for) the port.
fn render_entries(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    cluster_ip::render_entry(ctx, plan, out);
    external_ip::render_entries(ctx, plan, out);
    load_balancer::render_entries(ctx, plan, out);
    node_port::render_entries(ctx, plan, out);
    no_endpoints::render_filters(ctx, plan, out);
    node_port::render_health_check(plan, out);
}

/// The port's own nat chains, in upstream's order.
fn render_own_chains(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    external_chain::render(ctx, plan, out);
    load_balancer::render_firewall_chain(ctx, plan, out);
    cluster_ip::render_masquerade(ctx, plan, out);
    balancing::render(ctx, plan, out);
    endpoint_chains::render(ctx, plan, out);
}
