//! One port of one Service, as the proxy needs it.

use crate::ServicePortName;
use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

/// L4 protocol of a service port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// TCP
    Tcp,
    /// UDP
    Udp,
    /// SCTP
    Sctp,
}

impl Protocol {
    /// Lower-case name, as used in chain hashes and iptables `-p`.
    pub fn as_lower(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }

    /// Parses the API spelling (`TCP`, `UDP`, `SCTP`).
    pub fn from_api(s: &str) -> Option<Self> {
        match s {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_lower())
    }
}

/// One port of a Service with everything a backend needs to program it.
///
/// Only services the proxy handles become a `ServicePort`: headless,
/// ExternalName and `service-proxy-name`-labelled services are dropped by
/// the tracker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePort {
    /// Which service port this is.
    pub name: ServicePortName,
    /// The ClusterIP of this family.
    pub cluster_ip: IpAddr,
    /// The service port (`spec.ports[].port`).
    pub port: u16,
    /// `spec.ports[].nodePort`, for NodePort and LoadBalancer services.
    pub node_port: Option<u16>,
    /// `spec.externalIPs` of this family.
    pub external_ips: Vec<IpAddr>,
    /// `status.loadBalancer.ingress[].ip` of this family (ipMode VIP or unset).
    pub load_balancer_ips: Vec<IpAddr>,
    /// `spec.loadBalancerSourceRanges` of this family.
    pub load_balancer_source_ranges: Vec<IpNet>,
    /// ClientIP session affinity timeout in seconds; `None` without affinity.
    pub session_affinity_seconds: Option<u32>,
    /// externalTrafficPolicy is Local and the service is externally accessible.
    pub external_policy_local: bool,
    /// internalTrafficPolicy is Local.
    pub internal_policy_local: bool,
    /// `spec.healthCheckNodePort`, set for ETP=Local LoadBalancer services.
    pub health_check_node_port: Option<u16>,
}

impl ServicePort {
    /// A plain ClusterIP service port with no extras; a starting point for
    /// builders and tests.
    pub fn cluster_ip(name: ServicePortName, cluster_ip: IpAddr, port: u16) -> Self {
        Self {
            name,
            cluster_ip,
            port,
            node_port: None,
            external_ips: Vec::new(),
            load_balancer_ips: Vec::new(),
            load_balancer_source_ranges: Vec::new(),
            session_affinity_seconds: None,
            external_policy_local: false,
            internal_policy_local: false,
            health_check_node_port: None,
        }
    }

    /// Reachable from outside the cluster: a NodePort, an external IP or a
    /// load-balancer IP (upstream's `ExternallyAccessible`).
    pub fn externally_accessible(&self) -> bool {
        self.node_port.is_some() || !self.external_ips.is_empty() || !self.load_balancer_ips.is_empty()
    }

    /// Cluster-wide endpoints serve some of this port's traffic
    /// (upstream's `UsesClusterEndpoints`): internalTrafficPolicy Cluster,
    /// or any external access at all — even with externalTrafficPolicy
    /// Local, pod and node traffic to external destinations short-circuits
    /// to the cluster-wide endpoints.
    pub fn uses_cluster_endpoints(&self) -> bool {
        !self.internal_policy_local || self.externally_accessible()
    }

    /// Node-local endpoints serve some of this port's traffic
    /// (upstream's `UsesLocalEndpoints`).
    pub fn uses_local_endpoints(&self) -> bool {
        self.internal_policy_local || (self.external_policy_local && self.externally_accessible())
    }
}
