//! The renderer on the reference scenario and on focused cases: golden
//! dumps (insta) plus assertions on the facts the seeds state.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support {
    pub mod reference;
}

use plan::{NodePortAddresses, NoLocalEndpoints, Options};
use ipvs::ipset::KubeSet;
use ipvs::render::{IpvsState, RenderOptions, render};
use ipvs::{IpProtocol, Scheduler, ServiceFlags, ServiceKey};
use xtables::rules::consistency_problems;
use model::IpFamily;
use model::Protocol;
use support::reference::{ip, net, reference_options, reference_snapshot};
use testkit::builders::*;

fn key(addr: &str, port: u16) -> ServiceKey {
    ServiceKey::new(ip(addr), IpProtocol::Tcp, port)
}

fn real_servers(state: &IpvsState, k: ServiceKey) -> Vec<String> {
    let svc = state.services.get(&k).unwrap_or_else(|| panic!("no virtual server {k}"));
    svc.real_servers.iter().map(|rs| rs.addr().to_string()).collect()
}

fn nat_rules(state: &IpvsState) -> Vec<String> {
    state.ruleset.nat.rules.iter().map(ToString::to_string).collect()
}

fn filter_rules(state: &IpvsState) -> Vec<String> {
    state.ruleset.filter.rules.iter().map(ToString::to_string).collect()
}

#[test]
fn reference_scenario_golden() {
    let state = render(&reference_snapshot(), &reference_options());
    let problems = consistency_problems(&state.ruleset);
    assert!(problems.is_empty(), "inconsistent rules:\n{}", problems.join("\n"));
    insta::assert_snapshot!("reference", state.to_string());
}

#[test]
fn reference_cluster_ips_are_bound_and_balanced_over_ready_endpoints() {
    let state = render(&reference_snapshot(), &reference_options());
    assert_eq!(real_servers(&state, key("10.96.10.10", 80)), ["10.244.0.11:8080", "10.244.1.11:8080", "10.244.2.11:8080"]);
    // Scenario 13: no ready endpoint anywhere, so the serving terminating ones.
    assert_eq!(real_servers(&state, key("10.96.10.130", 80)), ["10.244.0.26:8080", "10.244.1.26:8080"]);
    // Scenario 16: the not-ready endpoint is left out.
    assert_eq!(real_servers(&state, key("10.96.10.160", 80)), ["10.244.0.28:8080"]);
    // Scenario 9: a virtual server with no real server.
    assert!(real_servers(&state, key("10.96.10.90", 80)).is_empty());
    for addr in ["10.96.0.1", "10.96.10.10", "10.96.10.120", "10.96.10.170"] {
        assert!(state.bind_addresses.contains(&ip(addr)), "{addr} not bound");
    }
    assert!(state.ipsets.contains(KubeSet::ClusterIp, "10.96.10.120,udp:53"));
    assert!(state.ipsets.contains(KubeSet::ClusterIp, "10.96.10.120,tcp:53"));
    let dns = ServiceKey::new(ip("10.96.10.120"), IpProtocol::Udp, 53);
    assert_eq!(real_servers(&state, dns), ["10.244.0.24:5353", "10.244.2.24:5353"]);
}

#[test]
fn reference_affinity_is_persistence_with_the_service_timeout() {
    let state = render(&reference_snapshot(), &reference_options());
    let cart = &state.services[&key("10.96.10.20", 7000)].virtual_server;
    assert!(cart.flags.contains(ServiceFlags::PERSISTENT));
    assert_eq!((cart.timeout, cart.scheduler.as_str()), (600, "rr"));
    let web = &state.services[&key("10.96.10.10", 80)].virtual_server;
    assert_eq!((web.flags, web.timeout), (ServiceFlags::default(), 0));
}

