//! The [`FamilyTracker`]: one IP family's compact state built from API
//! events; hands out snapshots with the set of services changed since the
//! last one (upstream's change trackers of one single-stack proxier).

mod intern;
mod refresh;
mod replace;
mod service_cidrs;

use crate::IpFamily;
use crate::counts::{ChangeCounter, ChangeCounts};
use crate::meta::name_of;
use crate::node::node_info;
use crate::service::{service_name, service_ports};
use crate::slice::{SliceInfo, SliceKey, SliceReader, slice_info};
use crate::slices::ServiceSlices;
use crate::warning::Warning;
use intern::NodeNames;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use model::{ChangeSet, NodeInfo, ServiceName, ServicePort, Snapshot};
use service_cidrs::ServiceCidrs;
use foldhash::HashMap;
use std::sync::Arc;

/// Turns Service / EndpointSlice / Node events into the model of one IP
/// family (objects and addresses of the other family are ignored).
///
/// Keeps only what the proxy needs: the [`ServicePort`]s of each handled
/// service (shared with the snapshots it hands out), each EndpointSlice's
/// endpoint lists keyed by slice name (so an update of one slice replaces
/// only its part; a service port fed by one slice shares that slice's
/// list with the snapshots), and this node's [`NodeInfo`]. Each service's
/// [`ServiceName`] is stored once and shared by every index and name. Every event method
/// compares the new compact form with what it holds and marks a service
/// changed only when something the proxy uses actually changed.
///
/// Event methods return the problems found in the object (the
/// [`crate::Tracker`] logs them, once each). An object the tracker cannot use replaces
/// (that is, removes) what it held for the same object, so the state always
/// equals what building from the latest objects would give.
#[derive(Debug)]
pub struct FamilyTracker {
    node_name: String,
    family: IpFamily,
    services: HashMap<ServiceName, Box<[Arc<ServicePort>]>>,
    slices: HashMap<ServiceName, ServiceSlices>,
    slice_owners: HashMap<SliceKey, ServiceName>,
    node_names: NodeNames,
    node: NodeInfo,
    service_cidrs: ServiceCidrs,
    current: Snapshot,
    changes: ChangeSet,
    counts: ChangeCounter,
}

impl FamilyTracker {
    /// A tracker for the proxy on node `node_name`, serving `family`
    /// (objects and addresses of the other family are ignored silently).
    pub fn with_family(node_name: impl Into<String>, family: IpFamily) -> Self {
        let node_name = node_name.into();
        let node = NodeInfo {
            name: node_name.clone(),
            ..NodeInfo::default()
        };
        Self {
            current: Snapshot {
                node: node.clone(),
                ..Snapshot::default()
            },
            node_name,
            family,
            services: HashMap::default(),
            slices: HashMap::default(),
            slice_owners: HashMap::default(),
            node_names: NodeNames::default(),
            node,
            service_cidrs: ServiceCidrs::default(),
            changes: ChangeSet::default(),
            counts: ChangeCounter::default(),
        }
    }

    /// The node this tracker serves.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// The IP family this tracker serves.
    pub fn family(&self) -> IpFamily {
        self.family
    }

    /// Something changed since the last [`FamilyTracker::snapshot`].
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// A Service was added or updated.
    pub fn upsert_service(&mut self, svc: &Service) -> Vec<Warning> {
        let name = self.shared_name(service_name(svc));
        let (ports, warnings) = service_ports(svc, &name, self.family);
        self.set_service(name, ports);
        warnings
    }

    /// A Service was deleted.
    pub fn delete_service(&mut self, svc: &Service) {
        self.set_service(service_name(svc), Vec::new());
    }

    /// An EndpointSlice was added or updated.
    pub fn upsert_endpoint_slice(&mut self, slice: &EndpointSlice) -> Vec<Warning> {
        let (info, warnings) = self.read_slice(slice);
        self.set_slice(SliceKey::of(slice), info);
        self.node_names.prune_unused();
        warnings
    }

    /// An EndpointSlice was deleted.
    pub fn delete_endpoint_slice(&mut self, slice: &EndpointSlice) {
        self.set_slice(SliceKey::of(slice), None);
    }

    /// The Service and EndpointSlice events counted since the last call
    /// and the changes pending until the next [`FamilyTracker::snapshot`] (see
    /// [`ChangeCounts`] for what counts).
    pub fn take_change_counts(&mut self) -> ChangeCounts {
        self.counts.take()
    }

    /// A Node was added or updated; only this tracker's node matters.
    pub fn upsert_node(&mut self, node: &Node) -> Vec<Warning> {
        if name_of(&node.metadata) != self.node_name {
            return Vec::new();
        }
        let (info, warnings) = node_info(node, &self.node_name, self.family);
        self.set_node(info);
        warnings
    }

