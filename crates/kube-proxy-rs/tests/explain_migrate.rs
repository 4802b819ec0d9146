//! `kube-proxy-rs explain migrate` on the upstream reference scenario,
//! without a kernel: the current rules from a dump (IPVS mode's plan for
//! `cluster.yaml` on node-a, `explain dump --mode ipvs`; upstream's own
//! `iptables-save.txt`), the new mode's rules rendered from the same
//! flags. Every probe the report makes that is one of the reference's
//! flows (same sender, source, destination and protocol) must have, now,
//! the flow's verdict in the current mode (IPVS: `testkit::flows::
//! ipvs_flows`, upstream's iptables verdicts except the listed IPVS
//! differences; iptables: upstream's run) and, after, upstream's verdict
//! in the new mode (its `flows.json` of that mode): so each difference
//! and each "unchanged" it reports for those flows is what upstream's
//! kube-proxy did in both modes. The known differences are asserted by
//! name (ETP Local without a local endpoint, localhost NodePorts, the
//! NodePort addresses, ping, the IPVS scheduler and weights after a hand
//! edit), and Services without any as "no difference". Real traffic
//! before and after a switch is `flows_ipvs_vm`'s part.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use testkit::flows::{self, FlowCase, FlowSource, NODE_A_ADDRESSES, explained_outcomes};
use testkit::tracer::Outcome;

const BINARY: &str = env!("CARGO_BIN_EXE_kube-proxy-rs");

fn node_ips() -> Vec<String> {
    NODE_A_ADDRESSES.iter().flat_map(|ip| ["--node-ip".to_string(), ip.to_string()]).collect()
}

/// The reference's proxy flags, its config turned to `mode`.
fn proxy_flags(dir: &Path, mode: &str) -> Vec<String> {
    let reference = flows::reference_dir();
    let config = std::fs::read_to_string(reference.join("iptables/kube-proxy-config.yaml")).unwrap();
    assert!(config.contains("mode: iptables"), "the reference config names its mode");
    let path = dir.join(format!("config-{mode}.yaml"));
    std::fs::write(&path, config.replace("mode: iptables", &format!("mode: {mode}"))).unwrap();
    let manifests = reference.join("cluster.yaml").display().to_string();
    ["--config", &path.display().to_string(), "--manifests", &manifests, "--hostname-override", "node-a"].map(String::from).to_vec()
}

/// IPVS mode's plan for the reference, as a dump file.
fn ipvs_plan(dir: &Path) -> PathBuf {
    let out = Command::new(BINARY).args(["explain", "dump", "--mode", "ipvs"]).args(node_ips()).arg("--").args(proxy_flags(dir, "ipvs")).output().unwrap();
    assert!(out.status.success(), "explain dump: {}", String::from_utf8_lossy(&out.stderr));
    let path = dir.join("ipvs.dump");
    std::fs::write(&path, out.stdout).unwrap();
    path
}