#[test]
fn reference_external_and_load_balancer_ips() {
    let state = render(&reference_snapshot(), &reference_options());
    // Scenario 8: the external IP gets its own virtual server, bound, masqueraded.
    assert_eq!(real_servers(&state, key("192.0.2.50", 8000)), ["10.244.1.20:8000", "10.244.2.20:8000"]);
    assert!(state.bind_addresses.contains(&ip("192.0.2.50")));
    assert!(state.ipsets.contains(KubeSet::ExternalIp, "192.0.2.50,tcp:8000"));
    // Scenario 6: both LB IPs, firewall sets, and a range holding the node IP.
    for lb in ["192.0.2.10", "192.0.2.11"] {
        assert_eq!(real_servers(&state, key(lb, 443)), ["10.244.0.17:8443", "10.244.2.17:8443"]);
        assert!(state.ipsets.contains(KubeSet::LoadBalancerFw, &format!("{lb},tcp:443")));
        assert!(state.ipsets.contains(KubeSet::LoadBalancerSourceCidr, &format!("{lb},tcp:443,172.20.0.0/28")));
        assert!(state.ipsets.contains(KubeSet::LoadBalancerSourceIp, &format!("{lb},tcp:443,{lb}")));
    }
    assert!(!filter_rules(&state).iter().any(|r| r.starts_with("KUBE-IPVS-OUT-FILTER")), "node IP is in a range");
    // Scenario 7: ETP Local LB IP has only the local endpoints.
    assert_eq!(real_servers(&state, key("192.0.2.20", 80)), ["10.244.0.18:8080", "10.244.0.19:8080"]);
    assert!(state.ipsets.contains(KubeSet::LoadBalancerLocal, "192.0.2.20,tcp:80"));
    // Scenario 17: the local endpoint is terminating but serving: still used externally.
    assert_eq!(real_servers(&state, key("192.0.2.30", 80)), ["10.244.0.29:8080"]);
    assert_eq!(real_servers(&state, key("10.96.10.170", 80)), ["10.244.2.29:8080"]);
}

#[test]
fn reference_node_ports_honour_external_traffic_policy() {
    let state = render(&reference_snapshot(), &reference_options());
    // Scenario 3: ETP Cluster, masqueraded.
    assert_eq!(real_servers(&state, key("192.168.86.2", 30080)), ["10.244.1.13:8080", "10.244.2.13:8080"]);
    assert!(state.ipsets.contains(KubeSet::NodePortTcp, "30080"));
    assert!(!state.ipsets.contains(KubeSet::NodePortLocalTcp, "30080"));
    // Scenario 4: ETP Local: the local endpoint only, not masqueraded; the ClusterIP keeps both.
    assert_eq!(real_servers(&state, key("192.168.86.2", 30443)), ["10.244.0.14:8443"]);
    assert_eq!(real_servers(&state, key("10.96.10.40", 443)), ["10.244.0.14:8443", "10.244.1.14:8443"]);
    assert!(state.ipsets.contains(KubeSet::NodePortLocalTcp, "30443"));
    // Scenario 5a: ETP Local without local endpoints falls back to the
    // cluster endpoints (upstream PR 97081) and counts for the metric.
    assert_eq!(real_servers(&state, key("192.168.86.2", 30808)), ["10.244.1.15:8080", "10.244.2.15:8080"]);
    // External: storefront/inventory and storefront/search; internal: ops/audit.
    assert_eq!(state.no_local_endpoints, NoLocalEndpoints { internal: 1, external: 2 });
    // Node IPs are never bound to the dummy interface.
    assert!(!state.bind_addresses.contains(&ip("192.168.86.2")));
    for hc in ["32052", "32070", "32170"] {
        assert!(state.ipsets.contains(KubeSet::HealthCheckNodePort, hc));
    }
}

#[test]
fn reference_internal_traffic_policy_local() {
    let state = render(&reference_snapshot(), &reference_options());
    assert_eq!(real_servers(&state, key("10.96.10.110", 9100)), ["10.244.0.22:9100"]);
    assert!(real_servers(&state, key("10.96.10.111", 80)).is_empty(), "ITP Local, no local endpoint");
}

#[test]
fn reference_hairpin_set_holds_local_endpoints_only() {
    let state = render(&reference_snapshot(), &reference_options());
    let loopback: Vec<&str> = state.ipsets.members(KubeSet::LoopBack).collect();
    assert!(loopback.contains(&"10.244.0.11,tcp:8080,10.244.0.11"));
    assert!(loopback.contains(&"10.244.0.24,udp:5353,10.244.0.24"));
    assert!(loopback.iter().all(|e| e.starts_with("10.244.0.")), "{loopback:?}");
    let nat = nat_rules(&state);
    assert!(nat.iter().any(|r| r ==
        "KUBE-POSTROUTING -m comment --comment \"Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose\" \
          -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE"
    ));
}

#[test]
fn cluster_cidr_masquerades_off_cluster_traffic() {
    let state = render(&reference_snapshot(), &reference_options());
    assert!(nat_rules(&state).iter().any(|r| r ==
        "KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment \"Kubernetes service cluster ip + port for masquerade purpose\" \
          -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ"
    ));
}

fn one_service(opts: &RenderOptions) -> IpvsState {
    let snap = snapshot()
        .service(
            tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80).node_port(3001).affinity(10800),
            [endpoint(pod_ip(1), 8080).local(), endpoint(pod_ip(2), 8080)],
        )
        .build();
    render(&snap, opts)
}

