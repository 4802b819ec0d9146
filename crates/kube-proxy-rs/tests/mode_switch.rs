//! Switching a node between iptables and nftables mode without a dropped
//! connection (issue 27): node-a of testkit's cluster with two server pods
//! and a client pod, the binary started in one mode; while 50 long-lived
//! connections echo through a ClusterIP (from the client pod), a NodePort
//! (ETP Cluster, from the outside client: masqueraded) and a NodePort with
//! ETP Local (client address kept), and fresh connections to each are
//! made at up to 300/s in all (at least 100/s asserted), the proxy gets SIGTERM and the binary starts in
//! the other mode. No long-lived connection may break, no fresh one fail
//! or reach its endpoint from the wrong address, and the old mode's rules
//! must be gone once the new mode has synced.
//!
//! `KPRS_SWITCH_FILLERS=n` adds n more services (default 200) so the new
//! mode's start-up is longer; `KPRS_SWITCH_BINARY=path` runs another build
//! of the binary (main's, to see the gap it leaves). Needs root, `nft` and
//! `iptables-legacy-save`; without them the tests fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/proxy.rs"]
mod proxy;
mod mode_switch {
    pub mod manifests;
    pub mod traffic;
}

use mode_switch::manifests::{self, CLIENT_POD, CLUSTER_IP, LOCAL_NODE_PORT, NODE_PORT, SERVERS};
use mode_switch::traffic::{self, Failure, Record, Target};
use proxy::Proxy;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Plan, PodPlan};
use testkit::netns::Netns;

/// The modes switched between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Iptables,
    Nftables,
}

impl Mode {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Mode::Iptables => &["--proxy-mode", "iptables", "--iptables-backend", "legacy"],
            Mode::Nftables => &["--proxy-mode", "nftables"],
        }
    }

    fn synced(self) -> &'static str {
        match self {
            Mode::Iptables => "synced iptables rules ip_family=IPv4",
            Mode::Nftables => "synced nftables rules ip_family=IPv4",
        }
    }
}

/// How many long-lived connections per target (50 in all).
const LONG_LIVED: [usize; 3] = [17, 17, 16];
/// One fresh connection per target every 10 ms: up to 300/s in all.
const FRESH_EVERY: Duration = Duration::from_millis(10);

#[test]
fn iptables_to_nftables_drops_no_connection() {
    switch(Mode::Iptables, Mode::Nftables);
}

#[test]
fn nftables_to_iptables_drops_no_connection() {
    switch(Mode::Nftables, Mode::Iptables);
}

