//! Listing and watching one kind the way client-go's reflector does in
//! v1.36 (the `WatchListClient` gate is on by default since v1.35), so the
//! API server answers from its watch cache, never with paginated
//! consistent reads of etcd:
//!
//! 1. **Streaming list** (`watch=true&sendInitialEvents=true&
//!    resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`, from the
//!    last resource version seen, none at first): the server sends every
//!    object as `ADDED`, then a `BOOKMARK` annotated
//!    `k8s.io/initial-events-end: "true"`; the same stream then carries the
//!    changes. One request per list.
//! 2. **Fallback**, when the server refuses the streaming list (an API
//!    server without the `WatchList` feature answers 4xx), or its stream
//!    closes within a second with nothing sent: a plain list at
//!    `resourceVersion=0` (`limit=500`, which the watch cache ignores; the
//!    `continue` pages of a server without one are followed), or at the last
//!    resource version seen without a limit, then a watch from the list's
//!    version. A 410 Gone or "too large resource version" on such a list
//!    is retried at once with no version (a consistent read), as upstream.
//!
//! A re-list (after a watch answered 410 Gone, or any other watch error)
//! tries the streaming list again, as each of client-go's `ListAndWatch`
//! rounds does. A watch that simply ends resumes from the last version
//! (objects or bookmarks), without a re-list.
//!
//! Events: [`Event::Init`], one [`Event::InitApply`] per listed object,
//! [`Event::InitDone`] once the list is whole (the end bookmark, or the last
//! page), then [`Event::Apply`] / [`Event::Delete`]. A list that breaks
//! off never sends `InitDone`: the next attempt starts with `Init` again,
//! so a partial list is never taken for the whole state. Errors are
//! returned as items; the caller waits (backoff) before polling again.
//!
//! Deviations, on purpose: a watch that closes within a second with
//! nothing sent is retried after the backoff rather than answered with a
//! re-list, and an interrupted streaming list is retried after the
//! backoff too (client-go retries at once).

use super::backoff::random_fraction;
use crate::lenient::{Decoded, ReadFields};
use ::kube::Client;
use ::kube::api::WatchEvent;
use ::kube::core::{ObjectList, Resource};
use ::kube::runtime::watcher::Event;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt as _};
use std::fmt::Debug;
use std::time::Duration;
use tokio::time::Instant;

/// client-go's pager page size, sent with lists at version 0 or none.
const PAGE_SIZE: u32 = 500;

/// client-go's `minWatchTimeout`: every watch asks the server to end it
/// after a random time between this and twice this, spreading reconnects.
const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// Watches from the same version that end with nothing sent, in a row,
/// before the reflector lists afresh rather than watching from there again.
const STUCK_LIMIT: u32 = 3;

/// A stream silent for its requested timeout plus this is taken as dead.
const IDLE_GRACE: Duration = Duration::from_secs(5);

/// The annotation of the bookmark that ends a streaming list's objects.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Why a list or watch did not go on; the caller logs it and backs off.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// A list request (or one of its pages) failed.
    #[error("list failed: {0}")]
    List(#[source] ::kube::Error),
    /// A watch (or streaming list) request could not be opened.
    #[error("watch failed: {0}")]
    Watch(#[source] ::kube::Error),
    /// The server ended a watch with an error status (410 Gone: the
    /// version watched from is no longer in its history).
    #[error("watch ended with {} {}: {}", .0.code, .0.reason, .0.message)]
    Status(Box<::kube::core::Status>),
    /// A streaming list's stream ended before its end bookmark.
    #[error("the streaming list ended before all objects were sent")]
    Interrupted,
    /// A watch ended within a second without sending anything.
    #[error("the watch ended within a second without an event")]
    VeryShortWatch,
    /// Watches from one resource version kept ending at once without an event:
    /// a fresh list follows instead of another watch from there.
    #[error(
        "{STUCK_LIMIT} watches from resourceVersion {0} in a row ended without an event; listing afresh"
    )]
    Stuck(String),
}

impl Failure {
    /// The server answered 404: it does not serve the kind.
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, Failure::List(::kube::Error::Api(status)) if status.code == 404)
    }

    /// The watch expired (410 Gone): a re-list follows.
    pub(crate) fn is_expired(&self) -> bool {
        matches!(self, Failure::Status(status) if status.code == 410)
    }
}

type Events<K> = BoxStream<'static, Result<WatchEvent<Decoded<K>>, ::kube::Error>>;

