//! `kprs-bench api`: the real binary through an API server — the source
//! crate's fake API server (v1.36's streaming lists from a watch cache,
//! chunked watches), run in this process inside the benchmark's network
//! namespace, the proxy beside it with `--master`. Per repeat: start the
//! proxy on a loaded cluster, sample its RSS every 20 ms through the
//! initial lists, the first sync and N endpoint changes, and print the
//! peaks of each phase and the time from start to rules.

#[allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
#[path = "../../source/tests/kube/fake_api.rs"]
mod fake_api;

use crate::namespace::BenchNetns;
use crate::proxy_process::{ProxyProcess, status_kib};
use crate::sync_line::synced_message;
use anyhow::{Context, Result, bail};
use fake_api::{FakeApi, Kind};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How one `api` benchmark is set up.
#[derive(Debug, Clone)]
pub struct ApiSetup {
    /// Services, each with one EndpointSlice.
    pub services: usize,
    /// Ready endpoints per service.
    pub endpoints: usize,
    /// `--proxy-mode`.
    pub mode: String,
    /// `--iptables-backend`.
    pub backend: String,
    /// Endpoint changes after the first sync, one EndpointSlice each.
    pub changes: usize,
    /// Repeats, each in a new namespace with a new server and proxy.
    pub repeats: usize,
    /// The kube-proxy-rs binary.
    pub binary: PathBuf,
    /// The longest the first sync or the changes may take.
    pub cap: Duration,
    /// Copy the proxy's log to stderr.
    pub echo: bool,
    /// The server refuses streaming lists (as a kube-apiserver whose etcd
    /// lacks progress notifications does): plain lists from the watch cache.
    pub plain_lists: bool,
}

/// The node the proxy runs as.
const NODE: &str = "node-a";

/// What the proxy logs when both lists that gate the first sync are whole.
const LISTED: &str = "services and endpointslices listed";

