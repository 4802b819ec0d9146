//! `kprs-bench render`: rendering alone, in-process, no kernel. Times each
//! step the proxy takes before it touches the kernel — parse the manifests,
//! tracker, snapshot, render, restore text — the render repeated.

use crate::counting_alloc::live_bytes;
use crate::generate::{self, Load};
use crate::stats::Samples;
use anyhow::Result;
use iptables::render::{RenderOptions, render};
use plan::Options;
use std::fmt::Write;
use std::time::Instant;

/// Milliseconds since `start`.
fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// Runs the render benchmark and returns its report.
pub fn run_render(load: &Load, repeats: usize) -> Result<String> {
    let mut out = String::new();
    let start = Instant::now();
    let text = generate::manifests(load, 0);
    let _ = writeln!(
        out,
        "generate manifests: {:.1} ms ({:.1} MiB)",
        ms(start),
        text.len() as f64 / 1048576.0
    );
    let (start, heap) = (Instant::now(), live_bytes());
    let parsed = source::manifests::parse(&text)?;
    let _ = writeln!(
        out,
        "parse manifests (source): {:.1} ms; decoded objects {:.1} MiB live",
        ms(start),
        mib_since(heap)
    );
    let (start, heap) = (Instant::now(), live_bytes());
    let mut tracker = tracker::Tracker::new(generate::NODE);
    tracker.replace_all(&parsed.objects);
    let (snapshot, _) = tracker.snapshot();
    let _ = writeln!(
        out,
        "tracker replace_all + snapshot: {:.1} ms ({} service ports); tracker + snapshot {:.1} MiB live",
        ms(start),
        snapshot.services.len(),
        mib_since(heap)
    );
    let common = generate::POD_CIDR
        .parse()
        .map(Options::with_cluster_cidr)
        .unwrap_or_default();
    let opts = RenderOptions {
        common,
        ..RenderOptions::default()
    };
    let (mut render_ms, mut text_ms) = (Samples::default(), Samples::default());
    let mut size = (0, 0, 0, 0);
    let mut heap = (0.0, 0.0);
    for _ in 0..repeats {
        let (start, before) = (Instant::now(), live_bytes());
        let ruleset = render(&snapshot, &opts).ruleset;
        render_ms.push(ms(start));
        let (start, rendered) = (Instant::now(), live_bytes());
        let restore = ruleset.to_restore();
        text_ms.push(ms(start));
        heap = (mib(rendered.saturating_sub(before)), mib_since(rendered));
        size = (
            ruleset.nat.rules.len(),
            ruleset.nat.chains.len(),
            ruleset.filter.rules.len(),
            restore.len(),
        );
    }
    let _ = writeln!(
        out,
        "render (min / median / max of {repeats}): {} ms",
        render_ms.summary(1)
    );
    let _ = writeln!(
        out,
        "restore text (min / median / max of {repeats}): {} ms",
        text_ms.summary(1)
    );
    let _ = writeln!(
        out,
        "rules: nat {} rules in {} chains, filter {} rules; restore input {:.1} MiB",
        size.0,
        size.1,
        size.2,
        size.3 as f64 / 1048576.0
    );
    let _ = writeln!(
        out,
        "live heap: rendered Ruleset {:.1} MiB, restore text {:.1} MiB",
        heap.0, heap.1
    );
    Ok(out)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / 1048576.0
}

/// Live heap grown since `before`, in MiB.
fn mib_since(before: usize) -> f64 {
    mib(live_bytes().saturating_sub(before))
}
