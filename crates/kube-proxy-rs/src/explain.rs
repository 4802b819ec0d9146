//! `kube-proxy-rs explain`: our addition to upstream's command line (the
//! proxy's own flags are untouched: this runs only when the first
//! argument is `explain`). `explain packet` walks a new connection
//! through the rules the kernel holds now (or a saved dump);
//! `explain service` shows what is programmed for one Service and what
//! differs from what the proxy would program; `explain migrate` what
//! behaves otherwise after a switch to another mode. The walking is the
//! `explain` crate's; this file only parses, reads and prints.

mod args;
mod dump;
mod migrate;
mod packet;
mod service;

use crate::config::Config;
use crate::flags::Flags;
use anyhow::Context;
use args::{ExplainArgs, What};
use clap::Parser;
use model::IpFamily;
use std::ffi::OsString;
use std::process::ExitCode;

/// Whether `args` (the whole command line) asks for `explain`.
pub fn wanted(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|first| first == "explain")
}

/// Runs `kube-proxy-rs explain …`: 0 when explained, 1 when it could not
/// be (the error on stderr), 2 on a usage error.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let parsed = match ExplainArgs::try_parse_from(args.into_iter().skip(1)) {
        Ok(parsed) => parsed,
        Err(usage) => usage.exit(),
    };
    let result = match parsed.what {
        What::Packet(packet) => packet::run(&packet),
        What::Service(service) => service::run(&service),
        What::Dump(dump) => dump::run(&dump),
        What::Migrate(migrate) => migrate::run(&migrate),
    };
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("kube-proxy-rs explain: {}", crate::error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

/// How long the API server may take to list everything.
const LIST_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// The cluster state of every IP family (the primary family first), as a
/// dual-stack proxy's first syncs would see it.
pub struct ClusterState {
    snapshots: Vec<(IpFamily, model::Snapshot)>,
}

impl ClusterState {
    /// `family`'s snapshot (empty when the family is not known).
    pub fn of(&self, family: IpFamily) -> model::Snapshot {
        self.snapshots.iter().find(|(f, _)| *f == family).map(|(_, s)| s.clone()).unwrap_or_default()
    }
}

/// The configuration and cluster state of a proxy started with
/// `proxy_flags`, as its first syncs would see them: its `--manifests`,
/// else one complete list from its API server (`--kubeconfig`,
/// `--master`, `KUBECONFIG`, in-cluster).
fn proxy_state(proxy_flags: &[String], job: &str) -> anyhow::Result<(Config, ClusterState)> {
    let config = proxy_config(proxy_flags)?;
    let snapshots = match config.manifests {
        Some(_) => crate::proxy::dry_run::manifests_snapshots(&config, job, true)?,
        None => listed_snapshots(&config)?,
    };
    Ok((config, ClusterState { snapshots }))
}

/// The configuration of a proxy started with `proxy_flags`.
fn proxy_config(proxy_flags: &[String]) -> anyhow::Result<Config> {
    let program = std::iter::once("kube-proxy-rs".to_string());
    let flags = Flags::parse_from_args(program.chain(proxy_flags.iter().cloned()))
        .map_err(|e| anyhow::anyhow!("the proxy flags after `--`: {}", e.to_string().trim()))?;
    Ok(crate::config::load(&flags).map_err(|e| anyhow::anyhow!("the proxy flags after `--`: {e}"))?.config)
}

/// Each family's cluster state once the API server has listed every
/// watched kind.
fn listed_snapshots(config: &Config) -> anyhow::Result<Vec<(IpFamily, model::Snapshot)>> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let settings = crate::proxy::sources::client_settings(config);
        let client = source::kube::client(&settings).await?;
        let node_name = crate::proxy::node_name::resolve(config)?;
        let tracker = std::sync::Arc::new(std::sync::Mutex::new(tracker::Tracker::with_families(node_name, IpFamily::V4, &[IpFamily::V6])));
        let listed = std::sync::Arc::new(tokio::sync::Notify::new());
        let notify = std::sync::Arc::clone(&listed);
        let on_event = move |event| {
            if event == source::SourceEvent::InitialListDone {
                notify.notify_one();
            }
        };
        let task = tokio::spawn(source::kube::run(client, std::sync::Arc::clone(&tracker), crate::proxy::sources::watch_options(config), on_event));
        let done = tokio::time::timeout(LIST_PATIENCE, listed.notified()).await;
        task.abort();
        done.map_err(|_| anyhow::anyhow!("the API server did not list Services and EndpointSlices within {LIST_PATIENCE:?}"))?;
        let mut tracker = crate::proxy::sources::lock(&tracker);
        Ok(IpFamily::ALL.into_iter().filter_map(|f| Some((f, tracker.snapshot_of(f)?.0))).collect())
    })
}

/// The node's addresses from the kernel, without those of link `except`
/// (IPVS mode's `kube-ipvs0`) when given.
fn local_addresses(except: Option<&str>) -> anyhow::Result<Vec<std::net::IpAddr>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")?;
    let read = match except {
        Some(link) => runtime.block_on(host::read_local_addresses_except(link)),
        None => runtime.block_on(host::read_local_addresses()),
    };
    read.context("cannot read the node's addresses")
}
