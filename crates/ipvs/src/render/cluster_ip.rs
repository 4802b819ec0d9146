//! The ClusterIP virtual server of a service port, and the hairpin
//! (`KUBE-LOOP-BACK`) members of its local endpoints.

use super::builder::Builder;
use crate::ipset::{KubeSet, members};
use model::Endpoint;
use plan::PortPlan;

/// `KUBE-LOOP-BACK` gets `ip,proto:port,ip` for every local endpoint of
/// the family, so a pod reaching itself through the service is
/// masqueraded.
pub(super) fn render_loopback(b: &mut Builder<'_>, plan: &PortPlan<'_>, endpoints: &[Endpoint]) {
    let (proto, family) = (plan.svc.name.protocol, b.ctx.family);
    for ep in endpoints.iter().filter(|ep| ep.is_local && family.contains(ep.ip)) {
        b.add_member(KubeSet::LoopBack, members::ip_port_ip(ep.ip, proto, ep.port, ep.ip));
    }
}

/// The ClusterIP: bound to the dummy interface, in `KUBE-CLUSTER-IP`,
/// real servers by internalTrafficPolicy.
pub(super) fn render_cluster_ip(b: &mut Builder<'_>, plan: &PortPlan<'_>) {
    let svc = plan.svc;
    b.add_member(KubeSet::ClusterIp, members::ip_port(svc.cluster_ip, svc.name.protocol, svc.port));
    let vs = b.virtual_server(plan, svc.cluster_ip, svc.port);
    let real_servers = super::endpoints::real_servers(plan, svc.internal_policy_local);
    b.add_service(svc, vs, real_servers);
    b.bind(svc.cluster_ip);
}
