//! The configured mode's proxiers, one per IP family served, chosen at
//! start-up: iptables, IPVS
//! (with the fall-back to iptables upstream has when the kernel lacks
//! IPVS), nftables or userspace ([`super::userspace_mode`]). Starting in a mode removes what the other modes left
//! behind, as upstream's `platformCleanup` does, but not all at start-up:
//! iptables mode removes our nftables tables, and nftables mode our
//! iptables chains, only once it has synced the family
//! ([`deferred_leftovers`], [`super::leftovers`]), so the node keeps the
//! old mode's service rules until the new mode's are in. Leaving IPVS
//! mode, its virtual servers are drained after the family's first sync
//! (`kube-ipvs0`, its ipsets and chains last: [`super::ipvs_drain`]).
//! IPVS mode still removes our nftables tables before its first sync, and
//! IPVS mode's leftovers still go before the first sync of iptables mode
//! when it is IPVS mode's fall-back (the kernel has no IPVS, so no IPVS
//! connection to keep). Past this choice the binary sees only
//! [`proxier::Proxier`].

use super::ipvs_drain::{DrainFamily, IpvsDrain};
use super::mode_options;
use crate::config::{Config, ProxyMode};
use iptables::proxier::IptablesProxier;
use ipvs::proxier::{IpvsCleanup, IpvsProxier};
use nftables::proxier::{NftablesCleanup, NftablesProxier};
use model::IpFamily;
use proxier::{Cleanup, Proxier};
use std::sync::Arc;

/// One family's proxier.
pub type FamilyProxier = (IpFamily, Box<dyn Proxier + Send>);

/// The mode chosen: its proxiers, and IPVS mode's leftovers to drain
/// after their first syncs, if IPVS mode ran here.
pub struct Chosen {
    /// One proxier per family, the primary first.
    pub proxiers: Vec<FamilyProxier>,
    /// IPVS mode's leftovers, when iptables or nftables mode was
    /// configured and IPVS mode left something.
    pub ipvs_drain: Option<Arc<IpvsDrain>>,
    /// Userspace mode's connection counts, for `/metrics`.
    pub connections: Option<health::ConnectionsReader>,
}

/// Sets up the configured mode for each of `families` (the primary
/// first), one proxier per family as upstream's metaproxier holds them.
pub async fn choose(config: &Config, families: &[IpFamily]) -> anyhow::Result<Chosen> {
    let ipvs_drain = ipvs_drain(config, families).await?;
    if config.mode == ProxyMode::Userspace {
        let (proxiers, connections) = super::userspace_mode::proxiers(config, families, ipvs_drain.is_some()).await?;
        return Ok(Chosen { proxiers, ipvs_drain, connections: Some(connections) });
    }
    let proxiers = proxiers(config, families, ipvs_drain.is_some()).await?;
    Ok(Chosen { proxiers, ipvs_drain, connections: None })
}

/// IPVS mode's leftovers to drain, when iptables or nftables mode is
/// configured and IPVS mode left something here.
async fn ipvs_drain(config: &Config, families: &[IpFamily]) -> anyhow::Result<Option<Arc<IpvsDrain>>> {
    let opts = mode_options::ipvs_apply_options(config);
    if config.mode == ProxyMode::Ipvs || !ipvs::cleanup::leftovers_present(&opts).await.unwrap_or(false) {
        return Ok(None);
    }
    let iptables_mode = match config.mode {
        ProxyMode::Iptables => {
            let backend = xtables::apply::detect_backend(mode_options::backend_choice(config.iptables_backend)).await?;
            families.iter().map(|&family| (backend, family)).collect()
        }
        _ => Vec::new(),
    };
    tracing::info!(limit = ?config.ipvs_drain_timeout, "IPVS mode's leftovers found: kept for their connections until the first sync, then drained");
    Ok(Some(IpvsDrain::new(opts, config.ipvs_drain_timeout, families, iptables_mode)))
}

