//! Userspace mode and the other modes clean up after each other (issue
//! 29), on a real kernel in a network namespace of its own, fed
//! `examples/cluster.yaml`: iptables mode, then userspace mode (iptables
//! mode's chains gone after its first sync, its portal chains in for both
//! families), then nftables mode (the portal chains gone after its first
//! sync), then userspace mode again with `--proxy-port-range 40000-40999`
//! (nftables mode's tables gone; every proxy port in the range), then
//! `--cleanup` (the portal chains gone). Needs root, `iptables-legacy`,
//! `ip6tables-legacy` and `nft`; without them the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/proxy.rs"]
mod proxy;

use proxy::{BINARY, Proxy};
use std::path::{Path, PathBuf};
use testkit::netns::Netns;

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

fn args(mode: &str, manifests: &Path) -> Vec<String> {
    let manifests = manifests.display().to_string();
    [
        "--proxy-mode", mode, "--manifests", &manifests, "--hostname-override", "node-a",
        "--cluster-cidr", "10.244.0.0/16", "--iptables-backend", "legacy", "--iptables-sync-period", "1s",
        "--iptables-min-sync-period", "0s", "--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Both families' `iptables-save` and nftables mode's tables.
fn kernel(ns: &Netns) -> String {
    let save = |tool: &str| ns.exec(tool, &[]).unwrap_or_default();
    let nft = ns.exec("nft", &["list", "tables"]).expect("nft list tables");
    format!("{}{}{nft}", save("iptables-legacy-save"), save("ip6tables-legacy-save"))
}

/// Runs `mode` until its first sync (and the removal of the other modes'
/// leftovers that follows it) and one more sync; the kernel then.
fn run_mode(ns: &Netns, mode: &str, manifests: &Path, synced: &str, extra: &[&str]) -> String {
    let mut all = args(mode, manifests);
    all.extend(extra.iter().map(|s| s.to_string()));
    let mut proxy = Proxy::start_in(ns, &all);
    proxy.wait_for(synced);
    proxy.wait_for(synced);
    let state = kernel(ns);
    proxy.stop();
    state
}

const IPTABLES_SYNCED: &str = "synced iptables rules ip_family=IPv4";
const USERSPACE_SYNCED: &str = "synced userspace proxy ports and portal rules ip_family=IPv4";
const NFTABLES_SYNCED: &str = "synced nftables rules ip_family=IPv4";

#[test]
fn userspace_mode_and_the_others_remove_each_others_rules() {
    testkit::netns::require_kernel();
    let ns = Netns::new("usmode").unwrap();
    ns.exec("nft", &["list", "tables"]).expect("nft is needed");
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("cluster.yaml");
    std::fs::copy(repo_file("examples/cluster.yaml"), &manifests).unwrap();

    let iptables = run_mode(&ns, "iptables", &manifests, IPTABLES_SYNCED, &[]);
    assert!(iptables.contains(":KUBE-SERVICES"), "{iptables}");

    let userspace = run_mode(&ns, "userspace", &manifests, USERSPACE_SYNCED, &[]);
    assert!(!userspace.contains(":KUBE-SERVICES") && !userspace.contains(":KUBE-SVC-"), "iptables mode's chains stay:\n{userspace}");
    for chain in [":KUBE-PORTALS-CONTAINER", ":KUBE-PORTALS-HOST", ":KUBE-NODEPORT-CONTAINER", ":KUBE-NODEPORT-HOST", ":KUBE-NODEPORT-NON-LOCAL"] {
        assert_eq!(userspace.matches(chain).count(), 2, "{chain} in both families:\n{userspace}");
    }
    assert!(userspace.contains("-A PREROUTING -m comment --comment \"handle ClusterIPs; NOTE: this must be before the NodePort rules\" -j KUBE-PORTALS-CONTAINER"), "{userspace}");
    assert!(userspace.contains("-j REDIRECT --to-ports "), "{userspace}");

    let nftables = run_mode(&ns, "nftables", &manifests, NFTABLES_SYNCED, &[]);
    assert!(nftables.contains("table ip kube-proxy"), "{nftables}");
    assert!(!nftables.contains("KUBE-PORTALS") && !nftables.contains("KUBE-NODEPORT-"), "userspace mode's chains stay:\n{nftables}");

    let userspace = run_mode(&ns, "userspace", &manifests, USERSPACE_SYNCED, &["--proxy-port-range", "40000-40999"]);
    assert!(!userspace.contains("table ip kube-proxy") && !userspace.contains("table ip6 kube-proxy"), "nftables mode's tables stay:\n{userspace}");
    let ports: Vec<u16> = userspace.split("--to-ports ").skip(1).filter_map(|rest| rest.split_whitespace().next()?.parse().ok()).collect();
    assert!(!ports.is_empty() && ports.iter().all(|p| (40000..=40999).contains(p)), "proxy ports {ports:?} outside --proxy-port-range:\n{userspace}");

    let cleanup = ns.command(BINARY).args(args("userspace", &manifests)).arg("--cleanup").output().unwrap();
    assert!(cleanup.status.success(), "--cleanup: {}", String::from_utf8_lossy(&cleanup.stderr));
    let left = kernel(&ns);
    assert!(!left.contains("KUBE-PORTALS") && !left.contains("KUBE-NODEPORT-") && !left.contains("kube-proxy"), "after --cleanup:\n{left}");
}