/// node-a with the server pods and the client pod, the manifests written.
fn build_node() -> Cluster {
    testkit::netns::require_kernel();
    let mut plan = Plan::two_nodes();
    plan.nodes.truncate(1);
    let pod = |(name, ip): (&str, std::net::Ipv4Addr)| PodPlan {
        name: name.into(),
        node: "node-a".into(),
        ip,
        ip6: None,
        extra_ips: Vec::new(),
        tcp_ports: Vec::new(),
        udp_ports: Vec::new(),
    };
    plan.pods = SERVERS.into_iter().chain([CLIENT_POD]).map(pod).collect();
    let cluster = Cluster::build(&plan).expect("build node-a");
    let fillers = std::env::var("KPRS_SWITCH_FILLERS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    cluster.write_manifests(&manifests::manifests(fillers)).unwrap();
    cluster
}

/// The binary in `mode` on node-a, with a private xtables lock file.
fn start(cluster: &Cluster, mode: Mode, lock: &std::path::Path) -> Proxy {
    let binary = std::env::var("KPRS_SWITCH_BINARY").unwrap_or_else(|_| proxy::BINARY.to_string());
    let node = cluster.node("node-a").unwrap().ns();
    let mut command = node.command("setpriv");
    command.args(["--pdeathsig", "KILL", "--", &binary]).args(mode.flags());
    let manifests = cluster.manifests_path().display().to_string();
    command.args(["--manifests", &manifests, "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16"]);
    command.args(["--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249"]);
    command.env("XTABLES_LOCKFILE", lock);
    Proxy::start(command)
}

/// The three services as their clients reach them.
fn targets(cluster: &Cluster) -> [(Target, &Netns); 3] {
    let node_ip = IpAddr::V4(cluster.node("node-a").unwrap().ip());
    let gateway = IpAddr::V4(cluster.node("node-a").unwrap().gateway());
    let outside = cluster.client();
    let outside_ip = IpAddr::V4(outside.ips()[0]);
    let pod = cluster.pod(CLIENT_POD.0).unwrap().ns();
    [
        (Target { kind: "ClusterIP", addr: SocketAddr::new(IpAddr::V4(CLUSTER_IP), 80), peer: IpAddr::V4(CLIENT_POD.1) }, pod),
        (Target { kind: "NodePort", addr: SocketAddr::new(node_ip, NODE_PORT), peer: gateway }, outside.ns()),
        (Target { kind: "ETP=Local", addr: SocketAddr::new(node_ip, LOCAL_NODE_PORT), peer: outside_ip }, outside.ns()),
    ]
}

/// What is left of `mode`'s rules on node-a (empty: nothing).
fn left_of(node: &Netns, mode: Mode) -> Vec<String> {
    match mode {
        Mode::Nftables => {
            let tables = node.exec("nft", &["list", "tables"]).unwrap();
            tables.lines().filter(|l| l.contains("kube-proxy")).map(String::from).collect()
        }
        Mode::Iptables => {
            let saved = node.exec("iptables-legacy-save", &[]).unwrap();
            saved.lines().filter(|l| l.contains("KUBE-") && !l.contains("KUBE-FIREWALL")).map(String::from).collect()
        }
    }
}

/// Waits up to `patience` for `mode`'s rules to be gone from node-a.
fn wait_gone(node: &Netns, mode: Mode, patience: Duration) -> Vec<String> {
    let deadline = Instant::now() + patience;
    loop {
        let left = left_of(node, mode);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn switch(from: Mode, to: Mode) {
    let cluster = build_node();
    let node = cluster.node("node-a").unwrap().ns();
    let servers_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for (name, ip) in SERVERS {
        traffic::serve(cluster.pod(name).unwrap().ns(), IpAddr::V4(ip), servers_stop.clone());
    }
    let lock = tempfile::NamedTempFile::new().unwrap();
    let mut old = start(&cluster, from, lock.path());
    old.wait_for(from.synced());
    let targets = targets(&cluster);
    let record = Record::new();
    let (mut term_at, mut synced_at) = (0.0, 0.0);
    let mut new = None;
    std::thread::scope(|scope| {
        for ((target, ns), count) in targets.iter().zip(LONG_LIVED) {
            for conn in traffic::open_long_lived(ns, *target, count) {
                let record = &record;
                scope.spawn(move || traffic::keep_alive(record, target.kind, conn));
            }
        }
        for (target, ns) in &targets {
            let record = &record;
            scope.spawn(move || traffic::open_fresh(ns, record, *target, FRESH_EVERY));
        }
        std::thread::sleep(Duration::from_secs(1));
        term_at = record.now();
        old.stop();
        let mut proxy = start(&cluster, to, lock.path());
        proxy.wait_for(to.synced());
        synced_at = record.now();
        let left = wait_gone(node, from, Duration::from_secs(10));
        std::thread::sleep(Duration::from_secs(2));
        record.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        new = Some((proxy, left));
    });
    servers_stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut proxy, left) = new.unwrap();
    let log = proxy.drain_all().join("\n");
    let seen = record.seen();
    let figures = figures(&seen, term_at, synced_at);
    println!("[mode-switch] {from:?} -> {to:?}: {figures}");
    assert!(seen.new_failed.is_empty() && seen.established_broken.is_empty(), "{from:?} -> {to:?}: {figures}\n{}\nnew mode's log:\n{log}", failures(&seen));
    assert_eq!(seen.established_ok, LONG_LIVED.iter().sum::<usize>(), "{figures}");
    let rate: usize = seen.attempts.iter().map(|(_, n)| n).sum();
    assert!(rate as f64 / record.now() >= 100.0, "fresh connections at under 100/s: {figures}");
    assert!(left.is_empty(), "{from:?} mode's rules are still on the node after the switch: {left:#?}\n{log}");
    drop(seen);
    proxy.stop();
}

/// The figures of a run, times in seconds since SIGTERM.
fn figures(seen: &traffic::Seen, term_at: f64, synced_at: f64) -> String {
    let window = |failures: &[Failure]| match (failures.first(), failures.last()) {
        (Some(first), Some(last)) => format!("{:.3}..{:.3} s", first.at - term_at, last.at - term_at),
        _ => "none".to_string(),
    };
    let attempts: usize = seen.attempts.iter().map(|(_, n)| n).sum();
    let per_kind: Vec<String> = ["ClusterIP", "NodePort", "ETP=Local"]
        .iter()
        .map(|kind| {
            let failed: Vec<Failure> = seen.new_failed.iter().filter(|f| f.kind == *kind).cloned().collect();
            format!("{kind}: {} failed ({})", failed.len(), window(&failed))
        })
        .collect();
    format!(
        "new mode synced {:.3} s after SIGTERM; fresh connections: {attempts} attempted, {} failed [{}]; long-lived: {} kept, {} broken ({})",
        synced_at - term_at,
        seen.new_failed.len(),
        per_kind.join(", "),
        seen.established_ok,
        seen.established_broken.len(),
        window(&seen.established_broken)
    )
}

/// The first few failures of each kind, for the failure message.
fn failures(seen: &traffic::Seen) -> String {
    let mut text = String::new();
    for f in seen.new_failed.iter().take(5).chain(seen.established_broken.iter().take(5)) {
        text.push_str(&format!("  {:.3} s {}: {}\n", f.at, f.kind, f.what));
    }
    text
}
