//! `--cleanup`: remove every chain and jump any mode of ours created, for
//! both IP families and both iptables backends, IPVS mode's virtual
//! servers (outside `--ipvs-exclude-cidrs`), ipsets and `kube-ipvs0`,
//! then exit.

use crate::config::Config;

/// Cleans up and reports what was removed; an error if something could
/// not be cleaned.
pub async fn run(config: &Config) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    for outcome in iptables::apply::apply_cleanup_all().await {
        let what = format!("iptables {} {}", outcome.backend, outcome.family);
        match outcome.result {
            Ok(changes) => {
                let chains: usize = changes.iter().map(|c| c.deleted_chains.len()).sum();
                let jumps: usize = changes.iter().map(|c| c.deleted_jumps.len()).sum();
                tracing::info!(backend = %what, chains, jumps, "cleaned up iptables rules");
            }
            Err(err) => {
                tracing::warn!(backend = %what, %err, "cleanup failed");
                failed.push(what);
            }
        }
    }
    let opts = ipvs::apply::ApplyOptions { exclude_cidrs: config.ipvs.exclude_cidrs.clone(), ..Default::default() };
    match ipvs::cleanup::apply_cleanup(&opts).await {
        Ok(report) => tracing::info!(
            virtual_servers = report.services_deleted,
            dummy_deleted = report.dummy_deleted,
            "cleaned up IPVS mode"
        ),
        Err(err) => {
            tracing::warn!(%err, "IPVS cleanup failed");
            failed.push("ipvs".to_string());
        }
    }
    anyhow::ensure!(failed.is_empty(), "cleanup failed for: {}", failed.join(", "));
    Ok(())
}
