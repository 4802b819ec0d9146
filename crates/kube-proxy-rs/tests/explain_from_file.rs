//! `kube-proxy-rs explain packet --from-file` on saved dumps, run as an
//! unprivileged user (`nobody`): every flow of the upstream reference,
//! explained from upstream's own `iptables-save.txt` (iptables mode) and
//! from upstream's `ruleset.nft` loaded into a namespace and dumped with
//! `nft -j list ruleset` (nftables mode), must get the verdict upstream's
//! traffic got. Then bad input: a dump that is neither, a missing file, a
//! bad address — each a clear error and exit code 1 or 2.
//! Needs root (to drop to `nobody`, and for the namespace); without it
//! the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
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

#[test]
fn every_nftables_flow_explained_from_upstreams_ruleset_as_nft_json() {
    testkit::netns::require_kernel();
    let flows = flows::nftables_flows().unwrap();
    let ns = Netns::new("explain-json").unwrap();
    let ruleset = flows::reference_dir().join("nftables/ruleset.nft");
    ns.exec("nft", &["-f", ruleset.to_str().unwrap()]).expect("load upstream's ruleset.nft in a namespace");
    let json = ns.exec("nft", &["-j", "list", "ruleset"]).expect("nft -j list ruleset");
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("ruleset.json");
    std::fs::write(&dump, json).unwrap();
    make_readable(dir.path(), &dump);
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
