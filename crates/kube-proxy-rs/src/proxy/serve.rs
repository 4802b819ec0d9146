//! The long-running proxy: a source (the manifests file or the API
//! server) feeds the tracker; the runner calls the chosen mode's proxier
//! within its bounds, its full-sync policy deciding how much each sync
//! writes; every sync's mode-neutral report updates the metrics, and the
//! health-check servers, node health and stale UDP conntrack flows follow.

use super::sources::{Changes, Source, take_snapshot};
use super::{mode, nfacct_metrics, node_name, shutdown, stale_flows};
use crate::config::{Config, NodePortAddresses};
use proxier::{Failure, Mode, Proxier, SyncError, SyncReport};
use health::{IpFamily, Metrics, ProxyHealth, ServiceHealthServers, SyncKind, TrafficPolicy};
use model::{ChangeSet, Snapshot};
use runner::{FullSyncPolicy, Periods, Runner, SyncScope, Trigger};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use tracker::Tracker;

/// Everything one sync touches.
struct SyncState {
    tracker: Arc<Mutex<Tracker>>,
    proxier: Box<dyn Proxier + Send>,
    /// Whether each sync is full or partial.
    policy: FullSyncPolicy,
    /// What changed since the snapshot the proxier last saw: the tracker's
    /// change sets, merged until a sync reaches the proxier.
    pending: ChangeSet,
    service_health: ServiceHealthServers,
    health: ProxyHealth,
    metrics: Metrics,
}

/// Runs the proxy until SIGTERM/SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    super::oom_score::apply(config.oom_score_adj);
    let source = Source::open(&config).await?;
    let tracker = Arc::new(Mutex::new(Tracker::new(node_name::resolve(&config)?)));

    super::conntrack_setup::apply(&config);
    let proxier = mode::choose(&config, IpFamily::V4).await?;
    let metrics = Metrics::new(mode::metrics_mode(proxier.mode()));
    nfacct_metrics::read_nfacct_at_scrape(&metrics);
    let health = ProxyHealth::new(2 * config.sync_period, metrics.clone());
    start_servers(&config, &health, &metrics).await;

    let state = SyncState {
        tracker: Arc::clone(&tracker),
        proxier,
        policy: FullSyncPolicy::new(config.sync_period),
        pending: ChangeSet::default(),
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
        let (snapshot, changes) = take_snapshot(&self.tracker, &self.metrics);
        self.pending.absorb(changes);
        let synced = self.sync_proxier(trigger, &snapshot).await;
        crate::memory::release_freed();
        self.policy.record(synced.is_ok(), synced.as_ref().is_ok_and(|r| !r.partial), tokio::time::Instant::now());
        let report = match synced {
            Ok(report) => report,
            Err(err) => {
                count_failure(&self.metrics, &err);
                return Err(err.into());
            }
        };
        self.health.sync_node(&snapshot.node);
        self.health.updated(IpFamily::V4);
        self.sync_health_servers(&snapshot).await;
        stale_flows::reconcile_stale_udp_flows(&snapshot, &self.metrics).await;
        self.record(&report);
        log_sync(self.proxier.mode(), trigger, &report, &snapshot);
        Ok(())
    }

    /// Asks the policy how much to write, then syncs the proxier.
    async fn sync_proxier(&mut self, trigger: Trigger, snapshot: &Snapshot) -> Result<SyncReport, SyncError> {
        let proxier = &mut self.proxier;
        let scope = self.policy.decide(trigger, tokio::time::Instant::now(), || proxier.state_unknown()).await?;
        if let SyncScope::Full(reason) = scope {
            tracing::debug!(%reason, "full sync");
        }
        let synced = self.proxier.sync(snapshot, &self.pending, scope.is_full()).await;
        // The proxier saw these (a failed sync makes its next one render everything).
        self.pending = ChangeSet::default();
        synced
    }

    async fn sync_health_servers(&mut self, snapshot: &Snapshot) {
        // Port problems are logged by the health crate; the other servers keep working.
        let _ = self.service_health.sync_services(health::health_check_ports(snapshot)).await;
        self.service_health.sync_endpoints(health::local_ready_endpoints(snapshot));
    }

    fn record(&self, report: &SyncReport) {
        let family = IpFamily::V4;
        let kind = if report.partial { SyncKind::Partial } else { SyncKind::Full };
        self.metrics.record_sync(family, kind, report.render + report.apply);
        for table in &report.rule_tables {
            self.metrics.set_iptables_rules(family, table.table, table.rules, table.written);
        }
        self.metrics.set_no_local_endpoints(family, TrafficPolicy::Internal, report.no_local_internal);
        self.metrics.set_no_local_endpoints(family, TrafficPolicy::External, report.no_local_external);
    }
}

/// Counts a failed sync in its mode's failure counters: iptables restore
/// failures (and partial ones), nftables sync and cleanup failures;
/// nothing else counts in those.
fn count_failure(metrics: &Metrics, err: &SyncError) {
    match err.failure {
        Failure::IptablesRestore { partial } => {
            metrics.count_iptables_restore_failure(IpFamily::V4);
            if partial {
                metrics.count_iptables_partial_restore_failure(IpFamily::V4);
            }
        }
        Failure::NftablesSync => metrics.count_nftables_sync_failure(IpFamily::V4),
        Failure::NftablesCleanup => metrics.count_nftables_cleanup_failure(IpFamily::V4),
        Failure::Other => {}
    }
}

