//! Service → ServicePort rules and their warnings.

use super::support::*;
use crate::{IpFamily, Problem, Tracker};
use model::{Protocol, ServicePortName};
use serde_json::json;

#[test]
fn one_service_port_per_spec_port_with_protocol_default_tcp() {
    let svc = service(
        "kube-system",
        "dns",
        json!({"clusterIP": "10.96.0.10", "ports": [
            {"name": "dns", "port": 53, "protocol": "UDP"},
            {"name": "dns-tcp", "port": 53},
            {"name": "sctp", "port": 9, "protocol": "SCTP"},
        ]}),
    );
    let (snap, w) = with_service(&svc);
    assert!(w.is_empty());
    let names: Vec<ServicePortName> = snap.services.keys().cloned().collect();
    assert_eq!(
        names,
        [
            ServicePortName::new("kube-system", "dns", "dns", Protocol::Udp),
            ServicePortName::new("kube-system", "dns", "dns-tcp", Protocol::Tcp),
            ServicePortName::new("kube-system", "dns", "sctp", Protocol::Sctp),
        ]
    );
    assert!(
        snap.services
            .values()
            .all(|p| p.cluster_ip == ip("10.96.0.10"))
    );
}

#[test]
fn unnamed_port_and_missing_namespace() {
    let svc = service_full(
        json!({"metadata": {"name": "x"}, "spec": {"clusterIP": "10.96.0.5", "ports": [{"port": 80}]}}),
    );
    let (snap, _) = with_service(&svc);
    let port = only_port(&snap);
    assert_eq!(port.name, tcp("default", "x", ""));
    assert_eq!(port.name.to_string(), "default/x");
}

#[test]
fn ignored_services_are_skipped_silently() {
    let labelled = |label: &str| {
        service_full(json!({
            "metadata": {"namespace": "ns", "name": "s", "labels": {label: "x"}},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "http", "port": 80}]},
        }))
    };
    let cases = [
        labelled("service.kubernetes.io/service-proxy-name"),
        labelled("service.kubernetes.io/headless"),
        service(
            "ns",
            "s",
            json!({"clusterIP": "None", "ports": [{"port": 80}]}),
        ),
        service(
            "ns",
            "s",
            json!({"type": "ExternalName", "externalName": "example.com"}),
        ),
        service("ns", "s", json!({"clusterIP": "", "ports": [{"port": 80}]})),
        service("ns", "s", json!({"ports": [{"port": 80}]})),
        service_full(json!({"metadata": {"namespace": "ns", "name": "s"}})),
    ];
    for svc in &cases {
        let (snap, w) = with_service(svc);
        assert!(snap.services.is_empty(), "{svc:?}");
        assert!(w.is_empty(), "{svc:?}: {w:?}");
    }
    // An ordinary label does not hide a service.
    let (snap, _) = with_service(&labelled("app"));
    assert_eq!(snap.services.len(), 1);
}

#[test]
fn node_port_only_for_node_port_and_load_balancer_types() {
    let with_type = |t: &str| {
        service(
            "ns",
            "s",
            json!({"type": t, "clusterIP": "10.96.0.1", "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}),
        )
    };
    assert_eq!(
        only_port(&with_service(&with_type("NodePort")).0).node_port,
        Some(30080)
    );
    assert_eq!(
        only_port(&with_service(&with_type("LoadBalancer")).0).node_port,
        Some(30080)
    );
    assert_eq!(
        only_port(&with_service(&with_type("ClusterIP")).0).node_port,
        None
    );
    let lb_without = service(
        "ns",
        "s",
        json!({"type": "LoadBalancer", "clusterIP": "10.96.0.1", "ports": [{"port": 80}]}),
    );
    assert_eq!(only_port(&with_service(&lb_without).0).node_port, None);
}

#[test]
fn external_ips_of_our_family_and_bad_ones_warned() {
    let svc = service(
        "ns",
        "s",
        json!({"clusterIP": "10.96.0.1", "externalIPs": ["192.0.2.50", "2001:db8::1", "bogus", "192.0.2.50"], "ports": [{"port": 80}]}),
    );
    let (snap, w) = with_service(&svc);
    assert_eq!(only_port(&snap).external_ips, [ip("192.0.2.50")]);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].problem, Problem::BadExternalIp("bogus".into()));
    assert_eq!(
        w[0].to_string(),
        "Service ns/s: bad externalIP \"bogus\": not an IP address; ignored"
    );
}

#[test]
fn load_balancer_ips_skip_proxy_mode_and_bad_ones() {
    let svc = service_full(json!({
        "metadata": {"namespace": "ns", "name": "lb"},
        "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.1", "ports": [{"port": 80, "nodePort": 30001}]},
        "status": {"loadBalancer": {"ingress": [
            {"ip": "192.0.2.10", "ipMode": "VIP"},
            {"ip": "192.0.2.11"},
            {"ip": "192.0.2.12", "ipMode": "Proxy"},
            {"hostname": "lb.example.com"},
            {"ip": "300.1.1.1"},
            {"ip": "2001:db8::5"},
        ]}},
    }));
    let (snap, w) = with_service(&svc);
    assert_eq!(
        only_port(&snap).load_balancer_ips,
        [ip("192.0.2.10"), ip("192.0.2.11")]
    );
    assert_eq!(
        w.iter().map(|w| w.problem.clone()).collect::<Vec<_>>(),
        [Problem::BadLoadBalancerIp("300.1.1.1".into())]
    );
}