/// Where the reflector stands.
enum State<K> {
    /// A (re-)list is due: the streaming list first.
    Start,
    /// The streaming list was refused: a plain list.
    List,
    /// A list's page being handed out.
    Paging {
        items: std::vec::IntoIter<Decoded<K>>,
        next: Option<String>,
        version: String,
    },
    /// A streaming list before its end bookmark.
    Streaming {
        events: Events<K>,
        opened: Instant,
        seen: usize,
    },
    /// Listed: a watch from the last version is due.
    Rewatch,
    /// Watching.
    Watching {
        events: Events<K>,
        opened: Instant,
        seen: usize,
    },
}

/// Lists and watches one kind (all namespaces) with optional selectors.
pub(crate) struct Reflector<K> {
    client: Client,
    path: String,
    labels: Option<String>,
    fields: Option<String>,
    streaming: bool,
    /// client-go's `lastSyncResourceVersion`.
    last_version: String,
    /// client-go's `isLastSyncResourceVersionUnavailable`.
    version_unavailable: bool,
    /// client-go's `paginatedResult`: a list at version 0 came in pages
    /// (no watch cache), so later lists page too.
    paginated: bool,
    /// Watches in a row that ended within a second with nothing sent.
    empty_watches: u32,
    state: State<K>,
}

/// What one step produced: an item for the stream, or nothing yet.
type Step<K> = Option<Result<Event<Decoded<K>>, Failure>>;

