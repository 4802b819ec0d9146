//! The reference comparison: render the upstream v1.36 corpus scenario
//! (`cluster.yaml` read by the manifests source and the tracker as node-a,
//! clusterCIDR 10.244.0.0/16, otherwise default options as in its
//! `kube-proxy-config.yaml`) and compare it, chain by
//! chain, with what upstream kube-proxy left in the kernel
//! (`iptables-save.txt`, `ip6tables-save.txt`). Our chains are compared as
//! sorted rule sets (upstream's order across services is random); the
//! built-in chains in exact order after applying our jumps as the applier
//! does (each inserted at the top).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plan::Options;
use iptables::Ruleset;
use iptables::render::{RenderOptions, Rendered, consistency_problems, render};
use model::IpFamily;
use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

const IPTABLES_SAVE: &str = include_str!("snapshots/upstream-v1.36/iptables-save.txt");
const IP6TABLES_SAVE: &str = include_str!("snapshots/upstream-v1.36/ip6tables-save.txt");
const CLUSTER_YAML: &str = include_str!("snapshots/upstream-v1.36/cluster.yaml");

/// Tables as `iptables-save` shows them: user chains, and each chain's
/// rules (the text after `-A CHAIN `) in order.
#[derive(Debug, Default, PartialEq)]
struct Dump {
    tables: BTreeMap<String, TableDump>,
}

#[derive(Debug, Default, PartialEq)]
struct TableDump {
    user_chains: BTreeSet<String>,
    rules: BTreeMap<String, Vec<String>>,
}

const BUILTIN_CHAINS: &[&str] = &["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];

/// Parses `iptables-save` output, ignoring comments, counters and
/// built-in chain policies.
fn parse_save(text: &str) -> Dump {
    let mut dump = Dump::default();
    let mut table = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('*') {
            table = name.to_string();
            dump.tables.entry(table.clone()).or_default();
        } else if let Some(decl) = line.strip_prefix(':') {
            let (chain, policy) = decl.split_once(' ').unwrap();
            if policy.starts_with('-') {
                dump.tables.get_mut(&table).unwrap().user_chains.insert(chain.to_string());
            }
        } else if let Some(rule) = line.strip_prefix("-A ") {
            add_rule(dump.tables.get_mut(&table).unwrap(), rule);
        }
    }
    dump
}

fn add_rule(table: &mut TableDump, rule: &str) {
    let (chain, rest) = rule.split_once(' ').unwrap_or((rule, ""));
    table.rules.entry(chain.to_string()).or_default().push(rest.to_string());
}

/// Our ruleset as it would look in `iptables-save` after a first sync
/// into empty tables.
fn our_dump(ruleset: &Ruleset) -> Dump {
    let mut dump = Dump::default();
    for (table, rules) in ruleset.tables() {
        let t = dump.tables.entry(table.to_string()).or_default();
        t.user_chains.extend(rules.chains.iter().cloned());
        for rule in &rules.rules {
            add_rule(t, &rule.to_string());
        }
    }
    for jump in &ruleset.builtin_jumps {
        let t = dump.tables.entry(jump.table.to_string()).or_default();
        let line = jump.rule_line();
        let (chain, rest) = line.split_once(' ').unwrap();
        // Prepended: the last jump applied ends up first.
        t.rules.entry(chain.to_string()).or_default().insert(0, rest.to_string());
    }
    dump
}

/// Every difference between the two dumps, one line each.
fn differences(ours: &Dump, theirs: &Dump) -> Vec<String> {
    let mut out = Vec::new();
    let tables: BTreeSet<&String> = ours.tables.keys().chain(theirs.tables.keys()).collect();
    let empty = TableDump::default();
    for table in tables {
        let (o, t) = (ours.tables.get(table).unwrap_or(&empty), theirs.tables.get(table).unwrap_or(&empty));
        for chain in o.user_chains.symmetric_difference(&t.user_chains) {
            let side = if o.user_chains.contains(chain) { "only ours" } else { "only upstream" };
            out.push(format!("{table}: chain {chain} declared {side}"));
        }
        let chains: BTreeSet<&String> = o.rules.keys().chain(t.rules.keys()).collect();
        for chain in chains {
            out.extend(chain_differences(table, chain, o.rules.get(chain), t.rules.get(chain)));
        }
    }
    out
}