/// RSS samples of the proxy, taken on a thread until stopped.
struct Sampler {
    samples: Arc<Mutex<Vec<(Instant, u64)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(pid: u32) -> Self {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, done) = (Arc::clone(&samples), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                if let Some(kib) = status_kib(&status, "VmRSS:") {
                    s.lock().unwrap_or_else(|p| p.into_inner()).push((Instant::now(), kib));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Self { samples, stop, thread: Some(thread) }
    }

    /// The largest sample taken between `from` and `to`, in KiB.
    fn peak(&self, from: Instant, to: Instant) -> u64 {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.iter().filter(|(at, _)| (from..=to).contains(at)).map(|(_, kib)| *kib).max().unwrap_or(0)
    }

    /// The last sample taken, in KiB.
    fn last(&self) -> u64 {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.last().map_or(0, |(_, kib)| *kib)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One repeat's figures (RSS in KiB).
#[derive(Debug, Default)]
struct Figures {
    start_to_listed: Duration,
    start_to_rules: Duration,
    peak_listing: u64,
    peak_first_sync: u64,
    settled_after_first_sync: u64,
    peak_changes: u64,
    after_changes: u64,
    hwm: u64,
}

/// Runs the benchmark and prints one line per repeat.
pub fn run(setup: &ApiSetup) -> Result<()> {
    println!(
        "api: {} services x {} endpoints through the fake API server ({} lists), {} mode{}, {} endpoint changes",
        setup.services,
        setup.endpoints,
        if setup.plain_lists { "plain" } else { "streaming" },
        setup.mode,
        if setup.mode == "iptables" { format!(" ({})", setup.backend) } else { String::new() },
        setup.changes,
    );
    for repeat in 1..=setup.repeats {
        let f = one_repeat(setup)?;
        let mib = |kib: u64| kib as f64 / 1024.0;
        println!(
            "  repeat {repeat}: start -> listed {:.2} s, start -> rules {:.2} s; RSS MiB: listing peak {:.1}, \
             first sync peak {:.1}, 2 s after {:.1}, changes peak {:.1}, after {:.1}; VmHWM {:.1}",
            f.start_to_listed.as_secs_f64(),
            f.start_to_rules.as_secs_f64(),
            mib(f.peak_listing),
            mib(f.peak_first_sync),
            mib(f.settled_after_first_sync),
            mib(f.peak_changes),
            mib(f.after_changes),
            mib(f.hwm),
        );
    }
    Ok(())
}

fn one_repeat(setup: &ApiSetup) -> Result<Figures> {
    let ns = BenchNetns::labelled("api")?;
    let (api_tx, api_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let load = (setup.services, setup.endpoints, setup.plain_lists);
    std::thread::scope(|scope| {
        let server = scope.spawn(|| ns.run(move || serve(load, &api_tx, &stop_rx)));
        let result = api_rx
            .recv()
            .context("the fake API server did not start")
            .and_then(|api: Arc<FakeApi>| measure(setup, &ns, &api));
        drop(stop_tx);
        match server.join() {
            Ok(Ok(())) => result,
            Ok(Err(err)) => Err(err),
            Err(_) => bail!("the fake API server's thread panicked"),
        }
    })
}

/// Runs the fake API server, loaded, until `stop` closes.
fn serve(load: (usize, usize, bool), api_tx: &mpsc::Sender<Arc<FakeApi>>, stop: &mpsc::Receiver<()>) {
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() else {
        return;
    };
    runtime.block_on(async {
        let api = Arc::new(populated(load.0, load.1).await);
        if load.2 {
            api.refuse_streaming_lists();
        }
        if api_tx.send(Arc::clone(&api)).is_err() {
            return;
        }
        while matches!(stop.try_recv(), Err(mpsc::TryRecvError::Empty)) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

fn measure(setup: &ApiSetup, ns: &BenchNetns, api: &FakeApi) -> Result<Figures> {
    let args = proxy_args(setup, &api.url());
    let start = Instant::now();
    let mut proxy = ProxyProcess::start(ns, &setup.binary, &args, setup.echo)?;
    let sampler = Sampler::start(proxy.pid());
    let deadline = start + setup.cap;
    let listed = proxy.wait_for(LISTED, deadline)?.context("no complete initial list before the cap")?;
    let synced_text = synced_message(&setup.mode);
    let first = proxy.wait_for(synced_text, deadline)?.context("no first sync before the cap")?;
    std::thread::sleep(Duration::from_secs(2));
    let settled = sampler.last();
    let changes_start = Instant::now();
    make_changes(setup, api, &mut proxy, synced_text)?;
    let changes_end = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let figures = Figures {
        start_to_listed: listed.at - start,
        start_to_rules: first.at - start,
        peak_listing: sampler.peak(start, listed.at),
        peak_first_sync: sampler.peak(listed.at, first.at),
        settled_after_first_sync: settled,
        peak_changes: sampler.peak(changes_start, changes_end),
        after_changes: sampler.last(),
        hwm: proxy.peak_rss_kib()?,
    };
    drop(sampler);
    proxy.stop(Duration::from_secs(10))?;
    Ok(figures)
}

fn proxy_args(setup: &ApiSetup, url: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "--master",
        url,
        "--hostname-override",
        NODE,
        "--cluster-cidr",
        "10.0.0.0/8",
        "--proxy-mode",
        &setup.mode,
        "--iptables-backend",
        &setup.backend,
        "--conntrack-max-per-core",
        "0",
        "--healthz-bind-address",
        "127.0.0.1:10256",
        "--metrics-bind-address",
        "127.0.0.1:10249",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    args.extend(["--v".to_string(), "2".to_string()]);
    args
}

/// Changes one endpoint of `changes` services, each waiting for the sync
/// that applied it (syncs are at most one per `minSyncPeriod`, 1 s: this
/// phase lasts about that many seconds).
fn make_changes(setup: &ApiSetup, api: &FakeApi, proxy: &mut ProxyProcess, synced: &str) -> Result<()> {
    for change in 0..setup.changes {
        let service = change % setup.services;
        let mut ips = endpoint_ips(service, setup.endpoints);
        if let Some(first) = ips.first_mut() {
            *first = format!("10.255.{}.{}", (change / 250) % 250, change % 250 + 1);
        }
        api.apply(Kind::EndpointSlices, slice(service, &ips));
        proxy.wait_for(synced, Instant::now() + setup.cap)?.context("a change was not synced before the cap")?;
    }
    Ok(())
}

fn endpoint_ips(service: usize, endpoints: usize) -> Vec<String> {
    (0..endpoints)
        .map(|e| {
            let n = service * endpoints + e;
            format!("10.{}.{}.{}", 180 + n / 65_536, (n / 256) % 256, n % 256)
        })
        .collect()
}

fn service(i: usize) -> Value {
    let ip = format!("172.30.{}.{}", i / 250, i % 250 + 1);
    json!({
        "metadata": {"namespace": "bench", "name": format!("svc-{i}"), "labels": {}},
        "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]},
    })
}

fn slice(i: usize, ips: &[String]) -> Value {
    let endpoints: Vec<Value> = ips
        .iter()
        .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}, "nodeName": "node-b"}))
        .collect();
    json!({
        "metadata": {"namespace": "bench", "name": format!("svc-{i}-1"),
                     "labels": {"kubernetes.io/service-name": format!("svc-{i}")}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
}

async fn populated(services: usize, endpoints: usize) -> FakeApi {
    let api = FakeApi::start_new().await;
    for i in 0..services {
        api.apply(Kind::Services, service(i));
        api.apply(Kind::EndpointSlices, slice(i, &endpoint_ips(i, endpoints)));
    }
    api.apply(
        Kind::Nodes,
        json!({
            "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
            "spec": {"podCIDRs": ["10.180.0.0/24"]},
            "status": {"addresses": [{"type": "InternalIP", "address": "192.168.0.2"}]},
        }),
    );
    api
}
