//! The kernel facts the renderer takes as input, read and prepared in a
//! fresh namespace: nfacct counters (created, then usable by rules and
//! counting), `route_localnet` (set in the namespace only), the local
//! addresses, and a rendered ruleset applied end to end with them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use plan::Options;
use xtables::apply::{
    Backend, LOCALHOST_NPS_ACCEPTED_PKTS, NFACCT_COUNTERS, ROUTE_LOCALNET, apply_kernel_setup,
    apply_nfacct_counters, read_local_addresses, read_nfacct_packets,
};
use iptables::render::{RenderOptions, render};
use model::IpFamily;
use xtables::{Error, Table};
use std::net::IpAddr;
use support::*;

#[test]
fn kernel_setup_creates_counters_sets_route_localnet_and_reads_addresses() {
    let host_route_localnet = std::fs::read_to_string(ROUTE_LOCALNET).unwrap();
    let facts = in_netns("facts", || async {
        sh("ip", &["addr", "add", "10.99.0.1/32", "dev", "lo"]);
        assert_eq!(std::fs::read_to_string(ROUTE_LOCALNET).unwrap().trim(), "0");
        let facts = apply_kernel_setup(true).await.unwrap();
        assert_eq!(std::fs::read_to_string(ROUTE_LOCALNET).unwrap().trim(), "1");
        for name in NFACCT_COUNTERS {
            assert_eq!(read_nfacct_packets(name).unwrap(), 0, "{name}");
        }
        // A second setup finds the counters there: no error.
        apply_nfacct_counters().unwrap();
        facts
    });
    assert!(facts.nfacct);
    for ip in ["127.0.0.1", "::1", "10.99.0.1"] {
        assert!(facts.local_addresses.contains(&ip.parse::<IpAddr>().unwrap()), "{ip} not in {:?}", facts.local_addresses);
    }
    assert_eq!(facts.local_addresses.len(), 3, "{:?}", facts.local_addresses);
    assert_eq!(std::fs::read_to_string(ROUTE_LOCALNET).unwrap(), host_route_localnet, "host sysctl touched");
}

#[test]
fn an_nfacct_rule_loads_and_counts_once_the_counter_exists() {
    in_netns("nfacct", || async {
        let rule = ["-A", "OUTPUT", "-d", "127.0.0.1", "-p", "udp", "-m", "nfacct", "--nfacct-name", LOCALHOST_NPS_ACCEPTED_PKTS];
        let refused = std::process::Command::new("iptables-legacy").args(rule).output().unwrap();
        assert!(!refused.status.success(), "a rule naming a missing counter must fail");
        apply_nfacct_counters().unwrap();
        sh("iptables-legacy", &rule);
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..3 {
            socket.send_to(b"x", "127.0.0.1:9").unwrap();
        }
        assert_eq!(read_nfacct_packets(LOCALHOST_NPS_ACCEPTED_PKTS).unwrap(), 3);
    });
}

#[test]
fn reading_a_missing_counter_is_an_error_naming_it() {
    in_netns("nfmiss", || async {
        let err = read_nfacct_packets("no_such_counter").expect_err("missing");
        assert!(matches!(err, Error::Host(host::Error::Netlink { .. })), "{err}");
        assert!(err.to_string().contains("nfacct get no_such_counter"), "{err}");
    });
}

#[test]
fn local_addresses_follow_the_namespace() {
    in_netns("addrs", || async {
        let before = read_local_addresses().await.unwrap();
        sh("ip", &["addr", "add", "2001:db8::5/128", "dev", "lo"]);
        let after = read_local_addresses().await.unwrap();
        assert!(!before.contains(&"2001:db8::5".parse().unwrap()));
        assert!(after.contains(&"2001:db8::5".parse().unwrap()), "{after:?}");
    });
}

/// The renderer's output for a small snapshot, with the facts read here,
/// passes `iptables-restore --test`, applies (nfacct matches included),
/// and applies again without change, on both backends.
#[test]
fn a_rendered_snapshot_applies_idempotently() {
    use testkit::builders::*;
    for backend in Backend::ALL {
        in_netns("rendered", move || async move {
            let facts = apply_kernel_setup(true).await.unwrap();
            let snapshot = snapshot()
                .service(tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80).node_port(3001), [endpoint(pod_ip(1), 80)])
                .build();
            let opts = RenderOptions {
                common: Options::with_cluster_cidr(cluster_cidr()),
                nfacct: facts.nfacct,
                conntrack_tcp_be_liberal: facts.conntrack_tcp_be_liberal,
                local_addresses: facts.local_addresses.clone(),
                ..RenderOptions::default()
            };
            let ruleset = render(&snapshot, &opts).ruleset;
            assert!(ruleset.to_restore().contains("-m nfacct"), "the test must cover nfacct rules");
            let ipt = iptables(backend, IpFamily::V4);
            ipt.test_restore(&ruleset.to_restore()).await.unwrap();
            ipt.apply_ruleset(&ruleset).await.unwrap();
            let first = normalized(&ipt.save().await.unwrap());
            let again = ipt.apply_ruleset(&ruleset).await.unwrap();
            assert!(again.added_jumps.is_empty() && again.removed.is_empty(), "{again:?}");
            assert_eq!(normalized(&ipt.save().await.unwrap()), first);
            for rule in &ruleset.nat.rules {
                assert!(first.contains(&format!("-A {rule}\n")), "{backend}: {rule}");
            }
            assert!(ipt.canary_exists().await.unwrap());
            ipt.apply_cleanup().await.unwrap();
            let nat = ipt.saved_rules(Table::Nat).await.unwrap();
            assert!(!nat.contains("KUBE-"), "{nat}");
        });
    }
}
