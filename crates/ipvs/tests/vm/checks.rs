//! The in-VM side: runs every check in order on one booted kernel and
//! prints one `IPVS-VM-CHECK` line per check, with its time.

use std::time::Instant;

/// One in-VM check; it panics on failure.
type Check = fn(&tokio::runtime::Runtime);

/// Runs the checks; panics (failing the test inside the VM, which makes
/// the payload exit non-zero) on the first failure.
pub fn run_all() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let checks: &[(&str, Check)] = &[
        ("socket: services and destinations round-trip through the kernel", super::socket::services_and_destinations),
        ("socket: timeouts and version", super::socket::timeouts_and_version),
        ("socket: concurrent listings take turns (no EBUSY)", super::socket::concurrent_dumps),
        ("socket: every scheduler is in the kernel; an unknown one is reported", super::socket::scheduler_check),
        ("reference scenario: programmed state equals the render; changes followed; cleanup", super::reference::reference_scenario),
        ("traffic: ClusterIP remap, hairpin, NodePort ETP Local/Cluster, source ranges, graceful termination", super::traffic::traffic),
        ("dual stack: v4 and v6 applies leave each other alone; v6 traffic", super::traffic::dual_stack),
        ("scale: 1000 services applied, re-applied, changed", super::scale::scale),
    ];
    println!();
    for (name, check) in checks {
        let started = Instant::now();
        check(&rt);
        println!("IPVS-VM-CHECK ok {:>6.2}s {name}", started.elapsed().as_secs_f64());
    }
    println!("IPVS-VM-CHECKS: ALL PASSED");
}

/// Runs a shell command in the VM and returns its stdout; panics with its
/// stderr if it fails.
pub fn sh(cmd: &str) -> String {
    let out = std::process::Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(out.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a shell command in the VM and tells whether it succeeded.
pub fn sh_status(cmd: &str) -> bool {
    std::process::Command::new("sh").args(["-c", &format!("{cmd} >/dev/null 2>&1")]).status().unwrap().success()
}
