//! The cluster the suite programs: node-a, a few healthy services whose
//! endpoints are the echo pods (probed through every scenario, never
//! changed), and many churned services whose endpoints are addresses
//! nothing answers (changed at rate, never probed). The objects are the
//! API server's JSON; the manifests file holds the same objects, one JSON
//! document each.

use crate::fake_api::Kind;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};

/// The node the proxy runs as.
pub const NODE: &str = "node-a";
/// Its InternalIP (testkit's plan for node-a).
pub const NODE_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 86, 2);
/// Namespace of every service.
pub const NAMESPACE: &str = "rel";
/// Service port (`http`) and the endpoints' port.
pub const PORT: u16 = 80;
/// See [`PORT`].
pub const TARGET_PORT: u16 = 8080;
/// How many healthy (probed, never changed) services there are.
pub const HEALTHY: usize = 4;
/// The echo pods behind every healthy service.
pub const ECHO_PODS: [(&str, Ipv4Addr); 2] =
    [("p1", Ipv4Addr::new(10, 244, 0, 11)), ("p2", Ipv4Addr::new(10, 244, 0, 12))];
/// The pod the probes start from.
pub const CLIENT_POD: (&str, Ipv4Addr) = ("cl", Ipv4Addr::new(10, 244, 0, 200));

/// One service with its one port `http` and its endpoints.
#[derive(Debug, Clone)]
pub struct Service {
    /// `metadata.name`.
    pub name: String,
    /// Its ClusterIP.
    pub cluster_ip: Ipv4Addr,
    /// Endpoint addresses (port [`TARGET_PORT`]).
    pub endpoints: Vec<Ipv4Addr>,
    generation: u32,
}

/// Every service, healthy ones first.
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// Healthy services (the first [`HEALTHY`]), then the churned ones.
    pub services: Vec<Service>,
    rng: u64,
}

impl ClusterState {
    /// [`HEALTHY`] healthy services and `churned` churned ones, each of
    /// those at its first endpoint set.
    pub fn new(churned: usize) -> Self {
        let healthy = (0..HEALTHY).map(|i| Service {
            name: format!("healthy-{i}"),
            cluster_ip: Ipv4Addr::new(10, 96, 0, 10 + i as u8),
            endpoints: ECHO_PODS.iter().map(|p| p.1).collect(),
            generation: 0,
        });
        let churn = (0..churned).map(|i| {
            let mut s = Service {
                name: format!("churn-{i}"),
                cluster_ip: Ipv4Addr::new(10, 96, 1 + (i / 200) as u8, 10 + (i % 200) as u8),
                endpoints: Vec::new(),
                generation: 1,
            };
            s.endpoints = churned_endpoints(i, s.generation);
            s
        });
        Self { services: healthy.chain(churn).collect(), rng: 0x9e37_79b9_7f4a_7c15 }
    }

    /// The probe targets: every healthy service's ClusterIP:port.
    pub fn healthy_addresses(&self) -> Vec<SocketAddr> {
        self.services[..HEALTHY].iter().map(|s| SocketAddr::from((s.cluster_ip, PORT))).collect()
    }

    /// Moves one churned service (picked at random) to its next endpoint
    /// set (0 to 3 endpoints, addresses rotating) and returns its index.
    pub fn churn_one(&mut self) -> usize {
        let churned = self.services.len() - HEALTHY;
        assert!(churned > 0, "no churned service");
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let i = HEALTHY + (self.rng % churned as u64) as usize;
        let service = &mut self.services[i];
        service.generation += 1;
        service.endpoints = churned_endpoints(i - HEALTHY, service.generation);
        i
    }

    /// The Node, every Service and every EndpointSlice, as the API serves them.
    pub fn objects(&self) -> Vec<(Kind, Value)> {
        let mut objects = vec![(Kind::Nodes, node())];
        objects.extend(self.services.iter().map(|s| (Kind::Services, service(s))));
        objects.extend((0..self.services.len()).map(|i| (Kind::EndpointSlices, self.slice(i))));
        objects
    }

