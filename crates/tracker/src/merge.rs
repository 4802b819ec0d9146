//! All EndpointSlices of a service → the endpoint list of one service port.

use crate::slice::SliceInfo;
use model::{Endpoint, ServicePortName};
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::net::IpAddr;
use std::sync::Arc;

/// The endpoints of `port` merged from every slice of its service: slice
/// ports are matched by name and protocol; the same `ip:port` in several
/// slices counts once (the first in slice-name order, unless a later copy
/// is local, as upstream favours local copies); sorted.
pub(crate) fn merge_endpoints(
    slices: &BTreeMap<String, Arc<SliceInfo>>,
    port: &ServicePortName,
    node_name: &str,
) -> Vec<Endpoint> {
    let mut by_addr: BTreeMap<(IpAddr, u16), Endpoint> = BTreeMap::new();
    for slice in slices.values() {
        for sp in slice
            .ports
            .iter()
            .filter(|sp| sp.name == port.port && sp.protocol == port.protocol)
        {
            for ep in &slice.endpoints {
                let node = ep.node_name.as_deref();
                let endpoint = Endpoint {
                    ip: ep.ip,
                    port: sp.port,
                    node_name: node.map(str::to_string),
                    is_local: !node_name.is_empty() && node == Some(node_name),
                    ready: ep.ready,
                    serving: ep.serving,
                    terminating: ep.terminating,
                };
                match by_addr.entry((ep.ip, sp.port)) {
                    Entry::Vacant(v) => {
                        v.insert(endpoint);
                    }
                    Entry::Occupied(mut o) if endpoint.is_local && !o.get().is_local => {
                        o.insert(endpoint);
                    }
                    Entry::Occupied(_) => {}
                }
            }
        }
    }
    by_addr.into_values().collect()
}
