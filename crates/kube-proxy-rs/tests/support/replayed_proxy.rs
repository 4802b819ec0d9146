//! The harness of the flow replays (`flows_nftables.rs`,
//! `flows_iptables.rs`): the reference node built in namespaces,
//! kube-proxy-rs started in node-a with the reference's config and
//! manifests, every flow replayed (all at once, `WORKERS` at a time), then
//! traced (nftables) or counted (iptables) one flow after the other, and
//! one failure listing every flow that differs from upstream, with
//! node-a's rules and the proxy's log.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::flows::{
    Expected, FlowCase, Replayed, Seen, check_explained, check_hits, check_paths, count_all, explain_args,
    explained_outcomes, replay_all, summary, trace_all,
};
use testkit::netns::Netns;
use testkit::reference_node::{ReferenceNode, Responder};

/// How long a replayed connection waits (upstream's run: 2 s). An expected
/// DROP costs 3 of these; a connection through node-a takes milliseconds,
/// so a loaded machine has ample margin before an answer counts as silence.
const TIMEOUT: Duration = Duration::from_secs(2);
/// How long a connection of the traced pass waits: only the paths count
/// there, an unanswered one is cut short.
const TRACE_TIMEOUT: Duration = Duration::from_secs(1);
/// Flows replayed at once.
const WORKERS: usize = 8;
/// How long the proxy may take to start and sync.
const PATIENCE: Duration = Duration::from_secs(30);
/// How many lines of the proxy's log a failure shows.
const LOG_TAIL: usize = 40;

/// The proxy mode under test, with the reference's files for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyMode {
    /// `nftables/kube-proxy-config.yaml` (mode: nftables).
    Nftables,
    /// `iptables/kube-proxy-config.yaml` (mode: iptables).
    Iptables,
}

impl ProxyMode {
    fn dir(self) -> &'static str {
        match self {
            ProxyMode::Nftables => "nftables",
            ProxyMode::Iptables => "iptables",
        }
    }

    /// The log line of every completed sync.
    fn synced(self) -> &'static str {
        match self {
            ProxyMode::Nftables => "synced nftables rules ip_family=IPv4",
            ProxyMode::Iptables => "synced iptables rules ip_family=IPv4",
        }
    }

    /// What node-a's kernel holds, for failure messages.
    fn rules(self, ns: &Netns) -> String {
        let (program, args): (&str, &[&str]) = match self {
            ProxyMode::Nftables => ("nft", &["list", "ruleset"]),
            ProxyMode::Iptables => ("iptables-legacy-save", &["-c"]),
        };
        ns.exec(program, args).unwrap_or_else(|e| format!("({program} failed: {e:#})"))
    }
}

fn reference_file(relative: &str) -> PathBuf {
    testkit::flows::reference_dir().join(relative)
}

/// Every endpoint address of the reference `cluster.yaml` with every port
/// of its EndpointSlices (so a flow DNATed where upstream did not still
/// finds someone to answer), plus any endpoint the flows expect.
pub fn reference_responders(flows: &[FlowCase]) -> Vec<Responder> {
    let parsed = source::manifests::load(reference_file("cluster.yaml")).expect("parse the reference cluster.yaml");
    let mut by_ip: BTreeMap<Ipv4Addr, Responder> = BTreeMap::new();
    let mut add = |ip: Ipv4Addr, protocol: &str, port: u16| {
        let r = by_ip.entry(ip).or_insert_with(|| Responder {
            ip,
            tcp_ports: Default::default(),
            udp_ports: Default::default(),
        });
        match protocol {
            "TCP" => r.tcp_ports.insert(port),
            "UDP" => r.udp_ports.insert(port),
            other => panic!("no responder for {other} port {port} of {ip}"),
        };
    };
    for slice in &parsed.objects.endpoint_slices {
        for endpoint in slice.endpoints.iter().flatten() {
            for address in &endpoint.addresses {
                let ip = address.parse().unwrap_or_else(|e| panic!("endpoint address {address}: {e}"));
                for port in slice.ports.iter().flatten() {
                    let number = port.port.and_then(|p| u16::try_from(p).ok()).expect("an EndpointSlice port number");
                    add(ip, port.protocol.as_deref().unwrap_or("TCP"), number);
                }
            }
        }
    }
    for flow in flows {
        if let Expected::Dnat { endpoints, .. } = &flow.expected {
            for ep in endpoints {
                let SocketAddr::V4(ep) = ep else { panic!("{}: IPv6 endpoint {ep}", flow.id) };
                add(*ep.ip(), &flow.protocol.to_string().to_uppercase(), ep.port());
            }
        }
    }
    by_ip.into_values().collect()
}

