//! A fake Kubernetes API server on 127.0.0.1: just enough of the list and
//! watch protocol for the source's watchers, with knobs to misbehave.
//!
//! Speaks what the real one speaks on the wire: JSON lists with
//! `metadata.resourceVersion` (items without `apiVersion`/`kind`, as the
//! real server sends them), `?watch=true` answered with a chunked stream of
//! newline-separated `{"type": ..., "object": ...}` events replayed from
//! the requested resource version, `BOOKMARK` events when asked for with
//! `allowWatchBookmarks`, label selectors (`!key`, `key`, `key=value`,
//! `key!=value`; an object leaving or entering a watch's selector shows up
//! as `DELETED` / `ADDED`, as on the real server) and the `metadata.name`
//! / `metadata.namespace` field selectors.
//!
//! Knobs: [`FakeApi::expire_watches`] (a 410 Gone `ERROR` event in every
//! open watch, then history compacted so resumes get 410 too),
//! [`FakeApi::drop_watches`] (streams end, as on a server-side timeout),
//! [`FakeApi::stop`] / [`FakeApi::start`] (the server goes away, every
//! connection cut, and comes back on the same port with the same data),
//! [`FakeApi::hold_lists`] (list requests of a kind wait until released),
//! [`FakeApi::not_serving`] (a kind's path answers 404, as an API server
//! without that API: no ServiceCIDRs before Kubernetes 1.33).
//!
//! Streaming lists (`sendInitialEvents=true`, which the real server only
//! takes with `allowWatchBookmarks=true` and
//! `resourceVersionMatch=NotOlderThan`, else 422): every matching object
//! as `ADDED`, then a `BOOKMARK` annotated `k8s.io/initial-events-end`,
//! then the live changes. Knobs: [`FakeApi::refuse_streaming_lists`] (422,
//! as a server without the `WatchList` feature),
//! [`FakeApi::cut_streaming_lists_after`] (the stream ends after n objects,
//! before its bookmark). Lists at `resourceVersion=0` come whole from the
//! "watch cache" (their `limit` ignored, as the real one does) unless
//! [`FakeApi::without_watch_cache`].

#![allow(dead_code)]

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpSocket;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

/// The kinds the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Services,
    EndpointSlices,
    Nodes,
    ServiceCidrs,
}

impl Kind {
    fn of_path(path: &str) -> Option<Kind> {
        match path {
            "/api/v1/services" => Some(Kind::Services),
            "/apis/discovery.k8s.io/v1/endpointslices" => Some(Kind::EndpointSlices),
            "/api/v1/nodes" => Some(Kind::Nodes),
            "/apis/networking.k8s.io/v1/servicecidrs" => Some(Kind::ServiceCidrs),
            _ => None,
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Kind::Services | Kind::Nodes => "v1",
            Kind::EndpointSlices => "discovery.k8s.io/v1",
            Kind::ServiceCidrs => "networking.k8s.io/v1",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Kind::Services => "Service",
            Kind::EndpointSlices => "EndpointSlice",
            Kind::Nodes => "Node",
            Kind::ServiceCidrs => "ServiceCIDR",
        }
    }
}

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Logged {
    pub kind: Kind,
    pub watch: bool,
    pub query: HashMap<String, String>,
}

impl Logged {
    /// A streaming list: a watch asking for the initial events.
    pub fn streaming(&self) -> bool {
        self.watch
            && self
                .query
                .get("sendInitialEvents")
                .is_some_and(|v| v == "true")
    }
}

/// One change, kept for watches that resume from an older version.
#[derive(Debug, Clone)]
struct Change {
    kind: Kind,
    rv: u64,
    old: Option<Value>,
    new: Option<Value>,
    /// Sent as it is instead of an event: a line no client can decode.
    unreadable: Option<Bytes>,
}

/// An open watch stream.
struct OpenWatch {
    kind: Kind,
    selector: Selector,
    bookmarks: bool,
    tx: mpsc::UnboundedSender<Bytes>,
}

/// The cluster's data and the server's bookkeeping (survives stop/start).
#[derive(Default)]
struct Cluster {
    rv: u64,
    objects: BTreeMap<(Kind, String, String), Value>,
    history: Vec<Change>,
    /// Watches from a version below this get 410 Gone.
    compacted: u64,
    watches: Vec<OpenWatch>,
    log: Vec<Logged>,
    held: HashMap<Kind, tokio::sync::watch::Sender<bool>>,
    /// Kinds answered 404 (still logged).
    unserved: Vec<Kind>,
    /// Streaming lists answered 422.
    refuse_streaming: bool,
    /// Streaming lists end after this many objects, before the bookmark.
    cut_streaming_after: Option<usize>,
    /// Lists at version 0 honour `limit` (no watch cache).
    no_watch_cache: bool,
}

