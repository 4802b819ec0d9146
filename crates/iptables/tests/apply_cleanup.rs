//! `--cleanup` on a real kernel: removes every chain and jump of ours
//! from both backends and both families, leaves foreign chains and rules
//! (and kubelet's `KUBE-FIREWALL`) exactly as they were, and is a no-op
//! when there is nothing of ours.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use xtables::apply::{Backend, apply_cleanup_all};
use model::IpFamily;
use xtables::{BuiltinJump, Rule, Table, Target};
use support::*;

/// Foreign chains and rules in filter INPUT and nat PREROUTING, added
/// with `iptables` (the tool of `backend` and `family`).
fn add_foreign_rules(backend: Backend, family: IpFamily) {
    let (iptables, _) = tools(backend, family);
    let src = if family == IpFamily::V4 { "192.0.2.7" } else { "2001:db8::7" };
    sh(&iptables, &["-N", "FOREIGN"]);
    sh(&iptables, &["-A", "FOREIGN", "-s", src, "-j", "ACCEPT"]);
    sh(&iptables, &["-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "FOREIGN"]);
    sh(&iptables, &["-t", "nat", "-N", "FOREIGN-NAT"]);
    sh(&iptables, &["-t", "nat", "-A", "PREROUTING", "-s", src, "-j", "FOREIGN-NAT"]);
    sh(&iptables, &["-t", "nat", "-A", "FOREIGN-NAT", "-j", "RETURN"]);
}

/// The `-A` lines and user chain declarations of a save, sorted: what
/// must be identical before apply and after cleanup.
fn rules_and_chains(save: &str) -> Vec<String> {
    let mut lines: Vec<String> = save
        .lines()
        .filter(|l| l.starts_with("-A ") || (l.starts_with(':') && l.contains(" - [")))
        .map(|l| normalized(l).trim_end().to_string())
        .collect();
    lines.sort();
    lines
}

#[test]
fn cleanup_removes_all_of_ours_and_nothing_else() {
    for backend in Backend::ALL {
        for family in [IpFamily::V4, IpFamily::V6] {
            in_netns("cleanup", move || async move {
                add_foreign_rules(backend, family);
                let ipt = iptables(backend, family);
                let before = rules_and_chains(&ipt.save().await.unwrap());
                ipt.apply_ruleset(&ruleset(family, &["web", "db"])).await.unwrap();
                assert!(ipt.save().await.unwrap().contains("KUBE-SVC-"));

                let cleaned = ipt.apply_cleanup().await.unwrap();
                assert_eq!(cleaned.iter().map(|t| t.table).collect::<Vec<_>>(), [Table::Filter, Table::Mangle, Table::Nat]);
                let after = ipt.save().await.unwrap();
                assert!(!after.contains("KUBE-"), "{backend} {family:?} left:\n{after}");
                assert_eq!(rules_and_chains(&after), before, "foreign rules changed");

                // Nothing left: no restore, nothing reported.
                assert!(ipt.apply_cleanup().await.unwrap().is_empty());
            });
        }
    }
}

#[test]
fn cleanup_covers_both_backends_and_families_at_once() {
    in_netns("cleanall", || async {
        for (backend, family) in [(Backend::Legacy, IpFamily::V4), (Backend::Nft, IpFamily::V6)] {
            iptables(backend, family).apply_ruleset(&ruleset(family, &["web"])).await.unwrap();
        }
        let outcomes = apply_cleanup_all().await;
        assert_eq!(outcomes.len(), 4, "{outcomes:?}");
        for outcome in &outcomes {
            let changes = outcome.result.as_ref().unwrap();
            let applied = matches!(
                (outcome.backend, outcome.family),
                (Backend::Legacy, IpFamily::V4) | (Backend::Nft, IpFamily::V6)
            );
            assert_eq!(!changes.is_empty(), applied, "{outcome:?}");
        }
        for backend in Backend::ALL {
            for family in [IpFamily::V4, IpFamily::V6] {
                let save = iptables(backend, family).save().await.unwrap();
                assert!(!save.contains("KUBE-"), "{backend} {family:?}:\n{save}");
            }
        }
        // A second run finds nothing anywhere.
        assert!(apply_cleanup_all().await.iter().all(|o| o.result.as_ref().is_ok_and(|c| c.is_empty())));
    });
}

#[test]
fn cleanup_on_a_clean_node_creates_no_table() {
    in_netns("cleannop", || async {
        let outcomes = apply_cleanup_all().await;
        assert!(outcomes.iter().all(|o| o.result.as_ref().is_ok_and(|c| c.is_empty())), "{outcomes:?}");
        let names = std::fs::read_to_string("/proc/thread-self/net/ip_tables_names").unwrap_or_default();
        assert_eq!(names, "", "legacy tables created by a no-op cleanup");
    });
}

/// A chain of ours that a foreign rule jumps to cannot be deleted (`-X`
/// would fail the whole table): it is kept and reported, the rest goes.
/// `KUBE-FIREWALL`, shared with kubelet, stays with its jumps, as upstream.
#[test]
fn cleanup_keeps_chains_foreign_rules_use_and_kubelets_firewall() {
    in_netns("cleankeep", || async {
        let ipt = iptables(Backend::Legacy, IpFamily::V4);
        let mut ruleset = ruleset(IpFamily::V4, &["web"]);
        ruleset.filter.chains.push("KUBE-FIREWALL".into());
        let firewall = Rule::new("KUBE-FIREWALL")
            .not_src("127.0.0.0/8")
            .dst("127.0.0.0/8")
            .comment("block incoming localnet connections")
            .matching("-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT")
            .target(Target::Drop);
        ruleset.filter.rules.push(firewall.build());
        ruleset.builtin_jumps.push(BuiltinJump { table: Table::Filter, chain: "INPUT", args: vec!["-j".into(), "KUBE-FIREWALL".into()], prepend: true });
        ipt.apply_ruleset(&ruleset).await.unwrap();
        sh("iptables-legacy", &["-t", "nat", "-N", "CNI-HOSTPORT"]);
        sh("iptables-legacy", &["-t", "nat", "-A", "CNI-HOSTPORT", "-j", "KUBE-MARK-MASQ"]);

        let cleaned = ipt.apply_cleanup().await.unwrap();
        let nat = cleaned.iter().find(|t| t.table == Table::Nat).unwrap();
        assert_eq!(nat.kept_chains, ["KUBE-MARK-MASQ"]);
        let save = ipt.save().await.unwrap();
        let mut ours: Vec<_> = save.lines().filter(|l| l.contains("KUBE-")).collect();
        ours.sort();
        assert_eq!(
            ours,
            [
                "-A CNI-HOSTPORT -j KUBE-MARK-MASQ",
                "-A INPUT -j KUBE-FIREWALL",
                "-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP",
                "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
                ":KUBE-FIREWALL - [0:0]",
                ":KUBE-MARK-MASQ - [0:0]",
            ],
            "{save}"
        );
    });
}
