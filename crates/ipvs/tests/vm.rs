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

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

#[test]
fn ipvs_mode_in_a_vm() {
    if std::env::var_os("IPVS_VM").is_some() {
        vm::checks::run_all();
        return;
    }
    testkit::netns::require_kernel();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ipvs-vm.sh");
    assert!(script.exists(), "{} not found: the VM tests need scripts/ipvs-vm.sh of the repository", script.display());
    let exe = std::env::current_exe().unwrap();
    let log = std::env::temp_dir().join(format!("ipvs-vm-{}.log", std::process::id()));
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(&script)
        .args(["-q", "--no-selftest", "--timeout", "1200", "--"])
        .arg(&exe)
        .args(["--exact", "ipvs_mode_in_a_vm", "--nocapture", "--test-threads=1"])
        .env("IPVS_VM_KEEP_LOG", &log)
        .output()
        .expect("run ipvs-vm.sh");
    let console = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    println!("ipvs-vm.sh finished in {:.1}s", started.elapsed().as_secs_f64());
    if !out.status.success() || !console.contains("IPVS-VM-CHECKS: ALL PASSED") {
        panic!(
            "VM run failed ({}).\n--- ipvs-vm.sh stderr ---\n{}\n--- guest console ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            console
        );
    }
    for line in console.lines().filter(|l| l.starts_with("IPVS-VM-CHECK")) {
        println!("{line}");
    }
}
