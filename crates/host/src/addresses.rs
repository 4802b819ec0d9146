//! The node's local addresses, read over rtnetlink. Proxiers read them on
//! every sync, as upstream does (one address dump): an address added or
//! removed after start-up is served from the next sync on.

use crate::Error;
use futures::TryStreamExt;
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use std::net::IpAddr;

/// Every address on every interface (IFA_LOCAL where present, which is
/// the local end of point-to-point links, else IFA_ADDRESS), in the order
/// the kernel lists them, both families (upstream's `GetNodeIPs` for
/// `nodePortAddresses`).
pub async fn read_local_addresses() -> Result<Vec<IpAddr>, Error> {
    Ok(dump_addresses()
        .await?
        .iter()
        .filter_map(address_of)
        .collect())
}

/// Every address of every link except the one named `except` (IPVS mode's
/// dummy interface), without loopback and IPv6 link-local ones, sorted and
/// without duplicates: where NodePorts answer when `nodePortAddresses` is
/// unset (upstream's `GetAllLocalAddressesExcept`).
pub async fn read_local_addresses_except(except: &str) -> Result<Vec<IpAddr>, Error> {
    let (messages, skip) = with_handle(|handle| async move {
        let messages: Vec<AddressMessage> = handle.address().get().execute().try_collect().await?;
        let skip = link_index(&handle, except).await?;
        Ok((messages, skip))
    })
    .await?;
    let kept = messages
        .iter()
        .filter(|m| Some(m.header.index) != skip)
        .filter_map(address_of)
        .filter(|a| !a.is_loopback() && !is_ipv6_link_local(a));
    let sorted: std::collections::BTreeSet<IpAddr> = kept.collect();
    Ok(sorted.into_iter().collect())
}

/// The index of the link named `name`; `None` when there is none.
async fn link_index(
    handle: &rtnetlink::Handle,
    name: &str,
) -> Result<Option<u32>, rtnetlink::Error> {
    const ENODEV: i32 = 19;
    match handle
        .link()
        .get()
        .match_name(name.to_string())
        .execute()
        .try_next()
        .await
    {
        Ok(link) => Ok(link.map(|l| l.header.index)),
        Err(rtnetlink::Error::NetlinkError(e)) if e.code.is_some_and(|c| c.get() == -ENODEV) => {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

async fn dump_addresses() -> Result<Vec<AddressMessage>, Error> {
    with_handle(|handle| async move { handle.address().get().execute().try_collect().await }).await
}

/// Runs `requests` on a fresh rtnetlink connection in the calling
/// thread's namespace.
async fn with_handle<T, F>(requests: impl FnOnce(rtnetlink::Handle) -> F) -> Result<T, Error>
where
    F: Future<Output = Result<T, rtnetlink::Error>>,
{
    let (connection, handle, _) = rtnetlink::new_connection().map_err(|source| Error::Netlink {
        operation: "address dump".to_string(),
        source,
    })?;
    let task = tokio::spawn(connection);
    let result = requests(handle).await;
    task.abort();
    result.map_err(|err| Error::Netlink {
        operation: "address dump".to_string(),
        source: std::io::Error::other(err.to_string()),
    })
}

/// An address message's own address: `IFA_LOCAL` if present, else `IFA_ADDRESS`.
pub fn address_of(msg: &AddressMessage) -> Option<IpAddr> {
    let local = msg.attributes.iter().find_map(|a| match a {
        AddressAttribute::Local(ip) => Some(*ip),
        _ => None,
    });
    local.or_else(|| {
        msg.attributes.iter().find_map(|a| match a {
            AddressAttribute::Address(ip) => Some(*ip),
            _ => None,
        })
    })
}

fn is_ipv6_link_local(addr: &IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}
