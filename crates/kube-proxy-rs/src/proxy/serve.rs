//! The long-running proxy: a source (the manifests file or the API
//! server) feeds the tracker; one runner per IP family served calls that
//! family's proxier within its bounds (upstream's metaproxier: each family
//! syncs, fails and retries on its own), its full-sync policy deciding how
//! much each sync writes; every sync's mode-neutral report updates the
//! family's metrics, and the health-check servers, node health and stale
//! UDP conntrack flows of the family follow.

use super::families::{self, Families};
use super::leftovers::Leftovers;
use super::localhost_nodeports::LocalhostNodePorts;
use super::service_health::{FamilyHealthChecks, SharedServiceHealth};
use super::sources::{Changes, Source, take_snapshot};
use super::{mode, mode_options, nfacct_metrics, node_name, shutdown, stale_flows};
use crate::config::{Config, NodePortAddresses, ProxyMode};
use proxier::{Failure, Mode, Proxier, SyncError, SyncReport};
use health::{IpFamily, Metrics, ProxyHealth, ServiceHealthServers, SyncKind, TrafficPolicy};
use model::{ChangeSet, Snapshot};
use runner::{FullSyncPolicy, Periods, Runner, SyncScope, Trigger};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use tracker::Tracker;

/// Everything one family's sync touches (upstream: one single-stack
/// proxier of the metaproxier, with its own runner).
struct SyncState {
    family: IpFamily,
    tracker: Arc<Mutex<Tracker>>,
    proxier: Box<dyn Proxier + Send>,
    /// Whether each sync is full or partial.
    policy: FullSyncPolicy,
    /// What changed since the snapshot the proxier last saw: the tracker's
    /// change sets, merged until a sync reaches the proxier.
    pending: ChangeSet,
    service_health: Arc<tokio::sync::Mutex<SharedServiceHealth>>,
    health: ProxyHealth,
    metrics: Metrics,
    /// The other modes' rules of the family, removed after its first
    /// successful sync.
    leftovers: Leftovers,
    /// `--userspace-localhost-nodeports`' listeners of the family.
    localhost: Option<LocalhostNodePorts>,
}

/// Runs the proxy until SIGTERM/SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    super::oom_score::apply(config.oom_score_adj);
    let source = Source::open(&config).await?;
    let node_name = node_name::resolve(&config)?;
    let families = decide_families(&config, &source, &node_name).await?;
    let tracker = Arc::new(Mutex::new(Tracker::with_families(node_name, families.primary, &families.all())));

    super::conntrack_setup::apply(&config);
    let mode::Chosen { proxiers, ipvs_drain, connections } = mode::choose(&config, &families.all()).await?;
    let mode = proxiers.first().map_or(Mode::Iptables, |(_, p)| p.mode());
    let metrics = Metrics::new(mode::metrics_mode(mode));
    nfacct_metrics::read_nfacct_at_scrape(&metrics);
    if let Some(reader) = connections {
        metrics.set_connections_reader(reader);
    }
    let health = ProxyHealth::new(2 * config.sync_period, metrics.clone());
    super::servers::start(&config, &health, &metrics).await?;

    let servers = ServiceHealthServers::new(health_addresses(&config, &families).await, health.clone());
    let service_health = Arc::new(tokio::sync::Mutex::new(SharedServiceHealth::new(servers, &families.all())));
    let periods = Periods::new(config.min_sync_period, config.sync_period)?;
    let mut loops = Vec::new();
    let mut handles = Vec::new();
    for (family, proxier) in proxiers {
        let state = SyncState {
            family,
            tracker: Arc::clone(&tracker),
            proxier,
            policy: FullSyncPolicy::new(config.sync_period),
            pending: ChangeSet::default(),
            service_health: Arc::clone(&service_health),
            health: health.clone(),
            metrics: metrics.clone(),
            leftovers: Leftovers::new(family, mode::deferred_leftovers(mode, ipvs_drain.as_ref())),
            localhost: LocalhostNodePorts::new(&config, family),
        };
        let (runner, handle) = family_runner(state, periods);
        loops.push(runner);
        handles.push((family, handle));
    }
    let feed = source.start(tracker, Changes { health, handles: handles.clone(), metrics });
    // The sync loops run on this task (IPVS mode's netlink futures are not
    // Send), each finishing the sync in progress when told to stop.
    let syncs = futures::future::join_all(loops);
    tokio::pin!(syncs);
    tokio::select! {
        _ = &mut syncs => {}
        () = shutdown::signal() => {
            handles.iter().for_each(|(_, handle)| handle.stop());
            syncs.await;
        }
    }
    feed.abort();
    Ok(())
}

