//! `kprs-bench tracker` (issue 4): loads the cluster into the tracker one
//! event at a time, as API watchers deliver it, and reports the time per
//! event, the tracker's live heap and the process's peak RSS; then, in a
//! fresh network namespace, applies the first full sync and times single
//! changes from the event to rules applied (tracker → snapshot → render →
//! `iptables-restore`). No manifests file and no polling in the way: this
//! is the proxy's own event-to-rules latency.

use crate::counting_alloc::{live_bytes, peak_bytes, reset_peak};
use crate::generate::{self, Load};
use crate::namespace::BenchNetns;
use crate::proxy_process::status_kib;
use crate::stats::Samples;
use anyhow::{Context, Result};
use iptables::render::{RenderOptions, stream};
use model::IpFamily;
use plan::Options;
use std::fmt::Write;
use std::time::{Duration, Instant};
use tracker::{Objects, Tracker};
use xtables::apply::{Backend, Iptables, Syncer};

/// How the tracker benchmark runs.
#[derive(Debug, Clone)]
pub struct TrackerSetup {
    /// The cluster.
    pub load: Load,
    /// Backend to apply with; `None`: tracker and render only, no kernel.
    pub backend: Option<Backend>,
    /// How many single changes of each kind to time.
    pub changes: usize,
    /// Load through the manifests source (file text, checked, then streamed).
    pub manifests: bool,
}

/// Runs the benchmark (inside a new namespace when it applies rules).
pub fn run_tracker(setup: TrackerSetup) -> Result<String> {
    if setup.backend.is_none() {
        return measure(&setup);
    }
    let ns = BenchNetns::new()?;
    ns.run(move || measure(&setup))?
}

fn parse_documents(text: &str) -> Result<Objects> {
    Ok(source::manifests::parse(text)?.objects)
}

/// Service `i` with `endpoints` endpoints, decoded (not timed).
fn objects_of(load: &Load, i: usize, endpoints: usize) -> Result<Objects> {
    parse_documents(&generate::service_documents(load, i, endpoints))
}

/// Feeds every object to `tracker`, building each just before its event;
/// returns the time spent in the tracker alone.
fn load_tracker(tracker: &mut Tracker, load: &Load) -> Result<Duration> {
    let node = parse_documents(&generate::node_document())?;
    let mut spent = Duration::ZERO;
    for n in &node.nodes {
        tracker.upsert_node(n);
    }
    for i in 0..load.services {
        let objects = objects_of(load, i, load.endpoints)?;
        let start = Instant::now();
        feed(tracker, &objects);
        spent += start.elapsed();
    }
    Ok(spent)
}

/// Loads `tracker` as the proxy loads a manifests file, then reads the file
/// twice more (one endpoint more, then as at first); reports each step.
fn load_from_manifests(tracker: Tracker, load: &Load, out: &mut String) -> Result<Tracker> {
    let tracker = std::sync::Mutex::new(tracker);
    let mut held = source::manifests::Held::default();
    for (read, extra) in [("first read", 0), ("re-read", 1), ("re-read", 0)] {
        let text = generate::manifests(load, extra);
        let start = Instant::now();
        let checked = source::manifests::Checked::new_after("<bench>", text, &held.known())?;
        let checked_in = start.elapsed();
        let replaced = held.replace(checked, &tracker);
            let _ = writeln!(
            out,
            "manifests {read}: check {:.0} ms + decode into the tracker {:.0} ms ({} objects, {} documents decoded); RSS now {:.1} MiB",
            ms(checked_in),
            ms(start.elapsed() - checked_in),
            replaced.services + replaced.endpoint_slices + replaced.nodes,
            replaced.decoded,
            mib(own_status_kib("VmRSS:") * 1024)
        );
    }
    Ok(tracker
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner))
}

fn feed(tracker: &mut Tracker, objects: &Objects) {
    for svc in &objects.services {
        tracker.upsert_service(svc);
    }
    for slice in &objects.endpoint_slices {
        tracker.upsert_endpoint_slice(slice);
    }
}

fn own_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| status_kib(&s, field))
        .unwrap_or(0)
}

fn measure(setup: &TrackerSetup) -> Result<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(measure_async(setup))
}

