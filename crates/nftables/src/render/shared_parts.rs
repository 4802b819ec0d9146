//! The shared sets' and verdict maps' elements of a lean rendering
//! ([`super::lean`]) in parts, service by service as the second pass
//! renders them, instead of whole in the skeleton: at 100,000 services ×
//! 1 endpoint they are some 300,000 elements (`service-ips-direct`,
//! `cluster-ips`, `hairpin-connections`) a cold start would otherwise
//! hold beside the tracker from the first pass to the last transaction.
//!
//! A set holds a key once, and the skeleton of [`super::render`] keeps
//! the first service's element of each key (`first_per_key`, `unique`).
//! The parts keep the same elements without remembering every key: a
//! key is given by more than one service only if its
//! [`super::shared_key`] appears more than once among the first pass's
//! `shared_keys` (each service's keys once); only such keys are
//! remembered, exactly, and a service's own repeats are removed within
//! the service. The elements come in service order; `cluster-ips` is
//! not in address order as the skeleton's is (a set has no order).

use super::RenderContext;
use super::names::{SERVICE_IPS, SERVICE_IPS_DIRECT};
use super::shared::{LISTS, SharedSets, shared_key};
use crate::{Element, ElementData, Table, TableContents, Value};
use std::collections::{BTreeMap, HashSet};

/// Elements in one part at least before it is handed on (the applier
/// cuts its own parts; this bounds what is held here).
const PART_ELEMENTS: usize = 4_000;

/// The shared sets a skeleton of `ctx` declares whose elements come in
/// parts: the sets the service ports fill.
pub fn sets_in_parts(ctx: &RenderContext) -> Vec<String> {
    let mut sets: Vec<String> = LISTS.iter().map(|s| s.to_string()).collect();
    if ctx.direct_dispatch {
        sets.push(SERVICE_IPS_DIRECT.into());
    }
    sets
}

/// The hashes among `shared_keys` (a first pass's, see
/// [`super::Selected::shared_keys`]) that appear more than once: the keys
/// two services may both give.
pub fn repeated_keys(shared_keys: &[u64]) -> HashSet<u64> {
    let mut sorted = shared_keys.to_vec();
    sorted.sort_unstable();
    sorted
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect()
}

/// The elements rendered so far and not yet handed on.
pub(super) struct SharedParts {
    table: Table,
    direct_dispatch: bool,
    /// Keys more than one service gives ([`repeated_keys`]).
    repeated: HashSet<u64>,
    /// Those of them given already, by list.
    seen: HashSet<(usize, Vec<Value>)>,
    lists: [Vec<Element>; 7],
    held: usize,
}

impl SharedParts {
    pub(super) fn new(ctx: &RenderContext, table: Table, repeated: HashSet<u64>) -> Self {
        Self {
            table,
            direct_dispatch: ctx.direct_dispatch,
            repeated,
            seen: HashSet::new(),
            lists: Default::default(),
            held: 0,
        }
    }

    /// Adds the elements one service's ports gave (`endpoint_maps`
    /// ignored), each key not given before.
    pub(super) fn add_service(&mut self, shared: SharedSets) {
        for (list, elements) in shared.into_lists().into_iter().enumerate() {
            // a service's own repeats (an externalIP listed twice)
            let own: Vec<bool> = match elements.len() {
                0 | 1 => vec![true; elements.len()],
                n => {
                    let mut keys = HashSet::with_capacity(n);
                    elements
                        .iter()
                        .map(|e| keys.insert(e.key.as_slice()))
                        .collect()
                }
            };
            for (e, own) in elements.into_iter().zip(own) {
                if own && self.first_of_key(list, &e.key) {
                    self.lists[list].push(e);
                    self.held += 1;
                }
            }
        }
    }

    /// Whether no earlier service gave `key` to list `list`.
    fn first_of_key(&mut self, list: usize, key: &[Value]) -> bool {
        if self.repeated.is_empty() || !self.repeated.contains(&shared_key(LISTS[list], key)) {
            return true;
        }
        self.seen.insert((list, key.to_vec()))
    }

    /// The elements held, as a piece, once there are enough of them.
    pub(super) fn take_part(&mut self) -> Option<TableContents> {
        (self.held >= PART_ELEMENTS).then(|| self.piece(false))
    }

    /// The elements left, as a piece naming every set of
    /// [`sets_in_parts`] (with no element, a set emptied).
    pub(super) fn finish(mut self) -> TableContents {
        self.piece(true)
    }

    fn piece(&mut self, every_set: bool) -> TableContents {
        self.held = 0;
        let mut elements = BTreeMap::new();
        for (list, name) in LISTS.iter().enumerate() {
            let mut given = std::mem::take(&mut self.lists[list]);
            if *name == SERVICE_IPS {
                let (direct, chained): (Vec<Element>, Vec<Element>) = given
                    .into_iter()
                    .partition(|e| matches!(e.data, Some(ElementData::Values(_))));
                if self.direct_dispatch && (every_set || !direct.is_empty()) {
                    elements.insert(SERVICE_IPS_DIRECT.to_string(), direct);
                }
                given = chained;
            }
            if every_set || !given.is_empty() {
                elements.insert(name.to_string(), given);
            }
        }
        TableContents {
            table: self.table.clone(),
            chains: Vec::new(),
            rules: Vec::new(),
            sets: Vec::new(),
            elements,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keys_of_more_than_one_service_are_repeated() {
        let repeated = repeated_keys(&[5, 1, 3, 5, 2, 3, 3]);
        assert_eq!(repeated, HashSet::from([3, 5]));
        assert!(repeated_keys(&[1, 2, 3]).is_empty());
    }
}
