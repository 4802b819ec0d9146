//! Per-service health-check node ports: for every `externalTrafficPolicy:
//! Local` service with a `healthCheckNodePort`, an HTTP server that answers
//! any path with 200 while this node has a ready local endpoint for it (and
//! the proxy is healthy) and 503 otherwise, so cloud load balancers send
//! external traffic only to nodes that can serve it locally. Upstream's
//! `ServiceHealthServer`.

use crate::error::HealthError;
use crate::gofmt::quote;
use crate::http::{BoundServer, Respond, bind_listener, go_response};
use crate::proxy_health::ProxyHealth;
use bytes::Bytes;
use http_body_util::Full;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use model::{ServiceName, Snapshot};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::task::JoinHandle;

/// The set of running per-service health servers. Owned by the sync loop,
/// which calls [`sync_services`](Self::sync_services) then
/// [`sync_endpoints`](Self::sync_endpoints) after each sync.
pub struct ServiceHealthServers {
    addresses: Vec<IpAddr>,
    health: ProxyHealth,
    running: BTreeMap<ServiceName, Running>,
    local_ready: BTreeMap<ServiceName, usize>,
}

/// One service's servers (one per listen address).
struct Running {
    port: u16,
    local_endpoints: Arc<AtomicUsize>,
    servers: Vec<JoinHandle<()>>,
}

impl ServiceHealthServers {
    /// Servers that listen on each of `addresses`: the IPs matching
    /// `nodePortAddresses` when it is set (nftables mode's default
    /// `primary` is the node IP), else the family's wildcard, which is what
    /// upstream's per-family proxiers bind: `0.0.0.0` (IPv4 only) and, for
    /// IPv6, `::` (bound IPv6-only, so both can share a port). `health`
    /// supplies `serviceProxyHealthy`.
    pub fn new(addresses: Vec<IpAddr>, health: ProxyHealth) -> Self {
        Self { addresses, health, running: BTreeMap::new(), local_ready: BTreeMap::new() }
    }

    /// Makes `desired` (service → health-check node port) the running set:
    /// stops servers of services that are gone or moved to another port,
    /// starts missing ones, leaves the rest untouched (their connections
    /// included). A port that cannot be bound is logged as a warning naming
    /// the service and port and returned; that service is retried on the
    /// next call and the others keep working.
    pub async fn sync_services(&mut self, desired: BTreeMap<ServiceName, u16>) -> Vec<HealthError> {
        self.stop_unwanted(&desired).await;
        let mut failures = Vec::new();
        for (service, port) in desired {
            if self.running.contains_key(&service) {
                continue;
            }
            match self.start(&service, port).await {
                Ok(running) => {
                    tracing::info!(service = %service, port, "Opening healthcheck");
                    self.running.insert(service, running);
                }
                Err(error) => {
                    tracing::warn!(service = %service, port, %error, "Failed to start healthcheck");
                    failures.push(error);
                }
            }
        }
        failures
    }

    /// Sets the number of ready local endpoints of each service (services
    /// not in the map have none). Takes effect on the next request.
    pub fn sync_endpoints(&mut self, local_ready: BTreeMap<ServiceName, usize>) {
        for (service, running) in &self.running {
            let count = local_ready.get(service).copied().unwrap_or(0);
            running.local_endpoints.store(count, Ordering::Relaxed);
        }
        self.local_ready = local_ready;
    }

    /// The services currently served, with their ports.
    pub fn ports(&self) -> BTreeMap<ServiceName, u16> {
        self.running.iter().map(|(service, running)| (service.clone(), running.port)).collect()
    }

    /// Stops every server and waits until their ports are closed.
    pub async fn shutdown(&mut self) {
        self.stop_unwanted(&BTreeMap::new()).await;
    }