/// The fake server. Dropping it stops it.
pub struct FakeApi {
    cluster: Arc<Mutex<Cluster>>,
    addr: SocketAddr,
    server: Option<JoinHandle<()>>,
}

impl FakeApi {
    /// Starts an empty cluster on a free port.
    pub async fn start_new() -> FakeApi {
        let listener = bind("127.0.0.1:0".parse().unwrap());
        let addr = listener.local_addr().unwrap();
        let cluster = Arc::new(Mutex::new(Cluster {
            rv: 1,
            ..Cluster::default()
        }));
        let server = Some(tokio::spawn(serve(listener, Arc::clone(&cluster))));
        FakeApi {
            cluster,
            addr,
            server,
        }
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server goes away: the listener closes and every connection is
    /// cut. The data stays.
    pub fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
        self.cluster.lock().unwrap().watches.clear();
    }

    /// The server comes back on the same port.
    pub async fn start(&mut self) {
        assert!(self.server.is_none(), "already running");
        // The aborted accept loop drops its listener when the task is
        // dropped; give the runtime a moment to do so.
        let listener = loop {
            match try_bind(self.addr) {
                Ok(l) => break l,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        };
        self.server = Some(tokio::spawn(serve(listener, Arc::clone(&self.cluster))));
    }

    /// Adds or replaces an object (`metadata.namespace`/`name` identify
    /// it) and tells the watches.
    pub fn apply(&self, kind: Kind, mut object: Value) {
        let mut c = self.cluster.lock().unwrap();
        c.rv += 1;
        let rv = c.rv;
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.kind());
        let key = key_of(kind, &object);
        let old = c.objects.insert(key, object.clone());
        c.record(Change {
            kind,
            rv,
            old,
            new: Some(object),
            unreadable: None,
        });
    }

    /// Sends every watch of `kind` (and every watch that later resumes from
    /// before it) a line no client can decode (an event type nobody knows),
    /// at a new resource version. No object changes: a fresh list does not
    /// show it.
    pub fn send_unreadable(&self, kind: Kind) {
        let mut c = self.cluster.lock().unwrap();
        c.rv += 1;
        let rv = c.rv;
        c.record(Change {
            kind,
            rv,
            old: None,
            new: None,
            unreadable: Some(Bytes::from_static(
                b"{\"type\":\"RENAMED\",\"object\":{}}\n",
            )),
        });
    }

    /// Deletes an object and tells the watches.
    pub fn delete(&self, kind: Kind, namespace: &str, name: &str) {
        let mut c = self.cluster.lock().unwrap();
        let Some(mut old) = c
            .objects
            .remove(&(kind, namespace.to_string(), name.to_string()))
        else {
            panic!("deleting {namespace}/{name}: no such object");
        };
        c.rv += 1;
        let rv = c.rv;
        old["metadata"]["resourceVersion"] = json!(rv.to_string());
        c.record(Change {
            kind,
            rv,
            old: Some(old),
            new: None,
            unreadable: None,
        });
    }

    /// Deletes an object without any watch hearing of it and drops the
    /// history: the event is lost, as when a watch was down past the
    /// server's history window. Only a re-list can find out.
    pub fn delete_unannounced(&self, kind: Kind, namespace: &str, name: &str) {
        let mut c = self.cluster.lock().unwrap();
        c.objects
            .remove(&(kind, namespace.to_string(), name.to_string()))
            .expect("no such object");
        c.rv += 1;
        c.compact();
    }

    /// Sends a 410 Gone `ERROR` event on every open watch and closes them;
    /// the history is compacted, so resuming from any version seen so far
    /// gets 410 again: only a re-list helps.
    pub fn expire_watches(&self) {
        let mut c = self.cluster.lock().unwrap();
        c.compact();
        let status = gone(c.compacted, c.rv);
        for w in c.watches.drain(..) {
            let _ = w.tx.send(status.clone());
        }
    }

    /// Ends every open watch stream cleanly (as the server's watch
    /// timeout does); clients resume from their last version.
    pub fn drop_watches(&self) {
        self.cluster.lock().unwrap().watches.clear();
    }

