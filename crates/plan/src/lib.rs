//! The service plan: what every proxy mode must decide before it names or
//! prints anything (upstream's per-service locals in `syncProxyRules`).
//!
//! Pipeline position: the tracker builds a [`model::Snapshot`]; a mode
//! turns it, its [`Options`] and the node's facts ([`NodeFacts`]) into a
//! [`SyncContext`] once per sync, then a [`PortPlan`] per service port, and
//! renders those (iptables chains and rules, IPVS virtual servers and
//! ipsets). Nothing here does I/O, and nothing here knows a chain name.

mod context;
mod local_traffic;
mod mark;
mod no_local;
mod node_facts;
mod options;
mod order;
mod port;

pub use context::{NodePorts, SyncContext};
pub use local_traffic::LocalTraffic;
pub use mark::Mark;
pub use node_facts::NodeFacts;
pub use model::IpFamily;
pub use no_local::NoLocalEndpoints;
pub use options::{LocalDetection, NodePortAddresses, Options};
pub use order::upstream_order;
pub use port::{PortPlan, Refusal};

#[cfg(test)]
mod tests;