#[test]
fn source_ranges_stripped_masked_and_bad_ones_warned() {
    let svc = service(
        "ns",
        "s",
        json!({"type": "LoadBalancer", "clusterIP": "10.96.0.1", "ports": [{"port": 80, "nodePort": 30001}],
               "loadBalancerSourceRanges": [" 172.20.0.0/28", "192.168.86.7/24 ", "10.0.0.1", "2001:db8::/32", "x/8"]}),
    );
    let (snap, w) = with_service(&svc);
    let ranges: Vec<String> = only_port(&snap)
        .load_balancer_source_ranges
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(ranges, ["172.20.0.0/28", "192.168.86.0/24"]);
    let problems: Vec<Problem> = w.into_iter().map(|w| w.problem).collect();
    assert_eq!(
        problems,
        [
            Problem::BadSourceRange("10.0.0.1".into()),
            Problem::BadSourceRange("x/8".into())
        ]
    );
}

#[test]
fn client_ip_affinity_timeout() {
    let affinity = |config: serde_json::Value| {
        let mut spec = json!({"clusterIP": "10.96.0.1", "ports": [{"port": 80}], "sessionAffinity": "ClientIP"});
        if !config.is_null() {
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": config}});
        }
        with_service(&service("ns", "s", spec))
    };
    assert_eq!(
        only_port(&affinity(json!(null)).0).session_affinity_seconds,
        Some(10800)
    );
    assert_eq!(
        only_port(&affinity(json!(600)).0).session_affinity_seconds,
        Some(600)
    );
    let (snap, w) = affinity(json!(0));
    assert_eq!(only_port(&snap).session_affinity_seconds, Some(10800));
    assert_eq!(w[0].problem, Problem::BadAffinityTimeout(0));
    let none = service(
        "ns",
        "s",
        json!({"clusterIP": "10.96.0.1", "ports": [{"port": 80}], "sessionAffinity": "None"}),
    );
    assert_eq!(
        only_port(&with_service(&none).0).session_affinity_seconds,
        None
    );
}

#[test]
fn external_policy_local_only_when_externally_accessible() {
    let etp_local = |extra: serde_json::Value| {
        let mut spec = json!({"clusterIP": "10.96.0.1", "ports": [{"port": 80, "nodePort": 30001}], "externalTrafficPolicy": "Local"});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        only_port(&with_service(&service("ns", "s", spec)).0).external_policy_local
    };
    assert!(!etp_local(json!({})), "ClusterIP without external IPs");
    assert!(etp_local(json!({"externalIPs": ["192.0.2.1"]})));
    assert!(etp_local(json!({"type": "NodePort"})));
    assert!(etp_local(json!({"type": "LoadBalancer"})));
    assert!(!etp_local(
        json!({"type": "NodePort", "externalTrafficPolicy": "Cluster"})
    ));
}

#[test]
fn internal_policy_local() {
    let svc = service(
        "ns",
        "s",
        json!({"clusterIP": "10.96.0.1", "ports": [{"port": 80}], "internalTrafficPolicy": "Local"}),
    );
    assert!(only_port(&with_service(&svc).0).internal_policy_local);
    assert!(
        !only_port(&with_service(&plain_service("ns", "s", "10.96.0.1")).0).internal_policy_local
    );
}

#[test]
fn health_check_node_port_only_for_local_load_balancers() {
    let hc = |t: &str, etp: &str, port: i64| {
        let svc = service(
            "ns",
            "s",
            json!({"type": t, "clusterIP": "10.96.0.1", "ports": [{"port": 80, "nodePort": 30001}],
                   "externalTrafficPolicy": etp, "healthCheckNodePort": port}),
        );
        let (snap, w) = with_service(&svc);
        (only_port(&snap).health_check_node_port, w)
    };
    assert_eq!(hc("LoadBalancer", "Local", 32052).0, Some(32052));
    assert_eq!(hc("LoadBalancer", "Cluster", 32052).0, None);
    assert_eq!(hc("NodePort", "Local", 32052).0, None);
    let (port, w) = hc("LoadBalancer", "Local", 70000);
    assert_eq!(port, None);
    assert_eq!(w[0].problem, Problem::BadHealthCheckNodePort(70000));
}

