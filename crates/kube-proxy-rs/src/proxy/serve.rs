//! The long-running proxy: a source (the manifests file or the API
//! server) feeds the tracker; the runner calls the iptables sync within
//! its bounds; every sync updates the health-check servers, node health
//! and metrics.

use super::iptables_mode::{IptablesProxier, SyncReport};
use super::sources::{Changes, Source, lock};
use super::{node_name, shutdown};
use crate::config::Config;
use health::{IpFamily, Metrics, ProxyHealth, ProxyMode, ServiceHealthServers, SyncKind, TrafficPolicy};
use model::{ChangeSet, Snapshot};
use runner::{Periods, Runner, Trigger};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use tracker::Tracker;

/// Everything one sync touches.
struct SyncState {
    tracker: Arc<Mutex<Tracker>>,
    proxier: IptablesProxier,
    service_health: ServiceHealthServers,
    health: ProxyHealth,
    metrics: Metrics,
}

/// Runs the proxy until SIGTERM/SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let source = Source::open(&config).await?;
    let tracker = Arc::new(Mutex::new(Tracker::new(node_name::resolve(&config)?)));

    let metrics = Metrics::new(ProxyMode::Iptables);
    let health = ProxyHealth::new(2 * config.sync_period, metrics.clone());
    start_servers(&config, &health, &metrics).await;

    let state = SyncState {
        tracker: Arc::clone(&tracker),
        proxier: IptablesProxier::new(&config, IpFamily::V4).await?,
        service_health: ServiceHealthServers::new(health_addresses(&config), health.clone()),
        health: health.clone(),
        metrics,
    };
    let state = Arc::new(tokio::sync::Mutex::new(state));
    let periods = Periods::new(config.min_sync_period, config.sync_period)?;
    let (runner, handle) = Runner::new("sync-proxy-rules", periods, move |trigger| {
        let state = Arc::clone(&state);
        async move { state.lock().await.sync(trigger).await }
    });
    let runner = runner.spawn();
    let feed = source.start(tracker, Changes { health, handle: handle.clone() });

    shutdown::signal().await;
    feed.abort();
    handle.stop();
    let _ = runner.await;
    Ok(())
}

impl SyncState {
    async fn sync(&mut self, trigger: Trigger) -> anyhow::Result<()> {
        let (snapshot, changes) = lock(&self.tracker).snapshot();
        let report = match self.proxier.sync(&snapshot).await {
            Ok(report) => report,
            Err(err) => {
                self.metrics.count_iptables_restore_failure(IpFamily::V4);
                return Err(err.into());
            }
        };
        self.health.sync_node(&snapshot.node);
        self.health.updated(IpFamily::V4);
        self.sync_health_servers(&snapshot).await;
        self.record(&report, &changes);
        log_sync(trigger, &report, &snapshot);
        Ok(())
    }

    async fn sync_health_servers(&mut self, snapshot: &Snapshot) {
        // Port problems are logged by the health crate; the other servers keep working.
        let _ = self.service_health.sync_services(health::health_check_ports(snapshot)).await;
        self.service_health.sync_endpoints(health::local_ready_endpoints(snapshot));
    }

    fn record(&self, report: &SyncReport, changes: &ChangeSet) {
        let family = IpFamily::V4;
        let ruleset = &report.rendered.ruleset;
        self.metrics.record_sync(family, SyncKind::Full, report.render + report.apply);
        for table in [iptables::Table::Filter, iptables::Table::Nat] {
            let n = ruleset.rule_count(table);
            self.metrics.set_iptables_rules(family, table.as_str(), n, n);
        }
        let no_local = report.rendered.no_local_endpoints;
        self.metrics.set_no_local_endpoints(family, TrafficPolicy::Internal, no_local.internal);
        self.metrics.set_no_local_endpoints(family, TrafficPolicy::External, no_local.external);
        self.metrics.count_service_changes(changes.services.len() as u64);
    }
}

/// One line per sync; the scale benchmark reads these figures.
fn log_sync(trigger: Trigger, report: &SyncReport, snapshot: &Snapshot) {
    let ruleset = &report.rendered.ruleset;
    tracing::info!(
        ?trigger,
        services = snapshot.services.len(),
        render_ms = report.render.as_secs_f64() * 1e3,
        apply_ms = report.apply.as_secs_f64() * 1e3,
        nat_rules = ruleset.nat.rules.len(),
        nat_chains = ruleset.nat.chains.len(),
        filter_rules = ruleset.filter.rules.len(),
        "synced iptables rules"
    );
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

/// Where the per-service health-check servers listen: every IPv4 address
/// (upstream's iptables mode binds the wildcard).
fn health_addresses(_config: &Config) -> Vec<IpAddr> {
    vec![IpAddr::V4(Ipv4Addr::UNSPECIFIED)]
}
