//! The cluster's service CIDRs, from ServiceCIDR objects.

use super::FamilyTracker;
use crate::Objects;
use crate::meta::name_of;
use crate::service_cidr::service_cidrs;
use crate::warning::Warning;
use ipnet::IpNet;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use std::collections::{BTreeMap, BTreeSet};

/// The usable CIDRs of each ServiceCIDR object, by name. Kept per object
/// so that deleting one object keeps a CIDR another object also lists.
#[derive(Debug, Default)]
pub(super) struct ServiceCidrs {
    by_object: BTreeMap<String, Vec<IpNet>>,
}

impl ServiceCidrs {
    /// Every object's CIDRs, sorted, without duplicates.
    pub(super) fn all(&self) -> Vec<IpNet> {
        let all: BTreeSet<IpNet> = self.by_object.values().flatten().copied().collect();
        all.into_iter().collect()
    }

    /// Stores (empty: forgets) the CIDRs of object `name`; whether the
    /// union changed.
    fn set(&mut self, name: &str, cidrs: Vec<IpNet>) -> bool {
        let before = self.all();
        if cidrs.is_empty() {
            self.by_object.remove(name);
        } else {
            self.by_object.insert(name.to_string(), cidrs);
        }
        self.all() != before
    }
}

impl FamilyTracker {
    /// A ServiceCIDR was added or updated. Not a Service change: it moves
    /// no change count, but asks for a sync when the service CIDRs of the
    /// tracker's family change.
    pub fn upsert_service_cidr(&mut self, object: &ServiceCIDR) -> Vec<Warning> {
        let (cidrs, warnings) = service_cidrs(object, self.family);
        self.set_service_cidrs(name_of(&object.metadata), cidrs);
        warnings
    }

    /// A ServiceCIDR was deleted.
    pub fn delete_service_cidr(&mut self, object: &ServiceCIDR) {
        self.set_service_cidrs(name_of(&object.metadata), Vec::new());
    }

    /// The service CIDRs of the tracker's family, as the next snapshot
    /// will carry them.
    pub fn service_cidrs(&self) -> Vec<IpNet> {
        self.service_cidrs.all()
    }

    fn set_service_cidrs(&mut self, name: &str, cidrs: Vec<IpNet>) {
        if self.service_cidrs.set(name, cidrs) {
            self.changes.service_cidrs_changed = true;
        }
    }

    /// [`FamilyTracker::replace_all`]'s ServiceCIDRs: the later copy of an
    /// object wins.
    pub(super) fn replace_service_cidrs(&mut self, objects: &Objects, warnings: &mut Vec<Warning>) {
        let mut wanted: BTreeMap<&str, Vec<IpNet>> = BTreeMap::new();
        for object in &objects.service_cidrs {
            let (cidrs, found) = service_cidrs(object, self.family);
            warnings.extend(found);
            wanted.insert(name_of(&object.metadata), cidrs);
        }
        let gone: Vec<String> = self
            .service_cidrs
            .by_object
            .keys()
            .filter(|n| !wanted.contains_key(n.as_str()))
            .cloned()
            .collect();
        for name in gone {
            self.set_service_cidrs(&name, Vec::new());
        }
        for (name, cidrs) in wanted {
            self.set_service_cidrs(name, cidrs);
        }
    }
}
