//! Watcher events → tracker, re-lists included, without a server.

use super::*;
use k8s_openapi::api::core::v1::Service;
use serde_json::json;

fn service(name: &str, ip: &str) -> Decoded<Service> {
    crate::lenient::decode(json!({
        "metadata": {"namespace": "ns", "name": name},
        "spec": {"clusterIP": ip, "ports": [{"port": 80, "protocol": "TCP"}]},
    }))
}

/// A Service whose port (a field the proxy reads) does not type.
fn malformed(name: &str) -> Decoded<Service> {
    crate::lenient::decode(json!({
        "metadata": {"namespace": "ns", "name": name},
        "spec": {"clusterIP": "172.30.0.99", "ports": [{"port": "eighty"}]},
    }))
}

fn names(tracker: &Mutex<Tracker>) -> Vec<String> {
    let (snapshot, _) = lock(tracker).snapshot();
    snapshot
        .services
        .keys()
        .map(|k| k.service.name.clone())
        .collect()
}

fn relist(known: &mut Known, tracker: &Mutex<Tracker>, objects: &[Decoded<Service>]) -> Step {
    assert_eq!(known.apply::<Service>(Event::Init, tracker), Step::Quiet);
    for obj in objects {
        assert_eq!(
            known.apply(Event::InitApply(obj.clone()), tracker),
            Step::Quiet
        );
    }
    known.apply::<Service>(Event::InitDone, tracker)
}

#[test]
fn list_then_events_then_relist_deleting_the_vanished() {
    let tracker = Mutex::new(Tracker::new("node"));
    let mut known = Known::default();
    let step = relist(
        &mut known,
        &tracker,
        &[service("a", "172.30.0.1"), service("b", "172.30.0.2")],
    );
    assert_eq!(
        step,
        Step::Listed {
            pending: true,
            first: true,
            objects: 2,
            deleted: 0
        }
    );
    assert_eq!(names(&tracker), ["a", "b"]);

    let step = known.apply(Event::Apply(service("c", "172.30.0.3")), &tracker);
    assert_eq!(step, Step::Applied { pending: true });
    assert_eq!(names(&tracker), ["a", "b", "c"]);

    // The same object again changes nothing the proxy uses.
    let step = known.apply(Event::Apply(service("c", "172.30.0.3")), &tracker);
    assert_eq!(step, Step::Applied { pending: false });

    // A re-list showing only a (changed) and d: b and c were deleted
    // while the watch was down.
    let step = relist(
        &mut known,
        &tracker,
        &[service("a", "172.30.0.9"), service("d", "172.30.0.4")],
    );
    assert_eq!(
        step,
        Step::Listed {
            pending: true,
            first: false,
            objects: 2,
            deleted: 2
        }
    );
    let (snapshot, changes) = lock(&tracker).snapshot();
    let held: Vec<(String, String)> = snapshot
        .services
        .iter()
        .map(|(k, v)| (k.service.name.clone(), v.cluster_ip.to_string()))
        .collect();
    assert_eq!(
        held,
        [
            ("a".into(), "172.30.0.9".into()),
            ("d".into(), "172.30.0.4".into())
        ]
    );
    let changed: Vec<&str> = changes.services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(changed, ["a", "b", "c", "d"]);

    let step = known.apply(Event::Delete(service("a", "172.30.0.9")), &tracker);
    assert_eq!(step, Step::Applied { pending: true });
    assert_eq!(names(&tracker), ["d"]);

    // An identical re-list changes nothing.
    let step = relist(&mut known, &tracker, &[service("d", "172.30.0.4")]);
    assert_eq!(
        step,
        Step::Listed {
            pending: false,
            first: false,
            objects: 1,
            deleted: 0
        }
    );
}

#[test]
fn a_malformed_object_is_absent_until_it_is_valid_again() {
    let tracker = Mutex::new(Tracker::new("node"));
    let mut known = Known::default();
    relist(
        &mut known,
        &tracker,
        &[service("a", "172.30.0.1"), malformed("b")],
    );
    assert_eq!(names(&tracker), ["a"]);

    // An update that makes a known Service malformed removes it...
    let step = known.apply(Event::Apply(malformed("a")), &tracker);
    assert_eq!(step, Step::Applied { pending: true });
    assert_eq!(names(&tracker), Vec::<String>::new());
    // ...and one that mends it brings it back.
    known.apply(Event::Apply(service("a", "172.30.0.1")), &tracker);
    known.apply(Event::Apply(service("b", "172.30.0.2")), &tracker);
    assert_eq!(names(&tracker), ["a", "b"]);

    // Malformed in a re-list: gone, as if not listed.
    let step = relist(
        &mut known,
        &tracker,
        &[service("a", "172.30.0.1"), malformed("b")],
    );
    assert!(
        matches!(
            step,
            Step::Listed {
                objects: 1,
                deleted: 1,
                ..
            }
        ),
        "{step:?}"
    );
    assert_eq!(names(&tracker), ["a"]);
    // Its deletion, malformed or not, is a no-op for the tracker.
    known.apply(Event::Delete(malformed("b")), &tracker);
    assert_eq!(names(&tracker), ["a"]);
}
