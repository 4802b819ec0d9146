//! The IPVS generic-netlink socket: resolves the `IPVS` family, then sends
//! the requests of [`crate::request`] and decodes the replies. The only part
//! of the codec that talks to the kernel; async, on `netlink-proto`.
//!
//! IPVS state is per network namespace: the socket acts on the namespace of
//! the thread that connects it.
//!
//! The kernel runs one dump per netlink socket at a time and refuses a
//! second one with `EBUSY` until the first is read to its end, so dumps
//! (listings) take turns; other requests may be in flight together.

use crate::netlink::constants::IPVS_GENL_NAME;
use crate::netlink::{GenlPacket, IpvsAttr, IpvsMessage};
use crate::{Error, Flags, RealServer, ServiceKey, VirtualServer};
use futures::StreamExt;
use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload};
use netlink_packet_generic::GenlMessage;
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_proto::ConnectionHandle;
use netlink_sys::SocketAddr;
use netlink_sys::protocols::NETLINK_GENERIC;

/// `ENOENT`: what the controller answers for an unknown family.
const ENOENT: i32 = 2;

/// IPVS connection timeouts in seconds (`ipvsadm --set`); 0 leaves a value
/// as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// Established TCP connections.
    pub tcp: u32,
    /// TCP connections after FIN.
    pub tcp_fin: u32,
    /// UDP "connections".
    pub udp: u32,
}

/// A connected IPVS generic-netlink socket.
#[derive(Debug)]
pub struct IpvsSocket {
    handle: ConnectionHandle<GenlPacket>,
    family_id: u16,
    task: tokio::task::JoinHandle<()>,
    /// Held while a dump runs (see the module doc).
    dump_turn: tokio::sync::Mutex<()>,
}

impl Drop for IpvsSocket {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl IpvsSocket {
    /// Opens a generic-netlink socket and looks up the `IPVS` family.
    /// [`Error::IpvsUnavailable`] means the kernel has no IPVS. Must run
    /// inside a tokio runtime.
    pub async fn connect() -> Result<Self, Error> {
        let (conn, handle, _unsolicited) =
            netlink_proto::new_connection::<GenlPacket>(NETLINK_GENERIC).map_err(Error::NetlinkSocket)?;
        let task = tokio::spawn(conn);
        let family_id = resolve_family(&handle).await?;
        Ok(Self { handle, family_id, task, dump_turn: tokio::sync::Mutex::new(()) })
    }

    /// The family id the kernel assigned to IPVS.
    pub fn family_id(&self) -> u16 {
        self.family_id
    }

    /// Every virtual service (`ipvsadm -Ln`, services only).
    pub async fn services(&self) -> Result<Vec<VirtualServer>, Error> {
        let replies = self.request(IpvsMessage::get_services(), Flags::Dump, || "list IPVS services".into()).await?;
        replies.iter().filter_map(IpvsMessage::service).map(|attrs| decoded(VirtualServer::from_attrs(attrs), "list IPVS services")).collect()
    }

