//! The native legacy writer (`xtables::native`) against
//! `iptables-legacy-restore`, on a real kernel: the upstream reference
//! scenario's rules, then a change (a service gone, one endpoint fewer
//! elsewhere), then the same rules again, written by each path into its
//! own namespace holding a foreign chain and foreign rules; the tables
//! must read back (`iptables-legacy-save`, counters aside) exactly alike,
//! every write must have gone through the path asked for, and the foreign
//! chain and rules must still be there. Both families.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use iptables::render::{RenderOptions, render};
use model::{IpFamily, Snapshot};
use plan::Options;
use support::*;
use xtables::apply::Backend;

const CLUSTER_YAML: &str = include_str!("snapshots/upstream-v1.36/cluster.yaml");

/// IPv4: the reference scenario (`cluster.yaml` on node-a). IPv6 (the
/// scenario has no IPv6 service): a few service ports of the same shapes.
fn reference_snapshot(family: IpFamily) -> Snapshot {
    if family == IpFamily::V6 {
        return ipv6_snapshot();
    }
    let parsed = source::manifests::parse(CLUSTER_YAML).unwrap();
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let mut tracker = tracker::Tracker::with_family("node-a", family);
    let warnings = tracker.replace_all(&parsed.objects);
    assert!(warnings.is_empty(), "{warnings:?}");
    let snap = tracker.snapshot().0;
    assert!(!snap.services.is_empty(), "{family:?}: no services in {} objects", parsed.objects.services.len());
    snap
}

fn ipv6_snapshot() -> Snapshot {
    use testkit::builders::{endpoint, node_info, snapshot, tcp_port};
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    let mut node = node_info();
    node.addresses = vec![ip("fd00:86::2")];
    node.pod_cidrs = vec!["fd00:244::/64".parse().unwrap()];
    let eps = |n: u16| (1..=n).map(move |i| endpoint(ip(&format!("fd00:244:1::{i}")), 8080).build()).collect::<Vec<_>>();
    snapshot()
        .node(node)
        .service(tcp_port("ns", "web", "http", ip("fd00:96::10"), 80).node_port(30080).build(), eps(3))
        .service(tcp_port("ns", "api", "http", ip("fd00:96::11"), 80).affinity(600).build(), eps(2))
        .service(tcp_port("ns", "db", "sql", ip("fd00:96::12"), 5432).udp().build(), eps(1))
        .service(tcp_port("ns", "none", "http", ip("fd00:96::13"), 80).node_port(30090).build(), eps(0))
        .service(tcp_port("ns", "local", "http", ip("fd00:96::14"), 80).node_port(30100).etp_local().build(), [endpoint(ip("fd00:244::5"), 80).local().build()])
        .build()
}

/// The reference with its first service port gone and one endpoint fewer
/// for the first port that has two or more.
fn changed(mut snap: Snapshot) -> Snapshot {
    let gone = snap.services.keys().next().cloned().unwrap();
    snap.services.remove(&gone);
    snap.endpoints.remove(&gone);
    let name = snap.endpoints.iter().find(|(_, eps)| eps.len() >= 2).map(|(n, _)| n.clone()).unwrap();
    let mut eps = snap.endpoints[&name].as_ref().clone();
    eps.pop();
    snap.endpoints.insert(name, std::sync::Arc::new(eps));
    snap
}

fn options(family: IpFamily) -> RenderOptions {
    let common = Options { family, ..Options::with_cluster_cidr("10.244.0.0/16".parse().unwrap()) };
    RenderOptions { common, ..RenderOptions::default() }
}

/// Rules of someone else, and the nfacct objects the rules count into.
fn foreign(family: IpFamily) {
    let tool = if family == IpFamily::V4 { "iptables-legacy" } else { "ip6tables-legacy" };
    sh(tool, &["-t", "nat", "-N", "FOREIGN"]);
    sh(tool, &["-t", "nat", "-A", "FOREIGN", "-p", "tcp", "--dport", "1", "-j", "RETURN"]);
    sh(tool, &["-t", "nat", "-A", "PREROUTING", "-j", "FOREIGN"]);
    sh(tool, &["-t", "nat", "-A", "OUTPUT", "-p", "udp", "-j", "FOREIGN"]);
    sh(tool, &["-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT"]);
    for counter in ["ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"] {
        sh("nfacct", &["add", counter]);
    }
}

/// The three writes with one path: each save, and whether the native
/// writer wrote it.
fn writes(family: IpFamily, native: bool) -> Vec<(String, bool)> {
    in_netns("native", move || async move {
        foreign(family);
        let ipt = iptables(Backend::Legacy, family).with_native_writer(native);
        let first = reference_snapshot(family);
        let mut out = Vec::new();
        for snap in [first.clone(), changed(first.clone()), changed(first)] {
            let rendered = render(&snap, &options(family));
            let applied = ipt.apply_ruleset(&rendered.ruleset).await.unwrap();
            out.push((normalized(&ipt.save().await.unwrap()), applied.native));
        }
        out
    })
}

#[test]
fn native_writes_read_back_as_iptables_legacy_restore_writes() {
    for family in [IpFamily::V4, IpFamily::V6] {
        let (tool, native) = (writes(family, false), writes(family, true));
        // The third write has nothing to do: no restore at all.
        assert_eq!(native.iter().map(|w| w.1).collect::<Vec<_>>(), [true, true, false], "{family:?}");
        assert!(tool.iter().all(|w| !w.1));
        for (i, ((t, _), (n, _))) in tool.iter().zip(&native).enumerate() {
            assert_eq!(t, n, "{family:?}: write {i} differs");
            assert!(n.contains("-A PREROUTING -j FOREIGN") && n.contains("-A FOREIGN -p tcp -m tcp --dport 1 -j RETURN"), "{n}");
            assert!(n.contains("-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT"), "{n}");
            assert!(n.contains("-j DNAT --to-destination") && n.contains("-m statistic --mode random"), "{n}");
        }
        assert_ne!(tool[0].0, tool[1].0, "{family:?}: the change changed nothing");
    }
}
