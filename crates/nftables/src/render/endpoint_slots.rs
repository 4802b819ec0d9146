//! The shared endpoint maps: how a balancing chain picks its endpoint.
//!
//! Upstream v1.36 gives every balancing chain its own anonymous map
//! (`dnat ip to numgen random mod N map { 0 : a . p, … }`), and the kernel
//! creates, binds and finds sets in time that grows with the number of
//! sets already there: quadratic in the services (minutes of cold start at
//! 50,000). Here every balancing chain has one rule
//! `dnat ip to numgen random mod 65536 offset K map @service-endpoints-<n>`:
//! a slot of 65,536 keys at `K` in one of a few shared interval maps, cut
//! into one range per endpoint. The number of maps grows with the services
//! by [`PAIRS_PER_MAP`] ports per map (each walk the kernel makes over a
//! map's elements or bindings stays short), an endpoint change is an
//! element update of a data map (the kernel validates nothing), and the
//! rule itself changes only when its service port appears or goes.
//!
//! [`EndpointSlots`] keeps the slots across syncs (the rule names its
//! offset, so a port must keep its slot while it exists): each service
//! port holds a pair of slots, its `service-` chain's and its `local-`
//! chain's; a new port takes the lowest free pair; a port gone frees its
//! pair once the sync that removed it has been applied.

use super::statement::{addr_type, value};
use crate::{DataType, Element, Family, Set, SetFlags, TypeOf, Value};
use model::ServicePortName;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;

/// Keys per slot: a balancing chain's `numgen random mod` modulus. Each
/// endpoint's share differs from the others' by at most one key.
pub const SLOT_KEYS: u32 = 1 << 16;

/// Service ports (pairs of slots) per map. Each element added to a map
/// makes the kernel walk the map's bindings (every rule using it), and
/// each rule naming a map walks the table's list of sets: at 10,000
/// services × 10 endpoints 16 per map cost the kernel 0.60–0.77 s against
/// 0.72–0.89 s with 64 and 0.74–1.17 s with 8 (`kprs-bench nftables-shapes
/// --services 10000 --endpoints 10 --shapes interval --shard-size N
/// --elements-after-rules`, four runs each, interleaved).
pub const PAIRS_PER_MAP: u32 = 16;

/// The maps' names: `service-endpoints-<n>`.
pub const ENDPOINT_MAP_PREFIX: &str = "service-endpoints-";

/// Where one balancing chain's endpoints are: a map and the first key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The map's number.
    pub map: u32,
    /// The slot's first key (`offset` of the rule's `numgen`).
    pub offset: u32,
}

impl Slot {
    /// The map's name.
    pub fn map_name(&self) -> String {
        map_name(self.map)
    }
}

/// The name of map `n`.
pub fn map_name(n: u32) -> String {
    format!("{ENDPOINT_MAP_PREFIX}{n}")
}

/// The slot pairs of the service ports, kept across syncs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointSlots {
    pairs: HashMap<ServicePortName, u32>,
    free: BTreeSet<u32>,
    next: u32,
}

impl EndpointSlots {
    /// Gives `name` a pair if it has none.
    pub fn allocate(&mut self, name: &ServicePortName) {
        if self.pairs.contains_key(name) {
            return;
        }
        let pair = match self.free.pop_first() {
            Some(pair) => pair,
            None => {
                self.next += 1;
                self.next - 1
            }
        };
        self.pairs.insert(name.clone(), pair);
    }

    /// Frees `name`'s pair.
    pub fn release(&mut self, name: &ServicePortName) {
        if let Some(pair) = self.pairs.remove(name) {
            self.free.insert(pair);
        }
    }

    /// Frees the pair of every port `keep` says no to.
    pub fn retain(&mut self, mut keep: impl FnMut(&ServicePortName) -> bool) {
        let free = &mut self.free;
        self.pairs.retain(|name, pair| {
            let kept = keep(name);
            if !kept {
                free.insert(*pair);
            }
            kept
        });
    }

    /// The slot of `name`'s `local-` chain (`local`) or `service-` chain.
    pub fn slot(&self, name: &ServicePortName, local: bool) -> Option<Slot> {
        let pair = *self.pairs.get(name)?;
        let index = (pair % PAIRS_PER_MAP) * 2 + u32::from(local);
        Some(Slot {
            map: pair / PAIRS_PER_MAP,
            offset: index * SLOT_KEYS,
        })
    }

    /// Every port holding a pair, in the order of the pairs (so of the
    /// maps).
    pub fn ports_by_pair(&self) -> Vec<(u32, &ServicePortName)> {
        let mut ports: Vec<_> = self
            .pairs
            .iter()
            .map(|(name, pair)| (*pair, name))
            .collect();
        ports.sort_unstable_by_key(|(pair, _)| *pair);
        ports
    }

    /// How many maps the pairs given out so far need.
    pub fn maps(&self) -> u32 {
        self.next.div_ceil(PAIRS_PER_MAP)
    }

    /// How many ports hold a pair.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether no port holds a pair.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// The slots a rendering uses: the ports' pairs and how many maps the
/// table declares (a partial sync renders the last applied state with the
/// number of maps it had).
#[derive(Debug, Clone, Copy)]
pub struct Slots<'a> {
    /// The pairs.
    pub pairs: &'a EndpointSlots,
    /// Maps `service-endpoints-0` up to this (exclusive) are declared.
    pub maps: u32,
}

