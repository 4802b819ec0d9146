//! One backend address of a service port.

use crate::{EndpointHints, NodeName};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// One endpoint of one service port, with its EndpointSlice conditions
/// already resolved (`ready` unset means ready, `serving` unset means
/// `ready`, `terminating` unset means false).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    /// Pod (or other backend) address.
    pub ip: IpAddr,
    /// Target port on the backend.
    pub port: u16,
    /// `nodeName` of the endpoint, if the slice gave one.
    pub node_name: Option<NodeName>,
    /// The endpoint runs on this proxy's node.
    pub is_local: bool,
    /// Ready condition.
    pub ready: bool,
    /// Serving condition.
    pub serving: bool,
    /// Terminating condition.
    pub terminating: bool,
    /// Topology hints (`hints.forZones` / `hints.forNodes`); `None` when
    /// the slice gave none. Shared: every port of a slice's endpoint, and
    /// every snapshot, holds the same hints.
    pub hints: Option<Arc<EndpointHints>>,
}

impl Endpoint {
    /// A ready, serving, non-terminating endpoint.
    pub fn ready(ip: IpAddr, port: u16, node_name: Option<&str>, is_local: bool) -> Self {
        Self {
            ip,
            port,
            node_name: node_name.map(NodeName::from),
            is_local,
            ready: true,
            serving: true,
            terminating: false,
            hints: None,
        }
    }

    /// This endpoint with `hints` (none when `None`).
    pub fn with_hints(self, hints: Option<EndpointHints>) -> Self {
        Self { hints: hints.map(Arc::new), ..self }
    }

    /// `ip:port` (IPv6 in brackets), as upstream prints endpoints.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.port)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.addr())
    }
}
