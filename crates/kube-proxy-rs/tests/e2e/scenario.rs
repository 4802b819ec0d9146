//! The scenario's side that is not YAML: the pods of the plan (names,
//! nodes, addresses; they match `cluster.yaml` and `dualstack.yaml`), the
//! addresses the cases talk to, the run-time services `dyn` and `hc-local`,
//! and the proxy's flags.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use testkit::cluster::{CLUSTER_CIDR, CLUSTER_CIDR6, Plan, PodPlan};

/// The static part of the manifests file both proxies read.
pub const MANIFESTS: &str = include_str!("cluster.yaml");
/// The dual-stack services, appended to [`MANIFESTS`].
pub const DUALSTACK_MANIFESTS: &str = include_str!("dualstack.yaml");

/// TCP ports every pod's echo server listens on (all targetPorts used).
pub const TCP_PORTS: [u16; 3] = [8080, 8443, 5353];
/// UDP ports every pod's echo server listens on.
pub const UDP_PORTS: [u16; 1] = [5353];
/// The affinity timeout of the `sticky` service (`timeoutSeconds` in
/// cluster.yaml).
pub const AFFINITY_TIMEOUT_SECS: u64 = 3;
/// How many extra source addresses the client pod `ca` has (10.244.0.201
/// and up): independent "clients" for the affinity-expiry case.
pub const CA_EXTRA_SOURCES: u8 = 12;

/// The manifests' addresses, as the cases use them.
pub mod addr {
    use super::*;

    /// node-a's InternalIP.
    pub const NODE_A: Ipv4Addr = Ipv4Addr::new(192, 168, 86, 2);
    /// node-b's InternalIP.
    pub const NODE_B: Ipv4Addr = Ipv4Addr::new(192, 168, 86, 3);
    /// node-a's IPv6 InternalIP.
    pub const NODE_A6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x86, 0, 0, 0, 0, 0, 2);
    /// node-b's IPv6 InternalIP.
    pub const NODE_B6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x86, 0, 0, 0, 0, 0, 3);
    /// node-a's pod gateway: what a pod of node-a sees when node-a masquerades.
    pub const GW_A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 244, 0, 1));
    /// node-a's IPv6 pod gateway.
    pub const GW_A6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0x10, 0x244, 0, 0, 0, 0, 1));
    /// The client's address inside the `lb` service's loadBalancerSourceRanges.
    pub const CLIENT_IN: IpAddr = IpAddr::V4(Ipv4Addr::new(172, 20, 0, 10));
    /// The client's address outside them.
    pub const CLIENT_OUT: IpAddr = IpAddr::V4(Ipv4Addr::new(172, 20, 0, 66));
    /// The client's first IPv6 address.
    pub const CLIENT6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0x172, 0x20, 0, 0, 0, 0, 0x10));
    /// The run-time service's ClusterIP.
    pub const DYN: Ipv4Addr = Ipv4Addr::new(10, 96, 10, 150);

    /// `ip:port` from a dotted quad.
    pub fn at(ip: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::from((ip, port))
    }

    /// `ip:port` from an address of either family.
    pub fn on(ip: impl Into<IpAddr>, port: u16) -> SocketAddr {
        SocketAddr::new(ip.into(), port)
    }

    /// `[ip]:port` from IPv6 text (a constant of the cases; malformed text
    /// gives the unspecified address, which no flow reaches).
    pub fn at6(ip: &str, port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V6(ip.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)), port)
    }
}

/// The endpoints `dyn` starts with.
pub const DYN_START: &[&str] = &["a1"];

/// The run-time service with a health-check node port: its namespace,
/// name and `healthCheckNodePort`.
pub const HC_NAMESPACE: &str = "e2e";
/// See [`HC_NAMESPACE`].
pub const HC_NAME: &str = "hc-local";
/// See [`HC_NAMESPACE`].
pub const HC_PORT: u16 = 32160;
/// The pod `hc-local`'s one endpoint starts on (node-a)…
pub const HC_HOME: &str = "a3";
/// …and the pod it moves to (node-b).
pub const HC_AWAY: &str = "b2";

/// The pods: (name, node, address).
pub const PODS: [(&str, &str, [u8; 4]); 7] = [
    ("a1", "node-a", [10, 244, 0, 11]),
    ("a2", "node-a", [10, 244, 0, 12]),
    ("a3", "node-a", [10, 244, 0, 13]),
    ("ca", "node-a", [10, 244, 0, 200]),
    ("b1", "node-b", [10, 244, 1, 11]),
    ("b2", "node-b", [10, 244, 1, 12]),
    ("cb", "node-b", [10, 244, 1, 200]),
];

