//! The binary on a dual-stack node, in a fresh network namespace of its
//! own (a veth with an IPv4 and an IPv6 address, the Node object listing
//! both), fed a dual-stack ClusterIP Service (an IPv4 and an IPv6
//! EndpointSlice) and an IPv6-only LoadBalancer Service with
//! `externalTrafficPolicy: Local`: in iptables mode and in nftables mode
//! each family's rules hold that family's ClusterIP and endpoints and
//! nothing of the other family; the node's `/healthz` and `/livez` answers
//! have exactly the keys of upstream's dual-stack reference answers; the
//! metrics carry both `ip_family` labels; the IPv6-only service's
//! health-check node port answers over IPv6 with its local endpoint.
//! Run with upstream's reference scenario and configuration (node-a's Node
//! has an IPv4 address only; the host has IPv6, so upstream ran an IPv6
//! proxier with nothing to proxy), the IPv6 proxier writes exactly the
//! reference's `ip6tables-save.txt` (iptables mode) and the `ip6
//! kube-proxy` table of its `ruleset.nft` (nftables mode), and the
//! scrape has exactly the series of upstream's dual-stack scrape. An IPv6
//! proxier whose restores always fail leaves the IPv4 one syncing.
//! `--dry-run` prints the primary family's rules.
//! Needs root, `ip`, the iptables tools and `nft`; without them the tests fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/dual_stack.rs"]
mod dual_stack;
#[path = "support/proxy.rs"]
mod proxy;

use dual_stack::{MANIFESTS, dual_stack_node, get, keys_of_body};
use proxy::Proxy;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use testkit::netns::Netns;

const METRICS: &str = "127.0.0.1:10249";
const NODE_HEALTH: &str = "127.0.0.1:10256";

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

fn args(manifests: &Path, mode: &str) -> Vec<String> {
    let manifests = manifests.display().to_string();
    [
        "--proxy-mode", mode, "--manifests", &manifests, "--hostname-override", "node-a",
        "--cluster-cidr", "10.244.0.0/16,fd00:244::/64", "--iptables-backend", "legacy",
        "--iptables-sync-period", "1s", "--iptables-min-sync-period", "0s",
        "--healthz-bind-address", NODE_HEALTH, "--metrics-bind-address", METRICS,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The key paths of the reference's raw answer `file` (headers, then body).
fn reference_keys(file: &str) -> BTreeSet<String> {
    let raw = std::fs::read_to_string(repo_file(file)).unwrap();
    let body = raw.split_once("\r\n\r\n").or_else(|| raw.split_once("\n\n")).unwrap().1;
    keys_of_body(body.trim())
}

/// The node's `/healthz` and `/livez` answer 200 with exactly the keys
/// of upstream's dual-stack answers (`status.IPv4` and `status.IPv6`).
fn check_node_health(ns: &Netns, reference_dir: &str) {
    for (path, file) in [("/healthz", "node-healthz.txt"), ("/livez", "node-livez.txt")] {
        let (status, body) = get(ns, NODE_HEALTH, path);
        assert_eq!(status, "HTTP/1.1 200 OK", "{path}: {body}");
        let expected = reference_keys(&format!("{reference_dir}/{file}"));
        assert!(expected.contains("status.IPv6.lastUpdated"), "the reference is dual-stack: {expected:?}");
        assert_eq!(keys_of_body(&body), expected, "{path} answered {body}");
    }
}

/// Both families' sync metrics are in the scrape.
fn check_metrics(ns: &Netns) {
    let (_, text) = get(ns, METRICS, "/metrics");
    for family in ["IPv4", "IPv6"] {
        let series = format!("kubeproxy_sync_proxy_rules_duration_seconds_count{{ip_family=\"{family}\"}}");
        let line = text.lines().find(|l| l.starts_with(&series)).unwrap_or_else(|| panic!("no {series} in\n{text}"));
        let count: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(count >= 1.0, "{line}");
        let last = format!("kubeproxy_sync_proxy_rules_last_timestamp_seconds{{ip_family=\"{family}\"}}");
        assert!(text.contains(&last), "no {last} in\n{text}");
    }
}

/// The series of a scrape (`name{labels}`, histogram buckets aside).
fn series(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("kubeproxy_") && !l.contains("_bucket{"))
        .filter_map(|l| l.rsplit_once(' ').map(|(series, _)| series.to_string()))
        .collect()
}

/// After the node health was asked once each, our scrape has exactly the
/// `kubeproxy_*` series of upstream's dual-stack scrape: both families'
/// sync metrics, and the conntrack reconciler's for IPv4 only (the IPv6
/// proxier has no UDP service there).
fn check_series_as_upstream(ns: &Netns, reference_dir: &str) {
    let (_, text) = get(ns, METRICS, "/metrics");
    let reference = std::fs::read_to_string(repo_file(&format!("{reference_dir}/metrics-kubeproxy.txt"))).unwrap();
    let (ours, theirs) = (series(&text), series(&reference));
    assert!(theirs.iter().any(|s| s.contains("ip_family=\"IPv6\"")), "the reference is dual-stack: {theirs:#?}");
    let only_ours: Vec<&String> = ours.difference(&theirs).collect();
    let only_theirs: Vec<&String> = theirs.difference(&ours).collect();
    assert!(only_ours.is_empty() && only_theirs.is_empty(), "only ours: {only_ours:#?}\nonly upstream: {only_theirs:#?}");
}

/// The IPv6-only ETP Local service's health check answers over IPv6.
fn check_ipv6_health_check_node_port(ns: &Netns) {
    let (status, body) = get(ns, "[fd00:192::2]:32000", "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert!(body.contains("\"localEndpoints\": 1"), "{body}");
}

