//! Leaving IPVS mode (issue 27), on a kernel with IPVS: this machine's
//! kernel (and a CI runner's) has neither IPVS nor dummy links, so
//! `ipvs_to_nftables_and_iptables_in_a_vm` boots the small VM of
//! `scripts/ipvs-vm.sh` (as `e2e_ipvs_vm.rs` does) carrying this test
//! binary, the kube-proxy-rs binary and `setpriv`, and runs the switch
//! there (`IPVS_VM=1`) from IPVS mode into nftables mode, then (on a new
//! node) into iptables mode. The long-lived connections stay open for
//! [`HOLD`] after the new mode's first sync, so their virtual servers are
//! seen waiting for them; then the clients stop and every IPVS object
//! must be gone within [`DRAIN_PATIENCE`] (drained: the drain limit is
//! the default 5 minutes).
//!
//! `KPRS_SWITCH_BINARY=path` on the host runs another build of the binary
//! in the VM (main's, to see what it does).

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use testkit::netns::Netns;

/// Printed inside the VM once both switches passed.
pub const PASSED: &str = "MODE-SWITCH-IPVS-VM: ALL PASSED";
/// Filler services in the VM (emulated CPUs: an IPVS sync of hundreds of
/// services takes seconds there).
pub const FILLERS: usize = 20;
/// Fresh-connection openers per target in the VM (one elsewhere): one
/// opener's connections are made one after the other, and each takes a
/// few milliseconds on the emulated CPUs.
pub const OPENERS: usize = 12;
/// How long a proxy may take to sync in the VM (emulated CPUs, shared).
pub const SYNC_PATIENCE: Duration = Duration::from_secs(120);
/// How long the long-lived connections outlive the new mode's first sync.
pub const HOLD: Duration = Duration::from_secs(3);
/// How long the IPVS objects may take to go once the clients stopped.
pub const DRAIN_PATIENCE: Duration = Duration::from_secs(30);
/// The file in the VM's share directory naming the binary to run there.
const BINARY_FILE: &str = "binary";
/// Wall-clock limit for the whole VM run.
const VM_TIMEOUT_SECS: u64 = 900;

/// Inside the VM: the binary under test (`ipvs-vm.sh --add` puts it
/// under `/payload/`).
pub fn binary() -> String {
    let named = std::env::var("IPVS_VM_SHARE").ok().and_then(|dir| std::fs::read_to_string(Path::new(&dir).join(BINARY_FILE)).ok());
    named.map_or_else(|| "/payload/kube-proxy-rs".to_string(), |name| name.trim().to_string())
}

/// Host side: boots the VM with this test binary as the payload, running
/// `test`; fails with the guest console unless both switches passed.
pub fn boot(test: &str) {
    let share = tempfile::Builder::new().prefix("kprs-switch-vm-").tempdir().unwrap();
    let mut binary = env!("CARGO_BIN_EXE_kube-proxy-rs").to_string();
    if let Ok(other) = std::env::var("KPRS_SWITCH_BINARY") {
        // Another name under /payload/ than the build under test's.
        let copy = share.path().join("kube-proxy-rs-other");
        std::fs::copy(&other, &copy).unwrap();
        std::fs::write(share.path().join(BINARY_FILE), "/payload/kube-proxy-rs-other").unwrap();
        println!("binary run in the VM: {other}");
        binary = copy.display().to_string();
    }
    // The test is ignored for now (not yet reliable): run it inside too.
    let this = std::env::current_exe().unwrap().into_os_string();
    let run = testkit::vm::VmRun::new(test, "IPVS mode switches").cpus("2").timeout_secs(VM_TIMEOUT_SECS);
    let run = run.command(vec![this, "--include-ignored".into()]);
    let console = run.with_file(binary).with_file("/usr/bin/setpriv").share(share.path()).boot(PASSED);
    for line in console.lines().filter(|l| l.contains("[mode-switch]") || l.starts_with("  ")) {
        println!("{line}");
    }
}

