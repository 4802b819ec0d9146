//! kprs-bench: generates scale loads for kube-proxy-rs and measures what a
//! sync costs at that scale (issues 4 and 7).
//!
//! * `gen` writes a manifests file (N services × M endpoints, a share local);
//! * `run` starts the real binary in a fresh network namespace per repeat
//!   and reads the timings it logs, its peak RSS and the rules it wrote;
//! * `render` times parse / tracker / render in-process, no kernel;
//! * `tracker` feeds the tracker one event at a time and times single
//!   changes from the event to rules applied, in a namespace;
//! * `datapath` measures new TCP connections per second through one
//!   ClusterIP with one service and with many programmed, per mode;
//!   `datapath-vm` runs it in the IPVS-capable VM (IPVS mode);
//! * `nftables-memory` shows where nftables mode's memory goes: each
//!   stage of a cold start, then the proxier's syncs in a namespace;
//! * `nftables-shapes` programs N services × M endpoints in each table
//!   shape (upstream v1.36's anonymous maps, v1.37's direct DNAT, one
//!   shared map) over our codec and times the kernel's cold start, one
//!   endpoint change and one new service;
//! * `nftables-curve` runs the real binary's cold start in nftables mode
//!   at several sizes, ours and upstream v1.36's table, and draws the
//!   curve (SVG);
//! * `xtables-floor` times the kernel's own cost of one legacy write (read
//!   and replace a whole table), the floor under any legacy sync;
//! * `api` runs the real binary through the fake API server (streaming
//!   lists) and samples its RSS through the lists, first sync and changes;
//! * `api-load` puts the same load into a real API server (parallel POSTs)
//!   and `api-change` moves one endpoint there, for proxies watching it.

mod api_bench;
mod api_load;
mod change;
mod cold_start_curve;
mod counting_alloc;
mod curve_svg;
mod datapath;
mod datapath_load;
mod datapath_vm;
mod generate;
mod interrupt;
mod kernel_counts;
mod namespace;
mod nftables_memory;
mod nftables_shapes;
mod proxy_process;
mod quiet;
mod render_bench;
mod run;
mod run_report;
mod stats;
mod sync_line;
mod tracker_bench;
mod xtables_floor;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use generate::Load;
use std::path::PathBuf;
use std::time::Duration;
use xtables::apply::Backend;

#[derive(Parser)]
#[command(name = "kprs-bench", about = "Scale benchmark for kube-proxy-rs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct LoadArgs {
    /// Number of services.
    #[arg(long, default_value_t = 1000)]
    services: usize,
    /// Ready endpoints per service.
    #[arg(long, default_value_t = 10)]
    endpoints: usize,
    /// Every Nth endpoint is local to the proxy's node.
    #[arg(long, default_value_t = 3)]
    local_every: usize,
    /// Every Nth service is a NodePort service (0: none).
    #[arg(long, default_value_t = 0)]
    nodeport_every: usize,
    /// Every Nth service is a LoadBalancer service (0: none).
    #[arg(long, default_value_t = 0)]
    lb_every: usize,
    /// Every Nth service has ClientIP session affinity (0: none).
    #[arg(long, default_value_t = 0)]
    affinity_every: usize,
}

impl LoadArgs {
    fn load(&self) -> Load {
        Load {
            services: self.services,
            endpoints: self.endpoints,
            local_every: self.local_every,
            nodeport_every: self.nodeport_every,
            lb_every: self.lb_every,
            affinity_every: self.affinity_every,
        }
    }
}

