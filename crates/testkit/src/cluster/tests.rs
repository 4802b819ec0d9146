//! The plumbing of the simulated cluster without any proxy: pods reach each
//! other on the same and the other node with their own source address (over
//! IPv4 and IPv6), the node and the client are where the plan puts them,
//! unclaimed addresses time out, and everything is gone after drop.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::echo::{Outcome, Probe, Proto, probe};
use crate::netns::Netns;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

fn pod(name: &str, node: &str, ip: [u8; 4], extra: &[[u8; 4]]) -> PodPlan {
    PodPlan {
        name: name.into(),
        node: node.into(),
        ip: Ipv4Addr::from(ip),
        ip6: Some(v6(&format!("fd00:10:244:{}::{}", ip[2], ip[3]))),
        extra_ips: extra.iter().map(|&e| Ipv4Addr::from(e)).collect(),
        tcp_ports: vec![8080],
        udp_ports: vec![5353],
    }
}

fn plan() -> Plan {
    let mut plan = Plan::two_nodes();
    plan.pods = vec![
        pod("a1", "node-a", [10, 244, 0, 11], &[]),
        pod("a2", "node-a", [10, 244, 0, 12], &[[10, 244, 0, 201]]),
        pod("b1", "node-b", [10, 244, 1, 11], &[]),
    ];
    plan
}

fn once(ns: &Netns, proto: Proto, dst: SocketAddr, src: Option<IpAddr>) -> Outcome {
    let p = Probe { proto, dst, src, timeout: Duration::from_secs(3) };
    probe(ns, p, 1).unwrap().remove(0).outcome
}

fn sock(ip: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::from((ip, port))
}

fn v6(text: &str) -> Ipv6Addr {
    text.parse().unwrap()
}

fn sock6(ip: &str, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V6(v6(ip)), port)
}

fn peer_of(outcome: Outcome, ep: &str) -> IpAddr {
    match outcome {
        Outcome::Answered(a) if a.ep == ep => a.peer.ip(),
        other => panic!("expected an answer from {ep}, got {other}"),
    }
}

#[test]
fn pods_nodes_and_client_reach_each_other() {
    crate::netns::require_kernel();
    let cluster = Cluster::build(&plan()).unwrap();
    let a2 = cluster.pod("a2").unwrap().ns();
    let ip = |b: [u8; 4]| IpAddr::from(b);
    // pod -> pod, same node and other node, TCP and UDP: source preserved.
    for proto in [Proto::Tcp, Proto::Udp] {
        let port = if proto == Proto::Tcp { 8080 } else { 5353 };
        assert_eq!(peer_of(once(a2, proto, sock([10, 244, 0, 11], port), None), "a1"), ip([10, 244, 0, 12]));
        assert_eq!(peer_of(once(a2, proto, sock([10, 244, 1, 11], port), None), "b1"), ip([10, 244, 0, 12]));
    }
    // An extra source address of a pod is routed back to it.
    let extra = Some(ip([10, 244, 0, 201]));
    assert_eq!(peer_of(once(a2, Proto::Tcp, sock([10, 244, 1, 11], 8080), extra), "b1"), ip([10, 244, 0, 201]));
    // node -> own pod (source: the pod gateway) and -> other node's pod (its wire IP).
    let node_a = cluster.node("node-a").unwrap();
    assert_eq!(peer_of(once(node_a.ns(), Proto::Tcp, sock([10, 244, 0, 11], 8080), None), "a1"), ip([10, 244, 0, 1]));
    assert_eq!(peer_of(once(node_a.ns(), Proto::Tcp, sock([10, 244, 1, 11], 8080), None), "b1"), ip([192, 168, 86, 2]));
    // client -> node IP on the wire: nothing listens, so the node answers with RST.
    for src in cluster.client().ips() {
        let got = once(cluster.client().ns(), Proto::Tcp, sock([192, 168, 86, 3], 9), Some(IpAddr::V4(*src)));
        assert_eq!(got, Outcome::Refused, "client {src} -> node-b");
    }
    // An address nobody claims goes to the wire's gateway and is lost.
    assert_eq!(once(a2, Proto::Tcp, sock([10, 96, 99, 99], 80), None), Outcome::TimedOut);
    assert_eq!(once(node_a.ns(), Proto::Udp, sock([10, 96, 99, 99], 53), None), Outcome::TimedOut);
}

