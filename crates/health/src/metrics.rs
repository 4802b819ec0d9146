//! kube-proxy's `kubeproxy_*` Prometheus metrics: the same names, types,
//! help texts, labels and buckets as upstream, recorded by the sync loop
//! through [`Metrics`] and served on `--metrics-bind-address`.

mod connections;
mod family;
mod labels;
mod nfacct;
mod server;
mod text;
mod values;

use crate::gofmt::unix_seconds;
use connections::ConnectionsCollector;
use family::Family;
use labels::Labels;
use model::IpFamily;
use nfacct::NfacctCollector;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use text::Exposition;
use values::{Counter, Gauge, Histogram, exponential_buckets, linear_buckets};

pub use connections::{ConnectionsReader, PortConnections};
pub use nfacct::NfacctReader;
pub use server::{METRICS_CONTENT_TYPE, bind_metrics, serve_metrics};

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
    /// `userspace`
    Userspace,
}

impl ProxyMode {
    /// The mode's name as in `--proxy-mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProxyMode::Iptables => "iptables",
            ProxyMode::Ipvs => "ipvs",
            ProxyMode::Nftables => "nftables",
            ProxyMode::Userspace => "userspace",
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

/// Every kube-proxy metric, registered for one proxy mode. Cheap to clone;
/// clones record into the same metrics.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    mode: ProxyMode,
    sync_duration: Family<Histogram>,
    sync_full_duration: Family<Histogram>,
    sync_partial_duration: Family<Histogram>,
    last_timestamp: Family<Gauge>,
    last_queued_timestamp: Family<Gauge>,
    network_programming: Family<Histogram>,
    endpoint_changes_pending: Family<Gauge>,
    endpoint_changes: Family<Counter>,
    service_changes_pending: Family<Gauge>,
    service_changes: Family<Counter>,
    iptables_restore_failures: Family<Counter>,
    iptables_partial_restore_failures: Family<Counter>,
    iptables_rules_total: Family<Gauge>,
    iptables_rules_last: Family<Gauge>,
    nftables_sync_failures: Family<Counter>,
    nftables_cleanup_failures: Family<Counter>,
    no_local_endpoints: Family<Gauge>,
    healthz: Family<Counter>,
    livez: Family<Counter>,
    conntrack_deleted: Family<Counter>,
    conntrack_duration: Family<Histogram>,
    nfacct: NfacctCollector,
    connections: ConnectionsCollector,
}

/// `ExponentialBuckets(0.001, 2, 15)`: 1 ms to 16.384 s.
fn sync_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// Upstream's network programming buckets: 0.25 s, 0.5 s, 1..59 s,
/// 60..115 s by 5, 120..300 s by 30.
fn network_programming_buckets() -> Histogram {
    let mut buckets = linear_buckets(0.25, 0.25, 2);
    buckets.extend(linear_buckets(1.0, 1.0, 59));
    buckets.extend(linear_buckets(60.0, 5.0, 12));
    buckets.extend(linear_buckets(120.0, 30.0, 7));
    Histogram::new(buckets)
}

impl Metrics {
    /// All metrics of `mode`, at zero.
    pub fn new(mode: ProxyMode) -> Self {
        let inner = Inner {
            mode,
            sync_duration: Family::with_constructor(sync_buckets),
            sync_full_duration: Family::with_constructor(sync_buckets),
            sync_partial_duration: Family::with_constructor(sync_buckets),
            last_timestamp: Family::default(),
            last_queued_timestamp: Family::default(),
            network_programming: Family::with_constructor(network_programming_buckets),
            endpoint_changes_pending: Family::single(),
            endpoint_changes: Family::single(),
            service_changes_pending: Family::single(),
            service_changes: Family::single(),
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
            conntrack_duration: Family::with_constructor(sync_buckets),
            nfacct: NfacctCollector::default(),
            connections: ConnectionsCollector::default(),
        };
        Self { inner: Arc::new(inner) }
    }

    /// The mode these metrics were registered for.
    pub fn mode(&self) -> ProxyMode {
        self.inner.mode
    }

    /// One sync of `family`'s rules took `took`:
    /// `sync_proxy_rules_duration_seconds` and the full/partial histogram.
    pub fn record_sync(&self, family: IpFamily, kind: SyncKind, took: Duration) {
        let seconds = took.as_secs_f64();
        self.inner.sync_duration.update(Labels::family(family), |h| h.observe(seconds));
        let by_kind = match kind {
            SyncKind::Full => &self.inner.sync_full_duration,
            SyncKind::Partial => &self.inner.sync_partial_duration,
        };
        by_kind.update(Labels::family(family), |h| h.observe(seconds));
    }

    /// `sync_proxy_rules_last_timestamp_seconds`: `family`'s rules were
    /// successfully synced at `at` ([`crate::ProxyHealth::updated`] calls this).
    pub fn record_last_sync(&self, family: IpFamily, at: SystemTime) {
        self.inner.last_timestamp.update(Labels::family(family), |g| g.set(unix_seconds(at)));
    }

