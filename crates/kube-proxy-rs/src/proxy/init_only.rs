//! `--init-only`: the privileged kernel set-up (conntrack sysctls and the
//! configured mode's), then exit, as upstream does for an init container
//! (the proxy can then run with only CAP_NET_ADMIN). No rule is written
//! and no server started.

use super::iptables_mode::wants_route_localnet;
use super::ipvs_mode::IpvsProxier;
use crate::config::{Config, ProxyMode};
use model::IpFamily;

/// Applies the sysctls and kernel objects the mode needs.
pub async fn run(config: &Config) -> anyhow::Result<()> {
    super::conntrack_setup::apply(config);
    if config.mode == ProxyMode::Ipvs {
        match IpvsProxier::new(config, IpFamily::V4).await {
            Ok(_) => {
                tracing::info!("IPVS mode set up; exiting (--init-only)");
                return Ok(());
            }
            Err(err @ ipvs::Error::IpvsUnavailable(_)) => tracing::warn!("{err}; setting up iptables mode instead"),
            Err(err) => return Err(err.into()),
        }
    }
    iptables::apply::apply_kernel_setup(wants_route_localnet(config, IpFamily::V4)).await?;
    tracing::info!("iptables mode set up; exiting (--init-only)");
    Ok(())
}
