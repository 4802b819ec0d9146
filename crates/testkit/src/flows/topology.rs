//! The reference topology: node-a, where kube-proxy ran, and the clients
//! around it.

use crate::tracer::TraceContext;
use ipnet::{IpNet, Ipv4Net};
use std::net::{IpAddr, Ipv4Addr};

/// node-a's InternalIP (eth0); local processes send from it.
pub const NODE_A_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 86, 2);

/// Every address of node-a: InternalIP, the ext0 address facing the
/// external clients, the pod-side gateway address on every veth, loopback.
pub const NODE_A_ADDRESSES: [Ipv4Addr; 4] = [NODE_A_IP, NODE_A_EXT0, POD_GATEWAY, Ipv4Addr::LOCALHOST];

/// The cluster's pod range (clusterCIDR).
pub const POD_CIDR: Ipv4Net = Ipv4Net::new_assert(Ipv4Addr::new(10, 244, 0, 0), 16);

/// node-a's address on ext0, the link to the external clients.
pub const NODE_A_EXT0: Ipv4Addr = Ipv4Addr::new(172, 20, 0, 1);

/// node-a's address on every pod-facing veth: the pods' gateway, and the
/// source node-a masquerades to towards a pod.
pub const POD_GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 244, 0, 1);

/// The client pod on node-a (`pod 10.244.0.200`).
pub const CLIENT_POD: Ipv4Addr = Ipv4Addr::new(10, 244, 0, 200);

/// What the external clients send to node-a: its InternalIP, the service
/// CIDR, and TEST-NET-1 (the LoadBalancer ingress IPs and externalIPs).
pub const EXTERNAL_ROUTES: [Ipv4Net; 3] = [
    Ipv4Net::new_assert(NODE_A_IP, 32),
    Ipv4Net::new_assert(Ipv4Addr::new(10, 96, 0, 0), 12),
    Ipv4Net::new_assert(Ipv4Addr::new(192, 0, 2, 0), 24),
];

/// The external clients: .10 inside loadBalancerSourceRanges, .66 outside.
pub const EXTERNAL_CLIENTS: [Ipv4Addr; 2] = [Ipv4Addr::new(172, 20, 0, 10), Ipv4Addr::new(172, 20, 0, 66)];

/// node-a as a trace context.
pub fn node_a() -> TraceContext {
    TraceContext::new(NODE_A_ADDRESSES.map(IpAddr::V4)).with_pod_cidr(IpNet::V4(POD_CIDR))
}
