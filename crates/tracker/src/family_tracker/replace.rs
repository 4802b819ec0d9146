//! Replacing the whole state at once (sources that deliver complete
//! states, like the manifests file).

use super::FamilyTracker;
use crate::Objects;
use crate::meta::name_of;
use crate::node::node_info;
use crate::service::{service_name, service_ports};
use crate::slice::SliceKey;
use crate::warning::Warning;
use model::{NodeInfo, ServiceName, ServicePort};
use std::collections::HashMap;

impl FamilyTracker {
    /// Makes `objects` the whole state: what is no longer there is
    /// deleted, and only services whose proxy-relevant data actually
    /// differs from what was held are marked changed. When an object
    /// appears twice, the later copy wins (as applying the file would).
    pub fn replace_all(&mut self, objects: &crate::Objects) -> Vec<Warning> {
        let mut warnings = Vec::new();
        self.replace_services(objects, &mut warnings);
        self.replace_slices(objects, &mut warnings);
        self.replace_node(objects, &mut warnings);
        self.replace_service_cidrs(objects, &mut warnings);
        self.node_names.prune_unused();
        warnings
    }

    fn replace_services(&mut self, objects: &Objects, warnings: &mut Vec<Warning>) {
        let mut wanted: HashMap<ServiceName, Vec<ServicePort>> = HashMap::new();
        for svc in &objects.services {
            let name = self.shared_name(service_name(svc));
            let (ports, found) = service_ports(svc, &name, self.family);
            warnings.extend(found);
            wanted.insert(name, ports);
        }
        let gone: Vec<ServiceName> = self
            .services
            .keys()
            .filter(|n| !wanted.contains_key(*n))
            .cloned()
            .collect();
        for name in gone {
            self.set_service(name, Vec::new());
        }
        for (name, ports) in wanted {
            self.set_service(name, ports);
        }
    }

    fn replace_slices(&mut self, objects: &Objects, warnings: &mut Vec<Warning>) {
        let mut wanted = HashMap::new();
        for slice in &objects.endpoint_slices {
            let (info, found) = self.read_slice(slice);
            warnings.extend(found);
            wanted.insert(SliceKey::of(slice), info);
        }
        let gone: Vec<SliceKey> = self
            .slice_owners
            .keys()
            .filter(|k| !wanted.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            self.set_slice(key, None);
        }
        for (key, info) in wanted {
            self.set_slice(key, info);
        }
    }

    fn replace_node(&mut self, objects: &Objects, warnings: &mut Vec<Warning>) {
        let ours = objects
            .nodes
            .iter()
            .rev()
            .find(|n| name_of(&n.metadata) == self.node_name);
        let info = match ours {
            Some(node) => {
                let (info, found) = node_info(node, &self.node_name, self.family);
                warnings.extend(found);
                info
            }
            None => NodeInfo {
                name: self.node_name.clone(),
                ..NodeInfo::default()
            },
        };
        self.set_node(info);
    }
}
