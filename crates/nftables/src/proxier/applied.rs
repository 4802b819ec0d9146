//! What nftables mode's proxier keeps of its last successful sync so that
//! a partial sync renders and compares only the services that changed:
//! the snapshot and settings it rendered (rendering is pure, so the
//! objects it applied for any service are that service rendered again
//! from them; the snapshot shares its data with the tracker's), how many
//! services hold each shared-set key, and the table's counts.

use crate::TableContents;
use crate::render::{
    EndpointSlots, RenderContext, Ruleset, SHARED_SETS, Services, holds_slot, is_interchangeable,
    shared_key,
};
use model::{ServicePortName, Snapshot};
use plan::NoLocalEndpoints;
use std::collections::{HashMap, HashSet};

/// The last successful sync.
#[derive(Debug)]
pub(crate) struct Applied {
    /// The snapshot it rendered.
    pub(crate) snapshot: Snapshot,
    /// The settings it rendered with.
    pub(crate) ctx: RenderContext,
    /// Services per shared-set key.
    pub(crate) owners: Owners,
    /// The table's counts.
    pub(crate) counts: Counts,
    /// The no-local-endpoints counts of every service.
    pub(crate) no_local: NoLocalEndpoints,
    /// How many shared endpoint maps the table declares.
    pub(crate) maps: u32,
}

impl Applied {
    /// Frees the slots of the ports of `services` that `now` does not
    /// render with a slot (gone, or DNATed straight from `services`): call
    /// before the kept snapshot becomes `now`.
    pub(crate) fn release_slots_gone(
        &self,
        slots: &mut EndpointSlots,
        now: &Snapshot,
        ctx: &RenderContext,
        services: Services<'_>,
    ) {
        let held = |name: &ServicePortName| holds_slot(now, ctx, name);
        let Services::Only(names) = services else {
            return slots.retain(held);
        };
        for service in names {
            let ports = model::ports_of(&self.snapshot.services, service)
                .chain(model::ports_of(&now.services, service));
            for (name, _) in ports {
                if !held(name) {
                    slots.release(name);
                }
            }
        }
    }
}

/// How many services put each shared-set key ([`shared_key`]) in. Most
/// keys have one owner: those are a set of keys alone, the others' counts
/// a map beside it (at 100,000 services × 1 endpoint, 300,000 keys: some
/// 4.7 MiB of hash table instead of 8.9 MiB with a count per key, by the
/// tables' layout).
#[derive(Debug, Default)]
pub(crate) struct Owners {
    /// Keys exactly one service holds.
    single: HashSet<u64>,
    /// Keys two or more services hold, with their count.
    shared: HashMap<u64, u32>,
}

impl Owners {
    /// Counts `keys` (one per service holding a key).
    pub(crate) fn of(keys: &[u64]) -> Self {
        let mut owners = Self {
            single: HashSet::with_capacity(keys.len()),
            shared: HashMap::new(),
        };
        owners.add(keys);
        owners
    }

    /// Services now also hold `keys`.
    pub(crate) fn add(&mut self, keys: &[u64]) {
        for &key in keys {
            if let Some(n) = self.shared.get_mut(&key) {
                *n += 1;
            } else if self.single.remove(&key) {
                self.shared.insert(key, 2);
            } else {
                self.single.insert(key);
            }
        }
    }

    /// Services no longer hold `keys`.
    pub(crate) fn remove(&mut self, keys: &[u64]) {
        for key in keys {
            match self.shared.get_mut(key) {
                Some(n) if *n > 2 => *n -= 1,
                Some(_) => {
                    self.shared.remove(key);
                    self.single.insert(*key);
                }
                None => {
                    self.single.remove(key);
                }
            }
        }
    }

    fn count(&self, key: u64) -> u32 {
        match self.shared.get(&key) {
            Some(n) => *n,
            None => u32::from(self.single.contains(&key)),
        }
    }
}

