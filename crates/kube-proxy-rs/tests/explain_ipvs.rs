//! `kube-proxy-rs explain` in IPVS mode, on IPVS mode's plan for the
//! upstream reference scenario: `explain dump --mode ipvs` writes what the
//! proxy would program for `cluster.yaml` on node-a (virtual servers, the
//! addresses on kube-ipvs0, ipsets, companion rules with the jumps from
//! the built-in chains) in our dump format; `explain packet --from-file`
//! then walks every reference flow through it (iptables rules, ipsets and
//! IPVS between INPUT/OUTPUT and POSTROUTING). Each flow must get
//! upstream's iptables-mode verdict, except where IPVS mode works
//! otherwise by design — each such flow is listed, with the verdict IPVS
//! mode gives and why, in `testkit::flows::ipvs_differences` (the list
//! `flows_ipvs_vm` checks real traffic against). Needs no kernel and no
//! root (the real IPVS datapath is checked by `flows_ipvs_vm` and
//! `e2e_ipvs_vm`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use testkit::flows::{self, NODE_A_ADDRESSES, check_explained, explain_args, explained_outcomes, ipvs_difference};

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

    let flows = flows::ipvs_flows().unwrap();
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
        if let Err(e) = check_explained(flow, &got) {
            let why = ipvs_difference(&flow.id).map(|why| format!(" (IPVS mode by design: {why})")).unwrap_or_default();
            failures.push(format!("{}{why}\n    {e}\n{stdout}", flow.label()));
        }
    }
    assert!(failures.is_empty(), "{} of {} flows:\n{}", failures.len(), flows.len(), failures.join("\n"));
    let persistent = text.lines().find(|l| l.contains("10.96.10.20:7000")).unwrap_or_default();
    assert!(persistent.contains("persistent 600"), "session affinity is IPVS persistence: {persistent}");
}
