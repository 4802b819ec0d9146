//! `explain service`: what is programmed for one Service, and the drift
//! from what the proxy would program.

use super::args::ServiceArgs;

/// The report for the Service `args` names.
pub fn run(args: &ServiceArgs) -> anyhow::Result<String> {
    anyhow::bail!("explain service {}: not implemented yet", args.service)
}
