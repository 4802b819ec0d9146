//! The companion iptables rules of IPVS mode, as upstream writes them after
//! its service loop: a fixed skeleton plus one rule per non-empty ipset,
//! all matching sets instead of listing services. Spelled as
//! `iptables-save` prints them, in an [`iptables::Ruleset`] for the shared
//! applier.

use super::RenderOptions;
use plan::SyncContext;
use crate::ipset::{IpSets, KubeSet};
use model::IpFamily;
use iptables::render::FamilyText;
use iptables::{BuiltinJump, Ruleset, Table};
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
    target: &'static str,
    /// `--match-set` directions.
    dirs: &'static str,
    /// `-p` match, for the NodePort sets.
    proto: Option<&'static str>,
}

/// The set jumps in upstream's order (local NodePort sets before the
/// masquerading ones).
const SET_JUMPS: [SetJump; 12] = [
    SetJump { set: KubeSet::LoopBack, table: Table::Nat, from: "KUBE-POSTROUTING", target: "MASQUERADE", dirs: "dst,dst,src", proto: None },
    SetJump { set: KubeSet::LoadBalancer, table: Table::Nat, from: "KUBE-SERVICES", target: "KUBE-LOAD-BALANCER", dirs: "dst,dst", proto: None },
    SetJump { set: KubeSet::LoadBalancerLocal, table: Table::Nat, from: "KUBE-LOAD-BALANCER", target: "RETURN", dirs: "dst,dst", proto: None },
    SetJump { set: KubeSet::NodePortLocalTcp, table: Table::Nat, from: "KUBE-NODE-PORT", target: "RETURN", dirs: "dst", proto: Some("tcp") },
    SetJump { set: KubeSet::NodePortTcp, table: Table::Nat, from: "KUBE-NODE-PORT", target: "KUBE-MARK-MASQ", dirs: "dst", proto: Some("tcp") },
    SetJump { set: KubeSet::NodePortLocalUdp, table: Table::Nat, from: "KUBE-NODE-PORT", target: "RETURN", dirs: "dst", proto: Some("udp") },
    SetJump { set: KubeSet::NodePortUdp, table: Table::Nat, from: "KUBE-NODE-PORT", target: "KUBE-MARK-MASQ", dirs: "dst", proto: Some("udp") },
    SetJump { set: KubeSet::NodePortLocalSctp, table: Table::Nat, from: "KUBE-NODE-PORT", target: "RETURN", dirs: "dst,dst", proto: Some("sctp") },
    SetJump { set: KubeSet::NodePortSctp, table: Table::Nat, from: "KUBE-NODE-PORT", target: "KUBE-MARK-MASQ", dirs: "dst,dst", proto: Some("sctp") },
    SetJump { set: KubeSet::LoadBalancerFw, table: Table::Filter, from: "KUBE-PROXY-FIREWALL", target: "KUBE-SOURCE-RANGES-FIREWALL", dirs: "dst,dst", proto: None },
    SetJump { set: KubeSet::LoadBalancerSourceCidr, table: Table::Filter, from: "KUBE-SOURCE-RANGES-FIREWALL", target: "RETURN", dirs: "dst,dst,src", proto: None },
    SetJump { set: KubeSet::LoadBalancerSourceIp, table: Table::Filter, from: "KUBE-SOURCE-RANGES-FIREWALL", target: "RETURN", dirs: "dst,dst,src", proto: None },
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
    r.nat(format!("KUBE-SERVICES -s {lo} -j RETURN"));
    r.set_jumps();
    r.cluster_ip_masquerade(ctx);
    r.external_ip_rules();
    r.nat("KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT".into());
    r.nat("KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ".into());
    r.filter("KUBE-SOURCE-RANGES-FIREWALL -j DROP".into());
    r.lb_no_node_access(lb_no_node_access);
    r.accept_ipvs_traffic();
    let mark = ctx.mark.to_string();
    r.forward_and_health_check(&mark);
    r.ipvs_filter();
    r.postrouting(&mark, opts.random_fully);
    r.ruleset
}

struct Rules<'a> {
    sets: &'a IpSets,
    family: IpFamily,
    ruleset: Ruleset,
}

