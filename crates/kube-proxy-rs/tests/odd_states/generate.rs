//! Random valid-but-odd cluster states as API objects: every Service type
//! (ClusterIP, headless, NodePort, LoadBalancer, ExternalName), every
//! traffic policy and affinity combination, single- and dual-stack, ports
//! 1 and 65535, endpoint port 0 and none, empty slices, duplicate
//! endpoints, names at the API's length limits, and now and then one
//! service with 1,000 ports. Deterministic for a seed.

use k8s_openapi::api::core::v1::{
    ClientIPConfig, LoadBalancerIngress, LoadBalancerStatus, Node, NodeAddress, NodeSpec, NodeStatus, Service,
    ServicePort, ServiceSpec, ServiceStatus, SessionAffinityConfig,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForZone};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::{BTreeMap, BTreeSet};
use tracker::Objects;

/// The node every state is rendered for.
pub const NODE: &str = "node-a";

/// A small xorshift64* generator: no dependency, same states for a seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// One state in this many has one service with 1,000 ports.
pub const WIDE_EVERY: usize = 2_000;

/// Whether state `index` is one with 1,000 ports.
pub fn is_wide(index: usize) -> bool {
    index % WIDE_EVERY == WIDE_EVERY - 1
}

/// One generated state, with what makes it odd (for failure messages).
pub struct State {
    pub objects: Objects,
    pub services: usize,
    pub ports: usize,
}

/// Generates state `index` (its names are unique to it, so the rules of
/// many states can share one table).
pub fn state(rng: &mut Rng, index: usize) -> State {
    let mut g = Generator { rng, index, cluster_ips: 0, node_ports: BTreeSet::new(), objects: Objects::default() };
    let wide = is_wide(index);
    let services = if wide { 1 } else { 1 + g.rng.below(4) };
    let mut ports = 0;
    for s in 0..services {
        let n = if wide { 1_000 } else { 1 + g.rng.below(3) };
        ports += g.service(s, n);
    }
    if !g.rng.chance(10) {
        g.node();
    }
    State { objects: g.objects, services, ports }
}

struct Generator<'a> {
    rng: &'a mut Rng,
    index: usize,
    cluster_ips: u32,
    node_ports: BTreeSet<i32>,
    objects: Objects,
}

const TYPES: [&str; 5] = ["ClusterIP", "Headless", "NodePort", "LoadBalancer", "ExternalName"];
const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];
const EXTERNAL_IPS: [&str; 6] = ["192.0.2.1", "192.0.2.2", "203.0.113.9", "2001:db8::1", "2001:db8::2", "1.2.3.4"];
const LB_IPS: [&str; 5] = ["198.51.100.1", "198.51.100.2", "2001:db8:1::1", "5.6.7.8", "2001:db8:1::2"];
const SOURCE_RANGES: [&str; 6] = ["0.0.0.0/0", "203.0.113.0/24", "192.0.2.7/32", "::/0", "2001:db8::/32", "10.0.0.0/8"];
const POD_IPS_V4: [&str; 6] = ["10.180.0.1", "10.180.0.2", "10.180.1.3", "10.180.255.254", "10.180.0.1", "192.168.0.2"];
const POD_IPS_V6: [&str; 4] = ["fd00:10:180::1", "fd00:10:180::2", "fd00:10:180::ffff", "fd00:10:180::1"];
const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

