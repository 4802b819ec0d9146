//! The API server source against a fake API server speaking the list and
//! watch protocol: initial (streaming) list and its fallback, lists cut
//! short, add/update/delete, the start-up gate,
//! bookmarks and resumed watches, 410 Gone re-lists, an API server
//! that goes away and comes back, ServiceCIDRs (and an API server without
//! them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "kube/cluster.rs"]
mod cluster;
#[path = "kube/fake_api.rs"]
mod fake_api;

use cluster::{
    NODE, Proxy, endpoints, labelled, node, service, service_cidr, service_cidrs, services, slice,
};
use fake_api::{FakeApi, Kind};
use source::kube::{LABEL_SELECTOR, SourceEvent, WatchOptions};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

fn eps(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect()
}

/// Two services with a slice each, our node and another one.
async fn small_cluster() -> FakeApi {
    let api = FakeApi::start_new().await;
    api.apply(Kind::Services, service("web", "a", "172.30.0.1"));
    api.apply(Kind::Services, service("web", "b", "172.30.0.2"));
    api.apply(
        Kind::EndpointSlices,
        slice("web", "a", "a-1", &["10.180.0.1", "10.180.0.2"]),
    );
    api.apply(
        Kind::EndpointSlices,
        slice("web", "b", "b-1", &["10.180.0.3"]),
    );
    api.apply(Kind::Nodes, node(NODE, "192.168.0.2"));
    api.apply(Kind::Nodes, node("node-b", "192.168.0.3"));
    api
}

#[tokio::test]
async fn initial_list_fills_the_tracker_with_upstreams_selectors() {
    let api = small_cluster().await;
    // Filtered out by the label selector, on the server side.
    api.apply(
        Kind::Services,
        labelled(
            service("web", "other-proxy", "172.30.0.9"),
            "service.kubernetes.io/service-proxy-name",
            "cilium",
        ),
    );
    api.apply(
        Kind::EndpointSlices,
        labelled(
            slice("web", "a", "a-headless", &["10.180.0.99"]),
            "service.kubernetes.io/headless",
            "",
        ),
    );
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;

    let snapshot = proxy.snapshot();
    assert_eq!(
        endpoints(&snapshot),
        eps(&[
            ("web/a:http", &["10.180.0.1", "10.180.0.2"]),
            ("web/b:http", &["10.180.0.3"]),
        ])
    );
    let ours: IpAddr = "192.168.0.2".parse().unwrap();
    proxy
        .wait_for("our node's address", |s| s.node.addresses == vec![ours])
        .await;

    // One request per kind: a streaming list from the watch cache, whose
    // stream then carries the changes.
    for kind in [Kind::Services, Kind::EndpointSlices] {
        let log: Vec<_> = api.log().into_iter().filter(|l| l.kind == kind).collect();
        assert_eq!(log.len(), 1, "{kind:?}: {log:?}");
        let list = &log[0];
        assert!(list.watch, "{kind:?}");
        assert_eq!(list.query["labelSelector"], LABEL_SELECTOR, "{kind:?}");
        assert_eq!(list.query["sendInitialEvents"], "true", "{kind:?}");
        assert_eq!(
            list.query["resourceVersionMatch"], "NotOlderThan",
            "{kind:?}"
        );
        assert_eq!(list.query["allowWatchBookmarks"], "true", "{kind:?}");
        // No version: the newest state (a consistent read, from the cache).
        assert!(!list.query.contains_key("resourceVersion"), "{kind:?}");
        assert!(!list.query.contains_key("limit"), "{kind:?}");
        let timeout: u64 = list.query["timeoutSeconds"].parse().unwrap();
        assert!((300..600).contains(&timeout), "{timeout}");
    }
    let node_list = api
        .log()
        .into_iter()
        .find(|l| l.kind == Kind::Nodes)
        .unwrap();
    assert_eq!(
        node_list.query["fieldSelector"],
        format!("metadata.name={NODE}")
    );
    assert_eq!(api.open_watches(Kind::Services), 1);

    // Changes come on the same stream.
    api.apply(Kind::Services, service("web", "c", "172.30.0.3"));
    proxy
        .wait_for("c", |s| services(s).contains(&"web/c:http".to_string()))
        .await;
    assert_eq!(api.requests(Kind::Services), 1, "{:?}", api.log());
}

