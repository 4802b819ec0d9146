//! `KUBE-PORTALS-CONTAINER` (from PREROUTING: REDIRECT to the proxy port)
//! and `KUBE-PORTALS-HOST` (from OUTPUT: DNAT to the node's address and the
//! proxy port) for a service port's ClusterIP, externalIPs and
//! LoadBalancer IPs. Upstream's `-m physdev ! --physdev-is-in` on the
//! external-IP rule (bridged frames) is left out: it needs `xt_physdev`,
//! and routed pod traffic is proxied either way.

use super::rules::{Ports, from_pods, nat, service_rule};
use super::Planned;
use crate::chains::{KUBE_PORTALS_CONTAINER, KUBE_PORTALS_HOST};
use plan::SyncContext;
use std::net::IpAddr;
use xtables::{Ruleset, Target};

/// The portal rules of `port`.
pub(super) fn render(ruleset: &mut Ruleset, port: &Planned<'_>, ctx: &SyncContext, ports: Ports) {
    cluster_ip(ruleset, port, ports);
    for &ip in &port.plan.external_ips {
        external(ruleset, port, ctx, ports, ip, &[]);
    }
    let ranges: Vec<String> = if port.plan.uses_firewall { port.plan.source_ranges.iter().map(xtables::rules::net).collect() } else { Vec::new() };
    for &ip in &port.plan.lb_ips {
        external(ruleset, port, ctx, ports, ip, &ranges);
    }
}

fn cluster_ip(ruleset: &mut Ruleset, port: &Planned<'_>, ports: Ports) {
    let dst = xtables::rules::host(port.svc.cluster_ip);
    let rule = |chain| service_rule(chain, port, port.svc.port).dst(&dst);
    nat(ruleset, rule(KUBE_PORTALS_CONTAINER).target(Target::Redirect(ports.internal)));
    if let Some(target) = ports.host_target(ports.internal) {
        nat(ruleset, rule(KUBE_PORTALS_HOST).target(target));
    }
}

/// An externalIP or LoadBalancer IP: from outside to the external proxy
/// port, from pods and the node to the internal one. With
/// `loadBalancerSourceRanges` (`ranges`), only those sources are
/// redirected (one rule each); the others are not translated, so nothing
/// on the node answers them, and the node's own traffic only when a range
/// holds the node's IP.
fn external(ruleset: &mut Ruleset, port: &Planned<'_>, ctx: &SyncContext, ports: Ports, ip: IpAddr, ranges: &[String]) {
    let dst = xtables::rules::host(ip);
    let rule = |chain| service_rule(chain, port, port.svc.port).dst(&dst);
    let sources: Vec<Option<&str>> = if ranges.is_empty() { vec![None] } else { ranges.iter().map(|r| Some(r.as_str())).collect() };
    for source in sources {
        let container = || match source {
            Some(range) => rule(KUBE_PORTALS_CONTAINER).src(range),
            None => rule(KUBE_PORTALS_CONTAINER),
        };
        if ports.split()
            && source.is_none()
            && let Some(pods) = from_pods(container(), ctx)
        {
            nat(ruleset, pods.target(Target::Redirect(ports.internal)));
        }
        nat(ruleset, container().target(Target::Redirect(ports.external)));
    }
    let node_allowed = ranges.is_empty() || port.plan.source_ranges_hold_node;
    if let Some(target) = ports.host_target(ports.internal).filter(|_| node_allowed) {
        nat(ruleset, rule(KUBE_PORTALS_HOST).target(target));
    }
}
