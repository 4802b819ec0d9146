//! Each target the tracer models: jumps and gotos, RETURN, the verdicts,
//! NAT and MARK, and built-in chain policies.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use testkit::tracer::{MarkOp, Outcome, Packet, Protocol, Step, Target, TraceContext, TraceError, parse_rules, trace};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn node() -> TraceContext {
    TraceContext::new([ip("192.168.0.2")])
}

fn inbound() -> Packet {
    Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("172.30.0.1:80"))
}

fn dnat(to: &str, masquerade: bool) -> Outcome {
    Outcome::Dnat { to: addr(to), masquerade }
}

/// Outcomes of the inbound packet through `text`.
fn outcomes(text: &str) -> BTreeSet<Outcome> {
    trace(&parse_rules(text).unwrap(), &node(), &inbound()).unwrap().outcomes
}

fn nat(body: &str) -> String {
    format!("*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n{body}COMMIT\n")
}

#[test]
fn jump_comes_back_after_the_callee_falls_off_its_end() {
    let text = nat("-A PREROUTING -j A\n-A PREROUTING -j DNAT --to-destination 10.0.0.2:80\n-A A -s 10.9.0.0/16 -j DNAT --to-destination 10.0.0.1:80\n");
    assert_eq!(outcomes(&text), BTreeSet::from([dnat("10.0.0.2:80", false)]));
}

#[test]
fn return_leaves_the_chain_early() {
    let text = nat(
        "-A PREROUTING -j A\n-A PREROUTING -j DNAT --to-destination 10.0.0.2:80\n\
         -A A -j RETURN\n-A A -j DNAT --to-destination 10.0.0.1:80\n",
    );
    assert_eq!(outcomes(&text), BTreeSet::from([dnat("10.0.0.2:80", false)]));
}

#[test]
fn goto_returns_to_the_callers_caller() {
    // PREROUTING -j A; A -g B; B falls off -> back to PREROUTING, skipping
    // the rest of A.
    let text = nat(
        "-A PREROUTING -j A\n-A PREROUTING -j DNAT --to-destination 10.0.0.3:80\n\
         -A A -g B\n-A A -j DNAT --to-destination 10.0.0.1:80\n-A B -s 10.9.0.0/16 -j ACCEPT\n",
    );
    assert_eq!(outcomes(&text), BTreeSet::from([dnat("10.0.0.3:80", false)]));
    let jump = text.replace("-A A -g B", "-A A -j B");
    assert_eq!(outcomes(&jump), BTreeSet::from([dnat("10.0.0.1:80", false)]), "with -j the rest of A runs");
}

#[test]
fn accept_ends_the_table_for_this_hook_from_any_depth() {
    let text = nat("-A PREROUTING -j A\n-A PREROUTING -j DNAT --to-destination 10.0.0.2:80\n-A A -j ACCEPT\n");
    assert_eq!(outcomes(&text), BTreeSet::from([Outcome::Accept { masquerade: false }]));
}

#[test]
fn drop_and_reject_end_the_path() {
    let filter = |target: &str| format!("*filter\n:FORWARD ACCEPT [0:0]\n:A - [0:0]\n-A FORWARD -j A\n-A A {target}\nCOMMIT\n");
    assert_eq!(outcomes(&filter("-j DROP")), BTreeSet::from([Outcome::Drop]));
    assert_eq!(outcomes(&filter("-j REJECT --reject-with icmp-port-unreachable")), BTreeSet::from([Outcome::Reject]));
    assert_eq!(outcomes(&filter("-j REJECT")), BTreeSet::from([Outcome::Reject]));
}

#[test]
fn builtin_policy_applies_when_the_chain_runs_out() {
    let text = "*filter\n:FORWARD DROP [0:0]\n-A FORWARD -s 10.9.0.0/16 -j ACCEPT\nCOMMIT\n";
    let verdict = trace(&parse_rules(text).unwrap(), &node(), &inbound()).unwrap();
    assert_eq!(verdict.outcomes, BTreeSet::from([Outcome::Drop]));
    assert!(verdict.paths[0].steps.iter().any(|s| matches!(s, Step::Policy { chain, .. } if chain == "FORWARD")));
}

#[test]
fn dnat_rewrites_destination_and_ends_the_nat_table() {
    let text = nat("-A PREROUTING -j DNAT --to-destination 10.0.0.1:8080\n-A PREROUTING -j DNAT --to-destination 10.0.0.2:80\n");
    assert_eq!(outcomes(&text), BTreeSet::from([dnat("10.0.0.1:8080", false)]));
    let no_port = nat("-A PREROUTING -j DNAT --to-destination 10.0.0.1\n");
    assert_eq!(outcomes(&no_port), BTreeSet::from([dnat("10.0.0.1:80", false)]), "port kept");
    let v6 = "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j DNAT --to-destination [fd00::1]:8080\nCOMMIT\n";
    let packet = Packet::inbound(Protocol::Tcp, ip("fd00::9"), addr("[fd00:30::1]:80"));
    let outcomes = trace(&parse_rules(v6).unwrap(), &node(), &packet).unwrap().outcomes;
    assert_eq!(outcomes, BTreeSet::from([dnat("[fd00::1]:8080", false)]));
}

#[test]
fn masquerade_and_snat_in_postrouting_mean_masquerade() {
    let masq = nat("-A POSTROUTING -j MASQUERADE --random-fully\n");
    assert_eq!(outcomes(&masq), BTreeSet::from([Outcome::Accept { masquerade: true }]));
    let snat = nat("-A PREROUTING -j DNAT --to-destination 10.0.0.1:80\n-A POSTROUTING -j SNAT --to-source 192.168.0.2\n");
    assert_eq!(outcomes(&snat), BTreeSet::from([dnat("10.0.0.1:80", true)]));
}

