//! Userspace mode's set-up: one data path (`forward::Forwarder`) and one
//! proxier per IP family, IPVS mode's leftovers removed first unless they
//! are drained, and the reader `/metrics` takes the connection counts
//! from. iptables mode's chains go with its first sync (stale chains of
//! ours), nftables mode's table after it ([`super::mode::deferred_leftovers`]).

use super::mode::FamilyProxier;
use super::mode_options;
use crate::config::Config;
use forward::Forwarder;
use health::{ConnectionsReader, PortConnections};
use ipvs::proxier::IpvsCleanup;
use model::IpFamily;
use proxier::Cleanup;
use std::sync::Arc;
use userspace::proxier::UserspaceProxier;

/// The proxiers of `families` and their connection counts.
pub async fn proxiers(
    config: &Config,
    families: &[IpFamily],
    ipvs_drained: bool,
) -> anyhow::Result<(Vec<FamilyProxier>, ConnectionsReader)> {
    if !ipvs_drained {
        IpvsCleanup { opts: mode_options::ipvs_apply_options(config) }.remove_leftovers().await;
    }
    let mut proxiers: Vec<FamilyProxier> = Vec::new();
    let mut forwarders = Vec::new();
    for &family in families {
        let forwarder = Forwarder::new(mode_options::forwarder(config));
        let proxier = UserspaceProxier::new(mode_options::userspace(config, family), forwarder.clone()).await?;
        proxiers.push((family, Box::new(proxier)));
        forwarders.push(forwarder);
    }
    Ok((proxiers, connections_reader(forwarders)))
}

/// Reads every listener's connection count at each scrape.
fn connections_reader(forwarders: Vec<Forwarder>) -> ConnectionsReader {
    Arc::new(move || {
        forwarders
            .iter()
            .flat_map(Forwarder::counters)
            .map(|(key, counters)| PortConnections {
                service_port_name: key.service_port.to_string(),
                protocol: key.service_port.protocol.as_lower().to_ascii_uppercase(),
                connections: counters.connections,
            })
            .collect()
    })
}
