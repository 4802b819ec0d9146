//! The API source's initial list against the fake API server at scale:
//! requests per resource and time to the first complete list, with
//! upstream's default client limits (`--kube-api-qps 5`, `--kube-api-burst
//! 10`). Prints figures; asserts nothing about time.
//!
//! `cargo bench -p source --bench initial_list [-- SERVICES [ENDPOINTS]]`
//! (default 10,000 services × 10 endpoints, one EndpointSlice each).

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../tests/kube/cluster.rs"]
mod cluster;
#[path = "../tests/kube/fake_api.rs"]
mod fake_api;

use fake_api::Kind;
use source::kube::{ClientSettings, SourceEvent, WatchOptions};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracker::Tracker;

/// How the server and the client are set up for one run.
struct Case {
    name: &'static str,
    streaming_list: bool,
    refuse_streaming: bool,
    watch_cache: bool,
}

const CASES: [Case; 3] = [
    Case {
        name: "streaming list (default)",
        streaming_list: true,
        refuse_streaming: false,
        watch_cache: true,
    },
    Case {
        name: "streaming refused -> list at resourceVersion 0",
        streaming_list: true,
        refuse_streaming: true,
        watch_cache: true,
    },
    Case {
        name: "no watch cache: pages of 500 (what every list cost before)",
        streaming_list: false,
        refuse_streaming: false,
        watch_cache: false,
    },
];

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let services = args.first().copied().unwrap_or(10_000);
    let endpoints = args.get(1).copied().unwrap_or(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("initial list of {services} services x {endpoints} endpoints, qps 5 / burst 10");
    for case in &CASES {
        runtime.block_on(run(case, services, endpoints));
    }
}

async fn run(case: &Case, services: usize, endpoints: usize) {
    let api = cluster::loaded_api(services, endpoints).await;
    if case.refuse_streaming {
        api.refuse_streaming_lists();
    }
    if !case.watch_cache {
        api.without_watch_cache();
    }
    let config = kube::Config::new(api.url().parse().unwrap());
    let client = source::kube::client_from_config(config, &ClientSettings::default()).unwrap();
    let tracker = Arc::new(Mutex::new(Tracker::new(cluster::NODE)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = WatchOptions {
        streaming_list: case.streaming_list,
        ..WatchOptions::default()
    };
    let start = Instant::now();
    let task = tokio::spawn(source::kube::run(
        client,
        Arc::clone(&tracker),
        options,
        move |e| {
            let _ = tx.send(e);
        },
    ));
    while rx.recv().await != Some(SourceEvent::InitialListDone) {}
    let elapsed = start.elapsed();
    task.abort();
    let held = tracker.lock().unwrap().snapshot().0.services.len();
    assert_eq!(held, services, "every service listed");
    let requests = |kind| api.log().iter().filter(|l| l.kind == kind).count();
    println!(
        "  {:<60} {:>6.2} s; requests: services {}, endpointslices {}",
        case.name,
        elapsed.as_secs_f64(),
        requests(Kind::Services),
        requests(Kind::EndpointSlices),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
}

