//! Load-balancer traffic: each ingress IP is an external destination,
//! and with `loadBalancerSourceRanges` it also goes through `firewall-ips`
//! to the port's `firewall-` chain, which drops sources outside the
//! ranges (and the LB IPs themselves when a range holds the node).

use super::external_ip::render_external_destination;
use super::interval::merge;
use super::ruleset::{ChainRules, RuleSpec};
use super::service_port::Port;
use super::shared::SharedSets;
use super::statement::Stmt;
use crate::{Chain, Element, Verdict};
use ipnet::IpNet;

/// Adds the elements of every LB IP; returns the firewall chain if the
/// port uses one.
pub fn render_load_balancer(port: &Port<'_>, shared: &mut SharedSets) -> Option<ChainRules> {
    for ip in &port.plan.lb_ips {
        render_external_destination(port, *ip, shared);
        if port.plan.uses_firewall {
            shared.firewall_ips.push(Element::verdict(
                port.ip_key(*ip),
                Port::goto(&port.names.firewall),
            ));
        }
    }
    port.plan.uses_firewall.then(|| firewall_chain(port))
}

/// `ip saddr != { ranges… } drop`.
fn firewall_chain(port: &Port<'_>) -> ChainRules {
    let mut allowed: Vec<IpNet> = port.plan.source_ranges.clone();
    if port.plan.source_ranges_hold_node {
        // traffic from the node to its own LB IP arrives with that IP as
        // source
        allowed.extend(port.plan.lb_ips.iter().map(|ip| IpNet::from(*ip)));
    }
    let mut chain = ChainRules::new(Chain::regular(port.names.firewall.as_str()));
    chain.push(RuleSpec::new(vec![
        Stmt::SaddrNotIn {
            family: port.ctx.family,
            ranges: merge(&allowed),
        },
        Stmt::Verdict(Verdict::Drop),
    ]));
    chain
}