    /// Sends a `BOOKMARK` at the current version on every open watch that
    /// asked for bookmarks.
    pub fn bookmark(&self) {
        let c = self.cluster.lock().unwrap();
        for w in &c.watches {
            if w.bookmarks {
                let object = json!({
                    "apiVersion": w.kind.api_version(),
                    "kind": w.kind.kind(),
                    "metadata": {"resourceVersion": c.rv.to_string()},
                });
                let _ =
                    w.tx.send(line(&json!({"type": "BOOKMARK", "object": object})));
            }
        }
    }

    /// The current resource version.
    pub fn resource_version(&self) -> u64 {
        self.cluster.lock().unwrap().rv
    }

    /// List requests (plain and streaming) for `kind` wait from now on until
    /// [`Self::release_lists`].
    pub fn hold_lists(&self, kind: Kind) {
        self.held(kind).send_replace(true);
    }

    /// Lets held list requests of `kind` through.
    pub fn release_lists(&self, kind: Kind) {
        self.held(kind).send_replace(false);
    }

    fn held(&self, kind: Kind) -> tokio::sync::watch::Sender<bool> {
        let mut c = self.cluster.lock().unwrap();
        c.held
            .entry(kind)
            .or_insert_with(|| tokio::sync::watch::channel(false).0)
            .clone()
    }

    /// From now on `kind`'s path answers 404 with the plain-text body a
    /// real API server gives for an API it does not serve.
    pub fn not_serving(&self, kind: Kind) {
        self.cluster.lock().unwrap().unserved.push(kind);
    }

    /// From now on streaming lists are refused with 422 Invalid, as by an
    /// API server without the `WatchList` feature.
    pub fn refuse_streaming_lists(&self) {
        self.cluster.lock().unwrap().refuse_streaming = true;
    }

    /// From now on streaming lists send at most `n` objects and end
    /// without their bookmark (`None`: whole again).
    pub fn cut_streaming_lists_after(&self, n: Option<usize>) {
        self.cluster.lock().unwrap().cut_streaming_after = n;
    }

    /// Lists at resourceVersion 0 are paged like the others, as by an API
    /// server without a watch cache.
    pub fn without_watch_cache(&self) {
        self.cluster.lock().unwrap().no_watch_cache = true;
    }

    /// How many streaming lists (`sendInitialEvents=true`) `kind` got.
    pub fn streaming_lists(&self, kind: Kind) -> usize {
        self.log()
            .iter()
            .filter(|l| l.kind == kind && l.streaming())
            .count()
    }

    /// How many requests of any sort `kind` got.
    pub fn requests(&self, kind: Kind) -> usize {
        self.log().iter().filter(|l| l.kind == kind).count()
    }

    /// Every request answered so far.
    pub fn log(&self) -> Vec<Logged> {
        self.cluster.lock().unwrap().log.clone()
    }

    /// How many list (not watch) requests `kind` got.
    pub fn lists(&self, kind: Kind) -> usize {
        self.log()
            .iter()
            .filter(|l| l.kind == kind && !l.watch)
            .count()
    }

