//! `/metrics`: upstream's names, types, help texts, labels, buckets and
//! number formatting, and values that move with the syncs.

use crate::client::{Connection, fixture, get};
use health::{IpFamily, METRICS_CONTENT_TYPE, Metrics, ProxyMode, SyncKind, TrafficPolicy, bind_metrics};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use IpFamily::{V4, V6};

/// The instant a gauge printed as `seconds` was set to.
fn instant(seconds: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos((seconds * 1e9) as u64)
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// What upstream's node had recorded when each capture was taken.
struct CaptureState {
    mode: ProxyMode,
    conntrack: f64,
    full: [f64; 2],
    queued: [f64; 2],
    synced: [f64; 2],
}

fn record_capture_state(state: &CaptureState) -> Metrics {
    let metrics = Metrics::new(state.mode);
    metrics.record_conntrack_reconcile(V4, secs(state.conntrack), 0);
    for (family, i) in [(V4, 0), (V6, 1)] {
        metrics.record_sync(family, SyncKind::Full, secs(state.full[i]));
        metrics.record_last_queued(family, instant(state.queued[i]));
        metrics.record_last_sync(family, instant(state.synced[i]));
    }
    metrics.count_healthz(200);
    metrics.count_healthz(200);
    metrics.count_livez(200);
    metrics.count_service_changes(38);
    metrics.count_endpoint_changes(21);
    metrics.set_service_changes_pending(0);
    metrics.set_endpoint_changes_pending(0);
    for (family, external, internal) in [(V4, 2, 1), (V6, 0, 0)] {
        metrics.set_no_local_endpoints(family, TrafficPolicy::External, external);
        metrics.set_no_local_endpoints(family, TrafficPolicy::Internal, internal);
    }
    metrics
}

/// Upstream times `sync_proxy_rules_duration_seconds` and the full-sync
/// histogram with two clock readings microseconds apart; we observe one
/// duration into both, so the capture's overall sums are replaced by the
/// full-sync ones.
fn capture_with_one_duration(mode: &str, overall_to_full: [(&str, &str); 2]) -> String {
    let mut text = fixture(mode, "metrics-kubeproxy.txt");
    for (overall, full) in overall_to_full {
        let family = if text.contains(&format!("_sum{{ip_family=\"IPv4\"}} {overall}")) { "IPv4" } else { "IPv6" };
        let line = format!("kubeproxy_sync_proxy_rules_duration_seconds_sum{{ip_family=\"{family}\"}} {overall}\n");
        assert!(text.contains(&line), "{line}");
        text = text.replace(&line, &line.replace(overall, full));
    }
    text
}

#[test]
fn reproduces_the_iptables_capture() {
    let metrics = record_capture_state(&CaptureState {
        mode: ProxyMode::Iptables,
        conntrack: 0.011687063,
        full: [0.067403129, 0.050879893],
        queued: [1.7953230261319466e+09, 1.7953230261319523e+09],
        synced: [1.7953230262885492e+09, 1.7953230263514943e+09],
    });
    for (family, table, rules) in [(V4, "filter", 15), (V4, "nat", 204), (V6, "filter", 3), (V6, "nat", 5)] {
        metrics.set_iptables_rules(family, table, rules, rules);
    }
    metrics.set_nfacct_reader(Arc::new(|_| Some(0)));
    let expected =
        capture_with_one_duration("iptables", [("0.067401385", "0.067403129"), ("0.050876878", "0.050879893")]);
    assert_eq!(metrics.render(), expected);
}

#[test]
fn reproduces_the_nftables_capture() {
    let metrics = record_capture_state(&CaptureState {
        mode: ProxyMode::Nftables,
        conntrack: 0.010220672,
        full: [0.043526941, 0.037512027],
        queued: [1.7953233009301991e+09, 1.7953233009302065e+09],
        synced: [1.7953233010643177e+09, 1.7953233011122866e+09],
    });
    // Not exported in nftables mode: must not show up.
    metrics.set_iptables_rules(V4, "nat", 1, 1);
    metrics.set_nfacct_reader(Arc::new(|_| Some(7)));
    let expected =
        capture_with_one_duration("nftables", [("0.043524957", "0.043526941"), ("0.037510013", "0.037512027")]);
    assert_eq!(metrics.render(), expected);
}

fn help_and_type_lines(text: &str) -> BTreeSet<String> {
    text.lines().filter(|l| l.starts_with("# ")).map(str::to_string).collect()
}

async fn scrape(addr: SocketAddr) -> String {
    let reply = get(addr, "/metrics").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("Content-Type"), Some(METRICS_CONTENT_TYPE));
    reply.body
}