/// `explain migrate --to TO --from-file DUMP` as the reference's flows
/// send (pod 10.244.0.200, outside 172.20.0.10 on ext0); its JSON, or its
/// text with `text`.
fn migrate(to: &str, dump: &Path, flags: &[String], json: bool) -> String {
    let mut command = Command::new(BINARY);
    command.args(["explain", "migrate", "--to", to, "--from-file"]).arg(dump).args(node_ips());
    command.args(["--pod-ip", "10.244.0.200", "--client-ip", "172.20.0.10", "--client-interface", "ext0"]);
    if json {
        command.args(["-o", "json"]);
    }
    let out = command.arg("--").args(flags).output().unwrap();
    assert!(out.status.success(), "explain migrate --to {to}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// One probe of the report with its endings now and after.
struct Probed {
    service: String,
    probe: Value,
    now: BTreeSet<Outcome>,
    after: BTreeSet<Outcome>,
    why: Option<String>,
}

fn outcomes(list: &Value) -> BTreeSet<Outcome> {
    explained_outcomes(&serde_json::json!({ "outcomes": list }).to_string()).unwrap()
}

fn probed(report: &Value) -> Vec<Probed> {
    let mut out = Vec::new();
    for service in report["services"].as_array().unwrap() {
        let name = service["service"].as_str().unwrap().to_string();
        for d in service["differences"].as_array().unwrap() {
            let why = d["why"].as_str().map(str::to_string);
            out.push(Probed { service: name.clone(), probe: d["probe"].clone(), now: outcomes(&d["before"]), after: outcomes(&d["after"]), why });
        }
        for u in service["unchanged"].as_array().unwrap() {
            let same = outcomes(&u["outcomes"]);
            out.push(Probed { service: name.clone(), probe: u["probe"].clone(), now: same.clone(), after: same, why: None });
        }
    }
    out
}

/// Whether the probe is the flow's first packet.
fn is_flow(probe: &Value, flow: &FlowCase) -> bool {
    let sender = match flow.from {
        FlowSource::Pod(_) => "pod",
        FlowSource::Node => "node",
        FlowSource::External(_) => "outside",
        FlowSource::Endpoint(_) => return false,
    };
    probe["sender"] == sender
        && probe["source"] == flow.source().to_string()
        && probe["destination"] == flow.destination.to_string()
        && probe["protocol"] == flow.protocol.to_string()
}

/// Every probe that is a reference flow must end now as `before` says and
/// after as `after` says; returns how many were.
fn check_against_flows(probes: &[Probed], before: &[FlowCase], after: &[FlowCase]) -> usize {
    let mut failures = Vec::new();
    let mut matched = 0;
    for p in probes {
        let Some(flow) = before.iter().find(|f| is_flow(&p.probe, f)) else { continue };
        let then = after.iter().find(|f| f.id == flow.id).unwrap_or_else(|| panic!("{} in one mode's flows only", flow.id));
        matched += 1;
        if p.now != flow.expected_outcomes() {
            failures.push(format!("{} now: report {:?}, the flow's verdict {:?}", flow.label(), p.now, flow.expected_outcomes()));
        }
        if p.after != then.expected_outcomes() {
            failures.push(format!("{} after: report {:?}, upstream's new mode {:?}", flow.label(), p.after, then.expected_outcomes()));
        }
    }
    assert!(failures.is_empty(), "{} of {matched} probes that are reference flows:\n{}", failures.len(), failures.join("\n"));
    matched
}

fn service<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["services"].as_array().unwrap().iter().find(|s| s["service"] == name).unwrap_or_else(|| panic!("no {name} in {report}"))
}

fn topics(service: &Value) -> Vec<String> {
    service["notes"].as_array().unwrap().iter().map(|n| n["topic"].as_str().unwrap().to_string()).collect()
}

fn whys(probes: &[Probed], service: &str) -> Vec<String> {
    probes.iter().filter(|p| p.service == service).filter_map(|p| p.why.clone()).collect()
}

#[test]
fn ipvs_to_nftables_and_iptables_on_the_reference_agree_with_upstreams_flows() {
    let dir = tempfile::tempdir().unwrap();
    let dump = ipvs_plan(dir.path());
    let flags = proxy_flags(dir.path(), "ipvs");
    let ipvs = flows::ipvs_flows().unwrap();
    for to in ["nftables", "iptables"] {
        let report: Value = serde_json::from_str(&migrate(to, &dump, &flags, true)).unwrap();
        assert_eq!((report["from"].as_str(), report["to"].as_str()), (Some("ipvs"), Some(to)));
        let probes = probed(&report);
        let matched = check_against_flows(&probes, &ipvs, &flows::load_flows(to).unwrap());
        eprintln!("ipvs -> {to}: {} probes, {matched} of them reference flows, as upstream's {to} run", probes.len());
        assert!(matched >= 40, "only {matched} probes are reference flows");

        // ETP Local without a local endpoint (F20: storefront/inventory's NodePort from outside)
        let inventory = whys(&probes, "storefront/inventory");
        assert!(inventory.iter().any(|w| w.contains("without a local endpoint") && w.contains("97081")), "{inventory:?}");
        // the ClusterIPs' other ports: rejected in IPVS and nftables mode, routed on in iptables mode
        // (one difference for all)
        let node_notes: Vec<&str> = report["node"].as_array().unwrap().iter().map(|n| n["topic"].as_str().unwrap()).collect();
        assert_eq!(report["cluster_ip_other_ports"].is_null(), to == "nftables", "{}", report["cluster_ip_other_ports"]);
        // nodePortAddresses unset: every address in IPVS and iptables mode, the primary one in nftables mode
        assert_eq!(node_notes.contains(&"nodePortAddresses"), to == "nftables", "{node_notes:?}");
        let localhost = probes.iter().filter(|p| p.probe["target"] == "localhost-node-port").collect::<Vec<_>>();
        assert!(!localhost.is_empty());
        for p in localhost {
            assert_eq!(p.now, BTreeSet::from([Outcome::Local]), "no localhost NodePort in IPVS mode");
            assert_eq!(p.after == p.now, to == "nftables", "localhost NodePort after the switch to {to}: {:?}", p.after);
            assert_eq!(p.why.is_some(), to == "iptables");
        }
        // session affinity: ClientIP, per virtual server in IPVS mode
        assert!(topics(service(&report, "storefront/cart")).contains(&"session affinity".to_string()));
    }
}

#[test]
fn text_report_names_each_service_and_its_differences() {
    let dir = tempfile::tempdir().unwrap();
    let dump = ipvs_plan(dir.path());
    let text = migrate("nftables", &dump, &proxy_flags(dir.path(), "ipvs"), false);
    assert!(text.starts_with("migrate: ipvs mode -> nftables mode\n"), "{text}");
    assert!(text.contains("service storefront/inventory: "), "{text}");
    assert!(text.contains("    why:   externalTrafficPolicy: Local without a local endpoint"), "{text}");
    assert!(text.contains("  nodePortAddresses: ipvs mode serves NodePorts on every local address, nftables mode on the node's primary addresses only"), "{text}");
}

#[test]
fn a_scheduler_and_weights_set_by_hand_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let dump = ipvs_plan(dir.path());
    let text = std::fs::read_to_string(&dump).unwrap();
    // storefront/web's ClusterIP: lc, and one real server weighted 3
    let edited = text.replace("TCP  10.96.10.10:80 rr", "TCP  10.96.10.10:80 lc").replacen("  -> 10.244.0.11:8080 Masq 1", "  -> 10.244.0.11:8080 Masq 3", 1);
    assert_ne!(edited, text, "the plan has storefront/web's virtual server");
    std::fs::write(&dump, edited).unwrap();
    let report: Value = serde_json::from_str(&migrate("nftables", &dump, &proxy_flags(dir.path(), "ipvs"), true)).unwrap();
    let web = service(&report, "storefront/web");
    let notes = web["notes"].as_array().unwrap();
    let scheduler = notes.iter().find(|n| n["topic"] == "scheduler").unwrap_or_else(|| panic!("{web}"));
    assert!(scheduler["why"].as_str().unwrap().contains("lc (least connections"), "{scheduler}");
    assert!(notes.iter().any(|n| n["topic"] == "weights"), "{web}");
    let cart = service(&report, "storefront/cart");
    assert!(!topics(cart).contains(&"scheduler".to_string()), "rr is not named: {cart}");
}

