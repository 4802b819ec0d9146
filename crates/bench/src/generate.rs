//! The benchmark's load: N selector-less services × M ready endpoints, a
//! share of them on the proxy's node, written as a manifests file.

use std::fmt::Write;

/// Shape of the generated cluster.
#[derive(Debug, Clone)]
pub struct Load {
    /// Number of services.
    pub services: usize,
    /// Ready endpoints per service.
    pub endpoints: usize,
    /// Every `local_every`-th endpoint is on the proxy's node (3 = a third).
    pub local_every: usize,
    /// Every `nodeport_every`-th service is a NodePort service (0 = none).
    pub nodeport_every: usize,
    /// Every `lb_every`-th service is a LoadBalancer with one ingress IP (0 = none).
    pub lb_every: usize,
    /// Every `affinity_every`-th service has ClientIP affinity (0 = none).
    pub affinity_every: usize,
}

/// Name of the node the proxy runs as.
pub const NODE: &str = "bench-node";
/// Name of the other nodes' endpoints.
pub const OTHER_NODE: &str = "bench-other";
/// A cluster CIDR holding every generated endpoint (10.128.0.0–10.191.255.255).
pub const POD_CIDR: &str = "10.128.0.0/10";

/// The whole manifests file for `load`, with `extra` endpoints added to
/// service 0 (used to measure a one-endpoint change).
pub fn manifests(load: &Load, extra: usize) -> String {
    let mut out = String::with_capacity(load.services * (700 + 160 * load.endpoints));
    write_node(&mut out);
    for i in 0..load.services {
        let n = load.endpoints + if i == 0 { extra } else { 0 };
        write_service(&mut out, load, i);
        write_slice(&mut out, load, i, n);
    }
    out
}

/// The Node document alone.
pub fn node_document() -> String {
    let mut out = String::new();
    write_node(&mut out);
    out
}

/// Service `i` and its EndpointSlice with `endpoints` endpoints, as two
/// documents (for feeding the tracker one object at a time).
pub fn service_documents(load: &Load, i: usize, endpoints: usize) -> String {
    let mut out = String::new();
    write_service(&mut out, load, i);
    write_slice(&mut out, load, i, endpoints);
    out
}

fn write_node(out: &mut String) {
    let _ = write!(
        out,
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {NODE}\nspec:\n  podCIDRs: [10.128.0.0/24]\n\
         status:\n  addresses:\n  - type: InternalIP\n    address: 192.168.86.2\n"
    );
}

fn every(i: usize, n: usize) -> bool {
    n != 0 && i % n == n - 1
}

fn service_type(load: &Load, i: usize) -> &'static str {
    if every(i, load.lb_every) {
        "LoadBalancer"
    } else if every(i, load.nodeport_every) {
        "NodePort"
    } else {
        "ClusterIP"
    }
}

/// ClusterIP of service `i`, inside 10.96.0.0/12.
fn cluster_ip(i: usize) -> String {
    let n = i + 10;
    format!("10.{}.{}.{}", 96 + (n >> 16) % 16, (n >> 8) & 255, n & 255)
}

fn write_service(out: &mut String, load: &Load, i: usize) {
    let ty = service_type(load, i);
    let _ = write!(
        out,
        "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\n  namespace: bench\nspec:\n  \
         type: {ty}\n  clusterIP: {ip}\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n    targetPort: 8080\n",
        ip = cluster_ip(i)
    );
    if ty != "ClusterIP" {
        let _ = writeln!(out, "    nodePort: {}", 30000 + i % 2768);
    }
    if every(i, load.affinity_every) {
        out.push_str("  sessionAffinity: ClientIP\n");
    }
    if ty == "LoadBalancer" {
        let _ = write!(
            out,
            "status:\n  loadBalancer:\n    ingress:\n    - ip: 203.0.{}.{}\n",
            (i >> 8) & 255,
            i & 255
        );
    }
}

fn write_slice(out: &mut String, load: &Load, i: usize, endpoints: usize) {
    let _ = write!(
        out,
        "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: svc-{i}-0\n  namespace: bench\n  \
         labels:\n    kubernetes.io/service-name: svc-{i}\naddressType: IPv4\nports:\n- name: http\n  port: 8080\n  protocol: TCP\nendpoints:\n"
    );
    for e in 0..endpoints {
        let n = i * (load.endpoints + 8) + e;
        let node = if load.local_every != 0 && e % load.local_every == 0 {
            NODE
        } else {
            OTHER_NODE
        };
        let _ = write!(
            out,
            "- addresses: [10.{}.{}.{}]\n  nodeName: {node}\n  conditions: {{ready: true}}\n",
            128 + (n >> 16) % 64,
            (n >> 8) & 255,
            n & 255
        );
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn load(services: usize) -> Load {
        Load {
            services,
            endpoints: 10,
            local_every: 3,
            nodeport_every: 0,
            lb_every: 0,
            affinity_every: 0,
        }
    }

    #[test]
    fn addresses_do_not_repeat_at_ten_thousand_services() {
        let text = manifests(&load(10_000), 0);
        let mut cluster_ips: Vec<_> = text
            .lines()
            .filter_map(|l| l.strip_prefix("  clusterIP: "))
            .collect();
        let n = cluster_ips.len();
        cluster_ips.sort_unstable();
        cluster_ips.dedup();
        assert_eq!((n, cluster_ips.len()), (10_000, 10_000));
        let mut eps: Vec<_> = text
            .lines()
            .filter_map(|l| l.strip_prefix("- addresses: "))
            .collect();
        let n = eps.len();
        eps.sort_unstable();
        eps.dedup();
        assert_eq!((n, eps.len()), (100_000, 100_000));
    }

    /// The file as the proxy reads it: manifests source, then the tracker.
    fn snapshot_of(load: &Load) -> model::Snapshot {
        let parsed = source::manifests::parse(&manifests(load, 0)).expect("generated file parses");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        let mut tracker = tracker::Tracker::new(NODE);
        let warnings = tracker.replace_all(&parsed.objects);
        assert!(warnings.is_empty(), "{warnings:?}");
        tracker.snapshot().0
    }

    #[test]
    fn generated_file_yields_n_services_with_m_endpoints_a_third_local() {
        let snapshot = snapshot_of(&load(30));
        assert_eq!(snapshot.services.len(), 30);
        for name in snapshot.services.keys() {
            let endpoints = snapshot.endpoints_of(name);
            assert_eq!(endpoints.len(), 10, "{name:?}");
            assert_eq!(
                endpoints.iter().filter(|e| e.is_local).count(),
                4,
                "{name:?}"
            );
        }
        assert_eq!(snapshot.node.name, NODE);
    }

    #[test]
    fn service_mix_is_as_asked() {
        let mix = Load {
            nodeport_every: 2,
            lb_every: 5,
            affinity_every: 3,
            ..load(30)
        };
        let snapshot = snapshot_of(&mix);
        let ports: Vec<_> = snapshot.services.values().collect();
        assert_eq!(
            ports
                .iter()
                .filter(|p| !p.load_balancer_ips.is_empty())
                .count(),
            6
        );
        assert_eq!(
            ports.iter().filter(|p| p.node_port.is_some()).count(),
            15 + 6 - 3
        );
        assert_eq!(
            ports
                .iter()
                .filter(|p| p.session_affinity_seconds.is_some())
                .count(),
            10
        );
    }

    #[test]
    fn extra_endpoints_go_to_service_zero() {
        let a = manifests(&load(3), 0);
        let b = manifests(&load(3), 1);
        assert_eq!(
            b.matches("- addresses:").count(),
            a.matches("- addresses:").count() + 1
        );
    }
}