    /// How many watches of `kind` are open.
    pub fn open_watches(&self, kind: Kind) -> usize {
        let mut c = self.cluster.lock().unwrap();
        c.watches.retain(|w| !w.tx.is_closed());
        c.watches.iter().filter(|w| w.kind == kind).count()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Cluster {
    fn record(&mut self, change: Change) {
        self.watches.retain(|w| {
            w.kind != change.kind
                || match event_for(&w.selector, &change) {
                    Some(event) => w.tx.send(event).is_ok(),
                    None => true,
                }
        });
        self.history.push(change);
    }

    fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }
}

/// The watch event `change` is for a watch with `selector`, if any.
fn event_for(selector: &Selector, change: &Change) -> Option<Bytes> {
    if let Some(line) = &change.unreadable {
        return Some(line.clone());
    }
    let was = change.old.as_ref().is_some_and(|o| selector.matches(o));
    let is = change.new.as_ref().is_some_and(|o| selector.matches(o));
    let (kind, object) = match (was, is) {
        (false, false) => return None,
        (false, true) => ("ADDED", change.new.clone()),
        (true, true) => ("MODIFIED", change.new.clone()),
        (true, false) => ("DELETED", change.new.clone().or_else(|| change.old.clone())),
    };
    Some(line(&json!({"type": kind, "object": object})))
}

fn gone(compacted: u64, current: u64) -> Bytes {
    line(&json!({
        "type": "ERROR",
        "object": {
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "message": format!("too old resource version: {compacted} ({current})"),
            "reason": "Expired",
            "code": 410,
        },
    }))
}

fn line(value: &Value) -> Bytes {
    let mut text = serde_json::to_vec(value).unwrap();
    text.push(b'\n');
    Bytes::from(text)
}

fn key_of(kind: Kind, object: &Value) -> (Kind, String, String) {
    let meta = &object["metadata"];
    let field = |f: &str| meta[f].as_str().unwrap_or("").to_string();
    (kind, field("namespace"), field("name"))
}

/// Label and field selector terms, ANDed.
#[derive(Debug, Clone, Default)]
struct Selector {
    labels: Vec<Term>,
    fields: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum Term {
    Absent(String),
    Present(String),
    Equals(String, String),
    NotEquals(String, String),
}

impl Selector {
    fn parse(query: &HashMap<String, String>) -> Selector {
        let terms = |name: &str| -> Vec<String> {
            query
                .get(name)
                .map(|s| {
                    s.split(',')
                        .filter(|t| !t.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let labels = terms("labelSelector")
            .into_iter()
            .map(|t| {
                if let Some(key) = t.strip_prefix('!') {
                    Term::Absent(key.to_string())
                } else if let Some((k, v)) = t.split_once("!=") {
                    Term::NotEquals(k.to_string(), v.to_string())
                } else if let Some((k, v)) = t.split_once('=') {
                    Term::Equals(k.to_string(), v.trim_start_matches('=').to_string())
                } else {
                    Term::Present(t)
                }
            })
            .collect();
        let fields = terms("fieldSelector")
            .into_iter()
            .map(|t| {
                let (k, v) = t.split_once('=').expect("field selector term");
                (k.to_string(), v.trim_start_matches('=').to_string())
            })
            .collect();
        Selector { labels, fields }
    }

    fn matches(&self, object: &Value) -> bool {
        let label = |k: &str| object["metadata"]["labels"][k].as_str();
        let labels_ok = self.labels.iter().all(|t| match t {
            Term::Absent(k) => label(k).is_none(),
            Term::Present(k) => label(k).is_some(),
            Term::Equals(k, v) => label(k) == Some(v.as_str()),
            Term::NotEquals(k, v) => label(k) != Some(v.as_str()),
        });
        let fields_ok = self.fields.iter().all(|(k, v)| {
            let path = k.strip_prefix("metadata.").expect("metadata field");
            object["metadata"][path].as_str().unwrap_or("") == v
        });
        labels_ok && fields_ok
    }
}

fn bind(addr: SocketAddr) -> tokio::net::TcpListener {
    try_bind(addr).unwrap()
}

fn try_bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(64)
}

/// Accepts connections until aborted; aborting drops every connection.
async fn serve(listener: tokio::net::TcpListener, cluster: Arc<Mutex<Cluster>>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        while connections.try_join_next().is_some() {}
        let cluster = Arc::clone(&cluster);
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let cluster = Arc::clone(&cluster);
                async move { Ok::<_, Infallible>(answer(req, &cluster).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

async fn answer(req: Request<Incoming>, cluster: &Mutex<Cluster>) -> Response<Body> {
    let query = parse_query(req.uri().query().unwrap_or(""));
    let Some(kind) = Kind::of_path(req.uri().path()) else {
        return status(StatusCode::NOT_FOUND, "NotFound");
    };
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    let unserved = {
        let mut c = cluster.lock().unwrap();
        c.log.push(Logged {
            kind,
            watch,
            query: query.clone(),
        });
        c.unserved.contains(&kind)
    };
    if unserved {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .header("content-type", "text/plain; charset=utf-8")
            .body(Full::new(Bytes::from_static(b"404 page not found\n")).boxed_unsync())
            .unwrap();
    }
    if watch && query.get("sendInitialEvents").is_some_and(|v| v == "true") {
        wait_while_held(kind, cluster).await;
    }
    if watch {
        open_watch(kind, &query, cluster)
    } else {
        list(kind, &query, cluster).await
    }
}

/// Waits while [`FakeApi::hold_lists`] holds `kind`'s lists.
async fn wait_while_held(kind: Kind, cluster: &Mutex<Cluster>) {
    let held = cluster
        .lock()
        .unwrap()
        .held
        .get(&kind)
        .map(|s| s.subscribe());
    if let Some(mut held) = held {
        let _ = held.wait_for(|held| !held).await;
    }
}

async fn list(
    kind: Kind,
    query: &HashMap<String, String>,
    cluster: &Mutex<Cluster>,
) -> Response<Body> {
    wait_while_held(kind, cluster).await;
    let selector = Selector::parse(query);
    let c = cluster.lock().unwrap();
    let matching = c
        .objects
        .iter()
        .filter(|((k, _, _), o)| *k == kind && selector.matches(o));
    // Pages: `continue` is the offset of the next item.
    let offset: usize = query.get("continue").map_or(0, |c| c.parse().unwrap());
    let from_cache = !c.no_watch_cache
        && !query.contains_key("continue")
        && query.get("resourceVersion").is_some_and(|rv| rv == "0");
    let limit: usize = match query.get("limit") {
        Some(l) if !from_cache => l.parse().unwrap(),
        _ => usize::MAX,
    };
    let mut page: Vec<Value> = matching
        .skip(offset)
        .take(limit.saturating_add(1))
        .map(|(_, o)| {
            let mut item = o.clone();
            let map = item.as_object_mut().unwrap();
            map.remove("apiVersion");
            map.remove("kind");
            item
        })
        .collect();
    let more = page.len() > limit;
    page.truncate(limit);
    let mut metadata = json!({"resourceVersion": c.rv.to_string()});
    if more {
        metadata["continue"] = json!((offset + limit).to_string());
    }
    let body = json!({
        "apiVersion": kind.api_version(),
        "kind": format!("{}List", kind.kind()),
        "metadata": metadata,
        "items": page,
    });
    json_response(StatusCode::OK, &body)
}

/// Replays the changes after the requested version and registers the
/// watch for live ones, under one lock so nothing falls in between.
fn open_watch(
    kind: Kind,
    query: &HashMap<String, String>,
    cluster: &Mutex<Cluster>,
) -> Response<Body> {
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0);
    let selector = Selector::parse(query);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut c = cluster.lock().unwrap();
    let flag = |name: &str| query.get(name).map(String::as_str);
    if flag("sendInitialEvents") == Some("true") {
        if c.refuse_streaming
            || flag("allowWatchBookmarks") != Some("true")
            || flag("resourceVersionMatch") != Some("NotOlderThan")
        {
            return status(StatusCode::UNPROCESSABLE_ENTITY, "Invalid");
        }
        let complete = send_initial_events(&c, kind, &selector, &tx);
        if !complete {
            drop(tx);
        } else {
            c.watches.push(OpenWatch {
                kind,
                selector,
                bookmarks: true,
                tx,
            });
        }
    } else if from < c.compacted {
        let _ = tx.send(gone(from, c.rv));
        drop(tx);
    } else {
        for change in c
            .history
            .iter()
            .filter(|ch| ch.kind == kind && ch.rv > from)
        {
            if let Some(event) = event_for(&selector, change) {
                let _ = tx.send(event);
            }
        }
        c.watches.push(OpenWatch {
            kind,
            selector,
            bookmarks: query
                .get("allowWatchBookmarks")
                .is_some_and(|b| b == "true"),
            tx,
        });
    }
    drop(c);
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|bytes| (Ok(Frame::data(bytes)), rx))
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(BodyExt::boxed_unsync(StreamBody::new(stream.boxed())))
        .unwrap()
}

/// A streaming list's opening: the matching objects as `ADDED`, then the
/// end bookmark; `false` when cut short (no bookmark).
fn send_initial_events(
    c: &Cluster,
    kind: Kind,
    selector: &Selector,
    tx: &mpsc::UnboundedSender<Bytes>,
) -> bool {
    let matching = c
        .objects
        .iter()
        .filter(|((k, _, _), o)| *k == kind && selector.matches(o));
    for (sent, (_, object)) in matching.enumerate() {
        if c.cut_streaming_after.is_some_and(|n| sent >= n) {
            return false;
        }
        let _ = tx.send(line(&json!({"type": "ADDED", "object": object})));
    }
    if c.cut_streaming_after.is_some() {
        return false;
    }
    let bookmark = json!({
        "apiVersion": kind.api_version(),
        "kind": kind.kind(),
        "metadata": {
            "resourceVersion": c.rv.to_string(),
            "annotations": {"k8s.io/initial-events-end": "true"},
        },
    });
    let _ = tx.send(line(&json!({"type": "BOOKMARK", "object": bookmark})));
    true
}

fn json_response(code: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())).boxed_unsync())
        .unwrap()
}

fn status(code: StatusCode, reason: &str) -> Response<Body> {
    json_response(
        code,
        &json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                "reason": reason, "code": code.as_u16()}),
    )
}

fn parse_query(query: &str) -> HashMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}