#[test]
fn mark_arithmetic() {
    let xmark = Target::Mark { value: 0x4000, mask: 0x4000, op: MarkOp::Xor };
    assert_eq!(xmark.apply_mark(0x1), 0x4001);
    let clear = Target::Mark { value: 0x4000, mask: 0, op: MarkOp::Xor };
    assert_eq!(clear.apply_mark(0x4001), 0x1, "--set-xmark 0x4000/0x0 flips the bit off");
    let set = Target::Mark { value: 0x10, mask: 0xff, op: MarkOp::Or };
    assert_eq!(set.apply_mark(0xfff), 0xf10);
}

#[test]
fn mark_option_spellings() {
    let parsed = |option: &str| -> Target {
        let text = format!("*mangle\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j MARK {option}\nCOMMIT\n");
        parse_rules(&text).unwrap().chain("mangle", "PREROUTING").unwrap().rules[0].target.clone()
    };
    assert_eq!(parsed("--set-xmark 0x4000/0x4000").apply_mark(0), 0x4000);
    assert_eq!(parsed("--set-xmark 0x4000").apply_mark(0xff), 0x4000, "no mask: all bits replaced");
    assert_eq!(parsed("--set-mark 0x8/0xc").apply_mark(0xf), 0xb);
    assert_eq!(parsed("--or-mark 0x4000").apply_mark(0x1), 0x4001);
    assert_eq!(parsed("--and-mark 0x1").apply_mark(0x4001), 0x1);
    assert_eq!(parsed("--xor-mark 0x3").apply_mark(0x1), 0x2);
}

#[test]
fn kube_mark_masq_then_kube_postrouting_masquerades_only_marked_packets() {
    let text = "*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-POSTROUTING - [0:0]\n\
        -A PREROUTING ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ\n-A PREROUTING -j DNAT --to-destination 10.0.0.1:80\n\
        -A POSTROUTING -j KUBE-POSTROUTING\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n\
        -A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n\
        -A KUBE-POSTROUTING -j MASQUERADE --random-fully\nCOMMIT\n";
    let rules = parse_rules(text).unwrap();
    let from_pod = Packet::inbound(Protocol::Tcp, ip("10.1.2.3"), addr("172.30.0.1:80"));
    let from_outside = Packet::inbound(Protocol::Tcp, ip("172.20.0.9"), addr("172.30.0.1:80"));
    assert_eq!(trace(&rules, &node(), &from_pod).unwrap().outcomes, BTreeSet::from([dnat("10.0.0.1:80", false)]));
    assert_eq!(trace(&rules, &node(), &from_outside).unwrap().outcomes, BTreeSet::from([dnat("10.0.0.1:80", true)]));
}

#[test]
fn a_jump_loop_is_an_error_not_a_hang() {
    let text = nat("-A PREROUTING -j A\n-A A -j B\n-A B -j A\n");
    let err = trace(&parse_rules(&text).unwrap(), &node(), &inbound()).unwrap_err();
    assert!(matches!(err, TraceError::ChainLoop { .. }), "{err}");
}

#[test]
fn too_many_branches_is_an_error() {
    let mut body = String::new();
    for bit in 0..20 {
        body.push_str(&format!("-A PREROUTING -m statistic --mode random --probability 0.5 -j MARK --set-xmark {0:#x}/{0:#x}\n", 1u32 << bit));
    }
    let err = trace(&parse_rules(&nat(&body)).unwrap(), &node(), &inbound()).unwrap_err();
    assert!(matches!(err, TraceError::TooManyPaths { .. }), "{err}");
}

#[test]
fn unknown_targets_are_errors_naming_the_rule() {
    let text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp -j LOG --log-prefix x\nCOMMIT\n";
    let err = parse_rules(text).unwrap_err();
    assert!(matches!(err, TraceError::UnsupportedOption { .. }), "{err}");
    assert!(err.to_string().contains("line 3") && err.to_string().contains("-j LOG"), "{err}");
    let text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp -j LOG\nCOMMIT\n";
    let err = parse_rules(text).unwrap_err();
    assert!(matches!(err, TraceError::UnknownTarget { ref target, .. } if target == "LOG"), "{err}");
    let text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j FORWARD\nCOMMIT\n";
    assert!(matches!(parse_rules(text), Err(TraceError::UnknownTarget { .. })), "jump to a built-in chain");
    let text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -g KUBE-NOWHERE\nCOMMIT\n";
    assert!(matches!(parse_rules(text), Err(TraceError::UnknownTarget { .. })));
}

#[test]
fn bad_target_values_are_errors() {
    let bad = |rule: &str| parse_rules(&nat(&format!("-A PREROUTING {rule}\n"))).unwrap_err();
    assert!(matches!(bad("-j DNAT --to-destination 10.0.0.1-10.0.0.5:80"), TraceError::BadValue { .. }));
    assert!(matches!(bad("-j DNAT"), TraceError::BadValue { .. }));
    assert!(matches!(bad("-j DNAT --to-destination 10.0.0.1:80 --bogus"), TraceError::UnsupportedOption { .. }));
    assert!(matches!(bad("-j MARK --set-xmark zz"), TraceError::BadValue { .. }));
    assert!(matches!(bad("-j ACCEPT --foo"), TraceError::UnsupportedOption { .. }));
    let in_filter = "*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -j DNAT --to-destination 10.0.0.1\nCOMMIT\n";
    assert!(matches!(parse_rules(in_filter), Err(TraceError::Syntax { line: 3, .. })), "DNAT outside nat");
}
