//! Switching a node between iptables and nftables mode without a dropped
//! connection (issue 27): node-a of testkit's cluster with two server pods
//! and a client pod, the binary started in one mode; while 50 long-lived
//! connections echo through a ClusterIP (from the client pod), a NodePort
//! (ETP Cluster, from the outside client: masqueraded) and a NodePort with
//! ETP Local (client address kept), and fresh connections to each are
//! made at up to 300/s in all (at least 100/s asserted), the proxy gets SIGTERM and the binary starts in
//! the other mode. No long-lived connection may break, no fresh one fail
//! or reach its endpoint from the wrong address, and the old mode's rules
//! must be gone once the new mode has synced (legacy and nft backends).
//! Two more tests hold both modes' rules loaded at once, as between the
//! new mode's first sync and the old mode's removal: which mode DNATs
//! (the one whose NAT hooks were registered last), that peers stay right
//! either way, that a stale nftables `firewall-check` is the one stale
//! rule that can drop what the new state admits, and that the mark one
//! mode sets is masqueraded by the other when its postrouting runs first.
//!
//! `ipvs_to_nftables_and_iptables_in_a_vm` leaves IPVS mode the same way,
//! in the VM (`mode_switch/ipvs_vm.rs`, one boot for both switches).
//!
//! A long-lived connection is broken when it is reset, closed, echoes
//! wrong bytes or gets no echo for 30 s (10 s outside the VM); an echo
//! that comes back intact over 1 s late is a stall, reported with the
//! segments TCP retransmitted meanwhile, beside the times the clients'
//! process was frozen and the packets full input backlogs dropped: late
//! is not dropped (the emulated VM is slow under host load).
//!
//! `KPRS_SWITCH_FILLERS=n` adds n more services (default 200) so the new
//! mode's start-up is longer; `KPRS_SWITCH_BINARY=path` runs another build
//! of the binary (main's, to see the gap it leaves). Needs root, `nft` and
//! `iptables-legacy-save`; without them the tests fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/proxy.rs"]
mod proxy;
mod mode_switch {
    pub mod ipvs_vm;
    pub mod manifests;
    pub mod traffic;
}

use mode_switch::ipvs_vm;
use mode_switch::manifests::{self, CLIENT_POD, CLUSTER_IP, LATE_IP, LB_IP, LOCAL_NODE_PORT, NODE_PORT, SERVERS, State};
use mode_switch::traffic::{self, Failure, Record, Target};
use proxy::Proxy;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Plan, PodPlan};
use testkit::netns::Netns;

/// The modes switched between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// iptables mode, legacy backend.
    Iptables,
    /// iptables mode, nft backend (`ip nat` / `ip filter` tables beside
    /// ours).
    IptablesNft,
    Nftables,
    /// nftables mode with `--nftables-shared-endpoint-maps=false`:
    /// upstream v1.36's table (an anonymous map per balancing chain).
    NftablesUpstream,
    /// IPVS mode, legacy backend (in the VM only: [`ipvs_vm`]).
    Ipvs,
}

