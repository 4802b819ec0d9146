//! Builders for model objects in upstream's test address convention, so
//! golden files line up with upstream's own proxier tests:
//! pod IPs in 10.180.0.0/16, ClusterIPs in 172.30.0.0/16, external IPs in
//! 192.168.99.0/24, load-balancer IPs in 1.2.3.0/24, node IP 192.168.0.2,
//! cluster CIDR 10.0.0.0/8.
//!
//! ```
//! use testkit::builders::*;
//! let snap = snapshot()
//!     .service(
//!         tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80).node_port(3001),
//!         [endpoint(pod_ip(1), 80).local(), endpoint(pod_ip(2), 80)],
//!     )
//!     .build();
//! assert_eq!(snap.services.len(), 1);
//! ```

use ipnet::IpNet;
use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// The node the proxy runs on (upstream's `testHostname`).
pub const NODE_NAME: &str = "test-hostname";
/// A node other than ours, for remote endpoints.
pub const OTHER_NODE: &str = "other-node";

/// The node's IP (upstream's `testNodeIP`).
pub fn node_ip() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 168, 0, 2))
}

/// The cluster CIDR for local-traffic detection (upstream's tests use
/// `10.0.0.0/8`).
pub fn cluster_cidr() -> IpNet {
    IpNet::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 0)), 8).unwrap_or_default()
}

/// The `n`th pod IP: 10.180.(n / 256).(n % 256).
pub fn pod_ip(n: u16) -> IpAddr {
    let [hi, lo] = n.to_be_bytes();
    IpAddr::V4(Ipv4Addr::new(10, 180, hi, lo))
}

/// The `n`th ClusterIP: 172.30.(n / 256).(n % 256), e.g. 172.30.0.41.
pub fn cluster_ip(n: u16) -> IpAddr {
    let [hi, lo] = n.to_be_bytes();
    IpAddr::V4(Ipv4Addr::new(172, 30, hi, lo))
}

/// The `n`th external IP: 192.168.99.n.
pub fn external_ip(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 168, 99, n))
}

/// The `n`th load-balancer ingress IP: 1.2.3.n.
pub fn lb_ip(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(1, 2, 3, n))
}

/// This node: [`NODE_NAME`] with [`node_ip`] and pod CIDR 10.180.0.0/24.
pub fn node_info() -> NodeInfo {
    NodeInfo {
        name: NODE_NAME.to_string(),
        addresses: vec![node_ip()],
        pod_cidrs: vec![IpNet::new(pod_ip(0), 24).unwrap_or_default()],
        deleting: false,
        zone: None,
    }
}

/// A TCP ClusterIP service port `ns/name:port_name` at `ip:port`; chain
/// the methods of [`PortBuilder`] for the rest.
pub fn tcp_port(ns: &str, name: &str, port_name: &str, ip: IpAddr, port: u16) -> PortBuilder {
    let spn = ServicePortName::new(ns, name, port_name, Protocol::Tcp);
    PortBuilder(ServicePort::cluster_ip(spn, ip, port))
}

/// Builds a [`ServicePort`].
#[derive(Debug, Clone)]
pub struct PortBuilder(ServicePort);

impl PortBuilder {
    /// Sets the protocol (part of the name, and so of every chain hash).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.0.name.protocol = protocol;
        self
    }

    /// UDP instead of TCP.
    pub fn udp(self) -> Self {
        self.protocol(Protocol::Udp)
    }

    /// `spec.ports[].nodePort`.
    pub fn node_port(mut self, port: u16) -> Self {
        self.0.node_port = Some(port);
        self
    }

    /// Adds a `spec.externalIPs` entry.
    pub fn external_ip(mut self, ip: IpAddr) -> Self {
        self.0.external_ips.push(ip);
        self
    }

    /// Adds a `status.loadBalancer.ingress[].ip`.
    pub fn lb_ip(mut self, ip: IpAddr) -> Self {
        self.0.load_balancer_ips.push(ip);
        self
    }

    /// Adds a `loadBalancerSourceRanges` entry; panics on a bad CIDR (tests only).
    pub fn source_range(mut self, cidr: &str) -> Self {
        let net: IpNet = cidr.parse().unwrap_or_else(|e| panic!("bad CIDR {cidr}: {e}"));
        self.0.load_balancer_source_ranges.push(net);
        self
    }

    /// ClientIP session affinity with this timeout.
    pub fn affinity(mut self, seconds: u32) -> Self {
        self.0.session_affinity_seconds = Some(seconds);
        self
    }

    /// externalTrafficPolicy Local.
    pub fn etp_local(mut self) -> Self {
        self.0.external_policy_local = true;
        self
    }

    /// internalTrafficPolicy Local.
    pub fn itp_local(mut self) -> Self {
        self.0.internal_policy_local = true;
        self
    }

    /// `spec.healthCheckNodePort`.
    pub fn health_check_node_port(mut self, port: u16) -> Self {
        self.0.health_check_node_port = Some(port);
        self
    }

    /// The port's name.
    pub fn name(&self) -> &ServicePortName {
        &self.0.name
    }

    /// The finished service port.
    pub fn build(self) -> ServicePort {
        self.0
    }
}

