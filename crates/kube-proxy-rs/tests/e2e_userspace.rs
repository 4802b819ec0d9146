//! The end-to-end traffic suite (`e2e_traffic.rs`) in userspace mode
//! (issue 29): the same two-node dual-stack cluster in network namespaces,
//! both proxies started with `--proxy-mode userspace` (the suite first
//! checks that each node has the portal chain `KUBE-PORTALS-CONTAINER`
//! with REDIRECT rules and no iptables-mode chains, and `route_localnet`
//! 0), then every case, one of its own (`localhost-nodeport`: node-a
//! reaches `127.0.0.1:30080`), node-a's `/metrics` counting
//! `kubeproxy_userspace_connections_total` for the service `balance` used,
//! and `explain service` on node-a naming the portal rules and proxy port.
//!
//! What the mode cannot express, and how the suite judges it instead:
//!
//! * client source IP: the proxy opens its own connection to the endpoint,
//!   so every endpoint sees the address of the node that proxied the flow
//!   (the node the flow entered, or the node whose NodePort it hit), not
//!   the client pod's or the outside client's. Every flow's source check
//!   becomes "masqueraded by that node" (`flow::set_proxy_is_client`); the
//!   claims "the endpoint sees the client pod's IP" (clusterip,
//!   internal-local, topology-*, multi-port, udp-dns, dualstack-clusterip)
//!   and "client IP preserved" under externalTrafficPolicy Local
//!   (nodeport-local, loadbalancer's ETP Local LB, dualstack-nodeport-local)
//!   cannot hold.
//! * dropping: a proxy port without endpoints accepts and resets the
//!   connection, so a NodePort with externalTrafficPolicy Local on a node
//!   without a local endpoint, and internalTrafficPolicy Local without one,
//!   are refused (RST) where iptables mode drops (`cases.rs`).
//! * loadBalancerSourceRanges: honoured by redirecting only the ranges'
//!   sources; others are not translated and find nothing (dropped, as in
//!   the other modes).
//!
//! Needs root; without it the test fails. Run alone:
//! `cargo nextest run -p kube-proxy-rs --test e2e_userspace`;
//! `KPRS_E2E_BINARY=<path>` tests another build, `KPRS_E2E_CASES=a,b`
//! runs only the cases named.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "e2e/suite.rs"]
mod suite;

use std::path::Path;
use suite::scenario::Mode;

/// Environment variable naming another proxy binary to test.
const BINARY_OVERRIDE: &str = "KPRS_E2E_BINARY";

#[test]
fn e2e_userspace() {
    testkit::netns::require_kernel();
    let override_ = std::env::var_os(BINARY_OVERRIDE);
    let binary = override_.as_deref().map_or(Path::new(env!("CARGO_BIN_EXE_kube-proxy-rs")), Path::new);
    suite::run(binary, Mode::Userspace, 1, None);
}
