//! The harness of the flow replays (`flows_nftables.rs`,
//! `flows_iptables.rs`, `flows_ipvs_vm.rs`): the reference node built in
//! namespaces, kube-proxy-rs started in node-a with the reference's config
//! and manifests, every flow replayed (all at once, `WORKERS` at a time),
//! then traced (nftables) or counted (iptables) one flow after the other,
//! `explain packet` asked about each flow on the live kernel, and one
//! failure listing every flow that differs from upstream (IPVS mode: from
//! IPVS mode's verdicts, `testkit::flows::ipvs_flows`), with node-a's
//! rules and the proxy's log.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::flows::{
    Expected, FlowCase, Replayed, Seen, check_explained, check_explained_traffic, check_hits, check_paths, count_all,
    NODE_A_ADDRESSES, explain_args, explained_outcomes, ipvs_difference, replay_all, summary, trace_all,
};
use testkit::tracer::Outcome;
use testkit::netns::Netns;
use testkit::reference_node::{ReferenceNode, Responder, WITNESS_TABLE};

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
    /// `iptables/kube-proxy-config.yaml` with `mode: ipvs` (the reference
    /// has no IPVS run; the caller writes that file).
    Ipvs,
}

impl ProxyMode {
    fn dir(self) -> &'static str {
        match self {
            ProxyMode::Nftables => "nftables",
            ProxyMode::Iptables => "iptables",
            ProxyMode::Ipvs => "ipvs",
        }
    }

    /// The log line of every completed sync.
    fn synced(self) -> &'static str {
        match self {
            ProxyMode::Nftables => "synced nftables rules ip_family=IPv4",
            ProxyMode::Iptables => "synced iptables rules ip_family=IPv4",
            ProxyMode::Ipvs => "synced IPVS rules ip_family=IPv4",
        }
    }

    /// What node-a's kernel holds, for failure messages.
    fn rules(self, ns: &Netns) -> String {
        let commands: &[(&str, &[&str])] = match self {
            ProxyMode::Nftables => &[("nft", &["list", "ruleset"])],
            ProxyMode::Iptables => &[("iptables-legacy-save", &["-c"])],
            ProxyMode::Ipvs => &[
                ("ipvsadm", &["-Ln"]),
                ("ip", &["-br", "addr", "show", "kube-ipvs0"]),
                ("ipset", &["save"]),
                ("iptables-legacy-save", &["-c"]),
                ("iptables-nft-save", &["-c"]),
            ],
        };
        let dump = |(program, args): &(&str, &[&str])| {
            let text = ns.exec(program, args).unwrap_or_else(|e| format!("({program} failed: {e:#})"));
            format!("--- {program} {} ---\n{text}", args.join(" "))
        };
        commands.iter().map(dump).collect::<Vec<_>>().join("\n")
    }

    /// What the control of [`Replay::flushed_control`] removes: IPVS mode's
    /// virtual servers (its addresses, ipsets and iptables rules stay, so
    /// `explain` still reads a whole node), iptables mode's nat table,
    /// nftables mode's table.
    fn flush(self) -> (&'static str, &'static [&'static str]) {
        match self {
            ProxyMode::Ipvs => ("ipvsadm", &["-C"]),
            ProxyMode::Iptables => ("iptables-legacy", &["-t", "nat", "-F"]),
            ProxyMode::Nftables => ("nft", &["flush", "table", "ip", "kube-proxy"]),
        }
    }

    /// `explain packet` reads this mode's rules (live, nftables and
    /// iptables are told apart by what the kernel holds).
    fn explain_mode(self) -> &'static [&'static str] {
        match self {
            ProxyMode::Ipvs => &["--mode", "ipvs"],
            ProxyMode::Nftables | ProxyMode::Iptables => &[],
        }
    }
}

/// `explain packet`'s endings for a flow and its JSON answer, or why
/// there is none.
type Explained = Result<(BTreeSet<Outcome>, String), String>;

