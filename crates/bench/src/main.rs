//! kprs-bench: generates scale loads for kube-proxy-rs and measures what a
//! sync costs at that scale (issue 7). `gen` writes a manifests file;
//! `run` starts the real binary in a fresh network namespace per repeat
//! and reads the timings it logs, its peak RSS and the rules it wrote.

mod generate;

use anyhow::Result;
use clap::{Parser, Subcommand};
use generate::Load;
use std::path::PathBuf;

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
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Gen { load, out } => std::fs::write(&out, generate::manifests(&load.load(), 0))?,
    }
    Ok(())
}
