//! The proxy's own health: were the rules of every IP family synced soon
//! enough after a change was queued, and is the node staying. Upstream's
//! `ProxyHealthServer` state; the HTTP side is in `node_health`.

use crate::clock::{Clock, SystemClock};
use model::IpFamily;
use crate::metrics::Metrics;
use model::NodeInfo;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

/// The taint the Cluster Autoscaler puts on a node it is about to delete;
/// a node carrying it answers 503 on `/healthz` so load balancers drain it.
pub const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";

/// Shared health state of the proxy: the sync loop reports queued and
/// applied updates per IP family, the node watcher reports whether the node
/// is being deleted, and the HTTP servers read it. Cheap to clone; clones
/// share state.
///
/// An IP family is unhealthy once an update has been queued for it and not
/// applied for `health_timeout` (upstream passes twice the sync period). A
/// family that never synced yet is healthy (starting up), as upstream.
#[derive(Clone)]
pub struct ProxyHealth {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Arc<dyn Clock>,
    health_timeout: Duration,
    metrics: Metrics,
    state: RwLock<State>,
}

struct State {
    last_updated: BTreeMap<IpFamily, SystemTime>,
    oldest_pending_queued: BTreeMap<IpFamily, SystemTime>,
    node_eligible: bool,
}

/// A snapshot of the proxy's health, as upstream's `Health()` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthReport {
    /// The most recent successful sync of any family; `None` before the
    /// first one (upstream prints Go's zero time then).
    pub last_updated: Option<SystemTime>,
    /// When the report was taken.
    pub current_time: SystemTime,
    /// Every family that has synced is within its timeout.
    pub healthy: bool,
    /// Per family that has synced at least once.
    pub status: BTreeMap<IpFamily, FamilyHealth>,
}

/// Health of one IP family's proxier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilyHealth {
    /// Its last successful sync.
    pub last_updated: SystemTime,
    /// No update has been pending for longer than the timeout.
    pub healthy: bool,
}

impl ProxyHealth {
    /// Health state on the real clock. `health_timeout` is how long a
    /// queued update may stay unapplied (upstream: 2 × `syncPeriod`).
    /// `metrics` gets the last-queued / last-synced timestamps and the
    /// `/healthz` and `/livez` answer counts.
    pub fn new(health_timeout: Duration, metrics: Metrics) -> Self {
        Self::with_clock(health_timeout, metrics, Arc::new(SystemClock))
    }

    /// Health state on the given clock (tests use a [`crate::ManualClock`]).
    pub fn with_clock(health_timeout: Duration, metrics: Metrics, clock: Arc<dyn Clock>) -> Self {
        let state = State {
            last_updated: BTreeMap::new(),
            oldest_pending_queued: BTreeMap::new(),
            // Eligible while starting up, until a node event says otherwise.
            node_eligible: true,
        };
        Self { inner: Arc::new(Inner { clock, health_timeout, metrics, state: RwLock::new(state) }) }
    }

    /// A change for `family` arrived and waits for the next sync (upstream's
    /// `QueuedUpdate` plus `sync_proxy_rules_last_queued_timestamp_seconds`).
    /// Only the oldest pending change counts for the timeout.
    pub fn queued_update(&self, family: IpFamily) {
        let now = self.inner.clock.now();
        self.write().oldest_pending_queued.entry(family).or_insert(now);
        self.inner.metrics.record_last_queued(family, now);
    }

    /// The rules of `family` now reflect everything queued (upstream's
    /// `Updated` plus `sync_proxy_rules_last_timestamp_seconds`).
    pub fn updated(&self, family: IpFamily) {
        let now = self.inner.clock.now();
        {
            let mut state = self.write();
            state.oldest_pending_queued.remove(&family);
            state.last_updated.insert(family, now);
        }
        self.inner.metrics.record_last_sync(family, now);
    }

    /// The node is being deleted (`deletionTimestamp` set or the
    /// [`TO_BE_DELETED_TAINT`] taint): `/healthz` answers 503, `/livez`
    /// does not care.
    pub fn set_node_deleting(&self, deleting: bool) {
        self.write().node_eligible = !deleting;
    }

