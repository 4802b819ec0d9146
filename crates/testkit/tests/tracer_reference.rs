//! The tracer against upstream kube-proxy v1.36's own rules: every flow of
//! the reference table, traced through upstream's `iptables-save.txt` on
//! node-a, must give exactly the verdict upstream was observed to give.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use testkit::flows::{self, Expected, FlowCase, FlowSource, Masquerade, RuleHit};
use testkit::tracer::{Outcome, Rules, describe_outcomes, parse_rules, trace};

fn upstream_rules() -> Rules {
    parse_rules(&flows::read_reference("iptables/iptables-save.txt").unwrap()).unwrap()
}

fn cases() -> Vec<FlowCase> {
    flows::iptables_flows().unwrap()
}

/// Collapses whitespace runs so `iptables-save`'s double spaces compare equal.
fn normalize(rule: &str) -> String {
    rule.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Each mismatch between the tracer and upstream's verdict, described.
fn mismatches(rules: &Rules, cases: &[FlowCase]) -> Vec<String> {
    let ctx = flows::node_a();
    cases
        .iter()
        .filter_map(|case| {
            let verdict = trace(rules, &ctx, &case.packet()).unwrap();
            let expected = case.expected_outcomes();
            (verdict.outcomes != expected).then(|| {
                format!("{}\n  expected {}\n  traced   {}", case.label(), describe_outcomes(&expected), verdict.describe())
            })
        })
        .collect()
}

#[test]
fn every_reference_flow_gets_upstreams_verdict() {
    let cases = cases();
    assert_eq!(cases.len(), 64, "flows.json has 64 flows");
    let failures = mismatches(&upstream_rules(), &cases);
    assert!(failures.is_empty(), "{} of {} flows differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn every_rule_the_kernel_counted_is_on_a_traced_path() {
    let rules = upstream_rules();
    let ctx = flows::node_a();
    let mut missing = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let traced: BTreeSet<(String, String, String)> = trace(&rules, &ctx, &case.packet())
            .unwrap()
            .matched_rules()
            .into_iter()
            .map(|(table, chain, spec)| (table, chain, normalize(&spec)))
            .collect();
        // The tracer follows a connection's first packet; the conntrack
        // rule counts only the packets after it. The KUBE-POSTROUTING
        // RETURN also counts node-a's own new connections (kube-proxy to
        // the apiserver): F24 shows it once while its 6 SYNs were dropped
        // in FORWARD. (The converse test below still checks it.)
        let later_packets_only = |hit: &&RuleHit| hit.rule.contains("--ctstate RELATED,ESTABLISHED -j ACCEPT");
        let background_too = |hit: &&RuleHit| hit.chain == "KUBE-POSTROUTING" && hit.rule.ends_with("-j RETURN");
        let first_packet_hits = case.rule_hits.iter().filter(|hit| !later_packets_only(hit) && !background_too(hit));
        for hit in first_packet_hits {
            checked += 1;
            if !traced.contains(&(hit.table.clone(), hit.chain.clone(), normalize(&hit.rule))) {
                missing.push(format!("{}: {} {} {}", case.label(), hit.table, hit.chain, hit.rule));
            }
        }
    }
    assert!(checked > 300, "only {checked} counted rules");
    assert!(missing.is_empty(), "counted by the kernel but not traced:\n{}", missing.join("\n"));
}

#[test]
fn traced_kube_rules_of_non_sticky_flows_were_all_counted() {
    let rules = upstream_rules();
    let ctx = flows::node_a();
    let mut extra = Vec::new();
    for case in cases().iter().filter(|c| !matches!(c.expected, Expected::Dnat { sticky: true, .. })) {
        let counted: BTreeSet<(String, String, String)> =
            case.rule_hits.iter().map(|h| (h.table.clone(), h.chain.clone(), normalize(&h.rule))).collect();
        let verdict = trace(&rules, &ctx, &case.packet()).unwrap();
        for (table, chain, spec) in verdict.matched_rules() {
            let key = (table, chain, normalize(&spec));
            if key.1.starts_with("KUBE-") && !counted.contains(&key) {
                extra.push(format!("{}: {} {} {}", case.label(), key.0, key.1, key.2));
            }
        }
    }
    assert!(extra.is_empty(), "traced but never counted by the kernel:\n{}", extra.join("\n"));
}

#[test]
fn flow_table_agrees_with_what_the_probes_saw() {
    for case in cases() {
        let seen = &case.observed;
        let source = case.source();
        match &case.expected {
            Expected::Dnat { endpoints, masquerade, sticky } => {
                let answered: BTreeSet<_> = seen.answered.keys().copied().collect();
                assert!(seen.failures.is_empty(), "{}: failures {:?}", case.label(), seen.failures);
                if seen.connected_only > 0 {
                    assert!(answered.is_empty() && endpoints.len() == 1, "{}", case.label());
                    continue;
                }
                if *sticky {
                    assert_eq!(answered.len(), 1, "{}: sticky flow answered by {answered:?}", case.label());
                    assert!(answered.is_subset(endpoints), "{}", case.label());
                } else {
                    assert_eq!(&answered, endpoints, "{}", case.label());
                }
                for (ep, peers) in &seen.peers {
                    let masqueraded = match masquerade {
                        Masquerade::Yes => true,
                        Masquerade::No => false,
                        Masquerade::OnlyHairpin => ep.ip() == source,
                    };
                    let saw_client = peers.contains(&source);
                    assert_eq!(saw_client, !masqueraded, "{}: {ep} saw {peers:?}", case.label());
                }
            }
            Expected::Drop | Expected::NoRule => {
                assert_eq!(seen.failures.keys().collect::<Vec<_>>(), ["timeout"], "{}", case.label());
            }
            Expected::Reject => {
                assert_eq!(seen.failures.keys().collect::<Vec<_>>(), ["ECONNREFUSED"], "{}", case.label());
            }
            Expected::DeliveredLocally => panic!("{}: iptables mode delivered locally", case.label()),
        }
    }
}

#[test]
fn flow_table_covers_every_kind_of_source_and_verdict() {
    let cases = cases();
    let has = |f: &dyn Fn(&FlowCase) -> bool| cases.iter().any(f);
    assert!(has(&|c| matches!(c.from, FlowSource::Pod(_))));
    assert!(has(&|c| matches!(c.from, FlowSource::Node)));
    assert!(has(&|c| matches!(c.from, FlowSource::External(_))));
    assert!(has(&|c| matches!(c.from, FlowSource::Endpoint(_))));
    assert!(has(&|c| c.destination.ip().is_loopback()));
    for outcome in [Outcome::Drop, Outcome::Reject, Outcome::Accept { masquerade: false }] {
        assert!(has(&|c| c.expected_outcomes().contains(&outcome)), "no flow expects {outcome}");
    }
    assert!(has(&|c| c.expected_outcomes().iter().any(|o| matches!(o, Outcome::Dnat { masquerade: true, .. }))));
    assert!(has(&|c| c.expected_outcomes().iter().any(|o| matches!(o, Outcome::Dnat { masquerade: false, .. }))));
}

/// The tracer notices when a rule that matters is missing: each mutation
/// of upstream's rules changes exactly the flows it should.
#[test]
fn removing_a_rule_changes_the_flows_that_depend_on_it() {
    let text = flows::read_reference("iptables/iptables-save.txt").unwrap();
    let cases = cases();
    let failing_ids = |mutated: &str| -> BTreeSet<String> {
        let rules = parse_rules(mutated).unwrap();
        mismatches(&rules, &cases).iter().map(|m| m[..3].to_string()).collect()
    };
    let without = |needle: &str| -> String {
        let kept: Vec<&str> = text.lines().filter(|line| !line.contains(needle)).collect();
        assert!(kept.len() < text.lines().count(), "no line contains {needle}");
        kept.join("\n")
    };
    // Hairpin masquerade of storefront/web's node-a endpoint.
    let ids = failing_ids(&without("-A KUBE-SEP-5DB5Q4MAEB5CN3YE -s 10.244.0.11/32"));
    assert_eq!(ids, BTreeSet::from(["F04".to_string()]));
    // loadBalancerSourceRanges enforcement: the filter drop after the nat
    // FW chain fell through.
    let ids = failing_ids(&without("traffic not accepted by KUBE-FW-FTXS5K5EWXMOMKR3\" -m tcp --dport 443 -j DROP"));
    assert_eq!(ids, BTreeSet::from(["F31".to_string(), "F33".to_string()]));
    // The masquerade itself: nothing is masqueraded any more.
    let ids = failing_ids(&without("-j MASQUERADE --random-fully"));
    let masqueraded: BTreeSet<String> = cases
        .iter()
        .filter(|c| c.expected_outcomes().iter().any(|o| matches!(o, Outcome::Dnat { masquerade: true, .. })))
        .map(|c| c.id.clone())
        .collect();
    assert!(masqueraded.len() > 20);
    assert_eq!(ids, masqueraded);
}

#[test]
fn nftables_flow_table_loads_with_its_own_verdict_kinds() {
    let cases = flows::nftables_flows().unwrap();
    assert_eq!(cases.len(), 64);
    let by_id = |id: &str| cases.iter().find(|c| c.id == id).unwrap();
    assert_eq!(by_id("F05").expected, Expected::Reject, "nftables rejects unknown ClusterIP ports");
    assert_eq!(by_id("F10").expected, Expected::DeliveredLocally, "nftables nodeports answer on the primary IP only");
    assert_eq!(by_id("F10").expected_outcomes(), BTreeSet::from([Outcome::Local]));
    assert!(cases.iter().all(|c| c.rule_hits.is_empty()), "nftables flows carry nft traces, not iptables counters");
}

#[test]
fn tracing_the_whole_table_is_fast() {
    let text = flows::read_reference("iptables/iptables-save.txt").unwrap();
    let cases = cases();
    let start = std::time::Instant::now();
    let rules = parse_rules(&text).unwrap();
    let parsed = start.elapsed();
    let ctx = flows::node_a();
    let paths: usize = cases.iter().map(|c| trace(&rules, &ctx, &c.packet()).unwrap().paths.len()).sum();
    let total = start.elapsed();
    println!("parse {parsed:?}, parse + {} flows ({paths} paths) {total:?}", cases.len());
    assert!(total < std::time::Duration::from_secs(5), "{total:?}");
}
