//! The configured mode's proxier, chosen at start-up: iptables, IPVS
//! (with the fall-back to iptables upstream has when the kernel lacks
//! IPVS) or nftables. Starting in a mode removes what the other modes left
//! behind, as upstream's `platformCleanup` does: iptables and IPVS mode
//! remove our nftables tables; nftables mode removes our iptables chains
//! and IPVS mode's virtual servers, ipsets and `kube-ipvs0`. Past this
//! choice the binary sees only [`proxier::Proxier`].

use super::mode_options;
use crate::config::{Config, ProxyMode};
use iptables::proxier::IptablesProxier;
use ipvs::proxier::{IpvsCleanup, IpvsProxier};
use nftables::proxier::{NftablesCleanup, NftablesProxier};
use model::IpFamily;
use proxier::{Cleanup, Proxier};

/// Sets up the configured mode for `family`.
pub async fn choose(config: &Config, family: IpFamily) -> anyhow::Result<Box<dyn Proxier + Send>> {
    if config.mode == ProxyMode::Nftables {
        return Ok(Box::new(nftables(config, family).await?));
    }
    NftablesCleanup.remove_leftovers().await;
    if let Some(proxier) = ipvs_if_configured(config, family).await? {
        return Ok(Box::new(proxier));
    }
    IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }.remove_leftovers().await;
    Ok(Box::new(IptablesProxier::new(mode_options::iptables(config, family)).await?))
}

/// nftables mode for `family`, once the other modes' leftovers are gone.
async fn nftables(config: &Config, family: IpFamily) -> anyhow::Result<NftablesProxier> {
    IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }.remove_leftovers().await;
    remove_iptables_leftovers().await;
    let proxier = NftablesProxier::new(mode_options::nftables(config, family))?;
    tracing::info!(family = ?proxier.family(), "using nftables mode");
    Ok(proxier)
}

/// Our iptables chains and jumps (both backends, both families) would
/// still catch service traffic before nftables mode's table: removed, as
/// upstream does when nftables mode starts. A backend that is missing or
/// fails is logged, not fatal.
async fn remove_iptables_leftovers() {
    for cleaned in iptables::proxier::IptablesCleanup.clean_up().await {
        match cleaned.result {
            Ok(removed) => tracing::debug!(what = %cleaned.what, %removed, "removed what iptables mode left behind"),
            Err(err) => tracing::debug!(what = %cleaned.what, %err, "cannot remove iptables leftovers"),
        }
    }
}

/// What each mode leaves in the kernel, for `--cleanup`.
pub fn cleanups(config: &Config) -> Vec<Box<dyn Cleanup>> {
    vec![
        Box::new(iptables::proxier::IptablesCleanup),
        Box::new(IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }),
        Box::new(NftablesCleanup),
    ]
}

/// The mode as the metrics label it.
pub fn metrics_mode(mode: proxier::Mode) -> health::ProxyMode {
    match mode {
        proxier::Mode::Iptables => health::ProxyMode::Iptables,
        proxier::Mode::Ipvs => health::ProxyMode::Ipvs,
        proxier::Mode::Nftables => health::ProxyMode::Nftables,
    }
}

/// The IPVS proxier when IPVS mode is configured and the kernel has IPVS;
/// `None` (with one warning when IPVS was asked for) means iptables mode.
pub async fn ipvs_if_configured(config: &Config, family: IpFamily) -> Result<Option<IpvsProxier>, ipvs::Error> {
    if config.mode != ProxyMode::Ipvs {
        return Ok(None);
    }
    match IpvsProxier::new(mode_options::ipvs(config, family)).await {
        Ok(proxier) => Ok(Some(proxier)),
        Err(err) if err.is_unavailable() => {
            tracing::warn!("{err}; falling back to iptables mode");
            Ok(None)
        }
        Err(err) => Err(err),
    }
}
