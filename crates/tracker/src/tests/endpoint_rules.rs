//! EndpointSlice → endpoint rules and their warnings.

use super::support::*;
use crate::{IpFamily, Problem, Tracker};
use model::{Endpoint, Protocol, ServicePortName};
use serde_json::json;

fn tracker_with_web() -> Tracker {
    let mut t = Tracker::new("node-a");
    t.upsert_service(&plain_service("ns", "web", "10.96.0.1"));
    t
}

fn web_endpoints(t: &mut Tracker) -> Vec<Endpoint> {
    t.snapshot()
        .0
        .endpoints_of(&tcp("ns", "web", "http"))
        .to_vec()
}

fn addrs(eps: &[Endpoint]) -> Vec<String> {
    eps.iter().map(|e| e.to_string()).collect()
}

#[test]
fn slices_merge_sorted_and_local_by_node_name() {
    let mut t = tracker_with_web();
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-b",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.3", "node-c")]),
    ));
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-a",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.2", "node-b"), ep("10.0.0.1", "node-a"), {"addresses": ["10.0.0.4"]}]),
    ));
    let eps = web_endpoints(&mut t);
    assert_eq!(
        addrs(&eps),
        [
            "10.0.0.1:8080",
            "10.0.0.2:8080",
            "10.0.0.3:8080",
            "10.0.0.4:8080"
        ]
    );
    let local: Vec<bool> = eps.iter().map(|e| e.is_local).collect();
    assert_eq!(local, [true, false, false, false]);
    assert_eq!(eps[0].node_name.as_deref(), Some("node-a"));
    assert_eq!(eps[3].node_name, None);
}

#[test]
fn same_ip_port_in_two_slices_counts_once_preferring_local() {
    let mut t = tracker_with_web();
    let remote =
        json!([{"addresses": ["10.0.0.1"], "nodeName": "node-b", "conditions": {"ready": false}}]);
    t.upsert_endpoint_slice(&slice("ns", "web-a", Some("web"), http_port(8080), remote));
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-b",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-c",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.1", "node-c")]),
    ));
    let eps = web_endpoints(&mut t);
    assert_eq!(eps.len(), 1);
    assert!(eps[0].is_local && eps[0].ready);
}

#[test]
fn ports_match_by_name_and_protocol() {
    let mut t = tracker_with_web();
    let ports = json!([
        {"name": "http", "port": 8080, "protocol": "UDP"},
        {"name": "metrics", "port": 9090},
        {"name": "http", "port": 8081},
    ]);
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-a",
        Some("web"),
        ports,
        json!([ep("10.0.0.1", "node-b")]),
    ));
    let snap = t.snapshot().0;
    assert_eq!(
        addrs(snap.endpoints_of(&tcp("ns", "web", "http"))),
        ["10.0.0.1:8081"]
    );
    assert!(
        snap.endpoints_of(&ServicePortName::new("ns", "web", "http", Protocol::Udp))
            .is_empty()
    );
    assert_eq!(
        snap.endpoints.len(),
        1,
        "no entries for ports the service does not have"
    );
}

