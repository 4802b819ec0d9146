//! The node's own `/healthz` (healthz bind address 127.0.0.1:10256 in each
//! node): 200 with upstream's headers and body shape
//! (`upstream::node_healthz`), asked from inside the node.

use super::Env;
use super::http;
use super::upstream::{blank_node_health, node_healthz};
use std::net::SocketAddr;

/// Where the proxies serve node health (`--healthz-bind-address`).
const HEALTHZ: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 10256);

/// Runs the case; `Ok(summary)` or `Err(expected vs seen)`.
pub fn run(env: &Env) -> Result<String, String> {
    let expected = node_healthz();
    for node in ["node-a", "node-b"] {
        let ns = env.cluster.node(node).ok_or(format!("no {node}"))?.ns();
        let seen = http::get(ns, HEALTHZ, "/healthz").map_err(|e| format!("node {node} -> {HEALTHZ}/healthz: {e}"))?;
        if blank_node_health(&seen) != expected {
            return Err(format!(
                "node {node} -> {HEALTHZ}/healthz (timestamps, Date, Content-Length blanked)\n    expected: {expected:?}\n    saw:      {:?}",
                blank_node_health(&seen)
            ));
        }
    }
    Ok(format!("node-a, node-b -> {HEALTHZ}/healthz: 200, upstream's headers and body (IPv4 only)"))
}
