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
//! `explain service` on the live node: storefront/api (LoadBalancer, ETP
//! Local, health-check node port) and an IPv6 ClusterIP Service added to
//! the scenario (`shop/web6`) hold what the proxy would program (no
//! drift; `explain packet` on the IPv6 ClusterIP names its endpoint); then,
//! the proxy stopped, a real server and the NodePort virtual server deleted
//! with `ipvsadm`, a real server added, an ipset member deleted and the
//! IPv6 real server deleted are each reported as drift, line by line.
//! Needs root, qemu and the network for the first boot's kernel package
//! (the script installs them); without root the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use testkit::flows::{self, explain_args, explained_outcomes};
use testkit::tracer::describe_outcomes;
use testkit::vm::VmRun;

/// Where the VM puts the proxy binary (`ipvs-vm.sh --add`).
const VM_BINARY: &str = "/payload/kube-proxy-rs";
/// The share directory inside the VM.
const VM_SHARE: &str = "/mnt/share";
/// Printed inside the VM once the dumps are written.
const DONE: &str = "EXPLAIN-IPVS-VM: DUMPS WRITTEN";
/// node-a's InternalIP, on a dummy link in the VM's namespace.
const NODE_IP: &str = "192.168.86.2";
/// An IPv6 ClusterIP Service added to the reference scenario (the proxy
/// runs dual-stack in the VM: the kernel has IPv6).
const WEB6: &str = r#"
---
apiVersion: v1
kind: Service
metadata: {name: web6, namespace: shop}
spec:
  type: ClusterIP
  clusterIP: "fd00:96::10"
  clusterIPs: ["fd00:96::10"]
  ipFamilies: [IPv6]
  ipFamilyPolicy: SingleStack
  ports: [{name: http, port: 80, protocol: TCP, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web6-v6, namespace: shop, labels: {kubernetes.io/service-name: web6}}
addressType: IPv6
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: ["fd00:244::5"], nodeName: node-b, conditions: {ready: true}}
"#;
/// The hand edits made on the live node once the proxy is stopped.
const HAND_EDITS: [&[&str]; 5] = [
    &["ipvsadm", "-d", "-t", "10.96.10.70:80", "-r", "10.244.1.18:8080"],
    &["ipvsadm", "-D", "-t", "192.168.86.2:30700"],
    &["ipvsadm", "-a", "-t", "10.96.10.70:80", "-r", "10.244.9.9:8080", "-m", "-w", "3"],
    &["ipset", "del", "KUBE-CLUSTER-IP", "10.96.10.70,tcp:80"],
    &["ipvsadm", "-d", "-t", "[fd00:96::10]:80", "-r", "[fd00:244::5]:8080"],
];

#[test]
fn explain_reads_a_live_ipvs_node() {
    if testkit::vm::inside() {
        write_dumps_in_vm();
        println!("{DONE}");
        return;
    }
    testkit::netns::require_kernel();
    let share = tempfile::Builder::new().prefix("kprs-explain-vm-").tempdir().unwrap();
    let dir = flows::reference_dir();
    let cluster = std::fs::read_to_string(dir.join("cluster.yaml")).unwrap();
    std::fs::write(share.path().join("cluster.yaml"), cluster + WEB6).unwrap();
    let config = std::fs::read_to_string(dir.join("iptables/kube-proxy-config.yaml")).unwrap();
    assert!(config.contains("mode: iptables"), "the reference config names its mode");
    std::fs::write(share.path().join("config.yaml"), config.replace("mode: iptables", "mode: ipvs")).unwrap();
    boot_vm(share.path());
    compare_on_host(share.path());
    check_services_on_host(share.path());
}

