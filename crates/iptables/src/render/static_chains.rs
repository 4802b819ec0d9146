//! The chains every sync writes regardless of services: `KUBE-MARK-MASQ`,
//! `KUBE-POSTROUTING`, `KUBE-FORWARD`, `KUBE-FIREWALL`, the canaries, the
//! shared entry chains, and the final `KUBE-SERVICES` jump to
//! `KUBE-NODEPORTS`.

use xtables::FamilyText;
use super::node_port::nfacct_match;
use xtables::rules::{self as rule, Rule, Target};
use super::{RenderContext, builtin_jumps};
use model::IpFamily;
use plan::NodePorts;
use crate::chain_name::*;
use xtables::{Ruleset, TableRules};

/// nfacct counter of forwarded packets dropped as conntrack-INVALID.
const CT_INVALID_COUNTER: &str = "ct_state_invalid_dropped_pkts";

/// A ruleset holding only the static chains and the built-in jumps;
/// service ports are added after it, [`render_tail`] last.
pub(crate) fn render_static(ctx: &RenderContext) -> Ruleset {
    Ruleset {
        filter: TableRules { chains: names(FILTER_CHAINS), rules: firewall_rules(ctx) },
        nat: TableRules { chains: names(NAT_CHAINS), rules: masquerade_rules(ctx) },
        mangle: TableRules { chains: names(&[KUBE_PROXY_CANARY]), rules: Vec::new() },
        builtin_jumps: builtin_jumps::render(),
    }
}

/// The rules that must come after every service's: the NodePort jump at
/// the end of nat `KUBE-SERVICES`, and filter `KUBE-FORWARD`.
pub(crate) fn render_tail(ctx: &RenderContext) -> Ruleset {
    Ruleset {
        nat: TableRules { chains: Vec::new(), rules: node_ports_jumps(ctx) },
        filter: TableRules { chains: Vec::new(), rules: forward_rules(ctx) },
        ..Ruleset::default()
    }
}

const FILTER_CHAINS: &[&str] = &[
    KUBE_SERVICES,
    KUBE_EXTERNAL_SERVICES,
    KUBE_FORWARD,
    KUBE_NODEPORTS,
    KUBE_PROXY_FIREWALL,
    KUBE_FIREWALL,
    KUBE_PROXY_CANARY,
];
const NAT_CHAINS: &[&str] = &[KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ, KUBE_PROXY_CANARY];

fn names(chains: &[&str]) -> Vec<String> {
    chains.iter().map(|c| c.to_string()).collect()
}

/// `KUBE-POSTROUTING` masquerades marked packets (clearing the mark so a
/// re-traversal does not masquerade twice); `KUBE-MARK-MASQ` sets it.
fn masquerade_rules(ctx: &RenderContext) -> Vec<Rule> {
    let mark = &ctx.mark;
    let bits = ctx.sync.mark.0;
    let masquerade = Target::Masquerade { random_fully: ctx.random_fully };
    vec![
        Rule::new(KUBE_POSTROUTING).matching(&format!("-m mark ! --mark {mark}/{mark}")).target(Target::Return).build(),
        Rule::new(KUBE_POSTROUTING).target(Target::SetXmark { value: bits, mask: 0 }).build(),
        Rule::new(KUBE_POSTROUTING).comment("kubernetes service traffic requiring SNAT").target(masquerade).build(),
        Rule::new(KUBE_MARK_MASQ).target(Target::SetXmark { value: bits, mask: bits }).build(),
    ]
}

/// `KUBE-FIREWALL` blocks outside traffic to 127.0.0.0/8, which
/// `route_localnet` (needed for localhost NodePorts) would let in.
fn firewall_rules(ctx: &RenderContext) -> Vec<Rule> {
    if ctx.sync.family != IpFamily::V4 || !ctx.sync.localhost_nodeports {
        return Vec::new();
    }
    let localnet = IpFamily::V4.loopback_net();
    let rule = Rule::new(KUBE_FIREWALL)
        .not_src(localnet)
        .dst(localnet)
        .comment("block incoming localnet connections")
        .matching("-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT")
        .target(Target::Drop);
    vec![rule.build()]
}

/// `KUBE-FORWARD`: drop conntrack-INVALID packets (unless the kernel is
/// liberal), accept marked and established service traffic.
fn forward_rules(ctx: &RenderContext) -> Vec<Rule> {
    let mut rules = Vec::with_capacity(3);
    if !ctx.conntrack_liberal {
        let mut invalid = Rule::new(KUBE_FORWARD).matching("-m conntrack --ctstate INVALID");
        if ctx.nfacct {
            invalid = invalid.matching(&nfacct_match(CT_INVALID_COUNTER));
        }
        rules.push(invalid.target(Target::Drop).build());
    }
    let mark = &ctx.mark;
    rules.push(
        Rule::new(KUBE_FORWARD)
            .comment("kubernetes forwarding rules")
            .matching(&format!("-m mark --mark {mark}/{mark}"))
            .target(Target::Accept)
            .build(),
    );
    rules.push(
        Rule::new(KUBE_FORWARD)
            .comment("kubernetes forwarding conntrack rule")
            .matching("-m conntrack --ctstate RELATED,ESTABLISHED")
            .target(Target::Accept)
            .build(),
    );
    rules
}

/// The last rules of nat `KUBE-SERVICES`: NodePort traffic to every local
/// address (minus loopback where localhost NodePorts are off), or to each
/// `nodePortAddresses` address.
fn node_ports_jumps(ctx: &RenderContext) -> Vec<Rule> {
    let comment = "kubernetes service nodeports; NOTE: this must be the last rule in this chain";
    let base = || Rule::new(KUBE_SERVICES).comment(comment);
    let NodePorts::Only(ips) = &ctx.sync.node_ports else {
        let mut all = base().matching("-m addrtype --dst-type LOCAL");
        if ctx.sync.family == IpFamily::V6 || !ctx.sync.localhost_nodeports {
            all = all.not_dst(ctx.sync.family.loopback_net());
        }
        return vec![all.jump(KUBE_NODEPORTS).build()];
    };
    ips.iter().map(|ip| base().dst(&rule::host(*ip)).jump(KUBE_NODEPORTS).build()).collect()
}