impl Mode {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Mode::Iptables => &["--proxy-mode", "iptables", "--iptables-backend", "legacy"],
            Mode::IptablesNft => &["--proxy-mode", "iptables", "--iptables-backend", "nft"],
            Mode::Nftables => &["--proxy-mode", "nftables"],
            Mode::NftablesUpstream => &["--proxy-mode", "nftables", "--nftables-shared-endpoint-maps=false"],
            Mode::Ipvs => &["--proxy-mode", "ipvs", "--iptables-backend", "legacy"],
        }
    }

    fn synced(self) -> &'static str {
        match self {
            Mode::Iptables | Mode::IptablesNft => "synced iptables rules ip_family=IPv4",
            Mode::Nftables | Mode::NftablesUpstream => "synced nftables rules ip_family=IPv4",
            Mode::Ipvs => "synced IPVS rules ip_family=IPv4",
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

#[test]
fn iptables_nft_backend_to_nftables_drops_no_connection() {
    switch(Mode::IptablesNft, Mode::Nftables);
}

#[test]
fn nftables_to_iptables_nft_backend_drops_no_connection() {
    switch(Mode::Nftables, Mode::IptablesNft);
}

/// A restart of nftables mode on a table of upstream's layout (written
/// with `--nftables-shared-endpoint-maps=false`) with the default layout:
/// the first sync leaves no anonymous endpoint map, and no connection
/// breaks.
#[test]
fn upstream_table_to_shared_endpoint_maps_in_one_sync_drops_no_connection() {
    switch(Mode::NftablesUpstream, Mode::Nftables);
}

/// IPVS mode into nftables mode, then into iptables mode, in the VM
/// ([`ipvs_vm`]): no connection dropped, the IPVS objects drained.
#[test]
fn ipvs_to_nftables_and_iptables_in_a_vm() {
    if testkit::vm::inside() {
        ipvs_vm::prepare();
        // Both switches run whatever the first one's outcome.
        let outcomes = [Mode::Nftables, Mode::Iptables].map(|to| std::panic::catch_unwind(|| switch(Mode::Ipvs, to)).is_ok());
        assert_eq!(outcomes, [true, true], "IPVS -> nftables, IPVS -> iptables passed");
        println!("{}", ipvs_vm::PASSED);
        return;
    }
    testkit::netns::require_kernel();
    ipvs_vm::boot("ipvs_to_nftables_and_iptables_in_a_vm");
}

/// node-a with the server pods and the client pod, the manifests of
/// `state` written.
fn build_node(state: State) -> Cluster {
    testkit::netns::require_kernel();
    let mut plan = Plan::two_nodes();
    plan.nodes.truncate(1);
    plan.client.routes = vec![(format!("{LB_IP}/32").parse().unwrap(), "node-a".into())];
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
    let fillers = if testkit::vm::inside() { ipvs_vm::FILLERS } else { 200 };
    let fillers = std::env::var("KPRS_SWITCH_FILLERS").ok().and_then(|v| v.parse().ok()).unwrap_or(fillers);
    cluster.write_manifests(&manifests::manifests(state, fillers)).unwrap();
    cluster
}

/// The binary in `mode` on node-a, with a private xtables lock file.
fn start(cluster: &Cluster, mode: Mode, lock: &std::path::Path) -> Proxy {
    let binary = match testkit::vm::inside() {
        true => ipvs_vm::binary(),
        false => std::env::var("KPRS_SWITCH_BINARY").unwrap_or_else(|_| proxy::BINARY.to_string()),
    };
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
    // The ETP=Local clients dial from the outside client's second address.
    // Both NodePorts reach the same server pods, and IPVS matches a reply
    // to its connection by real server and client address and port only:
    // with one client address, a fresh connection to one NodePort that
    // takes the source port of a long-lived one to the other (Linux lets
    // one port serve two destinations) makes IPVS rewrite the replies of
    // one with the other's virtual port, whatever the mode switch does —
    // seen here in IPVS mode before SIGTERM (two NodePort connections
    // silent for 29 s), and by the `ipvsadm -Lnc` entries of a broken
    // connection's port (ESTABLISHED to :30080 beside CLOSE to :30081).
    let local_client = IpAddr::V4(outside.ips()[1]);
    let pod = cluster.pod(CLIENT_POD.0).unwrap().ns();
    [
        (Target { kind: "ClusterIP", addr: SocketAddr::new(IpAddr::V4(CLUSTER_IP), 80), peer: IpAddr::V4(CLIENT_POD.1), from: None }, pod),
        (Target { kind: "NodePort", addr: SocketAddr::new(node_ip, NODE_PORT), peer: gateway, from: None }, outside.ns()),
        (Target { kind: "ETP=Local", addr: SocketAddr::new(node_ip, LOCAL_NODE_PORT), peer: local_client, from: Some(local_client) }, outside.ns()),
    ]
}

/// What is left of `mode`'s rules on node-a (empty: nothing).
fn left_of(node: &Netns, mode: Mode) -> Vec<String> {
    match mode {
        Mode::Ipvs => ipvs_vm::left_of_ipvs(node),
        Mode::Nftables => {
            let tables = node.exec("nft", &["list", "tables"]).unwrap();
            tables.lines().filter(|l| l.contains("kube-proxy")).map(String::from).collect()
        }
        // Upstream's layout in the one table both layouts share: the
        // balancing rules that pick from an anonymous map.
        Mode::NftablesUpstream => {
            let table = node.exec("nft", &["list", "table", "ip", "kube-proxy"]).unwrap();
            table.lines().filter(|l| l.contains("numgen random mod") && l.contains(" map {")).map(String::from).collect()
        }
        Mode::Iptables | Mode::IptablesNft => {
            let tools = ["iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save", "ip6tables-nft-save"];
            let saved: String = tools.iter().map(|tool| node.exec(tool, &[]).unwrap()).collect();
            saved.lines().filter(|l| l.contains("KUBE-") && !l.contains("KUBE-FIREWALL")).map(String::from).collect()
        }
    }
}

/// Waits up to `patience` for `mode`'s rules to be gone from node-a
/// (leaving IPVS mode for nftables mode, none of iptables mode's chains
/// may stay either).
fn wait_gone(node: &Netns, mode: Mode, to: Mode, patience: Duration) -> Vec<String> {
    let deadline = Instant::now() + patience;
    loop {
        let mut left = left_of(node, mode);
        if mode == Mode::Ipvs && to == Mode::Nftables {
            left.extend(left_of(node, Mode::Iptables));
        }
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts the server of each server pod; they stop when the flag is set.
fn serve(cluster: &Cluster) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for (name, ip) in SERVERS {
        traffic::serve(cluster.pod(name).unwrap().ns(), IpAddr::V4(ip), stop.clone());
    }
    stop
}

fn switch(from: Mode, to: Mode) {
    let cluster = build_node(State::Both);
    let node = cluster.node("node-a").unwrap().ns();
    let servers_stop = serve(&cluster);
    let lock = tempfile::NamedTempFile::new().unwrap();
    let patience = if testkit::vm::inside() { ipvs_vm::SYNC_PATIENCE } else { proxy::PATIENCE };
    let mut old = start(&cluster, from, lock.path());
    old.wait_for_within(from.synced(), patience);
    let targets = targets(&cluster);
    let record = Record::new();
    let (mut term_at, mut synced_at, mut exited_at) = (0.0, 0.0, 0.0);
    let mut term_clock = String::new();
    let mut drops_before = 0;
    let mut snapshot = String::new();
    let mut new = None;
    let mut held = 0;
    // When the clients were told to stop (the rate's time span).
    let mut stopped_at = 0.0;
    std::thread::scope(|scope| {
        // A failure below stops the clients, so the scope can end.
        let _stop = StopOnDrop(&record.stop);
        scope.spawn(|| traffic::watch_freezes(&record));
        for ((target, ns), count) in targets.iter().zip(LONG_LIVED) {
            for conn in traffic::open_long_lived(ns, *target, count) {
                let record = &record;
                scope.spawn(move || traffic::keep_alive(record, target.kind, conn));
            }
        }
        // In the VM a connection takes longer (emulated CPUs): more openers.
        let openers = if testkit::vm::inside() { ipvs_vm::OPENERS } else { 1 };
        for (target, ns) in targets.iter().flat_map(|t| std::iter::repeat_n(t, openers)) {
            let record = &record;
            scope.spawn(move || traffic::open_fresh(ns, record, *target, FRESH_EVERY));
        }
        std::thread::sleep(Duration::from_secs(1));
        if from == Mode::NftablesUpstream {
            assert!(!left_of(node, from).is_empty(), "upstream's layout has no anonymous endpoint map to replace");
        }
        term_at = record.now();
        term_clock = wall_clock();
        drops_before = backlog_drops();
        old.stop();
        exited_at = record.now();
        let mut proxy = start(&cluster, to, lock.path());
        proxy.wait_for_within(to.synced(), patience);
        synced_at = record.now();
        let left = if from == Mode::Ipvs {
            // The long-lived connections outlive the new mode's first sync
            // by a while; their virtual servers must wait for them.
            std::thread::sleep(ipvs_vm::HOLD);
            held = ipvs_vm::active_connections(node);
            // The tables while every long-lived connection should still
            // echo, to look up one that does not.
            // (Listing them takes seconds in the VM: only then.)
            if record.stuck.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                snapshot = ipvs_vm::connections(node) + &ipvs_vm::sockets(cluster.client().ns());
            }
            record.stop.store(true, std::sync::atomic::Ordering::SeqCst);
            stopped_at = record.now();
            wait_gone(node, from, to, ipvs_vm::DRAIN_PATIENCE)
        } else if from == Mode::NftablesUpstream {
            // Converged in the first sync: nothing of the old layout left
            // when it is logged.
            let left = left_of(node, from);
            let kept = left_of(node, to);
            assert!(kept.iter().any(|t| t == "table ip kube-proxy"), "the table went away: {kept:?}");
            std::thread::sleep(Duration::from_secs(2));
            record.stop.store(true, std::sync::atomic::Ordering::SeqCst);
            stopped_at = record.now();
            left
        } else {
            let left = wait_gone(node, from, to, Duration::from_secs(10));
            std::thread::sleep(Duration::from_secs(2));
            record.stop.store(true, std::sync::atomic::Ordering::SeqCst);
            stopped_at = record.now();
            left
        };
        new = Some((proxy, left));
    });
    servers_stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut proxy, left) = new.unwrap();
    let log = proxy.drain_all().join("\n");
    let seen = record.seen();
    let figures = figures(&seen, term_at, synced_at);
    let drops = backlog_drops().saturating_sub(drops_before);
    let figures = format!("SIGTERM at {term_clock}, old proxy exited {:.3} s after; {figures}; packets dropped by full input backlogs since SIGTERM: {drops}", exited_at - term_at);
    // Leaving IPVS: the new proxy's whole log, to set the stalls beside.
    let removed: Vec<&str> = log.lines().filter(|l| from == Mode::Ipvs || l.contains("leftovers removed")).collect();
    let figures = if from == Mode::Ipvs { format!("{figures}; open IPVS connections {:.0?} after the new mode's sync: {held}", ipvs_vm::HOLD) } else { figures };
    println!("[mode-switch] {from:?} -> {to:?}: {figures}\n  {}", removed.join("\n  "));
    if !seen.established_broken.is_empty() {
        println!("  tables and client sockets {:.1} s after SIGTERM, lines of the broken connections' ports:", stopped_at - term_at);
        for failure in &seen.established_broken {
            let port = failure.what.split("client port ").nth(1).and_then(|t| t.split(')').next()).unwrap_or("?");
            let lines: Vec<&str> = snapshot.lines().filter(|l| l.contains(&format!(":{port} ")) || l.contains(&format!("={port} "))).collect();
            println!("  port {port}:\n    {}", lines.join("\n    "));
        }
    }
    assert!(seen.new_failed.is_empty() && seen.established_broken.is_empty(), "{from:?} -> {to:?}: {figures}\n{}\nnew mode's log:\n{log}", failures(&seen));
    assert_eq!(seen.established_ok, LONG_LIVED.iter().sum::<usize>(), "{figures}");
    let connections = if from == Mode::Ipvs { ipvs_vm::connections(node) } else { String::new() };
    assert!(left.is_empty(), "{from:?} mode's rules are still on the node after the switch: {left:#?}\n{connections}\n{log}");
    // The rate while the proxy was restarted: SIGTERM to the new mode's sync.
    let restarting = seen.attempted_at.iter().filter(|at| (term_at..=synced_at).contains(*at)).count();
    let rate = restarting as f64 / (synced_at - term_at);
    println!("  fresh connections at {rate:.0}/s from SIGTERM to the new mode's sync; clients stopped {:.1} s after SIGTERM", stopped_at - term_at);
    assert!(rate >= 100.0, "fresh connections at {rate:.0}/s (under 100/s) during the restart: {figures}");
    assert!(from != Mode::Ipvs || held > 0, "no IPVS connection was still open after the new mode's sync: the drain was not shown waiting\n{log}");
    drop(seen);
    proxy.stop();
}