/// A shared-set element that services outside a partial sync also hold
/// with a content of their own (e.g. two services naming one external IP
/// and port): which one the table holds depends on every service, so only
/// a full sync settles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeldElsewhere;

/// Removes from `old` and `new` (the changed services rendered from the
/// last snapshot and from this one) every shared-set element that a
/// service outside them also holds, by `owners` (every service of the
/// last sync) less `old_keys` (what `old`'s services held): such an
/// element stays in the table as it is. Fails when such an element is not
/// the same whichever service gives it.
pub(crate) fn drop_held_elsewhere(
    old: &mut Ruleset,
    new: &mut Ruleset,
    owners: &Owners,
    old_keys: &[u64],
) -> Result<(), HeldElsewhere> {
    let mut changed = HashMap::<u64, u32>::with_capacity(old_keys.len());
    for key in old_keys {
        *changed.entry(*key).or_default() += 1;
    }
    let elsewhere = |key: u64| owners.count(key) > changed.get(&key).copied().unwrap_or(0);
    for ruleset in [old, new] {
        for named in &mut ruleset.sets {
            let set = named.set.name.as_str();
            if !SHARED_SETS.contains(&set) {
                continue;
            }
            let interchangeable = is_interchangeable(set);
            let mut conflict = false;
            named.elements.retain(|e| {
                let held = elsewhere(shared_key(set, &e.key));
                conflict |= held && !interchangeable;
                !held
            });
            if conflict {
                return Err(HeldElsewhere);
            }
        }
    }
    Ok(())
}

/// A table's counts: chains, rules, named sets and their elements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) chains: usize,
    pub(crate) rules: usize,
    pub(crate) sets: usize,
    pub(crate) elements: usize,
}

impl Counts {
    /// The counts of `contents`.
    pub(crate) fn of(contents: &TableContents) -> Self {
        let named = |s: &&crate::Set| !s.flags.contains(crate::SetFlags::ANONYMOUS);
        Self {
            chains: contents.chains.len(),
            rules: contents.rules.len(),
            sets: contents.sets.iter().filter(named).count(),
            elements: contents
                .sets
                .iter()
                .filter(named)
                .filter_map(|s| contents.elements.get(&TableContents::set_key(s)))
                .map(Vec::len)
                .sum(),
        }
    }

    /// These counts of a skeleton with a piece of its table added: the
    /// piece's rules, and the elements it gives to sets it does not
    /// declare (the skeleton's streamed sets).
    pub(crate) fn with_piece(mut self, piece: &TableContents) -> Self {
        let declared = |key: &String| piece.sets.iter().any(|s| TableContents::set_key(s) == *key);
        self.rules += piece.rules.len();
        self.elements += piece
            .elements
            .iter()
            .filter(|(key, _)| !declared(key))
            .map(|(_, elements)| elements.len())
            .sum::<usize>();
        self
    }

    /// These counts with the part counted as `old` replaced by `new`.
    pub(crate) fn replaced(self, old: Self, new: Self) -> Self {
        let swap = |all: usize, old: usize, new: usize| (all + new).saturating_sub(old);
        Self {
            chains: swap(self.chains, old.chains, new.chains),
            rules: swap(self.rules, old.rules, new.rules),
            sets: swap(self.sets, old.sets, new.sets),
            elements: swap(self.elements, old.elements, new.elements),
        }
    }
}

