//! Our renderer through the tracer: the reference cluster (`cluster.yaml`)
//! read by our manifests source, turned into a snapshot by our tracker
//! for node-a, rendered by our iptables renderer with the corpus's
//! configuration, and traced. Every reference flow must get upstream's
//! observed verdict, and on a grid of several thousand packets beyond the
//! flow table our rules must behave exactly like upstream's dump.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plan::Options;
use iptables::Ruleset;
use iptables::render::{RenderOptions, consistency_problems, render};
use ipnet::IpNet;
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use testkit::flows::{self, POD_CIDR};
use testkit::tracer::{Match, Outcome, Packet, Protocol, Rules, Side, Target, describe_outcomes, parse_rules, trace};
use tracker::Tracker;

/// The reference cluster rendered for node-a with the corpus's
/// `kube-proxy-config.yaml` (clusterCIDR 10.244.0.0/16, the rest default).
fn our_ruleset() -> Ruleset {
    let parsed = source::manifests::parse(&flows::read_reference("cluster.yaml").unwrap()).unwrap();
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let mut tracker = Tracker::new("node-a");
    tracker.replace_all(&parsed.objects);
    let (snapshot, _) = tracker.snapshot();
    let opts = RenderOptions { common: Options::with_cluster_cidr(IpNet::V4(POD_CIDR)), ..RenderOptions::default() };
    let ruleset = render(&snapshot, &opts).ruleset;
    let problems = consistency_problems(&ruleset);
    assert!(problems.is_empty(), "{problems:?}");
    ruleset
}

/// What the tables hold after our first sync into empty tables: the
/// restore input, then each built-in jump as the applier ensures it
/// (`-I` at the top or `-A`), in order.
fn restore_text(ruleset: &Ruleset) -> String {
    let mut text = ruleset.to_restore();
    for jump in &ruleset.builtin_jumps {
        let command = if jump.prepend { "-I" } else { "-A" };
        text.push_str(&format!("*{}\n{command} {}\nCOMMIT\n", jump.table, jump.rule_line()));
    }
    text
}

fn our_rules() -> Rules {
    parse_rules(&restore_text(&our_ruleset())).unwrap()
}

fn upstream_rules() -> Rules {
    parse_rules(&flows::read_reference("iptables/iptables-save.txt").unwrap()).unwrap()
}

#[test]
fn every_reference_flow_gets_upstreams_verdict_through_our_rules() {
    let rules = our_rules();
    let ctx = flows::node_a();
    let cases = flows::iptables_flows().unwrap();
    assert_eq!(cases.len(), 64);
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

/// Every /32 destination, destination port and node-a endpoint address
/// upstream's rules mention, plus node-a's own addresses.
fn grid_axes(upstream: &Rules) -> (BTreeSet<IpAddr>, BTreeSet<u16>, BTreeSet<IpAddr>) {
    let mut destinations: BTreeSet<IpAddr> = flows::NODE_A_ADDRESSES.iter().map(|a| IpAddr::V4(*a)).collect();
    let mut ports = BTreeSet::new();
    let mut local_endpoints = BTreeSet::new();
    let node_a_pods: IpNet = "10.244.0.0/24".parse().unwrap();
    for table in upstream.tables.values() {
        for rule in table.chains.values().flat_map(|c| &c.rules) {
            for m in &rule.matches {
                match m {
                    Match::Destination { net, .. } if net.prefix_len() == 32 => {
                        destinations.insert(net.addr());
                    }
                    Match::Port { side: Side::Dst, first, .. } => {
                        ports.extend([*first, first.wrapping_add(1)]);
                    }
                    _ => {}
                }
            }
            if let Target::Dnat { to, .. } = rule.target
                && node_a_pods.contains(&to)
            {
                local_endpoints.insert(to);
            }
        }
    }
    (destinations, ports, local_endpoints)
}

#[test]
fn our_rules_behave_like_upstreams_on_a_packet_grid() {
    let (ours, upstream) = (our_rules(), upstream_rules());
    let ctx = flows::node_a();
    let (destinations, ports, local_endpoints) = grid_axes(&upstream);
    let mut sources: Vec<(bool, IpAddr)> = vec![
        (true, flows::NODE_A_IP.into()),
        (false, "10.244.0.200".parse().unwrap()),
        (false, flows::EXTERNAL_CLIENTS[0].into()),
        (false, flows::EXTERNAL_CLIENTS[1].into()),
    ];
    sources.extend(local_endpoints.iter().map(|ip| (false, *ip)));
    let mut differences = Vec::new();
    let mut traced = 0;
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for &(local, source) in &sources {
        for destination in &destinations {
            for port in &ports {
                for protocol in [Protocol::Tcp, Protocol::Udp] {
                    let to = SocketAddr::new(*destination, *port);
                    let source = if local && destination.is_loopback() { "127.0.0.1".parse().unwrap() } else { source };
                    let packet = if local { Packet::local(protocol, source, to) } else { Packet::inbound(protocol, source, to) };
                    let (a, b) = (trace(&ours, &ctx, &packet).unwrap(), trace(&upstream, &ctx, &packet).unwrap());
                    traced += 1;
                    for outcome in &b.outcomes {
                        *kinds.entry(outcome_kind(outcome)).or_default() += 1;
                    }
                    if a.outcomes != b.outcomes {
                        differences.push(format!(
                            "{packet:?}\n  ours     {}\n  upstream {}",
                            describe_outcomes(&a.outcomes),
                            describe_outcomes(&b.outcomes)
                        ));
                    }
                }
            }
        }
    }
    println!("{traced} packets; upstream outcomes by kind: {kinds:?}");
    assert!(traced > 5000, "only {traced} packets");
    for kind in ["dnat", "dnat+masq", "accept", "local", "drop", "reject"] {
        assert!(kinds.get(kind).copied().unwrap_or(0) > 0, "the grid never reaches {kind}: {kinds:?}");
    }
    assert!(differences.is_empty(), "{} of {traced} packets differ:\n{}", differences.len(), differences.join("\n"));
}

fn outcome_kind(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Dnat { masquerade: false, .. } => "dnat",
        Outcome::Dnat { masquerade: true, .. } => "dnat+masq",
        Outcome::Accept { .. } => "accept",
        Outcome::Local => "local",
        Outcome::Drop => "drop",
        Outcome::Reject => "reject",
    }
}
