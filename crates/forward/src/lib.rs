//! The userspace data path: sockets in the proxy process that accept
//! connections (TCP) and datagrams (UDP) and forward them to a service
//! port's endpoints. Used by userspace mode (one proxy port per service
//! port, reached through the portal rules) and, in every mode, by the
//! opt-in localhost NodePorts (`127.0.0.1:<nodePort>` without
//! `route_localnet`).
//!
//! Declarative, like the kernel modes: the caller renders the listeners it
//! wants ([`Listener`]) and [`Forwarder::apply`] opens the new ones, updates
//! the backends of the kept ones (their sockets stay, so a proxy port never
//! moves while its key lives) and closes the ones no longer wanted.
//! Established connections of a closed or updated listener are not cut.

mod api;
mod balancer;
mod limits;
mod port_range;
mod registry;
mod shared;
mod splice;
mod tally;
mod tcp;
mod udp;

pub use api::{Applied, Bound, Counters, Error, Forwarder, ForwarderOptions, Listener, ListenerKey, PortRange, Role};
pub use port_range::ParsePortRangeError;
