//! kube-proxy's `kubeproxy_*` Prometheus metrics: the same names, types,
//! help texts, labels and buckets as upstream, recorded by the sync loop
//! through [`Metrics`] and served on `--metrics-bind-address`.

mod labels;
mod nfacct;
mod server;
mod text;

use crate::error::HealthError;
use model::IpFamily;
use crate::gofmt::unix_seconds;
use labels::{CodeLabel, FamilyLabel, PolicyLabels, TableLabels};
use nfacct::NfacctCollector;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets, linear_buckets};
use prometheus_client::registry::Registry;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

pub use nfacct::NfacctReader;
pub use server::{METRICS_CONTENT_TYPE, bind_metrics, serve_metrics};
pub use text::render_prometheus_text;

/// The proxy mode, which decides the mode-specific metrics (upstream's
/// `RegisterMetrics(mode)`) and what `/proxyMode` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyMode {
    /// `iptables`
    Iptables,
    /// `ipvs`
    Ipvs,
    /// `nftables`
    Nftables,
}

impl ProxyMode {
    /// The mode's name as in `--proxy-mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProxyMode::Iptables => "iptables",
            ProxyMode::Ipvs => "ipvs",
            ProxyMode::Nftables => "nftables",
        }
    }
}

/// Whether a sync rewrote every service or only the changed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// Every service was written.
    Full,
    /// Only what changed was written (iptables mode's partial sync).
    Partial,
}

/// Which Local traffic policy has no local endpoints
/// (`traffic_policy` label of `sync_proxy_rules_no_local_endpoints_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrafficPolicy {
    /// `internalTrafficPolicy: Local`
    Internal,
    /// `externalTrafficPolicy: Local`
    External,
}

impl TrafficPolicy {
    /// The label value: `internal` or `external`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrafficPolicy::Internal => "internal",
            TrafficPolicy::External => "external",
        }
    }
}

type FamilyHistogram = Family<FamilyLabel, Histogram, fn() -> Histogram>;
type FamilyCounter = Family<FamilyLabel, Counter>;
type FamilyTimestamp = Family<FamilyLabel, Gauge<f64, AtomicU64>>;

/// Every kube-proxy metric, registered for one proxy mode. Cheap to clone;
/// clones record into the same registry.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    mode: ProxyMode,
    registry: Registry,
    sync_duration: FamilyHistogram,
    sync_full_duration: FamilyHistogram,
    sync_partial_duration: FamilyHistogram,
    last_timestamp: FamilyTimestamp,
    last_queued_timestamp: FamilyTimestamp,
    network_programming: FamilyHistogram,
    endpoint_changes_pending: Gauge,
    endpoint_changes: Counter,
    service_changes_pending: Gauge,
    service_changes: Counter,
    iptables_restore_failures: FamilyCounter,
    iptables_partial_restore_failures: FamilyCounter,
    iptables_rules_total: Family<TableLabels, Gauge>,
    iptables_rules_last: Family<TableLabels, Gauge>,
    nftables_sync_failures: FamilyCounter,
    nftables_cleanup_failures: FamilyCounter,
    no_local_endpoints: Family<PolicyLabels, Gauge>,
    healthz: Family<CodeLabel, Counter>,
    livez: Family<CodeLabel, Counter>,
    conntrack_deleted: FamilyCounter,
    conntrack_duration: FamilyHistogram,
    nfacct: Arc<NfacctCollector>,
}

/// `ExponentialBuckets(0.001, 2, 15)`: 1 ms to 16.384 s.
fn sync_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// Upstream's network programming buckets: 0.25 s, 0.5 s, 1..59 s,
/// 60..115 s by 5, 120..300 s by 30.
fn network_programming_buckets() -> Histogram {
    let buckets = linear_buckets(0.25, 0.25, 2)
        .chain(linear_buckets(1.0, 1.0, 59))
        .chain(linear_buckets(60.0, 5.0, 12))
        .chain(linear_buckets(120.0, 30.0, 7));
    Histogram::new(buckets)
}

