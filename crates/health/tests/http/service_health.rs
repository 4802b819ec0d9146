//! Per-service health-check node ports.

use crate::client::{Connection, fixture_without_date, free_port, get};
use health::{HealthError, IpFamily, ManualClock, Metrics, ProxyHealth, ProxyMode, ServiceHealthServers};
use model::ServiceName;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn svc(name: &str) -> ServiceName {
    ServiceName::new("storefront", name)
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::new(LOOPBACK, port)
}

fn proxy_health() -> (ProxyHealth, ManualClock) {
    let clock = ManualClock::new(UNIX_EPOCH + Duration::from_secs(1_795_323_026));
    let health = ProxyHealth::with_clock(Duration::from_secs(60), Metrics::new(ProxyMode::Iptables), Arc::new(clock.clone()));
    (health, clock)
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<ServiceName, usize> {
    pairs.iter().map(|(name, n)| (svc(name), *n)).collect()
}

#[tokio::test]
async fn answers_byte_for_byte_like_upstream_as_endpoints_move() {
    let (health, _clock) = proxy_health();
    let mut servers = ServiceHealthServers::new(vec![LOOPBACK], health);
    let ports: BTreeMap<ServiceName, u16> =
        [(svc("api"), free_port()), (svc("search"), free_port()), (svc("gateway"), free_port())].into();
    assert!(servers.sync_services(ports.clone()).await.is_empty());
    servers.sync_endpoints(counts(&[("api", 2)]));

    for mode in ["iptables", "nftables"] {
        for (name, file) in [
            ("api", "hcnp-32070-storefront-api.txt"),
            ("search", "hcnp-32052-storefront-search.txt"),
            ("gateway", "hcnp-32170-storefront-gateway.txt"),
        ] {
            let reply = get(addr(ports[&svc(name)]), "/healthz").await;
            assert_eq!(reply.without_date(), fixture_without_date(mode, file), "{name} vs {mode} capture");
        }
    }

    // The endpoint moves from this node's api to search: the answers flip.
    servers.sync_endpoints(counts(&[("search", 1)]));
    let api = get(addr(ports[&svc("api")]), "/anything?at=all").await;
    assert_eq!(api.status, 503);
    assert_eq!(api.header("X-Load-Balancing-Endpoint-Weight"), Some("0"));
    assert!(api.body.contains("\"localEndpoints\": 0,"));
    let search = get(addr(ports[&svc("search")]), "/").await;
    assert_eq!(search.status, 200);
    assert_eq!(search.header("X-Load-Balancing-Endpoint-Weight"), Some("1"));
    assert!(search.body.contains("\"name\": \"search\""));
}

#[tokio::test]
async fn stalled_proxy_fails_service_checks_despite_local_endpoints() {
    let (health, clock) = proxy_health();
    let mut servers = ServiceHealthServers::new(vec![LOOPBACK], health.clone());
    let port = free_port();
    assert!(servers.sync_services([(svc("api"), port)].into()).await.is_empty());
    servers.sync_endpoints(counts(&[("api", 2)]));
    health.updated(IpFamily::V4);
    health.queued_update(IpFamily::V4);
    assert_eq!(get(addr(port), "/healthz").await.status, 200);

    clock.advance(Duration::from_secs(60));
    let reply = get(addr(port), "/healthz").await;
    assert_eq!(reply.status, 503);
    assert!(reply.body.ends_with("\"localEndpoints\": 2,\n\t\"serviceProxyHealthy\": false\n}"), "{}", reply.body);

    // Node deletion is not part of serviceProxyHealthy (as upstream).
    health.updated(IpFamily::V4);
    health.set_node_deleting(true);
    assert_eq!(get(addr(port), "/healthz").await.status, 200);
}

#[tokio::test]
async fn port_conflict_is_reported_and_isolated() {
    let (health, _clock) = proxy_health();
    let mut servers = ServiceHealthServers::new(vec![LOOPBACK], health);
    servers.sync_endpoints(counts(&[("api", 1), ("search", 1)]));
    let squatter = StdListener::bind(addr(0)).unwrap();
    let taken = squatter.local_addr().unwrap().port();
    let free = free_port();

    let failures = servers.sync_services([(svc("api"), taken), (svc("search"), free)].into()).await;
    assert_eq!(failures.len(), 1);
    match &failures[0] {
        HealthError::ServiceHealthListen { service, port, source, .. } => {
            assert_eq!(service, &svc("api"));
            assert_eq!(*port, taken);
            assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
        }
        other => panic!("unexpected error {other:?}"),
    }
    let message = failures[0].to_string();
    assert!(message.contains("storefront/api") && message.contains(&taken.to_string()), "{message}");
    assert_eq!(get(addr(free), "/").await.status, 200, "the other service still answers");
    assert_eq!(servers.ports(), [(svc("search"), free)].into());

    // Once the port is free, the next sync starts the failed service.
    drop(squatter);
    assert!(servers.sync_services([(svc("api"), taken), (svc("search"), free)].into()).await.is_empty());
    let api = get(addr(taken), "/").await;
    assert_eq!(api.status, 200);
    assert!(api.body.contains("\"name\": \"api\""));
}

#[tokio::test]
async fn moving_or_removing_a_service_leaves_the_others_running() {
    let (health, _clock) = proxy_health();
    let mut servers = ServiceHealthServers::new(vec![LOOPBACK], health);
    servers.sync_endpoints(counts(&[("api", 1), ("search", 3)]));
    let (api_old, api_new, search) = (free_port(), free_port(), free_port());
    assert!(servers.sync_services([(svc("api"), api_old), (svc("search"), search)].into()).await.is_empty());

    // A kept-alive connection to search survives the other service's move.
    let mut search_conn = Connection::open(addr(search)).await.unwrap();
    assert_eq!(search_conn.get("/").await.unwrap().status, 200);

    assert!(servers.sync_services([(svc("api"), api_new), (svc("search"), search)].into()).await.is_empty());
    assert!(Connection::open(addr(api_old)).await.is_err(), "old port closed");
    assert_eq!(get(addr(api_new), "/").await.status, 200);
    let again = search_conn.get("/").await.expect("same connection still served");
    assert_eq!(again.header("X-Load-Balancing-Endpoint-Weight"), Some("3"));

    // Removing search closes its port and its connections.
    assert!(servers.sync_services([(svc("api"), api_new)].into()).await.is_empty());
    assert!(Connection::open(addr(search)).await.is_err());
    assert!(search_conn.get("/").await.is_err());
    assert_eq!(get(addr(api_new), "/").await.status, 200);
}

#[tokio::test]
async fn services_can_swap_ports_in_one_sync() {
    let (health, _clock) = proxy_health();
    let mut servers = ServiceHealthServers::new(vec![LOOPBACK], health);
    servers.sync_endpoints(counts(&[("api", 1)]));
    let (p1, p2) = (free_port(), free_port());
    assert!(servers.sync_services([(svc("api"), p1), (svc("search"), p2)].into()).await.is_empty());
    assert!(servers.sync_services([(svc("api"), p2), (svc("search"), p1)].into()).await.is_empty());
    assert_eq!(get(addr(p2), "/").await.status, 200);
    let search = get(addr(p1), "/").await;
    assert_eq!(search.status, 503);
    assert!(search.body.contains("\"name\": \"search\""));

    servers.shutdown().await;
    assert!(Connection::open(addr(p1)).await.is_err());
    assert!(Connection::open(addr(p2)).await.is_err());
}

#[tokio::test]
async fn serves_every_given_address() {
    let (health, _clock) = proxy_health();
    let v6_loopback = IpAddr::V6(std::net::Ipv6Addr::LOCALHOST);
    let mut servers = ServiceHealthServers::new(vec![LOOPBACK, v6_loopback], health);
    servers.sync_endpoints(counts(&[("api", 1)]));
    let port = free_port();
    assert!(servers.sync_services([(svc("api"), port)].into()).await.is_empty());
    assert_eq!(get(addr(port), "/").await.status, 200);
    assert_eq!(get(SocketAddr::new(v6_loopback, port), "/").await.status, 200);
}

/// The sync loop runs on spawned tasks: the servers and their futures must
/// be `Send`.
#[tokio::test]
async fn can_be_driven_from_a_spawned_task() {
    let (health, _clock) = proxy_health();
    let port = free_port();
    let handle = tokio::spawn(async move {
        let mut servers = ServiceHealthServers::new(vec![LOOPBACK], health);
        let failures = servers.sync_services([(svc("api"), port)].into()).await;
        servers.sync_endpoints(counts(&[("api", 1)]));
        (servers, failures.len())
    });
    let (servers, failures) = handle.await.unwrap();
    assert_eq!(failures, 0);
    assert_eq!(get(addr(port), "/").await.status, 200);
    drop(servers);
}
