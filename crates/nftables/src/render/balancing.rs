//! Balancing: the `service-` chain over cluster-wide endpoints and the
//! `local-` chain over this node's. Without session affinity one rule
//! DNATs through the chain's slot of a shared endpoint map
//! (`numgen random mod 65536 offset K map @service-endpoints-<n>`, see
//! [`super::endpoint_slots`]; upstream: an anonymous map per chain); with
//! it, each endpoint
//! gets an `affinity-` set (sources seen, with the affinity timeout) and
//! an `endpoint-` chain that records the source and DNATs, and the
//! balancing chain first sends known sources back to their endpoint.

use super::RenderContext;
use super::direct::{direct_target, direct_target_of};
use super::endpoint_slots::{EndpointSlots, Slot, slot_elements};
use super::names::EndpointNames;
use super::ruleset::{ChainRules, NamedSet, RuleSpec};
use super::service_port::Port;
use super::shared::SharedSets;
use super::statement::{Stmt, addr_type, saddr};
use crate::{Chain, Set, SetFlags, Verdict};
use model::{Endpoint, ServicePortName};
use plan::PortPlan;
use std::net::IpAddr;

/// Upstream's size of an affinity set.
const AFFINITY_SET_SIZE: u32 = 65535;

/// A port's balancing chains and what they use.
#[derive(Debug, Default)]
pub struct Balancing {
    /// `endpoint-` chains (session affinity only).
    pub endpoint_chains: Vec<ChainRules>,
    /// `affinity-` sets (session affinity only).
    pub affinity_sets: Vec<NamedSet>,
    /// The `service-` chain, if cluster-wide endpoints are used.
    pub service: Option<ChainRules>,
    /// The `local-` chain, if node-local endpoints are used.
    pub local: Option<ChainRules>,
}

/// Renders the port's balancing chains; their endpoints go into the
/// shared endpoint maps of `shared`.
pub fn render_balancing(port: &Port<'_>, shared: &mut SharedSets) -> Balancing {
    let plan = port.plan;
    let mut out = Balancing::default();
    if direct_target(port).is_some() {
        return out;
    }
    if let Some(seconds) = plan.affinity_seconds {
        for ep in &plan.reachable {
            let (set, chain) = endpoint_objects(port, ep, seconds);
            out.affinity_sets.push(set);
            out.endpoint_chains.push(chain);
        }
    }
    if plan.uses_cluster_endpoints {
        out.service = Some(balancing_chain(port, false, &plan.cluster, shared));
    }
    if plan.uses_local_endpoints {
        out.local = Some(balancing_chain(port, true, &plan.local, shared));
    }
    out
}

/// The `local-` chain (`local`) or the `service-` chain, balancing over
/// `endpoints`.
fn balancing_chain(
    port: &Port<'_>,
    local: bool,
    endpoints: &[&Endpoint],
    shared: &mut SharedSets,
) -> ChainRules {
    let name = match local {
        true => &port.names.local,
        false => &port.names.service,
    };
    let mut chain = ChainRules::new(Chain::regular(name));
    if port.plan.affinity_seconds.is_none() {
        let targets = targets(endpoints);
        let family = port.ctx.family;
        let pick = match fill_slot(port.slots, &port.svc().name, local, &targets, shared) {
            Some(slot) => Stmt::DnatNumgenSlot { family, slot },
            // a port without a slot (none given out for it): upstream's
            // anonymous map, which works the same
            None => Stmt::DnatNumgenMap { family, targets },
        };
        chain.push(RuleSpec::new(vec![
            Stmt::L4proto(port.svc().name.protocol),
            pick,
        ]));
        return chain;
    }
    let names: Vec<EndpointNames> = endpoints
        .iter()
        .map(|ep| EndpointNames::new(&port.svc().name, ep))
        .collect();
    for n in &names {
        chain.push(RuleSpec::new(vec![
            Stmt::InSet {
                fields: vec![saddr(port.ctx.family)],
                set: n.affinity_set.clone(),
            },
            Stmt::Verdict(Verdict::Goto(n.chain.clone())),
        ]));
    }
    chain.push(RuleSpec::new(vec![Stmt::NumgenVmap {
        chains: names.into_iter().map(|n| n.chain).collect(),
    }]));
    chain
}

/// What [`render_balancing`] puts into the shared endpoint maps of
/// `shared`, without the chains.
pub fn render_slot_elements(
    ctx: &RenderContext,
    plan: &PortPlan<'_>,
    slots: &EndpointSlots,
    shared: &mut SharedSets,
) {
    if plan.affinity_seconds.is_some() || direct_target_of(ctx, plan).is_some() {
        return;
    }
    let name = &plan.svc.name;
    if plan.uses_cluster_endpoints {
        fill_slot(slots, name, false, &targets(&plan.cluster), shared);
    }
    if plan.uses_local_endpoints {
        fill_slot(slots, name, true, &targets(&plan.local), shared);
    }
}

/// Each endpoint's address and port.
fn targets(endpoints: &[&Endpoint]) -> Vec<(IpAddr, u16)> {
    endpoints.iter().map(|ep| (ep.ip, ep.port)).collect()
}

/// Puts `targets` into the slot of the port's `local-` chain (`local`) or
/// `service-` chain, in the shared endpoint maps of `shared`: the slot,
/// if the port holds one and there are targets.
fn fill_slot(
    slots: &EndpointSlots,
    name: &ServicePortName,
    local: bool,
    targets: &[(IpAddr, u16)],
    shared: &mut SharedSets,
) -> Option<Slot> {
    let slot = slots.slot(name, local)?;
    if targets.is_empty() {
        return None;
    }
    if !shared.without_endpoint_maps {
        shared
            .endpoint_maps
            .entry(slot.map)
            .or_default()
            .extend(slot_elements(slot.offset, targets));
    }
    Some(slot)
}

/// An endpoint's affinity set and chain.
fn endpoint_objects(port: &Port<'_>, ep: &Endpoint, seconds: u32) -> (NamedSet, ChainRules) {
    let names = EndpointNames::new(&port.svc().name, ep);
    let set = Set {
        timeout_ms: Some(u64::from(seconds) * 1000),
        size: Some(AFFINITY_SET_SIZE),
        ..Set::new(
            names.affinity_set.as_str(),
            vec![addr_type(port.ctx.family)],
        )
        .with_flags(SetFlags::DYNAMIC | SetFlags::TIMEOUT)
    };
    let mut chain = ChainRules::new(Chain::regular(names.chain.as_str()));
    chain.push(RuleSpec::new(vec![Stmt::UpdateSaddr {
        family: port.ctx.family,
        set: names.affinity_set,
    }]));
    chain.push(RuleSpec::new(vec![
        Stmt::L4proto(port.svc().name.protocol),
        Stmt::DnatTo(ep.ip, ep.port),
    ]));
    (
        NamedSet {
            set,
            elements: Vec::new(),
        },
        chain,
    )
}
