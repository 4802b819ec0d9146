//! The IPVS generic-netlink codec (`crates/ipvs/src/netlink`): any bytes a
//! socket could read either decode or fail with a decode error, never a
//! panic; decoded services and destinations become a `VirtualServer` /
//! `RealServer` or an error; an IPVS message that decodes (of known
//! attributes) re-encodes to bytes that decode to the same message.

#![no_main]

use ipvs::netlink::{GenlPacket, IpvsMessage};
use ipvs::{RealServer, VirtualServer};
use libfuzzer_sys::fuzz_target;
use netlink_packet_core::{NetlinkMessage, NetlinkPayload};

fuzz_target!(|data: &[u8]| {
    let Ok(mut msg) = NetlinkMessage::<GenlPacket>::deserialize(data) else { return };
    // Controller messages are netlink-packet-generic's (decoded, never re-sent).
    let NetlinkPayload::InnerMessage(GenlPacket::Ipvs(genl)) = &msg.payload else { return };
    read_objects(&genl.payload);
    // Attributes we do not know are kept as `Other`, whose flag bits
    // netlink-packet-core does not carry through a round trip; the socket
    // ignores them. Messages of known attributes must round-trip exactly.
    if format!("{:?}", msg.payload).contains("Other(") {
        return;
    }
    // As the socket sends: the header's length set from the payload.
    msg.finalize();
    let mut bytes = vec![0; msg.buffer_len()];
    msg.serialize(&mut bytes);
    let again = NetlinkMessage::<GenlPacket>::deserialize(&bytes)
        .unwrap_or_else(|e| panic!("re-encoded {msg:?} does not decode: {e}"));
    assert_eq!(again.payload, msg.payload, "re-encoded message decodes differently");
});

/// What the socket makes of a reply: services, and destinations of a service of each family.
fn read_objects(message: &IpvsMessage) {
    if let Some(attrs) = message.service() {
        if let Ok(vs) = VirtualServer::from_attrs(attrs) {
            let _ = (vs.key.to_string(), vs.to_attrs());
        }
    }
    if let Some(attrs) = message.dest() {
        for family in [2, 10] {
            if let Ok(rs) = RealServer::from_attrs(attrs, family) {
                let _ = (rs.addr(), rs.to_attrs());
            }
        }
    }
}
