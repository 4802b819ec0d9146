//! The per-sync settings the nftables renderer works with: the shared
//! plan's context plus what only this mode needs.

use super::RenderOptions;
use crate::Family;
use ipnet::IpNet;
use plan::{NodeFacts, NodePorts, SyncContext};
use std::net::IpAddr;

/// Settings derived once per sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderContext {
    /// The shared plan's per-sync context.
    pub sync: SyncContext,
    /// The table's family.
    pub family: Family,
    /// The masquerade mark's bits.
    pub mark: u32,
    /// The service CIDRs of the family.
    pub service_cidrs: Vec<IpNet>,
    /// The addresses of `nodeport-ips`; `None` when NodePorts answer on
    /// every local address (no such set).
    pub nodeport_ips: Option<Vec<IpAddr>>,
    /// Single-endpoint ClusterIP-only ports are DNATed straight from
    /// `services` ([`super::direct`]); on with the shared endpoint maps.
    pub direct_dispatch: bool,
}

impl RenderContext {
    /// Whether `svc` is rendered in this family.
    pub fn in_family(&self, svc: &model::ServicePort) -> bool {
        self.sync.family.contains(svc.cluster_ip)
    }

    /// Derives the settings. Only the node's part of `snapshot` is read:
    /// the shared context's large-cluster flag (a count of every
    /// endpoint) is iptables mode's; upstream's nftables proxier has no
    /// large-cluster mode, so it stays `false` here and deriving the
    /// settings does not walk the services.
    pub fn new(snapshot: &model::Snapshot, opts: &RenderOptions, facts: &NodeFacts) -> Self {
        let node_only = model::Snapshot {
            node: snapshot.node.clone(),
            ..model::Snapshot::default()
        };
        let sync = SyncContext::new(&node_only, &opts.common, facts);
        let nodeport_ips = match &sync.node_ports {
            NodePorts::EveryLocalAddress => None,
            // upstream: "localhost NodePorts are not supported" here
            NodePorts::Only(ips) => {
                Some(ips.iter().copied().filter(|ip| !ip.is_loopback()).collect())
            }
        };
        Self {
            family: super::table_family(sync.family),
            mark: sync.mark.0,
            service_cidrs: opts
                .service_cidrs
                .iter()
                .filter(|c| sync.family.contains_net(c))
                .copied()
                .collect(),
            nodeport_ips,
            direct_dispatch: opts.shared_endpoint_maps,
            sync,
        }
    }
}
