//! Golden files of the rendered restore input, one focused scenario per
//! feature, in upstream's test address convention. Every ruleset must also
//! pass the jump-consistency check.

#![allow(clippy::unwrap_used)]

use plan::{LocalDetection, NodePortAddresses, Options};
use iptables::Ruleset;
use iptables::render::{RenderOptions, Rendered, consistency_problems, render};
use model::IpFamily;
use model::Snapshot;
use std::collections::BTreeMap;
use testkit::builders::*;

/// Upstream's test configuration: local traffic detected by 10.0.0.0/8.
fn opts() -> RenderOptions {
    RenderOptions { common: Options::with_cluster_cidr(cluster_cidr()), ..RenderOptions::default() }
}

/// Renders, checks consistency and the kernel round trip, and returns the
/// restore text.
fn golden(snapshot: &Snapshot, opts: &RenderOptions) -> String {
    let rendered = render(snapshot, opts);
    assert_consistent(&rendered);
    assert_kernel_round_trip(snapshot, opts);
    rendered.ruleset.to_restore()
}

/// Applies the rules (without nfacct matches, whose objects only the
/// applier creates) to a fresh namespace and checks that `iptables-save`
/// prints every rule exactly as rendered, in order, chain by chain.
fn assert_kernel_round_trip(snapshot: &Snapshot, opts: &RenderOptions) {
    testkit::netns::require_kernel();
    let ruleset = render(snapshot, &RenderOptions { nfacct: false, ..opts.clone() }).ruleset;
    let saved = apply_in_fresh_netns(&ruleset, opts.common.family);
    assert_eq!(rules_by_chain(&ruleset), saved_rules_by_chain(&saved), "iptables-save differs from the rendering");
}

type ChainRules = BTreeMap<(String, String), Vec<String>>;

fn push_rule(out: &mut ChainRules, table: &str, line: &str, prepend: bool) {
    let (chain, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rules = out.entry((table.to_string(), chain.to_string())).or_default();
    if prepend { rules.insert(0, rest.to_string()) } else { rules.push(rest.to_string()) }
}

/// Our rules by (table, chain), built-in jumps prepended as applied.
fn rules_by_chain(ruleset: &Ruleset) -> ChainRules {
    let mut out = ChainRules::new();
    for (table, rules) in ruleset.tables() {
        rules.rules.iter().for_each(|r| push_rule(&mut out, table.as_str(), &r.to_string(), false));
    }
    for jump in &ruleset.builtin_jumps {
        push_rule(&mut out, jump.table.as_str(), &jump.rule_line(), true);
    }
    out
}

fn saved_rules_by_chain(saved: &str) -> ChainRules {
    let mut out = ChainRules::new();
    let mut table = "";
    for line in saved.lines() {
        if let Some(t) = line.strip_prefix('*') {
            table = t;
        } else if let Some(rule) = line.strip_prefix("-A ") {
            push_rule(&mut out, table, rule, false);
        }
    }
    out
}

/// Restores `ruleset` into a fresh namespace, prepends the built-in jumps
/// and returns `iptables-save`.
fn apply_in_fresh_netns(ruleset: &Ruleset, family: IpFamily) -> String {
    use std::io::Write;
    let ns = testkit::netns::Netns::new("golden").unwrap();
    let prefix = if family == IpFamily::V4 { "iptables" } else { "ip6tables" };
    let mut child = ns
        .command(&format!("{prefix}-legacy-restore"))
        .arg("--noflush")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(ruleset.to_restore().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "restore failed: {}", String::from_utf8_lossy(&out.stderr));
    for jump in &ruleset.builtin_jumps {
        let mut args = vec!["-w", "-t", jump.table.as_str(), "-I", jump.chain];
        args.extend(jump.args.iter().map(String::as_str));
        ns.exec(&format!("{prefix}-legacy"), &args).unwrap();
    }
    ns.exec(&format!("{prefix}-legacy-save"), &[]).unwrap()
}

fn assert_consistent(rendered: &Rendered) {
    let problems = consistency_problems(&rendered.ruleset);
    assert!(problems.is_empty(), "inconsistent ruleset:\n{}", problems.join("\n"));
}

/// The usual two endpoints of a service: one here, one elsewhere.
fn two_endpoints(port: u16) -> [EndpointBuilder; 2] {
    [endpoint(pod_ip(1), port).local(), endpoint(pod_ip(2), port)]
}

#[test]
fn static_chains_and_builtin_jumps() {
    let rendered = render(&snapshot().build(), &opts());
    assert_consistent(&rendered);
    assert_kernel_round_trip(&snapshot().build(), &opts());
    let jumps: Vec<String> = rendered
        .ruleset
        .builtin_jumps
        .iter()
        .map(|j| format!("{} -I {}", j.table, j.rule_line()))
        .collect();
    insta::assert_snapshot!("static", format!("{}\n{}", jumps.join("\n"), rendered.ruleset.to_restore()));
}

#[test]
fn cluster_ip_with_port_remapping_and_three_endpoints() {
    let snap = snapshot()
        .service(
            tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80),
            [endpoint(pod_ip(1), 8080).local(), endpoint(pod_ip(2), 8080), endpoint(pod_ip(10), 8080)],
        )
        .build();
    insta::assert_snapshot!("cluster_ip", golden(&snap, &opts()));
}

