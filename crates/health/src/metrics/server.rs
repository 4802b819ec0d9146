//! The metrics server on `--metrics-bind-address` (default
//! `127.0.0.1:10249`): `/metrics`, plus what upstream's mux also serves
//! there, `/healthz` (a plain `ok`, not the proxy's health) and
//! `/proxyMode`.

use super::Metrics;
use crate::error::HealthError;
use crate::http::{BoundServer, Respond, bind_listener, go_response, not_found};
use bytes::Bytes;
use http_body_util::Full;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;

/// The Content-Type Go's `promhttp` sends for the text format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores";

const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

/// Binds the metrics server on `addr` (port 0 picks a free port).
pub async fn bind_metrics(addr: SocketAddr, metrics: Metrics) -> Result<BoundServer, HealthError> {
    let listener = bind_listener(addr).map_err(|source| HealthError::MetricsListen { addr, source })?;
    tracing::info!(address = %addr, "Starting metrics server");
    let respond: Respond = Arc::new(move |parts: &Parts| respond_metrics_server(&metrics, parts));
    Ok(BoundServer::new(listener, respond))
}

/// Binds and serves the metrics server until the future is dropped.
pub async fn serve_metrics(addr: SocketAddr, metrics: Metrics) -> Result<(), HealthError> {
    bind_metrics(addr, metrics).await?.serve().await;
    Ok(())
}

fn respond_metrics_server(metrics: &Metrics, parts: &Parts) -> Response<Full<Bytes>> {
    match parts.uri.path() {
        "/metrics" => respond_scrape(metrics),
        "/healthz" => respond_ping(parts.uri.query()),
        "/proxyMode" => plain_text(StatusCode::OK, metrics.mode().as_str().to_string()),
        _ => not_found(),
    }
}

fn respond_scrape(metrics: &Metrics) -> Response<Full<Bytes>> {
    go_response(StatusCode::OK, &[("content-type", METRICS_CONTENT_TYPE.to_string())], metrics.render())
}

/// component-base's `healthz.InstallHandler` with only the `ping` check:
/// `ok`, or the check list with `?verbose`.
fn respond_ping(query: Option<&str>) -> Response<Full<Bytes>> {
    let verbose = query.is_some_and(|q| q.split('&').any(|kv| kv.split('=').next() == Some("verbose")));
    let body = if verbose { "[+]ping ok\nhealthz check passed\n" } else { "ok" };
    plain_text(StatusCode::OK, body.to_string())
}

fn plain_text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    go_response(
        status,
        &[("content-type", TEXT_PLAIN.to_string()), ("x-content-type-options", "nosniff".to_string())],
        body,
    )
}
