//! Every service rendered for a full sync without holding every chain's
//! rules at once. A first pass renders each service port and keeps what
//! the table's skeleton needs (the fixed chains with their rules, every
//! port chain as a header, the shared sets whole); the pieces then
//! render each port's chains again, one port at a time, as the syncer
//! takes them. Twice the rendering's CPU for a smaller peak: at 10,000
//! services × 10 endpoints the port chains' statements are some 5 MiB
//! that a cold start or a periodic full sync no longer holds beside the
//! transaction it builds.

use super::endpoint_slots::{EndpointSlots, Slots};
use super::ruleset::{ChainRules, pieces_of};
use super::selected::{Selected, render_headers};
use super::shared::SharedSets;
use super::{RenderContext, service_port};
use crate::TableContents;
use model::Snapshot;

/// A lean rendering of every service of a snapshot.
pub struct Lean<'a> {
    /// The first pass: the fixed part, the shared sets whole, each port
    /// chain without its rules.
    pub selected: Selected,
    /// How many of its chains (the last) are port chains.
    port_chains: usize,
    snapshot: &'a Snapshot,
    ctx: &'a RenderContext,
    slots: &'a EndpointSlots,
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
        slots: slots.pairs,
    }
}

impl<'a> Lean<'a> {
    /// What [`super::Ruleset::into_pieces`] of the whole rendering gives:
    /// the skeleton, then one piece per chain in order, each port's
    /// chains rendered again when its first piece is taken.
    pub fn into_pieces(self) -> (TableContents, impl Iterator<Item = TableContents> + 'a) {
        let Lean {
            selected,
            port_chains,
            snapshot,
            ctx,
            slots,
        } = self;
        let (skeleton, table, mut chains) = selected.rendered.ruleset.into_skeleton();
        chains.truncate(chains.len().saturating_sub(port_chains));
        (
            skeleton,
            pieces_of(
                table,
                chains
                    .into_iter()
                    .chain(render_port_chains(snapshot, ctx, slots)),
            ),
        )
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
