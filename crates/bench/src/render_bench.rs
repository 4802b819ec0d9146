//! `kprs-bench render`: rendering alone, in-process, no kernel. Times each
//! step the proxy takes before it touches the kernel — parse the manifests,
//! tracker, snapshot, render, restore text — the render repeated.

use crate::generate::{self, Load};
use crate::stats::Samples;
use anyhow::Result;
use iptables::render::{RenderOptions, render};
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
    let _ = writeln!(out, "generate manifests: {:.1} ms ({:.1} MiB)", ms(start), text.len() as f64 / 1048576.0);
    let start = Instant::now();
    let parsed = source::manifests::parse(&text)?;
    let _ = writeln!(out, "parse manifests (source): {:.1} ms", ms(start));
    let start = Instant::now();
    let mut tracker = tracker::Tracker::new(generate::NODE);
    tracker.replace_all(&parsed.objects);
    let (snapshot, _) = tracker.snapshot();
    let _ = writeln!(out, "tracker replace_all + snapshot: {:.1} ms ({} service ports)", ms(start), snapshot.services.len());
    let opts = RenderOptions { cluster_cidr: generate::POD_CIDR.parse().ok(), ..RenderOptions::default() };
    let (mut render_ms, mut text_ms) = (Samples::default(), Samples::default());
    let mut size = (0, 0, 0, 0);
    for _ in 0..repeats {
        let start = Instant::now();
        let ruleset = render(&snapshot, &opts).ruleset;
        render_ms.push(ms(start));
        let start = Instant::now();
        let restore = ruleset.to_restore();
        text_ms.push(ms(start));
        size = (ruleset.nat.rules.len(), ruleset.nat.chains.len(), ruleset.filter.rules.len(), restore.len());
    }
    let _ = writeln!(out, "render (min / median / max of {repeats}): {} ms", render_ms.summary(1));
    let _ = writeln!(out, "restore text (min / median / max of {repeats}): {} ms", text_ms.summary(1));
    let _ = writeln!(
        out,
        "rules: nat {} rules in {} chains, filter {} rules; restore input {:.1} MiB",
        size.0, size.1, size.2, size.3 as f64 / 1048576.0
    );
    Ok(out)
}