    async fn stop_unwanted(&mut self, desired: &BTreeMap<ServiceName, u16>) {
        let unwanted: Vec<ServiceName> = self
            .running
            .iter()
            .filter(|(service, running)| desired.get(*service) != Some(&running.port))
            .map(|(service, _)| service.clone())
            .collect();
        for service in unwanted {
            if let Some(running) = self.running.remove(&service) {
                tracing::info!(service = %service, port = running.port, "Closing healthcheck");
                stop_servers(running.servers).await;
            }
        }
    }

    /// Binds `port` on every address, then starts serving; nothing is left
    /// open if any address fails.
    async fn start(&self, service: &ServiceName, port: u16) -> Result<Running, HealthError> {
        let count = self.local_ready.get(service).copied().unwrap_or(0);
        let local_endpoints = Arc::new(AtomicUsize::new(count));
        let respond = service_responder(service.clone(), local_endpoints.clone(), self.health.clone());
        let mut bound = Vec::with_capacity(self.addresses.len());
        for &ip in &self.addresses {
            let addr = SocketAddr::new(ip, port);
            let listener = bind_listener(addr).map_err(|source| HealthError::service_listen(service, addr, source))?;
            bound.push(BoundServer::new(listener, respond.clone()));
        }
        let servers = bound.into_iter().map(BoundServer::spawn).collect();
        Ok(Running { port, local_endpoints, servers })
    }
}

impl Drop for ServiceHealthServers {
    fn drop(&mut self) {
        for running in self.running.values() {
            running.servers.iter().for_each(JoinHandle::abort);
        }
    }
}

impl std::fmt::Debug for ServiceHealthServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceHealthServers")
            .field("addresses", &self.addresses)
            .field("ports", &self.ports())
            .finish_non_exhaustive()
    }
}

/// Aborts the serving tasks and waits until they are gone, so their
/// listening sockets are closed before the port is reused.
async fn stop_servers(servers: Vec<JoinHandle<()>>) {
    for server in servers {
        server.abort();
        // The task never finishes on its own; a cancelled JoinError is the
        // expected outcome.
        let _ = server.await;
    }
}

fn service_responder(service: ServiceName, local_endpoints: Arc<AtomicUsize>, health: ProxyHealth) -> Respond {
    Arc::new(move |_parts: &Parts| {
        let count = local_endpoints.load(Ordering::Relaxed);
        respond_service_health(&service, count, health.is_healthy())
    })
}

/// Upstream's `hcHandler`: any method, any path.
fn respond_service_health(service: &ServiceName, local_endpoints: usize, proxy_healthy: bool) -> Response<Full<Bytes>> {
    let status = if local_endpoints != 0 && proxy_healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    go_response(
        status,
        &[
            ("content-type", "application/json".to_string()),
            ("x-content-type-options", "nosniff".to_string()),
            ("x-load-balancing-endpoint-weight", local_endpoints.to_string()),
        ],
        render_service_health_body(service, local_endpoints, proxy_healthy),
    )
}

/// The body exactly as upstream's dedented template prints it: tabs, no
/// trailing newline.
fn render_service_health_body(service: &ServiceName, local_endpoints: usize, proxy_healthy: bool) -> String {
    format!(
        "{{\n\t\"service\": {{\n\t\t\"namespace\": {},\n\t\t\"name\": {}\n\t}},\n\t\"localEndpoints\": {},\n\t\"serviceProxyHealthy\": {}\n}}",
        quote(&service.namespace),
        quote(&service.name),
        local_endpoints,
        proxy_healthy
    )
}

/// The health-check node port of every service that has one (upstream's
/// `HealthCheckNodePorts()`): the `desired` argument of
/// [`ServiceHealthServers::sync_services`].
pub fn health_check_ports(snapshot: &Snapshot) -> BTreeMap<ServiceName, u16> {
    snapshot
        .services
        .iter()
        .filter_map(|(name, port)| Some((name.service.clone(), port.health_check_node_port?)))
        .collect()
}

