//! The iptables mode's sync: render the snapshot (pure), apply it with
//! `iptables-restore`, and report what the metrics need. Also the option
//! mapping IPVS mode shares (backend, cluster CIDR, NodePort addresses).

use crate::config::{Config, DetectLocal, IptablesBackend, NodePortAddresses};
use iptables::apply::{Backend, BackendChoice, Iptables, KernelFacts};
use super::report::SyncReport;
use iptables::render::{IpFamily, RenderOptions};
use ipnet::IpNet;
use model::Snapshot;
use std::time::Instant;

/// One IP family's iptables proxier: the applier and the options it
/// renders with.
pub struct IptablesProxier {
    iptables: Iptables,
    opts: RenderOptions,
    node_cidr_detection: bool,
}

impl IptablesProxier {
    /// Picks the backend, prepares the kernel (nfacct counters,
    /// `route_localnet`) and reads the facts the renderer needs.
    pub async fn new(config: &Config, family: IpFamily) -> anyhow::Result<Self> {
        let backend = iptables::apply::detect_backend(backend_choice(config.iptables_backend)).await?;
        tracing::info!(%backend, ?family, "using iptables backend");
        let facts = iptables::apply::apply_kernel_setup(wants_route_localnet(config, family)).await?;
        Ok(Self {
            iptables: Iptables::new(backend, family),
            opts: render_options(config, family, &facts),
            node_cidr_detection: config.detect_local == DetectLocal::NodeCidr,
        })
    }

    /// Renders and applies every service of `snapshot`.
    pub async fn sync(&mut self, snapshot: &Snapshot) -> Result<SyncReport, iptables::Error> {
        if self.node_cidr_detection {
            self.opts.cluster_cidr = node_cidr(snapshot, self.opts.family);
        }
        let started = Instant::now();
        let rendered = iptables::render::render(snapshot, &self.opts);
        let render = started.elapsed();
        self.iptables.apply_ruleset(&rendered.ruleset).await?;
        Ok(SyncReport {
            render,
            apply: started.elapsed() - render,
            ruleset: rendered.ruleset,
            virtual_servers: None,
            no_local_internal: rendered.no_local_endpoints.internal,
            no_local_external: rendered.no_local_endpoints.external,
        })
    }
}

/// The render options for `config` on this kernel.
pub fn render_options(config: &Config, family: IpFamily, facts: &KernelFacts) -> RenderOptions {
    RenderOptions {
        family,
        cluster_cidr: cluster_cidr(config, family),
        masquerade_all: config.masquerade_all,
        masquerade_bit: config.masquerade_bit,
        node_port_addresses: node_port_cidrs(config),
        node_port_primary: config.node_port_addresses == NodePortAddresses::Primary,
        node_ips: facts.local_addresses.clone(),
        localhost_nodeports: config.localhost_node_ports,
        nfacct: facts.nfacct,
        conntrack_tcp_be_liberal: facts.conntrack_tcp_be_liberal,
        ..RenderOptions::default()
    }
}

/// `nodePortAddresses` CIDRs (none: every local address, or `primary`).
pub fn node_port_cidrs(config: &Config) -> Vec<IpNet> {
    match &config.node_port_addresses {
        NodePortAddresses::Cidrs(cidrs) => cidrs.clone(),
        NodePortAddresses::All | NodePortAddresses::Primary => Vec::new(),
    }
}

/// `--iptables-backend` as the applier spells it.
pub fn backend_choice(flag: IptablesBackend) -> BackendChoice {
    match flag {
        IptablesBackend::Auto => BackendChoice::Auto,
        IptablesBackend::Legacy => BackendChoice::Fixed(Backend::Legacy),
        IptablesBackend::Nft => BackendChoice::Fixed(Backend::Nft),
    }
}

/// Upstream sets `route_localnet` when localhost NodePorts are on (IPv4).
pub fn wants_route_localnet(config: &Config, family: IpFamily) -> bool {
    family == IpFamily::V4 && config.localhost_node_ports
}

fn in_family(net: &IpNet, family: IpFamily) -> bool {
    IpFamily::of(net.addr()) == family
}

/// The cluster CIDR of this family for `detectLocalMode: ClusterCIDR`.
pub fn cluster_cidr(config: &Config, family: IpFamily) -> Option<IpNet> {
    match &config.detect_local {
        DetectLocal::ClusterCidr(cidrs) => cidrs.iter().find(|net| in_family(net, family)).copied(),
        DetectLocal::NodeCidr => None,
        DetectLocal::BridgeInterface(_) | DetectLocal::InterfaceNamePrefix(_) => None,
    }
}

/// The node's pod CIDR of this family for `detectLocalMode: NodeCIDR`.
fn node_cidr(snapshot: &Snapshot, family: IpFamily) -> Option<IpNet> {
    snapshot.node.pod_cidrs.iter().find(|net| in_family(net, family)).copied()
}
