//! `kube-proxy-rs explain` reading a live IPVS-mode node, on a real
//! kernel with IPVS: a small VM (`scripts/ipvs-vm.sh`, as `e2e_ipvs_vm`)
//! runs this test binary; inside (`IPVS_VM=1`), in a namespace with
//! node-a's InternalIP, kube-proxy-rs runs in IPVS mode on the upstream
//! reference's `cluster.yaml`, and once it has synced `explain dump --mode
//! ipvs` writes what the kernel holds (virtual servers over IPVS netlink,
//! `kube-ipvs0`'s addresses, `ipset save`, `iptables-save`) and what the
//! proxy plans, into the shared directory. Back on the host, the live
//! dump must hold the plan's virtual servers, real servers and bound
//! addresses, and `explain packet` must answer every reference flow the
//! same from the live dump as from the plan.
//! Needs root, qemu and the network for the first boot's kernel package
//! (the script installs them); without root the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use testkit::flows::{self, explain_args, explained_outcomes};
use testkit::tracer::describe_outcomes;

/// Where the VM puts the proxy binary (`ipvs-vm.sh --add`).
const VM_BINARY: &str = "/payload/kube-proxy-rs";
/// The share directory inside the VM.
const VM_SHARE: &str = "/mnt/share";
/// Printed inside the VM once the dumps are written.
const DONE: &str = "EXPLAIN-IPVS-VM: DUMPS WRITTEN";
/// node-a's InternalIP, on a dummy link in the VM's namespace.
const NODE_IP: &str = "192.168.86.2";

#[test]
fn explain_reads_a_live_ipvs_node() {
    if std::env::var_os("IPVS_VM").is_some() {
        write_dumps_in_vm();
        println!("{DONE}");
        return;
    }
    testkit::netns::require_kernel();
    let share = tempfile::Builder::new().prefix("kprs-explain-vm-").tempdir().unwrap();
    let dir = flows::reference_dir();
    std::fs::copy(dir.join("cluster.yaml"), share.path().join("cluster.yaml")).unwrap();
    let config = std::fs::read_to_string(dir.join("iptables/kube-proxy-config.yaml")).unwrap();
    assert!(config.contains("mode: iptables"), "the reference config names its mode");
    std::fs::write(share.path().join("config.yaml"), config.replace("mode: iptables", "mode: ipvs")).unwrap();
    boot_vm(share.path());
    compare_on_host(share.path());
}

/// Host side: the VM with this binary and kube-proxy-rs as payload.
fn boot_vm(share: &Path) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ipvs-vm.sh");
    let log = std::env::temp_dir().join(format!("kprs-explain-ipvs-vm-{}.log", std::process::id()));
    let out = Command::new("bash")
        .arg(&script)
        .args(["-q", "--no-selftest", "--timeout", "600", "--add", env!("CARGO_BIN_EXE_kube-proxy-rs")])
        .arg("--share")
        .arg(share)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "explain_reads_a_live_ipvs_node", "--nocapture", "--test-threads=1"])
        .env("IPVS_VM_KEEP_LOG", &log)
        .output()
        .expect("run ipvs-vm.sh");
    let console = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert!(
        out.status.success() && console.contains(DONE),
        "the VM did not write the dumps ({}).\n--- stderr ---\n{}\n--- console ---\n{console}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Inside the VM: node-a's namespace, the proxy in IPVS mode until its
/// first sync, then the live dump and the plan into the share.
fn write_dumps_in_vm() {
    if !Path::new("/var/run").exists() {
        std::fs::create_dir_all("/var").unwrap();
        std::os::unix::fs::symlink("/run", "/var/run").unwrap();
    }
    let ns = testkit::netns::Netns::new("explain").unwrap();
    for args in [
        &["link", "set", "lo", "up"][..],
        &["link", "add", "eth0", "type", "dummy"],
        &["addr", "add", &format!("{NODE_IP}/24"), "dev", "eth0"],
        &["link", "set", "eth0", "up"],
    ] {
        ns.ip(args).unwrap();
    }
    let share = Path::new(VM_SHARE);
    let proxy_flags = ["--config", &format!("{VM_SHARE}/config.yaml"), "--manifests", &format!("{VM_SHARE}/cluster.yaml"), "--hostname-override", "node-a"];
    let log = share.join("proxy.log");
    let mut proxy = Killed(
        ns.command(VM_BINARY)
            .args(proxy_flags)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(240);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("synced IPVS rules ip_family=IPv4") {
        assert!(proxy.0.try_wait().unwrap().is_none(), "the proxy exited:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        assert!(Instant::now() < deadline, "no IPVS sync in 240 s:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(200));
    }
    let live = ns.command(VM_BINARY).args(["explain", "dump", "--mode", "ipvs"]).output().unwrap();
    drop(proxy);
    assert!(live.status.success(), "live dump: {}", String::from_utf8_lossy(&live.stderr));
    std::fs::write(share.join("live.dump"), &live.stdout).unwrap();
    let plan = ns.command(VM_BINARY).args(["explain", "dump", "--mode", "ipvs", "--"]).args(proxy_flags).output().unwrap();
    assert!(plan.status.success(), "planned dump: {}", String::from_utf8_lossy(&plan.stderr));
    std::fs::write(share.join("plan.dump"), &plan.stdout).unwrap();
}

/// A child process killed and reaped when dropped (a failed assertion
/// included).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines of one section of a dump, as a set.
fn section(dump: &str, header: &str) -> BTreeSet<String> {
    dump.lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(1)
        .take_while(|l| !l.starts_with("# "))
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// Host side: the live dump holds the plan, and answers every flow alike.
fn compare_on_host(share: &Path) {
    let live = std::fs::read_to_string(share.join("live.dump")).unwrap();
    let plan = std::fs::read_to_string(share.join("plan.dump")).unwrap();
    for header in ["# virtual servers", "# addresses on the dummy interface"] {
        assert_eq!(section(&live, header), section(&plan, header), "{header} differ:\n--- live ---\n{live}\n--- plan ---\n{plan}");
    }
    assert!(section(&live, "# virtual servers").len() > 30, "{live}");
    let mut failures = Vec::new();
    for flow in flows::iptables_flows().unwrap() {
        let answer = |dump: &str| {
            let mut args = explain_args(&flow);
            args.extend(["--mode", "ipvs", "--node-ip", NODE_IP, "--from-file"].map(String::from));
            args.push(share.join(dump).display().to_string());
            let out = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs")).args(&args).output().unwrap();
            explained_outcomes(&String::from_utf8_lossy(&out.stdout))
                .map_err(|e| format!("{e:#}: {}", String::from_utf8_lossy(&out.stderr)))
        };
        match (answer("live.dump"), answer("plan.dump")) {
            (Ok(live), Ok(plan)) if live == plan => {}
            (Ok(live), Ok(plan)) => failures.push(format!("{}: live {} plan {}", flow.label(), describe_outcomes(&live), describe_outcomes(&plan))),
            (live, plan) => failures.push(format!("{}: live {live:?} plan {plan:?}", flow.label())),
        }
    }
    assert!(failures.is_empty(), "{} flows explained otherwise live than planned:\n{}", failures.len(), failures.join("\n"));
}
