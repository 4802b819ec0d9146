//! Builders for API objects (from JSON, as manifests are written) and
//! helpers to look into snapshots.

use crate::{Tracker, Warning};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use serde_json::{Value, json};
use std::net::IpAddr;

pub(crate) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub(crate) fn tcp(ns: &str, name: &str, port: &str) -> ServicePortName {
    ServicePortName::new(ns, name, port, Protocol::Tcp)
}

/// A Service `ns/name` with the given `spec` (and optional `status`,
/// `labels`), like a manifest.
pub(crate) fn service(ns: &str, name: &str, spec: Value) -> Service {
    service_full(json!({"metadata": {"namespace": ns, "name": name}, "spec": spec}))
}

pub(crate) fn service_full(v: Value) -> Service {
    serde_json::from_value(v).unwrap()
}

/// A ClusterIP service with one TCP port `http` 80.
pub(crate) fn plain_service(ns: &str, name: &str, cluster_ip: &str) -> Service {
    service(
        ns,
        name,
        json!({"clusterIP": cluster_ip, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
    )
}

/// An IPv4 slice `ns/name` of service `svc` (no label when `None`).
pub(crate) fn slice(
    ns: &str,
    name: &str,
    svc: Option<&str>,
    ports: Value,
    endpoints: Value,
) -> EndpointSlice {
    let labels = match svc {
        Some(s) => json!({"kubernetes.io/service-name": s}),
        None => json!({}),
    };
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "addressType": "IPv4",
        "ports": ports,
        "endpoints": endpoints,
    }))
    .unwrap()
}

pub(crate) fn slice_full(v: Value) -> EndpointSlice {
    serde_json::from_value(v).unwrap()
}

/// One ready endpoint on `node`.
pub(crate) fn ep(addr: &str, node: &str) -> Value {
    json!({"addresses": [addr], "nodeName": node, "conditions": {"ready": true}})
}

pub(crate) fn http_port(port: i32) -> Value {
    json!([{"name": "http", "port": port, "protocol": "TCP"}])
}

pub(crate) fn node(v: Value) -> Node {
    serde_json::from_value(v).unwrap()
}

/// The tracker for `node-a` after upserting `svc`, its snapshot and the
/// warnings.
pub(crate) fn with_service(svc: &Service) -> (Snapshot, Vec<Warning>) {
    let mut t = Tracker::new("node-a");
    let w = t.upsert_service(svc);
    (t.snapshot().0, w)
}

/// The only port of the only service in `snap`.
pub(crate) fn only_port(snap: &Snapshot) -> &ServicePort {
    assert_eq!(
        snap.services.len(),
        1,
        "{:?}",
        snap.services.keys().collect::<Vec<_>>()
    );
    snap.services.values().next().unwrap()
}

/// Snapshot contents with the sharing removed, for equality checks.
pub(crate) type Flat = (
    Vec<ServicePort>,
    Vec<(ServicePortName, Vec<Endpoint>)>,
    NodeInfo,
);

pub(crate) fn flat(s: &Snapshot) -> Flat {
    (
        s.services.values().map(|p| (**p).clone()).collect(),
        s.endpoints
            .iter()
            .map(|(k, v)| (k.clone(), (**v).clone()))
            .collect(),
        s.node.clone(),
    )
}