impl Generator<'_> {
    /// A name of `len` characters (a DNS label: lower case, digits, `-`)
    /// unique to this state and `what`.
    fn label(&mut self, what: &str, max: usize) -> String {
        let base = format!("{what}{}", self.index);
        let len = if self.rng.chance(3) { max } else { base.len() + self.rng.below(4) };
        let mut name = base;
        while name.len() < len {
            name.push(*self.rng.pick(&['a', 'z', '0', '9', '-']));
        }
        name.truncate(len);
        if name.ends_with('-') {
            name.pop();
            name.push('x');
        }
        name
    }

    fn cluster_ip(&mut self, v6: bool) -> String {
        self.cluster_ips += 1;
        let n = (self.index as u32) * 8 + self.cluster_ips;
        if v6 { format!("fd00:172:30::{:x}:{:x}", n >> 16, n & 0xffff) } else { format!("172.{}.{}.{}", 16 + (n >> 16) % 16, (n >> 8) & 0xff, n & 0xff) }
    }

    fn node_port(&mut self) -> i32 {
        let random = 30000 + self.rng.below(2768) as i32;
        let want = *self.rng.pick(&[30000, 32767, 1, 65535, random]);
        let mut port = want;
        while !self.node_ports.insert(port) {
            port = port % 65535 + 1;
        }
        port
    }

    /// One service with `n` ports and its slices; returns `n`.
    fn service(&mut self, s: usize, n: usize) -> usize {
        let namespace = self.label("ns", 63);
        let name = self.label(&format!("s{s}-"), 63);
        let kind = *self.rng.pick(&TYPES);
        let families = *self.rng.pick(&[&["IPv4"][..], &["IPv6"], &["IPv4", "IPv6"], &["IPv6", "IPv4"]]);
        let ports: Vec<ServicePort> = (0..n).map(|p| self.service_port(p, n, kind)).collect();
        let spec = self.spec(kind, families, ports.clone());
        let status = (kind == "LoadBalancer").then(|| self.lb_status());
        self.objects.services.push(Service { metadata: meta(&namespace, &name, None), spec: Some(spec), status });
        for family in families {
            for k in 0..self.rng.below(3) {
                self.slice(&namespace, &name, k, family, &ports);
            }
        }
        n
    }

    fn service_port(&mut self, p: usize, n: usize, kind: &str) -> ServicePort {
        let random = 1 + self.rng.below(65535) as i32;
        let port = if n > 3 { 1 + p as i32 * 65 } else { *self.rng.pick(&[1, 65535, 80, 53, random]) };
        let with_node_port = matches!(kind, "NodePort" | "LoadBalancer") && !self.rng.chance(8);
        ServicePort {
            name: (n > 1 || self.rng.chance(2)).then(|| if p == 0 && n <= 3 { self.label("p", 63) } else { format!("p{p}") }),
            port,
            protocol: Some(self.rng.pick(&PROTOCOLS).to_string()),
            node_port: with_node_port.then(|| self.node_port()),
            target_port: self.rng.chance(2).then(|| IntOrString::Int(*self.rng.pick(&[1, 65535, port]))),
            ..ServicePort::default()
        }
    }

    fn spec(&mut self, kind: &str, families: &[&str], ports: Vec<ServicePort>) -> ServiceSpec {
        let headless = kind == "Headless";
        let cluster_ips: Vec<String> =
            if headless { vec!["None".into()] } else { families.iter().map(|f| self.cluster_ip(*f == "IPv6")).collect() };
        let external = matches!(kind, "NodePort" | "LoadBalancer");
        let local = external && self.rng.chance(2);
        let affinity = self.rng.chance(3);
        ServiceSpec {
            type_: Some(if headless { "ClusterIP".into() } else { kind.into() }),
            cluster_ip: (kind != "ExternalName").then(|| cluster_ips[0].clone()),
            cluster_ips: (kind != "ExternalName").then_some(cluster_ips),
            ip_families: Some(families.iter().map(|f| f.to_string()).collect()),
            external_name: (kind == "ExternalName").then(|| "example.com".into()),
            ports: Some(ports),
            external_ips: self.rng.chance(3).then(|| (0..1 + self.rng.below(2)).map(|_| self.rng.pick(&EXTERNAL_IPS).to_string()).collect()),
            load_balancer_source_ranges: (kind == "LoadBalancer" && self.rng.chance(2))
                .then(|| (0..1 + self.rng.below(2)).map(|_| self.rng.pick(&SOURCE_RANGES).to_string()).collect()),
            external_traffic_policy: external.then(|| if local { "Local".into() } else { "Cluster".into() }),
            internal_traffic_policy: Some(if self.rng.chance(3) { "Local".into() } else { "Cluster".into() }),
            health_check_node_port: (kind == "LoadBalancer" && local).then(|| self.node_port()),
            session_affinity: Some(if affinity { "ClientIP".into() } else { "None".into() }),
            session_affinity_config: affinity.then(|| SessionAffinityConfig {
                client_ip: Some(ClientIPConfig { timeout_seconds: Some(*self.rng.pick(&[1, 10800, 86400])) }),
            }),
            ..ServiceSpec::default()
        }
    }

    fn lb_status(&mut self) -> ServiceStatus {
        let ingress = (0..self.rng.below(3))
            .map(|_| LoadBalancerIngress { ip: Some(self.rng.pick(&LB_IPS).to_string()), ..LoadBalancerIngress::default() })
            .collect();
        ServiceStatus { load_balancer: Some(LoadBalancerStatus { ingress: Some(ingress) }), ..ServiceStatus::default() }
    }

    fn slice(&mut self, namespace: &str, service: &str, k: usize, family: &str, ports: &[ServicePort]) {
        let pool: &[&str] = if family == "IPv6" { &POD_IPS_V6 } else { &POD_IPS_V4 };
        let count = self.rng.below(6);
        let endpoints = if count == 0 && self.rng.chance(2) { None } else { Some((0..count).map(|_| self.endpoint(pool)).collect()) };
        let ports = if self.rng.chance(10) {
            None
        } else {
            let mut kept = Vec::new();
            for port in ports {
                if !self.rng.chance(10) {
                    kept.push(self.endpoint_port(port));
                }
            }
            Some(kept)
        };
        let name = format!("{}-{}{k}", &service[..service.len().min(50)], if family == "IPv6" { "six" } else { "four" });
        let labels = BTreeMap::from([(tracker::LABEL_SERVICE_NAME.to_string(), service.to_string())]);
        self.objects.endpoint_slices.push(EndpointSlice {
            metadata: meta(namespace, &name, Some(labels)),
            address_type: family.to_string(),
            endpoints,
            ports,
        });
    }

    fn endpoint_port(&mut self, p: &ServicePort) -> EndpointPort {
        EndpointPort {
            name: p.name.clone(),
            port: *self.rng.pick(&[None, Some(0), Some(1), Some(65535), Some(8080)]),
            protocol: p.protocol.clone(),
            ..EndpointPort::default()
        }
    }

    fn endpoint(&mut self, pool: &[&str]) -> Endpoint {
        let addresses = (0..1 + usize::from(self.rng.chance(8))).map(|_| self.rng.pick(pool).to_string()).collect();
        let flag = |rng: &mut Rng| *rng.pick(&[None, Some(true), Some(false)]);
        Endpoint {
            addresses,
            conditions: Some(EndpointConditions { ready: flag(self.rng), serving: flag(self.rng), terminating: flag(self.rng) }),
            node_name: self.rng.pick(&[None, Some(NODE), Some("node-b")]).map(str::to_string),
            zone: self.rng.pick(&[None, Some("zone-a"), Some("zone-b")]).map(str::to_string),
            hints: self.rng.chance(3).then(|| EndpointHints {
                for_zones: Some(vec![ForZone { name: self.rng.pick(&ZONES).to_string() }]),
                ..EndpointHints::default()
            }),
            ..Endpoint::default()
        }
    }

    fn node(&mut self) {
        let labels = BTreeMap::from([("topology.kubernetes.io/zone".to_string(), self.rng.pick(&ZONES).to_string())]);
        let address = |a: &str| NodeAddress { type_: "InternalIP".into(), address: a.into() };
        self.objects.nodes.push(Node {
            metadata: meta("", NODE, Some(labels)),
            spec: Some(NodeSpec {
                pod_cidr: Some("10.180.0.0/24".into()),
                pod_cidrs: Some(vec!["10.180.0.0/24".into(), "fd00:10:180::/64".into()]),
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                addresses: Some(vec![address("192.168.0.2"), address("fd00:192:168::2")]),
                ..NodeStatus::default()
            }),
        });
    }
}

fn meta(namespace: &str, name: &str, labels: Option<BTreeMap<String, String>>) -> ObjectMeta {
    ObjectMeta {
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        name: Some(name.to_string()),
        labels,
        ..ObjectMeta::default()
    }
}
