//! End-to-end traffic suite (issue 3): kube-proxy-rs runs on a two-node
//! cluster made of network namespaces, real TCP and UDP traffic checks
//! where each flow lands, which source address the endpoint sees, and what
//! is refused or dropped. Needs root (namespaces); without it, one line says
//! so and the test returns. Run: `cargo test -p kube-proxy-rs --test
//! e2e_traffic -- --nocapture` (prints every check as it passes);
//! `KPRS_E2E_BINARY=<path>` tests another build of the binary.
//!
//! One cluster is built per run and shared by every case (they touch
//! different services; the two cases that change state run last); all
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
//! | hairpin | a pod reaching its own service lands on itself, masqueraded to its node's pod gateway (10.244.0.1) |
//! | clusterip-from-node | node -> ClusterIP reaches all 4 endpoints on both nodes, masqueraded |
//! | nodeport-cluster | NodePort with externalTrafficPolicy Cluster: client, pod and node -> own and other node's NodePort reach both endpoints (one per node), source masqueraded by the node that was hit |
//! | nodeport-local | NodePort with externalTrafficPolicy Local (endpoint on node-a only): the outside client's IP is preserved at the pod; node-b (no local endpoint) drops outside traffic; pods (on either node, to either node) and the nodes themselves still reach it |
//! | loadbalancer | LB ingress IP reached from the client (masqueraded, ETP Cluster); loadBalancerSourceRanges 172.20.0.0/28 let 172.20.0.10 in and drop 172.20.0.66, whose NodePort access stays open; an ETP Local LB IP keeps the client's IP |
//! | external-ip | externalIPs: the client reaches 192.0.2.50:8000 -> endpoint on node-b :8080 |
//! | no-endpoints | a service without endpoints is refused at once (ICMP port-unreachable / RST within 0.5 s, not a timeout) on its ClusterIP from a pod and a node, and on its NodePort on both nodes from the client |
//! | internal-local | internalTrafficPolicy Local: a pod reaches only its own node's endpoint (25 of 25 connections, from each node); with no endpoint on its node, dropped |
//! | udp-dns | DNS-like service 53/UDP and 53/TCP -> 5353: UDP from pods on both nodes and from a node, TCP from a pod, both endpoints reached |
//! | multi-port | one service with 80->8080 and 443->8443: each port reaches both endpoints on its own target port |
//! | balance | 1000 connections to a 4-endpoint service: each endpoint's count within the exact Binomial(1000, 1/4) interval whose tails carry ≤ 1.25e-7 each (≈ [182, 323]); chance that a correct proxy fails < 1e-6 |
//! | affinity | sessionAffinity ClientIP (timeout 3 s): 12 clients each stick to one endpoint over 6 connections; after 5 s idle at least one moves (false failure 4^-12) |
//! | node-healthz | each node's `/healthz` (127.0.0.1:10256, asked inside the node) answers 200 with upstream's headers and body (timestamps blanked; IPv4 only) |
//! | health-check-node-port | ETP Local LB `hc-local`, healthCheckNodePort 32160, one endpoint: the client asking each node's IP gets upstream's exact answer, 200 (`localEndpoints: 1`) from the node with the endpoint and 503 (`0`) from the other; moving the endpoint to the other node and back flips both within 5 s |
//! | runtime-change | rewriting the manifests: an added endpoint gets new connections, a removed one gets none, a deleted service stops answering — each within 5 s |
//! | cleanup | `--cleanup` in node-b removes every kube-proxy chain/table; traffic through node-b is no longer translated; node-a unaffected |
//!
//! A flow with several allowed endpoints makes enough attempts that missing
//! one by chance is below 1e-7 (25 for two endpoints, 61 for four); single
//! endpoints get 3; expected drops and refusals one (1.5 s timeout).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "e2e/affinity.rs"]
mod affinity;
#[path = "e2e/balance.rs"]
mod balance;
#[path = "e2e/binomial.rs"]
mod binomial;
#[path = "e2e/cases.rs"]
mod cases;
#[path = "e2e/change.rs"]
mod change;
#[path = "e2e/cleanup.rs"]
mod cleanup;
#[path = "e2e/flow.rs"]
mod flow;
#[path = "e2e/health_check.rs"]
mod health_check;
#[path = "e2e/http.rs"]
mod http;
#[path = "e2e/node_healthz.rs"]
mod node_healthz;
#[path = "e2e/scenario.rs"]
mod scenario;
#[path = "e2e/upstream.rs"]
mod upstream;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use testkit::cluster::Cluster;
use testkit::echo::{Outcome, Probe, Proto, probe};
use testkit::netns::unavailable;

/// What the stateful cases need.
pub struct Env<'a> {
    /// The running cluster.
    pub cluster: &'a Cluster,
    /// The kube-proxy-rs binary under test.
    pub binary: &'a Path,
}

/// Environment variable naming another proxy binary to test (e.g. a
/// release build); by default the suite tests this package's binary.
const BINARY_OVERRIDE: &str = "KPRS_E2E_BINARY";

/// How long the proxies get to program their first rules.
const READY_WITHIN: Duration = Duration::from_secs(30);