/// One line per sync; the scale benchmark reads these figures.
fn log_sync(mode: Mode, trigger: Trigger, report: &SyncReport, snapshot: &Snapshot) {
    let table = |name: &str| report.table(name).copied().unwrap_or_default();
    let (nat, filter) = (table("nat"), table("filter"));
    let (render_ms, apply_ms) = (report.render.as_secs_f64() * 1e3, report.apply.as_secs_f64() * 1e3);
    let (nat_rules, nat_chains, filter_rules) = (nat.rules, nat.chains, filter.rules);
    let services = snapshot.services.len();
    let partial = report.partial;
    match mode {
        Mode::Iptables => tracing::info!(
            ?trigger, partial, services, render_ms, apply_ms, nat_rules, nat_chains, filter_rules,
            written_chains = report.written_chains.unwrap_or_default(), "synced iptables rules"
        ),
        Mode::Ipvs => tracing::info!(
            ?trigger, services, virtual_servers = report.virtual_servers.unwrap_or_default(), render_ms, apply_ms,
            nat_rules, filter_rules, "synced IPVS rules"
        ),
        Mode::Nftables => log_nftables_sync(trigger, report, services),
    }
}

/// nftables mode's sync line: the table's size, what the transaction
/// changed, and the kernel's share of the apply time.
fn log_nftables_sync(trigger: Trigger, report: &SyncReport, services: usize) {
    let figures = report.nftables.unwrap_or_default();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let (render_ms, apply_ms) = (ms(report.render), ms(report.apply));
    let kernel_ms = ms(report.kernel.unwrap_or_default());
    let read_back_ms = ms(figures.read_back);
    tracing::info!(
        ?trigger, partial = report.partial, services, render_ms, apply_ms, kernel_ms, read_back_ms,
        chains = figures.chains, rules = figures.rules, sets = figures.sets, elements = figures.elements,
        changes = figures.changes, chains_written = figures.chains_written, rules_written = figures.rules_written,
        elements_written = figures.elements_written, deleted = figures.objects_deleted, "synced nftables rules"
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

/// Where the per-service health-check servers listen, as upstream: the
/// node's IPv4 addresses inside `nodePortAddresses` CIDRs when those are
/// set, else every address (the wildcard; also for `primary`, whose node IP
/// is not known before the first sync).
async fn health_addresses(config: &Config) -> Vec<IpAddr> {
    let wildcard = vec![IpAddr::V4(Ipv4Addr::UNSPECIFIED)];
    let NodePortAddresses::Cidrs(cidrs) = &config.node_port_addresses else { return wildcard };
    let local = match host::read_local_addresses().await {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The value of `name{ip_family="IPv4"}` in a scrape (0 when absent).
    fn value(metrics: &Metrics, name: &str) -> f64 {
        let text = metrics.render();
        let line = text.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with('{'));
        line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok()).unwrap_or(0.0)
    }

    const RESTORE: &str = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total";
    const PARTIAL: &str = "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total";

    #[test]
    fn only_iptables_restore_failures_count_as_such() {
        let metrics = Metrics::new(health::ProxyMode::Iptables);
        count_failure(&metrics, &SyncError::new(Failure::Other, "add virtual server: EINVAL"));
        assert_eq!((value(&metrics, RESTORE), value(&metrics, PARTIAL)), (0.0, 0.0));
        count_failure(&metrics, &SyncError::new(Failure::IptablesRestore { partial: false }, "restore failed"));
        assert_eq!((value(&metrics, RESTORE), value(&metrics, PARTIAL)), (1.0, 0.0));
        count_failure(&metrics, &SyncError::new(Failure::IptablesRestore { partial: true }, "restore failed"));
        assert_eq!((value(&metrics, RESTORE), value(&metrics, PARTIAL)), (2.0, 1.0));
    }

    const NFT_SYNC: &str = "kubeproxy_sync_proxy_rules_nftables_sync_failures_total";
    const NFT_CLEANUP: &str = "kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total";

    #[test]
    fn nftables_failures_count_in_nftables_counters_only() {
        let metrics = Metrics::new(health::ProxyMode::Nftables);
        count_failure(&metrics, &SyncError::new(Failure::Other, "cannot read addresses"));
        assert_eq!((value(&metrics, NFT_SYNC), value(&metrics, NFT_CLEANUP)), (0.0, 0.0));
        count_failure(&metrics, &SyncError::new(Failure::NftablesSync, "transaction refused"));
        assert_eq!((value(&metrics, NFT_SYNC), value(&metrics, NFT_CLEANUP)), (1.0, 0.0));
        count_failure(&metrics, &SyncError::new(Failure::NftablesCleanup, "delete chain: EBUSY"));
        assert_eq!((value(&metrics, NFT_SYNC), value(&metrics, NFT_CLEANUP)), (1.0, 1.0));
        assert!(!metrics.render().contains("iptables_restore_failures"));
    }
}