#[test]
fn conditions_defaults_as_upstream() {
    let mut t = tracker_with_web();
    let eps = json!([
        {"addresses": ["10.0.0.1"]},
        {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
        {"addresses": ["10.0.0.3"], "conditions": {"ready": false, "serving": true, "terminating": true}},
        {"addresses": ["10.0.0.4"], "conditions": {"ready": false, "serving": false, "terminating": true}},
    ]);
    t.upsert_endpoint_slice(&slice("ns", "web-a", Some("web"), http_port(8080), eps));
    let got: Vec<(bool, bool, bool)> = web_endpoints(&mut t)
        .iter()
        .map(|e| (e.ready, e.serving, e.terminating))
        .collect();
    // ready unset → true; serving unset → true (upstream's proxy); terminating unset → false.
    assert_eq!(
        got,
        [
            (true, true, false),
            (false, true, false),
            (false, true, true),
            (false, false, true)
        ]
    );
}

#[test]
fn slice_without_service_name_is_skipped_with_a_warning() {
    let mut t = tracker_with_web();
    let w = t.upsert_endpoint_slice(&slice(
        "ns",
        "orphan",
        None,
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].problem, Problem::SliceWithoutServiceName);
    assert_eq!(
        w[0].to_string(),
        "EndpointSlice ns/orphan: no kubernetes.io/service-name label; slice skipped"
    );
    let good = t.upsert_endpoint_slice(&slice(
        "ns",
        "web-a",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.2", "node-a")]),
    ));
    assert!(good.is_empty());
    assert_eq!(addrs(&web_endpoints(&mut t)), ["10.0.0.2:8080"]);
}

#[test]
fn slices_of_other_address_types_are_ignored_silently() {
    for address_type in ["IPv6", "FQDN"] {
        let mut t = tracker_with_web();
        let s = slice_full(json!({
            "metadata": {"namespace": "ns", "name": "web-a", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": address_type,
            "ports": [{"name": "http", "port": 8080}],
            "endpoints": [{"addresses": ["fd00::1"]}],
        }));
        assert!(t.upsert_endpoint_slice(&s).is_empty());
        assert!(web_endpoints(&mut t).is_empty());
    }
}

#[test]
fn ipv6_tracker_reads_ipv6_slices() {
    let mut t = Tracker::with_family("node-a", IpFamily::V6);
    t.upsert_service(&plain_service("ns", "web", "fd00::10"));
    let s = slice_full(json!({
        "metadata": {"namespace": "ns", "name": "web-a", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv6",
        "ports": [{"name": "http", "port": 8080}],
        "endpoints": [{"addresses": ["fd00::1"]}, {"addresses": ["10.0.0.1"]}],
    }));
    assert!(t.upsert_endpoint_slice(&s).is_empty());
    assert_eq!(addrs(&web_endpoints(&mut t)), ["[fd00::1]:8080"]);
}

#[test]
fn bad_endpoints_and_ports_skip_only_themselves() {
    let mut t = tracker_with_web();
    let ports = json!([
        {"name": "http", "port": 8080},
        {"name": "zero", "port": 0},
        {"name": "unset"},
        {"name": "big", "port": 65536},
        {"name": "proto", "port": 1, "protocol": "GRE"},
    ]);
    let eps = json!([
        ep("10.0.0.1", "node-a"),
        {"addresses": []},
        {"addresses": ["10.0.0.999"]},
        ep("10.0.0.2", "node-b"),
    ]);
    let w = t.upsert_endpoint_slice(&slice("ns", "web-a", Some("web"), ports, eps));
    let problems: Vec<Problem> = w.iter().map(|w| w.problem.clone()).collect();
    assert_eq!(
        problems,
        [
            Problem::BadEndpointPort {
                port: "zero".into(),
                value: Some(0)
            },
            Problem::BadEndpointPort {
                port: "unset".into(),
                value: None
            },
            Problem::BadEndpointPort {
                port: "big".into(),
                value: Some(65536)
            },
            Problem::BadEndpointProtocol {
                port: "proto".into(),
                value: "GRE".into()
            },
            Problem::EndpointWithoutAddress,
            Problem::BadEndpointAddress("10.0.0.999".into()),
        ]
    );
    assert!(w.iter().all(|w| w.object() == "EndpointSlice ns/web-a"));
    assert_eq!(
        addrs(&web_endpoints(&mut t)),
        ["10.0.0.1:8080", "10.0.0.2:8080"]
    );
}

#[test]
fn updating_one_slice_replaces_only_its_part() {
    let mut t = tracker_with_web();
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-a",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-b",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.2", "node-b")]),
    ));
    assert_eq!(web_endpoints(&mut t).len(), 2);
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-b",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.3", "node-b")]),
    ));
    assert_eq!(
        addrs(&web_endpoints(&mut t)),
        ["10.0.0.1:8080", "10.0.0.3:8080"]
    );
    t.delete_endpoint_slice(&slice("ns", "web-a", Some("web"), json!([]), json!([])));
    assert_eq!(addrs(&web_endpoints(&mut t)), ["10.0.0.3:8080"]);
}

#[test]
fn a_slice_moving_to_another_service_changes_both() {
    let mut t = tracker_with_web();
    t.upsert_service(&plain_service("ns", "api", "10.96.0.2"));
    t.upsert_endpoint_slice(&slice(
        "ns",
        "s1",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    t.snapshot();
    t.upsert_endpoint_slice(&slice(
        "ns",
        "s1",
        Some("api"),
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    let (snap, changes) = t.snapshot();
    assert!(snap.endpoints_of(&tcp("ns", "web", "http")).is_empty());
    assert_eq!(snap.endpoints_of(&tcp("ns", "api", "http")).len(), 1);
    let changed: Vec<String> = changes.services.iter().map(|s| s.to_string()).collect();
    assert_eq!(changed, ["ns/api", "ns/web"]);
    // Losing the label later removes the slice from its old service too.
    t.upsert_endpoint_slice(&slice(
        "ns",
        "s1",
        None,
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    assert!(t.snapshot().0.endpoints.is_empty());
}

#[test]
fn endpoints_wait_for_their_service() {
    let mut t = Tracker::new("node-a");
    t.upsert_endpoint_slice(&slice(
        "ns",
        "web-a",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    assert!(t.snapshot().0.endpoints.is_empty());
    t.upsert_service(&plain_service("ns", "web", "10.96.0.1"));
    assert_eq!(web_endpoints(&mut t).len(), 1);
    t.delete_service(&plain_service("ns", "web", "10.96.0.1"));
    let snap = t.snapshot().0;
    assert!(snap.services.is_empty() && snap.endpoints.is_empty());
}

#[test]
fn same_service_name_in_another_namespace_is_another_service() {
    let mut t = tracker_with_web();
    t.upsert_endpoint_slice(&slice(
        "other",
        "web-a",
        Some("web"),
        http_port(8080),
        json!([ep("10.0.0.1", "node-a")]),
    ));
    assert!(web_endpoints(&mut t).is_empty());
}
