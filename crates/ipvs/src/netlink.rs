//! The IPVS generic-netlink codec: typed messages and attributes with
//! encode ([`netlink_packet_core::Emitable`]) and decode
//! ([`netlink_packet_core::Parseable`]) kept apart from any socket, in the
//! style of `netlink-packet-route`. [`crate::IpvsSocket`] sends them.

pub mod constants;
mod dest_attr;
mod message;
mod nla;
mod packet;
mod service_attr;
mod stats;

pub use dest_attr::DestAttr;
pub use message::{IpvsAttr, IpvsCmd, IpvsMessage};
pub use packet::GenlPacket;
pub use service_attr::{FlagsAttr, ServiceAttr};
pub use stats::{Stats, StatsAttr};
