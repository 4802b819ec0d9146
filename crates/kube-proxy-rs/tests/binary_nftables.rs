//! The binary in nftables mode on a real kernel, each test in a fresh
//! network namespace of its own, fed `examples/cluster.yaml` (the upstream
//! reference scenario): the `ip kube-proxy` table appears; a second (full)
//! sync of the same state writes nothing, nor does a restarted proxy's
//! first; a service removed from the manifests
//! loses its chains and map elements at the next sync; `--cleanup` deletes
//! our tables and nothing else; `--dry-run` output is accepted by
//! `nft -c -f` and changes nothing, and its `cluster-ips-check` chain
//! for the reference cluster equals upstream's (the ServiceCIDR's drop of
//! unallocated ClusterIPs included); starting in iptables mode removes the
//! table nftables mode left, and nftables mode iptables mode's chains;
//! `--init-only` writes nothing; a stale UDP conntrack flow (to an endpoint
//! the service no longer has) is deleted after a sync, a live one kept; `/metrics` lists every metric name of
//! upstream's nftables-mode scrape and none of iptables mode's own; with
//! `--userspace-localhost-nodeports`, `127.0.0.1:<nodePort>` answers (TCP
//! and UDP) through the proxy's listener with `route_localnet` at 0, and
//! without it does not (upstream's nftables mode has no localhost NodePorts).
//! Needs root and `nft`; without them the tests fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/proxy.rs"]
mod proxy;
#[path = "support/localhost_nodeports.rs"]
mod localhost_nodeports;

use proxy::{BINARY, PATIENCE, Proxy};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Instant;
use testkit::netns::Netns;

const METRICS: &str = "127.0.0.1:10249";
const HEALTH: &str = "127.0.0.1:10256";
const SYNCED: &str = "synced nftables rules ip_family=IPv4";

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

fn example() -> PathBuf {
    repo_file("examples/cluster.yaml")
}

/// The chain `name` of an `nft list` / `nft -f` text: its lines up to the
/// closing brace, each trimmed.
fn chain_block(text: &str, name: &str) -> Vec<String> {
    let header = format!("chain {name} {{");
    text.lines()
        .map(str::trim)
        .skip_while(|l| *l != header)
        .take_while(|l| *l != "}")
        .map(str::to_string)
        .collect()
}

