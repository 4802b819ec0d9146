//! Real traffic through IPVS on the VM's kernel, iptables on the nft
//! backend this time. The VM's own namespace is the node; an external
//! client and two pods are namespaces behind veth pairs:
//!
//! ```text
//! client 192.168.86.10 (+172.20.0.10) ──ext0 192.168.86.2── node ──10.244.0.1── pod1 10.244.0.11
//!                                                                 └─10.244.0.1── pod2 10.244.0.14
//! ```
//!
//! Checked: ClusterIP with port remapping from outside (masqueraded), from a
//! pod (not masqueraded), from the node and from the endpoint itself
//! (hairpin); NodePort with externalTrafficPolicy Local (client source kept)
//! and Cluster (masqueraded); loadBalancerSourceRanges; a port a service
//! does not have on a service address (rejected); graceful termination of a
//! real server with an open connection.

use plan::{LocalDetection, Options};
use super::checks::sh;
use super::kernel_view::{ipvsadm_blocks, rendered_chains, saved_chains};
use crate::support::reference::{eps, ip, lb, net, nodeport, port};
use ipvs::apply::{ApplyOptions, IpvsApplier, KernelSetup, apply_kernel_setup};
use ipvs::cleanup::apply_cleanup;
use ipvs::render::{IpvsState, RenderOptions, render};
use xtables::apply::Backend;
use model::{NodeInfo, ServicePortName, Snapshot};
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;
use testkit::echo::{Answer, EchoServer, Outcome, Probe, Proto, probe};
use testkit::netns::Netns;
use tokio::runtime::Runtime;

struct Topology {
    client: Netns,
    pod1: Netns,
    pod2: Netns,
}

fn build_topology() -> Topology {
    let t = Topology { client: Netns::new("client").unwrap(), pod1: Netns::new("pod1").unwrap(), pod2: Netns::new("pod2").unwrap() };
    sh("sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0");
    sh(&format!("ip link add ext0 type veth peer name eth0 netns {}", t.client.name()));
    sh("ip addr add 192.168.86.2/24 dev ext0 && ip link set ext0 up && ip route add 172.20.0.0/28 via 192.168.86.10");
    for args in [
        &["addr", "add", "192.168.86.10/24", "dev", "eth0"][..],
        &["addr", "add", "172.20.0.10/32", "dev", "eth0"],
        &["link", "set", "eth0", "up"],
        &["route", "add", "default", "via", "192.168.86.2"],
    ] {
        t.client.ip(args).unwrap();
    }
    for (ns, pod_ip, veth) in [(&t.pod1, "10.244.0.11", "vpod1"), (&t.pod2, "10.244.0.14", "vpod2")] {
        sh(&format!("ip link add {veth} type veth peer name eth0 netns {}", ns.name()));
        sh(&format!("ip addr add 10.244.0.1/32 dev {veth} && ip link set {veth} up && ip route add {pod_ip}/32 dev {veth}"));
        for args in [
            &["addr", "add", &format!("{pod_ip}/32"), "dev", "eth0"][..],
            &["link", "set", "eth0", "up"],
            &["route", "add", "10.244.0.1", "dev", "eth0"],
            &["route", "add", "default", "via", "10.244.0.1"],
        ] {
            ns.ip(args).unwrap();
        }
    }
    t
}

fn drain_service() -> ServicePortName {
    ServicePortName::new("storefront", "drain", "tcp", model::Protocol::Tcp)
}

