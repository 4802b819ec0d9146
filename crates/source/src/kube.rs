//! The API server source: a client configured as upstream kube-proxy
//! configures its own (`--kubeconfig`, `--master`, in-cluster; the
//! config file's `clientConnection`), and watchers for Services,
//! discovery.k8s.io/v1 EndpointSlices, this node's Node and
//! networking.k8s.io/v1 ServiceCIDRs that keep a shared
//! [`tracker::Tracker`] equal to the cluster.
//!
//! Use:
//! ```no_run
//! # async fn demo() -> Result<(), source::kube::Error> {
//! use source::kube::{ClientSettings, SourceEvent, WatchOptions};
//! use std::sync::{Arc, Mutex};
//! let client = source::kube::client(&ClientSettings::default()).await?;
//! let tracker = Arc::new(Mutex::new(tracker::Tracker::new("node-1")));
//! tokio::spawn(source::kube::run(client, tracker, WatchOptions::default(), |event| match event {
//!     SourceEvent::InitialListDone => { /* open the runner's start-up gate */ }
//!     SourceEvent::Changed => { /* ask the runner for a sync */ }
//! }));
//! # Ok(()) }
//! ```
//!
//! Memory: no reflector store and no buffered list. Each object goes into
//! the tracker (which keeps only what the proxy needs) as it arrives and
//! is dropped (a streaming list sends one object per event; only the
//! fallback list at resourceVersion 0 comes in one response); the source
//! keeps one `namespace/name` key per object, to find what a re-list no
//! longer shows.
//!
//! Not supported: protobuf (`clientConnection.contentType` other than JSON
//! is logged and JSON is used), `acceptContentTypes`, client-side
//! exec/auth plugins beyond what kube supports.

mod backoff;
mod connection;
mod error;
pub(crate) mod kinds;
pub(crate) mod list_split;
mod rate_limit;
mod reflector;
mod relist;
mod watch;

pub use crate::SourceEvent;
pub use backoff::Backoff;
pub use connection::{ClientSettings, client, client_from_config, config};
pub use error::Error;
pub use reflector::INITIAL_EVENTS_END;
pub use watch::{LABEL_SELECTOR, WATCHED_RESOURCES, WatchOptions, run};