type StatefulCase = (&'static str, fn(&Env) -> Result<String, String>);

/// The cases that are not a table of flows, in the order they run (the
/// last three change state; health-check-node-port puts it back).
const STATEFUL_CASES: [StatefulCase; 6] = [
    ("balance", balance::run),
    ("affinity", affinity::run),
    ("node-healthz", node_healthz::run),
    ("health-check-node-port", health_check::run),
    ("runtime-change", change::run),
    ("cleanup", cleanup::run),
];

#[test]
fn e2e_traffic() {
    if let Some(why) = unavailable() {
        println!("{why}");
        return;
    }
    let started = Instant::now();
    let override_ = std::env::var_os(BINARY_OVERRIDE);
    let binary = override_.as_deref().map_or(Path::new(env!("CARGO_BIN_EXE_kube-proxy-rs")), Path::new);
    println!("proxy under test: {}", binary.display());
    let cluster = Cluster::build(&scenario::plan()).expect("build the cluster");
    cluster.write_manifests(&scenario::manifests(Some(scenario::DYN_START), scenario::HC_HOME)).expect("write manifests");
    cluster.start_proxies(binary, &scenario::proxy_args()).expect("start kube-proxy-rs");
    let built = started.elapsed();
    match wait_ready(&cluster) {
        Ok(took) => println!(
            "cluster built in {:.1} s; both proxies (mode {}) ready {:.1} s later",
            built.as_secs_f64(),
            scenario::MODE,
            took.as_secs_f64()
        ),
        Err(why) => panic!("{why}\n\n{}", cluster.diagnostics()),
    }
    let env = Env { cluster: &cluster, binary };
    let mut report = Report::default();
    for case in cases::flow_cases() {
        println!("== {}: {}", case.name, case.checks);
        for flow in &case.flows {
            let start = Instant::now();
            let result = flow.run(&cluster).map(|seen| format!("{}: {}", flow.describe(), seen.replace('\n', "; ")));
            report.record(&cluster, case.name, start.elapsed(), result);
        }
    }
    for (name, run) in STATEFUL_CASES {
        let start = Instant::now();
        let result = run(&env);
        report.record(&cluster, name, start.elapsed(), result);
    }
    println!("{} checks, {} failed, in {:.1} s", report.checks, report.failures.len(), started.elapsed().as_secs_f64());
    if !report.failures.is_empty() {
        panic!(
            "{} of {} end-to-end checks failed:\n\n{}\n\n{}",
            report.failures.len(),
            report.checks,
            report.failures.join("\n\n"),
            report.diagnostics.unwrap_or_default()
        );
    }
}

/// The case table at the top of this file names every case the suite runs.
#[test]
fn case_table_documents_every_case() {
    let doc = include_str!("e2e_traffic.rs");
    let names = cases::flow_cases().iter().map(|c| c.name).chain(STATEFUL_CASES.iter().map(|c| c.0)).collect::<Vec<_>>();
    for name in names {
        assert!(doc.contains(&format!("//! | {name} | ")), "case {name} is missing from the table at the top of e2e_traffic.rs");
    }
}

/// The expected health-check answers are upstream's captures, byte for
/// byte (apart from the `Date` value).
#[test]
fn service_answer_matches_upstream_captures() {
    for (capture, namespace, name, local) in upstream::SERVICE_CAPTURES {
        assert_eq!(upstream::service_answer(namespace, name, local), upstream::blank_date(capture), "{namespace}/{name}");
    }
    assert!(upstream::node_healthz().contains("\"nodeEligible\":true,\"healthy\":true,\"status\":{\"IPv4\":{"));
    assert!(!upstream::node_healthz().contains("IPv6"));
}

/// Every check's verdict, and the cluster's state at the first failure
/// (later cases change it).
#[derive(Default)]
struct Report {
    checks: usize,
    failures: Vec<String>,
    diagnostics: Option<String>,
}

impl Report {
    fn record(&mut self, cluster: &Cluster, case: &str, took: Duration, result: Result<String, String>) {
        self.checks += 1;
        match result {
            Ok(seen) => println!("ok   {case:<20} {seen}  [{} ms]", took.as_millis()),
            Err(failure) => {
                println!("FAIL {case:<20} {}", failure.replace('\n', "\n     "));
                self.failures.push(format!("FAIL {case}: {failure}"));
                if self.diagnostics.is_none() {
                    self.diagnostics = Some(format!("state at the first failure ({case}):\n{}", cluster.diagnostics()));
                }
            }
        }
    }
}

/// Waits until both proxies have programmed their rules: a pod on each node
/// reaches the ClusterIP 10.96.10.11:80 (endpoint a1). Fails at once if a
/// proxy exits.
fn wait_ready(cluster: &Cluster) -> Result<Duration, String> {
    let start = Instant::now();
    let target = Probe { proto: Proto::Tcp, dst: SocketAddr::from(([10, 96, 10, 11], 80)), src: None, timeout: Duration::from_millis(300) };
    let mut last = Vec::new();
    while start.elapsed() < READY_WITHIN {
        if let Some((node, status)) = cluster.exited_proxy() {
            return Err(format!("kube-proxy-rs on {node} exited ({status}) before programming its rules"));
        }
        last.clear();
        let mut ready = true;
        for pod in ["ca", "cb"] {
            let ns = cluster.pod(pod).expect("client pod").ns();
            let outcome = probe(ns, target, 1).map_err(|e| format!("{e:#}"))?.remove(0).outcome;
            ready &= matches!(&outcome, Outcome::Answered(a) if a.ep == "a1");
            last.push(format!("pod {pod}: {outcome}"));
        }
        if ready {
            return Ok(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("proxies not ready after {READY_WITHIN:?}: pods -> 10.96.10.11:80 still: {}", last.join("; ")))
}