/// One replay: the mode, the proxy binary and the files it runs with, and
/// how patient to be.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The proxy mode under test.
    pub mode: ProxyMode,
    /// The kube-proxy-rs binary (run for the proxy and for `explain`).
    pub binary: PathBuf,
    /// Its `--config` file.
    pub config: PathBuf,
    /// Its `--manifests` file.
    pub manifests: PathBuf,
    /// How long the proxy may take to start and sync.
    pub patience: Duration,
    /// How long a replayed connection waits.
    pub timeout: Duration,
    /// Flows replayed at once.
    pub workers: usize,
    /// Node-a's own flows are sent from the source `explain` is asked
    /// about (its InternalIP; 127.0.0.1 to a loopback address), not from
    /// the one the kernel picks by route.
    pub bind_node_source: bool,
    /// After the replay, the proxy is stopped and part of its rules removed
    /// ([`ProxyMode::flush`]), and every flow is replayed and explained
    /// again: each must still be explained as its traffic went, and at
    /// least this many must differ from the expected verdicts, in traffic
    /// and in `explain`'s answers (checks that can fail).
    pub flushed_control: Option<usize>,
}

impl Replay {
    /// A replay on this machine: the binary cargo built, the reference's
    /// config for `mode` and `cluster.yaml`.
    pub fn on_host(mode: ProxyMode) -> Self {
        Self {
            mode,
            binary: PathBuf::from(env!("CARGO_BIN_EXE_kube-proxy-rs")),
            config: reference_file(&format!("{}/kube-proxy-config.yaml", mode.dir())),
            manifests: reference_file("cluster.yaml"),
            patience: PATIENCE,
            timeout: TIMEOUT,
            workers: WORKERS,
            bind_node_source: false,
            flushed_control: None,
        }
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
    Replay::on_host(mode).run(flows, responders);
}

impl Replay {
    /// Builds the reference node, starts the proxy there, replays every
    /// flow and fails naming each one whose verdict (or `explain`'s
    /// answer) differs from the expected one.
    pub fn run(&self, flows: &[FlowCase], responders: &[Responder]) {
        let mode = self.mode;
        let started = Instant::now();
        let mut node = ReferenceNode::build(responders).expect("build the reference topology");
        if self.bind_node_source {
            node.bind_node_source();
        }
        let built = started.elapsed();
        let mut proxy = RunningProxy::start(node.node(), self, &[]);
        proxy.wait_for(mode.synced(), self.patience);
        let synced = started.elapsed();
        let replays = replay_all(&node, flows, self.timeout, self.workers).expect("the witness table in node-a");
        let sent = started.elapsed();
        let mut failures = Vec::new();
        for (flow, replayed) in flows.iter().zip(&replays) {
            match replayed {
                Ok(r) if r.mismatch.is_none() => {
                    eprintln!("{}: as expected{}: {}{}", flow.id, differs_by_design(mode, flow), summary(&r.seen), through(r));
                }
                Ok(r) => failures.push(format!("{}{}", r.report(flow), differs_by_design(mode, flow))),
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
        let checked = started.elapsed();
        let before = failures.len();
        failures.extend(self.explain_differences(node.node(), flows, &replays));
        eprintln!(
            "explain packet: {} of {} flows explained as traffic went",
            flows.len() - (failures.len() - before),
            flows.len()
        );
        if let Some(status) = proxy.exited() {
            failures.push(format!("kube-proxy-rs exited during the replay: {status}"));
        }
        let replayed = started.elapsed();
        let rules = if failures.is_empty() { String::new() } else { mode.rules(node.node()) };
        if let (true, Some(at_least)) = (failures.is_empty(), self.flushed_control) {
            drop(proxy);
            self.flushed_control(&node, flows, at_least);
            eprintln!(
                "{} {} flows replayed in {replayed:?} (topology {built:?}, first sync at {synced:?}, traffic sent at {sent:?}, \
                 traced or counted at {checked:?}, then explained), as expected; \
                 again with the rules flushed, in {:?} in all",
                flows.len(),
                mode.dir(),
                started.elapsed()
            );
            return;
        }
        eprintln!(
            "{} {} flows replayed in {replayed:?} (topology {built:?}, first sync at {synced:?}, traffic sent at {sent:?}, \
             traced or counted at {checked:?}, then explained), {} difference(s) from upstream",
            flows.len(),
            mode.dir(),
            failures.len()
        );
        assert!(
            failures.is_empty(),
            "{} difference(s) from upstream v1.36 in the {} {} flows:\n\n{}\n\n=== node-a rules ===\n{rules}\n=== kube-proxy-rs log (last {LOG_TAIL} lines) ===\n{}",
            failures.len(),
            flows.len(),
            mode.dir(),
            failures.join("\n\n"),
            proxy.log_tail()
        );
    }

    /// `explain packet`'s endings for `flow` (reading node-a's live
    /// kernel), with its JSON answer; `Err` if it failed.
    fn explain(&self, ns: &Netns, flow: &FlowCase, dump: Option<&Path>) -> Explained {
        let mut args = explain_args(flow);
        args.extend(self.mode.explain_mode().iter().map(|a| a.to_string()));
        if let Some(dump) = dump {
            args.extend(["--from-file".to_string(), dump.display().to_string()]);
            args.extend(NODE_A_ADDRESSES.iter().flat_map(|ip| ["--node-ip".to_string(), ip.to_string()]));
        }
        let output = match ns.command(&self.binary.to_string_lossy()).args(&args).output() {
            Ok(output) if output.status.success() => output,
            Ok(output) => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                return Err(format!("explain failed ({}): {stderr}", output.status));
            }
            Err(e) => return Err(format!("explain could not run: {e}")),
        };
        let json = String::from_utf8_lossy(&output.stdout).into_owned();
        let endings = explained_outcomes(&json).map_err(|e| format!("explain packet {}: {e:#}\n{json}", args[2..].join(" ")))?;
        Ok((endings, json))
    }

    /// IPVS mode's live state as `explain dump --mode ipvs` reads it (the
    /// same readers as a live `explain packet`), for every flow to be
    /// explained from: a live read spawns five tools, 1.5 s a flow in the
    /// emulated VM. Other modes' flows are explained live, one by one.
    fn live_dump(&self, ns: &Netns) -> Option<tempfile::NamedTempFile> {
        if self.mode != ProxyMode::Ipvs {
            return None;
        }
        let output = ns.command(&self.binary.to_string_lossy()).args(["explain", "dump", "--mode", "ipvs"]).output().expect("run explain dump");
        assert!(output.status.success(), "explain dump --mode ipvs failed: {}", String::from_utf8_lossy(&output.stderr));
        let file = tempfile::NamedTempFile::new().expect("a file for the dump");
        std::fs::write(file.path(), &output.stdout).expect("write the dump");
        Some(file)
    }

    /// [`Self::explain`] for every flow, `self.workers` at a time, answers
    /// in the flows' order.
    fn explain_all(&self, ns: &Netns, flows: &[FlowCase]) -> Vec<Explained> {
        let dump = self.live_dump(ns);
        let dump = dump.as_ref().map(|f| f.path());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let answers: Vec<Mutex<Option<Explained>>> = flows.iter().map(|_| Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..self.workers.max(1) {
                scope.spawn(|| {
                    loop {
                        let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(flow) = flows.get(at) else { break };
                        *answers[at].lock().unwrap() = Some(self.explain(ns, flow, dump));
                    }
                });
            }
        });
        answers.into_iter().map(|a| a.into_inner().unwrap().expect("every flow explained")).collect()
    }

