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
use model::Snapshot;
use std::collections::{BTreeMap, BTreeSet};

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

/// The scenario table of the corpus README, written out by hand: a
/// cross-check of the parsed input.
fn hand_built_snapshot() -> Snapshot {
    testkit::reference_scenario::snapshot()
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
