//! Wiring: turns a validated [`Config`] into a running proxy — source,
//! tracker, runner, the chosen mode's proxier, health servers and metrics — or into one of
//! the one-shot jobs (`--cleanup`, `--init-only`, `--dry-run`).

mod cleanup;
mod conntrack_setup;
pub(crate) mod dry_run;
mod families;
mod init_only;
mod ipvs_drain;
mod leftovers;
mod localhost_nodeports;
mod mode;
pub(crate) mod mode_options;
mod nfacct_metrics;
mod userspace_mode;
pub(crate) mod node_name;
mod oom_score;
mod serve;
mod servers;
mod service_health;
mod shutdown;
pub(crate) mod sources;
mod stale_flows;

use crate::config::Config;
use anyhow::Context;

/// Runs what the configuration asks for and returns when it is done (the
/// one-shot jobs) or when the process is told to stop.
pub fn run(config: Config) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if config.cleanup {
        return runtime.block_on(cleanup::run(&config));
    }
    if config.init_only {
        return runtime.block_on(init_only::run(&config));
    }
    if config.dry_run {
        return runtime.block_on(dry_run::run(&config));
    }
    runtime.block_on(serve::run(config))
}
