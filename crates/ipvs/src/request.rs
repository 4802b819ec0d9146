//! The IPVS requests this crate sends, built from [`VirtualServer`] and
//! [`RealServer`] exactly as `ipvsadm` builds them (same attributes, same
//! order), so the codec tests can compare our bytes with `ipvsadm`'s.

use crate::netlink::constants::AF_INET6;
use crate::netlink::{FlagsAttr, GenlPacket, IpvsAttr, IpvsCmd, IpvsMessage, ServiceAttr};
use crate::{RealServer, ServiceKey, VirtualServer};
use netlink_packet_core::{NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_generic::GenlMessage;

impl IpvsMessage {
    /// `ipvsadm -A`: add `vs`.
    pub fn new_service(vs: &VirtualServer) -> Self {
        Self::new(IpvsCmd::NewService, vec![IpvsAttr::Service(vs.to_attrs())])
    }

    /// `ipvsadm -E`: change `vs`'s scheduler, flags or timeout.
    pub fn set_service(vs: &VirtualServer) -> Self {
        Self::new(IpvsCmd::SetService, vec![IpvsAttr::Service(vs.to_attrs())])
    }

    /// `ipvsadm -D`: delete a service and its destinations.
    pub fn del_service(key: &ServiceKey) -> Self {
        Self::new(IpvsCmd::DelService, vec![IpvsAttr::Service(reference_attrs(key))])
    }

    /// Dump every service (send with [`Flags::Dump`]).
    pub fn get_services() -> Self {
        Self::new(IpvsCmd::GetService, vec![])
    }

    /// Get one service (send with [`Flags::Get`]).
    pub fn get_service(key: &ServiceKey) -> Self {
        Self::new(IpvsCmd::GetService, vec![IpvsAttr::Service(key.to_attrs())])
    }

    /// `ipvsadm -a`: add `rs` to `key`.
    pub fn new_dest(key: &ServiceKey, rs: &RealServer) -> Self {
        Self::new(IpvsCmd::NewDest, vec![IpvsAttr::Service(reference_attrs(key)), IpvsAttr::Dest(rs.to_attrs())])
    }

    /// `ipvsadm -e`: change `rs` of `key` (weight, method, thresholds).
    pub fn set_dest(key: &ServiceKey, rs: &RealServer) -> Self {
        Self::new(IpvsCmd::SetDest, vec![IpvsAttr::Service(reference_attrs(key)), IpvsAttr::Dest(rs.to_attrs())])
    }

    /// `ipvsadm -d`: remove `rs` from `key`.
    pub fn del_dest(key: &ServiceKey, rs: &RealServer) -> Self {
        Self::new(IpvsCmd::DelDest, vec![IpvsAttr::Service(reference_attrs(key)), IpvsAttr::Dest(rs.to_attrs())])
    }

    /// Dump the destinations of `key` (send with [`Flags::Dump`]).
    pub fn get_dests(key: &ServiceKey) -> Self {
        Self::new(IpvsCmd::GetDest, vec![IpvsAttr::Service(key.to_attrs())])
    }

    /// `ipvsadm -C`: delete every service.
    pub fn flush() -> Self {
        Self::new(IpvsCmd::Flush, vec![])
    }

    /// `ipvsadm --set tcp tcpfin udp` (seconds; 0 leaves a value unchanged).
    pub fn set_timeouts(tcp: u32, tcp_fin: u32, udp: u32) -> Self {
        Self::new(
            IpvsCmd::SetConfig,
            vec![IpvsAttr::TimeoutTcp(tcp), IpvsAttr::TimeoutTcpFin(tcp_fin), IpvsAttr::TimeoutUdp(udp)],
        )
    }

    /// Read the timeouts.
    pub fn get_config() -> Self {
        Self::new(IpvsCmd::GetConfig, vec![])
    }

    /// Read the IPVS version (also a cheap "is IPVS there" probe).
    pub fn get_info() -> Self {
        Self::new(IpvsCmd::GetInfo, vec![])
    }

    /// Wraps the message for the socket: generic-netlink header, the IPVS
    /// family id the kernel assigned, and netlink `flags`.
    pub fn into_netlink(self, family_id: u16, flags: Flags) -> NetlinkMessage<GenlPacket> {
        let mut genl = GenlMessage::from_payload(self);
        genl.set_resolved_family_id(family_id);
        let mut header = NetlinkHeader::default();
        header.flags = flags.bits();
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(GenlPacket::Ipvs(genl)));
        msg.finalize();
        msg
    }
}

/// Netlink flags of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flags {
    /// A change, acknowledged (`NLM_F_REQUEST | NLM_F_ACK`).
    Change,
    /// One object back (`NLM_F_REQUEST | NLM_F_ACK`, like `ipvsadm`).
    Get,
    /// Every object back (`NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP`).
    Dump,
}

impl Flags {
    /// The `nlmsg_flags` bits.
    pub fn bits(self) -> u16 {
        match self {
            Flags::Change | Flags::Get => NLM_F_REQUEST | NLM_F_ACK,
            Flags::Dump => NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP,
        }
    }
}

/// How `ipvsadm` names the service in destination and delete requests:
/// the key plus empty scheduling settings.
fn reference_attrs(key: &ServiceKey) -> Vec<ServiceAttr> {
    let mut attrs = key.to_attrs();
    attrs.push(ServiceAttr::Scheduler(String::new()));
    attrs.push(ServiceAttr::Flags(FlagsAttr { flags: 0, mask: u32::MAX }));
    attrs.push(ServiceAttr::Timeout(0));
    attrs.push(ServiceAttr::Netmask(if key.family() == AF_INET6 { 128 } else { u32::MAX }));
    attrs
}
