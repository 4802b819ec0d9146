//! nftables mode's renderer: the shared plan ([`plan::PortPlan`]) named
//! and printed as upstream v1.36's nftables proxier writes its table
//! (`ip kube-proxy` / `ip6 kube-proxy`). Pure: no socket, no netlink; the
//! result is a [`Ruleset`] of statements that becomes the codec's typed
//! objects ([`Ruleset::contents`]) for the applier and `nft -f` text
//! ([`Ruleset::to_nft_text`]) for `--dry-run`.
//!
//! One function per traffic kind: ClusterIP dispatch, external IPs, load
//! balancers with their source-range firewall, NodePorts, the
//! external chain (traffic policies), balancing (the `numgen` DNAT maps
//! and session affinity) and hairpin connections; the fixed chains, sets
//! and maps are in `skeleton`.

mod balancing;
mod cluster_ip;
mod context;
pub mod direct;
pub mod endpoint_slots;
mod external_chain;
mod external_ip;
mod hairpin;
pub mod interval;
mod lean;
mod load_balancer;
mod local_traffic;
pub mod names;
mod node_port;
mod ruleset;
mod selected;
mod service_port;
mod shared;
mod shared_parts;
mod skeleton;
pub mod statement;
mod text;

pub use context::RenderContext;
pub use endpoint_slots::{EndpointSlots, Slots};
pub use lean::{Lean, render_lean};
pub use ruleset::{ChainRules, NamedSet, RuleSpec, Ruleset, anonymous_set_name};
pub use selected::{
    Selected, Services, allocate_slots, holds_slot, render_services, slots_in_order,
};
pub use shared::{SHARED_SETS, is_interchangeable, shared_key};
pub use statement::Stmt;

use crate::Family;
use ipnet::IpNet;
use plan::{NoLocalEndpoints, NodeFacts, Options};

/// Everything the renderer is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// The options every mode shares (family, local-traffic detection,
    /// masquerade bit, NodePort addresses…). nftables mode's defaults
    /// differ from iptables mode's: see [`RenderOptions::nftables_defaults`].
    pub common: Options,
    /// The service CIDRs (`--service-cluster-ip-range` or the ServiceCIDR
    /// objects): traffic to their unallocated addresses is dropped in
    /// `cluster-ips-check`. Empty: no such rule (upstream adds it only when
    /// it knows the CIDRs).
    pub service_cidrs: Vec<IpNet>,
    /// Balancing chains pick their endpoint from shared endpoint maps
    /// ([`endpoint_slots`]), the default; false: each from its own
    /// anonymous map, upstream v1.36's table exactly.
    pub shared_endpoint_maps: bool,
}

impl RenderOptions {
    /// nftables mode's defaults for `family`: `nodePortAddresses` unset
    /// means `primary`, there are no localhost NodePorts, and balancing
    /// chains pick from the shared endpoint maps.
    pub fn nftables_defaults(family: plan::IpFamily) -> Self {
        Self {
            common: Options {
                family,
                node_port_addresses: plan::NodePortAddresses::Primary,
                localhost_nodeports: false,
                ..Options::default()
            },
            service_cidrs: Vec::new(),
            shared_endpoint_maps: true,
        }
    }
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self::nftables_defaults(plan::IpFamily::V4)
    }
}

/// A render's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The table as it must be.
    pub ruleset: Ruleset,
    /// For `kubeproxy_sync_proxy_rules_no_local_endpoints_total`.
    pub no_local_endpoints: NoLocalEndpoints,
}

/// The table for `snapshot` with `opts` on a node with `facts`; with
/// shared endpoint maps, the service ports given slots in order (as a
/// proxy starting on that state).
pub fn render(snapshot: &model::Snapshot, opts: &RenderOptions, facts: &NodeFacts) -> Rendered {
    let ctx = RenderContext::new(snapshot, opts, facts);
    let slots = match opts.shared_endpoint_maps {
        true => slots_in_order(snapshot, &ctx),
        false => EndpointSlots::default(),
    };
    render_services(snapshot, &ctx, Services::All, Slots::of(&slots)).rendered
}

/// The nf_tables family of `family`.
pub fn table_family(family: plan::IpFamily) -> Family {
    match family {
        plan::IpFamily::V4 => Family::Ip,
        plan::IpFamily::V6 => Family::Ip6,
    }
}

#[cfg(test)]
mod tests;