#[tokio::test]
async fn a_refused_streaming_list_falls_back_to_a_list_from_the_watch_cache() {
    let api = small_cluster().await;
    api.refuse_streaming_lists();
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    assert_eq!(
        endpoints(&proxy.snapshot()),
        eps(&[
            ("web/a:http", &["10.180.0.1", "10.180.0.2"]),
            ("web/b:http", &["10.180.0.3"]),
        ])
    );
    wait_until("services watch open", || {
        api.open_watches(Kind::Services) == 1
    })
    .await;
    let listed_at = api.resource_version().to_string();
    for kind in [Kind::Services, Kind::EndpointSlices] {
        let log: Vec<_> = api.log().into_iter().filter(|l| l.kind == kind).collect();
        // Streaming list (refused, 422), list, watch: three requests.
        assert_eq!(log.len(), 3, "{kind:?}: {log:?}");
        assert!(log[0].streaming(), "{kind:?}: {log:?}");
        let list = &log[1];
        assert!(!list.watch, "{kind:?}");
        assert_eq!(list.query["resourceVersion"], "0", "{kind:?}");
        assert_eq!(list.query["limit"], "500", "{kind:?}");
        assert_eq!(list.query["labelSelector"], LABEL_SELECTOR, "{kind:?}");
        let watch = &log[2];
        assert!(watch.watch && !watch.streaming(), "{kind:?}");
        assert_eq!(watch.query["resourceVersion"], listed_at, "{kind:?}");
        assert_eq!(watch.query["allowWatchBookmarks"], "true", "{kind:?}");
    }

    // A re-list (410 Gone) tries the streaming list again, then lists at
    // the last version seen (no limit: from the watch cache).
    api.delete_unannounced(Kind::Services, "web", "b");
    api.expire_watches();
    proxy
        .wait_for("b dropped by the re-list", |s| {
            services(s) == vec!["web/a:http".to_string()]
        })
        .await;
    let relist: Vec<_> = api
        .log()
        .into_iter()
        .filter(|l| l.kind == Kind::Services)
        .skip(3)
        .take(2)
        .collect();
    assert!(relist[0].streaming(), "{relist:?}");
    assert_eq!(relist[0].query["resourceVersion"], listed_at);
    assert!(!relist[1].watch, "{relist:?}");
    assert_eq!(relist[1].query["resourceVersion"], listed_at);
    assert!(!relist[1].query.contains_key("limit"), "{relist:?}");
}

#[tokio::test]
async fn without_a_watch_cache_the_fallback_list_follows_its_pages() {
    let api = FakeApi::start_new().await;
    for i in 0..1001 {
        api.apply(
            Kind::Services,
            service(
                "web",
                &format!("s{i:04}"),
                &format!("172.30.{}.{}", i / 200, i % 200 + 1),
            ),
        );
    }
    api.without_watch_cache();
    let options = WatchOptions {
        backoff: cluster::FAST,
        streaming_list: false,
    };
    let mut proxy = Proxy::start_with(&api.url(), options);
    proxy.initial_list().await;
    assert_eq!(proxy.snapshot().services.len(), 1001);
    let lists: Vec<(Option<String>, Option<String>)> = api
        .log()
        .into_iter()
        .filter(|l| l.kind == Kind::Services && !l.watch)
        .map(|l| {
            (
                l.query.get("continue").cloned(),
                l.query.get("resourceVersion").cloned(),
            )
        })
        .collect();
    assert_eq!(
        lists,
        vec![
            (None, Some("0".into())),
            (Some("500".into()), None),
            (Some("1000".into()), None)
        ]
    );
    assert_eq!(
        api.streaming_lists(Kind::Services),
        0,
        "gate off: no streaming list"
    );
}