impl<'a> Slots<'a> {
    /// Every map `pairs` needs.
    pub fn of(pairs: &'a EndpointSlots) -> Self {
        Self {
            pairs,
            maps: pairs.maps(),
        }
    }
}

/// Map `n` of `family`, without elements.
pub fn endpoint_map(family: Family, n: u32) -> Set {
    let mut set = Set::map(
        map_name(n),
        vec![DataType::Integer],
        vec![addr_type(family), DataType::InetService],
    )
    .with_flags(SetFlags::INTERVAL);
    set.type_of = Some(TypeOf::NumgenToDaddrDport {
        modulus: SLOT_KEYS,
        v6: family == Family::Ip6,
    });
    set
}

/// A key of the maps: the number in network order (interval keys compare
/// byte by byte; the rule turns `numgen`'s number into network order).
pub fn slot_key(n: u32) -> Value {
    Value::Integer(u32::from_ne_bytes(n.to_be_bytes()))
}

/// The number a [`slot_key`] holds.
pub fn slot_key_number(v: &Value) -> Option<u32> {
    match v {
        Value::Integer(n) => Some(u32::from_be_bytes(n.to_ne_bytes())),
        _ => None,
    }
}

/// The first key of endpoint `i` of `n` in a slot at `offset`.
fn range_start(offset: u32, i: usize, n: usize) -> u32 {
    let share = (i as u64 * u64::from(SLOT_KEYS)) / n.max(1) as u64;
    offset + u32::try_from(share).unwrap_or(SLOT_KEYS)
}

/// The elements of a slot at `offset` over `targets`: each endpoint's
/// range as its first key with the endpoint, and an end marker at the
/// next range's first key, as `nft` sends `a-b : data`.
pub fn slot_elements(offset: u32, targets: &[(IpAddr, u16)]) -> Vec<Element> {
    let n = targets.len();
    let mut out = Vec::with_capacity(2 * n);
    for (i, (ip, port)) in targets.iter().enumerate() {
        out.push(Element::data(
            vec![slot_key(range_start(offset, i, n))],
            vec![value(*ip), Value::Port(*port)],
        ));
        out.push(Element::interval_end(vec![slot_key(range_start(
            offset,
            i + 1,
            n,
        ))]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Protocol;

    fn port(n: u32) -> ServicePortName {
        ServicePortName::new("ns", &format!("svc{n}"), "p", Protocol::Tcp)
    }

    #[test]
    fn pairs_are_kept_reused_lowest_first_and_spread_over_maps() {
        let mut slots = EndpointSlots::default();
        let ports = 2 * PAIRS_PER_MAP + 2;
        for n in 0..ports {
            slots.allocate(&port(n));
        }
        assert_eq!(slots.maps(), 3);
        assert_eq!(
            slots.slot(&port(0), false),
            Some(Slot { map: 0, offset: 0 })
        );
        assert_eq!(
            slots.slot(&port(0), true),
            Some(Slot {
                map: 0,
                offset: SLOT_KEYS
            })
        );
        assert_eq!(
            slots.slot(&port(PAIRS_PER_MAP + 1), true),
            Some(Slot {
                map: 1,
                offset: 3 * SLOT_KEYS
            })
        );
        slots.allocate(&port(3));
        assert_eq!(
            slots.slot(&port(3), false),
            Some(Slot {
                map: 0,
                offset: 6 * SLOT_KEYS
            })
        );
        slots.retain(|p| *p != port(3) && *p != port(1));
        assert_eq!(slots.slot(&port(3), false), None);
        slots.allocate(&port(500));
        assert_eq!(
            slots.slot(&port(500), false),
            Some(Slot {
                map: 0,
                offset: 2 * SLOT_KEYS
            }),
            "the lowest free pair first"
        );
        assert_eq!(slots.len(), ports as usize - 1);
    }

    #[test]
    fn ranges_tile_the_slot_and_differ_by_at_most_one_key() {
        for n in [1usize, 2, 3, 7, 100, 1000] {
            let offset = 5 * SLOT_KEYS;
            let starts: Vec<u32> = (0..=n).map(|i| range_start(offset, i, n)).collect();
            assert_eq!(starts[0], offset);
            assert_eq!(starts[n], offset + SLOT_KEYS);
            let widths: Vec<u32> = starts.windows(2).map(|w| w[1] - w[0]).collect();
            let (min, max) = (widths.iter().min(), widths.iter().max());
            assert!(
                max.zip(min).is_some_and(|(a, b)| a - b <= 1),
                "n={n}: {widths:?}"
            );
        }
        let targets = [
            (IpAddr::from([10, 0, 0, 1]), 80),
            (IpAddr::from([10, 0, 0, 2]), 80),
        ];
        let elements = slot_elements(SLOT_KEYS, &targets);
        let keys: Vec<(Option<u32>, bool)> = elements
            .iter()
            .map(|e| (slot_key_number(&e.key[0]), e.is_interval_end()))
            .collect();
        assert_eq!(
            keys,
            [
                (Some(65536), false),
                (Some(98304), true),
                (Some(98304), false),
                (Some(131072), true)
            ]
        );
    }
}