impl Metrics {
    /// All metrics of `mode`, at zero.
    pub fn new(mode: ProxyMode) -> Self {
        let mut inner = Inner {
            mode,
            registry: Registry::with_prefix("kubeproxy"),
            sync_duration: Family::new_with_constructor(sync_buckets),
            sync_full_duration: Family::new_with_constructor(sync_buckets),
            sync_partial_duration: Family::new_with_constructor(sync_buckets),
            last_timestamp: Family::default(),
            last_queued_timestamp: Family::default(),
            network_programming: Family::new_with_constructor(network_programming_buckets),
            endpoint_changes_pending: Gauge::default(),
            endpoint_changes: Counter::default(),
            service_changes_pending: Gauge::default(),
            service_changes: Counter::default(),
            iptables_restore_failures: Family::default(),
            iptables_partial_restore_failures: Family::default(),
            iptables_rules_total: Family::default(),
            iptables_rules_last: Family::default(),
            nftables_sync_failures: Family::default(),
            nftables_cleanup_failures: Family::default(),
            no_local_endpoints: Family::default(),
            healthz: Family::default(),
            livez: Family::default(),
            conntrack_deleted: Family::default(),
            conntrack_duration: Family::new_with_constructor(sync_buckets),
            nfacct: Arc::new(NfacctCollector::default()),
        };
        inner.register_common();
        match mode {
            ProxyMode::Iptables => inner.register_iptables(),
            ProxyMode::Ipvs => inner.register_ipvs(),
            ProxyMode::Nftables => inner.register_nftables(),
        }
        Self { inner: Arc::new(inner) }
    }

    /// The mode these metrics were registered for.
    pub fn mode(&self) -> ProxyMode {
        self.inner.mode
    }

    /// One sync of `family`'s rules took `took`:
    /// `sync_proxy_rules_duration_seconds` and the full/partial histogram.
    pub fn record_sync(&self, family: IpFamily, kind: SyncKind, took: Duration) {
        let label = FamilyLabel::new(family);
        let seconds = took.as_secs_f64();
        self.inner.sync_duration.get_or_create(&label).observe(seconds);
        let by_kind = match kind {
            SyncKind::Full => &self.inner.sync_full_duration,
            SyncKind::Partial => &self.inner.sync_partial_duration,
        };
        by_kind.get_or_create(&label).observe(seconds);
    }

    /// `sync_proxy_rules_last_timestamp_seconds`: `family`'s rules were
    /// successfully synced at `at` ([`crate::ProxyHealth::updated`] calls this).
    pub fn record_last_sync(&self, family: IpFamily, at: SystemTime) {
        self.inner.last_timestamp.get_or_create(&FamilyLabel::new(family)).set(unix_seconds(at));
    }

    /// `sync_proxy_rules_last_queued_timestamp_seconds`: a sync of
    /// `family` was queued at `at` ([`crate::ProxyHealth::queued_update`]
    /// calls this).
    pub fn record_last_queued(&self, family: IpFamily, at: SystemTime) {
        self.inner.last_queued_timestamp.get_or_create(&FamilyLabel::new(family)).set(unix_seconds(at));
    }

    /// `network_programming_duration_seconds`: a change triggered
    /// `latency` ago (EndpointSlice trigger time) is now in the rules.
    pub fn record_network_programming(&self, family: IpFamily, latency: Duration) {
        self.inner.network_programming.get_or_create(&FamilyLabel::new(family)).observe(latency.as_secs_f64());
    }

    /// `sync_proxy_rules_service_changes_total` += `n`.
    pub fn count_service_changes(&self, n: u64) {
        self.inner.service_changes.inc_by(n);
    }

    /// `sync_proxy_rules_endpoint_changes_total` += `n`.
    pub fn count_endpoint_changes(&self, n: u64) {
        self.inner.endpoint_changes.inc_by(n);
    }

    /// `sync_proxy_rules_service_changes_pending`.
    pub fn set_service_changes_pending(&self, n: usize) {
        self.inner.service_changes_pending.set(to_i64(n));
    }

    /// `sync_proxy_rules_endpoint_changes_pending`.
    pub fn set_endpoint_changes_pending(&self, n: usize) {
        self.inner.endpoint_changes_pending.set(to_i64(n));
    }

