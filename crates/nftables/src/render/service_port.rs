//! One service port: its plan named and rendered, traffic kind by
//! traffic kind, into the shared maps and its own chains.

use super::endpoint_slots::EndpointSlots;
use super::names::{ServiceChains, service_port_comment};
use super::ruleset::{ChainRules, NamedSet};
use super::shared::SharedSets;
use super::statement::{proto_number, value};
use super::{
    RenderContext, balancing, cluster_ip, external_chain, external_ip, hairpin, load_balancer,
    node_port,
};
use crate::{Element, Value, Verdict};
use model::{Endpoint, ServicePort};
use plan::{NoLocalEndpoints, PortPlan, Refusal};
use std::net::IpAddr;

/// What one service port adds besides the shared maps' elements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortOutput {
    /// Its chains: endpoint chains, then `service-`, `local-`,
    /// `external-`, `firewall-` (upstream's creation order).
    pub chains: Vec<ChainRules>,
    /// Its per-endpoint affinity sets (session affinity only).
    pub affinity_sets: Vec<NamedSet>,
    /// Its share of the no-local-endpoints counts.
    pub no_local_endpoints: NoLocalEndpoints,
}

/// A planned service port with its names, as every traffic kind's
/// renderer sees it.
pub struct Port<'a> {
    /// The sync's settings.
    pub ctx: &'a RenderContext,
    /// The shared plan's decisions.
    pub plan: &'a PortPlan<'a>,
    /// Its chain names.
    pub names: ServiceChains,
    /// `ns/name:port`, for element comments.
    pub comment: String,
    /// The balancing chains' slots of the shared endpoint maps.
    pub slots: &'a EndpointSlots,
}

impl Port<'_> {
    /// The service port.
    pub fn svc(&self) -> &ServicePort {
        self.plan.svc
    }

    /// The chain ClusterIP traffic goes to (`local-` with
    /// internalTrafficPolicy Local).
    pub fn internal_chain(&self) -> &str {
        if self.svc().internal_policy_local {
            &self.names.local
        } else {
            &self.names.service
        }
    }

    /// The chain the external chain hands traffic to after its special
    /// cases (`local-` with externalTrafficPolicy Local).
    pub fn external_policy_chain(&self) -> &str {
        if self.plan.external_local {
            &self.names.local
        } else {
            &self.names.service
        }
    }

    /// `<ip> . <proto> . <port>`: a key of the IP dispatch maps.
    pub fn ip_key(&self, ip: IpAddr) -> Vec<Value> {
        vec![value(ip), self.proto(), Value::Port(self.svc().port)]
    }

    /// `<proto> . <port>`: a key of the NodePort maps.
    pub fn port_key(&self, port: u16) -> Vec<Value> {
        vec![self.proto(), Value::Port(port)]
    }

    /// The protocol as a set value.
    pub fn proto(&self) -> Value {
        Value::Proto(proto_number(self.svc().name.protocol))
    }

    /// `goto <chain>`.
    pub fn goto(chain: &str) -> Verdict {
        Verdict::Goto(chain.to_string())
    }

    /// A no-endpoint map element refusing traffic to `key`.
    pub fn refused(&self, key: Vec<Value>, refusal: Refusal) -> Element {
        let verdict = match refusal {
            Refusal::Reject => Self::goto(super::names::REJECT_CHAIN),
            Refusal::Drop => Verdict::Drop,
        };
        Element::verdict(key, verdict).with_comment(self.comment.clone())
    }
}

/// Renders `svc` with `endpoints` and its slots in `slots`, adding to
/// `shared`.
pub fn render_service_port(
    ctx: &RenderContext,
    svc: &ServicePort,
    endpoints: &[Endpoint],
    slots: &EndpointSlots,
    shared: &mut SharedSets,
) -> PortOutput {
    with_port(ctx, svc, endpoints, slots, |port| render_port(port, shared))
}

/// What `svc`'s balancing chains put into the shared endpoint maps of
/// `shared` ([`render_service_port`] without the rest).
pub fn render_slot_elements(
    ctx: &RenderContext,
    svc: &ServicePort,
    endpoints: &[Endpoint],
    slots: &EndpointSlots,
    shared: &mut SharedSets,
) {
    // neither named nor commented: the elements need neither
    with_plan(ctx, svc, endpoints, |plan| {
        balancing::render_slot_elements(ctx, plan, slots, shared)
    })
}

/// Whether `svc` with `endpoints` has balancing chains that pick from the
/// shared endpoint maps' slots: not when its ClusterIP traffic is
/// DNATed straight from `services` ([`super::direct`]).
pub fn needs_slot(ctx: &RenderContext, svc: &ServicePort, endpoints: &[Endpoint]) -> bool {
    // planned without names nor upstream's endpoint order: whether the
    // port is dispatched directly depends on neither
    let endpoints: Vec<Endpoint> = endpoints
        .iter()
        .filter(|ep| ctx.sync.family.contains(ep.ip))
        .cloned()
        .collect();
    let plan = PortPlan::new(&ctx.sync, svc, &endpoints);
    super::direct::direct_target_of(ctx, &plan).is_none()
}

/// `f` of `svc` planned with `endpoints` and named.
fn with_port<R>(
    ctx: &RenderContext,
    svc: &ServicePort,
    endpoints: &[Endpoint],
    slots: &EndpointSlots,
    f: impl FnOnce(&Port<'_>) -> R,
) -> R {
    with_plan(ctx, svc, endpoints, |plan| {
        f(&Port {
            ctx,
            plan,
            names: ServiceChains::new(&svc.name),
            comment: service_port_comment(&svc.name),
            slots,
        })
    })
}

/// `f` of `svc` planned with `endpoints` in upstream's order.
fn with_plan<R>(
    ctx: &RenderContext,
    svc: &ServicePort,
    endpoints: &[Endpoint],
    f: impl FnOnce(&PortPlan<'_>) -> R,
) -> R {
    let endpoints = plan::upstream_order(endpoints, ctx.sync.family);
    f(&PortPlan::new(&ctx.sync, svc, &endpoints))
}

/// Renders `port` traffic kind by traffic kind.
fn render_port(port: &Port<'_>, shared: &mut SharedSets) -> PortOutput {
    cluster_ip::render_cluster_ip(port, shared);
    external_ip::render_external_ips(port, shared);
    let firewall = load_balancer::render_load_balancer(port, shared);
    node_port::render_node_port(port, shared);
    hairpin::render_hairpin(port, shared);
    let balancing = balancing::render_balancing(port, shared);
    let mut chains = balancing.endpoint_chains;
    chains.extend(balancing.service);
    chains.extend(balancing.local);
    chains.extend(external_chain::render_external_chain(port));
    chains.extend(firewall);
    PortOutput {
        chains,
        affinity_sets: balancing.affinity_sets,
        no_local_endpoints: port.plan.no_local_endpoints(),
    }
}