/// The proxiers of the configured mode; IPVS mode's leftovers are removed
/// first unless `ipvs_drained` (they are drained later).
async fn proxiers(config: &Config, families: &[IpFamily], ipvs_drained: bool) -> anyhow::Result<Vec<FamilyProxier>> {
    if config.mode == ProxyMode::Nftables {
        return nftables(config, families, ipvs_drained).await;
    }
    if config.mode == ProxyMode::Ipvs {
        // As before: IPVS mode's start beside nftables mode's rules is not
        // checked (the VM), so they go before its first sync.
        NftablesCleanup.remove_leftovers().await;
    }
    if let Some(proxiers) = ipvs_for_each(config, families).await? {
        return Ok(proxiers);
    }
    if !ipvs_drained {
        IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }.remove_leftovers().await;
    }
    let mut proxiers: Vec<FamilyProxier> = Vec::new();
    for &family in families {
        proxiers.push((family, Box::new(IptablesProxier::new(mode_options::iptables(config, family)).await?)));
    }
    Ok(proxiers)
}

/// nftables mode for each of `families` (iptables mode's leftovers go
/// after each family's first sync, IPVS mode's are drained then unless
/// `ipvs_drained` says there are none).
async fn nftables(config: &Config, families: &[IpFamily], ipvs_drained: bool) -> anyhow::Result<Vec<FamilyProxier>> {
    if !ipvs_drained {
        IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }.remove_leftovers().await;
    }
    let mut proxiers: Vec<FamilyProxier> = Vec::new();
    for &family in families {
        let proxier = NftablesProxier::new(mode_options::nftables(config, family))?;
        tracing::info!(family = ?proxier.family(), "using nftables mode");
        proxiers.push((family, Box::new(proxier)));
    }
    Ok(proxiers)
}

/// IPVS mode for each of `families` when it is configured and the kernel
/// has IPVS (judged on the first family); `None` means iptables mode.
async fn ipvs_for_each(config: &Config, families: &[IpFamily]) -> anyhow::Result<Option<Vec<FamilyProxier>>> {
    let mut proxiers: Vec<FamilyProxier> = Vec::new();
    for &family in families {
        match ipvs_if_configured(config, family).await? {
            Some(proxier) => proxiers.push((family, Box::new(proxier))),
            None if proxiers.is_empty() => return Ok(None),
            None => anyhow::bail!("IPVS became unavailable while setting up the {family} proxier"),
        }
    }
    Ok(Some(proxiers))
}

/// The other modes whose rules `mode` removes only after a family's first
/// sync: nftables mode's table under iptables mode, iptables mode's chains
/// (both backends) under nftables mode; none under IPVS mode. Until then
/// both modes' rules are loaded; a connection is DNATed by one of them
/// (see [`super::leftovers`]). IPVS mode's leftovers (`ipvs_drain`) are
/// drained from then on, under either mode.
pub fn deferred_leftovers(mode: proxier::Mode, ipvs_drain: Option<&Arc<IpvsDrain>>) -> Vec<Box<dyn Cleanup + Send>> {
    let mut deferred: Vec<Box<dyn Cleanup + Send>> = match mode {
        proxier::Mode::Iptables => vec![Box::new(NftablesCleanup)],
        proxier::Mode::Nftables => vec![Box::new(iptables::proxier::IptablesCleanup)],
        proxier::Mode::Ipvs => return Vec::new(),
        // Its own first sync removes iptables mode's chains (stale chains
        // of ours in its backend); nftables mode's table goes after it.
        proxier::Mode::Userspace => vec![Box::new(NftablesCleanup)],
    };
    if let Some(drain) = ipvs_drain {
        deferred.push(Box::new(DrainFamily(Arc::clone(drain))));
    }
    deferred
}

/// What each mode leaves in the kernel, for `--cleanup`.
pub fn cleanups(config: &Config) -> Vec<Box<dyn Cleanup>> {
    vec![
        Box::new(iptables::proxier::IptablesCleanup),
        Box::new(IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }),
        Box::new(NftablesCleanup),
        Box::new(userspace::proxier::UserspaceCleanup),
    ]
}

/// The mode as the metrics label it.
pub fn metrics_mode(mode: proxier::Mode) -> health::ProxyMode {
    match mode {
        proxier::Mode::Iptables => health::ProxyMode::Iptables,
        proxier::Mode::Ipvs => health::ProxyMode::Ipvs,
        proxier::Mode::Nftables => health::ProxyMode::Nftables,
        proxier::Mode::Userspace => health::ProxyMode::Userspace,
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
