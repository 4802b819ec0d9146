//! `--cleanup`: remove everything every mode of ours created — iptables
//! chains and jumps for both IP families and both iptables backends, IPVS
//! mode's virtual servers (outside `--ipvs-exclude-cidrs`), ipsets and
//! `kube-ipvs0`, nftables mode's `ip`/`ip6 kube-proxy` tables — then exit.

use crate::config::Config;

/// Cleans up and reports what was removed; an error if something could
/// not be cleaned.
pub async fn run(config: &Config) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    for cleanup in super::mode::cleanups(config) {
        for cleaned in cleanup.clean_up().await {
            match cleaned.result {
                Ok(removed) => tracing::info!(what = %cleaned.what, %removed, "cleaned up"),
                Err(err) => {
                    tracing::warn!(what = %cleaned.what, %err, "cleanup failed");
                    failed.push(cleaned.what);
                }
            }
        }
    }
    anyhow::ensure!(failed.is_empty(), "cleanup failed for: {}", failed.join(", "));
    Ok(())
}
