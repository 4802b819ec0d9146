//! What the real API server sends beyond the objects our own tests write:
//! `null` where the schema says required (a Service status condition with
//! `"lastTransitionTime": null`, as upstream's e2e "service status
//! lifecycle" test writes it), unknown fields, huge values, malformed
//! fields the proxy reads, a line no client can decode. No object stops
//! the source: through streaming lists, lists and watches, for every kind.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "kube/cluster.rs"]
mod cluster;
#[path = "kube/fake_api.rs"]
mod fake_api;

use cluster::{
    NODE, Proxy, endpoints, node, service, service_cidr, service_cidrs, services, slice,
};
use fake_api::{FakeApi, Kind};
use model::Snapshot;
use serde_json::{Value, json};

/// The status the e2e "service status lifecycle" test patches in: a
/// condition whose `lastTransitionTime` is Go's zero time, sent as `null`.
fn with_e2e_status(mut svc: Value) -> Value {
    svc["status"] = json!({
        "loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]},
        "conditions": [{
            "type": "StatusUpdate", "status": "True", "reason": "E2E",
            "message": "Set from e2e test", "lastTransitionTime": null,
        }],
    });
    svc
}

/// `object` with what the API server may add that the proxy never reads:
/// unknown fields, `null`s in required fields, a 1 MiB annotation.
fn with_noise(mut object: Value) -> Value {
    object["metadata"]["annotations"] = json!({"big": "x".repeat(1 << 20), "nothing": null});
    object["metadata"]["managedFields"] =
        json!([{"manager": null, "time": null, "fieldsV1": {"f:spec": {}}}]);
    object["metadata"]["creationTimestamp"] = Value::Null;
    object["futureField"] = json!({"anything": [1, "two", null]});
    object
}

/// One object of each kind, odd in the ways of [`with_noise`] and more.
fn odd_cluster(api: &FakeApi) {
    let mut svc = with_noise(with_e2e_status(service("e2e", "lifecycle", "172.30.0.7")));
    svc["spec"]["selector"] = json!({"app": null});
    svc["spec"]["ports"][0]["targetPort"] = Value::Null;
    svc["spec"]["ipFamilies"] = json!([null]);
    api.apply(Kind::Services, svc);

    let mut eps = with_noise(slice("e2e", "lifecycle", "lifecycle-1", &["10.180.0.7"]));
    eps["endpoints"][0]["targetRef"] = json!({"kind": null, "uid": 42});
    eps["endpoints"][0]["deprecatedTopology"] = json!({"zone": null});
    eps["endpoints"][0]["hints"] = Value::Null;
    eps["ports"][0]["appProtocol"] = Value::Null;
    api.apply(Kind::EndpointSlices, eps);

    let mut ours = with_noise(node(NODE, "192.168.0.2"));
    ours["status"]["conditions"] = json!([{"type": "Ready", "status": "True", "lastHeartbeatTime": null,
                                          "lastTransitionTime": null}]);
    ours["status"]["images"] = json!([{"names": null, "sizeBytes": 1e300}]);
    ours["status"]["nodeInfo"] = json!({"kernelVersion": null});
    api.apply(Kind::Nodes, ours);

    let mut cidr = with_noise(service_cidr("kubernetes", &["172.30.0.0/16"]));
    cidr["status"] = json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": null,
                                            "reason": null, "message": null}]});
    api.apply(Kind::ServiceCidrs, cidr);
}

/// Everything [`odd_cluster`] holds reached the tracker.
async fn odd_cluster_tracked(proxy: &Proxy) -> Snapshot {
    proxy
        .wait_for("every odd object", |s| {
            endpoints(s).get("e2e/lifecycle:http") == Some(&vec!["10.180.0.7".to_string()])
                && s.node.addresses == vec!["192.168.0.2".parse::<std::net::IpAddr>().unwrap()]
                && service_cidrs(s) == ["172.30.0.0/16"]
        })
        .await
}

