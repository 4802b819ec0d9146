//! Rendering some services only, for partial syncs: the fixed part of the
//! table (always whole: it is small) and the chains, sets and shared-set
//! elements of the services picked, with the settings derived from the
//! whole snapshot. With every service picked, [`super::render`]'s table.

use super::endpoint_slots::{EndpointSlots, Slots};
use super::shared::{Marks, SharedSets};
use super::{RenderContext, Rendered, service_port, skeleton};
use model::{ServiceName, ServicePort, ServicePortName, Snapshot};
use plan::NoLocalEndpoints;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// The services a rendering holds.
#[derive(Debug, Clone, Copy)]
pub enum Services<'a> {
    /// Every service of the snapshot.
    All,
    /// These (a name the snapshot does not hold renders nothing).
    Only(&'a BTreeSet<ServiceName>),
}

/// A rendering of some services.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// The fixed part and the services' objects; the shared sets hold
    /// the services' elements only (the first of each key, in service
    /// order, as [`super::render`]).
    pub rendered: Rendered,
    /// Per service rendered, the [`super::shared_key`] of each key it
    /// puts into a shared set, once per service: a key two services give
    /// appears twice.
    pub shared_keys: Vec<u64>,
}

/// The table's fixed part and the objects of `services` of `snapshot`,
/// with `ctx` (derived from the whole snapshot) and the balancing chains'
/// `slots`.
pub fn render_services(
    snapshot: &Snapshot,
    ctx: &RenderContext,
    services: Services<'_>,
    slots: Slots<'_>,
) -> Selected {
    let mut out = Collected::new(slots);
    out.collect(snapshot, ctx, services);
    out.finish(ctx)
}

/// [`render_services`] of every service, each port's chains kept as
/// headers only (their rules dropped as soon as rendered) and the shared
/// sets and endpoint maps empty (each service's shared elements dropped
/// once its keys are noted): for [`super::lean`]. With the number of port chains (the last chains of
/// the ruleset).
pub(super) fn render_headers(
    snapshot: &Snapshot,
    ctx: &RenderContext,
    slots: Slots<'_>,
) -> (Selected, usize) {
    let headers = |ports| {
        // the endpoint maps' elements come map by map in lean's pieces
        let mut out = Collected {
            headers_only: true,
            shared: SharedSets::without_endpoint_maps(),
            ..Collected::new(slots)
        };
        out.collect_ports(ctx, snapshot, ports);
        out
    };
    let out = match halves(&snapshot.services) {
        None => headers(all_ports(snapshot)),
        Some((first, second)) => std::thread::scope(|scope| {
            let second = scope.spawn(|| headers(second));
            let mut out = headers(first);
            match second.join() {
                Ok(second) => out.append(second),
                Err(panic) => std::panic::resume_unwind(panic),
            }
            out
        }),
    };
    let port_chains = out.port_chains.len();
    (out.finish(ctx), port_chains)
}

/// Ports from which the first pass is shared by two threads: below, a
/// thread costs more than it saves. At 10,000 services × 10 endpoints
/// the pass took 55–120 ms on one thread.
pub(super) const PARALLEL_PORTS: usize = 2_000;

type Ports<'a> = std::collections::btree_map::Range<'a, ServicePortName, Arc<ServicePort>>;

/// Every port of `snapshot`, as [`Ports`].
fn all_ports(snapshot: &Snapshot) -> Ports<'_> {
    snapshot.services.range::<ServicePortName, _>(..)
}

/// The ports cut in two near the middle, between two services; `None`
/// when they are too few to share.
fn halves(
    services: &model::SharedMap<ServicePortName, Arc<ServicePort>>,
) -> Option<(Ports<'_>, Ports<'_>)> {
    if services.len() < PARALLEL_PORTS {
        return None;
    }
    let middle = services.keys().nth(services.len() / 2)?;
    let (cut, _) = model::ports_of(services, &middle.service).next()?;
    Some((services.range(..cut), services.range(cut..)))
}

/// Whether port `name` of `snapshot` is rendered in `ctx`'s family with
/// balancing chains that pick from the shared endpoint maps (see
/// [`service_port::needs_slot`]).
pub fn holds_slot(snapshot: &Snapshot, ctx: &RenderContext, name: &ServicePortName) -> bool {
    snapshot.services.get(name).is_some_and(|svc| port_holds_slot(snapshot, ctx, name, svc))
}

/// [`holds_slot`] of a port already looked up.
fn port_holds_slot(
    snapshot: &Snapshot,
    ctx: &RenderContext,
    name: &ServicePortName,
    svc: &ServicePort,
) -> bool {
    ctx.in_family(svc) && service_port::needs_slot(ctx, svc, snapshot.endpoints_of(name))
}