/// Inside the VM: `/var/run` for tools that expect it, and every tool the
/// test runs, each checked once so a missing one is named up front.
pub fn prepare() {
    if !Path::new("/var/run").exists() {
        std::fs::create_dir_all("/var").unwrap();
        std::os::unix::fs::symlink("/run", "/var/run").unwrap();
    }
    let tools: [(&str, &[&str]); 8] = [
        ("ip", &["netns", "list"]),
        ("iptables-legacy-save", &[]),
        ("ip6tables-legacy-save", &[]),
        ("iptables-nft-save", &[]),
        ("ip6tables-nft-save", &[]),
        ("ipvsadm", &["-Ln"]),
        ("ipset", &["list", "-n"]),
        ("nft", &["list", "ruleset"]),
    ];
    for (tool, args) in tools {
        let out = Command::new(tool).args(args).output().unwrap_or_else(|e| panic!("`{tool}` not found in the VM: {e}"));
        assert!(out.status.success(), "`{tool} {}` failed in the VM: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
}

/// IPVS mode's chains that iptables mode does not have.
const IPVS_ONLY_CHAINS: [&str; 5] = ["KUBE-NODE-PORT ", "KUBE-LOAD-BALANCER", "KUBE-IPVS-FILTER", "KUBE-IPVS-OUT-FILTER", "KUBE-SOURCE-RANGES-FIREWALL"];

/// What is left of IPVS mode on `node`: virtual servers, `kube-ipvs0`,
/// ipsets, its own chains (legacy backend, both families).
pub fn left_of_ipvs(node: &Netns) -> Vec<String> {
    let table = node.exec("ipvsadm", &["-Ln"]).unwrap();
    let mut left: Vec<String> = table.lines().filter(|l| l.starts_with("TCP") || l.starts_with("UDP")).map(String::from).collect();
    if node.exec("ip", &["link", "show", "kube-ipvs0"]).is_ok() {
        left.push("link kube-ipvs0".to_string());
    }
    let sets = node.exec("ipset", &["list", "-n"]).unwrap();
    left.extend(sets.lines().filter(|l| l.starts_with("KUBE-")).map(|l| format!("ipset {l}")));
    for tool in ["iptables-legacy-save", "ip6tables-legacy-save"] {
        let saved = node.exec(tool, &[]).unwrap();
        left.extend(saved.lines().filter(|l| IPVS_ONLY_CHAINS.iter().any(|c| l.contains(c))).map(String::from));
    }
    left
}

/// The IPVS connections open on `node` (established or closing, as the
/// drain counts them: `/proc/net/ip_vs_conn` read by
/// [`ipvs::conn_table::count_open`]), all virtual servers summed.
pub fn active_connections(node: &Netns) -> u64 {
    let table = node.exec("cat", &["/proc/net/ip_vs_conn"]).unwrap();
    ipvs::conn_table::count_open(&table).values().sum()
}

/// IPVS's connection table and the conntrack table of `node`, for a
/// failure message.
pub fn connections(node: &Netns) -> String {
    let table = node.exec("ipvsadm", &["-Ln"]).unwrap_or_else(|e| e.to_string());
    let ipvs = node.exec("ipvsadm", &["-Lnc"]).unwrap_or_else(|e| e.to_string());
    let ipvs = format!("{table}\n{ipvs}");
    let conntrack = node.exec("conntrack", &["-L"]).unwrap_or_else(|e| e.to_string());
    format!("ipvsadm -Lnc:\n{ipvs}\nconntrack -L:\n{conntrack}")
}

/// The TCP sockets of `ns` with their TCP details (`ss -tnio`), for a
/// failure message.
pub fn sockets(ns: &Netns) -> String {
    let sockets = ns.exec("ss", &["-tnio"]).unwrap_or_else(|e| e.to_string());
    // One line per socket: ss puts the details on a line of their own.
    format!("\nss -tnio (client):\n{}", sockets.replace("\n\t", " ").replace("\n ", " "))
}
