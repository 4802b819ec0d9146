//! `kube-proxy-rs explain packet --from-file` on saved dumps, run as an
//! unprivileged user (`nobody`): every flow of the upstream reference,
//! explained from upstream's own `iptables-save.txt` (iptables mode) and
//! from upstream's `ruleset.nft` loaded into a namespace and dumped with
//! `nft -j list ruleset` (nftables mode), must get the verdict upstream's
//! traffic got. Then bad input: a dump that is neither, a missing file, a
//! bad address — each a clear error and exit code 1 or 2.
//! IPv6: a few IPv6 flows walked through upstream's own IPv6 rules
//! (`ip6tables-save.txt`, the `ip6 kube-proxy` table of `ruleset.nft`:
//! an IPv6 proxier with no IPv6 Service, so nothing is rewritten, and
//! `::1` is kept out of the NodePorts) and through our rendering of a
//! dual-stack node's IPv6 rules (`explain dump --family ipv6`, iptables
//! and IPVS mode): a ClusterIP, an ETP Local load-balancer IP and a
//! NodePort, each to its IPv6 endpoint.
//! Needs root (to drop to `nobody`, and for the namespace); without it
//! the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/dual_stack.rs"]
mod dual_stack;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use testkit::flows::{self, FlowCase, NODE_A_ADDRESSES, check_explained, explain_args, explained_outcomes};
use testkit::netns::Netns;

/// Runs the binary as `nobody`.
fn unprivileged(args: &[String]) -> Output {
    Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .args(args)
        .output()
        .expect("run kube-proxy-rs under setpriv")
}