fn write_manifests(dir: &tempfile::TempDir) -> PathBuf {
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, MANIFESTS).unwrap();
    path
}

/// Waits until each family's proxier logged a sync with `message` (they
/// sync on runners of their own, in either order); the first sync of each
/// writes the whole initial state.
fn wait_for_both_families(proxy: &mut Proxy, message: &str) {
    let mut missing = vec!["IPv4", "IPv6"];
    while !missing.is_empty() {
        let line = proxy.wait_for(message);
        missing.retain(|family| !line.contains(&format!("{message} ip_family={family}")));
    }
}

#[test]
fn iptables_mode_writes_each_familys_rules_and_reports_both_families() {
    let ns = dual_stack_node("dsipt");
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = Proxy::start_in(&ns, &args(&write_manifests(&dir), "iptables"));
    wait_for_both_families(&mut proxy, "synced iptables rules");
    let v6 = ns.exec("ip6tables-legacy-save", &[]).unwrap();
    for needle in ["-d fd00:96::10/128", "--to-destination [fd00:244::5]:8080", "-d fd00:96::20/128", "-d 2001:db8::20/128"] {
        assert!(v6.contains(needle), "{needle} missing from ip6tables-save:\n{v6}");
    }
    assert!(v6.contains("shop/web:http cluster IP") && v6.contains("-s fd00:244::/64"), "{v6}");
    assert!(!v6.contains("10.96.0.10") && !v6.contains("10.244.0.5"), "IPv4 addresses in the IPv6 rules:\n{v6}");

    let v4 = ns.exec("iptables-legacy-save", &[]).unwrap();
    for needle in ["-d 10.96.0.10/32", "--to-destination 10.244.0.5:8080"] {
        assert!(v4.contains(needle), "{needle} missing from iptables-save:\n{v4}");
    }
    assert!(!v4.contains("fd00:") && !v4.contains("shop/web6"), "IPv6 rules in the IPv4 tables:\n{v4}");

    check_node_health(&ns, "testdata/upstream-v1.36/iptables/healthz");
    check_metrics(&ns);
    check_ipv6_health_check_node_port(&ns);
    proxy.stop();

    let out = ns.command(proxy::BINARY).arg("--cleanup").output().unwrap();
    assert!(out.status.success(), "--cleanup failed: {}", String::from_utf8_lossy(&out.stderr));
    for save in ["iptables-legacy-save", "ip6tables-legacy-save"] {
        let left = ns.exec(save, &[]).unwrap();
        assert!(!left.contains("KUBE-SVC-") && !left.contains("KUBE-SERVICES"), "--cleanup left rules in {save}:\n{left}");
    }
}

