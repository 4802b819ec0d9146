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
//! `flows_ipvs_vm` checks real traffic against). `explain service --mode
//! ipvs --from-file` reads a Service's virtual servers, real servers,
//! persistence, bound addresses and ipset members from the plan, and a
//! plan edited by hand (a real server and a NodePort virtual server
//! deleted, a real server and a set member added) shows exactly those
//! lines as drift. Needs no kernel and no root (the real IPVS datapath is
//! checked by `flows_ipvs_vm` and `e2e_ipvs_vm`, the drift on a live IPVS
//! node by `explain_ipvs_vm`).

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

/// The reference's proxy flags with its config turned to IPVS mode (the
/// config file is written into `dir`).
fn ipvs_proxy_flags(dir: &std::path::Path) -> Vec<String> {
    let reference = flows::reference_dir();
    let config = std::fs::read_to_string(reference.join("iptables/kube-proxy-config.yaml")).unwrap();
    assert!(config.contains("mode: iptables"), "the reference config names its mode");
    let path = dir.join("config.yaml");
    std::fs::write(&path, config.replace("mode: iptables", "mode: ipvs")).unwrap();
    let manifests = reference.join("cluster.yaml").display().to_string();
    ["--config", &path.display().to_string(), "--manifests", &manifests, "--hostname-override", "node-a"].map(String::from).to_vec()
}

/// `explain service SERVICE --mode ipvs --from-file DUMP -o json [-- FLAGS]`.
fn explain_ipvs_service(service: &str, dump: &std::path::Path, proxy_flags: &[String]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"));
    command.args(["explain", "service", service, "--mode", "ipvs", "-o", "json", "--from-file"]).arg(dump).args(node_ips());
    if !proxy_flags.is_empty() {
        command.arg("--").args(proxy_flags);
    }
    command.output().unwrap()
}

fn json_of(output: &std::process::Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "explain service failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value.as_array().unwrap_or_else(|| panic!("not a list: {value}")).iter().map(|l| l.as_str().unwrap().to_string()).collect()
}

#[test]
fn ipvs_service_read_from_a_dump_and_hand_edits_are_drift() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ipvs_proxy_flags(dir.path());
    let dump = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .args(["explain", "dump", "--mode", "ipvs"])
        .args(node_ips())
        .arg("--")
        .args(&flags)
        .output()
        .unwrap();
    assert!(dump.status.success(), "explain dump: {}", String::from_utf8_lossy(&dump.stderr));
    let plan = String::from_utf8(dump.stdout).unwrap();
    let plan_file = dir.path().join("plan.dump");
    std::fs::write(&plan_file, &plan).unwrap();

    // storefront/cart: ClusterIP with ClientIP affinity (600 s)
    let cart = json_of(&explain_ipvs_service("storefront/cart", &plan_file, &flags));
    let family = &cart["families"][0];
    assert_eq!(cart["families"].as_array().map(Vec::len), Some(1), "{cart}");
    assert_eq!(family["family"], "IPv4", "{cart}");
    assert_eq!(cart["mode"], "ipvs", "{cart}");
    let grpc = &family["programmed"]["ports"]["grpc"];
    assert_eq!(grpc["affinity_seconds"], 600, "{cart}");
    assert_eq!(
        strings(&grpc["virtual_servers"]),
        ["TCP 10.96.10.20:7000 rr persistent 600 (cluster IP) -> 10.244.0.12:7000 weight 1, 10.244.1.12:7000 weight 1, 10.244.2.12:7000 weight 1"],
        "{cart}"
    );
    let rules = strings(&family["programmed"]["rules"]);
    for line in ["kube-ipvs0 address 10.96.10.20", "ipset KUBE-CLUSTER-IP 10.96.10.20,tcp:7000"] {
        assert!(rules.iter().any(|r| r == line), "{line} missing: {cart}");
    }
    assert_eq!(strings(&family["drift"]["missing"]), Vec::<String>::new(), "{cart}");
    assert_eq!(strings(&family["drift"]["extra"]), Vec::<String>::new(), "{cart}");

    // storefront/api: LoadBalancer, ETP Local, health-check node port 32070
    let api = json_of(&explain_ipvs_service("storefront/api", &plan_file, &flags));
    let http = &api["families"][0]["programmed"]["ports"]["http"];
    assert_eq!(http["health_check_node_port"], 32070, "{api}");
    assert_eq!(http["node_ports"], serde_json::json!([30700]), "{api}");
    assert_eq!(http["virtual_servers"].as_array().map(Vec::len), Some(5), "ClusterIP, LB IP, a NodePort on each of the 3 node addresses: {api}");

    // hand edits: a real server of the ClusterIP gone, the NodePort virtual
    // server gone, a real server and a set member added
    let edited = edit_plan(&plan);
    let edited_file = dir.path().join("edited.dump");
    std::fs::write(&edited_file, edited).unwrap();
    let drifted = json_of(&explain_ipvs_service("storefront/api", &edited_file, &flags));
    let drift = &drifted["families"][0]["drift"];
    assert_eq!(
        strings(&drift["missing"]),
        [
            "real server TCP 10.96.10.70:80 rr -> 10.244.1.18:8080 weight 1",
            "virtual server TCP 192.168.86.2:30700 rr",
            "real server TCP 192.168.86.2:30700 rr -> 10.244.0.18:8080 weight 1",
            "real server TCP 192.168.86.2:30700 rr -> 10.244.0.19:8080 weight 1",
        ],
        "{drifted}"
    );
    assert_eq!(
        strings(&drift["extra"]),
        ["real server TCP 192.0.2.20:80 rr -> 10.244.9.9:8080 weight 5", "ipset KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.20,tcp:80,10.9.9.0/24"],
        "{drifted}"
    );
    let unchanged = json_of(&explain_ipvs_service("storefront/cart", &edited_file, &flags));
    assert_eq!(strings(&unchanged["families"][0]["drift"]["missing"]), Vec::<String>::new(), "another Service's edits are not its drift: {unchanged}");

    // without the cluster state nothing says which virtual servers are the Service's
    let alone = explain_ipvs_service("storefront/api", &plan_file, &[]);
    assert_eq!(alone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("give the proxy's flags after `--`"), "{}", String::from_utf8_lossy(&alone.stderr));
}

/// The plan with storefront/api's hand edits.
fn edit_plan(plan: &str) -> String {
    let mut out = String::new();
    let mut current = "";
    let mut skipping = false;
    for line in plan.lines() {
        if !line.starts_with("  ->") {
            current = line;
            skipping = line.starts_with("TCP  192.168.86.2:30700 ");
        }
        let deleted = skipping || (current.starts_with("TCP  10.96.10.70:80 ") && line.contains("10.244.1.18:8080"));
        if !deleted {
            out.push_str(line);
            out.push('\n');
        }
        if line.starts_with("TCP  192.0.2.20:80 ") {
            out.push_str("  -> 10.244.9.9:8080 Masq 5\n");
        }
        if line == "# ipsets" {
            out.push_str("add KUBE-LOAD-BALANCER-SOURCE-CIDR 192.0.2.20,tcp:80,10.9.9.0/24\n");
        }
    }
    out
}
