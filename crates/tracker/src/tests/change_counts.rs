//! The change counts behind upstream's change metrics.

use super::support::*;
use crate::{ChangeCounts, Objects, Tracker};
use serde_json::json;

fn objects() -> Objects {
    Objects {
        services: vec![plain_service("ns", "a", "10.96.0.1"), plain_service("ns", "b", "10.96.0.2")],
        endpoint_slices: vec![slice("ns", "a-1", Some("a"), http_port(8080), json!([ep("10.0.0.1", "node-a")]))],
        nodes: vec![],
        service_cidrs: vec![],
    }
}

fn counts(service: u64, endpoint: u64, service_pending: usize, endpoint_pending: usize) -> ChangeCounts {
    ChangeCounts {
        service_changes: service,
        endpoint_changes: endpoint,
        service_changes_pending: service_pending,
        endpoint_changes_pending: endpoint_pending,
    }
}

#[test]
fn events_count_once_and_pending_clears_at_the_snapshot() {
    let mut t = Tracker::new("node-a");
    let objs = objects();
    t.upsert_service(&objs.services[0]);
    t.upsert_service(&objs.services[1]);
    t.upsert_endpoint_slice(&objs.endpoint_slices[0]);
    assert_eq!(t.take_change_counts(), counts(2, 1, 2, 1));
    assert_eq!(t.take_change_counts(), counts(0, 0, 2, 1), "events are taken once, pending stays");
    t.snapshot();
    assert_eq!(t.take_change_counts(), counts(0, 0, 0, 0));
}

#[test]
fn only_events_that_change_something_count() {
    let mut t = Tracker::new("node-a");
    let objs = objects();
    t.replace_all(&objs);
    t.snapshot();
    t.take_change_counts();
    t.upsert_service(&objs.services[0]);
    t.upsert_endpoint_slice(&objs.endpoint_slices[0]);
    assert_eq!(t.take_change_counts(), counts(0, 0, 0, 0));
    let moved = slice("ns", "a-1", Some("a"), http_port(8080), json!([ep("10.0.0.7", "node-a")]));
    t.upsert_endpoint_slice(&moved);
    t.upsert_endpoint_slice(&objs.endpoint_slices[0]);
    t.delete_service(&objs.services[1]);
    assert_eq!(t.take_change_counts(), counts(1, 2, 1, 2), "each changing slice event counts and is pending");
}

#[test]
fn ignored_objects_are_not_counted() {
    let mut t = Tracker::new("node-a");
    let headless = service("ns", "h", json!({"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}));
    t.upsert_service(&headless);
    t.delete_service(&plain_service("ns", "never-seen", "10.96.0.9"));
    t.upsert_endpoint_slice(&slice("ns", "orphan", None, http_port(80), json!([ep("10.0.0.1", "node-a")])));
    assert_eq!(t.take_change_counts(), counts(0, 0, 0, 0));
}

#[test]
fn a_file_reread_counts_the_objects_it_changed() {
    let mut t = Tracker::new("node-a");
    t.replace_all(&objects());
    assert_eq!(t.take_change_counts(), counts(2, 1, 2, 1));
    t.snapshot();
    let mut next = objects();
    next.services.pop();
    next.endpoint_slices[0] = slice("ns", "a-1", Some("a"), http_port(8080), json!([ep("10.0.0.2", "node-a")]));
    t.replace_all(&next);
    t.replace_all(&next);
    assert_eq!(t.take_change_counts(), counts(1, 1, 1, 1));
}
