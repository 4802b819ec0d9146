//! The rendering of a few service ports, line by line.

use super::{ProxyPorts, listeners, planned, portal_rules};
use forward::{ListenerKey, Role};
use model::{Endpoint, IpFamily, Protocol, ServicePort, ServicePortName, Snapshot};
use plan::{LocalDetection, NodeFacts, Options, SyncContext};
use std::net::IpAddr;
use std::sync::Arc;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

fn name(svc: &str, proto: Protocol) -> ServicePortName {
    ServicePortName::new("ns", svc, "p", proto)
}

fn snapshot() -> Snapshot {
    let mut snap = Snapshot::default();
    snap.node.name = "node-a".into();
    snap.node.addresses = vec![ip("192.168.0.2")];
    let web = name("web", Protocol::Tcp);
    let mut svc = ServicePort::cluster_ip(web.clone(), ip("10.96.0.10"), 80);
    svc.node_port = Some(30080);
    svc.external_ips = vec![ip("192.0.2.50")];
    svc.session_affinity_seconds = Some(3);
    snap.services.insert(web.clone(), Arc::new(svc));
    let eps = vec![Endpoint::ready(ip("10.244.0.11"), 8080, Some("node-a"), true), Endpoint::ready(ip("10.244.1.11"), 8080, Some("node-b"), false)];
    snap.endpoints.insert(web, Arc::new(eps));
    let local = name("local", Protocol::Udp);
    let mut svc = ServicePort::cluster_ip(local.clone(), ip("10.96.0.20"), 53);
    svc.node_port = Some(30053);
    svc.external_policy_local = true;
    snap.services.insert(local.clone(), Arc::new(svc));
    snap.endpoints.insert(local, Arc::new(vec![Endpoint::ready(ip("10.244.1.12"), 5353, Some("node-b"), false)]));
    snap
}

fn context(snap: &Snapshot) -> SyncContext {
    let opts = Options { local_detection: LocalDetection::ClusterCidr(vec!["10.244.0.0/16".parse().unwrap_or_else(|_| unreachable!())]), ..Options::default() };
    SyncContext::new(snap, &opts, &NodeFacts { local_addresses: vec![ip("192.168.0.2"), ip("127.0.0.1")] })
}

#[test]
fn externally_local_ports_get_a_second_listener_with_local_endpoints_only() {
    let snap = snapshot();
    let ctx = context(&snap);
    let wanted = listeners(&planned(&snap, &ctx), IpFamily::V4);
    let summary: Vec<String> = wanted.iter().map(|l| format!("{} {:?} {} {:?} {:?}", l.key.service_port, l.key.role, l.bind, l.backends, l.affinity)).collect();
    assert_eq!(
        summary,
        [
            "ns/local:p ProxyPort 0.0.0.0:0 [10.244.1.12:5353] None",
            "ns/local:p ExternalProxyPort 0.0.0.0:0 [] None",
            "ns/web:p ProxyPort 0.0.0.0:0 [10.244.0.11:8080, 10.244.1.11:8080] Some(3s)",
        ]
    );
}

#[test]
fn portal_rules_send_each_address_to_its_proxy_port() {
    let snap = snapshot();
    let ctx = context(&snap);
    let planned = planned(&snap, &ctx);
    let key = |svc, proto, role| ListenerKey { service_port: name(svc, proto), role };
    let ports: ProxyPorts = [
        (key("web", Protocol::Tcp, Role::ProxyPort), 40001),
        (key("local", Protocol::Udp, Role::ProxyPort), 40002),
        (key("local", Protocol::Udp, Role::ExternalProxyPort), 40003),
    ]
    .into();
    let ruleset = portal_rules(&planned, &ctx, &ports);
    let text = ruleset.to_restore();
    let expected = [
        "-A KUBE-PORTALS-CONTAINER -d 10.96.0.20/32 -p udp -m comment --comment \"ns/local:p\" -m udp --dport 53 -j REDIRECT --to-ports 40002",
        "-A KUBE-PORTALS-HOST -d 10.96.0.20/32 -p udp -m comment --comment \"ns/local:p\" -m udp --dport 53 -j DNAT --to-destination 192.168.0.2:40002",
        "-A KUBE-NODEPORT-CONTAINER -s 10.244.0.0/16 -p udp -m comment --comment \"ns/local:p\" -m udp --dport 30053 -j REDIRECT --to-ports 40002",
        "-A KUBE-NODEPORT-CONTAINER -p udp -m comment --comment \"ns/local:p\" -m udp --dport 30053 -j REDIRECT --to-ports 40003",
        "-A KUBE-NODEPORT-HOST -p udp -m comment --comment \"ns/local:p\" -m udp --dport 30053 -j DNAT --to-destination 192.168.0.2:40002",
        "-A KUBE-NODEPORT-NON-LOCAL -p udp -m comment --comment \"ns/local:p\" -m udp --dport 40003 -m state --state NEW -j ACCEPT",
        "-A KUBE-PORTALS-CONTAINER -d 10.96.0.10/32 -p tcp -m comment --comment \"ns/web:p\" -m tcp --dport 80 -j REDIRECT --to-ports 40001",
        "-A KUBE-PORTALS-CONTAINER -d 192.0.2.50/32 -p tcp -m comment --comment \"ns/web:p\" -m tcp --dport 80 -j REDIRECT --to-ports 40001",
        "-A KUBE-PORTALS-HOST -d 192.0.2.50/32 -p tcp -m comment --comment \"ns/web:p\" -m tcp --dport 80 -j DNAT --to-destination 192.168.0.2:40001",
        "-A KUBE-NODEPORT-CONTAINER -p tcp -m comment --comment \"ns/web:p\" -m tcp --dport 30080 -j REDIRECT --to-ports 40001",
    ];
    for line in expected {
        assert!(text.contains(line), "missing {line}\n{text}");
    }
    let jumps: Vec<String> = ruleset.builtin_jumps.iter().map(|j| j.rule_line()).collect();
    assert_eq!(jumps[0], "PREROUTING -m comment --comment \"handle ClusterIPs; NOTE: this must be before the NodePort rules\" -j KUBE-PORTALS-CONTAINER");
    assert_eq!(jumps[2], "PREROUTING -m addrtype --dst-type LOCAL -m comment --comment \"handle service NodePorts; NOTE: this must be the last rule in the chain\" -j KUBE-NODEPORT-CONTAINER");
}

#[test]
fn a_port_whose_listener_is_not_bound_gets_no_rules() {
    let snap = snapshot();
    let ctx = context(&snap);
    let ruleset = portal_rules(&planned(&snap, &ctx), &ctx, &ProxyPorts::new());
    assert!(ruleset.nat.rules.is_empty() && ruleset.filter.rules.is_empty());
    assert_eq!(ruleset.nat.chains.len(), 4);
}