    /// One virtual service, or `None` if it does not exist.
    pub async fn service(&self, key: &ServiceKey) -> Result<Option<VirtualServer>, Error> {
        let op = || format!("get IPVS service {key}");
        match self.request(IpvsMessage::get_service(key), Flags::Get, op).await {
            Ok(replies) => match replies.iter().find_map(IpvsMessage::service) {
                Some(attrs) => decoded(VirtualServer::from_attrs(attrs), &op()).map(Some),
                None => Ok(None),
            },
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Adds a virtual service.
    pub async fn add_service(&self, vs: &VirtualServer) -> Result<(), Error> {
        self.change(IpvsMessage::new_service(vs), || format!("add IPVS service {} ({})", vs.key, vs.scheduler)).await
    }

    /// Changes a virtual service's scheduler, flags, timeout or netmask.
    pub async fn update_service(&self, vs: &VirtualServer) -> Result<(), Error> {
        self.change(IpvsMessage::set_service(vs), || format!("update IPVS service {} ({})", vs.key, vs.scheduler)).await
    }

    /// Deletes a virtual service and its real servers.
    pub async fn delete_service(&self, key: &ServiceKey) -> Result<(), Error> {
        self.change(IpvsMessage::del_service(key), || format!("delete IPVS service {key}")).await
    }

    /// The real servers of a virtual service, with their connection counts.
    pub async fn destinations(&self, key: &ServiceKey) -> Result<Vec<RealServer>, Error> {
        let op = || format!("list real servers of IPVS service {key}");
        let replies = self.request(IpvsMessage::get_dests(key), Flags::Dump, op).await?;
        replies
            .iter()
            .filter_map(IpvsMessage::dest)
            .map(|attrs| decoded(RealServer::from_attrs(attrs, key.family()), &op()))
            .collect()
    }

    /// Adds a real server to a virtual service.
    pub async fn add_destination(&self, key: &ServiceKey, rs: &RealServer) -> Result<(), Error> {
        self.change(IpvsMessage::new_dest(key, rs), || format!("add real server {} to IPVS service {key}", rs.addr())).await
    }

    /// Changes a real server's weight, method or thresholds.
    pub async fn update_destination(&self, key: &ServiceKey, rs: &RealServer) -> Result<(), Error> {
        let op = || format!("set real server {} of IPVS service {key} to weight {}", rs.addr(), rs.weight);
        self.change(IpvsMessage::set_dest(key, rs), op).await
    }

    /// Removes a real server from a virtual service.
    pub async fn delete_destination(&self, key: &ServiceKey, rs: &RealServer) -> Result<(), Error> {
        let op = || format!("delete real server {} from IPVS service {key}", rs.addr());
        self.change(IpvsMessage::del_dest(key, rs), op).await
    }

    /// Deletes every virtual service (`ipvsadm -C`).
    pub async fn flush(&self) -> Result<(), Error> {
        self.change(IpvsMessage::flush(), || "flush IPVS services".into()).await
    }

    /// Sets the connection timeouts (`ipvsadm --set`).
    pub async fn set_timeouts(&self, t: Timeouts) -> Result<(), Error> {
        let op = || format!("set IPVS timeouts tcp={}s tcpfin={}s udp={}s", t.tcp, t.tcp_fin, t.udp);
        self.change(IpvsMessage::set_timeouts(t.tcp, t.tcp_fin, t.udp), op).await
    }

    /// Reads the connection timeouts.
    pub async fn timeouts(&self) -> Result<Timeouts, Error> {
        let replies = self.request(IpvsMessage::get_config(), Flags::Get, || "get IPVS timeouts".into()).await?;
        let mut t = Timeouts::default();
        for attr in replies.iter().flat_map(|m| &m.attrs) {
            match attr {
                IpvsAttr::TimeoutTcp(v) => t.tcp = *v,
                IpvsAttr::TimeoutTcpFin(v) => t.tcp_fin = *v,
                IpvsAttr::TimeoutUdp(v) => t.udp = *v,
                _ => {}
            }
        }
        Ok(t)
    }

    /// The IPVS version, e.g. `0x010201` for 1.2.1.
    pub async fn version(&self) -> Result<u32, Error> {
        let replies = self.request(IpvsMessage::get_info(), Flags::Get, || "get IPVS version".into()).await?;
        Ok(replies
            .iter()
            .flat_map(|m| &m.attrs)
            .find_map(|a| match a {
                IpvsAttr::InfoVersion(v) => Some(*v),
                _ => None,
            })
            .unwrap_or_default())
    }

    /// Checks that the kernel has the scheduler `name`, as upstream's
    /// `CanUseIPVSProxier` does: fine if a virtual server already uses it,
    /// else a throw-away virtual server on 198.51.100.0:20000 (TEST-NET-2)
    /// is added with it and deleted. The kernel loads `ip_vs_<name>` on
    /// demand; [`Error::SchedulerUnavailable`] means it could not.
    pub async fn check_scheduler(&self, name: &str) -> Result<(), Error> {
        if self.services().await?.iter().any(|vs| vs.scheduler == name) {
            return Ok(());
        }
        let probe = VirtualServer::new(ServiceKey::new([198, 51, 100, 0].into(), crate::IpProtocol::Tcp, 20000), name);
        if let Err(e) = self.add_service(&probe).await {
            return Err(match e {
                Error::Kernel { source, .. } => Error::SchedulerUnavailable { scheduler: name.to_string(), source },
                other => other,
            });
        }
        self.delete_service(&probe.key).await
    }

    async fn change(&self, msg: IpvsMessage, operation: impl Fn() -> String) -> Result<(), Error> {
        self.request(msg, Flags::Change, operation).await.map(|_| ())
    }

    /// Sends one request and collects the IPVS messages of the reply; a
    /// kernel error becomes [`Error::Kernel`] naming `operation`. A dump
    /// waits for its turn and keeps it until its last reply is read.
    async fn request(
        &self,
        msg: IpvsMessage,
        flags: Flags,
        operation: impl Fn() -> String,
    ) -> Result<Vec<IpvsMessage>, Error> {
        let _turn = match flags {
            Flags::Dump => Some(self.dump_turn.lock().await),
            _ => None,
        };
        let nl = msg.into_netlink(self.family_id, flags);
        let mut replies = self
            .handle
            .request(nl, SocketAddr::new(0, 0))
            .map_err(|e| Error::ConnectionClosed { operation: operation(), reason: e.to_string() })?;
        let mut out = Vec::new();
        while let Some(reply) = replies.next().await {
            match reply.payload {
                NetlinkPayload::InnerMessage(GenlPacket::Ipvs(genl)) => out.push(genl.payload),
                NetlinkPayload::Error(e) if e.code.is_some() => {
                    return Err(Error::Kernel { operation: operation(), source: e.to_io() });
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// Asks `nlctrl` for the id of the `IPVS` family.
async fn resolve_family(handle: &ConnectionHandle<GenlPacket>) -> Result<u16, Error> {
    let mut genl = GenlMessage::from_payload(GenlCtrl {
        cmd: GenlCtrlCmd::GetFamily,
        nlas: vec![GenlCtrlAttrs::FamilyName(IPVS_GENL_NAME.to_string())],
    });
    genl.finalize();
    let mut msg = NetlinkMessage::from(GenlPacket::Ctrl(genl));
    msg.header.flags = NLM_F_REQUEST | NLM_F_ACK;
    msg.finalize();
    let operation = || "resolve generic netlink family IPVS".to_string();
    let mut replies = handle
        .request(msg, SocketAddr::new(0, 0))
        .map_err(|e| Error::ConnectionClosed { operation: operation(), reason: e.to_string() })?;
    let mut family_id = None;
    while let Some(reply) = replies.next().await {
        match reply.payload {
            NetlinkPayload::InnerMessage(GenlPacket::Ctrl(ctrl)) => {
                family_id = family_id.or(ctrl.payload.nlas.iter().find_map(|a| match a {
                    GenlCtrlAttrs::FamilyId(id) => Some(*id),
                    _ => None,
                }));
            }
            NetlinkPayload::Error(e) => match e.code {
                Some(code) if code.get() == -ENOENT => return Err(Error::IpvsUnavailable(e.to_io().to_string())),
                Some(_) => return Err(Error::Kernel { operation: operation(), source: e.to_io() }),
                None => {}
            },
            _ => {}
        }
    }
    family_id.ok_or_else(|| Error::IpvsUnavailable("the controller named no family id".to_string()))
}

fn decoded<T>(result: Result<T, netlink_packet_core::DecodeError>, operation: &str) -> Result<T, Error> {
    result.map_err(|e| Error::Decode { operation: operation.to_string(), reason: e.to_string() })
}
