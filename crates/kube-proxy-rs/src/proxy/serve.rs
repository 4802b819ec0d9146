//! The long-running proxy: a source (the manifests file or the API
//! server) feeds the tracker; the runner calls the iptables sync within
//! its bounds (iptables or IPVS mode); every sync updates the health-check
//! servers, node health and metrics, and removes stale UDP conntrack flows.

use super::proxier::Proxier;
use super::report::SyncReport;
use super::sources::{Changes, Source, take_snapshot};
use super::{nfacct_metrics, node_name, shutdown, stale_flows};
use crate::config::{Config, NodePortAddresses};
use health::{IpFamily, Metrics, ProxyHealth, ServiceHealthServers, SyncKind, TrafficPolicy};
use iptables::Table;
use model::Snapshot;
use runner::{Periods, Runner, Trigger};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use tracker::Tracker;

/// Everything one sync touches.
struct SyncState {
    tracker: Arc<Mutex<Tracker>>,
    proxier: Proxier,
    service_health: ServiceHealthServers,
    health: ProxyHealth,
    metrics: Metrics,
}

/// Runs the proxy until SIGTERM/SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let source = Source::open(&config).await?;
    let tracker = Arc::new(Mutex::new(Tracker::new(node_name::resolve(&config)?)));

    super::conntrack_setup::apply(&config);
    let proxier = Proxier::new(&config, IpFamily::V4).await?;
    let metrics = Metrics::new(proxier.mode());
    nfacct_metrics::read_nfacct_at_scrape(&metrics);
    let health = ProxyHealth::new(2 * config.sync_period, metrics.clone());
    start_servers(&config, &health, &metrics).await;

    let state = SyncState {
        tracker: Arc::clone(&tracker),
        proxier,
        service_health: ServiceHealthServers::new(health_addresses(&config).await, health.clone()),
        health: health.clone(),
        metrics: metrics.clone(),
    };
    let state = Arc::new(tokio::sync::Mutex::new(state));
    let periods = Periods::new(config.min_sync_period, config.sync_period)?;
    let (runner, handle) = Runner::new("sync-proxy-rules", periods, move |trigger| {
        let state = Arc::clone(&state);
        async move { state.lock().await.sync(trigger).await }
    });
    let feed = source.start(tracker, Changes { health, handle: handle.clone(), metrics });
    // The sync loop runs on this task (IPVS mode's netlink futures are not
    // Send), finishing the sync in progress when told to stop.
    let syncs = runner.run_loop();
    tokio::pin!(syncs);
    tokio::select! {
        () = &mut syncs => {}
        () = shutdown::signal() => {
            handle.stop();
            syncs.await;
        }
    }
    feed.abort();
    Ok(())
}

impl SyncState {
    async fn sync(&mut self, trigger: Trigger) -> anyhow::Result<()> {
        let (snapshot, _changes) = take_snapshot(&self.tracker, &self.metrics);
        let synced = self.proxier.sync(&snapshot, trigger.wants_full_sync()).await;
        crate::memory::release_freed();
        let report = match synced {
            Ok(report) => report,
            Err(err) => {
                self.metrics.count_iptables_restore_failure(IpFamily::V4);
                if self.proxier.last_sync_partial() {
                    self.metrics.count_iptables_partial_restore_failure(IpFamily::V4);
                }
                return Err(err);
            }
        };
        self.health.sync_node(&snapshot.node);
        self.health.updated(IpFamily::V4);
        self.sync_health_servers(&snapshot).await;
        stale_flows::reconcile_stale_udp_flows(&snapshot, &self.metrics).await;
        self.record(&report);
        log_sync(trigger, &report, &snapshot);
        Ok(())
    }

    async fn sync_health_servers(&mut self, snapshot: &Snapshot) {
        // Port problems are logged by the health crate; the other servers keep working.
        let _ = self.service_health.sync_services(health::health_check_ports(snapshot)).await;
        self.service_health.sync_endpoints(health::local_ready_endpoints(snapshot));
    }

    fn record(&self, report: &SyncReport) {
        let family = IpFamily::V4;
        let rules = &report.rules;
        self.metrics.record_sync(family, report.kind, report.render + report.apply);
        for table in [iptables::Table::Filter, iptables::Table::Nat] {
            let n = rules.rules(table);
            let written = report.written_rules.get(&table).copied().unwrap_or(n);
            self.metrics.set_iptables_rules(family, table.as_str(), n, written);
        }
        self.metrics.set_no_local_endpoints(family, TrafficPolicy::Internal, report.no_local_internal);
        self.metrics.set_no_local_endpoints(family, TrafficPolicy::External, report.no_local_external);
    }
}

/// One line per sync; the scale benchmark reads these figures.
fn log_sync(trigger: Trigger, report: &SyncReport, snapshot: &Snapshot) {
    let rules = &report.rules;
    let (render_ms, apply_ms) = (report.render.as_secs_f64() * 1e3, report.apply.as_secs_f64() * 1e3);
    let (nat_rules, nat_chains, filter_rules) = (rules.rules(Table::Nat), rules.chains(Table::Nat), rules.rules(Table::Filter));
    let services = snapshot.services.len();
    let partial = report.kind == SyncKind::Partial;
    match report.virtual_servers {
        None => tracing::info!(
            ?trigger, partial, services, render_ms, apply_ms, nat_rules, nat_chains, filter_rules,
            written_chains = report.written_chains.unwrap_or_default(), "synced iptables rules"
        ),
        Some(virtual_servers) => tracing::info!(
            ?trigger, services, virtual_servers, render_ms, apply_ms, nat_rules, filter_rules,
            "synced IPVS rules"
        ),
    }
}

/// Starts the node health and metrics servers; a bind failure is logged
/// and the proxy keeps running without that server.
async fn start_servers(config: &Config, health: &ProxyHealth, metrics: &Metrics) {
    if let Some(addr) = config.healthz_bind_address {
        match health::bind_node_health(addr, health.clone()).await {
            Ok(server) => drop(server.spawn()),
            Err(err) => tracing::error!(%err, "node health server not started"),
        }
    }
    if let Some(addr) = config.metrics_bind_address {
        match health::bind_metrics(addr, metrics.clone()).await {
            Ok(server) => drop(server.spawn()),
            Err(err) => tracing::error!(%err, "metrics server not started"),
        }
    }
}

/// Where the per-service health-check servers listen, as upstream: the
/// node's IPv4 addresses inside `nodePortAddresses` CIDRs when those are
/// set, else every address (the wildcard; also for `primary`, whose node IP
/// is not known before the first sync).
async fn health_addresses(config: &Config) -> Vec<IpAddr> {
    let wildcard = vec![IpAddr::V4(Ipv4Addr::UNSPECIFIED)];
    let NodePortAddresses::Cidrs(cidrs) = &config.node_port_addresses else { return wildcard };
    let local = match iptables::apply::read_local_addresses().await {
        Ok(local) => local,
        Err(err) => {
            tracing::warn!(%err, "cannot read the node's addresses; health check servers listen on all of them");
            return wildcard;
        }
    };
    let chosen: Vec<IpAddr> =
        local.into_iter().filter(|ip| ip.is_ipv4() && cidrs.iter().any(|net| net.contains(ip))).collect();
    if chosen.is_empty() {
        tracing::warn!(?cidrs, "no IPv4 address of the node is in nodePortAddresses; health check servers listen on all");
        return wildcard;
    }
    chosen
}
