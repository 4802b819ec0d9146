//! The binary in iptables mode on a real kernel, each test in a fresh
//! network namespace of its own, fed `examples/cluster.yaml` (the upstream
//! reference scenario) as the README runs it: `--dry-run` output is
//! accepted by `iptables-restore --test`; syncs are idempotent and add the
//! built-in jumps once; a service removed from the manifests loses its
//! chains at the next sync; `--cleanup` leaves nothing of ours (kubelet's
//! shared `KUBE-FIREWALL` stays, as with upstream); and
//! `--proxy-mode=ipvs` on a kernel without IPVS falls back to iptables mode
//! with one line saying so; health-check servers follow `nodePortAddresses`;
//! `--init-only` sets the kernel up (with the `--conntrack-*` sysctls) and
//! exits without writing a rule; the native legacy writer's child
//! (`kube-proxy-rs xtables-restore`) leaves the tables
//! `iptables-legacy-restore` leaves, and declines an input it cannot encode;
//! with `--userspace-localhost-nodeports`, `127.0.0.1:<nodePort>` answers
//! (TCP and UDP) through the proxy's listener with `route_localnet` at 0.
//! Needs root; without it the tests fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/proxy.rs"]
mod proxy;
#[path = "support/localhost_nodeports.rs"]
mod localhost_nodeports;

use proxy::{BINARY, PATIENCE, Proxy};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;
use testkit::netns::Netns;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster.yaml")
}

