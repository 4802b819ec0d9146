//! The binary in IPVS mode on a dual-stack node, on a kernel with IPVS:
//! this machine's kernel has none, so the test boots the small VM of
//! `scripts/ipvs-vm.sh` (as `e2e_ipvs_vm.rs` does) carrying this test
//! binary and the kube-proxy-rs binary, and runs itself there. Inside, a
//! network namespace plays the dual-stack node of `binary_dual_stack.rs`
//! (same manifests): both families' virtual servers, real servers,
//! `kube-ipvs0` addresses and ipsets (`KUBE-6-…` for IPv6) are there, each
//! family's only; the node health answers have upstream's dual-stack keys;
//! `--cleanup` removes both families' virtual servers and ipsets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/dual_stack.rs"]
mod dual_stack;
#[path = "support/proxy.rs"]
mod proxy;

use dual_stack::{MANIFESTS, dual_stack_node, get, keys_of_body};
use proxy::Proxy;
use testkit::vm::VmRun;
use std::path::Path;

/// Where the VM puts the proxy binary (`ipvs-vm.sh --add`).
const VM_BINARY: &str = "/payload/kube-proxy-rs";
/// Printed inside the VM once every check passed.
const PASSED: &str = "DUAL-STACK-IPVS-VM: ALL PASSED";
/// Upstream's dual-stack `/healthz` answer (headers, then the body).
const REFERENCE_HEALTHZ: &str = include_str!("../../../testdata/upstream-v1.36/iptables/healthz/node-healthz.txt");
const NODE_HEALTH: &str = "127.0.0.1:10256";

#[test]
fn dual_stack_ipvs_in_a_vm() {
    if testkit::vm::inside() {
        check_in_vm();
        println!("{PASSED}");
        return;
    }
    testkit::netns::require_kernel();
    boot_vm();
}

/// Host side: boots the VM with this test binary as the payload; fails with
/// the guest console unless every check passed there.
fn boot_vm() {
    let run = VmRun::new("dual_stack_ipvs_in_a_vm", "dual-stack IPVS").with_file(env!("CARGO_BIN_EXE_kube-proxy-rs"));
    let console = run.boot(PASSED);
    for line in console.lines().filter(|l| l.starts_with("TCP ") || l.trim_start().starts_with("->")) {
        println!("{line}");
    }
}

/// Inside the VM: the proxy in IPVS mode on the dual-stack node.
fn check_in_vm() {
    if !Path::new("/var/run").exists() {
        std::fs::create_dir_all("/var").unwrap();
        std::os::unix::fs::symlink("/run", "/var/run").unwrap();
    }
    let ns = dual_stack_node("dsipvs");
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("cluster.yaml");
    std::fs::write(&manifests, MANIFESTS).unwrap();
    let mut command = ns.command(VM_BINARY);
    command.args(args(&manifests));
    let mut proxy = Proxy::start(command);
    let mut missing = vec!["IPv4", "IPv6"];
    while !missing.is_empty() {
        let line = proxy.wait_for("synced IPVS rules");
        missing.retain(|family| !line.contains(&format!("ip_family={family}")));
    }

    let table = ns.exec("ipvsadm", &["-Ln"]).unwrap();
    println!("{table}");
    for needle in ["TCP  10.96.0.10:80", "-> 10.244.0.5:8080", "TCP  [fd00:96::10]:80", "-> [fd00:244::5]:8080", "TCP  [fd00:96::20]:80"] {
        assert!(table.contains(needle), "{needle} missing from ipvsadm -Ln:\n{table}");
    }
    assert_eq!(real_servers(&table, "TCP  10.96.0.10:80"), ["10.244.0.5:8080"], "{table}");
    assert_eq!(real_servers(&table, "TCP  [fd00:96::10]:80"), ["[fd00:244::5]:8080"], "{table}");
    let addresses = ns.ip(&["addr", "show", "dev", "kube-ipvs0"]).unwrap();
    for address in ["10.96.0.10/32", "fd00:96::10/128", "fd00:96::20/128"] {
        assert!(addresses.contains(address), "{address} not on kube-ipvs0:\n{addresses}");
    }
    let sets = ns.exec("ipset", &["list", "KUBE-6-CLUSTER-IP"]).unwrap();
    assert!(sets.contains("fd00:96::10,tcp:80"), "{sets}");
    let v4_sets = ns.exec("ipset", &["list", "KUBE-CLUSTER-IP"]).unwrap();
    assert!(v4_sets.contains("10.96.0.10,tcp:80") && !v4_sets.contains("fd00:"), "{v4_sets}");

    let (status, body) = get(&ns, NODE_HEALTH, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let reference_body = REFERENCE_HEALTHZ.split_once("\r\n\r\n").unwrap().1.trim();
    assert_eq!(keys_of_body(&body), keys_of_body(reference_body), "{body}");
    proxy.stop();

    let out = ns.command(VM_BINARY).arg("--cleanup").output().unwrap();
    assert!(out.status.success(), "--cleanup failed: {}", String::from_utf8_lossy(&out.stderr));
    let left = ns.exec("ipvsadm", &["-Ln"]).unwrap();
    assert!(!left.contains("TCP "), "--cleanup left virtual servers:\n{left}");
    let sets = ns.exec("ipset", &["list", "-n"]).unwrap();
    assert!(!sets.contains("KUBE-"), "--cleanup left ipsets:\n{sets}");
}

/// The real servers listed under the virtual server `header` in
/// `ipvsadm -Ln` output.
fn real_servers(table: &str, header: &str) -> Vec<String> {
    table
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("->"))
        .filter_map(|l| l.trim_start().strip_prefix("->")?.split_whitespace().next().map(String::from))
        .collect()
}

fn args(manifests: &Path) -> Vec<String> {
    let manifests = manifests.display().to_string();
    [
        "--proxy-mode", "ipvs", "--manifests", &manifests, "--hostname-override", "node-a",
        "--cluster-cidr", "10.244.0.0/16,fd00:244::/64", "--iptables-backend", "legacy",
        "--healthz-bind-address", NODE_HEALTH, "--metrics-bind-address", "127.0.0.1:10249",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}
