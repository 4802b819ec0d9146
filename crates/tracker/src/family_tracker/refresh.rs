//! Rebuilding the snapshot entries of one changed service, or of every
//! service at once after a large batch of changes.

use super::FamilyTracker;
use crate::merge::merge_endpoints;
use model::{ServiceName, ServicePortName};
use std::collections::BTreeMap;
use std::sync::Arc;

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

impl FamilyTracker {
    /// Builds the snapshot's maps anew from every tracked service, for a
    /// large batch of changes (the first read above all): the entries are
    /// sorted once in a vector and each map is built from them at once
    /// (full nodes, no search per entry), where refreshing 100,000
    /// services one by one searched, removed and inserted in both maps
    /// and cost more than twice as much at twice the services. Endpoint
    /// lists equal to the previous ones keep their `Arc`, as in
    /// [`FamilyTracker::refresh`].
    pub(super) fn rebuild_snapshot(&mut self) {
        let mut services = Vec::with_capacity(self.services.len());
        let mut endpoints = Vec::with_capacity(self.services.len());
        for (name, ports) in &self.services {
            let slices = self.slices.get(name);
            for port in ports {
                services.push((port.name.clone(), Arc::clone(port)));
                if let Some(merged) = slices.and_then(|s| merge_endpoints(s, &port.name)) {
                    endpoints.push((port.name.clone(), merged));
                }
            }
        }
        model::sort_by_port_name(&mut services);
        model::sort_by_port_name(&mut endpoints);
        keep_equal_lists(&mut endpoints, &self.current.endpoints);
        self.current.services = services.into_iter().collect();
        self.current.endpoints = endpoints.into_iter().collect();
    }
}

/// Gives each sorted entry of `new` whose list equals the one `old` holds
/// under its name that `Arc`, walking both in order.
fn keep_equal_lists<V: PartialEq>(
    new: &mut [(ServicePortName, Arc<V>)],
    old: &BTreeMap<ServicePortName, Arc<V>>,
) {
    let mut old = old.iter().peekable();
    for (name, list) in new.iter_mut() {
        while old.next_if(|(held, _)| *held < name).is_some() {}
        if let Some((_, held)) = old.next_if(|(held, _)| *held == name)
            && **held == **list
        {
            *list = Arc::clone(held);
        }
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
