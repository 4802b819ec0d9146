//! The cluster of the switch test: node-a, three services of every kind
//! the switch must keep (ClusterIP, NodePort with ETP Cluster, NodePort
//! with ETP Local) over the two server pods, and `fillers` more ClusterIP
//! services so the new mode's start-up takes the time a real node's does.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// Port the server pods answer on (every service's target port).
pub const SERVER_PORT: u16 = 9000;
/// The server pods, on node-a.
pub const SERVERS: [(&str, Ipv4Addr); 2] = [("s1", Ipv4Addr::new(10, 244, 0, 11)), ("s2", Ipv4Addr::new(10, 244, 0, 12))];
/// The pod the ClusterIP clients run in, on node-a.
pub const CLIENT_POD: (&str, Ipv4Addr) = ("cl", Ipv4Addr::new(10, 244, 0, 200));
/// ClusterIP service `sw/cluster`, port 80.
pub const CLUSTER_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 10);
/// NodePort of `sw/nodeport` (ETP Cluster).
pub const NODE_PORT: u16 = 30080;
/// NodePort of `sw/local` (ETP Local, both endpoints on node-a).
pub const LOCAL_NODE_PORT: u16 = 30081;

/// ClusterIP service `sw/late`: without endpoints in [`State::Old`].
pub const LATE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 13);

/// Ingress IP of LoadBalancer service `sw/lb` (port 80, NodePort 30083),
/// whose `loadBalancerSourceRanges` admit the outside client's second
/// address (172.20.0.66) in [`State::Old`], its first (172.20.0.10)
/// otherwise.
pub const LB_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);

/// Which endpoints the services have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Both servers behind every service (the switch test).
    Both,
    /// A stale mode's state: only `s1`, and `sw/late` without endpoints.
    Old,
    /// The running mode's state: only `s2` behind every service.
    New,
}

impl State {
    fn endpoints(self) -> &'static [(&'static str, Ipv4Addr)] {
        match self {
            State::Both => &SERVERS,
            State::Old => &SERVERS[..1],
            State::New => &SERVERS[1..],
        }
    }
}

/// The manifests file: node-a, the services of `state`, `fillers` more.
pub fn manifests(state: State, fillers: usize) -> String {
    let mut yaml = String::from(NODE);
    let eps = state.endpoints();
    service(&mut yaml, "cluster", "ClusterIP", CLUSTER_IP, None, eps);
    service(&mut yaml, "nodeport", "NodePort", Ipv4Addr::new(10, 96, 0, 11), Some((NODE_PORT, "Cluster")), eps);
    service(&mut yaml, "local", "NodePort", Ipv4Addr::new(10, 96, 0, 12), Some((LOCAL_NODE_PORT, "Local")), eps);
    let late = if state == State::Old { &[][..] } else { eps };
    service(&mut yaml, "late", "ClusterIP", LATE_IP, None, late);
    let allowed = if state == State::Old { "172.20.0.66/32" } else { "172.20.0.10/32" };
    service(&mut yaml, "lb", "LoadBalancer", Ipv4Addr::new(10, 96, 0, 14), Some((30083, "Cluster")), eps);
    load_balancer(&mut yaml, allowed);
    for i in 0..fillers {
        let ip = Ipv4Addr::new(10, 96, 1 + (i / 250) as u8, 1 + (i % 250) as u8);
        service(&mut yaml, &format!("filler-{i}"), "ClusterIP", ip, None, eps);
    }
    yaml
}

/// Makes the service just written (the document before its slice) a
/// LoadBalancer at [`LB_IP`] admitting only `allowed`.
fn load_balancer(yaml: &mut String, allowed: &str) {
    let slice_at = yaml.rfind("---\napiVersion: discovery.k8s.io/v1").unwrap_or(yaml.len());
    let slice = yaml.split_off(slice_at);
    let _ = write!(yaml, "status:\n  loadBalancer:\n    ingress:\n    - ip: {LB_IP}\n      ipMode: VIP\n");
    let spec_end = yaml.rfind("  ports:\n").unwrap_or(yaml.len());
    yaml.insert_str(spec_end, &format!("  loadBalancerSourceRanges:\n  - {allowed}\n"));
    yaml.push_str(&slice);
}

const NODE: &str = "apiVersion: v1
kind: Node
metadata:
  name: node-a
spec:
  podCIDR: 10.244.0.0/24
status:
  addresses:
  - address: 192.168.86.2
    type: InternalIP
";

/// One selector-less service `sw/<name>` (port 80 → [`SERVER_PORT`]) and
/// its slice listing `endpoints`.
fn service(yaml: &mut String, name: &str, kind: &str, cluster_ip: Ipv4Addr, node_port: Option<(u16, &str)>, endpoints: &[(&str, Ipv4Addr)]) {
    let _ = write!(yaml, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: sw\nspec:\n  type: {kind}\n  clusterIP: {cluster_ip}\n");
    if let Some((_, policy)) = node_port {
        let _ = writeln!(yaml, "  externalTrafficPolicy: {policy}");
    }
    let _ = write!(yaml, "  ports:\n  - name: tcp\n    protocol: TCP\n    port: 80\n    targetPort: {SERVER_PORT}\n");
    if let Some((port, _)) = node_port {
        let _ = writeln!(yaml, "    nodePort: {port}");
    }
    let _ = write!(
        yaml,
        "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}-1\n  namespace: sw\n  labels:\n    kubernetes.io/service-name: {name}\naddressType: IPv4\nendpoints:{}\n",
        if endpoints.is_empty() { " []" } else { "" }
    );
    for (_, ip) in endpoints {
        let _ = write!(yaml, "- addresses:\n  - {ip}\n  conditions:\n    ready: true\n    serving: true\n    terminating: false\n  nodeName: node-a\n");
    }
    let _ = write!(yaml, "ports:\n- name: tcp\n  protocol: TCP\n  port: {SERVER_PORT}\n");
}
