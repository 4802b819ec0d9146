//! `kube-proxy-rs explain service` against a kernel, and its drift check:
//! upstream v1.36's own rules for the reference scenario loaded in a
//! network namespace (iptables-legacy: `iptables-save.txt`; nftables:
//! `ruleset.nft`) hold exactly what kube-proxy-rs renders for the same
//! `cluster.yaml` and config (no drift); then a rule deleted by hand is
//! reported missing and a rule added by hand extra, naming them; and
//! `explain packet` follows the kernel (the Service's ClusterIP no longer
//! leads anywhere once its map element is deleted).
//! Needs root, iptables-legacy, nfacct and nft; without them it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::process::Stdio;
use testkit::flows;
use testkit::netns::Netns;

/// `explain service SERVICE -o json -- <the reference's proxy flags>` in
/// `ns`, parsed.
fn explain_service(ns: &Netns, service: &str, mode: &str, extra: &[&str]) -> serde_json::Value {
    let dir = flows::reference_dir();
    let config = dir.join(format!("{mode}/kube-proxy-config.yaml"));
    let manifests = dir.join("cluster.yaml");
    let output = ns
        .command(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .args(["explain", "service", service, "-o", "json", "--node-ip", "192.168.86.2"])
        .args(extra)
        .arg("--")
        .arg("--config")
        .arg(&config)
        .arg("--manifests")
        .arg(&manifests)
        .args(["--hostname-override", "node-a"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "explain service failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn lines(report: &serde_json::Value, key: &str) -> Vec<String> {
    report["families"][0]["drift"][key].as_array().unwrap_or_else(|| panic!("no drift.{key}: {report}")).iter().map(|l| l.as_str().unwrap().to_string()).collect()
}

#[test]
fn iptables_rule_deleted_or_added_by_hand_is_drift() {
    testkit::netns::require_kernel();
    let ns = Netns::new("explain-ipt").unwrap();
    for counter in ["localhost_nps_accepted_pkts", "ct_state_invalid_dropped_pkts"] {
        ns.exec("nfacct", &["add", counter]).unwrap();
    }
    let save = File::open(flows::reference_dir().join("iptables/iptables-save.txt")).unwrap();
    let restored = ns.command("iptables-legacy-restore").stdin(Stdio::from(save)).output().unwrap();
    assert!(restored.status.success(), "restore upstream's rules: {}", String::from_utf8_lossy(&restored.stderr));
    let backend = ["--iptables-backend", "legacy"];

    let clean = explain_service(&ns, "storefront/web", "iptables", &backend);
    assert_eq!(lines(&clean, "missing"), Vec::<String>::new(), "{clean}");
    assert_eq!(lines(&clean, "extra"), Vec::<String>::new(), "{clean}");
    let endpoints = &clean["families"][0]["programmed"]["ports"]["http"]["endpoints"];
    assert_eq!(endpoints.as_array().map(Vec::len), Some(3), "{clean}");

    let deleted = r#"-m comment --comment "storefront/web:http -> 10.244.2.11:8080" -j KUBE-SEP-MDDRPMLJIV5FU4DP"#;
    ns.exec("sh", &["-c", &format!("iptables-legacy -t nat -D KUBE-SVC-4EICBWO4A2XU3KYK {deleted}")]).unwrap();
    let added = r#"-s 10.9.9.9/32 -m comment --comment "storefront/web:http sneaky" -j DROP"#;
    ns.exec("sh", &["-c", &format!("iptables-legacy -t filter -I KUBE-SERVICES {added}")]).unwrap();

    let drifted = explain_service(&ns, "storefront/web", "iptables", &backend);
    assert_eq!(lines(&drifted, "missing"), [format!("-t nat -A KUBE-SVC-4EICBWO4A2XU3KYK {deleted}")], "{drifted}");
    assert_eq!(lines(&drifted, "extra"), [format!("-t filter -A KUBE-SERVICES {added}")], "{drifted}");
}

#[test]
fn nftables_element_deleted_or_rule_added_by_hand_is_drift() {
    testkit::netns::require_kernel();
    let ns = Netns::new("explain-nft").unwrap();
    let ruleset = flows::reference_dir().join("nftables/ruleset.nft");
    ns.exec("nft", &["-f", ruleset.to_str().unwrap()]).unwrap();

    let clean = explain_service(&ns, "storefront/web", "nftables", &[]);
    assert_eq!(lines(&clean, "missing"), Vec::<String>::new(), "{clean}");
    assert_eq!(lines(&clean, "extra"), Vec::<String>::new(), "{clean}");
    let before = explain_packet(&ns);
    assert!(before.contains("10.244.1.11:8080"), "{before}");

    ns.exec("nft", &["delete", "element", "ip", "kube-proxy", "service-ips", "{ 10.96.10.10 . tcp . 80 }"]).unwrap();
    let chain = "service-Q2NDXW5G-storefront/web/tcp/http";
    ns.exec("nft", &["insert", "rule", "ip", "kube-proxy", chain, "ip", "saddr", "10.9.9.9", "drop"]).unwrap();

    let drifted = explain_service(&ns, "storefront/web", "nftables", &[]);
    assert_eq!(lines(&drifted, "missing"), [format!("map service-ips: 10.96.10.10 . tcp . 80 : goto {chain}")], "{drifted}");
    assert_eq!(lines(&drifted, "extra"), [format!("chain {chain}: ip saddr 10.9.9.9 drop")], "{drifted}");
    let after = explain_packet(&ns);
    assert!(!after.contains("DNAT"), "the ClusterIP leads nowhere once its element is gone:\n{after}");
}

/// `explain packet` for a pod's connection to storefront/web's ClusterIP.
fn explain_packet(ns: &Netns) -> String {
    let output = ns
        .command(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .args(["explain", "packet", "tcp", "10.244.0.200", "10.96.10.10:80", "--from-pod", "--node-ip", "192.168.86.2"])
        .output()
        .unwrap();
    assert!(output.status.success(), "explain packet: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}