#[test]
fn pods_nodes_and_client_reach_each_other_over_ipv6() {
    crate::netns::require_kernel();
    let cluster = Cluster::build(&plan()).unwrap();
    let a2 = cluster.pod("a2").unwrap().ns();
    let ip = |s: &str| IpAddr::V6(v6(s));
    for proto in [Proto::Tcp, Proto::Udp] {
        let port = if proto == Proto::Tcp { 8080 } else { 5353 };
        assert_eq!(peer_of(once(a2, proto, sock6("fd00:10:244::11", port), None), "a1"), ip("fd00:10:244::12"));
        assert_eq!(peer_of(once(a2, proto, sock6("fd00:10:244:1::11", port), None), "b1"), ip("fd00:10:244::12"));
    }
    let node_a = cluster.node("node-a").unwrap();
    assert_eq!(peer_of(once(node_a.ns(), Proto::Tcp, sock6("fd00:10:244::11", 8080), None), "a1"), ip("fd00:10:244::1"));
    assert_eq!(peer_of(once(node_a.ns(), Proto::Tcp, sock6("fd00:10:244:1::11", 8080), None), "b1"), ip("fd00:86::2"));
    // The client reaches both nodes on-link from each of its addresses; the nodes answer it.
    for src in cluster.client().ips6() {
        let got = once(cluster.client().ns(), Proto::Tcp, sock6("fd00:86::3", 9), Some(IpAddr::V6(*src)));
        assert_eq!(got, Outcome::Refused, "client {src} -> node-b");
    }
    assert_eq!(cluster.client().ips6()[0], v6("fd00:172:20::10"));
    assert_eq!(once(a2, Proto::Tcp, sock6("fd00:10:96::99", 80), None), Outcome::TimedOut);
}

#[test]
fn drop_removes_every_namespace() {
    crate::netns::require_kernel();
    let cluster = Cluster::build(&plan()).unwrap();
    let mut names: Vec<String> = cluster.nodes().iter().map(|n| n.ns().name().to_string()).collect();
    names.extend(cluster.pods().iter().map(|p| p.ns().name().to_string()));
    names.push(cluster.client().ns().name().to_string());
    names.push(cluster.wire().name().to_string());
    let dir = cluster.manifests_path().parent().unwrap().to_path_buf();
    cluster.write_manifests("# empty\n").unwrap();
    assert!(dir.exists());
    drop(cluster);
    let list = String::from_utf8(std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).unwrap();
    for name in names {
        assert!(!list.lines().any(|l| l.split_whitespace().next() == Some(name.as_str())), "{name} left behind");
    }
    assert!(!dir.exists(), "temporary directory left behind");
}

#[test]
fn a_proxy_runs_in_its_node_logs_and_is_killed_on_drop() {
    crate::netns::require_kernel();
    let cluster = Cluster::build(&Plan { pods: Vec::new(), ..plan() }).unwrap();
    // A stand-in proxy: says where it runs and with which arguments, then waits.
    let script = cluster.manifests_path().with_file_name("fake-proxy.sh");
    std::fs::write(&script, "#!/bin/sh\necho \"args: $*\" >&2\nip -4 -o addr show dev eth0 >&2\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    cluster.start_proxy("node-b", &script, &["--cluster-cidr".into(), "10.244.0.0/16".into()]).unwrap();
    let pid = cluster.proxy_pid("node-b").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(cluster.exited_proxy().is_none());
    let log = cluster.log_tail("node-b");
    assert!(log.contains("args: --manifests "), "{log}");
    assert!(log.contains("--hostname-override node-b --cluster-cidr 10.244.0.0/16"), "{log}");
    assert!(log.contains("192.168.86.3/24"), "runs inside node-b: {log}");
    assert!(cluster.diagnostics().contains("=== node-b proxy log"));
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(cluster);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "proxy {pid} still runs");
}
