//! `kprs-bench nftables-curve` (issue 25): the cold-start curve of the
//! real binary in nftables mode. For each size, a fresh namespace and a
//! fresh proxy on the generated manifests: proxy start → the first sync's
//! rules in the kernel (ours, the whole cold start: reading the file, the
//! tracker, the render, the transactions) and the kernel's own time in
//! them (`kernel_ms` of the sync's log line), with our table and with
//! upstream v1.36's (`--nftables-shared-endpoint-maps=false`), side by
//! side on the same kernel. Upstream's table is quadratic in the kernel:
//! its sizes stop at the first one whose cold start does not finish
//! within `--upstream-cap`. Only the cold start is run (no changes).
//! Each waits for the CPUs to go idle first (the previous namespace's
//! teardown runs in the kernel after it is deleted).

use crate::curve_svg::{Point, Series};
use crate::generate::{self, Load};
use crate::namespace::BenchNetns;
use crate::proxy_process::ProxyProcess;
use crate::run::{RunSetup, proxy_args};
use crate::sync_line::{SYNCED_NFTABLES, parse_sync_line};
use anyhow::Result;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest wait for the CPUs to go idle before each cold start (the
/// last run's namespace is torn down by the kernel meanwhile).
const QUIET_WAIT: Duration = Duration::from_secs(60);

/// The flag that makes the proxy write upstream v1.36's table.
const UPSTREAM_TABLE: &str = "--nftables-shared-endpoint-maps=false";

/// What the curve runs.
#[derive(Debug, Clone)]
pub struct CurveSetup {
    /// Sizes, services × endpoints, in the order run.
    pub sizes: Vec<(usize, usize)>,
    /// Also run upstream v1.36's table.
    pub upstream: bool,
    /// The longest wait for our cold start.
    pub cap: Duration,
    /// The longest wait for upstream's; past it, no larger size is run
    /// with upstream's table at that endpoint count.
    pub upstream_cap: Duration,
    /// The kube-proxy-rs binary.
    pub binary: PathBuf,
    /// Copy the proxy's log to stderr.
    pub echo: bool,
}

/// One cold start.
#[derive(Debug, Clone)]
pub struct ColdStart {
    /// Services.
    pub services: usize,
    /// Endpoints per service.
    pub endpoints: usize,
    /// Upstream v1.36's table (else ours).
    pub upstream: bool,
    /// Proxy start → first sync logged; `None`: capped.
    pub start_to_rules: Option<Duration>,
    /// The sync's render, apply and kernel times (ms).
    pub render_ms: f64,
    /// Its apply.
    pub apply_ms: f64,
    /// The kernel's time in its transactions.
    pub kernel_ms: f64,
    /// Peak RSS of the proxy (KiB) after the sync, or when capped.
    pub peak_rss_kib: u64,
    /// The proxy's CPU time (all threads) up to then.
    pub cpu: Duration,
}

/// Runs every size (ours, then upstream's table), printing each as it
/// finishes; returns them in the order run.
pub fn run_curve(setup: &CurveSetup) -> Result<Vec<ColdStart>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("manifests.yaml");
    let mut runs = Vec::new();
    let mut upstream_stopped: Vec<usize> = Vec::new();
    for &(services, endpoints) in &setup.sizes {
        let load = Load {
            services,
            endpoints,
            local_every: 3,
            nodeport_every: 0,
            lb_every: 0,
            affinity_every: 0,
        };
        crate::change::write_atomically(&path, &generate::manifests(&load, 0))?;
        let tables = match setup.upstream && !upstream_stopped.contains(&endpoints) {
            true => &[false, true][..],
            false => &[false][..],
        };
        for &upstream in tables {
            let run = cold_start(setup, &load, &path, upstream)?;
            eprintln!("{}", describe(&run));
            if upstream && run.start_to_rules.is_none() {
                upstream_stopped.push(endpoints);
            }
            runs.push(run);
        }
    }
    Ok(runs)
}

/// One proxy in a fresh namespace, up to its first sync (or the cap).
fn cold_start(setup: &CurveSetup, load: &Load, path: &Path, upstream: bool) -> Result<ColdStart> {
    let run = RunSetup {
        load: load.clone(),
        mode: "nftables".into(),
        backend: "legacy".into(),
        binary: setup.binary.clone(),
        repeats: 1,
        cap: setup.cap,
        proxy_args: match upstream {
            true => vec![UPSTREAM_TABLE.into()],
            false => Vec::new(),
        },
        echo: setup.echo,
        full_syncs: 0,
        full_sync_period: Duration::from_secs(3600),
    };
    let cap = match upstream {
        true => setup.upstream_cap,
        false => setup.cap,
    };
    let (idle, waited) = crate::quiet::wait_for_quiet(QUIET_WAIT)?;
    if waited >= QUIET_WAIT {
        eprintln!("  the CPUs were not quiet within {QUIET_WAIT:?} ({:.0} % idle): running anyway", idle * 100.0);
    } else if waited > Duration::from_secs(1) {
        eprintln!("  waited {:.1} s for the CPUs to go idle", waited.as_secs_f64());
    }
    let ns = BenchNetns::labelled("curve")?;
    let mut proxy = ProxyProcess::start(&ns, &setup.binary, &proxy_args(&run, path), setup.echo)?;
    let started = Instant::now();
    let line = proxy.wait_for(SYNCED_NFTABLES, started + cap)?;
    let mut out = ColdStart {
        services: load.services,
        endpoints: load.endpoints,
        upstream,
        start_to_rules: None,
        render_ms: 0.0,
        apply_ms: 0.0,
        kernel_ms: 0.0,
        peak_rss_kib: proxy.peak_rss_kib()?,
        cpu: proxy.cpu_time()?,
    };
    if let Some(line) = line {
        let sync = parse_sync_line(&line.text);
        out.start_to_rules = Some(line.at - started);
        out.render_ms = sync.render_ms;
        out.apply_ms = sync.apply_ms;
        out.kernel_ms = sync.kernel_ms;
    }
    proxy.stop(Duration::from_secs(10))?;
    Ok(out)
}

