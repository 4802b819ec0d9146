//! The reference's packet flows replayed for real in IPVS mode (issue
//! 17), the IPVS twin of `flows_iptables.rs`: this machine's kernel has no
//! IPVS, so the test boots the small VM of `scripts/ipvs-vm.sh` (one boot)
//! with this test binary, kube-proxy-rs, `setpriv` and the reference files
//! (in the shared directory), and runs itself there (`IPVS_VM=1`). Inside,
//! the same harness as the host's flow replays (`support/
//! replayed_proxy.rs`, `testkit::reference_node`) builds node-a with its
//! namespaces (external clients, the client pod, one pod per endpoint
//! address answering with its address and the peer it saw), starts
//! kube-proxy-rs in node-a with the reference's iptables config switched
//! to `mode: ipvs` (as `explain_ipvs_vm` does) and `--manifests
//! cluster.yaml`, sends every flow of `iptables/flows.json` for real and
//! records what it did (the endpoints reached, the peer they saw:
//! masqueraded or not, ICMP port unreachable, a TCP reset from node-a
//! itself, silence dropped in node-a or routed on). Each flow must do
//! what upstream's iptables run did, except the flows IPVS mode answers
//! otherwise by design (`testkit::flows::ipvs_differences`, the list
//! `explain_ipvs` checks IPVS mode's plan against); and `kube-proxy-rs
//! explain`, reading the live kernel once per replay (`explain dump --mode
//! ipvs`: IPVS netlink, ipsets, iptables, `kube-ipvs0`, the readers of a
//! live `explain packet`; a live read per flow spawns five tools, 1.5 s a
//! flow in the emulated VM), must answer each flow (`explain packet
//! --from-file`) with what its traffic did. node-a's own flows are sent from the source `explain` is
//! asked about (its InternalIP): in IPVS mode the kernel would pick the
//! service address bound on `kube-ipvs0` as their source.
//!
//! `explain`'s answer is compared with the flow's verdict and with the
//! connections themselves (`testkit::flows::check_explained_traffic`).
//! Then the proxy is stopped and its virtual servers removed (`ipvsadm
//! -C`; `kube-ipvs0`, the ipsets and the iptables rules stay), every flow
//! is replayed and explained again: each must still be explained as its
//! traffic went, and most must now go otherwise than expected and be
//! explained otherwise — the checks can fail (also checked by hand: with
//! F22 taken off the list of differences, the run fails naming F22's
//! traffic, unmasqueraded, and `explain`'s answer, which follows it).
//! Then `explain migrate --to nftables` is checked by traffic (issue 27):
//! on a fresh node-a in IPVS mode the binary reports, live, what the
//! switch changes; every probe it made (each Service port's addresses
//! from the client pod, node-a and the outside client) is sent for real
//! and must go as its `before` endings say; the proxy is restarted in
//! nftables mode (the reference's nftables config) and every probe must go
//! as its `after` endings say — so each reported difference and each
//! "unchanged" is confirmed both sides of the switch; the reference flows
//! must then go as upstream's nftables run sent them, and IPVS mode's
//! ClusterIP and load-balancer IP answer ping neither before nor after
//! (KUBE-IPVS-FILTER rejects it: no difference to report), while node-a
//! answers. ICMP rate limiting is off in node-a for this part (dozens of
//! probes are rejected from one client).
//! A failure prints the VM's console: every flow as seen, node-a's IPVS
//! table, ipsets and rules, and the proxy's log.
//! Needs root, qemu and the network for the first boot's kernel package
//! (the script installs them); without root the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/replayed_proxy.rs"]
mod replayed_proxy;

use replayed_proxy::{ProxyMode, Replay, Switch, reference_responders};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use testkit::flows::{self, REFERENCE_DIR_ENV};
use testkit::vm::VmRun;

/// Where the VM puts the proxy binary (`ipvs-vm.sh --add`).
const VM_BINARY: &str = "/payload/kube-proxy-rs";
/// The share directory inside the VM.
const VM_SHARE: &str = "/mnt/share";
/// The reference files the VM reads, in the share.
const REFERENCE_IN_SHARE: &str = "reference";
/// Printed inside the VM once every flow went and was explained as
/// expected.
const PASSED: &str = "FLOWS-IPVS-VM: ALL PASSED";
/// Wall-clock limit for the whole VM run (boot, topology, first sync, two
/// replays, then the migrate check: a second node-a, the probes sent
/// twice, a restart in nftables mode, the flows again).
const VM_TIMEOUT_SECS: u64 = 900;
/// Guest vCPUs: the proxy, 40 echo servers and 4 replaying workers share
/// them.
const VM_CPUS: &str = "2";
/// How long a connection waits in the VM (emulated CPUs: a connection
/// through node-a takes milliseconds there too, but a loaded host stalls
/// the guest).
const VM_TIMEOUT: Duration = Duration::from_secs(3);
/// Flows replayed at once in the VM.
const VM_WORKERS: usize = 4;
/// How long the proxy may take to start and sync in the VM.
const VM_PATIENCE: Duration = Duration::from_secs(240);
/// With the virtual servers removed, at least this many of the 64 flows
/// must go otherwise than expected and be explained otherwise (every flow
/// that needs a virtual server: all but the drops by the source ranges'
/// rules, KUBE-IPVS-FILTER's reject, the localhost NodePorts and the
/// flows no rule matches).
const FLUSHED_AT_LEAST: usize = 50;

