//! `--init-only`: the privileged kernel set-up (conntrack sysctls and the
//! configured mode's), then exit, as upstream does for an init container
//! (the proxy can then run with only CAP_NET_ADMIN). No rule is written
//! and no server started.

use super::mode_options::wants_route_localnet;
use super::mode::ipvs_if_configured;
use crate::config::{Config, ProxyMode};
use iptables::proxier::IptablesProxier;
use model::IpFamily;

/// Applies the sysctls and kernel objects the mode needs.
pub async fn run(config: &Config) -> anyhow::Result<()> {
    super::conntrack_setup::apply(config);
    if matches!(config.mode, ProxyMode::Nftables | ProxyMode::Userspace) {
        tracing::info!(mode = ?config.mode, "the mode needs no further set-up; exiting (--init-only)");
        return Ok(());
    }
    if ipvs_if_configured(config, IpFamily::V4).await?.is_some() {
        tracing::info!("IPVS mode set up; exiting (--init-only)");
        return Ok(());
    }
    IptablesProxier::setup(wants_route_localnet(config, IpFamily::V4)).await?;
    tracing::info!("iptables mode set up; exiting (--init-only)");
    Ok(())
}