/// When the clients' process was frozen (since SIGTERM), and how long.
fn freezes(freezes: &[(f64, f64)], term_at: f64) -> String {
    let each: Vec<String> = freezes.iter().map(|(at, gap)| format!("{:.3} s for {gap:.1} s", at - term_at)).collect();
    format!("clients frozen over {:.0?}: {}", traffic::FREEZE, if each.is_empty() { "never".to_string() } else { each.join(", ") })
}

/// The time of day (UTC, as the proxy's log prints it), to set the
/// test's events beside the log's.
fn wall_clock() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (secs, millis) = (since.as_secs() % 86_400, since.subsec_millis());
    format!("{:02}:{:02}:{:02}.{millis:03}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Packets the kernel dropped because a CPU's input backlog was full
/// (`/proc/net/softnet_stat`'s second column, all CPUs; the count is the
/// whole machine's, whatever the netns): a veth delivers through that
/// backlog, so when softirqs fall behind (emulated CPUs starved by the
/// host) segments are lost there and TCP retransmits them.
fn backlog_drops() -> u64 {
    let text = std::fs::read_to_string("/proc/net/softnet_stat").unwrap_or_default();
    text.lines().filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok()).sum()
}

/// Sets the clients' stop flag when dropped (a panic included).
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
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
        "new mode synced {:.3} s after SIGTERM; fresh connections: {attempts} attempted, {} failed [{}]; long-lived: {} kept, {} broken ({}); {}; {}",
        synced_at - term_at,
        seen.new_failed.len(),
        per_kind.join(", "),
        seen.established_ok,
        seen.established_broken.len(),
        window(&seen.established_broken),
        stalls(&seen.stalls, term_at),
        freezes(&seen.freezes, term_at)
    )
}

