//! The summary of `kprs-bench run`: every figure as min / median / max over
//! the repeats, as a Markdown table ready for `docs/scale.md`.

use crate::change::ChangeTiming;
use crate::run::{Repeat, RunSetup};
use crate::stats::Samples;
use std::fmt::Write;
use std::time::Duration;

/// Samples of `f` over the repeats where it was measured.
fn collect(repeats: &[Repeat], f: impl Fn(&Repeat) -> Option<f64>) -> Samples {
    let mut samples = Samples::default();
    for value in repeats.iter().filter_map(f) {
        samples.push(value);
    }
    samples
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The summary table.
pub fn render_report(setup: &RunSetup, repeats: &[Repeat]) -> String {
    let mut out = String::new();
    let load = &setup.load;
    let _ = writeln!(
        out,
        "\n{} services × {} endpoints, --proxy-mode {} --iptables-backend {}, {} repeats (cap {} s per phase); \
         min / median / max\n",
        load.services,
        load.endpoints,
        setup.mode,
        setup.backend,
        repeats.len(),
        setup.cap.as_secs()
    );
    out.push_str("| figure | value |\n|---|---|\n");
    let rows = if setup.mode == "nftables" {
        nftables_rows(repeats)
    } else {
        rows(repeats)
    };
    for (name, samples, decimals) in rows {
        let capped = repeats.len() - samples.len();
        let note = if capped > 0 {
            format!(" ({capped} capped)")
        } else {
            String::new()
        };
        let _ = writeln!(out, "| {name} | {}{note} |", samples.summary(decimals));
    }
    out
}

type Row = (String, Samples, usize);

fn rows(r: &[Repeat]) -> Vec<Row> {
    let mut rows: Vec<Row> = vec![
        (
            "first full sync, proxy start → rules applied (s)".into(),
            collect(r, |x| x.first_sync.map(secs)),
            3,
        ),
        (
            "  its render (ms)".into(),
            collect(r, |x| x.first.as_ref().map(|s| s.render_ms)),
            1,
        ),
        (
            "  its apply: save + restore + jumps (ms)".into(),
            collect(r, |x| x.first.as_ref().map(|s| s.apply_ms)),
            1,
        ),
    ];
    rows.extend(change_rows("one-endpoint change", r, |x| {
        x.endpoint_change.as_ref()
    }));
    rows.extend(change_rows("add one service", r, |x| {
        x.service_added.as_ref()
    }));
    rows.extend(periodic_full_sync_rows(r));
    let tail: [(&str, Samples, usize); 8] = [
        (
            "peak RSS of the proxy after its first sync (MiB)",
            collect(r, |x| x.peak_rss_first_kib.map(mib)),
            1,
        ),
        (
            "peak RSS of the proxy at the end (MiB)",
            collect(r, |x| x.peak_rss_kib.map(mib)),
            1,
        ),
        (
            "nat rules written",
            collect(r, |x| x.first.as_ref().map(|s| s.nat_rules as f64)),
            0,
        ),
        (
            "nat chains written",
            collect(r, |x| x.first.as_ref().map(|s| s.nat_chains as f64)),
            0,
        ),
        (
            "filter rules written",
            collect(r, |x| x.first.as_ref().map(|s| s.filter_rules as f64)),
            0,
        ),
        (
            "kernel: nat rules (iptables-save)",
            collect(r, |x| table(x, "nat", |t| t.rules)),
            0,
        ),
        (
            "kernel: nat chains (iptables-save, built-in too)",
            collect(r, |x| table(x, "nat", |t| t.chains)),
            0,
        ),
        (
            "kernel: filter rules (iptables-save)",
            collect(r, |x| table(x, "filter", |t| t.rules)),
            0,
        ),
    ];
    rows.extend(
        tail.into_iter()
            .map(|(name, samples, decimals)| (name.to_string(), samples, decimals)),
    );
    rows
}

/// nftables mode: the kernel's own transaction time beside each apply.
fn nftables_rows(r: &[Repeat]) -> Vec<Row> {
    let first =
        |f: fn(&crate::sync_line::SyncLine) -> f64| move |x: &Repeat| x.first.as_ref().map(f);
    let mut rows: Vec<Row> = vec![
        (
            "first full sync, proxy start → rules applied (s)".into(),
            collect(r, |x| x.first_sync.map(secs)),
            3,
        ),
        (
            "  its render (ms)".into(),
            collect(r, first(|s| s.render_ms)),
            1,
        ),
        (
            "  its apply: read back + diff + transaction (ms)".into(),
            collect(r, first(|s| s.apply_ms)),
            1,
        ),
        (
            "    of which the kernel's own transaction time (ms)".into(),
            collect(r, first(|s| s.kernel_ms)),
            1,
        ),
        (
            "    of which reading our table back (ms)".into(),
            collect(r, first(|s| s.read_back_ms)),
            1,
        ),
    ];
    for (what, pick) in [
        (
            "one-endpoint change",
            (|x: &Repeat| x.endpoint_change.as_ref()) as fn(&Repeat) -> Option<&ChangeTiming>,
        ),
        ("add one service", |x: &Repeat| x.service_added.as_ref()),
    ] {
        rows.extend(change_rows(what, r, pick));
        rows.push((
            "  the sync's kernel transaction time (ms)".into(),
            collect(r, |x| pick(x).map(|c| c.sync.kernel_ms)),
            1,
        ));
    }
    rows.extend(periodic_full_sync_rows(r));
    let tail: [(&str, Samples, usize); 8] = [
        (
            "peak RSS of the proxy after its first sync (MiB)",
            collect(r, |x| x.peak_rss_first_kib.map(mib)),
            1,
        ),
        (
            "peak RSS of the proxy at the end (MiB)",
            collect(r, |x| x.peak_rss_kib.map(mib)),
            1,
        ),
        (
            "first sync's table (as logged): chains",
            collect(r, first(|s| s.chains as f64)),
            0,
        ),
        (
            "first sync's table (as logged): rules",
            collect(r, first(|s| s.rules as f64)),
            0,
        ),
        (
            "first sync's table (as logged): elements",
            collect(r, first(|s| s.elements as f64)),
            0,
        ),
        (
            "kernel at the end (nft list table): chains",
            collect(r, |x| table(x, "ip kube-proxy", |t| t.chains)),
            0,
        ),
        (
            "kernel at the end (nft list table): rules",
            collect(r, |x| table(x, "ip kube-proxy", |t| t.rules)),
            0,
        ),
        (
            "kernel at the end (nft list table): named set/map elements",
            collect(r, |x| table(x, "ip kube-proxy", |t| t.elements)),
            0,
        ),
    ];
    rows.extend(
        tail.into_iter()
            .map(|(name, samples, decimals)| (name.to_string(), samples, decimals)),
    );
    rows
}

fn table(
    r: &Repeat,
    name: &str,
    f: impl Fn(&crate::kernel_counts::TableCount) -> u64,
) -> Option<f64> {
    r.kernel.get(name).map(|t| f(t) as f64)
}

/// The first periodic full sync's rows, when the run waited for one.
fn periodic_full_sync_rows(r: &[Repeat]) -> Vec<Row> {
    if r.iter().all(|x| x.full_syncs.is_empty()) {
        return Vec::new();
    }
    let periodic =
        |f: fn(&crate::sync_line::SyncLine) -> f64| move |x: &Repeat| x.full_syncs.first().map(f);
    vec![
        (
            "first periodic full sync (nothing to change): apply (ms)".into(),
            collect(r, periodic(|s| s.apply_ms)),
            1,
        ),
        (
            "  of which reading our table back (ms)".into(),
            collect(r, periodic(|s| s.read_back_ms)),
            1,
        ),
        (
            "    of which inside the socket's send/recv: the kernel's dumps (ms)".into(),
            collect(r, periodic(|s| s.read_back_kernel_ms)),
            1,
        ),
    ]
}

fn change_rows(
    what: &str,
    r: &[Repeat],
    pick: impl Fn(&Repeat) -> Option<&ChangeTiming> + Copy,
) -> Vec<Row> {
    vec![
        (
            format!("{what}: file in place → rules applied (s)"),
            collect(r, |x| pick(x).map(|c| secs(c.total))),
            3,
        ),
        (
            "  of which watcher poll + read + parse (s)".into(),
            collect(r, |x| pick(x).map(|c| secs(c.detect_and_parse))),
            3,
        ),
        (
            "  of which tracker + sync (s)".into(),
            collect(r, |x| pick(x).map(|c| secs(c.after_parse))),
            3,
        ),
        (
            "  the sync's render (ms)".into(),
            collect(r, |x| pick(x).map(|c| c.sync.render_ms)),
            1,
        ),
        (
            "  the sync's apply (ms)".into(),
            collect(r, |x| pick(x).map(|c| c.sync.apply_ms)),
            1,
        ),
    ]
}
