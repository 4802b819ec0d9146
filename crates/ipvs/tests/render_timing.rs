//! How long a render of a large cluster takes (printed; asserted only
//! loosely, as the machine may be busy).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ipvs::render::{RenderOptions, render};
use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

#[test]
fn renders_ten_thousand_services_quickly() {
    let mut snap = Snapshot { node: NodeInfo { name: "node-a".into(), ..NodeInfo::default() }, ..Snapshot::default() };
    for n in 0..10_000u16 {
        let [hi, lo] = n.to_be_bytes();
        let name = ServicePortName::new("scale", &format!("svc{n}"), "http", Protocol::Tcp);
        let mut svc = ServicePort::cluster_ip(name.clone(), IpAddr::V4(Ipv4Addr::new(10, 100, hi, lo)), 80);
        if n % 10 == 0 {
            svc.node_port = Some(30000 + n / 10);
        }
        let eps = (0..10u8).map(|i| Endpoint::ready(IpAddr::V4(Ipv4Addr::new(10, 200 + i, hi, lo)), 8080, Some("b"), i == 0)).collect();
        snap.endpoints.insert(name.clone(), Arc::new(eps));
        snap.services.insert(name, Arc::new(svc));
    }
    let opts = RenderOptions { local_addresses: vec![IpAddr::V4(Ipv4Addr::new(192, 168, 0, 2))], ..Default::default() };
    let started = Instant::now();
    let state = render(&snap, &opts);
    let took = started.elapsed();
    assert_eq!(state.services.len(), 11_000);
    assert_eq!(state.real_server_count(), 110_000);
    println!("render: 10000 services x 10 endpoints (1000 NodePorts) in {:.0} ms", took.as_secs_f64() * 1000.0);
    assert!(took.as_secs() < 30, "render took {took:?}");
}
