//! `kprs-bench run`: the real binary, one fresh network namespace per
//! repeat. Per repeat: start the proxy on the generated manifests, wait
//! for its first (full) sync, count what the kernel holds, change one
//! endpoint, add one service, read its peak RSS, stop it, delete the
//! namespace. In nftables mode the kernel's table is counted once at the
//! end (one `nft list table`, after the changes), so that listing it never
//! runs beside a timed sync.

use crate::change::{ChangeTiming, measure_change, write_atomically};
use crate::generate::{self, Load};
use crate::kernel_counts::{TableCount, count_mode};
use crate::namespace::BenchNetns;
use crate::proxy_process::ProxyProcess;
use crate::sync_line::{SyncLine, parse_sync_line, synced_message};
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How one benchmark run is set up.
#[derive(Debug, Clone)]
pub struct RunSetup {
    /// The cluster.
    pub load: Load,
    /// `--proxy-mode`.
    pub mode: String,
    /// `--iptables-backend`.
    pub backend: String,
    /// The kube-proxy-rs binary.
    pub binary: PathBuf,
    /// Repeats, each in a new namespace with a new proxy.
    pub repeats: usize,
    /// The longest any one phase (first sync, one change) may take.
    pub cap: Duration,
    /// More arguments for the proxy.
    pub proxy_args: Vec<String>,
    /// Copy the proxy's log to stderr.
    pub echo: bool,
    /// Periodic full syncs awaited after the changes.
    pub full_syncs: usize,
    /// The sync period then.
    pub full_sync_period: Duration,
}

/// What one repeat measured; `None` where the cap passed first.
#[derive(Debug, Clone, Default)]
pub struct Repeat {
    /// Proxy started → first sync logged.
    pub first_sync: Option<Duration>,
    /// The first sync's own figures.
    pub first: Option<SyncLine>,
    /// One endpoint added to one service.
    pub endpoint_change: Option<ChangeTiming>,
    /// One service (with its endpoints) added.
    pub service_added: Option<ChangeTiming>,
    /// Peak RSS of the proxy (KiB) right after its first sync.
    pub peak_rss_first_kib: Option<u64>,
    /// Peak RSS of the proxy (KiB) at the end of the repeat.
    pub peak_rss_kib: Option<u64>,
    /// Tables in the kernel after the first sync (nftables: at the end).
    pub kernel: BTreeMap<String, TableCount>,
    /// The periodic full syncs after the changes, as logged.
    pub full_syncs: Vec<SyncLine>,
}

/// The three manifests states a repeat goes through.
struct States {
    base: String,
    endpoint_changed: String,
    service_added: String,
}

fn states(load: &Load) -> States {
    let more = Load {
        services: load.services + 1,
        ..load.clone()
    };
    States {
        base: generate::manifests(load, 0),
        endpoint_changed: generate::manifests(load, 1),
        service_added: generate::manifests(&more, 1),
    }
}

/// Runs every repeat, printing each as it finishes.
pub fn run_all(setup: &RunSetup) -> Result<Vec<Repeat>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("manifests.yaml");
    let states = states(&setup.load);
    let mut repeats = Vec::new();
    for i in 0..setup.repeats {
        let repeat = run_once(setup, &path, &states)?;
        eprintln!("repeat {}/{}: {}", i + 1, setup.repeats, describe(&repeat));
        repeats.push(repeat);
    }
    Ok(repeats)
}

pub(crate) fn proxy_args(setup: &RunSetup, manifests: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "--manifests",
        &manifests.display().to_string(),
        "--hostname-override",
        generate::NODE,
        "--proxy-mode",
        &setup.mode,
        "--iptables-backend",
        &setup.backend,
        "--iptables-min-sync-period",
        "0s",
        "--iptables-sync-period",
        &match setup.full_syncs {
            0 => "1h".to_string(),
            _ => format!("{}s", setup.full_sync_period.as_secs().max(1)),
        },
        "--healthz-bind-address",
        "127.0.0.1:10256",
        "--metrics-bind-address",
        "127.0.0.1:10249",
        "--cluster-cidr",
        generate::POD_CIDR,
    ]
    .map(String::from)
    .into();
    args.extend(setup.proxy_args.iter().cloned());
    args
}

/// One repeat in its own namespace; the namespace goes when it returns.
fn run_once(setup: &RunSetup, path: &Path, states: &States) -> Result<Repeat> {
    write_atomically(path, &states.base)?;
    let ns = BenchNetns::new()?;
    let mut proxy = ProxyProcess::start(&ns, &setup.binary, &proxy_args(setup, path), setup.echo)?;
    let started = Instant::now();
    let mut repeat = Repeat::default();
    let synced = synced_message(&setup.mode);
    let nftables = setup.mode == "nftables";
    if let Some(line) = proxy.wait_for(synced, started + setup.cap)? {
        repeat.first_sync = Some(line.at - started);
        repeat.first = Some(parse_sync_line(&line.text));
        repeat.peak_rss_first_kib = Some(proxy.peak_rss_kib()?);
        if !nftables {
            repeat.kernel = count_mode(&ns, &setup.mode, &setup.backend)?;
        }
        repeat.endpoint_change = measure_change(
            &mut proxy,
            path,
            &states.endpoint_changed,
            synced,
            setup.cap,
        )?;
        if repeat.endpoint_change.is_some() {
            repeat.service_added =
                measure_change(&mut proxy, path, &states.service_added, synced, setup.cap)?;
        }
        if nftables {
            repeat.kernel = count_mode(&ns, &setup.mode, &setup.backend)?;
        }
        for _ in 0..setup.full_syncs {
            let deadline = Instant::now() + setup.full_sync_period + setup.cap;
            match proxy.wait_for(synced, deadline)? {
                Some(line) => repeat.full_syncs.push(parse_sync_line(&line.text)),
                None => break,
            }
        }
    }
    repeat.peak_rss_kib = Some(proxy.peak_rss_kib()?);
    proxy.stop(Duration::from_secs(10))?;
    Ok(repeat)
}

/// One line for the progress log.
fn describe(r: &Repeat) -> String {
    let secs = |d: Option<Duration>| {
        d.map_or("capped".to_string(), |d| format!("{:.3}s", d.as_secs_f64()))
    };
    let full: Vec<String> = r
        .full_syncs
        .iter()
        .map(|s| {
            format!(
                "partial={} render {:.1} ms apply {:.1} ms (read back {:.1} ms of which kernel {:.1} ms; transaction kernel {:.1} ms)",
                s.partial.as_deref().unwrap_or("?"),
                s.render_ms,
                s.apply_ms,
                s.read_back_ms,
                s.read_back_kernel_ms,
                s.kernel_ms
            )
        })
        .collect();
    let full = match full.is_empty() {
        true => String::new(),
        false => format!("; periodic syncs: {}", full.join(", ")),
    };
    format!(
        "first sync {} (render {:.1} ms, apply {:.1} ms, kernel {:.1} ms); endpoint change {}; service added {}; \
         peak RSS {:.1} MiB",
        secs(r.first_sync),
        r.first.as_ref().map_or(0.0, |s| s.render_ms),
        r.first.as_ref().map_or(0.0, |s| s.apply_ms),
        r.first.as_ref().map_or(0.0, |s| s.kernel_ms),
        secs(r.endpoint_change.as_ref().map(|c| c.total)),
        secs(r.service_added.as_ref().map(|c| c.total)),
        r.peak_rss_kib.unwrap_or(0) as f64 / 1024.0
    ) + &full
}