impl<K> Reflector<K>
where
    K: Resource<DynamicType = ()> + ReadFields + Clone + Debug + Send + 'static,
{
    /// A reflector for `K` through `client`; `streaming`: try the
    /// streaming list first (client-go's `WatchListClient` gate).
    pub(crate) fn new(
        client: Client,
        labels: Option<String>,
        fields: Option<String>,
        streaming: bool,
    ) -> Self {
        Self {
            client,
            path: K::url_path(&(), None),
            labels,
            fields,
            streaming,
            last_version: String::new(),
            version_unavailable: false,
            paginated: false,
            empty_watches: 0,
            state: State::Start,
        }
    }

    /// The events, forever.
    pub(crate) fn into_stream(
        self,
    ) -> impl Stream<Item = Result<Event<Decoded<K>>, Failure>> + Send {
        futures::stream::unfold(self, |mut reflector| async move {
            let item = reflector.next_item().await;
            Some((item, reflector))
        })
    }

    async fn next_item(&mut self) -> Result<Event<Decoded<K>>, Failure> {
        loop {
            if let Some(item) = self.step().await {
                return item;
            }
        }
    }

    async fn step(&mut self) -> Step<K> {
        match std::mem::replace(&mut self.state, State::Start) {
            State::Start if self.streaming => self.open_streaming_list().await,
            State::Start | State::List => self.list_first_page().await,
            State::Paging {
                items,
                next,
                version,
            } => self.page(items, next, version).await,
            State::Streaming {
                events,
                opened,
                seen,
            } => self.stream_list(events, opened, seen).await,
            State::Rewatch => self.open_watch().await,
            State::Watching {
                events,
                opened,
                seen,
            } => self.watch(events, opened, seen).await,
        }
    }

    /// client-go's `rewatchResourceVersion`.
    fn rewatch_version(&self) -> &str {
        if self.version_unavailable {
            ""
        } else {
            &self.last_version
        }
    }

    /// client-go's `relistResourceVersion`.
    fn relist_version(&self) -> &str {
        match self.rewatch_version() {
            "" if !self.version_unavailable => "0",
            version => version,
        }
    }

    async fn open_streaming_list(&mut self) -> Step<K> {
        let version = self.rewatch_version().to_string();
        let url = self.watch_url(&version, true);
        match self.client.request_events::<Decoded<K>>(get(&url)).await {
            Ok(events) => {
                self.state = State::Streaming {
                    events: events.boxed(),
                    opened: Instant::now(),
                    seen: 0,
                };
                Some(Ok(Event::Init))
            }
            Err(err) if is_retriable(&err) => Some(Err(Failure::Watch(err))),
            Err(err) if is_version_unavailable(&err) => {
                self.version_unavailable = true;
                Some(Err(Failure::Watch(err)))
            }
            Err(err) => {
                tracing::debug!(path = %self.path, error = %err, "streaming list refused; listing instead");
                self.state = State::List;
                None
            }
        }
    }

    async fn stream_list(
        &mut self,
        mut events: Events<K>,
        opened: Instant,
        seen: usize,
    ) -> Step<K> {
        let Some(event) = next_event(&mut events).await else {
            if seen == 0 && opened.elapsed() < Duration::from_secs(1) {
                tracing::debug!(path = %self.path, "streaming list closed at once; listing instead");
                self.state = State::List;
                return None;
            }
            return Some(Err(Failure::Interrupted));
        };
        let seen = seen + 1;
        match event {
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                self.state = State::Streaming {
                    events,
                    opened,
                    seen,
                };
                Some(Ok(Event::InitApply(obj)))
            }
            WatchEvent::Deleted(_) => {
                self.state = State::Streaming {
                    events,
                    opened,
                    seen,
                };
                None
            }
            WatchEvent::Bookmark(bookmark) => {
                let ends = bookmark
                    .metadata
                    .annotations
                    .get(INITIAL_EVENTS_END)
                    .is_some_and(|v| v == "true");
                if !ends {
                    self.state = State::Streaming {
                        events,
                        opened,
                        seen,
                    };
                    return None;
                }
                self.last_version = bookmark.metadata.resource_version;
                self.version_unavailable = false;
                self.state = State::Watching {
                    events,
                    opened,
                    seen,
                };
                Some(Ok(Event::InitDone))
            }
            WatchEvent::Error(status) if status.code == 410 || status.code == 429 => {
                self.version_unavailable |= status.code == 410;
                Some(Err(Failure::Status(status)))
            }
            WatchEvent::Error(status) => {
                tracing::debug!(path = %self.path, code = status.code, message = %status.message,
                    "streaming list failed; listing instead");
                self.state = State::List;
                None
            }
        }
    }

    async fn list_first_page(&mut self) -> Step<K> {
        let version = self.relist_version().to_string();
        let limit = (self.paginated || version.is_empty() || version == "0").then_some(PAGE_SIZE);
        let url = self.list_url(Some(&version), limit, None);
        match self
            .client
            .request::<ObjectList<Decoded<K>>>(get(&url))
            .await
        {
            Ok(list) => {
                let next = list.metadata.continue_.clone().filter(|c| !c.is_empty());
                self.paginated |= version == "0" && next.is_some();
                self.state = paging(list, next);
                Some(Ok(Event::Init))
            }
            Err(err) if is_version_unavailable(&err) && !self.version_unavailable => {
                self.version_unavailable = true;
                self.state = State::List;
                None
            }
            Err(err) => Some(Err(Failure::List(err))),
        }
    }

    async fn page(
        &mut self,
        mut items: std::vec::IntoIter<Decoded<K>>,
        next: Option<String>,
        version: String,
    ) -> Step<K> {
        if let Some(item) = items.next() {
            self.state = State::Paging {
                items,
                next,
                version,
            };
            return Some(Ok(Event::InitApply(item)));
        }
        let Some(token) = next else {
            self.last_version = version;
            self.version_unavailable = false;
            self.state = State::Rewatch;
            return Some(Ok(Event::InitDone));
        };
        let url = self.list_url(None, Some(PAGE_SIZE), Some(&token));
        match self
            .client
            .request::<ObjectList<Decoded<K>>>(get(&url))
            .await
        {
            Ok(list) => {
                let next = list.metadata.continue_.clone().filter(|c| !c.is_empty());
                self.state = paging(list, next);
                None
            }
            Err(err) => Some(Err(Failure::List(err))),
        }
    }

    async fn open_watch(&mut self) -> Step<K> {
        let url = self.watch_url(&self.last_version.clone(), false);
        match self.client.request_events::<Decoded<K>>(get(&url)).await {
            Ok(events) => {
                self.state = State::Watching {
                    events: events.boxed(),
                    opened: Instant::now(),
                    seen: 0,
                };
                None
            }
            Err(err) => {
                if is_retriable(&err) {
                    self.state = State::Rewatch;
                }
                Some(Err(Failure::Watch(err)))
            }
        }
    }

    async fn watch(&mut self, mut events: Events<K>, opened: Instant, seen: usize) -> Step<K> {
        let Some(event) = next_event(&mut events).await else {
            return self.watch_ended(opened, seen);
        };
        self.empty_watches = 0;
        let seen = seen + 1;
        let item = match event {
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                self.note_version(obj.resource_version());
                Event::Apply(obj)
            }
            WatchEvent::Deleted(obj) => {
                self.note_version(obj.resource_version());
                Event::Delete(obj)
            }
            WatchEvent::Bookmark(bookmark) => {
                self.note_version(Some(&bookmark.metadata.resource_version));
                self.state = State::Watching {
                    events,
                    opened,
                    seen,
                };
                return None;
            }
            WatchEvent::Error(status) => {
                if status.code == 429 {
                    self.state = State::Rewatch;
                }
                return Some(Err(Failure::Status(status)));
            }
        };
        self.state = State::Watching {
            events,
            opened,
            seen,
        };
        Some(Ok(item))
    }

    /// A watch ended: watch again from the last version, unless watches
    /// from there keep ending with nothing sent (an event the stream cannot
    /// carry, a server that drops us at that point): then a fresh list, at
    /// the latest version, rather than looping.
    fn watch_ended(&mut self, opened: Instant, seen: usize) -> Step<K> {
        self.state = State::Rewatch;
        if seen > 0 || opened.elapsed() >= Duration::from_secs(1) {
            return None;
        }
        self.empty_watches += 1;
        if self.empty_watches < STUCK_LIMIT {
            return Some(Err(Failure::VeryShortWatch));
        }
        self.empty_watches = 0;
        self.version_unavailable = true;
        self.state = State::Start;
        Some(Err(Failure::Stuck(self.last_version.clone())))
    }

    fn note_version(&mut self, version: Option<&str>) {
        if let Some(version) = version.filter(|v| !v.is_empty()) {
            self.last_version = version.to_string();
        }
    }

    fn selectors(&self, query: &mut form_urlencoded::Serializer<'_, String>) {
        if let Some(labels) = &self.labels {
            query.append_pair("labelSelector", labels);
        }
        if let Some(fields) = &self.fields {
            query.append_pair("fieldSelector", fields);
        }
    }

    /// A list request's URL; a continued page carries only its token.
    fn list_url(&self, version: Option<&str>, limit: Option<u32>, token: Option<&str>) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        self.selectors(&mut query);
        if let Some(limit) = limit {
            query.append_pair("limit", &limit.to_string());
        }
        if let Some(token) = token {
            query.append_pair("continue", token);
        }
        if let Some(version) = version.filter(|v| !v.is_empty()) {
            query.append_pair("resourceVersion", version);
        }
        format!("{}?{}", self.path, query.finish())
    }

    /// A watch request's URL; `initial_events`: a streaming list.
    fn watch_url(&self, version: &str, initial_events: bool) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("watch", "true");
        self.selectors(&mut query);
        query.append_pair("allowWatchBookmarks", "true");
        if initial_events {
            query.append_pair("sendInitialEvents", "true");
            query.append_pair("resourceVersionMatch", "NotOlderThan");
        }
        query.append_pair("timeoutSeconds", &watch_timeout().as_secs().to_string());
        if !version.is_empty() {
            query.append_pair("resourceVersion", version);
        }
        format!("{}?{}", self.path, query.finish())
    }
}

