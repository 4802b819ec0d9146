//! `KUBE-EXT-<hash>`: where NodePort, externalIP and LoadBalancer traffic
//! enters. externalTrafficPolicy Cluster masquerades everything and goes
//! to `KUBE-SVC`; Local short-circuits pod and node-originated traffic to
//! `KUBE-SVC` (node traffic masqueraded) and sends the rest to `KUBE-SVL`,
//! keeping the client's source IP.

use super::naming::NamedPlan;
use xtables::Rule;
use super::{RenderContext, ServicePortRules};
use crate::chain_name::KUBE_MARK_MASQ;

/// The EXT chain, when the port is externally reachable and has endpoints.
pub(crate) fn render(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    if !plan.port.uses_external_path {
        return;
    }
    let ext = &plan.chains.ext;
    out.declare(ext);
    if plan.port.external_local {
        render_short_circuits(ctx, plan, out);
    } else {
        let comment = format!("masquerade traffic for {} external destinations", plan.name);
        out.nat_rules.push(Rule::new(ext).comment(&comment).jump(KUBE_MARK_MASQ).build());
    }
    if plan.port.has_external {
        out.nat_rules.push(Rule::new(ext).jump(plan.external_policy_chain()).build());
    }
}

/// Pod traffic (when detectable) and node-originated traffic bypass the
/// Local policy: they go to the cluster-wide chain.
fn render_short_circuits(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    let (ext, svc) = (&plan.chains.ext, &plan.chains.svc);
    if let Some(local) = &ctx.local {
        let comment = format!("pod traffic for {} external destinations", plan.name);
        out.nat_rules.push(local.if_local(Rule::new(ext)).comment(&comment).jump(svc).build());
    }
    let local_src = "-m addrtype --src-type LOCAL";
    let masq = format!("masquerade LOCAL traffic for {} external destinations", plan.name);
    out.nat_rules.push(Rule::new(ext).comment(&masq).matching(local_src).jump(KUBE_MARK_MASQ).build());
    let route = format!("route LOCAL traffic for {} external destinations", plan.name);
    out.nat_rules.push(Rule::new(ext).comment(&route).matching(local_src).jump(svc).build());
}
