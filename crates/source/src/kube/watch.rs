//! The watchers: Services, EndpointSlices, this node's Node and the
//! ServiceCIDRs, each listed and watched by a [`Reflector`] (streaming
//! list from the API server's watch cache, as client-go's informers; a
//! resumed watch after a dropped connection, a re-list after 410 Gone),
//! feeding the shared tracker; failures are retried with backoff.

use super::backoff::{Backoff, Retry};
use super::kinds::Watched;
use super::reflector::{Failure, Reflector};
use super::relist::{Known, Step, lock};
use crate::SourceEvent;
use ::kube::Client;
use ::kube::runtime::utils::Backoff as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tracker::Tracker;

/// The label selector upstream kube-proxy lists Services and
/// EndpointSlices with (one informer factory for both; the labels are
/// sorted as Go's `labels.Selector.String()` prints them): objects of
/// services handled by another proxy, and of headless services, are never
/// sent to the proxy at all.
pub const LABEL_SELECTOR: &str =
    "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name";

/// What [`run`] lists and watches, as (API group, resource): the RBAC rules
/// a deployment must grant (`list` and `watch` on each; deploy/ is checked
/// against this in the binary's tests). Keep in step with [`run`].
pub const WATCHED_RESOURCES: [(&str, &str); 4] = [
    resource::<Service>(),
    resource::<EndpointSlice>(),
    resource::<Node>(),
    resource::<ServiceCIDR>(),
];

const fn resource<K: k8s_openapi::Resource>() -> (&'static str, &'static str) {
    (K::GROUP, K::URL_PATH_SEGMENT)
}

/// Tuning of the watchers.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Retry delays after a failed list or watch (client-go's reflector
    /// defaults; tests shorten them).
    pub backoff: Backoff,
    /// Lists by streaming list first (client-go's `WatchListClient`
    /// feature gate, on by default since v1.35; `--feature-gates
    /// WatchListClient=false` turns it off): one watch request answered
    /// from the API server's watch cache, objects decoded one at a time.
    /// Off, or when the server refuses it, a list at resourceVersion 0
    /// (also from the watch cache, in one response). See `reflector`.
    pub streaming_list: bool,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            backoff: Backoff::default(),
            streaming_list: true,
        }
    }
}

/// Watches Services, EndpointSlices, the tracker's own Node and the
/// ServiceCIDRs through `client` and keeps `tracker` equal to what the API server holds,
/// calling `on_event` as described on [`SourceEvent`]. Runs until the
/// future is dropped; it never gives up: an unreachable API server is
/// retried with `options.backoff`, and the tracker keeps its last state
/// meanwhile (so the node keeps its rules). A cluster without the
/// ServiceCIDR API (404 on its list) has no service CIDRs: one warning,
/// and ServiceCIDRs are not watched further. Neither Nodes nor
/// ServiceCIDRs hold up the first sync.
///
/// Spawn it: `tokio::spawn(source::kube::run(client, tracker, options, on_event))`.
pub async fn run<F>(
    client: Client,
    tracker: Arc<Mutex<Tracker>>,
    options: WatchOptions,
    on_event: F,
) where
    F: Fn(SourceEvent) + Send + Sync,
{
    let node_name = lock(&tracker).node_name().to_string();
    let owner = Owner {
        tracker: &tracker,
        on_event: &on_event,
        unlisted: AtomicUsize::new(2),
        backoff: options.backoff,
    };
    let streaming = options.streaming_list;
    let selected = || Some(LABEL_SELECTOR.to_string());
    let this_node = Some(format!("metadata.name={node_name}"));
    futures::join!(
        owner.follow(
            Reflector::<Service>::new(client.clone(), selected(), None, streaming),
            true
        ),
        owner.follow(
            Reflector::<EndpointSlice>::new(client.clone(), selected(), None, streaming),
            true
        ),
        owner.follow(
            Reflector::<Node>::new(client.clone(), None, this_node, streaming),
            false
        ),
        owner.follow(
            Reflector::<ServiceCIDR>::new(client, None, None, streaming),
            false
        ),
    );
}

/// What the watchers share.
struct Owner<'a, F> {
    tracker: &'a Mutex<Tracker>,
    on_event: &'a F,
    /// Kinds that gate the first sync and have not been listed yet.
    unlisted: AtomicUsize,
    backoff: Backoff,
}

impl<F: Fn(SourceEvent)> Owner<'_, F> {
    /// Runs one kind's watcher forever (a kind that [`Watched::MAY_BE_MISSING`]
    /// until the API server says it does not serve it). `gates_first_sync`:
    /// its first complete list counts towards [`SourceEvent::InitialListDone`].
    async fn follow<K: Watched>(&self, reflector: Reflector<K>, gates_first_sync: bool) {
        let mut known = Known::default();
        let mut retry = Retry::new(self.backoff);
        let mut events = reflector.into_stream().boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    retry.reset();
                    let step = known.apply(event, self.tracker);
                    self.report::<K>(step, gates_first_sync);
                }
                Err(err) if K::MAY_BE_MISSING && err.is_not_found() => {
                    tracing::warn!(
                        kind = K::PLURAL,
                        "the API server does not serve this kind (404); going on without it"
                    );
                    return;
                }
                Err(err) => {
                    log_failure::<K>(&err);
                    tokio::time::sleep(next_delay(&mut retry, &err)).await;
                }
            }
        }
    }

    fn report<K: Watched>(&self, step: Step, gates_first_sync: bool) {
        match step {
            Step::Quiet => {}
            Step::Applied { pending } => {
                if pending {
                    (self.on_event)(SourceEvent::Changed);
                }
            }
            Step::Listed {
                pending,
                first,
                objects,
                deleted,
            } => {
                tracing::info!(kind = K::PLURAL, objects, deleted, first, "listed");
                if pending {
                    (self.on_event)(SourceEvent::Changed);
                }
                if first && gates_first_sync && self.unlisted.fetch_sub(1, Ordering::AcqRel) == 1 {
                    tracing::info!("services and endpointslices listed; the first sync may run");
                    (self.on_event)(SourceEvent::InitialListDone);
                }
            }
        }
    }
}

/// How long to wait before the reflector's next step after `err`. An
/// expired watch (410 Gone) comes from a server that answers again: its
/// re-list waits only the first delay, as client-go's reflector (whose
/// connection retries back off separately from its re-lists), not the
/// delay an outage's failed connections had grown to (up to a minute of
/// a stale cache after the API server is back).
fn next_delay(retry: &mut Retry, err: &Failure) -> std::time::Duration {
    if err.is_expired() {
        retry.reset();
    }
    retry.next().unwrap_or_default()
}

/// One line per failure; the retry waits with backoff. An expired watch
/// (410 Gone) is routine: the reflector re-lists.
fn log_failure<K: Watched>(err: &Failure) {
    if err.is_expired() {
        tracing::info!(kind = K::PLURAL, "watch expired (410 Gone); re-listing");
    } else {
        tracing::warn!(kind = K::PLURAL, error = %err, "list/watch failed; retrying");
    }
}
