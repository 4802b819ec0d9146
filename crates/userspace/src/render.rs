//! Userspace mode's rendering (pure: no kernel, no sockets): what each
//! service port needs, from `plan::PortPlan` ([`planned`]), as listeners
//! for the `forward` crate ([`listeners`]) and, once those are bound, as
//! portal rules ([`portal_rules`]) sending each address of the port to its
//! proxy port.

mod listeners;
mod node_ports;
mod planned;
mod portals;
mod rules;
#[cfg(test)]
mod tests;

pub use listeners::listeners;
pub use planned::{Planned, planned};
pub use rules::portal_rules;

use forward::ListenerKey;
use std::collections::BTreeMap;

/// The port each bound listener got (`forward::Applied::bound`).
pub type ProxyPorts = BTreeMap<ListenerKey, u16>;
