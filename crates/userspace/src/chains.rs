//! Userspace mode's chains and the jumps into them from the built-in
//! chains, as upstream's `iptablesInit` ensured them: the portal chains
//! first in PREROUTING and OUTPUT, the NodePort chains last (they match
//! any local destination, so the portals must win), the filter chain
//! first in INPUT.

pub use xtables::chains::{
    KUBE_NODEPORT_CONTAINER, KUBE_NODEPORT_HOST, KUBE_NODEPORT_NON_LOCAL, KUBE_PORTALS_CONTAINER, KUBE_PORTALS_HOST,
};
use xtables::{BuiltinJump, Table};

/// Upstream's comment on the portal jumps.
pub const PORTALS_COMMENT: &str = "handle ClusterIPs; NOTE: this must be before the NodePort rules";
/// Upstream's comment on the NodePort jumps.
pub const NODEPORTS_COMMENT: &str = "handle service NodePorts; NOTE: this must be the last rule in the chain";
/// Upstream's comment on the filter jump.
pub const NON_LOCAL_COMMENT: &str = "Ensure that non-local NodePort traffic can flow";

/// The nat chains, in the order they are declared.
pub const NAT_CHAINS: [&str; 4] = [KUBE_PORTALS_CONTAINER, KUBE_PORTALS_HOST, KUBE_NODEPORT_CONTAINER, KUBE_NODEPORT_HOST];

/// The five jumps from the built-in chains.
pub fn builtin_jumps() -> Vec<BuiltinJump> {
    let comment = |text: &str| vec!["-m".to_string(), "comment".into(), "--comment".into(), text.to_string()];
    let local = || vec!["-m".to_string(), "addrtype".into(), "--dst-type".into(), "LOCAL".into()];
    let jump = |table, chain, mut args: Vec<String>, target: &str, prepend| {
        args.extend(["-j".to_string(), target.to_string()]);
        BuiltinJump { table, chain, args, prepend }
    };
    let nodeports = || [local(), comment(NODEPORTS_COMMENT)].concat();
    vec![
        jump(Table::Nat, "PREROUTING", comment(PORTALS_COMMENT), KUBE_PORTALS_CONTAINER, true),
        jump(Table::Nat, "OUTPUT", comment(PORTALS_COMMENT), KUBE_PORTALS_HOST, true),
        jump(Table::Nat, "PREROUTING", nodeports(), KUBE_NODEPORT_CONTAINER, false),
        jump(Table::Nat, "OUTPUT", nodeports(), KUBE_NODEPORT_HOST, false),
        jump(Table::Filter, "INPUT", comment(NON_LOCAL_COMMENT), KUBE_NODEPORT_NON_LOCAL, true),
    ]
}
