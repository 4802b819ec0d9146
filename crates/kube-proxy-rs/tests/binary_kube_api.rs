//! The binary against an API server: `kube-proxy-rs --master URL` in a
//! network namespace of its own, talking to the fake API server of the
//! source crate's tests (list + chunked watch, run inside the same
//! namespace). It shows, through the real binary and kernel: no sync (and
//! no rule) before the first complete list; the rules follow the API's
//! objects; the node is watched by name; the node keeps its rules while the
//! API server is down and catches up when it returns. Needs root; without
//! it the tests fail.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../../source/tests/kube/fake_api.rs"]
mod fake_api;

#[path = "support/shop_objects.rs"]
mod shop_objects;

#[path = "support/proxy.rs"]
mod proxy;

use fake_api::{FakeApi, Kind};
use shop_objects::{service, slice};
use proxy::{BINARY, PATIENCE, Proxy};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use testkit::netns::Netns;
const SYNCED: &str = "synced iptables rules ip_family=IPv4";

fn node(name: &str, ip: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"podCIDRs": ["10.244.1.0/24"]},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
    })
}

fn saved_table(table: &str) -> String {
    let out = std::process::Command::new("iptables-legacy-save").args(["-t", table]).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn nat_rules() -> String {
    saved_table("nat")
}

fn endpoint_chains(rules: &str) -> usize {
    rules.lines().filter(|l| l.starts_with(":KUBE-SEP-")).count()
}

/// Waits until `nat_rules()` has `want` endpoint chains, with syncs between.
async fn wait_for_endpoint_chains(log: &mut Proxy, want: usize) {
    let start = Instant::now();
    while endpoint_chains(&nat_rules()) != want {
        assert!(start.elapsed() < PATIENCE, "want {want} KUBE-SEP chains, have:\n{}", nat_rules());
        log.wait_for_async(SYNCED).await;
    }
}

async fn scenario(ns_name: String) {
    let mut api = FakeApi::start_new().await;
    api.apply(Kind::Nodes, node("node-a", "192.168.0.2"));
    api.apply(Kind::Nodes, node("node-b", "192.168.0.3"));
    api.apply(Kind::Services, service());
    api.apply(Kind::EndpointSlices, slice(&["10.244.2.5"]));
    api.hold_lists(Kind::EndpointSlices);

    let mut command = std::process::Command::new(BINARY);
    command
        .args(["--master", &api.url(), "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16"])
        .args(["--iptables-backend", "legacy", "--iptables-sync-period", "1s", "--iptables-min-sync-period", "0s"])
        .args(["--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249"]);
    let mut log = Proxy::start(command);

    // Services listed, EndpointSlices held: no sync, no rule.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let early: Vec<String> = log.drain().into_iter().filter(|l| l.contains(SYNCED)).collect();
    assert!(early.is_empty(), "synced before the EndpointSlice list arrived: {early:?}");
    assert!(!nat_rules().contains("KUBE-SERVICES"), "rules before the first list in {ns_name}:\n{}", nat_rules());

    api.release_lists(Kind::EndpointSlices);
    log.wait_for_async(SYNCED).await;
    let rules = nat_rules();
    assert!(rules.contains("shop/web:http"), "no rules for shop/web:\n{rules}");
    assert_eq!(endpoint_chains(&rules), 1, "{rules}");
    for kind in [Kind::Services, Kind::EndpointSlices] {
        // One streaming list from the watch cache, no plain list.
        assert_eq!((api.streaming_lists(kind), api.lists(kind)), (1, 0), "{kind:?}: {:?}", api.log());
    }
    let nodes: Vec<_> = api.log().into_iter().filter(|l| l.kind == Kind::Nodes).collect();
    assert!(
        nodes.iter().all(|l| l.query.get("fieldSelector").map(String::as_str) == Some("metadata.name=node-a")),
        "the node is not watched by its name: {nodes:?}"
    );

    api.apply(Kind::EndpointSlices, slice(&["10.244.2.5", "10.244.2.6"]));
    wait_for_endpoint_chains(&mut log, 2).await;

    api.stop();
    log.wait_for_async(SYNCED).await;
    log.wait_for_async(SYNCED).await;
    assert_eq!(endpoint_chains(&nat_rules()), 2, "rules changed while the API server was down:\n{}", nat_rules());

    api.start().await;
    api.delete(Kind::EndpointSlices, "shop", "web-1");
    wait_for_endpoint_chains(&mut log, 0).await;
    assert!(saved_table("filter").contains("shop/web:http has no endpoints"), "no REJECT:\n{}", saved_table("filter"));

    log.stop();
}

#[test]
fn the_binary_follows_the_api_server() {
    testkit::netns::require_kernel();
    let ns = Netns::new("kubeapi").unwrap();
    let name = ns.name().to_string();
    // Everything below runs in the namespace: the fake server binds its
    // loopback, and the proxy (a child of this thread) inherits it.
    ns.run(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(scenario(name));
    })
    .unwrap();
}

