//! Endpoint lists: one slice port's, and all the slices of a service
//! merged into the list of one service port.

use crate::slices::ServiceSlices;
use model::{Endpoint, ServicePortName};
use std::sync::Arc;

/// The endpoints of `port` merged from every slice of its service: slice
/// ports are matched by name and protocol; the same `ip:port` in several
/// slices counts once (the first in slice-name order, unless a later copy
/// is local, as upstream favours local copies); sorted. `None` when there
/// are none. A port fed by a single slice port shares that slice's list.
pub(crate) fn merge_endpoints(slices: &ServiceSlices, port: &ServicePortName) -> Option<Arc<Vec<Endpoint>>> {
    let mut lists = slices
        .iter()
        .flat_map(|info| info.ports.iter())
        .filter(|sp| sp.name == port.port && sp.protocol == port.protocol)
        .map(|sp| &sp.endpoints);
    let first = lists.next()?;
    let merged = match lists.next() {
        None => first.clone(),
        Some(second) => {
            let all = first.iter().chain(second.iter()).chain(lists.flat_map(|l| l.iter()));
            Arc::new(canonical(all.cloned().collect()))
        }
    };
    (!merged.is_empty()).then_some(merged)
}

/// `endpoints` sorted by `ip:port`, one per `ip:port`: of several copies,
/// the first local one if there is one, else the first. Applying this to
/// each slice and then to their concatenation gives the same list as
/// applying it once to everything, so slices can keep their own lists.
pub(crate) fn canonical(mut endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    endpoints.sort_by_key(|e| (e.ip, e.port));
    let mut out: Vec<Endpoint> = Vec::with_capacity(endpoints.len());
    for ep in endpoints {
        match out.last_mut() {
            Some(held) if (held.ip, held.port) == (ep.ip, ep.port) => {
                if ep.is_local && !held.is_local {
                    *held = ep;
                }
            }
            _ => out.push(ep),
        }
    }
    out.shrink_to_fit();
    out
}
