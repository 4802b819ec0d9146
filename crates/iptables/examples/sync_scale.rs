//! Prints what full and partial syncs cost at scale, on the real kernel
//! inside a fresh network namespace per backend (needs root):
//!
//! ```text
//! cargo run --release -p iptables --example sync_scale -- 10000 10 [legacy|nft]
//! ```
//!
//! For N services × M endpoints (ClusterIP, ready, on another node; the
//! rules upstream writes at that scale): render time, the first full sync
//! into empty tables, a steady-state full sync (`iptables-save` + every
//! chain rewritten), a partial sync after one endpoint of one service
//! changed, and a partial sync with nothing changed (the canary check and
//! the chain diff alone). Figures only: nothing is asserted. With
//! `DUMP_RESTORE=FILE` it also writes the full restore input before and
//! after the change (`FILE`, `FILE.after`) for timing the tools by hand;
//! with `FULL_ONCE=1` the steady-state full sync is skipped (the nft
//! backend's full syncs take minutes at 10k services).

use xtables::apply::{Backend, Iptables, Syncer};
use iptables::render::{RenderOptions, render};
use model::IpFamily;
use iptables::Ruleset;
use model::{Endpoint, Protocol, ServicePort, ServicePortName, Snapshot};
use std::error::Error;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::netns::Netns;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let services: usize = args.get(1).map_or(Ok(1000), |a| a.parse())?;
    let endpoints: usize = args.get(2).map_or(Ok(10), |a| a.parse())?;
    let backends: Vec<Backend> = match args.get(3).map(String::as_str) {
        Some("legacy") => vec![Backend::Legacy],
        Some("nft") => vec![Backend::Nft],
        _ => Backend::ALL.to_vec(),
    };
    if let Some(why) = testkit::netns::unavailable() {
        return Err(why.into());
    }
    let before = snapshot(services, endpoints, 0);
    let after = snapshot(services, endpoints, 1);
    let opts = RenderOptions { nfacct: false, ..RenderOptions::default() };
    let (ruleset, render_time) = timed_render(&before, &opts);
    println!(
        "{services} services x {endpoints} endpoints: nat {} rules in {} chains, filter {} rules; render {}",
        ruleset.nat.rules.len(),
        ruleset.nat.chains.len(),
        ruleset.filter.rules.len(),
        ms(render_time)
    );
    if let Ok(path) = std::env::var("DUMP_RESTORE") {
        std::fs::write(&path, ruleset.to_restore())?;
        std::fs::write(format!("{path}.after"), timed_render(&after, &opts).0.to_restore())?;
    }
    for backend in backends {
        let ns = Netns::new("scale").map_err(|e| e.to_string())?;
        let (before, after, opts) = (before.clone(), after.clone(), opts.clone());
        ns.run(move || measure(backend, &before, &after, &opts)).map_err(|e| e.to_string())??;
    }
    Ok(())
}

fn measure(backend: Backend, before: &Snapshot, after: &Snapshot, opts: &RenderOptions) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut syncer = Syncer::new(Iptables::new(backend, IpFamily::V4));
        let ruleset = render(before, opts).ruleset;
        let first = timed(syncer.sync(&ruleset, true)).await;
        let full = if std::env::var_os("FULL_ONCE").is_some() {
            (Ok(Default::default()), Duration::ZERO)
        } else {
            timed(syncer.sync(&ruleset, true)).await
        };
        let (changed, render_time) = timed_render(after, opts);
        let (partial, took) = timed(syncer.sync(&changed, false)).await;
        let partial = partial?;
        let idle = timed(syncer.sync(&changed, false)).await;
        println!(
            "{backend:>6}: first full sync {}, full sync {}, one-endpoint partial sync {} (+ render {}; {} chains, {} rules written), no-change partial sync {}",
            ms(first.1),
            ms(full.1),
            ms(took),
            ms(render_time),
            partial.written_chains,
            partial.applied.written_rules.values().sum::<usize>(),
            ms(idle.1),
        );
        first.0?;
        full.0?;
        idle.0?;
        println!("        peak RSS so far {}", peak_rss());
        Ok(())
    })
}

async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = f.await;
    (out, started.elapsed())
}

/// The best of three renders.
fn timed_render(snapshot: &Snapshot, opts: &RenderOptions) -> (Ruleset, Duration) {
    let mut best = Duration::MAX;
    let mut ruleset = Ruleset::default();
    for _ in 0..3 {
        let started = Instant::now();
        ruleset = render(snapshot, opts).ruleset;
        best = best.min(started.elapsed());
    }
    (ruleset, best)
}

/// `services` ClusterIP services of `endpoints` endpoints each; `moved`
/// shifts the last endpoint of service 0 to a new pod.
fn snapshot(services: usize, endpoints: usize, moved: u32) -> Snapshot {
    let mut snap = Snapshot::default();
    snap.node.name = "bench-node".into();
    snap.node.addresses = vec![IpAddr::V4(Ipv4Addr::new(192, 168, 0, 2))];
    for i in 0..services {
        let name = ServicePortName::new(&format!("ns{}", i % 100), &format!("svc{i}"), "http", Protocol::Tcp);
        let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(172, 30, 0, 0)) + i as u32);
        let port = ServicePort::cluster_ip(name.clone(), IpAddr::V4(ip), 80);
        let mut eps: Vec<Endpoint> = (0..endpoints)
            .map(|j| {
                let mut k = (i * endpoints + j) as u32;
                if i == 0 && j + 1 == endpoints {
                    k += moved * 0x0100_0000 / 2;
                }
                let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 64, 0, 0)) + k);
                Endpoint::ready(IpAddr::V4(ip), 8080, Some("other-node"), false)
            })
            .collect();
        eps.sort();
        snap.endpoints.insert(name.clone(), Arc::new(eps));
        snap.services.insert(name, Arc::new(port));
    }
    snap
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn peak_rss() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find(|l| l.starts_with("VmHWM")).map_or_else(String::new, |l| l.replace("VmHWM:", "").trim().to_string())
}
