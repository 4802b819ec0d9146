//! `/metrics` of the binary in iptables mode on a real kernel, in a network
//! namespace of its own, fed `examples/cluster.yaml`: after the first sync
//! and one `/healthz` and `/livez` call, a scrape lists every metric name
//! of upstream v1.36's iptables-mode scrape (`testdata/`); after a Service
//! and an EndpointSlice change in the manifests file, the change counters
//! have moved by one each and, once a sync took the changes, the pending
//! gauges are back to 0. Needs root; without it the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/proxy.rs"]
mod proxy;

use proxy::{BINARY, PATIENCE, Proxy};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Instant;
use testkit::netns::Netns;

const METRICS: &str = "127.0.0.1:10249";
const NODE_HEALTH: &str = "127.0.0.1:10256";

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

fn args(manifests: &Path) -> Vec<String> {
    let manifests = manifests.display().to_string();
    [
        "--manifests", &manifests, "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16",
        "--iptables-backend", "legacy", "--iptables-sync-period", "1s", "--iptables-min-sync-period", "0s",
        "--healthz-bind-address", NODE_HEALTH, "--metrics-bind-address", METRICS,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `GET path` from inside the namespace; the status line and the body.
fn get(ns: &Netns, addr: &'static str, path: &'static str) -> (String, String) {
    let reply = ns
        .run(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
            let mut reply = String::new();
            stream.read_to_string(&mut reply).unwrap();
            reply
        })
        .unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (head.lines().next().unwrap_or_default().to_string(), body.to_string())
}

fn scrape(ns: &Netns) -> String {
    let (status, body) = get(ns, METRICS, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    body
}

/// The names in `# TYPE <name> <kind>` lines.
fn metric_names(text: &str) -> BTreeSet<String> {
    text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).map(String::from).collect()
}

/// The value of the series printed exactly as `series`.
fn value(text: &str, series: &str) -> f64 {
    let line = text.lines().find(|l| l.strip_prefix(series).is_some_and(|rest| rest.starts_with(' ')));
    line.unwrap_or_else(|| panic!("no {series} in\n{text}")).rsplit(' ').next().unwrap().parse().unwrap()
}

/// `text` with the one occurrence of `from` replaced.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "{from:?} must occur once in the example");
    text.replacen(from, to, 1)
}

const SERVICE_CHANGES: &str = "kubeproxy_sync_proxy_rules_service_changes_total";
const ENDPOINT_CHANGES: &str = "kubeproxy_sync_proxy_rules_endpoint_changes_total";
const SERVICE_PENDING: &str = "kubeproxy_sync_proxy_rules_service_changes_pending";
const ENDPOINT_PENDING: &str = "kubeproxy_sync_proxy_rules_endpoint_changes_pending";

#[test]
fn scrape_lists_every_upstream_metric_and_change_counters_move() {
    testkit::netns::require_kernel();
    let ns = Netns::new("metrics").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("cluster.yaml");
    let original = std::fs::read_to_string(repo_file("examples/cluster.yaml")).unwrap();
    std::fs::write(&manifests, &original).unwrap();
    let mut command = ns.command(BINARY);
    command.args(args(&manifests));
    let mut proxy = Proxy::start(command);
    proxy.wait_for("synced iptables rules");

    assert_eq!(get(&ns, NODE_HEALTH, "/healthz").0, "HTTP/1.1 200 OK");
    assert_eq!(get(&ns, NODE_HEALTH, "/livez").0, "HTTP/1.1 200 OK");
    let first = scrape(&ns);
    let reference = std::fs::read_to_string(repo_file("testdata/upstream-v1.36/iptables/healthz/metrics-kubeproxy.txt")).unwrap();
    let upstream = metric_names(&reference);
    assert!(upstream.len() >= 17, "the reference lists upstream's families: {upstream:?}");
    let ours = metric_names(&first);
    let missing: Vec<&String> = upstream.difference(&ours).collect();
    assert!(missing.is_empty(), "metrics upstream serves but our scrape lacks: {missing:#?}\n{first}");
    assert_eq!(value(&first, "kubeproxy_proxy_healthz_total{code=\"200\"}"), 1.0);
    assert!(value(&first, SERVICE_CHANGES) >= 15.0, "the initial state counts every handled Service:\n{first}");
    assert!(value(&first, ENDPOINT_CHANGES) >= 15.0, "and every EndpointSlice:\n{first}");

    // One Service (storefront/web's traffic policy) and one EndpointSlice
    // (an endpoint of web-x7k2p-0) change.
    let changed = replace_once(&original, "  - 10.96.10.10\n  internalTrafficPolicy: Cluster\n", "  - 10.96.10.10\n  internalTrafficPolicy: Local\n");
    let changed = replace_once(&changed, "  - 10.244.0.11\n", "  - 10.244.0.12\n");
    let before = scrape(&ns);
    let tmp = dir.path().join("next.yaml");
    std::fs::write(&tmp, changed).unwrap();
    std::fs::rename(&tmp, &manifests).unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut after = scrape(&ns);
    while value(&after, ENDPOINT_CHANGES) == value(&before, ENDPOINT_CHANGES) && Instant::now() < deadline {
        proxy.wait_for("synced iptables rules");
        after = scrape(&ns);
    }
    // Two more syncs: the one in flight may have taken its snapshot before the change.
    proxy.wait_for("synced iptables rules");
    proxy.wait_for("synced iptables rules");
    let synced = scrape(&ns);
    proxy.stop();

    assert_eq!(value(&synced, SERVICE_CHANGES), value(&before, SERVICE_CHANGES) + 1.0, "{synced}");
    assert_eq!(value(&synced, ENDPOINT_CHANGES), value(&before, ENDPOINT_CHANGES) + 1.0, "{synced}");
    assert_eq!(value(&synced, SERVICE_PENDING), 0.0, "{synced}");
    assert_eq!(value(&synced, ENDPOINT_PENDING), 0.0, "{synced}");
    let syncs = "kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"}";
    assert!(value(&synced, syncs) > value(&first, syncs), "{synced}");
    let reconciles = "kubeproxy_conntrack_reconciler_sync_duration_seconds_count{ip_family=\"IPv4\"}";
    assert!(value(&synced, reconciles) > value(&first, reconciles), "a cleanup after every sync:\n{synced}");
}