/// Builds the reference node, starts the proxy in `mode` there, replays
/// every flow and fails naming each one whose verdict differs from
/// upstream's.
pub fn replay_reference_flows(mode: ProxyMode, flows: &[FlowCase], responders: &[Responder]) {
    let started = Instant::now();
    let node = ReferenceNode::build(responders).expect("build the reference topology");
    let built = started.elapsed();
    let mut proxy = RunningProxy::start(node.node(), mode);
    proxy.wait_for(mode.synced());
    let synced = started.elapsed();
    let replays = replay_all(&node, flows, TIMEOUT, WORKERS).expect("the witness table in node-a");
    let mut failures = Vec::new();
    for (flow, replayed) in flows.iter().zip(&replays) {
        match replayed {
            Ok(r) if r.mismatch.is_none() => eprintln!("{}: as upstream: {}{}", flow.id, summary(&r.seen), through(r)),
            Ok(r) => failures.push(r.report(flow)),
            Err(e) => failures.push(format!("{}\n    could not be replayed: {e:#}", flow.label())),
        }
    }
    if mode == ProxyMode::Nftables {
        let (traced, complaints) = trace_all(&node, flows, TRACE_TIMEOUT).expect("trace the flows in node-a");
        let before = failures.len();
        for flow in flows {
            let ours = traced.get(&flow.id).cloned().unwrap_or_default();
            if let Err(e) = check_paths(flow, &ours) {
                failures.push(format!(
                    "{}\n    nft trace differs: {e}\n    (nft monitor said: {complaints:?})",
                    flow.label()
                ));
            }
        }
        eprintln!(
            "nft trace: {} of {} flows took only paths upstream's trace shows",
            flows.len() - (failures.len() - before),
            flows.len()
        );
    }
    if mode == ProxyMode::Iptables {
        let counted = count_all(&node, flows, TRACE_TIMEOUT).expect("count the flows' rule hits in node-a");
        let before = failures.len();
        for flow in flows {
            let ours = counted.get(&flow.id).cloned().unwrap_or_default();
            if let Err(e) = check_hits(flow, &ours) {
                failures.push(format!("{}\n    iptables counters differ: {e}", flow.label()));
            }
        }
        eprintln!(
            "iptables counters: {} of {} flows hit only rules upstream's run hit",
            flows.len() - (failures.len() - before),
            flows.len()
        );
    }
    let before = failures.len();
    failures.extend(explain_differences(node.node(), flows));
    eprintln!(
        "explain packet: {} of {} flows explained as traffic went",
        flows.len() - (failures.len() - before),
        flows.len()
    );
    if let Some(status) = proxy.exited() {
        failures.push(format!("kube-proxy-rs exited during the replay: {status}"));
    }
    eprintln!(
        "{} {} flows replayed in {:?} (topology {built:?}, first sync at {synced:?}), {} difference(s) from upstream",
        flows.len(),
        mode.dir(),
        started.elapsed(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} difference(s) from upstream v1.36 in the {} {} flows:\n\n{}\n\n=== node-a rules ===\n{}\n=== kube-proxy-rs log (last {LOG_TAIL} lines) ===\n{}",
        failures.len(),
        flows.len(),
        mode.dir(),
        failures.join("\n\n"),
        mode.rules(node.node()),
        proxy.log_tail()
    );
}

/// Asks the binary's `explain packet` (reading node-a's live kernel)
/// about each flow: every flow whose answer is not what traffic did, with
/// the answer.
fn explain_differences(ns: &Netns, flows: &[FlowCase]) -> Vec<String> {
    let mut failures = Vec::new();
    for flow in flows {
        let args = explain_args(flow);
        let output = ns.command(env!("CARGO_BIN_EXE_kube-proxy-rs")).args(&args).output();
        let output = match output {
            Ok(output) if output.status.success() => output,
            Ok(output) => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                failures.push(format!("{}
    explain failed ({}): {stderr}", flow.label(), output.status));
                continue;
            }
            Err(e) => {
                failures.push(format!("{}
    explain could not run: {e}", flow.label()));
                continue;
            }
        };
        let json = String::from_utf8_lossy(&output.stdout);
        let verdict = explained_outcomes(&json).map_err(|e| format!("{e:#}")).and_then(|got| check_explained(flow, &got));
        match verdict {
            Ok(()) => eprintln!("{}: explained as traffic went", flow.id),
            Err(e) => failures.push(format!("{}
    explain packet {}: {e}
{json}", flow.label(), args[2..].join(" "))),
        }
    }
    failures
}

/// What node-a's witness counted, for a silent flow.
fn through(r: &Replayed) -> String {
    match r.passage {
        Some(p) if r.seen.iter().all(|s| *s == Seen::TimedOut) => {
            format!(" (node-a: {} packet(s) entered, {} got through)", p.entered, p.through)
        }
        _ => String::new(),
    }
}

/// kube-proxy-rs running in node-a; killed when dropped (and by the
/// kernel if the test process dies first: `setpriv --pdeathsig`).
struct RunningProxy {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl RunningProxy {
    fn start(ns: &Netns, mode: ProxyMode) -> Self {
        let config = reference_file(&format!("{}/kube-proxy-config.yaml", mode.dir()));
        let manifests = reference_file("cluster.yaml");
        require_files(&[&config, &manifests]);
        let mut command = ns.command("setpriv");
        command
            .args(["--pdeathsig", "KILL", "--", env!("CARGO_BIN_EXE_kube-proxy-rs")])
            .arg("--config")
            .arg(&config)
            .arg("--manifests")
            .arg(&manifests)
            .args(["--hostname-override", "node-a"])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start kube-proxy-rs");
        let stderr = child.stderr.take().expect("the proxy's stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        Self { child, log }
    }

    /// Waits until a log line contains `needle`.
    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if self.log.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|l| l.contains(needle)) {
                return;
            }
            if let Some(status) = self.exited() {
                panic!("kube-proxy-rs exited ({status}) before {needle:?}:\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no log line with {needle:?} within {PATIENCE:?}:\n{}", self.log_tail());
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    fn log_tail(&self) -> String {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log[log.len().saturating_sub(LOG_TAIL)..].join("\n")
    }
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn require_files(paths: &[&Path]) {
    for path in paths {
        assert!(path.exists(), "{} is missing", path.display());
    }
}
