//! Upstream v1.36's iptables packet flows replayed on a real kernel, the
//! iptables-mode twin of `flows_nftables.rs` (same harness, same
//! topology): kube-proxy-rs started in node-a with the reference's
//! iptables-mode `kube-proxy-config.yaml` and `--manifests cluster.yaml`,
//! every flow of `iptables/flows.json` sent for real and its verdict
//! compared with upstream's, including the two flows no upstream rule
//! matched (they must leave node-a unanswered, not be dropped in it).
//! Then each flow again, one after the other, a few connections each, with
//! `iptables-legacy-save -c` before and after: every rule of kube-proxy's
//! chains whose counter moved must be one upstream's run saw move
//! (`iptables_hits` in `flows.json`), and every nat rule upstream's
//! connections all hit must move here, up to which endpoint a random
//! choice picked.
//! Needs root and iptables-legacy; without them the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/replayed_proxy.rs"]
mod replayed_proxy;

use replayed_proxy::{ProxyMode, reference_responders, replay_reference_flows};

#[test]
fn iptables_flows_as_upstream() {
    testkit::netns::require_kernel();
    let flows = testkit::flows::iptables_flows().expect("load the iptables flows");
    assert_eq!(flows.len(), 64, "the reference has 64 iptables flows");
    let responders = reference_responders(&flows);
    replay_reference_flows(ProxyMode::Iptables, &flows, &responders);
}
