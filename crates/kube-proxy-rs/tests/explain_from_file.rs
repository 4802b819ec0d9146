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
//! Without `--node-ip` a dump cannot say which addresses are the node's:
//! a NodePort to the node's address is then explained with the assumption
//! spelt out (text and JSON), never as a bare "no rule matched".
//! `nobody` runs a copy of the binary and reads copies of the dumps in a
//! temporary folder it can enter: the checkout may sit in one only root
//! can enter (`/root/...`, a `mktemp -d` folder).
//! Needs root (to drop to `nobody`, and for the namespace); without it
//! the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/dual_stack.rs"]
mod dual_stack;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use testkit::flows::{self, FlowCase, NODE_A_ADDRESSES, check_explained, explain_args, explained_outcomes};
use testkit::netns::Netns;

/// What `nobody` runs and reads: the binary and the dumps, in a temporary
/// folder anyone can enter (removed when dropped).
struct Unprivileged {
    dir: tempfile::TempDir,
    binary: PathBuf,
}

impl Unprivileged {
    /// The folder, with the binary linked (or copied) into it.
    fn new() -> Self {
        let dir = tempfile::Builder::new().prefix("kprs-explain-nobody-").tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let binary = dir.path().join("kube-proxy-rs");
        let built = Path::new(env!("CARGO_BIN_EXE_kube-proxy-rs"));
        if std::fs::hard_link(built, &binary).is_err() {
            std::fs::copy(built, &binary).unwrap_or_else(|e| panic!("copy {} for nobody: {e}", built.display()));
        }
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir, binary }
    }

    /// Writes `contents` as `name` in the folder, readable by `nobody`.
    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        path
    }

    /// A copy of the reference file `relative`, readable by `nobody`.
    fn reference(&self, relative: &str) -> PathBuf {
        let from = flows::reference_dir().join(relative);
        let text = std::fs::read(&from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
        self.write(&relative.replace('/', "-"), text)
    }

    /// Runs the binary as `nobody`.
    fn run(&self, args: &[String]) -> Output {
        Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"])
            .arg(&self.binary)
            .args(args)
            .output()
            .expect("run kube-proxy-rs under setpriv")
    }
}

