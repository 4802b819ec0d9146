//! What an explanation must know about the node beyond its rules: its
//! own addresses (`addrtype LOCAL`, `fib saddr type local`, and whether a
//! packet is delivered to the node or forwarded).

use crate::tracer::TraceContext;
use std::net::IpAddr;

/// The node whose rules are explained.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// Its local addresses (loopback is always local).
    pub addresses: Vec<IpAddr>,
}

impl Node {
    /// A node with these addresses.
    pub fn new(addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        Self { addresses: addresses.into_iter().collect() }
    }

    /// The tracer's view of it.
    pub fn trace_context(&self) -> TraceContext {
        TraceContext::new(self.addresses.iter().copied())
    }
}
