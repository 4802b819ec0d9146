//! IPVS mode: the kernel's IP Virtual Server tables do the load balancing,
//! ipsets keep the companion iptables rules few, and a dummy interface
//! (`kube-ipvs0`) holds the service addresses.
//!
//! Pipeline position: a backend. Per sync and IP family:
//! [`render::render`] (pure) turns the snapshot into an
//! [`render::IpvsState`] — virtual and real servers, addresses for the
//! dummy interface, ipset members and the companion iptables rules — and
//! [`apply::IpvsApplier::apply`] brings the kernel there, sending only the
//! differences. [`cleanup::apply_cleanup`] removes everything IPVS mode
//! made (`--cleanup`, or start-up in another mode). [`proxier::IpvsProxier`]
//! is the mode behind the [`::proxier::Proxier`] seam.
//!
//! Underneath: [`netlink`] is the IPVS generic-netlink codec (pure, tested
//! on bytes captured from `ipvsadm`); [`IpvsSocket`] sends it and reports a
//! kernel without IPVS as [`Error::IpvsUnavailable`]; [`ipset`] renders and
//! applies the sets with `ipset restore`; [`Links`] handles `kube-ipvs0`
//! over rtnetlink; the iptables rules are typed [`xtables`] rules, written
//! by its applier (this crate does not depend on iptables mode).

pub mod apply;
pub mod cleanup;
pub mod drain;
mod command;
pub mod conn_table;
mod dummy_link;
mod error;
pub mod ipset;
mod ipvs_socket;
pub mod netlink;
pub mod proxier;
mod real_server;
pub mod render;
mod request;
mod scheduler;
mod virtual_server;

pub use dummy_link::Links;
pub use error::Error;
pub use ipvs_socket::{IpvsSocket, Timeouts};
pub use real_server::{ForwardMethod, RealServer};
pub use request::Flags;
pub use scheduler::{Scheduler, UnknownScheduler};
pub use virtual_server::{IpProtocol, ServiceFlags, ServiceKey, VirtualServer};
