//! `--cleanup`: remove every chain and jump any mode of ours created, for
//! both IP families and both iptables backends, then exit.

/// Cleans up and reports what was removed; an error if some backend could
/// not be cleaned.
pub async fn run() -> anyhow::Result<()> {
    let mut failed = Vec::new();
    for outcome in iptables::apply::apply_cleanup_all().await {
        let what = format!("{} {:?}", outcome.backend, outcome.family);
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
    anyhow::ensure!(failed.is_empty(), "cleanup failed for: {}", failed.join(", "));
    Ok(())
}