/// The late echoes of long-lived connections (intact, so not dropped):
/// how many, when (since SIGTERM), how long, and what TCP retransmitted.
fn stalls(stalls: &[traffic::Stall], term_at: f64) -> String {
    if stalls.is_empty() {
        return format!("no echo later than {:.0?}", traffic::STALL);
    }
    let each: Vec<String> = stalls
        .iter()
        .map(|s| format!("{} sent at {:.3} s, back after {:.1} s, {} retransmits", s.kind, s.at - term_at, s.lasted, s.retransmits))
        .collect();
    format!("{} echoes later than {:.0?}, all intact (not dropped): {}", stalls.len(), traffic::STALL, each.join("; "))
}

/// The first few failures of each kind, for the failure message.
fn failures(seen: &traffic::Seen) -> String {
    let mut text = String::new();
    for f in seen.new_failed.iter().take(5).chain(seen.established_broken.iter().take(5)) {
        text.push_str(&format!("  {:.3} s {}: {}\n", f.at, f.kind, f.what));
    }
    text
}

/// Both modes' rules loaded at once, as between the new mode's first sync
/// and the old mode's removal: the running mode `live` (state `New`: every
/// service to s2) and a stale `stale` mode's rules (state `Old`: s1, and
/// `sw/late` without endpoints) loaded from the binary's `--dry-run`, its
/// NAT hooks registered before or after `live`'s (those registered last
/// run first). Every fresh connection must reach an endpoint from the right
/// source address (DNAT and masquerade by one mode, or DNAT and mark by
/// one and masquerade by the other); which mode DNATed is reported. A
/// service the stale state has no endpoints for is reached from the node;
/// a LoadBalancer source the live state admits and the stale one does not
/// is dropped while a stale nftables table is there (its `firewall-check`
/// runs before DNAT: the one harm of the overlap, why the old rules go as
/// soon as the new mode has synced) and reached beside stale iptables rules.
#[test]
fn both_modes_loaded_each_connection_is_translated_by_one() {
    let mut report = Vec::new();
    for (live, stale) in [(Mode::Nftables, Mode::Iptables), (Mode::Iptables, Mode::Nftables)] {
        for stale_first in [true, false] {
            report.push(coexist(live, stale, stale_first));
        }
    }
    println!("[mode-switch] both loaded:\n{}", report.join("\n"));
}

