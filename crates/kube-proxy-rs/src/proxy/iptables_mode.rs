//! The iptables mode's sync: render the snapshot (pure), apply it with
//! `iptables-restore` (a full sync, or a partial one writing only the
//! chains that changed), and report what the metrics need. Also the option
//! mapping IPVS mode shares (backend, cluster CIDR, NodePort addresses).

use crate::config::{Config, DetectLocal, IptablesBackend, NodePortAddresses};
use plan::LocalDetection;
use iptables::apply::{Backend, BackendChoice, Iptables, KernelFacts, Syncer};
use super::report::SyncReport;
use health::SyncKind;
use iptables::render::RenderOptions;
use model::IpFamily;
use model::Snapshot;
use std::time::{Duration, Instant};

/// One IP family's iptables proxier: the applier (with what it applied
/// last) and the options it renders with.
pub struct IptablesProxier {
    syncer: Syncer,
    opts: RenderOptions,
    /// A full sync runs at least this often (`syncPeriod`).
    sync_period: Duration,
    /// When the last full sync finished.
    last_full_sync: Option<Instant>,
}

impl IptablesProxier {
    /// Picks the backend, prepares the kernel (nfacct counters,
    /// `route_localnet`) and reads the facts the renderer needs.
    pub async fn new(config: &Config, family: IpFamily) -> anyhow::Result<Self> {
        let backend = iptables::apply::detect_backend(backend_choice(config.iptables_backend)).await?;
        tracing::info!(%backend, ?family, "using iptables backend");
        let facts = iptables::apply::apply_kernel_setup(wants_route_localnet(config, family)).await?;
        Ok(Self {
            syncer: Syncer::new(Iptables::new(backend, family)),
            opts: render_options(config, family, &facts),
            sync_period: config.sync_period,
            last_full_sync: None,
        })
    }

    /// Renders every service of `snapshot` and applies it (the render
    /// streamed into the applier): in full when
    /// `full` is asked (initial, periodic, retry), when the last full sync
    /// is `syncPeriod` old, or when the applier needs one (first sync, the
    /// last one failed, our canary chain is gone); else only the chains
    /// that changed.
    pub async fn sync(&mut self, snapshot: &Snapshot, full: bool) -> Result<SyncReport, iptables::Error> {
        let full = wants_full_sync(full, self.last_full_sync, self.sync_period, Instant::now());
        let started = Instant::now();
        // Rendered piece by piece while applied: never every rule at once.
        let rendering = iptables::render::stream(snapshot, &self.opts);
        let synced = self.syncer.sync(&rendering, full).await?;
        if !synced.partial {
            self.last_full_sync = Some(Instant::now());
        }
        let no_local = synced.counts.no_local_endpoints;
        Ok(SyncReport {
            render: synced.render,
            apply: started.elapsed().saturating_sub(synced.render),
            kind: if synced.partial { SyncKind::Partial } else { SyncKind::Full },
            written_chains: Some(synced.written_chains),
            written_rules: synced.written_rules,
            rules: synced.counts,
            virtual_servers: None,
            no_local_internal: no_local.internal,
            no_local_external: no_local.external,
        })
    }

    /// Whether the last sync attempted was a partial one.
    pub fn last_sync_partial(&self) -> bool {
        self.syncer.last_sync_partial()
    }
}

/// Whether this sync must be a full one: asked for (initial, periodic,
/// retry), no full sync yet, or the last one is `sync_period` old.
fn wants_full_sync(asked: bool, last_full_sync: Option<Instant>, sync_period: Duration, now: Instant) -> bool {
    asked || last_full_sync.is_none_or(|at| now.saturating_duration_since(at) >= sync_period)
}

/// The render options for `config` on this kernel.
pub fn render_options(config: &Config, family: IpFamily, facts: &KernelFacts) -> RenderOptions {
    RenderOptions {
        common: plan_options(config, family),
        local_addresses: facts.local_addresses.clone(),
        nfacct: facts.nfacct,
        conntrack_tcp_be_liberal: facts.conntrack_tcp_be_liberal,
        ..RenderOptions::default()
    }
}

/// The options every mode shares, from `config`.
pub fn plan_options(config: &Config, family: IpFamily) -> plan::Options {
    let local_detection = match &config.detect_local {
        DetectLocal::ClusterCidr(cidrs) => LocalDetection::ClusterCidr(cidrs.clone()),
        DetectLocal::NodeCidr => LocalDetection::NodeCidr,
        DetectLocal::BridgeInterface(name) => LocalDetection::BridgeInterface(name.clone()),
        DetectLocal::InterfaceNamePrefix(prefix) => LocalDetection::InterfaceNamePrefix(prefix.clone()),
    };
    let node_port_addresses = match &config.node_port_addresses {
        NodePortAddresses::All => plan::NodePortAddresses::All,
        NodePortAddresses::Primary => plan::NodePortAddresses::Primary,
        NodePortAddresses::Cidrs(cidrs) => plan::NodePortAddresses::Cidrs(cidrs.clone()),
    };
    plan::Options {
        family,
        local_detection,
        masquerade_all: config.masquerade_all,
        masquerade_bit: config.masquerade_bit,
        node_port_addresses,
        localhost_nodeports: config.localhost_node_ports,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_is_full_when_asked_first_or_a_sync_period_after_the_last_full_one() {
        let (period, at) = (Duration::from_secs(30), Instant::now());
        assert!(wants_full_sync(false, None, period, at), "first sync");
        assert!(wants_full_sync(true, Some(at), period, at), "asked");
        assert!(!wants_full_sync(false, Some(at), period, at + Duration::from_secs(29)));
        assert!(wants_full_sync(false, Some(at), period, at + period));
    }
}
