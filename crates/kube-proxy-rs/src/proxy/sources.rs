//! Where the tracker's objects come from: the manifests file (`--manifests`)
//! or the API server (`--kubeconfig` / `--master` / in-cluster). Either way
//! the tracker is the only store, every change asks the runner for a sync,
//! and the first sync waits for a complete initial state.

use crate::config::Config;
use health::{IpFamily, ProxyHealth};
use source::SourceEvent;
use source::kube::{ClientSettings, WatchOptions};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::task::JoinHandle;
use tracker::Tracker;

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
}

impl Changes {
    fn tell(&self, event: SourceEvent) {
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
            Source::Manifests(watch) => tokio::spawn(source::manifests::run(watch, tracker, move |event| {
                changes.tell(event);
                // A read of the file leaves its text and decoding scratch freed: give it back.
                crate::memory::release_freed();
            })),
            Source::Kube(client) => tokio::spawn(source::kube::run(
                client,
                tracker,
                WatchOptions::default(),
                move |event| changes.tell(event),
            )),
        }
    }
}

fn client_settings(config: &Config) -> ClientSettings {
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
