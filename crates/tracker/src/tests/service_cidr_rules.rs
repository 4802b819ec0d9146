//! ServiceCIDR objects → `Snapshot::service_cidrs`: per family, sorted and
//! deduplicated, deletion, bad CIDRs warned and skipped, changes asking
//! for a sync without counting as Service changes.

use crate::{IpFamily, ObjectKind, Objects, Problem, Tracker};
use k8s_openapi::api::networking::v1::ServiceCIDR;
use serde_json::json;

fn service_cidr(name: &str, cidrs: &[&str]) -> ServiceCIDR {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"cidrs": cidrs}})).unwrap()
}

fn cidrs_of(t: &mut Tracker) -> Vec<String> {
    t.snapshot()
        .0
        .service_cidrs
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn each_family_gets_its_own_cidrs_sorted_without_duplicates() {
    let objects = [
        service_cidr("kubernetes", &["10.96.0.0/12", "fd00:10:96::/112"]),
        service_cidr("extra", &["10.64.0.0/16", "10.96.0.0/12"]),
    ];
    let mut v4 = Tracker::new("node-a");
    let mut v6 = Tracker::with_family("node-a", IpFamily::V6);
    for o in &objects {
        assert!(v4.upsert_service_cidr(o).is_empty());
        assert!(v6.upsert_service_cidr(o).is_empty());
    }
    assert_eq!(cidrs_of(&mut v4), ["10.64.0.0/16", "10.96.0.0/12"]);
    assert_eq!(cidrs_of(&mut v6), ["fd00:10:96::/112"]);
}

#[test]
fn deleting_an_object_keeps_what_another_one_lists() {
    let mut t = Tracker::new("node-a");
    t.upsert_service_cidr(&service_cidr("kubernetes", &["10.96.0.0/12"]));
    t.upsert_service_cidr(&service_cidr("extra", &["10.96.0.0/12", "10.64.0.0/16"]));
    t.snapshot();
    t.delete_service_cidr(&service_cidr("extra", &[]));
    assert!(t.has_changes());
    assert_eq!(cidrs_of(&mut t), ["10.96.0.0/12"]);
    t.delete_service_cidr(&service_cidr("kubernetes", &[]));
    assert!(cidrs_of(&mut t).is_empty());
}

#[test]
fn bad_cidrs_are_warned_and_skipped_the_rest_kept() {
    let mut t = Tracker::new("node-a");
    let warnings = t.upsert_service_cidr(&service_cidr(
        "kubernetes",
        &["10.96.0.0/33", "10.96.0.0/12"],
    ));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].kind, ObjectKind::ServiceCIDR);
    assert_eq!(warnings[0].name, "kubernetes");
    assert_eq!(
        warnings[0].problem,
        Problem::BadServiceCidr("10.96.0.0/33".into())
    );
    assert_eq!(
        warnings[0].to_string(),
        r#"ServiceCIDR kubernetes: bad service CIDR "10.96.0.0/33": not a CIDR; ignored"#
    );
    assert_eq!(cidrs_of(&mut t), ["10.96.0.0/12"]);
}

#[test]
fn host_bits_are_cleared() {
    let mut t = Tracker::new("node-a");
    t.upsert_service_cidr(&service_cidr("kubernetes", &["10.96.0.1/12"]));
    assert_eq!(cidrs_of(&mut t), ["10.96.0.0/12"]);
}

#[test]
fn a_change_asks_for_a_sync_but_is_no_service_change() {
    let mut t = Tracker::new("node-a");
    t.snapshot();
    t.upsert_service_cidr(&service_cidr("kubernetes", &["10.96.0.0/12"]));
    assert!(t.has_changes());
    let counts = t.take_change_counts();
    assert_eq!(
        (counts.service_changes, counts.service_changes_pending),
        (0, 0)
    );
    let (snap, changes) = t.snapshot();
    assert!(changes.service_cidrs_changed && changes.services.is_empty() && !changes.node_changed);
    assert_eq!(snap.service_cidrs.len(), 1);

    // The same object again, or one of the other family only: nothing to sync.
    t.upsert_service_cidr(&service_cidr("kubernetes", &["10.96.0.0/12"]));
    t.upsert_service_cidr(&service_cidr("v6", &["fd00::/108"]));
    assert!(!t.has_changes());
    let (snap, changes) = t.snapshot();
    assert!(!changes.service_cidrs_changed);
    assert_eq!(
        snap.service_cidrs.len(),
        1,
        "later snapshots keep the CIDRs"
    );
}

#[test]
fn replace_all_makes_the_listed_objects_the_whole_state() {
    let mut t = Tracker::new("node-a");
    t.upsert_service_cidr(&service_cidr("old", &["10.32.0.0/16"]));
    let objects = Objects {
        service_cidrs: vec![service_cidr("kubernetes", &["10.96.0.0/12"])],
        ..Objects::default()
    };
    assert!(t.replace_all(&objects).is_empty());
    assert_eq!(cidrs_of(&mut t), ["10.96.0.0/12"]);
    t.replace_all(&objects);
    assert!(!t.has_changes(), "the same state again changes nothing");
    t.replace_all(&Objects::default());
    assert!(cidrs_of(&mut t).is_empty());
}

#[test]
fn an_object_without_a_name_is_skipped_with_a_warning() {
    let mut t = Tracker::new("node-a");
    let nameless: ServiceCIDR =
        serde_json::from_value(json!({"spec": {"cidrs": ["10.96.0.0/12"]}})).unwrap();
    let warnings = t.upsert_service_cidr(&nameless);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].problem, Problem::MissingName);
    assert!(cidrs_of(&mut t).is_empty());
}
