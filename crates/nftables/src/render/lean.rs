//! Every service rendered for a full sync without holding every chain's
//! rules at once. A first pass renders each service port and keeps what
//! the table's skeleton needs (the fixed chains with their rules, every
//! port chain as a header, which service gives each shared-set key);
//! the pieces then render each port's chains again, one port at a time,
//! as the syncer takes them. Twice the rendering's CPU for a smaller
//! peak: at 10,000 services × 10 endpoints the port chains' statements
//! are some 5 MiB that a cold start or a periodic full sync no longer
//! holds beside the transaction it builds. The shared endpoint maps are declared empty in
//! the skeleton (without an entry in its elements) and their elements
//! follow the chains, one piece per map, rendered only then: at 10,000 ×
//! 10 they are 200,000 elements. The other shared sets and verdict maps
//! (`service-ips`, `service-ips-direct`, `cluster-ips`, …) are declared
//! empty too: the second pass gives their elements in parts among the
//! port chains' pieces ([`super::shared_parts`]), so that a cold start
//! stages them as they come; at 100,000 services × 1 endpoint they are
//! 300,000 elements the first pass no longer holds.

use super::endpoint_slots::{EndpointSlots, PAIRS_PER_MAP, Slots, map_name};
use super::ruleset::pieces_of;
use super::selected::{Selected, render_headers};
use super::shared::SharedSets;
use super::shared_parts::{SharedParts, repeated_keys, sets_in_parts};
use super::{RenderContext, service_port};
use crate::{Table, TableContents};
use model::{ServicePortName, Snapshot};
use std::collections::{BTreeMap, HashSet, VecDeque};

/// A lean rendering of every service of a snapshot.
pub struct Lean<'a> {
    /// The first pass: the fixed part, the shared sets empty, each port
    /// chain without its rules.
    pub selected: Selected,
    /// The shared keys more than one service gives.
    repeated: HashSet<u64>,
    /// How many of its chains (the last) are port chains.
    port_chains: usize,
    snapshot: &'a Snapshot,
    ctx: &'a RenderContext,
    slots: Slots<'a>,
}

/// The first pass over every service of `snapshot`, each with its slots.
pub fn render_lean<'a>(
    snapshot: &'a Snapshot,
    ctx: &'a RenderContext,
    slots: Slots<'a>,
) -> Lean<'a> {
    let (selected, port_chains) = render_headers(snapshot, ctx, slots);
    let repeated = repeated_keys(&selected.shared_keys);
    Lean {
        selected,
        repeated,
        port_chains,
        snapshot,
        ctx,
        slots,
    }
}

impl<'a> Lean<'a> {
    /// What [`super::Ruleset::into_pieces`] of the whole rendering gives:
    /// the skeleton, then one piece per chain in order, each port's
    /// chains rendered again when its first piece is taken; but the
    /// shared sets ([`Lean::sets_in_parts`]) and the shared endpoint maps
    /// have no entry in the skeleton's elements. The shared sets'
    /// elements come in pieces of elements only among the port chains'
    /// (a set's in several, the last piece naming every such set), the
    /// endpoint maps' last, one piece per map.
    /// [`TableContents::from_pieces`] of them is the whole table (its
    /// shared sets' elements in another order).
    pub fn into_pieces(self) -> (TableContents, impl Iterator<Item = TableContents> + 'a) {
        let Lean {
            selected,
            repeated,
            port_chains,
            snapshot,
            ctx,
            slots,
        } = self;
        let (mut skeleton, table, mut chains) = selected.rendered.ruleset.into_skeleton();
        chains.truncate(chains.len().saturating_sub(port_chains));
        for n in 0..slots.maps {
            skeleton.elements.remove(&map_name(n));
        }
        for set in sets_in_parts(ctx) {
            skeleton.elements.remove(&set);
        }
        let maps = render_endpoint_maps(snapshot, ctx, slots, table.clone());
        let shared = SharedParts::new(ctx, table.clone(), repeated);
        let ports = PortPieces {
            ports: snapshot.services.iter().peekable(),
            snapshot,
            ctx,
            slots: slots.pairs,
            table: table.clone(),
            // the endpoint maps' elements come map by map, last
            service: SharedSets::without_endpoint_maps(),
            shared: Some(shared),
            ready: VecDeque::new(),
        };
        (
            skeleton,
            pieces_of(table, chains.into_iter())
                .chain(ports)
                .chain(maps),
        )
    }