impl From<PortBuilder> for ServicePort {
    fn from(b: PortBuilder) -> Self {
        b.0
    }
}

/// A ready endpoint `ip:port` on [`OTHER_NODE`]; chain the methods of
/// [`EndpointBuilder`] to change that.
pub fn endpoint(ip: IpAddr, port: u16) -> EndpointBuilder {
    EndpointBuilder(Endpoint::ready(ip, port, Some(OTHER_NODE), false))
}

/// Builds an [`Endpoint`].
#[derive(Debug, Clone)]
pub struct EndpointBuilder(Endpoint);

impl EndpointBuilder {
    /// On this node ([`NODE_NAME`]).
    pub fn local(self) -> Self {
        self.on_node(NODE_NAME)
    }

    /// On node `name` (local when it is [`NODE_NAME`]).
    pub fn on_node(mut self, name: &str) -> Self {
        self.0.node_name = Some(name.into());
        self.0.is_local = name == NODE_NAME;
        self
    }

    /// Not ready (and not serving).
    pub fn not_ready(mut self) -> Self {
        self.0.ready = false;
        self.0.serving = false;
        self
    }

    /// Terminating: not ready, serving as given.
    pub fn terminating(mut self, serving: bool) -> Self {
        self.0.ready = false;
        self.0.serving = serving;
        self.0.terminating = true;
        self
    }

    /// The finished endpoint.
    pub fn build(self) -> Endpoint {
        self.0
    }
}

impl From<EndpointBuilder> for Endpoint {
    fn from(b: EndpointBuilder) -> Self {
        b.0
    }
}

/// An empty snapshot on [`node_info`].
pub fn snapshot() -> SnapshotBuilder {
    SnapshotBuilder(Snapshot { node: node_info(), ..Snapshot::default() })
}

/// Builds a [`Snapshot`].
#[derive(Debug, Clone)]
pub struct SnapshotBuilder(Snapshot);

impl SnapshotBuilder {
    /// Adds a service port with its endpoints (none: no entry, as the
    /// tracker leaves it).
    pub fn service<E: Into<Endpoint>>(
        mut self,
        port: impl Into<ServicePort>,
        endpoints: impl IntoIterator<Item = E>,
    ) -> Self {
        let port: ServicePort = port.into();
        let mut eps: Vec<Endpoint> = endpoints.into_iter().map(Into::into).collect();
        eps.sort();
        eps.dedup();
        if !eps.is_empty() {
            self.0.endpoints.insert(port.name.clone(), Arc::new(eps));
        }
        self.0.services.insert(port.name.clone(), Arc::new(port));
        self
    }

    /// Replaces the node.
    pub fn node(mut self, node: NodeInfo) -> Self {
        self.0.node = node;
        self
    }

    /// The finished snapshot.
    pub fn build(self) -> Snapshot {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_upstream_convention() {
        assert_eq!(pod_ip(1).to_string(), "10.180.0.1");
        assert_eq!(pod_ip(257).to_string(), "10.180.1.1");
        assert_eq!(cluster_ip(41).to_string(), "172.30.0.41");
        assert_eq!(cluster_cidr().to_string(), "10.0.0.0/8");
    }

    #[test]
    fn udp_changes_the_name_too() {
        let port = tcp_port("ns", "dns", "dns", cluster_ip(10), 53).udp().build();
        assert_eq!(port.name.protocol, Protocol::Udp);
    }

    #[test]
    fn local_endpoints_are_on_this_node() {
        let ep = endpoint(pod_ip(1), 80).local().build();
        assert!(ep.is_local);
        assert_eq!(ep.node_name.as_deref(), Some(NODE_NAME));
        let ep = endpoint(pod_ip(2), 80).terminating(true).build();
        assert!(!ep.is_local && !ep.ready && ep.serving && ep.terminating);
    }
}
