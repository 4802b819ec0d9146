//! Unit tests of the renderer, one per traffic kind, on small hand-built
//! snapshots; assertions on the `nft` text of single chains and elements.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::text::{element_text, rule_text};
use super::*;
use crate::{Expr, SetFlags, TableContents};
use model::{Endpoint, IpFamily, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::IpAddr;
use std::sync::Arc;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn name(svc: &str) -> ServicePortName {
    ServicePortName::new("ns", svc, "p", Protocol::Tcp)
}

fn port(svc: &str, cluster_ip: &str) -> ServicePort {
    ServicePort::cluster_ip(name(svc), ip(cluster_ip), 80)
}

/// `ip@local` for an endpoint on this node, `ip` for one elsewhere.
fn eps(specs: &[&str]) -> Vec<Endpoint> {
    specs
        .iter()
        .map(|s| {
            let (addr, local) = s.split_once('@').map_or((*s, false), |(a, _)| (a, true));
            let node = if local { "node-a" } else { "node-b" };
            Endpoint::ready(ip(addr), 8080, Some(node), local)
        })
        .collect()
}

fn snapshot(ports: Vec<(ServicePort, Vec<Endpoint>)>) -> Snapshot {
    let mut snap = Snapshot {
        node: NodeInfo {
            name: "node-a".into(),
            addresses: vec![ip("192.168.0.2"), ip("fd00::2")],
            ..NodeInfo::default()
        },
        ..Snapshot::default()
    };
    for (p, e) in ports {
        if !e.is_empty() {
            snap.endpoints.insert(p.name.clone(), Arc::new(e));
        }
        snap.services.insert(p.name.clone(), Arc::new(p));
    }
    snap
}

fn options() -> RenderOptions {
    let mut opts = RenderOptions::default();
    opts.common.local_detection =
        plan::LocalDetection::ClusterCidr(vec!["10.244.0.0/16".parse().unwrap()]);
    opts
}

fn facts() -> NodeFacts {
    NodeFacts {
        local_addresses: vec![ip("192.168.0.2"), ip("127.0.0.1"), ip("fd00::2")],
    }
}

fn render_one(p: ServicePort, e: Vec<Endpoint>) -> Ruleset {
    render(&snapshot(vec![(p, e)]), &options(), &facts()).ruleset
}

fn rules(r: &Ruleset, chain: &str) -> Vec<String> {
    r.chain(chain)
        .unwrap_or_else(|| panic!("no chain {chain}"))
        .rules
        .iter()
        .map(rule_text)
        .collect()
}

fn elements(r: &Ruleset, set: &str) -> Vec<String> {
    r.set(set)
        .unwrap_or_else(|| panic!("no set {set}"))
        .elements
        .iter()
        .map(element_text)
        .collect()
}

/// The endpoints `chain` balances over, in key order: its slot's ranges
/// in the shared endpoint map its rule names.
fn picks(r: &Ruleset, chain: &str) -> Vec<String> {
    let slot = r
        .chain(chain)
        .and_then(|c| {
            c.rules
                .iter()
                .flat_map(|rule| &rule.stmts)
                .find_map(|s| match s {
                    Stmt::DnatNumgenSlot { slot, .. } => Some(*slot),
                    _ => None,
                })
        })
        .expect("a rule picking from a slot");
    let map = r.set(&slot.map_name()).expect("the slot's map");
    let mut starts: Vec<(u32, String)> = map
        .elements
        .iter()
        .filter(|e| !e.is_interval_end())
        .filter_map(|e| Some((endpoint_slots::slot_key_number(&e.key[0])?, e)))
        .filter(|(k, _)| (slot.offset..slot.offset + endpoint_slots::SLOT_KEYS).contains(k))
        .map(|(k, e)| {
            let text = element_text(e);
            (k, text.split(" : ").nth(1).unwrap_or_default().to_string())
        })
        .collect();
    starts.sort();
    starts.into_iter().map(|(_, e)| e).collect()
}

fn chain_names(r: &Ruleset) -> Vec<&str> {
    r.chains
        .iter()
        .map(|c| c.chain.name.as_str())
        .filter(|n| n.contains('/'))
        .collect()
}

const SVC: &str = "service-KGB2OZAJ-ns/web/tcp/p";

#[test]
fn cluster_ip_dispatches_to_the_service_chain() {
    let r = render_one(
        port("web", "10.96.0.10"),
        eps(&["10.244.1.5", "10.244.0.5@a"]),
    );
    assert_eq!(elements(&r, names::CLUSTER_IPS), ["10.96.0.10"]);
    assert_eq!(
        elements(&r, names::SERVICE_IPS),
        [format!("10.96.0.10 . tcp . 80 : goto {SVC}")]
    );
    assert_eq!(chain_names(&r), [SVC]);
    assert_eq!(
        rules(&r, SVC),
        ["meta l4proto tcp dnat ip to numgen random mod 65536 map @service-endpoints-0"]
    );
    // upstream's endpoint order: sorted as text
    assert_eq!(picks(&r, SVC), ["10.244.0.5 . 8080", "10.244.1.5 . 8080"]);
    assert!(elements(&r, names::NO_ENDPOINT_SERVICES).is_empty());
}

#[test]
fn cluster_ip_without_endpoints_is_rejected() {
    let r = render_one(port("web", "10.96.0.10"), vec![]);
    assert_eq!(
        elements(&r, names::NO_ENDPOINT_SERVICES),
        ["10.96.0.10 . tcp . 80 comment \"ns/web:p\" : goto reject-chain"]
    );
    assert!(elements(&r, names::SERVICE_IPS).is_empty());
    assert!(chain_names(&r).is_empty());
    // still a ClusterIP: other ports are rejected by cluster-ips-check
    assert_eq!(elements(&r, names::CLUSTER_IPS), ["10.96.0.10"]);
}

#[test]
fn internal_policy_local_uses_the_local_chain_or_drops() {
    let mut p = port("web", "10.96.0.10");
    p.internal_policy_local = true;
    let r = render_one(p.clone(), eps(&["10.244.0.5@a", "10.244.1.5"]));
    let local = SVC.replace("service-", "local-");
    assert_eq!(
        elements(&r, names::SERVICE_IPS),
        [format!("10.96.0.10 . tcp . 80 : goto {local}")]
    );
    assert_eq!(chain_names(&r), [local.as_str()]);
    let out = render(
        &snapshot(vec![(p, eps(&["10.244.1.5"]))]),
        &options(),
        &facts(),
    );
    assert_eq!(
        elements(&out.ruleset, names::NO_ENDPOINT_SERVICES),
        ["10.96.0.10 . tcp . 80 comment \"ns/web:p\" : drop"]
    );
    assert_eq!(
        (
            out.no_local_endpoints.internal,
            out.no_local_endpoints.external
        ),
        (1, 0)
    );
}

#[test]
fn external_ips_go_through_the_external_chain_and_are_masqueraded() {
    let mut p = port("web", "10.96.0.10");
    p.external_ips = vec![ip("192.0.2.50"), ip("fd00::50")];
    let r = render_one(p, eps(&["10.244.1.5"]));
    let ext = SVC.replace("service-", "external-");
    assert!(
        elements(&r, names::SERVICE_IPS).contains(&format!("192.0.2.50 . tcp . 80 : goto {ext}"))
    );
    assert_eq!(
        elements(&r, names::SERVICE_IPS).len(),
        2,
        "the IPv6 externalIP is not in the IPv4 table"
    );
    assert_eq!(
        rules(&r, &ext),
        [
            "meta mark set meta mark | 0x00004000 comment \"masquerade\"",
            &format!("goto {SVC}")
        ]
    );
}

#[test]
fn load_balancer_source_ranges_use_the_firewall_chain() {
    let mut p = port("web", "10.96.0.10");
    p.load_balancer_ips = vec![ip("192.0.2.10"), ip("192.0.2.11")];
    p.load_balancer_source_ranges = vec![
        "203.0.113.0/24".parse().unwrap(),
        "192.168.0.0/24".parse().unwrap(),
    ];
    let r = render_one(p, eps(&["10.244.1.5"]));
    let fw = SVC.replace("service-", "firewall-");
    assert_eq!(
        elements(&r, names::FIREWALL_IPS),
        [
            format!("192.0.2.10 . tcp . 80 : goto {fw}"),
            format!("192.0.2.11 . tcp . 80 : goto {fw}")
        ]
    );
    // the node's IP is in a range: the LB IPs are allowed as sources too
    assert_eq!(
        rules(&r, &fw),
        ["ip saddr != { 192.0.2.10/31, 192.168.0.0/24, 203.0.113.0/24 } drop"]
    );
    let contents = r.contents();
    let anon: Vec<_> = contents
        .sets
        .iter()
        .filter(|s| s.flags.contains(SetFlags::ANONYMOUS))
        .collect();
    assert!(anon.iter().any(|s| s.flags.contains(SetFlags::INTERVAL)));
}

#[test]
fn node_ports_with_external_policy_local_and_no_local_endpoint_are_dropped() {
    let mut p = port("web", "10.96.0.10");
    p.node_port = Some(30080);
    p.external_policy_local = true;
    let out = render(
        &snapshot(vec![(p, eps(&["10.244.1.5"]))]),
        &options(),
        &facts(),
    );
    let r = &out.ruleset;
    let ext = SVC.replace("service-", "external-");
    assert_eq!(
        elements(r, names::SERVICE_NODEPORTS),
        [format!("tcp . 30080 : goto {ext}")]
    );
    assert_eq!(
        elements(r, names::NO_ENDPOINT_NODEPORTS),
        ["tcp . 30080 comment \"ns/web:p\" : drop"]
    );
    assert_eq!(
        rules(r, &ext),
        [
            format!("ip saddr 10.244.0.0/16 goto {SVC} comment \"short-circuit pod traffic\""),
            "fib saddr type local meta mark set meta mark | 0x00004000 comment \"masquerade local traffic\"".to_string(),
            format!("fib saddr type local goto {SVC} comment \"short-circuit local traffic\""),
        ]
    );
    assert_eq!(out.no_local_endpoints.external, 1);
    assert_eq!(
        elements(r, names::NODEPORT_IPS),
        ["192.168.0.2"],
        "primary: the node IP, never loopback"
    );
}

#[test]
fn session_affinity_uses_endpoint_chains_and_affinity_sets() {
    let mut p = port("web", "10.96.0.10");
    p.session_affinity_seconds = Some(10800);
    let r = render_one(p, eps(&["10.244.1.5", "10.244.2.5"]));
    let sets: Vec<_> = r
        .sets
        .iter()
        .filter(|s| s.set.name.starts_with("affinity-"))
        .collect();
    assert_eq!(sets.len(), 2);
    assert_eq!(
        (sets[0].set.timeout_ms, sets[0].set.size),
        (Some(10_800_000), Some(65535))
    );
    let (aff, ep) = (
        &sets[0].set.name,
        sets[0].set.name.replace("affinity-", "endpoint-"),
    );
    assert_eq!(
        rules(&r, &ep),
        [
            format!("update @{aff} {{ ip saddr }}"),
            "meta l4proto tcp dnat to 10.244.1.5:8080".into()
        ]
    );
    let svc = rules(&r, SVC);
    assert_eq!(svc[0], format!("ip saddr @{aff} goto {ep}"));
    assert!(svc[2].starts_with(&format!(
        "numgen random mod 2 vmap {{ 0 : goto {ep}, 1 : goto endpoint-"
    )));
    assert!(
        r.to_nft_text()
            .contains("\t\tflags dynamic,timeout\n\t\ttimeout 3h\n")
    );
}

#[test]
fn local_endpoints_are_hairpin_connections() {
    let mut dns = ServicePort::cluster_ip(
        ServicePortName::new("ns", "dns", "dns", Protocol::Udp),
        ip("10.96.0.53"),
        53,
    );
    dns.port = 53;
    let r = render(
        &snapshot(vec![(dns, eps(&["10.244.0.7@a", "10.244.1.7"]))]),
        &options(),
        &facts(),
    )
    .ruleset;
    assert_eq!(
        elements(&r, names::HAIRPIN_CONNECTIONS),
        ["10.244.0.7 . 10.244.0.7 . udp . 8080"]
    );
}

#[test]
fn fixed_rules_follow_the_options() {
    let snap = snapshot(vec![]);
    let r = render(&snap, &options(), &facts()).ruleset;
    assert_eq!(
        rules(&r, names::CLUSTER_IPS_CHECK).len(),
        1,
        "no service CIDR known: no drop rule"
    );
    assert_eq!(
        rules(&r, names::SERVICES)[0],
        "ip daddr @cluster-ips ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000 comment \"masquerade clusterIP traffic from outside cluster\""
    );

    let mut opts = options();
    opts.service_cidrs = vec![
        "10.96.0.0/12".parse().unwrap(),
        "fd00:96::/108".parse().unwrap(),
    ];
    opts.common.local_detection = plan::LocalDetection::default();
    opts.common.node_port_addresses = plan::NodePortAddresses::All;
    let r = render(&snap, &opts, &facts()).ruleset;
    assert_eq!(
        rules(&r, names::CLUSTER_IPS_CHECK)[1],
        "ip daddr 10.96.0.0/12 drop comment \"Drop traffic to unallocated ClusterIPs\""
    );
    assert_eq!(
        rules(&r, names::CLUSTER_IPS_CHECK).len(),
        2,
        "only the CIDR of the family"
    );
    assert_eq!(
        rules(&r, names::SERVICES),
        [
            "ip daddr . meta l4proto . th dport vmap @service-ips",
            "dnat ip to ip daddr . meta l4proto . th dport map @service-ips-direct",
            "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports"
        ]
    );
    assert_eq!(
        rules(&r, names::NODEPORT_ENDPOINTS_CHECK),
        ["ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports"]
    );
    assert!(r.set(names::NODEPORT_IPS).is_none());
}

#[test]
fn ipv6_tables_dnat_with_ip6_maps() {
    let p = ServicePort::cluster_ip(name("web"), ip("fd00:96::10"), 80);
    let mut opts = RenderOptions::nftables_defaults(IpFamily::V6);
    opts.service_cidrs = vec!["fd00:96::/108".parse().unwrap()];
    let e = ["fd00:244::5", "fd00:244::6"]
        .map(|a| Endpoint::ready(ip(a), 8080, Some("node-b"), false))
        .to_vec();
    let r = render(&snapshot(vec![(p, e)]), &opts, &facts()).ruleset;
    assert_eq!(r.family(), crate::Family::Ip6);
    assert_eq!(
        rules(&r, SVC),
        ["meta l4proto tcp dnat ip6 to numgen random mod 65536 map @service-endpoints-0"]
    );
    assert_eq!(picks(&r, SVC), ["fd00:244::5 . 8080", "fd00:244::6 . 8080"]);
    let map = r.set("service-endpoints-0").expect("the endpoint map");
    assert_eq!(
        map.set.data.as_deref(),
        Some(&[crate::DataType::Ipv6Addr, crate::DataType::InetService][..])
    );
    assert_eq!(
        rules(&r, names::CLUSTER_IPS_CHECK)[1],
        "ip6 daddr fd00:96::/108 drop comment \"Drop traffic to unallocated ClusterIPs\""
    );
    assert_eq!(elements(&r, names::NODEPORT_IPS), ["fd00::2"]);
}

#[test]
fn endpoints_live_in_a_shared_interval_map_and_anonymous_sets_are_named_by_us() {
    let r = render_one(
        port("web", "10.96.0.10"),
        eps(&["10.244.1.5", "10.244.1.6"]),
    );
    let contents = r.contents();
    let map = contents
        .sets
        .iter()
        .find(|s| s.name == "service-endpoints-0")
        .expect("the endpoint map");
    assert!(map.flags.contains(SetFlags::INTERVAL) && !map.flags.contains(SetFlags::ANONYMOUS));
    assert!(map.type_of.is_some(), "nft lists it by typeof");
    // two ranges: each a start and an end marker
    assert_eq!(contents.elements[&TableContents::set_key(map)].len(), 4);
    let rule = contents.rules_of(SVC).next().unwrap();
    assert!(
        rule.exprs
            .iter()
            .any(|e| matches!(e, Expr::Lookup { set, .. } if set.name == "service-endpoints-0"))
    );
    assert!(
        !contents
            .sets
            .iter()
            .any(|s| s.flags.contains(SetFlags::ANONYMOUS))
    );
    assert_ne!(
        anonymous_set_name(SVC, 0),
        anonymous_set_name(&SVC.replace("service-", "local-"), 0)
    );
}

#[test]
fn a_destination_two_services_name_is_dispatched_once() {
    let mut a = port("a", "10.96.0.10");
    a.external_ips = vec![ip("192.0.2.50")];
    let mut b = port("b", "10.96.0.11");
    b.external_ips = vec![ip("192.0.2.50")];
    let r = render(
        &snapshot(vec![
            (a, eps(&["10.244.0.5@a"])),
            (b, eps(&["10.244.0.5@a"])),
        ]),
        &options(),
        &facts(),
    )
    .ruleset;
    let eip: Vec<String> = elements(&r, names::SERVICE_IPS)
        .into_iter()
        .filter(|e| e.starts_with("192.0.2.50 "))
        .collect();
    assert_eq!(eip.len(), 1, "{eip:?}");
    assert_eq!(elements(&r, names::HAIRPIN_CONNECTIONS).len(), 1);
}

#[test]
fn topology_hints_keep_cluster_traffic_in_the_nodes_zone() {
    let zoned = |addr: &str, node: &str, zone: &str| {
        Endpoint::ready(ip(addr), 8080, Some(node), node == "node-a")
            .with_hints(model::EndpointHints::new([zone], Vec::<&str>::new()))
    };
    let endpoints = vec![
        zoned("10.244.0.5", "node-a", "zone-a"),
        zoned("10.244.1.5", "node-b", "zone-b"),
        zoned("10.244.2.5", "node-c", "zone-a"),
    ];
    let mut snap = snapshot(vec![(port("web", "10.96.0.10"), endpoints)]);
    snap.node.zone = Some("zone-a".into());
    let r = render(&snap, &options(), &facts()).ruleset;
    assert_eq!(picks(&r, SVC), ["10.244.0.5 . 8080", "10.244.2.5 . 8080"]);
    snap.node.zone = Some("zone-c".into());
    let r = render(&snap, &options(), &facts()).ruleset;
    assert_eq!(
        picks(&r, SVC).len(),
        3,
        "no endpoint for zone-c: every endpoint"
    );
}

#[test]
fn a_ruleset_taken_apart_gives_the_same_contents() {
    let mut affinity = port("web", "172.30.0.1");
    affinity.session_affinity_seconds = Some(10800);
    let snap = snapshot(vec![
        (affinity, eps(&["10.180.0.1@", "10.180.0.2"])),
        (port("db", "172.30.0.2"), eps(&["10.180.0.3"])),
    ]);
    let ruleset = render(&snap, &options(), &facts()).ruleset;
    let contents = ruleset.contents();
    assert!(
        contents
            .sets
            .iter()
            .any(|s| s.flags.contains(SetFlags::ANONYMOUS))
    );
    assert_eq!(ruleset.into_contents(), contents);
}

#[test]
fn some_services_render_as_their_part_of_the_whole_table() {
    let snap = snapshot(vec![
        (port("web", "172.30.0.1"), eps(&["10.180.0.1@"])),
        (
            port("db", "172.30.0.2"),
            eps(&["10.180.0.1@", "10.180.0.4"]),
        ),
        (port("idle", "172.30.0.3"), Vec::new()),
    ]);
    let ctx = RenderContext::new(&snap, &options(), &facts());
    let whole = render(&snap, &options(), &facts()).ruleset;
    let slots = super::slots_in_order(&snap, &ctx);
    let all = render_services(&snap, &ctx, Services::All, super::Slots::of(&slots));
    assert_eq!(all.rendered.ruleset, whole);
    // web and db share a hairpin key: it appears once per service
    assert_eq!(all.shared_keys.len(), 3 + 3 + 2, "{:?}", all.shared_keys);
    let db = std::collections::BTreeSet::from([name("db").service.clone()]);
    let some = render_services(&snap, &ctx, Services::Only(&db), super::Slots::of(&slots))
        .rendered
        .ruleset;
    let db_chains: Vec<&str> = chain_names(&some)
        .into_iter()
        .filter(|c| c.contains("ns/db/"))
        .collect();
    assert!(!db_chains.is_empty());
    assert!(chain_names(&some).iter().all(|c| !c.contains("ns/web/")));
    assert_eq!(elements(&some, "service-ips").len(), 1);
    assert_eq!(elements(&some, "no-endpoint-services").len(), 0);
}

#[test]
fn a_single_endpoint_cluster_ip_port_is_dnated_straight_from_services() {
    let r = render_one(port("web", "10.96.0.10"), eps(&["10.244.1.5"]));
    assert!(chain_names(&r).is_empty(), "{:?}", chain_names(&r));
    assert_eq!(
        elements(&r, names::SERVICE_IPS_DIRECT),
        ["10.96.0.10 . tcp . 80 comment \"ns/web:p\" : 10.244.1.5 . 8080"]
    );
    assert!(elements(&r, names::SERVICE_IPS).is_empty());
    assert_eq!(elements(&r, names::CLUSTER_IPS), ["10.96.0.10"]);
    assert!(
        r.set("service-endpoints-0").is_none(),
        "no slot given to it"
    );
    // anything else leading to its chain, or more to pick from: a chain
    let mut node_port = port("web", "10.96.0.10");
    node_port.node_port = Some(30080);
    let mut affinity = port("web", "10.96.0.10");
    affinity.session_affinity_seconds = Some(10);
    let mut local = port("web", "10.96.0.10");
    local.internal_policy_local = true;
    for (p, e) in [
        (node_port, eps(&["10.244.1.5"])),
        (affinity, eps(&["10.244.1.5"])),
        (local, eps(&["10.244.0.5@"])),
        (
            port("web", "10.96.0.10"),
            eps(&["10.244.1.5", "10.244.1.6"]),
        ),
    ] {
        let r = render_one(p, e);
        assert!(!chain_names(&r).is_empty());
        assert!(elements(&r, names::SERVICE_IPS_DIRECT).is_empty());
    }
    // IPv6
    let p = ServicePort::cluster_ip(name("web"), ip("fd00:96::10"), 80);
    let e = vec![Endpoint::ready(
        ip("fd00:244::5"),
        8080,
        Some("node-b"),
        false,
    )];
    let opts = RenderOptions::nftables_defaults(IpFamily::V6);
    let r = render(&snapshot(vec![(p, e)]), &opts, &facts()).ruleset;
    assert!(rules(&r, names::SERVICES).contains(
        &"dnat ip6 to ip6 daddr . meta l4proto . th dport map @service-ips-direct".to_string()
    ));
    assert_eq!(
        elements(&r, names::SERVICE_IPS_DIRECT),
        ["fd00:96::10 . tcp . 80 comment \"ns/web:p\" : fd00:244::5 . 8080"]
    );
    // upstream's table: a chain, no direct map
    let mut opts = options();
    opts.shared_endpoint_maps = false;
    let snap = snapshot(vec![(port("web", "10.96.0.10"), eps(&["10.244.1.5"]))]);
    let r = render(&snap, &opts, &facts()).ruleset;
    assert_eq!(chain_names(&r), [SVC]);
    assert!(r.set(names::SERVICE_IPS_DIRECT).is_none());
}

#[test]
fn a_lean_rendering_gives_the_shared_elements_of_the_whole_in_parts() {
    // a and b name one destination and share a hairpin endpoint; c
    // names its external IP twice, and z (in the other half of the first
    // pass, on its second thread) once; enough single-endpoint services
    // for parts
    let mut z = port("z", "10.96.0.13");
    z.external_ips = vec![ip("192.0.2.51")];
    let mut a = port("a", "10.96.0.10");
    a.external_ips = vec![ip("192.0.2.50")];
    let mut b = port("b", "10.96.0.11");
    b.external_ips = vec![ip("192.0.2.50")];
    let mut c = port("c", "10.96.0.12");
    c.external_ips = vec![ip("192.0.2.51"), ip("192.0.2.51")];
    let mut ports = vec![
        (a, eps(&["10.244.0.5@a"])),
        (b, eps(&["10.244.0.5@a"])),
        (c, eps(&["10.244.0.6", "10.244.0.7"])),
    ];
    for i in 0..2_100u32 {
        let cluster_ip = format!("10.97.{}.{}", i / 250, i % 250 + 1);
        let endpoint = format!("10.245.{}.{}", i / 250, i % 250 + 1);
        ports.push((port(&format!("s{i}"), &cluster_ip), eps(&[&endpoint])));
    }
    ports.push((z, eps(&["10.244.0.5@a"])));
    let snap = snapshot(ports);
    assert!(snap.services.len() >= super::selected::PARALLEL_PORTS);
    let ctx = RenderContext::new(&snap, &options(), &facts());
    let slots = super::slots_in_order(&snap, &ctx);
    let lean = render_lean(&snap, &ctx, super::Slots::of(&slots));
    let in_parts = lean.sets_in_parts();
    let (skeleton, pieces) = lean.into_pieces();
    let pieces: Vec<TableContents> = pieces.collect();
    let direct_parts = pieces
        .iter()
        .filter(|p| {
            p.elements
                .get(names::SERVICE_IPS_DIRECT)
                .is_some_and(|e| !e.is_empty())
        })
        .count();
    assert!(direct_parts > 1, "{direct_parts} parts");
    let last_shared = pieces
        .iter()
        .rev()
        .find(|p| p.chains.is_empty() && p.elements.contains_key(names::SERVICE_IPS));
    assert!(
        in_parts
            .iter()
            .all(|s| last_shared.unwrap().elements.contains_key(s))
    );
    let sorted = |mut table: TableContents| {
        for elements in table.elements.values_mut() {
            elements.sort_by_key(|e| format!("{e:?}"));
        }
        table
    };
    let lean = sorted(TableContents::from_pieces(skeleton, pieces.into_iter()));
    let whole = sorted(render(&snap, &options(), &facts()).ruleset.into_contents());
    assert_eq!(
        lean.elements.keys().collect::<Vec<_>>(),
        whole.elements.keys().collect::<Vec<_>>()
    );
    for (set, elements) in &whole.elements {
        assert_eq!(&lean.elements[set], elements, "{set}");
    }
    assert_eq!(lean, whole);
    let eip = |ip: &str| {
        lean.elements[names::SERVICE_IPS]
            .iter()
            .filter(|e| e.key[0] == statement::value(self::ip(ip)))
            .count()
    };
    assert_eq!((eip("192.0.2.50"), eip("192.0.2.51")), (1, 1));
}
