//! Where the tracker's objects come from: the manifests file (`--manifests`)
//! or the API server (`--kubeconfig` / `--master` / in-cluster). Either way
//! the tracker is the only store, every change asks the runner for a sync,
//! and the first sync waits for a complete initial state. The change
//! metrics follow the tracker: counted after each event, pending until a
//! sync takes the snapshot.

use crate::config::Config;
use health::{IpFamily, Metrics, ProxyHealth};
use model::{ChangeSet, Snapshot};
use source::SourceEvent;
use source::kube::{ClientSettings, WatchOptions};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::task::JoinHandle;
use tracker::{ChangeCounts, Tracker};

/// The configured source of cluster state, opened: the file read once
/// or the API client built. Opening comes before anything touches the
/// kernel, so a bad `--manifests` or kubeconfig changes nothing.
pub enum Source {
    /// A manifests file (read and checked), re-read when it changes.
    Manifests(source::manifests::Watch),
    /// The API server.
    Kube(kube::Client),
}

/// What a source tells when the tracker changed.
#[derive(Clone)]
pub struct Changes {
    /// Node health: an update is now pending.
    pub health: ProxyHealth,
    /// The sync runner.
    pub handle: runner::Handle,
    /// The change metrics, set from the tracker's counts after each event.
    pub metrics: Metrics,
}

impl Changes {
    fn tell(&self, event: SourceEvent, tracker: &Mutex<Tracker>) {
        record_change_counts(&self.metrics, lock(tracker).take_change_counts());
        match event {
            SourceEvent::InitialListDone => self.initial_state_complete(),
            SourceEvent::Changed => self.changed(),
        }
    }

    fn changed(&self) {
        self.health.queued_update(IpFamily::V4);
        self.handle.run();
    }

    fn initial_state_complete(&self) {
        self.health.queued_update(IpFamily::V4);
        self.handle.ready();
    }
}

impl Source {
    /// `--manifests` wins; otherwise the API server, located as upstream
    /// does (`--kubeconfig`, `--master`, `KUBECONFIG`, in-cluster).
    pub async fn open(config: &Config) -> anyhow::Result<Self> {
        match &config.manifests {
            Some(path) => Ok(Source::Manifests(source::manifests::watch(path, source::manifests::DEFAULT_POLL)?)),
            None => Ok(Source::Kube(source::kube::client(&client_settings(config)).await?)),
        }
    }

    /// Feeds the tracker in a task until aborted; the runner's gate opens
    /// once the initial state is in.
    pub fn start(self, tracker: Arc<Mutex<Tracker>>, changes: Changes) -> JoinHandle<()> {
        match self {
            Source::Manifests(watch) => tokio::spawn(source::manifests::run(watch, Arc::clone(&tracker), move |event| {
                changes.tell(event, &tracker);
                // A read of the file leaves its text and decoding scratch freed: give it back.
                crate::memory::release_freed();
            })),
            Source::Kube(client) => tokio::spawn(source::kube::run(
                client,
                Arc::clone(&tracker),
                WatchOptions::default(),
                move |event| changes.tell(event, &tracker),
            )),
        }
    }
}

pub(crate) fn client_settings(config: &Config) -> ClientSettings {
    ClientSettings {
        kubeconfig: config.client.kubeconfig.clone(),
        master: config.client.master.clone(),
        qps: config.client.qps,
        burst: config.client.burst,
        content_type: config.client.content_type.clone(),
    }
}

/// Locks the tracker; a panic elsewhere cannot leave it half-updated in a
/// way that matters more than stopping the proxy would.
pub fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tracker's state and changes for a sync; the pending-change gauges
/// go back to 0 (the snapshot took them) and events not told yet are
/// counted.
pub fn take_snapshot(tracker: &Mutex<Tracker>, metrics: &Metrics) -> (Snapshot, ChangeSet) {
    let mut tracker = lock(tracker);
    let taken = tracker.snapshot();
    record_change_counts(metrics, tracker.take_change_counts());
    taken
}

/// `sync_proxy_rules_{service,endpoint}_changes_total` grow by the events
/// counted; the `_pending` gauges show what waits for the next sync.
fn record_change_counts(metrics: &Metrics, counts: ChangeCounts) {
    metrics.count_service_changes(counts.service_changes);
    metrics.count_endpoint_changes(counts.endpoint_changes);
    metrics.set_service_changes_pending(counts.service_changes_pending);
    metrics.set_endpoint_changes_pending(counts.endpoint_changes_pending);
}