/// The address of pod `name`.
pub fn pod_ip(name: &str) -> Ipv4Addr {
    PODS.iter().find(|p| p.0 == name).map(|p| Ipv4Addr::from(p.2)).unwrap_or(Ipv4Addr::UNSPECIFIED)
}

/// The IPv6 address of pod `name`: its IPv4 address's last two octets in
/// `fd00:10:244:<third>::<fourth>`, the fourth written with the same digits
/// (10.244.1.200 -> fd00:10:244:1::200).
pub fn pod_ip6(name: &str) -> Ipv6Addr {
    let [_, _, third, fourth] = pod_ip(name).octets();
    let last = u16::from_str_radix(&fourth.to_string(), 16).unwrap_or_default();
    Ipv6Addr::new(0xfd00, 0x10, 0x244, third.into(), 0, 0, 0, last)
}

/// The node of pod `name`.
pub fn pod_node(name: &str) -> &'static str {
    PODS.iter().find(|p| p.0 == name).map_or("node-a", |p| p.1)
}

/// The extra source addresses of `ca`.
pub fn ca_sources() -> Vec<Ipv4Addr> {
    (1..=CA_EXTRA_SOURCES).map(|i| Ipv4Addr::new(10, 244, 0, 200 + i)).collect()
}

/// The cluster to build: node-a/node-b, the pods, and the client routing
/// the LoadBalancer / external IPs (192.0.2.0/24) to node-a.
pub fn plan() -> Plan {
    let mut plan = Plan::two_nodes();
    plan.pods = PODS
        .iter()
        .map(|&(name, node, ip)| PodPlan {
            name: name.into(),
            node: node.into(),
            ip: Ipv4Addr::from(ip),
            ip6: Some(pod_ip6(name)),
            extra_ips: if name == "ca" { ca_sources() } else { Vec::new() },
            tcp_ports: TCP_PORTS.to_vec(),
            udp_ports: UDP_PORTS.to_vec(),
        })
        .collect();
    plan.client.routes = vec![("192.0.2.0/24".parse().unwrap_or_default(), "node-a".into())];
    plan
}

/// The manifests: the static scenario plus the run-time services: `dyn`
/// (ClusterIP 10.96.10.150, port 80 -> 8080) with `dyn_endpoints` (pod
/// names), or without `dyn` at all when `None`; and `hc-local` with its one
/// endpoint on pod `hc_endpoint`.
pub fn manifests(dyn_endpoints: Option<&[&str]>, hc_endpoint: &str) -> String {
    let mut text = format!("{MANIFESTS}---\n{DUALSTACK_MANIFESTS}");
    if let Some(eps) = dyn_endpoints {
        text.push_str(&dyn_service(eps));
    }
    text.push_str(&hc_service(hc_endpoint));
    text
}

/// `hc-local`: LoadBalancer, externalTrafficPolicy Local, ClusterIP
/// 10.96.10.160, port 80 -> 8080, nodePort 30160, healthCheckNodePort
/// [`HC_PORT`], LB ingress 192.0.2.60; one endpoint, on pod `endpoint`.
fn hc_service(endpoint: &str) -> String {
    format!(
        "---\n# hc-local: health-check node port; its endpoint moves at run time\napiVersion: v1\nkind: Service\nmetadata:\n  name: {HC_NAME}\n  namespace: {HC_NAMESPACE}\nspec:\n  type: LoadBalancer\n  clusterIP: 10.96.10.160\n  externalTrafficPolicy: Local\n  healthCheckNodePort: {HC_PORT}\n  ports:\n  - name: http\n    protocol: TCP\n    port: 80\n    targetPort: 8080\n    nodePort: 30160\nstatus:\n  loadBalancer:\n    ingress:\n    - ip: 192.0.2.60\n      ipMode: VIP\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {HC_NAME}-1\n  namespace: {HC_NAMESPACE}\n  labels:\n    kubernetes.io/service-name: {HC_NAME}\naddressType: IPv4\n{}ports:\n- name: http\n  protocol: TCP\n  port: 8080\n",
        endpoint_yaml(endpoint)
    )
}

/// One `endpoints:` entry list for pod `name` (ready, on its node).
fn endpoint_yaml(name: &str) -> String {
    format!(
        "endpoints:\n- addresses:\n  - {}\n  conditions:\n    ready: true\n    serving: true\n    terminating: false\n  nodeName: {}\n",
        pod_ip(name),
        pod_node(name)
    )
}

