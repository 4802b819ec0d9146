//! Tiny TCP and UDP echo servers that answer with their name and the peer
//! they saw, and the client side that talks to them from inside a network
//! namespace: the two ends of every end-to-end traffic check.
//!
//! A server is started inside a pod's namespace without an extra binary: its
//! sockets are bound on a thread that entered the namespace (so they belong
//! to it), then served by plain blocking threads until the [`EchoServer`] is
//! dropped. Every answer is one line,
//! `ep=<name> local=<ip:port> peer=<ip:port>\n`: on accept for TCP, per
//! datagram for UDP. `local` is the address the packet finally reached (after
//! any DNAT), `peer` the source the endpoint saw (after any SNAT).
//!
//! The client ([`probe`]) makes fresh connections (or sends fresh datagrams)
//! from inside a namespace and tells an answer from a refusal (TCP RST or
//! ICMP port-unreachable: a REJECT) and from silence (a DROP).

mod answer;
mod client;
mod server;
#[cfg(test)]
mod tests;

pub use answer::Answer;
pub use client::{Attempt, Outcome, Probe, Proto, probe};
pub use server::EchoServer;
