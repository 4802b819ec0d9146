//! The companion iptables rules of IPVS mode, as upstream writes them after
//! its service loop: a fixed skeleton plus one rule per non-empty ipset,
//! all matching sets instead of listing services. Spelled as
//! `iptables-save` prints them, typed in an [`xtables::Ruleset`] for the
//! shared applier.

use super::RenderOptions;
use plan::{LocalTraffic, Mark, SyncContext};
use crate::ipset::{IpSets, KubeSet};
use model::IpFamily;
use xtables::{BuiltinJump, FamilyText, Rule, RuleBuilder, Ruleset, Table, Target};
use model::Protocol;
use std::net::IpAddr;

/// A load-balancer IP with source ranges that exclude the node: the node
/// itself is kept out by a filter rule (upstream issue 119656).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LbNoNodeAccess {
    /// The load-balancer IP.
    pub ip: IpAddr,
    /// The service protocol.
    pub protocol: Protocol,
    /// The service port.
    pub port: u16,
}

pub(crate) const NAT_CHAINS: [&str; 5] = ["KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-NODE-PORT", "KUBE-LOAD-BALANCER", "KUBE-MARK-MASQ"];
pub(crate) const FILTER_CHAINS: [&str; 6] = [
    "KUBE-FORWARD",
    "KUBE-NODE-PORT",
    "KUBE-PROXY-FIREWALL",
    "KUBE-SOURCE-RANGES-FIREWALL",
    "KUBE-IPVS-FILTER",
    "KUBE-IPVS-OUT-FILTER",
];

/// The jumps from built-in chains: (table, chain, comment, target), each
/// inserted at the top as upstream's `EnsureRule(Prepend, ...)` does.
const JUMPS: [(Table, &str, &str, &str); 9] = [
    (Table::Nat, "OUTPUT", "kubernetes service portals", "KUBE-SERVICES"),
    (Table::Nat, "PREROUTING", "kubernetes service portals", "KUBE-SERVICES"),
    (Table::Nat, "POSTROUTING", "kubernetes postrouting rules", "KUBE-POSTROUTING"),
    (Table::Filter, "FORWARD", "kubernetes forwarding rules", "KUBE-FORWARD"),
    (Table::Filter, "INPUT", "kubernetes health check rules", "KUBE-NODE-PORT"),
    (Table::Filter, "INPUT", "kube-proxy firewall rules", "KUBE-PROXY-FIREWALL"),
    (Table::Filter, "FORWARD", "kube-proxy firewall rules", "KUBE-PROXY-FIREWALL"),
    (Table::Filter, "INPUT", "kubernetes ipvs access filter", "KUBE-IPVS-FILTER"),
    (Table::Filter, "OUTPUT", "kubernetes ipvs access filter", "KUBE-IPVS-OUT-FILTER"),
];

/// One rule of upstream's `ipsetWithIptablesChain`: when `set` is
/// non-empty, `from` jumps to `target` on a match.
struct SetJump {
    set: KubeSet,
    table: Table,
    from: &'static str,
    target: Target<'static>,
    /// `--match-set` directions.
    dirs: &'static str,
    /// `-p` match, for the NodePort sets.
    proto: Option<&'static str>,
}

/// The set jumps in upstream's order (local NodePort sets before the
/// masquerading ones).
const SET_JUMPS: [SetJump; 12] = [
    SetJump { set: KubeSet::LoopBack, table: Table::Nat, from: "KUBE-POSTROUTING", target: Target::Masquerade { random_fully: false }, dirs: "dst,dst,src", proto: None },
    SetJump { set: KubeSet::LoadBalancer, table: Table::Nat, from: "KUBE-SERVICES", target: Target::Jump("KUBE-LOAD-BALANCER"), dirs: "dst,dst", proto: None },
    SetJump { set: KubeSet::LoadBalancerLocal, table: Table::Nat, from: "KUBE-LOAD-BALANCER", target: Target::Return, dirs: "dst,dst", proto: None },
    SetJump { set: KubeSet::NodePortLocalTcp, table: Table::Nat, from: "KUBE-NODE-PORT", target: Target::Return, dirs: "dst", proto: Some("tcp") },
    SetJump { set: KubeSet::NodePortTcp, table: Table::Nat, from: "KUBE-NODE-PORT", target: Target::Jump("KUBE-MARK-MASQ"), dirs: "dst", proto: Some("tcp") },
    SetJump { set: KubeSet::NodePortLocalUdp, table: Table::Nat, from: "KUBE-NODE-PORT", target: Target::Return, dirs: "dst", proto: Some("udp") },
    SetJump { set: KubeSet::NodePortUdp, table: Table::Nat, from: "KUBE-NODE-PORT", target: Target::Jump("KUBE-MARK-MASQ"), dirs: "dst", proto: Some("udp") },
    SetJump { set: KubeSet::NodePortLocalSctp, table: Table::Nat, from: "KUBE-NODE-PORT", target: Target::Return, dirs: "dst,dst", proto: Some("sctp") },
    SetJump { set: KubeSet::NodePortSctp, table: Table::Nat, from: "KUBE-NODE-PORT", target: Target::Jump("KUBE-MARK-MASQ"), dirs: "dst,dst", proto: Some("sctp") },
    SetJump { set: KubeSet::LoadBalancerFw, table: Table::Filter, from: "KUBE-PROXY-FIREWALL", target: Target::Jump("KUBE-SOURCE-RANGES-FIREWALL"), dirs: "dst,dst", proto: None },
    SetJump { set: KubeSet::LoadBalancerSourceCidr, table: Table::Filter, from: "KUBE-SOURCE-RANGES-FIREWALL", target: Target::Return, dirs: "dst,dst,src", proto: None },
    SetJump { set: KubeSet::LoadBalancerSourceIp, table: Table::Filter, from: "KUBE-SOURCE-RANGES-FIREWALL", target: Target::Return, dirs: "dst,dst,src", proto: None },
];

