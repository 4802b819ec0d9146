//! This proxy's own node.

use ipnet::IpNet;
use std::net::IpAddr;

/// What the proxy knows of the node it runs on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// Node name (`--hostname-override`, else the host name).
    pub name: String,
    /// The node's addresses from `status.addresses` (InternalIP first, then
    /// ExternalIP), used for NodePorts where `nodePortAddresses` says
    /// `primary` and for health-check servers.
    pub addresses: Vec<IpAddr>,
    /// `spec.podCIDRs`.
    pub pod_cidrs: Vec<IpNet>,
    /// The node is going away: `deletionTimestamp` is set, or it carries the
    /// `ToBeDeletedByClusterAutoscaler` taint. Node `/healthz` reports 503.
    pub deleting: bool,
    /// The node's zone: its `topology.kubernetes.io/zone` label (`None`
    /// when unset or empty). Cluster traffic follows endpoints' zone hints
    /// for this zone.
    pub zone: Option<String>,
}
