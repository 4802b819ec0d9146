//! The node health server: /healthz and /livez.

use crate::client::{at, fixture_without_date, get};
use health::{Clock, IpFamily, ManualClock, Metrics, ProxyHealth, ProxyMode, bind_node_health};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// A clock that replays given instants, one per reading (then repeats the
/// last), to reproduce the exact timestamps of upstream's capture.
#[derive(Debug)]
struct ScriptedClock(Mutex<VecDeque<SystemTime>>);

impl Clock for ScriptedClock {
    fn now(&self) -> SystemTime {
        let mut times = self.0.lock().unwrap();
        if times.len() > 1 { times.pop_front().unwrap() } else { times[0] }
    }
}

async fn start(health: ProxyHealth) -> SocketAddr {
    let server = bind_node_health("127.0.0.1:0".parse().unwrap(), health).await.unwrap();
    let addr = server.local_addr();
    server.spawn();
    addr
}

/// Upstream reads the clock for each family's update, then per request
/// once for currentTime and, when healthy, once more for lastUpdated.
async fn replay_capture(mode: &str, file: &str, path: &str, times: [&str; 4]) {
    let clock = Arc::new(ScriptedClock(Mutex::new(times.iter().map(|t| at(t)).collect())));
    let metrics = Metrics::new(ProxyMode::Iptables);
    let health = ProxyHealth::with_clock(Duration::from_secs(60), metrics, clock);
    health.updated(IpFamily::V4);
    health.updated(IpFamily::V6);
    let addr = start(health).await;
    let reply = get(addr, path).await;
    assert_eq!(reply.without_date(), fixture_without_date(mode, file), "{path} vs {mode}/{file}");
}

#[tokio::test]
async fn healthz_and_livez_match_upstream_captures() {
    replay_capture(
        "iptables",
        "node-healthz.txt",
        "/healthz",
        ["2026-11-22T04:50:26.288546312Z", "2026-11-22T04:50:26.35149223Z", "2026-11-22T04:50:28.761515605Z", "2026-11-22T04:50:28.761537978Z"],
    )
    .await;
    replay_capture(
        "iptables",
        "node-livez.txt",
        "/livez",
        ["2026-11-22T04:50:26.288546312Z", "2026-11-22T04:50:26.35149223Z", "2026-11-22T04:50:28.770018065Z", "2026-11-22T04:50:28.770032292Z"],
    )
    .await;
    replay_capture(
        "nftables",
        "node-healthz.txt",
        "/healthz",
        ["2026-11-22T04:55:01.064314779Z", "2026-11-22T04:55:01.112285245Z", "2026-11-22T04:55:03.595025658Z", "2026-11-22T04:55:03.595054632Z"],
    )
    .await;
}

fn manual_health() -> (ProxyHealth, ManualClock, Metrics) {
    let clock = ManualClock::new(at("2026-11-22T04:50:26Z"));
    let metrics = Metrics::new(ProxyMode::Iptables);
    // healthTimeout = 2 × syncPeriod (30 s), as kube-proxy passes it.
    let health = ProxyHealth::with_clock(Duration::from_secs(60), metrics.clone(), Arc::new(clock.clone()));
    (health, clock, metrics)
}

#[tokio::test]
async fn stalled_sync_turns_healthz_and_livez_503_until_it_catches_up() {
    let (health, clock, metrics) = manual_health();
    health.updated(IpFamily::V4);
    health.updated(IpFamily::V6);
    let addr = start(health.clone()).await;
    clock.advance(Duration::from_secs(5));
    health.queued_update(IpFamily::V4);
    clock.advance(Duration::from_secs(59));
    assert_eq!(get(addr, "/healthz").await.status, 200, "59 s of 60 s is not late");

    clock.advance(Duration::from_secs(1));
    let healthz = get(addr, "/healthz").await;
    assert_eq!(healthz.status, 503);
    assert_eq!(
        healthz.body,
        concat!(
            r#"{"lastUpdated":"2026-11-22T04:50:26Z","currentTime":"2026-11-22T04:51:31Z","nodeEligible":true,"healthy":false,"#,
            r#""status":{"IPv4":{"lastUpdated":"2026-11-22T04:50:26Z","healthy":false},"IPv6":{"lastUpdated":"2026-11-22T04:50:26Z","healthy":true}}}"#
        )
    );
    // Upstream's /livez also reports the stalled proxier.
    assert_eq!(get(addr, "/livez").await.status, 503);

    health.updated(IpFamily::V4);
    let healthz = get(addr, "/healthz").await;
    assert_eq!(healthz.status, 200);
    assert!(healthz.body.starts_with(r#"{"lastUpdated":"2026-11-22T04:51:31Z","#), "{}", healthz.body);
    assert_eq!(get(addr, "/livez").await.status, 200);

    let scrape = metrics.render();
    assert!(scrape.contains("kubeproxy_proxy_healthz_total{code=\"200\"} 2\n"), "{scrape}");
    assert!(scrape.contains("kubeproxy_proxy_healthz_total{code=\"503\"} 1\n"), "{scrape}");
    assert!(scrape.contains("kubeproxy_proxy_livez_total{code=\"503\"} 1\n"), "{scrape}");
}

#[tokio::test]
async fn deleting_node_fails_healthz_but_not_livez() {
    let (health, _clock, _metrics) = manual_health();
    health.updated(IpFamily::V4);
    let addr = start(health.clone()).await;
    health.set_node_deleting(true);
    let healthz = get(addr, "/healthz").await;
    assert_eq!(healthz.status, 503);
    assert!(healthz.body.contains(r#""nodeEligible":false,"healthy":true,"#), "{}", healthz.body);
    let livez = get(addr, "/livez").await;
    assert_eq!(livez.status, 200);
    assert!(!livez.body.contains("nodeEligible"));

    health.set_node_deleting(false);
    assert_eq!(get(addr, "/healthz").await.status, 200);
}

#[tokio::test]
async fn other_paths_are_404_like_go() {
    let (health, _clock, _metrics) = manual_health();
    let addr = start(health).await;
    let reply = get(addr, "/healthz/extra").await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.body, "404 page not found\n");
    assert_eq!(reply.header("Content-Type"), Some("text/plain; charset=utf-8"));
    assert_eq!(reply.header("X-Content-Type-Options"), Some("nosniff"));
}
