//! How long applies take with many services on the VM's (emulated, so
//! slow) CPU: a first apply of 1000 ClusterIP services with 3 endpoints
//! each, then a no-op re-apply and a re-apply with one endpoint changed in
//! every service. Prints the figures; asserts only what must hold.

use super::checks::sh;
use ipvs::apply::{ApplyOptions, IpvsApplier};
use ipvs::cleanup::apply_cleanup;
use ipvs::render::{RenderOptions, render};
use xtables::apply::Backend;
use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;
use tokio::runtime::Runtime;

const SERVICES: u16 = 1000;

fn snapshot(generation: u8) -> Snapshot {
    let mut snap = Snapshot { node: NodeInfo { name: "node-a".into(), ..NodeInfo::default() }, ..Snapshot::default() };
    for n in 0..SERVICES {
        let [hi, lo] = n.to_be_bytes();
        let name = ServicePortName::new("scale", &format!("svc{n}"), "http", Protocol::Tcp);
        let svc = ServicePort::cluster_ip(name.clone(), IpAddr::V4(Ipv4Addr::new(10, 100, hi, lo)), 80);
        // The third endpoint's port changes with the generation.
        let eps: Vec<Endpoint> = (0..3u8)
            .map(|i| {
                let port = if i == 2 { 9000 + u16::from(generation) } else { 8080 };
                Endpoint::ready(IpAddr::V4(Ipv4Addr::new(10, 200 + i, hi, lo)), port, Some("node-b"), false)
            })
            .collect();
        snap.endpoints.insert(name.clone(), Arc::new(eps));
        snap.services.insert(name, Arc::new(svc));
    }
    snap
}

pub fn scale(rt: &Runtime) {
    rt.block_on(async {
        let mut applier = IpvsApplier::connect(Backend::Nft, ApplyOptions::default()).await.unwrap();
        let opts = RenderOptions::default();
        let started = Instant::now();
        let state = render(&snapshot(0), &opts);
        let rendered = started.elapsed();
        let t = Instant::now();
        let first = applier.apply(&state).await.unwrap();
        let first_took = t.elapsed();
        assert_eq!(first.services_added, usize::from(SERVICES));
        let t = Instant::now();
        let noop = applier.apply(&state).await.unwrap();
        let noop_took = t.elapsed();
        assert_eq!((noop.services_added, noop.real_servers_added, noop.ipset_changes), (0, 0, 0));
        let changed = render(&snapshot(1), &opts);
        let t = Instant::now();
        let r = applier.apply(&changed).await.unwrap();
        let change_took = t.elapsed();
        assert_eq!((r.real_servers_added, r.real_servers_deleted), (usize::from(SERVICES), usize::from(SERVICES)));
        println!(
            "IPVS-VM-CHECK info: {SERVICES} services x 3 endpoints (emulated CPU): render {:.0} ms, first apply {:.2} s, \
             no-op apply {:.2} s, one endpoint changed per service {:.2} s",
            rendered.as_secs_f64() * 1000.0,
            first_took.as_secs_f64(),
            noop_took.as_secs_f64(),
            change_took.as_secs_f64()
        );
        drop(applier);
        apply_cleanup(&ApplyOptions::default()).await.unwrap();
    });
    assert_eq!(sh("ipvsadm -Ln | wc -l").trim(), "3");
}
