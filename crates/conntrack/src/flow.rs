//! One conntrack entry as the kernel reports it over netlink: its
//! original and reply tuples (the reply tuple shows the NAT target), and
//! the narrower view of it the stale-flow decision needs.

use std::net::IpAddr;

/// `IPPROTO_UDP`.
pub const IPPROTO_UDP: u8 = 17;

/// One direction of a flow: protocol, addresses and ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tuple {
    /// L4 protocol number (`IPPROTO_UDP`, …).
    pub proto: u8,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (0 for protocols without ports).
    pub sport: u16,
    /// Destination port (0 for protocols without ports).
    pub dport: u16,
}

/// A conntrack entry: what is needed to judge it and to delete it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Flow {
    /// The original direction (client → service address).
    pub orig: Tuple,
    /// The reply direction (NAT target → client).
    pub reply: Tuple,
    /// The conntrack zone (`CTA_ZONE`), 0 when none.
    pub zone: u16,
}

/// The parts of a UDP flow the cleanup looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFlow {
    /// Original destination address: the service address the client used.
    pub orig_dst: IpAddr,
    /// Original destination port.
    pub orig_dport: u16,
    /// Reply source: the NAT target (the endpoint), or `orig_dst` when the
    /// flow was not NATed.
    pub reply_src: IpAddr,
}

impl Flow {
    /// The flow as [`crate::stale`] judges it, if it is a UDP flow.
    pub fn udp(&self) -> Option<UdpFlow> {
        (self.orig.proto == IPPROTO_UDP).then_some(UdpFlow {
            orig_dst: self.orig.dst,
            orig_dport: self.orig.dport,
            reply_src: self.reply.src,
        })
    }
}
