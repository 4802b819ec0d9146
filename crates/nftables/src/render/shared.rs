//! The elements of the shared sets and verdict maps, collected while the
//! service ports are rendered.

use crate::Element;
use std::net::IpAddr;

/// Elements of the table's shared sets and maps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedSets {
    /// `hairpin-connections`.
    pub hairpin_connections: Vec<Element>,
    /// `cluster-ips` (duplicates removed when the set is made).
    pub cluster_ips: Vec<IpAddr>,
    /// `no-endpoint-services`.
    pub no_endpoint_services: Vec<Element>,
    /// `no-endpoint-nodeports`.
    pub no_endpoint_nodeports: Vec<Element>,
    /// `firewall-ips`.
    pub firewall_ips: Vec<Element>,
    /// `service-ips`.
    pub service_ips: Vec<Element>,
    /// `service-nodeports`.
    pub service_nodeports: Vec<Element>,
}
