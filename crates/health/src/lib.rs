//! What kube-proxy answers over HTTP, byte-compatible with upstream: the
//! per-service health-check node ports that cloud load balancers probe for
//! `externalTrafficPolicy: Local` services ([`ServiceHealthServers`]), the
//! node's own `/healthz` and `/livez` ([`ProxyHealth`],
//! [`serve_node_health`]), and the `kubeproxy_*` Prometheus metrics
//! ([`Metrics`], [`serve_metrics`]).
//!
//! Pipeline position: the runner and the backends feed it after each sync
//! (`ProxyHealth::queued_update` / `updated`, `Metrics::record_sync`,
//! `ServiceHealthServers::sync_services` / `sync_endpoints`); nothing here
//! touches netfilter.

mod clock;
mod error;
mod gofmt;
mod http;
mod metrics;
mod node_health;
mod proxy_health;
mod service_health;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::HealthError;
pub use model::IpFamily;
pub use http::BoundServer;
pub use metrics::{
    ConnectionsReader, Metrics, NfacctReader, PortConnections, ProxyMode, SyncKind, TrafficPolicy, bind_metrics,
    serve_metrics, METRICS_CONTENT_TYPE,
};
pub use node_health::{bind_node_health, serve_node_health};
pub use proxy_health::{FamilyHealth, HealthReport, ProxyHealth, TO_BE_DELETED_TAINT};
pub use service_health::{ServiceHealthServers, local_ready_endpoints, health_check_ports};
