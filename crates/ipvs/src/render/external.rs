//! Virtual servers for external IPs and load-balancer ingress IPs, their
//! set members (`KUBE-EXTERNAL-IP[-LOCAL]`, `KUBE-LOAD-BALANCER*`), and the
//! loadBalancerSourceRanges firewall members.

use super::builder::Builder;
use super::endpoints::real_servers;
use super::rules::LbNoNodeAccess;
use crate::ipset::{KubeSet, members};
use plan::PortPlan;
use std::net::IpAddr;

/// Each external IP: `KUBE-EXTERNAL-IP` (masqueraded) or, with
/// externalTrafficPolicy Local, `KUBE-EXTERNAL-IP-LOCAL`; bound unless it
/// is a node address.
pub(super) fn render_external_ips(b: &mut Builder<'_>, plan: &PortPlan<'_>) {
    let svc = plan.svc;
    let set = if plan.external_local { KubeSet::ExternalIpLocal } else { KubeSet::ExternalIp };
    for &ip in &plan.external_ips {
        b.add_member(set, members::ip_port(ip, svc.name.protocol, svc.port));
        add_external_virtual_server(b, plan, ip);
    }
}

/// Each load-balancer ingress IP: `KUBE-LOAD-BALANCER`, `-LOCAL` for
/// externalTrafficPolicy Local, and with source ranges `-FW` plus one
/// `-SOURCE-CIDR` member per range (and `-SOURCE-IP` when a range holds the
/// node IP; otherwise the node itself is kept out by an iptables rule).
pub(super) fn render_load_balancer_ips(b: &mut Builder<'_>, plan: &PortPlan<'_>) {
    let (proto, port) = (plan.svc.name.protocol, plan.svc.port);
    for &ip in &plan.lb_ips {
        b.add_member(KubeSet::LoadBalancer, members::ip_port(ip, proto, port));
        if plan.external_local {
            b.add_member(KubeSet::LoadBalancerLocal, members::ip_port(ip, proto, port));
        }
        if !plan.source_ranges.is_empty() {
            b.add_member(KubeSet::LoadBalancerFw, members::ip_port(ip, proto, port));
            for range in &plan.source_ranges {
                b.add_member(KubeSet::LoadBalancerSourceCidr, members::ip_port_net(ip, proto, port, range));
            }
            if plan.source_ranges_hold_node {
                b.add_member(KubeSet::LoadBalancerSourceIp, members::ip_port_ip(ip, proto, port, ip));
            } else {
                b.lb_no_node_access.push(LbNoNodeAccess { ip, protocol: proto, port });
            }
        }
        add_external_virtual_server(b, plan, ip);
    }
}

/// A virtual server on an externally reachable IP: real servers by
/// externalTrafficPolicy; bound to the dummy unless a node address.
fn add_external_virtual_server(b: &mut Builder<'_>, plan: &PortPlan<'_>, ip: IpAddr) {
    let vs = b.virtual_server(plan, ip, plan.svc.port);
    b.add_service(plan.svc, vs, real_servers(plan, plan.external_local));
    if !b.ctx.is_local_address(ip) {
        b.bind(ip);
    }
}