#[tokio::test]
async fn a_streaming_list_cut_short_is_never_taken_for_the_whole_state() {
    let api = small_cluster().await;
    api.cut_streaming_lists_after(Some(1));
    let mut proxy = Proxy::start(&api.url());
    wait_until("several cut streaming lists", || {
        api.streaming_lists(Kind::Services) >= 3
    })
    .await;
    let early = proxy.events_for(Duration::from_millis(100)).await;
    assert!(!early.contains(&SourceEvent::InitialListDone), "{early:?}");
    api.cut_streaming_lists_after(None);
    proxy.initial_list().await;
    assert_eq!(services(&proxy.snapshot()), ["web/a:http", "web/b:http"]);

    // Re-lists cut short (only a sent) never delete b, which exists.
    let before = api.streaming_lists(Kind::Services);
    api.cut_streaming_lists_after(Some(1));
    api.expire_watches();
    wait_until("several cut re-lists", || {
        api.streaming_lists(Kind::Services) >= before + 3
    })
    .await;
    assert_eq!(services(&proxy.snapshot()), ["web/a:http", "web/b:http"]);
    // The first whole re-list finds b gone.
    api.delete_unannounced(Kind::Services, "web", "b");
    api.cut_streaming_lists_after(None);
    proxy
        .wait_for("b dropped by the whole re-list", |s| {
            services(s) == vec!["web/a:http".to_string()]
        })
        .await;
}
#[tokio::test]
async fn adds_updates_and_deletes_reach_the_tracker() {
    let api = small_cluster().await;
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    proxy.snapshot();

    api.apply(Kind::Services, service("web", "c", "172.30.0.3"));
    api.apply(
        Kind::EndpointSlices,
        slice("web", "c", "c-1", &["10.180.0.7"]),
    );
    assert_eq!(proxy.next_event().await, SourceEvent::Changed);
    proxy
        .wait_for("c with its endpoint", |s| {
            endpoints(s).get("web/c:http") == Some(&vec!["10.180.0.7".into()])
        })
        .await;

    // A second slice of the same service merges; an update replaces.
    api.apply(
        Kind::EndpointSlices,
        slice("web", "c", "c-2", &["10.180.0.8"]),
    );
    api.apply(
        Kind::EndpointSlices,
        slice("web", "c", "c-1", &["10.180.0.6"]),
    );
    proxy
        .wait_for("c's slices merged and updated", |s| {
            endpoints(s).get("web/c:http") == Some(&vec!["10.180.0.6".into(), "10.180.0.8".into()])
        })
        .await;

    api.delete(Kind::EndpointSlices, "web", "c-1");
    api.delete(Kind::Services, "web", "c");
    proxy
        .wait_for("c gone", |s| {
            !services(s).contains(&"web/c:http".to_string())
        })
        .await;

    // Labelling a service headless takes it out of the selector: the
    // server says DELETED and the proxy drops it.
    api.apply(
        Kind::Services,
        labelled(
            service("web", "a", "172.30.0.1"),
            "service.kubernetes.io/headless",
            "",
        ),
    );
    let snapshot = proxy
        .wait_for("a gone", |s| {
            !services(s).contains(&"web/a:http".to_string())
        })
        .await;
    assert_eq!(services(&snapshot), vec!["web/b:http".to_string()]);

    // Our node's address changes; other nodes are never seen.
    api.apply(Kind::Nodes, node("node-b", "192.168.0.30"));
    api.apply(Kind::Nodes, node(NODE, "192.168.0.20"));
    let ip: IpAddr = "192.168.0.20".parse().unwrap();
    proxy
        .wait_for("our node's new address", |s| s.node.addresses == vec![ip])
        .await;
}

