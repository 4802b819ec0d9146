//! Userspace mode only, after the flow cases and `balance`: node-a's
//! `/metrics` (127.0.0.1:10249 inside the node) counts the connections its
//! proxy ports took per service port, `kubeproxy_userspace_connections_total`
//! — service `e2e/web:http` (TCP) took at least the 1000 of `balance` (the
//! clusterip-from-node flows add more).

use super::Env;
use super::http;
use std::net::SocketAddr;

/// Where the proxies serve `/metrics` (`--metrics-bind-address`).
const METRICS: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 10249);
/// The series of `web`'s port on node-a.
const SERIES: &str = "kubeproxy_userspace_connections_total{protocol=\"TCP\",service_port_name=\"e2e/web:http\"}";
/// `balance`'s connections through node-a.
const AT_LEAST: f64 = 1000.0;

/// Runs the check; `Ok(summary)` or `Err(expected vs seen)`.
pub fn run(env: &Env) -> Result<String, String> {
    let ns = env.cluster.node("node-a").ok_or("no node-a")?.ns();
    let scrape = http::get(ns, METRICS, "/metrics").map_err(|e| format!("node-a -> {METRICS}/metrics: {e}"))?;
    let value = scrape
        .lines()
        .find_map(|l| l.strip_prefix(SERIES).and_then(|rest| rest.trim().parse::<f64>().ok()))
        .ok_or_else(|| format!("node-a's /metrics has no {SERIES}:\n{scrape}"))?;
    if value < AT_LEAST {
        return Err(format!("{SERIES}\n    expected: at least {AT_LEAST} (balance's connections)\n    saw:      {value}"));
    }
    Ok(format!("node-a /metrics: {SERIES} {value}"))
}