#[derive(clap::Args, Clone)]
struct DatapathArgs {
    /// Proxy modes, comma-separated [default: nftables,iptables; in the VM
    /// ipvs] (IPVS mode needs IPVS in the kernel: `datapath-vm`).
    #[arg(long, value_delimiter = ',')]
    modes: Option<Vec<String>>,
    /// Generated services beside the target, comma-separated (0: the target alone).
    #[arg(long, default_value = "0,10000", value_delimiter = ',')]
    services: Vec<usize>,
    /// Endpoints per generated service.
    #[arg(long, default_value_t = 1)]
    endpoints: usize,
    /// Timed rounds per case.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Longest round, in seconds.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Most connections per round.
    #[arg(long, default_value_t = 10_000)]
    connections: usize,
    /// Longest wait for the proxy's first sync, in seconds.
    #[arg(long, default_value_t = 600)]
    cap: u64,
    /// Bulk throughput: MiB uploaded through the ClusterIP per round (0: not measured).
    #[arg(long, default_value_t = 0)]
    bulk_mib: usize,
    /// The proxy's memory with this many connections held open at once (0: not measured).
    #[arg(long, default_value_t = 0)]
    concurrent: usize,
    /// The kube-proxy-rs binary (default: next to this one).
    #[arg(long)]
    binary: Option<PathBuf>,
}

impl DatapathArgs {
    fn setup(self, default_modes: &str) -> Result<datapath::DatapathSetup> {
        let binary = match self.binary {
            Some(path) => path,
            None => default_binary()?,
        };
        Ok(datapath::DatapathSetup {
            modes: self
                .modes
                .unwrap_or_else(|| default_modes.split(',').map(String::from).collect()),
            service_counts: self.services,
            endpoints: self.endpoints,
            rounds: self.rounds.max(1),
            round_time: Duration::try_from_secs_f64(self.seconds).context("--seconds")?,
            round_connections: self.connections,
            binary,
            cap: Duration::from_secs(self.cap),
            bulk_mib: self.bulk_mib,
            concurrent: self.concurrent,
        })
    }