/// Built-in chains must match in order; ours as sorted sets.
fn chain_differences(table: &str, chain: &str, ours: Option<&Vec<String>>, theirs: Option<&Vec<String>>) -> Vec<String> {
    let (mut o, mut t) = (ours.cloned().unwrap_or_default(), theirs.cloned().unwrap_or_default());
    if BUILTIN_CHAINS.contains(&chain) {
        return if o == t { vec![] } else { vec![format!("{table} {chain}: order differs:\n  ours {o:#?}\n  upstream {t:#?}")] };
    }
    o.sort();
    t.sort();
    let mut out = Vec::new();
    for rule in o.iter().filter(|r| !t.contains(r)) {
        out.push(format!("{table} {chain}: only ours:     -A {chain} {rule}"));
    }
    for rule in t.iter().filter(|r| !o.contains(r)) {
        out.push(format!("{table} {chain}: only upstream: -A {chain} {rule}"));
    }
    out
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// `cluster.yaml` as the tracker hands it to the backend of `family` on
/// node-a.
fn reference_snapshot(family: IpFamily) -> Snapshot {
    let parsed = source::manifests::parse(CLUSTER_YAML).unwrap();
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let mut tracker = tracker::Tracker::with_family("node-a", family);
    let warnings = tracker.replace_all(&parsed.objects);
    assert!(warnings.is_empty(), "{warnings:?}");
    tracker.snapshot().0
}

/// The scenario table of the corpus README, written out by hand (headless,
/// ExternalName and service-proxy-name services left out, as the tracker
/// drops them): a cross-check of the parsed input.
fn hand_built_snapshot() -> Snapshot {
    let mut snap = Snapshot {
        node: NodeInfo {
            name: "node-a".into(),
            addresses: vec![ip("192.168.86.2")],
            pod_cidrs: vec!["10.244.0.0/24".parse().unwrap()],
            deleting: false,
        },
        ..Snapshot::default()
    };
    for (port, endpoints) in reference_services() {
        if !endpoints.is_empty() {
            snap.endpoints.insert(port.name.clone(), Arc::new(endpoints));
        }
        snap.services.insert(port.name.clone(), Arc::new(port));
    }
    snap
}

/// A service port `ns/name:port_name` (TCP) at `cluster_ip:port`.
fn port(ns: &str, name: &str, port_name: &str, cluster_ip: &str, port: u16) -> ServicePort {
    ServicePort::cluster_ip(ServicePortName::new(ns, name, port_name, Protocol::Tcp), ip(cluster_ip), port)
}

/// Endpoints `ip@n[cond]` on `target`, on node-`n` (`-`: no node name);
/// `cond`: `!` not ready, `~` terminating and serving, `x` terminating and
/// not serving.
fn eps(target: u16, specs: &[&str]) -> Vec<Endpoint> {
    let mut out: Vec<Endpoint> = specs.iter().map(|s| ep(target, s)).collect();
    out.sort();
    out
}

fn ep(target: u16, spec: &str) -> Endpoint {
    let (addr, rest) = spec.split_once('@').unwrap();
    let (node, cond) = rest.split_at(1);
    let node_name = (node != "-").then(|| format!("node-{node}"));
    let mut ep = Endpoint::ready(ip(addr), target, node_name.as_deref(), node == "a");
    match cond {
        "" => {}
        "!" => (ep.ready, ep.serving) = (false, false),
        "~" => (ep.ready, ep.terminating) = (false, true),
        "x" => (ep.ready, ep.serving, ep.terminating) = (false, false, true),
        other => panic!("bad condition {other}"),
    }
    ep
}

fn nodeport(mut p: ServicePort, node_port: u16, etp_local: bool) -> ServicePort {
    p.node_port = Some(node_port);
    p.external_policy_local = etp_local;
    p
}

fn lb(mut p: ServicePort, ips: &[&str], health_check: Option<u16>) -> ServicePort {
    p.load_balancer_ips = ips.iter().map(|s| ip(s)).collect();
    p.health_check_node_port = health_check;
    p
}

fn reference_services() -> Vec<(ServicePort, Vec<Endpoint>)> {
    let mut cart = port("storefront", "cart", "grpc", "10.96.10.20", 7000);
    cart.session_affinity_seconds = Some(600);
    let mut frontend = lb(nodeport(port("storefront", "frontend", "https", "10.96.10.60", 443), 31443, false), &["192.0.2.10", "192.0.2.11"], None);
    frontend.load_balancer_source_ranges = vec!["172.20.0.0/28".parse().unwrap(), "192.168.86.0/24".parse().unwrap()];
    let mut legacy = port("storefront", "legacy", "http", "10.96.10.80", 8000);
    legacy.external_ips = vec![ip("192.0.2.50")];
    let mut metrics = port("ops", "node-metrics", "metrics", "10.96.10.110", 9100);
    metrics.internal_policy_local = true;
    let mut audit = port("ops", "audit", "http", "10.96.10.111", 80);
    audit.internal_policy_local = true;
    let mut dns = port("kube-system", "cluster-dns", "dns", "10.96.10.120", 53);
    dns.name.protocol = Protocol::Udp;
    vec![
        (port("default", "kubernetes", "https", "10.96.0.1", 443), eps(6443, &["192.168.77.1@-"])),
        (port("storefront", "web", "http", "10.96.10.10", 80), eps(8080, &["10.244.0.11@a", "10.244.1.11@b", "10.244.2.11@c"])),
        (cart, eps(7000, &["10.244.0.12@a", "10.244.1.12@b", "10.244.2.12@c"])),
        (nodeport(port("storefront", "catalog", "http", "10.96.10.30", 80), 30080, false), eps(8080, &["10.244.1.13@b", "10.244.2.13@c"])),
        (nodeport(port("storefront", "checkout", "https", "10.96.10.40", 443), 30443, true), eps(8443, &["10.244.0.14@a", "10.244.1.14@b"])),
        (nodeport(port("storefront", "inventory", "http", "10.96.10.51", 8080), 30808, true), eps(8080, &["10.244.1.15@b", "10.244.2.15@c"])),
        (lb(nodeport(port("storefront", "search", "http", "10.96.10.52", 9200), 31920, true), &["192.0.2.52"], Some(32052)), eps(9200, &["10.244.1.16@b", "10.244.2.16@c"])),
        (frontend, eps(8443, &["10.244.0.17@a", "10.244.2.17@c"])),
        (lb(nodeport(port("storefront", "api", "http", "10.96.10.70", 80), 30700, true), &["192.0.2.20"], Some(32070)), eps(8080, &["10.244.0.18@a", "10.244.0.19@a", "10.244.1.18@b"])),
        (legacy, eps(8000, &["10.244.1.20@b", "10.244.2.20@c"])),
        (nodeport(port("storefront", "coming-soon", "http", "10.96.10.90", 80), 30090, false), vec![]),
        (metrics, eps(9100, &["10.244.0.22@a", "10.244.1.22@b", "10.244.2.22@c"])),
        (audit, eps(8080, &["10.244.1.23@b", "10.244.2.23@c"])),
        (dns, eps(5353, &["10.244.0.24@a", "10.244.2.24@c"])),
        (port("kube-system", "cluster-dns", "dns-tcp", "10.96.10.120", 53), eps(5353, &["10.244.0.24@a", "10.244.2.24@c"])),
        (port("storefront", "shop", "http", "10.96.10.121", 80), eps(8080, &["10.244.1.25@b", "10.244.2.25@c"])),
        (port("storefront", "shop", "https", "10.96.10.121", 443), eps(8443, &["10.244.1.25@b", "10.244.2.25@c"])),
        (port("storefront", "old-release", "http", "10.96.10.130", 80), eps(8080, &["10.244.0.26@a~", "10.244.1.26@b~", "10.244.2.26@cx"])),
        (port("storefront", "reviews", "http", "10.96.10.160", 80), eps(8080, &["10.244.0.28@a", "10.244.1.28@b!"])),
        (lb(nodeport(port("storefront", "gateway", "http", "10.96.10.170", 80), 30170, true), &["192.0.2.30"], Some(32170)), eps(8080, &["10.244.0.29@a~", "10.244.2.29@c"])),
    ]
}

/// The corpus's kube-proxy configuration for `family` (its IPv4-only
/// clusterCIDR leaves the IPv6 proxier without local-traffic detection).
fn reference_options(family: IpFamily) -> RenderOptions {
    let common = Options { family, ..Options::with_cluster_cidr("10.244.0.0/16".parse().unwrap()) };
    RenderOptions { common, ..RenderOptions::default() }
}

fn render_reference(family: IpFamily) -> Rendered {
    let rendered = render(&reference_snapshot(family), &reference_options(family));
    let problems = consistency_problems(&rendered.ruleset);
    assert!(problems.is_empty(), "inconsistent:\n{}", problems.join("\n"));
    rendered
}

#[test]
fn parsed_input_is_the_readme_scenario() {
    let (parsed, hand) = (reference_snapshot(IpFamily::V4), hand_built_snapshot());
    assert_eq!(parsed.node.addresses, hand.node.addresses);
    assert_eq!(parsed.services.keys().collect::<Vec<_>>(), hand.services.keys().collect::<Vec<_>>());
    for (name, svc) in &hand.services {
        assert_eq!(**svc, *parsed.services[name], "{name}");
        let (mut ours, theirs) = (parsed.endpoints_of(name).to_vec(), hand.endpoints_of(name));
        ours.sort();
        assert_eq!(ours, theirs, "{name}");
    }
    // Rendering the hand-built table gives the same rules too.
    let opts = reference_options(IpFamily::V4);
    assert_eq!(render(&hand, &opts), render(&parsed, &opts));
}

#[test]
fn ipv4_rules_match_upstream_dump_chain_by_chain() {
    let rendered = render_reference(IpFamily::V4);
    let diff = differences(&our_dump(&rendered.ruleset), &parse_save(IPTABLES_SAVE));
    assert!(diff.is_empty(), "{} differences from upstream:\n{}", diff.len(), diff.join("\n"));
}

#[test]
fn ipv6_rules_match_upstream_dump_chain_by_chain() {
    let rendered = render_reference(IpFamily::V6);
    let diff = differences(&our_dump(&rendered.ruleset), &parse_save(IP6TABLES_SAVE));
    assert!(diff.is_empty(), "{} differences from upstream:\n{}", diff.len(), diff.join("\n"));
}

#[test]
fn metrics_match_upstream() {
    // kubeproxy_sync_proxy_rules_iptables_total and
    // kubeproxy_sync_proxy_rules_no_local_endpoints_total from the corpus.
    let v4 = render_reference(IpFamily::V4);
    assert_eq!(v4.ruleset.rule_count(iptables::Table::Filter), 15);
    assert_eq!(v4.ruleset.rule_count(iptables::Table::Nat), 204);
    assert_eq!((v4.no_local_endpoints.internal, v4.no_local_endpoints.external), (1, 2));
    let v6 = render_reference(IpFamily::V6);
    assert_eq!(v6.ruleset.rule_count(iptables::Table::Filter), 3);
    assert_eq!(v6.ruleset.rule_count(iptables::Table::Nat), 5);
    assert_eq!((v6.no_local_endpoints.internal, v6.no_local_endpoints.external), (0, 0));
}

#[test]
fn the_comparison_notices_a_changed_rule() {
    // Guard against a comparison that passes vacuously.
    let mut rendered = render_reference(IpFamily::V4);
    let rule = rendered.ruleset.nat.rules.iter_mut().find(|r| r.matches().contains("0.33333333349")).unwrap();
    let matches = rule.matches().trim_start().replace("0.33333333349", "0.33333333333");
    *rule = xtables::Rule::new(rule.chain()).matching(&matches).target(rule.target()).build();
    let diff = differences(&our_dump(&rendered.ruleset), &parse_save(IPTABLES_SAVE));
    assert_eq!(diff.len(), 2, "{diff:#?}");
}

#[test]
fn the_comparison_covers_every_upstream_rule() {
    let theirs = parse_save(IPTABLES_SAVE);
    let rules: usize = theirs.tables.values().flat_map(|t| t.rules.values()).map(Vec::len).sum();
    let chains: usize = theirs.tables.values().map(|t| t.user_chains.len()).sum();
    // 15 filter + 204 nat rules of ours and 14 built-in jumps; 7 filter,
    // 1 mangle and 71 nat chains.
    assert_eq!((rules, chains), (15 + 204 + 14, 7 + 1 + 71));
}

/// Runs `program args` in `ns` with `stdin`; panics with its stderr on failure.
fn run_with_stdin(ns: &testkit::netns::Netns, program: &str, args: &[&str], stdin: &str) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = ns
        .command(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{program} {args:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Applies `ruleset` to the empty tables of a fresh namespace as the
/// applier does (restore, then prepend the built-in jumps) and returns
/// `iptables-save`.
fn apply_in_fresh_netns(ruleset: &Ruleset, family: IpFamily) -> String {
    let ns = testkit::netns::Netns::new("render").unwrap();
    let (restore, iptables, save) = match family {
        IpFamily::V4 => ("iptables-legacy-restore", "iptables-legacy", "iptables-legacy-save"),
        IpFamily::V6 => ("ip6tables-legacy-restore", "ip6tables-legacy", "ip6tables-legacy-save"),
    };
    run_with_stdin(&ns, restore, &["--noflush"], &ruleset.to_restore());
    for jump in &ruleset.builtin_jumps {
        let mut args = vec!["-w", "-t", jump.table.as_str(), "-I", jump.chain];
        args.extend(jump.args.iter().map(String::as_str));
        ns.exec(iptables, &args).unwrap();
    }
    ns.exec(save, &[]).unwrap()
}

#[test]
fn kernel_accepts_reference_rules_with_nfacct_in_test_mode() {
    testkit::netns::require_kernel();
    let ns = testkit::netns::Netns::new("rtest").unwrap();
    let rendered = render_reference(IpFamily::V4);
    assert!(rendered.ruleset.to_restore().contains("--nfacct-name  localhost_nps_accepted_pkts"));
    run_with_stdin(&ns, "iptables-legacy-restore", &["--test", "--noflush"], &rendered.ruleset.to_restore());
    // Test mode does check what it is given: a broken variant fails.
    let broken = rendered.ruleset.to_restore().replace("-m statistic --mode random", "-m statistic --mode nonsense");
    let result = std::panic::catch_unwind(|| {
        run_with_stdin(&ns, "iptables-legacy-restore", &["--test", "--noflush"], &broken);
    });
    assert!(result.is_err(), "iptables-restore --test accepted a bad statistic mode");
}

#[test]
fn kernel_round_trip_of_reference_rules_is_byte_identical() {
    testkit::netns::require_kernel();
    for family in [IpFamily::V4, IpFamily::V6] {
        // A real commit needs the nfacct objects, which only the applier
        // creates: apply the nfacct-free variant.
        let opts = RenderOptions { nfacct: false, ..reference_options(family) };
        let rendered = render(&reference_snapshot(family), &opts);
        let saved = parse_save(&apply_in_fresh_netns(&rendered.ruleset, family));
        let ours = our_dump(&rendered.ruleset);
        // Every chain in the order we wrote it, not just as a set.
        assert_eq!(ours.tables.keys().collect::<Vec<_>>(), saved.tables.keys().collect::<Vec<_>>());
        for (table, t) in &ours.tables {
            assert_eq!(t.user_chains, saved.tables[table].user_chains, "{family:?} {table}");
            assert_eq!(t.rules, saved.tables[table].rules, "{family:?} {table}");
        }
    }
}

/// Our ruleset as `iptables-save` would print it after a first sync into
/// empty tables (built-in jumps in their final order).
fn to_save_text(ruleset: &Ruleset) -> String {
    let mut out = String::new();
    for (table, dump) in &our_dump(ruleset).tables {
        out.push_str(&format!("*{table}\n"));
        for chain in &dump.user_chains {
            out.push_str(&format!(":{chain} - [0:0]\n"));
        }
        for (chain, rules) in &dump.rules {
            rules.iter().for_each(|rule| out.push_str(&format!("-A {chain} {rule}\n")));
        }
        out.push_str("COMMIT\n");
    }
    out
}

#[test]
fn every_reference_flow_gets_upstreams_verdict_through_our_rules() {
    use testkit::flows;
    use testkit::tracer::{describe_outcomes, parse_rules, trace};
    let rules = parse_rules(&to_save_text(&render_reference(IpFamily::V4).ruleset)).unwrap();
    let ctx = flows::node_a();
    let cases = flows::iptables_flows().unwrap();
    assert!(cases.len() >= 64, "the corpus has 64 flows");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let verdict = trace(&rules, &ctx, &case.packet()).unwrap();
            let expected = case.expected_outcomes();
            (verdict.outcomes != expected).then(|| {
                format!("{}\n  expected {}\n  traced   {}", case.label(), describe_outcomes(&expected), verdict.describe())
            })
        })
        .collect();
    assert!(failures.is_empty(), "{} of {} flows differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