/// One case of [`both_modes_loaded_each_connection_is_translated_by_one`]:
/// its summary line.
fn coexist(live: Mode, stale: Mode, stale_first: bool) -> String {
    let cluster = build_node(State::New);
    let node = cluster.node("node-a").unwrap().ns();
    let stop = serve(&cluster);
    let lock = tempfile::NamedTempFile::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let old_manifests = dir.path().join("old.yaml");
    std::fs::write(&old_manifests, manifests::manifests(State::Old, 0)).unwrap();
    // The live proxy removes the stale mode's rules after its first sync,
    // so they are loaded after it in either case; what differs is when the
    // stale mode's NAT hooks were registered. iptables-legacy registers
    // its nat table's hooks once, when the table is first used, and keeps
    // them; the stale nftables table is loaded under another name (the
    // live proxy removes `kube-proxy` only), created before or after.
    let stale_table = if stale_first { register_stale_hooks(node, stale, &old_manifests, lock.path()) } else { None };
    let mut proxy = start(&cluster, live, lock.path());
    proxy.wait_for(live.synced());
    if stale_table.is_none() {
        load_stale(node, stale, &old_manifests, lock.path());
    }
    let mut reached = std::collections::BTreeMap::<String, usize>::new();
    for (target, ns) in targets(&cluster) {
        for _ in 0..20 {
            let endpoint = traffic::probe(ns, target).unwrap_or_else(|e| {
                panic!("{live:?} live, stale {stale:?} loaded {}: {}: {e}\n{}", order(stale_first), target.kind, testkit::cluster::dump_rules(node))
            });
            let by = if endpoint == SERVERS[1].1.to_string() { "live" } else { "stale" };
            *reached.entry(format!("{} by {by}", target.kind)).or_default() += 1;
        }
    }
    // A service the stale state has no endpoints for, from the node itself.
    let late = Target { kind: "late", addr: SocketAddr::new(IpAddr::V4(LATE_IP), 80), peer: IpAddr::V4(cluster.node("node-a").unwrap().gateway()), from: None };
    let late = traffic::probe(node, late);
    assert!(late.is_ok(), "node -> a service the stale state has no endpoints for: {late:?}");
    // A LoadBalancer whose source ranges admit the client now, not in the
    // stale state: nftables mode's firewall-check runs before DNAT.
    let gateway = IpAddr::V4(cluster.node("node-a").unwrap().gateway());
    let lb = Target { kind: "LB", addr: SocketAddr::new(IpAddr::V4(LB_IP), 80), peer: gateway, from: None };
    let lb = traffic::probe(cluster.client().ns(), lb);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    proxy.stop();
    let summary = format!("  {live:?} live, stale {stale:?} loaded {}: {reached:?}; client -> LB it may use now: {lb:?}", order(stale_first));
    match stale {
        Mode::Nftables => assert!(lb.is_err(), "the stale nftables firewall no longer drops before DNAT: {summary}\n{}", testkit::cluster::dump_rules(node)),
        _ => assert!(lb.is_ok(), "a stale iptables firewall dropped what the live state allows: {summary}"),
    }
    summary
}

