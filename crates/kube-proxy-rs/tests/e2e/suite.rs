//! The end-to-end suite itself, shared by the test binaries that run it
//! (`e2e_traffic.rs`: on this machine, mode from `KPRS_E2E_MODE`;
//! `e2e_ipvs_vm.rs`: IPVS mode inside a VM). Builds the cluster, starts
//! both proxies, runs every case and reports all failures together. The
//! topology and the case table are documented at the top of
//! `e2e_traffic.rs`.

#[path = "affinity.rs"]
mod affinity;
#[path = "balance.rs"]
mod balance;
#[path = "binomial.rs"]
mod binomial;
#[path = "cases.rs"]
mod cases;
#[path = "change.rs"]
mod change;
#[path = "cleanup.rs"]
mod cleanup;
#[path = "flow.rs"]
mod flow;
#[path = "health_check.rs"]
mod health_check;
#[path = "http.rs"]
mod http;
#[path = "kernel_state.rs"]
mod kernel_state;
#[path = "node_healthz.rs"]
mod node_healthz;
#[path = "scenario.rs"]
pub mod scenario;
#[path = "upstream.rs"]
mod upstream;
#[path = "userspace_explain.rs"]
mod userspace_explain;
#[path = "userspace_metrics.rs"]
mod userspace_metrics;

use scenario::Mode;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};
use testkit::cluster::Cluster;
use testkit::echo::{Outcome, Probe, Proto, probe};

/// What the stateful cases need.
pub struct Env<'a> {
    /// The running cluster.
    pub cluster: &'a Cluster,
    /// The kube-proxy-rs binary under test.
    pub binary: &'a Path,
    /// The proxy mode under test.
    pub mode: Mode,
}

impl Env<'_> {
    /// `base` (a deadline meant for this machine) times the slowdown.
    pub fn deadline(&self, base: Duration) -> Duration {
        flow::stretched(base)
    }
}

/// The wall-clock time of day (UTC, as the proxies log it), to line up a
/// failure with the proxy logs.
pub fn utc_now() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (secs, millis) = (since.as_secs() % 86_400, since.subsec_millis());
    format!("{:02}:{:02}:{:02}.{millis:03}Z", secs / 3600, secs / 60 % 60, secs % 60)
}

/// How long the proxies get to program their first rules.
const READY_WITHIN: Duration = Duration::from_secs(60);

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

/// Environment variable picking the cases to run (comma-separated names;
/// unset or `all`: every case) when the caller names none.
const CASES_VAR: &str = "KPRS_E2E_CASES";

/// The cases [`CASES_VAR`] names, if it names some.
fn cases_from_env() -> Option<Vec<String>> {
    let value = std::env::var(CASES_VAR).ok().filter(|v| v.trim() != "all")?;
    Some(value.split(',').map(str::trim).filter(|c| !c.is_empty()).map(str::to_string).collect())
}

/// Builds the cluster, runs `binary` in `mode` on both nodes, runs every
/// case (or only those named in `only`, if given, else in
/// `KPRS_E2E_CASES`) with run-time deadlines stretched by `slowdown`, and
/// panics with every failure (expected vs seen) and the cluster's state at
/// the first one and at the end.
pub fn run(binary: &Path, mode: Mode, slowdown: u32, only: Option<&[&str]>) {
    let from_env = cases_from_env();
    let from_env: Option<Vec<&str>> = from_env.as_ref().map(|names| names.iter().map(String::as_str).collect());
    let only = only.or(from_env.as_deref());
    if let Some(names) = only {
        let unknown: Vec<&&str> = names.iter().filter(|n| !case_names().contains(n)).collect();
        assert!(unknown.is_empty(), "{CASES_VAR}: unknown cases {unknown:?}; known: {}", case_names().join(", "));
        println!("cases: {}", names.join(", "));
    }
    let started = Instant::now();
    flow::set_slowdown(slowdown);
    flow::set_proxy_is_client(mode == Mode::Userspace);
    println!("proxy under test: {} (mode {})", binary.display(), mode.name());
    let cluster = Cluster::build(&scenario::plan()).expect("build the cluster");
    cluster.write_manifests(&scenario::manifests(Some(scenario::DYN_START), scenario::HC_HOME)).expect("write manifests");
    cluster.start_proxies(binary, &scenario::proxy_args(mode)).expect("start kube-proxy-rs");
    let built = started.elapsed();
    match wait_ready(&cluster).and_then(|took| kernel_state::check_mode(&cluster, mode).map(|()| took)) {
        Ok(took) => println!(
            "cluster built in {:.1} s; both proxies (mode {}) ready {:.1} s later",
            built.as_secs_f64(),
            mode.name(),
            took.as_secs_f64()
        ),
        Err(why) => panic!("{why}\n\n{}", diagnostics(&cluster, mode)),
    }
    let env = Env { cluster: &cluster, binary, mode };
    let selected = |name: &str| only.is_none_or(|names| names.contains(&name));
    let mut report = Report::default();
    for case in cases::flow_cases(mode).into_iter().filter(|c| selected(c.name)) {
        println!("== {}: {}", case.name, case.checks);
        for flow in &case.flows {
            let start = Instant::now();
            let result = flow.run(&cluster).map(|seen| format!("{}: {}", flow.describe(), seen.replace('\n', "; ")));
            report.record(&env, case.name, start.elapsed(), result);
        }
    }
    for (name, run) in STATEFUL_CASES.into_iter().filter(|c| selected(c.0)) {
        if name == "runtime-change" && mode == Mode::Userspace && selected("balance") {
            // Before the cases that change state: the counts of `balance`.
            let checks: [StatefulCase; 2] = [("userspace-metrics", userspace_metrics::run), ("userspace-explain", userspace_explain::run)];
            for (check, run) in checks {
                let start = Instant::now();
                let result = run(&env);
                report.record(&env, check, start.elapsed(), result);
            }
        }
        let start = Instant::now();
        let result = run(&env);
        report.record(&env, name, start.elapsed(), result);
    }
    if !report.failures.is_empty() {
        report.final_state = Some(diagnostics(&cluster, mode));
    }
    report.finish(mode, started.elapsed());
}