fn dyn_service(eps: &[&str]) -> String {
    let mut yaml = format!(
        "---\n# dyn: changed at run time by the test\napiVersion: v1\nkind: Service\nmetadata:\n  name: dyn\n  namespace: e2e\nspec:\n  type: ClusterIP\n  clusterIP: {}\n  ports:\n  - name: http\n    protocol: TCP\n    port: 80\n    targetPort: 8080\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: dyn-1\n  namespace: e2e\n  labels:\n    kubernetes.io/service-name: dyn\naddressType: IPv4\n",
        addr::DYN
    );
    yaml.push_str(if eps.is_empty() { "endpoints: []\n" } else { "endpoints:\n" });
    for name in eps {
        let node = PODS.iter().find(|p| p.0 == *name).map_or("node-a", |p| p.1);
        yaml.push_str(&format!(
            "- addresses:\n  - {}\n  conditions:\n    ready: true\n    serving: true\n    terminating: false\n  nodeName: {node}\n",
            pod_ip(name)
        ));
    }
    yaml.push_str("ports:\n- name: http\n  protocol: TCP\n  port: 8080\n");
    yaml
}

/// A proxy mode under test. Every mode must pass the same suite; only the
/// flags below and the few expectations where upstream's modes differ
/// (see `cases.rs`) depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `--proxy-mode iptables`.
    Iptables,
    /// `--proxy-mode ipvs`.
    Ipvs,
    /// `--proxy-mode nftables`.
    Nftables,
    /// `--proxy-mode userspace`.
    Userspace,
}

impl Mode {
    /// The mode called `name` (a `--proxy-mode` value).
    pub fn parse(name: &str) -> Option<Self> {
        [Mode::Iptables, Mode::Ipvs, Mode::Nftables, Mode::Userspace].into_iter().find(|m| m.name() == name)
    }

    /// The `--proxy-mode` value.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Iptables => "iptables",
            Mode::Ipvs => "ipvs",
            Mode::Nftables => "nftables",
            Mode::Userspace => "userspace",
        }
    }
}

/// Flags for kube-proxy-rs besides `--manifests` and `--hostname-override`
/// (which the cluster adds): `mode`, no minimum sync interval so run-time
/// changes show within about a second, health and metrics on loopback
/// inside the node. Full resyncs every second in iptables and nftables
/// mode (nftables mode takes the `--iptables-*` period flags, as upstream); every 30 s
/// in IPVS mode, which runs in an emulated VM where even a resync that
/// changes nothing holds a CPU for 1–5 s (debug build): a 1 s period there
/// starved the file watcher and probes, and a 10 s one (two proxies) still
/// left a rewritten manifests file waiting up to 18 s to be decoded once the
/// suite grew to 25 services (measured, stop 19). No case needs the
/// periodic resync: changes sync at once.
pub fn proxy_args(mode: Mode) -> Vec<String> {
    let periods = match mode {
        Mode::Iptables | Mode::Nftables | Mode::Userspace => ["--iptables-min-sync-period", "0s", "--iptables-sync-period", "1s"],
        Mode::Ipvs => ["--ipvs-min-sync-period", "0s", "--ipvs-sync-period", "30s"],
    };
    let cluster_cidrs = format!("{CLUSTER_CIDR},{CLUSTER_CIDR6}");
    let mut args = vec!["--proxy-mode", mode.name(), "--cluster-cidr", &cluster_cidrs, "--iptables-backend", "legacy"];
    args.extend(periods);
    args.extend(["--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249", "--v=2"]);
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn pod_ip6_follows_the_ipv4_plan() {
    assert_eq!(pod_ip6("ca"), "fd00:10:244::200".parse::<Ipv6Addr>().unwrap());
    assert_eq!(pod_ip6("b1"), "fd00:10:244:1::11".parse::<Ipv6Addr>().unwrap());
    for name in ["a1", "a2", "b1"] {
        assert!(DUALSTACK_MANIFESTS.contains(&format!("  - {}\n", pod_ip6(name))), "{name}'s IPv6 address is not in dualstack.yaml");
    }
}

#[test]
fn client_addresses_are_the_plans() {
    let client = plan().client;
    assert_eq!(client.ips.iter().map(|ip| IpAddr::V4(*ip)).collect::<Vec<_>>(), [addr::CLIENT_IN, addr::CLIENT_OUT]);
    assert_eq!(client.ips6.first().map(|ip| IpAddr::V6(*ip)), Some(addr::CLIENT6));
}

#[test]
fn mode_names_round_trip() {
    for mode in [Mode::Iptables, Mode::Ipvs, Mode::Nftables, Mode::Userspace] {
        assert_eq!(Mode::parse(mode.name()), Some(mode));
    }
    assert_eq!(Mode::parse("kernelspace"), None);
}