/// Host side: the VM with this binary and kube-proxy-rs as payload.
fn boot_vm(share: &Path) {
    let run = VmRun::new("explain_reads_a_live_ipvs_node", "explain, IPVS mode").with_file(env!("CARGO_BIN_EXE_kube-proxy-rs"));
    run.share(share).boot(DONE);
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
    let synced = |log: &str| ["IPv4", "IPv6"].iter().all(|f| log.contains(&format!("synced IPVS rules ip_family={f}")));
    while !synced(&std::fs::read_to_string(&log).unwrap_or_default()) {
        assert!(proxy.0.try_wait().unwrap().is_none(), "the proxy exited:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        assert!(Instant::now() < deadline, "no IPVS sync in 240 s:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(200));
    }
    let live = ns.command(VM_BINARY).args(["explain", "dump", "--mode", "ipvs"]).output().unwrap();
    drop(proxy);
    explain_services(&ns, share, &proxy_flags, "clean");
    let packet = ns.command(VM_BINARY).args(["explain", "packet", "tcp", "fd00:244::9", "[fd00:96::10]:80", "--from-pod", "-o", "json"]).output().unwrap();
    assert!(packet.status.success(), "explain packet on the IPv6 ClusterIP: {}", String::from_utf8_lossy(&packet.stderr));
    std::fs::write(share.join("web6-packet.json"), &packet.stdout).unwrap();
    for edit in HAND_EDITS {
        ns.exec(edit[0], &edit[1..]).unwrap_or_else(|e| panic!("{edit:?}: {e:#}"));
    }
    explain_services(&ns, share, &proxy_flags, "drifted");
    assert!(live.status.success(), "live dump: {}", String::from_utf8_lossy(&live.stderr));
    std::fs::write(share.join("live.dump"), &live.stdout).unwrap();
    let plan = ns.command(VM_BINARY).args(["explain", "dump", "--mode", "ipvs", "--"]).args(proxy_flags).output().unwrap();
    assert!(plan.status.success(), "planned dump: {}", String::from_utf8_lossy(&plan.stderr));
    std::fs::write(share.join("plan.dump"), &plan.stdout).unwrap();
}

/// `explain service` of storefront/api (`--mode ipvs`) and shop/web6 (the
/// mode found from `kube-ipvs0`) on the live node, JSON and text, into the
/// share as `<service>-<label>.{json,txt}`.
fn explain_services(ns: &testkit::netns::Netns, share: &Path, proxy_flags: &[&str], label: &str) {
    for (service, file, mode) in [("storefront/api", "api", &["--mode", "ipvs"][..]), ("shop/web6", "web6", &[])] {
        for (format, ext) in [("json", "json"), ("text", "txt")] {
            let out = ns.command(VM_BINARY).args(["explain", "service", service, "-o", format]).args(mode).arg("--").args(proxy_flags).output().unwrap();
            assert!(out.status.success(), "explain service {service}: {}", String::from_utf8_lossy(&out.stderr));
            std::fs::write(share.join(format!("{file}-{label}.{ext}")), &out.stdout).unwrap();
        }
    }
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

fn report(share: &Path, file: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(share.join(file)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file} is not JSON ({e}): {text}"))
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value.as_array().unwrap_or_else(|| panic!("not a list: {value}")).iter().map(|l| l.as_str().unwrap().to_string()).collect()
}

/// The one family's report of `report`, which must be `family`'s.
fn only_family<'a>(report: &'a serde_json::Value, family: &str) -> &'a serde_json::Value {
    assert_eq!(report["families"].as_array().map(Vec::len), Some(1), "one family: {report}");
    assert_eq!(report["families"][0]["family"], family, "{report}");
    &report["families"][0]
}