/// `--feature-gates WatchListClient=false`: plain lists (from the watch
/// cache, at resourceVersion 0), no streaming list, as upstream with the gate off.
async fn gate_off_scenario() {
    let api = FakeApi::start_new().await;
    api.apply(Kind::Nodes, node("node-a", "192.168.0.2"));
    api.apply(Kind::Services, service());
    api.apply(Kind::EndpointSlices, slice(&["10.244.2.5"]));
    let mut command = std::process::Command::new(BINARY);
    command
        .args(["--master", &api.url(), "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16"])
        .args(["--iptables-backend", "legacy", "--feature-gates", "WatchListClient=false"])
        .args(["--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249"]);
    let mut log = Proxy::start(command);
    log.wait_for_async(SYNCED).await;
    assert_eq!(endpoint_chains(&nat_rules()), 1, "{}", nat_rules());
    for kind in [Kind::Services, Kind::EndpointSlices] {
        assert_eq!((api.streaming_lists(kind), api.lists(kind)), (0, 1), "{kind:?}: {:?}", api.log());
        let list = api.log().into_iter().find(|l| l.kind == kind).unwrap();
        assert_eq!(list.query.get("resourceVersion").map(String::as_str), Some("0"), "{list:?}");
    }
    log.stop();
}

#[test]
fn the_watch_list_client_gate_off_lists_without_streaming() {
    testkit::netns::require_kernel();
    let ns = Netns::new("kubeapigate").unwrap();
    ns.run(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(gate_off_scenario());
    })
    .unwrap();
}

/// Service `shop/name` at `ip` and its EndpointSlice with one endpoint.
fn another_service(name: &str, ip: &str, endpoint: &str) -> (Value, Value) {
    let mut svc = service();
    svc["metadata"]["name"] = json!(name);
    svc["spec"]["clusterIP"] = json!(ip);
    svc["spec"]["clusterIPs"] = json!([ip]);
    let mut eps = slice(&[endpoint]);
    eps["metadata"]["name"] = json!(format!("{name}-1"));
    eps["metadata"]["labels"]["kubernetes.io/service-name"] = json!(name);
    (svc, eps)
}

/// The status upstream's e2e "service status lifecycle" test writes: a
/// condition whose `lastTransitionTime` is `null`. It once stopped the
/// Services watch for good; the Services created after it must get rules.
async fn odd_status_scenario() {
    let api = FakeApi::start_new().await;
    api.apply(Kind::Nodes, node("node-a", "192.168.0.2"));
    api.apply(Kind::Services, service());
    api.apply(Kind::EndpointSlices, slice(&["10.244.2.5"]));
    let mut command = std::process::Command::new(BINARY);
    command
        .args(["--master", &api.url(), "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16"])
        .args(["--iptables-backend", "legacy", "--iptables-min-sync-period", "0s"])
        .args(["--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249"]);
    let mut log = Proxy::start(command);
    log.wait_for_async(SYNCED).await;

    let mut odd = service();
    odd["status"] = json!({
        "loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]},
        "conditions": [{"type": "StatusUpdate", "status": "True", "reason": "E2E",
                        "message": "Set from e2e test", "lastTransitionTime": null}],
    });
    api.apply(Kind::Services, odd);
    let (late, late_slice) = another_service("late", "10.96.0.41", "10.244.2.7");
    api.apply(Kind::Services, late);
    api.apply(Kind::EndpointSlices, late_slice);

    let start = Instant::now();
    while !nat_rules().contains("shop/late:http") {
        assert!(start.elapsed() < PATIENCE, "no rules for the Service created after the odd status:\n{}", nat_rules());
        log.wait_for_async(SYNCED).await;
    }
    let failures: Vec<String> = log.drain().into_iter().filter(|l| l.contains("list/watch failed")).collect();
    assert!(failures.is_empty(), "the watch failed: {failures:?}");
    log.stop();
}

#[test]
fn a_service_status_with_a_null_time_does_not_stop_later_services() {
    testkit::netns::require_kernel();
    let ns = Netns::new("kubeapiodd").unwrap();
    ns.run(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(odd_status_scenario());
    })
    .unwrap();
}