/// `all` with the part `old` replaced by `new`.
pub(crate) fn replaced_no_local(
    all: NoLocalEndpoints,
    old: NoLocalEndpoints,
    new: NoLocalEndpoints,
) -> NoLocalEndpoints {
    NoLocalEndpoints {
        internal: (all.internal + new.internal).saturating_sub(old.internal),
        external: (all.external + new.external).saturating_sub(old.external),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::render::NamedSet;
    use crate::{DataType, Element, Family, Set, Table, Value, Verdict};
    use std::net::Ipv4Addr;

    fn ip(last: u8) -> Value {
        Value::Ipv4(Ipv4Addr::new(10, 0, 0, last))
    }

    /// A ruleset whose `set` holds one element per `ips` (a verdict-map
    /// element with a comment when `commented`).
    fn with(set: &str, ips: &[u8], commented: bool) -> Ruleset {
        let elements = ips
            .iter()
            .map(|n| match commented {
                true => Element::verdict(vec![ip(*n)], Verdict::Drop).with_comment("ns/a"),
                false => Element::new(vec![ip(*n)]),
            })
            .collect();
        Ruleset {
            table: Table::new(Family::Ip, "kube-proxy"),
            sets: vec![NamedSet {
                set: Set::new(set, vec![DataType::Ipv4Addr]),
                elements,
            }],
            chains: Vec::new(),
        }
    }

    fn keys(set: &str, ips: &[u8]) -> Vec<u64> {
        ips.iter().map(|n| shared_key(set, &[ip(*n)])).collect()
    }

    #[test]
    fn a_key_an_unchanged_service_also_holds_stays_untouched() {
        // A (changed: held 1 and 2, now 2 and 3) and B (unchanged: holds 2)
        let held = [keys("cluster-ips", &[1, 2]), keys("cluster-ips", &[2])].concat();
        let owners = Owners::of(&held);
        let mut old = with("cluster-ips", &[1, 2], false);
        let mut new = with("cluster-ips", &[2, 3], false);
        let a = keys("cluster-ips", &[1, 2]);
        drop_held_elsewhere(&mut old, &mut new, &owners, &a).unwrap();
        assert_eq!(
            old.sets[0].elements,
            with("cluster-ips", &[1], false).sets[0].elements
        );
        assert_eq!(
            new.sets[0].elements,
            with("cluster-ips", &[3], false).sets[0].elements
        );
    }

    #[test]
    fn a_map_element_an_unchanged_service_also_gives_asks_for_a_full_sync() {
        let held = [keys("service-ips", &[1]), keys("service-ips", &[1])].concat();
        let (mut old, mut new) = (
            with("service-ips", &[1], true),
            with("service-ips", &[], true),
        );
        let a = keys("service-ips", &[1]);
        let result = drop_held_elsewhere(&mut old, &mut new, &Owners::of(&held), &a);
        assert_eq!(result, Err(HeldElsewhere));
        // held by the changed service only: no conflict, nothing dropped
        let mut old = with("service-ips", &[1], true);
        drop_held_elsewhere(&mut old, &mut new, &Owners::of(&a), &a).unwrap();
        assert_eq!(old.sets[0].elements.len(), 1);
    }

    #[test]
    fn owners_forget_keys_no_service_holds() {
        let mut owners = Owners::of(&keys("cluster-ips", &[1, 1, 2]));
        owners.remove(&keys("cluster-ips", &[1, 2]));
        assert_eq!(owners.count(shared_key("cluster-ips", &[ip(1)])), 1);
        assert_eq!(owners.count(shared_key("cluster-ips", &[ip(2)])), 0);
        assert!(owners.shared.is_empty() && owners.single.len() == 1);
    }

    #[test]
    fn owners_count_as_keys_come_and_go() {
        let key = |n| keys("cluster-ips", &[n]);
        let mut owners = Owners::of(&keys("cluster-ips", &[1, 1, 1, 2]));
        let count = |o: &Owners, n| o.count(shared_key("cluster-ips", &[ip(n)]));
        assert_eq!((count(&owners, 1), count(&owners, 2), count(&owners, 3)), (3, 1, 0));
        owners.add(&key(2));
        owners.add(&key(3));
        assert_eq!((count(&owners, 2), count(&owners, 3)), (2, 1));
        for _ in 0..3 {
            owners.remove(&key(1));
        }
        owners.remove(&key(2));
        owners.remove(&key(9));
        assert_eq!((count(&owners, 1), count(&owners, 2), count(&owners, 9)), (0, 1, 0));
        assert!(owners.shared.is_empty(), "{owners:?}");
    }
}