/// Writes the rules for `sets`.
pub fn render_rules(
    sets: &IpSets,
    lb_no_node_access: &[LbNoNodeAccess],
    ctx: &SyncContext,
    opts: &RenderOptions,
) -> Ruleset {
    let mut r = Rules { sets, family: ctx.family, ruleset: Ruleset::default() };
    r.declare_chains();
    r.builtin_jumps();
    let lo = ctx.family.loopback_net();
    r.nat(Rule::new("KUBE-SERVICES").src(lo).target(Target::Return));
    r.set_jumps();
    r.cluster_ip_masquerade(ctx);
    r.external_ip_rules();
    r.nat(Rule::new("KUBE-SERVICES").matching("-m addrtype --dst-type LOCAL").jump("KUBE-NODE-PORT"));
    r.nat(Rule::new("KUBE-LOAD-BALANCER").jump("KUBE-MARK-MASQ"));
    r.filter(Rule::new("KUBE-SOURCE-RANGES-FIREWALL").target(Target::Drop));
    r.lb_no_node_access(lb_no_node_access);
    r.accept_ipvs_traffic();
    r.forward_and_health_check(&ctx.mark.to_string());
    r.ipvs_filter();
    r.postrouting(ctx.mark, opts.random_fully);
    r.ruleset
}

struct Rules<'a> {
    sets: &'a IpSets,
    family: IpFamily,
    ruleset: Ruleset,
}

