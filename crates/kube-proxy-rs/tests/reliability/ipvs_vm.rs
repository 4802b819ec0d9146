//! IPVS mode in the suite. This machine's kernel has no IPVS, so the test
//! boots the small VM of `scripts/ipvs-vm.sh` (as `e2e_ipvs_vm.rs` does;
//! KVM when the host has it) carrying this test binary, the kube-proxy-rs
//! binary and `setpriv`, and runs itself there (`IPVS_VM=1`): the same
//! bed (node-a, echo pods, client pod, probes) with `--proxy-mode ipvs`,
//! then, one after the other,
//!
//! * churn through the fake API server at a reduced rate ([`SIZE`]): no
//!   probe to a healthy service may fail, and the virtual servers' real
//!   servers (weight above 0) must end exactly at the final state;
//! * our virtual servers cleared (`ipvsadm -C`) and our ipsets emptied
//!   (`ipset flush`) by hand: repaired by the next sync (the periodic one,
//!   at most the sync period away); no probe may fail after the repair.
//!
//! One VM boot for both, bounded by [`VM_TIMEOUT_SECS`]. The figures the
//! scenarios print inside come back on the host's stdout.

use crate::bed::Mode;
use crate::churn::{self, Via};
use crate::faults;
use crate::size::Size;
use testkit::vm::VmRun;
use std::path::Path;
use std::time::Duration;

/// Where the VM puts the proxy binary (`ipvs-vm.sh --add`).
pub const VM_BINARY: &str = "/payload/kube-proxy-rs";
/// Printed inside the VM once every scenario passed.
const PASSED: &str = "RELIABILITY-IPVS-VM: ALL PASSED";
/// Wall-clock limit of the VM run (boot included).
const VM_TIMEOUT_SECS: u64 = 240;
/// Guest vCPUs: the proxy, the probes and the test's own churn each want one.
const VM_CPUS: &str = "2";
/// Host files the VM gets besides its image: busybox's `setpriv` has no
/// `--pdeathsig`, which the bed starts the proxy with; the image has no CA
/// certificates, without which the proxy's API client (rustls with the
/// system's roots) is not built, even for a plain-HTTP server.
const EXTRA_FILES: [&str; 2] = ["/usr/bin/setpriv", HOST_CA_FILE];
/// The host's CA bundle, and where the VM has it (the proxy's
/// `SSL_CERT_FILE` there).
const HOST_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";
/// See [`HOST_CA_FILE`].
pub const VM_CA_FILE: &str = "/payload/ca-certificates.crt";
/// The churn's size in the VM. Without KVM the VM is emulated (qemu TCG)
/// and a sync of the debug build there takes about 0.1 s per service (104
/// services: 10 s), so the churn is a fiftieth of the host's CI run.
pub const SIZE: Size = Size { services: 20, rate: 10, churn: Duration::from_secs(10), api_down: Duration::ZERO };
/// The proxy went quiet after the churn when it logged no sync for this
/// long (several emulated syncs).
const QUIET: Duration = Duration::from_secs(8);
/// Churned services in the removed-by-hand scenario in the VM.
const CHURNED: usize = 10;
/// How much longer than the sync period a repair may take in the VM.
const REPAIR_SLACK: Duration = Duration::from_secs(10);

/// Runs the IPVS scenarios: boots the VM (on the host) or runs them (inside).
pub fn run(test_name: &str) {
    if testkit::vm::inside() {
        prepare_vm();
        churn::run_sized("churn (API server, IPVS, in the VM)", Mode::Ipvs, Via::Api, SIZE, QUIET);
        faults::removed_by_hand::run_sized(Mode::Ipvs, CHURNED, REPAIR_SLACK);
        println!("{PASSED}");
        return;
    }
    testkit::netns::require_kernel();
    boot_vm(test_name);
}

/// Host side: boots the VM with this test binary as the payload, fails
/// with the guest console unless every scenario passed there, and prints
/// the figures.
fn boot_vm(test_name: &str) {
    let run = VmRun::new(test_name, "reliability, IPVS mode").cpus(VM_CPUS).timeout_secs(VM_TIMEOUT_SECS);
    let run = EXTRA_FILES.iter().fold(run.with_file(env!("CARGO_BIN_EXE_kube-proxy-rs")), |run, file| run.with_file(file));
    let console = run.boot(PASSED);
    for line in console.lines().filter(|l| l.contains("[reliability]")) {
        println!("{}", &line[line.find("[reliability]").unwrap_or(0)..]);
    }
}

/// Inside the VM: `/var/run` for tools that expect it.
fn prepare_vm() {
    if !Path::new("/var/run").exists() {
        std::fs::create_dir_all("/var").expect("mkdir /var");
        std::os::unix::fs::symlink("/run", "/var/run").expect("symlink /var/run -> /run");
    }
}