/// Host side: `explain service` saw no drift before the hand edits and
/// exactly the edits after; `explain packet` (IPVS mode found from
/// `kube-ipvs0`) named the IPv6 endpoint.
fn check_services_on_host(share: &Path) {
    let api = report(share, "api-clean.json");
    let clean = only_family(&api, "IPv4");
    assert_eq!(strings(&clean["drift"]["missing"]), Vec::<String>::new(), "{api}");
    assert_eq!(strings(&clean["drift"]["extra"]), Vec::<String>::new(), "{api}");
    let http = &clean["programmed"]["ports"]["http"];
    assert_eq!(http["health_check_node_port"], 32070, "{api}");
    assert_eq!(
        strings(&http["virtual_servers"]),
        [
            "TCP 10.96.10.70:80 rr (cluster IP) -> 10.244.0.18:8080 weight 1, 10.244.0.19:8080 weight 1, 10.244.1.18:8080 weight 1",
            "TCP 192.0.2.20:80 rr (load-balancer IP) -> 10.244.0.18:8080 weight 1, 10.244.0.19:8080 weight 1",
            "TCP 192.168.86.2:30700 rr (node port) -> 10.244.0.18:8080 weight 1, 10.244.0.19:8080 weight 1",
        ],
        "{api}"
    );
    let web6 = report(share, "web6-clean.json");
    let clean6 = only_family(&web6, "IPv6");
    assert_eq!(strings(&clean6["drift"]["missing"]), Vec::<String>::new(), "{web6}");
    assert_eq!(strings(&clean6["drift"]["extra"]), Vec::<String>::new(), "{web6}");
    assert_eq!(
        strings(&clean6["programmed"]["ports"]["http"]["virtual_servers"]),
        ["TCP [fd00:96::10]:80 rr (cluster IP) -> [fd00:244::5]:8080 weight 1"],
        "{web6}"
    );
    assert_eq!(web6["mode"], "ipvs", "found from kube-ipvs0: {web6}");
    let packet = std::fs::read_to_string(share.join("web6-packet.json")).unwrap();
    assert!(packet.contains("\"mode\": \"ipvs\""), "found from kube-ipvs0: {packet}");
    let outcomes = explained_outcomes(&packet).unwrap_or_else(|e| panic!("{e:#}: {packet}"));
    let endpoint: std::net::SocketAddr = "[fd00:244::5]:8080".parse().unwrap();
    let to_endpoint = |o: &testkit::tracer::Outcome| matches!(o, testkit::tracer::Outcome::Dnat { to, .. } if *to == endpoint);
    assert!(outcomes.len() == 1 && outcomes.iter().all(to_endpoint), "the IPv6 ClusterIP leads to its endpoint: {packet}");

    let api = report(share, "api-drifted.json");
    let drifted = only_family(&api, "IPv4");
    assert_eq!(
        strings(&drifted["drift"]["missing"]),
        [
            "real server TCP 10.96.10.70:80 rr -> 10.244.1.18:8080 weight 1",
            "virtual server TCP 192.168.86.2:30700 rr",
            "real server TCP 192.168.86.2:30700 rr -> 10.244.0.18:8080 weight 1",
            "real server TCP 192.168.86.2:30700 rr -> 10.244.0.19:8080 weight 1",
            "ipset KUBE-CLUSTER-IP 10.96.10.70,tcp:80",
        ],
        "{api}"
    );
    assert_eq!(strings(&drifted["drift"]["extra"]), ["real server TCP 10.96.10.70:80 rr -> 10.244.9.9:8080 weight 3"], "{api}");
    let web6 = report(share, "web6-drifted.json");
    let drifted6 = only_family(&web6, "IPv6");
    assert_eq!(strings(&drifted6["drift"]["missing"]), ["real server TCP [fd00:96::10]:80 rr -> [fd00:244::5]:8080 weight 1"], "{web6}");
    assert_eq!(strings(&drifted6["drift"]["extra"]), Vec::<String>::new(), "{web6}");
    println!("--- explain service storefront/api after the hand edits ---\n{}", std::fs::read_to_string(share.join("api-drifted.txt")).unwrap());
    println!("--- explain service shop/web6 after the hand edits ---\n{}", std::fs::read_to_string(share.join("web6-drifted.txt")).unwrap());
}
