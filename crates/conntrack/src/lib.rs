//! Conntrack cleanup, the "after" step of a sync: UDP has no connection
//! close, so a conntrack entry keeps sending a client's datagrams to the
//! endpoint NAT picked for its first packet — even after that endpoint is
//! gone, and a flow that met a service without endpoints stays un-NATed
//! after endpoints appear. As upstream's `CleanStaleEntries`, after each
//! sync the UDP flows are listed and those to a service address whose NAT
//! target is not a serving endpoint of it any more are deleted.
//!
//! [`flow`] is a conntrack entry and [`stale`] decides (both pure);
//! [`netlink`] talks ctnetlink (one dump, batched deletes, no `conntrack`
//! process) and [`apply`] runs the cleanup with it. [`sysctl`] sets the
//! conntrack sysctls of `--conntrack-*` at start-up.

pub mod apply;
mod error;
pub mod flow;
pub mod netlink;
pub mod stale;
pub mod sysctl;

pub use error::Error;
pub use flow::{Flow, Tuple, UdpFlow};
pub use stale::{Deletion, ServiceTargets, find_stale, find_stale_entries};
pub use sysctl::{ConntrackSettings, apply_conntrack_settings, conntrack_max};
