//! The node's own `/healthz` and `/livez` (healthz bind address
//! 127.0.0.1:10256 in each node): 200 with upstream's headers and body
//! (`upstream::node_health`: a dual-stack proxy's, `IPv4` and `IPv6`
//! status), asked from inside the node.

use super::Env;
use super::http;
use super::upstream::{blank_node_health, node_health};
use std::net::SocketAddr;

/// Where the proxies serve node health (`--healthz-bind-address`).
const HEALTHZ: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 10256);

/// Runs the case; `Ok(summary)` or `Err(expected vs seen)`.
pub fn run(env: &Env) -> Result<String, String> {
    for path in ["/healthz", "/livez"] {
        let expected = node_health(path);
        for node in ["node-a", "node-b"] {
            let ns = env.cluster.node(node).ok_or(format!("no {node}"))?.ns();
            let seen = http::get(ns, HEALTHZ, path).map_err(|e| format!("node {node} -> {HEALTHZ}{path}: {e}"))?;
            if blank_node_health(&seen) != expected {
                return Err(format!(
                    "node {node} -> {HEALTHZ}{path} (timestamps, Date, Content-Length blanked)\n    expected: {expected:?}\n    saw:      {:?}",
                    blank_node_health(&seen)
                ));
            }
        }
    }
    Ok(format!("node-a, node-b -> {HEALTHZ}/healthz and /livez: 200, upstream's headers and body (IPv4 and IPv6 status)"))
}