#[test]
fn nftables_mode_writes_both_tables_and_reports_both_families() {
    let ns = dual_stack_node("dsnft");
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = Proxy::start_in(&ns, &args(&write_manifests(&dir), "nftables"));
    wait_for_both_families(&mut proxy, "synced nftables rules");
    let list = |family: &str| ns.exec("nft", &["list", "table", family, "kube-proxy"]).unwrap();
    let v6 = list("ip6");
    for needle in ["fd00:96::10 . tcp . 80", "fd00:244::5 . 8080", "2001:db8::20 . tcp . 80", "shop/web6/tcp/http"] {
        assert!(v6.contains(needle), "{needle} missing from table ip6 kube-proxy:\n{v6}");
    }
    assert!(!v6.contains("10.96.0.10") && !v6.contains("10.244.0.5"), "IPv4 addresses in the ip6 table:\n{v6}");

    let v4 = list("ip");
    for needle in ["10.96.0.10 . tcp . 80", "10.244.0.5 . 8080"] {
        assert!(v4.contains(needle), "{needle} missing from table ip kube-proxy:\n{v4}");
    }
    assert!(!v4.contains("fd00:") && !v4.contains("shop/web6"), "IPv6 rules in the ip table:\n{v4}");

    check_node_health(&ns, "testdata/upstream-v1.36/nftables/healthz");
    check_metrics(&ns);
    proxy.stop();

    let out = ns.command(proxy::BINARY).arg("--cleanup").output().unwrap();
    assert!(out.status.success(), "--cleanup failed: {}", String::from_utf8_lossy(&out.stderr));
    let tables = ns.exec("nft", &["list", "tables"]).unwrap();
    assert!(!tables.contains("kube-proxy"), "--cleanup left a table:\n{tables}");
}

/// node-a of the reference: `eth0` with the Node's IPv4 address; IPv6 on
/// (`lo` has `::1`).
fn reference_node(label: &str) -> Netns {
    testkit::netns::require_kernel();
    let ns = Netns::new(label).unwrap();
    ns.ip(&["link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"]).unwrap();
    ns.ip(&["addr", "add", "192.168.86.2/24", "dev", "eth0"]).unwrap();
    for link in ["lo", "eth0", "eth0-peer"] {
        ns.ip(&["link", "set", link, "up"]).unwrap();
    }
    ns
}

/// The binary with the reference's own configuration file for `mode` and
/// its cluster state.
fn start_reference(ns: &Netns, mode: &str) -> Proxy {
    let config = repo_file(&format!("testdata/upstream-v1.36/{mode}/kube-proxy-config.yaml")).display().to_string();
    let cluster = repo_file("testdata/upstream-v1.36/cluster.yaml").display().to_string();
    let args: Vec<String> = ["--config", &config, "--manifests", &cluster, "--iptables-backend", "legacy"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    Proxy::start_in(ns, &args)
}

/// An `iptables-save` dump as comparable lines: per table, the chain
/// declarations without counters and every rule; built-in chains keep
/// their order, our chains are compared as sets (upstream's order across
/// services is random).
fn comparable_save(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut table = String::new();
    let mut position: std::collections::BTreeMap<String, usize> = Default::default();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('*') {
            table = name.to_string();
        } else if let Some(decl) = line.strip_prefix(':') {
            out.insert(format!("{table} :{}", decl.split(" [").next().unwrap()));
        } else if let Some(rule) = line.strip_prefix("-A ") {
            let chain = rule.split(' ').next().unwrap();
            let builtin = chain.chars().all(|c| c.is_ascii_uppercase()) && !chain.contains('-');
            let n = position.entry(format!("{table} {chain}")).or_default();
            *n += 1;
            let order = if builtin { format!("#{n} ") } else { String::new() };
            out.insert(format!("{table} {order}-A {rule}"));
        }
    }
    out
}

