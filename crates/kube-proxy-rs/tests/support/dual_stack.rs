//! What the dual-stack binary tests share (on the host and in the IPVS
//! VM): the manifests of a dual-stack node, the namespace playing it, an
//! HTTP GET from inside it, and the key paths of a JSON answer.

#![allow(dead_code)] // each test binary uses its own part

use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use testkit::netns::Netns;

/// node-a with both families; `web` dual-stack (10.96.0.10, fd00:96::10)
/// with one local endpoint per family; `web6` IPv6-only LoadBalancer, ETP
/// Local, healthCheckNodePort 32000, one local endpoint.
pub const MANIFESTS: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: node-a}
status:
  addresses:
  - {type: InternalIP, address: 192.168.0.2}
  - {type: InternalIP, address: "fd00:192::2"}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: ClusterIP
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10, "fd00:96::10"]
  ipFamilies: [IPv4, IPv6]
  ipFamilyPolicy: RequireDualStack
  ports: [{name: http, port: 80, protocol: TCP, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-v4, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.0.5], nodeName: node-a, conditions: {ready: true}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-v6, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv6
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: ["fd00:244::5"], nodeName: node-a, conditions: {ready: true}}
---
apiVersion: v1
kind: Service
metadata: {name: web6, namespace: shop}
spec:
  type: LoadBalancer
  clusterIP: "fd00:96::20"
  clusterIPs: ["fd00:96::20"]
  ipFamilies: [IPv6]
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  ports: [{name: http, port: 80, protocol: TCP, targetPort: 8080, nodePort: 30080}]
status:
  loadBalancer:
    ingress: [{ip: "2001:db8::20", ipMode: VIP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web6-v6, namespace: shop, labels: {kubernetes.io/service-name: web6}}
addressType: IPv6
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: ["fd00:244::6"], nodeName: node-a, conditions: {ready: true}}
"#;

/// A namespace playing a dual-stack node: `eth0` (one end of a veth
/// pair) with 192.168.0.2/24 and fd00:192::2/64.
pub fn dual_stack_node(label: &str) -> Netns {
    testkit::netns::require_kernel();
    let ns = Netns::new(label).unwrap();
    ns.ip(&["link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"]).unwrap();
    ns.ip(&["addr", "add", "192.168.0.2/24", "dev", "eth0"]).unwrap();
    ns.ip(&["addr", "add", "fd00:192::2/64", "dev", "eth0", "nodad"]).unwrap();
    for link in ["lo", "eth0", "eth0-peer"] {
        ns.ip(&["link", "set", link, "up"]).unwrap();
    }
    ns
}

/// `GET path` on `addr` from inside the namespace: status line and body.
pub fn get(ns: &Netns, addr: &'static str, path: &'static str) -> (String, String) {
    let reply = ns
        .run(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            write!(stream, "GET {path} HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n").unwrap();
            let mut reply = String::new();
            stream.read_to_string(&mut reply).unwrap();
            reply
        })
        .unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (head.lines().next().unwrap_or_default().to_string(), body.to_string())
}

/// Every key path of a JSON document (`status.IPv6.healthy`, ...).
pub fn key_paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    if let Value::Object(map) = value {
        for (key, inner) in map {
            let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            out.insert(path.clone());
            key_paths(inner, &path, out);
        }
    }
}

pub fn keys_of_body(body: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    key_paths(&serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}")), "", &mut keys);
    keys
}
