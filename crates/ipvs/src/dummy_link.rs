//! The dummy interface (`kube-ipvs0`) that holds the service addresses, so
//! the kernel treats them as local and IPVS sees the traffic in LOCAL_IN;
//! and the node's other local addresses, where NodePorts answer. Over
//! rtnetlink.

use crate::Error;
use futures::TryStreamExt;
use rtnetlink::packet_route::address::AddressMessage;
use rtnetlink::{Handle, LinkDummy};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// `ENODEV`: what the kernel answers for an unknown link name.
const ENODEV: i32 = 19;

/// An rtnetlink connection for the dummy interface and address queries.
#[derive(Debug)]
pub struct Links {
    handle: Handle,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Links {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Links {
    /// Opens an rtnetlink socket (in the calling thread's namespace).
    pub fn connect() -> Result<Self, Error> {
        let (conn, handle, _) = rtnetlink::new_connection().map_err(Error::NetlinkSocket)?;
        Ok(Self { handle, task: tokio::spawn(conn) })
    }

    /// The index of link `name`, or `None` if there is no such link.
    pub async fn link_index(&self, name: &str) -> Result<Option<u32>, Error> {
        let mut links = self.handle.link().get().match_name(name.to_string()).execute();
        match links.try_next().await {
            Ok(link) => Ok(link.map(|l| l.header.index)),
            Err(rtnetlink::Error::NetlinkError(e)) if e.code.is_some_and(|c| c.get() == -ENODEV) => Ok(None),
            Err(e) => Err(link_error(format!("look up link {name}"), e)),
        }
    }

    /// Makes sure the dummy link `name` exists; returns its index. Like
    /// upstream, it is left down: its addresses are local all the same.
    pub async fn ensure_dummy(&self, name: &str) -> Result<u32, Error> {
        if let Some(index) = self.link_index(name).await? {
            return Ok(index);
        }
        self.handle
            .link()
            .add(LinkDummy::new(name).build())
            .execute()
            .await
            .map_err(|e| link_error(format!("create dummy link {name}"), e))?;
        self.link_index(name)
            .await?
            .ok_or_else(|| Error::Link { operation: format!("create dummy link {name}"), detail: "link missing after creation".into() })
    }

    /// Deletes link `name` if it exists.
    pub async fn delete_link(&self, name: &str) -> Result<(), Error> {
        if let Some(index) = self.link_index(name).await? {
            self.handle.link().del(index).execute().await.map_err(|e| link_error(format!("delete link {name}"), e))?;
        }
        Ok(())
    }

    /// The addresses on link `index`.
    pub async fn addresses(&self, index: u32) -> Result<BTreeSet<IpAddr>, Error> {
        Ok(self.address_messages(Some(index)).await?.into_keys().collect())
    }

    /// Adds `addr` as a host address (/32 or /128) to link `index`.
    pub async fn bind(&self, index: u32, addr: IpAddr) -> Result<(), Error> {
        let prefix = if addr.is_ipv4() { 32 } else { 128 };
        self.handle
            .address()
            .add(index, addr, prefix)
            .execute()
            .await
            .map_err(|e| link_error(format!("bind {addr} to link {index}"), e))
    }

    /// Removes `addr` from link `index` (nothing if it is not there).
    pub async fn unbind(&self, index: u32, addr: IpAddr) -> Result<(), Error> {
        if let Some(msg) = self.address_messages(Some(index)).await?.remove(&addr) {
            self.handle
                .address()
                .del(msg)
                .execute()
                .await
                .map_err(|e| link_error(format!("unbind {addr} from link {index}"), e))?;
        }
        Ok(())
    }

    async fn address_messages(&self, index: Option<u32>) -> Result<BTreeMap<IpAddr, AddressMessage>, Error> {
        let mut req = self.handle.address().get();
        if let Some(i) = index {
            req = req.set_link_index_filter(i);
        }
        let msgs: Vec<AddressMessage> =
            req.execute().try_collect().await.map_err(|e| link_error("list addresses".to_string(), e))?;
        Ok(msgs
            .into_iter()
            .filter(|m| index.is_none_or(|i| m.header.index == i))
            .filter_map(|m| host::addresses::address_of(&m).map(|a| (a, m)))
            .collect())
    }
}

fn link_error(operation: String, e: rtnetlink::Error) -> Error {
    Error::Link { operation, detail: e.to_string() }
}