/// Ready endpoints on this node per service, counting each IP once across
/// the service's ports (upstream's `LocalReadyEndpoints()`): the argument of
/// [`ServiceHealthServers::sync_endpoints`]. Terminating-but-serving
/// endpoints do not count, so a node with only those answers 503.
pub fn local_ready_endpoints(snapshot: &Snapshot) -> BTreeMap<ServiceName, usize> {
    // a service's ports are adjacent in the map: its addresses are counted
    // in one reused list (a set per service was some 28 MiB at 100,000
    // services, each with a local endpoint)
    let mut counts = BTreeMap::new();
    let mut ips: Vec<IpAddr> = Vec::new();
    let mut ports = snapshot.endpoints.iter().peekable();
    while let Some((name, endpoints)) = ports.next() {
        ips.extend(endpoints.iter().filter(|ep| ep.is_local && ep.ready).map(|ep| ep.ip));
        let last_of_service = ports.peek().is_none_or(|(next, _)| next.service != name.service);
        if last_of_service && !ips.is_empty() {
            ips.sort_unstable();
            ips.dedup();
            counts.insert(name.service.clone(), ips.len());
            ips.clear();
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Endpoint, Protocol, ServicePort, ServicePortName};
    use std::net::Ipv4Addr;

    #[test]
    fn body_matches_upstream_template() {
        let body = render_service_health_body(&ServiceName::new("storefront", "api"), 2, true);
        assert_eq!(
            body,
            "{\n\t\"service\": {\n\t\t\"namespace\": \"storefront\",\n\t\t\"name\": \"api\"\n\t},\n\t\"localEndpoints\": 2,\n\t\"serviceProxyHealthy\": true\n}"
        );
        assert_eq!(body.len(), 117, "Content-Length of the upstream capture");
    }

    #[test]
    fn counts_distinct_ready_local_ips_per_service() {
        let ip = |last| IpAddr::V4(Ipv4Addr::new(10, 180, 0, last));
        let http = ServicePortName::new("ns", "svc", "http", Protocol::Tcp);
        let https = ServicePortName::new("ns", "svc", "https", Protocol::Tcp);
        let mut terminating = Endpoint::ready(ip(3), 80, Some("node"), true);
        terminating.ready = false;
        terminating.terminating = true;
        let mut snapshot = Snapshot::default();
        snapshot.endpoints.insert(
            http.clone(),
            Arc::new(vec![
                Endpoint::ready(ip(1), 80, Some("node"), true),
                Endpoint::ready(ip(2), 80, Some("other"), false),
                terminating,
            ]),
        );
        snapshot.endpoints.insert(https, Arc::new(vec![Endpoint::ready(ip(1), 443, Some("node"), true)]));
        let mut port = ServicePort::cluster_ip(http.clone(), ip(100), 80);
        port.health_check_node_port = Some(32000);
        snapshot.services.insert(http, Arc::new(port));

        assert_eq!(local_ready_endpoints(&snapshot), [(ServiceName::new("ns", "svc"), 1)].into());
        // services before and after, counted apart; one without a local endpoint is left out
        let before = ServicePortName::new("a", "svc", "http", Protocol::Tcp);
        let local = |n| Endpoint::ready(ip(n), 80, Some("node"), true);
        snapshot.endpoints.insert(before, Arc::new(vec![local(3), local(4), local(3)]));
        let after = ServicePortName::new("z", "svc", "http", Protocol::Tcp);
        snapshot.endpoints.insert(after, Arc::new(vec![Endpoint::ready(ip(5), 80, Some("other"), false)]));
        let counts = [(ServiceName::new("a", "svc"), 2), (ServiceName::new("ns", "svc"), 1)];
        assert_eq!(local_ready_endpoints(&snapshot), counts.into());
        assert_eq!(health_check_ports(&snapshot), [(ServiceName::new("ns", "svc"), 32000)].into());
    }
}