/// Asks about every flow from `dump`; every flow whose answer differs.
fn differences(nobody: &Unprivileged, flows: &[FlowCase], dump: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    for flow in flows {
        let mut args = explain_args(flow);
        args.extend(["--from-file".to_string(), dump.display().to_string()]);
        for ip in NODE_A_ADDRESSES {
            args.extend(["--node-ip".to_string(), ip.to_string()]);
        }
        let output = nobody.run(&args);
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
    let nobody = Unprivileged::new();
    let dump = nobody.reference("iptables/iptables-save.txt");
    let failures = differences(&nobody, &flows, &dump);
    assert!(failures.is_empty(), "{} of {} flows explained otherwise:\n{}", failures.len(), flows.len(), failures.join("\n"));
}

/// Upstream's `ruleset.nft` loaded in a namespace of its own and listed
/// as `nft -j list ruleset`, in a file readable by the unprivileged user.
fn upstream_ruleset_as_nft_json(nobody: &Unprivileged, ns_name: &str) -> PathBuf {
    let ns = Netns::new(ns_name).unwrap();
    let ruleset = flows::reference_dir().join("nftables/ruleset.nft");
    ns.exec("nft", &["-f", ruleset.to_str().unwrap()]).expect("load upstream's ruleset.nft in a namespace");
    let json = ns.exec("nft", &["-j", "list", "ruleset"]).expect("nft -j list ruleset");
    nobody.write("ruleset.json", json)
}

#[test]
fn every_nftables_flow_explained_from_upstreams_ruleset_as_nft_json() {
    testkit::netns::require_kernel();
    let flows = flows::nftables_flows().unwrap();
    let nobody = Unprivileged::new();
    let dump = upstream_ruleset_as_nft_json(&nobody, "explain-json");
    let failures = differences(&nobody, &flows, &dump);
    assert!(failures.is_empty(), "{} of {} flows explained otherwise:\n{}", failures.len(), flows.len(), failures.join("\n"));
}

/// `explain packet` of a NodePort to node-a's own address from `dump`,
/// as `nobody`, with `extra` arguments: its output, which must be a success.
fn nodeport_to_the_node(nobody: &Unprivileged, dump: &Path, extra: &[&str]) -> String {
    let node_ip = flows::NODE_A_IP.to_string();
    let mut args: Vec<String> = ["explain", "packet", "tcp", "172.20.0.10"].map(String::from).to_vec();
    args.extend([format!("{node_ip}:30080"), "--from-outside".into(), "--in-interface".into(), "ext0".into()]);
    args.extend(["--from-file".to_string(), dump.display().to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    let output = nobody.run(&args);
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// Without `--node-ip` a dump cannot say which addresses are the node's:
/// the answer for a NodePort to the node's address says, in text and JSON,
/// that the address was assumed not to be the node's and that `--node-ip`
/// changes it; with `--node-ip` nothing is assumed and it reaches the
/// NodePort's endpoints.
#[test]
fn a_nodeport_from_a_dump_without_node_ip_says_what_was_assumed() {
    testkit::netns::require_kernel();
    let nobody = Unprivileged::new();
    let node_ip = flows::NODE_A_IP.to_string();
    let dumps = [nobody.reference("iptables/iptables-save.txt"), upstream_ruleset_as_nft_json(&nobody, "explain-assumed")];
    for dump in &dumps {
        let text = nodeport_to_the_node(&nobody, dump, &[]);
        let assumed = format!("{node_ip} was assumed not to be one of them");
        assert!(text.contains(&assumed) && text.contains(&format!("pass --node-ip {node_ip}")), "{}:\n{text}", dump.display());
        let verdict = text.split("path to").next().unwrap_or_default();
        assert!(verdict.contains("(assumed: the node's addresses are unknown"), "said in the verdict:\n{text}");

        let json: serde_json::Value = serde_json::from_str(&nodeport_to_the_node(&nobody, dump, &["-o", "json"])).unwrap();
        let assumptions = json["assumptions"].as_array().expect("`assumptions` in the JSON");
        assert!(assumptions.iter().any(|a| a.as_str().is_some_and(|a| a.contains(&assumed))), "{json:#}");

        let json: serde_json::Value =
            serde_json::from_str(&nodeport_to_the_node(&nobody, dump, &["--node-ip", &node_ip, "-o", "json"])).unwrap();
        assert_eq!(json["assumptions"], serde_json::json!([]), "--node-ip given: nothing assumed");
        let kinds: Vec<&str> = json["outcomes"].as_array().unwrap().iter().filter_map(|o| o["kind"].as_str()).collect();
        assert!(!kinds.is_empty() && kinds.iter().all(|k| *k == "dnat"), "{}: reaches the endpoints: {json:#}", dump.display());
    }
}

#[test]
fn bad_dumps_and_addresses_are_clear_errors() {
    testkit::netns::require_kernel();
    let nobody = Unprivileged::new();
    let garbage = nobody.write("garbage.txt", "*nat\n-A KUBE-SERVICES -m frobnicate --zap -j ACCEPT\nCOMMIT\n");
    let json = nobody.write(
        "bad.json",
        r#"{"nftables": [{"table": {"family": "ip", "name": "t"}}, {"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"queue": {"num": 1}}]}}]}"#,
    );
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
        let output = nobody.run(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: stderr lacks {needle:?}: {stderr}");
    }
    let usage = nobody.run(&["explain".to_string(), "packet".to_string(), "tcp".to_string()]);
    assert_eq!(usage.status.code(), Some(2), "a missing argument is a usage error");
}

/// `explain packet PROTO SRC DST FROM --from-file DUMP -o json` as
/// `nobody`: its endings and every step of every path, one per line.
fn explain_ipv6(nobody: &Unprivileged, packet: &[&str], dump: &Path, extra: &[&str]) -> (std::collections::BTreeSet<testkit::tracer::Outcome>, String) {
    let mut args: Vec<String> = ["explain", "packet"].iter().chain(packet).map(|a| a.to_string()).collect();
    args.extend(["--from-file".to_string(), dump.display().to_string(), "-o".to_string(), "json".to_string()]);
    args.extend(["--node-ip", "192.168.0.2", "--node-ip", "fd00:192::2"].map(String::from));
    args.extend(extra.iter().map(|a| a.to_string()));
    let output = nobody.run(&args);
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
    let nobody = Unprivileged::new();
    let ip6tables = nobody.reference("iptables/ip6tables-save.txt");
    let (got, steps) = explain_ipv6(&nobody, &["tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod"], &ip6tables, &[]);
    assert_eq!(got, accepted(), "no IPv6 Service: routed on untouched\n{steps}");
    assert!(steps.contains("route fd00:96::10: not local (FORWARD)"), "{steps}");
    let (got, steps) = explain_ipv6(&nobody, &["tcp", "2001:db8::9", "[fd00:192::2]:30080", "--from-outside"], &ip6tables, &[]);
    assert_eq!(got, local(), "{steps}");
    assert!(steps.contains("nat KUBE-SERVICES #1 (line 57): ! -d ::1/128"), "a local IPv6 address goes to KUBE-NODEPORTS:\n{steps}");
    let (got, steps) = explain_ipv6(&nobody, &["tcp", "::1", "[::1]:30080", "--from-node"], &ip6tables, &[]);
    assert_eq!(got, local(), "{steps}");
    assert!(!steps.contains("nat KUBE-SERVICES #1"), "::1 is kept out of the NodePorts (`! -d ::1/128`):\n{steps}");

    let dump = upstream_ruleset_as_nft_json(&nobody, "explain-json6");
    let (got, steps) = explain_ipv6(&nobody, &["tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod"], &dump, &[]);
    assert_eq!(got, accepted(), "{steps}");
    assert!(steps.contains("ip6 kube-proxy nat-prerouting #1: jump services"), "{steps}");
    assert!(steps.contains("ip6 kube-proxy filter-forward #2: ct state new jump cluster-ips-check"), "{steps}");
    assert!(!steps.contains("ip kube-proxy"), "an IPv6 packet walks only the ip6 table:\n{steps}");
    let (got, steps) = explain_ipv6(&nobody, &["tcp", "10.244.0.9", "10.96.10.10:80", "--from-pod"], &dump, &[]);
    assert_eq!(got.len(), 3, "the IPv4 ClusterIP of storefront/web still has its 3 endpoints: {got:?}");
    assert!(!steps.contains("ip6 kube-proxy"), "an IPv4 packet walks only the ip table:\n{steps}");
}

#[test]
fn ipv6_flows_explained_from_our_ipv6_rendering() {
    testkit::netns::require_kernel();
    let nobody = Unprivileged::new();
    let manifests = nobody.write("cluster.yaml", dual_stack::MANIFESTS);
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
        let dump = nobody.write(&format!("{mode}.dump"), text);
        let cases: [(&[&str], &str); 3] = [
            (&["tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod"], "[fd00:244::5]:8080"),
            (&["tcp", "2001:db8::9", "[2001:db8::20]:80", "--from-outside"], "[fd00:244::6]:8080"),
            (&["tcp", "2001:db8::9", "[fd00:192::2]:30080", "--from-outside"], "[fd00:244::6]:8080"),
        ];
        for (packet, endpoint) in cases {
            let (got, steps) = explain_ipv6(&nobody, packet, &dump, &["--mode", mode]);
            assert_eq!(got, dnat(endpoint), "{mode} {packet:?}:\n{steps}");
        }
    }
}