#[test]
fn bad_cluster_ip_skips_the_service_but_not_its_neighbours() {
    let mut t = Tracker::new("node-a");
    let bad = t.upsert_service(&plain_service("ns", "bad", "10.96.0.300"));
    let good = t.upsert_service(&plain_service("ns", "good", "10.96.0.2"));
    assert!(good.is_empty());
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].problem, Problem::BadClusterIp("10.96.0.300".into()));
    assert_eq!(bad[0].object(), "Service ns/bad");
    let snap = t.snapshot().0;
    assert_eq!(
        snap.services.keys().cloned().collect::<Vec<_>>(),
        [tcp("ns", "good", "http")]
    );
}

#[test]
fn bad_entry_in_cluster_ips_skips_the_service() {
    let svc = service(
        "ns",
        "s",
        json!({"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1", "fd00::zz"], "ports": [{"port": 80}]}),
    );
    let (snap, w) = with_service(&svc);
    assert!(snap.services.is_empty());
    assert_eq!(w[0].problem, Problem::BadClusterIp("fd00::zz".into()));
}

#[test]
fn bad_ports_skip_only_themselves() {
    let svc = service(
        "ns",
        "s",
        json!({"type": "NodePort", "clusterIP": "10.96.0.1", "ports": [
            {"name": "zero", "port": 0},
            {"name": "big", "port": 70000},
            {"name": "proto", "port": 81, "protocol": "ICMP"},
            {"name": "np", "port": 82, "nodePort": 65536},
            {"name": "ok", "port": 83, "nodePort": 30083},
            {"name": "ok", "port": 84, "protocol": "TCP"},
            {"name": "ok", "port": 85, "protocol": "UDP"},
        ]}),
    );
    let (snap, w) = with_service(&svc);
    let kept: Vec<(String, u16)> = snap
        .services
        .values()
        .map(|p| (p.name.to_string(), p.port))
        .collect();
    assert_eq!(
        kept,
        [("ns/s:ok".to_string(), 83), ("ns/s:ok".to_string(), 85)]
    );
    let problems: Vec<Problem> = w.into_iter().map(|w| w.problem).collect();
    assert_eq!(
        problems,
        [
            Problem::BadPort {
                port: "zero".into(),
                value: 0
            },
            Problem::BadPort {
                port: "big".into(),
                value: 70000
            },
            Problem::BadProtocol {
                port: "proto".into(),
                value: "ICMP".into()
            },
            Problem::BadNodePort {
                port: "np".into(),
                value: 65536
            },
            Problem::DuplicatePort {
                port: "ok".into(),
                protocol: "TCP".into()
            },
        ]
    );
}

#[test]
fn unknown_type_and_missing_name_skip_the_service() {
    let (snap, w) = with_service(&service(
        "ns",
        "s",
        json!({"type": "Magic", "clusterIP": "10.96.0.1", "ports": [{"port": 80}]}),
    ));
    assert!(snap.services.is_empty());
    assert_eq!(w[0].problem, Problem::UnknownServiceType("Magic".into()));
    let nameless = service_full(
        json!({"metadata": {"namespace": "ns"}, "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]}}),
    );
    let (snap, w) = with_service(&nameless);
    assert!(snap.services.is_empty());
    assert_eq!(w[0].problem, Problem::MissingName);
    assert_eq!(w[0].object(), "Service ns/<unnamed>");
}

#[test]
fn ipv6_tracker_takes_the_ipv6_cluster_ip_and_ignores_ipv4_only_services() {
    let mut t = Tracker::with_family("node-a", IpFamily::V6);
    let dual = service(
        "ns",
        "dual",
        json!({"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1", "fd00::1"], "ports": [{"name": "http", "port": 80}],
               "externalIPs": ["192.0.2.1", "2001:db8::1"]}),
    );
    assert!(t.upsert_service(&dual).is_empty());
    assert!(
        t.upsert_service(&plain_service("ns", "v4", "10.96.0.2"))
            .is_empty()
    );
    let snap = t.snapshot().0;
    let port = only_port(&snap);
    assert_eq!(port.cluster_ip, ip("fd00::1"));
    assert_eq!(port.external_ips, [ip("2001:db8::1")]);
}

#[test]
fn ipv4_tracker_takes_the_ipv4_cluster_ip_of_a_dual_stack_service() {
    let dual = service(
        "ns",
        "dual",
        json!({"clusterIP": "fd00::1", "clusterIPs": ["fd00::1", "10.96.0.1"], "ports": [{"port": 80}]}),
    );
    assert_eq!(
        only_port(&with_service(&dual).0).cluster_ip,
        ip("10.96.0.1")
    );
}

#[test]
fn an_invalid_update_removes_the_service() {
    let mut t = Tracker::new("node-a");
    t.upsert_service(&plain_service("ns", "s", "10.96.0.1"));
    assert_eq!(t.snapshot().0.services.len(), 1);
    let w = t.upsert_service(&plain_service("ns", "s", "nope"));
    assert_eq!(w.len(), 1);
    let (snap, changes) = t.snapshot();
    assert!(snap.services.is_empty());
    assert!(
        changes
            .services
            .contains(&model::ServiceName::new("ns", "s"))
    );
}