#[test]
fn masquerade_all_and_no_cluster_cidr_variants() {
    let common = Options { masquerade_all: true, ..Options::default() };
    let all = one_service(&RenderOptions { common, ..Default::default() });
    assert!(nat_rules(&all).iter().any(|r| r.starts_with("KUBE-SERVICES -m comment") && r.ends_with("KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ")));
    let none = one_service(&RenderOptions::default());
    assert!(nat_rules(&none).iter().any(|r| r.ends_with("--match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ")));
    assert!(!nat_rules(&none).iter().any(|r| r.contains("! -s")));
}

/// `BridgeInterface` / `InterfaceNamePrefix`: the ClusterIP masquerade
/// rule matches `! -i <bridge>` / `! -i <prefix>+` instead of `! -s`, and
/// the kernel accepts it (iptables-restore in a fresh namespace holding
/// the set).
#[test]
fn interface_detection_masquerades_traffic_not_in_from_pods() {
    use plan::LocalDetection;
    let cases = [(LocalDetection::BridgeInterface("cbr0".into()), "cbr0"), (LocalDetection::InterfaceNamePrefix("veth".into()), "veth+")];
    for (detection, iface) in cases {
        let common = Options { local_detection: detection, ..Options::default() };
        let state = one_service(&RenderOptions { common, ..Default::default() });
        let want = format!(
            "KUBE-SERVICES ! -i {iface} -m comment --comment \"Kubernetes service cluster ip + port for masquerade purpose\" \
             -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ"
        );
        let nat = nat_rules(&state);
        assert!(nat.contains(&want), "{want}\nnot in\n{}", nat.join("\n"));
        assert!(!nat.iter().any(|r| r.contains("src,dst -j KUBE-MARK-MASQ") || r.contains("! -s")));
        assert_kernel_accepts(&want);
    }
}

