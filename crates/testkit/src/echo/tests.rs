//! The echo server and client against each other in one namespace: answers,
//! refusals, silent drops, and that a dropped server stops answering.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::netns::Netns;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

const IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 99, 0, 7));

fn ns_with_ip() -> Netns {
    let ns = Netns::new("echo").unwrap();
    ns.ip(&["addr", "add", "10.99.0.7/32", "dev", "lo"]).unwrap();
    ns
}

fn to(proto: Proto, port: u16) -> Probe {
    Probe { proto, dst: SocketAddr::new(IP, port), src: None, timeout: Duration::from_millis(700) }
}

fn outcomes(ns: &Netns, probe_: Probe, n: usize) -> Vec<Outcome> {
    probe(ns, probe_, n).unwrap().into_iter().map(|a| a.outcome).collect()
}

#[test]
fn answer_round_trips_through_its_line() {
    let a = Answer { ep: "a1".into(), local: "10.244.0.11:8080".parse().unwrap(), peer: "10.244.0.200:41000".parse().unwrap() };
    assert_eq!(a.to_string(), "ep=a1 local=10.244.0.11:8080 peer=10.244.0.200:41000");
    assert_eq!(Answer::parse(&format!("{a}\n")), Some(a));
    assert_eq!(Answer::parse("hello"), None);
    assert_eq!(Answer::parse("ep=a1 local=nope peer=10.0.0.1:1"), None);
}

#[test]
fn tcp_and_udp_answer_with_name_and_peer() {
    crate::netns::require_kernel();
    let ns = ns_with_ip();
    let _server = EchoServer::start(&ns, "pod-x", IP, &[8080, 8443], &[5353]).unwrap();
    for (proto, port) in [(Proto::Tcp, 8080), (Proto::Tcp, 8443), (Proto::Udp, 5353)] {
        let got = outcomes(&ns, to(proto, port), 3);
        for outcome in got {
            let Outcome::Answered(a) = outcome else { panic!("{proto} {port}: {outcome}") };
            assert_eq!(a.ep, "pod-x");
            assert_eq!(a.local, SocketAddr::new(IP, port));
            assert_eq!(a.peer.ip(), IP, "source seen by the server");
        }
    }
}

#[test]
fn closed_port_is_refused_and_dropped_port_times_out() {
    crate::netns::require_kernel();
    let ns = ns_with_ip();
    let _server = EchoServer::start(&ns, "pod-x", IP, &[8080], &[5353]).unwrap();
    assert_eq!(outcomes(&ns, to(Proto::Tcp, 9090), 1), [Outcome::Refused], "TCP RST");
    assert_eq!(outcomes(&ns, to(Proto::Udp, 9090), 1), [Outcome::Refused], "ICMP port-unreachable");
    for proto in ["tcp", "udp"] {
        ns.exec("iptables-legacy", &["-A", "INPUT", "-p", proto, "--dport", "9091", "-j", "DROP"]).unwrap();
    }
    let tcp = probe(&ns, to(Proto::Tcp, 9091), 1).unwrap();
    assert_eq!(tcp[0].outcome, Outcome::TimedOut);
    assert!(tcp[0].took >= Duration::from_millis(600), "{:?}", tcp[0].took);
    assert_eq!(outcomes(&ns, to(Proto::Udp, 9091), 1), [Outcome::TimedOut]);
}

#[test]
fn dropped_server_stops_answering() {
    crate::netns::require_kernel();
    let ns = ns_with_ip();
    let server = EchoServer::start(&ns, "pod-x", IP, &[8080], &[5353]).unwrap();
    assert!(matches!(outcomes(&ns, to(Proto::Tcp, 8080), 1)[0], Outcome::Answered(_)));
    drop(server);
    assert_eq!(outcomes(&ns, to(Proto::Tcp, 8080), 1), [Outcome::Refused]);
    assert_eq!(outcomes(&ns, to(Proto::Udp, 5353), 1), [Outcome::Refused]);
}
