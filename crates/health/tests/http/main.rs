//! Real HTTP requests against real listeners on 127.0.0.1: the per-service
//! health-check servers, the node health server and the metrics server,
//! compared with upstream kube-proxy's captured answers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
mod metrics;
mod node_health;
mod service_health;
