//! The listing path holds what the tracker keeps plus a bounded buffer,
//! whatever the list's size: 10,000 Services and 10,000 EndpointSlices
//! (10 endpoints each) listed from the fake API server, by streaming list
//! and by plain list, with a counting allocator around the client. The
//! server runs in a child process (this test binary again), so only the
//! client's heap is counted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "kube/cluster.rs"]
mod cluster;
#[path = "kube/fake_api.rs"]
mod fake_api;

use source::kube::{ClientSettings, SourceEvent, WatchOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tracker::Tracker;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only
// the sizes are counted.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SERVICES: usize = 10_000;
const ENDPOINTS: usize = 10;
const MIB: usize = 1 << 20;
/// Env var that makes this binary the fake API server.
const SERVE: &str = "KPRS_LIST_MEMORY_SERVE";

/// Not a test (ignored): the child process serving the loaded fake API
/// server until its stdin closes, run by the tests below with `SERVE` set.
#[test]
#[ignore = "the fake API server child of the tests below"]
fn fake_api_server_for_the_memory_tests() {
    let mode =
        std::env::var(SERVE).expect("run by the memory tests with KPRS_LIST_MEMORY_SERVE set");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let api = cluster::loaded_api(SERVICES, ENDPOINTS).await;
        if mode == "plain" {
            api.refuse_streaming_lists();
        }
        println!("url {}", api.url());
        tokio::task::spawn_blocking(|| std::io::stdin().lines().count())
            .await
            .unwrap();
    });
}


/// Lists through a server child in `mode`; returns (peak heap while
/// listing, heap held once listed), both above the heap before, in bytes.
fn list_through_child(mode: &str) -> (usize, usize) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "fake_api_server_for_the_memory_tests",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(SERVE, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let url = stdout
        .lines()
        .map_while(Result::ok)
        // (the harness may have printed the test's name on the same line)
        .find_map(|l| l.split_once("url ").map(|(_, url)| url.trim().to_string()))
        .expect("the server child printed its URL");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let held = runtime.block_on(async {
        let config = kube::Config::new(url.parse().unwrap());
        let settings = ClientSettings {
            qps: -1.0,
            ..ClientSettings::default()
        };
        let client = source::kube::client_from_config(config, &settings).unwrap();
        let tracker = Arc::new(Mutex::new(Tracker::new(cluster::NODE)));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let task = tokio::spawn(source::kube::run(
            client,
            Arc::clone(&tracker),
            WatchOptions::default(),
            move |e| {
                let _ = tx.send(e);
            },
        ));
        while rx.recv().await != Some(SourceEvent::InitialListDone) {}
        let peak = PEAK.load(Ordering::Relaxed) - before;
        let held = LIVE.load(Ordering::Relaxed).saturating_sub(before);
        task.abort();
        assert_eq!(
            tracker.lock().unwrap().snapshot().0.services.len(),
            SERVICES
        );
        (peak, held)
    });
    drop(child.stdin.take());
    child.wait().unwrap();
    held
}

fn check_bounded(mode: &str) {
    let (peak, held) = list_through_child(mode);
    println!(
        "{mode} list of {SERVICES} x {ENDPOINTS}: peak {:.1} MiB, held {:.1} MiB",
        peak as f64 / MIB as f64,
        held as f64 / MIB as f64
    );
    let bound = held + held / 2 + 8 * MIB;
    assert!(
        peak <= bound,
        "{mode} list: the listing path peaked at {} MiB for {} MiB held (bound {} MiB)",
        peak / MIB,
        held / MIB,
        bound / MIB
    );
}

#[test]
fn a_streaming_list_holds_what_the_tracker_keeps_plus_a_bounded_buffer() {
    check_bounded("streaming");
}

#[test]
fn a_plain_list_holds_what_the_tracker_keeps_plus_a_bounded_buffer() {
    check_bounded("plain");
}
