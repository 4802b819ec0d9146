//! The nftables walker (`explain::nft`) on our own rendering, without a
//! kernel: nftables mode's table for the reference scenario, as the
//! renderer's typed objects (what a read-back over netlink returns), must
//! send every reference flow where upstream's traffic went.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../nftables/tests/support/reference.rs"]
#[allow(dead_code)]
mod reference;

use model::IpFamily;
use testkit::flows;
use testkit::tracer::describe_outcomes;

#[test]
fn every_nftables_flow_walks_our_table_as_upstreams_traffic_went() {
    let table = reference::render_reference(IpFamily::V4).ruleset.contents();
    let ctx = flows::node_a();
    let cases = flows::nftables_flows().unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let verdict = explain::nft::trace(std::slice::from_ref(&table), &ctx, &case.packet()).unwrap();
        let expected = case.expected_outcomes();
        if verdict.outcomes != expected {
            failures.push(format!("{}\n  expected {}\n  walked   {}", case.label(), describe_outcomes(&expected), verdict.describe()));
        }
    }
    assert!(failures.is_empty(), "{} of {} flows differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn random_choices_and_affinity_are_reported() {
    let table = reference::render_reference(IpFamily::V4).ruleset.contents();
    let ctx = flows::node_a();
    let pod = "10.244.0.200".parse().unwrap();
    let cart = testkit::tracer::Packet::inbound(model::Protocol::Tcp, pod, "10.96.10.20:7000".parse().unwrap());
    let verdict = explain::nft::trace(std::slice::from_ref(&table), &ctx, &cart).unwrap();
    let first: f64 = verdict.paths.iter().filter(|p| !p.sticky).map(|p| p.probability).sum();
    assert!((first - 1.0).abs() < 1e-9, "a new client's chances add up to 1: {first}");
    assert!(verdict.paths.iter().filter(|p| !p.sticky).all(|p| (p.probability - 1.0 / 3.0).abs() < 1e-9), "{}", verdict.describe());
    assert_eq!(verdict.paths.iter().filter(|p| p.sticky).count(), 3, "one sticky path per affinity set:\n{}", verdict.describe());
}