    /// The named sets whose elements [`Lean::into_pieces`] gives in
    /// several pieces, compared once all came (see
    /// [`crate::apply::Syncer::sync_full_in_pieces`]).
    pub fn sets_in_parts(&self) -> Vec<String> {
        sets_in_parts(self.ctx)
    }
}

/// Each shared endpoint map's elements as a piece of `table`, map by
/// map, each rendered as taken.
fn render_endpoint_maps<'a>(
    snapshot: &'a Snapshot,
    ctx: &'a RenderContext,
    slots: Slots<'a>,
    table: Table,
) -> impl Iterator<Item = TableContents> + 'a {
    let mut ports = slots.pairs.ports_by_pair().into_iter().peekable();
    (0..slots.maps).map(move |n| {
        let mut shared = SharedSets::default();
        while let Some((_, name)) = ports.next_if(|(pair, _)| pair / PAIRS_PER_MAP == n) {
            render_slot_elements(snapshot, ctx, slots.pairs, name, &mut shared);
        }
        let elements = shared.endpoint_maps.remove(&n).unwrap_or_default();
        TableContents {
            table: table.clone(),
            chains: Vec::new(),
            rules: Vec::new(),
            sets: Vec::new(),
            elements: BTreeMap::from([(map_name(n), elements)]),
        }
    })
}

/// The endpoint maps' elements of port `name` of `snapshot`, into
/// `shared`.
fn render_slot_elements(
    snapshot: &Snapshot,
    ctx: &RenderContext,
    slots: &EndpointSlots,
    name: &ServicePortName,
    shared: &mut SharedSets,
) {
    if let Some(svc) = snapshot.services.get(name) {
        let endpoints = snapshot.endpoints_of(name);
        service_port::render_slot_elements(ctx, svc, endpoints, slots, shared);
    }
}

/// Every service port's chains, rendered port by port as taken, one
/// piece per chain, and among them the shared sets' elements in parts.
struct PortPieces<'a> {
    ports: std::iter::Peekable<
        std::collections::btree_map::Iter<'a, ServicePortName, std::sync::Arc<model::ServicePort>>,
    >,
    snapshot: &'a Snapshot,
    ctx: &'a RenderContext,
    slots: &'a EndpointSlots,
    table: Table,
    /// What the current service's ports gave the shared sets so far.
    service: SharedSets,
    /// `None` once its last piece is taken.
    shared: Option<SharedParts>,
    ready: VecDeque<TableContents>,
}

impl Iterator for PortPieces<'_> {
    type Item = TableContents;

    fn next(&mut self) -> Option<TableContents> {
        loop {
            if let Some(piece) = self.ready.pop_front() {
                return Some(piece);
            }
            let Some((name, svc)) = self.ports.next() else {
                return self.shared.take().map(SharedParts::finish);
            };
            if self.ctx.in_family(svc) {
                let endpoints = self.snapshot.endpoints_of(name);
                let port = service_port::render_service_port(
                    self.ctx,
                    svc,
                    endpoints,
                    self.slots,
                    &mut self.service,
                );
                let chains = pieces_of(self.table.clone(), port.chains.into_iter());
                self.ready.extend(chains);
            }
            let last_of_service = self
                .ports
                .peek()
                .is_none_or(|(n, _)| n.service != name.service);
            if last_of_service && let Some(shared) = self.shared.as_mut() {
                let service =
                    std::mem::replace(&mut self.service, SharedSets::without_endpoint_maps());
                shared.add_service(service);
                self.ready.extend(shared.take_part());
            }
        }
    }
}
