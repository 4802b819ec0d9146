//! Leaving IPVS mode without a dropped connection: once another mode's
//! rules translate new connections, each virtual server IPVS mode left is
//! kept while it still has active connections (an established IPVS
//! connection needs its virtual server: with `expire_nodest_conn` its
//! packets are dropped once the real server is gone) and deleted when
//! they reach zero or the drain limit passes; the rest of IPVS mode
//! (`kube-ipvs0`, the companion chains, the ipsets) goes after the last
//! one, by [`crate::cleanup`].

use crate::apply::ApplyOptions;
use crate::apply::diff::is_excluded;
use crate::{Error, IpvsSocket, ServiceKey};
use model::IpFamily;

/// One virtual server IPVS mode left and its connections now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draining {
    /// Which virtual server.
    pub key: ServiceKey,
    /// Its real servers' active (established) connections, summed.
    pub active: u64,
    /// Its real servers' inactive connections (closing, or UDP), summed.
    pub inactive: u64,
}

/// The virtual servers of `family` outside `opts.exclude_cidrs`, with
/// their connection counts (`ipvsadm -Ln`'s ActiveConn and InActConn).
pub async fn draining(ipvs: &IpvsSocket, opts: &ApplyOptions, family: IpFamily) -> Result<Vec<Draining>, Error> {
    let mut out = Vec::new();
    for vs in ipvs.services().await? {
        let address = vs.key.address;
        if IpFamily::of(address) != family || is_excluded(address, &opts.exclude_cidrs) {
            continue;
        }
        let dests = ipvs.destinations(&vs.key).await?;
        let active = dests.iter().map(|d| u64::from(d.active_conns)).sum();
        let inactive = dests.iter().map(|d| u64::from(d.inactive_conns)).sum();
        out.push(Draining { key: vs.key, active, inactive });
    }
    Ok(out)
}