impl Rules<'_> {
    fn nat(&mut self, rule: String) {
        self.ruleset.nat.rules.push(rule);
    }

    fn filter(&mut self, rule: String) {
        self.ruleset.filter.rules.push(rule);
    }

    fn add(&mut self, table: Table, rule: String) {
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
            let proto = j.proto.map(|p| format!("-p {p} ")).unwrap_or_default();
            let rule = format!("{} {proto}{} -j {}", j.from, self.commented_match(j.set, j.dirs), j.target);
            self.add(j.table, rule);
        }
    }

    /// Traffic to a ClusterIP is masqueraded: all of it (masqueradeAll),
    /// what does not come from the cluster CIDR, or (no CIDR known) the
    /// node's own traffic sourced from a service address.
    fn cluster_ip_masquerade(&mut self, ctx: &SyncContext) {
        if self.sets.set_is_empty(KubeSet::ClusterIp) {
            return;
        }
        let rule = if ctx.masquerade_all {
            format!("KUBE-SERVICES {} -j KUBE-MARK-MASQ", self.commented_match(KubeSet::ClusterIp, "dst,dst"))
        } else if let Some(cidr) = ctx.local_traffic {
            format!("KUBE-SERVICES ! -s {cidr} {} -j KUBE-MARK-MASQ", self.commented_match(KubeSet::ClusterIp, "dst,dst"))
        } else {
            format!("KUBE-SERVICES {} -j KUBE-MARK-MASQ", self.commented_match(KubeSet::ClusterIp, "src,dst"))
        };
        self.nat(rule);
    }

    /// External IPs: masqueraded (ETP Cluster only), then accepted from
    /// off-node sources and when the address is local.
    fn external_ip_rules(&mut self) {
        for set in [KubeSet::ExternalIp, KubeSet::ExternalIpLocal] {
            if self.sets.set_is_empty(set) {
                continue;
            }
            let m = self.commented_match(set, "dst,dst");
            if set == KubeSet::ExternalIp {
                self.nat(format!("KUBE-SERVICES {m} -j KUBE-MARK-MASQ"));
            }
            self.nat(format!("KUBE-SERVICES {m} -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT"));
            self.nat(format!("KUBE-SERVICES {m} -m addrtype --dst-type LOCAL -j ACCEPT"));
        }
    }

    /// Spelled as `iptables-save` prints the `ipvs` match: protocol number
    /// first, the virtual address without its prefix length.
    fn lb_no_node_access(&mut self, entries: &[LbNoNodeAccess]) {
        let host = if self.family == IpFamily::V6 { 128 } else { 32 };
        for e in entries {
            let proto = crate::IpProtocol::from(e.protocol).number();
            self.filter(format!(
                "KUBE-IPVS-OUT-FILTER -s {ip}/{host} -m ipvs --vproto {proto} --vaddr {ip} --vport {port} -j DROP",
                ip = e.ip,
                port = e.port
            ));
        }
    }

    /// Accept traffic to virtual servers so other rules cannot block it.
    fn accept_ipvs_traffic(&mut self) {
        for set in [KubeSet::ClusterIp, KubeSet::LoadBalancer] {
            if !self.sets.set_is_empty(set) {
                let name = self.name(set);
                self.nat(format!("KUBE-SERVICES -m set --match-set {name} dst,dst -j ACCEPT"));
            }
        }
    }

    fn forward_and_health_check(&mut self, mark: &str) {
        self.filter(format!(
            "KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark {mark}/{mark} -j ACCEPT"
        ));
        self.filter(
            "KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
                .into(),
        );
        let m = self.commented_match(KubeSet::HealthCheckNodePort, "dst");
        self.filter(format!("KUBE-NODE-PORT {m} -j ACCEPT"));
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
            self.filter(format!("KUBE-IPVS-FILTER -m set --match-set {name} {dirs} -j RETURN"));
        }
        let reject = self.family.reject_target();
        let ips = self.name(KubeSet::IpvsIps);
        self.filter(format!("KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set {ips} dst -j {reject}"));
    }

    /// Upstream writes `--xor-mark` and `--or-mark`; `iptables-save` prints
    /// them as the `--set-xmark` forms used here.
    fn postrouting(&mut self, mark: &str, random_fully: bool) {
        self.nat(format!("KUBE-POSTROUTING -m mark ! --mark {mark}/{mark} -j RETURN"));
        self.nat(format!("KUBE-POSTROUTING -j MARK --set-xmark {mark}/0x0"));
        let fully = if random_fully { " --random-fully" } else { "" };
        self.nat(format!(
            "KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE{fully}"
        ));
        self.nat(format!("KUBE-MARK-MASQ -j MARK --set-xmark {mark}/{mark}"));
    }
}
