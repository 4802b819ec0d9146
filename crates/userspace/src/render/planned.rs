//! Each TCP and UDP service port of the family as userspace mode serves
//! it: the endpoints of its cluster traffic and, when externalTrafficPolicy
//! Local makes them differ, of its external traffic (upstream's later
//! modes' rules: internalTrafficPolicy Local narrows ClusterIP traffic to
//! this node's endpoints, externalTrafficPolicy Local narrows traffic from
//! outside to them).

use model::{Protocol, ServicePort, Snapshot};
use plan::{PortPlan, SyncContext};
use std::net::SocketAddr;
use std::time::Duration;

/// One service port's listeners' contents.
#[derive(Debug)]
pub struct Planned<'a> {
    /// The service port.
    pub svc: &'a ServicePort,
    /// The plan it was derived from (addresses of the family).
    pub plan: PortPlan<'a>,
    /// Endpoints of ClusterIP traffic, and of the node's and its pods' own
    /// traffic to the external addresses.
    pub internal: Vec<SocketAddr>,
    /// Endpoints of traffic from outside when they differ from `internal`
    /// (externalTrafficPolicy Local): a second proxy port serves it.
    pub external: Option<Vec<SocketAddr>>,
    /// ClientIP affinity timeout.
    pub affinity: Option<Duration>,
}

/// The family's service ports that userspace mode serves (TCP and UDP:
/// SCTP is not forwarded in user space), in name order.
pub fn planned<'a>(snapshot: &'a Snapshot, ctx: &SyncContext) -> Vec<Planned<'a>> {
    snapshot
        .services
        .iter()
        .filter(|(_, svc)| ctx.family.contains(svc.cluster_ip) && svc.name.protocol != Protocol::Sctp)
        .map(|(name, svc)| plan_port(ctx, svc, snapshot.endpoints_of(name)))
        .collect()
}

fn plan_port<'a>(ctx: &SyncContext, svc: &'a ServicePort, endpoints: &'a [model::Endpoint]) -> Planned<'a> {
    let plan = PortPlan::new(ctx, svc, endpoints);
    let addrs = |eps: &[&model::Endpoint]| eps.iter().map(|e| SocketAddr::new(e.ip, e.port)).collect::<Vec<_>>();
    let internal = if svc.internal_policy_local { addrs(&plan.local) } else { addrs(&plan.cluster) };
    let external = plan.external_local.then(|| addrs(&plan.local)).filter(|ext| *ext != internal);
    let affinity = plan.affinity_seconds.map(|s| Duration::from_secs(u64::from(s)));
    Planned { svc, plan, internal, external, affinity }
}