fn order(stale_first: bool) -> &'static str {
    if stale_first { "(its NAT hooks registered first)" } else { "(its NAT hooks registered last)" }
}

/// Registers the stale `mode`'s NAT hooks before the live proxy starts:
/// nftables mode's table loaded now (as `kube-proxy-stale`, which the live
/// proxy leaves alone: `Some`); iptables-legacy's nat table made to exist
/// now, its chains loaded later (`None`).
fn register_stale_hooks(node: &Netns, mode: Mode, manifests: &std::path::Path, lock: &std::path::Path) -> Option<()> {
    if mode == Mode::Nftables {
        load_stale(node, mode, manifests, lock);
        return Some(());
    }
    let mut list = node.command("iptables-legacy");
    list.args(["-w", "-t", "nat", "-S"]).env("XTABLES_LOCKFILE", lock);
    testkit::netns::run(&mut list).unwrap();
    None
}

/// Loads `mode`'s rules for `manifests` into node-a as a proxy that has
/// stopped would have left them (from the binary's `--dry-run`); nftables
/// mode's table as `ip kube-proxy-stale`.
fn load_stale(node: &Netns, mode: Mode, manifests: &std::path::Path, lock: &std::path::Path) {
    let out = node
        .command(proxy::BINARY)
        .args(mode.flags())
        .args(["--manifests", &manifests.display().to_string(), "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "--dry-run: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let text = text.replace("table ip kube-proxy {", "table ip kube-proxy-stale {");
    // The nfacct counter the dry run still names would need its object.
    let rules: Vec<&str> = text.lines().filter(|l| !l.contains("-m nfacct")).collect();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), rules.join("\n") + "\n").unwrap();
    let path = file.path().display().to_string();
    match mode {
        Mode::Nftables | Mode::NftablesUpstream => drop(node.exec("nft", &["-f", &path]).unwrap()),
        Mode::Ipvs => panic!("no stale IPVS rules from a dry run"),
        Mode::Iptables | Mode::IptablesNft => {
            let tool = if mode == Mode::Iptables { "iptables-legacy" } else { "iptables-nft" };
            let jumps = text.lines().filter_map(|l| l.strip_prefix("#   -t ")).filter(|l| !l.contains("KUBE-FIREWALL"));
            let script: Vec<String> = std::iter::once(format!("{tool}-restore -w --noflush {path}"))
                .chain(jumps.map(|jump| format!("{tool} -w -t {jump}")))
                .collect();
            let mut sh = node.command("sh");
            sh.args(["-ec", &script.join("\n")]).env("XTABLES_LOCKFILE", lock);
            testkit::netns::run(&mut sh).unwrap();
        }
    }
}

