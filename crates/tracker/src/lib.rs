//! The tracker: turns API objects (Services, EndpointSlices, this node's
//! Node, ServiceCIDRs) into the model ([`model::ServicePort`], [`model::Endpoint`],
//! [`model::NodeInfo`], [`model::Snapshot::service_cidrs`]) and records which services changed since the last
//! sync, for partial syncs, with upstream's change counts for the
//! metrics ([`ChangeCounts`]).
//!
//! Pipeline position: a source (API watchers or the manifests file) feeds
//! events or whole states into a [`Tracker`]; the runner takes
//! [`Tracker::snapshot`]s and hands them to a backend. Objects the proxy
//! cannot use are dropped here with one warning each (see [`Problem`] for
//! what is skipped and how much of the object goes with it); nothing
//! downstream ever sees them. Pure: no I/O, no tokio.

mod counts;
mod family_tracker;
mod merge;
mod meta;
mod node;
mod objects;
mod service;
mod service_cidr;
mod slice;
mod slices;
mod tracker;
mod warning;

pub use model::IpFamily;
pub use counts::ChangeCounts;
pub use node::{LABEL_TOPOLOGY_ZONE, TAINT_TO_BE_DELETED, node_host_ips};
pub use objects::Objects;
pub use service::{DEFAULT_AFFINITY_SECONDS, LABEL_HEADLESS, LABEL_SERVICE_PROXY_NAME};
pub use slice::LABEL_SERVICE_NAME;
pub use family_tracker::FamilyTracker;
pub use tracker::Tracker;
pub use warning::{ObjectKind, Problem, Warning, object_label};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