    /// `sync_proxy_rules_last_queued_timestamp_seconds`: a sync of
    /// `family` was queued at `at` ([`crate::ProxyHealth::queued_update`]
    /// calls this).
    pub fn record_last_queued(&self, family: IpFamily, at: SystemTime) {
        self.inner.last_queued_timestamp.update(Labels::family(family), |g| g.set(unix_seconds(at)));
    }

    /// `network_programming_duration_seconds`: a change triggered
    /// `latency` ago (EndpointSlice trigger time) is now in the rules.
    pub fn record_network_programming(&self, family: IpFamily, latency: Duration) {
        self.inner.network_programming.update(Labels::family(family), |h| h.observe(latency.as_secs_f64()));
    }

    /// `sync_proxy_rules_service_changes_total` += `n`.
    pub fn count_service_changes(&self, n: u64) {
        self.inner.service_changes.update(Labels::none(), |c| c.inc_by(n));
    }

    /// `sync_proxy_rules_endpoint_changes_total` += `n`.
    pub fn count_endpoint_changes(&self, n: u64) {
        self.inner.endpoint_changes.update(Labels::none(), |c| c.inc_by(n));
    }

    /// `sync_proxy_rules_service_changes_pending`.
    pub fn set_service_changes_pending(&self, n: usize) {
        self.inner.service_changes_pending.update(Labels::none(), |g| g.set(n as f64));
    }

    /// `sync_proxy_rules_endpoint_changes_pending`.
    pub fn set_endpoint_changes_pending(&self, n: usize) {
        self.inner.endpoint_changes_pending.update(Labels::none(), |g| g.set(n as f64));
    }

    /// iptables mode: rules of ours in `table` (`filter`, `nat`) after the
    /// sync (`sync_proxy_rules_iptables_total`) and rules written by it
    /// (`sync_proxy_rules_iptables_last`).
    pub fn set_iptables_rules(&self, family: IpFamily, table: &str, total: usize, last_sync: usize) {
        self.inner.iptables_rules_total.update(Labels::table(family, table), |g| g.set(total as f64));
        self.inner.iptables_rules_last.update(Labels::table(family, table), |g| g.set(last_sync as f64));
    }

    /// `sync_proxy_rules_iptables_restore_failures_total` (iptables, ipvs).
    pub fn count_iptables_restore_failure(&self, family: IpFamily) {
        self.inner.iptables_restore_failures.update(Labels::family(family), |c| c.inc_by(1));
    }

    /// `sync_proxy_rules_iptables_partial_restore_failures_total`: a
    /// partial restore failed and a full one follows.
    pub fn count_iptables_partial_restore_failure(&self, family: IpFamily) {
        self.inner.iptables_partial_restore_failures.update(Labels::family(family), |c| c.inc_by(1));
    }

    /// `sync_proxy_rules_nftables_sync_failures_total`.
    pub fn count_nftables_sync_failure(&self, family: IpFamily) {
        self.inner.nftables_sync_failures.update(Labels::family(family), |c| c.inc_by(1));
    }

    /// `sync_proxy_rules_nftables_cleanup_failures_total`.
    pub fn count_nftables_cleanup_failure(&self, family: IpFamily) {
        self.inner.nftables_cleanup_failures.update(Labels::family(family), |c| c.inc_by(1));
    }

    /// `sync_proxy_rules_no_local_endpoints_total`: services with a Local
    /// `policy` and no local endpoint, as of the last sync. Set every
    /// combination each sync (upstream prints zeros too).
    pub fn set_no_local_endpoints(&self, family: IpFamily, policy: TrafficPolicy, services: usize) {
        self.inner.no_local_endpoints.update(Labels::policy(family, policy), |g| g.set(services as f64));
    }

    /// `conntrack_reconciler_sync_duration_seconds` and
    /// `conntrack_reconciler_deleted_entries_total`.
    pub fn record_conntrack_reconcile(&self, family: IpFamily, took: Duration, deleted: u64) {
        self.inner.conntrack_duration.update(Labels::family(family), |h| h.observe(took.as_secs_f64()));
        self.inner.conntrack_deleted.update(Labels::family(family), |c| c.inc_by(deleted));
    }

    /// `proxy_healthz_total{code}`: one `/healthz` answer.
    pub fn count_healthz(&self, code: u16) {
        self.inner.healthz.update(Labels::code(code), |c| c.inc_by(1));
    }

    /// `proxy_livez_total{code}`: one `/livez` answer.
    pub fn count_livez(&self, code: u16) {
        self.inner.livez.update(Labels::code(code), |c| c.inc_by(1));
    }

    /// Where iptables mode reads its nfacct packet counters at scrape time
    /// (`ct_state_invalid_dropped_pkts`, `localhost_nps_accepted_pkts`);
    /// a counter the reader cannot read is left out, as upstream does.
    pub fn set_nfacct_reader(&self, reader: NfacctReader) {
        self.inner.nfacct.set_reader(reader);
    }

    /// Where userspace mode reads its connection counts per service port
    /// at scrape time (`kubeproxy_userspace_connections_total`).
    pub fn set_connections_reader(&self, reader: ConnectionsReader) {
        self.inner.connections.set_reader(reader);
    }

