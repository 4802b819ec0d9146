//! Objects for the fake API server and a proxy harness around
//! `source::kube::run`: upstream's test addresses (ClusterIPs in
//! 172.30.0.0/16, pods in 10.180.0.0/16, node IP 192.168.0.2).

#![allow(dead_code)]

use model::Snapshot;
use serde_json::{Value, json};
use source::kube::{Backoff, ClientSettings, SourceEvent, WatchOptions};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tracker::Tracker;

/// Our node.
pub const NODE: &str = "node-a";

/// Longest any one expectation may take.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// Short retries, so outages in tests cost milliseconds.
pub const FAST: Backoff = Backoff {
    initial: Duration::from_millis(20),
    max: Duration::from_millis(100),
};

/// A ClusterIP Service `ns/name` with one TCP port named `http` (80).
pub fn service(ns: &str, name: &str, cluster_ip: &str) -> Value {
    json!({
        "metadata": {"namespace": ns, "name": name, "labels": {}},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": cluster_ip,
            "clusterIPs": [cluster_ip],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
        },
    })
}

/// `object` with one more label.
pub fn labelled(mut object: Value, key: &str, value: &str) -> Value {
    object["metadata"]["labels"][key] = json!(value);
    object
}

/// An EndpointSlice `ns/slice` of `service` with ready endpoints on port 8080.
pub fn slice(ns: &str, service: &str, slice: &str, ips: &[&str]) -> Value {
    let endpoints: Vec<Value> = ips
        .iter()
        .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}, "nodeName": "node-b"}))
        .collect();
    json!({
        "metadata": {
            "namespace": ns,
            "name": slice,
            "labels": {"kubernetes.io/service-name": service},
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
}

/// A Node with one InternalIP.
pub fn node(name: &str, ip: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"podCIDRs": ["10.180.1.0/24"]},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
    })
}

/// A ServiceCIDR `name` with `cidrs`.
pub fn service_cidr(name: &str, cidrs: &[&str]) -> Value {
    json!({"metadata": {"name": name}, "spec": {"cidrs": cidrs}})
}

/// A fake API server holding `services` ClusterIP Services in namespace
/// `bench`, one EndpointSlice of `endpoints` ready endpoints each, and our
/// Node: the scale load of the list benchmarks and tests.
pub async fn loaded_api(services: usize, endpoints: usize) -> crate::fake_api::FakeApi {
    use crate::fake_api::{FakeApi, Kind};
    let api = FakeApi::start_new().await;
    for i in 0..services {
        let name = format!("svc-{i}");
        let ip = format!("172.30.{}.{}", i / 250, i % 250 + 1);
        api.apply(Kind::Services, service("bench", &name, &ip));
        let ips: Vec<String> = (0..endpoints)
            .map(|e| {
                let n = i * endpoints + e;
                format!("10.{}.{}.{}", 180 + n / 65_536, (n / 256) % 256, n % 256)
            })
            .collect();
        let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
        api.apply(Kind::EndpointSlices, slice("bench", &name, &format!("{name}-1"), &ips));
    }
    api.apply(Kind::Nodes, node(NODE, "192.168.0.2"));
    api
}

/// The snapshot's service CIDRs as text.
pub fn service_cidrs(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .service_cidrs
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Endpoint IPs by service port, as `ns/name:port` → sorted IPs; every
/// service port appears, with an empty list if it has no endpoints.
pub fn endpoints(snapshot: &Snapshot) -> BTreeMap<String, Vec<String>> {
    snapshot
        .services
        .keys()
        .map(|name| {
            let ips = snapshot
                .endpoints_of(name)
                .iter()
                .map(|e| e.ip.to_string())
                .collect();
            (name.to_string(), ips)
        })
        .collect()
}

/// `ns/name:port` of every service port.
pub fn services(snapshot: &Snapshot) -> Vec<String> {
    snapshot.services.keys().map(ToString::to_string).collect()
}

/// `source::kube::run` against a fake API server, recording its events.
pub struct Proxy {
    pub tracker: Arc<Mutex<Tracker>>,
    pub events: mpsc::UnboundedReceiver<SourceEvent>,
    /// Every event received so far by [`Proxy::next_event`] / drains.
    pub seen: Vec<SourceEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts the watchers for [`NODE`] against `url`, without a rate
    /// limit, retrying fast.
    pub fn start(url: &str) -> Proxy {
        Self::start_with(
            url,
            WatchOptions {
                backoff: FAST,
                ..WatchOptions::default()
            },
        )
    }

    /// [`Proxy::start`] with other watch options.
    pub fn start_with(url: &str, options: WatchOptions) -> Proxy {
        let config = kube::Config::new(url.parse().unwrap());
        let settings = ClientSettings {
            qps: -1.0,
            ..ClientSettings::default()
        };
        let client = source::kube::client_from_config(config, &settings).unwrap();
        let tracker = Arc::new(Mutex::new(Tracker::new(NODE)));
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(source::kube::run(
            client,
            Arc::clone(&tracker),
            options,
            move |event| {
                let _ = tx.send(event);
            },
        ));
        Proxy {
            tracker,
            events,
            seen: Vec::new(),
            task,
        }
    }

    /// The next event; panics after [`PATIENCE`].
    pub async fn next_event(&mut self) -> SourceEvent {
        let event = tokio::time::timeout(PATIENCE, self.events.recv())
            .await
            .expect("no event from the source in time")
            .expect("the source stopped");
        self.seen.push(event);
        event
    }

    /// Waits for [`SourceEvent::InitialListDone`], returning the events
    /// before it.
    pub async fn initial_list(&mut self) -> Vec<SourceEvent> {
        let mut before = Vec::new();
        loop {
            match self.next_event().await {
                SourceEvent::InitialListDone => return before,
                other => before.push(other),
            }
        }
    }

    /// Collects events for `period`.
    pub async fn events_for(&mut self, period: Duration) -> Vec<SourceEvent> {
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + period;
        while let Ok(Some(event)) = tokio::time::timeout_at(deadline, self.events.recv()).await {
            self.seen.push(event);
            got.push(event);
        }
        got
    }

    /// Takes a snapshot, as the runner would.
    pub fn snapshot(&self) -> Snapshot {
        self.tracker.lock().unwrap().snapshot().0
    }

    /// Polls snapshots until `ok` holds; panics with `what` after
    /// [`PATIENCE`], showing the last snapshot's endpoints.
    pub async fn wait_for(&self, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Snapshot {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let snapshot = self.snapshot();
            if ok(&snapshot) {
                return snapshot;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; tracker has {:?}",
                endpoints(&snapshot)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
