//! The proxy's view of the cluster: service ports, their endpoints and this
//! node, plus [`topology`], the one pure function every backend uses to pick
//! which endpoints serve which traffic.
//!
//! Pipeline position: the tracker builds a [`Snapshot`] from API objects; the
//! backends render it. Nothing here does I/O.

mod endpoint;
mod family;
mod hints;
mod name;
mod name_order;
mod node;
mod node_name;
mod service;
mod shared_map;
mod snapshot;
pub mod topology;

pub use endpoint::Endpoint;
pub use family::IpFamily;
pub use hints::EndpointHints;
pub use node::NodeInfo;
pub use node_name::NodeName;
pub use name::{ServiceName, ServiceNameParts, ServicePortName, ServicePortNameParts, ports_of};
pub use name_order::sort_by_port_name;
pub use service::{Protocol, ServicePort};
pub use shared_map::SharedMap;
pub use snapshot::{ChangeSet, Snapshot};