async fn measure_async(setup: &TrackerSetup) -> Result<String> {
    let load = &setup.load;
    let mut out = String::new();
    let (rss_before, live_before) = (own_status_kib("VmRSS:"), live_bytes());
    let mut tracker = Tracker::new(generate::NODE);
    if setup.manifests {
        tracker = load_from_manifests(tracker, load, &mut out)?;
    } else {
        let spent = load_tracker(&mut tracker, load)?;
        let events = 2 * load.services;
        let _ = writeln!(
            out,
            "{events} events (a Service and an EndpointSlice per service) in {:.1} ms of tracker time: {:.2} µs/event",
            spent.as_secs_f64() * 1e3,
            spent.as_secs_f64() * 1e6 / events as f64
        );
    }
    let start = Instant::now();
    let (snapshot, _) = tracker.snapshot();
    let _ = writeln!(
        out,
        "first snapshot: {:.1} ms ({} service ports)",
        ms(start.elapsed()),
        snapshot.services.len()
    );
    let with_snapshot = live_bytes().saturating_sub(live_before);
    drop(snapshot);
    let alone = live_bytes().saturating_sub(live_before);
    let _ = writeln!(
        out,
        "live heap: tracker {:.1} MiB, with one snapshot held {:.1} MiB",
        mib(alone as u64),
        mib(with_snapshot as u64)
    );
    if let Some(backend) = setup.backend {
        out.push_str(&measure_applied(setup, backend, &mut tracker).await?);
    }
    let _ = writeln!(
        out,
        "RSS: {:.1} MiB before loading, {:.1} MiB now; peak (VmHWM) {:.1} MiB — includes the YAML decoding of the input",
        mib(rss_before * 1024),
        mib(own_status_kib("VmRSS:") * 1024),
        mib(own_status_kib("VmHWM:") * 1024)
    );
    Ok(out)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// Times of one event → rules applied.
#[derive(Default)]
struct EventTimes {
    tracker_and_snapshot: Samples,
    render: Samples,
    apply: Samples,
    total: Samples,
    /// Live heap a sync added at its peak (render + apply), in MiB.
    sync_heap: Samples,
}

impl EventTimes {
    fn report(&self, what: &str) -> String {
        format!(
            "{what} → rules applied (ms, min / median / max of {}): total {}; tracker + snapshot {}; render {}; apply {}; \
             peak live heap of the sync (render + apply, MiB) {}\n",
            self.total.len(),
            self.total.summary(1),
            self.tracker_and_snapshot.summary(2),
            self.render.summary(1),
            self.apply.summary(1),
            self.sync_heap.summary(1)
        )
    }
}

/// A proxy's sync, in-process: the syncer (full, then partial syncs, the
/// render streamed into it as the proxy does) and its render options.
struct Sync {
    syncer: Syncer,
    opts: RenderOptions,
}

impl Sync {
    async fn new(backend: Backend) -> Result<Self> {
        let facts = xtables::apply::apply_kernel_setup(true).await?;
        let opts = RenderOptions {
            common: generate::POD_CIDR
                .parse()
                .map(Options::with_cluster_cidr)
                .unwrap_or_default(),
            nfacct: facts.nfacct,
            conntrack_tcp_be_liberal: facts.conntrack_tcp_be_liberal,
            local_addresses: facts.local_addresses,
            ..RenderOptions::default()
        };
        Ok(Self {
            syncer: Syncer::new(Iptables::new(backend, IpFamily::V4)),
            opts,
        })
    }

    /// Snapshot, render and apply (a full sync first, then partial ones);
    /// records each step's time from `start` and the sync's peak heap.
    async fn sync(
        &mut self,
        tracker: &mut Tracker,
        start: Instant,
        times: &mut EventTimes,
    ) -> Result<()> {
        let (snapshot, _) = tracker.snapshot();
        let snapshotted = Instant::now();
        let before = live_bytes();
        reset_peak();
        let synced = self
            .syncer
            .sync(&stream(&snapshot, &self.opts), false)
            .await
            .context("apply")?;
        let applied = Instant::now();
        times
            .sync_heap
            .push(mib(peak_bytes().saturating_sub(before) as u64));
        times.tracker_and_snapshot.push(ms(snapshotted - start));
        times.render.push(ms(synced.render));
        times
            .apply
            .push(ms((applied - snapshotted).saturating_sub(synced.render)));
        times.total.push(ms(applied - start));
        Ok(())
    }
}

async fn measure_applied(
    setup: &TrackerSetup,
    backend: Backend,
    tracker: &mut Tracker,
) -> Result<String> {
    let load = &setup.load;
    let mut sync = Sync::new(backend).await?;
    let mut first = EventTimes::default();
    sync.sync(tracker, Instant::now(), &mut first).await?;
    let mut out = format!(
        "backend {backend}: first full sync {} ms (render {} ms), peak live heap of the sync {} MiB\n",
        first.total, first.render, first.sync_heap
    );
    let mut endpoint = EventTimes::default();
    for k in 0..setup.changes {
        let objects = objects_of(load, 0, load.endpoints + 1 - k % 2)?;
        let start = Instant::now();
        feed(tracker, &objects);
        sync.sync(tracker, start, &mut endpoint).await?;
    }
    out.push_str(&endpoint.report("one endpoint added/removed"));
    let mut service = EventTimes::default();
    for k in 0..setup.changes {
        let objects = objects_of(load, load.services + k, load.endpoints)?;
        let start = Instant::now();
        feed(tracker, &objects);
        sync.sync(tracker, start, &mut service).await?;
    }
    out.push_str(&service.report("one service (with its slice) added"));
    Ok(out)
}
