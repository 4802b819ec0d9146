//! Where cluster state comes from. [`manifests`]: a YAML file of ordinary
//! Service / EndpointSlice / Node manifests, read at start-up and re-read
//! when it changes (the embedded default: no cluster needed). [`kube`]:
//! watchers on the API server for Services, EndpointSlices and this node.
//!
//! Pipeline position: sources feed the [`tracker::Tracker`], which turns
//! objects into the model.

mod error;
mod event;
pub mod kube;
pub mod lenient;
pub mod manifests;
mod read_fields;

pub use error::Error;
pub use event::SourceEvent;