fn paging<K>(list: ObjectList<Decoded<K>>, next: Option<String>) -> State<K>
where
    K: Clone,
{
    State::Paging {
        version: list.metadata.resource_version.clone().unwrap_or_default(),
        items: list.items.into_iter(),
        next,
    }
}

fn get(url: &str) -> http::Request<Vec<u8>> {
    let mut request = http::Request::new(Vec::new());
    if let Ok(uri) = url.parse() {
        *request.uri_mut() = uri;
    }
    request
}

/// A watch timeout between [`MIN_WATCH_TIMEOUT`] and twice that.
fn watch_timeout() -> Duration {
    MIN_WATCH_TIMEOUT.mul_f64(1.0 + random_fraction())
}

/// The next event, or `None` when the stream ended, broke or stayed
/// silent past any timeout the server was asked for.
async fn next_event<K>(events: &mut Events<K>) -> Option<WatchEvent<Decoded<K>>> {
    let silence = MIN_WATCH_TIMEOUT * 2 + IDLE_GRACE;
    match tokio::time::timeout(silence, events.next()).await {
        Ok(Some(Ok(event))) => Some(event),
        Ok(Some(Err(err))) => {
            tracing::debug!(error = %err, "watch stream broke");
            None
        }
        Ok(None) | Err(_) => None,
    }
}

/// client-go's `isWatchErrorRetriable`: the server could not be reached
/// (or said 429); the same request is tried again after the backoff.
fn is_retriable(err: &::kube::Error) -> bool {
    match err {
        ::kube::Error::Api(status) => status.code == 429,
        _ => true,
    }
}

/// client-go's `isExpiredError` / `isTooLargeResourceVersionError`.
fn is_version_unavailable(err: &::kube::Error) -> bool {
    match err {
        ::kube::Error::Api(status) => {
            status.code == 410
                || status.details.as_ref().is_some_and(|d| {
                    d.causes
                        .iter()
                        .any(|c| c.reason == "ResourceVersionTooLarge")
                })
        }
        _ => false,
    }
}
