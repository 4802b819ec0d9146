//! The [`Tracker`]: the proxy's one store of cluster state, holding one
//! [`FamilyTracker`] per IP family served (upstream's metaproxier hands
//! every event to the proxier of each family). Sources feed it every
//! event once; each family's sync takes its own snapshot.

use crate::IpFamily;
use crate::counts::ChangeCounts;
use crate::family_tracker::FamilyTracker;
use crate::warning::Warning;
use crate::Objects;
use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use model::{ChangeSet, Snapshot};

/// Turns Service / EndpointSlice / Node / ServiceCIDR events into the model
/// of every IP family served, each family on its own (a dual-stack Service
/// is one service port in each family's snapshot, an IPv6 EndpointSlice
/// feeds only the IPv6 one).
///
/// Event methods return the problems found in the object, each logged once
/// with `tracing::warn!` (a problem every family finds, such as a bad
/// `clusterIP`, is one warning).
#[derive(Debug)]
pub struct Tracker {
    /// The primary family first; never empty.
    families: Vec<FamilyTracker>,
}

impl Tracker {
    /// A tracker for the proxy on node `node_name`, serving IPv4 only.
    pub fn new(node_name: impl Into<String>) -> Self {
        Self::with_family(node_name, IpFamily::V4)
    }

    /// A tracker serving `family` only (objects and addresses of the other
    /// family are ignored silently).
    pub fn with_family(node_name: impl Into<String>, family: IpFamily) -> Self {
        Self::with_families(node_name, family, &[])
    }

    /// A tracker serving `primary` and the families of `others` (duplicates
    /// of a family already served are ignored).
    pub fn with_families(node_name: impl Into<String>, primary: IpFamily, others: &[IpFamily]) -> Self {
        let node_name = node_name.into();
        let mut families = vec![FamilyTracker::with_family(node_name.clone(), primary)];
        for &family in others {
            if families.iter().all(|t| t.family() != family) {
                families.push(FamilyTracker::with_family(node_name.clone(), family));
            }
        }
        Self { families }
    }

    /// The node this tracker serves.
    pub fn node_name(&self) -> &str {
        self.primary().node_name()
    }

    /// The primary IP family.
    pub fn family(&self) -> IpFamily {
        self.primary().family()
    }

    /// Every family served, the primary first.
    pub fn families(&self) -> Vec<IpFamily> {
        self.families.iter().map(FamilyTracker::family).collect()
    }

    /// Something changed since the last snapshot of some family.
    pub fn has_changes(&self) -> bool {
        self.families.iter().any(FamilyTracker::has_changes)
    }

    /// Whether `family` changed since its last snapshot (false for a family
    /// not served).
    pub fn has_changes_of(&self, family: IpFamily) -> bool {
        self.of(family).is_some_and(|t| t.has_changes())
    }

    /// A Service was added or updated.
    pub fn upsert_service(&mut self, svc: &Service) -> Vec<Warning> {
        self.each_warning(|t| t.upsert_service(svc))
    }

    /// A Service was deleted.
    pub fn delete_service(&mut self, svc: &Service) {
        self.families.iter_mut().for_each(|t| t.delete_service(svc));
    }

    /// An EndpointSlice was added or updated.
    pub fn upsert_endpoint_slice(&mut self, slice: &EndpointSlice) -> Vec<Warning> {
        self.each_warning(|t| t.upsert_endpoint_slice(slice))
    }

    /// An EndpointSlice was deleted.
    pub fn delete_endpoint_slice(&mut self, slice: &EndpointSlice) {
        self.families.iter_mut().for_each(|t| t.delete_endpoint_slice(slice));
    }

    /// A Node was added or updated; only this tracker's node matters.
    pub fn upsert_node(&mut self, node: &Node) -> Vec<Warning> {
        self.each_warning(|t| t.upsert_node(node))
    }

    /// A Node was deleted; only this tracker's node matters.
    pub fn delete_node(&mut self, node: &Node) {
        self.families.iter_mut().for_each(|t| t.delete_node(node));
    }

    /// A ServiceCIDR was added or updated.
    pub fn upsert_service_cidr(&mut self, object: &ServiceCIDR) -> Vec<Warning> {
        self.each_warning(|t| t.upsert_service_cidr(object))
    }

    /// A ServiceCIDR was deleted.
    pub fn delete_service_cidr(&mut self, object: &ServiceCIDR) {
        self.families.iter_mut().for_each(|t| t.delete_service_cidr(object));
    }

    /// The service CIDRs of the primary family, as its next snapshot will
    /// carry them.
    pub fn service_cidrs(&self) -> Vec<IpNet> {
        self.primary().service_cidrs()
    }

    /// Makes `objects` the whole state of every family (see
    /// [`FamilyTracker::replace_all`]).
    pub fn replace_all(&mut self, objects: &Objects) -> Vec<Warning> {
        self.each_warning(|t| t.replace_all(objects))
    }

    /// The Service and EndpointSlice events counted since the last call and
    /// the changes pending until the next snapshot (see [`ChangeCounts`]).
    /// Every family sees every event, so an event counts once, as upstream
    /// counts it: the primary family's counts (the others' are drained).
    pub fn take_change_counts(&mut self) -> ChangeCounts {
        let mut families = self.families.iter_mut();
        let counts = families.next().map(FamilyTracker::take_change_counts).unwrap_or_default();
        families.for_each(|t| {
            t.take_change_counts();
        });
        counts
    }

    /// The primary family's current state and the services changed since
    /// its last snapshot (see [`FamilyTracker::snapshot`]).
    pub fn snapshot(&mut self) -> (Snapshot, ChangeSet) {
        self.families[0].snapshot()
    }

    /// `family`'s current state and the services changed since its last
    /// snapshot; `None` when the family is not served.
    pub fn snapshot_of(&mut self, family: IpFamily) -> Option<(Snapshot, ChangeSet)> {
        self.families.iter_mut().find(|t| t.family() == family).map(FamilyTracker::snapshot)
    }

    fn primary(&self) -> &FamilyTracker {
        &self.families[0]
    }

    fn of(&self, family: IpFamily) -> Option<&FamilyTracker> {
        self.families.iter().find(|t| t.family() == family)
    }

    /// Runs `event` on every family and logs each distinct warning once.
    fn each_warning(&mut self, mut event: impl FnMut(&mut FamilyTracker) -> Vec<Warning>) -> Vec<Warning> {
        let mut warnings: Vec<Warning> = Vec::new();
        for tracker in &mut self.families {
            for warning in event(tracker) {
                if !warnings.contains(&warning) {
                    warnings.push(warning);
                }
            }
        }
        warnings.iter().for_each(Warning::log);
        warnings
    }
}