    /// The same arguments for `datapath` inside the VM (its binary given there).
    fn guest_args(&self, default_modes: &str) -> Vec<String> {
        let list = |values: &[usize]| {
            values
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let modes = self
            .modes
            .as_ref()
            .map_or(default_modes.to_string(), |m| m.join(","));
        [
            ("--modes", modes),
            ("--services", list(&self.services)),
            ("--endpoints", self.endpoints.to_string()),
            ("--rounds", self.rounds.to_string()),
            ("--seconds", self.seconds.to_string()),
            ("--connections", self.connections.to_string()),
            ("--cap", self.cap.to_string()),
            ("--bulk-mib", self.bulk_mib.to_string()),
            ("--concurrent", self.concurrent.to_string()),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [flag.to_string(), value])
        .collect()
    }
}

/// `datapath`'s modes on this machine.
const HOST_MODES: &str = "nftables,iptables";
/// `datapath-vm`'s modes.
const VM_MODES: &str = "ipvs";

#[derive(Subcommand)]
enum Command {
    /// Write a manifests file with the given load.
    Gen {
        #[command(flatten)]
        load: LoadArgs,
        /// Output file.
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Run kube-proxy-rs on the load in fresh network namespaces and report
    /// sync times, peak RSS and rule counts (needs root).
    Run {
        #[command(flatten)]
        load: LoadArgs,
        /// `--proxy-mode` (ipvs falls back to iptables on kernels without IPVS).
        #[arg(long, default_value = "iptables")]
        mode: String,
        /// `--iptables-backend`: legacy or nft.
        #[arg(long, default_value = "legacy")]
        backend: String,
        /// Repeats (a new namespace and proxy each).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Longest wait for any one phase, in seconds.
        #[arg(long, default_value_t = 600)]
        cap: u64,
        /// The kube-proxy-rs binary (default: next to this one).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// An extra argument for the proxy (repeatable).
        #[arg(long = "proxy-arg", allow_hyphen_values = true)]
        proxy_args: Vec<String>,
        /// Copy the proxy's log to stderr.
        #[arg(long)]
        echo: bool,
        /// After the changes, wait for this many periodic full syncs (the
        /// sync period is then `--full-sync-period` instead of 1h), each
        /// reading our table back; the peak RSS at the end covers them.
        #[arg(long, default_value_t = 0)]
        full_syncs: usize,
        /// The sync period when `--full-syncs` is given, in seconds (longer
        /// than the first sync and the two changes).
        #[arg(long, default_value_t = 30)]
        full_sync_period: u64,
    },
    /// Parse, tracker and render in-process (no kernel), render repeated.
    Render {
        #[command(flatten)]
        load: LoadArgs,
        /// How many times to render.
        #[arg(long, default_value_t = 5)]
        repeats: usize,
    },
    /// Tracker events one at a time, then single changes to rules applied
    /// in a fresh namespace (needs root unless --backend none).
    Tracker {
        #[command(flatten)]
        load: LoadArgs,
        /// legacy, nft, or none (tracker and render only).
        #[arg(long, default_value = "legacy")]
        backend: String,
        /// Single changes of each kind to time.
        #[arg(long, default_value_t = 5)]
        changes: usize,
        /// Load through the manifests source instead (the whole file checked, then
        /// decoded object by object into the tracker), and time two re-reads.
        #[arg(long)]
        manifests: bool,
    },
    /// New TCP connections per second through one ClusterIP (client pod →
    /// ClusterIP → one echo endpoint, in namespaces made and deleted here),
    /// with the target service alone and beside N generated services, per
    /// mode (needs root; iptables runs with the legacy backend).
    Datapath {
        #[command(flatten)]
        args: DatapathArgs,
    },
    /// `datapath` inside the small IPVS-capable VM of `scripts/ipvs-vm.sh`
    /// (qemu; one boot), with this binary and kube-proxy-rs (`--binary`) as
    /// its payload: IPVS mode's data path, and the other modes' beside it on
    /// the same (virtual) CPUs. The guest console goes to stderr, the
    /// report to stdout (needs root, qemu and, on first use, the network).
    DatapathVm {
        #[command(flatten)]
        args: DatapathArgs,
        /// Guest vCPUs.
        #[arg(long, default_value_t = 2)]
        cpus: usize,
        /// Wall-clock limit of the whole VM run, boot included, in seconds.
        #[arg(long, default_value_t = 3600)]
        timeout: u64,
        /// The VM launcher (default: the repository's `scripts/ipvs-vm.sh`).
        #[arg(long)]
        script: Option<PathBuf>,
    },
    /// Where nftables mode's memory goes: the live heap of each stage of a
    /// cold start (no kernel), then the proxier's cold start, one endpoint
    /// change and one added service in a fresh namespace, each with the
    /// peak heap it added (needs root).
    NftablesMemory {
        #[command(flatten)]
        load: LoadArgs,
        /// Anonymous sets per staging transaction of the cold start (the
        /// binary's: 1,000).
        #[arg(long, default_value_t = 1000)]
        part_size: usize,
        /// Full syncs that find nothing to change, run after the changes
        /// (each read back and diffed; the periodic resync).
        #[arg(long, default_value_t = 1)]
        full_syncs: usize,
        /// Renders with `--nftables-shared-endpoint-maps` (the binary's
        /// default); `=false`: upstream's table.
        #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
              default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
        shared_endpoint_maps: bool,
    },
    /// The real binary through the source crate's fake API server (v1.36's
    /// streaming lists), both in a fresh namespace: start → rules, and the
    /// proxy's RSS sampled every 20 ms through the initial lists, the first
    /// sync and one-endpoint changes (needs root).
    Api {
        /// Services, one EndpointSlice each.
        #[arg(long, default_value_t = 10_000)]
        services: usize,
        /// Ready endpoints per service.
        #[arg(long, default_value_t = 10)]
        endpoints: usize,
        /// `--proxy-mode`.
        #[arg(long, default_value = "nftables")]
        mode: String,
        /// `--iptables-backend`: legacy or nft.
        #[arg(long, default_value = "legacy")]
        backend: String,
        /// One-endpoint changes after the first sync, each waited for.
        #[arg(long, default_value_t = 100)]
        changes: usize,
        /// Repeats (a new namespace, server and proxy each).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Longest wait for the first sync or one change, in seconds.
        #[arg(long, default_value_t = 600)]
        cap: u64,
        /// The kube-proxy-rs binary (default: next to this one).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Copy the proxy's log to stderr.
        #[arg(long)]
        echo: bool,
        /// The server refuses streaming lists (as a kube-apiserver whose
        /// etcd lacks progress notifications): plain lists, whole.
        #[arg(long)]
        plain_lists: bool,
    },
    /// Table shapes for nftables mode: each programmed from nothing in a
    /// fresh namespace over our codec, then one endpoint change and one new
    /// service, timing the kernel (needs root).
    NftablesShapes {
        /// Service counts, comma-separated (each a fresh table).
        #[arg(long, default_value = "10000", value_delimiter = ',')]
        services: Vec<u32>,
        /// Endpoints per service.
        #[arg(long, default_value_t = 1)]
        endpoints: u32,
        /// The anonymous shape only up to this many services (quadratic).
        #[arg(long, default_value_t = 20_000)]
        anonymous_max: u32,
        /// Write the cold-start curve (services → seconds, kernel and
        /// wall, per shape) to this SVG file.
        #[arg(long)]
        svg: Option<PathBuf>,
        /// Shapes, comma-separated: anonymous (v1.36), direct (v1.37), shared.
        #[arg(long, default_value = "anonymous,direct,shared", value_delimiter = ',')]
        shapes: Vec<String>,
        /// Anonymous maps per cold-start transaction (the binary's: 1,000).
        #[arg(long, default_value_t = 1000)]
        part_size: u32,
        /// Changes of each kind to time.
        #[arg(long, default_value_t = 5)]
        changes: u32,
        /// Shared shape: services per shared map (0: one map for all).
        #[arg(long, default_value_t = 0)]
        shard_size: u32,
        /// Shared shape: the cold start adds the maps' elements after the rules.
        #[arg(long)]
        elements_after_rules: bool,
    },
    /// The real binary's cold start in nftables mode (proxy start → rules,
    /// and the kernel's time in it) at each size, with our table and with
    /// upstream v1.36's (`--nftables-shared-endpoint-maps=false`) on the
    /// same kernel; a Markdown table, and the curve as an SVG (needs root).
    NftablesCurve {
        /// Sizes, comma-separated: `N` (× `--endpoints`) or `NxM`.
        #[arg(long, default_value = "1000,10000,50000,100000,10000x10", value_delimiter = ',')]
        sizes: Vec<String>,
        /// Endpoints per service where a size gives none.
        #[arg(long, default_value_t = 1)]
        endpoints: usize,
        /// Our table only.
        #[arg(long)]
        no_upstream: bool,
        /// Longest wait for our cold start, in seconds.
        #[arg(long, default_value_t = 600)]
        cap: u64,
        /// Longest wait for upstream's table's cold start, in seconds; the
        /// first size past it ends upstream's runs at its endpoint count.
        #[arg(long, default_value_t = 360)]
        upstream_cap: u64,
        /// The kube-proxy-rs binary (default: next to this one).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Copy the proxy's log to stderr.
        #[arg(long)]
        echo: bool,
        /// Write the curve to this SVG file.
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Read a legacy (x_tables) table and write it back unchanged with raw
    /// `IPT_SO_*` socket options, timing the kernel calls (needs root; runs in
    /// the current network namespace, so wrap it in `ip netns exec`).
    XtablesFloor {
        /// The table.
        #[arg(long, default_value = "nat")]
        table: String,
        /// Rounds.
        #[arg(long, default_value_t = 3)]
        repeats: usize,
    },
    /// Create the load in an API server: namespace `bench`, the Node, N
    /// Services with one EndpointSlice each (objects already there are kept).
    ApiLoad {
        /// The kubeconfig of the API server.
        #[arg(long)]
        kubeconfig: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
        /// Requests in flight.
        #[arg(long, default_value_t = 32)]
        parallel: usize,
    },
    /// Move one endpoint of service 0 in the API server (and back on the
    /// next call), stamping the EndpointSlice's trigger time; prints when.
    ApiChange {
        /// The kubeconfig of the API server.
        #[arg(long)]
        kubeconfig: PathBuf,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Gen { load, out } => std::fs::write(&out, generate::manifests(&load.load(), 0))?,
        Command::Run {
            load,
            mode,
            backend,
            repeats,
            cap,
            binary,
            proxy_args,
            echo,
            full_syncs,
            full_sync_period,
        } => {
            interrupt::install()?;
            let binary = match binary {
                Some(path) => path,
                None => default_binary()?,
            };
            let setup = run::RunSetup {
                load: load.load(),
                mode,
                backend,
                binary,
                repeats,
                cap: Duration::from_secs(cap),
                proxy_args,
                echo,
                full_syncs,
                full_sync_period: Duration::from_secs(full_sync_period),
            };
            let repeats = run::run_all(&setup)?;
            println!("{}", run_report::render_report(&setup, &repeats));
        }
        Command::Render { load, repeats } => print!(
            "{}",
            render_bench::run_render(&load.load(), repeats.max(1))?
        ),
        Command::Tracker {
            load,
            backend,
            changes,
            manifests,
        } => {
            interrupt::install()?;
            let backend = parse_backend(&backend)?;
            let setup = tracker_bench::TrackerSetup {
                load: load.load(),
                backend,
                changes,
                manifests,
            };
            print!("{}", tracker_bench::run_tracker(setup)?);
        }
        Command::Datapath { args } => {
            interrupt::install()?;
            if datapath_vm::inside() {
                datapath_vm::prepare_guest()?;
            }
            print!("{}", datapath::run_datapath(&args.setup(HOST_MODES)?)?);
        }
        Command::DatapathVm {
            args,
            cpus,
            timeout,
            script,
        } => {
            let setup = datapath_vm::VmSetup {
                script: script.unwrap_or_else(datapath_vm::default_script),
                cpus: cpus.max(1),
                timeout_secs: timeout,
                proxy_binary: match &args.binary {
                    Some(path) => path.clone(),
                    None => default_binary()?,
                },
                datapath_args: args.guest_args(VM_MODES),
            };
            print!("{}", datapath_vm::run_in_vm(&setup)?);
        }
        Command::NftablesMemory {
            load,
            part_size,
            full_syncs,
            shared_endpoint_maps,
        } => {
            interrupt::install()?;
            let options = nftables_memory::Options {
                part_size: part_size.max(1),
                full_syncs: full_syncs.max(1),
                shared_endpoint_maps,
            };
            let report = nftables_memory::run_memory(&load.load(), options)?;
            print!("{report}")
        }
        Command::Api {
            services,
            endpoints,
            mode,
            backend,
            changes,
            repeats,
            cap,
            binary,
            echo,
            plain_lists,
        } => {
            interrupt::install()?;
            let binary = match binary {
                Some(path) => path,
                None => default_binary()?,
            };
            api_bench::run(&api_bench::ApiSetup {
                services,
                endpoints,
                mode,
                backend,
                changes,
                repeats: repeats.max(1),
                binary,
                cap: Duration::from_secs(cap),
                echo,
                plain_lists,
            })?
        }
        Command::NftablesShapes {
            services,
            endpoints,
            anonymous_max,
            svg,
            shapes,
            part_size,
            changes,
            shard_size,
            elements_after_rules,
        } => {
            interrupt::install()?;
            let setup = nftables_shapes::ShapeSetup {
                services,
                endpoints,
                shapes: shapes
                    .iter()
                    .map(|s| nftables_shapes::Shape::parse(s))
                    .collect::<Result<_>>()?,
                part_size,
                changes,
                shard_size,
                elements_after_rules,
                anonymous_max,
            };
            let (report, curve) = nftables_shapes::run_shapes(&setup)?;
            print!("{report}");
            if let Some(path) = svg {
                let title = format!(
                    "nftables cold start, services × {} endpoint(s)",
                    setup.endpoints
                );
                let svg = curve_svg::render(&title, &shape_series(&curve), "solid kernel, dashed ours+kernel", &[]);
                std::fs::write(&path, svg)
                    .with_context(|| format!("write {}", path.display()))?;
            }
        }
        Command::NftablesCurve {
            sizes,
            endpoints,
            no_upstream,
            cap,
            upstream_cap,
            binary,
            echo,
            svg,
        } => {
            interrupt::install()?;
            let setup = cold_start_curve::CurveSetup {
                sizes: sizes
                    .iter()
                    .map(|s| parse_size(s, endpoints))
                    .collect::<Result<_>>()?,
                upstream: !no_upstream,
                cap: Duration::from_secs(cap),
                upstream_cap: Duration::from_secs(upstream_cap),
                binary: match binary {
                    Some(path) => path,
                    None => default_binary()?,
                },
                echo,
            };
            let runs = cold_start_curve::run_curve(&setup)?;
            print!("{}", cold_start_curve::report(&runs));
            if let Some(path) = svg {
                let title = "nftables mode's cold start, the real binary (services × endpoints)";
                let note = "solid kernel, dashed start → rules";
                let capped = cold_start_curve::capped(&runs, upstream_cap);
                let svg = curve_svg::render(title, &cold_start_curve::series(&runs), note, &capped);
                std::fs::write(&path, svg).with_context(|| format!("write {}", path.display()))?;
            }
        }
        Command::XtablesFloor { table, repeats } => {
            print!("{}", xtables_floor::run_floor(&table, repeats.max(1))?)
        }
        Command::ApiLoad { kubeconfig, load, parallel } => println!("{}", on_runtime(async {
            api_load::run_load(api_load::client(&kubeconfig).await?, &load.load(), parallel).await
        })?),
        Command::ApiChange { kubeconfig } => println!("{}", on_runtime(async {
            api_load::run_change(api_load::client(&kubeconfig).await?).await
        })?),
    }
    Ok(())
}

/// `nftables-shapes`' cold starts as one series per shape, in the order
/// of [`nftables_shapes::Shape`]; upstream v1.36's (quadratic) is not
/// fitted.
fn shape_series(curve: &[nftables_shapes::ColdStart]) -> Vec<curve_svg::Series> {
    use nftables_shapes::Shape;
    [Shape::Anonymous, Shape::Direct, Shape::Shared, Shape::Interval]
        .into_iter()
        .map(|shape| curve_svg::Series {
            name: shape.name().to_string(),
            points: curve
                .iter()
                .filter(|p| p.shape == shape)
                .map(|p| curve_svg::Point {
                    services: f64::from(p.services),
                    kernel: p.kernel.as_secs_f64(),
                    wall: p.wall.as_secs_f64(),
                })
                .collect(),
            fitted: shape != Shape::Anonymous,
        })
        .collect()
}

/// Runs `work` on a multi-threaded tokio runtime.
fn on_runtime<T>(work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(work)
}

/// `kube-proxy-rs` in the directory of this executable.
fn default_binary() -> Result<PathBuf> {
    let me = std::env::current_exe()?;
    let dir = me.parent().context("executable has no directory")?;
    Ok(dir.join("kube-proxy-rs"))
}

/// `N` (× `endpoints`) or `NxM`.
fn parse_size(size: &str, endpoints: usize) -> Result<(usize, usize)> {
    let (services, endpoints) = match size.split_once('x') {
        Some((n, m)) => (n, m.parse().with_context(|| format!("endpoints in {size:?}"))?),
        None => (size, endpoints),
    };
    Ok((services.parse().with_context(|| format!("services in {size:?}"))?, endpoints))
}

fn parse_backend(name: &str) -> Result<Option<Backend>> {
    match name {
        "legacy" => Ok(Some(Backend::Legacy)),
        "nft" => Ok(Some(Backend::Nft)),
        "none" => Ok(None),
        other => bail!("unknown backend {other:?}: legacy, nft or none"),
    }
}
