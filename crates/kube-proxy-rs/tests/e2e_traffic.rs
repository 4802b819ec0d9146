//! End-to-end traffic suite (issue 3): kube-proxy-rs runs on a two-node
//! cluster made of network namespaces, real TCP and UDP traffic checks
//! where each flow lands, which source address the endpoint sees, and what
//! is refused or dropped. Needs root (namespaces); without it the test
//! fails. Run: `cargo test -p kube-proxy-rs --test
//! e2e_traffic -- --nocapture` (prints every check as it passes);
//! `KPRS_E2E_BINARY=<path>` tests another build of the binary;
//! `KPRS_E2E_MODE=ipvs` runs the suite in IPVS mode (needs a kernel with
//! IPVS; `e2e_ipvs_vm.rs` runs it so inside a VM), `KPRS_E2E_MODE=nftables`
//! in nftables mode (`e2e_nftables.rs` runs it so); `KPRS_E2E_CASES=a,b`
//! runs only the cases named (every test binary of the suite).
//!
//! One cluster is built per run and shared by every case (they touch
//! different services; the cases that change state run last); all
//! failures are reported together, each with what was expected and what was
//! seen, followed by both nodes' rules and proxy logs.
//!
//! # Topology
//!
//! ```text
//!                     wire netns: bridge, 192.168.86.1 (default gateway of
//!                     the nodes; does not forward: unclaimed traffic is lost)
//!        ┌───────────────────────────┼──────────────────────────────┐
//!  192.168.86.2               192.168.86.3                 172.20.0.10, 172.20.0.66
//!  ┌─────┴──────────┐         ┌─────┴──────────┐          ┌─────┴──────┐
//!  │ node-a         │         │ node-b         │          │ client     │ outside the cluster;
//!  │ kube-proxy-rs  │         │ kube-proxy-rs  │          │            │ 192.0.2.0/24 (LB IPs,
//!  │ 10.244.1.0/24  │         │ 10.244.0.0/24  │          └────────────┘ externalIPs) via node-a
//!  │  via node-b    │         │  via node-a    │
//!  └┬───┬───┬───┬───┘         └┬───┬───┬───────┘   one veth per pod; node side 10.244.N.1/32
//!   a1  a2  a3  ca             b1  b2  cb          + /32 route per pod; pod side /32, default
//!  .0.11 .12 .13 .200         .1.11 .12 .200       via 10.244.N.1 (ca also has .201-.212)
//! ```
//!
//! node-a is in zone `zone-a`, node-b in `zone-b` (their Nodes' label
//! `topology.kubernetes.io/zone`), for the topology cases.
//!
//! The cluster is dual-stack (issue 14): the same plan again in IPv6 —
//! nodes fd00:86::2 and ::3, pods fd00:10:244:<n>::<same digits as IPv4>
//! (a1 fd00:10:244::11, cb fd00:10:244:1::200), the client fd00:172:20::10
//! and ::66 — and `--cluster-cidr 10.244.0.0/16,fd00:10:244::/56`. The
//! dual-stack services (`tests/e2e/dualstack.yaml`: dual-stack and IPv6-only,
//! ClusterIPs in fd00:10:96::/112) are what the `dualstack-*` cases reach.
//!
//! Both proxies read the same manifests file (`tests/e2e/cluster.yaml`,
//! plus the run-time services `dyn` and `hc-local`), with `--hostname-override node-a` /
//! `node-b`, `--cluster-cidr 10.244.0.0/16`, 1 s sync period. Every pod runs
//! an echo server on TCP 8080, 8443, 5353 and UDP 5353 answering
//! `ep=<pod> local=<ip:port reached> peer=<source ip:port seen>`.
//!
//! # Cases
//!
//! | case | what it checks |
//! |---|---|
//! | clusterip | pod -> ClusterIP with the endpoint on the same node and on the other node, with and without port remap (80->8080, 8080->8080), from pods on both nodes; the endpoint sees the client pod's own IP |
//! | hairpin | a pod reaching its own service lands on itself, masqueraded to its node's pod gateway (10.244.0.1) (IPVS: the node's very first hairpin connection gets no answer — known issue, reported, not judged) |
//! | clusterip-from-node | node -> ClusterIP reaches all 4 endpoints on both nodes, masqueraded |
//! | nodeport-cluster | NodePort with externalTrafficPolicy Cluster: client, pod and node -> own and other node's NodePort reach both endpoints (one per node), source masqueraded by the node that was hit |
//! | nodeport-local | NodePort with externalTrafficPolicy Local (endpoint on node-a only): the outside client's IP is preserved at the pod; node-b (no local endpoint) drops outside traffic; pods (on either node, to either node) and the nodes themselves still reach it |
//! | loadbalancer | LB ingress IP reached from the client (masqueraded, ETP Cluster); loadBalancerSourceRanges 172.20.0.0/28 let 172.20.0.10 in and drop 172.20.0.66, whose NodePort access stays open; an ETP Local LB IP keeps the client's IP |
//! | external-ip | externalIPs: the client reaches 192.0.2.50:8000 -> endpoint on node-b :8080 |
//! | no-endpoints | a service without endpoints is refused at once (ICMP port-unreachable / RST within 0.5 s, not a timeout) on its ClusterIP from a pod and a node, and on its NodePort on both nodes from the client |
//! | internal-local | internalTrafficPolicy Local: a pod reaches only its own node's endpoint (25 of 25 connections, from each node); with no endpoint on its node, dropped (IPVS, as upstream's IPVS mode: refused — a virtual server without real servers) |
//! | udp-dns | DNS-like service 53/UDP and 53/TCP -> 5353: UDP from pods on both nodes and from a node, TCP from a pod, both endpoints reached |
//! | topology-zone | EndpointSlice zone hints (nodes labelled `topology.kubernetes.io/zone` zone-a / zone-b; hints cross nodes: a1, b1 for zone-a, a2, b2 for zone-b): a pod on node-a reaches only a1 and b1, on node-b only a2 and b2, node-a itself only a1 and b1; internalTrafficPolicy Local with hints pointing away from each node's endpoint still reaches only the node's own endpoint (25 of 25) |
//! | topology-node | PreferSameNode: node hints (a1 for node-a; b1, b2 for node-b; zone hints naming both zones): a pod on node-a reaches only a1 (25 of 25), on node-b only b1 and b2 (45 of 45) |
//! | topology-fallback | no endpoint hinted for zone-a: a pod on node-a reaches all three endpoints while one on node-b stays on its zone's two (45 of 45); one ready endpoint without hints: both nodes reach all three endpoints (all or nothing) |
//! | multi-port | one service with 80->8080 and 443->8443: each port reaches both endpoints on its own target port |
//! | dualstack-clusterip | IPv6 ClusterIP: pods on both nodes reach a dual-stack service (endpoint a1 on node-a) and an IPv6-only one (endpoint b1 on node-b) on their IPv6 ClusterIPs; the endpoint sees the pod's IPv6 address; the dual-stack service's IPv4 ClusterIP answers too |
//! | dualstack-hairpin | a1 reaching its own dual-stack service over IPv6 lands on itself, masqueraded to node-a's IPv6 pod gateway fd00:10:244::1 |
//! | dualstack-nodeport-cluster | dual-stack NodePort (IPv6 first), ETP Cluster: the client's IPv6, a pod and a node -> own and other node's IPv6 NodePort reach both endpoints, masqueraded by the node hit; its IPv4 NodePort works too |
//! | dualstack-nodeport-local | dual-stack NodePort, ETP Local (endpoint a2 on node-a): the client's IPv6 address reaches the pod unchanged; node-b drops the client's IPv6 traffic; a pod and node-b itself still reach it over IPv6; the IPv4 NodePort keeps the client's IPv4 address |
//! | balance | 1000 connections to a 4-endpoint service: each endpoint's count within the exact Binomial(1000, 1/4) interval whose tails carry ≤ 1.25e-7 each (≈ [182, 323]); chance that a correct proxy fails < 1e-6 |
//! | affinity | sessionAffinity ClientIP (timeout 3 s): 12 clients each stick to one endpoint over 6 connections; after 5 s idle at least one moves (false failure 4^-12); IPVS: stickiness and `persistent 3` (a persistence template outlives closed connections in TIME_WAIT, 2 min) |
//! | node-healthz | each node's `/healthz` and `/livez` (127.0.0.1:10256, asked inside the node) answer 200 with upstream's headers and body, a dual-stack proxy's (`IPv4` and `IPv6` status; timestamps blanked) |
//! | health-check-node-port | ETP Local LB `hc-local`, healthCheckNodePort 32160, one endpoint: the client asking each node's IP gets upstream's exact answer, 200 (`localEndpoints: 1`) from the node with the endpoint and 503 (`0`) from the other; moving the endpoint to the other node and back flips both within 5 s |
//! | runtime-change | rewriting the manifests: an added endpoint gets new connections, a removed one gets none, a deleted service stops answering — each within 5 s (× the run's slowdown) |
//! | cleanup | `--cleanup` in node-b removes every kube-proxy chain/table of both families (IPVS: also virtual servers, `KUBE-` ipsets, `kube-ipvs0`); IPv4 and IPv6 traffic through node-b is no longer translated; node-a unaffected |
//!
//! A flow with several allowed endpoints makes enough attempts that missing
//! one by chance is below 1e-7 (25 for two endpoints, 61 for four); single
//! endpoints get 3; expected drops and refusals one (1.5 s timeout).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "e2e/suite.rs"]
mod suite;

use std::path::Path;
use suite::scenario::Mode;

/// Environment variable naming another proxy binary to test (e.g. a
/// release build); by default the suite tests this package's binary.
const BINARY_OVERRIDE: &str = "KPRS_E2E_BINARY";
/// Environment variable choosing the proxy mode under test: `iptables`
/// (the default), `ipvs` or `nftables`.
const MODE_VAR: &str = "KPRS_E2E_MODE";

#[test]
fn e2e_traffic() {
    testkit::netns::require_kernel();
    let mode = match std::env::var(MODE_VAR) {
        Err(_) => Mode::Iptables,
        Ok(name) => Mode::parse(&name).unwrap_or_else(|| panic!("{MODE_VAR}={name}: expected iptables, ipvs, nftables or userspace")),
    };
    let override_ = std::env::var_os(BINARY_OVERRIDE);
    let binary = override_.as_deref().map_or(Path::new(env!("CARGO_BIN_EXE_kube-proxy-rs")), Path::new);
    suite::run(binary, mode, 1, None);
}
