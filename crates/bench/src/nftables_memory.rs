//! `kprs-bench nftables-memory` (issue 13): where nftables mode's memory
//! goes, in-process with the counting allocator. The tracker is loaded
//! from the manifests text as the proxy loads it; then, with no kernel,
//! the live heap of each stage of a cold start held at once (rendered
//! statements, typed table, transaction, encoded batch); then, in a fresh
//! network namespace, the proxier itself (the binary's options; a cold
//! start in parts of `--part-size` anonymous sets) through a cold start,
//! one endpoint change, one added service and a full sync that finds
//! nothing to change, each with the peak live heap it added and its times.

use crate::counting_alloc::{live_bytes, peak_bytes, reset_peak};
use crate::generate::{self, Load};
use crate::namespace::BenchNetns;
use crate::proxy_process::status_kib;
use anyhow::{Context, Result};
use model::{ChangeSet, Snapshot};
use nftables::proxier::{NftablesProxier, ProxierOptions};
use nftables::render::{self, RenderContext, RenderOptions, Services, Slots};
use plan::NodeFacts;
use proxier::Proxier;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;
use tracker::Tracker;

/// How the benchmark syncs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Anonymous sets per staging transaction of the cold start.
    pub part_size: usize,
    /// Full syncs that find nothing to change, after the changes.
    pub full_syncs: usize,
    /// `--nftables-shared-endpoint-maps`.
    pub shared_endpoint_maps: bool,
}

/// Runs the benchmark and returns its report.
pub fn run_memory(load: &Load, options: Options) -> Result<String> {
    let mut out = String::new();
    let (tracker, snapshot) = load_tracker(load, &mut out)?;
    stages(&snapshot, options, &mut out);
    drop(snapshot);
    let ns = BenchNetns::labelled("nftmem")?;
    let load = load.clone();
    let synced = ns.run(move || sync_in_namespace(tracker, &load, options))??;
    out.push_str(&synced);
    let _ = writeln!(
        out,
        "process: VmRSS {:.1} MiB, VmHWM {:.1} MiB (the whole run, the manifests text and this report included)",
        mib(own_status_kib("VmRSS:") * 1024),
        mib(own_status_kib("VmHWM:") * 1024)
    );
    Ok(out)
}

/// The tracker loaded from the load's manifests text (checked, then
/// decoded object by object, as the proxy reads `--manifests`).
fn load_tracker(load: &Load, out: &mut String) -> Result<(Tracker, Snapshot)> {
    let before = live_bytes();
    let tracker = Mutex::new(Tracker::new(generate::NODE));
    let text = generate::manifests(load, 0);
    let text_len = text.len();
    reset_peak();
    let checked = source::manifests::Checked::new("<bench>", text)?;
    let mut held = source::manifests::Held::default();
    held.replace(checked, &tracker);
    let read_peak = peak_bytes().saturating_sub(before);
    let mut tracker = tracker
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (snapshot, _) = tracker.snapshot();
    let _ = writeln!(
        out,
        "manifests ({:.1} MiB of text) read into the tracker: peak live heap {:.1} MiB; tracker + snapshot (+ what \
         the source holds) then {:.1} MiB live",
        mib(text_len as u64),
        mib(read_peak as u64),
        mib(live_bytes().saturating_sub(before) as u64)
    );
    drop(held);
    Ok((tracker, snapshot))
}

/// The render options the binary uses by default, with the load's pod CIDR
/// (and the shared endpoint maps if `options` says so).
fn render_options(options: Options) -> RenderOptions {
    let mut opts = RenderOptions {
        shared_endpoint_maps: options.shared_endpoint_maps,
        ..RenderOptions::default()
    };
    if let Ok(cidr) = generate::POD_CIDR.parse() {
        opts.common.local_detection = plan::Options::with_cluster_cidr(cidr).local_detection;
    }
    opts
}