/// Asks about every flow from `dump`; every flow whose answer differs.
fn differences(flows: &[FlowCase], dump: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    for flow in flows {
        let mut args = explain_args(flow);
        args.extend(["--from-file".to_string(), dump.display().to_string()]);
        for ip in NODE_A_ADDRESSES {
            args.extend(["--node-ip".to_string(), ip.to_string()]);
        }
        let output = unprivileged(&args);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let verdict = if output.status.success() {
            explained_outcomes(&stdout).map_err(|e| format!("{e:#}")).and_then(|got| check_explained(flow, &got))
        } else {
            Err(format!("failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr)))
        };
        if let Err(e) = verdict {
            failures.push(format!("{}\n    {e}\n{stdout}", flow.label()));
        }
    }
    failures
}

#[test]
fn every_iptables_flow_explained_from_upstreams_iptables_save() {
    testkit::netns::require_kernel();
    let flows = flows::iptables_flows().unwrap();
    let dump = flows::reference_dir().join("iptables/iptables-save.txt");
    let failures = differences(&flows, &dump);
    assert!(failures.is_empty(), "{} of {} flows explained otherwise:\n{}", failures.len(), flows.len(), failures.join("\n"));
}

/// Upstream's `ruleset.nft` loaded in a namespace of its own and listed
/// as `nft -j list ruleset`, in a file readable by the unprivileged user.
fn upstream_ruleset_as_nft_json(ns_name: &str) -> (tempfile::TempDir, PathBuf) {
    let ns = Netns::new(ns_name).unwrap();
    let ruleset = flows::reference_dir().join("nftables/ruleset.nft");
    ns.exec("nft", &["-f", ruleset.to_str().unwrap()]).expect("load upstream's ruleset.nft in a namespace");
    let json = ns.exec("nft", &["-j", "list", "ruleset"]).expect("nft -j list ruleset");
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("ruleset.json");
    std::fs::write(&dump, json).unwrap();
    make_readable(dir.path(), &dump);
    (dir, dump)
}

#[test]
fn every_nftables_flow_explained_from_upstreams_ruleset_as_nft_json() {
    testkit::netns::require_kernel();
    let flows = flows::nftables_flows().unwrap();
    let (_dir, dump) = upstream_ruleset_as_nft_json("explain-json");
    let failures = differences(&flows, &dump);
    assert!(failures.is_empty(), "{} of {} flows explained otherwise:\n{}", failures.len(), flows.len(), failures.join("\n"));
}

/// `nobody` must read the dump the test (root) wrote.
fn make_readable(dir: &Path, file: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn bad_dumps_and_addresses_are_clear_errors() {
    testkit::netns::require_kernel();
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.txt");
    std::fs::write(&garbage, "*nat\n-A KUBE-SERVICES -m frobnicate --zap -j ACCEPT\nCOMMIT\n").unwrap();
    let json = dir.path().join("bad.json");
    std::fs::write(&json, r#"{"nftables": [{"table": {"family": "ip", "name": "t"}}, {"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"queue": {"num": 1}}]}}]}"#).unwrap();
    make_readable(dir.path(), &garbage);
    make_readable(dir.path(), &json);
    let cases: [(&[&str], i32, &str); 5] = [
        (&["packet", "tcp", "10.0.0.1", "10.96.0.1:443", "--from-file", garbage.to_str().unwrap()], 1, "frobnicate"),
        (&["packet", "tcp", "10.0.0.1", "10.96.0.1:443", "--from-file", json.to_str().unwrap()], 1, "statement `queue` is not modelled"),
        (&["packet", "tcp", "10.0.0.1", "10.96.0.1:443", "--from-file", "/nonexistent/dump"], 1, "cannot read /nonexistent/dump"),
        (&["packet", "tcp", "10.0.0.1", "10.96.0.1", "--from-file", garbage.to_str().unwrap()], 1, "destination `10.96.0.1`"),
        (&["packet", "icmp", "10.0.0.1", "10.96.0.1:443", "--from-file", garbage.to_str().unwrap()], 1, "protocol `icmp`"),
    ];
    for (args, code, needle) in cases {
        let mut all = vec!["explain".to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        let output = unprivileged(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: stderr lacks {needle:?}: {stderr}");
    }
    let usage = unprivileged(&["explain".to_string(), "packet".to_string(), "tcp".to_string()]);
    assert_eq!(usage.status.code(), Some(2), "a missing argument is a usage error");
}

/// `explain packet PROTO SRC DST FROM --from-file DUMP -o json` as
/// `nobody`: its endings and every step of every path, one per line.
fn explain_ipv6(packet: &[&str], dump: &Path, extra: &[&str]) -> (std::collections::BTreeSet<testkit::tracer::Outcome>, String) {
    let mut args: Vec<String> = ["explain", "packet"].iter().chain(packet).map(|a| a.to_string()).collect();
    args.extend(["--from-file".to_string(), dump.display().to_string(), "-o".to_string(), "json".to_string()]);
    args.extend(["--node-ip", "192.168.0.2", "--node-ip", "fd00:192::2"].map(String::from));
    args.extend(extra.iter().map(|a| a.to_string()));
    let output = unprivileged(&args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{packet:?}: {}", String::from_utf8_lossy(&output.stderr));
    let outcomes = explained_outcomes(&stdout).unwrap_or_else(|e| panic!("{e:#}: {stdout}"));
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let steps: Vec<String> = json["paths"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["steps"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()))
        .collect();
    (outcomes, steps.join("\n"))
}

fn accepted() -> std::collections::BTreeSet<testkit::tracer::Outcome> {
    [testkit::tracer::Outcome::Accept { masquerade: false }].into()
}

fn local() -> std::collections::BTreeSet<testkit::tracer::Outcome> {
    [testkit::tracer::Outcome::Local].into()
}

#[test]
fn ipv6_flows_explained_from_upstreams_ip6tables_save_and_ip6_table() {
    testkit::netns::require_kernel();
    let ip6tables = flows::reference_dir().join("iptables/ip6tables-save.txt");
    let (got, steps) = explain_ipv6(&["tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod"], &ip6tables, &[]);
    assert_eq!(got, accepted(), "no IPv6 Service: routed on untouched\n{steps}");
    assert!(steps.contains("route fd00:96::10: not local (FORWARD)"), "{steps}");
    let (got, steps) = explain_ipv6(&["tcp", "2001:db8::9", "[fd00:192::2]:30080", "--from-outside"], &ip6tables, &[]);
    assert_eq!(got, local(), "{steps}");
    assert!(steps.contains("nat KUBE-SERVICES #1 (line 57): ! -d ::1/128"), "a local IPv6 address goes to KUBE-NODEPORTS:\n{steps}");
    let (got, steps) = explain_ipv6(&["tcp", "::1", "[::1]:30080", "--from-node"], &ip6tables, &[]);
    assert_eq!(got, local(), "{steps}");
    assert!(!steps.contains("nat KUBE-SERVICES #1"), "::1 is kept out of the NodePorts (`! -d ::1/128`):\n{steps}");

    let (_dir, dump) = upstream_ruleset_as_nft_json("explain-json6");
    let (got, steps) = explain_ipv6(&["tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod"], &dump, &[]);
    assert_eq!(got, accepted(), "{steps}");
    assert!(steps.contains("ip6 kube-proxy nat-prerouting #1: jump services"), "{steps}");
    assert!(steps.contains("ip6 kube-proxy filter-forward #2: ct state new jump cluster-ips-check"), "{steps}");
    assert!(!steps.contains("ip kube-proxy"), "an IPv6 packet walks only the ip6 table:\n{steps}");
    let (got, steps) = explain_ipv6(&["tcp", "10.244.0.9", "10.96.10.10:80", "--from-pod"], &dump, &[]);
    assert_eq!(got.len(), 3, "the IPv4 ClusterIP of storefront/web still has its 3 endpoints: {got:?}");
    assert!(!steps.contains("ip6 kube-proxy"), "an IPv4 packet walks only the ip table:\n{steps}");
}

#[test]
fn ipv6_flows_explained_from_our_ipv6_rendering() {
    testkit::netns::require_kernel();
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("cluster.yaml");
    std::fs::write(&manifests, dual_stack::MANIFESTS).unwrap();
    let dnat = |to: &str| -> std::collections::BTreeSet<testkit::tracer::Outcome> {
        [testkit::tracer::Outcome::Dnat { to: to.parse().unwrap(), masquerade: false }].into()
    };
    for mode in ["iptables", "ipvs"] {
        let rendered = std::process::Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"))
            .args(["explain", "dump", "--mode", mode, "--family", "ipv6", "--node-ip", "192.168.0.2", "--node-ip", "fd00:192::2", "--"])
            .args(["--proxy-mode", mode, "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16,fd00:244::/64", "--manifests"])
            .arg(&manifests)
            .output()
            .unwrap();
        assert!(rendered.status.success(), "explain dump {mode}: {}", String::from_utf8_lossy(&rendered.stderr));
        let text = String::from_utf8(rendered.stdout).unwrap();
        assert!(text.contains("fd00:96::10") && !text.contains("10.96.0.10"), "only the IPv6 rules:\n{text}");
        let dump = dir.path().join(format!("{mode}.dump"));
        std::fs::write(&dump, text).unwrap();
        make_readable(dir.path(), &dump);
        let cases: [(&[&str], &str); 3] = [
            (&["tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod"], "[fd00:244::5]:8080"),
            (&["tcp", "2001:db8::9", "[2001:db8::20]:80", "--from-outside"], "[fd00:244::6]:8080"),
            (&["tcp", "2001:db8::9", "[fd00:192::2]:30080", "--from-outside"], "[fd00:244::6]:8080"),
        ];
        for (packet, endpoint) in cases {
            let (got, steps) = explain_ipv6(packet, &dump, &["--mode", mode]);
            assert_eq!(got, dnat(endpoint), "{mode} {packet:?}:\n{steps}");
        }
    }
}
