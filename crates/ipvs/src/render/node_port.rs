//! NodePort virtual servers (one per NodePort address) and their set
//! members (`KUBE-NODE-PORT-*`), and the health-check node port member.

use super::builder::Builder;
use super::endpoints::real_servers;
use crate::ipset::{KubeSet, members};
use model::{Protocol, ServicePort};
use plan::PortPlan;

/// The node port on every NodePort address: `KUBE-NODE-PORT-<PROTO>`
/// (masqueraded) and, with externalTrafficPolicy Local, the `-LOCAL-` set
/// too (which returns before the masquerade). SCTP sets hold
/// `node ip,sctp:port` instead of the bare port.
pub(super) fn render_node_port(b: &mut Builder<'_>, plan: &PortPlan<'_>) {
    let svc = plan.svc;
    let Some(node_port) = svc.node_port else { return };
    if b.node_port_ips.is_empty() {
        return;
    }
    let (set, local_set) = match svc.name.protocol {
        Protocol::Tcp => (KubeSet::NodePortTcp, KubeSet::NodePortLocalTcp),
        Protocol::Udp => (KubeSet::NodePortUdp, KubeSet::NodePortLocalUdp),
        Protocol::Sctp => (KubeSet::NodePortSctp, KubeSet::NodePortLocalSctp),
    };
    let entries: Vec<String> = match svc.name.protocol {
        Protocol::Sctp => b.node_port_ips.iter().map(|ip| members::ip_port(*ip, Protocol::Sctp, node_port)).collect(),
        _ => vec![members::port(node_port)],
    };
    for entry in entries {
        if plan.external_local {
            b.add_member(local_set, entry.clone());
        }
        b.add_member(set, entry);
    }
    let servers = real_servers(plan, plan.external_local);
    for ip in b.node_port_ips.clone() {
        let vs = b.virtual_server(plan, ip, node_port);
        b.add_service(svc, vs, servers.clone());
    }
}

/// `KUBE-HEALTH-CHECK-NODE-PORT` gets the health-check node port, which
/// the filter rules accept.
pub(super) fn render_health_check_node_port(b: &mut Builder<'_>, svc: &ServicePort) {
    if let Some(port) = svc.health_check_node_port {
        b.add_member(KubeSet::HealthCheckNodePort, members::port(port));
    }
}
