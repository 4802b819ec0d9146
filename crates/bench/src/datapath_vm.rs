//! `kprs-bench datapath-vm`: `kprs-bench datapath` inside the small VM of
//! `scripts/ipvs-vm.sh` (qemu booting a stock Debian kernel that has IPVS,
//! ipsets and dummy links, which this machine's kernel may lack), in one
//! boot. This binary and kube-proxy-rs are the VM's payload; the guest
//! console is copied to stderr (in blocks: the script pipes it through
//! `tr`) and the report, read back from the console, printed at the end.
//!
//! Inside the VM (`IPVS_VM=1`), `datapath` first gives `ip netns` the
//! `/var/run` it expects ([`prepare_guest`]); the image provides `ip`,
//! `ipset`, `ipvsadm`, the iptables binaries and `sysctl`.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Where the VM puts the payload's extra files (`ipvs-vm.sh --add`).
const GUEST_PAYLOAD: &str = "/payload";
/// The first line of `datapath`'s report.
const REPORT_START: &str = "new TCP connections/s through one ClusterIP";

/// How the VM run is set up.
#[derive(Debug, Clone)]
pub struct VmSetup {
    /// `scripts/ipvs-vm.sh`.
    pub script: PathBuf,
    /// Guest vCPUs.
    pub cpus: usize,
    /// Wall-clock limit of the whole boot, in seconds.
    pub timeout_secs: u64,
    /// The host's kube-proxy-rs binary, copied into the VM.
    pub proxy_binary: PathBuf,
    /// `datapath`'s arguments for the run inside (without `--binary`).
    pub datapath_args: Vec<String>,
}

/// The repository's `scripts/ipvs-vm.sh`, as this crate's sources place it.
pub fn default_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ipvs-vm.sh")
}

/// Whether this process runs inside the VM.
pub fn inside() -> bool {
    testkit::vm::inside()
}

/// Boots the VM running `datapath` with `setup`'s arguments; its report.
pub fn run_in_vm(setup: &VmSetup) -> Result<String> {
    if !setup.script.is_file() {
        bail!(
            "{} not found (the VM launcher of the repository; give it with --script)",
            setup.script.display()
        );
    }
    if !setup.proxy_binary.is_file() {
        bail!(
            "the kube-proxy-rs binary {} not found (build it with `cargo build --release -p kube-proxy-rs`, or give --binary)",
            setup.proxy_binary.display()
        );
    }
    let me = std::env::current_exe().context("this executable's path")?;
    let proxy_name = setup
        .proxy_binary
        .file_name()
        .context("the kube-proxy-rs binary has no file name")?;
    let guest_proxy = Path::new(GUEST_PAYLOAD).join(proxy_name);
    let log_dir = tempfile::Builder::new()
        .prefix("kprs-datapath-vm-")
        .tempdir()?;
    let log = log_dir.path().join("console.log");
    let mut cmd = Command::new("bash");
    cmd.arg(&setup.script)
        .args(["--no-selftest", "--smp", &setup.cpus.to_string()])
        .args(["--timeout", &setup.timeout_secs.to_string()])
        .arg("--add")
        .arg(&setup.proxy_binary)
        .arg("--")
        .arg(&me)
        .arg("datapath")
        .arg("--binary")
        .arg(&guest_proxy)
        .args(&setup.datapath_args)
        .env("IPVS_VM_KEEP_LOG", &log)
        .stdout(std::io::stderr());
    eprintln!(
        "kprs-bench: booting the VM ({} vCPU(s), limit {} s): datapath {}",
        setup.cpus,
        setup.timeout_secs,
        setup.datapath_args.join(" ")
    );
    let started = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("run {}", setup.script.display()))?;
    eprintln!(
        "kprs-bench: the VM run took {:.1} s ({status})",
        started.elapsed().as_secs_f64()
    );
    let console = std::fs::read_to_string(&log).unwrap_or_default();
    match status.code() {
        Some(0) => {}
        Some(124) => bail!(
            "the VM run hit its {} s limit (raise --timeout); the guest console is above",
            setup.timeout_secs
        ),
        _ => bail!("the VM run failed ({status}); the guest console is above"),
    }
    let kernel = console
        .lines()
        .find(|l| l.starts_with("IPVS-VM: kernel "))
        .unwrap_or("IPVS-VM: (no kernel line)");
    let report =
        report_of(&console).context("the VM run printed no report (guest console above)")?;
    Ok(format!("\n{kernel}; qemu {}{report}", accel_name()))
}

/// The acceleration `ipvs-vm.sh` picks by default: KVM only with a writable
/// `/dev/kvm` and a CPU showing vmx/svm, else TCG (an emulated CPU).
fn accel_name() -> &'static str {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let virt = cpuinfo
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|flag| flag == "vmx" || flag == "svm");
    let kvm = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    if virt && kvm {
        "KVM"
    } else {
        "TCG (emulated CPU)"
    }
}

/// `datapath`'s report in the guest console: its first line and the table
/// after it, up to the table's last row.
fn report_of(console: &str) -> Option<String> {
    let lines: Vec<&str> = console.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with(REPORT_START))?;
    let mut end = start + 1;
    while lines
        .get(end)
        .is_some_and(|l| l.is_empty() || l.starts_with('|'))
    {
        end += 1;
    }
    let mut report = String::from("\n");
    for line in lines.get(start..end)? {
        report.push_str(line);
        report.push('\n');
    }
    Some(report)
}

/// Inside the VM: `/var/run` (a link to `/run`) for `ip netns`, which keeps
/// its namespaces under `/var/run/netns`.
pub fn prepare_guest() -> Result<()> {
    if Path::new("/var/run").exists() {
        return Ok(());
    }
    std::fs::create_dir_all("/var").context("mkdir /var")?;
    std::os::unix::fs::symlink("/run", "/var/run").context("symlink /var/run -> /run")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_report_out_of_the_console() {
        let console = "IPVS-VM: kernel 6.1.0-40-amd64, 2 cpu(s), init at t=1.0s\n\
                       ipvs, 0 + 1 services: 900 conn/s\n\
                       \n\
                       new TCP connections/s through one ClusterIP (3 round(s))\n\
                       \n\
                       | mode | services programmed |\n\
                       |---|---|\n\
                       | ipvs | 1 |\n\
                       IPVS-VM-RESULT: rc=0\n";
        let report = report_of(console).unwrap_or_default();
        assert!(
            report.starts_with(
                "\nnew TCP connections/s through one ClusterIP (3 round(s))\n\n| mode"
            )
        );
        assert!(report.ends_with("| ipvs | 1 |\n"), "{report}");
        assert_eq!(report_of("IPVS-VM-RESULT: rc=1\n"), None);
    }
}
