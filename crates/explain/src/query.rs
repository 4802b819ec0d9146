//! What `explain packet` is asked: the first packet of a new connection
//! and where it comes from.

use crate::tracer::{Packet, Protocol};
use serde::Serialize;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// Who sends the packet; decides which hooks it walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sender {
    /// A pod on this node (arrives on its veth).
    Pod,
    /// A process on the node itself (OUTPUT, not PREROUTING).
    Node,
    /// A client outside the node (arrives on an uplink).
    Outside,
}

/// The packet to explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// L4 protocol.
    pub protocol: Protocol,
    /// Source address and port.
    pub source: SocketAddr,
    /// Destination address and port.
    pub destination: SocketAddr,
    /// Who sends it.
    pub sender: Sender,
    /// The interface it arrives on (`None`: unknown, both answers of an
    /// interface match are explored). Ignored for [`Sender::Node`].
    pub in_interface: Option<String>,
}

impl Query {
    /// The tracer's packet for this query.
    pub fn packet(&self) -> Packet {
        let source: IpAddr = self.source.ip();
        let packet = match self.sender {
            Sender::Node => Packet::local(self.protocol, source, self.destination),
            Sender::Pod | Sender::Outside => Packet::inbound(self.protocol, source, self.destination),
        };
        let packet = packet.with_source_port(self.source.port());
        match &self.in_interface {
            Some(name) => packet.via(name),
            None => packet,
        }
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = match self.sender {
            Sender::Pod => "from a pod",
            Sender::Node => "from the node",
            Sender::Outside => "from outside",
        };
        write!(f, "{} {} -> {} ({from}", self.protocol, self.source, self.destination)?;
        match &self.in_interface {
            Some(name) if self.sender != Sender::Node => write!(f, ", in on {name})"),
            _ => f.write_str(")"),
        }
    }
}
