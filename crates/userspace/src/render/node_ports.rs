//! A service port's NodePort: `KUBE-NODEPORT-CONTAINER` (from PREROUTING,
//! local destinations: REDIRECT to the proxy port), `KUBE-NODEPORT-HOST`
//! (from OUTPUT, local destinations: DNAT to the node's address and the
//! proxy port; `127.0.0.1:<nodePort>` too when localhost NodePorts are on,
//! with no `route_localnet`: the DNAT happens in OUTPUT, on `lo`) and the
//! filter table's `KUBE-NODEPORT-NON-LOCAL` accepting new connections to
//! the proxy port. `nodePortAddresses` narrows the rules to its addresses.

use super::rules::{Ports, from_pods, nat, service_rule};
use super::Planned;
use crate::chains::{KUBE_NODEPORT_CONTAINER, KUBE_NODEPORT_HOST, KUBE_NODEPORT_NON_LOCAL};
use model::IpFamily;
use plan::{NodePorts, SyncContext};
use xtables::{RuleBuilder, Ruleset, Target};

/// The NodePort rules of `port`, if it has a NodePort.
pub(super) fn render(ruleset: &mut Ruleset, port: &Planned<'_>, ctx: &SyncContext, ports: Ports) {
    let Some(node_port) = port.svc.node_port else { return };
    for dst in destinations(ctx) {
        let rule = |chain| narrowed(service_rule(chain, port, node_port), dst.as_deref());
        if ports.split()
            && let Some(pods) = from_pods(rule(KUBE_NODEPORT_CONTAINER), ctx)
        {
            nat(ruleset, pods.target(Target::Redirect(ports.internal)));
        }
        nat(ruleset, rule(KUBE_NODEPORT_CONTAINER).target(Target::Redirect(ports.external)));
        if let Some(target) = ports.host_target(ports.internal) {
            nat(ruleset, host_rule(rule(KUBE_NODEPORT_HOST), ctx, dst.is_none()).target(target));
        }
    }
    let accept = service_rule(KUBE_NODEPORT_NON_LOCAL, port, ports.external).matching("-m state --state NEW");
    ruleset.filter.rules.push(accept.target(Target::Accept).build());
}

/// `-d` of each rule: none (every local address, the jump's
/// `--dst-type LOCAL` decides), or each `nodePortAddresses` address.
fn destinations(ctx: &SyncContext) -> Vec<Option<String>> {
    match &ctx.node_ports {
        NodePorts::EveryLocalAddress => vec![None],
        NodePorts::Only(ips) => ips.iter().map(|ip| Some(xtables::rules::host(*ip))).collect(),
    }
}

fn narrowed<'a>(rule: RuleBuilder<'a>, dst: Option<&str>) -> RuleBuilder<'a> {
    match dst {
        Some(dst) => rule.dst(dst),
        None => rule,
    }
}

/// The host rule on every local address leaves loopback out unless
/// localhost NodePorts are on.
fn host_rule<'a>(rule: RuleBuilder<'a>, ctx: &SyncContext, every_address: bool) -> RuleBuilder<'a> {
    if !every_address || ctx.localhost_nodeports {
        return rule;
    }
    match ctx.family {
        IpFamily::V4 => rule.not_dst("127.0.0.0/8"),
        IpFamily::V6 => rule.not_dst("::1/128"),
    }
}