impl Rules<'_> {
    fn nat(&mut self, rule: RuleBuilder<'_>) {
        self.ruleset.nat.rules.push(rule.build());
    }

    fn filter(&mut self, rule: RuleBuilder<'_>) {
        self.ruleset.filter.rules.push(rule.build());
    }

    fn add(&mut self, table: Table, rule: RuleBuilder<'_>) {
        match table {
            Table::Nat => self.nat(rule),
            _ => self.filter(rule),
        }
    }

    fn name(&self, set: KubeSet) -> String {
        set.name(self.family)
    }

    /// `-m comment --comment "<set comment>" -m set --match-set NAME dirs`.
    fn commented_match(&self, set: KubeSet, dirs: &str) -> String {
        format!("-m comment --comment \"{}\" -m set --match-set {} {dirs}", set.comment(), self.name(set))
    }

    fn declare_chains(&mut self) {
        self.ruleset.nat.chains = NAT_CHAINS.map(String::from).to_vec();
        self.ruleset.filter.chains = FILTER_CHAINS.map(String::from).to_vec();
    }

    fn builtin_jumps(&mut self) {
        self.ruleset.builtin_jumps = JUMPS
            .iter()
            .map(|(table, chain, comment, target)| BuiltinJump {
                table: *table,
                chain,
                args: ["-m", "comment", "--comment", comment, "-j", target].map(String::from).to_vec(),
                prepend: true,
            })
            .collect();
    }

    fn set_jumps(&mut self) {
        for j in &SET_JUMPS {
            if self.sets.set_is_empty(j.set) {
                continue;
            }
            let mut rule = Rule::new(j.from);
            if let Some(proto) = j.proto {
                rule = rule.proto(proto);
            }
            let rule = rule.matching(&self.commented_match(j.set, j.dirs)).target(j.target);
            self.add(j.table, rule);
        }
    }

    /// Traffic to a ClusterIP is masqueraded: all of it (masqueradeAll),
    /// what does not come from local pods, or (no local-traffic detector)
    /// the node's own traffic sourced from a service address.
    fn cluster_ip_masquerade(&mut self, ctx: &SyncContext) {
        if self.sets.set_is_empty(KubeSet::ClusterIp) {
            return;
        }
        let rule = Rule::new("KUBE-SERVICES");
        let rule = if ctx.masquerade_all {
            rule.matching(&self.commented_match(KubeSet::ClusterIp, "dst,dst"))
        } else if let Some(local) = &ctx.local_traffic {
            if_not_local(rule, local).matching(&self.commented_match(KubeSet::ClusterIp, "dst,dst"))
        } else {
            rule.matching(&self.commented_match(KubeSet::ClusterIp, "src,dst"))
        };
        self.nat(rule.jump("KUBE-MARK-MASQ"));
    }

    /// External IPs: masqueraded (ETP Cluster only), then accepted from
    /// off-node sources and when the address is local.
    fn external_ip_rules(&mut self) {
        for set in [KubeSet::ExternalIp, KubeSet::ExternalIpLocal] {
            if self.sets.set_is_empty(set) {
                continue;
            }
            let m = self.commented_match(set, "dst,dst");
            let rule = || Rule::new("KUBE-SERVICES").matching(&m);
            if set == KubeSet::ExternalIp {
                self.nat(rule().jump("KUBE-MARK-MASQ"));
            }
            let off_node = "-m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL";
            self.nat(rule().matching(off_node).target(Target::Accept));
            self.nat(rule().matching("-m addrtype --dst-type LOCAL").target(Target::Accept));
        }
    }

    /// Spelled as `iptables-save` prints the `ipvs` match: protocol number
    /// first, the virtual address without its prefix length.
    fn lb_no_node_access(&mut self, entries: &[LbNoNodeAccess]) {
        let host = if self.family == IpFamily::V6 { 128 } else { 32 };
        for e in entries {
            let proto = crate::IpProtocol::from(e.protocol).number();
            let (ip, port) = (e.ip, e.port);
            let rule = Rule::new("KUBE-IPVS-OUT-FILTER")
                .src(&format!("{ip}/{host}"))
                .matching(&format!("-m ipvs --vproto {proto} --vaddr {ip} --vport {port}"));
            self.filter(rule.target(Target::Drop));
        }
    }

    /// Accept traffic to virtual servers so other rules cannot block it.
    fn accept_ipvs_traffic(&mut self) {
        for set in [KubeSet::ClusterIp, KubeSet::LoadBalancer] {
            if !self.sets.set_is_empty(set) {
                let name = self.name(set);
                let rule = Rule::new("KUBE-SERVICES").matching(&format!("-m set --match-set {name} dst,dst"));
                self.nat(rule.target(Target::Accept));
            }
        }
    }

    fn forward_and_health_check(&mut self, mark: &str) {
        let forward = Rule::new("KUBE-FORWARD").comment("kubernetes forwarding rules");
        self.filter(forward.matching(&format!("-m mark --mark {mark}/{mark}")).target(Target::Accept));
        let established = Rule::new("KUBE-FORWARD").comment("kubernetes forwarding conntrack rule");
        self.filter(established.matching("-m conntrack --ctstate RELATED,ESTABLISHED").target(Target::Accept));
        let m = self.commented_match(KubeSet::HealthCheckNodePort, "dst");
        self.filter(Rule::new("KUBE-NODE-PORT").matching(&m).target(Target::Accept));
    }

    /// `KUBE-IPVS-FILTER`: new connections to a bound address on a port
    /// that is no virtual server are rejected (upstream issue 72236).
    fn ipvs_filter(&mut self) {
        for (set, dirs) in [
            (KubeSet::LoadBalancer, "dst,dst"),
            (KubeSet::ClusterIp, "dst,dst"),
            (KubeSet::ExternalIp, "dst,dst"),
            (KubeSet::ExternalIpLocal, "dst,dst"),
            (KubeSet::HealthCheckNodePort, "dst"),
        ] {
            let name = self.name(set);
            let rule = Rule::new("KUBE-IPVS-FILTER").matching(&format!("-m set --match-set {name} {dirs}"));
            self.filter(rule.target(Target::Return));
        }
        let reject = self.family.reject_target();
        let ips = self.name(KubeSet::IpvsIps);
        let rule = Rule::new("KUBE-IPVS-FILTER").matching(&format!("-m conntrack --ctstate NEW -m set --match-set {ips} dst"));
        self.filter(rule.target(reject));
    }

    /// Upstream writes `--xor-mark` and `--or-mark`; `iptables-save` prints
    /// them as the `--set-xmark` forms used here.
    fn postrouting(&mut self, mark: Mark, random_fully: bool) {
        let bits = mark.0;
        self.nat(Rule::new("KUBE-POSTROUTING").matching(&format!("-m mark ! --mark {mark}/{mark}")).target(Target::Return));
        self.nat(Rule::new("KUBE-POSTROUTING").target(Target::SetXmark { value: bits, mask: 0 }));
        let snat = Rule::new("KUBE-POSTROUTING").comment("kubernetes service traffic requiring SNAT");
        self.nat(snat.target(Target::Masquerade { random_fully }));
        self.nat(Rule::new("KUBE-MARK-MASQ").target(Target::SetXmark { value: bits, mask: bits }));
    }
}

/// `rule` matching traffic not from local pods (upstream's `IfNotLocal`):
/// `! -s <cidr>`, `! -i <bridge>` or `! -i <prefix>+`.
fn if_not_local<'a>(rule: RuleBuilder<'a>, local: &LocalTraffic) -> RuleBuilder<'a> {
    match local {
        LocalTraffic::Cidr(cidr) => rule.not_src(&cidr.to_string()),
        LocalTraffic::Interface(name) => rule.not_in_iface(name),
        LocalTraffic::InterfacePrefix(prefix) => rule.not_in_iface(&format!("{prefix}+")),
    }
}
