//! Scale check: 10,000 services × 10 endpoints through the tracker.
//! Prints the time per event, the time of a snapshot after one endpoint
//! change, and peak RSS. Run with `cargo run --release -p tracker --example scale`.

#![allow(clippy::unwrap_used, clippy::expect_used, unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts live heap bytes, to tell the tracker's own data from allocator
/// slack in RSS.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;
use std::time::Instant;
use tracker::Tracker;

const SERVICES: usize = 10_000;
const ENDPOINTS: usize = 10;

fn service(i: usize) -> Service {
    serde_json::from_value(json!({
        "metadata": {"namespace": format!("ns{}", i % 100), "name": format!("svc-{i}")},
        "spec": {"clusterIP": format!("172.30.{}.{}", i / 250, i % 250 + 1),
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }))
    .unwrap()
}

fn slice(i: usize, generation: usize) -> EndpointSlice {
    let endpoints: Vec<_> = (0..ENDPOINTS)
        .map(|e| {
            let n = i * ENDPOINTS + e + generation;
            json!({"addresses": [format!("10.{}.{}.{}", 180 + n / 65536, (n / 256) % 256, n % 256)],
                   "nodeName": format!("node-{}", n % 100),
                   "conditions": {"ready": true, "serving": true, "terminating": false}})
        })
        .collect();
    serde_json::from_value(json!({
        "metadata": {"namespace": format!("ns{}", i % 100), "name": format!("svc-{i}-abcde"),
                     "labels": {"kubernetes.io/service-name": format!("svc-{i}")}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints,
    }))
    .unwrap()
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn main() {
    let before = rss_kib("VmRSS:");
    let live_before = LIVE.load(Ordering::Relaxed);
    let mut t = Tracker::new("node-1");
    let start = Instant::now();
    for i in 0..SERVICES {
        // Build each object just before its event, as a watcher delivers
        // them, so the input objects do not count in the tracker's memory.
        t.upsert_service(&service(i));
        t.upsert_endpoint_slice(&slice(i, 0));
    }
    let events = start.elapsed();
    let start = Instant::now();
    let (snap, changes) = t.snapshot();
    let first_snapshot = start.elapsed();
    let after_load = rss_kib("VmRSS:");
    let live_with_snapshot = LIVE.load(Ordering::Relaxed) - live_before;
    println!(
        "{} events in {:?} ({:.1} µs/event incl. building the object); first snapshot {:?} ({} ports, {} changed)",
        2 * SERVICES,
        events,
        events.as_secs_f64() * 1e6 / (2 * SERVICES) as f64,
        first_snapshot,
        snap.services.len(),
        changes.services.len()
    );
    drop(snap);
    let live_tracker = LIVE.load(Ordering::Relaxed) - live_before;
    println!(
        "live heap: {} KiB tracker alone, {} KiB with one snapshot held",
        live_tracker / 1024,
        live_with_snapshot / 1024
    );
    let one = slice(4242, 1);
    let start = Instant::now();
    t.upsert_endpoint_slice(&one);
    let (snap, changes) = t.snapshot();
    println!("one endpoint-slice change → snapshot: {:?} ({} service changed)", start.elapsed(), changes.services.len());
    drop(snap);
    let start = Instant::now();
    for _ in 0..100 {
        drop(t.snapshot());
    }
    println!("snapshot with nothing changed: {:?}", start.elapsed() / 100);
    println!(
        "RSS: {} KiB before, {} KiB after loading (tracker + one snapshot held ≈ {} KiB); peak {} KiB",
        before,
        after_load,
        after_load - before,
        rss_kib("VmHWM:")
    );
}