    /// iptables mode: rules of ours in `table` (`filter`, `nat`) after the
    /// sync (`sync_proxy_rules_iptables_total`) and rules written by it
    /// (`sync_proxy_rules_iptables_last`).
    pub fn set_iptables_rules(&self, family: IpFamily, table: &str, total: usize, last_sync: usize) {
        let labels = TableLabels::new(family, table);
        self.inner.iptables_rules_total.get_or_create(&labels).set(to_i64(total));
        self.inner.iptables_rules_last.get_or_create(&labels).set(to_i64(last_sync));
    }

    /// `sync_proxy_rules_iptables_restore_failures_total` (iptables, ipvs).
    pub fn count_iptables_restore_failure(&self, family: IpFamily) {
        self.inner.iptables_restore_failures.get_or_create(&FamilyLabel::new(family)).inc();
    }

    /// `sync_proxy_rules_iptables_partial_restore_failures_total`: a
    /// partial restore failed and a full one follows.
    pub fn count_iptables_partial_restore_failure(&self, family: IpFamily) {
        self.inner.iptables_partial_restore_failures.get_or_create(&FamilyLabel::new(family)).inc();
    }

    /// `sync_proxy_rules_nftables_sync_failures_total`.
    pub fn count_nftables_sync_failure(&self, family: IpFamily) {
        self.inner.nftables_sync_failures.get_or_create(&FamilyLabel::new(family)).inc();
    }

    /// `sync_proxy_rules_nftables_cleanup_failures_total`.
    pub fn count_nftables_cleanup_failure(&self, family: IpFamily) {
        self.inner.nftables_cleanup_failures.get_or_create(&FamilyLabel::new(family)).inc();
    }

    /// `sync_proxy_rules_no_local_endpoints_total`: services with a Local
    /// `policy` and no local endpoint, as of the last sync. Set every
    /// combination each sync (upstream prints zeros too).
    pub fn set_no_local_endpoints(&self, family: IpFamily, policy: TrafficPolicy, services: usize) {
        let labels = PolicyLabels::new(family, policy);
        self.inner.no_local_endpoints.get_or_create(&labels).set(to_i64(services));
    }

    /// `conntrack_reconciler_sync_duration_seconds` and
    /// `conntrack_reconciler_deleted_entries_total`.
    pub fn record_conntrack_reconcile(&self, family: IpFamily, took: Duration, deleted: u64) {
        let label = FamilyLabel::new(family);
        self.inner.conntrack_duration.get_or_create(&label).observe(took.as_secs_f64());
        self.inner.conntrack_deleted.get_or_create(&label).inc_by(deleted);
    }

    /// `proxy_healthz_total{code}`: one `/healthz` answer.
    pub fn count_healthz(&self, code: u16) {
        self.inner.healthz.get_or_create(&CodeLabel::new(code)).inc();
    }

    /// `proxy_livez_total{code}`: one `/livez` answer.
    pub fn count_livez(&self, code: u16) {
        self.inner.livez.get_or_create(&CodeLabel::new(code)).inc();
    }

    /// Where iptables mode reads its nfacct packet counters at scrape time
    /// (`ct_state_invalid_dropped_pkts`, `localhost_nps_accepted_pkts`);
    /// a counter the reader cannot read is left out, as upstream does.
    pub fn set_nfacct_reader(&self, reader: NfacctReader) {
        self.inner.nfacct.set_reader(reader);
    }

