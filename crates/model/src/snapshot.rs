//! The state one sync renders, and what changed since the previous one.

use crate::{Endpoint, NodeInfo, ServiceName, ServicePort, ServicePortName, SharedMap};
use ipnet::IpNet;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Everything a backend needs for one sync. Cheap to clone: the maps are
/// shared until changed, service ports and endpoint lists always.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every service port the proxy handles, by name.
    pub services: SharedMap<ServicePortName, Arc<ServicePort>>,
    /// Endpoints of each service port (merged from all its slices, sorted,
    /// without duplicates). A port with no entry has no endpoints.
    pub endpoints: SharedMap<ServicePortName, Arc<Vec<Endpoint>>>,
    /// This node.
    pub node: NodeInfo,
    /// The cluster's service CIDRs of the snapshot's family (from the
    /// `networking.k8s.io/v1` ServiceCIDR objects' `spec.cidrs`), sorted,
    /// without duplicates. Empty when the cluster has none or no
    /// ServiceCIDR API.
    pub service_cidrs: Vec<IpNet>,
}

impl Snapshot {
    /// The endpoints of `name`, empty if it has none.
    pub fn endpoints_of(&self, name: &ServicePortName) -> &[Endpoint] {
        self.endpoints.get(name).map(|eps| eps.as_slice()).unwrap_or(&[])
    }
}

/// Which services changed since the last sync, for partial syncs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeSet {
    /// Services whose Service object or EndpointSlices changed (including
    /// ones that were deleted).
    pub services: BTreeSet<ServiceName>,
    /// The node object changed in a way that affects rules (addresses,
    /// pod CIDRs, zone): every service must be re-rendered.
    pub node_changed: bool,
    /// The service CIDRs changed: only rules built from them (nftables
    /// mode's drop of unallocated ClusterIPs) are affected.
    pub service_cidrs_changed: bool,
}

impl ChangeSet {
    /// Adds what `later` says changed (change sets of snapshots no sync
    /// consumed yet add up). Linear in both sets (merged, not inserted
    /// one by one: the first snapshot's set holds every service).
    pub fn absorb(&mut self, mut later: ChangeSet) {
        self.services.append(&mut later.services);
        self.node_changed |= later.node_changed;
        self.service_cidrs_changed |= later.service_cidrs_changed;
    }

    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.services.is_empty() && !self.node_changed && !self.service_cidrs_changed
    }
}