/// Loads `rule` (with the chain and set it needs) in a fresh namespace.
fn assert_kernel_accepts(rule: &str) {
    testkit::netns::require_kernel();
    let ns = testkit::netns::Netns::new("ipvsdetect").unwrap();
    ns.exec("ipset", &["create", "KUBE-CLUSTER-IP", "hash:ip,port"]).unwrap();
    let text = format!("*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n-A {rule}\nCOMMIT\n");
    let path = std::env::temp_dir().join(format!("ipvsdetect-{}.rules", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let loaded = ns.exec("iptables-restore", &[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    loaded.unwrap();
    let saved = ns.exec("iptables-save", &["-t", "nat"]).unwrap();
    assert!(saved.contains(&format!("-A {rule}\n")), "saved as rendered:\n{saved}");
}

#[test]
fn default_affinity_timeout_is_persistence_10800() {
    let state = one_service(&RenderOptions::default());
    let vs = &state.services[&ServiceKey::new(cluster_ip(41), IpProtocol::Tcp, 80)].virtual_server;
    assert_eq!(ipvs::render::ipvsadm_line(vs), "TCP  172.30.0.41:80 rr persistent 10800");
}

#[test]
fn scheduler_names_reach_every_virtual_server() {
    for sched in Scheduler::ALL {
        let opts = RenderOptions { scheduler: sched, local_addresses: vec![node_ip()], ..Default::default() };
        let state = one_service(&opts);
        assert_eq!(state.services.len(), 2, "ClusterIP and NodePort");
        for svc in state.services.values() {
            assert_eq!(svc.virtual_server.scheduler, sched.name());
            assert_eq!(svc.virtual_server.flags.contains(ServiceFlags::SCHED_MH_PORT), sched == Scheduler::MaglevHashing);
        }
    }
}

#[test]
fn node_ports_go_on_every_local_address_or_the_chosen_ones() {
    let locals = vec![node_ip(), ip("10.0.0.1"), ip("127.0.0.1"), ip("fd00::2")];
    let all = one_service(&RenderOptions { local_addresses: locals.clone(), ..Default::default() });
    let np: Vec<String> = all.services.keys().filter(|k| k.port == 3001).map(|k| k.address.to_string()).collect();
    assert_eq!(np, ["10.0.0.1", "192.168.0.2"], "no loopback, no other family");
    let some = one_service(&RenderOptions {
        local_addresses: locals,
        common: Options { node_port_addresses: NodePortAddresses::Cidrs(vec![net("192.168.0.0/16")]), ..Options::default() },
        ..Default::default()
    });
    let np: Vec<String> = some.services.keys().filter(|k| k.port == 3001).map(|k| k.address.to_string()).collect();
    assert_eq!(np, ["192.168.0.2"]);
    let no_locals = one_service(&RenderOptions::default());
    assert!(no_locals.ipsets.set_is_empty(KubeSet::NodePortTcp), "no node IP: no NodePort at all, as upstream");
}

#[test]
fn node_port_addresses_primary_means_the_nodes_primary_ip_only() {
    // Upstream (and iptables mode): `nodePortAddresses: [primary]` puts
    // NodePorts on the Node's primary IP, not on every local address.
    let locals = vec![node_ip(), ip("10.0.0.1")];
    let node_ports = |state: &IpvsState| -> Vec<String> {
        state.services.keys().filter(|k| k.port == 3001).map(|k| k.address.to_string()).collect()
    };
    let all = one_service(&RenderOptions { local_addresses: locals.clone(), ..Default::default() });
    assert_eq!(node_ports(&all), ["10.0.0.1", "192.168.0.2"]);
    let common = Options { node_port_addresses: NodePortAddresses::Primary, ..Options::default() };
    let primary = one_service(&RenderOptions { common, local_addresses: locals, ..Default::default() });
    assert_eq!(node_ports(&primary), ["192.168.0.2"], "the Node's primary IP only");
    assert!(primary.ipsets.contains(KubeSet::NodePortTcp, "3001"));
}

#[test]
fn udp_and_sctp_node_ports_use_their_sets() {
    let snap = snapshot()
        .service(tcp_port("ns", "dns", "dns", cluster_ip(10), 53).udp().node_port(3053).etp_local(), [endpoint(pod_ip(1), 53).local()])
        .service(tcp_port("ns", "sig", "sig", cluster_ip(11), 2905).protocol(Protocol::Sctp).node_port(3905), [endpoint(pod_ip(2), 2905)])
        .build();
    let state = render(&snap, &RenderOptions { local_addresses: vec![node_ip()], ..Default::default() });
    assert!(state.ipsets.contains(KubeSet::NodePortUdp, "3053"));
    assert!(state.ipsets.contains(KubeSet::NodePortLocalUdp, "3053"));
    assert!(state.ipsets.contains(KubeSet::NodePortSctp, "192.168.0.2,sctp:3905"));
    let nat = nat_rules(&state);
    let local = nat.iter().position(|r| r.contains("KUBE-NODE-PORT-LOCAL-UDP dst -j RETURN")).unwrap();
    let masq = nat.iter().position(|r| r.contains("KUBE-NODE-PORT-UDP dst -j KUBE-MARK-MASQ")).unwrap();
    assert!(local < masq, "local NodePorts return before the masquerade");
    assert!(nat.iter().any(|r| r.starts_with("KUBE-NODE-PORT -p sctp ") && r.contains("KUBE-NODE-PORT-SCTP-HASH dst,dst")));
    insta::assert_snapshot!("udp_sctp_node_ports", state.to_string());
}

#[test]
fn source_ranges_without_the_node_keep_the_node_out() {
    let snap = snapshot()
        .service(
            tcp_port("ns", "lb", "https", cluster_ip(50), 443).node_port(3443).lb_ip(lb_ip(1)).source_range("203.0.113.0/24"),
            [endpoint(pod_ip(1), 8443)],
        )
        .build();
    let state = render(&snap, &RenderOptions::default());
    assert!(state.ipsets.contains(KubeSet::LoadBalancerSourceCidr, "1.2.3.1,tcp:443,203.0.113.0/24"));
    assert!(state.ipsets.set_is_empty(KubeSet::LoadBalancerSourceIp));
    assert!(filter_rules(&state).iter().any(|r| r ==
        "KUBE-IPVS-OUT-FILTER -s 1.2.3.1/32 -m ipvs --vproto 6 --vaddr 1.2.3.1 --vport 443 -j DROP"
    ));
    insta::assert_snapshot!("source_ranges_without_node", state.to_string());
}

#[test]
fn node_addresses_used_as_external_ips_are_not_bound() {
    let snap = snapshot()
        .service(tcp_port("ns", "ext", "http", cluster_ip(60), 80).external_ip(node_ip()).external_ip(external_ip(1)).etp_local(), [
            endpoint(pod_ip(1), 80).local(),
            endpoint(pod_ip(2), 80),
        ])
        .build();
    let state = render(&snap, &RenderOptions { local_addresses: vec![node_ip()], ..Default::default() });
    assert!(!state.bind_addresses.contains(&node_ip()));
    assert!(state.bind_addresses.contains(&external_ip(1)));
    assert!(state.ipsets.contains(KubeSet::ExternalIpLocal, "192.168.99.1,tcp:80"));
    assert!(state.ipsets.set_is_empty(KubeSet::ExternalIp));
    assert_eq!(real_servers(&state, key("192.168.99.1", 80)), ["10.180.0.1:80"], "ETP Local");
    assert_eq!(real_servers(&state, key("172.30.0.60", 80)), ["10.180.0.1:80", "10.180.0.2:80"]);
    let nat = nat_rules(&state);
    assert!(!nat.iter().any(|r| r.contains("KUBE-EXTERNAL-IP-LOCAL") && r.ends_with("KUBE-MARK-MASQ")), "local: no SNAT");
    assert!(nat.iter().any(|r| r.contains("KUBE-EXTERNAL-IP-LOCAL dst,dst -m physdev ! --physdev-is-in")));
}

#[test]
fn ipv6_renders_its_own_family_only() {
    let snap = snapshot()
        .service(tcp_port("ns", "v4", "http", cluster_ip(1), 80), [endpoint(pod_ip(1), 80)])
        .service(tcp_port("ns", "v6", "http", ip("fd00:96::1"), 80), [endpoint(ip("fd00:244::1"), 8080).local()])
        .build();
    let common = Options { family: IpFamily::V6, ..Options::default() };
    let state = render(&snap, &RenderOptions { common, ..Default::default() });
    assert_eq!(state.services.len(), 1);
    assert_eq!(state.services.values().next().unwrap().virtual_server.netmask, 128);
    assert!(state.ipsets.contains(KubeSet::ClusterIp, "fd00:96::1,tcp:80"));
    assert!(state.ipsets.contains(KubeSet::LoopBack, "fd00:244::1,tcp:8080,fd00:244::1"));
    assert!(nat_rules(&state).iter().any(|r| r == "KUBE-SERVICES -s ::1/128 -j RETURN"));
    assert!(nat_rules(&state).iter().any(|r| r.contains("--match-set KUBE-6-CLUSTER-IP")));
    assert!(filter_rules(&state).iter().any(|r| r.ends_with("KUBE-6-IPVS-IPS dst -j REJECT --reject-with icmp6-port-unreachable")));
}

#[test]
fn endpoint_changes_change_only_real_servers() {
    let opts = RenderOptions { local_addresses: vec![node_ip()], ..Default::default() };
    let before = one_service(&opts);
    let snap = snapshot()
        .service(
            tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80).node_port(3001).affinity(10800),
            [endpoint(pod_ip(2), 8080), endpoint(pod_ip(3), 8080)],
        )
        .build();
    let after = render(&snap, &opts);
    assert_eq!(before.services.keys().collect::<Vec<_>>(), after.services.keys().collect::<Vec<_>>());
    let k = ServiceKey::new(cluster_ip(41), IpProtocol::Tcp, 80);
    assert_eq!(real_servers(&after, k), ["10.180.0.2:8080", "10.180.0.3:8080"]);
    assert!(after.ipsets.set_is_empty(KubeSet::LoopBack), "no local endpoint left");
    assert_eq!(before.ruleset.filter, after.ruleset.filter);
}

#[test]
fn topology_hints_keep_cluster_traffic_in_the_nodes_zone() {
    let zoned = |n: u16, node: &str, zone: &str| {
        endpoint(pod_ip(n), 8080).on_node(node).build().with_hints(model::EndpointHints::new([zone], Vec::<&str>::new()))
    };
    let eps = [zoned(1, NODE_NAME, "zone-a"), zoned(2, OTHER_NODE, "zone-b"), zoned(3, OTHER_NODE, "zone-a")];
    let mut snap = snapshot().service(tcp_port("ns1", "svc1", "p80", cluster_ip(41), 80).node_port(3001), eps).build();
    snap.node.zone = Some("zone-a".into());
    let opts = RenderOptions { local_addresses: vec![node_ip()], ..RenderOptions::default() };
    let state = render(&snap, &opts);
    let zone_a = ["10.180.0.1:8080", "10.180.0.3:8080"];
    assert_eq!(real_servers(&state, ServiceKey::new(cluster_ip(41), IpProtocol::Tcp, 80)), zone_a);
    assert_eq!(real_servers(&state, ServiceKey::new(node_ip(), IpProtocol::Tcp, 3001)), zone_a);
    snap.node.zone = Some("zone-c".into());
    let state = render(&snap, &opts);
    assert_eq!(real_servers(&state, ServiceKey::new(cluster_ip(41), IpProtocol::Tcp, 80)).len(), 3, "no endpoint for zone-c: every endpoint");
}
