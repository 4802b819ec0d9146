//! Rebuilding the snapshot entries of one changed service.

use super::FamilyTracker;
use crate::merge::merge_endpoints;
use model::{ServiceName, ServicePortName};
use std::collections::BTreeMap;

impl FamilyTracker {
    /// Replaces the snapshot entries of `name` with its current ports and
    /// merged endpoints. Endpoint lists equal to the previous ones keep
    /// their `Arc`, so consumers can compare by pointer.
    pub(super) fn refresh(&mut self, name: &ServiceName) {
        remove_service(&mut self.current.services, name);
        let old_endpoints = remove_service(&mut self.current.endpoints, name);
        let Some(ports) = self.services.get(name) else {
            return;
        };
        let slices = self.slices.get(name);
        for port in ports {
            self.current
                .services
                .insert(port.name.clone(), port.clone());
            let Some(merged) = slices.and_then(|s| merge_endpoints(s, &port.name)) else {
                continue;
            };
            let shared = match old_endpoints.get(&port.name) {
                Some(old) if *old == merged => old.clone(),
                _ => merged,
            };
            self.current.endpoints.insert(port.name.clone(), shared);
        }
    }
}

/// Rebuilds `map` from its sorted entries: a map filled in key order
/// leaves its nodes about half full; built at once, they are full.
fn compact<V>(map: &mut BTreeMap<ServicePortName, V>) {
    *map = std::mem::take(map).into_iter().collect();
}

impl FamilyTracker {
    /// Packs the snapshot's maps after a large batch of changes, so they
    /// and every snapshot cloned from them take about half the space.
    pub(super) fn compact_snapshot(&mut self) {
        compact(&mut self.current.services);
        compact(&mut self.current.endpoints);
    }
}

/// Removes (and returns) every entry of `map` belonging to `name`: the
/// keys from `name`'s smallest port name up to the first key of another
/// service.
fn remove_service<V>(
    map: &mut BTreeMap<ServicePortName, V>,
    name: &ServiceName,
) -> BTreeMap<ServicePortName, V> {
    let keys: Vec<ServicePortName> = model::ports_of(map, name).map(|(k, _)| k.clone()).collect();
    keys.into_iter()
        .filter_map(|k| map.remove_entry(&k))
        .collect()
}