/// The README's flags for the example in nftables mode, plus fast syncs
/// and loopback-only node servers.
fn args(manifests: &Path) -> Vec<String> {
    let manifests = manifests.display().to_string();
    [
        "--proxy-mode", "nftables", "--manifests", &manifests, "--hostname-override", "node-a",
        "--cluster-cidr", "10.244.0.0/16", "--iptables-sync-period", "1s", "--iptables-min-sync-period", "0s",
        "--healthz-bind-address", HEALTH, "--metrics-bind-address", METRICS,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `nft list table ip kube-proxy`, or `None` if there is no such table.
fn table(ns: &Netns) -> Option<String> {
    ns.exec("nft", &["list", "table", "ip", "kube-proxy"]).ok()
}

/// Every table in the namespace (`nft list tables`).
fn tables(ns: &Netns) -> String {
    ns.exec("nft", &["list", "tables"]).unwrap()
}

/// The manifests without the Service `name` (its slices stay, unused).
fn without_service(manifests: &str, name: &str) -> String {
    let marker = format!("kind: Service\nmetadata:\n  name: {name}\n");
    manifests.split("\n---\n").filter(|doc| !doc.contains(&marker)).collect::<Vec<_>>().join("\n---\n")
}

/// The value of `key=` in a sync log line.
fn field(line: &str, key: &str) -> String {
    let rest = line.split(&format!(" {key}=")).nth(1).unwrap_or_else(|| panic!("no {key} in {line}"));
    rest.split(' ').next().unwrap_or_default().to_string()
}

#[test]
fn dry_run_output_passes_nft_check_and_changes_nothing() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftdry").unwrap();
    let out = ns.command(BINARY).args(args(&example())).arg("--dry-run").output().unwrap();
    assert!(out.status.success(), "--dry-run failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("table ip kube-proxy {"), "not nft text:\n{text}");
    assert!(text.contains("storefront/web/tcp/http"), "the example's services are missing:\n{text}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ruleset.nft");
    std::fs::write(&path, &text).unwrap();
    let checked = ns.exec("nft", &["-c", "-f", path.to_str().unwrap()]);
    assert!(checked.is_ok(), "nft -c -f refused the --dry-run output: {checked:?}\n{text}");
    assert!(table(&ns).is_none(), "--dry-run or nft -c created our table:\n{}", tables(&ns));
}

#[test]
fn dry_run_of_the_reference_cluster_drops_traffic_to_unallocated_cluster_ips_as_upstream() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftcidr").unwrap();
    let cluster = repo_file("testdata/upstream-v1.36/cluster.yaml");
    let out = ns.command(BINARY).args(args(&cluster)).arg("--dry-run").output().unwrap();
    assert!(out.status.success(), "--dry-run failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let reference = std::fs::read_to_string(repo_file("testdata/upstream-v1.36/nftables/ruleset.nft")).unwrap();
    let ours = chain_block(&text, "cluster-ips-check");
    assert_eq!(ours, chain_block(&reference, "cluster-ips-check"), "{text}");
    assert!(
        ours.iter().any(|l| l == r#"ip daddr 10.96.0.0/12 drop comment "Drop traffic to unallocated ClusterIPs""#),
        "{ours:?}"
    );
}

#[test]
fn table_appears_resyncs_write_nothing_removed_services_go_and_cleanup_deletes_it() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftsync").unwrap();
    // Another program's table: never touched, by syncs or by --cleanup.
    ns.exec("nft", &["add", "table", "ip", "someone-else"]).unwrap();
    ns.exec("nft", &["add", "chain", "ip", "someone-else", "c"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("cluster.yaml");
    let original = std::fs::read_to_string(example()).unwrap();
    std::fs::write(&manifests, &original).unwrap();

    let mut proxy = Proxy::start_in(&ns, &args(&manifests));
    let first_line = proxy.wait_for(SYNCED);
    assert_eq!(field(&first_line, "partial"), "false", "the first sync is full: {first_line}");
    let first = table(&ns).expect("no ip kube-proxy table after the first sync");
    // The example's ServiceCIDR 10.96.0.0/12 adds upstream's 77th rule;
    // ours DNATs its two single-endpoint ClusterIP-only ports straight from
    // `services` (two chains of one rule fewer, one fixed rule more).
    assert_eq!(field(&first_line, "rules"), "76", "upstream's table has 77 rules, ours 76: {first_line}");
    assert!(
        first.contains(r#"ip daddr 10.96.0.0/12 drop comment "Drop traffic to unallocated ClusterIPs""#),
        "no drop of unallocated ClusterIPs:\n{first}"
    );
    for name in ["chain services", "map service-ips", "chain nat-prerouting", "storefront/web/tcp/http"] {
        assert!(first.contains(name), "{name} missing:\n{first}");
    }
    // With a 1 s sync period the next sync is a periodic full one: our
    // table read back and diffed against the rendering (anonymous maps
    // compared by content) — nothing to write.
    let again = proxy.wait_for(SYNCED);
    assert_eq!(field(&again, "partial"), "false", "expected a periodic full sync: {again}");
    assert_eq!(field(&again, "changes"), "0", "a full sync of the same state wrote something: {again}");
    assert_eq!(table(&ns).unwrap(), first, "a second sync of the same state changed the table");

    let tmp = dir.path().join("next.yaml");
    std::fs::write(&tmp, without_service(&original, "web")).unwrap();
    std::fs::rename(&tmp, &manifests).unwrap();
    let deadline = Instant::now() + PATIENCE;
    let mut after = table(&ns).unwrap();
    while after.contains("storefront/web/") && Instant::now() < deadline {
        proxy.wait_for(SYNCED);
        after = table(&ns).unwrap();
    }
    assert!(!after.contains("storefront/web/"), "chains or elements of the removed service storefront/web:\n{after}");
    // The file's objects reach the tracker one by one, so a sync may run
    // between the Service's removal and its slice's: the state settles
    // within a few syncs, after which they write nothing.
    proxy.drain();
    let settled: Vec<String> = (0..3).map(|_| proxy.wait_for(SYNCED)).collect();
    let last = settled.last().map(|l| field(l, "changes")).unwrap_or_default();
    assert_eq!(last, "0", "syncs after the removal keep rewriting: {settled:#?}");
    assert!(after.contains("storefront/cart/"), "the other services lost their rules:\n{after}");
    proxy.stop();

    // A restarted proxy finds its table as it left it: its first (full)
    // sync reads it back and writes nothing.
    let before = table(&ns).unwrap();
    let mut proxy = Proxy::start_in(&ns, &args(&manifests));
    let restarted = proxy.wait_for(SYNCED);
    assert_eq!(field(&restarted, "partial"), "false", "{restarted}");
    assert_eq!(field(&restarted, "changes"), "0", "a restarted proxy rewrote an up-to-date table: {restarted}");
    proxy.stop();
    assert_eq!(table(&ns).unwrap(), before, "a restart changed the table");

    let out = ns.command(BINARY).arg("--cleanup").output().unwrap();
    assert!(out.status.success(), "--cleanup failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(table(&ns).is_none(), "--cleanup left our table:\n{}", tables(&ns));
    assert!(tables(&ns).contains("table ip someone-else"), "--cleanup touched another program's table");
}

/// `iptables-legacy-save`.
fn saved(ns: &Netns) -> String {
    ns.exec("iptables-legacy-save", &[]).unwrap()
}

#[test]
fn nftables_mode_removes_what_iptables_mode_left() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftipt").unwrap();
    let iptables: Vec<String> = args(&example()).into_iter().skip(2).chain(["--iptables-backend=legacy".into()]).collect();
    let mut proxy = Proxy::start_in(&ns, &iptables);
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    proxy.stop();
    assert!(saved(&ns).contains(":KUBE-SERVICES"), "iptables mode left no chains to remove");
    let mut proxy = Proxy::start_in(&ns, &args(&example()));
    proxy.wait_for(SYNCED);
    proxy.stop();
    let left: Vec<String> = saved(&ns).lines().filter(|l| l.contains("KUBE-") && !l.contains("KUBE-FIREWALL")).map(String::from).collect();
    assert!(left.is_empty(), "nftables mode kept iptables mode's chains: {left:#?}");
    assert!(table(&ns).is_some(), "nftables mode wrote no table");
}

#[test]
fn init_only_in_nftables_mode_writes_no_table_and_exits() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftinit").unwrap();
    let out = ns.command(BINARY).args(args(&example())).arg("--init-only").output().unwrap();
    assert!(out.status.success(), "--init-only failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(table(&ns).is_none(), "--init-only wrote our table:\n{}", tables(&ns));
    assert!(!saved(&ns).contains("KUBE-"), "--init-only wrote iptables rules:\n{}", saved(&ns));
}

#[test]
fn iptables_mode_removes_what_nftables_mode_left() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftleft").unwrap();
    let mut proxy = Proxy::start_in(&ns, &args(&example()));
    proxy.wait_for(SYNCED);
    proxy.stop();
    assert!(table(&ns).is_some(), "nftables mode left no table to remove");
    let iptables: Vec<String> = args(&example()).into_iter().skip(2).chain(["--iptables-backend=legacy".into()]).collect();
    let mut proxy = Proxy::start_in(&ns, &iptables);
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    proxy.stop();
    assert!(table(&ns).is_none(), "iptables mode kept nftables mode's table:\n{}", tables(&ns));
}

/// `GET path` from inside the namespace; the body of a 200 answer.
fn get(ns: &Netns, addr: &'static str, path: &'static str) -> String {
    let reply = ns
        .run(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
            let mut reply = String::new();
            stream.read_to_string(&mut reply).unwrap();
            reply
        })
        .unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    body.to_string()
}

/// The names in `# TYPE <name> <kind>` lines.
fn metric_names(text: &str) -> BTreeSet<String> {
    text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).map(String::from).collect()
}

#[test]
fn metrics_list_every_upstream_nftables_metric_and_no_iptables_one() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftmetrics").unwrap();
    let mut proxy = Proxy::start_in(&ns, &args(&example()));
    proxy.wait_for(SYNCED);
    proxy.wait_for(SYNCED);
    // Health answers as in the other modes (and counts in the health metrics).
    let healthz = get(&ns, HEALTH, "/healthz");
    assert!(healthz.contains("\"lastUpdated\""), "{healthz}");
    get(&ns, HEALTH, "/livez");
    let ours = get(&ns, METRICS, "/metrics");
    proxy.stop();
    let reference =
        std::fs::read_to_string(repo_file("testdata/upstream-v1.36/nftables/healthz/metrics-kubeproxy.txt")).unwrap();
    let names = metric_names(&ours);
    let missing: Vec<String> = metric_names(&reference).into_iter().filter(|n| !names.contains(n)).collect();
    assert!(missing.is_empty(), "metrics upstream serves in nftables mode but our scrape lacks: {missing:#?}\n{ours}");
    // Stale UDP conntrack cleanup runs after every sync, as in the other modes.
    let reconciles = ours
        .lines()
        .find_map(|l| l.strip_prefix("kubeproxy_conntrack_reconciler_sync_duration_seconds_count{ip_family=\"IPv4\"} "))
        .and_then(|v| v.parse::<f64>().ok());
    assert!(reconciles.is_some_and(|n| n >= 2.0), "conntrack cleanup not run after each sync: {reconciles:?}\n{ours}");
    let iptables_only: Vec<&String> = names.iter().filter(|n| n.contains("iptables")).collect();
    assert!(iptables_only.is_empty(), "iptables mode's metrics in nftables mode: {iptables_only:?}");
}

/// Injects a UDP flow `client:sport -> dst:53` answered by `reply_src:5353`
/// (as DNAT to that endpoint would have left it).
fn inject_udp_flow(ns: &Netns, client: &str, sport: u16, dst: &str, reply_src: &str) {
    let sport = sport.to_string();
    let args = [
        "-I", "-p", "udp", "-s", client, "-d", dst, "--sport", &sport, "--dport", "53", "-r", reply_src, "-q", client,
        "--reply-port-src", "5353", "--reply-port-dst", &sport, "-t", "120",
    ];
    ns.exec("conntrack", &args).unwrap();
}

#[test]
fn stale_udp_flows_are_deleted_after_a_sync() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftstale").unwrap();
    let mut proxy = Proxy::start_in(&ns, &args(&example()));
    proxy.wait_for(SYNCED);
    // kube-system/cluster-dns:dns, UDP 10.96.10.120:53; 10.244.0.24 serves it, 10.244.9.9 never did.
    inject_udp_flow(&ns, "10.244.0.5", 4000, "10.96.10.120", "10.244.9.9");
    inject_udp_flow(&ns, "10.244.0.5", 4001, "10.96.10.120", "10.244.0.24");
    let line = proxy.wait_for("deleted stale UDP conntrack entries");
    proxy.stop();
    assert!(line.contains("entries=1"), "one conntrack entry deleted: {line}");
    let flows = ns.exec("conntrack", &["-L", "-p", "udp"]).unwrap_or_default();
    assert!(!flows.contains("src=10.244.9.9"), "the stale flow is still there:\n{flows}");
    assert!(flows.contains("src=10.244.0.24"), "the flow to a serving endpoint was deleted too:\n{flows}");
}

#[test]
fn userspace_localhost_nodeports_answer_only_with_the_flag() {
    testkit::netns::require_kernel();
    let ns = Netns::new("nftlhnp").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifests = localhost_nodeports::prepare(&ns, dir.path());
    assert_eq!(localhost_nodeports::route_localnet(&ns), "0");
    let mut proxy = Proxy::start_in(&ns, &args(&manifests));
    proxy.wait_for(SYNCED);
    let (tcp, udp) = localhost_nodeports::ask(&ns);
    assert!(tcp.is_err() && udp.is_err(), "127.0.0.1 NodePorts answer without the flag: TCP {tcp:?}, UDP {udp:?}");
    proxy.stop();

    let mut flags = args(&manifests);
    flags.push(localhost_nodeports::FLAG.into());
    let mut proxy = Proxy::start_in(&ns, &flags);
    proxy.wait_for(SYNCED);
    localhost_nodeports::assert_answers(&ns);
    proxy.stop();
    assert_eq!(localhost_nodeports::route_localnet(&ns), "0", "route_localnet was set");
}