/// Each stage of a cold start kept alive beside the next, with the live
/// heap it holds (no kernel).
fn stages(snapshot: &Snapshot, options: Options, out: &mut String) {
    let opts = render_options(options);
    let ctx = RenderContext::new(snapshot, &opts, &NodeFacts::default());
    let (start, base) = (Instant::now(), live_bytes());
    let slots = match opts.shared_endpoint_maps {
        true => render::slots_in_order(snapshot, &ctx),
        false => render::EndpointSlots::default(),
    };
    let rendered = render::render_services(snapshot, &ctx, Services::All, Slots::of(&slots))
        .rendered
        .ruleset;
    let render_ms = ms(start);
    let statements = live_bytes().saturating_sub(base);
    let (start, base) = (Instant::now(), live_bytes());
    let contents = rendered.into_contents();
    let typed_ms = ms(start);
    let typed = (live_bytes() + statements).saturating_sub(base);
    let (chains, rules, sets) = (
        contents.chains.len(),
        contents.rules.len(),
        contents.sets.len(),
    );
    let (start, base) = (Instant::now(), live_bytes());
    let tx = nftables::apply::diff(&contents, None);
    let diff_ms = ms(start);
    let transaction = live_bytes().saturating_sub(base);
    drop(contents);
    let (start, base) = (Instant::now(), live_bytes());
    let batch = tx.encode(1);
    let encode_ms = ms(start);
    let encoded = live_bytes().saturating_sub(base);
    let _ = writeln!(
        out,
        "cold start stages (no kernel): {chains} chains, {rules} rules, {sets} sets (named and anonymous), {} changes\n  \
         rendered statements {:.1} MiB ({render_ms:.0} ms); typed table {:.1} MiB ({typed_ms:.0} ms); transaction \
         {:.1} MiB ({diff_ms:.0} ms); encoded batch {:.1} MiB in {} buffers, {:.1} MiB of bytes ({encode_ms:.0} ms)",
        tx.ops.len(),
        mib(statements as u64),
        mib(typed as u64),
        mib(transaction as u64),
        mib(encoded as u64),
        batch.chunks.len(),
        mib(batch.len() as u64),
    );
}

/// One sync of the benchmark: what it is, which service it changes with
/// how many endpoints (none: no change), and whether it is full.
type Step = (&'static str, Option<(usize, usize)>, bool);

/// The proxier's syncs, each with its report and the peak live heap it
/// added.
fn sync_in_namespace(
    mut tracker: Tracker,
    load: &Load,
    options: Options,
) -> Result<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut out = String::new();
        let proxier_options = ProxierOptions {
            render: render_options(options),
            max_anonymous_sets_per_transaction: Some(options.part_size),
        };
        let mut proxier = NftablesProxier::new(proxier_options).context("nf_tables socket")?;
        // (what, the service changed and its endpoint count, full)
        let mut steps: Vec<Step> = vec![
            ("cold start (full sync, no table)", None, true),
            ("one endpoint added (partial)", Some((0, load.endpoints + 1)), false),
            ("one service added (partial)", Some((load.services, load.endpoints)), false),
        ];
        steps.extend((0..options.full_syncs).map(|_| -> Step {
            ("full sync, nothing changed (read back + diff)", None, true)
        }));
        for (what, change, full) in steps {
            if let Some((service, endpoints)) = change {
                let text = generate::service_documents(load, service, endpoints);
                let objects = source::manifests::parse(&text)?.objects;
                for svc in &objects.services {
                    tracker.upsert_service(svc);
                }
                for slice in &objects.endpoint_slices {
                    tracker.upsert_endpoint_slice(slice);
                }
            }
            let (snapshot, changes): (Snapshot, ChangeSet) = tracker.snapshot();
            let before = live_bytes();
            reset_peak();
            let start = Instant::now();
            let report = proxier
                .sync(&snapshot, &changes, full)
                .await
                .map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
            let total = ms(start);
            let peak = peak_bytes().saturating_sub(before);
            let kernel = report.kernel.unwrap_or_default().as_secs_f64() * 1e3;
            let read_back = report.nftables.map_or(0.0, |f| f.read_back.as_secs_f64() * 1e3);
            let read_back_kernel =
                report.nftables.map_or(0.0, |f| f.read_back_kernel.as_secs_f64() * 1e3);
            let line = format!(
                "{what}: {total:.1} ms (render {:.1} ms, kernel's transactions {kernel:.1} ms, read back {read_back:.1} ms \
                 (kernel's dumps {read_back_kernel:.1} ms), ours {:.1} ms); peak live heap of the sync {:.1} MiB above the {:.1} MiB live before",
                report.render.as_secs_f64() * 1e3,
                total - kernel - read_back,
                mib(peak as u64),
                mib(before as u64)
            );
            // progress, for a profiler attached between steps
            eprintln!("{line}");
            let _ = writeln!(out, "{line}");
        }
        Ok(out)
    })
}

fn own_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| status_kib(&s, field))
        .unwrap_or(0)
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}
