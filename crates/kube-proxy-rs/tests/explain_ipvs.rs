//! `kube-proxy-rs explain` in IPVS mode, on IPVS mode's plan for the
//! upstream reference scenario: `explain dump --mode ipvs` writes what the
//! proxy would program for `cluster.yaml` on node-a (virtual servers, the
//! addresses on kube-ipvs0, ipsets, companion rules with the jumps from
//! the built-in chains) in our dump format; `explain packet --from-file`
//! then walks every reference flow through it (iptables rules, ipsets and
//! IPVS between INPUT/OUTPUT and POSTROUTING). Each flow must get
//! upstream's iptables-mode verdict, except where IPVS mode works
//! otherwise by design — each such flow is listed with the answer IPVS
//! mode gives and why. Needs no kernel and no root (the real IPVS
//! datapath is checked by `e2e_ipvs_vm`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Command;
use testkit::flows::{self, NODE_A_ADDRESSES, check_explained, explain_args, explained_outcomes};
use testkit::tracer::{Outcome, describe_outcomes};

/// Flows whose IPVS-mode answer differs from iptables mode's: id, the
/// endings IPVS mode gives, and why.
fn ipvs_differences() -> Vec<(&'static str, BTreeSet<Outcome>, &'static str)> {
    let dnat = |to: &str| Outcome::Dnat { to: to.parse().unwrap(), masquerade: false };
    vec![
        ("F05", [Outcome::Reject].into(), "ClusterIPs are bound to kube-ipvs0; KUBE-IPVS-FILTER rejects their other ports"),
        ("F13", [Outcome::Local].into(), "no virtual server on 127.0.0.1: localhost NodePorts are iptables mode's"),
        ("F18", [Outcome::Local].into(), "no virtual server on 127.0.0.1: localhost NodePorts are iptables mode's"),
        ("F16", [dnat("10.244.0.14:8443")].into(), "one virtual server per NodePort: pods get only the local endpoints of an ETP Local service"),
        ("F63", [dnat("10.244.0.29:8080")].into(), "one virtual server per LB IP: pods get only the local endpoints of an ETP Local service"),
        ("F38", [dnat("10.244.0.18:8080"), dnat("10.244.0.19:8080")].into(), "one virtual server per LB IP: pods get only the local endpoints of an ETP Local service"),
        ("F39", [dnat("10.244.0.18:8080"), dnat("10.244.0.19:8080")].into(), "one virtual server per LB IP: the node gets only the local endpoints, unmasqueraded (KUBE-NODE-PORT / LB -LOCAL sets return before KUBE-MARK-MASQ)"),
        ("F17", [dnat("10.244.0.14:8443")].into(), "one virtual server per NodePort: the node gets only the local endpoints of an ETP Local service, unmasqueraded"),
        ("F22", [dnat("10.244.1.15:8080"), dnat("10.244.2.15:8080")].into(), "ETP Local NodePort from the node itself: not masqueraded in IPVS mode"),
        ("F27", [dnat("10.244.1.16:9200"), dnat("10.244.2.16:9200")].into(), "ETP Local LB IP from the node itself: not masqueraded in IPVS mode"),
        ("F50", [Outcome::Reject].into(), "a virtual server without real servers answers ICMP port unreachable"),
        ("F51", [Outcome::Reject].into(), "a virtual server without real servers answers ICMP port unreachable"),
        ("F20", [dnat("10.244.1.15:8080"), dnat("10.244.2.15:8080")].into(), "our IPVS plan keeps every endpoint on an ETP Local NodePort without local endpoints"),
        ("F24", [dnat("10.244.1.16:9200"), dnat("10.244.2.16:9200")].into(), "our IPVS plan keeps every endpoint on an ETP Local LB IP without local endpoints"),
        ("F25", [dnat("10.244.1.16:9200"), dnat("10.244.2.16:9200")].into(), "our IPVS plan keeps every endpoint on an ETP Local NodePort without local endpoints"),
    ]
}

fn node_ips() -> Vec<String> {
    NODE_A_ADDRESSES.iter().flat_map(|ip| ["--node-ip".to_string(), ip.to_string()]).collect()
}

#[test]
fn every_flow_explained_on_ipvs_modes_plan() {
    let dir = flows::reference_dir();
    let dump = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .args(["explain", "dump", "--mode", "ipvs"])
        .args(node_ips())
        .arg("--")
        .arg("--config")
        .arg(dir.join("iptables/kube-proxy-config.yaml"))
        .arg("--manifests")
        .arg(dir.join("cluster.yaml"))
        .args(["--hostname-override", "node-a"])
        .output()
        .unwrap();
    assert!(dump.status.success(), "explain dump: {}", String::from_utf8_lossy(&dump.stderr));
    let text = String::from_utf8(dump.stdout).unwrap();
    assert!(text.starts_with("# virtual servers"), "{text}");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &text).unwrap();

    let differences = ipvs_differences();
    let flows = flows::iptables_flows().unwrap();
    let mut failures = Vec::new();
    for flow in &flows {
        let mut args = explain_args(flow);
        args.extend(["--mode".to_string(), "ipvs".to_string(), "--from-file".to_string(), file.path().display().to_string()]);
        args.extend(node_ips());
        let output = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs")).args(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let got = match explained_outcomes(&stdout) {
            Ok(got) => got,
            Err(e) => {
                failures.push(format!("{}: {e:#} ({})", flow.label(), String::from_utf8_lossy(&output.stderr)));
                continue;
            }
        };
        let verdict = match differences.iter().find(|(id, ..)| *id == flow.id) {
            Some((_, ipvs, _)) if got == *ipvs => Ok(()),
            Some((_, ipvs, why)) => Err(format!("IPVS mode should give {} ({why}), explain says {}", describe_outcomes(ipvs), describe_outcomes(&got))),
            None => check_explained(flow, &got),
        };
        if let Err(e) = verdict {
            failures.push(format!("{}\n    {e}\n{stdout}", flow.label()));
        }
    }
    assert!(failures.is_empty(), "{} of {} flows:\n{}", failures.len(), flows.len(), failures.join("\n"));
    let persistent = text.lines().find(|l| l.contains("10.96.10.20:7000")).unwrap_or_default();
    assert!(persistent.contains("persistent 600"), "session affinity is IPVS persistence: {persistent}");
}
