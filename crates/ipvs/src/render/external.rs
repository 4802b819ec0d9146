//! Virtual servers for external IPs and load-balancer ingress IPs, their
//! set members (`KUBE-EXTERNAL-IP[-LOCAL]`, `KUBE-LOAD-BALANCER*`), and the
//! loadBalancerSourceRanges firewall members.

use super::builder::Builder;
use super::rules::LbNoNodeAccess;
use crate::ipset::{KubeSet, members};
use model::ServicePort;
use model::topology::CategorizedEndpoints;
use std::net::IpAddr;

/// Each external IP: `KUBE-EXTERNAL-IP` (masqueraded) or, with
/// externalTrafficPolicy Local, `KUBE-EXTERNAL-IP-LOCAL`; bound unless it
/// is a node address.
pub(super) fn render_external_ips(b: &mut Builder<'_>, svc: &ServicePort, cat: &CategorizedEndpoints<'_>) {
    for &ip in svc.external_ips.iter().filter(|ip| b.opts.family.contains(**ip)) {
        let set = if svc.external_policy_local { KubeSet::ExternalIpLocal } else { KubeSet::ExternalIp };
        b.add_member(set, members::ip_port(ip, svc.name.protocol, svc.port));
        add_external_virtual_server(b, svc, cat, ip);
    }
}

/// Each load-balancer ingress IP: `KUBE-LOAD-BALANCER`, `-LOCAL` for
/// externalTrafficPolicy Local, and with source ranges `-FW` plus one
/// `-SOURCE-CIDR` member per range (and `-SOURCE-IP` when a range holds the
/// node IP; otherwise the node itself is kept out by an iptables rule).
pub(super) fn render_load_balancer_ips(b: &mut Builder<'_>, svc: &ServicePort, cat: &CategorizedEndpoints<'_>) {
    let proto = svc.name.protocol;
    for &ip in svc.load_balancer_ips.iter().filter(|ip| b.opts.family.contains(**ip)) {
        b.add_member(KubeSet::LoadBalancer, members::ip_port(ip, proto, svc.port));
        if svc.external_policy_local {
            b.add_member(KubeSet::LoadBalancerLocal, members::ip_port(ip, proto, svc.port));
        }
        let ranges: Vec<_> = svc.load_balancer_source_ranges.iter().filter(|r| b.opts.family.contains_net(r)).collect();
        if !ranges.is_empty() {
            b.add_member(KubeSet::LoadBalancerFw, members::ip_port(ip, proto, svc.port));
            for range in &ranges {
                b.add_member(KubeSet::LoadBalancerSourceCidr, members::ip_port_net(ip, proto, svc.port, range));
            }
            if b.node_ip.is_some_and(|node| ranges.iter().any(|r| r.contains(&node))) {
                b.add_member(KubeSet::LoadBalancerSourceIp, members::ip_port_ip(ip, proto, svc.port, ip));
            } else {
                b.lb_no_node_access.push(LbNoNodeAccess { ip, protocol: proto, port: svc.port });
            }
        }
        add_external_virtual_server(b, svc, cat, ip);
    }
}

/// A virtual server on an externally reachable IP: real servers by
/// externalTrafficPolicy; bound to the dummy unless a node address.
fn add_external_virtual_server(b: &mut Builder<'_>, svc: &ServicePort, cat: &CategorizedEndpoints<'_>, ip: IpAddr) {
    let vs = b.virtual_server(svc, ip, svc.port);
    let real_servers = b.real_servers(svc, cat, svc.external_policy_local);
    b.add_service(svc, vs, real_servers);
    if !b.is_local_address(ip) {
        b.bind(ip);
    }
}