#[test]
fn iptables_to_nftables_from_upstreams_dump_says_no_difference_for_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let reference = flows::reference_dir();
    let save = reference.join("iptables/iptables-save.txt");
    let flags = proxy_flags(dir.path(), "iptables");
    let report: Value = serde_json::from_str(&migrate("nftables", &save, &flags, true)).unwrap();
    assert_eq!(report["from"], "iptables");
    let probes = probed(&report);
    let matched = check_against_flows(&probes, &flows::load_flows("iptables").unwrap(), &flows::load_flows("nftables").unwrap());
    eprintln!("iptables -> nftables: {} probes, {matched} of them reference flows, as upstream's runs", probes.len());
    assert!(matched >= 40, "only {matched} probes are reference flows");
    let same: Vec<&str> = report["services"].as_array().unwrap().iter().filter(|s| s["differences"].as_array().unwrap().is_empty() && s["notes"].as_array().unwrap().is_empty()).map(|s| s["service"].as_str().unwrap()).collect();
    assert!(same.contains(&"storefront/web"), "a plain ClusterIP service does not change: {same:?}");
    let text = migrate("nftables", &save, &flags, false);
    assert!(text.contains("service storefront/web: no difference ("), "{text}");
    let node_notes: Vec<&str> = report["node"].as_array().unwrap().iter().map(|n| n["topic"].as_str().unwrap()).collect();
    assert!(node_notes.contains(&"conntrack INVALID"), "upstream's iptables dump drops INVALID: {node_notes:?}");
    assert!(node_notes.contains(&"nodePortAddresses"), "{node_notes:?}");
    let other = &report["cluster_ip_other_ports"];
    assert_eq!(outcomes(&other["before"]), BTreeSet::from([Outcome::Accept { masquerade: false }]), "{other}");
    assert_eq!(outcomes(&other["after"]), BTreeSet::from([Outcome::Reject]), "{other}");
}
