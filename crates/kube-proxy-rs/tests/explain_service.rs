//! `kube-proxy-rs explain service` against a kernel, and its drift check:
//! upstream v1.36's own rules for the reference scenario loaded in a
//! network namespace (iptables-legacy: `iptables-save.txt`; nftables:
//! `ruleset.nft`) hold exactly what kube-proxy-rs renders for the same
//! `cluster.yaml` and config (no drift); then a rule deleted by hand is
//! reported missing and a rule added by hand extra, naming them; and
//! `explain packet` follows the kernel (the Service's ClusterIP no longer
//! leads anywhere once its map element is deleted).
//! Dual-stack, live: the binary programs the dual-stack node of
//! `binary_dual_stack.rs` (iptables and nftables mode); `explain packet`
//! on the IPv6 ClusterIP reads the IPv6 side (`ip6tables-save`, table
//! `ip6 kube-proxy`) and names the IPv6 endpoint, `explain service` shows
//! both families of the dual-stack Service without drift, and once the
//! proxy is stopped and the IPv6 rule or map element deleted by hand, only
//! the IPv6 family reports it missing.
//! Needs root, iptables-legacy, nfacct and nft; without them it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/dual_stack.rs"]
mod dual_stack;
#[path = "support/proxy.rs"]
mod proxy;

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

/// The proxy flags of the dual-stack node in `mode`.
fn dual_stack_flags(manifests: &std::path::Path, mode: &str) -> Vec<String> {
    let manifests = manifests.display().to_string();
    [
        "--proxy-mode", mode, "--manifests", &manifests, "--hostname-override", "node-a", "--cluster-cidr",
        "10.244.0.0/16,fd00:244::/64", "--iptables-backend", "legacy", "--healthz-bind-address", "127.0.0.1:10256",
        "--metrics-bind-address", "127.0.0.1:10249",
    ]
    .map(String::from)
    .to_vec()
}

/// `explain ARGS -o json` in `ns`, parsed.
fn explain_json(ns: &Netns, args: &[&str], proxy_flags: &[String]) -> serde_json::Value {
    let mut command = ns.command(env!("CARGO_BIN_EXE_kube-proxy-rs"));
    command.arg("explain").args(args).args(["-o", "json"]);
    if !proxy_flags.is_empty() {
        command.arg("--").args(proxy_flags);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "explain {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The DNAT targets of an `explain packet` answer.
fn dnat_targets(answer: &serde_json::Value) -> Vec<String> {
    let outcomes = answer["outcomes"].as_array().unwrap_or_else(|| panic!("no outcomes: {answer}"));
    outcomes.iter().filter(|o| o["kind"] == "dnat").map(|o| o["to"].as_str().unwrap().to_string()).collect()
}

/// Each family's drift of `report`, by family name.
fn family_drifts(report: &serde_json::Value) -> Vec<(String, Vec<String>, Vec<String>)> {
    let families = report["families"].as_array().unwrap_or_else(|| panic!("no families: {report}"));
    families
        .iter()
        .map(|f| {
            let list = |key: &str| f["drift"][key].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect::<Vec<_>>();
            (f["family"].as_str().unwrap().to_string(), list("missing"), list("extra"))
        })
        .collect()
}

/// The dual-stack node in `mode`: the IPv6 ClusterIP explained live,
/// both families of shop/web without drift, then `delete` (a shell
/// command, run once the proxy is stopped) reported as the IPv6 family's
/// drift, `missing` exactly.
fn dual_stack_explained_live(mode: &str, delete: impl FnOnce(&Netns) -> String) {
    let ns = dual_stack::dual_stack_node(&format!("explain-ds-{}", &mode[..3]));
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("cluster.yaml");
    std::fs::write(&manifests, dual_stack::MANIFESTS).unwrap();
    let flags = dual_stack_flags(&manifests, mode);
    let mut proxy = proxy::Proxy::start_in(&ns, &flags);
    let synced = if mode == "nftables" { "synced nftables rules" } else { "synced iptables rules" };
    let mut unsynced = vec!["IPv4", "IPv6"];
    while !unsynced.is_empty() {
        let line = proxy.wait_for(synced);
        unsynced.retain(|family| !line.contains(&format!("{synced} ip_family={family}")));
    }
    let packet = explain_json(&ns, &["packet", "tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod"], &[]);
    assert_eq!(packet["mode"], mode, "{packet}");
    assert_eq!(dnat_targets(&packet), ["[fd00:244::5]:8080"], "the IPv6 ClusterIP leads to the IPv6 endpoint: {packet}");
    let packet4 = explain_json(&ns, &["packet", "tcp", "10.244.0.9", "10.96.0.10:80", "--from-pod"], &[]);
    assert_eq!(dnat_targets(&packet4), ["10.244.0.5:8080"], "{packet4}");

    let report = explain_json(&ns, &["service", "shop/web"], &flags);
    let clean = family_drifts(&report);
    assert_eq!(clean, [("IPv4".to_string(), vec![], vec![]), ("IPv6".to_string(), vec![], vec![])], "{report}");
    let endpoints = |i: usize| report["families"][i]["programmed"]["ports"]["http"]["endpoints"].clone();
    assert_eq!(endpoints(0), serde_json::json!(["10.244.0.5:8080"]), "{report}");
    assert_eq!(endpoints(1), serde_json::json!(["[fd00:244::5]:8080"]), "{report}");
    let web6 = explain_json(&ns, &["service", "shop/web6"], &flags);
    assert_eq!(family_drifts(&web6), [("IPv6".to_string(), vec![], vec![])], "an IPv6-only Service has one family: {web6}");

    proxy.kill();
    let deleted = delete(&ns);
    let report = explain_json(&ns, &["service", "shop/web"], &flags);
    let drifted = family_drifts(&report);
    assert_eq!(drifted, [("IPv4".to_string(), vec![], vec![]), ("IPv6".to_string(), vec![deleted], vec![])], "{report}");
}

#[test]
fn dual_stack_service_explained_live_in_nftables_mode() {
    dual_stack_explained_live("nftables", |ns| {
        // one IPv6 endpoint, ClusterIP only: DNATed straight from `services`
        ns.exec("nft", &["delete", "element", "ip6", "kube-proxy", "service-ips-direct", "{ fd00:96::10 . tcp . 80 }"]).unwrap();
        "map service-ips-direct: fd00:96::10 . tcp . 80 comment \"shop/web:http\" : fd00:244::5 . 8080".to_string()
    });
}

#[test]
fn dual_stack_service_explained_live_in_iptables_mode() {
    dual_stack_explained_live("iptables", |ns| {
        let save = ns.exec("ip6tables-legacy-save", &["-t", "nat"]).unwrap();
        let rule = save.lines().find(|l| l.contains("shop/web:http -> [fd00:244::5]:8080")).unwrap_or_else(|| panic!("{save}"));
        let spec = rule.strip_prefix("-A ").unwrap();
        ns.exec("sh", &["-c", &format!("ip6tables-legacy -t nat -D {spec}")]).unwrap();
        format!("-t nat -A {spec}")
    });
}