#[test]
fn multi_port_tcp_and_udp() {
    let snap = snapshot()
        .service(tcp_port("kube-system", "dns", "dns", cluster_ip(10), 53).udp(), two_endpoints(5353))
        .service(tcp_port("kube-system", "dns", "dns-tcp", cluster_ip(10), 53), two_endpoints(5353))
        .build();
    insta::assert_snapshot!("multi_port", golden(&snap, &opts()));
}

#[test]
fn node_port_cluster_policy() {
    let snap = snapshot()
        .service(tcp_port("ns2", "svc2", "p80", cluster_ip(42), 80).node_port(3001), two_endpoints(80))
        .build();
    insta::assert_snapshot!("node_port", golden(&snap, &opts()));
}

#[test]
fn load_balancer_ingress_ips() {
    let port = tcp_port("ns3", "svc3", "p80", cluster_ip(43), 80).node_port(3003).lb_ip(lb_ip(4)).lb_ip(lb_ip(5));
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("load_balancer", golden(&snap, &opts()));
}

#[test]
fn external_ips() {
    let port = tcp_port("ns4", "svc4", "p80", cluster_ip(44), 80).external_ip(external_ip(33));
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("external_ip", golden(&snap, &opts()));
}

#[test]
fn client_ip_affinity() {
    let port = tcp_port("ns5", "svc5", "p80", cluster_ip(45), 80).affinity(10800);
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("affinity", golden(&snap, &opts()));
}

#[test]
fn masquerade_all() {
    let port = tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80);
    let snap = snapshot().service(port, two_endpoints(80)).build();
    let opts = RenderOptions { common: Options { masquerade_all: true, ..opts().common }, ..opts() };
    insta::assert_snapshot!("masquerade_all", golden(&snap, &opts));
}

#[test]
fn no_local_traffic_detection() {
    let port = tcp_port("ns2", "svc2", "p80", cluster_ip(42), 80).node_port(3002).etp_local();
    let snap = snapshot().service(port, two_endpoints(80)).build();
    let opts = RenderOptions::default();
    insta::assert_snapshot!("no_local_detection", golden(&snap, &opts));
}

/// `BridgeInterface` and `InterfaceNamePrefix`: upstream's `! -i` /
/// `-i` matches where the CIDR detector has `! -s` / `-s`, accepted by
/// the kernel and saved back as rendered.
#[test]
fn local_traffic_detected_by_interface() {
    let port = tcp_port("ns2", "svc2", "p80", cluster_ip(42), 80).node_port(3002).etp_local();
    let snap = snapshot().service(port, two_endpoints(80)).build();
    let cases = [(LocalDetection::BridgeInterface("cbr0".into()), "cbr0"), (LocalDetection::InterfaceNamePrefix("veth".into()), "veth+")];
    for (detection, iface) in cases {
        let opts = RenderOptions { common: Options { local_detection: detection, ..Options::default() }, ..RenderOptions::default() };
        let text = golden(&snap, &opts);
        let masq = format!("-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -d 172.30.0.42/32 ! -i {iface} -p tcp -m comment --comment \"ns2/svc2:p80 cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n");
        let pods = format!("-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -i {iface} -m comment --comment \"pod traffic for ns2/svc2:p80 external destinations\" -j KUBE-SVC-GNZBNJ2PO5MGZ6GT\n");
        let node = "-A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment \"masquerade LOCAL traffic for ns2/svc2:p80 external destinations\"";
        assert!(text.contains(&masq), "{masq}\nmissing from\n{text}");
        assert!(text.contains(&pods), "{pods}\nmissing from\n{text}");
        assert!(text.find(&pods) < text.find(node), "pod traffic short-circuits first");
        assert!(!text.contains("! -s 10."), "no CIDR detection: {text}");
    }
}

