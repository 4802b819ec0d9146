//! The `external-` chain: where NodePort, externalIP and LB traffic
//! enters. externalTrafficPolicy Cluster masquerades everything;
//! Local keeps the source, except that pod traffic and the node's own
//! traffic short-circuit to the cluster-wide chain (the node's
//! masqueraded), and what remains goes to the `local-` chain.

use super::local_traffic::if_local;
use super::ruleset::{ChainRules, RuleSpec};
use super::service_port::Port;
use super::statement::Stmt;
use crate::{Chain, Verdict};

/// The external chain, if the port has an external path.
pub fn render_external_chain(port: &Port<'_>) -> Option<ChainRules> {
    if !port.plan.uses_external_path {
        return None;
    }
    let mut chain = ChainRules::new(Chain::regular(port.names.external.as_str()));
    if port.plan.external_local {
        short_circuits(port, &mut chain);
    } else {
        chain.push(RuleSpec::new(vec![Stmt::MarkOr(port.ctx.mark)]).with_comment("masquerade"));
    }
    if port.plan.has_external {
        chain.push(RuleSpec::new(vec![Stmt::Verdict(Port::goto(
            port.external_policy_chain(),
        ))]));
    }
    Some(chain)
}

/// Pod and node traffic bypass externalTrafficPolicy Local.
fn short_circuits(port: &Port<'_>, chain: &mut ChainRules) {
    let to_cluster = || Stmt::Verdict(Verdict::Goto(port.names.service.clone()));
    if let Some(from_pods) = if_local(port.ctx) {
        chain.push(
            RuleSpec::new(vec![from_pods, to_cluster()]).with_comment("short-circuit pod traffic"),
        );
    }
    let local = Stmt::FibLocal { daddr: false };
    chain.push(
        RuleSpec::new(vec![local.clone(), Stmt::MarkOr(port.ctx.mark)])
            .with_comment("masquerade local traffic"),
    );
    chain
        .push(RuleSpec::new(vec![local, to_cluster()]).with_comment("short-circuit local traffic"));
}