#[test]
fn the_ipv6_proxier_writes_upstreams_ip6tables_save_for_the_reference_scenario() {
    let ns = reference_node("dsref6");
    let mut proxy = start_reference(&ns, "iptables");
    wait_for_both_families(&mut proxy, "synced iptables rules");
    let ours = comparable_save(&ns.exec("ip6tables-legacy-save", &[]).unwrap());
    let reference = std::fs::read_to_string(repo_file("testdata/upstream-v1.36/iptables/ip6tables-save.txt")).unwrap();
    let theirs = comparable_save(&reference);
    assert!(theirs.len() > 30, "the reference dump was not parsed: {theirs:#?}");
    let only_ours: Vec<&String> = ours.difference(&theirs).collect();
    let only_theirs: Vec<&String> = theirs.difference(&ours).collect();
    assert!(only_ours.is_empty() && only_theirs.is_empty(), "only ours: {only_ours:#?}\nonly upstream: {only_theirs:#?}");
    check_node_health(&ns, "testdata/upstream-v1.36/iptables/healthz");
    check_series_as_upstream(&ns, "testdata/upstream-v1.36/iptables/healthz");
    proxy.stop();
}

/// The `table ip6 kube-proxy { ... }` block of an `nft list` text, as
/// trimmed lines (the reference's table has no set elements, so its lines
/// have no order to differ in but the chains', compared as a set).
fn ip6_table_lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("table ip6 kube-proxy"))
        .take_while(|l| *l != "}")
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_ipv6_proxier_writes_upstreams_ip6_table_for_the_reference_scenario() {
    let ns = reference_node("dsrefnft");
    let mut proxy = start_reference(&ns, "nftables");
    wait_for_both_families(&mut proxy, "synced nftables rules");
    let listed = ns.exec("nft", &["list", "table", "ip6", "kube-proxy"]).unwrap();
    let mut ours = ip6_table_lines(&listed);
    // ours by design (crates/nftables/README.md): the direct-dispatch map,
    // empty here (no IPv6 port of the scenario has exactly one endpoint),
    // and the `services` rule that uses it
    for line in [
        "map service-ips-direct {",
        "type ipv6_addr . inet_proto . inet_service : ipv6_addr . inet_service",
        "comment \"ClusterIP traffic of single-endpoint services, DNATed without a service chain\"",
        "dnat ip6 to ip6 daddr . meta l4proto . th dport map @service-ips-direct",
    ] {
        assert!(ours.remove(line), "no {line:?} in\n{listed}");
    }
    let reference = std::fs::read_to_string(repo_file("testdata/upstream-v1.36/nftables/ruleset.nft")).unwrap();
    let theirs = ip6_table_lines(&reference);
    assert!(theirs.len() > 40, "the reference's ip6 table was not found: {theirs:#?}");
    let only_ours: Vec<&String> = ours.difference(&theirs).collect();
    let only_theirs: Vec<&String> = theirs.difference(&ours).collect();
    assert!(only_ours.is_empty() && only_theirs.is_empty(), "only ours: {only_ours:#?}\nonly upstream: {only_theirs:#?}\n{listed}");
    check_node_health(&ns, "testdata/upstream-v1.36/nftables/healthz");
    check_series_as_upstream(&ns, "testdata/upstream-v1.36/nftables/healthz");
    proxy.stop();
}