/// The README's flags for the example, plus fast syncs and loopback-only
/// node servers.
fn args(manifests: &Path) -> Vec<String> {
    let manifests = manifests.display().to_string();
    [
        "--manifests", &manifests, "--hostname-override", "node-a", "--cluster-cidr", "10.244.0.0/16",
        "--iptables-backend", "legacy", "--iptables-sync-period", "1s", "--iptables-min-sync-period", "0s",
        "--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `iptables-save` without comments and counters, for comparing states.
fn saved(ns: &Netns) -> String {
    let text = ns.exec("iptables-legacy-save", &[]).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| if l.starts_with(':') { l.split(" [").next().unwrap_or(l) } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `KUBE-SVC-`/`KUBE-SEP-`/... chains whose rules name `port` in a comment.
fn chains_of(save: &str, port: &str) -> Vec<String> {
    let mut chains: Vec<String> = save
        .lines()
        .filter(|l| l.contains(&format!("\"{port}")) || l.contains(&format!(" {port} ")))
        .filter_map(|l| l.strip_prefix("-A "))
        .filter_map(|l| l.split(' ').next())
        .filter(|c| ["KUBE-SVC-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SVL-"].iter().any(|p| c.starts_with(p)))
        .map(String::from)
        .collect();
    chains.sort();
    chains.dedup();
    chains
}

/// The manifests without the Service `name` (its slices stay, unused).
fn without_service(manifests: &str, name: &str) -> String {
    let marker = format!("kind: Service\nmetadata:\n  name: {name}\n");
    manifests.split("\n---\n").filter(|doc| !doc.contains(&marker)).collect::<Vec<_>>().join("\n---\n")
}

#[test]
fn dry_run_output_passes_iptables_restore_test_and_changes_nothing() {
    testkit::netns::require_kernel();
    let ns = Netns::new("dryrun").unwrap();
    let out = ns.command(BINARY).args(args(&example())).arg("--dry-run").output().unwrap();
    assert!(out.status.success(), "--dry-run failed: {}", String::from_utf8_lossy(&out.stderr));
    let rules = String::from_utf8(out.stdout).unwrap();
    assert!(rules.contains("-A KUBE-SERVICES") && rules.contains("COMMIT"), "not restore input:\n{rules}");
    let mut restore = ns.command("iptables-legacy-restore").arg("--test").stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut restore.stdin.take().unwrap(), rules.as_bytes()).unwrap();
    let checked = restore.wait_with_output().unwrap();
    assert!(checked.status.success(), "iptables-restore --test refused it: {}", String::from_utf8_lossy(&checked.stderr));
    assert!(!saved(&ns).contains("KUBE-"), "--dry-run or --test changed the namespace:\n{}", saved(&ns));
}

/// Feeds `input` to `program args` in `ns` (a private lock file); its
/// exit code and stderr.
fn restore_in(ns: &Netns, program: &str, args: &[&str], input: &str, lock: &Path) -> (Option<i32>, String) {
    let mut child = ns.command(program).args(args).env("XTABLES_LOCKFILE", lock).stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_native_writers_child_leaves_the_tables_iptables_legacy_restore_leaves() {
    testkit::netns::require_kernel();
    let (tool, native) = (Netns::new("xtool").unwrap(), Netns::new("xchild").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("xtables.lock");
    let dry_run = |manifests: &Path| {
        let out = tool.command(BINARY).args(args(manifests)).arg("--dry-run").output().unwrap();
        assert!(out.status.success(), "--dry-run failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let changed = dir.path().join("changed.yaml");
    std::fs::write(&changed, without_service(&std::fs::read_to_string(example()).unwrap(), "web")).unwrap();
    for ns in [&tool, &native] {
        for rule in [&["-t", "nat", "-N", "FOREIGN"][..], &["-t", "nat", "-A", "PREROUTING", "-j", "FOREIGN"], &["-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT"]] {
            ns.exec("iptables-legacy", rule).unwrap();
        }
        // The counters the rules count into (the proxy creates them; the restores do not).
        for counter in ["ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"] {
            ns.exec("nfacct", &["add", counter]).unwrap();
        }
    }
    for input in [dry_run(&example()), dry_run(&changed)] {
        let by_tool = restore_in(&tool, "iptables-legacy-restore", &["--noflush", "--counters", "--wait=5"], &input, &lock);
        let by_child = restore_in(&native, BINARY, &["xtables-restore", "--family", "ipv4", "--wait=5"], &input, &lock);
        assert_eq!((by_tool.0, by_child.0), (Some(0), Some(0)), "tool: {}; child: {}", by_tool.1, by_child.1);
        let after = saved(&native);
        assert_eq!(saved(&tool), after, "the child's tables differ from the tool's");
        assert!(after.contains("-A PREROUTING -j FOREIGN") && after.contains("-A KUBE-SERVICES"), "{after}");
    }
    let before = saved(&native);
    let odd = "*nat\n:KUBE-ODD - [0:0]\n-A KUBE-ODD -m owner --uid-owner 0 -j RETURN\nCOMMIT\n";
    let (code, stderr) = restore_in(&native, BINARY, &["xtables-restore", "--family", "ipv4", "--wait=5"], odd, &lock);
    assert_eq!(code, Some(xtables::native::child::EXIT_DECLINED), "{stderr}");
    assert!(stderr.contains("owner"), "the reason names what it cannot encode: {stderr}");
    assert_eq!(saved(&native), before, "a declined input changed the tables");
}

#[test]
fn syncs_are_idempotent_removed_services_lose_their_chains_and_cleanup_leaves_nothing() {
    testkit::netns::require_kernel();
    let ns = Netns::new("binsync").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("cluster.yaml");
    let original = std::fs::read_to_string(example()).unwrap();
    std::fs::write(&manifests, &original).unwrap();

    let mut proxy = Proxy::start_in(&ns, &args(&manifests));
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    assert!(proxy.logged("legacy tables written by the native x_tables writer"), "the first full sync did not go through the native writer's child");
    let first = saved(&ns);
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    let second = saved(&ns);
    assert_eq!(first, second, "a second sync of the same state changed iptables-save");
    for jump in ["-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES", "-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING"] {
        assert_eq!(second.matches(jump).count(), 1, "{jump} not exactly once:\n{second}");
    }

    let web = chains_of(&second, "storefront/web:http");
    assert!(web.iter().any(|c| c.starts_with("KUBE-SVC-")) && web.iter().any(|c| c.starts_with("KUBE-SEP-")), "{web:?}");
    let tmp = dir.path().join("next.yaml");
    std::fs::write(&tmp, without_service(&original, "web")).unwrap();
    std::fs::rename(&tmp, &manifests).unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut after = saved(&ns);
    while web.iter().any(|c| after.contains(c.as_str())) && Instant::now() < deadline {
        proxy.wait_for("synced iptables rules ip_family=IPv4");
        after = saved(&ns);
    }
    let left: Vec<&String> = web.iter().filter(|c| after.contains(c.as_str())).collect();
    assert!(left.is_empty(), "chains of the removed service storefront/web still there: {left:?}\n{after}");
    assert!(after.contains("storefront/cart:grpc"), "the other services lost their rules:\n{after}");
    proxy.stop();

    let out = ns.command(BINARY).arg("--cleanup").output().unwrap();
    assert!(out.status.success(), "--cleanup failed: {}", String::from_utf8_lossy(&out.stderr));
    // KUBE-FIREWALL is kubelet's as much as ours: upstream's cleanup leaves it too.
    let clean = saved(&ns);
    let ours: Vec<&str> = clean.lines().filter(|l| l.contains("KUBE-") && !l.contains("KUBE-FIREWALL")).collect();
    assert!(ours.is_empty(), "--cleanup left something of ours: {ours:#?}");
}

#[test]
fn ipvs_mode_without_kernel_ipvs_falls_back_to_iptables() {
    testkit::netns::require_kernel();
    let ns = Netns::new("ipvsfb").unwrap();
    let mut proxy = Proxy::start_in(&ns, &[args(&example()), vec!["--proxy-mode=ipvs".into()]].concat());
    let kernel_has_ipvs = Path::new("/proc/net/ip_vs").exists();
    if kernel_has_ipvs {
        proxy.wait_for("synced IPVS rules ip_family=IPv4");
    } else {
        let line = proxy.wait_for("falling back to iptables mode");
        assert!(line.contains("the kernel does not support IPVS"), "{line}");
        proxy.wait_for("synced iptables rules ip_family=IPv4");
        assert!(saved(&ns).contains("-A KUBE-SERVICES"), "no iptables-mode rules after the fall-back");
    }
    proxy.stop();
}

#[test]
fn health_check_servers_listen_on_node_port_addresses_only() {
    testkit::netns::require_kernel();
    let ns = Netns::new("hcaddr").unwrap();
    ns.ip(&["link", "add", "kprs0", "type", "veth", "peer", "name", "kprs1"]).unwrap();
    ns.ip(&["addr", "add", "10.9.0.2/24", "dev", "kprs0"]).unwrap();
    ns.ip(&["link", "set", "kprs0", "up"]).unwrap();
    let args = [args(&example()), vec!["--nodeport-addresses=10.9.0.0/24".into()]].concat();
    let mut proxy = Proxy::start_in(&ns, &args);
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    let listening = ns.exec("ss", &["-ltnH"]).unwrap();
    proxy.stop();
    // storefront/api's healthCheckNodePort in examples/cluster.yaml.
    assert!(listening.contains("10.9.0.2:32070"), "not on the nodePortAddresses IP:\n{listening}");
    assert!(!listening.contains("0.0.0.0:32070") && !listening.contains("*:32070"), "on every address:\n{listening}");
}

#[test]
fn init_only_sets_the_kernel_up_writes_no_rule_and_exits() {
    testkit::netns::require_kernel();
    let ns = Netns::new("initonly").unwrap();
    let route_localnet = || ns.exec("sysctl", &["-n", "net.ipv4.conf.all.route_localnet"]).unwrap().trim().to_string();
    assert_eq!(route_localnet(), "0", "a fresh namespace");
    let out = ns.command(BINARY).args(args(&example())).arg("--init-only").output().unwrap();
    assert!(out.status.success(), "--init-only failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(route_localnet(), "1", "localhost NodePorts need route_localnet");
    assert!(!saved(&ns).contains("KUBE-"), "--init-only wrote rules:\n{}", saved(&ns));
}

#[test]
fn conntrack_flags_set_the_namespaces_conntrack_sysctls() {
    testkit::netns::require_kernel();
    let ns = Netns::new("ctflags").unwrap();
    let sysctl = |name: &str| ns.exec("sysctl", &["-n", name]).unwrap().trim().to_string();
    let flags = ["--conntrack-tcp-timeout-established=2h", "--conntrack-tcp-timeout-close-wait=30m", "--conntrack-tcp-be-liberal", "--conntrack-udp-timeout=45s"];
    let out = ns.command(BINARY).args(args(&example())).args(flags).arg("--init-only").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "--init-only failed: {stderr}");
    assert_eq!(sysctl("net.netfilter.nf_conntrack_tcp_timeout_established"), "7200");
    assert_eq!(sysctl("net.netfilter.nf_conntrack_tcp_timeout_close_wait"), "1800");
    assert_eq!(sysctl("net.netfilter.nf_conntrack_tcp_be_liberal"), "1");
    assert_eq!(sysctl("net.netfilter.nf_conntrack_udp_timeout"), "45");
    // The table size is global: the kernel refuses it inside a namespace, which is a warning, not a failure.
    if stderr.contains("nf_conntrack_max") {
        assert!(stderr.contains("WARN") && stderr.contains("leaving it as it is"), "{stderr}");
    }
}

#[test]
fn oom_score_adj_is_applied_to_the_process() {
    testkit::netns::require_kernel();
    let ns = Netns::new("oomscore").unwrap();
    let oom_score_adj = |proxy: &Proxy| std::fs::read_to_string(format!("/proc/{}/oom_score_adj", proxy.pid())).unwrap().trim().to_string();
    // Lowering the score needs CAP_SYS_RESOURCE, which a container may lack:
    // then the proxy says so and goes on, as upstream.
    let mut proxy = Proxy::start_in(&ns, &args(&example()));
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    let refused = proxy.logged("cannot apply oomScoreAdj; going on value=-999");
    assert!(oom_score_adj(&proxy) == "-999" || refused, "upstream's default -999 neither applied nor refused with a warning");
    proxy.stop();
    let mut proxy = Proxy::start_in(&ns, &[args(&example()), vec!["--oom-score-adj=250".to_string()]].concat());
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    assert_eq!(oom_score_adj(&proxy), "250");
    proxy.stop();
}

#[test]
fn userspace_localhost_nodeports_answer_with_route_localnet_off() {
    testkit::netns::require_kernel();
    let ns = Netns::new("iptlhnp").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifests = localhost_nodeports::prepare(&ns, dir.path());
    assert_eq!(localhost_nodeports::route_localnet(&ns), "0");
    let mut flags = args(&manifests);
    flags.push(localhost_nodeports::FLAG.into());
    let mut proxy = Proxy::start_in(&ns, &flags);
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    localhost_nodeports::assert_answers(&ns);
    proxy.stop();
    assert_eq!(localhost_nodeports::route_localnet(&ns), "0", "route_localnet was set");
    let nat = ns.exec("iptables-legacy-save", &["-t", "nat"]).unwrap();
    assert!(nat.contains("! -d 127.0.0.0/8") && nat.contains("-j KUBE-NODEPORTS"), "NodePorts not kept off loopback:\n{nat}");
}
