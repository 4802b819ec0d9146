//! IPVS mode on a real kernel. This machine's kernel (and a CI runner's)
//! may lack IPVS and dummy links, so the one test here boots a small VM
//! with a stock Debian kernel (`scripts/ipvs-vm.sh`) and runs this
//! same test binary inside it; there (`IPVS_VM=1`) the test takes its
//! in-VM branch and exercises the kernel. A failure prints the VM's log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support {
    pub mod reference;
}
mod vm {
    pub mod checks;
    pub mod kernel_view;
    pub mod reference;
    pub mod scale;
    pub mod socket;
    pub mod traffic;
}

use testkit::vm::VmRun;

#[test]
fn ipvs_mode_in_a_vm() {
    if testkit::vm::inside() {
        vm::checks::run_all();
        return;
    }
    testkit::netns::require_kernel();
    let console = VmRun::new("ipvs_mode_in_a_vm", "IPVS checks").timeout_secs(1200).boot("IPVS-VM-CHECKS: ALL PASSED");
    for line in console.lines().filter(|l| l.starts_with("IPVS-VM-CHECK")) {
        println!("{line}");
    }
}
