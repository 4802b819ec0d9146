//! The kernel side: dump the conntrack table over netlink and delete the
//! stale UDP entries in batches, in the caller's network namespace.

use crate::Error;
use crate::flow::{Flow, UdpFlow};
use crate::netlink::codec::{AF_INET, AF_INET6};
use crate::netlink::{ConntrackSocket, DeleteOutcome};
use crate::stale::{Deletion, ServiceTargets, find_stale_entries};
use model::{IpFamily, Snapshot};
use std::net::IpAddr;

/// Dumps the conntrack entries of `family` and deletes the stale UDP ones
/// for `snapshot` (see [`crate::stale`]); returns one [`Deletion`] per
/// entry the kernel deleted (entries that expired meanwhile are not
/// counted), sorted. Does nothing when there is no UDP service.
pub async fn apply_stale_flow_cleanup(snapshot: &Snapshot, node_ips: &[IpAddr], family: IpFamily) -> Result<Vec<Deletion>, Error> {
    let targets = ServiceTargets::new(snapshot, node_ips);
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    with_socket(move |sock| {
        let stale = find_stale_entries(&sock.dump(nfproto(family))?, &targets);
        let outcome = sock.delete(&stale)?;
        let mut deletions: Vec<Deletion> = outcome.deleted.iter().filter_map(Flow::udp).map(|f| Deletion::of(&f)).collect();
        deletions.sort();
        Ok(deletions)
    })
    .await
}

/// Every conntrack entry of `family`, in one dump.
pub async fn list_flows(family: IpFamily) -> Result<Vec<Flow>, Error> {
    with_socket(move |sock| sock.dump(nfproto(family))).await
}

/// The UDP entries of `family`, as the cleanup judges them.
pub async fn list_udp_flows(family: IpFamily) -> Result<Vec<UdpFlow>, Error> {
    Ok(list_flows(family).await?.iter().filter_map(Flow::udp).collect())
}

/// Deletes `flows` by their original tuples, in batches.
pub async fn delete_flows(flows: Vec<Flow>) -> Result<DeleteOutcome, Error> {
    with_socket(move |sock| sock.delete(&flows)).await
}

fn nfproto(family: IpFamily) -> u8 {
    match family {
        IpFamily::V4 => AF_INET,
        IpFamily::V6 => AF_INET6,
    }
}

/// Opens a socket here (in this thread's network namespace) and runs `f`
/// with it on a blocking thread.
async fn with_socket<T: Send + 'static>(
    f: impl FnOnce(&mut ConntrackSocket) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let mut sock = ConntrackSocket::connect()?;
    tokio::task::spawn_blocking(move || f(&mut sock)).await.map_err(|e| Error::Task(e.to_string()))?
}
