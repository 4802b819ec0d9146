//! Upstream v1.36's nftables packet flows replayed on a real kernel
//! (issue 13): the reference topology of `testdata/upstream-v1.36/
//! nftables/flows.txt` built in network namespaces (node-a, the external
//! clients, the client pod, one pod per endpoint address of `cluster.yaml`
//! answering with its address and the peer it saw), kube-proxy-rs started
//! in node-a with `--proxy-mode nftables` through the reference's own
//! `kube-proxy-config.yaml` and `--manifests cluster.yaml`, then every
//! flow of `flows.json` sent for real from the same client, address,
//! protocol, destination and port, up to 30 fresh connections each as
//! upstream's run did, and its verdict compared with upstream's: the DNAT
//! set (a sticky service on one endpoint), masquerade or not (the peer the
//! endpoint saw), REJECT (ICMP port-unreachable) vs DROP (silence) vs
//! delivered to node-a itself (TCP RST), a DROP shown to happen in node-a
//! (a counting table of the test's own: the packets entered, none got
//! through). Then every flow is traced as upstream's run traced it (a
//! trace-only table sets `nftrace` on its new packets, `nft monitor
//! trace` records their path through table `kube-proxy`), a few
//! connections each, one flow after the other, and every path must be one
//! of upstream's (`nft_trace` in `flows.json`), rule text and verdicts
//! included, up to which endpoint a random choice picked. Every one of the
//! 64 flows is replayed and traced; a flow that differs fails the test
//! naming it.
//! Needs root and `nft`; without them the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/replayed_proxy.rs"]
mod replayed_proxy;

use replayed_proxy::{ProxyMode, reference_responders, replay_reference_flows};

#[test]
fn nftables_flows_as_upstream() {
    testkit::netns::require_kernel();
    let flows = testkit::flows::nftables_flows().expect("load the nftables flows");
    assert_eq!(flows.len(), 64, "the reference has 64 nftables flows");
    let responders = reference_responders(&flows);
    replay_reference_flows(ProxyMode::Nftables, &flows, &responders);
}