/// The families to serve (see [`families`]); iptables and IPVS mode judge
/// support with the iptables backend they will use.
async fn decide_families(config: &Config, source: &Source, node_name: &str) -> anyhow::Result<Families> {
    let node_ips = source.node_host_ips(node_name).await;
    let backend = match config.mode {
        ProxyMode::Nftables => None,
        _ => Some(xtables::apply::detect_backend(mode_options::backend_choice(config.iptables_backend)).await?),
    };
    families::decide(config, &node_ips, backend).await
}

/// `state`'s bounded-frequency runner loop and its handle; each family has
/// its own, so one family's failures and retries never hold the other.
fn family_runner(state: SyncState, periods: Periods) -> (impl std::future::Future<Output = ()>, runner::Handle) {
    let name = match state.family {
        IpFamily::V4 => "sync-proxy-rules-ipv4",
        IpFamily::V6 => "sync-proxy-rules-ipv6",
    };
    let state = Arc::new(tokio::sync::Mutex::new(state));
    let (runner, handle) = Runner::new(name, periods, move |trigger| {
        let state = Arc::clone(&state);
        async move { state.lock().await.sync(trigger).await }
    });
    (runner.run_loop(), handle)
}

impl SyncState {
    async fn sync(&mut self, trigger: Trigger) -> anyhow::Result<()> {
        let (snapshot, changes) = take_snapshot(&self.tracker, self.family, &self.metrics);
        self.pending.absorb(changes);
        let synced = self.sync_proxier(trigger, &snapshot).await;
        self.localhost.iter_mut().for_each(|localhost| localhost.sync(&snapshot));
        crate::memory::release_freed();
        self.policy.record(synced.is_ok(), synced.as_ref().is_ok_and(|r| !r.partial), tokio::time::Instant::now());
        let report = match synced {
            Ok(report) => report,
            Err(err) => {
                count_failure(&self.metrics, self.family, &err);
                return Err(err.into());
            }
        };
        self.leftovers.remove_after_first_sync().await;
        self.health.sync_node(&snapshot.node);
        self.health.updated(self.family);
        self.service_health.lock().await.sync(self.family, FamilyHealthChecks::of(&snapshot)).await;
        stale_flows::reconcile_stale_udp_flows(&snapshot, self.family, &self.metrics).await;
        self.record(&report);
        log_sync(self.proxier.mode(), self.family, trigger, &report, &snapshot);
        Ok(())
    }

    /// Asks the policy how much to write, then syncs the proxier.
    async fn sync_proxier(&mut self, trigger: Trigger, snapshot: &Snapshot) -> Result<SyncReport, SyncError> {
        let proxier = &mut self.proxier;
        let scope = self.policy.decide(trigger, tokio::time::Instant::now(), || proxier.state_unknown()).await?;
        if let SyncScope::Full(reason) = scope {
            tracing::debug!(family = %self.family, %reason, "full sync");
        }
        let synced = self.proxier.sync(snapshot, &self.pending, scope.is_full()).await;
        // The proxier saw these (a failed sync makes its next one render everything).
        self.pending = ChangeSet::default();
        synced
    }

