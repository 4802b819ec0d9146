//! `KUBE-SEP-<hash>`: one chain per reachable endpoint. It marks hairpin
//! traffic (the endpoint reaching itself through the service) for
//! masquerade, records ClientIP affinity, and DNATs to the endpoint.

use xtables::FamilyText;
use super::naming::NamedPlan;
use xtables::rules::{self as rule, Rule, Target};
use super::{RenderContext, ServicePortRules};
use crate::chain_name::KUBE_MARK_MASQ;
use model::Endpoint;

/// The SEP chains of every endpoint some traffic can reach.
pub(crate) fn render(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    for ep in &plan.port.reachable {
        render_endpoint(ctx, plan, ep, out);
    }
}

fn render_endpoint(ctx: &RenderContext, plan: &NamedPlan, ep: &Endpoint, out: &mut ServicePortRules) {
    let sep = plan.sep_chain(ep);
    out.declare(sep);
    let base = || {
        let rule = Rule::new(sep);
        if ctx.sync.large_cluster { rule } else { rule.comment(&plan.name) }
    };
    out.nat_rules.push(base().src(&rule::host(ep.ip)).jump(KUBE_MARK_MASQ).build());
    let mut dnat = base().proto(plan.proto);
    if plan.port.svc.session_affinity_seconds.is_some() {
        let mask = ctx.sync.family.recent_mask();
        dnat = dnat.matching(&format!("-m recent --set --name {sep} --mask {mask} --rsource"));
    }
    let dnat = dnat.matching(&format!("-m {}", plan.proto)).target(Target::Dnat(ep.addr()));
    out.nat_rules.push(dnat.build());
}
