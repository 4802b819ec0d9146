//! What travels on our generic-netlink socket: controller messages (to
//! resolve the `IPVS` family id) and IPVS messages, told apart by the
//! netlink message type, so one socket serves both.

use super::message::IpvsMessage;
use netlink_packet_core::{
    DecodeError, NetlinkDeserializable, NetlinkHeader, NetlinkSerializable, ParseableParametrized,
};
use netlink_packet_generic::GenlMessage;
use netlink_packet_generic::constants::GENL_ID_CTRL;
use netlink_packet_generic::ctrl::GenlCtrl;

/// A generic-netlink message for the controller or for IPVS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenlPacket {
    /// `nlctrl` (family id 0x10), used to look up the IPVS family id.
    Ctrl(GenlMessage<GenlCtrl>),
    /// An IPVS message; its `resolved_family_id` is the netlink type.
    Ipvs(GenlMessage<IpvsMessage>),
}

impl NetlinkSerializable for GenlPacket {
    fn message_type(&self) -> u16 {
        match self {
            GenlPacket::Ctrl(m) => m.message_type(),
            GenlPacket::Ipvs(m) => m.message_type(),
        }
    }

    fn buffer_len(&self) -> usize {
        match self {
            GenlPacket::Ctrl(m) => NetlinkSerializable::buffer_len(m),
            GenlPacket::Ipvs(m) => NetlinkSerializable::buffer_len(m),
        }
    }

    fn serialize(&self, buffer: &mut [u8]) {
        match self {
            GenlPacket::Ctrl(m) => m.serialize(buffer),
            GenlPacket::Ipvs(m) => m.serialize(buffer),
        }
    }
}

impl NetlinkDeserializable for GenlPacket {
    type Error = DecodeError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, Self::Error> {
        if header.message_type == GENL_ID_CTRL {
            Ok(GenlPacket::Ctrl(GenlMessage::parse_with_param(payload, header.message_type)?))
        } else {
            Ok(GenlPacket::Ipvs(GenlMessage::parse_with_param(payload, header.message_type)?))
        }
    }
}

impl From<GenlMessage<IpvsMessage>> for GenlPacket {
    fn from(m: GenlMessage<IpvsMessage>) -> Self {
        GenlPacket::Ipvs(m)
    }
}

impl From<GenlMessage<GenlCtrl>> for GenlPacket {
    fn from(m: GenlMessage<GenlCtrl>) -> Self {
        GenlPacket::Ctrl(m)
    }
}

impl From<GenlPacket> for netlink_packet_core::NetlinkPayload<GenlPacket> {
    fn from(p: GenlPacket) -> Self {
        netlink_packet_core::NetlinkPayload::InnerMessage(p)
    }
}