    /// Asks the binary's `explain packet` (reading node-a's live kernel)
    /// about each flow: every flow whose answer is not the flow's verdict,
    /// or not what its traffic did in `replays`, with the answer.
    fn explain_differences(&self, ns: &Netns, flows: &[FlowCase], replays: &[anyhow::Result<Replayed>]) -> Vec<String> {
        let mut failures = Vec::new();
        let answers = self.explain_all(ns, flows);
        for ((flow, replayed), answer) in flows.iter().zip(replays).zip(answers) {
            let (endings, json) = match answer {
                Ok(answer) => answer,
                Err(e) => {
                    failures.push(format!("{}\n    {e}", flow.label()));
                    continue;
                }
            };
            let as_traffic = match replayed {
                Ok(r) => check_explained_traffic(flow, flow.source(), &r.seen, r.passage, &endings),
                Err(_) => Ok(()), // reported with the replay
            };
            let as_verdict = || {
                check_explained(flow, &endings).map_err(|e| format!("as the traffic went, but not as expected: {e}"))
            };
            match as_traffic.and_then(|()| as_verdict()) {
                Ok(()) => eprintln!("{}: explained as traffic went", flow.id),
                Err(e) => failures.push(format!(
                    "{}{}\n    explain packet {}: {e}\n{json}",
                    flow.label(),
                    differs_by_design(self.mode, flow),
                    explain_args(flow)[2..].join(" "),
                )),
            }
        }
        failures
    }

