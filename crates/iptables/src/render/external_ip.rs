//! externalIPs: `KUBE-SERVICES` entries sending traffic for each external
//! IP of the port to its `KUBE-EXT` chain.

use super::naming::NamedPlan;
use xtables::rules::{self as rule, Rule};
use super::{RenderContext, ServicePortRules};
use crate::chain_name::KUBE_SERVICES;

/// One entry per external IP, when the port has endpoints anywhere.
pub(crate) fn render_entries(_ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    if !plan.port.has_endpoints {
        return;
    }
    for ip in &plan.port.external_ips {
        let entry = Rule::new(KUBE_SERVICES)
            .dst(&rule::host(*ip))
            .comment(&format!("{} external IP", plan.name))
            .dport(plan.proto, plan.port.svc.port)
            .jump(&plan.chains.ext)
            .build();
        out.nat_entries.push(entry);
    }
}
