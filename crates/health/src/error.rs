//! Errors of the health and metrics servers.

use model::ServiceName;
use std::net::SocketAddr;

/// A failed health-server or metrics operation.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// The node health server (`--healthz-bind-address`) could not listen.
    #[error("failed to start proxy healthz on {addr}: {source}")]
    NodeHealthListen {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The metrics server (`--metrics-bind-address`) could not listen.
    #[error("failed to start metrics server on {addr}: {source}")]
    MetricsListen {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// A service's health-check node port could not be opened; the service
    /// is retried on the next sync and the other services are unaffected.
    #[error("failed to start healthcheck \"{service}\" on port {port} ({addr}): {source}")]
    ServiceHealthListen {
        /// The ETP=Local service.
        service: ServiceName,
        /// Its `healthCheckNodePort`.
        port: u16,
        /// The address that could not be bound.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

impl HealthError {
    /// The service-listen failure for `service` on `addr`.
    pub(crate) fn service_listen(service: &ServiceName, addr: SocketAddr, source: std::io::Error) -> Self {
        HealthError::ServiceHealthListen { service: service.clone(), port: addr.port(), addr, source }
    }
}
