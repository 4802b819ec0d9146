//! The configured mode's proxier, chosen at start-up: iptables, or IPVS
//! with the fall-back to iptables upstream has when the kernel lacks IPVS.
//! Starting in iptables mode removes what IPVS mode left behind. Past this
//! choice the binary sees only [`proxier::Proxier`].

use super::mode_options;
use crate::config::{Config, ProxyMode};
use iptables::proxier::IptablesProxier;
use ipvs::proxier::{IpvsCleanup, IpvsProxier};
use model::IpFamily;
use proxier::{Cleanup, Proxier};

/// Sets up the configured mode for `family`.
pub async fn choose(config: &Config, family: IpFamily) -> anyhow::Result<Box<dyn Proxier + Send>> {
    if let Some(proxier) = ipvs_if_configured(config, family).await? {
        return Ok(Box::new(proxier));
    }
    IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }.remove_leftovers().await;
    Ok(Box::new(IptablesProxier::new(mode_options::iptables(config, family)).await?))
}

/// What each mode leaves in the kernel, for `--cleanup`.
pub fn cleanups(config: &Config) -> Vec<Box<dyn Cleanup>> {
    vec![
        Box::new(iptables::proxier::IptablesCleanup),
        Box::new(IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }),
    ]
}

/// The mode as the metrics label it.
pub fn metrics_mode(mode: proxier::Mode) -> health::ProxyMode {
    match mode {
        proxier::Mode::Iptables => health::ProxyMode::Iptables,
        proxier::Mode::Ipvs => health::ProxyMode::Ipvs,
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
