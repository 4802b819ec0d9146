//! The node health server on `--healthz-bind-address` (default
//! `0.0.0.0:10256`): `/healthz` (proxy synced recently and node not being
//! deleted) and `/livez` (proxy synced recently), with upstream's JSON.

use crate::error::HealthError;
use crate::gofmt::{GO_ZERO_TIME_JSON, format_rfc3339_nano};
use crate::http::{BoundServer, Respond, bind_listener, go_response, not_found};
use crate::proxy_health::{HealthReport, ProxyHealth};
use bytes::Bytes;
use http_body_util::Full;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

/// Binds the node health server on `addr` (port 0 picks a free port) and
/// returns it ready to serve.
pub async fn bind_node_health(addr: SocketAddr, health: ProxyHealth) -> Result<BoundServer, HealthError> {
    let listener = bind_listener(addr).map_err(|source| HealthError::NodeHealthListen { addr, source })?;
    tracing::info!(address = %addr, "Starting healthz HTTP server");
    let respond: Respond = Arc::new(move |parts: &Parts| respond_node_health(&health, parts));
    Ok(BoundServer::new(listener, respond))
}

/// Binds and serves the node health server until the future is dropped.
pub async fn serve_node_health(addr: SocketAddr, health: ProxyHealth) -> Result<(), HealthError> {
    bind_node_health(addr, health).await?.serve().await;
    Ok(())
}

fn respond_node_health(health: &ProxyHealth, parts: &Parts) -> Response<Full<Bytes>> {
    match parts.uri.path() {
        "/healthz" => respond_healthz(health),
        "/livez" => respond_livez(health),
        _ => not_found(),
    }
}

/// Upstream's `healthzHandler`: healthy proxier and eligible node.
fn respond_healthz(health: &ProxyHealth) -> Response<Full<Bytes>> {
    let mut report = health.report();
    let node_eligible = health.node_eligible();
    let healthy = report.healthy && node_eligible;
    let status = status_for(healthy);
    health.metrics().count_healthz(status.as_u16());
    if healthy {
        // Upstream reports "now" as lastUpdated while healthy, for
        // compatibility with releases that did.
        report.last_updated = Some(health.now());
    }
    json_response(status, render_health_json(&report, Some(node_eligible)))
}

/// Upstream's `livezHandler`: the proxier alone, node state ignored.
fn respond_livez(health: &ProxyHealth) -> Response<Full<Bytes>> {
    let mut report = health.report();
    let status = status_for(report.healthy);
    health.metrics().count_livez(status.as_u16());
    if report.healthy {
        report.last_updated = Some(health.now());
    }
    json_response(status, render_health_json(&report, None))
}

fn status_for(healthy: bool) -> StatusCode {
    if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }
}

fn json_response(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    go_response(
        status,
        &[("content-type", "application/json".to_string()), ("x-content-type-options", "nosniff".to_string())],
        body,
    )
}

/// Upstream's `ProxyHealth` struct as Go's `json.Marshal` writes it (field
/// order, omitted empty fields).
#[derive(Serialize)]
struct HealthJson {
    #[serde(rename = "lastUpdated")]
    last_updated: String,
    #[serde(rename = "currentTime")]
    current_time: String,
    #[serde(rename = "nodeEligible", skip_serializing_if = "Option::is_none")]
    node_eligible: Option<bool>,
    healthy: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    status: BTreeMap<&'static str, FamilyJson>,
}

#[derive(Serialize)]
struct FamilyJson {
    #[serde(rename = "lastUpdated")]
    last_updated: String,
    healthy: bool,
}

/// The `/healthz` (with `node_eligible`) or `/livez` (without) body.
fn render_health_json(report: &HealthReport, node_eligible: Option<bool>) -> String {
    let body = HealthJson {
        last_updated: render_go_time(report.last_updated),
        current_time: format_rfc3339_nano(report.current_time),
        node_eligible,
        healthy: report.healthy,
        status: report
            .status
            .iter()
            .map(|(family, health)| {
                let json = FamilyJson { last_updated: format_rfc3339_nano(health.last_updated), healthy: health.healthy };
                (family.as_str(), json)
            })
            .collect(),
    };
    // Serializing plain strings and bools cannot fail.
    serde_json::to_string(&body).unwrap_or_default()
}

fn render_go_time(t: Option<SystemTime>) -> String {
    t.map(format_rfc3339_nano).unwrap_or_else(|| GO_ZERO_TIME_JSON.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::IpFamily;
    use crate::proxy_health::FamilyHealth;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn renders_go_zero_time_and_omits_empty_status() {
        let report = HealthReport {
            last_updated: None,
            current_time: UNIX_EPOCH + Duration::from_secs(1),
            healthy: true,
            status: BTreeMap::new(),
        };
        assert_eq!(
            render_health_json(&report, None),
            r#"{"lastUpdated":"0001-01-01T00:00:00Z","currentTime":"1970-01-01T00:00:01Z","healthy":true}"#
        );
    }

    #[test]
    fn renders_families_in_go_map_order() {
        let at = |s| UNIX_EPOCH + Duration::from_secs(s);
        let report = HealthReport {
            last_updated: Some(at(2)),
            current_time: at(3),
            healthy: false,
            status: [
                (IpFamily::V6, FamilyHealth { last_updated: at(2), healthy: true }),
                (IpFamily::V4, FamilyHealth { last_updated: at(1), healthy: false }),
            ]
            .into(),
        };
        assert_eq!(
            render_health_json(&report, Some(false)),
            concat!(
                r#"{"lastUpdated":"1970-01-01T00:00:02Z","currentTime":"1970-01-01T00:00:03Z","nodeEligible":false,"#,
                r#""healthy":false,"status":{"IPv4":{"lastUpdated":"1970-01-01T00:00:01Z","healthy":false},"#,
                r#""IPv6":{"lastUpdated":"1970-01-01T00:00:02Z","healthy":true}}}"#
            )
        );
    }
}
