//! The configured mode's proxier, chosen at start-up: iptables, or IPVS
//! with the fall-back to iptables upstream has when the kernel lacks IPVS.
//! Starting in one mode removes what the other left behind.

use super::ipvs_mode::IpvsProxier;
use super::iptables_mode::IptablesProxier;
use super::report::SyncReport;
use crate::config::{Config, ProxyMode};
use model::{IpFamily, Snapshot};

/// The datapath programmer of the running mode.
pub enum Proxier {
    /// iptables mode.
    Iptables(IptablesProxier),
    /// IPVS mode.
    Ipvs(IpvsProxier),
}

impl Proxier {
    /// Sets up the configured mode for `family`.
    pub async fn new(config: &Config, family: IpFamily) -> anyhow::Result<Self> {
        if let Some(proxier) = ipvs_if_configured(config, family).await? {
            return Ok(Proxier::Ipvs(proxier));
        }
        remove_ipvs_leftovers(config).await;
        Ok(Proxier::Iptables(IptablesProxier::new(config, family).await?))
    }

    /// The mode actually running, for the metrics.
    pub fn mode(&self) -> health::ProxyMode {
        match self {
            Proxier::Iptables(_) => health::ProxyMode::Iptables,
            Proxier::Ipvs(_) => health::ProxyMode::Ipvs,
        }
    }

    /// Renders and applies every service of `snapshot`; `full` asks for a
    /// full sync (iptables mode may sync partially otherwise).
    pub async fn sync(&mut self, snapshot: &Snapshot, full: bool) -> anyhow::Result<SyncReport> {
        Ok(match self {
            Proxier::Iptables(p) => p.sync(snapshot, full).await?,
            Proxier::Ipvs(p) => p.sync(snapshot).await?,
        })
    }

    /// Whether the last sync attempted was a partial one (iptables mode).
    pub fn last_sync_partial(&self) -> bool {
        match self {
            Proxier::Iptables(p) => p.last_sync_partial(),
            Proxier::Ipvs(_) => false,
        }
    }
}

/// The IPVS proxier when IPVS mode is configured and the kernel has IPVS;
/// `None` (with one warning when IPVS was asked for) means iptables mode.
pub async fn ipvs_if_configured(config: &Config, family: IpFamily) -> Result<Option<IpvsProxier>, ipvs::Error> {
    if config.mode != ProxyMode::Ipvs {
        return Ok(None);
    }
    match IpvsProxier::new(config, family).await {
        Ok(proxier) => Ok(Some(proxier)),
        Err(err @ ipvs::Error::IpvsUnavailable(_)) => {
            tracing::warn!("{err}; falling back to iptables mode");
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// IPVS mode's leftovers (its reject filter above all) would break
/// iptables mode; they are removed only if present, so a node whose IPVS
/// table someone else uses is left alone.
async fn remove_ipvs_leftovers(config: &Config) {
    let opts = ipvs::apply::ApplyOptions { exclude_cidrs: config.ipvs.exclude_cidrs.clone(), ..Default::default() };
    match ipvs::cleanup::leftovers_present(&opts).await {
        Ok(true) => match ipvs::cleanup::apply_cleanup(&opts).await {
            Ok(_) => tracing::info!("removed what IPVS mode left behind"),
            Err(err) => tracing::warn!(%err, "could not remove what IPVS mode left behind"),
        },
        Ok(false) => {}
        Err(err) => tracing::debug!(%err, "cannot check for IPVS leftovers"),
    }
}
