//! A whole cluster state, as sources that deliver complete states hand it
//! over (the manifests file).

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;

/// Every Service, EndpointSlice, Node and ServiceCIDR of one state; input of
/// [`crate::Tracker::replace_all`].
#[derive(Debug, Clone, Default)]
pub struct Objects {
    /// v1 Services.
    pub services: Vec<Service>,
    /// discovery.k8s.io/v1 EndpointSlices.
    pub endpoint_slices: Vec<EndpointSlice>,
    /// v1 Nodes (only the tracker's own node is used).
    pub nodes: Vec<Node>,
    /// networking.k8s.io/v1 ServiceCIDRs.
    pub service_cidrs: Vec<ServiceCIDR>,
}
