//! The ClusterIP virtual server of a service port, and the hairpin
//! (`KUBE-LOOP-BACK`) members of its local endpoints.

use super::builder::Builder;
use crate::ipset::{KubeSet, members};
use model::topology::CategorizedEndpoints;
use model::{Endpoint, ServicePort};

/// `KUBE-LOOP-BACK` gets `ip,proto:port,ip` for every local endpoint, so a
/// pod reaching itself through the service is masqueraded.
pub(super) fn render_loopback(b: &mut Builder<'_>, svc: &ServicePort, endpoints: &[Endpoint]) {
    for ep in endpoints.iter().filter(|ep| ep.is_local && b.opts.family.contains(ep.ip)) {
        b.add_member(KubeSet::LoopBack, members::ip_port_ip(ep.ip, svc.name.protocol, ep.port, ep.ip));
    }
}

/// The ClusterIP: bound to the dummy interface, in `KUBE-CLUSTER-IP`,
/// real servers by internalTrafficPolicy.
pub(super) fn render_cluster_ip(b: &mut Builder<'_>, svc: &ServicePort, cat: &CategorizedEndpoints<'_>) {
    b.add_member(KubeSet::ClusterIp, members::ip_port(svc.cluster_ip, svc.name.protocol, svc.port));
    let vs = b.virtual_server(svc, svc.cluster_ip, svc.port);
    let real_servers = b.real_servers(svc, cat, svc.internal_policy_local);
    b.add_service(svc, vs, real_servers);
    b.bind(svc.cluster_ip);
}
