//! The jumps from the built-in chains into ours, in upstream's list order
//! (`iptablesJumpChains` then the kubelet ones). Each is ensured with
//! "insert at the top if missing", so applying them in this order leaves
//! each built-in chain in the order upstream's dump shows.

use crate::chain_name::*;
use xtables::{BuiltinJump, Table};

/// One jump: table, built-in chain, our chain, comment ("" for none) and
/// the match arguments before the comment.
type JumpSpec = (Table, &'static str, &'static str, &'static str, &'static [&'static str]);

const NEW: &[&str] = &["-m", "conntrack", "--ctstate", "NEW"];
const EXTERNAL: &str = "kubernetes externally-visible service portals";
const PORTALS: &str = "kubernetes service portals";
const LB_FIREWALL: &str = "kubernetes load balancer firewall";

const JUMPS: &[JumpSpec] = &[
    (Table::Filter, "INPUT", KUBE_EXTERNAL_SERVICES, EXTERNAL, NEW),
    (Table::Filter, "FORWARD", KUBE_EXTERNAL_SERVICES, EXTERNAL, NEW),
    (Table::Filter, "INPUT", KUBE_NODEPORTS, "kubernetes health check service ports", &[]),
    (Table::Filter, "FORWARD", KUBE_SERVICES, PORTALS, NEW),
    (Table::Filter, "OUTPUT", KUBE_SERVICES, PORTALS, NEW),
    (Table::Filter, "FORWARD", KUBE_FORWARD, "kubernetes forwarding rules", &[]),
    (Table::Filter, "INPUT", KUBE_PROXY_FIREWALL, LB_FIREWALL, NEW),
    (Table::Filter, "OUTPUT", KUBE_PROXY_FIREWALL, LB_FIREWALL, NEW),
    (Table::Filter, "FORWARD", KUBE_PROXY_FIREWALL, LB_FIREWALL, NEW),
    (Table::Nat, "OUTPUT", KUBE_SERVICES, PORTALS, &[]),
    (Table::Nat, "PREROUTING", KUBE_SERVICES, PORTALS, &[]),
    (Table::Nat, "POSTROUTING", KUBE_POSTROUTING, "kubernetes postrouting rules", &[]),
    (Table::Filter, "INPUT", KUBE_FIREWALL, "", &[]),
    (Table::Filter, "OUTPUT", KUBE_FIREWALL, "", &[]),
];

/// Every built-in jump, each to be prepended when missing.
pub(crate) fn render() -> Vec<BuiltinJump> {
    JUMPS.iter().map(jump).collect()
}

fn jump(&(table, chain, target, comment, matches): &JumpSpec) -> BuiltinJump {
    let mut args: Vec<String> = matches.iter().map(|s| s.to_string()).collect();
    if !comment.is_empty() {
        args.extend(["-m", "comment", "--comment", comment].map(String::from));
    }
    args.extend(["-j", target].map(String::from));
    BuiltinJump { table, chain, args, prepend: true }
}
