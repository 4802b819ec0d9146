//! The forwarder's API (fixed by the integrator so userspace mode and the
//! localhost NodePorts could be built at once; the bodies live in the
//! modules beside it).

use model::{Protocol, ServicePortName};
use std::net::SocketAddr;
use std::time::Duration;

/// Errors of the data path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A socket could not be bound.
    #[error("cannot bind {addr} ({protocol:?}) for {key}: {source}")]
    Bind {
        /// What the listener serves.
        key: String,
        /// The address asked for.
        addr: SocketAddr,
        /// TCP or UDP.
        protocol: Protocol,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// Every port of `--proxy-port-range` is taken.
    #[error("no free port in --proxy-port-range {0}")]
    RangeExhausted(PortRange),
    /// The data path serves TCP and UDP only.
    #[error("{0}: protocol {1:?} is not forwarded in user space")]
    Unsupported(String, Protocol),
}

/// `--proxy-port-range` (upstream's `portRange`): `first-last`, `first+count`
/// or a single port; absent = any free port the kernel gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    /// First port, inclusive.
    pub first: u16,
    /// Last port, inclusive.
    pub last: u16,
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// Settings fixed at start-up.
#[derive(Debug, Clone)]
pub struct ForwarderOptions {
    /// Ports for listeners bound with port 0 (`--proxy-port-range`).
    pub port_range: Option<PortRange>,
    /// A UDP client session is closed after this long without datagrams
    /// (`--udp-timeout`, upstream's `udpIdleTimeout`, 250 ms).
    pub udp_idle_timeout: Duration,
}

/// Why a listener exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Userspace mode's proxy port of a service port (portal rules send
    /// ClusterIP, external, LoadBalancer and NodePort traffic to it).
    ProxyPort,
    /// Userspace mode's second proxy port of a service port whose
    /// externalTrafficPolicy is Local: NodePort, externalIP and
    /// LoadBalancer traffic from outside the node, served by this node's
    /// endpoints only (the node's and its pods' own traffic to those
    /// addresses stays on [`Role::ProxyPort`], as upstream's later modes
    /// short-circuit it to the cluster-wide endpoints).
    ExternalProxyPort,
    /// `127.0.0.1:<nodePort>` (or `[::1]`) for the opt-in localhost NodePorts.
    LocalhostNodePort,
}

/// What identifies a listener across syncs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListenerKey {
    /// The service port it serves (its protocol is the socket's).
    pub service_port: ServicePortName,
    /// Why it exists.
    pub role: Role,
}

/// One listener wanted by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Identity across syncs.
    pub key: ListenerKey,
    /// Where to bind; port 0 = a port from the range (or any free port).
    /// Kept listeners keep their socket whatever this says.
    pub bind: SocketAddr,
    /// Ready endpoints, in the order round-robin visits them; empty =
    /// connections are refused (TCP reset) and datagrams dropped.
    pub backends: Vec<SocketAddr>,
    /// ClientIP session affinity and its timeout.
    pub affinity: Option<Duration>,
}

/// A listener open after [`Forwarder::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// Which.
    pub key: ListenerKey,
    /// The address its socket is bound to (the proxy port).
    pub addr: SocketAddr,
}

/// What [`Forwarder::apply`] did.
#[derive(Debug, Default)]
pub struct Applied {
    /// Every listener open now (kept and new).
    pub bound: Vec<Bound>,
    /// Listeners that could not be opened (the others are served).
    pub failed: Vec<(ListenerKey, Error)>,
}

/// Counters of one listener since it was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// TCP connections accepted, or UDP client sessions opened.
    pub connections: u64,
    /// Connections or sessions open now.
    pub active: u64,
    /// Connections no endpoint took (none ready, or every one refused).
    pub failed: u64,
    /// Bytes from clients to endpoints.
    pub bytes_in: u64,
    /// Bytes from endpoints to clients.
    pub bytes_out: u64,
}

/// The data path: a cheap handle (clone it freely) to the listeners, which
/// run as tasks on the tokio runtime it was created on.
#[derive(Debug, Clone)]
pub struct Forwarder {
    inner: std::sync::Arc<crate::registry::Registry>,
}

impl Forwarder {
    /// A forwarder with no listeners. Must be called inside a tokio runtime
    /// (its listeners' tasks run there). Raises the process's open-files
    /// soft limit to its hard limit (each connection holds descriptors).
    pub fn new(options: ForwarderOptions) -> Self {
        Self { inner: std::sync::Arc::new(crate::registry::Registry::new(options)) }
    }

    /// Makes the open listeners exactly `wanted` (by key): opens new ones,
    /// updates kept ones' backends and affinity, closes the rest. A closed
    /// listener's socket whose exact address (nonzero port, same protocol)
    /// a new key asks for is handed to that key instead of being reopened.
    /// Established TCP connections outlive their listener; UDP sessions end
    /// with it (they answer from its socket).
    pub fn apply(&self, wanted: &[Listener]) -> Applied {
        self.inner.apply(wanted)
    }

    /// Counters of every open listener.
    pub fn counters(&self) -> Vec<(ListenerKey, Counters)> {
        self.inner.counters()
    }
}
