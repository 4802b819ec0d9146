//! What an explanation must know about the node beyond its rules: its
//! own addresses (`addrtype LOCAL`, `fib saddr type local`, and whether a
//! packet is delivered to the node or forwarded) — and whether they are
//! known at all: a saved dump does not say which addresses are the node's.

use crate::query::Query;
use crate::tracer::TraceContext;
use std::net::IpAddr;

/// The node whose rules are explained.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// Its local addresses (loopback is always local).
    pub addresses: Vec<IpAddr>,
    /// The addresses were not given (a dump read without `--node-ip`):
    /// only loopback is taken as local, and an explanation says so.
    pub addresses_unknown: bool,
}

impl Node {
    /// A node with these addresses.
    pub fn new(addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        Self { addresses: addresses.into_iter().collect(), addresses_unknown: false }
    }

    /// A node whose addresses nobody gave: only loopback is local.
    pub fn unknown() -> Self {
        Self { addresses: Vec::new(), addresses_unknown: true }
    }

    /// The tracer's view of it.
    pub fn trace_context(&self) -> TraceContext {
        TraceContext::new(self.addresses.iter().copied())
    }

    /// What the walk of `query` took for granted about this node, in
    /// words an operator can act on: with the addresses unknown, a
    /// destination other than loopback was taken as not the node's own
    /// (`--dst-type LOCAL`, `fib daddr type local` false; routed on), which
    /// turns a NodePort to the node's address into "no rule matched".
    pub fn assumptions(&self, query: &Query) -> Vec<String> {
        let destination = query.destination.ip();
        if !self.addresses_unknown || destination.is_loopback() {
            return Vec::new();
        }
        vec![format!(
            "the node's addresses are unknown (a dump read without --node-ip): {destination} was assumed not to be \
             one of them (addrtype LOCAL / fib daddr type local false, routed on); if it is the node's, \
             pass --node-ip {destination}"
        )]
    }
}