fn table_name(upstream: bool) -> &'static str {
    match upstream {
        true => "upstream v1.36's table",
        false => "ours",
    }
}

/// One line for the progress log.
fn describe(run: &ColdStart) -> String {
    let head = format!(
        "{} × {}, {}:",
        run.services,
        run.endpoints,
        table_name(run.upstream)
    );
    match run.start_to_rules {
        None => format!("{head} capped (peak RSS so far {:.1} MiB)", mib(run.peak_rss_kib)),
        Some(d) => format!(
            "{head} start → rules {:.2} s (render {:.0} ms, apply {:.0} ms, kernel {:.0} ms), peak RSS {:.1} MiB, CPU {:.2} s",
            d.as_secs_f64(),
            run.render_ms,
            run.apply_ms,
            run.kernel_ms,
            mib(run.peak_rss_kib),
            run.cpu.as_secs_f64()
        ),
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The Markdown table of `runs`.
pub fn report(runs: &[ColdStart]) -> String {
    let mut out = String::from(
        "\n| services × endpoints | table | start → rules (s) | render (s) | apply (s) | the kernel (s) | peak RSS (MiB) | CPU (s) |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for run in runs {
        let secs = |ms: f64| format!("{:.2}", ms / 1000.0);
        let (start, render, apply, kernel) = match run.start_to_rules {
            None => ("capped".to_string(), "–".into(), "–".into(), "–".into()),
            Some(d) => (
                format!("{:.2}", d.as_secs_f64()),
                secs(run.render_ms),
                secs(run.apply_ms),
                secs(run.kernel_ms),
            ),
        };
        let _ = writeln!(
            out,
            "| {} × {} | {} | {start} | {render} | {apply} | {kernel} | {:.1} | {:.2} |",
            run.services,
            run.endpoints,
            table_name(run.upstream),
            mib(run.peak_rss_kib),
            run.cpu.as_secs_f64()
        );
    }
    out
}

/// The curve's series: one per table and endpoint count, the kernel's
/// time solid and start → rules dashed; upstream's (quadratic) not
/// fitted. Capped runs are left out.
pub fn series(runs: &[ColdStart]) -> Vec<Series> {
    let mut keys: Vec<(bool, usize)> = runs.iter().map(|r| (r.upstream, r.endpoints)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(upstream, endpoints)| Series {
            name: format!("{}, × {endpoints}", match upstream {
                true => "upstream v1.36",
                false => "ours",
            }),
            points: runs
                .iter()
                .filter(|r| r.upstream == upstream && r.endpoints == endpoints)
                .filter_map(|r| {
                    r.start_to_rules.map(|d| Point {
                        services: r.services as f64,
                        kernel: r.kernel_ms / 1000.0,
                        wall: d.as_secs_f64(),
                    })
                })
                .collect(),
            fitted: !upstream,
        })
        .collect()
}

/// One line per run that did not finish within its cap.
pub fn capped(runs: &[ColdStart], upstream_cap: u64) -> Vec<String> {
    runs.iter()
        .filter(|r| r.start_to_rules.is_none())
        .map(|r| {
            let table = match r.upstream {
                true => format!("upstream v1.36: > {upstream_cap} s"),
                false => "ours: capped".to_string(),
            };
            format!("{} × {}, {table}", r.services, r.endpoints)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(services: usize, endpoints: usize, upstream: bool, secs: Option<f64>) -> ColdStart {
        ColdStart {
            services,
            endpoints,
            upstream,
            start_to_rules: secs.map(Duration::from_secs_f64),
            render_ms: 0.0,
            apply_ms: 0.0,
            kernel_ms: secs.unwrap_or(0.0) * 500.0,
            peak_rss_kib: 1024,
            cpu: Duration::from_secs(1),
        }
    }

    #[test]
    fn one_series_per_table_and_endpoint_count_without_capped_runs() {
        let runs = [
            run(1000, 1, false, Some(0.2)),
            run(1000, 1, true, Some(0.4)),
            run(50000, 1, false, Some(7.0)),
            run(50000, 1, true, None),
            run(10000, 10, false, Some(3.0)),
        ];
        let series = series(&runs);
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ours, × 1", "ours, × 10", "upstream v1.36, × 1"]);
        assert_eq!(series[0].points.len(), 2);
        assert_eq!(series[2].points.len(), 1, "the capped run is left out");
        assert!(series[0].fitted && !series[2].fitted);
        assert!((series[0].points[1].kernel - 3.5).abs() < 1e-9);
        assert_eq!(capped(&runs, 360), ["50000 × 1, upstream v1.36: > 360 s"]);
    }
}
