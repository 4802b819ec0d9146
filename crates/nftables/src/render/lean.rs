//! Every service rendered for a full sync without holding every chain's
//! rules at once. A first pass renders each service port and keeps what
//! the table's skeleton needs (the fixed chains with their rules, every
//! port chain as a header, the shared sets whole); the pieces then
//! render each port's chains again, one port at a time, as the syncer
//! takes them. Twice the rendering's CPU for a smaller peak: at 10,000
//! services × 10 endpoints the port chains' statements are some 5 MiB
//! that a cold start or a periodic full sync no longer holds beside the
//! transaction it builds. The shared endpoint maps are declared empty in
//! the skeleton (without an entry in its elements) and their elements
//! follow the chains, one piece per map, rendered only then: at 10,000 ×
//! 10 they are 200,000 elements.

use super::endpoint_slots::{EndpointSlots, PAIRS_PER_MAP, Slots, map_name};
use super::ruleset::{ChainRules, pieces_of};
use super::selected::{Selected, render_headers};
use super::shared::SharedSets;
use super::{RenderContext, service_port};
use crate::{Table, TableContents};
use model::{ServicePortName, Snapshot};
use std::collections::BTreeMap;

/// A lean rendering of every service of a snapshot.
pub struct Lean<'a> {
    /// The first pass: the fixed part, the shared sets whole, each port
    /// chain without its rules.
    pub selected: Selected,
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
    Lean {
        selected,
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
    /// shared endpoint maps have no entry in the skeleton's elements, and
    /// their elements come last, one piece (elements only) per map.
    /// [`TableContents::from_pieces`] of them is the whole table.
    pub fn into_pieces(self) -> (TableContents, impl Iterator<Item = TableContents> + 'a) {
        let Lean {
            selected,
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
        let maps = render_endpoint_maps(snapshot, ctx, slots, table.clone());
        let chains = chains
            .into_iter()
            .chain(render_port_chains(snapshot, ctx, slots.pairs));
        (skeleton, pieces_of(table, chains).chain(maps))
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

/// Every service port's chains, rendered port by port as taken.
fn render_port_chains<'a>(
    snapshot: &'a Snapshot,
    ctx: &'a RenderContext,
    slots: &'a EndpointSlots,
) -> impl Iterator<Item = ChainRules> + 'a {
    snapshot
        .services
        .iter()
        .filter(|(_, svc)| ctx.in_family(svc))
        .flat_map(move |(name, svc)| {
            // the shared sets' elements were taken by the first pass
            let mut shared = SharedSets::default();
            let endpoints = snapshot.endpoints_of(name);
            service_port::render_service_port(ctx, svc, endpoints, slots, &mut shared).chains
        })
}
