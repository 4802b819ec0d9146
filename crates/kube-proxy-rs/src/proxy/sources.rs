//! Where the tracker's objects come from: the manifests file (`--manifests`)
//! or the API server (`--kubeconfig` / `--master` / in-cluster). Either way
//! the tracker is the only store, every change asks the runner for a sync,
//! and the first sync waits for a complete initial state.

use crate::config::Config;
use health::{IpFamily, ProxyHealth};
use source::kube::{ClientSettings, SourceEvent, WatchOptions};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::task::JoinHandle;
use tracker::Tracker;

/// The configured source of cluster state, opened: the file read once
/// or the API client built. Opening comes before anything touches the
/// kernel, so a bad `--manifests` or kubeconfig changes nothing.
pub enum Source {
    /// A manifests file, re-read when it changes.
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
            Source::Manifests(watch) => tokio::spawn(follow_manifests(watch, tracker, changes)),
            Source::Kube(client) => tokio::spawn(source::kube::run(
                client,
                tracker,
                WatchOptions::default(),
                move |event| match event {
                    SourceEvent::InitialListDone => changes.initial_state_complete(),
                    SourceEvent::Changed => changes.changed(),
                },
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

/// Feeds each state of the file to the tracker. The decoded objects are
/// dropped once the tracker has taken what it needs from them (at 10,000
/// services they are about 100 MiB).
async fn follow_manifests(watch: source::manifests::Watch, tracker: Arc<Mutex<Tracker>>, changes: Changes) {
    let source::manifests::Watch { initial, mut updates } = watch;
    lock(&tracker).replace_all(&initial.objects);
    drop(initial);
    changes.initial_state_complete();
    while let Some(parsed) = updates.recv().await {
        let changed = {
            let mut tracker = lock(&tracker);
            tracker.replace_all(&parsed.objects);
            tracker.has_changes()
        };
        if changed {
            changes.changed();
        }
    }
    tracing::warn!("the manifests watcher stopped; keeping the current rules");
}

/// Locks the tracker; a panic elsewhere cannot leave it half-updated in a
/// way that matters more than stopping the proxy would.
pub fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}
