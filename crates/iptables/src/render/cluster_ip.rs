//! ClusterIP traffic: the `KUBE-SERVICES` entry for the cluster IP and the
//! masquerade rule at the top of the chain it enters (off-cluster sources,
//! or everything with `masqueradeAll`).

use super::naming::NamedPlan;
use xtables::rules::{self as rule, Rule, RuleBuilder};
use super::{RenderContext, ServicePortRules};
use crate::chain_name::{KUBE_MARK_MASQ, KUBE_SERVICES};

/// `KUBE-SERVICES -d <cluster IP> ... -j KUBE-SVC|KUBE-SVL`, when the
/// cluster IP has endpoints to go to (else the filter table refuses it).
pub(crate) fn render_entry(_ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    if !plan.port.has_internal {
        return;
    }
    let entry = cluster_ip_rule(KUBE_SERVICES, plan).jump(plan.internal_chain()).build();
    out.nat_entries.push(entry);
}

/// The masquerade rule of the internal chain: everything with
/// `masqueradeAll`, else traffic not from the pod network; nothing when
/// local traffic cannot be detected.
pub(crate) fn render_masquerade(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    if !plan.port.has_internal {
        return;
    }
    let rule = cluster_ip_rule(plan.internal_chain(), plan);
    let rule = match (&ctx.local, ctx.sync.masquerade_all) {
        (_, true) => rule,
        (Some(local), false) => local.if_not_local(rule),
        (None, false) => return,
    };
    out.nat_rules.push(rule.jump(KUBE_MARK_MASQ).build());
}

/// `-d <cluster IP> -p P -m comment "<port> cluster IP" --dport <port>`.
fn cluster_ip_rule<'a>(chain: &'a str, plan: &NamedPlan) -> RuleBuilder<'a> {
    Rule::new(chain)
        .dst(&rule::host(plan.port.svc.cluster_ip))
        .comment(&format!("{} cluster IP", plan.name))
        .dport(plan.proto, plan.port.svc.port)
}
