//! Running a test binary inside the small IPVS-capable VM of
//! `scripts/ipvs-vm.sh` (this machine's kernel, and a CI runner's, may
//! lack IPVS and dummy links). The test boots the VM with itself as the
//! payload; inside (`IPVS_VM=1`) it takes its in-VM branch and prints a
//! marker once every check passed. [`VmRun::boot`] returns the guest
//! console, and fails the test with it unless the run printed the marker.

#![allow(clippy::expect_used, clippy::panic)] // a test harness: it fails the test

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Whether this process is the test's run inside the VM.
pub fn inside() -> bool {
    std::env::var_os("IPVS_VM").is_some()
}

/// One boot of the VM running one test of the current test binary.
#[derive(Debug)]
pub struct VmRun {
    test: String,
    what: String,
    cpus: Option<String>,
    timeout_secs: u64,
    adds: Vec<PathBuf>,
    share: Option<PathBuf>,
    command: Option<Vec<OsString>>,
}

impl VmRun {
    /// `test` (its exact name) of this binary; `what` names the run in
    /// messages.
    pub fn new(test: &str, what: &str) -> Self {
        Self {
            test: test.to_string(),
            what: what.to_string(),
            cpus: None,
            timeout_secs: 600,
            adds: Vec::new(),
            share: None,
            command: None,
        }
    }

    /// Guest vCPUs (the script's default otherwise).
    pub fn cpus(mut self, cpus: &str) -> Self {
        self.cpus = Some(cpus.to_string());
        self
    }

    /// Wall-clock limit of the run, boot included.
    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.timeout_secs = secs;
        self
    }

    /// A host file the VM gets under `/payload/`.
    pub fn with_file(mut self, file: impl AsRef<Path>) -> Self {
        self.adds.push(file.as_ref().to_path_buf());
        self
    }

    /// A host directory the VM mounts at `/mnt/share`.
    pub fn share(mut self, dir: &Path) -> Self {
        self.share = Some(dir.to_path_buf());
        self
    }

    /// What the VM runs instead of this binary (whose test arguments are
    /// appended): e.g. `env VAR=… /payload/<binary>` for a binary added
    /// with [`VmRun::with_file`].
    pub fn command(mut self, command: Vec<OsString>) -> Self {
        self.command = Some(command);
        self
    }

    /// Boots the VM and waits for it; the guest console. Panics with the
    /// script's stderr and the console unless the run succeeded and
    /// printed `passed`.
    pub fn boot(self, passed: &str) -> String {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ipvs-vm.sh");
        assert!(script.exists(), "{} not found: the VM tests need scripts/ipvs-vm.sh of the repository", script.display());
        let log = std::env::temp_dir().join(format!("kprs-vm-{}-{}.log", self.test, std::process::id()));
        let mut cmd = Command::new("bash");
        cmd.arg(&script).args(["-q", "--no-selftest", "--timeout", &self.timeout_secs.to_string()]);
        if let Some(cpus) = &self.cpus {
            cmd.args(["--smp", cpus]);
        }
        for file in &self.adds {
            cmd.arg("--add").arg(file);
        }
        if let Some(share) = &self.share {
            cmd.arg("--share").arg(share);
        }
        cmd.arg("--");
        match &self.command {
            Some(command) => cmd.args(command),
            None => cmd.arg(std::env::current_exe().expect("this test binary")),
        };
        cmd.args(["--exact", &self.test, "--nocapture", "--test-threads=1"]);
        let started = Instant::now();
        let load_before = load_average();
        let out = cmd.env("IPVS_VM_KEEP_LOG", &log).output().expect("run ipvs-vm.sh");
        let console = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let took = started.elapsed().as_secs_f64();
        let load = format!("host load average {load_before} at the start, {} at the end", load_average());
        println!("ipvs-vm.sh ({}) finished in {took:.1} s of its {} s limit ({load})", self.what, self.timeout_secs);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(TIMED_OUT) {
            panic!(
                "{} timed out in the VM: {took:.0} s, over its limit of {} s (boot included; {load}). The VM's CPUs are \
                 emulated (qemu TCG without KVM) and slow down with every other process on the host's cores: on a \
                 loaded 2-core machine run the test alone before suspecting a hang.\n--- ipvs-vm.sh stderr ---\n{stderr}\n\
                 --- guest console ---\n{console}",
                self.what,
                self.timeout_secs
            );
        }
        assert!(
            out.status.success() && console.contains(passed),
            "{} failed in the VM ({}; {took:.0} s of its {} s limit, {load}).\n--- ipvs-vm.sh stderr ---\n{stderr}\n--- guest console ---\n{console}",
            self.what,
            out.status,
            self.timeout_secs
        );
        console
    }
}

/// `scripts/ipvs-vm.sh`'s exit code when the run outlived its `--timeout`.
const TIMED_OUT: i32 = 124;

/// The host's 1-minute load average, as `/proc/loadavg` gives it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}