/// Every case name, flow cases first, in the order they run.
pub fn case_names() -> Vec<&'static str> {
    cases::flow_cases(Mode::Iptables).iter().map(|c| c.name).chain(STATEFUL_CASES.iter().map(|c| c.0)).collect()
}

/// Per node: its rules (and IPVS state in IPVS mode) and its proxy's log.
fn diagnostics(cluster: &Cluster, mode: Mode) -> String {
    let mut text = cluster.diagnostics();
    if mode == Mode::Ipvs {
        text.push_str(&kernel_state::ipvs_dumps(cluster));
    }
    text
}

/// Every check's verdict, and the cluster's state at the first failure
/// (later cases change it) and at the end.
#[derive(Default)]
struct Report {
    checks: usize,
    failures: Vec<String>,
    diagnostics: Option<String>,
    final_state: Option<String>,
}

impl Report {
    fn record(&mut self, env: &Env, case: &str, took: Duration, result: Result<String, String>) {
        self.checks += 1;
        match result {
            Ok(seen) => println!("ok   {case:<20} {seen}  [{} ms]", took.as_millis()),
            Err(failure) => {
                println!("FAIL {case:<20} {}", failure.replace('\n', "\n     "));
                self.failures.push(format!("FAIL {case}: {failure}"));
                if self.diagnostics.is_none() {
                    self.diagnostics = Some(format!("state at the first failure ({case}):\n{}", diagnostics(env.cluster, env.mode)));
                }
            }
        }
    }

    fn finish(self, mode: Mode, took: Duration) {
        println!("{} checks, {} failed, in {:.1} s (mode {})", self.checks, self.failures.len(), took.as_secs_f64(), mode.name());
        if !self.failures.is_empty() {
            panic!(
                "{} of {} end-to-end checks failed (mode {}):\n\n{}\n\n{}\n\nstate at the end:\n{}",
                self.failures.len(),
                self.checks,
                mode.name(),
                self.failures.join("\n\n"),
                self.diagnostics.unwrap_or_default(),
                self.final_state.unwrap_or_default()
            );
        }
    }
}

/// Where a pod on each node must be answered by a1 once both proxies have
/// programmed their rules: service `local-remap`'s ClusterIP (IPv4) and
/// `ds-a1`'s IPv6 ClusterIP (each family is synced by its own proxier).
const READY_TARGETS: [SocketAddr; 2] = [
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 96, 10, 11)), 80),
    SocketAddr::new(IpAddr::V6(Ipv6Addr::new(0xfd00, 0x10, 0x96, 0, 0, 0, 0x20, 0x11)), 80),
];

/// Waits until both proxies have programmed the rules of both families: a
/// pod on each node reaches every one of [`READY_TARGETS`] (endpoint a1).
/// Fails at once if a proxy exits.
fn wait_ready(cluster: &Cluster) -> Result<Duration, String> {
    let start = Instant::now();
    let mut last = Vec::new();
    while start.elapsed() < READY_WITHIN {
        if let Some((node, status)) = cluster.exited_proxy() {
            return Err(format!("kube-proxy-rs on {node} exited ({status}) before programming its rules"));
        }
        last.clear();
        let mut ready = true;
        for pod in ["ca", "cb"] {
            let ns = cluster.pod(pod).expect("client pod").ns();
            for dst in READY_TARGETS {
                let target = Probe { proto: Proto::Tcp, dst, src: None, timeout: Duration::from_millis(300) };
                let outcome = probe(ns, target, 1).map_err(|e| format!("{e:#}"))?.remove(0).outcome;
                ready &= matches!(&outcome, Outcome::Answered(a) if a.ep == "a1");
                last.push(format!("pod {pod} -> {dst}: {outcome}"));
            }
        }
        if ready {
            return Ok(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("proxies not ready after {READY_WITHIN:?}: still {}", last.join("; ")))
}

/// The case table at the top of `e2e_traffic.rs` names every case the
/// suite runs.
#[test]
fn case_table_documents_every_case() {
    let doc = include_str!("../e2e_traffic.rs");
    for name in case_names() {
        assert!(doc.contains(&format!("//! | {name} | ")), "case {name} is missing from the table at the top of e2e_traffic.rs");
    }
}