#[test]
fn load_balancer_source_ranges() {
    let port = tcp_port("ns6", "svc6", "p80", cluster_ip(46), 80)
        .node_port(3006)
        .lb_ip(lb_ip(6))
        .source_range("203.0.113.0/25")
        .source_range("192.168.0.0/24");
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("source_ranges", golden(&snap, &opts()));
}

#[test]
fn source_ranges_without_the_node_ip() {
    let port = tcp_port("ns6", "svc6", "p80", cluster_ip(46), 80).lb_ip(lb_ip(6)).source_range("203.0.113.0/25");
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("source_ranges_no_node", golden(&snap, &opts()));
}

#[test]
fn external_policy_local_with_local_endpoints() {
    let port = tcp_port("ns7", "svc7", "p80", cluster_ip(47), 80)
        .node_port(3007)
        .lb_ip(lb_ip(7))
        .etp_local()
        .health_check_node_port(30007);
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("etp_local", golden(&snap, &opts()));
}

#[test]
fn external_policy_local_without_local_endpoints() {
    let port = tcp_port("ns7", "svc7", "p80", cluster_ip(47), 80)
        .node_port(3007)
        .lb_ip(lb_ip(7))
        .external_ip(external_ip(7))
        .etp_local()
        .health_check_node_port(30007);
    let snap = snapshot().service(port, [endpoint(pod_ip(2), 80)]).build();
    let rendered = render(&snap, &opts());
    assert_eq!(rendered.no_local_endpoints.external, 1);
    assert_eq!(rendered.no_local_endpoints.internal, 0);
    insta::assert_snapshot!("etp_local_no_local", golden(&snap, &opts()));
}

#[test]
fn internal_policy_local_with_local_endpoints() {
    let port = tcp_port("ns8", "svc8", "p80", cluster_ip(48), 80).itp_local();
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("itp_local", golden(&snap, &opts()));
}

#[test]
fn internal_policy_local_without_local_endpoints() {
    let port = tcp_port("ns8", "svc8", "p80", cluster_ip(48), 80).itp_local();
    let snap = snapshot().service(port, [endpoint(pod_ip(2), 80)]).build();
    let rendered = render(&snap, &opts());
    assert_eq!(rendered.no_local_endpoints.internal, 1);
    insta::assert_snapshot!("itp_local_no_local", golden(&snap, &opts()));
}

#[test]
fn both_policies_local_on_a_node_port() {
    let port = tcp_port("ns9", "svc9", "p80", cluster_ip(49), 80).node_port(3009).itp_local().etp_local();
    let snap = snapshot().service(port, two_endpoints(80)).build();
    insta::assert_snapshot!("itp_etp_local", golden(&snap, &opts()));
}

#[test]
fn no_endpoints_rejects() {
    let port = tcp_port("ns10", "svc10", "p80", cluster_ip(50), 80)
        .node_port(3010)
        .external_ip(external_ip(10))
        .lb_ip(lb_ip(10));
    let snap = snapshot().service(port, [endpoint(pod_ip(3), 80).not_ready()]).build();
    let rendered = render(&snap, &opts());
    assert_eq!(rendered.no_local_endpoints, Default::default(), "no endpoints is not 'no local endpoints'");
    insta::assert_snapshot!("no_endpoints", golden(&snap, &opts()));
}

#[test]
fn terminating_endpoints_are_a_fallback() {
    let snap = snapshot()
        .service(
            tcp_port("ns11", "svc11", "p80", cluster_ip(51), 80),
            [
                endpoint(pod_ip(1), 80).local().terminating(true),
                endpoint(pod_ip(2), 80).terminating(true),
                endpoint(pod_ip(3), 80).terminating(false),
            ],
        )
        .build();
    insta::assert_snapshot!("terminating", golden(&snap, &opts()));
}

#[test]
fn node_port_addresses_restrict_node_ports() {
    let port = tcp_port("ns2", "svc2", "p80", cluster_ip(42), 80).node_port(3001);
    let snap = snapshot().service(port, two_endpoints(80)).build();
    let opts = RenderOptions {
        common: Options {
            node_port_addresses: NodePortAddresses::Cidrs(vec![
                "192.168.0.0/24".parse().unwrap(),
                "127.0.0.0/8".parse().unwrap(),
            ]),
            ..opts().common
        },
        local_addresses: vec![node_ip(), "127.0.0.1".parse().unwrap(), "10.1.1.1".parse().unwrap()],
        ..opts()
    };
    insta::assert_snapshot!("node_port_addresses", golden(&snap, &opts));
}

