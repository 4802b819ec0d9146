//! A timing probe of the pure renderer at 10,000 services × 10 endpoints
//! (no kernel): render, typed objects, text. Ignored by default; run with
//! `--ignored --nocapture` (a debug build is several times slower).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use model::{Endpoint, NodeInfo, Protocol, ServicePort, ServicePortName, Snapshot};
use nftables::render::{RenderOptions, render};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

fn snapshot(services: u32, per_service: u32) -> Snapshot {
    let mut snap = Snapshot {
        node: NodeInfo {
            name: "node-a".into(),
            addresses: vec!["192.168.0.2".parse().unwrap()],
            ..NodeInfo::default()
        },
        ..Snapshot::default()
    };
    for i in 0..services {
        let name = ServicePortName::new("ns", &format!("svc-{i}"), "http", Protocol::Tcp);
        let ip = IpAddr::V4(Ipv4Addr::from(0x0a60_0000 + i));
        let mut port = ServicePort::cluster_ip(name.clone(), ip, 80);
        port.node_port = Some(30000 + u16::try_from(i % 2000).unwrap());
        let eps = (0..per_service)
            .map(|e| {
                Endpoint::ready(
                    IpAddr::V4(Ipv4Addr::from(0x0af4_0000 + i * per_service + e)),
                    8080,
                    Some("node-b"),
                    false,
                )
            })
            .collect();
        snap.endpoints.insert(name.clone(), Arc::new(eps));
        snap.services.insert(name, Arc::new(port));
    }
    snap
}

#[test]
#[ignore = "timing probe; run with --ignored --nocapture"]
fn timing_probe_render_10k_services() {
    let snap = snapshot(10_000, 10);
    let facts = plan::NodeFacts {
        local_addresses: vec!["192.168.0.2".parse().unwrap()],
    };
    let t = Instant::now();
    let rendered = render(&snap, &RenderOptions::default(), &facts);
    let render_time = t.elapsed();
    let t = Instant::now();
    let contents = rendered.ruleset.contents();
    let contents_time = t.elapsed();
    let t = Instant::now();
    let text = rendered.ruleset.to_nft_text();
    let text_time = t.elapsed();
    println!(
        "timing probe: 10k×10 render {render_time:?}, typed objects {contents_time:?} ({} chains, {} rules, {} sets), text {text_time:?} ({} bytes)",
        contents.chains.len(),
        contents.rules.len(),
        contents.sets.len(),
        text.len()
    );
    assert_eq!(contents.chains.len(), 15 + 2 * 10_000);
}

#[test]
#[ignore = "timing probe; run with --ignored --nocapture"]
fn timing_probe_render_one_service_of_10k() {
    use nftables::render::{RenderContext, Services, Slots, render_services, slots_in_order};
    let snap = snapshot(10_000, 10);
    let facts = plan::NodeFacts {
        local_addresses: vec!["192.168.0.2".parse().unwrap()],
    };
    let opts = RenderOptions::default();
    let t = Instant::now();
    let ctx = RenderContext::new(&snap, &opts, &facts);
    let ctx_time = t.elapsed();
    let one = std::collections::BTreeSet::from([model::ServiceName::new("ns", "svc-77")]);
    let t = Instant::now();
    let slots = slots_in_order(&snap, &ctx);
    let selected = render_services(&snap, &ctx, Services::Only(&one), Slots::of(&slots));
    let render_time = t.elapsed();
    let t = Instant::now();
    let contents = selected.rendered.ruleset.into_contents();
    let contents_time = t.elapsed();
    let t = Instant::now();
    let copy = snap.clone();
    let clone_time = t.elapsed();
    println!(
        "timing probe: one service of 10k×10: context {ctx_time:?}, render {render_time:?}, typed objects {contents_time:?} ({} chains), snapshot clone {clone_time:?}",
        contents.chains.len()
    );
    assert_eq!(contents.chains.len(), 15 + 2);
    drop(copy);
}