    /// The scrape: every metric of the mode with a value, in the
    /// Prometheus text format upstream serves.
    pub fn render(&self) -> String {
        let mut exposition = Exposition::default();
        self.inner.expose_common(&mut exposition);
        match self.inner.mode {
            ProxyMode::Iptables => self.inner.expose_iptables(&mut exposition),
            ProxyMode::Ipvs => self.inner.expose_restore_failures(&mut exposition),
            ProxyMode::Nftables => self.inner.expose_nftables(&mut exposition),
            ProxyMode::Userspace => {
                self.inner.expose_restore_failures(&mut exposition);
                self.inner.connections.expose(&mut exposition);
            }
        }
        exposition.finish()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").field("mode", &self.inner.mode).finish_non_exhaustive()
    }
}

impl Inner {
    /// Metrics of every mode.
    fn expose_common(&self, e: &mut Exposition) {
        self.sync_duration.expose(e, "kubeproxy_sync_proxy_rules_duration_seconds", "[ALPHA] SyncProxyRules latency in seconds");
        self.last_queued_timestamp.expose(
            e,
            "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
            "[ALPHA] The last time a sync of proxy rules was queued",
        );
        self.last_timestamp.expose(
            e,
            "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
            "[ALPHA] The last time proxy rules were successfully synced",
        );
        self.endpoint_changes_pending.expose(
            e,
            "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
            "[ALPHA] Pending proxy rules Endpoint changes",
        );
        self.endpoint_changes.expose(
            e,
            "kubeproxy_sync_proxy_rules_endpoint_changes_total",
            "[ALPHA] Cumulative proxy rules Endpoint changes",
        );
        self.service_changes_pending.expose(
            e,
            "kubeproxy_sync_proxy_rules_service_changes_pending",
            "[ALPHA] Pending proxy rules Service changes",
        );
        self.service_changes.expose(
            e,
            "kubeproxy_sync_proxy_rules_service_changes_total",
            "[ALPHA] Cumulative proxy rules Service changes",
        );
        self.healthz.expose(e, "kubeproxy_proxy_healthz_total", "[ALPHA] Cumulative proxy healthz HTTP status");
        self.livez.expose(e, "kubeproxy_proxy_livez_total", "[ALPHA] Cumulative proxy livez HTTP status");
        self.network_programming.expose(
            e,
            "kubeproxy_network_programming_duration_seconds",
            "[ALPHA] In Cluster Network Programming Latency in seconds",
        );
        self.no_local_endpoints.expose(
            e,
            "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
            "[ALPHA] Number of services with a Local traffic policy and no endpoints",
        );
        self.conntrack_deleted.expose(
            e,
            "kubeproxy_conntrack_reconciler_deleted_entries_total",
            "[ALPHA] Cumulative conntrack flows deleted by conntrack reconciler",
        );
        self.conntrack_duration.expose(
            e,
            "kubeproxy_conntrack_reconciler_sync_duration_seconds",
            "[ALPHA] ReconcileConntrackFlowsLatency latency in seconds",
        );
    }

    /// Full and partial sync histograms (iptables and nftables modes).
    fn expose_sync_kinds(&self, e: &mut Exposition) {
        self.sync_full_duration.expose(
            e,
            "kubeproxy_sync_full_proxy_rules_duration_seconds",
            "[ALPHA] SyncProxyRules latency in seconds for full resyncs",
        );
        self.sync_partial_duration.expose(
            e,
            "kubeproxy_sync_partial_proxy_rules_duration_seconds",
            "[ALPHA] SyncProxyRules latency in seconds for partial resyncs",
        );
    }

    /// iptables-restore failures (iptables and ipvs modes).
    fn expose_restore_failures(&self, e: &mut Exposition) {
        self.iptables_restore_failures.expose(
            e,
            "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
            "[ALPHA] Cumulative proxy iptables restore failures",
        );
    }

    fn expose_iptables(&self, e: &mut Exposition) {
        self.expose_sync_kinds(e);
        self.expose_restore_failures(e);
        self.iptables_partial_restore_failures.expose(
            e,
            "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total",
            "[ALPHA] Cumulative proxy iptables partial restore failures",
        );
        self.iptables_rules_total.expose(
            e,
            "kubeproxy_sync_proxy_rules_iptables_total",
            "[ALPHA] Total number of iptables rules owned by kube-proxy",
        );
        self.iptables_rules_last.expose(
            e,
            "kubeproxy_sync_proxy_rules_iptables_last",
            "[ALPHA] Number of iptables rules written by kube-proxy in last sync",
        );
        self.nfacct.expose(e);
    }

    fn expose_nftables(&self, e: &mut Exposition) {
        self.expose_sync_kinds(e);
        self.nftables_sync_failures.expose(
            e,
            "kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
            "[ALPHA] Cumulative proxy nftables sync failures",
        );
        self.nftables_cleanup_failures.expose(
            e,
            "kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total",
            "[ALPHA] Cumulative proxy nftables cleanup failures",
        );
    }
}
