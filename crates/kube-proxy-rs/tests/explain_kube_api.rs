//! `explain` against an API server: the cluster state of `explain
//! service`'s drift check (and of `explain dump`) comes from one complete
//! list of the proxy's API server when its flags name one (`--master`
//! here; `--kubeconfig` the same way), not only from `--manifests`. The
//! source crate's fake API server runs in a network namespace of the
//! test's own (it binds that namespace's loopback). A Service's rules as
//! the proxy renders them for the API's objects show no drift; after an
//! endpoint is added in the API, the rules for it are reported missing.
//! Needs root; without it the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../../source/tests/kube/fake_api.rs"]
mod fake_api;

#[path = "support/shop_objects.rs"]
mod shop_objects;

use fake_api::{FakeApi, Kind};
use shop_objects::{service, slice};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use testkit::netns::Netns;

fn node() -> Value {
    json!({
        "metadata": {"name": "node-a", "labels": {"kubernetes.io/hostname": "node-a"}},
        "spec": {"podCIDRs": ["10.244.1.0/24"]},
        "status": {"addresses": [{"type": "InternalIP", "address": "192.168.0.2"}]},
    })
}

/// Runs the binary's `explain` with the proxy flags naming `api`.
fn explain(args: &[&str], api: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .arg("explain")
        .args(args)
        .args(["--node-ip", "192.168.0.2", "--", "--master", api, "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16"])
        .output()
        .unwrap();
    assert!(out.status.success(), "explain {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn drift(dump: &Path, api: &str) -> Value {
    let file = dump.to_str().unwrap();
    let report = explain(&["service", "shop/web", "--mode", "iptables", "--from-file", file, "-o", "json"], api);
    serde_json::from_str::<Value>(&report).unwrap()["families"][0]["drift"].clone()
}

async fn scenario() {
    let api = FakeApi::start_new().await;
    api.apply(Kind::Nodes, node());
    api.apply(Kind::Services, service());
    api.apply(Kind::EndpointSlices, slice(&["10.244.2.5"]));
    let url = api.url();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("iptables-save.txt");

    let (u, d) = (url.clone(), dump.clone());
    let rules = tokio::task::spawn_blocking(move || {
        let rules = explain(&["dump", "--mode", "iptables"], &u);
        std::fs::write(&d, &rules).unwrap();
        rules
    })
    .await
    .unwrap();
    assert!(rules.contains("shop/web:http -> 10.244.2.5:8080"), "the API's endpoint is rendered:\n{rules}");
    let (u, d) = (url.clone(), dump.clone());
    let clean = tokio::task::spawn_blocking(move || drift(&d, &u)).await.unwrap();
    assert_eq!(clean["missing"], json!([]), "{clean}");
    assert_eq!(clean["extra"], json!([]), "{clean}");

    api.apply(Kind::EndpointSlices, slice(&["10.244.2.5", "10.244.2.6"]));
    let (u, d) = (url.clone(), dump.clone());
    let drifted = tokio::task::spawn_blocking(move || drift(&d, &u)).await.unwrap();
    let missing: Vec<String> = drifted["missing"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect();
    assert!(missing.iter().any(|l| l.contains("--to-destination 10.244.2.6:8080")), "the new endpoint's DNAT is missing: {drifted}");
    assert!(missing.iter().all(|l| l.contains("10.244.2.6") || l.contains("KUBE-SVC-")), "only the new endpoint's rules (and its balancing) drift: {drifted}");
}

#[test]
fn drift_against_the_api_servers_objects() {
    testkit::netns::require_kernel();
    let ns = Netns::new("explain-api").unwrap();
    ns.ip(&["link", "set", "lo", "up"]).unwrap();
    ns.run(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(scenario());
    })
    .unwrap();
}
