//! The packet to trace: who sends it, where to, and how it enters the node.

pub use model::Protocol;
use std::net::{IpAddr, SocketAddr};

/// Source port used when a test does not care which one it is.
pub const DEFAULT_SOURCE_PORT: u16 = 40000;

/// Where a packet enters the node's netfilter hooks; this decides which
/// chains it walks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Sent by a process on the node: OUTPUT (raw, mangle, nat, filter),
    /// then POSTROUTING (mangle, nat); if the (post-DNAT) destination is a
    /// local address it loops back over `lo` through PREROUTING (raw,
    /// mangle) and INPUT (mangle, filter) without a second NAT lookup.
    Local,
    /// Arriving on an interface, from a pod or an outside client:
    /// PREROUTING (raw, mangle, nat), the routing decision on the
    /// post-DNAT destination, then INPUT (mangle, filter, nat) if that is a
    /// local address, else FORWARD (mangle, filter) and POSTROUTING
    /// (mangle, nat).
    Inbound {
        /// The input interface, for `-i`. `None`: unknown, so both answers
        /// of every `-i` match are explored.
        interface: Option<String>,
    },
}

/// The first packet of a new connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// How it enters the node.
    pub origin: Origin,
    /// L4 protocol.
    pub protocol: Protocol,
    /// Source address.
    pub source: IpAddr,
    /// Source port (rarely matched; defaults to [`DEFAULT_SOURCE_PORT`]).
    pub source_port: u16,
    /// Destination address and port as the client sends it.
    pub destination: SocketAddr,
}

impl Packet {
    /// A packet from a process on the node itself.
    pub fn local(protocol: Protocol, source: IpAddr, destination: SocketAddr) -> Self {
        Self { origin: Origin::Local, protocol, source, source_port: DEFAULT_SOURCE_PORT, destination }
    }

    /// A packet arriving on an interface (from a pod or an outside client);
    /// the interface is unknown until [`Packet::via`] names it.
    pub fn inbound(protocol: Protocol, source: IpAddr, destination: SocketAddr) -> Self {
        Self {
            origin: Origin::Inbound { interface: None },
            protocol,
            source,
            source_port: DEFAULT_SOURCE_PORT,
            destination,
        }
    }

    /// Names the input interface of an inbound packet (no effect on a
    /// local one, which has none).
    pub fn via(mut self, interface: &str) -> Self {
        if let Origin::Inbound { interface: slot } = &mut self.origin {
            *slot = Some(interface.to_string());
        }
        self
    }

    /// Sets the source port.
    pub fn with_source_port(mut self, port: u16) -> Self {
        self.source_port = port;
        self
    }
}