/// The masquerade mark set by one mode and acted on by the other: live
/// nftables mode, stale iptables rules (nft backend) whose `ip nat`
/// PREROUTING chain is registered after nftables mode's chains (so the
/// stale rules DNAT and set `0x4000`) but whose POSTROUTING chain existed
/// before (so nftables mode's `nat-postrouting` runs first there). NodePort
/// connections from outside must still reach the endpoint masqueraded,
/// and the stale `KUBE-POSTROUTING` masquerade rule must have counted none
/// of them.
#[test]
fn a_mark_set_by_iptables_is_masqueraded_by_nftables() {
    let cluster = build_node(State::New);
    let node = cluster.node("node-a").unwrap().ns();
    let stop = serve(&cluster);
    let lock = tempfile::NamedTempFile::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let old_manifests = dir.path().join("old.yaml");
    std::fs::write(&old_manifests, manifests::manifests(State::Old, 0)).unwrap();
    let mut early = node.command("iptables-nft");
    early.args(["-w", "-t", "nat", "-A", "POSTROUTING", "-s", "192.0.2.99/32", "-j", "RETURN"]).env("XTABLES_LOCKFILE", lock.path());
    testkit::netns::run(&mut early).unwrap();
    let mut proxy = start(&cluster, Mode::Nftables, lock.path());
    proxy.wait_for(Mode::Nftables.synced());
    // nftables mode removed iptables mode's chains, not the foreign rule.
    load_stale(node, Mode::IptablesNft, &old_manifests, lock.path());
    let [_, (nodeport, outside), _] = targets(&cluster);
    let reached: Vec<Result<String, String>> = (0..20).map(|_| traffic::probe(outside, nodeport)).collect();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    proxy.stop();
    let saved = node.exec("iptables-nft-save", &["-c", "-t", "nat"]).unwrap();
    let stale_endpoint = SERVERS[0].1.to_string();
    assert!(reached.iter().all(|r| r.as_ref() == Ok(&stale_endpoint)), "not all DNATed by the stale rules (and masqueraded): {reached:?}\n{saved}");
    let masquerade = saved.lines().find(|l| l.starts_with('[') && l.contains("-A KUBE-POSTROUTING") && l.contains("MASQUERADE"));
    assert!(masquerade.is_some_and(|l| l.starts_with("[0:0]")), "the stale masquerade rule counted packets: {masquerade:?}\n{saved}");
}