#[tokio::test]
async fn no_initial_list_done_before_both_lists_arrived() {
    for held in [Kind::EndpointSlices, Kind::Services] {
        let api = small_cluster().await;
        api.hold_lists(held);
        let mut proxy = Proxy::start(&api.url());
        // The other kind's list arrives and is applied...
        match held {
            Kind::EndpointSlices => {
                proxy
                    .wait_for("services listed", |s| s.services.len() == 2)
                    .await;
            }
            _ => {
                wait_until("endpointslices listed and watched", || {
                    api.open_watches(Kind::EndpointSlices) == 1
                })
                .await;
            }
        }
        // ...but the gate stays shut while one list is missing.
        let early = proxy.events_for(Duration::from_millis(300)).await;
        assert!(
            !early.contains(&SourceEvent::InitialListDone),
            "{held:?}: {early:?}"
        );

        api.release_lists(held);
        proxy.initial_list().await;
        let snapshot = proxy.snapshot();
        assert_eq!(snapshot.services.len(), 2, "{held:?}");
        assert_eq!(snapshot.endpoints.len(), 2, "{held:?}");
    }
}

#[tokio::test]
async fn expired_watch_relists_and_drops_what_vanished_meanwhile() {
    let api = small_cluster().await;
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    proxy.events_for(Duration::from_millis(100)).await;
    assert_eq!(api.streaming_lists(Kind::Services), 1);
    let listed_at = api.resource_version().to_string();

    // b goes away without any watch hearing of it, then the watches
    // expire (410 Gone): only a re-list can tell.
    api.delete_unannounced(Kind::Services, "web", "b");
    api.delete_unannounced(Kind::EndpointSlices, "web", "b-1");
    api.expire_watches();

    wait_until("both kinds re-listed", || {
        api.streaming_lists(Kind::Services) == 2 && api.streaming_lists(Kind::EndpointSlices) == 2
    })
    .await;
    // The re-list streams from the version last seen (the watch cache
    // answers with a state at least that new), without a plain list.
    let relist = api
        .log()
        .into_iter()
        .rfind(|l| l.kind == Kind::Services && l.streaming())
        .unwrap();
    assert_eq!(relist.query["resourceVersion"], listed_at);
    assert_eq!(api.lists(Kind::Services), 0);
    proxy
        .wait_for("b dropped by the re-list", |s| {
            endpoints(s) == eps(&[("web/a:http", &["10.180.0.1", "10.180.0.2"])])
        })
        .await;
    // The re-list is reported as a change; the gate opens only once.
    let later = proxy.events_for(Duration::from_millis(200)).await;
    assert!(later.contains(&SourceEvent::Changed), "{later:?}");
    assert!(!later.contains(&SourceEvent::InitialListDone), "{later:?}");

    // Its slice went too: b coming back (the watch goes on after the
    // re-list) has no endpoints.
    api.apply(Kind::Services, service("web", "b", "172.30.0.2"));
    proxy
        .wait_for("b back without endpoints", |s| {
            endpoints(s)
                == eps(&[
                    ("web/a:http", &["10.180.0.1", "10.180.0.2"]),
                    ("web/b:http", &[]),
                ])
        })
        .await;
}

#[tokio::test]
async fn dropped_watch_resumes_from_the_last_bookmark_without_relisting() {
    let api = small_cluster().await;
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    wait_until("services watch open", || {
        api.open_watches(Kind::Services) == 1
    })
    .await;

    // Other kinds move the version on; a bookmark tells the services
    // watch where it stands.
    api.apply(Kind::Nodes, node("node-b", "192.168.0.33"));
    api.bookmark();
    let bookmarked = api.resource_version();
    api.drop_watches();
    api.apply(Kind::Services, service("web", "c", "172.30.0.3"));

    proxy
        .wait_for("c after the resumed watch", |s| {
            services(s).contains(&"web/c:http".to_string())
        })
        .await;
    assert_eq!(
        api.streaming_lists(Kind::Services),
        1,
        "no re-list after a plain disconnect"
    );
    let resumed: Vec<Option<String>> = api
        .log()
        .into_iter()
        .filter(|l| l.kind == Kind::Services && l.watch)
        .map(|l| l.query.get("resourceVersion").cloned())
        .collect();
    assert_eq!(resumed, [None, Some(bookmarked.to_string())]);
}