#[test]
fn node_port_addresses_primary() {
    let port = tcp_port("ns2", "svc2", "p80", cluster_ip(42), 80).node_port(3001);
    let snap = snapshot().service(port, two_endpoints(80)).build();
    let common = Options { node_port_addresses: NodePortAddresses::Primary, ..opts().common };
    let opts = RenderOptions { common, ..opts() };
    insta::assert_snapshot!("node_port_primary", golden(&snap, &opts));
}

#[test]
fn without_localhost_node_ports_or_nfacct() {
    let port = tcp_port("ns2", "svc2", "p80", cluster_ip(42), 80).node_port(3001);
    let snap = snapshot().service(port, two_endpoints(80)).build();
    let opts = RenderOptions { common: Options { localhost_nodeports: false, ..opts().common }, nfacct: false, ..opts() };
    insta::assert_snapshot!("no_localhost_no_nfacct", golden(&snap, &opts));
}

#[test]
fn ipv6_family() {
    let v6 = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    let port = tcp_port("ns1", "svc1", "p80", v6("fd00:172:30::41"), 80)
        .node_port(3001)
        .lb_ip(v6("2001:db8::4"))
        .source_range("2001:db8:1::/64")
        .affinity(300);
    let eps = [endpoint(v6("fd00:10:180::1"), 80).local(), endpoint(v6("fd00:10:180::2"), 80)];
    let v4 = tcp_port("ns2", "v4-only", "p80", cluster_ip(42), 80);
    let snap = snapshot().service(port, eps).service(v4, two_endpoints(80)).build();
    let opts = RenderOptions {
        common: Options {
            family: IpFamily::V6,
            local_detection: LocalDetection::ClusterCidr(vec!["fd00:10::/32".parse().unwrap()]),
            ..Options::default()
        },
        ..RenderOptions::default()
    };
    insta::assert_snapshot!("ipv6", golden(&snap, &opts));
}

#[test]
fn large_clusters_drop_per_endpoint_comments() {
    let build = |n: u16| {
        let eps: Vec<_> = (1..=n).map(|i| endpoint(pod_ip(i), 80)).collect();
        snapshot().service(tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80), eps).build()
    };
    let commented = |n: u16| {
        let ruleset = render(&build(n), &opts()).ruleset;
        let sep_rules: Vec<String> =
            ruleset.nat.rules.iter().filter(|r| r.chain().starts_with("KUBE-SEP-")).map(|r| r.to_string()).collect();
        assert_eq!(sep_rules.len(), 2 * usize::from(n));
        sep_rules.iter().filter(|r| r.contains("--comment")).count()
    };
    // Upstream's threshold: more than 1000 endpoints in total.
    assert_eq!(commented(1000), 2000);
    assert_eq!(commented(1001), 0);
    let ruleset = render(&build(1001), &opts()).ruleset;
    let svc: Vec<String> =
        ruleset.nat.rules.iter().filter(|r| r.chain().starts_with("KUBE-SVC-")).map(|r| r.to_string()).collect();
    assert!(svc[0].contains("\"ns1/svc1:p80 cluster IP\""), "the masquerade rule keeps its comment");
    assert!(svc[1..].iter().all(|r| !r.contains("--comment")));
    assert_consistent(&render(&build(1001), &opts()));
}

/// Endpoints hinted for `zones` on node `node` (this node when it is
/// [`NODE_NAME`]).
fn zoned_endpoint(n: u16, node: &str, zones: &[&str]) -> model::Endpoint {
    endpoint(pod_ip(n), 80).on_node(node).build().with_hints(model::EndpointHints::new(zones.iter().copied(), Vec::<&str>::new()))
}

#[test]
fn topology_hints_keep_cluster_traffic_in_the_nodes_zone() {
    let port = tcp_port("ns11", "svc11", "p80", cluster_ip(51), 80).node_port(3011);
    let eps = [
        zoned_endpoint(1, NODE_NAME, &["zone-a"]),
        zoned_endpoint(2, OTHER_NODE, &["zone-b"]),
        zoned_endpoint(3, OTHER_NODE, &["zone-a"]),
    ];
    let mut snap = snapshot().service(port, eps).build();
    snap.node.zone = Some("zone-a".into());
    let text = golden(&snap, &opts());
    assert!(!text.contains(&pod_ip(2).to_string()), "zone-b's endpoint has no rule:\n{text}");
    assert!(text.contains(&pod_ip(3).to_string()));
    insta::assert_snapshot!("topology_zone", text);
    snap.node.zone = Some("zone-c".into());
    let fallback = render(&snap, &opts()).ruleset.to_restore();
    assert!(fallback.contains(&pod_ip(2).to_string()), "no endpoint for zone-c: every endpoint");
}
