//! The node's facts a sync plans with.

use std::net::IpAddr;

/// What the host layer reads about the node on every sync.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// The node's local addresses (from its interfaces), any family.
    pub local_addresses: Vec<IpAddr>,
}
