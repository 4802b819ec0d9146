//! IPVS mode: the kernel's IP Virtual Server tables do the load balancing,
//! ipsets keep the companion iptables rules few, and a dummy interface
//! (`kube-ipvs0`) holds the service addresses.
//!
//! Pipeline position: a backend. [`netlink`] is the IPVS generic-netlink
//! codec (pure); [`IpvsSocket`] sends it to the kernel.

pub mod apply;
pub mod cleanup;
mod command;
mod dummy_link;
mod error;
pub mod ipset;
mod ipvs_socket;
pub mod netlink;
mod real_server;
pub mod render;
mod scheduler;
mod request;
mod virtual_server;

pub use dummy_link::Links;
pub use error::Error;
pub use ipvs_socket::{IpvsSocket, Timeouts};
pub use real_server::{ForwardMethod, RealServer};
pub use request::Flags;
pub use scheduler::{Scheduler, UnknownScheduler};
pub use virtual_server::{IpProtocol, ServiceFlags, ServiceKey, VirtualServer};