    /// The scrape: every metric with a value, in the Prometheus text format
    /// upstream serves.
    pub fn render(&self) -> Result<String, HealthError> {
        let mut openmetrics = String::new();
        prometheus_client::encoding::text::encode(&mut openmetrics, &self.inner.registry)
            .map_err(HealthError::MetricsEncode)?;
        Ok(render_prometheus_text(&openmetrics))
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").field("mode", &self.inner.mode).finish_non_exhaustive()
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Help texts carry upstream's stability prefix.
fn help(text: &str) -> String {
    format!("[ALPHA] {text}")
}

impl Inner {
    /// Metrics of every mode.
    fn register_common(&mut self) {
        let r = &mut self.registry;
        r.register("sync_proxy_rules_duration_seconds", help("SyncProxyRules latency in seconds"), self.sync_duration.clone());
        r.register(
            "sync_proxy_rules_last_queued_timestamp_seconds",
            help("The last time a sync of proxy rules was queued"),
            self.last_queued_timestamp.clone(),
        );
        r.register(
            "sync_proxy_rules_last_timestamp_seconds",
            help("The last time proxy rules were successfully synced"),
            self.last_timestamp.clone(),
        );
        r.register(
            "sync_proxy_rules_endpoint_changes_pending",
            help("Pending proxy rules Endpoint changes"),
            self.endpoint_changes_pending.clone(),
        );
        r.register(
            "sync_proxy_rules_endpoint_changes",
            help("Cumulative proxy rules Endpoint changes"),
            self.endpoint_changes.clone(),
        );
        r.register(
            "sync_proxy_rules_service_changes_pending",
            help("Pending proxy rules Service changes"),
            self.service_changes_pending.clone(),
        );
        r.register(
            "sync_proxy_rules_service_changes",
            help("Cumulative proxy rules Service changes"),
            self.service_changes.clone(),
        );
        r.register("proxy_healthz", help("Cumulative proxy healthz HTTP status"), self.healthz.clone());
        r.register("proxy_livez", help("Cumulative proxy livez HTTP status"), self.livez.clone());
        r.register(
            "network_programming_duration_seconds",
            help("In Cluster Network Programming Latency in seconds"),
            self.network_programming.clone(),
        );
        r.register(
            "sync_proxy_rules_no_local_endpoints_total",
            help("Number of services with a Local traffic policy and no endpoints"),
            self.no_local_endpoints.clone(),
        );
        r.register(
            "conntrack_reconciler_deleted_entries",
            help("Cumulative conntrack flows deleted by conntrack reconciler"),
            self.conntrack_deleted.clone(),
        );
        r.register(
            "conntrack_reconciler_sync_duration_seconds",
            help("ReconcileConntrackFlowsLatency latency in seconds"),
            self.conntrack_duration.clone(),
        );
    }

    /// Full and partial sync histograms (iptables and nftables modes).
    fn register_sync_kinds(&mut self) {
        let r = &mut self.registry;
        r.register(
            "sync_full_proxy_rules_duration_seconds",
            help("SyncProxyRules latency in seconds for full resyncs"),
            self.sync_full_duration.clone(),
        );
        r.register(
            "sync_partial_proxy_rules_duration_seconds",
            help("SyncProxyRules latency in seconds for partial resyncs"),
            self.sync_partial_duration.clone(),
        );
    }

    fn register_restore_failures(&mut self) {
        self.registry.register(
            "sync_proxy_rules_iptables_restore_failures",
            help("Cumulative proxy iptables restore failures"),
            self.iptables_restore_failures.clone(),
        );
    }

    fn register_iptables(&mut self) {
        self.register_sync_kinds();
        self.register_restore_failures();
        let r = &mut self.registry;
        r.register(
            "sync_proxy_rules_iptables_partial_restore_failures",
            help("Cumulative proxy iptables partial restore failures"),
            self.iptables_partial_restore_failures.clone(),
        );
        r.register(
            "sync_proxy_rules_iptables_total",
            help("Total number of iptables rules owned by kube-proxy"),
            self.iptables_rules_total.clone(),
        );
        r.register(
            "sync_proxy_rules_iptables_last",
            help("Number of iptables rules written by kube-proxy in last sync"),
            self.iptables_rules_last.clone(),
        );
        r.register_collector(Box::new(self.nfacct.clone()));
    }

    fn register_ipvs(&mut self) {
        self.register_restore_failures();
    }

    fn register_nftables(&mut self) {
        self.register_sync_kinds();
        let r = &mut self.registry;
        r.register(
            "sync_proxy_rules_nftables_sync_failures",
            help("Cumulative proxy nftables sync failures"),
            self.nftables_sync_failures.clone(),
        );
        r.register(
            "sync_proxy_rules_nftables_cleanup_failures",
            help("Cumulative proxy nftables cleanup failures"),
            self.nftables_cleanup_failures.clone(),
        );
    }
}