/// Host tools the VM gets besides what its image has: `setpriv` (busybox's
/// lacks `--pdeathsig`, which the proxy is started with), `env` (sets the
/// reference directory for the test binary).
const EXTRA_TOOLS: [&str; 1] = ["/usr/bin/setpriv"];
const ENV: &str = "/usr/bin/env";

/// The reference files the flows and the proxy read.
const REFERENCE_FILES: [&str; 5] =
    ["cluster.yaml", "iptables/flows.json", "iptables/flows.txt", "nftables/flows.json", "nftables/flows.txt"];
/// IPVS mode's addresses on kube-ipvs0 the migrate check pings (no answer
/// before or after): a ClusterIP (storefront/web) and a load-balancer IP
/// (storefront/api).
const PINGED: [&str; 2] = ["10.96.10.10", "192.0.2.20"];

#[test]
fn flows_ipvs_in_a_vm() {
    if testkit::vm::inside() {
        replay_in_vm();
        println!("{PASSED}");
        return;
    }
    testkit::netns::require_kernel();
    let share = tempfile::Builder::new().prefix("kprs-flows-ipvs-vm-").tempdir().unwrap();
    let dir = flows::reference_dir();
    for file in REFERENCE_FILES {
        let to = share.path().join(REFERENCE_IN_SHARE).join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(dir.join(file), &to).unwrap_or_else(|e| panic!("copy {file}: {e}"));
    }
    let config = std::fs::read_to_string(dir.join("iptables/kube-proxy-config.yaml")).unwrap();
    assert!(config.contains("mode: iptables"), "the reference config names its mode");
    std::fs::write(share.path().join("config.yaml"), config.replace("mode: iptables", "mode: ipvs")).unwrap();
    let nftables = std::fs::read_to_string(dir.join("nftables/kube-proxy-config.yaml")).unwrap();
    assert!(nftables.contains("mode: nftables"), "the reference's nftables config names its mode");
    std::fs::write(share.path().join("config-nftables.yaml"), nftables).unwrap();
    boot_vm(share.path());
}

/// Host side: the VM with this binary, kube-proxy-rs and `setpriv` as
/// payload; fails with the guest console unless every flow passed there.
fn boot_vm(share: &Path) {
    let exe = std::env::current_exe().unwrap();
    let exe_name = exe.file_name().unwrap().to_string_lossy().into_owned();
    let reference = format!("{REFERENCE_DIR_ENV}={VM_SHARE}/{REFERENCE_IN_SHARE}");
    let run = VmRun::new("flows_ipvs_in_a_vm", "flow replay, IPVS mode").cpus(VM_CPUS).timeout_secs(VM_TIMEOUT_SECS);
    let run = EXTRA_TOOLS.iter().fold(run.with_file(env!("CARGO_BIN_EXE_kube-proxy-rs")).with_file(&exe), |run, tool| run.with_file(tool));
    let command = vec![ENV.into(), reference.into(), format!("/payload/{exe_name}").into()];
    let console = run.share(share).command(command).boot(PASSED);
    for line in console.lines().filter(|l| l.starts_with('F') || l.contains(" flows ") || l.contains("VM:")) {
        println!("{line}");
    }
}

/// Inside the VM: the tools checked, then the flows replayed in node-a
/// (the harness fails naming every flow that differs).
fn replay_in_vm() {
    if !Path::new("/var/run").exists() {
        std::fs::create_dir_all("/var").unwrap();
        std::os::unix::fs::symlink("/run", "/var/run").unwrap();
    }
    let tools: [(&str, &[&str]); 5] = [
        ("ip", &["netns", "list"]),
        ("ipvsadm", &["-Ln"]),
        ("ipset", &["list", "-n"]),
        ("nft", &["list", "ruleset"]),
        ("setpriv", &["--pdeathsig", "KILL", "--", "true"]),
    ];
    for (tool, args) in tools {
        let out = Command::new(tool).args(args).output().unwrap_or_else(|e| panic!("`{tool}` not found in the VM: {e}"));
        assert!(out.status.success(), "`{tool} {}` failed in the VM: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
    let flows = flows::ipvs_flows().expect("load the reference flows with IPVS mode's verdicts");
    assert_eq!(flows.len(), 64, "the reference has 64 flows");
    let flows_after = flows::load_flows("nftables").expect("load upstream's nftables flows");
    let responders = reference_responders(&[flows.clone(), flows_after.clone()].concat());
    let replay = Replay {
        mode: ProxyMode::Ipvs,
        binary: PathBuf::from(VM_BINARY),
        config: Path::new(VM_SHARE).join("config.yaml"),
        manifests: flows::reference_dir().join("cluster.yaml"),
        patience: VM_PATIENCE,
        timeout: VM_TIMEOUT,
        workers: VM_WORKERS,
        bind_node_source: true,
        flushed_control: Some(FLUSHED_AT_LEAST),
    };
    replay.run(&flows, &responders);
    let switch = Switch {
        to: ProxyMode::Nftables,
        config: Path::new(VM_SHARE).join("config-nftables.yaml"),
        flows_after,
        ping: PINGED.map(String::from).to_vec(),
    };
    replay.migrate(&switch, &responders);
}