/// Gives every port of `services` of `snapshot` rendered in `ctx`'s
/// family that [`holds_slot`] its slots; returns those ports (each
/// planned once here: asking [`holds_slot`] of every slot afterwards
/// looks each port up by name, 58 ms at 10,000 services × 10 endpoints).
pub fn allocate_slots(
    slots: &mut EndpointSlots,
    snapshot: &Snapshot,
    ctx: &RenderContext,
    services: Services<'_>,
) -> HashSet<ServicePortName> {
    let mut holding = HashSet::new();
    let mut give = |name: &ServicePortName, svc: &Arc<ServicePort>| {
        if port_holds_slot(snapshot, ctx, name, svc) {
            slots.allocate(name);
            holding.insert(name.clone());
        }
    };
    match services {
        Services::All => snapshot.services.iter().for_each(|(n, s)| give(n, s)),
        Services::Only(names) => {
            for service in names {
                model::ports_of(&snapshot.services, service).for_each(|(n, s)| give(n, s));
            }
        }
    }
    holding
}

/// Slots for every port of `snapshot` rendered in `ctx`'s family, given
/// in order: what a proxy starting on that state holds.
pub fn slots_in_order(snapshot: &Snapshot, ctx: &RenderContext) -> EndpointSlots {
    let mut slots = EndpointSlots::default();
    allocate_slots(&mut slots, snapshot, ctx, Services::All);
    slots
}

/// What the rendered ports gave so far.
struct Collected<'a> {
    slots: Slots<'a>,
    shared: SharedSets,
    marks: Marks,
    port_chains: Vec<super::ChainRules>,
    affinity_sets: Vec<super::NamedSet>,
    no_local_endpoints: NoLocalEndpoints,
    shared_keys: Vec<u64>,
    /// Keep each port chain without its rules.
    headers_only: bool,
}

impl<'a> Collected<'a> {
    fn new(slots: Slots<'a>) -> Self {
        Self {
            slots,
            shared: SharedSets::default(),
            marks: Marks::default(),
            port_chains: Vec::new(),
            affinity_sets: Vec::new(),
            no_local_endpoints: NoLocalEndpoints::default(),
            shared_keys: Vec::new(),
            headers_only: false,
        }
    }

    fn collect(&mut self, snapshot: &Snapshot, ctx: &RenderContext, services: Services<'_>) {
        match services {
            Services::All => self.collect_ports(ctx, snapshot, all_ports(snapshot)),
            Services::Only(names) => {
                for service in names {
                    for (name, svc) in model::ports_of(&snapshot.services, service) {
                        self.port(ctx, snapshot, name, svc);
                    }
                    self.end_service();
                }
            }
        }
    }

    /// Renders `ports`, whole services in order.
    fn collect_ports(&mut self, ctx: &RenderContext, snapshot: &Snapshot, ports: Ports<'_>) {
        let mut ports = ports.peekable();
        while let Some((name, svc)) = ports.next() {
            self.port(ctx, snapshot, name, svc);
            let last_of_service = ports.peek().is_none_or(|(n, _)| n.service != name.service);
            if last_of_service {
                self.end_service();
            }
        }
    }

    /// Adds what `later` (the services after ours) gave; for headers
    /// only, whose shared sets are emptied after each service.
    fn append(&mut self, later: Collected<'_>) {
        self.port_chains.extend(later.port_chains);
        self.affinity_sets.extend(later.affinity_sets);
        self.no_local_endpoints += later.no_local_endpoints;
        self.shared_keys.extend(later.shared_keys);
    }

    fn port(
        &mut self,
        ctx: &RenderContext,
        snapshot: &Snapshot,
        name: &ServicePortName,
        svc: &Arc<ServicePort>,
    ) {
        if !ctx.in_family(svc) {
            return;
        }
        let port = service_port::render_service_port(
            ctx,
            svc,
            snapshot.endpoints_of(name),
            self.slots.pairs,
            &mut self.shared,
        );
        self.no_local_endpoints += port.no_local_endpoints;
        match self.headers_only {
            true => {
                self.port_chains.extend(
                    port.chains
                        .into_iter()
                        .map(|c| super::ChainRules::new(c.chain)),
                );
            }
            false => self.port_chains.extend(port.chains),
        }
        self.affinity_sets.extend(port.affinity_sets);
    }

    /// The service's ports are rendered: notes its shared keys.
    fn end_service(&mut self) {
        self.shared_keys.extend(self.shared.keys_since(self.marks));
        if self.headers_only {
            // the shared sets' elements come in parts in lean's pieces
            self.shared = SharedSets::without_endpoint_maps();
        }
        self.marks = self.shared.marks();
    }

    fn finish(self, ctx: &RenderContext) -> Selected {
        let mut ruleset = skeleton::render_skeleton(ctx, self.shared, self.slots.maps);
        ruleset.sets.extend(self.affinity_sets);
        ruleset.chains.extend(self.port_chains);
        Selected {
            rendered: Rendered {
                ruleset,
                no_local_endpoints: self.no_local_endpoints,
            },
            shared_keys: self.shared_keys,
        }
    }
}