fn value(text: &str, series: &str) -> f64 {
    let line = text.lines().find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '));
    line.unwrap_or_else(|| panic!("no {series} in\n{text}")).rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn scrape_over_http_has_upstream_families_and_moving_values() {
    let metrics = Metrics::new(ProxyMode::Iptables);
    let server = bind_metrics("127.0.0.1:0".parse().unwrap(), metrics.clone()).await.unwrap();
    let addr = server.local_addr();
    server.spawn();

    let t0 = UNIX_EPOCH + Duration::from_secs(1_795_323_026);
    for family in [V4, V6] {
        metrics.record_last_queued(family, t0);
        metrics.record_sync(family, SyncKind::Full, Duration::from_millis(67));
        metrics.record_last_sync(family, t0 + Duration::from_millis(70));
        metrics.set_iptables_rules(family, "filter", 15, 15);
        metrics.set_no_local_endpoints(family, TrafficPolicy::External, 2);
        metrics.record_conntrack_reconcile(family, Duration::from_millis(11), 0);
    }
    metrics.count_healthz(200);
    metrics.count_livez(200);
    metrics.set_nfacct_reader(Arc::new(|_| Some(0)));
    let first = scrape(addr).await;
    let upstream = help_and_type_lines(&fixture("iptables", "metrics-kubeproxy.txt"));
    let ours = help_and_type_lines(&first);
    let missing: Vec<&String> = upstream.difference(&ours).collect();
    assert!(missing.is_empty(), "HELP/TYPE lines of upstream missing from our scrape: {missing:#?}");

    // A partial sync, some changes and a failure later, the values moved.
    metrics.count_service_changes(3);
    metrics.count_endpoint_changes(5);
    metrics.set_endpoint_changes_pending(2);
    metrics.record_last_queued(V4, t0 + Duration::from_secs(30));
    metrics.record_sync(V4, SyncKind::Partial, Duration::from_millis(3));
    metrics.record_last_sync(V4, t0 + Duration::from_secs(31));
    metrics.count_iptables_partial_restore_failure(V4);
    metrics.record_network_programming(V4, Duration::from_millis(1500));
    let second = scrape(addr).await;

    let count = "kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"}";
    assert_eq!(value(&first, count), 1.0);
    assert_eq!(value(&second, count), 2.0);
    let last = "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"}";
    let moved = value(&second, last) - value(&first, last);
    assert!((moved - 30.93).abs() < 1e-6, "last sync moved by {moved}");
    assert_eq!(value(&second, "kubeproxy_sync_proxy_rules_service_changes_total"), 3.0);
    assert_eq!(value(&second, "kubeproxy_sync_proxy_rules_endpoint_changes_total"), 5.0);
    assert_eq!(value(&second, "kubeproxy_sync_proxy_rules_endpoint_changes_pending"), 2.0);
    assert_eq!(value(&second, "kubeproxy_sync_partial_proxy_rules_duration_seconds_bucket{ip_family=\"IPv4\",le=\"0.004\"}"), 1.0);
    assert_eq!(value(&second, "kubeproxy_sync_partial_proxy_rules_duration_seconds_bucket{ip_family=\"IPv4\",le=\"0.002\"}"), 0.0);
    assert_eq!(value(&second, "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total{ip_family=\"IPv4\"}"), 1.0);
    assert_eq!(value(&second, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"1\"}"), 0.0);
    assert_eq!(value(&second, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"2\"}"), 1.0);

    for line in [
        "# HELP kubeproxy_sync_partial_proxy_rules_duration_seconds [ALPHA] SyncProxyRules latency in seconds for partial resyncs",
        "# TYPE kubeproxy_sync_partial_proxy_rules_duration_seconds histogram",
        "# HELP kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total [ALPHA] Cumulative proxy iptables partial restore failures",
        "# TYPE kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total counter",
        "# HELP kubeproxy_network_programming_duration_seconds [ALPHA] In Cluster Network Programming Latency in seconds",
        "# TYPE kubeproxy_network_programming_duration_seconds histogram",
    ] {
        assert!(second.lines().any(|l| l == line), "missing {line}");
    }
}

#[tokio::test]
async fn network_programming_buckets_are_upstreams() {
    let metrics = Metrics::new(ProxyMode::Nftables);
    metrics.record_network_programming(V6, Duration::from_secs(400));
    let text = metrics.render();
    let bounds: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv6\",le=\""))
        .map(|l| l.split('"').next().unwrap())
        .collect();
    let mut want: Vec<String> = vec!["0.25".into(), "0.5".into()];
    want.extend((1..=59).map(|s| s.to_string()));
    want.extend((0..12).map(|i| (60 + 5 * i).to_string()));
    want.extend((0..7).map(|i| (120 + 30 * i).to_string()));
    want.push("+Inf".into());
    assert_eq!(bounds, want);
    assert!(text.contains("kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv6\",le=\"300\"} 0\n"));
    assert!(text.contains("kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv6\",le=\"+Inf\"} 1\n"));
}

#[tokio::test]
async fn metrics_port_also_serves_healthz_and_proxy_mode() {
    let server = bind_metrics("127.0.0.1:0".parse().unwrap(), Metrics::new(ProxyMode::Nftables)).await.unwrap();
    let addr = server.local_addr();
    server.spawn();
    let mut conn = Connection::open(addr).await.unwrap();
    let healthz = conn.get("/healthz").await.unwrap();
    assert_eq!((healthz.status, healthz.body.as_str()), (200, "ok"));
    assert_eq!(healthz.header("Content-Type"), Some("text/plain; charset=utf-8"));
    let verbose = conn.get("/healthz?verbose").await.unwrap();
    assert_eq!(verbose.body, "[+]ping ok\nhealthz check passed\n");
    assert_eq!(conn.get("/proxyMode").await.unwrap().body, "nftables");
    assert_eq!(conn.get("/nope").await.unwrap().status, 404);
}
