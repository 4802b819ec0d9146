//! What travels on our generic-netlink socket: controller messages (to
//! resolve the `IPVS` family id) and IPVS messages, told apart by the
//! netlink message type, so one socket serves both.

use super::message::IpvsMessage;
use netlink_packet_core::{
    DecodeError, NetlinkDeserializable, NetlinkHeader, NetlinkSerializable, NlaBuffer, NlasIterator,
    ParseableParametrized,
};
use netlink_packet_generic::GenlMessage;
use netlink_packet_generic::constants::{CTRL_ATTR_OP_POLICY, CTRL_ATTR_POLICY, GENL_ID_CTRL};
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
            check_ctrl_policies(payload)?;
            Ok(GenlPacket::Ctrl(GenlMessage::parse_with_param(payload, header.message_type)?))
        } else {
            Ok(GenlPacket::Ipvs(GenlMessage::parse_with_param(payload, header.message_type)?))
        }
    }
}

/// The generic-netlink header before a controller message's attributes.
const GENL_HDRLEN: usize = 4;

/// netlink-packet-generic 0.5 reads the nested attribute headers of
/// `CTRL_ATTR_POLICY` and `CTRL_ATTR_OP_POLICY` unchecked, and panics on
/// one shorter than a header. We never ask for policies (only the IPVS
/// family id); a controller message with such a header is refused here.
fn check_ctrl_policies(payload: &[u8]) -> Result<(), DecodeError> {
    for nla in NlasIterator::new(payload.get(GENL_HDRLEN..).unwrap_or_default()) {
        let nla = nla?;
        match nla.kind() {
            CTRL_ATTR_POLICY => {
                let policy = NlaBuffer::new_checked(nla.value())?;
                NlaBuffer::new_checked(policy.value())?;
            }
            CTRL_ATTR_OP_POLICY => {
                NlaBuffer::new_checked(nla.value())?;
            }
            _ => {}
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::NetlinkMessage;

    /// A controller reply whose `CTRL_ATTR_POLICY` holds a nested
    /// attribute claiming 2 bytes (shorter than its own header). Found by
    /// `fuzz/fuzz_targets/ipvs_netlink.rs` (its corpus keeps the input):
    /// netlink-packet-generic panicked on it.
    #[test]
    fn a_controller_policy_with_a_short_nested_attribute_is_a_decode_error() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&28u32.to_ne_bytes()); // length
        bytes.extend_from_slice(&GENL_ID_CTRL.to_ne_bytes());
        bytes.extend_from_slice(&[0; 10]); // flags, sequence, port
        bytes.extend_from_slice(&[1, 2, 0, 0]); // CTRL_CMD_NEWFAMILY, version 2
        bytes.extend_from_slice(&[8, 0, 8, 0]); // CTRL_ATTR_POLICY, 8 bytes
        bytes.extend_from_slice(&[2, 0, 1, 0]); // nested: length 2
        let decoded = NetlinkMessage::<GenlPacket>::deserialize(&bytes);
        assert!(decoded.is_err(), "{decoded:?}");
    }
}
