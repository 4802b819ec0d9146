//! Leaving IPVS mode without a dropped connection: once another mode's
//! rules translate new connections, each virtual server IPVS mode left is
//! kept while connections through it are still open (an established IPVS
//! connection needs its virtual server: with `expire_nodest_conn` its
//! packets are dropped once the real server is gone) and deleted when
//! none is, or when the drain limit passes; the rest of IPVS mode
//! (`kube-ipvs0`, the companion chains, the ipsets) goes after the last
//! one, by [`crate::cleanup`]. Open connections are counted in IPVS's
//! connection table ([`crate::conn_table`]), not by the real servers'
//! counters, which can stay "active" after the connections closed.

use crate::apply::ApplyOptions;
use crate::apply::diff::is_excluded;
use crate::{Error, IpvsSocket, ServiceKey, conn_table};
use model::IpFamily;

/// One virtual server IPVS mode left and its connections now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draining {
    /// Which virtual server.
    pub key: ServiceKey,
    /// Its connections still open in IPVS's connection table
    /// (established or closing; not `TIME_WAIT`).
    pub open: u64,
    /// Its real servers' `ActiveConn` counters, summed (for the log).
    pub active: u64,
    /// Its real servers' `InActConn` counters, summed (for the log).
    pub inactive: u64,
}

/// The virtual servers of `family` outside `opts.exclude_cidrs`, with
/// their open connections and counters (`ipvsadm -Ln`'s ActiveConn and
/// InActConn). Reads the connection table of the calling thread's netns.
pub async fn draining(ipvs: &IpvsSocket, opts: &ApplyOptions, family: IpFamily) -> Result<Vec<Draining>, Error> {
    let open = conn_table::open_connections()?;
    let mut out = Vec::new();
    for vs in ipvs.services().await? {
        let address = vs.key.address;
        if IpFamily::of(address) != family || is_excluded(address, &opts.exclude_cidrs) {
            continue;
        }
        let dests = ipvs.destinations(&vs.key).await?;
        let active = dests.iter().map(|d| u64::from(d.active_conns)).sum();
        let inactive = dests.iter().map(|d| u64::from(d.inactive_conns)).sum();
        let open = open.get(&(vs.key.protocol, address, vs.key.port)).copied().unwrap_or(0);
        out.push(Draining { key: vs.key, open, active, inactive });
    }
    Ok(out)
}