/// The focused scenario; `drain_endpoints` are the endpoints of the
/// `drain` service (10.96.10.99:90).
fn scenario(drain_endpoints: &[&str]) -> Snapshot {
    let mut frontend = lb(port("storefront", "frontend", "https", "10.96.10.60", 443), &["192.0.2.10"], None);
    frontend.load_balancer_source_ranges = vec![net("172.20.0.0/28")];
    let services = vec![
        (port("storefront", "web", "http", "10.96.10.10", 80), eps(8080, &["10.244.0.11@a"])),
        (nodeport(port("storefront", "checkout", "https", "10.96.10.40", 443), 30443, true), eps(8443, &["10.244.0.14@a", "10.244.1.14@b"])),
        (nodeport(port("storefront", "catalog", "http", "10.96.10.30", 80), 30080, false), eps(8080, &["10.244.0.11@a"])),
        (port("storefront", "drain", "tcp", "10.96.10.99", 90), eps(9000, drain_endpoints)),
        (frontend, eps(8443, &["10.244.0.14@a"])),
    ];
    let mut snap = Snapshot {
        node: NodeInfo { name: "node-a".into(), addresses: vec![ip("192.168.86.2")], ..NodeInfo::default() },
        ..Snapshot::default()
    };
    for (svc, endpoints) in services {
        if !endpoints.is_empty() {
            snap.endpoints.insert(svc.name.clone(), Arc::new(endpoints));
        }
        snap.services.insert(svc.name.clone(), Arc::new(svc));
    }
    assert!(snap.services.contains_key(&drain_service()));
    snap
}

fn tcp(ns: &Netns, dst: &str, src: Option<&str>) -> Outcome {
    let dst: SocketAddr = dst.parse().unwrap();
    let p = Probe { proto: Proto::Tcp, dst, src: src.map(ip), timeout: Duration::from_secs(2) };
    let attempts = probe(ns, p, 2).unwrap();
    let first = attempts[0].outcome.clone();
    assert!(attempts.iter().all(|a| a.outcome == first || matches!((&a.outcome, &first), (Outcome::Answered(_), Outcome::Answered(_)))));
    first
}

fn answered(outcome: Outcome, what: &str) -> Answer {
    match outcome {
        Outcome::Answered(a) => a,
        other => panic!("{what}: expected an answer, got {other}"),
    }
}

fn peer_ip(a: &Answer) -> IpAddr {
    a.peer.ip()
}