#[tokio::test]
async fn a_service_status_condition_with_a_null_time_does_not_stop_later_services() {
    let api = FakeApi::start_new().await;
    api.apply(Kind::Services, service("web", "a", "172.30.0.1"));
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;

    // Through the watch: the status update of the e2e lifecycle test...
    api.apply(
        Kind::Services,
        with_e2e_status(service("web", "a", "172.30.0.1")),
    );
    // ...and a Service created after it.
    api.apply(Kind::Services, service("web", "after", "172.30.0.2"));
    let snapshot = proxy
        .wait_for("the Service created after the odd status", |s| {
            services(s).contains(&"web/after:http".to_string())
        })
        .await;
    let a = snapshot
        .services
        .iter()
        .find(|(k, _)| k.service.name == "a")
        .map(|(_, v)| v)
        .expect("web/a kept");
    assert_eq!(
        a.load_balancer_ips,
        ["203.0.113.1".parse::<std::net::IpAddr>().unwrap()]
    );
}

#[tokio::test]
async fn odd_objects_of_every_kind_come_through_a_streaming_list() {
    let api = FakeApi::start_new().await;
    odd_cluster(&api);
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    odd_cluster_tracked(&proxy).await;
    assert!(api.streaming_lists(Kind::Services) >= 1);
}

#[tokio::test]
async fn odd_objects_of_every_kind_come_through_a_plain_list() {
    let api = FakeApi::start_new().await;
    api.refuse_streaming_lists();
    odd_cluster(&api);
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    odd_cluster_tracked(&proxy).await;
    assert!(api.lists(Kind::Services) >= 1);
}

#[tokio::test]
async fn odd_objects_of_every_kind_come_through_watches() {
    let api = FakeApi::start_new().await;
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    odd_cluster(&api);
    odd_cluster_tracked(&proxy).await;
}

#[tokio::test]
async fn a_malformed_service_is_absent_and_the_others_carry_on() {
    let api = FakeApi::start_new().await;
    let mut bad = service("web", "bad", "172.30.0.3");
    bad["spec"]["ports"][0]["port"] = json!("eighty");
    api.apply(Kind::Services, bad.clone());
    api.apply(Kind::Services, service("web", "a", "172.30.0.1"));
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    proxy
        .wait_for("a listed, bad not", |s| services(s) == ["web/a:http"])
        .await;

    // Through the watch: a good Service turned malformed is removed, and
    // the watch goes on to the Service after it.
    let mut a_bad = service("web", "a", "172.30.0.1");
    a_bad["spec"]["clusterIPs"] = json!("172.30.0.1");
    api.apply(Kind::Services, a_bad);
    api.apply(Kind::Services, service("web", "c", "172.30.0.4"));
    proxy
        .wait_for("a removed, c added", |s| services(s) == ["web/c:http"])
        .await;

    // Mended, both come back.
    api.apply(Kind::Services, service("web", "bad", "172.30.0.3"));
    api.apply(Kind::Services, service("web", "a", "172.30.0.1"));
    proxy
        .wait_for("a and bad back", |s| services(s).len() == 3)
        .await;
}

#[tokio::test]
async fn a_watch_stuck_at_an_unreadable_event_lists_afresh() {
    let api = FakeApi::start_new().await;
    api.apply(Kind::Services, service("web", "a", "172.30.0.1"));
    let mut proxy = Proxy::start(&api.url());
    proxy.initial_list().await;
    let streaming_before = api.streaming_lists(Kind::Services);

    // Every watch resuming from before it meets the unreadable line first.
    api.send_unreadable(Kind::Services);
    api.apply(Kind::Services, service("web", "after", "172.30.0.2"));
    proxy
        .wait_for("the Service after the unreadable line", |s| {
            services(s).contains(&"web/after:http".to_string())
        })
        .await;
    assert!(
        api.streaming_lists(Kind::Services) > streaming_before,
        "reached through a fresh list"
    );
}