/// `ip6tables-legacy-restore` replaced (first in `PATH`) by a script that
/// always fails: the IPv6 proxier's syncs fail and retry, the IPv4 one
/// keeps syncing, the failures are counted for IPv6 only, and `/healthz`
/// stays 200 (a family that never synced counts as starting up, as
/// upstream).
#[test]
fn a_failing_family_does_not_stop_the_other() {
    let ns = dual_stack_node("dsfail");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("ip6tables-legacy-restore");
    std::fs::write(&fake, "#!/bin/sh\necho 'injected failure' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut command = ns.command(proxy::BINARY);
    // The failure is injected into the tool: the native writer (full syncs) would bypass it.
    command.args(args(&write_manifests(&dir), "iptables")).env("PATH", path).env("KPRS_XTABLES_NATIVE", "0");
    let mut proxy = Proxy::start(command);

    // Two IPv4 syncs (the initial one and a periodic one, 1 s apart) while IPv6 fails.
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    let v4 = ns.exec("iptables-legacy-save", &[]).unwrap();
    assert!(v4.contains("--to-destination 10.244.0.5:8080"), "{v4}");
    let v6 = ns.exec("ip6tables-legacy-save", &[]).unwrap();
    assert!(!v6.contains("KUBE-SERVICES"), "the failing restore wrote IPv6 rules:\n{v6}");
    assert!(!proxy.logged("synced iptables rules ip_family=IPv6"), "an IPv6 sync succeeded");
    assert!(proxy.logged("injected failure"), "the IPv6 failure was not logged");

    let (_, text) = get(&ns, METRICS, "/metrics");
    let failures = |family: &str| {
        let series = format!("kubeproxy_sync_proxy_rules_iptables_restore_failures_total{{ip_family=\"{family}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&series)).map_or(0.0, |v| v.parse::<f64>().unwrap())
    };
    assert!(failures("IPv6") >= 1.0, "IPv6 restore failures not counted:\n{text}");
    assert_eq!(failures("IPv4"), 0.0, "{text}");
    let (status, body) = get(&ns, NODE_HEALTH, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let keys = keys_of_body(&body);
    assert!(keys.contains("status.IPv4.healthy") && !keys.contains("status.IPv6"), "{body}");
    proxy.stop();
}

/// `--dry-run` prints the primary family's rules: IPv4 for the Node above,
/// IPv6 once its first address is IPv6 (or `--bind-address` is).
#[test]
fn dry_run_prints_the_primary_familys_rules() {
    let ns = dual_stack_node("dsdry");
    let dir = tempfile::tempdir().unwrap();
    let v4_first = write_manifests(&dir);
    let v6_first = dir.path().join("v6-first.yaml");
    let swapped = MANIFESTS.replacen("  - {type: InternalIP, address: 192.168.0.2}\n", "", 1).replacen(
        "  - {type: InternalIP, address: \"fd00:192::2\"}\n",
        "  - {type: InternalIP, address: \"fd00:192::2\"}\n  - {type: InternalIP, address: 192.168.0.2}\n",
        1,
    );
    std::fs::write(&v6_first, swapped).unwrap();
    let dry_run = |manifests: &Path, extra: &[&str]| {
        let out = ns.command(proxy::BINARY).args(args(manifests, "iptables")).arg("--dry-run").args(extra).output().unwrap();
        assert!(out.status.success(), "--dry-run failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let v4 = dry_run(&v4_first, &[]);
    assert!(v4.contains("-d 10.96.0.10/32") && !v4.contains("fd00:96::10"), "{v4}");
    let v6 = dry_run(&v6_first, &[]);
    assert!(v6.contains("-d fd00:96::10/128") && !v6.contains("10.96.0.10"), "{v6}");
    let bound = dry_run(&v4_first, &["--bind-address", "fd00:192::2"]);
    assert!(bound.contains("-d fd00:96::10/128"), "{bound}");
}
