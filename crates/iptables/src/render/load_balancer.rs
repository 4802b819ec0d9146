//! LoadBalancer ingress IPs: `KUBE-SERVICES` entries for each LB IP, and
//! `loadBalancerSourceRanges` — the nat `KUBE-FW` chain that lets allowed
//! sources on to `KUBE-EXT`, and the filter `KUBE-PROXY-FIREWALL` DROP
//! that catches whatever `KUBE-FW` did not DNAT.

use super::naming::NamedPlan;
use xtables::rules::{self as rule, Rule, RuleBuilder, Target};
use super::{RenderContext, ServicePortRules};
use crate::chain_name::{KUBE_PROXY_FIREWALL, KUBE_SERVICES};

/// Per LB IP: the nat entry (when the port has endpoints) and the
/// firewall DROP (when source ranges apply).
pub(crate) fn render_entries(_ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    for ip in &plan.port.lb_ips {
        if plan.port.has_endpoints {
            let entry = lb_ip_rule(KUBE_SERVICES, *ip)
                .comment(&format!("{} loadbalancer IP", plan.name))
                .dport(plan.proto, plan.port.svc.port)
                .jump(plan.load_balancer_chain())
                .build();
            out.nat_entries.push(entry);
        }
        if plan.port.uses_firewall {
            let drop = lb_ip_rule(KUBE_PROXY_FIREWALL, *ip)
                .comment(&format!("{} traffic not accepted by {}", plan.name, plan.chains.fw))
                .dport(plan.proto, plan.port.svc.port)
                .target(Target::Drop)
                .build();
            out.filter.push(drop);
        }
    }
}

/// `-d <LB IP>` in `chain`.
fn lb_ip_rule(chain: &str, ip: std::net::IpAddr) -> RuleBuilder<'_> {
    Rule::new(chain).dst(&rule::host(ip))
}

/// `KUBE-FW-<hash>`: one accept per source range, one per LB IP as source
/// when a range holds the node's IP (a node reaching its own LB IP
/// arrives from that IP), then a comment-only rule.
pub(crate) fn render_firewall_chain(_ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    if !plan.port.uses_firewall {
        return;
    }
    let fw = &plan.chains.fw;
    out.declare(fw);
    let comment = format!("{} loadbalancer IP", plan.name);
    let accept = |src: String| Rule::new(fw).src(&src).comment(&comment).jump(&plan.chains.ext).build();
    for range in &plan.port.source_ranges {
        out.nat_rules.push(accept(rule::net(range)));
    }
    if plan.port.source_ranges_hold_node {
        for ip in &plan.port.lb_ips {
            out.nat_rules.push(accept(rule::host(*ip)));
        }
    }
    let other = format!("other traffic to {} will be dropped by KUBE-PROXY-FIREWALL", plan.name);
    out.nat_rules.push(Rule::new(fw).comment(&other).build());
}