    /// With the proxy stopped and part of its rules removed
    /// ([`ProxyMode::flush`]), every flow is replayed and explained again:
    /// `explain` must still answer each flow with what its traffic did,
    /// and at least `at_least` flows must now go otherwise than expected,
    /// and as many be explained otherwise, or the checks above could not
    /// have failed.
    fn flushed_control(&self, node: &ReferenceNode, flows: &[FlowCase], at_least: usize) {
        let (program, args) = self.mode.flush();
        node.node().exec(program, args).unwrap_or_else(|e| panic!("{program} {}: {e:#}", args.join(" ")));
        node.node().exec("nft", &["delete", "table", "ip", WITNESS_TABLE]).expect("remove the witness table");
        let replays = replay_all(node, flows, TRACE_TIMEOUT, self.workers).expect("the witness table in node-a");
        let mut went_otherwise = Vec::new();
        let mut explained_otherwise = Vec::new();
        let mut failures = Vec::new();
        let answers = self.explain_all(node.node(), flows);
        for ((flow, replayed), answer) in flows.iter().zip(&replays).zip(answers) {
            let replayed = match replayed {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{}: could not be replayed: {e:#}", flow.label()));
                    continue;
                }
            };
            if replayed.mismatch.is_some() {
                went_otherwise.push(flow.id.as_str());
            }
            match answer {
                Ok((endings, json)) => {
                    if check_explained(flow, &endings).is_err() {
                        explained_otherwise.push(flow.id.as_str());
                    }
                    if let Err(e) = check_explained_traffic(flow, flow.source(), &replayed.seen, replayed.passage, &endings) {
                        failures.push(format!("{}\n    traffic: {}\n    {e}\n{json}", flow.label(), summary(&replayed.seen)));
                    }
                }
                Err(e) => failures.push(format!("{}\n    {e}", flow.label())),
            }
        }
        eprintln!(
            "with `{program} {}`: {} of {} flows went otherwise ({}), {} explained otherwise, {} explained unlike their traffic",
            args.join(" "),
            went_otherwise.len(),
            flows.len(),
            went_otherwise.join(" "),
            explained_otherwise.len(),
            failures.len()
        );
        assert!(
            failures.is_empty(),
            "with `{program} {}`, {} flows were not explained as their traffic went:\n\n{}\n\n=== node-a rules ===\n{}",
            args.join(" "),
            failures.len(),
            failures.join("\n\n"),
            self.mode.rules(node.node())
        );
        assert!(
            went_otherwise.len() >= at_least && explained_otherwise.len() >= at_least,
            "with `{program} {}` only {} flows went otherwise and {} were explained otherwise (at least {at_least} \
             should): the checks cannot tell the proxy's rules from none",
            args.join(" "),
            went_otherwise.len(),
            explained_otherwise.len()
        );
    }
}

/// For a flow IPVS mode answers otherwise by design, why.
fn differs_by_design(mode: ProxyMode, flow: &FlowCase) -> String {
    match (mode, ipvs_difference(&flow.id)) {
        (ProxyMode::Ipvs, Some(why)) => format!(" (IPVS mode by design: {why})"),
        _ => String::new(),
    }
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
    fn start(ns: &Netns, replay: &Replay, extra_args: &[&str]) -> Self {
        require_files(&[&replay.binary, &replay.config, &replay.manifests]);
        let mut command = ns.command("setpriv");
        command
            .args(["--pdeathsig", "KILL", "--"])
            .arg(&replay.binary)
            .arg("--config")
            .arg(&replay.config)
            .arg("--manifests")
            .arg(&replay.manifests)
            .args(["--hostname-override", "node-a"])
            .args(extra_args)
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
    fn wait_for(&mut self, needle: &str, patience: Duration) {
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            if self.log.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|l| l.contains(needle)) {
                return;
            }
            if let Some(status) = self.exited() {
                panic!("kube-proxy-rs exited ({status}) before {needle:?}:\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no log line with {needle:?} within {patience:?}:\n{}", self.log_tail());
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

/// One probe of an `explain migrate -o json` report as a flow, with its
/// endings now and after the switch.
pub struct MigrateProbe {
    /// The probe as a flow (`M001` …), sent from its client in node-a's
    /// topology.
    pub flow: FlowCase,
    /// The endings the report gives it in the current mode.
    pub now: BTreeSet<Outcome>,
    /// The endings it gives after the switch.
    pub after: BTreeSet<Outcome>,
}

/// Every probe of the report (its differences, its unchanged probes, the
/// ClusterIPs' other ports); a probe of a Service with session affinity
/// counts as sticky.
pub fn migrate_probes(report: &serde_json::Value) -> Vec<MigrateProbe> {
    let outcomes = |list: &serde_json::Value| {
        testkit::flows::explained_outcomes(&serde_json::json!({ "outcomes": list }).to_string()).expect("endings in the report")
    };
    let mut out = Vec::new();
    let mut push = |probe: &serde_json::Value, now: BTreeSet<Outcome>, after: BTreeSet<Outcome>, sticky: bool| {
        let id = format!("M{:03}", out.len() + 1);
        out.push(MigrateProbe { flow: probe_flow(&id, probe, &now, sticky), now, after });
    };
    if let Some(other) = report.get("cluster_ip_other_ports").filter(|o| !o.is_null()) {
        push(&other["probe"], outcomes(&other["before"]), outcomes(&other["after"]), false);
    }
    for service in report["services"].as_array().expect("services") {
        let sticky = service["notes"].as_array().expect("notes").iter().any(|n| n["topic"] == "session affinity");
        for d in service["differences"].as_array().expect("differences") {
            push(&d["probe"], outcomes(&d["before"]), outcomes(&d["after"]), sticky);
        }
        for u in service["unchanged"].as_array().expect("unchanged") {
            push(&u["probe"], outcomes(&u["outcomes"]), outcomes(&u["outcomes"]), sticky);
        }
    }
    out
}

fn probe_flow(id: &str, probe: &serde_json::Value, now: &BTreeSet<Outcome>, sticky: bool) -> FlowCase {
    let text = |key: &str| probe[key].as_str().unwrap_or_else(|| panic!("probe without {key}: {probe}")).to_string();
    let source: std::net::IpAddr = text("source").parse().expect("probe source");
    let from = match text("sender").as_str() {
        "pod" => testkit::flows::FlowSource::Pod(source),
        "node" => {
            let sent_from = testkit::flows::FlowSource::Node.address(text("destination").parse::<SocketAddr>().expect("destination").ip());
            assert_eq!(source, sent_from, "{id}: the report probes from node-a's {source}, the replay sends from {sent_from}");
            testkit::flows::FlowSource::Node
        }
        _ => testkit::flows::FlowSource::External(source),
    };
    let protocol = match text("protocol").as_str() {
        "udp" => testkit::tracer::Protocol::Udp,
        "sctp" => testkit::tracer::Protocol::Sctp,
        _ => testkit::tracer::Protocol::Tcp,
    };
    let endpoints: BTreeSet<SocketAddr> = now.iter().filter_map(|o| if let Outcome::Dnat { to, .. } = o { Some(*to) } else { None }).collect();
    let expected = match now.iter().next() {
        Some(Outcome::Dnat { masquerade, .. }) => Expected::Dnat {
            endpoints,
            masquerade: if *masquerade { testkit::flows::Masquerade::Yes } else { testkit::flows::Masquerade::No },
            sticky,
        },
        Some(Outcome::Drop) => Expected::Drop,
        Some(Outcome::Reject) => Expected::Reject,
        Some(Outcome::Local) => Expected::DeliveredLocally,
        Some(Outcome::Accept { .. }) | None => Expected::NoRule,
    };
    FlowCase {
        id: id.to_string(),
        scenario: "migrate".to_string(),
        service: text("port"),
        from,
        protocol,
        destination: text("destination").parse().expect("probe destination"),
        target: text("target"),
        expected,
        observed: Default::default(),
        rule_hits: Vec::new(),
        nft_trace: Vec::new(),
    }
}

/// What `explain migrate` is checked with: the mode to switch to with its
/// config file, the flows to replay after the switch with that mode's
/// verdicts, the addresses that answer ping only before it.
pub struct Switch {
    /// The mode after the switch.
    pub to: ProxyMode,
    /// The proxy's `--config` in that mode.
    pub config: PathBuf,
    /// The reference flows with the new mode's verdicts.
    pub flows_after: Vec<FlowCase>,
    /// Addresses IPVS mode binds to kube-ipvs0: in v1.36 they answer ping
    /// from the client pod neither before the switch (KUBE-IPVS-FILTER
    /// rejects it) nor after, so `explain migrate` names no difference.
    pub ping: Vec<String>,
}

impl Replay {
    /// `explain migrate --to` (live, in node-a, with the proxy's flags)
    /// checked by real traffic: every probe it reports is sent before the
    /// switch (must go as its `before` endings say) and after the proxy is
    /// restarted in the new mode (as its `after` endings say); the
    /// reference flows then go as upstream's new mode sends them, and the
    /// addresses in `switch.ping` answer ping before and not after.
    pub fn migrate(&self, switch: &Switch, responders: &[Responder]) {
        let started = Instant::now();
        let mut node = ReferenceNode::build(responders).expect("build the reference topology");
        node.bind_node_source();
        // many probes are rejected from the same client: no ICMP rate limit in node-a
        node.node().exec("sysctl", &["-w", "net.ipv4.icmp_ratelimit=0"]).expect("sysctl in node-a");
        let mut proxy = RunningProxy::start(node.node(), self, &[]);
        proxy.wait_for(self.mode.synced(), self.patience);
        let (report, text) = self.migrate_report(node.node(), switch.to);
        eprintln!("{text}");
        let probes = migrate_probes(&report);
        let differing = probes.iter().filter(|p| p.now != p.after).count();
        let mut failures = self.send_probes(&node, &probes, true);
        let pinged_before = ping_answers(&node, &switch.ping);
        drop(proxy);
        let after = Replay { mode: switch.to, config: switch.config.clone(), ..self.clone() };
        // `explain migrate` tells what the new mode does once IPVS mode's
        // leftovers are gone: drained at once (the drain itself is
        // mode_switch's), and the probes sent after
        let mut proxy = RunningProxy::start(node.node(), &after, &["--ipvs-drain-timeout=0s"]);
        proxy.wait_for(switch.to.synced(), self.patience);
        if self.mode == ProxyMode::Ipvs {
            proxy.wait_for("IPVS mode's leftovers drained and removed", self.patience);
        }
        let switched = started.elapsed();
        failures.extend(self.send_probes(&node, &probes, false));
        let pinged_after = ping_answers(&node, &switch.ping);
        if !pinged_before.is_empty() || !pinged_after.is_empty() {
            failures.push(format!("ping answered from {pinged_before:?} before the switch, {pinged_after:?} after: none should"));
        }
        if ping_answers(&node, &[POD_GATEWAY_PINGED.to_string()]).is_empty() {
            failures.push(format!("node-a's {POD_GATEWAY_PINGED} does not answer ping from the client pod: ping cannot tell"));
        }
        node.node().exec("nft", &["delete", "table", "ip", WITNESS_TABLE]).expect("remove the witness table");
        let replays = replay_all(&node, &switch.flows_after, self.timeout, self.workers).expect("the witness table in node-a");
        let mut flows_as_upstream = 0;
        for (flow, replayed) in switch.flows_after.iter().zip(&replays) {
            match replayed {
                Ok(r) if r.mismatch.is_none() => flows_as_upstream += 1,
                Ok(r) => failures.push(format!("after the switch: {}", r.report(flow))),
                Err(e) => failures.push(format!("after the switch: {}: {e:#}", flow.label())),
            }
        }
        if let Some(status) = proxy.exited() {
            failures.push(format!("kube-proxy-rs exited after the switch: {status}"));
        }
        eprintln!(
            "MIGRATE-VM: {} probes ({differing} reported as differing), each sent before and after the switch {} -> {}; \
             {} of {} reference flows as upstream's {}; ping answered {}/{} before, {} after; switched at {switched:?}, done in {:?}; {} failure(s)",
            probes.len(),
            self.mode.dir(),
            switch.to.dir(),
            flows_as_upstream,
            switch.flows_after.len(),
            switch.to.dir(),
            pinged_before.len(),
            switch.ping.len(),
            pinged_after.len(),
            started.elapsed(),
            failures.len()
        );
        assert!(
            failures.is_empty(),
            "explain migrate --to {} checked by traffic: {} failure(s):\n\n{}\n\n=== node-a rules ===\n{}\n=== kube-proxy-rs log (last {LOG_TAIL} lines) ===\n{}",
            switch.to.dir(),
            failures.len(),
            failures.join("\n\n"),
            switch.to.rules(node.node()),
            proxy.log_tail()
        );
    }

    /// `explain migrate --to MODE -o json` and its text, live in node-a,
    /// probing from the reference's clients.
    fn migrate_report(&self, ns: &Netns, to: ProxyMode) -> (serde_json::Value, String) {
        let run = |json: bool| {
            let mut command = ns.command(&self.binary.to_string_lossy());
            command.args(["explain", "migrate", "--to", to.dir(), "--pod-ip", "10.244.0.200", "--client-ip", "172.20.0.10"]);
            command.args(["--client-interface", "ext0"]);
            if json {
                command.args(["-o", "json"]);
            }
            command.arg("--").arg("--config").arg(&self.config).arg("--manifests").arg(&self.manifests);
            let out = command.args(["--hostname-override", "node-a"]).output().expect("run explain migrate");
            assert!(out.status.success(), "explain migrate --to {}: {}", to.dir(), String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let json = run(true);
        (serde_json::from_str(&json).unwrap_or_else(|e| panic!("explain migrate -o json ({e}): {json}")), run(false))
    }

    /// Sends every probe; the failures: each whose traffic did not go as
    /// the report's endings for that side of the switch say, twice (a
    /// probe that fails is sent once more: one connection in thousands
    /// ends oddly in the VM, `POLLHUP` without an error; each re-send is
    /// printed).
    fn send_probes(&self, node: &ReferenceNode, probes: &[MigrateProbe], before: bool) -> Vec<String> {
        let side = if before { "before the switch" } else { "after the switch" };
        let mut failing: Vec<(&MigrateProbe, String)> = self.probe_failures(node, probes.iter().collect(), before);
        if !failing.is_empty() {
            let again: Vec<&MigrateProbe> = failing.iter().map(|(p, _)| *p).collect();
            eprintln!("MIGRATE-VM: {} probe(s) re-sent {side}: {:?}", again.len(), failing.iter().map(|(p, e)| format!("{}: {e}", p.flow.id)).collect::<Vec<_>>());
            failing = self.probe_failures(node, again, before);
        }
        failing.into_iter().map(|(p, e)| format!("{} {side} (twice): {e}", p.flow.label())).collect()
    }

    fn probe_failures<'a>(&self, node: &ReferenceNode, probes: Vec<&'a MigrateProbe>, before: bool) -> Vec<(&'a MigrateProbe, String)> {
        let _ = node.node().exec("nft", &["delete", "table", "ip", WITNESS_TABLE]);
        let flows: Vec<FlowCase> = probes.iter().map(|p| p.flow.clone()).collect();
        let replays = replay_all(node, &flows, self.timeout, self.workers).expect("the witness table in node-a");
        let side = if before { "before the switch" } else { "after the switch" };
        let mut failures = Vec::new();
        for (probe, replayed) in probes.into_iter().zip(&replays) {
            let endings = if before { &probe.now } else { &probe.after };
            let result = match replayed {
                Ok(r) => check_explained_traffic(&probe.flow, probe.flow.source(), &r.seen, r.passage, endings)
                    .map_err(|e| format!("{e} ({})", summary(&r.seen))),
                Err(e) => Err(format!("could not be sent: {e:#}")),
            };
            match result {
                Ok(()) => eprintln!("{} {side}: as reported: {}", probe.flow.label(), testkit::tracer::describe_outcomes(endings)),
                Err(e) => failures.push((probe, e)),
            }
        }
        failures
    }
}

/// node-a's address on the pod network: answers ping (the control).
const POD_GATEWAY_PINGED: &str = "10.244.0.1";

/// The addresses of `addresses` that answer one ping from the client pod.
fn ping_answers(node: &ReferenceNode, addresses: &[String]) -> Vec<String> {
    addresses.iter().filter(|a| node.client_pod().exec("ping", &["-c", "1", "-W", "2", a]).is_ok()).cloned().collect()
}