#[tokio::test]
async fn outage_keeps_the_last_state_then_catches_up() {
    let mut api = small_cluster().await;
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    let before = endpoints(&proxy.snapshot());

    // The API server goes away; the tracker keeps what it had.
    api.stop();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(endpoints(&proxy.snapshot()), before);

    // Changes while it is away are picked up when it returns, by resuming
    // the watch (its history still covers them).
    api.delete(Kind::Services, "web", "b");
    api.apply(Kind::Services, service("web", "c", "172.30.0.3"));
    api.start().await;
    let snapshot = proxy
        .wait_for("b gone and c added after the outage", |s| {
            services(s) == vec!["web/a:http".to_string(), "web/c:http".to_string()]
        })
        .await;
    assert_eq!(endpoints(&snapshot)["web/a:http"], before["web/a:http"]);
    assert_eq!(api.streaming_lists(Kind::Services), 1);

    // A longer outage: the history no longer covers the gap, the resumed
    // watch gets 410 Gone and the source re-lists.
    api.stop();
    api.delete_unannounced(Kind::Services, "web", "a");
    api.start().await;
    proxy
        .wait_for("a gone after the re-list", |s| {
            services(s) == vec!["web/c:http".to_string()]
        })
        .await;
    assert_eq!(api.streaming_lists(Kind::Services), 2);
}

/// Regression (reliability suite): after an outage had grown the retry
/// delay, the 410 Gone of the first resumed watch waited that grown delay
/// before the re-list (20 s seen with the default backoff): the cache
/// stayed stale long after the API server was back.
#[tokio::test]
async fn an_expired_watch_relists_without_waiting_out_the_outages_backoff() {
    let mut api = small_cluster().await;
    let backoff = source::kube::Backoff {
        initial: Duration::from_millis(200),
        max: Duration::from_secs(30),
    };
    let options = WatchOptions {
        backoff,
        ..WatchOptions::default()
    };
    let mut proxy = Proxy::start_with(&api.url(), options);
    proxy.initial_list().await;
    // Failed connections for 4 s: the delay is at 3.2 s or more by now.
    api.stop();
    tokio::time::sleep(Duration::from_secs(4)).await;
    api.delete_unannounced(Kind::Services, "web", "b");
    let (watches, lists) = (service_watches(&api), service_lists(&api));
    api.start().await;
    // The resumed watch comes after the grown delay (6.2 s + jitter from the stop).
    wait_until_within(
        "the services watch resumed",
        Duration::from_secs(20),
        || service_watches(&api) > watches,
    )
    .await;
    let resumed = tokio::time::Instant::now();
    wait_until("services re-listed", || service_lists(&api) > lists).await;
    let waited = resumed.elapsed();
    // The first delay is 200–400 ms; the grown one at least 3.2 s.
    assert!(
        waited < Duration::from_secs(2),
        "the re-list after 410 Gone waited {waited:?}"
    );
    proxy
        .wait_for("b gone after the re-list", |s| {
            services(s) == vec!["web/a:http".to_string()]
        })
        .await;
}

/// Watches of Services that resume from a resource version (not lists).
fn service_watches(api: &FakeApi) -> usize {
    api.log()
        .iter()
        .filter(|l| l.kind == Kind::Services && l.watch && !l.streaming())
        .count()
}

/// Lists of Services, paged or streaming.
fn service_lists(api: &FakeApi) -> usize {
    api.lists(Kind::Services) + api.streaming_lists(Kind::Services)
}