    /// A Node was deleted; only this tracker's node matters.
    pub fn delete_node(&mut self, node: &Node) {
        if name_of(&node.metadata) == self.node_name {
            self.set_node(NodeInfo {
                name: self.node_name.clone(),
                ..NodeInfo::default()
            });
        }
    }

    /// The current state and the services changed since the last call
    /// (draining the change set). Only changed services are rebuilt (all
    /// at once when they are more than a quarter of those held); the rest
    /// of the snapshot shares its data with the previous one.
    pub fn snapshot(&mut self) -> (Snapshot, ChangeSet) {
        let changes = std::mem::take(&mut self.changes);
        self.counts.snapshot_taken();
        if changes.services.len() > self.current.services.len() / 4 {
            self.rebuild_snapshot();
        } else {
            for name in &changes.services {
                self.refresh(name);
            }
        }
        self.current.node.clone_from(&self.node);
        if changes.service_cidrs_changed {
            self.current.service_cidrs = self.service_cidrs.all();
        }
        (self.current.clone(), changes)
    }

    /// The copy of `name` already held, if any, so that every index
    /// shares one allocation per service.
    fn shared_name(&self, name: ServiceName) -> ServiceName {
        let held = self.services.get_key_value(&name).map(|(k, _)| k);
        let held = held.or_else(|| self.slices.get_key_value(&name).map(|(k, _)| k));
        held.cloned().unwrap_or(name)
    }

    /// The slice's owner and kept form, as [`slice_info`] reads it.
    fn read_slice(&mut self, slice: &EndpointSlice) -> (Option<(ServiceName, SliceInfo)>, Vec<Warning>) {
        let node_names = &mut self.node_names;
        let mut reader = SliceReader {
            family: self.family,
            node_name: &self.node_name,
            intern: |n: &str| node_names.intern(n),
        };
        slice_info(slice, &mut reader)
    }

    /// Stores the ports of `name` (empty: the service is gone or ignored),
    /// marking it changed if they differ from what was held. Unchanged
    /// ports keep their shared `Arc`. A change counts as one Service change.
    fn set_service(&mut self, name: ServiceName, ports: Vec<ServicePort>) {
        let old = self.services.get(&name).map(|p| &**p).unwrap_or(&[]);
        if old.len() == ports.len() && old.iter().zip(&ports).all(|(a, b)| **a == *b) {
            return;
        }
        if ports.is_empty() {
            self.services.remove(&name);
        } else {
            let shared = ports
                .into_iter()
                .map(|p| {
                    old.iter()
                        .find(|o| ***o == p)
                        .cloned()
                        .unwrap_or_else(|| Arc::new(p))
                })
                .collect();
            self.services.insert(name.clone(), shared);
        }
        self.counts.service_changed(&name);
        self.changes.services.insert(name);
    }

    /// Stores (or, with `None`, forgets) one slice, marking its old and new
    /// owner services changed if anything differs; a change counts as one
    /// EndpointSlice change.
    fn set_slice(&mut self, key: SliceKey, new: Option<(ServiceName, SliceInfo)>) {
        let changed = self.store_slice(key, new);
        if changed {
            self.counts.slice_changed();
        }
    }

    /// [`FamilyTracker::set_slice`]'s storing; whether anything changed.
    fn store_slice(&mut self, key: SliceKey, new: Option<(ServiceName, SliceInfo)>) -> bool {
        let mut changed = false;
        let old_owner = self.slice_owners.get(&key).cloned();
        if let Some(old_owner) =
            old_owner.filter(|o| new.as_ref().is_none_or(|(owner, _)| owner != o))
        {
            self.forget_slice(&old_owner, &key.name);
            self.changes.services.insert(old_owner);
            changed = true;
        }
        let Some((owner, mut info)) = new else {
            self.slice_owners.remove(&key);
            return changed;
        };
        let owner = self.shared_name(owner);
        let of_owner = self.slices.entry(owner.clone()).or_default();
        match of_owner.get(&key.name) {
            Some(held) if *held == info => {}
            held => {
                if let Some(held) = held {
                    info.reuse_lists(held);
                }
                of_owner.insert(&key.name, info);
                self.changes.services.insert(owner.clone());
                changed = true;
            }
        }
        self.slice_owners.insert(key, owner);
        changed
    }

    fn forget_slice(&mut self, owner: &ServiceName, slice_name: &str) {
        if let Some(of_owner) = self.slices.get_mut(owner) {
            of_owner.remove(slice_name);
            if of_owner.is_empty() {
                self.slices.remove(owner);
            }
        }
    }

    /// Stores this node's info; addresses, pod CIDRs or a zone that differ
    /// mark the node changed (the zone picks topology-hinted endpoints of
    /// every service).
    fn set_node(&mut self, info: NodeInfo) {
        if info.addresses != self.node.addresses || info.pod_cidrs != self.node.pod_cidrs || info.zone != self.node.zone {
            self.changes.node_changed = true;
        }
        self.node = info;
    }
}
