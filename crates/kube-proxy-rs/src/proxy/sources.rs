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
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::task::JoinHandle;
use tracker::{ChangeCounts, Tracker};

/// The configured source of cluster state, opened: the file read once
/// or the API client built. Opening comes before anything touches the
/// kernel, so a bad `--manifests` or kubeconfig changes nothing.
pub enum Source {
    /// A manifests file (read and checked), re-read when it changes.
    Manifests(source::manifests::Watch),
    /// The API server, and how to list from it.
    Kube(kube::Client, WatchOptions),
}

/// What a source tells when the tracker changed.
#[derive(Clone)]
pub struct Changes {
    /// Node health: an update is now pending.
    pub health: ProxyHealth,
    /// The sync runner of each family served.
    pub handles: Vec<(IpFamily, runner::Handle)>,
    /// The change metrics, set from the tracker's counts after each event.
    pub metrics: Metrics,
}

impl Changes {
    fn tell(&self, event: SourceEvent, tracker: &Mutex<Tracker>) {
        let changed: Vec<IpFamily> = {
            let mut tracker = lock(tracker);
            record_change_counts(&self.metrics, tracker.take_change_counts());
            self.handles.iter().map(|(f, _)| *f).filter(|f| tracker.has_changes_of(*f)).collect()
        };
        match event {
            SourceEvent::InitialListDone => self.initial_state_complete(),
            SourceEvent::Changed => self.changed(&changed),
        }
    }

    /// Asks the runners of the families whose state changed for a sync
    /// (upstream's per-family proxiers queue only what concerns them).
    fn changed(&self, families: &[IpFamily]) {
        for (family, handle) in self.handles.iter().filter(|(f, _)| families.contains(f)) {
            self.health.queued_update(*family);
            handle.run();
        }
    }

    fn initial_state_complete(&self) {
        for (family, handle) in &self.handles {
            self.health.queued_update(*family);
            handle.ready();
        }
    }
}

impl Source {
    /// `--manifests` wins; otherwise the API server, located as upstream
    /// does (`--kubeconfig`, `--master`, `KUBECONFIG`, in-cluster).
    pub async fn open(config: &Config) -> anyhow::Result<Self> {
        match &config.manifests {
            Some(path) => Ok(Source::Manifests(
                source::manifests::watch(path, source::manifests::DEFAULT_POLL)?.releasing_with(crate::memory::release_freed),
            )),
            None => Ok(Source::Kube(source::kube::client(&client_settings(config)).await?, watch_options(config))),
        }
    }

    /// The host IPs of node `name` as upstream reads them at start-up
    /// (`GetNodeHostIPs`): from the manifests file, or one GET of the Node
    /// from the API server. Empty when the node or its addresses are not
    /// known (yet); the proxy then assumes IPv4, as upstream.
    pub async fn node_host_ips(&self, name: &str) -> Vec<IpAddr> {
        match self {
            Source::Manifests(watch) => manifests_node_host_ips(watch.initial(), name),
            Source::Kube(client, _) => kube_node_host_ips(client, name).await,
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
            Source::Kube(client, options) => tokio::spawn(source::kube::run(
                client,
                Arc::clone(&tracker),
                options,
                move |event| changes.tell(event, &tracker),
            )),
        }
    }
}

/// The host IPs of node `name` in a manifests file (the last copy of the
/// Node wins, as in the tracker); empty without it.
pub fn manifests_node_host_ips(checked: &source::manifests::Checked, name: &str) -> Vec<IpAddr> {
    let mut ips = Vec::new();
    checked.for_each_node(|node| {
        if node.metadata.name.as_deref() == Some(name) {
            ips = tracker::node_host_ips(&node);
        }
    });
    ips
}

/// The Node's host IPs from the API server; empty (logged) when it cannot
/// be read within a few seconds.
async fn kube_node_host_ips(client: &kube::Client, name: &str) -> Vec<IpAddr> {
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client.clone());
    match tokio::time::timeout(NODE_READ_TIMEOUT, nodes.get_opt(name)).await {
        Ok(Ok(Some(node))) => tracker::node_host_ips(&node),
        Ok(Ok(None)) => {
            tracing::info!(node = name, "the Node does not exist (yet): its IPs are unknown");
            Vec::new()
        }
        Ok(Err(err)) => {
            tracing::info!(node = name, %err, "cannot read the Node: its IPs are unknown");
            Vec::new()
        }
        Err(_) => {
            tracing::info!(node = name, "no answer reading the Node: its IPs are unknown");
            Vec::new()
        }
    }
}

/// How long start-up waits for the Node to decide the primary family.
const NODE_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Streaming lists unless `--feature-gates WatchListClient=false` (client-go's
/// gate, on by default since v1.35).
pub(crate) fn watch_options(config: &Config) -> WatchOptions {
    WatchOptions {
        streaming_list: config.feature_gates.get("WatchListClient").copied().unwrap_or(true),
        ..WatchOptions::default()
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

/// `family`'s state and changes for its sync; the pending-change gauges
/// follow the tracker (the primary family's snapshot takes them) and
/// events not told yet are counted. A family the tracker does not serve
/// gets the empty state.
pub fn take_snapshot(tracker: &Mutex<Tracker>, family: IpFamily, metrics: &Metrics) -> (Snapshot, ChangeSet) {
    let mut tracker = lock(tracker);
    let taken = tracker.snapshot_of(family).unwrap_or_default();
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
