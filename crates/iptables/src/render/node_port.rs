//! NodePorts: nat `KUBE-NODEPORTS` entries to the port's `KUBE-EXT` chain
//! (plus a counted copy for 127.0.0.0/8 when localhost NodePorts and nfacct
//! are available), and the filter `KUBE-NODEPORTS` ACCEPT of the
//! health-check node port.

use xtables::FamilyText;
use super::naming::NamedPlan;
use xtables::{Rule, Target};
use super::{RenderContext, ServicePortRules};
use crate::chain_name::KUBE_NODEPORTS;

/// nfacct counter of NodePort packets accepted on localhost.
const LOCALHOST_NODEPORTS_COUNTER: &str = "localhost_nps_accepted_pkts";

/// The nat entries of the node port, when the port has endpoints anywhere.
pub(crate) fn render_entries(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    let Some(node_port) = plan.port.svc.node_port else { return };
    if !plan.port.has_endpoints {
        return;
    }
    let entry = || Rule::new(KUBE_NODEPORTS).comment(&plan.name).dport(plan.proto, node_port);
    if ctx.sync.localhost_nodeports && ctx.nfacct {
        let counted = entry()
            .dst(ctx.sync.family.loopback_net())
            .matching(&nfacct_match(LOCALHOST_NODEPORTS_COUNTER))
            .jump(&plan.chains.ext)
            .build();
        out.nat_entries.push(counted);
    }
    out.nat_entries.push(entry().jump(&plan.chains.ext).build());
}

/// The filter ACCEPT of `healthCheckNodePort`, whether or not the port has
/// local endpoints (the health server answers either way).
pub(crate) fn render_health_check(plan: &NamedPlan, out: &mut ServicePortRules) {
    let Some(port) = plan.port.svc.health_check_node_port else { return };
    let accept = Rule::new(KUBE_NODEPORTS)
        .comment(&format!("{} health check node port", plan.name))
        .dport("tcp", port)
        .target(Target::Accept)
        .build();
    out.filter.push(accept);
}

/// `-m nfacct --nfacct-name  <counter>`, with the two spaces iptables-save
/// prints.
pub(crate) fn nfacct_match(counter: &str) -> String {
    format!("-m nfacct --nfacct-name  {counter}")
}
