//! Unit tests of the plan's decisions.

#![allow(clippy::unwrap_used)]

mod context;
mod port;
mod topology;

use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::IpAddr;
use std::sync::Arc;

pub(crate) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub(crate) fn net(s: &str) -> ipnet::IpNet {
    s.parse().unwrap()
}

pub(crate) fn port(name: &str) -> ServicePort {
    ServicePort::cluster_ip(ServicePortName::new("ns", name, "p", Protocol::Tcp), ip("172.30.0.41"), 80)
}

pub(crate) fn ep(addr: &str, local: bool) -> Endpoint {
    Endpoint::ready(ip(addr), 8080, None, local)
}

/// A snapshot of node-a (192.168.0.2, pod CIDR 10.180.0.0/24) with
/// `services`.
pub(crate) fn snapshot(services: Vec<(ServicePort, Vec<Endpoint>)>) -> Snapshot {
    let mut snap = Snapshot {
        node: NodeInfo {
            name: "node-a".into(),
            addresses: vec![ip("192.168.0.2")],
            pod_cidrs: vec![net("10.180.0.0/24"), net("fd00:180::/64")],
            deleting: false,
            zone: None,
        },
        ..Snapshot::default()
    };
    for (svc, eps) in services {
        snap.endpoints.insert(svc.name.clone(), Arc::new(eps));
        snap.services.insert(svc.name.clone(), Arc::new(svc));
    }
    snap
}
