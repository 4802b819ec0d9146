//! Change sets and sharing between snapshots.

use super::support::*;
use crate::{Objects, Tracker};
use model::ServiceName;
use serde_json::json;
use std::sync::Arc;

fn objects() -> Objects {
    Objects {
        services: vec![
            plain_service("ns", "a", "10.96.0.1"),
            plain_service("ns", "b", "10.96.0.2"),
        ],
        endpoint_slices: vec![
            slice(
                "ns",
                "a-1",
                Some("a"),
                http_port(8080),
                json!([ep("10.0.0.1", "node-a")]),
            ),
            slice(
                "ns",
                "b-1",
                Some("b"),
                http_port(8080),
                json!([ep("10.0.0.2", "node-b")]),
            ),
        ],
        nodes: vec![],
        service_cidrs: vec![],
    }
}

fn changed(t: &mut Tracker) -> Vec<String> {
    t.snapshot()
        .1
        .services
        .iter()
        .map(ServiceName::to_string)
        .collect()
}

#[test]
fn snapshot_drains_the_change_set() {
    let mut t = Tracker::new("node-a");
    t.replace_all(&objects());
    assert!(t.has_changes());
    assert_eq!(changed(&mut t), ["ns/a", "ns/b"]);
    assert!(!t.has_changes());
    assert!(changed(&mut t).is_empty());
}

#[test]
fn identical_events_change_nothing() {
    let mut t = Tracker::new("node-a");
    let objs = objects();
    t.replace_all(&objs);
    t.snapshot();
    t.upsert_service(&objs.services[0]);
    t.upsert_endpoint_slice(&objs.endpoint_slices[1]);
    t.replace_all(&objs);
    assert!(!t.has_changes());
}

#[test]
fn irrelevant_fields_change_nothing() {
    let mut t = Tracker::new("node-a");
    let objs = objects();
    t.replace_all(&objs);
    t.snapshot();
    let mut svc = objs.services[0].clone();
    svc.metadata.annotations = Some([("note".to_string(), "x".to_string())].into());
    svc.spec.as_mut().unwrap().selector = Some([("app".to_string(), "a".to_string())].into());
    t.upsert_service(&svc);
    let mut s = objs.endpoint_slices[0].clone();
    s.metadata.resource_version = Some("42".into());
    t.upsert_endpoint_slice(&s);
    assert!(!t.has_changes());
}

#[test]
fn replace_all_marks_only_changed_services() {
    let mut t = Tracker::new("node-a");
    t.replace_all(&objects());
    t.snapshot();
    let mut next = objects();
    next.endpoint_slices[1] = slice(
        "ns",
        "b-1",
        Some("b"),
        http_port(8080),
        json!([ep("10.0.0.3", "node-b")]),
    );
    next.services.push(plain_service("ns", "c", "10.96.0.3"));
    t.replace_all(&next);
    assert_eq!(changed(&mut t), ["ns/b", "ns/c"]);
    let mut fewer = next.clone();
    fewer
        .services
        .retain(|s| s.metadata.name.as_deref() != Some("a"));
    t.replace_all(&fewer);
    assert_eq!(changed(&mut t), ["ns/a"]);
    fewer.endpoint_slices.clear();
    t.replace_all(&fewer);
    assert_eq!(
        changed(&mut t),
        ["ns/a", "ns/b"],
        "a lost its slice too (its service was already gone)"
    );
}

#[test]
fn unchanged_services_share_their_data_between_snapshots() {
    let mut t = Tracker::new("node-a");
    t.replace_all(&objects());
    let first = t.snapshot().0;
    t.upsert_endpoint_slice(&slice(
        "ns",
        "b-1",
        Some("b"),
        http_port(8080),
        json!([ep("10.0.0.9", "node-b")]),
    ));
    let second = t.snapshot().0;
    let (a, b) = (tcp("ns", "a", "http"), tcp("ns", "b", "http"));
    assert!(Arc::ptr_eq(&first.services[&a], &second.services[&a]));
    assert!(Arc::ptr_eq(&first.endpoints[&a], &second.endpoints[&a]));
    assert!(
        Arc::ptr_eq(&first.services[&b], &second.services[&b]),
        "service b itself did not change"
    );
    assert!(!Arc::ptr_eq(&first.endpoints[&b], &second.endpoints[&b]));
    assert_eq!(second.endpoints_of(&b)[0].ip, ip("10.0.0.9"));
}

#[test]
fn duplicate_objects_in_one_state_last_wins() {
    let mut t = Tracker::new("node-a");
    let mut objs = objects();
    objs.services.push(plain_service("ns", "a", "10.96.0.99"));
    t.replace_all(&objs);
    let snap = t.snapshot().0;
    assert_eq!(
        snap.services[&tcp("ns", "a", "http")].cluster_ip,
        ip("10.96.0.99")
    );
}
