//! Filter rules for traffic with nowhere to go: REJECT when the port has no
//! endpoints at all, DROP when its traffic policy is Local and this node
//! has none. ClusterIP traffic in filter `KUBE-SERVICES`; external IPs, LB
//! IPs and the node port in `KUBE-EXTERNAL-SERVICES`.

use xtables::FamilyText;
use super::naming::{NamedPlan, Verdict};
use plan::Refusal;
use xtables::rules::{self as rule, Rule, Target};
use super::{RenderContext, ServicePortRules};
use crate::chain_name::{KUBE_EXTERNAL_SERVICES, KUBE_SERVICES};
use std::net::IpAddr;

/// What a refusal rule matches.
enum Dest {
    /// An address and the service port.
    Ip(IpAddr),
    /// The node port on any local address.
    NodePort(u16),
}

/// Every refusal rule of the port, in upstream's order.
pub(crate) fn render_filters(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    if let Some(verdict) = &plan.internal_verdict {
        out.filter.push(refuse(ctx, KUBE_SERVICES, plan, Dest::Ip(plan.port.svc.cluster_ip), verdict));
    }
    let Some(verdict) = &plan.external_verdict else { return };
    for ip in plan.port.external_ips.iter().chain(&plan.port.lb_ips) {
        out.filter.push(refuse(ctx, KUBE_EXTERNAL_SERVICES, plan, Dest::Ip(*ip), verdict));
    }
    if let Some(node_port) = plan.port.svc.node_port {
        out.filter.push(refuse(ctx, KUBE_EXTERNAL_SERVICES, plan, Dest::NodePort(node_port), verdict));
    }
}

/// One refusal rule in `chain`.
fn refuse(ctx: &RenderContext, chain: &str, plan: &NamedPlan, dest: Dest, verdict: &Verdict) -> Rule {
    let target = match verdict.refusal {
        Refusal::Reject => ctx.sync.family.reject_target(),
        Refusal::Drop => Target::Drop,
    };
    let rule = match dest {
        Dest::Ip(ip) => Rule::new(chain).dst(&rule::host(ip)).comment(&verdict.comment).dport(plan.proto, plan.port.svc.port),
        Dest::NodePort(port) => Rule::new(chain)
            .comment(&verdict.comment)
            .matching("-m addrtype --dst-type LOCAL")
            .dport(plan.proto, port),
    };
    rule.target(target).build()
}
