//! `--iptables-backend auto` on a real kernel: nft when only nft holds
//! rules (or kubelet's hint chain is in nft), legacy otherwise; and the
//! applier writes only to the backend it was given.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use xtables::apply::{Backend, BackendChoice, detect_backend};
use model::IpFamily;
use support::*;

async fn auto() -> Backend {
    detect_backend(BackendChoice::Auto).await.unwrap()
}

#[test]
fn nothing_anywhere_means_legacy_and_detection_creates_no_table() {
    in_netns("bk-none", || async {
        assert_eq!(auto().await, Backend::Legacy);
        let names = std::fs::read_to_string("/proc/thread-self/net/ip_tables_names").unwrap_or_default();
        assert_eq!(names, "", "detection must not create legacy tables");
        assert_eq!(sh("nft", &["list", "ruleset"]), "", "detection must not create nft tables");
    });
}

#[test]
fn rules_only_in_nft_mean_nft() {
    in_netns("bk-nft", || async {
        sh("iptables-nft", &["-A", "INPUT", "-s", "192.0.2.1", "-j", "ACCEPT"]);
        assert_eq!(auto().await, Backend::Nft);
    });
}

#[test]
fn ipv6_rules_count_too() {
    in_netns("bk-nft6", || async {
        sh("ip6tables-nft", &["-A", "INPUT", "-s", "2001:db8::1", "-j", "ACCEPT"]);
        assert_eq!(auto().await, Backend::Nft);
    });
}

#[test]
fn more_rules_in_legacy_mean_legacy() {
    in_netns("bk-legacy", || async {
        sh("iptables-nft", &["-A", "INPUT", "-s", "192.0.2.1", "-j", "ACCEPT"]);
        for src in ["192.0.2.2", "192.0.2.3"] {
            sh("iptables-legacy", &["-A", "INPUT", "-s", src, "-j", "ACCEPT"]);
        }
        assert_eq!(auto().await, Backend::Legacy);
    });
}

#[test]
fn kubelets_hint_chain_in_nft_wins_over_rule_counts() {
    in_netns("bk-hint", || async {
        for src in ["192.0.2.2", "192.0.2.3"] {
            sh("iptables-legacy", &["-A", "INPUT", "-s", src, "-j", "ACCEPT"]);
        }
        sh("iptables-nft", &["-t", "mangle", "-N", "KUBE-IPTABLES-HINT"]);
        assert_eq!(auto().await, Backend::Nft);
    });
}

#[test]
fn our_own_canary_keeps_the_backend_we_used() {
    in_netns("bk-canary", || async {
        let nft = iptables(Backend::Nft, IpFamily::V4);
        let ruleset = ruleset(IpFamily::V4, &[]);
        nft.apply_ruleset(&ruleset).await.unwrap();
        let ours = rule_lines(&nft.save().await.unwrap()).len();
        // More foreign rules in legacy than ours in nft: only the canary
        // can tip it.
        for n in 0..=ours {
            sh("iptables-legacy", &["-A", "INPUT", "-s", &format!("192.0.2.{n}"), "-j", "ACCEPT"]);
        }
        assert_eq!(auto().await, Backend::Nft);
    });
}

#[test]
fn fixed_choices_are_taken_as_given_and_applied_there_only() {
    in_netns("bk-fixed", || async {
        for backend in Backend::ALL {
            assert_eq!(detect_backend(BackendChoice::Fixed(backend)).await.unwrap(), backend);
        }
        iptables(Backend::Nft, IpFamily::V4).apply_ruleset(&ruleset(IpFamily::V4, &["web"])).await.unwrap();
        assert!(sh("iptables-nft-save", &[]).contains("KUBE-SVC-"));
        assert!(!sh("iptables-legacy-save", &[]).contains("KUBE-"));
    });
}