/// A node-originated connection from the VM's own namespace.
fn tcp_from_node(dst: &str) -> Answer {
    let mut stream = TcpStream::connect_timeout(&dst.parse().unwrap(), Duration::from_secs(2)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    Answer::parse(&text).unwrap_or_else(|| panic!("garbled answer {text:?}"))
}

pub fn traffic(rt: &Runtime) {
    let t = build_topology();
    let _web = EchoServer::start(&t.pod1, "pod1", ip("10.244.0.11"), &[8080], &[]).unwrap();
    let _checkout = EchoServer::start(&t.pod2, "pod2", ip("10.244.0.14"), &[8443], &[]).unwrap();
    let holder = t.pod1.run(|| TcpListener::bind("10.244.0.11:9000")).unwrap().unwrap();
    let held = std::thread::spawn(move || holder.accept().map(|(stream, _)| stream));

    let opts = ApplyOptions { graceful_limit: Duration::from_secs(3), ..ApplyOptions::default() };
    let mut applier = rt.block_on(IpvsApplier::connect(Backend::Nft, opts)).unwrap();
    rt.block_on(apply_kernel_setup(applier.ipvs(), KernelSetup::default())).unwrap();
    let locals = rt.block_on(applier.local_addresses()).unwrap();
    let common = Options::with_cluster_cidr(net("10.244.0.0/16"));
    let render_opts = RenderOptions { local_addresses: locals, common, ..RenderOptions::default() };
    let state = render(&scenario(&["10.244.0.11@a"]), &render_opts);
    rt.block_on(applier.apply(&state)).unwrap();
    assert_nft_rules_match(&state);

    // ClusterIP 10.96.10.10:80 -> 10.244.0.11:8080.
    let a = answered(tcp(&t.client, "10.96.10.10:80", None), "client -> ClusterIP");
    assert_eq!((a.ep.as_str(), a.local), ("pod1", "10.244.0.11:8080".parse().unwrap()), "port remapped");
    assert_eq!(peer_ip(&a), ip("10.244.0.1"), "off-cluster source masqueraded");
    let a = answered(tcp(&t.pod2, "10.96.10.10:80", None), "pod -> ClusterIP");
    assert_eq!(peer_ip(&a), ip("10.244.0.14"), "pod source kept");
    let a = answered(tcp(&t.pod1, "10.96.10.10:80", None), "hairpin");
    assert_eq!((a.ep.as_str(), peer_ip(&a)), ("pod1", ip("10.244.0.1")), "hairpin masqueraded (KUBE-LOOP-BACK)");
    let a = tcp_from_node("10.96.10.10:80");
    assert_eq!(a.ep, "pod1", "node -> ClusterIP");
    assert_eq!(tcp(&t.client, "10.96.10.10:81", None), Outcome::Refused, "no such service port: KUBE-IPVS-FILTER rejects");

    // NodePorts.
    let a = answered(tcp(&t.client, "192.168.86.2:30443", None), "ETP Local NodePort");
    assert_eq!((a.ep.as_str(), peer_ip(&a)), ("pod2", ip("192.168.86.10")), "ETP Local keeps the client source");
    let a = answered(tcp(&t.client, "192.168.86.2:30080", None), "ETP Cluster NodePort");
    assert_eq!((a.ep.as_str(), peer_ip(&a)), ("pod1", ip("10.244.0.1")), "ETP Cluster masquerades");

    // loadBalancerSourceRanges 172.20.0.0/28.
    let a = answered(tcp(&t.client, "192.0.2.10:443", Some("172.20.0.10")), "LB from an allowed source");
    assert_eq!(a.ep, "pod2");
    assert_eq!(tcp(&t.client, "192.0.2.10:443", Some("192.168.86.10")), Outcome::TimedOut, "LB from outside the ranges");

    // Graceful termination: an open connection keeps its drained real server.
    let conn = t.client.run(|| TcpStream::connect_timeout(&"10.96.10.99:90".parse().unwrap(), Duration::from_secs(2))).unwrap().unwrap();
    let _server_side = held.join().unwrap().unwrap();
    let drained = render(&scenario(&[]), &render_opts);
    let r = rt.block_on(applier.apply(&drained)).unwrap();
    assert_eq!((r.real_servers_drained, r.real_servers_deleted, r.real_servers_draining), (1, 0, 1), "{r:?}");
    let listing = sh("ipvsadm -Ln -t 10.96.10.99:90");
    let dest = listing.lines().find(|l| l.contains("10.244.0.11:9000")).unwrap_or_else(|| panic!("drained real server gone:\n{listing}"));
    assert_eq!(dest.split_whitespace().collect::<Vec<_>>()[2..5], ["Masq", "0", "1"], "weight 0, one active connection");
    assert_eq!(tcp(&t.client, "10.96.10.99:90", None), Outcome::Refused, "no new connection to a drained server");
    let r = rt.block_on(applier.apply(&drained)).unwrap();
    assert_eq!((r.real_servers_drained, r.real_servers_deleted), (0, 0), "still draining: {r:?}");
    std::thread::sleep(Duration::from_millis(3200));
    let r = rt.block_on(applier.apply(&drained)).unwrap();
    assert_eq!((r.real_servers_deleted, r.real_servers_draining), (1, 0), "deleted after the bound: {r:?}");
    assert!(!sh("ipvsadm -Ln -t 10.96.10.99:90").contains("10.244.0.11:9000"));
    drop(conn);
    assert!(ipvsadm_blocks().iter().any(|b| b.starts_with("TCP  192.168.86.2:30443 rr")));

    drop(applier);
    rt.block_on(apply_cleanup(&ApplyOptions::default())).unwrap();
    super::reference::assert_nothing_left();
}

fn assert_nft_rules_match(state: &IpvsState) {
    let saved = saved_chains("iptables-nft-save");
    let differing: Vec<String> = rendered_chains(state)
        .into_iter()
        .filter(|(chain, rules)| saved.get(chain) != Some(rules))
        .map(|(chain, rules)| format!("{chain:?}\n  rendered: {rules:#?}\n  saved:    {:#?}", saved.get(&chain)))
        .collect();
    assert!(differing.is_empty(), "iptables-nft-save differs from the render:\n{}", differing.join("\n"));
}

/// A v6 service next to the v4 ones: each family's apply leaves the other
/// family's virtual servers, addresses and sets alone, and v6 traffic
/// goes through `KUBE-6-*` sets and ip6tables.
pub fn dual_stack(rt: &Runtime) {
    let t = build_topology();
    sh("sysctl -qw net.ipv6.conf.all.forwarding=1");
    for (ns, v6, veth) in [(&t.pod1, "fd00:244::11", "vpod1"), (&t.pod2, "fd00:244::14", "vpod2")] {
        sh(&format!("ip -6 addr add fd00:244::1/128 dev {veth} nodad && ip -6 route add {v6}/128 dev {veth}"));
        ns.ip(&["-6", "addr", "add", &format!("{v6}/128"), "dev", "eth0", "nodad"]).unwrap();
        ns.ip(&["-6", "route", "add", "fd00:244::1", "dev", "eth0"]).unwrap();
        ns.ip(&["-6", "route", "add", "default", "via", "fd00:244::1"]).unwrap();
    }
    let _v4 = EchoServer::start(&t.pod1, "pod1-v4", ip("10.244.0.11"), &[8080], &[]).unwrap();
    let _v6 = EchoServer::start(&t.pod1, "pod1-v6", ip("fd00:244::11"), &[8080], &[]).unwrap();

    let mut snap = scenario(&["10.244.0.11@a"]);
    let v6_web = port("storefront", "web-v6", "http", "fd00:96::10", 80);
    snap.endpoints.insert(v6_web.name.clone(), Arc::new(eps(8080, &["fd00:244::11@a"])));
    snap.services.insert(v6_web.name.clone(), Arc::new(v6_web));

    let mut applier = rt.block_on(IpvsApplier::connect(Backend::Nft, ApplyOptions::default())).unwrap();
    let locals = rt.block_on(applier.local_addresses()).unwrap();
    let common = Options::with_cluster_cidr(net("10.244.0.0/16"));
    let v4 = RenderOptions { local_addresses: locals.clone(), common, ..RenderOptions::default() };
    let v6 = RenderOptions {
        local_addresses: locals,
        common: Options {
            family: model::IpFamily::V6,
            local_detection: LocalDetection::ClusterCidr(vec![net("fd00:244::/64")]),
            ..Options::default()
        },
        ..RenderOptions::default()
    };
    let (state4, state6) = (render(&snap, &v4), render(&snap, &v6));
    assert_eq!(state6.services.len(), 1);
    for _ in 0..2 {
        let r4 = rt.block_on(applier.apply(&state4)).unwrap();
        let r6 = rt.block_on(applier.apply(&state6)).unwrap();
        assert_eq!((r4.services_deleted, r4.addresses_unbound, r6.services_deleted, r6.addresses_unbound), (0, 0, 0, 0));
    }
    let blocks = ipvsadm_blocks();
    assert_eq!(blocks.len(), state4.services.len() + 1, "both families' virtual servers:\n{}", blocks.join("\n"));
    assert!(sh("ipset list -n").contains("KUBE-6-CLUSTER-IP"));
    assert!(sh("ip6tables-nft-save -t nat").contains("--match-set KUBE-6-CLUSTER-IP"));

    let a = answered(tcp(&t.pod2, "[fd00:96::10]:80", None), "pod -> v6 ClusterIP");
    assert_eq!((a.ep.as_str(), a.local, peer_ip(&a)), ("pod1-v6", "[fd00:244::11]:8080".parse().unwrap(), ip("fd00:244::14")));
    let a = answered(tcp(&t.pod2, "10.96.10.10:80", None), "pod -> v4 ClusterIP");
    assert_eq!(a.ep, "pod1-v4");

    drop(applier);
    let report = rt.block_on(apply_cleanup(&ApplyOptions::default())).unwrap();
    assert!(report.iptables_cleaned.contains(&(Backend::Nft, model::IpFamily::V6)), "{report:?}");
    super::reference::assert_nothing_left();
    for save in ["ip6tables-legacy-save", "ip6tables-nft-save"] {
        assert!(!sh(save).contains("KUBE-"), "{save} not clean");
    }
}