    fn record(&self, report: &SyncReport) {
        let family = self.family;
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
fn count_failure(metrics: &Metrics, family: IpFamily, err: &SyncError) {
    match err.failure {
        Failure::IptablesRestore { partial } => {
            metrics.count_iptables_restore_failure(family);
            if partial {
                metrics.count_iptables_partial_restore_failure(family);
            }
        }
        Failure::NftablesSync => metrics.count_nftables_sync_failure(family),
        Failure::NftablesCleanup => metrics.count_nftables_cleanup_failure(family),
        Failure::Other => {}
    }
}

/// One line per sync; the scale benchmark reads these figures.
fn log_sync(mode: Mode, family: IpFamily, trigger: Trigger, report: &SyncReport, snapshot: &Snapshot) {
    let table = |name: &str| report.table(name).copied().unwrap_or_default();
    let (nat, filter) = (table("nat"), table("filter"));
    let (render_ms, apply_ms) = (report.render.as_secs_f64() * 1e3, report.apply.as_secs_f64() * 1e3);
    let (nat_rules, nat_chains, filter_rules) = (nat.rules, nat.chains, filter.rules);
    let services = snapshot.services.len();
    let partial = report.partial;
    match mode {
        Mode::Iptables => tracing::info!(
            ip_family = %family, ?trigger, partial, services, render_ms, apply_ms, nat_rules, nat_chains, filter_rules,
            written_chains = report.written_chains.unwrap_or_default(), "synced iptables rules"
        ),
        Mode::Ipvs => tracing::info!(
            ip_family = %family, ?trigger, services, virtual_servers = report.virtual_servers.unwrap_or_default(), render_ms, apply_ms,
            nat_rules, filter_rules, "synced IPVS rules"
        ),
        Mode::Nftables => log_nftables_sync(family, trigger, report, services),
        Mode::Userspace => tracing::info!(
            ip_family = %family, ?trigger, services, render_ms, apply_ms, nat_rules, filter_rules, "synced userspace proxy ports and portal rules"
        ),
    }
}

/// nftables mode's sync line: the table's size, what the transaction
/// changed, and the kernel's share of the apply time.
fn log_nftables_sync(family: IpFamily, trigger: Trigger, report: &SyncReport, services: usize) {
    let figures = report.nftables.unwrap_or_default();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let (render_ms, apply_ms) = (ms(report.render), ms(report.apply));
    let kernel_ms = ms(report.kernel.unwrap_or_default());
    let read_back_ms = ms(figures.read_back);
    let read_back_kernel_ms = ms(figures.read_back_kernel);
    tracing::info!(
        ip_family = %family, ?trigger, partial = report.partial, services, render_ms, apply_ms, kernel_ms, read_back_ms,
        read_back_kernel_ms,
        chains = figures.chains, rules = figures.rules, sets = figures.sets, elements = figures.elements,
        changes = figures.changes, chains_written = figures.chains_written, rules_written = figures.rules_written,
        elements_written = figures.elements_written, deleted = figures.objects_deleted, "synced nftables rules"
    );
}

/// Where the per-service health-check servers listen, as upstream's
/// per-family proxiers do: the node's addresses of the families served
/// inside `nodePortAddresses` CIDRs when those are set, else each family's
/// wildcard (also for `primary`, whose node IP is not known before the
/// first sync).
async fn health_addresses(config: &Config, families: &Families) -> Vec<IpAddr> {
    let wildcard = families.all().into_iter().map(wildcard_of).collect();
    let NodePortAddresses::Cidrs(cidrs) = &config.node_port_addresses else { return wildcard };
    let local = match host::read_local_addresses().await {
        Ok(local) => local,
        Err(err) => {
            tracing::warn!(%err, "cannot read the node's addresses; health check servers listen on all of them");
            return wildcard;
        }
    };
    let served = |ip: &IpAddr| families.all().contains(&IpFamily::of(*ip));
    let chosen: Vec<IpAddr> =
        local.into_iter().filter(|ip| served(ip) && cidrs.iter().any(|net| net.contains(ip))).collect();
    if chosen.is_empty() {
        tracing::warn!(?cidrs, "no address of the node is in nodePortAddresses; health check servers listen on all");
        return wildcard;
    }
    chosen
}

fn wildcard_of(family: IpFamily) -> IpAddr {
    match family {
        IpFamily::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpFamily::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
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
        count_failure(&metrics, IpFamily::V4, &SyncError::new(Failure::Other, "add virtual server: EINVAL"));
        assert_eq!((value(&metrics, RESTORE), value(&metrics, PARTIAL)), (0.0, 0.0));
        count_failure(&metrics, IpFamily::V4, &SyncError::new(Failure::IptablesRestore { partial: false }, "restore failed"));
        assert_eq!((value(&metrics, RESTORE), value(&metrics, PARTIAL)), (1.0, 0.0));
        count_failure(&metrics, IpFamily::V4, &SyncError::new(Failure::IptablesRestore { partial: true }, "restore failed"));
        assert_eq!((value(&metrics, RESTORE), value(&metrics, PARTIAL)), (2.0, 1.0));
    }

    const NFT_SYNC: &str = "kubeproxy_sync_proxy_rules_nftables_sync_failures_total";
    const NFT_CLEANUP: &str = "kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total";

    #[test]
    fn nftables_failures_count_in_nftables_counters_only() {
        let metrics = Metrics::new(health::ProxyMode::Nftables);
        count_failure(&metrics, IpFamily::V4, &SyncError::new(Failure::Other, "cannot read addresses"));
        assert_eq!((value(&metrics, NFT_SYNC), value(&metrics, NFT_CLEANUP)), (0.0, 0.0));
        count_failure(&metrics, IpFamily::V4, &SyncError::new(Failure::NftablesSync, "transaction refused"));
        assert_eq!((value(&metrics, NFT_SYNC), value(&metrics, NFT_CLEANUP)), (1.0, 0.0));
        count_failure(&metrics, IpFamily::V4, &SyncError::new(Failure::NftablesCleanup, "delete chain: EBUSY"));
        assert_eq!((value(&metrics, NFT_SYNC), value(&metrics, NFT_CLEANUP)), (1.0, 1.0));
        assert!(!metrics.render().contains("iptables_restore_failures"));
    }
}