#[tokio::test]
async fn start_with_the_server_down_waits_then_lists() {
    let mut api = small_cluster().await;
    api.stop();
    let mut proxy = Proxy::start(&api.url());
    let early = proxy.events_for(Duration::from_millis(300)).await;
    assert!(early.is_empty(), "{early:?}");
    api.start().await;
    proxy.initial_list().await;
    assert_eq!(proxy.snapshot().services.len(), 2);
}

async fn wait_until(what: &str, ok: impl Fn() -> bool) {
    wait_until_within(what, cluster::PATIENCE, ok).await;
}

async fn wait_until_within(what: &str, patience: Duration, ok: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + patience;
    while !ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn service_cidrs_are_listed_and_watched() {
    let api = small_cluster().await;
    api.apply(
        Kind::ServiceCidrs,
        service_cidr("kubernetes", &["10.96.0.0/12", "fd00:10:96::/112"]),
    );
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    proxy
        .wait_for("the listed service CIDR", |s| {
            service_cidrs(s) == ["10.96.0.0/12"]
        })
        .await;
    let list = api
        .log()
        .into_iter()
        .find(|l| l.kind == Kind::ServiceCidrs)
        .unwrap();
    assert!(list.streaming());
    assert!(
        !list.query.contains_key("labelSelector"),
        "every ServiceCIDR is listed"
    );

    wait_until("servicecidrs watch open", || {
        api.open_watches(Kind::ServiceCidrs) == 1
    })
    .await;
    api.apply(Kind::ServiceCidrs, service_cidr("extra", &["10.64.0.0/16"]));
    assert_eq!(proxy.next_event().await, SourceEvent::Changed);
    proxy
        .wait_for("the added one", |s| {
            service_cidrs(s) == ["10.64.0.0/16", "10.96.0.0/12"]
        })
        .await;
    api.delete(Kind::ServiceCidrs, "", "kubernetes");
    assert_eq!(proxy.next_event().await, SourceEvent::Changed);
    let snapshot = proxy
        .wait_for("the deleted one gone", |s| {
            service_cidrs(s) == ["10.64.0.0/16"]
        })
        .await;
    assert_eq!(
        services(&snapshot),
        ["web/a:http", "web/b:http"],
        "services untouched"
    );
}

#[tokio::test]
async fn service_cidrs_deleted_while_the_watch_was_down_go_at_the_relist() {
    let api = small_cluster().await;
    api.apply(
        Kind::ServiceCidrs,
        service_cidr("kubernetes", &["10.96.0.0/12"]),
    );
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    proxy
        .wait_for("the service CIDR", |s| service_cidrs(s) == ["10.96.0.0/12"])
        .await;
    wait_until("servicecidrs watch open", || {
        api.open_watches(Kind::ServiceCidrs) == 1
    })
    .await;
    api.delete_unannounced(Kind::ServiceCidrs, "", "kubernetes");
    api.expire_watches();
    proxy
        .wait_for("no service CIDRs after the re-list", |s| {
            s.service_cidrs.is_empty()
        })
        .await;
}

#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// current_thread (tokio::test's default): the watchers run on this
// thread, under the thread-local log subscriber.
#[tokio::test]
async fn a_cluster_without_the_service_cidr_api_works_with_none_and_one_warning() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let api = small_cluster().await;
    api.not_serving(Kind::ServiceCidrs);
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    let snapshot = proxy.snapshot();
    assert_eq!(services(&snapshot), ["web/a:http", "web/b:http"]);
    assert!(snapshot.service_cidrs.is_empty());
    // Well past several of the fast retries: the 404 is not retried.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        api.lists(Kind::ServiceCidrs),
        1,
        "a 404 is final: {:?}",
        api.log()
    );
    // Other kinds keep working.
    api.apply(Kind::Services, service("web", "c", "172.30.0.3"));
    proxy
        .wait_for("the new service", |s| s.services.len() == 3)
        .await;

    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let warnings: Vec<&str> = text.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0].contains("servicecidrs") && warnings[0].contains("404"),
        "{}",
        warnings[0]
    );
}