    /// Takes the node's state from the tracker's view of it.
    pub fn sync_node(&self, node: &NodeInfo) {
        self.set_node_deleting(node.deleting);
    }

    /// The node is not being deleted.
    pub fn node_eligible(&self) -> bool {
        self.read().node_eligible
    }

    /// The proxier's health ignoring the node (what upstream's per-service
    /// health checks report as `serviceProxyHealthy`, and `/livez` uses).
    pub fn is_healthy(&self) -> bool {
        self.report().healthy
    }

    /// How long a queued update may wait.
    pub fn health_timeout(&self) -> Duration {
        self.inner.health_timeout
    }

    /// The full health picture at this moment (upstream's `Health()`).
    pub fn report(&self) -> HealthReport {
        let state = self.read();
        let current_time = self.inner.clock.now();
        let mut report = HealthReport {
            last_updated: state.last_updated.values().max().copied(),
            current_time,
            healthy: true,
            status: BTreeMap::new(),
        };
        for (&family, &last_updated) in &state.last_updated {
            let healthy = !self.is_late(state.oldest_pending_queued.get(&family), current_time);
            report.healthy &= healthy;
            report.status.insert(family, FamilyHealth { last_updated, healthy });
        }
        report
    }

    /// The current time on this state's clock.
    pub(crate) fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    /// Where `/healthz` and `/livez` answers are counted.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    fn is_late(&self, queued: Option<&SystemTime>, now: SystemTime) -> bool {
        queued.is_some_and(|queued| {
            now.duration_since(*queued).unwrap_or(Duration::ZERO) >= self.inner.health_timeout
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.inner.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for ProxyHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyHealth")
            .field("health_timeout", &self.inner.health_timeout)
            .field("node_eligible", &self.node_eligible())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::metrics::ProxyMode;
    use std::time::UNIX_EPOCH;

    fn health() -> (ProxyHealth, ManualClock) {
        let clock = ManualClock::new(UNIX_EPOCH + Duration::from_secs(1_000_000));
        let health = ProxyHealth::with_clock(
            Duration::from_secs(60),
            Metrics::new(ProxyMode::Iptables),
            Arc::new(clock.clone()),
        );
        (health, clock)
    }

    #[test]
    fn healthy_while_starting_up_even_with_a_queued_update() {
        let (health, clock) = health();
        health.queued_update(IpFamily::V4);
        clock.advance(Duration::from_secs(3600));
        let report = health.report();
        assert!(report.healthy);
        assert!(report.status.is_empty());
        assert_eq!(report.last_updated, None);
    }

    #[test]
    fn late_queued_update_makes_only_its_family_unhealthy() {
        let (health, clock) = health();
        health.updated(IpFamily::V4);
        health.updated(IpFamily::V6);
        let v6_synced = clock.now();
        clock.advance(Duration::from_secs(1));
        health.queued_update(IpFamily::V4);
        clock.advance(Duration::from_secs(59));
        assert!(health.is_healthy(), "59 s of a 60 s timeout is not late yet");
        clock.advance(Duration::from_secs(1));
        assert!(!health.report().status[&IpFamily::V4].healthy);
        assert!(!health.is_healthy());
        assert!(health.report().status[&IpFamily::V6].healthy);
        assert_eq!(health.report().status[&IpFamily::V6].last_updated, v6_synced);
    }

    #[test]
    fn only_the_oldest_queued_update_counts() {
        let (health, clock) = health();
        health.updated(IpFamily::V4);
        health.queued_update(IpFamily::V4);
        clock.advance(Duration::from_secs(50));
        health.queued_update(IpFamily::V4);
        assert!(health.is_healthy());
        clock.advance(Duration::from_secs(10));
        assert!(!health.is_healthy());
        health.updated(IpFamily::V4);
        assert!(health.is_healthy());
    }

    #[test]
    fn node_deletion_does_not_change_proxier_health() {
        let (health, _clock) = health();
        health.sync_node(&NodeInfo { deleting: true, ..NodeInfo::default() });
        assert!(!health.node_eligible());
        assert!(health.is_healthy());
        health.set_node_deleting(false);
        assert!(health.node_eligible());
    }
}