    /// The EndpointSlice of service `i`.
    pub fn slice(&self, i: usize) -> Value {
        slice(&self.services[i])
    }

    /// The manifests file of this state: one JSON document per object.
    pub fn manifests(&self) -> String {
        let mut text = String::new();
        for (kind, mut object) in self.objects() {
            object["apiVersion"] = json!(api_version(kind));
            object["kind"] = json!(kind_name(kind));
            let _ = writeln!(text, "---\n{object}");
        }
        text
    }

    /// What the rules must hold: per service port name (`rel/name:http`),
    /// the DNAT destinations of its endpoints; services without endpoints
    /// are left out.
    pub fn expected(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.services
            .iter()
            .filter(|s| !s.endpoints.is_empty())
            .map(|s| {
                let dests = s.endpoints.iter().map(|ip| format!("{ip}:{TARGET_PORT}")).collect();
                (format!("{NAMESPACE}/{}:http", s.name), dests)
            })
            .collect()
    }
}

/// The service port name (`rel/name:http`) whose ClusterIP is `ip` (the
/// addresses [`ClusterState::new`] gives), if any.
pub fn service_at(ip: Ipv4Addr) -> Option<String> {
    let [a, b, c, d] = ip.octets();
    if a != 10 || b != 96 || d < 10 {
        return None;
    }
    let name = match c {
        0 if usize::from(d - 10) < HEALTHY => format!("healthy-{}", d - 10),
        0 => return None,
        _ if d < 210 => format!("churn-{}", usize::from(c - 1) * 200 + usize::from(d - 10)),
        _ => return None,
    };
    Some(format!("{NAMESPACE}/{name}:http"))
}

/// Endpoints of churned service `i` at `generation`: `generation % 4`
/// addresses in 10.248.0.0/13 (routed nowhere), rotating so that every
/// generation differs from the one before.
fn churned_endpoints(i: usize, generation: u32) -> Vec<Ipv4Addr> {
    let count = generation % 4;
    (0..count).map(|k| Ipv4Addr::new(10, 248 + ((generation + k) % 8) as u8, (i >> 8) as u8, (i & 255) as u8)).collect()
}

#[test]
fn services_are_found_by_their_cluster_ip() {
    let state = ClusterState::new(450);
    for s in &state.services {
        assert_eq!(service_at(s.cluster_ip), Some(format!("{NAMESPACE}/{}:http", s.name)));
    }
    assert_eq!(service_at(Ipv4Addr::new(10, 96, 0, 20)), None);
    assert_eq!(service_at(Ipv4Addr::new(10, 97, 1, 10)), None);
}

fn node() -> Value {
    json!({
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]},
        "status": {"addresses": [{"type": "InternalIP", "address": NODE_IP.to_string()}]},
    })
}

fn service(s: &Service) -> Value {
    json!({
        "metadata": {"namespace": NAMESPACE, "name": s.name, "labels": {}},
        "spec": {"type": "ClusterIP", "clusterIP": s.cluster_ip.to_string(), "clusterIPs": [s.cluster_ip.to_string()],
                 "ports": [{"name": "http", "port": PORT, "protocol": "TCP", "targetPort": TARGET_PORT}]},
    })
}

fn slice(s: &Service) -> Value {
    let endpoints: Vec<Value> = s
        .endpoints
        .iter()
        .map(|ip| json!({"addresses": [ip.to_string()], "conditions": {"ready": true}, "nodeName": NODE}))
        .collect();
    json!({
        "metadata": {"namespace": NAMESPACE, "name": format!("{}-1", s.name),
                     "labels": {"kubernetes.io/service-name": s.name}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": TARGET_PORT, "protocol": "TCP"}],
    })
}

fn api_version(kind: Kind) -> &'static str {
    match kind {
        Kind::Services | Kind::Nodes => "v1",
        Kind::EndpointSlices => "discovery.k8s.io/v1",
        Kind::ServiceCidrs => "networking.k8s.io/v1",
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Services => "Service",
        Kind::EndpointSlices => "EndpointSlice",
        Kind::Nodes => "Node",
        Kind::ServiceCidrs => "ServiceCIDR",
    }
}
